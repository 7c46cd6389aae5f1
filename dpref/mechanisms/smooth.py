"""The smooth binary mechanism (Andersson, Pagh 2023; docs/smooth.md).

A binary tree of even depth d whose only *leaves* are the bit strings of length d with
exactly d/2 ones, in increasing order; d is the smallest even depth with
``binom(d, d/2) > T``.  Leaf ``ℓ_r`` (rank r, 0-indexed) stands for item ``r + 1``.

Output at t (1-indexed) is the sum of the items whose leaf lies strictly before ``ℓ_t``:
for every 1-bit of ``ℓ_t`` at bit index k (k bits below it) the subtree of the prefix
above k followed by a 0 — a *node*, the 0-child of a tree node.  Every leaf has d/2
ones, so **every output adds exactly d/2 noisy nodes** and every step has the same error
distribution (the mechanism's name); every item lies in the 0-children of its own d/2
zero bits, so in at most d/2 nodes.

Writing the rank combinatorially, ``r = Σ_{k: bit k set} binom(k, d/2 − ones above k)``
(the leaves that agree above k and have a 0 at k), the node of set bit k of ``ℓ_t``
holds the items ``[t_k − binom(k, o_k) + 1, t_k]`` where ``t_k`` is the partial sum of those
terms down to k (its *release time*: the first output that uses it).  Consequences:

* at each time t exactly one node with items is released, ``[t − L_t + 1, t]`` with
  ``L_t = binom(k_t, m_t + 1)`` (``m_t`` the trailing ones of ``ℓ_t``, ``k_t`` its lowest
  set bit above them), as in the binary mechanism;
* the trailing ones of ``ℓ_t`` give terms ``binom(k, o) = 0``: their 0-children hold no
  leaf at all.  They are **noise-only nodes**, released at t and used by output t only
  (their prefix already holds all d/2 zeros).  The plan records each as a node of
  weight 0 on ``[t, t]`` (per-node ε 0); their noise is what makes every step's error
  identical, as in the paper and its code;
* canonical order at t: the noise-only nodes (no items: length 0) from the top bit
  down, then the node with items.

Privacy at a finite T (``proofs/smooth.py``): the nodes released up to t containing an
item are nested intervals, and item 1 (leaf ``0^{d/2}1^{d/2}``) is a worst item: its
node ``0^j`` is released once ``t ≥ binom(d − j, d/2)``.  So the largest number of
released nodes holding one item is ``c(t) = #{1 ≤ j ≤ d/2 : binom(d−j, d/2) ≤ t}``; at the
mechanism's own T, ``c = d/2`` when ``T ≥ binom(d, d/2)/2`` and ``d/2 − 1`` below (the root's
0-child is then never released: at T = 2^20, d = 24, c = 11).  Each node has the Laplace
scale ``(d/2)Δ/ε`` (Gaussian: variance ``dΔ²/(4ρ)``, the paper's calibration), so the
privacy sum is ``c·ε/(d/2)`` — ε exactly when c = d/2, and **the mechanism declares that
exact value** otherwise (it spends less than the ε it was given; docs/smooth.md).

Variance at every t: ``(d/2)·2((d/2)Δ/ε)²``; with Gaussian noise ``(d/2)·dΔ²/(4ρ) = d²Δ²/(8ρ)``
(T = 2^20, ρ = 1/2: 144).

Online: the next leaf of the same popcount is one bit trick (the lowest block of ones
moves up one place, the rest of it goes to the bottom), and only the nodes of the set
bits below the highest changed bit change: the counter holds the d/2 current node noises
(O(log T) memory; amortised O(1) new nodes per step).

References
----------
.. [1] J. D. Andersson, R. Pagh. "A Smooth Binary Mechanism for Efficient Private
   Continual Observation." NeurIPS 2023; arXiv 2306.09666.
.. [2] T.-H. H. Chan, E. Shi, D. Song. "Private and Continual Release of Statistics."
   ACM TISSEC 14(3), 2011 (the binary mechanism).
"""

from __future__ import annotations

from fractions import Fraction
from functools import lru_cache
from math import comb
from typing import Any

import numpy as np
import numpy.typing as npt

from dpref.domains import Domain
from dpref.lower_bounds import Decay, prefix_decay
from dpref.mechanisms.base import (
    EXACT,
    MAX_HORIZON,
    BudgetTerm,
    Example,
    Mechanism,
    NodeTable,
    OnlineCounter,
)
from dpref.noise import NoiseKind
from dpref.plan import ExactSparse
from dpref.types import Budget, Horizon
from dpref.validation import ceil_float, check_int_range

__all__ = [
    "SmoothBinary",
    "smooth_depth",
    "smooth_item_count",
    "smooth_leaf",
    "smooth_leaves",
]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


MAX_HALF = 33
"""The largest d/2 at any horizon T ≤ 2⁶² (``binom(66, 33) > 2⁶²``, ``binom(64, 32) ≤ 2⁶²``);
every ``binom`` below fits an unsigned 64-bit word."""


def _chain(ops: Any, cases: list[tuple[Any, Any]], default: Any) -> Any:
    """``v₁ if c₁ else v₂ if c₂ else … else default`` through ``ops.ite`` (no arithmetic:
    an SMT solver decides such chains at once, where sums of comparisons time out)."""
    out = default
    for cond, value in reversed(cases):
        out = ops.ite(cond, value, out)
    return out


def smooth_depth(horizon: Any, ops: Any = EXACT) -> Any:
    """d: the smallest even depth ≥ 2 with ``binom(d, d/2) > T`` (T + 1 leaves: ranks 0…T).

    ``binom(2h, h)`` increases with h: d = 2h for the first h ≤ 33 with ``T < binom(2h, h)``
    (``binom(66, 33) > 2⁶²``); written against ``ops`` (Python ints, or z3 bit-vectors for
    ``proofs/smooth.py``) for ``1 ≤ T ≤ 2⁶²``.
    """
    if isinstance(horizon, int):
        check_int_range("horizon", horizon, 1, MAX_HORIZON)
    cases = [(ops.lt(horizon, comb(2 * h, h)), 2 * h) for h in range(1, MAX_HALF)]
    return _chain(ops, cases, 2 * MAX_HALF)


def smooth_item_count(horizon: Any, depth: Any, ops: Any = EXACT) -> Any:
    """``c(t) = #{1 ≤ j ≤ d/2 : binom(d − j, d/2) ≤ t}``: the most released nodes (with items)
    one item lies in after t steps of the depth-d tree (item 1 is a worst item).

    ``binom(d − j, h)`` decreases as j grows, so c is h − j₀ + 1 for the least j₀ with
    ``binom(d − j₀, h) ≤ t`` (``binom(h, h) = 1 ≤ t``: c ≥ 1).  Written against ``ops`` for
    an even depth ``2 ≤ d ≤ 66`` given as an int or, for the proofs, a z3 bit-vector.
    """
    if isinstance(horizon, int) and isinstance(depth, int) and ops is EXACT:
        return _item_count_exact(horizon, depth)
    return _item_count(horizon, depth, ops)


@lru_cache(maxsize=1024)
def _item_count_exact(horizon: int, depth: int) -> int:
    """:func:`smooth_item_count` on ints, memoised."""
    count: int = _item_count(horizon, depth, EXACT)
    return count


def _item_count(horizon: Any, depth: Any, ops: Any) -> Any:
    per_depth = []
    for half in range(1, MAX_HALF + 1):
        cases = [(ops.le(comb(2 * half - j, half), horizon), half - j + 1) for j in range(1, half)]
        per_depth.append((depth == 2 * half, _chain(ops, cases, 1)))
    return _chain(ops, per_depth[:-1], per_depth[-1][1])


def smooth_leaf(rank: int, depth: int) -> int:
    """The leaf of a given rank: the ``rank``-th (0-indexed) integer of ``depth`` bits with
    exactly ``depth/2`` ones, in increasing order (unranking, top bit first)."""
    ones, out = depth // 2, 0
    for k in range(depth - 1, -1, -1):
        below = comb(k, ones)  # leaves with this prefix and a 0 at bit k
        if rank >= below:
            rank -= below
            out |= 1 << k
            ones -= 1
    return out


def smooth_leaves(horizon: int, depth: int) -> IntArray:
    """``ℓ_t`` for t = 1 … T (ranks 1 … T), vectorised."""
    r = np.arange(1, horizon + 1, dtype=np.int64)
    ones = np.full(horizon, depth // 2, dtype=np.int64)
    out = np.zeros(horizon, dtype=np.int64)
    table = _binomials(depth)
    for k in range(depth - 1, -1, -1):
        below = table[k][ones]
        bit = r >= below
        r -= np.where(bit, below, 0)
        out |= bit.astype(np.int64) << k
        ones -= bit
    return out


@lru_cache(maxsize=16)
def _binomials(depth: int) -> IntArray:
    """``binom(k, o)`` for ``0 ≤ k < depth``, ``0 ≤ o ≤ depth/2`` (int64: depth ≤ 66)."""
    half = depth // 2
    out = np.array([[comb(k, o) for o in range(half + 1)] for k in range(depth)], dtype=np.int64)
    out.setflags(write=False)
    return out


@lru_cache(maxsize=4)
def _layout(horizon: int, depth: int) -> tuple[IntArray, IntArray, IntArray, IntArray, IntArray]:
    """The plan's structure at ``horizon`` for the depth-``depth`` tree (read-only arrays).

    Returns ``(lo, hi, empty, rows, cols)``: per node in canonical order its interval and
    whether it is noise-only, and the (row t−1, node) pairs of the decoder, row-major, each
    row's d/2 nodes from the top bit down.  Two passes of the unranking (top bit first):
    the first counts each leaf's trailing ones (its set bits with a zero term, the
    noise-only nodes), which fixes the canonical indices; the second assigns them.
    """
    T, half = horizon, depth // 2
    table = _binomials(depth)
    t_idx = np.arange(T, dtype=np.int64)
    r = t_idx + 1
    ones = np.full(T, half, dtype=np.int64)
    empties = np.zeros(T, dtype=np.int64)
    for k in range(depth - 1, -1, -1):
        below = table[k][ones]
        bit = r >= below
        r -= np.where(bit, below, 0)
        ones -= bit
        empties += bit & (below == 0)
    size = empties + 1
    last = np.cumsum(size) - 1  # canonical index of the node with items released at t
    first = last - empties  # index of t's first noise-only node
    n = int(last[-1]) + 1
    hi = np.repeat(t_idx + 1, size)
    empty = np.ones(n, dtype=bool)
    empty[last] = False
    lo = hi.copy()  # noise-only nodes: [t, t]; the others are set below
    cols = np.empty((T, half), dtype=np.int64)
    r = t_idx + 1
    ones = np.full(T, half, dtype=np.int64)
    acc = np.zeros(T, dtype=np.int64)  # partial rank: the release time of the node at bit k
    seen = np.zeros(T, dtype=np.int64)
    for k in range(depth - 1, -1, -1):
        below = table[k][ones]
        bit = r >= below
        term = np.where(bit, below, 0)
        r -= term
        acc += term
        j = half - ones  # this set bit's position among the leaf's set bits
        ones -= bit
        full = np.flatnonzero(bit & (below > 0))
        node = last[acc[full] - 1]
        lo[node] = acc[full] - below[full] + 1
        cols[full, j[full]] = node
        void = np.flatnonzero(bit & (below == 0))
        cols[void, j[void]] = first[void] + seen[void]
        seen[void] += 1
    rows = np.repeat(t_idx, half)
    flat = cols.reshape(-1)
    for arr in (lo, hi, empty, rows, flat):
        arr.setflags(write=False)
    return lo, hi, empty, rows, flat


class SmoothBinary(Mechanism):
    """The smooth binary mechanism: balanced leaves, the same error at every step.

    Leaves are the d-bit strings with d/2 ones (d the smallest even depth with
    ``binom(d, d/2) > T``); output t sums the 0-children of the set bits of the leaf of
    rank t: always d/2 nodes, each with ``Lap((d/2)Δ/ε)``, so ``Var(out_t) =
    (d/2)·2((d/2)Δ/ε)²`` at every t.  The 0-children of a leaf's trailing ones hold no
    item: they are noise-only nodes (weight 0).  An item lies in at most ``c ≤ d/2``
    released nodes (``c = d/2 − 1`` when ``T < binom(d, d/2)/2``): the mechanism declares
    the exact budget ``c·ε/(d/2)``.

    References
    ----------
    .. [1] Andersson, Pagh. "A Smooth Binary Mechanism for Efficient Private Continual
       Observation." NeurIPS 2023; arXiv 2306.09666.
    """

    name = "smooth"
    proof = "proofs/smooth.py"
    docs = "docs/smooth.md"
    examples = (
        Example(horizons=(1, 5, 16, 20)),
        Example(horizons=(6, 16), privacy="zcdp"),
    )

    def __init__(
        self,
        *,
        epsilon: Budget | None = None,
        rho: Budget | None = None,
        horizon: Horizon,
        domain: Domain | None = None,
        noise: NoiseKind | None = None,
    ) -> None:
        super().__init__(epsilon=epsilon, rho=rho, horizon=horizon, domain=domain, noise=noise)
        assert self.horizon is not None
        self.depth: int = self.depth_for(self.horizon)
        """d, the tree depth (even)."""

    def decay(self) -> Decay:
        """Running counts: ``g ≡ 1``."""
        return prefix_decay()

    # ------------------------------------------------------------ declarations
    @staticmethod
    def depth_for(horizon: Any, ops: Any = EXACT) -> Any:
        """d at horizon T (see :func:`smooth_depth`)."""
        return smooth_depth(horizon, ops)

    @staticmethod
    def item_count_for(horizon: Any, depth: Any, ops: Any = EXACT) -> Any:
        """``c(t)`` of the depth-d tree (see :func:`smooth_item_count`)."""
        return smooth_item_count(horizon, depth, ops)

    def item_count(self, horizon: int | None = None) -> int:
        """``c(t)``: the most released nodes with items one item lies in (see module doc)."""
        T = self.horizon if horizon is None else horizon
        assert T is not None
        count: int = self.item_count_for(T, self.depth)
        return count

    @staticmethod
    def node_scale(depth: Any, epsilon: Any, sensitivity: Any, ops: Any = EXACT) -> Any:
        """The Laplace scale of every node, ``(d/2)Δ/ε``: ε split over the d/2 nodes an item
        can lie in (what every path draws with and ``budget_terms`` declares)."""
        return ops.number(depth) / 2 * sensitivity / epsilon

    def _scale(self) -> Fraction:
        """The Laplace scale ``(d/2)Δ/ε`` of every node (at :attr:`design_epsilon`)."""
        scale: Fraction = self.node_scale(self.depth, self.design_epsilon, self.sensitivity)
        return scale

    def node_variance(self, scale: Fraction, weight: Fraction = Fraction(1)) -> Fraction:
        """As for every mechanism, except that a noise-only node (weight 0) gets the variance
        of a node of weight 1: every node of an output has the same noise (``2b²`` Laplace,
        ``dΔ²/(4ρ)`` Gaussian), which is what makes every step's error identical."""
        return super().node_variance(scale, weight if weight != 0 else Fraction(1))

    def budget_terms(self, ops: Any = EXACT, **s: Any) -> list[BudgetTerm]:
        """The worst item lies in ``c`` released nodes of scale ``(d/2)Δ/ε``.

        By default the mechanism's own d and ``c(T)``; given ``horizon`` (a z3 variable in
        the proofs), d and c of that horizon; ``depth``/``count`` may be given as symbols.
        """
        eps = s.get("epsilon", self.design_epsilon)
        delta = s.get("sensitivity", self.sensitivity)
        if "horizon" in s:  # d and c of that horizon, computed with ops
            d = s["depth"] if "depth" in s else self.depth_for(s["horizon"], ops)
            c = s["count"] if "count" in s else self.item_count_for(s["horizon"], d, ops)
        else:
            d = s.get("depth", self.depth)
            c = s["count"] if "count" in s else self.item_count()
        return [BudgetTerm("node", c, self.node_scale(d, eps, delta, ops))]

    @staticmethod
    def spent_share(count: Any, depth: Any, ops: Any = EXACT) -> Any:
        """The share of the budget spent by ``count`` nodes of :meth:`node_scale`: ``c/(d/2)``."""
        return ops.number(count) / (ops.number(depth) / 2)

    def _spent(self) -> Fraction:
        """The share of the budget the release spends at T: ``c/(d/2)`` (1 when
        ``T ≥ binom(d, d/2)/2``)."""
        share: Fraction = self.spent_share(self.item_count(), self.depth)
        return share

    @property
    def declared_epsilon(self) -> Fraction:
        """The ε this mechanism spends: ``c·ε/(d/2)`` (ε itself when ``T ≥ binom(d, d/2)/2``);
        a zCDP mechanism has none (:class:`~dpref.errors.ParameterError`)."""
        return super().declared_epsilon * self._spent()

    @property
    def declared_rho(self) -> Fraction:
        """The ρ this mechanism spends: ``c·ρ/(d/2)`` (its L2 sum is ``2ρ·c/(d/2)``)."""
        return super().declared_rho * self._spent()

    def expected_l1_sum(self, horizon: int) -> Fraction | None:
        return Fraction(self.item_count(horizon)) * self.sensitivity / self._scale()

    def online_memory(self, horizon: int | None = None) -> int | None:
        """The d/2 noises of the current leaf's nodes and the running count."""
        return self.depth // 2 + 1

    # ------------------------------------------------------------- the plan
    def nodes(self, horizon: int) -> NodeTable:
        lo, hi, empty, _, _ = _layout(horizon, self.depth)
        return NodeTable(
            lo.copy(),
            hi.copy(),
            (self._scale(),),
            np.zeros(lo.size, dtype=np.int64),
            weight_table=(Fraction(1), Fraction(0)),
            weight_idx=empty.astype(np.int64),
        )

    def node_count(self, horizon: int) -> int:
        return int(_layout(horizon, self.depth)[0].size)

    def noise_scales(self, horizon: int) -> FloatArray | float:
        return ceil_float(self._scale())

    def recombination(self, horizon: int) -> ExactSparse:
        _, _, _, rows, cols = _layout(horizon, self.depth)
        return ExactSparse.from_triples(
            (horizon, self.node_count(horizon)),
            rows,
            cols,
            (Fraction(1),),
            np.zeros(rows.size, dtype=np.int64),
        )

    def variance_counts(self, horizon: int | None = None) -> tuple[Fraction, IntArray] | None:
        """``(v, d/2)``: d/2 nodes of variance v at every step (``v = 2((d/2)Δ/ε)²`` Laplace,
        ``dΔ²/(4ρ)`` Gaussian)."""
        t = self._horizon_for(horizon)
        return self.node_variance(self._scale()), np.full(t, self.depth // 2, dtype=np.int64)

    def variance_exact(self, horizon: int | None = None) -> list[Fraction]:
        """``(d/2)·2((d/2)Δ/ε)²`` at every t (Gaussian: ``d²Δ²/(8ρ)``)."""
        t = self._variance_horizon(horizon)
        return [(self.depth // 2) * self.node_variance(self._scale())] * t

    def target(self, stream: Any) -> FloatArray:
        """Exact prefix sums ``c_t``."""
        return np.cumsum(self._stream(stream))

    def _target_checked(self, x: FloatArray) -> FloatArray:
        return np.cumsum(x)

    def combine(self, noise: FloatArray, horizon: int) -> FloatArray:
        """``R z``: per output the d/2 node noises, gathered in bit order."""
        _, _, _, _rows, cols = _layout(horizon, self.depth)
        half = self.depth // 2
        picked = noise[..., cols].reshape(*noise.shape[:-1], horizon, half)
        out: FloatArray = picked.sum(axis=-1)
        return out

    def online(self, rng: Any = None, noise: Any = None) -> OnlineCounter:
        return _SmoothOnline(self, rng, noise)


class _SmoothOnline(OnlineCounter):
    """O(d) state: the current leaf and the noise of the node of each of its set bits."""

    def __init__(self, m: SmoothBinary, rng: Any, noise: Any) -> None:
        super().__init__(m, rng, noise)
        self._scale = m._scale()
        self._scale_f = ceil_float(self._scale)
        self._leaf = (1 << (m.depth // 2)) - 1  # rank 0
        self._noise_at: dict[int, float] = {}  # bit index → node noise (set bits of the leaf)
        self._count = 0.0

    def step(self, x: Any) -> float:
        self._count += self._admit(x)
        old = self._leaf
        low = old & -old
        carried = old + low  # the lowest block of ones carried one place up
        new = carried | (((old ^ carried) >> 2) // low)  # the rest of it at the bottom (HAKMEM 175)
        self._leaf = new
        top = (old ^ new).bit_length() - 1  # highest changed bit: old 0, new 1
        for k in [k for k in self._noise_at if k < top]:
            del self._noise_at[k]
        # new nodes: the trailing ones of the new leaf (noise-only), top down, then bit `top`
        trailing = (~new & (new + 1)).bit_length() - 1
        for k in range(trailing - 1, -1, -1):
            self._noise_at[k] = self._noise(self._scale_f, self._scale)
        self._noise_at[top] = self._noise(self._scale_f, self._scale)
        return self._count + sum(self._noise_at[k] for k in sorted(self._noise_at, reverse=True))
