"""A BLUE tree counter in O(k·H + W) memory, with regenerable (keyed) node noise
(:mod:`dpref.mechanisms.blue`).

Every output of the BLUE tree uses every node's noise, so a counter that draws node noise
once, in canonical order, from a sequential generator must keep all of it (that is
:meth:`BlueTree.online`, memory N + T).  Here the node noise is a fixed function of a
128-bit key: the standard draw of block ``(j, m)`` is made from word ``off_j + m`` of the
Philox-4×64 stream keyed by it (``off_j`` the blocks of the levels below), one word per
draw — Laplace: the top bit is the sign, ``−log u`` with ``u = (⌊w/2¹¹⌋ mod 2⁵² + ½)·2⁻⁵²``
the magnitude; normal: ``Φ⁻¹(u)`` with ``u = (⌊w/2¹¹⌋ + ½)·2⁻⁵³`` — so any block's noise
can be regenerated.  Both laws are the continuous ones quantised at 2⁻⁵² in
probability (tails cut at |z| ≈ 36.7 for Laplace, ≈ 8.3 for normal).  The node value is
the draw times the level's multiplier, the same float as the batch path uses.

:func:`keyed_noise` is the canonical-order node noise of a key (for
``BlueTree.release(stream, noise=...)``); :class:`KeyedOnline` outputs the same numbers
(to rounding) holding, per level, the current block's ``x̄``, its children's ``ŷ`` and the
sum of the left siblings' ``x̄``: when t enters a block it regenerates the noise of the
block's subtree to compute its children's ``ŷ`` (vectorised on subtrees of at most
:data:`WORK` blocks, recursively above), O(size) work, O(T·H) in all.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from dpref.errors import HorizonError, ParameterError
from dpref.mechanisms.blue.decode import Weights
from dpref.validation import check_int_range

__all__ = ["WORK", "KeyedOnline", "keyed_noise", "keyed_standard"]

FloatArray = npt.NDArray[np.float64]
WORK = 1 << 12
"""Blocks per vectorised subtree pass of :class:`KeyedOnline` (its work buffer)."""


def _check_key(key: Any) -> tuple[int, int]:
    if not isinstance(key, tuple) or len(key) != 2:
        raise ParameterError(f"key={key!r}: must be a pair of ints in [0, 2^64)")
    return (
        check_int_range("key", key[0], 0, 2**64 - 1),
        check_int_range("key", key[1], 0, 2**64 - 1),
    )


def keyed_standard(key: tuple[int, int], start: int, n: int, gaussian: bool) -> FloatArray:
    """Standard draws ``start … start + n − 1`` of the keyed stream (module doc)."""
    block, skip = divmod(start, 4)
    bg = np.random.Philox(
        key=np.array(key, dtype=np.uint64), counter=np.array([block, 0, 0, 0], dtype=np.uint64)
    )
    words = bg.random_raw(skip + n)[skip:].astype(np.uint64)
    if gaussian:
        from scipy.special import ndtri

        u = ((words >> np.uint64(11)).astype(np.float64) + 0.5) * 2.0**-53
        out: FloatArray = np.asarray(ndtri(u), dtype=np.float64)
        return out
    mant = (words >> np.uint64(11)) & np.uint64(2**52 - 1)
    u = (mant.astype(np.float64) + 0.5) * 2.0**-52
    sign = np.where((words >> np.uint64(63)) == 1, -1.0, 1.0)
    return sign * -np.log(u)


class _Tree:
    """Range access to a layout's blocks: observed flags, weights and keyed noise."""

    def __init__(self, w: Weights, mult: list[float], key: tuple[int, int], gaussian: bool):
        lay = w.layout
        self.w, self.lay, self.k, self.key, self.gaussian = w, lay, lay.k, key, gaussian
        self.off = [0]
        for c in lay.count:
            self.off.append(self.off[-1] + c)
        self.mult = [mult[j] if j < len(mult) else 0.0 for j in range(lay.top + 1)]
        self.reg_own = [(float(r[0].own), float(r[1].own)) for r in w.regular]
        self.sp_own = [float(s.own) if s is not None else 0.0 for s in w.spine]
        self.reg_split = [
            np.array([float(v) for v in r[1].split]) if j else np.zeros(0)
            for j, r in enumerate(w.regular)
        ]
        self.sp_split = [
            np.array([float(v) for v in s.split]) if s is not None else np.zeros(0) for s in w.spine
        ]

    def obs(self, j: int, lo: int, hi: int) -> npt.NDArray[np.bool_]:
        lay = self.lay
        out = np.asarray(lay.pattern[j], dtype=bool)[np.arange(lo, hi, dtype=np.int64) % self.k]
        if lay.spine(j) and hi == lay.count[j] and hi > lo:
            out[-1] = lay.spine_observed[j]
        return out

    def own(self, j: int, lo: int, hi: int) -> FloatArray:
        o = self.obs(j, lo, hi)
        out: FloatArray = np.where(o, self.reg_own[j][1], self.reg_own[j][0])
        if self.lay.spine(j) and hi == self.lay.count[j] and hi > lo:
            out[-1] = self.sp_own[j]
        return out

    def split(self, j: int, m: int) -> float:
        """g of block (j, m) as a child of its parent."""
        lay, k = self.lay, self.k
        par = m // k
        if lay.spine(j + 1) and par == lay.count[j + 1] - 1:
            return float(self.sp_split[j + 1][m - par * k])
        return float(self.reg_split[j + 1][m % k])

    def noise(self, j: int, lo: int, hi: int) -> FloatArray:
        """The node values of blocks [lo, hi) of level j (0 where not observed)."""
        z = keyed_standard(self.key, self.off[j] + lo, hi - lo, self.gaussian) * self.mult[j]
        out: FloatArray = np.where(self.obs(j, lo, hi), z, 0.0)
        return out

    def yhat_range(self, i: int, lo: int, hi: int) -> FloatArray:
        """``ŷ`` of level-i blocks [lo, hi), one vectorised upward pass over their subtrees."""
        k, lay = self.k, self.lay
        a, b = lo * k**i, min(hi * k**i, lay.count[0])
        y = self.noise(0, a, b)
        for lev in range(1, i + 1):
            a, b = lo * k ** (i - lev), min(hi * k ** (i - lev), lay.count[lev])
            pad = np.zeros((b - a) * k)
            pad[: y.size] = y
            c = pad.reshape(b - a, k).sum(axis=1)
            own = self.own(lev, a, b)
            y = own * self.noise(lev, a, b) + (1.0 - own) * c
        return y

    def yhat_one(self, i: int, m: int) -> float:
        """``ŷ`` of block (i, m), in memory O(WORK + k·i)."""
        if i == 0 or 2 * self.k**i <= WORK:
            return float(self.yhat_range(i, m, m + 1)[0])
        lo, hi = m * self.k, min((m + 1) * self.k, self.lay.count[i - 1])
        c = sum(self.yhat_one(i - 1, x) for x in range(lo, hi))
        own = float(self.own(i, m, m + 1)[0])
        return own * float(self.noise(i, m, m + 1)[0]) + (1.0 - own) * c

    def children_yhat(self, j: int, m: int) -> FloatArray:
        """``ŷ`` of the children of block (j, m), j ≥ 1."""
        lo, hi = m * self.k, min((m + 1) * self.k, self.lay.count[j - 1])
        if 2 * self.k**j <= WORK:
            return self.yhat_range(j - 1, lo, hi)
        return np.array([self.yhat_one(j - 1, x) for x in range(lo, hi)])


def keyed_noise(w: Weights, mult: list[float], key: Any, gaussian: bool) -> FloatArray:
    """The canonical-order node noise of ``key`` (the batch twin of :class:`KeyedOnline`)."""
    lay = w.layout
    tree = _Tree(w, mult, _check_key(key), gaussian)
    out = np.zeros(lay.size)
    for j in range(lay.top + 1):
        z = tree.noise(j, 0, lay.count[j])
        canon = lay.canon[j]
        have = canon >= 0
        out[canon[have]] = z[have]
    return out


class KeyedOnline:
    """``step(x) -> float``: the BLUE counter on keyed node noise (module doc).  Memory:
    :meth:`memory` floats."""

    def __init__(self, w: Weights, mult: list[float], key: Any, gaussian: bool, check: Any) -> None:
        self._tree = _Tree(w, mult, _check_key(key), gaussian)
        lay = w.layout
        self._lay, self._k, self._H = lay, lay.k, lay.top
        self._check = check
        H = self._H
        self.t = 0
        self._count = 0.0
        self._xbar = [0.0] * (H + 1)
        self._kids: list[FloatArray] = [np.zeros(0)] * (H + 1)
        self._kids_sum = [0.0] * (H + 1)
        self._left = [0.0] * (H + 1)

    @staticmethod
    def memory(k: int, top: int) -> int:
        """Floats held at once: per level x̄, the left sum, the children's ŷ and their sum;
        a recursion stack of k partial sums per level; the work buffer (≤ 6·WORK)."""
        return (top + 1) * (2 * k + 4) + 6 * WORK + 2

    def _enter(self, j: int, m: int) -> None:
        tree, k = self._tree, self._k
        if j == self._H:
            kids = tree.children_yhat(j, m) if j else np.zeros(0)
            own = float(tree.own(j, m, m + 1)[0])
            c = float(kids.sum())
            self._xbar[j] = own * float(tree.noise(j, m, m + 1)[0]) + (1.0 - own) * c
        else:
            r = m - (m // k) * k
            old = self._xbar[j]
            self._left[j] = 0.0 if r == 0 else self._left[j] + old
            y = float(self._kids[j + 1][r])
            self._xbar[j] = y + tree.split(j, m) * (self._xbar[j + 1] - self._kids_sum[j + 1])
            kids = tree.children_yhat(j, m) if j else np.zeros(0)
            c = float(kids.sum())
        self._kids[j], self._kids_sum[j] = kids, c

    def step(self, x: Any) -> float:
        """Consume ``x_t``; return the estimate at t."""
        if self.t >= self._lay.horizon:
            raise HorizonError(f"step t={self.t + 1}: past the horizon={self._lay.horizon}")
        self._count += self._check(x, self.t + 1)
        t0 = self.t
        self.t += 1
        top = self._H
        if t0:
            top = 0
            while top < self._H and t0 % self._k ** (top + 1) == 0:
                top += 1
        for j in range(top, -1, -1):
            self._enter(j, t0 // self._k**j)
        return self._count + self._xbar[0] + sum(self._left[: self._H])
