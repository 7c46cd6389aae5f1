"""The frontier answers "which one, and how" (issue 27 item 4): --top, a constructor and a
release command per row that rebuild the row's numbers, --sensitivity, the variance lower
bound in the table's unit, the memory column without unknowns, and the plot's sweep reusing
the table's numbers."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import dpref.cli
from dpref.cli import frontier as frontier_cli
from dpref.errors import DprefError
from dpref.frontier import frontier, plot
from dpref.frontier_rows import laplace_lower_bound, online_memory
from dpref.mechanisms.base import MECHANISMS


def _main(monkeypatch: pytest.MonkeyPatch, argv: list[str]) -> int:
    real = dpref.cli.load

    def load(group: str) -> list[Any]:
        found = real(group)
        return found if frontier_cli in found else [*found, frontier_cli]

    monkeypatch.setattr(dpref.cli, "load", load)
    return dpref.cli.main(argv)


def _rebuild(expr: str) -> Any:
    scope: dict[str, Any] = {}
    exec("from dpref import *\nfrom fractions import Fraction", scope)
    return eval(expr, scope)


def _check_row_numbers(row: Any, horizon: int) -> None:
    m = _rebuild(row.constructor)
    assert type(m).name == row.mechanism
    exact = [Fraction(v) for v in m.variance_exact(horizon)]
    assert max(exact) == row.max
    assert sum(exact, Fraction(0)) / horizon == row.mean
    assert np.allclose(m.variance(horizon), [float(v) for v in exact])


@pytest.mark.parametrize(
    "kwargs",
    [
        {"epsilon": 1},
        {"epsilon": Fraction(1, 2), "objective": "mean"},
        {"epsilon": 1, "sensitivity": 3},
        {"epsilon": 1, "sensitivity": Fraction(5, 2)},
        {"rho": Fraction(1, 2)},
    ],
)
def test_constructors_rebuild_the_top_rows(kwargs: dict[str, Any]) -> None:
    report = frontier(20, top=4, **kwargs)
    assert len(report.rows) == 4 and report.rows[0].best and report.omitted > 0
    for row in report.rows:
        _check_row_numbers(row, 20)


def test_every_row_has_a_constructor_that_rebuilds_it() -> None:
    """Every mechanism's first row (all classes, both budgets) at a small T."""
    seen: set[str] = set()
    for report in (frontier(12, 1), frontier(12, rho=1)):
        for row in report.rows:
            if row.skipped is None and row.mechanism not in seen:
                seen.add(row.mechanism)
                _check_row_numbers(row, 12)
    assert len(seen) >= 10


def test_release_command_runs_the_row(
    monkeypatch: pytest.MonkeyPatch, capsys: Any, tmp_path: Path
) -> None:
    """The printed command, run on a stream, reports the row's per-step variances."""
    (tmp_path / "stream.txt").write_text("\n".join("1" for _ in range(16)) + "\n")
    monkeypatch.chdir(tmp_path)
    for kwargs in ({"epsilon": 1}, {"epsilon": 1, "sensitivity": 2}, {"rho": Fraction(1, 2)}):
        for row in frontier(16, top=2, **kwargs).rows:
            words = row.command.split()
            assert words[:2] == ["dpref", "release"]
            assert dpref.cli.main([*words[1:], "--json", "--seed", "1"]) == 0
            doc = json.loads(capsys.readouterr().out)
            var = np.square(doc["std"])
            assert max(var) == pytest.approx(float(row.max), rel=1e-9)
            assert np.mean(var) == pytest.approx(float(row.mean), rel=1e-9)


def test_top_and_constructor_in_json(monkeypatch: pytest.MonkeyPatch, capsys: Any) -> None:
    argv = ["frontier", "--horizon", "40", "--epsilon", "1", "--top", "3", "--json"]
    assert _main(monkeypatch, argv) == 0
    doc = json.loads(capsys.readouterr().out)
    assert 1 <= len(doc["rows"]) <= 3 and doc["rows_omitted"] > 0
    assert all(r["constructor"] and r["release_command"] for r in doc["rows"])
    assert doc["lower_bound"]["unit"] == "variance"
    assert doc["error_lower_bound"]["unit"] == "error (not a variance)"


@pytest.mark.parametrize(
    "argv",
    [
        ["--top", "0"],
        ["--top", "x"],
        ["--sensitivity", "0"],
        ["--sensitivity", "-1"],
        ["--sensitivity", "1e10"],
        ["--sensitivity", "abc"],
    ],
)
def test_bad_top_or_sensitivity_is_one_line_exit_2(
    monkeypatch: pytest.MonkeyPatch, capsys: Any, argv: list[str]
) -> None:
    code = _main(monkeypatch, ["frontier", "--horizon", "16", "--epsilon", "1", *argv])
    captured = capsys.readouterr()
    assert code == 2 and captured.out == ""
    assert len(captured.err.strip().splitlines()) == 1


def test_sensitivity_scales_variances_and_bounds() -> None:
    one, three = frontier(16, 1), frontier(16, 1, sensitivity=3)
    assert [r.label for r in one.rows] == [r.label for r in three.rows]
    for a, b in zip(one.rows, three.rows, strict=True):
        if a.skipped is None:
            assert b.max == 9 * a.max and b.mean == 9 * a.mean  # type: ignore[operator]
    assert three.bound.value == pytest.approx(9 * one.bound.value, rel=1e-12)
    g1, g3 = frontier(16, rho=1), frontier(16, rho=1, sensitivity=3)
    assert g3.bound.value == pytest.approx(9 * g1.bound.value, rel=1e-12)
    with pytest.raises(DprefError, match=r"^sensitivity="):
        frontier(16, 1, sensitivity=0)


@pytest.mark.parametrize("horizon", [1, 7, 40])
def test_laplace_bound_holds_for_every_row(horizon: int) -> None:
    """Every Laplace row is a linear counter ε-DP through its L1 sum: none beats the bound;
    the bound is 2/ε² times the zCDP table's γ₂² (the same trace norm)."""
    report = frontier(horizon, Fraction(1, 2))
    assert report.bound.value > 0
    for row in report.rows:
        if row.skipped is None:
            assert float(row.max) >= report.bound.value  # type: ignore[arg-type]
    b = laplace_lower_bound(Fraction(1, 2), horizon)
    assert b.value == pytest.approx(8 * b.gamma2**2, rel=1e-9)


def test_text_states_units_and_has_no_unknown_memory() -> None:
    report = frontier(40, 1)
    text = report.table()
    assert "memory (floats)" in text and " ? " not in text and not text.count("  ?\n")
    assert "C² =" not in text and "error bound (not a variance)" in text
    assert "every linear Laplace counter has max Var ≥" in text
    assert all(r.memory is not None for r in report.rows if r.skipped is None)


@pytest.mark.parametrize("horizon", [1, 2, 3, 8, 37, 64])
def test_allwindow_memory_is_what_the_online_counter_holds(horizon: int) -> None:
    m = MECHANISMS["allwindow"](epsilon=1, horizon=horizon)
    counter = m.online(rng=0)
    peak = 0
    for _ in range(horizon):
        counter.step(1)
        peak = max(peak, counter.state_size())
    assert online_memory(m, horizon) == peak


def test_plot_reuses_the_table_numbers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The sweep stops at the report's T and takes that point from the table."""
    pytest.importorskip("matplotlib")
    import dpref.frontier as fr

    report = frontier(40, 1, mechanisms=["binary", "elders", "kary", "smooth"])
    seen: list[int] = []
    real = fr._evaluate

    def spy(cls: Any, params: Any, horizon: int, *args: Any) -> Any:
        seen.append(horizon)
        return real(cls, params, horizon, *args)

    monkeypatch.setattr(fr, "_evaluate", spy)
    drawn = plot(report, str(tmp_path / "f.png"))
    assert len(drawn) == 3 and (tmp_path / "f.png").stat().st_size > 1000
    assert set(seen) == {16, 32}  # T = 40 itself is the table's row
