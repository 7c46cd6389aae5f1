"""Aligned dyadic intervals and their decompositions.

Items are 1-indexed.  Level ``k ≥ 1`` (leaves at level 1, as in the decayed-sums
patent) holds the aligned intervals ``[(m−1)2^{k−1}+1, m·2^{k−1}]``, m ≥ 1; the
node is a *left node* when m is odd.  The binary mechanism releases, at each time
t, the aligned node of size ``2^{lsb(t)}`` that ends at t; the prefix ``[1, t]``
is the disjoint union of the left nodes given by the 1-bits of t (the patent's
Assertion 1), at most ``⌊log₂t⌋ + 1`` of them at distinct levels.

The vectorised helpers (:func:`aligned_covers`, :func:`layout_offsets`, …) number a
node's level from 0 instead, ``b = k − 1`` (its size is ``2^b``), and index the nodes
of a *layout* — every aligned node of size at most ``2^cap`` (``cap=None``: any size)
ending at t ≤ T — in canonical order: by end ascending, then by size ascending.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import numpy.typing as npt

from dpref.caching import BytesCache
from dpref.errors import ParameterError

__all__ = [
    "aligned_cover",
    "aligned_covers",
    "binary_node",
    "binary_noise_sum",
    "bitlen",
    "cover_split",
    "floor_log2",
    "is_left_node",
    "layout_nodes",
    "layout_offsets",
    "level_of",
    "lowbit",
    "node_at_level",
    "popcount_groups",
    "prefix_nodes",
    "trailing_zeros",
    "window_cover",
    "window_start0",
]

Interval = tuple[int, int]
IntArray = npt.NDArray[np.int64]
IndexGroups = tuple[tuple[npt.NDArray[np.intp], npt.NDArray[np.intp]], ...]


def _check_pos(name: str, t: int) -> None:
    if t < 1:
        raise ParameterError(f"{name}={t}: must be >= 1")


def floor_log2(t: int) -> int:
    """``⌊log₂ t⌋`` for a positive int, exactly (no floating point)."""
    _check_pos("t", t)
    return t.bit_length() - 1


def lowbit(t: int) -> int:
    """``2^{lsb(t)}``, the largest power of two dividing t."""
    _check_pos("t", t)
    return t & -t


def binary_node(t: int) -> Interval:
    """The node the binary mechanism releases at time t: ``[t − 2^{lsb(t)} + 1, t]``."""
    return (t - lowbit(t) + 1, t)


def level_of(node: Interval) -> int:
    """Level of an aligned node (leaves are level 1)."""
    lo, hi = node
    size = hi - lo + 1
    if size < 1 or size & (size - 1) or hi % size:
        raise ParameterError(f"node={node}: not an aligned dyadic interval")
    return size.bit_length()


def is_left_node(node: Interval) -> bool:
    """Whether an aligned node ``[(m−1)s+1, m s]`` has m odd."""
    lo, hi = node
    size = hi - lo + 1
    level_of(node)
    return (hi // size) % 2 == 1


def node_at_level(i: int, level: int) -> Interval:
    """The aligned node of the given level (≥ 1) that contains item i."""
    _check_pos("i", i)
    _check_pos("level", level)
    size = 1 << (level - 1)
    m = (i - 1) // size + 1
    return ((m - 1) * size + 1, m * size)


def prefix_nodes(t: int) -> list[Interval]:
    """The binary decomposition of ``[1, t]`` into left nodes, ascending in time."""
    if t == 0:
        return []
    _check_pos("t", t)
    out: list[Interval] = []
    start = 0
    for k in range(t.bit_length() - 1, -1, -1):
        if t >> k & 1:
            out.append((start + 1, start + (1 << k)))
            start += 1 << k
    return out


def aligned_cover(lo: int, hi: int) -> list[Interval]:
    """The canonical cover of ``[lo, hi]`` by maximal aligned nodes, ascending.

    Greedy from the left: take the largest aligned node that starts at ``lo`` and
    fits in ``[lo, hi]``.  At most ``2⌊log₂(hi − lo + 1)⌋ + 1`` nodes (fewer when
    the interval is itself aligned).
    """
    _check_pos("lo", lo)
    if hi < lo:
        return []
    out: list[Interval] = []
    pos = lo
    while pos <= hi:
        size = (pos - 1) & -(pos - 1) if pos > 1 else 1 << (hi.bit_length())
        while size > hi - pos + 1:
            size >>= 1
        out.append((pos, pos + size - 1))
        pos += size
    return out


def popcount_groups(n: int) -> IndexGroups:
    """``t = 1..n`` with two or more 1-bits, grouped by popcount ascending (0-based).

    Each group is ``(idx, par)``: the positions ``t − 1`` of the group and those of
    their parents ``t − 2^{lsb(t)} − 1``, which all have a smaller popcount — so a
    recursion ``S(t) = z(t) + w·S(parent)`` can be run one whole group at a time.
    """
    t = np.arange(1, n + 1, dtype=np.int64)
    parent = t & (t - 1)  # t minus its lowest set bit
    pop = np.zeros(n, dtype=np.int64)
    x = t.copy()
    while x.any():
        pop += x & 1
        x >>= 1
    groups = []
    for p in range(2, int(pop.max(initial=1)) + 1):
        idx = np.flatnonzero(pop == p).astype(np.intp, copy=False)
        par = (parent[idx] - 1).astype(np.intp, copy=False)
        idx.setflags(write=False)
        par.setflags(write=False)
        groups.append((idx, par))
    return tuple(groups)


POPCOUNT_CACHE_BYTES = 32 << 20
"""Bytes of popcount groups kept for older horizons; the newest is kept whatever its
size (about 16 bytes per t: 16 MB at T = 10⁶)."""

_POPCOUNT_GROUPS: BytesCache[int, IndexGroups] = BytesCache(popcount_groups, POPCOUNT_CACHE_BYTES)
"""Cached :func:`popcount_groups` (the binary mechanism's path), bounded by bytes: an
``lru_cache(maxsize=64)`` held up to 64 × 16 MB at T = 10⁶.  Hybrid uses one entry
per block length ``2^k − 1``, about 16 bytes × T in all, which fits the budget."""


def _popcount_groups(n: int) -> IndexGroups:
    """:func:`popcount_groups` from :data:`_POPCOUNT_GROUPS`."""
    return _POPCOUNT_GROUPS.get(n)


def binary_noise_sum(z: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """Sum node values over the binary decomposition of every t, vectorised.

    ``z[..., t−1]`` is the value of the binary node ending at t (``binary_node(t)``);
    the result's ``[..., t−1]`` is the sum over the nodes of ``prefix_nodes(t)``,
    i.e. ``S(t) = z(t) + S(t − 2^{lsb(t)})``.  Works along the last axis.
    """
    out = np.array(z, dtype=np.float64, copy=True)
    n = out.shape[-1]
    for idx, par in _popcount_groups(n):
        out[..., idx] += out[..., par]
    return out


# ------------------------------------------------- vectorised covers and layouts
def bitlen(x: IntArray) -> IntArray:
    """Bit length of non-negative ints below 2^53, vectorised."""
    _, e = np.frexp(x.astype(np.float64))
    return e.astype(np.int64)


def trailing_zeros(t: IntArray) -> IntArray:
    """Trailing zeros of positive ints (the level of the binary node ending at t)."""
    return bitlen(t & -t) - 1


def layout_offsets(horizon: int, cap: int | None) -> IntArray:
    """``off[e−1]``: canonical index of the first node ending at e (length T+1).

    The nodes ending at e are the aligned nodes of sizes ``2^0 … 2^{min(tz(e), cap)}``,
    in that order, so node (level b, end e) has index ``off[e−1] + b``.
    """
    t = np.arange(1, horizon + 1, dtype=np.int64)
    count = trailing_zeros(t) + 1 if cap is None else np.minimum(trailing_zeros(t), cap) + 1
    off = np.zeros(horizon + 1, dtype=np.int64)
    np.cumsum(count, out=off[1:])
    return off


def layout_nodes(horizon: int, cap: int | None) -> tuple[IntArray, IntArray, IntArray]:
    """(lo, hi, level) of every node of a layout, canonical order."""
    off = layout_offsets(horizon, cap)
    count = np.diff(off)
    hi = np.repeat(np.arange(1, horizon + 1, dtype=np.int64), count)
    level = np.arange(int(off[-1]), dtype=np.int64) - np.repeat(off[:-1], count)
    lo = hi - (np.int64(1) << level) + 1
    return lo, hi, level


def window_start0(t: IntArray, window: int | None) -> IntArray:
    """``a − 1`` for the window ``[a, t]``, ``a = max(1, t − W + 1)`` (W = None: a = 1)."""
    if window is None:
        return np.zeros_like(t)
    return np.maximum(t - window, 0)


def cover_split(a0: Any, t: Any, floor_log2_of: Callable[[Any], Any]) -> tuple[Any, Any, Any]:
    """``(M, ℓ_s, ℓ_p)`` of the canonical cover of ``[a0+1, t]`` (``a0 < t``): h is the
    highest bit where ``a0`` and t differ, ``M = ⌊t/2^h⌋·2^h``, ``ℓ_s = M − a0`` (the
    suffix ``[a0+1, M]``) and ``ℓ_p = t − M`` (the prefix ``[M+1, t]``); the cover has one
    node of size ``2^b`` per 1-bit b of each.  The one computation the vectorised and the
    scalar covers share, written for ints, int64 arrays and z3 bit-vectors
    (``floor_log2_of`` is ⌊log₂·⌋ for each), so ``proofs/decayed.py`` can evaluate it."""
    h = floor_log2_of(a0 ^ t)
    M = (t >> h) << h
    return M, M - a0, t - M


def aligned_covers(t: IntArray, a0: IntArray) -> Iterator[tuple[int, IntArray, IntArray]]:
    """The canonical cover of ``[a0+1, t]`` by maximal aligned nodes, vectorised.

    Let h be the highest bit where ``a0`` and t differ and ``M = ⌊t/2^h⌋·2^h``; the
    cover is the suffix ``[a0+1, M]`` of the aligned block of size ``2^h`` ending at
    M (one node per 1-bit of ``M − a0``, smallest first) and the prefix
    ``[M+1, t]`` (one node per 1-bit of ``t − M``, largest first) — the greedy cover
    of :func:`aligned_cover`.  Yields ``(b, rows, ends)``: for the rows
    (0-based positions in ``t``) whose cover uses a node of size ``2^b``, its end.
    """
    M, ls, lp = cover_split(a0, t, lambda x: bitlen(x) - 1)
    nbits = int(bitlen(np.array([int(np.max(ls | lp, initial=0))]))[0])
    for b in range(nbits):
        bit = np.int64(1) << b
        rows = np.flatnonzero(lp & bit)
        if rows.size:
            yield b, rows, M[rows] + ((lp[rows] >> b) << b)
        rows = np.flatnonzero(ls & bit)
        if rows.size:
            yield b, rows, a0[rows] + (ls[rows] & ((bit << 1) - 1))


def window_cover(s: int, window: int | None) -> list[tuple[int, int]]:
    """``(b, end)`` of the canonical cover of the window ending at s (size ``2^b``).

    The window is ``[max(1, s − W + 1), s]`` (``window=None``: ``[1, s]``); the nodes
    are those :func:`aligned_covers` yields for row s, in ascending b.
    """
    a0 = 0 if window is None else max(s - window, 0)
    M, ls, lp = cover_split(a0, s, lambda x: x.bit_length() - 1)
    out = []
    for b in range(max(ls, lp).bit_length()):
        if lp >> b & 1:
            out.append((b, M + ((lp >> b) << b)))
        if ls >> b & 1:
            out.append((b, a0 + (ls & ((2 << b) - 1))))
    return out
