"""Tests of the learned-projection events of ``dpref.audit`` (``events.best_projections``).

Error rates.  Every audit here runs at a fixed seed, so each test is deterministic;
the statements below are what the tests would do over random seeds.

* False alarms: ``FA_RUNS`` black-box audits of correct mechanisms at T = 16 (where the
  projection family wins the black-box slot) at confidence ``CONFIDENCE`` may raise at
  most ``FA_MAX_ALARMS`` alarms.  Each run alarms with probability ≤ 1 − CONFIDENCE
  (Clopper–Pearson on a fresh split, whatever the event), so a correct audit fails
  this test with probability ≤ P[Bin(15, 0.01) ≥ 5] = 2.7e-7 < ``ALPHA``.
* Power: T = 16 is where the half-line conjunctions lose the loss of Simple I, which
  is spread evenly over all 16 outputs.  With 2·10⁵ samples per side the oracle
  (the exact Laplace log-likelihood ratio, thresholded) reaches only ≈ 0.51ε at
  confidence 0.99, so ``SPREAD_FLOOR`` = 0.4ε is asked of the black-box audit (the
  conjunctions alone reached 0.10–0.14ε).  The smallest error that matters: half the
  noise (loss 2ε) must be proven; the right scale must not.
"""

from __future__ import annotations

import sys
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy import stats

from dpref import Binary, Hybrid, SimpleI, SimpleII, TwoLevel
from dpref.audit import audit
from dpref.audit.isolation.targets import Target
from dpref.audit.pure import events as ev
from dpref.audit.pure import loss
from dpref.audit.pure.events import ProjectionEvent, best_projections, fit_projections
from dpref.audit.pure.pairs import COVER_SCREEN

sys.path.insert(0, str(Path(__file__).parent))

ALPHA = 1e-6
CONFIDENCE = 0.99
FA_RUNS = 15
FA_MAX_ALARMS = 4  # P[Bin(15, 0.01) >= 5] = 2.7e-7 < ALPHA (scipy.stats.binom.sf(4, 15, .01))
SPREAD_FLOOR = 0.4
"""Required black-box ε_lb for Simple I, T = 16, ε = 1, 2·10⁵ samples (oracle ≈ 0.51)."""
Z = float(stats.norm.isf(0.0025))


def test_false_alarm_constant_derivation() -> None:
    assert stats.binom.sf(FA_MAX_ALARMS, FA_RUNS, 1 - CONFIDENCE) < ALPHA


class _ScaledSimpleI(SimpleI):
    """Simple I whose noise scale is ``T/(factor·ε)``: loss ``factor·ε``."""

    factor = Fraction(1)

    def _scale(self) -> Fraction:
        assert self.horizon is not None
        return Fraction(self.horizon) * self.sensitivity / self.epsilon / self.factor


class _HalfNoiseSimpleI(_ScaledSimpleI):
    factor = Fraction(2)


# ------------------------------------------------------------------ directions
def test_fitted_directions_point_along_the_shift() -> None:
    """Simple I, item 1 flipped: every coordinate shifts by 1 under Lap(16)."""
    rng = np.random.default_rng(0)
    T, n = 16, 20_000
    A = rng.laplace(0.0, T, (n, T))
    B = rng.laplace(1.0, T, (n, T))
    got = {(p.name, p.basis): p for p in fit_projections(A, B)}
    assert set(got) == {
        ("mean-difference", "y"),
        ("fisher", "y"),
        ("laplace-score", "y"),
        ("laplace-score", "Δy"),
    }
    for key in (("mean-difference", "y"), ("fisher", "y"), ("laplace-score", "y")):
        assert np.all(got[key].slope > 0), key  # all 16 coordinates carry evidence
    # the Laplace score's caps estimate |d|/b = 1/16; its range is ±Σ caps ≈ ±1 = ±ε
    assert float(got[("laplace-score", "y")].cap.sum()) == pytest.approx(1.0, abs=0.3)
    # in Δy only the first coordinate shifts
    assert np.flatnonzero(got[("laplace-score", "Δy")].slope).tolist() == [0]


def test_no_shift_gives_no_laplace_score() -> None:
    """No shift: each of the 16 coordinates (8 in y, 8 in Δy) passes the 3-SE screen
    with probability ≈ 0.27 %; ≥ 2 of 16 would happen with probability ≈ 8·10⁻⁴."""
    rng = np.random.default_rng(1)
    A = rng.laplace(0.0, 1.0, (5_000, 8))
    B = rng.laplace(0.0, 1.0, (5_000, 8))
    kept = sum(
        int(np.count_nonzero(p.slope)) for p in fit_projections(A, B) if p.name == "laplace-score"
    )
    assert kept <= 1


def test_fisher_uses_the_diagonal_above_the_limit() -> None:
    rng = np.random.default_rng(2)
    T = ev._LDA_MAX_HORIZON + 1
    A = rng.normal(0.0, 1.0, (600, T)) * np.linspace(1, 3, T)
    B = A[::-1] + 0.5
    fisher = next(p for p in fit_projections(A, B) if p.name == "fisher")
    d = B.mean(axis=0) - A.mean(axis=0)
    v = (A.var(axis=0) + B.var(axis=0)) / 2
    expect = d / (v + ev._RIDGE * float(v.mean()) + 1e-12)
    np.testing.assert_allclose(fisher.slope, expect)


def test_projection_event_tails_are_consistent() -> None:
    rng = np.random.default_rng(3)
    A = rng.laplace(0.0, 4.0, (20_000, 4))
    B = rng.laplace(1.0, 4.0, (20_000, 4))
    out = dict(best_projections(A, B, Z, 160_000))
    assert set(out) == {True, False}
    up, down = out[False].event, out[True].event
    assert isinstance(up, ProjectionEvent) and isinstance(down, ProjectionEvent)
    assert up.upper and not down.upper  # {s ≥ τ} favours B = x′, {s ≤ τ} favours A = x
    assert up.indicator(B).mean() > up.indicator(A).mean()
    assert down.indicator(A).mean() > down.indicator(B).mean()
    assert out[False].score > 0.3 and out[True].score > 0.3


def test_non_finite_rows_are_in_no_event() -> None:
    rng = np.random.default_rng(4)
    A = rng.laplace(0.0, 1.0, (4_000, 3))
    B = rng.laplace(2.0, 1.0, (4_000, 3))
    A[::7, 0] = np.nan
    for _, scored in best_projections(A, B, Z):
        assert isinstance(scored.event, ProjectionEvent)
        assert not scored.event.indicator(np.full((2, 3), np.nan)).any()


def test_large_horizon_projections_are_found() -> None:
    """T = 1024, the selection size the audit uses there (8,000 per stream)."""
    rng = np.random.default_rng(5)
    T = 1024
    A = rng.laplace(0.0, 8.0, (8_000, T))
    B = A[::-1] + np.r_[np.ones(8), np.zeros(T - 8)]
    out = best_projections(A, B, Z, 100_000)  # the diagonal Fisher path: O(n·T), no T×T solve
    assert out


# -------------------------------------------------------------- no double dipping
def test_directions_never_see_the_test_split(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every array the fitting code gets is part of the selection split, drawn before the test."""
    phase = {"test": False}
    fitted: list[np.ndarray[Any, Any]] = []
    drawn_in_test: list[np.ndarray[Any, Any]] = []
    real_fit, real_test, real_sample = ev.fit_projections, loss._test, Target.sample

    def spy_fit(Y0: Any, Y1: Any) -> Any:
        assert not phase["test"], "a direction was fitted after the test split was drawn"
        fitted.extend([Y0, Y1])
        return real_fit(Y0, Y1)

    def spy_test(*args: Any, **kwargs: Any) -> Any:
        phase["test"] = True
        return real_test(*args, **kwargs)

    def spy_sample(self: Target, *args: Any, **kwargs: Any) -> Any:
        out = real_sample(self, *args, **kwargs)
        if phase["test"]:
            drawn_in_test.append(out)
        return out

    monkeypatch.setattr(ev, "fit_projections", spy_fit)
    monkeypatch.setattr(loss, "_test", spy_test)
    monkeypatch.setattr(Target, "sample", spy_sample)
    r = audit(SimpleI(epsilon=1, horizon=8), horizon=8, samples=20_000, seed=7, events="blackbox")
    assert fitted and drawn_in_test and r.events
    assert r.selection_samples == 4_000
    # the fitting half of the selection; a stream only the covering pairs use is screened on
    # fewer selection samples (dpref.audit.pure.pairs.COVER_SCREEN), and so fitted on half of those
    screened = max(100, r.selection_samples // COVER_SCREEN) // 2
    assert {Y.shape[0] for Y in fitted} <= {r.selection_samples // 2, screened}
    assert any(Y.shape[0] == r.selection_samples // 2 for Y in fitted)
    for Y in fitted:
        for Z_ in drawn_in_test:
            assert not np.shares_memory(Y, Z_)


# ------------------------------------------------------------------ power
def test_spread_loss_is_seen_in_the_black_box() -> None:
    """Simple I, T = 16, ε = 1: conjunctions gave 0.10ε; the projection ≥ SPREAD_FLOOR."""
    m = SimpleI(epsilon=1, horizon=16)
    r = audit(m, horizon=16, samples=200_000, seed=1, events="blackbox", exact=False)
    assert r.epsilon_lower_bound is not None
    assert SPREAD_FLOOR <= r.epsilon_lower_bound <= 1.0, r.summary()
    assert not r.violation
    assert "projection" in r.event


def test_half_the_noise_is_proven_at_t16() -> None:
    """The smallest error that matters here: Lap(T/(2ε)) (loss 2ε) is proven black-box."""
    m = _HalfNoiseSimpleI(epsilon=1, horizon=16)
    r = audit(m, horizon=16, epsilon=1, samples=200_000, seed=1, events="blackbox", exact=False)
    assert r.violation, r.summary()
    assert r.epsilon_lower_bound is not None and 1.0 < r.epsilon_lower_bound <= 2.0


@pytest.mark.slow
def test_spread_loss_plain_callable_brief_setting() -> None:
    """The brief's exact setting: a plain callable (no plan), 2·10⁵ samples per side (~4 min)."""

    def f(x: Any, rng: Any) -> Any:
        return SimpleI(epsilon=1, horizon=16).release(x, rng=rng)

    r = audit(f, horizon=16, epsilon=1, samples=200_000, seed=1)
    assert r.epsilon_lower_bound is not None
    assert SPREAD_FLOOR <= r.epsilon_lower_bound <= 1.0, r.summary()


# --------------------------------------------------------------- false alarms
def _correct16() -> list[Any]:
    return [
        SimpleI(epsilon=1, horizon=16),
        SimpleII(epsilon=1, horizon=16),
        TwoLevel(epsilon=1, horizon=16),
        Binary(epsilon=1, horizon=16),
        Hybrid(epsilon=1, horizon=16),
    ]


@pytest.mark.slow
@pytest.mark.ci
def test_false_alarm_rate_with_projections() -> None:
    """Slow (~8 s of CPU, CI runs it); in the default run the projections audit a correct
    mechanism in test_spread_loss_is_seen_in_the_black_box."""
    alarms = runs = projections = 0
    for seed in range(FA_RUNS // 5):
        for mech in _correct16():
            r = audit(
                mech, horizon=16, samples=10_000, seed=200 + seed, events="blackbox", exact=False
            )
            runs += 1
            alarms += r.violation
            projections += any("projection" in e.description for e in r.events)
    assert runs == FA_RUNS
    assert alarms <= FA_MAX_ALARMS
    assert projections >= FA_RUNS // 3  # the projection family is really in play
