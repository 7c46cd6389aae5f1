"""``dpref verify``'s ``coverage`` suite (dpref/verify/coverage.py): its rows pass on the
code as it is, and each of its checks fails on the bug it is there for (in process, by
monkeypatching; tests/test_mutation.py applies the same bugs to a scratch copy)."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import pytest

from dpref.verify import VerifyOptions
from dpref.verify.coverage import (
    _derived_delta,
    _histogram_delta,
    _level_of,
    _split,
    coverage_suite,
)


def _rows(*names: str) -> dict[str, tuple[int, int, str]]:
    rows = coverage_suite(VerifyOptions(mechanisms=names))
    assert {r.suite for r in rows} == {"coverage"}
    return {r.mechanism: (r.checks, r.failed, r.detail) for r in rows}


def test_the_rows_pass_and_say_what_they_checked() -> None:
    rows = _rows("binary", "hybrid")
    assert set(rows) == {
        "binary domains",
        "binary declaration",
        "binary level budgets",
        "binary sanitizer",
        "hybrid domains",
        "hybrid sanitizer",
    }
    assert all(checks > 0 and failed == 0 for checks, failed, _ in rows.values()), rows


def test_the_derivations() -> None:
    assert _derived_delta(Fraction(-1), Fraction(1), "replace") == 2
    assert _derived_delta(Fraction(-1), Fraction(3), "add_remove") == 3
    assert _histogram_delta(3, "replace") == 2
    assert _histogram_delta(3, "add-remove") == 1
    assert _split(3, Fraction(7, 10)) == (Fraction(7, 60), Fraction(7, 30), Fraction(7, 20))
    assert [_level_of(s, 3) for s in (1, 3, 9, 4)] == [0, 1, 2, -1]


def test_a_wrong_item_delta_fails_the_domain_row(monkeypatch: pytest.MonkeyPatch) -> None:
    import dpref.domains as domains

    def unbounded(lower: Fraction, upper: Fraction, neighbours: str) -> Fraction:
        return max(abs(lower), abs(upper))  # the add/remove Δ for every relation

    monkeypatch.setattr(domains, "stream_item_sensitivity", unbounded)
    _, failed, detail = _rows("simple2")["simple2 domains"]
    assert failed > 0 and "Δ = 1, expected 2" in detail


def test_a_permuted_level_budget_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    import dpref.mechanisms.counting as counting

    real = counting.design_level_budget

    def top_first(*args: Any, **kw: Any) -> tuple[str, tuple[Fraction, ...]]:
        kind, shares = real(*args, **kw)
        return kind, shares[::-1]

    monkeypatch.setattr(counting, "design_level_budget", top_first)
    _, failed, detail = _rows("binary")["binary level budgets"]
    assert failed > 0 and "is not the given" in detail
