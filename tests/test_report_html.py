"""``summary()`` and ``_repr_html_`` on the reports users print in a notebook: the HTML
table holds the summary's lines, and every cell is escaped (a target name with markup
prints as text)."""

from __future__ import annotations

import html
from fractions import Fraction
from typing import Any

import pytest

from dpref import Binary
from dpref.audit.conformance.conform import ConformReport
from dpref.audit.conformance.conform_checks import Check
from dpref.audit.reports.audit_report import AuditReport
from dpref.audit.reports.structural_report import StructuralReport
from dpref.audit.sweep import SweepReport, SweepRow
from dpref.frontier import frontier
from dpref.report_html import HtmlSummary, html_table, summary_rows, summary_table

EVIL = "<script>alert('x')</script> & co"


def _audit() -> AuditReport:
    return AuditReport(
        target=EVIL,
        claimed_epsilon=Fraction(1),
        horizon=8,
        confidence=0.99,
        epsilon_lower_bound=0.5,
        violation=False,
        neighbours=None,
        event="none",
        events=[],
        samples=100,
        selection_samples=50,
        test_samples=50,
        pairs_screened=4,
        seconds=0.1,
    )


def _conform() -> ConformReport:
    check = Check("noise-scale", True, None, None, (0.98, 1.02), 0.01, "ratio <b>ok</b>")
    return ConformReport(
        target=EVIL,
        reference="binary",
        horizon=8,
        runs=100,
        alpha=0.01,
        conforms=True,
        checks=[check],
        noise_scale_ratio=None,
        implied_epsilon=None,
        claimed_epsilon=Fraction(1),
        seconds=0.2,
    )


def _structural() -> StructuralReport:
    return StructuralReport(EVIL, 8, "pure", "bits", Fraction(1), Fraction(1))


def _reports() -> list[tuple[str, Any]]:
    return [
        ("audit", _audit()),
        ("conform", _conform()),
        ("structural", _structural()),
        ("plan", Binary(epsilon=1, horizon=8).plan(8).check()),
    ]


def test_summary_rows_split_key_and_value_and_keep_other_lines() -> None:
    text = (
        "verdict     no violation found\nlower bound ε ≥ 0.5\n  pass  x  y\n\n"
        "plain line\nlabel: a value"
    )
    assert summary_rows(text) == [
        ("verdict", "no violation found"),
        ("lower bound", "ε ≥ 0.5"),  # padded to the keyed lines' column
        ("", "  pass  x  y"),
        ("", "plain line"),
        ("", "label: a value"),
    ]


def test_every_cell_is_escaped() -> None:
    out = html_table(EVIL, [[EVIL, EVIL], ["", EVIL]])
    assert "<script>" not in out and out.count(html.escape(EVIL)) == 4
    assert "<script>" not in summary_table("t", f"target      {EVIL}")


@pytest.mark.parametrize("kind", ["audit", "conform", "structural", "plan"])
def test_report_summary_and_html_table(kind: str) -> None:
    report = dict(_reports())[kind]
    assert isinstance(report, HtmlSummary)
    text = report.summary()
    assert isinstance(text, str) and "\n" in text
    out = report._repr_html_()
    assert out.startswith('<table class="dpref-report">') and out.endswith("</table>")
    assert f'<caption style="text-align:left">{type(report).__name__}</caption>' in out
    assert out.count("<tr>") == len(summary_rows(text))
    for key, value in summary_rows(text):
        assert html.escape(value) in out and (not key or html.escape(key) in out)
    assert "<script>" not in out and "<b>" not in out


def test_sweep_report_has_the_html_form_of_its_summary() -> None:
    row = SweepRow(
        horizon=5, method="exact", verdict="violation", result="ε = ∞", detail=EVIL, seconds=0.1
    )
    report = SweepReport(
        target=EVIL, claim="ε = 1", seed=0, max_seconds=None, horizons=[5], rows=[row]
    )
    out = report._repr_html_()
    assert out.count("<tr>") == len(summary_rows(report.summary()))
    assert "<script>" not in out and html.escape(EVIL) in out


def test_plan_summary_lists_every_check() -> None:
    report = Binary(epsilon=1, horizon=8).plan(8).check()
    lines = report.summary().splitlines()
    assert lines[0] == report.describe()
    assert [line.split()[1] for line in lines[1:]] == [c.name for c in report.checks]


def test_frontier_summary_and_html_rows() -> None:
    report = frontier(16, 1, top=3)
    text = report.summary()
    best = report.best
    assert best is not None
    assert text.splitlines()[0] == report.table().splitlines()[0]
    assert f"best        {best.label}:" in text and "3 evaluated" in text
    assert "lower bound:" in text
    out = report._repr_html_()
    notes = 1 + 1 + (report.error_bound is not None)  # omitted rows, lower and error bound
    assert out.count("<tr>") == 1 + len(report.rows) + notes  # and the header
    assert all(html.escape(r.label) in out for r in report.rows)
    assert "<td" in out and "<script>" not in out
