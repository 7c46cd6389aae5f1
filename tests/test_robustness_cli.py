"""The command line never prints a traceback on bad input: one line on stderr
(``dpref: error: ...``), exit code 2, and nothing on stdout — or, with ``--json``, exactly
one ``{"error": ...}`` object on stdout."""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from dpref.cli import main
from dpref.golden import load_shipped

ROOT = Path(__file__).resolve().parents[1]


def _bad(argv: list[str], capsys: Any, needle: str) -> str:
    """Run ``dpref argv``; assert bad input (exit 2, one stderr line naming ``needle``,
    nothing on stdout); return the stderr line."""
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 2, (code, out, err)
    assert out == ""
    assert err.count("\n") == 1 and err.startswith("dpref: error: "), err
    assert needle in err, err
    return err


# --- stream and CSV input -------------------------------------------------------------


def test_release_non_utf8_input(tmp_path: Path, capsys: Any) -> None:
    f = tmp_path / "bad.txt"
    f.write_bytes(b"1\n\xff\xfe0\n")
    _bad(["release", "binary", "--epsilon", "1", "--input", str(f)], capsys, "not UTF-8")


def test_release_negative_seed_names_the_flag(tmp_path: Path, capsys: Any) -> None:
    f = tmp_path / "s.txt"
    f.write_text("1\n0\n")
    err = _bad(
        ["release", "binary", "--epsilon", "1", "--seed=-1", "--input", str(f)], capsys, "--seed=-1"
    )
    assert "rng" not in err


def test_release_non_utf8_stdin_subprocess(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, "-m", "dpref", "release", "binary", "--epsilon", "1", "--input", "-"],
        input=b"1\n\xff\n",
        capture_output=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 2
    assert proc.stdout == b""
    assert proc.stderr.count(b"\n") == 1 and proc.stderr.startswith(b"dpref: error: ")
    assert b"Traceback" not in proc.stderr


def test_release_zero_byte_npy(tmp_path: Path, capsys: Any) -> None:
    f = tmp_path / "empty.npy"
    f.write_bytes(b"")
    _bad(["release", "binary", "--epsilon", "1", "--input", str(f)], capsys, "cannot read .npy")


def test_release_empty_array_npy(tmp_path: Path, capsys: Any) -> None:
    f = tmp_path / "empty.npy"
    np.save(f, np.array([], dtype=np.float64))
    _bad(["release", "binary", "--epsilon", "1", "--input", str(f)], capsys, "empty")


def test_release_npy_with_huge_header(tmp_path: Path, capsys: Any) -> None:
    header = b"{'descr': '<f8', 'fortran_order': False, 'shape': (1,), " + b" " * 200_000 + b"}\n"
    f = tmp_path / "huge.npy"
    f.write_bytes(b"\x93NUMPY\x02\x00" + struct.pack("<I", len(header)) + header + bytes(8))
    _bad(["release", "binary", "--epsilon", "1", "--input", str(f)], capsys, "cannot read .npy")


_SENS = ["sensitivity", "--size", "2", "--query", "sum"]


def test_sensitivity_non_utf8_csv(tmp_path: Path, capsys: Any) -> None:
    f = tmp_path / "bad.csv"
    f.write_bytes(b"a\n1\n\xff\n")
    _bad([*_SENS, "--csv", str(f), "--column", "a"], capsys, "not UTF-8")


def test_sensitivity_csv_field_over_the_limit(tmp_path: Path, capsys: Any) -> None:
    f = tmp_path / "big.csv"
    f.write_text("a\n" + "1" * 140_000 + "\n")
    _bad([*_SENS, "--csv", str(f), "--column", "a"], capsys, "field larger than field limit")


def test_sensitivity_universe_overflowing_a_float(capsys: Any) -> None:
    _bad([*_SENS, "--universe", "1,1e400"], capsys, "--universe='1e400'")


# --- sensitivity --plot -----------------------------------------------------------------


def test_plot_into_missing_directory(tmp_path: Path, capsys: Any) -> None:
    pytest.importorskip("matplotlib")
    target = tmp_path / "no" / "such" / "dir" / "plot.png"
    _bad([*_SENS, "--universe", "1,2", "--plot", str(target)], capsys, "does not exist")
    assert not target.parent.exists()


def test_plot_unknown_extension(tmp_path: Path, capsys: Any) -> None:
    pytest.importorskip("matplotlib")
    target = tmp_path / "plot.foo"
    _bad(
        [*_SENS, "--universe", "1,2", "--plot", str(target)],
        capsys,
        "image format 'foo': unknown; choose from ",
    )
    assert not target.exists()


def test_plot_size_bounded(tmp_path: Path, capsys: Any) -> None:
    argv = ["sensitivity", "--universe", "1,2", "--universe-kind", "range", "--query", "sum"]
    _bad([*argv, "--size", "100000", "--plot", str(tmp_path / "p.png")], capsys, "--size=")


# --- golden files -----------------------------------------------------------------------


def _golden_file(tmp_path: Path, text: str) -> str:
    f = tmp_path / "golden.json"
    f.write_text(text)
    return str(f)


def _one_vector() -> dict[str, Any]:
    doc = load_shipped()
    doc["vectors"] = doc["vectors"][:1]
    return doc


def test_golden_deep_nesting(tmp_path: Path, capsys: Any) -> None:
    f = _golden_file(tmp_path, "[" * 100_000 + "]" * 100_000)
    _bad(["golden", "check", f], capsys, "nested too deeply")


@pytest.mark.parametrize("literal", ["1e400", "-1e400", "Infinity", "-Infinity", "NaN"])
def test_golden_non_finite_numbers(literal: str, tmp_path: Path, capsys: Any) -> None:
    text = json.dumps(_one_vector()).replace('"noise": [', f'"noise": [{literal}, ', 1)
    _bad(["golden", "check", _golden_file(tmp_path, text)], capsys, "not valid JSON")


@pytest.mark.parametrize("field", ["horizon", "parameters.horizon", "both"])
def test_golden_huge_horizon_refused_before_computing(
    field: str, tmp_path: Path, capsys: Any
) -> None:
    doc = _one_vector()
    vec = doc["vectors"][0]
    if field in ("horizon", "both"):
        vec["horizon"] = 10**12
    if field in ("parameters.horizon", "both"):
        vec["parameters"]["horizon"] = 10**12
    _bad(["golden", "check", _golden_file(tmp_path, json.dumps(doc))], capsys, "10000000000")


def test_golden_horizon_not_an_int(tmp_path: Path, capsys: Any) -> None:
    doc = _one_vector()
    doc["vectors"][0]["horizon"] = 8.5
    _bad(["golden", "check", _golden_file(tmp_path, json.dumps(doc))], capsys, "must be an int")


# --- audit / conform sizes --------------------------------------------------------------


def test_audit_samples_out_of_range(capsys: Any) -> None:
    argv = ["audit", "binary", "--epsilon", "1", "--horizon", "4", "--samples", str(2**70)]
    _bad(argv, capsys, "--samples=")


def test_conform_runs_out_of_range_before_the_target_runs(capsys: Any) -> None:
    argv = ["conform", "binary", "--epsilon", "1", "--horizon", "4"]
    _bad([*argv, "--reference", "binary", "--runs", str(10**11)], capsys, "--runs=")
    _bad([*argv, "--reference", "binary", "--runs", "1e11"], capsys, "--runs")


@pytest.mark.parametrize("command", ["audit", "conform"])
def test_horizon_out_of_range(command: str, capsys: Any) -> None:
    argv = [command, "binary", "--epsilon", "1", "--horizon", str(10**12)]
    _bad(argv, capsys, "--horizon=")


def test_audit_epsilon_overflowing_a_float(capsys: Any) -> None:
    argv = ["audit", "binary", "--epsilon", "1e400", "--horizon", "4", "--samples", "200"]
    _bad(argv, capsys, "--epsilon=1e400")


@pytest.mark.parametrize("timeout", ["0", "-1", "nan", "inf", "1e300"])
def test_timeout_out_of_range(timeout: str, capsys: Any) -> None:
    argv = ["audit", "binary", "--epsilon", "1", "--horizon", "4", "--timeout", timeout]
    _bad(argv, capsys, "--timeout=")
    _bad([*argv, "--exact"], capsys, "--timeout=")


# --- --json and errors ------------------------------------------------------------------


def _json_error(argv: list[str], capsys: Any) -> dict[str, Any]:
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 2
    assert err.count("\n") == 1 and err.startswith("dpref: error: ")
    assert out.count("\n") == 1
    obj: dict[str, Any] = json.loads(out)
    assert set(obj) == {"error"}
    assert obj["error"]["message"] == err[len("dpref: error: ") : -1]
    return obj["error"]


def test_json_error_release(tmp_path: Path, capsys: Any) -> None:
    f = tmp_path / "stream.txt"
    f.write_text("1\n0\n")
    err = _json_error(["release", "binary", "--epsilon", "-1", "--input", str(f), "--json"], capsys)
    assert err["parameter"] == "epsilon"


def test_json_error_sensitivity(capsys: Any) -> None:
    err = _json_error([*_SENS, "--universe", "1,1e400", "--json"], capsys)
    assert err["parameter"] == "--universe"


def test_json_error_golden(tmp_path: Path, capsys: Any) -> None:
    err = _json_error(["golden", "check", str(tmp_path / "missing.json"), "--json"], capsys)
    assert err["parameter"] == "file"


def test_json_error_usage(capsys: Any) -> None:
    argv = ["conform", "binary", "--horizon", "4", "--runs", "x", "--json"]
    err = _json_error(argv, capsys)
    assert err["parameter"] == "--runs"


def test_closed_stdout_is_no_traceback() -> None:
    """``dpref release … | head`` — the reader goes away: exit quietly (141), no traceback."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "dpref", "release", "binary", "--epsilon", "1", "--input", "-"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=ROOT,
    )
    assert proc.stdout is not None
    proc.stdout.close()
    _, err = proc.communicate(b"1\n" * 200_000)
    assert b"Traceback" not in err, err
    assert proc.returncode == 141, (proc.returncode, err)
