"""The ``coverage`` suite of ``dpref verify``: the parameters the theorems claim but the
other suites never exercise (issue 23, item 6), each compared exactly (Fractions) with an
independent derivation.

Per registered mechanism (one part each, so ``--mechanism NAME`` runs its rows):

* **domains** — every example (and each pure example's zCDP twin, built with ``rho=``: the
  L2 sum of the mechanisms that declare no zCDP example) built on item domains other than
  bits: ``[−1, 1]`` and ``[−1/2, 1]`` under replace-one (Δ must be ``upper − lower``: 2 and
  3/2) and ``[−1, 3]`` under add/remove (Δ = ``max(|lower|, |upper|)`` = 3).  The
  mechanism's Δ must equal that derivation, the domain's extreme pair must realise it, and
  the plan's privacy sum recomputed with the derived Δ (not the mechanism's) must stay
  within the declared ε (or 2ρ), and equal the expected sum where one is known;
* **declaration** — the declared budget terms against the plan's nodes at
  T ∈ :data:`DECLARATION_HORIZONS`: per scale, the declared membership is the largest
  weight any item has in the plan's nodes of that scale (so a declaration claiming one
  level too few fails even when it still sums to ε), and every scale the plan uses is
  declared; for a factorization, the term is item 1's column of the strategy.  Not for
  the declarations of a series (decayed sums) or per instance (Hybrid), see
  :func:`_declaration`;
* **level budgets** — for the mechanisms with a ``budget=`` parameter (the trees and the
  binary mechanism), every example rebuilt with an explicit split ``ε_h ∝ h + 1`` (all
  different, so a permuted split shows), pure and zCDP: the split is kept as given, every
  node of the plan has exactly the scale ``Δ/ε_h`` (variance ``Δ²/(2ρ_h)``) of the level
  its interval's length ``k^h`` puts it on, and the online counter draws the same noise
  as the batch path on a seed (the scales here are within a factor ``L(L+1)/2`` of each
  other, so a level scaled by another level's σ is far outside the tolerance);
* **switch points** — the factorizations past every internal switch of their sums: sqrt's
  ``S₁`` above :data:`~dpref.mechanisms.factorization.SQRT_EXACT_S1` against the exact
  ``(2T−1)·binom(2T−2, T−1)/4^{T−1}`` (that identity is itself checked against direct
  summation for T ≤ 64), ``S₂`` above ``SQRT_EXACT_S2`` against the exact sum; BLT's sums
  just past their exact range against the geometric series in exact arithmetic; each
  bound must be ≥ the exact value and within a relative 10⁻⁴ of it (sqrt's: 10⁻¹²), and
  the node scale (and its float) of a mechanism built there must be ≥ the exact ``S₁Δ/ε``
  (``S₂Δ²/2ρ``);
* **sanitizers** — for each tree counter the threshold sanitizer can use: its Δ on the
  histogram is the largest L1 change of a histogram under the relation, found by
  enumerating small data sets (2 under replace-one, 1 under add/remove), and the tree's
  plan at that Δ stays within the sanitizer's ε.  With the default tree (``binary``):
  amplification by subsampling against a 60-digit evaluation of the closed forms written
  directly (``ln(1 − p + p·e^ε)``; ``ln((1 − p + p·e^ε)/(1 − p + p·e^{−ε}))``), exact
  values at p = 1 (ε and 2ε), the sampler's keep probability against a count of the
  53-bit uniforms below its threshold, and the streaming sanitizer's ε at p = 1 and p < 1.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import time
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np

from dpref.domains import Neighbours
from dpref.verify import VerifyOptions, VerifyRow, by_mechanism, splittable

__all__ = ["coverage_suite"]

EPSILON = Fraction(7, 10)
"""The ε (or ρ, for a zCDP example) the rows build with."""
DOMAINS: tuple[tuple[Fraction, Fraction, bool, Neighbours], ...] = (
    (Fraction(-1), Fraction(1), True, "replace"),
    (Fraction(-1, 2), Fraction(1), False, "replace"),
    (Fraction(-1), Fraction(3), True, "add_remove"),
)
"""(lower, upper, integer, neighbours) of the item domains checked besides bits."""
BUDGET_HORIZONS = (5, 16, 27)
"""Horizons of the level-budget rows (several level counts, a full and partial trees)."""
ONLINE_TOLERANCE = 1e-9
"""Online and batch agree within this times ``1 + Σ|out|`` (float summation order)."""
RELATIVE_BOUND_GAP = Fraction(1, 10**4)
"""How far above the exact sum a switch-point bound may be (relative)."""
SQRT_BOUND_GAP = Fraction(1, 10**12)
"""sqrt's S₁/S₂ bounds up to 2²⁰ are within this of the exact sums (issue 26: the fixed-point
sums; the earlier logarithmic tail was 1.1–1.6·10⁻⁶ high and now fails here)."""
AMPLIFICATION_GAP = Fraction(2, 10**15)
"""How far above the exact amplified ε the rational bound may be (two grid steps)."""
_DISCRETE = ("discrete", "discrete_gaussian")


class _Tally:
    """Checks of one row: counts, the first failure, a summary."""

    def __init__(self) -> None:
        self.checks = 0
        self.failed = 0
        self.first = ""

    def add(self, what: str, ok: bool) -> None:
        self.checks += 1
        if not ok:
            self.failed += 1
            self.first = self.first or what

    def guard(self, what: str, fn: Callable[[], None]) -> None:
        """Run ``fn`` (which adds checks); an exception is one failed check."""
        try:
            fn()
        except Exception as exc:  # a crash of the code under test is a finding
            self.add(f"{what}: {type(exc).__name__}: {exc}", False)

    def row(self, name: str, start: float, summary: str) -> VerifyRow:
        return VerifyRow(
            "coverage",
            name,
            self.checks,
            self.failed,
            seconds=time.perf_counter() - start,
            detail=self.first or summary,
        )


# ------------------------------------------------------------------ domains
def _derived_delta(lower: Fraction, upper: Fraction, neighbours: str) -> Fraction:
    """Δ of one item, from the definition: replace-one moves an item anywhere in
    ``[lower, upper]``; add/remove moves it between 0 and anywhere in the domain."""
    if neighbours == "replace":
        return upper - lower
    return max(abs(lower), abs(upper))


def _horizon_of(ex: Any) -> int:
    return ex.horizons[0] if ex.horizons else 16


def _domains(name: str, tally: _Tally) -> None:
    from dpref.domains import Domain
    from dpref.mechanisms import MECHANISMS

    cls: Any = MECHANISMS[name]
    for i, ex in enumerate(cls.examples):
        T = _horizon_of(ex)
        # a pure example is also checked as its zCDP twin (rho=, Gaussian noise): the L2 sum
        # of mechanisms that declare no zCDP example is otherwise never computed
        budgets = [ex.budget_name]
        if ex.privacy == "pure" and ex.noise is None:
            budgets.append("rho")
        for (lower, upper, integer, rel), budget in itertools.product(DOMAINS, budgets):
            if not integer and ex.noise in _DISCRETE:
                continue
            kind = "int" if integer else "real"
            twin = " (zCDP twin)" if budget != ex.budget_name else ""
            what = f"{name} example {i}{twin} on {kind}[{lower},{upper}]/{rel}"

            def one(
                ex: Any = ex,
                T: int = T,
                lo: Fraction = lower,
                hi: Fraction = upper,
                integer: bool = integer,
                rel: Neighbours = rel,
                budget: str = budget,
                what: str = what,
            ) -> None:
                dom = Domain(lower=lo, upper=hi, integer=integer, neighbours=rel)
                delta = _derived_delta(lo, hi, rel)
                m = cls(**{budget: EPSILON}, **ex.kwargs(cls, T), domain=dom)
                tally.add(f"{what}: Δ = {m.sensitivity}, expected {delta}", m.sensitivity == delta)
                a, b = dom.extremes()
                tally.add(
                    f"{what}: extremes {a}, {b} do not realise Δ = {delta}",
                    Fraction(b) - Fraction(a) == delta,
                )
                plan = dataclasses.replace(m.plan(T), sensitivity=delta)
                check, _ = plan.check_privacy()
                tally.add(f"{what}: at Δ = {delta}: {check.detail}", check.passed)

            tally.guard(what, one)


# ------------------------------------------------------------------ declarations
DECLARATION_HORIZONS = (1, 2, 5, 16, 27, 64)
"""Horizons at which a mechanism's declared terms are compared with its plan."""


def _declaration(name: str, tally: _Tally) -> bool:
    """The declared terms against the plan: per Laplace scale, the declared membership
    must be the largest total weight ``Σ_n |w_n|`` any item has in the plan's nodes of
    that scale (at every T for a mechanism built for that horizon; at most that for an
    unbounded one, whose declaration is for its worst T, and exactly that at the largest
    T), and every scale the plan uses must be declared.  For a Toeplitz factorization the
    one term must be item 1's column, ``S₁ = Σ_k |c_k|`` of the strategy, at scale
    ``S₁Δ/ε``.  Not for declarations of a series (the decayed sums' last term stands for
    levels no finite plan holds; PolynomialSum's weighted instances) or per instance
    (Hybrid's ``binary_k``)."""
    from dpref.mechanisms import MECHANISMS
    from dpref.mechanisms.factorization import ToeplitzFactorization

    cls = MECHANISMS[name]
    seen = False
    for i, ex in enumerate(cls.examples):
        if ex.privacy != "pure":
            continue
        bounded = "horizon" in ex.kwargs(cls, 1)
        for T in DECLARATION_HORIZONS:
            m = ex.build(cls, EPSILON, T)
            terms = m.budget_terms()
            if any(
                t.kind.startswith("levels>") or t.kind.endswith("_k") or t.weight != 1
                for t in terms
            ):
                return seen
            if not bounded and len({Fraction(t.scale) for t in terms}) != len(terms):
                return seen
            seen = True
            exact = bounded or T == DECLARATION_HORIZONS[-1]
            what = f"{name} example {i} T={T}"

            def one(
                m: Any = m, T: int = T, terms: Any = terms, what: str = what, exact: bool = exact
            ) -> None:
                if isinstance(m, ToeplitzFactorization):
                    c = m.strategy_exact(T)
                    s1 = sum(
                        (abs(Fraction(v, c.denom * c.base**j)) for j, v in enumerate(c.nums)),
                        Fraction(0),
                    )
                    want = [(s1, s1 * m.sensitivity / m.design_epsilon)]
                    got = [(Fraction(t.membership), Fraction(t.scale)) for t in terms]
                    tally.add(f"{what}: declared {got}, item 1's column gives {want}", got == want)
                    return
                plan = m.plan(T)
                if plan.base != 1:
                    return
                declared: dict[Fraction, Fraction] = {}
                for t in terms:
                    b = Fraction(t.scale)
                    declared[b] = declared.get(b, Fraction(0)) + Fraction(t.membership)
                used: dict[Fraction, list[Fraction]] = {}
                for n in range(plan.n_nodes):
                    w = abs(plan.weight_table[int(plan.weight_idx[n])])
                    if w == 0:
                        continue
                    b = plan.scale_table[int(plan.scale_idx[n])]
                    per_item = used.setdefault(b, [Fraction(0)] * T)
                    for item in range(int(plan.lo[n]) - 1, int(plan.hi[n])):
                        per_item[item] += w
                for b, per_item in used.items():
                    worst = max(per_item)
                    have = declared.get(b)
                    ok = have is not None and (have == worst if exact else have >= worst)
                    tally.add(
                        f"{what}: nodes of scale {b} hold an item {worst} times, declared {have}",
                        ok,
                    )
                if exact:
                    for b, count in declared.items():
                        tally.add(
                            f"{what}: declared {count} nodes of scale {b}, the plan has none",
                            count == 0 or b in used,
                        )

            tally.guard(what, one)
    return seen


# ------------------------------------------------------------------ level budgets
def _split(levels: int, total: Fraction) -> tuple[Fraction, ...]:
    """``ε_h ∝ h + 1``: all different, summing to ``total`` exactly."""
    norm = levels * (levels + 1) // 2
    return tuple(total * (h + 1) / norm for h in range(levels))


def _level_of(size: int, k: int) -> int:
    """h with ``k^h = size`` (−1 when size is not a power of k)."""
    h, p = 0, 1
    while p < size:
        p *= k
        h += 1
    return h if p == size else -1


def _level_budgets(name: str, tally: _Tally) -> bool:
    from dpref.mechanisms import MECHANISMS
    from dpref.mechanisms.trees import tree_levels

    cls: Any = MECHANISMS[name]
    if "budget" not in cls.parameters():
        return False
    for i, ex in enumerate(cls.examples):
        for T in BUDGET_HORIZONS:
            what = f"{name} example {i} ({ex.privacy}) T={T}"

            def one(ex: Any = ex, T: int = T, what: str = what) -> None:
                kw = {k: v for k, v in ex.kwargs(cls, T).items() if k != "budget"}
                kw["horizon"] = T
                probe = cls(**{ex.budget_name: EPSILON}, **kw)
                k = int(getattr(probe, "k", 2))
                if kw.get("k") == "auto":  # an explicit split needs the chosen k
                    kw["k"] = k
                levels_at = getattr(probe, "levels_at", None)  # the class's own count
                given = _split(int(levels_at(T)) if levels_at else tree_levels(T, k), EPSILON)
                m = cls(**{ex.budget_name: EPSILON}, **kw, budget=given)
                gaussian = ex.privacy == "zcdp"
                got = (
                    m.level_budget_values()
                    if hasattr(m, "level_budget_values")
                    else (
                        tuple(EPSILON * e for e in m.level_epsilons)
                        if gaussian
                        else m.level_epsilons
                    )
                )
                tally.add(f"{what}: split {got} is not the given {given}", tuple(got) == given)
                plan = m.plan(T)
                delta = m.sensitivity
                bad = ""
                node_levels = getattr(m, "node_levels", None)  # clipped blocks (BlueTree)
                by_node = node_levels(T).tolist() if node_levels else None
                for n in range(plan.n_nodes):
                    h = by_node[n] if by_node else _level_of(int(plan.hi[n] - plan.lo[n] + 1), k)
                    want = (
                        (delta * delta / (2 * given[h]) if gaussian else delta / given[h])
                        if h >= 0
                        else None
                    )
                    if plan.scale_table[int(plan.scale_idx[n])] != want:
                        bad = (
                            f"node [{plan.lo[n]}, {plan.hi[n]}] (level {h}) has "
                            f"{'variance' if gaussian else 'scale'} "
                            f"{plan.scale_table[int(plan.scale_idx[n])]}, expected {want}"
                        )
                        break
                tally.add(f"{what}: {bad}", not bad)
                check, _ = plan.check_privacy()
                tally.add(f"{what}: {check.detail}", check.passed)
                zeros = np.zeros(T)
                seed = 12345 + T
                batch = m.release(zeros, rng=seed)
                online = m.online(rng=seed).run(zeros)
                tol = ONLINE_TOLERANCE * (1 + float(np.sum(np.abs(batch))))
                worst = float(np.max(np.abs(online - batch)))
                tally.add(f"{what}: online − batch = {worst:.3g} > {tol:.3g}", worst <= tol)

            tally.guard(what, one)
    return True


# ------------------------------------------------------------------ switch points
def _sqrt_s1_closed(T: int) -> Fraction:
    """``Σ_{k<T} binom(2k,k)/4^k = (2T−1)·binom(2T−2, T−1)/4^{T−1}``."""
    n = T - 1
    return Fraction((2 * n + 1) * math.comb(2 * n, n), 4**n)


def _sqrt_direct(T: int, power: int) -> Fraction:
    return sum((Fraction(math.comb(2 * k, k), 4**k) ** power for k in range(T)), Fraction(0))


def _bound_ok(
    tally: _Tally, what: str, bound: Fraction, exact: Fraction, gap: Fraction = RELATIVE_BOUND_GAP
) -> None:
    tally.add(f"{what}: bound {float(bound)!r} < exact {float(exact)!r}", bound >= exact)
    tally.add(
        f"{what}: bound {float(bound)!r} more than {float(gap):.0e} above {float(exact)!r}",
        bound <= exact * (1 + gap),
    )


def _scales_ok(
    tally: _Tally, what: str, cls: Any, kw: dict[str, Any], s1: Fraction, s2: Fraction
) -> None:
    m = cls(epsilon=EPSILON, **kw)
    b = m.node_scale()
    tally.add(f"{what}: Laplace scale {float(b)!r} < S₁Δ/ε", b >= s1 * m.sensitivity / EPSILON)
    tally.add(f"{what}: Laplace float below the exact scale", Fraction(m._noise_float()) >= b)
    g = cls(rho=EPSILON, **kw)
    v = g.node_scale()
    want = s2 * g.sensitivity**2 / (2 * EPSILON)
    tally.add(f"{what}: Gaussian variance {float(v)!r} < S₂Δ²/(2ρ)", v >= want)
    tally.add(f"{what}: Gaussian σ float below √σ²", Fraction(g._noise_float()) ** 2 >= v)


def _switch_points(name: str, tally: _Tally) -> bool:
    from dpref.mechanisms import MECHANISMS
    from dpref.mechanisms import factorization as fz

    cls: Any = MECHANISMS[name]
    if not issubclass(cls, fz.ToeplitzFactorization):
        return False
    if issubclass(cls, fz.SqrtFactorization):

        def identity() -> None:
            for T in range(1, 65):
                tally.add(f"sqrt S₁ identity at T={T}", _sqrt_s1_closed(T) == _sqrt_direct(T, 1))
                tally.add(f"sqrt S₂ exact at T={T}", fz.sqrt_s2(T) == _sqrt_direct(T, 2))

        tally.guard("sqrt identities", identity)
        for T in (fz.SQRT_EXACT_S1, fz.SQRT_EXACT_S1 + 1, fz.SQRT_EXACT_S1 + 1000):
            what = f"sqrt S₁ at T={T}"

            def s1(T: int = T, what: str = what) -> None:
                exact = _sqrt_s1_closed(T)
                _bound_ok(tally, what, fz.sqrt_s1(T), exact, SQRT_BOUND_GAP)
                m = cls(epsilon=EPSILON, horizon=T)
                b = m.node_scale()
                tally.add(f"{what}: scale below S₁Δ/ε", b >= exact * m.sensitivity / EPSILON)
                tally.add(f"{what}: float scale below the exact", Fraction(m._noise_float()) >= b)

            tally.guard(what, s1)
        for T in (fz.SQRT_EXACT_S2 + 1, fz.SQRT_EXACT_S2 + 64):
            what = f"sqrt S₂ at T={T}"

            def s2(T: int = T, what: str = what) -> None:
                exact = fz._sqrt_s2_exact(T)
                _bound_ok(tally, what, fz.sqrt_s2(T), exact, SQRT_BOUND_GAP)
                g = cls(rho=EPSILON, horizon=T)
                v = g.node_scale()
                tally.add(
                    f"{what}: variance below S₂Δ²/(2ρ)",
                    v >= exact * g.sensitivity**2 / (2 * EPSILON),
                )
                tally.add(f"{what}: σ float below √σ²", Fraction(g._noise_float()) ** 2 >= v)

            tally.guard(what, s2)
        return True
    for i, ex in enumerate(cls.examples):
        what = f"{name} example {i}"

        def blt(ex: Any = ex, what: str = what) -> None:
            kw = {k: v for k, v in ex.kwargs(cls, 1).items() if k not in ("horizon", "noise")}
            probe = cls(epsilon=EPSILON, horizon=1, **kw)
            bits = max(2 * t.denominator.bit_length() for t in probe.theta)
            edge = fz.BLT_EXACT_BITS // bits
            for T in (2, edge, edge + 1):
                n = T - 1
                pairs1 = list(zip(probe.omega, probe.theta, strict=True))
                pairs2 = [(wi * wj, ti * tj) for wi, ti in pairs1 for wj, tj in pairs1]
                # Σ_{k<T} c_k with c_0 = 1, c_k = Σ_i ω_i θ_i^{k−1}: geometric series
                e1 = 1 + sum((w * (1 - t**n) / (1 - t) for w, t in pairs1), Fraction(0))
                e2 = 1 + sum((w * (1 - t**n) / (1 - t) for w, t in pairs2), Fraction(0))
                if T == 2:
                    c = probe.strategy_exact(2)
                    direct = [Fraction(v, c.denom * c.base**j) for j, v in enumerate(c.nums)]
                    tally.add(f"{what}: S₁ series at T=2", e1 == sum(direct, Fraction(0)))
                _bound_ok(tally, f"{what} S₁ at T={T}", probe.s1(T), e1)
                _bound_ok(tally, f"{what} S₂ at T={T}", probe.s2(T), e2)
                if T > 2:
                    _scales_ok(tally, f"{what} at T={T}", cls, {**kw, "horizon": T}, e1, e2)

        tally.guard(what, blt)
    return True


# ------------------------------------------------------------------ sanitizers
def _histogram_delta(points: int, relation: str) -> int:
    """The largest L1 change of a histogram over ``points`` cells between neighbouring
    data sets of at most 2 records, by enumeration."""
    best = 0
    for n in (1, 2):
        for data in itertools.product(range(points), repeat=n):
            h = np.bincount(data, minlength=points)
            if relation == "replace":
                for i, v in itertools.product(range(n), range(points)):
                    other = list(data)  # a replaced record
                    other[i] = v
                    best = max(best, int(np.abs(h - np.bincount(other, minlength=points)).sum()))
            else:
                for i in range(n):
                    other = list(data[:i] + data[i + 1 :])
                    h2 = np.bincount(np.array(other, dtype=np.int64), minlength=points)
                    best = max(best, int(np.abs(h - h2).sum()))
    return best


def _threshold(name: str, tally: _Tally) -> bool:
    from dpref.sanitize.threshold import ThresholdSanitizer, tree_counters

    if name not in tree_counters():
        return False
    for rel in ("replace", "add-remove"):
        what = f"threshold sanitizer on {name}, {rel}"

        def one(rel: str = rel, what: str = what) -> None:
            delta = _histogram_delta(3, rel)
            for size in (3, 8):
                eps = Fraction(1, 2)
                san = ThresholdSanitizer(
                    domain=np.arange(size, dtype=np.float64), epsilon=eps, tree=name, neighbours=rel
                )
                tally.add(
                    f"{what}: Δ = {san.sensitivity}, derived {delta}", san.sensitivity == delta
                )
                plan = dataclasses.replace(san.mechanism.plan(size), sensitivity=Fraction(delta))
                check, total = plan.check_privacy()
                tally.add(
                    f"{what}, D={size}, at Δ = {delta}: {check.detail}",
                    check.passed and total <= san.epsilon,
                )

        tally.guard(what, one)
    return True


def _amplified(eps: Fraction, p: Fraction, relation: str) -> Any:
    from dpref.rigorous import mp_context

    ctx = mp_context(60)
    e = ctx.mpf(eps.numerator) / eps.denominator
    pm = ctx.mpf(p.numerator) / p.denominator
    up = 1 - pm + pm * ctx.exp(e)
    if relation == "add-remove":
        return ctx.log(up)
    return ctx.log(up / (1 - pm + pm * ctx.exp(-e)))


def _amplification(tally: _Tally) -> None:
    from dpref.rigorous import mpf_fraction
    from dpref.sanitize.amplification import effective_probability, subsampled_epsilon
    from dpref.sanitize.streaming import StreamingSanitizer
    from dpref.sanitize.threshold import ThresholdSanitizer

    def bounds() -> None:
        for eps, p, rel in itertools.product(
            (Fraction(1, 2), Fraction(1), Fraction(2)),
            (Fraction(1, 10), Fraction(1, 3), Fraction(1, 2), Fraction(9, 10), Fraction(1)),
            ("add-remove", "replace"),
        ):
            got = subsampled_epsilon(eps, p, rel)
            what = f"subsampled ε (ε₀={eps}, p={p}, {rel}) = {float(got)!r}"
            if p == 1:
                want = eps if rel == "add-remove" else 2 * eps
                tally.add(f"{what}, expected exactly {want}", got == want)
                continue
            exact = _amplified(eps, p, rel)
            lo = mpf_fraction(exact * (1 - 1e-50))
            hi = mpf_fraction(exact * (1 + 1e-50))
            tally.add(f"{what} < the exact {float(hi)!r}", got >= hi)
            tally.add(f"{what} far above the exact {float(lo)!r}", got <= lo + AMPLIFICATION_GAP)

    def keep() -> None:
        unit = 1 << 53
        for p in (Fraction(1, 10), Fraction(1, 3), Fraction(2, 3), Fraction(1)):
            q, got = effective_probability(p)
            # the smallest float ≥ p, and the share of the 2^53 uniforms k·2^−53 below it
            f = float(p)
            if Fraction(f) < p:
                f = math.nextafter(f, math.inf)
            below = -((-Fraction(f).numerator * unit) // Fraction(f).denominator)
            want = min(Fraction(below, unit), Fraction(1))
            tally.add(f"keep probability at p={p}: {got}, expected {want}", got == want and q == f)
            tally.add(f"keep probability at p={p} below p", got >= p)

    def streaming() -> None:
        eps0 = Fraction(1)
        pts = [0.0, 1.0, 2.0]
        rep = ThresholdSanitizer(domain=pts, epsilon=eps0)
        add = ThresholdSanitizer(domain=pts, epsilon=eps0, neighbours="add-remove")
        cases = [
            (StreamingSanitizer(rep, block_size=2), rep.epsilon),
            (StreamingSanitizer(add, block_size=2, subsample=1), 2 * add.epsilon),
            (
                StreamingSanitizer(add, block_size=2, subsample=1, neighbours="add-remove"),
                add.epsilon,
            ),
        ]
        for san, want in cases:
            tally.add(f"{san!r}: ε = {san.epsilon}, expected {want}", san.epsilon == want)
        p = Fraction(1, 3)
        san = StreamingSanitizer(add, block_size=2, subsample=p)
        exact = _amplified(add.epsilon, san.keep_probability, "replace")
        tally.add(
            f"{san!r}: ε = {float(san.epsilon)!r} below the amplified {float(exact)!r}",
            san.epsilon >= mpf_fraction(exact * (1 + 1e-50)) and san.keep_probability >= p,
        )

    tally.guard("amplification bounds", bounds)
    tally.guard("keep probability", keep)
    tally.guard("streaming sanitizer ε", streaming)


# ------------------------------------------------------------------ the suite
DEFAULT_TREE = "binary"
"""The tree whose part also checks amplification (the sanitizers' default tree)."""


def _mechanism_rows(name: str) -> list[VerifyRow]:
    rows = []
    start = time.perf_counter()
    tally = _Tally()
    _domains(name, tally)
    rows.append(
        tally.row(
            f"{name} domains",
            start,
            f"{tally.checks} exact checks: Δ and the privacy sum on 3 non-bit domains",
        )
    )
    for label, check, what in (
        ("declaration", _declaration, "declared terms = the plan's nodes per scale"),
        (
            "level budgets",
            _level_budgets,
            "explicit splits: per-node scales, online vs batch (≤ 1e-9·Σ|out|)",
        ),
        ("switch points", _switch_points, "sums past their exact/bound switches vs exact"),
        ("sanitizer", _threshold, "histogram Δ by enumeration, tree plan at that Δ"),
    ):
        start = time.perf_counter()
        tally = _Tally()
        if check(name, tally):
            if label == "sanitizer" and name == DEFAULT_TREE:
                _amplification(tally)
                what += "; amplification, keep probability, streaming ε"
            rows.append(tally.row(f"{name} {label}", start, f"{tally.checks} exact checks: {what}"))
    return rows


@splittable(by_mechanism)
def coverage_suite(opts: VerifyOptions) -> list[VerifyRow]:
    """``dpref verify``'s ``coverage`` suite (see the module docstring)."""
    from dpref.mechanisms import MECHANISMS

    rows: list[VerifyRow] = []
    for name in opts.mechanisms or tuple(MECHANISMS):
        rows.extend(_mechanism_rows(name))
    return rows
