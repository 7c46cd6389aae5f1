"""Proof rows for (k, b)-participation of the Toeplitz factorizations (docs/factorization.md,
"Participation"; the code: :mod:`dpref.strategy.participation`,
:mod:`dpref.mechanisms.factorization.participation`).

Setting: neighbouring streams differ in at most k items, pairwise at least b apart, each by
at most Δ; P₁ and P₂ are the L1 sensitivity and the squared L2 sensitivity of the strategy C
under that relation; with ``participations=k, min_separation=b`` a factorization's Laplace
scale is ``P₁Δ/ε`` and its Gaussian variance ``P₂Δ²/(2ρ)``.

Theorem (hypothesis; sqrt about the code, BLT a lemma).  The coefficients are non-negative and
non-increasing.  sqrt: the code's ratio ``sqrt_ratio(k) = (2k−1)/(2k)`` lies in (0, 1) for
every k ≥ 1 (sympy, symbolic k) and ``c_0 = 1``.  BLT: for ``θ ∈ (0, 1)``, ``ω > 0`` (the
constructor's checks) each ``ω θ^{k−1}`` is positive and ``ωθ^k − ωθ^{k−1} = ωθ^{k−1}(θ−1) < 0``
(sympy), and ``c_1 = Σω_i ≤ 1 = c_0`` (the constructor's ``Σω ≤ 1``).  ∎

Theorem (earliest pattern; note).  For a lower-triangular Toeplitz C with non-negative,
non-increasing coefficients the pattern ``(0, b, …, (m−1)b)``, ``m = min(k, ⌈T/b⌉)``, attains
P₂ (and, with non-negativity alone, P₁).  Cited: Kalinin & Lampert 2024 (arXiv 2405.13763,
Theorem 2); the argument is written out in :mod:`dpref.strategy.participation` (``X = CᵀC ≥ 0``,
``X_ij = g(j−i, j)`` non-increasing in both arguments, termwise domination).  Not discharged
here: a note, backed by the exhaustive check below.

Check (calibration = enumeration; checked for T ≤ N).  For every T ≤ N, k ∈ {2, 3},
b ∈ {1, 2, 3, 5}, every example of the class: the Gaussian variance the mechanism releases
with is ``P₂/(2ρ)`` and its Laplace scale ``P₁/ε`` with P₂, P₁ the exact maximum over every
admissible pattern and sign vector of its own dense plan (``dense_participation(...,
method="exact")``), and the declared terms give exactly 2ρ and ε.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import sympy as sp

from dpref.mechanisms.factorization import sqrt as sqrt_module
from dpref.strategy import dense_from_toeplitz
from dpref.strategy.participation import dense_participation
from proofs.core import (
    ClaimResult,
    Outcome,
    ProofFailure,
    about_code,
    check_sign,
    checked,
    label,
    lemma,
    note,
    run_claim,
)

__all__ = ["PARTICIPATION_LIMIT", "participation_claims"]

PARTICIPATION_LIMIT = 10
"""T of the exhaustive participation check (each T enumerates every pattern and sign)."""
_k = sp.Symbol("k", integer=True, positive=True)


def _sqrt_hypothesis() -> Outcome:
    p, q = sqrt_module.sqrt_ratio(_k)
    check_sign(p, "positive", "numerator 2k−1 of sqrt_ratio(k), k ≥ 1")
    check_sign(q - p, "positive", "q − p of sqrt_ratio(k): c_k < c_{k−1}")
    return about_code(
        "0 < c_k < c_{k−1} for every k ≥ 1 (c_0 = 1): non-negative, non-increasing",
        evaluates=[sqrt_module.sqrt_ratio],
        detail="sqrt_ratio(k) = p/q at a symbolic integer k ≥ 1: p > 0 and q − p > 0",
    )


def _blt_hypothesis() -> Outcome:
    r = sp.Symbol("r", positive=True)  # θ = 1/(1 + r) ranges over (0, 1)
    omega = sp.Symbol("omega", positive=True)
    theta = 1 / (1 + r)
    term = omega * theta ** (_k - 1)
    check_sign(term, "positive", "ω θ^(k−1)")
    step = omega * theta**_k - term
    if sp.simplify(step + (1 - theta) * term) != 0:
        raise ProofFailure("ωθ^k − ωθ^(k−1) ≠ −(1−θ)ωθ^(k−1)")
    check_sign((1 - theta) * term, "positive", "(1−θ)ωθ^(k−1)")
    return lemma(
        "θ_i ∈ (0, 1), ω_i > 0, Σω_i ≤ 1 (the constructor's checks) ⇒ c_0 = 1 ≥ c_1 = Σω_i and "
        "c_k = Σ_i ω_i θ_i^(k−1) positive and decreasing for k ≥ 1",
        "each term ωθ^(k−1) > 0 and its step ωθ^k − ωθ^(k−1) = −(1−θ)ωθ^(k−1) < 0 (sympy)",
    )


def _earliest_pattern() -> Outcome:
    return note(
        "non-negative, non-increasing Toeplitz C ⇒ the pattern (0, b, …, (m−1)b) attains the "
        "(k, b)-participation sensitivity (L2; L1 with non-negativity alone)",
        "Kalinin & Lampert 2024, arXiv 2405.13763, Theorem 2 (jax_privacy's "
        "minsep_sensitivity_squared); proof in dpref.strategy.participation",
    )


def _calibration(cls: type[Any], limit: int) -> Outcome:
    top = min(limit, PARTICIPATION_LIMIT)
    cases = 0
    for ex in cls.examples:
        kw: dict[str, Any] = {k: v for k, v in ex.params.items() if not callable(v)}
        for horizon in range(1, top + 1):
            plain = cls(epsilon=1, horizon=horizon, **kw)
            dense = _dense(plain, horizon)
            for k in (2, 3):
                for b in (1, 2, 3, 5):
                    _one(cls, kw, horizon, k, b, dense)
                    cases += 1
    return checked(
        "T",
        top,
        "node variance = P₂Δ²/(2ρ) and Laplace scale = P₁Δ/ε with P₁, P₂ the enumerated "
        "maximum over every (k, b) pattern and sign vector; declared sums = ε and 2ρ",
        f"{cases} cases: every example, every T ≤ {top}, k ∈ {{2, 3}}, b ∈ {{1, 2, 3, 5}}",
    )


def _dense(m: Any, horizon: int) -> list[list[Fraction]]:
    """The class's own plan as a dense exact C (rows = nodes)."""
    return [list(row) for row in dense_from_toeplitz(m.plan(horizon)).strategy]


def _one(cls: type[Any], kw: dict[str, Any], T: int, k: int, b: int, dense: Any) -> None:
    rho, eps = Fraction(1, 2), Fraction(7, 10)
    gauss = cls(rho=rho, horizon=T, participations=k, min_separation=b, **kw)
    lap = cls(epsilon=eps, horizon=T, participations=k, min_separation=b, **kw)
    p2 = dense_participation(dense, participations=k, min_separation=b, norm="l2", method="exact")
    p1 = dense_participation(dense, participations=k, min_separation=b, norm="l1", method="exact")
    if gauss.node_scale() != p2.value / (2 * rho):
        raise ProofFailure(f"{gauss!r}: σ² = {gauss.node_scale()} ≠ P₂/(2ρ), P₂ = {p2.value}")
    if lap.node_scale() != p1.value / eps:
        raise ProofFailure(f"{lap!r}: b = {lap.node_scale()} ≠ P₁/ε, P₁ = {p1.value}")
    for m, want in ((gauss, 2 * rho), (lap, eps)):
        terms = m.gaussian_terms() if m is gauss else m.budget_terms()
        total = sum((t.membership / t.scale for t in terms), Fraction(0))
        total *= m.sensitivity**2 if m is gauss else m.sensitivity
        if total != want:
            raise ProofFailure(f"{m!r}: declared sum {total} ≠ {want}")


def participation_claims(cls: type[Any], limit: int) -> list[ClaimResult]:
    """The participation rows of SqrtFactorization or BLT."""
    name = label(cls)
    hypothesis = _sqrt_hypothesis if cls.__name__ == "SqrtFactorization" else _blt_hypothesis
    return [
        run_claim(name, "participation monotone", hypothesis),
        run_claim(name, "participation pattern", _earliest_pattern),
        run_claim(name, "participation calibrated", lambda: _calibration(cls, limit)),
    ]
