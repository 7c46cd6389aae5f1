"""Exponentially decayed sums: :class:`ExponentialSum` (docs/spec.md §2.3).

The left nodes of one growing tree, weighted by ``α^{u−i}``; the batch path runs the
recursion ``N(t) = z_t + α^{2^{lsb(t)}} N(t − 2^{lsb(t)})`` one popcount group at a
time (:func:`dpref.dyadic.popcount_groups`).  Conventions: see
:mod:`dpref.mechanisms.decayed`.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt

from dpref.caching import BytesCache
from dpref.domains import Domain
from dpref.dyadic import popcount_groups, trailing_zeros
from dpref.errors import EnumerationBudgetError, ParameterError
from dpref.lower_bounds import (
    Decay,
    exponential_decay,
)
from dpref.mechanisms.base import EXACT, BudgetTerm, Example, NodeTable, OnlineCounter
from dpref.mechanisms.decayed.common import _ONE, FloatArray, IntArray, _Decayed
from dpref.noise import NoiseKind
from dpref.plan import ExactSparse, TargetRows
from dpref.rigorous import (
    check_alpha,
    exponential_sensitivity_bounds,
)
from dpref.types import Budget, ExactReal, Horizon
from dpref.validation import ceil_float, fmt

__all__ = ["EXACT_POWER_BITS", "ExponentialSum"]

EXACT_POWER_BITS = 1 << 16
"""Largest ``T·log₂(max(num, den))`` of α for an exact plan or ``variance_exact`` at T
(``α = 9/10``: T ≤ 16384; α = 0.3 as a float: T ≤ 1213).  Beyond it
:class:`~dpref.errors.EnumerationBudgetError`: the exact check's cost grows like
``T²·bits`` (``ExponentialSum(0.9).plan(4096).check()`` took over a minute)."""

IndexArray = npt.NDArray[np.intp]


class ExponentialSum(_Decayed):
    """Exponentially decayed sums ``F(t) = Σ_{i≤t} α^{t−i} x_i``, 0 < α < 1.

    Nodes: the **left nodes only** of one growing tree — exactly one ends at each t,
    ``[t − 2^{lsb(t)} + 1, t]`` — and node ``[l, u]`` stores ``Σ_{i=l}^{u} α^{u−i} x_i``
    (weights ``α^{u−i}``: the patent's "weight applied to an update").  The estimate
    at t uses the left nodes ``[1,u_1], [u_1+1,u_2], …, [u_{r−1}+1, t]`` of the binary
    decomposition of t: ``F̂(t) = Σ_m α^{t−u_m}·noisy_m``, unbiased because the weights
    telescope.

    Sensitivity: item i's k-th left ancestor ends at ``u_k ≥ i + 2^{k−1} − 1`` (the
    patent's Assertion 2), with equality for item 1, so the exact L1 sensitivity is
    ``S(α) = Σ_{k≥1} α^{2^{k−1}−1}`` (``S(0.9) ≈ 3.353``, ``S(0.99) ≈ 6.378``,
    ``S = O(log 1/(1−α))``), and every node gets ``Lap(S·Δ/ε)``.  S is irrational in
    general; the scale is a rational (float) upper bound from
    :func:`exponential_sensitivity_bounds`.  At horizon T the privacy sum is the
    truncation ``S_L(α)/S·ε`` with ``L = ⌊log₂T⌋ + 1`` (checked exactly).

    Variance at t: ``2(SΔ/ε)² Σ_{bits b of t} α^{2(t mod 2^b)}`` ≤ ``2(SΔ/ε)²·(1 +
    1/(1−α²))``-ish: bounded in t.  Online memory O(log t).  ``noise="discrete"`` is
    refused: node values are not integers.

    Parameters
    ----------
    alpha
        The decay α, 0 < α < 1 (the weight of an item t−i steps old is α^i).

    References
    ----------
    .. [1] Bolot et al., ICDT 2013, ExponentialSum (Table 3, Assertion 2, Theorem 5).
    """

    name = "exponential"
    examples = (
        Example({"alpha": Fraction(1, 2)}, horizons=(9,)),
        Example({"alpha": Fraction(9, 10)}, horizons=()),
        Example({"alpha": Fraction(1, 2)}, horizons=(9,), privacy="zcdp"),
    )

    def __init__(
        self,
        *,
        alpha: ExactReal,
        epsilon: Budget | None = None,
        rho: Budget | None = None,
        horizon: Horizon | None = None,
        domain: Domain | None = None,
        noise: NoiseKind | None = None,
    ) -> None:
        super().__init__(epsilon=epsilon, rho=rho, horizon=horizon, domain=domain, noise=noise)
        self.alpha: Fraction = check_alpha(alpha)
        if self.noise in ("discrete", "discrete_gaussian"):
            raise ParameterError(
                f"noise={self.noise!r}: ExponentialSum nodes hold weighted (non-integer) sums"
            )
        self.sensitivity_bounds: tuple[Fraction, Fraction] = exponential_sensitivity_bounds(
            self.alpha
        )
        """Rational bounds on S(α)."""

    def extra_params(self) -> dict[str, Any]:
        return {"alpha": self.alpha}

    def decay(self) -> Decay:
        """``g(i) = α^i``."""
        return exponential_decay(self.alpha)

    @property
    def base(self) -> Fraction:
        return self.alpha

    def scale(self, ops: Any = EXACT, **s: Any) -> Any:
        """The per-node Laplace scale ``S·Δ/ε``: with no symbols, S the rational upper bound
        of S(α) and the result rounded up to a float (every path draws with it); with the
        symbols ``S``, ``sensitivity``, ``epsilon`` the exact formula, which the proofs
        evaluate.  :meth:`budget_terms` declares it."""
        S = s.get("S", self.sensitivity_bounds[1])
        exact = S * s.get("sensitivity", self.sensitivity) / s.get("epsilon", self.design_epsilon)
        return exact if s else Fraction(ceil_float(exact))

    @staticmethod
    def level_weight(k: Any, alpha: Any) -> Any:
        """``α^{2^{k−1}−1}``: item 1's weight in its level-k node ``[1, 2^{k−1}]`` (the
        worst item's, Assertion 2).  One formula for :meth:`budget_terms` and
        :meth:`expected_l1_sum`; Fractions or sympy."""
        return alpha ** (2 ** (k - 1) - 1)

    def budget_terms(self, ops: Any = EXACT, **s: Any) -> list[BudgetTerm]:
        """Level k: item 1's node ``[1, 2^{k−1}]`` has weight ``α^{2^{k−1}−1}`` (the worst).

        ``membership`` is the worst item's total weight ``|a_{n,i}|`` in nodes of the
        level.  Levels ``k = 1..L`` with ``L = min(⌊log₂T⌋+1, 12)`` (symbol ``levels``;
        12 with no horizon; higher levels are folded into the last term).  The scale
        is ``S·Δ/ε`` with ``S`` given as the symbol ``S`` or
        the rational upper bound used.  A last term ``levels>L`` declares the weight of
        the levels above L, ``S − S_L(α)`` (≥ ``Σ_{k>L} α^{2^{k−1}−1}``), so the
        declarations add up to ε.
        """
        eps = s.get("epsilon", self.design_epsilon)
        delta = s.get("sensitivity", self.sensitivity)
        alpha = s.get("alpha", self.alpha)
        T = s.get("horizon", self.horizon)
        L = s.get("levels", 12 if T is None else min(12, int(T).bit_length()))
        S = s["S"] if "S" in s else self.scale() * self.design_epsilon / self.sensitivity
        scale = self.scale(ops, S=S, sensitivity=delta, epsilon=eps)
        weights = [self.level_weight(k, alpha) for k in range(1, L + 1)]
        return [
            *(BudgetTerm(f"level_{k}", w, scale) for k, w in enumerate(weights, 1)),
            BudgetTerm("levels>L", S - sum(weights[1:], weights[0]), scale),
        ]

    def expected_l1_sum(self, horizon: int) -> Fraction | None:
        """``S_L(α)·Δ/λ`` with ``L = ⌊log₂T⌋ + 1``: item 1's weights, exactly."""
        weights = (self.level_weight(k, self.alpha) for k in range(1, horizon.bit_length() + 1))
        total: Fraction = sum(weights, Fraction(0)) * self.sensitivity / self.scale()
        return total

    def g(self, i: int) -> Fraction:
        """The decay function ``α^i``."""
        return self.alpha**i if i >= 0 else Fraction(0)

    @staticmethod
    def node_start(t: Any) -> Any:
        """``t − 2^{lsb(t)} + 1``: the start of the one (left) node ending at t, the
        aligned node of size ``2^{lsb(t)}``.  Written with ``&`` and unary minus so that it
        takes ints, int64 arrays and z3 bit-vectors (``proofs/decayed.py`` proves the
        layout for every ``1 ≤ t ≤ 2⁶²``)."""
        return t - (t & -t) + 1

    def nodes(self, horizon: int) -> NodeTable:
        t = np.arange(1, horizon + 1, dtype=np.int64)
        return NodeTable(self.node_start(t), t, (self.scale(),), np.zeros(horizon, np.int64))

    def _check_exact_work(self, horizon: int) -> None:
        """The exact plan holds ``α^d`` for every ``d < T``: refuse it when ``α^{T}``
        would exceed :data:`EXACT_POWER_BITS` bits (the check multiplies ~T² of them)."""
        bits = horizon * max(self.alpha.numerator.bit_length(), self.alpha.denominator.bit_length())
        if bits > EXACT_POWER_BITS:
            raise EnumerationBudgetError(
                f"horizon={horizon}: the exact plan of ExponentialSum(alpha={fmt(self.alpha)})"
                f" needs alpha^{horizon - 1}, ~{bits} bits > {EXACT_POWER_BITS}; use a shorter"
                " horizon or an alpha with a shorter fraction (release/variance are not limited)"
            )

    def recombination(self, horizon: int) -> ExactSparse:
        self._check_exact_work(horizon)
        t = np.arange(1, horizon + 1, dtype=np.int64)
        rows_l, cols_l, d_l = [], [], []
        for b in range(horizon.bit_length()):
            rows = np.flatnonzero(t >> b & 1)
            u = (t[rows] >> b) << b
            rows_l.append(rows)
            cols_l.append(u - 1)
            d_l.append(t[rows] - u)
        rows_a, cols_a, d_a = (np.concatenate(v) for v in (rows_l, cols_l, d_l))
        uniq, inv = np.unique(d_a, return_inverse=True)
        table = tuple(self.alpha ** int(d) for d in uniq)
        return ExactSparse.from_triples(
            (horizon, horizon), rows_a, cols_a, table, np.asarray(inv, np.int64).ravel()
        )

    def target_rows(self, horizon: int) -> TargetRows:
        t = np.arange(1, horizon + 1, dtype=np.int64)
        return TargetRows(
            np.arange(horizon + 1, dtype=np.int64),
            np.ones(horizon, np.int64),
            t,
            _ONE,
            np.zeros(horizon, np.int64),
        )

    def variance_exact(self, horizon: int | None = None) -> list[Fraction]:
        """``2λ² Σ_{bits b of t} α^{2(t mod 2^b)}`` exactly."""
        t_max = self._horizon_for(horizon)
        self._check_exact_work(t_max)
        unit = self.node_variance(self.scale())
        a2 = self.alpha**2
        powers: dict[int, Fraction] = {}
        out = []
        for t in range(1, t_max + 1):
            acc = Fraction(0)
            for b in range(t.bit_length()):
                if t >> b & 1:
                    d = t & ((1 << b) - 1)
                    if d not in powers:
                        powers[d] = a2**d
                    acc += powers[d]
            out.append(unit * acc)
        return out

    def _variance_at(self, t: IntArray) -> FloatArray:
        a2 = float(self.alpha) ** 2
        acc = np.zeros(t.size, dtype=np.float64)
        for b in range(int(t.max()).bit_length()):
            on = (t >> b & 1).astype(bool)
            low = t[on] & ((1 << b) - 1)
            if low.size > 1 << b:  # the 2^b powers once, then a lookup (the same floats)
                acc[on] += (a2 ** np.arange(1 << b, dtype=np.float64))[low]
            else:
                acc[on] += a2 ** low.astype(np.float64)
        out: FloatArray = acc * (self.node_variance_float(self.scale()))
        return out

    def combine(self, noise: FloatArray, horizon: int) -> FloatArray:
        # N(t) = z_t + α^{lsb(t)} N(t − lsb(t)), processed in order of popcount.
        out = np.array(noise, dtype=np.float64, copy=True)
        for idx, par, mult in _EXP_GROUPS.get((horizon, float(self.alpha))):
            out[..., idx] += mult * out[..., par]
        return out

    def target(self, stream: Any) -> FloatArray:
        """Exact decayed sums ``F(t) = α F(t−1) + x_t`` (float recursion)."""
        return self._target_checked(self._stream(stream))

    def _target_checked(self, x: FloatArray) -> FloatArray:
        from scipy.signal import lfilter  # ~1.7 s to import: only when a target is asked for

        out: FloatArray = lfilter([1.0], [1.0, -float(self.alpha)], x)
        return out

    def node_count(self, horizon: int) -> int:
        return horizon

    def noise_scales(self, horizon: int) -> FloatArray | float:
        return ceil_float(self.scale())

    def online(self, rng: Any = None, noise: Any = None) -> OnlineCounter:
        return _ExponentialOnline(self, rng, noise)


_ExpGroups = tuple[tuple[IndexArray, IndexArray, FloatArray], ...]


def _exp_groups(key: tuple[int, float]) -> _ExpGroups:
    """:func:`~dpref.dyadic.popcount_groups` with each t's multiplier ``α^{2^{lsb(t)}}``."""
    n, alpha = key
    mult_level = np.array([alpha ** (1 << b) for b in range(64)], dtype=np.float64)
    out = []
    for idx, par in popcount_groups(n):
        mult = mult_level[trailing_zeros(idx + 1)]
        mult.setflags(write=False)
        out.append((idx, par, mult))
    return tuple(out)


EXP_GROUPS_CACHE_BYTES = 32 << 20
"""Bytes of recursion groups kept for older ``(horizon, α)``; the newest is kept whatever
its size (24 bytes per t: 24 MB at T = 10⁶, where an ``lru_cache(maxsize=8)`` held up
to 190 MB)."""

_EXP_GROUPS: BytesCache[tuple[int, float], _ExpGroups] = BytesCache(
    _exp_groups, EXP_GROUPS_CACHE_BYTES
)


class _ExponentialOnline(OnlineCounter):
    """Per level: the latest left node (end, true value, noisy value): O(log t)."""

    def __init__(self, m: ExponentialSum, rng: Any, noise: Any) -> None:
        super().__init__(m, rng, noise)
        self._alpha = float(m.alpha)
        self._scale = m.scale()
        self._scale_f = ceil_float(self._scale)
        self._end: list[int] = []
        self._true: list[float] = []
        self._noisy: list[float] = []

    def step(self, x: Any) -> float:
        v = self._admit(x)
        t = self.t
        top = (t & -t).bit_length() - 1
        while len(self._end) <= top:
            self._end.append(0)
            self._true.append(0.0)
            self._noisy.append(0.0)
        a = self._alpha
        for j in range(top):  # left nodes of sizes 2^j ending at t − 2^j
            v += a ** (1 << j) * self._true[j]
        self._end[top] = t
        self._true[top] = v
        self._noisy[top] = v + self._noise(self._scale_f, self._scale)
        return sum(
            a ** (t - self._end[b]) * self._noisy[b] for b in range(t.bit_length()) if t >> b & 1
        )

    def state_size(self) -> int:
        """Floats held (O(log t))."""
        return 3 * len(self._end)
