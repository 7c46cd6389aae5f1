"""Proofs for the Toeplitz factorization counters (``SqrtFactorization``, ``BLT``;
docs/factorization.md).

Setting: C and B lower-triangular Toeplitz (T × T) with coefficient sequences c and b;
row n of C is node n (items ``1..n``, weights ``c_{n−i}``), released at n; every node gets
``Lap(b)`` (ε-DP) or ``N(0, σ²)`` (ρ-zCDP).  The product of two lower-triangular Toeplitz
matrices is the lower-triangular Toeplitz matrix of the product of their generating
functions truncated at ``x^T``, so ``B·C = Q`` (prefix sums, ``q(x) = 1/(1−x)``) for every T
iff ``b(x)c(x) = 1/(1−x)`` as power series.

Theorem (square root).  ``c_k = binom(2k,k)/4^k`` are the coefficients of
``(1−x)^{−1/2}``, and ``((1−x)^{−1/2})² = 1/(1−x)``: ``C·C = Q`` for every T.
Proof.  ``c_0 = 1`` and ``c_k/c_{k−1} = (2k)(2k−1)/(4k²) = (2k−1)/(2k)``.  ``f = (1−x)^{−1/2}``
solves ``2(1−x)f' = f``; comparing the coefficients of ``x^k`` gives
``2(k+1)a_{k+1} − 2k a_k − a_k = 0``, i.e. ``a_{k+1}/a_k = (2k+1)/(2k+2)``, with ``a_0 = 1``:
the same sequence (induction on k).  The square of the function is ``1/(1−x)`` on
``|x| < 1``, and power-series coefficients are unique.  ∎  (sympy: the ratio, the
differential equation, the coefficient recurrence and the identity of the functions.)

Theorem (columns).  Column i of a lower-triangular Toeplitz C is ``(c_0, …, c_{T−i})``, a
prefix of column 1, so ``Σ_n |C_{n,i}|^p ≤ Σ_n |C_{n,1}|^p`` (p = 1, 2): the difference is
``Σ_{k=T−i+1}^{T−1} |c_k|^p``, a sum of non-negative terms.  This holds for any signs; in
particular for non-negative non-increasing coefficients (the condition the issue states for
BLT).  Hence the L1 and L2 sensitivities (single participation, event level: one item
changes by at most Δ) are ``S₁Δ`` and ``√S₂ Δ`` with ``S₁ = Σ_{k<T}|c_k|``, ``S₂ = Σ_{k<T} c_k²``.
∎  (sympy: the sign of a generic term; exact check of every column for T ≤ 64.)

Theorem (budget).  With ``b = S₁Δ/ε`` the L1 privacy sum is ``S₁Δ/b = ε`` (Laplace
mechanism on the node vector); with ``σ² = S₂Δ²/(2ρ)`` the L2 sum is ``S₂Δ²/σ² = 2ρ``, and
the Gaussian mechanism with L2 sensitivity s and variance σ² is ``s²/(2σ²)``-zCDP (Bun,
Steinke 2016, Prop. 1.6): ρ.  Where S₁ or S₂ is replaced by a rigorous upper bound (T above
``SQRT_EXACT_S1``/``SQRT_EXACT_S2``, ``BLT_EXACT_BITS``) the sums are at most ε and 2ρ.  ∎
(sympy, reading the classes' own ``budget_terms``.)

Theorem (square-root bounds).  ``S₁(T) = (2T−1)c_{T−1}``, and ``c_k² < 1/(π(k + 1/4))``
for every k ≥ 0.
Proof.  ``(2n+3)c_{n+1} − (2n+1)c_n = c_{n+1}`` (with ``c_{n+1} = c_n(2n+1)/(2n+2)``), and
``S₁(1) = 1 = 1·c_0``: induction.  For the bound, ``a_k = c_k²(k+1/4)`` has
``a_{k+1}/a_k = (2k+1)²(4k+5)/((2k+2)²(4k+1))`` and ``(2k+1)²(4k+5) − (2k+2)²(4k+1) = 1 > 0``,
so ``a_k`` increases strictly, to its limit ``1/π`` (Wallis: ``c_k√(πk) → 1``).  ∎  (sympy:
both identities.)  These give the rigorous upper bounds used at large T.

Theorem (BLT).  For ``0 < θ_i < 1``, ``ω_i > 0`` and ``Σ ω_i ≤ 1``, ``c_0 = 1``,
``c_k = Σ_i ω_i θ_i^{k−1}`` is positive and non-increasing; ``c(x) = P(x)/D(x)`` with
``D = Π(1 − θ_i x)`` and ``P`` as :func:`~dpref.mechanisms.factorization.blt_polynomials`
builds it; the decoder ``b(x) = D(x)/((1−x)P(x))`` gives ``b(x)c(x) = 1/(1−x)``.
Proof.  ``c_k − c_{k+1} = Σ_i ω_i θ_i^{k−1}(1 − θ_i) > 0`` for k ≥ 1 and
``c_0 − c_1 = 1 − Σω_i ≥ 0``; ``Σ_k θ^{k−1}x^k = x/(1−θx)``; the rest is algebra.  ∎
(sympy: the sign of each term, and ``P − D·c = 0`` for symbolic θ, ω with 1, 2 and 3
buffers, using the module's own polynomial builder.)

The plans are checked exactly for every T ≤ 64 (Laplace and Gaussian), and at T = ``limit``
(4096 by default, Laplace): SqrtFactorization by the Kronecker-substitution convolution, the
BLT examples in full, the shipped BLT preset (Gaussian; its decoder denominators grow too fast for
per-step Fractions) for ``B·C = Q`` (polynomial identity plus the coefficients checked
against the generating function) and the privacy sum — evidence, labelled as such.

References
----------
.. [1] H. Fichtenberger, M. Henzinger, J. Upadhyay. "Constant Matters: Fine-grained Error
   Bound on Differentially Private Continual Observation." ICML 2023.
.. [2] K. Dvijotham, H. B. McMahan, K. Pillutla, T. Steinke, A. Thakurta. "Efficient and
   Near-Optimal Noise Generation for Streaming Differential Privacy." FOCS 2024.
.. [3] M. Bun, T. Steinke. "Concentrated Differential Privacy: Simplifications, Extensions,
   and Lower Bounds." TCC 2016.
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction
from functools import partial
from typing import Any

import sympy as sp

from dpref.mechanisms import BLT, SqrtFactorization
from dpref.mechanisms.factorization import blt_polynomials
from dpref.strategy import dense_from_toeplitz
from proofs.core import (
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

OWN_GAUSSIAN_PROOF = True
"""The Gaussian budget is proven here (``_budget``: L2 sum S₂Δ²/σ² = 2ρ), not by
:mod:`proofs.zcdp`, whose node rule σ² = |w|Δb/(2ρ) is that of the interval plans: every
node of a Toeplitz factorization has the same variance S₂Δ²/(2ρ)."""

SMALL = 64
"""Every T up to this is checked exactly, both noises."""

_k = sp.Symbol("k", integer=True, positive=True)
_x = sp.Symbol("x", real=True)
_c = sp.Symbol("c", positive=True)
_rho = sp.Symbol("ρ", positive=True)
_S1 = sp.Symbol("S₁", positive=True)
_S2 = sp.Symbol("S₂", positive=True)


def _square_root() -> Outcome:
    ratio = sp.combsimp(
        sp.binomial(2 * _k, _k) / 4**_k / (sp.binomial(2 * _k - 2, _k - 1) / 4 ** (_k - 1))
    )
    check_identity(ratio, (2 * _k - 1) / (2 * _k), "c_k/c_{k−1}")
    f = (1 - _x) ** sp.Rational(-1, 2)
    check_identity(2 * (1 - _x) * sp.diff(f, _x), f, "2(1−x)f' = f")
    # x^k coefficient of 2(1−x)f' − f for f = Σ a_k x^k: 2(k+1)a_{k+1} − 2k a_k − a_k = 0
    kk = sp.Symbol("k", integer=True, nonnegative=True)
    a_next = _c * (2 * kk + 1) / (2 * kk + 2)
    check_identity(2 * (kk + 1) * a_next - 2 * kk * _c - _c, 0, "coefficient recurrence")
    check_identity(f * f, 1 / (1 - _x), "((1−x)^{−1/2})²")
    return lemma(
        "c(x)² = 1/(1−x) for c_k = binom(2k,k)/4^k, so C·C = Q for every T",
        "(1−x)^{−1/2} solves 2(1−x)f' = f with f(0) = 1, whose power-series coefficients obey "
        "a_{k+1} = a_k(2k+1)/(2k+2): the ratio of binom(2k,k)/4^k; uniqueness of coefficients",
    )


def _columns() -> Outcome:
    ck = sp.Symbol("c_k", real=True)
    check_sign(sp.Abs(ck), "nonnegative", "|c_k|")
    check_sign(ck**2, "nonnegative", "c_k²")
    for T in range(1, SMALL + 1):
        plan = dense_from_toeplitz(SqrtFactorization(epsilon=1, horizon=T).plan(T))
        for squares in (False, True):
            sums = plan.column_sums(squares)
            if max(sums) != sums[0]:
                raise ProofFailure(f"T={T}: a column beats column 1 ({'L2' if squares else 'L1'})")
    return lemma(
        "max_i Σ_n |C_ni|^p = Σ_{k<T} |c_k|^p (p = 1, 2) for lower-triangular Toeplitz C",
        "column i is a prefix of column 1; the rest of column 1 is a sum of non-negative terms "
        f"(also checked exactly on every column for T ≤ {SMALL})",
    )


def _budget(m: Any) -> Outcome:
    total = m.declared_budget(column_l1=_S1, epsilon=eps, sensitivity=Delta)
    check_identity(total, eps, "S₁·Δ/(S₁Δ/ε)")
    sigma2 = _S2 * Delta**2 / (2 * _rho)
    check_identity(_S2 * Delta**2 / sigma2, 2 * _rho, "L2 sum S₂Δ²/σ²")
    check_identity((sp.sqrt(_S2) * Delta) ** 2 / (2 * sigma2), _rho, "zCDP of the Gaussian")
    return lemma(
        "b = S₁Δ/ε ⇒ L1 sum = ε; σ² = S₂Δ²/(2ρ) ⇒ L2 sum = 2ρ (ρ-zCDP)",
        "Laplace mechanism; Gaussian mechanism is s²/(2σ²)-zCDP (Bun–Steinke 2016)",
        "ε / 2ρ",
    )


def _sqrt_bounds() -> Outcome:
    n = sp.Symbol("n", integer=True, nonnegative=True)
    c_next = _c * (2 * n + 1) / (2 * n + 2)
    check_identity((2 * n + 3) * c_next - (2 * n + 1) * _c, c_next, "S₁ step")
    kk = sp.Symbol("k", integer=True, nonnegative=True)
    diff = sp.expand((2 * kk + 1) ** 2 * (4 * kk + 5) - (2 * kk + 2) ** 2 * (4 * kk + 1))
    check_identity(diff, 1, "(2k+1)²(4k+5) − (2k+2)²(4k+1)")
    check_sign(diff, "positive", "a_{k+1} > a_k")
    return lemma(
        "S₁(T) = (2T−1)c_{T−1};  c_k² < 1/(π(k+1/4))",
        "induction; c_k²(k+1/4) strictly increases to 1/π (Wallis)",
    )


def _blt_validity() -> Outcome:
    u = sp.Symbol("u", positive=True)  # θ = u/(1+u) ranges over (0, 1)
    om = sp.Symbol("ω", positive=True)
    theta = u / (1 + u)
    check_sign(om * theta ** (_k - 1) * (1 - theta), "positive", "ω θ^{k−1}(1−θ), 0 < θ < 1")
    for d in (1, 2, 3):
        thetas = sp.symbols(f"t1:{d + 1}", positive=True)
        omegas = sp.symbols(f"w1:{d + 1}", positive=True)
        P, D = blt_polynomials(thetas, omegas)
        p_x = sum(sp.sympify(v) * _x**j for j, v in enumerate(P))
        d_x = sum(sp.sympify(v) * _x**j for j, v in enumerate(D))
        c_x = 1 + sum(w * _x / (1 - t * _x) for t, w in zip(thetas, omegas, strict=True))
        check_identity(p_x, d_x * c_x, f"P = D·c with {d} buffers")
        check_identity((d_x / ((1 - _x) * p_x)) * (p_x / d_x), 1 / (1 - _x), "b(x)c(x) = 1/(1−x)")
    return lemma(
        "0<θ_i<1, ω_i>0, Σω_i≤1 ⇒ c positive non-increasing; c = P/D; b(x)c(x) = 1/(1−x)",
        "c_k − c_{k+1} = Σ ω_i θ_i^{k−1}(1−θ_i) > 0; P = D·c checked symbolically for 1–3 buffers",
    )


def _plan_check(m: Any, horizon: int, variance: bool = True) -> str | None:
    report = m.plan(horizon).check(m.variance_exact(horizon) if variance else None)
    if not report.passed:
        return f"{m!r}: {report}"
    expected = m.expected_privacy_sum(horizon)
    if expected is not None and report.privacy_sum != expected:
        return f"{m!r}: privacy sum {report.privacy_sum} ≠ {expected}"
    return None


def _build(cls: type[Any], kwargs: dict[str, Any], horizon: int) -> Any:
    return cls(horizon=horizon, **kwargs)


def _exhaustive(cls: type[Any], limit: int) -> Outcome:
    small = min(SMALL, limit)
    builders: list[Callable[[int], Any]] = []
    for ex in cls.examples:
        kw: dict[str, Any] = dict(ex.params)
        builders.append(partial(_build, cls, {"epsilon": Fraction(7, 10), **kw}))
        builders.append(partial(_build, cls, {"rho": Fraction(1, 2), **kw}))
    for T in range(1, small + 1):
        for build in builders:
            bad = _plan_check(build(T), T)
            if bad:
                raise ProofFailure(bad)
    extra = ""
    if limit > small:
        for build in builders[::2]:  # Laplace (the Gaussian plans differ only in the scale)
            bad = _plan_check(build(limit), limit)
            if bad:
                raise ProofFailure(bad)
        if cls is BLT:
            for m in (BLT(rho=Fraction(1, 2), horizon=limit),):
                bad = _plan_check(m, limit, variance=False)
                if bad:
                    raise ProofFailure(bad)
            extra = "; the shipped preset: B·C = Q and privacy sum (no per-step variance)"
        extra = f"; every example at T = {limit} (Laplace){extra}"
    return checked(
        "T",
        small,
        "B·C = Q, causal, privacy sum = ε or 2ρ, variance = v·Σ_{k<t} b_k²",
        f"every T ≤ {small}, Laplace and Gaussian{extra}",
    )


def _prove_sqrt(cls: type[Any], limit: int) -> list[ClaimResult]:
    """Prove the SqrtFactorization theorems (see the module docstring)."""
    name = label(cls)
    m = cls(epsilon=1, horizon=16)
    return [
        run_claim(name, "square root", _square_root),
        run_claim(name, "columns", _columns),
        run_claim(name, "budget", lambda: _budget(m)),
        run_claim(name, "bounds at large T", _sqrt_bounds),
        run_claim(name, "plan = closed forms", lambda: _exhaustive(cls, limit)),
    ]


def _prove_blt(cls: type[Any], limit: int) -> list[ClaimResult]:
    """Prove the BLT theorems (see the module docstring)."""
    name = label(cls)
    m = cls(epsilon=1, horizon=16)
    return [
        run_claim(name, "valid strategy", _blt_validity),
        run_claim(name, "columns", _columns),
        run_claim(name, "budget", lambda: _budget(m)),
        run_claim(name, "plan = closed forms", lambda: _exhaustive(cls, limit)),
    ]


PROOFS: dict[str, Callable[[type[Any], int], list[ClaimResult]]] = {
    "SqrtFactorization": _prove_sqrt,
    "BLT": _prove_blt,
}
"""Class name → proof function ``(cls, limit) -> list[ClaimResult]`` (see proofs.registry)."""
