"""Gaussian node noise and ρ-zCDP accounting in the mechanism and plan core (docs/gaussian.md)."""

from __future__ import annotations

import dataclasses
import math
from fractions import Fraction
from typing import Any

import numpy as np
import pytest
from scipy import stats

from dpref import (
    Binary,
    DprefError,
    Honaker,
    KaryTree,
    SimpleII,
    bounded_integers,
    bounded_reals,
)
from dpref.errors import ParameterError
from dpref.mechanisms.trees import tree_objective

ALPHA = 1e-6
"""False-failure rate of every statistical test in this module."""


# ------------------------------------------------------------------ construction
def test_exactly_one_of_epsilon_and_rho() -> None:
    with pytest.raises(ParameterError, match=r"epsilon=1, rho='1/2': give exactly one"):
        Binary(epsilon=1, rho="1/2", horizon=8)
    with pytest.raises(ParameterError, match=r"epsilon=None, rho=None"):
        Binary(horizon=8)


def test_noise_must_match_the_privacy_kind() -> None:
    with pytest.raises(ParameterError, match=r"epsilon=1 with noise='gaussian'"):
        Binary(epsilon=1, horizon=8, noise="gaussian")
    with pytest.raises(ParameterError, match=r"epsilon=1 with noise='discrete_gaussian'"):
        Binary(epsilon=1, horizon=8, noise="discrete_gaussian")
    with pytest.raises(ParameterError, match=r"rho='1/2' with noise='laplace'"):
        Binary(rho="1/2", horizon=8, noise="laplace")
    with pytest.raises(ParameterError, match=r"rho=1 with noise='discrete'"):
        Binary(rho=1, horizon=8, noise="discrete")
    with pytest.raises(DprefError, match=r"noise='discrete_gaussian' needs an integer domain"):
        Binary(rho=1, horizon=8, domain=bounded_reals(0, 1), noise="discrete_gaussian")
    with pytest.raises(DprefError, match="noise="):
        Binary(rho=1, horizon=8, noise="normal")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "bad",
    [0, -1, Fraction(-1, 2), float("nan"), float("inf"), "abc", True, 2**401, Fraction(1, 2**801)],
)
def test_junk_rho_is_refused_naming_rho(bad: Any) -> None:
    with pytest.raises(DprefError, match=r"rho="):
        Binary(rho=bad, horizon=8)


def test_rho_out_of_range_for_the_domain() -> None:
    with pytest.raises(ParameterError, match=r"rho=.*domain="):
        SimpleII(rho=Fraction(1, 2**790), domain=bounded_reals(0, 2**100))


def test_attributes_and_declarations() -> None:
    m = Binary(rho="1/2", horizon=8)
    assert (m.privacy, m.noise, m.noise_family) == ("zcdp", "gaussian", "gaussian")
    assert m.epsilon is None and m.rho == Fraction(1, 2) == m.declared_rho
    assert m.design_epsilon == 1
    with pytest.raises(ParameterError, match=r"rho=1/2: a ρ-zCDP mechanism .* has no pure ε"):
        _ = m.declared_epsilon
    p = Binary(epsilon=2, horizon=8)
    assert (p.privacy, p.noise, p.design_epsilon, p.rho) == ("pure", "laplace", 2, None)
    with pytest.raises(ParameterError, match=r"epsilon=2: a pure ε-DP mechanism"):
        _ = p.declared_rho
    assert repr(m) == "Binary(rho=1/2, horizon=8)"
    dg = Binary(rho=1, horizon=8, noise="discrete_gaussian")
    assert repr(dg) == "Binary(rho=1, horizon=8, noise=discrete_gaussian)"


# ------------------------------------------------------------------ accounting
def test_node_variance_rule() -> None:
    """σ² = |w|·Δ·b/(2ρ) with b the Laplace scale at ε = 1 (Binary: σ² = LΔ²/(2ρ))."""
    m = Binary(rho=Fraction(1, 3), horizon=16, domain=bounded_integers(0, 3))
    L = 5
    assert m.sensitivity == 3
    assert m.node_variance(m._scale()) == L * 9 / (2 * Fraction(1, 3))
    plan = m.plan()
    assert plan.noise_family == "gaussian" and plan.declared_rho == Fraction(1, 3)
    assert plan.scale_table == (Fraction(L * 9 * 3, 2),)
    report = plan.check(m.variance_exact())
    assert report.passed and report.privacy_sum == Fraction(2, 3)
    assert report.noise_family == "gaussian" and report.declared_rho == Fraction(1, 3)
    assert "L2 sum 2/3 (2ρ = 2/3)" in report.describe()


def test_spec_binary_at_two_to_the_twenty() -> None:
    """docs/spec.md §6: uniform Gaussian Binary, T = 2^20, ρ = 1/2: Var(out_t) =
    21·popcount(t), maximum 420 (L = 21 levels, σ² = 21)."""
    T = 2**20
    m = Binary(rho=Fraction(1, 2), horizon=T)
    unit, counts = m.variance_counts()
    assert unit == 21
    t = np.arange(1, T + 1)
    np.testing.assert_array_equal(counts, np.bitwise_count(t))
    assert unit * int(counts.max()) == 420
    exact = m.variance_exact(2**12)
    assert exact == [21 * bin(s).count("1") for s in range(1, 2**12 + 1)]


def test_gaussian_honaker_uniform_weights() -> None:
    """Uniform levels: the same inverse-variance weights as Laplace, node variance L/(2ρ)."""
    T, rho = 16, Fraction(1, 2)
    m = Honaker(rho=rho, horizon=T)
    L = 5
    sigma2 = Fraction(L, 2 * rho)
    assert m.weights() == tuple(Honaker.uniform_weight(h) for h in range(L))
    expected = [
        sum(
            (sigma2 * Fraction(2**h, 2 ** (h + 1) - 1) for h in range(L) if t >> h & 1),
            Fraction(0),
        )
        for t in range(1, T + 1)
    ]
    assert m.variance_exact() == expected
    assert m.plan().check(expected).passed


@pytest.mark.parametrize("objective", ["mean", "max"])
def test_gaussian_level_budgets_beat_uniform_in_l2(objective: str) -> None:
    T = 2**10
    for cls, kw in ((Binary, {}), (KaryTree, {"k": 4}), (Honaker, {})):
        uni = cls(rho=Fraction(1, 2), horizon=T, **kw)
        opt = cls(rho=Fraction(1, 2), horizon=T, budget=objective, **kw)
        assert sum(opt.level_epsilons) == 1  # shares of the design ε
        assert opt.plan(T).check_privacy()[1] == 1  # L2 sum = 2ρ exactly
        var_u = uni.variance_exact()
        var_o = opt.variance_exact()
        score = (lambda v: sum(v) / len(v)) if objective == "mean" else (lambda v: max(v))
        assert score(var_o) < score(var_u)


def test_gaussian_tree_objective_is_the_l2_one() -> None:
    """The optimised Gaussian split minimises Σ S_h/q_h (uncombined): q ∝ √S_h, not ∝ S_h^{1/3}."""
    T = 2**12
    m = KaryTree(rho=Fraction(1, 2), horizon=T, k=2, budget="mean")
    from dpref.mechanisms.trees import digit_sums

    sums = digit_sums(T, 2, m.levels)
    root = [math.sqrt(s) for s in sums]
    ideal = [r / sum(root) for r in root]
    assert max(abs(float(e) - q) for e, q in zip(m.level_epsilons, ideal, strict=True)) < 1e-4
    assert m.objective("mean") == tree_objective(m.variance_of_levels(), T, 2, "mean")


def test_explicit_level_budget_in_rho() -> None:
    m = Binary(rho=Fraction(1, 2), horizon=4, budget="1/4,1/8,1/8")
    assert m.level_epsilons == (Fraction(1, 2), Fraction(1, 4), Fraction(1, 4))
    assert m.extra_params() == {"budget": "1/4,1/8,1/8"}
    assert m.plan().check(m.variance_exact()).passed
    with pytest.raises(ParameterError, match=r"not rho=1/2"):
        Binary(rho=Fraction(1, 2), horizon=4, budget="1/4,1/4,1/4")


# ------------------------------------------------------------------ plans
def test_plan_refuses_gaussian_without_rho_and_discrete_weights() -> None:
    plan = Binary(rho=1, horizon=4).plan()
    with pytest.raises(ParameterError, match="declared_rho=None"):
        dataclasses.replace(plan, declared_rho=None)
    with pytest.raises(ParameterError, match=r"noise='discrete_gaussian'.*node weight 1/2"):
        dataclasses.replace(plan, weight_table=(Fraction(1, 2),), noise_kind="discrete_gaussian")
    with pytest.raises(ParameterError, match="per_node_rho"):
        plan.per_node_epsilon()
    assert plan.per_node_rho()[:2] == [Fraction(1, 3), Fraction(1, 3)]


def test_plan_l2_sum_with_decay_squares_the_weights() -> None:
    """γ < 1: item i's term from node n is 2ρ f_n γ^{2(hi_n − i)}."""
    plan = Binary(rho=Fraction(1, 2), horizon=4).plan()
    decayed = dataclasses.replace(plan, base=Fraction(1, 2), expected_privacy_sum=None)
    sums = decayed.item_privacy_sums()
    # item 1 lies in [1,1], [1,2], [1,4]: each costs 2ρ·(1/3) at its own end
    third = Fraction(1, 3)
    assert sums[0] == third * (1 + Fraction(1, 4) + Fraction(1, 4) ** 3)


# ------------------------------------------------------------------ noise
def test_gaussian_release_variance_and_power() -> None:
    """Empirical per-step variance of Gaussian Binary matches the exact one: a chi-square
    test on (n−1)s²/σ² at ALPHA (two-sided), and σ² off by 10 % fails."""
    m = Binary(rho=Fraction(1, 2), horizon=8)
    runs = 20_000
    out = m.release_many(np.zeros(8), runs=runs, rng=31)
    var = m.variance()
    chi2 = stats.chi2(runs - 1)
    lo, hi = chi2.ppf(ALPHA / 2), chi2.isf(ALPHA / 2)
    for t in (0, 2, 6, 7):
        s2 = float(np.var(out[:, t], ddof=1))
        assert lo < (runs - 1) * s2 / var[t] < hi
        for wrong in (var[t] * 1.1, var[t] * 0.9):
            assert not lo < (runs - 1) * s2 / wrong < hi


def test_discrete_gaussian_mechanism_integers_and_online() -> None:
    m = KaryTree(rho=Fraction(1, 2), horizon=16, k=3, noise="discrete_gaussian")
    out = m.release(np.ones(16), rng=3)
    assert np.all(out == np.round(out))
    np.testing.assert_array_equal(out, m.online(rng=3).run(np.ones(16)))
    var = m.variance(16)
    assert np.all(var > 0) and np.all(var <= np.array([float(v) for v in m.variance_exact(16)]))


def test_gaussian_online_equals_batch_with_the_same_seed() -> None:
    for m in (
        Binary(rho=Fraction(1, 3), horizon=37),
        Honaker(rho=Fraction(1, 3), horizon=37, budget="mean"),
        KaryTree(rho=Fraction(1, 3), horizon=37, k=3, combine=True),
    ):
        x = np.arange(37) % 2
        # the same draws; only the float summation order differs
        np.testing.assert_allclose(m.release(x, rng=9), m.online(rng=9).run(x), rtol=1e-12)


# ------------------------------------------------------------------ docs
# ------------------------------------------------------------------ cli and audits
def test_cli_release_with_rho(tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    import json

    from dpref.cli import main

    stream = tmp_path / "s.txt"
    stream.write_text("1\n0\n1\n1\n")
    assert (
        main(["release", "binary", "--rho", "1/2", "--seed", "1", "--input", str(stream), "--json"])
        == 0
    )
    out = json.loads(capsys.readouterr().out)
    assert (out["privacy"], out["rho"], out["epsilon"], out["noise"]) == (
        "zcdp",
        "1/2",
        None,
        "gaussian",
    )
    assert out["std"] == pytest.approx(
        [math.sqrt(3.0), math.sqrt(3.0), math.sqrt(6.0), math.sqrt(3.0)]
    )
    argv = [
        "release",
        "binary",
        "--rho",
        "1/2",
        "--noise",
        "discrete_gaussian",
        "--input",
        str(stream),
    ]
    assert main([*argv, "--seed", "2"]) == 0
    values = [float(v) for v in capsys.readouterr().out.split()]
    assert all(v == round(v) for v in values)
    for bad in (
        ["--rho", "0"],
        ["--rho", "1/2", "--epsilon", "1"],
        [],
        ["--epsilon", "1", "--noise", "gaussian"],
        ["--rho", "nan"],
    ):
        code = main(["release", "binary", *bad, "--input", str(stream)])
        err = capsys.readouterr().err
        assert code == 2 and err.count("\n") == 1 and ("rho=" in err or "epsilon=" in err), err


def test_audits_refuse_zcdp_mechanisms(capsys: pytest.CaptureFixture[str]) -> None:
    """The pure-ε tools refuse a Gaussian mechanism; the sampled audit takes it in its
    approximate-DP view (tests/test_audit_gdp.py) and refuses it only with privacy='pure'."""
    from dpref.audit import audit, exact_audit, exact_loss, mechanism_target
    from dpref.cli import main

    m = Binary(rho=Fraction(1, 2), horizon=4)
    why = "the pure-ε audit does not apply to Gaussian noise"
    for call in (
        lambda: audit(m, horizon=4, samples=200, privacy="pure", epsilon=1),
        lambda: audit(Binary(epsilon=1, horizon=4), horizon=4, samples=200, reference=m, epsilon=1),
        lambda: exact_loss(m, 4),
    ):
        with pytest.raises(ParameterError, match=why):
            call()
    # the exact audit of noise-injectable targets computes their exact μ instead
    # (tests/test_audit_exact_gaussian.py)
    assert exact_audit(m, 4, rho=Fraction(1, 2)).law == "normal"
    assert mechanism_target(m)(np.zeros(4), np.random.default_rng(0)).shape == (4,)
    # (dpref conform takes Gaussian references: tests/test_conform_gaussian.py)
    assert main(["audit", "binary", "--rho", "1/2", "--horizon", "4", "--privacy", "pure"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--rho=1/2" in err
