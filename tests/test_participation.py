"""(k, b)-participation and spread-change sensitivity (dpref.strategy.participation) and the
factorization mechanisms calibrated with it (issue 26, item 2)."""

from __future__ import annotations

import itertools
import json
import math
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from dpref import BLT, Binary, SqrtFactorization
from dpref.cli.plan import check_file
from dpref.errors import DprefError, EnumerationBudgetError, ParameterError
from dpref.mechanisms.factorization.participation import (
    PARTICIPATION_EXACT_BITS,
    mechanism_participation,
)
from dpref.mechanisms.factorization.sqrt import sqrt_coefficients
from dpref.strategy.participation import (
    LABEL_ENUMERATED,
    LABEL_TOEPLITZ_L1,
    LABEL_TOEPLITZ_L2,
    dense_participation,
    dense_spread,
    toeplitz_participation,
    toeplitz_spread,
)


def brute(C: list[list[Fraction]], k: int, b: int, norm: str) -> Fraction:
    """``max ‖C u‖`` over every admissible pattern and sign vector, by definition."""
    T = len(C[0])
    best = Fraction(0)
    for m in range(1, k + 1):
        for pat in itertools.combinations(range(T), m):
            if any(pat[i + 1] - pat[i] < b for i in range(m - 1)):
                continue
            for signs in itertools.product((1, -1), repeat=m):
                v = [sum(s * row[i] for s, i in zip(signs, pat, strict=True)) for row in C]
                val = sum(x * x for x in v) if norm == "l2" else sum(abs(x) for x in v)
                best = max(best, val)
    return best


def toeplitz_dense(c: list[Fraction]) -> list[list[Fraction]]:
    T = len(c)
    return [[c[n - i] if i <= n else Fraction(0) for i in range(T)] for n in range(T)]


def pattern_norm_float(c: np.ndarray, pattern: tuple[int, ...]) -> float:
    """``‖C Σ_p e_p‖²`` for float Toeplitz coefficients, O(kT), summed by math.fsum."""
    v = np.zeros(c.size)
    for p in pattern:
        v[p:] += c[: c.size - p]
    return math.fsum(v * v)


# ----------------------------------------------------------- the mathematics
def test_dense_enumeration_equals_brute_force_and_the_bound_dominates() -> None:
    rng = np.random.default_rng(7)
    for _ in range(12):
        T, k, b = (int(v) for v in (rng.integers(2, 8), rng.integers(1, 4), rng.integers(1, 4)))
        C = [
            [Fraction(int(rng.integers(-3, 4)), int(rng.integers(1, 4))) for _ in range(T)]
            for _ in range(T)
        ]
        for norm in ("l1", "l2"):
            want = brute(C, k, b, norm)
            got = dense_participation(C, participations=k, min_separation=b, norm=norm)
            assert (got.value, got.exact, got.label) == (want, True, LABEL_ENUMERATED)
            bound = dense_participation(
                C, participations=k, min_separation=b, norm=norm, method="bound"
            )
            assert not bound.exact and bound.label.startswith("upper bound")
            assert bound.value >= want


def test_signed_toeplitz_falls_back_to_enumeration_or_a_bound() -> None:
    c = [Fraction(1), Fraction(-1, 2), Fraction(3, 4), Fraction(-1, 4), Fraction(1, 8)]
    for norm in ("l1", "l2"):
        got = toeplitz_participation(c, participations=2, min_separation=2, norm=norm)
        assert got.exact and got.value == brute(toeplitz_dense(c), 2, 2, norm)
    long = [Fraction((-1) ** n, n + 1) for n in range(300)]  # signed: no closed form
    got = toeplitz_participation(long, participations=3, min_separation=50)
    assert not got.exact and got.label.startswith("upper bound (Toeplitz")
    # the bound is at least the earliest pattern's value (a feasible point)
    floats = np.array([float(v) for v in long])
    assert float(got.value) >= pattern_norm_float(floats, (0, 50, 100)) * (1 - 1e-12)


@pytest.mark.parametrize(("T", "k", "b"), [(9, 3, 2), (10, 2, 4), (7, 3, 1), (7, 5, 3)])
def test_closed_form_equals_brute_force_for_sqrt_and_blt(T: int, k: int, b: int) -> None:
    seqs = {
        "sqrt": sqrt_coefficients(T),
        "blt": BLT(rho=1, horizon=T, theta="1/2,7/8", omega="1/4,1/8").strategy_exact(T),
    }
    for seq in seqs.values():
        C = toeplitz_dense(seq.fractions())
        for norm, label in (("l1", LABEL_TOEPLITZ_L1), ("l2", LABEL_TOEPLITZ_L2)):
            got = toeplitz_participation(seq, participations=k, min_separation=b, norm=norm)
            assert (got.value, got.exact, got.label) == (brute(C, k, b, norm), True, label)
            m = min(k, (T - 1) // b + 1)
            assert got.pattern == tuple(a * b for a in range(m))


def test_the_closed_form_needs_its_hypothesis() -> None:
    """An increasing column: the earliest pattern is not the maximiser (so the hypothesis
    check is what makes the closed form exact), and enumeration finds the right one."""
    c = [Fraction(1), Fraction(0), Fraction(0), Fraction(1)]  # non-negative, not monotone
    C = toeplitz_dense(c)
    got = toeplitz_participation(c, participations=2, min_separation=2)
    assert got.label == LABEL_ENUMERATED and got.value == brute(C, 2, 2, "l2") == 5
    earliest = sum(sum(row[i] for i in (0, 2)) ** 2 for row in C)
    assert (earliest, got.pattern) == (3, (0, 3))


def test_more_participations_cost_more_but_at_most_k_squared() -> None:
    """The under-count bug class: k participations are not single participation."""
    s = sqrt_coefficients(256)
    one = toeplitz_participation(s, participations=1).value
    assert one == s.square_sum()
    four = toeplitz_participation(s, participations=4, min_separation=16).value
    assert one < four <= 16 * one
    assert four > 4 * one  # overlapping columns add up: more than k·S₂


def test_spread_bounds_bracket_the_largest_singular_value() -> None:
    T = 48
    s = sqrt_coefficients(T)
    C = toeplitz_dense(s.fractions())
    sigma2 = float(np.linalg.svd(np.array(C, dtype=float), compute_uv=False)[0]) ** 2
    r = toeplitz_spread(s, norm="l2")
    assert r.lower is not None and float(r.lower) <= sigma2 * (1 + 1e-12)
    assert sigma2 <= float(r.value) * (1 + 1e-12)
    assert r.value == dense_spread(C, norm="l2").value
    l1 = toeplitz_spread(s, norm="l1")
    assert l1.exact and l1.value == s.abs_sum() == dense_spread(C, norm="l1").value


def test_spread_change_over_tree_leaves_adds_up_in_the_parents() -> None:
    """A binary tree: one item's column has L2² = levels, but a unit-L2 change spread over
    the leaves under a parent adds up there — the spread relation must see it."""
    plan = Binary(epsilon=1, horizon=16).plan(16)
    A = plan.A().toarray()
    single = max(float(np.sum(A[:, i] ** 2)) for i in range(16))
    r = dense_spread(A, norm="l2")
    assert r.lower is not None and float(r.lower) > single
    u = np.zeros(16)
    u[:8] = 1 / math.sqrt(8)  # the 8 leaves under one node
    assert float(np.sum((A @ u) ** 2)) <= float(r.value)


def test_the_exact_maximisation_refuses_above_its_limits() -> None:
    C = np.eye(200)
    with pytest.raises(EnumerationBudgetError, match="participations=3"):
        dense_participation(C, participations=3, min_separation=1, method="exact")
    auto = dense_participation(C, participations=3, min_separation=1)
    assert not auto.exact and auto.value >= 3


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"participations": 0}, "participations=0"),
        ({"participations": 1.5}, "participations=1.5"),
        ({"participations": True}, "participations=True"),
        ({"min_separation": 0}, "min_separation=0"),
        ({"min_separation": "4"}, "min_separation='4'"),
    ],
)
def test_bad_parameters_name_themselves(kwargs: dict[str, object], name: str) -> None:
    with pytest.raises(DprefError, match=name.replace("(", r"\(")):
        SqrtFactorization(rho=1, horizon=8, **kwargs)  # type: ignore[arg-type]
    with pytest.raises(DprefError, match=name):
        BLT(rho=1, horizon=8, **kwargs)  # type: ignore[arg-type]
    with pytest.raises((ParameterError, DprefError)):
        toeplitz_participation([1], **kwargs)  # type: ignore[arg-type]


# ------------------------------------------------------------ the mechanisms
@pytest.mark.parametrize("cls", [SqrtFactorization, BLT])
def test_mechanisms_calibrate_with_the_one_participation_number(cls: type) -> None:
    T, k, b = 64, 3, 8
    m = cls(rho=Fraction(1, 2), horizon=T, participations=k, min_separation=b)
    p2 = mechanism_participation(m, T, "l2")
    assert p2.exact and p2.label == LABEL_TOEPLITZ_L2 and p2.pattern == (0, 8, 16)
    exact = toeplitz_participation(m.strategy_exact(T), participations=k, min_separation=b)
    assert p2.value == exact.value
    assert m.gaussian_variance(T) == p2.value / (2 * Fraction(1, 2))
    assert m.node_scale() == m.gaussian_variance(T)
    (term,) = m.gaussian_terms()  # the declared L2 sum: P₂Δ²/σ² = 2ρ
    assert term.membership == p2.value and term.membership / term.scale == 1
    plan = m.plan()
    report = plan.check()
    assert report.passed
    # the plan's single-column privacy sum is 2ρ·S₂/P₂: the rest is the other participations
    assert plan.privacy_sum() == m.s2(T) / p2.value
    assert "participations=3, min_separation=8" in repr(m)
    single = cls(rho=Fraction(1, 2), horizon=T)
    assert single.node_scale() == single.s2(T) and single.node_scale() < m.node_scale()
    e = cls(epsilon=1, horizon=T, participations=k, min_separation=b)
    assert e.node_scale() == sum(e.s1(T - p) for p in (0, 8, 16))
    with pytest.raises(ParameterError, match="participations=3"):  # no symbolic (k, b)
        e.laplace_scale(T, ops=object())


def test_participation_work_is_bounded_by_the_horizon() -> None:
    with pytest.raises(ParameterError, match=r"participations=2.*horizon=4194304"):
        SqrtFactorization(rho=1, horizon=2**22, participations=2, min_separation=8)
    # one participation fits: nothing to compute, accepted
    SqrtFactorization(rho=1, horizon=2**22, participations=2, min_separation=2**22)


def test_one_participation_is_single_participation() -> None:
    m = SqrtFactorization(rho=1, horizon=32, participations=1, min_separation=5)
    assert m.node_scale() == SqrtFactorization(rho=1, horizon=32).node_scale()
    far = SqrtFactorization(rho=1, horizon=32, participations=4, min_separation=32)
    assert far.node_scale() == m.node_scale()  # only one participation fits in T = 32


def test_sqrt_participation_at_t1024_equals_the_pattern_norm() -> None:
    """Cheap companion of the T = 2¹⁶ check: exact, and equal to ‖C(e₀+e₁₆+e₃₂+e₄₈)‖²."""
    T = 1024
    m = SqrtFactorization(rho=Fraction(1, 2), horizon=T, participations=4, min_separation=16)
    got = mechanism_participation(m, T, "l2")
    assert got.exact
    c = sqrt_coefficients(T).fractions()
    v = [sum((c[n - p] for p in (0, 16, 32, 48) if p <= n), Fraction(0)) for n in range(T)]
    assert got.value == sum(x * x for x in v)


def test_above_the_exact_size_a_rigorous_bound_within_1e_9() -> None:
    T = PARTICIPATION_EXACT_BITS // 3 + 1000  # sqrt's base 4 has 3 bits: the float path
    m = SqrtFactorization(rho=1, horizon=T, participations=3, min_separation=100)
    got = mechanism_participation(m, T, "l2")
    assert not got.exact and got.label.startswith("upper bound (closed form")
    ref = pattern_norm_float(m.strategy_float(T), (0, 100, 200))
    assert 0 <= float(got.value) / ref - 1 < 1e-9


@pytest.mark.slow
def test_sqrt_k4_b256_at_t65536_equals_the_earliest_pattern_norm() -> None:
    """issue 26: (k = 4, b = 256)-participation L2² of sqrt at T = 2¹⁶ equals
    ‖C(e₀ + e₂₅₆ + e₅₁₂ + e₇₆₈)‖² (here: the mechanism's rigorous value is within 10⁻⁹
    above the float64 evaluation, and the closed form on the float coefficients is that
    evaluation's exact value)."""
    T = 2**16
    m = SqrtFactorization(rho=Fraction(1, 2), horizon=T, participations=4, min_separation=256)
    got = mechanism_participation(m, T, "l2")
    assert got.pattern == (0, 256, 512, 768)
    c = m.strategy_float(T)
    ref = pattern_norm_float(c, (0, 256, 512, 768))
    assert 0 <= float(got.value) / ref - 1 < 1e-9
    closed = toeplitz_participation(c, participations=4, min_separation=256)
    assert closed.exact and abs(float(closed.value) / ref - 1) < 1e-13


# --------------------------------------------------------------------- CLI
def test_plan_check_uses_the_participation_sensitivity(tmp_path: Path) -> None:
    T = 16
    c = sqrt_coefficients(T).fractions()
    C = [[str(c[n - i]) if i <= n else "0" for i in range(T)] for n in range(T)]
    path = tmp_path / "sqrt16.json"
    path.write_text(json.dumps({"C": C, "B": C}))
    rep = check_file(str(path), rho="1/2", participations=3, min_separation=4)
    m = SqrtFactorization(rho=Fraction(1, 2), horizon=T, participations=3, min_separation=4)
    assert rep["sensitivity_l2_squared_exact"] == str(mechanism_participation(m, T).value)
    assert rep["sigma_squared_needed_exact"] == str(m.gaussian_variance(T))
    part = rep["participation"]
    assert part["structure"] == "lower-triangular Toeplitz"
    assert part["participation"]["l2"]["label"] == LABEL_TOEPLITZ_L2
    assert part["spread"]["l1"]["value"] == str(sum(c, Fraction(0)))
    plain = check_file(str(path), rho="1/2")
    assert "participation" not in plain
    assert Fraction(plain["sensitivity_l2_squared_exact"]) < Fraction(
        rep["sensitivity_l2_squared_exact"]
    )


def test_plan_check_dense_with_row_scales(tmp_path: Path) -> None:
    """A dense, non-Toeplitz plan with per-row noise scales: the sensitivity is that of
    diag(1/scales)·C, enumerated exactly; float mode gives the same numbers, rounded up."""
    C = [[1, 0, 0, 0], [1, 1, 0, 0], [0, 0, 1, 0], [1, 1, 1, 1]]  # the binary tree at T = 4
    B = [[1, 0, 0, 0], [0, 1, 0, 0], [0, 1, 1, 0], [0, 0, 0, 1]]
    scales = ["1", "2", "1", "3"]
    path = tmp_path / "tree.json"
    path.write_text(json.dumps({"C": C, "B": B, "scales": scales}))
    rep = check_file(str(path), epsilon="1", participations=2, min_separation=2)
    scaled = [[Fraction(v) / Fraction(s) for v in row] for row, s in zip(C, scales, strict=True)]
    for norm, key in (("l1", "sensitivity_l1_exact"), ("l2", "sensitivity_l2_squared_exact")):
        want = brute(scaled, 2, 2, norm)
        assert rep[key] == str(want)
        assert rep["participation"]["participation"][norm]["label"] == LABEL_ENUMERATED
    assert rep["scale_needed_exact"] == rep["sensitivity_l1_exact"]
    fpath = tmp_path / "tree-float.json"
    fpath.write_text(json.dumps({"C": C, "B": B, "scales": [1.0, 2.0, 1.0, 3.0]}))
    frep = check_file(str(fpath), epsilon="1", participations=2, min_separation=2)
    assert frep["sensitivity_l2_squared"] >= float(brute(scaled, 2, 2, "l2"))
    assert frep["sensitivity_l2_squared"] == pytest.approx(float(brute(scaled, 2, 2, "l2")))


@pytest.mark.parametrize(("k", "b"), [(9, 7), (20, 3), (100, 1), (12, 30)])
def test_many_participations_by_the_difference_of_cumulative_sums(k: int, b: int) -> None:
    """m > 8 takes the O(T) recurrence; it must equal the definition ‖C Σ_a e_{ab}‖²."""
    T = 200
    s = sqrt_coefficients(T)
    c = s.fractions()
    pat = [a * b for a in range(k) if a * b < T]
    v = [sum((c[n - p] for p in pat if p <= n), Fraction(0)) for n in range(T)]
    got = toeplitz_participation(s, participations=k, min_separation=b)
    assert got.exact and got.value == sum(x * x for x in v)
    l1 = toeplitz_participation(s, participations=k, min_separation=b, norm="l1")
    assert l1.value == sum(v, Fraction(0))


def test_coefficient_form_gives_the_dense_form_fields() -> None:
    """The hook for coefficient plan files: the same fields as the dense Toeplitz matrix."""
    from dpref.strategy.participation_report import coefficient_participation, plan_participation

    T = 12
    c = sqrt_coefficients(T).fractions()
    dense = [[str(c[n - i]) if i <= n else "0" for i in range(T)] for n in range(T)]
    kw = {"participations": 3, "min_separation": 4, "delta": Fraction(3)}
    a = coefficient_participation([str(v) for v in c], **kw)  # type: ignore[arg-type]
    b = plan_participation(dense, None, **kw)  # type: ignore[arg-type]
    assert a == b and a["core"][1] == 9 * brute(toeplitz_dense(c), 3, 4, "l2")


@pytest.mark.parametrize(
    "bad", [np.zeros(3), [], "ab", [[]], 5, [[1, 2], [1]], [[float("nan")]], [["x"]]]
)
def test_bad_matrices_are_dpref_errors(bad: object) -> None:
    with pytest.raises(DprefError, match="matrix"):
        dense_participation(bad)
    with pytest.raises(DprefError, match="matrix"):
        dense_spread(bad)


def test_the_float_bound_assumes_sqrts_float_coefficients_are_the_sequential_cumprod() -> None:
    """P₂ above the exact size bounds the float coefficients' error by 2n roundings: true of
    the sequential cumulative product of the rounded ratios (2k−1)/(2k) — pinned here, so a
    change of ``strategy_float`` fails this test instead of silently voiding the bound."""
    T = 4096
    k = np.arange(1, T, dtype=np.float64)
    want = np.concatenate([[1.0], np.cumprod((2 * k - 1) / (2 * k))])
    got = SqrtFactorization(rho=1, horizon=T).strategy_float(T)
    assert np.array_equal(got, want)


@pytest.mark.parametrize("form", ["toeplitz", "dense"])
def test_plan_check_participation_of_a_coefficient_file(tmp_path: Path, form: str) -> None:
    """``plan check --participations 2 --min-separation 4`` of sqrt at T = 8, given by its
    Toeplitz coefficients or densely: L2² is ‖C(e₀ + e₄)‖² exactly (the earliest pattern),
    brute force agrees, and the noise needed is for that relation."""
    c = [Fraction(math.comb(2 * k, k), 4**k) for k in range(8)]  # (1 − x)^(−1/2)
    C = [[c[n - i] if i <= n else Fraction(0) for i in range(8)] for n in range(8)]
    doc: dict[str, object]
    if form == "toeplitz":
        doc = {"kind": "toeplitz", "C": [str(x) for x in c], "B": [str(x) for x in c]}
    else:
        B = [[str(c[t - n]) if n <= t else "0" for n in range(8)] for t in range(8)]
        doc = {"C": [[str(x) for x in row] for row in C], "B": B}
    path = tmp_path / "sqrt8.json"
    path.write_text(json.dumps(doc))
    rep = check_file(str(path), rho="1/2", participations=2, min_separation=4)
    want = sum((C[n][0] + C[n][4]) ** 2 for n in range(8))
    assert want == brute(C, 2, 4, "l2")
    assert Fraction(rep["sensitivity_l2_squared_exact"]) == want
    assert rep["participation"]["participation"]["l2"]["value"] == str(want)
    assert rep["sigma_needed"] == pytest.approx(math.sqrt(want / 1))  # σ² = L2²/(2ρ), ρ = 1/2
