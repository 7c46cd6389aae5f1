"""Generate ``docs/cli.md``, the command-line reference, from the real argparse parsers.

Every command and subcommand of ``dpref`` (as registered through the ``dpref.commands``
entry points) gets a heading, its description and its full ``--help`` text, formatted
at a fixed width of 100 columns.  ``tests/test_docs_examples.py`` compares the result
with the committed page.

Regenerate the page (after changing any parser or help text)::

    python tests/cli_reference.py --write
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WIDTH = 100
"""Columns the help texts are wrapped to."""
REGENERATE = "python tests/cli_reference.py --write"
"""The one command that rewrites ``docs/cli.md``."""

_HEADER = """\
# Command-line reference

<!-- Generated from the argparse parsers by `{regenerate}`; do not edit by hand.
     tests/test_docs_examples.py fails when this page and the parsers disagree. -->

Every subcommand takes `--json` and then prints exactly one JSON object on stdout. Bad input
prints one line on stderr (`dpref: error: name=value: why`) and exits 2; so does an I/O error
(a full disk, a closed or full stdout); a failed check exits 1. SIGINT (^C) stops a command
after its clean-up with exit 130, SIGTERM with 143 (with `--json`, an error object is printed;
`dpref audit` and `dpref conform` print their report so far instead, marked partial, verdict
inconclusive — as when their `--max-seconds` budget runs out, exit 3).
The same text is printed by `dpref COMMAND --help`.

Exit status of `dpref audit` (also `--exact`), `dpref conform` and `dpref golden run`:
0 no violation and no finding; 1 violation or non-conformance; 3 inconclusive (nothing
proven wrong, but a finding that undermines the verdict — NaN, a crash, a hang, a fork, a
write, a signed zero — or an uncomputable exact loss keeps it from being a pass); 2 usage or
input error (docs/auditing.md §5).

Numbers are exact: a parameter given as a decimal (`--epsilon 0.1`) is that decimal rational,
except a float-derived one (BLT's `--theta`, `--omega`: values libraries compute in floating
point), where a decimal is the float it denotes at its exact binary value, as a Python float
is; `p/q` always stays exact, and the report notes each conversion (docs/auditing.md §12).

"""


def _subcommands(parser: argparse.ArgumentParser) -> list[tuple[str, argparse.ArgumentParser]]:
    seen: set[int] = set()
    out = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                if id(sub) not in seen:
                    seen.add(id(sub))
                    out.append((name, sub))
    return out


def _walk(
    parser: argparse.ArgumentParser, path: list[str]
) -> list[tuple[list[str], argparse.ArgumentParser]]:
    found = [(path, parser)]
    for name, sub in _subcommands(parser):
        found += _walk(sub, [*path, name])
    return found


def cli_reference() -> str:
    """The text of ``docs/cli.md`` for the parsers as they are now."""
    from dpref.cli import build_parser

    old = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = str(WIDTH)
    try:
        parser = build_parser()
        parts = [_HEADER.format(regenerate=REGENERATE)]
        for path, sub in _walk(parser, ["dpref"]):
            sub.prog = " ".join(path)
            level = "#" * min(len(path) + 1, 4)
            help_text = sub.format_help().rstrip()
            parts.append(f"{level} `{' '.join(path)}`\n\n```text\n{help_text}\n```\n\n")
    finally:
        if old is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = old
    return "".join(parts).rstrip() + "\n"


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    text = cli_reference()
    if sys.argv[1:] == ["--write"]:
        (ROOT / "docs" / "cli.md").write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
