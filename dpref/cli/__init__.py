"""The ``dpref`` command.

Every subcommand takes ``--json`` and then prints exactly one JSON object on stdout.
Bad input prints one line on stderr (``dpref: error: name=value: why``) and exits 2 —
never a traceback; a failed check exits 1.  With ``--json`` among the arguments, bad
input also prints its one JSON object on stdout: ``{"error": {"parameter": NAME,
"message": TEXT}}`` (``parameter`` only when the message starts with ``NAME=``), so
a ``--json`` consumer always reads exactly one object.  An I/O error (a full disk, a
full stdout) is exit 2 with one line too (never 1, which means a failed check); ^C
exits 130 and SIGTERM 143, after every ``finally`` has run (worker processes killed,
temporary files removed).  Only :class:`DprefError`, usage and I/O errors are bad
input: any other exception is a bug and keeps its traceback.

Subcommands are plugins: each subsystem declares a module with
``add_parser(subparsers)`` (the parser's ``func`` default runs the command) in the
``dpref.commands`` entry-point group of ``pyproject.toml`` — the release and golden
commands in :mod:`dpref.cli`, ``verify`` and ``bench`` in their packages, ``audit``,
``conform``, ``sensitivity`` and ``prove`` in theirs.  This package imports none of
them by name, so nothing here depends on a subsystem.  A plugin module keeps its
top-level imports light: ``dpref --help`` loads every one of them.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as metadata_version

from dpref.cli.common import (  # re-exported: these lived in dpref.cli before it was a package
    DprefParser,
    UsageError,
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
    "version",
]


def version() -> str:
    """The installed dpref's version (its package metadata; ``dpref.__version__`` when dpref
    runs from a source tree that is not installed)."""
    try:
        return metadata_version("dpref")
    except PackageNotFoundError:
        import dpref

        return dpref.__version__


def build_parser() -> DprefParser:
    """The full argument parser: every registered subcommand."""
    parser = DprefParser(
        prog="dpref",
        description="dpref: differentially private continual release, checked. "
        "Run 'dpref COMMAND --help' for the options of one command.",
    )
    parser.add_argument(
        "--version", action="version", version=f"dpref {version()}", help="print the version"
    )
    sub = parser.add_subparsers(
        dest="command",
        required=True,
        parser_class=DprefParser,
        metavar="COMMAND",
        help="one of the commands below",
    )
    for plugin in load(COMMANDS):
        plugin.add_parser(sub)
    return parser


_PARAMETER = re.compile(r"(--?[A-Za-z][\w-]*|[A-Za-z_][\w.]*(?:\[\d+\])?)=")
"""The parameter an error message names first (``epsilon=-1: ...``, ``--samples=...``)."""
_ARGUMENT = re.compile(r"argument (--?[\w-]+|[\w]+)(?:/[\w-]+)?: ")
"""The option an argparse usage error names (``argument --runs: invalid int value``)."""


def error_object(message: str) -> dict[str, dict[str, str]]:
    """The JSON object ``--json`` prints for bad input."""
    err: dict[str, str] = {}
    m = _PARAMETER.match(message) or _ARGUMENT.match(message)
    if m:
        err["parameter"] = m.group(1)
    err["message"] = message
    return {"error": err}


def _bad_input(message: str, as_json: bool, code: int = 2) -> int:
    """Report bad input: one line on stderr, with ``--json`` one object on stdout; 2.

    Never raises: a stdout or stderr that cannot be written (``/dev/full``, a closed
    pipe) is pointed at /dev/null instead, so the interpreter's last flush stays quiet."""
    try:
        sys.stderr.write(f"dpref: error: {message}\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass
    if as_json:
        try:
            sys.stdout.write(json.dumps(error_object(message)) + "\n")
            sys.stdout.flush()
        except (OSError, ValueError):
            _silence_stdout()
    return code


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised in the main thread like ^C so that every ``finally`` runs (worker
    processes killed, temporary files removed) before dpref exits with 128 + 15."""


def _on_sigterm(signum: int, frame: object) -> None:
    raise Terminated()


def _io_message(exc: OSError) -> str:
    where = f" on {exc.filename}" if getattr(exc, "filename", None) else ""
    return f"I/O error{where}: {exc.strerror or type(exc).__name__}"


def _wants_json(argv: Sequence[str]) -> bool:
    """``--json`` among the options (before a ``--``), read without parsing them."""
    args = list(argv)
    return "--json" in (args[: args.index("--")] if "--" in args else args)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``dpref`` console script."""
    argv = list(sys.argv[1:] if argv is None else argv)
    as_json = _wants_json(argv)
    try:
        parser = build_parser()
    except DprefError as exc:  # not installed: no subcommands registered
        return _bad_input(str(exc), as_json)
    try:
        args = parser.parse_args(argv)
    except UsageError as exc:  # already on stderr
        if as_json:
            sys.stdout.write(json.dumps(error_object(exc.message)) + "\n")
        return 2
    wants = bool(getattr(args, "json", False))
    previous = _catch_sigterm()
    try:
        code: int = args.func(args)
        sys.stdout.flush()  # a full stdout fails here, not in the interpreter's last flush
    except DprefError as exc:
        return _bad_input(str(exc), wants)
    except Terminated:
        return _bad_input("terminated (SIGTERM)", wants, 143)
    except KeyboardInterrupt:
        return _bad_input("interrupted", wants, 130)
    except BrokenPipeError:  # the reader went away (`dpref … | head`): stop quietly
        _silence_stdout()
        return 141
    except OSError as exc:  # a full disk or stdout: one line, exit 2 (never 1, "violation")
        return _bad_input(_io_message(exc), wants)
    finally:
        _restore_sigterm(previous)
    return code


def _catch_sigterm() -> object:
    """Turn SIGTERM into :class:`Terminated` while a command runs (main thread only)."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        return None
    try:
        return signal.signal(signal.SIGTERM, _on_sigterm)
    except (ValueError, OSError):
        return None


def _restore_sigterm(previous: object) -> None:
    import signal

    if previous is not None:
        try:
            signal.signal(signal.SIGTERM, previous)  # type: ignore[arg-type]
        except (ValueError, OSError, TypeError):
            pass


def _silence_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush cannot raise again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # no real file descriptor (e.g. captured output)
        pass
