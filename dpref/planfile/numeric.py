"""Float arithmetic for plan files at large T: exact sums of products of floats, the FFT
convolution with an a-priori error bound, and power-series division (the derived decoder).

Every float of a plan file is taken at its exact binary value.  Sums of squares and dot
products are computed exactly and rounded once (:func:`exact_dot`: Dekker's error-free
product, then :func:`math.fsum`, which rounds the exact sum of its inputs correctly).  The
T = 2²⁰ convolution ``b ∗ c`` is computed by a power-of-two real FFT; its error is bounded
a priori by :func:`convolution_error_bound` (Higham, *Accuracy and Stability of Numerical
Algorithms*, 2nd ed., Thm 24.2, propagated through the two forward transforms, the
pointwise product and the inverse), and every entry the bound cannot decide is recomputed
exactly.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]

U64 = 2.0**-53
"""The unit roundoff of float64."""
U32 = 2.0**-24
"""The unit roundoff of float32."""
UNIT_ROUNDOFF = {"float64": U64, "float32": U32}
"""Unit roundoff per declared precision."""
_SPLIT = 134217729.0  # 2^27 + 1, Veltkamp's splitting constant for float64
_SAFE_LO = 2.0**-480
"""Nonzero factors below this in magnitude are handled exactly by Fractions (their error
term could underflow)."""
_SAFE_HI = 2.0**480
"""Factors above this are handled exactly by Fractions (the split could overflow)."""
TWIDDLE_ERROR = 2 * U64
"""μ, the assumed error of scipy's FFT twiddle factors (they are computed to about one
ulp)."""
FFT_SAFETY = 2.0
"""Factor applied to Higham's radix-2 constant for pocketfft's radix-4 passes and its
real-input transforms."""


def fft_size(n: int) -> int:
    """The smallest power of two ≥ n (the error bound is stated for power-of-two FFTs;
    the scaling by 1/N of the inverse is then exact)."""
    return 1 << max(0, (n - 1).bit_length())


def two_product(a: FloatArray, b: FloatArray) -> tuple[FloatArray, FloatArray]:
    """``(p, e)`` with ``p + e = a·b`` exactly (Dekker), valid where every factor lies in
    [2⁻⁴⁸⁰, 2⁴⁸⁰] or is 0 (callers route the rest through Fractions)."""
    p = a * b
    t = _SPLIT * a
    ah = t - (t - a)
    al = a - ah
    t = _SPLIT * b
    bh = t - (t - b)
    bl = b - bh
    e = ((ah * bh - p) + ah * bl + al * bh) + al * bl
    return p, e


def _unsafe(x: FloatArray) -> npt.NDArray[np.bool_]:
    ax = np.abs(x)
    out: npt.NDArray[np.bool_] = ((ax < _SAFE_LO) & (ax != 0)) | (ax > _SAFE_HI)
    return out


def exact_dot(a: FloatArray, b: FloatArray, extra: float = 0.0) -> float:
    """``Σ a_j b_j + extra`` computed exactly and rounded once to the nearest float."""
    bad = _unsafe(a) | _unsafe(b)
    p, e = two_product(np.where(bad, 0.0, a), np.where(bad, 0.0, b))
    if not bad.any():
        return math.fsum([math.fsum(np.concatenate([p, e]).tolist()), extra])
    rest = sum(
        (Fraction(float(x)) * Fraction(float(y)) for x, y in zip(a[bad], b[bad], strict=True)),
        Fraction(0),
    )
    return float(_exact_sum(p, e) + rest + Fraction(extra))


def _exact_sum(p: FloatArray, e: FloatArray) -> Fraction:
    """The exact sum of the floats in p and e (as a Fraction)."""
    out = Fraction(0)
    for v in np.concatenate([p, e]).tolist():
        if v:
            out += Fraction(v)
    return out


def exact_square_sum(x: FloatArray) -> Fraction:
    """``Σ x_k²`` exactly."""
    bad = _unsafe(x)
    p, e = two_product(np.where(bad, 0.0, x), np.where(bad, 0.0, x))
    total = _exact_sum(p, e)
    for v in x[bad].tolist():
        total += Fraction(v) ** 2
    return total


def square_sum_bounds(x: FloatArray) -> tuple[float, float]:
    """``(s, upper)``: s the nearest float to the exact ``Σ x_k²`` and ``upper ≥`` it (the
    next float up), without Fractions unless some entry is outside [2⁻⁴⁸⁰, 2⁴⁸⁰]."""
    return abs_sum_bounds(x, squares=True)


def abs_sum_bounds(x: FloatArray, squares: bool = False) -> tuple[float, float]:
    """``(s, upper)`` for ``Σ|x_k|`` (or ``Σ x_k²``): the nearest float to the exact sum and
    the next float up (math.fsum rounds the exact sum of its inputs correctly)."""
    if not squares:
        s = math.fsum(np.abs(x).tolist())
        return s, float(np.nextafter(s, np.inf))
    bad = _unsafe(x)
    if bad.any():
        s = float(exact_square_sum(x))
        return s, float(np.nextafter(s, np.inf))
    p, e = two_product(x, x)
    s = math.fsum(np.concatenate([p, e]).tolist())
    return s, float(np.nextafter(s, np.inf))


def weighted_square_mean(b: FloatArray) -> float:
    """``(1/T) Σ_k (T − k) b_k²`` (the mean over t of ``Σ_{k<t} b_k²``), to a few ulp."""
    T = b.size
    w = np.arange(T, 0, -1, dtype=np.float64)
    p, e = two_product(b, b)
    return math.fsum(np.concatenate([p * w, e * w]).tolist()) / T


def convolve(a: FloatArray, b: FloatArray, n: int) -> FloatArray:
    """The first n coefficients of ``a ∗ b`` by a power-of-two real FFT (scipy)."""
    from scipy import fft

    size = fft_size(min(a.size, n) + min(b.size, n) - 1)
    fa = fft.rfft(a[:n], size)
    fa *= fft.rfft(b[:n], size)
    out: FloatArray = np.ascontiguousarray(fft.irfft(fa, size)[:n])
    return out


def _gamma(k: int) -> float:
    """Higham's γ_k = ku/(1 − ku) for float64."""
    return k * U64 / (1 - k * U64)


def convolution_error_bound(a: FloatArray, b: FloatArray, n: int) -> float:
    """An upper bound on ``max_k |fl(a ∗ b)_k − (a ∗ b)_k|`` for :func:`convolve`.

    With L = log₂N, η = μ + γ₄(√2 + μ) and θ = Lη/(1 − Lη) (Higham, Thm 24.2: a computed
    transform of x is within θ‖F x‖₂ of the exact one), the two forward transforms, the
    pointwise complex product (error ≤ √2γ₂) and the inverse (scaling by 1/N exact) give

        ‖fl(a∗b) − a∗b‖_∞ ≤ ‖·‖₂ ≤ (3θ + 3γ₂)·max(‖a‖₂‖b‖₁, ‖a‖₁‖b‖₂)·(1 + 10⁻³) + θ²√N‖a‖₂‖b‖₂,

    (using ‖F x‖_∞ ≤ ‖x‖₁ and ‖F x‖₂ = √N‖x‖₂); θ is taken :data:`FFT_SAFETY` times
    larger for pocketfft's radix-4 passes.  The norms are computed in float and raised by
    a relative 10⁻¹², ample for their own rounding.
    """
    aa, bb = a[:n], b[:n]
    size = fft_size(min(aa.size, n) + min(bb.size, n) - 1)
    L = max(1, int(math.log2(size)))
    mu = TWIDDLE_ERROR
    eta = mu + _gamma(4) * (math.sqrt(2) + mu)
    theta = FFT_SAFETY * L * eta / (1 - L * eta)
    a2, b2 = float(np.linalg.norm(aa)), float(np.linalg.norm(bb))
    a1, b1 = float(np.abs(aa).sum()), float(np.abs(bb).sum())
    m = max(a2 * b1, a1 * b2) * (1 + 1e-12)
    bound = (3 * theta + 3 * _gamma(2)) * m * (1 + 1e-3) + theta**2 * math.sqrt(size) * a2 * b2
    return float(bound * (1 + 1e-12) + 2.0**-1000)


def series_inverse(c: FloatArray, n: int) -> FloatArray:
    """The first n coefficients of ``1/c(x)`` (c₀ ≠ 0) by Newton's iteration
    ``g ← g + g(1 − c g) mod x^{2m}`` with FFT products: O(n log n)."""
    g = np.array([1.0 / c[0]])
    m = 1
    while m < n:
        m2 = min(2 * m, n)
        e = -convolve(c[:m2], g, m2)
        e[0] += 1.0
        g = np.concatenate([g, np.zeros(m2 - m)]) + convolve(g, e, m2)
        m = m2
    return g[:n]


def target_array(n: int, window: int | None) -> FloatArray:
    """q_k: 1 for k < W (prefix sums: every k), else 0."""
    q = np.ones(n, dtype=np.float64)
    if window is not None and window < n:
        q[window:] = 0.0
    return q


def derive_decoder(c: FloatArray, window: int | None, refinements: int = 2) -> FloatArray:
    """The decoder b with ``b ∗ c ≡ q mod x^T`` (q the target's coefficients): ``q/c`` by
    :func:`series_inverse`, then ``refinements`` steps of iterative refinement
    ``b ← b + c⁻¹ ∗ (q − c ∗ b)`` (the running sum that multiplies by q amplifies the
    inverse's rounding; refinement brings b to the accuracy of one FFT product)."""
    n = c.size
    g = series_inverse(c, n)
    q = target_array(n, window)
    b = np.cumsum(g)
    if window is not None and window < n:
        b[window:] -= np.cumsum(g)[: n - window]
    for _ in range(refinements):
        r = q - convolve(c, b, n)
        b = b + convolve(g, r, n)
    return b


def derive_decoder_exact(c: list[Fraction], window: int | None) -> list[Fraction]:
    """The decoder ``b = q/c mod x^T`` exactly (O(T²) Fractions: small T only)."""
    n = len(c)
    c0 = c[0]
    b: list[Fraction] = []
    for k in range(n):
        qk = Fraction(1) if window is None or k < window else Fraction(0)
        s = sum((c[j] * b[k - j] for j in range(1, k + 1) if c[j]), Fraction(0))
        b.append((qk - s) / c0)
    return b
