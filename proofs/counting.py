"""Proofs for the counting mechanisms (docs/spec.md §1): Simple I, Simple II, Two-Level,
Binary, Hybrid.

Each mechanism releases noisy p-sums (nodes) ``[l_n, u_n]`` with ``Lap(b_n)``; by basic
composition the release is ``(max_i Σ_{n ∋ i} Δ/b_n)``-DP (Dwork et al. 2006).

Labels.  *membership* and *budget* are **proven about the code**: they evaluate the
functions every release path uses (``node_interval``/``block_interval``, ``memberships``,
``Binary.levels``, ``node_scale``, Hybrid's ``log_scale``/``instance_scale``) — sympy for
symbolic T, ε, Δ, B, k; z3 (:mod:`proofs.smt`) over every ``1 ≤ T ≤ 2⁶²`` for Binary's and
Hybrid's bit arithmetic — and the budget multiplies a membership derived *independently*
of ``memberships`` by the code's scales.  *variance* and the *pitfall* are **proven
lemmas** (they re-derive closed forms).  Each has an exhaustive exact companion against the
node tables and plans, ``checked for T ≤ 4096`` (evidence, not a proof).

Theorem (membership).  The worst-placed item lies in
``T`` nodes (Simple I), 1 (Simple II), 1 item node + 1 block (Two-Level),
``⌊log₂T⌋ + 1`` (Binary), and 1 log block + ``k`` nodes of the k-th binary instance
(Hybrid); each equals the class's declared membership.

Proof.  Simple I: item i is in ``[1, t]`` iff ``i ≤ t ≤ T``, i.e. in ``T − i + 1`` nodes,
maximal at i = 1.  Simple II and Two-Level's item nodes: i is in ``[t, t]`` iff t = i.
Two-Level blocks ``[(q−1)B+1, qB]`` and Hybrid's log blocks ``{1}``,
``[2^{k−1}+1, 2^k]`` are non-empty, start at 1 and are contiguous (the next block starts
one after the previous ends), so they partition the items: one block per item.  Binary:
the node released at t is ``[t − 2^{lsb t} + 1, t]``, the aligned node of size
``2^{lsb t}`` containing t; so the released nodes are exactly the aligned *left* nodes
``[⌊(i−1)/2^j⌋2^j + 1, (⌊(i−1)/2^j⌋+1)2^j]`` (``⌊(i−1)/2^j⌋`` even) ending by T, and an
item lies in at most one per level j.  Item 1's level-j node is ``[1, 2^j]``, a left node,
and every item's level-j node ends at or after ``2^j`` (``2^j⌊(i−1)/2^j⌋ ≥ 0``); so item 1
is the worst, lying in one node for each j ≥ 0 with ``2^j ≤ T``, i.e. (log₂ is increasing
and j is an integer) ``j ≤ ⌊log₂T⌋``: ``⌊log₂T⌋ + 1`` nodes.  Hybrid: items
``2^k+1 … 2^{k+1}−1`` are positions ``1 … 2^k−1`` of a Binary instance of horizon
``2^k − 1``, which has ``⌊log₂(2^k−1)⌋ + 1 = k`` levels because
``2^{k−1} ≤ 2^k − 1 < 2^k`` (the floor lemma: ``⌊x⌋ = n ⟺ n ≤ x < n+1``).  ∎

Theorem (budget).  ``Σ_{n ∋ i} Δ/b_n = ε`` for the worst item: ``T·Δ/(TΔ/ε)``,
``Δ/(Δ/ε)``, ``Δ/(2Δ/ε) + Δ/(2Δ/ε)``, ``L·Δ/(LΔ/ε)``, ``Δ/(2Δ/ε) + k·Δ/(2kΔ/ε)`` all
simplify to ε (for Two-Level once a block is complete, always the case for B ≤ T; for
Hybrid, ε/2 + ε/2 for every k ≥ 1, so the supremum over T is ε).  ∎

Theorem (the pitfall).  With ``Lap(log₂T/ε)`` per node, the loss is
``ε(⌊log₂T⌋+1)/log₂T > ε`` for every T ≥ 2, since ``⌊x⌋ > x − 1``; at T = 5 it is
``3ε/log₂5 ≈ 1.292ε``, at T = 1000 ``10ε/log₂1000 ≈ 1.0034ε``; and at T = 2^m,
``⌈log₂T⌉ = m`` is one short of the ``m + 1`` levels.  ∎

Theorem (variance).  ``Var(out_t) = 2 Σ_n r_{t,n}² b_n²`` with the recombination the class
declares (``row_terms``) equals ``2(TΔ/ε)²``, ``2t(Δ/ε)²``,
``2(2Δ/ε)²(⌊t/B⌋ + t mod B)``, ``popcount(t)·2(LΔ/ε)²`` and, at ``t = 2^k + r``,
``2(2Δ/ε)²(k+1) + popcount(r)·2(2kΔ/ε)²``.  ∎  That ``row_terms``, the class's
``variance_exact`` and the plan's ``2Σ r²b²`` agree is checked for every t ≤ 4096.

References
----------
.. [1] T.-H. H. Chan, E. Shi, D. Song. "Private and Continual Release of Statistics."
   ACM TISSEC 14(3), 2011 (ICALP 2010): Simple Counting Mechanisms I and II, the
   two-level mechanism, the Binary Mechanism (Algorithm 2), the Hybrid Mechanism.
.. [2] C. Dwork, M. Naor, T. Pitassi, G. N. Rothblum. "Differential Privacy under
   Continual Observation." STOC 2010, pp. 715–724.
.. [3] C. Dwork, F. McSherry, K. Nissim, A. Smith. "Calibrating Noise to Sensitivity in
   Private Data Analysis." TCC 2006 (the Laplace mechanism and basic composition).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from math import lcm
from typing import Any

import numpy as np
import numpy.typing as npt
import sympy as sp

from dpref.mechanisms import Binary, Hybrid, Mechanism, SimpleI, SimpleII, TwoLevel
from dpref.mechanisms.base import EXACT, MAX_HORIZON, BudgetTerm, NodeTable
from proofs.core import (
    SYMBOLIC,
    B,
    ClaimResult,
    Delta,
    Outcome,
    ProofFailure,
    T,
    about_code,
    check_identity,
    check_sign,
    checked,
    eps,
    i,
    j,
    k,
    label,
    lemma,
    popcount,
    q,
    run_claim,
    t,
)
from proofs.smt import BITS, Z3Ops, primitive_lemmas, prove_smt

__all__ = ["PROOFS", "pitfall_factor"]

IntArray = npt.NDArray[np.int64]

EPSILON = Fraction(7, 10)
"""ε used by the exhaustive checks (any ε > 0 would do: every sum is linear in ε)."""

Derivation = tuple[dict[str, Any], list[str]]


# ----------------------------------------------------------------- derivations
def _derive_simple1(cls: type[Any]) -> Derivation:
    count = sp.summation(1, (t, i, T))  # nodes [1, t] with i ≤ t ≤ T
    check_identity(count, T - i + 1, "item i lies in the nodes [1, t], t = i..T")
    check_sign(count - count.subs(i, 1), "nonpositive", "item 1 is the worst item")
    return {"prefix": count.subs(i, 1)}, ["#{t: i ≤ t ≤ T} = T − i + 1 ≤ T (i ≥ 1)"]


def _single_item_node() -> Any:
    count = sp.summation(1, (t, i, i))  # nodes [t, t] with t ≤ i ≤ t
    check_identity(count, 1, "item i lies in the one node [i, i]")
    return count


def _blocks_partition(lo: Callable[[Any], Any], hi: Callable[[Any], Any], first: Any) -> None:
    """Blocks ``[lo(q), hi(q)]``, q ≥ 1, are non-empty, contiguous and follow ``first``."""
    check_identity(lo(q + 1) - hi(q), 1, "block q+1 starts right after block q")
    check_identity(lo(1), first, "the first block starts where it should")
    check_sign(hi(q) - lo(q) + 1, "positive", "blocks are non-empty")


def _derive_simple2(cls: type[Any]) -> Derivation:
    return {"item": _single_item_node()}, ["i ∈ [t, t] ⟺ t = i"]


def _derive_two_level(cls: type[Any]) -> Derivation:
    item = _single_item_node()
    _blocks_partition(lambda n: (n - 1) * B + 1, lambda n: n * B, 1)
    return {"item": item, "block": sp.Integer(1)}, [
        "i ∈ [t, t] ⟺ t = i",
        "blocks [(q−1)B+1, qB] start at 1 and are contiguous: one block per item",
    ]


def _binary_levels_of_item_one(cls: type[Any]) -> tuple[Any, list[str]]:
    lo, hi = cls.level_node(i, j)
    check_identity(lo.subs(i, 1), 1, "item 1's level-j node starts at 1 (a left node)")
    check_identity(hi.subs(i, 1), 2**j, "item 1's level-j node ends at 2^j")
    check_sign(hi - hi.subs(i, 1), "nonnegative", "every item's level-j node ends ≥ 2^j")
    check_identity(sp.log(2**j, 2), j, "log₂ 2^j = j")
    count = sp.summation(1, (j, 0, SYMBOLIC.floor_log2(T)))
    return count, [
        "level-j node of i: Binary.level_node(i, j); item 1's is [1, 2^j] (left node)",
        "its end − 2^j = 2^j⌊(i−1)/2^j⌋ ≥ 0: item 1 is the worst",
        "2^j ≤ T ⟺ j ≤ ⌊log₂T⌋ (log₂ increasing, j integer): Σ_{j=0}^{⌊log₂T⌋} 1",
    ]


def _derive_binary(cls: type[Any]) -> Derivation:
    count, steps = _binary_levels_of_item_one(cls)
    return {"level": count}, steps


def _hybrid_instance_levels() -> Any:
    """``Binary.levels(2^k − 1) = k`` for integer k ≥ 1, via the floor lemma."""
    m = sp.Symbol("m", integer=True, nonnegative=True)
    levels = Binary.levels(2**k - 1, SYMBOLIC)
    x = SYMBOLIC.floor_log2(2**k - 1)
    # ⌊log₂(2^k−1)⌋ = k−1 ⟺ 2^{k−1} ≤ 2^k − 1 < 2^k  (k = m + 1, m ≥ 0)
    check_sign((2**k - 1 - 2 ** (k - 1)).subs(k, m + 1), "nonnegative", "2^{k−1} ≤ 2^k − 1")
    check_sign(2**k - (2**k - 1), "positive", "2^k − 1 < 2^k")
    derived = levels.subs(x, k - 1)
    if derived.has(sp.floor):
        raise ProofFailure(f"Binary.levels(2^k − 1) = {levels}: not of the form ⌊log₂(2^k−1)⌋+c")
    return derived


def _derive_hybrid(cls: type[Any]) -> Derivation:
    _blocks_partition(lambda n: 2 ** (n - 1) + 1, lambda n: 2**n, 2)  # block 0 is {1}
    levels = _hybrid_instance_levels()
    check_identity(levels, k, "the k-th instance (horizon 2^k − 1) has k levels")
    return {"log": sp.Integer(1), "binary_k": levels}, [
        "log blocks {1}, [2^{k−1}+1, 2^k] are contiguous: one log block per item",
        "instance k = Binary(horizon 2^k − 1): ⌊log₂(2^k−1)⌋ + 1 = k (2^{k−1} ≤ 2^k−1 < 2^k)",
    ]


# ------------------------------------------------- steps that evaluate the code
CodeSteps = tuple[list[str], list[Any]]
"""What a code-evaluating membership proof returns: its discharged steps and the dpref
functions it evaluated."""


def _sym_interval_count(cls: type[Any], what: str) -> tuple[Any, list[str]]:
    """Evaluate ``cls.node_interval(t)`` for symbolic t and count the nodes holding item i
    (lo(t) ≤ i ≤ hi(t) = t, t ≤ T) for the two interval shapes the Simple mechanisms use."""
    lo, hi = cls.node_interval(t)
    check_identity(hi, t, f"{what}: the node released at t ends at t")
    if sp.simplify(lo - 1) == 0:  # [1, t]: i ∈ [1, t] ⟺ i ≤ t
        count = sp.summation(1, (t, i, T))
        check_identity(count, T - i + 1, "item i lies in the nodes [1, t], t = i..T")
        check_sign(count - count.subs(i, 1), "nonpositive", "item 1 is the worst item")
        return count.subs(i, 1), [f"{what}(t) = [1, t]: #{{t: i ≤ t ≤ T}} = T − i + 1 ≤ T"]
    check_identity(lo, t, f"{what}: the node released at t is [t, t]")
    return _single_item_node(), [f"{what}(t) = [t, t]: i ∈ [t, t] ⟺ t = i"]


def _code_simple(cls: type[Any], kind: str) -> CodeSteps:
    count, steps = _sym_interval_count(cls, "node_interval")
    _check_memberships(cls, {kind: count}, {"horizon": T})
    return steps, [cls.node_interval, cls.memberships]


def _code_simple1(cls: type[Any]) -> CodeSteps:
    return _code_simple(cls, "prefix")


def _code_simple2(cls: type[Any]) -> CodeSteps:
    return _code_simple(cls, "item")


def _code_two_level(cls: type[Any]) -> CodeSteps:
    _blocks_partition(
        lambda n: cls.block_interval(n, B)[0], lambda n: cls.block_interval(n, B)[1], 1
    )
    _check_memberships(cls, {"item": 1, "block": 1}, {"horizon": T})
    return [
        "TwoLevel.block_interval(q, B) evaluated for symbolic q, B: non-empty, contiguous, "
        "the first starts at 1 (a partition: one block per item); item nodes [t, t]"
    ], [cls.block_interval, cls.memberships]


def _check_memberships(cls: type[Any], derived: dict[str, Any], symbols: dict[str, Any]) -> None:
    """The class's ``memberships`` (what its scales are computed from) = the derivation."""
    code = cls.memberships(symbols.get("horizon", symbols.get("k")), SYMBOLIC)
    if set(code) != set(derived):
        raise ProofFailure(f"memberships kinds {sorted(code)} ≠ proven {sorted(derived)}")
    for kind, count in derived.items():
        check_identity(code[kind], count, f"{cls.__name__}.memberships()[{kind!r}]")


def _smt_binary_nodes(ops: Z3Ops, interval: Any, T_: Any, what: str) -> list[str]:
    """z3: the nodes ``interval(t)``, 1 ≤ t ≤ T_, are aligned left nodes of power-of-two size
    ≤ T_, at most one per size contains any item, and item 1 is in the one of size 2^j
    (released at 2^j) for every 2^j ≤ T_."""
    z3 = ops.z3
    t1, t2, item, jj = ops.var("t1"), ops.var("t2"), ops.var("i"), ops.var("j")
    lo1, hi1 = interval(t1)
    lo2, hi2 = interval(t2)
    size1, size2 = hi1 - lo1 + 1, hi2 - lo2 + 1
    in1 = [ops.le(1, t1), ops.le(t1, T_)]
    in2 = [ops.le(1, t2), ops.le(t2, T_)]
    out = [
        prove_smt(
            z3.And(
                hi1 == t1,
                size1 != 0,
                size1 & (size1 - 1) == 0,
                ops.le(size1, T_),
                z3.URem(lo1 - 1, size1) == 0,
                (lo1 - 1) & size1 == 0,
            ),
            f"{what}: the node released at t ≤ T is an aligned left node of size 2^j ≤ T",
            assumptions=in1,
        ),
        prove_smt(
            t1 == t2,
            f"{what}: two released nodes of one size holding item i are the same node",
            assumptions=[
                *in1,
                *in2,
                size1 == size2,
                ops.le(lo1, item),
                ops.le(item, hi1),
                ops.le(lo2, item),
                ops.le(item, hi2),
            ],
        ),
    ]
    p = ops.shl(1, jj)
    lo_p, hi_p = interval(p)
    out.append(
        prove_smt(
            z3.And(lo_p == 1, hi_p == p),
            f"{what}: item 1 lies in the node released at 2^j, for every 2^j ≤ T",
            assumptions=[ops.lt(jj, BITS - 2), ops.le(p, T_)],
        )
    )
    return out


def _levels_count(ops: Z3Ops, T_: Any) -> Any:
    """``#{j ≥ 0 : 2^j ≤ T}`` written out over the 64 bits (no floor_log2)."""
    return sum((ops.ite(ops.le(1 << j_, T_), 1, 0) for j_ in range(BITS - 1)), ops.const(0))


def _code_binary(cls: type[Any]) -> CodeSteps:
    ops = Z3Ops()
    T_ = ops.var("T")
    in_range = [ops.le(1, T_), ops.le(T_, MAX_HORIZON)]
    lemmas = primitive_lemmas()
    steps = _smt_binary_nodes(ops, cls.node_interval, T_, "Binary.node_interval")
    steps.append(
        prove_smt(
            cls.memberships(T_, ops)["level"] == _levels_count(ops, T_),
            "Binary.memberships(T)['level'] = #{j : 2^j ≤ T}",
            assumptions=in_range,
        )
    )
    return [
        f"z3 over 1 ≤ T ≤ 2^62 ({', '.join(sorted(set(steps)))}; primitives: "
        f"{', '.join(lemmas)}): node_interval(t) is an aligned left node of size 2^j ≤ T, "
        "one per size holds an item, item 1 is in one of each size 2^j ≤ T; "
        "memberships(T) = levels(T) = #{j : 2^j ≤ T}"
    ], [cls.node_interval, cls.levels, cls.memberships]


def _code_hybrid(cls: type[Any]) -> CodeSteps:
    ops = Z3Ops()
    z3 = ops.z3
    tt, kk = ops.var("t"), ops.var("k")
    in_range = [ops.le(1, tt), ops.le(tt, MAX_HORIZON)]
    lo, hi = cls.node_interval(tt, ops)
    p = ops.shl(1, ops.floor_log2(tt))
    r = tt - p
    blo, bhi = Binary.node_interval(r)
    lemmas = primitive_lemmas()
    steps = [
        prove_smt(
            z3.And(hi == tt, lo == ops.ite(tt == 1, 1, (p >> 1) + 1)),
            "Hybrid.node_interval(2^k) = [2^{k−1}+1, 2^k] ([1, 1] at t = 1): contiguous log blocks",
            assumptions=[*in_range, r == 0],
        ),
        prove_smt(
            z3.And(lo == blo + p, hi == bhi + p, ops.le(p + 1, lo)),
            "Hybrid.node_interval(2^k + r) = Binary.node_interval(r) + 2^k, inside instance k",
            assumptions=[*in_range, r != 0],
        ),
        prove_smt(
            cls.memberships(kk, ops)["binary_k"] == Binary.levels(ops.shl(1, kk) - 1, ops),
            "Hybrid.memberships(k)['binary_k'] = Binary.levels(2^k − 1)",
            assumptions=[ops.le(1, kk), ops.le(kk, 61)],
        ),
    ]
    code = cls.memberships(k, SYMBOLIC)
    check_identity(code["log"], 1, "Hybrid.memberships(k)['log']")
    return [
        f"z3 over 1 ≤ t ≤ 2^62 and 1 ≤ k ≤ 61 ({', '.join(sorted(set(steps)))}; primitives: "
        f"{', '.join(lemmas)}): log blocks {{1}}, [2^(k−1)+1, 2^k] are contiguous (one per "
        "item); the node at 2^k + r is Binary's node at r shifted into instance k (Binary's "
        "membership: its horizon 2^k − 1 has Binary.levels(2^k − 1) levels, "
        "= memberships(k)['binary_k'])"
    ], [cls.node_interval, cls.memberships, Binary.node_interval, Binary.levels]


# ------------------------------------------------------------------- the claims
def _declared(m: Mechanism, symbols: dict[str, Any]) -> dict[str, BudgetTerm]:
    terms = m.budget_terms(SYMBOLIC, **symbols)
    out = {term.kind: term for term in terms}
    if len(out) != len(terms):
        raise ProofFailure(f"budget_terms repeats a kind: {[x.kind for x in terms]}")
    return out


def _membership(m: Mechanism, spec: _Spec) -> Outcome:
    derived, steps = spec.derive(type(m))
    code_steps, evaluated = spec.code(type(m))
    declared = _declared(m, spec.symbols)
    if set(derived) != set(declared):
        raise ProofFailure(f"declared node kinds {sorted(declared)} ≠ proven {sorted(derived)}")
    for kind, count in derived.items():
        check_identity(declared[kind].membership, count, f"declared membership of {kind!r}")
    statement = " + ".join(f"{kind}: {sp.simplify(c)}" for kind, c in derived.items())
    return about_code(
        f"worst item lies in {statement} nodes = memberships() = declared, for every T",
        evaluates=[*evaluated, type(m).budget_terms],
        detail="; ".join([*code_steps, *steps]),
    )


def _budget(m: Mechanism, spec: _Spec) -> Outcome:
    derived, _ = spec.derive(type(m))  # independent of the code's memberships
    scales, evaluated = spec.scales(type(m))  # the scales the release draws with
    declared = _declared(m, spec.symbols)
    if set(derived) != set(declared) or set(scales) != set(derived):
        raise ProofFailure(
            f"node kinds: declared {sorted(declared)}, code {sorted(scales)}, proven "
            f"{sorted(derived)}"
        )
    for kind in derived:
        check_identity(declared[kind].scale, scales[kind], f"declared scale of {kind!r}")
    parts = {kind: derived[kind] * Delta / scales[kind] for kind in derived}
    total = sp.simplify(sum(parts.values(), sp.Integer(0)))
    check_identity(total, eps, "Σ_{n ∋ worst item} Δ/b_n")
    check_identity(m.declared_budget(SYMBOLIC, **spec.symbols), eps, "declared_budget")
    detail = " + ".join(f"{kind}: {sp.simplify(v)}" for kind, v in parts.items())
    detail += "; scales from " + ", ".join(getattr(f, "__qualname__", str(f)) for f in evaluated)
    if spec.extra_budget is not None:
        detail += "; " + spec.extra_budget(m, declared)
    return about_code(
        f"Σ_n Δ/b_n = {total} for every T, ε, Δ (derived memberships × the code's scales)",
        evaluates=[*evaluated, type(m).budget_terms],
        detail=detail,
        value=str(total),
    )


def _uniform_scales(cls: type[Any], kinds: tuple[str, ...]) -> tuple[dict[str, Any], list[Any]]:
    scale = cls.node_scale(T, eps, Delta, SYMBOLIC)
    levels = [cls.levels] if hasattr(cls, "levels") else []  # Binary: memberships reads it
    return {kind: scale for kind in kinds}, [cls.node_scale, cls.memberships, *levels]


def _hybrid_scales(cls: type[Any]) -> tuple[dict[str, Any], list[Any]]:
    return {
        "log": cls.log_scale(eps, Delta, SYMBOLIC),
        "binary_k": cls.instance_scale(k, eps, Delta, SYMBOLIC),
    }, [cls.log_scale, cls.instance_scale, cls.memberships]


def _hybrid_instance_budget(m: Mechanism, declared: dict[str, BudgetTerm]) -> str:
    levels = _hybrid_instance_levels()
    check_identity(
        type(m).instance_scale(k, eps, Delta, SYMBOLIC),  # type: ignore[attr-defined]
        levels * Delta / (eps / 2),
        "instance k's scale is Binary's L·Δ/(ε/2)",
    )
    return "instance k is a Binary mechanism with budget ε/2 (scale k·Δ/(ε/2) = 2kΔ/ε)"


def _variance(m: Mechanism, spec: _Spec) -> Outcome:
    rows = m.row_terms(t, SYMBOLIC, **spec.symbols)  # type: ignore[attr-defined]
    var = sum((2 * r.count * r.coefficient**2 * r.scale**2 for r in rows), sp.Integer(0))
    check_identity(var, spec.variance, "2 Σ_n r_{t,n}² b_n²")
    return lemma(f"Var(out_t) = {spec.variance}", "2Σ r²b² over the declared row_terms")


def pitfall_factor(horizon: int) -> Any:
    """``(⌊log₂T⌋+1)/log₂T``: the real loss in units of ε with ``Lap(log₂T/ε)`` per node."""
    L, _ = _binary_levels_of_item_one(Binary)
    return sp.simplify(L / sp.log(T, 2)).subs(T, horizon)


def _pitfall(m: Mechanism, spec: _Spec) -> Outcome:
    L, _ = _binary_levels_of_item_one(type(m))  # the proven membership
    log2T = sp.log(T, 2)
    total = L * Delta / (log2T * Delta / eps)
    check_identity(total, eps * (SYMBOLIC.floor_log2(T) + 1) / log2T, "loss with Lap(log₂T/ε)")
    # floor lemma ⌊x⌋ > x − 1: write ⌊log₂T⌋ = log₂T − 1 + g with g > 0; T = n + 2 ≥ 2
    g = sp.Symbol("g", positive=True)
    n = sp.Symbol("n", integer=True, nonnegative=True)
    excess = (total - eps).subs(SYMBOLIC.floor_log2(T), log2T - 1 + g).subs(T, n + 2)
    check_sign(excess, "positive", "loss − ε for T ≥ 2")
    mm = sp.Symbol("m", integer=True, nonnegative=True)
    check_identity(L.subs(T, 2**mm) - sp.ceiling(sp.log(2**mm, 2)), 1, "levels − ⌈log₂T⌉ at 2^m")
    shown = []
    for v in (5, 1000):
        factor = sp.simplify(total.subs(T, v) / eps)
        shown.append(f"T={v}: {L.subs(T, v)}ε/log₂{v} ≈ {float(factor):.4f}ε")
    at5 = float(sp.simplify(total.subs(T, 5) / eps))
    return lemma(
        "ε(⌊log₂T⌋+1)/log₂T > ε for all T ≥ 2",
        "; ".join(shown) + "; at T=2^m, ⌈log₂T⌉ = m levels but item 1 is in m+1 (⌊x⌋ > x−1)",
        value=f"{at5:.4f}ε at T=5",
    )


# ---------------------------------------------------------- exhaustive checks
def _item_sums(lo: IntArray, hi: IntArray, w: npt.NDArray[np.float64], horizon: int) -> Any:
    d = np.bincount(lo - 1, weights=w, minlength=horizon + 1)
    d -= np.bincount(hi, weights=w, minlength=horizon + 1)
    return np.cumsum(d[:horizon])


def _node_eps(m: Mechanism, nt: NodeTable) -> tuple[npt.NDArray[np.float64], int]:
    """Per-node ``Δ|w_n|/b_n`` as integers over a common denominator D (exact in float64)."""
    wt = nt.weight_table
    widx = nt.weight_idx if nt.weight_idx is not None else np.zeros(nt.size, np.int64)
    table = [abs(w) * m.sensitivity / b for w in wt for b in nt.scale_table]
    denom = lcm(*(x.denominator for x in table)) if table else 1
    ints = np.array([int(x * denom) for x in table], dtype=np.float64)
    if ints.size and ints.max() * max(nt.size, 1) >= 2**53:
        raise ProofFailure("per-node ε too fine for exact float64 sums")
    return ints[widx * len(nt.scale_table) + nt.scale_idx], denom


def _binary_table(m: Mechanism, nt: NodeTable, horizon: int) -> str | None:
    """Every node of Binary's table is ``level_node`` of its end, a left node; one per t."""
    size = nt.hi - nt.lo + 1
    if not np.array_equal(nt.hi, np.arange(1, horizon + 1)) or np.any(size & (size - 1)):
        return "node ends are not 1..T or a size is not a power of two"
    level = np.round(np.log2(size)).astype(np.int64)
    if not isinstance(m, Binary):
        return f"{m!r} is not a Binary mechanism"
    lo, hi = type(m).level_node(nt.hi, level)
    if not (np.array_equal(lo, nt.lo) and np.array_equal(hi, nt.hi)):
        return "a node is not the aligned level_node of its end"
    if np.any(((nt.hi - 1) // size) % 2):
        return "a released node is a right node"
    return None


def _exhaustive(m_cls: type[Any], spec: _Spec, limit: int) -> tuple[Outcome | str, Outcome | str]:
    """Membership and budget against ``nodes(T)`` for every T ≤ limit, exactly.

    Returns an outcome, or the first failure's description, for each of the two claims.
    """
    fail: list[str | None] = [None, None]
    n_tables = 0
    if m_cls.needs_horizon:
        per_t = ((T_, _make(m_cls, T_)) for T_ in range(1, limit + 1))
        tables = ((T_, m, m.nodes(T_)) for T_, m in per_t)
    else:  # unbounded: the nodes released by T are those of one run ending ≤ T
        m_all = m_cls(epsilon=EPSILON)
        full = m_all.nodes(limit)
        if np.any(np.diff(full.hi) < 0):
            raise ProofFailure("nodes are not in release order")
        cut = np.searchsorted(full.hi, np.arange(1, limit + 1), side="right")
        tables = (
            (
                T_,
                m_all,
                NodeTable(
                    full.lo[: cut[T_ - 1]],
                    full.hi[: cut[T_ - 1]],
                    full.scale_table,
                    full.scale_idx[: cut[T_ - 1]],
                    full.weight_table,
                    None if full.weight_idx is None else full.weight_idx[: cut[T_ - 1]],
                ),
            )
            for T_ in range(1, limit + 1)
        )
    for T_, m, nt in tables:
        n_tables += 1
        if fail[0] is None:
            fail[0] = _membership_at(m_cls, spec, m, nt, T_)
        if fail[1] is None:
            fail[1] = _budget_at(m_cls, m, nt, T_)
        if fail[0] is not None and fail[1] is not None:
            break
    source = "m.nodes(T)" if m_cls.needs_horizon else f"nodes(T) = the nodes of nodes({limit})"
    rel = "=" if m_cls.needs_horizon else "≤"
    return (
        fail[0]
        or checked(
            "T",
            limit,
            f"max_i #{{n ∋ i}} {rel} declared membership",
            f"{n_tables} tables from {source}",
        ),
        fail[1]
        or checked(
            "T",
            limit,
            f"max_i Σ_n Δ/b_n {rel} declared budget ≤ ε (ε = {EPSILON})",
            f"exact, {n_tables} tables from {source}",
        ),
    )


def _membership_at(
    m_cls: type[Any], spec: _Spec, m: Mechanism, nt: NodeTable, T_: int
) -> str | None:
    """The first membership failure at horizon ``T_``, or None."""
    try:
        if spec.table_check is not None:
            bad = spec.table_check(m, nt, T_)
            if bad:
                return f"T={T_}: {bad}"
        counts = _item_sums(nt.lo, nt.hi, np.ones(nt.size), T_)
        k_worst = max(1, T_.bit_length() - 1)  # Hybrid: the instance index at T
        terms = m.budget_terms(EXACT, horizon=T_, k=k_worst)
        declared = sum(x.membership for x in terms)
        worst = int(counts.max())
        if worst > declared or (m_cls.needs_horizon and worst != declared):
            return f"T={T_}: worst item lies in {worst} nodes, declared {declared}"
    except Exception as exc:  # a crashing declaration fails the check
        return f"T={T_}: {type(exc).__name__}: {exc}"
    return None


def _budget_at(m_cls: type[Any], m: Mechanism, nt: NodeTable, T_: int) -> str | None:
    """The first budget failure at horizon ``T_``, or None."""
    try:
        w, denom = _node_eps(m, nt)
        total = Fraction(int(np.rint(_item_sums(nt.lo, nt.hi, w, T_).max())), denom)
        k_worst = max(1, T_.bit_length() - 1)
        declared = m.declared_budget(EXACT, horizon=T_, k=k_worst)
        expected = m.expected_privacy_sum(T_)
        if total > m.declared_epsilon or total > declared:
            return (
                f"T={T_}: max_i Σ Δ/b_n = {total} > declared {declared} (ε = {m.declared_epsilon})"
            )
        if (m_cls.needs_horizon and total != declared) or (
            expected is not None and total != expected
        ):
            return f"T={T_}: max_i Σ Δ/b_n = {total} ≠ declared {declared}"
        if declared != m.declared_epsilon:
            return f"T={T_}: declared budget {declared} ≠ the mechanism's ε {m.declared_epsilon}"
    except Exception as exc:  # a crashing declaration fails the check
        return f"T={T_}: {type(exc).__name__}: {exc}"
    return None


def _variance_exhaustive(m_cls: type[Any], spec: _Spec, limit: int) -> Outcome:
    """row_terms (exact), variance_exact and the plan's 2Σr²b² agree for t ≤ limit."""
    instances = spec.instances(m_cls, limit)
    for m in instances:
        plan_var = m.plan(limit).variance_exact()
        class_var = m.variance_exact(limit)
        for t_ in range(1, limit + 1):
            rows = m.row_terms(t_, EXACT)  # type: ignore[attr-defined]
            rv = sum((2 * r.count * r.coefficient**2 * r.scale**2 for r in rows), Fraction(0))
            if not rv == class_var[t_ - 1] == plan_var[t_ - 1]:
                raise ProofFailure(
                    f"{m!r} t={t_}: row_terms {rv}, variance_exact {class_var[t_ - 1]}, "
                    f"plan {plan_var[t_ - 1]}"
                )
    return checked(
        "t",
        limit,
        "row_terms variance = variance_exact = plan 2Σ r²b²",
        "; ".join(repr(m) for m in instances),
    )


# ---------------------------------------------------------------- the specs
def _make(cls: type[Any], horizon: int, **kw: Any) -> Mechanism:
    m: Mechanism = cls(epsilon=EPSILON, horizon=horizon, **kw)
    return m


def _one(cls: type[Any], limit: int) -> list[Mechanism]:
    return [_make(cls, limit)]


def _two_level_instances(cls: type[Any], limit: int) -> list[Mechanism]:
    sizes = sorted({7, max(1, limit // 4 + 3)})
    return [_make(cls, limit)] + [_make(cls, limit, block_size=b) for b in sizes]


def _unbounded(cls: type[Any], limit: int) -> list[Mechanism]:
    return [cls(epsilon=EPSILON)]


_BASE = {"horizon": T, "epsilon": eps, "sensitivity": Delta}
_L = SYMBOLIC.floor_log2(T) + 1
_k_t = SYMBOLIC.floor_log2(t)
_r_t = t - 2**_k_t


@dataclass(frozen=True)
class _Spec:
    """What the proof of one class needs besides the class itself."""

    derive: Callable[[type[Any]], Derivation]
    """Proven membership per node kind (with the proof's steps), derived independently of
    the class's ``memberships``."""
    code: Callable[[type[Any]], CodeSteps]
    """Membership steps that evaluate the class's node and membership functions."""
    scales: Callable[[type[Any]], tuple[dict[str, Any], list[Any]]]
    """The class's scale functions evaluated symbolically, per kind (and the functions)."""
    symbols: dict[str, Any]
    """The symbols passed to the declarations."""
    variance: Any
    """The closed-form variance the theorem states."""
    instances: Callable[[type[Any], int], list[Mechanism]]
    """The parameterisations whose plans are checked exhaustively."""
    table_check: Callable[[Mechanism, NodeTable, int], str | None] | None = None
    """Extra structural check of each node table."""
    extra_budget: Callable[[Mechanism, dict[str, BudgetTerm]], str] | None = None
    """Extra budget step (returns its description)."""
    pitfall: bool = False
    """Whether to prove the ``Lap(log₂T/ε)`` pitfall too."""


_SPECS: dict[str, _Spec] = {
    "SimpleI": _Spec(
        _derive_simple1,
        _code_simple1,
        lambda c: _uniform_scales(c, ("prefix",)),
        _BASE,
        2 * (T * Delta / eps) ** 2,
        _one,
    ),
    "SimpleII": _Spec(
        _derive_simple2,
        _code_simple2,
        lambda c: _uniform_scales(c, ("item",)),
        _BASE,
        2 * t * (Delta / eps) ** 2,
        _unbounded,
    ),
    "TwoLevel": _Spec(
        _derive_two_level,
        _code_two_level,
        lambda c: _uniform_scales(c, ("item", "block")),
        {**_BASE, "block_size": B},
        2 * (2 * Delta / eps) ** 2 * (sp.floor(t / B) + sp.Mod(t, B)),
        _two_level_instances,
    ),
    "Binary": _Spec(
        _derive_binary,
        _code_binary,
        lambda c: _uniform_scales(c, ("level",)),
        _BASE,
        popcount(t) * 2 * (_L * Delta / eps) ** 2,
        _one,
        table_check=_binary_table,
        pitfall=True,
    ),
    "Hybrid": _Spec(
        _derive_hybrid,
        _code_hybrid,
        _hybrid_scales,
        {**_BASE, "k": k},
        2 * (2 * Delta / eps) ** 2 * (_k_t + 1)
        + popcount(_r_t) * 2 * (2 * _k_t * Delta / eps) ** 2,
        _unbounded,
        extra_budget=_hybrid_instance_budget,
    ),
}


def _prove(family: str) -> Callable[[type[Any], int], list[ClaimResult]]:
    spec = _SPECS[family]

    def prove(cls: type[Any], limit: int) -> list[ClaimResult]:
        name = label(cls)
        m = _make(cls, 16)
        rows = [
            run_claim(name, "membership", lambda: _membership(m, spec)),
            run_claim(name, "budget", lambda: _budget(m, spec)),
        ]
        if spec.pitfall:
            rows.append(run_claim(name, "pitfall Lap(log₂T/ε)", lambda: _pitfall(m, spec)))
        rows.append(run_claim(name, "variance", lambda: _variance(m, spec)))
        pair: list[Outcome | str] = []

        def exhaustive(index: int) -> Outcome:
            if not pair:
                pair.extend(_exhaustive(cls, spec, limit))
            out = pair[index]
            if isinstance(out, str):
                raise ProofFailure(out)
            return out

        rows.append(run_claim(name, "membership = nodes(T)", lambda: exhaustive(0)))
        rows.append(run_claim(name, "budget = nodes(T)", lambda: exhaustive(1)))
        rows.append(
            run_claim(name, "variance = plan", lambda: _variance_exhaustive(cls, spec, limit))
        )
        return rows

    prove.__doc__ = f"Prove the {family} theorems (see the module docstring)."
    return prove


PROOFS: dict[str, Callable[[type[Any], int], list[ClaimResult]]] = {
    name: _prove(name) for name in ("SimpleI", "SimpleII", "TwoLevel", "Binary", "Hybrid")
}
"""Class name → proof function ``(cls, limit) -> list[ClaimResult]`` (see proofs.registry)."""

_CLASSES = (SimpleI, SimpleII, TwoLevel, Binary, Hybrid)
assert {c.__qualname__ for c in _CLASSES} == set(PROOFS)
