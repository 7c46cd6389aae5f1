"""``dpref golden export|check|schema|run``: golden vectors for implementers in other languages."""

from __future__ import annotations

import argparse
import gzip
import json
from typing import Any

from dpref.errors import ParameterError
from dpref.registry import mechanism_names
from dpref.validation import check_choice, fmt

__all__ = ["add_parser", "run"]


def add_parser(subparsers: Any) -> None:
    """Add the ``golden`` subcommand and its four actions."""
    p = subparsers.add_parser(
        "golden",
        help="golden vectors: export them, check them, print their JSON Schema, or run "
        "another implementation against them",
        description="Golden vectors: a stream and the node noise in canonical order, and the "
        "outputs dpref computes from them, for every mechanism and noise kind.",
    )
    sub = p.add_subparsers(
        dest="action", required=True, metavar="ACTION", help="one of the actions below"
    )

    e = sub.add_parser(
        "export",
        help="write the golden vectors to a file (or print them)",
        description="Compute the golden vectors of every mechanism and noise kind and write "
        "them to FILE (gzip-compressed when FILE ends in .gz), or print them.",
    )
    e.add_argument(
        "file",
        nargs="?",
        default=None,
        help="output file; a name ending in .gz is written gzip-compressed "
        "(default: print the JSON)",
    )
    e.add_argument(
        "--sample",
        action="store_true",
        help="write only the small sample of a few vectors (dpref/data/golden-sample.json)",
    )
    e.add_argument("--json", action="store_true", help="print one JSON object (file and count)")

    c = sub.add_parser(
        "check",
        help="check that a file of golden vectors matches this dpref",
        description="Recompute every vector of FILE (default: the shipped vectors) and "
        "report the first one whose outputs differ. Exit 0: all match; 1: a mismatch.",
    )
    c.add_argument(
        "file",
        nargs="?",
        default=None,
        help="the file, plain or gzip JSON (default: the vectors shipped with dpref)",
    )
    c.add_argument("--json", action="store_true", help="print one JSON object")

    sub.add_parser(
        "schema",
        help="print the JSON Schema (Draft 2020-12) of the golden file",
        description="Print the JSON Schema (Draft 2020-12) that every golden file follows.",
    )

    r = sub.add_parser(
        "run",
        help="run another implementation that accepts injected noise against the vectors",
        description="Call TARGET(stream, noise) once per selected vector, in a separate "
        "process, and compare its outputs with the vector's: bit for bit where the vector "
        "says exact_in_float, else within the tolerance. Exit 0: every vector matches; 1: a "
        "mismatch or a failure of the target (the first one is printed); 2: bad input.",
    )
    r.add_argument(
        "target",
        nargs="?",
        default=None,
        help="module:function or path/to/file.py:function, a Python function "
        "f(stream, noise) returning the T outputs",
    )
    r.add_argument(
        "--command",
        default=None,
        help="instead of TARGET: a command run once per vector; it reads the vector as JSON "
        "on stdin and writes its outputs as a JSON array on stdout",
    )
    r.add_argument(
        "--mechanism", default=None, help="only the vectors of this mechanism (default: all)"
    )
    r.add_argument(
        "--noise",
        default=None,
        choices=["laplace", "discrete", "gaussian", "discrete_gaussian"],
        help="only the vectors with this noise kind (default: all)",
    )
    r.add_argument(
        "--case", default=None, help="only the vectors whose case name matches this glob"
    )
    r.add_argument(
        "--param",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="only the vectors with this parameter value (also epsilon, rho, horizon); repeatable",
    )
    r.add_argument("--file", default=None, help="golden file to use (default: the shipped one)")
    r.add_argument(
        "--rtol",
        type=float,
        default=1e-12,
        help="relative tolerance where outputs need not be bit-exact (default 1e-12)",
    )
    r.add_argument(
        "--atol",
        type=float,
        default=1e-9,
        help="absolute tolerance added to it (default 1e-9)",
    )
    r.add_argument(
        "--precision",
        choices=["float64", "float32"],
        default="float64",
        help="tolerance preset: float64 (--rtol/--atol, bit-exact where exact_in_float) or "
        "float32 (a rigorous float32 rounding bound per output, nothing bit-exact); default "
        "float64",
    )
    r.add_argument(
        "--no-exact",
        action="store_true",
        help="compare every vector within the tolerance, also those marked exact_in_float "
        "(default: those must match bit for bit)",
    )
    r.add_argument(
        "--timeout",
        type=float,
        default=10.0,
        help="seconds one call may take before it is stopped and recorded (default 10)",
    )
    r.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Dispatch to the action; 1 on a mismatch, 2 on bad input (raised as a DprefError)."""
    action = {"export": _export, "check": _check, "schema": _schema, "run": _run}
    return action[args.action](args)


def _write(path: str, text: str) -> None:
    data = (text + "\n").encode()
    if path.endswith(".gz"):
        data = gzip.compress(data, compresslevel=9, mtime=0)
    from dpref.cli.outputs import output_lock, write_file

    with output_lock(path, "file"):  # whole or not at all: temporary file, then rename
        write_file(path, data, "file")


def _export(args: argparse.Namespace) -> int:
    from dpref.golden import golden_sample, golden_vectors

    doc = golden_sample() if args.sample else golden_vectors()
    compact = bool(args.file) and args.file.endswith(".gz")
    text = json.dumps(doc, separators=(",", ":")) if compact else json.dumps(doc, indent=1)
    if not args.file or args.file == "-":
        print(text)
        return 0
    _write(args.file, text)
    if args.json:
        print(json.dumps({"written": args.file, "vectors": len(doc["vectors"])}))
    else:
        print(f"wrote {len(doc['vectors'])} vectors to {args.file}")
    return 0


def _check(args: argparse.Namespace) -> int:
    from dpref.golden import check_golden, read_golden

    doc = read_golden(args.file)
    problems = check_golden(doc)
    if args.json:
        print(
            json.dumps(
                {"vectors": len(doc["vectors"]), "passed": not problems, "problems": problems}
            )
        )
    else:
        for p in problems:
            print(p)
        print(
            f"{len(doc['vectors'])} golden vectors: {'all match' if not problems else 'MISMATCH'}"
        )
    return 1 if problems else 0


def _schema(args: argparse.Namespace) -> int:
    from dpref.golden import load_schema

    print(json.dumps(load_schema(), indent=1, ensure_ascii=False))
    return 0


def _params(items: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ParameterError(f"--param={fmt(item)}: expected KEY=VALUE")
        out[key.strip().replace("-", "_")] = value.strip()
    return out


def _run(args: argparse.Namespace) -> int:
    from dpref.audit.conformance.golden_run import run_golden
    from dpref.golden import read_golden

    if args.mechanism is not None:  # a mistyped name is an error, not "no vector matches"
        check_choice("--mechanism", args.mechanism, tuple(mechanism_names()))
    doc = read_golden(args.file) if args.file else None
    result = run_golden(
        args.target,
        command=args.command,
        doc=doc,
        mechanism=args.mechanism,
        noise=args.noise,
        case=args.case,
        params=_params(args.param),
        rtol=args.rtol,
        atol=args.atol,
        exact=not args.no_exact,
        timeout=args.timeout,
        precision=args.precision,
    )
    if args.json:
        print(json.dumps(result.as_dict()))
    else:
        print(result.text())
    from dpref.audit.reports.audit_report import golden_exit_code

    return golden_exit_code(result)  # 0 / 1 / 3 as every audit (docs/auditing.md §5)
