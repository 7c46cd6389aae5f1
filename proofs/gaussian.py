"""Proofs for Gaussian node noise: exact μ-GDP, ρ-zCDP, composition and the δ(ε) curve
(docs/spec.md §6; the accounting class :class:`dpref.accounting.GaussianDP`).

Setting: a linear plan releases ``y = A x + z`` with independent ``z_n ~ N(0, σ_n²)`` and
then any function of y (the decoder R: post-processing).  Neighbouring streams differ in
one item i by at most Δ (the domain's neighbour relation), so the node means differ by
``v = A(x − x′)``, ``v_n = a_{n,i}(x_i − x′_i)``, ``|v_n| ≤ |a_{n,i}|Δ``.

Theorem (a: the privacy loss is Gaussian).  For one coordinate,
``ln p(y)/p′(y) = (m − m′)(y − (m + m′)/2)/σ²`` (the quadratic terms cancel).  Summing over
independent coordinates, under P (``y_n = m_n + σ_n Z_n``) the loss is
``L = Σ_n (v_n/σ_n) Z_n + M/2`` with ``M = Σ_n v_n²/σ_n²``: ``L ~ N(M/2, M)`` — the loss of one
Gaussian shift by ``μ = √M`` standard deviations.  So the node release (and, by
post-processing, every output sequence) is exactly ``√M``-GDP for this pair, and
``M ≤ Δ² Σ_n a_{n,i}²/σ_n² ≤ 2ρ`` when the plan's L2 privacy sum is at most 2ρ: the
mechanism is μ-GDP with ``μ² = 2ρ`` (GDP is monotone in μ: Dong, Roth, Su 2019, §2.2).
Proof: sympy simplifies the log-ratio of two normal densities to the linear form, and
sympy.stats gives the mean M/2 and variance M of the loss for two coordinates; for n
coordinates the same computation is a sum of independent normals (stated reduction).  ∎

Theorem (b: Rényi divergence).  ``D_α(P‖Q) = (1/(α−1)) ln E_P[e^{(α−1)L}] = αM/2``
(the normal moment generating function): for one node ``α s²/(2σ²)``, i.e. the Gaussian
mechanism is ``s²/(2σ²)``-zCDP.  Proof: sympy.stats computes
``E[exp((α−1)(μZ + μ²/2))] = exp(α(α−1)μ²/2)``.  ∎

Theorem (c: composition).  Independent node releases multiply densities, so
``E_P[e^{(α−1)(L_1+L_2)}]`` factorises and Rényi divergences (hence zCDP ρ's) add:
``D_α = α(μ_1² + μ_2²)/2``.  So a plan whose L2 sum ``max_i Σ_n a_{n,i}²Δ²/σ_n²`` is at most
``2ρ`` is ρ-zCDP (Bun, Steinke 2016, Lemma 2.3).  Proof: sympy.stats with two independent
normals; n nodes by induction (stated reduction).  ∎

Theorem (d: the δ(ε) curve).  For P, Q with loss L = ln(p/q), the smallest δ with
``P(S) ≤ e^ε Q(S) + δ`` for all S is attained at ``S = {L > ε}`` (Neyman–Pearson), so
``δ(ε) = P_P[L > ε] − e^ε P_Q[L > ε]``.  Under Q, ``L ~ N(−μ²/2, μ²)``; hence
``δ(ε) = Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2)`` (Balle, Wang 2018, Thm 8).  Proof: sympy.stats
gives both probabilities in closed form and they simplify to the Φ expressions.  ∎
Numeric companion: at 50 digits, ``∫ (p(y) − e^ε q(y))₊ dy`` (mpmath quadrature, split at
the crossing point) lies in :meth:`GaussianDP.delta_bounds` for a grid of (μ², ε) —
checked, labelled as such.

References
----------
.. [1] J. Dong, A. Roth, W. J. Su. "Gaussian Differential Privacy." 2019
   (arXiv 1905.02383), Corollary 2.13.
.. [2] B. Balle, Y.-X. Wang. "Improving the Gaussian Mechanism for Differential Privacy."
   ICML 2018, Theorem 8.
.. [3] M. Bun, T. Steinke. "Concentrated Differential Privacy." TCC 2016, Lemma 2.3 and
   Proposition 1.6.
.. [4] C. Canonne, G. Kamath, T. Steinke. "The Discrete Gaussian for Differential
   Privacy." NeurIPS 2020 (the discrete Gaussian is ρ-zCDP but not exactly GDP).
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction
from typing import Any

import sympy as sp

from proofs.core import (
    ClaimResult,
    Outcome,
    ProofFailure,
    check_identity,
    checked,
    lemma,
    run_claim,
)

__all__ = ["PROOFS", "SUBJECTS"]

SUBJECTS = ("GaussianDP",)
"""The classes proven here (not mechanisms)."""

_y = sp.Symbol("y", real=True)
_m1 = sp.Symbol("m", real=True)
_m2 = sp.Symbol("m′", real=True)
_sigma = sp.Symbol("σ", positive=True)
_mu = sp.Symbol("μ", positive=True)
_mu1 = sp.Symbol("μ_1", positive=True)
_mu2 = sp.Symbol("μ_2", positive=True)
_eps = sp.Symbol("ε", nonnegative=True)
_alpha = sp.Symbol("α", positive=True)


def _phi(x: Any) -> Any:
    """The standard normal CDF Φ."""
    return (1 + sp.erf(x / sp.sqrt(2))) / 2


def _pdf(y: Any, m: Any) -> Any:
    return sp.exp(-((y - m) ** 2) / (2 * _sigma**2)) / sp.sqrt(2 * sp.pi * _sigma**2)


def _loss() -> Outcome:
    from sympy.stats import E, Normal, variance

    ratio = sp.expand_log(sp.log(_pdf(_y, _m1)) - sp.log(_pdf(_y, _m2)), force=True)
    check_identity(ratio, (_m1 - _m2) * (_y - (_m1 + _m2) / 2) / _sigma**2, "ln p/p′")
    # two independent coordinates with shifts of μ_1, μ_2 standard deviations
    z1, z2 = Normal("Z_1", 0, 1), Normal("Z_2", 0, 1)
    loss = _mu1 * z1 + _mu2 * z2 + (_mu1**2 + _mu2**2) / 2
    check_identity(E(loss), (_mu1**2 + _mu2**2) / 2, "E_P[L]")
    check_identity(variance(loss), _mu1**2 + _mu2**2, "Var_P[L]")
    return lemma(
        "L ~ N(M/2, M), M = Σ_n v_n²/σ_n² ≤ 2ρ: exactly √M-GDP",
        "log-ratio of normal densities is linear in y; mean and variance by sympy.stats "
        "(two coordinates; n by the same sum of independent normals)",
        "μ² = 2ρ",
    )


def _renyi() -> Outcome:
    from sympy.stats import E, Normal

    z = Normal("Z", 0, 1)
    mgf = E(sp.exp((_alpha - 1) * (_mu * z + _mu**2 / 2)))
    check_identity(mgf, sp.exp(_alpha * (_alpha - 1) * _mu**2 / 2), "E_P[e^{(α−1)L}]")
    divergence = sp.expand_log(sp.log(sp.exp(_alpha * (_alpha - 1) * _mu**2 / 2)), force=True)
    check_identity(divergence / (_alpha - 1), _alpha * _mu**2 / 2, "D_α")
    return lemma(
        "D_α(N(0,σ²) ‖ N(s,σ²)) = α s²/(2σ²): ρ = s²/(2σ²)",
        "normal moment generating function (sympy.stats), μ = s/σ",
        "ρ = s²/(2σ²)",
    )


def _composition() -> Outcome:
    from sympy.stats import E, Normal

    # independent releases: E[e^{t(L_1+L_2)}] = E[e^{tL_1}]·E[e^{tL_2}] (product of independent
    # expectations; sympy.stats's joint integral of the same takes minutes)
    factors = [
        E(sp.exp((_alpha - 1) * (mu * Normal(f"Z_{n}", 0, 1) + mu**2 / 2)))
        for n, mu in ((1, _mu1), (2, _mu2))
    ]
    want = sp.exp(_alpha * (_alpha - 1) * (_mu1**2 + _mu2**2) / 2)
    check_identity(factors[0] * factors[1], want, "E_P[e^{(α−1)L_1}]·E_P[e^{(α−1)L_2}]")
    return lemma(
        "ρ-zCDP composes additively: D_α = α(μ_1² + μ_2²)/2; a plan with L2 sum ≤ 2ρ is ρ-zCDP",
        "independent releases: the moment generating function of the summed loss factorises "
        "into the per-node ones (sympy.stats for each; n nodes by induction)",
    )


def _delta_curve() -> Outcome:
    from sympy.stats import Normal, P

    z = Normal("Z", 0, 1)
    under_p = P(_mu * z + _mu**2 / 2 > _eps)
    under_q = P(_mu * z - _mu**2 / 2 > _eps)
    check_identity(under_p, _phi(-_eps / _mu + _mu / 2), "P_P[L > ε]")
    check_identity(under_q, _phi(-_eps / _mu - _mu / 2), "P_Q[L > ε]")
    return lemma(
        "δ(ε) = P_P[L > ε] − e^ε P_Q[L > ε] = Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2)",
        "Neyman–Pearson: the worst event is {L > ε}; L ~ N(±μ²/2, μ²) under P, Q (sympy.stats)",
    )


def _numeric(cls: type[Any]) -> Outcome:
    import mpmath  # type: ignore[import-untyped]

    ctx = mpmath.MPContext()
    ctx.dps = 50
    count = 0
    for mu2 in (Fraction(1, 16), Fraction(1), Fraction(2), Fraction(9)):
        acc = cls(mu2)
        mu = ctx.sqrt(ctx.mpf(mu2.numerator) / mu2.denominator)
        for eps in (Fraction(0), Fraction(1, 2), Fraction(2), Fraction(6)):
            e = ctx.mpf(eps.numerator) / eps.denominator
            # p = N(μ, 1), q = N(0, 1): p > e^ε q iff y > ε/μ + μ/2 =: y0
            y0 = e / mu + mu / 2

            def gap(y: Any, e: Any = e, mu: Any = mu) -> Any:
                return ctx.npdf(y, mu, 1) - ctx.exp(e) * ctx.npdf(y, 0, 1)

            value = ctx.quad(gap, [y0, y0 + 10, y0 + 40, ctx.inf])
            lo, hi = acc.delta_bounds(eps)
            tol = ctx.mpf(10) ** -40
            if not (
                ctx.mpf(lo.numerator) / lo.denominator - tol
                <= value
                <= ctx.mpf(hi.numerator) / hi.denominator + tol
            ):
                raise ProofFailure(f"mu2={mu2}, eps={eps}: ∫(p − e^ε q)₊ = {value} ∉ [{lo}, {hi}]")
            count += 1
    return checked(
        "grid",
        count,
        "∫(p − e^ε q)₊ (50-digit quadrature) lies in GaussianDP.delta_bounds(ε)",
        "μ² ∈ {1/16, 1, 2, 9}, ε ∈ {0, 1/2, 2, 6}; tolerance 1e−40",
    )


def _prove(cls: type[Any], limit: int) -> list[ClaimResult]:
    """Prove the Gaussian lemma (see the module docstring); ``limit`` is not used."""
    del limit
    name = cls.__name__
    return [
        run_claim(name, "privacy loss is Gaussian", _loss),
        run_claim(name, "Rényi divergence", _renyi),
        run_claim(name, "composition", _composition),
        run_claim(name, "delta curve", _delta_curve),
        run_claim(name, "delta curve (numeric)", lambda: _numeric(cls)),
    ]


PROOFS: dict[str, Callable[[type[Any], int], list[ClaimResult]]] = {"GaussianDP": _prove}
"""Class name → proof function (see proofs.registry)."""
