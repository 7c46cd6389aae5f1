"""Gaussian-DP accounting (dpref.accounting): the rigorous δ(ε) and ε(δ) of μ-GDP, and the
zCDP → (ε, δ) conversion.

References are (i) scipy.stats.norm in double precision where its formula has no
cancellation, and (ii) a 200-digit mpmath evaluation with ``erfc``; the rigorous value must
never be below the 200-digit one.
"""

from __future__ import annotations

import itertools
import math
import subprocess
import sys
from fractions import Fraction

import mpmath
import pytest
from scipy.stats import norm

from dpref.accounting import (
    MIN_DELTA,
    ZCDP,
    GaussianDP,
)
from dpref.errors import DprefError, DprefTypeError, ParameterError
from dpref.validation import check_exact

MU2S = (Fraction(1, 100), Fraction(1, 4), Fraction(1), Fraction(2), Fraction(9), Fraction(64))
EPSILONS = (0, Fraction(1, 10), Fraction(1, 2), 1, 2, 3, 5)


def _reference(mu2: Fraction, eps: Fraction | int) -> mpmath.mpf:
    """δ(ε) at 200 digits, erfc form: ½erfc(a/√2) − ½e^ε erfc(b/√2)."""
    with mpmath.workdps(200):
        mu = mpmath.sqrt(mpmath.mpf(mu2.numerator) / mu2.denominator)
        e = mpmath.mpf(Fraction(eps).numerator) / Fraction(eps).denominator
        a, b = e / mu - mu / 2, e / mu + mu / 2
        s2 = mpmath.sqrt(2)
        return mpmath.erfc(a / s2) / 2 - mpmath.exp(e) * mpmath.erfc(b / s2) / 2


@pytest.mark.parametrize("mu2", MU2S)
@pytest.mark.parametrize("eps", EPSILONS)
def test_delta_matches_scipy_and_is_never_below_the_true_value(mu2: Fraction, eps: int) -> None:
    g = GaussianDP(mu2)
    got = g.delta(eps)
    mu = math.sqrt(mu2)
    scipy_value = norm.cdf(-eps / mu + mu / 2) - math.exp(eps) * norm.cdf(-eps / mu - mu / 2)
    ref = _reference(mu2, eps)
    assert got >= ref  # rounded up, never below the 200-digit value
    if ref > 1e-300:
        assert got - ref <= ref * 2.0**-52  # and within one ulp of it
    else:
        assert got <= max(ref * (1 + 2.0**-52), 5e-324)
    if scipy_value > 1e-200 and scipy_value > 1e-3 * norm.cdf(-eps / mu + mu / 2):
        # scipy's difference of two doubles is accurate only without heavy cancellation
        assert got == pytest.approx(scipy_value, rel=1e-12)
    lo, hi = g.delta_bounds(eps)
    assert lo <= Fraction(got) and lo > 0 and hi - lo <= hi / 2**64
    # the enclosure holds the 200-digit value (its error is far below the 2^-64 width)
    with mpmath.workdps(200):
        man, exp = ref.man_exp
        exact = Fraction(int(man)) * Fraction(2) ** int(exp)
    assert lo * (1 - Fraction(1, 10**150)) <= exact <= hi * (1 + Fraction(1, 10**150))


def test_known_values() -> None:
    # μ = 1, ε = 0: δ = 2Φ(1/2) − 1 = erf(1/(2√2))
    assert GaussianDP(1).delta(0) == pytest.approx(math.erf(0.5 / math.sqrt(2)), rel=1e-15)
    # μ = 1: the (ε, δ) = (1, 0.1269...) point of Dong, Roth, Su's Figure; ε(1e-5) ≈ 3.73…
    assert GaussianDP(1).delta(1) == pytest.approx(0.12693673750664392, rel=1e-14)
    assert GaussianDP(Fraction(1, 2)).rho == Fraction(1, 4)
    assert GaussianDP.from_rho(Fraction(1, 2)).mu2 == 1
    assert GaussianDP(2).mu == (math.sqrt(2), math.nextafter(math.sqrt(2), 3)) or (
        GaussianDP(2).mu[0] <= math.sqrt(2) <= GaussianDP(2).mu[1]
    )
    lo, hi = GaussianDP(2).mu
    assert Fraction(lo) ** 2 <= 2 <= Fraction(hi) ** 2 and hi == math.nextafter(lo, 3)
    assert GaussianDP(4).mu == (2.0, 2.0)


def test_tails_do_not_cancel_to_zero_or_negative() -> None:
    g = GaussianDP(1)
    for eps in (20, 30, 50, 100, 1000):
        d = g.delta(eps)
        assert d > 0
        if eps <= 30:
            ref = _reference(Fraction(1), eps)
            assert ref <= d <= ref * (1 + 2.0**-50)
    # ε = 50, μ = 1: δ ≈ e^{−1225}, below every float: the smallest positive float
    assert g.delta(50) == 5e-324
    lo, hi = g.delta_bounds(30)
    assert 0 < lo <= hi and float(lo) == pytest.approx(float(_reference(Fraction(1), 30)))


def test_tiny_mu_cancellation_is_resolved() -> None:
    g = GaussianDP(Fraction(1, 2**40))
    eps = Fraction(1, 2**18)
    ref = _reference(g.mu2, eps)
    got = g.delta(eps)
    assert ref <= got <= ref * (1 + 2.0**-50)


@pytest.mark.parametrize("mu2", MU2S)
def test_delta_is_decreasing_in_epsilon_and_increasing_in_mu(mu2: Fraction) -> None:
    g = GaussianDP(mu2)
    values = [g.delta_bounds(e) for e in (0, Fraction(1, 4), 1, 3, 8)]
    for (lo_a, _), (_, hi_b) in itertools.pairwise(values):
        assert hi_b < lo_a
    bigger = GaussianDP(mu2 * 2)
    assert bigger.delta_bounds(1)[0] > g.delta_bounds(1)[1]


@pytest.mark.parametrize("mu2", (Fraction(1, 100), Fraction(1), Fraction(16)))
@pytest.mark.parametrize("delta", (Fraction(1, 10), 1e-5, 1e-12, Fraction(1, 10**100)))
def test_epsilon_round_trip(mu2: Fraction, delta: object) -> None:
    g = GaussianDP(mu2)
    eps = g.epsilon(delta)
    # a float δ is read as the decimal it prints as (1e-12 is 1/10^12): check_exact
    d = check_exact("delta", delta)
    # rounded up: δ(ε) ≤ δ exactly, and the next float down is not certified
    assert g.delta_bounds(eps)[1] <= d
    if eps > 0:
        assert g.delta_bounds(math.nextafter(eps, 0))[1] > d
    # round trips.  δ(ε(δ)) ≤ δ is the safe one.  ε(δ(ε)) is *at most* ε: δ(ε) was rounded
    # up, and (ε', δ↑) with ε' slightly below ε is also a valid statement; both directions
    # round up, so the round trip loses only the float rounding of δ.
    assert g.delta(eps) <= float(d) or Fraction(g.delta(eps)) <= d
    for e in (Fraction(1, 2), 2):
        back = g.epsilon(g.delta(e))
        assert back <= e and back == pytest.approx(float(e), rel=1e-9)


def test_epsilon_is_zero_when_delta_exceeds_delta_at_zero() -> None:
    g = GaussianDP(1)
    assert g.epsilon(Fraction(1, 2)) == 0.0  # δ(0) ≈ 0.383 < 1/2
    assert g.epsilon(Fraction(38, 100)) > 0


def test_extreme_parameters_stay_bounded() -> None:
    assert GaussianDP(2**20).epsilon(1e-10) > 2**19
    assert GaussianDP(1).epsilon(MIN_DELTA) == pytest.approx(136.1436, rel=1e-5)
    assert GaussianDP(Fraction(1, 2**60)).delta(1) == 5e-324
    assert GaussianDP(1).delta(2**40) == 5e-324


def test_zcdp_conversion() -> None:
    z = ZCDP(Fraction(1, 2))
    for delta in (1e-3, 1e-6, 1e-10):
        cks = z.epsilon(delta)
        bs = z.bun_steinke_epsilon(delta)
        exact_gdp = GaussianDP.from_rho(Fraction(1, 2)).epsilon(delta)
        # the exact GDP curve of a continuous Gaussian is tighter than any zCDP conversion,
        # and CKS's conversion is tighter than Bun–Steinke's
        assert exact_gdp < cks < bs
        # consistency: δ at the returned ε is at most δ (both are upper bounds)
        assert z.delta(cks) <= delta * (1 + 1e-9)
    # Bun–Steinke closed form
    assert z.bun_steinke_epsilon(1e-5) == pytest.approx(0.5 + 2 * math.sqrt(0.5 * math.log(1e5)))
    assert z.delta(0) <= 1.0 and z.epsilon(Fraction(99, 100)) >= 0.0


@pytest.mark.parametrize(
    ("call", "name"),
    [
        (lambda: GaussianDP(0), "mu2=0"),
        (lambda: GaussianDP(-1), "mu2=-1"),
        (lambda: GaussianDP(float("nan")), "mu2=nan"),
        (lambda: GaussianDP(2**21), "mu2=2097152"),
        (lambda: GaussianDP.from_rho(0), "rho=0"),
        (lambda: GaussianDP(1).delta(-1), "epsilon=-1"),
        (lambda: GaussianDP(1).delta(float("inf")), "epsilon=inf"),
        (lambda: GaussianDP(1).delta(2**41), "epsilon="),
        (lambda: GaussianDP(1).epsilon(0), "delta=0"),
        (lambda: GaussianDP(1).epsilon(1), "delta=1"),
        (lambda: GaussianDP(1).epsilon("1e-5000"), "delta="),
        (lambda: ZCDP(0), "rho=0"),
        (lambda: ZCDP(Fraction(1, 2)).epsilon(2), "delta=2"),
    ],
)
def test_bad_input_names_the_parameter(call: object, name: str) -> None:
    with pytest.raises(DprefError, match=name.replace("(", r"\(")):
        call()  # type: ignore[operator]


def test_type_errors() -> None:
    with pytest.raises(DprefTypeError, match="mu2=True"):
        GaussianDP(True)
    with pytest.raises(ParameterError):
        GaussianDP(1).epsilon("abc")


def test_import_is_light() -> None:
    code = "import dpref.accounting, sys; print('mpmath' in sys.modules, 'scipy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


def test_mechanism_gdp_is_the_declared_rho() -> None:
    from dpref import Binary

    m = Binary(rho=Fraction(1, 2), horizon=16)
    assert m.gdp() == GaussianDP(1) and m.gdp().delta(1) == GaussianDP(1).delta(1)
    with pytest.raises(ParameterError, match="noise='laplace'"):
        Binary(epsilon=1, horizon=16).gdp()
