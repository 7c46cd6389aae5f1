"""Golden vectors: the shipped file is what this dpref produces, and checking catches drift."""

from __future__ import annotations

import copy
import json
from fractions import Fraction

import numpy as np

from dpref.cli import main
from dpref.golden import check_golden, golden_vectors, load_shipped, vector_mechanism


def test_shipped_vectors_are_regenerated_exactly() -> None:
    """Changing node order, scales or recombination must be a deliberate, visible change."""
    assert golden_vectors() == load_shipped()


def test_shipped_vectors_check() -> None:
    assert check_golden(load_shipped()) == []


def test_counting_outputs_are_exact_in_any_order() -> None:
    """Dyadic noise: every partial sum is exact, so any float summation order gives the bits."""
    checked = 0
    for vec in load_shipped()["vectors"]:
        exact = [Fraction(s) for s in vec["outputs_exact"]]
        if not vec["exact_in_float"]:
            continue
        assert [Fraction(v) for v in vec["outputs"]] == exact
        m = vector_mechanism(vec)
        plan = m.plan(vec["horizon"])
        noisy = plan.A().toarray() @ np.array(vec["stream"], dtype=float) + np.array(vec["noise"])
        R = plan.R().toarray()
        for t in range(vec["horizon"]):
            used = [n for n in range(plan.n_nodes) if R[t, n]][::-1]  # reverse order
            total = 0.0
            for n in used:
                total += R[t, n] * noisy[n]
            assert total == vec["outputs"][t]
        checked += 1
    assert checked >= 8


def test_check_catches_tampering() -> None:
    doc = load_shipped()
    bad = copy.deepcopy(doc)
    vec = next(v for v in bad["vectors"] if v["case"] == "binary[T=5]")
    vec["outputs"][2] += 2.0**-10
    assert any("outputs differ" in p for p in check_golden(bad))
    bad = copy.deepcopy(doc)
    next(v for v in bad["vectors"] if v["case"] == "binary[T=16]")["scales"][0] = "1"
    assert any("scales differ" in p for p in check_golden(bad))
    bad = copy.deepcopy(doc)
    bad["vectors"][0]["nodes"] = bad["vectors"][0]["nodes"][::-1]
    assert any("node intervals" in p for p in check_golden(bad))


def test_cli_golden(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "g.json"
    assert main(["golden", "export", str(out)]) == 0
    assert json.loads(out.read_text()) == load_shipped()
    capsys.readouterr()
    assert main(["golden", "check", str(out), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["passed"] is True
    doc = json.loads(out.read_text())
    doc["vectors"][1]["outputs"][0] += 1
    out.write_text(json.dumps(doc))
    assert main(["golden", "check", str(out)]) == 1
    assert main(["golden", "check", str(tmp_path / "missing.json")]) == 2


def test_gaussian_vectors_record_noise_and_rho() -> None:
    """zCDP vectors name their noise kind and their exact ρ; their scales are the exact
    node variances, their privacy sum the L2 sum (2ρ for bounded counters)."""
    vecs = {v["case"]: v for v in load_shipped()["vectors"]}
    vec = vecs["binary[T=16,zcdp]"]
    assert vec["noise_kind"] == "gaussian" and vec["rho"] == "1/2" and "epsilon" not in vec
    assert set(vec["scales"]) == {"5"}  # σ² = LΔ²/(2ρ) = 5 at T = 16 (L = 5), ρ = 1/2
    assert vec["privacy_sum"] == "1"  # 2ρ
    assert vecs["binary[T=16]"]["noise_kind"] == "laplace"
    bad = copy.deepcopy(load_shipped())
    next(v for v in bad["vectors"] if v["case"] == "binary[T=16,zcdp]")["noise_kind"] = "laplace"
    assert any("noise kind" in p for p in check_golden(bad))
