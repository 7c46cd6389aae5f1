"""Decayed sums (docs/spec.md §2): what the shared contract test does not cover.

Exact plan checks for more parameters, the window covers, PolynomialSum's release
times, multi-window AllWindowSum, the irrational constants, the bicriteria sandwich,
lower bounds, structural memory bounds, bad input, the CLI and privacy audits.
"""

from __future__ import annotations

import itertools
import json
import math
import subprocess
import sys
from fractions import Fraction
from typing import Any

import mpmath
import numpy as np
import pytest
from scipy import stats

from dpref import (
    AllWindowSum,
    DprefError,
    ExponentialSum,
    PolynomialSum,
    WindowSum,
    bounded_integers,
    lower_bound,
)
from dpref.audit import audit
from dpref.dyadic import aligned_cover
from dpref.lower_bounds import (
    exponential_decay,
    packing_distance,
    polynomial_decay,
    window_decay,
)
from dpref.mechanisms.decayed import (
    _cover_scalar,
    exponential_sensitivity_bounds,
    polynomial_breakpoint,
    zeta_bounds,
)
from dpref.validation import ceil_float

EPS = Fraction(7, 10)

ALPHA = 1e-6
"""False-failure rate of the statistical test below."""
RUNS = 20_000


# ------------------------------------------------------------------ exact plans
CASES: list[Any] = [
    WindowSum(window=1, epsilon=EPS),
    WindowSum(window=2, epsilon=EPS),
    WindowSum(window=7, epsilon=EPS),
    WindowSum(window=16, epsilon=EPS),
    AllWindowSum(delta=Fraction(11, 10), epsilon=EPS),
    AllWindowSum(delta=3, window=9, epsilon=EPS),
    ExponentialSum(alpha=Fraction(1, 3), epsilon=EPS),
    ExponentialSum(alpha=Fraction(99, 100), epsilon=EPS),
    PolynomialSum(c=Fraction(11, 10), beta=Fraction(1, 3), epsilon=EPS),
    PolynomialSum(c=4, beta=Fraction(9, 10), epsilon=EPS),
    PolynomialSum(c=Fraction(11, 10), beta=Fraction(1, 3), epsilon=EPS, allocation="uniform"),
    PolynomialSum(c=4, beta=Fraction(9, 10), epsilon=EPS, allocation="uniform"),
]


@pytest.mark.parametrize("mech", CASES, ids=repr)
@pytest.mark.parametrize("horizon", [1, 2, 5, 16, 33, 100, 257])
def test_plan_exact(mech: Any, horizon: int) -> None:
    report = mech.plan(horizon).check(mech.variance_exact(horizon))
    assert report.passed, report
    assert report.privacy_sum == mech.expected_privacy_sum(horizon) <= mech.declared_epsilon
    np.testing.assert_allclose(
        mech.variance(horizon), [float(v) for v in mech.variance_exact(horizon)], rtol=1e-12
    )


@pytest.mark.parametrize("mech", CASES, ids=repr)
def test_online_batch_plan_agree_on_injected_noise(mech: Any) -> None:
    rng = np.random.default_rng(5)
    for horizon in (1, 7, 64, 129):
        x = rng.integers(0, 2, horizon).astype(float)
        z = mech.node_noise(horizon, rng)
        batch = mech.release(x, noise=z)
        np.testing.assert_allclose(batch, mech.plan(horizon).output(x, z), atol=1e-9)
        np.testing.assert_allclose(batch, mech.online(noise=z).run(x), atol=1e-9)


def test_window_sum_reaches_epsilon_once_the_top_level_is_complete() -> None:
    m = WindowSum(window=5, epsilon=EPS)  # K = 2: sizes 1, 2, 4, L = 3
    assert m.block == 4 and m.levels() == 3 and m.scale() == 3 / EPS
    assert [m.expected_privacy_sum(t) for t in (1, 2, 3, 4, 7, 100)] == [
        EPS / 3,
        EPS * 2 / 3,
        EPS * 2 / 3,
        EPS,
        EPS,
        EPS,
    ]


@pytest.mark.parametrize("window", [1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 100, 1000, 1023, 1024])
def test_window_sum_uses_floor_log2_levels_and_every_level(window: int) -> None:
    """L = ⌊log₂W⌋ + 1 levels, scale LΔ/ε, and every level is used by some window
    cover (the old top level of size 2^⌈log₂W⌉ never was, docs/spec.md §2.1)."""
    m = WindowSum(window=window, epsilon=EPS)
    K = math.floor(math.log2(window))
    assert m.cap == K and m.levels() == K + 1 and m.scale() == (K + 1) / EPS
    t = np.arange(1, window + 4 * m.block + 1, dtype=np.int64)
    from dpref.dyadic import aligned_covers, window_start0

    used = {b for b, _, _ in aligned_covers(t, window_start0(t, window))}
    assert used == set(range(K + 1))
    assert int(m.nodes(t.size).hi.size) == m.node_count(t.size)
    top = (m.nodes(t.size).hi - m.nodes(t.size).lo + 1).max()
    assert top == 1 << K <= window


def test_window_sum_noise_drops_where_w_is_not_a_power_of_two() -> None:
    """W = 3 used ⌈log₂3⌉ + 1 = 3 levels (scale 3/ε); now 2 (scale 2/ε), so the
    maximum variance drops from 2·2·9 = 36 to 2·2·4 = 16 at ε = 1; W = 1000 from 3,630
    (L = 11) to 3,000 (L = 10, 15 cover nodes)."""
    assert float(WindowSum(window=3, epsilon=1).variance(64).max()) == 16
    assert float(WindowSum(window=1000, epsilon=1).variance(5000).max()) == 3000


def _max_cover(window: int) -> int:
    """The largest cover of a window of W items, over every window (scalar greedy)."""
    K = window.bit_length() - 1
    sizes = [len(aligned_cover(1, t)) for t in range(1, window)]
    for a0 in range(1 << K):  # covers repeat with period 2^K (no node > 2^K fits)
        cover = aligned_cover(a0 + 1, a0 + window)
        assert all(hi - lo + 1 <= 1 << K for lo, hi in cover)
        sizes.append(len(cover))
    return max(sizes)


def test_cover_lemma_exhaustive() -> None:
    """Every window of W ≤ 300 items is covered by at most max(1, 2⌊log₂W⌋) aligned
    nodes (proofs/decayed.py proves it for every W), and the bound is attained — so
    it is the smallest bound of this form (2K − 1 fails)."""
    tight = []
    for window in range(1, 301):
        K = window.bit_length() - 1
        worst = _max_cover(window)
        assert worst <= max(1, 2 * K), window
        if worst == max(1, 2 * K):
            tight.append(window)
    assert set(range(8)) <= {w.bit_length() - 1 for w in tight}


@pytest.mark.parametrize("window", [1, 2, 3, 5, 8, 13, None])
def test_cover_is_the_greedy_aligned_cover(window: int | None) -> None:
    for t in range(1, 200):
        a = 1 if window is None else max(1, t - window + 1)
        ours = sorted((e - (1 << b) + 1, e) for b, e in _cover_scalar(t, window))
        assert ours == aligned_cover(a, t)


def test_window_error_does_not_grow() -> None:
    m = WindowSum(window=100, epsilon=1)
    t = np.arange(1, 5000)
    v = m.variance_at(t)
    later = m.variance_at(t + 10**6 - (10**6 % m.block))  # same phase, a million steps on
    np.testing.assert_array_equal(v[m.window :], later[m.window :])
    assert v.max() <= 2 * 2 * m.cap * float(m.scale()) ** 2


def test_polynomial_nodes_are_released_before_use() -> None:
    m = PolynomialSum(c=Fraction(3, 2), beta=Fraction(1, 3), epsilon=EPS)
    horizon = 300
    R = m.plan(horizon).R().tocoo()
    rel = m.release_times(horizon)
    assert np.all(rel[R.col] <= R.row + 1)
    assert np.all(np.diff(rel) >= 0)


def test_polynomial_sandwich_on_streams() -> None:
    m = PolynomialSum(c=2, beta=Fraction(1, 5), epsilon=1)
    x = np.random.default_rng(3).integers(0, 3, 500).astype(float)
    m3 = PolynomialSum(c=2, beta=Fraction(1, 5), epsilon=1, domain=bounded_integers(0, 2))
    f, f_step = m3.decayed_target(x), m3.target(x)
    assert np.all(f_step <= f + 1e-9) and np.all(0.8 * f <= f_step + 1e-9)
    assert m.g_step(0) == 1 and m.g_step(1) == Fraction(4, 5) ** 7  # 0.8^7 ≤ 1/4 < 0.8^6


def test_polynomial_breakpoints_exact() -> None:
    c, beta = Fraction(3, 2), Fraction(1, 3)
    r = 1 / (1 - beta)
    for j in range(60):
        n = polynomial_breakpoint(j, c, beta) + 1  # largest n with n^3 <= r^{2j}
        assert n**3 <= r ** (2 * j) < (n + 1) ** 3


# ------------------------------------------------ PolynomialSum allocations
def test_polynomial_allocations_scales() -> None:
    """Decaying (default): instance j gets λ·q_j, q_j the smallest float ≥ (1−β)^{j/3}
    (checked exactly: q_j³ ≥ (1−β)^j > q⁻³ for the float q⁻ below); uniform: one λ."""
    c, beta = Fraction(3, 2), Fraction(1, 10)
    dec = PolynomialSum(c=c, beta=beta, epsilon=EPS)
    uni = PolynomialSum(c=c, beta=beta, epsilon=EPS, allocation="uniform")
    assert dec.allocation == "decaying" and uni.allocation == "uniform"
    rho = 1 - beta
    for inst in dec.instances(2000):
        q = inst.factor
        below = Fraction(math.nextafter(float(q), 0))
        assert q**3 >= rho**inst.j > below**3 or (inst.j == 0 and q == 1)
        # λ_j: the smallest float ≥ (PΔ/ε)·q_j
        lam_j = dec.instance_scale(inst)
        assert Fraction(math.nextafter(float(lam_j), 0)) < dec.series_upper / EPS * q <= lam_j
    assert {uni.instance_scale(i) for i in uni.instances(2000)} == {uni.scale()}
    # both calibrated from their series, rounded up to a float: λ ≥ PΔ/ε, λ ≥ SΔ/ε
    for m in (dec, uni):
        assert m.scale() == Fraction(ceil_float(m.series_upper / EPS))
    scales = dec.plan(300).scale_table
    assert len(set(scales)) == len(dec.instances(300)) and list(scales) == sorted(scales)[::-1]


@pytest.mark.parametrize("allocation", ["decaying", "uniform"])
def test_polynomial_privacy_sum_tends_to_epsilon(allocation: str) -> None:
    """The exact privacy sum is ≤ ε at every T, increasing, and within 1e−6 of ε at
    T = 2^16 for β = 1/2 (the instances unused there weigh about (1−β)^{2j/3} with
    j ≈ 3·16: 2·10⁻¹⁰ for the decaying series, far less for the uniform one)."""
    m = PolynomialSum(c=3, beta=Fraction(1, 2), epsilon=EPS, allocation=allocation)
    sums = [m.expected_privacy_sum(1 << e) for e in range(0, 17)]
    assert all(a <= b for a, b in itertools.pairwise(sums))
    assert all(v is not None and v <= EPS for v in sums)
    assert EPS - sums[-1] < Fraction(1, 10**6)


def _decade_maxima(m: Any, decades: range) -> list[float]:
    """max_t Var(t) over each decade [10^e, 10^{e+1}), every t (the exact closed form)."""
    return [float(m.variance_at(np.arange(10**e, 10 ** (e + 1))).max()) for e in decades]


def test_polynomial_decaying_error_does_not_grow_uniform_does() -> None:
    """docs/decayed.md's numbers, c = 3/2, β = 1/10, ε = 1, decades 10..10^5.

    Uniform: every active instance adds a full-size node, so the decade maxima grow
    (≥ 1.5× per decade here).  Decaying: they converge (each decade adds < 1 %, the
    last < 0.3 %), and stay below the proven bound ``variance_bound()``.  The float
    closed form is checked against the exact Fractions on t ≤ 3000.
    """
    c, beta = Fraction(3, 2), Fraction(1, 10)
    dec = PolynomialSum(c=c, beta=beta, epsilon=1)
    uni = PolynomialSum(c=c, beta=beta, epsilon=1, allocation="uniform")
    for m in (dec, uni):
        np.testing.assert_allclose(
            m.variance(3000), [float(v) for v in m.variance_exact(3000)], rtol=1e-12
        )
    d, u = _decade_maxima(dec, range(1, 5)), _decade_maxima(uni, range(1, 5))
    assert all(b / a >= 1.5 for a, b in itertools.pairwise(u)), u
    assert all(1 <= b / a < 1.12 for a, b in itertools.pairwise(d)), d
    assert d[-1] / d[-2] < 1.003, d
    assert d[-1] < float(dec.variance_bound()) < 1.2 * d[-1]
    assert u[-1] > 25 * d[-1]
    with pytest.raises(DprefError, match="allocation='uniform'"):
        uni.variance_bound()


def test_polynomial_decaying_variance_matches_empirical() -> None:
    """Per-step error variance of the decaying allocation vs the exact one, with a
    power check (as test_allwindow_variance_matches_empirical: ``mean(e²)`` has standard
    error ≤ ``sqrt(5σ⁴/RUNS)``; two-sided normal critical value, Bonferroni over t).
    The instance scales differ by up to (1−β)^{−j/3}, so scaling every node by the
    instance-0 scale (the uniform draw path) would fail it."""
    m = PolynomialSum(c=2, beta=Fraction(1, 2), epsilon=1)
    T = 40
    out = m.release_many(np.zeros(T), RUNS, rng=9)
    var = m.variance(T)
    se = np.sqrt(5 * var**2 / RUNS)
    crit = stats.norm.isf(ALPHA / (2 * T))
    assert np.abs((np.mean(out**2, axis=0) - var) / se).max() < crit
    for factor in (1.1, 0.9):  # a 10 % scale error (21 % in variance) is caught
        z_bad = (np.mean((out * factor) ** 2, axis=0) - var) / se
        assert np.abs(z_bad).max() >= crit


def test_polynomial_noise_scales_match_the_plan() -> None:
    """The decaying node_noise scales each instance in place: the same numbers as the
    base path, standard Laplace draws times the per-node scales of the plan's nodes."""
    from dpref.noise import standard_laplace

    m = PolynomialSum(c=Fraction(11, 10), beta=Fraction(1, 3), epsilon=EPS)
    got = m.noise_scales(200)
    assert isinstance(got, np.ndarray) and len(set(got.tolist())) > 1
    np.testing.assert_array_equal(got, m.nodes(200).scales)
    z = m.node_noise(200, np.random.default_rng(4), runs=2)
    expected = standard_laplace(np.random.default_rng(4), (2, got.size)) * got
    np.testing.assert_array_equal(z, expected)


# ------------------------------------------------------------- AllWindowSum
def test_allwindow_many_windows_share_one_tree() -> None:
    m = AllWindowSum(delta=Fraction(3, 2), epsilon=EPS)
    x = np.random.default_rng(1).integers(0, 2, 90).astype(float)
    z = m.node_noise(90, 2)
    windows = [1, 4, 10, None]
    out = m.release(x, noise=z, windows=windows)
    assert out.shape == (90, 4)
    for k, w in enumerate(windows):
        single = AllWindowSum(delta=Fraction(3, 2), window=w, epsilon=EPS)
        np.testing.assert_allclose(out[:, k], single.release(x, noise=z), atol=1e-9)
    counter = m.online(noise=z, windows=[1, 4, 10])
    for t, v in enumerate(x):
        counter.step(v)
        got = [counter.query(w) for w in windows]
        np.testing.assert_allclose(got, out[t], atol=1e-9)
    many = m.release_many(x, 3, rng=4, windows=[2, 3])
    assert many.shape == (3, 90, 2)
    with pytest.raises(DprefError, match="window=7"):
        counter.query(7)


def test_allwindow_variance_matches_empirical() -> None:
    """Per-window error variance vs the exact one, with a power check.

    ``mean(e²)`` over RUNS runs is unbiased for σ² with standard error
    ``sqrt((κ₄ + 2σ⁴)/RUNS)``; for Laplace sums κ₄ ≤ 3σ⁴·(max share) ≤ 3σ⁴, so the
    z-score uses the conservative se ``sqrt(5σ⁴/RUNS)``.  Critical value: two-sided
    normal with a Bonferroni split of ALPHA over every (t, window) pair.
    """
    m = AllWindowSum(delta=2, epsilon=1)
    T, windows = 24, [1, 3, 8, None]
    x = np.zeros(T)
    out = m.release_many(x, RUNS, rng=8, windows=windows)
    var = m.variance_windows(T, windows)
    se = np.sqrt(5 * var**2 / RUNS)
    crit = stats.norm.isf(ALPHA / (2 * var.size))
    z = (np.mean(out**2, axis=0) - var) / se
    assert np.abs(z).max() < crit
    for factor in (1.1, 0.9):  # a 10 % scale error (21 % in variance) is caught
        z_bad = (np.mean((out * factor) ** 2, axis=0) - var) / se
        assert np.abs(z_bad).max() >= crit


def test_allwindow_spends_0_64_epsilon_at_t8() -> None:
    m = AllWindowSum(delta=Fraction(3, 2), epsilon=1)
    s = float(m.plan(8).privacy_sum())
    exact = sum(k**-1.5 for k in range(1, 5)) / float(mpmath.zeta(1.5))
    assert s == pytest.approx(exact, rel=1e-9) and 0.639 < s < 0.64


# ------------------------------------------------------------------ constants
@pytest.mark.parametrize("delta", ["1.01", "1.1", "3/2", "2", "3", "10"])
def test_zeta_bounds_bracket(delta: str) -> None:
    d = Fraction(delta)
    lo, up = zeta_bounds(d)
    mpmath.mp.dps = 50
    z = mpmath.zeta(mpmath.mpf(d.numerator) / d.denominator)
    assert lo <= Fraction(str(mpmath.nstr(z, 45))) * (1 + Fraction(1, 10**40)) and lo < up
    assert float(up) >= float(z) and (up - lo) / up < 1e-5


def test_exponential_sensitivity_values() -> None:
    lo9, up9 = exponential_sensitivity_bounds(Fraction(9, 10))
    lo99, up99 = exponential_sensitivity_bounds(Fraction(99, 100))
    # docs/decayed.md and docs/spec.md §2.3 print S(0.9) ≈ 3.3527, S(0.99) ≈ 6.3777
    assert 3.35265 < float(lo9) <= float(up9) < 3.35266
    assert 6.37767 < float(lo99) <= float(up99) < 6.37768
    brute = sum(0.9 ** (2 ** (k - 1) - 1) for k in range(1, 40))
    assert float(lo9) <= brute <= float(up9) + 1e-15


def test_exponential_scale_covers_sensitivity() -> None:
    m = ExponentialSum(alpha=Fraction(9, 10), epsilon=Fraction(1, 3))
    assert m.scale() >= m.sensitivity_bounds[1] * 3
    assert m.declared_budget() == m.epsilon


# -------------------------------------------------------------- lower bounds
def test_lower_bounds() -> None:
    assert packing_distance(1, 1000) == math.ceil(math.log(2000)) - 1 == 7
    assert packing_distance(Fraction(1, 10), 1) == 6  # ln 2 / 0.1 = 6.93
    lb = lower_bound(WindowSum(window=4, epsilon=1), 1, 1000)
    assert lb.D == 7 and lb.value == 2  # min(7, 4)/2
    assert lower_bound(window_decay(100), 1, 1000).value == Fraction(7, 2)
    e = lower_bound(exponential_decay(Fraction(1, 2)), 1, 1000)
    assert e.value == (1 - Fraction(1, 2) ** 7) / (1 - Fraction(1, 2)) / 2
    p = lower_bound(polynomial_decay(2), 1, 1000)
    assert p.value == sum(Fraction(1, k * k) for k in range(1, 8)) / 2
    p15 = lower_bound(polynomial_decay(Fraction(3, 2)), 1, 1000)
    assert float(p15.value) == pytest.approx(sum(k**-1.5 for k in range(1, 8)) / 2, rel=1e-12)
    assert float(p15.value) <= sum(k**-1.5 for k in range(1, 8)) / 2
    assert lower_bound("prefix", Fraction(1, 2), 10).value == Fraction(5, 2)  # D = ⌈2 ln 20⌉ − 1


@pytest.mark.parametrize(
    ("call", "name"),
    [
        (lambda: lower_bound(window_decay(3), 0, 10), "epsilon="),
        (lambda: lower_bound(window_decay(3), 1, 0), "q="),
        (lambda: lower_bound(3, 1, 10), "g="),
        (lambda: window_decay(0), "window="),
        (lambda: exponential_decay(1), "alpha="),
        (lambda: polynomial_decay(1), "c="),
    ],
)
def test_lower_bound_bad_input(call: Any, name: str) -> None:
    with pytest.raises(DprefError, match=name):
        call()


# ----------------------------------------------------------------- bad input
@pytest.mark.parametrize(
    ("make", "name"),
    [
        (lambda: WindowSum(window=0, epsilon=1), "window="),
        (lambda: WindowSum(window=2.5, epsilon=1), "window="),
        (lambda: WindowSum(window=True, epsilon=1), "window="),
        (lambda: AllWindowSum(delta=1, epsilon=1), "delta="),
        (lambda: AllWindowSum(delta="0.5", epsilon=1), "delta="),
        (lambda: AllWindowSum(delta="x", epsilon=1), "delta="),
        (lambda: AllWindowSum(window=0, epsilon=1), "window="),
        (lambda: ExponentialSum(alpha=0, epsilon=1), "alpha="),
        (lambda: ExponentialSum(alpha=1, epsilon=1), "alpha="),
        (lambda: ExponentialSum(alpha="1.5", epsilon=1), "alpha="),
        (lambda: PolynomialSum(c=1, beta="0.5", epsilon=1), "c="),
        (lambda: PolynomialSum(c=2, beta=0, epsilon=1), "beta="),
        (lambda: PolynomialSum(c=2, beta=1, epsilon=1), "beta="),
        (lambda: PolynomialSum(c=2, beta="0.5", epsilon=1, allocation="lagrange"), "allocation="),
        (lambda: PolynomialSum(c=2, beta="0.5", epsilon=1, allocation=None), "allocation="),
        (lambda: PolynomialSum(c=2, beta="0.5", epsilon=1, allocation=["uniform"]), "allocation="),
        (lambda: ExponentialSum(alpha="0.5", epsilon=0), "epsilon="),
        (lambda: WindowSum(window=3, epsilon=-1), "epsilon="),
        (
            lambda: ExponentialSum(
                alpha="0.5", epsilon=1, domain=bounded_integers(0, 1), noise="discrete"
            ),
            "noise=",
        ),
    ],
)
def test_bad_parameters(make: Any, name: str) -> None:
    with pytest.raises(DprefError, match=name):
        make()


def test_bad_windows_argument() -> None:
    m = AllWindowSum(epsilon=1)
    gen = np.random.default_rng(0)
    state = gen.bit_generator.state
    for bad, name in (([], "windows="), ([0], "windows"), ("3", "windows="), ([2.5], "windows")):
        with pytest.raises(DprefError, match=name):
            m.release([0, 1], rng=gen, windows=bad)
    assert gen.bit_generator.state == state


def test_bad_variance_times() -> None:
    with pytest.raises(DprefError, match="t="):
        WindowSum(window=3, epsilon=1).variance_at([0, 1])


# ------------------------------------------------------------------- memory
def test_memory_window_sum_is_o_w() -> None:
    for w in (3, 16, 100):
        m = WindowSum(window=w, epsilon=1)
        c = m.online(rng=0)
        sizes = []
        for _ in range(20 * w):
            c.step(1)
            sizes.append(c.state_size())  # type: ignore[attr-defined]
        assert max(sizes) <= 4 * w + 4 * w.bit_length()


def test_memory_exponential_is_o_log_t() -> None:
    c = ExponentialSum(alpha=Fraction(9, 10), epsilon=1).online(rng=0)
    for t in range(1, 5000):
        c.step(1)
        assert c.state_size() <= 3 * t.bit_length()  # type: ignore[attr-defined]


def test_memory_allwindow_is_o_largest_served_window() -> None:
    m = AllWindowSum(window=10, epsilon=1)
    c = m.online(rng=0, windows=[3, 20])
    for _ in range(3000):
        c.step(1)
        assert c.state_size() <= 4 * 20  # type: ignore[attr-defined]
    # only the levels a window-20 cover uses (sizes ≤ 16) and the last 20 steps are kept
    state = c._win  # type: ignore[attr-defined]
    assert state.cap == 4 and max(state.true) - min(state.true) == 19
    cp = AllWindowSum(epsilon=1).online(rng=0)
    for t in range(1, 3000):
        cp.step(0)
        assert cp.state_size() <= 2 * t.bit_length()  # type: ignore[attr-defined]


def test_memory_polynomial_is_o_largest_window_served() -> None:
    m = PolynomialSum(c=2, beta=Fraction(1, 2), epsilon=1)
    c = m.online(rng=0)
    for t in range(1, 3000):
        c.step(1)
        served = m.next_delay(t)  # the largest lag the estimates reach, plus one
        assert c.state_size() <= 10 * served + 16  # type: ignore[attr-defined]


def test_exponential_group_cache_is_bounded_by_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    """Recursion groups are cached by size: the newest entry plus at most a budget.

    An lru_cache of eight entries held up to 190 MB at T = 10⁶.
    """
    from dpref.caching import BytesCache, array_bytes
    from dpref.mechanisms.decayed import exponential

    cache = BytesCache(exponential._exp_groups, budget=1 << 16)
    monkeypatch.setattr(exponential, "_EXP_GROUPS", cache)
    m = ExponentialSum(alpha=Fraction(9, 10), epsilon=EPS)
    for horizon in (1000, 2000, 3000, 40_000):
        m.release(np.zeros(horizon), rng=0)
    newest = cache.get((40_000, 0.9))
    assert cache.get((40_000, 0.9)) is newest
    assert array_bytes(newest) > cache.budget
    assert cache.nbytes() <= cache.budget + array_bytes(newest)
    assert all(not a.flags.writeable for group in newest for a in group)


def test_polynomial_canonical_positions_sort_every_node() -> None:
    """The per-instance positions equal sorting all nodes by (release time, level,
    instance) at once, and the closed-form node count is the layout's."""
    from dpref.dyadic import layout_nodes

    for c, beta, horizon in ((2, Fraction(1, 5), 97), (Fraction(11, 10), Fraction(1, 10), 300)):
        m = PolynomialSum(c=c, beta=beta, epsilon=EPS)
        rel, lev, kk, pos = [], [], [], []
        for k, inst, p in m._instance_positions(horizon):
            _, hi, level = layout_nodes(horizon - inst.d, inst.cap)
            rel.append(hi + inst.d)
            lev.append(level)
            kk.append(np.full(hi.size, k))
            pos.append(p)
        order = np.lexsort(tuple(np.concatenate(v) for v in (kk, lev, rel)))
        expected = np.empty(order.size, np.int64)
        expected[order] = np.arange(order.size)
        np.testing.assert_array_equal(np.concatenate(pos), expected)
        assert m.node_count(horizon) == order.size == m.nodes(horizon).size
        assert all(p.dtype == np.int32 for p in pos)


def test_polynomial_release_holds_only_its_node_noise(monkeypatch: pytest.MonkeyPatch) -> None:
    """A release's memory is its node noise (8 bytes a node) plus O(T + one instance);
    nothing per node is kept afterwards.

    Sorting every node at once held five int64 arrays of all nodes (40 bytes a node,
    3 GB at T = 10⁶) and peaked at 17× the noise.  Traced with tracemalloc (numpy
    reports its buffers); the cover-slot cache is cut to its newest entry.
    """
    import tracemalloc

    from dpref.mechanisms.decayed import window

    monkeypatch.setattr(window, "_WINDOW_SLOTS", window._SlotCache(budget=0))
    m = PolynomialSum(c=Fraction(11, 10), beta=Fraction(1, 10), epsilon=EPS)
    horizon = 4000
    noise = 8 * m.node_count(horizon)  # builds the O(instances) breakpoint tables first
    tracemalloc.start()
    try:
        out = m.release(np.zeros(horizon), rng=0)
        held, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak <= 2 * noise, peak / noise
    assert held <= out.nbytes + window._WINDOW_SLOTS.nbytes() + noise // 20, held / noise


# ----------------------------------------------------------------------- CLI
@pytest.mark.parametrize(
    "args",
    [
        ["window", "--window", "3"],
        ["allwindow", "--delta", "3/2"],
        ["allwindow", "--delta", "2", "--window", "4"],
        ["exponential", "--alpha", "0.9"],
        ["polynomial", "--c", "2", "--beta", "0.2"],
        ["polynomial", "--c", "2", "--beta", "0.2", "--allocation", "uniform"],
    ],
)
def test_cli_release(args: list[str]) -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "dpref",
            "release",
            *args,
            "--epsilon",
            "1",
            "--seed",
            "3",
            "--json",
        ],
        input="1\n0\n1\n1\n0\n1\n",
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert len(out["estimates"]) == len(out["std"]) == 6
    assert all(s > 0 for s in out["std"])


def test_cli_allocation_flag_comes_from_the_signature() -> None:
    """``--allocation`` is derived from PolynomialSum's signature and numpydoc; it
    changes the noise (uniform's estimates have a different spread) and a bad value is
    one line naming the parameter."""
    help_text = subprocess.run(
        [sys.executable, "-m", "dpref", "release", "polynomial", "--help"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "--allocation" in " ".join(help_text.split())
    assert "decaying" in help_text and "uniform" in help_text
    std = {}
    for alloc in ("decaying", "uniform"):
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "dpref",
                "release",
                "polynomial",
                "--c",
                "2",
                "--beta",
                "0.5",
                "--allocation",
                alloc,
                "--epsilon",
                "1",
                "--seed",
                "1",
                "--json",
            ],
            input="1\n" * 40,
            capture_output=True,
            text=True,
            check=True,
        )
        std[alloc] = json.loads(proc.stdout)["std"]
    assert std["decaying"][-1] < std["uniform"][-1]
    bad = subprocess.run(
        [
            sys.executable,
            "-m",
            "dpref",
            "release",
            "polynomial",
            "--c",
            "2",
            "--beta",
            "0.5",
            "--allocation",
            "lagrange",
            "--epsilon",
            "1",
        ],
        input="1\n",
        capture_output=True,
        text=True,
        check=False,
    )
    assert bad.returncode == 2 and "allocation=" in bad.stderr
    assert len(bad.stderr.strip().splitlines()) == 1


def test_cli_bad_parameter_is_one_line() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "dpref", "release", "exponential", "--alpha", "2", "--epsilon", "1"],
        input="1\n",
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 2 and "alpha=" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


# -------------------------------------------------------------------- audits
_SLOW_CI = (pytest.mark.slow, pytest.mark.ci)
AUDITED = [
    pytest.param(WindowSum(window=4, epsilon=1), marks=_SLOW_CI),
    WindowSum(window=3, epsilon=1),
    pytest.param(AllWindowSum(delta=Fraction(3, 2), epsilon=1), marks=_SLOW_CI),
    pytest.param(ExponentialSum(alpha=Fraction(1, 2), epsilon=1), marks=_SLOW_CI),
    PolynomialSum(c=3, beta=Fraction(3, 4), epsilon=1),
    pytest.param(
        PolynomialSum(c=3, beta=Fraction(3, 4), epsilon=1, allocation="uniform"), marks=_SLOW_CI
    ),
]
"""~2.5 s of CPU each: the default run audits the two cases the docstring below singles
out (WindowSum W = 3, PolynomialSum decaying); the others are ``slow`` and run by CI."""


def _output_loss(mech: Any, horizon: int) -> float:
    """The exact L1 privacy loss of the outputs at T (not of the node release):
    ``max_i min{‖v‖₁ : R·diag(b)·v = Q e_i}`` (dpref.audit.pure.l1loss, certified)."""
    from dpref.audit.pure.l1loss import item_losses

    plan = mech.plan(horizon)
    M = plan.R().toarray() * plan.scales[None, :]
    losses = item_losses(M, plan.Q().toarray(), mech.sensitivity)
    return max(float(u) for u in losses.upper if u is not None)


@pytest.mark.parametrize("mech", AUDITED, ids=repr)
def test_audit_no_violation_and_tight(mech: Any) -> None:
    """2·10⁵ samples at T = 8: no violation, plan-aware bound ≥ 0.8 × the outputs' loss.

    At T = 8 the unbounded mechanisms spend less than ε (AllWindowSum δ = 3/2:
    ≈ 0.64ε) and the audit's lower bound is held to the exact loss of the outputs,
    which is at most the plan's sum.  For most cases the two are equal (every node is
    used alone somewhere); WindowSum with W = 3 is here because they used not to be: its
    top level (size 4 > W) was noised but no cover used it, so the outputs lost 2/3 of
    the plan's sum; with ⌊log₂W⌋ + 1 levels they are equal.  PolynomialSum's outputs
    are a projection of several instances' nodes: with the decaying allocation their
    loss is ≈ 0.80 of the plan's 0.98 here (uniform: equal).
    """
    r = audit(mech, horizon=8, samples=200_000, seed=11, exact=False)
    assert not r.violation and not r.findings
    plan_sum = float(mech.plan(8).privacy_sum())
    out_loss = _output_loss(mech, 8)
    assert out_loss <= plan_sum * (1 + 1e-12)
    if isinstance(mech, WindowSum) or getattr(mech, "allocation", "") == "uniform":
        assert out_loss == pytest.approx(plan_sum, rel=1e-9)
    best = max(e.epsilon_lower_bound for e in r.events if e.kind == "plan-aware")
    assert best >= 0.8 * out_loss, (best, out_loss, plan_sum)
    assert r.epsilon_lower_bound is not None and r.epsilon_lower_bound <= 1.0


def test_polynomial_series_cap_only_loosens_the_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    """Stopping the explicit sum early (small β) may only raise S: more noise, never less."""
    from dpref import rigorous  # the cap is read from the bound's home module
    from dpref.mechanisms import decayed

    c, beta = Fraction(2), Fraction(1, 100)
    decayed._polynomial_series_upper.cache_clear()
    monkeypatch.setattr(rigorous, "_SERIES_TERMS", 10**9)
    full = decayed._polynomial_series_upper(c, beta, levels=PolynomialSum.instance_levels)
    decayed._polynomial_series_upper.cache_clear()
    monkeypatch.setattr(rigorous, "_SERIES_TERMS", 100)
    capped = decayed._polynomial_series_upper(c, beta, levels=PolynomialSum.instance_levels)
    decayed._polynomial_series_upper.cache_clear()
    assert capped >= full > 1


def test_window_slot_cache_is_bounded_by_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    """Cover slots are cached by size, not count: the newest entry plus at most a budget.

    An lru_cache of four entries held ~640 MB at T = 10⁶; repeated releases at one
    horizon must still reuse the newest entry.
    """
    from dpref.mechanisms.decayed import window

    cache = window._SlotCache(budget=1 << 16)
    monkeypatch.setattr(window, "_WINDOW_SLOTS", cache)
    m = WindowSum(window=7, epsilon=EPS)
    for horizon in (1000, 2000, 3000, 40_000):
        m.release(np.zeros(horizon), rng=0)
    newest = cache.get((40_000, 7, m.cap))
    assert cache.get((40_000, 7, m.cap)) is newest
    assert sum(a.nbytes for a in newest) > cache.budget
    assert cache.nbytes() <= cache.budget + sum(a.nbytes for a in newest)
    assert all(a.dtype == np.int32 and not a.flags.writeable for a in newest)
