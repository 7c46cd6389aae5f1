"""The statistical checks of ``dpref conform``: recovering node noise through the
reference's plan, and testing it — unbiasedness, the noise law (shape and independence),
the per-level scale with its confidence interval and implied ε, and the per-step
variance with the reference's exact fourth cumulant.

Each check returns a :class:`Check`; :mod:`dpref.audit.conformance.conform` runs them in order and
turns their results into a verdict.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import scipy.sparse as sp
import scipy.sparse.linalg as spla
from scipy import stats

from dpref.audit.pure.events import used_nodes
from dpref.audit.stats import exponential_scale_interval
from dpref.mechanisms import Mechanism
from dpref.plan import LinearPlan

__all__ = ["Check"]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True)
class Check:
    """One conformance check."""

    name: str
    """``crashes``, ``causality``, ``unbiased``, ``noise-law``, ``noise-scale``, ``variance``."""
    passed: bool | None
    """True/False, or None when the check could not be run (``detail`` says why)."""
    statistic: float | None
    """The test statistic (or the estimate)."""
    p_value: float | None
    """Bonferroni-adjusted p-value, when the check is a test."""
    interval: tuple[float, float] | None
    """Confidence interval, when the check is an estimate."""
    alpha: float
    """This check's false-alarm rate (0 for deterministic checks)."""
    detail: str
    """What was found, in words."""

    def as_dict(self) -> dict[str, Any]:
        """JSON-friendly dict."""
        return {
            "name": self.name,
            "passed": self.passed,
            "statistic": _fin(self.statistic),
            "p_value": _fin(self.p_value),
            "interval": None if self.interval is None else [_fin(v) for v in self.interval],
            "alpha": self.alpha,
            "detail": self.detail,
        }


def _fin(v: float | None) -> float | str | None:
    if v is None:
        return None
    return v if math.isfinite(v) else ("inf" if v > 0 else "-inf")


@dataclass(frozen=True, eq=False)
class _Recovery:
    """Exact node recovery ``z = R_used⁻¹ y − (Ax)_used`` for an invertible plan."""

    nodes: IntArray
    """Used nodes, in release order (the solve order)."""
    Ru: sp.csr_matrix
    """R restricted to those nodes (T × T)."""
    triangular: bool
    """Lower triangular with nonzero diagonal (sparse triangular solve)."""

    def noise(self, Y: FloatArray, node_values: FloatArray) -> FloatArray:
        """Recovered node noise, shape (runs, T)."""
        if self.triangular:
            V = spla.spsolve_triangular(self.Ru, Y.T, lower=True)
        else:
            V = np.linalg.solve(self.Ru.toarray(), Y.T)
        out: FloatArray = np.asarray(V).T - node_values[self.nodes]
        return out


def _recovery(plan: LinearPlan) -> _Recovery | None:
    used = used_nodes(plan)
    T = plan.horizon
    if used.size != T:
        return None
    order = used[np.argsort(plan.hi[used], kind="stable")]
    Ru = sp.csr_matrix(plan.R()[:, order])
    upper = sp.triu(Ru, k=1)
    upper.eliminate_zeros()
    diag = Ru.diagonal()
    if upper.nnz == 0 and np.all(diag != 0):
        return _Recovery(order, Ru, True)
    if T <= 2048:
        dense = Ru.toarray()
        if np.linalg.matrix_rank(dense) == T:
            return _Recovery(order, Ru, False)
    return None


def _levels(plan: LinearPlan, nodes: IntArray) -> tuple[IntArray, list[str]]:
    """Group nodes by (scale, ⌊log₂ length⌋): a group index per node and labels."""
    length = plan.hi[nodes] - plan.lo[nodes] + 1
    lvl = np.floor(np.log2(length)).astype(np.int64)
    key = plan.scale_idx[nodes] * 64 + lvl
    uniq, inv = np.unique(key, return_inverse=True)
    labels = []
    for k in uniq.tolist():
        s, lv = divmod(int(k), 64)
        b = plan.scale_table[s]
        size = f"length {1 << lv}" if lv == 0 else f"length {1 << lv}–{(1 << (lv + 1)) - 1}"
        labels.append(f"nodes of {size}, scale {b}")
    return np.asarray(inv, dtype=np.int64).ravel(), labels


def _implied_epsilon(
    plan: LinearPlan, nodes: IntArray, group: IntArray, ratios: FloatArray
) -> float:
    """``max_i Σ_n |a_{n,i}|Δ/(ρ_{g(n)} b_n)`` over the used nodes (float estimate).

    A's entries already carry the node weights ``w_n`` (and a decay's powers), so each
    node contributes ``Δ/b_n`` per unit of ``|a_{n,i}|`` — not the per-node ε ``Δ|w_n|/b_n``,
    which would count a weight twice (at ratio 1 this is the plan's privacy sum)."""
    per_node = np.array(
        [float(plan.sensitivity / plan.scale(n)) for n in range(plan.n_nodes)], dtype=np.float64
    )
    eps_n = np.zeros(plan.n_nodes)
    with np.errstate(divide="ignore"):
        eps_n[nodes] = per_node[nodes] / ratios[group]
    A = abs(plan.A())
    sums = np.asarray(A.T @ eps_n, dtype=np.float64)
    return float(sums.max())


def _unjudged_variance(variance: Check, a: float) -> Check:
    """The variance check when the noise structure differs: not judged, since less variance
    than the reference is then not a violation (the detail keeps what was measured)."""
    return Check(
        "variance",
        None,
        variance.statistic,
        variance.p_value,
        None,
        a,
        f"not judged: {variance.detail}, but the noise structure differs and less "
        "variance than the reference is not a violation",
    )


def _unbiased(Y: FloatArray, truth: FloatArray, a: float) -> Check:
    N, T = Y.shape
    err = Y - truth
    mean = err.mean(axis=0)
    sd = err.std(axis=0, ddof=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        tstat = mean / (sd / math.sqrt(N))
    tstat = np.where(sd > 0, tstat, np.where(np.abs(mean) > 1e-9, np.inf, 0.0))
    tstat = np.where(np.isfinite(mean), tstat, np.inf)
    p = 2 * stats.t.sf(np.abs(tstat), N - 1)
    k = int(np.argmin(p))
    p_adj = min(1.0, float(p[k]) * T)
    passed = p_adj >= a
    detail = (
        f"mean error consistent with 0 at all {T} steps (largest |t| = {abs(tstat[k]):.3g} "
        f"at t={k + 1})"
        if passed
        else f"biased at t={k + 1}: mean error {mean[k]:.4g} (t = {tstat[k]:.3g})"
    )
    return Check("unbiased", passed, float(abs(tstat[k])), p_adj, None, a, detail)


def _noise_checks(
    Y: FloatArray,
    x: FloatArray,
    plan: LinearPlan,
    rec: _Recovery,
    a: float,
    ref: Mechanism,
) -> tuple[
    Check, Check, dict[str, float], dict[str, float] | None, tuple[IntArray, _ScaleFit] | None
]:
    """Law (structure) and scale of the recovered node noise; when the law passes, the ε its
    scales imply and the nodes' level groups with the fit (for the output-level ε,
    :func:`~dpref.audit.conformance.conform_output.laplace_output_level`)."""
    node_values = plan.node_values(x)
    Z = rec.noise(Y, node_values)
    b = plan.scales[rec.nodes]
    U = Z / b
    group, labels = _levels(plan, rec.nodes)
    fit = _fit_scales(np.abs(np.where(np.isfinite(U), U, 0.0)), group, len(labels), a)
    law = _noise_law(U, group, labels, fit, a)
    scale = _noise_scale(fit, labels, a)
    implied = _implied_by_fit(plan, rec.nodes, group, fit, ref) if law.passed else None
    fitted = (group, fit) if law.passed else None
    return law, scale, {"estimate": fit.est, "low": fit.lo, "high": fit.hi}, implied, fitted


def _unusable_noise(
    U: FloatArray, ratios: FloatArray, labels: list[str], a: float, noun: str, dead_noun: str
) -> Check | None:
    """The failed noise-law check when the standardised noise cannot be tested — a
    non-finite value, or a group whose noise is exactly 0 in every run — else None."""
    if not np.isfinite(U).all():
        return Check("noise-law", False, None, 0.0, None, a, f"{noun} is not finite")
    dead = np.flatnonzero(ratios <= 0)
    if dead.size:
        label = labels[int(dead[0])]
        return Check(
            "noise-law",
            False,
            None,
            0.0,
            None,
            a,
            f"{dead_noun} of the {label} is exactly 0 in every run",
        )
    return None


def _noise_law(
    U: FloatArray, group: IntArray, labels: list[str], fit: _ScaleFit, a: float
) -> Check:
    """Is the recovered node noise independent Laplace on the reference's nodes, with one
    scale per level?  (The scale itself is the noise-scale check.)

    Two tests at ``a/2`` each: Kolmogorov–Smirnov of ``u / ρ̂_level`` against ``Lap(1)``
    (the shape; estimating the scales makes KS conservative), and an exact sign test of
    independence between every pair of nodes: under the null the signs of distinct
    nodes are independent fair coins, so the agreements of each pair over N runs are
    ``Bin(N, 1/2)`` exactly (Bonferroni over the pairs).
    """
    flat = U.ravel()
    unusable = _unusable_noise(
        U, fit.ratios, labels, a, "recovered node noise", "the recovered noise"
    )
    if unusable is not None:
        return unusable
    ks = stats.kstest((U / fit.ratios[group]).ravel(), stats.laplace.cdf)
    p_ks = float(ks.pvalue)
    p_ind, worst = _sign_independence(U)
    p = min(1.0, 2 * min(p_ks, p_ind))
    passed = p >= a
    detail = (
        f"recovered node noise / fitted level scale ~ Lap(1): KS D = {ks.statistic:.3g} "
        f"over {flat.size:,} values (p = {min(1.0, 2 * p_ks):.3g}); signs of node pairs "
        f"independent (largest sign correlation {worst:.3g}, p = {min(1.0, 2 * p_ind):.3g})"
    )
    if not passed:
        detail += " — not independent Laplace noise on the reference's nodes"
    return Check("noise-law", passed, float(ks.statistic), p, None, a, detail)


def _sign_independence(U: FloatArray) -> tuple[float, float]:
    """Bonferroni p-value of the exact pairwise sign test, and the largest |sign correlation|."""
    N, T = U.shape
    if T < 2:
        return 1.0, 0.0
    S = np.sign(U).astype(np.float32)  # ±1; sums of ≤ 2^24 of them are exact in float32
    C = np.abs(S.T @ S)
    np.fill_diagonal(C, 0.0)
    m = int(C.max())  # |agreements − disagreements|
    pairs = T * (T - 1) // 2
    if m == 0:
        return 1.0, 0.0
    k = (N + m) // 2  # agreements ≥ k, or ≤ N − k
    p_one = float(stats.binom.sf(k - 1, N, 0.5))
    return min(1.0, 2 * p_one * pairs), m / N


@dataclass(frozen=True, eq=False)
class _ScaleFit:
    """Scale ratio (target/reference) estimates and intervals: pooled, then per level."""

    est: float
    lo: float
    hi: float
    ratios: FloatArray
    """Per level (the pooled values when there is one level)."""
    lows: FloatArray
    highs: FloatArray


def _fit_scales(absU: FloatArray, group: IntArray, G: int, a: float) -> _ScaleFit:
    """``mean |u|`` with its exact Gamma interval, pooled and (G > 1) per level; Bonferroni."""
    n_int = 1 + (G if G > 1 else 0)
    a_each = a / n_int
    total = float(absU.sum())
    count = int(absU.size)
    est = total / count
    lo, hi = exponential_scale_interval(total, count, a_each)
    ratios = np.full(G, est)
    lows = np.full(G, lo)
    highs = np.full(G, hi)
    if G > 1:
        per_run = absU.sum(axis=0)
        for g in range(G):
            cols = group == g
            tot_g = float(per_run[cols].sum())
            cnt_g = int(cols.sum()) * absU.shape[0]
            ratios[g] = tot_g / cnt_g
            lows[g], highs[g] = exponential_scale_interval(tot_g, cnt_g, a_each)
    return _ScaleFit(est, lo, hi, ratios, lows, highs)


def _noise_scale(
    fit: _ScaleFit, labels: list[str], a: float, *, what: str = "scale", how: str = ""
) -> Check:
    """Pass when the pooled and every per-level interval contain 1.  ``what`` names the
    ratio (``scale`` of Laplace noise, ``σ`` of Gaussian noise), ``how`` how it was fitted."""
    est, lo, hi = fit.est, fit.lo, fit.hi
    G = len(labels)
    bad: list[str] = []
    if not lo <= 1.0 <= hi:
        bad.append(f"overall ratio {est:.5f} [{lo:.5f}, {hi:.5f}]")
    if G > 1:
        for g in range(G):
            if not fit.lows[g] <= 1.0 <= fit.highs[g]:
                bad.append(
                    f"{labels[g]}: {fit.ratios[g]:.5f} [{fit.lows[g]:.5f}, {fit.highs[g]:.5f}]"
                )
    passed = not bad
    detail = (
        f"{what} ratio target/reference = {est:.5f} [{lo:.5f}, {hi:.5f}]"
        + (f" ({how})" if how else "")
        + (f"; {G} levels each consistent with 1" if G > 1 and passed else "")
        + ("" if passed else "; off: " + "; ".join(bad[:4]))
    )
    return Check("noise-scale", passed, est, None, (lo, hi), a, detail)


def _implied_by_fit(
    plan: LinearPlan, nodes: IntArray, group: IntArray, fit: _ScaleFit, ref: Mechanism
) -> dict[str, float] | None:
    """The ε the fitted scales imply, when some level's interval lies below 1 (else None)."""
    G = fit.ratios.size
    est, ratios, lows, highs = fit.est, fit.ratios, fit.lows, fit.highs
    if bool(np.all((lows <= est) & (est <= highs))):
        # every level is consistent with one common ratio: use the pooled estimate
        ratios, lows, highs = np.full(G, est), np.full(G, fit.lo), np.full(G, fit.hi)
    if not bool(np.any(highs < 1.0)):
        return None
    eps = float(ref.declared_epsilon)
    return {
        "estimate": _implied_epsilon(plan, nodes, group, ratios),
        "low": _implied_epsilon(plan, nodes, group, np.minimum(highs, 1.0)),
        "high": _implied_epsilon(plan, nodes, group, np.maximum(lows, 1e-300)),
        "claimed": eps,
    }


def _variance_scale(Y: FloatArray, ref_var: FloatArray, a: float) -> tuple[Check, dict[str, float]]:
    """ρ² from per-step variances: per-run contributions are i.i.d., so a CLT interval.

    No ε is implied from it: without recovered node noise the structure is untested.
    """
    N = Y.shape[0]
    ok = ref_var > 0
    dev = (Y[:, ok] - Y[:, ok].mean(axis=0)) ** 2 / ref_var[ok]
    v = dev.mean(axis=1) * N / (N - 1)
    est2 = float(v.mean())
    se = float(v.std(ddof=1) / math.sqrt(N))
    zq = float(stats.norm.isf(a / 2))
    lo2, hi2 = max(est2 - zq * se, 0.0), est2 + zq * se
    est, lo, hi = math.sqrt(est2), math.sqrt(lo2), math.sqrt(hi2)
    passed = lo <= 1.0 <= hi
    detail = (
        f"scale ratio from per-step variances = {est:.5f} [{lo:.5f}, {hi:.5f}] "
        "(node noise not recoverable: structure untested, no ε implied)"
    )
    return (
        Check("noise-scale", passed, est, None, (lo, hi), a, detail),
        {"estimate": est, "low": lo, "high": hi},
    )


def _step_cumulants(ref: Mechanism, plan: LinearPlan) -> tuple[FloatArray, FloatArray]:
    """Per-step variance and fourth cumulant of the reference's noise, exactly as floats.

    ``y_t − (Qx)_t = Σ_n r_{t,n} z_n`` with independent node noise, so cumulants add:
    ``κ₂(t) = Σ r² κ₂(z_n)``, ``κ₄(t) = Σ r⁴ κ₄(z_n)``.  For ``Lap(b)``: ``κ₂ = 2b²``,
    ``κ₄ = 12b⁴``; for discrete Laplace they are summed from the pmf.
    """
    R = plan.R()
    scales = np.array([float(b) for b in plan.scale_table])
    if ref.noise == "laplace":
        k2 = 2 * scales**2
        k4 = 12 * scales**4
    else:
        k2 = np.empty(scales.size)
        k4 = np.empty(scales.size)
        for i, b in enumerate(scales):
            q = math.exp(-1.0 / b)
            zmax = math.ceil(45 * b) + 2  # q^zmax < e^-45
            z = np.arange(-zmax, zmax + 1, dtype=np.float64)
            pmf = (1 - q) / (1 + q) * q ** np.abs(z)
            m2 = float((pmf * z**2).sum())
            m4 = float((pmf * z**4).sum())
            k2[i], k4[i] = m2, m4 - 3 * m2 * m2
    node_k2 = k2[plan.scale_idx]
    node_k4 = k4[plan.scale_idx]
    R2 = R.multiply(R)
    return (
        np.asarray(R2 @ node_k2, dtype=np.float64),
        np.asarray(R2.multiply(R2) @ node_k4, dtype=np.float64),
    )


def _variance(Y: FloatArray, ref_var: FloatArray, ref_k4: FloatArray, a: float) -> Check:
    """One-sided test of each step's sample variance against the reference.

    Under conformance ``Var(s²) = κ₄/N + 2σ⁴/(N − 1)`` exactly, with the reference's
    σ² and κ₄ (not estimated from the sample, which would understate the spread
    exactly when s² is small).  The sample variance of sums of Laplace draws is
    right-skewed, so its lower tail is lighter than the normal one used here and the
    test is conservative.
    """
    N, T = Y.shape
    centred = Y - Y.mean(axis=0)
    s2 = (centred**2).sum(axis=0) / (N - 1)
    se = np.sqrt(np.maximum(ref_k4 / N + 2 * ref_var**2 / (N - 1), 0.0))
    with np.errstate(divide="ignore", invalid="ignore"):
        zs = (s2 - ref_var) / se
    exact_steps = np.flatnonzero((s2 <= 1e-12 * np.maximum(ref_var, 1e-300)) & (ref_var > 0))
    zs = np.where(se > 0, zs, np.where(s2 < ref_var, -np.inf, 0.0))
    p = stats.norm.cdf(zs)
    k = int(np.argmin(p))
    p_adj = min(1.0, float(p[k]) * T)
    if exact_steps.size:
        t = int(exact_steps[0]) + 1
        return Check(
            "variance",
            False,
            -math.inf,
            0.0,
            None,
            a,
            f"the output at t={t} has no noise at all (sample variance 0, reference "
            f"{ref_var[t - 1]:.4g})"
            + (f"; {exact_steps.size} such steps" if exact_steps.size > 1 else ""),
        )
    passed = p_adj >= a
    ratio = s2[k] / ref_var[k] if ref_var[k] > 0 else math.inf
    detail = (
        f"no step has less variance than the reference (lowest z = {zs[k]:.3g} at t={k + 1})"
        if passed
        else f"too little noise at t={k + 1}: variance {s2[k]:.4g} vs reference "
        f"{ref_var[k]:.4g} (ratio {ratio:.3g})"
    )
    return Check("variance", passed, float(zs[k]), p_adj, None, a, detail)
