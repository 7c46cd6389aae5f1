"""Vectorised layout of the k-ary tree counters (:mod:`dpref.mechanisms.trees`): which node
ends where, the prefix sums over k-ary decompositions, and the combined tree's node offsets.

The level of the nodes released at each end is :func:`~dpref.mechanisms.tree_arith.end_level`
evaluated on numpy arrays — the function the proofs evaluate for every T ≤ 2⁶².
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from dpref.caching import BytesCache
from dpref.dyadic import binary_noise_sum
from dpref.mechanisms.tree_arith import ARRAY, end_level, tree_levels

__all__ = ["DIGIT_GROUPS", "LAYOUTS", "cat", "prefix_sum_of_nodes", "valuations"]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


def valuations(horizon: int, k: int) -> IntArray:
    """``min(v_k(t), L−1)`` for t = 1 … T (the level of the largest node ending at t):
    :func:`~dpref.mechanisms.tree_arith.end_level` on the array of ends."""
    t = np.arange(1, horizon + 1, dtype=np.int64)
    v: IntArray = np.zeros(horizon, dtype=np.int64) + end_level(t, horizon, k, ARRAY)
    return v


def _digit_groups(key: tuple[int, int]) -> tuple[tuple[npt.NDArray[np.intp], ...], ...]:
    """``t = 1..T`` with digit sum ≥ 2, grouped by digit sum ascending (0-based), with the
    positions of their parents ``t − k^{v_k(t)}`` (digit sum one less)."""
    horizon, k = key
    levels = tree_levels(horizon, k)
    t = np.arange(1, horizon + 1, dtype=np.int64)
    v = valuations(horizon, k)
    parent = t - np.asarray(k, dtype=np.int64) ** v
    ds = np.zeros(horizon, dtype=np.int64)
    x = t.copy()
    for _ in range(levels):
        ds += x % k
        x //= k
    order = np.argsort(ds, kind="stable")
    bounds = np.searchsorted(ds[order], np.arange(2, int(ds.max(initial=1)) + 2))
    groups = []
    for g in range(bounds.size - 1):
        idx = order[bounds[g] : bounds[g + 1]].astype(np.intp)
        par = (parent[idx] - 1).astype(np.intp)
        idx.setflags(write=False)
        par.setflags(write=False)
        groups.append((idx, par))
    return tuple(groups)


DIGIT_GROUPS: BytesCache[tuple[int, int], Any] = BytesCache(_digit_groups, 32 << 20)


def prefix_sum_of_nodes(y: FloatArray, k: int) -> FloatArray:
    """``S(t) = y(t) + S(t − k^{v_k(t)})`` along the last axis: the sum over the k-ary
    decomposition of [1, t] when ``y(t)`` is the value of the node ending at t."""
    if k == 2:
        out: FloatArray = binary_noise_sum(y)
        return out
    out = np.array(y, dtype=np.float64, copy=True)
    for idx, par in DIGIT_GROUPS.get((out.shape[-1], k)):
        out[..., idx] += out[..., par]
    return out


def _combined_layout(key: tuple[int, int]) -> tuple[IntArray, tuple[IntArray, ...]]:
    """Offsets ``off`` (node (h, e) of the combined tree is ``off[e−1] + h``) and, per
    level, the canonical positions of its nodes (ends ``k^h, 2k^h, …``)."""
    horizon, k = key
    levels = tree_levels(horizon, k)
    count = valuations(horizon, k) + 1
    off = np.zeros(horizon + 1, dtype=np.int64)
    np.cumsum(count, out=off[1:])
    pos = []
    p = 1
    for h in range(levels):
        ends = np.arange(p, horizon + 1, p, dtype=np.int64)
        ph = off[ends - 1] + h
        ph.setflags(write=False)
        pos.append(ph)
        p *= k
    off.setflags(write=False)
    return off, tuple(pos)


LAYOUTS: BytesCache[tuple[int, int], Any] = BytesCache(_combined_layout, 64 << 20)


def cat(parts: list[IntArray]) -> IntArray:
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)
