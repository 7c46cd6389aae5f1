"""``dpref verify``: the main job — every check dpref knows, in one table.

Suites (each returns :class:`VerifyRow` s):

* ``plans``: every mechanism's plan passes its exact checks (unbiased, causal,
  privacy sum = declared ε or the exact expected sum, closed-form variance) for
  T = 1..``max_exhaustive`` and for random larger T;
* ``agreement``: the batch path, the explicit plan and the online counter give the
  same outputs on the same injected node noise, and online and batch agree on a seed.

Later subsystems add suites to :data:`SUITES` (proofs run first).
"""

from __future__ import annotations

import functools
import importlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np

from dpref.mechanisms import Mechanism
from dpref.registry import build_mechanism, mechanism_names
from dpref.validation import check_int_range

__all__ = ["SUITES", "VerifyOptions", "VerifyRow", "run_verify"]


@dataclass(frozen=True)
class VerifyOptions:
    """Knobs of a verify run."""

    max_exhaustive: int = 256
    """Check every T from 1 to this."""
    random_horizons: int = 4
    """How many random larger T to check per mechanism."""
    random_max: int = 2048
    """Largest random T."""
    seed: int = 20261122
    """Seed for the random choices (reproducible)."""
    mechanisms: tuple[str, ...] = ()
    """Restrict to these mechanism names (empty: all)."""

    def __post_init__(self) -> None:
        check_int_range("max_horizon", self.max_exhaustive, 1, None)
        check_int_range("random_horizons", self.random_horizons, 0, None)
        check_int_range("random_max", self.random_max, 1, None)
        check_int_range("seed", self.seed, 0, None)


@dataclass
class VerifyRow:
    """One line of the verify table."""

    suite: str
    """Which suite produced it."""
    mechanism: str
    """Mechanism (or subject) checked."""
    checks: int
    """How many individual checks ran."""
    failed: int
    """How many failed."""
    declared_epsilon: str = ""
    """The declared ε (exact, as text)."""
    proven_sum: str = ""
    """The exact privacy sum / proven budget (as text)."""
    seconds: float = 0.0
    """Wall time."""
    detail: str = ""
    """First failure, or a summary."""
    extra: dict[str, Any] = field(default_factory=dict)
    """Suite-specific data for JSON output."""

    @property
    def status(self) -> str:
        """``ok`` or ``FAIL``."""
        return "ok" if self.failed == 0 else "FAIL"

    def as_dict(self) -> dict[str, Any]:
        """JSON-friendly dict."""
        return {
            "suite": self.suite,
            "mechanism": self.mechanism,
            "checks": self.checks,
            "failed": self.failed,
            "declared_epsilon": self.declared_epsilon,
            "proven_sum": self.proven_sum,
            "status": self.status,
            "seconds": round(self.seconds, 3),
            "detail": self.detail,
            **self.extra,
        }


def _instances(name: str, horizon: int, epsilon: Fraction) -> list[Mechanism]:
    """The parameterisations checked at one horizon."""
    if name == "two-level":
        sizes = sorted({1, horizon, max(1, horizon // 3)})
        out: list[Mechanism] = [build_mechanism(name, epsilon=epsilon, horizon=horizon)]
        out += [
            build_mechanism(name, epsilon=epsilon, horizon=horizon, block_size=b) for b in sizes
        ]
        return out
    if name == "hybrid":
        return [build_mechanism(name, epsilon=epsilon)]
    if name in _DECAYED_CASES:  # unbounded: the same instances serve every T
        cases = _decayed_instances(name, epsilon)
        return cases if horizon <= 512 else cases[:1]  # large T: one case keeps verify fast
    return [build_mechanism(name, epsilon=epsilon, horizon=horizon)]


_DECAYED_CASES: dict[str, tuple[dict[str, Any], ...]] = {
    "window": ({"window": 1}, {"window": 3}, {"window": 8}),
    "allwindow": ({"delta": Fraction(3, 2)}, {"delta": 2, "window": 5}),
    "exponential": ({"alpha": Fraction(1, 2)}, {"alpha": Fraction(9, 10)}),
    "polynomial": ({"c": 2, "beta": Fraction(1, 5)}, {"c": Fraction(3, 2), "beta": Fraction(1, 2)}),
}
"""Parameterisations of the decayed-sum mechanisms checked by the suites."""


@functools.lru_cache(maxsize=32)
def _decayed_instances(name: str, epsilon: Fraction) -> list[Mechanism]:
    return [build_mechanism(name, epsilon=epsilon, **kw) for kw in _DECAYED_CASES[name]]


def _horizons(opts: VerifyOptions, rng: np.random.Generator) -> list[int]:
    if opts.max_exhaustive >= opts.random_max:  # no larger T left to draw
        return list(range(1, opts.max_exhaustive + 1))
    extra = rng.integers(opts.max_exhaustive + 1, opts.random_max + 1, opts.random_horizons)
    return list(range(1, opts.max_exhaustive + 1)) + sorted(int(t) for t in extra)


def plan_suite(opts: VerifyOptions) -> list[VerifyRow]:
    """Exact plan checks for every counting mechanism and horizon."""
    rows = []
    eps = Fraction(7, 10)
    for name in opts.mechanisms or tuple(mechanism_names()):
        start = time.perf_counter()
        rng = np.random.default_rng(opts.seed)
        checks = failed = 0
        detail = ""
        max_sum = Fraction(0)
        for T in _horizons(opts, rng):
            for m in _instances(name, T, eps):
                report = m.plan(T).check(m.variance_exact(T))
                checks += len(report.checks)
                bad = [c for c in report.checks if not c.passed]
                failed += len(bad)
                if bad and not detail:
                    detail = f"{m!r} T={T}: {bad[0].name}: {bad[0].detail}"
                max_sum = max(max_sum, report.privacy_sum)
        rows.append(
            VerifyRow(
                "plans",
                name,
                checks,
                failed,
                declared_epsilon=str(eps),
                proven_sum=str(max_sum),
                seconds=time.perf_counter() - start,
                detail=detail or "R·A=Q, causal, privacy sum, variance: exact",
            )
        )
    return rows


def agreement_suite(opts: VerifyOptions) -> list[VerifyRow]:
    """Batch, plan and online outputs agree on injected noise; online = batch on a seed."""
    rows = []
    eps = Fraction(1)
    horizons = [1, 2, 3, 4, 5, 7, 8, 16, 31, 64, 100, 257]
    for name in opts.mechanisms or tuple(mechanism_names()):
        start = time.perf_counter()
        rng = np.random.default_rng(opts.seed + 1)
        checks = failed = 0
        detail = ""
        for T in horizons:
            for m in _instances(name, T, eps):
                x = rng.integers(0, 2, T).astype(np.float64)
                z = m.node_noise(T, rng)
                batch = m.release(x, noise=z)
                plan_out = m.plan(T).output(x, z)
                online = m.online(noise=z).run(x)
                seed = int(rng.integers(2**31))
                seeded = np.abs(m.release(x, rng=seed) - m.online(rng=seed).run(x))
                tol = 1e-9 * (1.0 + np.abs(z).sum())
                for label, diff in (
                    ("plan", np.abs(batch - plan_out)),
                    ("online", np.abs(batch - online)),
                    ("seeded online", seeded),
                ):
                    checks += 1
                    if diff.max() > tol:
                        failed += 1
                        detail = detail or f"{m!r} T={T}: batch vs {label} differ by {diff.max()}"
        rows.append(
            VerifyRow(
                "agreement",
                name,
                checks,
                failed,
                seconds=time.perf_counter() - start,
                detail=detail or "batch = plan = online on injected and seeded noise",
            )
        )
    return rows


def golden_suite(opts: VerifyOptions) -> list[VerifyRow]:
    """The shipped golden vectors still come out of this dpref, exactly."""
    from dpref.golden import check_golden, load_shipped

    start = time.perf_counter()
    doc = load_shipped()
    problems = check_golden(doc)
    return [
        VerifyRow(
            "golden",
            f"{len(doc['vectors'])} vectors",
            len(doc["vectors"]),
            len(problems),
            seconds=time.perf_counter() - start,
            detail=problems[0] if problems else "stream + canonical noise -> shipped outputs",
        )
    ]


Suite = Callable[[VerifyOptions], list[VerifyRow]]

SUITES: list[str] = [
    "proofs.cli:verify_suite",
    "dpref.verify:plan_suite",
    "dpref.verify:agreement_suite",
    "dpref.verify:golden_suite",
    "dpref.audit.suite:audit_suite",
]
"""Suites run by ``dpref verify``, in order, as ``module:function``."""


def _load(spec: str) -> Suite:
    module, _, func = spec.partition(":")
    fn: Suite = getattr(importlib.import_module(module), func)
    return fn


def run_verify(
    opts: VerifyOptions | None = None, progress: Callable[[VerifyRow], None] | None = None
) -> list[VerifyRow]:
    """Run every suite; ``progress`` is called with each row as it completes."""
    opts = opts or VerifyOptions()
    rows: list[VerifyRow] = []
    for spec in SUITES:
        for row in _load(spec)(opts):
            rows.append(row)
            if progress is not None:
                progress(row)
    return rows
