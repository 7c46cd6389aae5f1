"""``dpref bench``: speed and memory targets, as ratios against baselines run in the
same process.  Benchmarks are measurements, never tests: nothing here fails a build.

Each benchmark returns rows ``{name, value, baseline, ratio, target, ok, detail}``.
Subsystems add their own benchmark functions to :data:`BENCHES`.
"""

from __future__ import annotations

import gc
import importlib
import sys
import time
import tracemalloc
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np

from dpref.mechanisms import MECHANISMS, Binary, Hybrid, Mechanism

__all__ = ["BENCHES", "run_bench"]

Row = dict[str, Any]


def _best_of(fn: Callable[[], object], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        gc.collect()
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def _row(
    name: str, value: float, baseline: float, target: float, unit: str, detail: str = ""
) -> Row:
    ratio = value / baseline if baseline > 0 else float("inf")
    return {
        "name": name,
        "value": f"{value:.4g}{unit}",
        "baseline": f"{baseline:.4g}{unit}",
        "ratio": ratio,
        "target": f"<= {target:g}x",
        "ok": ratio <= target,
        "detail": detail,
    }


def binary_release_bench(quick: bool = False) -> list[Row]:
    """Binary.release on T = 10⁶ vs T Laplace draws plus one cumsum."""
    T = 100_000 if quick else 1_000_000
    rng = np.random.default_rng(1)
    stream = rng.integers(0, 2, T).astype(np.float64)
    mech = Binary(epsilon=1, horizon=T)

    def baseline() -> None:
        g = np.random.default_rng(2)
        g.laplace(0.0, 1.0, T) + np.cumsum(stream)

    def subject() -> None:
        mech.release(stream, rng=2)

    subject()  # warm the caches (popcount groups) like any repeated use
    base = _best_of(baseline, 5)
    value = _best_of(subject, 5)
    return [_row(f"Binary.release T={T:,}", value, base, 2.0, "s", "baseline: T Laplace + cumsum")]


def release_many_bench(quick: bool = False) -> list[Row]:
    """release_many at T = 16 with 10⁶ runs, every mechanism: at most 2 s each."""
    T, runs = 16, (100_000 if quick else 1_000_000)
    stream = np.random.default_rng(3).integers(0, 2, T)

    def baseline() -> None:
        np.random.default_rng(4).laplace(0.0, 1.0, (runs, T))

    base = _best_of(baseline, 2)
    rows = []
    for name, cls in MECHANISMS.items():
        if name not in ("simple1", "simple2", "two-level", "binary", "hybrid"):
            continue
        mech: Mechanism = cls(epsilon=1, horizon=T) if cls.needs_horizon else cls(epsilon=1)
        value = _best_of(partial(mech.release_many, stream, runs, rng=5), 2)
        limit = 2.0 * (runs / 1_000_000)
        rows.append(
            {
                "name": f"{name}.release_many T={T} runs={runs:,}",
                "value": f"{value:.3f}s",
                "baseline": f"{base:.3f}s",
                "ratio": value / base,
                "target": f"<= {limit:g}s",
                "ok": value <= limit,
                "detail": f"baseline: {runs * T:,} Laplace draws; absolute target {limit:g} s",
            }
        )
    return rows


def _online_bench(label: str, make: Callable[[], Any], steps: int, small: int) -> list[Row]:
    xs = np.random.default_rng(6).integers(0, 2, steps).tolist()

    def loop_baseline() -> None:
        # the irreducible cost: a Python call per item plus one buffered noise value
        buf = np.random.default_rng(7).laplace(0.0, 1.0, steps).tolist()
        acc = 0.0
        f = float
        for x, z in zip(xs, buf, strict=True):
            acc += f(x) + z

    counter = make()
    step = counter.step
    start = time.perf_counter()
    for x in xs:
        step(x)
    per_step = (time.perf_counter() - start) / steps
    base = _best_of(loop_baseline, 1) / steps

    # memory: what the counter keeps after `small` and after `steps` items
    gc.collect()
    tracemalloc.start()
    counter = make()
    snap0 = tracemalloc.get_traced_memory()[0]
    step = counter.step
    for x in xs[:small]:
        step(x)
    gc.collect()
    mem_small = tracemalloc.get_traced_memory()[0] - snap0
    for x in xs[small:]:
        step(x)
    gc.collect()
    mem_large = tracemalloc.get_traced_memory()[0] - snap0
    tracemalloc.stop()
    us = per_step * 1e6
    return [
        {
            "name": f"{label} online step ({steps:,} steps)",
            "value": f"{us:.3f}us",
            "baseline": f"{base * 1e6:.3f}us",
            "ratio": per_step / base,
            "target": "<= 5us",
            "ok": us <= 5.0,
            "detail": "baseline: a bare Python loop adding one buffered Laplace per item",
        },
        {
            "name": f"{label} online memory t={steps:,} vs t={small:,}",
            "value": f"{mem_large}B",
            "baseline": f"{mem_small}B",
            "ratio": mem_large / max(mem_small, 1),
            "target": "<= 2x",
            "ok": mem_large <= 2 * max(mem_small, 1),
            "detail": "tracemalloc: bytes held by the counter (incl. its noise buffer)",
        },
    ]


def online_bench(quick: bool = False) -> list[Row]:
    """Online Binary and Hybrid: ≤ 5 µs/step amortised; memory at 2²⁰ ≤ 2× memory at 2¹⁰."""
    steps = 1 << (16 if quick else 20)
    small = 1 << 10
    rows = _online_bench(
        "Binary", lambda: Binary(epsilon=1, horizon=steps).online(rng=1), steps, small
    )
    rows += _online_bench("Hybrid", lambda: Hybrid(epsilon=1).online(rng=1), steps, small)
    return rows


def sensitivity_bench(quick: bool = False) -> list[Row]:
    """Global sensitivity: fast exact algorithms vs the brute-force oracle (SPEC §4)."""
    from dpref.bench_sensitivity import bench

    return [dict(row) for row in bench()]


BENCHES: list[str] = [
    "dpref.bench:binary_release_bench",
    "dpref.bench:release_many_bench",
    "dpref.bench:online_bench",
    "dpref.bench:sensitivity_bench",
    "dpref.audit.bench:audit_bench",
    "dpref.bench_decayed:decayed_bench",
]
"""Benchmarks run by ``dpref bench``, as ``module:function(quick) -> rows``."""


def run_bench(quick: bool = False, only: str | None = None, progress: bool = False) -> list[Row]:
    """Run every benchmark (or those whose function name contains ``only``)."""
    rows: list[Row] = []
    for spec in BENCHES:
        module, _, func = spec.partition(":")
        if only and only not in spec:
            continue
        if progress:
            sys.stderr.write(f"running {func} …\n")
        fn = getattr(importlib.import_module(module), func)
        rows.extend(fn(quick))
    return rows
