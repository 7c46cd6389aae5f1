"""``decayed``: the decayed sums against their naive alternatives and their lower bounds.

For each decay — a sliding window of W items, exponential ``g(i) = αⁱ``, polynomial
``g(i) = (i+1)^{−c}`` — and a range of its parameter, at ε = 1 on a stream of bits:

* the tree mechanism's exact worst variance ``max_t Var(t)`` (WindowSum and AllWindowSum
  with δ = 3/2, ExponentialSum, PolynomialSum with β = 1/10 and the decaying allocation),
  from ``variance_at`` over ``t ≤ 3W`` (window: periodic from t = W on), ``t < 2^(k+3)``
  for ``α = 1 − 2^−k`` (the variance is bounded in t and its supremum is approached at
  ``t = 2^m − 1``) and ``t ≤ T_poly`` (polynomial: still rising, very slowly);
* the two naive estimators of docs/decayed.md ("Against the naive alternatives") — every
  item released once with ``Lap(Δ/ε)`` (Simple II's input perturbation) or by randomized
  response (debiased), then summed with the decay: ``Var(t) = v·Σ_{d<t} g(d)²`` with
  ``v = 2(Δ/ε)²`` or ``p(1−p)/(2p−1)²``, ``p = e^ε/(1+e^ε)``; their worst t is the largest;
* the lower bound of patent Theorem 7 (:func:`dpref.lower_bound`, q = 1000 queries): no
  ε-DP algorithm is within C of F on q queries w.p. 2/3.

The figures compare errors: ``√max_t Var`` for the estimators and C for the bound.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt

from dpref.reproduce.common import Context, Outcome, save_figure, write_csv

__all__ = ["run"]

EPSILON = Fraction(1)
Q = 1000
"""Queries of the lower bound."""
BETA = Fraction(1, 10)
DELTA = Fraction(3, 2)
FULL = {
    "window": [2**k for k in range(2, 17)],
    "exponential": list(range(1, 17)),
    "polynomial": [Fraction(11, 10), Fraction(5, 4), Fraction(3, 2), Fraction(2), Fraction(3)],
    "poly_T": 2**12,
}
QUICK = {
    "window": [2**k for k in range(2, 7)],
    "exponential": list(range(1, 5)),
    "polynomial": [Fraction(3, 2), Fraction(3)],
    "poly_T": 2**6,
}

FloatArray = npt.NDArray[np.float64]


def _item_variances() -> dict[str, float]:
    eps = float(EPSILON)
    p = math.exp(eps) / (1 + math.exp(eps))
    return {
        "laplace per item": 2.0 / eps**2,
        "randomized response": p * (1 - p) / (2 * p - 1) ** 2,
    }


def run(ctx: Context) -> Outcome:
    """Sweep each decay's parameter; write ``decayed.csv`` and ``decayed-*.png``."""
    from dpref import AllWindowSum, ExponentialSum, PolynomialSum, WindowSum, lower_bound
    from dpref.lower_bounds import exponential_decay, polynomial_decay, window_decay

    p: dict[str, Any] = QUICK if ctx.quick else FULL
    out = Outcome(
        parameters={
            "epsilon": str(EPSILON),
            "q": Q,
            "window": p["window"],
            "exponential_alpha": [f"1 - 2^-{k}" for k in p["exponential"]],
            "polynomial_c": [str(c) for c in p["polynomial"]],
            "polynomial_beta": str(BETA),
            "polynomial_allocation": "decaying",
            "polynomial_max_over_t_up_to": p["poly_T"],
            "allwindow_delta": str(DELTA),
        }
    )
    naive = _item_variances()
    rows: list[tuple[Any, ...]] = []

    def add(
        decay: str, param: str, x: float, estimator: str, var: float | None, err: float
    ) -> None:
        rows.append((decay, param, x, estimator, "" if var is None else var, err))

    for W in p["window"]:
        t = np.arange(1, 3 * W + 1, dtype=np.int64)
        for label, m in (
            ("WindowSum", WindowSum(window=W, epsilon=EPSILON)),
            (f"AllWindowSum(δ={DELTA})", AllWindowSum(delta=DELTA, window=W, epsilon=EPSILON)),
        ):
            v = float(m.variance_at(t).max())
            add("window", str(W), W, label, v, math.sqrt(v))
        energy = float(W)  # Σ g² = W
        for label, unit in naive.items():
            add("window", str(W), W, label, unit * energy, math.sqrt(unit * energy))
        lb = float(lower_bound(window_decay(W), EPSILON, Q).value)
        add("window", str(W), W, f"lower bound C (q={Q})", None, lb)
    for k in p["exponential"]:
        alpha = 1 - Fraction(1, 2**k)
        em = ExponentialSum(alpha=alpha, epsilon=EPSILON)
        v = float(em.variance_at(np.arange(1, 2 ** (k + 3), dtype=np.int64)).max())
        x = float(2**k)  # 1/(1 − α)
        add("exponential", f"1-2^-{k}", x, "ExponentialSum", v, math.sqrt(v))
        energy = float(1 / (1 - alpha**2))  # Σ_{d≥0} α^{2d}, the supremum over t
        for label, unit in naive.items():
            add("exponential", f"1-2^-{k}", x, label, unit * energy, math.sqrt(unit * energy))
        lb = float(lower_bound(exponential_decay(alpha), EPSILON, Q).value)
        add("exponential", f"1-2^-{k}", x, f"lower bound C (q={Q})", None, lb)
    T = p["poly_T"]
    for c in p["polynomial"]:
        pm = PolynomialSum(c=c, beta=BETA, epsilon=EPSILON)
        v = float(pm.variance_at(np.arange(1, T + 1, dtype=np.int64)).max())
        add("polynomial", str(c), float(c), f"PolynomialSum(β={BETA})", v, math.sqrt(v))
        d = np.arange(1, T + 1, dtype=np.float64)
        energy = float(np.sum(d ** (-2.0 * float(c))))  # Σ_{d<T} g(d)² of the true g
        for label, unit in naive.items():
            add("polynomial", str(c), float(c), label, unit * energy, math.sqrt(unit * energy))
        lb = float(lower_bound(polynomial_decay(c), EPSILON, Q).value)
        add("polynomial", str(c), float(c), f"lower bound C (q={Q})", None, lb)
    write_csv(
        ctx,
        "decayed.csv",
        ("decay", "parameter", "x", "estimator", "max_variance", "error"),
        rows,
        out,
    )
    out.headline = _headline(rows)
    out.lines.append(
        f"decayed: ε = {EPSILON}, tree mechanisms vs per-item Laplace and randomized response, "
        f"lower bound with q = {Q}"
    )
    for decay, h in out.headline.items():
        out.lines.append(
            f"  {decay}: {h['tree']} below per-item Laplace {_from(h, 'laplace')}, "
            f"below randomized response {_from(h, 'rr')}"
        )
        at = dict(h["at_largest"])
        largest = at.pop("parameter")
        out.lines.append(
            f"    at {h['parameter']} = {largest}: "
            + ", ".join(f"{k} {v:.2f}" for k, v in at.items())
        )
    if ctx.plots:
        for decay in ("window", "exponential", "polynomial"):
            _figure(ctx, decay, [r for r in rows if r[0] == decay], out)
    return out


def _from(h: dict[str, Any], which: str) -> str:
    first = h[f"tree_beats_{which}_from"]
    return (
        "at no value tried" if first == "never" else f"for every {h['parameter']} ≥ {first} tried"
    )


def _headline(rows: list[tuple[Any, ...]]) -> dict[str, Any]:
    """Per decay, the smallest parameter from which the (first) tree mechanism's worst error
    stays below each naive estimator's ("never" when it does not at the largest)."""
    out: dict[str, Any] = {}
    names = {"window": "W", "exponential": "α", "polynomial": "c"}
    for decay, pname in names.items():
        mine = [r for r in rows if r[0] == decay]
        tree = mine[0][3]
        params = list(dict.fromkeys(r[1] for r in mine))
        err = {(r[1], r[3]): r[5] for r in mine}
        entry: dict[str, Any] = {"tree": tree, "parameter": pname}
        for key, naive in (
            ("tree_beats_laplace_from", "laplace per item"),
            ("tree_beats_rr_from", "randomized response"),
        ):
            wins = [err[(q, tree)] < err[(q, naive)] for q in params]
            first = None
            if wins and wins[-1]:
                last_loss = max((i for i, w in enumerate(wins) if not w), default=-1)
                first = params[last_loss + 1]
            entry[key] = first if first is not None else "never"
        largest = params[-1]
        entry["at_largest"] = {
            "parameter": largest,
            **{r[3]: round(r[5], 3) for r in mine if r[1] == largest},
        }
        out[decay] = entry
    return out


def _figure(ctx: Context, decay: str, rows: list[tuple[Any, ...]], out: Outcome) -> None:
    from dpref.reproduce.common import pyplot

    plt = pyplot()
    fig, ax = plt.subplots(figsize=(7, 4.2))
    estimators = list(dict.fromkeys(r[3] for r in rows))
    for est in estimators:
        pts = [(r[2], r[5]) for r in rows if r[3] == est]
        style = {"ls": ":", "color": "black"} if est.startswith("lower bound") else {}
        ax.plot([a for a, _ in pts], [b for _, b in pts], marker=".", label=est, **style)
    ax.set_yscale("log")
    if decay == "window":
        ax.set_xscale("log", base=2)
        ax.set_xlabel("window W")
    elif decay == "exponential":
        ax.set_xscale("log", base=2)
        ax.set_xlabel("1/(1 − α)")
    else:
        ax.set_xlabel(f"c in g(i) = (i+1)^−c (β = {BETA})")
    ax.set_ylabel("√(max_t Var)   /   lower bound C")
    ax.set_title(f"{decay} decay, ε = {EPSILON}", fontsize=10)
    ax.legend(fontsize=7)
    fig.tight_layout()
    save_figure(ctx, fig, f"decayed-{decay}.png", out)
