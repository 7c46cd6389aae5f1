"""Proofs for the BLUE tree counter (``BlueTree``, ``blue``; docs/blue.md).

Setting: a k-ary layout (``complete``, ``kary``, ``elders``, ``elders_full``) of aligned
blocks ``[m k^j + 1, min((m+1)k^j, T)]``; level j's released blocks get noise of variance
``s_j`` (``2(Δ/ε_j)²`` for Laplace).  The decoder (:mod:`dpref.mechanisms.blue.decode`):
upward, ``ŷ_v = a_v z_v + (1 − a_v) Σ_c ŷ_c`` with ``a_v = V_C/(s + V_C)``,
``V_C = Σ_c V_c`` (``a_v = 0`` for an unreleased block, ``a_v = 1`` when a child has no
estimate); downward, ``x̄_c = ŷ_c + g_c (x̄_v − Σ_c ŷ_c)`` with ``g_c = V_c/V_C``; the output
at t is the sum of ``x̄`` over the k-ary decomposition of ``[1, t]``.

Theorem (budget).  An item lies in at most one block per level (the aligned blocks of a level
partition ``[1, T]``), item 1 in a released block of each of the L levels; level j costs
``Δ/(Δ/ε_j) = ε_j``, so the node vector is ``Σ_j ε_j = ε``-DP (Laplace mechanism, basic
composition; uniform: ``L·Δ/(LΔ/ε) = ε``), and the T outputs, a fixed linear function of the
node vector, are ε-DP by post-processing — for a stream fixed in advance.  ∎

Theorem (upward weights).  For independent unbiased estimates z (variance s) and C
(variance V_C) of one quantity, ``a z + (1 − a) C`` is unbiased with variance
``a² s + (1 − a)² V_C``, minimised exactly at ``a = V_C/(s + V_C)`` with minimum
``s V_C/(s + V_C)``.  ∎

Theorem (consistency).  ``Σ_c g_c = 1``, so ``Σ_c x̄_c = Σ_c ŷ_c + (x̄_v − Σ_c ŷ_c) = x̄_v``:
a parent's estimate is the sum of its children's, and any two decompositions of ``[1, t]``
give the same output.  ∎

Theorem (unbiased).  By induction upward, ``E ŷ_v = a x_v + (1 − a) Σ_c x_c = x_v`` (the
children partition v); by induction downward, ``E x̄_c = x_c + g_c (x_v − Σ_c x_c) = x_c``;
the decomposition blocks partition ``[1, t]``, so ``E out_t = c_t`` for every stream, i.e.
``R·A = Q``.  ∎

Optimality (checked, not proven).  That the two passes give the generalised least squares
estimate ``R* = Q(AᵀΣ⁻¹A)⁻¹AᵀΣ⁻¹`` — the least variance among all linear unbiased
estimates from *all* released nodes (Gauss–Markov/Aitken) — is Hay, Rastogi, Miklau and
Suciu's theorem for equal node variances; for per-level variances and for the layouts with
unreleased blocks dpref does not prove it: :mod:`proofs.blue_gls` computes ``R*`` and its
variances by dense exact elimination and the claim *best linear unbiased* compares them
with the code's R and ``variance_exact`` for every small T.

How the proofs touch the code.  *levels* is proven with z3 for every ``1 ≤ T ≤ 2⁶²`` and
k ≤ 32: the one level count ``hierarchy.blue_levels`` (the layout, ``levels_at`` and
``budget_terms`` all use it) equals the number of levels holding a released block, counted
independently; *budget* evaluates ``BlueTree.budget_terms`` (with ``level_scale`` and
``uniform_split``) at symbolic T, ε and Δ, and z3 proves its membership is that count
(k ∈ {2, …, 8, 13, 16, 19, 32}); *budget (level splits)* evaluates ``level_scale`` over
symbolic shares; *upward weights* and *consistency* evaluate the decoder's node-type function
(``decode._node``, which computes every ``a``, ``g``, ``V`` the release, the plan and the
variances read) at symbolic positive variances, for every number of children m ≤ 32 (every
k ≤ 32; a larger k is not covered).  Which blocks a layout releases is integer array code
(``hierarchy.layout``), not evaluated symbolically: *membership* checks it exhaustively.
*unbiased (induction)* is a lemma (no class code); *membership*, *plans* and *best linear
unbiased* are exhaustive exact checks.

References
----------
.. [1] M. Hay, V. Rastogi, G. Miklau, D. Suciu. "Boosting the Accuracy of Differentially
   Private Histograms Through Consistency." PVLDB 3(1), 2010 (the two passes).
.. [2] W. Qardaji, W. Yang, N. Li. "Understanding Hierarchical Methods for Differentially
   Private Histograms." PVLDB 6(14), 2013 (branching and budget across levels).
.. [3] J. Honaker. "Efficient Use of Differentially Private Binary Trees." TPDP 2015.
.. [4] A. C. Aitken. "On Least Squares and Linear Combination of Observations." Proc. Royal
   Society of Edinburgh 55, 1935 (generalised least squares).
.. [5] C. Dwork, A. Roth. "The Algorithmic Foundations of Differential Privacy." 2014,
   Proposition 2.1 (post-processing).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from fractions import Fraction
from typing import Any, cast

import numpy as np
import sympy as sp

from dpref.errors import ParameterError
from dpref.mechanisms import Elders, KaryTree
from dpref.mechanisms.base import MAX_HORIZON
from dpref.mechanisms.blue import BlueTree
from dpref.mechanisms.blue import decode as blue_decode
from dpref.mechanisms.blue.hierarchy import LayoutKind, blue_levels
from dpref.mechanisms.tree_arith import level_scale, uniform_split
from proofs.blue_gls import gls_decoder
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
    note,
    run_claim,
)
from proofs.core import T as T_SYM
from proofs.smt import primitive_lemmas
from proofs.tree_smt import (
    CountZ3Ops,
    PiecewiseOps,
    declared_budget_steps,
    indicators_as_symbols,
    levels_characterised,
    prove_for_all_T,
)

__all__ = ["CHILDREN", "DESIGNS", "GLS_LIMIT", "PLAN_LIMIT", "PROOFS", "node_multiset"]

EPSILON = Fraction(7, 10)
"""ε of the exhaustive checks."""
CHILDREN = 32
"""The decoder's node function is evaluated symbolically for every m = 1 … CHILDREN children."""
PLAN_LIMIT = 16
"""Every T up to this is checked on the exact plans (each design of :data:`DESIGNS`)."""
GLS_LIMIT = 12
"""Every T up to this is compared with the dense GLS oracle (each design)."""
GLS_EXTRA = ((2, "complete", 32), (3, "elders_full", 27))
"""Single larger horizons of the GLS comparison: (k, layout, T)."""
DESIGNS: tuple[tuple[int, str], ...] = (
    (2, "complete"),
    (3, "complete"),
    (4, "complete"),
    (2, "kary"),
    (3, "kary"),
    (3, "elders"),
    (5, "elders"),
    (2, "elders_full"),
    (3, "elders_full"),
    (5, "elders_full"),
)
"""(k, layout) of the exhaustive checks: every layout, several arities."""


# --------------------------------------------------------------------------- helpers
def _levels_top(T: int, k: int) -> int:
    """``⌈log_k T⌉``, counted independently of the code (smallest h with k^h ≥ T)."""
    h, p = 0, 1
    while p < T:
        h, p = h + 1, p * k
    return h


def node_multiset(k: int, kind: str, T: int) -> Counter[tuple[int, int]]:
    """The released intervals ``(lo, hi)`` of a layout by its definition (docs/blue.md),
    independently of :mod:`dpref.mechanisms.blue.hierarchy`: the aligned blocks of every
    level 0 … ⌈log_k T⌉ (complete), of the levels with ``k^j ≤ 2T − 1`` (elders_full), the
    node set of ``KaryTree(k, combine=True)`` (kary) or of ``Elders(k)`` (elders)."""
    if kind in ("kary", "elders"):
        m = (
            KaryTree(epsilon=1, horizon=T, k=k, combine=True)
            if kind == "kary"
            else Elders(epsilon=1, horizon=T, k=k)
        )
        nt = m.nodes(T)
        return Counter(zip(nt.lo.tolist(), nt.hi.tolist(), strict=True))
    out: Counter[tuple[int, int]] = Counter()
    for j in range(_levels_top(T, k) + 1):
        u = k**j
        if kind == "elders_full" and u > 2 * T - 1:
            continue
        for start in range(0, T, u):
            out[(start + 1, min(start + u, T))] += 1
    return out


def _build(k: int, kind: str, T: int, **kw: Any) -> BlueTree:
    return BlueTree(epsilon=EPSILON, horizon=T, k=k, layout=cast(LayoutKind, kind), **kw)


def _split(levels: int) -> str:
    """A non-uniform split of ε over ``levels`` levels: ``ε·(h + 1)/ΣL`` (all different)."""
    total = levels * (levels + 1) // 2
    return ",".join(str(EPSILON * Fraction(h + 1, total)) for h in range(levels))


def _zero(expr: Any, what: str, denominator: Any = None) -> None:
    """``expr = 0`` as a rational function in the symbols, else :class:`ProofFailure`.

    With ``denominator`` (an expression occurring in expr as a denominator): replace it by a
    fresh symbol D, multiply by D, expand, substitute back and expand — exact and fast for the
    sums of ``V_i/ΣV``; otherwise (or if that is not 0) ``cancel``."""
    e = sp.sympify(expr)
    if e == 0:
        return
    if denominator is not None:
        D = sp.Dummy("D", positive=True)
        cleared = sp.expand(e.xreplace({denominator: D}) * D)
        if sp.expand(cleared.xreplace({D: denominator})) == 0:
            return
    if sp.cancel(sp.together(e)) != 0:
        check_identity(expr, 0, what)  # the slower simplify, and its counterexample


# ---------------------------------------------------------------------------- claims
def _membership(limit: int) -> Outcome:
    top = min(limit, PLAN_LIMIT)
    for k, kind in DESIGNS:
        for T in range(1, top + 1):
            m = _build(k, kind, T)
            nt = m.nodes(T)
            got = Counter(zip(nt.lo.tolist(), nt.hi.tolist(), strict=True))
            if got != node_multiset(k, kind, T):
                raise ProofFailure(f"{m!r}: released blocks ≠ the layout's definition")
            d = np.zeros(T + 1, dtype=np.int64)
            np.add.at(d, nt.lo - 1, 1)
            np.add.at(d, nt.hi, -1)
            cover = np.cumsum(d[:T])
            L = m.levels_at(T)
            if int(cover.max()) != L or int(cover[0]) != L or L != m.levels:
                raise ProofFailure(
                    f"{m!r}: levels_at(T) = {L}, item 1 in {int(cover[0])} nodes, the worst "
                    f"item in {int(cover.max())}"
                )
    return checked(
        "T",
        top,
        "the released blocks are the layout's (complete: every aligned block of levels "
        "0 … ⌈log_k T⌉; kary: KaryTree(combine=True)'s; elders: Elders'; elders_full: every "
        "block of the levels with k^j ≤ 2T − 1); item 1 lies in levels_at(T) = L of them and "
        "no item in more",
        "k, layout: " + ", ".join(f"{k} {kind}" for k, kind in DESIGNS),
    )


SMT_ARITIES: dict[str, tuple[int, ...]] = {
    "complete": tuple(range(2, 33)),
    "kary": tuple(range(2, 33)),
    "elders": tuple(range(3, 33, 2)),
    "elders_full": tuple(range(2, 33)),
}
"""Per layout, the arities whose level count and declaration are proven for every T ≤ 2⁶²
(k ≤ 32: the frontier's range; a larger k is not covered)."""


def _usable(kind: str, k: int, ops: CountZ3Ops, T_: Any) -> tuple[Callable[[int], Any], int]:
    """Whether level j holds a released block at T, written independently of the code, and
    the first level ``top`` above every T ≤ 2⁶²: complete ``j = 0 or k^{j−1} < T``
    (levels 0 … ⌈log_k T⌉); kary ``k^j ≤ T``; elders, elders_full ``k^j ≤ 2T − 1``."""
    z3 = ops.z3
    if kind == "complete":

        def usable(j: int) -> Any:
            if j == 0:
                return z3.BoolVal(True)
            p = k ** (j - 1)
            return ops.le(p + 1, T_) if p < MAX_HORIZON else z3.BoolVal(False)

        top = 1
        while k ** (top - 1) < MAX_HORIZON:
            top += 1
        return usable, top
    limit = MAX_HORIZON if kind == "kary" else 2 * MAX_HORIZON - 1

    def usable_power(j: int) -> Any:
        p = k**j
        if p > limit:
            return z3.BoolVal(False)
        return ops.le(p, T_) if kind == "kary" else ops.le(p + 1, T_ + T_)

    top = 0
    while k**top <= limit:
        top += 1
    return usable_power, top


def _levels() -> Outcome:
    ops = CountZ3Ops()
    T_ = ops.var("T")
    steps = primitive_lemmas()
    done = []
    for kind, arities in SMT_ARITIES.items():
        for k in arities:
            usable, top = _usable(kind, k, ops, T_)
            L = blue_levels(T_, k, kind, ops)
            prove_for_all_T(
                levels_characterised(ops, L, usable, top), f"{kind} k={k}: blue_levels", ops, T_
            )
        done.append(f"{kind} k ∈ {{{arities[0]}, …, {arities[-1]}}}")
    return about_code(
        "for every 1 ≤ T ≤ 2⁶² and k ≤ 32 (elders: odd k; larger k not covered): the level "
        "count blue_levels(T, k, layout) — the one the layout, levels_at and budget_terms "
        "use — is #{j : level j holds a released block}: complete ⌈log_k T⌉ + 1 (j = 0 or "
        "k^{j−1} < T), kary ⌊log_k T⌋ + 1 (k^j ≤ T), elders and elders_full #{j : k^j ≤ 2T − 1}",
        evaluates=[blue_levels, BlueTree.levels_at],
        detail=f"z3 over 64-bit T; primitives: {', '.join(steps)}; " + "; ".join(done),
    )


def _declared_is_levels_at(m: BlueTree) -> None:
    """``budget_terms`` at symbolic T, ε, Δ costs ε, and declares ``levels_at(T)`` nodes
    (the same expression; 'levels' proves that count with z3)."""
    ops = PiecewiseOps()
    (term,) = m.budget_terms(ops, horizon=T_SYM, epsilon=eps, sensitivity=Delta)
    check_identity(indicators_as_symbols(term.membership * Delta / term.scale), eps, "L·Δ/scale")
    if sp.sympify(term.membership) != sp.sympify(m.levels_at(T_SYM, ops)):
        raise ProofFailure(f"{m!r}: the declared membership is not levels_at(T)")


BUDGET_ARITIES = (2, 3, 4, 5, 6, 7, 8, 13, 16, 19, 32)
"""The arities of the symbolic budget (a subset of :data:`SMT_ARITIES`; each costs a sympy
simplification of ~60 indicators)."""


def _budget_arities() -> list[tuple[str, tuple[int, ...]]]:
    return [(kind, tuple(k for k in BUDGET_ARITIES if k in ks)) for kind, ks in SMT_ARITIES.items()]


def _budget() -> Outcome:
    ops = CountZ3Ops()
    T_ = ops.var("T")
    for kind, arities in _budget_arities():
        for k in arities:
            usable, top = _usable(kind, k, ops, T_)
            m = _build(k, kind, 5)
            if kind == "elders_full" and k % 2 == 0:  # (k^j + 1)/2 is not an integer: the
                _declared_is_levels_at(m)  # sympy form has rationals z3 is not given
            else:
                declared_budget_steps(m, k, T_, usable, top, f"levels of {kind}", ops)
    for k, kind in DESIGNS:
        for horizon in (1, 2, k, k * k - 1, 100, 4096):
            mt = _build(k, kind, horizon)
            (term,) = mt.budget_terms()
            drawn = set(mt.nodes(horizon).scale_table)
            if term.membership != mt.levels or drawn != {term.scale}:
                raise ProofFailure(f"{mt!r}: declared {term}, the release draws {sorted(drawn)}")
    return about_code(
        "uniform budget, for every 1 ≤ T ≤ 2⁶² and k ∈ {2, …, 8, 13, 16, 19, 32} (elders: "
        "the odd ones; other k not covered): the declaration "
        "(levels_at(T) nodes of scale level_scale(Δ, uniform_split(ε, L))) costs exactly ε, and "
        "its membership is the number of levels holding a released block",
        evaluates=[
            BlueTree.budget_terms,
            BlueTree.levels_at,
            blue_levels,
            level_scale,
            uniform_split,
        ],
        detail="budget_terms evaluated at symbolic T, ε, Δ (its level count a sum of "
        "indicators): Σ membership·Δ/scale = ε by sympy with the indicators free; the "
        "declared membership proven = the independent count of 'levels' by z3 for every "
        "T ≤ 2⁶² (elders_full with an even k: the declared membership is the expression "
        "levels_at(T), which 'levels' proves); that item 1 lies in a released block of each "
        "of them and no item in two of one level: 'membership' (checked); the declared scale "
        "is the one nodes() draws at T ∈ {1, 2, k, k² − 1, 100, 4096} for every design of "
        "'membership'; arities: " + ", ".join(f"{kind} {ks}" for kind, ks in _budget_arities()),
        value="ε",
    )


def _splits() -> Outcome:
    q = sp.IndexedBase("q", positive=True)
    h = sp.Symbol("h", integer=True, nonnegative=True)
    L = sp.Symbol("L", integer=True, positive=True)
    total = sp.Sum(Delta / level_scale(Delta, q[h] * eps), (h, 0, L - 1))
    check_identity(total.doit(), eps * sp.Sum(q[h], (h, 0, L - 1)), "Σ_h Δ/b_h = ε·Σ_h q_h")
    return about_code(
        "any per-level split ε_h = q_h·ε (q_h > 0, Σ_h q_h = 1) over any number L of levels "
        "costs Σ_h Δ/level_scale(Δ, ε_h) = ε",
        evaluates=[level_scale],
        detail="sympy over symbolic Δ, ε, L and shares q_h; that the class accepts only L "
        "positive shares summing to ε exactly and draws level_scale(Δ, ε_h) at level h: "
        "'budget = instances' (checked)",
        value="ε",
    )


def _instances(limit: int) -> Outcome:
    top = min(limit, PLAN_LIMIT)
    for k, kind in DESIGNS:
        for T in range(1, top + 1):
            L = _build(k, kind, T).levels
            budgets = ["uniform", _split(L)]
            if (k, kind, T) == (3, "elders_full", top):  # one optimised split (an optimiser run)
                budgets.append("mean")
            for budget in budgets:
                m = _build(k, kind, T, budget=budget)
                terms = m.budget_terms()
                declared = sum((t.membership * m.sensitivity / t.scale for t in terms), Fraction())
                nt = m.nodes(T)
                drawn = [nt.scale_table[int(i)] for i in nt.scale_idx]
                want = [m.level_scales[int(j)] for j in m._layout(T).level]
                if declared != EPSILON or drawn != want:
                    raise ProofFailure(f"{m!r}: declared sum {declared}, or drawn ≠ Δ/ε_level")
                if [level_scale(m.sensitivity, e) for e in m.level_epsilons] != list(
                    m.level_scales
                ):
                    raise ProofFailure(f"{m!r}: level_scales ≠ level_scale(Δ, ε_h)")
            shares = _split(L).split(",")
            for bad in (shares[:-1], [*shares, "1/10"], [*shares[:-1], "7/10"]):
                if bad == shares or not bad:
                    continue
                try:
                    _build(k, kind, T, budget=",".join(bad))
                except ParameterError:
                    continue
                raise ProofFailure(f"k={k}, {kind}, T={T}: the split {bad} was accepted")
    return checked(
        "T",
        top,
        "the declared terms sum to ε and the release draws Δ/ε_j at every level-j node "
        "(uniform, an explicit split, budget='mean'); a split of the wrong length or sum is "
        "refused",
        "explicit splits ε(h + 1)/ΣL for every design of the membership row; budget='mean' for "
        "k = 3 elders_full at the largest T",
    )


def _symbols(m: int) -> tuple[Any, ...]:
    return tuple(sp.symbols(f"V1:{m + 1}", positive=True))


def _upward() -> Outcome:
    s, a, VC = sp.symbols("s a V_C", positive=True)
    var = a**2 * s + (1 - a) ** 2 * VC
    star = VC / (s + VC)
    check_identity(sp.diff(var, a).subs(a, star), 0, "d/da variance at a*")
    check_sign(sp.diff(var, a, 2), "positive", "the variance is strictly convex in a")
    node = blue_decode._node
    for m in range(1, CHILDREN + 1):
        V = _symbols(m)
        total = sum(V, sp.Integer(0))
        p = node(True, s, V, "proof")
        _zero(p.own - star.subs(VC, total), f"m={m}: a = V_C/(s + V_C)")
        _zero(p.var - s * total / (s + total), f"m={m}: V = s·V_C/(s + V_C)")
        q = node(False, s, V, "proof")
        _zero(q.own, f"m={m}: an unreleased block has a = 0")
        _zero(q.var - total, f"m={m}: an unreleased block has V = V_C")
        for hole in sorted({0, m // 2, m - 1}):
            kids = tuple(None if i == hole else v for i, v in enumerate(V))
            r = node(True, s, kids, "proof")
            if r.own != 1 or r.var != s:
                raise ProofFailure(f"m={m}: a child without estimate must give a = 1, V = s")
    leaf = node(True, s, (), "proof")
    if leaf.own != 1 or leaf.var != s:
        raise ProofFailure("a released leaf must give a = 1, V = s")
    return about_code(
        "every node: ŷ = a·z + (1 − a)·Σ_c ŷ_c with a = V_C/(s + V_C), the unique minimiser "
        "of a²s + (1 − a)²V_C, and V = sV_C/(s + V_C) its minimum; an unreleased block a = 0, "
        "V = V_C; a released block with a child of no estimate a = 1, V = s; a released leaf "
        "a = 1, V = s (that child first, middle or last) — for every m ≤ 32 children (k ≤ 32; "
        "larger k not covered) and symbolic positive s, V_1 … V_m",
        evaluates=[node, blue_decode.exact_weights],
        detail="sympy: first-order condition and convexity of the two-estimate variance; the "
        "decoder's node function evaluated at symbolic variances (exact_weights builds every "
        "node type with it)",
    )


def _consistency() -> Outcome:
    s = sp.Symbol("s", positive=True)
    node = blue_decode._node
    for m in range(1, CHILDREN + 1):
        V = _symbols(m)
        for observed in (True, False):
            p = node(observed, s, V, "proof")
            total = sum(V, sp.Integer(0))
            _zero(sum(p.split, sp.Integer(0)) - 1, f"m={m}: Σ_c g_c = 1", total)
            for r in range(m):
                if sp.sympify(p.split[r]).is_positive is not True:
                    raise ProofFailure(f"m={m}: g_{r} = {p.split[r]} is not positive")
                _zero(p.before[r] - sum(p.split[:r], sp.Integer(0)), f"m={m}: G_{r}", total)
                _zero(p.left[r] - sum(V[:r], sp.Integer(0)), f"m={m}: SL_{r}")
                _zero(p.right[r] - sum(V[r + 1 :], sp.Integer(0)), f"m={m}: SR_{r}")
            if m > 1:
                kids = (None, *V[1:])
                q = node(True, s, kids, "proof")
                if list(q.split) != [1] + [0] * (m - 1):
                    raise ProofFailure(f"m={m}: the child without estimate takes the residual")
    return about_code(
        "every node's downward shares g_c = V_c/Σ V are positive and sum to 1 (a child "
        "without estimate takes the whole residual), so Σ_c x̄_c = x̄_v: the estimates are "
        "consistent; the prefix sums G_r, SL_r, SR_r the variance recursion reads are "
        "Σ_{i<r} g_i, Σ_{i<r} V_i, Σ_{i>r} V_i — for every m ≤ 32 children",
        evaluates=[node, blue_decode.exact_weights],
        detail="sympy at symbolic positive variances (rational-function cancellation; signs "
        "by sympy's assumptions)",
    )


def _unbiased_lemma() -> Outcome:
    x = sp.IndexedBase("x")
    g = sp.IndexedBase("g")
    i = sp.Symbol("i", integer=True, positive=True)
    c = sp.Symbol("c", integer=True, positive=True)
    m = sp.Symbol("m", integer=True, positive=True)
    a, xbar = sp.symbols("a xbar")
    children = sp.Sum(x[i], (i, 1, m))
    check_identity(a * children + (1 - a) * children, children, "E ŷ_v = x_v (upward)")
    check_identity(x[c] + g[c] * (children - children), x[c], "E x̄_c = x_c (downward)")
    yhat = sp.IndexedBase("y")
    down = sp.Sum(yhat[i] + g[i] * (xbar - sp.Sum(yhat[c], (c, 1, m))), (i, 1, m))
    shares = sp.Sum(g[i], (i, 1, m))
    expanded = sp.expand(down.doit())
    consistent = sp.Sum(yhat[i], (i, 1, m)) + shares * (xbar - sp.Sum(yhat[c], (c, 1, m)))
    check_identity(sp.simplify(expanded - sp.expand(consistent.doit())), 0, "Σ_c x̄_c, expanded")
    return lemma(
        "if a child's estimates are unbiased, so is ŷ_v = a z_v + (1 − a)Σ ŷ_c; if x̄_v is "
        "unbiased, so is x̄_c = ŷ_c + g_c(x̄_v − Σ ŷ_c); Σ_c x̄_c = Σ ŷ_c + (Σ g_c)(x̄_v − Σ ŷ_c) "
        "(= x̄_v when Σ g_c = 1); by induction on levels every x̄ is unbiased and the output, "
        "a sum over blocks partitioning [1, t], has mean c_t: R·A = Q",
        "sympy over a symbolic number of children m (the children partition their parent: "
        "x_v = Σ_c x_c); the code's Σ g_c = 1 is 'consistency', the code's R·A = Q is 'plans'",
    )


def _plans(limit: int) -> Outcome:
    top = min(limit, PLAN_LIMIT)
    count = 0
    for k, kind in DESIGNS:
        for T in range(1, top + 1):
            L = _build(k, kind, T).levels
            budgets = ("uniform", _split(L)) if T in (1, 7, 16, top) else ("uniform",)
            for budget in budgets:
                m = _build(k, kind, T, budget=budget)
                report = m.plan(T).check(m.variance_exact(T))
                count += 1
                bad = [f"{c.name}: {c.detail}" for c in report.checks if not c.passed]
                if bad:
                    raise ProofFailure(f"{m!r} T={T}: {'; '.join(bad)}")
                if report.privacy_sum != EPSILON:
                    raise ProofFailure(f"{m!r} T={T}: privacy sum {report.privacy_sum} ≠ ε")
    return checked(
        "T",
        top,
        "R·A = Q exactly, privacy sum = ε exactly, variance_exact = 2Σ_n r_{t,n}² b_n² "
        "(the path recursion against the plan's R)",
        f"{count} exact plans: every design of the membership row at every T, with an "
        "explicit non-uniform split at T ∈ {1, 7, 16, " + str(top) + "}",
    )


def _gls_designs(limit: int) -> list[tuple[BlueTree, int]]:
    out = []
    top = min(limit, GLS_LIMIT)
    for k, kind in DESIGNS:
        for T in range(1, top + 1):
            out.append((_build(k, kind, T), T))
        L = _build(k, kind, top).levels
        out.append((_build(k, kind, top, budget=_split(L)), top))
    for k, kind, T in GLS_EXTRA:
        if T <= limit:
            out.append((_build(k, kind, T), T))
    return out


def _blue(limit: int) -> Outcome:
    designs = _gls_designs(limit)
    for m, T in designs:
        plan = m.plan(T)
        R_star, v_star = gls_decoder(plan)
        if plan.recombination.to_dense_exact() != R_star:
            raise ProofFailure(f"{m!r} T={T}: R ≠ the GLS decoder Q(AᵀΣ⁻¹A)⁻¹AᵀΣ⁻¹")
        if m.variance_exact(T) != v_star:
            raise ProofFailure(f"{m!r} T={T}: variance_exact ≠ q_tᵀ(AᵀΣ⁻¹A)⁻¹q_t")
    top = min(limit, GLS_LIMIT)
    return checked(
        "T",
        top,
        "out_t is the best linear unbiased estimate of c_t from all released nodes: R equals "
        "the GLS decoder Q(AᵀΣ⁻¹A)⁻¹AᵀΣ⁻¹ and variance_exact equals q_tᵀ(AᵀΣ⁻¹A)⁻¹q_t, exactly",
        f"{len(designs)} designs (proofs/blue_gls.py, dense exact elimination): every design "
        f"of the membership row at every T ≤ {top}, an explicit split at T = {top}, and "
        + ", ".join(f"k={k} {kind} T={T}" for k, kind, T in GLS_EXTRA if T <= limit),
    )


def _post_processing() -> Outcome:
    return note(
        "the T outputs R·y are a fixed linear function of the noisy node vector y, so they are "
        "as private as y (post-processing), for a stream fixed in advance",
        "Dwork & Roth 2014, Proposition 2.1; the model and what changes for adaptive streams: "
        "docs/blue.md",
    )


def _prove(cls: type[Any], limit: int) -> list[ClaimResult]:
    """Prove the BLUE tree theorems (see the module docstring)."""
    name = label(cls)
    return [
        run_claim(name, "membership", lambda: _membership(limit)),
        run_claim(name, "levels", _levels),
        run_claim(name, "budget", _budget),
        run_claim(name, "budget (level splits)", _splits),
        run_claim(name, "budget = instances", lambda: _instances(limit)),
        run_claim(name, "upward weights", _upward),
        run_claim(name, "consistency", _consistency),
        run_claim(name, "unbiased (induction)", _unbiased_lemma),
        run_claim(name, "plans", lambda: _plans(limit)),
        run_claim(name, "best linear unbiased", lambda: _blue(limit)),
        run_claim(name, "post-processing", _post_processing),
    ]


PROOFS: dict[str, Callable[[type[Any], int], list[ClaimResult]]] = {"BlueTree": _prove}
"""Class name → proof function ``(cls, limit) -> list[ClaimResult]`` (see proofs.registry)."""
