"""Every ``--help`` text is plain words: no reStructuredText, every option described, every
default stated.

The parsers are the ones ``dpref`` builds from the registered plugins (``dpref.plugins``,
the ``dpref.commands`` entry points), walked down every level of subcommands, so a new
command is held to the same rules without being named here.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Iterator

import pytest

from dpref.cli import build_parser

MARKUP = re.compile(r"`|:[a-z]+:`|^\s*\||\|\s*$|^\s*\.\. ", re.M)
"""reStructuredText (and Markdown) markup: any backtick (``literal``, `role`, :role:`x`),
a role or field marker, a table row (``| a | b |``) or a directive."""

IMPLICIT = (
    argparse._HelpAction,
    argparse._VersionAction,
    argparse._StoreTrueAction,
    argparse._StoreFalseAction,
    argparse._StoreConstAction,
    argparse._CountAction,
    argparse._SubParsersAction,
)
"""Actions whose default goes without saying (a flag is off unless given)."""


def _walk(
    parser: argparse.ArgumentParser, name: str
) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    yield name, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub, child in action.choices.items():
                yield from _walk(child, f"{name} {sub}")


PARSERS = dict(_walk(build_parser(), "dpref"))


def _expanded(parser: argparse.ArgumentParser, action: argparse.Action) -> str:
    """The help text as printed (``%(default)s`` and friends filled in)."""
    return parser._get_formatter()._expand_help(action) if action.help else ""


def test_every_command_is_walked() -> None:
    commands = {name.split()[1] for name in PARSERS if name != "dpref"}
    assert {"verify", "release", "audit", "prove", "golden", "plan"} <= commands
    assert "dpref plan check" in PARSERS


@pytest.mark.parametrize("name", sorted(PARSERS))
def test_help_has_no_markup(name: str) -> None:
    parser = PARSERS[name]
    texts = [parser.description or "", parser.epilog or ""]
    for action in parser._actions:
        texts.append(_expanded(parser, action))
        if isinstance(action, argparse._SubParsersAction):
            texts += [choice.help or "" for choice in action._choices_actions]
    marked = [t for t in texts if MARKUP.search(t)]
    assert marked == []


@pytest.mark.parametrize("name", sorted(PARSERS))
def test_every_argument_is_described(name: str) -> None:
    parser = PARSERS[name]
    bare = [
        "/".join(a.option_strings) or a.dest
        for a in parser._actions
        if not (a.help and a.help.strip()) and a.help != argparse.SUPPRESS
    ]
    assert bare == []
    if name != "dpref":
        assert parser.description, f"{name}: no description"


def _mentions(text: str, default: object) -> bool:
    """The help names the default: its text, or for a number any spelling of its value
    (``10`` for 10.0, ``1e-9`` for 1e-09)."""
    if str(default) in text:
        return True
    if isinstance(default, int | float) and not isinstance(default, bool):
        for token in re.findall(r"[-+]?\d+(?:\.\d*)?(?:[eE][-+]?\d+)?", text):
            if float(token) == default:
                return True
    return False


@pytest.mark.parametrize("name", sorted(PARSERS))
def test_every_default_is_stated(name: str) -> None:
    parser = PARSERS[name]
    silent = []
    for action in parser._actions:
        if isinstance(action, IMPLICIT) or action.default in (None, argparse.SUPPRESS):
            continue
        if isinstance(action.default, list | tuple) and not action.default:
            continue  # a repeatable option that starts empty: "none" goes without saying
        text = _expanded(parser, action)
        if "default" not in text or not _mentions(text, action.default):
            silent.append(f"{'/'.join(action.option_strings) or action.dest}={action.default!r}")
    assert silent == []


def test_the_checks_catch_what_they_look_for() -> None:
    """Power: the same checks flag a parser with markup, a bare option and a silent default."""
    bad = argparse.ArgumentParser(description="see :func:`run` and ``--x``")
    bad.add_argument("--bare", type=int, default=3)
    bad.add_argument("--quiet", type=int, default=7, help="some number")
    assert MARKUP.search(bad.description or "")
    assert next(a for a in bad._actions if not a.help).dest == "bare"
    quiet = next(a for a in bad._actions if a.dest == "quiet")
    assert "default" not in _expanded(bad, quiet)
    assert _mentions("(default 1e-9)", 1e-09) and _mentions("default 10 s", 10.0)
    assert not _mentions("default 10 s", 1e-09) and not _mentions("(default 2)", 20)
    for plain in ("plain words, 1/2 and 2^20", "LO, LO+STEP, ... up to HI (default 0.5)"):
        assert not MARKUP.search(plain)
