"""Benchmarks of ``dpref plan check`` on coefficient plans (docs/plan-format.md): jax-style
float square-root coefficients (a float cumulative product of (2k−1)/(2k)) as a Toeplitz
JSON file with the decoder given, and with it derived, at T = 2¹⁶ (target: a few seconds)
and T = 2²⁰ (target: under a minute) — reading the file included; and the shipped 5-buffer
BLT preset given as jax-style float θ, ω at the largest T.  Baseline: one FFT product of two
length-T sequences (what a float check cannot do without), in the same run.
"""

from __future__ import annotations

import json
import tempfile
import time
from fractions import Fraction
from functools import partial
from pathlib import Path

import numpy as np

from dpref.bench import Row, best_of

__all__ = ["plan_check_bench", "plan_check_rows"]

TARGET_SECONDS = {2**14: 5.0, 2**16: 5.0, 2**20: 60.0}
"""Largest wall time of one ``plan check`` (seconds) per T."""


def _sqrt_coefficients(T: int) -> list[float]:
    k = np.arange(1, T, dtype=np.float64)
    c = np.concatenate([[1.0], np.cumprod((2 * k - 1) / (2 * k))])
    out: list[float] = c.tolist()
    return out


def plan_check_rows(quick: bool = False) -> list[Row]:
    """``check_file`` on a Toeplitz float plan at each T (decoder given, then derived)."""
    from dpref.cli.plan import check_file
    from dpref.planfile.numeric import convolve

    sizes = (2**14, 2**16) if quick else (2**16, 2**20)
    rows: list[Row] = []
    with tempfile.TemporaryDirectory() as tmp:
        for T in sizes:
            c = _sqrt_coefficients(T)
            arr = np.array(c)
            base = best_of(partial(convolve, arr, arr, T), 3)
            for given in (True, False):
                doc = {"kind": "toeplitz", "C": c, **({"B": c} if given else {})}
                path = Path(tmp) / f"sqrt-{T}-{given}.json"
                path.write_text(json.dumps(doc))
                start = time.perf_counter()
                report = check_file(str(path), rho="1/2")
                value = time.perf_counter() - start
                target = TARGET_SECONDS[T]
                rows.append(
                    {
                        "name": f"plan check toeplitz sqrt T={T:,} (decoder "
                        f"{'given' if given else 'derived'})",
                        "value": f"{value:.4g}s",
                        "baseline": f"{base:.4g}s",
                        "ratio": value / base if base > 0 else float("inf"),
                        "target": f"<= {target:g}s",
                        "ok": value <= target and report["unbiased"] is True,
                        "detail": "reading the JSON file, B·C = Q by FFT with its error bound, "
                        "exact L1/L2 sums, variance; baseline: one FFT product of length T",
                    }
                )
        T = sizes[-1]
        rows.append(_blt_row(Path(tmp), T, base))
    return rows


def _blt_row(tmp: Path, T: int, base: float) -> Row:
    """The BLT preset (floats) at T: coefficients, the derived decoder and the checks."""
    from dpref.cli.plan import check_file
    from dpref.mechanisms.factorization.blt import BLT_PRESETS

    theta, omega = BLT_PRESETS["2^20"]
    doc = {
        "kind": "blt",
        "theta": [float(Fraction(v)) for v in theta],
        "omega": [float(Fraction(v)) for v in omega],
        "horizon": T,
    }
    path = tmp / "blt.json"
    path.write_text(json.dumps(doc))
    start = time.perf_counter()
    report = check_file(str(path), rho="1/2")
    value = time.perf_counter() - start
    target = TARGET_SECONDS[T]
    return {
        "name": f"plan check blt preset (5 float buffers) T={T:,}",
        "value": f"{value:.4g}s",
        "baseline": f"{base:.4g}s",
        "ratio": value / base if base > 0 else float("inf"),
        "target": f"<= {target:g}s",
        "ok": value <= target and report["unbiased"] is True,
        "detail": f"largest variance at ρ = 1/2: {report['variance']['max']:.6g}; "
        "baseline: one FFT product of length T",
    }


def plan_check_bench(quick: bool = False) -> list[Row]:
    """The plan-check benchmarks (see the module docstring)."""
    return plan_check_rows(quick)
