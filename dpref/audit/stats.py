"""Confidence bounds used by the audit and the conformance test.

* **Clopper–Pearson** (exact binomial) one-sided bounds: for ``c`` successes in
  ``n`` trials, ``P[p < beta.ppf(a, c, n − c + 1)] ≤ a`` and
  ``P[p > beta.ppf(1 − a, c + 1, n − c)] ≤ a`` (Clopper and Pearson 1934).  The
  privacy-loss lower bound ``ln(p̂₁_low / p̂₂_high)`` of DP-Sniper and Delta-Siege is
  built from these, with the confidence split across both proportions and every
  event evaluated (Bonferroni).
* **Wilson** score bounds: a fast closed-form approximation used only to *rank*
  candidate events on the selection split (no guarantee is claimed from them).
* **Gamma** bounds for an exponential scale: if ``|z_1|, …, |z_n|`` are i.i.d.
  ``Exp(s)`` (the absolute values of ``Lap(s)`` draws), ``S = Σ|z_i| ~ Gamma(n, s)``,
  so ``[S / G⁻¹(1 − a/2), S / G⁻¹(a/2)]`` with ``G = Gamma(n, 1)`` covers ``s`` with
  probability ``1 − a`` exactly.

References
----------
.. [1] C. J. Clopper, E. S. Pearson. "The use of confidence or fiducial limits
   illustrated in the case of the binomial." Biometrika 26(4), 1934.
.. [2] B. Bichsel, S. Steffen, I. Bogunovic, M. Vechev. "DP-Sniper: Black-Box
   Discovery of Differential Privacy Violations using Classifiers." IEEE S&P 2021.
.. [3] E. B. Wilson. "Probable inference, the law of succession, and statistical
   inference." JASA 22(158), 1927.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt
from scipy import stats

__all__ = [
    "cp_lower",
    "cp_upper",
    "epsilon_lower_bound",
    "exponential_scale_interval",
    "wilson_log_score",
]

FloatArray = npt.NDArray[np.float64]


SHAVE = 1e-9
"""Relative amount a float lower bound is lowered by before it is reported or compared
with a claim: the log, ndtri and beta quantiles behind it round either way (about ulp-size
errors), and a bound must never exceed the real value it stands for."""


def shave_down(value: float) -> float:
    """``value − SHAVE·max(1, |value|)`` (infinities unchanged): a float lower bound made safe
    against the rounding of the computation that produced it."""
    if math.isinf(value) or math.isnan(value):
        return value
    return value - SHAVE * max(1.0, abs(value))


def cp_lower(successes: int, trials: int, a: float) -> float:
    """One-sided Clopper–Pearson lower bound on p at level ``a`` (0 when no successes)."""
    if successes <= 0:
        return 0.0
    return float(stats.beta.ppf(a, successes, trials - successes + 1))


def cp_upper(successes: int, trials: int, a: float) -> float:
    """One-sided Clopper–Pearson upper bound on p at level ``a`` (1 when all succeed)."""
    if successes >= trials:
        return 1.0
    return float(stats.beta.ppf(1.0 - a, successes + 1, trials - successes))


def epsilon_lower_bound(c1: int, n1: int, c2: int, n2: int, a: float) -> float:
    """``ln(p₁_low / p₂_high)`` with each one-sided bound at level ``a``.

    With probability at least ``1 − 2a`` the true ``ln(p₁/p₂)`` is at least this
    value (union bound over the two proportions); the float is lowered by
    :func:`shave_down`.  Returns ``-inf`` when ``c1 = 0``.
    """
    lo = cp_lower(c1, n1, a)
    hi = cp_upper(c2, n2, a)
    if lo <= 0.0:
        return -math.inf
    return shave_down(math.log(lo) - math.log(hi))


def wilson_log_score(c1: FloatArray, n1: float, c2: FloatArray, n2: float, z: float) -> FloatArray:
    """Approximate ``ln(p₁_low / p₂_high)`` from Wilson bounds, vectorised.

    Used to rank candidate events; counts may be fractional (projected from the
    selection split to the size of the test split).
    """
    z2 = z * z

    def bound(c: FloatArray, n: float, sign: float) -> FloatArray:
        p = c / n
        centre = (p + z2 / (2 * n)) / (1 + z2 / n)
        half = z * np.sqrt(np.maximum(p * (1 - p) / n + z2 / (4 * n * n), 0.0)) / (1 + z2 / n)
        out: FloatArray = centre + sign * half
        return out

    lo = np.maximum(bound(c1, n1, -1.0), 1e-300)
    hi = np.minimum(bound(c2, n2, 1.0), 1.0)
    score: FloatArray = np.log(lo) - np.log(np.maximum(hi, 1e-300))
    return np.where(c1 > 0, score, -np.inf)


def exponential_scale_interval(total: float, count: int, a: float) -> tuple[float, float]:
    """Exact two-sided ``1 − a`` interval for s given ``Σ|z_i| = total`` of n ``Exp(s)``."""
    if count <= 0:
        return (0.0, math.inf)
    hi_q = float(stats.gamma.ppf(1.0 - a / 2, count))
    lo_q = float(stats.gamma.ppf(a / 2, count))
    return (total / hi_q, total / lo_q if lo_q > 0 else math.inf)
