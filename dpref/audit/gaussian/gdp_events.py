"""Candidate events of the approximate-DP audit: half-lines of scalar statistics.

Every event here is ``{s(y) ≥ τ}`` or ``{s(y) ≤ τ}`` for a statistic s of one output
vector, oriented so that its *numerator* stream is the one the event favours
(:mod:`dpref.audit.gaussian.gdp` reads each tested event as a μ, a ρ and an (ε, δ) bound).  The
statistics:

* **plan-aware** (a Gaussian built-in target or ``reference=``, T ≤ 1024):
  ``s = wᵀy − offset`` of :meth:`~dpref.audit.gaussian.gaussian_model.GaussianModel.shift`, the
  likelihood-ratio projection of the pair; under the model it is N(μ/2, 1) against
  N(−μ/2, 1), so by Neyman–Pearson its half-lines are the optimal tests, and
  ``Φ⁻¹(p₁) − Φ⁻¹(p₂) = μ`` at *every* threshold: the threshold only trades the
  sampling error of the two rates;
* **black-box**: the ε audit's features (coordinates ``y_t`` and differences
  ``y_t − y_s``, :func:`~dpref.audit.pure.events.feature_pairs`) and learned linear projections
  (mean difference and Fisher/LDA directions, :func:`~dpref.audit.pure.events.fit_projections`)
  fitted on the first half of the selection split only.

Thresholds and the event of each family are chosen on the selection split (the second
half for the black-box ones) by a *projected* score: the claim's bound computed from
Wilson bounds on the selection rates (each first moved one standard error against the
event) as if they had been seen on the test split's ``n_test`` samples
(:func:`projected_score`).  Nothing here sees the test split.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from scipy import special

from dpref.audit.gaussian.gaussian_model import GaussianModel, PairShift
from dpref.audit.gaussian.gdp import Claim
from dpref.audit.pure.events import Projection, describe_feature, fit_projections

__all__ = [
    "FeatureStatistic",
    "GdpScored",
    "HalfLineEvent",
    "ShiftStatistic",
    "best_half_line",
    "blackbox_candidates",
    "most_exposed_item",
    "pair_candidates",
    "projected_score",
]

FloatArray = npt.NDArray[np.float64]

_LEVELS = np.unique(
    np.concatenate([np.geomspace(5e-4, 0.5, 40), 1.0 - np.geomspace(5e-4, 0.5, 40)])
)
"""Quantile levels of the pooled selection statistic tried as thresholds τ."""
_MIN_COUNT = 30
"""Fewest selection samples a threshold may leave in and out of the event on either side
(the projected score of a thinner end is mostly noise)."""
_SEL_Z = 1.0
"""Standard errors the selection rates are moved against an event before its score is
projected to the test size (a flat true score must not pick the noisiest tail)."""
_ZCDP_ALPHAS = 1.0 + np.geomspace(1e-2, 1e3, 40)
"""Rényi orders of the vectorised zCDP score (ranking only)."""


@dataclass(frozen=True)
class FeatureStatistic:
    """``y_i − y_j`` (``j = −1``: ``y_i``), 0-based."""

    i: int
    """First output index."""
    j: int
    """Subtracted output index, −1 for none."""

    def values(self, Y: FloatArray) -> FloatArray:
        """The feature per row of ``Y`` (NaN where a target's infinities cancel)."""
        with np.errstate(invalid="ignore"):
            out: FloatArray = Y[:, self.i] - (Y[:, self.j] if self.j >= 0 else 0.0)
        return out

    def __str__(self) -> str:
        return describe_feature((self.i, self.j))


@dataclass(frozen=True, eq=False)
class ShiftStatistic:
    """The plan-aware projection ``wᵀy − offset`` of a pair (its model μ in the name)."""

    shift: PairShift
    """The pair's optimal projection under the reference's Gaussian model."""
    plan_name: str
    """The reference mechanism (repr)."""

    def values(self, Y: FloatArray) -> FloatArray:
        """``wᵀy − offset`` per row (NaN where a target's infinities cancel)."""
        with np.errstate(invalid="ignore", over="ignore"):
            return self.shift.statistic(Y)

    def __str__(self) -> str:
        return (
            f"likelihood-ratio projection wᵀy of {self.plan_name} "
            f"(model μ = {self.shift.mu:.4g} for this pair)"
        )


Statistic = FeatureStatistic | ShiftStatistic | Projection


@dataclass(frozen=True, eq=False)
class HalfLineEvent:
    """``{s(y) ≥ τ}`` (``upper``) or ``{s(y) ≤ τ}``; a NaN statistic is in neither."""

    statistic: Statistic
    """s."""
    threshold: float
    """τ."""
    upper: bool
    """Direction."""
    kind: str
    """``plan-aware`` or ``black-box``."""

    def indicator(self, Y: FloatArray) -> npt.NDArray[np.bool_]:
        """Which rows of ``Y`` lie in the event."""
        s = self.statistic.values(Y)
        return s >= self.threshold if self.upper else s <= self.threshold

    def __str__(self) -> str:
        return f"{self.statistic} {'≥' if self.upper else '≤'} {self.threshold:.6g}"


@dataclass(frozen=True)
class GdpScored:
    """A candidate half-line event with its projected score on the selection split."""

    event: HalfLineEvent
    """The event, oriented so that the first stream given is the numerator."""
    score: float
    """The claim's bound projected to the test split's size."""
    ratio: float
    """Plug-in ``Φ⁻¹(p̂₁) − Φ⁻¹(p̂₂)`` on the selection split."""


def _wilson(p: FloatArray, n: float, z: float, sign: float) -> FloatArray:
    z2 = z * z
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = z * np.sqrt(np.maximum(p * (1 - p) / n + z2 / (4 * n * n), 0.0)) / (1 + z2 / n)
    out: FloatArray = np.clip(centre + sign * half, 0.0, 1.0)
    return out


def projected_score(
    p1: FloatArray, p2: FloatArray, n_test: int, z: float, claim: Claim
) -> FloatArray:
    """The claim's bound from Wilson bounds on rates ``p1``, ``p2`` at ``n_test`` samples.

    ``mu``: ``Φ⁻¹(p₁_low) − Φ⁻¹(p₂_high)``; ``rho``: the Bernoulli Rényi bound on a grid
    of orders; ``epsilon-delta``: ``p₁_low − e^ε p₂_high − δ``.  Only ranks candidates.
    """
    lo = _wilson(p1, float(n_test), z, -1.0)
    hi = _wilson(p2, float(n_test), z, 1.0)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        if claim.kind == "epsilon-delta":
            assert claim.epsilon is not None and claim.delta is not None
            out: FloatArray = lo - math.exp(float(claim.epsilon)) * hi - float(claim.delta)
        elif claim.kind == "rho":
            a = _ZCDP_ALPHAS[:, None]
            q, p = np.clip(hi, 1e-300, 1.0)[None, :], np.clip(lo, 1e-300, 1.0)[None, :]
            t1 = a * np.log(p) + (1 - a) * np.log(q)
            t2 = a * np.log1p(-np.minimum(p, 1 - 1e-16)) + (1 - a) * np.log1p(
                -np.minimum(q, 1 - 1e-16)
            )
            d = np.logaddexp(t1, t2) / ((a - 1) * a)
            out = np.where(lo > hi, d.max(axis=0), 0.0)
        else:
            out = special.ndtri(lo) - special.ndtri(hi)
    out = np.where(np.isnan(out), -np.inf, out)
    return np.where(p1 > 0, out, -np.inf)


def best_half_line(
    s1: FloatArray, s2: FloatArray, n_test: int, z: float, claim: Claim
) -> tuple[float, bool, bool, float, float] | None:
    """The best half-line of one statistic on selection values ``s1`` (stream x) and
    ``s2`` (stream x′): ``(τ, upper, x_is_numerator, score, plug-in μ)``, or None."""
    f1, f2 = s1[np.isfinite(s1)], s2[np.isfinite(s2)]
    if f1.size == 0 or f2.size == 0:
        return None
    pooled = np.concatenate([f1, f2])
    cuts = np.unique(np.quantile(pooled, _LEVELS, method="inverted_cdf"))
    a1, a2 = np.sort(f1), np.sort(f2)
    n1, n2 = float(s1.size), float(s2.size)
    ge1 = (f1.size - np.searchsorted(a1, cuts, side="left")).astype(np.float64)
    ge2 = (f2.size - np.searchsorted(a2, cuts, side="left")).astype(np.float64)
    le1 = np.searchsorted(a1, cuts, side="right").astype(np.float64)
    le2 = np.searchsorted(a2, cuts, side="right").astype(np.float64)
    best: tuple[float, bool, bool, float, float] | None = None
    for upper, c1, c2 in ((True, ge1, ge2), (False, le1, le2)):
        for x_num in (True, False):
            cn, cd = (c1, c2) if x_num else (c2, c1)
            nn, nd = (n1, n2) if x_num else (n2, n1)
            # the selection rates, each moved by one standard error against the event
            # (Wilson, z = 1): a thin tail's lucky count is not mistaken for a better cut
            p1 = _wilson(cn / nn, nn, _SEL_Z, -1.0)
            p2 = _wilson(cd / nd, nd, _SEL_Z, 1.0)
            score = projected_score(p1, p2, n_test, z, claim)
            # thin ends excluded: at least _MIN_COUNT samples in and out of the event on
            # both sides (an (ε, δ) score: in the event on the numerator's side only, as
            # an empty denominator is what such an event looks for); a probit or Rényi
            # score of a rate estimated from a handful of samples is mostly noise
            ok = (cn >= _MIN_COUNT) & (nd - cd >= _MIN_COUNT)
            if claim.kind != "epsilon-delta":
                ok &= (cd >= _MIN_COUNT) & (nn - cn >= _MIN_COUNT)
            score = np.where(ok, score, -np.inf)
            k = int(np.argmax(score))
            if np.isfinite(score[k]) and (best is None or score[k] > best[3]):
                with np.errstate(divide="ignore", invalid="ignore"):
                    plug = float(special.ndtri(cn[k] / nn) - special.ndtri(cd[k] / nd))
                best = (float(cuts[k]), upper, x_num, float(score[k]), plug)
    return best


def scored_event(
    stat: Statistic, kind: str, v1: FloatArray, v2: FloatArray, n_test: int, z: float, claim: Claim
) -> tuple[bool, GdpScored] | None:
    """The best half-line of ``stat`` as ``(x_is_numerator, scored)`` (None: none)."""
    found = best_half_line(v1, v2, n_test, z, claim)
    if found is None:
        return None
    tau, upper, x_num, score, plug = found
    return x_num, GdpScored(HalfLineEvent(stat, tau, upper, kind), score, plug)


def blackbox_candidates(
    Y1: FloatArray,
    Y2: FloatArray,
    features: list[FeatureStatistic],
    n_test: int,
    z: float,
    claim: Claim,
) -> list[tuple[bool, GdpScored]]:
    """Black-box candidates of one pair: the best feature half-line and the best learned
    projection half-line.  Projections (mean difference, Fisher) are fitted on the first
    half of the selection outputs ``Y1`` (stream x), ``Y2`` (stream x′); every threshold
    is chosen and scored on the second half."""
    h1, h2 = Y1.shape[0] // 2, Y2.shape[0] // 2
    V1, V2 = Y1[h1:], Y2[h2:]
    stats_: list[Statistic] = [
        p for p in fit_projections(Y1[:h1], Y2[:h2]) if p.name in ("mean-difference", "fisher")
    ]
    stats_ += features
    out: list[tuple[bool, GdpScored]] = []
    best: tuple[bool, GdpScored] | None = None
    for stat in stats_:
        found = scored_event(stat, "black-box", stat.values(V1), stat.values(V2), n_test, z, claim)
        if found is not None and (best is None or found[1].score > best[1].score):
            best = found
    if best is not None:
        out.append(best)
    return out


def most_exposed_item(model: GaussianModel, low: float, high: float) -> int:
    """The item (0-based) whose flip from ``low`` to ``high`` on the all-``low`` stream has
    the largest μ under the model (the mean is affine in the stream, so this is every
    all-``low`` pair's μ at once: one SVD, T noiseless releases)."""
    T = model.horizon
    base = np.full(T, low)
    m0 = model.mean(base)
    D = np.empty((T, T))
    for i in range(T):
        x = base.copy()
        x[i] = high
        D[:, i] = model.mean(x) - m0
    U, S, _ = np.linalg.svd(model.R * model.sigma, full_matrices=False)
    keep = S > 1e-10 * (S[0] if S.size else 0.0)
    white = (U[:, keep].T @ D) / S[keep][:, None]
    outside = np.linalg.norm(D - U[:, keep] @ (U[:, keep].T @ D), axis=0)
    mu2 = np.where(
        outside > 1e-9 * max(1.0, float(np.abs(D).max())), np.inf, (white**2).sum(axis=0)
    )
    return int(np.argmax(mu2))


def pair_candidates(
    Y1: FloatArray,
    Y2: FloatArray,
    features: list[FeatureStatistic] | None,
    shift: PairShift | None,
    model_name: str,
    n_test: int,
    z: float,
    claim: Claim,
) -> list[tuple[bool, GdpScored]]:
    """The candidates of one pair from its selection outputs ``Y1`` (x), ``Y2`` (x′): the
    best black-box half-line (``features`` given: :func:`blackbox_candidates`) and the best
    half-line of the plan-aware projection (``shift`` given)."""
    out: list[tuple[bool, GdpScored]] = []
    if features is not None:
        # a target's ±inf outputs give NaN statistics (in no event), not warnings on stderr
        with np.errstate(invalid="ignore", over="ignore"):
            out += blackbox_candidates(Y1, Y2, features, n_test, z, claim)
    if shift is not None:
        stat = ShiftStatistic(shift, model_name)
        found = scored_event(stat, "plan-aware", stat.values(Y1), stat.values(Y2), n_test, z, claim)
        if found is not None:
            out.append(found)
    return out
