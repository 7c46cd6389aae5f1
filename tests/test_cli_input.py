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


def test_the_parser_class_cannot_switch_abbreviations_back_on() -> None:
    # python -m proofs and python -m dpref.<pkg>.cli build DprefParser outside the walk above
    from dpref.cli.common import DprefParser

    assert DprefParser(prog="x", allow_abbrev=True).allow_abbrev is False


def test_an_abbreviated_flag_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    # before: --eps was read as --epsilon (argparse's default allow_abbrev=True)
    assert main(["release", "binary", "--eps", "1"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--eps" in err
    assert err.endswith("--eps: did you mean --epsilon? (options are never abbreviated)\n")


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


# ---------------------------------------------------------------- --input FILE.csv --column NAME


def _csv(tmp_path: Path, text: str = "day,value\n1,1\n2,0\n3,1\n4,1\n") -> str:
    path = tmp_path / "s.csv"
    path.write_text(text)
    return str(path)


def test_release_reads_a_csv_column(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    plain = tmp_path / "s.txt"
    plain.write_text("1\n0\n1\n1\n")
    argv = ["release", "binary", "--epsilon", "1", "--seed", "3"]
    assert main([*argv, "--input", str(plain)]) == 0
    expected = capsys.readouterr().out
    assert main([*argv, "--input", _csv(tmp_path), "--column", "value"]) == 0
    assert capsys.readouterr().out == expected  # the same stream, so the same seeded outputs
    assert len(expected.splitlines()) == 4


def test_quantiles_reads_a_csv_column(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = _csv(tmp_path, "v,w\n" + "".join(f"{i % 7},x\n" for i in range(20)))
    argv = ["quantiles", "--input", source, "--column", "v", "--domain", "0:10"]
    assert main([*argv, "--epsilon", "1", "--block-size", "10", "--seed", "0", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["items"] == 20


def test_an_unknown_column_is_named_with_the_columns(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["release", "binary", "--epsilon", "1", "--input", _csv(tmp_path), "--column", "vale"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("dpref: error: --column='vale': ")
    assert "did you mean 'value'? choose from day, value" in err


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("day,value\n1,1\n2,\n3,1\n", "line 3, value is blank"),
        ("day,value\n1,1\n2\n", "line 3, value is blank"),  # a short row
        ("day,value\n1,1\n\n3,1\n", "line 3, value is blank"),  # a blank row
        ("day,value\n1,1\n2,one\n", "line 3, value is 'one', not a number"),
    ],
)
def test_a_bad_csv_cell_is_an_error_naming_its_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, why: str
) -> None:
    argv = ["release", "binary", "--epsilon", "1", "--input", _csv(tmp_path, text)]
    assert main([*argv, "--column", "value"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and why in err


def test_a_csv_without_column_says_to_name_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["release", "binary", "--epsilon", "1", "--input", _csv(tmp_path)]) == 2
    assert "name its column with --column" in capsys.readouterr().err


# ---------------------------------------------------------------- mistyped names

MECHANISM_HINT = "unknown; did you mean 'binary'? choose from kary, honaker, simple1, "


def test_cite_lists_names_in_the_same_format(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["cite", "--mechanism", "binray"]) == 2
    assert "--mechanism='binray': unknown; did you mean 'binary'? choose from allwindow, " in (
        capsys.readouterr().err
    )


@pytest.mark.parametrize(
    ("argv", "named"),
    [
        (["release", "binray", "--epsilon", "1"], "mechanism='binray': "),
        (["audit", "binray", "--epsilon", "1", "--horizon", "3"], "target='binray': "),
        (["audit", "binray", "--epsilon", "1", "--horizon", "3", "--exact"], "target='binray': "),
        (["conform", "binray", "--epsilon", "1", "--horizon", "3"], "target='binray': "),
        (["golden", "run", "x:f", "--mechanism", "binray"], "--mechanism='binray': "),
        (["verify", "--mechanism", "binray"], "--mechanism='binray': "),
    ],
)
def test_a_mistyped_mechanism_gets_a_suggestion(
    argv: list[str], named: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # before: audit/conform read 'binray' as a black box or listed names in another format,
    # and golden run said "no golden vector matches"
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"dpref: error: {named}{MECHANISM_HINT}")


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["relase"], "argument COMMAND: 'relase': unknown; did you mean 'release'? choose from "),
        (
            ["release", "binary", "--epsilon", "1", "--noise", "lapalce"],
            "argument --noise: 'lapalce': unknown; did you mean 'laplace'? choose from laplace, ",
        ),
    ],
)
def test_argparse_choices_use_the_same_format(
    argv: list[str], expected: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    assert capsys.readouterr().err.startswith(f"dpref: error: {expected}")


def test_choose_from_without_a_close_name() -> None:
    from dpref.validation import choose_from

    assert choose_from("zzz", ["a", "b"]) == "unknown; choose from a, b"
    assert choose_from(3, ["a"]) == "unknown; choose from a"


# ---------------------------------------------------------------- LO:HI ranges


@pytest.mark.parametrize(
    ("short", "long"), [("0:5", "int:0:5"), ("-1:2.5", "real:-1:2.5"), ("0:1/2", "real:0:1/2")]
)
def test_a_domain_is_given_as_lo_hi(
    short: str, long: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "s.txt"
    path.write_text("0\n0.5\n0\n" if "real" in long else "1\n3\n2\n")
    argv = ["release", "binary", "--epsilon", "1", "--seed", "2", "--input", str(path), "--json"]
    assert main([*argv, f"--domain={long}"]) == 0  # "=": argparse takes -1:2.5 for an option
    expected = json.loads(capsys.readouterr().out)
    assert main([*argv, f"--domain={short}"]) == 0
    assert json.loads(capsys.readouterr().out) == expected


def test_an_integer_lo_hi_is_an_integer_domain(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "s.txt"
    path.write_text("1\n3.5\n")
    assert (
        main(["release", "binary", "--epsilon", "1", "--domain", "0:5", "--input", str(path)]) == 2
    )
    assert "stream[1]=3.5: outside the domain int[0,5]" in capsys.readouterr().err


@pytest.mark.parametrize("bad", ["a:b", "0:1:2", "int:0:x", "5:1"])
def test_a_bad_domain_names_the_flag(bad: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["release", "binary", "--epsilon", "1", "--domain", bad]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"dpref: error: --domain={bad!r}: ")
