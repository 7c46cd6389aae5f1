"""The participation fields of ``dpref plan check --participations K --min-separation B``
(docs/factorization.md, "Participation"): which relation, which structure of C, the
sensitivities the noise report then uses, and the text lines; the mathematics is in
:mod:`dpref.strategy.participation`."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np

from dpref.strategy.participation import (
    MAX_EXACT_COLUMNS,
    ParticipationSensitivity,
    _dense_fractions,
    _dense_integers,
    _spread_of,
    check_participation,
    dense_participation,
    exact_coefficients,
    toeplitz_participation,
    toeplitz_spread,
)
from dpref.validation import check_fraction

__all__ = [
    "MAX_SPREAD_ENTRIES",
    "coefficient_participation",
    "participation_lines",
    "plan_participation",
    "toeplitz_first_column",
]

MAX_SPREAD_ENTRIES = 2**20
"""Largest dense C (entries) whose spread-change sensitivity ``dpref plan check`` computes."""


def toeplitz_first_column(matrix: Any, scales: Any = None) -> Any:
    """The first column of C/scales when that is a lower-triangular Toeplitz matrix (as the
    given numbers: floats stay floats), else None."""
    C = np.asarray(matrix) if isinstance(matrix, np.ndarray) else None
    rows = len(matrix)
    if rows == 0 or len(matrix[0]) != rows:
        return None
    if scales is not None and len(scales) and any(v != scales[0] for v in scales):
        return None
    if C is not None and C.dtype.kind == "f":
        for d in range(rows):
            diag = np.diagonal(C, -d) if d else np.diagonal(C)
            if np.any(diag != C[d, 0]) or (d and np.any(np.diagonal(C, d) != 0)):
                return None
        col: Any = C[:, 0].copy()
    else:
        for n in range(rows):
            for i in range(rows):
                want = matrix[n - i][0] if i <= n else 0
                if matrix[n][i] != want:
                    return None
        col = [matrix[n][0] for n in range(rows)]
    if scales is None or not len(scales) or scales[0] == 1:
        return col
    s0 = check_fraction("scales[0]", scales[0])
    return [check_fraction("C", v) / s0 for v in col]


def plan_participation(
    matrix: Any,
    scales: Any,
    *,
    participations: Any,
    min_separation: Any,
    delta: Fraction,
    exact: bool = True,
) -> dict[str, Any]:
    """The participation fields of ``dpref plan check --participations K --min-separation B``
    for C (rows divided by ``scales``), times Δ (L1) or Δ² (L2²): ``sensitivity_l1`` and
    ``sensitivity_l2_squared`` (floats rounded up), ``core`` (the pair the noise report uses:
    exact Fractions for an exact file, those floats otherwise; the caller pops it) and the
    records ``participation`` (L1, L2) and ``spread`` (L1, L2) with their labels."""
    k, b = check_participation(participations, min_separation)
    if not exact:
        matrix = np.asarray(matrix, dtype=np.float64)
        scales = None if scales is None else np.asarray(scales, dtype=np.float64)
    else:  # integers and rational strings, as Fractions
        matrix = _dense_fractions("C", matrix)
        if scales is not None:
            scales = [check_fraction(f"scales[{n}]", v) for n, v in enumerate(scales)]
    col = toeplitz_first_column(matrix, scales)
    out: dict[str, Any] = {"participations": k, "min_separation": b}
    if col is not None:
        coef = exact_coefficients("C[:, 0]", col)
        out["structure"] = "lower-triangular Toeplitz"
        l1 = toeplitz_participation(coef, participations=k, min_separation=b, norm="l1")
        l2 = toeplitz_participation(coef, participations=k, min_separation=b, norm="l2")
        spread = [toeplitz_spread(coef, norm=n) for n in ("l1", "l2")]
    else:
        out["structure"] = "dense"
        scaled = _divide_rows(matrix, scales)
        l1 = dense_participation(scaled, participations=k, min_separation=b, norm="l1")
        l2 = dense_participation(scaled, participations=k, min_separation=b, norm="l2")
        entries = len(matrix) * len(matrix[0])
        exact_ok = (
            not isinstance(scaled, np.ndarray)
            or scaled.dtype.kind != "f"
            or (scales is None or all(v == 1 for v in scales))
        )
        spread = []
        if entries <= MAX_SPREAD_ENTRIES and exact_ok:
            ints = _dense_integers("C", scaled)  # once for both norms
            spread = [_spread_of(ints, "l1"), _spread_of(ints, "l2")]
    return _fields(out, l1, l2, spread, delta, exact)


def coefficient_participation(
    coefficients: Any,
    *,
    participations: Any,
    min_separation: Any,
    delta: Fraction,
    exact: bool = True,
) -> dict[str, Any]:
    """:func:`plan_participation` for a plan given by the first column ``c_0 … c_{T−1}`` of
    its lower-triangular Toeplitz strategy (the coefficient form of ``dpref plan check``:
    floats at their exact binary value, O(kT) or O(T) work, T = 2²⁰ in seconds)."""
    k, b = check_participation(participations, min_separation)
    coef = exact_coefficients("C", coefficients)
    out: dict[str, Any] = {
        "participations": k,
        "min_separation": b,
        "structure": "lower-triangular Toeplitz",
    }
    l1 = toeplitz_participation(coef, participations=k, min_separation=b, norm="l1")
    l2 = toeplitz_participation(coef, participations=k, min_separation=b, norm="l2")
    spread = [toeplitz_spread(coef, norm=n) for n in ("l1", "l2")]
    return _fields(out, l1, l2, spread, delta, exact)


def _fields(
    out: dict[str, Any],
    l1: ParticipationSensitivity,
    l2: ParticipationSensitivity,
    spread: list[ParticipationSensitivity],
    delta: Fraction,
    exact: bool,
) -> dict[str, Any]:
    out["participation"] = {"l1": _times(l1, delta), "l2": _times(l2, delta)}
    if spread:
        out["spread"] = {r.norm: _times(r, delta) for r in spread}
    else:
        out["spread"] = f"not computed (dense C above {MAX_SPREAD_ENTRIES} entries or scaled)"
    out["sensitivity_l1"] = _float_up(l1.value * delta)
    out["sensitivity_l2_squared"] = _float_up(l2.value * delta * delta)
    out["core"] = (
        (l1.value * delta, l2.value * delta * delta)
        if exact
        else (out["sensitivity_l1"], out["sensitivity_l2_squared"])
    )
    return out


def _times(r: ParticipationSensitivity, delta: Fraction) -> dict[str, Any]:
    """:meth:`ParticipationSensitivity.as_dict` scaled by Δ (L1) or Δ² (L2²)."""
    f = delta if r.norm == "l1" else delta * delta
    d = r.as_dict()
    d["value"], d["value_float"] = str(r.value * f), _float_up(r.value * f)
    if r.lower is not None:
        d["lower"], d["lower_float"] = str(r.lower * f), float(r.lower * f)
    return d


def _float_up(value: Fraction) -> float:
    """The smallest float ≥ value."""
    f = float(value)
    return float(np.nextafter(f, np.inf)) if Fraction(f) < value else f


def _divide_rows(matrix: Any, scales: Any) -> Any:
    """C with row n divided by ``scales[n]``: exactly (Fractions) for an exact matrix or a
    small float one; a large float one rounded up in magnitude (the bounds then stay
    rigorous)."""
    if scales is None or all(v == 1 for v in scales):
        return matrix
    if isinstance(matrix, np.ndarray) and matrix.dtype.kind == "f":
        if matrix.shape[1] <= MAX_EXACT_COLUMNS:
            s = [Fraction(float(v)) for v in scales]
            return [[Fraction(float(v)) / s[n] for v in row] for n, row in enumerate(matrix)]
        q = np.abs(matrix) / np.asarray(scales, dtype=np.float64)[:, None]
        return np.nextafter(q, np.inf)
    s = [check_fraction(f"scales[{n}]", v) for n, v in enumerate(scales)]
    return [[check_fraction("C", v) / s[n] for v in row] for n, row in enumerate(matrix)]


def participation_lines(report: dict[str, Any]) -> list[str]:
    """The text lines of a ``plan check`` report's participation fields (none without)."""
    part = report.get("participation")
    if not isinstance(part, dict):
        return []
    lines = [
        f"  participation: k = {part['participations']}, b = {part['min_separation']} "
        f"({part['structure']} C); the sensitivities above are for this relation"
    ]
    for norm, r in part["participation"].items():
        what = "L1" if norm == "l1" else "L2²"
        lines.append(f"    {what} = {r['value_float']:.17g}: {r['label']}")
    if isinstance(part["spread"], dict):
        for norm, r in part["spread"].items():
            what = "L1" if norm == "l1" else "L2²"
            low = f" (≥ {r['lower_float']:.17g})" if "lower_float" in r else ""
            lines.append(f"    spread change, {what} = {r['value_float']:.17g}{low}: {r['label']}")
    return lines
