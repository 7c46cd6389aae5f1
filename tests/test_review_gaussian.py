"""Regression tests for defects found in the hostile review of the Gaussian-noise core."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from dpref.accounting import ZCDP
from dpref.errors import DprefError


# ------------------------------------------------------------- ZCDP.delta at large ε
@pytest.mark.parametrize(
    ("rho", "epsilon"),
    [(1, 2**40), (2**19, 2**40), (Fraction(1, 2**61), 2**40), (Fraction(1, 100), 10**4)],
)
def test_zcdp_delta_far_below_the_smallest_float_is_the_smallest_float(
    rho: object, epsilon: object
) -> None:
    """ZCDP.delta converted the upper end of ln δ ≈ −10¹² through an exact rational of
    2^(10¹²): OverflowError ('too many digits') or MemoryError — a crash, or minutes of
    work, inside the accepted range ε ≤ 2^40.  δ below the smallest positive float is
    reported, rounded up, as that float."""
    assert ZCDP(rho).delta(epsilon) == math.ulp(0.0)


def test_zcdp_delta_still_rounds_up_near_the_float_floor() -> None:
    # ln δ just above ln(2^-1074) ≈ -744.4: the exact value (a normal float or a subnormal)
    z = ZCDP(Fraction(1, 2))
    deltas = [z.delta(eps) for eps in (35, 38, "38.5", 39)]
    assert 1e-262 < deltas[0] < 1e-259  # 3.6e-261
    assert 1e-308 < deltas[1] < 1e-307  # 4.2e-308
    assert math.ulp(0.0) < deltas[2] < 1e-310  # a subnormal, still computed
    assert deltas[3] == math.ulp(0.0)


# ------------------------------------------------------- factorization_lower_bound
@pytest.mark.parametrize(
    ("rho", "sensitivity"),
    [(1, 10**200), (Fraction(1, 2**800), 2**300), (Fraction(1, 2**800), 10**200)],
)
def test_factorization_lower_bound_too_large_for_a_float_is_a_named_error(
    rho: object, sensitivity: object
) -> None:
    """Δ²/(2ρ) beyond a float used to escape as a raw OverflowError."""
    from dpref.lower_bounds import factorization_lower_bound

    with pytest.raises(DprefError, match=r"^sensitivity="):
        factorization_lower_bound(rho, 16, sensitivity)


# ------------------------------------------------------------ explicit level budgets
_TINY = Fraction(1, 10**1000)


@pytest.mark.parametrize("budget_kind", ["rho", "epsilon"])
@pytest.mark.parametrize("cls_name", ["Binary", "Honaker", "KaryTree"])
def test_a_level_share_too_small_for_a_float_is_refused_at_construction(
    cls_name: str, budget_kind: str
) -> None:
    """A per-level ρ_h (or ε_h) of 10^-1000 was accepted by Binary and only failed at
    release/online() with 'value=Fraction(…): too large for a float' (Honaker and KaryTree:
    at construction, but naming 'value'): the error must name budget, at construction."""
    import dpref

    cls = getattr(dpref, cls_name)
    extra = {"k": 2} if cls_name == "KaryTree" else {}
    budget = [Fraction(1, 2), _TINY, Fraction(1, 2) - _TINY]
    with pytest.raises(DprefError, match=r"^budget="):
        cls(**{budget_kind: 1}, horizon=4, budget=budget, **extra)


def test_a_small_but_representable_level_share_is_still_accepted() -> None:
    import dpref

    tiny = Fraction(1, 10**200)
    m = dpref.Binary(rho=1, horizon=4, budget=[Fraction(1, 2), tiny, Fraction(1, 2) - tiny])
    assert np.isfinite(m.release([1, 0, 1, 1], rng=0)).all()
    assert np.isfinite(m.variance()).all()


# ------------------------------------------------------ discrete Gaussian variance
@pytest.mark.parametrize("exponent", [11, 40, 100, 401])
def test_discrete_gaussian_variance_of_a_tiny_sigma2_is_the_smallest_float(
    exponent: int,
) -> None:
    """For σ² = 2^-40 the interval exp(−z²/(2σ²)) of mpmath took hours (2^-30: 8 s), so
    Binary(rho=2**40, noise='discrete_gaussian').variance() — and `dpref release --json` —
    hung.  The true variance is below 3e^{−1/(2σ²)} < 2^-1074: the smallest float."""
    from dpref.noise import discrete_gaussian_variance

    assert discrete_gaussian_variance(Fraction(1, 2**exponent)) == math.ulp(0.0)


def test_discrete_gaussian_variance_of_a_huge_rho_mechanism() -> None:
    import dpref

    m = dpref.Binary(rho=2**40, horizon=4, noise="discrete_gaussian")
    v = m.variance()
    assert v.shape == (4,)
    assert (v > 0).all()
    assert (v <= [float(x) for x in m.variance_exact()]).all()


def test_discrete_gaussian_variance_just_above_the_cutoff_is_unchanged() -> None:
    from dpref.noise import discrete_gaussian_variance

    # 1/(2σ²) = 512: e^-512 ≈ 4.4e-223 times 2 (z = ±1), a normal float
    assert 8.7e-223 < discrete_gaussian_variance(Fraction(1, 2**10)) < 8.8e-223


# ------------------------------------------------------- extended-precision budgets
def _rounds_up_as_double() -> np.longdouble:
    """A long double budget whose nearest double is above it (1/5 on x86-64)."""
    for d in range(3, 64):
        x = np.longdouble(1) / np.longdouble(d)
        if Fraction(float(x)) > Fraction(*x.as_integer_ratio()):
            return x
    pytest.skip("long double is a double on this platform")


@pytest.mark.parametrize("name", ["rho", "epsilon"])
def test_a_long_double_budget_is_read_at_its_own_width_not_through_a_double(name: str) -> None:
    """check_fraction converted every numpy float through float(): a np.longdouble ρ (or ε)
    became the nearest double, above the caller's value for 1/5 — a mechanism calibrated to
    a larger budget than the one given.  A float budget is now the shortest decimal that
    round-trips at the float's own width (docs/getting-started.md): for a long double,
    numpy's unique digits of the long double itself, never of a rounded double."""
    import dpref

    x = _rounds_up_as_double()
    shown = np.format_float_scientific(x, unique=True)
    m = dpref.Binary(**{name: x}, horizon=4)
    assert getattr(m, name) == Fraction(shown)
    assert np.longdouble(shown) == x  # the decimal denotes x at its width
    assert getattr(m, name) != Fraction(float(x))  # not the double above it


@pytest.mark.parametrize("bad", ["inf", "-inf", "nan"])
def test_a_non_finite_long_double_budget_is_a_named_error(bad: str) -> None:
    from dpref.validation import check_rho

    with pytest.raises(DprefError, match=r"^rho="):
        check_rho("rho", np.longdouble(bad))
