"""``dpref golden run``: correct third-party targets pass, planted bugs are caught at the right
first mismatch, hostile targets become findings, and an external command works."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from dpref.audit.conformance.golden_run import run_golden, select_vectors
from dpref.cli import main
from dpref.errors import ParameterError, TargetError
from dpref.golden import load_shipped
from dpref.noise import NOISE_KINDS

TARGETS = str(Path(__file__).with_name("golden_targets.py"))
BINARY = {"mechanism": "binary", "case": "binary[T=16]*"}
"""Binary vectors at T = 16: every noise kind and budget (11 vectors; brackets are literal)."""
EXPONENTIAL = {"mechanism": "exponential", "params": {"alpha": "1/2"}}


def _run(fn: str, **kw: Any) -> Any:
    return run_golden(f"{TARGETS}:{fn}", **kw)


def test_selection() -> None:
    doc = load_shipped()
    vecs = select_vectors(doc, **BINARY)
    assert len(vecs) == 11 and {v["horizon"] for v in vecs} == {16}
    assert {v["noise_kind"] for v in vecs} == set(NOISE_KINDS)
    only = select_vectors(doc, mechanism="binary", noise="discrete", params={"epsilon": "3"})
    assert [v["case"] for v in only] == [
        "binary[T=5] discrete epsilon=3",
        "binary[T=16] discrete epsilon=3",
    ]
    with pytest.raises(ParameterError, match="mechanism='nope': no golden vector matches"):
        select_vectors(doc, mechanism="nope")


@pytest.mark.parametrize(
    ("fn", "select"),
    [
        ("binary", BINARY),
        ("binary_vector", BINARY),
        ("exponential", EXPONENTIAL),
        ("exponential_float", EXPONENTIAL),
    ],
)
def test_correct_targets_pass(fn: str, select: dict[str, Any]) -> None:
    run = _run(fn, **select)
    assert run.ok and run.passed == run.vectors >= 11, run.text()


@pytest.mark.parametrize(
    ("fn", "case", "step", "hint"),
    [
        ("binary_shifted", "binary[T=16]", 1, "shifted by one node"),
        ("binary_swapped", "binary[T=16]", 2, "nodes 1 [1, 2] and 2 [3, 3] swapped"),
        ("binary_wrong_scale", "binary[T=16]", 1, "multiplied by 2"),
        ("binary_last_step", "binary[T=16]", 16, "node 15 [1, 16] appears missing"),
    ],
)
def test_planted_bugs_first_mismatch(fn: str, case: str, step: int, hint: str) -> None:
    run = _run(fn, **BINARY)
    assert not run.ok and run.failures
    first = run.failures[0][1]
    assert first.case == case and first.step == step, str(first)
    assert first.rule == "bit-exact" and hint in first.hint, first.hint
    want = next(v for v in load_shipped()["vectors"] if v["case"] == case)
    assert first.expected == want["outputs"][step - 1] != first.got


def test_float32_decayed_sum_is_beyond_tolerance() -> None:
    """Float64 summation passes at rtol 1e-12 (test above); float32 summation does not."""
    run = _run("exponential_float32", **EXPONENTIAL)
    assert len(run.mismatches) == run.vectors
    first = run.mismatches[0]
    assert first.rule.startswith("rtol=1e-12") and first.step == 1
    assert abs(first.got - first.expected) > 1e-9


@pytest.mark.parametrize(
    ("fn", "kind"),
    [
        ("raises", "exception"),
        ("exits", "exited"),
        ("wrong_length", "wrong-length"),
        ("nan", "non-finite"),
    ],
)
def test_hostile_targets_are_findings(fn: str, kind: str, capsys: Any) -> None:
    code = main(["golden", "run", f"{TARGETS}:{fn}", "--case", "binary[T=16] discrete *", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 1 and out["ok"] is False
    assert out["first"]["type"] == "finding" and out["first"]["kind"] == kind, out["first"]


def test_hanging_target_times_out_and_is_given_up(capsys: Any) -> None:
    code = main(["golden", "run", f"{TARGETS}:sleeps", "--mechanism", "binary", "--timeout", "0.5"])
    text = capsys.readouterr().out
    assert code == 3  # nothing wrong was established: inconclusive (docs/auditing.md §5)
    assert "timeout at T=1: ran longer than timeout=0.5s" in text
    assert (
        "gave-up: the target timed out 3 times in a row; the other 37 vectors were not run" in text
    )


def test_external_command(capsys: Any) -> None:
    cmd = f"{sys.executable} {TARGETS}"
    assert (
        main(
            [
                "golden",
                "run",
                "--command",
                cmd,
                "--mechanism",
                "exponential",
                "--param",
                "alpha=1/2",
                "--case",
                "exponential[T=9,*",
            ]
        )
        == 0
    )
    assert "golden vectors match" in capsys.readouterr().out
    assert (
        main(["golden", "run", "--command", cmd + " --bug", "--case", "binary[T=5]*", "--json"])
        == 1
    )
    first = json.loads(capsys.readouterr().out)["first"]
    assert first["case"] == "binary[T=5]" and first["step"] == 1
    assert first["got"] == first["expected"] + 1
    assert main(["golden", "run", "--command", "false", "--case", "binary[T=5]"]) == 1
    assert "exited at T=5: the command exited with status 1" in capsys.readouterr().out


def test_bad_input_exits_2(capsys: Any) -> None:
    assert main(["golden", "run", f"{TARGETS}:binary", "--mechanism", "nope"]) == 2
    assert main(["golden", "run", f"{TARGETS}:missing", "--mechanism", "binary"]) == 2
    assert main(["golden", "run", "--mechanism", "binary"]) == 2  # neither target nor command
    assert main(["golden", "run", f"{TARGETS}:binary", "--param", "k"]) == 2
    assert main(["golden", "run", f"{TARGETS}:binary", "--rtol", "-1"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 5 and all(
        line.startswith("dpref: error: ") for line in err.splitlines()
    )
    with pytest.raises(TargetError, match="no attribute missing"):
        _run("missing", mechanism="binary")
