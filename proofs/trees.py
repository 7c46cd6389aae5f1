"""Proofs for the tree counters (docs/spec.md §1.1): Honaker and KaryTree, with level budgets.

Notation: a k-ary tree over ``[1, T]`` has levels h ≥ 0 of aligned intervals
``[m k^h + 1, (m+1)k^h]``; ``d_h(t)`` is the h-th base-k digit of t; level h has Laplace
scale ``b_h = Δ/ε_h``, node variance ``σ_h² = 2b_h²``.

Theorem (membership).  Item 1 lies in exactly one released node of each level
``h = 0 … ⌊log_k T⌋``, and every item lies in at most one node per level; so the
worst item lies in ``L = ⌊log_k T⌋ + 1`` nodes.

Proof.  For a fixed h the aligned intervals partition the items, so an item lies in at
most one node of level h.  Item 1's level-h interval is ``[1, k^h]``: released iff
``k^h ≤ T`` (complete by T; it is the first child, m = 0, never a last child since
k ≥ 2), i.e. ``h ≤ ⌊log_k T⌋`` (log_k increasing, h an integer).  ∎

Theorem (budget).  With uniform scales ``LΔ/ε`` the worst item's privacy sum is
``L·Δ/(LΔ/ε) = ε``; with a level budget it is ``Σ_h Δ/b_h = Σ_h ε_h = ε`` (the class
checks the ε_h sum to ε exactly).  Basic composition of the nodes' Laplace releases
(Dwork et al. 2006).  ∎

Theorem (weights).  For independent unbiased estimates ``a`` (variance σ²) and ``s``
(variance kV) of the same quantity, ``w·a + (1−w)·s`` is unbiased with variance
``w²σ² + (1−w)²kV``, minimised exactly at ``w = kV/(σ² + kV)`` with minimum
``σ²kV/(σ² + kV)``.  With equal scales and k = 2 (Honaker), ``V_h = c_h σ²`` with
``c_0 = 1``, ``c_h = 2c_{h−1}/(1 + 2c_{h−1})``, solved by ``c_h = 2^h/(2^{h+1} − 1)``,
and ``w_h = c_h``.  ∎

Theorem (unbiasedness).  Every combined estimate is ``Σ`` over its subtree with total
weight 1 on each of its items: by induction, a level-h node gives its own noisy value
weight ``w_h`` and each child's estimate ``1 − w_h``; an item lies in exactly one child,
so its weight is ``w_h + (1 − w_h)·1 = 1``.  The decomposition nodes partition
``[1, t]``, so ``E[out_t] = c_t``.  ∎

Theorem (best linear unbiased causal).  Let the released nodes by t be every complete
aligned interval inside ``[1, t]`` (combined trees).  Each lies inside exactly one node
of t's decomposition (aligned intervals are nested or disjoint, and the decomposition
nodes are the maximal aligned intervals inside ``[1, t]``), so the observations split
into independent groups, one per decomposition node D, each involving only the items of
D.  The best linear unbiased estimate of ``c_t = Σ_D x(D)`` is then the sum of the best
estimates of each ``x(D)`` from D's subtree; and in a subtree the bottom-up estimate is
best: by induction, the children's subtrees are independent, their best estimates sum
to the best estimate of the parent's total from them, and combining it with the
parent's own noisy value is the two-estimate case of the weights theorem.  For the
uncombined KaryTree the t nodes released by t have a triangular (hence invertible)
incidence matrix, so the decomposition is the only linear unbiased estimate.  The
statement is checked exactly against the Gauss–Markov estimate
``r = D⁻¹A(AᵀD⁻¹A)⁻¹1`` for every t ≤ T at small T, in Fractions.  ∎

How the proofs touch the code.  *membership* and *budget* are proven about the code for every
``1 ≤ T ≤ 2⁶²``: z3 evaluates the class's ``levels_at`` and the release rule ``end_level`` /
``item_one_levels`` (:mod:`dpref.mechanisms.tree_arith`, written over an ``ops`` namespace)
and ``budget_terms`` is evaluated at a symbolic T, its membership compared by z3 with the
independent count ``⌊log_k T⌋ + 1`` (:mod:`proofs.tree_smt`); *budget (level splits)* evaluates
``level_scale`` over symbolic shares.  The other rows are lemmas (no class code) or exhaustive
checks, labelled as such.

References
----------
.. [1] J. Honaker. "Efficient Use of Differentially Private Binary Trees." TPDP 2015.
.. [2] M. Hay, V. Rastogi, G. Miklau, D. Suciu. "Boosting the Accuracy of Differentially
   Private Histograms Through Consistency." PVLDB 3(1), 2010.
.. [3] C. Dwork, F. McSherry, K. Nissim, A. Smith. "Calibrating Noise to Sensitivity in
   Private Data Analysis." TCC 2006.
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np
import sympy as sp

import dpref.mechanisms.tree_arith as tree_arith
from dpref.errors import ParameterError
from dpref.mechanisms import Honaker, KaryTree, Mechanism
from dpref.mechanisms.base import MAX_HORIZON
from dpref.mechanisms.tree_arith import level_scale, uniform_split
from dpref.mechanisms.trees import tree_levels
from proofs.core import (
    ClaimResult,
    Delta,
    Outcome,
    ProofFailure,
    about_code,
    check_identity,
    check_sign,
    checked,
    eps,
    label,
    lemma,
    run_claim,
)
from proofs.smt import primitive_lemmas
from proofs.tree_smt import (
    CountZ3Ops,
    FreeEnd,
    declared_budget_steps,
    levels_characterised,
    prove_for_all_T,
)

__all__ = ["PROOFS", "gls_row"]

EPSILON = Fraction(7, 10)
"""ε used by the exhaustive checks."""
PLAN_LIMIT = 512
"""Largest T whose whole plan (O(T²) recombination entries when combined) is checked
against the closed-form variance here; ``dpref verify`` covers larger T."""
GLS_LIMIT = {2: 32, 3: 27, 4: 16}
SMT_ARITIES = (*range(2, 65), 2**31, 2**62)
"""The arities whose level facts are proven for every T ≤ 2⁶² (k = 2 … 64 is the range of
``k="auto"``; a larger k has at most a few levels, shown at 2³¹ and 2⁶²)."""
"""Per arity, the largest T of the exact Gauss–Markov comparison."""

h = sp.Symbol("h", integer=True, nonnegative=True)
kk = sp.Symbol("k", integer=True, positive=True)
Lsym = sp.Symbol("L", integer=True, positive=True)


# --------------------------------------------------------------------------- claims
def _instance(cls: type[Any], k: int, **kw: Any) -> Any:
    """An instance of ``cls`` with arity k (Honaker has no k: it is binary)."""
    if issubclass(cls, Honaker):
        return cls(epsilon=EPSILON, horizon=16, **kw)
    return cls(epsilon=EPSILON, horizon=16, k=k, **kw)


def _arities(cls: type[Any]) -> tuple[int, ...]:
    return (2,) if issubclass(cls, Honaker) else SMT_ARITIES


def _usable(ops: CountZ3Ops, T_: Any, k: int) -> Callable[[int], Any]:
    """Level j of a k-ary tree is usable by T iff its first node ``[1, k^j]`` is complete,
    ``k^j ≤ T`` (false past 2⁶² for a bit-vector T ≤ 2⁶²)."""
    return lambda j: ops.le(k**j, T_) if k**j <= MAX_HORIZON else ops.z3.BoolVal(False)


def _top(k: int) -> int:
    """The first j with ``k^j > 2⁶²``."""
    j, p = 0, 1
    while p <= MAX_HORIZON:
        j, p = j + 1, p * k
    return j


def _membership(cls: type[Any]) -> Outcome:
    ops = CountZ3Ops()
    T_ = ops.var("T")
    steps = primitive_lemmas()
    done = []
    for k_ in _arities(cls):
        m = _instance(cls, k_)
        L = m.levels_at(T_, ops)
        end = FreeEnd(ops.z3)
        parts = [
            levels_characterised(ops, L, _usable(ops, T_, k_), _top(k_)),
            ops.lt(tree_arith.end_level(end, T_, k_, ops), L),  # no released node at a level ≥ L
        ]
        for comb in (False, True) if issubclass(cls, KaryTree) else (m.combine_children,):
            parts.append(ops.eq(tree_arith.item_one_levels(T_, k_, comb, ops), L))
        how = prove_for_all_T(ops.z3.And(*parts), f"{m!r}: levels and item 1's nodes", ops, T_)
        done.append(f"k={k_} ({how})")
    return about_code(
        "for every 1 ≤ T ≤ 2⁶² and each arity proven (k = 2 … 64, 2³¹, 2⁶²; Honaker k = 2; "
        "other k are not covered): levels_at(T) = ⌊log_k T⌋ + 1 (j < L ⟺ k^j ≤ T); item 1 lies in "
        "a released node of each level < L (the release rule end_level, uncombined and "
        "combined); no node of level ≥ L is released at any end; so the worst item lies in "
        "L nodes (an item lies in one aligned interval per level)",
        evaluates=[cls.levels_at, tree_levels, tree_arith.end_level, tree_arith.item_one_levels],
        detail="z3 over 64-bit T (8-bit level counts), every end's divisibility pattern free; "
        f"primitives: {', '.join(steps)}; arities {', '.join(done)}",
    )


def _budget(cls: type[Any]) -> Outcome:
    ops = CountZ3Ops()
    T_ = ops.var("T")
    done = []
    for k_ in _arities(cls):
        m = _instance(cls, k_)
        what = "⌊log_k T⌋ + 1"
        declared_budget_steps(m, k_, T_, _usable(ops, T_, k_), _top(k_), what, ops)
        for horizon in sorted(x for x in {1, 2, k_, k_ * k_ - 1, 100, 4096} if x <= 4096):
            mt = _instance_at(cls, k_, horizon)
            (term,) = mt.budget_terms()
            drawn = set(mt.nodes(horizon).scale_table)
            if (
                term.membership != mt.levels
                or drawn != {term.scale}
                or any(b != term.scale for b in mt.level_scales)
            ):
                raise ProofFailure(
                    f"{mt!r}: declared {term} but the release draws scales {sorted(drawn)} "
                    f"over {mt.levels} levels"
                )
        done.append(f"k={k_}")
    return about_code(
        "Σ_{n ∋ item} Δ/b_n = ε for every 1 ≤ T ≤ 2⁶² (uniform level budget; the arities of "
        "the membership row)",
        evaluates=[cls.budget_terms, cls.levels_at, cls.level_scale, uniform_split, tree_levels],
        detail="budget_terms evaluated at symbolic T, ε, Δ (its level count a sum of "
        "indicators [k^j ≤ T]): Σ membership·Δ/scale = ε by sympy with the indicators "
        "free; the declared membership proven = ⌊log_k T⌋ + 1 (j < M ⟺ k^j ≤ T) by z3 for "
        "every T ≤ 2⁶² — the independent count of the membership claim; the declared "
        "scale is the one nodes() and online() draw (level_scales) at T ∈ {1, 2, k, k²−1, "
        f"100, 4096}}; arities {', '.join(done)}",
        value="ε",
    )


def _splits(cls: type[Any]) -> Outcome:
    m = _instance(cls, 3, budget="mean")
    q = sp.IndexedBase("q", positive=True)
    hh = sp.Symbol("h", integer=True, nonnegative=True)
    total = sp.Sum(Delta / m.level_scale(q[hh] * eps, Delta), (hh, 0, Lsym - 1))
    check_identity(
        sp.simplify(total.doit()), eps * sp.Sum(q[hh], (hh, 0, Lsym - 1)), "Σ_h Δ/b_h = ε·Σ_h q_h"
    )
    return about_code(
        "any per-level split ε_h = q_h·ε (q_h > 0, Σ_h q_h = 1) over any number L of levels "
        "costs Σ_h Δ/level_scale(ε_h) = ε",
        evaluates=[cls.level_scale, level_scale],
        detail="sympy over symbolic Δ, ε, L and shares q_h; level_budget accepts a split only "
        "with levels_at(T) positive values summing to ε exactly (the membership claim's L), "
        "and budget_terms declares the level_scales the release draws — both checked on "
        "instances by 'budget (level splits) = instances'",
        value="ε",
    )


def _splits_instances(cls: type[Any], limit: int) -> Outcome:
    top = min(limit, 64)
    for T_ in range(1, top + 1):
        for k_ in (2,) if issubclass(cls, Honaker) else (2, 3, 5):
            L = tree_levels(T_, k_)
            split = [EPSILON * f for f in _split(L)]
            kinds: list[Any] = [",".join(map(str, split))]
            if T_ in (17, 64):
                kinds += ["mean", "max"]
            for budget in kinds:
                mt = _instance_at(cls, k_, T_, budget=budget)
                terms = mt.budget_terms()
                if len(terms) != mt.levels_at(T_) or mt.declared_budget() != EPSILON:
                    raise ProofFailure(
                        f"{mt!r}: {len(terms)} level terms, sum {mt.declared_budget()}"
                    )
                if [t.scale for t in terms] != [mt.level_scale(e) for e in mt.level_epsilons]:
                    raise ProofFailure(f"{mt!r}: declared scales ≠ level_scale(ε_h)")
                if tuple(t.scale for t in terms) != mt.level_scales:
                    raise ProofFailure(f"{mt!r}: declared scales ≠ the drawn level_scales")
            for bad in (split[:-1], [*split, EPSILON], [*split[:-1], split[-1] * 2]):
                try:
                    _instance_at(cls, k_, T_, budget=",".join(map(str, bad)))
                except ParameterError:
                    continue
                raise ProofFailure(f"T={T_}, k={k_}: the split {bad} was accepted")
    return checked(
        "T",
        top,
        "a level split has levels_at(T) terms, declares the drawn scales Δ/ε_h, sums to ε; "
        "a split of the wrong length or sum is refused",
        "explicit splits (1, 2, …, L)/ΣL·ε for every T, k ∈ {2, 3, 5}; mean and max at T = 17, 64",
    )


def _instance_at(cls: type[Any], k: int, horizon: int, **kw: Any) -> Any:
    if issubclass(cls, Honaker):
        return cls(epsilon=EPSILON, horizon=horizon, **kw)
    return cls(epsilon=EPSILON, horizon=horizon, k=k, **kw)


def _weights(cls: type[Any]) -> Outcome:
    w, s2, V = sp.symbols("w sigma2 V", positive=True)
    var = w**2 * s2 + (1 - w) ** 2 * kk * V
    w_star = kk * V / (s2 + kk * V)
    check_identity(sp.diff(var, w).subs(w, w_star), 0, "d/dw variance at w*")
    check_sign(sp.diff(var, w, 2), "positive", "the variance is strictly convex in w")
    check_identity(var.subs(w, w_star), s2 * kk * V / (s2 + kk * V), "the minimum variance")
    c = 2**h / (2 ** (h + 1) - 1)
    check_identity(c.subs(h, 0), 1, "c_0 = 1")
    prev = c.subs(h, h - 1)
    check_identity(c, 2 * prev / (1 + 2 * prev), "c_h = 2c_{h−1}/(1 + 2c_{h−1})")
    check_identity(c, (2 * prev / (1 + 2 * prev)), "w_h = 2c_{h−1}/(1+2c_{h−1}) = c_h")
    return lemma(
        "w_h = kV_{h−1}/(σ_h² + kV_{h−1}) minimises the variance; Honaker: w_h = 2^h/(2^{h+1}−1)",
        "first-order condition and convexity; c_h = 2^h/(2^{h+1}−1) solves the recursion "
        "(the class's weights are compared with it in 'variance = plan')",
    )


def _unbiased(cls: type[Any]) -> Outcome:
    w = sp.Symbol("w", positive=True)
    check_identity(w * 1 + (1 - w) * 1, 1, "an item's weight in a combined estimate")
    for T_ in range(1, 65):
        for m in _instances(cls, T_, cheap=T_ not in (17, 64)):
            check = m.plan(T_).check_unbiased()
            if not check.passed:
                raise ProofFailure(f"{m!r}: {check.detail}")
    return checked(
        "T",
        64,
        "every combined estimate puts weight 1 on each item of its node; R·A = Q",
        "lemma: induction w_h + (1 − w_h)·1 = 1 (sympy); the code: the exact plans satisfy "
        "R·A = Q for T ≤ 64 (optimised level budgets at T = 17 and 64)",
    )


def gls_row(m: Mechanism, t: int) -> list[Fraction]:
    """The Gauss–Markov (best linear unbiased) coefficients of ``c_t`` on the nodes released
    by t, exactly: ``r = D⁻¹A(AᵀD⁻¹A)⁻¹1`` (A: released nodes × items 1..t)."""
    nodes = m.nodes(t)
    lo, hi = nodes.lo.tolist(), nodes.hi.tolist()
    var = [2 * nodes.scale_table[int(s)] ** 2 for s in nodes.scale_idx]
    n = len(lo)
    M = [[Fraction(0)] * t for _ in range(t)]
    for a in range(n):
        inv = 1 / var[a]
        for i in range(lo[a] - 1, hi[a]):
            row = M[i]
            for j in range(lo[a] - 1, hi[a]):
                row[j] += inv
    y = _solve(M, [Fraction(1)] * t)
    return [sum(y[lo[a] - 1 : hi[a]], Fraction(0)) / var[a] for a in range(n)]


def _solve(M: list[list[Fraction]], b: list[Fraction]) -> list[Fraction]:
    """Gaussian elimination in Fractions (M symmetric positive definite)."""
    n = len(b)
    A = [[*row, b[i]] for i, row in enumerate(M)]
    for c in range(n):
        p = next(r for r in range(c, n) if A[r][c] != 0)
        A[c], A[p] = A[p], A[c]
        for r in range(c + 1, n):
            f = A[r][c] / A[c][c]
            if f:
                for j in range(c, n + 1):
                    A[r][j] -= f * A[c][j]
    x = [Fraction(0)] * n
    for r in range(n - 1, -1, -1):
        x[r] = (A[r][n] - sum((A[r][j] * x[j] for j in range(r + 1, n)), Fraction(0))) / A[r][r]
    return x


def _blue(cls: type[Any]) -> Outcome:
    done = []
    for m, T_ in _gls_instances(cls):
        R = m.plan(T_).recombination.to_dense_exact()
        for t in range(1, T_ + 1):
            want = gls_row(m, t)
            got = R[t - 1][: len(want)]
            if got != want or any(R[t - 1][len(want) :]):
                raise ProofFailure(f"{m!r} t={t}: R row ≠ Gauss–Markov estimate")
        done.append(f"{m!r}")
    return checked(
        "T",
        max(T_ for _, T_ in _gls_instances(cls)),
        "out_t is the best linear unbiased estimate of c_t from the nodes released by t",
        "exact r = D⁻¹A(AᵀD⁻¹A)⁻¹1 = R[t] for every t ≤ T: " + "; ".join(done),
    )


def _variance(cls: type[Any], limit: int) -> Outcome:
    top = min(limit, PLAN_LIMIT)
    for m in _instances(cls, top):
        plan_var = m.plan(top).variance_exact()
        if plan_var != m.variance_exact(top):
            raise ProofFailure(f"{m!r}: variance_exact ≠ plan 2Σr²b²")
        for t_ in range(1, top + 1):
            digits = [(t_ // m.k**x) % m.k for x in range(m.levels)]
            closed = sum(
                (d * v for d, v in zip(digits, m.variance_of_levels(), strict=True)),
                Fraction(0),
            )
            if closed != plan_var[t_ - 1]:
                raise ProofFailure(f"{m!r} t={t_}: Σ_h d_h(t)V_h ≠ plan")
    m = _build(cls, 2**12)
    if isinstance(m, Honaker):
        got = m.weights()
        if got[0] != 1 or got[1:] != tuple(Honaker.uniform_weight(x) for x in range(1, len(got))):
            raise ProofFailure(f"Honaker weights {got} ≠ 2^h/(2^(h+1)−1)")
        unit = 2 * (m.levels * m.sensitivity / m.declared_epsilon) ** 2
        for x, v in enumerate(m.variance_of_levels()):
            if v != unit * Honaker.uniform_weight(x):
                raise ProofFailure(f"V_{x} ≠ 2(LΔ/ε)²·2^h/(2^(h+1)−1)")
    return checked(
        "t",
        top,
        "Var(out_t) = Σ_h d_h(t)·V_h = plan 2Σ r²b² (Honaker: w_h = 2^h/(2^{h+1}−1), "
        "V_h = 2(LΔ/ε)²·w_h at T = 4096)",
        "; ".join(repr(m) for m in _instances(cls, top)),
    )


def _nodes_budget(cls: type[Any], limit: int) -> Outcome:
    """Per T ≤ limit: item 1 in L nodes, no item in more, privacy sum = ε exactly."""
    for T_ in range(1, limit + 1):
        for m in _instances(cls, T_, cheap=True):
            nt = m.nodes(T_)
            L = tree_levels(T_, m.k)
            d = np.zeros(T_ + 1, dtype=np.int64)
            np.add.at(d, nt.lo - 1, 1)
            np.add.at(d, nt.hi, -1)
            counts = np.cumsum(d[:T_])
            if int(counts.max()) != L or int(counts[0]) != L:
                raise ProofFailure(f"{m!r} T={T_}: worst item in {int(counts.max())} nodes ≠ L")
            first = np.flatnonzero(nt.lo == 1)  # the nodes containing item 1, one per level
            per_level = {
                int(nt.hi[n]): m.sensitivity / nt.scale_table[int(nt.scale_idx[n])] for n in first
            }
            if sum(per_level.values(), Fraction(0)) != m.declared_epsilon:
                raise ProofFailure(f"{m!r} T={T_}: item 1's privacy sum ≠ ε")
    return checked("T", limit, "item 1 lies in L nodes, each item in ≤ L; Σ Δ/b_n = ε")


# -------------------------------------------------------------------------- instances
def _build(cls: type[Any], horizon: int, **kw: Any) -> Any:
    if cls is KaryTree or issubclass(cls, KaryTree):
        kw.setdefault("k", 3)
    return cls(epsilon=EPSILON, horizon=horizon, **kw)


def _instances(cls: type[Any], horizon: int, cheap: bool = False) -> list[Any]:
    if issubclass(cls, Honaker):
        out = [_build(cls, horizon)]
        if not cheap:
            out.append(_build(cls, horizon, budget="mean"))
        return out
    out = [_build(cls, horizon, k=k) for k in (2, 3, 5)]
    out.append(_build(cls, horizon, k=4, combine=True))
    if not cheap:
        out.append(_build(cls, horizon, k=3, combine=True, budget="max"))
    return out


def _gls_instances(cls: type[Any]) -> list[tuple[Any, int]]:
    if issubclass(cls, Honaker):
        T_ = GLS_LIMIT[2]
        split = ",".join(str(Fraction(7, 10) * f) for f in _split(tree_levels(T_, 2)))
        return [(_build(cls, T_), T_), (_build(cls, T_, budget=split), T_)]
    out = []
    for k_, comb in ((3, True), (3, False), (4, True)):
        T_ = GLS_LIMIT[k_]
        split = ",".join(str(Fraction(7, 10) * f) for f in _split(tree_levels(T_, k_)))
        out.append((_build(cls, T_, k=k_, combine=comb, budget=split), T_))
    return out


def _split(levels: int) -> list[Fraction]:
    """A non-uniform split of 1 into ``levels`` parts (1, 2, …, L over their sum)."""
    total = levels * (levels + 1) // 2
    return [Fraction(x + 1, total) for x in range(levels)]


# ------------------------------------------------------------------------------ PROOFS
def _prove(cls: type[Any], limit: int) -> list[ClaimResult]:
    name = label(cls)
    node_limit = min(limit, 1024)
    rows = [
        run_claim(name, "membership", lambda: _membership(cls)),
        run_claim(name, "budget", lambda: _budget(cls)),
        run_claim(name, "budget (level splits)", lambda: _splits(cls)),
        run_claim(name, "level splits = instances", lambda: _splits_instances(cls, limit)),
        run_claim(name, "weights", lambda: _weights(cls)),
        run_claim(name, "unbiased", lambda: _unbiased(cls)),
        run_claim(name, "best linear unbiased causal", lambda: _blue(cls)),
        run_claim(name, "budget = nodes(T)", lambda: _nodes_budget(cls, node_limit)),
        run_claim(name, "variance = plan", lambda: _variance(cls, limit)),
    ]
    return rows


PROOFS: dict[str, Callable[[type[Any], int], list[ClaimResult]]] = {
    "Honaker": _prove,
    "KaryTree": _prove,
}
"""Class name → proof function ``(cls, limit) -> list[ClaimResult]`` (see proofs.registry)."""
