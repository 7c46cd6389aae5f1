"""``dpref verify``: the main job — every check dpref knows, in one table.

A suite is a function ``(VerifyOptions) -> list[VerifyRow]``.  Subsystems register
their suites in the ``dpref.verify_suites`` entry-point group of ``pyproject.toml`` (names
``NN-label`` fix the order; the proofs run first); this package names none of them,
so it depends on no subsystem.  The suites today: ``proofs`` (:mod:`proofs.cli`),
``plans`` and ``agreement`` (:mod:`dpref.verify.plans`), ``golden``
(:mod:`dpref.verify.golden`), ``audit`` and ``audit-gaussian`` (:mod:`dpref.audit.suite`)
and ``sanitize`` (:mod:`dpref.sanitize.suite`).

A suite marked :func:`splittable` declares how its work divides into independent
parts (for most suites: one part per mechanism, :func:`by_mechanism`); :func:`run_verify`
runs the parts in ``jobs`` worker processes and returns the rows in the fixed suite
order.  Every part seeds its own generators from :attr:`VerifyOptions.seed`, so the rows
are the same for any ``jobs`` (only their ``seconds`` differ).
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

from dpref.plugins import VERIFY, load, ordered
from dpref.validation import check_int_range

__all__ = [
    "SUITES",
    "Part",
    "Suite",
    "VerifyOptions",
    "VerifyRow",
    "by_mechanism",
    "default_jobs",
    "parts",
    "run_verify",
    "splittable",
    "suite_specs",
]


MAX_EXHAUSTIVE = 4096
"""Largest ``--max-horizon``: verify checks every T from 1 to it."""
MAX_RANDOM_HORIZONS = 1000
"""Most random larger horizons per mechanism."""
MAX_RANDOM_T = 1 << 16
"""Largest random horizon."""
MAX_JOBS = 64
"""Most worker processes of one verify run."""


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
        # every T up to max_horizon is checked exactly (O(T) each, O(T²) in all); the
        # bounds keep a run to minutes, and refuse what numpy cannot even allocate
        check_int_range("max_horizon", self.max_exhaustive, 1, MAX_EXHAUSTIVE)
        check_int_range("random_horizons", self.random_horizons, 0, MAX_RANDOM_HORIZONS)
        check_int_range("random_max", self.random_max, 1, MAX_RANDOM_T)
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


Suite = Callable[[VerifyOptions], list[VerifyRow]]
Splitter = Callable[[Suite, VerifyOptions], list["Part"]]
_S = TypeVar("_S", bound=Callable[..., Any])


def splittable(split: Splitter) -> Callable[[_S], _S]:
    """Mark a suite as divisible: ``split(suite, opts)`` gives the parts whose runs, in
    order, produce exactly the rows of ``suite(opts)`` (each part seeded from its options
    alone, never from what ran before it in the same process).  The suite is returned
    unchanged (it stays importable and picklable by name)."""

    def mark(suite: _S) -> _S:
        setattr(suite, "split", split)  # noqa: B010 - a plain attribute on a function
        return suite

    return mark


def by_mechanism(suite: Suite, opts: VerifyOptions) -> list[Part]:
    """One part per mechanism (the registered ones, or those ``opts`` names): the
    splitter of a suite that checks each mechanism on its own."""
    from dpref.mechanisms import MECHANISMS

    names = opts.mechanisms or tuple(MECHANISMS)
    return [Part(suite, replace(opts, mechanisms=(name,))) for name in names]


@dataclass(frozen=True)
class Part:
    """One unit of a verify run: a function ``(VerifyOptions) -> list[VerifyRow]`` and the
    options it runs with."""

    suite: Suite
    """The function (module level, so that a worker process finds it by name)."""
    opts: VerifyOptions
    """Its options (for a part of a split suite: narrowed to this part)."""
    name: str = ""
    """What a progress display calls it (default: the function's name and mechanisms)."""

    @property
    def label(self) -> str:
        """Short text for a progress display."""
        if self.name:
            return self.name
        name = getattr(self.suite, "__name__", "suite").removesuffix("_suite")
        return f"{name} {','.join(self.opts.mechanisms)}".strip()


def parts(suites: Sequence[Suite], opts: VerifyOptions) -> list[Part]:
    """The parts of a run, in row order."""
    out: list[Part] = []
    for suite in suites:
        split: Splitter | None = getattr(suite, "split", None)
        out.extend(split(suite, opts) if split is not None else [Part(suite, opts)])
    return out


def default_jobs() -> int:
    """``min(2, os.cpu_count())``: the worker processes of a run unless told."""
    return max(1, min(2, os.cpu_count() or 1))


def suite_specs() -> list[str]:
    """The registered suites as ``module:function``, in the order they run."""
    return [ep.value for ep in ordered(VERIFY)]


def __getattr__(name: str) -> Any:
    if name == "SUITES":  # computed on use: reading the entry points costs a little
        return suite_specs()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def run_verify(
    opts: VerifyOptions | None = None,
    progress: Callable[[VerifyRow], None] | None = None,
    *,
    jobs: int = 1,
    suites: Sequence[Suite] | None = None,
    started: Callable[[list[Part]], None] | None = None,
    finished: Callable[[Part], None] | None = None,
    heartbeat: Callable[[], None] | None = None,
) -> list[VerifyRow]:
    """Run every registered suite (or ``suites``); the rows in suite order.

    ``jobs`` worker processes (1 … :data:`MAX_JOBS`; 1: all in this process) run the
    parts; ``progress`` is called with each row, in row order, as soon as it and every
    row before it are done.  ``started`` is called once with every part before any runs,
    ``finished`` with each part as it completes (in completion order) and, with worker
    processes, ``heartbeat`` about twice a second while they run: hooks for a progress
    display.
    """
    opts = opts or VerifyOptions()
    jobs = check_int_range("jobs", jobs, 1, MAX_JOBS)
    todo = parts(load(VERIFY) if suites is None else suites, opts)
    if started is not None:
        started(todo)
    results: list[list[VerifyRow] | None] = [None] * len(todo)
    shown = 0

    def deliver(index: int, rows: list[VerifyRow]) -> None:
        nonlocal shown
        results[index] = rows
        if finished is not None:
            finished(todo[index])
        while shown < len(todo) and results[shown] is not None:
            for row in results[shown] or []:
                if progress is not None:
                    progress(row)
            shown += 1

    if jobs == 1 or len(todo) <= 1:
        for i, part in enumerate(todo):
            deliver(i, _run_part(part))
    else:
        _run_parallel(todo, min(jobs, len(todo)), deliver, heartbeat)
    return [row for rows in results for row in rows or []]


def _run_part(part: Part) -> list[VerifyRow]:
    """The part's rows; a part that raises is one failed row naming the error.

    The options were validated before any part runs (the mechanism names included), so an
    exception inside a check is the checked code failing — a mechanism whose plan cannot be
    built, a declaration that divides by zero — and is reported as such, with the rest of
    the table, rather than ending the run (^C and SIGTERM still end it)."""
    try:
        return part.suite(part.opts)
    except Exception as exc:
        name = getattr(part.suite, "__name__", "suite").removesuffix("_suite")
        subject = ",".join(part.opts.mechanisms) or "all"
        detail = f"the check raised {type(exc).__name__}: {exc}"
        return [VerifyRow(name, subject, 1, 1, detail=" ".join(detail.split())[:2000])]


def _run_parallel(
    todo: list[Part],
    jobs: int,
    deliver: Callable[[int, list[VerifyRow]], None],
    heartbeat: Callable[[], None] | None,
) -> None:
    """Run the parts in ``jobs`` processes, forked where the platform allows (the workers
    then start with the modules this process has loaded), else spawned."""
    method = "fork" if "fork" in multiprocessing.get_all_start_methods() else None
    context = multiprocessing.get_context(method)
    with ProcessPoolExecutor(jobs, mp_context=context, initializer=_worker_init) as pool:
        index: dict[Future[list[VerifyRow]], int] = {}
        try:  # submitting is inside: the workers start with the first part, and a ^C that
            # lands while the others are submitted must not fall to the pool's own exit,
            # which waits for every running part to finish
            for i, part in enumerate(todo):
                index[pool.submit(_run_part, part)] = i
            pending: set[Future[list[VerifyRow]]] = set(index)
            while pending:
                done, pending = wait(pending, timeout=0.5, return_when=FIRST_COMPLETED)
                if heartbeat is not None and not done:
                    heartbeat()
                for future in sorted(done, key=index.__getitem__):
                    deliver(index[future], future.result())
        except BaseException:  # a failed part, ^C or SIGTERM: start nothing more, and
            # end the running parts now (shutdown alone waits for them to finish)
            for proc in list((getattr(pool, "_processes", None) or {}).values()):
                with contextlib.suppress(OSError, ValueError, AttributeError):
                    proc.kill()
            pool.shutdown(wait=False, cancel_futures=True)
            raise


def _worker_init() -> None:
    """In each pool worker: die with the process that runs verify (``PR_SET_PDEATHSIG``,
    Linux), so that a SIGKILLed ``dpref verify`` leaves no worker computing on."""
    try:
        import ctypes
        import signal

        ctypes.CDLL(None).prctl(1, int(signal.SIGKILL), 0, 0, 0)
    except (OSError, AttributeError):
        pass
