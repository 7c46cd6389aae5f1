"""The node layout of the BLUE tree mechanism (:mod:`dpref.mechanisms.blue`).

The tree is the aligned k-ary hierarchy on ``[1, T]``: level j holds the blocks
``(j, m) = [m k^j + 1, min((m+1)k^j, T)]`` that start at or before T, ``m = 0 … M_j − 1``
with ``M_j = ⌈T/k^j⌉``, for ``j = 0 … H``, ``H = ⌈log_k T⌉`` (one root ``[1, T]``).  The
children of ``(j, m)`` are the level-(j−1) blocks ``k m + i`` that start by T.  A *layout*
says which blocks are observed (released with noise):

* ``complete``: every block;
* ``kary``: the blocks that end at or before T (``KaryTree(combine=True)``'s node set; the
  clipped blocks and a root that is not a power of k are not observed);
* ``elders``: :class:`~dpref.mechanisms.elders.Elders`' node set (k odd): levels
  ``j < elders_levels(T, k)``, no middle child (``m mod k = (k−1)/2``), and only blocks
  whose first use (:func:`~dpref.mechanisms.elders.block_first_use`) is at most T.  Every
  node there has exactly one unobserved child (the middle one), so the node values are
  exactly determined by the items' block sums: the BLUE *is* Elders' own decoder (a check,
  not an improvement);
* ``elders_full``: Elders' levels (``j`` with ``k^j ≤ 2T − 1``) and every block of those
  levels that starts by T, middle children included (any k ≥ 2).  An item still lies in one
  node per level, so the budget is Elders'; the redundancy is what the BLUE uses
  (k = 19, T = 2906, ε = 1: mean 173.67, max 285.94 against Elders' 242.5 / 468).

Structure used everywhere: the blocks ``m < F_j = ⌊T/k^j⌋`` are *regular* (unclipped; their
subtrees are identical, and whether they are observed depends only on the position
``m mod k``: a middle child is not observed in ``elders``); at most one block per level,
``m = M_j − 1`` when ``F_j < M_j``, is clipped — these form the *spine*, the path from the
root towards T.  Every exact quantity is computed once per regular type ``(j, observed)``
and once per spine node: O(k·H) exact operations whatever T.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property, lru_cache
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from dpref.errors import ParameterError
from dpref.mechanisms.base import EXACT, MAX_HORIZON
from dpref.mechanisms.elders import block_first_use, elders_levels
from dpref.mechanisms.tree_arith import ARRAY, op_ite, op_le, tree_levels

__all__ = ["LAYOUT_KINDS", "Layout", "LayoutKind", "blue_levels", "height", "layout"]

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]

LayoutKind = Literal["complete", "kary", "elders", "elders_full"]
"""The layouts: which aligned blocks a :class:`~dpref.BlueTree` releases."""

LAYOUT_KINDS = ("complete", "kary", "elders", "elders_full")
"""The node sets a BLUE tree can observe."""


def height(horizon: int, k: int) -> int:
    """``H = ⌈log_k T⌉``: the smallest j with ``k^j ≥ T`` (0 for T = 1)."""
    h, p = 0, 1
    while p < horizon:
        p *= k
        h += 1
    return h


@dataclass(frozen=True, kw_only=True, eq=False)
class Layout:
    """The observed blocks of one (T, k, layout).  The fields are O(H); the per-block
    arrays (level-major, canonical order) are built on first use."""

    horizon: int
    """T."""
    k: int
    """The arity."""
    kind: str
    """``complete``, ``kary`` or ``elders``."""
    count: tuple[int, ...]
    """``M_j = ⌈T/k^j⌉``: blocks of level j that start by T, j = 0 … H."""
    full: tuple[int, ...]
    """``F_j = ⌊T/k^j⌋``: the unclipped (regular) blocks of level j."""
    pattern: tuple[tuple[bool, ...], ...]
    """Per level j, whether a regular block at position ``m mod k = i`` is observed
    (i = 0 … k−1; the same for every regular block of the level)."""
    spine_observed: tuple[bool, ...]
    """Per level j, whether its clipped block (if any) is observed."""
    levels: int
    """L: the number of levels that hold an observed block (the budget is split over them;
    each level ``j < L`` holds item 1)."""

    @property
    def top(self) -> int:
        """H, the root's level."""
        return len(self.count) - 1

    def spine(self, j: int) -> bool:
        """Whether level j has a clipped block (``m = M_j − 1``)."""
        return self.full[j] < self.count[j]

    def is_observed(self, j: int, m: int) -> bool:
        """Whether block ``(j, m)`` is observed."""
        if self.spine(j) and m == self.count[j] - 1:
            return self.spine_observed[j]
        return self.pattern[j][m % self.k]

    @cached_property
    def observed(self) -> tuple[BoolArray, ...]:
        """Per level, whether each block ``m < M_j`` is observed (read-only)."""
        out = []
        for j in range(self.top + 1):
            obs = np.asarray(self.pattern[j], dtype=bool)[
                np.arange(self.count[j], dtype=np.int64) % self.k
            ]
            if self.spine(j):
                obs[-1] = self.spine_observed[j]
            obs.setflags(write=False)
            out.append(obs)
        return tuple(out)

    @cached_property
    def _canonical(self) -> tuple[tuple[IntArray, ...], IntArray, IntArray, IntArray]:
        T, k = self.horizon, self.k
        los, his, levs, ms = [], [], [], []
        for j in range(self.top + 1):
            u = k**j
            m = np.flatnonzero(self.observed[j]).astype(np.int64)
            los.append(m * u + 1)
            his.append(np.minimum((m + 1) * u, T))
            levs.append(np.full(m.size, j, dtype=np.int64))
            ms.append(m)
        lo, hi, lev, blk = (np.concatenate(a) for a in (los, his, levs, ms))
        order = np.lexsort((lo, lev, hi - lo))
        lo, hi, lev, blk = lo[order], hi[order], lev[order], blk[order]
        canon = []
        for j in range(self.top + 1):
            idx = np.full(self.count[j], -1, dtype=np.int64)
            sel = np.flatnonzero(lev == j)
            idx[blk[sel]] = sel
            idx.setflags(write=False)
            canon.append(idx)
        for arr in (lo, hi, lev):
            arr.setflags(write=False)
        return tuple(canon), lo, hi, lev

    @property
    def canon(self) -> tuple[IntArray, ...]:
        """Per level, the canonical index of block m (−1 when not observed).  Canonical
        order: by interval length ``hi − lo``, then level, then start (every output uses
        every node, so every release time is 1 and the order is by length)."""
        return self._canonical[0]

    @property
    def lo(self) -> IntArray:
        """Interval starts of the observed nodes, canonical order."""
        return self._canonical[1]

    @property
    def hi(self) -> IntArray:
        """Interval ends of the observed nodes, canonical order."""
        return self._canonical[2]

    @property
    def level(self) -> IntArray:
        """The level of each observed node, canonical order."""
        return self._canonical[3]

    @property
    def size(self) -> int:
        """N, the number of observed nodes (counted without building the arrays)."""
        total = 0
        for j in range(self.top + 1):
            q, rem = divmod(self.full[j], self.k)
            n = q * sum(self.pattern[j]) + sum(self.pattern[j][:rem])
            total += n + int(self.spine(j) and self.spine_observed[j])
        return total


def _observed_rule(kind: str, horizon: int, k: int, j: int, m: IntArray) -> BoolArray:
    """Whether blocks m of level j are observed under the layout (any block starting by T)."""
    T = horizon
    u = k**j
    end = (m + 1) * u
    if kind == "complete":
        return np.ones(m.size, dtype=bool)
    if kind == "kary":
        kary: BoolArray = np.asarray(end <= T) & (j < tree_levels(T, k))
        return kary
    if kind == "elders_full":
        return np.full(m.size, j < elders_levels(T, k), dtype=bool)
    # elders: the node set of Elders._layout (not a middle child, first use ≤ T)
    if j >= elders_levels(T, k):
        return np.zeros(m.size, dtype=bool)
    first = block_first_use(m, j, k, ARRAY)
    out: BoolArray = (m % k != (k - 1) // 2) & (first <= T)
    return out


def blue_levels(horizon: Any, k: int, kind: str, ops: Any = EXACT) -> Any:
    """L, the levels holding released blocks: ``⌈log_k T⌉ + 1 = 1 + Σ_{j≥0} [k^j < T]``
    (complete), ``tree_levels`` ``⌊log_k T⌋ + 1`` (kary), ``elders_levels`` (elders,
    elders_full).  Over ``ops`` like those (an int for an int T; a sympy or z3 expression
    for a symbolic T ≤ 2⁶²): the one level count of the budget, the layout and the
    declaration."""
    if kind == "kary":
        return tree_levels(horizon, k, ops)
    if kind in ("elders", "elders_full"):
        return elders_levels(horizon, k, ops)
    bound = int(horizon) if isinstance(horizon, int | np.integer) else MAX_HORIZON
    levels: Any = 1
    power = 1
    while power < bound:  # [k^j < T] ⟺ k^j + 1 ≤ T
        levels = levels + op_ite(ops, op_le(ops, power + 1, horizon), 1, 0)
        power *= k
    return levels


@lru_cache(maxsize=8)
def layout(horizon: int, k: int, kind: str) -> Layout:
    """The layout of ``kind`` at (T, k) (cached, 8 layouts: each may hold O(N) per-block
    arrays once a per-node path used them).  O(k·H) work; per-block arrays on use.

    A regular block (``m < ⌊T/k^j⌋``) is observed by the rule at its first k positions (the
    rules depend on m only through ``m mod k`` for blocks that end by T: every block's
    first use is at most its end); the clipped block by the rule itself.  Raises
    :class:`~dpref.errors.ParameterError` when ``elders`` is asked for an even k.
    """
    if kind == "elders" and k % 2 == 0:
        raise ParameterError(f"k={k}: layout='elders' needs an odd k (balanced digits)")
    T = horizon
    H = height(T, k)
    count, full, pattern, spine = [], [], [], []
    for j in range(H + 1):
        u = k**j
        count.append((T + u - 1) // u)
        full.append(T // u)
        pos = np.arange(k, dtype=np.int64)
        pattern.append(tuple(bool(v) for v in _regular_rule(kind, T, k, j, pos)))
        last = np.array([count[-1] - 1], dtype=np.int64)
        spine.append(bool(_observed_rule(kind, T, k, j, last)[0]))
    return Layout(
        horizon=T,
        k=k,
        kind=kind,
        count=tuple(count),
        full=tuple(full),
        pattern=tuple(pattern),
        spine_observed=tuple(spine),
        levels=int(blue_levels(T, k, kind)),
    )


def _regular_rule(kind: str, horizon: int, k: int, j: int, pos: IntArray) -> BoolArray:
    """Whether a regular (unclipped) level-j block at child position ``pos`` is observed:
    always for ``complete`` and ``kary``; not a middle child for ``elders``."""
    if kind == "elders":
        out: BoolArray = pos != (k - 1) // 2
        return out
    return np.ones(pos.size, dtype=bool)
