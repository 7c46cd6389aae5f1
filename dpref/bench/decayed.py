"""Benchmarks of the decayed-sum mechanisms (docs/spec.md §2), for ``dpref bench``.

Targets (a miss fails ``dpref bench``):

* **flat error** of WindowSum, AllWindowSum and ExponentialSum: the exact variance's
  maximum over each decade of t, up to 10⁶ (every t), must not grow (≤ 1.001×);
  PolynomialSum (``allocation="decaying"``, the default): the maximum over the last
  decade (20 000 sampled t per decade) must stay below the certified
  ``variance_bound()`` — its maxima still rise a little (< 0.3 % in the last decade)
  as later, ever smaller instances start, towards that bound;
* **empirical/exact variance** ≈ 1 (within 5%) of batch releases at T = 10⁶
  (WindowSum, AllWindowSum, ExponentialSum);
* **speed**: batch release of 10⁶ items against the same number of Laplace draws plus
  a cumsum (target ≤ 5×).

Information only (``info`` rows: shown, never failing the run):

* PolynomialSum's max variance per decade under ``allocation="uniform"`` (20 000
  sampled t per decade): it grows with t by design, one full-size noisy node per active
  instance under the single λ of docs/spec.md §2.4;
* **naive alternatives** at the same ε on the same stream (T = 2¹⁸): randomized
  response per item (debiased) and Simple II (``Lap(Δ/ε)`` per item) summed with the
  decay — the error ratio.  The naive estimator legitimately wins in some regimes
  (PolynomialSum c = 11/10 loses ≈ 27–40× to per-item noise with the decaying
  allocation, AllWindowSum δ = 3/2 1.4–2× at W = 2¹⁶);
* the **lower bound** (patent Theorem 7) printed beside the measured worst error over
  q queries.

Memory: the whole run must fit ``dpref bench``'s 1 GiB.  The largest release here is
PolynomialSum's in the naive comparison, c = 11/10 at T = 2¹⁸: 50 M nodes, whose
noise alone is 400 MB (PolynomialSum at T = 10⁶ with c = 3/2 has 290 M nodes, 2.3 GB
of noise, so it is never released here; its flat-error row uses ``variance_at``).
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np
from scipy.signal import fftconvolve

from dpref.bench import best_of
from dpref.lower_bounds import lower_bound
from dpref.mechanisms.decayed import AllWindowSum, ExponentialSum, PolynomialSum, WindowSum

__all__ = ["decayed_bench"]

Row = dict[str, Any]


def _mechs() -> list[Any]:
    return [
        WindowSum(window=1000, epsilon=1),
        AllWindowSum(delta=Fraction(3, 2), window=1000, epsilon=1),
        ExponentialSum(alpha=Fraction(999, 1000), epsilon=1),
        PolynomialSum(c=Fraction(3, 2), beta=Fraction(1, 10), epsilon=1),
        PolynomialSum(c=Fraction(3, 2), beta=Fraction(1, 10), epsilon=1, allocation="uniform"),
    ]


def _label(m: Any) -> str:
    if isinstance(m, PolynomialSum):
        return f"PolynomialSum({m.allocation})"
    return type(m).__name__


def _decay_weights(m: Any, lags: int) -> np.ndarray[Any, Any]:
    """g(0..lags−1) of the target the mechanism is unbiased for (g' for PolynomialSum)."""
    d = np.arange(lags)
    if isinstance(m, WindowSum | AllWindowSum):
        return (d < (m.window or lags)).astype(float)
    if isinstance(m, ExponentialSum):
        return float(m.alpha) ** d.astype(float)
    out = np.zeros(lags)
    for inst in m.instances(lags + 1):
        out[inst.lo_lag - 1 + 1 : min(inst.hi_lag, lags - 1) + 1] = float(inst.weight)
    out[0] = 1.0
    return out


def _flat_rows(quick: bool) -> list[Row]:
    rows = []
    top = 5 if quick else 6
    rng = np.random.default_rng(0)
    for m in _mechs():
        per_decade = []
        for e in range(3, top):
            lo, hi = 10**e, 10 ** (e + 1)
            if isinstance(m, PolynomialSum):
                t = np.unique(np.concatenate([rng.integers(lo, hi, 20_000), [lo, hi - 1]]))
            else:
                t = np.arange(lo, hi)
            per_decade.append(float(m.variance_at(t).max()))
        first, last = per_decade[0], per_decade[-1]
        by_decade = "max Var(t) by decade: " + ", ".join(f"{v:.4g}" for v in per_decade)
        if isinstance(m, PolynomialSum) and m.allocation == "decaying":
            bound = float(m.variance_bound())
            rows.append(
                {
                    "name": f"{_label(m)} max Var per decade 10^3..10^{top} vs its bound",
                    "value": f"{last:.4g}",
                    "baseline": f"{bound:.4g}",
                    "ratio": last / bound,
                    "target": "<= 1x (certified sup_t Var)",
                    "ok": last <= bound,
                    "detail": by_decade + f" (first→last ×{last / first:.4f})",
                }
            )
            continue
        grows = isinstance(m, PolynomialSum)  # uniform: by design, information only
        rows.append(
            {
                "name": f"{_label(m)} max Var per decade 10^3..10^{top}",
                "value": f"{last:.4g}",
                "baseline": f"{first:.4g}",
                "ratio": last / first,
                "target": "<= 1.001x",
                "ok": last <= first * (1 + 1e-3),
                "detail": by_decade
                + (
                    "; grows with the active instances by design (allocation='uniform', "
                    "docs/spec.md §2.4): information, not a target"
                    if grows
                    else ""
                ),
                **({"info": True} if grows else {}),
            }
        )
    return rows


def _empirical_rows(quick: bool) -> list[Row]:
    T = 100_000 if quick else 1_000_000
    runs = 8
    x = np.random.default_rng(1).integers(0, 2, T).astype(float)
    rows = []
    for m in _mechs()[:3]:
        truth = m.target(x)
        sq = np.zeros(T)
        gen = np.random.default_rng(2)
        for _ in range(runs):
            sq += (m.release(x, rng=gen) - truth) ** 2
        window = slice(T - T // 10, T)  # the last decade's tenth: t ∈ [0.9T, T]
        emp = float(sq[window].mean() / runs)
        exact = float(m.variance_at(np.arange(T - T // 10 + 1, T + 1)).mean())
        n = runs * (T // 10)
        rows.append(
            {
                "name": f"{type(m).__name__} empirical/exact Var, t in [0.9T, T], T={T:,}",
                "value": f"{emp:.4g}",
                "baseline": f"{exact:.4g}",
                "ratio": emp / exact,
                "target": "≈ 1",
                "ok": abs(emp / exact - 1) < 0.05,
                "detail": f"{runs} runs × {T // 10:,} steps ({n:,} correlated squared errors)",
            }
        )
    return rows


def _speed_rows(quick: bool) -> list[Row]:
    T = 100_000 if quick else 1_000_000
    x = np.random.default_rng(3).integers(0, 2, T).astype(float)
    rows = []
    for m in (WindowSum(window=1000, epsilon=1), ExponentialSum(alpha=Fraction(9, 10), epsilon=1)):
        n_nodes = m.nodes(T).size

        def baseline(n: int = n_nodes) -> None:
            np.random.default_rng(4).laplace(0.0, 1.0, n) + 0.0
            np.cumsum(x)

        def subject(mech: Any = m) -> None:
            mech.release(x, rng=4)

        subject()
        base = best_of(baseline, 3)
        value = best_of(subject, 3)
        rows.append(
            {
                "name": f"{type(m).__name__}.release T={T:,}",
                "value": f"{value:.4g}s",
                "baseline": f"{base:.4g}s",
                "ratio": value / base,
                "target": "<= 5x",
                "ok": value / base <= 5,
                "detail": f"baseline: {n_nodes:,} Laplace draws + one cumsum",
            }
        )
    return rows


def _naive_mechs() -> list[Any]:
    """Long windows / slow decay: where the tree's polylog error should beat Θ(√energy)."""
    return [
        WindowSum(window=1 << 16, epsilon=1),
        AllWindowSum(delta=Fraction(3, 2), window=1 << 16, epsilon=1),
        ExponentialSum(alpha=1 - Fraction(1, 1 << 16), epsilon=1),
        PolynomialSum(c=Fraction(11, 10), beta=Fraction(1, 10), epsilon=1),
    ]


def _naive_rows(quick: bool) -> list[Row]:
    T = 1 << 18
    x = np.random.default_rng(5).integers(0, 2, T).astype(float)
    eps = 1.0
    p = np.exp(eps) / (1 + np.exp(eps))
    rr_item_var = p * (1 - p) / (2 * p - 1) ** 2
    lap_item_var = 2.0 / eps**2
    rows = []
    for m in _naive_mechs():
        g = _decay_weights(m, T)
        energy = float(np.sum(g**2))  # Σ g(d)²: the naive estimators' variance factor
        var_m = float(m.variance_at(np.arange(T - 1000, T + 1)).max())
        # empirical check of the naive ones on the same stream (one run each)
        gen = np.random.default_rng(6)
        keep = gen.random(T) < p
        y = np.where(keep, x, 1 - x)
        debiased = (y - (1 - p)) / (2 * p - 1)
        noisy = x + gen.laplace(0, 1 / eps, T)
        gg = g[: min(T, g.size)]
        last = slice(T - 1000, T)
        f_true = fftconvolve(x, gg)[:T][last]
        err_rr = fftconvolve(debiased, gg)[:T][last] - f_true
        err_s2 = fftconvolve(noisy, gg)[:T][last] - f_true
        ratio_rr = np.sqrt(var_m / (rr_item_var * energy))
        ratio_s2 = np.sqrt(var_m / (lap_item_var * energy))
        lb = lower_bound(m, eps, 1000)
        err_m = m.release(x, rng=7)[last] - m.target(x)[last]
        rows.append(
            {
                "name": f"{type(m).__name__} RMSE / randomized response",
                "value": f"{np.sqrt(var_m):.4g}",
                "baseline": f"{np.sqrt(rr_item_var * energy):.4g}",
                "ratio": float(ratio_rr),
                "target": "< 1x (tree wins)",
                "ok": bool(ratio_rr < 1),
                "info": True,
                "detail": (
                    f"exact worst std vs RR std (Σg² = {energy:.4g}); one run's RMS errors on "
                    f"the last 1000 t: ours {np.sqrt(np.mean(err_m**2)):.4g}, "
                    f"RR {np.sqrt(np.mean(err_rr**2)):.4g}"
                ),
            }
        )
        rows.append(
            {
                "name": f"{type(m).__name__} RMSE / Simple II (Lap per item)",
                "value": f"{np.sqrt(var_m):.4g}",
                "baseline": f"{np.sqrt(lap_item_var * energy):.4g}",
                "ratio": float(ratio_s2),
                "target": "< 1x (tree wins)",
                "ok": bool(ratio_s2 < 1),
                "info": True,
                "detail": f"measured Simple II RMS error {np.sqrt(np.mean(err_s2**2)):.4g}",
            }
        )
        worst = float(np.max(np.abs(err_m)))
        rows.append(
            {
                "name": f"{type(m).__name__} worst error over q=1000 vs lower bound",
                "value": f"{worst:.4g}",
                "baseline": f"{float(lb.value):.4g}",
                "ratio": worst / float(lb.value),
                "target": ">= 1x",
                "ok": worst >= float(lb.value),
                "info": True,
                "detail": lb.formula
                + (
                    "; PolynomialSum is bicriteria, the bound is additive-only"
                    if isinstance(m, PolynomialSum)
                    else ""
                ),
            }
        )
    return rows


def decayed_bench(quick: bool = False) -> list[Row]:
    """Flat error over t, speed, naive alternatives and lower bounds (docs/spec.md §2)."""
    return _flat_rows(quick) + _empirical_rows(quick) + _speed_rows(quick) + _naive_rows(quick)
