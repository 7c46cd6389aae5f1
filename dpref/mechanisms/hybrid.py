"""The hybrid counting mechanism for unbounded streams (docs/spec.md §1; Chan, Shi, Song
2011, Algorithm 4): log blocks plus one Binary instance per power of two.

One source of truth: :meth:`Hybrid.memberships`, :meth:`Hybrid.log_scale`,
:meth:`Hybrid.instance_scale` and :meth:`Hybrid.node_interval` are what ``nodes``, the
batch and online draws and the variance use, and what ``budget_terms`` declares; the
proofs evaluate them (sympy for the scales, z3 for the intervals over every t ≤ 2⁶²).
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt

from dpref.dyadic import binary_noise_sum, floor_log2, prefix_nodes
from dpref.mechanisms.base import EXACT, BudgetTerm, Example, NodeTable, OnlineCounter, RowTerm
from dpref.mechanisms.counting_common import _BinaryState, _Counting, _ones_sparse, _popcount
from dpref.plan import ExactSparse
from dpref.validation import ceil_float

__all__ = ["Hybrid"]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


class Hybrid(_Counting):
    """The hybrid mechanism for unbounded streams (no horizon), ε split ε/2 + ε/2.

    * log part: blocks ``{1}``, ``{2^{k−1}+1 … 2^k}`` (k ≥ 1), each released at its
      end with ``Lap(2Δ/ε)``; at ``t = 2^k`` the output is the sum of the noisy blocks;
    * binary part: for each k ≥ 1 a Binary mechanism with horizon ``2^k − 1`` (so
      ``k`` levels) and budget ε/2 — scale ``2kΔ/ε`` — runs over items
      ``2^k+1 … 2^{k+1}−1``;
    * output at ``t = 2^k + r`` (``1 ≤ r < 2^k``): log output at ``2^k`` plus the
      k-th binary output at r.

    Exactly one node ends at every t.  An item is in one log block (ε/2) and in k
    nodes of the k-th instance (k · ε/(2k) = ε/2): ε in all, reached from T = 4 on
    (below that only the log blocks of items 1–3 are complete).  Variance at
    ``t = 2^k + r``: ``2(2Δ/ε)²(k + 1) + popcount(r)·2(2kΔ/ε)²``.  This is the
    project's convention (docs/spec.md §1), after Chan, Shi, Song's Hybrid Mechanism.

    References
    ----------
    .. [1] Chan, Shi, Song 2011, Algorithm 4 (Hybrid Mechanism).
    """

    name = "hybrid"
    needs_horizon = False
    examples = (Example(horizons=(13,)),)

    # ------------------------------------------------ the one source of truth
    @staticmethod
    def instance_levels(k: Any, ops: Any = EXACT) -> Any:
        """Levels of the k-th binary instance (horizon ``2^k − 1``): ``k``, the nodes of
        it the worst of its items lies in (``Binary.levels(2^k − 1) = k``, proven)."""
        return k

    @classmethod
    def memberships(cls, k: Any, ops: Any = EXACT) -> dict[str, Any]:
        """An item of instance k lies in one log block and :meth:`instance_levels` nodes."""
        return {"log": 1, "binary_k": cls.instance_levels(k, ops)}

    @classmethod
    def log_scale(cls, epsilon: Any, sensitivity: Any, ops: Any = EXACT) -> Any:
        """The log blocks' scale: half of ε for the one block an item lies in, ``2Δ/ε``."""
        return ops.number(cls.memberships(1, ops)["log"]) * sensitivity / (epsilon / 2)

    @classmethod
    def instance_scale(cls, k: Any, epsilon: Any, sensitivity: Any, ops: Any = EXACT) -> Any:
        """The k-th instance's scale: a Binary mechanism with budget ε/2, ``2kΔ/ε``."""
        return ops.number(cls.memberships(k, ops)["binary_k"]) * sensitivity / (epsilon / 2)

    @staticmethod
    def node_interval(t: Any, ops: Any = EXACT) -> tuple[Any, Any]:
        """The node released at t: the log block ``[t/2 + 1, t]`` (``[1, 1]`` at t = 1) when
        t is a power of two, else the k-th instance's node ``[t − lowbit(r) + 1, t]``
        (``t = 2^k + r``).  Generic: ints (:data:`EXACT`) or z3 bit-vectors."""
        r = t - ops.shl(1, ops.floor_log2(t))
        return (ops.ite(r == 0, (t >> 1) + 1, t - (r & -r) + 1), t)

    def budget_terms(self, ops: Any = EXACT, **s: Any) -> list[BudgetTerm]:
        """One log block of :meth:`log_scale` and :meth:`instance_levels` nodes of the k-th
        instance, of :meth:`instance_scale` (``2Δ/ε`` and ``2kΔ/ε``).

        ``k`` (default: the largest instance of the horizon, or 1) is the instance
        index of the worst item.
        """
        eps = s.get("epsilon", self.design_epsilon)
        delta = s.get("sensitivity", self.sensitivity)
        k = s.get("k", 1 if self.horizon is None else max(1, floor_log2(self.horizon)))
        members = self.memberships(k, ops)
        return [
            BudgetTerm("log", members["log"], self.log_scale(eps, delta, ops)),
            BudgetTerm("binary_k", members["binary_k"], self.instance_scale(k, eps, delta, ops)),
        ]

    def row_terms(self, t: Any, ops: Any = EXACT, **s: Any) -> list[RowTerm]:
        """At ``t = 2^k + r`` (``0 ≤ r < 2^k``): the k+1 log blocks ending at 1, 2, …, 2^k
        (scale ``2Δ/ε``) and one node per 1-bit of r from the k-th instance (``2kΔ/ε``;
        for t = 1, k = 0 and r = 0, so that term is empty).
        """
        eps = s.get("epsilon", self.design_epsilon)
        delta = s.get("sensitivity", self.sensitivity)
        k = ops.floor_log2(t)
        r = t - 2**k
        return [
            RowTerm("log", k + 1, 1, self.log_scale(eps, delta, ops)),
            RowTerm("binary_k", ops.popcount(r), 1, self.instance_scale(k, eps, delta, ops)),
        ]

    def variance_counts(self, horizon: int | None = None) -> tuple[Fraction, IntArray] | None:
        """``(v, (k+1) + max(k,1)^p·popcount(r))`` at ``t = 2^k + r``, with v the variance of
        a log block: the k-th instance's scale is k times the log scale ``2Δ/ε``, so its node
        variance is k²·v for Laplace noise (``2b²``) and k·v for Gaussian (linear in b)."""
        t = np.arange(1, self._horizon_for(horizon) + 1, dtype=np.int64)
        k = np.floor(np.log2(t)).astype(np.int64)
        k += (1 << (k + 1)) <= t  # exact ⌊log₂t⌋ whatever the float rounding
        k -= (1 << k) > t
        r = t - (1 << k)
        unit = self.node_variance(self._log_scale())
        power = 1 if self.gaussian else 2
        if any(self.node_variance(self._bin_scale(j)) != j**power * unit for j in (1, 2, 3)):
            return None  # not the k-fold scales this closed form is for: use variance_exact
        return unit, (k + 1) + np.maximum(k, 1) ** power * np.bitwise_count(r).astype(np.int64)

    def online_memory(self, horizon: int | None = None) -> int | None:
        """The log part's total and block sum, and one Binary state (``2k + 1`` floats for
        the k-th instance, ``k ≤ ⌊log₂T⌋``)."""
        T = self.horizon if horizon is None else horizon
        if T is None:
            return None
        return 2 + 2 * max(1, floor_log2(T)) + 1

    def _log_scale(self) -> Fraction:
        scale: Fraction = self.log_scale(self.design_epsilon, self.sensitivity)
        return scale

    def _bin_scale(self, k: int) -> Fraction:
        scale: Fraction = self.instance_scale(k, self.design_epsilon, self.sensitivity)
        return scale

    def expected_l1_sum(self, horizon: int) -> Fraction | None:
        return self.design_epsilon if horizon >= 4 else self.design_epsilon / 2

    def nodes(self, horizon: int) -> NodeTable:
        lo = np.empty(horizon, dtype=np.int64)
        hi = np.arange(1, horizon + 1, dtype=np.int64)
        scale_idx = np.empty(horizon, dtype=np.int64)
        kmax = max(1, floor_log2(horizon))
        table = (self._log_scale(), *(self._bin_scale(k) for k in range(1, kmax + 1)))
        for t in range(1, horizon + 1):
            lo[t - 1] = self.node_interval(t)[0]
            scale_idx[t - 1] = 0 if t & (t - 1) == 0 else floor_log2(t)
        return NodeTable(lo, hi, table, scale_idx)

    def recombination(self, horizon: int) -> ExactSparse:
        rows: list[int] = []
        cols: list[int] = []
        for t in range(1, horizon + 1):
            k = floor_log2(t)
            for j in range(k + 1):  # log nodes at 1, 2, 4, …, 2^k
                rows.append(t - 1)
                cols.append((1 << j) - 1)
            r = t - (1 << k)
            for _, u in prefix_nodes(r):
                rows.append(t - 1)
                cols.append((1 << k) + u - 1)
        return _ones_sparse((horizon, horizon), rows, cols)

    def variance_exact(self, horizon: int | None = None) -> list[Fraction]:
        t_max = self._variance_horizon(horizon)
        log_unit = self.node_variance(self._log_scale())
        out = []
        for t in range(1, t_max + 1):
            k = floor_log2(t)
            r = t - (1 << k)
            out.append(
                (k + 1) * log_unit + _popcount(r) * self.node_variance(self._bin_scale(max(k, 1)))
            )
        return out

    def combine(self, noise: FloatArray, horizon: int) -> FloatArray:
        out = np.empty(noise.shape, dtype=np.float64)
        kmax = floor_log2(horizon)
        log_pos = (1 << np.arange(kmax + 1)) - 1
        log_cum = np.cumsum(noise[..., log_pos], axis=-1)
        for k in range(kmax + 1):
            start = 1 << k  # t = 2^k
            out[..., start - 1] = log_cum[..., k]
            end = min(horizon, (1 << (k + 1)) - 1)
            if end > start:
                seg = binary_noise_sum(noise[..., start:end])
                out[..., start:end] = seg + log_cum[..., k : k + 1]
        return out

    def online(self, rng: Any = None, noise: Any = None) -> OnlineCounter:
        return _HybridOnline(self, rng, noise)


class _HybridOnline(OnlineCounter):
    def __init__(self, m: Hybrid, rng: Any, noise: Any) -> None:
        super().__init__(m, rng, noise)
        self._log_scale = m._log_scale()
        self._log_scale_f = ceil_float(self._log_scale)
        self._log_total = 0.0  # sum of released noisy log blocks
        self._block_true = 0.0
        self._k = 0
        self._bin_scale = Fraction(0)
        self._bin_scale_f = 0.0
        self._bin = _BinaryState()

    def step(self, x: Any) -> float:
        v = self._admit(x)
        t = self.t
        self._block_true += v
        if t & (t - 1) == 0:  # t = 2^k: release the log block, start instance k
            self._log_total += self._block_true + self._noise(self._log_scale_f, self._log_scale)
            self._block_true = 0.0
            self._k = t.bit_length() - 1
            m = self.mechanism
            assert isinstance(m, Hybrid)
            self._bin_scale = m._bin_scale(max(self._k, 1))
            self._bin_scale_f = ceil_float(self._bin_scale)
            self._bin = _BinaryState()
            return self._log_total
        z = self._noise(self._bin_scale_f, self._bin_scale)
        return self._log_total + self._bin.step(v, z)
