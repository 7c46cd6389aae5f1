"""Issue 26 item 4: ``variance(T)`` of every mechanism is the exact per-step variance, each
float the nearest to the exact Fraction, computed without a per-step Fraction where the class
has a vectorised form (:mod:`dpref.mechanisms.variance_floats`), up to ``MAX_VARIANCE_STEPS``.

The default-run tests compare the fast paths with the per-step Fractions at small T; the
``slow`` ones run T = 2²⁰."""

from __future__ import annotations

import random
from fractions import Fraction

import numpy as np
import pytest

from dpref.mechanisms import MECHANISMS
from dpref.mechanisms.variance_floats import counts_to_floats


def _built(name: str, privacy: str, horizon: int) -> object:
    cls = MECHANISMS[name]
    kw = cls.examples[0].kwargs(cls, horizon)
    kw["horizon"] = horizon
    budget = Fraction(1, 3) if privacy == "epsilon" else Fraction(2, 7)
    return cls(**{privacy: budget}, **kw)


@pytest.mark.parametrize("name", sorted(MECHANISMS))
@pytest.mark.parametrize("privacy", ["epsilon", "rho"])
def test_variance_is_the_nearest_float_of_the_exact_value(name: str, privacy: str) -> None:
    """Every registered mechanism, both budgets (where offered), T = 150: ``variance(T)``
    equals ``float`` of each exact Fraction, bit for bit, where the class has
    ``variance_counts`` (:func:`counts_to_floats`) or is the square root (fixed-point sums);
    BLT's float decoder (doubling) within 10⁻¹³ (measured ≤ 1.4·10⁻¹⁴), the decayed sums'
    vectorised float formulas (Laplace) within 10⁻¹⁴ (measured ≤ 3.4·10⁻¹⁶)."""
    T = 150
    try:
        m = _built(name, privacy, T)
    except ValueError:
        pytest.skip(f"{name} takes no {privacy}")
    fast = m.variance(T)  # type: ignore[attr-defined]
    exact = [float(v) for v in m.variance_exact(T)]  # type: ignore[attr-defined]
    if m.variance_counts(T) is not None or name == "sqrt":  # type: ignore[attr-defined]
        assert fast.tolist() == exact
    elif name == "blt":  # float decoder by doubling + blocked sums (measured ≤ 1.4e−14)
        np.testing.assert_allclose(fast, exact, rtol=1e-13, atol=0)
    else:
        np.testing.assert_allclose(fast, exact, rtol=1e-14, atol=0)


def test_counts_to_floats_rounds_like_fraction_in_every_path() -> None:
    """The int64 path, the one-group table and the several-group double-double sum (units
    with 100-bit denominators, 40 rows of 0..3 counts: three groups; exact ties) all give
    ``float(Fraction)``."""
    rng = np.random.default_rng(5)
    gen = random.Random(5)
    T = 300
    cases = [
        (Fraction(3, 8), rng.integers(0, 1000, T)),  # int64 path
        (tuple(Fraction(gen.randrange(1, 99), 7) for _ in range(3)), rng.integers(0, 5, (3, T))),
        (
            tuple(Fraction(gen.getrandbits(120) + 1, gen.getrandbits(100) + 1) for _ in range(40)),
            rng.integers(0, 4, (40, T)),
        ),
        (Fraction(2**200 + 1, 3**90), rng.integers(0, 2**40, T)),  # one big row
        # exact ties: 2^60 + 64k lies halfway between floats for odd k/2 (ulp 256): two
        # groups of 0/1 rows, so the double-double path must send them to the exact sums
        (
            (Fraction(2**60), *[Fraction(64)] * 19),
            np.vstack([np.ones(T), rng.integers(0, 2, (19, T))]),
        ),
    ]
    for units, counts in cases:
        us = (units,) if isinstance(units, Fraction) else units
        n = np.asarray(counts).reshape(len(us), T)
        want = [
            float(sum((u * int(c) for u, c in zip(us, col, strict=True)), Fraction(0)))
            for col in n.T
        ]
        assert counts_to_floats(units, counts).tolist() == want


# ------------------------------------------------------------------ the square root's S₂
def test_sqrt_s2_above_the_exact_range_is_a_tight_upper_bound() -> None:
    """Cheap companion of the T = 2²⁰ runs: at T = 2¹⁴ + 1000 (above ``SQRT_EXACT_S2``; the
    proofs check 2¹⁵) the bound
    the release uses lies above the exact binary-splitting sum by less than 10⁻¹⁸ relative
    (it was 1.1–1.6 ppm high) and within 10⁻⁹ of ``math.fsum`` of ``c_k²`` from ``lgamma``
    (a check that shares nothing with the code's recursion; lgamma's absolute error near
    10⁻¹¹ limits it); S₁ just above ``SQRT_EXACT_S1`` likewise."""
    import math

    from scipy.special import gammaln

    from dpref.mechanisms.factorization import sqrt as sq

    T = sq.SQRT_EXACT_S2 + 1000
    assert T <= sq.SQRT_FIXED_STEPS
    exact = sq._sqrt_s2_exact(T)
    bound = sq.sqrt_s2(T)
    assert exact <= bound <= exact * (1 + Fraction(1, 10**18))
    k = np.arange(T, dtype=np.float64)
    log_c = gammaln(2 * k + 1) - 2 * gammaln(k + 1) - k * math.log(4)
    assert abs(float(bound) / math.fsum(np.exp(2 * log_c).tolist()) - 1) < 1e-9
    T1 = sq.SQRT_EXACT_S1 + 1
    n = T1 - 1
    s1 = (2 * n + 1) * math.exp(math.lgamma(2 * n + 1) - 2 * math.lgamma(n + 1) - n * math.log(4))
    assert abs(float(sq.sqrt_s1(T1)) / s1 - 1) < 1e-9


def test_sqrt_release_and_declaration_read_the_same_s2() -> None:
    """One source of truth above the exact range: the node variance the release draws with
    and the declared Gaussian term are both ``sqrt_s2(T)·Δ²/(2ρ)``."""
    from dpref.mechanisms import SqrtFactorization
    from dpref.mechanisms.factorization.sqrt import sqrt_s2

    T = 2**15
    m = SqrtFactorization(rho=Fraction(1, 2), horizon=T)
    assert m.node_scale() == sqrt_s2(T) == m.gaussian_terms()[0].membership
    assert m.gaussian_terms()[0].scale == m.node_scale()


def test_sqrt_variance_beyond_the_plan_range() -> None:
    """``variance`` above ``max_plan_steps`` (it raised HorizonError there): at T = 2¹³ it
    is increasing, starts at the node variance, and is within 10⁻¹² of ``variance_upper``
    (which is ≥ the exact value) and not above it."""
    from dpref.mechanisms import SqrtFactorization

    T = 2**13
    m = SqrtFactorization(rho=Fraction(1, 2), horizon=T)
    assert T > m.max_plan_steps
    v = m.variance(T)
    upper = m.variance_upper(T)
    assert v[0] == float(m.unit_variance())
    assert np.all(np.diff(v) > 0)
    assert np.all(v <= upper)
    np.testing.assert_allclose(v, upper, rtol=1e-12, atol=0)


# -------------------------------------------------------------------------- BLT
def test_blt_column_sums_are_cached_per_theta_omega_horizon() -> None:
    """A BLT with float-derived θ computes its exact S₂ once per (θ, ω, T): a second
    mechanism with the same parameters and every later release hit the cache."""
    from dpref.mechanisms import BLT
    from dpref.mechanisms.factorization.blt import _blt_column_sum_cached

    theta = [Fraction(0.9993), Fraction(0.61)]
    omega = [Fraction(0.02), Fraction(0.3)]
    T = 256
    first = BLT(rho=Fraction(1, 2), horizon=T, theta=theta, omega=omega)
    before = _blt_column_sum_cached.cache_info()
    s2 = first.s2(T)
    assert first.s2(T) is s2
    second = BLT(rho=Fraction(1, 2), horizon=T, theta=theta, omega=omega)
    second.release(np.zeros(T), rng=1)
    second.release(np.zeros(T), rng=2)
    after = _blt_column_sum_cached.cache_info()
    assert after.misses - before.misses == 1
    assert after.hits - before.hits >= 3
    assert after.currsize <= after.maxsize


def test_blt_variance_beyond_the_plan_range_matches_a_50_digit_closed_form() -> None:
    """BLT's ``variance`` at T = 2¹⁴ (above ``max_plan_steps``; it raised HorizonError):
    its largest value (at T) agrees with the 50-digit partial-fraction closed form
    ``S₂(T)·Σ_{k<T} b_k²`` (ρ = 1/2, Δ = 1) within 10⁻¹²."""
    import mpmath

    from dpref.mechanisms import BLT
    from dpref.mechanisms.factorization.blt import _blt_max_variance_factor

    T = 2**14
    m = BLT(rho=Fraction(1, 2), horizon=T)
    v = m.variance(T)
    ctx = mpmath.MPContext()
    ctx.dps = 50
    ref = _blt_max_variance_factor(ctx, list(m.theta), list(m.omega), T)
    assert abs(float(v.max()) / float(ref) - 1) < 1e-12
    assert float(v.max()) == float(v[-1])


# ------------------------------------------------------------------------ T = 2²⁰
@pytest.mark.slow
def test_sqrt_variance_at_two_to_the_twenty() -> None:
    """Issue 26: ``SqrtFactorization(rho=1/2, horizon=2**20).variance(2**20)`` returns; its
    largest value lies in [30.0, 30.1] (``dpref frontier`` prints 30.02) and within 10⁻¹²
    of ``variance_upper``."""
    from dpref.mechanisms import SqrtFactorization

    T = 2**20
    m = SqrtFactorization(rho=Fraction(1, 2), horizon=T)
    v = m.variance(T)
    assert v.shape == (T,)
    assert 30.0 <= float(v.max()) <= 30.1
    np.testing.assert_allclose(v, m.variance_upper(T), rtol=1e-12, atol=0)


@pytest.mark.slow
def test_blt_variance_at_two_to_the_twenty() -> None:
    """The shipped BLT preset at T = 2²⁰: the largest variance within 10⁻¹² of the
    50-digit closed form (measured 2.5·10⁻¹⁴)."""
    import mpmath

    from dpref.mechanisms import BLT
    from dpref.mechanisms.factorization.blt import _blt_max_variance_factor

    T = 2**20
    m = BLT(rho=Fraction(1, 2), horizon=T)
    ctx = mpmath.MPContext()
    ctx.dps = 50
    ref = _blt_max_variance_factor(ctx, list(m.theta), list(m.omega), T)
    assert abs(float(m.variance(T).max()) / float(ref) - 1) < 1e-12


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(MECHANISMS))
def test_every_mechanism_variance_at_max_variance_steps(name: str) -> None:
    """``variance(MAX_VARIANCE_STEPS)`` of every registered mechanism returns T positive
    finite floats (its time is in ``dpref bench`` and docs/plans.md, never asserted)."""
    from dpref.mechanisms.base import MAX_VARIANCE_STEPS

    m = _built(name, "epsilon", MAX_VARIANCE_STEPS)
    v = m.variance(MAX_VARIANCE_STEPS)  # type: ignore[attr-defined]
    assert v.shape == (MAX_VARIANCE_STEPS,)
    assert np.all(np.isfinite(v)) and np.all(v > 0)
