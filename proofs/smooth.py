"""Proofs for the smooth binary mechanism (``SmoothBinary``, docs/smooth.md).

Setting: d even, ``h = d/2``; leaves are the d-bit strings with h ones in increasing order,
leaf ``ℓ_r`` stands for item ``r + 1``; the output at t uses, for each set bit k of ``ℓ_t``,
the *node* of the prefix above k followed by a 0 (all leaves strictly below ``ℓ_t`` that
agree with it above k); every node has ``Lap(hΔ/ε)`` (Gaussian: variance ``dΔ²/(4ρ)``).

Theorem (counting).  The leaves with a fixed prefix above bit k, a 0 at k and o ones still
to place number ``binom(k, o)``; hence ``rank(ℓ) = Σ_{k set} binom(k, o_k)`` (o_k the ones
of ℓ at or below k) and the node of set bit k holds the items
``[t_k − binom(k, o_k) + 1, t_k]``, t_k the partial sum down to k.  Proof: choose the
positions of the o ones among the k free bits; the partial sums count the leaves before
ℓ that agree with it down to k, in increasing order.  ∎  (sympy: Pascal's rule, the 0/1
split of the leaves below a node.)

Theorem (unbiased, causal, smooth).  The nodes of the set bits of ``ℓ_t`` partition the
leaves before it (a leaf ``x < ℓ_t`` first differs from ``ℓ_t`` at a set bit of ``ℓ_t``, where x
has a 0), so their items are exactly ``1 … t``: ``R·A = Q``.  The node of set bit k is
first used at ``t_k ≤ t`` and its items end at ``t_k``: causal.  Every leaf has h set bits:
every output adds exactly h nodes — with equal scales the same error distribution at
every step; nodes of the trailing ones of ``ℓ_t`` have ``binom(k, o) = 0`` leaves
(noise-only) and their prefix holds all h zeros, so only ``ℓ_t`` uses them.  ∎  Checked
exactly on the plans (``R·A = Q``, causality, d/2 nonzeros per decoder row).

Theorem (membership and budget).  An item lies in the nodes of its own leaf's h zero
bits only, so in at most h released nodes, and the privacy sum of the node release is
``c·Δ/(hΔ/ε) = cε/h`` where c is the most released nodes one item lies in.  Item 1
(leaf ``0^h1^h``) has its node ``0^j`` released once ``t ≥ binom(d − j, h)`` (the leaves with
prefix ``0^j``), and it is a worst item; so ``c(t) = #{1 ≤ j ≤ h : binom(d−j, h) ≤ t}``.  At
the mechanism's own T (d the smallest even depth with ``binom(d, h) > T``):
``binom(d−2, h−2) = binom(d−2, h−1)·(h−1)/h < binom(d−2, h−1) ≤ T``, so every j ≥ 2
counts, and j = 1 counts iff ``T ≥ binom(d−1, h) = binom(d, h)/2``: ``c = h`` or ``h − 1``, and
the class declares ``cε/h`` exactly.  ∎  (Lemmas, sympy: the two binomial ratios.
About the code: z3 evaluates ``depth_for``/``item_count_for``/``budget_terms`` for every
``1 ≤ T ≤ 2⁶²`` against that characterisation; sympy evaluates ``node_scale`` and
``spent_share`` for symbolic d, ε, Δ.  "Item 1 is worst" is checked exactly against every
plan, labelled as such.)

Theorem (variance).  ``Var(out_t) = h·2(hΔ/ε)²`` for every t; with Gaussian node variance
``σ² = dΔ²/(4ρ)`` (the node's share ``Δ/b = 1/h`` of 2ρ when c = h, the L2 twin of the
budget: ``h·Δ²/σ² = 2ρ``), ``Var(out_t) = h·σ² = d²Δ²/(8ρ)``: 144 at T = 2^20, ρ = 1/2.  ∎

References
----------
.. [1] J. D. Andersson, R. Pagh. "A Smooth Binary Mechanism for Efficient Private
   Continual Observation." NeurIPS 2023; arXiv 2306.09666.
.. [2] C. Dwork, F. McSherry, K. Nissim, A. Smith. "Calibrating Noise to Sensitivity in
   Private Data Analysis." TCC 2006 (Laplace mechanism, basic composition).
.. [3] M. Bun, T. Steinke. "Concentrated Differential Privacy." TCC 2016 (the Gaussian
   mechanism is Δ²/(2σ²)-zCDP; zCDP composes additively).
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction
from math import comb
from typing import Any

import numpy as np
import sympy as sp

from dpref.mechanisms import SmoothBinary
from dpref.mechanisms.base import MAX_HORIZON
from dpref.mechanisms.smooth import MAX_HALF, smooth_depth, smooth_item_count
from proofs.core import (
    SYMBOLIC,
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
from proofs.smt import Z3Ops, primitive_lemmas, prove_smt

__all__ = ["PROOFS"]

SMALL = 512
"""Every T up to this is checked exactly (plus the binomial boundaries up to ``limit``)."""

_k = sp.Symbol("k", integer=True, nonnegative=True)
_o = sp.Symbol("o", integer=True, positive=True)
_h = sp.Symbol("h", integer=True, positive=True)
_rho = sp.Symbol("ρ", positive=True)


def _counting() -> Outcome:
    split = sp.binomial(_k + 1, _o) - sp.binomial(_k, _o) - sp.binomial(_k, _o - 1)
    check_identity(
        sp.combsimp(sp.expand_func(split)), 0, "Pascal: binom(k+1,o) = 0-branch + 1-branch"
    )
    return lemma(
        "leaves below a node with a 0 at bit k and o ones left: binom(k, o)",
        "Pascal's rule splits the leaves below a node by its next bit; rank(ℓ) = Σ_{k set} "
        "binom(k, o_k)",
    )


def _boundaries() -> Outcome:
    ratio = sp.combsimp(sp.binomial(2 * _h - 2, _h - 2) / sp.binomial(2 * _h - 2, _h - 1))
    check_identity(ratio, (_h - 1) / _h, "binom(d−2, h−2)/binom(d−2, h−1)")
    check_sign(1 - (_h - 1) / _h, "positive", "(h−1)/h < 1")
    half = sp.combsimp(sp.binomial(2 * _h - 1, _h) / sp.binomial(2 * _h, _h))
    check_identity(half, sp.Rational(1, 2), "binom(d−1, h) = binom(d, h)/2")
    return lemma(
        "c(T) = h if T ≥ binom(d, h)/2, else h − 1 (d minimal)",
        "binom(d−2, h−2) < binom(d−2, h−1) ≤ T; binom(d−1, h) = binom(d, h)/2",
    )


def _by_half(ops: Z3Ops, d: Any, value: Callable[[int], int], first: int = 1) -> Any:
    """``value(d/2)`` for a symbolic even depth d (a sum of ``ite(d = 2h, value(h), 0)``)."""
    return sum((ops.ite(d == 2 * h, value(h), 0) for h in range(first, MAX_HALF + 1)), ops.const(0))


def _smt_depth_count(cls: type[Any]) -> tuple[Any, list[str]]:
    """z3 over every 1 ≤ T ≤ 2⁶²: the class's depth is the least even d with
    ``binom(d, d/2) > T``, and its item count is ``h`` if ``2T ≥ binom(d, h)`` else
    ``h − 1`` (the boundary lemma, derived independently).  Returns (c*, steps) with c*
    the derived count as a function of z3 terms."""
    ops = Z3Ops()
    z3 = ops.z3
    T_ = ops.var("T")
    in_range = [ops.le(1, T_), ops.le(T_, MAX_HORIZON)]
    d = cls.depth_for(T_, ops)
    c = cls.item_count_for(T_, d, ops)
    h = z3.LShR(d, 1)
    full = _by_half(ops, d, lambda n: comb(2 * n, n))
    below = _by_half(ops, d, lambda n: comb(2 * n - 2, n - 1), first=2)
    derived = ops.ite(ops.le(full, 2 * T_), h, h - 1)
    steps = [
        prove_smt(
            z3.And(
                d & 1 == 0,
                ops.le(2, d),
                ops.le(d, 2 * MAX_HALF),
                ops.lt(T_, full),
                z3.Or(d == 2, ops.le(below, T_)),
            ),
            "depth_for(T) is the least even d ≥ 2 with binom(d, d/2) > T",
            assumptions=in_range,
        ),
        prove_smt(
            c == derived,
            "item_count_for(T, d) = d/2 if 2T ≥ binom(d, d/2) else d/2 − 1",
            assumptions=in_range,
        ),
    ]
    m = cls(epsilon=1, horizon=16)
    declared = m.budget_terms(ops, horizon=T_, epsilon=1, sensitivity=1)
    if [term.kind for term in declared] != ["node"]:
        raise ProofFailure(f"budget_terms kinds {[term.kind for term in declared]} ≠ ['node']")
    steps.append(
        prove_smt(
            declared[0].membership == derived,
            "budget_terms(horizon=T): the declared membership is that count",
            assumptions=in_range,
        )
    )
    return derived, steps


def _membership_code(cls: type[Any]) -> Outcome:
    _, steps = _smt_depth_count(cls)
    lemmas = primitive_lemmas()
    return about_code(
        "for every 1 ≤ T ≤ 2⁶²: d = depth_for(T) is the least even d with binom(d, d/2) > T, "
        "and item_count_for(T, d) = d/2 if T ≥ binom(d, d/2)/2 else d/2 − 1",
        evaluates=[cls.depth_for, cls.item_count_for, cls.budget_terms],
        detail=f"z3 ({', '.join(sorted(set(steps)))}; primitives: {', '.join(lemmas)}); the "
        "count it is compared with is the boundary lemma's (binom(d−2, h−2) < binom(d−2, h−1) "
        "≤ T, binom(d−1, h) = binom(d, h)/2); that item 1 is a worst item and lies in the "
        "nodes 0^j released once t ≥ binom(d − j, h) is the counting lemma, checked on every "
        "plan below",
    )


def _budget_code(cls: type[Any]) -> Outcome:
    _smt_depth_count(cls)  # the count c(T) ∈ {h − 1, h} of the code, for every T
    m = cls(epsilon=1, horizon=16)
    total_share = []
    for c_star in (_h, _h - 1):  # the two values the z3 step allows
        scale = cls.node_scale(2 * _h, eps, Delta, SYMBOLIC)
        spent = c_star * Delta / scale  # the release: c* nodes of the drawn scale
        declared = eps * cls.spent_share(c_star, 2 * _h, SYMBOLIC)
        check_identity(spent, declared, f"c = {c_star}: Σ Δ/b_n = ε·spent_share (declared ε)")
        terms = m.budget_terms(SYMBOLIC, epsilon=eps, sensitivity=Delta, depth=2 * _h, count=c_star)
        check_identity(terms[0].scale, scale, "budget_terms' scale = node_scale")
        check_identity(
            m.declared_budget(SYMBOLIC, epsilon=eps, sensitivity=Delta, depth=2 * _h, count=c_star),
            declared,
            f"c = {c_star}: declared_budget",
        )
        check_sign(eps - spent, "nonnegative", f"c = {c_star}: Σ Δ/b_n ≤ ε")
        total_share.append(str(sp.simplify(spent)))
    return about_code(
        "Σ_{n ∋ i} Δ/b_n = declared_epsilon = ε·c/(d/2) ≤ ε for every T, ε, Δ",
        evaluates=[
            cls.node_scale,
            cls.spent_share,
            cls.depth_for,
            cls.item_count_for,
            cls.budget_terms,
        ],
        detail="c from the code is h or h − 1 for every T (z3, see membership); the drawn "
        f"scale node_scale(2h, ε, Δ) gives {' and '.join(total_share)}, equal to "
        "ε·spent_share(c, 2h) (what declared_epsilon reports) and ≤ ε",
        value="c·ε/h",
    )


def _budget(m: SmoothBinary) -> Outcome:
    # Gaussian twin: node variance dΔ²/(4ρ), h nodes per item: L2 sum h·Δ²/σ² = 2ρ
    sigma2 = 2 * _h * Delta**2 / (4 * _rho)
    check_identity(_h * Delta**2 / sigma2, 2 * _rho, "h · Δ²/σ²")
    check_identity(_h * sigma2, (2 * _h) ** 2 * Delta**2 / (8 * _rho), "Var = h·σ² = d²Δ²/(8ρ)")
    check_identity((_h * sigma2).subs({_h: 12, Delta: 1, _rho: sp.Rational(1, 2)}), 144, "T = 2^20")
    return lemma(
        "Gaussian node variance σ² = dΔ²/(4ρ): h·Δ²/σ² = 2ρ, Var = h·σ² = d²Δ²/(8ρ) (144 at "
        "d = 24, ρ = 1/2)",
        "the paper's calibration re-derived (no class code: the zCDP rows check the class's "
        "node_variance)",
    )


def _check(horizon: int) -> str | None:
    m = SmoothBinary(epsilon=Fraction(7, 10), horizon=horizon)
    plan = m.plan(horizon)
    report = plan.check(m.variance_exact(horizon))
    if not report.passed:
        return f"T={horizon}: {report}"
    sums = plan.item_privacy_sums()
    want = Fraction(smooth_item_count(horizon, m.depth)) * m.design_epsilon / (m.depth // 2)
    if not (max(sums) == sums[0] == want == report.privacy_sum == m.declared_epsilon):
        return f"T={horizon}: privacy sum {report.privacy_sum}, item 1 {sums[0]}, c·ε/h {want}"
    per_row = np.diff(plan.recombination.indptr)
    if not bool(np.all(per_row == m.depth // 2)):
        return f"T={horizon}: a decoder row without d/2 nodes"
    g = SmoothBinary(rho=Fraction(3, 8), horizon=horizon)
    greport = g.plan(horizon).check(g.variance_exact(horizon))
    if not greport.passed or greport.privacy_sum != 2 * g.declared_rho:
        return f"T={horizon}, rho=3/8: {greport}"
    return None


def _exhaustive(limit: int) -> Outcome:
    small = min(SMALL, limit)
    horizons = set(range(1, small + 1))
    d = 2
    while comb(d, d // 2) <= limit + 1:  # the binomial boundaries up to limit
        for t in (
            comb(d, d // 2) - 1,
            comb(d, d // 2),
            comb(d, d // 2) // 2 - 1,
            comb(d, d // 2) // 2,
        ):
            if 1 <= t <= limit:
                horizons.add(t)
        d += 2
    horizons.add(limit)
    for horizon in sorted(horizons):
        bad = _check(horizon)
        if bad:
            raise ProofFailure(bad)
    if smooth_depth(2**20) != 24 or smooth_item_count(2**20, 24) != 11:
        raise ProofFailure("T = 2^20: expected d = 24 and c = 11")
    return checked(
        "T",
        small,
        "R·A = Q, causal, d/2 nodes per output, privacy sum = c(T)ε/h attained by item 1, "
        "variance = h·2(hΔ/ε)²; Gaussian (ρ = 3/8): L2 sum = 2ρ·c/h, variance d²Δ²/(8ρ)",
        f"every T ≤ {small}, and T = binom(d, h) − 1, binom(d, h), binom(d, h)/2 − 1, "
        f"binom(d, h)/2 up to {limit}, and T = {limit}",
    )


def _prove(cls: type[Any], limit: int) -> list[ClaimResult]:
    """Prove the SmoothBinary theorems (see the module docstring)."""
    name = label(cls)
    m = cls(epsilon=1, horizon=16)
    return [
        run_claim(name, "counting", _counting),
        run_claim(name, "membership boundaries", _boundaries),
        run_claim(name, "membership", lambda: _membership_code(cls)),
        run_claim(name, "budget", lambda: _budget_code(cls)),
        run_claim(name, "Gaussian budget", lambda: _budget(m)),
        run_claim(name, "plan = closed forms", lambda: _exhaustive(limit)),
    ]


PROOFS: dict[str, Callable[[type[Any], int], list[ClaimResult]]] = {"SmoothBinary": _prove}
"""Class name → proof function ``(cls, limit) -> list[ClaimResult]`` (see proofs.registry)."""
