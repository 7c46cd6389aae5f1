"""Conformance of a target to the reference mechanism it claims to be (``dpref conform``).

The target claims to be a reference mechanism M with given parameters.  Each check
has a stated false-alarm rate; the statistical ones share ``alpha`` (Bonferroni:
``alpha/4`` each, and within a check across steps or levels), so a conforming target
is declared non-conforming with probability at most ``alpha``.  The deterministic
checks (causality, crashes) cannot raise a false alarm.

* **crashes**: the target runs at several horizons — 1, 2, 3, 4, 5, every power of
  two up to T, T − 1 and T; any exception or malformed output is reported with the T
  that caused it.  With a reference, each probe runs again with another seed: a step
  released without noise where the reference's noise is continuous fails
  (:mod:`dpref.audit.conformance.conform_noise`).
* **causality by replay** (after Re:cord-play's record/replay with identical
  randomness): with the same rng seed, changing the items after step s must not
  change the outputs up to s.  First the target is run twice on the same stream and
  seed; if the outputs differ it is not deterministic given its rng and the check
  says so instead of guessing.
* **unbiasedness**: at every step t the mean error ``ȳ_t − (Qx)_t`` over the runs is
  tested with a two-sided t-test; Bonferroni across the T steps.
* **noise law and scale**: when R restricted to its used nodes is invertible (every
  counting mechanism: square, lower triangular with unit diagonal in release
  order), each run's node noise is recovered exactly as ``z = R_used⁻¹ y − (Ax)_used``
  and standardised by the reference scales, ``u = z/b``.  Under conformance the u
  are i.i.d. ``Lap(1)``: the law is tested with a Kolmogorov–Smirnov test, and the
  scale ratio ρ (target/reference) is estimated as ``mean |u|`` (the MLE; ``|u| ~
  Exp(ρ)``) with the exact Gamma interval, overall and per level (nodes grouped by
  ``⌊log₂ length⌋`` and scale).  When some level adds less noise, the ε implied by
  the estimated scales is ``max_i Σ_n |a_{n,i}|Δ/(ρ_n b_n)``.  When R is not
  invertible the law is tested on the node noise projected onto R's row space
  (:mod:`dpref.audit.conformance.conform_laplace`); then, and for discrete noise (where the law
  test is skipped), ρ² is estimated from the per-step variances relative to the
  reference's exact variances and no ε is implied.
* **per-step variance**: at every step the sample variance is compared with the
  reference's exact variance, one-sided (less noise than promised), using the normal
  approximation ``s² ≈ N(σ², κ₄/N + 2σ⁴/(N − 1))`` with the reference's own fourth
  cumulant.  The sample variance of sums of Laplace draws is right-skewed, so the
  lower-tail normal approximation is conservative; a step released without noise
  (``s² = 0``) always fails.

A **Gaussian reference** (``reference.gaussian``: ρ-zCDP) gets the same crash,
causality and unbiasedness checks; its noise law, scale and per-step variance are
tested on the node noise recovered (or the residuals whitened) through its
:class:`~dpref.audit.gaussian.gaussian_model.GaussianModel`, and a shortfall implies a ρ
instead of an ε: :mod:`dpref.audit.conformance.conform_gaussian`.

**Verdicts** (:mod:`dpref.audit.conformance.conform_verdict`): ``conforms``, ``does-not-conform`` (a
check failed or a defect was found: the target is not the reference, which says nothing
about its privacy by itself), ``inconclusive``, and ``violation`` only when a privacy
violation is established — the noise has the reference's structure and the
*output-level* ε/ρ at the measured scales (what the released outputs leak,
:mod:`dpref.audit.conformance.conform_output`) has its whole interval above the claim.  The
plan-level implied budget is reported beside it but decides nothing: Honaker's outputs
leak less than its plan.

References
----------
.. [1] T. Cebere, E. Erb, D. Desfontaines, A. Bellet, J. Fitzsimons.
   "Re:cord-play: auditing differential privacy by record and replay." 2026.
.. [2] T.-H. H. Chan, E. Shi, D. Song. "Private and Continual Release of
   Statistics." ACM TISSEC 2011.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt

from dpref.audit import cluster as cluster_module
from dpref.audit.cluster import (
    Executor,
    RowsShard,
    TargetRecipe,
    check_cluster,
    check_sendable,
    open_executor,
    remote_rows,
    root_seed,
    sample_rows,
    shard_layout,
    shard_seed,
)
from dpref.audit.conformance.conform_causality import causality_check
from dpref.audit.conformance.conform_checks import (
    Check,
    _noise_checks,
    _Recovery,
    _recovery,
    _step_cumulants,
    _unbiased,
    _unjudged_variance,
    _variance,
    _variance_scale,
)
from dpref.audit.conformance.conform_gaussian import gaussian_checks
from dpref.audit.conformance.conform_laplace import projected_checks
from dpref.audit.conformance.conform_noise import noiseless
from dpref.audit.conformance.conform_output import OutputLevel, laplace_output_level
from dpref.audit.conformance.conform_verdict import NOT_DEFECTS as _NOT_DEFECTS
from dpref.audit.conformance.conform_verdict import differs as _differs
from dpref.audit.conformance.conform_verdict import verdict as _verdict
from dpref.audit.isolation.targets import Finding, Target, TargetFailure, as_target, seeded
from dpref.audit.limits import MAX_RUNS
from dpref.audit.pure.loss import EXIT_CODES
from dpref.audit.reports.audit_report import CONFORMS, DOES_NOT_CONFORM, INCONCLUSIVE, VIOLATION
from dpref.audit.reports.deadline import stage
from dpref.audit.reports.progress import Progress
from dpref.domains import Domain, bits
from dpref.errors import DprefTypeError, ParameterError
from dpref.mechanisms import Mechanism
from dpref.plan import LinearPlan
from dpref.report_html import HtmlSummary
from dpref.validation import check_positive_int, check_probability_open, fmt, fmt_sequence

__all__ = ["Check", "ConformReport", "conform", "crash_horizons"]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

_N_STAT_CHECKS = 4
"""unbiased, noise law, noise scale, per-step variance: each gets alpha / 4."""


@dataclass
class ConformReport(HtmlSummary):
    """The outcome of :func:`conform`."""

    target: str
    """The target's name."""
    reference: str | None
    """The reference mechanism (repr); None in reference-free mode."""
    horizon: int
    """T."""
    runs: int
    """Runs of the target on the test stream (0 in reference-free mode)."""
    alpha: float
    """Overall false-alarm rate (0 in reference-free mode: every check is deterministic)."""
    conforms: bool
    """The verdict is ``conforms``: no check failed, no finding, nothing left untested."""
    checks: list[Check]
    """Every check."""
    noise_scale_ratio: dict[str, float] | None
    """Target/reference scale: estimate, low, high (None unless the structure matches or
    cannot be tested)."""
    implied_epsilon: dict[str, float] | None
    """The ε the estimated scales imply, when the target adds less noise *and* its
    recovered node noise passed the noise-law test for the reference's structure
    (Laplace references; None for Gaussian ones)."""
    claimed_epsilon: Fraction | None
    """The reference's ε (None in reference-free mode and for a Gaussian reference)."""
    seconds: float
    """Wall time."""
    findings: list[Finding] = field(default_factory=list)
    """Crashes, bad outputs, time-outs, non-determinism."""
    seed: Any = None
    """The seed used."""
    verdict: str = CONFORMS
    """``conforms``, ``does-not-conform``, ``inconclusive`` or ``violation`` (a privacy
    violation established: the output-level budget's interval lies above the claim);
    :mod:`dpref.audit.conformance.conform_verdict`."""
    reason: str = ""
    """What was established and what was not, in words."""
    structure: str = "untested"
    """``matches``, ``differs`` or ``untested``: the noise-law verdict on the recovered
    node noise, the condition for an implied ε (or ρ)."""
    implied_rho: dict[str, float] | None = None
    """Gaussian references: the ρ the estimated scales imply (estimate, low, high,
    claimed), when the target adds less noise and its noise passed the noise-law test."""
    claimed_rho: Fraction | None = None
    """The reference's ρ when it is a Gaussian (ρ-zCDP) mechanism, else None."""
    isolation: str | None = None
    """The isolation the target's worker ran in (:mod:`dpref.audit.isolation.sandbox`); None for a
    target run in this process."""
    output_level: OutputLevel | None = None
    """The output-level ε/ρ of the released outputs at the measured scales, when the noise
    has the reference's structure (:mod:`dpref.audit.conformance.conform_output`)."""
    verdict_basis: str = ""
    """What the verdict rests on: the failed checks, or the output-level budget."""

    @property
    def violation(self) -> bool:
        """A privacy violation is established (verdict ``violation``); a target that merely
        does not conform is not one."""
        return self.verdict == VIOLATION

    @property
    def does_not_conform(self) -> bool:
        """The target is not the reference (verdict ``does-not-conform`` or ``violation``)."""
        return self.verdict in (DOES_NOT_CONFORM, VIOLATION)

    @property
    def exit_code(self) -> int:
        """0 conforms, 1 does not conform (or a violation established), 3 inconclusive."""
        return EXIT_CODES[self.verdict]

    def as_dict(self) -> dict[str, Any]:
        """The JSON report."""
        out = self.output_level
        return {
            "verdict": self.verdict,
            "reason": self.reason,
            "verdict_basis": self.verdict_basis,
            "target": self.target,
            "reference": self.reference,
            "horizon": self.horizon,
            "runs": self.runs,
            "alpha": self.alpha,
            "conforms": self.conforms,
            "checks": [c.as_dict() for c in self.checks],
            "structure": self.structure,
            "noise_scale_ratio": self.noise_scale_ratio,
            "implied_epsilon": self.implied_epsilon,
            "claimed_epsilon": None if self.claimed_epsilon is None else str(self.claimed_epsilon),
            "implied_rho": self.implied_rho,
            "claimed_rho": None if self.claimed_rho is None else str(self.claimed_rho),
            "output_epsilon": None if out is None or out.budget != "epsilon" else out.as_dict(),
            "output_rho": None if out is None or out.budget != "rho" else out.as_dict(),
            "seconds": round(self.seconds, 3),
            "findings": [f.as_dict() for f in self.findings],
            "seed": self.seed,
            "isolation": self.isolation,
        }

    def summary(self) -> str:
        """A human-readable report; the first line is the verdict."""
        label = {
            VIOLATION: "VIOLATION: privacy violation established (output-level)",
            DOES_NOT_CONFORM: "DOES NOT CONFORM",
            CONFORMS: "conforms",
            INCONCLUSIVE: "INCONCLUSIVE",
        }[self.verdict]
        lines = [
            f"verdict     {label} ({self.seconds:.2f} s)",
            f"reason      {self.reason}",
            f"rests on    {self.verdict_basis}",
            f"target      {self.target}",
        ]
        if self.reference is None:
            lines.append("reference   none: reference-free checks only (all deterministic)")
            lines.append(f"horizon     T={self.horizon}")
        else:
            lines.append(f"reference   {self.reference}")
            lines.append(
                f"horizon     T={self.horizon}, {self.runs:,} runs, false-alarm rate {self.alpha:g}"
            )
        for c in self.checks:
            status = {True: "pass", False: "FAIL", None: "n/a "}[c.passed]
            extra = ""
            if c.interval is not None:
                extra = f" [{c.interval[0]:.5g}, {c.interval[1]:.5g}]"
            elif c.p_value is not None:
                extra = f" (p = {c.p_value:.3g})"
            lines.append(f"  {status}  {c.name:<12}{extra}  {c.detail}")
        if self.noise_scale_ratio is not None:
            r = self.noise_scale_ratio
            lines.append(
                f"scale ratio target/reference = {r['estimate']:.5f} "
                f"[{r['low']:.5f}, {r['high']:.5f}]"
            )
        if self.implied_epsilon is not None:
            e = self.implied_epsilon
            lines.append(
                f"implied ε   {e['estimate']:.5g} [{e['low']:.5g}, {e['high']:.5g}] "
                f"plan-level: the node release at the measured scales (claimed "
                f"{self.claimed_epsilon})"
            )
        elif self.implied_rho is not None:
            e = self.implied_rho
            lines.append(
                f"implied ρ   {e['estimate']:.5g} [{e['low']:.5g}, {e['high']:.5g}] "
                f"plan-level: the node release at the measured σ (claimed {self.claimed_rho})"
            )
        if self.output_level is not None:
            o = self.output_level
            lines.append(
                f"output {o.symbol}    {o.estimate:.5g} [{o.low:.5g}, {o.high:.5g}] "
                f"output-level: the released outputs at the measured scales (claimed "
                f"{o.claimed}); a privacy violation needs this interval above the claim"
                + (f"; μ = {math.sqrt(2 * o.estimate):.5g}" if o.budget == "rho" else "")
            )
            lines.append(f"            {o.basis}")
        if self.structure == "differs":
            budget = "ε" if self.claimed_rho is None else "ρ"
            lines.append(f"implied {budget}   none: {_differs(self.reference, budget)}")
        for f in self.findings:
            lines.append(f"FINDING     {f}")
        return "\n".join(lines)


def crash_horizons(horizon: int) -> list[int]:
    """1, 2, 3, 4, 5, every power of two up to T, T − 1 and T (all ≤ T)."""
    hs = {1, 2, 3, 4, 5, horizon - 1, horizon}
    p = 1
    while p <= horizon:
        hs.add(p)
        p *= 2
    return sorted(h for h in hs if 1 <= h <= horizon)


def _random_stream(T: int, d: Domain, rng: np.random.Generator) -> FloatArray:
    lo, hi = float(d.lower), float(d.upper)
    if d.integer:
        return rng.integers(int(lo), int(hi) + 1, T).astype(np.float64)
    return rng.uniform(lo, hi, T)


# ------------------------------------------------------------------ recovery


# --------------------------------------------------------------------- main
_DEFAULT_RUNS = 2000
_DEFAULT_ALPHA = 0.01


def conform(
    target: Any,
    reference: Mechanism | None,
    *,
    horizon: Any,
    runs: Any = None,
    alpha: Any = None,
    seed: Any = None,
    stream: Any = None,
    domain: Domain | None = None,
    timeout: float | None = 60.0,
    progress: bool = False,
    workers: Any = None,
    scheduler: Any = None,
) -> ConformReport:
    """Check that ``target`` behaves like ``reference`` at horizon T (see module doc).

    Parameters
    ----------
    target
        A :class:`~dpref.mechanisms.Mechanism`, a callable ``f(stream, rng)`` or a
        ``"module:function"`` / ``"file.py:function"`` spec.
    reference
        The mechanism the target claims to be (its parameters included), or None for
        the reference-free checks only: crashes (at T = 1, 2, 3, 4, 5, every power of
        two, T − 1, T; exceptions, wrong length, bad or non-finite output) and
        causality by replay (which also tests determinism given the rng).  A Gaussian
        (ρ-zCDP) reference is tested through its output model
        (:mod:`dpref.audit.conformance.conform_gaussian`) and reports an implied ρ.
    horizon
        T.
    runs
        Independent runs of the target on the test stream (default 2000; only with a
        reference).
    alpha
        Overall false-alarm rate (probability that a conforming target is flagged;
        default 0.01; only with a reference).
    seed
        Makes the run reproducible.
    stream
        The test stream (default: a random stream of the domain).
    domain
        Item domain of the streams, reference-free mode only (default: a built-in
        target's, else bits); with a reference its domain is used.
    timeout
        Longest a single target call may run (seconds).
    progress
        tqdm progress bar on stderr for long runs.
    workers
        Make the runs on a local Dask cluster of this many worker processes (1 to
        :data:`~dpref.audit.limits.MAX_WORKERS`; needs ``dpref[cluster]``; only with a
        reference).
    scheduler
        Make them on the existing Dask cluster at this address; at most one of
        ``workers`` and ``scheduler``.  The runs are drawn in shards whose seeds depend on
        the seed and ``runs`` only (:mod:`dpref.audit.cluster`), so the report is the one
        the in-process run gives.
    """
    start = time.perf_counter()
    cluster = check_cluster(workers, scheduler)
    if not cluster.sequential and reference is None:
        name, value = ("workers", workers) if workers is not None else ("scheduler", scheduler)
        raise ParameterError(
            f"{name}={fmt(value)}: applies only with a reference (the reference-free checks "
            "make a few calls, in this process's worker)"
        )
    tgt, T, n, a, dom = _conform_options(
        target,
        reference,
        horizon=horizon,
        runs=runs,
        alpha=alpha,
        domain=domain,
        timeout=timeout,
    )
    check_sendable(tgt, cluster)
    gen = seeded(seed)
    x = _test_stream(stream, T, dom, gen)
    checks = [_crashes(tgt, T, dom, gen, reference)]
    stage("causality and the main sample", checks)  # for a partial report (deadline.py)
    if reference is None:
        checks.append(causality_check(tgt, x, dom, gen))
        return _conform_report(tgt, None, T, 0, 0.0, checks, None, seed, start)
    a_stat = a / _N_STAT_CHECKS
    root = root_seed(gen)
    with open_executor(cluster) as executor:
        bar = Progress(total=n, enabled=progress, unit="runs")
        Y = _main_sample(tgt, x, n, root, executor, bar)
        bar.close()
    checks.append(causality_check(tgt, x, dom, gen))
    if isinstance(Y, Finding):
        stat = _StatChecks.not_run(Y, a_stat)
    else:
        stat = _statistical_checks(Y, x, reference, T, a_stat)
    checks += stat.checks
    return _conform_report(tgt, reference, T, n, a, checks, stat, seed, start)


def _conform_report(
    tgt: Target,
    reference: Mechanism | None,
    T: int,
    n: int,
    a: float,
    checks: list[Check],
    stat: _StatChecks | None,
    seed: Any,
    start: float,
) -> ConformReport:
    """The verdict (see :func:`_verdict`) and the report."""
    findings = list(tgt.findings)
    structure = "untested" if stat is None else stat.structure
    verdict, reason, basis = _verdict(checks, findings, reference, structure, stat)
    gauss = reference is not None and reference.gaussian
    implied = None if stat is None else stat.implied
    return ConformReport(
        target=tgt.name,
        reference=None if reference is None else repr(reference),
        horizon=T,
        runs=n,
        alpha=a,
        conforms=verdict == CONFORMS,
        checks=checks,
        noise_scale_ratio=None if stat is None else stat.ratio_info,
        implied_epsilon=None if gauss else implied,
        claimed_epsilon=None if reference is None or gauss else reference.declared_epsilon,
        seconds=time.perf_counter() - start,
        findings=findings,
        seed=seed if isinstance(seed, int | type(None)) else repr(seed),
        verdict=verdict,
        reason=reason,
        structure=structure,
        implied_rho=implied if gauss else None,
        claimed_rho=reference.declared_rho if reference is not None and gauss else None,
        isolation=tgt.isolation,
        output_level=None if stat is None else stat.output,
        verdict_basis=basis,
    )


def _conform_options(
    target: Any,
    reference: Mechanism | None,
    *,
    horizon: Any,
    runs: Any,
    alpha: Any,
    domain: Domain | None,
    timeout: float | None,
) -> tuple[Target, int, int, float, Domain]:
    """Check the arguments of :func:`conform` (in its order of errors): target, T, runs,
    alpha, domain; options that do not apply to the mode are errors."""
    if reference is not None and not isinstance(reference, Mechanism):
        raise DprefTypeError(f"reference={fmt(reference)}: must be a dpref Mechanism or None")
    if isinstance(target, Mechanism) and target.privacy == "zcdp":
        # as_target refuses a zCDP mechanism for the pure-ε audit; conformance tests its
        # outputs only, sampled in-process through release_many like any built-in target
        # (as_target checks the timeout before it passes a Target through)
        tgt = as_target(Target(repr(target), mechanism=target, timeout=timeout), timeout=timeout)
    else:
        tgt = as_target(target, timeout=timeout)
    T = check_positive_int("horizon", horizon)
    if reference is None:
        for name, value in (("runs", runs), ("alpha", alpha)):
            if value is not None:
                raise ParameterError(
                    f"{name}={fmt(value)}: applies only with a reference (the reference-free "
                    "checks are deterministic)"
                )
        if tgt.mechanism is not None:
            tgt.mechanism_at(T)
        if domain is None:
            domain = tgt.mechanism.domain if tgt.mechanism is not None else bits()
        if not isinstance(domain, Domain):
            raise DprefTypeError(f"domain={fmt(domain)}: must be a dpref Domain")
        return tgt, T, 0, 0.0, domain
    if domain is not None:
        raise ParameterError(
            f"domain={fmt(domain)}: applies only without a reference (the reference's "
            "domain is used)"
        )
    n = check_positive_int("runs", _DEFAULT_RUNS if runs is None else runs)
    if not 20 <= n <= MAX_RUNS:  # 10**11 runs allocated without bound (issue 24)
        raise ParameterError(f"runs={n}: must be in [20, {MAX_RUNS}]")
    a = float(check_probability_open("alpha", _DEFAULT_ALPHA if alpha is None else alpha))
    if reference.horizon is not None and reference.horizon < T:
        raise ParameterError(f"horizon={T}: exceeds the reference's horizon={reference.horizon}")
    _check_noise_visible(reference, T)
    return tgt, T, n, a, reference.domain


NOISE_RESOLUTION = Fraction(1, 2**30)
"""The smallest node noise scale conformance accepts, relative to the largest output
magnitude ``M = T·max(1, |lower|, |upper|)``.  A float64 output of magnitude M is
rounded to within ``M·2⁻⁵³``; at a scale below ``M·2⁻³⁰`` that rounding is over ``2⁻²³``
of the noise, and at ε = 2⁷⁰ it swallows the noise entirely (the recovered noise is 0
and a correct target would be flagged).  Below it the noise cannot be tested."""


def _check_noise_visible(reference: Mechanism, T: int) -> None:
    """Reject a reference whose noise float64 outputs cannot show (before any target call)."""
    d = reference.domain
    magnitude = T * max(Fraction(1), abs(d.lower), abs(d.upper))
    if reference.gaussian:  # the plan's table holds the variances σ²: compare squares
        smallest = min(reference.plan(T).scale_table)
        if smallest < (magnitude * NOISE_RESOLUTION) ** 2:
            raise ParameterError(
                f"rho={str(reference.declared_rho)[:60]}: the reference's smallest noise "
                f"standard deviation {math.sqrt(float(smallest)):.3g} is below 2^-30 of the "
                f"outputs' magnitude {float(magnitude):.3g}; float64 outputs cannot show "
                "noise that small, so conformance cannot be tested (use a smaller rho)"
            )
        return
    smallest = min(reference.nodes(T).scale_table)
    if smallest < magnitude * NOISE_RESOLUTION:
        raise ParameterError(
            f"epsilon={str(reference.epsilon)[:60]}: the reference's smallest noise scale "
            f"{float(smallest):.3g} is below 2^-30 of the outputs' magnitude "
            f"{float(magnitude):.3g}; "
            "float64 outputs cannot show noise that small, so conformance cannot be tested "
            "(use a smaller epsilon)"
        )


def _test_stream(stream: Any, T: int, domain: Domain, gen: np.random.Generator) -> FloatArray:
    """The given stream (checked against the domain), else a random one."""
    if stream is None:
        return _random_stream(T, domain, gen)
    x = domain.check_stream("stream", stream)
    if x.size != T:
        raise ParameterError(
            f"stream={fmt_sequence(stream, x.shape)}: length {x.size}, expected horizon={T}"
        )
    return x


def _crashes(
    tgt: Target,
    T: int,
    domain: Domain,
    gen: np.random.Generator,
    reference: Mechanism | None = None,
) -> Check:
    """Run the target once at each of :func:`crash_horizons` on a random stream (and, with
    a reference, again: :func:`~dpref.audit.conformance.conform_noise.noiseless`)."""
    crash_fail: list[Finding] = []
    hs = crash_horizons(T)
    for h in hs:
        xs = _random_stream(h, domain, gen)
        words = [h, int(gen.integers(2**32))]
        try:
            y = tgt.call_once(xs, np.random.default_rng(words))
        except TargetFailure as exc:
            crash_fail.append(exc.finding)
            continue
        bad = np.flatnonzero(~np.isfinite(y))
        if bad.size:
            found = Finding("non-finite", f"output at t={bad[0] + 1} is {y[bad[0]]!r}", h)
            tgt.record(found)
            crash_fail.append(found)
        elif (quiet := noiseless(tgt, xs, y, words, reference)) is not None:
            tgt.record(quiet)
            crash_fail.append(quiet)
    defects = [f for f in crash_fail if f.kind not in _NOT_DEFECTS]
    if not crash_fail:
        passed: bool | None = True
        detail = f"ran at T = {', '.join(map(str, hs))} without error"
    elif defects:  # a time-out is no defect, but an exception elsewhere is
        passed, detail = False, _crash_detail(crash_fail)
    else:
        passed, detail = None, "not run to the end: " + _crash_detail(crash_fail)
    return Check("crashes", passed, None, None, None, 0.0, detail)


def _main_sample(
    tgt: Target,
    x: FloatArray,
    n: int,
    root: np.random.SeedSequence,
    executor: Executor,
    bar: Progress,
) -> FloatArray | Finding:
    """``n`` runs of the target on the test stream, or what went wrong.

    The runs are :func:`~dpref.audit.cluster.shard_layout` shards of
    :data:`~dpref.audit.cluster.SHARD_RUNS`, shard ``i`` drawn from
    :func:`~dpref.audit.cluster.shard_seed` ``(root, 0, i)`` and concatenated in order
    (the statistical checks need every row); the first failed shard ends the sample.
    """
    layout = shard_layout(n, cluster_module.SHARD_RUNS)
    tasks = [(x, shard_seed(root, 0, i), size) for i, size in enumerate(layout)]

    def local(k: int) -> RowsShard:
        stream, seed, size = tasks[k]
        return sample_rows(tgt, stream, seed, size, bar.update)

    rows: list[FloatArray] = []
    for summary in executor.results(local, remote_rows, (TargetRecipe.of(tgt),), tasks):
        shard: RowsShard = summary
        if not executor.sequential:  # the live target recorded them itself
            for f in shard.findings:
                tgt.record(f)
            bar.update(shard.rows.shape[0])
        if shard.failure is not None:
            return shard.failure
        rows.append(shard.rows)
    Y: FloatArray = np.concatenate(rows, axis=0)
    return Y


@dataclass(frozen=True)
class _StatChecks:
    """The statistical checks and the scale estimates they produced."""

    checks: list[Check]
    """unbiased, noise-law, noise-scale, variance."""
    ratio_info: dict[str, float] | None
    """Target/reference scale: estimate, low, high."""
    implied: dict[str, float] | None
    """The ε (Gaussian reference: ρ) the estimated scales imply, when the target adds
    less noise."""
    structure: str = "untested"
    """``matches`` / ``differs`` / ``untested``: the noise-law verdict."""
    output: OutputLevel | None = None
    """The output-level budget at the measured scales, when the structure matches."""

    @staticmethod
    def not_run(failure: Finding, a: float) -> _StatChecks:
        """Every statistical check marked not run: the main sample failed."""
        return _StatChecks(
            [
                Check(name, None, None, None, None, a, f"not run: {failure}")
                for name in ("unbiased", "noise-law", "noise-scale", "variance")
            ],
            None,
            None,
        )


def _statistical_checks(
    Y: FloatArray, x: FloatArray, reference: Mechanism, T: int, a: float
) -> _StatChecks:
    """Unbiasedness, noise law and scale, and per-step variance of the main sample.

    When the noise law fails, the target's noise is not the reference's structure:
    its scale ratio and its per-step variances measure nothing the reference promises,
    so a shortfall is reported but not judged (a step without any noise still fails).
    """
    if reference.gaussian:
        g = gaussian_checks(Y, x, reference, T, a)
        return _StatChecks(g.checks, g.ratio_info, g.implied, g.structure, g.output)
    truth = reference.target(x)
    unbiased = _unbiased(Y, truth, a)
    plan = reference.plan(T)
    rec = _recovery(plan)
    ref_var = reference.variance(T)
    law, scale, ratio_info, implied, output = _law_and_scale(Y, x, plan, rec, ref_var, a, reference)
    _, ref_k4 = _step_cumulants(reference, plan)
    variance = _variance(Y, ref_var, ref_k4, a)
    structure = {True: "matches", False: "differs", None: "untested"}[law.passed]
    if law.passed is False:
        why = f"not judged: {_differs(repr(reference))}"
        scale = Check("noise-scale", None, scale.statistic, None, scale.interval, a, why)
        ratio_info, implied = None, None
        if variance.passed is False and math.isfinite(variance.statistic or 0.0):
            variance = _unjudged_variance(variance, a)
    return _StatChecks([unbiased, law, scale, variance], ratio_info, implied, structure, output)


def _law_and_scale(
    Y: FloatArray,
    x: FloatArray,
    plan: LinearPlan,
    rec: _Recovery | None,
    ref_var: FloatArray,
    a: float,
    reference: Mechanism,
) -> tuple[Check, Check, dict[str, float] | None, dict[str, float] | None, OutputLevel | None]:
    """From the recovered node noise when it is recoverable and Laplace, else from variances
    (then the structure is untested and no ε is implied)."""
    if rec is not None and reference.noise == "laplace":
        law, scale, info, implied, fitted = _noise_checks(Y, x, plan, rec, a, reference)
        output = None
        if fitted is not None:
            output = laplace_output_level(plan, reference, rec.nodes, *fitted)
        return law, scale, info, implied, output
    tested = projected_checks(Y, x, plan, ref_var, a) if reference.noise == "laplace" else None
    if tested is not None:  # R not invertible: the law through R⁺R (conform_laplace)
        return (*tested, None, None)
    why = (
        "R restricted to its used nodes is not invertible"
        if rec is None
        else "the reference uses discrete noise (KS needs a continuous law)"
    )
    law = Check("noise-law", None, None, None, None, a, f"not run: {why}")
    scale, ratio_info = _variance_scale(Y, ref_var, a)
    return law, scale, ratio_info, None, None


def _crash_detail(found: list[Finding]) -> str:
    """``exception at T = 1, 2, 4: IndexError: …`` grouped by what went wrong."""
    groups: dict[tuple[str, str], list[int]] = {}
    for f in found:
        groups.setdefault((f.kind, f.detail), []).append(f.horizon or 0)
    return "; ".join(
        f"{kind} at T = {', '.join(map(str, hs))}: {detail}"
        for (kind, detail), hs in groups.items()
    )
