"""Candidate events for the privacy-loss audit.

An *event* is a measurable set of outputs ``E ⊆ ℝ^T``; for any event and any
neighbouring streams ``x, x′`` an ε-DP mechanism satisfies
``P[M(x) ∈ E] ≤ e^ε P[M(x′) ∈ E]``, so every event whose two probabilities are
bounded from samples gives a lower bound on ε.  Three families are searched:

* **black-box**: conjunctions of half-lines ``f ≥ a`` / ``f < a`` on *features*
  ``f`` of the output — the coordinates ``y_t`` and differences ``y_t − y_s``
  (a difference of two prefix outputs isolates the noise of the nodes between
  them: for Simple II ``y_t − y_{t−1}`` is one noisy item, for the binary mechanism
  ``y_t − y_{t − 2^{lsb(t)}}`` is one noisy node).  They are grown greedily on the
  selection split, each step adding the half-line that most improves a projected
  lower bound (StatDP searches single half-lines only; DP-Sniper trains a
  classifier);
* **projections** (black-box, :func:`best_projections`): half-lines ``s(y) ≥ τ`` of a
  statistic fitted on the selection split — mean-difference and Fisher directions
  and the independent-Laplace score — for a loss spread thinly over many outputs
  (Simple I), which no short conjunction sees;
* **plan-aware** (when a linear plan is known, docs/spec.md §0): the log-likelihood ratio of
  the node noise, thresholded.  The noisy nodes are recovered as ``v = R⁺ y`` (exact
  when R restricted to its used nodes is invertible, as for every counting
  mechanism), and for Laplace noise ``ln p_x(v)/p_{x′}(v) = Σ_n (|v_n − μ′_n| −
  |v_n − μ_n|)/b_n`` with ``μ = Ax``, ``μ′ = Ax′``.  By the Neyman–Pearson lemma
  the level sets of this ratio are the optimal events; its maximum
  ``Σ_n |μ_n − μ′_n|/b_n`` is reached with positive probability.

Validity never depends on how an event was found: events are chosen on one split of
the samples and their probabilities estimated on a fresh split.

References
----------
.. [1] Z. Ding, Y. Wang, G. Wang, D. Zhang, D. Kifer. "Detecting Violations of
   Differential Privacy." CCS 2018 (StatDP).
.. [2] B. Bichsel, S. Steffen, I. Bogunovic, M. Vechev. "DP-Sniper." IEEE S&P 2021.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import scipy.sparse as sp

from dpref.audit.stats import wilson_log_score
from dpref.plan import LinearPlan

__all__ = [
    "Condition",
    "ConjunctionEvent",
    "LikelihoodRatioEvent",
    "PlanRecovery",
    "Projection",
    "ProjectionEvent",
    "best_llr_threshold",
    "best_projections",
    "feature_pairs",
    "fit_projections",
    "greedy_conjunctions",
]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

_QUANTILE_LEVELS = np.array(
    [0.001, 0.004, 0.01, 0.02, 0.04, 0.07, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5]
)
_LEVELS = np.unique(np.concatenate([_QUANTILE_LEVELS, 1.0 - _QUANTILE_LEVELS]))
"""Quantile levels of the pooled selection sample used as half-line thresholds."""


def feature_pairs(horizon: int) -> IntArray:
    """Features as index pairs ``(i, j)`` meaning ``y_i − y_j`` (``j = −1``: ``y_i``).

    Up to T = 16: every coordinate and every difference (``T(T+1)/2`` features);
    beyond: coordinates, consecutive differences and binary-parent differences
    ``y_t − y_{t − 2^{lsb(t)}}`` (at most ``3T``).
    """
    T = horizon
    pairs: list[tuple[int, int]] = [(i, -1) for i in range(T)]
    if T <= 16:
        pairs += [(i, j) for i in range(T) for j in range(i)]
    else:
        seen = set()
        for t in range(2, T + 1):
            for s in (t - 1, t - (t & -t)):
                if s >= 1 and (t, s) not in seen:
                    seen.add((t, s))
                    pairs.append((t - 1, s - 1))
    return np.array(pairs, dtype=np.int64).reshape(-1, 2)


def compute_features(Y: FloatArray, pairs: IntArray) -> FloatArray:
    """The feature matrix (n × F) of outputs ``Y`` (n × T)."""
    pad = np.concatenate([Y, np.zeros((Y.shape[0], 1))], axis=1)
    out: FloatArray = pad[:, pairs[:, 0]] - pad[:, pairs[:, 1]]
    return out


def describe_feature(pair: tuple[int, int]) -> str:
    """``y[3]`` or ``y[3]−y[2]`` (1-indexed steps)."""
    i, j = pair
    return f"y[{i + 1}]" if j < 0 else f"y[{i + 1}]−y[{j + 1}]"


@dataclass(frozen=True)
class Condition:
    """One half-line: ``feature ≥ threshold`` (``upper=True``) or ``feature < threshold``."""

    i: int
    """First output index (0-based)."""
    j: int
    """Subtracted output index (0-based), −1 for none."""
    upper: bool
    """``≥`` when True, ``<`` when False."""
    threshold: float
    """The cut point."""

    def holds(self, Y: FloatArray) -> npt.NDArray[np.bool_]:
        """Indicator on the rows of ``Y``."""
        f = Y[:, self.i] - (Y[:, self.j] if self.j >= 0 else 0.0)
        return f >= self.threshold if self.upper else f < self.threshold

    def __str__(self) -> str:
        op = "≥" if self.upper else "<"
        return f"{describe_feature((self.i, self.j))} {op} {self.threshold:.6g}"


@dataclass(frozen=True)
class ConjunctionEvent:
    """A conjunction of half-lines on output features (black-box)."""

    conditions: tuple[Condition, ...]
    """All must hold."""

    kind = "black-box"

    def indicator(self, Y: FloatArray) -> npt.NDArray[np.bool_]:
        """Which rows of ``Y`` lie in the event."""
        mask = np.ones(Y.shape[0], dtype=bool)
        for c in self.conditions:
            mask &= c.holds(Y)
        return mask

    def __str__(self) -> str:
        return " and ".join(str(c) for c in self.conditions) or "always"


@dataclass(frozen=True)
class LikelihoodRatioEvent:
    """``{ llr(y) ≥ τ }`` (``upper``) or ``{ llr(y) ≤ τ }`` for a plan's node-noise LLR."""

    recovery: PlanRecovery
    """How to recover the affected nodes and their means under both streams."""
    threshold: float
    """τ."""
    upper: bool
    """Direction."""

    kind = "plan-aware"

    def indicator(self, Y: FloatArray) -> npt.NDArray[np.bool_]:
        """Which rows of ``Y`` lie in the event."""
        llr = self.recovery.llr(Y)
        return llr >= self.threshold if self.upper else llr <= self.threshold

    def __str__(self) -> str:
        op = "≥" if self.upper else "≤"
        r = self.recovery
        return (
            f"log-likelihood ratio of the node noise of {r.describe_nodes()} under "
            f"{r.plan_name} {op} {self.threshold:.6g} (range ±{r.max_llr:.6g}"
            f"{'' if r.exact else '; nodes recovered by least squares'})"
        )


@dataclass(frozen=True, eq=False)
class PlanRecovery:
    """Recover the nodes an item touches from outputs, and their Laplace LLR.

    ``W`` (k × T) maps an output vector to the k affected noisy node values
    (rows of ``R_used⁻¹``, or of the pseudo-inverse when ``R_used`` is not
    invertible); ``mu``/``mu2`` are those nodes' true values under the two streams
    and ``scales`` their Laplace scales.
    """

    plan_name: str
    """Which plan (repr of the mechanism)."""
    W: FloatArray
    """k × T recovery matrix."""
    mu: FloatArray
    """Node values ``(Ax)_n`` for the affected nodes."""
    mu2: FloatArray
    """Node values ``(Ax′)_n``."""
    scales: FloatArray
    """Laplace scales ``b_n``."""
    intervals: tuple[tuple[int, int], ...]
    """Node intervals, for the report."""
    exact: bool
    """Whether ``R_used`` is invertible (the recovery is exact)."""

    @property
    def max_llr(self) -> float:
        """``Σ_n |μ_n − μ′_n| / b_n``: the largest value the LLR takes."""
        return float(np.sum(np.abs(self.mu - self.mu2) / self.scales))

    def llr(self, Y: FloatArray) -> FloatArray:
        """``ln p_x(v)/p_{x′}(v)`` per row, as ``Σ clip(s_n(2v_n − μ_n − μ′_n)/b_n, ±|d_n|/b_n)``.

        The clipped form makes the saturated value exactly the same float in every
        row, so the point mass at the maximum is not split by rounding.
        """
        V = Y @ self.W.T
        d = self.mu - self.mu2
        cap = np.abs(d) / self.scales
        s = np.sign(d)
        terms = np.clip(s * (2 * V - self.mu - self.mu2) / self.scales, -cap, cap)
        out: FloatArray = terms.sum(axis=1)
        return out

    def describe_nodes(self) -> str:
        """``[1,1], [1,2], [1,4]``."""
        return ", ".join(f"[{lo},{hi}]" for lo, hi in self.intervals)


_RECOVERY_LIMIT = 1024
"""Largest T for which the dense (pseudo-)inverse of R is formed in the audit."""


def used_nodes(plan: LinearPlan) -> IntArray:
    """Nodes with a nonzero column in R (the only ones the outputs depend on)."""
    Rc = sp.csc_matrix(plan.R())
    Rc.eliminate_zeros()  # explicit zeros in the exact table do not count
    nz = np.diff(Rc.indptr) > 0
    return np.flatnonzero(nz).astype(np.int64)


def plan_recovery(
    plan: LinearPlan, x: FloatArray, x2: FloatArray, inverse: FloatArray | None = None
) -> PlanRecovery | None:
    """The recovery of the nodes that differ between ``x`` and ``x2`` (None if none)."""
    T = plan.horizon
    if T > _RECOVERY_LIMIT:
        return None
    used = used_nodes(plan)
    A = plan.A().tocsr()[used]
    mu_all = np.asarray(A @ x, dtype=np.float64)
    mu2_all = np.asarray(A @ x2, dtype=np.float64)
    aff = np.flatnonzero(mu_all != mu2_all)
    if aff.size == 0:
        return None
    if inverse is None:
        inverse, _ = recovery_matrix(plan, used)
    exact = used.size == T and bool(np.linalg.matrix_rank(plan.R().toarray()[:, used]) == T)
    nodes = used[aff]
    return PlanRecovery(
        plan_name=plan.name,
        W=np.ascontiguousarray(inverse[aff]),
        mu=mu_all[aff],
        mu2=mu2_all[aff],
        scales=plan.scales[nodes],
        intervals=tuple((int(plan.lo[n]), int(plan.hi[n])) for n in nodes),
        exact=exact,
    )


def recovery_matrix(plan: LinearPlan, used: IntArray | None = None) -> tuple[FloatArray, bool]:
    """``R_used⁻¹`` (or the pseudo-inverse) as a dense matrix, and whether it is exact."""
    if used is None:
        used = used_nodes(plan)
    Ru = plan.R().toarray()[:, used]
    if Ru.shape[0] == Ru.shape[1]:
        try:
            inv = np.linalg.inv(Ru)
            if np.all(np.isfinite(inv)):
                return inv, True
        except np.linalg.LinAlgError:
            pass
    return np.linalg.pinv(Ru), False


# ------------------------------------------------------------------ selection
@dataclass(frozen=True)
class Scored:
    """A candidate event with its projected score on the selection split."""

    event: ConjunctionEvent | LikelihoodRatioEvent | ProjectionEvent
    """The event, oriented so that side 1 is the numerator."""
    score: float
    """Projected lower bound on ``ln p₁/p₂`` at the test split's size."""
    ratio: float
    """Plug-in ``ln p̂₁/p̂₂`` on the selection split (``inf`` if ``p̂₂ = 0``)."""


def _edges(f1: FloatArray, f2: FloatArray, rng: np.random.Generator) -> list[FloatArray]:
    """Per-feature cut points: pooled quantiles (data values) of a subsample."""
    pooled = np.concatenate([f1, f2])
    if pooled.shape[0] > 8192:
        pooled = pooled[rng.choice(pooled.shape[0], 8192, replace=False)]
    q = np.quantile(pooled, _LEVELS, axis=0, method="inverted_cdf")
    out = []
    for k in range(pooled.shape[1]):
        col = q[:, k]
        col = col[np.isfinite(col)]
        out.append(np.unique(col))
    return out


def _bin(f: FloatArray, edges: list[FloatArray]) -> npt.NDArray[np.uint8]:
    """Bin index per value: ``searchsorted(edges, v, 'right')`` (``v ≥ e_k ⟺ bin > k``)."""
    out = np.empty(f.shape, dtype=np.uint8)
    for k, e in enumerate(edges):
        out[:, k] = np.searchsorted(e, f[:, k], side="right")
    return out


def _hist(B: npt.NDArray[np.uint8], nbins: int) -> IntArray:
    F = B.shape[1]
    if B.shape[0] == 0:
        return np.zeros((F, nbins), dtype=np.int64)
    flat = B.astype(np.int32) + (np.arange(F, dtype=np.int32) * nbins)[None, :]
    return np.bincount(flat.ravel(), minlength=F * nbins).reshape(F, nbins).astype(np.int64)


def greedy_conjunctions(
    F1: FloatArray,
    F2: FloatArray,
    pairs: IntArray,
    z: float,
    rng: np.random.Generator,
    max_depth: int = 8,
) -> list[tuple[bool, Scored]]:
    """Best conjunction of half-lines in each orientation of a pair of streams.

    ``F1``/``F2`` are the features of the selection samples of the two streams.  The
    first half of each grows a conjunction greedily, each step adding the half-line
    that maximises the Wilson lower bound on ``ln p_num/p_den`` (normal quantile
    ``z``); the second half then picks the prefix of that sequence with the best
    bound (early stopping against over-fitting thin tails), and that held-out bound
    is the event's score.  Returns ``(first_is_numerator, scored)`` for each
    orientation that found an event.
    """
    h1, h2 = F1.shape[0] // 2, F2.shape[0] // 2
    edges = _edges(F1[:h1], F2[:h2], rng)
    B1, B2 = _bin(F1[:h1], edges), _bin(F2[:h2], edges)
    out = []
    for first_is_num in (True, False):
        BA, BB = (B1, B2) if first_is_num else (B2, B1)
        VA, VB = (F1[h1:], F2[h2:]) if first_is_num else (F2[h2:], F1[h1:])
        grow = _grow(BA, BB, edges, pairs, z, max_depth)
        scored = _prune(grow, VA, VB, z)
        if scored is not None:
            out.append((first_is_num, scored))
    return out


def _prune(
    grow: list[tuple[int, Condition]], V1: FloatArray, V2: FloatArray, z: float
) -> Scored | None:
    if not grow:
        return None
    n1, n2 = V1.shape[0], V2.shape[0]
    m1 = np.ones(n1, dtype=bool)
    m2 = np.ones(n2, dtype=bool)
    best, best_d, best_ratio = -math.inf, 0, 0.0
    for d, (feat, cond) in enumerate(grow, 1):
        m1 &= _holds_feature(V1[:, feat], cond)
        m2 &= _holds_feature(V2[:, feat], cond)
        c1, c2 = float(m1.sum()), float(m2.sum())
        sc = float(wilson_log_score(np.array([c1]), float(n1), np.array([c2]), float(n2), z)[0])
        if sc > best:
            best, best_d = sc, d
            best_ratio = math.log(c1 / n1) - math.log(c2 / n2) if c2 > 0 else math.inf
    if best_d == 0:
        return None
    return Scored(ConjunctionEvent(tuple(c for _, c in grow[:best_d])), best, best_ratio)


def _holds_feature(f: FloatArray, cond: Condition) -> npt.NDArray[np.bool_]:
    return f >= cond.threshold if cond.upper else f < cond.threshold


def _grow(
    B1: npt.NDArray[np.uint8],
    B2: npt.NDArray[np.uint8],
    edges: list[FloatArray],
    pairs: IntArray,
    z: float,
    max_depth: int,
) -> list[tuple[int, Condition]]:
    n1, n2 = B1.shape[0], B2.shape[0]
    if not edges or max(len(e) for e in edges) == 0:
        return []  # no finite cut anywhere (e.g. every output NaN): no half-line event
    nb = max(len(e) for e in edges) + 1
    ne = np.array([len(e) for e in edges])
    valid = np.arange(1, nb)[None, :] <= ne[:, None]  # cut k = edges[k-1] exists
    m1 = np.ones(n1, dtype=bool)
    m2 = np.ones(n2, dtype=bool)
    out: list[tuple[int, Condition]] = []
    best = -math.inf
    for _ in range(max_depth):
        H1 = _hist(B1[m1], nb)
        H2 = _hist(B2[m2], nb)
        G1 = np.cumsum(H1[:, ::-1], axis=1)[:, ::-1][:, 1:]  # count with bin ≥ k (k ≥ 1)
        G2 = np.cumsum(H2[:, ::-1], axis=1)[:, ::-1][:, 1:]
        L1 = int(m1.sum()) - G1
        L2 = int(m2.sum()) - G2
        c1 = np.stack([G1, L1]).astype(np.float64)
        c2 = np.stack([G2, L2]).astype(np.float64)
        score = wilson_log_score(c1, float(n1), c2, float(n2), z)
        score[:, ~valid] = -np.inf
        if score.size == 0:
            break
        flat = int(np.argmax(score))
        top = float(score.flat[flat])
        if not top > best + 1e-9:
            break
        side, feat, cut = (int(v) for v in np.unravel_index(flat, score.shape))
        best = top
        cond = Condition(
            int(pairs[feat, 0]), int(pairs[feat, 1]), side == 0, float(edges[feat][cut])
        )
        out.append((feat, cond))
        ge1 = B1[:, feat] > cut
        ge2 = B2[:, feat] > cut
        if side == 0:
            m1 &= ge1
            m2 &= ge2
        else:
            m1 &= ~ge1
            m2 &= ~ge2
    return out


def best_llr_threshold(
    recovery: PlanRecovery, Y1: FloatArray, Y2: FloatArray, z: float
) -> Scored | None:
    """The best ``{llr ≥ τ}`` event (side 1 = the stream the LLR favours)."""
    L1, L2 = recovery.llr(Y1), recovery.llr(Y2)
    pooled = np.concatenate([L1, L2])
    uniq = np.unique(pooled)
    if uniq.size > 256:
        uniq = np.unique(np.quantile(pooled, np.linspace(0.5, 0.9995, 200), method="inverted_cdf"))
    s1, s2 = np.sort(L1), np.sort(L2)
    c1 = (L1.size - np.searchsorted(s1, uniq, side="left")).astype(np.float64)
    c2 = (L2.size - np.searchsorted(s2, uniq, side="left")).astype(np.float64)
    n1, n2 = L1.size, L2.size
    score = wilson_log_score(c1, float(n1), c2, float(n2), z)
    k = int(np.argmax(score))
    if not np.isfinite(score[k]):
        return None
    ratio = math.log(c1[k] / n1) - math.log(c2[k] / n2) if c2[k] > 0 else math.inf
    event = LikelihoodRatioEvent(recovery, float(uniq[k]), True)
    return Scored(event, float(score[k]), ratio)


# ---------------------------------------------------------------- projections
_LDA_MAX_HORIZON = 256
"""Largest T for the full pooled covariance in the Fisher direction (O(n·T²) + O(T³)).

Above it the Fisher direction uses the diagonal of the covariance (O(n·T)): at
T = 1024 the selection split of one pair would otherwise cost ~10¹⁰ flops."""
_RIDGE = 1e-3
"""Ridge ``λ = _RIDGE · tr(Σ)/T`` added to the pooled covariance before solving."""
_SHRINK_Z = 3.0
"""A coordinate enters the Laplace score only if its median shift exceeds this many
standard errors (``1/(2 f̂(m)√n)`` per median, ``f̂`` the density at the median from
the share within ``b̂/4`` of it); a coordinate with no shift enters with probability
≈ 0.27 %, so the null coordinates add almost no noise to the score."""
_PROJECTION_LEVELS = np.unique(
    np.concatenate([np.geomspace(2e-4, 0.5, 120), 1.0 - np.geomspace(2e-4, 0.5, 120)])
)
"""Quantile levels of the pooled held-out statistic tried as thresholds τ."""
_MIN_CUT_COUNT = 100
"""Fewest held-out numerator samples a threshold may leave in the event: the projected
ranking would otherwise chase lucky deep tails (relative error of the count ≤ 10 %)."""


@dataclass(frozen=True, eq=False)
class Projection:
    """A fitted statistic ``s(y) = Σ_t clip(a_t (u_t − m_t), −c_t, c_t)`` of one output.

    ``u = y`` (basis ``y``) or the first differences ``u_t = y_t − y_{t−1}``, ``u_1 = y_1``
    (basis ``Δy``).  With ``c = ∞`` and ``m = 0`` it is the linear projection ``a·u``;
    with finite caps it is the log-likelihood ratio of independent Laplace coordinates
    with medians ``m ∓ d/2`` and scales ``b`` (``a = 2 sign(d)/b``, ``c = |d|/b``).
    Every array is fitted on the selection split only.
    """

    name: str
    """``mean-difference``, ``fisher`` or ``laplace-score``."""
    basis: str
    """``y`` or ``Δy``."""
    slope: FloatArray
    """``a`` (T,)."""
    centre: FloatArray
    """``m`` (T,)."""
    cap: FloatArray
    """``c`` (T,), ``inf`` for a linear projection."""

    def values(self, Y: FloatArray) -> FloatArray:
        """``s(y)`` per row of ``Y`` (NaN rows give NaN: in no half-line event)."""
        U = _basis(Y, self.basis)
        if np.all(np.isinf(self.cap)):
            lin: FloatArray = U @ self.slope
            return lin
        terms = np.clip((U - self.centre) * self.slope, -self.cap, self.cap)
        out: FloatArray = terms.sum(axis=1)
        return out

    def __str__(self) -> str:
        nz = np.flatnonzero(self.slope)
        top = nz[np.argsort(-np.abs(self.slope[nz]))[:3]] if nz.size else nz
        shown = ", ".join(f"{self.basis}[{i + 1}]" for i in sorted(top.tolist()))
        more = f", … ({nz.size} coordinates)" if nz.size > 3 else ""
        return f"{self.name} projection of {self.basis} on {shown}{more}"


def _basis(Y: FloatArray, basis: str) -> FloatArray:
    if basis == "y":
        return Y
    out: FloatArray = np.diff(Y, axis=1, prepend=0.0)
    return out


@dataclass(frozen=True)
class ProjectionEvent:
    """``{ s(y) ≥ τ }`` (``upper``) or ``{ s(y) ≤ τ }`` for a fitted projection (black-box)."""

    projection: Projection
    """The statistic, fitted on the selection split."""
    threshold: float
    """τ."""
    upper: bool
    """Direction."""

    kind = "black-box"

    def indicator(self, Y: FloatArray) -> npt.NDArray[np.bool_]:
        """Which rows of ``Y`` lie in the event."""
        s = self.projection.values(Y)
        return s >= self.threshold if self.upper else s <= self.threshold

    def __str__(self) -> str:
        op = "≥" if self.upper else "≤"
        return f"{self.projection} {op} {self.threshold:.6g}"


def fit_projections(Y0: FloatArray, Y1: FloatArray) -> list[Projection]:
    """Directions separating the outputs ``Y0`` (stream x) from ``Y1`` (stream x′).

    Each statistic grows with evidence for x′.  Only rows with finite outputs are used.

    * **mean-difference** ``w = μ̂₁ − μ̂₀``: the likelihood-ratio direction for
      isotropic Gaussian noise, and for any i.i.d. noise the direction of the sum of
      the shifted coordinates (Simple I: a flip of item i shifts ``y_t``, t ≥ i);
    * **fisher** ``w = (Σ̂ + λI)⁻¹(μ̂₁ − μ̂₀)``, Σ̂ pooled: the likelihood-ratio direction
      for Gaussian noise of any covariance (correlated outputs: Binary, Simple II,
      Two-Level); diagonal Σ̂ above ``_LDA_MAX_HORIZON``;
    * **laplace-score** on ``y`` and on ``Δy``: the exact log-likelihood ratio of
      independent Laplace coordinates, ``Σ clip(2 sign(d)(u − m)/b, ±|d|/b)`` with
      ``d`` the median shift, ``m`` the mid-point of the medians, ``b`` the mean absolute
      deviation (pooled), and coordinates whose shift is within ``_SHRINK_Z`` standard
      errors of 0 dropped.  A linear direction weighs heavy Laplace tails linearly
      although each coordinate's evidence saturates at ``|d|/b``; the clipped sum is the
      Neyman–Pearson statistic (for Simple I at T = 16 it counts the coordinates above
      their mid-point).  ``Δy`` makes the coordinates independent for Simple II.
    """
    A = Y0[np.all(np.isfinite(Y0), axis=1)]
    B = Y1[np.all(np.isfinite(Y1), axis=1)]
    if A.shape[0] < 2 or B.shape[0] < 2:
        return []
    T = A.shape[1]
    out: list[Projection] = []
    zero, inf = np.zeros(T), np.full(T, np.inf)
    d = B.mean(axis=0) - A.mean(axis=0)
    if np.any(d != 0) and np.all(np.isfinite(d)):
        out.append(Projection("mean-difference", "y", d, zero, inf))
        w = _fisher(A, B, d)
        if w is not None:
            out.append(Projection("fisher", "y", w, zero, inf))
    for basis in ("y", "Δy"):
        p = _laplace_score(_basis(A, basis), _basis(B, basis), basis)
        if p is not None:
            out.append(p)
    return out


def _fisher(A: FloatArray, B: FloatArray, d: FloatArray) -> FloatArray | None:
    T = A.shape[1]
    if T <= _LDA_MAX_HORIZON:
        S = (np.cov(A, rowvar=False).reshape(T, T) + np.cov(B, rowvar=False).reshape(T, T)) / 2
        lam = _RIDGE * float(np.trace(S)) / T + 1e-12
        try:
            w = np.linalg.solve(S + lam * np.eye(T), d)
        except np.linalg.LinAlgError:
            return None
    else:
        v = (A.var(axis=0) + B.var(axis=0)) / 2
        w = d / (v + _RIDGE * float(v.mean()) + 1e-12)
    return w if np.all(np.isfinite(w)) and np.any(w != 0) else None


def _laplace_score(A: FloatArray, B: FloatArray, basis: str) -> Projection | None:
    m0, m1 = np.median(A, axis=0), np.median(B, axis=0)
    b = (np.abs(A - m0).mean(axis=0) + np.abs(B - m1).mean(axis=0)) / 2
    d = m1 - m0
    floor = 1e-9 * max(1.0, float(b.max()))
    b = np.maximum(b, floor)
    se = np.sqrt(_median_se(A, m0, b) ** 2 + _median_se(B, m1, b) ** 2)
    keep = np.abs(d) > _SHRINK_Z * se
    if not keep.any():
        return None
    slope = np.where(keep, 2.0 * np.sign(d) / b, 0.0)
    cap = np.where(keep, np.abs(d) / b, 0.0)
    return Projection("laplace-score", basis, slope, (m0 + m1) / 2, cap)


def _median_se(U: FloatArray, m: FloatArray, b: FloatArray) -> FloatArray:
    """Standard error ``1/(2 f̂(m)√n)`` of the column medians ``m`` of ``U``."""
    h = b / 4
    f = np.maximum(np.mean(np.abs(U - m) < h, axis=0), 1.0 / U.shape[0]) / (2 * h)
    out: FloatArray = 1.0 / (2 * f * math.sqrt(U.shape[0]))
    return out


def _best_cut(
    s1: FloatArray, s2: FloatArray, z: float, n_target: int | None
) -> tuple[float, float, float]:
    """Best ``{s ≥ τ}`` favouring side 1: ``(τ, Wilson score, plug-in ratio)``.

    τ maximises the Wilson bound with the counts projected to ``n_target`` samples
    per side when given (the test split's size: a larger test affords a deeper
    tail); the returned score is the unprojected bound, comparable with
    :func:`greedy_conjunctions`'.
    """
    f1, f2 = s1[np.isfinite(s1)], s2[np.isfinite(s2)]
    pooled = np.concatenate([f1, f2])
    if pooled.size == 0:
        return math.nan, -math.inf, math.nan
    cuts = np.unique(np.quantile(pooled, _PROJECTION_LEVELS, method="inverted_cdf"))
    a1, a2 = np.sort(f1), np.sort(f2)
    c1 = (f1.size - np.searchsorted(a1, cuts, side="left")).astype(np.float64)
    c2 = (f2.size - np.searchsorted(a2, cuts, side="left")).astype(np.float64)
    n1, n2 = float(s1.size), float(s2.size)
    score = wilson_log_score(c1, n1, c2, n2, z)
    rank = score
    if n_target is not None:
        rank = wilson_log_score(c1 * (n_target / n1), n_target, c2 * (n_target / n2), n_target, z)
    rank = np.where(c1 >= _MIN_CUT_COUNT, rank, -np.inf)
    k = int(np.argmax(rank))
    if not (np.isfinite(rank[k]) and np.isfinite(score[k])):
        return math.nan, -math.inf, math.nan
    ratio = math.log(c1[k] / n1) - math.log(c2[k] / n2) if c2[k] > 0 else math.inf
    return float(cuts[k]), float(score[k]), ratio


def best_projections(
    Y1: FloatArray, Y2: FloatArray, z: float, n_test: int | None = None
) -> list[tuple[bool, Scored]]:
    """Best projection half-line in each orientation of a pair of streams.

    ``Y1``/``Y2`` are the *selection* outputs of the two streams.  On the first half
    of each, the directions are fitted (:func:`fit_projections`) and each direction's
    threshold is chosen per tail (largest Wilson bound, with the counts projected to
    ``n_test`` samples when given); the second half only scores
    the fixed events, with the Wilson bound of :func:`greedy_conjunctions` on its
    held-out half, so the two families compare on equal, unbiased terms (choosing τ on
    the scoring half would favour the projections by the maximum over ~240 cuts).
    Nothing here sees the test split.  Returns ``(first_is_numerator, scored)`` for
    each orientation that found an event.
    """
    h1, h2 = Y1.shape[0] // 2, Y2.shape[0] // 2
    F1, F2, V1, V2 = Y1[:h1], Y2[:h2], Y1[h1:], Y2[h2:]
    best: dict[bool, Scored] = {}
    for proj in fit_projections(F1, F2):
        v1, v2 = proj.values(V1), proj.values(V2)
        for first_is_num in (True, False):
            # x′ (side 2) has the larger statistic: {s ≥ τ} favours it, {s ≤ τ} favours x
            if first_is_num:
                tau, score, ratio = _best_cut(-v1, -v2, z, n_test)
                event = ProjectionEvent(proj, -tau, upper=False)
            else:
                tau, score, ratio = _best_cut(v2, v1, z, n_test)
                event = ProjectionEvent(proj, tau, upper=True)
            if math.isfinite(score) and (
                first_is_num not in best or score > best[first_is_num].score
            ):
                best[first_is_num] = Scored(event, score, ratio)
    return [(k, best[k]) for k in (True, False) if k in best]
