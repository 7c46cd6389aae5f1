"""Verdicts that never overstate, implied ε only under a matching noise structure,
the reference-free conform mode, and options that never collide silently.

Error rates.  Every run here has a fixed seed, so each test is deterministic; the
statements are what the tests would do over seeds.  A correct target is declared
"does not conform" with probability at most its ``alpha``: the correct targets here
run at ``FALSE_FAILURE = 1e-6`` (so a false failure of this file's correct-target
tests has probability < 1e-5 per run).  Power: the structure test must reject the
Honaker-style tree at ``POWER_ALPHA = 0.01`` with 2,000 runs (observed p ≈ 1e-65, so
the margin is enormous), and the shortfall targets must keep their implied ε.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from dpref import Binary, SimpleII
from dpref.audit import audit
from dpref.audit.conformance.conform import conform
from dpref.audit.pure.loss import EXIT_CODES, INCONCLUSIVE, NO_VIOLATION, VIOLATION
from dpref.cli import main
from dpref.domains import bits
from dpref.errors import DprefError, ParameterError

sys.path.insert(0, str(Path(__file__).parent))
import audit_targets as at

TARGETS = str(Path(__file__).parent / "audit_targets.py")
FALSE_FAILURE = 1e-6
"""alpha of the conformance runs on correct targets (false-failure rate per test)."""
POWER_ALPHA = 0.01
"""alpha of the power checks (the default of conform)."""


def _failed(report: Any) -> set[str]:
    return {c.name for c in report.checks if c.passed is False}


def _check(report: Any, name: str) -> Any:
    return next(c for c in report.checks if c.name == name)


def test_exit_codes() -> None:
    assert EXIT_CODES == {NO_VIOLATION: 0, VIOLATION: 1, INCONCLUSIVE: 3}


# ------------------------------------------------------------------ audit verdicts
def test_audit_of_a_target_that_always_raises_is_inconclusive() -> None:
    r = audit(at.always_raises, horizon=3, epsilon=1, samples=2_000, seed=1)
    assert r.epsilon_lower_bound is None and not r.violation and not r.ok
    assert r.verdict == INCONCLUSIVE and r.exit_code == 3
    assert r.streams_failed == r.streams_total > 0
    assert "no neighbouring pair could be sampled" in r.reason
    assert r.as_dict()["verdict"] == INCONCLUSIVE and r.as_dict()["reason"] == r.reason
    assert r.summary().splitlines()[0].startswith("verdict     INCONCLUSIVE")
    assert "no violation found" not in r.summary()


def test_audit_with_pairs_it_could_not_sample_is_inconclusive() -> None:
    r = audit(at.raises, horizon=3, epsilon=1, samples=2_000, seed=1)
    assert r.epsilon_lower_bound is not None  # the other pairs were audited
    assert r.verdict == INCONCLUSIVE and 0 < r.streams_failed < r.streams_total
    assert "not audited" in r.reason


def _half_noise_but_raises_on_all_ones(x: Any, rng: np.random.Generator) -> Any:
    if x.size > 1 and x.all():
        raise RuntimeError("boom")
    return at.simple2_half_noise(x, rng)


def test_a_proven_violation_stays_proven_despite_crashes() -> None:
    r = audit(_half_noise_but_raises_on_all_ones, horizon=3, epsilon=1, samples=20_000, seed=1)
    assert r.streams_failed > 0 and r.findings
    assert r.violation and r.verdict == VIOLATION and r.exit_code == 1
    assert "also" in r.reason and "failed on" in r.reason
    assert r.summary().splitlines()[0].startswith("verdict     VIOLATION")


def test_no_violation_found_says_what_it_does_not_prove() -> None:
    r = audit(Binary(epsilon=1, horizon=4), horizon=4, samples=20_000, seed=2)
    assert r.verdict == NO_VIOLATION and r.ok and r.exit_code == 0
    assert "never prove" in r.reason


def test_nan_outputs_make_the_verdict_inconclusive() -> None:
    # issue 24: a finding used to leave `no-violation-found` and exit 0
    r = audit(at.returns_nan, horizon=3, epsilon=1, samples=2_000, seed=1)
    assert r.verdict == INCONCLUSIVE and r.exit_code == 3 and not r.ok
    assert "non-finite" in r.reason and "not a pass" in r.reason


def test_plan_events_beyond_their_horizon_are_a_parameter_error() -> None:
    # was: ZeroDivisionError (no event family left to split the confidence over)
    with pytest.raises(ParameterError, match="events='plan'"):
        audit(Binary(epsilon=1, horizon=1100), horizon=1100, samples=1000, events="plan")


# --------------------------------------------------- implied ε needs the structure
def test_honaker_tree_against_binary_implies_no_epsilon() -> None:
    T = 64
    ref = Binary(epsilon=1, horizon=T)
    r = conform(at.honaker_tree, ref, horizon=T, runs=2000, seed=1, alpha=POWER_ALPHA)
    assert _check(r, "noise-law").passed is False  # power of the structure test
    assert r.structure == "differs"
    assert r.implied_epsilon is None and r.noise_scale_ratio is None
    assert _failed(r) == {"noise-law"}  # less variance is not judged a failure
    assert (
        _check(r, "variance").passed is None and "not a violation" in _check(r, "variance").detail
    )
    assert r.verdict == VIOLATION  # it is not Binary; whether it is ε-DP is not established
    assert f"noise structure differs from {ref!r}: no ε implied" in r.summary()
    assert "Not established: whether it is ε-DP" in r.reason
    assert r.as_dict()["implied_epsilon"] is None and r.as_dict()["structure"] == "differs"


def test_honaker_tree_is_epsilon_dp_by_the_audit() -> None:
    r = audit(at.honaker_tree, horizon=5, epsilon=1, samples=40_000, seed=3)
    assert not r.violation


def test_shortfall_of_the_reference_structure_still_implies_epsilon() -> None:
    T = 64
    r = conform(at.binary_log_t, Binary(epsilon=1, horizon=T), horizon=T, runs=2000, seed=1)
    assert r.structure == "matches" and _check(r, "noise-law").passed is True
    assert r.implied_epsilon is not None and r.implied_epsilon["low"] > 1
    assert r.verdict == VIOLATION and "implied ε" in r.reason


def test_correct_targets_match_the_structure() -> None:
    for name, ref in (
        ("binary_ok", Binary(epsilon=1, horizon=100)),
        ("simple2_ok", SimpleII(epsilon=1, horizon=100)),
    ):
        r = conform(getattr(at, name), ref, horizon=100, runs=2000, seed=9, alpha=FALSE_FAILURE)
        assert r.verdict == NO_VIOLATION and r.conforms and r.exit_code == 0, r.summary()
        assert r.structure == "matches" and r.implied_epsilon is None


def test_variance_path_implies_no_epsilon() -> None:
    ref = SimpleII(epsilon=1, horizon=16, noise="discrete")
    r = conform(at.simple2_half_noise, ref, horizon=16, runs=1000, seed=10)
    assert {"noise-scale", "variance"} <= _failed(r)
    assert r.structure == "untested" and r.implied_epsilon is None
    assert "no ε implied" in r.reason


# ------------------------------------------------------------------ reference-free
def test_reference_free_correct_target() -> None:
    r = conform(at.binary_ok, None, horizon=20, seed=1)
    assert [c.name for c in r.checks] == ["crashes", "causality"]
    assert "T = 1, 2, 3, 4, 5, 8, 16, 19, 20" in _check(r, "crashes").detail
    assert r.verdict == NO_VIOLATION and r.conforms and r.runs == 0
    d = r.as_dict()
    assert d["reference"] is None and d["claimed_epsilon"] is None and d["verdict"] == NO_VIOLATION
    assert "reference   none" in r.summary()


@pytest.mark.parametrize(
    ("name", "check", "kind"),
    [
        ("binary_ceil_levels", "crashes", "exception"),
        ("always_raises", "crashes", "exception"),
        ("wrong_length", "crashes", "wrong-length"),
        ("returns_nan", "crashes", "non-finite"),
        ("binary_peek", "causality", None),
    ],
)
def test_reference_free_defects(name: str, check: str, kind: str | None) -> None:
    r = conform(getattr(at, name), None, horizon=16, seed=2)
    assert check in _failed(r) and r.verdict == VIOLATION and r.exit_code == 1
    if kind is not None:
        assert kind in {f.kind for f in r.findings}


def test_reference_free_timeout_is_inconclusive() -> None:
    r = conform(at.sleeps, None, horizon=2, seed=1, timeout=0.3)
    assert not _failed(r) and r.verdict == INCONCLUSIVE and r.exit_code == 3
    assert "timeout" in r.reason


def _tiny_global_noise(x: Any, rng: np.random.Generator) -> Any:
    return at.binary_ok(x, rng) + 1e-13 * np.random.default_rng().random(x.size)


def test_nondeterminism_below_isclose_tolerance_is_found() -> None:
    # was: IndexError (np.isclose called the runs equal where array_equal did not)
    r = conform(_tiny_global_noise, None, horizon=8, seed=3)
    causal = _check(r, "causality")
    assert causal.passed is None and "not deterministic" in causal.detail
    assert r.verdict == INCONCLUSIVE and "not-deterministic" in {f.kind for f in r.findings}


def test_reference_free_options_that_do_not_apply() -> None:
    with pytest.raises(ParameterError, match="runs=100"):
        conform(at.binary_ok, None, horizon=4, runs=100)
    with pytest.raises(ParameterError, match=r"alpha=0\.1"):
        conform(at.binary_ok, None, horizon=4, alpha=0.1)
    with pytest.raises(DprefError, match="domain="):
        conform(at.binary_ok, Binary(epsilon=1, horizon=4), horizon=4, domain=bits())


# --------------------------------------------------------------------------- CLI
def _run(argv: list[str], capsys: Any) -> tuple[int, str, str]:
    code = main(argv)
    out = capsys.readouterr()
    return code, out.out, out.err


def test_cli_inconclusive_exit_code_and_json(capsys: Any) -> None:
    argv = ["audit", f"{TARGETS}:always_raises", "--horizon", "3", "--epsilon", "1"]
    code, out, _ = _run([*argv, "--samples", "2000", "--seed", "1", "--json"], capsys)
    assert code == 3 and json.loads(out)["verdict"] == INCONCLUSIVE
    code, out, _ = _run([*argv, "--samples", "2000", "--seed", "1"], capsys)
    assert code == 3 and out.startswith("verdict     INCONCLUSIVE")


def test_cli_reference_free_conform(capsys: Any) -> None:
    code, out, err = _run(
        ["conform", f"{TARGETS}:binary_ok", "--horizon", "16", "--seed", "1", "--json"], capsys
    )
    assert code == 0 and err == ""
    data = json.loads(out)
    assert data["verdict"] == NO_VIOLATION and data["reference"] is None
    code, out, _ = _run(["conform", f"{TARGETS}:binary_peek", "--horizon", "16"], capsys)
    assert code == 1 and out.startswith("verdict     DOES NOT CONFORM")


BB = f"{TARGETS}:binary_ok"


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        # a mechanism flag with nothing to configure: a black box without --reference
        # (--epsilon with --delta is an (ε, δ) claim: tests/test_audit_gdp.py)
        (["audit", BB, "--horizon", "3", "--delta", "1e-5"], "--delta=1e-5"),
        (["audit", BB, "--horizon", "3", "--epsilon", "1", "--window", "2"], "--window=2"),
        (["audit", BB, "--horizon", "3", "--epsilon", "1", "--noise", "discrete"], "--noise"),
        (["conform", BB, "--horizon", "3", "--alpha", "0.5"], "--alpha=0.5"),
        # a mechanism flag the reference does not take
        (
            [
                "audit",
                BB,
                "--horizon",
                "3",
                "--epsilon",
                "1",
                "--reference",
                "binary",
                "--delta",
                "2",
            ],
            "delta",
        ),
        # audit options that do not apply
        (["audit", BB, "--horizon", "3", "--epsilon", "1", "--no-exact"], "--no-exact"),
        (["audit", "binary", "--horizon", "3", "--epsilon", "1", "--runs", "50"], "--runs"),
        (["audit", "binary", "--horizon", "3", "--epsilon", "1", "--sampl", "5000"], "--sampl"),
        # conform options that do not apply
        (["conform", "binary", "--horizon", "3", "--epsilon", "1", "--samples", "9"], "--samples"),
        (["conform", BB, "--horizon", "3", "--runs", "50"], "--runs=50"),
        (["conform", BB, "--horizon", "3", "--false-alarm", "0.1"], "--false-alarm=0.1"),
        (["conform", BB, "--horizon", "3", "--epsilon", "1"], "--epsilon=1"),
        (["conform", "binary", "--horizon", "3"], "epsilon=None"),
        (["conform", BB, "--horizon", "3", "--reference", "binary"], "epsilon=None"),
    ],
)
def test_cli_options_that_do_not_apply_are_errors(
    argv: list[str], needle: str, capsys: Any
) -> None:
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse usage errors
        code = int(exc.code or 0)
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1 and err.startswith("dpref: error: ") and needle in err


def test_cli_flags_that_apply_are_accepted(capsys: Any) -> None:
    code, out, _ = _run(
        [
            "audit",
            BB,
            "--horizon",
            "3",
            "--epsilon",
            "1",
            "--reference",
            "binary",
            "--noise",
            "laplace",
            "--samples",
            "4000",
            "--seed",
            "1",
            "--json",
        ],
        capsys,
    )
    assert code in (0, 1) and json.loads(out)["verdict"] in (NO_VIOLATION, VIOLATION)


def test_exact_mode_refuses_options_it_does_not_use(capsys: pytest.CaptureFixture[str]) -> None:
    """--exact samples nothing: --samples (or a mechanism flag on a black box) is an error."""
    base = ["audit", "binary", "--exact", "--horizon", "8", "--epsilon", "1"]
    assert main([*base, "--samples", "200000"]) == 2
    assert "--samples" in capsys.readouterr().err
    blackbox = ["audit", "tests/injectable_targets.py:binary_ok", "--exact", "--horizon", "8"]
    assert main([*blackbox, "--epsilon", "1", "--delta", "2"]) == 2
    assert "--delta" in capsys.readouterr().err
    assert main([*blackbox, "--epsilon", "1", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["verdict"] == "no-violation-found"
