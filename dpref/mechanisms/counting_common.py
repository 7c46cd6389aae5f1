"""Pieces shared by the counting mechanisms (:mod:`dpref.mechanisms.counting` and
:mod:`dpref.mechanisms.hybrid`): the prefix-sum base class, node-table helpers and the
online state of one binary tree."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt

from dpref.lower_bounds import Decay, prefix_decay
from dpref.mechanisms.base import Mechanism, NodeTable
from dpref.plan import ExactSparse

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
_ONE = (Fraction(1),)


def _uniform_nodes(lo: IntArray, hi: IntArray, scale: Fraction) -> NodeTable:
    return NodeTable(lo, hi, (scale,), np.zeros(lo.size, dtype=np.int64))


def _ones_sparse(shape: tuple[int, int], rows: Any, cols: Any) -> ExactSparse:
    r = np.asarray(rows, dtype=np.int64)
    return ExactSparse.from_triples(
        shape, r, np.asarray(cols, dtype=np.int64), _ONE, np.zeros(r.size, dtype=np.int64)
    )


def _popcount(t: int) -> int:
    return bin(t).count("1")


class _Counting(Mechanism):
    """Shared pieces of the counting mechanisms: prefix-sum target."""

    proof = "proofs/counting.py"
    docs = "docs/counting.md"

    def decay(self) -> Decay:
        """Running counts: ``g ≡ 1`` (the prefix sum is the decayed sum with no decay)."""
        return prefix_decay()

    def target(self, stream: Any) -> FloatArray:
        """Exact prefix sums ``c_t``."""
        return self._target_checked(self._stream(stream))

    def _target_checked(self, x: FloatArray) -> FloatArray:
        return np.cumsum(x)

    def node_count(self, horizon: int) -> int:
        """One node ends at every t (Two-Level adds its blocks)."""
        return horizon


class _BinaryState:
    """O(log t) state of one binary tree: per level the open p-sum and its noisy value."""

    __slots__ = ("alpha", "noisy", "r", "total")

    def __init__(self) -> None:
        self.alpha: list[float] = []
        self.noisy: list[float] = []
        self.total = 0.0  # sum of the noisy nodes of the decomposition of r
        self.r = 0

    def step(self, x: float, z: float) -> float:
        self.r += 1
        i = (self.r & -self.r).bit_length() - 1  # level of the node ending at r (0-based)
        alpha, noisy = self.alpha, self.noisy
        while len(alpha) <= i:
            alpha.append(0.0)
            noisy.append(0.0)
        a = x
        dropped = 0.0
        for j in range(i):
            a += alpha[j]
            dropped += noisy[j]
            alpha[j] = 0.0
            noisy[j] = 0.0
        alpha[i] = a
        noisy[i] = a + z
        self.total += noisy[i] - dropped
        return self.total
