"""Tree counters of the pure-DP frontier (docs/spec.md §1.1): Honaker, KaryTree, level budgets.

Target: prefix sums ``c_t = Σ_{i≤t} x_i``.  All trees here are made of aligned k-ary
intervals ``[m k^h + 1, (m+1) k^h]`` (level h ≥ 0) inside ``[1, T]``; an item lies in at
most one node per level, item 1 in exactly one node of each of the
``L = ⌊log_k T⌋ + 1`` levels, so a split of ε into per-level budgets ``ε_h`` with
``Σ_h ε_h = ε`` (node scale ``b_h = Δ/ε_h``) makes the release ε-DP by basic composition.

* **KaryTree(k)** releases the intervals that are not the last child of their parent:
  exactly one node ends at every t, of level ``v_k(t)`` (the k-adic valuation of t).  The
  prefix ``[1, t]`` is covered by ``d_h(t)`` nodes of size ``k^h`` for the base-k digits
  ``d_h(t)`` of t, so ``Var(out_t) = Σ_h d_h(t)·2b_h²``.  ``KaryTree(k=2)`` is Binary.
* **combine=True** releases every aligned interval (the last children too; they cost
  nothing more, an item still lies in one node per level) and replaces each node's noisy
  value by the minimum-variance combination with its children's combined estimates,
  ``v = w_h·noisy + (1 − w_h)·Σ_children v``, ``w_h = V_h/σ_h²`` with ``σ_h² = 2b_h²``,
  ``1/V_h = 1/σ_h² + 1/(k V_{h−1})``, ``V_0 = σ_0²``; the output sums the combined
  estimates of the decomposition, ``Var(out_t) = Σ_h d_h(t)·V_h``.
* **Honaker** is the binary case of the combined tree (Honaker 2015, streaming form):
  with equal scales ``w_h = 2^h/(2^{h+1} − 1)`` and ``V_h = w_h·2b²``.
* **Level budgets** (every tree, Binary too): ``budget="uniform"`` (``ε_h = ε/L``),
  ``"mean"``/``"max"`` (the split minimising the mean or the maximum of ``Var(out_t)``
  over t ≤ T, found numerically and rounded to rationals on a ``2^-32`` grid with the
  largest share taking the remainder, so ``Σ_h ε_h = ε`` exactly; never worse than uniform,
  which is kept when the rounded optimum does not beat it exactly), or an explicit
  sequence of the L values ``ε_h``, which must sum to ε exactly.

References
----------
.. [1] J. Honaker. "Efficient Use of Differentially Private Binary Trees." TPDP 2015.
.. [2] T.-H. H. Chan, E. Shi, D. Song. "Private and Continual Release of Statistics."
   ACM TISSEC 14(3), 2011.
.. [3] M. Hay, V. Rastogi, G. Miklau, D. Suciu. "Boosting the Accuracy of
   Differentially Private Histograms Through Consistency." PVLDB 3(1), 2010 (the
   bottom-up pass of the k-ary tree estimate).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt

from dpref.caching import BytesCache
from dpref.domains import Domain
from dpref.dyadic import binary_noise_sum
from dpref.errors import DprefTypeError, ParameterError
from dpref.lower_bounds import Decay, prefix_decay
from dpref.mechanisms.base import (
    EXACT,
    MAX_HORIZON,
    BudgetTerm,
    Example,
    Mechanism,
    NodeTable,
    OnlineCounter,
)
from dpref.noise import NoiseKind
from dpref.plan import ExactSparse
from dpref.validation import (
    ceil_float,
    check_choice,
    check_fraction,
    check_int_range,
    fmt,
)

__all__ = [
    "AUTO_K_MAX",
    "BUDGET_GRID",
    "FRONTIER_K_MAX",
    "MAX_LEVEL_NOISE",
    "Honaker",
    "KaryTree",
    "combined_variances",
    "combined_weights",
    "design_level_budget",
    "digit_sums",
    "digit_variances",
    "level_budget",
    "level_variances",
    "level_weights",
    "max_digit_vectors",
    "tree_levels",
    "tree_objective",
]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

BUDGETS = ("uniform", "mean", "max")
"""The named level budgets (an explicit sequence of ε_h is the fourth kind)."""
OBJECTIVES = ("mean", "max")
"""What ``k="auto"`` and the optimised budgets minimise over t ≤ T."""
AUTO_K_MAX = 64
"""``k="auto"`` searches k = 2 … min(max(T, 2), AUTO_K_MAX)."""
FRONTIER_K_MAX = 32
"""``KaryTree.frontier_variants`` lists k = 2 … min(max(T, 2), FRONTIER_K_MAX)."""
BUDGET_GRID = 2**32
"""An optimised split is rounded to multiples of ε/BUDGET_GRID (the largest share takes the
remainder, so the split sums to ε exactly)."""
MAX_LEVEL_NOISE = Fraction(2**1000)
"""Largest node scale (Laplace) or variance (Gaussian) a level budget may give a level:
a finite float, with room for the sums over at most 63 levels."""
MAX_BUDGET_STRING = 64_000
"""Longest budget string accepted (63 levels of at most 1000 characters each)."""


# ------------------------------------------------------------ exact tree arithmetic
def tree_levels(horizon: int, k: int) -> int:
    """``L = ⌊log_k T⌋ + 1``: the number of j ≥ 0 with ``k^j ≤ T`` (exact integers)."""
    levels, size = 1, k
    while size <= horizon:
        levels += 1
        size *= k
    return levels


def _digits(t: int, k: int, levels: int) -> list[int]:
    out = []
    for _ in range(levels):
        t, d = divmod(t, k)
        out.append(d)
    return out


def digit_sums(horizon: int, k: int, levels: int) -> list[int]:
    """``S_h = Σ_{t=1}^{T} d_h(t)`` for h < levels, exactly (O(levels) work).

    Among ``0 … T`` the digit h cycles through ``0 … k−1`` in runs of ``k^h``: every full
    period of ``k^{h+1}`` numbers contributes ``k^h·k(k−1)/2``; the partial period of
    ``r`` numbers contributes ``k^h·Σ_{d<⌊r/k^h⌋} d + ⌊r/k^h⌋·(r mod k^h)``.
    """
    out = []
    n = horizon + 1  # the numbers 0 … T
    for h in range(levels):
        p = k**h
        full, rem = divmod(n, p * k)
        q, r = divmod(rem, p)
        out.append(full * p * (k * (k - 1) // 2) + p * (q * (q - 1) // 2) + q * r)
    return out


def max_digit_vectors(horizon: int, k: int, levels: int) -> list[list[int]]:
    """Digit vectors that dominate every t ≤ T (``max_t Σ_h d_h(t)a_h`` for a_h ≥ 0 is the
    max over them): T itself, and for each nonzero digit h of T the number that agrees
    with T above h, has digit ``d_h(T) − 1`` at h and ``k − 1`` below (any t < T first
    differs from T at some h where its digit is smaller, so one of these dominates it
    digit by digit)."""
    top = _digits(horizon, k, levels)
    out = [top]
    for h in range(levels):
        if top[h] > 0:
            out.append([k - 1] * h + [top[h] - 1] + top[h + 1 :])
    return [v for v in out if any(v)]


def level_variances(scales: Sequence[Fraction], k: int, combine: bool) -> tuple[Fraction, ...]:
    """Per level, the variance of one decomposition node's estimate, exactly, for Laplace
    scales ``b_h`` (node variances ``2b_h²``): :func:`combined_variances`."""
    return combined_variances([2 * b * b for b in scales], k, combine)


def combined_variances(
    node_variances: Sequence[Fraction], k: int, combine: bool
) -> tuple[Fraction, ...]:
    """Per level, the variance of one decomposition node's estimate, exactly, from the
    node variances ``σ_h²`` (``2b_h²`` for Laplace, the Gaussian σ_h² otherwise).

    Uncombined: ``σ_h²``.  Combined: ``V_0 = σ_0²`` and
    ``1/V_h = 1/σ_h² + 1/(k V_{h−1})`` (inverse-variance combination of the node's own
    noisy value with the sum of its k children's independent combined estimates).
    """
    sig = list(node_variances)
    if not combine:
        return tuple(sig)
    out = [sig[0]]
    for s in sig[1:]:
        prev = k * out[-1]
        out.append(s * prev / (s + prev))
    return tuple(out)


def level_weights(scales: Sequence[Fraction], k: int) -> tuple[Fraction, ...]:
    """``w_h = V_h/σ_h²`` (``w_0 = 1``): the weight of a node's own noisy value in its
    combined estimate; ``1 − w_h = V_h/(k V_{h−1})`` goes to the children's sum."""
    return combined_weights([2 * b * b for b in scales], k)


def combined_weights(node_variances: Sequence[Fraction], k: int) -> tuple[Fraction, ...]:
    """``w_h = V_h/σ_h²`` from the node variances σ_h² (:func:`combined_variances`)."""
    var = combined_variances(node_variances, k, True)
    return tuple(v / s for v, s in zip(var, node_variances, strict=True))


def tree_objective(variances: Sequence[Fraction], horizon: int, k: int, objective: str) -> Fraction:
    """Exact mean (over t = 1 … T) or maximum of ``Var(out_t) = Σ_h d_h(t)·V_h``."""
    levels = len(variances)
    if objective == "mean":
        sums = digit_sums(horizon, k, levels)
        return sum((s * v for s, v in zip(sums, variances, strict=True)), Fraction(0)) / horizon
    return max(
        sum((d * v for d, v in zip(vec, variances, strict=True)), Fraction(0))
        for vec in max_digit_vectors(horizon, k, levels)
    )


def digit_counts(t_max: int, k: int, levels: int) -> npt.NDArray[np.integer[Any]]:
    """``d_h(t)``, the base-k digits of t = 1 … t_max, shape (levels, t_max), in the
    smallest unsigned dtype that holds ``k − 1`` (a byte per digit for k ≤ 256)."""
    dtype = np.min_scalar_type(k - 1)
    out = np.empty((levels, t_max), dtype=dtype)
    t = np.arange(1, t_max + 1, dtype=np.int64)
    p = 1
    for h in range(levels):
        out[h] = (t // p) % k
        p *= k
    return out


def digit_variances(t_max: int, k: int, variances: Sequence[Fraction]) -> list[Fraction]:
    """``Σ_h d_h(t)·V_h`` for t = 1 … t_max, exactly (vectorised over a common denominator)."""
    denom = 1
    for v in variances:
        denom = denom * v.denominator // math.gcd(denom, v.denominator)
    nums = [int(v * denom) for v in variances]
    t = np.arange(1, t_max + 1, dtype=np.int64)
    levels = tree_levels(t_max, k)
    big = max(nums[:levels]) * (k - 1) * levels >= 2**62
    total: npt.NDArray[Any] = np.zeros(t_max, dtype=object if big else np.int64)
    p = 1
    for h in range(levels):
        d = (t // p) % k
        total = total + (d.astype(object) * nums[h] if big else d * nums[h])
        p *= k
    cache: dict[int, Fraction] = {}
    out = []
    for value in total.tolist():
        f = cache.get(value)
        if f is None:
            f = cache[value] = Fraction(int(value), denom)
        out.append(f)
    return out


# ------------------------------------------------------------------ level budgets
def _mixing(levels: int, k: int, combine: bool) -> FloatArray:
    """M with ``1/V = M y``, ``y_h = ε_h²/2`` (Δ = 1): ``1/V_h = Σ_{j≤h} k^{−(h−j)} y_j`` for
    the combined tree (unrolling ``1/V_h = 1/σ_h² + 1/(kV_{h−1})``), the identity otherwise."""
    if not combine:
        return np.eye(levels)
    h = np.arange(levels)
    expo = (h[:, None] - h[None, :]).astype(np.float64)
    out: FloatArray = np.where(expo >= 0, float(k) ** -np.maximum(expo, 0.0), 0.0)
    return out


@functools.lru_cache(maxsize=512)
def _optimal_split(
    horizon: int, k: int, combine: bool, objective: str, gaussian: bool = False
) -> tuple[Fraction, ...]:
    """Fractions ``q_h`` of ε (summing to 1 exactly) minimising the objective at Δ = ε = 1.

    The objective scales as ``(Δ/ε)²``, so the split does not depend on ε or Δ.  With
    ``y_h = q_h²/2`` the level variances are ``V = 1/(M y)`` (:func:`_mixing`), so both
    objectives and their gradients are closed forms.  ``gaussian=True``: the ``q_h`` are
    per-level shares of ρ (the L2 objective): node variances ``Δ²/(2ρq_h) ∝ 1/q_h``, so
    ``y_h = q_h`` (up to the constant 2ρ/Δ², which does not move the optimum).
    Found numerically, a local optimum (the mean: BFGS over log-weights, from uniform and
    from the uncombined closed form ``q_h ∝ S_h^{1/3}``, ``S_h^{1/2}`` for Gaussian; the
    maximum: SLSQP on its epigraph form over :func:`max_digit_vectors`, from uniform and
    from the mean's optimum), rounded to multiples of ``1/BUDGET_GRID`` (at least 4 of
    them) with the largest share taking the remainder, and kept only when its exact
    objective beats uniform's.
    """
    from scipy.optimize import minimize

    levels = tree_levels(horizon, k)
    uniform = tuple([Fraction(1, levels)] * levels)
    if levels == 1:
        return uniform
    sums = np.array([float(s) for s in digit_sums(horizon, k, levels)]) / horizon
    vecs = np.array(max_digit_vectors(horizon, k, levels), dtype=np.float64)
    M = _mixing(levels, k, combine)
    x_uni = np.full(levels, 1.0 / levels)

    def var(x: FloatArray) -> FloatArray:
        y = x if gaussian else 0.5 * x * x
        out: FloatArray = 1.0 / (M @ y)
        return out

    def dy(x: FloatArray) -> FloatArray:
        """∂y_h/∂x_h."""
        return np.ones_like(x) if gaussian else x

    norm = float(sums @ var(x_uni))
    norm_max = float(np.max(vecs @ var(x_uni)))

    def softmax(theta: FloatArray) -> FloatArray:
        e = np.exp(np.clip(theta, -60.0, 60.0) - np.clip(theta, -60.0, 60.0).max())
        out: FloatArray = e / e.sum()
        return out

    def mean_and_grad(theta: FloatArray) -> tuple[float, FloatArray]:
        x = softmax(theta)
        v = var(x)
        g = -dy(x) * (M.T @ (sums * v * v)) / norm  # ∂/∂x of Σ S_h V_h
        return float(sums @ v) / norm, x * (g - float(x @ g))

    def mean_of(x: FloatArray) -> float:
        return float(sums @ var(x)) / norm

    # the uncombined optimum of Σ S_h V_h: q ∝ S^{1/3} (Laplace, V ∝ 1/q²), S^{1/2} (Gaussian)
    cube = np.sqrt(np.maximum(sums, 1e-300)) if gaussian else np.cbrt(np.maximum(sums, 1e-300))
    best = x_uni
    for theta0 in (np.zeros(levels), np.log(cube / cube.sum())):
        res = minimize(mean_and_grad, theta0, jac=True, method="BFGS")
        cand = softmax(np.asarray(res.x, dtype=np.float64))
        if np.all(np.isfinite(cand)) and mean_of(cand) < mean_of(best):
            best = cand
    x = best
    if objective == "max":

        def max_of(x: FloatArray) -> float:
            return float(np.max(vecs @ var(x))) / norm_max

        def g_max(z: FloatArray) -> FloatArray:
            out: FloatArray = z[levels] - vecs @ var(z[:levels]) / norm_max
            return out

        def g_jac(z: FloatArray) -> FloatArray:
            xz = z[:levels]
            v = var(xz)
            d = (vecs * (v * v)[None, :]) @ M * dy(xz)[None, :] / norm_max  # −∂(n·V)/∂x
            return np.hstack([d, np.ones((vecs.shape[0], 1))])

        ones = np.append(np.ones(levels), 0.0)
        best_max = x_uni
        for x0 in (x_uni, x):
            x0 = np.maximum(x0, 1e-6)
            x0 = x0 / x0.sum()
            res = minimize(
                lambda z: float(z[levels]),
                np.append(x0, max_of(x0)),
                jac=lambda z: np.append(np.zeros(levels), 1.0),
                method="SLSQP",
                bounds=[(1e-9, 1.0)] * levels + [(0.0, None)],
                constraints=[
                    {
                        "type": "eq",
                        "fun": lambda z: float(np.sum(z[:levels])) - 1.0,
                        "jac": lambda z: ones,
                    },
                    {"type": "ineq", "fun": g_max, "jac": g_jac},
                ],
                options={"maxiter": 500, "ftol": 1e-15},
            )
            cand = np.asarray(res.x[:levels], dtype=np.float64)
            if np.all(np.isfinite(cand)) and np.all(cand > 0):
                cand = cand / cand.sum()
                if max_of(cand) < max_of(best_max):
                    best_max = cand
        x = best_max
    if not np.all(np.isfinite(x)):
        return uniform
    grid = [max(4, round(float(v) * BUDGET_GRID)) for v in x]
    big = int(np.argmax(x))  # the largest share takes the remainder
    grid[big] = 0
    grid[big] = BUDGET_GRID - sum(grid)
    if grid[big] < 4:
        return uniform
    split = tuple(Fraction(g, BUDGET_GRID) for g in grid)

    def exact(qs: tuple[Fraction, ...]) -> Fraction:
        node_var = [1 / q if gaussian else 2 / (q * q) for q in qs]
        return tree_objective(combined_variances(node_var, k, combine), horizon, k, objective)

    return split if exact(split) < exact(uniform) else uniform


def _check_budget_sequence(
    budget: Any, levels: int, epsilon: Fraction, total_name: str = "epsilon"
) -> tuple[Fraction, ...]:
    if isinstance(budget, str):
        if len(budget) > MAX_BUDGET_STRING:
            raise ParameterError(
                f"budget={fmt(budget)}: at most {MAX_BUDGET_STRING} characters, got {len(budget)}"
            )
        items: list[Any] = [p for p in budget.replace(";", ",").split(",")]
    else:
        try:
            arr = np.asarray(budget, dtype=object)
        except (ValueError, TypeError) as exc:
            raise DprefTypeError(f"budget={fmt(budget)}: not a sequence ({exc})") from None
        if arr.ndim != 1:
            raise DprefTypeError(
                f"budget={fmt(budget)}: one of {BUDGETS} or a 1-D sequence of per-level ε_h"
            )
        items = list(arr.tolist()) if arr.size <= levels + 1 else [None] * arr.size
    if len(items) != levels:
        raise ParameterError(
            f"budget={fmt(budget)}: {len(items)} per-level values, but the tree has "
            f"L={levels} levels"
        )
    values = tuple(check_fraction("budget", v) for v in items)
    if any(v <= 0 for v in values):
        raise ParameterError(f"budget={fmt(budget)}: every per-level ε_h must be > 0")
    total = sum(values, Fraction(0))
    if total != epsilon:
        raise ParameterError(
            f"budget={fmt(budget)}: the per-level values sum to {total}, not "
            f"{total_name}={epsilon} (they must sum to {total_name} exactly)"
        )
    return values


def level_budget(
    budget: Any,
    *,
    epsilon: Fraction,
    horizon: int,
    k: int,
    combine: bool,
    gaussian: bool = False,
    total_name: str = "epsilon",
) -> tuple[str, tuple[Fraction, ...]]:
    """``(kind, (ε_0, …, ε_{L−1}))`` for a budget argument; the ε_h sum to ε exactly.

    ``budget`` is ``"uniform"``, ``"mean"``, ``"max"``, a string of L comma-separated
    numbers (``"1/2,1/4,1/4"``, the command-line form) or a sequence of L numbers.
    Raises :class:`~dpref.errors.DprefError` naming ``budget`` otherwise.  With
    ``gaussian=True`` the total is ρ (named ``total_name``) and the optimised splits
    minimise the Gaussian variance (:func:`_optimal_split`).
    """
    levels = tree_levels(horizon, k)
    if isinstance(budget, str) and budget.strip() in BUDGETS:
        kind = budget.strip()
        if kind == "uniform":
            return kind, tuple([epsilon / levels] * levels)
        split = _optimal_split(horizon, k, combine, kind, gaussian)
        return kind, tuple(epsilon * q for q in split)
    if isinstance(budget, str) and "," not in budget and budget.strip():
        # a single word that is not a budget name (a one-level tree takes "1/2" too)
        try:
            check_fraction("budget", budget)  # bounded: no "1e999999999"
        except DprefTypeError:
            raise
        except ParameterError:
            raise ParameterError(
                f"budget={fmt(budget)}: must be one of {BUDGETS} or L per-level ε_h"
            ) from None
    if (
        isinstance(budget, bool)
        or budget is None
        or not (isinstance(budget, str | list | tuple | np.ndarray))
    ):
        raise DprefTypeError(
            f"budget={fmt(budget)}: one of {BUDGETS} or a sequence of L per-level ε_h"
        )
    return "explicit", _check_budget_sequence(budget, levels, epsilon, total_name)


def design_level_budget(
    m: Mechanism, budget: Any, *, k: int, combine: bool
) -> tuple[str, tuple[Fraction, ...]]:
    """``(kind, ε_h)``: a tree mechanism's level budget as shares of its design ε.

    Pure ε-DP: :func:`level_budget` of ε.  zCDP: the budget is split in ρ (an explicit
    sequence is L per-level ``ρ_h`` summing to ρ; the optimised splits minimise the
    Gaussian variance), and level h's design ε is ``ρ_h/ρ`` (at design ε = 1), so its
    nodes get ``σ_h² = Δ·b_h/(2ρ) = Δ²/(2ρ_h)`` (:meth:`Mechanism.node_variance`).
    """
    assert m.horizon is not None
    total = m.epsilon if m.rho is None else m.rho
    assert total is not None
    kind, values = level_budget(
        budget,
        epsilon=total,
        horizon=m.horizon,
        k=k,
        combine=combine,
        gaussian=m.gaussian,
        total_name="epsilon" if m.rho is None else "rho",
    )
    shares = tuple(v * m.design_epsilon / total for v in values)
    what = "variance" if m.gaussian else "scale"
    for h, e in enumerate(shares):
        # a level's node scale Δ/ε_h (Laplace) or variance Δ²/(2ρ_h) (Gaussian) must be a
        # finite float with room for sums over the levels: refused here, naming budget,
        # rather than as 'value=…: too large for a float' at release or online()
        b = m.sensitivity / e
        if (m.node_variance(b) if m.gaussian else b) > MAX_LEVEL_NOISE:
            raise ParameterError(
                f"budget={fmt(budget)}: level {h}'s share {values[h]} is too small, its node "
                f"{what} would exceed 2^1000 (a float)"
            )
    return kind, shares


def check_combine(value: Any) -> bool:
    """A bool, or the strings ``"true"``/``"false"`` (the command-line form)."""
    if isinstance(value, bool | np.bool_):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise DprefTypeError(f"combine={fmt(value)}: must be a bool (true or false)")


def check_k(value: Any) -> int | str:
    """``"auto"`` or an int ``2 ≤ k ≤ 2^62``."""
    if isinstance(value, str) and value.strip() == "auto":
        return "auto"
    if isinstance(value, str):
        raise ParameterError(f"k={fmt(value)}: must be an int >= 2 or 'auto'")
    return check_int_range("k", value, 2, MAX_HORIZON)


# ------------------------------------------------------------------ vectorised layout
def _valuations(horizon: int, k: int, levels: int) -> IntArray:
    """``min(v_k(t), L−1)`` for t = 1 … T (the level of the largest node ending at t)."""
    t = np.arange(1, horizon + 1, dtype=np.int64)
    v = np.zeros(horizon, dtype=np.int64)
    p = k
    for _ in range(1, levels):
        v += (t % p) == 0
        p *= k
    return v


def _digit_groups(key: tuple[int, int]) -> tuple[tuple[npt.NDArray[np.intp], ...], ...]:
    """``t = 1..T`` with digit sum ≥ 2, grouped by digit sum ascending (0-based), with the
    positions of their parents ``t − k^{v_k(t)}`` (digit sum one less)."""
    horizon, k = key
    levels = tree_levels(horizon, k)
    t = np.arange(1, horizon + 1, dtype=np.int64)
    v = _valuations(horizon, k, levels)
    parent = t - np.asarray(k, dtype=np.int64) ** v
    ds = np.zeros(horizon, dtype=np.int64)
    x = t.copy()
    for _ in range(levels):
        ds += x % k
        x //= k
    order = np.argsort(ds, kind="stable")
    bounds = np.searchsorted(ds[order], np.arange(2, int(ds.max(initial=1)) + 2))
    groups = []
    for g in range(bounds.size - 1):
        idx = order[bounds[g] : bounds[g + 1]].astype(np.intp)
        par = (parent[idx] - 1).astype(np.intp)
        idx.setflags(write=False)
        par.setflags(write=False)
        groups.append((idx, par))
    return tuple(groups)


_DIGIT_GROUPS: BytesCache[tuple[int, int], Any] = BytesCache(_digit_groups, 32 << 20)


def _prefix_sum_of_nodes(y: FloatArray, k: int) -> FloatArray:
    """``S(t) = y(t) + S(t − k^{v_k(t)})`` along the last axis: the sum over the k-ary
    decomposition of [1, t] when ``y(t)`` is the value of the node ending at t."""
    if k == 2:
        out: FloatArray = binary_noise_sum(y)
        return out
    out = np.array(y, dtype=np.float64, copy=True)
    for idx, par in _DIGIT_GROUPS.get((out.shape[-1], k)):
        out[..., idx] += out[..., par]
    return out


def _combined_layout(key: tuple[int, int]) -> tuple[IntArray, tuple[IntArray, ...]]:
    """Offsets ``off`` (node (h, e) of the combined tree is ``off[e−1] + h``) and, per
    level, the canonical positions of its nodes (ends ``k^h, 2k^h, …``)."""
    horizon, k = key
    levels = tree_levels(horizon, k)
    count = _valuations(horizon, k, levels) + 1
    off = np.zeros(horizon + 1, dtype=np.int64)
    np.cumsum(count, out=off[1:])
    pos = []
    p = 1
    for h in range(levels):
        ends = np.arange(p, horizon + 1, p, dtype=np.int64)
        ph = off[ends - 1] + h
        ph.setflags(write=False)
        pos.append(ph)
        p *= k
    off.setflags(write=False)
    return off, tuple(pos)


_LAYOUTS: BytesCache[tuple[int, int], Any] = BytesCache(_combined_layout, 64 << 20)


def _cat(parts: list[IntArray]) -> IntArray:
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)


# --------------------------------------------------------------------- the mechanisms
class _Tree(Mechanism):
    """A k-ary tree counter with per-level budgets, optionally combined (module doc)."""

    proof = "proofs/trees.py"
    docs = "docs/trees.md"

    k: int
    """The arity."""
    combine_children: bool
    """Whether every node is released and combined with its children."""
    budget: str
    """``"uniform"``, ``"mean"``, ``"max"`` or ``"explicit"``."""
    level_epsilons: tuple[Fraction, ...]
    """``ε_h`` per level (they sum to ε exactly)."""

    def _setup(self, k: int, combine: bool, budget: Any) -> None:
        assert self.horizon is not None
        self.k = k
        self.combine_children = combine
        self.budget, self.level_epsilons = design_level_budget(self, budget, k=k, combine=combine)
        self.level_scales: tuple[Fraction, ...] = tuple(
            self.sensitivity / e for e in self.level_epsilons
        )
        """``b_h = Δ/ε_h`` per level, exact (the Laplace design at :attr:`design_epsilon`)."""
        node_var = [self.node_variance(b) for b in self.level_scales]
        self._variances = combined_variances(node_var, k, combine)
        self._weights = combined_weights(node_var, k) if combine else (Fraction(1),) * self.levels
        table: list[Fraction] = []
        for b in self.level_scales:
            if b not in table:
                table.append(b)
        self._scale_table = tuple(table)
        self._scale_of_level = np.array([table.index(b) for b in self.level_scales], dtype=np.int64)
        self._scale_floats = np.array([ceil_float(b) for b in self.level_scales])
        self._multiplier_floats = np.array([self.noise_multiplier(b) for b in self.level_scales])

    # ----------------------------------------------------------- declarations
    @property
    def levels(self) -> int:
        """``L = ⌊log_k T⌋ + 1``."""
        return len(self.level_epsilons)

    def level_budget_values(self) -> tuple[Fraction, ...]:
        """The per-level budgets as given: ``ε_h`` (pure; they sum to ε) or ``ρ_h`` (zCDP;
        they sum to ρ, ``ρ_h = ρ·ε_h`` with ε_h the design shares)."""
        if self.rho is None:
            return self.level_epsilons
        return tuple(self.rho * e for e in self.level_epsilons)

    def decay(self) -> Decay:
        """Running counts: ``g ≡ 1``."""
        return prefix_decay()

    def budget_terms(self, ops: Any = EXACT, **s: Any) -> list[BudgetTerm]:
        """Item 1 lies in one node of each level; level h has scale ``b_h = Δ/ε_h``.

        Uniform: one term, L nodes of scale ``LΔ/ε`` (``levels`` may be passed as a
        symbol by the proofs); otherwise one term per level.
        """
        if self.budget == "uniform":
            eps = s.get("epsilon", self.design_epsilon)
            delta = s.get("sensitivity", self.sensitivity)
            horizon = s.get("horizon", self.horizon)
            L = s.get(
                "levels", tree_levels(horizon, self.k) if isinstance(horizon, int) else self.levels
            )
            return [BudgetTerm("level", L, L * delta / eps)]
        return [BudgetTerm(f"level {h}", 1, b) for h, b in enumerate(self.level_scales)]

    def variance_of_levels(self) -> tuple[Fraction, ...]:
        """``V_h``: the exact variance of one level-h estimate in the decomposition."""
        return self._variances

    def weights(self) -> tuple[Fraction, ...]:
        """``w_h``: the exact weight of a node's own noisy value in its estimate."""
        return self._weights

    def objective(self, kind: str = "mean") -> Fraction:
        """The exact mean or maximum of ``Var(out_t)`` over t ≤ T."""
        check_choice("kind", kind, OBJECTIVES)
        assert self.horizon is not None
        return tree_objective(self._variances, self.horizon, self.k, kind)

    def expected_l1_sum(self, horizon: int) -> Fraction | None:
        levels = tree_levels(horizon, self.k)
        return sum(self.level_epsilons[:levels], Fraction(0))

    def target(self, stream: Any) -> FloatArray:
        """Exact prefix sums ``c_t``."""
        return self._target_checked(self._stream(stream))

    def _target_checked(self, x: FloatArray) -> FloatArray:
        return np.cumsum(x)

    # ------------------------------------------------------------------ plan
    def _levels_at(self, horizon: int) -> int:
        return tree_levels(horizon, self.k)

    def node_count(self, horizon: int) -> int:
        if not self.combine_children:
            return horizon
        total, p = 0, 1
        while p <= horizon:
            total += horizon // p
            p *= self.k
        return total

    def _node_levels(self, horizon: int) -> tuple[IntArray, IntArray]:
        """(end, level) of every node released up to ``horizon``, canonical order."""
        levels = self._levels_at(horizon)
        v = _valuations(horizon, self.k, levels)
        t = np.arange(1, horizon + 1, dtype=np.int64)
        if not self.combine_children:
            return t, v
        off, _ = _LAYOUTS.get((horizon, self.k))
        count = np.diff(off)
        hi = np.repeat(t, count)
        level = np.arange(int(off[-1]), dtype=np.int64) - np.repeat(off[:-1], count)
        return hi, level

    def nodes(self, horizon: int) -> NodeTable:
        hi, level = self._node_levels(horizon)
        size = np.asarray(self.k, dtype=np.int64) ** level
        return NodeTable(hi - size + 1, hi, self._scale_table, self._scale_of_level[level])

    def noise_scales(self, horizon: int) -> FloatArray | float:
        if len(self._scale_table) == 1:
            return float(self._scale_floats[0])
        held = self.__dict__.get("_scales_at")
        if held is not None and held[0] == horizon:
            out: FloatArray = held[1]
            return out
        _, level = self._node_levels(horizon)
        out = self._scale_floats[level]
        out.setflags(write=False)
        self._scales_at = (horizon, out)  # the last horizon's per-node scales (read-only)
        return out

    def noise_multipliers(self, horizon: int) -> FloatArray | float:
        if self.rho is None:
            return self.noise_scales(horizon)
        if len(self._scale_table) == 1:
            return float(self._multiplier_floats[0])
        _, level = self._node_levels(horizon)
        out: FloatArray = self._multiplier_floats[level]
        return out

    def recombination(self, horizon: int) -> ExactSparse:
        k = self.k
        levels = self._levels_at(horizon)
        t = np.arange(1, horizon + 1, dtype=np.int64)
        rows_all: list[IntArray] = []
        cols_all: list[IntArray] = []
        idx_all: list[IntArray] = []
        table: list[Fraction] = []
        w = self._weights
        if self.combine_children:
            off, _ = _LAYOUTS.get((horizon, k))
        for h in range(levels):
            p = k**h
            d = (t // p) % k
            rows = np.repeat(t - 1, d)
            base = np.repeat((t // (p * k)) * (p * k), d)
            first = np.repeat(np.cumsum(d) - d, d)
            i = np.arange(int(d.sum()), dtype=np.int64) - first  # 0 … d_h(t)−1
            starts = base + i * p  # the node covers [start+1, start+p]
            if not self.combine_children:
                rows_all.append(rows)
                cols_all.append(starts + p - 1)  # node index = its end − 1
                idx_all.append(np.zeros(rows.size, dtype=np.int64))
                continue
            # every node of the subtree below: level j, ends start + (m+1)k^j
            for j in range(h + 1):
                q = k**j
                coef = w[j]
                for g in range(j + 1, h + 1):
                    coef *= 1 - w[g]
                if coef not in table:
                    table.append(coef)
                ends = (starts[:, None] + q * np.arange(1, p // q + 1, dtype=np.int64)).ravel()
                rows_all.append(np.repeat(rows, p // q))
                cols_all.append(off[ends - 1] + j)
                idx_all.append(np.full(ends.size, table.index(coef), dtype=np.int64))
        n = self.node_count(horizon)
        return ExactSparse.from_triples(
            (horizon, n),
            _cat(rows_all),
            _cat(cols_all),
            tuple(table) if self.combine_children else (Fraction(1),),
            _cat(idx_all),
        )

    def variance_exact(self, horizon: int | None = None) -> list[Fraction]:
        return digit_variances(self._variance_horizon(horizon), self.k, self._variances)

    def online_memory(self, horizon: int | None = None) -> int | None:
        """Per level the prefix count where its open node began, the sum of its finished
        children's estimates and the decomposition's estimate; the count and the total."""
        return 3 * self.levels + 2

    def variance_counts(
        self, horizon: int | None = None
    ) -> tuple[tuple[Fraction, ...], npt.NDArray[np.integer[Any]]]:
        """``(V_0 … V_{L−1}, d_h(t))``: ``Var(out_t) = Σ_h d_h(t)·V_h``."""
        t_max = self._horizon_for(horizon)
        levels = tree_levels(t_max, self.k)
        return tuple(self._variances[:levels]), digit_counts(t_max, self.k, levels)

    def combine(self, noise: FloatArray, horizon: int) -> FloatArray:
        if not self.combine_children:
            return _prefix_sum_of_nodes(noise, self.k)
        k = self.k
        _, pos = _LAYOUTS.get((horizon, k))
        lead = noise.shape[:-1]
        est = np.take(noise, pos[0], axis=-1)
        y = est  # level 0's estimates; each level's children are summed before y changes
        p = 1
        for h in range(1, len(pos)):
            p *= k
            n_h = pos[h].size
            if k == 2:
                child = est[..., 0 : 2 * n_h : 2] + est[..., 1 : 2 * n_h : 2]
            else:
                child = est[..., : n_h * k].reshape((*lead, n_h, k)).sum(axis=-1)
            w = float(self._weights[h])
            est = np.take(noise, pos[h], axis=-1)
            est *= w
            child *= 1.0 - w
            est += child
            y[..., p - 1 :: p] = est
        return _prefix_sum_of_nodes(y, k)

    def online(self, rng: Any = None, noise: Any = None) -> OnlineCounter:
        return _TreeOnline(self, rng, noise)

    def extra_params(self) -> dict[str, Any]:
        out: dict[str, Any] = {"k": self.k}
        if self.combine_children:
            out["combine"] = True
        if self.budget != "uniform":
            out["budget"] = (
                self.budget
                if self.budget != "explicit"
                else ",".join(str(e) for e in self.level_budget_values())
            )
        return out


class _TreeOnline(OnlineCounter):
    """O(L) state: per level the prefix count where its open node started, the sum of the
    combined estimates of its finished children, and the decomposition's estimates."""

    def __init__(self, m: _Tree, rng: Any, noise: Any) -> None:
        super().__init__(m, rng, noise)
        self._k = m.k
        self._combine = m.combine_children
        self._scales = m.level_scales
        self._scales_f = [float(s) for s in m._multiplier_floats]
        self._w = [float(w) for w in m.weights()]
        L = m.levels
        self._start = [0.0] * L  # prefix count when the open node of each level began
        self._child = [0.0] * L  # Σ combined estimates of its finished children
        self._digit = [0.0] * L  # Σ estimates of the decomposition's level-h nodes
        self._count = 0.0
        self._total = 0.0
        self._L = L
        self._fast = self._injected is None and m.noise in ("laplace", "gaussian")
        """Take standard Laplace (normal) draws from the buffer directly (same draws, same
        order)."""

    def _draws(self, n: int) -> list[float]:
        """The next n standard Laplace draws of the buffered stream (the draws ``_noise``
        would take, in the same order)."""
        buf, pos = self._buf, self._buf_pos
        if pos + n <= len(buf):
            self._buf_pos = pos + n
            self._used += n
            return buf[pos : pos + n]
        self._used += n
        return [self._standard() for _ in range(n)]

    def step(self, x: Any) -> float:
        c = self._count + self._admit(x)
        self._count = c
        t = self.t
        k = self._k
        top = self._L - 1
        if k == 2:
            v = (t & -t).bit_length() - 1
            if v > top:
                v = top
        else:
            v = 0
            while v < top and t % k == 0:
                t //= k
                v += 1
        start, digit = self._start, self._digit
        scales_f = self._scales_f
        fast = self._fast
        if self._combine:
            child, w = self._child, self._w
            z = self._draws(v + 1) if fast else None
            est = 0.0
            for h in range(v + 1):
                noise = (
                    z[h] * scales_f[h]
                    if z is not None
                    else self._noise(scales_f[h], self._scales[h])
                )
                noisy = c - start[h] + noise
                est = noisy if h == 0 else w[h] * noisy + (1.0 - w[h]) * child[h]
                child[h] = 0.0
                start[h] = c
                if h < top:
                    child[h + 1] += est
        else:
            pos = self._buf_pos
            if fast and pos < len(self._buf):
                self._buf_pos = pos + 1
                self._used += 1
                noise = self._buf[pos] * scales_f[v]
            else:
                noise = self._noise(scales_f[v], self._scales[v])
            est = c - start[v] + noise
            for h in range(v + 1):
                start[h] = c
        dropped = 0.0
        for h in range(v):
            dropped += digit[h]
            digit[h] = 0.0
        digit[v] += est
        self._total += est - dropped
        return self._total


class KaryTree(_Tree):
    """The k-ary tree counter: aligned k-ary intervals except last children.

    Level h holds the intervals ``[m k^h + 1, (m+1)k^h]`` that are not the last child of
    their parent (``(m+1) mod k ≠ 0``): exactly one node ends at each t, of level
    ``v_k(t)``; ``L = ⌊log_k T⌋ + 1`` levels, item 1 in all of them, so uniform scales are
    ``LΔ/ε``.  The output at t sums the ``d_h(t)`` nodes of size ``k^h`` of the base-k
    digits of t: ``Var(out_t) = Σ_h d_h(t)·2b_h²``.  ``KaryTree(k=2)`` has Binary's plan.
    With ``combine=True`` every interval is released and each node's estimate is combined
    with its k children's (Honaker-style, exact weights; see :mod:`dpref.mechanisms.trees`).

    Parameters
    ----------
    k
        The arity, an int 2 ≤ k ≤ 2^62, or ``"auto"`` (default): the k in
        2 … min(max(T, 2), 64) with the smallest exact objective (ties: the smallest k).
        A k > T is accepted: the tree is then T leaves of scale Δ/ε, Simple II's plan.
    combine
        Release every interval and combine each node with its k children (default false;
        ``true``/``false`` on the command line).
    budget
        Per-level split of ε: ``uniform`` (default), ``mean`` or ``max`` (minimise the
        mean or maximum variance over t ≤ T; exact rationals summing to ε), or L
        comma-separated per-level ε_h summing to ε exactly.
    objective
        What ``k="auto"`` minimises over t ≤ T: ``mean`` (default) or ``max`` variance.

    References
    ----------
    .. [1] Chan, Shi, Song 2011 (the binary mechanism, k = 2).
    .. [2] Hay, Rastogi, Miklau, Suciu 2010 (k-ary trees and their bottom-up estimate).
    """

    name = "kary"
    examples = (
        Example({"k": 3}, horizons=(10, 16)),
        Example({"k": 4, "combine": True}, horizons=(16,)),
        Example({"k": "auto"}, horizons=(16,)),
        Example({"k": 3, "budget": "max"}, horizons=()),
        Example({"k": 3}, horizons=(16,), privacy="zcdp"),
        Example({"k": 4, "combine": True}, horizons=(), privacy="zcdp"),
    )

    def __init__(
        self,
        *,
        epsilon: Any = None,
        rho: Any = None,
        horizon: Any,
        k: Any = "auto",
        combine: Any = False,
        budget: Any = "uniform",
        objective: Any = "mean",
        domain: Domain | None = None,
        noise: NoiseKind | None = None,
    ) -> None:
        super().__init__(epsilon=epsilon, rho=rho, horizon=horizon, domain=domain, noise=noise)
        assert self.horizon is not None
        arity = check_k(k)
        flag = check_combine(combine)
        self.objective_kind: str = check_choice("objective", objective, OBJECTIVES)
        _validate_budget_form(budget)
        self.auto = arity == "auto"
        if self.auto and not (isinstance(budget, str) and budget.strip() in BUDGETS):
            raise ParameterError(
                f"budget={fmt(budget)}: an explicit per-level split needs an explicit k "
                "(k='auto' compares trees with different numbers of levels)"
            )
        if isinstance(arity, str):
            arity = self.choose_k(
                self.horizon,
                combine=flag,
                budget=budget,
                objective=self.objective_kind,
                epsilon=self.design_epsilon,
                gaussian=self.gaussian,
            )
        self._setup(arity, flag, budget)

    @staticmethod
    def choose_k(
        horizon: int,
        *,
        combine: bool,
        budget: Any,
        objective: str,
        epsilon: Fraction,
        gaussian: bool = False,
    ) -> int:
        """The k in 2 … min(max(T, 2), AUTO_K_MAX) with the smallest exact objective (the
        Gaussian one, node variances ``∝ 1/ε_h``, when ``gaussian``)."""
        best: tuple[Fraction, int] | None = None
        for k in range(2, min(max(horizon, 2), AUTO_K_MAX) + 1):
            _, eps_h = level_budget(
                budget, epsilon=epsilon, horizon=horizon, k=k, combine=combine, gaussian=gaussian
            )
            node_var = [1 / e if gaussian else 2 / (e * e) for e in eps_h]
            var = combined_variances(node_var, k, combine)
            value = tree_objective(var, horizon, k, objective)
            if best is None or value < best[0]:
                best = (value, k)
        assert best is not None
        return best[1]

    @classmethod
    def frontier_variants(cls, horizon: int) -> list[dict[str, Any]]:
        """Every k in 2 … min(max(T, 2), 32), uncombined and combined, with the uniform
        budget; and for k ≤ 16 the optimised ``"mean"`` and ``"max"`` budgets too (each
        optimisation takes up to about a second at T = 2^20)."""
        top = min(max(horizon, 2), FRONTIER_K_MAX)
        out: list[dict[str, Any]] = []
        for k in range(2, top + 1):
            for c in (False, True):
                out.append({"k": k, "combine": c, "budget": "uniform"})
                if k <= FRONTIER_K_MAX // 2:
                    out += [{"k": k, "combine": c, "budget": b} for b in ("mean", "max")]
        return out

    def extra_params(self) -> dict[str, Any]:
        out = super().extra_params()
        if self.auto:
            out["k"] = f"auto→{self.k}"
            out["objective"] = self.objective_kind
        return out


def _validate_budget_form(budget: Any) -> None:
    """The budget's type, before any work (``k="auto"`` builds many budgets)."""
    if isinstance(budget, str):
        if len(budget) > MAX_BUDGET_STRING:
            raise ParameterError(
                f"budget={fmt(budget)}: at most {MAX_BUDGET_STRING} characters, got {len(budget)}"
            )
        return
    if isinstance(budget, bool) or not isinstance(budget, list | tuple | np.ndarray):
        raise DprefTypeError(
            f"budget={fmt(budget)}: one of {BUDGETS} or a sequence of L per-level ε_h"
        )


class Honaker(_Tree):
    """Honaker's tree (streaming): every aligned dyadic node, combined with its children.

    Every aligned interval ``[m2^h + 1, (m+1)2^h] ⊆ [1, T]`` is released when complete with
    ``Lap(LΔ/ε)``, ``L = ⌊log₂T⌋ + 1`` (each item lies in one node per level).  A node's
    estimate is ``v = w_h·noisy + (1 − w_h)(v_left + v_right)`` with ``w_0 = 1`` and
    ``w_h = 2^h/(2^{h+1} − 1)`` (exact rationals), the minimum-variance weight; its
    variance is ``w_h·2(LΔ/ε)²``.  The output at t sums the estimates of the nodes of t's
    binary decomposition: ``Var(out_t) = Σ_{h ∈ bits(t)} 2(LΔ/ε)²·2^h/(2^{h+1} − 1)``.
    For this node set that is the best linear unbiased causal estimate (proofs/trees.py).
    It is ``KaryTree(k=2, combine=True)``.  With a non-uniform ``budget`` the weights are
    ``w_h = V_h/σ_h²`` for the level scales (module docstring).

    Parameters
    ----------
    budget
        Per-level split of ε: ``uniform`` (default), ``mean`` or ``max`` (minimise the
        mean or maximum variance over t ≤ T; exact rationals summing to ε), or L
        comma-separated per-level ε_h summing to ε exactly.

    References
    ----------
    .. [1] J. Honaker. "Efficient Use of Differentially Private Binary Trees." TPDP 2015
       (the streaming form: TensorFlow Privacy's ``EfficientTreeAggregator``).
    """

    name = "honaker"
    examples = (
        Example(horizons=(1, 5, 16)),
        Example({"budget": "mean"}, horizons=()),
        Example(horizons=(16,), privacy="zcdp"),
    )

    def __init__(
        self,
        *,
        epsilon: Any = None,
        rho: Any = None,
        horizon: Any,
        budget: Any = "uniform",
        domain: Domain | None = None,
        noise: NoiseKind | None = None,
    ) -> None:
        super().__init__(epsilon=epsilon, rho=rho, horizon=horizon, domain=domain, noise=noise)
        _validate_budget_form(budget)
        self._setup(2, True, budget)

    @staticmethod
    def uniform_weight(h: int) -> Fraction:
        """``w_h = 2^h/(2^{h+1} − 1)``: the weight with equal scales at every level."""
        return Fraction(2**h, 2 ** (h + 1) - 1)

    @classmethod
    def frontier_variants(cls, horizon: int) -> list[dict[str, Any]]:
        """Each level budget."""
        return [{"budget": b} for b in BUDGETS]

    def extra_params(self) -> dict[str, Any]:
        out = super().extra_params()
        out.pop("k", None)
        out.pop("combine", None)
        return out
