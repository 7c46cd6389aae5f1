"""Toeplitz factorizations (SqrtFactorization, BLT), the general strategy plans and
``dpref plan check`` (docs/factorization.md)."""

from __future__ import annotations

import json
import math
import sys
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy import stats

from dpref import BLT, DprefError, ParameterError, SqrtFactorization
from dpref.mechanisms import factorization as fz
from dpref.strategy import (
    DensePlan,
    RationalGF,
    ScaledSeq,
    ToeplitzPlan,
    convolution_mismatch,
    dense_from_toeplitz,
)

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "docs" / "examples"

ALPHA = 1e-6
"""False-failure rate of the Gaussian variance test (all steps together)."""
RUNS = 20_000
"""Runs of the variance test: mean(e²) of a Gaussian has relative standard error
sqrt(2/RUNS) = 1 %, so a 10 % scale error (21 % in variance) is ≥ 20 standard errors away."""


# ------------------------------------------------------------ exact convolution
def _naive(a: list[int], b: list[int], n: int) -> list[int]:
    return [
        sum(a[j] * b[k - j] for j in range(k + 1) if j < len(a) and k - j < len(b))
        for k in range(n)
    ]


@pytest.mark.parametrize("n", [1, 5, 40, 193, 700])
def test_kronecker_equals_naive_with_signs(n: int) -> None:
    rng = np.random.default_rng(n)
    a = [int(v) for v in rng.integers(-(10**12), 10**12, n)]
    b = [int(v) * 3**40 for v in rng.integers(-50, 50, n)]
    target = _naive(a, b, n)
    assert convolution_mismatch(a, b, target) is None
    k = n // 2
    bad = list(target)
    bad[k] += 1
    assert convolution_mismatch(a, b, bad) == (k, target[k])


def test_kronecker_restores_the_str_digits_limit() -> None:
    before = sys.get_int_max_str_digits()
    a = [math.comb(2 * j, j) for j in range(600)]
    assert convolution_mismatch(a, a, [4**k for k in range(600)]) is None
    assert sys.get_int_max_str_digits() == before


def test_sqrt_square_is_prefix_exactly_at_1024() -> None:
    m = SqrtFactorization(epsilon=1, horizon=1024)
    check = m.plan().check_unbiased()
    assert check.passed and "Kronecker" in check.detail


def test_a_wrong_coefficient_is_found_at_its_lag() -> None:
    T = 300
    c = fz.sqrt_coefficients(T)
    wrong = ScaledSeq(tuple(v + (1 if k == 201 else 0) for k, v in enumerate(c.nums)), 1, 4)
    plan = ToeplitzPlan("x", T, c, wrong, Fraction(1), Fraction(1), declared_epsilon=Fraction(1))
    check = plan.check_unbiased()
    assert not check.passed and "t−201" in check.detail


def test_rational_gf_expansion_and_window_target() -> None:
    gf = RationalGF((Fraction(1),), (Fraction(1), Fraction(-1, 3)))
    assert gf.expand(5).fractions() == [Fraction(1, 3**k) for k in range(5)]
    # window sums of width 3 with C = I, B = the window matrix
    T, W = 9, 3
    ident = ScaledSeq((1,) + (0,) * (T - 1))
    window = ScaledSeq(tuple(1 if k < W else 0 for k in range(T)))
    plan = ToeplitzPlan(
        "w", T, ident, window, Fraction(1), Fraction(1), declared_epsilon=Fraction(1), window=W
    )
    assert plan.check_unbiased().passed
    prefix = ToeplitzPlan(
        "p", T, ident, window, Fraction(1), Fraction(1), declared_epsilon=Fraction(1)
    )
    assert not prefix.check_unbiased().passed


def test_dense_form_agrees_and_the_crt_check_is_exact() -> None:
    m = BLT(epsilon=Fraction(7, 10), horizon=12, theta="1/2,7/8", omega="1/4,1/8")
    toe = m.plan()
    dense = dense_from_toeplitz(toe)
    report = dense.check(m.variance_exact(12))
    assert report.passed, report
    assert dense.privacy_sum() == toe.privacy_sum() == Fraction(7, 10)
    # a perturbation of 2^-300 in one entry of C is found (exact, not a float tolerance)
    C = [list(row) for row in dense.strategy]
    C[5][2] += Fraction(1, 2**300)
    bad = DensePlan(
        "bad", tuple(map(tuple, C)), dense.decoder, dense.node_scales,
        declared_epsilon=Fraction(7, 10),
    )  # fmt: skip
    check = bad.check_unbiased()
    assert not check.passed and "(B·C)[6,3]" in check.detail


def test_dense_plan_causality_and_canonical_order() -> None:
    C = ((Fraction(1), Fraction(1)), (Fraction(1), Fraction(0)))  # row 0 released at 2, row 1 at 1
    B = ((Fraction(0), Fraction(1)), (Fraction(1), Fraction(0)))
    plan = DensePlan("swap", C, B, (Fraction(1), Fraction(1)), declared_epsilon=Fraction(2))
    assert plan.check_unbiased().passed and plan.check_causal().passed
    assert plan.canonical_order.tolist() == [1, 0]
    noncausal = DensePlan("nc", C, ((Fraction(1), Fraction(0)),) * 2, (Fraction(1),) * 2)
    assert not noncausal.check_causal().passed


# ------------------------------------------------------------ SqrtFactorization
def test_sqrt_sums_exact_forms() -> None:
    for T in (1, 2, 3, 17, 200):
        c = fz.sqrt_coefficients(T)
        assert fz.sqrt_s1(T) == sum(c.fractions(), Fraction(0))
        assert fz._sqrt_s2_exact(T) == c.square_sum() == sum(v * v for v in c.fractions())
    assert fz.sqrt_coefficients(3).fractions() == [1, Fraction(1, 2), Fraction(3, 8)]


def test_sqrt_bounds_above_the_switch_are_upper_bounds() -> None:
    T = fz.SQRT_EXACT_S2 + 3000
    exact = fz._sqrt_s2_exact(T)
    upper = fz.sqrt_s2_upper(T)
    assert exact < upper < exact * (1 + Fraction(1, 10**5))
    T1 = fz.SQRT_EXACT_S1 + 5
    n = T1 - 1
    exact1 = Fraction((2 * n + 1) * math.comb(2 * n, n), 4**n)
    assert exact1 < fz.sqrt_s1(T1) < exact1 * (1 + Fraction(1, 10**9))


def test_sqrt_gaussian_max_variance_at_two_to_the_twenty() -> None:
    """research/frontier.md §2: T = 2^20, ρ = 1/2, Δ = 1: max variance S₂² ≈ 30.02."""
    m = SqrtFactorization(rho=Fraction(1, 2), horizon=2**20)
    v = m.variance_upper()
    assert v.shape == (2**20,)
    assert 30.01 < v.max() < 30.03 and v.max() == v[-1]
    assert 28.2 < v.mean() < 28.35  # research/frontier.md: mean 28.28


def test_variance_upper_bounds_the_exact_variance_tightly() -> None:
    m = SqrtFactorization(rho=Fraction(1, 3), horizon=3000)
    exact = m.variance_exact(3000)
    upper = m.variance_upper(3000)
    assert all(Fraction(float(u)) >= e for u, e in zip(upper, exact, strict=True))
    rel = max(float((Fraction(float(u)) - e) / e) for u, e in zip(upper, exact, strict=True))
    assert rel <= 1e-12


@pytest.mark.parametrize(
    "cls_kw", [(SqrtFactorization, {}), (BLT, {"theta": "1/2,7/8", "omega": "1/4,1/8"})]
)
def test_gaussian_plans_spend_exactly_2rho(cls_kw: tuple[Any, dict[str, Any]]) -> None:
    cls, kw = cls_kw
    for T in (1, 2, 9, 100):
        m = cls(rho=Fraction(2, 5), horizon=T, **kw)
        report = m.plan().check(m.variance_exact())
        assert report.passed, report
        assert report.noise_family == "gaussian" and report.privacy_sum == Fraction(4, 5)


def test_gaussian_release_variance_and_power() -> None:
    T = 30
    m = SqrtFactorization(rho=Fraction(1, 2), horizon=T)
    stream = np.random.default_rng(2).integers(0, 2, T)
    errors = m.release_many(stream, RUNS, rng=np.random.default_rng(3)) - m.target(stream)
    sigma2 = m.variance()
    crit = float(stats.norm.isf(ALPHA / (2 * T)))  # two-sided, Bonferroni over the steps

    def z(err: np.ndarray) -> np.ndarray:
        # Gaussian errors: Var(e²) = 2σ⁴, so se(mean e²) = σ²·sqrt(2/RUNS)
        return (np.mean(err**2, axis=0) - sigma2) / (sigma2 * np.sqrt(2 / RUNS))

    assert np.max(np.abs(z(errors))) < crit
    for factor in (1.1, 0.9):
        assert np.max(np.abs(z(errors * factor))) >= crit


def test_discrete_noise_is_refused() -> None:
    with pytest.raises(ParameterError, match="noise='discrete'"):
        SqrtFactorization(epsilon=1, horizon=4, noise="discrete")
    with pytest.raises(ParameterError, match="noise='discrete_gaussian'"):
        BLT(rho=1, horizon=4, noise="discrete_gaussian")


def test_online_sqrt_long_stream_agrees_with_batch() -> None:
    m = SqrtFactorization(rho=1, horizon=1000)
    x = np.random.default_rng(4).integers(0, 2, 1000)
    np.testing.assert_allclose(m.online(rng=8).run(x), m.release(x, rng=8), rtol=0, atol=1e-9)


# --------------------------------------------------------------------- BLT
@pytest.mark.parametrize(
    ("kw", "named"),
    [
        ({"theta": "1/2,1", "omega": "1/4,1/4"}, "theta[1]=1"),
        ({"theta": "0,1/2", "omega": "1/4,1/4"}, "theta[0]=0"),
        ({"theta": "1/2,1/3", "omega": "1/4,-1/8"}, "omega[1]=-1/8"),
        ({"theta": "1/2,1/3", "omega": "3/4,1/2"}, "omega="),
        ({"theta": "1/2,1/3", "omega": "1/4"}, "omega="),
        ({"theta": "1/2"}, "omega=None"),
        ({"theta": "1/2,x", "omega": "1/4,1/4"}, "theta[1]="),
        ({"theta": ",".join(["1/2"] * 17), "omega": "1/4"}, "theta="),
        ({"theta": [0.5, float("nan")], "omega": [0.1, 0.1]}, "theta[1]="),
        ({"theta": 0.5, "omega": 0.5}, "theta="),
    ],
)
def test_blt_invalid_parameters_name_the_first_offender(kw: dict[str, Any], named: str) -> None:
    with pytest.raises(DprefError, match=named.replace("[", r"\[").replace("]", r"\]")):
        BLT(epsilon=1, horizon=8, **kw)


def test_blt_valid_strategy_is_positive_and_non_increasing() -> None:
    m = BLT(epsilon=1, horizon=200, theta="1/2,7/8,99/100", omega="1/4,1/8,1/16")
    c = m.strategy_exact(200).fractions()
    assert c[0] == 1 and all(c[k] > 0 and c[k + 1] <= c[k] for k in range(199))
    assert (
        c[3]
        == Fraction(1, 4) * Fraction(1, 2) ** 2
        + Fraction(1, 8) * Fraction(7, 8) ** 2
        + Fraction(1, 16) * Fraction(99, 100) ** 2
    )


def test_blt_decoder_is_q_times_c_inverse_and_online_is_o_buffers() -> None:
    m = BLT(rho=Fraction(1, 2), horizon=500, theta="1/2,7/8,99/100", omega="1/4,1/8,1/16")
    plan = m.plan()
    assert plan.check_unbiased().passed
    # the decoder's coefficients, materialised, convolve with c to all ones
    assert dense_from_toeplitz(m.plan(40)).check_unbiased().passed
    x = np.random.default_rng(5).integers(0, 2, 500)
    z = m.node_noise(500, 6)
    np.testing.assert_allclose(m.online(noise=z).run(x), plan.output(x, z), rtol=0, atol=1e-9)
    assert m.online_memory(500) == m.online_memory(10**9) == 3 * 3 + 2


def test_blt_preset_is_within_five_percent_of_sqrt_at_two_to_the_twenty() -> None:
    T = 2**20
    blt = BLT(rho=Fraction(1, 2), horizon=T)
    assert blt.buffers <= 5
    sqrt_max = float(SqrtFactorization(rho=Fraction(1, 2), horizon=T).variance_upper().max())
    blt_max = float(blt.variance_float().max())
    assert blt_max <= 31.5 and blt_max <= 1.05 * sqrt_max, (blt_max, sqrt_max)
    # the float buffer recursion agrees with the 50-digit closed form
    import mpmath

    ctx = mpmath.MPContext()
    ctx.dps = 50
    exact = float(fz._blt_max_variance_factor(ctx, list(blt.theta), list(blt.omega), T))
    assert blt_max == pytest.approx(exact, rel=1e-9)


def test_blt_optimise_returns_a_valid_rational_blt_that_beats_its_start() -> None:
    import mpmath

    m = BLT.optimise(128, 2, starts=1, max_evaluations=120, seed=1)
    assert m.buffers == 2 and all(t.denominator <= 2**32 for t in m.theta)
    ctx = mpmath.MPContext()
    ctx.dps = 50
    got = float(fz._blt_max_variance_factor(ctx, list(m.theta), list(m.omega), 128))
    # ρ = 1/2, Δ = 1: σ² = S₂, so the largest exact variance is the objective S₂·Σ b_k²
    assert got == pytest.approx(float(m.variance_exact(128)[-1]), rel=1e-12)
    one = BLT(rho=Fraction(1, 2), horizon=128, theta="1/2", omega="1/2")
    assert got < float(fz._blt_max_variance_factor(ctx, list(one.theta), list(one.omega), 128))


def test_docs_numbers_are_what_the_code_prints() -> None:
    from dpref.cli.plan import _text, check_file

    doc = (ROOT / "docs" / "factorization.md").read_text()
    for name, kw in (
        ("sqrt-T8.json", {"rho": "1/2"}),
        ("binary-T4.json", {"epsilon": "1"}),
        ("sqrt-T64.npz", {"sigma": "2", "rho": "1/2"}),
    ):
        assert (
            _text(check_file(str(EXAMPLES / name), **kw)).replace(str(EXAMPLES), "docs/examples")
            in doc
        )
    blt = BLT(rho=Fraction(1, 2), horizon=2**20).variance_float()
    assert f"| {blt.max():.4f} | {blt.mean():.4f} |" in doc


def test_blt_preset_exact_plan_at_moderate_t() -> None:
    m = BLT(epsilon=1, horizon=512)
    report = m.plan().check()
    assert report.passed and report.privacy_sum == 1


# ------------------------------------------------------------ dpref plan check
def _cli(
    argv: list[str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> tuple[int, str, str]:
    """``dpref plan ...`` through dpref.cli.main with this checkout's plan command added (the
    entry point needs a reinstall to be visible)."""
    import dpref.cli as cli
    import dpref.cli.plan as plan_cmd

    real = cli.load

    def load(group: str) -> list[Any]:
        got = [p for p in real(group) if getattr(p, "__name__", "") != "dpref.cli.plan"]
        return [*got, plan_cmd]

    monkeypatch.setattr(cli, "load", load)
    code = cli.main(argv)
    out = capsys.readouterr()
    return code, out.out, out.err


def test_plan_check_examples(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    code, out, err = _cli(
        ["plan", "check", str(EXAMPLES / "sqrt-T8.json"), "--rho", "1/2", "--json"],
        capsys,
        monkeypatch,
    )
    assert code == 0, err
    doc = json.loads(out)
    assert doc["unbiased"] and doc["causal"] and doc["mode"] == "exact"
    assert Fraction(doc["sensitivity_l2_squared_exact"]) == fz.sqrt_s2(8)
    assert Fraction(doc["variance"]["max_exact"]) == fz.sqrt_s2(8) ** 2
    code, out, _ = _cli(
        ["plan", "check", str(EXAMPLES / "binary-T4.json"), "--epsilon", "1"], capsys, monkeypatch
    )
    assert code == 0 and "Laplace scale needed for ε: 3" in out
    code, out, _ = _cli(
        ["plan", "check", str(EXAMPLES / "sqrt-T64.npz"), "--sigma", "1", "--rho", "1/2", "--json"],
        capsys,
        monkeypatch,
    )
    doc = json.loads(out)
    assert code == 1 and doc["noise_sufficient"] is False  # σ = 1 < √S₂ supports ρ > 1/2
    assert doc["rho_supported"] == pytest.approx(float(fz.sqrt_s2(64)) / 2)


def _write(tmp_path: Path, name: str, doc: Any) -> str:
    path = tmp_path / name
    path.write_text(doc if isinstance(doc, str) else json.dumps(doc))
    return str(path)


BINARY_C = [[1, 0, 0, 0], [1, 1, 0, 0], [0, 0, 1, 0], [1, 1, 1, 1]]
BINARY_B = [[1, 0, 0, 0], [0, 1, 0, 0], [0, 1, 1, 0], [0, 0, 0, 1]]


@pytest.mark.parametrize(
    ("doc", "named"),
    [
        ("{not json", "not valid JSON"),
        ([1, 2], "top level"),
        ({"C": BINARY_C}, "B=missing"),
        ({"C": BINARY_C, "B": BINARY_B, "X": 1}, "X=..."),
        ({"C": BINARY_C, "B": [r[:3] for r in BINARY_B]}, "B: shape (4, 3)"),
        ({"C": BINARY_C, "B": BINARY_B[:3]}, "B: shape (3, 4)"),
        ({"C": [[1, 0], [1]], "B": BINARY_B}, "C[1]: 1 entries"),
        ({"C": BINARY_C, "B": BINARY_B, "scales": [1, 1, 0, 1]}, "scales[2]=0"),
        ({"C": BINARY_C, "B": BINARY_B, "scales": [1, 1]}, "scales: 2 entries"),
        (
            {"C": [[1, 0, 0, 0], [1, "x", 0, 0], [0, 0, 1, 0], [1, 1, 1, 1]], "B": BINARY_B},
            "C[1][1]=",
        ),
        (
            {"C": [[1, 0, 0, 0], [1, True, 0, 0], [0, 0, 1, 0], [1, 1, 1, 1]], "B": BINARY_B},
            "C[1][1]=True",
        ),
        (
            {"C": [[1.0, 0, 0, 0], [1, 1, 0, 0], [0, 0, 1, 0], [1, 1, 1, "inf"]], "B": BINARY_B},
            "C[3][3]=",
        ),
        ('{"C": [[1.0, 0], [1, Infinity]], "B": [[1, 0], [0, 1]]}', "C[1][1]=inf"),
        ({"C": BINARY_C, "B": [[0, 1, 0, 0], *BINARY_B[1:]]}, "B[0][1]=1: output t=1 uses row 1"),
    ],
)
def test_plan_check_bad_files_exit_2_with_one_line(
    doc: Any,
    named: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    path = _write(tmp_path, "plan.json", doc)
    code, out, err = _cli(["plan", "check", path], capsys, monkeypatch)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and named in err, err
    code, out, _ = _cli(["plan", "check", path, "--json"], capsys, monkeypatch)
    assert code == 2 and named in json.loads(out)["error"]["message"]


def test_plan_check_bad_npz_and_size_limit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from dpref.cli import plan as plan_cmd

    bad = tmp_path / "bad.npz"
    bad.write_bytes(b"not a zip")
    with pytest.raises(ParameterError, match=r"not a valid \.npz"):
        plan_cmd.check_file(str(bad))
    arr = tmp_path / "nan.npz"
    C = np.eye(3)
    C[1, 0] = np.nan
    np.savez(arr, C=C, B=np.eye(3))
    with pytest.raises(ParameterError, match=r"C\[1\]\[0\]=nan"):
        plan_cmd.check_file(str(arr))
    obj = tmp_path / "obj.npz"
    np.savez(obj, C=np.array([["a"]]), B=np.eye(1))
    with pytest.raises(ParameterError, match="dtype"):
        plan_cmd.check_file(str(obj))
    import dpref.planfile.read as plan_read

    monkeypatch.setattr(plan_read, "MAX_JSON_BYTES", 100)
    with pytest.raises(ParameterError, match="above 100"):
        plan_cmd.check_file(str(EXAMPLES / "sqrt-T8.json"))
    with pytest.raises(ParameterError, match="file="):
        plan_cmd.check_file(str(tmp_path / "missing.json"))
    with pytest.raises(ParameterError, match=r"expected a \.json or \.npz"):
        plan_cmd.check_file(str(EXAMPLES.parent / "factorization.md"))


@pytest.mark.parametrize(
    ("kw", "named"),
    [
        ({"target": "window:0"}, "target="),
        ({"target": "windows:3"}, "target="),
        ({"rho": "-1"}, "rho="),
        ({"rho": "1", "scale": "2"}, "rho=1 with scale=2"),
        ({"epsilon": "1", "sigma": "2"}, "epsilon=1 with sigma=2"),
        ({"tolerance": "0"}, "tolerance="),
        ({"sigma": "nan"}, "sigma="),
        ({"epsilon": "1e4000"}, "epsilon="),
        ({"rho": "1e-4000"}, "rho="),
    ],
)
def test_plan_check_bad_options(kw: dict[str, Any], named: str) -> None:
    from dpref.cli import plan as plan_cmd

    with pytest.raises(ParameterError, match=named):
        plan_cmd.check_file(str(EXAMPLES / "binary-T4.json"), **kw)


def test_plan_check_window_target_and_scales(tmp_path: Path) -> None:
    from dpref.cli import plan as plan_cmd

    # windows of width 2 with the identity strategy; row scales 2 halve the L1 sensitivity
    T = 5
    C = [[1 if i == n else 0 for i in range(T)] for n in range(T)]
    B = [[1 if t - 2 < n <= t else 0 for n in range(T)] for t in range(T)]
    path = _write(tmp_path, "w.json", {"C": C, "B": B, "scales": [2] * T})
    doc = plan_cmd.check_file(path, target="window:2", scale="1")
    assert doc["sensitivity_l1_exact"] == "1/2" and doc["epsilon_supported_exact"] == "1/2"
    assert doc["variance"]["max_exact"] == "16"  # 2 nodes × 2·(b·s)² = 2·2·4


# ------------------------------------------------------------------- proofs
_LABELS = {
    SqrtFactorization: {
        "square root": "proven about the code",
        "columns": "proven lemma",
        "budget": "proven about the code",
        "zCDP budget": "proven about the code",
        "plan = closed forms": "checked for T ≤ 64",
    },
    BLT: {
        "valid strategy": "checked for d ≤ 3",
        "release = B(Cx + z)": "proven about the code",
        "columns": "proven lemma",
        "budget": "proven about the code",
        "plan = closed forms": "checked for T ≤ 64",
    },
}


@pytest.mark.parametrize("cls", [SqrtFactorization, BLT])
def test_proofs_hold_and_are_labelled_honestly(cls: type[Any]) -> None:
    from proofs import prove

    rows = prove(cls, 64)
    assert rows and all(r.passed for r in rows), [r.detail for r in rows if not r.passed]
    assert {r.claim: r.status for r in rows} == _LABELS[cls]
    for r in rows:
        if r.status == "proven about the code":
            assert r.evaluates and all(e.startswith("dpref.") for e in r.evaluates), r


def test_a_wrong_budget_declaration_fails_the_proof() -> None:
    from proofs import FAILED, prove

    class Overspent(SqrtFactorization):
        def budget_terms(self, ops: Any = None, **s: Any) -> list[Any]:
            terms = super().budget_terms(**s)
            return [type(t)(t.kind, 2 * t.membership, t.scale) for t in terms]

    rows = {r.claim: r for r in prove(Overspent, 4)}
    assert rows["budget"].status == FAILED


def test_item_privacy_sums_are_the_column_sums() -> None:
    m = BLT(epsilon=Fraction(7, 10), horizon=20, theta="1/2,7/8", omega="1/4,1/8")
    plan = m.plan()
    dense = dense_from_toeplitz(plan)
    sums = plan.item_privacy_sums()
    assert sums == dense.column_sums(False)  # Δ = 1; column_sums divides by the scales
    assert max(sums) == sums[0] == plan.privacy_sum() == Fraction(7, 10)
    g = SqrtFactorization(rho=Fraction(1, 2), horizon=20).plan()
    assert max(g.item_privacy_sums()) == g.item_privacy_sums()[0] == 1


def test_blt_variance_upper_bounds_the_exact_variance() -> None:
    """The frontier's BLT numbers: above the exact Fractions at every step, by at most the
    stated margin (and the float recursion itself within 1e-12 of them)."""
    m = BLT(rho=Fraction(1, 2), horizon=512)
    exact = m.variance_exact(512)
    upper = m.variance_upper(512)
    nearest = m.variance_float(512)
    for t, v in enumerate(exact):
        assert Fraction(float(upper[t])) >= v, t
        assert float(upper[t]) <= float(v) * (1 + 2 * BLT.VARIANCE_MARGIN)
        assert abs(float(nearest[t]) - float(v)) <= 1e-12 * float(v)
