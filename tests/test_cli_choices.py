"""One format for lists of choices on the command line (issue 27, item 5): every unknown name
— a mechanism, an experiment, a query, an image format, a domain form, a budget, a plan
kind, an option before the command — is one line on stderr, exit code 2, in
:func:`dpref.validation.choose_from`'s words: ``unknown; did you mean 'x'? choose from …``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from dpref.cli import main
from dpref.errors import ParameterError

COUNTERS_PURE = (
    "allwindow, binary, blue, elders, honaker, hybrid, kary, simple1, simple2, smooth, two-level"
)


def _error(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("dpref: error: "), err
    return err[len("dpref: error: ") : -1]


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        # before: "mechanisms=['binray']: not registered counting mechanisms ['allwindow', …]"
        (
            ["frontier", "--horizon", "8", "--epsilon", "1", "--mechanism", "binray"],
            f"--mechanism='binray': unknown; did you mean 'binary'? choose from {COUNTERS_PURE}",
        ),
        # a registered mechanism the frontier does not compare: said so, not "unknown"
        (
            ["frontier", "--horizon", "8", "--epsilon", "1", "--mechanism", "sqrt"],
            "--mechanism='sqrt': not a counter the frontier compares under --epsilon (pure DP); "
            f"choose from {COUNTERS_PURE}",
        ),
        # before: "name='countng': unknown experiment; choose from …" (no "did you mean")
        (
            ["reproduce", "countng", "--out", "x"],
            "name='countng': unknown; did you mean 'counting'? choose from counting, frontier, "
            "decayed, quantiles, all",
        ),
        (
            ["reproduce"],
            "name=None: give an experiment or --list; choose from counting, frontier, decayed, "
            "quantiles, all",
        ),
        # before: "query='meen': unknown query; use count, sum, … or percentile_<p> with …"
        (
            ["sensitivity", "--universe", "1,2", "--size", "2", "--query", "meen"],
            "query='meen': unknown; did you mean 'mean' or 'median'? choose from count, sum, "
            "mean, median, var, std, percentile_<p> (percentile_<p>: 0 <= p <= 100)",
        ),
        # before: "--domain='bit': expected bits, LO:HI, int:LO:HI or real:LO:HI"
        (
            ["release", "binary", "--epsilon", "1", "--domain", "bit", "--input", "{stream}"],
            "--domain='bit': unknown; did you mean 'bits'? choose from bits, LO:HI, int:LO:HI, "
            "real:LO:HI",
        ),
        # before: "budget='unifrom': must be one of ('uniform', 'mean', 'max') or L per-level ε_h"
        (
            ["release", "kary", "--epsilon", "1", "--k", "2", "--budget", "unifrom"],
            "budget='unifrom': unknown; did you mean 'uniform'? choose from uniform, mean, max "
            "(or L per-level ε_h, comma-separated)",
        ),
        # before: "--mechanism='binray': unknown mechanism; choose from …" (no "did you mean")
        (
            ["prove", "--mechanism", "binray"],
            "--mechanism='binray': unknown; did you mean 'binary'? choose from kary, ",
        ),
    ],
)
def test_unknown_names_use_choose_from(
    argv: list[str], expected: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stream = tmp_path / "s.txt"
    stream.write_text("1\n0\n1\n")
    argv = [a.replace("{stream}", str(stream)) for a in argv]
    if "--input" not in argv and argv[0] == "release":
        argv += ["--input", str(stream)]
    assert _error(argv, capsys).startswith(expected)


@pytest.mark.parametrize("command", ["frontier", "sensitivity", "quantiles"])
def test_every_plot_flag_names_image_formats_alike(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # before: three messages ("unknown image format 'pgn'", "…; use one of avif, …" and
    # matplotlib's own "Format 'pgn' is not supported (supported formats: …)" after the work)
    pytest.importorskip("matplotlib")
    stream = tmp_path / "s.txt"
    stream.write_text("1\n0\n1\n")
    target = tmp_path / "figure.pgn"
    argv = {
        "frontier": ["frontier", "--horizon", "8", "--epsilon", "1"],
        "sensitivity": ["sensitivity", "--universe", "1,2", "--size", "2", "--query", "mean"],
        "quantiles": [
            "quantiles",
            "--input",
            str(stream),
            "--domain",
            "0:3",
            "--epsilon",
            "1",
            "--block-size",
            "2",
        ],
    }[command]
    err = _error([*argv, "--plot", str(target)], capsys)
    assert err.startswith("--plot='") and ": image format 'pgn': unknown; did you mean " in err
    assert "'png'" in err and ", png, " in err
    assert not target.exists()


@pytest.mark.parametrize(
    ("argv", "named", "close"),
    [
        (["--eps", "1"], "--eps", ""),  # before: "argument COMMAND: '1': unknown; choose from …"
        (["--eps=1", "release", "binary"], "--eps", ""),  # before: "unrecognized arguments"
        (["--epsilon", "1", "release", "binary"], "--epsilon", ""),  # not "--version"
        (["--eps"], "--eps", ""),  # before: "the following arguments are required: COMMAND"
        (["--vers"], "--vers", " did you mean '--version'?"),
        (["--hlp"], "--hlp", " did you mean '--help'?"),
    ],
)
def test_an_option_before_the_command_is_named(
    argv: list[str], named: str, close: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _error(argv, capsys) == (
        f"{named}: unknown;{close} choose from --help, --version "
        f"(a command's own options go after it: dpref COMMAND {named} …)"
    )


def test_an_option_before_a_group_command_is_named(capsys: pytest.CaptureFixture[str]) -> None:
    err = _error(["golden", "--foo", "run"], capsys)
    assert err == (
        "--foo: unknown; choose from --help "
        "(a command's own options go after it: dpref golden COMMAND --foo …)"
    )


def test_an_option_before_the_command_under_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--eps", "1", "release", "binary", "--json"]) == 2
    out = capsys.readouterr().out
    assert json.loads(out)["error"]["message"].startswith("--eps: unknown; choose from --help")


def test_known_options_and_commands_still_parse(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0
    assert capsys.readouterr().out.startswith("dpref ")


@pytest.mark.parametrize(
    ("doc", "expected"),
    [
        ({"kind": "band", "C": [1]}, "kind='band': unknown; choose from dense, toeplitz, blt"),
        (
            {"kind": "toeplitz", "C": [1], "precision": "float16"},
            "precision='float16': unknown; did you mean 'float64' or 'float32'? choose from ",
        ),
        ({"kind": "toeplitz", "C": [1], "noise": "lapace"}, "noise='lapace': unknown; did you "),
        (
            {"kind": "toeplitz", "C": [1], "horizn": 4},
            "horizn=...: unknown; did you mean 'horizon'? choose from C, B, horizon, kind, ",
        ),
    ],
)
def test_plan_file_kinds_and_keys_use_choose_from(doc: dict[str, Any], expected: str) -> None:
    from dpref.planfile import make_plan

    with pytest.raises(ParameterError) as info:
        make_plan(doc)
    assert str(info.value).startswith(expected)


def test_frontier_cli_names_the_counters_frontier_accepts() -> None:
    # The CLI checks --mechanism before dpref.frontier does: the two lists must agree.
    from dpref.cli.frontier import _check_mechanisms
    from dpref.frontier import counting_mechanisms, frontier
    from dpref.mechanisms import MECHANISMS

    for privacy, budget in (("pure", {"epsilon": 1}), ("zcdp", {"rho": 1})):
        counters = {c.name for c in counting_mechanisms()}
        for name in MECHANISMS:
            try:
                _check_mechanisms([name], privacy)
                cli_ok = True
            except ParameterError:
                cli_ok = False
            if not cli_ok:
                with pytest.raises(ParameterError):
                    frontier(4, budget.get("epsilon"), "max", [name], rho=budget.get("rho"))
            else:
                assert name in counters
