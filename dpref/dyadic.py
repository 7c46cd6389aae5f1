"""Aligned dyadic intervals and their decompositions.

Items are 1-indexed.  Level ``k ≥ 1`` (leaves at level 1, as in the decayed-sums
patent) holds the aligned intervals ``[(m−1)2^{k−1}+1, m·2^{k−1}]``, m ≥ 1; the
node is a *left node* when m is odd.  The binary mechanism releases, at each time
t, the aligned node of size ``2^{lsb(t)}`` that ends at t; the prefix ``[1, t]``
is the disjoint union of the left nodes given by the 1-bits of t (the patent's
Assertion 1), at most ``⌊log₂t⌋ + 1`` of them at distinct levels.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
import numpy.typing as npt

from dpref.errors import ParameterError

__all__ = [
    "aligned_cover",
    "binary_node",
    "binary_noise_sum",
    "floor_log2",
    "is_left_node",
    "level_of",
    "lowbit",
    "node_at_level",
    "prefix_nodes",
]

Interval = tuple[int, int]


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


@lru_cache(maxsize=64)
def _popcount_groups(n: int) -> tuple[tuple[npt.NDArray[np.intp], npt.NDArray[np.intp]], ...]:
    t = np.arange(1, n + 1, dtype=np.int64)
    parent = t & (t - 1)  # t minus its lowest set bit
    pop = np.zeros(n, dtype=np.int64)
    x = t.copy()
    while x.any():
        pop += x & 1
        x >>= 1
    groups = []
    for p in range(2, int(pop.max(initial=1)) + 1):
        idx = np.flatnonzero(pop == p)
        groups.append((idx.astype(np.intp), (parent[idx] - 1).astype(np.intp)))
    return tuple(groups)


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
