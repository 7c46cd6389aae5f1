"""Rigorous rational bounds on the irrational constants of the decayed sums.

ζ(δ), ``k^δ``, ExponentialSum's ``S(α) = Σ_{k≥1} α^{2^{k−1}−1}`` and PolynomialSum's
``S = Σ_j (1−β)^j L_j`` (and its ``(1−β)^{2j/3}`` twin) are irrational in general.  A
mechanism's noise scale is proportional to one of them, so the safe direction is **up**: a scale
computed from an upper bound adds at least the noise the proof requires, and the
mechanism is at least as private as the symbolic budget.  Every function here returns
exact :class:`~fractions.Fraction` values whose error is only ever on that side:

* mpmath evaluations (60 digits) are widened by a relative ``1e−40`` (``_MARGIN``),
  far more than the evaluation's own rounding error — up for upper bounds, down for
  lower bounds (:func:`zeta_bounds`, :func:`power_upper`);
* series are summed in 128-bit fixed point with directed rounding (``_ceil_div`` for
  the upper bound, floor division for the lower one) and closed by a tail bound that
  over-estimates the rest (:func:`exponential_sensitivity_bounds`,
  :func:`polynomial_series_upper`);
* integers defined by an irrational comparison are decided exactly in integer
  arithmetic whenever the 60-digit estimate is close to a tie
  (:func:`polynomial_breakpoint`);
* :func:`exponential_sensitivity_partial` and :func:`mpf_fraction` are exact.

A low layer: only the standard library, numpy, mpmath, :mod:`dpref.errors` and
:mod:`dpref.validation`.  mpmath is imported on first use, so importing this module
(and ``dpref``) does not pay for it.
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction
from functools import lru_cache
from typing import Any

from dpref.errors import ParameterError
from dpref.validation import ceil_float, check_exact, check_probability_open, fmt

__all__ = [
    "check_alpha",
    "check_beta",
    "check_c",
    "check_delta",
    "exponential_sensitivity_bounds",
    "exponential_sensitivity_partial",
    "mp_context",
    "mpf_fraction",
    "polynomial_breakpoint",
    "polynomial_kappa_upper",
    "polynomial_next_break",
    "polynomial_series_tail",
    "polynomial_series_upper",
    "power_upper",
    "root_power_upper",
    "zeta_bounds",
]

_DPS = 60
"""Decimal digits of the mpmath context used for irrational constants."""
_MARGIN = Fraction(1, 10**40)
"""Relative margin added to every mpmath upper bound (and taken off every lower
bound).  At 60 digits each elementary operation is accurate to about 1e−60
relative; a few thousand of them accumulate well under 1e−50, so a 1e−40 margin
covers the floating-point error of the evaluation with room to spare."""
_ZETA_TERMS = 4096
"""Terms summed explicitly before the tail bound in :func:`zeta_bounds`."""

# ------------------------------------------------------------ parameter ranges
# Every decayed-sum parameter has a range in which the work of its constants is
# bounded independently of how close it is to the boundary (docs/decayed.md,
# "Parameter ranges").  Beyond it: ParameterError, before any work or noise.
ALPHA_MAX = 1 - Fraction(1, 2**64)
"""Largest ExponentialSum α: the 128-bit fixed point of S(α) needs 1 − α ≫ 2^−128
(α > 1 − 2^−128 squares to 1 forever), and S(α) ≤ 66 here."""
DELTA_MIN = 1 + Fraction(1, 2**32)
"""Smallest AllWindowSum δ: ζ(δ) ≈ 1/(δ−1) is evaluated from a 60-digit δ, whose
rounding is then far below the 1e−40 margin."""
DELTA_MAX = Fraction(128)
"""Largest AllWindowSum δ: ζ(δ)k^δ stays a float for every level k ≤ 64 (64^128 = 2^768)."""
C_MAX = Fraction(16)
"""Largest PolynomialSum c."""
BETA_MIN = Fraction(1, 1024)
"""Smallest PolynomialSum β (weights (1−β)^j stay short Fractions at small horizons)."""
BETA_MAX = 1 - Fraction(1, 1024)
"""Largest PolynomialSum β: the breakpoints summed by the series stay below 2^80."""


def check_alpha(alpha: Any) -> Fraction:
    """ExponentialSum's α in ``(0, 1 − 2^−64]``."""
    a = check_probability_open("alpha", alpha)
    if a > ALPHA_MAX:
        raise ParameterError(
            f"alpha={fmt(alpha)}: must be <= 1 - 2^-64 (S(alpha) is bounded in 128-bit fixed"
            " point, which needs 1 - alpha well above 2^-128)"
        )
    return a


def check_delta(delta: Any) -> Fraction:
    """AllWindowSum's δ in ``[1 + 2^−32, 128]``."""
    d = check_exact("delta", delta)
    if d <= 1:
        raise ParameterError(f"delta={fmt(delta)}: must be > 1")
    if d < DELTA_MIN:
        raise ParameterError(
            f"delta={fmt(delta)}: must be >= 1 + 2^-32 (zeta(delta) ~ 1/(delta - 1) is"
            " evaluated at 60 digits)"
        )
    if d > DELTA_MAX:
        raise ParameterError(
            f"delta={fmt(delta)}: must be <= 128 (beyond it the level scale"
            " zeta(delta)*k^delta is too large for a float at level 64)"
        )
    return d


def check_c(c: Any) -> Fraction:
    """PolynomialSum's c in ``(1, 16]``."""
    v = check_exact("c", c)
    if v <= 1:
        raise ParameterError(f"c={fmt(c)}: must be > 1")
    if v > C_MAX:
        raise ParameterError(
            f"c={fmt(c)}: must be <= 16 (the number of instances grows like c*ln(t)/beta)"
        )
    return v


def check_beta(beta: Any) -> Fraction:
    """PolynomialSum's β in ``[2^−10, 1 − 2^−10]``."""
    b = check_probability_open("beta", beta)
    if b < BETA_MIN:
        raise ParameterError(
            f"beta={fmt(beta)}: must be >= 2^-10 (the number of instances grows like"
            " c*ln(t)/beta and their weights (1-beta)^j like j bits)"
        )
    if b > BETA_MAX:
        raise ParameterError(
            f"beta={fmt(beta)}: must be <= 1 - 2^-10 (the breakpoints (1-beta)^(-j/c) the"
            " series sums grow beyond 2^80)"
        )
    return b


def mp_context(dps: int = _DPS) -> Any:
    """A fresh mpmath context of ``dps`` decimal digits (mpmath is imported here, ~25 ms)."""
    import mpmath  # type: ignore[import-untyped]

    ctx = mpmath.MPContext()
    ctx.dps = dps
    return ctx


def mpf_fraction(x: Any) -> Fraction:
    """The exact value of an mpmath ``mpf`` (a binary float) as a Fraction."""
    man, exp = x.man_exp
    man, exp = int(man), int(exp)
    return Fraction(man * (1 << exp)) if exp >= 0 else Fraction(man, 1 << -exp)


def _mp_rational(ctx: Any, q: Fraction) -> Any:
    return ctx.mpf(q.numerator) / ctx.mpf(q.denominator)


@lru_cache(maxsize=64)
def zeta_bounds(delta: Fraction) -> tuple[Fraction, Fraction]:
    """Rational bounds ``lower ≤ ζ(δ) ≤ upper`` for rational δ > 1.

    With ``f(x) = x^{−δ}`` (decreasing and convex) and ``N`` = 4096:

    * upper: ``Σ_{k<N} k^{−δ} + (N − ½)^{1−δ}/(δ−1)``, because convexity gives
      ``f(k) ≤ ∫_{k−½}^{k+½} f`` (the midpoint rule under-estimates a convex
      integrand), so ``Σ_{k≥N} f(k) ≤ ∫_{N−½}^∞ f``;
    * lower: ``Σ_{k<N} k^{−δ} + N^{1−δ}/(δ−1)`` (the integral test,
      ``f(k) ≥ ∫_k^{k+1} f``).

    Both are evaluated with mpmath at 60 digits and widened by a relative 1e−40
    (see ``_MARGIN``), so the bracket holds despite the evaluation's rounding.  The
    upper bound exceeds ζ(δ) by about ``δ N^{−δ−1}/24``.
    """
    d = check_delta(delta)
    ctx = mp_context()
    dm = _mp_rational(ctx, d)
    partial = ctx.fsum(ctx.power(k, -dm) for k in range(1, _ZETA_TERMS))
    n = ctx.mpf(_ZETA_TERMS)
    up = partial + ctx.power(n - ctx.mpf(0.5), 1 - dm) / (dm - 1)
    lo = partial + ctx.power(n, 1 - dm) / (dm - 1)
    return mpf_fraction(lo) * (1 - _MARGIN), mpf_fraction(up) * (1 + _MARGIN)


def power_upper(k: int, delta: Fraction) -> Fraction:
    """A rational upper bound on ``k^δ`` (exact when δ is an integer)."""
    if delta.denominator == 1:
        return Fraction(k) ** int(delta)
    ctx = mp_context()
    return mpf_fraction(ctx.power(k, _mp_rational(ctx, delta))) * (1 + _MARGIN)


_FIX = 128
"""Bits of the fixed-point arithmetic with directed rounding used for series."""
_TINY_ALPHA = Fraction(1, 2**20)
"""Below this α, :func:`exponential_sensitivity_bounds` bounds S(α) in closed form."""


def _ceil_div(a: int, b: int) -> int:
    return -((-a) // b)


def exponential_sensitivity_partial(alpha: Fraction, levels: int) -> Fraction:
    """``S_L(α) = Σ_{k=1}^{L} α^{2^{k−1}−1}``, exactly: item 1's weight in the first L levels."""
    total = Fraction(0)
    for k in range(1, levels + 1):
        total += alpha ** ((1 << (k - 1)) - 1)
    return total


@lru_cache(maxsize=64)
def exponential_sensitivity_bounds(alpha: Fraction) -> tuple[Fraction, Fraction]:
    """Rational bounds on ``S(α) = Σ_{k≥1} α^{2^{k−1}−1}`` (the patent's Assertion 2).

    The terms ``p_k = α^{2^{k−1}}`` are computed by repeated squaring in 128-bit fixed
    point, rounding up for the upper bound and down for the lower bound; term k is
    ``p_k / α``.  Summation stops at the first K whose term is below ``2^{−100}``,
    and the tail is bounded by a geometric series: for ``k > K`` the exponents
    ``2^{k−1} − 1`` grow by at least ``2^K`` per step, so
    ``Σ_{k>K} α^{2^{k−1}−1} ≤ α^{2^K−1} / (1 − α^{2^K})``.  Both bounds are exact
    Fractions (no floating point anywhere).
    """
    a = check_alpha(alpha)
    if a <= _TINY_ALPHA:
        # The fixed point below bottoms out at one unit (α^{2^k} < 2^{−128}) and its
        # stopping rule then never fires for α < 2^{−28}.  Exactly instead: the exponents
        # 0, 1, 3, 7, … are distinct, so 1 + α ≤ S ≤ 1 + α + Σ_{m≥3} α^m = 1 + α + α³/(1−α).
        return 1 + a, _tiny_alpha_upper(a)
    return _sensitivity_fixed_point(a.numerator, a.denominator)


def _tiny_alpha_upper(a: Any) -> Any:
    """``1 + α + α³/(1−α)`` ≥ S(α) (Fractions or sympy)."""
    return 1 + a + a**3 / (1 - a)


def _fixed_point_start(num: Any, den: Any, one: Any) -> Any:
    """``p_1 = ⌈α·one⌉ ≥ α·one`` (α = num/den).  The steps of the upper bound below take
    ints or the proofs' z3 integers, so ``proofs/decayed.py`` proves each one's direction."""
    return _ceil_div(num * one, den)


def _fixed_point_step(p_up: Any, num: Any, den: Any, one: Any) -> tuple[Any, Any]:
    """``(term, next)``: ``term = ⌈p·den/num⌉ ≥ p/α`` and ``next = ⌈p²/one⌉ ≥ p²/one``."""
    return _ceil_div(p_up * den, num), _ceil_div(p_up * p_up, one)


def _fixed_point_tail(nxt_up: Any, num: Any, den: Any, one: Any, ratio: Any = Fraction) -> Any:
    """``(⌈next·den/num⌉/one)/(1 − next/one)`` ≥ ``α^{2^K−1}/(1 − α^{2^K})`` when
    ``next ≥ α^{2^K}·one`` and ``next < one`` (``ratio(a, b)`` is ``a/b``, exact)."""
    tail_num = _fixed_point_step(nxt_up, num, den, one)[0]
    return ratio(tail_num, one) / (1 - ratio(nxt_up, one))


def _sensitivity_fixed_point(num: int, den: int) -> tuple[Fraction, Fraction]:
    """:func:`exponential_sensitivity_bounds` for ``α = num/den`` above ``_TINY_ALPHA``."""
    one = 1 << _FIX
    p_up = _fixed_point_start(num, den, one)  # ≥ α·2^F
    p_lo = num * one // den
    s_up = s_lo = 0
    while True:
        term_up, nxt_up = _fixed_point_step(p_up, num, den, one)  # ≥ p_k/α, ≥ p_k²/2^F
        term_lo = p_lo * den // num
        s_up += term_up
        s_lo += term_lo
        nxt_lo = p_lo * p_lo // one
        if term_up < one >> 100:
            # tail: Σ_{k>K} ≤ α^{2^K−1}/(1 − α^{2^K}), α^{2^K} = p_{K+1}
            s_up_f = Fraction(s_up, one) + _fixed_point_tail(nxt_up, num, den, one)
            return Fraction(s_lo, one), s_up_f
        p_up, p_lo = nxt_up, nxt_lo


@lru_cache(maxsize=65536)
def polynomial_breakpoint(j: int, c: Fraction, beta: Fraction) -> int:
    """``b(j) = max{i ≥ 0 : (i+1)^{−c} ≥ (1−β)^j}`` exactly (``b(−1) = −1``).

    ``b(j) + 1`` is the largest integer n with ``n^c ≤ (1−β)^{−j}``; with
    ``c = p/q`` that is ``n^p ≤ ((1−β)^{−1})^{jq}``, decided in integers.  A 60-digit
    estimate picks the candidate and the exact comparison is used whenever the
    estimate is within a relative 1e−30 of an integer.
    """
    if j < 0:
        return -1
    if j == 0:
        return 0
    r = 1 / (1 - beta)
    ctx = mp_context()
    x = ctx.power(_mp_rational(ctx, r), ctx.mpf(j) / _mp_rational(ctx, c))
    n = int(ctx.floor(x))
    near = ctx.nint(x)
    if abs(x - near) <= x * ctx.mpf(10) ** -30:
        p, q = c.numerator, c.denominator
        r_bits = max(r.numerator.bit_length(), r.denominator.bit_length())
        if max(p * int(near).bit_length(), j * q * r_bits) <= _EXACT_BITS:
            n = _largest_fitting(int(near), j, c, r)
        else:  # the exact comparison is too large: decide at 300 digits, or refuse
            hi = mp_context(300)
            x = hi.power(_mp_rational(hi, r), hi.mpf(j) / _mp_rational(hi, c))
            if abs(x - hi.nint(x)) <= x * hi.mpf(10) ** -250:
                raise ParameterError(
                    f"c={fmt(c)}, beta={fmt(beta)}: breakpoint b({j}) is within 1e-250 of a"
                    " tie too large to decide exactly"
                )
            n = int(hi.floor(x))
    return n - 1


_EXACT_BITS = 1 << 20
"""Largest integers (in bits) :func:`polynomial_breakpoint` compares exactly."""


def polynomial_next_break(b: int, j: int, c: Fraction, beta: Fraction) -> int:
    """The smallest ``j' > j`` with ``b(j') > b``, given ``b(j) = b``.

    ``b(j') ≥ b + 1`` iff ``(b+2)^c ≤ (1−β)^{−j'}``, i.e. ``j' ≥ c·ln(b+2)/ln(1/(1−β))``: a
    60-digit estimate, corrected by the exact :func:`polynomial_breakpoint` (a few calls,
    however many empty steps are skipped).
    """
    ctx = mp_context()
    est = _mp_rational(ctx, c) * ctx.log(b + 2) / ctx.log(_mp_rational(ctx, 1 / (1 - beta)))
    jn = max(int(ctx.ceil(est)), j + 1)
    while jn - 1 > j and polynomial_breakpoint(jn - 1, c, beta) > b:
        jn -= 1
    while polynomial_breakpoint(jn, c, beta) <= b:
        jn += 1
    return jn


def _largest_fitting(n: int, j: int, c: Fraction, r: Fraction) -> int:
    """The largest m with ``m^c ≤ r^j``, in integers (``c = p/q``): ``m^p ≤ ⌊r^{jq}⌋``.

    ``n`` is the estimate; it is only a starting point (a 60-digit estimate of a number
    above 10⁶⁰ can be off by far more than 1, so the search is Newton's, not ±1 steps).
    """
    p, q = c.numerator, c.denominator
    a = r.numerator ** (j * q) // r.denominator ** (j * q)
    del n
    return _iroot(a, p)


def _iroot(a: int, p: int) -> int:
    """The largest m ≥ 0 with ``m^p ≤ a`` (Newton from above: O(log bits) steps)."""
    if a < 1:
        return 0
    x = 1 << -(-a.bit_length() // p)  # > a^{1/p}, since a < 2^{bits}
    while True:
        y = ((p - 1) * x + a // x ** (p - 1)) // p
        if y >= x:
            break
        x = y
    while x**p > a:
        x -= 1
    while (x + 1) ** p <= a:
        x += 1
    return x


_SERIES_TERMS = 4096
"""At most this many explicit terms of PolynomialSum's S; the closed-form tail bound
holds from any j, so stopping early only loosens S upward (more noise, never less)."""


def root_power_upper(x: Fraction, j: int, root: int) -> Fraction:
    """The smallest float ``≥ x^{j/root}`` (``0 < x ≤ 1``, j ≥ 0, root ≥ 1), as a Fraction.

    Exact when the power is (``j`` a multiple of ``root`` and the float ≥ it); else a
    60-digit mpmath evaluation widened by ``_MARGIN`` and rounded up to a float.  The
    result is at least ``x^{j/root}``, so a noise scale proportional to it is at least
    the exact one (PolynomialSum's ``(1−β)^{j/3}`` factors).
    """
    if j == 0:
        return Fraction(1)
    ctx = mp_context()
    est = ctx.power(_mp_rational(ctx, x), ctx.mpf(j) / root)
    return Fraction(ceil_float(mpf_fraction(est) * (1 + _MARGIN)))


def _root_upper_fixed(x: Fraction, power: int, root: int) -> int:
    """The smallest integer s with ``(s/2^F)^root ≥ x^power``: ``x^{power/root}`` in
    128-bit fixed point, rounded up, decided exactly in integers."""
    num, den = x.numerator**power, x.denominator**power
    big = num << (_FIX * root)  # s^root · den ≥ num · 2^{F·root}
    s = _iroot(big // den, root)
    while s**root * den < big:
        s += 1
    return s


POLYNOMIAL_POWERS: dict[str, tuple[int, int]] = {"uniform": (1, 1), "decaying": (2, 3)}
"""PolynomialSum allocation → ``(p, q)``: its privacy series weighs instance j by
``(1−β)^{jp/q}`` (uniform: ``(1−β)^j``; decaying: ``(1−β)^j/(1−β)^{j/3} = (1−β)^{2j/3}``)."""


def polynomial_kappa_upper(rho: Any, c: Any) -> Any:
    """``κ_up = (1/ρ − 1)·(1443/1000)/c ≥ log₂(1/ρ)/c``: with ``W_j ≤ ρ^{−j/c}`` an instance's
    levels are ``L_j ≤ κ_up·j + 1`` (``log₂y ≤ (y−1)/ln 2``, ``1/ln 2 < 1443/1000``).
    Fractions or sympy; the series bound and PolynomialSum's variance bound use it."""
    return (1 / rho - 1) * Fraction(1443, 1000) / c


def polynomial_series_tail(r: Any, kappa: Any, J: Any, x: Any) -> Any:
    """``r·(κ(J(1−x) + x)/(1−x)² + 1/(1−x))`` — ``Σ_{j≥J} x^j(κj + 1)`` when ``r = x^J``, an
    upper bound when ``r ≥ x^J`` (Fractions or sympy; ``proofs/decayed.py`` sums the series
    for symbolic x, κ, J and compares)."""
    return r * (kappa * (J * (1 - x) + x) / (1 - x) ** 2 + 1 / (1 - x))


def _series_step(p: Any, num: Any, den: Any) -> Any:
    """``⌈p·num/den⌉ ≥ p·x`` (x = num/den): the next fixed-point power, rounded up."""
    return _ceil_div(p * num, den)


@lru_cache(maxsize=64)
def polynomial_series_upper(
    c: Fraction, beta: Fraction, allocation: str = "uniform", *, levels: Callable[[int], int]
) -> Fraction:
    """Rigorous rational upper bound on PolynomialSum's privacy series.

    ``S = Σ_{j: W_j>0} x^j L_j`` with ``L_j = levels(W_j)`` — the mechanism's own level
    count of an instance, ``⌊log₂W_j⌋ + 1`` (``PolynomialSum.instance_levels``, passed in:
    this module sits below the mechanisms and keeps no second formula for it; docs/spec.md
    §2.1) and ``x = 1−β`` (``allocation="uniform"``) or ``x = (1−β)^{2/3}``
    (``"decaying"``: instance j's weight ``(1−β)^j`` over its scale factor
    ``(1−β)^{j/3}``).  Terms are summed in 128-bit fixed point rounded up (``x^j`` by
    repeated multiplication by a fixed-point upper bound of x, itself decided exactly
    in integers), until ``x^{j+1} < 2^{−70}`` or ``_SERIES_TERMS`` terms (small β); the
    rest is bounded in closed form: ``W_{j'} ≤ b(j') + 1 ≤ (1−β)^{−j'/c}`` gives
    ``L_{j'} ≤ κ j' + 1`` with ``κ = log₂(1/(1−β))/c``, bounded above through
    ``log₂ y ≤ (y − 1)/ln 2`` and ``1/ln 2 < 1443/1000``, and with ``r ≥ x^J`` (J = j+1)
    ``Σ_{j'≥J} x^{j'} (κ j' + 1) ≤ r(κ(J(1−x) + x)/(1−x)² + 1/(1−x))``.
    """
    power, root = POLYNOMIAL_POWERS[allocation]
    one = 1 << _FIX
    rho = 1 - beta
    if root == 1:
        num, den = rho.numerator, rho.denominator
    else:
        num, den = _root_upper_fixed(rho, power, root), one
    x = Fraction(num, den)  # ≥ (1−β)^{p/q}
    kappa: Fraction = polynomial_kappa_upper(rho, c)
    total = 0  # fixed point, rounded up
    p = one  # ≥ x^j · 2^F
    j = 0
    bp, bj = -1, 0  # b(j − 1), b(j)
    j_next = polynomial_next_break(bj, j, c, beta)  # b is constant on [j, j_next)
    while True:
        if j > 0:
            bp = bj
            if j == j_next:
                bj = polynomial_breakpoint(j, c, beta)
                j_next = polynomial_next_break(bj, j, c, beta)
        if bj > bp:  # W_j = bj − bp items, L_j = levels(W_j)
            total += p * int(levels(bj - bp))
        p_next = _series_step(p, num, den)
        if j >= 8 and (p_next < one >> 70 or j >= _SERIES_TERMS):
            r = Fraction(p_next, one)  # ≥ x^{j+1}
            tail: Fraction = polynomial_series_tail(r, kappa, j + 1, x)
            return Fraction(total, one) + tail
        p = p_next
        j += 1
