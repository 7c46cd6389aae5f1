"""``dpref golden export|check [FILE]``: golden vectors for implementers in other languages."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from dpref.errors import ParameterError
from dpref.validation import fmt

__all__ = ["add_parser", "run"]


def add_parser(subparsers: Any) -> None:
    """Add the ``golden`` subcommand."""
    p = subparsers.add_parser(
        "golden",
        help="export or check golden vectors (stream + noise -> outputs)",
        description="Export the golden vectors (a stream, the injected node noise and the "
        "expected outputs of every mechanism) to a file, or check that this dpref still "
        "produces the outputs of a vectors file exactly.",
    )
    p.add_argument(
        "action",
        choices=["export", "check"],
        help="export: write the vectors; check: recompute the outputs of a vectors file",
    )
    p.add_argument("file", nargs="?", default=None, help="export: output file; check: input file")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Export the vectors, or check a file (default: the shipped one); 1 on a mismatch."""
    return _export(args) if args.action == "export" else _check(args)


def _export(args: argparse.Namespace) -> int:
    from dpref.golden import golden_vectors

    doc = golden_vectors()
    text = json.dumps(doc, indent=1)
    if not args.file or args.file == "-":
        print(text)
        return 0
    try:
        Path(args.file).write_text(text + "\n")
    except OSError as exc:
        raise ParameterError(f"file={fmt(args.file)}: cannot write ({exc})") from None
    if args.json:
        print(json.dumps({"written": args.file, "vectors": len(doc["vectors"])}))
    else:
        print(f"wrote {len(doc['vectors'])} vectors to {args.file}")
    return 0


def _check(args: argparse.Namespace) -> int:
    from dpref.golden import check_golden, load_shipped, loads_golden

    if args.file:
        try:
            text = Path(args.file).read_text(encoding="utf-8")
        except (OSError, ValueError) as exc:  # UnicodeDecodeError is a ValueError
            raise ParameterError(
                f"file={fmt(args.file)}: cannot read golden vectors ({exc})"
            ) from None
        try:
            doc = loads_golden(text)
        except ParameterError as exc:
            raise ParameterError(f"file={fmt(args.file)}: {exc}") from None
    else:
        doc = load_shipped()
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
