"""``dpref verify`` suites: a quick audit of every built-in mechanism, Laplace and Gaussian.

``audit`` — for each registered mechanism (at T = 4, ε = 1, its first declared example):

1. the exact privacy loss of its outputs (:func:`~dpref.audit.pure.exact.exact_loss`)
   is at most the declared ε;
2. the sampled audit (2·10⁴ samples per side, confidence 0.999) proves no
   violation;
3. the mechanism conforms to itself (:func:`~dpref.audit.conformance.conform.conform`, T = 16,
   500 runs, false-alarm rate 10⁻⁴).

``audit-gaussian`` — the same three checks in the approximate-DP view, for the same
example built with ``rho=1/2`` (Gaussian noise, μ = 1):

1. the exact μ² of its release (:func:`~dpref.audit.injected.structural.exact_audit` through
   :func:`~dpref.audit.injected.structural.mechanism_target`, exact rationals) is at most the
   declared 2ρ (up to the float rounding of its σ, the ``holds-within-rounding`` outcome);
2. the sampled μ-GDP audit (2·10⁴ samples per side, confidence 0.999) proves no violation;
3. the mechanism conforms to itself as a Gaussian reference (T = 16, 500 runs, 10⁻⁴).

The statistical checks run at a fixed seed (``--seed``), so a row is reproducible;
their false-alarm rates are stated above.
"""

from __future__ import annotations

import time
from fractions import Fraction
from typing import Any

from dpref.audit.conformance.conform import conform
from dpref.audit.injected.structural import exact_audit
from dpref.audit.pure.exact import exact_loss
from dpref.audit.pure.loss import audit
from dpref.errors import DprefError, ParameterError
from dpref.mechanisms import MECHANISMS, Mechanism
from dpref.verify import VerifyOptions, VerifyRow, by_mechanism, splittable

__all__ = ["audit_suite", "gaussian_audit_suite"]

_AUDIT_T = 4
_CONFORM_T = 16
_GAUSSIAN_RHO = Fraction(1, 2)
"""The ρ of the Gaussian rows (μ = 1)."""
_SAFE_OUTCOMES = ("holds-exactly", "holds-within-rounding", "over-noised")
"""Exact-audit outcomes that mean the declared budget holds."""


def _build(name: str, horizon: int, **budget: Any) -> Mechanism:
    """The mechanism's first (default) example at ε = 1 (or the given budget), held to T."""
    cls = MECHANISMS[name]
    if not cls.examples:
        raise ParameterError(f"mechanism={name!r}: declares no examples")
    budget = budget or {"epsilon": 1}
    return cls(**budget, **{**cls.examples[0].kwargs(cls, horizon), "horizon": horizon})


@splittable(by_mechanism)
def audit_suite(opts: VerifyOptions) -> list[VerifyRow]:
    """Exact loss ≤ ε, no proven violation, self-conformance, per mechanism."""
    return [_audit_row(name, opts.seed) for name in opts.mechanisms or tuple(MECHANISMS)]


def _audit_row(name: str, seed: int) -> VerifyRow:
    """The three checks of one mechanism; one that cannot be built is a failed row."""
    start = time.perf_counter()
    try:
        m4 = _build(name, _AUDIT_T)
        m16 = _build(name, _CONFORM_T)
    except DprefError as exc:
        return VerifyRow("audit", name, 1, 1, detail=f"cannot build its first example ({exc})")
    problems: list[str] = []
    exact = exact_loss(m4, _AUDIT_T)
    if exact.epsilon is None or exact.epsilon > m4.declared_epsilon:
        problems.append(f"exact loss {exact.as_float():.4g} > declared {m4.declared_epsilon}")
    report = audit(m4, horizon=_AUDIT_T, samples=20_000, confidence=0.999, seed=seed)
    if not report.ok:
        problems.append(f"audit: ε ≥ {report.epsilon_lower_bound} proven")
    conf = conform(m16, m16, horizon=_CONFORM_T, runs=500, alpha=1e-4, seed=seed)
    if not conf.conforms:
        bad = [c.name for c in conf.checks if c.passed is False]
        problems.append(f"does not conform to itself: {', '.join(bad)}")
    lb = report.epsilon_lower_bound
    return VerifyRow(
        "audit",
        name,
        3,
        len(problems),
        declared_epsilon=str(m4.declared_epsilon),
        proven_sum=str(exact.epsilon) if exact.epsilon is not None else "inf",
        seconds=time.perf_counter() - start,
        detail="; ".join(problems)
        or (
            f"exact loss {exact.epsilon} ({exact.scope}), sampled ε ≥ "
            f"{lb if lb is None else round(lb, 3)}, conforms to itself"
        ),
        extra={
            "exact_loss": None if exact.epsilon is None else str(exact.epsilon),
            "epsilon_lower_bound": lb,
            "conforms": conf.conforms,
        },
    )


@splittable(by_mechanism)
def gaussian_audit_suite(opts: VerifyOptions) -> list[VerifyRow]:
    """Exact μ² ≤ 2ρ, no proven μ-GDP violation, self-conformance, per mechanism (ρ = 1/2)."""
    return [_gaussian_row(name, opts.seed) for name in opts.mechanisms or tuple(MECHANISMS)]


def _gaussian_row(name: str, seed: int) -> VerifyRow:
    """The three approximate-DP checks of one mechanism built with ``rho=1/2``."""
    start = time.perf_counter()
    try:
        m4 = _build(name, _AUDIT_T, rho=_GAUSSIAN_RHO)
        m16 = _build(name, _CONFORM_T, rho=_GAUSSIAN_RHO)
    except DprefError as exc:
        return VerifyRow(
            "audit-gaussian", name, 1, 1, detail=f"cannot build its first example ({exc})"
        )
    problems: list[str] = []
    rho = m4.declared_rho
    exact = exact_audit(m4, _AUDIT_T, rho=rho, seed=seed)
    if exact.outcome not in _SAFE_OUTCOMES:
        problems.append(f"exact audit: {exact.reason}")
    report = audit(m4, horizon=_AUDIT_T, samples=20_000, confidence=0.999, seed=seed)
    if not report.ok:
        problems.append(f"audit: μ ≥ {report.mu_lower_bound} proven ({report.verdict})")
    conf = conform(m16, m16, horizon=_CONFORM_T, runs=500, alpha=1e-4, seed=seed)
    if not conf.conforms:
        bad = [c.name for c in conf.checks if c.passed is False]
        problems.append(f"does not conform to itself: {', '.join(bad) or conf.verdict}")
    mu2 = exact.mu_squared_stated
    lb = report.mu_lower_bound
    return VerifyRow(
        "audit-gaussian",
        name,
        3,
        len(problems),
        declared_epsilon=f"rho={rho}",
        proven_sum=f"mu^2={mu2}" if mu2 is not None else "mu^2=inf",
        seconds=time.perf_counter() - start,
        detail="; ".join(problems)
        or (
            f"exact μ² {mu2} ≤ 2ρ = {2 * rho} ({exact.outcome}), sampled μ ≥ "
            f"{lb if lb is None else round(lb, 3)}, conforms to itself"
        ),
        extra={
            "declared_rho": str(rho),
            "exact_mu_squared": None if exact.mu_squared is None else str(exact.mu_squared),
            "exact_outcome": exact.outcome,
            "mu_lower_bound": lb,
            "conforms": conf.conforms,
        },
    )
