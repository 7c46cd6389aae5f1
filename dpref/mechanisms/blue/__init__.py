"""The BLUE tree counter: best linear unbiased decoding of a tree strategy (docs/blue.md).

Every tree mechanism releases noisy aligned k-ary blocks and adds up a few of them.  Given
*all* the noisy nodes, the estimate of each prefix with the least variance among linear
unbiased estimates is the generalised least squares (GLS) estimate
``Q (AᵀΣ⁻¹A)⁻¹ AᵀΣ⁻¹ z``; on a tree it is computed by two linear passes (Hay, Rastogi,
Miklau, Suciu 2010): a bottom-up inverse-variance combination and a top-down
consistency correction (:mod:`dpref.mechanisms.blue.decode`).  The node set and the
per-level budget are the strategy's (every item lies in exactly one node per level, so
per-level shares ``ε_j`` summing to ε make the node vector ε-DP by basic composition, or
ρ-zCDP with shares of ρ); the outputs are a fixed linear function of the noisy node
vector, so they are post-processing.

Model (as docs/elders.md): the stream is fixed in advance (non-adaptive), as everywhere in
dpref.  Every output uses every node's noise, so all node noise is fixed at the first step
(every release time is 1) and the output at t is ``c_t + (R z)_t``: ``R·A = Q`` exactly, so
the items after t cancel and the output at t is computable from ``x_1 … x_t`` and the noise;
the whole output sequence is a fixed linear function of the noisy node vector ``A x + z``,
ε-DP (ρ-zCDP) for a fixed x.  If later items may depend on earlier outputs, each output
already reveals a combination of the noise of nodes whose items have not arrived, so the
release is no longer post-processing of one Laplace (Gaussian) mechanism run on a fixed
``A x``; no guarantee is claimed for adaptively chosen streams.  :meth:`BlueTree.online`
draws the node noise from the Generator at the first step (memory N + T);
:meth:`BlueTree.online_keyed` regenerates it from a key (:mod:`~dpref.mechanisms.blue.online`,
memory O(k·H)).

References
----------
.. [1] M. Hay, V. Rastogi, G. Miklau, D. Suciu. "Boosting the Accuracy of Differentially
   Private Histograms Through Consistency." PVLDB 3(1), 2010.
.. [2] W. Qardaji, W. Yang, N. Li. "Understanding Hierarchical Methods for Differentially
   Private Histograms." PVLDB 6(14), 2013.
.. [3] J. Honaker. "Efficient Use of Differentially Private Binary Trees." TPDP 2015.
"""

from __future__ import annotations

import functools
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt

from dpref.domains import Domain
from dpref.errors import ParameterError
from dpref.lower_bounds import Decay, prefix_decay
from dpref.mechanisms.base import (
    EXACT,
    BudgetTerm,
    Example,
    Mechanism,
    NodeTable,
    OnlineCounter,
)
from dpref.mechanisms.blue.budget import mean_optimal_split
from dpref.mechanisms.blue.decode import (
    FloatWeights,
    Weights,
    combine_noise,
    exact_weights,
    float_weights,
    variance_at,
)
from dpref.mechanisms.blue.hierarchy import (
    LAYOUT_KINDS,
    Layout,
    LayoutKind,
    blue_levels,
    layout,
)
from dpref.mechanisms.blue.online import KeyedOnline, keyed_noise
from dpref.mechanisms.blue.rows import recombination_exact
from dpref.mechanisms.blue.variance import objective_exact, variance_floats
from dpref.mechanisms.tree_arith import level_scale, uniform_split
from dpref.mechanisms.tree_budgets import (
    OBJECTIVES,
    design_level_budget,
    validate_budget_form,
)
from dpref.noise import NoiseKind, make_rng
from dpref.plan import ExactSparse
from dpref.types import Budget, BudgetSplit, Count, Horizon
from dpref.validation import ceil_float, check_choice, check_int_range, fmt

__all__ = ["BLUE_PLAN_STEPS", "MAX_BLUE_K", "BlueTree"]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

BLUE_PLAN_STEPS = 64
"""Largest T of the exact plan: R is dense (every output uses every node, T × N exact
entries with Θ(T) distinct values), and the generic plan check builds a T × (distinct
values) count matrix, ~1.5 s at T = 256.  Larger T are checked by the path recursion
against the dense GLS oracle in the tests and by the exact objectives."""
FRONTIER_FULL_T = 2**16
"""Up to this T, :meth:`BlueTree.frontier_variants` lists every k ≤ 32 of every layout."""
MAX_BLUE_K = 4096
"""Largest arity: the exact weights cost O(k·H) Fractions at construction (a k ≥ T gives
the same tree as k = T: a root over T leaves)."""
EXACT_VARIANCE_STEPS = 4096
"""Up to this T, :meth:`BlueTree.variance` rounds the exact per-step Fractions; above, it
is the interval-checked float recursion (:func:`variance_floats`)."""


class BlueTree(Mechanism):
    """A k-ary tree strategy decoded by its best linear unbiased estimate (module doc).

    Node set (``layout``): ``complete`` (every aligned k-ary block that starts by T, levels
    0 … ⌈log_k T⌉), ``kary`` (``KaryTree(combine=True)``'s blocks), ``elders``
    (``Elders``' blocks, odd k: there the BLUE is Elders' decoder), ``elders_full`` (Elders'
    levels, every block).  Level j's nodes get ``Lap(Δ/ε_j)`` (or ``N(0, Δ²/(2ρ_j))``);
    the output at t is the sum of the consistent estimates ``x̄`` over t's k-ary
    decomposition, ``c_t + (R z)_t`` with exact rational R.

    Parameters
    ----------
    k
        The arity, an int 2 ≤ k ≤ 4096 (odd for ``layout="elders"``).
    layout
        Which blocks are released: ``complete`` (default), ``kary``, ``elders`` or
        ``elders_full``.
    budget
        Per-level split of ε (or ρ): ``uniform`` (default), ``mean`` (the split minimising
        the mean variance over t ≤ T; exact rationals summing to ε, kept only when it beats
        uniform exactly), or L comma-separated per-level values summing to ε (ρ) exactly,
        L the number of levels with released blocks.

    References
    ----------
    .. [1] Hay, Rastogi, Miklau, Suciu. PVLDB 3(1), 2010 (constrained inference on trees).
    """

    name = "blue"
    opens_nodes = True
    proof = "proofs/blue.py"
    docs = "docs/blue.md"
    max_plan_steps = BLUE_PLAN_STEPS
    examples = (
        Example(horizons=(1, 5, 16)),
        Example({"k": 3, "layout": "elders_full"}, horizons=(16,), privacy="zcdp"),
    )

    def __init__(
        self,
        *,
        epsilon: Budget | None = None,
        rho: Budget | None = None,
        horizon: Horizon,
        k: Count = 2,
        layout: LayoutKind = "complete",
        budget: BudgetSplit = "uniform",
        domain: Domain | None = None,
        noise: NoiseKind | None = None,
    ) -> None:
        super().__init__(epsilon=epsilon, rho=rho, horizon=horizon, domain=domain, noise=noise)
        assert self.horizon is not None
        if self.noise not in ("laplace", "gaussian"):
            raise ParameterError(
                f"noise={self.noise!r}: the BLUE outputs are rational combinations of the "
                "node values, not integers, so exact discrete noise gains nothing here and "
                "is not supported; use noise='laplace' (epsilon=) or 'gaussian' (rho=)"
            )
        kk = check_int_range("k", k, 2, MAX_BLUE_K)
        kind = check_choice("layout", layout, LAYOUT_KINDS)
        if kind == "elders" and kk % 2 == 0:
            raise ParameterError(
                f"k={kk}: layout='elders' needs an odd k (balanced digits; Elders' node set)"
            )
        validate_budget_form(budget)
        if isinstance(budget, str) and budget.strip() == "max":
            raise ParameterError(
                f"budget={fmt(budget)}: max-optimised shares are not implemented for blue; "
                "use 'uniform', 'mean' or L per-level values"
            )
        self.k: int = kk
        """The arity."""
        self.layout_kind: str = kind
        """The node set: ``complete``, ``kary``, ``elders`` or ``elders_full``."""
        lay = self._layout(self.horizon)
        if isinstance(budget, str) and budget.strip() == "mean":
            total = self.epsilon if self.rho is None else self.rho
            assert total is not None
            split = mean_optimal_split(self.horizon, kk, kind, self.gaussian)
            budget = ",".join(str(total * q) for q in split)
            self.budget, self.level_epsilons = design_level_budget(
                self, budget, k=kk, combine=True, levels=lay.levels
            )
            self.budget = "mean"
        else:
            self.budget, self.level_epsilons = design_level_budget(
                self, budget, k=kk, combine=True, levels=lay.levels
            )
        self.level_scales: tuple[Fraction, ...] = tuple(
            level_scale(self.sensitivity, e) for e in self.level_epsilons
        )
        """``b_j = Δ/ε_j`` per level (the Laplace design at :attr:`design_epsilon`)."""
        self._weights: dict[int, Weights] = {}
        self.weights(self.horizon)  # refuses a layout whose prefixes are not identifiable

    # ------------------------------------------------------------- structure
    def levels_at(self, horizon: Any, ops: Any = EXACT) -> Any:
        """L at T = ``horizon``: :func:`~dpref.mechanisms.blue.hierarchy.blue_levels` over
        ``ops`` (symbols allowed) — the level count the budget, layout and declaration use."""
        return blue_levels(horizon, self.k, self.layout_kind, ops)

    @property
    def levels(self) -> int:
        """L at the mechanism's horizon."""
        return len(self.level_epsilons)

    def node_variances(self, horizon: int) -> tuple[Fraction | None, ...]:
        """``s_j`` per level of the tree at ``horizon`` (None above the released levels):
        :meth:`node_variance` of the level scales."""
        lay = self._layout(horizon)
        return tuple(
            self.node_variance(self.level_scales[j]) if j < lay.levels else None
            for j in range(lay.top + 1)
        )

    def weights(self, horizon: int | None = None) -> Weights:
        """The exact weights of the tree at ``horizon`` (default T): one source of truth
        for release, online, plan and variance."""
        T = self.horizon if horizon is None else horizon
        assert T is not None
        got = self._weights.get(T)
        if got is None:
            if len(self._weights) > 8:
                self._weights.clear()
            lay = self._layout(T)
            if lay.levels > self.levels:
                raise ParameterError(f"horizon={T}: needs {lay.levels} levels > {self.levels}")
            got = self._weights[T] = exact_weights(lay, self.node_variances(T))
        return got

    def decay(self) -> Decay:
        """Running counts: ``g ≡ 1``."""
        return prefix_decay()

    def extra_params(self) -> dict[str, Any]:
        out: dict[str, Any] = {"k": self.k, "layout": self.layout_kind}
        if self.budget == "mean":
            out["budget"] = "mean"
        elif self.budget != "uniform":
            vals = self.level_epsilons if self.rho is None else self.level_budget_values()
            out["budget"] = ",".join(str(e) for e in vals)
        return out

    def level_budget_values(self) -> tuple[Fraction, ...]:
        """The per-level budgets as given: ``ε_j`` (pure) or ``ρ_j = ρ·ε_j`` (zCDP)."""
        if self.rho is None:
            return self.level_epsilons
        return tuple(self.rho * e for e in self.level_epsilons)

    # ---------------------------------------------------------- declarations
    def budget_terms(self, ops: Any = EXACT, **s: Any) -> list[BudgetTerm]:
        """Item 1 lies in one released block of each of the L levels; level j's scale is
        ``Δ/ε_j``.  Uniform: one term of L nodes of scale ``Δ/(ε/L)``."""
        if self.budget == "uniform":
            eps = s.get("epsilon", self.design_epsilon)
            delta = s.get("sensitivity", self.sensitivity)
            L = self.levels_at(s.get("horizon", self.horizon), ops)
            return [BudgetTerm("level", L, level_scale(delta, uniform_split(eps, L)))]
        return [BudgetTerm(f"level {j}", 1, b) for j, b in enumerate(self.level_scales)]

    def expected_l1_sum(self, horizon: int) -> Fraction | None:
        """Item 1 lies in a released block of each level of the tree at ``horizon``."""
        return sum(self.level_epsilons[: int(self.levels_at(horizon))], Fraction(0))

    # ------------------------------------------------------------------ plan
    def _layout(self, horizon: int) -> Layout:
        return layout(horizon, self.k, self.layout_kind)

    def node_count(self, horizon: int) -> int:
        return self._layout(horizon).size

    def nodes(self, horizon: int) -> NodeTable:
        lay = self._layout(horizon)
        table = tuple(dict.fromkeys(self.level_scales[: lay.levels]))
        idx = np.array([table.index(b) for b in self.level_scales[: lay.levels]], np.int64)
        return NodeTable(lay.lo.copy(), lay.hi.copy(), table, idx[lay.level])

    def node_levels(self, horizon: int) -> IntArray:
        """The level j of each released node, canonical order (a clipped block's length is
        not a power of k, so its level is not its size's)."""
        return self._layout(horizon).level.copy()

    def release_times(self, horizon: int) -> IntArray:
        """All 1: every output uses every node (all noise is drawn at the first step)."""
        return np.ones(self.node_count(horizon), dtype=np.int64)

    def noise_scales(self, horizon: int) -> FloatArray | float:
        lay = self._layout(horizon)
        per_level = np.array([ceil_float(b) for b in self.level_scales[: lay.levels]])
        out: FloatArray = per_level[lay.level]
        return out

    def recombination(self, horizon: int) -> ExactSparse:
        """R, dense exact rows (:func:`~dpref.mechanisms.blue.rows.recombination_exact`)."""
        t_max = self._horizon_for(horizon, limit=self.max_plan_steps, limit_name="max_plan_steps")
        return _cached_rows(self.k, self.layout_kind, self.node_variances(t_max), t_max)

    def variance_exact(self, horizon: int | None = None) -> list[Fraction]:
        """``Var(out_t)`` for t = 1..T, exact (the path recursion of
        :func:`~dpref.mechanisms.blue.decode.variance_at`)."""
        T = self._variance_horizon(horizon)
        w = self.weights(T)
        return [variance_at(w, t) for t in range(1, T + 1)]

    def variance_at(self, t: int) -> Fraction:
        """``Var(out_t)`` at one step ``1 ≤ t ≤ T``, exact: the path recursion
        (:func:`~dpref.mechanisms.blue.decode.variance_at`) that :meth:`variance_exact`
        evaluates at every t — O(k·H) Fractions, at any T."""
        assert self.horizon is not None
        step = check_int_range("t", t, 1, self.horizon)
        return variance_at(self.weights(), step)

    def variance(self, horizon: int | None = None) -> FloatArray:
        """Per-step variance as floats: the exact values rounded to nearest up to
        :data:`EXACT_VARIANCE_STEPS`; above, the float recursion, within a relative
        ``2⁻³⁰`` of the exact value (checked by interval arithmetic)."""
        T = self._variance_horizon(horizon)
        if T <= EXACT_VARIANCE_STEPS:
            return np.array([float(v) for v in self.variance_exact(T)], dtype=np.float64)
        lo, hi = variance_floats(self.weights(T))
        if np.any(hi - lo > lo * 2.0**-30):
            raise ParameterError(
                f"horizon={T}: the float enclosure of the variance is wider than 2^-30 "
                "(relative); use variance_exact"
            )
        out: FloatArray = 0.5 * (lo + hi)
        return out

    def variance_upper(self, horizon: int | None = None) -> FloatArray | None:
        """Per-step floats at least the exact variance: the upper ends of the interval
        enclosure (:func:`~dpref.mechanisms.blue.variance.variance_floats`, within a relative
        ~1e-14 of the exact values); :meth:`objective` gives the exact mean and max."""
        T = self._variance_horizon(horizon)
        return variance_floats(self.weights(T))[1]

    def objective(self, kind: str = "mean") -> Fraction:
        """The exact mean (any T: O(k·H) Fractions) or maximum (T ≤ 2^20: an interval
        screen over every t) of ``Var(out_t)`` over t ≤ T
        (:func:`~dpref.mechanisms.blue.variance.objective_exact`)."""
        check_choice("kind", kind, OBJECTIVES)
        if kind == "max":  # a float screen over every t: T ≤ MAX_VARIANCE_STEPS
            self._variance_horizon(None)
        return objective_exact(self.weights(), kind)

    def target(self, stream: Any) -> FloatArray:
        """Exact prefix sums ``c_t``."""
        return np.cumsum(self._stream(stream))

    def _target_checked(self, x: FloatArray) -> FloatArray:
        return np.cumsum(x)

    def float_weights(self, horizon: int) -> FloatWeights:
        """The float weights of the batch decoder at ``horizon`` (from :meth:`weights`)."""
        return float_weights(self.weights(horizon))

    def combine(self, noise: FloatArray, horizon: int) -> FloatArray:
        """``R z`` by the tree recursions (O(T·H) per run, vectorised)."""
        lay = self._layout(horizon)
        lead = noise.shape[:-1]
        z_levels = []
        for j in range(lay.top + 1):
            canon = lay.canon[j]
            z = np.zeros((*lead, lay.count[j]), dtype=np.float64)
            have = canon >= 0
            z[..., have] = noise[..., canon[have]]
            z_levels.append(z)
        return combine_noise(z_levels, lay, self.float_weights(horizon))

    def online(self, rng: Any = None, noise: Any = None) -> OnlineCounter:
        return _BlueOnline(self, rng, noise)

    # ------------------------------------------------ keyed noise, O(k·H) memory
    @staticmethod
    def draw_key(rng: Any = None) -> tuple[int, int]:
        """A 128-bit noise key from ``rng`` (two uniform 64-bit words)."""
        words = make_rng(rng).integers(0, 2**64, size=2, dtype=np.uint64)
        return int(words[0]), int(words[1])

    def _multipliers(self) -> list[float]:
        return [self.noise_multiplier(b) for b in self.level_scales]

    def keyed_noise(self, key: Any, horizon: int | None = None) -> FloatArray:
        """The node noise of ``key`` in canonical order (:mod:`~dpref.mechanisms.blue.online`):
        ``release(stream, noise=m.keyed_noise(key))`` is what :meth:`online_keyed` outputs."""
        T = self._horizon_for(horizon)
        return keyed_noise(self.weights(T), self._multipliers(), key, self.gaussian)

    def online_keyed(self, key: Any) -> KeyedOnline:
        """A counter on the keyed node noise of ``key`` holding at most
        :meth:`online_keyed_memory` floats (O(k·H) plus a fixed work buffer) — unlike
        :meth:`online`, which draws all N node values from a sequential generator at the
        first step.  Same model (module doc): a stream fixed in advance."""
        assert self.horizon is not None
        return KeyedOnline(
            self.weights(),
            self._multipliers(),
            key,
            self.gaussian,
            functools.partial(self.domain.check_value, "x"),
        )

    def online_keyed_memory(self) -> int:
        """The most floats :meth:`online_keyed` holds at once."""
        return KeyedOnline.memory(self.k, self._layout(self._horizon_for(None)).top)

    def online_memory(self, horizon: int | None = None) -> int | None:
        """N node values and T noise outputs, held from the first step (every output uses
        every node; module doc), plus the running count."""
        T = self._horizon_for(horizon)
        return self.node_count(T) + T + 1

    @classmethod
    def frontier_variants(cls, horizon: int) -> list[dict[str, Any]]:
        """T ≤ 2^16: k = 2 … min(max(T, 2), 32) for ``complete``, ``kary`` and
        ``elders_full`` (uniform budgets).  Above: every layout with k = 2 … 5 (the Gaussian
        optimum is small k) and ``kary``/``elders_full`` with k = 9 … 22.  At every T also
        ``elders_full`` with k = 10 … 16 and ``budget="mean"`` (at most 47 designs, about 1 min
        of CPU at T = 2^20 for the exact objectives).  The best design at T = 2^4 … 2^20
        (ε = 1 and ρ = 1/2, over every k ≤ 32 of every layout) lay in these ranges;
        ``elders`` is left out (there the BLUE is Elders' decoder, a row of its own).  A
        documented search range, not a proof that no other design is better."""
        t = check_int_range("horizon", horizon, 1, None)
        kinds = ("complete", "kary", "elders_full")
        if t <= FRONTIER_FULL_T:
            ks = range(2, min(max(t, 2), 32) + 1)
            out = [{"k": k, "layout": c} for k in ks for c in kinds]
        else:
            out = [{"k": k, "layout": c} for k in range(2, 6) for c in kinds]
            out += [{"k": k, "layout": c} for k in range(9, 23) for c in kinds[1:]]
        top = min(max(t, 2), 16)
        return out + [
            {"k": k, "layout": "elders_full", "budget": "mean"} for k in range(10, top + 1)
        ]


@functools.lru_cache(maxsize=32)
def _cached_rows(
    k: int, kind: str, node_var: tuple[Fraction | None, ...], horizon: int
) -> ExactSparse:
    """:func:`recombination_exact` of one tree (cached: R depends only on the layout and the
    node variances; its arrays are read-only)."""
    rows = recombination_exact(exact_weights(layout(horizon, k, kind), node_var))
    for arr in (rows.indptr, rows.indices, rows.idx):
        arr.setflags(write=False)
    return rows


class _BlueOnline(OnlineCounter):
    """Draws every node's noise at the first step, in canonical order (the draws the batch
    path takes), and decodes it once; then each step adds the running count.  Memory
    N + T floats (:meth:`BlueTree.online_memory`)."""

    def __init__(self, m: BlueTree, rng: Any, noise: Any) -> None:
        super().__init__(m, rng, noise)
        assert m.horizon is not None
        self._m = m
        self._T = m.horizon
        self._noise_part: FloatArray | None = None
        self._count = 0.0

    def _decode(self) -> FloatArray:
        m, T = self._m, self._T
        lay = m._layout(T)
        scales = m.level_scales
        mult = [m.noise_multiplier(b) for b in scales[: lay.levels]]
        floats = [ceil_float(b) for b in scales[: lay.levels]]
        values: list[float] = []
        for j in lay.level.tolist():
            if self._injected is None:
                values.append(self._standard() * mult[j])
                self._used += 1
            else:
                values.append(self._noise(floats[j], scales[j]))
        z = np.array(values, dtype=np.float64)
        return m.combine(z, T)

    def step(self, x: Any) -> float:
        self._count += self._admit(x)
        if self._noise_part is None:
            self._noise_part = self._decode()
        return self._count + float(self._noise_part[self.t - 1])
