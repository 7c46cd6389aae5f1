"""The ``dpref`` command: release, verify, bench, and one-line errors with exit code 2."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from dpref import Binary
from dpref.cli import main


def run_cli(args: list[str], stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "dpref", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_release_text_matches_api(tmp_path: Path) -> None:
    stream = [1, 0, 1, 1, 0, 1, 1]
    path = tmp_path / "s.txt"
    path.write_text("\n".join(map(str, stream)) + "\n")
    res = run_cli(["release", "binary", "--epsilon", "0.5", "--seed", "4", "--input", str(path)])
    assert res.returncode == 0, res.stderr
    got = np.array([float(v) for v in res.stdout.split()])
    want = Binary(epsilon=0.5, horizon=7).release(stream, rng=4)
    np.testing.assert_array_equal(got, want)


def test_release_json_stdin_and_npy(tmp_path: Path) -> None:
    res = run_cli(
        ["release", "two-level", "--epsilon", "1", "--block-size", "2", "--seed", "1", "--json"],
        stdin="1\n0\n1\n1\n",
    )
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    assert len(doc["estimates"]) == 4 and len(doc["std"]) == 4
    assert doc["std"][0] == pytest.approx(np.sqrt(8.0))
    npy = tmp_path / "s.npy"
    np.save(npy, np.array([0, 1, 1]))
    res = run_cli(["release", "hybrid", "--epsilon", "1", "--input", str(npy), "--json"])
    assert res.returncode == 0 and len(json.loads(res.stdout)["estimates"]) == 3


@pytest.mark.parametrize(
    "args,stdin,needle",
    [
        (["release", "binary", "--epsilon", "0"], "1\n", "epsilon="),
        (["release", "binary", "--epsilon", "1"], "2\n", "stream[0]=2.0"),
        (["release", "binary", "--epsilon", "1", "--horizon", "2"], "1\n1\n1\n", "horizon=2"),
        (["release", "nope", "--epsilon", "1"], "1\n", "mechanism='nope'"),
        (["release", "binary", "--epsilon", "1"], "abc\n", "not a number"),
        (["release", "two-level", "--epsilon", "1", "--block-size", "9"], "1\n", "block_size=9"),
        (["release", "binary", "--epsilon", "1", "--window", "3"], "1\n", "window=3"),
        (["release", "binary", "--epsilon", "1", "--input", "/no/such"], "", "input="),
        (["frobnicate"], "", "'frobnicate': unknown;"),
    ],
)
def test_errors_are_one_line_exit_2(args: list[str], stdin: str, needle: str) -> None:
    res = run_cli(args, stdin)
    assert res.returncode == 2
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1, res.stderr
    assert needle in lines[0]
    assert res.stdout == ""


def test_verify_small_json(capsys: pytest.CaptureFixture[str]) -> None:
    counters = ("simple1", "simple2", "two-level", "binary", "hybrid")
    # the five counters only: the whole run (every proof at full size) is `dpref verify` in CI
    picked = [arg for name in counters for arg in ("--mechanism", name)]
    code = main(["verify", "--max-horizon", "6", "--random-horizons", "1", *picked, "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0 and doc["passed"]
    suites = {row["suite"] for row in doc["rows"]}
    assert {"plans", "agreement"} <= suites
    names = {row["mechanism"] for row in doc["rows"] if row["suite"] == "plans"}
    assert {"simple1", "simple2", "two-level", "binary", "hybrid"} <= names


def test_verify_fails_on_a_broken_mechanism(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """verify exits 1 when a plan check fails (here: Binary with too little noise)."""
    from fractions import Fraction

    from dpref.mechanisms import counting

    monkeypatch.setattr(counting.Binary, "_scale", lambda self: Fraction(1))
    code = main(["verify", "--max-horizon", "4", "--random-horizons", "0", "--mechanism", "binary"])
    out = capsys.readouterr().out
    assert code == 1
    assert "FAIL" in out
