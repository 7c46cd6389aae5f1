"""Benchmarks of the tree counters (docs/trees.md): batch release at T = 10⁶ against the
physical baseline (T Laplace draws plus one cumsum, at most 3×) and the online step
(at most 5 µs, memory at 2²⁰ steps at most 2× that at 2¹⁰).  Run from the counting
benchmarks (``dpref bench --only counting``)."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import numpy as np

from dpref.bench import Row, best_of, row
from dpref.mechanisms import Honaker, KaryTree, Mechanism

__all__ = ["TREE_CASES", "tree_online_rows", "tree_release_rows"]


def _cases(T: int) -> list[Mechanism]:
    return [
        Honaker(epsilon=1, horizon=T),
        KaryTree(epsilon=1, horizon=T, k=8),
        KaryTree(epsilon=1, horizon=T, k=16, combine=True, budget="mean"),
    ]


TREE_CASES: Callable[[int], list[Mechanism]] = _cases
"""The tree mechanisms benchmarked at horizon T: Honaker, the 8-ary tree, and the best
tree at T = 2²⁰ (16-ary, combined, mean-optimised level budget)."""


def tree_release_rows(quick: bool = False) -> list[Row]:
    """release() at T = 10⁶ of each tree case vs T Laplace draws + one cumsum (≤ 3×)."""
    T = 100_000 if quick else 1_000_000
    stream = np.random.default_rng(1).integers(0, 2, T).astype(np.float64)

    def baseline() -> None:
        g = np.random.default_rng(2)
        g.laplace(0.0, 1.0, T) + np.cumsum(stream)

    rows = []
    for mech in _cases(T):
        mech.release(stream, rng=2)  # warm the layout caches like any repeated use
        base = best_of(baseline, 5)
        value = best_of(partial(mech.release, stream, rng=2), 5)
        rows.append(
            row(
                f"{mech!r}.release T={T:,}",
                value,
                base,
                3.0,
                "s",
                f"{mech.node_count(T):,} nodes; baseline: T Laplace + cumsum",
            )
        )
    return rows


def tree_online_rows(
    online_rows: Callable[[str, Callable[[], object], int, int], list[Row]], quick: bool
) -> list[Row]:
    """The online step and memory rows of each tree case (the counting benchmark's
    ``_online_bench`` measures them)."""
    steps = 1 << (16 if quick else 20)
    rows: list[Row] = []
    for mech in _cases(steps):
        rows += online_rows(repr(mech), partial(mech.online, rng=1), steps, 1 << 10)
    return rows
