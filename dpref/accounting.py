"""Exact Gaussian-DP accounting and zCDP → (ε, δ) conversion, evaluated rigorously.

A linear mechanism with Gaussian node noise whose L2 privacy sum is at most ``2ρ``
(docs/spec.md §6) has, for every pair of neighbouring streams, the privacy loss of a
single Gaussian shift by ``μ = √(2ρ)`` standard deviations: it is exactly **μ-GDP**
(``proofs/gaussian.py``).  Its tight (ε, δ) curve is

    ``δ(ε) = Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2)``

(Balle, Wang 2018, Thm 8; Dong, Roth, Su 2019, Cor. 2.13).  :class:`GaussianDP` keeps
``μ²`` exactly (a :class:`~fractions.Fraction`) and evaluates this curve with **interval
arithmetic** (mpmath's ``iv`` context, outward rounding), so the float it returns is
never on the unsafe side: ``delta(ε)`` is rounded up, ``epsilon(δ)`` is rounded up.

How the tail is evaluated without cancellation.  With ``a = ε/μ − μ/2``,
``b = ε/μ + μ/2`` and ``Q(x) = Φ(−x)``: ``b² − a² = 4ε/2·… = 2ε``, so
``e^ε φ(b) = φ(a)`` (φ the normal density) and, with the Mills ratio ``R(x) = Q(x)/φ(x)``,

    ``δ(ε) = φ(a)·(R(a) − R(b))``   (when a and b are both large),

which never forms ``e^ε`` times a tiny number.  ``R`` is enclosed by two successive
convergents of Laplace's continued fraction ``R(x) = 1/(x + 1/(x + 2/(x + 3/(x + …))))``
(a Stieltjes fraction: for ``x > 0`` its convergents alternate around ``R(x)``), and for
``|x| < 5`` ``Q`` is enclosed by the alternating Taylor series of erf with its remainder
bound.  Every operation is an interval operation; the precision doubles (128 bits up to
:data:`MAX_PRECISION`) until the enclosure of δ is relatively ``2^−64`` wide, so the
rounded-up float is within one ulp of the true value, and never below it.

:class:`ZCDP` converts ρ-zCDP (e.g. discrete Gaussian noise, which is ρ-zCDP but not
exactly GDP) to (ε, δ) with Canonne, Kamath, Steinke 2020, Corollary 13:
``δ = inf_{α>1} e^{(α−1)(αρ−ε)} (1 − 1/α)^α/(α−1)``.  Every α > 1 gives a valid δ, so α
is chosen numerically (floats) and the bound at that α is evaluated in interval
arithmetic and rounded up; likewise for ε.  :meth:`ZCDP.bun_steinke_epsilon` is the
simpler ``ρ + 2√(ρ ln(1/δ))`` of Bun, Steinke 2016 (Prop. 1.3), rounded up.

mpmath is imported on first use: importing this module (and ``dpref``) stays light.

References
----------
.. [1] B. Balle, Y.-X. Wang. "Improving the Gaussian Mechanism for Differential Privacy:
   Analytical Calibration and Optimal Denoising." ICML 2018, Theorem 8.
.. [2] J. Dong, A. Roth, W. J. Su. "Gaussian Differential Privacy." JRSS B 84(1), 2022
   (arXiv 1905.02383, 2019), Corollary 2.13.
.. [3] C. Canonne, G. Kamath, T. Steinke. "The Discrete Gaussian for Differential
   Privacy." NeurIPS 2020, Proposition 12 and Corollary 13.
.. [4] M. Bun, T. Steinke. "Concentrated Differential Privacy: Simplifications,
   Extensions, and Lower Bounds." TCC 2016, Proposition 1.3.
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, ClassVar

from dpref.errors import ParameterError
from dpref.validation import (
    ceil_float,
    check_exact,
    check_fraction,
    check_probability_open,
    floor_float,
    fmt,
)

__all__ = [
    "MAX_ACCOUNTING_EPSILON",
    "MAX_MU2",
    "MAX_PRECISION",
    "MIN_DELTA",
    "MIN_MU2",
    "ZCDP",
    "GaussianDP",
    "check_accounting_delta",
    "check_accounting_epsilon",
    "check_mu2",
]

MIN_MU2 = Fraction(1, 2**60)
"""Smallest μ² accepted (ρ = 2^−61): the cancellation in ``R(a) − R(b)`` costs about
``log₂(ε/μ²)`` bits, bounded here by 100."""
MAX_MU2 = Fraction(2**20)
"""Largest μ² accepted (μ = 1024, ρ = 2^19): beyond it no δ < 1 is meaningful at any ε a
float can hold with small relative error."""
MAX_ACCOUNTING_EPSILON = Fraction(2**40)
"""Largest ε accepted by :meth:`GaussianDP.delta` and :meth:`ZCDP.delta`."""
MIN_DELTA = Fraction(1, 10**4000)
"""Smallest δ accepted by the ``epsilon(delta)`` methods (ε grows like ``μ√(2 ln 1/δ)``)."""
MAX_PRECISION = 4096
"""Most bits of the interval arithmetic; the parameter ranges above never need more than
a few hundred (a δ enclosure that is still not tight here is an error, not a guess)."""

_START_PRECISION = 128
_TAYLOR_LIMIT = 5
"""``Q(x)`` by the erf Taylor series for ``|x| < 5``, by the continued fraction beyond."""
_FLOOR_BITS = 16384
_FLOOR = Fraction(1, 2**_FLOOR_BITS)
"""δ below this (far below the smallest float and :data:`MIN_DELTA`) is reported as the
enclosure ``(0, 2^−16384)``: its exact endpoints would be rationals of astronomical size."""
_LN_SMALLEST_FLOAT = -745
"""Below ``ln(2^−1074) ≈ −744.4``: an ``e^x`` under it is below the smallest positive float."""
_TIGHT = Fraction(1, 2**64)
"""Relative width of the δ enclosure that is accepted (the float is then within 1 ulp)."""


def check_mu2(name: str, value: Any) -> Fraction:
    """μ² (or 2ρ): an exact rational in ``[2^−60, 2^20]``."""
    v = check_exact(name, value)
    if v <= 0:
        raise ParameterError(f"{name}={fmt(value)}: must be > 0")
    if not MIN_MU2 <= v <= MAX_MU2:
        raise ParameterError(
            f"{name}={fmt(value)}: must lie in [2^-60, 2^20] (the interval evaluation of "
            "the Gaussian tails is bounded there)"
        )
    return v


def check_accounting_epsilon(name: str, value: Any) -> Fraction:
    """ε for an accounting query: exact, finite, ``0 ≤ ε ≤ 2^40``; a float at its exact
    binary value (the floats :meth:`GaussianDP.epsilon` returns are certified as they are)."""
    v = check_fraction(name, value)
    if v < 0:
        raise ParameterError(f"{name}={fmt(value)}: must be >= 0")
    if v > MAX_ACCOUNTING_EPSILON:
        raise ParameterError(f"{name}={fmt(value)}: must be <= 2^40")
    return v


def check_accounting_delta(name: str, value: Any) -> Fraction:
    """δ for an accounting query: exact, ``10^−4000 ≤ δ < 1``."""
    v = check_probability_open(name, value)
    if v < MIN_DELTA:
        raise ParameterError(f"{name}={fmt(value)}: must be >= 1e-4000")
    return v


# ------------------------------------------------------------ interval kernels
def _context(prec: int) -> Any:
    """A fresh mpmath interval context of ``prec`` bits (mpmath is imported here)."""
    from mpmath.ctx_iv import MPIntervalContext  # type: ignore[import-untyped]

    ctx = MPIntervalContext()
    ctx.prec = prec
    return ctx


def _iv(ctx: Any, q: Fraction) -> Any:
    """An enclosure of the rational q."""
    return ctx.mpf(q.numerator) / ctx.mpf(q.denominator)


def _ends(x: Any) -> tuple[Fraction, Fraction]:
    """The exact endpoints of an interval, as Fractions."""
    from mpmath import libmp  # type: ignore[import-untyped]

    lo, hi = x._mpi_
    return Fraction(*libmp.to_rational(lo)), Fraction(*libmp.to_rational(hi))


def _hull(ctx: Any, x: Any, y: Any) -> Any:
    """The smallest interval containing both x and y (exact endpoints, no rounding)."""
    from mpmath import libmp

    (xa, xb), (ya, yb) = x._mpi_, y._mpi_
    lo = xa if libmp.mpf_lt(xa, ya) else ya
    hi = xb if libmp.mpf_gt(xb, yb) else yb
    return ctx.make_mpf((lo, hi))


def _symmetric(ctx: Any, bound: Fraction) -> Any:
    """The interval ``[−u, u]`` with ``u ≥ bound`` (the upper end of an enclosure of it)."""
    from mpmath import libmp

    upper = _iv(ctx, bound)._mpi_[1]
    return ctx.make_mpf((libmp.mpf_neg(upper), upper))


def _density(ctx: Any, x: Any) -> Any:
    """``φ(x) = e^{−x²/2}/√(2π)``."""
    return ctx.exp(-(x * x) / 2) / ctx.sqrt(2 * ctx.pi)


def _mills(ctx: Any, x: Any) -> Any:
    """An enclosure of the Mills ratio ``R(x) = Q(x)/φ(x)`` for ``x ≥ 1`` (continued fraction).

    ``R(x) = 1/(x + 1/(x + 2/(x + …)))``: for x > 0 all partial numerators are positive, so
    the convergents ``C_n`` alternate around R(x) (``C_0 = 1/x`` above, ``C_1`` below) and
    the hull of two successive ones, each computed in interval arithmetic, encloses it.
    The number of terms doubles until that hull is relatively ``2^{8−prec}`` wide.
    """
    terms = 16
    target = Fraction(1, 2 ** max(ctx.prec - 8, 1))
    while True:
        convergents = []
        for n in (terms, terms + 1):
            v = ctx.mpf(0)
            for k in range(n, 0, -1):
                v = k / (x + v)
            convergents.append(1 / (x + v))
        out = _hull(ctx, convergents[0], convergents[1])
        lo, hi = _ends(out)
        if lo > 0 and hi - lo <= target * lo:
            return out
        if terms > 1 << 16:
            raise ParameterError(
                f"x={float(lo):.6g}: the continued fraction did not converge at {ctx.prec} bits"
            )
        terms *= 2


def _upper_tail_taylor(ctx: Any, x: Any) -> Any:
    """An enclosure of ``Q(x) = (1 − erf(x/√2))/2`` for ``|x| < 5`` (Taylor series of erf).

    ``erf(y) = (2/√π) Σ_n (−1)^n y^{2n+1}/(n!(2n+1))``.  Once ``n + 1 > y²`` the terms
    decrease in magnitude and alternate, so the remainder after N terms lies between 0
    and the first omitted term: it is added as the interval ``[−|t_N|, |t_N|]``.
    """
    y = x / ctx.sqrt(2)
    y2 = y * y
    y2_hi = _ends(y2)[1]
    power = y  # y^{2n+1}/n!
    total = ctx.mpf(0)
    n = 0
    tiny = Fraction(1, 2 ** (ctx.prec + 16))
    while True:
        term = power / (2 * n + 1)
        t_lo, t_hi = _ends(term)
        mag = max(abs(t_lo), abs(t_hi))
        if n + 1 > y2_hi and mag <= tiny:
            total += _symmetric(ctx, mag)  # the remainder lies in [−|t_N|, |t_N|]
            break
        total += term if n % 2 == 0 else -term
        n += 1
        power = power * y2 / n
    erf = 2 * total / ctx.sqrt(ctx.pi)
    return (1 - erf) / 2


def _upper_tail(ctx: Any, x: Any) -> Any:
    """An enclosure of ``Q(x) = P[N(0,1) > x]``."""
    lo, hi = _ends(x)
    if lo >= _TAYLOR_LIMIT:
        return _density(ctx, x) * _mills(ctx, x)
    if hi <= -_TAYLOR_LIMIT:
        return 1 - _density(ctx, x) * _mills(ctx, -x)
    return _upper_tail_taylor(ctx, x)


def _gdp_delta_interval(mu2: Fraction, epsilon: Fraction, prec: int) -> tuple[Fraction, Fraction]:
    """An enclosure of ``δ(ε) = Q(a) − e^ε Q(b)`` at ``prec`` bits (see the module docstring)."""
    ctx = _context(prec)
    mu = ctx.sqrt(_iv(ctx, mu2))
    eps = _iv(ctx, epsilon)
    a = eps / mu - mu / 2
    b = eps / mu + mu / 2
    a_lo = _ends(a)[0]
    b_lo = _ends(b)[0]
    if a_lo >= _TAYLOR_LIMIT:  # both tails far out: δ = φ(a)(R(a) − R(b))
        delta = _density(ctx, a) * (_mills(ctx, a) - _mills(ctx, b))
    elif b_lo >= _TAYLOR_LIMIT:  # e^ε Q(b) = φ(a) R(b), no e^ε formed
        delta = _upper_tail(ctx, a) - _density(ctx, a) * _mills(ctx, b)
    else:
        delta = _upper_tail(ctx, a) - ctx.exp(eps) * _upper_tail(ctx, b)
    sign, _, exp, bc = delta._mpi_[1]
    if not sign and exp + bc < -_FLOOR_BITS:  # upper end below 2^−16384
        return Fraction(0), _FLOOR
    return _ends(delta)


def _tight(compute: Any, what: str) -> tuple[Fraction, Fraction]:
    """Run ``compute(prec)`` at doubling precision until its enclosure is tight."""
    prec = _START_PRECISION
    while True:
        lo, hi = compute(prec)
        if (lo > 0 and hi - lo <= _TIGHT * hi) or (lo, hi) == (0, _FLOOR):
            return lo, hi
        if prec >= MAX_PRECISION:
            raise ParameterError(f"{what}: no tight enclosure at {MAX_PRECISION} bits")
        prec *= 2


def _float_bits(x: float) -> int:
    return int(struct.unpack("<q", struct.pack("<d", x))[0])


def _bits_float(n: int) -> float:
    return float(struct.unpack("<d", struct.pack("<q", n))[0])


def _smallest_float(ok: Any, hi: float) -> float:
    """The smallest float ``x ∈ [0, hi]`` with ``ok(x)``, for ``ok`` false at 0, true at hi
    and monotone (bisection on the bit patterns of non-negative floats, which are ordered
    like the floats)."""
    lo_bits, hi_bits = 0, _float_bits(hi)
    while hi_bits - lo_bits > 1:
        mid = (lo_bits + hi_bits) // 2
        if ok(_bits_float(mid)):
            hi_bits = mid
        else:
            lo_bits = mid
    return _bits_float(hi_bits)


# ----------------------------------------------------------------- Gaussian DP
@dataclass(frozen=True)
class GaussianDP:
    """μ-Gaussian differential privacy with μ² exact (Dong, Roth, Su 2019).

    A mechanism whose privacy loss on every neighbouring pair is that of
    ``N(0, 1)`` against ``N(μ, 1)`` — every linear mechanism with Gaussian node noise
    and L2 privacy sum ``2ρ = μ²`` (``proofs/gaussian.py``).  Its tight (ε, δ) curve is
    ``δ(ε) = Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2)``, evaluated in interval arithmetic
    (module docstring) and rounded up.

    Parameters
    ----------
    mu2
        μ² = 2ρ, an exact positive rational in [2^−60, 2^20] (int, Fraction, float
        taken exactly, or a string such as ``"1/2"``).

    References
    ----------
    .. [1] Dong, Roth, Su. "Gaussian Differential Privacy." 2019, Corollary 2.13.
    .. [2] Balle, Wang. "Improving the Gaussian Mechanism for Differential Privacy." ICML
       2018, Theorem 8.
    """

    mu2: Fraction
    """μ², exact."""

    proof: ClassVar[str] = "proofs/gaussian.py"
    """The file whose ``PROOFS`` proves the Gaussian lemma this class relies on."""
    docs: ClassVar[str] = "docs/accounting.md"
    """The documentation page."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "mu2", check_mu2("mu2", self.mu2))

    @classmethod
    def from_rho(cls, rho: Any) -> GaussianDP:
        """The GDP of a linear Gaussian mechanism with L2 privacy sum ``2ρ``: ``μ² = 2ρ``."""
        r = check_exact("rho", rho)
        if r <= 0:
            raise ParameterError(f"rho={fmt(rho)}: must be > 0")
        if not MIN_MU2 <= 2 * r <= MAX_MU2:
            raise ParameterError(f"rho={fmt(rho)}: 2*rho must lie in [2^-60, 2^20]")
        return cls(2 * r)

    @property
    def rho(self) -> Fraction:
        """``ρ = μ²/2``: a μ-GDP mechanism is ρ-zCDP (Rényi divergence ``αμ²/2``)."""
        return self.mu2 / 2

    @property
    def mu(self) -> tuple[float, float]:
        """``(lo, hi)``: the largest float ≤ μ and the smallest float ≥ μ (μ = √μ²)."""
        ctx = _context(256)
        lo, hi = _ends(ctx.sqrt(_iv(ctx, self.mu2)))
        return floor_float(lo), ceil_float(hi)

    def delta_bounds(self, epsilon: Any) -> tuple[Fraction, Fraction]:
        """Exact rationals ``lo ≤ δ(ε) ≤ hi`` with ``hi − lo ≤ 2^−64·hi``; when δ(ε) is
        below ``2^−16384`` (far below any float), ``(0, 2^−16384)``."""
        eps = check_accounting_epsilon("epsilon", epsilon)
        return _tight(
            lambda prec: _gdp_delta_interval(self.mu2, eps, prec),
            f"epsilon={fmt(epsilon)}, mu2={self.mu2}",
        )

    def delta(self, epsilon: Any) -> float:
        """``δ(ε)``, rounded up to a float (never below the true δ; at least the smallest
        positive float, since δ(ε) > 0 for every finite ε)."""
        return ceil_float(self.delta_bounds(epsilon)[1])

    def epsilon(self, delta: Any) -> float:
        """The smallest ε ≥ 0 with ``δ(ε) ≤ delta``, rounded up to a float.

        Bisection over floats on the certified predicate ``upper(δ(ε)) ≤ delta``: the
        result x satisfies ``δ(x) ≤ delta`` exactly, so it is at least the true ε.
        """
        d = check_accounting_delta("delta", delta)

        def ok(x: float) -> bool:
            lo, hi = _gdp_delta_interval(self.mu2, Fraction(x), _START_PRECISION)
            if hi - lo > _TIGHT * hi:  # loose enclosure: decide at full precision
                lo, hi = self.delta_bounds(Fraction(x))
            return hi <= d

        if ok(0.0):
            return 0.0
        # δ(ε) ≤ Q(a) ≤ e^{−a²/2}/2 for a ≥ 0, so a ≥ √(2 ln(1/δ)) suffices
        mu_hi = self.mu[1]
        top = mu_hi * (mu_hi / 2 + math.sqrt(2 * _ln_inverse(d))) * 1.01 + 1e-300
        while not ok(top):
            top *= 2
        return _smallest_float(ok, top)

    def __repr__(self) -> str:
        return f"GaussianDP(mu2={self.mu2})"


def _ln_inverse(d: Fraction) -> float:
    """``ln(1/d)`` as a float, for huge denominators too (a bracket, not a bound)."""
    return math.log(d.denominator) - math.log(d.numerator)


# ------------------------------------------------------------------ zCDP
@dataclass(frozen=True)
class ZCDP:
    """ρ-zero-concentrated DP → (ε, δ), rounded up (Canonne, Kamath, Steinke 2020).

    For mechanisms that are ρ-zCDP but not exactly GDP — discrete Gaussian node noise.
    ``δ(ε) = inf_{α>1} exp((α−1)(αρ − ε)) · (1 − 1/α)^α/(α−1)`` (CKS 2020, Cor. 13): every
    α > 1 gives a valid bound, so α is optimised in floats and the bound at that α is
    evaluated in interval arithmetic and rounded up.

    Parameters
    ----------
    rho
        ρ > 0, exact, with 2ρ in [2^−60, 2^20].

    References
    ----------
    .. [1] Canonne, Kamath, Steinke. "The Discrete Gaussian for Differential Privacy."
       NeurIPS 2020, Corollary 13.
    .. [2] Bun, Steinke. "Concentrated Differential Privacy." TCC 2016, Proposition 1.3.
    """

    rho: Fraction
    """ρ, exact."""

    def __post_init__(self) -> None:
        r = check_exact("rho", self.rho)
        if r <= 0:
            raise ParameterError(f"rho={fmt(self.rho)}: must be > 0")
        check_mu2("2*rho", 2 * r)
        object.__setattr__(self, "rho", r)

    def _log_delta(self, alpha: Fraction, epsilon: Fraction, prec: int) -> Fraction:
        """Upper end of ``ln δ(α) = (α−1)(αρ−ε) + (α−1) ln(1−1/α) − ln α``."""
        ctx = _context(prec)
        a = _iv(ctx, alpha)
        value = (a - 1) * (a * _iv(ctx, self.rho) - _iv(ctx, epsilon))
        value += (a - 1) * ctx.log(1 - 1 / a) - ctx.log(a)
        return _ends(value)[1]

    def _best_alpha(self, objective: Any) -> Fraction:
        """A good α > 1 for a float objective (golden-section search on ln(α − 1))."""
        lo, hi = -30.0, 30.0
        inv = (math.sqrt(5) - 1) / 2
        for _ in range(120):
            m1, m2 = hi - inv * (hi - lo), lo + inv * (hi - lo)
            if objective(1 + math.exp(m1)) <= objective(1 + math.exp(m2)):
                hi = m2
            else:
                lo = m1
        return 1 + Fraction(math.exp((lo + hi) / 2))

    def delta(self, epsilon: Any) -> float:
        """δ at ε from Corollary 13 of CKS 2020, rounded up (at most 1)."""
        eps = check_accounting_epsilon("epsilon", epsilon)
        rho, e = float(self.rho), float(eps)

        def log_delta(alpha: float) -> float:
            return (
                (alpha - 1) * (alpha * rho - e)
                + (alpha - 1) * math.log1p(-1 / alpha)
                - math.log(alpha)
            )

        alpha = self._best_alpha(log_delta)
        upper = self._log_delta(alpha, eps, 256)
        if upper < _LN_SMALLEST_FLOAT:
            # δ < e^{−745} < 2^−1074: the smallest positive float is above it.  (exp of an
            # ln δ near −10¹² has an exact rational end of 2^(10¹²): no conversion.)
            return math.ulp(0.0)
        ctx = _context(256)
        value = _ends(ctx.exp(_iv(ctx, upper)))[1]
        return min(1.0, ceil_float(value))

    def epsilon(self, delta: Any) -> float:
        """ε at δ: ``min_α αρ + ln(1 − 1/α) + (ln(1/δ) − ln α)/(α − 1)``, rounded up (≥ 0)."""
        d = check_accounting_delta("delta", delta)
        rho, log_inv = float(self.rho), _ln_inverse(d)

        def eps_of(alpha: float) -> float:
            return alpha * rho + math.log1p(-1 / alpha) + (log_inv - math.log(alpha)) / (alpha - 1)

        alpha = self._best_alpha(eps_of)
        ctx = _context(256)
        a = _iv(ctx, alpha)
        value = a * _iv(ctx, self.rho) + ctx.log(1 - 1 / a)
        value += (-ctx.log(_iv(ctx, d)) - ctx.log(a)) / (a - 1)
        return max(0.0, ceil_float(_ends(value)[1]))

    def bun_steinke_epsilon(self, delta: Any) -> float:
        """``ρ + 2√(ρ ln(1/δ))`` (Bun, Steinke 2016, Prop. 1.3), rounded up."""
        d = check_accounting_delta("delta", delta)
        ctx = _context(256)
        r = _iv(ctx, self.rho)
        value = r + 2 * ctx.sqrt(r * -ctx.log(_iv(ctx, d)))
        return ceil_float(_ends(value)[1])

    def __repr__(self) -> str:
        return f"ZCDP(rho={self.rho})"
