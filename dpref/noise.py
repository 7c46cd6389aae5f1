"""Noise for linear plans: continuous Laplace, exact discrete Laplace, injected noise.

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
* **Injected noise**: an explicit array, in canonical node order, of the noise
  values themselves (already scaled).

References
----------
.. [1] C. Canonne, G. Kamath, T. Steinke. "The Discrete Gaussian for Differential
   Privacy." NeurIPS 2020, Algorithm 2.
.. [2] I. Mironov. "On Significance of the Least Significant Bits for Differential
   Privacy." CCS 2012.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any, Literal, TypeAlias

import numpy as np
import numpy.typing as npt

from dpref.errors import DprefTypeError, ParameterError
from dpref.validation import fmt

__all__ = [
    "NoiseKind",
    "RngLike",
    "bernoulli_exp_neg",
    "discrete_laplace",
    "discrete_laplace_variance",
    "laplace_variance",
    "make_rng",
    "standard_laplace",
    "uniform_below",
]

NoiseKind = Literal["laplace", "discrete"]
RngLike: TypeAlias = "np.random.Generator | int | np.integer[Any] | None"
"""What ``rng=`` accepts (NEP 19).  A string, so that defining it does not import
numpy.random (~25 ms) with ``import dpref``; the first draw does."""

_INT64_SAFE = 1 << 62


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


def _discrete_laplace_one(rng: np.random.Generator, s: int, t: int) -> int:
    """One draw of DLap(t/s): CKS 2020 Algorithm 2."""
    while True:
        u = uniform_below(rng, t)
        if not bernoulli_exp_neg(rng, Fraction(u, t)):
            continue
        v = 0
        while bernoulli_exp_neg(rng, Fraction(1)):
            v += 1
        y = (u + t * v) // s
        negative = _bernoulli(rng, 1, 2)
        if negative and y == 0:
            continue
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
    return out
