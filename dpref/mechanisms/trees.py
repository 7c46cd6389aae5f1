"""Tree counters of the pure-DP frontier (docs/spec.md §1.1): Honaker, KaryTree, level budgets.

Target: prefix sums ``c_t = Σ_{i≤t} x_i``.  All trees here are made of aligned k-ary
intervals ``[m k^h + 1, (m+1) k^h]`` (level h ≥ 0) inside ``[1, T]``; an item lies in at
most one node per level, item 1 in exactly one node of each of the
``L = ⌊log_k T⌋ + 1`` levels, so a split of ε into per-level budgets ``ε_h`` with
``Σ_h ε_h = ε`` (node scale ``b_h = Δ/ε_h``) makes the release ε-DP by basic composition.

* **KaryTree(k)** releases the intervals that are not the last child of their parent:
  exactly one node ends at every t, of level ``v_k(t)`` (the k-adic valuation of t).  The
  prefix ``[1, t]`` is covered by ``d_h(t)`` nodes of size ``k^h`` for the base-k digits
  ``d_h(t)`` of t, so ``Var(out_t) = Σ_h d_h(t)·2b_h²``.  ``KaryTree(k=2)`` is Binary.
* **combine=True** releases every aligned interval (the last children too; they cost
  nothing more, an item still lies in one node per level) and replaces each node's noisy
  value by the minimum-variance combination with its children's combined estimates,
  ``v = w_h·noisy + (1 − w_h)·Σ_children v``, ``w_h = V_h/σ_h²`` with ``σ_h² = 2b_h²``,
  ``1/V_h = 1/σ_h² + 1/(k V_{h−1})``, ``V_0 = σ_0²``; the output sums the combined
  estimates of the decomposition, ``Var(out_t) = Σ_h d_h(t)·V_h``.
* **Honaker** is the binary case of the combined tree (Honaker 2015, streaming form):
  with equal scales ``w_h = 2^h/(2^{h+1} − 1)`` and ``V_h = w_h·2b²``.
* **Level budgets** (every tree, Binary too): ``budget="uniform"`` (``ε_h = ε/L``),
  ``"mean"``/``"max"`` (the split minimising the mean or the maximum of ``Var(out_t)``
  over t ≤ T, found numerically and rounded to rationals on a ``2^-32`` grid with the
  largest share taking the remainder, so ``Σ_h ε_h = ε`` exactly; never worse than uniform,
  which is kept when the rounded optimum does not beat it exactly), or an explicit
  sequence of the L values ``ε_h``, which must sum to ε exactly.

References
----------
.. [1] J. Honaker. "Efficient Use of Differentially Private Binary Trees." TPDP 2015.
.. [2] T.-H. H. Chan, E. Shi, D. Song. "Private and Continual Release of Statistics."
   ACM TISSEC 14(3), 2011.
.. [3] M. Hay, V. Rastogi, G. Miklau, D. Suciu. "Boosting the Accuracy of
   Differentially Private Histograms Through Consistency." PVLDB 3(1), 2010 (the
   bottom-up pass of the k-ary tree estimate).
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any, Literal

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
from dpref.mechanisms.tree_arith import (
    combined_variances,
    combined_weights,
    digit_counts,
    digit_sums,
    digit_variances,
    level_scale,
    level_variances,
    level_weights,
    max_digit_vectors,
    tree_levels,
    tree_objective,
    uniform_split,
)
from dpref.mechanisms.tree_budgets import (
    BUDGET_GRID,
    BUDGETS,
    MAX_BUDGET_STRING,
    MAX_LEVEL_NOISE,
    OBJECTIVES,
    check_combine,
    check_k,
    design_level_budget,
    level_budget,
    validate_budget_form,
)
from dpref.mechanisms.tree_layout import LAYOUTS, cat, prefix_sum_of_nodes, valuations
from dpref.noise import NoiseKind
from dpref.plan import ExactSparse
from dpref.types import Budget, BudgetSplit, Count, Horizon
from dpref.validation import ceil_float, check_choice, fmt

__all__ = [
    "AUTO_K_MAX",
    "BUDGETS",
    "BUDGET_GRID",
    "FRONTIER_K_MAX",
    "MAX_BUDGET_STRING",
    "MAX_LEVEL_NOISE",
    "OBJECTIVES",
    "Honaker",
    "KaryTree",
    "check_combine",
    "check_k",
    "combined_variances",
    "combined_weights",
    "design_level_budget",
    "digit_counts",
    "digit_sums",
    "digit_variances",
    "level_budget",
    "level_variances",
    "level_weights",
    "max_digit_vectors",
    "tree_levels",
    "tree_objective",
]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

AUTO_K_MAX = 64
"""``k="auto"`` searches k = 2 … min(max(T, 2), AUTO_K_MAX)."""
FRONTIER_K_MAX = 32
"""``KaryTree.frontier_variants`` lists k = 2 … min(max(T, 2), FRONTIER_K_MAX)."""


# --------------------------------------------------------------------- the mechanisms
class _Tree(Mechanism):
    """A k-ary tree counter with per-level budgets, optionally combined (module doc)."""

    proof = "proofs/trees.py"
    docs = "docs/trees.md"

    k: int
    """The arity."""
    combine_children: bool
    """Whether every node is released and combined with its children."""
    budget: str
    """``"uniform"``, ``"mean"``, ``"max"`` or ``"explicit"``."""
    level_epsilons: tuple[Fraction, ...]
    """``ε_h`` per level (they sum to ε exactly)."""

    def _setup(self, k: int, combine: bool, budget: Any) -> None:
        assert self.horizon is not None
        self.k = k
        self.combine_children = combine
        self.budget, self.level_epsilons = design_level_budget(
            self, budget, k=k, combine=combine, levels=self.levels_at(self.horizon)
        )
        self.level_scales: tuple[Fraction, ...] = tuple(
            self.level_scale(e) for e in self.level_epsilons
        )
        """``b_h = Δ/ε_h`` per level, exact (the Laplace design at :attr:`design_epsilon`):
        :meth:`level_scale` of each share, the function :meth:`budget_terms` declares with."""
        node_var = [self.node_variance(b) for b in self.level_scales]
        self._variances = combined_variances(node_var, k, combine)
        self._weights = combined_weights(node_var, k) if combine else (Fraction(1),) * self.levels
        table: list[Fraction] = []
        for b in self.level_scales:
            if b not in table:
                table.append(b)
        self._scale_table = tuple(table)
        self._scale_of_level = np.array([table.index(b) for b in self.level_scales], dtype=np.int64)
        self._scale_floats = np.array([ceil_float(b) for b in self.level_scales])
        self.level_multipliers: npt.NDArray[np.float64] = np.array(
            [self.noise_multiplier(b) for b in self.level_scales]
        )
        """Per level, the float a standard draw is multiplied by (rounded up): every path
        — batch, ``release_many``, ``online()`` — indexes this one array by node level."""

    # ------------------------------------------------- the one level/scale source
    def levels_at(self, horizon: Any, ops: Any = EXACT) -> Any:
        """``L = ⌊log_k T⌋ + 1``: :func:`~dpref.mechanisms.tree_arith.tree_levels` over
        ``ops`` — the level count the budget, the layout cap and the declaration use."""
        return tree_levels(horizon, self.k, ops)

    def level_scale(self, share: Any, sensitivity: Any = None) -> Any:
        """``b = Δ/ε_h``: the Laplace scale of a level with budget share ``share``
        (:func:`~dpref.mechanisms.tree_arith.level_scale`; ``sensitivity`` defaults to
        Δ, symbols allowed)."""
        return level_scale(self.sensitivity if sensitivity is None else sensitivity, share)

    # ----------------------------------------------------------- declarations
    @property
    def levels(self) -> int:
        """``L = ⌊log_k T⌋ + 1``."""
        return len(self.level_epsilons)

    def level_budget_values(self) -> tuple[Fraction, ...]:
        """The per-level budgets as given: ``ε_h`` (pure; they sum to ε) or ``ρ_h`` (zCDP;
        they sum to ρ, ``ρ_h = ρ·ε_h`` with ε_h the design shares)."""
        if self.rho is None:
            return self.level_epsilons
        return tuple(self.rho * e for e in self.level_epsilons)

    def decay(self) -> Decay:
        """Running counts: ``g ≡ 1``."""
        return prefix_decay()

    def budget_terms(self, ops: Any = EXACT, **s: Any) -> list[BudgetTerm]:
        """Item 1 lies in one node of each level; level h has scale ``b_h = Δ/ε_h``.

        Uniform: one term, ``L = levels_at(T)`` nodes of scale
        ``level_scale(uniform_split(ε, L))`` — evaluated over ``ops`` with the ``horizon``,
        ``epsilon`` and ``sensitivity`` given (symbols in the proofs); otherwise one term
        per level, of the scales the release draws with (:attr:`level_scales`).
        """
        if self.budget == "uniform":
            eps = s.get("epsilon", self.design_epsilon)
            delta = s.get("sensitivity", self.sensitivity)
            L = self.levels_at(s.get("horizon", self.horizon), ops)
            return [BudgetTerm("level", L, self.level_scale(uniform_split(eps, L), delta))]
        return [BudgetTerm(f"level {h}", 1, b) for h, b in enumerate(self.level_scales)]

    def variance_of_levels(self) -> tuple[Fraction, ...]:
        """``V_h``: the exact variance of one level-h estimate in the decomposition."""
        return self._variances

    def weights(self) -> tuple[Fraction, ...]:
        """``w_h``: the exact weight of a node's own noisy value in its estimate."""
        return self._weights

    def objective(self, kind: str = "mean") -> Fraction:
        """The exact mean or maximum of ``Var(out_t)`` over t ≤ T."""
        check_choice("kind", kind, OBJECTIVES)
        assert self.horizon is not None
        return tree_objective(self._variances, self.horizon, self.k, kind)

    def expected_l1_sum(self, horizon: int) -> Fraction | None:
        levels = self.levels_at(horizon)
        return sum(self.level_epsilons[:levels], Fraction(0))

    def target(self, stream: Any) -> FloatArray:
        """Exact prefix sums ``c_t``."""
        return self._target_checked(self._stream(stream))

    def _target_checked(self, x: FloatArray) -> FloatArray:
        return np.cumsum(x)

    # ------------------------------------------------------------------ plan
    def node_count(self, horizon: int) -> int:
        if not self.combine_children:
            return horizon
        total, p = 0, 1
        while p <= horizon:
            total += horizon // p
            p *= self.k
        return total

    def _node_levels(self, horizon: int) -> tuple[IntArray, IntArray]:
        """(end, level) of every node released up to ``horizon``, canonical order."""
        # the layout's levels (end_level), capped by the class's level count
        v = np.minimum(valuations(horizon, self.k), self.levels_at(horizon) - 1)
        t = np.arange(1, horizon + 1, dtype=np.int64)
        if not self.combine_children:
            return t, v
        off, _ = LAYOUTS.get((horizon, self.k))
        count = np.diff(off)
        hi = np.repeat(t, count)
        level = np.arange(int(off[-1]), dtype=np.int64) - np.repeat(off[:-1], count)
        return hi, level

    def nodes(self, horizon: int) -> NodeTable:
        hi, level = self._node_levels(horizon)
        size = np.asarray(self.k, dtype=np.int64) ** level
        return NodeTable(hi - size + 1, hi, self._scale_table, self._scale_of_level[level])

    def noise_scales(self, horizon: int) -> FloatArray | float:
        if len(self._scale_table) == 1:
            return float(self._scale_floats[0])
        held = self.__dict__.get("_scales_at")
        if held is not None and held[0] == horizon:
            out: FloatArray = held[1]
            return out
        _, level = self._node_levels(horizon)
        out = self._scale_floats[level]
        out.setflags(write=False)
        self._scales_at = (horizon, out)  # the last horizon's per-node scales (read-only)
        return out

    def noise_multipliers(self, horizon: int) -> FloatArray | float:
        if self.rho is None:
            return self.noise_scales(horizon)
        if len(self._scale_table) == 1:
            return float(self.level_multipliers[0])
        _, level = self._node_levels(horizon)
        out: FloatArray = self.level_multipliers[level]
        return out

    def recombination(self, horizon: int) -> ExactSparse:
        k = self.k
        levels = self.levels_at(horizon)
        t = np.arange(1, horizon + 1, dtype=np.int64)
        rows_all: list[IntArray] = []
        cols_all: list[IntArray] = []
        idx_all: list[IntArray] = []
        table: list[Fraction] = []
        w = self._weights
        if self.combine_children:
            off, _ = LAYOUTS.get((horizon, k))
        for h in range(levels):
            p = k**h
            d = (t // p) % k
            rows = np.repeat(t - 1, d)
            base = np.repeat((t // (p * k)) * (p * k), d)
            first = np.repeat(np.cumsum(d) - d, d)
            i = np.arange(int(d.sum()), dtype=np.int64) - first  # 0 … d_h(t)−1
            starts = base + i * p  # the node covers [start+1, start+p]
            if not self.combine_children:
                rows_all.append(rows)
                cols_all.append(starts + p - 1)  # node index = its end − 1
                idx_all.append(np.zeros(rows.size, dtype=np.int64))
                continue
            # every node of the subtree below: level j, ends start + (m+1)k^j
            for j in range(h + 1):
                q = k**j
                coef = w[j]
                for g in range(j + 1, h + 1):
                    coef *= 1 - w[g]
                if coef not in table:
                    table.append(coef)
                ends = (starts[:, None] + q * np.arange(1, p // q + 1, dtype=np.int64)).ravel()
                rows_all.append(np.repeat(rows, p // q))
                cols_all.append(off[ends - 1] + j)
                idx_all.append(np.full(ends.size, table.index(coef), dtype=np.int64))
        n = self.node_count(horizon)
        return ExactSparse.from_triples(
            (horizon, n),
            cat(rows_all),
            cat(cols_all),
            tuple(table) if self.combine_children else (Fraction(1),),
            cat(idx_all),
        )

    def variance_exact(self, horizon: int | None = None) -> list[Fraction]:
        return digit_variances(self._variance_horizon(horizon), self.k, self._variances)

    def online_memory(self, horizon: int | None = None) -> int | None:
        """Per level the prefix count where its open node began, the sum of its finished
        children's estimates and the decomposition's estimate; the count and the total."""
        return 3 * self.levels + 2

    def variance_counts(
        self, horizon: int | None = None
    ) -> tuple[tuple[Fraction, ...], npt.NDArray[np.integer[Any]]]:
        """``(V_0 … V_{L−1}, d_h(t))``: ``Var(out_t) = Σ_h d_h(t)·V_h``."""
        t_max = self._horizon_for(horizon)
        levels = self.levels_at(t_max)
        return tuple(self._variances[:levels]), digit_counts(t_max, self.k, levels)

    def combine(self, noise: FloatArray, horizon: int) -> FloatArray:
        if not self.combine_children:
            return prefix_sum_of_nodes(noise, self.k)
        k = self.k
        _, pos = LAYOUTS.get((horizon, k))
        lead = noise.shape[:-1]
        est = np.take(noise, pos[0], axis=-1)
        y = est  # level 0's estimates; each level's children are summed before y changes
        p = 1
        for h in range(1, min(len(pos), self.levels)):  # the class's levels
            p *= k
            n_h = pos[h].size
            if k == 2:
                child = est[..., 0 : 2 * n_h : 2] + est[..., 1 : 2 * n_h : 2]
            else:
                child = est[..., : n_h * k].reshape((*lead, n_h, k)).sum(axis=-1)
            w = float(self._weights[h])
            est = np.take(noise, pos[h], axis=-1)
            est *= w
            child *= 1.0 - w
            est += child
            y[..., p - 1 :: p] = est
        return prefix_sum_of_nodes(y, k)

    def online(self, rng: Any = None, noise: Any = None) -> OnlineCounter:
        return _TreeOnline(self, rng, noise)

    def extra_params(self) -> dict[str, Any]:
        out: dict[str, Any] = {"k": self.k}
        if self.combine_children:
            out["combine"] = True
        if self.budget != "uniform":
            out["budget"] = (
                self.budget
                if self.budget != "explicit"
                else ",".join(str(e) for e in self.level_budget_values())
            )
        return out


class _TreeOnline(OnlineCounter):
    """O(L) state: per level the prefix count where its open node started, the sum of the
    combined estimates of its finished children, and the decomposition's estimates."""

    def __init__(self, m: _Tree, rng: Any, noise: Any) -> None:
        super().__init__(m, rng, noise)
        self._k = m.k
        self._combine = m.combine_children
        self._scales = m.level_scales
        self._scales_f = [float(s) for s in m.level_multipliers]
        self._w = [float(w) for w in m.weights()]
        L = m.levels
        self._start = [0.0] * L  # prefix count when the open node of each level began
        self._child = [0.0] * L  # Σ combined estimates of its finished children
        self._digit = [0.0] * L  # Σ estimates of the decomposition's level-h nodes
        self._count = 0.0
        self._total = 0.0
        self._L = L
        self._fast = self._injected is None and m.noise in ("laplace", "gaussian")
        """Take standard Laplace (normal) draws from the buffer directly (same draws, same
        order)."""

    def _draws(self, n: int) -> list[float]:
        """The next n standard Laplace draws of the buffered stream (the draws ``_noise``
        would take, in the same order)."""
        buf, pos = self._buf, self._buf_pos
        if pos + n <= len(buf):
            self._buf_pos = pos + n
            self._used += n
            return buf[pos : pos + n]
        self._used += n
        return [self._standard() for _ in range(n)]

    def step(self, x: Any) -> float:
        c = self._count + self._admit(x)
        self._count = c
        t = self.t
        k = self._k
        top = self._L - 1
        if k == 2:
            v = (t & -t).bit_length() - 1
            if v > top:
                v = top
        else:
            v = 0
            while v < top and t % k == 0:
                t //= k
                v += 1
        start, digit = self._start, self._digit
        scales_f = self._scales_f
        fast = self._fast
        if self._combine:
            child, w = self._child, self._w
            z = self._draws(v + 1) if fast else None
            est = 0.0
            for h in range(v + 1):
                noise = (
                    z[h] * scales_f[h]
                    if z is not None
                    else self._noise(scales_f[h], self._scales[h])
                )
                noisy = c - start[h] + noise
                est = noisy if h == 0 else w[h] * noisy + (1.0 - w[h]) * child[h]
                child[h] = 0.0
                start[h] = c
                if h < top:
                    child[h + 1] += est
        else:
            pos = self._buf_pos
            if fast and pos < len(self._buf):
                self._buf_pos = pos + 1
                self._used += 1
                noise = self._buf[pos] * scales_f[v]
            else:
                noise = self._noise(scales_f[v], self._scales[v])
            est = c - start[v] + noise
            for h in range(v + 1):
                start[h] = c
        dropped = 0.0
        for h in range(v):
            dropped += digit[h]
            digit[h] = 0.0
        digit[v] += est
        self._total += est - dropped
        return self._total


class KaryTree(_Tree):
    """The k-ary tree counter: aligned k-ary intervals except last children.

    Level h holds the intervals ``[m k^h + 1, (m+1)k^h]`` that are not the last child of
    their parent (``(m+1) mod k ≠ 0``): exactly one node ends at each t, of level
    ``v_k(t)``; ``L = ⌊log_k T⌋ + 1`` levels, item 1 in all of them, so uniform scales are
    ``LΔ/ε``.  The output at t sums the ``d_h(t)`` nodes of size ``k^h`` of the base-k
    digits of t: ``Var(out_t) = Σ_h d_h(t)·2b_h²``.  ``KaryTree(k=2)`` has Binary's plan.
    With ``combine=True`` every interval is released and each node's estimate is combined
    with its k children's (Honaker-style, exact weights; see :mod:`dpref.mechanisms.trees`).

    Parameters
    ----------
    k
        The arity, an int 2 ≤ k ≤ 2^62, or ``"auto"`` (default): the k in
        2 … min(max(T, 2), 64) with the smallest exact objective (ties: the smallest k).
        A k > T is accepted: the tree is then T leaves of scale Δ/ε, Simple II's plan.
    combine
        Release every interval and combine each node with its k children (default false;
        ``true``/``false`` on the command line).
    budget
        Per-level split of ε: ``uniform`` (default), ``mean`` or ``max`` (minimise the
        mean or maximum variance over t ≤ T; exact rationals summing to ε), or L
        comma-separated per-level ε_h summing to ε exactly.
    objective
        What ``k="auto"`` minimises over t ≤ T: ``mean`` (default) or ``max`` variance.

    References
    ----------
    .. [1] Chan, Shi, Song 2011 (the binary mechanism, k = 2).
    .. [2] Hay, Rastogi, Miklau, Suciu 2010 (k-ary trees and their bottom-up estimate).
    """

    name = "kary"
    examples = (
        Example({"k": 3}, horizons=(10, 16)),
        Example({"k": 4, "combine": True}, horizons=(16,)),
        Example({"k": "auto"}, horizons=(16,)),
        Example({"k": 3, "budget": "max"}, horizons=()),
        Example({"k": 3}, horizons=(16,), privacy="zcdp"),
        Example({"k": 4, "combine": True}, horizons=(), privacy="zcdp"),
    )

    def __init__(
        self,
        *,
        epsilon: Budget | None = None,
        rho: Budget | None = None,
        horizon: Horizon,
        k: Count | Literal["auto"] = "auto",
        combine: bool = False,
        budget: BudgetSplit = "uniform",
        objective: Literal["mean", "max"] = "mean",
        domain: Domain | None = None,
        noise: NoiseKind | None = None,
    ) -> None:
        super().__init__(epsilon=epsilon, rho=rho, horizon=horizon, domain=domain, noise=noise)
        assert self.horizon is not None
        arity = check_k(k)
        flag = check_combine(combine)
        self.objective_kind: str = check_choice("objective", objective, OBJECTIVES)
        validate_budget_form(budget)
        self.auto = arity == "auto"
        if self.auto and not (isinstance(budget, str) and budget.strip() in BUDGETS):
            raise ParameterError(
                f"budget={fmt(budget)}: an explicit per-level split needs an explicit k "
                "(k='auto' compares trees with different numbers of levels)"
            )
        if isinstance(arity, str):
            arity = self.choose_k(
                self.horizon,
                combine=flag,
                budget=budget,
                objective=self.objective_kind,
                epsilon=self.design_epsilon,
                gaussian=self.gaussian,
            )
        self._setup(arity, flag, budget)

    @staticmethod
    def choose_k(
        horizon: int,
        *,
        combine: bool,
        budget: Any,
        objective: str,
        epsilon: Fraction,
        gaussian: bool = False,
    ) -> int:
        """The k in 2 … min(max(T, 2), AUTO_K_MAX) with the smallest exact objective (the
        Gaussian one, node variances ``∝ 1/ε_h``, when ``gaussian``)."""
        best: tuple[Fraction, int] | None = None
        for k in range(2, min(max(horizon, 2), AUTO_K_MAX) + 1):
            _, eps_h = level_budget(
                budget, epsilon=epsilon, horizon=horizon, k=k, combine=combine, gaussian=gaussian
            )
            node_var = [1 / e if gaussian else 2 / (e * e) for e in eps_h]
            var = combined_variances(node_var, k, combine)
            value = tree_objective(var, horizon, k, objective)
            if best is None or value < best[0]:
                best = (value, k)
        assert best is not None
        return best[1]

    @classmethod
    def frontier_variants(cls, horizon: int) -> list[dict[str, Any]]:
        """Every k in 2 … min(max(T, 2), 32), uncombined and combined, with the uniform
        budget; and for k ≤ 16 the optimised ``"mean"`` and ``"max"`` budgets too (each
        optimisation takes up to about a second at T = 2^20)."""
        top = min(max(horizon, 2), FRONTIER_K_MAX)
        out: list[dict[str, Any]] = []
        for k in range(2, top + 1):
            for c in (False, True):
                out.append({"k": k, "combine": c, "budget": "uniform"})
                if k <= FRONTIER_K_MAX // 2:
                    out += [{"k": k, "combine": c, "budget": b} for b in ("mean", "max")]
        return out

    def extra_params(self) -> dict[str, Any]:
        out = super().extra_params()
        if self.auto:
            out["k"] = f"auto→{self.k}"
            out["objective"] = self.objective_kind
        return out


class Honaker(_Tree):
    """Honaker's tree (streaming): every aligned dyadic node, combined with its children.

    Every aligned interval ``[m2^h + 1, (m+1)2^h] ⊆ [1, T]`` is released when complete with
    ``Lap(LΔ/ε)``, ``L = ⌊log₂T⌋ + 1`` (each item lies in one node per level).  A node's
    estimate is ``v = w_h·noisy + (1 − w_h)(v_left + v_right)`` with ``w_0 = 1`` and
    ``w_h = 2^h/(2^{h+1} − 1)`` (exact rationals), the minimum-variance weight; its
    variance is ``w_h·2(LΔ/ε)²``.  The output at t sums the estimates of the nodes of t's
    binary decomposition: ``Var(out_t) = Σ_{h ∈ bits(t)} 2(LΔ/ε)²·2^h/(2^{h+1} − 1)``.
    For this node set that is the best linear unbiased causal estimate (proofs/trees.py).
    It is ``KaryTree(k=2, combine=True)``.  With a non-uniform ``budget`` the weights are
    ``w_h = V_h/σ_h²`` for the level scales (module docstring).

    Parameters
    ----------
    budget
        Per-level split of ε: ``uniform`` (default), ``mean`` or ``max`` (minimise the
        mean or maximum variance over t ≤ T; exact rationals summing to ε), or L
        comma-separated per-level ε_h summing to ε exactly.

    References
    ----------
    .. [1] J. Honaker. "Efficient Use of Differentially Private Binary Trees." TPDP 2015
       (the streaming form: TensorFlow Privacy's ``EfficientTreeAggregator``).
    """

    name = "honaker"
    examples = (
        Example(horizons=(1, 5, 16)),
        Example({"budget": "mean"}, horizons=()),
        Example(horizons=(16,), privacy="zcdp"),
    )

    def __init__(
        self,
        *,
        epsilon: Budget | None = None,
        rho: Budget | None = None,
        horizon: Horizon,
        budget: BudgetSplit = "uniform",
        domain: Domain | None = None,
        noise: NoiseKind | None = None,
    ) -> None:
        super().__init__(epsilon=epsilon, rho=rho, horizon=horizon, domain=domain, noise=noise)
        validate_budget_form(budget)
        self._setup(2, True, budget)

    @staticmethod
    def uniform_weight(h: int) -> Fraction:
        """``w_h = 2^h/(2^{h+1} − 1)``: the weight with equal scales at every level."""
        return Fraction(2**h, 2 ** (h + 1) - 1)

    @classmethod
    def frontier_variants(cls, horizon: int) -> list[dict[str, Any]]:
        """Each level budget."""
        return [{"budget": b} for b in BUDGETS]

    def extra_params(self) -> dict[str, Any]:
        out = super().extra_params()
        out.pop("k", None)
        out.pop("combine", None)
        return out
