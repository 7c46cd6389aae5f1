"""``dpref reproduce NAME --out DIR``: the published experiments, reproduced by one command
(docs/reproductions.md).

Each experiment is a module with ``run(Context) -> Outcome``; :data:`EXPERIMENTS` names them.
This package imports nothing heavy: matplotlib and datasketches are imported only when an
experiment draws or sketches.
"""

from __future__ import annotations

__all__ = ["EXPERIMENTS"]

EXPERIMENTS: dict[str, tuple[str, str]] = {
    "counting": (
        "dpref.reproduce.counting",
        "Chan-Shi-Song 2010: Simple I/II, Two-Level, Binary mean |error| vs t, with exact curves",
    ),
    "frontier": (
        "dpref.reproduce.frontier",
        "every counter's exact variance against T and against t, ε-DP and ρ-zCDP",
    ),
    "decayed": (
        "dpref.reproduce.decayed",
        "decayed sums against per-item noise and randomized response, with lower bounds",
    ),
    "quantiles": (
        "dpref.reproduce.quantiles",
        "private against true quantiles over time on a drifting stream (needs datasketches)",
    ),
}
"""Experiment name → (module, one-line description), in the order ``all`` runs them."""
