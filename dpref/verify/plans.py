"""The ``plans`` and ``agreement`` suites of ``dpref verify``, over every registered
mechanism and each of its declared examples.

* ``plans``: every mechanism's plan passes its exact checks (unbiased, causal,
  privacy sum = declared ε, or 2ρ for a zCDP example (its budget is then ρ), or the exact
  expected sum, closed-form variance) for
  T = 1..``max_exhaustive`` and for random larger T;
* ``agreement``: the batch path, the explicit plan and the online counter give the
  same outputs on the same injected node noise, and online and batch agree on a seed.
"""

from __future__ import annotations

import functools
import time
from fractions import Fraction

import numpy as np

from dpref.mechanisms import MECHANISMS, Example, Mechanism
from dpref.verify import VerifyOptions, VerifyRow, by_mechanism, splittable

__all__ = ["agreement_suite", "plan_suite"]

LARGE_T = 512
"""Above this T only a mechanism's first example is checked (keeps verify fast)."""


def _instances(name: str, horizon: int, epsilon: Fraction) -> list[Mechanism]:
    """The parameterisations checked at one horizon: the mechanism's examples (built
    once when they do not depend on T)."""
    cls = MECHANISMS[name]
    chosen = cls.examples if horizon <= LARGE_T else cls.examples[:1]
    return [
        ex.build(cls, epsilon, horizon)
        if _depends_on_horizon(cls, ex)
        else _unbounded(name, k, epsilon)
        for k, ex in enumerate(chosen)
    ]


def _depends_on_horizon(cls: type[Mechanism], example: Example) -> bool:
    """Built with ``horizon=T``, or with a parameter that is a function of T."""
    bounded = "horizon" in example.kwargs(cls, 1)
    return bounded or any(callable(v) for v in example.params.values())


@functools.lru_cache(maxsize=64)
def _unbounded(name: str, index: int, epsilon: Fraction) -> Mechanism:
    """An example that does not depend on T: the same instance serves every horizon."""
    cls = MECHANISMS[name]
    return cls.examples[index].build(cls, epsilon, 1)


def _horizons(opts: VerifyOptions, rng: np.random.Generator) -> list[int]:
    if opts.max_exhaustive >= opts.random_max:  # no larger T left to draw
        return list(range(1, opts.max_exhaustive + 1))
    extra = rng.integers(opts.max_exhaustive + 1, opts.random_max + 1, opts.random_horizons)
    return list(range(1, opts.max_exhaustive + 1)) + sorted(int(t) for t in extra)


@splittable(by_mechanism)
def plan_suite(opts: VerifyOptions) -> list[VerifyRow]:
    """Exact plan checks for every registered mechanism, example and horizon."""
    rows = []
    eps = Fraction(7, 10)
    for name in opts.mechanisms or tuple(MECHANISMS):
        start = time.perf_counter()
        rng = np.random.default_rng(opts.seed)
        checks = failed = 0
        detail = ""
        max_sum = Fraction(0)
        zcdp = 0
        for T in _horizons(opts, rng):
            for m in _instances(name, T, eps):
                report = m.plan(T).check(m.variance_exact(T))
                checks += len(report.checks)
                bad = [c for c in report.checks if not c.passed]
                failed += len(bad)
                if bad and not detail:
                    detail = f"{m!r} T={T}: {bad[0].name}: {bad[0].detail}"
                if m.rho is None:  # the L1 sums, against ε; zCDP instances: L2 ≤ 2ρ
                    max_sum = max(max_sum, report.privacy_sum)
                else:
                    zcdp += 1
        rows.append(
            VerifyRow(
                "plans",
                name,
                checks,
                failed,
                declared_epsilon=str(eps),
                proven_sum=str(max_sum),
                seconds=time.perf_counter() - start,
                detail=detail
                or "R·A=Q, causal, privacy sum, variance: exact"
                + (f" ({zcdp} Gaussian plans: L2 sum ≤ 2ρ, ρ = {eps})" if zcdp else ""),
            )
        )
    return rows


@splittable(by_mechanism)
def agreement_suite(opts: VerifyOptions) -> list[VerifyRow]:
    """Batch, plan and online outputs agree on injected noise; online = batch on a seed."""
    rows = []
    eps = Fraction(1)
    horizons = [1, 2, 3, 4, 5, 7, 8, 16, 31, 64, 100, 257]
    for name in opts.mechanisms or tuple(MECHANISMS):
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
