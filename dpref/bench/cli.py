"""``dpref bench``: run the benchmarks, print the table; exit 1 when a target is missed."""

from __future__ import annotations

import argparse
import json
import math
from typing import Any

from dpref.bench import Row, failed_targets, run_bench
from dpref.cli.common import cell

__all__ = ["add_parser", "run"]


def add_parser(subparsers: Any) -> None:
    """Add the ``bench`` subcommand."""
    p = subparsers.add_parser(
        "bench",
        help="speed and memory benchmarks, as ratios to baselines",
        description="Time the registered benchmarks and report each as a ratio to its "
        "baseline, so the numbers compare across machines; exits 1 if a benchmark misses "
        "its target.",
    )
    p.add_argument("--quick", action="store_true", help="smaller sizes (a smoke run)")
    p.add_argument("--only", default=None, help="run only benchmarks whose name contains this")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run and print; 0 when every target row is met, 1 otherwise (info rows never fail)."""
    rows = run_bench(quick=args.quick, only=args.only, progress=not args.json)
    missed = failed_targets(rows)
    if args.json:
        print(json.dumps({"rows": rows, "passed": not missed}))
    else:
        _print_table(rows)
        print(f"{len(rows)} rows: " + (f"{len(missed)} targets MISSED" if missed else "all met"))
    return 1 if missed else 0


def _ok(r: Row) -> str:
    if r.get("info"):
        return "info"
    return "yes" if r["ok"] else "NO"


def _print_table(rows: list[Row]) -> None:
    print(f"{'benchmark':<52} {'value':>12} {'baseline':>12} {'ratio':>8} {'target':>10}  ok")
    for r in rows:
        ratio = r.get("ratio")
        ratio_s = (
            f"{ratio:8.3f}" if isinstance(ratio, float) and math.isfinite(ratio) else f"{'-':>8}"
        )
        print(
            f"{r['name']:<52} {cell(r['value']):>12} {cell(r['baseline']):>12} {ratio_s} "
            f"{cell(r['target']):>10}  {_ok(r)}"
        )
        if r.get("detail"):
            print(f"    {r['detail']}")
