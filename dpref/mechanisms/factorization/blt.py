"""Buffered linear Toeplitz factorizations (:class:`BLT`): the buffers, the rational
generating functions, the column norms, the buffer recursion of the release; see
:mod:`dpref.mechanisms.factorization`."""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction
from functools import lru_cache
from operator import mul
from typing import Any

import numpy as np
import numpy.typing as npt

from dpref.domains import Domain
from dpref.errors import DprefTypeError, ParameterError
from dpref.mechanisms.base import (
    EXACT,
    Example,
    OnlineCounter,
)
from dpref.mechanisms.factorization.common import (
    ToeplitzFactorization,
    _round_up,
)
from dpref.noise import NoiseKind
from dpref.strategy import RationalGF, ScaledSeq
from dpref.types import Budget, Count, Horizon
from dpref.validation import check_fraction, fmt, fmt_sequence

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

MAX_BUFFERS = 16
"""Most BLT buffers accepted."""
BLT_EXACT_BITS = 2**18
"""BLT's S₁ and S₂ are exact closed forms while ``T·log₂(den(θ_iθ_j))`` — the size of the
powers ``(θ_iθ_j)^{T−1}`` they contain — stays at most this (for the 2⁻³²-grid preset: T ≤
4096; for decays with 3-bit denominators: T ≤ 43,690); above, rigorous upper bounds."""


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


def blt_column_sum(pairs: Sequence[tuple[Any, Any]], n: Any, number: Any) -> Any:
    """``1 + Σ_{(w, t)} w(1 − t^n)/(1 − t)`` with ``n = T − 1``: S₁ of a BLT for the pairs
    ``(ω_i, θ_i)``, S₂ for ``(ω_iω_j, θ_iθ_j)`` (a finite geometric sum per pair).

    ``number`` turns each Fraction into the arithmetic used: Fractions (exact), mpmath
    (the rigorous bound at large T) or sympy (the proofs, with symbolic n, θ, ω)."""
    total = number(Fraction(1))
    for w, t in pairs:
        wn, tn = number(w), number(t)
        total += wn * (1 - tn**n) / (1 - tn)
    return total


def blt_step(state: Sequence[Any], z: Any, theta: Sequence[Any], omega: Sequence[Any]) -> Any:
    """One step of the buffer recursion: ``w = z − Σ_i ω_i s_i``, ``s_i ← θ_i s_i + w``;
    returns ``(w, new state)``.  The batch (scalar and vectorised) and online releases all
    step by it; ``w = C⁻¹z`` for ``c(x) = 1 + Σ_i ω_i x/(1 − θ_i x)`` (proofs/factorization.py
    evaluates it on symbols to obtain its transfer function)."""
    w = z - sum(map(mul, omega, state))
    return w, [t * v + w for t, v in zip(theta, state, strict=True)]


def blt_pairs(
    theta: Sequence[Any], omega: Sequence[Any], power: int, number: Any = None
) -> list[tuple[Any, Any]]:
    """``(ω_i, θ_i)`` (power 1) or ``(ω_iω_j, θ_iθ_j)`` (power 2): the geometric terms of
    S₁ and S₂ (``number`` converts θ and ω first: the proofs' sympy twin)."""
    conv = (lambda v: v) if number is None else number
    single = [(conv(w), conv(t)) for w, t in zip(omega, theta, strict=True)]
    if power == 1:
        return single
    return [(wi * wj, ti * tj) for wi, ti in single for wj, tj in single]


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
    participations
        k: a user contributes at most k times (default 1); the noise is calibrated to the
        (k, b)-participation sensitivity (docs/factorization.md, "Participation").
    min_separation
        b: any two contributions of a user are at least b steps apart (default 1: none).

    References
    ----------
    .. [1] K. Dvijotham, H. B. McMahan, K. Pillutla, T. Steinke, A. Thakurta. "Efficient
       and Near-Optimal Noise Generation for Streaming Differential Privacy." FOCS 2024;
       arXiv 2404.16706.
    .. [2] H. B. McMahan, Z. Xu, Y. Zhang. "A Hassle-free Algorithm for Private Learning
       in Practice: Don't Use Tree Aggregation, Use BLTs." arXiv 2408.08868.
    """

    name = "blt"
    float_parameters = ("theta", "omega")
    """A decimal given as text is the float it denotes (:mod:`dpref.mechanisms.float_params`)."""
    examples = (
        Example({"theta": "1/2", "omega": "1/2"}, horizons=(1, 16)),
        Example({"theta": "1/2,7/8", "omega": "1/4,1/8"}, horizons=(16,)),
    )

    def __init__(
        self,
        *,
        epsilon: Budget | None = None,
        rho: Budget | None = None,
        horizon: Horizon | None = None,
        theta: str | Sequence[float | int | str | Fraction] | None = None,
        omega: str | Sequence[float | int | str | Fraction] | None = None,
        domain: Domain | None = None,
        noise: NoiseKind | None = None,
        participations: Count | None = None,
        min_separation: Count | None = None,
    ) -> None:
        super().__init__(
            epsilon=epsilon,
            rho=rho,
            horizon=horizon,
            domain=domain,
            noise=noise,
            participations=participations,
            min_separation=min_separation,
        )
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
                return {"preset": name, **super().extra_params()}
        return {
            "theta": ",".join(map(str, self.theta)),
            "omega": ",".join(map(str, self.omega)),
            **super().extra_params(),
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

    def rounded_coefficients(self, horizon: int) -> tuple[FloatArray, int]:
        """``c̃_n = Σ_i fl(ω_i)·fl(θ_i)^{n−1}`` with the powers by a sequential cumulative
        product (≤ n + 1 roundings each; :meth:`strategy_float`'s ``np.power`` has no stated
        error), one rounding per product and ≤ d per sum; d = the number of buffers."""
        T = horizon
        out = np.zeros(T, dtype=np.float64)
        out[0] = 1.0
        for t, w in zip(self.theta, self.omega, strict=True):
            powers = np.empty(T - 1, dtype=np.float64)
            if T > 1:
                powers[0] = 1.0
                np.cumprod(np.full(T - 2, float(t)), out=powers[1:])
                out[1:] += float(w) * powers
        return out, self.buffers

    def strategy_float(self, horizon: int) -> FloatArray:
        k = np.arange(horizon - 1, dtype=np.float64)
        out = np.zeros(horizon, dtype=np.float64)
        out[0] = 1.0
        for t, w in zip(self.theta, self.omega, strict=True):
            out[1:] += float(w) * np.power(float(t), k)
        return out

    def decoder_exact(self, horizon: int) -> RationalGF:
        return self.decoder_gf()[1]

    def _pairs(self, power: int, number: Any = None) -> list[tuple[Any, Any]]:
        """:func:`blt_pairs` of the class's θ and ω."""
        return blt_pairs(self.theta, self.omega, power, number)

    def s1(self, horizon: Any, ops: Any = EXACT) -> Any:
        """:func:`blt_column_sum` of ``(ω_i, θ_i)``: ``1 + Σ_i ω_i (1 − θ_i^{T−1})/(1 − θ_i)``,
        exact while :meth:`_sums_exact` (or for symbolic ``ops``), else the same function
        evaluated at 60 digits, widened and rounded up (a rigorous upper bound)."""
        return self._column_sum(1, horizon, ops)

    def s2(self, horizon: Any, ops: Any = EXACT) -> Any:
        """:func:`blt_column_sum` of ``(ω_iω_j, θ_iθ_j)``: ``Σ_{k<T} c_k²``, as :meth:`s1`."""
        return self._column_sum(2, horizon, ops)

    def _column_sum(self, power: int, horizon: Any, ops: Any) -> Any:
        if ops is not EXACT:
            return blt_column_sum(self._pairs(power, ops.number), horizon - 1, ops.number)
        return _blt_column_sum_cached(self.theta, self.omega, power, horizon)

    def _sums_exact(self, horizon: int) -> bool:
        """Whether the exact closed forms are affordable at T (:data:`BLT_EXACT_BITS`)."""
        return _blt_sums_exact(self.theta, horizon)

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
                w, s = blt_step(s, z, th, om)
                y += w
                out_list.append(y)
            return np.array(out_list, dtype=np.float64)
        lead = noise.shape[:-1]
        states = [np.zeros(lead) for _ in th]
        acc = np.zeros(lead)
        out = np.empty(noise.shape, dtype=np.float64)
        for t in range(noise.shape[-1]):
            w, states = blt_step(states, noise[..., t], th, om)
            acc = acc + w
            out[..., t] = acc
        return out

    def decoder_float(self, horizon: int) -> FloatArray:
        """The decoder coefficients as floats (impulse response of the buffer recursion)."""
        impulse = np.zeros(horizon, dtype=np.float64)
        impulse[0] = 1.0
        return self.combine(impulse, horizon)

    def decoder_fast(self, horizon: int) -> FloatArray:
        """The decoder coefficients ``b_0 … b_{T−1}`` as floats, by doubling (O(d²·T)
        numpy work, no per-step Python): :func:`blt_decoder_doubling`."""
        return blt_decoder_doubling(self.theta, self.omega, horizon)

    def variance_float(self, horizon: int | None = None) -> FloatArray:
        """Per-step variance ``v·Σ_{k<t} b_k²`` from the float decoder coefficients of
        :meth:`decoder_fast`, summed by :func:`blocked_cumsum` (a nearest-estimate, not a
        bound; ``tests/test_variance_range.py`` measures it against the exact Fractions)."""
        T = self._horizon_for(horizon)
        e = self.decoder_fast(T)
        out: FloatArray = blocked_cumsum(e * e) * float(self.unit_variance())
        return out

    def variance(self, horizon: int | None = None) -> FloatArray:
        """Per-step variance for T ≤ ``MAX_VARIANCE_STEPS``: :meth:`variance_float`, whose
        relative error against the exact Fractions (:meth:`variance_exact`, whose rational
        decoder coefficients carry Θ(T)-bit denominators: 30 s at T = 1024 for a
        float-derived θ) is measured below 10⁻¹² at T ≤ 4096 — not the nearest floats,
        and not proven (docs/plans.md)."""
        return self.variance_float(self._variance_horizon(horizon))

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


def blt_decoder_doubling(
    theta: Sequence[Fraction], omega: Sequence[Fraction], horizon: int
) -> FloatArray:
    """The impulse response of the buffer recursion (:func:`blt_step`, the running sum of w)
    for T steps, by doubling instead of a per-step loop.

    With the state ``x = (s_1 … s_d, y)`` before a step, :func:`blt_step` and the running
    sum are linear: ``x_{t+1} = A x_t + z_t e`` with ``A = [[diag θ − 1ωᵀ, 0], [−ωᵀ, 1]]``
    and ``e = (1, …, 1)``; the impulse gives ``x_{t+1} = A^t e`` and ``b_t = (A^t e)_y``.
    The columns ``[L, 2L)`` are ``A^L`` times the columns ``[0, L)``: log₂T float matrix
    products, each column through at most log₂T of them.  The powers ``A^L`` are squared
    in 60-digit mpmath from the exact θ, ω and rounded once (squaring in float loses
    10⁻¹¹ at T = 2²⁰: the eigenvalue 1 of the running sum and decays within 10⁻⁶ of 1)."""
    from dpref.rigorous import mp_context

    ctx = mp_context()
    d = len(theta)
    th = [ctx.mpf(t.numerator) / t.denominator for t in theta]
    om = [ctx.mpf(w.numerator) / w.denominator for w in omega]
    exact = ctx.matrix(d + 1, d + 1)
    for i in range(d):
        for j in range(d):
            exact[i, j] = (th[i] if i == j else 0) - om[j]
        exact[d, i] = -om[i]
    exact[d, d] = 1
    X = np.empty((d + 1, horizon), dtype=np.float64)
    X[:, 0] = 1.0
    width = 1
    while width < horizon:
        stop = min(2 * width, horizon)
        power = np.array(exact.tolist(), dtype=np.float64)
        X[:, width:stop] = power @ X[:, : stop - width]
        width = stop
        if width < horizon:
            exact = exact * exact
    out: FloatArray = np.ascontiguousarray(X[d])
    return out


def blocked_cumsum(values: FloatArray, block: int = 1024) -> FloatArray:
    """Prefix sums of non-negative floats with a relative error ≤ ``(block + 2)·2⁻⁵³``
    (numpy's cumsum within blocks; the blocks' totals accumulated exactly as Fractions and
    each offset rounded once), instead of ``T·2⁻⁵³`` for one sequential cumsum."""
    n = values.size
    out = np.empty(n, dtype=np.float64)
    offset = Fraction(0)
    for start in range(0, n, block):
        part = np.cumsum(values[start : start + block])
        out[start : start + block] = part + float(offset)
        offset += Fraction(math.fsum(values[start : start + block].tolist()))
    return out


@lru_cache(maxsize=64)
def _blt_column_sum_cached(
    theta: tuple[Fraction, ...], omega: tuple[Fraction, ...], power: int, horizon: int
) -> Fraction:
    """S₁ (``power`` 1) or S₂ (2) of the BLT ``(θ, ω)`` at T, the value :meth:`BLT.s1` and
    :meth:`BLT.s2` return: :func:`blt_column_sum` exactly while :func:`_blt_sums_exact`,
    else evaluated at 60 digits, widened by a relative 10⁻⁴⁰ and rounded up.

    Cached per (θ, ω, power, T): every ``release`` reads the node scale, and the exact sum
    of a float-derived θ (53-bit denominators) took 0.25 s at T = 1024.  Bounded: 64
    entries, each at most ``BLT_EXACT_BITS`` bits per side (≤ 64 KiB), so ≤ 4 MiB."""
    pairs = blt_pairs(theta, omega, power)
    if _blt_sums_exact(theta, horizon):
        exact: Fraction = blt_column_sum(pairs, horizon - 1, EXACT.number)
        return exact
    from dpref.rigorous import mp_context, mpf_fraction

    ctx = mp_context()
    total = blt_column_sum(pairs, horizon - 1, lambda f: ctx.mpf(f.numerator) / f.denominator)
    return _round_up(mpf_fraction(total) * (1 + Fraction(1, 10**40)))


def _blt_sums_exact(theta: tuple[Fraction, ...], horizon: int) -> bool:
    """Whether the exact closed forms are affordable at T (:data:`BLT_EXACT_BITS`)."""
    bits = max(2 * t.denominator.bit_length() for t in theta)
    return horizon * bits <= BLT_EXACT_BITS


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
        w, self._s = blt_step(self._s, z, self._theta, self._omega)
        self._y += w
        return self._count + self._y
