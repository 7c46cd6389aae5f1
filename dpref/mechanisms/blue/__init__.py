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

Model (as docs/elders.md): the stream is fixed in advance.  Every output uses every node's
noise, so all node noise is drawn at the first step (every release time is 1) and the
output at t is ``c_t + (R z)_t``: ``R·A = Q`` exactly, so the items after t cancel and the
output at t is computable from ``x_1 … x_t`` and the noise.  If later items may depend on
earlier outputs (an adaptive stream), the outputs are still a post-processing of the node
vector, but the node vector is then released against an adaptively chosen stream: the
guarantee is the one of the adaptive-continual-release setting, which this module does not
claim.

References
----------
.. [1] M. Hay, V. Rastogi, G. Miklau, D. Suciu. "Boosting the Accuracy of Differentially
   Private Histograms Through Consistency." PVLDB 3(1), 2010.
.. [2] W. Qardaji, W. Yang, N. Li. "Understanding Hierarchical Methods for Differentially
   Private Histograms." PVLDB 6(14), 2013.
.. [3] J. Honaker. "Efficient Use of Differentially Private Binary Trees." TPDP 2015.
"""

from __future__ import annotations

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
from dpref.mechanisms.blue.decode import (
    FloatWeights,
    Weights,
    combine_noise,
    exact_weights,
    float_weights,
    row_weights,
    variance_at,
)
from dpref.mechanisms.blue.hierarchy import LAYOUT_KINDS, Layout, layout
from dpref.mechanisms.blue.variance import objective_exact, variance_floats
from dpref.mechanisms.elders import MAX_K
from dpref.mechanisms.tree_arith import level_scale, uniform_split
from dpref.mechanisms.tree_budgets import (
    OBJECTIVES,
    design_level_budget,
    validate_budget_form,
)
from dpref.plan import ExactSparse
from dpref.validation import ceil_float, check_choice, check_int_range, fmt

__all__ = ["BLUE_PLAN_STEPS", "BlueTree"]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

BLUE_PLAN_STEPS = 256
"""Largest T of the exact plan: R is dense (every output uses every node), T × N exact
entries with Θ(T) distinct values."""
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
        The arity, an int 2 ≤ k ≤ 2^20 + 1 (odd for ``layout="elders"``).
    layout
        Which blocks are released: ``complete`` (default), ``kary``, ``elders`` or
        ``elders_full``.
    budget
        Per-level split of ε (or ρ): ``uniform`` (default), or L comma-separated per-level
        values summing to ε (ρ) exactly, L the number of levels with released blocks.

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
        Example({"k": 3, "layout": "elders_full"}, horizons=(16,)),
        Example({"k": 3, "layout": "kary"}, horizons=()),
        Example({"k": 4}, horizons=(16,), privacy="zcdp"),
    )

    def __init__(
        self,
        *,
        epsilon: Any = None,
        rho: Any = None,
        horizon: Any,
        k: Any = 2,
        layout: Any = "complete",
        budget: Any = "uniform",
        domain: Domain | None = None,
        noise: NoiseKindArg = None,
    ) -> None:
        super().__init__(epsilon=epsilon, rho=rho, horizon=horizon, domain=domain, noise=noise)
        assert self.horizon is not None
        if self.noise not in ("laplace", "gaussian"):
            raise ParameterError(
                f"noise={self.noise!r}: the BLUE outputs are rational combinations of the "
                "node values, not integers, so exact discrete noise gains nothing here and "
                "is not supported; use noise='laplace' (epsilon=) or 'gaussian' (rho=)"
            )
        kk = check_int_range("k", k, 2, MAX_K)
        kind = check_choice("layout", layout, LAYOUT_KINDS)
        if kind == "elders" and kk % 2 == 0:
            raise ParameterError(
                f"k={kk}: layout='elders' needs an odd k (balanced digits; Elders' node set)"
            )
        validate_budget_form(budget)
        if isinstance(budget, str) and budget.strip() in ("mean", "max"):
            raise ParameterError(
                f"budget={fmt(budget)}: optimised shares are not implemented for blue; "
                "use 'uniform' or L per-level values"
            )
        self.k: int = kk
        """The arity."""
        self.layout_kind: str = kind
        """The node set: ``complete``, ``kary``, ``elders`` or ``elders_full``."""
        lay = layout_of(self.horizon, kk, kind)
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
        """L: the levels holding released blocks at T = ``horizon`` (ints only)."""
        return layout_of(int(horizon), self.k, self.layout_kind).levels

    @property
    def levels(self) -> int:
        """L at the mechanism's horizon."""
        return len(self.level_epsilons)

    def node_variances(self, horizon: int) -> tuple[Fraction | None, ...]:
        """``s_j`` per level of the tree at ``horizon`` (None above the released levels):
        :meth:`node_variance` of the level scales."""
        lay = layout_of(horizon, self.k, self.layout_kind)
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
            lay = layout_of(T, self.k, self.layout_kind)
            if lay.levels > self.levels:
                raise ParameterError(f"horizon={T}: needs {lay.levels} levels > {self.levels}")
            got = self._weights[T] = exact_weights(lay, self.node_variances(T))
        return got

    def decay(self) -> Decay:
        """Running counts: ``g ≡ 1``."""
        return prefix_decay()

    def extra_params(self) -> dict[str, Any]:
        out: dict[str, Any] = {"k": self.k, "layout": self.layout_kind}
        if self.budget != "uniform":
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
            L = s.get("levels", self.levels)
            return [BudgetTerm("level", L, level_scale(delta, uniform_split(eps, L)))]
        return [BudgetTerm(f"level {j}", 1, b) for j, b in enumerate(self.level_scales)]

    def expected_l1_sum(self, horizon: int) -> Fraction | None:
        """Item 1 lies in a released block of each level of the tree at ``horizon``."""
        return sum(self.level_epsilons[: self.levels_at(horizon)], Fraction(0))

    # ------------------------------------------------------------------ plan
    def _layout(self, horizon: int) -> Layout:
        return layout_of(horizon, self.k, self.layout_kind)

    def node_count(self, horizon: int) -> int:
        return self._layout(horizon).size

    def nodes(self, horizon: int) -> NodeTable:
        lay = self._layout(horizon)
        table = tuple(dict.fromkeys(self.level_scales[: lay.levels]))
        idx = np.array([table.index(b) for b in self.level_scales[: lay.levels]], np.int64)
        return NodeTable(lay.lo.copy(), lay.hi.copy(), table, idx[lay.level])

    def release_times(self, horizon: int) -> IntArray:
        """All 1: every output uses every node (all noise is drawn at the first step)."""
        return np.ones(self.node_count(horizon), dtype=np.int64)

    def noise_scales(self, horizon: int) -> FloatArray | float:
        lay = self._layout(horizon)
        per_level = np.array([ceil_float(b) for b in self.level_scales[: lay.levels]])
        out: FloatArray = per_level[lay.level]
        return out

    def recombination(self, horizon: int) -> ExactSparse:
        """R, dense exact rows (:func:`~dpref.mechanisms.blue.decode.row_weights`)."""
        t_max = self._horizon_for(horizon, limit=self.max_plan_steps, limit_name="max_plan_steps")
        lay = self._layout(t_max)
        w = self.weights(t_max)
        n = lay.size
        table: dict[Fraction, int] = {}
        rows, cols, idx = [], [], []
        for t in range(1, t_max + 1):
            per_level = row_weights(w, t)
            for j, vals in enumerate(per_level):
                canon = lay.canon[j]
                for m, v in enumerate(vals):
                    c = int(canon[m])
                    if c < 0 or v == 0:
                        continue
                    rows.append(t - 1)
                    cols.append(c)
                    idx.append(table.setdefault(v, len(table)))
        return ExactSparse.from_triples(
            (t_max, n),
            np.array(rows, dtype=np.int64),
            np.array(cols, dtype=np.int64),
            tuple(table),
            np.array(idx, dtype=np.int64),
        )

    def variance_exact(self, horizon: int | None = None) -> list[Fraction]:
        """``Var(out_t)`` for t = 1..T, exact (the path recursion of
        :func:`~dpref.mechanisms.blue.decode.variance_at`)."""
        T = self._variance_horizon(horizon)
        w = self.weights(T)
        return [variance_at(w, t) for t in range(1, T + 1)]

    def variance(self, horizon: int | None = None) -> FloatArray:
        """Per-step variance as floats: the exact values rounded to nearest up to
        :data:`EXACT_VARIANCE_STEPS`; above, the float recursion, within a relative
        ``2⁻³⁰`` of the exact value (checked by interval arithmetic)."""
        T = self._variance_horizon(horizon)
        if T <= EXACT_VARIANCE_STEPS:
            return np.array([float(v) for v in self.variance_exact(T)], dtype=np.float64)
        lo, hi = variance_floats(self.weights(T))
        return 0.5 * (lo + hi)

    def objective(self, kind: str = "mean") -> Fraction:
        """The exact mean or maximum of ``Var(out_t)`` over t ≤ T
        (:func:`~dpref.mechanisms.blue.variance.objective_exact`)."""
        check_choice("kind", kind, OBJECTIVES)
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

    def online_memory(self, horizon: int | None = None) -> int | None:
        """N node values and T noise outputs, held from the first step (every output uses
        every node; module doc), plus the running count."""
        T = self._horizon_for(horizon)
        return self.node_count(T) + T + 1

    @classmethod
    def frontier_variants(cls, horizon: int) -> list[dict[str, Any]]:
        """k = 2 … 32 for ``complete`` and ``kary``, every odd k ≤ 31 for ``elders_full``,
        uniform budgets (k ≤ max(T, 2))."""
        t = check_int_range("horizon", horizon, 1, None)
        top = min(max(t, 2), 32)
        out: list[dict[str, Any]] = []
        for k in range(2, top + 1):
            out.append({"k": k, "layout": "complete"})
            out.append({"k": k, "layout": "kary"})
            if k % 2:
                out.append({"k": k, "layout": "elders_full"})
        return out


NoiseKindArg = Any


def layout_of(horizon: int, k: int, kind: str) -> Layout:
    """:func:`~dpref.mechanisms.blue.hierarchy.layout` (cached)."""
    return layout(horizon, k, kind)


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
