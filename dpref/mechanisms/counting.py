"""Continual counting (docs/spec.md §1): Simple I, Simple II, Two-Level, Binary (Hybrid:
:mod:`dpref.mechanisms.hybrid`).

Target: prefix sums ``c_t = Σ_{i≤t} x_i``.  Every mechanism releases noisy p-sums
(nodes) and adds them up; the canonical node order is by release time, then by
interval length (Two-Level releases its item node before its block node at a block
end).

References
----------
.. [1] T.-H. H. Chan, E. Shi, D. Song. "Private and Continual Release of
   Statistics." ACM TISSEC 14(3), 2011 (ICALP 2010).
.. [2] C. Dwork, M. Naor, T. Pitassi, G. N. Rothblum. "Differential Privacy under
   Continual Observation." STOC 2010, pp. 715–724.
"""

from __future__ import annotations

from abc import abstractmethod
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt

from dpref.domains import Domain
from dpref.dyadic import binary_noise_sum, floor_log2, prefix_nodes, trailing_zeros
from dpref.mechanisms.base import (
    EXACT,
    BudgetTerm,
    Example,
    NodeTable,
    OnlineCounter,
    RowTerm,
)
from dpref.mechanisms.counting_common import (
    _BinaryState,
    _Counting,
    _ones_sparse,
    _popcount,
    _uniform_nodes,
)
from dpref.mechanisms.trees import (
    BUDGETS,
    design_level_budget,
    digit_counts,
    digit_variances,
    tree_levels,
)
from dpref.noise import NoiseKind
from dpref.plan import ExactSparse
from dpref.types import Budget, BudgetSplit, Count, Horizon
from dpref.validation import ceil_float, check_int_range

__all__ = ["Binary", "Hybrid", "SimpleI", "SimpleII", "TwoLevel"]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


def _whole_horizon(horizon: int) -> int:
    """B = T: one block (a Two-Level example)."""
    return horizon


def _third_of_horizon(horizon: int) -> int:
    """B = ⌊T/3⌋ (at least 1): a few blocks and a remainder (a Two-Level example)."""
    return max(1, horizon // 3)


class _UniformCounting(_Counting):
    """Counting mechanisms whose nodes all share one scale: ε split evenly over the nodes
    the worst-placed item lies in.

    One source of truth: :meth:`memberships` (nodes of each kind holding the worst item)
    and :meth:`node_scale` (computed from it) are what every path uses — ``nodes``, the
    batch and online draws, the variance — and what :meth:`budget_terms` declares.  Both
    are written against an ``ops`` namespace, so ``proofs`` evaluates them for symbolic
    T, ε, Δ (a subclass that changes either changes what is drawn and its proofs fail).
    """

    @classmethod
    @abstractmethod
    def memberships(cls, horizon: Any, ops: Any = EXACT) -> dict[str, Any]:
        """Node kind → how many nodes of that kind the worst-placed item lies in."""

    @classmethod
    def node_scale(cls, horizon: Any, epsilon: Any, sensitivity: Any, ops: Any = EXACT) -> Any:
        """The Laplace scale of every node: ``(Σ_kinds membership)·Δ/ε``."""
        total = sum(cls.memberships(horizon, ops).values())
        return ops.number(total) * sensitivity / epsilon

    def budget_terms(self, ops: Any = EXACT, **s: Any) -> list[BudgetTerm]:
        """The worst item's nodes per kind (:meth:`memberships`), each of scale
        :meth:`node_scale`."""
        T = s.get("horizon", self.horizon)
        eps = s.get("epsilon", self.design_epsilon)
        delta = s.get("sensitivity", self.sensitivity)
        scale = self.node_scale(T, eps, delta, ops)
        return [BudgetTerm(kind, c, scale) for kind, c in self.memberships(T, ops).items()]

    def _row_scale(self, ops: Any, s: dict[str, Any]) -> Any:
        T = s.get("horizon", self.horizon)
        eps = s.get("epsilon", self.design_epsilon)
        return self.node_scale(T, eps, s.get("sensitivity", self.sensitivity), ops)

    def _scale(self) -> Fraction:
        """The exact Laplace scale of every node (at :attr:`design_epsilon`)."""
        scale: Fraction = self.node_scale(self.horizon, self.design_epsilon, self.sensitivity)
        return scale

    def noise_scales(self, horizon: int) -> FloatArray | float:
        return ceil_float(self._scale())


# --------------------------------------------------------------------- Simple I
class SimpleI(_UniformCounting):
    """Simple counting mechanism I: release ``c_t + Lap(TΔ/ε)`` at every t.

    Nodes ``[1, t]`` for every t; item 1 lies in all T of them, so each gets scale
    ``TΔ/ε`` and the budget is ``T · Δ/(TΔ/ε) = ε``.  Variance ``2(TΔ/ε)²``.

    References
    ----------
    .. [1] Chan, Shi, Song 2011, Simple Counting Mechanism I.
    """

    name = "simple1"
    examples = (Example(horizons=(8,)),)

    @staticmethod
    def node_interval(t: Any) -> tuple[Any, Any]:
        """The node released at t: ``[1, t]`` (ints, arrays, sympy or z3 values)."""
        return (t - t + 1, t)

    @classmethod
    def memberships(cls, horizon: Any, ops: Any = EXACT) -> dict[str, Any]:
        """Item 1 is in all T nodes ``[1, t]`` (so each gets scale ``TΔ/ε``)."""
        return {"prefix": horizon}

    def row_terms(self, t: Any, ops: Any = EXACT, **s: Any) -> list[RowTerm]:
        """The output at t is the one node ``[1, t]`` (coefficient 1, scale ``TΔ/ε``)."""
        return [RowTerm("prefix", 1, 1, self._row_scale(ops, s))]

    def variance_counts(self, horizon: int | None = None) -> tuple[Fraction, IntArray] | None:
        """``(2(TΔ/ε)², 1)``."""
        return self.node_variance(self._scale()), np.ones(
            self._horizon_for(horizon), dtype=np.int64
        )

    def online_memory(self, horizon: int | None = None) -> int | None:
        """The running count."""
        return 1

    def expected_l1_sum(self, horizon: int) -> Fraction | None:
        return horizon * self.sensitivity / self._scale()

    def nodes(self, horizon: int) -> NodeTable:
        lo, hi = self.node_interval(np.arange(1, horizon + 1, dtype=np.int64))
        return _uniform_nodes(lo, hi, self._scale())

    def recombination(self, horizon: int) -> ExactSparse:
        idx = list(range(horizon))
        return _ones_sparse((horizon, horizon), idx, idx)

    def variance_exact(self, horizon: int | None = None) -> list[Fraction]:
        t = self._variance_horizon(horizon)
        return [self.node_variance(self._scale())] * t

    def combine(self, noise: FloatArray, horizon: int) -> FloatArray:
        return np.array(noise, dtype=np.float64, copy=True)

    def online(self, rng: Any = None, noise: Any = None) -> OnlineCounter:
        return _SimpleIOnline(self, rng, noise)


class _SimpleIOnline(OnlineCounter):
    def __init__(self, m: SimpleI, rng: Any, noise: Any) -> None:
        super().__init__(m, rng, noise)
        self._scale = m._scale()
        self._scale_f = ceil_float(self._scale)
        self._count = 0.0

    def step(self, x: Any) -> float:
        self._count += self._admit(x)
        return self._count + self._noise(self._scale_f, self._scale)


# -------------------------------------------------------------------- Simple II
class SimpleII(_UniformCounting):
    """Simple counting mechanism II: noisy items ``x_t + Lap(Δ/ε)``, summed.

    Each item is in one node, so the budget is ε; the error at t is the sum of t
    Laplace draws, variance ``2t(Δ/ε)²``.  Needs no horizon.

    References
    ----------
    .. [1] Chan, Shi, Song 2011, Simple Counting Mechanism II.
    """

    name = "simple2"
    needs_horizon = False
    max_plan_steps = 2**12  # the decoder is lower-triangular ones: T(T+1)/2 nonzeros
    examples = (Example(bounded=True, horizons=(9,)), Example(bounded=False, horizons=(9,)))

    @staticmethod
    def node_interval(t: Any) -> tuple[Any, Any]:
        """The node released at t: ``[t, t]``."""
        return (t, t)

    @classmethod
    def memberships(cls, horizon: Any, ops: Any = EXACT) -> dict[str, Any]:
        """Every item is in exactly one node ``[t, t]`` (scale ``Δ/ε``)."""
        return {"item": 1}

    def row_terms(self, t: Any, ops: Any = EXACT, **s: Any) -> list[RowTerm]:
        """The output at t adds the t item nodes ``[1,1] … [t,t]`` (scale ``Δ/ε``)."""
        return [RowTerm("item", t, 1, self._row_scale(ops, s))]

    def variance_counts(self, horizon: int | None = None) -> tuple[Fraction, IntArray] | None:
        """``(2(Δ/ε)², t)``."""
        return self.node_variance(self._scale()), np.arange(
            1, self._horizon_for(horizon) + 1, dtype=np.int64
        )

    def online_memory(self, horizon: int | None = None) -> int | None:
        """The running sum of noisy items."""
        return 1

    def expected_l1_sum(self, horizon: int) -> Fraction | None:
        return self.design_epsilon

    def nodes(self, horizon: int) -> NodeTable:
        lo, hi = self.node_interval(np.arange(1, horizon + 1, dtype=np.int64))
        return _uniform_nodes(lo, hi.copy(), self._scale())

    def recombination(self, horizon: int) -> ExactSparse:
        rows, cols = np.tril_indices(horizon)
        return _ones_sparse((horizon, horizon), rows, cols)

    def variance_exact(self, horizon: int | None = None) -> list[Fraction]:
        t = self._variance_horizon(horizon)
        unit = self.node_variance(self._scale())
        return [k * unit for k in range(1, t + 1)]

    def combine(self, noise: FloatArray, horizon: int) -> FloatArray:
        return np.cumsum(noise, axis=-1)

    def online(self, rng: Any = None, noise: Any = None) -> OnlineCounter:
        return _SimpleIIOnline(self, rng, noise)


class _SimpleIIOnline(OnlineCounter):
    def __init__(self, m: SimpleII, rng: Any, noise: Any) -> None:
        super().__init__(m, rng, noise)
        self._scale = m._scale()
        self._scale_f = ceil_float(self._scale)
        self._total = 0.0

    def step(self, x: Any) -> float:
        self._total += self._admit(x) + self._noise(self._scale_f, self._scale)
        return self._total


# -------------------------------------------------------------------- Two-Level
class TwoLevel(_UniformCounting):
    """Two-level mechanism with block size B (default ``⌈√T⌉``).

    Nodes: every item ``[t, t]`` and every complete block ``[(q−1)B+1, qB]``, all
    with scale ``2Δ/ε`` (ε/2 for the item node, ε/2 for its block).  Output at
    ``t = qB + r``: the first q noisy blocks plus the noisy items ``qB+1 … t``;
    variance ``2(2Δ/ε)²(⌊t/B⌋ + t mod B)``.  At a block end the item node comes
    before the block node in canonical order (also when B = 1).

    Parameters
    ----------
    block_size
        The block size B, 1 ≤ B ≤ T (default Chan et al.'s ``⌈√T⌉``).

    References
    ----------
    .. [1] Chan, Shi, Song 2011, Section 3.2 (the "two-level" √T mechanism).
    """

    name = "two-level"
    examples = (
        Example(horizons=(10,)),
        Example({"block_size": 1}, horizons=(7,)),
        Example({"block_size": _whole_horizon}, horizons=()),
        Example({"block_size": _third_of_horizon}, horizons=()),
    )

    def __init__(
        self,
        *,
        epsilon: Budget | None = None,
        rho: Budget | None = None,
        horizon: Horizon,
        block_size: Count | None = None,
        domain: Domain | None = None,
        noise: NoiseKind | None = None,
    ) -> None:
        super().__init__(epsilon=epsilon, rho=rho, horizon=horizon, domain=domain, noise=noise)
        assert self.horizon is not None
        if block_size is None:
            block_size = self.default_block_size(self.horizon)
        self.block_size: int = check_int_range("block_size", block_size, 1, self.horizon)

    @staticmethod
    def default_block_size(horizon: int, ops: Any = EXACT) -> Any:
        """Chan et al.'s ``B = ⌈√T⌉``."""
        return ops.ceil_sqrt(horizon)

    def extra_params(self) -> dict[str, Any]:
        return {"block_size": self.block_size}

    @classmethod
    def memberships(cls, horizon: Any, ops: Any = EXACT) -> dict[str, Any]:
        """One item node and at most one block node (so each gets scale ``2Δ/ε``)."""
        return {"item": 1, "block": 1}

    @staticmethod
    def block_interval(q: Any, block_size: Any) -> tuple[Any, Any]:
        """Block q (q ≥ 1): ``[(q−1)B + 1, qB]``, released at qB (item nodes: ``[t, t]``)."""
        return ((q - 1) * block_size + 1, q * block_size)

    def row_terms(self, t: Any, ops: Any = EXACT, **s: Any) -> list[RowTerm]:
        """At ``t = qB + r``: the q complete blocks and the r items after them (``2Δ/ε``)."""
        B = s.get("block_size", self.block_size)
        scale = self._row_scale(ops, s)
        return [RowTerm("block", t // B, 1, scale), RowTerm("item", t % B, 1, scale)]

    def variance_counts(self, horizon: int | None = None) -> tuple[Fraction, IntArray] | None:
        """``(2(2Δ/ε)², ⌊t/B⌋ + t mod B)``."""
        t = np.arange(1, self._horizon_for(horizon) + 1, dtype=np.int64)
        B = self.block_size
        return self.node_variance(self._scale()), t // B + t % B

    def online_memory(self, horizon: int | None = None) -> int | None:
        """Released blocks' sum, the current block's noisy items and its true sum."""
        return 3

    def expected_l1_sum(self, horizon: int) -> Fraction | None:
        per = self.sensitivity / self._scale()
        return 2 * per if horizon >= self.block_size else per

    def _layout(self, horizon: int) -> tuple[IntArray, IntArray]:
        """Canonical positions of the item node of each t and of each block."""
        B = self.block_size
        t = np.arange(1, horizon + 1, dtype=np.int64)
        blocks_before = (t - 1) // B  # complete blocks released before time t
        item_pos = (t - 1) + blocks_before
        q = np.arange(1, horizon // B + 1, dtype=np.int64)
        block_pos = q * B + (q - 1) + 0  # item node of qB sits at qB-1+(q-1); block right after
        return item_pos, block_pos

    def nodes(self, horizon: int) -> NodeTable:
        B = self.block_size
        item_pos, block_pos = self._layout(horizon)
        n = horizon + horizon // B
        lo = np.empty(n, dtype=np.int64)
        hi = np.empty(n, dtype=np.int64)
        t = np.arange(1, horizon + 1, dtype=np.int64)
        lo[item_pos] = t
        hi[item_pos] = t
        q = np.arange(1, horizon // B + 1, dtype=np.int64)
        lo[block_pos], hi[block_pos] = self.block_interval(q, B)
        return _uniform_nodes(lo, hi, self._scale())

    def node_count(self, horizon: int) -> int:
        return horizon + horizon // self.block_size

    def recombination(self, horizon: int) -> ExactSparse:
        B = self.block_size
        item_pos, block_pos = self._layout(horizon)
        t = np.arange(1, horizon + 1, dtype=np.int64)
        q = t // B
        # blocks 1..q, then items qB+1..t, for every row t
        b_rows = np.repeat(t - 1, q)
        b_cols = block_pos[np.arange(int(q.sum())) - np.repeat(np.cumsum(q) - q, q)]
        n_items = t - q * B
        i_rows = np.repeat(t - 1, n_items)
        i_first = np.repeat(q * B, n_items)  # 0-based index of item qB+1
        i_cols = item_pos[
            i_first
            + np.arange(int(n_items.sum()))
            - np.repeat(np.cumsum(n_items) - n_items, n_items)
        ]
        return _ones_sparse(
            (horizon, horizon + horizon // B),
            np.concatenate([b_rows, i_rows]),
            np.concatenate([b_cols, i_cols]),
        )

    def variance_exact(self, horizon: int | None = None) -> list[Fraction]:
        t_max = self._variance_horizon(horizon)
        B = self.block_size
        unit = self.node_variance(self._scale())
        return [unit * (t // B + t % B) for t in range(1, t_max + 1)]

    def combine(self, noise: FloatArray, horizon: int) -> FloatArray:
        B = self.block_size
        item_pos, block_pos = self._layout(horizon)
        zi = noise[..., item_pos]
        zb = noise[..., block_pos]
        lead = noise.shape[:-1]
        ci = np.concatenate([np.zeros((*lead, 1)), np.cumsum(zi, axis=-1)], axis=-1)
        cb = np.concatenate([np.zeros((*lead, 1)), np.cumsum(zb, axis=-1)], axis=-1)
        t = np.arange(1, horizon + 1)
        q = t // B
        out: FloatArray = cb[..., q] + ci[..., t] - ci[..., q * B]
        return out

    def online(self, rng: Any = None, noise: Any = None) -> OnlineCounter:
        return _TwoLevelOnline(self, rng, noise)


class _TwoLevelOnline(OnlineCounter):
    def __init__(self, m: TwoLevel, rng: Any, noise: Any) -> None:
        super().__init__(m, rng, noise)
        self._B = m.block_size
        self._scale = m._scale()
        self._scale_f = ceil_float(self._scale)
        self._blocks = 0.0  # sum of released noisy blocks
        self._items = 0.0  # sum of noisy items in the current block
        self._block_true = 0.0

    def step(self, x: Any) -> float:
        v = self._admit(x)
        self._items += v + self._noise(self._scale_f, self._scale)
        self._block_true += v
        if self.t % self._B == 0:
            self._blocks += self._block_true + self._noise(self._scale_f, self._scale)
            self._items = 0.0
            self._block_true = 0.0
        return self._blocks + self._items


# ----------------------------------------------------------------------- Binary
class Binary(_UniformCounting):
    """The binary (tree) mechanism with ``L = ⌊log₂T⌋ + 1`` levels.

    At each t it releases the aligned node of size ``2^{lsb(t)}`` ending at t with
    ``Lap(LΔ/ε)``; the output at t is the sum of the noisy nodes of the binary
    decomposition of t (one per 1-bit), variance ``popcount(t)·2(LΔ/ε)²``.  Only left
    (aligned, ending at their release time) nodes are released, so an item lies in at
    most one released node per level — item 1 in exactly one per level, L in all — and
    the budget is ``L · ε/L = ε``.

    **Pitfall.** The lecture's ``ε' = ε/log T`` undercounts the levels: item 1 is in
    the nodes ending at 1, 2, 4, …, ``2^{L−1}`` — ``⌊log₂T⌋ + 1`` of them.  With
    ``Lap(log₂T/ε)`` per node the real loss is ``ε(⌊log₂T⌋+1)/log₂T`` (1.29ε at
    T = 5, and infinite at T = 1 where log₂T = 0); code that sizes its level arrays
    by ``⌈log₂T⌉`` also overflows when T is a power of two.  dpref uses
    ``L = ⌊log₂T⌋ + 1`` and a test pins this down.

    **Level budgets** (docs/trees.md): ``budget="mean"``/``"max"`` or an explicit split
    gives level h its own ``ε_h`` (scale ``Δ/ε_h``, ``Σ_h ε_h = ε`` exactly);
    ``Var(out_t) = Σ_{h ∈ bits(t)} 2(Δ/ε_h)²``.  The default ``"uniform"`` is the
    mechanism above, unchanged.

    Parameters
    ----------
    budget
        Per-level split of ε: ``uniform`` (default), ``mean`` or ``max`` (minimise the
        mean or maximum variance over t ≤ T; exact rationals summing to ε), or L
        comma-separated per-level ε_h summing to ε exactly.

    References
    ----------
    .. [1] Chan, Shi, Song 2011, Algorithm 2 (Binary Mechanism B).
    .. [2] Dwork, Naor, Pitassi, Rothblum 2010.
    """

    name = "binary"
    examples = (
        Example(horizons=(1, 5, 16)),
        Example({"budget": "mean"}, horizons=()),
        Example(horizons=(16,), privacy="zcdp"),
        Example({"budget": "max"}, horizons=(), privacy="zcdp"),
    )

    def __init__(
        self,
        *,
        epsilon: Budget | None = None,
        rho: Budget | None = None,
        horizon: Horizon,
        budget: BudgetSplit = "uniform",
        domain: Domain | None = None,
        noise: NoiseKind | None = None,
    ) -> None:
        super().__init__(epsilon=epsilon, rho=rho, horizon=horizon, domain=domain, noise=noise)
        assert self.horizon is not None
        self.budget: str
        self.level_epsilons: tuple[Fraction, ...]
        """``ε_h`` per level (they sum to ε exactly)."""
        self.budget, self.level_epsilons = design_level_budget(self, budget, k=2, combine=False)
        self._level_scales = tuple(self.sensitivity / e for e in self.level_epsilons)

    @classmethod
    def frontier_variants(cls, horizon: int) -> list[dict[str, Any]]:
        """Each level budget."""
        return [{"budget": b} for b in BUDGETS]

    def extra_params(self) -> dict[str, Any]:
        if self.budget == "uniform":
            return {}
        if self.budget == "explicit":
            values = (
                self.level_epsilons
                if self.rho is None
                else (tuple(self.rho * e for e in self.level_epsilons))
            )
            return {"budget": ",".join(str(e) for e in values)}
        return {"budget": self.budget}

    @property
    def _uniform(self) -> bool:
        return self.budget == "uniform"

    @staticmethod
    def levels(horizon: Any, ops: Any = EXACT) -> Any:
        """``L = ⌊log₂T⌋ + 1``: the number of nodes containing item 1."""
        return ops.floor_log2(horizon) + 1

    @classmethod
    def memberships(cls, horizon: Any, ops: Any = EXACT) -> dict[str, Any]:
        """One node per level, :meth:`levels` of them (so each gets scale ``LΔ/ε``)."""
        return {"level": cls.levels(horizon, ops)}

    @staticmethod
    def node_interval(t: Any) -> tuple[Any, Any]:
        """The node released at t: ``[t − lowbit(t) + 1, t]`` (ints, int arrays or z3
        bit-vectors: ``t & −t`` is the lowest set bit)."""
        return (t - (t & -t) + 1, t)

    def budget_terms(self, ops: Any = EXACT, **s: Any) -> list[BudgetTerm]:
        """One node per level, L levels, each of scale ``LΔ/ε`` (a level budget: level h
        has scale ``Δ/ε_h``)."""
        if not self._uniform:
            return [BudgetTerm(f"level {h}", 1, b) for h, b in enumerate(self._level_scales)]
        return super().budget_terms(ops, **s)

    @staticmethod
    def level_node(item: Any, level: Any) -> tuple[Any, Any]:
        """The aligned node of size ``2^level`` (level ≥ 0) containing ``item``.

        ``[⌊(i−1)/2^j⌋·2^j + 1, (⌊(i−1)/2^j⌋ + 1)·2^j]``.  The mechanism releases it
        (at its end) iff it is a left node (``⌊(i−1)/2^j⌋`` even, so the size of the
        node ending there is exactly ``2^j``) and its end is ≤ T.  Works for ints and
        for sympy symbols (``//`` is ``floor`` of the quotient).
        """
        size = 2**level
        q = (item - 1) // size
        return (q * size + 1, (q + 1) * size)

    def row_terms(self, t: Any, ops: Any = EXACT, **s: Any) -> list[RowTerm]:
        """The output at t adds one node per 1-bit of t, each of scale ``LΔ/ε``."""
        if not self._uniform and isinstance(t, int):
            return [
                RowTerm(f"level {h}", 1, 1, self._level_scales[h])
                for h in range(t.bit_length())
                if t >> h & 1
            ]
        return [RowTerm("level", ops.popcount(t), 1, self._row_scale(ops, s))]

    def variance_counts(
        self, horizon: int | None = None
    ) -> tuple[Fraction | tuple[Fraction, ...], npt.NDArray[np.integer[Any]]] | None:
        """``(2(LΔ/ε)², popcount(t))``; with a level budget ``(2b_h², bit_h(t))``."""
        t_max = self._horizon_for(horizon)
        if not self._uniform:
            levels = tree_levels(t_max, 2)
            units = tuple(self.node_variance(b) for b in self._level_scales[:levels])
            return units, digit_counts(t_max, 2, levels)
        t = np.arange(1, t_max + 1, dtype=np.int64)
        return self.node_variance(self._scale()), np.bitwise_count(t).astype(np.int64)

    def online_memory(self, horizon: int | None = None) -> int | None:
        """Per level the open p-sum and its noisy value, and the running total."""
        T = self.horizon if horizon is None else horizon
        assert T is not None
        return 2 * floor_log2(T) + 3

    def expected_l1_sum(self, horizon: int) -> Fraction | None:
        if not self._uniform:
            return sum(self.level_epsilons[: tree_levels(horizon, 2)], Fraction(0))
        return Fraction(self.levels(horizon)) * self.sensitivity / self._scale()

    def nodes(self, horizon: int) -> NodeTable:
        t = np.arange(1, horizon + 1, dtype=np.int64)
        lo, hi = self.node_interval(t)
        if not self._uniform:
            return NodeTable(lo, hi, self._level_scales, trailing_zeros(t))
        return _uniform_nodes(lo, hi, self._scale())

    def noise_scales(self, horizon: int) -> FloatArray | float:
        if self._uniform:
            return ceil_float(self._scale())
        table = np.array([ceil_float(b) for b in self._level_scales], dtype=np.float64)
        out: FloatArray = table[trailing_zeros(np.arange(1, horizon + 1, dtype=np.int64))]
        return out

    def recombination(self, horizon: int) -> ExactSparse:
        rows: list[int] = []
        cols: list[int] = []
        for t in range(1, horizon + 1):
            for _, u in prefix_nodes(t):
                rows.append(t - 1)
                cols.append(u - 1)
        return _ones_sparse((horizon, horizon), rows, cols)

    def variance_exact(self, horizon: int | None = None) -> list[Fraction]:
        t_max = self._variance_horizon(horizon)
        if not self._uniform:
            return digit_variances(t_max, 2, [self.node_variance(b) for b in self._level_scales])
        unit = self.node_variance(self._scale())
        return [_popcount(t) * unit for t in range(1, t_max + 1)]

    def combine(self, noise: FloatArray, horizon: int) -> FloatArray:
        out: FloatArray = binary_noise_sum(noise)
        return out

    def online(self, rng: Any = None, noise: Any = None) -> OnlineCounter:
        return _BinaryOnline(self, rng, noise)


class _BinaryOnline(OnlineCounter):
    def __init__(self, m: Binary, rng: Any, noise: Any) -> None:
        super().__init__(m, rng, noise)
        self._scale = m._scale()
        self._scale_f = ceil_float(self._scale)
        self._levels: list[tuple[Fraction, float]] | None = (
            None if m._uniform else [(b, ceil_float(b)) for b in m._level_scales]
        )
        self._state = _BinaryState()

    def step(self, x: Any) -> float:
        v = self._admit(x)
        if self._levels is not None:
            b, b_f = self._levels[(self.t & -self.t).bit_length() - 1]
            return self._state.step(v, self._noise(b_f, b))
        return self._state.step(v, self._noise(self._scale_f, self._scale))


# Hybrid is defined on the Binary state above; imported here so that it registers right
# after Binary (and ``from dpref.mechanisms.counting import Hybrid`` keeps working).
from dpref.mechanisms.hybrid import Hybrid  # noqa: E402
