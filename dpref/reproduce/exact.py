"""Exact expected absolute error of a linear plan with Laplace node noise.

The error of a counting mechanism at step t is ``Σ_n r_{t,n} z_n`` with independent
``z_n ~ Lap(b_n)``: a sum of independent Laplace variables of scales ``|r_{t,n}| b_n``.
Its expected absolute value is computed here

* **in closed form** when the row's scales are all equal (Simple I, Simple II, Two-Level,
  uniform Binary): for ``n`` i.i.d. ``Lap(b)``, ``S = b(G₁ − G₂)`` with independent
  ``G₁, G₂ ~ Gamma(n, 1)``; ``(G₁ − G₂)/(G₁ + G₂)`` is ``2U − 1`` with ``U ~ Beta(n, n)``
  independent of ``G₁ + G₂ ~ Gamma(2n, 1)``, and the mean absolute deviation of
  ``Beta(n, n)`` gives ``E|S| = b · 2n·C(2n, n)/4ⁿ`` — a rational multiple of b
  (:func:`iid_laplace_abs_mean`);
* **numerically** otherwise, from the characteristic function ``φ(u) = Π_k 1/(1 + b_k²u²)``:
  ``E|X| = (2/π) ∫₀^∞ (1 − φ(u))/u² du``, integrated with mpmath's tanh-sinh quadrature at
  20 digits, split at the scales' reciprocals (:func:`laplace_sum_abs_mean`).

The scales of each row are read from the mechanism: its symbolic rows
(``row_terms(t)``: count, coefficient and scale of each node kind) when the class has them,
else its explicit plan (recombination ``R`` and node scales ``b_n``).
"""

from __future__ import annotations

from collections import Counter
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt

from dpref.errors import ParameterError
from dpref.validation import check_int_range, fmt

__all__ = [
    "expected_abs_error",
    "iid_laplace_abs_factor",
    "iid_laplace_abs_mean",
    "laplace_sum_abs_mean",
    "row_scales",
]

FloatArray = npt.NDArray[np.float64]

QUAD_DIGITS = 20
"""Working precision (decimal digits) of the characteristic-function integral."""


def iid_laplace_abs_mean(n: int, b: Fraction) -> Fraction:
    """``E|Σ_{k≤n} z_k|`` for ``n`` i.i.d. ``z_k ~ Lap(b)``, exactly: ``b·2n·C(2n,n)/4ⁿ``
    (0 for n = 0)."""
    from math import comb

    count = check_int_range("n", n, 0, None)
    if count == 0:
        return Fraction(0)
    return Fraction(b) * Fraction(2 * count * comb(2 * count, count), 4**count)


def iid_laplace_abs_factor(n: npt.ArrayLike) -> FloatArray:
    """``2n·C(2n,n)/4ⁿ`` as floats for an array of counts ``n ≥ 0`` (log-gamma form,
    relative error ~1e−13): multiply by b for ``E|Σ_{k≤n} Lap(b)|``."""
    from scipy.special import gammaln

    counts = np.asarray(n, dtype=np.float64)
    if counts.size and (counts.min() < 0 or not np.all(counts == np.floor(counts))):
        raise ParameterError(f"n={fmt(n)}: counts must be integers >= 0")
    safe = np.maximum(counts, 1.0)
    log_a = (
        np.log(2.0 * safe)
        + gammaln(2.0 * safe + 1.0)
        - 2.0 * gammaln(safe + 1.0)
        - safe * np.log(4.0)
    )
    out: FloatArray = np.where(counts == 0, 0.0, np.exp(log_a))
    return out


def laplace_sum_abs_mean(scales: dict[Fraction, int]) -> float:
    """``E|X|`` for ``X`` a sum of independent Laplace variables: ``scales`` maps a scale
    ``b > 0`` to how many of them have it.

    One distinct scale: the closed form.  Several: ``(2/π)∫₀^∞ (1 − φ(u))/u² du`` with
    ``φ(u) = Π 1/(1 + b²u²)^count``, by mpmath quadrature (``QUAD_DIGITS`` digits).
    """
    items = [(Fraction(b), int(c)) for b, c in scales.items() if c]
    if any(b <= 0 for b, _ in items) or any(c < 0 for _, c in scales.items()):
        raise ParameterError(f"scales={fmt(scales)}: scales must be > 0 and counts >= 0")
    if not items:
        return 0.0
    if len(items) == 1:
        ((b, c),) = items
        return float(iid_laplace_abs_mean(c, b))
    from dpref.rigorous import mp_context

    ctx = mp_context(QUAD_DIGITS)
    bs = [(ctx.mpf(b.numerator) / b.denominator, c) for b, c in items]

    def integrand(u: Any) -> Any:
        if u == 0:
            return sum(c * b**2 for b, c in bs)  # the limit (1 − φ(u))/u² → Σ b²
        phi = ctx.mpf(1)
        for b, c in bs:
            phi /= (1 + (b * u) ** 2) ** c
        return (1 - phi) / u**2

    cuts = sorted({1 / b for b, _ in bs})
    value = ctx.quad(integrand, [0, *cuts, ctx.inf])
    return float(2 * value / ctx.pi)


def row_scales(mechanism: Any, horizon: int) -> list[dict[Fraction, int]]:
    """For t = 1..T, the Laplace scales ``|r_{t,n}|·b_n`` of the noise in the output at t,
    as ``{scale: count}``.

    From the class's symbolic rows ``row_terms(t)`` when it has them, else from the explicit
    plan (``plan(T)``: recombination and node scales).  Laplace noise only.
    """
    T = check_int_range("horizon", horizon, 1, None)
    if mechanism.rho is not None or mechanism.noise != "laplace":
        raise ParameterError(
            f"mechanism={mechanism!r}: the exact absolute error is for Laplace noise only"
        )
    rows: list[dict[Fraction, int]] = []
    if hasattr(mechanism, "row_terms"):
        for t in range(1, T + 1):
            counter: Counter[Fraction] = Counter()
            for term in mechanism.row_terms(t, horizon=T):
                count = int(term.count)
                if count:
                    counter[abs(Fraction(term.coefficient)) * Fraction(term.scale)] += count
            rows.append(dict(counter))
        return rows
    plan = mechanism.plan(T)
    R = plan.recombination
    for t in range(T):
        counter = Counter()
        for k in range(int(R.indptr[t]), int(R.indptr[t + 1])):
            n = int(R.indices[k])
            w = plan.weight_table[int(plan.weight_idx[n])]
            r = R.table[int(R.idx[k])]
            if r:
                counter[abs(r * w) * plan.scale_table[int(plan.scale_idx[n])]] += 1
        rows.append(dict(counter))
    return rows


def expected_abs_error(mechanism: Any, horizon: int) -> FloatArray:
    """``E|out_t − c_t|`` for t = 1..T: closed form where a row's scales are equal (all
    rows sharing one scale are evaluated in one vectorised call), quadrature otherwise."""
    rows = row_scales(mechanism, horizon)
    out = np.zeros(len(rows), dtype=np.float64)
    single: dict[Fraction, list[tuple[int, int]]] = {}
    for i, row in enumerate(rows):
        if len(row) == 1:
            ((b, c),) = row.items()
            single.setdefault(b, []).append((i, c))
        elif row:
            out[i] = laplace_sum_abs_mean(row)
    for b, pairs in single.items():
        idx = np.array([i for i, _ in pairs], dtype=np.int64)
        counts = np.array([c for _, c in pairs], dtype=np.float64)
        out[idx] = float(b) * iid_laplace_abs_factor(counts)
    return out
