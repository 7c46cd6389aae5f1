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
the class declares ``cε/h`` exactly.  ∎  (sympy: the two binomial ratios and the budget
identity; "item 1 is worst" is checked exactly against every plan, labelled as such.)

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
from dpref.mechanisms.smooth import smooth_depth, smooth_item_count
from proofs.core import (
    SYMBOLIC,
    ClaimResult,
    Delta,
    Outcome,
    ProofFailure,
    check_identity,
    check_sign,
    checked,
    eps,
    label,
    lemma,
    run_claim,
)

__all__ = ["PROOFS"]

SMALL = 512
"""Every T up to this is checked exactly (plus the binomial boundaries up to ``limit``)."""

_k = sp.Symbol("k", integer=True, nonnegative=True)
_o = sp.Symbol("o", integer=True, positive=True)
_h = sp.Symbol("h", integer=True, positive=True)
_c = sp.Symbol("c", integer=True, positive=True)
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


def _budget(m: SmoothBinary) -> Outcome:
    total = m.declared_budget(SYMBOLIC, epsilon=eps, sensitivity=Delta, depth=2 * _h, count=_c)
    check_identity(total, _c * eps / _h, "c · Δ/(hΔ/ε)")
    check_identity(total.subs(_c, _h), eps, "c = h")
    # Gaussian twin: node variance dΔ²/(4ρ), h nodes per item: L2 sum h·Δ²/σ² = 2ρ
    sigma2 = 2 * _h * Delta**2 / (4 * _rho)
    check_identity(_h * Delta**2 / sigma2, 2 * _rho, "h · Δ²/σ²")
    check_identity(_h * sigma2, (2 * _h) ** 2 * Delta**2 / (8 * _rho), "Var = h·σ² = d²Δ²/(8ρ)")
    check_identity((_h * sigma2).subs({_h: 12, Delta: 1, _rho: sp.Rational(1, 2)}), 144, "T = 2^20")
    return lemma(
        "Σ_{n ∋ i} Δ/b_n ≤ c·Δ/(hΔ/ε) = cε/h (= ε when c = h); Gaussian: h·Δ²/σ² = 2ρ, "
        "Var = d²Δ²/(8ρ)",
        "item i lies only in the nodes of its own zero bits; Laplace mechanism + basic "
        "composition; Gaussian: ρ-zCDP composition",
        "c·ε/h",
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
        run_claim(name, "budget", lambda: _budget(m)),
        run_claim(name, "plan = closed forms", lambda: _exhaustive(limit)),
    ]


PROOFS: dict[str, Callable[[type[Any], int], list[ClaimResult]]] = {"SmoothBinary": _prove}
"""Class name → proof function ``(cls, limit) -> list[ClaimResult]`` (see proofs.registry)."""
