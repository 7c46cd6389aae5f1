"""``dpref bench``: speed and memory targets, as ratios against baselines run in the
same process.  Benchmarks are measurements, never tests: no test asserts a time; a
missed target makes ``dpref bench`` exit 1.

A benchmark is a function ``(quick: bool) -> list[row]``, a row a dict
``{name, value, baseline, ratio, target, ok, detail}`` plus ``info: True`` for a row
that only informs (a naive alternative that wins in some regime, a number printed
beside a bound): its ``ok`` is shown but never fails the run.  Subsystems register
their benchmarks in the ``dpref.benchmarks`` entry-point group of ``pyproject.toml``; this
package names none of them.  :func:`run_bench` adds one row of its own: the peak
memory of the run (target ≤ 1 GiB), with each benchmark's peak in its detail.
"""

from __future__ import annotations

import gc
import resource
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from dpref.plugins import BENCH, ordered

__all__ = ["BENCHES", "MEMORY_TARGET", "Row", "best_of", "failed_targets", "row", "run_bench"]

Row = dict[str, Any]

MEMORY_TARGET = 1 << 30
"""Peak resident memory allowed for a whole ``dpref bench`` run (1 GiB)."""


def best_of(fn: Callable[[], object], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        gc.collect()
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def row(
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


_best_of = best_of  # the name earlier versions used


def failed_targets(rows: list[Row]) -> list[Row]:
    """The target rows that missed (informational rows never count)."""
    return [r for r in rows if not r.get("info") and not r["ok"]]


def __getattr__(name: str) -> Any:
    if name == "BENCHES":  # computed on use from the installed entry points
        return [ep.value for ep in ordered(BENCH)]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _reset_peak() -> bool:
    """Reset the kernel's resident-memory high-water mark (Linux); False if unsupported."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        return False
    return True


def _peak_bytes() -> int:
    """The resident-memory high-water mark: since the last reset where supported, else
    of the whole process."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024


def _current_bytes() -> int:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def run_bench(quick: bool = False, only: str | None = None, progress: bool = False) -> list[Row]:
    """Run every benchmark (or those whose name or ``module:function`` contains ``only``),
    then the peak-memory row."""
    rows: list[Row] = []
    peaks: list[tuple[str, int]] = []
    start_rss = _current_bytes()
    for ep in ordered(BENCH):
        if only and only not in ep.value and only not in ep.name:
            continue
        if progress:
            sys.stderr.write(f"running {ep.name} ({ep.value}) …\n")
        gc.collect()
        _reset_peak()
        rows.extend(ep.load()(quick))
        peaks.append((ep.name, _peak_bytes()))
    rows.append(_memory_row(peaks, start_rss))
    return rows


def _memory_row(peaks: list[tuple[str, int]], start_rss: int) -> Row:
    peak = max([p for _, p in peaks] + [_peak_bytes() if not peaks else 0])
    mib = 1 << 20
    return {
        "name": "peak memory of this run",
        "value": f"{peak / mib:.0f}MiB",
        "baseline": f"{start_rss / mib:.0f}MiB",
        "ratio": peak / start_rss if start_rss else float("inf"),
        "target": f"<= {MEMORY_TARGET // mib}MiB",
        "ok": peak <= MEMORY_TARGET,
        "detail": "baseline: resident memory before the first benchmark; peak per benchmark: "
        + ", ".join(f"{name} {p / mib:.0f} MiB" for name, p in peaks),
    }
