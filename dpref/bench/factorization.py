"""Benchmarks of the factorization counters (docs/factorization.md):

* SqrtFactorization batch release (ρ = 1/2) at T = 10⁶ against the physical baseline — T
  standard normal draws plus one cumsum, measured in the same run — at most 5×;
* BLT online step (the shipped 5-buffer preset, Gaussian) at most 10 µs, and the memory the
  counter holds after 2²⁰ steps at most 2× that after 2¹⁰ (independent of T).
"""

from __future__ import annotations

import sys
import time
from fractions import Fraction
from functools import partial

import numpy as np

from dpref.bench import Row, best_of, row
from dpref.mechanisms import BLT, SqrtFactorization

__all__ = ["blt_online_rows", "factorization_bench", "sqrt_release_rows"]

ONLINE_TARGET_US = 10.0
"""Largest BLT online step (µs)."""


def sqrt_release_rows(quick: bool = False) -> list[Row]:
    """SqrtFactorization.release at T = 10⁶ vs T normal draws + cumsum (≤ 5×)."""
    T = 100_000 if quick else 1_000_000
    stream = np.random.default_rng(1).integers(0, 2, T).astype(np.float64)
    mech = SqrtFactorization(rho=Fraction(1, 2), horizon=T)

    def baseline() -> None:
        g = np.random.default_rng(2)
        g.standard_normal(T) + np.cumsum(stream)

    mech.release(stream, rng=2)  # warm-up (S₂, FFT plans)
    base = best_of(baseline, 5)
    value = best_of(partial(mech.release, stream, rng=2), 5)
    return [
        row(
            f"{mech!r}.release T={T:,}",
            value,
            base,
            5.0,
            "s",
            "one FFT convolution (length 2,048,000 = 2^14·5^3 at T = 10^6); "
            "baseline: T normal draws + cumsum",
        )
    ]


def blt_online_rows(quick: bool = False) -> list[Row]:
    """The BLT preset's online step (≤ 10 µs) and its memory at 2²⁰ vs 2¹⁰ steps (≤ 2×)."""
    steps = 1 << (16 if quick else 20)
    small = 1 << 10
    mech = BLT(rho=Fraction(1, 2), horizon=steps)
    xs = np.random.default_rng(6).integers(0, 2, steps).tolist()

    def loop_baseline() -> None:
        buf = np.random.default_rng(7).standard_normal(steps).tolist()
        acc = 0.0
        f = float
        for x, z in zip(xs, buf, strict=True):
            acc += f(x) + z

    counter = mech.online(rng=1)
    step = counter.step
    start = time.perf_counter()
    for x in xs:
        step(x)
    per_step = (time.perf_counter() - start) / steps
    base = best_of(loop_baseline, 1) / steps
    counter = mech.online(rng=1)
    step = counter.step
    for x in xs[:small]:
        step(x)
    mem_small = _held_bytes(counter)
    for x in xs[small:]:
        step(x)
    mem_large = _held_bytes(counter)
    us = per_step * 1e6
    return [
        {
            "name": f"BLT({mech.buffers} buffers) online step ({steps:,} steps)",
            "value": f"{us:.3f}us",
            "baseline": f"{base * 1e6:.3f}us",
            "ratio": per_step / base,
            "target": f"<= {ONLINE_TARGET_US:g}us",
            "ok": us <= ONLINE_TARGET_US,
            "detail": "O(buffers) per step; baseline: a bare Python loop adding one buffered "
            "normal per item",
        },
        {
            "name": f"BLT online memory t={steps:,} vs t={small:,}",
            "value": f"{mem_large}B",
            "baseline": f"{mem_small}B",
            "ratio": mem_large / max(mem_small, 1),
            "target": "<= 2x",
            "ok": mem_large <= 2 * max(mem_small, 1),
            "detail": "bytes held by the counter's own attributes (sys.getsizeof, one level "
            "into lists and dicts; the mechanism and Generator excluded), incl. its noise buffer",
        },
    ]


def _held_bytes(counter: object) -> int:
    """``sys.getsizeof`` of a counter's attributes, one level into lists and dicts (the
    mechanism and the Generator it refers to are shared, not held)."""
    total = 0
    for name, value in vars(counter).items():
        if name in ("mechanism", "_rng", "_m"):
            continue
        total += sys.getsizeof(value)
        if isinstance(value, list | tuple):
            total += sum(sys.getsizeof(v) for v in value)
        elif isinstance(value, dict):
            total += sum(sys.getsizeof(k) + sys.getsizeof(v) for k, v in value.items())
    return total


def factorization_bench(quick: bool = False) -> list[Row]:
    """The factorization benchmarks (see the module docstring)."""
    return sqrt_release_rows(quick) + blt_online_rows(quick)
