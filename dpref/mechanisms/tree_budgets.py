"""Per-level budgets of the tree counters (:mod:`dpref.mechanisms.trees`): named and explicit
splits of ε (or ρ) into the L level shares ``ε_h``, the optimised splits, and their checks.

``budget="uniform"`` gives each level :func:`~dpref.mechanisms.tree_arith.uniform_split`
``ε/L``; ``"mean"``/``"max"`` the split minimising the mean or the maximum of
``Var(out_t)`` over t ≤ T (numerically, rounded to rationals on a ``2^-32`` grid, kept
only when it beats uniform exactly); an explicit sequence must have L positive values
summing to ε exactly.  Level h's node scale is then
:func:`~dpref.mechanisms.tree_arith.level_scale` ``Δ/ε_h``.
"""

from __future__ import annotations

import functools
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt

from dpref.errors import DprefTypeError, ParameterError
from dpref.mechanisms.base import MAX_HORIZON, Mechanism
from dpref.mechanisms.tree_arith import (
    combined_variances,
    digit_sums,
    level_scale,
    max_digit_vectors,
    tree_levels,
    tree_objective,
    uniform_split,
)
from dpref.validation import check_exact, check_fraction, check_int_range, choose_from, fmt

__all__ = [
    "BUDGETS",
    "BUDGET_GRID",
    "MAX_BUDGET_STRING",
    "MAX_LEVEL_NOISE",
    "OBJECTIVES",
    "check_combine",
    "check_k",
    "design_level_budget",
    "level_budget",
    "validate_budget_form",
]

FloatArray = npt.NDArray[np.float64]

BUDGETS = ("uniform", "mean", "max")
"""The named level budgets (an explicit sequence of ε_h is the fourth kind)."""
OBJECTIVES = ("mean", "max")
"""What ``k="auto"`` and the optimised budgets minimise over t ≤ T."""
BUDGET_GRID = 2**32
"""An optimised split is rounded to multiples of ε/BUDGET_GRID (the largest share takes the
remainder, so the split sums to ε exactly)."""
MAX_LEVEL_NOISE = Fraction(2**1000)
"""Largest node scale (Laplace) or variance (Gaussian) a level budget may give a level:
a finite float, with room for the sums over at most 63 levels."""
MAX_BUDGET_STRING = 64_000
"""Longest budget string accepted (63 levels of at most 1000 characters each)."""


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
                f"budget={fmt(budget)}: one of {', '.join(BUDGETS)} or a 1-D sequence of "
                "per-level ε_h"
            )
        items = list(arr.tolist()) if arr.size <= levels + 1 else [None] * arr.size
    if len(items) != levels:
        raise ParameterError(
            f"budget={fmt(budget)}: {len(items)} per-level values, but the tree has "
            f"L={levels} levels"
        )
    values = tuple(check_exact("budget", v) for v in items)
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
    levels: int | None = None,
) -> tuple[str, tuple[Fraction, ...]]:
    """``(kind, (ε_0, …, ε_{L−1}))`` for a budget argument; the ε_h sum to ε exactly.

    ``budget`` is ``"uniform"``, ``"mean"``, ``"max"``, a string of L comma-separated
    numbers (``"1/2,1/4,1/4"``, the command-line form) or a sequence of L numbers.
    Raises :class:`~dpref.errors.DprefError` naming ``budget`` otherwise.  With
    ``gaussian=True`` the total is ρ (named ``total_name``) and the optimised splits
    minimise the Gaussian variance (:func:`_optimal_split`).  ``levels`` is the tree's
    level count (default :func:`~dpref.mechanisms.tree_arith.tree_levels`; a class passes
    its own :meth:`levels_at`).
    """
    if levels is None:
        levels = tree_levels(horizon, k)
    if isinstance(budget, str) and budget.strip() in BUDGETS:
        kind = budget.strip()
        if kind == "uniform":
            return kind, tuple([uniform_split(epsilon, levels)] * levels)
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
                f"budget={fmt(budget)}: {choose_from(budget, BUDGETS)} (or L per-level ε_h, "
                "comma-separated)"
            ) from None
    if (
        isinstance(budget, bool)
        or budget is None
        or not (isinstance(budget, str | list | tuple | np.ndarray))
    ):
        raise DprefTypeError(
            f"budget={fmt(budget)}: one of {', '.join(BUDGETS)} or a sequence of L per-level ε_h"
        )
    return "explicit", _check_budget_sequence(budget, levels, epsilon, total_name)


def design_level_budget(
    m: Mechanism, budget: Any, *, k: int, combine: bool, levels: int | None = None
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
        levels=levels,
    )
    shares = tuple(v * m.design_epsilon / total for v in values)
    what = "variance" if m.gaussian else "scale"
    for h, e in enumerate(shares):
        # a level's node scale Δ/ε_h (Laplace) or variance Δ²/(2ρ_h) (Gaussian) must be a
        # finite float with room for sums over the levels: refused here, naming budget,
        # rather than as 'value=…: too large for a float' at release or online()
        b = level_scale(m.sensitivity, e)
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


def validate_budget_form(budget: Any) -> None:
    """The budget's type, before any work (``k="auto"`` builds many budgets)."""
    if isinstance(budget, str):
        if len(budget) > MAX_BUDGET_STRING:
            raise ParameterError(
                f"budget={fmt(budget)}: at most {MAX_BUDGET_STRING} characters, got {len(budget)}"
            )
        return
    if isinstance(budget, bool) or not isinstance(budget, list | tuple | np.ndarray):
        raise DprefTypeError(
            f"budget={fmt(budget)}: one of {', '.join(BUDGETS)} or a sequence of L per-level ε_h"
        )
