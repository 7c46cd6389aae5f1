"""Noise for linear plans: Laplace and Gaussian, continuous and exact discrete, injected.

All randomness comes from a :class:`numpy.random.Generator` (NEP 19); dpref never
touches global random state.  Node noise is drawn in the plan's canonical node
order (docs/spec.md §0), one draw per node, so a seed fixes every node's noise.

* **Continuous Laplace** ``Lap(b)``: node ``n`` gets ``b_n · L_n`` where ``L_n`` are
  standard Laplace draws ``rng.laplace(0, 1)`` in canonical order (fast; note the
  floating-point weakness of textbook Laplace samplers, Mironov 2012).
* **Exact discrete Laplace** ``DLap(b)`` with rational scale ``b = t/s``:
  ``P[Z = z] ∝ exp(−|z|/b)`` on the integers, sampled exactly (no floating point)
  with Algorithm 2 of Canonne, Kamath and Steinke (2020) from the Generator's
  uniform integers.
* **Continuous Gaussian** ``N(0, σ²)``: node ``n`` gets ``σ_n · G_n`` where ``G_n`` are
  standard normal draws ``rng.standard_normal`` in canonical order and ``σ_n`` is the
  exact rational variance's square root rounded up to a float.
* **Exact discrete Gaussian** ``N_Z(0, σ²)`` with rational ``σ²``:
  ``P[Z = z] ∝ exp(−z²/(2σ²))`` on the integers, sampled exactly by rejection from the
  exact discrete Laplace (Algorithm 3 of Canonne, Kamath and Steinke 2020).
* **Injected noise**: an explicit array, in canonical node order, of the noise
  values themselves (already scaled).

References
----------
.. [1] C. Canonne, G. Kamath, T. Steinke. "The Discrete Gaussian for Differential
   Privacy." NeurIPS 2020, Algorithms 1–3.
.. [2] I. Mironov. "On Significance of the Least Significant Bits for Differential
   Privacy." CCS 2012.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from fractions import Fraction
from typing import Any, Literal, TypeAlias

import numpy as np
import numpy.typing as npt

from dpref.errors import DprefTypeError, ParameterError
from dpref.validation import ceil_float, fmt

__all__ = [
    "NOISE_KINDS",
    "NoiseFamily",
    "NoiseKind",
    "RngLike",
    "bernoulli_exp_neg",
    "discrete_gaussian",
    "discrete_gaussian_variance",
    "discrete_laplace",
    "discrete_laplace_variance",
    "laplace_variance",
    "make_rng",
    "noise_family",
    "observe_discrete_draws",
    "standard_laplace",
    "standard_normal",
    "uniform_below",
]

NoiseKind = Literal["laplace", "discrete", "gaussian", "discrete_gaussian"]
"""A node-noise distribution: ``"laplace"`` and ``"discrete"`` (exact discrete Laplace) for
pure ε-DP, ``"gaussian"`` and ``"discrete_gaussian"`` (exact) for ρ-zCDP."""
NoiseFamily = Literal["laplace", "gaussian"]
"""The accounting a noise kind belongs to: L1 (pure ε) or L2 (ρ-zCDP)."""
NOISE_KINDS: tuple[NoiseKind, ...] = ("laplace", "discrete", "gaussian", "discrete_gaussian")
"""Every accepted noise kind, in the order error messages list them."""
RngLike: TypeAlias = "np.random.Generator | int | np.integer[Any] | None"
"""What ``rng=`` accepts (NEP 19).  A string, so that defining it does not import
numpy.random (~25 ms) with ``import dpref``; the first draw does."""

_INT64_SAFE = 1 << 62

BernoulliExp: TypeAlias = "Callable[[Any, Fraction], bool]"
"""A source of ``Bernoulli(exp(−γ))`` coins (:func:`bernoulli_exp_neg`, or the symbolic
oracle with which :mod:`dpref.verify.samplers` computes a sampler's exact law)."""

DrawObserver: TypeAlias = "Callable[[NoiseKind, Fraction, npt.NDArray[np.float64]], None]"
"""Called with a noise kind, its exact parameter and the values just drawn."""
_OBSERVERS: list[DrawObserver] = []


@contextmanager
def observe_discrete_draws(
    observer: DrawObserver,
) -> Iterator[None]:
    """Within the block, call ``observer(kind, parameter, values)`` at each call of
    :func:`discrete_laplace` (``"discrete"``, the scale) and :func:`discrete_gaussian`
    (``"discrete_gaussian"``, σ²), with the values it drew (a copy), before it returns.

    ``dpref verify`` uses it to see the exact parameter of every discrete node draw, to
    count the draws per node and to follow each draw to its node (a fresh draw per node,
    per run); the draws themselves are unchanged.
    """
    if not callable(observer):
        raise DprefTypeError(f"observer={fmt(observer)}: must be callable")
    _OBSERVERS.append(observer)
    try:
        yield
    finally:
        _OBSERVERS.remove(observer)


def make_rng(rng: object, name: str = "rng") -> np.random.Generator:
    """NEP 19: accept a Generator, an int seed or None (fresh entropy)."""
    if isinstance(rng, np.random.Generator):
        return rng
    if rng is None:
        return np.random.default_rng()
    if isinstance(rng, bool | np.bool_ | np.timedelta64):  # numpy calls timedelta64 an integer
        raise DprefTypeError(f"{name}={fmt(rng)}: must be a numpy Generator, an int seed or None")
    if isinstance(rng, int | np.integer):
        if int(rng) < 0:
            raise ParameterError(f"{name}={fmt(rng)}: a seed must be >= 0")
        return np.random.default_rng(int(rng))
    raise DprefTypeError(f"{name}={fmt(rng)}: must be a numpy Generator, an int seed or None")


def standard_laplace(
    rng: np.random.Generator, size: int | tuple[int, ...]
) -> npt.NDArray[np.float64]:
    """Standard Laplace draws (scale 1), in C order: the canonical draw of node noise."""
    return rng.laplace(0.0, 1.0, size)


def laplace_variance(scale: Fraction) -> Fraction:
    """Variance of ``Lap(b)``: ``2 b²`` (exact)."""
    return 2 * scale * scale


def discrete_laplace_variance(scale: Fraction) -> float:
    """Variance of ``DLap(b)``: ``2 e^{−1/b} / (1 − e^{−1/b})²`` (not rational)."""
    q = float(np.exp(-1.0 / float(scale)))
    return 2.0 * q / (1.0 - q) ** 2


def uniform_below(rng: np.random.Generator, n: int) -> int:
    """An exactly uniform integer in ``[0, n)`` for any positive Python int ``n``."""
    if n <= 0:
        raise ParameterError(f"n={n}: must be > 0")
    if n <= _INT64_SAFE:
        return int(rng.integers(0, n))
    bits = n.bit_length()
    words = (bits + 63) // 64
    while True:  # rejection sampling on whole 64-bit words: exact
        raw = rng.bit_generator.random_raw(words)
        value = 0
        for w in np.atleast_1d(raw):
            value = (value << 64) | int(w)
        value >>= words * 64 - bits
        if value < n:
            return value


def _bernoulli(rng: np.random.Generator, num: int, den: int) -> bool:
    """Bernoulli(num/den), exactly."""
    return uniform_below(rng, den) < num


def bernoulli_exp_neg(rng: np.random.Generator, gamma: Fraction) -> bool:
    """Bernoulli(exp(−γ)) for rational γ ≥ 0, exactly (CKS 2020, Algorithm 1)."""
    if gamma < 0:
        raise ParameterError(f"gamma={gamma}: must be >= 0")
    while gamma > 1:
        if not bernoulli_exp_neg(rng, Fraction(1)):
            return False
        gamma -= 1
    k = 1
    while _bernoulli(rng, gamma.numerator, gamma.denominator * k):
        k += 1
    return k % 2 == 1


def _discrete_laplace_one(
    rng: np.random.Generator, s: int, t: int, bexp: BernoulliExp | None = None
) -> int:
    """One draw of DLap(t/s): CKS 2020 Algorithm 2 (``bexp``: the Bernoulli(exp(−γ))
    coins, :func:`bernoulli_exp_neg` unless given; :mod:`dpref.verify.samplers` passes an
    exact symbolic one)."""
    coin = bernoulli_exp_neg if bexp is None else bexp
    while True:
        y = _discrete_laplace_attempt(rng, s, t, coin)
        if y is not None:
            return y


def _discrete_laplace_attempt(
    rng: np.random.Generator, s: int, t: int, bexp: BernoulliExp
) -> int | None:
    """One pass of the loop of CKS 2020 Algorithm 2: a draw, or None (rejected: retry)."""
    u = uniform_below(rng, t)
    if not bexp(rng, Fraction(u, t)):
        return None
    v = 0
    while bexp(rng, Fraction(1)):
        v += 1
    y = (u + t * v) // s
    negative = _bernoulli(rng, 1, 2)
    if negative and y == 0:
        return None
    return -y if negative else y


def discrete_laplace(
    rng: np.random.Generator, scale: Fraction, size: int
) -> npt.NDArray[np.float64]:
    """``size`` exact draws of the discrete Laplace ``DLap(scale)`` (integer-valued).

    ``P[Z = z] = (1 − q)/(1 + q) · q^{|z|}`` with ``q = exp(−1/scale)``.  With
    sensitivity Δ (an integer) and ``scale = Δ/ε'``, adding ``DLap(scale)`` is
    exactly ε'-DP.  Values are returned as float64 (exact for |z| < 2⁵³).
    """
    if not isinstance(scale, Fraction) or scale <= 0:
        raise ParameterError(f"scale={fmt(scale)}: must be a positive Fraction")
    s, t = scale.denominator, scale.numerator  # scale = t/s
    out = np.empty(size, dtype=np.float64)
    for i in range(size):
        out[i] = _discrete_laplace_one(rng, s, t)
    for observe in _OBSERVERS:
        observe("discrete", scale, out.copy())
    return out


def noise_family(kind: NoiseKind) -> NoiseFamily:
    """``"gaussian"`` for the Gaussian kinds, ``"laplace"`` for the Laplace kinds."""
    return "gaussian" if kind in ("gaussian", "discrete_gaussian") else "laplace"


def standard_normal(
    rng: np.random.Generator, size: int | tuple[int, ...]
) -> npt.NDArray[np.float64]:
    """Standard normal draws, in C order: the canonical draw of Gaussian node noise.

    Node n then gets ``σ_n · G_n`` with ``σ_n`` the exact variance's square root
    rounded up to a float (:func:`dpref.validation.ceil_sqrt_float`).
    """
    return rng.standard_normal(size)


def _check_size(size: Any) -> int:
    if isinstance(size, bool | np.bool_) or not isinstance(size, int | np.integer):
        raise DprefTypeError(f"size={fmt(size)}: must be an int")
    if int(size) < 0:
        raise ParameterError(f"size={fmt(size)}: must be >= 0")
    return int(size)


def _discrete_gaussian_one(
    rng: np.random.Generator, sigma2: Fraction, t: int, bexp: BernoulliExp | None = None
) -> int:
    """One draw of N_Z(0, σ²): CKS 2020 Algorithm 3 (``t = ⌊σ⌋ + 1``; ``bexp`` as for
    :func:`_discrete_laplace_one`).

    Propose ``Y ~ DLap(t)`` and accept with probability
    ``exp(−(|Y| − σ²/t)²/(2σ²))``; the accepted Y has law ``∝ exp(−Y²/(2σ²))``.
    """
    coin = bernoulli_exp_neg if bexp is None else bexp
    while True:
        y = _discrete_laplace_one(rng, 1, t, coin)
        if _discrete_gaussian_accept(rng, sigma2, t, y, coin):
            return y


def _discrete_gaussian_accept(
    rng: np.random.Generator, sigma2: Fraction, t: int, y: int, bexp: BernoulliExp
) -> bool:
    """The acceptance test of CKS 2020 Algorithm 3 for a proposal ``y ~ DLap(t)``:
    ``Bernoulli(exp(−(|y| − σ²/t)²/(2σ²)))``."""
    d = abs(y) - sigma2 / t
    two_s2 = 2 * sigma2
    return bexp(rng, d * d / two_s2)


def discrete_gaussian(
    rng: np.random.Generator, sigma2: Fraction, size: int
) -> npt.NDArray[np.float64]:
    """``size`` exact draws of the discrete Gaussian ``N_Z(0, σ²)`` (integer-valued).

    ``P[Z = z] = exp(−z²/(2σ²)) / Σ_{y∈ℤ} exp(−y²/(2σ²))`` for a rational ``σ² > 0``.
    Sampled with no floating point from the Generator's uniform integers: Algorithm 3
    of Canonne, Kamath and Steinke (2020), rejection from the exact discrete Laplace of
    integer scale ``t = ⌊σ⌋ + 1`` (``⌊√(p/q)⌋ = isqrt(⌊p/q⌋)``), each proposal accepted
    with an exact ``Bernoulli(exp(−γ))``.  With an integer-valued query of sensitivity
    Δ, adding it is ``Δ²/(2σ²)``-zCDP (CKS 2020, Theorem 4), as for ``N(0, σ²)``.
    Values are returned as float64 (exact for |z| < 2⁵³).  The arguments are checked
    before any draw (a bad one leaves ``rng`` untouched).
    """
    if not isinstance(sigma2, Fraction) or sigma2 <= 0:
        raise ParameterError(f"sigma2={fmt(sigma2)}: must be a positive Fraction")
    n = _check_size(size)
    t = math.isqrt(sigma2.numerator // sigma2.denominator) + 1
    out = np.empty(n, dtype=np.float64)
    for i in range(n):
        out[i] = _discrete_gaussian_one(rng, sigma2, t)
    for observe in _OBSERVERS:
        observe("discrete_gaussian", sigma2, out.copy())
    return out


def discrete_gaussian_variance(sigma2: Fraction) -> float:
    """``Var N_Z(0, σ²)``, a float that is never below the true variance (rigorous).

    The variance ``Σ z² e^{−z²/(2σ²)} / Σ e^{−z²/(2σ²)}`` is irrational; it is enclosed
    in an interval with mpmath interval arithmetic (100 bits) and the upper end is
    rounded up to a float:

    * ``σ² ≤ 1/1600``: the smallest positive float (``Var ≤ 2q(1+q)/(1−q)³ < 3e^{−800}``
      with ``q = e^{−1/(2σ²)}``);
    * ``σ² < 1``: the two series directly, ``|z| ≤ K`` with ``K = 40`` (σ < 1 puts the
      first omitted term below ``e^{−800}``), each tail bounded by a geometric series of
      ratio ``((K+2)/(K+1))² e^{−(2K+3)/(2σ²)}`` started at the first omitted term;
    * ``σ² ≥ 1``: the Poisson-summation (dual) form
      ``Var = σ²(1 − 4π²σ²·N/D)``, ``N = 2Σ_{k≥1} k² q^{k²}``, ``D = 1 + 2Σ_{k≥1} q^{k²}``,
      ``q = e^{−2π²σ²} ≤ e^{−19.7}``; with ``q^{k²} ≤ q^k`` the enclosure
      ``2q ≤ N ≤ 2q(1+q)/(1−q)³`` and ``1 ≤ D ≤ 1 + 2q/(1−q)`` is tight to ``O(q²)``
      relative, far below a float's resolution.

    Always ``< σ²`` (CKS 2020, Corollary 9).
    """
    if not isinstance(sigma2, Fraction) or sigma2 <= 0:
        raise ParameterError(f"sigma2={fmt(sigma2)}: must be a positive Fraction")
    if sigma2 * 1600 <= 1:
        # 1/(2σ²) ≥ 800: with q = e^{−1/(2σ²)}, Var ≤ 2Σ_{z≥1} z² q^{z²} ≤ 2q(1+q)/(1−q)³
        # < 3e^{−800} < 2^{−1074}; mpmath's interval exp of −1/(2σ²) takes hours at σ² = 2^−40
        return math.ulp(0.0)
    import mpmath  # type: ignore[import-untyped]

    iv = mpmath.ctx_iv.MPIntervalContext()  # a private context: the global one is left alone
    iv.prec = 100
    s2 = iv.mpf(sigma2.numerator) / iv.mpf(sigma2.denominator)
    if sigma2 < 1:
        K = 40
        num = iv.mpf(0)
        den = iv.mpf(1)
        for z in range(1, K + 1):
            e = iv.exp(-iv.mpf(z * z) / (2 * s2))
            num += 2 * z * z * e
            den += 2 * e
        first = iv.exp(-iv.mpf((K + 1) ** 2) / (2 * s2))
        ratio = (iv.mpf(K + 2) / (K + 1)) ** 2 * iv.exp(-iv.mpf(2 * K + 3) / (2 * s2))
        tail = 2 * (K + 1) ** 2 * first / (1 - ratio)
        var = num / den + iv.mpf([0, tail.b])
    else:
        q = iv.exp(-2 * iv.pi**2 * s2)
        n_lo, n_hi = 2 * q, 2 * q * (1 + q) / (1 - q) ** 3
        d_hi = 1 + 2 * q / (1 - q)
        n = iv.mpf([n_lo.a, n_hi.b])
        d = iv.mpf([1, d_hi.b])
        var = s2 * (1 - 4 * iv.pi**2 * s2 * n / d)
    sign, man, exp, _ = var._mpi_[1]  # the upper end, a raw mpf tuple (exact)
    upper = Fraction(int(man)) * Fraction(2) ** int(exp) * (-1 if sign else 1)
    return ceil_float(min(upper, sigma2))
