"""The square-root factorization (:class:`SqrtFactorization`): its coefficients, the
column norms S₁ and S₂ (exact, and rigorous bounds at large T), the online counter; see
:mod:`dpref.mechanisms.factorization`."""

from __future__ import annotations

import math
import threading
from fractions import Fraction
from functools import lru_cache
from typing import Any

import numpy as np
import numpy.typing as npt

from dpref.errors import ParameterError
from dpref.mechanisms.base import (
    EXACT,
    Example,
    OnlineCounter,
)
from dpref.mechanisms.factorization.common import (
    ToeplitzFactorization,
    _fft_convolve,
    _fft_size,
    _round_up,
)
from dpref.strategy import ScaledSeq
from dpref.validation import ceil_float

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

SQRT_EXACT_S2 = 2**14
"""Up to this T, SqrtFactorization's ``S₂ = Σ_{k<T} c_k²`` is exact (an integer Horner sum
``Σ binom(2k,k)² 16^{T−1−k}`` over ``16^{T−1}``); above it, the rigorous upper bound of
:func:`sqrt_s2_upper` (then the L2 privacy sum is ≤ 2ρ, within a relative 10⁻¹⁹ up to
:data:`SQRT_FIXED_STEPS`)."""
SQRT_EXACT_S1 = 2**16
"""Up to this T, ``S₁ = Σ_{k<T} c_k = (2T−1)c_{T−1}`` is exact; above it a rigorous upper
bound (the L1 privacy sum is then ≤ ε)."""
SQRT_FIXED_STEPS = 2**20
"""Up to this T (``MAX_VARIANCE_STEPS``) the bounds above the exact ranges come from the
fixed-point sums of :func:`sqrt_fixed_state` (relative error < 10⁻¹⁸); beyond it, from the
one at this T plus an analytic tail."""
SQRT_FIXED_BITS = 128
"""Fractional bits P of the fixed-point upper bounds ``u_k ≥ 2^P c_k²``."""
_CHECKPOINT = 2**12
"""Steps between the cached states of :func:`sqrt_fixed_state`."""
_BLOCK = 256
"""Steps per block of :meth:`SqrtFactorization.variance_upper` (see there)."""


def sqrt_ratio(k: Any) -> tuple[Any, Any]:
    """``c_k/c_{k−1} = (2k−1)/(2k)`` as ``(numerator, denominator)``, for k ≥ 1.

    The one definition of the coefficients: the exact sequence (:func:`sqrt_coefficients`),
    the float ones (batch FFT, online blocks, :meth:`SqrtFactorization.variance_upper`)
    and the exact S₂ (:func:`_split_leaf`) all step by it.  Generic: ``k`` may be an int,
    a float array or a sympy symbol (proofs/factorization.py evaluates it symbolically)."""
    return 2 * k - 1, 2 * k


def sqrt_coefficients(horizon: int) -> ScaledSeq:
    """``c_k = binom(2k, k)/4^k`` for k < T, exactly, as ``binom(2k,k)/4^k`` (base 4): the
    numerators step by ``N_k = N_{k−1}·4p/q`` with ``p/q`` = :func:`sqrt_ratio` (an exact
    integer division: the quotient is ``binom(2k, k)``)."""
    nums = [1]
    b = 1
    for k in range(1, horizon):
        p, q = sqrt_ratio(k)
        b = b * 4 * p // q
        nums.append(b)
    return ScaledSeq(tuple(nums), 1, 4)


def _sqrt_float_coefficients(horizon: int) -> FloatArray:
    """c_k as floats: the cumulative product of :func:`sqrt_ratio` (noise only: not
    privacy-critical)."""
    p, q = sqrt_ratio(np.arange(1, horizon, dtype=np.float64))
    out = np.empty(horizon, dtype=np.float64)
    out[0] = 1.0
    np.cumprod(p / q, out=out[1:])
    return out


def sqrt_s1_closed(horizon: Any, ops: Any = EXACT, binomial: Any = math.comb) -> Any:
    """``S₁(T) = Σ_{k<T} c_k = (2T−1)·binom(2T−2, T−1)/4^{T−1}``, exactly (n = T − 1).

    Generic over ``ops`` (:data:`~dpref.mechanisms.base.EXACT`: Fractions; the proofs'
    sympy twin with ``binomial=sympy.binomial``: a symbolic T)."""
    n = horizon - 1
    return (2 * n + 1) * binomial(2 * n, n) * ops.number(Fraction(1, 4)) ** n


def sqrt_s1_bound(n: Any, ns: Any) -> Any:
    """``(2n+1)/√(π(n+1/4))`` ≥ ``S₁(n+1)`` (``c_n² < 1/(π(n+1/4))``): evaluated with an
    mpmath context ``ns`` by :func:`sqrt_s1`, and with sympy by the proofs."""
    return (2 * n + 1) / ns.sqrt(ns.pi * (ns.mpf(n) + ns.mpf(1) / 4))


@lru_cache(maxsize=32)
def sqrt_s1(horizon: int) -> Fraction:
    """``S₁(T) = Σ_{k<T} c_k``: exactly :func:`sqrt_s1_closed` up to :data:`SQRT_EXACT_S1`;
    up to :data:`SQRT_FIXED_STEPS` the rigorous upper bound ``(2T−1)·⌈√u_{T−1}⌉/2^{P/2}``
    (``u_{T−1} ≥ 2^P c_{T−1}²`` from :func:`sqrt_fixed_state`; above S₁ by less than a
    relative 10⁻¹⁵); beyond, :func:`sqrt_s1_bound` (n = T−1) evaluated at 60 digits,
    widened by a relative 10⁻⁴⁰ and rounded up."""
    if horizon <= SQRT_EXACT_S1:
        value: Fraction = sqrt_s1_closed(horizon)
        return value
    if horizon <= SQRT_FIXED_STEPS:
        u, _ = sqrt_fixed_state(horizon - 1)
        root = math.isqrt(u - 1) + 1  # ⌈√u⌉ (u ≥ 2)
        return Fraction((2 * horizon - 1) * root, 1 << (SQRT_FIXED_BITS // 2))
    from dpref.rigorous import mp_context, mpf_fraction

    ctx = mp_context()
    return _round_up(mpf_fraction(sqrt_s1_bound(horizon - 1, ctx)) * (1 + Fraction(1, 10**40)))


def sqrt_fixed_step(u: Any, p: Any, q: Any) -> Any:
    """``⌊u·p/q⌋ + 1``: the step of the fixed-point bounds, with ``p/q = (c_k/c_{k−1})²``.

    It exceeds ``u·p/q`` (so ``u ≥ 2^P c_{k−1}²`` gives ``u' ≥ 2^P c_k²``) by at most 1
    (proofs/factorization.py: z3 over the integers).  Generic: ints and z3 terms."""
    return u * p // q + 1


def _fixed_run(
    u: int,
    s: int,
    start: int,
    stop: int,
    out: list[float] | None = None,
    scale: int = 1,
    den_bits: int = SQRT_FIXED_BITS,
) -> tuple[int, int]:
    """Advance ``(u_k, s_k)`` from k = ``start`` to ``stop`` by :func:`sqrt_fixed_step` with
    the squared :func:`sqrt_ratio`; with ``out``, append ``scale·s_k/2^den_bits`` for
    k = start+1 … stop (one correctly rounded ``int / int`` each)."""
    if stop <= start:
        return u, s
    p, q = sqrt_ratio(np.arange(start + 1, stop + 1, dtype=np.int64))
    step = sqrt_fixed_step
    if out is None:
        for a, b in zip((p * p).tolist(), (q * q).tolist(), strict=True):
            u = step(u, a, b)
            s += u
    else:
        append = out.append
        den = 1 << den_bits
        for a, b in zip((p * p).tolist(), (q * q).tolist(), strict=True):
            u = step(u, a, b)
            s += u
            append(scale * s / den)
    return u, s


_FIXED_STATES: list[tuple[int, int]] = [(1 << SQRT_FIXED_BITS, 1 << SQRT_FIXED_BITS)]
"""``(u_k, s_k)`` at k = 0, :data:`_CHECKPOINT`, 2·:data:`_CHECKPOINT`, … (grown on demand,
at most ``SQRT_FIXED_STEPS/_CHECKPOINT + 1`` = 257 entries of ~170 bits each)."""
_FIXED_LOCK = threading.Lock()


def sqrt_fixed_state(k: int) -> tuple[int, int]:
    """``(u_k, s_k)`` with ``u_0 = s_0 = 2^P`` (P = :data:`SQRT_FIXED_BITS`),
    ``u_k =`` :func:`sqrt_fixed_step` ``(u_{k−1}, (2k−1)², (2k)²)`` and ``s_k = Σ_{j≤k} u_j``.

    Rigorous: ``2^P c_k² ≤ u_k ≤ 2^P c_k² + k`` (induction on the step), so
    ``2^P S₂(k+1) ≤ s_k ≤ 2^P S₂(k+1) + k²``; at k < 2²⁰ the excess is below 2⁻⁸⁸ (S₂ ≥ 1).
    Exact integers, O(k) steps once per process: the states every :data:`_CHECKPOINT`
    steps are cached, so a later query costs at most that many steps."""
    if not 0 <= k <= SQRT_FIXED_STEPS:
        raise ParameterError(f"k={k}: the fixed-point sums run for 0 ≤ k ≤ {SQRT_FIXED_STEPS}")
    with _FIXED_LOCK:
        while (len(_FIXED_STATES) - 1) * _CHECKPOINT < k:
            last = (len(_FIXED_STATES) - 1) * _CHECKPOINT
            _FIXED_STATES.append(_fixed_run(*_FIXED_STATES[-1], last, last + _CHECKPOINT))
        base = k // _CHECKPOINT
        u, s = _FIXED_STATES[base]
    return _fixed_run(u, s, base * _CHECKPOINT, k)


def sqrt_fixed_sums(horizon: int, scale: int = 1, shift: int = 0) -> list[float]:
    """``scale·s_k/2^{P+shift}`` for k = 0 … T−1, each correctly rounded, in one pass from
    k = 0 (:func:`sqrt_fixed_state`: ``s_k/2^P`` is an upper bound of ``S₂(k+1)`` within
    ``k²/2^P``)."""
    bits = SQRT_FIXED_BITS + shift
    if bits < 0:
        scale, bits = scale << -bits, 0
    u, s = _FIXED_STATES[0]
    out = [scale * s / (1 << bits)]
    _fixed_run(u, s, 0, horizon - 1, out, scale, bits)
    return out


@lru_cache(maxsize=32)
def sqrt_s2(horizon: int) -> Fraction:
    """``S₂(T) = Σ_{k<T} c_k²``: exact up to :data:`SQRT_EXACT_S2` (binary splitting),
    else :func:`sqrt_s2_upper`."""
    if horizon <= SQRT_EXACT_S2:
        return _sqrt_s2_exact(horizon)
    return sqrt_s2_upper(horizon)


def _split_leaf(a: Any) -> tuple[Any, Any, Any]:
    """The leaf ``[a, a+1)`` of :func:`_split_sum`: ``(p_a, q_a, p_a)`` with
    ``p_a/q_a = c_a²/c_{a−1}²`` (:func:`sqrt_ratio` squared)."""
    p, q = sqrt_ratio(a)
    return p * p, q * q, p * p


def _split_merge(left: tuple[Any, Any, Any], right: tuple[Any, Any, Any]) -> tuple[Any, Any, Any]:
    """Join ``[a, m)`` and ``[m, b)``: ``(P₁P₂, Q₁Q₂, R₁Q₂ + P₁R₂)``."""
    p1, q1, r1 = left
    p2, q2, r2 = right
    return p1 * p2, q1 * q2, r1 * q2 + p1 * r2


def _split_mid(a: Any, b: Any) -> Any:
    """The split point ``⌊(a+b)/2⌋`` of :func:`_split_sum` (a shift: ints and z3 alike)."""
    return (a + b) >> 1


def _split_sum(a: int, b: int) -> tuple[int, int, int]:
    """Binary splitting of ``Σ_{k=a}^{b−1} Π_{j=a}^{k} p_j/q_j`` with ``p_j/q_j`` the ratio
    ``c_j²/c_{j−1}²``: ``(P, Q, R)`` with the sum ``R/Q`` and ``P/Q`` the whole product
    (proofs/factorization.py proves the leaf, the merge and the split point)."""
    if b - a == 1:
        return _split_leaf(a)
    m = _split_mid(a, b)
    return _split_merge(_split_sum(a, m), _split_sum(m, b))


def _sqrt_s2_exact(horizon: int) -> Fraction:
    """``S₂(T) = 1 + Σ_{k=1}^{T−1} c_k²`` exactly by binary splitting (equal to the integer
    Horner sum ``Σ binom(2k,k)² 16^{T−1−k}/16^{T−1}``; the tests compare both)."""
    if horizon == 1:
        return Fraction(1)
    _, q, r = _split_sum(1, horizon)
    top = 16 ** (horizon - 1)
    num, rem = divmod((q + r) * top, q)
    if rem:  # pragma: no cover - S₂·16^{T−1} is an integer
        raise AssertionError("S2 * 16^(T-1) is not an integer")
    return Fraction(num, top)


def sqrt_s2_tail(horizon: Any, start: Any, ns: Any) -> Any:
    """``(1/π)·ln((4T−3)/(4K−3))`` ≥ ``Σ_{k=K}^{T−1} c_k²`` (K = ``start``): evaluated with
    an mpmath context by :func:`sqrt_s2_upper`, and with sympy by the proofs."""
    four = ns.mpf(4)
    return ns.log((ns.mpf(horizon) * four - 3) / (ns.mpf(start) * four - 3)) / ns.pi


def sqrt_s2_upper(horizon: int) -> Fraction:
    """A rigorous upper bound on ``S₂(T)`` for T > :data:`SQRT_EXACT_S2`.

    Up to :data:`SQRT_FIXED_STEPS`: the fixed-point sum ``s_{T−1}`` of
    :func:`sqrt_fixed_state` rounded up to a multiple of 2⁻⁶⁴, above S₂(T) by less than
    ``2⁻⁶⁴ + T²/2^P`` (a relative 10⁻¹⁹).  Beyond, that bound at K = :data:`SQRT_FIXED_STEPS`
    plus the tail bound :func:`sqrt_s2_tail`, ``Σ_{k=K}^{T−1} c_k² < (1/π)·Σ 1/(k+1/4) ≤
    (1/π)·ln((T−3/4)/(K−3/4))``: ``c_k²(k+1/4)`` increases to 1/π (proofs/factorization.py),
    and ``1/(x+1/4)`` is decreasing, so each term is at most its integral over ``[k−1, k]``;
    evaluated at 60 digits, widened by a relative 10⁻⁴⁰ and rounded up to a multiple of
    2⁻⁶⁴, it exceeds S₂(T) by less than ``1/(πK) ≈ 3·10⁻⁷``.
    """
    if horizon <= SQRT_FIXED_STEPS:
        _, s = sqrt_fixed_state(horizon - 1)
        return _round_up(Fraction(s, 1 << SQRT_FIXED_BITS))
    from dpref.rigorous import mp_context, mpf_fraction

    K = SQRT_FIXED_STEPS
    head = sqrt_s2(K)
    tail = sqrt_s2_tail(horizon, K, mp_context())
    return _round_up(head + mpf_fraction(tail) * (1 + Fraction(1, 10**40)))


@lru_cache(maxsize=4)
def _sqrt_spectrum(horizon: int) -> tuple[int, npt.NDArray[np.complex128]]:
    """``(size, rfft(c, size))`` of the square-root coefficients (cached: one per T)."""
    from scipy import fft

    size = _fft_size(2 * horizon - 1)
    out = fft.rfft(_sqrt_float_coefficients(horizon), size)
    out.setflags(write=False)
    return size, out


class SqrtFactorization(ToeplitzFactorization):
    """The square-root factorization of the prefix matrix: ``C = B``, ``C·C = Q``.

    ``C`` is lower-triangular Toeplitz with ``c_k = binom(2k, k)/4^k`` (``1, 1/2, 3/8, …``,
    the coefficients of ``(1−x)^{−1/2}``).  Node n (row n of C) gets Laplace noise of
    scale ``S₁Δ/ε`` (``epsilon=``; ``S₁ = Σ_{k<T} c_k = (2T−1)c_{T−1}``) or Gaussian noise of
    variance ``S₂Δ²/(2ρ)`` (``rho=``; ``S₂ = Σ_{k<T} c_k²``).  The output at t is
    ``Σ_{n≤t} c_{t−n}(Cx + z)_n = c_t + (Cz)_t``, so ``Var(out_t) = v·Σ_{k<t} c_k²``.  At
    T = 2²⁰, ρ = 1/2, Δ = 1 the largest variance is ``S₂² ≈ 30.02``.  Batch release: one
    FFT convolution (O(T log T)).  Online: the noise part ``(Cz)_t`` of a block of future
    steps is computed by one FFT when the block is reached (blocks double: amortised
    O(log t) per step), with O(t) memory.

    Parameters
    ----------
    participations
        k: a user contributes at most k times (default 1); the noise is calibrated to the
        (k, b)-participation sensitivity (docs/factorization.md, "Participation").
    min_separation
        b: any two contributions of a user are at least b steps apart (default 1: none).

    References
    ----------
    .. [1] H. Fichtenberger, M. Henzinger, J. Upadhyay. "Constant Matters: Fine-grained
       Error Bound on Differentially Private Continual Observation." ICML 2023.
    .. [2] M. Henzinger, J. Upadhyay, S. Upadhyay. "Almost Tight Error Bounds on
       Differentially Private Continual Counting." SODA 2023.
    """

    name = "sqrt"
    examples = (Example(horizons=(1, 16)),)

    def strategy_exact(self, horizon: int) -> ScaledSeq:
        return sqrt_coefficients(horizon)

    def rounded_coefficients(self, horizon: int) -> tuple[FloatArray, int]:
        """:meth:`strategy_float`, the cumulative product of the rounded ratios
        (:func:`sqrt_ratio`): ≤ 2n roundings for ``c̃_n``; d = 1."""
        return self.strategy_float(horizon), 1

    def strategy_float(self, horizon: int) -> FloatArray:
        return _sqrt_float_coefficients(horizon)

    def decoder_exact(self, horizon: int) -> ScaledSeq:
        return sqrt_coefficients(horizon)

    def s1(self, horizon: Any, ops: Any = EXACT) -> Any:
        """:func:`sqrt_s1` (exact up to :data:`SQRT_EXACT_S1`, else a rigorous bound); with
        symbolic ``ops`` (the proofs), the exact :func:`sqrt_s1_closed` at a symbolic T."""
        if ops is EXACT:
            return sqrt_s1(horizon)
        return sqrt_s1_closed(horizon, ops, ops.binomial)

    def s2(self, horizon: Any, ops: Any = EXACT) -> Any:
        """:func:`sqrt_s2` (exact up to :data:`SQRT_EXACT_S2`, else a rigorous bound); with
        symbolic ``ops``, ``Σ_{k<T} c_k²`` of the coefficients :func:`sqrt_ratio` steps to
        (``ops.coefficient_square_sum``: the proofs prove the binary splitting equals it)."""
        if ops is EXACT:
            return sqrt_s2(horizon)
        return ops.coefficient_square_sum(sqrt_ratio, horizon)

    def _s1_exact(self, horizon: int) -> bool:
        return horizon <= SQRT_EXACT_S1

    def _s2_exact(self, horizon: int) -> bool:
        return horizon <= SQRT_EXACT_S2

    def combine(self, noise: FloatArray, horizon: int) -> FloatArray:
        """``(C z)_t``: one FFT convolution along the last axis (the spectrum of c is cached
        per T)."""
        spectrum = _sqrt_spectrum(horizon)
        return _fft_convolve(np.zeros(0), noise, horizon, spectrum)

    def online(self, rng: Any = None, noise: Any = None) -> OnlineCounter:
        return _SqrtOnline(self, rng, noise)

    def online_memory(self, horizon: int | None = None) -> int | None:
        """O(t): the node noise so far and the noise part of the current block (≤ 3T)."""
        T = self._t() if horizon is None else horizon
        return 3 * T

    def variance(self, horizon: int | None = None) -> FloatArray:
        """Per-step variance ``v·S₂(t)``, t = 1..T, for T ≤ ``MAX_VARIANCE_STEPS`` (v =
        :meth:`unit_variance`), without a Fraction per step: each float is the nearest to
        ``v′·s_{t−1}/2^P`` with ``s`` the fixed-point sums of :func:`sqrt_fixed_sums`
        (``2^P S₂(t) ≤ s_{t−1} ≤ 2^P S₂(t) + t²``) and v′ the nearest 128-bit mantissa to
        v: within half an ulp plus a relative 2⁻⁸⁷ of the exact value (the exact Fractions:
        :meth:`variance_exact`, T ≤ :data:`FACTORIZATION_PLAN_STEPS`).  Exact integers, one
        pass over T (about 0.3 s at T = 2²⁰ on an idle core)."""
        T = self._variance_horizon(horizon)
        v = self.unit_variance()
        shift = 128 - (v.numerator.bit_length() - v.denominator.bit_length())
        scale = round(v * Fraction(2) ** shift)  # v′ = scale·2^−shift: 128 significant bits
        return np.array(sqrt_fixed_sums(T, scale, shift), dtype=np.float64)

    def variance_upper(self, horizon: int | None = None) -> FloatArray:
        """Per-step variances as float64, each ≥ the exact variance, relative error ≤ 10⁻¹²,
        for any T ≤ 2³¹ without per-step Fractions (for ``dpref frontier`` at large T).

        ``c_k`` is computed in blocks of 256 steps: the block's first value from 40-digit
        mpmath (``binom(2k,k)/4^k``, relative error ≤ 2⁻⁵³), then a float cumprod of the
        correctly rounded factors ``(2k−1)/(2k)`` (≤ 2·256 roundings: relative error ≤
        256·2⁻⁵² ≈ 5.7·10⁻¹⁴; squared ≤ 1.2·10⁻¹³).  Each block's running sum starts from
        ``math.fsum`` of the earlier blocks' ``fsum`` s (two correct roundings: ≤ 2⁻⁵²
        relative, all terms positive) and adds at most 256 positive terms (≤ 256·2⁻⁵³ ≈
        2.9·10⁻¹⁴).  The result, at most 1.6·10⁻¹³ from ``Σ_{k<t} c_k²`` relatively, is
        multiplied by ``1 + 4·10⁻¹³`` and by the node variance rounded up, then rounded up
        once more: an upper bound within a relative 6·10⁻¹³.
        """
        from dpref.rigorous import mp_context

        T = self._horizon_for(horizon)
        ctx = mp_context(40)
        c = np.empty(T, dtype=np.float64)
        for start in range(0, T, _BLOCK):
            stop = min(T, start + _BLOCK)
            first = float(ctx.binomial(2 * start, start) / ctx.power(4, start))
            k = np.arange(start + 1, stop, dtype=np.float64)
            c[start] = first
            if stop > start + 1:
                p, q = sqrt_ratio(k)
                c[start + 1 : stop] = first * np.cumprod(p / q)
        sq = c * c
        sums = np.empty(T, dtype=np.float64)
        blocks: list[float] = []
        done = 0.0
        for start in range(0, T, _BLOCK):
            stop = min(T, start + _BLOCK)
            sums[start:stop] = done + np.cumsum(sq[start:stop])
            blocks.append(math.fsum(sq[start:stop]))
            done = math.fsum(blocks)
        v = ceil_float(self.unit_variance())
        out: FloatArray = sums * (1 + 4e-13) * v
        return np.nextafter(out, np.inf)


class _SqrtOnline(OnlineCounter):
    """Doubling blocks: when step t passes the computed range, the node noise of the next
    block (canonical order, as the batch path draws it) is drawn and ``(Cz)`` on the block
    is computed by one FFT over everything so far: O(T log T) in total, O(t) memory."""

    def __init__(self, m: SqrtFactorization, rng: Any, noise: Any) -> None:
        super().__init__(m, rng, noise)
        self._m = m
        self._T = m._t()
        self._scale = m.node_scale()
        self._scale_f = m._noise_float()
        self._z = np.zeros(0, dtype=np.float64)
        self._y = np.zeros(0, dtype=np.float64)
        self._count = 0.0

    def _extend(self) -> None:
        have = self._z.size
        end = min(self._T, max(64, 2 * have))
        if self._injected is None and self._rng is not None:  # continuous: buffered draws
            self._used += end - have
            fresh = np.array([self._standard() for _ in range(end - have)]) * self._scale_f
        else:
            fresh = np.array(
                [self._noise(self._scale_f, self._scale) for _ in range(end - have)],
                dtype=np.float64,
            )
        self._z = np.concatenate([self._z, fresh])
        c = self._m.strategy_float(end)
        self._y = _fft_convolve(c, self._z, end)

    def step(self, x: Any) -> float:
        self._count += self._admit(x)
        if self.t > self._y.size:
            self._extend()
        return self._count + float(self._y[self.t - 1])
