"""Tests of ``dpref.audit``: privacy-loss lower bounds, exact loss, robustness, CLI.

Error rates.  Every audit here runs at a fixed seed, so each test is deterministic;
the statements below are what the tests would do over random seeds.

* A lower bound from :func:`dpref.audit.audit` exceeds the true loss with
  probability at most ``1 − confidence`` (Clopper–Pearson, Bonferroni over the two
  proportions and the test events).  The false-alarm test runs ``FA_RUNS`` audits of
  correct mechanisms at confidence 0.99 and allows at most ``FA_MAX_ALARMS`` alarms:
  if the per-run rate is ≤ 0.01, P[Bin(30, 0.01) ≥ 6] < 1e-6 = ``ALPHA``.
* Power: every planted bug must be proven at confidence 0.99 within 2·10⁵ samples
  per side, and the bound on correct mechanisms must reach a fixed share of ε.
"""

from __future__ import annotations

import json
import math
import sys
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy import stats

from dpref import Binary, Hybrid, SimpleI, SimpleII, TwoLevel
from dpref.audit import audit, exact_loss, standard_pairs
from dpref.audit.pure.events import feature_pairs
from dpref.audit.stats import cp_lower, cp_upper, exponential_scale_interval
from dpref.cli import main
from dpref.domains import bits, bounded_integers
from dpref.errors import DprefError, ParameterError, TargetError

sys.path.insert(0, str(Path(__file__).parent))
import audit_targets as at

TARGETS = str(Path(__file__).parent / "audit_targets.py")
ALPHA = 1e-6
CONFIDENCE = 0.99
FA_RUNS = 30
FA_MAX_ALARMS = 5  # P[Bin(30, 0.01) >= 6] = 6.3e-7 < ALPHA (scipy.stats.binom.sf(5, 30, .01))


def test_false_alarm_constant_derivation() -> None:
    assert stats.binom.sf(FA_MAX_ALARMS, FA_RUNS, 1 - CONFIDENCE) < ALPHA


# ---------------------------------------------------------------- statistics
def test_clopper_pearson_bounds_match_scipy() -> None:
    ci = stats.binomtest(30, 100).proportion_ci(confidence_level=0.98, method="exact")
    assert cp_lower(30, 100, 0.01) == pytest.approx(ci.low)
    assert cp_upper(30, 100, 0.01) == pytest.approx(ci.high)
    assert cp_lower(0, 100, 0.01) == 0.0
    assert cp_upper(100, 100, 0.01) == 1.0
    assert cp_upper(0, 100, 0.01) == pytest.approx(1 - 0.01 ** (1 / 100))


def test_gamma_interval_covers_and_excludes() -> None:
    rng = np.random.default_rng(1)
    z = np.abs(rng.laplace(0, 2.0, 100_000))
    lo, hi = exponential_scale_interval(float(z.sum()), z.size, 1e-6)
    assert lo < 2.0 < hi
    assert hi < 2.0 * 1.03  # a 3 % shortfall would be excluded at this size


# --------------------------------------------------------------- neighbours
def test_standard_pairs_are_event_level_neighbours() -> None:
    rng = np.random.default_rng(0)
    for T in (1, 2, 5, 16):
        pairs = standard_pairs(T, bits(), rng)
        assert pairs
        for p in pairs:
            diff = np.flatnonzero(np.array(p.x) != np.array(p.x_prime))
            assert diff.size == 1
        positions = {p.position for p in pairs}
        assert positions == set(range(1, T + 1))  # issue 24: every position at T <= 16
    # above 16: first, middle, last and one random position in each of 16 blocks
    big = {p.position - 1 for p in standard_pairs(40, bits(), rng)}
    assert {0, 19, 39} <= big
    assert all(big & set(range(s, min(40, s + 3))) for s in range(0, 40, 3))
    ints = standard_pairs(4, bounded_integers(-3, 5), rng)
    for p in ints:
        i = p.position - 1
        assert {p.x[i], p.x_prime[i]} == {-3.0, 5.0} or -3.0 < p.x[i] < 5.0


def test_feature_pairs_cover_coordinates_and_differences() -> None:
    f = feature_pairs(5)
    assert f.shape == (5 + 10, 2)
    big = feature_pairs(100)
    assert big.shape[0] <= 300
    assert (7, 6) in {tuple(r) for r in big.tolist()}  # y_8 − y_7: consecutive
    assert (5, 3) in {tuple(r) for r in big.tolist()}  # y_6 − y_4: binary parent of 6


# --------------------------------------------------------------- exact loss
@pytest.mark.parametrize(
    "mech",
    [
        Binary(epsilon=1, horizon=5),
        Binary(epsilon=Fraction(1, 2), horizon=8, noise="discrete"),
        TwoLevel(epsilon=1, horizon=8),
        SimpleI(epsilon=1, horizon=4),
        SimpleII(epsilon=Fraction(3, 4), horizon=6),
    ],
)
def test_exact_loss_equals_declared_for_correct_mechanisms(mech: Any) -> None:
    e = exact_loss(mech, mech.horizon)
    assert e.epsilon == mech.declared_epsilon
    assert e.scope == "outputs"


class _LogTBinary(Binary):
    """The log₂T bug as a built-in (T = 4: scale 2/ε instead of 3/ε)."""

    def _scale(self) -> Fraction:
        assert self.horizon is not None
        return Fraction(self.horizon.bit_length() - 1) / self.epsilon


def test_exact_loss_of_a_buggy_builtin_is_computed_not_declared() -> None:
    m = _LogTBinary(epsilon=1, horizon=4)
    e = exact_loss(m, 4)
    assert e.epsilon == Fraction(3, 2)
    assert e.nodes == ((1, 1), (1, 2), (1, 4))
    report = audit(m, horizon=4, samples=60_000, seed=3)
    assert report.violation
    assert report.exact is not None and report.exact.epsilon == Fraction(3, 2)


def test_exact_loss_rejects_large_horizons() -> None:
    with pytest.raises(ParameterError, match="horizon=9"):
        exact_loss(Binary(epsilon=1, horizon=9), 9)


# ------------------------------------------------- planted bugs are proven
@pytest.mark.parametrize(
    ("name", "horizon", "samples"),
    [
        ("binary_log_t", 5, 200_000),  # true loss 3/log2(5) ε = 1.29ε
        ("two_level_unit", 4, 20_000),  # 2ε
        ("simple1_no_t", 4, 20_000),  # Tε
        ("simple2_half_noise", 4, 20_000),  # 2ε
        ("binary_exact_last", 4, 20_000),  # ∞
    ],
)
def test_audit_proves_planted_violations(name: str, horizon: int, samples: int) -> None:
    report = audit(
        getattr(at, name),
        horizon=horizon,
        epsilon=1,
        samples=samples,
        seed=5,
        confidence=CONFIDENCE,
    )
    assert report.violation, report.summary()
    assert report.epsilon_lower_bound is not None and report.epsilon_lower_bound > 1.0
    assert report.samples <= 200_000
    assert report.neighbours is not None and report.event
    assert not report.findings
    if name == "binary_log_t":  # a valid bound never exceeds the true loss 3/log₂5 = 1.29
        assert report.epsilon_lower_bound <= 3 / math.log2(5)
        assert report.neighbours.position == 1  # item 1 lies in the most nodes


# --------------------------------------------------------------- false alarms
def _correct() -> list[Any]:
    return [
        SimpleI(epsilon=1, horizon=4),
        SimpleII(epsilon=1, horizon=4),
        TwoLevel(epsilon=1, horizon=4),
        Binary(epsilon=1, horizon=4),
        Hybrid(epsilon=1, horizon=4),
    ]


def test_audit_false_alarm_rate_within_bound() -> None:
    alarms = 0
    runs = 0
    for seed in range(FA_RUNS // 5):
        for mech in _correct():
            r = audit(mech, horizon=4, samples=10_000, seed=100 + seed, exact=False)
            runs += 1
            alarms += r.violation
            assert r.epsilon_lower_bound is not None
    assert runs == FA_RUNS
    assert alarms <= FA_MAX_ALARMS


@pytest.mark.parametrize("name", ["binary_ok", "two_level_ok", "simple2_ok"])
def test_audit_of_correct_black_boxes_finds_nothing(name: str) -> None:
    r = audit(getattr(at, name), horizon=4, epsilon=1, samples=20_000, seed=9)
    assert not r.violation and not r.findings


# ------------------------------------------------------------------ tightness
@pytest.mark.parametrize("cls", [Binary, TwoLevel, SimpleII])
def test_tightness_ci(cls: Any) -> None:
    """2·10⁵ samples at T = 8, ε = 1: plan-aware ≥ 0.85ε, black-box ≥ 0.8ε."""
    m = cls(epsilon=1, horizon=8)
    r = audit(m, horizon=8, samples=200_000, seed=11, exact=False)
    by_kind = {e.kind: e.epsilon_lower_bound for e in r.events}
    assert by_kind["plan-aware"] >= 0.85
    assert by_kind["black-box"] >= 0.8
    assert r.epsilon_lower_bound is not None and r.epsilon_lower_bound <= 1.0


@pytest.mark.slow
@pytest.mark.parametrize("cls", [Binary, TwoLevel, SimpleII])
def test_tightness_million(cls: Any) -> None:
    """10⁶ samples at T = 8, ε = 1: plan-aware ≥ 0.9ε, black-box alone ≥ 0.8ε."""
    m = cls(epsilon=1, horizon=8)
    r = audit(m, horizon=8, samples=1_000_000, seed=12, exact=False)
    assert max(e.epsilon_lower_bound for e in r.events if e.kind == "plan-aware") >= 0.9
    rb = audit(m, horizon=8, samples=1_000_000, seed=13, events="blackbox", exact=False)
    assert rb.epsilon_lower_bound is not None and rb.epsilon_lower_bound >= 0.8


@pytest.mark.slow
def test_audit_false_alarm_rate_many_seeds() -> None:
    alarms = 0
    for seed in range(40):
        for mech in _correct():
            alarms += audit(mech, horizon=4, samples=20_000, seed=1000 + seed).violation
    assert alarms <= int(stats.binom.isf(ALPHA, 200, 0.01)) + 1


def test_reference_enables_plan_aware_event_for_black_box() -> None:
    r = audit(
        at.binary_ok,
        horizon=5,
        epsilon=1,
        samples=40_000,
        seed=2,
        reference=Binary(epsilon=1, horizon=5),
    )
    assert {e.kind for e in r.events} == {"black-box", "plan-aware"}
    assert not r.violation


def test_discrete_noise_builtin_is_sampled_and_exact_reported() -> None:
    m = Binary(epsilon=1, horizon=4, noise="discrete")
    r = audit(m, horizon=4, samples=20_000, seed=4)
    assert not r.violation
    assert r.exact is not None and r.exact.epsilon == 1
    assert r.epsilon_lower_bound is not None and r.epsilon_lower_bound > 0.5


# ------------------------------------------------------------ reproducibility
def test_same_seed_same_report() -> None:
    a = audit(at.simple2_half_noise, horizon=3, epsilon=1, samples=5_000, seed=42)
    b = audit(at.simple2_half_noise, horizon=3, epsilon=1, samples=5_000, seed=42)
    assert a.epsilon_lower_bound == b.epsilon_lower_bound and a.event == b.event
    c = audit(Binary(epsilon=1, horizon=3), horizon=3, samples=5_000, seed=42)
    d = audit(Binary(epsilon=1, horizon=3), horizon=3, samples=5_000, seed=42)
    assert c.as_dict()["events"] == d.as_dict()["events"]


# ------------------------------------------------------- untrusted targets
@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("raises", "exception"),
        ("wrong_length", "wrong-length"),
        ("returns_scalar", "bad-output"),
        ("mutates_input", "mutates-input"),
    ],
)
def test_misbehaving_targets_become_findings(name: str, kind: str) -> None:
    r = audit(getattr(at, name), horizon=3, epsilon=1, samples=2_000, seed=1)
    assert [f.kind for f in r.findings] == [kind]
    assert r.findings[0].horizon == 3
    assert not r.ok


def test_nan_outputs_are_a_finding_but_the_audit_goes_on() -> None:
    r = audit(at.returns_nan, horizon=3, epsilon=1, samples=2_000, seed=1)
    assert [f.kind for f in r.findings] == ["non-finite"]
    assert r.epsilon_lower_bound is not None


def test_all_nan_outputs_are_a_finding_not_a_crash() -> None:
    r = audit(at.all_nan, horizon=4, epsilon=1, samples=2_000, seed=1)
    assert [f.kind for f in r.findings] == ["non-finite"]
    assert not r.violation


def test_hanging_target_is_stopped_by_the_timeout() -> None:
    r = audit(at.sleeps, horizon=2, epsilon=1, samples=1_000, seed=1, timeout=0.3)
    assert r.findings and r.findings[0].kind == "timeout"
    assert r.epsilon_lower_bound is None


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"epsilon": 0}, "epsilon=0"),
        ({"samples": 10}, "samples=10"),
        ({"confidence": 1.0}, "confidence=1.0"),
        ({"events": "magic"}, "events='magic'"),
        ({"pairs": [([0, 0, 0], [1, 1, 0])]}, "exactly one item"),
        ({"pairs": [([0, 0], [1, 0])]}, "horizon=3"),
        ({"timeout": -1}, "timeout=-1"),
    ],
)
def test_bad_input_raises_before_sampling(kwargs: dict[str, Any], match: str) -> None:
    args: dict[str, Any] = {"horizon": 3, "epsilon": 1, "samples": 1000}
    args.update(kwargs)
    with pytest.raises(DprefError, match=match):
        audit(at.raises, **args)


def test_unloadable_targets() -> None:
    with pytest.raises(TargetError, match="no such file"):
        audit("nowhere/x.py:f", horizon=2, epsilon=1)
    with pytest.raises(TargetError, match="has no attribute"):
        audit(f"{TARGETS}:nothing_here", horizon=2, epsilon=1)
    with pytest.raises(TargetError, match="importing it raised"):
        audit("dpref_no_such_module_xyz:f", horizon=2, epsilon=1)


# ------------------------------------------------------------------------ CLI
def _run(argv: list[str], capsys: Any) -> tuple[int, str, str]:
    code = main(argv)
    out = capsys.readouterr()
    return code, out.out, out.err


def test_cli_audit_json_keys_and_exit_code(capsys: Any) -> None:
    code, out, err = _run(
        [
            "audit",
            f"{TARGETS}:simple2_half_noise",
            "--horizon",
            "3",
            "--epsilon",
            "1",
            "--samples",
            "20000",
            "--seed",
            "1",
            "--json",
        ],
        capsys,
    )
    data = json.loads(out)
    for key in (
        "target",
        "claimed_epsilon",
        "epsilon_lower_bound",
        "confidence",
        "violation",
        "neighbours",
        "event",
        "samples",
        "seconds",
        "findings",
    ):
        assert key in data
    assert data["violation"] is True and code == 1
    assert err == ""


def test_cli_audit_builtin_text(capsys: Any) -> None:
    code, out, _ = _run(
        [
            "audit",
            "binary",
            "--horizon",
            "4",
            "--epsilon",
            "1",
            "--samples",
            "20000",
            "--seed",
            "2",
        ],
        capsys,
    )
    assert code == 0
    assert "no violation found" in out and "exact loss  1" in out


def test_cli_audit_pair_and_bad_input(capsys: Any) -> None:
    code, out, _ = _run(
        [
            "audit",
            f"{TARGETS}:simple2_ok",
            "--horizon",
            "2",
            "--epsilon",
            "1",
            "--samples",
            "4000",
            "--pair",
            "0,0/1,0",
            "--json",
        ],
        capsys,
    )
    assert json.loads(out)["neighbours"]["x_prime"] == [1, 0]
    code, out, err = _run(
        ["audit", f"{TARGETS}:simple2_ok", "--horizon", "2", "--epsilon", "1", "--pair", "0,0/1,1"],
        capsys,
    )
    assert code == 2 and out == "" and err.count("\n") == 1 and "exactly one item" in err
    code, out, _ = _run(["audit", "binary", "--epsilon", "1"], capsys)  # no horizon: a sweep
    assert code == 0 and "no violation at any of the 20 horizons" in out


def test_epsilon_lower_bound_never_exceeds_its_exact_value() -> None:
    """The float ``ln(p₁_low) − ln(p₂_high)`` rounds either way; the reported bound is shaved
    so that it stays below the 60-digit value of the same Clopper–Pearson bounds."""
    import mpmath

    from dpref.audit.stats import cp_lower, cp_upper, epsilon_lower_bound

    rng = np.random.default_rng(5)
    above = 0
    for _ in range(300):
        n = int(rng.integers(100, 10**6))
        c1, c2 = sorted(int(v) for v in rng.integers(1, n, 2))[::-1]
        a = 0.0025
        lo, hi = cp_lower(c1, n, a), cp_upper(c2, n, a)
        with mpmath.workdps(60):
            exact = mpmath.log(mpmath.mpf(lo)) - mpmath.log(mpmath.mpf(hi))
        raw = math.log(lo) - math.log(hi)
        above += raw > exact
        assert epsilon_lower_bound(c1, n, c2, n, a) <= exact
    assert above > 0  # power: the unshaved float does exceed the exact value sometimes
