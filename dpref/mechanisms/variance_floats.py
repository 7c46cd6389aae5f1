"""Per-step variances as correctly rounded floats from a vectorised exact form.

:meth:`Mechanism.variance` returns ``float(Var(out_t))`` for t = 1..T, each the float
nearest the exact value.  Building one :class:`~fractions.Fraction` per step and converting
it costs seconds at T = 2²⁰ (``MAX_VARIANCE_STEPS``).  When the class gives
:meth:`~dpref.mechanisms.base.Mechanism.variance_counts` — ``Var(out_t) = Σ_i u_i·n_{i,t}``
with a few exact units ``u_i`` and integer counts — :func:`counts_to_floats` gives the same
floats without a per-step Fraction:

* the units are put over one denominator: ``u_i = P_i/Q`` (integers), so
  ``Var(out_t) = N_t/Q`` with the integer ``N_t = Σ_i P_i n_{i,t}``;
* when every ``N_t`` and Q are below 2⁵³ (the usual case: ε and ρ with small
  denominators), ``N_t`` is summed in int64 and divided in float64 — both operands exact,
  so the one IEEE division is correctly rounded;
* otherwise (e.g. Honaker's optimised weights, 140-bit units) the rows of counts are
  grouped so that each group's columns take few values (a mixed-radix code, at most
  :data:`_GROUP_DISTINCT`), and ``Σ_{i∈g} P_i n_{i,t}`` is tabulated once per code of
  group g, as a Python integer; with one group, each table entry ``N/Q`` is rounded once
  (CPython's ``int / int`` is correctly rounded) and spread back by index; with several,
  each entry is split into two floats (hi + lo, exact to 2⁻¹⁰⁶) and the groups are added
  in double-double arithmetic, vectorised, with the steps whose rounding is not certain
  recomputed exactly (:func:`_double_double_sum`).

Either way each float is the nearest to the exact ``N_t/Q``: the same float as
``float(variance_exact(T)[t−1])`` (``tests/test_variance_range.py`` compares both for every
registered mechanism).
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]

__all__ = ["counts_to_floats"]

_EXACT_FLOAT = 1 << 53
"""Integers below this are exact in float64."""
_MAX_DD_GROUPS = 64
"""Most row groups :func:`_double_double_sum` adds (its error bound assumes G ≤ 64)."""
_GROUP_DISTINCT = 1 << 16
"""Largest product of per-row value ranges put in one group of :func:`counts_to_floats`
(its exact table then has at most this many entries)."""


def _row_groups(n: npt.NDArray[np.int64]) -> list[list[int]]:
    """Rows grouped greedily so that each group's mixed-radix code space (the product of
    ``max − min + 1`` over its rows) stays ≤ :data:`_GROUP_DISTINCT` (a row alone may exceed it)."""
    groups: list[list[int]] = []
    size = 0
    for i in range(n.shape[0]):
        span = int(n[i].max()) - int(n[i].min()) + 1 if n.shape[1] else 1
        if groups and size * span <= _GROUP_DISTINCT:
            groups[-1].append(i)
            size *= span
        else:
            groups.append([i])
            size = span
    return groups


def _group_table(
    rows: npt.NDArray[np.int64], coefficients: list[int]
) -> tuple[list[int], npt.NDArray[np.intp]]:
    """``(table, index)``: ``Σ_i coefficients_i·rows_{i,t} = table[index[t]]`` exactly.

    One row: the table over its distinct values.  Several: ``index`` is the mixed-radix
    code of the column (row 0 most significant; the product of the spans is at most
    :data:`_GROUP_DISTINCT`) and the table lists every code, built row by row."""
    if rows.shape[0] == 1:
        values, inverse = np.unique(rows[0], return_inverse=True)
        c = coefficients[0]
        return [c * v for v in values.tolist()], inverse.reshape(-1)
    lows = rows.min(axis=1).tolist()
    spans = (rows.max(axis=1) - rows.min(axis=1) + 1).tolist()
    code = np.zeros(rows.shape[1], dtype=np.intp)
    table = [0]
    for i, span in enumerate(spans):
        code = code * span + (rows[i] - lows[i])
        steps = [coefficients[i] * (d + lows[i]) for d in range(span)]
        table = [v + w for v in table for w in steps]
    return table, code


def counts_to_floats(
    units: Fraction | tuple[Fraction, ...], counts: npt.NDArray[np.integer[Any]]
) -> FloatArray:
    """``float(Σ_i units_i·counts_{i,t})`` for every t, each correctly rounded (see the module
    docstring); ``counts`` of shape (T,) for one unit, (len(units), T) for several."""
    if isinstance(units, Fraction):
        units = (units,)
    n = np.asarray(counts).astype(np.int64, copy=False).reshape(len(units), -1)
    den = 1
    for u in units:
        den = math.lcm(den, u.denominator)
    coefficients = [u.numerator * (den // u.denominator) for u in units]
    if n.size == 0:
        return np.zeros(n.shape[1], dtype=np.float64)
    top = sum(c * int(row.max()) for c, row in zip(coefficients, n, strict=True))
    if min(coefficients) >= 0 and int(n.min()) >= 0 and top < _EXACT_FLOAT and den < _EXACT_FLOAT:
        # N_t < 2^53 and Q < 2^53 are exact in float64 and in int64 (no overflow): one IEEE
        # division of two exact operands is correctly rounded
        total = np.zeros(n.shape[1], dtype=np.int64)
        for c, row in zip(coefficients, n, strict=True):
            if c:
                total += c * row
        fast: FloatArray = total.astype(np.float64) / float(den)
        return fast
    groups = _row_groups(n)
    tables = [_group_table(n[g], [coefficients[i] for i in g]) for g in groups]
    if len(tables) == 1:
        table, index = tables[0]
        rounded = np.array([v / den for v in table], dtype=np.float64)
        out: FloatArray = rounded[index]
        return out
    if min(coefficients) >= 0 and int(n.min()) >= 0 and len(tables) <= _MAX_DD_GROUPS:
        return _double_double_sum(tables, den)
    return _exact_sum(tables, den, np.arange(n.shape[1]))


def _exact_sum(
    tables: list[tuple[list[int], npt.NDArray[np.intp]]], den: int, where: npt.NDArray[np.intp]
) -> FloatArray:
    """``float(Σ_g table_g[index_g[t]] / den)`` for the t in ``where``: integer sums, one
    correctly rounded ``int / int`` each."""
    sums = [0] * where.size
    for table, index in tables:
        sums = [v + table[i] for v, i in zip(sums, index[where].tolist(), strict=True)]
    return np.array([v / den for v in sums], dtype=np.float64)


def _hi_lo(value: int, den: int) -> tuple[float, float]:
    """``(hi, lo)``: hi the float nearest ``value/den``, lo the float nearest the rest."""
    hi = value / den
    mantissa, exponent = math.frexp(hi)
    m, e = int(mantissa * 2**53), exponent - 53  # hi = m·2^e exactly
    if e >= 0:
        return hi, (value - ((m * den) << e)) / den
    return hi, ((value << -e) - m * den) / (den << -e)


def _double_double_sum(
    tables: list[tuple[list[int], npt.NDArray[np.intp]]], den: int
) -> FloatArray:
    """The correctly rounded ``Σ_g x_g`` (``x_g = table_g[index_g[t]]/den ≥ 0``) without a
    per-step Python operation, where it is certain; exactly (:func:`_exact_sum`) elsewhere.

    Each ``x_g = hi_g + lo_g`` to 2⁻¹⁰⁶ relative (:func:`_hi_lo`, exact integers); the hi
    parts are added by error-free two-sums and the rest in float, so ``s + c`` is within
    ``δ ≤ (2G² + G)·2⁻¹⁰⁶·S`` of the exact sum S (G ≤ 64 groups: ``δ < 2⁻⁹³S``, far below
    half an ulp, ≥ 2⁻⁵⁴S).  ``r = fl(s + c)`` is then the correctly rounded S unless S may
    lie at the midpoint towards a neighbour: the offset ``d = (s − r) + c`` (``s − r`` exact,
    Sterbenz) is compared with half the gap on its side, and the steps where they are within
    2⁻³⁰ of that half are recomputed exactly (none were, on every registered mechanism)."""
    s: FloatArray | None = None
    c: FloatArray | None = None
    for table, index in tables:
        pairs = [_hi_lo(v, den) for v in table]
        hi = np.array([p[0] for p in pairs], dtype=np.float64)[index]
        lo = np.array([p[1] for p in pairs], dtype=np.float64)[index]
        if s is None or c is None:
            s, c = hi, lo
            continue
        total = s + hi  # two-sum: total + err = s + hi exactly
        back = total - s
        err = (s - (total - back)) + (hi - back)
        s, c = total, (c + err) + lo
    assert s is not None and c is not None
    out: FloatArray = s + c
    d = (s - out) + c
    gap = np.where(d > 0, np.nextafter(out, np.inf) - out, out - np.nextafter(out, -np.inf))
    unsure = np.flatnonzero(np.abs(np.abs(d) - gap / 2) <= gap * 2.0**-31)
    if unsure.size:
        out[unsure] = _exact_sum(tables, den, unsure)
    return out
