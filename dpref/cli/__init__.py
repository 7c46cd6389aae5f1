"""The ``dpref`` command.

Every subcommand takes ``--json`` and then prints exactly one JSON object on stdout.
Bad input prints one line on stderr and exits 2; a failed check exits 1.

Subcommands are plugins: each subsystem declares a module with
``add_parser(subparsers)`` (the parser's ``func`` default runs the command) in the
``dpref.commands`` entry-point group of ``pyproject.toml`` — the release and golden
commands in :mod:`dpref.cli`, ``verify`` and ``bench`` in their packages, ``audit``,
``conform``, ``sensitivity`` and ``prove`` in theirs.  This package imports none of
them by name, so nothing here depends on a subsystem.  A plugin module keeps its
top-level imports light: ``dpref --help`` loads every one of them.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from dpref.cli.common import (  # re-exported: these lived in dpref.cli before it was a package
    DprefParser,
    add_mechanism_args,
    mechanism_from_args,
    parse_domain,
    read_stream,
)
from dpref.cli.common import (
    _Parser as _Parser,
)
from dpref.errors import DprefError
from dpref.plugins import COMMANDS, load

__all__ = [
    "DprefParser",
    "add_mechanism_args",
    "build_parser",
    "main",
    "mechanism_from_args",
    "parse_domain",
    "read_stream",
]


def build_parser() -> DprefParser:
    """The full argument parser: every registered subcommand."""
    parser = DprefParser(
        prog="dpref", description="dpref: differentially private continual release, checked."
    )
    sub = parser.add_subparsers(dest="command", required=True, parser_class=DprefParser)
    for plugin in load(COMMANDS):
        plugin.add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``dpref`` console script."""
    try:
        parser = build_parser()
    except DprefError as exc:  # not installed: no subcommands registered
        sys.stderr.write(f"dpref: error: {exc}\n")
        return 2
    args = parser.parse_args(argv)
    try:
        code: int = args.func(args)
    except DprefError as exc:
        sys.stderr.write(f"dpref: error: {exc}\n")
        return 2
    except KeyboardInterrupt:
        sys.stderr.write("dpref: interrupted\n")
        return 130
    return code
