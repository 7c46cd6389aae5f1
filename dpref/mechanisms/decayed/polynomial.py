"""Polynomially decayed sums, bicriteria: :class:`PolynomialSum` (docs/spec.md §2.4).

A weighted, delayed :class:`~dpref.mechanisms.decayed.window.WindowSum` instance per
step of the approximation ``g'`` of ``g(i) = (i+1)^{−c}``; the release time of a node
of instance j is its interval end plus the instance's delay ``d_j``, and nodes are in
canonical order by release time, then size, then instance.  Conventions: see
:mod:`dpref.mechanisms.decayed`.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt

from dpref.domains import Domain
from dpref.dyadic import aligned_covers, layout_nodes, layout_offsets, window_start0
from dpref.errors import EnumerationBudgetError, ParameterError
from dpref.lower_bounds import (
    Decay,
    polynomial_decay,
)
from dpref.mechanisms.base import EXACT, BudgetTerm, Example, NodeTable, OnlineCounter
from dpref.mechanisms.decayed.common import (
    _ONE,
    FloatArray,
    IntArray,
    _Decayed,
    _levels_for_window,
    _WindowState,
)
from dpref.mechanisms.decayed.window import _cover_level_counts, _window_combine
from dpref.noise import NoiseKind
from dpref.plan import ExactSparse, TargetRows
from dpref.rigorous import (
    check_beta,
    check_c,
    polynomial_breakpoint,
    polynomial_next_break,
    polynomial_series_upper,
)
from dpref.validation import ceil_float, fmt

__all__ = ["NODE_BUDGET", "PolynomialSum"]

NODE_BUDGET = 1 << 26
"""Most nodes a PolynomialSum plan, release or combine builds (67 M: ~0.5 GB of noise;
``dpref bench``'s largest, c = 11/10, β = 1/10 at T = 2¹⁸, has 50 M).  Beyond it
:class:`~dpref.errors.EnumerationBudgetError`; ``online()`` and ``variance_at`` are not
limited.  The count is ``node_count(T) ≈ T·(#instances)``, #instances ≈ ``c·ln T/β``."""

IndexArray = npt.NDArray[np.signedinteger[Any]]


class _Instance:
    """One WindowSum instance of PolynomialSum: weight ρ^j, window W_j, delay d_j."""

    __slots__ = ("cap", "d", "hi_lag", "j", "lo_lag", "weight", "window")

    def __init__(self, j: int, b_prev: int, b_j: int, rho: Fraction) -> None:
        self.j = j
        self.window = b_j - b_prev
        self.cap = _levels_for_window(self.window)
        self.d = b_prev + 1
        self.lo_lag = b_prev + 1
        self.hi_lag = b_j
        self.weight = rho**j


class PolynomialSum(_Decayed):
    """Polynomially decayed sums, bicriteria: ``g(i) = (i+1)^{−c}``, c > 1, 0 < β < 1.

    With ``b(j) = max{i ≥ 0 : g(i) ≥ (1−β)^j}`` (``b(−1) = −1``) the step function
    ``g'(i) = (1−β)^j`` for ``i ∈ (b(j−1), b(j)]`` satisfies ``(1−β)g ≤ g' ≤ g``, hence
    ``(1−β)F ≤ F' ≤ F`` on non-negative streams (the patent's Eq. 42 with the exponent
    that makes it true; checked exactly in the tests and proofs).  And
    ``F'(t) = Σ_j (1−β)^j · WS_{W_j}(t − d_j)`` with ``W_j = b(j) − b(j−1)`` and delay
    ``d_j = b(j−1) + 1``, skipping empty ranges.

    Instance j is a :class:`WindowSum` of window ``W_j`` over the input scaled by
    ``(1−β)^j`` and delayed by ``d_j`` steps: its node over items ``[l, u]`` (aligned,
    size ≤ ``B_j = 2^⌈log₂W_j⌉``) has weight ``(1−β)^j`` and is released at time
    ``u + d_j``, when it is first needed (an instance starts at ``t = d_j + 1``).  All
    nodes get the same ``Lap(λ)``, ``λ = SΔ/ε`` with
    ``S = Σ_{j: W_j>0} (1−β)^j (log₂B_j + 1)`` — the docs/spec.md §2.4 convention.  S is finite
    for every c > 1 (``proofs/decayed.py``); the scale is a rational upper bound of
    ``SΔ/ε`` (the series summed exactly in 128-bit fixed point with upward rounding
    to a tail below ``2^{−64}``, plus a closed-form tail bound).

    **Note on the error.**  With one λ for every instance (docs/spec.md §2.4), the
    estimate at t adds at least one noisy node per *active* instance (``d_j < t``),
    and the number of active instances grows like ``c·ln t/β``: the variance grows
    (logarithmically) with t, unlike the other three mechanisms.  ``dpref bench``
    shows this; ``variance_at`` gives it exactly.

    The plan is unbiased for ``F'`` (``R·A = Q'``); :meth:`decayed_target` gives the
    true ``F``, and the reference reports both the additive error (against F') and
    the ``(1−β)`` multiplicative factor.  ``noise="discrete"`` is refused.

    Parameters
    ----------
    c
        The decay exponent c > 1 (the weight of an item i steps old is (i+1)^−c).
    beta
        The approximation β, 0 < β < 1: the estimate is unbiased for F' with (1−β)F ≤ F' ≤ F.

    References
    ----------
    .. [1] Bolot et al., ICDT 2013, PolynomialSum (Table 4, Theorem 6, Eq. 41–42).
    """

    name = "polynomial"
    examples = (
        Example({"c": 2, "beta": Fraction(1, 5)}, horizons=(10,)),
        Example({"c": Fraction(3, 2), "beta": Fraction(1, 2)}, horizons=()),
    )

    def __init__(
        self,
        *,
        c: Any,
        beta: Any,
        epsilon: Any,
        horizon: Any = None,
        domain: Domain | None = None,
        noise: NoiseKind = "laplace",
    ) -> None:
        super().__init__(epsilon=epsilon, horizon=horizon, domain=domain, noise=noise)
        self.c: Fraction = check_c(c)
        self.beta: Fraction = check_beta(beta)
        if self.noise == "discrete":
            raise ParameterError(
                "noise='discrete': PolynomialSum nodes hold weighted (non-integer) sums"
            )
        self.rho: Fraction = 1 - self.beta
        """``1 − β``."""
        self._b: dict[int, int] = {0: 0}
        self._instances: list[_Instance] = []
        self._next_j = 0
        self.series_upper: Fraction = polynomial_series_upper(self.c, self.beta)
        """A rational upper bound on S."""

    def extra_params(self) -> dict[str, Any]:
        return {"c": self.c, "beta": self.beta}

    def decay(self) -> Decay:
        """The true ``g(i) = (i+1)^{−c}`` (not the step function g' the plan is unbiased for)."""
        return polynomial_decay(self.c)

    # ------------------------------------------------------------ breakpoints
    def breakpoint(self, j: int) -> int:
        """``b(j)`` (cached)."""
        if j < 0:
            return -1
        if j not in self._b:
            self._b[j] = polynomial_breakpoint(j, self.c, self.beta)
        return self._b[j]

    def _grow(self) -> _Instance:
        """The next non-empty instance (empty steps of g' are skipped in O(1) calls)."""
        j = self._next_j
        bp, bj = self.breakpoint(j - 1), self.breakpoint(j)
        if bj == bp:
            j = polynomial_next_break(bp, j - 1, self.c, self.beta)
            bj = self.breakpoint(j)
        self._next_j = j + 1
        inst = _Instance(j, bp, bj, self.rho)
        self._instances.append(inst)
        return inst

    def instances(self, horizon: int) -> list[_Instance]:
        """Non-empty instances with delay ``d_j ≤ T − 1`` (those used by some t ≤ T)."""
        while not self._instances or self._instances[-1].d <= horizon - 1:
            self._grow()
        return [inst for inst in self._instances if inst.d <= horizon - 1]

    def next_delay(self, horizon: int) -> int:
        """The delay of the first instance not yet in use at ``horizon`` (``d > T − 1``)."""
        self.instances(horizon)
        return self._instances[-1].d

    def series_partial(self, horizon: int | None = None) -> Fraction:
        """``Σ_{j: W_j>0, d_j < T} (1−β)^j (log₂B_j + 1)`` exactly (the part in use at T)."""
        t = self._horizon_for(horizon)
        return sum((i.weight * (i.cap + 1) for i in self.instances(t)), Fraction(0))

    def scale(self) -> Fraction:
        """The common Laplace scale: a float ≥ ``SΔ/ε``."""
        return Fraction(ceil_float(self.series_upper * self.sensitivity / self.epsilon))

    def budget_terms(self, ops: Any = EXACT, **s: Any) -> list[BudgetTerm]:
        """Instance j: the worst item is in ``log₂B_j + 1`` nodes of weight ``(1−β)^j``.

        ``membership`` is the worst item's total weight in the instance's nodes;
        instances are those in use at the horizon (symbol ``horizon``; all with
        ``b(j) < 2^{20}`` when there is none).  The scale is ``S·Δ/ε`` (symbol ``S``,
        or the rational upper bound used).  A last term ``instances>T`` declares the
        weight of the other instances, ``S − Σ_{used}`` (≥ the rest of the series), so
        the declarations add up to ε.
        """
        eps = s.get("epsilon", self.epsilon)
        delta = s.get("sensitivity", self.sensitivity)
        T = s.get("horizon", self.horizon)
        S = s["S"] if "S" in s else self.scale() * self.epsilon / self.sensitivity
        scale = S * delta / eps
        insts = self.instances(int(T) if T is not None else 1 << 20)
        weights = [i.weight * (i.cap + 1) for i in insts]
        return [
            *(BudgetTerm(f"instance_{i.j}", w, scale) for i, w in zip(insts, weights, strict=True)),
            BudgetTerm("instances>T", S - sum(weights[1:], weights[0]), scale),
        ]

    def expected_privacy_sum(self, horizon: int) -> Fraction | None:
        """Item 1 is in ``[1, 2^b]`` of instance j when ``2^b + d_j ≤ T``: exact sum."""
        total = Fraction(0)
        for inst in self.instances(horizon):
            levels = min(inst.cap, (horizon - inst.d).bit_length() - 1) + 1
            total += inst.weight * levels
        return total * self.sensitivity / self.scale()

    def g(self, i: int) -> float:
        """The decay function ``(i+1)^{−c}`` (float; irrational in general)."""
        return float((i + 1) ** -float(self.c)) if i >= 0 else 0.0

    def g_step(self, i: int) -> Fraction:
        """The step approximation ``g'(i) = (1−β)^j`` for ``i ∈ (b(j−1), b(j)]``, exact."""
        if i < 0:
            return Fraction(0)
        j = 0
        while self.breakpoint(j) < i:
            j += 1
        return self.rho**j

    # ------------------------------------------------------------------ plan
    def node_count(self, horizon: int) -> int:
        """``Σ_j Σ_{b ≤ log₂B_j} ⌊(T − d_j)/2^b⌋``: instance j's aligned nodes of size
        ``2^b`` end at multiples of ``2^b`` up to ``T − d_j``.

        Above :data:`NODE_BUDGET` it raises :class:`~dpref.errors.EnumerationBudgetError`
        (so a release stops before drawing any noise)."""
        n_nodes = sum(
            (horizon - i.d) >> b for i in self.instances(horizon) for b in range(i.cap + 1)
        )
        if n_nodes > NODE_BUDGET:
            raise EnumerationBudgetError(
                f"horizon={horizon}: PolynomialSum(c={fmt(self.c)}, beta={fmt(self.beta)}) has"
                f" {n_nodes} nodes > NODE_BUDGET = {NODE_BUDGET}; use online() (O(active"
                " instances) a step), a shorter stream, or a larger beta / smaller c"
            )
        return n_nodes

    def noise_scales(self, horizon: int) -> FloatArray | float:
        """Every node has the one scale λ (no per-node array: 8 bytes a node)."""
        return ceil_float(self.scale())

    def _instance_positions(self, horizon: int) -> Iterator[tuple[int, _Instance, IndexArray]]:
        """``(k, instance, positions)`` for each instance in use at the horizon, in order.

        ``positions[i]`` is the canonical index (release time, then level, then
        instance) of the instance's i-th node in its own layout order (end, then
        level: :func:`~dpref.dyadic.layout_nodes` of ``T − d_j``).  Built one instance
        at a time from a cursor per (release time, level) — the first canonical index
        of that pair's nodes, advanced past each instance's node — so only one
        instance's positions and the ``(T+1) × levels`` cursor are held; int32 when
        every index fits.  (Sorting every node at once held five int64 arrays of all
        nodes and peaked at several GB at T = 10⁶.)
        """
        insts = self.instances(horizon)
        if not insts:
            return
        n_nodes = self.node_count(horizon)  # raises beyond NODE_BUDGET
        levels = min(max(i.cap for i in insts), horizon.bit_length() - 1) + 1
        dtype = np.int32 if n_nodes <= np.iinfo(np.int32).max else np.int64
        # nodes released at r of level b: one per instance with b ≤ min(tz(r − d_j), cap_j)
        count: IndexArray = np.zeros((horizon + 1, levels), dtype)
        for inst in insts:
            for b in range(min(inst.cap, (horizon - inst.d).bit_length() - 1) + 1):
                count[inst.d + (1 << b) :: 1 << b, b] += 1
        cursor: IndexArray = count.cumsum(dtype=count.dtype).reshape(count.shape)
        cursor -= count  # exclusive: the canonical index of the first node at (r, b)
        del count
        for k, inst in enumerate(insts):
            tj = horizon - inst.d
            off = layout_offsets(tj, inst.cap)
            pos: IndexArray = np.empty(int(off[-1]), dtype)
            for b in range(min(inst.cap, tj.bit_length() - 1) + 1):
                step = 1 << b
                at = cursor[inst.d + step :: step, b]  # a view: (r, b) for r = d_j + m·2^b
                pos[off[step - 1 : tj : step] + b] = at
                at += 1
            yield k, inst, pos

    def _canonical_nodes(self, horizon: int) -> tuple[IntArray, IntArray, IntArray, IntArray]:
        """(lo, hi, instance index, release time) of every node, canonical order."""
        n = self.node_count(horizon)
        lo, hi, kk, rel = (np.zeros(n, np.int64) for _ in range(4))
        for k, inst, pos in self._instance_positions(horizon):
            lo_j, hi_j, _ = layout_nodes(horizon - inst.d, inst.cap)
            lo[pos] = lo_j
            hi[pos] = hi_j
            kk[pos] = k
            rel[pos] = hi_j + inst.d
        return lo, hi, kk, rel

    def release_times(self, horizon: int) -> IntArray:
        """Release time ``u + d_j`` of every node, canonical order."""
        return self._canonical_nodes(horizon)[3]

    def nodes(self, horizon: int) -> NodeTable:
        lo, hi, kk, _ = self._canonical_nodes(horizon)
        return NodeTable(
            lo,
            hi,
            (self.scale(),),
            np.zeros(lo.size, np.int64),
            tuple(i.weight for i in self.instances(horizon)) or _ONE,
            kk,
        )

    def recombination(self, horizon: int) -> ExactSparse:
        rows_l: list[IntArray] = []
        cols_l: list[IntArray] = []
        for _, inst, gp in self._instance_positions(horizon):
            tj = horizon - inst.d
            off = layout_offsets(tj, inst.cap)
            s = np.arange(1, tj + 1, dtype=np.int64)
            for b, rows, ends in aligned_covers(s, window_start0(s, inst.window)):
                rows_l.append(rows + inst.d)
                cols_l.append(gp[off[ends - 1] + b])
        rows_a = np.concatenate(rows_l) if rows_l else np.zeros(0, np.int64)
        cols_a = np.concatenate(cols_l) if cols_l else np.zeros(0, np.int64)
        return ExactSparse.from_triples(
            (horizon, self.node_count(horizon)),
            rows_a,
            cols_a,
            _ONE,
            np.zeros(rows_a.size, np.int64),
        )

    def target_rows(self, horizon: int) -> TargetRows:
        """Q': row t is ``(1−β)^j`` on items ``[max(1, t − b(j)), t − d_j]`` per instance."""
        insts = self.instances(horizon)
        rows_l, k_l, lo_l, hi_l = [], [], [], []
        for k, inst in enumerate(insts):
            t = np.arange(inst.d + 1, horizon + 1, dtype=np.int64)
            rows_l.append(t)
            k_l.append(np.full(t.size, k, np.int64))
            lo_l.append(np.maximum(t - inst.hi_lag, 1))
            hi_l.append(t - inst.d)
        if not insts:
            e = np.zeros(0, np.int64)
            return TargetRows(np.zeros(horizon + 1, np.int64), e, e, _ONE, e)
        rows, ks, los, his = (np.concatenate(v) for v in (rows_l, k_l, lo_l, hi_l))
        order = np.lexsort((ks, rows))
        indptr = np.zeros(horizon + 1, np.int64)
        np.cumsum(np.bincount(rows - 1, minlength=horizon), out=indptr[1:])
        table = tuple(i.weight for i in insts)
        return TargetRows(indptr, los[order], his[order], table, ks[order])

    def variance_exact(self, horizon: int | None = None) -> list[Fraction]:
        """``2λ² Σ_{active j} |cover_j(t − d_j)|`` exactly."""
        t = self._horizon_for(horizon)
        unit = 2 * self.scale() ** 2
        total = np.zeros(t, np.int64)
        for inst in self.instances(t):
            total[inst.d :] += _cover_level_counts(t - inst.d, inst.window, inst.cap + 1).sum(1)
        return [int(k) * unit for k in total]

    def _variance_at(self, t: IntArray) -> FloatArray:
        counts = np.zeros(t.size, dtype=np.float64)
        for inst in self.instances(int(t.max())):
            sel = np.flatnonzero(t > inst.d)
            s = t[sel] - inst.d
            for _, rows, _ in aligned_covers(s, window_start0(s, inst.window)):
                counts[sel[rows]] += 1
        out: FloatArray = counts * (2 * ceil_float(self.scale()) ** 2)
        return out

    def combine(self, noise: FloatArray, horizon: int) -> FloatArray:
        out = np.zeros((*noise.shape[:-1], horizon), dtype=np.float64)
        for _, inst, gp in self._instance_positions(horizon):
            tj = horizon - inst.d
            zj = noise[..., gp]
            out[..., inst.d :] += _window_combine(zj, tj, inst.window, inst.cap)
        return out

    def target(self, stream: Any) -> FloatArray:
        """Exact ``F'(t) = Σ_i g'(t−i) x_i`` (what the plan is unbiased for)."""
        x = self._stream(stream)
        T = x.size
        c = np.concatenate([[0.0], np.cumsum(x)])
        t = np.arange(1, T + 1)
        out = np.zeros(T, dtype=np.float64)
        for inst in self.instances(T):
            hi = t - inst.d
            on = hi >= 1
            lo0 = np.maximum(t - inst.hi_lag - 1, 0)
            out[on] += float(inst.weight) * (c[hi[on]] - c[lo0[on]])
        return out

    def decayed_target(self, stream: Any) -> FloatArray:
        """The true polynomial decayed sum ``F(t) = Σ_i (t−i+1)^{−c} x_i`` (float)."""
        x = self._stream(stream)
        T = x.size
        g = np.arange(1, T + 1, dtype=np.float64) ** -float(self.c)
        out: FloatArray = np.convolve(x, g)[:T]
        return out

    def online(self, rng: Any = None, noise: Any = None) -> OnlineCounter:
        return _PolynomialOnline(self, rng, noise)


class _PolynomialOnline(OnlineCounter):
    """Active instances' window states plus a delay line of the last ``d_max`` items."""

    def __init__(self, m: PolynomialSum, rng: Any, noise: Any) -> None:
        super().__init__(m, rng, noise)
        self._m = m
        self._scale = m.scale()
        self._scale_f = ceil_float(self._scale)
        self._active: list[tuple[_Instance, float, _WindowState]] = []
        self._delay: deque[float] = deque()

    def step(self, x: Any) -> float:
        v = self._admit(x)
        t = self.t
        self._activate(self._m.instances(t))
        self._delay.appendleft(v)  # _delay[k] = x_{t−k}
        # keep what the next instance to start (delay d_next > t − 1) will need
        d_max = self._m.next_delay(t)
        while len(self._delay) > d_max + 1:
            self._delay.pop()
        total = 0.0
        for (inst, w, st), zs in zip(self._active, self._released_noise(t), strict=True):
            st.push(w * self._delay[inst.d], zs)
            total += st.window(inst.window)
        return total

    def _activate(self, insts: list[_Instance]) -> None:
        """Give every instance in use a window state (instances only ever start)."""
        while len(self._active) < len(insts):
            inst = insts[len(self._active)]
            self._active.append((inst, float(inst.weight), _WindowState(inst.cap, 1 << inst.cap)))

    def _released_noise(self, t: int) -> list[list[float]]:
        """Noise of the nodes released now: instance j's nodes ending at ``t − d_j``.

        Drawn in canonical order — by level, then by instance — and returned per instance.
        """
        need = [st.levels_at(t - inst.d) for inst, _, st in self._active]
        noises: list[list[float]] = [[] for _ in self._active]
        for b in range(max(need, default=0)):
            for k, n in enumerate(need):
                if b < n:
                    noises[k].append(self._noise(self._scale_f, self._scale))
        return noises

    def state_size(self) -> int:
        """Floats held: the delay line (``d_max + 1``) plus each instance's O(W_j) nodes."""
        return len(self._delay) + sum(st.size() for _, _, st in self._active)
