"""Lower bounds for decayed sums under continual observation (docs/spec.md §2.5).

The packing argument of the decayed-sums patent (Lemma 2, Theorem 7, Corollaries 1–3):
suppose an ε-DP algorithm is within C of the decayed sum ``F`` at every query of a set
of q queries with probability ≥ 2/3.  Take the q + 1 streams
``x^0 = 0^{Dq}`` and ``x^a = 0^{(a−1)D} 1^D 0^{(q−a)D}`` with queries at ``aD``.  At
``aD``, ``F(x^a) = G(D) = Σ_{i<D} g(i)`` and ``F(x^b) = 0`` for ``b ≠ a``; so when
``G(D) > 2C`` the accuracy sets ``B_a`` are pairwise disjoint.  Each ``x^a`` is at
Hamming distance D from ``x^0``, so group privacy gives
``P[M(x^0) ∈ B_a] ≥ e^{−εD}·2/3``; as the ``B_a`` (a ≥ 1) are disjoint from each other
and from ``B_0``, ``q·e^{−εD}·2/3 ≤ 1/3``, i.e. ``e^{εD} ≥ 2q``.  Hence for

    ``D* = max{D ∈ ℕ : e^{εD} < 2q} = ⌈ln(2q)/ε⌉ − 1``

no ε-DP algorithm achieves ``C < G(D*)/2``: **the error bound is ``C ≥ G(D*)/2``**.
(``ln(2q)/ε`` is irrational for rational ε — Lindemann — so D* is well defined and
computed exactly from a 50-digit evaluation.)  For the window sum
``G(D) = min(D, W)``; for exponential decay ``G(D) = (1 − α^D)/(1 − α)``; for polynomial
decay ``G(D) = H_c(D) = Σ_{k=1}^{D} k^{−c}`` (the generalized harmonic number of the
patent's Corollary 3); for running counts ``G(D) = D`` (Dwork et al.'s ``Ω(log T/ε)``
for q = T).

The derivation of the constant is written out in ``proofs/decayed.py``.

References
----------
.. [1] J. Bolot, N. Fawaz, S. Muthukrishnan, A. Nikolov, N. Taft. "Private Decayed
   Predicate Sums on Streams." ICDT 2013; US patent 9,471,791, Lemma 2, Theorem 7,
   Corollaries 1–3.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from dpref.errors import DprefTypeError, ParameterError
from dpref.rigorous import mp_context, mpf_fraction
from dpref.types import Budget, Count, ExactReal, Horizon
from dpref.validation import (
    check_epsilon,
    check_exact,
    check_fraction,
    check_positive_int,
    check_probability_open,
    floor_float,
    fmt,
)

__all__ = [
    "Decay",
    "FactorizationLowerBound",
    "LowerBound",
    "exponential_decay",
    "factorization_lower_bound",
    "lower_bound",
    "packing_distance",
    "polynomial_decay",
    "prefix_decay",
    "window_decay",
]


@dataclass(frozen=True)
class Decay:
    """A decay function g (non-increasing, ``g(0) = 1``) and its partial sums G."""

    kind: str
    """``window``, ``exponential``, ``polynomial`` or ``prefix`` (running counts)."""
    parameter: Fraction | None
    """W, α or c (None for ``prefix``)."""

    def G(self, d: int) -> Fraction:
        """``G(D) = Σ_{i<D} g(i)``: exact, or (polynomial, c not an integer) a rational
        lower bound accurate to about 1e−15 relative."""
        if d <= 0:
            return Fraction(0)
        p = self.parameter
        if self.kind == "prefix":
            return Fraction(d)
        assert p is not None
        if self.kind == "window":
            return Fraction(min(d, int(p)))
        if self.kind == "exponential":
            if d * max(p.numerator.bit_length(), p.denominator.bit_length()) <= _EXACT_POWER_BITS:
                return (1 - p**d) / (1 - p)
            return Fraction(floor_float((1 - _power_upper_fixed(p, d)) / (1 - p)))
        if p.denominator == 1 and d <= 10_000 and int(p) * d.bit_length() <= _EXACT_POWER_BITS:
            # exact while every k^c has at most _EXACT_POWER_BITS bits (c ≥ 2⁴⁰ hung here)
            return sum((Fraction(1, k ** int(p)) for k in range(1, d + 1)), Fraction(0))
        ctx = mp_context(40)
        value = ctx.zeta(ctx.mpf(p.numerator) / p.denominator) - ctx.zeta(
            ctx.mpf(p.numerator) / p.denominator, d + 1
        )
        exact = mpf_fraction(value)
        return Fraction(floor_float(exact * (1 - Fraction(1, 10**20))))

    def describe(self) -> str:
        """The formula of G."""
        return {
            "prefix": "G(D) = D",
            "window": f"G(D) = min(D, W), W = {self.parameter}",
            "exponential": f"G(D) = (1 − α^D)/(1 − α), α = {self.parameter}",
            "polynomial": f"G(D) = H_c(D) = Σ_{{k≤D}} k^(−c), c = {self.parameter}",
        }[self.kind]


_EXACT_POWER_BITS = 1 << 16
"""Exponential ``G(D)`` is exact while ``α^D`` has at most this many bits; beyond, a
rational lower bound (``α^D`` bounded above in 128-bit fixed point, O(log D) steps)."""
_FIX = 128


def _power_upper_fixed(alpha: Fraction, d: int) -> Fraction:
    """A rational upper bound on ``α^d`` (0 < α < 1): square-and-multiply in 128-bit fixed
    point, every product rounded up, so the cost is O(log d) whatever α and d."""
    one = 1 << _FIX
    base = -((-alpha.numerator * one) // alpha.denominator)  # ≥ α·2^F
    acc = one
    while d:
        if d & 1:
            acc = -((-acc * base) // one)
        base = -((-base * base) // one)
        d >>= 1
    return Fraction(acc, one)


def window_decay(window: Count) -> Decay:
    """``g(i) = 1`` for ``i < W``, else 0."""
    return Decay("window", Fraction(check_positive_int("window", window)))


def exponential_decay(alpha: ExactReal) -> Decay:
    """``g(i) = α^i``, 0 < α < 1."""
    return Decay("exponential", check_probability_open("alpha", alpha))


def polynomial_decay(c: ExactReal) -> Decay:
    """``g(i) = (i+1)^{−c}``, c > 1."""
    value = check_exact("c", c)
    if value <= 1:
        raise ParameterError(f"c={fmt(c)}: must be > 1")
    return Decay("polynomial", value)


def prefix_decay() -> Decay:
    """``g ≡ 1``: running counts."""
    return Decay("prefix", None)


@dataclass(frozen=True)
class LowerBound:
    """``C ≥ value``: no ε-DP algorithm is within less of F on q queries w.p. 2/3."""

    value: Fraction
    """``G(D)/2`` (exact, or rounded down)."""
    D: int
    """``D* = ⌈ln(2q)/ε⌉ − 1``, the block length of the packing."""
    q: int
    """Number of simultaneously accurate queries."""
    epsilon: Fraction
    """ε."""
    decay: Decay
    """The decay function."""

    @property
    def formula(self) -> str:
        """How the value was obtained."""
        return (
            f"C ≥ G(D)/2 with D = ⌈ln(2q)/ε⌉ − 1 = {self.D} (q = {self.q}, ε = {self.epsilon}); "
            + self.decay.describe()
        )

    def as_dict(self) -> dict[str, Any]:
        """JSON-friendly dict."""
        return {
            "lower_bound": float(self.value),
            "D": self.D,
            "q": self.q,
            "epsilon": str(self.epsilon),
            "formula": self.formula,
        }


def packing_distance(epsilon: Budget, q: Count) -> int:
    """``D* = max{D ≥ 0 : e^{εD} < 2q} = ⌈ln(2q)/ε⌉ − 1``, exactly."""
    eps = check_epsilon("epsilon", epsilon)
    n = check_positive_int("q", q)
    # ln(2q)/ε has about log₁₀(1/ε) + log₁₀ln(2q) integer digits: 40 fractional digits on top
    digits = max(0, eps.denominator.bit_length() - eps.numerator.bit_length()) * 31 // 100
    ctx = mp_context(50 + digits + len(str(n.bit_length())))
    x = ctx.log(2 * n) / (ctx.mpf(eps.numerator) / eps.denominator)
    near = ctx.nint(x)
    if abs(x - near) < ctx.mpf(10) ** -40:  # pragma: no cover - impossible (Lindemann)
        raise ParameterError(f"epsilon={fmt(epsilon)}, q={n}: ln(2q)/ε too close to an integer")
    return int(ctx.ceil(x)) - 1


def _decay_of(g: Any) -> Decay:
    if isinstance(g, Decay):
        return g
    if isinstance(g, str):
        if g == "prefix":
            return prefix_decay()
        raise ParameterError(f"g={fmt(g)}: give a Decay, a decayed-sum mechanism or 'prefix'")
    declared = getattr(g, "decay", None)
    decay = declared() if callable(declared) else None
    if isinstance(decay, Decay):
        return decay
    raise DprefTypeError(f"g={fmt(g)}: must be a Decay or a mechanism that declares its decay")


def lower_bound(g: Decay | Any, epsilon: Budget, q: Count) -> LowerBound:
    """Patent Lemma 2 / Theorem 7: ``C ≥ ½ Σ_{i<D} g(i)`` with ``D = ⌈ln(2q)/ε⌉ − 1``.

    Parameters
    ----------
    g
        A :class:`Decay` (:func:`window_decay`, :func:`exponential_decay`,
        :func:`polynomial_decay`, :func:`prefix_decay`) or a decayed-sum mechanism
        (its own g; PolynomialSum's true g, not the step g').
    epsilon
        ε > 0.
    q
        The number of queries that must be simultaneously within C w.p. ≥ 2/3.

    References
    ----------
    .. [1] Bolot et al., ICDT 2013 / US 9,471,791: Lemma 2, Theorem 7, Corollaries 1–3.
    """
    decay = _decay_of(g)
    eps = check_epsilon("epsilon", epsilon)
    n = check_positive_int("q", q)
    d = packing_distance(eps, n)
    return LowerBound(decay.G(d) / 2, d, n, eps, decay)


MAX_FACTORIZATION_BOUND_HORIZON = 2**24
"""Largest T of :func:`factorization_lower_bound` (one float64 term per singular value)."""


@dataclass(frozen=True)
class FactorizationLowerBound:
    """``max_t Var(out_t) ≥ value`` for every linear Gaussian counter (a factorization of the
    prefix matrix) that is ρ-zCDP through its L2 sensitivity (docs/frontier.md)."""

    value: float
    """``(‖M_T‖_*/T)²·Δ²/(2ρ)``, rounded down."""
    gamma2: float
    """The lower bound ``‖M_T‖_*/T`` on the factorization norm γ₂(M_T), rounded down."""
    horizon: int
    """T."""
    rho: Fraction
    """ρ."""
    sensitivity: Fraction
    """Δ."""

    @property
    def formula(self) -> str:
        """How the value was obtained."""
        return (
            f"max Var ≥ γ₂(M_T)²Δ²/(2ρ), γ₂(M_T) ≥ ‖M_T‖_*/T = {self.gamma2:.6f} "
            f"(T = {self.horizon}, ρ = {self.rho}, Δ = {self.sensitivity})"
        )

    def as_dict(self) -> dict[str, Any]:
        """JSON-friendly dict."""
        return {
            "lower_bound": self.value,
            "gamma2_lower_bound": self.gamma2,
            "horizon": self.horizon,
            "rho": str(self.rho),
            "sensitivity": str(self.sensitivity),
            "formula": self.formula,
        }


def factorization_lower_bound(
    rho: Budget, horizon: Horizon, sensitivity: ExactReal = 1
) -> FactorizationLowerBound:
    """The smallest maximum variance any linear Gaussian counter can have at T and ρ.

    A linear plan with Gaussian node noise (any strategy C and decoder B with B·C = M_T,
    the T × T prefix matrix, node variances chosen so that the L2 sum is ≤ 2ρ) is, after
    scaling each node by its σ_n, a factorization ``M_T = B'·C'`` with Gaussian noise of
    variance ``‖C'‖²_{1→2}Δ²/(2ρ)``; its largest per-step variance is
    ``‖B'‖²_{2→∞}‖C'‖²_{1→2}Δ²/(2ρ) ≥ γ₂(M_T)²Δ²/(2ρ)``.  And ``γ₂(A) ≥ ‖A‖_*/√(mn)`` for
    an m × n matrix (trace-norm bound), where the singular values of M_T are
    ``1/(2 sin((2k−1)π/(4T+2)))``, k = 1..T.  Every tree, Elders, square-root and BLT
    counter with Gaussian noise is such a plan, so none beats this bound.

    The sum is taken in float64 (pairwise summation of positive terms, each within a few ulp, so
    the relative error is below ``(log₂T + 8)·2⁻⁵²`` < 10⁻¹³) and lowered by 10⁻¹² relative
    before squaring: the value is rounded down.

    Parameters
    ----------
    rho
        ρ > 0 (exact).
    horizon
        T, an integer in ``[1, 2^24]``.
    sensitivity
        Δ > 0 (exact; 1 for bit streams).

    References
    ----------
    .. [1] J. Matoušek, A. Nikolov, K. Talwar. "Factorization norms and hereditary
       discrepancy." IMRN 2020 (γ₂ of the prefix matrix, the trace-norm bound).
    """
    import numpy as np

    from dpref.validation import check_int_range, check_rho

    r = check_rho("rho", rho)
    t = check_int_range("horizon", horizon, 1, MAX_FACTORIZATION_BOUND_HORIZON)
    delta = check_fraction("sensitivity", sensitivity)
    if delta <= 0:
        raise ParameterError(f"sensitivity={fmt(sensitivity)}: must be > 0")
    k = np.arange(1, t + 1, dtype=np.float64)
    total = float(np.sum(0.5 / np.sin((2 * k - 1) * (np.pi / (4 * t + 2)))))
    gamma2 = floor_float(Fraction(total) * (1 - Fraction(1, 10**12)) / t)
    exact = Fraction(gamma2) ** 2 * delta**2 / (2 * r) * (1 - Fraction(1, 10**12))
    if exact > Fraction(sys.float_info.max):
        raise ParameterError(
            f"sensitivity={fmt(sensitivity)}: with rho={fmt(rho)} the bound γ₂²Δ²/(2ρ) "
            "exceeds the largest float"
        )
    value = floor_float(exact)
    return FactorizationLowerBound(value, gamma2, t, r, delta)
