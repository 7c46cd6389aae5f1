"""Decayed sums under continual observation (SPEC §2): WindowSum, AllWindowSum,
ExponentialSum, PolynomialSum.

The decayed sum induced by a non-increasing ``g`` with ``g(0) = 1`` is
``F(t) = Σ_{i≤t} g(t−i) x_i``.  Every mechanism here keeps noisy nodes of a dyadic
tree and adds up a few of them; the tree is treated non-uniformly, either with
different noise per level (AllWindowSum) or with different weights per node
(ExponentialSum, PolynomialSum).  Levels are numbered as in the patent: level
``k ≥ 1`` (leaves at level 1) holds the aligned intervals
``[(m−1)2^{k−1}+1, m·2^{k−1}]``; in code a node's level is ``b = k − 1`` (its size is
``2^b``).

None of the four needs a horizon: each is ε-DP for every stream length, because
every node is released once and never updated, and the per-item privacy sum is
bounded by a series whose limit is ε (``proofs/decayed.py`` proves each budget
symbolically).

**Canonical node order** (SPEC §0): by release time ``u`` ascending, then by
interval length ascending, then (PolynomialSum) by instance index ascending.  For
PolynomialSum the release time of a node of instance j is its interval end plus the
instance's delay ``d_j`` (see :class:`PolynomialSum`).

**Irrational budgets.**  ζ(δ), ``k^δ``, ``S(α)`` and the PolynomialSum series are
irrational in general.  The declared budget stays exact symbolically (the proofs
use sympy's ``zeta``); the noise scale actually used is a rational upper bound —
a float, rounded up — of the exact scale, computed rigorously (see
:func:`zeta_bounds`, :func:`exponential_sensitivity_bounds`), so the mechanism adds
at least the noise the proof requires.  Every plan built from these scales is then
checked exactly in Fractions.

References
----------
.. [1] J. Bolot, N. Fawaz, S. Muthukrishnan, A. Nikolov, N. Taft. "Private Decayed
   Predicate Sums on Streams." ICDT 2013, pp. 284–295 (arXiv:1108.6123).
.. [2] US patent 9,471,791 (US 2013/0212690 A1), "Private decayed sum estimation
   under continual observation" — Assertions 1–2, Theorems 3–7, Lemma 2.
"""

from __future__ import annotations

from abc import abstractmethod
from collections import deque
from collections.abc import Sequence
from fractions import Fraction
from functools import lru_cache
from typing import Any

import numpy as np
import numpy.typing as npt

from dpref.domains import Domain
from dpref.dyadic import (
    aligned_covers,
    layout_nodes,
    layout_offsets,
    popcount_groups,
    trailing_zeros,
    window_cover,
    window_start0,
)
from dpref.errors import DprefTypeError, ParameterError
from dpref.mechanisms.base import (
    EXACT,
    BudgetTerm,
    Mechanism,
    NodeTable,
    OnlineCounter,
)
from dpref.noise import NoiseKind, make_rng
from dpref.plan import ExactSparse, TargetRows
from dpref.rigorous import (
    exponential_sensitivity_bounds,
    exponential_sensitivity_partial,
    polynomial_breakpoint,
    polynomial_series_upper,
    power_upper,
    zeta_bounds,
)
from dpref.validation import (
    ceil_float,
    check_fraction,
    check_int_range,
    check_probability_open,
    check_runs,
    fmt,
)

__all__ = [
    "AllWindowSum",
    "ExponentialSum",
    "PolynomialSum",
    "WindowSum",
    "exponential_sensitivity_bounds",
    "exponential_sensitivity_partial",
    "polynomial_breakpoint",
    "zeta_bounds",
]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
IndexArray = npt.NDArray[np.intp]
_ONE = (Fraction(1),)
_cover_scalar = window_cover
"""The name :func:`dpref.dyadic.window_cover` had here (tests use it)."""
_polynomial_series_upper = polynomial_series_upper
"""The name this bound had here before :mod:`dpref.rigorous` (tests clear its cache)."""
_NodeArrays = tuple[
    list["_Instance"], list[IntArray], IntArray, IntArray, IntArray, IntArray, IntArray
]


@lru_cache(maxsize=4)
def _window_slots(horizon: int, window: int | None, cap: int | None) -> IntArray:
    """Canonical node index of every cover slot, shape (slots, T); ``n_nodes`` = none."""
    off = layout_offsets(horizon, cap)
    n_nodes = int(off[-1])
    t = np.arange(1, horizon + 1, dtype=np.int64)
    slots = []
    for b, rows, ends in aligned_covers(t, window_start0(t, window)):
        idx = np.full(horizon, n_nodes, dtype=np.int64)
        idx[rows] = off[ends - 1] + b
        slots.append(idx)
    out = np.stack(slots) if slots else np.zeros((0, horizon), np.int64)
    out.setflags(write=False)
    return out


def _window_combine(z: FloatArray, horizon: int, window: int | None, cap: int | None) -> FloatArray:
    """Noise part of the window estimates: sum of the cover's node noise, every t."""
    slots = _window_slots(horizon, window, cap)
    zpad = np.concatenate([z, np.zeros((*z.shape[:-1], 1))], axis=-1)
    out = np.zeros((*z.shape[:-1], horizon), dtype=np.float64)
    for idx in slots:
        out += zpad[..., idx]
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


def _exact_rows(counts: IntArray, weights: Sequence[Fraction]) -> list[Fraction]:
    """Exact ``Σ_b counts[t, b] · weights[b]`` per row (each distinct row once)."""
    if counts.shape[0] == 0:
        return []
    uniq, inverse = np.unique(counts, axis=0, return_inverse=True)
    vals = [
        sum((int(c) * w for c, w in zip(row, weights, strict=True)), Fraction(0)) for row in uniq
    ]
    return [vals[int(k)] for k in np.asarray(inverse).ravel()]


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


def _check_greater_one(name: str, value: Any) -> Fraction:
    v = check_fraction(name, value)
    if v <= 1:
        raise ParameterError(f"{name}={fmt(value)}: must be > 1")
    return v


def _levels_for_window(window: int) -> int:
    """``log₂B`` with ``B = 2^⌈log₂W⌉`` (so ``W ≤ B < 2W``)."""
    return (window - 1).bit_length()


# ------------------------------------------------------------- online states
class _WindowState:
    """Nodes of levels ``0..cap`` ending in the last ``keep`` steps (true and noisy).

    Memory: at most ``2·keep`` nodes, two floats each — O(W) for a window W ≤ keep.
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
class _Decayed(Mechanism):
    """Shared pieces: unbounded, float variance without Fractions, canonical checks."""

    needs_horizon = False

    def variance(self, horizon: int | None = None) -> FloatArray:
        """Exact per-step variance as floats (vectorised for Laplace noise)."""
        t = self._horizon_for(horizon)
        if self.noise == "laplace":
            return self.variance_at(np.arange(1, t + 1, dtype=np.int64))
        return super().variance(t)

    def variance_at(self, t: Any) -> FloatArray:
        """Float variance of the Laplace-noise estimate at the given times (any t ≥ 1)."""
        ts = np.asarray(t, dtype=np.int64)
        if ts.ndim != 1 or ts.size == 0 or int(ts.min()) < 1:
            raise ParameterError(f"t={fmt(t)}: must be a non-empty 1-D array of times >= 1")
        return self._variance_at(ts)

    @abstractmethod
    def _variance_at(self, t: IntArray) -> FloatArray:
        """Float variance at the given times."""


class WindowSum(_Decayed):
    """Sliding-window sums ``F(t) = Σ_{i=t−W+1}^{t} x_i`` (``g(i) = 1`` for ``i < W``).

    Block size ``B = 2^⌈log₂W⌉`` (so ``W ≤ B < 2W``); the nodes are every aligned
    node of size ≤ B — one full dyadic tree per block.  Each item is in exactly
    ``L = log₂B + 1`` nodes, so every node gets ``Lap(LΔ/ε)`` and the budget is
    ``L · ε/L = ε`` (reached once T ≥ B).  The window ``[max(1, t−W+1), t]`` is
    answered by its canonical cover by maximal aligned nodes: inside one block, or the
    suffix of the previous block (nodes ending at its end) plus the prefix of the
    current block (left nodes) — at most ``2 log₂B`` nodes, so the variance
    ``2·|cover(t)|·(LΔ/ε)²`` is periodic in t with period B and never grows.  Online
    memory is O(W): only nodes ending in the last B steps are kept.

    For W a power of two this is the patent's "each x_j contributes to exactly
    log W + 1 variables" (Theorem 3); for other W dpref rounds the block up to a power
    of two so that blocks are aligned dyadic nodes (SPEC §2.1, the project's
    convention since the paper's Table 1 could not be consulted).

    References
    ----------
    .. [1] Bolot et al., ICDT 2013, WindowSum (Table 1, Theorem 3).
    """

    name = "window"

    def __init__(
        self,
        *,
        window: Any,
        epsilon: Any,
        horizon: Any = None,
        domain: Domain | None = None,
        noise: NoiseKind = "laplace",
    ) -> None:
        super().__init__(epsilon=epsilon, horizon=horizon, domain=domain, noise=noise)
        self.window: int = _check_window("window", window)
        self.cap: int = _levels_for_window(self.window)
        """``log₂B``: the top level index (sizes ``2^0 … 2^cap``)."""
        self.block: int = 1 << self.cap
        """B, the block size."""

    def extra_params(self) -> dict[str, Any]:
        return {"window": self.window}

    def levels(self, ops: Any = EXACT) -> int:
        """``L = log₂B + 1``: the number of nodes containing each item."""
        return self.cap + 1

    def budget_terms(self, ops: Any = EXACT, **s: Any) -> list[BudgetTerm]:
        """Every item is in one node per level, L levels, each of scale ``LΔ/ε``."""
        eps = s.get("epsilon", self.epsilon)
        delta = s.get("sensitivity", self.sensitivity)
        L = s.get("levels", self.levels())
        return [BudgetTerm("level", L, L * delta / eps)]

    def scale(self) -> Fraction:
        """The per-node Laplace scale ``LΔ/ε``."""
        return (self.cap + 1) * self.sensitivity / self.epsilon

    def expected_privacy_sum(self, horizon: int) -> Fraction | None:
        """Item 1 is in the nodes ``[1, 2^b]`` released by T: ``min(⌊log₂T⌋, log₂B) + 1``."""
        return (min(horizon.bit_length() - 1, self.cap) + 1) * self.sensitivity / self.scale()

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
        unit = 2 * self.scale() ** 2
        return [int(k) * unit for k in self.cover_sizes(t)]

    def _variance_at(self, t: IntArray) -> FloatArray:
        counts = np.zeros(t.size, dtype=np.float64)
        for _, rows, _ in aligned_covers(t, window_start0(t, self.window)):
            counts[rows] += 1
        out: FloatArray = counts * (2 * ceil_float(self.scale()) ** 2)
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
        self._state = _WindowState(m.cap, m.block)

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
    ``[max(1, t−W+1), t]`` (as :class:`WindowSum` with ``B = 2^⌈log₂W⌉``: every
    cover node has size ≤ W ≤ B, so level ≤ log₂B + 1 and scale
    ``O(log^δ W)``); the error does not grow with t.  ``window=None`` reports the
    running sum (the prefix ``[1, t]``, left nodes only; its variance grows as
    ``O(log^{2δ+1} t)``).

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
    level 1, ``ε_k ∝ k^{−δ}``) is the patent's level numbering (SPEC §2.2).

    References
    ----------
    .. [1] Bolot et al., ICDT 2013, AllWindowSum (Table 2, Theorem 4).
    """

    name = "allwindow"

    def __init__(
        self,
        *,
        epsilon: Any,
        delta: Any = Fraction(3, 2),
        window: Any = None,
        horizon: Any = None,
        domain: Domain | None = None,
        noise: NoiseKind = "laplace",
    ) -> None:
        super().__init__(epsilon=epsilon, horizon=horizon, domain=domain, noise=noise)
        self.delta: Fraction = _check_greater_one("delta", delta)
        self.window: int | None = None if window is None else _check_window("window", window)
        self._zeta_up = zeta_bounds(self.delta)[1]
        self._scales: list[Fraction] = []

    def extra_params(self) -> dict[str, Any]:
        out: dict[str, Any] = {"delta": self.delta}
        if self.window is not None:
            out["window"] = self.window
        return out

    def level_epsilon(self, k: Any, ops: Any = EXACT, **s: Any) -> Any:
        """``ε_k = ε/(ζ(δ)·k^δ)`` for level k ≥ 1.

        With a namespace that has ``zeta`` (sympy) the value is symbolic; with
        :data:`EXACT` it is the exact budget of the rational scale actually used,
        ``Δ/scale_k ≤ ε/(ζ(δ)k^δ)``.
        """
        eps = s.get("epsilon", self.epsilon)
        delta = s.get("delta", self.delta)
        zeta = getattr(ops, "zeta", None)
        if zeta is not None:
            return eps / (zeta(delta) * k**delta)
        return self.sensitivity / self.level_scale(int(k)) * eps / self.epsilon

    def level_scale(self, k: int) -> Fraction:
        """The rational Laplace scale of level k ≥ 1: a float ≥ ``ζ(δ)k^δΔ/ε``."""
        while len(self._scales) < k:
            j = len(self._scales) + 1
            exact_up = self._zeta_up * power_upper(j, self.delta) * self.sensitivity / self.epsilon
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
        L = s.get("levels", 64 if T is None else int(T).bit_length())
        eps = s.get("epsilon", self.epsilon)
        level_eps = [self.level_epsilon(k, ops, **s) for k in range(1, L + 1)]
        rest = eps - sum(level_eps[1:], level_eps[0])
        return [
            *(BudgetTerm(f"level_{k}", 1, delta_s / e) for k, e in enumerate(level_eps, 1)),
            BudgetTerm("levels>L", 1, delta_s / rest),
        ]

    def expected_privacy_sum(self, horizon: int) -> Fraction | None:
        """Item 1 is in ``[1, 2^{k−1}]`` for every level k ≤ ⌊log₂T⌋+1: exact sum."""
        return sum(
            (self.sensitivity / self.level_scale(k) for k in range(1, horizon.bit_length() + 1)),
            Fraction(0),
        )

    def g(self, i: int) -> Fraction:
        """The reported window's decay function (1 for ``i < W``; always 1 for the prefix)."""
        return Fraction(1 if i >= 0 and (self.window is None or i < self.window) else 0)

    def _scale_table(self, horizon: int) -> tuple[Fraction, ...]:
        return tuple(self.level_scale(k) for k in range(1, horizon.bit_length() + 1))

    def nodes(self, horizon: int) -> NodeTable:
        lo, hi, level = layout_nodes(horizon, None)
        return NodeTable(lo, hi, self._scale_table(horizon), level)

    def _check_windows(self, windows: Any) -> list[int | None]:
        if isinstance(windows, str | bytes) or not isinstance(windows, Sequence):
            raise DprefTypeError(f"windows={fmt(windows)}: must be a sequence of window sizes")
        if len(windows) == 0:
            raise ParameterError("windows=[]: give at least one window size")
        return [None if w is None else _check_window("windows[]", w) for w in windows]

    def recombination(self, horizon: int) -> ExactSparse:
        off = layout_offsets(horizon, None)
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
        L = t.bit_length()
        counts = _cover_level_counts(t, self.window, L)
        return _exact_rows(counts, [2 * self.level_scale(k) ** 2 for k in range(1, L + 1)])

    def _variance_at(self, t: IntArray) -> FloatArray:
        return self._variance_window(t, self.window)

    def _variance_window(self, t: IntArray, window: int | None) -> FloatArray:
        out = np.zeros(t.size, dtype=np.float64)
        for b, rows, _ in aligned_covers(t, window_start0(t, window)):
            out[rows] += 2 * ceil_float(self.level_scale(b + 1)) ** 2
        return out

    def variance_windows(self, horizon: int, windows: Any) -> FloatArray:
        """Float variance, shape (horizon, len(windows)), for several windows."""
        t_max = self._horizon_for(horizon)
        ws = self._check_windows(windows)
        t = np.arange(1, t_max + 1, dtype=np.int64)
        return np.stack([self._variance_window(t, w) for w in ws], axis=-1)

    def combine(self, noise: FloatArray, horizon: int) -> FloatArray:
        return _window_combine(noise, horizon, self.window, None)

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
        off = layout_offsets(t, None)
        z = (
            self.node_noise(t, make_rng(rng))
            if noise is None
            else self._check_noise(noise, int(off[-1]))
        )
        cols = [_window_sums(x, w) + _window_combine(z, t, w, None) for w in ws]
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
        off = layout_offsets(t, None)
        z = (
            self.node_noise(t, make_rng(rng), runs=n_runs)
            if noise is None
            else self._check_noise(noise, int(off[-1]), runs=n_runs)
        )
        cols = [_window_sums(x, w) + _window_combine(z, t, w, None) for w in ws]
        return np.stack(cols, axis=-1)

    def online(self, rng: Any = None, noise: Any = None, windows: Any = None) -> OnlineCounter:
        """A counter whose ``step`` reports the constructor's window; ``query(W)`` any served W.

        ``windows`` lists the window sizes it must be able to serve besides the
        reported one (``None`` in the list: the running sum).  Memory is
        ``O(B_max)`` for the largest finite served window plus ``O(log t)`` when the
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
        self._win = _WindowState(self._cap, 1 << self._cap) if finite else None
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
        """Floats held: O(B_max) (+ O(log t) for the running sum)."""
        return (self._win.size() if self._win else 0) + (self._pre.size() if self._pre else 0)


# =============================================================== ExponentialSum
class ExponentialSum(_Decayed):
    """Exponentially decayed sums ``F(t) = Σ_{i≤t} α^{t−i} x_i``, 0 < α < 1.

    Nodes: the **left nodes only** of one growing tree — exactly one ends at each t,
    ``[t − 2^{lsb(t)} + 1, t]`` — and node ``[l, u]`` stores ``Σ_{i=l}^{u} α^{u−i} x_i``
    (weights ``α^{u−i}``: the patent's "weight applied to an update").  The estimate
    at t uses the left nodes ``[1,u_1], [u_1+1,u_2], …, [u_{r−1}+1, t]`` of the binary
    decomposition of t: ``F̂(t) = Σ_m α^{t−u_m}·noisy_m``, unbiased because the weights
    telescope.

    Sensitivity: item i's k-th left ancestor ends at ``u_k ≥ i + 2^{k−1} − 1`` (the
    patent's Assertion 2), with equality for item 1, so the exact L1 sensitivity is
    ``S(α) = Σ_{k≥1} α^{2^{k−1}−1}`` (``S(0.9) ≈ 3.353``, ``S(0.99) ≈ 6.378``,
    ``S = O(log 1/(1−α))``), and every node gets ``Lap(S·Δ/ε)``.  S is irrational in
    general; the scale is a rational (float) upper bound from
    :func:`exponential_sensitivity_bounds`.  At horizon T the privacy sum is the
    truncation ``S_L(α)/S·ε`` with ``L = ⌊log₂T⌋ + 1`` (checked exactly).

    Variance at t: ``2(SΔ/ε)² Σ_{bits b of t} α^{2(t mod 2^b)}`` ≤ ``2(SΔ/ε)²·(1 +
    1/(1−α²))``-ish: bounded in t.  Online memory O(log t).  ``noise="discrete"`` is
    refused: node values are not integers.

    References
    ----------
    .. [1] Bolot et al., ICDT 2013, ExponentialSum (Table 3, Assertion 2, Theorem 5).
    """

    name = "exponential"

    def __init__(
        self,
        *,
        alpha: Any,
        epsilon: Any,
        horizon: Any = None,
        domain: Domain | None = None,
        noise: NoiseKind = "laplace",
    ) -> None:
        super().__init__(epsilon=epsilon, horizon=horizon, domain=domain, noise=noise)
        self.alpha: Fraction = check_probability_open("alpha", alpha)
        if self.noise == "discrete":
            raise ParameterError(
                "noise='discrete': ExponentialSum nodes hold weighted (non-integer) sums"
            )
        self.sensitivity_bounds: tuple[Fraction, Fraction] = exponential_sensitivity_bounds(
            self.alpha
        )
        """Rational bounds on S(α)."""

    def extra_params(self) -> dict[str, Any]:
        return {"alpha": self.alpha}

    @property
    def base(self) -> Fraction:
        return self.alpha

    def scale(self) -> Fraction:
        """The per-node Laplace scale: a float ≥ ``S(α)Δ/ε``."""
        return Fraction(ceil_float(self.sensitivity_bounds[1] * self.sensitivity / self.epsilon))

    def budget_terms(self, ops: Any = EXACT, **s: Any) -> list[BudgetTerm]:
        """Level k: item 1's node ``[1, 2^{k−1}]`` has weight ``α^{2^{k−1}−1}`` (the worst).

        ``membership`` is the worst item's total weight ``|a_{n,i}|`` in nodes of the
        level.  Levels ``k = 1..L`` with ``L = min(⌊log₂T⌋+1, 12)`` (symbol ``levels``;
        12 with no horizon; higher levels are folded into the last term).  The scale
        is ``S·Δ/ε`` with ``S`` given as the symbol ``S`` or
        the rational upper bound used.  A last term ``levels>L`` declares the weight of
        the levels above L, ``S − S_L(α)`` (≥ ``Σ_{k>L} α^{2^{k−1}−1}``), so the
        declarations add up to ε.
        """
        eps = s.get("epsilon", self.epsilon)
        delta = s.get("sensitivity", self.sensitivity)
        alpha = s.get("alpha", self.alpha)
        T = s.get("horizon", self.horizon)
        L = s.get("levels", 12 if T is None else min(12, int(T).bit_length()))
        S = s["S"] if "S" in s else self.scale() * self.epsilon / self.sensitivity
        scale = S * delta / eps
        weights = [alpha ** (2 ** (k - 1) - 1) for k in range(1, L + 1)]
        return [
            *(BudgetTerm(f"level_{k}", w, scale) for k, w in enumerate(weights, 1)),
            BudgetTerm("levels>L", S - sum(weights[1:], weights[0]), scale),
        ]

    def expected_privacy_sum(self, horizon: int) -> Fraction | None:
        """``S_L(α)·Δ/λ`` with ``L = ⌊log₂T⌋ + 1``: item 1's weights, exactly."""
        return (
            exponential_sensitivity_partial(self.alpha, horizon.bit_length())
            * self.sensitivity
            / self.scale()
        )

    def g(self, i: int) -> Fraction:
        """The decay function ``α^i``."""
        return self.alpha**i if i >= 0 else Fraction(0)

    def nodes(self, horizon: int) -> NodeTable:
        t = np.arange(1, horizon + 1, dtype=np.int64)
        return NodeTable(t - (t & -t) + 1, t, (self.scale(),), np.zeros(horizon, np.int64))

    def recombination(self, horizon: int) -> ExactSparse:
        t = np.arange(1, horizon + 1, dtype=np.int64)
        rows_l, cols_l, d_l = [], [], []
        for b in range(horizon.bit_length()):
            rows = np.flatnonzero(t >> b & 1)
            u = (t[rows] >> b) << b
            rows_l.append(rows)
            cols_l.append(u - 1)
            d_l.append(t[rows] - u)
        rows_a, cols_a, d_a = (np.concatenate(v) for v in (rows_l, cols_l, d_l))
        uniq, inv = np.unique(d_a, return_inverse=True)
        table = tuple(self.alpha ** int(d) for d in uniq)
        return ExactSparse.from_triples(
            (horizon, horizon), rows_a, cols_a, table, np.asarray(inv, np.int64).ravel()
        )

    def target_rows(self, horizon: int) -> TargetRows:
        t = np.arange(1, horizon + 1, dtype=np.int64)
        return TargetRows(
            np.arange(horizon + 1, dtype=np.int64),
            np.ones(horizon, np.int64),
            t,
            _ONE,
            np.zeros(horizon, np.int64),
        )

    def variance_exact(self, horizon: int | None = None) -> list[Fraction]:
        """``2λ² Σ_{bits b of t} α^{2(t mod 2^b)}`` exactly."""
        t_max = self._horizon_for(horizon)
        unit = 2 * self.scale() ** 2
        a2 = self.alpha**2
        powers: dict[int, Fraction] = {}
        out = []
        for t in range(1, t_max + 1):
            acc = Fraction(0)
            for b in range(t.bit_length()):
                if t >> b & 1:
                    d = t & ((1 << b) - 1)
                    if d not in powers:
                        powers[d] = a2**d
                    acc += powers[d]
            out.append(unit * acc)
        return out

    def _variance_at(self, t: IntArray) -> FloatArray:
        a2 = float(self.alpha) ** 2
        acc = np.zeros(t.size, dtype=np.float64)
        for b in range(int(t.max()).bit_length()):
            on = (t >> b & 1).astype(bool)
            acc[on] += a2 ** (t[on] & ((1 << b) - 1)).astype(np.float64)
        out: FloatArray = acc * (2 * ceil_float(self.scale()) ** 2)
        return out

    def combine(self, noise: FloatArray, horizon: int) -> FloatArray:
        # N(t) = z_t + α^{lsb(t)} N(t − lsb(t)), processed in order of popcount.
        out = np.array(noise, dtype=np.float64, copy=True)
        for idx, par, mult in _exp_groups(horizon, float(self.alpha)):
            out[..., idx] += mult * out[..., par]
        return out

    def target(self, stream: Any) -> FloatArray:
        """Exact decayed sums ``F(t) = α F(t−1) + x_t`` (float recursion)."""
        return self._target_checked(self._stream(stream))

    def _target_checked(self, x: FloatArray) -> FloatArray:
        from scipy.signal import lfilter  # ~1.7 s to import: only when a target is asked for

        out: FloatArray = lfilter([1.0], [1.0, -float(self.alpha)], x)
        return out

    def node_count(self, horizon: int) -> int:
        return horizon

    def noise_scales(self, horizon: int) -> FloatArray | float:
        return ceil_float(self.scale())

    def online(self, rng: Any = None, noise: Any = None) -> OnlineCounter:
        return _ExponentialOnline(self, rng, noise)


@lru_cache(maxsize=8)
def _exp_groups(n: int, alpha: float) -> tuple[tuple[IndexArray, IndexArray, FloatArray], ...]:
    """:func:`~dpref.dyadic.popcount_groups` with each t's multiplier ``α^{2^{lsb(t)}}``."""
    mult_level = np.array([alpha ** (1 << b) for b in range(64)], dtype=np.float64)
    return tuple((idx, par, mult_level[trailing_zeros(idx + 1)]) for idx, par in popcount_groups(n))


class _ExponentialOnline(OnlineCounter):
    """Per level: the latest left node (end, true value, noisy value): O(log t)."""

    def __init__(self, m: ExponentialSum, rng: Any, noise: Any) -> None:
        super().__init__(m, rng, noise)
        self._alpha = float(m.alpha)
        self._scale = m.scale()
        self._scale_f = ceil_float(self._scale)
        self._end: list[int] = []
        self._true: list[float] = []
        self._noisy: list[float] = []

    def step(self, x: Any) -> float:
        v = self._admit(x)
        t = self.t
        top = (t & -t).bit_length() - 1
        while len(self._end) <= top:
            self._end.append(0)
            self._true.append(0.0)
            self._noisy.append(0.0)
        a = self._alpha
        for j in range(top):  # left nodes of sizes 2^j ending at t − 2^j
            v += a ** (1 << j) * self._true[j]
        self._end[top] = t
        self._true[top] = v
        self._noisy[top] = v + self._noise(self._scale_f, self._scale)
        return sum(
            a ** (t - self._end[b]) * self._noisy[b] for b in range(t.bit_length()) if t >> b & 1
        )

    def state_size(self) -> int:
        """Floats held (O(log t))."""
        return 3 * len(self._end)


# ================================================================ PolynomialSum
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
    ``S = Σ_{j: W_j>0} (1−β)^j (log₂B_j + 1)`` — the SPEC §2.4 convention.  S is finite
    for every c > 1 (``proofs/decayed.py``); the scale is a rational upper bound of
    ``SΔ/ε`` (the series summed exactly in 128-bit fixed point with upward rounding
    to a tail below ``2^{−64}``, plus a closed-form tail bound).

    **Note on the error.**  With one λ for every instance (SPEC's convention), the
    estimate at t adds at least one noisy node per *active* instance (``d_j < t``),
    and the number of active instances grows like ``c·ln t/β``: the variance grows
    (logarithmically) with t, unlike the other three mechanisms.  ``dpref bench``
    shows this; ``variance_at`` gives it exactly.

    The plan is unbiased for ``F'`` (``R·A = Q'``); :meth:`decayed_target` gives the
    true ``F``, and the reference reports both the additive error (against F') and
    the ``(1−β)`` multiplicative factor.  ``noise="discrete"`` is refused.

    References
    ----------
    .. [1] Bolot et al., ICDT 2013, PolynomialSum (Table 4, Theorem 6, Eq. 41–42).
    """

    name = "polynomial"

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
        self.c: Fraction = _check_greater_one("c", c)
        self.beta: Fraction = check_probability_open("beta", beta)
        if self.noise == "discrete":
            raise ParameterError(
                "noise='discrete': PolynomialSum nodes hold weighted (non-integer) sums"
            )
        self.rho: Fraction = 1 - self.beta
        """``1 − β``."""
        self._b: list[int] = [0]
        self._instances: list[_Instance] = []
        self._next_j = 0
        self._arrays_cache: dict[int, _NodeArrays] = {}
        self.series_upper: Fraction = polynomial_series_upper(self.c, self.beta)
        """A rational upper bound on S."""

    def extra_params(self) -> dict[str, Any]:
        return {"c": self.c, "beta": self.beta}

    # ------------------------------------------------------------ breakpoints
    def breakpoint(self, j: int) -> int:
        """``b(j)`` (cached)."""
        if j < 0:
            return -1
        while len(self._b) <= j:
            self._b.append(polynomial_breakpoint(len(self._b), self.c, self.beta))
        return self._b[j]

    def _grow(self) -> _Instance | None:
        j = self._next_j
        self._next_j += 1
        bp, bj = self.breakpoint(j - 1), self.breakpoint(j)
        if bj == bp:
            return None
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
    def _node_arrays(
        self, horizon: int
    ) -> tuple[list[_Instance], list[IntArray], IntArray, IntArray, IntArray, IntArray, IntArray]:
        """Instances, per-instance global positions, and (lo, hi, weight_idx) canonical."""
        cached = self._arrays_cache.get(horizon)
        if cached is not None:
            return cached
        out = self._build_node_arrays(horizon)
        self._arrays_cache = {horizon: out}
        return out

    def _build_node_arrays(
        self, horizon: int
    ) -> tuple[list[_Instance], list[IntArray], IntArray, IntArray, IntArray, IntArray, IntArray]:
        insts = self.instances(horizon)
        los, his, rel, lev, jj = [], [], [], [], []
        for k, inst in enumerate(insts):
            lo, hi, level = layout_nodes(horizon - inst.d, inst.cap)
            los.append(lo)
            his.append(hi)
            rel.append(hi + inst.d)
            lev.append(level)
            jj.append(np.full(lo.size, k, np.int64))
        if not insts:
            e = np.zeros(0, np.int64)
            return insts, [], e, e, e, e, e
        lo_a, hi_a, rel_a, lev_a, jj_a = (np.concatenate(v) for v in (los, his, rel, lev, jj))
        order = np.lexsort((jj_a, lev_a, rel_a))
        gpos = np.empty(order.size, np.int64)
        gpos[order] = np.arange(order.size, dtype=np.int64)
        starts = np.concatenate([[0], np.cumsum([a.size for a in los])])
        per = [gpos[starts[k] : starts[k + 1]] for k in range(len(insts))]
        return insts, per, lo_a[order], hi_a[order], jj_a[order], rel_a[order], lev_a[order]

    def release_times(self, horizon: int) -> IntArray:
        """Release time ``u + d_j`` of every node, canonical order."""
        return self._node_arrays(horizon)[5]

    def nodes(self, horizon: int) -> NodeTable:
        insts, _, lo, hi, kk, _, _ = self._node_arrays(horizon)
        return NodeTable(
            lo,
            hi,
            (self.scale(),),
            np.zeros(lo.size, np.int64),
            tuple(i.weight for i in insts) or _ONE,
            kk,
        )

    def recombination(self, horizon: int) -> ExactSparse:
        insts, per, lo, _, _, _, _ = self._node_arrays(horizon)
        rows_l: list[IntArray] = []
        cols_l: list[IntArray] = []
        for inst, gp in zip(insts, per, strict=True):
            tj = horizon - inst.d
            off = layout_offsets(tj, inst.cap)
            s = np.arange(1, tj + 1, dtype=np.int64)
            for b, rows, ends in aligned_covers(s, window_start0(s, inst.window)):
                rows_l.append(rows + inst.d)
                cols_l.append(gp[off[ends - 1] + b])
        rows_a = np.concatenate(rows_l) if rows_l else np.zeros(0, np.int64)
        cols_a = np.concatenate(cols_l) if cols_l else np.zeros(0, np.int64)
        return ExactSparse.from_triples(
            (horizon, lo.size), rows_a, cols_a, _ONE, np.zeros(rows_a.size, np.int64)
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
        insts, per, _, _, _, _, _ = self._node_arrays(horizon)
        out = np.zeros((*noise.shape[:-1], horizon), dtype=np.float64)
        for inst, gp in zip(insts, per, strict=True):
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
        m = self._m
        insts = m.instances(t)
        while len(self._active) < len(insts):
            inst = insts[len(self._active)]
            self._active.append((inst, float(inst.weight), _WindowState(inst.cap, 1 << inst.cap)))
        self._delay.appendleft(v)  # _delay[k] = x_{t−k}
        # keep what the next instance to start (delay d_next > t − 1) will need
        d_max = m.next_delay(t)
        while len(self._delay) > d_max + 1:
            self._delay.pop()
        # nodes released now: instance j's nodes ending at s = t − d_j, by (level, j)
        need = [st.levels_at(t - inst.d) for inst, _, st in self._active]
        noises: list[list[float]] = [[] for _ in self._active]
        for b in range(max(need, default=0)):
            for k, n in enumerate(need):
                if b < n:
                    noises[k].append(self._noise(self._scale_f, self._scale))
        total = 0.0
        for (inst, w, st), zs in zip(self._active, noises, strict=True):
            st.push(w * self._delay[inst.d], zs)
            total += st.window(inst.window)
        return total

    def state_size(self) -> int:
        """Floats held: the delay line (``d_max + 1``) plus each instance's O(W_j) nodes."""
        return len(self._delay) + sum(st.size() for _, _, st in self._active)
