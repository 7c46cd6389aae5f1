"""Benchmarks of the mechanisms' fast paths (every registered mechanism where the
target is generic): batch release speed, vectorised ``release_many``, online step
time and online memory."""

from __future__ import annotations

import gc
import time
import tracemalloc
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np

from dpref.bench import Row, best_of, row
from dpref.bench.trees import tree_online_rows, tree_release_rows
from dpref.mechanisms import MECHANISMS, Binary, Hybrid, Mechanism

__all__ = ["binary_release_bench", "online_bench", "release_many_bench"]


def binary_release_bench(quick: bool = False) -> list[Row]:
    """Binary.release on T = 10⁶ vs T Laplace draws plus one cumsum (≤ 2×), then the tree
    counters' rows (:func:`dpref.bench.trees.tree_release_rows`, ≤ 3×)."""
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
    base = best_of(baseline, 5)
    value = best_of(subject, 5)
    rows = [row(f"Binary.release T={T:,}", value, base, 2.0, "s", "baseline: T Laplace + cumsum")]
    return rows + tree_release_rows(quick)


RELEASE_MANY_BYTES = 128 << 20
"""Memory for one ``release_many`` call's node noise and outputs: runs are cut to fit, and the
time target scales with them (the call's temporaries take about 3× this at the peak)."""


def release_many_bench(quick: bool = False) -> list[Row]:
    """release_many at T = 16, every registered mechanism (its first example, and its first
    zCDP example, Gaussian noise, when it declares one): at most 2 s per 10⁶ runs of 16
    node draws, i.e. 2 s × runs/10⁶ × max(1, nodes/16)."""
    T, most = 16, (100_000 if quick else 1_000_000)
    stream = np.random.default_rng(3).integers(0, 2, T)
    rows = []
    chosen = [
        (name, ex)
        for name, cls in MECHANISMS.items()
        for ex in [*cls.examples[:1], *[e for e in cls.examples if e.privacy == "zcdp"][:1]]
    ]
    for name, example in chosen:
        cls = MECHANISMS[name]
        mech: Mechanism = example.build(cls, 1, T)
        nodes = mech.node_count(T)
        runs = min(most, RELEASE_MANY_BYTES // (8 * (nodes + T)))
        draw = "normal" if mech.gaussian else "Laplace"

        def baseline(n: int = runs, k: int = max(nodes, T), normal: bool = mech.gaussian) -> None:
            gen = np.random.default_rng(4)
            if normal:
                gen.standard_normal((n, k))
            else:
                gen.laplace(0.0, 1.0, (n, k))

        base = best_of(baseline, 2)
        value = best_of(partial(mech.release_many, stream, runs, rng=5), 2)
        limit = 2.0 * (runs / 1_000_000) * max(1.0, nodes / T)
        rows.append(
            {
                "name": f"{name}.release_many T={T} runs={runs:,}"
                + (" zcdp" if mech.gaussian else ""),
                "value": f"{value:.3f}s",
                "baseline": f"{base:.3f}s",
                "ratio": value / base,
                "target": f"<= {limit:.3g}s",
                "ok": value <= limit,
                "detail": f"{mech!r}, {nodes} nodes; baseline: {runs:,} × {max(nodes, T)} "
                f"{draw} draws; absolute target {limit:.3g} s",
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
    base = best_of(loop_baseline, 1) / steps

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
    """Online Binary, Hybrid and the tree counters: ≤ 5 µs/step amortised; memory at 2²⁰ ≤ 2×
    memory at 2¹⁰."""
    steps = 1 << (16 if quick else 20)
    small = 1 << 10
    rows = _online_bench(
        "Binary", lambda: Binary(epsilon=1, horizon=steps).online(rng=1), steps, small
    )
    rows += _online_bench("Hybrid", lambda: Hybrid(epsilon=1).online(rng=1), steps, small)
    return rows + tree_online_rows(_online_bench, quick)
