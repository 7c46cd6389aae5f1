"""The horizon sweep (``dpref audit`` without ``--horizon``), time budgets and partial
reports (``--max-seconds``, ^C, SIGTERM), and conform's noise probe — issue 25 items 6, 7.

No test asserts a wall-clock time: budgets are spent on an injected clock, or by a target
that cannot finish within them (``slow_binary`` sleeps 0.05 s per call, and the audit
would make hundreds of thousands of calls).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from dpref import Binary
from dpref.audit import audit, exact_audit
from dpref.audit import sweep as sweep_module
from dpref.audit.conformance.conform import conform
from dpref.audit.isolation.runners import InProcessRunner
from dpref.audit.reports.deadline import OutOfTime, budget, check_max_seconds, stoppable
from dpref.audit.sweep import GRID, RANDOM_RANGE, run_sweep, sweep_horizons
from dpref.cli import Terminated, main
from dpref.errors import ParameterError

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
from targets import ceil_binary as cb  # noqa: E402

CEIL = "tests/targets/ceil_binary.py:binary_ceil_levels"
OK = "tests/targets/ceil_binary.py:binary_levels"
SLOW = "tests/targets/ceil_binary.py:slow_binary"


class StepClock:
    """A clock that advances ``step`` seconds every time it is read."""

    def __init__(self, step: float = 1.0) -> None:
        self.now, self.step = 0.0, step

    def __call__(self) -> float:
        self.now += self.step
        return self.now


def _exact_in_process(fn: Callable[..., Any]) -> Callable[[int], Any]:
    """Exact audits of ``fn`` at ε = 1 in this process (no worker start per horizon)."""
    return lambda T: exact_audit(fn, T, epsilon=1, runner=InProcessRunner(fn, "rng"))


# ------------------------------------------------------------------ the grid
def test_horizons_cover_the_grid_and_random_ones_from_the_seed() -> None:
    hs = sweep_horizons(0)
    assert set(GRID) <= set(hs) and hs == sorted(hs)
    extra = [t for t in hs if t not in GRID]
    assert len(extra) == 3 and all(RANDOM_RANGE[0] <= t <= RANDOM_RANGE[1] for t in extra)
    assert sweep_horizons(0) == hs and sweep_horizons(1) != hs  # stated seed, reproducible


# ------------------------------------------------------------------ done when
SMALL = (1, 2, 3, 4, 5, 8, 9)


def test_sweep_catches_ceil_log2_levels_and_passes_the_correct_tree() -> None:
    """Issue 25, "done when": the ⌈log₂T⌉-levels Binary is wrong only at powers of two
    (ε = ∞ at T = 1, (L+1)/L elsewhere) and is caught; the correct tree passes."""
    bad = run_sweep(
        target="binary_ceil_levels",
        claim="ε = 1",
        exact=_exact_in_process(cb.binary_ceil_levels),
        sampled=None,
        horizons=SMALL,
    )
    assert bad.verdict == "violation" and bad.exit_code == 1
    by_t = {r.horizon: r for r in bad.rows}
    assert [t for t, r in by_t.items() if r.verdict == "violation"] == [1, 2, 4, 8]
    assert by_t[1].result.startswith("ε = ∞") and by_t[8].result.startswith("ε = 4/3")
    assert by_t[5].verdict == "no-violation-found"  # one horizon alone would have passed it
    good = run_sweep(
        target="binary_levels",
        claim="ε = 1",
        exact=_exact_in_process(cb.binary_levels),
        sampled=None,
        horizons=SMALL,
    )
    assert good.verdict == "no-violation-found" and good.exit_code == 0
    assert all(r.method == "exact" and r.result == "ε = 1" for r in good.rows)
    assert [row["horizon"] for row in good.as_dict()["rows"]] == list(SMALL)


def test_sweep_falls_back_to_the_sampled_audit_when_the_noise_cannot_be_recorded() -> None:
    """Laplace noise made of two exponential draws: the exact audit is unavailable
    (non-laplace), so T = 1 and every later horizon use the sampled audit, which still
    catches the noiseless T = 1."""

    def sampled(T: int) -> Any:
        return audit(cb.binary_ceil_levels_exponential, horizon=T, epsilon=1, samples=2000, seed=1)

    r = run_sweep(
        target="exponential",
        claim="ε = 1",
        exact=_exact_in_process(cb.binary_ceil_levels_exponential),
        sampled=sampled,
        horizons=(1, 3),
    )
    assert [row.method for row in r.rows] == ["sampled", "sampled"]
    assert "exact audit unavailable: non-laplace" in r.rows[0].detail
    assert r.rows[0].verdict == "violation" and r.verdict == "violation"


def test_audit_sweep_from_python() -> None:
    from dpref.audit.sweep import audit_sweep

    r = audit_sweep(cb.binary_ceil_levels, epsilon=1, method="exact", horizons=(1, 5))
    assert [(row.horizon, row.verdict) for row in r.rows] == [
        (1, "violation"),
        (5, "no-violation-found"),
    ]
    with pytest.raises(ParameterError, match="one horizon"):
        audit_sweep(Binary(epsilon=1, horizon=8), epsilon=1)


# ------------------------------------------------------------------ budgets
def test_a_sweep_out_of_time_lists_the_rest_as_not_tested() -> None:
    clock = StepClock(0.0)
    inner = _exact_in_process(cb.binary_levels)

    def exact(T: int) -> Any:
        clock.now += 10.0  # each horizon "takes" 10 s
        return inner(T)

    r = run_sweep(
        target="binary_levels",
        claim="ε = 1",
        exact=exact,
        sampled=None,
        horizons=(1, 2, 3, 4, 5),
        max_seconds=25,
        clock=clock,
    )
    assert r.partial and r.stopped_by == "max-seconds"
    assert [row.horizon for row in r.rows if row.verdict] == [1, 2, 3]
    assert r.as_dict()["not_tested"] == [4, 5]
    assert r.verdict == "inconclusive" and r.exit_code == 3  # correct, but not all tested
    assert "not tested: T = 4, 5" in r.reason and "partial     yes" in r.summary()


def test_a_violation_found_before_the_budget_ran_out_stands() -> None:
    clock = StepClock(0.0)
    inner = _exact_in_process(cb.binary_ceil_levels)

    def exact(T: int) -> Any:
        clock.now += 10.0
        return inner(T)

    r = run_sweep(
        target="ceil",
        claim="ε = 1",
        exact=exact,
        sampled=None,
        horizons=(1, 3, 5),
        max_seconds=5,
        clock=clock,
    )
    assert r.partial and r.verdict == "violation" and r.exit_code == 1
    assert [row.verdict for row in r.rows] == ["violation", None, None]


def test_a_sampled_audit_stops_between_batches_when_the_budget_is_spent() -> None:
    """The budget is checked where the sampling loops report progress: the run stops
    part-way (some samples drawn, not all) and raises OutOfTime."""
    m = Binary(epsilon=1, horizon=8)
    with budget(4, clock=StepClock()) as b, pytest.raises(OutOfTime):
        audit(m, horizon=8, samples=20_000, seed=1)
    assert b.unit == "samples" and 0 < b.done < b.total
    with budget(4, clock=StepClock()) as b, pytest.raises(OutOfTime):
        conform(m, m, horizon=8, runs=20_000, seed=1)
    assert b.unit == "runs" and 0 < b.done < b.total
    assert b.stage_name == "causality and the main sample"
    assert b.checks_done[0].startswith("pass  crashes  ran at T = 1, 2, 3, 4, 5, 7, 8")


def test_max_seconds_prints_a_partial_report_marked_inconclusive(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A slow target and a budget it cannot meet: one JSON object, partial, exit 3."""
    code = main(["audit", SLOW, "--horizon", "8", "--epsilon", "1", "--max-seconds", "0.2",
                 "--json"])  # fmt: skip
    out = json.loads(capsys.readouterr().out)
    assert code == 3
    assert out["partial"] is True and out["verdict"] == "inconclusive"
    assert out["stopped_by"] == "max-seconds" and out["target"] == SLOW


@pytest.mark.parametrize(("exc", "code", "cause"), [(KeyboardInterrupt, 130, "SIGINT"),
                                                     (Terminated, 143, "SIGTERM")])  # fmt: skip
def test_signals_print_the_partial_report_and_keep_their_exit_codes(
    exc: type[BaseException], code: int, cause: str, capsys: pytest.CaptureFixture[str]
) -> None:
    import argparse

    from dpref.audit.reports.deadline import tick

    @stoppable("conform")
    def run(args: argparse.Namespace) -> int:
        from dpref.audit.conformance.conform_checks import Check
        from dpref.audit.reports.deadline import stage

        stage("the main sample", [Check("crashes", False, None, None, None, 0.0, "boom")])
        tick(0, total=2000, unit="runs")
        tick(300)
        raise exc()

    args = argparse.Namespace(target="t.py:f", horizon=64, epsilon="1", reference="binary",
                              max_seconds=None, json=True)  # fmt: skip
    assert run(args) == code
    captured = capsys.readouterr()
    out = json.loads(captured.out)
    assert out["partial"] and out["verdict"] == "inconclusive" and out["stopped_by"] == cause
    assert out["progress"] == "300 of 2,000 planned runs"
    assert out["checks_done"] == ["FAIL  crashes  boom"]
    assert "before the stop, crashes FAILED" in out["reason"]  # established, and said
    assert f"interrupted by {cause}" in captured.err


def test_max_seconds_is_validated_before_anything_runs() -> None:
    assert check_max_seconds("--max-seconds", None) is None
    for bad in (0, -1, float("nan"), float("inf"), "5", True):
        with pytest.raises(ParameterError, match="max-seconds"):
            check_max_seconds("--max-seconds", bad)
    assert main(["audit", OK, "--horizon", "4", "--epsilon", "1", "--max-seconds", "-1"]) == 2


# ------------------------------------------------------------------ sweep CLI
def test_sweep_command_line(monkeypatch: pytest.MonkeyPatch, capsys: Any) -> None:
    """``dpref audit TARGET --epsilon 1`` without ``--horizon``: one JSON object, one row
    per horizon, exit 1 for the ⌈log₂T⌉ tree (grid shortened for the test)."""
    monkeypatch.setattr(sweep_module, "sweep_horizons", lambda seed: [1, 3])
    assert main(["audit", CEIL, "--epsilon", "1", "--exact", "--json"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert out["mode"] == "sweep" and out["verdict"] == "violation" and not out["partial"]
    assert [(r["horizon"], r["verdict"]) for r in out["rows"]] == [
        (1, "violation"),
        (3, "no-violation-found"),
    ]
    assert main(["audit", "binary", "--epsilon", "1"]) == 0  # a built-in, rebuilt at each T
    text = capsys.readouterr().out
    assert text.startswith("verdict     no violation found") and "holds-exactly" in text


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--pair", "0,1/1,1"], "--pair=0,1/1,1: a pair fixes the stream length"),
        (["--delta", "1e-6"], "--delta=1e-6: an (ε, δ) claim"),
        (["--exact", "--samples", "1000"], "--samples=1000: not used by --exact"),
        (["--no-exact", "--protocol", "rng"], "--protocol=rng: used only by the exact audit"),
    ],
)
def test_sweep_options_never_collide_silently(
    extra: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["audit", OK, "--epsilon", "1", *extra]) == 2
    assert message in capsys.readouterr().err


def test_a_sweep_without_a_claim(capsys: pytest.CaptureFixture[str]) -> None:
    """No claim: the sampled audit has nothing to test (an error with --no-exact)."""
    assert main(["audit", OK, "--no-exact"]) == 2
    assert "epsilon=None: the sampled audit tests a claim" in capsys.readouterr().err


@pytest.mark.slow
def test_full_sweep_from_the_command_line(capsys: pytest.CaptureFixture[str]) -> None:
    """The whole grid, worker-isolated exact audits (≈ 20 s each)."""
    assert main(["audit", CEIL, "--epsilon", "1", "--json"]) == 1
    bad = json.loads(capsys.readouterr().out)
    caught = [r["horizon"] for r in bad["rows"] if r["verdict"] == "violation"]
    assert caught == [1, 2, 4, 8, 16, 32, 64, 128]
    assert main(["audit", OK, "--epsilon", "1", "--json"]) == 0
    good = json.loads(capsys.readouterr().out)
    assert {r["verdict"] for r in good["rows"]} == {"no-violation-found"}
    assert len(good["rows"]) == len(sweep_horizons(0))


# ------------------------------------------------------------------ conform's probe
def test_conform_probes_fail_a_noiseless_release_at_t1() -> None:
    """The ⌈log₂T⌉ tree adds Lap(0) at T = 1: the crash probe's repeat runs show it
    (a difference from the reference); the correct tree passes the same probe."""
    ref = Binary(epsilon=1, horizon=16)
    bad = conform(cb.binary_ceil_levels, ref, horizon=16, runs=20, seed=1)
    crashes = next(c for c in bad.checks if c.name == "crashes")
    assert crashes.passed is False and "noiseless at T = 1" in crashes.detail
    assert bad.verdict != "no-violation-found" and bad.exit_code == 1
    good = conform(cb.binary_levels, ref, horizon=16, runs=20, seed=1)
    assert next(c for c in good.checks if c.name == "crashes").passed is True


@pytest.mark.slow
@pytest.mark.parametrize(("sig", "code"), [("SIGINT", 130), ("SIGTERM", 143)])
def test_a_real_signal_prints_the_partial_report(sig: str, code: int) -> None:
    """The real thing: a long conform run in a subprocess, signalled once it is sampling."""
    import signal
    import subprocess
    import time

    argv = [sys.executable, "-m", "dpref", "conform", OK, "--reference", "binary",
            "--horizon", "64", "--epsilon", "1", "--runs", "1000000", "--json"]  # fmt: skip
    proc = subprocess.Popen(argv, cwd=HERE.parent, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    time.sleep(15)  # imports, the probes, then the million runs (minutes): surely sampling
    proc.send_signal(getattr(signal, sig))
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == code
    report = json.loads(out)
    assert report["partial"] and report["stopped_by"] == sig
    assert report["verdict"] == "inconclusive"
    assert f"interrupted by {sig}" in err.decode()
