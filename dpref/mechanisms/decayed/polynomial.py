"""Polynomially decayed sums, bicriteria: :class:`PolynomialSum` (docs/spec.md §2.4).

A weighted, delayed :class:`~dpref.mechanisms.decayed.window.WindowSum` instance per
step of the approximation ``g'`` of ``g(i) = (i+1)^{−c}``; the release time of a node
of instance j is its interval end plus the instance's delay ``d_j``, and nodes are in
canonical order by release time, then size, then instance.  Conventions: see
:mod:`dpref.mechanisms.decayed`.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Iterator
from fractions import Fraction
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from dpref.domains import Domain
from dpref.dyadic import (
    aligned_covers,
    bitlen,
    cover_split,
    layout_nodes,
    layout_offsets,
    window_start0,
)
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
    _exact_rows,
    _levels_for_window,
    _WindowState,
)
from dpref.mechanisms.decayed.window import _cover_level_counts, _window_combine
from dpref.noise import NoiseKind, make_rng, standard_laplace, standard_normal
from dpref.plan import ExactSparse, TargetRows
from dpref.rigorous import (
    check_beta,
    check_c,
    polynomial_breakpoint,
    polynomial_kappa_upper,
    polynomial_next_break,
    polynomial_series_tail,
    polynomial_series_upper,
    root_power_upper,
)
from dpref.types import Budget, ExactReal, Horizon
from dpref.validation import ceil_float, check_choice, check_runs, fmt

__all__ = ["ALLOCATIONS", "NODE_BUDGET", "PolynomialSum"]

ALLOCATIONS = ("decaying", "uniform")
"""PolynomialSum's noise allocations across instances (docs/spec.md §2.4)."""

NODE_BUDGET = 1 << 26
"""Most nodes a PolynomialSum plan, release or combine builds (67 M: ~0.5 GB of noise;
``dpref bench``'s largest, c = 11/10, β = 1/10 at T = 2¹⁸, has 50 M).  Beyond it
:class:`~dpref.errors.EnumerationBudgetError`; ``online()`` and ``variance_at`` are not
limited.  The count is ``node_count(T) ≈ T·(#instances)``, #instances ≈ ``c·ln T/β``."""

IndexArray = npt.NDArray[np.signedinteger[Any]]


def _log2(x: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """``⌊log₂ x⌋`` of positive int64 (below 2^53), for :func:`cover_split`."""
    return bitlen(x) - 1


def _popcount(x: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """The number of 1-bits of non-negative int64, vectorised (numpy ≥ 2's bitwise_count,
    else the SWAR reduction)."""
    if hasattr(np, "bitwise_count"):
        return np.bitwise_count(x).astype(np.int64)
    v = x.astype(np.uint64)
    v = v - ((v >> np.uint64(1)) & np.uint64(0x5555555555555555))
    v = (v & np.uint64(0x3333333333333333)) + ((v >> np.uint64(2)) & np.uint64(0x3333333333333333))
    v = (v + (v >> np.uint64(4))) & np.uint64(0x0F0F0F0F0F0F0F0F)
    return ((v * np.uint64(0x0101010101010101)) >> np.uint64(56)).astype(np.int64)


class _Instance:
    """One WindowSum instance of PolynomialSum: weight ρ^j, window W_j, delay d_j, and
    scale factor ``q_j`` (its nodes get ``Lap(λ·q_j)``)."""

    __slots__ = ("cap", "d", "factor", "hi_lag", "j", "lo_lag", "weight", "window")

    def __init__(
        self, j: int, b_prev: int, b_j: int, rho: Fraction, decaying: bool, levels: int
    ) -> None:
        self.j = j
        self.window = b_j - b_prev
        self.cap = levels - 1
        """``K_j = L_j − 1``: the instance has ``L_j`` levels
        (:meth:`PolynomialSum.instance_levels` of its window)."""
        self.d = b_prev + 1
        self.lo_lag = b_prev + 1
        self.hi_lag = b_j
        self.weight = rho**j
        self.factor: Fraction = root_power_upper(rho, j, 3) if decaying else Fraction(1)
        """``q_j``: the smallest float ``≥ (1−β)^{j/3}`` (decaying), or 1 (uniform)."""


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
    size ≤ ``2^{K_j}``, ``K_j = ⌊log₂W_j⌋``) has weight ``(1−β)^j`` and is released at
    time ``u + d_j``, when it is first needed (an instance starts at ``t = d_j + 1``).
    An item is in ``L_j = K_j + 1`` nodes of instance j.

    **Noise allocation** (docs/spec.md §2.4).  Instance j's nodes get ``Lap(λ_j)``:

    * ``allocation="decaying"`` (default): ``λ_j`` is the smallest float ``≥ λ·q_j``, with
      ``q_j`` the smallest float ``≥ (1−β)^{j/3}`` and ``λ = PΔ/ε``, ``P`` a rigorous
      rational upper bound of ``Σ_{j: W_j>0} (1−β)^{2j/3} L_j``.  Instance j costs
      ``(1−β)^j L_j Δ/λ_j ≤ (1−β)^{2j/3} L_j Δ/λ`` of privacy, so the privacy sum is
      ``≤ ε`` at every T and tends to ε up to the bound's slack and the roundings
      (:meth:`expected_privacy_sum` at a large T shows it).  The variance series
      ``Σ_j 2λ_j²·max(1, 2K_j)`` converges too, so the error is bounded in t
      (``(1−β)^{j/3}`` is the Lagrange optimum of ``Σ_j 2L_jλ_j²`` for a fixed privacy
      sum; ``proofs/decayed.py``).
    * ``allocation="uniform"`` (the patent's privacy analysis taken literally, for
      conformance checks of implementations that follow it): ``λ_j = λ = SΔ/ε`` for every
      node (a float, rounded up), ``S`` a rigorous upper bound of
      ``Σ_{j: W_j>0} (1−β)^j L_j``.  S is finite for every c > 1, but the estimate at t
      adds at least one noisy node of full size per *active* instance (``d_j < t``), and
      the number of active instances grows like ``c·ln t/β``: the variance grows
      (logarithmically) with t.

    Both series are summed in 128-bit fixed point with upward rounding to a tail below
    ``2^{−70}``, plus a closed-form tail bound (:func:`dpref.rigorous.polynomial_series_upper`).

    The plan is unbiased for ``F'`` (``R·A = Q'``); :meth:`decayed_target` gives the
    true ``F``, and the reference reports both the additive error (against F') and
    the ``(1−β)`` multiplicative factor.  ``noise="discrete"`` is refused.

    Parameters
    ----------
    c
        The decay exponent c > 1 (the weight of an item i steps old is (i+1)^−c).
    beta
        The approximation β, 0 < β < 1: the estimate is unbiased for F' with (1−β)F ≤ F' ≤ F.
    allocation
        The noise split across instances: "decaying" (default; instance j gets Lap(λ·(1−β)^(j/3)),
        the error is bounded in t) or "uniform" (one Lap(λ) for every node, the patent's
        literal analysis; the error grows like log t).

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
        c: ExactReal,
        beta: ExactReal,
        epsilon: Budget | None = None,
        rho: Budget | None = None,
        allocation: Literal["decaying", "uniform"] = "decaying",
        horizon: Horizon | None = None,
        domain: Domain | None = None,
        noise: NoiseKind | None = None,
    ) -> None:
        super().__init__(epsilon=epsilon, rho=rho, horizon=horizon, domain=domain, noise=noise)
        self.c: Fraction = check_c(c)
        self.beta: Fraction = check_beta(beta)
        self.allocation: str = check_choice("allocation", allocation, ALLOCATIONS)
        if self.noise in ("discrete", "discrete_gaussian"):
            raise ParameterError(
                f"noise={self.noise!r}: PolynomialSum nodes hold weighted (non-integer) sums"
            )
        self.ratio: Fraction = 1 - self.beta
        """``1 − β`` (the weight ratio of successive instances)."""
        self._b: dict[int, int] = {0: 0}
        self._instances: list[_Instance] = []
        self._next_j = 0
        self.series_upper: Fraction = polynomial_series_upper(
            self.c, self.beta, self.allocation, levels=type(self).instance_levels
        )
        """A rational upper bound on the allocation's privacy series (S or P)."""
        self._lambda_exact: Fraction = self.series_upper * self.sensitivity / self.design_epsilon
        """λ before rounding: the series bound times Δ/ε."""
        self._lambda: Fraction = Fraction(ceil_float(self._lambda_exact))
        """λ rounded up to a float: the scale of every node (uniform) or of instance 0."""
        self._instance_scales: dict[int, Fraction] = {}

    def extra_params(self) -> dict[str, Any]:
        return {"c": self.c, "beta": self.beta, "allocation": self.allocation}

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
        decaying = self.allocation == "decaying"
        inst = _Instance(j, bp, bj, self.ratio, decaying, int(self.instance_levels(bj - bp)))
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
        """``Σ_{j: W_j>0, d_j < T} (1−β)^j L_j/q_j`` exactly (the part in use at T; ``q_j = 1``
        for the uniform allocation)."""
        t = self._horizon_for(horizon)
        return sum((self._cost(i) for i in self.instances(t)), Fraction(0))

    @staticmethod
    def instance_levels(window: Any, ops: Any = EXACT) -> Any:
        """``L_j = ⌊log₂W_j⌋ + 1``: the levels of a WindowSum instance of window ``W_j``
        (:func:`~dpref.mechanisms.decayed.common._levels_for_window`).  The one source of
        the instances' level counts (nodes, covers, online states, costs, declaration);
        ``proofs/decayed.py`` proves it for every ``W_j ≤ 2⁶²`` with z3."""
        return _levels_for_window(window, ops) + 1

    @staticmethod
    def instance_membership(inst: _Instance) -> Fraction:
        """``(1−β)^j L_j``: the worst item's total weight in instance j's nodes, with
        ``L_j = K_j + 1`` from :func:`~dpref.mechanisms.decayed.common._levels_for_window`
        (the one level count of the WindowSum instances)."""
        return inst.weight * (inst.cap + 1)

    @classmethod
    def _cost(cls, inst: _Instance) -> Fraction:
        """``(1−β)^j L_j / q_j``: instance j's privacy cost in units of ``Δ/λ``."""
        return cls.instance_membership(inst) / inst.factor

    def scale(self) -> Fraction:
        """λ rounded up to a float: the scale of every node (uniform: ``≥ SΔ/ε``) or of
        instance 0 (decaying: ``≥ PΔ/ε``, P the series bound)."""
        return self._lambda

    def instance_scale(self, inst: _Instance) -> Fraction:
        """``λ_j``, the exact Laplace scale of instance j's nodes: λ (uniform), or the
        smallest float ``≥ (PΔ/ε)·q_j`` (decaying).  Floats keep the plan's exact checks
        cheap; rounding up only adds noise."""
        if self.allocation == "uniform":
            return self._lambda
        got = self._instance_scales.get(inst.j)
        if got is None:
            got = Fraction(ceil_float(self._lambda_exact * inst.factor))
            self._instance_scales[inst.j] = got
        return got

    def budget_terms(self, ops: Any = EXACT, **s: Any) -> list[BudgetTerm]:
        """Instance j: the worst item is in ``L_j = ⌊log₂W_j⌋ + 1`` nodes of weight
        ``(1−β)^j``, each of scale ``λ·q_j``.

        ``membership`` is the worst item's total weight in the instance's nodes,
        ``(1−β)^j L_j``; instances are those in use at the horizon (symbol ``horizon``;
        all with ``b(j) < 2^{20}`` when there is none).  ``λ = S·Δ/ε`` (symbol ``S``, or
        the rational bound actually used: S for the uniform allocation, P for the
        decaying one).  A last term ``instances>T`` of scale λ declares the rest,
        ``S − Σ_{used} (1−β)^j L_j/q_j`` (≥ the rest of the series), so the declarations
        add up to ε.
        """
        eps = s.get("epsilon", self.design_epsilon)
        delta = s.get("sensitivity", self.sensitivity)
        T = s.get("horizon", self.horizon)
        insts = self.instances(int(T) if T is not None else 1 << 20)
        if "S" in s:  # symbolic: the calibration before rounding, λ_j = λ·q_j
            S = s["S"]
            lam = S * delta / eps
            scales = [lam * i.factor for i in insts]
        else:  # the scales actually used (rounded up)
            exact = self._lambda_exact if self.allocation == "decaying" else self._lambda
            S = exact * self.design_epsilon / self.sensitivity
            lam = S * delta / eps
            scales = [self.instance_scale(i) * delta / self.sensitivity for i in insts]
        members = [self.instance_membership(i) for i in insts]
        used = sum((m * lam / b for m, b in zip(members, scales, strict=True)), Fraction(0))
        return [
            *(
                BudgetTerm(f"instance_{i.j}", m, b, i.weight)
                for i, m, b in zip(insts, members, scales, strict=True)
            ),
            BudgetTerm("instances>T", S - used, lam),
        ]

    def expected_l1_sum(self, horizon: int) -> Fraction | None:
        """Item 1 is in ``[1, 2^b]`` of instance j when ``2^b + d_j ≤ T``: exact sum of
        ``(1−β)^j·Δ/λ_j`` over those nodes."""
        total = Fraction(0)
        for inst in self.instances(horizon):
            levels = min(inst.cap, (horizon - inst.d).bit_length() - 1) + 1
            total += inst.weight * levels / self.instance_scale(inst)
        return total * self.sensitivity

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
        return self.ratio**j

    # ------------------------------------------------------------------ plan
    def node_count(self, horizon: int) -> int:
        """``Σ_j Σ_{b ≤ K_j} ⌊(T − d_j)/2^b⌋``: instance j's aligned nodes of size
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
        """Uniform: the one scale λ (no per-node array: 8 bytes a node); decaying: each
        node's ``λ_j`` rounded up, canonical order (:meth:`node_noise` does not build it)."""
        if self.allocation == "uniform":
            return ceil_float(self.scale())
        out: FloatArray = np.empty(self.node_count(horizon), np.float64)
        for _, inst, pos in self._instance_positions(horizon):
            out[pos] = ceil_float(self.instance_scale(inst))
        return out

    def node_noise(self, horizon: int, rng: Any = None, runs: int | None = None) -> FloatArray:
        """Node noise in canonical order, as :meth:`Mechanism.node_noise` (the same draws).

        The decaying allocation scales each instance's nodes in place instead of
        building a per-node scale array (which would double a release's peak memory).
        """
        if self.allocation == "uniform" and self.rho is None:
            return super().node_noise(horizon, rng, runs)
        t = self._horizon_for(horizon)
        gen = make_rng(rng)
        size = self.node_count(t)  # raises beyond NODE_BUDGET before any draw
        shape: tuple[int, ...] = (size,) if runs is None else (check_runs("runs", runs), size)
        if len(shape) == 2 and shape[0] * size >= 2**62:
            raise ParameterError(f"runs={runs}: {shape[0]} × {size} node draws is too many")
        scales = [
            self.noise_multiplier(self.instance_scale(i), i.weight) for i in self.instances(t)
        ]
        z = standard_laplace(gen, shape) if self.rho is None else standard_normal(gen, shape)
        for k, _, pos in self._instance_positions(t):
            z[..., pos] *= scales[k]
        return z

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
        insts = self.instances(horizon)
        scale_table: tuple[Fraction, ...]
        if self.allocation == "uniform":
            scale_table, scale_idx = (self.scale(),), np.zeros(lo.size, np.int64)
        else:
            scale_table = tuple(self.instance_scale(i) for i in insts) or (self.scale(),)
            scale_idx = kk
        return NodeTable(lo, hi, scale_table, scale_idx, tuple(i.weight for i in insts) or _ONE, kk)

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
        """``Σ_{active j} 2λ_j² |cover_j(t − d_j)|`` exactly."""
        t = self._horizon_for(horizon)
        insts = self.instances(t)
        counts = np.zeros((t, max(len(insts), 1)), np.int64)
        for k, inst in enumerate(insts):
            sizes = _cover_level_counts(t - inst.d, inst.window, inst.cap + 1).sum(1)
            counts[inst.d :, k] = sizes
        if self.allocation == "uniform" and self.rho is None:
            unit = self.node_variance(self.scale())
            return [int(n) * unit for n in counts.sum(1)]
        units = [self.node_variance(self.instance_scale(i), i.weight) for i in insts] or [
            Fraction(0)
        ]
        return _exact_rows(counts, units)

    def _variance_at(self, t: IntArray) -> FloatArray:
        out = np.zeros(t.size, dtype=np.float64)
        for inst in self.instances(int(t.max())):
            sel = np.flatnonzero(t > inst.d)
            s = t[sel] - inst.d
            # |cover of [a0+1, s]| = popcount(ℓ_s) + popcount(ℓ_p) (cover_split, the split
            # aligned_covers yields one node per 1-bit of): no per-level row lists
            _, suffix, prefix = cover_split(window_start0(s, inst.window), s, _log2)
            counts = (_popcount(suffix) + _popcount(prefix)).astype(np.float64)
            out[sel] += counts * self.node_variance_float(self.instance_scale(inst), inst.weight)
        return out

    def variance_bound(self) -> Fraction:
        """An upper bound on ``sup_t Var(t)`` (decaying allocation), exact.

        Instance j adds ``v_j|cover_j| ≤ v_j·max(1, 2K_j)`` with ``v_j`` its node variance
        (the cover bound of docs/spec.md §2.1).  The instances with ``d_j < 2^{16}`` are
        summed exactly; for the rest (``j ≥ J``) ``λ_j ≤ (1+2^{−50})(PΔ/ε)(1−β)^{j/3}`` (two
        roundings up to a float, each within ``2^{−52}``) and ``K_j ≤ κj``.  Laplace:
        ``v_j = 2λ_j²``, so they add at most ``2(PΔ/ε)²(1+2^{−50})² Σ_{j≥J} y^j (2κj + 1)``
        with a rational ``y ≥ (1−β)^{2/3}`` (``y³ ≥ (1−β)²`` checked exactly).  Gaussian:
        ``v_j = (1−β)^jΔλ_j/(2ρ)``, at most ``(Δ·PΔ/(2ρ))(1+2^{−50}) Σ_{j≥J} y^j (2κj+1)``
        with ``y ≥ (1−β)^{4/3}`` (``y³ ≥ (1−β)⁴``).  Either way a closed form;
        ``proofs/decayed.py`` proves the Laplace series converges.  The uniform
        allocation has no bound (its variance grows like log t): ``ParameterError``.
        """
        if self.allocation == "uniform":
            raise ParameterError(
                "allocation='uniform': the variance grows like log t and has no bound"
            )
        insts = self.instances(1 << 16)
        head = sum(
            (
                self.node_variance(self.instance_scale(i), i.weight) * max(1, 2 * i.cap)
                for i in insts
            ),
            Fraction(0),
        )
        J = self._instances[-1].j  # the first instance not in use at T = 2^16
        power = 2 if self.rho is None else 4
        target = self.ratio**power
        y = Fraction(float(target) ** (1 / 3))
        while y**3 < target:
            y = Fraction(math.nextafter(float(y), math.inf))
        kappa: Fraction = polynomial_kappa_upper(self.ratio, self.c)
        tail: Fraction = polynomial_series_tail(y**J, 2 * kappa, J, y)
        if self.rho is None:
            slack = (1 + Fraction(1, 2**50)) ** 2
            return head + 2 * self._lambda_exact**2 * slack * tail
        slack = 1 + Fraction(1, 2**50)
        return head + self.sensitivity * self._lambda_exact / (2 * self.rho) * slack * tail

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
        self._active: list[tuple[_Instance, float, _WindowState]] = []
        self._scales: list[tuple[float, Fraction, Fraction]] = []
        """Each active instance's ``(λ_j rounded up, λ_j, weight (1−β)^j)``."""
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
            self._active.append((inst, float(inst.weight), _WindowState(inst.cap, inst.window)))
            scale = self._m.instance_scale(inst)
            self._scales.append((ceil_float(scale), scale, inst.weight))

    def _released_noise(self, t: int) -> list[list[float]]:
        """Noise of the nodes released now: instance j's nodes ending at ``t − d_j``.

        Drawn in canonical order — by level, then by instance — and returned per instance.
        """
        need = [st.levels_at(t - inst.d) for inst, _, st in self._active]
        noises: list[list[float]] = [[] for _ in self._active]
        for b in range(max(need, default=0)):
            for k, n in enumerate(need):
                if b < n:
                    noises[k].append(self._noise(*self._scales[k]))
        return noises

    def state_size(self) -> int:
        """Floats held: the delay line (``d_max + 1``) plus each instance's O(W_j) nodes."""
        return len(self._delay) + sum(st.size() for _, _, st in self._active)
