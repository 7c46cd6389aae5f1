"""The common machinery of the Toeplitz factorizations (:class:`ToeplitzFactorization`):
the scales from the column norms, the plan, the nodes, the exact variance, the FFT
convolution; see :mod:`dpref.mechanisms.factorization`."""

from __future__ import annotations

from abc import abstractmethod
from fractions import Fraction
from typing import Any, ClassVar, Literal

import numpy as np
import numpy.typing as npt

from dpref.domains import Domain
from dpref.errors import ParameterError
from dpref.lower_bounds import Decay, prefix_decay
from dpref.mechanisms.base import (
    EXACT,
    BudgetTerm,
    Mechanism,
    NodeTable,
)
from dpref.mechanisms.factorization.participation import (
    check_mechanism_participation,
    column_sum,
    column_sum_exact,
    participation_params,
)
from dpref.noise import NoiseKind
from dpref.plan import ExactSparse
from dpref.strategy import RationalGF, ScaledSeq, ToeplitzPlan, scale_all
from dpref.types import Budget, Count, Horizon
from dpref.validation import ceil_float, ceil_sqrt_float

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

FACTORIZATION_PLAN_STEPS = 4096
"""Largest T of the exact plans of the factorization mechanisms (their decoders are dense:
T(T+1)/2 nonzeros)."""
_BOUND_DENOMINATOR = 2**64
"""Denominator of the rational upper bounds (small, so scales stay short Fractions)."""


def _round_up(value: Fraction, den: int = _BOUND_DENOMINATOR) -> Fraction:
    """The smallest multiple of 1/den that is ≥ value."""
    return Fraction(-((-value.numerator * den) // value.denominator), den)


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
        epsilon: Budget | None = None,
        rho: Budget | None = None,
        horizon: Horizon | None = None,
        domain: Domain | None = None,
        noise: NoiseKind | None = None,
        participations: Count | None = None,
        min_separation: Count | None = None,
    ) -> None:
        _check_noise_kind(noise)
        super().__init__(epsilon=epsilon, rho=rho, horizon=horizon, domain=domain, noise=noise)
        self.participations, self.min_separation = check_mechanism_participation(
            participations, min_separation, self.horizon
        )
        """(k, b)-participation (default 1, 1): the noise is calibrated to the strategy's
        sensitivity when a user contributes ≤ k times, ≥ b steps apart
        (:mod:`dpref.mechanisms.factorization.participation`)."""

    # -------------------------------------------------------- what subclasses give
    @abstractmethod
    def strategy_exact(self, horizon: int) -> ScaledSeq:
        """c_0 … c_{T−1} exactly."""

    @abstractmethod
    def strategy_float(self, horizon: int) -> FloatArray:
        """c_0 … c_{T−1} as floats (for noise)."""

    @abstractmethod
    def rounded_coefficients(self, horizon: int) -> tuple[FloatArray, int]:
        """Float coefficients ``c̃`` with a known rounding count, and d:
        ``c_n ≤ c̃_n·(1 − 2⁻⁵³)^{−(2T + d + 4)}`` (the rigorous float bound of the
        participation sensitivities, :mod:`dpref.mechanisms.factorization.participation`)."""

    @abstractmethod
    def decoder_exact(self, horizon: int) -> ScaledSeq | RationalGF:
        """The decoder's coefficients (exact, or a generating function)."""

    def decoder_gf(self) -> tuple[RationalGF, RationalGF] | None:
        """(strategy, decoder) generating functions, when rational (None otherwise)."""
        return None

    @abstractmethod
    def s1(self, horizon: Any, ops: Any = EXACT) -> Any:
        """``S₁(T) = Σ_{k<T} |c_k|``, the L1 norm of column 1 (exact, or a rigorous upper
        bound at large T); with symbolic ``ops`` (the proofs) its exact form at a symbolic T."""

    @abstractmethod
    def s2(self, horizon: Any, ops: Any = EXACT) -> Any:
        """``S₂(T) = Σ_{k<T} c_k²`` (exact, or a rigorous upper bound at large T; symbolic
        ``ops`` as for :meth:`s1`)."""

    frontier_privacy = ("zcdp",)
    """Only in the Gaussian table (``dpref frontier --rho``): under Laplace noise a Toeplitz
    factorization is dominated (S₁ ≈ 2√(T/π) grows polynomially).  At large T the table
    reads :meth:`variance_upper` (the exact per-step Fractions carry Θ(T)-bit denominators)."""

    def extra_params(self) -> dict[str, Any]:
        """``participations``/``min_separation`` when not 1."""
        return participation_params(self)

    @classmethod
    def frontier_variants(cls, horizon: int) -> list[dict[str, Any]]:
        """The default parameters only (the square root has none; BLT its shipped preset)."""
        return [{}]

    # ------------------------------------------------------------- privacy
    def _t(self) -> int:
        assert self.horizon is not None
        return self.horizon

    def laplace_scale(
        self, horizon: Any, ops: Any = EXACT, *, epsilon: Any = None, sensitivity: Any = None
    ) -> Any:
        """``b = S₁Δ/ε``: the one formula of the Laplace node scale (:meth:`node_scale`,
        :meth:`design_scale`, :meth:`nodes`, :meth:`budget_terms` and the plan all call it;
        ε defaults to :attr:`design_epsilon`, Δ to the domain's; any may be a symbol)."""
        eps = self.design_epsilon if epsilon is None else epsilon
        delta = self.sensitivity if sensitivity is None else sensitivity
        return column_sum(self, 1, horizon, ops) * delta / eps

    def gaussian_variance(
        self, horizon: Any, ops: Any = EXACT, *, rho: Any = None, sensitivity: Any = None
    ) -> Any:
        """``σ² = S₂Δ²/(2ρ)``: the one formula of the Gaussian node variance
        (:meth:`node_scale`, :meth:`gaussian_terms`, the plan and every draw)."""
        r = self.rho if rho is None else rho
        if r is None:
            raise ParameterError(f"epsilon={self.epsilon}: a pure ε-DP mechanism has no ρ")
        delta = self.sensitivity if sensitivity is None else sensitivity
        return column_sum(self, 2, horizon, ops) * delta**2 / (2 * r)

    def node_scale(self) -> Fraction:
        """Laplace scale ``S₁Δ/ε`` (:meth:`laplace_scale`), or Gaussian variance
        ``S₂Δ²/(2ρ)`` (:meth:`gaussian_variance`)."""
        T = self._t()
        value: Fraction = (
            self.gaussian_variance(T) if self.rho is not None else self.laplace_scale(T)
        )
        return value

    def design_scale(self) -> Fraction:
        """The Laplace scale ``S₁Δ/ε`` at :attr:`design_epsilon` (what :meth:`nodes` holds)."""
        value: Fraction = self.laplace_scale(self._t())
        return value

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
        """The float every draw is multiplied by: :meth:`node_scale` rounded up (``b`` by
        ``ceil_float``, ``σ = √σ²`` by ``ceil_sqrt_float``: ``σ_float² ≥ σ²``)."""
        s = self.node_scale()
        return ceil_sqrt_float(s) if self.gaussian else ceil_float(s)

    def budget_terms(self, ops: Any = EXACT, **s: Any) -> list[BudgetTerm]:
        """Item 1 lies in every node, with weights ``c_0 … c_{T−1}``: membership (weight)
        ``S₁``, each node of scale :meth:`laplace_scale`, so the sum is
        ``S₁·Δ/(S₁Δ/ε) = ε``.  ``horizon``, ``epsilon``, ``sensitivity`` may be symbols;
        S₁ is always the class's own :meth:`s1` (proofs/factorization.py proves it is
        ``Σ_{k<T} |c_k|`` of the code's coefficients)."""
        T = s.get("horizon", self._t())
        eps = s.get("epsilon", self.design_epsilon)
        delta = s.get("sensitivity", self.sensitivity)
        scale = self.laplace_scale(T, ops, epsilon=eps, sensitivity=delta)
        return [BudgetTerm("column", column_sum(self, 1, T, ops), scale)]

    def gaussian_terms(self, ops: Any = EXACT, **s: Any) -> list[BudgetTerm]:
        """The Gaussian twin of :meth:`budget_terms`: membership ``S₂`` (the squared weights
        of item 1) and, as ``scale``, the node variance :meth:`gaussian_variance`; the L2
        sum is ``S₂Δ²/σ² = 2ρ``."""
        T = s.get("horizon", self._t())
        rho = s.get("rho", self.rho)
        delta = s.get("sensitivity", self.sensitivity)
        variance = self.gaussian_variance(T, ops, rho=rho, sensitivity=delta)
        return [BudgetTerm("column", column_sum(self, 2, T, ops), variance)]

    def expected_privacy_sum(self, horizon: int) -> Fraction | None:
        """The exact privacy sum of the plan over the first ``horizon`` steps, when S₁ (S₂)
        is exact there and at the mechanism's T: ``ε·S₁(horizon)/S₁(T)`` (``2ρ·S₂/S₂``) —
        the node scale is set for T, so a shorter plan spends that share (ε at T itself)."""
        T = self._t()
        if self.rho is not None:
            if not (column_sum_exact(self, 2, T) and self._s2_exact(horizon)):
                return None
            return Fraction(2 * self.rho * self.s2(horizon) / column_sum(self, 2, T))
        if not (column_sum_exact(self, 1, T) and self._s1_exact(horizon)):
            return None
        return Fraction(self.design_epsilon * self.s1(horizon) / column_sum(self, 1, T))

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
