"""Tests of ``dpref conform``: planted bugs are flagged, correct targets are not.

Error rates.  :func:`dpref.audit.conformance.conform.conform` flags a conforming target with
probability at most ``alpha`` (its four statistical checks get ``alpha/4`` each,
Bonferroni within each check; causality and crash checks are deterministic).  The
false-alarm test runs ``FA_RUNS`` conformance tests of correct mechanisms at
``alpha = 0.01`` and allows ``FA_MAX_ALARMS``: P[Bin(30, 0.01) ≥ 6] < 1e-6 = ``ALPHA``.
Correct black boxes are checked one seed each at ``alpha = ALPHA``.  Power: each
planted bug must be flagged at ``alpha = 0.01``, by the check that names its defect.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy import stats

from dpref import Binary, Hybrid, SimpleI, SimpleII, TwoLevel
from dpref.audit.conformance.conform import conform, crash_horizons
from dpref.cli import main
from dpref.errors import DprefError

sys.path.insert(0, str(Path(__file__).parent))
import audit_targets as at

TARGETS = str(Path(__file__).parent / "audit_targets.py")
ALPHA = 1e-6
FA_RUNS = 30
FA_MAX_ALARMS = 5  # scipy.stats.binom.sf(5, 30, 0.01) = 6.3e-7 < ALPHA


def test_false_alarm_constant_derivation() -> None:
    assert stats.binom.sf(FA_MAX_ALARMS, FA_RUNS, 0.01) < ALPHA


def _failed(report: Any) -> set[str]:
    return {c.name for c in report.checks if c.passed is False}


def test_crash_horizons() -> None:
    assert crash_horizons(1) == [1]
    assert crash_horizons(20) == [1, 2, 3, 4, 5, 8, 16, 19, 20]


# ------------------------------------------------------------------ power
PLANTED = [
    # (target, reference class, check that must fail)
    ("binary_log_t", Binary, "noise-scale"),
    ("two_level_unit", TwoLevel, "noise-scale"),
    ("simple1_no_t", SimpleI, "noise-scale"),
    ("simple2_half_noise", SimpleII, "noise-scale"),
    ("binary_exact_last", Binary, "variance"),
    ("binary_redraw", Binary, "noise-law"),
    ("binary_gaussian", Binary, "noise-law"),
]


@pytest.mark.parametrize(("name", "cls", "check"), PLANTED)
def test_conform_flags_planted_bugs(name: str, cls: Any, check: str) -> None:
    T = 64
    r = conform(getattr(at, name), cls(epsilon=1, horizon=T), horizon=T, runs=2000, seed=3)
    assert not r.conforms, r.summary()
    assert check in _failed(r)


@pytest.mark.parametrize(
    ("name", "cls", "implied"),
    [
        ("binary_log_t", Binary, 7 / 6),  # L/log2(T) at T = 64
        ("two_level_unit", TwoLevel, 2.0),
        ("simple2_half_noise", SimpleII, 2.0),
        ("simple1_no_t", SimpleI, 64.0),
    ],
)
def test_implied_epsilon_of_noise_shortfalls(name: str, cls: Any, implied: float) -> None:
    T = 64
    r = conform(getattr(at, name), cls(epsilon=1, horizon=T), horizon=T, runs=2000, seed=4)
    assert r.implied_epsilon is not None
    assert r.implied_epsilon["low"] <= implied * 1.0001
    assert r.implied_epsilon["high"] >= implied * 0.9999
    assert abs(r.implied_epsilon["estimate"] / implied - 1) < 0.03


def test_half_percent_scale_shortfall_detected_at_T_1000() -> None:
    T = 1000
    r = conform(at.binary_short_0_5pct, Binary(epsilon=1, horizon=T), horizon=T, runs=2000, seed=5)
    assert _failed(r) == {"noise-scale"}
    ratio = r.noise_scale_ratio
    assert ratio is not None and ratio["low"] <= 0.995 <= ratio["high"] < 1.0
    assert r.implied_epsilon is not None and r.implied_epsilon["estimate"] > 1.0


def test_causality_violation_by_replay() -> None:
    r = conform(at.binary_peek, Binary(epsilon=1, horizon=32), horizon=32, runs=500, seed=6)
    causal = next(c for c in r.checks if c.name == "causality")
    assert causal.passed is False and "changed" in causal.detail
    assert _failed(r) == {"causality"}


def test_crash_reports_the_horizon() -> None:
    r = conform(at.binary_ceil_levels, Binary(epsilon=1, horizon=20), horizon=20, runs=100, seed=7)
    crash = next(c for c in r.checks if c.name == "crashes")
    assert crash.passed is False
    assert "exception at T = 1, 2, 4, 8, 16: IndexError" in crash.detail
    assert {f.horizon for f in r.findings} >= {1, 2, 4, 8, 16}
    assert not r.conforms


def test_nondeterministic_target_is_said_so() -> None:
    def fresh_rng(x: Any, rng: np.random.Generator) -> Any:
        return at.simple2_ok(x, np.random.default_rng())

    r = conform(
        fresh_rng, SimpleII(epsilon=1, horizon=16), horizon=16, runs=500, seed=8, alpha=ALPHA
    )
    causal = next(c for c in r.checks if c.name == "causality")
    assert causal.passed is None and "not deterministic" in causal.detail
    # causality went untested: nothing failed, but conformance is not established
    assert not _failed(r) and r.verdict == "inconclusive" and not r.conforms
    assert "causality" in r.reason and r.exit_code == 3


# ----------------------------------------------------------- false alarms
def test_conform_false_alarm_rate_within_bound() -> None:
    alarms = 0
    for seed in range(FA_RUNS // 5):
        for m in (
            SimpleI(epsilon=1, horizon=32),
            SimpleII(epsilon=1, horizon=32),
            TwoLevel(epsilon=1, horizon=32),
            Binary(epsilon=1, horizon=32),
            Hybrid(epsilon=1, horizon=32),
        ):
            r = conform(m, m, horizon=32, runs=1000, seed=200 + seed)
            alarms += not r.conforms
            assert r.noise_scale_ratio is not None
            assert not [c for c in r.checks if c.passed is None]
    assert alarms <= FA_MAX_ALARMS


@pytest.mark.parametrize(
    ("name", "cls"), [("binary_ok", Binary), ("two_level_ok", TwoLevel), ("simple2_ok", SimpleII)]
)
def test_correct_black_boxes_conform(name: str, cls: Any) -> None:
    r = conform(
        getattr(at, name), cls(epsilon=1, horizon=100), horizon=100, runs=2000, seed=9, alpha=ALPHA
    )
    assert r.conforms, r.summary()


def test_discrete_reference_uses_the_variance_path() -> None:
    ref = Binary(epsilon=1, horizon=16, noise="discrete")
    ok = conform(ref, ref, horizon=16, runs=1000, seed=10, alpha=ALPHA)
    assert ok.conforms
    law = next(c for c in ok.checks if c.name == "noise-law")
    assert law.passed is None and "discrete" in law.detail
    bad = conform(
        at.simple2_half_noise,
        SimpleII(epsilon=1, horizon=16, noise="discrete"),
        horizon=16,
        runs=1000,
        seed=10,
    )
    assert {"noise-scale", "variance"} <= _failed(bad)


@pytest.mark.slow
def test_conform_false_alarm_rate_many_seeds() -> None:
    alarms = 0
    for seed in range(40):
        for cls in (SimpleI, SimpleII, TwoLevel, Binary, Hybrid):
            m = cls(epsilon=1, horizon=200)
            alarms += not conform(m, m, horizon=200, runs=2000, seed=5000 + seed).conforms
    assert alarms <= int(stats.binom.isf(ALPHA, 200, 0.01)) + 1


def test_bad_input() -> None:
    with pytest.raises(DprefError, match="runs=5"):
        conform(at.binary_ok, Binary(epsilon=1, horizon=4), horizon=4, runs=5)
    with pytest.raises(DprefError, match="horizon=8"):
        conform(at.binary_ok, Binary(epsilon=1, horizon=4), horizon=8)
    with pytest.raises(DprefError, match="reference="):
        conform(at.binary_ok, "binary", horizon=4)  # type: ignore[arg-type]


def test_cli_conform_json(capsys: Any) -> None:
    code = main(
        [
            "conform",
            f"{TARGETS}:simple2_half_noise",
            "--reference",
            "simple2",
            "--horizon",
            "16",
            "--epsilon",
            "1",
            "--runs",
            "500",
            "--seed",
            "1",
            "--json",
        ]
    )
    data = json.loads(capsys.readouterr().out)
    for key in (
        "target",
        "reference",
        "conforms",
        "checks",
        "noise_scale_ratio",
        "implied_epsilon",
        "findings",
    ):
        assert key in data
    assert code == 1 and data["conforms"] is False
    for c in data["checks"]:
        assert {"name", "passed", "statistic", "p_value", "interval", "detail"} <= set(c)
    code = main(
        [
            "conform",
            "binary",
            "--reference",
            "binary",
            "--horizon",
            "16",
            "--epsilon",
            "1",
            "--runs",
            "500",
            "--seed",
            "1",
        ]
    )
    out = capsys.readouterr().out
    assert code == 0 and "verdict     conforms" in out
