"""``dpref verify``: the command that runs every suite (the main job)."""

from __future__ import annotations

import argparse
import json
from fractions import Fraction
from typing import Any

from dpref.verify import VerifyOptions, VerifyRow, run_verify

__all__ = ["add_parser", "run"]


def add_parser(subparsers: Any) -> None:
    """Add the ``verify`` subcommand."""
    p = subparsers.add_parser("verify", help="run every check dpref knows (the main job)")
    p.add_argument("--max-horizon", type=int, default=256, help="check every T up to this")
    p.add_argument("--random-horizons", type=int, default=4, help="random larger T per mechanism")
    p.add_argument("--seed", type=int, default=20261122)
    p.add_argument("--mechanism", action="append", help="restrict to this mechanism (repeatable)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=run)


HEADER = (
    f"{'suite':<14} {'mechanism':<26} {'checks':>7} {'declared ε':>10} "
    f"{'proven sum':>10}  status  seconds"
)


def run(args: argparse.Namespace) -> int:
    """Run every suite and print the table (or one JSON object); 1 if any check failed."""
    opts = VerifyOptions(
        max_exhaustive=args.max_horizon,
        random_horizons=args.random_horizons,
        seed=args.seed,
        mechanisms=tuple(args.mechanism or ()),
    )
    if not args.json:
        print(HEADER)
    rows = run_verify(opts, progress=None if args.json else _show)
    failed = [r for r in rows if r.failed]
    if args.json:
        print(json.dumps({"passed": not failed, "rows": [r.as_dict() for r in rows]}))
    else:
        verdict = "FAILED" if failed else "all passed"
        print(f"{sum(r.checks for r in rows)} checks in {len(rows)} rows: {verdict}")
    return 1 if failed else 0


def _short(value: str) -> str:
    """Long exact fractions are shown as ≈ a float (JSON keeps them exact)."""
    if len(value) <= 10 or "/" not in value:
        return value
    try:
        return f"≈{float(Fraction(value)):.6g}"
    except (ValueError, ZeroDivisionError, OverflowError):
        return value[:9] + "…"


def _show(row: VerifyRow) -> None:
    """Print one row as it completes (and its first failure)."""
    print(
        f"{row.suite:<14} {row.mechanism:<26} {row.checks:>7} "
        f"{_short(row.declared_epsilon):>10} {_short(row.proven_sum):>10}  "
        f"{row.status:<6} {row.seconds:>8.2f}",
        flush=True,
    )
    if row.failed:
        print(f"    {row.detail}", flush=True)
