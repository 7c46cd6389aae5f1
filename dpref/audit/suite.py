"""``dpref verify`` suite: a quick audit of every built-in mechanism.

For each registered mechanism (at T = 4, ε = 1, its first declared example):

1. the exact privacy loss of its outputs (:func:`~dpref.audit.exact.exact_loss`)
   is at most the declared ε;
2. the sampled audit (2·10⁴ samples per side, confidence 0.999) proves no
   violation;
3. the mechanism conforms to itself (:func:`~dpref.audit.conform.conform`, T = 16,
   500 runs, false-alarm rate 10⁻⁴).

The statistical checks run at a fixed seed (``--seed``), so a row is reproducible;
their false-alarm rates are stated above.
"""

from __future__ import annotations

import time

from dpref.audit.conform import conform
from dpref.audit.exact import exact_loss
from dpref.audit.loss import audit
from dpref.errors import DprefError, ParameterError
from dpref.mechanisms import MECHANISMS, Mechanism
from dpref.verify import VerifyOptions, VerifyRow

__all__ = ["audit_suite"]

_AUDIT_T = 4
_CONFORM_T = 16


def _build(name: str, horizon: int) -> Mechanism:
    """The mechanism's first (default) example at ε = 1, held to the horizon T."""
    cls = MECHANISMS[name]
    if not cls.examples:
        raise ParameterError(f"mechanism={name!r}: declares no examples")
    return cls(epsilon=1, **{**cls.examples[0].kwargs(cls, horizon), "horizon": horizon})


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
