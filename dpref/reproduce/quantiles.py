"""``quantiles``: private against true quantiles over time (docs/quantiles.md).

A seeded drifting stream (:func:`dpref.sanitize.bench.seeded_stream`: a two-component
mixture on ``0 … 2¹⁶ − 1`` whose mean drifts over the whole stream) goes through
:class:`dpref.sanitize.quantiles.PrivateQuantiles` (ε = 1, blocks of n = 10⁴, Binary
tree, KLL sketch); after every block the private 1/10/50/90/99 % quantiles are compared
with the true quantiles of the items read so far and their rank errors.  The true ones
come from the raw input, which this evaluation holds: they are for the figure, not for
release.  Needs datasketches (the ``quantiles`` extra).

The KLL sketch's compaction bits are not seedable (DataSketches), so the private answers
can differ between runs within the sketch's rank error; the stream, the true quantiles and
the sanitizer's noise are fixed by the seed.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dpref.reproduce.common import Context, Outcome, save_figure, write_csv

__all__ = ["run"]

EPSILON = 1
QS = (0.01, 0.1, 0.5, 0.9, 0.99)
DOMAIN = 2**16
FULL = {"items": 1_000_000, "block_size": 10_000}
QUICK = {"items": 50_000, "block_size": 10_000}
HINT = "quantiles: skipped, needs datasketches: pip install 'dpref[quantiles]'"


def run(ctx: Context) -> Outcome:
    """Stream, sanitize, compare; write ``quantiles.csv`` and ``quantiles-over-time.png``."""
    p = QUICK if ctx.quick else FULL
    out = Outcome(
        parameters={
            "epsilon": str(EPSILON),
            "items": p["items"],
            "block_size": p["block_size"],
            "domain": f"0:{DOMAIN - 1}",
            "q": list(QS),
            "stream": "dpref.sanitize.bench.seeded_stream(items, seed, drift_items=items)",
        }
    )
    try:
        import datasketches  # noqa: F401
    except ImportError:
        out.skipped = "needs datasketches (pip install 'dpref[quantiles]')"
        out.lines.append(HINT)
        return out
    from dpref.sanitize.bench import seeded_stream
    from dpref.sanitize.quantiles import PrivateQuantiles

    points = np.arange(DOMAIN, dtype=np.float64)
    qs = np.array(QS)
    stream = seeded_stream(p["items"], seed=ctx.seed, drift_items=float(p["items"]))
    pq = PrivateQuantiles(domain=points, epsilon=EPSILON, block_size=p["block_size"], rng=ctx.seed)
    n = p["block_size"]
    hist = np.zeros(DOMAIN, dtype=np.int64)
    rows: list[tuple[Any, ...]] = []
    history: list[tuple[int, list[float], list[float], list[float]]] = []
    for start in range(0, stream.size, n):
        chunk = stream[start : start + n]
        done = pq.extend(chunk)
        if chunk.size < n:
            done += pq.close()
        hist += np.bincount(chunk.astype(np.int64), minlength=DOMAIN)
        if not done:
            continue
        private = pq.quantiles(qs)
        cum = np.cumsum(hist)
        ranks = np.clip(np.ceil(qs * cum[-1]), 1, None)
        truth = points[np.searchsorted(cum, ranks, "left")]
        at = np.searchsorted(points, private, "right") - 1
        upto = cum[at] / cum[-1]
        below = (cum[at] - hist[at]) / cum[-1]
        err = np.maximum(np.maximum(below - qs, qs - upto), 0.0)
        history.append((pq.items, private.tolist(), truth.tolist(), err.tolist()))
        for k, q in enumerate(QS):
            rows.append(
                (
                    pq.blocks,
                    pq.items,
                    q,
                    float(private[k]),
                    float(truth[k]),
                    round(float(err[k]), 8),
                )
            )
    write_csv(
        ctx, "quantiles.csv", ("block", "items", "q", "private", "true", "rank_error"), rows, out
    )
    _, final_private, final_true, final_err = history[-1]
    out.headline = {
        "items": int(pq.items),
        "blocks": int(pq.blocks),
        "final_private": final_private,
        "final_true": final_true,
        "final_max_rank_error": round(max(final_err), 6),
        "max_rank_error_over_time": round(max(max(h[3]) for h in history), 6),
        "sketch_rank_error_99": pq.sketch_rank_error(),
    }
    h = out.headline
    out.lines.append(
        f"quantiles: ε = {EPSILON}, {h['items']} items in blocks of {n}, q = "
        + ", ".join(f"{q:g}" for q in QS)
    )
    out.lines.append("  true quantiles at the end:    " + ", ".join(f"{v:g}" for v in final_true))
    out.lines.append(
        "  private quantiles at the end: " + ", ".join(f"{v:g}" for v in final_private)
    )
    out.lines.append(
        f"  max rank error at the end {h['final_max_rank_error']:.4f}, over all blocks "
        f"{h['max_rank_error_over_time']:.4f} (sketch's 99 % bound {h['sketch_rank_error_99']:.4f})"
    )
    if ctx.plots:
        _figure(ctx, history, n, out)
    return out


def _figure(
    ctx: Context,
    history: list[tuple[int, list[float], list[float], list[float]]],
    block_size: int,
    out: Outcome,
) -> None:
    from dpref.reproduce.common import pyplot

    plt = pyplot()
    fig, (ax, ax2) = plt.subplots(
        2, 1, figsize=(8, 6.5), sharex=True, gridspec_kw={"height_ratios": [3, 2]}
    )
    items = [h[0] for h in history]
    for k, q in enumerate(QS):
        line = ax.plot(items, [h[1][k] for h in history], lw=1.2, label=f"private q={q:g}")
        ax.plot(
            items,
            [h[2][k] for h in history],
            ls="--",
            lw=1,
            color=line[0].get_color(),
            label=f"true q={q:g}",
        )
        ax2.plot(items, [h[3][k] for h in history], marker=".", ms=3, lw=0.8, label=f"q={q:g}")
    ax.set_ylabel("quantile")
    ax.set_title(
        f"streaming sanitizer + KLL: ε = {EPSILON}, blocks of n = {block_size}", fontsize=10
    )
    ax.legend(fontsize=7, ncol=2)
    ax2.set_ylabel("rank error")
    ax2.set_xlabel("items read")
    ax2.legend(fontsize=7, ncol=len(QS))
    fig.tight_layout()
    save_figure(ctx, fig, "quantiles-over-time.png", out)
