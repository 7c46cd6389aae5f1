"""Per-level budget shares of the BLUE tree optimised for its mean variance
(:mod:`dpref.mechanisms.blue`).

The mean of ``Var(out_t)`` over t ≤ T is a smooth function of the level shares ``q_j``
(node variances ``2/q_j²`` for Laplace, ``∝ 1/q_j`` for Gaussian, at Δ = ε = 1: the split
does not depend on ε, ρ or Δ).  It is evaluated by the moment DP of
:func:`~dpref.mechanisms.blue.variance.mean_exact` run in floats, minimised by Nelder–Mead
over softmax logits from the uniform split (to a relative 10⁻⁷ of the mean), rounded to
multiples of ``1/BUDGET_GRID`` (at least 4 of them) with the largest share taking the
remainder (so the shares sum to 1 exactly), and kept only when its *exact* mean beats the
uniform split's.
"""

from __future__ import annotations

import functools
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt

from dpref.mechanisms.blue.decode import exact_weights
from dpref.mechanisms.blue.hierarchy import layout
from dpref.mechanisms.blue.variance import mean_exact
from dpref.mechanisms.tree_budgets import BUDGET_GRID

__all__ = ["mean_optimal_split"]

FloatArray = npt.NDArray[np.float64]


def _node_var(q: Any, gaussian: bool) -> Any:
    """The node variance of a level with share q at Δ = ε (ρ) = 1 (up to a constant)."""
    return 1 / q if gaussian else 2 / (q * q)


def _mean(horizon: int, k: int, kind: str, shares: Any, gaussian: bool) -> Any:
    lay = layout(horizon, k, kind)
    s = tuple(
        _node_var(shares[j], gaussian) if j < lay.levels else None for j in range(lay.top + 1)
    )
    return mean_exact(exact_weights(lay, s))


@functools.lru_cache(maxsize=64)
def mean_optimal_split(horizon: int, k: int, kind: str, gaussian: bool) -> tuple[Fraction, ...]:
    """Shares ``q_j`` (summing to 1 exactly) minimising the mean variance (module doc)."""
    from scipy.optimize import minimize

    levels = layout(horizon, k, kind).levels
    uniform = tuple([Fraction(1, levels)] * levels)
    if levels == 1:
        return uniform

    def objective(theta: FloatArray) -> float:
        e = np.exp(np.clip(theta - theta.max(), -60.0, 0.0))
        q = e / e.sum()
        return float(_mean(horizon, k, kind, [float(v) for v in q], gaussian))

    start = objective(np.zeros(levels))
    res = minimize(
        objective,
        np.zeros(levels),
        method="Nelder-Mead",
        options={"maxiter": 600, "xatol": 1e-3, "fatol": 1e-7 * start},
    )
    theta = np.asarray(res.x, dtype=np.float64)
    e = np.exp(np.clip(theta - theta.max(), -60.0, 0.0))
    x = e / e.sum()
    if not np.all(np.isfinite(x)):
        return uniform
    grid = [max(4, round(float(v) * BUDGET_GRID)) for v in x]
    big = int(np.argmax(x))
    grid[big] = 0
    grid[big] = BUDGET_GRID - sum(grid)
    if grid[big] < 4:
        return uniform
    split = tuple(Fraction(g, BUDGET_GRID) for g in grid)
    exact = _mean(horizon, k, kind, split, gaussian)
    return split if exact < _mean(horizon, k, kind, uniform, gaussian) else uniform
