"""Time budgets and interrupts: stop a long audit and report what it did (issue 25, item 7).

A run of ``dpref audit`` or ``dpref conform`` under :func:`budget` can be stopped three
ways: its time budget (``--max-seconds``) runs out, SIGINT (^C) or SIGTERM.  Either way
the command prints the report *so far* — marked ``partial``, verdict ``inconclusive`` —
instead of nothing, and exits 3 (budget), 130 (SIGINT) or 143 (SIGTERM).

How a run notices the budget:

* **cooperatively**, between batches of calls: the sampling loops report their progress
  through :class:`~dpref.audit.reports.progress.Progress`, whose ``update`` calls :func:`tick`;
  :func:`tick` (and :func:`checkpoint`) raise :class:`OutOfTime` once the budget is
  spent.  A batch of calls is short (the sampler sizes it to ~0.25 s), so the run stops
  cleanly between two of them;
* **as a backstop**, for work that has no such loop (a crash probe, an exact audit's
  probes, a target call that hangs for up to its ``--timeout``): on the command line
  (``alarm=True``, main thread, POSIX) a real-time timer raises :class:`OutOfTime` in the
  main thread :data:`ALARM_GRACE` seconds after the deadline, the way SIGTERM raises
  :class:`dpref.cli.Terminated` — every ``finally`` runs, worker processes are killed.

:class:`OutOfTime` derives from :class:`BaseException` (like :class:`KeyboardInterrupt`),
so no ``except Exception`` in the code that wraps a target turns it into a finding.

The report so far is built by whoever knows most about the run: a command registers a
``snapshot`` on the :class:`Budget` (the horizon sweep: its finished rows); otherwise the
budget's own record — the progress counted by :func:`tick`, the stage set by
:func:`stage` — goes into a :class:`PartialReport`.  A partial report never says more
than was established: its verdict is always ``inconclusive``.
"""

from __future__ import annotations

import contextlib
import math
import signal
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from dpref.errors import ParameterError
from dpref.validation import fmt

__all__ = [
    "ALARM_GRACE",
    "MAX_SECONDS",
    "Budget",
    "OutOfTime",
    "PartialReport",
    "budget",
    "check_max_seconds",
    "checkpoint",
    "finish",
    "stage",
    "stop_cause",
    "stoppable",
    "tick",
    "watch",
]

MAX_SECONDS = 7 * 86_400.0
"""Largest time budget, seconds (a week)."""
ALARM_GRACE = 0.5
"""Seconds after the deadline at which the backstop timer interrupts work that did not
reach a cooperative check (a call of the target, an exact audit's probes)."""
EXIT_BUDGET, EXIT_SIGINT, EXIT_SIGTERM = 3, 130, 143
"""Exit codes of a stopped run: inconclusive (the budget), 128 + 2, 128 + 15."""


class OutOfTime(BaseException):
    """The time budget ran out (raised by :func:`tick`, :func:`checkpoint` or the timer)."""


def check_max_seconds(name: str, value: Any) -> float | None:
    """``value`` as a budget in seconds: None (no budget) or a finite number in
    ``(0, MAX_SECONDS]``; else a :class:`~dpref.errors.ParameterError` naming ``name``."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ParameterError(f"{name}={fmt(value)}: must be a number of seconds")
    v = float(value)
    if not (math.isfinite(v) and 0 < v <= MAX_SECONDS):
        raise ParameterError(
            f"{name}={value:g}: must be > 0 and at most {MAX_SECONDS:,.0f} seconds"
        )
    return v


@dataclass(kw_only=True)
class Budget:
    """The time budget of one run and the record of what it has done (mutable)."""

    seconds: float | None
    """The budget (None: no limit; the record is still kept for an interrupt)."""
    clock: Callable[[], float] = time.monotonic
    """The clock (injectable: tests advance a fake one instead of waiting)."""
    start: float = 0.0
    """``clock()`` when the budget started."""
    done: int = 0
    """Units of work done so far (samples, runs: what :func:`tick` counted)."""
    total: int = 0
    """Units of work the current stage plans (0: unknown)."""
    unit: str = ""
    """What the units are (``samples``, ``runs``)."""
    stage_name: str = ""
    """What the run is doing now (:func:`stage`)."""
    checks_done: tuple[str, ...] = ()
    """The checks the run has finished, one line each (:func:`stage`)."""
    finished: bool = False
    """The run ended and its report is being printed: a late stop is no longer a partial
    report (:func:`finish`)."""
    watched: Any = field(default=None, repr=False)
    """The target whose findings a partial report lists (:func:`watch`)."""
    disarm: Callable[[], None] | None = field(default=None, repr=False)
    """Cancels the backstop timer (None: not armed)."""
    snapshot: Callable[[str], Any] | None = field(default=None, repr=False)
    """Builds the report so far, given the cause (``max-seconds``, ``SIGINT``, ``SIGTERM``);
    registered by a command that knows more than the counts (the horizon sweep)."""

    def elapsed(self) -> float:
        """Seconds since the budget started."""
        return self.clock() - self.start

    def expired(self) -> bool:
        """Whether the budget is spent (never after :func:`finish`)."""
        return not self.finished and self.seconds is not None and self.elapsed() >= self.seconds

    def check(self) -> None:
        """Raise :class:`OutOfTime` when the budget is spent."""
        if self.expired():
            raise OutOfTime(f"the time budget of {self.seconds:g} s ran out")

    def progress_text(self) -> str:
        """What was done, in words (``40,000 of 400,000 samples``)."""
        if not self.unit:
            return "nothing counted"
        of = f" of {self.total:,} planned" if self.total else ""
        return f"{self.done:,}{of} {self.unit}"


_CURRENT: ContextVar[Budget | None] = ContextVar("dpref_audit_budget", default=None)


def current() -> Budget | None:
    """The budget of the run in progress (None: no run under :func:`budget`)."""
    return _CURRENT.get()


def checkpoint() -> None:
    """Raise :class:`OutOfTime` when the current run's budget is spent (no-op without one)."""
    b = _CURRENT.get()
    if b is not None:
        b.check()


def tick(n: int, *, total: int | None = None, unit: str | None = None) -> None:
    """Count ``n`` units of work done (``total``/``unit``: a new stage of that size), then
    :func:`checkpoint`.  Called by :class:`~dpref.audit.reports.progress.Progress`."""
    b = _CURRENT.get()
    if b is None:
        return
    if total is not None:
        b.total, b.done = total, 0
    if unit is not None:
        b.unit = unit
    b.done += n
    b.check()


def stage(name: str, done: Sequence[Any] = ()) -> None:
    """Name what the current run is doing and the checks it has finished (objects with
    ``name``, ``passed``, ``detail``: a partial report lists them), then :func:`checkpoint`."""
    b = _CURRENT.get()
    if b is not None:
        b.stage_name = name
        b.checks_done = tuple(
            f"{_PASS.get(c.passed, 'n/a '):4}  {c.name}  {c.detail}" for c in done
        )
        b.check()


_PASS = {True: "pass", False: "FAIL"}


@contextlib.contextmanager
def budget(
    seconds: float | None, *, clock: Callable[[], float] | None = None, alarm: bool = False
) -> Iterator[Budget]:
    """Run the body under a time budget of ``seconds`` (None: none, only the record).

    ``alarm=True`` also arms the backstop timer (``signal.setitimer``, only in the main
    thread where SIGALRM exists): :class:`OutOfTime` is raised :data:`ALARM_GRACE`
    seconds after the deadline wherever the main thread is.  The timer and the previous
    SIGALRM handler are restored when the body ends, however it ends.
    """
    b = Budget(seconds=seconds, clock=clock or time.monotonic)
    b.start = b.clock()
    token = _CURRENT.set(b)
    b.disarm = _arm(seconds) if alarm and seconds is not None else None
    try:
        yield b
    finally:
        if b.disarm is not None:
            b.disarm()
            b.disarm = None
        _CURRENT.reset(token)


def finish() -> None:
    """The run is over and its report about to be printed: cancel the timer, stop checking."""
    b = _CURRENT.get()
    if b is not None:
        b.finished = True
        if b.disarm is not None:
            b.disarm()
            b.disarm = None


def watch(target: Any) -> None:
    """List ``target``'s findings (``target.findings``) in a partial report of this run."""
    b = _CURRENT.get()
    if b is not None:
        b.watched = target


def _arm(seconds: float) -> Callable[[], None] | None:
    """Arm the SIGALRM backstop; return what disarms it (None: not available here)."""
    if (
        not hasattr(signal, "setitimer")
        or threading.current_thread() is not threading.main_thread()
    ):
        return None

    def ring(signum: int, frame: object) -> None:
        raise OutOfTime(f"the time budget of {seconds:g} s ran out")

    try:
        previous = signal.signal(signal.SIGALRM, ring)
    except (ValueError, OSError):
        return None
    signal.setitimer(signal.ITIMER_REAL, seconds + ALARM_GRACE)

    def disarm() -> None:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)

    return disarm


def stop_cause(exc: BaseException) -> str:
    """``max-seconds``, ``SIGTERM`` or ``SIGINT`` for the exception that stopped a run."""
    if isinstance(exc, OutOfTime):
        return "max-seconds"
    return "SIGTERM" if type(exc).__name__ == "Terminated" else "SIGINT"


def exit_code_of(cause: str) -> int:
    """3 for the budget, 130 for SIGINT, 143 for SIGTERM (docs/cli.md)."""
    return {"max-seconds": EXIT_BUDGET, "SIGTERM": EXIT_SIGTERM}.get(cause, EXIT_SIGINT)


def stopped_text(cause: str, seconds: float | None) -> str:
    """``the time budget (--max-seconds 5) ran out`` / ``interrupted by SIGINT``."""
    if cause == "max-seconds":
        return f"the time budget (--max-seconds {seconds:g}) ran out"
    return f"interrupted by {cause}"


@dataclass(frozen=True, kw_only=True)
class PartialReport:
    """The report so far of an ``audit`` or ``conform`` run that was stopped."""

    command: str
    """``audit``, ``audit --exact`` or ``conform``."""
    target: str
    """The target's name."""
    horizon: int | None
    """T (None: not fixed)."""
    claim: str
    """The claim or reference, in words (``ε = 1``, ``Binary(epsilon=1, horizon=64)``)."""
    cause: str
    """``max-seconds``, ``SIGINT`` or ``SIGTERM``."""
    max_seconds: float | None
    """The budget given (None: none)."""
    seconds: float
    """Seconds the run took until it stopped."""
    progress: str
    """What was done: ``40,000 of 400,000 samples``, or ``nothing counted``."""
    stage: str
    """What the run was doing (empty: not named)."""
    checks: tuple[str, ...] = ()
    """The checks finished before the stop, one line each (``pass  crashes  ran at …``)."""
    findings: tuple[Any, ...] = ()
    """The target's findings so far."""

    verdict = "inconclusive"
    """A stopped run established nothing: always ``inconclusive``."""

    @property
    def reason(self) -> str:
        """The verdict in words."""
        doing = f" during {self.stage}" if self.stage else ""
        failed = [c.split()[1] for c in self.checks if c.startswith("FAIL")]
        found = (
            f"before the stop, {', '.join(failed)} FAILED (the verdict of a complete run "
            "would say so); the rest was not established"
            if failed
            else "nothing was established"
        )
        return (
            f"stopped{doing} after {self.seconds:.1f} s "
            f"({stopped_text(self.cause, self.max_seconds)}); done: {self.progress}; {found}"
        )

    @property
    def exit_code(self) -> int:
        """3 (the budget), 130 (SIGINT), 143 (SIGTERM)."""
        return exit_code_of(self.cause)

    def as_dict(self) -> dict[str, Any]:
        """The JSON object ``--json`` prints."""
        return {
            "verdict": self.verdict,
            "reason": self.reason,
            "partial": True,
            "stopped_by": self.cause,
            "max_seconds": self.max_seconds,
            "command": self.command,
            "target": self.target,
            "horizon": self.horizon,
            "claim": self.claim,
            "progress": self.progress,
            "stage": self.stage or None,
            "checks_done": list(self.checks),
            "seconds": self.seconds,
            "findings": [str(f) for f in self.findings],
        }

    def summary(self) -> str:
        """The text report: the verdict and its reason first, as every audit report."""
        lines = [
            "verdict     INCONCLUSIVE: partial report, the run was stopped",
            f"reason      {self.reason}",
            f"partial     yes — {stopped_text(self.cause, self.max_seconds)}",
            f"command     dpref {self.command}",
            f"target      {self.target}",
        ]
        if self.horizon is not None:
            lines.append(f"horizon     T={self.horizon}")
        lines.append(f"claimed     {self.claim}")
        lines.append(f"progress    {self.progress}" + (f" ({self.stage})" if self.stage else ""))
        lines += [f"  {c}" for c in self.checks]
        lines += [f"FINDING     {f}" for f in self.findings]
        return "\n".join(lines)


# ----------------------------------------------------------------- the command line
def stoppable(
    command: str, default_seconds: Callable[[Any], float | None] | None = None
) -> Callable[[Callable[[Any], int]], Callable[[Any], int]]:
    """Decorate ``dpref audit`` / ``dpref conform``'s ``run(args) -> exit code``: run it
    under :func:`budget` (``args.max_seconds``, else ``default_seconds(args)``; the
    backstop armed) and, when it is stopped, print the report so far and return
    3 / 130 / 143.

    The command prints its own report through ``_emit``, which calls :func:`finish`
    first; a stop after that is no longer turned into a partial report (it re-raises:
    ^C while printing is the ordinary interrupt)."""

    def wrap(run: Callable[[Any], int]) -> Callable[[Any], int]:
        def stoppable_run(args: Any) -> int:
            seconds = check_max_seconds("--max-seconds", getattr(args, "max_seconds", None))
            if seconds is None and default_seconds is not None:
                seconds = default_seconds(args)
            with budget(seconds, alarm=True) as b:
                try:
                    return run(args)
                except (OutOfTime, KeyboardInterrupt) as exc:
                    if b.finished:
                        raise
                    cause = stop_cause(exc)
            return _print_partial(args, command, b, cause)

        stoppable_run.__doc__ = run.__doc__
        stoppable_run.__name__ = run.__name__
        return stoppable_run

    return wrap


def _print_partial(args: Any, command: str, b: Budget, cause: str) -> int:
    import json
    import sys

    if b.snapshot is not None:
        report = b.snapshot(cause)
    else:
        watched = b.watched
        report = PartialReport(
            command=command + (" --exact" if getattr(args, "exact", False) else ""),
            target=str(getattr(watched, "name", None) or args.target),
            horizon=getattr(args, "horizon", None),
            claim=_claim_text(args),
            cause=cause,
            max_seconds=b.seconds,
            seconds=b.elapsed(),
            progress=b.progress_text(),
            stage=b.stage_name,
            checks=b.checks_done,
            findings=tuple(getattr(watched, "findings", ()) or ()),
        )
    if cause != "max-seconds":
        sys.stderr.write(f"dpref: {stopped_text(cause, b.seconds)}: partial report printed\n")
    print(json.dumps(report.as_dict()) if getattr(args, "json", False) else report.summary())
    code: int = report.exit_code  # a sweep that proved a violation keeps exit 1 on the budget
    return code


def _claim_text(args: Any) -> str:
    """The claim of a command line in words: ``ε = 1``, ``ρ = 1/2 (reference binary)``."""
    parts = [
        f"{symbol} = {value}"
        for symbol, name in (("ε", "epsilon"), ("ρ", "rho"), ("μ", "mu"), ("δ", "delta"))
        if (value := getattr(args, name, None)) is not None
    ]
    text = ", ".join(parts) or "none given"
    reference = getattr(args, "reference", None)
    return text + (f" (reference {reference})" if reference else "")
