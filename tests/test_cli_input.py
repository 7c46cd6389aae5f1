"""Command-line input is read exactly as written (issue 27, item 5): no option is
abbreviated, and a blank or non-numeric stream line is an error naming its line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dpref.cli import main
from tests.test_cli_help import PARSERS


@pytest.mark.parametrize("name", sorted(PARSERS))
def test_no_parser_accepts_abbreviations(name: str) -> None:
    assert PARSERS[name].allow_abbrev is False


def test_an_abbreviated_flag_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    # before: --eps was read as --epsilon (argparse's default allow_abbrev=True)
    assert main(["release", "binary", "--eps", "1"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--eps" in err


def test_the_full_flag_still_works(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "s.txt"
    path.write_text("1\n0\n# a comment line\n1\n1\n")
    assert main(["release", "binary", "--epsilon", "1", "--seed", "0", "--input", str(path)]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 4


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("1\n0\n\n1\n", "line 3 is blank"),
        ("1\n0\n   \n1\n", "line 3 is blank"),
        ("1\n0\n1\n\n", "line 4 is blank"),
        ("1\nzero\n1\n1\n", "line 2 is 'zero', not a number"),
    ],
)
def test_a_bad_stream_line_is_an_error_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, why: str
) -> None:
    path = tmp_path / "s.txt"
    path.write_text(text)
    argv = ["release", "binary", "--epsilon", "1", "--input", str(path), "--json"]
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert err.count("\n") == 1 and why in err and err.startswith("dpref: error: --input=")
    assert json.loads(out)["error"]["parameter"] == "--input"
