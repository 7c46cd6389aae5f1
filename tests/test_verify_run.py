"""``dpref verify`` as a run: parts in worker processes, rows in the fixed order, the
same rows for any ``--jobs``, the certificate (``--out``), the progress display and
``dpref --version``."""

from __future__ import annotations

import io
import json
import sys
import time
from dataclasses import replace
from importlib.metadata import version
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import dpref
import dpref.verify.cli as verify_cli
from dpref.cli import main
from dpref.verify import (
    Part,
    Suite,
    VerifyOptions,
    VerifyRow,
    by_mechanism,
    parts,
    run_verify,
    splittable,
)
from dpref.verify.certificate import FORMAT, certificate_paths, proof_kinds, to_markdown
from dpref.verify.plans import agreement_suite, plan_suite


# ----------------------------------------------------------- toy suites
def _draws(opts: VerifyOptions) -> list[VerifyRow]:
    """One row per mechanism named, its detail a draw from a generator seeded by the row."""
    rows = []
    for name in opts.mechanisms:
        rng = np.random.default_rng([opts.seed, len(name)])
        rows.append(VerifyRow("toy", name, 1, 0, detail=str(rng.integers(10**9))))
    return rows


toy_suite = splittable(by_mechanism)(_draws)
"""A split suite: one part per mechanism."""


def slow_first_suite(opts: VerifyOptions) -> list[VerifyRow]:
    """An unsplit suite whose work takes a while, so later parts finish before it."""
    time.sleep(0.3)
    return [VerifyRow("slow", "first", 1, 0)]


def raising_suite(opts: VerifyOptions) -> list[VerifyRow]:
    raise dpref.ParameterError("mechanism='x': planted error")


def failing_suite(opts: VerifyOptions) -> list[VerifyRow]:
    return [VerifyRow("bad", "always", 2, 1, detail="planted failure")]


NAMES = ("binary", "simple1", "two-level", "honaker")


def _comparable(rows: list[VerifyRow]) -> list[dict[str, Any]]:
    """A row without its wall time (the only field that may differ between runs)."""
    return [{k: v for k, v in r.as_dict().items() if k != "seconds"} for r in rows]


def test_a_split_suite_becomes_one_part_per_mechanism() -> None:
    opts = VerifyOptions(mechanisms=NAMES)
    todo = parts([toy_suite, slow_first_suite], opts)
    assert [p.opts.mechanisms for p in todo] == [(n,) for n in NAMES] + [NAMES]
    assert [p.label for p in todo][:2] == ["_draws binary", "_draws simple1"]


def test_rows_come_in_suite_order_whatever_finishes_first() -> None:
    opts = VerifyOptions(mechanisms=NAMES)
    seen: list[VerifyRow] = []
    done: list[Part] = []
    rows = run_verify(
        opts, seen.append, jobs=2, suites=[slow_first_suite, toy_suite], finished=done.append
    )
    assert [r.mechanism for r in rows] == ["first", *NAMES]
    assert seen == rows  # printed in the fixed order, each once
    assert len(done) == 1 + len(NAMES)


@pytest.mark.parametrize("jobs", [2, 3])
def test_the_rows_do_not_depend_on_the_number_of_jobs(jobs: int) -> None:
    """Real suites (plans and agreement draw random horizons and streams): the same rows in
    one process and in ``jobs`` processes, because each part seeds its own generators."""
    opts = VerifyOptions(
        max_exhaustive=5, random_horizons=2, random_max=40, mechanisms=("binary", "sqrt")
    )
    suites: list[Suite] = [plan_suite, agreement_suite, toy_suite]
    one = run_verify(opts, jobs=1, suites=suites)
    many = run_verify(opts, jobs=jobs, suites=suites)
    assert _comparable(one) == _comparable(many)
    assert len(one) == 6 and all(r.failed == 0 for r in one)
    # the seed matters: another seed draws other horizons and streams
    other = run_verify(replace(opts, seed=1), jobs=1, suites=[toy_suite])
    assert _comparable(other) != _comparable(one[4:])


def test_a_failed_part_is_a_failed_row() -> None:
    rows = run_verify(VerifyOptions(), jobs=2, suites=[failing_suite, slow_first_suite])
    assert [r.status for r in rows] == ["FAIL", "ok"]


@pytest.mark.parametrize("jobs", [1, 2])
def test_an_error_in_a_part_is_a_failed_row(jobs: int) -> None:
    """A check that raises is the checked code failing: one FAIL row naming the error, and
    the other parts' rows still come (a mutant whose plan cannot be built is reported in
    the table, not by a run that stops)."""
    rows = run_verify(VerifyOptions(), jobs=jobs, suites=[toy_suite, raising_suite])
    failed = [r for r in rows if r.failed]
    assert len(failed) == 1 and len(rows) > 1
    assert "ParameterError" in failed[0].detail and "planted error" in failed[0].detail
    assert failed[0].suite == "raising"


@pytest.mark.parametrize("jobs", [0, 65, True, 1.5])
def test_jobs_is_validated(jobs: Any) -> None:
    with pytest.raises(dpref.DprefError, match="jobs"):
        run_verify(VerifyOptions(), jobs=jobs, suites=[failing_suite])


# ----------------------------------------------------------- the command
def _one_suite(monkeypatch: pytest.MonkeyPatch, suites: list[Suite]) -> None:
    """Run the command over ``suites`` instead of the registered ones."""
    real = verify_cli.run_verify

    def fake(opts: VerifyOptions, *args: Any, **kw: Any) -> list[VerifyRow]:
        return real(opts, *args, **{**kw, "suites": suites})

    monkeypatch.setattr(verify_cli, "run_verify", fake)


def test_out_writes_markdown_and_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _one_suite(monkeypatch, [plan_suite, toy_suite])
    out = tmp_path / "cert.md"
    code = main(
        ["verify", "--max-horizon", "4", "--mechanism", "binary", "--jobs", "2", "--out", str(out)]
    )
    assert code == 0
    printed = capsys.readouterr()
    assert printed.err == ""  # not a terminal: no progress display
    assert f"certificate: {out} and {out.with_suffix('.json')}" in printed.out
    cert = json.loads(out.with_suffix(".json").read_text())
    assert cert["format"] == FORMAT and cert["passed"] is True
    assert cert["dpref_version"] == version("dpref")
    assert set(cert["packages"]) == {"numpy", "scipy", "sympy"}
    assert cert["options"] == {
        "max_horizon": 4,
        "random_horizons": 4,
        "random_max": 2048,
        "mechanisms": ["binary"],
        "jobs": 2,
    }
    assert cert["seed"] == 20261122 and cert["wall_seconds"] > 0
    assert [r["suite"] for r in cert["rows"]] == ["plans", "toy"]
    assert cert["totals"]["checks"] == sum(r["checks"] for r in cert["rows"])
    assert cert["totals"]["failed_rows"] == 0
    for key in ("git_commit", "git_dirty", "platform", "python", "started"):
        assert key in cert
    md = out.read_text()
    assert md.startswith("# dpref verify certificate\n\n**PASSED**")
    assert "| 1 | plans | binary |" in md and "| 2 | toy | binary |" in md


def test_a_failure_is_exit_1_and_a_failed_certificate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _one_suite(monkeypatch, [failing_suite])
    out = tmp_path / "c.md"
    assert main(["verify", "--out", str(out), "--jobs", "1"]) == 1
    assert "planted failure" in capsys.readouterr().out
    cert = json.loads(out.with_suffix(".json").read_text())
    assert cert["passed"] is False and cert["totals"]["failed_checks"] == 1
    assert "**FAILED**" in out.read_text()


@pytest.mark.parametrize(
    "where",
    ["missing-dir/cert.md", "cert.json", "a-directory", "a-directory/"],
)
def test_an_unwritable_out_is_refused_before_the_run(
    where: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    (tmp_path / "a-directory").mkdir()
    _one_suite(monkeypatch, [failing_suite])
    monkeypatch.setattr(verify_cli, "run_verify", lambda *a, **k: pytest.fail("ran"))
    assert main(["verify", "--out", str(tmp_path / where)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("dpref: error: --out=")


def test_the_json_twin_has_the_suffix_json() -> None:
    assert certificate_paths("x/cert.md") == (Path("x/cert.md"), Path("x/cert.json"))
    assert certificate_paths("cert") == (Path("cert"), Path("cert.json"))


@pytest.mark.parametrize("argv", [["--mechanism", "nope"], ["--jobs", "0"], ["--jobs", "99"]])
def test_bad_verify_flags_are_one_line_and_exit_2(
    argv: list[str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(verify_cli, "run_verify", lambda *a, **k: pytest.fail("ran"))
    assert main(["verify", *argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and argv[0] in err


# ----------------------------------------------------------- progress display
class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _progress_run(monkeypatch: pytest.MonkeyPatch) -> str:
    _one_suite(monkeypatch, [slow_first_suite, toy_suite])
    term = _Terminal()
    monkeypatch.setattr(sys, "stderr", term)
    assert main(["verify", "--mechanism", "binary", "--jobs", "2"]) == 0
    return term.getvalue()


def test_a_terminal_gets_a_progress_bar(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("tqdm")
    shown = _progress_run(monkeypatch)
    assert "2/2" in shown  # the bar counts the parts
    assert capsys.readouterr().out.splitlines()[1].startswith("slow")


def test_without_tqdm_a_terminal_gets_a_status_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "tqdm", None)  # import tqdm raises ImportError
    shown = _progress_run(monkeypatch)
    assert "verify: 0/2 parts" in shown and "verify: 1/2 parts" in shown
    assert shown.endswith("\r\x1b[K")  # and it is cleared at the end
    assert "all passed" in capsys.readouterr().out


# ----------------------------------------------------------- version
def test_version_agrees_everywhere(capsys: pytest.CaptureFixture[str]) -> None:
    assert dpref.__version__ == version("dpref")
    with pytest.raises(SystemExit) as stop:
        main(["--version"])
    assert stop.value.code == 0
    assert capsys.readouterr().out == f"dpref {dpref.__version__}\n"


def test_the_certificate_counts_the_proof_labels() -> None:
    """The proofs rows' label counts reach the certificate (JSON and Markdown) and sum up."""
    kinds = {"proven about the code": 2, "proven lemma": 1, "checked": 3, "note": 1, "FAILED": 0}
    rows = [
        VerifyRow("proofs", "binary", 7, 0, extra={"kinds": kinds}),
        VerifyRow("proofs", "kary", 7, 0, extra={"kinds": {**kinds, "note": 0}}),
        VerifyRow("plans", "binary", 10, 0),  # not a proofs row: not counted
    ]
    counted = proof_kinds(rows)
    assert list(counted) == ["binary", "kary", "total"]
    assert counted["total"] == {
        "proven about the code": 4,
        "proven lemma": 2,
        "checked": 6,
        "note": 1,
        "FAILED": 0,
    }
    assert proof_kinds([rows[2]]) == {}
    cert = {
        "format": FORMAT,
        "passed": True,
        "totals": {"rows": 3, "checks": 24, "failed_rows": 0, "failed_checks": 0},
        "wall_seconds": 1.0,
        "git_commit": None,
        "git_dirty": False,
        "dpref_version": "0",
        "platform": "p",
        "python": "3",
        "packages": {},
        "started": "now",
        "options": {
            "max_horizon": 1,
            "random_horizons": 0,
            "random_max": 1,
            "mechanisms": [],
            "jobs": 1,
        },
        "seed": 0,
        "proof_kinds": counted,
        "rows": [r.as_dict() for r in rows],
    }
    text = to_markdown(cert)
    assert "## Proof labels" in text and "| total | 4 | 2 | 6 | 1 | 0 |" in text
