"""The sympy proofs: every counting claim holds, wrong declarations fail, the CLI works."""

from __future__ import annotations

import json
from fractions import Fraction
from typing import Any

import pytest
import sympy as sp

from dpref import Binary, SimpleII, TwoLevel
from dpref.cli import main
from dpref.mechanisms.base import EXACT, RowTerm
from dpref.verify import SUITES, VerifyOptions
from proofs import FAILED, PROVEN, SYMBOLIC, ClaimResult, prove, prove_all
from proofs.cli import verify_suite
from proofs.core import LEMMA, ProofFailure, T, check_identity, check_sign, eps
from proofs.counting import pitfall_factor

SMALL = 64
"""Exhaustive limit for the deliberately wrong subclasses (they fail well before it)."""

ABOUT_CODE_CLAIMS = {"membership", "budget"}
"""Claims whose proofs evaluate the class's own node, membership and scale functions."""
LEMMA_CLAIMS = {"variance", "pitfall Lap(log₂T/ε)"}
"""Symbolic claims about the maths (the variance closed form re-derived from row_terms, the
pitfall): discharged, but honest lemmas."""
ZCDP_CLAIMS = {"zCDP node rule", "zCDP budget"}
"""proofs/zcdp.py's rows (another family's module): symbolic, lemma or about the code."""


COUNTING = ("simple1", "simple2", "two-level", "binary", "hybrid")


@pytest.fixture(scope="module")
def all_rows() -> list[ClaimResult]:
    return prove_all(COUNTING)


def _by_claim(rows: list[ClaimResult]) -> dict[str, ClaimResult]:
    return {r.claim: r for r in rows}


# ----------------------------------------------------------- the real classes
def test_every_counting_claim_holds(all_rows: list[ClaimResult]) -> None:
    failed = [(r.mechanism, r.claim, r.detail) for r in all_rows if not r.passed]
    assert not failed
    assert {r.mechanism for r in all_rows} == set(COUNTING)


def test_statuses_are_honest(all_rows: list[ClaimResult]) -> None:
    for r in all_rows:
        if r.claim in ABOUT_CODE_CLAIMS:
            assert r.status == PROVEN, r
            assert r.evaluates and all(e.startswith("dpref.mechanisms.") for e in r.evaluates)
        elif r.claim in LEMMA_CLAIMS:
            assert r.status == LEMMA, r
        elif r.claim in ZCDP_CLAIMS:
            assert r.status in (PROVEN, LEMMA), r
        else:  # exhaustive checks never claim to be proofs
            assert r.status in (
                "checked for T ≤ 4096",
                "checked for t ≤ 4096",
                "checked for T ≤ 64",
            )


def test_each_mechanism_has_membership_budget_variance(all_rows: list[ClaimResult]) -> None:
    for name in COUNTING:
        claims = {r.claim for r in all_rows if r.mechanism == name}
        assert {"membership", "budget", "variance", "membership = nodes(T)"} <= claims
        assert {"budget = nodes(T)", "variance = plan"} <= claims
        budget = next(r for r in all_rows if r.mechanism == name and r.claim == "budget")
        assert budget.value == "ε"


def test_pitfall_is_proven_with_values(all_rows: list[ClaimResult]) -> None:
    row = next(r for r in all_rows if r.claim.startswith("pitfall"))
    assert row.mechanism == "binary" and row.status == LEMMA
    assert "1.2920ε" in row.detail and "1.0034ε" in row.detail
    assert sp.simplify(pitfall_factor(5) - 3 * sp.log(2) / sp.log(5)) == 0
    assert float(pitfall_factor(1000)) == pytest.approx(1.00343, abs=1e-5)
    # exact: the factor exceeds 1 for T ≥ 2 (and is exactly 1 nowhere)
    for horizon in (2, 3, 4, 5, 7, 8, 1000, 1024):
        assert (pitfall_factor(horizon) - 1).is_positive


# ------------------------------------------------- deliberately wrong classes
class BinaryLog2Levels(Binary):
    """Declares ⌊log₂T⌋ levels (the lecture's log T): one too few."""

    @staticmethod
    def levels(horizon: Any, ops: Any = EXACT) -> Any:
        return ops.floor_log2(horizon)


class BinaryCeilLevels(Binary):
    """Declares ⌈log₂T⌉ = ⌊log₂(2T−1)⌋ levels: one too few at powers of two."""

    @staticmethod
    def levels(horizon: Any, ops: Any = EXACT) -> Any:
        return ops.floor_log2(2 * horizon - 1)


class TwoLevelOneOverEps(TwoLevel):
    """Lap(Δ/ε) on both the item and the block node: 2ε in truth (the one scale function
    is what is drawn and what is declared)."""

    @classmethod
    def node_scale(cls, horizon: Any, epsilon: Any, sensitivity: Any, ops: Any = EXACT) -> Any:
        return sensitivity / epsilon


class SimpleIIWrongVariance(SimpleII):
    """Declares a recombination with scale 2Δ/ε while the nodes use Δ/ε."""

    def row_terms(self, t: Any, ops: Any = EXACT, **s: Any) -> list[RowTerm]:
        e = s.get("epsilon", self.epsilon)
        d = s.get("sensitivity", self.sensitivity)
        return [RowTerm("item", t, 1, 2 * d / e)]


def test_binary_declaring_log2_levels_fails() -> None:
    rows = _by_claim(prove(BinaryLog2Levels, SMALL))
    assert rows["membership"].status == FAILED
    assert "counterexample" in rows["membership"].detail
    assert rows["budget"].status == FAILED  # proven membership ⌊log₂T⌋+1 over ⌊log₂T⌋
    assert rows["membership = nodes(T)"].status == FAILED
    assert rows["budget = nodes(T)"].status == FAILED
    assert rows["variance"].status == FAILED
    assert all(r.mechanism == "BinaryLog2Levels" for r in rows.values())


def test_binary_declaring_ceil_log2_levels_fails() -> None:
    rows = _by_claim(prove(BinaryCeilLevels, SMALL))
    assert rows["membership"].status == FAILED
    assert rows["budget"].status == FAILED
    assert rows["membership = nodes(T)"].status == FAILED


def test_two_level_with_lap_one_over_eps_fails() -> None:
    rows = _by_claim(prove(TwoLevelOneOverEps, SMALL))
    assert TwoLevelOneOverEps(epsilon=1, horizon=9).nodes(9).scales[0] == 1.0  # drawn
    assert rows["membership"].status == PROVEN  # the membership is right …
    assert rows["budget"].status == FAILED  # … but ε/… + ε = 2ε ≠ ε
    assert "2*ε" in rows["budget"].detail or "2ε" in rows["budget"].detail
    assert rows["budget = nodes(T)"].status == FAILED
    assert rows["membership = nodes(T)"].status == "checked for T ≤ 64"


def test_wrong_variance_declaration_fails() -> None:
    rows = _by_claim(prove(SimpleIIWrongVariance, SMALL))
    assert rows["variance"].status == FAILED
    assert rows["variance = plan"].status == FAILED
    assert rows["budget"].status == PROVEN


# ---------------------------------------------------------------- framework
def test_check_identity_reports_a_counterexample() -> None:
    check_identity(SYMBOLIC.floor_log2(T) + 1 - 1, SYMBOLIC.floor_log2(T), "fine")
    with pytest.raises(ProofFailure, match="counterexample T=1 "):
        check_identity(SYMBOLIC.floor_log2(2 * T - 1), SYMBOLIC.floor_log2(T) + 1, "ceil")


def test_check_sign_needs_a_decision() -> None:
    check_sign(eps, "positive", "ε > 0")
    with pytest.raises(ProofFailure, match="is false"):
        check_sign(-eps, "positive", "−ε > 0")
    x = sp.Symbol("x", real=True)
    with pytest.raises(ProofFailure, match="could not be decided"):
        check_sign(x, "positive", "x > 0")


def test_symbolic_ops_agree_with_exact_ops() -> None:
    for n in range(1, 300):
        assert SYMBOLIC.floor_log2(n) == EXACT.floor_log2(n)
        assert SYMBOLIC.ceil_sqrt(n) == EXACT.ceil_sqrt(n)
        assert SYMBOLIC.popcount(n) == EXACT.popcount(n)
    assert SYMBOLIC.number(Fraction(7, 10)) == sp.Rational(7, 10)


# ---------------------------------------------------------------------- CLI
def test_cli_prove_json(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["prove", "--mechanism", "simple2", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["passed"] is True
    assert {r["mechanism"] for r in out["rows"]} == {"simple2"}
    assert {r["status"] for r in out["rows"]} <= {
        PROVEN,
        LEMMA,
        "checked for T ≤ 4096",
        "checked for t ≤ 4096",
        "checked for T ≤ 64",  # the Gaussian plans (proofs/zcdp.py)
    }


def test_cli_prove_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["prove", "--mechanism", "SimpleI"]) == 0
    text = capsys.readouterr().out
    assert "membership" in text and "proven" in text and "all hold" in text


def test_cli_unknown_mechanism_is_one_line_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["prove", "--mechanism", "nope"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "mechanism='nope'" in err


def test_an_unproven_mechanism_is_a_failed_row(monkeypatch: pytest.MonkeyPatch) -> None:
    import dpref.mechanisms

    class Stranger(dpref.mechanisms.Mechanism):
        name = "stranger"

    monkeypatch.setitem(dpref.mechanisms.MECHANISMS, "stranger", Stranger)
    rows = prove_all(("stranger",), limit=SMALL)
    assert [(r.mechanism, r.claim, r.status) for r in rows] == [
        ("stranger", "proof module", FAILED)
    ]


def test_python_m_proofs_exits_1_on_failure(monkeypatch: pytest.MonkeyPatch) -> None:
    import dpref.mechanisms
    from proofs.cli import main as proofs_main

    monkeypatch.setitem(dpref.mechanisms.MECHANISMS, "two-level", TwoLevelOneOverEps)
    assert proofs_main(["--mechanism", "two-level", "--json"]) == 1


def test_verify_runs_the_proofs_first() -> None:
    assert SUITES[0] == "proofs.cli:verify_suite"
    rows = verify_suite(VerifyOptions(mechanisms=("hybrid",)))
    assert len(rows) == 1
    row = rows[0]
    assert (row.suite, row.mechanism, row.failed, row.proven_sum) == ("proofs", "hybrid", 0, "ε")
    assert row.checks == 6 + 3  # 6 claims of its own, 3 of its Gaussian budget


class BinaryHalfGaussianVariance(Binary):
    """Gives each Gaussian node half the variance the rule σ² = |w|Δb/(2ρ) asks: 4ρ spent."""

    def node_variance(self, scale: Fraction, weight: Fraction = Fraction(1)) -> Fraction:
        return super().node_variance(scale, weight) / (2 if self.rho is not None else 1)


def test_every_mechanism_has_a_gaussian_budget(all_rows: list[ClaimResult]) -> None:
    for name in COUNTING:
        rows = {r.claim: r for r in all_rows if r.mechanism == name}
        assert rows["zCDP node rule"].status in (PROVEN, LEMMA)
        assert rows["zCDP budget"].status in (PROVEN, LEMMA)
        assert rows["zCDP budget"].statement == "L2 sum = 2ρ"
        assert rows["zCDP budget = plans(T)"].status == "checked for T ≤ 64"


def test_gaussian_variance_below_the_rule_fails() -> None:
    rows = _by_claim(prove(BinaryHalfGaussianVariance, SMALL))
    assert rows["budget"].status == PROVEN  # the Laplace design is still right …
    assert rows["zCDP budget"].status == FAILED  # … but the Gaussian nodes are too quiet
    assert "node_variance" in rows["zCDP budget"].detail
    assert rows["zCDP budget = plans(T)"].status == FAILED


@pytest.mark.slow
def test_documented_counts_are_what_prove_prints() -> None:
    """docs/proofs.md's table of labels is `dpref prove`'s (regenerate with
    `python tests/proof_counts.py --write`); every proof runs, about a minute."""
    import proof_counts

    text = proof_counts.PAGE.read_text(encoding="utf-8")
    assert proof_counts.block(text) == proof_counts.table()
