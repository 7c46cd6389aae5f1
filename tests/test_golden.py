"""Golden vectors: the shipped file is what this dpref produces, it covers every mechanism and
noise kind, it matches its JSON Schema, and checking catches drift."""

from __future__ import annotations

import copy
import gzip
import json
from fractions import Fraction
from importlib import resources
from typing import Any

import jsonschema
import numpy as np
import pytest

from dpref.cli import main
from dpref.errors import ParameterError
from dpref.golden import (
    EPSILONS,
    FORMAT,
    GRID,
    RHOS,
    SAMPLE_CASES,
    check_golden,
    golden_exclusions,
    golden_sample,
    golden_vectors,
    load_schema,
    load_shipped,
    vector_mechanism,
)
from dpref.mechanisms import MECHANISMS
from dpref.noise import NOISE_KINDS

SHIPPED = load_shipped()


def _of(mechanism: str) -> list[dict[str, Any]]:
    return [v for v in SHIPPED["vectors"] if v["mechanism"] == mechanism]


@pytest.mark.parametrize("mechanism", sorted(MECHANISMS))
def test_shipped_vectors_are_regenerated_exactly(mechanism: str) -> None:
    """Changing node order, scales or recombination must be a deliberate, visible change
    (split by mechanism so the regeneration runs in parallel)."""
    assert golden_vectors([mechanism])["vectors"] == _of(mechanism)


def test_shipped_header_is_current() -> None:
    doc = golden_vectors(cases=())
    assert doc["vectors"] == []
    assert {k: v for k, v in SHIPPED.items() if k != "vectors"} == {
        k: v for k, v in doc.items() if k != "vectors"
    }
    assert doc["format"] == FORMAT == "dpref-golden/3"


@pytest.mark.parametrize("mechanism", sorted(MECHANISMS))
def test_outputs_exact_by_dense_matrices(mechanism: str) -> None:
    """The exhaustive exact check, independent of the sparse path the generator and
    ``golden check`` use: dense exact A and R, ``R (A x + z)`` in Fractions, every vector."""
    for vec in _of(mechanism):
        plan = vector_mechanism(vec).plan(vec["horizon"])
        A, R = plan.dense_A_exact(), plan.recombination.to_dense_exact()
        z = [Fraction(v) for v in vec["noise"]]
        noisy = [
            sum((a for a, x in zip(row, vec["stream"], strict=True) if x), Fraction(0)) + zn
            for row, zn in zip(A, z, strict=True)
        ]
        out = [sum((r * v for r, v in zip(row, noisy, strict=True) if r), Fraction(0)) for row in R]
        assert [str(v) for v in out] == vec["outputs_exact"], vec["case"]
        if vec["exact_in_float"]:
            assert [Fraction(v) for v in vec["outputs"]] == out, vec["case"]
        else:
            np.testing.assert_allclose(vec["outputs"], [float(v) for v in out], rtol=1e-12)


def test_shipped_vectors_check() -> None:
    assert check_golden(SHIPPED) == []


def test_coverage_every_mechanism_kind_and_budget() -> None:
    """Every mechanism with every noise kind it accepts at >= 2 budgets, and the full T grid
    of its first structure; the pairs left out are the ones dpref refuses."""
    excluded = {(e["mechanism"], e["noise_kind"]) for e in SHIPPED["excluded"]}
    assert excluded == {
        (m, k)
        for m in ("exponential", "polynomial", "sqrt", "blt", "blue")
        for k in ("discrete", "discrete_gaussian")
    }
    for name in MECHANISMS:
        vecs = _of(name)
        for kind in NOISE_KINDS:
            key = "rho" if "gaussian" in kind else "epsilon"
            budgets = {v[key] for v in vecs if v["noise_kind"] == kind}
            if (name, kind) in excluded:
                assert not budgets
            else:
                assert len(budgets) >= 2, (name, kind)
                assert budgets >= {str(b) for b in (RHOS if key == "rho" else EPSILONS)}
        have = {
            (v["description"], v["horizon"])
            for v in vecs
            if v["noise_kind"] == "laplace" and v.get("epsilon") == "1/2"
        }
        for cfg in _configs(name):
            # every horizon of each structure's grid that dpref accepts (Two-Level: B <= T)
            built = [c for T in cfg.horizons if _accepts(c := _grid_case(name, cfg, T))]
            assert len(built) >= len(cfg.horizons) // 2, (name, cfg)
            for c in built:
                assert (repr(c.build()), c.horizon) in have, c.name
    assert GRID.keys() <= MECHANISMS.keys()  # a mechanism not in GRID: its first example


def _configs(name: str) -> Any:
    from dpref.golden import _configs

    return _configs(name)


def _grid_case(name: str, cfg: Any, T: int) -> Any:
    from dpref.golden import EPSILON, _grid_case

    return _grid_case(name, cfg, T, "laplace", EPSILON)


def _accepts(case: Any) -> bool:
    from dpref.golden import _accepts

    return _accepts(case) is None


def test_discrete_noise_is_integer_and_continuous_noise_on_the_grid() -> None:
    for vec in SHIPPED["vectors"]:
        if vec["noise_kind"] in ("discrete", "discrete_gaussian"):
            assert all(isinstance(v, int) for v in vec["noise"]), vec["case"]
        else:
            assert all((Fraction(v) * 1024).denominator == 1 for v in vec["noise"])


def test_counting_outputs_are_exact_in_any_order() -> None:
    """Dyadic noise: every partial sum is exact, so any float summation order gives the bits."""
    checked = 0
    for vec in SHIPPED["vectors"]:
        if not vec["exact_in_float"] or vec["horizon"] > 17:
            continue
        plan = vector_mechanism(vec).plan(vec["horizon"])
        noisy = plan.A().toarray() @ np.array(vec["stream"], dtype=float) + np.array(vec["noise"])
        R = plan.R().toarray()
        for t in range(vec["horizon"]):
            total = 0.0
            for n in np.flatnonzero(R[t])[::-1]:  # reverse order
                total += R[t, n] * noisy[n]
            assert total == vec["outputs"][t]
        checked += 1
    assert checked >= 300


def test_check_catches_tampering() -> None:
    def tampered(case: str, change: Any) -> list[str]:
        bad = copy.deepcopy(SHIPPED)
        bad["vectors"] = [v for v in bad["vectors"] if v["case"] == case]
        change(bad["vectors"][0])
        return check_golden(bad)

    def bump(v: dict[str, Any]) -> None:
        v["outputs"][2] += 2.0**-10

    assert any("outputs differ" in p for p in tampered("binary[T=5]", bump))
    assert any(
        "scales differ" in p
        for p in tampered("binary[T=16]", lambda v: v["scales"].__setitem__(0, "1"))
    )
    assert any(
        "node intervals" in p for p in tampered("binary[T=16]", lambda v: v["nodes"].reverse())
    )
    assert any(
        "exact outputs differ" in p
        for p in tampered("binary[T=5]", lambda v: v["outputs_exact"].__setitem__(0, "7"))
    )
    assert any(
        "node epsilon differ" in p
        for p in tampered("binary[T=5]", lambda v: v["node_epsilon"].__setitem__(0, "7"))
    )
    assert any(
        "declared budget differ" in p
        for p in tampered("binary[T=5]", lambda v: v.__setitem__("declared_budget", "1"))
    )
    with pytest.raises(ParameterError, match="not an integer"):
        tampered("binary[T=16] discrete epsilon=1", lambda v: v["noise"].__setitem__(0, 0.5))


def test_older_formats_are_refused_by_name() -> None:
    for old in ("dpref-golden/1", "dpref-golden/2"):
        with pytest.raises(ParameterError, match=f"format='{old}': an older golden-vector format"):
            check_golden({"format": old, "vectors": []})


def test_gaussian_vectors_record_noise_and_rho() -> None:
    """zCDP vectors name their noise kind and their exact ρ; their scales are the exact
    node variances, their privacy sum the L2 sum (2ρ for bounded counters)."""
    vecs = {v["case"]: v for v in SHIPPED["vectors"]}
    vec = vecs["binary[T=16,zcdp]"]
    assert vec["noise_kind"] == "gaussian" and vec["rho"] == "1/2" and "epsilon" not in vec
    assert set(vec["scales"]) == {"5"}  # σ² = LΔ²/(2ρ) = 5 at T = 16 (L = 5), ρ = 1/2
    assert set(vec["node_rho"]) == {"1/10"}  # Δ²/(2σ²)
    assert vec["privacy_sum"] == "1"  # 2ρ
    dg = vecs["binary[T=16] discrete_gaussian rho=2"]
    assert set(dg["scales"]) == {"5/4"} and dg["privacy_sum"] == "4"
    assert vecs["binary[T=16]"]["noise_kind"] == "laplace"
    bad = copy.deepcopy(SHIPPED)
    bad["vectors"] = [v for v in bad["vectors"] if v["case"] == "binary[T=16,zcdp]"]
    bad["vectors"][0]["noise_kind"] = "laplace"
    with pytest.raises(ParameterError, match="rho"):
        check_golden(bad)


# ------------------------------------------------------------------ the files
@pytest.mark.parametrize("mechanism", sorted(MECHANISMS))
def test_schema_validates_the_shipped_file(mechanism: str) -> None:
    """The whole shipped file, split by mechanism (parallel-friendly)."""
    validator = jsonschema.Draft202012Validator(load_schema())
    validator.validate({**SHIPPED, "vectors": _of(mechanism)})


def test_schema_rejects_broken_files() -> None:
    schema = load_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["$id"] == "urn:dpref:schema:golden:3"
    assert SHIPPED["$schema"] == schema["$id"]
    validator = jsonschema.Draft202012Validator(schema)
    vec = next(v for v in SHIPPED["vectors"] if v["case"] == "binary[T=5]")
    broken: list[tuple[str, Any]] = [
        ("epsilon", 0.5),  # a float, not a rational string
        ("noise_kind", "uniform"),
        ("stream", [0, 2, 1]),
        ("horizon", 0),
        ("rho", "1/2"),  # both budgets
        ("extra", 1),
    ]
    for key, value in broken:
        doc = {**SHIPPED, "vectors": [{**vec, key: value}]}
        assert not validator.is_valid(doc), key
    doc = {**SHIPPED, "vectors": [{k: v for k, v in vec.items() if k != "noise"}]}
    assert not validator.is_valid(doc)
    assert not validator.is_valid({**SHIPPED, "format": "dpref-golden/2"})


def test_schema_describes_every_field() -> None:
    schema = load_schema()
    vector = schema["$defs"]["vector"]["properties"]
    for name, prop in [*schema["properties"].items(), *vector.items()]:
        assert prop.get("description") or "$ref" in prop, name
    fields = set().union(*(v.keys() for v in SHIPPED["vectors"]))
    assert fields <= set(vector)


def test_shipped_file_size_and_sample() -> None:
    data = resources.files("dpref").joinpath("data/golden.json.gz").read_bytes()
    assert len(data) < 3 << 20
    assert json.loads(gzip.decompress(data)) == SHIPPED
    sample = json.loads(resources.files("dpref").joinpath("data/golden-sample.json").read_text())
    assert sample == golden_sample(SHIPPED) == golden_sample()
    assert [v["case"] for v in sample["vectors"]] == [
        c for c in (v["case"] for v in SHIPPED["vectors"]) if c in SAMPLE_CASES
    ]
    assert len(sample["vectors"]) == len(SAMPLE_CASES)
    assert check_golden(sample) == []


def test_exclusions_name_the_reason() -> None:
    for e in golden_exclusions():
        assert e["noise_kind"] in e["reason"]


# ------------------------------------------------------------------ the command line
def test_cli_golden(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "g.json"
    assert main(["golden", "export", "--sample", str(out)]) == 0
    assert json.loads(out.read_text()) == golden_sample(SHIPPED)
    capsys.readouterr()
    assert main(["golden", "check", str(out), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["passed"] is True
    gz = tmp_path / "g.json.gz"
    gz.write_bytes(gzip.compress(out.read_bytes()))
    assert main(["golden", "check", str(gz)]) == 0
    doc = json.loads(out.read_text())
    doc["vectors"][1]["outputs"][0] += 1
    out.write_text(json.dumps(doc))
    assert main(["golden", "check", str(out)]) == 1
    assert main(["golden", "check", str(tmp_path / "missing.json")]) == 2
    capsys.readouterr()
    assert main(["golden", "schema"]) == 0
    assert json.loads(capsys.readouterr().out) == load_schema()
