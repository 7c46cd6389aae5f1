"""The figures' content, read from the matplotlib objects (not pixels): the counting
figure marks the crossover computed from the curves it plots and leaves Simple I off its
linear y-axis with a note; ``dpref quantiles --plot`` draws a one-point history with
markers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from dpref.reproduce.counting import COMPARED, _curves, _mechanisms, crossover, figure

plt = pytest.importorskip("matplotlib.pyplot")


def _by_gid(fig: Any, gid: str) -> list[Any]:
    return [a for a in fig.findobj() if a.get_gid() == gid]


def test_counting_figure_marks_the_crossover_of_the_plotted_exact_curves() -> None:
    T = 10_000
    emp, ex = _curves("T10000", T, _mechanisms(T), 2, 0, 1)
    fig = figure(plt, "T10000", T, emp, ex, 2)
    try:
        ax = fig.axes[0]
        (vline,) = _by_gid(fig, "crossover")
        at = crossover(ex[COMPARED[0]], ex[COMPARED[1]])
        assert at == 5120  # docs/reproductions.md's headline, recomputed from the exact curves
        assert list(vline.get_xdata()) == [at, at]
        (label,) = _by_gid(fig, "crossover-label")
        assert "t = 5,120" in label.get_text()
        # the dashed (exact) curves drawn are the ones the crossover was read from
        dashed = {ln.get_label(): ln for ln in ax.get_lines() if ln.get_linestyle() == "--"}
        assert set(dashed) == {"simple2", "two-level[block_size=10]", "binary"}
        for name in COMPARED:
            x, y = dashed[name].get_data()
            assert np.array_equal(y, ex[name][x - 1])
        # Simple I (≈ T/ε) is not on the axis; its level is stated; every drawn curve fits
        assert ax.get_yscale() == "linear"
        lo, hi = ax.get_ylim()
        assert lo == 0 and hi < 1000 < float(np.mean(ex["simple1"]))
        assert all(
            float(np.max(ln.get_ydata())) <= hi
            for ln in ax.get_lines()
            if ln.get_gid() != "crossover"
        )
        (note,) = _by_gid(fig, "clipped-note")
        assert f"{float(np.mean(ex['simple1'])):,.0f}" == "10,000"
        assert "10,000 at every t" in note.get_text().replace("\n", " ")
    finally:
        plt.close(fig)


def test_counting_figure_without_a_crossover_marks_none() -> None:
    T = 8
    ex = {
        "binary": np.full(T, 2.0),
        "two-level[block_size=10]": np.full(T, 1.0),
    }
    fig = figure(plt, "T8", T, ex, ex, 1)
    try:
        assert _by_gid(fig, "crossover") == [] and _by_gid(fig, "clipped-note") == []
    finally:
        plt.close(fig)
    ex["binary"] = np.array([3.0, 3, 0.5, 3, 0.5, 0.5, 0.5, 0.5])
    fig = figure(plt, "T8", T, ex, ex, 1)
    try:
        (vline,) = _by_gid(fig, "crossover")
        assert list(vline.get_xdata()) == [5, 5]
    finally:
        plt.close(fig)


@pytest.mark.parametrize(("values", "points"), [(5, 1), (40, 4)])
def test_quantiles_plot_draws_a_single_history_point_with_markers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, values: int, points: int
) -> None:
    from dpref.sanitize import cli

    drawn: list[list[tuple[str, Any, int]]] = []
    real = cli.quantiles_figure

    def spy(*args: Any) -> Any:
        fig = real(*args)
        drawn.append(
            [
                (ln.get_label(), ln.get_marker(), len(ln.get_xdata()))
                for ln in fig.axes[0].get_lines()
            ]
        )
        return fig

    monkeypatch.setattr(cli, "quantiles_figure", spy)
    data = tmp_path / "s.txt"
    data.write_text("".join(f"{i % 10}\n" for i in range(values)))
    out = tmp_path / "q.png"
    argv = ["--input", str(data), "--domain", "0:10", "--epsilon", "1", "--block-size", "10"]
    assert cli.main([*argv, "--seed", "1", "--json", "--plot", str(out)]) == 0
    assert out.is_file()
    (lines,) = drawn
    assert len(lines) == 6  # private and true, for each of the three default q
    for _, marker, n in lines:
        assert n == points
        assert (marker not in ("None", "", None)) == (points == 1)
