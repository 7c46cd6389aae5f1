"""Audit a target at many horizons: ``dpref audit TARGET --epsilon E`` without ``--horizon``.

A bug in a continual-release counter often shows at a few horizons only: a Binary tree
that counts its levels as ``⌈log₂T⌉`` is exactly right at T = 5 or 100, under-noised at
every power of two and noiseless at T = 1; a block size ``⌊√T⌋`` slips at squares, an
off-by-one at ``2^k ± 1``.  An auditor who does not know which horizon to try sweeps
them: :data:`GRID` (the classic failure points) plus :data:`RANDOM_HORIZONS` horizons
drawn from a stated seed, in increasing order, within a stated time budget.

At each horizon the **exact** audit (:func:`~dpref.audit.injected.structural.exact_audit`) runs
when the target's noise can be recorded (a built-in mechanism, or a black box drawing
its noise from the generator it is given); when it cannot — the exact audit is
``unavailable`` because the target draws from a law dpref does not script, uses
randomness dpref does not control, or reads what the recording generator lacks — the
**sampled** audit (:func:`~dpref.audit.pure.loss.audit`) runs at that horizon instead, and at
every later one when the reason is the target's way of drawing noise.

One row per horizon; the verdict is ``violation`` when any horizon shows one (a proven
violation stays proven, even in a sweep cut short), else ``inconclusive`` when any
horizon is inconclusive or was not tested (the budget ran out: the sweep is marked
``partial``), else ``no-violation-found``.  Exit codes as everywhere
(docs/auditing.md §5): 0, 1, 3; a sweep stopped by SIGINT / SIGTERM exits 130 / 143
after printing its partial report.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np

from dpref.audit.reports.deadline import OutOfTime, budget, current, exit_code_of, stopped_text
from dpref.errors import DprefError, ParameterError
from dpref.report_html import HtmlSummary
from dpref.validation import check_int_range

__all__ = [
    "DEFAULT_MAX_SECONDS",
    "DEFAULT_SEED",
    "GRID",
    "RANDOM_HORIZONS",
    "RANDOM_RANGE",
    "KeptWorker",
    "SweepReport",
    "SweepRow",
    "audit_sweep",
    "run_sweep",
    "sweep_horizons",
]

GRID = (1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 64, 100, 128)
"""The classic failure points: T = 1 (a single node), small T, and both sides of the
powers of two (``⌈log₂T⌉`` vs ``⌊log₂T⌋ + 1``, ``2^k ± 1`` off-by-ones)."""
RANDOM_HORIZONS = 3
"""How many random horizons the sweep adds (drawn from the stated seed)."""
RANDOM_RANGE = (10, 128)
"""The random horizons are uniform on this range (inclusive), outside :data:`GRID`."""
DEFAULT_SEED = 0
"""The seed of a sweep when ``--seed`` is not given (stated in the report)."""
DEFAULT_MAX_SECONDS = 600.0
"""The sweep's time budget when ``--max-seconds`` is not given."""

RECORDING_KINDS = frozenset({"non-laplace", "mixed-noise", "unknown-attribute", "not-reproducible"})
"""Findings of an exact audit that say the target's *way of drawing noise* cannot be
recorded: the sweep uses the sampled audit at this horizon and every later one."""

NOT_TESTED = "not tested"


def sweep_horizons(
    seed: int, grid: Sequence[int] = GRID, extra: int = RANDOM_HORIZONS
) -> list[int]:
    """:data:`GRID` and ``extra`` distinct random horizons on :data:`RANDOM_RANGE` outside it
    (``numpy.random.default_rng(seed)``), in increasing order."""
    gen = np.random.default_rng(seed)
    lo, hi = RANDOM_RANGE
    pool = [t for t in range(lo, hi + 1) if t not in grid]
    picks = gen.choice(len(pool), size=min(extra, len(pool)), replace=False)
    return sorted({*grid, *(pool[int(i)] for i in picks)})


@dataclass(frozen=True, kw_only=True)
class SweepRow:
    """The audit at one horizon."""

    horizon: int
    """T."""
    method: str
    """``exact``, ``sampled`` or ``not tested``."""
    verdict: str | None
    """The horizon's verdict (None: not tested, or stopped before it ended)."""
    result: str
    """The number it rests on: ``ε = 4/3``, ``μ² = 1``, ``ε ≥ 1.2514``; or why none."""
    detail: str
    """The exact outcome, the sampled reason, or why it was not tested."""
    seconds: float
    """Seconds this horizon took."""
    report: Any = field(default=None, repr=False)
    """The horizon's full report (:class:`~dpref.audit.injected.structural.StructuralReport` or
    :class:`~dpref.audit.pure.loss.AuditReport`; None when not tested)."""

    def as_dict(self) -> dict[str, Any]:
        """One row of the JSON ``rows`` list (the full report under ``report``)."""
        return {
            "horizon": self.horizon,
            "method": self.method,
            "verdict": self.verdict,
            "result": self.result,
            "detail": self.detail,
            "seconds": self.seconds,
            "report": None if self.report is None else self.report.as_dict(),
        }


@dataclass(kw_only=True)
class SweepReport(HtmlSummary):
    """The outcome of a horizon sweep: one row per horizon and one verdict."""

    target: str
    """The target's name."""
    claim: str
    """The claim audited, in words (``ε = 1``, ``ρ = 1/2``)."""
    seed: int
    """The seed of the random horizons and of every audit."""
    max_seconds: float | None
    """The time budget (None: none)."""
    horizons: list[int]
    """Every horizon planned, in order."""
    rows: list[SweepRow]
    """One row per planned horizon (``not tested`` for those the sweep did not reach)."""
    stopped_by: str | None = None
    """``max-seconds``, ``SIGINT`` or ``SIGTERM`` when the sweep was cut short (partial)."""
    seconds: float = 0.0
    """Wall time."""

    @property
    def partial(self) -> bool:
        """Whether the sweep was stopped before every planned horizon was audited."""
        return self.stopped_by is not None

    @property
    def verdict(self) -> str:
        """``violation`` if any horizon shows one; else ``inconclusive`` if any horizon
        is inconclusive or untested; else ``no-violation-found``."""
        verdicts = [r.verdict for r in self.rows]
        if "violation" in verdicts:
            return "violation"
        if self.partial or any(v != "no-violation-found" for v in verdicts):
            return "inconclusive"
        return "no-violation-found"

    @property
    def reason(self) -> str:
        """The verdict in words."""
        bad = [r.horizon for r in self.rows if r.verdict == "violation"]
        open_ = [r.horizon for r in self.rows if r.verdict == "inconclusive"]
        untested = [r.horizon for r in self.rows if r.verdict is None]
        n, tested = len(self.rows), len(self.rows) - len(untested)
        missing = f"; not tested: T = {_ts(untested)}" if untested else ""
        if self.stopped_by is not None:
            missing += f" ({stopped_text(self.stopped_by, self.max_seconds)})"
        if bad:
            return f"violation at T = {_ts(bad)} ({tested} of {n} horizons audited){missing}"
        if open_ or untested:
            what = f"inconclusive at T = {_ts(open_)}" if open_ else "no violation found"
            return (
                f"{what} ({tested} of {n} horizons audited){missing}; nothing was proven "
                "wrong at the horizons audited"
            )
        return (
            f"no violation at any of the {n} horizons; an audit can refute a claim, never "
            "prove it, and horizons outside the grid were not audited"
        )

    @property
    def exit_code(self) -> int:
        """0, 1 or 3 by the verdict; 130 / 143 when stopped by SIGINT / SIGTERM."""
        if self.stopped_by in ("SIGINT", "SIGTERM"):
            return exit_code_of(self.stopped_by)
        return {"violation": 1, "inconclusive": 3}.get(self.verdict, 0)

    def as_dict(self) -> dict[str, Any]:
        """The JSON object ``--json`` prints."""
        return {
            "verdict": self.verdict,
            "reason": self.reason,
            "mode": "sweep",
            "partial": self.partial,
            "stopped_by": self.stopped_by,
            "target": self.target,
            "claim": self.claim,
            "seed": self.seed,
            "max_seconds": self.max_seconds,
            "horizons": list(self.horizons),
            "not_tested": [r.horizon for r in self.rows if r.verdict is None],
            "rows": [r.as_dict() for r in self.rows],
            "seconds": self.seconds,
        }

    def summary(self) -> str:
        """The text report: verdict and reason first, then the table."""
        head = {
            "violation": "VIOLATION: the target is not private at some horizon",
            "inconclusive": "INCONCLUSIVE: the target could not be audited at every horizon",
            "no-violation-found": "no violation found",
        }[self.verdict]
        budget_text = "none" if self.max_seconds is None else f"{self.max_seconds:g} s"
        random_ones = [t for t in self.horizons if t not in GRID]
        lines = [
            f"verdict     {head} ({self.seconds:.1f} s)",
            f"reason      {self.reason}",
            f"target      {self.target}",
            f"claimed     {self.claim}",
            f"horizons    {len(self.horizons)}: the grid {_ts(list(GRID))} and "
            f"{len(random_ones)} random ({_ts(random_ones) or 'none'}, seed {self.seed})",
            f"budget      {budget_text}",
        ]
        if self.partial:
            cut = stopped_text(self.stopped_by or "", self.max_seconds)
            lines.append(f"partial     yes — {cut}")
        lines.append(f"{'T':>5}  {'method':<11} {'verdict':<20} {'result':<24} detail")
        for r in self.rows:
            verdict = r.verdict or "—"
            lines.append(f"{r.horizon:>5}  {r.method:<11} {verdict:<20} {r.result:<24} {r.detail}")
        return "\n".join(lines)


def _untested(T: int, detail: str) -> SweepRow:
    return SweepRow(
        horizon=T, method=NOT_TESTED, verdict=None, result="—", detail=detail, seconds=0.0
    )


def _ts(hs: list[int]) -> str:
    return ", ".join(map(str, hs))


def _short(q: Fraction) -> str:
    """A rational for a table cell: exact when short, else 10 significant digits."""
    if q.denominator < 10**6 and abs(q.numerator) < 10**9:
        return str(q)
    return f"{float(q):.10g}"


def exact_row(T: int, r: Any, seconds: float) -> SweepRow:
    """A row from an exact audit's :class:`~dpref.audit.injected.structural.StructuralReport`."""
    if r.outcome == "unavailable":
        kinds = sorted({f.kind for f in r.findings})
        return SweepRow(
            horizon=T,
            method="exact",
            verdict=r.verdict,
            result="unavailable",
            detail="unavailable: " + ", ".join(kinds),
            seconds=seconds,
            report=r,
        )
    if r.privacy == "pure":
        value = "∞" if r.infinite else _short(r.epsilon_stated)
        result = f"ε = {value}"
    else:
        value = "∞" if r.mu_infinite else _short(r.mu_squared_stated)
        result = f"μ² = {value}"
    if r.item is not None and r.verdict == "violation":
        result += f" (item t={r.item})"
    return SweepRow(
        horizon=T,
        method="exact",
        verdict=r.verdict,
        result=result,
        detail=r.outcome,
        seconds=seconds,
        report=r,
    )


def sampled_row(T: int, a: Any, seconds: float, why: str = "") -> SweepRow:
    """A row from a sampled audit's :class:`~dpref.audit.pure.loss.AuditReport`."""
    if a.privacy == "pure":
        lb = a.epsilon_lower_bound
        result = "no bound" if lb is None else f"ε ≥ {lb:.4f}"
    else:
        lb = a.mu_lower_bound
        result = "no bound" if lb is None else f"μ ≥ {lb:.4f}"
    detail = f"confidence {a.confidence:g}, {a.samples:,} samples per side"
    if a.findings:
        detail += "; findings: " + ", ".join(sorted({f.kind for f in a.findings}))
    if why:
        detail += f" ({why})"
    return SweepRow(
        horizon=T,
        method="sampled",
        verdict=a.verdict,
        result=result,
        detail=detail,
        seconds=seconds,
        report=a,
    )


@dataclass
class _State:
    """The sweep so far (read by the snapshot when the run is stopped)."""

    rows: list[SweepRow] = field(default_factory=list)
    current: int | None = None
    current_start: float = 0.0
    exact_ok: bool = True
    why_sampled: str = ""


def run_sweep(
    *,
    target: str,
    claim: str,
    exact: Callable[[int], Any] | None,
    sampled: Callable[[int], Any] | None,
    seed: Any = None,
    horizons: Sequence[int] | None = None,
    max_seconds: float | None = DEFAULT_MAX_SECONDS,
    clock: Callable[[], float] | None = None,
    use_current_budget: bool = False,
) -> SweepReport:
    """Audit at every horizon of :func:`sweep_horizons` (or ``horizons``) within
    ``max_seconds``.

    ``exact(T)`` returns an exact audit's report at T, ``sampled(T)`` a sampled audit's
    (at least one of them; None: that method is not used).  The exact audit is tried
    first; the sampled one runs where it is unavailable (module doc).  A budget that runs
    out — between horizons, or inside one through :mod:`dpref.audit.reports.deadline` — ends the
    sweep with a partial report: the horizon it stopped is ``not tested (stopped)`` and
    the rest ``not tested``.  ``clock`` replaces the monotonic clock (tests).  With
    ``use_current_budget`` the budget of the enclosing :func:`~dpref.audit.reports.deadline.budget`
    is used instead of a new one (the command line arms it, with its SIGALRM backstop,
    and prints :meth:`_State` via its snapshot on SIGINT / SIGTERM).
    """
    if exact is None and sampled is None:
        raise ParameterError("exact=None, sampled=None: give at least one way to audit")
    seed_ = DEFAULT_SEED if seed is None else check_int_range("seed", seed, 0, 2**63 - 1)
    if horizons is None:
        planned = sweep_horizons(seed_)
    else:
        planned = sorted({check_int_range("horizon", t, 1, 10**5) for t in horizons})
        if not planned:
            raise ParameterError("horizons=[]: give at least one horizon")
    state = _State(exact_ok=exact is not None)
    start = time.monotonic()

    def report(stopped_by: str | None) -> SweepReport:
        rows = list(state.rows)
        done = {r.horizon for r in rows}
        for T in planned:
            if T in done:
                continue
            detail = "the time budget ran out first"
            if T == state.current and stopped_by is not None:
                done_text = b.progress_text() if b.unit else "no progress counted"
                detail = f"stopped after {b.elapsed() - state.current_start:.1f} s: {done_text}"
            rows.append(_untested(T, detail))
        return SweepReport(
            target=target,
            claim=claim,
            seed=seed_,
            max_seconds=b.seconds,
            horizons=planned,
            rows=rows,
            stopped_by=stopped_by,
            seconds=time.monotonic() - start,
        )

    outer = current() if use_current_budget else None
    scope = budget(max_seconds, clock=clock) if outer is None else nullcontext(outer)
    with scope as b:
        b.snapshot = report
        try:
            for T in planned:
                b.check()
                state.current, state.current_start = T, b.elapsed()
                b.stage_name, b.unit, b.done, b.total = f"T={T}", "", 0, 0
                state.rows.append(_one(T, exact, sampled, state, b.elapsed))
            state.current = None
        except OutOfTime:
            return report("max-seconds")
    return report(None)


def _one(
    T: int,
    exact: Callable[[int], Any] | None,
    sampled: Callable[[int], Any] | None,
    state: _State,
    elapsed: Callable[[], float],
) -> SweepRow:
    """The row at T: the exact audit while the target's noise can be recorded, else sampled."""
    t0 = elapsed()
    why = state.why_sampled
    if exact is not None and state.exact_ok:
        try:
            r = exact(T)
        except DprefError as exc:  # beyond the exact audit's range (size, work)
            r, why = None, f"exact audit not run: {exc}"
        if r is not None:
            row = exact_row(T, r, elapsed() - t0)
            kinds = {f.kind for f in r.findings}
            if r.outcome != "unavailable" or sampled is None:
                return row
            why = "exact audit unavailable: " + ", ".join(sorted(kinds))
            if kinds & RECORDING_KINDS:
                state.exact_ok = False
                state.why_sampled = why
    if sampled is None:
        return _untested(T, why or "no method")
    a = sampled(T)
    return sampled_row(T, a, elapsed() - t0, why)


class KeptWorker:
    """One worker for the exact audits of every horizon of a third-party target.

    ``exact_audit`` neither starts nor ends a runner it is given, so the sweep does not
    pay a worker start (and the target's import) per horizon; a worker that dies or hangs
    is replaced on the next call, as within one exact audit.  :meth:`close` ends it."""

    def __init__(self, target: Any, *, protocol: str | None, timeout: float | None) -> None:
        from dpref.audit.isolation.runners import WorkerRunner

        spec, fn = (target, None) if isinstance(target, str) else (None, target)
        self.target = target
        self.inner = WorkerRunner(spec, fn, protocol, timeout)

    def __call__(self, stream: Any, script: Any) -> Any:
        """One scripted call (the runner protocol of :mod:`dpref.audit.isolation.runners`)."""
        return self.inner(stream, script)

    def exact_audit(self, T: int, **options: Any) -> Any:
        """``exact_audit(target, T, **options)`` through this worker; when the worker
        cannot be started, through the exact audit's own (whose report says why)."""
        from dpref.audit.injected.structural import exact_audit
        from dpref.audit.isolation.runners import CallFailure

        try:
            protocol = self.inner.start(T)
        except CallFailure:
            return exact_audit(self.target, T, **options)
        report = exact_audit(self.target, T, runner=self, **options)
        report.protocol, report.isolation = protocol, self.inner.isolation
        return report

    def close(self) -> None:
        """End the worker."""
        self.inner.close()


def audit_sweep(
    target: Any,
    *,
    epsilon: Any = None,
    rho: Any = None,
    mu: Any = None,
    method: str = "auto",
    horizons: Sequence[int] | None = None,
    seed: Any = None,
    max_seconds: float | None = DEFAULT_MAX_SECONDS,
    samples: Any = 200_000,
    timeout: float | None = 60.0,
) -> SweepReport:
    """The horizon sweep from Python: ``target`` (a ``"module:function"`` /
    ``"file.py:function"`` spec or a callable ``f(stream, rng)``, the same code at every T)
    audited for the claim ``epsilon`` (pure ε), ``rho`` (ρ-zCDP) or ``mu`` (μ-GDP) at
    every horizon of :func:`sweep_horizons` (or ``horizons``) within ``max_seconds``.

    ``method`` is ``"auto"`` (exact where the noise can be recorded, sampled elsewhere:
    module doc), ``"exact"`` or ``"sampled"``; ``samples`` and ``timeout`` go to the
    audits.  A built-in mechanism is fixed at one horizon, so it is swept from the
    command line (``dpref audit NAME --epsilon E``), which rebuilds it at every T.
    """
    from dpref.audit.pure.loss import audit
    from dpref.mechanisms import Mechanism
    from dpref.validation import check_choice

    method = check_choice("method", method, ("auto", "exact", "sampled"))
    if isinstance(target, Mechanism):
        raise ParameterError(
            f"target={target!r}: a built-in mechanism has one horizon; sweep it with "
            "`dpref audit NAME --epsilon E` (rebuilt at every T)"
        )
    seed_ = DEFAULT_SEED if seed is None else seed

    kept = KeptWorker(target, protocol=None, timeout=timeout)

    def exact(T: int) -> Any:
        return kept.exact_audit(T, epsilon=epsilon, rho=rho, mu=mu, seed=seed_, timeout=timeout)

    def sampled(T: int) -> Any:
        return audit(target, horizon=T, epsilon=epsilon, rho=rho, mu=mu, samples=samples,
                     seed=seed_, timeout=timeout, exact=False)  # fmt: skip

    name = target if isinstance(target, str) else getattr(target, "__qualname__", repr(target))
    claim = next(
        (f"{sym} = {v}" for sym, v in (("ε", epsilon), ("ρ", rho), ("μ", mu)) if v is not None),
        "none (the exact loss is reported, not judged)",
    )
    try:
        return run_sweep(
            target=str(name),
            claim=claim,
            exact=None if method == "sampled" else exact,
            sampled=None if method == "exact" else sampled,
            seed=seed_,
            horizons=horizons,
            max_seconds=max_seconds,
        )
    finally:
        kept.close()
