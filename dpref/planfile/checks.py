"""The checks of a plan file: is ``B·C`` the target, is B causal, the L1 and L2 column
sensitivities, the per-step variance.  Dense plans: exact (modular) or float matrix
products; Toeplitz and BLT plans: O(T log T) — an exact integer convolution for small
exact plans, else an FFT convolution with an a-priori error bound whose undecided entries
are recomputed exactly (:mod:`dpref.planfile.numeric`).

Every function returns a *core*: ``{"l1", "l2", "l1_upper", "l2_upper", "var", "exact",
"report"}`` — the sensitivities (exact Fractions, or floats with a rigorous upper bound
beside them), the variance summary per unit node variance (``max``, ``argmax_t``,
``mean``) and the structural report (``unbiased``, ``causal``, the largest error …).  A
product that is not the target is ``"unbiased": False`` with the first mismatch, not an
error: the sensitivities and the variance are still reported.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np

from dpref.errors import ParameterError
from dpref.planfile.model import PlanFile
from dpref.planfile.numeric import (
    UNIT_ROUNDOFF,
    abs_sum_bounds,
    convolution_error_bound,
    convolve,
    exact_dot,
    square_sum_bounds,
    target_array,
    weighted_square_mean,
)

MAX_RECHECK = 64
"""Most entries of ``b ∗ c`` the FFT bound leaves undecided that are recomputed exactly (each
O(T)); beyond, unbiasedness is reported as not established."""


def target_name(window: int | None) -> str:
    """``prefix sums`` or ``windows of W``."""
    return "prefix sums" if window is None else f"windows of {window}"


def unit_roundoff(plan: PlanFile) -> float:
    """The unit roundoff of the plan's precision (float64's for an exact plan checked in
    float because it is large: its entries are rounded to float64)."""
    return UNIT_ROUNDOFF.get(plan.precision, UNIT_ROUNDOFF["float64"])


def _structure(plan: PlanFile, window: int | None, nodes: int, in_order: bool) -> dict[str, Any]:
    return {
        "kind": plan.kind,
        "nodes": nodes,
        "horizon": plan.horizon,
        "target": target_name(window),
        "unbiased": True,
        "causal": True,
        "canonical_order_is_row_order": in_order,
        "decoder": "given" if plan.has_decoder else "derived",
    }


def _mismatch(t: int, i: int, got: Fraction, want: Fraction) -> dict[str, Any]:
    """The first entry (1-indexed output t, item i) where an exact B·C misses the target:
    exact strings when short, else floats."""
    short = max(got.numerator.bit_length(), got.denominator.bit_length()) <= 4000
    return {"t": t, "i": i, "got": str(got) if short else float(got), "want": str(want)}


# ------------------------------------------------------------------ Toeplitz
def toeplitz_core(plan: PlanFile, window: int | None, tol: float) -> dict[str, Any]:
    """The checks of a Toeplitz or BLT plan (causal by form: C and B lower triangular)."""
    if plan.exact_columns(window):
        return _toeplitz_exact(plan, window)
    return _toeplitz_float(plan, window, tol)


def _over_common(values: list[Fraction]) -> tuple[list[int], int]:
    d = 1
    for v in values:
        d = math.lcm(d, v.denominator)
    return [v.numerator * (d // v.denominator) for v in values], d


def _toeplitz_exact(plan: PlanFile, window: int | None) -> dict[str, Any]:
    from dpref.strategy import convolution_mismatch

    T = plan.horizon
    c = plan.strategy_column(True)
    try:
        b = plan.decoder_column(window, True)
    except ParameterError:
        if plan.has_decoder:
            raise
        b = [Fraction(0)] * T  # c₀ = 0: no decoder exists; reported as not unbiased below
    nc, dc = _over_common(c)
    nb, db = _over_common(b)
    q = [1 if window is None or k < window else 0 for k in range(T)]
    report = _structure(plan, window, T, True)
    found = convolution_mismatch(nc, nb, [v * dc * db for v in q])
    if found is not None:
        k, value = found
        report["unbiased"] = False
        report["mismatch"] = _mismatch(k + 1, 1, Fraction(value, dc * db), Fraction(q[k]))
    l1 = Fraction(sum(abs(v) for v in nc), dc)
    l2 = Fraction(sum(v * v for v in nc), dc * dc)
    sq = [v * v for v in nb]
    last = max((k for k in range(T) if nb[k]), default=0)
    var = {
        "max": Fraction(sum(sq), db * db),
        "argmax_t": last + 1,
        "mean": Fraction(sum((T - k) * s for k, s in enumerate(sq)), db * db * T),
    }
    return _exact_core(l1, l2, var, report)


def _toeplitz_float(plan: PlanFile, window: int | None, tol: float) -> dict[str, Any]:
    T = plan.horizon
    u = unit_roundoff(plan)
    c = plan.strategy_column(False)
    try:
        b = plan.decoder_column(window, False)
    except ParameterError:
        if plan.has_decoder:
            raise
        b = np.zeros(T)  # c₀ = 0: no decoder exists; reported as not unbiased below
    report = _structure(plan, window, T, True)
    q = target_array(T, window)
    z = convolve(b, c, T)
    resid = z - q
    bound = convolution_error_bound(b, c, T) + 2 * UNIT_ROUNDOFF["float64"] * (
        float(np.abs(z).max()) + 1.0
    )
    allowance = (2 * u + u * u) * float(np.linalg.norm(b)) * float(np.linalg.norm(c)) * (1 + 1e-12)
    limit = tol + allowance
    mag = np.abs(resid)
    fails = np.flatnonzero(mag - bound > limit)
    undecided = np.flatnonzero((mag + bound > limit) & (mag - bound <= limit))
    report["max_abs_error"] = float(mag.max())
    report["error_bound"] = bound
    report["precision_allowance"] = allowance
    unresolved = 0
    if undecided.size:
        order = undecided[np.argsort(-mag[undecided], kind="stable")]
        exact_fail = []
        for k in order[:MAX_RECHECK].tolist():
            if abs(_entry(b, c, q, k)) > limit:
                exact_fail.append(k)
        unresolved = max(0, undecided.size - MAX_RECHECK)
        fails = np.union1d(fails, np.array(exact_fail, dtype=np.int64))
    if fails.size:
        k = int(fails.min())
        report["unbiased"] = False
        report["mismatch"] = {
            "t": k + 1,
            "i": 1,
            "got": _entry(b, c, q, k) + float(q[k]),
            "want": float(q[k]),
        }
    elif unresolved:
        report["unbiased"] = None
        report["unresolved_entries"] = int(unresolved)
    l1, l1_up = abs_sum_bounds(c)
    l2, l2_up = square_sum_bounds(c)
    if plan.kind == "blt":
        l1_up, l2_up = _blt_margins(plan, c, l1_up, l2_up)
    nz = np.flatnonzero(b)
    var_max, _ = square_sum_bounds(b)
    var = {
        "max": var_max,
        "argmax_t": int(nz[-1]) + 1 if nz.size else 1,
        "mean": weighted_square_mean(b),
    }
    return {
        "l1": l1,
        "l2": l2,
        "l1_upper": l1_up,
        "l2_upper": l2_up,
        "var": var,
        "exact": False,
        "report": report,
    }


def _entry(b: Any, c: Any, q: Any, k: int) -> float:
    """``(b ∗ c)_k − q_k`` exactly, rounded once."""
    return exact_dot(b[: k + 1], c[k::-1], -float(q[k]))


def _blt_margins(plan: PlanFile, c: Any, l1_up: float, l2_up: float) -> tuple[float, float]:
    """Widen the sums of a BLT's computed coefficients by their evaluation error: each
    ``c_k = Σ_i ω_i θ_i^{k−1}`` is within ``(d + 3)u·Σ_i |ω_i||θ_i|^{k−1}`` of the exact value
    (``pow`` within an ulp, d products and d sums)."""
    T = plan.horizon
    th = np.abs(np.asarray(plan.theta, dtype=np.float64))
    om = np.abs(np.asarray(plan.omega, dtype=np.float64))
    k = np.arange(max(T - 1, 0), dtype=np.float64)
    mag = np.zeros(T)
    for t, w in zip(th.tolist(), om.tolist(), strict=True):
        mag[1:] += w * np.power(t, k)
    d = th.size
    rel = (d + 3) * UNIT_ROUNDOFF["float64"] * 1.01
    err = rel * mag
    e1 = float(err.sum())
    e2 = float((2 * np.abs(c) * err + err * err).sum())
    return (
        float(np.nextafter(l1_up + e1 * 1.01, np.inf)),
        float(np.nextafter(l2_up + e2 * 1.01, np.inf)),
    )


# ------------------------------------------------------------------ dense
def dense_core(plan: PlanFile, window: int | None, tol: float) -> dict[str, Any]:
    """The checks of a dense plan (a non-causal decoder raises: the file is malformed)."""
    if plan.exact:
        return _dense_exact(plan, window)
    return _dense_float(plan, window, tol)


def _error(message: str) -> ParameterError:
    return ParameterError(message)


def _release_exact(C: list[list[Fraction]]) -> list[int]:
    out = []
    for row in C:
        last = 0
        for i in range(len(row) - 1, -1, -1):
            if row[i] != 0:
                last = i
                break
        out.append(last + 1)
    return out


def _causal(B: Any, release: list[int], nonzero: Any, note: str = "") -> None:
    for t, row in enumerate(B, 1):
        for n, v in enumerate(row):
            if release[n] > t and nonzero(v):
                raise _error(
                    f"B[{t - 1}][{n}]={v}: output t={t} uses row {n} of C, released at "
                    f"t={release[n]} (B is not causal{note})"
                )


def _in_order(release: list[int]) -> bool:
    order = sorted(range(len(release)), key=lambda n: (release[n], n))
    return order == list(range(len(release)))


def _dense_exact(plan: PlanFile, window: int | None) -> dict[str, Any]:
    from dpref.strategy import dense_mismatch

    C, B = plan.C, plan.B
    nodes, horizon = len(C), len(C[0])
    s = plan.scales or [Fraction(1)] * nodes
    release = _release_exact(C)
    _causal(B, release, lambda v: v != 0)
    report = _structure(plan, window, nodes, _in_order(release))
    found = dense_mismatch(B, C, window)
    if found is not None:
        t, i, got, want = found
        report["unbiased"] = False
        report["mismatch"] = _mismatch(t, i, got, want)
    l1 = max(sum((abs(C[n][i]) / s[n] for n in range(nodes)), Fraction(0)) for i in range(horizon))
    l2 = max(
        sum((C[n][i] ** 2 / s[n] ** 2 for n in range(nodes)), Fraction(0)) for i in range(horizon)
    )
    var_unit = [
        sum((B[t][n] ** 2 * s[n] ** 2 for n in range(nodes)), Fraction(0)) for t in range(horizon)
    ]
    best = max(range(horizon), key=lambda t: var_unit[t])
    var = {
        "max": var_unit[best],
        "argmax_t": best + 1,
        "mean": sum(var_unit, Fraction(0)) / horizon,
    }
    return _exact_core(l1, l2, var, report)


_BLOCK_ROWS = 256
"""Rows of B multiplied at a time (bounds the memory of the product at T = 4096)."""


def _dense_float(plan: PlanFile, window: int | None, tol: float) -> dict[str, Any]:
    u = unit_roundoff(plan)
    C, B = plan.C, plan.B
    nodes, horizon = C.shape
    s = np.ones(nodes) if plan.scales is None else plan.scales
    big = np.abs(C) > tol
    release = [int(np.flatnonzero(big[n])[-1]) + 1 if big[n].any() else 1 for n in range(nodes)]
    rel = np.array(release)
    for start in range(0, horizon, _BLOCK_ROWS):
        t_idx = np.arange(start + 1, min(horizon, start + _BLOCK_ROWS) + 1)[:, None]
        noncausal = (np.abs(B[start : start + _BLOCK_ROWS]) > tol) & (rel[None, :] > t_idx)
        if noncausal.any():
            t, n = (int(v) for v in np.argwhere(noncausal)[0])
            t += start
            raise _error(
                f"B[{t}][{n}]={float(B[t, n])!r}: output t={t + 1} uses row {n} of C, released "
                f"at t={release[n]} (B is not causal; |entries| <= {tol:g} count as zero)"
            )
    report = _structure(plan, window, nodes, _in_order(release))
    # each entry of B·C: Σ_n B_tn C_ni, computed with error ≤ γ_nodes Σ|B_tn||C_ni| ≤
    # γ_nodes‖B_t‖₂‖C_i‖₂, and the plan's own rounding to its precision moves it by ≤
    # (2u + u²)‖B_t‖₂‖C_i‖₂: both are allowed beside the tolerance
    u64 = UNIT_ROUNDOFF["float64"]
    gamma = nodes * u64 / (1 - nodes * u64)
    row_norm = np.linalg.norm(B, axis=1)
    col_norm = np.linalg.norm(C, axis=0)
    w = horizon if window is None else window
    worst, first = 0.0, None
    for start in range(0, horizon, _BLOCK_ROWS):
        stop = min(horizon, start + _BLOCK_ROWS)
        prod = B[start:stop] @ C
        t_idx = np.arange(start + 1, stop + 1)[:, None]
        i_idx = np.arange(1, horizon + 1)[None, :]
        q = ((i_idx <= t_idx) & (i_idx > t_idx - w)).astype(np.float64)
        err = np.abs(prod - q)
        worst = max(worst, float(err.max()))
        slack = (gamma + 2 * u + u * u) * 1.01 * row_norm[start:stop, None] * col_norm[None, :]
        bad = err > tol + slack
        if first is None and bad.any():
            t, i = (int(v) for v in np.argwhere(bad)[0])
            first = {
                "t": start + t + 1,
                "i": i + 1,
                "got": float(prod[t, i]),
                "want": float(q[t, i]),
            }
    report["max_abs_error"] = worst
    if first is not None:
        report["unbiased"] = False
        report["mismatch"] = first
    l1_cols = np.sum(np.abs(C) / s[:, None], axis=0)
    l2_cols = np.sum(C**2 / s[:, None] ** 2, axis=0)
    l1, l2 = float(l1_cols.max()), float(l2_cols.max())
    grow = 1 + (nodes + 8) * u64
    var_unit = (B**2) @ (s**2)
    best = int(np.argmax(var_unit))
    var = {
        "max": float(var_unit[best]),
        "argmax_t": best + 1,
        "mean": math.fsum(var_unit.tolist()) / horizon,
    }
    return {
        "l1": l1,
        "l2": l2,
        "l1_upper": float(np.nextafter(l1 * grow, np.inf)),
        "l2_upper": float(np.nextafter(l2 * grow, np.inf)),
        "var": var,
        "exact": False,
        "report": report,
    }


def _exact_core(
    l1: Fraction, l2: Fraction, var: dict[str, Any], report: dict[str, Any]
) -> dict[str, Any]:
    """The core of an exactly checked plan: its exact sensitivities are their own upper
    bounds."""
    return {
        "l1": l1,
        "l2": l2,
        "l1_upper": l1,
        "l2_upper": l2,
        "var": var,
        "exact": True,
        "report": report,
    }
