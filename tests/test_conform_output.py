"""Output-level privacy beside plan-level numbers, and honest conform verdicts (issue 25
item 3).

Error rates.  Every conform run is seeded (deterministic); the statements are what the
tests would do over seeds.  A run that must not report a violation uses the default
``alpha = 0.01``: the output-level interval holds the truth with probability ≥ 1 − alpha/4
(the noise-scale check's share; :mod:`dpref.audit.conformance.conform_output`), so a false
``violation`` needs the interval to miss the truth *and* lie above the claim.  The runs
that must establish one have truths far outside the other side (power: the ratio's exact
χ² interval at 2,000 runs × 16 steps has relative half-width ≈ 2.6 %, the violation
margin is ≥ 30 %).
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

from dpref import Binary, Honaker, SmoothBinary
from dpref.audit.conformance import conform_output
from dpref.audit.conformance.conform import conform
from dpref.audit.gaussian.output_budget import output_budget
from dpref.audit.reports.audit_report import CONFORMS, DOES_NOT_CONFORM, VIOLATION
from dpref.cli import main
from dpref.errors import ParameterError

sys.path.insert(0, str(Path(__file__).parent))
import outlevel_targets as ot

TARGETS = str(Path(__file__).parent / "outlevel_targets.py")


# ------------------------------------------------------------ declared output ρ
def test_honaker_outputs_leak_less_than_its_plan() -> None:
    """The issue's numbers, computed by the exact elimination (nothing hard-coded here but
    the printed digits): Honaker's outputs leak 0.880687 of its plan's ρ at T = 16 and
    0.870148 at T = 64; Binary's outputs determine its nodes and leak all of it."""
    h16 = output_budget(Honaker(rho=4, horizon=16), 16)
    h64 = output_budget(Honaker(rho=4, horizon=64), 64)
    assert h16 is not None and h64 is not None
    assert f"{float(h16.fraction):.6f}" == "0.880687"  # issue: μ² = 0.880687·(2ρ)
    assert f"{float(h64.fraction):.6f}" == "0.870148"
    assert h64.free_draws == 63 and h64.rho < h64.declared_rho == 4
    assert h64.mu_squared == 2 * h64.rho and isinstance(h64.rho, Fraction)
    b = output_budget(Binary(rho=4, horizon=16), 16)
    assert b is not None and b.free_draws == 0
    # σ as drawn is rounded up: a hair below the declared ρ, never above
    assert Fraction(4) - Fraction(1, 10**12) < b.rho <= 4
    s = output_budget(SmoothBinary(rho=1, horizon=16), 16)
    assert s is not None and s.rho < SmoothBinary(rho=1, horizon=16).declared_rho


def test_output_budget_refuses_what_it_cannot_state() -> None:
    with pytest.raises(ParameterError, match=r"mechanism=.*laplace"):
        output_budget(Binary(epsilon=1, horizon=8), 8)
    with pytest.raises(ParameterError, match="discrete_gaussian"):
        output_budget(Binary(rho=1, horizon=8, noise="discrete_gaussian"), 8)
    with pytest.raises(ParameterError, match="horizon=9"):
        output_budget(Honaker(rho=1, horizon=8), 9)
    assert output_budget(Honaker(rho=1, horizon=64), 64, max_work=1000) is None
    assert output_budget(Honaker(rho=1, horizon=129), 129) is None  # above the size bound


def test_release_json_prints_output_rho_beside_rho(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    stream = tmp_path / "s.txt"
    stream.write_text("".join(f"{v}\n" for v in [1, 0, 1, 1, 0, 1, 1, 1, 1, 0, 1, 0, 1, 1, 0, 1]))
    assert main(["release", "honaker", "--rho", "4", "--input", str(stream), "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["rho"] == "4" and d["output_rho"] == "3.52275"
    assert Fraction(d["output_rho_exact"]) == output_budget(Honaker(rho=4, horizon=16), 16).rho  # type: ignore[union-attr]
    assert d["output_rho_label"].startswith("exact")
    assert main(["release", "binary", "--epsilon", "1", "--input", str(stream), "--json"]) == 0
    assert "output_rho" not in json.loads(capsys.readouterr().out)


def test_float_fallback_agrees_with_the_exact_output_rho(monkeypatch: pytest.MonkeyPatch) -> None:
    """Above the exact computation's budget conform uses the SVD of R·diag(σ): the same
    number to float accuracy (checked where both exist)."""
    ref = Honaker(rho=4, horizon=32)
    exact, how = conform_output._reference_output_rho(ref, 32)
    assert how.startswith("exact")
    monkeypatch.setattr(conform_output, "output_budget", lambda *a, **k: None)
    approx, how = conform_output._reference_output_rho(ref, 32)
    assert how.startswith("float") and approx == pytest.approx(exact, rel=1e-9)


# ------------------------------------------------------------ conform verdicts
def test_variance_as_std_honaker_does_not_conform_without_violation() -> None:
    """The issue's target: TF's efficient tree with the node variance passed as the std,
    claim ρ = 4, T = 64.  Its plan implies ρ = 4/σ² = 4.571 > 4, but its outputs are
    exactly ρ_out(Honaker)/σ² = 3.978-zCDP: no violation, and conform must say so."""
    T = 64
    ref = Honaker(rho=4, horizon=T)
    exact = output_budget(ref, T)
    assert exact is not None
    sigma = float(np.asarray(ref.noise_multipliers(T)).ravel()[0])
    mu2 = 2 * float(exact.rho) / sigma**2  # the target's node std is σ² = σ·σ
    assert f"{mu2:.4f}" == "7.9556" and mu2 < 8  # issue: exact μ² = 7.9556 < 8
    truth = mu2 / 2
    r = conform(ot.honaker_variance_as_std, ref, horizon=T, seed=1)
    assert r.verdict == DOES_NOT_CONFORM and not r.violation and r.exit_code == 1, r.summary()
    assert r.does_not_conform and not r.conforms and r.structure == "matches"
    e = r.implied_rho
    assert e is not None and e["low"] > 4  # plan-level: above the claim
    out = r.output_level
    assert out is not None and out.budget == "rho"
    assert out.low <= truth <= out.high and abs(out.estimate - 3.98) < 0.04
    assert not out.above_claim and out.reference == pytest.approx(float(exact.rho))
    assert "no privacy violation is established" in r.reason
    assert "not a privacy verdict" in r.verdict_basis
    d = json.loads(json.dumps(r.as_dict()))
    assert d["verdict"] == "does-not-conform" and d["conforms"] is False
    assert d["output_rho"]["low"] <= truth <= d["output_rho"]["high"]
    assert d["output_rho"]["above_claim"] is False and d["output_epsilon"] is None
    text = r.summary()
    assert "violation" not in text.splitlines()[0].lower()
    assert "output ρ" in text and "plan-level" in text and "rests on" in text


def test_over_noised_target_is_not_a_violation() -> None:
    """More noise than the reference: it does not conform, and its outputs leak less."""
    ref = Honaker(rho=1, horizon=16)
    over = Honaker(rho=Fraction(1, 2), horizon=16)  # σ × √2
    r = conform(over, ref, horizon=16, runs=1000, seed=2)
    assert r.verdict == DOES_NOT_CONFORM and "noise-scale" in {
        c.name for c in r.checks if c.passed is False
    }
    out = r.output_level
    truth = output_budget(over, 16)
    assert out is not None and truth is not None
    assert out.low <= float(truth.rho) <= out.high < 1 and not out.above_claim
    assert r.implied_rho is None  # no shortfall: nothing implied above the plan


def test_under_noised_honaker_is_an_established_violation() -> None:
    """Honaker at ρ = 1 against the claim ρ = 1/2: its outputs leak ρ_out = 0.88 > 1/2,
    exactly (output_budget), and conform establishes the violation on the output level."""
    ref = Honaker(rho=Fraction(1, 2), horizon=16)
    under = Honaker(rho=1, horizon=16)
    truth = output_budget(under, 16)
    assert truth is not None and truth.rho > Fraction(1, 2)
    r = conform(under, ref, horizon=16, runs=1000, seed=3)
    out = r.output_level
    assert out is not None and out.low <= float(truth.rho) <= out.high
    assert out.above_claim and r.verdict == VIOLATION and r.violation and r.exit_code == 1
    assert r.verdict_basis == "output-level ρ" and "privacy violation established" in r.reason
    assert r.summary().startswith("verdict     VIOLATION")


def test_correct_honaker_conforms_and_reports_its_output_rho() -> None:
    ref = Honaker(rho=4, horizon=16)
    r = conform(ot.honaker_ok, ref, horizon=16, runs=500, seed=4, alpha=1e-6)
    assert r.verdict == CONFORMS and r.conforms and r.exit_code == 0, r.summary()
    out = r.output_level
    exact = output_budget(ref, 16)
    assert out is not None and exact is not None
    assert out.low <= float(exact.rho) <= out.high and out.high < 4


def test_cli_conform_json_verdict_words(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["conform", f"{TARGETS}:honaker_variance_as_std", "--reference", "honaker"]
    argv += ["--rho", "4", "--horizon", "64", "--runs", "500", "--seed", "1", "--json"]
    code = main(argv)
    d: dict[str, Any] = json.loads(capsys.readouterr().out)
    assert code == 1 and d["verdict"] == DOES_NOT_CONFORM, d["reason"]
    assert d["output_rho"] is not None and math.isfinite(d["output_rho"]["estimate"])
    assert d["output_rho"]["low"] <= 3.978 <= d["output_rho"]["high"]


def test_variance_as_std_is_a_violation_at_T_16() -> None:
    """The same bug at T = 16 (σ² = 5/8): the outputs leak ρ_out(Honaker)/σ² = 5.64 > 4,
    a violation the output level establishes."""
    ref = Honaker(rho=4, horizon=16)
    r = conform(ot.honaker_variance_as_std, ref, horizon=16, runs=500, seed=5)
    exact = output_budget(ref, 16)
    assert exact is not None
    sigma = float(np.asarray(ref.noise_multipliers(16)).ravel()[0])
    truth = float(exact.rho) / sigma**2
    out = r.output_level
    assert out is not None and out.low <= truth <= out.high and truth > 5.6
    assert r.verdict == VIOLATION and out.above_claim, r.summary()


# ------------------------------------------------------------------ audit
def test_audit_names_the_bound_its_verdict_rests_on() -> None:
    """`violation` in the audit is a lower bound above the claim; the JSON names the bound
    (output-level: measured on the released outputs) whatever the verdict."""
    from dpref.audit import audit

    r = audit(Binary(epsilon=1, horizon=3), horizon=3, samples=2000, seed=1)
    d = r.as_dict()
    assert d["verdict"] == "no-violation-found" and not r.violation
    assert d["verdict_basis"].startswith("ε ≥ ") and "output-level" in d["verdict_basis"]
    assert "does not exceed the claimed ε = 1" in d["verdict_basis"]
    assert r.epsilon_lower_bound is not None
    assert f"ε ≥ {r.epsilon_lower_bound:.4f}" in r.reason  # the text names the same number
