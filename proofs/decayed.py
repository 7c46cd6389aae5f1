"""Proofs for the decayed-sum mechanisms (docs/spec.md §2): WindowSum, AllWindowSum,
ExponentialSum, PolynomialSum.

Every node is released once with ``Lap(b_n)``, so by basic composition the release is
``(max_i Σ_{n ∋ i} Δ|a_{n,i}|/b_n)``-DP (Dwork et al. 2006); since no node is ever
updated, the outputs up to T are a function of the nodes released by T, and a bound
that holds for every T is the privacy of the unbounded mechanism (the patent's proof
of Theorem 3).  The claims *about the code* (:mod:`proofs.decayed_code`, and the
ζ budget and S(α) declarations below) evaluate the release's own functions — level
counts, covers, node layouts and the rigorous bounds' steps with z3 for every value up
to 2⁶², the scales and declarations with sympy for symbolic ε, Δ and parameters; the
theorems below that evaluate no class code are *lemmas*; each has an exact exhaustive
companion, labelled ``checked for T ≤ N`` (evidence, not a proof).

Lemma (partition).  For a fixed level b the aligned intervals
``[(m−1)2^b+1, m2^b]``, m ≥ 1, partition the items, so an item lies in at most one
node per level of any dyadic tree (exactly one once the node is released).

Theorem (WindowSum).  Let ``K = ⌊log₂W⌋``.  Nodes are every aligned node of size
``2^b``, b = 0..K: an item is in ``L = K + 1`` nodes, each of scale ``LΔ/ε``;
``L·Δ/(LΔ/ε) = ε``.  No cover loses by it: an aligned node inside a window of W items
has size ≤ W, hence ≤ ``2^K``.

Cover lemma: the canonical cover of a window ``[a, t]`` of at most W items by maximal
aligned nodes has at most ``max(1, 2K)`` nodes.  Let h be the highest bit where
``a − 1`` and t differ and ``M = ⌊t/2^h⌋2^h``; the cover is one node per 1-bit of
``ℓ_s = M − a + 1`` (the suffix ``[a, M]``) and of ``ℓ_p = t − M`` (the prefix).
(i) h ≤ K: ``ℓ_p < 2^h`` has ≤ h bits set, and ``ℓ_s ≤ 2^h`` is either ``2^h`` (one node)
or has ≤ h bits set: at most 2h ≤ 2K nodes, or 1 when h = 0.  (ii) h ≥ K + 1: then
``a − 1 = t − W`` (a truncated window ``[1, t]``, t < W, has ``h = ⌊log₂t⌋ ≤ K``), so
``ℓ_s + ℓ_p = W < 2^{K+1}``.  Write the addition ``ℓ_s + ℓ_p = W`` digit by digit with
carries ``c_i`` (``c_0 = 0``, and ``c_{K+1} = 0`` since W has K+1 digits):
``s_i + p_i + c_i = W_i + 2c_{i+1}``.  Summing over i = 0..K telescopes to
``popcount(ℓ_s) + popcount(ℓ_p) = Σ_{i<K}(W_i + c_{i+1}) + W_K``.  A full adder has
``W_i + c_{i+1} ≤ 2`` with equality only when ``c_i = 1`` (the 8 cases), so position 0
contributes ≤ 1, positions 1..K−1 ≤ 2 each and position K exactly ``W_K = 1``: at most
``1 + 2(K−1) + 1 = 2K`` nodes (K ≥ 1).  Hence ``Var(t) ≤ 2·max(1, 2K)·(LΔ/ε)²`` for every
t, and ``Var`` is periodic with period ``2^K`` once t ≥ W (shifting by ``2^K`` preserves
the alignment of every node of size ≤ ``2^K``, and no larger node fits).

Theorem (AllWindowSum, the ζ-weighted level budget).  Level k ≥ 1 (leaves at level
1) gets ``ε_k = ε/(ζ(δ)k^δ)``; with one node per level per item (partition lemma),
``Σ_{k≥1} ε_k = (ε/ζ(δ)) Σ_{k≥1} k^{−δ} = ε`` for every δ > 1 (sympy sums the series
to ``ζ(δ)`` for symbolic δ = 1 + η, η > 0).  At finite T only levels
``k ≤ ⌊log₂T⌋+1`` exist and the sum is strictly below ε.  The rational scales used are
upper bounds of ``ζ(δ)k^δΔ/ε`` (checked against a 60-digit evaluation).

Theorem (ExponentialSum).  (Assertion 2) item i's k-th left ancestor, by size, ends at
``u_k ≥ i + 2^{k−1} − 1``, with equality for i = 1 (induction: the k-th ancestor
contains the right sibling of the (k−1)-th, of size ``≥ 2^{k−2}``).  Its weight is
``α^{u_k−i} ≤ α^{2^{k−1}−1}``, so the L1 sensitivity is ``S(α) = Σ_{k≥1} α^{2^{k−1}−1}``,
attained by item 1, and ``Lap(SΔ/ε)`` gives ``Σ_{k≤L} α^{2^{k−1}−1}·Δ/(SΔ/ε) ≤ ε``.
Tail bound: for ``k = K+1+m`` the exponent satisfies
``2^{k−1} − 1 − [(2^K − 1) + m2^K] = 2^K(2^m − 1 − m) ≥ 0`` (Bernoulli:
``2^m ≥ 1 + m``), so ``Σ_{k>K} α^{2^{k−1}−1} ≤ α^{2^K−1}/(1 − α^{2^K})``.
Series bound (Theorem 5's regime α ∈ (2/3, 1)): ``S(α) ≤ log₂(1/(1−α)) + 2``.  Let k*
be the least k with ``(1−α)2^{k−1} ≥ 1``; the ``k* − 1 ≤ log₂(1/(1−α)) + 1`` terms
before it are ≤ 1; after it, ``α^{2^{k−1}−1} ≤ α^{−1}e^{−(1−α)2^{k−1}}`` (``ln α ≤ α−1``)
``≤ (3/2) e^{−2^{k−k*}} ≤ (3/2) e^{−(k−k*+1)}`` (Bernoulli), summing to
``(3/2)/(e−1) < 1``.  (The patent's own constant, Eq. 37, is illegible in the copy of
US 9,471,791 we could read; this bound has its form ``O(log 1/(1−α))``.)

Theorem (PolynomialSum).  With ``b(j) = max{i : (i+1)^{−c} ≥ (1−β)^j}``:
``i ≤ b(j) ⇒ g(i) ≥ g(b(j)) ≥ (1−β)^j = g'(i)`` (g decreasing) and
``i > b(j−1) ⇒ g(i) < (1−β)^{j−1} ⇒ (1−β)g(i) < (1−β)^j = g'(i)``: so
``(1−β)g ≤ g' ≤ g``.  Instance j's nodes have weight ``ρ^j`` (ρ = 1−β) and an item is
in ``L_j = ⌊log₂W_j⌋ + 1`` of them (WindowSum above).  Since
``W_j ≤ b(j) + 1 ≤ ρ^{−j/c}``, ``L_j ≤ log₂W_j + 1 ≤ κj + 1`` with ``κ = log₂(1/ρ)/c``.

* Uniform allocation (every node ``Lap(λ)``, ``λ = SΔ/ε``): the privacy sum is
  ``Σ_j ρ^j L_j Δ/λ``, so the series is ``S = Σ_j ρ^j L_j ≤ Σ_{j≥0} ρ^j(κj + 1) =
  κρ/(1−ρ)² + 1/(1−ρ) = (1−β)log₂(1/(1−β))/(cβ²) + 1/β`` — finite for every c > 1
  (dominated by β^{−2}, as the patent remarks).
* Decaying allocation (instance j ``Lap(λq_j)``, rational ``q_j ≥ ρ^{j/3}``,
  ``λ = PΔ/ε``): instance j costs ``ρ^j L_j Δ/(λq_j) ≤ σ^j L_j Δ/λ`` with ``σ = ρ^{2/3}``,
  so the privacy sum is at most ``(Δ/λ) Σ_j σ^j L_j = εP_exact/P ≤ ε`` and
  ``P_exact ≤ Σ_j σ^j(κj + 1) = κσ/(1−σ)² + 1/(1−σ) < ∞``.  The variance at t is
  ``Σ_{active j} 2λ²q_j²|cover_j| ≤ 2λ²(1+2^{−51})² Σ_j σ^j max(1, 2κj)`` (cover lemma,
  ``q_j`` a float within ``2^{−52}`` of its value), a convergent series independent of t:
  the error is bounded in t.
* Lagrange: minimising the variance ``Σ_j 2L_jλ_j²`` with every instance active subject
  to a fixed privacy sum ``Σ_j ρ^j L_j Δ/λ_j`` gives ``4L_jλ_j = μρ^jL_jΔ/λ_j²``, i.e.
  ``λ_j³ ∝ ρ^j``: ``λ_j ∝ ρ^{j/3}`` (the objective is convex in ``λ_j > 0`` on that
  constraint set, so this is the minimum).

Lower bound (patent Lemma 2 / Theorem 7, docs/spec.md §2.5).  If an ε-DP algorithm is within C
of F at every query of a set of q queries with probability ≥ 2/3, take
``x^0 = 0^{Dq}``, ``x^a = 0^{(a−1)D}1^D0^{(q−a)D}`` and queries at ``aD``.  Each
``x^a`` is at Hamming distance D from ``x^0``, so by group privacy
``P[M(x^0) ∈ B_a] ≥ e^{−εD}·2/3`` for the disjoint accuracy sets ``B_a``
(disjoint when ``G(D) = Σ_{i<D} g(i) > 2C``); summing over a = 1..q,
``q e^{−εD}·2/3 ≤ 1/3``, i.e. ``εD ≥ ln(2q)``.  Hence for the largest integer
``D < ln(2q)/ε`` the accuracy C must be ``≥ G(D)/2``
(:func:`dpref.lower_bounds.lower_bound`).

References
----------
.. [1] J. Bolot, N. Fawaz, S. Muthukrishnan, A. Nikolov, N. Taft. "Private Decayed
   Predicate Sums on Streams." ICDT 2013 (arXiv:1108.6123).
.. [2] US patent 9,471,791, Assertions 1–2, Theorems 3–7, Lemma 2, Eq. 41–42.
.. [3] C. Dwork, F. McSherry, K. Nissim, A. Smith. "Calibrating Noise to Sensitivity
   in Private Data Analysis." TCC 2006.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np
import sympy as sp

from dpref.lower_bounds import lower_bound
from dpref.mechanisms.decayed import (
    AllWindowSum,
    ExponentialSum,
    PolynomialSum,
    WindowSum,
    exponential_sensitivity_bounds,
    exponential_sensitivity_partial,
    polynomial_breakpoint,
    zeta_bounds,
)
from proofs.core import (
    ClaimResult,
    Delta,
    Outcome,
    ProofFailure,
    SymbolicOps,
    about_code,
    check_identity,
    check_sign,
    checked,
    eps,
    label,
    lemma,
    run_claim,
)
from proofs.decayed_code import (
    allwindow_levels,
    exponential_left_nodes,
    exponential_sensitivity_bound,
    polynomial_allocation_series,
    polynomial_instance_levels,
    window_budget,
    window_cover_levels,
    window_levels,
)

__all__ = ["PROOFS", "DecayedOps"]

EPSILON = Fraction(7, 10)
"""ε of the exhaustive checks."""

eta = sp.Symbol("η", positive=True)
"""δ − 1 > 0."""
kk = sp.Symbol("k", integer=True, positive=True)
"""A level (leaves at level 1)."""
L = sp.Symbol("L", integer=True, positive=True)
"""A number of levels."""
alpha = sp.Symbol("α", positive=True)
"""The decay α (0 < α < 1 where used)."""
m = sp.Symbol("m", integer=True, nonnegative=True)
K = sp.Symbol("K", integer=True, positive=True)
jj = sp.Symbol("j", integer=True, nonnegative=True)
r = sp.Symbol("r", positive=True)
"""ρ = 1/(1+r) ∈ (0, 1)."""
kappa = sp.Symbol("κ", positive=True)
tau = sp.Symbol("τ", positive=True)
"""A positive tail."""


class DecayedOps(SymbolicOps):
    """:data:`proofs.core.SYMBOLIC` plus the Riemann ζ function."""

    @staticmethod
    def zeta(x: Any) -> Any:
        """sympy's ``zeta``."""
        return sp.zeta(x)


DECAYED = DecayedOps()


# ------------------------------------------------------------ shared checks
def _plan_check(ms: list[Any], horizon: int) -> Outcome:
    for mech in ms:
        report = mech.plan(horizon).check(mech.variance_exact(horizon))
        if not report.passed:
            bad = next(c for c in report.checks if not c.passed)
            raise ProofFailure(f"{mech!r} T={horizon}: {bad.name}: {bad.detail}")
    return checked(
        "T",
        horizon,
        "R·A = Q, causal, privacy sum (= the exact expected sum, ≤ ε), variance",
        f"exact at T={horizon}: " + "; ".join(repr(x) for x in ms),
    )


def _membership(ms: list[Any], limit: int) -> Outcome:
    """At most one node per level per item, and the plan's privacy sum ≤ ε, for T ≤ limit."""
    for mech in ms:
        nt = mech.nodes(limit)
        size = nt.hi - nt.lo + 1
        level = np.round(np.log2(size)).astype(np.int64)
        groups = np.zeros(nt.size, np.int64)
        if isinstance(mech, PolynomialSum):
            groups = np.asarray(nt.weight_idx, np.int64)
        for key in np.unique(groups * 64 + level):
            sel = (groups * 64 + level) == key
            d = np.zeros(limit + 2, np.int64)
            np.add.at(d, nt.lo[sel], 1)
            np.add.at(d, nt.hi[sel] + 1, -1)
            if np.cumsum(d).max() > 1:
                raise ProofFailure(f"{mech!r}: an item lies in two nodes of one level")
        for T_ in sorted({*range(1, 65), *(1 << e for e in range(limit.bit_length())), limit}):
            if T_ > limit:
                continue
            expected = mech.expected_privacy_sum(T_)
            if expected is None or expected > mech.declared_epsilon:
                raise ProofFailure(f"{mech!r} T={T_}: privacy sum {expected} > ε")
    return checked(
        "T",
        limit,
        "≤ 1 node per level (per instance) per item; exact privacy sum ≤ ε",
        "; ".join(repr(x) for x in ms),
    )


# ----------------------------------------------------------------- WindowSum
def _cover_lemma() -> Outcome:
    """The counting step of the cover lemma (module docstring), for symbolic K."""
    # the full adder s + p + c_in = w + 2 c_out, over its 8 cases
    for s_, p_, c_in in ((a, b, c) for a in (0, 1) for b in (0, 1) for c in (0, 1)):
        w, c_out = (s_ + p_ + c_in) % 2, (s_ + p_ + c_in) // 2
        if w + c_out > 2 or (w + c_out == 2 and c_in != 1):
            raise ProofFailure(f"full adder {s_}+{p_}+{c_in}: w + c_out = {w + c_out}")
    # telescoping Σ_{i≤K}(s_i + p_i) = Σ_{i<K}(W_i + c_{i+1}) + W_K, for K = 1..12
    for k_ in range(1, 13):
        sv, pv, wv = (sp.symbols(f"{n}0:{k_ + 1}") for n in "spw")
        cv = (sp.Integer(0), *sp.symbols(f"c1:{k_ + 1}"), sp.Integer(0))
        adder = {wv[i]: sv[i] + pv[i] + cv[i] - 2 * cv[i + 1] for i in range(k_ + 1)}
        lhs = sum(sv) + sum(pv)
        rhs = sum(wv[i] + cv[i + 1] for i in range(k_)) + wv[k_]
        check_identity(lhs, rhs.subs(adder), f"telescoping at K={k_}")
    i_ = sp.Symbol("i", integer=True)
    bound = 1 + sp.summation(2, (i_, 1, K - 1)) + 1
    check_identity(bound, 2 * K, "1 + Σ_{i=1}^{K−1} 2 + 1")
    return lemma(
        "|cover| ≤ max(1, 2K) for every window of W items, K = ⌊log₂W⌋",
        "h ≤ K: ≤ 2h nodes; h > K: popcount(ℓ_s) + popcount(ℓ_p) = Σ_{i<K}(W_i + c_{i+1}) + W_K"
        " (telescoping, checked for K ≤ 12), full adder W_i + c_{i+1} ≤ 2 with = 2 only after a"
        " carry (8 cases), so ≤ 1 + 2(K−1) + 1 = 2K (sympy)",
    )


def _cover_exhaustive(max_window: int) -> Outcome:
    """Every window of W items, W ≤ max_window: |cover| ≤ max(1, 2K), exactly.

    Covers are invariant under shifts by ``2^K`` (no node larger than ``2^K`` fits), so
    the windows ``[a0+1, a0+W]`` with ``0 ≤ a0 < 2^K`` and the truncated ``[1, t]``,
    t < W, are every window there is.
    """
    from dpref.dyadic import aligned_cover, aligned_covers

    tight = 0
    for W in range(1, max_window + 1):
        K = W.bit_length() - 1
        a0 = np.concatenate([np.arange(1 << K), np.zeros(W - 1, np.int64)]).astype(np.int64)
        t = np.concatenate([np.arange(1 << K) + W, np.arange(1, W)]).astype(np.int64)
        sizes = np.zeros(t.size, np.int64)
        for b, rows, _ in aligned_covers(t, a0):
            if (1 << b) > W:
                raise ProofFailure(f"W={W}: a cover node of size {1 << b} > W")
            sizes[rows] += 1
        if sizes.max() > max(1, 2 * K):
            raise ProofFailure(f"W={W}: a window is covered by {sizes.max()} > max(1, 2K) nodes")
        tight += int(sizes.max()) == max(1, 2 * K)
        if W <= 64:  # the vectorised cover is the scalar greedy one
            for lo_, hi_, n_ in zip(a0 + 1, t, sizes, strict=True):
                if len(aligned_cover(int(lo_), int(hi_))) != n_:
                    raise ProofFailure(f"W={W}: cover of [{lo_}, {hi_}] differs from greedy")
    return checked(
        "W",
        max_window,
        "every window of W items: |cover| ≤ max(1, 2K), nodes of size ≤ 2^K",
        f"the bound is attained for {tight} of the {max_window} window sizes",
    )


def _window_bounded(cls: type[Any], limit: int) -> Outcome:
    worst = []
    for W in (1, 2, 3, 5, 8, 100, 1000):
        mech = cls(window=W, epsilon=EPSILON)
        sizes = mech.cover_sizes(limit)
        cap = max(1, 2 * mech.cap)
        if sizes.max() > cap:
            raise ProofFailure(f"W={W}: a cover has {sizes.max()} > max(1, 2K) nodes")
        B = mech.block
        if limit >= W + B and not np.array_equal(sizes[W - 1 + B :], sizes[W - 1 : limit - B]):
            raise ProofFailure(f"W={W}: the variance is not 2^K-periodic from t = W")
        worst.append(f"W={W}: max {int(sizes.max())} ≤ {cap}")
    return checked(
        "t", limit, "|cover(t)| ≤ max(1, 2K) and 2^K-periodic from t = W", "; ".join(worst)
    )


# -------------------------------------------------------------- AllWindowSum
def _zeta_budget(cls: type[Any]) -> Outcome:
    mech = cls(epsilon=EPSILON)
    sym = {"epsilon": eps, "delta": 1 + eta}
    term = mech.level_epsilon(kk, DECAYED, sensitivity=Delta, **sym)
    total = sp.summation(term, (kk, 1, sp.oo))
    check_identity(total, eps, "Σ_{k≥1} ε/(ζ(δ)k^δ)")
    terms = mech.budget_terms(DECAYED, levels=4, sensitivity=Delta, **sym)
    for x, term in enumerate(terms[:4], 1):
        check_identity(
            term.membership * Delta / term.scale,
            eps / (sp.zeta(1 + eta) * x ** (1 + eta)),
            f"declared level {x}",
        )
    check_identity(mech.declared_budget(DECAYED, levels=4, sensitivity=Delta, **sym), eps, "")
    rest = terms[4].membership * Delta / terms[4].scale
    # ζ(δ) = Σ_{k≤4} k^{−δ} + h with h = Σ_{k>4} k^{−δ} > 0 (a series of positive terms)
    h = sp.Symbol("h", positive=True)
    s4 = sum(sp.Integer(x) ** -(1 + eta) for x in range(1, 5))
    rest_h = rest.subs(sp.zeta(1 + eta), s4 + h)
    check_identity(rest_h, eps * h / (s4 + h), "rest = ε·Σ_{k>4} k^{−δ}/ζ(δ)")
    check_sign(rest_h, "positive", "the levels above L keep a positive budget")
    return about_code(
        "Σ_{k≥1} Δ/scale_k = Σ_{k≥1} ε/(ζ(δ)k^δ) = ε for every δ > 1, ε, Δ",
        evaluates=[cls.level_epsilon, cls.level_scale_formula, cls.budget_terms],
        detail="level_epsilon = Δ/level_scale_formula (the formula every path's level_scale "
        "rounds up) evaluated for symbolic k, δ = 1 + η (η > 0), ε, Δ; Σ k^{−δ} = ζ(δ) "
        "(sympy); one node per level per item (partition lemma; levels proven for every T "
        "by the membership row); budget_terms at L = 4 adds up to ε",
        value="ε",
    )


def _zeta_scales(cls: type[Any]) -> Outcome:
    rows = []
    for d in (Fraction(11, 10), Fraction(3, 2), Fraction(2), Fraction(3)):
        lo, up = zeta_bounds(d)
        z = sp.zeta(sp.Rational(d.numerator, d.denominator)).evalf(60)
        if not (
            sp.Rational(lo.numerator, lo.denominator)
            <= z
            <= sp.Rational(up.numerator, up.denominator)
        ):
            raise ProofFailure(f"δ={d}: ζ(δ)={z} outside [{float(lo)}, {float(up)}]")
        mech = cls(epsilon=EPSILON, delta=d)
        for k_ in range(1, 65):
            exact = (
                z * sp.Integer(k_) ** sp.Rational(d.numerator, d.denominator) / sp.Rational(7, 10)
            ).evalf(60)
            sc = mech.level_scale(k_)
            if sp.Rational(sc.numerator, sc.denominator) < exact:
                raise ProofFailure(f"δ={d} level {k_}: scale {float(sc)} < ζ(δ)k^δΔ/ε = {exact}")
        rows.append(f"δ={d}: ζ ∈ [{float(lo):.12g}, {float(up):.12g}]")
    at8 = float(cls(epsilon=1, delta=Fraction(3, 2)).expected_privacy_sum(8) or 0)
    return checked(
        "k",
        64,
        "lower ≤ ζ(δ) ≤ upper and scale_k ≥ ζ(δ)k^δΔ/ε (60 digits)",
        "; ".join(rows) + f"; privacy sum at T=8, δ=3/2: {at8:.4f}ε",
    )


# ------------------------------------------------------------ ExponentialSum
def _assertion2(limit: int) -> Outcome:
    i_ = np.arange(1, limit + 1, dtype=np.int64)
    kth = np.zeros(limit, np.int64)  # left ancestors found so far, by size
    for b in range(limit.bit_length() + 1):
        size = 1 << b
        mm = (i_ - 1) // size + 1
        left = mm % 2 == 1
        u = mm * size
        k_ = kth + 1
        bad = left & (u - i_ < (1 << (k_ - 1)) - 1)
        if bad.any():
            x = int(np.flatnonzero(bad)[0]) + 1
            raise ProofFailure(f"item {x}: left ancestor {k_[x - 1]} ends too early")
        if left[0] and u[0] - 1 != (1 << (k_[0] - 1)) - 1:
            raise ProofFailure("item 1 is not tight")
        kth = kth + left
    return checked("i", limit, "u_k − i ≥ 2^{k−1} − 1, with equality for i = 1", "every level")


def _exp_sensitivity(cls: type[Any]) -> Outcome:
    mech = cls(alpha=Fraction(9, 10), epsilon=EPSILON)
    S = sp.Symbol("S", positive=True)
    sym_e = {"levels": 6, "alpha": alpha, "epsilon": eps, "sensitivity": Delta, "S": S}
    terms = mech.budget_terms(DECAYED, **sym_e)
    s6 = sum(alpha ** (2 ** (x - 1) - 1) for x in range(1, 7))
    check_identity(sum(t_.membership for t_ in terms[:6]), s6, "item 1's weights, levels 1..6")
    check_identity(terms[6].membership, S - s6, "the levels above 6 get S − S_6")
    check_identity(mech.declared_budget(DECAYED, **sym_e), eps, "declarations add up to ε")
    budget = sum(t_.membership * Delta / t_.scale for t_ in terms[:6]).subs(S, s6 + tau)
    check_sign(eps - budget, "positive", "S_L/S < 1 when S = S_L + (positive tail)")
    check_identity(budget.subs(tau, 0), eps, "the sum reaches ε in the limit")
    check_identity(
        mech.scale(DECAYED, S=S, sensitivity=Delta, epsilon=eps), S * Delta / eps, "scale"
    )
    return about_code(
        "Σ_{k≤L} level_weight(k)·Δ/scale(S) ≤ ε for every S ≥ S_L(α), → ε, for symbolic α, ε, Δ",
        evaluates=[cls.budget_terms, cls.scale, cls.level_weight],
        detail="budget_terms, the scale formula and the weights evaluated for symbolic α, ε, Δ "
        "and the bound S (sympy); S = the fixed point's S_up ≥ S(α) ≥ S_L(α) is the 'S(α) "
        "bound: fixed-point steps' row; the weights are item 1's (membership row; Assertion 2: "
        "the worst item, checked); the float rounding of the scale is not part of this row",
    )


def _exp_tail(cls: type[Any]) -> Outcome:
    # exponent gap at k = K + 1 + m
    k_ = K + 1 + m
    gap = (2 ** (k_ - 1) - 1) - ((2**K - 1) + m * 2**K)
    check_identity(gap, 2**K * (2**m - 1 - m), "exponent gap")
    # x = α^{2^K} ∈ (0, 1), written x = 1/(1+r) with r > 0
    geo = sp.summation((1 / (1 + r)) ** m, (m, 0, sp.oo))
    check_identity(geo, 1 / (1 - 1 / (1 + r)), "geometric series Σ x^m = 1/(1−x)")
    rows = []
    for a in (Fraction(1, 2), Fraction(9, 10), Fraction(99, 100), Fraction(999, 1000)):
        lo, up = exponential_sensitivity_bounds(a)
        part = exponential_sensitivity_partial(a, 12)
        if not (part <= up and lo <= up and up - lo < Fraction(1, 10**20)):
            raise ProofFailure(f"α={a}: bounds [{lo}, {up}] inconsistent")
        rows.append(f"S({a}) ∈ [{float(lo):.10f}, {float(up):.10f}]")
    s9 = float(exponential_sensitivity_bounds(Fraction(9, 10))[1])
    s99 = float(exponential_sensitivity_bounds(Fraction(99, 100))[1])
    if not (abs(s9 - 3.353) < 5e-4 and abs(s99 - 6.378) < 5e-4):
        raise ProofFailure(f"S(0.9)={s9}, S(0.99)={s99} disagree with docs/spec.md §2.3")
    return lemma(
        "Σ_{k>K} α^{2^{k−1}−1} ≤ α^{2^K−1}/(1 − α^{2^K})",
        "gap = 2^K(2^m − 1 − m) ≥ 0 (Bernoulli 2^m ≥ 1+m); geometric series; " + "; ".join(rows),
    )


def _theorem5(cls: type[Any]) -> Outcome:
    tail = sp.summation(sp.exp(-(m + 1)), (m, 0, sp.oo))
    check_identity(tail, 1 / (sp.E - 1), "Σ_{m≥0} e^{−(m+1)}")
    check_sign(1 - sp.Rational(3, 2) * tail, "positive", "(3/2)/(e−1) < 1")
    s = sp.Symbol("s", positive=True)  # α = 2/3 + s
    check_sign(sp.Rational(3, 2) - 1 / (sp.Rational(2, 3) + s), "positive", "1/α < 3/2")
    worst = 0.0
    for a in [Fraction(2, 3) + Fraction(n, 3000) for n in range(1, 1000, 37)] + [
        Fraction(999, 1000),
        Fraction(9999, 10000),
    ]:
        up = float(exponential_sensitivity_bounds(a)[1])
        bound = math.log2(1 / (1 - float(a))) + 2
        if up > bound:
            raise ProofFailure(f"α={a}: S = {up} > log₂(1/(1−α)) + 2 = {bound}")
        worst = max(worst, up - bound)
    return lemma(
        "S(α) ≤ log₂(1/(1−α)) + 2 for α ∈ (2/3, 1)",
        "k* − 1 ≤ log₂(1/(1−α)) + 1 terms ≤ 1; ln α ≤ α − 1; Bernoulli; (3/2)/(e−1) < 1; "
        f"numeric margin on a grid: max(S − bound) = {worst:.3f}",
    )


# ------------------------------------------------------------- PolynomialSum
def _g_sandwich(limit: int) -> Outcome:
    g, rho_j1 = sp.symbols("g ρ_prev", positive=True)
    rho = 1 / (1 + r)
    check_identity(rho * rho_j1 - rho * g, rho * (rho_j1 - g), "ρ^j − ρg = ρ(ρ^{j−1} − g)")
    cases = [
        (Fraction(2), Fraction(1, 5)),
        (Fraction(3, 2), Fraction(1, 2)),
        (Fraction(3), Fraction(1, 10)),
    ]
    for c, beta in cases:
        p, q = c.numerator, c.denominator
        rr = 1 / (1 - beta)
        j = 0
        for i_ in range(0, limit):
            while polynomial_breakpoint(j, c, beta) < i_:
                j += 1
            if polynomial_breakpoint(j - 1, c, beta) >= i_:
                raise ProofFailure(f"c={c} β={beta} i={i_}: not in (b(j−1), b(j)]")
            n = i_ + 1
            # g' ≤ g: (1−β)^j ≤ n^{−c} ⟺ n^p ≤ r^{jq}
            if n**p * rr.denominator ** (j * q) > rr.numerator ** (j * q):
                raise ProofFailure(f"c={c} β={beta} i={i_}: g' > g")
            # (1−β)g < g': n^{−c} < (1−β)^{j−1} ⟺ r^{(j−1)q} < n^p
            if j >= 1 and not rr.numerator ** ((j - 1) * q) < n**p * rr.denominator ** (
                (j - 1) * q
            ):
                raise ProofFailure(f"c={c} β={beta} i={i_}: (1−β)g ≥ g'")
    return checked(
        "i",
        limit,
        "(1−β)g(i) < g'(i) ≤ g(i), exactly in integers",
        "; ".join(f"c={c}, β={b}" for c, b in cases),
    )


def _sigma_upper(rho_f: Fraction) -> Fraction:
    """A rational ``σ ≥ ρ^{2/3}`` (``σ³ ≥ ρ²`` checked exactly), within a float of it."""
    sig = Fraction(float(rho_f) ** (2 / 3))
    while sig**3 < rho_f**2:
        sig = Fraction(math.nextafter(float(sig), math.inf))
    return sig


def _declared_adds_up(cls: type[Any], allocation: str) -> None:
    """The declarations add up to ε with symbolic S; the used instances spend < ε."""
    S = sp.Symbol("S", positive=True)
    mech = cls(c=2, beta=Fraction(1, 5), epsilon=EPSILON, allocation=allocation)
    terms = mech.budget_terms(DECAYED, horizon=64, epsilon=eps, sensitivity=Delta, S=S)
    lam = S * Delta / eps
    used = sum(t_.membership * lam / t_.scale for t_ in terms[:-1])  # Σ ρ^j L_j/q_j
    check_identity(terms[-1].membership, S - used, f"{allocation}: the rest gets S − S_T")
    check_identity(
        mech.declared_budget(DECAYED, horizon=64, epsilon=eps, sensitivity=Delta, S=S),
        eps,
        f"{allocation}: declarations add up to ε",
    )
    budget = sum(t_.membership * Delta / t_.scale for t_ in terms[:-1]).subs(S, used + tau)
    check_sign(eps - budget, "positive", f"{allocation}: S_T/S < 1")


def _poly_series(cls: type[Any]) -> Outcome:
    rho = 1 / (1 + r)
    total = sp.summation(rho**jj * (kappa * jj + 1), (jj, 0, sp.oo))
    check_identity(total, kappa * rho / (1 - rho) ** 2 + 1 / (1 - rho), "Σ ρ^j(κj + 1)")
    _declared_adds_up(cls, "uniform")
    rows = []
    for c, beta in (
        (Fraction(2), Fraction(1, 5)),
        (Fraction(11, 10), Fraction(1, 10)),
        (Fraction(3), Fraction(1, 2)),
    ):
        pm = cls(c=c, beta=beta, epsilon=EPSILON, allocation="uniform")
        rho_f = 1 - beta
        kap = (1 / rho_f - 1) * Fraction(1443, 1000) / c
        closed = kap * rho_f / (1 - rho_f) ** 2 + 1 / (1 - rho_f)
        if not pm.series_partial(1 << 16) <= pm.series_upper <= closed:
            raise ProofFailure(f"c={c} β={beta}: partial ≤ S_up ≤ closed bound fails")
        rows.append(f"c={c}, β={beta}: S ≤ {float(pm.series_upper):.4f} ≤ {float(closed):.2f}")
    return lemma(
        "uniform: S = Σ ρ^j L_j ≤ Σ_{j≥0} ρ^j(κj+1) = κρ/(1−ρ)² + 1/(1−ρ) < ∞ for every c > 1",
        "W_j ≤ ρ^{−j/c} ⇒ L_j = ⌊log₂W_j⌋ + 1 ≤ κj + 1; declarations add up to ε; "
        + "; ".join(rows),
    )


def _poly_decaying_series(cls: type[Any]) -> Outcome:
    sigma = 1 / (1 + r)  # σ = ρ^{2/3} ∈ (0, 1)
    total = sp.summation(sigma**jj * (kappa * jj + 1), (jj, 0, sp.oo))
    check_identity(total, kappa * sigma / (1 - sigma) ** 2 + 1 / (1 - sigma), "Σ σ^j(κj + 1)")
    var = total.subs(kappa, 2 * kappa)  # Σ σ^j(2κj + 1): the same series with κ → 2κ
    check_identity(var, 2 * kappa * sigma / (1 - sigma) ** 2 + 1 / (1 - sigma), "Σ σ^j(2κj+1)")
    # instance j's cost ρ^j L_j Δ/(λ q_j) ≤ σ^j L_j Δ/λ when q_j ≥ ρ^{j/3}
    x = sp.Symbol("x", positive=True)  # x = ρ^{1/3}
    check_identity(x ** (3 * jj) / x**jj, (x**2) ** jj, "ρ^j/ρ^{j/3} = (ρ^{2/3})^j")
    _declared_adds_up(cls, "decaying")
    rows = []
    for c, beta in (
        (Fraction(2), Fraction(1, 5)),
        (Fraction(3, 2), Fraction(1, 10)),
        (Fraction(3), Fraction(1, 2)),
    ):
        pm = cls(c=c, beta=beta, epsilon=EPSILON)
        rho_f = 1 - beta
        for inst in pm.instances(1 << 12)[:64]:  # q_j ≥ ρ^{j/3}, exactly: q_j³ ≥ ρ^j
            if inst.factor**3 < rho_f**inst.j:
                raise ProofFailure(f"c={c} β={beta} j={inst.j}: q_j < (1−β)^(j/3)")
        sig = _sigma_upper(rho_f)
        kap = (1 / rho_f - 1) * Fraction(1443, 1000) / c
        closed = kap * sig / (1 - sig) ** 2 + 1 / (1 - sig)
        partial = pm.series_partial(1 << 16)
        if not partial <= pm.series_upper <= closed:
            raise ProofFailure(f"c={c} β={beta}: partial ≤ P_up ≤ closed bound fails")
        at = pm.expected_privacy_sum(1 << 16) / pm.declared_epsilon
        rows.append(
            f"c={c}, β={beta}: P ≤ {float(pm.series_upper):.4f} ≤ {float(closed):.2f},"
            f" privacy sum at T=2^16: {float(at):.6f}ε"
        )
    return lemma(
        "decaying: Σ_j ρ^j L_j/(λq_j) ≤ (1/λ)Σ σ^j(κj+1) and Σ_j 2λ_j² max(1,2K_j)"
        " ≤ 2λ²(1+2^{−51})² Σ σ^j(2κj+1): both converge (σ = (1−β)^{2/3} < 1)",
        "q_j ≥ ρ^{j/3} (q_j³ ≥ ρ^j exactly for the first 64 instances); " + "; ".join(rows),
    )


def _lagrange() -> Outcome:
    lam_j, mu, L_j, rho = sp.symbols("λ_j μ L_j ρ", positive=True)
    # Lagrangian of min Σ 2 L_j λ_j² s.t. Σ ρ^j L_j Δ/λ_j = const, at instance j
    lagr = 2 * L_j * lam_j**2 + mu * rho**jj * L_j * Delta / lam_j
    crit = sp.solve(sp.diff(lagr, lam_j), lam_j)
    if len(crit) != 1:
        raise ProofFailure(f"stationary points: {crit}")
    ratio = sp.simplify(crit[0] / crit[0].subs(jj, 0))
    check_identity(ratio**3, rho**jj, "λ_j³/λ_0³ = ρ^j")
    check_sign(sp.diff(lagr, lam_j, 2), "positive", "convex in λ_j > 0")
    return lemma(
        "λ_j ∝ (1−β)^{j/3} minimises Σ_j 2L_jλ_j² for a fixed Σ_j (1−β)^j L_j Δ/λ_j",
        f"∂/∂λ_j = 0 ⇒ λ_j = {crit[0]}; λ_j³/λ_0³ = ρ^j; second derivative > 0",
    )


def _poly_bounded(cls: type[Any], limit: int) -> Outcome:
    rows = []
    for c, beta in ((Fraction(3, 2), Fraction(1, 10)), (Fraction(3), Fraction(1, 2))):
        dec = cls(c=c, beta=beta, epsilon=1)
        bound = dec.variance_bound()
        worst = max(dec.variance_exact(limit))
        if worst > bound:
            raise ProofFailure(f"c={c} β={beta}: Var {float(worst)} > bound {float(bound)}")
        rows.append(f"c={c}, β={beta}: max_t Var = {float(worst):.2f} ≤ {float(bound):.2f}")
    return checked(
        "t", limit, "decaying: Var(t) ≤ variance_bound() (exact)", "; ".join(rows) + " (ε = 1)"
    )


def _lower_bound_claim() -> Outcome:
    x = sp.Symbol("x", positive=True)  # e^{εD}
    q_ = sp.Symbol("q", positive=True)
    # q e^{−εD}·2/3 ≤ 1/3 ⟺ e^{εD} ≥ 2q
    check_identity(sp.solve(sp.Eq(q_ / x * sp.Rational(2, 3), sp.Rational(1, 3)), x)[0], 2 * q_, "")
    lb = lower_bound(WindowSum(window=100, epsilon=1), 1, 1000)
    if lb.D != math.ceil(math.log(2000)) - 1 or lb.value != Fraction(min(lb.D, 100), 2):
        raise ProofFailure(f"window lower bound {lb}")
    return lemma(
        "C ≥ ½ Σ_{i<D} g(i), D the largest integer < ln(2q)/ε",
        f"q e^{{−εD}}·2/3 ≤ 1/3 ⟺ e^{{εD}} ≥ 2q; e.g. W=100, ε=1, q=1000: D={lb.D}, C ≥ {lb.value}",
    )


# --------------------------------------------------------------- the proofs
def _rows(name: str, claims: list[tuple[str, Callable[[], Outcome]]]) -> list[ClaimResult]:
    return [run_claim(name, claim, fn) for claim, fn in claims]


def _prove_window(cls: type[Any], limit: int) -> list[ClaimResult]:
    ms = [cls(window=w, epsilon=EPSILON) for w in (1, 3, 8, 100)]
    return _rows(
        label(cls),
        [
            ("membership", lambda: window_levels(cls)),
            ("budget", lambda: window_budget(cls)),
            ("cover reads released levels", lambda: window_cover_levels(cls)),
            ("cover lemma", _cover_lemma),
            ("cover lemma, every window", lambda: _cover_exhaustive(min(limit, 512))),
            ("membership = nodes(T)", lambda: _membership(ms, limit)),
            ("error bounded in t", lambda: _window_bounded(cls, limit)),
            ("plan", lambda: _plan_check(ms, limit)),
            ("lower bound", _lower_bound_claim),
        ],
    )


def _prove_allwindow(cls: type[Any], limit: int) -> list[ClaimResult]:
    ms = [cls(epsilon=EPSILON, delta=Fraction(3, 2)), cls(epsilon=EPSILON, delta=2, window=5)]
    return _rows(
        label(cls),
        [
            ("membership", lambda: allwindow_levels(cls)),
            ("ζ-weighted level budget", lambda: _zeta_budget(cls)),
            ("rational scales ≥ exact", lambda: _zeta_scales(cls)),
            ("membership = nodes(T)", lambda: _membership(ms, limit)),
            ("plan", lambda: _plan_check(ms, limit)),
        ],
    )


def _prove_exponential(cls: type[Any], limit: int) -> list[ClaimResult]:
    ms = [cls(alpha=Fraction(1, 2), epsilon=EPSILON), cls(alpha=Fraction(9, 10), epsilon=EPSILON)]
    return _rows(
        label(cls),
        [
            ("membership", lambda: exponential_left_nodes(cls)),
            ("Assertion 2", lambda: _assertion2(limit)),
            ("sensitivity S(α)", lambda: _exp_sensitivity(cls)),
            ("S(α) bound: fixed-point steps", exponential_sensitivity_bound),
            ("tail bound", lambda: _exp_tail(cls)),
            ("Theorem 5 series bound", lambda: _theorem5(cls)),
            ("membership = nodes(T)", lambda: _membership(ms, limit)),
            ("plan", lambda: _plan_check(ms, min(limit, 2048))),
        ],
    )


def _prove_polynomial(cls: type[Any], limit: int) -> list[ClaimResult]:
    ms = [
        cls(c=2, beta=Fraction(1, 5), epsilon=EPSILON),
        cls(c=3, beta=Fraction(1, 2), epsilon=EPSILON),
        cls(c=2, beta=Fraction(1, 5), epsilon=EPSILON, allocation="uniform"),
    ]
    return _rows(
        label(cls),
        [
            ("membership", lambda: polynomial_instance_levels(cls)),
            ("(1−β)g ≤ g' ≤ g", lambda: _g_sandwich(limit)),
            ("allocation: series bound's code", polynomial_allocation_series),
            ("uniform: series S converges", lambda: _poly_series(cls)),
            ("decaying: both series converge", lambda: _poly_decaying_series(cls)),
            ("decaying: Lagrange optimum", _lagrange),
            ("decaying: error bounded in t", lambda: _poly_bounded(cls, min(limit, 1024))),
            ("membership = nodes(T)", lambda: _membership(ms, min(limit, 1024))),
            ("plan", lambda: _plan_check(ms, min(limit, 512))),
        ],
    )


PROOFS: dict[str, Callable[[type[Any], int], list[ClaimResult]]] = {
    "WindowSum": _prove_window,
    "AllWindowSum": _prove_allwindow,
    "ExponentialSum": _prove_exponential,
    "PolynomialSum": _prove_polynomial,
}
"""Class name → proof function ``(cls, limit) -> list[ClaimResult]`` (see proofs.registry)."""

_CLASSES = (WindowSum, AllWindowSum, ExponentialSum, PolynomialSum)
assert {c.__qualname__ for c in _CLASSES} == set(PROOFS)
