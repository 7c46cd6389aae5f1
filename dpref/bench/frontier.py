"""Benchmarks of ``dpref frontier`` and of the balanced-digit counter (``Elders``)."""

from __future__ import annotations

import numpy as np

from dpref.bench import Row, best_of, row
from dpref.bench.counting import _online_bench
from dpref.mechanisms import Binary, Elders

__all__ = ["elders_bench", "frontier_bench"]


def frontier_bench(quick: bool = False) -> list[Row]:
    """The whole frontier (every counter, every variant, exact) at T = 2^20 against Binary's
    exact per-step variance as one Fraction per step converted to floats (what
    ``Binary.variance`` did before it read ``variance_counts``) at the same T: ≤ 40×."""
    from dpref.frontier import frontier

    T = 1 << (16 if quick else 20)
    binary = Binary(epsilon=1, horizon=T)
    base = best_of(lambda: [float(v) for v in binary.variance_exact(T)], 3)
    value = best_of(lambda: frontier(T, 1), 1)
    rows = frontier(T, 1).rows
    return [
        row(
            f"frontier T={T:,}",
            value,
            base,
            40.0,
            "s",
            f"{len(rows)} rows; baseline: Binary.variance_exact(T) as floats (a Fraction per step)",
        )
    ]


def elders_bench(quick: bool = False) -> list[Row]:
    """Elders (k = 19): batch release at T = 10^6 ≤ 3× T Laplace draws + cumsum; online
    ≤ 5 µs per step, memory at 2^20 ≤ 2× memory at 2^10."""
    T = 100_000 if quick else 1_000_000
    stream = np.random.default_rng(1).integers(0, 2, T).astype(np.float64)
    mech = Elders(epsilon=1, horizon=T)

    def baseline() -> None:
        np.random.default_rng(2).laplace(0.0, 1.0, T) + np.cumsum(stream)

    mech.release(stream, rng=2)  # warm the layout cache, as any repeated use
    base = best_of(baseline, 5)
    value = best_of(lambda: mech.release(stream, rng=2), 5)
    rows = [row(f"Elders.release T={T:,}", value, base, 3.0, "s", "baseline: T Laplace + cumsum")]
    steps = 1 << (16 if quick else 20)
    rows += _online_bench(
        "Elders(k=19)", lambda: Elders(epsilon=1, horizon=steps).online(rng=1), steps, 1 << 10
    )
    return rows
