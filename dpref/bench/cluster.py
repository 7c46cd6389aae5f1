"""``dpref bench`` row for audits on Dask: sharded sampling throughput, 1 → 2 worker processes.

The shards of an audit's test split (:mod:`dpref.audit.cluster`) are run on a local Dask
cluster of one worker process and then of two; the row is the time with two over the
time with one (target ≤ 1/1.8: a speed-up of at least 1.8×).  The clusters are started
and warmed up (dpref imported in every worker) before the clock starts, since a real
audit pays that once.  The merged counts of both runs are compared with the in-process
run: a row whose counts differ fails whatever its speed.  Skipped, with its reason, when
Dask is not installed.
"""

from __future__ import annotations

import subprocess
import sys
import time
from typing import Any

import numpy as np

from dpref.audit.cluster import (
    SHARD_SAMPLES,
    ClusterOptions,
    Executor,
    Sequential,
    TargetRecipe,
    count_events,
    open_executor,
    remote_count,
    shard_layout,
    shard_seed,
)
from dpref.audit.isolation.targets import as_target
from dpref.audit.pure.events import Condition, ConjunctionEvent
from dpref.mechanisms import Binary

__all__ = ["SPEEDUP_TARGET", "cluster_bench"]

Row = dict[str, Any]

SPEEDUP_TARGET = 1.8
"""Least speed-up of the sharded sampling from one to two local worker processes."""
_T = 16


def cluster_bench(quick: bool = False) -> list[Row]:
    """Sharded audit sampling on 2 local Dask worker processes ≥ 1.8× as fast as on 1."""
    try:
        import distributed  # noqa: F401
    except ImportError:
        return [
            {
                "name": "audit on Dask: skipped",
                "value": "-",
                "baseline": "-",
                "ratio": 0.0,
                "target": "info",
                "ok": False,
                "info": True,
                "detail": "Dask is not installed (pip install 'dpref[cluster]')",
            }
        ]
    shards = 8 if quick else 24
    tgt = as_target(Binary(epsilon=1, horizon=_T))
    x = np.random.default_rng(1).integers(0, 2, _T).astype(np.float64)
    events = [
        ConjunctionEvent((Condition(0, -1, True, 0.5), Condition(3, -1, False, 1.0))),
        ConjunctionEvent((Condition(15, 7, True, 0.0),)),
    ]
    root = np.random.SeedSequence(2024)
    total = shards * SHARD_SAMPLES
    tasks = [(x, shard_seed(root, 0, i), n) for i, n in enumerate(shard_layout(total))]
    shared = (TargetRecipe.of(tgt), events)

    def local(k: int) -> Any:
        stream, seed, n = tasks[k]
        return count_events(tgt, stream, events, seed, n)

    def run(ex: Executor) -> tuple[float, list[int]]:
        start = time.perf_counter()
        out = list(ex.results(local, remote_count, shared, tasks))
        elapsed = time.perf_counter() - start
        return elapsed, np.sum([s.counts for s in out], axis=0).tolist()

    seconds: dict[int, float] = {}
    cpu: dict[int, list[float]] = {}
    counts: dict[int, list[int]] = {}
    for workers in (1, 2):
        with open_executor(ClusterOptions(workers=workers)) as ex:
            warm = tasks[:workers]  # import dpref and the target in every worker process
            list(ex.results(local, remote_count, shared, warm))
            best = float("inf")
            for _ in range(2):
                before = _worker_cpu(ex)
                elapsed, counts[workers] = run(ex)
                after = _worker_cpu(ex)
                if elapsed < best:
                    best = elapsed
                    cpu[workers] = [after[w] - before[w] for w in sorted(after)]
            seconds[workers] = best
    _, in_process = run(Sequential())
    same = counts[1] == counts[2] == in_process
    ratio = seconds[2] / seconds[1]
    cpu1, cpu2 = sum(cpu[1]), sum(cpu[2])
    alone, pair = _machine_speedup(4 if quick else 12)
    return [
        {
            "name": f"audit on Dask: sharded sampling Binary T={_T}, 1 -> 2 local workers "
            f"({total:,} samples, {shards} shards)",
            "value": f"{seconds[2]:.3g}s",
            "baseline": f"{seconds[1]:.3g}s",
            "ratio": ratio,
            "target": f"<= {1 / SPEEDUP_TARGET:.3f}x (speed-up >= {SPEEDUP_TARGET:g}x)",
            "ok": ratio <= 1 / SPEEDUP_TARGET and same,
            "detail": f"speed-up {1 / ratio:.2f}x; {total / seconds[2]:.3g} samples/s on 2 "
            f"workers, {total / seconds[1]:.3g}/s on 1; merged counts "
            + ("identical on 1 and 2 workers and in-process" if same else "DIFFER")
            + "; clusters started and warmed up before timing",
        },
        {
            "name": "audit on Dask: worker CPU time of the same shards, 2 workers vs 1",
            "value": f"{cpu2:.3g}s",
            "baseline": f"{cpu1:.3g}s",
            "ratio": cpu2 / cpu1 if cpu1 > 0 else float("inf"),
            "target": "info",
            "ok": True,
            "info": True,
            "detail": "CPU seconds the workers spent (time.process_time in each worker), "
            f"split {' + '.join(f'{c:.3g}' for c in cpu[2])} on 2 workers: the work each "
            "process does, whatever else the machine runs; near 1 with an even split, the "
            "speed-up on two idle cores approaches 2",
        },
        {
            "name": "audit on Dask: this machine now, 2 plain numpy processes vs 1",
            "value": f"{pair:.3g}s",
            "baseline": f"{alone:.3g}s",
            "ratio": pair / alone,
            "target": "info",
            "ok": True,
            "info": True,
            "detail": f"the same sampling loop in 1 and in 2 processes at once, no Dask: "
            f"throughput x{2 * alone / pair:.2f} from a second process (2 on two idle cores); "
            "the speed-up above cannot exceed this",
        },
    ]


_BURN = (
    "import numpy as np\n"
    "g = np.random.default_rng(0)\n"
    "for _ in range({n}):\n"
    "    (g.laplace(0.0, 1.0, (65536, 16)).cumsum(axis=1)[:, 3] < 0.5).sum()\n"
)


def _machine_speedup(rounds: int) -> tuple[float, float]:
    """Wall time of one plain numpy process, and of two at once (the same work each): what
    this machine gives a second process right now, whatever Dask does."""
    code = _BURN.format(n=rounds)

    def run(k: int) -> float:
        start = time.perf_counter()
        procs = [subprocess.Popen([sys.executable, "-c", code]) for _ in range(k)]
        for p in procs:
            p.wait()
        return time.perf_counter() - start

    run(1)  # warm the page cache (numpy's import)
    return run(1), run(2)


def _worker_cpu(ex: Executor) -> dict[str, float]:
    """CPU seconds used so far by each worker process of a Dask executor."""
    client = getattr(ex, "client", None)
    if client is None:
        return {}
    used: dict[str, float] = client.run(time.process_time)
    return used
