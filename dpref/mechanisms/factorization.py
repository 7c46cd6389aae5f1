"""Toeplitz matrix-factorization counters (docs/factorization.md, docs/spec.md §6).

A factorization mechanism releases ``B(Cx + z)`` for a strategy C and a decoder B with
``B·C = Q`` (prefix sums).  Here C and B are lower-triangular Toeplitz matrices given by
coefficient sequences c and b (``b(x)c(x) = 1/(1−x)`` as power series), node n is row n
of C (items 1..n with weights ``c_{n−i}``, released at n), and every node gets the same
noise:

* ``epsilon=`` (pure ε-DP): Laplace of scale ``b = S₁Δ/ε`` with ``S₁ = Σ_{k<T} |c_k|``, the
  L1 norm of column 1 — the largest column L1 norm, since column i of a lower-triangular
  Toeplitz matrix is a prefix of column 1 — so the L1 privacy sum is exactly ε;
* ``rho=`` (ρ-zCDP): Gaussian of variance ``σ² = S₂Δ²/(2ρ)`` with ``S₂ = Σ_{k<T} c_k²``,
  so the L2 privacy sum ``S₂Δ²/σ²`` is exactly 2ρ (or at most 2ρ where S₂ is replaced by
  a rigorous upper bound, see :data:`SQRT_EXACT_S2`).

The output at t is ``c_t + Σ_{n≤t} b_{t−n} z_n``: ``Var(out_t) = v·Σ_{k<t} b_k²`` with v the
node variance (``2b²`` or ``σ²``).

* :class:`SqrtFactorization`: ``C = B``, ``c_k = binom(2k, k)/4^k``, the coefficients of
  ``(1−x)^{−1/2}`` (Fichtenberger, Henzinger, Upadhyay 2023; Henzinger, Upadhyay, Upadhyay
  2023).
* :class:`BLT`: buffered linear Toeplitz (Dvijotham, McMahan, Pillutla, Steinke, Thakurta
  2024): ``c_0 = 1``, ``c_k = Σ_i ω_i θ_i^{k−1}``, a rational generating function, so the
  decoder and C⁻¹ are rational too and the online counter runs in O(buffers) per step.
"""

from __future__ import annotations

import math
from abc import abstractmethod
from collections.abc import Sequence
from fractions import Fraction
from functools import lru_cache
from operator import mul
from typing import Any, ClassVar, Literal

import numpy as np
import numpy.typing as npt

from dpref.domains import Domain
from dpref.errors import DprefTypeError, ParameterError
from dpref.lower_bounds import Decay, prefix_decay
from dpref.mechanisms.base import (
    EXACT,
    BudgetTerm,
    Example,
    Mechanism,
    NodeTable,
    OnlineCounter,
)
from dpref.plan import ExactSparse
from dpref.strategy import RationalGF, ScaledSeq, ToeplitzPlan, scale_all, sqrt_up
from dpref.validation import ceil_float, check_fraction, fmt, fmt_sequence

__all__ = [
    "BLT",
    "BLT_EXACT_BITS",
    "BLT_PRESETS",
    "MAX_BUFFERS",
    "SQRT_EXACT_S1",
    "SQRT_EXACT_S2",
    "SqrtFactorization",
    "ToeplitzFactorization",
    "blt_polynomials",
    "sqrt_coefficients",
]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

FACTORIZATION_PLAN_STEPS = 4096
"""Largest T of the exact plans of the factorization mechanisms (their decoders are dense:
T(T+1)/2 nonzeros)."""
SQRT_EXACT_S2 = 2**14
"""Up to this T, SqrtFactorization's ``S₂ = Σ_{k<T} c_k²`` is exact (an integer Horner sum
``Σ binom(2k,k)² 16^{T−1−k}`` over ``16^{T−1}``); above it, the rigorous upper bound of
:func:`sqrt_s2_upper` (then the L2 privacy sum is ≤ 2ρ, within a relative 10⁻⁵)."""
SQRT_EXACT_S1 = 2**16
"""Up to this T, ``S₁ = Σ_{k<T} c_k = (2T−1)c_{T−1}`` is exact; above it a rigorous upper
bound (the L1 privacy sum is then ≤ ε)."""
MAX_BUFFERS = 16
"""Most BLT buffers accepted."""
BLT_EXACT_BITS = 2**18
"""BLT's S₁ and S₂ are exact closed forms while ``T·log₂(den(θ_iθ_j))`` — the size of the
powers ``(θ_iθ_j)^{T−1}`` they contain — stays at most this (for the 2⁻³²-grid preset: T ≤
4096; for decays with 3-bit denominators: T ≤ 43,690); above, rigorous upper bounds."""
_BOUND_DENOMINATOR = 2**64
"""Denominator of the rational upper bounds (small, so scales stay short Fractions)."""
_BLOCK = 256
"""Steps per block of :meth:`SqrtFactorization.variance_upper` (see there)."""


def sqrt_coefficients(horizon: int) -> ScaledSeq:
    """``c_k = binom(2k, k)/4^k`` for k < T, exactly, as ``binom(2k,k)/4^k`` (base 4)."""
    nums = [1]
    b = 1
    for k in range(1, horizon):
        b = b * (2 * k) * (2 * k - 1) // (k * k)
        nums.append(b)
    return ScaledSeq(tuple(nums), 1, 4)


def _sqrt_float_coefficients(horizon: int) -> FloatArray:
    """c_k as floats: ``cumprod((2k−1)/(2k))`` (noise only: not privacy-critical)."""
    k = np.arange(1, horizon, dtype=np.float64)
    out = np.empty(horizon, dtype=np.float64)
    out[0] = 1.0
    np.cumprod((2 * k - 1) / (2 * k), out=out[1:])
    return out


def _round_up(value: Fraction, den: int = _BOUND_DENOMINATOR) -> Fraction:
    """The smallest multiple of 1/den that is ≥ value."""
    return Fraction(-((-value.numerator * den) // value.denominator), den)


@lru_cache(maxsize=32)
def sqrt_s1(horizon: int) -> Fraction:
    """``S₁(T) = Σ_{k<T} c_k``: exactly ``(2T−1)·binom(2T−2, T−1)/4^{T−1}`` up to
    :data:`SQRT_EXACT_S1`, else the rigorous upper bound ``(2n+1)/√(π(n+1/4))`` (n = T−1;
    ``c_n ≤ 1/√(π(n+1/4))``, proofs/factorization.py) rounded up."""
    n = horizon - 1
    if horizon <= SQRT_EXACT_S1:
        return Fraction((2 * n + 1) * math.comb(2 * n, n), 4**n)
    from dpref.rigorous import mp_context, mpf_fraction

    ctx = mp_context()
    value = (2 * n + 1) / ctx.sqrt(ctx.pi * (ctx.mpf(n) + ctx.mpf(1) / 4))
    return _round_up(mpf_fraction(value) * (1 + Fraction(1, 10**40)))


@lru_cache(maxsize=32)
def sqrt_s2(horizon: int) -> Fraction:
    """``S₂(T) = Σ_{k<T} c_k²``: exact up to :data:`SQRT_EXACT_S2` (integer Horner sum),
    else :func:`sqrt_s2_upper`."""
    if horizon <= SQRT_EXACT_S2:
        return _sqrt_s2_exact(horizon)
    return sqrt_s2_upper(horizon)


def _split_sum(a: int, b: int) -> tuple[int, int, int]:
    """Binary splitting of ``Σ_{k=a}^{b−1} Π_{j=a}^{k} p_j/q_j`` with ``p_j = (2j−1)²``,
    ``q_j = (2j)²`` (the ratio ``c_j²/c_{j−1}²``): ``(P, Q, R)`` with the sum ``R/Q`` and
    ``P/Q`` the whole product."""
    if b - a == 1:
        p, q = (2 * a - 1) ** 2, (2 * a) ** 2
        return p, q, p
    m = (a + b) // 2
    p1, q1, r1 = _split_sum(a, m)
    p2, q2, r2 = _split_sum(m, b)
    return p1 * p2, q1 * q2, r1 * q2 + p1 * r2


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


def sqrt_s2_upper(horizon: int) -> Fraction:
    """A rigorous upper bound on ``S₂(T)`` for T > :data:`SQRT_EXACT_S2`.

    ``S₂(K)`` exactly (K = :data:`SQRT_EXACT_S2`) plus the tail bound
    ``Σ_{k=K}^{T−1} c_k² < (1/π)·Σ 1/(k+1/4) ≤ (1/π)·ln((T−3/4)/(K−3/4))``: ``c_k²(k+1/4)``
    increases to 1/π (proofs/factorization.py), and ``1/(x+1/4)`` is decreasing, so each
    term is at most its integral over ``[k−1, k]``.  Evaluated at 60 digits, widened by a
    relative 10⁻⁴⁰ and rounded up to a multiple of 2⁻⁶⁴; it exceeds S₂(T) by less than
    ``1/(πK) ≈ 2·10⁻⁵``.
    """
    from dpref.rigorous import mp_context, mpf_fraction

    K = SQRT_EXACT_S2
    head = sqrt_s2(K)
    ctx = mp_context()
    q = ctx.mpf(4)
    tail = ctx.log((ctx.mpf(horizon) * q - 3) / (ctx.mpf(K) * q - 3)) / ctx.pi
    return _round_up(head + mpf_fraction(tail) * (1 + Fraction(1, 10**40)))


@lru_cache(maxsize=4)
def _sqrt_spectrum(horizon: int) -> tuple[int, npt.NDArray[np.complex128]]:
    """``(size, rfft(c, size))`` of the square-root coefficients (cached: one per T)."""
    from scipy import fft

    size = _fft_size(2 * horizon - 1)
    out = fft.rfft(_sqrt_float_coefficients(horizon), size)
    out.setflags(write=False)
    return size, out


_FFT_ODD_PARTS = (1, 3, 5, 9, 15, 25, 27, 45, 75, 81, 125)
"""Odd parts allowed in an FFT length (see :func:`_fft_size`)."""


def _fft_size(n: int) -> int:
    """The smallest length ``m·2^a ≥ n`` with a small odd part m (:data:`_FFT_ODD_PARTS`).

    scipy's pocketfft is fastest on lengths with many factors of 2: for n = 2·10⁶ − 1,
    ``next_fast_len`` gives 2,000,000 = 2⁷·5⁶, while 2,048,000 = 2¹⁴·5³ is 2.4 % longer
    and a forward plus inverse real FFT on it took 0.080 s against 0.110 s here."""
    best = 1 << max(0, (n - 1).bit_length())
    for m in _FFT_ODD_PARTS:
        a = max(0, -(-n // m) - 1).bit_length()  # smallest a with m·2^a ≥ n
        best = min(best, m << a)
    return best


def _fft_convolve(
    coef: FloatArray,
    noise: FloatArray,
    horizon: int,
    spectrum: tuple[int, npt.NDArray[np.complex128]] | None = None,
) -> FloatArray:
    """``Σ_{n≤t} coef_{t−n} noise_n`` for t < T along the last axis (scipy.fft; the
    coefficients' spectrum may be given)."""
    from scipy import fft

    if spectrum is None:
        size = _fft_size(2 * horizon - 1)
        fc = fft.rfft(coef[:horizon], size)
    else:
        size, fc = spectrum
    fz = fft.rfft(noise, size, axis=-1)
    fz *= fc  # in place: the spectrum of the noise is not needed again
    out: FloatArray = np.ascontiguousarray(fft.irfft(fz, size, axis=-1)[..., :horizon])
    return out


def _check_noise_kind(noise: Any) -> None:
    if isinstance(noise, str) and noise in ("discrete", "discrete_gaussian"):
        raise ParameterError(
            f"noise={noise!r}: a factorization mechanism adds noise to C·x, whose rows have "
            "fractional weights; use 'laplace' (epsilon=) or 'gaussian' (rho=)"
        )


class ToeplitzFactorization(Mechanism):
    """Common machinery of lower-triangular Toeplitz factorizations (not registered).

    Subclasses give the strategy coefficients (exact and float), the decoder, S₁, S₂ and
    the noise part of the batch and online releases.
    """

    proof = "proofs/factorization.py"
    docs = "docs/factorization.md"
    max_plan_steps: ClassVar[int] = FACTORIZATION_PLAN_STEPS

    def __init__(
        self,
        *,
        epsilon: Any = None,
        rho: Any = None,
        horizon: Any = None,
        domain: Domain | None = None,
        noise: Any = None,
    ) -> None:
        _check_noise_kind(noise)
        super().__init__(epsilon=epsilon, rho=rho, horizon=horizon, domain=domain, noise=noise)

    # -------------------------------------------------------- what subclasses give
    @abstractmethod
    def strategy_exact(self, horizon: int) -> ScaledSeq:
        """c_0 … c_{T−1} exactly."""

    @abstractmethod
    def strategy_float(self, horizon: int) -> FloatArray:
        """c_0 … c_{T−1} as floats (for noise)."""

    @abstractmethod
    def decoder_exact(self, horizon: int) -> ScaledSeq | RationalGF:
        """The decoder's coefficients (exact, or a generating function)."""

    def decoder_gf(self) -> tuple[RationalGF, RationalGF] | None:
        """(strategy, decoder) generating functions, when rational (None otherwise)."""
        return None

    @abstractmethod
    def s1(self, horizon: int) -> Fraction:
        """``S₁(T) = Σ_{k<T} |c_k|`` (exact, or a rigorous upper bound at large T)."""

    @abstractmethod
    def s2(self, horizon: int) -> Fraction:
        """``S₂(T) = Σ_{k<T} c_k²`` (exact, or a rigorous upper bound at large T)."""

    frontier_privacy = ("zcdp",)
    """Only in the Gaussian table (``dpref frontier --rho``): under Laplace noise a Toeplitz
    factorization is dominated (S₁ ≈ 2√(T/π) grows polynomially).  At large T the table
    reads :meth:`variance_upper` (the exact per-step Fractions carry Θ(T)-bit denominators)."""

    @classmethod
    def frontier_variants(cls, horizon: int) -> list[dict[str, Any]]:
        """The default parameters only (the square root has none; BLT its shipped preset)."""
        return [{}]

    # ------------------------------------------------------------- privacy
    def _t(self) -> int:
        assert self.horizon is not None
        return self.horizon

    def node_scale(self) -> Fraction:
        """Laplace scale ``S₁Δ/ε``, or Gaussian variance ``S₂Δ²/(2ρ)``."""
        T = self._t()
        if self.rho is not None:
            return self.s2(T) * self.sensitivity**2 / (2 * self.rho)
        return self.s1(T) * self.sensitivity / self.design_epsilon

    def design_scale(self) -> Fraction:
        """The Laplace scale ``S₁Δ/ε`` at :attr:`design_epsilon` (what :meth:`nodes` holds)."""
        return self.s1(self._t()) * self.sensitivity / self.design_epsilon

    def unit_variance(self) -> Fraction:
        """The variance of every node's noise: ``2b²`` (Laplace) or ``σ²`` (Gaussian)."""
        s = self.node_scale()
        return s if self.gaussian else 2 * s * s

    def node_variance(self, scale: Fraction, weight: Fraction = Fraction(1)) -> Fraction:
        """Every node of a Toeplitz factorization gets the same noise: :meth:`unit_variance`
        (the Gaussian variance is ``S₂Δ²/(2ρ)``, sized by the L2 norm of column 1, not the
        design-scale rule of the interval plans)."""
        return self.unit_variance()

    def noise_multiplier(self, scale: Fraction, weight: Fraction = Fraction(1)) -> float:
        """The Laplace scale b, or σ = √σ², rounded up (the same for every node)."""
        return self._noise_float()

    def noise_multipliers(self, horizon: int) -> FloatArray | float:
        return self._noise_float()

    def _noise_float(self) -> float:
        s = self.node_scale()
        return sqrt_up(s) if self.gaussian else ceil_float(s)

    def budget_terms(self, ops: Any = EXACT, **s: Any) -> list[BudgetTerm]:
        """Item 1 lies in every node; its column's L1 norm is S₁, each node's scale
        ``S₁Δ/ε``: ``S₁·Δ/(S₁Δ/ε) = ε`` (``column_l1`` may be a symbol)."""
        eps = s.get("epsilon", self.design_epsilon)
        delta = s.get("sensitivity", self.sensitivity)
        s1 = s.get("column_l1", self.s1(s.get("horizon", self._t())))
        return [BudgetTerm("column", s1, s1 * delta / eps)]

    def expected_privacy_sum(self, horizon: int) -> Fraction | None:
        """ε exactly (2ρ for Gaussian noise) when S₁ (S₂) is exact at this T."""
        T = self._t()
        if self.rho is not None:
            return 2 * self.rho if self._s2_exact(T) else None
        return self.design_epsilon if self._s1_exact(T) else None

    def _s1_exact(self, horizon: int) -> bool:
        return True

    def _s2_exact(self, horizon: int) -> bool:
        return True

    def decay(self) -> Decay:
        """Running counts: ``g ≡ 1``."""
        return prefix_decay()

    # ------------------------------------------------------------ the plan
    def plan(self, horizon: int | None = None) -> ToeplitzPlan:  # type: ignore[override]
        """The exact Toeplitz plan at T (≤ :data:`FACTORIZATION_PLAN_STEPS`)."""
        t = self._horizon_for(horizon, limit=self.max_plan_steps, limit_name="max_plan_steps")
        gfs = self.decoder_gf()
        strategy: ScaledSeq | RationalGF = self.strategy_exact(t)
        decoder = self.decoder_exact(t)
        if gfs is not None:
            strategy = gfs[0]
            decoder = gfs[1]
        family: Literal["laplace", "gaussian"] = "gaussian" if self.gaussian else "laplace"
        return ToeplitzPlan(
            name=repr(self),
            horizon=t,
            strategy=strategy,
            decoder=decoder,
            noise_scale=self.node_scale(),
            sensitivity=self.sensitivity,
            noise_family=family,
            declared_epsilon=self.epsilon,
            declared_rho=self.rho,
            expected_privacy_sum=self.expected_privacy_sum(t),
            strategy_values=self.strategy_exact(t) if gfs is not None else None,
        )

    def nodes(self, horizon: int) -> NodeTable:
        """Node n covers items 1..n (weights ``c_{n−i}``), released at n."""
        t = self._horizon_for(horizon)
        return NodeTable(
            np.ones(t, dtype=np.int64),
            np.arange(1, t + 1, dtype=np.int64),
            (self.design_scale(),),
            np.zeros(t, dtype=np.int64),
        )

    def node_count(self, horizon: int) -> int:
        return self._horizon_for(horizon)

    def noise_scales(self, horizon: int) -> FloatArray | float:
        return self._noise_float()

    def per_node_epsilon(self, horizon: int | None = None) -> list[Fraction]:
        """Laplace: ``Δ·max_k|c_k|/b`` per node (``c_0 = 1`` is the largest weight)."""
        return self.plan(horizon).per_node_epsilon()

    def recombination(self, horizon: int) -> ExactSparse:
        """B, exact (T(T+1)/2 entries: small T)."""
        t = self._horizon_for(horizon, limit=self.max_plan_steps, limit_name="max_plan_steps")
        dec = self.decoder_exact(t)
        seq = dec.expand(t) if isinstance(dec, RationalGF) else dec
        rows, cols = np.tril_indices(t)
        return ExactSparse.from_triples(
            (t, t),
            rows.astype(np.int64),
            cols.astype(np.int64),
            tuple(seq.fractions()),
            (rows - cols).astype(np.int64),
        )

    def decoder_square_sums(self, horizon: int) -> list[Fraction]:
        """``Σ_{k<t} b_k²`` for t = 1..T, exactly."""
        dec = self.decoder_exact(horizon)
        seq = dec.expand(horizon) if isinstance(dec, RationalGF) else dec
        return seq.cumulative_square_sums()

    def variance_exact(self, horizon: int | None = None) -> list[Fraction]:
        """``Var(out_t) = v·Σ_{k<t} b_k²`` (v = 2b² or σ²), t = 1..T."""
        t = self._horizon_for(horizon, limit=self.max_plan_steps, limit_name="max_plan_steps")
        v = self.unit_variance()
        return scale_all(v, self.decoder_square_sums(t))

    def variance(self, horizon: int | None = None) -> FloatArray:
        """Exact per-step variance as floats (nearest)."""
        return np.array([float(v) for v in self.variance_exact(horizon)], dtype=np.float64)

    def target(self, stream: Any) -> FloatArray:
        """Exact prefix sums ``c_t``."""
        return np.cumsum(self._stream(stream))

    def _target_checked(self, x: FloatArray) -> FloatArray:
        return np.cumsum(x)

    def node_noise(self, horizon: int, rng: Any = None, runs: int | None = None) -> FloatArray:
        """Node noise in canonical (row) order: Laplace ``b·L_n`` or Gaussian ``σ·G_n``
        (``σ = √σ²`` rounded up), shape (T,) or (runs, T)."""
        from dpref.noise import make_rng, standard_laplace, standard_normal
        from dpref.validation import check_runs

        t = self._horizon_for(horizon)
        gen = make_rng(rng)
        shape: tuple[int, ...] = (t,) if runs is None else (check_runs("runs", runs), t)
        if len(shape) == 2 and shape[0] * t >= 2**62:
            raise ParameterError(f"runs={runs}: {shape[0]} × {t} node draws is too many")
        scale = self._noise_float()  # before drawing
        z = standard_normal(gen, shape) if self.gaussian else standard_laplace(gen, shape)
        z *= scale
        return np.asarray(z, dtype=np.float64)


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

    def strategy_float(self, horizon: int) -> FloatArray:
        return _sqrt_float_coefficients(horizon)

    def decoder_exact(self, horizon: int) -> ScaledSeq:
        return sqrt_coefficients(horizon)

    def s1(self, horizon: int) -> Fraction:
        return sqrt_s1(horizon)

    def s2(self, horizon: int) -> Fraction:
        return sqrt_s2(horizon)

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
                c[start + 1 : stop] = first * np.cumprod((2 * k - 1) / (2 * k))
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


# ---------------------------------------------------------------------- BLT
def _parse_list(name: str, value: Any) -> list[Fraction]:
    if isinstance(value, str):
        parts = [p for p in value.replace(";", ",").split(",")]
        if len(parts) > MAX_BUFFERS or len(value) > 4000:
            raise ParameterError(f"{name}={fmt(value)}: at most {MAX_BUFFERS} buffers")
        items: list[Any] = [p.strip() for p in parts]
    elif isinstance(value, Sequence) and not isinstance(value, bytes):
        items = list(value)
    elif isinstance(value, np.ndarray) and value.ndim == 1:
        items = value.tolist()
    else:
        raise DprefTypeError(
            f"{name}={fmt(value)}: must be a sequence of exact numbers or a string "
            "'a,b,…' (e.g. '1/2,7/8')"
        )
    if not 1 <= len(items) <= MAX_BUFFERS:
        raise ParameterError(
            f"{name}={fmt_sequence(value)}: need 1 to {MAX_BUFFERS} buffers, got {len(items)}"
        )
    out = []
    for i, v in enumerate(items):
        f = check_fraction(f"{name}[{i}]", v)
        if f.numerator.bit_length() > 64 or f.denominator.bit_length() > 64:
            raise ParameterError(
                f"{name}[{i}]={fmt(v)}: numerator and denominator must fit 64 bits"
            )
        out.append(f)
    return out


def _poly_from_roots(thetas: Sequence[Any]) -> list[Any]:
    """``Π_i (1 − θ_i x)``, lowest degree first (any numbers: Fractions, sympy symbols)."""
    poly: list[Any] = [1]  # ints mix with Fractions, sympy and mpmath numbers alike
    for th in thetas:
        nxt = [*poly, 0]
        for j, v in enumerate(poly):
            nxt[j + 1] -= th * v
        poly = nxt
    return poly


def blt_polynomials(theta: Sequence[Any], omega: Sequence[Any]) -> tuple[list[Any], list[Any]]:
    """``(P, D)`` with ``D = Π_i(1 − θ_i x)`` and ``P = D·c`` for
    ``c(x) = 1 + Σ_i ω_i x/(1 − θ_i x)``: ``P = D + x·Σ_i ω_i Π_{j≠i}(1 − θ_j x)``, lowest
    degree first (generic arithmetic: ``proofs/factorization.py`` passes sympy symbols)."""
    D = _poly_from_roots(theta)
    P = [*D]
    for i, w in enumerate(omega):
        others = _poly_from_roots([t for j, t in enumerate(theta) if j != i])
        for j, v in enumerate(others):
            P[j + 1] += w * v
    return P, D


BLT_PRESETS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "2^20": (
        (
            "4294962241/4294967296",
            "67106781/67108864",
            "2146215593/2147483648",
            "4247235161/4294967296",
            "1737884767/2147483648",
        ),
        (
            "3309119/2147483648",
            "5609531/1073741824",
            "97131621/4294967296",
            "208500323/2147483648",
            "1413767217/4294967296",
        ),
    ),
}
"""Named BLT parameters ``(theta, omega)`` (exact strings).

``"2^20"``: 5 buffers for T = 2²⁰, found by :meth:`BLT.optimise` (Nelder–Mead over the
parameters rounded to multiples of 2⁻³², the objective evaluated with 50 digits).  At
T = 2²⁰, ρ = 1/2, Δ = 1 its largest variance is 30.2736 and its mean 28.474, against
SqrtFactorization's 30.0194 and 28.275 (+0.85 %); ``tests/test_factorization.py`` recomputes
both."""


class BLT(ToeplitzFactorization):
    """Buffered linear Toeplitz factorization: ``c_0 = 1``, ``c_k = Σ_i ω_i θ_i^{k−1}``.

    C is lower-triangular Toeplitz with the rational generating function
    ``c(x) = 1 + Σ_i ω_i x/(1 − θ_i x) = P(x)/D(x)``, ``D = Π_i(1 − θ_i x)``; the decoder
    ``B = Q·C⁻¹`` has ``b(x) = D(x)/((1−x)P(x))``, rational too.  Noise as for every
    Toeplitz factorization (Laplace ``S₁Δ/ε``, Gaussian ``S₂Δ²/(2ρ)``).  Online: the noise
    part ``(Q C⁻¹ z)_t`` comes from one running sum and one state per buffer —
    ``w_t = z_t − Σ_i ω_i s_i``, then ``s_i ← θ_i s_i + w_t`` — O(buffers) work per step
    and memory independent of T.  Batch: the same recursion, O(T·buffers) (vectorised over
    runs); see :meth:`combine` for why not a polynomial IIR filter or an FFT.

    Parameters
    ----------
    theta
        The buffer decays θ_i, exact rationals in (0, 1): a sequence or a string
        ``"a,b,…"`` (default: the ``"2^20"`` preset of :data:`BLT_PRESETS`).
    omega
        The output scales ω_i > 0 with ``Σ ω_i ≤ 1``, one per θ_i (default: the preset's).

    References
    ----------
    .. [1] K. Dvijotham, H. B. McMahan, K. Pillutla, T. Steinke, A. Thakurta. "Efficient
       and Near-Optimal Noise Generation for Streaming Differential Privacy." FOCS 2024;
       arXiv 2404.16706.
    .. [2] H. B. McMahan, Z. Xu, Y. Zhang. "A Hassle-free Algorithm for Private Learning
       in Practice: Don't Use Tree Aggregation, Use BLTs." arXiv 2408.08868.
    """

    name = "blt"
    examples = (
        Example({"theta": "1/2", "omega": "1/2"}, horizons=(1, 16)),
        Example({"theta": "1/2,7/8", "omega": "1/4,1/8"}, horizons=(16,)),
    )

    def __init__(
        self,
        *,
        epsilon: Any = None,
        rho: Any = None,
        horizon: Any = None,
        theta: Any = None,
        omega: Any = None,
        domain: Domain | None = None,
        noise: Any = None,
    ) -> None:
        super().__init__(epsilon=epsilon, rho=rho, horizon=horizon, domain=domain, noise=noise)
        if theta is None and omega is None:
            theta, omega = BLT_PRESETS["2^20"]
        elif theta is None or omega is None:
            missing = "theta" if theta is None else "omega"
            raise ParameterError(f"{missing}=None: give both theta and omega (or neither)")
        th = _parse_list("theta", theta)
        om = _parse_list("omega", omega)
        if len(om) != len(th):
            raise ParameterError(
                f"omega={fmt_sequence(omega)}: {len(om)} scales for {len(th)} decays "
                f"(theta={fmt_sequence(theta)})"
            )
        for i, v in enumerate(th):
            if not 0 < v < 1:
                raise ParameterError(f"theta[{i}]={v}: must lie in (0, 1)")
        for i, v in enumerate(om):
            if v <= 0:
                raise ParameterError(
                    f"omega[{i}]={v}: must be > 0 (then c_k = Σ ω_i θ_i^(k−1) is positive "
                    "and decreasing for k ≥ 1)"
                )
        if sum(om) > 1:
            raise ParameterError(
                f"omega={','.join(map(str, om))}: Σ ω_i = {sum(om)} > 1 makes c_1 > c_0 = 1 "
                "(the coefficients must be non-increasing)"
            )
        self.theta: tuple[Fraction, ...] = tuple(th)
        self.omega: tuple[Fraction, ...] = tuple(om)

    def extra_params(self) -> dict[str, Any]:
        """``preset=NAME`` when the buffers are a shipped preset of :data:`BLT_PRESETS`, else
        ``theta``/``omega`` in full."""
        for name, (theta, omega) in BLT_PRESETS.items():
            if self.theta == tuple(Fraction(v) for v in theta) and self.omega == tuple(
                Fraction(v) for v in omega
            ):
                return {"preset": name}
        return {
            "theta": ",".join(map(str, self.theta)),
            "omega": ",".join(map(str, self.omega)),
        }

    @property
    def buffers(self) -> int:
        """The number of buffers d."""
        return len(self.theta)

    # ----------------------------------------------------- generating functions
    def polynomials(self) -> tuple[list[Fraction], list[Fraction]]:
        """``(P, D)``: ``c(x) = P(x)/D(x)``, exact, lowest degree first."""
        P, D = blt_polynomials(self.theta, self.omega)
        while len(P) > 1 and P[-1] == 0:
            P.pop()
        return P, D

    def decoder_gf(self) -> tuple[RationalGF, RationalGF]:
        P, D = self.polynomials()
        one_minus_x_P = [Fraction(0)] * (len(P) + 1)
        for j, v in enumerate(P):
            one_minus_x_P[j] += v
            one_minus_x_P[j + 1] -= v
        return RationalGF(tuple(P), tuple(D)), RationalGF(tuple(D), tuple(one_minus_x_P))

    def strategy_exact(self, horizon: int) -> ScaledSeq:
        """``c_0 = 1``, ``c_k = Σ ω_i θ_i^{k−1}`` over ``L·g^k`` (g = lcm of θ's denominators,
        L = lcm of ω's denominators)."""
        g = 1
        for t in self.theta:
            g = math.lcm(g, t.denominator)
        L = 1
        for w in self.omega:
            L = math.lcm(L, w.denominator)
        r = [int(t * g) for t in self.theta]
        wl = [int(w * L) for w in self.omega]
        nums = [L]
        powers = [1] * len(r)
        for _ in range(1, horizon):
            nums.append(g * sum(w * p for w, p in zip(wl, powers, strict=True)))
            powers = [p * ri for p, ri in zip(powers, r, strict=True)]
        return ScaledSeq(tuple(nums), L, g)

    def strategy_float(self, horizon: int) -> FloatArray:
        k = np.arange(horizon - 1, dtype=np.float64)
        out = np.zeros(horizon, dtype=np.float64)
        out[0] = 1.0
        for t, w in zip(self.theta, self.omega, strict=True):
            out[1:] += float(w) * np.power(float(t), k)
        return out

    def decoder_exact(self, horizon: int) -> RationalGF:
        return self.decoder_gf()[1]

    def s1(self, horizon: int) -> Fraction:
        """``1 + Σ_i ω_i (1 − θ_i^{T−1})/(1 − θ_i)``: exact while :meth:`_sums_exact`,
        else a rigorous upper bound (60-digit evaluation, widened, rounded up)."""
        n = horizon - 1
        if self._sums_exact(horizon):
            return 1 + sum(
                (w * (1 - t**n) / (1 - t) for t, w in zip(self.theta, self.omega, strict=True)),
                Fraction(0),
            )
        return self._upper([(w, t) for t, w in zip(self.theta, self.omega, strict=True)], n)

    def s2(self, horizon: int) -> Fraction:
        """``1 + Σ_{i,j} ω_iω_j (1 − (θ_iθ_j)^{T−1})/(1 − θ_iθ_j)``: exact while
        :meth:`_sums_exact`, else a rigorous upper bound."""
        n = horizon - 1
        pairs = [
            (wi * wj, ti * tj)
            for ti, wi in zip(self.theta, self.omega, strict=True)
            for tj, wj in zip(self.theta, self.omega, strict=True)
        ]
        if self._sums_exact(horizon):
            return 1 + sum((w * (1 - t**n) / (1 - t) for w, t in pairs), Fraction(0))
        return self._upper(pairs, n)

    @staticmethod
    def _upper(pairs: list[tuple[Fraction, Fraction]], n: int) -> Fraction:
        from dpref.rigorous import mp_context, mpf_fraction

        ctx = mp_context()
        total = ctx.mpf(1)
        for w, t in pairs:
            tm = ctx.mpf(t.numerator) / t.denominator
            wm = ctx.mpf(w.numerator) / w.denominator
            total += wm * (1 - ctx.power(tm, n)) / (1 - tm)
        return _round_up(mpf_fraction(total) * (1 + Fraction(1, 10**40)))

    def _sums_exact(self, horizon: int) -> bool:
        """Whether the exact closed forms are affordable at T (:data:`BLT_EXACT_BITS`)."""
        bits = max(2 * t.denominator.bit_length() for t in self.theta)
        return horizon * bits <= BLT_EXACT_BITS

    def _s1_exact(self, horizon: int) -> bool:
        return self._sums_exact(horizon)

    def _s2_exact(self, horizon: int) -> bool:
        return self._sums_exact(horizon)

    def combine(self, noise: FloatArray, horizon: int) -> FloatArray:
        """``Q C⁻¹ z`` by the buffer recursion of the online counter (the same operations in
        the same order, so batch and online agree bit for bit): ``w_t = z_t − Σ_i ω_i s_i``,
        ``s_i ← θ_i s_i + w_t``, output the running sum of w.  O(T·buffers).

        The direct-form filter ``lfilter(D, P)`` is not used: with decays within 10⁻⁶ of 1
        the expanded polynomial coefficients lose the decoder's pole (a root of P within
        10⁻⁶ of the unit circle) to rounding, while the buffer form works with θ and ω
        themselves."""
        th = [float(t) for t in self.theta]
        om = [float(w) for w in self.omega]
        if noise.ndim == 1:
            out_list: list[float] = []
            s = [0.0] * len(th)
            y = 0.0
            for z in noise.tolist():
                w = z - sum(map(mul, om, s))
                s = [t * v + w for t, v in zip(th, s)]  # noqa: B905 (equal lengths)
                y += w
                out_list.append(y)
            return np.array(out_list, dtype=np.float64)
        lead = noise.shape[:-1]
        states = [np.zeros(lead) for _ in th]
        acc = np.zeros(lead)
        out = np.empty(noise.shape, dtype=np.float64)
        for t in range(noise.shape[-1]):
            w = noise[..., t].copy()
            total = np.zeros(lead)
            for o, st in zip(om, states, strict=True):
                total = total + o * st
            w = w - total
            states = [th_i * st + w for th_i, st in zip(th, states, strict=True)]
            acc = acc + w
            out[..., t] = acc
        return out

    def decoder_float(self, horizon: int) -> FloatArray:
        """The decoder coefficients as floats (impulse response of the buffer recursion)."""
        impulse = np.zeros(horizon, dtype=np.float64)
        impulse[0] = 1.0
        return self.combine(impulse, horizon)

    def variance_float(self, horizon: int | None = None) -> FloatArray:
        """Per-step variance from float decoder coefficients (nearest-estimate, not a
        bound; for the frontier at large T)."""
        T = self._horizon_for(horizon)
        e = self.decoder_float(T)
        return np.cumsum(e * e) * float(self.unit_variance())

    VARIANCE_MARGIN = 1e-6
    """Relative margin :meth:`variance_upper` adds to :meth:`variance_float`."""

    def variance_upper(self, horizon: int | None = None) -> FloatArray:
        """:meth:`variance_float` raised by :data:`VARIANCE_MARGIN` (relative), for
        ``dpref frontier`` at large T, where the exact decoder coefficients (denominators
        near 2^(80k) for the preset) are out of reach.

        The margin is measured, not proven: the float recursion is contractive (every
        0 < θ_i < 1); on the shipped preset its largest variance at T = 2^20 agrees with a
        50-digit evaluation to 10⁻⁹ relative, and at T = 512 every step lies within 10⁻¹²
        of the exact Fraction (``tests/test_factorization.py``), far inside the margin.
        """
        return np.nextafter(self.variance_float(horizon) * (1 + self.VARIANCE_MARGIN), np.inf)

    def online(self, rng: Any = None, noise: Any = None) -> OnlineCounter:
        return _BLTOnline(self, rng, noise)

    def online_memory(self, horizon: int | None = None) -> int | None:
        """One state per buffer, the decays and scales, the running noise and count."""
        return 3 * self.buffers + 2

    @classmethod
    def optimise(
        cls,
        horizon: int,
        buffers: int,
        rho: Any = Fraction(1, 2),
        seed: int = 0,
        starts: int = 3,
        max_evaluations: int = 3000,
    ) -> BLT:
        """BLT parameters minimising the largest variance at T, as exact rationals.

        The search (scipy's Nelder–Mead, ``starts`` random starts of ``max_evaluations``
        evaluations each) runs over ``θ_i = exp(−e^{u_i})`` and ``ω_i = e^{v_i}``; every point
        is rounded to multiples of 2⁻³² *before* it is evaluated, so the optimum found is
        the rational one (rounding a float optimum afterwards can move the objective by a
        factor of 6: the decoder's pole sits within 10⁻⁶ of the unit circle).  The objective
        ``S₂(T)·Σ_{k<T} b_k²`` (proportional to ``max_t Var(out_t)``) is evaluated in 50-digit
        mpmath: the roots of ``(1−x)P(x)`` and the partial fractions of ``b(x)``, whose
        squared coefficients sum in closed form; a decoder with a pole on or inside the unit
        circle, or ``Σω ≥ 1``, is rejected.  The returned mechanism's own constructor
        validates the parameters exactly.  Slow (seconds to minutes): the preset in
        :data:`BLT_PRESETS` ships the result for T = 2²⁰, 5 buffers.
        """
        import mpmath  # type: ignore[import-untyped]
        from scipy.optimize import minimize

        from dpref.validation import check_int_range

        T = check_int_range("horizon", horizon, 2, 2**40)
        d = check_int_range("buffers", buffers, 1, MAX_BUFFERS)
        n_starts = check_int_range("starts", starts, 1, 100)
        budget = check_int_range("max_evaluations", max_evaluations, 10, 10**6)
        grid = 2**32
        ctx = mpmath.MPContext()
        ctx.dps = 50

        def rational(x: FloatArray) -> tuple[list[Fraction], list[Fraction]]:
            th = np.exp(-np.exp(np.clip(x[:d], -60.0, 5.0)))
            om = np.exp(np.clip(x[d:], -60.0, 0.0))
            theta = [Fraction(min(grid - 1, max(1, round(float(t) * grid))), grid) for t in th]
            omega = [Fraction(max(1, math.floor(float(w) * grid)), grid) for w in om]
            return theta, omega

        def objective(x: FloatArray) -> float:
            theta, omega = rational(x)
            if sum(omega) >= 1 or len(set(theta)) < d:
                return 1e12
            try:
                value = _blt_max_variance_factor(ctx, theta, omega, T)
            except ZeroDivisionError:  # a degenerate point of the search: rejected
                return 1e12
            return 1e12 if value is None else float(value)

        rng = np.random.default_rng(seed)
        best: tuple[float, FloatArray] | None = None
        for _ in range(n_starts):
            lo, hi = rng.uniform(0.5, 3.0) / T, rng.uniform(0.3, 2.0)
            rates = np.geomspace(max(lo, 1e-12), hi, d)
            spread = math.log(hi / lo) / max(d - 1, 1)
            weights = np.minimum(np.sqrt(rates) * spread / math.pi, 0.9 / d)
            start = np.concatenate([np.log(rates), np.log(weights)])
            res = minimize(
                objective,
                start,
                method="Nelder-Mead",
                options={"maxfev": budget, "adaptive": True, "xatol": 1e-7, "fatol": 1e-10},
            )
            if best is None or res.fun < best[0]:
                best = (float(res.fun), res.x)
        assert best is not None
        theta, omega = rational(best[1])
        return cls(rho=rho, horizon=T, theta=theta, omega=omega)


def _blt_max_variance_factor(
    ctx: Any, theta: list[Fraction], omega: list[Fraction], horizon: int
) -> Any:
    """``S₂(T)·Σ_{k<T} b_k²`` for a BLT, in the precision of ``ctx`` (None: the decoder has a
    pole on or inside the unit circle, or repeated roots)."""
    th = [ctx.mpf(t.numerator) / t.denominator for t in theta]
    om = [ctx.mpf(w.numerator) / w.denominator for w in omega]
    P, D = blt_polynomials(th, om)
    while len(P) > 1 and P[-1] == 0:
        P.pop()
    try:
        roots = ctx.polyroots(P[::-1], maxsteps=200, extraprec=200) if len(P) > 1 else []
    except (ctx.NoConvergence, ZeroDivisionError):
        return None
    if any(r == 0 for r in roots):
        return None
    if roots and min(abs(r) for r in roots) <= 1:
        return None
    den = [a - b for a, b in zip([*P, 0], [0, *P], strict=True)]  # (1 − x)P
    dden = [k * den[k] for k in range(1, len(den))]

    def ev(c: list[Any], x: Any) -> Any:
        return ctx.fsum(v * x**k for k, v in enumerate(c))

    points = [ctx.mpf(1), *roots]
    alpha, ratio = [], []
    for r in points:
        slope = ev(dden, r)
        if abs(slope) < ctx.mpf(10) ** -40:
            return None
        alpha.append(-ev(D, r) / slope / r)
        ratio.append(1 / r)
    e2 = ctx.mpf(0)
    for a, p in zip(alpha, ratio, strict=True):
        for b, q in zip(alpha, ratio, strict=True):
            pq = p * q
            e2 += (
                a
                * b
                * (horizon if abs(pq - 1) < ctx.mpf(10) ** -40 else (1 - pq**horizon) / (1 - pq))
            )
    s2 = 1 + ctx.fsum(
        wi * wj * (1 - (ti * tj) ** (horizon - 1)) / (1 - ti * tj)
        for ti, wi in zip(th, om, strict=True)
        for tj, wj in zip(th, om, strict=True)
    )
    return s2 * ctx.re(e2)


class _BLTOnline(OnlineCounter):
    """``w_t = z_t − Σ_i ω_i s_i``; ``s_i ← θ_i s_i + w_t``; noise part ``y_t = y_{t−1} + w_t``."""

    def __init__(self, m: BLT, rng: Any, noise: Any) -> None:
        super().__init__(m, rng, noise)
        self._scale = m.node_scale()
        self._scale_f = m._noise_float()
        self._theta = [float(t) for t in m.theta]
        self._omega = [float(w) for w in m.omega]
        self._s = [0.0] * m.buffers
        self._y = 0.0
        self._count = 0.0

    def step(self, x: Any) -> float:
        self._count += self._admit(x)
        if self._injected is None:  # continuous noise: the buffered standard draws
            self._used += 1
            z = self._standard() * self._scale_f
        else:
            z = self._noise(self._scale_f, self._scale)
        s = self._s
        w = z - sum(map(mul, self._omega, s))
        self._s = [t * v + w for t, v in zip(self._theta, s)]  # noqa: B905 (equal lengths)
        self._y += w
        return self._count + self._y
