"""Benchmarks of the BLUE tree (:class:`dpref.BlueTree`): batch release at T = 2²⁰ against
the physical baseline (N Laplace draws plus one cumsum, at most 10×: the decoder makes an
upward, a downward and a gather pass per level), and the exact objectives of one design at
T = 2²⁰ against a Honaker release at the same T (at most 10×)."""

from __future__ import annotations

import numpy as np

from dpref.bench import Row, best_of, row
from dpref.mechanisms import BlueTree, Honaker

__all__ = ["blue_bench"]


def blue_bench(quick: bool = False) -> list[Row]:
    """``BlueTree(k=13, layout="elders_full")``: release and ``objective`` rows."""
    T = 1 << (16 if quick else 20)
    stream = np.random.default_rng(1).integers(0, 2, T).astype(np.float64)
    mech = BlueTree(epsilon=1, horizon=T, k=13, layout="elders_full")
    n = mech.node_count(T)

    def baseline() -> None:
        np.random.default_rng(2).laplace(0.0, 1.0, n).sum() + np.cumsum(stream)

    mech.release(stream, rng=2)  # warm the layout cache, as any repeated use
    base = best_of(baseline, 3)
    value = best_of(lambda: mech.release(stream, rng=2), 3)
    rows = [
        row(
            f"{mech!r}.release T={T:,}",
            value,
            base,
            10.0,
            "s",
            f"{n:,} nodes; baseline: N Laplace + cumsum",
        )
    ]
    honaker = Honaker(epsilon=1, horizon=T)
    ref = best_of(lambda: honaker.release(stream, rng=2), 1)

    def objectives() -> None:
        fresh = BlueTree(epsilon=1, horizon=T, k=13, layout="elders_full")
        fresh.objective("mean")
        fresh.objective("max")

    value = best_of(objectives, 1)
    rows.append(
        row(
            f"BlueTree(k=13, elders_full) exact mean+max T={T:,}",
            value,
            ref,
            10.0,
            "s",
            "baseline: one Honaker release at the same T",
        )
    )
    return rows
