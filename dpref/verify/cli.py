"""``dpref verify``: the command that runs every suite (the main job)."""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import sys
import time
from fractions import Fraction
from typing import Any, TextIO

from dpref.cli.outputs import output_lock, remove
from dpref.validation import check_choice, check_int_range
from dpref.verify import MAX_JOBS, Part, VerifyOptions, VerifyRow, default_jobs, run_verify
from dpref.verify.certificate import (
    build_certificate,
    check_writable,
    proof_kinds_line,
    write_certificate,
)

__all__ = ["add_parser", "run"]

DESCRIPTION = """\
Run every check dpref knows and print one row per mechanism and suite: the proofs of
each declared budget, the exact plan checks for every horizon T up to --max-horizon
(and a few random larger T), agreement of the batch, plan and online paths, the golden
vectors, a quick audit and self-conformance test of every mechanism with Laplace and
with Gaussian noise, and the quantile sanitizer's checks. Rows run in --jobs worker
processes and are printed in a fixed order; the rows are the same for any number of
jobs (only their seconds differ). On a terminal a progress bar is shown on stderr.
Exits 1 if any check fails, 2 on bad input (an unwritable --out file is refused before
anything runs)."""


def add_parser(subparsers: Any) -> None:
    """Add the ``verify`` subcommand."""
    p = subparsers.add_parser(
        "verify",
        help="run every check dpref knows (the main job)",
        description=DESCRIPTION,
    )
    p.add_argument(
        "--max-horizon",
        type=int,
        default=256,
        help="check every horizon T from 1 to this exactly (1 to 4096; default %(default)s)",
    )
    p.add_argument(
        "--random-horizons",
        type=int,
        default=4,
        help="how many random larger T to check per mechanism (default %(default)s)",
    )
    p.add_argument(
        "--seed",
        type=int,
        default=20261122,
        help="seed of every random choice; each row is seeded from it alone (default %(default)s)",
    )
    p.add_argument(
        "--mechanism",
        action="append",
        help="check only this mechanism (repeatable; default: all of them)",
    )
    p.add_argument(
        "--jobs",
        type=int,
        default=default_jobs(),
        help=f"worker processes running the rows (1 to {MAX_JOBS}; "
        "default %(default)s, the smaller of 2 and the number of CPUs)",
    )
    p.add_argument(
        "--out",
        metavar="FILE",
        help="also write the certificate of the run: Markdown to FILE (e.g. cert.md) and "
        "JSON to the same name with the suffix .json",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=run)


HEADER = (
    f"{'suite':<14} {'mechanism':<26} {'checks':>7} {'declared ε':>10} "
    f"{'proven sum':>10}  status  seconds"
)


def run(args: argparse.Namespace) -> int:
    """Run every suite and print the table (or one JSON object); 1 if any check failed."""
    from dpref.mechanisms import MECHANISMS

    opts = VerifyOptions(
        max_exhaustive=args.max_horizon,
        random_horizons=args.random_horizons,
        seed=args.seed,
        mechanisms=tuple(args.mechanism or ()),
    )
    for name in opts.mechanisms:
        check_choice("--mechanism", name, tuple(MECHANISMS))
    jobs = check_int_range("--jobs", args.jobs, 1, MAX_JOBS)
    with contextlib.ExitStack() as stack:
        if args.out is not None:
            md, js = check_writable(args.out)
            stack.enter_context(output_lock(md, "--out"))  # a concurrent run refuses
            remove(md, "--out")  # an interrupted or failed run leaves no old certificate
            remove(js, "--out")
        return _run(args, opts, jobs)


def _run(args: argparse.Namespace, opts: VerifyOptions, jobs: int) -> int:
    """The run itself (``--out`` checked, locked and cleared)."""
    started = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    start = time.perf_counter()
    show = _Table(sys.stdout, _Progress.for_stream(sys.stderr, jobs))
    if not args.json:
        show.line(HEADER)
    try:
        rows = run_verify(
            opts,
            progress=None if args.json else show.row,
            jobs=jobs,
            started=show.progress.start,
            finished=show.progress.done,
            heartbeat=show.progress.refresh,
        )
    finally:
        show.progress.close()
    wall = time.perf_counter() - start
    failed = [r for r in rows if r.failed]
    written = None
    if args.out is not None:  # before anything is printed: --json stays one object
        cert = build_certificate(rows, opts, jobs=jobs, started=started, wall_seconds=wall)
        written = write_certificate(cert, args.out)
    if args.json:
        print(json.dumps({"passed": not failed, "rows": [r.as_dict() for r in rows]}))
    else:
        verdict = "FAILED" if failed else "all passed"
        kinds_line = proof_kinds_line(rows)
        if kinds_line is not None:
            print(kinds_line)
        print(f"{sum(r.checks for r in rows)} checks in {len(rows)} rows: {verdict}")
        if written is not None:
            print(f"certificate: {written[0]} and {written[1]}")
    return 1 if failed else 0


def _short(value: str) -> str:
    """Long exact fractions are shown as ≈ a float (JSON keeps them exact)."""
    if len(value) <= 10 or "/" not in value:
        return value
    try:
        return f"≈{float(Fraction(value)):.6g}"
    except (ValueError, ZeroDivisionError, OverflowError):
        return value[:9] + "…"


def format_row(row: VerifyRow) -> list[str]:
    """One row of the table (and its first failure on a second line)."""
    lines = [
        f"{row.suite:<14} {row.mechanism:<26} {row.checks:>7} "
        f"{_short(row.declared_epsilon):>10} {_short(row.proven_sum):>10}  "
        f"{row.status:<6} {row.seconds:>8.2f}"
    ]
    if row.failed:
        lines.append(f"    {row.detail}")
    return lines


class _Progress:
    """The progress display on stderr: a tqdm bar over the parts of the run (tqdm is the
    ``audit`` extra) or, without tqdm, one status line rewritten in place.  Only on a
    terminal; otherwise every method does nothing (CI logs and ``--json`` stay clean)."""

    def __init__(self, stream: TextIO | None, jobs: int) -> None:
        self.stream = stream
        self.jobs = jobs
        self.todo: list[Part] = []
        self.finished: set[int] = set()
        self.bar: Any = None
        self.start_time = time.perf_counter()

    @classmethod
    def for_stream(cls, stream: TextIO, jobs: int) -> _Progress:
        """A display on ``stream`` when it is a terminal, else a silent one."""
        try:
            tty = stream.isatty()
        except (AttributeError, ValueError):
            tty = False
        return cls(stream if tty else None, jobs)

    def start(self, todo: list[Part]) -> None:
        """The run's parts are known."""
        if self.stream is None:
            return
        self.todo = todo
        try:
            from tqdm import tqdm
        except ImportError:
            self.refresh()
            return
        tqdm.monitor_interval = 0  # no monitor thread: the workers may be forked later
        self.bar = tqdm(total=len(todo), file=self.stream, unit="part", leave=False)
        self.refresh()

    def done(self, part: Part) -> None:
        """A part finished."""
        if self.stream is None:
            return
        self.finished.add(next(i for i, p in enumerate(self.todo) if p is part))
        if self.bar is not None:
            self.bar.update(1)
        self.refresh()

    def _running(self) -> str:
        """The parts running now: the first ``jobs`` unfinished ones (the pool runs
        them in order)."""
        left = [p.label for i, p in enumerate(self.todo) if i not in self.finished]
        return ", ".join(left[: self.jobs])

    def refresh(self) -> None:
        """Redraw (also called about twice a second while parts run)."""
        if self.stream is None or not self.todo:  # nothing to show before the run starts
            return
        running = self._running()
        if self.bar is not None:
            self.bar.set_postfix_str(running, refresh=False)
            self.bar.refresh()
            return
        elapsed = time.perf_counter() - self.start_time
        status = f"verify: {len(self.finished)}/{len(self.todo)} parts, {elapsed:.0f} s"
        self.stream.write(f"\r\033[K{status}" + (f" — {running}" if running else ""))
        self.stream.flush()

    def clear(self) -> None:
        """Take the display off the screen (before a line of the table is printed)."""
        if self.stream is None or not self.todo:
            return
        if self.bar is not None:
            self.bar.clear()
        else:
            self.stream.write("\r\033[K")
            self.stream.flush()

    def close(self) -> None:
        """Remove the display for good."""
        if self.stream is None:
            return
        if self.bar is not None:
            self.bar.close()
            self.bar = None
        else:
            self.clear()
        self.stream = None


class _Table:
    """The table on stdout, printed around the progress display."""

    def __init__(self, out: TextIO, progress: _Progress) -> None:
        self.out = out
        self.progress = progress

    def line(self, text: str) -> None:
        """Print one line of the table."""
        self.progress.clear()
        self.out.write(text + "\n")
        self.out.flush()
        self.progress.refresh()

    def row(self, row: VerifyRow) -> None:
        """Print one row (and its failure)."""
        for text in format_row(row):
            self.line(text)
