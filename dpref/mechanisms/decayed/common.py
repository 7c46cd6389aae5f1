"""Shared pieces of the decayed sums: the base class, parameter checks, exact window
sums and the windowed online state.

Conventions (level numbering, canonical node order, rigorous scales) are in the
package docstring, :mod:`dpref.mechanisms.decayed`.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt

from dpref.dyadic import window_cover
from dpref.mechanisms.base import EXACT, MAX_HORIZON, Mechanism
from dpref.plan import _grouped_exact_sums
from dpref.validation import check_int_range, check_int_vector

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
_ONE = (Fraction(1),)
"""The weight table of plans whose coefficients are all 1."""


def _exact_rows(counts: IntArray, weights: Sequence[Fraction]) -> list[Fraction]:
    """Exact ``Σ_b counts[t, b] · weights[b]`` per row (integer dot products over the
    weights' common denominator: :func:`dpref.plan._grouped_exact_sums`, the plan's own)."""
    return _grouped_exact_sums(counts, list(weights))


def _window_sums(x: FloatArray, window: int | None) -> FloatArray:
    """``Σ_{i=max(1,t−W+1)}^{t} x_i`` for every t (W = None: prefix sums)."""
    c = np.concatenate([[0.0], np.cumsum(x)])
    t = np.arange(1, x.size + 1)
    if window is None:
        return c[1:]
    out: FloatArray = c[t] - c[np.maximum(t - window, 0)]
    return out


def _check_window(name: str, value: Any) -> int:
    # windows are used in int64 arithmetic on times; no stream reaches 2^62 items
    return check_int_range(name, value, 1, 2**62)


def _levels_for_window(window: Any, ops: Any = EXACT) -> Any:
    """``K = ⌊log₂W⌋``: the top level index a cover of a window of size W can use.

    Every aligned node inside a window of W items has size ``≤ 2^K`` (a node of size
    ``2^{K+1} > W`` does not fit), so levels ``0..K`` — ``K + 1`` of them — are all a
    window cover ever uses (docs/spec.md §2.1).  Written over an ``ops`` namespace
    (:data:`~dpref.mechanisms.base.EXACT`, the proofs' sympy and z3 twins): the one
    function WindowSum's levels, AllWindowSum's online cap and PolynomialSum's
    instances call, and the one ``proofs/decayed.py`` proves for every ``1 ≤ W ≤ 2⁶²``.
    """
    return ops.floor_log2(window)


# ------------------------------------------------------------- online states
class _WindowState:
    """Nodes of levels ``0..cap`` ending in the last ``keep`` steps (true and noisy).

    Memory: at most ``2·keep`` nodes, two floats each — O(W) for ``keep = W``.  A window
    of W items only uses nodes ending in its last W steps, and ``keep ≥ 2^cap`` keeps the
    left child a new node of level ≤ cap is built from.
    """

    __slots__ = ("cap", "keep", "noisy", "s", "true")

    def __init__(self, cap: int, keep: int) -> None:
        self.cap = cap
        self.keep = keep
        self.s = 0
        self.true: dict[int, list[float]] = {}
        self.noisy: dict[int, list[float]] = {}

    def levels_at(self, s: int) -> int:
        """Number of nodes ending at s."""
        return min((s & -s).bit_length() - 1, self.cap) + 1

    def push(self, x: float, noises: Sequence[float]) -> None:
        """Consume one (scaled) item and the noise of the nodes ending now, by level."""
        self.s += 1
        s = self.s
        tv = [x]
        nv = [x + noises[0]]
        for b in range(1, len(noises)):
            v = self.true[s - (1 << (b - 1))][b - 1] + tv[b - 1]
            tv.append(v)
            nv.append(v + noises[b])
        self.true[s] = tv
        self.noisy[s] = nv
        old = s - self.keep
        if old in self.true:
            del self.true[old]
            del self.noisy[old]

    def window(self, window: int) -> float:
        """The noisy window-W estimate at the current step (W ≤ keep)."""
        return sum(self.noisy[e][b] for b, e in window_cover(self.s, window))

    def size(self) -> int:
        """Stored floats."""
        return 2 * sum(len(v) for v in self.true.values())


class _Decayed(Mechanism):
    """Shared pieces: unbounded, float variance without Fractions, canonical checks."""

    needs_horizon = False
    proof = "proofs/decayed.py"
    docs = "docs/decayed.md"

    def variance(self, horizon: int | None = None) -> FloatArray:
        """Exact per-step variance as floats (vectorised for Laplace noise)."""
        t = self._variance_horizon(horizon)
        if self.noise == "laplace":
            return self.variance_at(np.arange(1, t + 1, dtype=np.int64))
        return super().variance(t)

    def variance_at(self, t: Any) -> FloatArray:
        """Float variance of the Laplace-noise estimate at the given times (any t ≥ 1)."""
        return self._variance_at(check_int_vector("t", t, 1, MAX_HORIZON))

    @abstractmethod
    def _variance_at(self, t: IntArray) -> FloatArray:
        """Float variance at the given times."""
