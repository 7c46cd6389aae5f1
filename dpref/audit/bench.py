"""``dpref bench`` rows for the audit: sampling speed and black-box call overhead."""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import numpy.typing as npt

from dpref.audit.isolation.targets import as_target
from dpref.audit.pure.loss import audit
from dpref.bench import best_of
from dpref.mechanisms import Binary

__all__ = ["audit_bench"]

Row = dict[str, Any]
FloatArray = npt.NDArray[np.float64]


def _tiny_target(x: np.ndarray[Any, Any], rng: np.random.Generator) -> Any:
    return x


def _laplace_batched(xs: np.ndarray[Any, Any], rng: np.random.Generator) -> Any:
    """Simple II, vectorised: the ``dpref_batched`` protocol."""
    return np.cumsum(xs + rng.laplace(0.0, 1.0, xs.shape), axis=1)


_laplace_batched.dpref_batched = True  # type: ignore[attr-defined]


def audit_bench(quick: bool = False) -> list[Row]:
    """Built-in sampling ≥ 10⁶ samples/s at T = 16; black-box overhead ≤ 20 µs per call
    (the target runs in a worker process); a vectorised black box ≥ 10⁶ samples/s."""
    T = 16
    x = np.random.default_rng(1).integers(0, 2, T).astype(np.float64)
    gen = np.random.default_rng(2)
    sampling, rate = _sampling_row(T, x, gen, 200_000 if quick else 1_000_000)
    return [
        sampling,
        _overhead_row(T, x, gen, 50_000 if quick else 200_000),
        _batched_row(T, x, gen, 200_000 if quick else 1_000_000),
        _whole_audit_row(T, rate, 100_000 if quick else 200_000),
    ]


def _sampling_row(T: int, x: FloatArray, gen: np.random.Generator, n: int) -> tuple[Row, float]:
    """Built-in sampling rate against raw Laplace draws; the row and the rate (samples/s)."""
    tgt = as_target(Binary(epsilon=1, horizon=T))
    t_sample = best_of(lambda: tgt.sample(x, n, gen), 3)
    t_raw = best_of(lambda: np.random.default_rng(3).laplace(0.0, 1.0, (n, T)), 3)
    rate = n / t_sample
    row: Row = {
        "name": f"audit: built-in sampling Binary T={T} ({n:,} samples)",
        "value": f"{rate:.3g}/s",
        "baseline": f"{n / t_raw:.3g}/s",
        "ratio": t_sample / t_raw,
        "target": ">= 1e6/s",
        "ok": rate >= 1e6,
        "detail": "release_many through the audit sampler; baseline: raw (n, T) Laplace draws",
    }
    return row, rate


def _overhead_row(T: int, x: FloatArray, gen: np.random.Generator, calls: int) -> Row:
    """Black-box sampling time per call (in the worker process) beyond a bare in-process loop."""
    view = x.copy()
    view.flags.writeable = False

    def bare() -> None:
        f = _tiny_target
        g = gen
        for _ in range(calls):
            f(view, g)

    t_bare = best_of(bare, 3)
    with as_target(_tiny_target) as bb:
        t_ours = best_of(lambda: bb.sample(x, calls, gen), 3)
    overhead_us = (t_ours - t_bare) / calls * 1e6
    return {
        "name": f"audit: black-box call overhead T={T} ({calls:,} calls)",
        "value": f"{overhead_us:.3f}us",
        "baseline": f"{t_bare / calls * 1e6:.3f}us",
        "ratio": t_ours / t_bare,
        "target": "<= 20us",
        "ok": overhead_us <= 20.0,
        "detail": "per call beyond the target's own time, the target in a forked worker "
        "(copy of the stream, output checks, framing); baseline: a bare in-process loop",
    }


def _batched_row(T: int, x: FloatArray, gen: np.random.Generator, n: int) -> Row:
    """A vectorised (``dpref_batched``) black box, end to end, against raw Laplace draws."""
    with as_target(_laplace_batched) as bb:
        t_sample = best_of(lambda: bb.sample(x, n, gen), 3)
    t_raw = best_of(lambda: np.random.default_rng(3).laplace(0.0, 1.0, (n, T)), 3)
    rate = n / t_sample
    return {
        "name": f"audit: vectorised black box T={T} ({n:,} samples)",
        "value": f"{rate:.3g}/s",
        "baseline": f"{n / t_raw:.3g}/s",
        "ratio": t_sample / t_raw,
        "target": ">= 1e6/s",
        "ok": rate >= 1e6,
        "detail": "f(streams (n, T), rng) in a forked worker, outputs framed back as float64; "
        "baseline: raw (n, T) Laplace draws in-process",
    }


def _whole_audit_row(T: int, rate: float, samples: int) -> Row:
    """A whole audit against the time its draws alone take at the built-in sampling rate."""
    t0 = time.perf_counter()
    report = audit(Binary(epsilon=1, horizon=T), horizon=T, samples=samples, seed=4, exact=False)
    t_audit = time.perf_counter() - t0
    drawn = report.selection_samples * 2 * report.pairs_screened + 2 * report.test_samples
    return {
        "name": f"audit: whole audit Binary T={T} ({samples:,} samples/side)",
        "value": f"{t_audit:.3g}s",
        "baseline": f"{drawn / rate:.3g}s",
        "ratio": t_audit / (drawn / rate),
        "target": "info",
        "ok": True,
        "detail": f"ε ≥ {report.epsilon_lower_bound:.3f}; baseline: sampling alone "
        f"(≈{drawn:,} draws over {report.pairs_screened} pairs)",
    }
