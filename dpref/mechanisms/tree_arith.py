"""Exact tree arithmetic of the k-ary tree counters (:mod:`dpref.mechanisms.trees`).

The level count, the level of the node ending at t, which levels item 1 lies in, and the
per-level node scale are computed here by ONE function each, written over an ``ops``
namespace so that the same code runs on Python ints (:data:`dpref.mechanisms.base.EXACT`),
on numpy arrays (:data:`ARRAY`, the vectorised layout), on sympy expressions and on z3
bit-vectors (the proofs: ``proofs/trees.py`` evaluates these very functions for every
``1 ≤ T ≤ 2⁶²``).  An ``ops`` may provide ``le`` (``a ≤ b``), ``ite`` (``a if c else b``)
and ``and_``; where it does not (:data:`EXACT`), Python's operators are used.

The digit sums, maximal digit vectors and exact variances of the tree estimates follow.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt

from dpref.mechanisms.base import EXACT, MAX_HORIZON

__all__ = [
    "ARRAY",
    "ArrayOps",
    "combined_variances",
    "combined_weights",
    "digit_counts",
    "digit_sums",
    "digit_variances",
    "end_level",
    "item_one_levels",
    "level_scale",
    "level_variances",
    "level_weights",
    "max_digit_vectors",
    "op_and",
    "op_ite",
    "op_le",
    "tree_levels",
    "tree_objective",
    "uniform_split",
]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


# ------------------------------------------------------------------ generic ops
class ArrayOps:
    """Element-wise ops over numpy arrays (the vectorised layout evaluates the same
    functions as the scalar and symbolic paths through it)."""

    @staticmethod
    def le(a: Any, b: Any) -> Any:
        """``a ≤ b`` element-wise."""
        return np.less_equal(a, b)

    @staticmethod
    def ite(cond: Any, a: Any, b: Any) -> Any:
        """``a`` where ``cond`` else ``b``, as int64."""
        return np.where(cond, np.int64(a), np.int64(b))

    @staticmethod
    def and_(a: Any, b: Any) -> Any:
        """``a ∧ b`` element-wise."""
        return np.logical_and(a, b)


ARRAY = ArrayOps()
"""The numpy ops of the vectorised layout."""


def op_le(ops: Any, a: Any, b: Any) -> Any:
    """``a ≤ b`` over ``ops`` (Python's operator when ``ops`` has no ``le``)."""
    fn = getattr(ops, "le", None)
    return fn(a, b) if fn is not None else a <= b


def op_ite(ops: Any, cond: Any, a: Any, b: Any) -> Any:
    """``a if cond else b`` over ``ops`` (a decided condition picks directly)."""
    if isinstance(cond, bool | np.bool_):  # a decided condition (concrete operands)
        return a if cond else b
    fn = getattr(ops, "ite", None)
    return fn(cond, a, b) if fn is not None else (a if cond else b)


def op_and(ops: Any, a: Any, b: Any) -> Any:
    """``a ∧ b`` over ``ops`` (a decided operand simplifies)."""
    for x, y in ((a, b), (b, a)):
        if isinstance(x, bool | np.bool_):
            return y if x else False
    fn = getattr(ops, "and_", None)
    if fn is not None:
        return fn(a, b)
    z3 = getattr(ops, "z3", None)  # proofs.smt.Z3Ops carries its z3 module
    return z3.And(a, b) if z3 is not None else (a and b)


def _bound(horizon: Any) -> int:
    """The largest power worth visiting: T itself when it is an int (the terms above it
    are 0 by their own condition), else :data:`MAX_HORIZON` (a symbolic T ≤ 2⁶²)."""
    if isinstance(horizon, int | np.integer):
        return max(int(horizon), 1)
    return MAX_HORIZON


def tree_levels(horizon: Any, k: int, ops: Any = EXACT) -> Any:
    """``L = ⌊log_k T⌋ + 1``: one plus the number of j ≥ 1 with ``k^j ≤ T``.

    Evaluated over ``ops`` (an int for ints; a sympy or z3 expression for a symbolic T),
    summing ``[k^j ≤ T]`` over the powers up to T (or up to 2⁶² when T is symbolic).
    """
    levels: Any = 1
    size = k
    bound = _bound(horizon)
    while size <= bound:
        levels = levels + op_ite(ops, op_le(ops, size, horizon), 1, 0)
        size *= k
    return levels


def end_level(end: Any, horizon: Any, k: int, ops: Any = EXACT) -> Any:
    """``min(v_k(end), L − 1)``: the level of the largest released node ending at ``end`` —
    the number of j with ``1 ≤ j < L`` (``L = tree_levels(T)``, the one level count) and
    ``k^j | end``.

    The uncombined KaryTree releases at ``end`` its node of this level; the combined trees
    release the nodes of every level ≤ it.  ``end`` may be an int, a numpy array (with
    :data:`ARRAY`) or, with concrete ``end``, the horizon may be symbolic.
    """
    levels = tree_levels(horizon, k, ops)
    level: Any = 0
    size, j = k, 1
    bound = _bound(horizon)
    while size <= bound:
        divides = end % size == 0
        level = level + op_ite(ops, op_and(ops, _lt(ops, j, levels), divides), 1, 0)
        size, j = size * k, j + 1
    return level


def _lt(ops: Any, a: Any, b: Any) -> Any:
    fn = getattr(ops, "lt", None)
    return fn(a, b) if fn is not None else a < b


def item_one_levels(horizon: Any, k: int, combine: bool, ops: Any = EXACT) -> Any:
    """How many released nodes contain item 1: for each level h its node is ``[1, k^h]``
    (ending at ``k^h``), released by T iff ``k^h ≤ T`` and the release rule of
    :func:`end_level` puts a level-h node at ``k^h`` (exactly h for the uncombined tree,
    ≤ for the combined ones).  Summed over ``k^h ≤ T`` (or ≤ 2⁶² when T is symbolic)."""
    count: Any = 0
    size = 1
    h = 0
    bound = _bound(horizon)
    while size <= bound:
        top = end_level(size, horizon, k, ops)
        rule = op_le(ops, h, top)
        if not combine:
            rule = op_and(ops, rule, op_le(ops, top, h))
        count = count + op_ite(ops, op_and(ops, op_le(ops, size, horizon), rule), 1, 0)
        size *= k
        h += 1
    return count


def level_scale(sensitivity: Any, share: Any) -> Any:
    """``b_h = Δ/ε_h``: the Laplace scale of a level with budget share ``ε_h`` (exact:
    Fractions, or sympy expressions in the proofs)."""
    return sensitivity / share


def uniform_split(total: Any, levels: Any) -> Any:
    """``ε/L``: each level's share of the uniform budget."""
    return total / levels


# ------------------------------------------------------------ exact tree arithmetic
def _digits(t: int, k: int, levels: int) -> list[int]:
    out = []
    for _ in range(levels):
        t, d = divmod(t, k)
        out.append(d)
    return out


def digit_sums(horizon: int, k: int, levels: int) -> list[int]:
    """``S_h = Σ_{t=1}^{T} d_h(t)`` for h < levels, exactly (O(levels) work).

    Among ``0 … T`` the digit h cycles through ``0 … k−1`` in runs of ``k^h``: every full
    period of ``k^{h+1}`` numbers contributes ``k^h·k(k−1)/2``; the partial period of
    ``r`` numbers contributes ``k^h·Σ_{d<⌊r/k^h⌋} d + ⌊r/k^h⌋·(r mod k^h)``.
    """
    out = []
    n = horizon + 1  # the numbers 0 … T
    for h in range(levels):
        p = k**h
        full, rem = divmod(n, p * k)
        q, r = divmod(rem, p)
        out.append(full * p * (k * (k - 1) // 2) + p * (q * (q - 1) // 2) + q * r)
    return out


def max_digit_vectors(horizon: int, k: int, levels: int) -> list[list[int]]:
    """Digit vectors that dominate every t ≤ T (``max_t Σ_h d_h(t)a_h`` for a_h ≥ 0 is the
    max over them): T itself, and for each nonzero digit h of T the number that agrees
    with T above h, has digit ``d_h(T) − 1`` at h and ``k − 1`` below (any t < T first
    differs from T at some h where its digit is smaller, so one of these dominates it
    digit by digit)."""
    top = _digits(horizon, k, levels)
    out = [top]
    for h in range(levels):
        if top[h] > 0:
            out.append([k - 1] * h + [top[h] - 1] + top[h + 1 :])
    return [v for v in out if any(v)]


def level_variances(scales: Sequence[Fraction], k: int, combine: bool) -> tuple[Fraction, ...]:
    """Per level, the variance of one decomposition node's estimate, exactly, for Laplace
    scales ``b_h`` (node variances ``2b_h²``): :func:`combined_variances`."""
    return combined_variances([2 * b * b for b in scales], k, combine)


def combined_variances(
    node_variances: Sequence[Fraction], k: int, combine: bool
) -> tuple[Fraction, ...]:
    """Per level, the variance of one decomposition node's estimate, exactly, from the
    node variances ``σ_h²`` (``2b_h²`` for Laplace, the Gaussian σ_h² otherwise).

    Uncombined: ``σ_h²``.  Combined: ``V_0 = σ_0²`` and
    ``1/V_h = 1/σ_h² + 1/(k V_{h−1})`` (inverse-variance combination of the node's own
    noisy value with the sum of its k children's independent combined estimates).
    """
    sig = list(node_variances)
    if not combine:
        return tuple(sig)
    out = [sig[0]]
    for s in sig[1:]:
        prev = k * out[-1]
        out.append(s * prev / (s + prev))
    return tuple(out)


def level_weights(scales: Sequence[Fraction], k: int) -> tuple[Fraction, ...]:
    """``w_h = V_h/σ_h²`` (``w_0 = 1``): the weight of a node's own noisy value in its
    combined estimate; ``1 − w_h = V_h/(k V_{h−1})`` goes to the children's sum."""
    return combined_weights([2 * b * b for b in scales], k)


def combined_weights(node_variances: Sequence[Fraction], k: int) -> tuple[Fraction, ...]:
    """``w_h = V_h/σ_h²`` from the node variances σ_h² (:func:`combined_variances`)."""
    var = combined_variances(node_variances, k, True)
    return tuple(v / s for v, s in zip(var, node_variances, strict=True))


def tree_objective(variances: Sequence[Fraction], horizon: int, k: int, objective: str) -> Fraction:
    """Exact mean (over t = 1 … T) or maximum of ``Var(out_t) = Σ_h d_h(t)·V_h``."""
    levels = len(variances)
    if objective == "mean":
        sums = digit_sums(horizon, k, levels)
        return sum((s * v for s, v in zip(sums, variances, strict=True)), Fraction(0)) / horizon
    return max(
        sum((d * v for d, v in zip(vec, variances, strict=True)), Fraction(0))
        for vec in max_digit_vectors(horizon, k, levels)
    )


def digit_counts(t_max: int, k: int, levels: int) -> npt.NDArray[np.integer[Any]]:
    """``d_h(t)``, the base-k digits of t = 1 … t_max, shape (levels, t_max), in the
    smallest unsigned dtype that holds ``k − 1`` (a byte per digit for k ≤ 256)."""
    dtype = np.min_scalar_type(k - 1)
    out = np.empty((levels, t_max), dtype=dtype)
    t = np.arange(1, t_max + 1, dtype=np.int64)
    p = 1
    for h in range(levels):
        out[h] = (t // p) % k
        p *= k
    return out


def digit_variances(t_max: int, k: int, variances: Sequence[Fraction]) -> list[Fraction]:
    """``Σ_h d_h(t)·V_h`` for t = 1 … t_max, exactly (vectorised over a common denominator)."""
    denom = 1
    for v in variances:
        denom = denom * v.denominator // math.gcd(denom, v.denominator)
    nums = [int(v * denom) for v in variances]
    t = np.arange(1, t_max + 1, dtype=np.int64)
    levels = min(tree_levels(t_max, k), len(variances))  # a class gives its levels' V_h
    big = max(nums[:levels]) * (k - 1) * levels >= 2**62
    total: npt.NDArray[Any] = np.zeros(t_max, dtype=object if big else np.int64)
    p = 1
    for h in range(levels):
        d = (t // p) % k
        total = total + (d.astype(object) * nums[h] if big else d * nums[h])
        p *= k
    cache: dict[int, Fraction] = {}
    out = []
    for value in total.tolist():
        f = cache.get(value)
        if f is None:
            f = cache[value] = Fraction(int(value), denom)
        out.append(f)
    return out
