"""``dpref quantiles``: ε-DP quantiles of a stream, printed as the stream goes.

``dpref quantiles --input FILE|- --domain LO:HI[:STEP] --epsilon E --block-size N
[--subsample P] [--q 0.01,0.5,0.99] [--every K] [--clamp] [--seed S] [--json]
[--plot FILE]``

The stream (one number per line, or a ``.npy`` array) is read and every value checked
against the domain ``LO, LO+STEP, …, ≤ HI`` before any noise is drawn (``--clamp`` moves
values outside it to the nearest end; how many were moved is *not* printed: that count is
a function of the raw data, not of the noisy release, so printing it would break the
declared ε); then it is sanitized block by block (:class:`~dpref.sanitize.PrivateQuantiles`)
and the KLL sketch's quantiles are printed after every K blocks.  With ``--json`` one
object at the end: the declared ε, the history and the final answers.  ``--plot`` draws
private and true quantiles over time (matplotlib, extra ``plot``); the true ones are
computed from the input, which the command holds — the plot is for evaluation, not for
release.  A progress bar (tqdm, extra ``audit``) is shown on a terminal for inputs of
more than 10⁶ values.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt

from dpref.cli.common import pyplot_for, read_stream
from dpref.errors import ParameterError
from dpref.validation import check_fraction, check_int_range, fmt

__all__ = ["add_parser", "parse_grid", "run"]

DESCRIPTION = """\
Print ε-DP quantiles of a stream as it goes. The stream (one number per line, or a .npy
array) is read and every value checked against the domain LO, LO+STEP, ... up to HI before
any noise is drawn (--clamp moves values outside it to the nearest end; how many were moved
is not printed, since that count depends on the raw data). The stream is then sanitized
block by block and a KLL sketch's quantiles are printed after every K blocks; with --json,
one object at the end holds the declared ε, the history and the final answers. --plot
draws private and true quantiles over time (needs matplotlib); the true ones come from the
raw input, so the plot is for evaluation, not for release. On a terminal a progress bar
(needs tqdm) is shown for inputs of more than a million values."""

FloatArray = npt.NDArray[np.float64]

MAX_EVERY = 1 << 30
"""Largest ``--every``."""
PROGRESS_MIN = 10**6
"""Inputs longer than this get a progress bar (on a terminal, with tqdm installed)."""


def add_parser(subparsers: Any) -> None:
    """Add the ``quantiles`` subcommand."""
    p = subparsers.add_parser(
        "quantiles",
        help="private quantiles of a stream after every block (streaming sanitizer + KLL)",
        description=DESCRIPTION,
    )
    p.add_argument(
        "--input",
        required=True,
        help="FILE (one number per line; a blank line is an error, a line starting with # a "
        "comment), a .npy array, a CSV file with --column, or - for stdin",
    )
    p.add_argument(
        "--column",
        default=None,
        help="read this column of a CSV --input with a header row (default: one number per line)",
    )
    p.add_argument(
        "--domain", required=True, help="LO:HI[:STEP]: the points LO, LO+STEP, … ≤ HI (STEP 1)"
    )
    p.add_argument("--epsilon", required=True, help="ε₀ of each block's sanitizer (e.g. 1, 1/2)")
    p.add_argument("--block-size", required=True, type=int, help="n, records per block")
    p.add_argument(
        "--subsample",
        default="1",
        help="keep each record with probability P in (0, 1] (default %(default)s; P < 1: "
        "add/remove block sanitizers; the declared ε is for one record replaced)",
    )
    p.add_argument(
        "--q",
        default="0.01,0.5,0.99",
        help="quantiles, comma-separated, in [0, 1] (default %(default)s)",
    )
    p.add_argument("--every", type=int, default=1, help="print every K blocks (default 1)")
    p.add_argument("--clamp", action="store_true", help="clamp values outside the domain")
    p.add_argument(
        "--tree", default="binary", help="tree counter run over the domain (default binary)"
    )
    p.add_argument("--sketch-k", type=int, default=None, help="KLL's k (default 1000)")
    p.add_argument(
        "--seed", type=int, default=None, help="random seed (default: fresh randomness each run)"
    )
    p.add_argument("--plot", default=None, help="draw private and true quantiles to FILE.png")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=run)


def parse_grid(text: str) -> FloatArray:
    """``LO:HI[:STEP]`` → the points ``LO + k·STEP ≤ HI`` (at most 2²² of them)."""
    from dpref.sanitize.threshold import MAX_DOMAIN, check_domain_points

    parts = text.split(":") if isinstance(text, str) else []
    if len(parts) not in (2, 3):
        raise ParameterError(f"domain={fmt(text)}: expected LO:HI or LO:HI:STEP")
    lo = check_fraction("domain", parts[0])
    hi = check_fraction("domain", parts[1])
    step = check_fraction("domain", parts[2]) if len(parts) == 3 else Fraction(1)
    if step <= 0:
        raise ParameterError(f"domain={fmt(text)}: STEP must be > 0")
    if hi < lo:
        raise ParameterError(f"domain={fmt(text)}: HI must be >= LO")
    count = (hi - lo) // step + 1
    if count > MAX_DOMAIN:
        raise ParameterError(
            f"domain={fmt(text)}: {count} points, more than MAX_DOMAIN={MAX_DOMAIN}"
        )
    pts = float(lo) + float(step) * np.arange(int(count), dtype=np.float64)
    if not np.isfinite(pts).all():
        raise ParameterError(f"domain={fmt(text)}: points must be finite floats")
    return check_domain_points("domain", pts)


def _parse_q(text: str) -> FloatArray:
    from dpref.sanitize.quantiles import check_quantiles

    try:
        values = [float(v) for v in text.split(",")]
    except ValueError:
        raise ParameterError(f"q={fmt(text)}: comma-separated numbers expected") from None
    if not all(math.isfinite(v) for v in values):
        raise ParameterError(f"q={fmt(text)}: quantiles must be finite")
    return check_quantiles("q", values)


def _progress(total: int) -> Any:
    if total <= PROGRESS_MIN or not sys.stderr.isatty():
        return None
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm(total=total, unit="items", file=sys.stderr)


def run(args: argparse.Namespace) -> int:
    """Sanitize the stream and print quantiles every ``--every`` blocks."""
    from dpref.sanitize.quantiles import PrivateQuantiles, exact_quantiles

    points = parse_grid(args.domain)
    qs = _parse_q(args.q)
    every = check_int_range("every", args.every, 1, MAX_EVERY)
    subsample = check_fraction("subsample", args.subsample)
    seed = None if args.seed is None else check_int_range("seed", args.seed, 0, None)
    plt = pyplot_for(args.plot) if args.plot else None
    extra: dict[str, Any] = {}
    if args.sketch_k is not None:
        extra["sketch_k"] = args.sketch_k
    pq = PrivateQuantiles(
        domain=points,
        epsilon=args.epsilon,
        block_size=args.block_size,
        subsample=subsample,
        tree=args.tree,
        neighbours="add-remove" if 0 < subsample < 1 else "replace",
        clamp=args.clamp,
        rng=seed,
        **extra,
    )
    stream = read_stream(args.input, column=args.column)
    # every value checked (and clamped) before any noise: the same check extend() makes
    idx, _ = pq.sanitizer.offline.bucket("input", stream, clamp=args.clamp)
    del idx
    # the whole run is bounded like the batch form (it steps block by block, so the
    # per-call bound of extend() alone would not stop 10⁶ blocks over 2²² points)
    pq.sanitizer.check_work(int(stream.size))
    n = pq.sanitizer.block_size
    history: list[dict[str, Any]] = []
    truth: list[list[float]] = []
    errors: list[list[float]] = []
    hist = np.zeros(points.size, dtype=np.int64)
    bar = _progress(stream.size)
    for start in range(0, stream.size, n):
        chunk = stream[start : start + n]
        done = pq.extend(chunk)
        if chunk.size < n:
            done += pq.close()  # the final partial block, released once
        if bar is not None:
            bar.update(chunk.size)
        if plt is not None:
            hist += np.bincount(
                np.searchsorted(points, np.clip(chunk, points[0], points[-1]), "right") - 1,
                minlength=points.size,
            )
        if done and (pq.blocks % every == 0 or start + n >= stream.size):
            values = pq.quantiles(qs).tolist()
            history.append({"block": pq.blocks, "items": pq.items, "quantiles": values})
            if plt is not None:
                cum = np.cumsum(hist)
                ranks = np.clip(np.ceil(qs * cum[-1]), 1, None)
                truth.append(points[np.searchsorted(cum, ranks, "left")].tolist())
                at = np.searchsorted(points, np.asarray(values), "right") - 1
                upto = cum[at] / cum[-1]
                below = (cum[at] - hist[at]) / cum[-1]
                errors.append(np.maximum(np.maximum(below - qs, qs - upto), 0.0).tolist())
            if not args.json:
                cells = "  ".join(f"q{q:g}={v:.6g}" for q, v in zip(qs, values, strict=True))
                print(f"block {pq.blocks:>6}  items {pq.items:>10}  {cells}", flush=True)
    if stream.size % n == 0 and not pq._run.closed:
        pq.close()
    if bar is not None:
        bar.close()
    final = pq.quantiles(qs)
    exact = (
        exact_quantiles(np.sort(np.concatenate(pq._kept)), qs)
        if pq._kept
        else np.full(qs.size, np.nan)
    )
    if plt is not None:
        _draw(plt, args.plot, qs, history, truth, errors, pq)
    out = {
        "epsilon": str(pq.epsilon),
        "epsilon_float": pq.sanitizer.epsilon_float,
        "neighbours": pq.sanitizer.neighbours,
        "block_neighbours": pq.sanitizer.offline.neighbours,
        "block_size": n,
        "subsample": str(pq.sanitizer.subsample),
        "items": pq.items,
        "blocks": pq.blocks,
        "clamp": bool(args.clamp),
        "synthetic_points": pq.synthetic_size,
        "q": qs.tolist(),
        "quantiles": [None if math.isnan(v) else v for v in final.tolist()],
        "exact_synthetic_quantiles": [None if math.isnan(v) else v for v in exact.tolist()],
        "sketch_rank_error_99": pq.sketch_rank_error(),
        "history": history,
        "seed": args.seed,
    }
    if args.plot:
        out["plot"] = args.plot
    if args.json:
        print(json.dumps(out))
    else:
        print(f"ε = {pq.epsilon} ({pq.sanitizer.neighbours}); {pq.items} items, {pq.blocks} blocks")
        if args.clamp:
            print(
                "values outside the domain were moved to its nearest end (how many is not "
                "printed: that exact count is not private)"
            )
        if args.plot:
            print(f"plot written to {args.plot}")
    return 0


def _draw(
    plt: Any,
    path: str,
    qs: FloatArray,
    history: list[dict[str, Any]],
    truth: list[list[float]],
    errors: list[list[float]],
    pq: Any,
) -> None:
    fig = quantiles_figure(plt, qs, history, truth, errors, pq)
    try:
        fig.savefig(path, dpi=110)
    except OSError as exc:
        raise ParameterError(f"plot={path!r}: cannot write ({exc.strerror or exc})") from None
    finally:
        plt.close(fig)


def quantiles_figure(
    plt: Any,
    qs: FloatArray,
    history: list[dict[str, Any]],
    truth: list[list[float]],
    errors: list[list[float]],
    pq: Any,
) -> Any:
    """The ``--plot`` figure: private (solid) and true (dashed) quantiles over the items
    read, and the rank error below.  A history of one point (a stream of one block, or
    ``--every`` larger than the number of blocks) is drawn with markers: a line through one
    point draws nothing."""
    fig, (ax, ax2) = plt.subplots(
        2, 1, figsize=(9, 7), sharex=True, gridspec_kw={"height_ratios": [3, 2]}
    )
    items = [h["items"] for h in history]
    single = len(items) == 1
    for k, q in enumerate(qs):
        ax2.plot(items, [e[k] for e in errors], marker="o" if single else ".", label=f"q={q:g}")
    ax2.set_ylabel("rank error")
    ax2.set_xlabel("items read")
    ax2.legend(fontsize="small", ncol=len(qs))
    for k, q in enumerate(qs):
        line = ax.plot(
            items,
            [h["quantiles"][k] for h in history],
            marker="o" if single else None,
            label=f"private q={q:g}",
        )
        ax.plot(
            items,
            [t[k] for t in truth],
            linestyle="--",
            marker="x" if single else None,
            color=line[0].get_color(),
            label=f"true q={q:g}",
        )
    ax.set_ylabel("quantile")
    ax.set_title(
        f"streaming sanitizer + KLL: ε = {float(pq.epsilon):.3g}, n = {pq.sanitizer.block_size}"
        + (" (one release: markers)" if single else "")
    )
    ax.legend(fontsize="small", ncol=2)
    fig.tight_layout()
    return fig


def main(argv: list[str] | None = None) -> int:
    """Run ``dpref quantiles`` without the installed entry point (``python -m``)."""
    from dpref.cli.common import run_standalone

    return run_standalone("quantiles", add_parser, argv)


if __name__ == "__main__":
    sys.exit(main())
