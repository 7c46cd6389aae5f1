"""Third-party plans as references (issue 25 item 4): ``dpref plan extract``,
``dpref conform/audit --reference FILE`` and float-derived parameters on the command line.

The statistical tests are ``dpref conform`` runs with fixed seeds at its default false-alarm
rate ALPHA = 0.01 (Bonferroni over its four statistical checks, docs/auditing.md): a
conforming target is flagged with probability at most 0.01, and the seeds are fixed, so the
outcome is deterministic.  Power: halving one node's Laplace scale makes that node's scale
ratio 0.5; with 500 runs its exact Gamma interval is about ±10 %, so it excludes 1 with
overwhelming probability (and the per-step variance of the outputs using it drops to 1/4).
"""

from __future__ import annotations

import json
import sys
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from dpref import Binary
from dpref.audit.conformance.conform import conform
from dpref.audit.conformance.reference_file import PlanReference, is_plan_file
from dpref.cli import main
from dpref.cli.plan import check_file
from dpref.cli.plan_extract import extract_plan
from dpref.cli.plan_reference import load_reference_plan
from dpref.errors import DprefError, ParameterError
from dpref.mechanisms.factorization.blt import BLT
from dpref.mechanisms.float_params import binary_parameters

HERE = Path(__file__).parent
FDA = str(HERE / "targets" / "fda.py")
sys.path.insert(0, str(HERE / "targets"))

import fda as fda_module  # noqa: E402

ALPHA = 0.01
"""conform's default false-alarm rate (the whole run)."""
RUNS = ["--runs", "500", "--seed", "11"]
OMEGA_EXACT = ["--omega", "1/4", "--exact"]
SAMPLES = ["--samples", "2000", "--seed", "1", "--events", "plan"]


def _json_run(argv: list[str], capsys: Any) -> tuple[int, dict[str, Any]]:
    code = main([*argv, "--json"])
    out = capsys.readouterr().out
    return code, json.loads(out)


@pytest.fixture(scope="module")
def fda_plan(tmp_path_factory: Any) -> Path:
    """``dpref plan extract`` of the FDA target at T = 15 (one worker, ~T + 20 calls)."""
    out = tmp_path_factory.mktemp("plans") / "fda15.json"
    code = main(["plan", "extract", f"{FDA}:fda", "--horizon", "15", "--out", str(out)])
    assert code == 0
    return out


def test_fda_plan_file_is_fda(fda_plan: Path) -> None:
    """The extracted file is FDA's plan: one row per node, node t = cof(t) on
    (t − lowbit(t), t], scale 1/ε, a float plan that plan check accepts as prefix sums."""
    doc = json.loads(fda_plan.read_text())
    assert doc["noise"] == "laplace"
    cof = fda_module.coefficients(15)
    C = np.array(doc["C"])
    want = np.zeros((15, 15))
    for t in range(1, 16):
        want[t - 1, t - (t & -t) : t] = cof[t - 1]
    assert np.allclose(C, want, rtol=1e-14, atol=0)
    assert (C[want == 0] == 0).all()  # structural zeros are exact (rational solve)
    assert doc["scales"] == [1.0 / fda_module.EPSILON] * 15
    report = check_file(str(fda_plan), scale="1")
    assert report["target"] == "prefix sums" and report["mode"].startswith("float")
    assert abs(report["epsilon_supported"] - 1.0) < 1e-12


def test_fda_conforms_to_its_extracted_plan(fda_plan: Path, capsys: Any) -> None:
    code, rep = _json_run(
        [
            "conform",
            f"{FDA}:fda",
            "--reference",
            str(fda_plan),
            "--epsilon",
            "1",
            "--runs",
            "500",
            "--seed",
            "11",
        ],
        capsys,
    )
    assert code == 0, rep["reason"]
    assert rep["verdict"] == "conforms" and rep["horizon"] == 15  # T from the file
    assert {c["name"]: c["passed"] for c in rep["checks"]}["noise-law"] is True
    assert any("exact binary values" in n for n in rep["input_notes"])


def test_fda_with_one_node_halved_does_not_conform(fda_plan: Path, capsys: Any) -> None:
    code, rep = _json_run(
        [
            "conform",
            f"{FDA}:fda_half_node",
            "--reference",
            str(fda_plan),
            "--epsilon",
            "1",
            "--runs",
            "500",
            "--seed",
            "11",
        ],
        capsys,
    )
    assert code == 1
    failed = {c["name"] for c in rep["checks"] if c["passed"] is False}
    assert {"noise-scale", "variance"} <= failed
    scale = next(c for c in rep["checks"] if c["name"] == "noise-scale")
    assert "0.4" in scale["detail"] or "0.5" in scale["detail"]  # the halved node's ratio
    assert rep["implied_epsilon"]["low"] > 1  # the structure matches: an ε above the claim


def test_extract_is_exact_for_a_dyadic_counter(tmp_path: Path) -> None:
    """Binary's probed values are short dyadics: C, B and the scales come out exact and
    equal to dpref's own plan of Binary; plan check finds ε = 1 exactly."""
    m = Binary(epsilon=1, horizon=7)
    rep = extract_plan(m, 7)
    assert rep.exit_code == 0 and rep.exact and rep.determined
    plan = m.plan(7)
    assert rep.strategy == plan.dense_A_exact()
    assert rep.decoder == plan.recombination.to_dense_exact()
    assert rep.scales == [plan.scale(n) for n in range(plan.n_nodes)]
    path = tmp_path / "binary7.json"
    path.write_text(json.dumps(rep.document()))
    report = check_file(str(path), scale="1")
    assert report["mode"] == "exact" and report["epsilon_supported_exact"] == "1"
    assert rep.target_kind == "prefix sums" and rep.budget == 1.0


def test_plan_reference_reproduces_the_mechanism(tmp_path: Path) -> None:
    """A plan file of Binary as a reference has Binary's variances under Laplace noise
    (calibrated from --epsilon or at the file's own scales) and under Gaussian noise
    (from --rho), and its plan passes the exact checks."""
    m = Binary(epsilon=1, horizon=7)
    doc = extract_plan(m, 7).document()
    path = tmp_path / "b.json"
    path.write_text(json.dumps(doc))
    pf = load_reference_plan(str(path))
    own = PlanReference.from_file(pf)
    assert own.declared_epsilon == 1 and np.array_equal(own.variance(7), m.variance(7))
    half = PlanReference.from_file(pf, epsilon="1/2")
    assert np.allclose(half.variance(7), 4 * m.variance(7))
    assert own.plan(7).check().passed and half.plan(7).check().passed
    del doc["noise"]
    path.write_text(json.dumps(doc))
    g = PlanReference.from_file(load_reference_plan(str(path)), rho="1/2")
    mg = Binary(rho="1/2", horizon=7)
    assert np.allclose(g.variance(7), mg.variance(7))
    assert g.plan(7).check().privacy_sum == 1  # 2ρ
    r = conform(mg, g, horizon=7, runs=200, seed=2)
    assert r.verdict == "conforms", r.reason


def test_plan_reference_errors(tmp_path: Path) -> None:
    path = tmp_path / "p.json"
    path.write_text(json.dumps({"C": [[1, 0], [0, 1]], "B": [[0, 1], [1, 1]]}))
    with pytest.raises(ParameterError, match="not causal"):
        load_reference_plan(str(path))
    path.write_text(json.dumps({"C": [[1, 0], [0, 1]], "B": [[1, 0], [1, 1]], "x": 1}))
    with pytest.raises(ParameterError, match=r"x=\.\.\.: unknown; choose from "):
        load_reference_plan(str(path))
    path.write_text(json.dumps({"C": [[1, 0], [0, 1]], "B": [[1, 0], [1, 1]], "noise": "laplace"}))
    pf = load_reference_plan(str(path))
    with pytest.raises(ParameterError, match="contradicts"):
        PlanReference.from_file(pf, rho=1)
    with pytest.raises(ParameterError, match="supports ε = 2"):
        PlanReference.from_file(pf, scale="1/2", epsilon=1)
    path.write_text(json.dumps({"C": [[1, 0], [0, 1]], "B": [[1, 0], [1, 1]]}))
    with pytest.raises(ParameterError, match="names no noise law"):
        PlanReference.from_file(load_reference_plan(str(path)))
    assert is_plan_file("plan.json") and is_plan_file("dir/p") and not is_plan_file("binary")


def test_cli_refuses_unused_reference_options(fda_plan: Path, capsys: Any) -> None:
    code = main(["conform", f"{FDA}:fda", "--horizon", "15", "--scale", "1"])
    assert code == 2 and "applies only with --reference FILE" in capsys.readouterr().err
    code = main(["conform", f"{FDA}:fda", "--reference", str(fda_plan), "--window", "3"])
    assert code == 2 and "would be ignored" in capsys.readouterr().err


def test_no_plan_for_an_uncovered_item() -> None:
    """The first output released without noise: item 1 moves it, no noise covers it."""
    rep = extract_plan(_first_step_exact, 3)
    assert rep.exit_code == 1 and rep.strategy is None
    assert "item 1" in rep.findings[0]


def _first_step_exact(stream: Any, rng: Any) -> Any:
    x = np.asarray(stream, dtype=np.float64)
    z = rng.laplace(0.0, 1.0, size=x.size)
    z[0] = 0.0 * z[0]
    return np.cumsum(x) + z


def test_float_derived_parameters_take_the_binary_value() -> None:
    """--theta 0.9989 is the float 0.9989 (as BLT(theta=[0.9989]) is); a rational string
    stays exact; a decimal that is a float exactly needs no note; ε keeps its decimal."""
    import argparse

    ns = argparse.Namespace()
    params = binary_parameters(BLT, {"theta": "0.9989,9989/10000,0.5", "omega": None}, ns)
    theta = [Fraction(v) for v in params["theta"].split(",")]
    assert theta == [Fraction(0.9989), Fraction(9989, 10000), Fraction(1, 2)]
    assert ns.input_notes == [
        "theta[0] taken at the exact binary value of the float 0.9989 = 8997291335560777/2^53"
    ]
    api = BLT(rho=1, horizon=4, theta=[0.9989], omega=[0.25])
    cli = BLT(rho=1, horizon=4, **binary_parameters(BLT, {"theta": "0.9989", "omega": "0.25"}, ns))
    assert api.theta == cli.theta
    assert binary_parameters(Binary, {"theta": "0.9989"}, ns) == {"theta": "0.9989"}


def test_float_derived_note_in_the_report(capsys: Any) -> None:
    code, rep = _json_run(
        [
            "audit",
            "blt",
            "--rho",
            "1/2",
            "--horizon",
            "3",
            "--theta",
            "0.9989",
            "--omega",
            "1/4",
            "--exact",
        ],
        capsys,
    )
    assert code == 0
    assert rep["input_notes"] == [
        "theta taken at the exact binary value of the float 0.9989 = 8997291335560777/2^53"
    ]
    with pytest.raises(DprefError):
        BLT(rho=1, horizon=4, theta="1e-400", omega="1/4")


def test_audit_takes_a_plan_file_reference(fda_plan: Path, capsys: Any) -> None:
    """The sampled audit's plan-aware event is built from the file: FDA claims ε = 1 and is
    not refuted (confidence 0.99), while the event still shows most of the loss."""
    code, rep = _json_run(
        [
            "audit",
            f"{FDA}:fda",
            "--reference",
            str(fda_plan),
            "--epsilon",
            "1",
            "--samples",
            "2000",
            "--seed",
            "1",
            "--events",
            "plan",
        ],
        capsys,
    )
    assert code == 0 and rep["verdict"] == "no-violation-found"
    assert 0.5 < rep["epsilon_lower_bound"] <= 1


def _two_draws_per_step(stream: Any, rng: Any) -> Any:
    """Simple I with two unit Laplace draws per output: the outputs see only their sum."""
    x = np.asarray(stream, dtype=np.float64)
    return np.cumsum(x) + rng.laplace(0.0, 1.0, size=x.size) + rng.laplace(0.0, 1.0, size=x.size)


def _two_normals_per_step(stream: Any, rng: Any) -> Any:
    x = np.asarray(stream, dtype=np.float64)
    return np.cumsum(x) + rng.normal(0.0, 1.0, size=x.size) + rng.normal(0.0, 1.0, size=x.size)


def test_undetermined_strategy_is_the_least_cost_one() -> None:
    """With more draws than the outputs can tell apart, C is not determined: the file holds
    the least-cost C, whose column sums are the output-level loss — T = 3 here: ε = 3
    (Laplace; v_z + v_w = 1 on every later step) and ρ = μ²/2 = 3/4 (Gaussian: the
    least-norm split puts 1/2 on each draw, μ² = 3·(1/4 + 1/4))."""
    lap = extract_plan(_two_draws_per_step, 3)
    assert lap.exit_code == 0 and not lap.determined and not lap.exact
    assert lap.budget == pytest.approx(3.0, rel=1e-12)
    assert any("not determined" in n for n in lap.notes)
    gau = extract_plan(_two_normals_per_step, 3)
    assert gau.exit_code == 0 and not gau.determined and gau.law == "gaussian"
    assert gau.budget == pytest.approx(0.75, rel=1e-12)
    C = np.array([[float(v) for v in row] for row in gau.strategy or []])
    assert np.allclose(C[:3], C[3:]) and np.allclose(C[:3] + C[3:], np.tril(np.ones((3, 3))))


BANDED = str(HERE / "targets" / "banded.py")


def test_banded_gaussian_strategy_extracts_exactly_and_conforms(tmp_path: Path) -> None:
    """A banded Toeplitz strategy (rows are not intervals) under Gaussian noise: its plan
    comes out exact (C = the band, ρ = L2²/2 = 5/8 at σ = 1), the target conforms to it and
    the same target at 0.7σ does not (its σ ratio 0.7 lies far outside the exact χ²
    interval at 300 runs; the implied ρ is 5/8/0.49 = 1.28)."""
    rep = extract_plan(f"{BANDED}:banded", 8)
    assert rep.exit_code == 0 and rep.exact and rep.law == "gaussian"
    band = [
        [Fraction(1) if i == n else Fraction(1, 2) if i == n - 1 else 0 for i in range(8)]
        for n in range(8)
    ]
    assert rep.strategy == band and rep.budget_exact == Fraction(5, 8)
    path = tmp_path / "band.json"
    path.write_text(json.dumps(rep.document()))
    ref = PlanReference.from_file(load_reference_plan(str(path)))
    assert ref.declared_rho == Fraction(5, 8)
    ok = conform(f"{BANDED}:banded", ref, horizon=8, runs=300, seed=3)
    assert ok.verdict == "conforms", ok.reason
    thin = conform(f"{BANDED}:banded_thin", ref, horizon=8, runs=300, seed=3)
    assert thin.verdict == "violation" and thin.implied_rho is not None
    assert thin.implied_rho["low"] > 5 / 8


def test_npz_plan_file_reads_floats_at_their_binary_values(tmp_path: Path) -> None:
    C = np.array([[1.0, 0.0], [0.1, 1.0]])
    B = np.array([[1.0, 0.0], [0.9, 1.0]])
    path = tmp_path / "p.npz"
    np.savez(path, C=C, B=B, scales=np.array([1.0, 0.5]), noise=np.array("laplace"))
    pf = load_reference_plan(str(path))
    assert pf.noise == "laplace" and pf.floats == 10
    assert pf.strategy[1][0] == Fraction(0.1) != Fraction(1, 10)
    ref = PlanReference.from_file(pf)
    # L1 = max(1 + 0.1/0.5, 1/0.5) = 2 (item 2), at unit scale: ε = 2 exactly
    assert ref.declared_epsilon == 2
    assert np.allclose(ref.target(np.array([1.0, 1.0])), B @ C @ np.ones(2))


def test_extract_writes_nothing_when_the_structure_is_not_recovered(
    tmp_path: Path, capsys: Any
) -> None:
    """A clipped release is not linear: exit 3 with the finding, and no file."""
    out = tmp_path / "clipped.json"
    target = f"{HERE / 'injectable_targets.py'}:binary_clipped"
    code, rep = _json_run(["plan", "extract", target, "--horizon", "4", "--out", str(out)], capsys)
    assert code == 3 and rep["verdict"] == "inconclusive" and rep["out"] is None
    assert "not linear" in rep["findings"][0] and not out.exists()


def test_honaker_tree_extracts_its_causal_least_squares_plan(tmp_path: Path) -> None:
    """Honaker's GLS tree (15 draws, 8 outputs — the KTCR family: per-row scales, a decoder
    that is not a selection): C is not determined; the least-squares causal C is a plan
    whose ρ is the outputs' exact one, 297/680 (`dpref audit honaker --rho 1/2 --horizon 8
    --exact`: μ² = 297/340), below the plan's declared 1/2; Honaker conforms to it."""
    from dpref import Honaker

    m = Honaker(rho="1/2", horizon=8)
    rep = extract_plan(m, 8)
    assert rep.exit_code == 0 and not rep.determined and len(rep.scales) == 15
    assert rep.budget == pytest.approx(297 / 680, rel=1e-12)
    path = tmp_path / "honaker.json"
    path.write_text(json.dumps(rep.document()))
    ref = PlanReference.from_file(load_reference_plan(str(path)))  # causal, or it would raise
    r = conform(m, ref, horizon=8, runs=300, seed=1)
    assert r.verdict == "conforms", r.reason


def test_a_toeplitz_coefficient_file_is_a_reference(tmp_path: Path, capsys: Any) -> None:
    """A plan by its coefficients (docs/plan-format.md) is read through dpref.planfile and
    expanded: dpref's square-root factorization conforms to the T = 8 Toeplitz file, and not
    to another factorization of the same prefix sums (C = I, B = all ones: input noise)."""
    example = Path(__file__).resolve().parent.parent / "docs" / "examples" / "sqrt-T8-toeplitz.json"
    plan = load_reference_plan(str(example))
    assert len(plan.strategy) == 8 and plan.strategy[3][0] == Fraction(5, 16)
    assert plan.strategy[0][3] == 0 and plan.floats == 0  # lower triangular, exact
    argv = ["conform", "sqrt", "--horizon", "8", "--rho", "1/2", "--seed", "1", "--runs", "500"]
    code, rep = _json_run([*argv, "--reference", str(example)], capsys)
    assert code == 0, rep["reason"]
    other = tmp_path / "input-noise.json"
    other.write_text(json.dumps({"kind": "toeplitz", "C": [1] + [0] * 7, "B": [1] * 8}))
    code, rep = _json_run([*argv, "--reference", str(other)], capsys)
    assert code == 1 and not rep["conforms"]
