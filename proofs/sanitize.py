"""Proofs for the streaming sanitizer and the threshold sanitizer (docs/spec.md §3,
docs/quantiles.md).

Theorem (tree sensitivity).  Let a tree counter's plan over D items have, at item
sensitivity Δ, privacy sum ``max_i Σ_n |a_{ni}| Δ/b_n ≤ ε``.  For any change ``v`` of
the histogram, the Laplace node release has loss at most
``Σ_n |Σ_i a_{ni} v_i|/b_n ≤ Σ_i |v_i| Σ_n |a_{ni}|/b_n ≤ ‖v‖₁ ε/Δ``.  Replacing one record
moves one unit between two leaves (``‖v‖₁ ≤ 2``), adding or removing one changes one
leaf by one (``‖v‖₁ = 1``); so the counter built with Δ = 2 (replace) or Δ = 1
(add/remove) is ε-DP.  For Binary over D points (``L = ⌊log₂D⌋ + 1`` levels, scale
``LΔ/ε``) the bound reads ``‖v‖₁·L·(1/(LΔ/ε)) = ε`` — 2 per level for replace-one, 1 for
add/remove.  Proof: the triangle inequality, then the class's own ``budget_terms``
evaluated symbolically (sympy).  Exhaustive companion: for every D ≤ 32 and every
registered tree counter, the exact loss of every replace pair (i, j) and every
add/remove leaf, from the ThresholdSanitizer's own plan, is ≤ ε.  ∎

Theorem (post-processing).  The projected CDF, the synthetic dataset, a KLL sketch of
the synthetic stream and every answer read off it are functions of the noisy tree
release (and of public n, D and the domain) only; DP is closed under post-processing
(Dwork, Roth 2014, Prop. 2.1).  ∎

Theorem (parallel composition over disjoint blocks).  The streaming sanitizer assigns
stream positions ``(b−1)n+1 … bn`` to block b and the final partial block (released once
by ``close``) to the rest; these sets partition the positions.  Under replace-one
neighbours (two streams of the same length differing in one record: the default) or
positional presence (the opt-in add/remove: one position's record present or absent,
the positions fixed — not insertion or deletion, which shifts every later block)
exactly one block's input differs, by the offline relation; block releases use independent noise and
independent sampling coins, so the output density factorises over blocks and the
likelihood ratio of the whole output equals that block's, at most ``e^{ε₀}`` (McSherry
2009).  Exhaustive companion: for every stream length m ≤ 40 and block size n ≤ 6,
the blocks the code releases (step, extend and the batch form) partition ``[1, m]``, and
a step after ``close`` raises.  ∎

Theorem (amplification by Poisson subsampling).  Let M be ε₀-DP under add/remove and
keep each record independently with probability p ∈ (0, 1].  With the same coins for
both inputs, the differing record is dropped with probability 1 − p (both outputs
``M(K)``) or kept.  Write ``P = (1−p)M(K) + pM(K∪{x})``.  From ``M(K∪{x}) ≤ e^{ε₀}M(K)``
and ``M(K∪{x}) ≥ e^{−ε₀}M(K)`` (pointwise densities):
``(1−p+pe^{−ε₀})M(K) ≤ P ≤ (1−p+pe^{ε₀})M(K)``.  Add/remove (P against M(K)):
``ln(1 + p(e^{ε₀}−1))`` one way and ``−ln(1 − p + pe^{−ε₀})`` the other; the second is at
most the first because ``(1−p+pe^{ε₀})(1−p+pe^{−ε₀}) − 1 = p(1−p)(e^{ε₀}−1)(1−e^{−ε₀}) ≥ 0``.
Replace (P against ``Q = (1−p)M(K) + pM(K∪{x'})``): ``ln((1−p+pe^{ε₀})/(1−p+pe^{−ε₀}))``,
which by the same identity is at most ``2 ln(1 + p(e^{ε₀}−1))`` (the group-of-two bound)
and equals ``2ε₀`` at p = 1.  Both bounds are at most ε₀ (resp. 2ε₀) because
``1 + p(e^{ε₀}−1) ≤ e^{ε₀}``.  Each step is an identity or a sign sympy discharges (with
``p = 1/(1+s)``, s ≥ 0).  For sampling without replacement and substitution, Balle,
Barthe, Gaboardi (2018) give ``ln(1 + (m/n)(e^{ε₀} − 1))``; dpref samples Poisson.  ∎

Theorem (safe evaluation).  The declared ε is a rational ≥ the irrational bound at the
probability the sampler really uses, ``⌈q·2^{53}⌉/2^{53} ≥ q = ceil_float(p) ≥ p``
(``Generator.random()`` is ``k·2^{-53}``), and the bound increases with p (its
p-derivative ``(e^{ε₀}−1)/(1+p(e^{ε₀}−1)) > 0``).  Checked: on a grid of (ε₀, p) the
declared value is ≥ a 120-digit evaluation and within 1e−14 of it.  ∎

References
----------
.. [1] H. Kaplan, U. Stemmer. "A Note on Sanitizing Streams with Differential Privacy."
   2021.
.. [2] B. Balle, G. Barthe, M. Gaboardi. "Privacy Amplification by Subsampling: Tight
   Analyses via Couplings and Divergences." NeurIPS 2018.
.. [3] F. McSherry. "Privacy Integrated Queries." SIGMOD 2009 (parallel composition).
.. [4] C. Dwork, A. Roth. "The Algorithmic Foundations of Differential Privacy." 2014.
.. [5] T.-H. H. Chan, E. Shi, D. Song. "Private and Continual Release of Statistics."
   ACM TISSEC 14(3), 2011.
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction
from math import lcm
from typing import Any

import numpy as np
import sympy as sp

from dpref.domains import Domain
from dpref.errors import ParameterError
from dpref.mechanisms import Binary
from dpref.sanitize.amplification import (
    amplification_cap,
    amplified_epsilon,
    effective_probability,
    subsampled_epsilon,
)
from dpref.sanitize.streaming import StreamingSanitizer
from dpref.sanitize.threshold import (
    ThresholdSanitizer,
    histogram_sensitivity,
    leaf_domain,
    tree_counters,
)
from dpref.sensitivity.items import stream_item_sensitivity
from proofs.core import (
    SYMBOLIC,
    ClaimResult,
    Outcome,
    ProofFailure,
    about_code,
    check_identity,
    check_sign,
    checked,
    eps,
    note,
    run_claim,
)

__all__ = ["PROOFS", "SUBJECTS"]

SUBJECTS = ("ThresholdSanitizer", "StreamingSanitizer")
"""The classes proven here (they are not mechanisms: no entry in dpref.MECHANISMS)."""

_D_LIMIT = 32
_M_LIMIT = 40
_N_LIMIT = 6

D = sp.Symbol("D", integer=True, positive=True)
p_s = sp.Symbol("s", nonnegative=True)
M0 = sp.Symbol("M0", positive=True)
u = sp.Symbol("u", nonnegative=True)
G = sp.Symbol("G", positive=True)


# ---------------------------------------------------------------- threshold
_MOVED = {"replace": 2, "add-remove": 1}
"""The independent derivation of the histogram's L1 change: a replaced record is
``h' − h = e_j − e_i`` (i ≠ j: norm 2, or 0 when it stays in its leaf); an added or
removed one is ``±e_i`` (norm 1)."""


def _histogram_delta() -> Outcome:
    """The tree's Δ from the code equals the histogram's worst L1 change, both relations."""
    rows = []
    for relation, moved in _MOVED.items():
        delta = histogram_sensitivity(relation)
        if delta != moved:
            raise ProofFailure(f"{relation}: the tree's Δ is {delta}, the histogram moves {moved}")
        for tree in tree_counters():  # the Δ every tree is built with is that one
            san = ThresholdSanitizer(domain=[0.0, 1.0], epsilon=1, tree=tree, neighbours=relation)
            if san.sensitivity != delta:
                raise ProofFailure(f"{relation}, tree={tree}: Δ = {san.sensitivity} ≠ {delta}")
        rows.append(f"{relation}: Δ = {delta}")
    return about_code(
        "Δ(tree) = max ‖h(X) − h(X')‖₁ over neighbours: 2 (replace), 1 (add/remove)",
        evaluates=[
            histogram_sensitivity,
            leaf_domain,
            Domain.sensitivity.fget,  # type: ignore[attr-defined]
            stream_item_sensitivity,
        ],
        detail="the code's Δ (histogram_sensitivity → Domain.sensitivity → the sensitivity "
        "calculator) evaluated for both relations — its whole input range — against "
        "‖e_j − e_i‖₁ = 2 (replace, i ≠ j) and ‖e_i‖₁ = 1 (add/remove); every tree counter "
        "is built with it (" + "; ".join(rows) + ")",
        value="2 / 1",
    )


def _tree_symbolic() -> Outcome:
    """‖v‖₁ ε/Δ with the Binary declarations and the code's Δ, for every D (sympy)."""
    binary = Binary
    for relation, moved in _MOVED.items():
        delta = sp.Integer(histogram_sensitivity(relation))
        m = binary(epsilon=1, horizon=1)
        terms = m.budget_terms(SYMBOLIC, horizon=D, epsilon=eps, sensitivity=delta)
        per_unit = sum((t.membership / t.scale for t in terms), sp.Integer(0))
        levels = binary.levels(D, SYMBOLIC)
        check_identity(per_unit, levels / (levels * delta / eps), "per-unit column sum")
        check_identity(moved * per_unit, eps, f"{relation}: loss of a change of L1 norm {moved}")
    return about_code(
        "Binary over D points: replace loss 2·L·ε/(L·Δ) = ε, add/remove L·ε/(L·Δ) = ε, every D",
        evaluates=[binary.budget_terms, binary.levels, histogram_sensitivity],
        detail="triangle inequality Σ_n|Σ_i a_ni v_i|/b_n ≤ Σ_i|v_i|Σ_n|a_ni|/b_n; Binary's "
        "budget_terms and levels for symbolic D, ε at the Δ the sanitizer's code computes, "
        "simplified by sympy (the other trees: the exhaustive pair-loss row)",
        value="ε",
    )


_DOMAIN_GRID = (
    (Fraction(-1), Fraction(1)),
    (Fraction(0), Fraction(1)),
    (Fraction(0), Fraction(2)),
    (Fraction(-3), Fraction(0)),
    (Fraction(-1, 2), Fraction(3, 2)),
    (Fraction(2), Fraction(5)),
    (Fraction(-7), Fraction(-2)),
)


def _item_delta() -> Outcome:
    """dpref.domains' item Δ on a grid of bounds: hi − lo (replace), max(|lo|,|hi|) (add/remove)."""
    count = 0
    for lo, hi in _DOMAIN_GRID:
        for relation in ("replace", "add_remove"):
            if relation == "add_remove" and not lo <= 0 <= hi:
                continue
            want = hi - lo if relation == "replace" else max(abs(lo), abs(hi))
            got = Domain(lower=lo, upper=hi, integer=False, neighbours=relation).sensitivity
            if got != want:
                raise ProofFailure(f"[{lo}, {hi}] {relation}: Domain.sensitivity = {got} ≠ {want}")
            count += 1
    return checked(
        "grid",
        count,
        "Domain.sensitivity = hi − lo (replace), max(|lo|, |hi|) (add/remove)",
        "bounds " + ", ".join(f"[{lo}, {hi}]" for lo, hi in _DOMAIN_GRID) + "; the histogram "
        "leaves' domain [0, Δ] cannot tell the two apart, so this row checks the code for both",
    )


def _pair_losses(san: ThresholdSanitizer) -> tuple[Fraction, Fraction]:
    """Exact worst loss of a replace pair (i, j) and of one added/removed leaf i, from the
    sanitizer's plan: ``Σ_n |w_n|·|[i∈n] − [j∈n]|/b_n`` and ``Σ_{n∋i} |w_n|/b_n``."""
    plan = san.plan()
    items = np.arange(1, plan.horizon + 1)[:, None]
    member = (items >= plan.lo[None, :]) & (items <= plan.hi[None, :])
    unit = [
        abs(plan.weight_table[int(w)]) / plan.scale_table[int(s)]
        for w, s in zip(plan.weight_idx, plan.scale_idx, strict=True)
    ]
    values = sorted(set(unit))
    common = lcm(*(v.denominator for v in values))
    weights = np.array([int(v * common) for v in unit], dtype=object)
    leaf = max(int(w) for w in member.astype(object) @ weights) if plan.n_nodes else 0
    pair = 0
    for i in range(plan.horizon):
        diff = (member[i][None, :] != member).astype(object)
        pair = max(pair, max(int(w) for w in diff @ weights))
    return Fraction(pair, common), Fraction(leaf, common)


def _tree_exhaustive(limit: int) -> Outcome:
    top = min(limit, _D_LIMIT)
    eps0 = Fraction(3, 4)
    for tree in tree_counters():
        for size in range(1, top + 1):
            pts = np.arange(size, dtype=np.float64)
            rep = ThresholdSanitizer(domain=pts, epsilon=eps0, tree=tree, neighbours="replace")
            add = ThresholdSanitizer(domain=pts, epsilon=eps0, tree=tree, neighbours="add-remove")
            pair, _ = _pair_losses(rep)
            _, leaf = _pair_losses(add)
            if pair > eps0 or leaf > eps0:
                raise ProofFailure(
                    f"tree={tree}, D={size}: replace loss {pair}, add/remove loss {leaf} > {eps0}"
                )
    return checked(
        "D",
        top,
        "every replace pair and every added/removed leaf has exact plan loss ≤ ε",
        f"trees {', '.join(tree_counters())}; ε = 3/4; exact Fractions from each plan",
    )


# ---------------------------------------------------------------- streaming
def _blocks_partition(limit: int) -> Outcome:
    top = min(limit, _M_LIMIT)
    offline = ThresholdSanitizer(domain=[0.0, 1.0], epsilon=1)
    for n in range(1, _N_LIMIT + 1):
        s = StreamingSanitizer(offline, block_size=n)
        for m in range(0, top + 1):
            stream = np.zeros(m)
            run = s.online(0)
            for x in stream:
                run.step(x)
            run.close()
            batch = s.sanitize(stream, 0) if m else None
            expect = [n] * (m // n) + ([m % n] if m % n else [])
            if run.lengths != expect or (batch is not None and list(batch.lengths) != expect):
                raise ProofFailure(f"m={m}, n={n}: blocks {run.lengths} != {expect}")
            if batch is not None and batch.synthetic.size != m:
                raise ProofFailure(f"m={m}, n={n}: {batch.synthetic.size} synthetic points")
            try:
                run.step(0.0)
            except ParameterError:
                pass
            else:
                raise ProofFailure(f"m={m}, n={n}: a step after close() was accepted")
    return checked(
        "m",
        top,
        "released blocks partition the positions 1..m (n ≤ 6); close() releases once",
        "online step-by-step and batch forms; a step after close raises",
    )


class _SympyLog:
    """``log1p``/``expm1`` in sympy, for :func:`amplified_epsilon`."""

    @staticmethod
    def log1p(x: Any) -> Any:
        return sp.log(1 + x)

    @staticmethod
    def expm1(x: Any) -> Any:
        return sp.exp(x) - 1


def _amplification() -> Outcome:
    p = 1 / (1 + p_s)  # p in (0, 1]
    e_up, e_dn = sp.exp(eps), sp.exp(-eps)
    a = 1 - p + p * e_up
    b = 1 - p + p * e_dn
    # the code's formula and cap, for symbolic ε₀ and p, against the mixture bounds below
    for relation, ratio, cap_factor in (("add-remove", a, 1), ("replace", a / b, 2)):
        code = amplified_epsilon(eps, p, relation, _SympyLog)
        check_identity(sp.expand_log(sp.exp(code), force=True), ratio, f"{relation}: e^ε(code)")
        cap = amplification_cap(eps, relation)
        check_identity(cap, cap_factor * eps, f"{relation}: cap")
        check_identity(sp.exp(code).subs(p_s, 0), sp.exp(cap), f"{relation}: p = 1 gives the cap")
        # e^cap − e^code ≥ 0: add/remove (1−p)(e^ε−1); replace (1−p)(e^{2ε}−1)/b
        gap = sp.exp(cap) - ratio
        want = (1 - p) * (sp.exp(cap) - 1) / (1 if relation == "add-remove" else b)
        check_identity(gap, want, f"{relation}: e^cap − e^ε(code)")
    # mixture bounds: M1 = e^ε M0 − u (so M1 ≤ e^ε M0) and M1 = e^{−ε} M0 + u
    upper_gap = a * M0 - ((1 - p) * M0 + p * (e_up * M0 - u))
    lower_gap = ((1 - p) * M0 + p * (e_dn * M0 + u)) - b * M0
    check_identity(upper_gap, p * u, "P ≤ (1−p+pe^ε)M(K)")
    check_identity(lower_gap, p * u, "P ≥ (1−p+pe^{−ε})M(K)")
    check_sign(p * u, "nonnegative", "p·u ≥ 0")
    key = p * (1 - p) * (e_up - 1) * (1 - e_dn)
    check_identity(a * b - 1, key, "(1−p+pe^ε)(1−p+pe^{−ε}) − 1")
    check_sign(p_s * (e_up - 1) * (1 - e_dn) / (1 + p_s) ** 2, "nonnegative", "p(1−p)(…) ≥ 0")
    check_identity(key, p_s * (e_up - 1) * (1 - e_dn) / (1 + p_s) ** 2, "p(1−p) with p=1/(1+s)")
    # at most ε (resp. 2ε): e^ε − (1 + p(e^ε − 1)) = (1 − p)(e^ε − 1) ≥ 0
    check_identity(e_up - a, (1 - p) * (e_up - 1), "e^ε − (1+p(e^ε−1))")
    # e^ε − 1 > 0 for ε > 0 (exp is increasing, exp(0) = 1): sympy's assumptions do not
    # decide it, so the positive symbol G stands for it in this sign step
    check_sign(p_s / (1 + p_s) * G, "nonnegative", "(1−p)(e^ε−1) ≥ 0")
    check_identity(a.subs(p_s, 0) / b.subs(p_s, 0), sp.exp(2 * eps), "p = 1 gives e^{2ε}")
    # the p = 1 branch of the code returns the cap exactly (no rounding)
    for e0 in (Fraction(1, 1000), Fraction(1), Fraction(20), Fraction(10**7)):
        for relation in ("add-remove", "replace"):
            if subsampled_epsilon(e0, 1, relation) != amplification_cap(e0, relation):
                raise ProofFailure(f"ε₀={e0}, p=1, {relation}: not the cap")
    return about_code(
        "add/remove: ε(p) = ln(1+p(e^ε₀−1)) ≤ ε₀; replace: ε(p) = "
        "ln((1−p+pe^ε₀)/(1−p+pe^−ε₀)) ≤ 2ln(1+p(e^ε₀−1)) and ≤ 2ε₀, = the cap at p = 1; "
        "for every ε₀ > 0, p ∈ (0, 1]",
        evaluates=[amplified_epsilon, amplification_cap, subsampled_epsilon],
        detail="the code's formula (amplified_epsilon, evaluated with sympy's log/exp for "
        "symbolic ε₀ and p = 1/(1+s), s ≥ 0) equals the mixture bounds' ln of "
        "(1−p+pe^ε₀)[/(1−p+pe^−ε₀)]; e^cap − e^ε(p) = (1−p)(e^cap − 1)[/(1−p+pe^−ε₀)] ≥ 0; "
        "(1−p+pe^ε)(1−p+pe^−ε) − 1 = p(1−p)(e^ε−1)(1−e^−ε) ≥ 0; lemma e^ε > 1 for ε > 0; "
        "subsampled_epsilon's p = 1 branch returns amplification_cap (checked at 4 ε₀); its "
        "60-digit evaluation below 1: the safe-rounding row (checked)",
        value="ln(1+p(e^ε₀−1))",
    )


def _safe_rounding() -> Outcome:
    import mpmath  # type: ignore[import-untyped]

    ctx = mpmath.MPContext()
    ctx.dps = 120
    count = 0
    for e0 in (Fraction(1, 1000), Fraction(1, 10), Fraction(1), Fraction(7, 2), Fraction(20)):
        for p in (
            Fraction(1, 10**6),
            Fraction(1, 3),
            Fraction(1, 10),
            Fraction(9, 10),
            Fraction(1),
        ):
            _, keep = effective_probability(p)
            if keep < p:
                raise ProofFailure(f"p={p}: effective probability {keep} < p")
            for rel in ("add-remove", "replace"):
                declared = subsampled_epsilon(e0, p, rel)
                e = ctx.mpf(e0.numerator) / e0.denominator
                pm = ctx.mpf(p.numerator) / p.denominator
                val = ctx.log1p(pm * ctx.expm1(e))
                if rel == "replace":
                    val -= ctx.log1p(pm * ctx.expm1(-e))
                exact = ctx.mpf(declared.numerator) / declared.denominator
                if p == 1:  # the bound is ε₀ or 2ε₀ exactly: compare as Fractions
                    if declared != (e0 if rel == "add-remove" else 2 * e0):
                        raise ProofFailure(f"ε₀={e0}, p=1, {rel}: declared {declared}")
                elif exact < val or exact - val > ctx.mpf("1e-14"):
                    raise ProofFailure(f"ε₀={e0}, p={p}, {rel}: declared {declared} vs {val}")
                s = StreamingSanitizer(
                    ThresholdSanitizer(domain=[0.0, 1.0], epsilon=e0, neighbours="add-remove"),
                    block_size=4,
                    subsample=p,
                    neighbours=rel,
                )
                if s.epsilon != subsampled_epsilon(e0, keep, rel):
                    raise ProofFailure(f"ε₀={e0}, p={p}: the class declares {s.epsilon}")
                count += 1
    return checked(
        "grid",
        count,
        "declared ε ≥ the 120-digit value of the bound at the sampler's probability, "
        "within 1e−14; StreamingSanitizer.epsilon is that value",
        "ε₀ ∈ {1/1000, 1/10, 1, 7/2, 20}, p ∈ {10⁻⁶, 1/10, 1/3, 9/10, 1}",
    )


def _threshold_proof(cls: type[Any], limit: int) -> list[ClaimResult]:
    name = cls.__name__
    return [
        run_claim(name, "histogram Δ", _histogram_delta),
        run_claim(name, "item Δ (dpref.domains)", _item_delta),
        run_claim(name, "tree sensitivity", _tree_symbolic),
        run_claim(name, "pair losses", lambda: _tree_exhaustive(limit)),
        run_claim(
            name,
            "post-processing",
            lambda: note(
                "CDF projection, synthetic data and sketches read only the noisy release",
                "a citation, not a claim: closure under post-processing (Dwork, Roth 2014, "
                "Prop. 2.1); that they read nothing else is the code's structure, not proven",
            ),
        ),
    ]


def _streaming_proof(cls: type[Any], limit: int) -> list[ClaimResult]:
    name = cls.__name__
    return [
        run_claim(name, "disjoint blocks", lambda: _blocks_partition(limit)),
        run_claim(name, "budget", _amplification),
        run_claim(name, "safe rounding", _safe_rounding),
    ]


PROOFS: dict[str, Callable[[type[Any], int], list[ClaimResult]]] = {
    "ThresholdSanitizer": _threshold_proof,
    "StreamingSanitizer": _streaming_proof,
}
