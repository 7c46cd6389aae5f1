"""Benchmarks of the global-sensitivity calculator (not timed tests).

``bench()`` returns one row per measurement with ``name``, ``value`` (seconds or a ratio),
``baseline``, ``ratio``, ``target``, ``ok`` and ``detail``.  Baselines run in the same
process: the brute-force oracle for the notebook's scenario (a), and one second for the
large universes.
"""

from __future__ import annotations

import random
import time
from typing import Any

from dpref.sensitivity.api import global_sensitivity
from dpref.sensitivity.queries import NOTEBOOK_QUERIES

__all__ = ["ABSENCE_DAYS", "bench", "sensitivity_bench"]

ABSENCE_DAYS = (1, 2, 3, 4, 5, 6, 7, 8, 15, 20)
"""The notebook's scenario (a) column ``absence_days`` (release size 6)."""


def _timed(**kwargs: Any) -> tuple[float, float]:
    t0 = time.perf_counter()
    value = global_sensitivity(**kwargs)
    return value, time.perf_counter() - t0


def _scenario_a() -> dict[str, object]:
    fast_total = oracle_total = 0.0
    slowest = ("", 0.0)
    for model in ("unbounded", "bounded"):
        for k in (1, 2):
            for q in NOTEBOOK_QUERIES:
                common: dict[str, Any] = {
                    "values": ABSENCE_DAYS,
                    "size": 6,
                    "query": q,
                    "hamming": k,
                    "model": model,
                }
                fast, t_fast = _timed(**common)
                slow, t_slow = _timed(method="oracle", **common)
                tol = 1e-9 * max(1.0, abs(slow)) if q == "std" else 0.0
                assert abs(fast - slow) <= tol, (q, model, k, fast, slow)
                fast_total += t_fast
                oracle_total += t_slow
                if t_fast > slowest[1]:
                    slowest = (f"{q}/{model}/k={k}", t_fast)
    ratio = oracle_total / fast_total
    return {
        "name": "sensitivity: scenario (a) absence_days, fast vs oracle",
        "value": f"{fast_total:.4f}s",
        "baseline": f"{oracle_total:.3f}s",
        "ratio": ratio,
        "target": ">= 100x faster",
        "ok": ratio >= 100.0,
        "detail": (
            f"ratio = oracle/fast; 10 queries x k in {{1,2}} x both models, results equal; "
            f"slowest fast case {slowest[0]} {slowest[1] * 1e3:.1f}ms"
        ),
    }


def _large(
    name: str, values: list[int], queries: tuple[str, ...], size: int, k: int
) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    for q in queries:
        for model in ("unbounded", "bounded"):
            _, secs = _timed(values=values, size=size, query=q, hamming=k, model=model)
            rows.append(
                {
                    "name": f"sensitivity: {name} {q} {model}",
                    "value": f"{secs:.4f}s",
                    "baseline": "1s",
                    "ratio": secs / 1.0,
                    "target": "< 1s",
                    "ok": secs < 1.0,
                    "detail": f"|U|={len(values)} distinct ints, n={size}, k={k}, seconds",
                }
            )
    return rows


def bench() -> list[dict[str, object]]:
    """Run every benchmark and return the rows (a few seconds: the oracle dominates)."""
    rng = random.Random(20240601)
    rows = [_scenario_a()]
    big = sorted(rng.sample(range(1, 100_000), 1000))
    rows += _large("universe1000", big, ("count", "sum", "mean"), size=500, k=3)
    small = sorted(rng.sample(range(1, 1000), 30))
    rows += _large("universe30", small, NOTEBOOK_QUERIES, size=4, k=2)
    return rows


def sensitivity_bench(quick: bool = False) -> list[dict[str, Any]]:
    """Global sensitivity: fast exact algorithms vs the brute-force oracle (docs/spec.md §4).

    The ``module:function(quick) -> rows`` entry point of ``dpref bench``; the rows are
    :func:`bench`'s (``quick`` changes nothing: the whole run takes a few seconds).
    """
    return [dict(row) for row in bench()]


if __name__ == "__main__":  # pragma: no cover
    for row in bench():
        print(row)
