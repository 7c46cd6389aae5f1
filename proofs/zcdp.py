"""Gaussian (ρ-zCDP) budgets of every linear-plan mechanism: the twin of the L1 proofs.

A mechanism built with ``rho=`` keeps its Laplace design at ε = 1 (``design_epsilon``): a
node of Laplace scale ``b_n`` there and weight ``w_n`` has per-node ε ``f_n = Δ|w_n|/b_n``,
its share of the budget, and gets Gaussian noise of variance ``σ_n² = |w_n|·Δ·b_n/(2ρ)``
(``Mechanism.node_variance``; docs/gaussian.md).

Theorem (node rule).  For ``a_{n,i} = w_n γ^{d}`` (``d = hi_n − i ≥ 0``, ``0 < γ ≤ 1``)
the node's L2 cost ``(a_{n,i}Δ)²/σ_n²`` equals ``2ρ·f_n·γ^{2d}``, which is at most
``2ρ·f_n·γ^{d}``, with equality when γ = 1.

Proof.  Substitute σ_n²: ``w²γ^{2d}Δ²·2ρ/(|w|Δb) = 2ρ(|w|Δ/b)γ^{2d}`` (an identity sympy
discharges for positive w, Δ, b, ρ).  A power of ``γ ≤ 1`` is in (0, 1], so
``γ^d = 1/(1+v)`` with ``v ≥ 0`` and ``γ^d − γ^{2d} = v/(1+v)² ≥ 0`` (an identity and a
sign sympy decides).  ∎

Theorem (declared Gaussian budget).  Let the class declare, for its worst-placed item, the
node kinds ``(membership m_k, Laplace scale b_k, weight w_k)`` of ``budget_terms`` at
``ε = 1`` (``m_k`` counts ``w_k`` per node for weighted nodes).  With the declared node
variances ``σ_k² = w_k·Δ·b_k/(2ρ)`` the L2 sum ``Σ_k (m_k/w_k)·(w_kΔ)²/σ_k²`` equals
``2ρ·Σ_k m_kΔ/b_k``, i.e. 2ρ times the declared L1 budget at ε = 1; that budget simplifies
to 1 (the pure proofs prove it equals ε; here it is re-derived at ε = 1), so the L2 sum is
exactly 2ρ — or, where the declaration is a bound (γ < 1: the memberships are γ-weighted
and the true L2 weights are ``γ^{2d} ≤ γ^d``), at most 2ρ.  By the Gaussian lemma (a node
release with L2 sensitivity s and variance σ² is ``s²/(2σ²)``-zCDP, composition adds ρ:
``proofs/gaussian.py``) the release is ρ-zCDP.

Proof.  Term by term the substitution is the node rule; the sum is taken symbolically for
the class's own symbols (T, the level count L, Hybrid's instance k, ρ and Δ symbolic where
the declarations accept them), and ``simplify`` reduces ``L2 − 2ρ·L1`` and ``L1 − 1`` to 0
(or decides ``1 − L1 ≥ 0``).  Exhaustive companion (evidence, not a proof): for every
T ≤ 64 (T ≤ 16 for an example with an optimised level budget, which runs an optimiser
per T) and every zCDP example of the class, the Gaussian plan's exact L2 sum equals
2ρ times the exact L1 sum of the same design at ε = 1 (γ = 1), is at most it (γ < 1), and
is at most 2ρ; ``checked for T ≤ 64``.  ∎

References
----------
.. [1] M. Bun, T. Steinke. "Concentrated Differential Privacy: Simplifications,
   Extensions, and Lower Bounds." TCC 2016 (the Gaussian mechanism is
   ``Δ₂²/(2σ²)``-zCDP; composition).
.. [2] C. Canonne, G. Kamath, T. Steinke. "The Discrete Gaussian for Differential
   Privacy." NeurIPS 2020 (the same bound for the discrete Gaussian, integer queries).
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np
import sympy as sp

from dpref.errors import DprefError
from dpref.mechanisms import Mechanism
from dpref.mechanisms.base import BudgetTerm, Example
from proofs.core import (
    SYMBOLIC,
    ClaimResult,
    Delta,
    Outcome,
    ProofFailure,
    T,
    about_code,
    check_identity,
    check_sign,
    checked,
    k,
    label,
    lemma,
    run_claim,
)

__all__ = ["EXHAUSTIVE_T", "RHO", "gaussian_claims", "zcdp_instances"]

RHO = Fraction(7, 10)
"""ρ of the exhaustive checks (every L2 sum is linear in ρ)."""
EXHAUSTIVE_T = 64
"""The exhaustive plan checks run for every T up to this (at most the proof limit)."""
MULTIPLIER_T = 16
"""Every node's float multiplier is compared with its exact variance for every T up to this
and at the largest T of the exhaustive checks."""

rho = sp.Symbol("ρ", positive=True)
"""The zCDP budget ρ > 0."""
L = sp.Symbol("L", integer=True, positive=True)
"""A level count L ≥ 1 (the declarations that take ``levels``)."""


def _symbolic(m: Mechanism) -> Mechanism:
    """A copy of ``m`` whose ρ and Δ are the symbols ρ and Δ: the class's own
    :meth:`~dpref.mechanisms.Mechanism.node_variance` then runs on them."""
    proxy = copy.copy(m)
    proxy.rho = rho
    proxy.sensitivity = Delta
    return proxy


@functools.lru_cache(maxsize=1)
def _power_lemma() -> str:
    """``γ^d − γ^{2d} ≥ 0`` for ``0 < γ ≤ 1``, ``d ≥ 0`` (proven once, then reused)."""
    v = sp.Symbol("v", nonnegative=True)
    u = 1 / (1 + v)  # γ^d ∈ (0, 1] for 0 < γ ≤ 1 and d ≥ 0
    check_identity(u - u**2, v / (1 + v) ** 2, "u − u² = v/(1+v)² for u = 1/(1+v)")
    check_sign(v / (1 + v) ** 2, "nonnegative", "γ^d − γ^{2d} ≥ 0 for 0 < γ ≤ 1")
    return "γ^d = 1/(1+v) with v ≥ 0 (a power of γ ≤ 1 is ≤ 1), so γ^d − γ^{2d} = v/(1+v)² ≥ 0"


def _node_rule(m: Mechanism) -> Outcome:
    """The class's own node variance, at symbolic scale, weight, ρ and Δ, gives each node
    the L2 cost 2ρ·(its per-node ε at ε = 1)·γ^{2d}."""
    w, b, s = sp.symbols("w b s", positive=True)
    d = sp.Symbol("d", integer=True, nonnegative=True)
    gamma = 1 / (1 + s)
    sigma2 = _symbolic(m).node_variance(b, w)  # the class's code, on symbols
    cost = (w * gamma**d * Delta) ** 2 / sigma2
    check_identity(cost, 2 * rho * (w * Delta / b) * gamma ** (2 * d), "(aΔ)²/σ² = 2ρ f γ^{2d}")
    return about_code(
        "(w γ^d Δ)²/σ² = 2ρ·(|w|Δ/b)·γ^{2d} ≤ 2ρ·(|w|Δ/b)·γ^d for the class's σ² = "
        "node_variance(b, w), every b, w > 0, ρ, Δ",
        evaluates=[type(m).node_variance],
        detail="node_variance evaluated with symbolic scale, weight, ρ and Δ (γ = 1/(1+s), "
        f"s ≥ 0); {_power_lemma()}",
    )


_SYMBOL_SETS: tuple[dict[str, Any], ...] = (
    {"horizon": T, "k": k},
    {"horizon": T, "k": k, "levels": L},
    {"levels": L},
    {},
)
"""Symbols tried, most symbolic first: a declaration that cannot take one (it needs an int
to enumerate levels, say) raises, and the next, less symbolic set is used.  Only the first
evaluates the class's own level count for every T; with ``levels`` the level count is a free
symbol, and with none the instance's own T is the only one."""


_SAMPLES = (1, 2, 5, 64, 2**20)
"""Horizons at which a declaration given a symbolic T is compared with the same declaration
at an integer T (a declaration that ignores a symbolic T is not about every T)."""


def _ignores_t(m: Mechanism, terms: list[BudgetTerm]) -> str:
    """Why the symbolic-T terms are not the class's terms at every T ('' when they agree at
    every sample of :data:`_SAMPLES`)."""
    members = sp.sympify(sum((SYMBOLIC.number(t.membership) for t in terms), sp.Integer(0)))
    for horizon in _SAMPLES:
        try:
            exact = sum(
                (Fraction(t.membership) for t in m.budget_terms(horizon=horizon)), Fraction(0)
            )
        except (TypeError, ValueError, DprefError):
            continue
        at = members.subs(T, horizon)
        if not at.free_symbols and sp.nsimplify(at) != SYMBOLIC.number(exact):
            return (
                f"budget_terms ignores a symbolic T (at T = {horizon} its memberships add to "
                f"{exact}, the symbolic ones to {at})"
            )
    return ""


def _declared_terms(m: Mechanism) -> tuple[list[BudgetTerm], dict[str, Any], str]:
    """The most symbolic declaration the class accepts, and why it is not about the code
    for every T ('' when it is: symbolic T, the class's own level count, agreeing with the
    integer declarations)."""
    fallback: tuple[list[BudgetTerm], dict[str, Any], str] | None = None
    for extra in _SYMBOL_SETS:
        symbols = {"epsilon": sp.Integer(1), "sensitivity": Delta, **extra}
        try:
            terms = m.budget_terms(SYMBOLIC, **symbols)
        except (TypeError, ValueError, AttributeError):
            continue
        if not terms:
            continue
        if "levels" in extra:
            why = "the level count L is a free symbol (the class's level function is not evaluated)"
        elif "horizon" not in extra:
            why = "budget_terms takes no symbolic T (the instance's T = 16 only)"
        else:
            why = _ignores_t(m, terms)
        if not why:
            return terms, extra, ""
        if fallback is None or ("levels" in extra and "levels" not in fallback[1]):
            fallback = (terms, extra, why)
    if fallback is None:
        raise ProofFailure(f"{m!r}: budget_terms gives no terms")
    return fallback


def _gaussian_budget(m: Mechanism) -> Outcome:
    assert m.rho is not None
    terms, extra, why = _declared_terms(m)
    proxy = _symbolic(m)
    l1 = sp.Integer(0)
    l2 = sp.Integer(0)
    for term in terms:
        weight = SYMBOLIC.number(term.weight)
        scale = SYMBOLIC.number(term.scale)
        members = SYMBOLIC.number(term.membership)
        sigma2 = proxy.node_variance(scale, weight)  # the class's own node variance
        l1 += members * Delta / scale
        l2 += (members / weight) * (weight * Delta) ** 2 / sigma2
    check_identity(
        l2, 2 * rho * l1, "the class's node_variance: Σ_k (m_k/w_k)(w_kΔ)²/σ_k² = 2ρ·Σ_k m_kΔ/b_k"
    )
    for term in m.budget_terms():  # the multiplier the draws use, at the instance's numbers
        variance = m.node_variance(Fraction(term.scale), Fraction(term.weight))
        if (
            Fraction(m.noise_multiplier(Fraction(term.scale), Fraction(term.weight))) ** 2
            < variance
        ):
            raise ProofFailure(f"{m!r}: noise_multiplier² < node_variance at scale {term.scale}")
    l1 = sp.simplify(l1)
    exact = sp.simplify(l1 - 1) == 0
    if not exact:
        check_sign(1 - l1, "nonnegative", "declared L1 budget at ε = 1 is ≤ 1")
    relation = "=" if exact and m.base == 1 else "≤"
    names = ", ".join(sorted(extra)) or "none: the instance's own T"
    detail = (
        "the class's node_variance on its declared terms: node_variance and budget_terms "
        f"evaluated with symbolic ρ, Δ, ε = 1 and {names}; "
        f"declared L1 budget at ε = 1 is {l1}"
    )
    if m.base != 1:
        detail += "; γ < 1: the true L2 weights γ^{2d} ≤ γ^d (node rule)"
    statement = f"L2 sum {relation} 2ρ"
    if not why:
        return about_code(
            statement,
            evaluates=[type(m).node_variance, type(m).budget_terms],
            detail=detail + "; noise_multiplier² ≥ node_variance at the instance",
            value="2ρ",
        )
    return lemma(statement + f" — not about the code for all T: {why}", detail, value="2ρ")


def zcdp_instances(cls: type[Any]) -> list[tuple[Example, Callable[[int], Mechanism]]]:
    """The class's zCDP examples (or its first example built with ρ), as builders of T."""
    chosen = [e for e in cls.examples if e.privacy == "zcdp"] or list(cls.examples[:1])
    out: list[tuple[Example, Callable[[int], Mechanism]]] = []
    for ex in chosen:

        def build(horizon: int, ex: Example = ex) -> Mechanism:
            kw = ex.kwargs(cls, horizon)
            kw.pop("noise", None)
            made: Mechanism = cls(rho=RHO, **kw)
            return made

        out.append((ex, build))
    return out


def _twin(m: Mechanism, cls: type[Any], ex: Example, horizon: int) -> Mechanism:
    kw = ex.kwargs(cls, horizon)
    kw.pop("noise", None)
    twin: Mechanism = cls(epsilon=m.design_epsilon, **kw)
    return twin


def _multipliers_up(m: Mechanism, horizon: int) -> None:
    """Every node's float multiplier (``noise_multipliers``, what the draws are scaled by)
    squared is at least the class's exact node variance (``node_variance``)."""
    nodes = m.nodes(horizon)
    mult = np.broadcast_to(
        np.asarray(m.noise_multipliers(horizon), dtype=np.float64), (nodes.size,)
    )
    weights = nodes.weight_idx if nodes.weight_idx is not None else np.zeros(nodes.size, np.int64)
    seen: dict[tuple[int, int, float], None] = {}
    for s_i, w_i, f in zip(nodes.scale_idx.tolist(), weights.tolist(), mult.tolist(), strict=True):
        seen.setdefault((s_i, w_i, f), None)
    for s_i, w_i, f in seen:
        weight = nodes.weight_table[w_i] if nodes.weight_table else Fraction(1)
        variance = m.node_variance(nodes.scale_table[s_i], weight)
        if Fraction(f) ** 2 < variance:
            raise ProofFailure(f"{m!r} T={horizon}: multiplier {f}² < node variance {variance}")


def _exhaustive(cls: type[Any], limit: int) -> Outcome:
    top = min(limit, EXHAUSTIVE_T)
    count = 0
    for ex, build in zcdp_instances(cls):
        built: dict[str, Mechanism] = {}
        # an optimised level budget runs a numerical optimiser per T: its plans to T ≤ 16
        optimised = ex.params.get("budget") in ("mean", "max")
        for horizon in range(1, (min(top, 16) if optimised else top) + 1):
            try:
                m = (
                    build(horizon)
                    if "horizon" in ex.kwargs(cls, 1)
                    else built.setdefault("m", build(horizon))
                )
            except DprefError as exc:
                raise ProofFailure(f"{cls.__name__} T={horizon}: {exc}") from None
            plan = m.plan(horizon)
            # the plan declares what the mechanism declares: ρ itself, or (SmoothBinary at
            # some T) the smaller ρ it really spends
            if (
                plan.noise_family != "gaussian"
                or m.rho != RHO
                or plan.declared_rho != (m.declared_rho)
            ):
                raise ProofFailure(f"{m!r}: the plan is not a Gaussian plan at ρ = {RHO}")
            if horizon <= MULTIPLIER_T or horizon == top:
                _multipliers_up(m, horizon)
            l2 = plan.privacy_sum()
            l1 = _twin(m, cls, ex, horizon).plan(horizon).privacy_sum()
            if l2 > 2 * RHO:
                raise ProofFailure(f"{m!r} T={horizon}: L2 sum {l2} > 2ρ")
            if (m.base == 1 and l2 != 2 * RHO * l1) or l2 > 2 * RHO * l1:
                raise ProofFailure(f"{m!r} T={horizon}: L2 sum {l2} vs 2ρ·L1 = {2 * RHO * l1}")
            count += 1
    return checked(
        "T",
        top,
        "plan L2 sum = 2ρ·(L1 sum at ε = 1) (γ = 1; ≤ for γ < 1) ≤ 2ρ; every node's "
        "noise_multiplier² ≥ its node_variance (T ≤ 16 and the largest T)",
        f"{count} exact Gaussian plans at ρ = {RHO}",
    )


def gaussian_claims(cls: type[Any], limit: int) -> list[ClaimResult]:
    """The Gaussian-budget claims of one mechanism class (see the module docstring)."""
    name = label(cls)
    instances = zcdp_instances(cls)
    if not instances:
        return [
            run_claim(name, "zCDP budget", lambda: _fail(f"{cls.__name__} declares no examples"))
        ]
    m = instances[0][1](16)
    return [
        run_claim(name, "zCDP node rule", lambda: _node_rule(m)),
        run_claim(name, "zCDP budget", lambda: _gaussian_budget(m)),
        run_claim(name, "zCDP budget = plans(T)", lambda: _exhaustive(cls, limit)),
    ]


def _fail(why: str) -> Outcome:
    raise ProofFailure(why)
