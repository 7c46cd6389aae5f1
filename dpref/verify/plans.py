"""The ``plans`` and ``agreement`` suites of ``dpref verify``, over every registered
mechanism and each of its declared examples.

* ``plans``: every mechanism's plan passes its exact checks (unbiased, causal,
  privacy sum = declared ε, or 2ρ for a zCDP example (its budget is then ρ), or the exact
  expected sum, closed-form variance) for
  T = 1..``max_exhaustive`` and for random larger T;
* ``agreement``: the batch path, the explicit plan, ``release_many`` and the online counter
  give the same outputs on the same injected dyadic node noise — bit for bit where the
  plan's float sums are exact — and online and batch agree on a seed.
"""

from __future__ import annotations

import functools
import time
from fractions import Fraction

import numpy as np

from dpref.mechanisms import MECHANISMS, Example, Mechanism
from dpref.plan import LinearPlan
from dpref.verify import VerifyOptions, VerifyRow, by_mechanism, splittable

__all__ = ["agreement_suite", "exact_in_floats", "plan_suite"]

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
                if T > m.max_plan_steps:  # a dense plan (BlueTree) is built only up to here
                    continue
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


ROUNDING = 2.0**-36
"""Where the sums cannot be exact, two paths may differ at step t by at most
``ROUNDING · (|R|(|A|x + |z|) + |Q|x)_t``: each path's result is within ``n·2⁻⁵³`` of that
magnitude for n ≤ 2¹⁷ roundings (T ≤ 257 steps and nodes per step), with room to spare."""
NOISE_QUANTUM = 0.25
"""Injected node noise: integers in [−8, 8] times this — small dyadic rationals."""


def _dyadic(values: tuple[Fraction, ...] | list[Fraction]) -> bool:
    """Every value a dyadic rational with at most 20 fractional bits."""
    return all(v.denominator & (v.denominator - 1) == 0 and v.denominator <= 2**20 for v in values)


def exact_in_floats(plan: LinearPlan) -> bool:
    """Whether every float sum of the plan's release is exact on dyadic noise: R, the node
    weights and the target are dyadic and nothing decays.  Then with bits x and noise in
    ``¼ℤ ∩ [−2, 2]`` each partial sum is a multiple of ``2⁻²²`` far below ``2⁵³·2⁻²²`` in
    size, whatever the order of the additions, so every path must give the same floats.
    A Toeplitz plan (sqrt, BLT) has no explicit tables and is held to the rounding bound."""
    return (
        isinstance(plan, LinearPlan)
        and plan.base == 1
        and _dyadic(plan.recombination.table)
        and _dyadic(plan.weight_table)
        and _dyadic(plan.target.table)
    )


def _agree(m: Mechanism, T: int, rng: np.random.Generator) -> tuple[list[str], bool]:
    """One instance at one horizon: the problems of each comparison ('' when it holds) and
    whether the plan's sums are exact in floats."""
    plan = m.plan(T)
    n = plan.n_nodes
    x = rng.integers(0, 2, T).astype(np.float64)
    z = rng.integers(-8, 9, (2, n)) * NOISE_QUANTUM
    batch = m.release(x, noise=z[0])
    many = m.release_many(x, runs=2, noise=z)
    outputs = {
        "plan": plan.output(x, z[0]),
        "online": m.online(noise=z[0]).run(x),
        "release_many": many[0],
    }
    second = many[1] - m.release(x, noise=z[1])
    seed = int(rng.integers(2**31))
    seeded = m.release(x, rng=seed) - m.online(rng=seed).run(x)
    R = abs(plan.R())
    size = R @ (abs(plan.A()) @ x) + abs(plan.Q()) @ x
    exact = exact_in_floats(plan)
    bound = np.zeros(T) if exact else ROUNDING * (size + R @ np.abs(z[0]))
    seeded_bound = ROUNDING * (size + R @ np.abs(m.node_noise(T, seed)))
    diffs = [(label, np.abs(batch - out), bound) for label, out in outputs.items()]
    diffs.append(("release_many run 2", np.abs(second), np.zeros(T)))
    diffs.append(("seeded online", np.abs(seeded), seeded_bound))
    problems = []
    for label, diff, tol in diffs:
        over = diff > tol
        if not np.any(over):
            problems.append("")
            continue
        t = int(np.argmax(over))
        problems.append(
            f"batch vs {label} at t={t + 1} differ by {diff[t]!r}"
            + (" (bit-exact expected)" if tol[t] == 0 else f" > bound {tol[t]!r}")
        )
    return problems, exact


@splittable(by_mechanism)
def agreement_suite(opts: VerifyOptions) -> list[VerifyRow]:
    """Batch, plan, ``release_many`` and online outputs on injected dyadic noise: bit for bit
    where the plan's sums are exact in floats (:func:`exact_in_floats`), else within the
    rounding bound :data:`ROUNDING` of each step's magnitude; online = batch on a seed,
    within the same per-step bound of the seeded noise's magnitude.  An instance whose
    paths raise fails a check."""
    rows = []
    eps = Fraction(1)
    horizons = [1, 2, 3, 4, 5, 7, 8, 16, 31, 64, 100, 257]
    for name in opts.mechanisms or tuple(MECHANISMS):
        start = time.perf_counter()
        rng = np.random.default_rng(opts.seed + 1)
        checks = failed = exact_plans = 0
        detail = ""
        for T in horizons:
            try:
                instances = _instances(name, T, eps)
            except Exception as exc:  # a mechanism that cannot be built at T fails the row
                instances = []
                checks += 1
                failed += 1
                detail = detail or f"{name} T={T}: raised {type(exc).__name__}: {exc}"
            for m in instances:
                if T > m.max_plan_steps:  # the comparison needs the plan
                    continue
                try:
                    problems, exact = _agree(m, T, rng)
                except Exception as exc:  # a path that raises is a finding, not a crash
                    problems, exact = [f"raised {type(exc).__name__}: {exc}"], False
                exact_plans += exact
                checks += len(problems)
                bad = [p for p in problems if p]
                failed += len(bad)
                if bad and not detail:
                    detail = f"{m!r} T={T}: {bad[0]}"
        rows.append(
            VerifyRow(
                "agreement",
                name,
                checks,
                failed,
                seconds=time.perf_counter() - start,
                detail=detail
                or (
                    "batch = plan = online = release_many on injected dyadic noise "
                    f"(bit-exact for {exact_plans} of the plans, the rest within 2^-36 of "
                    "each step's magnitude); online = batch on a seed"
                ),
            )
        )
    return rows
