"""The exact algebra of the structural audit: the L1 privacy loss of a linear release.

For outputs ``y = A·x + M·ξ + c`` with ξ standard Laplace, the loss of item i (moved by
Δ) is ``ε_i = min{‖v‖₁ : M·v = Δ·A·e_i}``.  :func:`item_losses` decides by exact
rational elimination whether M's used columns are independent (then v is unique and ε_i
exact); otherwise it solves the linear programme with HiGHS and certifies the optimum in
rationals — an exactly feasible v for the upper bound, a dual vector u rescaled so that
``‖Mᵀu‖_∞ ≤ 1`` holds exactly for the lower bound (weak duality).  Every number is the
exact rational value of a float (``Fraction(float)``); :func:`stated_epsilon` gives the
readable small-denominator rational beside it.  See docs/auditing.md §9.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np
import numpy.typing as npt

from dpref.errors import ParameterError

__all__ = ["SNAP_MAX_DENOMINATOR", "SNAP_RELATIVE", "ItemLosses", "item_losses", "stated_epsilon"]

FloatArray = npt.NDArray[np.float64]

SNAP_MAX_DENOMINATOR = 1000
"""Largest denominator of the readable ε."""
SNAP_RELATIVE = Fraction(1, 10**12)
"""How close (relative) the readable ε must be to the exact value."""

Row = dict[int, Fraction]


def eliminate(
    rows: list[Row],
    ncols: int,
    *,
    stop_at_free: bool = False,
    charge: Callable[[int, Fraction, int], None] | None = None,
) -> tuple[dict[int, int], list[int]]:
    """Gauss–Jordan over ℚ on the unknown columns ``0..ncols−1`` (keys ≥ ``ncols`` are
    right-hand sides), in place.

    Returns ``column → pivot row`` and the columns without a pivot (free); with
    ``stop_at_free`` it returns at the first free column.  Afterwards a pivot row has 1 at
    its column and 0 at every other pivot column; a non-pivot row holds no unknown (any
    entry left there is an inconsistency for that right-hand side).  ``charge(entries, f,
    row_bits)`` is told the size of each row update before it is made (a work budget may
    raise there)."""
    pivot: dict[int, int] = {}
    free: list[int] = []
    done: set[int] = set()
    for j in range(ncols):
        best = -1
        for r, row in enumerate(rows):
            if r not in done and j in row and (best < 0 or len(row) < len(rows[best])):
                best = r
        if best < 0:
            free.append(j)
            if stop_at_free:
                return pivot, free
            continue
        prow = rows[best]
        p = prow[j]
        if p != 1:
            prow = {col: v / p for col, v in prow.items()}
            rows[best] = prow
        row_bits = max(rational_bits(v) for v in prow.values()) if charge is not None else 0
        for r, row in enumerate(rows):
            f = row.get(j)
            if r == best or f is None:
                continue
            if charge is not None:
                charge(len(prow), f, row_bits)
            for col, v in prow.items():
                nv = row.get(col, 0) - f * v
                if nv:
                    row[col] = nv
                else:
                    row.pop(col, None)
        done.add(best)
        pivot[j] = best
    return pivot, free


def rational_bits(q: Fraction) -> int:
    """Bits of a rational: its numerator's plus its denominator's (the size of its words)."""
    return q.numerator.bit_length() + q.denominator.bit_length()


def _gauss_jordan(rows: list[Row], ncols: int) -> dict[int, int] | None:
    """:func:`eliminate`, or None as soon as a column has no pivot (not full column rank)."""
    pivot, free = eliminate(rows, ncols, stop_at_free=True)
    return None if free else pivot


def _frac_rows(mat: FloatArray, cols: list[int]) -> list[Row]:
    return [
        {k: Fraction(float(mat[t, j])) for k, j in enumerate(cols) if mat[t, j] != 0.0}
        for t in range(mat.shape[0])
    ]


@dataclass(frozen=True)
class ItemLosses:
    """The per-item loss bounds ``L_i ≤ ε_i ≤ U_i`` (None: infinite), exact rationals."""

    upper: list[Fraction | None]
    lower: list[Fraction | None]
    method: str
    """``unique`` (M's non-zero columns independent: exact) or ``lp`` (upper bound)."""
    rank: int
    """Rank of M (exact when ``method == "unique"``)."""
    used: int
    """Non-zero columns of M (draws some output depends on)."""
    certified: bool
    """Every finite U_i comes from an exactly feasible v (else some are floats)."""
    notes: list[str] = field(default_factory=list)
    vectors: list[FloatArray | None] = field(default_factory=list)
    """The LP's v per item (on the used columns; ``lp`` only, None where there is none):
    what :func:`~dpref.audit.injected.rounding.loss_upper_bounds` perturbs."""
    duals: list[FloatArray | None] = field(default_factory=list)
    """The LP's dual u per item (length T, 0 off the rows the LP kept; ``lp`` only): a
    candidate for the rounding-proof lower bound
    (:func:`~dpref.audit.gaussian.l2loss.mu_squared_lower_bound`)."""


def item_losses(M: FloatArray, A: FloatArray, delta: Fraction) -> ItemLosses:
    """``ε_i = min{‖v‖₁ : M·v = Δ·A·e_i}`` for every item, certified in rationals."""
    T = A.shape[0]
    used = [j for j in range(M.shape[1]) if np.any(M[:, j] != 0.0)]
    k = len(used)
    rank = int(np.linalg.matrix_rank(M[:, used])) if k else 0
    if rank == k:
        rows = _frac_rows(M, used)
        for t in range(T):
            for i in range(A.shape[1]):
                if A[t, i] != 0.0:
                    rows[t][k + i] = delta * Fraction(float(A[t, i]))
        pivot = _gauss_jordan(rows, k)
        if pivot is not None:
            bad = {col - k for r, row in enumerate(rows) if r not in pivot.values() for col in row}
            upper: list[Fraction | None] = []
            for i in range(A.shape[1]):
                if i in bad:
                    upper.append(None)
                    continue
                upper.append(
                    sum(
                        (abs(rows[pivot[j]].get(k + i, Fraction(0))) for j in range(k)), Fraction(0)
                    )
                )
            return ItemLosses(upper, list(upper), "unique", k, k, True)
        rank = k - 1  # float rank said full, the exact elimination found a dependency
    return _lp_losses(M, A, delta, used, rank)


def _lp_losses(
    M: FloatArray, A: FloatArray, delta: Fraction, used: list[int], rank: int
) -> ItemLosses:
    from scipy.linalg import qr
    from scipy.optimize import linprog

    T, n_items = A.shape
    k = len(used)
    Mu = M[:, used]
    D = float(delta) * A
    notes: list[str] = []
    upper: list[Fraction | None] = []
    duals: list[FloatArray | None] = []
    certified = True
    vectors: list[FloatArray | None] = [None] * n_items
    full_duals: list[FloatArray | None] = [None] * n_items
    rows_idx = np.sort(qr(Mu.T, pivoting=True, mode="r")[1][:rank]) if k else np.zeros(0, int)
    Mi = Mu[rows_idx]
    zero_rows = [t for t in range(T) if not np.any(Mu[t] != 0.0)]
    for i in range(n_items):
        d = D[:, i]
        if not np.any(A[:, i] != 0.0):
            upper.append(Fraction(0))
            duals.append(None)
            continue
        if any(A[t, i] != 0.0 for t in zero_rows) or k == 0:
            upper.append(None)  # an output no noise reaches moves: exact certificate
            duals.append(None)
            continue
        res = linprog(
            np.ones(2 * k),
            A_eq=np.hstack([Mi, -Mi]),
            b_eq=d[rows_idx],
            bounds=(0, None),
            method="highs",
        )
        if res.status == 2:
            upper.append(None)
            duals.append(None)
            notes.append(f"item {i + 1}: infeasible by HiGHS (a floating-point decision)")
            continue
        if res.status != 0:
            raise ParameterError(f"linprog failed on item {i + 1}: {res.message}")
        v = res.x[:k] - res.x[k:]
        vectors[i] = np.asarray(v, dtype=np.float64)
        exact = _exact_primal(Mu, A[:, i], delta, v)
        if exact is None:
            certified = False
            upper.append(Fraction(float(np.abs(v).sum())))
            notes.append(f"item {i + 1}: no exactly feasible v from the LP basis; float optimum")
        else:
            upper.append(exact)
        duals.append(np.asarray(res.eqlin.marginals, dtype=np.float64))
        full = np.zeros(T)
        full[rows_idx] = duals[-1]
        full_duals[i] = full
    # a dual certificate for the items attaining the maximum; 0 (trivially valid) elsewhere
    lower: list[Fraction | None] = [None if u is None else Fraction(0) for u in upper]
    finite = [u for u in upper if u is not None]
    top = max(finite) if finite else None
    for i, u in enumerate(upper):
        dual = duals[i]
        if u is not None and u == top and dual is not None:
            lower[i] = min(u, _exact_dual_bound(Mi, A[rows_idx, i], delta, dual))
        elif u is not None and dual is None:
            lower[i] = u  # zero column of A: the loss is 0 exactly
    return ItemLosses(upper, lower, "lp", rank, k, certified, notes, vectors, full_duals)


def _exact_primal(Mu: FloatArray, a: FloatArray, delta: Fraction, v: FloatArray) -> Fraction | None:
    """``‖v‖₁`` of the exact solution on the LP's support, if it exists and is unique."""
    big = float(np.abs(v).max()) if v.size else 0.0
    support = [j for j in range(v.size) if abs(v[j]) > 1e-9 * big]
    rows = _frac_rows(Mu, support)
    s = len(support)
    for t in range(Mu.shape[0]):
        if a[t] != 0.0:
            rows[t][s] = delta * Fraction(float(a[t]))
    pivot = _gauss_jordan(rows, s)
    if pivot is None:
        return None
    if any(row for r, row in enumerate(rows) if r not in pivot.values()):
        return None
    return sum((abs(rows[pivot[j]].get(s, Fraction(0))) for j in range(s)), Fraction(0))


def _exact_dual_bound(Mi: FloatArray, a: FloatArray, delta: Fraction, u: FloatArray) -> Fraction:
    """A lower bound on the LP optimum by weak duality, exactly.

    For any u, ``uᵀ·Δa / max(1, ‖Miᵀu‖_∞)`` bounds ``min{‖v‖₁ : Mi·v = Δa}`` from below.
    Tried with u as HiGHS returned it and with u rounded to nearby small-denominator
    rationals (which often makes the bound meet the primal value exactly); the larger wins.
    """
    scale_m = _common_exponent(Mi)
    Mi_int = _to_ints(Mi, scale_m)
    raw = [Fraction(float(v)) for v in u.tolist()]
    snapped = [q.limit_denominator(10**6) for q in raw]
    best = Fraction(0)
    for cand in (raw, snapped):
        den = 1
        for q in cand:
            den = den * q.denominator // math.gcd(den, q.denominator)
        u_int = np.empty(len(cand), dtype=object)
        u_int[:] = [q.numerator * (den // q.denominator) for q in cand]
        g = Mi_int.T.dot(u_int)  # exact: Python ints
        g_max = Fraction(max((abs(int(v)) for v in g), default=0), den * 2**scale_m)
        value = sum(
            (cand[t] * delta * Fraction(float(a[t])) for t in range(a.size) if a[t] != 0.0),
            Fraction(0),
        )
        best = max(best, value / max(Fraction(1), g_max))
    return best


def _common_exponent(arr: FloatArray) -> int:
    """s with ``arr·2^s`` all integers."""
    s = 0
    for v in np.unique(arr[arr != 0.0]).tolist():
        s = max(s, Fraction(v).denominator.bit_length() - 1)
    return s


def _to_ints(arr: FloatArray, s: int) -> npt.NDArray[np.object_]:
    flat = [int(Fraction(float(v)) * 2**s) for v in arr.reshape(-1).tolist()]
    out = np.empty(arr.size, dtype=object)
    out[:] = flat
    return out.reshape(arr.shape)


def stated_epsilon(value: Fraction | None, claimed: Fraction | None) -> Fraction | None:
    """The readable ε: the claimed ε or the nearest rational with denominator ≤ 1000 when
    within 10⁻¹² (relative) of ``value``, else ``value`` itself."""
    if value is None or value == 0:
        return value
    tol = SNAP_RELATIVE * value
    if claimed is not None and abs(value - claimed) <= tol:
        return claimed
    q = value.limit_denominator(SNAP_MAX_DENOMINATOR)
    return q if abs(q - value) <= tol else value
