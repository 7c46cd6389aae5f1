"""Shared pieces of the reproductions: the run context, the outcome each experiment returns,
CSV writing and the optional matplotlib backend."""

from __future__ import annotations

import csv
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["PLOT_HINT", "Context", "Outcome", "pyplot", "save_figure", "write_csv"]

PLOT_HINT = "figures need matplotlib: pip install 'dpref[plot]'"
"""The one line printed when matplotlib is missing (the CSVs are still written)."""
DPI = 100
"""Resolution of every figure (the committed PNGs stay under 200 kB)."""


@dataclass(frozen=True)
class Context:
    """Where and how one experiment runs."""

    out: Path
    """The experiment's own directory (``DIR/<name>``), created by the caller."""
    seed: int
    """The seed every random draw of the experiment derives from."""
    quick: bool
    """Smaller horizons and fewer trials (seconds, for the tests)."""
    plots: bool
    """Whether matplotlib is available (else only the CSVs are written)."""


@dataclass
class Outcome:
    """What an experiment reports: its printed headline lines, its JSON headline numbers,
    its parameters and the files it wrote (names relative to its directory)."""

    lines: list[str] = field(default_factory=list)
    headline: dict[str, Any] = field(default_factory=dict)
    parameters: dict[str, Any] = field(default_factory=dict)
    files: list[str] = field(default_factory=list)
    skipped: str | None = None
    """Why the experiment could not run (a missing optional dependency), or None."""


def write_csv(
    ctx: Context, name: str, header: Sequence[str], rows: Iterable[Sequence[Any]], out: Outcome
) -> Path:
    """Write ``DIR/<experiment>/<name>`` (floats with repr precision) and record it."""
    path = ctx.out / name
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh, lineterminator="\n")
        writer.writerow(header)
        for row in rows:
            writer.writerow([_cell(v) for v in row])
    out.files.append(name)
    return path


def _cell(value: Any) -> Any:
    if isinstance(value, float):
        return repr(value) if value == value else ""
    return value


def pyplot() -> Any:
    """``matplotlib.pyplot`` on the Agg backend, or None when matplotlib is not installed."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    return plt


def save_figure(ctx: Context, fig: Any, name: str, out: Outcome) -> None:
    """Save ``fig`` as ``DIR/<experiment>/<name>`` at :data:`DPI`, close it, record it."""
    plt = pyplot()
    try:
        fig.savefig(ctx.out / name, dpi=DPI)
    finally:
        if plt is not None:
            plt.close(fig)
    out.files.append(name)
