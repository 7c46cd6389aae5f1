"""Entry-point plugins: how subsystems register into ``dpref``'s command line, its
verify suites and its benchmarks without those knowing them.

Each group is declared in ``pyproject.toml`` (``[project.entry-points."GROUP"]``) and
read from the installed metadata, so dpref must be installed (``pip install -e .``);
``tests/test_structure.py`` checks that the installed entry points match the file.
"""

from __future__ import annotations

from importlib.metadata import EntryPoint, entry_points
from typing import Any

from dpref.errors import ParameterError

__all__ = ["BENCH", "COMMANDS", "GROUPS", "VERIFY", "load", "ordered"]

COMMANDS = "dpref.commands"
"""Modules with ``add_parser(subparsers)``: the ``dpref`` subcommands."""
VERIFY = "dpref.verify_suites"
"""Functions ``(VerifyOptions) -> list[VerifyRow]``: the suites of ``dpref verify``."""
BENCH = "dpref.benchmarks"
"""Functions ``(quick: bool) -> list[row]``: the benchmarks of ``dpref bench``."""
GROUPS = (COMMANDS, VERIFY, BENCH)


def ordered(group: str) -> list[EntryPoint]:
    """The entry points of ``group`` in order.

    Names may start with ``NN-`` to fix the order (``10-proofs`` before ``20-plans``);
    the rest follow by name.  Raises :class:`~dpref.errors.ParameterError` when the
    group is empty: dpref is then not installed.
    """
    found = sorted(entry_points(group=group), key=lambda ep: _order_key(ep.name))
    if not found:
        raise ParameterError(
            f"entry points {group!r}: none installed; install dpref (pip install -e .)"
        )
    return found


def load(group: str) -> list[Any]:
    """The objects registered under ``group``, loaded, in order.

    Raises :class:`~dpref.errors.ParameterError` naming the entry point when one does
    not load (a stale install, or a broken plugin): a verify run or a benchmark run
    that silently dropped a suite would claim more than it checked.
    """
    loaded = []
    for ep in ordered(group):
        try:
            loaded.append(ep.load())
        except (ImportError, AttributeError) as exc:
            raise ParameterError(
                f"entry point {ep.name}={ep.value!r} of {group!r}: does not load ({exc}); "
                "reinstall dpref (pip install -e .)"
            ) from None
    return loaded


def _order_key(name: str) -> tuple[int, str]:
    head, sep, _ = name.partition("-")
    return (int(head), name) if sep and head.isdigit() else (10**9, name)
