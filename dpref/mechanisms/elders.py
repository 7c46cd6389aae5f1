"""Counting with balanced (negative) digits on a k-ary tree (docs/elders.md).

Andersson, Pagh, Steiner and Torkamani ("Count on Your Elders: Laplace vs Gaussian
Noise", FORC 2025; arXiv 2408.07021) generalise the binary tree mechanism with a k-ary
number system with negative digits and Laplace noise.  The paper's body could not be
read from the sources available to this project (only its abstract and table of
contents), so this module is dpref's own construction of what the abstract describes,
with its own proof (``proofs/elders.py``); docs/elders.md says what is and is not
established.

Construction (k odd, ``3 ≤ k``):

* levels ``j = 0 … H`` with ``H = max{j : k^j ≤ 2T − 1}``, ``L = H + 1``;
* level-j nodes are the aligned blocks ``[m·k^j + 1, (m+1)·k^j]`` (cut at T) that some
  output uses; each gets ``Lap(LΔ/ε)``.  An item is in one block per level, so the node
  vector is ``ε``-DP (Laplace mechanism, L1 sensitivity ``LΔ``);
* ``r_j(t)`` is the multiple of ``k^j`` nearest to t (unique: k is odd), so
  ``r_0 = t``, ``r_{H+1} = 0`` and ``b_j = (r_j − r_{j+1})/k^j ∈ {−(k−1)/2 … (k−1)/2}``
  are t's balanced base-k digits;
* the output at t is ``Σ_j (N_j(r_j) − N_j(r_{j+1}))`` where ``N_j(r)`` is the sum of the
  noisy level-j blocks before r: ``|b_j|`` blocks added (``b_j > 0``) or subtracted
  (``b_j < 0``) per level.  It telescopes to ``c_t`` plus noise: unbiased.

Causality: a subtracted block may end after t, but its items after t cancel exactly
(``R·A = Q`` with Q lower triangular), so the output at t is ``c_t`` plus node noise:
computable at t from ``x_1 … x_t``.  A node's noise is drawn when an output first uses
it (its *release time*, possibly before its interval ends); the whole output sequence is
a fixed linear function of the final noisy node vector, hence ε-DP by post-processing.
Variance: ``Var(out_t) = 2(LΔ/ε)² · n_t`` with ``n_t = Σ_j |b_j|`` minus the blocks of the
range that start after T (their value is 0, known, and they are not released).

References
----------
.. [1] J. D. Andersson, R. Pagh, T. A. Steiner, S. Torkamani. "Count on Your Elders:
   Laplace vs Gaussian Noise." FORC 2025, LIPIcs 329, paper 10; arXiv 2408.07021.
.. [2] T.-H. H. Chan, E. Shi, D. Song. "Private and Continual Release of Statistics."
   ACM TISSEC 14(3), 2011 (the binary mechanism this generalises).
"""

from __future__ import annotations

import math
from fractions import Fraction
from functools import lru_cache
from typing import Any

import numpy as np
import numpy.typing as npt

from dpref.domains import Domain
from dpref.errors import ParameterError
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
from dpref.mechanisms.tree_arith import ARRAY, op_ite, op_le
from dpref.noise import NoiseKind
from dpref.plan import ExactSparse
from dpref.types import Budget, Count, Horizon
from dpref.validation import ceil_float, check_int_range, fmt

__all__ = [
    "MAX_K",
    "Elders",
    "balanced_digits",
    "block_first_use",
    "elders_levels",
    "elders_scale",
]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

_CHUNK = 1 << 20
"""Steps per chunk of the vectorised variance counts."""

MAX_K = 2**20 + 1
"""Largest arity accepted: ``k·2T`` stays below 2^63 for every T ≤ 2^31 (the batch paths);
with k > 2T − 1 only the leaves are used and the mechanism is Simple II."""


def elders_levels(horizon: Any, k: int, ops: Any = EXACT) -> Any:
    """``L = H + 1`` with ``H = max{j ≥ 0 : k^j ≤ 2T − 1}``: the levels an output can use.

    ``r_j(t) ≠ 0`` for some ``t ≤ T`` iff ``(k^j + 1)/2 ≤ T``, i.e. ``k^j ≤ 2T − 1``.
    Evaluated over ``ops`` (an int for an int T; a z3 or sympy expression for a symbolic
    ``1 ≤ T ≤ 2⁶²``, summing ``[k^j ≤ 2T − 1]`` over the powers up to ``2⁶³``): the one level
    count of the budget, the layout and the declaration (``proofs/elders.py`` evaluates it).
    """
    top = 2 * horizon - 1
    bound = 2 * int(horizon) - 1 if isinstance(horizon, int | np.integer) else 2 * MAX_HORIZON
    levels: Any = 1
    power = k
    while power <= bound:
        levels = levels + op_ite(ops, op_le(ops, power, top), 1, 0)
        power *= k
    return levels


def elders_scale(levels: Any, sensitivity: Any, epsilon: Any) -> Any:
    """``LΔ/ε``: every node's Laplace scale (exact; symbols allowed)."""
    return levels * sensitivity / epsilon


def block_first_use(m: Any, j: int, k: int, ops: Any = EXACT) -> Any:
    """The first t whose output uses level-j block m (``[m k^j + 1, (m+1)k^j]``), for a
    block that is not a middle child: a forward child ``s < (k−1)/2`` of parent c is first
    added when ``r_j`` reaches its end, ``c·k^{j+1} + (s+1)k^j − (k^j − 1)/2``; a backward
    child is first subtracted when ``r_{j+1}`` reaches the parent's end,
    ``(c+1)k^{j+1} − (k^{j+1} − 1)/2``.  Ints, or numpy arrays with
    :data:`~dpref.mechanisms.tree_arith.ARRAY` (the layout)."""
    u = k**j
    U = u * k
    half, HALF = (u - 1) // 2, (U - 1) // 2
    c, s = m // k, m % k
    return op_ite(ops, s < (k - 1) // 2, c * U + (s + 1) * u - half, (c + 1) * U - HALF)


def balanced_digits(t: int, k: int) -> list[int]:
    """The balanced base-k digits ``b_0, b_1, …`` of ``t ≥ 0`` (k odd): ``t = Σ b_j k^j``,
    ``|b_j| ≤ (k−1)/2``; empty for t = 0."""
    if k < 3 or k % 2 == 0:
        raise ParameterError(f"k={fmt(k)}: balanced digits need an odd k >= 3")
    out: list[int] = []
    half = (k - 1) // 2
    while t:
        d = (t + half) % k - half
        out.append(d)
        t = (t - d) // k
    return out


def _rounded(t: IntArray, u: int) -> IntArray:
    """``r = u·⌊t/u + 1/2⌋``: the multiple of the odd u nearest to t (ties impossible)."""
    out: IntArray = u * ((2 * t + u) // (2 * u))
    return out


@lru_cache(maxsize=8)
def _layout(
    horizon: int, k: int, levels: int
) -> tuple[IntArray, IntArray, IntArray, tuple[IntArray, ...]]:
    """``(lo, hi, release, index)`` in canonical order, and per level the canonical index of
    block m (−1 where no node is released).  Read-only arrays (cached)."""
    T, L = horizon, levels
    los, his, rel, lev, ms = [], [], [], [], []
    mid = (k - 1) // 2
    for j in range(L):
        u = k**j
        m = np.arange((T - 1) // u + 1, dtype=np.int64)  # blocks that start at or before T
        first = block_first_use(m, j, k, ARRAY)
        keep = (m % k != mid) & (first <= T)
        m = m[keep]
        los.append(m * u + 1)
        his.append(np.minimum((m + 1) * u, T))
        rel.append(first[keep])
        lev.append(np.full(m.size, j, dtype=np.int64))
        ms.append(m)
    lo, hi, release = np.concatenate(los), np.concatenate(his), np.concatenate(rel)
    level, block = np.concatenate(lev), np.concatenate(ms)
    order = np.lexsort((lo, hi - lo, release))
    lo, hi, release, level, block = lo[order], hi[order], release[order], level[order], block[order]
    index = []
    for j in range(L):
        size = (2 * T) // k**j + 2  # every r_j/k^j for t ≤ T is at most 2T/k^j + 1
        idx = np.full(size, -1, dtype=np.int64)
        sel = np.flatnonzero(level == j)
        idx[block[sel]] = sel
        idx.setflags(write=False)
        index.append(idx)
    for arr in (lo, hi, release):
        arr.setflags(write=False)
    return lo, hi, release, tuple(index)


def _digit_bounds(horizon: int, k: int, levels: int) -> list[tuple[IntArray, IntArray]]:
    """Per level j, ``(r_j/k^j, r_{j+1}/k^j)`` for every t = 1..T.

    For odd u, ``r/u = ⌊t/u + 1/2⌋ = ⌊(t + (u−1)/2)/u⌋`` (``2t + u`` is odd, so never a
    multiple of 2u): one integer division per level.
    """
    t = np.arange(1, horizon + 1, dtype=np.int64)
    L = levels
    q = [t]
    for j in range(1, L + 1):
        u = k**j
        q.append((t + (u - 1) // 2) // u)
    return [(q[j], q[j + 1] * k) for j in range(L)]


class Elders(Mechanism):
    """k-ary tree counter with balanced (negative) digits and Laplace noise.

    Every output adds or subtracts ``|b_j|`` aligned blocks of size ``k^j`` per level, the
    balanced base-k digits of t (``|b_j| ≤ (k−1)/2``); every node gets ``Lap(LΔ/ε)`` with
    ``L = H + 1``, ``H = max{j : k^j ≤ 2T − 1}``; budget ``L · Δ/(LΔ/ε) = ε``.  Variance
    ``2(LΔ/ε)² n_t`` (``n_t`` the nodes the output at t uses).  Outputs use partial sums of
    nodes that are still open; their future items cancel (docs/elders.md).  With
    ``k > 2T − 1`` only the leaves are used: Simple II.

    Parameters
    ----------
    k
        The arity, an odd integer with 3 ≤ k ≤ 2^20 + 1 (default 19, the paper's choice);
        even k is refused (the paper's variant for even k could not be established).

    References
    ----------
    .. [1] Andersson, Pagh, Steiner, Torkamani. "Count on Your Elders: Laplace vs
       Gaussian Noise." FORC 2025; arXiv 2408.07021.
    """

    name = "elders"
    opens_nodes = True
    proof = "proofs/elders.py"
    docs = "docs/elders.md"
    examples = (
        Example({"k": 3}, horizons=(1, 13, 27)),
        Example({"k": 5}, horizons=(16,)),
        Example(horizons=(20,)),
    )

    def __init__(
        self,
        *,
        epsilon: Budget | None = None,
        rho: Budget | None = None,
        horizon: Horizon,
        k: Count = 19,
        domain: Domain | None = None,
        noise: NoiseKind | None = None,
    ) -> None:
        super().__init__(epsilon=epsilon, rho=rho, horizon=horizon, domain=domain, noise=noise)
        kk = check_int_range("k", k, 3, MAX_K)
        if kk % 2 == 0:
            raise ParameterError(
                f"k={kk}: must be odd (balanced digits −(k−1)/2 … (k−1)/2); the even-k variant "
                "of the paper could not be established"
            )
        self.k: int = kk

    @classmethod
    def frontier_variants(cls, horizon: int) -> list[dict[str, Any]]:
        """Every odd k ≤ 63, and for each number of levels L the smallest odd k with L levels
        (a larger k with the same L only adds blocks per level).  The asymptotic optimum is
        k = 19–21 (docs/elders.md); the search range is a documented choice, not a proof
        that no other k is better."""
        t = check_int_range("horizon", horizon, 1, None)
        ks = set(range(3, 64, 2))
        levels = 1
        while True:  # smallest odd k with k^levels > 2T − 1, i.e. at most `levels` levels
            root = math.isqrt(2 * t - 1) if levels == 2 else round((2 * t - 1) ** (1 / levels))
            k = max(3, root - 2)
            while k**levels <= 2 * t - 1:
                k += 1
            k += 1 - k % 2
            if k <= 63:
                break
            if k <= MAX_K:
                ks.add(k)
            levels += 1
        return [{"k": k} for k in sorted(ks) if k <= max(3, 2 * t + 1)]

    def extra_params(self) -> dict[str, Any]:
        return {"k": self.k}

    def decay(self) -> Decay:
        """Running counts: ``g ≡ 1``."""
        return prefix_decay()

    @staticmethod
    def levels(horizon: int, k: int) -> int:
        """``L = H + 1`` (see :func:`elders_levels`)."""
        return int(elders_levels(horizon, k))

    def levels_at(self, horizon: Any, ops: Any = EXACT) -> Any:
        """The class's one level count: :func:`elders_levels` of T over ``ops``."""
        return elders_levels(horizon, self.k, ops)

    def node_scale(self, levels: Any, sensitivity: Any = None, epsilon: Any = None) -> Any:
        """The class's one node scale: :func:`elders_scale` ``LΔ/ε`` (Δ and the design ε by
        default; symbols allowed)."""
        return elders_scale(
            levels,
            self.sensitivity if sensitivity is None else sensitivity,
            self.design_epsilon if epsilon is None else epsilon,
        )

    def _levels(self, horizon: int | None = None) -> int:
        T = self.horizon if horizon is None else horizon
        assert T is not None
        return int(self.levels_at(T))

    def _scale(self) -> Fraction:
        return Fraction(self.node_scale(self._levels()))

    def budget_terms(self, ops: Any = EXACT, **s: Any) -> list[BudgetTerm]:
        """One node per level, ``L = levels_at(T)`` levels (over ``ops``, for the
        ``horizon`` given), each of scale ``node_scale(L)`` — the functions the release
        draws with."""
        L = self.levels_at(s.get("horizon", self.horizon), ops)
        scale = self.node_scale(L, s.get("sensitivity"), s.get("epsilon"))
        return [BudgetTerm("level", L, scale)]

    def expected_l1_sum(self, horizon: int) -> Fraction | None:
        """``L(horizon)·Δ/b``: the worst item of a plan over the first ``horizon`` steps lies
        in that many nodes (the scale b is set for the mechanism's own T)."""
        return Fraction(self._levels(horizon)) * self.sensitivity / self._scale()

    # ------------------------------------------------------------- the plan
    def nodes(self, horizon: int) -> NodeTable:
        lo, hi, _, _ = _layout(horizon, self.k, self._levels(horizon))
        return NodeTable(lo.copy(), hi.copy(), (self._scale(),), np.zeros(lo.size, np.int64))

    def release_times(self, horizon: int) -> IntArray:
        """The first t whose output uses the node (its noise is drawn then)."""
        return _layout(horizon, self.k, self._levels(horizon))[2].copy()

    def node_count(self, horizon: int) -> int:
        return int(_layout(horizon, self.k, self._levels(horizon))[0].size)

    def noise_scales(self, horizon: int) -> FloatArray | float:
        return ceil_float(self._scale())

    def recombination(self, horizon: int) -> ExactSparse:
        _, _, _, index = _layout(horizon, self.k, self._levels(horizon))
        rows, cols, signs = [], [], []
        t = np.arange(horizon, dtype=np.int64)
        for j, (a, b) in enumerate(_digit_bounds(horizon, self.k, self._levels(horizon))):
            start, stop = np.minimum(a, b), np.maximum(a, b)
            n = stop - start
            total = int(n.sum())
            offs = np.arange(total) - np.repeat(np.cumsum(n) - n, n)
            m = np.repeat(start, n) + offs
            node = index[j][m]
            ok = node >= 0
            rows.append(np.repeat(t, n)[ok])
            cols.append(node[ok])
            signs.append(np.repeat((a < b).astype(np.int64), n)[ok])  # 1: subtracted
        r = np.concatenate(rows)
        order = np.lexsort((np.concatenate(cols), r))
        return ExactSparse.from_triples(
            (horizon, self.node_count(horizon)),
            r[order],
            np.concatenate(cols)[order],
            (Fraction(1), Fraction(-1)),
            np.concatenate(signs)[order],
        )

    def node_counts(self, horizon: int | None = None) -> IntArray:
        """``n_t``: how many nodes the output at t uses, t = 1..T (vectorised, exact ints).

        A block in the range of an output ``t ≤ T`` is released iff it is not a middle child
        and starts by T (its first use is at most t), so per level the count is
        ``|F(r_j/u) − F(r_{j+1}/u)|`` with ``F(x)`` the number of non-middle blocks
        ``m < min(x, M)``, ``M = ⌊(T−1)/u⌋ + 1``: ``F(x) = y − ⌊(y + k − 1 − mid)/k⌋``.
        """
        T = self._horizon_for(horizon)
        k, mid = self.k, (self.k - 1) // 2
        L = self._levels(T)
        total = np.zeros(T, dtype=np.int64)
        for start in range(0, T, _CHUNK):  # bounded temporaries whatever T
            t = np.arange(start + 1, min(T, start + _CHUNK) + 1, dtype=np.int64)
            part = total[start : start + t.size]
            q = t
            for j in range(L):
                u = k**j
                q_up = (t + (u * k - 1) // 2) // (u * k)
                top = (T - 1) // u + 1
                ya, yb = np.minimum(q, top), np.minimum(q_up * k, top)
                part += np.abs((ya - (ya + k - 1 - mid) // k) - (yb - (yb + k - 1 - mid) // k))
                q = q_up
        return total

    def variance_counts(self, horizon: int | None = None) -> tuple[Fraction, IntArray] | None:
        """``(2(LΔ/ε)², n_t)``."""
        return self.node_variance(self._scale()), self.node_counts(horizon)

    def online_memory(self, horizon: int | None = None) -> int | None:
        """Per level at most ``3(k−1)/2`` block noises (the ``k − 1`` used children of the
        previous parent, the ``(k−1)/2`` forward children of the current one), one running
        term and one ``r_j``; plus ``r_L`` and the running count."""
        L = self._levels(horizon)
        return L * (3 * (self.k - 1) // 2 + 2) + 2

    def variance_exact(self, horizon: int | None = None) -> list[Fraction]:
        """``2(LΔ/ε)² n_t`` for t = 1..T."""
        unit = self.node_variance(self._scale())
        cache: dict[int, Fraction] = {}
        return [cache.setdefault(n, n * unit) for n in self.node_counts(horizon).tolist()]

    def target(self, stream: Any) -> FloatArray:
        """Exact prefix sums ``c_t``."""
        return np.cumsum(self._stream(stream))

    def _target_checked(self, x: FloatArray) -> FloatArray:
        return np.cumsum(x)

    def combine(self, noise: FloatArray, horizon: int) -> FloatArray:
        """``R z``, vectorised through the nesting ``q_{j+1} = ⌊(q_j + (k−1)/2)/k⌋`` of the
        rounded positions ``q_j = r_j/k^j`` (the rounding boundaries of ``k^{j+1}`` are
        boundaries of ``k^j``): with ``C_j`` the cumulative noise of the level-j blocks,
        ``G_j(q) = C_j(q) − C_j(k q_{j+1}) + G_{j+1}(q_{j+1})`` from the top level down, and
        the noise part of the output at t is ``G_0(t)``.  Each level costs O(T/k^j) plus
        one ``np.repeat``."""
        _, _, _, index = _layout(horizon, self.k, self._levels(horizon))
        k, mid = self.k, (self.k - 1) // 2
        lead = noise.shape[:-1]
        L = len(index)
        upper: FloatArray | None = None  # G_{j+1} on q = 0 … Q_{j+1} − 1
        for j in range(L - 1, -1, -1):
            u = k**j
            n_q = (horizon + (u - 1) // 2) // u + 1  # q_j(t) for t ≤ T lies in [0, n_q)
            idx = index[j]
            n_groups = (n_q - 1 + mid) // k + 1  # q_{j+1} values
            cum = np.zeros((*lead, n_groups * k + 1), dtype=np.float64)
            have = np.flatnonzero(idx[: n_groups * k] >= 0)
            cum[..., have + 1] = noise[..., idx[have]]
            np.cumsum(cum, axis=-1, out=cum)
            at_parent = np.repeat(cum[..., 0 : n_groups * k : k], k, axis=-1)
            g = cum[..., :n_q] - at_parent[..., mid : mid + n_q]
            if upper is not None:
                g += np.repeat(upper, k, axis=-1)[..., mid : mid + n_q]
            upper = g
        assert upper is not None
        out: FloatArray = np.ascontiguousarray(upper[..., 1 : horizon + 1])
        return out

    def online(self, rng: Any = None, noise: Any = None) -> OnlineCounter:
        return _EldersOnline(self, rng, noise)


class _EldersOnline(OnlineCounter):
    """O(k·L) state: per level the noise of the blocks near the current position and the
    level's current term ``S_j = N_j(r_j) − N_j(r_{j+1})``.

    Level j changes only when ``r_j`` moves, i.e. when ``k^j`` divides ``t + (k^j−1)/2``; these
    events nest (an event at j implies one at j − 1), so a step visits the levels upward
    until the first without an event: amortised ``1 + 1/k + …`` levels per step.
    """

    def __init__(self, m: Elders, rng: Any, noise: Any) -> None:
        super().__init__(m, rng, noise)
        assert m.horizon is not None
        self._T = m.horizon
        self._k = m.k
        self._L = m._levels()
        self._scale = m._scale()
        self._scale_f = ceil_float(self._scale)
        self._u = [m.k**j for j in range(self._L + 1)]
        self._half = [(u - 1) // 2 for u in self._u]
        self._mid = (m.k - 1) // 2
        self._q = [0] * (self._L + 1)  # q_j = r_j/k^j at the current t (q_L = 0 always)
        self._terms = [0.0] * self._L
        self._noise_total = 0.0  # Σ_j S_j
        self._blocks: list[dict[int, float]] = [{} for _ in range(self._L)]
        self._count = 0.0
        # the fast path's constants: level 1's rounding period (never hit when L = 1)
        self._u1 = self._u[1] if self._L > 1 else 2**63
        self._h1 = self._half[1] if self._L > 1 else 1
        self._leaves = self._blocks[0]

    def _block(self, j: int, m: int) -> tuple[int, int, int, int] | None:
        """``(length − 1, lo, j, m)`` of level-j block m, None when it starts after T."""
        u = self._u[j]
        lo = m * u + 1
        if lo > self._T:
            return None
        return (min(lo + u - 1, self._T) - lo, lo, j, m)

    def _range_sum(self, j: int, a: int, b: int) -> float:
        """``N_j(a) − N_j(b)`` (block indices a, b)."""
        got = self._blocks[j]
        if a >= b:
            return sum(got.get(m, 0.0) for m in range(b, a))
        return -sum(got.get(m, 0.0) for m in range(a, b))

    def step(self, x: Any) -> float:
        self._count += self._admit(x)
        t = self.t
        if (t + self._h1) % self._u1:  # only r_0 = t moves (k − 1 steps in k)
            self._q[0] = t
            if 1 <= t % self._k <= self._mid:  # leaf t starts being added: drawn now
                z = self._noise(self._scale_f, self._scale)
                self._leaves[t - 1] = z
            else:  # leaf t stops being subtracted (0 for the unused middle leaf)
                z = self._leaves.get(t - 1, 0.0)
            self._terms[0] += z
            self._noise_total += z
            return self._count + self._noise_total
        u, half, q, k = self._u, self._half, self._q, self._k
        top = 1  # highest level whose r_j moves at t
        while top + 1 < self._L and (t + half[top + 1]) % u[top + 1] == 0:
            top += 1
        new: list[tuple[int, int, int, int]] = []
        for j in range(top + 1):
            qj = q[j] + 1
            if 1 <= qj % k <= self._mid:  # a forward block starts being added
                b = self._block(j, qj - 1)
                if b is not None:
                    new.append(b)
            if j < top:  # r_{j+1} moves: all backward blocks of the parent appear
                c = q[j + 1]
                for s in range(self._mid + 1, k):
                    b = self._block(j, c * k + s)
                    if b is not None:
                        new.append(b)
        if len(new) > 1:
            new.sort()
        for _, _, j, mm in new:
            self._blocks[j][mm] = self._noise(self._scale_f, self._scale)
        for j in range(top + 1):
            q[j] += 1
        for j in range(top + 1):
            if j < top:  # both ends moved: recompute, dropping blocks left behind
                got = self._blocks[j]
                keep = q[j + 1] * k - k
                for m in [m for m in got if m < keep]:
                    del got[m]
                value = self._range_sum(j, q[j], q[j + 1] * k)
            else:
                value = self._terms[j] + self._blocks[j].get(q[j] - 1, 0.0)
            self._noise_total += value - self._terms[j]
            self._terms[j] = value
        return self._count + self._noise_total
