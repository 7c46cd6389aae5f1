"""The mutation self-test of ``dpref verify`` (issue 23, item 7).

Every mutant of tests/mutants.py, applied to a scratch copy of the package, must make
``dpref verify`` — alone, restricted to the mechanisms the mutant touches — fail, and at
least one failed row must be deterministic (not only a sampled audit).  The whole set is
slow (a restricted verify per mutant: minutes) and is marked ``slow``; the default run
checks that every mutant still applies exactly once (so a moved snippet fails here, loudly)
and kills a few representative mutants.  The table: ``python tests/mutation.py``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from mutants import KINDS, MUTANTS, Mutant
from mutation import (
    DETERMINISTIC_SUITES,
    MIXED_SUITES,
    MutantError,
    Outcome,
    check_applies,
    run_mutants,
    table,
    validate,
)

REPRESENTATIVE = ("simple2-scale", "item-delta-model-swap")
"""Killed in the default run (both on ``--mechanism simple2``: one control, two mutants):
a scale bug the plans catch, and a replace-one Δ that only the coverage rows' non-bit
domains see."""
CHEAP = ("--max-horizon", "16", "--random-horizons", "0")
"""verify options of the default-run kills (each of these mutants fails at every T)."""


def test_every_mutant_applies_exactly_once_and_compiles() -> None:
    assert validate() == []


def test_every_bug_class_has_a_mutant() -> None:
    assert {m.kind for m in MUTANTS} == set(KINDS)
    assert len(MUTANTS) >= 30


def test_a_snippet_that_is_missing_or_repeated_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "f.py").write_text("x = 1\nx = 1\ny = 2\n")
    base = {"kind": "scale", "file": "f.py", "new": "z = 3\n", "why": "", "mechanisms": ()}
    with pytest.raises(MutantError, match="occurs 0 times"):
        check_applies(Mutant(id="gone", old="w = 0\n", **base), tmp_path)
    with pytest.raises(MutantError, match="occurs 2 times"):
        check_applies(Mutant(id="twice", old="x = 1\n", **base), tmp_path)
    assert check_applies(Mutant(id="once", old="y = 2\n", **base), tmp_path).endswith("z = 3\n")
    assert validate([Mutant(id="gone", old="w = 0\n", **base)], tmp_path) != []


def test_every_installed_verify_suite_is_classified() -> None:
    """A suite the harness does not know counts as statistical: a new exact suite (as
    ``samplers`` and ``floats`` were) must be added to DETERMINISTIC_SUITES, or its kills
    are under-reported."""
    from dpref.plugins import VERIFY, ordered

    names = {
        ep.name.partition("-")[2] if ep.name[:1].isdigit() else ep.name for ep in ordered(VERIFY)
    }
    assert names - DETERMINISTIC_SUITES - MIXED_SUITES == set()
    assert {"samplers", "floats"} <= DETERMINISTIC_SUITES


def test_an_outcome_is_classified_by_its_rows() -> None:
    def outcome(rc: int, *rows: tuple[str, str, str]) -> Outcome:
        failed = [{"suite": s, "mechanism": m, "detail": d} for s, m, d in rows]
        return Outcome("m", "scale", [], rc, 0.0, failed)

    assert outcome(0).verdict == "survived"
    assert outcome(1, ("plans", "binary", "x")).verdict == "deterministic"
    assert outcome(1, ("audit", "binary", "audit: ε ≥ 1.2 proven")).verdict == "statistical"
    assert outcome(1, ("audit", "binary", "exact loss 2 > declared 1")).verdict == "deterministic"
    assert outcome(1, ("sanitize", "tree counts, sampled audit", "")).verdict == "statistical"
    assert outcome(1, ("samplers", "discrete_laplace", "x")).verdict == "deterministic"
    assert outcome(1, ("floats", "binary", "x")).verdict == "deterministic"
    assert outcome(1, ("unknown-suite", "binary", "x")).verdict == "statistical"
    assert outcome(2).verdict == "crash"


def _assert_killed(outcomes: list[Outcome]) -> None:
    print(table(outcomes))
    weak = [(o.mutant, o.verdict, o.rows) for o in outcomes if o.verdict != "deterministic"]
    assert weak == []


def test_representative_mutants_are_killed_by_verify() -> None:
    """Also checks that the scratch copy, not the installed package, is what verify imports
    (``run_mutants`` raises otherwise) and that the unmutated copy passes."""
    chosen = [m for m in MUTANTS if m.id in REPRESENTATIVE]
    controls, outcomes = run_mutants(chosen, options=CHEAP)
    assert [c.verdict for c in controls] == ["survived"]  # the unmutated copy passes
    _assert_killed(outcomes)


@pytest.mark.slow
def test_every_mutant_is_killed_deterministically_by_verify() -> None:
    controls, outcomes = run_mutants(MUTANTS)
    assert all(c.verdict == "survived" for c in controls)
    _assert_killed(outcomes)
