"""Conformance of a target to the reference mechanism it claims to be (``dpref conform``).

The target claims to be a reference mechanism M with given parameters.  Each check
has a stated false-alarm rate; the statistical ones share ``alpha`` (Bonferroni:
``alpha/4`` each, and within a check across steps or levels), so a conforming target
is declared non-conforming with probability at most ``alpha``.  The deterministic
checks (causality, crashes) cannot raise a false alarm.

* **crashes**: the target runs at several horizons — 1, 2, 3, 4, 5, every power of
  two up to T, T − 1 and T; any exception or malformed output is reported with the T
  that caused it.
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
  the estimated scales is ``max_i Σ_n |a_{n,i}|Δ/(ρ_n b_n)``.  Otherwise (R not
  invertible, or discrete noise) the law test is skipped and ρ² is estimated from
  the per-step variances relative to the reference's exact variances.
* **per-step variance**: at every step the sample variance is compared with the
  reference's exact variance, one-sided (less noise than promised), using the normal
  approximation ``s² ≈ N(σ², κ₄/N + 2σ⁴/(N − 1))`` with the reference's own fourth
  cumulant.  The sample variance of sums of Laplace draws is right-skewed, so the
  lower-tail normal approximation is conservative; a step released without noise
  (``s² = 0``) always fails.

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
import scipy.sparse as sp
import scipy.sparse.linalg as spla
from scipy import stats

from dpref.audit.events import used_nodes
from dpref.audit.loss import EXIT_CODES, INCONCLUSIVE, NO_VIOLATION, VIOLATION
from dpref.audit.progress import Progress
from dpref.audit.stats import exponential_scale_interval
from dpref.audit.targets import Finding, Target, TargetFailure, as_target, seeded
from dpref.domains import Domain, bits
from dpref.errors import DprefTypeError, ParameterError
from dpref.mechanisms import Mechanism
from dpref.plan import LinearPlan
from dpref.validation import check_positive_int, fmt

__all__ = ["Check", "ConformReport", "conform", "crash_horizons"]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

_N_STAT_CHECKS = 4
"""unbiased, noise law, noise scale, per-step variance: each gets alpha / 4."""


@dataclass(frozen=True)
class Check:
    """One conformance check."""

    name: str
    """``crashes``, ``causality``, ``unbiased``, ``noise-law``, ``noise-scale``, ``variance``."""
    passed: bool | None
    """True/False, or None when the check could not be run (``detail`` says why)."""
    statistic: float | None
    """The test statistic (or the estimate)."""
    p_value: float | None
    """Bonferroni-adjusted p-value, when the check is a test."""
    interval: tuple[float, float] | None
    """Confidence interval, when the check is an estimate."""
    alpha: float
    """This check's false-alarm rate (0 for deterministic checks)."""
    detail: str
    """What was found, in words."""

    def as_dict(self) -> dict[str, Any]:
        """JSON-friendly dict."""
        return {
            "name": self.name,
            "passed": self.passed,
            "statistic": _fin(self.statistic),
            "p_value": _fin(self.p_value),
            "interval": None if self.interval is None else [_fin(v) for v in self.interval],
            "alpha": self.alpha,
            "detail": self.detail,
        }


def _fin(v: float | None) -> float | str | None:
    if v is None:
        return None
    return v if math.isfinite(v) else ("inf" if v > 0 else "-inf")


@dataclass
class ConformReport:
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
    """The verdict is ``no-violation-found``: no check failed, no finding, nothing left untested."""
    checks: list[Check]
    """Every check."""
    noise_scale_ratio: dict[str, float] | None
    """Target/reference scale: estimate, low, high (None unless the structure matches or
    cannot be tested)."""
    implied_epsilon: dict[str, float] | None
    """The ε the estimated scales imply, when the target adds less noise *and* its
    recovered node noise passed the noise-law test for the reference's structure."""
    claimed_epsilon: Fraction | None
    """The reference's ε (None in reference-free mode)."""
    seconds: float
    """Wall time."""
    findings: list[Finding] = field(default_factory=list)
    """Crashes, bad outputs, time-outs, non-determinism."""
    seed: Any = None
    """The seed used."""
    verdict: str = NO_VIOLATION
    """``violation`` (does not conform), ``no-violation-found`` (conforms) or ``inconclusive``."""
    reason: str = ""
    """What was established and what was not, in words."""
    structure: str = "untested"
    """``matches``, ``differs`` or ``untested``: the noise-law verdict on the recovered
    node noise, the condition for an implied ε."""

    @property
    def violation(self) -> bool:
        """The target does not conform (a check failed or a defect was found)."""
        return self.verdict == VIOLATION

    @property
    def exit_code(self) -> int:
        """0 conforms, 1 does not conform, 3 inconclusive."""
        return EXIT_CODES[self.verdict]

    def as_dict(self) -> dict[str, Any]:
        """The JSON report."""
        return {
            "verdict": self.verdict,
            "reason": self.reason,
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
            "seconds": round(self.seconds, 3),
            "findings": [f.as_dict() for f in self.findings],
            "seed": self.seed,
        }

    def summary(self) -> str:
        """A human-readable report; the first line is the verdict."""
        label = {
            VIOLATION: "DOES NOT CONFORM",
            NO_VIOLATION: "conforms",
            INCONCLUSIVE: "INCONCLUSIVE",
        }[self.verdict]
        lines = [
            f"verdict     {label} ({self.seconds:.2f} s)",
            f"reason      {self.reason}",
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
                f"(claimed {self.claimed_epsilon})"
            )
        elif self.structure == "differs":
            lines.append(f"implied ε   none: {_differs(self.reference)}")
        for f in self.findings:
            lines.append(f"FINDING     {f}")
        return "\n".join(lines)


def _differs(reference: str | None) -> str:
    return f"noise structure differs from {reference}: no ε implied"


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
@dataclass(frozen=True, eq=False)
class _Recovery:
    """Exact node recovery ``z = R_used⁻¹ y − (Ax)_used`` for an invertible plan."""

    nodes: IntArray
    """Used nodes, in release order (the solve order)."""
    Ru: sp.csr_matrix
    """R restricted to those nodes (T × T)."""
    triangular: bool
    """Lower triangular with nonzero diagonal (sparse triangular solve)."""

    def noise(self, Y: FloatArray, node_values: FloatArray) -> FloatArray:
        """Recovered node noise, shape (runs, T)."""
        if self.triangular:
            V = spla.spsolve_triangular(self.Ru, Y.T, lower=True)
        else:
            V = np.linalg.solve(self.Ru.toarray(), Y.T)
        out: FloatArray = np.asarray(V).T - node_values[self.nodes]
        return out


def _recovery(plan: LinearPlan) -> _Recovery | None:
    used = used_nodes(plan)
    T = plan.horizon
    if used.size != T:
        return None
    order = used[np.argsort(plan.hi[used], kind="stable")]
    Ru = sp.csr_matrix(plan.R()[:, order])
    upper = sp.triu(Ru, k=1)
    upper.eliminate_zeros()
    diag = Ru.diagonal()
    if upper.nnz == 0 and np.all(diag != 0):
        return _Recovery(order, Ru, True)
    if T <= 2048:
        dense = Ru.toarray()
        if np.linalg.matrix_rank(dense) == T:
            return _Recovery(order, Ru, False)
    return None


def _levels(plan: LinearPlan, nodes: IntArray) -> tuple[IntArray, list[str]]:
    """Group nodes by (scale, ⌊log₂ length⌋): a group index per node and labels."""
    length = plan.hi[nodes] - plan.lo[nodes] + 1
    lvl = np.floor(np.log2(length)).astype(np.int64)
    key = plan.scale_idx[nodes] * 64 + lvl
    uniq, inv = np.unique(key, return_inverse=True)
    labels = []
    for k in uniq.tolist():
        s, lv = divmod(int(k), 64)
        b = plan.scale_table[s]
        size = f"length {1 << lv}" if lv == 0 else f"length {1 << lv}–{(1 << (lv + 1)) - 1}"
        labels.append(f"nodes of {size}, scale {b}")
    return np.asarray(inv, dtype=np.int64).ravel(), labels


def _implied_epsilon(
    plan: LinearPlan, nodes: IntArray, group: IntArray, ratios: FloatArray
) -> float:
    """``max_i Σ_n |a_{n,i}|Δ/(ρ_{g(n)} b_n)`` over the used nodes (float estimate)."""
    per_node = np.array([float(e) for e in plan.per_node_epsilon()], dtype=np.float64)
    eps_n = np.zeros(plan.n_nodes)
    with np.errstate(divide="ignore"):
        eps_n[nodes] = per_node[nodes] / ratios[group]
    A = abs(plan.A())
    sums = np.asarray(A.T @ eps_n, dtype=np.float64)
    return float(sums.max())


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
        causality by replay (which also tests determinism given the rng).
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
    """
    start = time.perf_counter()
    tgt, T, n, a, dom = _conform_options(
        target,
        reference,
        horizon=horizon,
        runs=runs,
        alpha=alpha,
        domain=domain,
        timeout=timeout,
    )
    gen = seeded(seed)
    x = _test_stream(stream, T, dom, gen)
    checks = [_crashes(tgt, T, dom, gen)]
    if reference is None:
        checks.append(_causality(tgt, x, dom, gen))
        return _conform_report(tgt, None, T, 0, 0.0, checks, None, seed, start)
    a_stat = a / _N_STAT_CHECKS
    bar = Progress(total=n, enabled=progress, unit="runs")
    Y = _main_sample(tgt, x, n, gen, bar)
    bar.close()
    checks.append(_causality(tgt, x, dom, gen))
    if isinstance(Y, Finding):
        stat = _StatChecks.not_run(Y, a_stat)
    else:
        stat = _statistical_checks(Y, x, reference, T, a_stat)
    checks += stat.checks
    return _conform_report(tgt, reference, T, n, a, checks, stat, seed, start)


_NOT_DEFECTS = ("not-deterministic", "timeout")
"""Findings that are not defects of the target: they leave checks untested."""


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
    verdict, reason = _verdict(checks, findings, reference, structure, stat)
    return ConformReport(
        target=tgt.name,
        reference=None if reference is None else repr(reference),
        horizon=T,
        runs=n,
        alpha=a,
        conforms=verdict == NO_VIOLATION,
        checks=checks,
        noise_scale_ratio=None if stat is None else stat.ratio_info,
        implied_epsilon=None if stat is None else stat.implied,
        claimed_epsilon=None if reference is None else reference.declared_epsilon,
        seconds=time.perf_counter() - start,
        findings=findings,
        seed=seed if isinstance(seed, int | type(None)) else repr(seed),
        verdict=verdict,
        reason=reason,
        structure=structure,
    )


def _verdict(
    checks: list[Check],
    findings: list[Finding],
    reference: Mechanism | None,
    structure: str,
    stat: _StatChecks | None,
) -> tuple[str, str]:
    """``violation`` when a check failed or the target showed a defect (exception, wrong
    length, bad, non-finite or input-mutating output) — proven whatever else happened;
    else ``inconclusive`` when a check could not run because of the target (time-out,
    not deterministic given its rng, main sample lost); else ``no-violation-found``."""
    failed = [c.name for c in checks if c.passed is False]
    defects = sorted({f.kind for f in findings if f.kind not in _NOT_DEFECTS})
    untested = [c.name for c in checks if c.passed is None and c.detail.startswith("not ")]
    untested = [u for u in untested if not _is_limitation(checks, u)]
    ref = "" if reference is None else repr(reference)
    if failed or defects:
        parts = []
        if failed:
            parts.append("failed: " + ", ".join(failed))
        if defects:
            parts.append("target defects: " + ", ".join(defects))
        text = "; ".join(parts)
        if structure == "differs":
            text += (
                f". {_differs(ref)}. Established: the target is not {ref} (its recovered "
                "node noise is not independent Laplace noise on the reference's nodes). "
                "Not established: whether it is ε-DP — less variance than the reference is "
                "not a violation (`dpref audit` tests privacy)"
            )
        elif stat is not None and stat.implied is not None:
            e = stat.implied
            beyond = "above" if e["low"] > e["claimed"] else "consistent with more than"
            text += (
                f". Its noise is the reference's structure at a smaller scale: implied "
                f"ε = {e['estimate']:.5g} [{e['low']:.5g}, {e['high']:.5g}], {beyond} the "
                f"claimed {e['claimed']:g}"
            )
        elif structure == "untested" and reference is not None and "noise-scale" in failed:
            text += ". The noise structure could not be tested: no ε implied"
        return VIOLATION, text
    why = [f"{f.kind} ({f})" for f in findings if f.kind in _NOT_DEFECTS]
    if untested or why:
        return INCONCLUSIVE, (
            "not tested: "
            + (", ".join(untested) or "part of the run")
            + (" — " + "; ".join(why) if why else "")
            + "; nothing that ran failed"
        )
    if reference is None:
        return NO_VIOLATION, (
            "reference-free: ran at every probe horizon with outputs of the right length, "
            "deterministic given its rng and causal by replay; noise and ε were not tested "
            "(give a reference)"
        )
    limits = [c.name for c in checks if c.passed is None]
    return NO_VIOLATION, (
        f"every check passed at false-alarm rate {_alpha_of(checks):g}"
        + (f" ({', '.join(limits)} not applicable: see its line)" if limits else "")
        + "; conformance is evidence, not a proof of ε-DP"
    )


def _is_limitation(checks: list[Check], name: str) -> bool:
    """A check skipped because of the reference (not the target): not a reason for doubt."""
    c = next(c for c in checks if c.name == name)
    return c.detail.startswith("not run: R ") or c.detail.startswith("not run: the reference")


def _alpha_of(checks: list[Check]) -> float:
    return sum(c.alpha for c in checks)


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
    if n < 20:
        raise ParameterError(f"runs={n}: must be >= 20")
    alpha = _DEFAULT_ALPHA if alpha is None else alpha
    a = float(alpha)
    if isinstance(alpha, bool) or not 0 < a < 1:
        raise ParameterError(f"alpha={fmt(alpha)}: must be in (0, 1)")
    if reference.horizon is not None and reference.horizon < T:
        raise ParameterError(f"horizon={T}: exceeds the reference's horizon={reference.horizon}")
    return tgt, T, n, a, reference.domain


def _test_stream(stream: Any, T: int, domain: Domain, gen: np.random.Generator) -> FloatArray:
    """The given stream (checked against the domain), else a random one."""
    if stream is None:
        return _random_stream(T, domain, gen)
    x = domain.check_stream("stream", stream)
    if x.size != T:
        raise ParameterError(f"stream: length {x.size}, expected horizon={T}")
    return x


def _crashes(tgt: Target, T: int, domain: Domain, gen: np.random.Generator) -> Check:
    """Run the target once at each of :func:`crash_horizons` on a random stream."""
    crash_fail: list[Finding] = []
    hs = crash_horizons(T)
    for h in hs:
        xs = _random_stream(h, domain, gen)
        try:
            y = tgt.call_once(xs, np.random.default_rng([h, int(gen.integers(2**32))]))
        except TargetFailure as exc:
            crash_fail.append(exc.finding)
            continue
        bad = np.flatnonzero(~np.isfinite(y))
        if bad.size:
            found = Finding("non-finite", f"output at t={bad[0] + 1} is {y[bad[0]]!r}", h)
            tgt.record(found)
            crash_fail.append(found)
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
    tgt: Target, x: FloatArray, n: int, gen: np.random.Generator, bar: Progress
) -> FloatArray | Finding:
    """``n`` runs of the target on the test stream, or what went wrong."""
    try:
        return tgt.sample(x, n, gen, bar.update)
    except TargetFailure as exc:
        return exc.finding


@dataclass(frozen=True)
class _StatChecks:
    """The statistical checks and the scale estimates they produced."""

    checks: list[Check]
    """unbiased, noise-law, noise-scale, variance."""
    ratio_info: dict[str, float] | None
    """Target/reference scale: estimate, low, high."""
    implied: dict[str, float] | None
    """The ε the estimated scales imply, when the target adds less noise."""
    structure: str = "untested"
    """``matches`` / ``differs`` / ``untested``: the noise-law verdict."""

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
    truth = reference.target(x)
    unbiased = _unbiased(Y, truth, a)
    plan = reference.plan(T)
    rec = _recovery(plan)
    ref_var = reference.variance(T)
    law, scale, ratio_info, implied = _law_and_scale(Y, x, plan, rec, ref_var, a, reference)
    _, ref_k4 = _step_cumulants(reference, plan)
    variance = _variance(Y, ref_var, ref_k4, a)
    structure = {True: "matches", False: "differs", None: "untested"}[law.passed]
    if law.passed is False:
        why = f"not judged: {_differs(repr(reference))}"
        scale = Check("noise-scale", None, scale.statistic, None, scale.interval, a, why)
        ratio_info, implied = None, None
        if variance.passed is False and math.isfinite(variance.statistic or 0.0):
            variance = Check(
                "variance",
                None,
                variance.statistic,
                variance.p_value,
                None,
                a,
                f"not judged: {variance.detail}, but the noise structure differs and less "
                "variance than the reference is not a violation",
            )
    return _StatChecks([unbiased, law, scale, variance], ratio_info, implied, structure)


def _law_and_scale(
    Y: FloatArray,
    x: FloatArray,
    plan: LinearPlan,
    rec: _Recovery | None,
    ref_var: FloatArray,
    a: float,
    reference: Mechanism,
) -> tuple[Check, Check, dict[str, float] | None, dict[str, float] | None]:
    """From the recovered node noise when it is recoverable and Laplace, else from variances
    (then the structure is untested and no ε is implied)."""
    if rec is not None and reference.noise == "laplace":
        return _noise_checks(Y, x, plan, rec, a, reference)
    why = (
        "R restricted to its used nodes is not invertible"
        if rec is None
        else "the reference uses discrete noise (KS needs a continuous law)"
    )
    law = Check("noise-law", None, None, None, None, a, f"not run: {why}")
    scale, ratio_info = _variance_scale(Y, ref_var, a)
    return law, scale, ratio_info, None


def _crash_detail(found: list[Finding]) -> str:
    """``exception at T = 1, 2, 4: IndexError: …`` grouped by what went wrong."""
    groups: dict[tuple[str, str], list[int]] = {}
    for f in found:
        groups.setdefault((f.kind, f.detail), []).append(f.horizon or 0)
    return "; ".join(
        f"{kind} at T = {', '.join(map(str, hs))}: {detail}"
        for (kind, detail), hs in groups.items()
    )


def _reflect(x: FloatArray, domain: Domain) -> FloatArray:
    """Change every item: ``lower + upper − x`` (bits: 1 − x); mid-points move to lower."""
    lo, hi = float(domain.lower), float(domain.upper)
    out = lo + hi - x
    same = out == x
    out[same] = lo if lo != x[same].max(initial=lo) else hi
    return out


def _causality(tgt: Target, x: FloatArray, ref: Domain, gen: np.random.Generator) -> Check:
    """Replay with the same seeds: outputs up to s must not see items after s."""
    T = x.size
    if T == 1:
        return Check("causality", True, None, None, None, 0.0, "T = 1: nothing to replay")
    seeds = [int(s) for s in gen.integers(0, 2**63 - 1, 2)]
    cuts = sorted({1, (T + 1) // 2, T - 1})
    try:
        for s0 in seeds:
            found = _replay(tgt, x, ref, s0, cuts)
            if found is not None:
                return found
    except TargetFailure as exc:
        return Check("causality", None, None, None, None, 0.0, f"not run: {exc.finding}")
    return Check(
        "causality",
        True,
        None,
        None,
        None,
        0.0,
        f"outputs up to s unchanged when items after s = {', '.join(map(str, cuts))} "
        f"change ({len(seeds)} seeds; deterministic given the rng)",
    )


def _replay(tgt: Target, x: FloatArray, ref: Domain, s0: int, cuts: list[int]) -> Check | None:
    """One seed: the verdict when determinism or causality fails, else None."""
    T = x.size
    y1 = tgt.call_once(x, np.random.default_rng(s0))
    y2 = tgt.call_once(x, np.random.default_rng(s0))
    if not np.array_equal(y1, y2, equal_nan=True):
        return _not_deterministic(tgt, y1, y2, T)
    flipped = _reflect(x, ref)
    for s in cuts:
        x_alt = x.copy()
        x_alt[s:] = flipped[s:]
        y3 = tgt.call_once(x_alt, np.random.default_rng(s0))
        tol = 1e-9 * (1.0 + np.abs(y1[:s]))
        bad = np.flatnonzero(~(np.abs(y3[:s] - y1[:s]) <= tol))
        if bad.size:
            t = int(bad[0]) + 1
            return Check(
                "causality",
                False,
                float(abs(y3[t - 1] - y1[t - 1])),
                None,
                None,
                0.0,
                f"the output at t={t} changed (by {abs(y3[t - 1] - y1[t - 1]):.3g}) "
                f"when only items after s={s} changed, with the same rng seed",
            )
    return None


def _not_deterministic(tgt: Target, y1: FloatArray, y2: FloatArray, T: int) -> Check:
    """Record the finding that two runs with one seed differ; causality is then untestable."""
    same = (y1 == y2) | (np.isnan(y1) & np.isnan(y2))  # exactly what array_equal compared
    t = int(np.flatnonzero(~same)[0]) + 1
    tgt.record(
        Finding(
            "not-deterministic",
            f"two runs with the same rng seed differ at t={t}: the target "
            "draws randomness from somewhere other than its rng",
            T,
        )
    )
    return Check(
        "causality",
        None,
        None,
        None,
        None,
        0.0,
        "not testable by replay: the target is not deterministic given its rng "
        f"(two runs with the same seed differ at t={t})",
    )


def _unbiased(Y: FloatArray, truth: FloatArray, a: float) -> Check:
    N, T = Y.shape
    err = Y - truth
    mean = err.mean(axis=0)
    sd = err.std(axis=0, ddof=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        tstat = mean / (sd / math.sqrt(N))
    tstat = np.where(sd > 0, tstat, np.where(np.abs(mean) > 1e-9, np.inf, 0.0))
    tstat = np.where(np.isfinite(mean), tstat, np.inf)
    p = 2 * stats.t.sf(np.abs(tstat), N - 1)
    k = int(np.argmin(p))
    p_adj = min(1.0, float(p[k]) * T)
    passed = p_adj >= a
    detail = (
        f"mean error consistent with 0 at all {T} steps (largest |t| = {abs(tstat[k]):.3g} "
        f"at t={k + 1})"
        if passed
        else f"biased at t={k + 1}: mean error {mean[k]:.4g} (t = {tstat[k]:.3g})"
    )
    return Check("unbiased", passed, float(abs(tstat[k])), p_adj, None, a, detail)


def _noise_checks(
    Y: FloatArray,
    x: FloatArray,
    plan: LinearPlan,
    rec: _Recovery,
    a: float,
    ref: Mechanism,
) -> tuple[Check, Check, dict[str, float], dict[str, float] | None]:
    """Law (structure) and scale of the recovered node noise, and the ε its scales imply
    when the law passes."""
    node_values = plan.node_values(x)
    Z = rec.noise(Y, node_values)
    b = plan.scales[rec.nodes]
    U = Z / b
    group, labels = _levels(plan, rec.nodes)
    fit = _fit_scales(np.abs(np.where(np.isfinite(U), U, 0.0)), group, len(labels), a)
    law = _noise_law(U, group, labels, fit, a)
    scale = _noise_scale(fit, labels, a)
    implied = _implied_by_fit(plan, rec.nodes, group, fit, ref) if law.passed else None
    return law, scale, {"estimate": fit.est, "low": fit.lo, "high": fit.hi}, implied


def _noise_law(
    U: FloatArray, group: IntArray, labels: list[str], fit: _ScaleFit, a: float
) -> Check:
    """Is the recovered node noise independent Laplace on the reference's nodes, with one
    scale per level?  (The scale itself is the noise-scale check.)

    Two tests at ``a/2`` each: Kolmogorov–Smirnov of ``u / ρ̂_level`` against ``Lap(1)``
    (the shape; estimating the scales makes KS conservative), and an exact sign test of
    independence between every pair of nodes: under the null the signs of distinct
    nodes are independent fair coins, so the agreements of each pair over N runs are
    ``Bin(N, 1/2)`` exactly (Bonferroni over the pairs).
    """
    flat = U.ravel()
    if not np.isfinite(flat).all():
        return Check("noise-law", False, None, 0.0, None, a, "recovered node noise is not finite")
    dead = np.flatnonzero(fit.ratios <= 0)
    if dead.size:
        return Check(
            "noise-law",
            False,
            None,
            0.0,
            None,
            a,
            f"the recovered noise of the {labels[int(dead[0])]} is exactly 0 in every run",
        )
    ks = stats.kstest((U / fit.ratios[group]).ravel(), stats.laplace.cdf)
    p_ks = float(ks.pvalue)
    p_ind, worst = _sign_independence(U)
    p = min(1.0, 2 * min(p_ks, p_ind))
    passed = p >= a
    detail = (
        f"recovered node noise / fitted level scale ~ Lap(1): KS D = {ks.statistic:.3g} "
        f"over {flat.size:,} values (p = {min(1.0, 2 * p_ks):.3g}); signs of node pairs "
        f"independent (largest sign correlation {worst:.3g}, p = {min(1.0, 2 * p_ind):.3g})"
    )
    if not passed:
        detail += " — not independent Laplace noise on the reference's nodes"
    return Check("noise-law", passed, float(ks.statistic), p, None, a, detail)


def _sign_independence(U: FloatArray) -> tuple[float, float]:
    """Bonferroni p-value of the exact pairwise sign test, and the largest |sign correlation|."""
    N, T = U.shape
    if T < 2:
        return 1.0, 0.0
    S = np.sign(U).astype(np.float32)  # ±1; sums of ≤ 2^24 of them are exact in float32
    C = np.abs(S.T @ S)
    np.fill_diagonal(C, 0.0)
    m = int(C.max())  # |agreements − disagreements|
    pairs = T * (T - 1) // 2
    if m == 0:
        return 1.0, 0.0
    k = (N + m) // 2  # agreements ≥ k, or ≤ N − k
    p_one = float(stats.binom.sf(k - 1, N, 0.5))
    return min(1.0, 2 * p_one * pairs), m / N


@dataclass(frozen=True, eq=False)
class _ScaleFit:
    """Scale ratio (target/reference) estimates and intervals: pooled, then per level."""

    est: float
    lo: float
    hi: float
    ratios: FloatArray
    """Per level (the pooled values when there is one level)."""
    lows: FloatArray
    highs: FloatArray


def _fit_scales(absU: FloatArray, group: IntArray, G: int, a: float) -> _ScaleFit:
    """``mean |u|`` with its exact Gamma interval, pooled and (G > 1) per level; Bonferroni."""
    n_int = 1 + (G if G > 1 else 0)
    a_each = a / n_int
    total = float(absU.sum())
    count = int(absU.size)
    est = total / count
    lo, hi = exponential_scale_interval(total, count, a_each)
    ratios = np.full(G, est)
    lows = np.full(G, lo)
    highs = np.full(G, hi)
    if G > 1:
        per_run = absU.sum(axis=0)
        for g in range(G):
            cols = group == g
            tot_g = float(per_run[cols].sum())
            cnt_g = int(cols.sum()) * absU.shape[0]
            ratios[g] = tot_g / cnt_g
            lows[g], highs[g] = exponential_scale_interval(tot_g, cnt_g, a_each)
    return _ScaleFit(est, lo, hi, ratios, lows, highs)


def _noise_scale(fit: _ScaleFit, labels: list[str], a: float) -> Check:
    """Pass when the pooled and every per-level interval contain 1."""
    est, lo, hi = fit.est, fit.lo, fit.hi
    G = len(labels)
    bad: list[str] = []
    if not lo <= 1.0 <= hi:
        bad.append(f"overall ratio {est:.5f} [{lo:.5f}, {hi:.5f}]")
    if G > 1:
        for g in range(G):
            if not fit.lows[g] <= 1.0 <= fit.highs[g]:
                bad.append(
                    f"{labels[g]}: {fit.ratios[g]:.5f} [{fit.lows[g]:.5f}, {fit.highs[g]:.5f}]"
                )
    passed = not bad
    detail = (
        f"scale ratio target/reference = {est:.5f} [{lo:.5f}, {hi:.5f}]"
        + (f"; {G} levels each consistent with 1" if G > 1 and passed else "")
        + ("" if passed else "; off: " + "; ".join(bad[:4]))
    )
    return Check("noise-scale", passed, est, None, (lo, hi), a, detail)


def _implied_by_fit(
    plan: LinearPlan, nodes: IntArray, group: IntArray, fit: _ScaleFit, ref: Mechanism
) -> dict[str, float] | None:
    """The ε the fitted scales imply, when some level's interval lies below 1 (else None)."""
    G = fit.ratios.size
    est, ratios, lows, highs = fit.est, fit.ratios, fit.lows, fit.highs
    if bool(np.all((lows <= est) & (est <= highs))):
        # every level is consistent with one common ratio: use the pooled estimate
        ratios, lows, highs = np.full(G, est), np.full(G, fit.lo), np.full(G, fit.hi)
    if not bool(np.any(highs < 1.0)):
        return None
    eps = float(ref.declared_epsilon)
    return {
        "estimate": _implied_epsilon(plan, nodes, group, ratios),
        "low": _implied_epsilon(plan, nodes, group, np.minimum(highs, 1.0)),
        "high": _implied_epsilon(plan, nodes, group, np.maximum(lows, 1e-300)),
        "claimed": eps,
    }


def _variance_scale(Y: FloatArray, ref_var: FloatArray, a: float) -> tuple[Check, dict[str, float]]:
    """ρ² from per-step variances: per-run contributions are i.i.d., so a CLT interval.

    No ε is implied from it: without recovered node noise the structure is untested.
    """
    N = Y.shape[0]
    ok = ref_var > 0
    dev = (Y[:, ok] - Y[:, ok].mean(axis=0)) ** 2 / ref_var[ok]
    v = dev.mean(axis=1) * N / (N - 1)
    est2 = float(v.mean())
    se = float(v.std(ddof=1) / math.sqrt(N))
    zq = float(stats.norm.isf(a / 2))
    lo2, hi2 = max(est2 - zq * se, 0.0), est2 + zq * se
    est, lo, hi = math.sqrt(est2), math.sqrt(lo2), math.sqrt(hi2)
    passed = lo <= 1.0 <= hi
    detail = (
        f"scale ratio from per-step variances = {est:.5f} [{lo:.5f}, {hi:.5f}] "
        "(node noise not recoverable: structure untested, no ε implied)"
    )
    return (
        Check("noise-scale", passed, est, None, (lo, hi), a, detail),
        {"estimate": est, "low": lo, "high": hi},
    )


def _step_cumulants(ref: Mechanism, plan: LinearPlan) -> tuple[FloatArray, FloatArray]:
    """Per-step variance and fourth cumulant of the reference's noise, exactly as floats.

    ``y_t − (Qx)_t = Σ_n r_{t,n} z_n`` with independent node noise, so cumulants add:
    ``κ₂(t) = Σ r² κ₂(z_n)``, ``κ₄(t) = Σ r⁴ κ₄(z_n)``.  For ``Lap(b)``: ``κ₂ = 2b²``,
    ``κ₄ = 12b⁴``; for discrete Laplace they are summed from the pmf.
    """
    R = plan.R()
    scales = np.array([float(b) for b in plan.scale_table])
    if ref.noise == "laplace":
        k2 = 2 * scales**2
        k4 = 12 * scales**4
    else:
        k2 = np.empty(scales.size)
        k4 = np.empty(scales.size)
        for i, b in enumerate(scales):
            q = math.exp(-1.0 / b)
            zmax = math.ceil(45 * b) + 2  # q^zmax < e^-45
            z = np.arange(-zmax, zmax + 1, dtype=np.float64)
            pmf = (1 - q) / (1 + q) * q ** np.abs(z)
            m2 = float((pmf * z**2).sum())
            m4 = float((pmf * z**4).sum())
            k2[i], k4[i] = m2, m4 - 3 * m2 * m2
    node_k2 = k2[plan.scale_idx]
    node_k4 = k4[plan.scale_idx]
    R2 = R.multiply(R)
    return (
        np.asarray(R2 @ node_k2, dtype=np.float64),
        np.asarray(R2.multiply(R2) @ node_k4, dtype=np.float64),
    )


def _variance(Y: FloatArray, ref_var: FloatArray, ref_k4: FloatArray, a: float) -> Check:
    """One-sided test of each step's sample variance against the reference.

    Under conformance ``Var(s²) = κ₄/N + 2σ⁴/(N − 1)`` exactly, with the reference's
    σ² and κ₄ (not estimated from the sample, which would understate the spread
    exactly when s² is small).  The sample variance of sums of Laplace draws is
    right-skewed, so its lower tail is lighter than the normal one used here and the
    test is conservative.
    """
    N, T = Y.shape
    centred = Y - Y.mean(axis=0)
    s2 = (centred**2).sum(axis=0) / (N - 1)
    se = np.sqrt(np.maximum(ref_k4 / N + 2 * ref_var**2 / (N - 1), 0.0))
    with np.errstate(divide="ignore", invalid="ignore"):
        zs = (s2 - ref_var) / se
    exact_steps = np.flatnonzero((s2 <= 1e-12 * np.maximum(ref_var, 1e-300)) & (ref_var > 0))
    zs = np.where(se > 0, zs, np.where(s2 < ref_var, -np.inf, 0.0))
    p = stats.norm.cdf(zs)
    k = int(np.argmin(p))
    p_adj = min(1.0, float(p[k]) * T)
    if exact_steps.size:
        t = int(exact_steps[0]) + 1
        return Check(
            "variance",
            False,
            -math.inf,
            0.0,
            None,
            a,
            f"the output at t={t} has no noise at all (sample variance 0, reference "
            f"{ref_var[t - 1]:.4g})"
            + (f"; {exact_steps.size} such steps" if exact_steps.size > 1 else ""),
        )
    passed = p_adj >= a
    ratio = s2[k] / ref_var[k] if ref_var[k] > 0 else math.inf
    detail = (
        f"no step has less variance than the reference (lowest z = {zs[k]:.3g} at t={k + 1})"
        if passed
        else f"too little noise at t={k + 1}: variance {s2[k]:.4g} vs reference "
        f"{ref_var[k]:.4g} (ratio {ratio:.3g})"
    )
    return Check("variance", passed, float(zs[k]), p_adj, None, a, detail)
