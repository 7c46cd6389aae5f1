"""``dpref reproduce NAME --out DIR [--seed S] [--quick] [--json]`` and ``dpref reproduce
--list`` (docs/reproductions.md).

Every run writes ``DIR/<name>/*.csv``, ``DIR/<name>/*.png`` (with matplotlib) and
``DIR/<name>/summary.json``, and prints each experiment's headline numbers.  Without
matplotlib the CSVs and summaries are still written and one line says that figures need
``pip install 'dpref[plot]'``; the exit code is then still 0 (the data, the part the figures
are drawn from, is complete).  ``quantiles`` without datasketches is skipped the same way
(one line, exit 0, ``"skipped"`` in its summary).  Bad arguments are one line on stderr and
exit 2.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from dpref.reproduce import EXPERIMENTS

__all__ = ["DEFAULT_SEED", "add_parser", "main", "run", "run_experiment"]

DEFAULT_SEED = 0
"""The seed of the committed figures."""
MAX_SEED = 2**63 - 1


def add_parser(subparsers: Any) -> None:
    """Add the ``reproduce`` subcommand."""
    p = subparsers.add_parser(
        "reproduce",
        help="rerun a published experiment (counting, frontier, decayed, quantiles, all)",
        description="Rerun a published experiment and write its CSV files, figures and "
        "summary.json under DIR/NAME.",
    )
    p.add_argument(
        "name",
        nargs="?",
        default=None,
        help="the experiment: " + ", ".join(EXPERIMENTS) + ", or all (runs every one)",
    )
    p.add_argument("--out", default=None, help="output directory (created if missing)")
    p.add_argument(
        "--seed",
        default=str(DEFAULT_SEED),
        help=f"integer seed of every random draw (default {DEFAULT_SEED})",
    )
    p.add_argument(
        "--quick", action="store_true", help="smaller horizons and fewer trials (seconds)"
    )
    p.add_argument("--list", action="store_true", help="list the experiments and exit")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=run)


def _versions() -> dict[str, str | None]:
    from importlib.metadata import PackageNotFoundError, version

    import dpref

    out: dict[str, str | None] = {"dpref": dpref.__version__, "python": sys.version.split()[0]}
    for pkg in ("numpy", "scipy", "mpmath", "matplotlib", "datasketches"):
        try:
            out[pkg] = version(pkg)
        except PackageNotFoundError:
            out[pkg] = None
    return out


def _check(args: argparse.Namespace) -> tuple[list[str], Path, int]:
    from dpref.errors import ParameterError
    from dpref.validation import check_int_range, choose_from, fmt

    names = [*EXPERIMENTS, "all"]
    if args.name is None:
        raise ParameterError(
            f"name=None: give an experiment or --list; choose from {', '.join(names)}"
        )
    if args.name not in names:
        raise ParameterError(f"name={fmt(args.name)}: {choose_from(args.name, names)}")
    if args.out is None:
        raise ParameterError("out=None: give the output directory with --out DIR")
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise ParameterError(f"out={fmt(args.out)}: exists and is not a directory")
    text = str(args.seed).strip()
    if len(text) > 30 or not text.lstrip("+").isdigit():
        raise ParameterError(f"seed={fmt(args.seed)}: must be an integer in [0, 2^63 - 1]")
    seed = check_int_range("seed", int(text), 0, MAX_SEED)
    chosen = list(EXPERIMENTS) if args.name == "all" else [args.name]
    return chosen, out, seed


def run_experiment(name: str, out: Path, seed: int, quick: bool) -> dict[str, Any]:
    """Run one experiment into ``out/<name>``; return its summary (also written as
    ``summary.json``) with the printed lines under ``"lines"``."""
    import importlib

    from dpref.cli.outputs import io_error, output_lock, staged_dir, write_file
    from dpref.errors import ParameterError
    from dpref.reproduce.common import PLOT_HINT, Context, pyplot

    module = importlib.import_module(EXPERIMENTS[name][0])
    target = out / name
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ParameterError(f"out={str(out)!r}: cannot create it ({exc.strerror})") from None
    plots = pyplot() is not None
    # built beside out/<name> and swapped in whole: never a mix of two runs' files, and
    # a second run into the same place refuses instead of interleaving its bytes
    with output_lock(target, "out"), staged_dir(target, "out") as stage:
        ctx = Context(out=stage, seed=seed, quick=quick, plots=plots)
        start = time.perf_counter()
        try:
            outcome = module.run(ctx)
        except OSError as exc:
            raise io_error("out", target, exc) from None
        wall = time.perf_counter() - start
        lines = list(outcome.lines)
        if outcome.skipped is None and not plots:
            lines.append(f"  {PLOT_HINT} (the CSV files are written)")
        summary = {
            "experiment": name,
            "seed": seed,
            "quick": quick,
            "versions": _versions(),
            "parameters": outcome.parameters,
            "wall_time_s": round(wall, 2),
            "headline": outcome.headline,
            "files": sorted([*outcome.files, "summary.json"]),
            "skipped": outcome.skipped,
            "lines": lines,
        }
        text = json.dumps(summary, indent=2, ensure_ascii=False) + "\n"
        write_file(stage / "summary.json", text.encode("utf-8"), "out")
    return summary


def run(args: argparse.Namespace) -> int:
    """List the experiments, or run the chosen ones and print their headline numbers."""
    if args.list:
        width = max(len(n) for n in EXPERIMENTS)
        if args.json:
            print(json.dumps({"experiments": {n: d for n, (_, d) in EXPERIMENTS.items()}}))
        else:
            for n, (_, description) in EXPERIMENTS.items():
                print(f"{n:<{width}}  {description}")
        return 0
    chosen, out, seed = _check(args)
    summaries = []
    for name in chosen:
        summary = run_experiment(name, out, seed, bool(args.quick))
        summaries.append(summary)
        if not args.json:
            for line in summary["lines"]:
                print(line)
            print(
                f"  wrote {out / name}/: {', '.join(summary['files'])} "
                f"in {summary['wall_time_s']:.1f} s",
                flush=True,
            )
    if args.json:
        print(json.dumps({"out": str(out), "experiments": summaries}, ensure_ascii=False))
    return 0


def main(argv: list[str] | None = None) -> int:
    """Run ``dpref reproduce`` without the installed entry point (``python -m
    dpref.reproduce.cli``)."""
    from dpref.cli.common import run_standalone

    return run_standalone("reproduce", add_parser, argv)


if __name__ == "__main__":
    sys.exit(main())
