"""One source of truth for the decayed sums and the sanitizers (issue 23).

A subclass whose level function or scale is off by one level (or by a factor) changes
what is drawn — observed through the release path on a counting seed — and fails
``proofs.prove`` and the ``dpref verify`` suites; a claim about the code fails when the
function it evaluates is wrong.  Every test here is cheap (small limits, one mechanism).
"""

from __future__ import annotations

import importlib
from fractions import Fraction
from typing import Any

import numpy as np
import pytest

import dpref.mechanisms
from dpref import AllWindowSum, ExponentialSum, PolynomialSum, WindowSum
from dpref.verify import VerifyOptions
from dpref.verify.plans import plan_suite
from proofs import FAILED, prove
from proofs.cli import verify_suite
from proofs.core import PROVEN_CODE

# The proof modules bind the functions they evaluate at import; import them now, before any
# test below patches those functions, so that a patch cannot outlive its test through them.
importlib.import_module("proofs.decayed")
importlib.import_module("proofs.decayed_code")
importlib.import_module("proofs.sanitize")

SMALL = 64
"""Exhaustive limit of the deliberately wrong subclasses' proofs."""


class WindowOneLevelShort(WindowSum):
    """Declares and releases ⌊log₂W⌋ levels: the top size 2^K a cover needs is missing."""

    def levels(self, ops: Any = dpref.mechanisms.base.EXACT, **s: Any) -> Any:
        return super().levels(ops, **s) - 1 if s.get("window", self.window) > 1 else 1


class WindowHalfScale(WindowSum):
    """Draws every node with half the scale LΔ/ε its budget needs."""

    def scale(self, ops: Any = dpref.mechanisms.base.EXACT, **s: Any) -> Any:
        return super().scale(ops, **s) / 2


class AllWindowOneLevelShort(AllWindowSum):
    """Counts ⌊log₂T⌋ levels at T: the top level's nodes are never released."""

    def levels_at(self, horizon: Any, ops: Any = dpref.mechanisms.base.EXACT) -> Any:
        return ops.floor_log2(horizon)


class AllWindowWrongExponent(AllWindowSum):
    """Scales level k by ζ(δ)·k^δ/2: the levels' ε_k sum to 2ε."""

    def level_scale_formula(self, k: Any, ops: Any = dpref.mechanisms.base.EXACT, **s: Any) -> Any:
        return super().level_scale_formula(k, ops, **s) / 2


class ExponentialHalfScale(ExponentialSum):
    """Draws every node with half the scale S(α)Δ/ε."""

    def scale(self, ops: Any = dpref.mechanisms.base.EXACT, **s: Any) -> Any:
        return super().scale(ops, **s) / 2


class ExponentialShiftedWeight(ExponentialSum):
    """Declares item 1's level-k weight as α^{2^{k−1}} (one step too light)."""

    @staticmethod
    def level_weight(k: Any, alpha: Any) -> Any:
        return alpha ** (2 ** (k - 1))


class PolynomialOneLevelShort(PolynomialSum):
    """Gives each instance ⌊log₂W_j⌋ levels: its top size is never released."""

    @staticmethod
    def instance_levels(window: Any, ops: Any = dpref.mechanisms.base.EXACT) -> Any:
        return PolynomialSum.instance_levels(window, ops) - 1 + (1 if window == 1 else 0)


def _noise(m: Any, horizon: int) -> np.ndarray:
    """The node noise the release path draws on a fixed seed (its size and scales)."""
    return np.asarray(m.node_noise(horizon, np.random.default_rng(7)))


def _failed_claims(cls: type[Any]) -> set[str]:
    return {r.claim for r in prove(cls, limit=SMALL) if r.status == FAILED}


def _verify_fails(
    monkeypatch: pytest.MonkeyPatch, name: str, cls: type[Any], proofs_suite: bool = True
) -> None:
    """The proofs suite of ``dpref verify`` (unless too slow for a unit test: its claims
    are then run one by one) and its exact plan suite, on the subclass."""
    monkeypatch.setitem(dpref.mechanisms.MECHANISMS, name, cls)
    opts = VerifyOptions(mechanisms=(name,), max_exhaustive=8, random_horizons=1, random_max=40)
    if proofs_suite:
        assert sum(r.failed for r in verify_suite(opts)) >= 1
    try:
        plans = plan_suite(opts)
    except Exception:  # a plan that cannot be built is a failed verify too
        return
    assert sum(r.failed for r in plans) >= 1


def test_window_levels_is_the_one_source() -> None:
    m = WindowSum(window=5, epsilon=1)
    assert m.levels() == 3 and m.cap == 2 and m.scale() == 3
    assert m.budget_terms()[0].membership == m.levels()
    assert m.budget_terms()[0].scale == m.scale() == m.nodes(8).scale_table[0]


def test_window_one_level_short_changes_the_draws_and_fails(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    good, bad = WindowSum(window=5, epsilon=1), WindowOneLevelShort(window=5, epsilon=1)
    assert _noise(good, 16).size != _noise(bad, 16).size  # fewer nodes released
    assert bad.noise_scales(16) < good.noise_scales(16)
    failed = _failed_claims(WindowOneLevelShort)
    assert "membership" in failed
    _verify_fails(monkeypatch, "window", WindowOneLevelShort)


def test_window_half_scale_changes_the_draws_and_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    good, bad = WindowSum(window=5, epsilon=1), WindowHalfScale(window=5, epsilon=1)
    assert np.allclose(_noise(bad, 16), _noise(good, 16) / 2)
    assert "budget" in _failed_claims(WindowHalfScale)
    _verify_fails(monkeypatch, "window", WindowHalfScale)


def test_allwindow_one_level_short_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    good, bad = AllWindowSum(epsilon=1), AllWindowOneLevelShort(epsilon=1)
    assert _noise(bad, 16).size < _noise(good, 16).size
    assert "membership" in _failed_claims(AllWindowOneLevelShort)
    _verify_fails(monkeypatch, "allwindow", AllWindowOneLevelShort)


def test_allwindow_scale_formula_is_what_is_drawn_and_proven() -> None:
    good, bad = AllWindowSum(epsilon=1), AllWindowWrongExponent(epsilon=1)
    assert bad.level_scale(4) < good.level_scale(4)
    assert not np.allclose(_noise(bad, 16), _noise(good, 16))
    from proofs.decayed import _zeta_budget

    with pytest.raises(Exception, match="does not hold"):
        _zeta_budget(AllWindowWrongExponent)


def test_exponential_half_scale_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    a = Fraction(1, 2)
    good, bad = ExponentialSum(alpha=a, epsilon=1), ExponentialHalfScale(alpha=a, epsilon=1)
    assert np.allclose(_noise(bad, 16), _noise(good, 16) / 2)
    assert _failed_claims(ExponentialHalfScale)  # the exact privacy sum exceeds ε
    _verify_fails(monkeypatch, "exponential", ExponentialHalfScale)


def test_exponential_weight_is_proven_about_the_code() -> None:
    assert "membership" in _failed_claims(ExponentialShiftedWeight)


def test_exponential_node_start_is_proven_for_every_t(monkeypatch: pytest.MonkeyPatch) -> None:
    from proofs.decayed_code import exponential_left_nodes

    class Shifted(ExponentialSum):
        @staticmethod
        def node_start(t: Any) -> Any:
            return t - (t & -t) + 2 - (t & 1)  # wrong for every even t

    with pytest.raises(Exception, match="does not hold"):
        exponential_left_nodes(Shifted)


def test_polynomial_one_level_short_changes_the_draws_and_fails(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    kw: dict[str, Any] = {"c": 2, "beta": Fraction(1, 5), "epsilon": 1}
    good, bad = PolynomialSum(**kw), PolynomialOneLevelShort(**kw)
    assert _noise(bad, 40).size < _noise(good, 40).size
    from proofs.decayed_code import polynomial_instance_levels

    with pytest.raises(Exception, match="does not hold"):
        polynomial_instance_levels(PolynomialOneLevelShort)
    _verify_fails(monkeypatch, "polynomial", PolynomialOneLevelShort, proofs_suite=False)


# ------------------------------------------------------------------ sanitizers
def _row(subject: str, claim: str) -> str:
    import proofs.sanitize as ps

    cls = {"ThresholdSanitizer": ps.ThresholdSanitizer, "StreamingSanitizer": ps.StreamingSanitizer}
    rows = ps.PROOFS[subject](cls[subject], 8)
    return next(r.status for r in rows if r.claim == claim)


def test_sanitizer_rows_are_honest() -> None:
    assert _row("ThresholdSanitizer", "histogram Δ") == PROVEN_CODE
    assert _row("ThresholdSanitizer", "post-processing") == "note"
    assert _row("StreamingSanitizer", "budget") == PROVEN_CODE


def test_histogram_delta_claim_reads_the_code(monkeypatch: pytest.MonkeyPatch) -> None:
    import dpref.sanitize.threshold as th

    monkeypatch.setitem(th.LEAVES_TOUCHED, "replace", 1)  # a replaced record as one leaf
    assert th.ThresholdSanitizer(domain=[0.0, 1.0], epsilon=1).sensitivity == 1
    assert _row("ThresholdSanitizer", "histogram Δ") == FAILED
    assert _row("ThresholdSanitizer", "tree sensitivity") == FAILED


def test_item_delta_row_kills_max_abs_under_replace(monkeypatch: pytest.MonkeyPatch) -> None:
    import dpref.domains

    def wrong(lower: Fraction, upper: Fraction, neighbours: str) -> Fraction:
        return max(abs(Fraction(lower)), abs(Fraction(upper)))

    monkeypatch.setattr(dpref.domains, "stream_item_sensitivity", wrong)
    assert _row("ThresholdSanitizer", "item Δ (dpref.domains)") == FAILED


def test_amplification_claim_reads_the_code(monkeypatch: pytest.MonkeyPatch) -> None:
    import proofs.sanitize as ps

    real = ps.amplified_epsilon

    def group_of_two(epsilon: Any, p: Any, neighbours: str, ops: Any) -> Any:
        if neighbours == "add-remove":
            return real(epsilon, p, neighbours, ops)
        return 2 * ops.log1p(p * ops.expm1(epsilon)) + 0 * p  # not the code's replace bound

    monkeypatch.setattr(ps, "amplified_epsilon", group_of_two)
    assert _row("StreamingSanitizer", "budget") == FAILED
    monkeypatch.setattr(ps, "amplified_epsilon", real)
    monkeypatch.setattr(ps, "amplification_cap", lambda e, n: e)  # replace capped at ε₀
    assert _row("StreamingSanitizer", "budget") == FAILED


def test_window_cover_claim_reads_the_cover_code(monkeypatch: pytest.MonkeyPatch) -> None:
    import proofs.decayed_code as pdc

    real = pdc.cover_split

    def one_short(a0: Any, t: Any, floor_log2_of: Any) -> Any:
        M, ls, lp = real(a0, t, floor_log2_of)
        return M, ls, lp - 1  # the prefix's last item left out

    monkeypatch.setattr(pdc, "cover_split", one_short)
    with pytest.raises(Exception, match="does not hold"):
        pdc.window_cover_levels(WindowSum)


def test_s_alpha_claim_reads_the_fixed_point(monkeypatch: pytest.MonkeyPatch) -> None:
    import dpref.rigorous as rig
    from proofs.decayed_code import exponential_sensitivity_bound

    def floor_next(p_up: Any, num: Any, den: Any, one: Any) -> tuple[Any, Any]:
        return rig._ceil_div(p_up * den, num), p_up * p_up // one  # next rounded down

    monkeypatch.setattr(rig, "_fixed_point_step", floor_next)
    with pytest.raises(Exception, match="does not hold"):
        exponential_sensitivity_bound()


def test_polynomial_series_claim_reads_the_code(monkeypatch: pytest.MonkeyPatch) -> None:
    import dpref.rigorous as rig
    from proofs.decayed_code import polynomial_allocation_series

    def short_tail(r: Any, kappa: Any, J: Any, x: Any) -> Any:
        return r * (kappa * (J * (1 - x) + x) / (1 - x) + 1 / (1 - x))  # (1−x) not squared

    monkeypatch.setattr(rig, "polynomial_series_tail", short_tail)
    with pytest.raises(Exception, match="does not hold"):
        polynomial_allocation_series()
