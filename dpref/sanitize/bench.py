"""``dpref bench`` rows of the streaming sanitizer and private quantiles (issue 12).

On a seeded synthetic stream (a drifting mixture quantized to a domain of 2¹⁶ points),
ε = 1, blocks of n = 10⁴, Binary tree, replace-one:

* accuracy at the end: the maximum rank error of the 1, 10, 50, 90, 99 % quantiles
  (target ≤ 0.01), split into the privacy error (exact quantiles of the synthetic
  stream against the true data) and the sketch's own error (KLL's answers against the
  synthetic stream); the per-block maximum CDF error before and after projection;
* side by side, in the same run: a non-private KLL sketch of the raw stream (the cost
  of privacy) and Smith's one-shot exponential-mechanism quantile on the whole stream
  at the same total ε (ε/5 per quantile) — the price of streaming;
* throughput (target ≥ 10⁶ items/s) with the non-private KLL's as an informational
  ratio, and memory at 10⁵, 10⁶, 10⁷ items (last ≤ 1.2× first; quick mode stops at 10⁶).
"""

from __future__ import annotations

import gc
import time
import tracemalloc

import numpy as np
import numpy.typing as npt

from dpref.bench import Row, row

__all__ = ["quantiles_bench", "seeded_stream"]

FloatArray = npt.NDArray[np.float64]

DOMAIN = 1 << 16
BLOCK = 10_000
QS = np.array([0.01, 0.1, 0.5, 0.9, 0.99])
SEED = 20261122


def seeded_stream(m: int, seed: int = SEED, start: int = 0, drift_items: float = 1e7) -> FloatArray:
    """``m`` values of a drifting two-component mixture on ``0 … 2¹⁶ − 1`` (integers):
    item t is N(μ(t), σ²), σ = 2¹⁶/12, with μ moving from 0.35·2¹⁶ to 0.55·2¹⁶ over
    ``drift_items`` items, or (probability 0.2) uniform.  ``start`` offsets t, so chunks
    of one stream can be made independently (each chunk seeds from ``(seed, start)``)."""
    gen = np.random.default_rng([seed, start])
    t = np.arange(start, start + m, dtype=np.float64)
    mu = DOMAIN * (0.35 + 0.2 * np.minimum(t / drift_items, 1.0))
    x = gen.normal(mu, DOMAIN / 12)
    uniform = gen.random(m) < 0.2
    x[uniform] = gen.uniform(0, DOMAIN, int(uniform.sum()))
    out: FloatArray = np.clip(np.floor(x), 0, DOMAIN - 1)
    return out


def _rank_err(sorted_truth: FloatArray, values: FloatArray) -> float:
    from dpref.sanitize.quantiles import rank_errors

    return float(rank_errors(sorted_truth, values, QS).max())


def _accuracy(m: int) -> list[Row]:
    from datasketches import kll_doubles_sketch

    from dpref.sanitize.quantiles import DEFAULT_SKETCH_K, PrivateQuantiles, exponential_quantile

    points = np.arange(DOMAIN, dtype=np.float64)
    data = seeded_stream(m)
    pq = PrivateQuantiles(domain=points, epsilon=1, block_size=BLOCK, rng=SEED)
    cdf_err: list[float] = []
    noisy_err: list[float] = []
    for start in range(0, m, BLOCK):
        chunk = data[start : start + BLOCK]
        pq.extend(chunk)
        if chunk.size < BLOCK:
            pq.close()
        rel = pq.last_release
        truth = np.cumsum(np.bincount(chunk.astype(np.int64), minlength=DOMAIN))
        cdf_err.append(float(np.abs(rel.cdf - truth).max()) / chunk.size)
        noisy_err.append(float(np.abs(rel.noisy_cdf - truth).max()) / chunk.size)
    sorted_data = np.sort(data)
    private = pq.quantiles(QS)
    exact_syn = pq.exact_quantiles(QS)
    synthetic = np.sort(np.concatenate(pq._kept)) if pq._kept else np.zeros(0)
    total = _rank_err(sorted_data, private)
    privacy = _rank_err(sorted_data, exact_syn)
    sketch = _rank_err(synthetic, private)
    raw = kll_doubles_sketch(DEFAULT_SKETCH_K)
    raw.update(data)
    nonprivate = _rank_err(sorted_data, np.array(raw.get_quantiles(QS.tolist(), True)))
    gen = np.random.default_rng(SEED + 1)
    em = np.array([exponential_quantile(data, q, domain=points, epsilon=0.2, rng=gen) for q in QS])
    em_err = _rank_err(sorted_data, em)
    detail = (
        f"{m:,} values, D = 2^16, ε = 1 (replace), n = {BLOCK:,}, Binary, KLL k = "
        f"{DEFAULT_SKETCH_K}: max rank error {total:.4f}; privacy error (exact synthetic "
        f"quantiles) {privacy:.4f}, sketch error (KLL vs synthetic) {sketch:.4f} (the total "
        "is at most their sum); "
        f"per-q {np.round(rank_errors_all(sorted_data, private), 4).tolist()}"
    )
    return [
        row("quantiles: max rank error at the end", total, 0.01, 1.0, "", detail),
        _info(
            "quantiles: privacy error (exact synthetic)",
            privacy,
            total,
            "rank error of the synthetic stream's exact quantiles; baseline: total error",
        ),
        _info(
            "quantiles: sketch error (KLL vs synthetic)",
            sketch,
            float(pq.sketch_rank_error()),
            "KLL's answers ranked in the synthetic stream; baseline: DataSketches' 99 % bound",
        ),
        _info(
            "quantiles: per-block max CDF error",
            max(cdf_err),
            max(noisy_err),
            f"max over {len(cdf_err)} blocks of max_x |F̂(x) − F(x)|/n after projection (mean "
            f"{np.mean(cdf_err):.4f}); baseline: the noisy tree CDF before projection (mean "
            f"{np.mean(noisy_err):.4f})",
        ),
        _info(
            "quantiles: non-private KLL (cost of privacy)",
            nonprivate,
            total,
            "KLL of the raw stream, max rank error; baseline: the private pipeline's",
        ),
        _info(
            "quantiles: one-shot exponential mechanism (Smith 2011)",
            em_err,
            total,
            "whole stream in memory, ε/5 = 0.2 per quantile, max rank error; baseline: the "
            "streaming pipeline's at the same total ε",
        ),
    ]


def rank_errors_all(sorted_truth: FloatArray, values: FloatArray) -> FloatArray:
    """Per-quantile rank errors of ``values`` for :data:`QS`."""
    from dpref.sanitize.quantiles import rank_errors

    return rank_errors(sorted_truth, values, QS)


def _info(name: str, value: float, baseline: float, detail: str) -> Row:
    out = row(name, value, baseline, 1.0, "", detail)
    out["info"] = True
    out["target"] = "info"
    return out


def _throughput(m: int) -> list[Row]:
    from datasketches import kll_doubles_sketch

    from dpref.sanitize.quantiles import DEFAULT_SKETCH_K, PrivateQuantiles

    data = seeded_stream(m)
    points = np.arange(DOMAIN, dtype=np.float64)
    best = wall = float("inf")
    for _ in range(3):
        pq = PrivateQuantiles(domain=points, epsilon=1, block_size=BLOCK, rng=1)
        gc.collect()
        start, cpu = time.perf_counter(), time.process_time()
        pq.extend(data)
        pq.close()
        best = min(best, time.process_time() - cpu)
        wall = min(wall, time.perf_counter() - start)
    base = float("inf")
    for _ in range(3):
        sk = kll_doubles_sketch(DEFAULT_SKETCH_K)
        cpu = time.process_time()
        sk.update(data)
        base = min(base, time.process_time() - cpu)
    rate = m / best
    per_million = best / m * 1e6
    out = row(
        "quantiles: seconds per 10^6 items",
        per_million,
        1.0,
        1.0,
        "s",
        f"{rate:,.0f} items/s of CPU time on {m:,} values (D = 2^16, n = 10^4; best of 3; "
        f"wall {m / wall:,.0f} items/s — the CPU time is used because the machine may be "
        "shared); target ≥ 10^6 items/s, i.e. ≤ 1 s per 10^6",
    )
    info = _info(
        "quantiles: slowdown vs non-private KLL update",
        best,
        base,
        "the same values into a bare KLL sketch (CPU time), measured in this run",
    )
    info["value"], info["baseline"] = f"{best:.4g}s", f"{base:.4g}s"
    return [out, info]


def _memory(sizes: tuple[int, ...]) -> Row:
    from dpref.sanitize.quantiles import PrivateQuantiles

    points = np.arange(DOMAIN, dtype=np.float64)
    peaks: list[int] = []
    for m in sizes:
        pq = PrivateQuantiles(domain=points, epsilon=1, block_size=BLOCK, exact_limit=0, rng=2)
        gc.collect()
        tracemalloc.start()
        chunk = 10 * BLOCK
        for start in range(0, m, chunk):
            pq.extend(seeded_stream(min(chunk, m - start), start=start))
        pq.close()
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        peaks.append(peak + len(pq._sketch.serialize()))
        del pq
    return row(
        f"quantiles: memory at {sizes[-1]:,} vs {sizes[0]:,} items",
        peaks[-1],
        peaks[0],
        1.2,
        "B",
        "traced Python/numpy peak (input made in chunks of 10^5) + KLL's serialized size: "
        + ", ".join(f"{m:,}: {p / 2**20:.2f} MiB" for m, p in zip(sizes, peaks, strict=True)),
    )


def quantiles_bench(quick: bool = False) -> list[Row]:
    """The accuracy, throughput and memory rows (quick: 2·10⁵ values, memory to 10⁶)."""
    try:
        import datasketches  # noqa: F401
    except ImportError:
        return [
            {
                "name": "quantiles: skipped",
                "value": "-",
                "baseline": "-",
                "ratio": 0.0,
                "target": "info",
                "ok": False,
                "info": True,
                "detail": "datasketches is not installed (pip install 'dpref[quantiles]')",
            }
        ]
    m = 200_000 if quick else 1_000_000
    sizes: tuple[int, ...] = (10**5, 10**6) if quick else (10**5, 10**6, 10**7)
    return [*_accuracy(m), *_throughput(m), _memory(sizes)]
