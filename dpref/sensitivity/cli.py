"""The ``dpref sensitivity`` subcommand: global sensitivity of a column (docs/spec.md §4).

``dpref sensitivity (--universe 1,2,3 | --csv FILE --column NAME) --size N --query Q
[--hamming K] [--model bounded|unbounded] [--universe-kind dataset|range] [--json]
[--plot FILE.png]``.  Errors are raised as :class:`~dpref.errors.DprefError`; the main CLI
prints them on one line and exits 2.
"""

from __future__ import annotations

import argparse
import json
import math
from fractions import Fraction
from typing import Any

from dpref.errors import ParameterError
from dpref.sensitivity.api import global_sensitivity
from dpref.sensitivity.queries import NOTEBOOK_QUERIES
from dpref.validation import parse_number_string

__all__ = ["add_parser", "run"]

DESCRIPTION = """\
Compute the global L1 sensitivity of a query over a column of values: the largest change
of the query's answer between two neighbouring datasets of N records drawn from the
universe (the values given with --universe, or one column of a CSV file), at Hamming
distance K. Bad input is one line on stderr and exit code 2."""


def add_parser(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add the ``sensitivity`` subcommand to ``subparsers``."""
    p = subparsers.add_parser(
        "sensitivity",
        help="global L1 sensitivity of a query (bounded/unbounded, Hamming distance k)",
        description=DESCRIPTION,
    )
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--universe", help="comma-separated values, e.g. 1,2,3,15")
    src.add_argument("--csv", help="a CSV file with a header row (use with --column)")
    p.add_argument("--column", help="the CSV column to use")
    p.add_argument("--size", type=int, required=True, help="release size n")
    p.add_argument("--query", required=True, help="count, sum, mean, median, var, std, ...")
    p.add_argument("--hamming", type=int, default=1, help="Hamming distance k (default 1)")
    p.add_argument(
        "--model",
        choices=("unbounded", "bounded"),
        default="unbounded",
        help="neighbouring datasets: unbounded (add or remove a record) or bounded (replace "
        "one) (default %(default)s)",
    )
    p.add_argument(
        "--universe-kind",
        choices=("dataset", "range"),
        default="dataset",
        help="dataset: the values given are the records that may occur, with repetition; "
        "range: every value between their minimum and maximum may occur (default %(default)s)",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument(
        "--plot",
        help="write sensitivity against Hamming distance to FILE.png (any matplotlib "
        "format; --size <= 200)",
    )
    p.set_defaults(func=run)


def _parse_number(text: str, where: str) -> Fraction:
    shown = text if len(text) <= 40 else text[:37] + "..."
    try:
        value = parse_number_string(where, text)  # bounded: "1e-999999999" hung in Fraction
        float(value)  # the sensitivity is a float: 1e400 is exact but has none
    except ParameterError as exc:
        raise ParameterError(f"{where}={shown!r}: {str(exc).split(': ', 1)[-1]}") from None
    except OverflowError:
        raise ParameterError(f"{where}={shown!r}: too large for a float") from None
    return value


def _load_values(args: argparse.Namespace) -> list[Fraction]:
    if args.universe is not None:
        parts = [t for t in args.universe.split(",") if t.strip()]
        if not parts:
            raise ParameterError(f"--universe={args.universe!r}: no values")
        return [_parse_number(t, "--universe") for t in parts]
    if not args.column:
        raise ParameterError(f"--column={args.column!r}: required with --csv")
    from dpref.cli.common import read_csv_column  # bounded; FIFOs and devices refused

    return [
        _parse_number(text, f"--csv row {line} {args.column}")
        for line, text in read_csv_column(args.csv, args.column, "--csv")
    ]


def _plot(path: str, values: list[Fraction], args: argparse.Namespace) -> None:
    from dpref.cli.common import pyplot_for

    plt = pyplot_for(path)
    ks = list(range(1, args.size + 1))
    fig, ax = plt.subplots(figsize=(9, 5))
    for q in NOTEBOOK_QUERIES:
        ys: list[float] = []
        for k in ks:
            try:
                ys.append(
                    global_sensitivity(
                        values,
                        size=args.size,
                        query=q,
                        hamming=k,
                        model=args.model,
                        universe=args.universe_kind,
                    )
                )
            except ParameterError:
                ys.append(math.nan)  # undefined (an empty neighbour)
        ax.plot(ks, ys, marker="o", label=q)
    ax.set_xlabel("Hamming distance k")
    ax.set_ylabel("global L1 sensitivity")
    ax.set_xticks(ks)
    ax.set_title(f"{args.model} sensitivity, {args.universe_kind} universe, n={args.size}")
    ax.legend(ncol=5, fontsize="small")
    fig.tight_layout()
    try:
        fig.savefig(path)
    except OSError as exc:
        raise ParameterError(f"--plot={path!r}: cannot write ({exc.strerror or exc})") from None
    finally:
        plt.close(fig)


MAX_PLOT_SIZE = 200
"""Largest ``--size`` with ``--plot``: one point per Hamming distance 1..n, per query."""


def run(args: argparse.Namespace) -> int:
    """Compute, print (text or JSON) and optionally plot; return the exit code."""
    if args.plot:
        if args.size > MAX_PLOT_SIZE:
            raise ParameterError(
                f"--size={args.size}: --plot draws every Hamming distance 1..size; "
                f"use --size <= {MAX_PLOT_SIZE} with --plot"
            )
        from dpref.cli.common import pyplot_for

        pyplot_for(args.plot)  # a bad --plot fails before the computation
    values = _load_values(args)
    value = global_sensitivity(
        values,
        size=args.size,
        query=args.query,
        hamming=args.hamming,
        model=args.model,
        universe=args.universe_kind,
    )
    if args.plot:
        _plot(args.plot, values, args)
    out: dict[str, Any] = {
        "sensitivity": value,
        "query": args.query,
        "size": args.size,
        "hamming": args.hamming,
        "model": args.model,
        "universe_kind": args.universe_kind,
        "universe": [float(v) for v in values],
    }
    if args.csv is not None:
        out["csv"] = args.csv
        out["column"] = args.column
    if args.plot:
        out["plot"] = args.plot
    if args.json:
        print(json.dumps(out))
    else:
        print(
            f"{args.model} global sensitivity of {args.query} "
            f"(n={args.size}, k={args.hamming}, {args.universe_kind} universe): {value!r}"
        )
        if args.plot:
            print(f"plot written to {args.plot}")
    return 0
