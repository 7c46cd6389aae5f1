"""Sliding-window sums: :class:`WindowSum` (one window) and :class:`AllWindowSum`
(every window at once, ζ-weighted levels), docs/spec.md §2.1–§2.2.

Both answer the window ``[max(1, t−W+1), t]`` by its canonical cover by maximal
aligned nodes (:func:`dpref.dyadic.aligned_covers`); the batch path sums each cover
*slot* (:func:`_window_slots`) over all t at once, the online counters keep the
nodes of sizes ``≤ 2^K`` (``K = ⌊log₂W⌋``) ending in the last W steps.
PolynomialSum reuses the same slots for each of its WindowSum instances.
Conventions: see :mod:`dpref.mechanisms.decayed`.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt

from dpref.caching import BytesCache
from dpref.domains import Domain
from dpref.dyadic import aligned_covers, layout_nodes, layout_offsets, window_start0
from dpref.errors import DprefTypeError, ParameterError
from dpref.lower_bounds import (
    Decay,
    prefix_decay,
    window_decay,
)
from dpref.mechanisms.base import EXACT, BudgetTerm, Example, NodeTable, OnlineCounter
from dpref.mechanisms.decayed.common import (
    _ONE,
    FloatArray,
    IntArray,
    _check_window,
    _Decayed,
    _exact_rows,
    _levels_for_window,
    _window_sums,
    _WindowState,
)
from dpref.noise import NoiseKind, make_rng
from dpref.plan import ExactSparse, TargetRows
from dpref.rigorous import check_delta, power_upper, zeta_bounds
from dpref.types import Budget, Count, ExactReal, Horizon
from dpref.validation import ceil_float, check_runs, fmt

__all__ = ["AllWindowSum", "WindowSum"]


# ---------------------------------------------------------------- cover slots
_Slots = tuple[npt.NDArray[np.signedinteger[Any]], ...]
_SlotKey = tuple[int, int | None, int | None]

_SLOT_CACHE_BYTES = 32 << 20
"""Bytes of cover slots kept for older ``(horizon, window, cap)`` keys; the newest
entry is kept whatever its size (see :class:`_SlotCache`)."""


def _build_window_slots(horizon: int, window: int | None, cap: int | None) -> _Slots:
    """Canonical node index of every cover slot, one length-T array per slot.

    Slot k of row t is the k-th node :func:`~dpref.dyadic.aligned_covers` yields
    for t, or ``n_nodes`` (a zero pad) when t's cover is shorter.  int32 when the
    indices fit (half the memory of int64; the gather reads the same nodes).
    """
    off = layout_offsets(horizon, cap)
    n_nodes = int(off[-1])
    dtype = np.int32 if n_nodes <= np.iinfo(np.int32).max else np.int64
    t = np.arange(1, horizon + 1, dtype=np.int64)
    slots: list[npt.NDArray[np.signedinteger[Any]]] = []
    for b, rows, ends in aligned_covers(t, window_start0(t, window)):
        idx: npt.NDArray[np.signedinteger[Any]] = np.full(horizon, n_nodes, dtype=dtype)
        idx[rows] = off[ends - 1] + b
        idx.setflags(write=False)
        slots.append(idx)
    return tuple(slots)


def _build_slots_of(key: _SlotKey) -> _Slots:
    return _build_window_slots(*key)


class _SlotCache(BytesCache[_SlotKey, _Slots]):
    """Cover slots by ``(horizon, window, cap)``, bounded by bytes, not entries.

    The most recent entry is always kept, so repeated releases at one horizon reuse
    it; older entries are dropped, least recently used first, while the total exceeds
    ``budget``.  At most ``budget`` plus one entry is held: about ``4·|slots|·T``
    bytes, 80 MB at T = 10⁶ and W = 1000 (an lru_cache of four stacked int64 entries
    held up to 640 MB there).
    """

    def __init__(self, budget: int) -> None:
        super().__init__(_build_slots_of, budget)


_WINDOW_SLOTS = _SlotCache(_SLOT_CACHE_BYTES)


def _window_slots(horizon: int, window: int | None, cap: int | None) -> _Slots:
    """The cover slots of ``(horizon, window, cap)`` (cached in :data:`_WINDOW_SLOTS`)."""
    return _WINDOW_SLOTS.get((horizon, window, cap))


def _window_combine(z: FloatArray, horizon: int, window: int | None, cap: int | None) -> FloatArray:
    """Noise part of the window estimates: sum of the cover's node noise, every t."""
    slots = _window_slots(horizon, window, cap)
    zpad = np.concatenate([z, np.zeros((*z.shape[:-1], 1))], axis=-1)
    out = np.zeros((*z.shape[:-1], horizon), dtype=np.float64)
    for idx in slots:
        out += np.take(zpad, idx, axis=-1)
    return out


def _cover_level_counts(horizon: int, window: int | None, levels: int) -> IntArray:
    """``counts[t−1, b]``: how many cover nodes of size ``2^b`` the estimate at t uses."""
    t = np.arange(1, horizon + 1, dtype=np.int64)
    counts = np.zeros((horizon, levels), dtype=np.int64)
    for b, rows, _ in aligned_covers(t, window_start0(t, window)):
        counts[rows, b] += 1
    return counts


def _cover_sparse(horizon: int, window: int | None, off: IntArray, n_nodes: int) -> ExactSparse:
    t = np.arange(1, horizon + 1, dtype=np.int64)
    rows_l: list[IntArray] = []
    cols_l: list[IntArray] = []
    for b, rows, ends in aligned_covers(t, window_start0(t, window)):
        rows_l.append(rows)
        cols_l.append(off[ends - 1] + b)
    rows_a = np.concatenate(rows_l) if rows_l else np.zeros(0, np.int64)
    cols_a = np.concatenate(cols_l) if cols_l else np.zeros(0, np.int64)
    return ExactSparse.from_triples(
        (horizon, n_nodes), rows_a, cols_a, _ONE, np.zeros(rows_a.size, np.int64)
    )


# --------------------------------------------------------------- online state
class _PrefixState:
    """The latest left node of every level (true and noisy): O(log t) memory."""

    __slots__ = ("noisy", "s", "true")

    def __init__(self) -> None:
        self.s = 0
        self.true: list[float] = []
        self.noisy: list[float] = []

    def push(self, x: float, noises: Sequence[float]) -> None:
        """Consume one item and the noise of every node ending now (levels 0..tz)."""
        self.s += 1
        top = len(noises) - 1
        while len(self.true) <= top:
            self.true.append(0.0)
            self.noisy.append(0.0)
        v = x
        for b in range(1, top + 1):
            v = self.true[b - 1] + v  # left child (latest left node) + right child
        self.true[top] = v
        self.noisy[top] = v + noises[top]

    def prefix(self) -> float:
        """Sum of the noisy left nodes of the binary decomposition of s."""
        s = self.s
        return sum(self.noisy[b] for b in range(s.bit_length()) if s >> b & 1)

    def size(self) -> int:
        """Stored floats."""
        return len(self.true) + len(self.noisy)


# ==================================================================== WindowSum
class WindowSum(_Decayed):
    """Sliding-window sums ``F(t) = Σ_{i=t−W+1}^{t} x_i`` (``g(i) = 1`` for ``i < W``).

    Levels: the node sizes a window cover can use, ``1, 2, …, 2^K`` with
    ``K = ⌊log₂W⌋`` (a node of size ``2^{K+1} > W`` never fits in a window); the nodes
    are every aligned node of size ``≤ 2^K``.  Each item is in exactly ``L = K + 1``
    nodes, so every node gets ``Lap(LΔ/ε)`` and the budget is ``L · ε/L = ε`` (reached
    once ``T ≥ 2^K``).  The window ``[max(1, t−W+1), t]`` is answered by its canonical
    cover by maximal aligned nodes (docs/spec.md §2.1: right nodes ending a size-``2^K``
    block, possibly one whole block, then left nodes starting the next) — at most
    ``max(1, 2K)`` nodes (``proofs/decayed.py``), so the variance
    ``2·|cover(t)|·(LΔ/ε)²`` is periodic in t with period ``2^K`` from t = W on and
    never grows.  Online memory is O(W): only nodes ending in the last W steps are kept.

    For W a power of two this is the patent's "each x_j contributes to exactly
    log W + 1 variables" (Theorem 3).  Until 0.1 dpref used ``⌈log₂W⌉ + 1`` levels; for
    W not a power of two the top one was never used by a cover and wasted
    ``1/(⌈log₂W⌉+1)`` of the budget (CHANGELOG.md).

    Parameters
    ----------
    window
        The window size W ≥ 1 (items t−W+1 … t are summed).

    References
    ----------
    .. [1] Bolot et al., ICDT 2013, WindowSum (Table 1, Theorem 3).
    """

    name = "window"
    examples = (
        Example({"window": 3}, horizons=(12,)),
        Example({"window": 1}, horizons=()),
        Example({"window": 8}, horizons=()),
        Example({"window": 3}, horizons=(12,), privacy="zcdp"),
    )

    def __init__(
        self,
        *,
        window: Count,
        epsilon: Budget | None = None,
        rho: Budget | None = None,
        horizon: Horizon | None = None,
        domain: Domain | None = None,
        noise: NoiseKind | None = None,
    ) -> None:
        super().__init__(epsilon=epsilon, rho=rho, horizon=horizon, domain=domain, noise=noise)
        self.window: int = _check_window("window", window)
        self.cap: int = int(self.levels()) - 1
        """``K = L − 1``: the top level index (sizes ``2^0 … 2^K``); from :meth:`levels`."""
        self.block: int = 1 << self.cap
        """``2^K ≤ W``, the largest node size (the period of the variance from t = W on)."""

    def extra_params(self) -> dict[str, Any]:
        return {"window": self.window}

    def decay(self) -> Decay:
        """``g(i) = 1`` for ``i < W``, else 0."""
        return window_decay(self.window)

    def levels(self, ops: Any = EXACT, **s: Any) -> Any:
        """``L = ⌊log₂W⌋ + 1``: the number of levels released (sizes ``2^0 … 2^{L−1}``),
        hence of nodes containing each item.

        The one source of the level count: :attr:`cap`, the nodes, the online counter,
        :meth:`scale` and :meth:`budget_terms` all read it.  ``ops`` and the symbol
        ``window`` let the proofs evaluate it with sympy or z3 for every W.
        """
        return _levels_for_window(s.get("window", self.window), ops) + 1

    def scale(self, ops: Any = EXACT, **s: Any) -> Any:
        """The per-node Laplace scale ``LΔ/ε`` (``L`` from :meth:`levels`): what every
        release path draws with and what :meth:`budget_terms` declares."""
        eps = s.get("epsilon", self.design_epsilon)
        delta = s.get("sensitivity", self.sensitivity)
        return self.levels(ops, **s) * delta / eps

    def budget_terms(self, ops: Any = EXACT, **s: Any) -> list[BudgetTerm]:
        """Every item is in one node per level, :meth:`levels` of them, each of
        :meth:`scale` (symbols ``window``, ``epsilon``, ``sensitivity``)."""
        return [BudgetTerm("level", self.levels(ops, **s), self.scale(ops, **s))]

    def expected_l1_sum(self, horizon: int) -> Fraction | None:
        """Item 1 is in the nodes ``[1, 2^b]`` released by T: ``min(⌊log₂T⌋, K) + 1``."""
        released = min(horizon.bit_length() - 1, self.cap) + 1
        total: Fraction = released * self.sensitivity / self.scale()
        return total

    def g(self, i: int) -> Fraction:
        """The decay function: 1 for ``i < W``, else 0."""
        return Fraction(1 if 0 <= i < self.window else 0)

    def nodes(self, horizon: int) -> NodeTable:
        lo, hi, _ = layout_nodes(horizon, self.cap)
        return NodeTable(lo, hi, (self.scale(),), np.zeros(lo.size, np.int64))

    def recombination(self, horizon: int) -> ExactSparse:
        off = layout_offsets(horizon, self.cap)
        return _cover_sparse(horizon, self.window, off, int(off[-1]))

    def target_rows(self, horizon: int) -> TargetRows:
        t = np.arange(1, horizon + 1, dtype=np.int64)
        return TargetRows(
            np.arange(horizon + 1, dtype=np.int64),
            np.maximum(t - self.window + 1, 1),
            t,
            _ONE,
            np.zeros(horizon, np.int64),
        )

    def cover_sizes(self, horizon: int) -> IntArray:
        """``|cover(t)|`` for t = 1..horizon."""
        counts = _cover_level_counts(horizon, self.window, self.cap + 1)
        out: IntArray = counts.sum(axis=1)
        return out

    def variance_exact(self, horizon: int | None = None) -> list[Fraction]:
        """``Var(t) = 2·|cover(t)|·(LΔ/ε)²`` exactly."""
        t = self._horizon_for(horizon)
        unit = self.node_variance(self.scale())
        return [int(k) * unit for k in self.cover_sizes(t)]

    def _variance_at(self, t: IntArray) -> FloatArray:
        counts = np.zeros(t.size, dtype=np.float64)
        for _, rows, _ in aligned_covers(t, window_start0(t, self.window)):
            counts[rows] += 1
        out: FloatArray = counts * (self.node_variance_float(self.scale()))
        return out

    def combine(self, noise: FloatArray, horizon: int) -> FloatArray:
        return _window_combine(noise, horizon, self.window, self.cap)

    def target(self, stream: Any) -> FloatArray:
        """Exact window sums ``Σ_{i=max(1,t−W+1)}^{t} x_i``."""
        return _window_sums(self._stream(stream), self.window)

    def _target_checked(self, x: FloatArray) -> FloatArray:
        return _window_sums(x, self.window)

    def node_count(self, horizon: int) -> int:
        return int(layout_offsets(horizon, self.cap)[-1])

    def noise_scales(self, horizon: int) -> FloatArray | float:
        return ceil_float(self.scale())

    def online(self, rng: Any = None, noise: Any = None) -> OnlineCounter:
        return _WindowSumOnline(self, rng, noise)


class _WindowSumOnline(OnlineCounter):
    def __init__(self, m: WindowSum, rng: Any, noise: Any) -> None:
        super().__init__(m, rng, noise)
        self._W = m.window
        self._scale = m.scale()
        self._scale_f = ceil_float(self._scale)
        self._state = _WindowState(m.cap, m.window)

    def step(self, x: Any) -> float:
        v = self._admit(x)
        n = self._state.levels_at(self.t)
        self._state.push(v, [self._noise(self._scale_f, self._scale) for _ in range(n)])
        return self._state.window(self._W)

    def state_size(self) -> int:
        """Floats held (O(W))."""
        return self._state.size()


# ================================================================= AllWindowSum
class AllWindowSum(_Decayed):
    """Every window size at once from one growing tree, ζ-weighted levels.

    Nodes: every aligned node of every level of one growing tree.  Level k
    (k ≥ 1, leaves at level 1) gets ``ε_k = ε/(ζ(δ)·k^δ)``, i.e. scale
    ``ζ(δ) k^δ Δ/ε``.  An item lies in exactly one node per level, so the privacy sum
    at T is ``Σ_{k ≤ ⌊log₂T⌋+1} ε_k < ε`` and tends to ``Σ_{k≥1} ε_k = ε``
    (the ζ-weighted level budget, proven for symbolic δ > 1 in ``proofs/decayed.py``).
    At T = 8 with δ = 3/2 it is ``(1 + 2^{−3/2} + 3^{−3/2} + 4^{−3/2})/ζ(3/2) ≈ 0.64ε``.

    The estimate of window W at t uses the canonical cover of
    ``[max(1, t−W+1), t]`` (as :class:`WindowSum`: at most ``max(1, 2K)`` nodes, all of
    size ≤ ``2^K``, ``K = ⌊log₂W⌋``, so of level ≤ K + 1 and scale ``O(log^δ W)``); the
    error does not grow with t.  ``window=None`` reports the running sum (the prefix
    ``[1, t]``, left nodes only; its variance grows as ``O(log^{2δ+1} t)``).

    **WindowSum's unused-level correction, here.**  What applies: a window W's cover
    never uses a level above K + 1, so the online counter keeps only levels ``≤ K + 1``
    of the largest served window, for its last W steps (it kept one more level and
    ``2^⌈log₂W⌉`` steps).  What does not: the budget.  Every level is released because
    one tree answers every window and the running sum (``release(windows=…)``,
    ``online(windows=…)``), and level k's scale ``ζ(δ)k^δΔ/ε`` is fixed by its own
    ``ε_k`` — not by how many levels a window uses — so dropping the levels a reported
    window does not use would lower no used level's noise; the reported window's
    outputs and variance were never charged for them.  (Spending their ``ε_k`` on the
    used levels instead would be a WindowSum with a non-uniform level split, a different
    mechanism that could not serve other windows.)

    **How the contract maps.**  The single-output views — :meth:`release` without
    ``windows``, :meth:`release_many`, :meth:`online`'s ``step``, :meth:`plan`,
    :meth:`target`, :meth:`variance` — report the window ``window`` given to the
    constructor (default: the running sum).  ``release(..., windows=[W₁, …, W_m])``
    answers several windows from the *same* noisy tree, returning shape ``(T, m)``
    (``release_many``: ``(runs, T, m)``); the online counter answers any served
    window with :meth:`_AllWindowOnline.query`.  The node set and canonical noise
    order do not depend on the windows reported.

    **Exact scales.**  ζ(δ) and ``k^δ`` are irrational in general; node scales are
    rational upper bounds (floats, rounded up) of ``ζ(δ)k^δΔ/ε`` from
    :func:`zeta_bounds` and a 60-digit evaluation of ``k^δ`` widened by a relative
    1e−40, so the mechanism is at least as private as the symbolic budget.  The
    paper's exact indexing of ε_k could not be consulted; this convention (leaves at
    level 1, ``ε_k ∝ k^{−δ}``) is the patent's level numbering (docs/spec.md §2.2).

    Parameters
    ----------
    delta
        The level exponent δ > 1 of the ζ-weighted budget (default 3/2).
    window
        The window W reported by the single-output views (default: the running sum).

    References
    ----------
    .. [1] Bolot et al., ICDT 2013, AllWindowSum (Table 2, Theorem 4).
    """

    name = "allwindow"
    examples = (
        Example({"delta": Fraction(3, 2)}, horizons=(10,)),
        Example({"delta": 2, "window": 5}, horizons=()),
        Example({"delta": Fraction(3, 2), "window": 6}, horizons=()),
        Example({"delta": 2}, horizons=()),
    )

    def __init__(
        self,
        *,
        epsilon: Budget | None = None,
        rho: Budget | None = None,
        delta: ExactReal = Fraction(3, 2),
        window: Count | None = None,
        horizon: Horizon | None = None,
        domain: Domain | None = None,
        noise: NoiseKind | None = None,
    ) -> None:
        super().__init__(epsilon=epsilon, rho=rho, horizon=horizon, domain=domain, noise=noise)
        self.delta: Fraction = check_delta(delta)
        self.window: int | None = None if window is None else _check_window("window", window)
        self._zeta_up = zeta_bounds(self.delta)[1]
        self._scales: list[Fraction] = []

    def extra_params(self) -> dict[str, Any]:
        out: dict[str, Any] = {"delta": self.delta}
        if self.window is not None:
            out["window"] = self.window
        return out

    def decay(self) -> Decay:
        """``g(i) = 1`` for ``i < W`` (every ``i`` for the running sum)."""
        return prefix_decay() if self.window is None else window_decay(self.window)

    def levels_at(self, horizon: Any, ops: Any = EXACT) -> Any:
        """``L = ⌊log₂T⌋ + 1``: the levels of the tree released by T (item 1 is in one
        node of each).  The one source of the level count: :meth:`nodes`, the variance,
        :meth:`expected_l1_sum` and :meth:`budget_terms` read it; ``proofs/decayed.py``
        proves ``2^{L−1} ≤ T < 2^L`` with z3 for every ``1 ≤ T ≤ 2⁶²``."""
        return ops.floor_log2(horizon) + 1

    def level_scale_formula(self, k: Any, ops: Any = EXACT, **s: Any) -> Any:
        """``ζ(δ)·k^δ·Δ/ε``, the scale of level k ≥ 1, as one formula over ``ops``.

        With :data:`EXACT` ζ(δ) and ``k^δ`` are the rational upper bounds of
        :func:`~dpref.rigorous.zeta_bounds` and :func:`~dpref.rigorous.power_upper`
        (so the value is ≥ the exact scale); with the proofs' sympy namespace (it has
        ``zeta``) they are ``ζ(δ)`` and ``k^δ`` for symbolic δ, ε, Δ and k.  Every path's
        scale (:meth:`level_scale`) and the declared ε_k (:meth:`level_epsilon`) call it.
        """
        eps = s.get("epsilon", self.design_epsilon)
        delta_s = s.get("sensitivity", self.sensitivity)
        delta = s.get("delta", self.delta)
        zeta = getattr(ops, "zeta", None)
        if zeta is not None:  # sympy: ζ(δ) and k^δ themselves
            zeta_v, power = zeta(delta), k**delta
        else:  # their rational upper bounds
            zeta_v, power = self._zeta_up, power_upper(int(k), delta)
        return zeta_v * power * delta_s / eps

    def level_epsilon(self, k: Any, ops: Any = EXACT, **s: Any) -> Any:
        """``ε_k = Δ/scale_k``: ``ε/(ζ(δ)·k^δ)`` for level k ≥ 1 with the sympy namespace;
        with :data:`EXACT` the exact budget of the rational scale actually used,
        ``Δ/scale_k ≤ ε/(ζ(δ)k^δ)``."""
        if getattr(ops, "zeta", None) is not None:
            return s.get("sensitivity", self.sensitivity) / self.level_scale_formula(k, ops, **s)
        eps = s.get("epsilon", self.design_epsilon)
        return self.sensitivity / self.level_scale(int(k)) * eps / self.design_epsilon

    def level_scale(self, k: int) -> Fraction:
        """The rational Laplace scale of level k ≥ 1: :meth:`level_scale_formula` rounded
        up to a float (≥ ``ζ(δ)k^δΔ/ε``)."""
        while len(self._scales) < k:
            exact_up = self.level_scale_formula(len(self._scales) + 1)
            self._scales.append(Fraction(ceil_float(exact_up)))
        return self._scales[k - 1]

    def budget_terms(self, ops: Any = EXACT, **s: Any) -> list[BudgetTerm]:
        """One node at each level ``k = 1..L``, level k of scale ``ζ(δ)k^δΔ/ε``.

        ``L`` is ``⌊log₂T⌋ + 1`` for the horizon (symbol ``levels`` overrides it; 64
        levels when there is no horizon).  A last term ``levels>L`` declares the rest
        of ε for the levels above L: one node per level, ``Σ_{k>L} ε_k`` in all, which is
        at most ``ε − Σ_{k≤L} ε_k`` (equal in exact arithmetic; the rational scales
        actually used only spend less), so the declarations add up to ε.
        """
        delta_s = s.get("sensitivity", self.sensitivity)
        T = s.get("horizon", self.horizon)
        L = s.get("levels", 64 if T is None else self.levels_at(int(T)))
        eps = s.get("epsilon", self.design_epsilon)
        level_eps = [self.level_epsilon(k, ops, **s) for k in range(1, L + 1)]
        rest = eps - sum(level_eps[1:], level_eps[0])
        return [
            *(BudgetTerm(f"level_{k}", 1, delta_s / e) for k, e in enumerate(level_eps, 1)),
            BudgetTerm("levels>L", 1, delta_s / rest),
        ]

    def expected_l1_sum(self, horizon: int) -> Fraction | None:
        """Item 1 is in ``[1, 2^{k−1}]`` for every level k ≤ ⌊log₂T⌋+1: exact sum."""
        return sum(
            (self.sensitivity / self.level_scale(k) for k in range(1, self.levels_at(horizon) + 1)),
            Fraction(0),
        )

    def g(self, i: int) -> Fraction:
        """The reported window's decay function (1 for ``i < W``; always 1 for the prefix)."""
        return Fraction(1 if i >= 0 and (self.window is None or i < self.window) else 0)

    def _scale_table(self, horizon: int) -> tuple[Fraction, ...]:
        return tuple(self.level_scale(k) for k in range(1, self.levels_at(horizon) + 1))

    def nodes(self, horizon: int) -> NodeTable:
        lo, hi, level = layout_nodes(horizon, self.levels_at(horizon) - 1)
        return NodeTable(lo, hi, self._scale_table(horizon), level)

    def _check_windows(self, windows: Any) -> list[int | None]:
        if isinstance(windows, str | bytes) or not isinstance(windows, Sequence):
            raise DprefTypeError(f"windows={fmt(windows)}: must be a sequence of window sizes")
        if len(windows) == 0:
            raise ParameterError("windows=[]: give at least one window size")
        return [None if w is None else _check_window("windows[]", w) for w in windows]

    def recombination(self, horizon: int) -> ExactSparse:
        off = layout_offsets(horizon, self.levels_at(horizon) - 1)
        return _cover_sparse(horizon, self.window, off, int(off[-1]))

    def target_rows(self, horizon: int) -> TargetRows:
        t = np.arange(1, horizon + 1, dtype=np.int64)
        lo = (
            np.ones(horizon, np.int64)
            if self.window is None
            else np.maximum(t - self.window + 1, 1)
        )
        return TargetRows(
            np.arange(horizon + 1, dtype=np.int64), lo, t, _ONE, np.zeros(horizon, np.int64)
        )

    def variance_exact(self, horizon: int | None = None) -> list[Fraction]:
        """``Var(t) = 2 Σ_{cover nodes} scale_{level}²`` exactly."""
        t = self._horizon_for(horizon)
        L = self.levels_at(t)
        counts = _cover_level_counts(t, self.window, L)
        return _exact_rows(
            counts, [self.node_variance(self.level_scale(k)) for k in range(1, L + 1)]
        )

    def _variance_at(self, t: IntArray) -> FloatArray:
        return self._variance_window(t, self.window)

    def _variance_window(self, t: IntArray, window: int | None) -> FloatArray:
        out = np.zeros(t.size, dtype=np.float64)
        for b, rows, _ in aligned_covers(t, window_start0(t, window)):
            out[rows] += self.node_variance_float(self.level_scale(b + 1))
        return out

    def variance_windows(self, horizon: int, windows: Any) -> FloatArray:
        """Float variance, shape (horizon, len(windows)), for several windows."""
        t_max = self._horizon_for(horizon)
        ws = self._check_windows(windows)
        t = np.arange(1, t_max + 1, dtype=np.int64)
        return np.stack([self._variance_window(t, w) for w in ws], axis=-1)

    def combine(self, noise: FloatArray, horizon: int) -> FloatArray:
        return _window_combine(noise, horizon, self.window, self.levels_at(horizon) - 1)

    def target(self, stream: Any) -> FloatArray:
        """Exact sums over the reported window (prefix sums when ``window`` is None)."""
        return _window_sums(self._stream(stream), self.window)

    def target_windows(self, stream: Any, windows: Any) -> FloatArray:
        """Exact window sums, shape (T, len(windows))."""
        x = self._stream(stream)
        ws = self._check_windows(windows)
        return np.stack([_window_sums(x, w) for w in ws], axis=-1)

    def release(
        self, stream: Any, rng: Any = None, *, noise: Any = None, windows: Any = None
    ) -> FloatArray:
        """One noisy answer per item for the reported window, or shape (T, m) for ``windows``."""
        if windows is None:
            return super().release(stream, rng, noise=noise)
        x = self._stream(stream)
        ws = self._check_windows(windows)
        t = x.size
        off = layout_offsets(t, self.levels_at(t) - 1)
        z = (
            self.node_noise(t, make_rng(rng))
            if noise is None
            else self._check_noise(noise, int(off[-1]))
        )
        cols = [_window_sums(x, w) + _window_combine(z, t, w, self.levels_at(t) - 1) for w in ws]
        return np.stack(cols, axis=-1)

    def release_many(
        self, stream: Any, runs: Any, rng: Any = None, *, noise: Any = None, windows: Any = None
    ) -> FloatArray:
        """Shape (runs, T), or (runs, T, m) for ``windows``."""
        if windows is None:
            return super().release_many(stream, runs, rng, noise=noise)
        x = self._stream(stream)
        n_runs = check_runs("runs", runs)
        ws = self._check_windows(windows)
        t = x.size
        off = layout_offsets(t, self.levels_at(t) - 1)
        z = (
            self.node_noise(t, make_rng(rng), runs=n_runs)
            if noise is None
            else self._check_noise(noise, int(off[-1]), runs=n_runs)
        )
        cols = [_window_sums(x, w) + _window_combine(z, t, w, self.levels_at(t) - 1) for w in ws]
        return np.stack(cols, axis=-1)

    def online(self, rng: Any = None, noise: Any = None, windows: Any = None) -> OnlineCounter:
        """A counter whose ``step`` reports the constructor's window; ``query(W)`` any served W.

        ``windows`` lists the window sizes it must be able to serve besides the
        reported one (``None`` in the list: the running sum).  Memory is
        ``O(W_max)`` for the largest finite served window plus ``O(log t)`` when the
        running sum is served.
        """
        served: list[int | None] = [self.window]
        if windows is not None:
            served += self._check_windows(windows)
        return _AllWindowOnline(self, rng, noise, served)


class _AllWindowOnline(OnlineCounter):
    def __init__(self, m: AllWindowSum, rng: Any, noise: Any, served: list[int | None]) -> None:
        super().__init__(m, rng, noise)
        self._m = m
        self._report = m.window
        self._served = served
        finite = [w for w in served if w is not None]
        self._cap = _levels_for_window(max(finite)) if finite else -1
        self._win = _WindowState(self._cap, max(finite)) if finite else None
        self._pre = _PrefixState() if any(w is None for w in served) else None
        self._scales: list[tuple[Fraction, float]] = []

    def _level(self, b: int) -> tuple[Fraction, float]:
        while len(self._scales) <= b:
            sc = self._m.level_scale(len(self._scales) + 1)
            self._scales.append((sc, ceil_float(sc)))
        return self._scales[b]

    def step(self, x: Any) -> float:
        v = self._admit(x)
        t = self.t
        top = (t & -t).bit_length() - 1
        noises = []
        for b in range(top + 1):
            scale, scale_f = self._level(b)
            noises.append(self._noise(scale_f, scale))
        if self._win is not None:
            self._win.push(v, noises[: self._win.levels_at(t)])
        if self._pre is not None:
            self._pre.push(v, noises)
        return self.query(self._report)

    def query(self, window: int | None) -> float:
        """The noisy estimate of a served window (``None``: running sum) at the current t."""
        if window is not None:
            window = _check_window("window", window)
        if window not in self._served:
            raise ParameterError(f"window={fmt(window)}: not served; pass it in online(windows=)")
        if window is None:
            assert self._pre is not None
            return self._pre.prefix()
        assert self._win is not None
        return self._win.window(window)

    def state_size(self) -> int:
        """Floats held: O(W_max) (+ O(log t) for the running sum)."""
        return (self._win.size() if self._win else 0) + (self._pre.size() if self._pre else 0)
