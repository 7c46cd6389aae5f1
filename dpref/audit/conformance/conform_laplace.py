"""The noise-law (structure) test of ``dpref conform`` for a Laplace reference whose R,
restricted to its used nodes, is not invertible (Honaker's T × (2T − 1) release, the
smooth binary mechanism): issue 25, item 5.

The reference releases ``y = R·(A·x + z)`` with independent node noise ``z_n = b_n·L_n``,
``L_n ~ Lap(1)``.  With more used nodes (m) than outputs (T) the node noise cannot be
recovered, but its projection onto R's row space can: ``ẑ = R⁺·(y − R·A·x) = P·z`` with
``P = R⁺R`` (m × m, R of full row rank T).  Each ``ẑ_n = Σ_k P_nk·b_k·L_k`` is a known
combination of independent Laplace variables, so its law is known exactly — its
characteristic function is ``φ_n(s) = Π_k 1/(1 + (P_nk·b_k·s)²)`` — and a node whose row
of P is ``e_n`` (Honaker's leaves at odd t) is *identified*: ``ẑ_n = z_n`` exactly.

**Null hypothesis** (as for the Gaussian path's whitened residuals, one group): the
target's node noise is the reference's up to one common ratio r > 0, ``z_n = r·b_n·L_n``.
A smaller but well-formed noise (r < 1) keeps the structure, so its privacy shortfall is
judged by the scale and variance checks; the structure test holds its rate for every r.

* **identified nodes** (when there are any): ``u = ẑ_n/b_n`` are i.i.d. ``Lap(r)``:
  Kolmogorov–Smirnov of ``u/r̂`` against ``Lap(1)`` and the exact pairwise sign test of
  independence — the tests of the invertible path (:func:`_noise_law`) — at ``a/3``;
  and, at ``a/3``, the exact interval for r: ``|u| ~ Exp(r)``, so ``Σ|u|`` is Gamma
  (:func:`exponential_scale_interval`).  Without identified nodes r ranges over (0, ∞)
  and the next test has all of ``a``.
* **every recovered node's law** (the rest of ``a``): at frequencies ``s = f/sd_n``
  (f in :data:`FREQUENCIES`; ``sd_n`` the reference's standard deviation of ``ẑ_n``)
  the mean over the N runs of ``cos(s·ẑ_n)`` — bounded, i.i.d. over runs, mean
  ``φ_n(r·s)`` and variance ``(1 + φ_n(2r·s))/2 − φ_n(r·s)²`` — is compared with its
  exact mean by Bernstein's inequality ``P(|mean − φ| ≥ t) ≤ 2·exp(−N·t²/(2v + 4t/3))``
  (terms within 2 of their mean), Bonferroni over the 2m statistics.  r is unknown: the
  p-value is the supremum over r in its range of that Bonferroni p-value (the target
  conforms to *some* common ratio), bounded from above on a cover of the range by cells,
  refined where the bound reaches the level (:func:`_cf_test`).  At the true r the
  Bonferroni p-value is valid, and the supremum is at least it.

Every bound is non-asymptotic, so the false-alarm rate of the check is at most ``a`` for
every N: ``a/3`` (identified nodes' law) + ``a/3`` (r outside its interval) + ``a/3`` (a
characteristic function beyond its bound at the true r).

This catches Gaussian node noise of the reference's variance (the identified nodes' KS,
and each node's characteristic function: ``e^{−s²σ²/2}`` against Laplace's heavier
centre) and a single node whose scale is off (its own characteristic function), where a
per-step variance test sees a small change spread over many steps.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np
import numpy.typing as npt
import scipy.linalg as sla

from dpref.audit.conformance.conform_checks import (
    Check,
    _fit_scales,
    _levels,
    _noise_law,
    _variance_scale,
)
from dpref.audit.pure.events import used_nodes
from dpref.audit.stats import exponential_scale_interval
from dpref.plan import LinearPlan

__all__ = ["FREQUENCIES", "MAX_PROJECTION_HORIZON", "laplace_structure", "projected_checks"]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

MAX_PROJECTION_HORIZON = 2048
"""Largest T for which the projection ``R⁺R`` is computed (a dense SVD of T × m)."""
FREQUENCIES = (1.0, 2.0)
"""The frequencies, in units of ``1/sd_n``, at which each node's characteristic
function is tested."""
_CELL = 1.01
"""Largest ratio of a cell's ends in the refined cover of r's range (:func:`_cf_test`)."""
_IDENTIFIED = 1e-9
"""A row of P within this of ``e_n`` (max-norm) identifies node n."""


@dataclass(frozen=True, eq=False)
class _Projection:
    """The recovered node noise ``ẑ = P·z`` and the exact coefficients of its law."""

    nodes: IntArray
    """The used nodes (columns of R), in plan order."""
    pinv: FloatArray
    """``R⁺`` (m × T)."""
    coef: FloatArray
    """``C_nk = P_nk·b_k`` (m × m): ``ẑ_n = Σ_k C_nk·L_k`` under the reference."""
    identified: npt.NDArray[np.bool_]
    """Nodes whose row of P is ``e_n``."""


def _projection(plan: LinearPlan) -> _Projection | None:
    """``R⁺`` and ``P·diag(b)`` on the used nodes, or None (T too large, or R of rank < T)."""
    T = plan.horizon
    if T > MAX_PROJECTION_HORIZON:
        return None
    nodes = used_nodes(plan)
    if nodes.size < T:
        return None
    Ru = plan.R()[:, nodes].toarray()  # dense: Honaker's rows are (a sparse product is slower)
    try:  # R·Rᵀ = L·Lᵀ (T × T, positive definite exactly when R has full row rank)
        L = np.linalg.cholesky(Ru @ Ru.T)
    except np.linalg.LinAlgError:
        return None
    d = np.diag(L)
    if not d.min() > d.max() * math.sqrt(max(Ru.shape) * np.finfo(np.float64).eps):
        return None
    W = sla.solve_triangular(L, Ru, lower=True)  # L⁻¹R: orthonormal rows spanning R's rows
    pinv = sla.solve_triangular(L, W, lower=True, trans="T").T  # R⁺ = Rᵀ(RRᵀ)⁻¹
    P = W.T @ W
    eye = np.eye(nodes.size)
    identified = np.max(np.abs(P - eye), axis=1) <= _IDENTIFIED
    b = np.asarray(plan.scales, dtype=np.float64)[nodes]
    return _Projection(nodes, pinv, P * b[None, :], identified)


def projected_checks(
    Y: FloatArray, x: FloatArray, plan: LinearPlan, ref_var: FloatArray, a: float
) -> tuple[Check, Check, dict[str, float]] | None:
    """The noise-law check (:func:`laplace_structure`) and the scale from per-step
    variances, for a Laplace reference whose R is not invertible on its used nodes; None
    when the projection cannot be formed.  No ε is implied: the per-level scales are not
    recovered (only the common ratio of the null hypothesis)."""
    law = laplace_structure(Y, x, plan, a)
    if law is None:
        return None
    scale, ratio = _variance_scale(Y, ref_var, a)
    detail = scale.detail.replace(
        "node noise not recoverable: structure untested", "node noise recovered only as R⁺R·z"
    )
    return law, replace(scale, detail=detail), ratio


def laplace_structure(Y: FloatArray, x: FloatArray, plan: LinearPlan, a: float) -> Check | None:
    """The noise-law check of a Laplace reference through the projection (module doc);
    None when it cannot be formed (T above :data:`MAX_PROJECTION_HORIZON`, or R of rank
    below T)."""
    proj = _projection(plan)
    if proj is None:
        return None
    N = Y.shape[0]
    E = Y - plan.R() @ plan.node_values(x)
    if not np.isfinite(E).all():
        return Check("noise-law", False, None, 0.0, None, a, "the outputs are not finite")
    Z = E @ proj.pinv.T  # (N, m): ẑ for each run
    if not np.any(Z):
        detail = "the recovered node noise is exactly 0 in every run"
        return Check("noise-law", False, None, 0.0, None, a, detail)
    ident = np.flatnonzero(proj.identified)
    parts: list[str] = []
    if ident.size:
        a_part = a / 3
        b = np.asarray(plan.scales, dtype=np.float64)[proj.nodes]
        U = Z[:, ident] / b[ident]
        group, labels = _levels(plan, proj.nodes[ident])
        fit = _fit_scales(np.abs(U), group, len(labels), a_part)
        law = _noise_law(U, group, labels, fit, a_part)
        if law.passed is None or law.p_value is None:
            return Check("noise-law", law.passed, None, law.p_value, None, a, law.detail)
        p_id = law.p_value
        parts.append(f"{ident.size} of {proj.nodes.size} nodes identified exactly: {law.detail}")
        r_lo, r_hi = exponential_scale_interval(float(np.abs(U).sum()), int(U.size), a_part)
        how = f"r in [{r_lo:.4g}, {r_hi:.4g}], the Gamma interval of the identified nodes"
    else:
        a_part, p_id = a, 1.0
        r_lo, r_hi = 0.0, math.inf
        how = "r > 0"
    cf = _cf_test(Z, proj.coef, r_lo, r_hi, a_part)
    node = int(proj.nodes[cf.node])
    parts.append(
        f"characteristic function of all {proj.nodes.size} recovered nodes at "
        f"s·sd = {', '.join(f'{f:g}' for f in FREQUENCIES)} against the exact law of "
        f"ratio r ({how}): best common r ≈ {cf.ratio:.4g}, where the worst is node "
        f"[{plan.lo[node]}, {plan.hi[node]}] at s·sd = {cf.frequency:g} "
        f"(p = {min(1.0, cf.p_value * a / a_part):.3g})"
    )
    k = a / a_part
    p = min(1.0, k * min(p_id, cf.p_value))
    passed = p_id >= a_part and cf.p_value >= a_part
    detail = f"recovered node noise ẑ = R⁺(y − RAx) over {N:,} runs: " + "; ".join(parts)
    if not passed:
        detail += " — not independent Laplace noise on the reference's nodes"
    return Check("noise-law", passed, None, p, None, a, detail)


@dataclass(frozen=True)
class _CfResult:
    p_value: float
    """``sup_r`` of the Bonferroni p-value over the statistics (an upper bound)."""
    ratio: float
    """The r (cell centre) where it is attained."""
    node: int
    """Index (into the used nodes) of the worst statistic there."""
    frequency: float
    """Its frequency, in units of ``1/sd_n``."""


def _cf_test(Z: FloatArray, coef: FloatArray, r_lo: float, r_hi: float, level: float) -> _CfResult:
    """The per-node characteristic-function test with r unknown in ``[r_lo, r_hi]``.

    For each r the statistics' Bernstein p-values at that r are Bonferroni-combined; the
    test's p-value is the supremum over r (the target conforms to *some* common ratio).
    It is bounded from above on a cover of the range by cells ``[r_i, r_{i+1}]``: on a
    cell φ lies in ``[φ(r_{i+1}s), φ(r_i s)]`` (φ decreases in r) and the variance is at
    most ``(1 + φ(2r_i s))/2 − φ(r_{i+1}s)²``, so a cell's bound is at least the
    p-value at every r in it.  The cover starts with cells of ratio 2 and splits, eightfold,
    every cell whose bound reaches ``level`` until its ratio is at most :data:`_CELL`: the
    decision (``p ≥ level``) is that of the finest cover, at a fraction of its cost.
    """
    N = Z.shape[0]
    sd = np.sqrt(2.0 * (coef**2).sum(axis=1))
    live = np.flatnonzero(sd > 0)
    K = max(1, live.size * len(FREQUENCIES))
    stats = []
    for f in FREQUENCIES:
        s = f / sd[live]
        stats.append((s, np.cos(Z[:, live] * s[None, :]).mean(axis=0)))
    c = coef[live]
    lo_e = r_lo if r_lo > 0 else 1e-4
    hi_e = r_hi if math.isfinite(r_hi) else 1e4
    edges = np.geomspace(lo_e, hi_e, max(2, math.ceil(math.log2(hi_e / lo_e)) + 1))
    cells_a, cells_b = list(edges[:-1]), list(edges[1:])
    if r_lo <= 0:
        cells_a, cells_b = [0.0, *cells_a], [lo_e, *cells_b]
    if not math.isfinite(r_hi):
        cells_a, cells_b = [*cells_a, hi_e], [*cells_b, math.inf]
    a_arr, b_arr = np.array(cells_a), np.array(cells_b)
    done_p: list[FloatArray] = []
    done: list[tuple[FloatArray, FloatArray, IntArray]] = []
    while a_arr.size:
        p, j = _cell_bounds(c, stats, N, a_arr, b_arr)
        p = np.minimum(1.0, p * K)
        wide = (a_arr > 0) & np.isfinite(b_arr) & (b_arr > a_arr * _CELL)
        split = wide & (p >= level)
        done_p.append(p[~split])
        done.append((a_arr[~split], b_arr[~split], j[~split]))
        if not split.any():
            break
        grid = np.geomspace(a_arr[split], b_arr[split], 9, axis=1)  # (cells, 9)
        a_arr, b_arr = grid[:, :-1].ravel(), grid[:, 1:].ravel()
    all_p = np.concatenate(done_p)
    all_a = np.concatenate([d[0] for d in done])
    all_b = np.concatenate([d[1] for d in done])
    all_j = np.concatenate([d[2] for d in done])
    best = int(np.argmax(all_p))
    a_e, b_e = float(all_a[best]), float(all_b[best])
    ratio = math.sqrt(a_e * b_e) if a_e > 0 and math.isfinite(b_e) else (a_e or b_e)
    k, fi = divmod(int(all_j[best]), len(FREQUENCIES))
    return _CfResult(float(all_p[best]), ratio, int(live[k]), FREQUENCIES[fi])


def _cell_bounds(
    coef: FloatArray,
    stats: list[tuple[FloatArray, FloatArray]],
    N: int,
    a: FloatArray,
    b: FloatArray,
) -> tuple[FloatArray, IntArray]:
    """For each cell ``[a_i, b_i]``: the smallest Bernstein p-value bound over the
    statistics, and which statistic (``node·len(FREQUENCIES) + frequency index``)."""
    best = np.full(a.size, np.inf)
    which = np.zeros(a.size, dtype=np.int64)
    nf = len(FREQUENCIES)
    for fi, (s, mean) in enumerate(stats):
        for start in range(0, s.size, 256):
            rows = slice(start, start + 256)
            up = _cf_grid(coef[rows], s[rows], a)  # φ at the small end: the larger
            low = _cf_grid(coef[rows], s[rows], b)
            up2 = _cf_grid(coef[rows], 2.0 * s[rows], a)
            m = mean[rows][:, None]
            var = np.clip((1.0 + up2) / 2.0 - low**2, 1e-12, 1.0)
            t = np.maximum(0.0, np.maximum(low - m, m - up))
            p = np.minimum(1.0, 2.0 * np.exp(-N * t**2 / (2.0 * var + 4.0 * t / 3.0)))
            k = np.argmin(p, axis=0)
            pk = p[k, np.arange(a.size)]
            better = pk < best
            best = np.where(better, pk, best)
            which = np.where(better, (start + k) * nf + fi, which)
    return best, which


def _cf_grid(coef: FloatArray, s: FloatArray, r: FloatArray) -> FloatArray:
    """``φ_n(r·s_n)`` for each row n and each r (``r = ∞`` gives 0), shape (rows, r)."""
    keep = np.abs(coef) > 1e-12 * np.abs(coef).max(axis=1, keepdims=True)
    row, col = np.nonzero(keep)
    cs2 = (coef[row, col] * s[row]) ** 2  # (nnz,)
    finite = np.where(np.isfinite(r), r, 0.0)
    terms = np.log1p(cs2[:, None] * finite[None, :] ** 2)  # (nnz, r)
    out = np.zeros((coef.shape[0], r.size))
    np.add.at(out, row, terms)
    phi: FloatArray = np.exp(-out)
    phi[:, ~np.isfinite(r)] = 0.0
    return phi
