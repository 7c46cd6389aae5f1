"""The frontier with the BLUE tree (issue 28 item 2): BLUE rows are ranked by their exact
mean and an exact one-step lower bound on the maximum, the exact maximum is computed only
for the rows that could be shown, every shown number is the mechanism's own exact
``objective()``, and the published sweep table is what the reproduction prints."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

import dpref.frontier as frontier_module
from dpref.frontier import frontier
from dpref.frontier_rows import deferred_bounds
from dpref.mechanisms.blue import BlueTree
from dpref.reproduce.frontier import blue_table, blue_table_markdown

ROOT = Path(__file__).resolve().parents[1]
DESIGNS = [
    {"k": k, "layout": layout}
    for k, layout in [(2, "complete"), (3, "elders_full"), (4, "kary"), (5, "elders_full"),
                      (7, "elders_full"), (8, "complete"), (9, "elders_full"), (16, "kary")]
]  # fmt: skip


def _rebuild(expr: str) -> Any:
    scope: dict[str, Any] = {}
    exec("from dpref import *\nfrom fractions import Fraction", scope)
    return eval(expr, scope)


def test_blue_rows_rebuild_from_their_constructor(monkeypatch: pytest.MonkeyPatch) -> None:
    """At a moderate T the best rows are BLUE designs; each row's constructor rebuilds a
    mechanism whose own exact objective() and per-step variance_exact() give the row."""
    T = 48
    monkeypatch.setattr(BlueTree, "frontier_variants", classmethod(lambda cls, h: DESIGNS))
    report = frontier(T, 1, mechanisms=["blue", "elders"], top=3)
    assert report.best is not None and report.best.mechanism == "blue"
    for row in report.rows:
        m = _rebuild(row.constructor)
        assert m.objective("max") == row.max and m.objective("mean") == row.mean
        exact = m.variance_exact(T)
        assert max(exact) == row.max and sum(exact, Fraction(0)) / T == row.mean
        assert not row.lower and not row.upper


def test_ascent_bound_is_a_variance_below_the_max() -> None:
    """The lower bound on the max is the exact variance of one step, never above the max;
    with ascent=False it is the mean."""
    m = BlueTree(epsilon=1, horizon=200, k=5, layout="elders_full")
    b = deferred_bounds(m, 200)
    assert b is not None
    exact = m.variance_exact(200)
    assert b.max_lower in exact and b.max_lower <= m.objective("max")
    assert b.mean == sum(exact, Fraction(0)) / 200
    flat = deferred_bounds(m, 200, ascent=False)
    assert flat is not None and flat.max_lower == flat.mean


@pytest.fixture
def small_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make T = 64 a 'large' horizon, where maxima are computed on demand, and keep eight
    BLUE designs (the machinery, not the search, is under test; seconds, not minutes)."""
    monkeypatch.setattr(frontier_module, "EXACT_MAX_LIMIT", 16)
    monkeypatch.setattr(BlueTree, "frontier_variants", classmethod(lambda cls, h: DESIGNS))


@pytest.mark.usefixtures("small_limit")
@pytest.mark.parametrize("objective", ["max", "mean"])
def test_top_rows_are_the_exact_ranking(objective: str) -> None:
    """``top=N`` on demand gives the same N rows, in the same order and with the same
    numbers, as computing every maximum (``exact=True``)."""
    full = frontier(64, 1, objective, mechanisms=["blue"], exact=True)
    assert not any(r.lower for r in full.rows)
    for n in (1, 4):
        head = frontier(64, 1, objective, mechanisms=["blue"], top=n)
        assert [(r.label, r.mean, r.max) for r in head.rows] == [
            (r.label, r.mean, r.max) for r in full.rows[:n]
        ]
        assert not any(r.lower for r in head.rows)


@pytest.mark.usefixtures("small_limit")
def test_rows_behind_the_best_print_a_marked_lower_bound() -> None:
    """Without top above the limit: the best row is exact; a row whose max was not
    computed has its exact mean and a lower bound on its max, marked ≥ in the text and
    in JSON, and the exact max is indeed at least the bound."""
    full = {r.label: r for r in frontier(64, 1, mechanisms=["blue"], exact=True).rows}
    report = frontier(64, 1, mechanisms=["blue"])
    best = report.best
    assert (
        best is not None
        and not best.lower
        and best.max == min(r.max for r in full.values() if r.max is not None)
    )
    lower = [r for r in report.rows if r.lower]
    assert lower
    for r in lower:
        exact = full[r.label]
        assert r.mean == exact.mean and r.max is not None and exact.max is not None
        assert r.max <= exact.max
        doc = r.as_dict()
        assert doc["max_variance_is_lower_bound"] and doc["max_variance_exact"] is None
        assert doc["mean_variance_exact"] == str(exact.mean)
    text = report.table()
    assert f"≥{int(float(lower[0].max * 10)) / 10:.1f}" in text
    json.dumps(report.as_dict())


def test_documented_sweep_starts_with_what_the_code_prints() -> None:
    """docs/frontier.md's BLUE table: its header and its first row (T = 2^4) are what
    :func:`blue_table` gives (the whole table: the slow test below)."""
    block = _documented_sweep()
    expect = blue_table_markdown(blue_table([2**4])).splitlines()
    assert block[:3] == expect


@pytest.mark.slow
def test_documented_sweep_is_what_the_code_prints() -> None:
    """The whole documented table, T = 2^4 … 2^20 (minutes)."""
    block = _documented_sweep()
    assert block == blue_table_markdown(blue_table([2**p for p in range(4, 21, 2)])).splitlines()


@pytest.mark.slow
def test_done_criterion_at_two_to_the_twenty() -> None:
    """Issue 28: at T = 2^20, ε = 1 the best row has max ≤ 1400 and mean ≤ 850, and its
    constructor rebuilds a mechanism whose exact objective() gives both."""
    report = frontier(2**20, 1, top=1)
    best = report.best
    assert best is not None and best.mechanism == "blue"
    assert best.max is not None and best.mean is not None
    assert best.max <= 1400 and best.mean <= 850
    m = _rebuild(best.constructor)
    assert m.objective("max") == best.max and m.objective("mean") == best.mean


def _documented_sweep() -> list[str]:
    text = (ROOT / "docs" / "frontier.md").read_text(encoding="utf-8")
    lines = text.split("<!-- blue-sweep -->\n", 1)[1].splitlines()
    return [line for line in lines[: lines.index("")] if line.startswith("|")]
