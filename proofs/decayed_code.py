"""Claims about the decayed sums' own code, for every parameter in range (issue 23).

Each claim here evaluates the functions the release uses — with z3 over 64-bit
bit-vectors (:class:`proofs.smt.Z3Ops`) for the integer facts, for every value up to
:data:`dpref.mechanisms.base.MAX_HORIZON` = 2⁶², or with sympy for symbolic ε, Δ, W, δ
and k — and compares them with an independent derivation:

* WindowSum ``levels``: the level count the nodes, the online counter, the scale and the
  declaration all read (:meth:`WindowSum.levels`, through
  :func:`~dpref.mechanisms.decayed.common._levels_for_window`) is, for every
  ``1 ≤ W ≤ 2⁶²``, the number of aligned node sizes ``2^b`` that fit in a window of W
  items, ``#{b ≥ 0 : 2^b ≤ W}`` — every size a cover can use, one node of each per item
  (the partition lemma).  The budget then evaluates :meth:`WindowSum.budget_terms` and
  :meth:`WindowSum.scale` for symbolic W, ε, Δ: ``L(W)·Δ/(L(W)Δ/ε) = ε`` holds only if the
  membership and the scale read the same level count.
* WindowSum ``cover``: for every ``1 ≤ t, W ≤ 2⁶²`` the cover the release reads
  (:func:`dpref.dyadic.cover_split`, shared by the batch and the online covers) spans the
  window exactly (``ℓ_s + ℓ_p = t − a0``) and uses only node sizes ``≤ 2^{L(W)−1}`` — levels
  the mechanism releases.  (Its node-count bound ``max(1, 2K)`` is a lemma plus an
  exhaustive check: z3 needs ~10 s per K for it, over a minute in all.)
* AllWindowSum ``levels at T``: :meth:`AllWindowSum.levels_at` (the tree's levels at T,
  read by the nodes, the variance, the privacy sum and the declaration) is
  ``#{b ≥ 0 : 2^b ≤ T}`` for every ``1 ≤ T ≤ 2⁶²`` (a level of size 2^b holds a node by T
  iff ``2^b ≤ T``).
* ExponentialSum ``left nodes``: :meth:`ExponentialSum.node_start` gives, for every
  ``1 ≤ t ≤ 2⁶²``, the aligned node of size ``2^{lsb(t)}`` ending at t (size a power of
  two, start aligned to it, t an odd multiple of it), and item 1's level-k node is
  ``[1, 2^{k−1}]`` for every k ≤ 62, so item 1's weight there is ``α^{2^{k−1}−1}`` —
  which :meth:`ExponentialSum.level_weight` must return for symbolic α and k.
* ExponentialSum ``S(α) fixed point``: every step of the 128-bit fixed point that gives the
  rational upper bound of S(α) the scale uses (:mod:`dpref.rigorous`: ``_fixed_point_start``,
  ``_fixed_point_step``, ``_fixed_point_tail``, ``_ceil_div``, and the tiny-α closed form)
  rounds in the safe direction for *all* integers (z3), and the induction over k is
  discharged by sympy; the loop's summation and stopping rule are its structure (the grid
  rows check the result).
* PolynomialSum ``instance levels``: every instance's level count ``L_j = K_j + 1`` is
  :meth:`PolynomialSum.instance_levels` of its window (through
  :func:`~dpref.mechanisms.decayed.common._levels_for_window`; the count above, for every
  ``W_j ≤ 2⁶²``), and :meth:`PolynomialSum.instance_membership` — what the
  privacy cost and the declaration read — is ``(1−β)^j L_j`` for symbolic β, j, K.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import sympy as sp

from dpref.dyadic import cover_split
from dpref.mechanisms.base import MAX_HORIZON
from dpref.mechanisms.decayed.common import _levels_for_window
from proofs.core import (
    SYMBOLIC,
    Delta,
    Outcome,
    ProofFailure,
    about_code,
    check_identity,
    check_sign,
    eps,
)
from proofs.smt import BITS, Z3Ops, primitive_lemmas, prove_smt

__all__ = [
    "allwindow_levels",
    "exponential_left_nodes",
    "exponential_sensitivity_bound",
    "polynomial_allocation_series",
    "polynomial_instance_levels",
    "window_budget",
    "window_cover_levels",
    "window_levels",
]

W_sym = sp.Symbol("W", integer=True, positive=True)
"""A window size W ≥ 1."""


def _sizes_that_fit(ops: Z3Ops, x: Any) -> Any:
    """``#{b ≥ 0 : 2^b ≤ x}`` — the independent count (a sum of indicators, no log)."""
    return sum(
        (ops.ite(ops.le(1 << b, x), 1, 0) for b in range(BITS - 1)),
        ops.const(0),
    )


def _range(ops: Z3Ops, x: Any) -> list[Any]:
    return [ops.le(1, x), ops.le(x, MAX_HORIZON)]


def _count_claim(fn: Any, what: str) -> tuple[str, str]:
    """Prove ``fn(x) = #{b : 2^b ≤ x}`` and ``2^{fn(x)−1} ≤ x < 2^{fn(x)}`` for every x in
    ``[1, 2⁶²]``; returns the two solver verdicts."""
    ops = Z3Ops()
    x = ops.var("x")
    L = fn(ops, x)
    first = prove_smt(
        L == _sizes_that_fit(ops, x), f"{what} = #{{b : 2^b ≤ x}}", assumptions=_range(ops, x)
    )
    second = prove_smt(
        ops.z3.And(ops.le(ops.shl(1, L - 1), x), ops.lt(x, ops.shl(1, L))),
        f"2^({what}−1) ≤ x < 2^{what}",
        assumptions=_range(ops, x),
    )
    return first, second


def window_levels(cls: type[Any]) -> Outcome:
    """WindowSum's level count, for every window 1 ≤ W ≤ 2⁶² (z3)."""
    mech = cls(window=1, epsilon=1)
    prims = primitive_lemmas()
    first, second = _count_claim(lambda ops, w: mech.levels(ops, window=w), "L(W)")
    return about_code(
        "L(W) = #{b ≥ 0 : 2^b ≤ W} (every aligned size a window cover can use), "
        "2^{L−1} ≤ W < 2^L, for every 1 ≤ W ≤ 2⁶²",
        evaluates=[cls.levels, _levels_for_window],
        detail=f"z3 over 64-bit W: {first}, {second}; primitives: {', '.join(prims)}; one "
        "node per size per item (partition lemma), so L(W) is an item's membership",
        value="⌊log₂W⌋ + 1",
    )


def window_budget(cls: type[Any]) -> Outcome:
    """The declared budget from the code's levels and scale, symbolic W, ε, Δ (sympy),
    with the level count proven for every W (z3, :func:`window_levels`)."""
    mech = cls(window=1, epsilon=1)
    terms = mech.budget_terms(SYMBOLIC, window=W_sym, epsilon=eps, sensitivity=Delta)
    if len(terms) != 1:
        raise ProofFailure(f"expected one node kind (a level), got {len(terms)}")
    (term,) = terms
    code_levels = mech.levels(SYMBOLIC, window=W_sym)
    check_identity(term.membership, code_levels, "membership = levels(W)")
    check_identity(term.membership * Delta / term.scale, eps, "L(W)·Δ/scale(W)")
    check_identity(
        mech.scale(SYMBOLIC, window=W_sym, epsilon=eps, sensitivity=Delta),
        term.scale,
        "the release's scale() = the declared scale",
    )
    _, second = _count_claim(lambda ops, w: mech.levels(ops, window=w), "L(W)")
    return about_code(
        "Σ_{n∋i} Δ/b_n = L(W)·Δ/scale(W) = ε for every W, ε, Δ",
        evaluates=[cls.budget_terms, cls.scale, cls.levels, _levels_for_window],
        detail="sympy, symbolic W, ε, Δ: the declared membership is levels(W) and "
        "L(W)·Δ/scale(W) simplifies to ε (a scale reading another level count fails); "
        f"L(W) = ⌊log₂W⌋ + 1 = #{{b : 2^b ≤ W}} for every W ≤ 2⁶² (z3: {second})",
        value="ε",
    )


def window_cover_levels(cls: type[Any]) -> Outcome:
    """Every window's cover spans it and uses released levels only, every t, W ≤ 2⁶² (z3)."""
    mech = cls(window=1, epsilon=1)
    ops = Z3Ops()
    t, W = ops.var("t"), ops.var("W")
    a0 = ops.ite(ops.lt(W, t), t - W, 0)  # window_start0: a = max(1, t − W + 1)
    _, ls, lp = cover_split(a0, t, ops.floor_log2)
    top = ops.shl(1, mech.levels(ops, window=W))  # 2^L: sizes 2^b with b ≤ L − 1 = K
    where = [*_range(ops, t), *_range(ops, W)]
    v1 = prove_smt(ls + lp == t - a0, "ℓ_s + ℓ_p = t − a0", assumptions=where)
    v2 = prove_smt(ops.lt(ls, top), "ℓ_s < 2^L", assumptions=where)
    v3 = prove_smt(ops.lt(lp, top), "ℓ_p < 2^L", assumptions=where)
    prims = primitive_lemmas()
    return about_code(
        "for every 1 ≤ t, W ≤ 2⁶² the cover of [max(1, t−W+1), t] spans it (ℓ_s + ℓ_p = its "
        "length) and its nodes (one per 1-bit of ℓ_s, ℓ_p) have sizes ≤ 2^{L(W)−1}: released",
        evaluates=[cover_split, cls.levels, _levels_for_window],
        detail=f"z3 over 64-bit t, W: {v1}, {v2}, {v3}; primitives: {', '.join(prims)}; the "
        "node-count bound max(1, 2K) is the cover lemma (lemma) and checked exhaustively",
    )


def allwindow_levels(cls: type[Any]) -> Outcome:
    """AllWindowSum's levels at T, for every 1 ≤ T ≤ 2⁶² (z3)."""
    mech = cls(epsilon=1)
    prims = primitive_lemmas()
    first, second = _count_claim(lambda ops, t: mech.levels_at(t, ops), "L(T)")
    return about_code(
        "L(T) = #{b ≥ 0 : 2^b ≤ T}: level k ≤ L(T) holds item 1's node [1, 2^{k−1}] by T, "
        "for every 1 ≤ T ≤ 2⁶²",
        evaluates=[cls.levels_at],
        detail=f"z3 over 64-bit T: {first}, {second}; primitives: {', '.join(prims)}; "
        "nodes(), variance_exact, expected_l1_sum and budget_terms read levels_at",
        value="⌊log₂T⌋ + 1",
    )


def exponential_left_nodes(cls: type[Any]) -> Outcome:
    """ExponentialSum's node layout for every t ≤ 2⁶² (z3) and item 1's weights (sympy)."""
    ops = Z3Ops()
    z3 = ops.z3
    t = ops.var("t")
    lo = cls.node_start(t)
    size = t - lo + 1
    zero = ops.const(0)
    facts = z3.And(
        size != zero,
        size & (size - 1) == zero,  # a power of two
        (lo - 1) & (size - 1) == zero,  # aligned to it
        t & size == size,  # t an odd multiple of it: the left node of its level
        t & (size - 1) == zero,
        ops.le(1, lo),
    )
    v1 = prove_smt(
        facts, "node_start(t): aligned left node of size 2^lsb(t)", assumptions=_range(ops, t)
    )
    b = ops.var("b")
    top = ops.shl(1, b)
    v2 = prove_smt(
        cls.node_start(top) == ops.const(1),
        "node_start(2^(k−1)) = 1",
        assumptions=[ops.lt(b, 63)],
    )
    prims = primitive_lemmas()
    alpha = sp.Symbol("α", positive=True)
    k = sp.Symbol("k", integer=True, positive=True)
    hi = 2 ** (k - 1)  # item 1's level-k node ends at 2^{k−1} (z3 above), starts at 1
    check_identity(cls.level_weight(k, alpha), alpha ** (hi - 1), "level_weight(k) = α^{u_k − 1}")
    return about_code(
        "node t = [node_start(t), t] is the aligned left node of size 2^{lsb(t)} for every "
        "1 ≤ t ≤ 2⁶²; item 1's level-k node is [1, 2^{k−1}], weight α^{2^{k−1}−1} = "
        "level_weight(k, α)",
        evaluates=[cls.node_start, cls.level_weight],
        detail=f"z3: {v1}, {v2}; sympy for symbolic α, k; primitives: {', '.join(prims)}",
    )


def polynomial_instance_levels(cls: type[Any]) -> Outcome:
    """PolynomialSum's instance levels (z3, every W_j ≤ 2⁶²) and membership (sympy)."""
    prims = primitive_lemmas()
    first, second = _count_claim(lambda ops, w: cls.instance_levels(w, ops), "L_j")
    rho, K = sp.Symbol("ρ", positive=True), sp.Symbol("K", integer=True, nonnegative=True)
    j = sp.Symbol("j", integer=True, nonnegative=True)
    inst = SimpleNamespace(weight=rho**j, cap=K, factor=sp.Integer(1))
    check_identity(cls.instance_membership(inst), rho**j * (K + 1), "membership = ρ^j·L_j")
    return about_code(
        "instance j: L_j = ⌊log₂W_j⌋ + 1 = #{b : 2^b ≤ W_j} for every W_j ≤ 2⁶², and its "
        "declared membership is (1−β)^j·L_j",
        evaluates=[cls.instance_levels, _levels_for_window, cls.instance_membership],
        detail=f"z3: {first}, {second}; sympy for symbolic ρ = 1−β, j, K_j; primitives: "
        f"{', '.join(prims)}",
    )


class _ZInt:
    """A z3 integer with the Python operators the fixed-point steps use (``//`` is z3's
    integer division, the floor for a positive divisor, as Python's)."""

    def __init__(self, e: Any) -> None:
        self.e = e

    def __mul__(self, o: _ZInt) -> _ZInt:
        return _ZInt(self.e * o.e)

    def __floordiv__(self, o: _ZInt) -> _ZInt:
        return _ZInt(self.e / o.e)

    def __neg__(self) -> _ZInt:
        return _ZInt(-self.e)


def exponential_sensitivity_bound() -> Outcome:
    """The rational upper bound of S(α) the scale uses is ≥ S(α), for every α (z3 + sympy)."""
    import z3

    from dpref.rigorous import (
        _ceil_div,
        _fixed_point_start,
        _fixed_point_step,
        _fixed_point_tail,
        _tiny_alpha_upper,
    )

    num, den, one, p = (_ZInt(z3.Int(n)) for n in ("num", "den", "one", "p"))
    pos = [num.e >= 1, den.e > num.e, one.e >= 1]
    v0 = prove_smt(
        _fixed_point_start(num, den, one).e * den.e >= num.e * one.e,
        "p_1 ≥ α·one",
        assumptions=pos,
    )
    term, nxt = _fixed_point_step(p, num, den, one)
    v1 = prove_smt(
        z3.And(term.e * num.e >= p.e * den.e, nxt.e * one.e >= p.e * p.e),
        "term ≥ p/α, next ≥ p²/one",
        assumptions=[*pos, p.e >= 0],
    )
    x = z3.Real("x")  # α^{2^K}, with next ≥ x·one and next < one
    tail = _fixed_point_tail(p, num, den, one, lambda a, b: z3.ToReal(a.e) / z3.ToReal(b.e))
    alpha_r = z3.ToReal(num.e) / z3.ToReal(den.e)
    v2 = prove_smt(
        tail * (1 - x) >= x / alpha_r,
        "tail ≥ (α^{2^K}/α)/(1 − α^{2^K})",
        assumptions=[*pos, x > 0, x < 1, z3.ToReal(p.e) >= x * z3.ToReal(one.e), p.e < one.e],
    )
    # the induction p_k ≥ α^{2^{k−1}}·one ⇒ p_{k+1} ≥ p_k²/one ≥ α^{2^k}·one, term_k ≥ α^{2^{k−1}−1}
    a, kk = sp.Symbol("α", positive=True), sp.Symbol("k", integer=True, positive=True)
    a_k = a ** (2 ** (kk - 1))
    check_identity(a_k**2, a ** (2**kk), "(α^{2^{k−1}})² = α^{2^k}")
    check_identity(a_k / a, a ** (2 ** (kk - 1) - 1), "α^{2^{k−1}}/α = α^{2^{k−1}−1}")
    # the tiny-α branch: 1 + α + α³/(1−α) = 1 + α + Σ_{m≥3} α^m (α = 1/(1+r))
    r, m = sp.Symbol("r", positive=True), sp.Symbol("m", integer=True, nonnegative=True)
    at = 1 / (1 + r)
    series = 1 + at + sp.summation(at**m, (m, 3, sp.oo))
    check_identity(_tiny_alpha_upper(at), series, "tiny α: 1 + α + Σ_{m≥3} α^m")
    return about_code(
        "every step of the fixed point giving S_up(α) rounds up, for all integers: p_1 ≥ α·one, "
        "term ≥ p/α, next ≥ p²/one, tail ≥ (x/α)/(1−x); so term_k ≥ α^{2^{k−1}−1}·one and "
        "S_up ≥ Σ_{k≤K} α^{2^{k−1}−1} + α^{2^K−1}/(1 − α^{2^K}) ≥ S(α)",
        evaluates=[
            _ceil_div,
            _fixed_point_start,
            _fixed_point_step,
            _fixed_point_tail,
            _tiny_alpha_upper,
        ],
        detail=f"the fixed point's own steps on z3 integers: p_1 ≥ α·one ({v0}); term ≥ p/α "
        f"and next ≥ p²/one ({v1}); the tail ≥ (x/α)/(1−x) for next ≥ x·one, next < one "
        f"({v2}); induction on k (sympy): p_k ≥ α^{{2^{{k−1}}}}·one, so term_k/one ≥ "
        "α^{2^{k−1}−1}; the tail bound of S beyond K is the 'tail bound' lemma; α ≤ 2^−20: "
        "1 + α + α³/(1−α) = 1 + α + Σ_{m≥3} α^m ≥ S (distinct exponents 0, 1, 3, 7, …). Not "
        "covered: the loop's summation and stopping (structure, checked on the grid rows)",
    )


def polynomial_allocation_series() -> Outcome:
    """The pieces of PolynomialSum's series bound (the λ every node's scale is built from)."""
    import z3

    from dpref.rigorous import (
        _ceil_div,
        _series_step,
        polynomial_kappa_upper,
        polynomial_series_tail,
    )

    p, num, den = (_ZInt(z3.Int(n)) for n in ("p", "num", "den"))
    v = prove_smt(
        _series_step(p, num, den).e * den.e >= p.e * num.e,
        "p_{j+1} ≥ p_j·x",
        assumptions=[p.e >= 0, num.e >= 0, den.e >= 1],
    )
    r, kap = sp.Symbol("r", positive=True), sp.Symbol("κ", positive=True)
    J = sp.Symbol("J", integer=True, nonnegative=True)
    x = 1 / (1 + r)  # x ∈ (0, 1)
    m = sp.Symbol("m", integer=True, nonnegative=True)  # j = J + m
    series = x**J * sp.summation(x**m * (kap * (J + m) + 1), (m, 0, sp.oo))
    check_identity(polynomial_series_tail(x**J, kap, J, x), series, "tail = Σ_{j≥J} x^j(κj+1)")
    bracket = polynomial_series_tail(sp.Integer(1), kap, J, x)
    check_sign(bracket, "positive", "the tail grows with r ≥ x^J")
    c = sp.Symbol("c", positive=True)
    rho = 1 / (1 + r)  # ρ = 1 − β ∈ (0, 1): 1/ρ − 1 = r
    gap = polynomial_kappa_upper(rho, c) - r / (c * sp.log(2))
    check_sign(gap, "nonnegative", "κ_up ≥ (1/ρ − 1)/(c ln 2) ≥ log₂(1/ρ)/c")
    return about_code(
        "the series bound's pieces are safe for every input: p_{j+1} ≥ p_j·x (all integers); "
        "tail(x^J, κ, J, x) = Σ_{j≥J} x^j(κj + 1) and grows with its r; κ_up ≥ log₂(1/ρ)/c",
        evaluates=[_series_step, _ceil_div, polynomial_series_tail, polynomial_kappa_upper],
        detail=f"z3 on integers ({v}); sympy for symbolic x = 1/(1+r), κ, J, c (lemma "
        "ln y ≤ y − 1 for κ: log₂(1/ρ) ≤ (1/ρ − 1)/ln 2). Not about the code: the breakpoints "
        "W_j (integer roots; '(1−β)g ≤ g' ≤ g' checks them), L_j ≤ κj + 1 from W_j ≤ ρ^{−j/c} "
        "(lemma), x ≥ (1−β)^{2/3} and q_j ≥ (1−β)^{j/3} (checked in the series rows)",
    )
