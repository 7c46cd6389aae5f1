"""The approximate-DP view of the audit: claims, and the bounds one tested event gives.

An audit in this view (``audit(..., privacy="gdp" | "zcdp")``, docs/auditing.md §11) tests
events E exactly as the pure-ε audit does — chosen on a selection split, their two
probabilities ``p₁ = P[M(x) ∈ E]`` and ``p₂ = P[M(x′) ∈ E]`` bounded on a fresh split by
one-sided Clopper–Pearson bounds ``p₁_low``, ``p₂_high`` — and reads each event three ways:

* **μ-GDP** (:func:`mu_lower_bound`).  E is a test of x′ against x with false-positive rate
  ``α = p₂`` and power ``p₁``.  A μ-GDP mechanism has every such test above the trade-off
  curve of ``N(0, 1)`` against ``N(μ, 1)``: ``1 − p₁ ≥ Φ(Φ⁻¹(1 − p₂) − μ)``, that is
  ``μ ≥ Φ⁻¹(p₁) − Φ⁻¹(p₂)``.  The right side grows with p₁ and falls with p₂, so on the
  event that both Clopper–Pearson bounds hold ``μ ≥ μ_lb = Φ⁻¹(p₁_low) − Φ⁻¹(p₂_high)``
  (``= Φ⁻¹(1 − FPR_high) − Φ⁻¹(FNR_high)`` with ``FPR = p₂``, ``FNR = 1 − p₁``).
* **ρ-zCDP** (:func:`zcdp_lower_bound`): Rényi divergences of every order α > 1 are at
  most ``ρα`` and can only shrink under post-processing (the indicator of E), so
  ``ρ ≥ sup_α D_α(Bern(p₁) ‖ Bern(p₂))/α ≥ sup_α D_α(Bern(p₁_low) ‖ Bern(p₂_high))/α``;
  the second step is the monotonicity argument in :func:`zcdp_lower_bound`.  A μ_lb above
  √(2ρ) does *not* refute a ρ-zCDP claim (zCDP does not imply GDP); this bound does.
* **(ε, δ)** (:func:`epsilon_delta_excess`): an (ε, δ)-DP mechanism has
  ``p₁ ≤ e^ε p₂ + δ`` for every event, so ``p₁_low > e^ε p₂_high + δ`` refutes the claim.
  A μ_lb above μ* (the largest μ whose GDP curve implies (ε, δ), :func:`mu_star`) does not:
  a mechanism can be (ε, δ)-DP without being μ*-GDP (its trade-off curve need only lie
  above the (ε, δ) one, which is far below G_μ* away from the corner).

Each bound holds with probability at least ``1 − 2a`` when each one-sided bound is taken
at level a; the audit takes ``a = (1 − confidence)/(2K)`` over its K tested events
(Bonferroni), so every bound of the report holds at once with probability ``confidence``.

References
----------
.. [1] J. Dong, A. Roth, W. J. Su. "Gaussian Differential Privacy." JRSS-B 2022
   (trade-off functions; ``G_μ``; Corollary 2.13, the (ε, δ) curve of μ-GDP).
.. [2] M. Bun, T. Steinke. "Concentrated Differential Privacy." TCC 2016 (zCDP).
.. [3] T. van Erven, P. Harremoës. "Rényi Divergence and Kullback–Leibler Divergence."
   IEEE Trans. Inf. Theory 60(7), 2014 (data processing, Thm 9; joint quasi-convexity, Thm 13).
.. [4] M. Nasr et al. "Tight Auditing of Differentially Private Machine Learning."
   USENIX Security 2023 (GDP lower bounds from a test's FPR/FNR).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt
from scipy import optimize, special, stats

from dpref.accounting import GaussianDP
from dpref.audit.reports.audit_report import EventResult
from dpref.audit.stats import SHAVE
from dpref.errors import ParameterError
from dpref.mechanisms import Mechanism
from dpref.validation import (
    check_choice,
    check_epsilon,
    check_exact,
    check_probability_open,
    check_rho,
    fmt,
)

__all__ = [
    "INFO_DELTAS",
    "PRIVACY_KINDS",
    "Claim",
    "Reading",
    "epsilon_at_delta",
    "epsilon_delta_excess",
    "mu_lower_bound",
    "mu_star",
    "read_events",
    "refutes",
    "resolve_claim",
    "zcdp_lower_bound",
]

FloatArray = npt.NDArray[np.float64]

PRIVACY_KINDS = ("pure", "gdp", "zcdp")
"""The claims an audit can test: pure ε-DP, μ-GDP / (ε, δ) (``gdp``), ρ-zCDP (``zcdp``)."""

INFO_DELTAS = (1e-3, 1e-5, 1e-7)
"""The δ at which a report shows ε(δ) of a μ_lb-GDP mechanism (informational)."""

_ALPHAS = 1.0 + np.geomspace(1e-3, 1e4, 161)
"""Rényi orders of the grid search of :func:`zcdp_lower_bound` (any order gives a valid
bound; the grid only decides how close to the supremum it gets)."""

_SHAVE = SHAVE
"""Relative amount a float bound is lowered by before it is compared with an exact claim
(covers the rounding of the float evaluation of Φ⁻¹, logs and exponentials): the same as the
pure-ε audit's (:data:`dpref.audit.stats.SHAVE`)."""


# ------------------------------------------------------------------ claims
@dataclass(frozen=True)
class Claim:
    """What the audited target claims, in exact numbers.

    ``privacy`` is ``pure`` (``epsilon``), ``gdp`` (``mu2`` = μ², or ``epsilon`` and
    ``delta``: an (ε, δ) claim) or ``zcdp`` (``rho``).  ``rho`` is also set for a GDP
    claim given as ρ (μ² = 2ρ), and ``mu2`` for a zCDP claim given as μ (ρ = μ²/2).
    """

    privacy: str
    """``pure``, ``gdp`` or ``zcdp``."""
    epsilon: Fraction | None = None
    """The ε of a pure or an (ε, δ) claim."""
    delta: Fraction | None = None
    """The δ of an (ε, δ) claim."""
    mu2: Fraction | None = None
    """μ² of a μ-GDP claim."""
    rho: Fraction | None = None
    """ρ of a ρ-zCDP claim (or the ρ a μ-GDP claim was given as)."""

    @property
    def kind(self) -> str:
        """``epsilon``, ``epsilon-delta``, ``mu`` or ``rho``: which bound the verdict uses."""
        if self.privacy == "pure":
            return "epsilon"
        if self.privacy == "zcdp":
            return "rho"
        return "epsilon-delta" if self.delta is not None else "mu"

    @property
    def mu(self) -> float | None:
        """The claimed μ rounded to the nearest float (None without one); comparisons use
        the exact :attr:`mu2`."""
        return None if self.mu2 is None else math.sqrt(self.mu2)


def _declared(mech: Mechanism | None) -> Mechanism | None:
    return mech if mech is not None and getattr(mech, "gaussian", False) else None


def resolve_claim(
    *,
    privacy: Any,
    epsilon: Any,
    delta: Any,
    rho: Any,
    mu: Any,
    target_mechanism: Mechanism | None,
    reference: Mechanism | None,
) -> Claim:
    """Check the claim parameters of :func:`~dpref.audit.audit` and fill in defaults.

    ``privacy`` defaults to ``gdp`` when ``rho``, ``mu`` or ``delta`` is given, else to the
    declaration of a Gaussian built-in target or reference (continuous Gaussian noise:
    ``gdp``; discrete Gaussian: ``zcdp``), else ``pure``.  Exactly one claim form: ε alone
    (pure), ρ or μ (gdp / zcdp), ε with δ (gdp); with none, a Gaussian built-in target's
    or reference's declared ρ (pure: a built-in's declared ε).  A contradiction is a
    :class:`~dpref.errors.ParameterError` naming both parameters.
    """
    if privacy is not None:
        privacy = check_choice("privacy", privacy, PRIVACY_KINDS)
    given = {
        k: v
        for k, v in (("epsilon", epsilon), ("delta", delta), ("rho", rho), ("mu", mu))
        if v is not None
    }
    for a, b in (("rho", "mu"), ("rho", "epsilon"), ("mu", "epsilon"), ("rho", "delta")):
        if a in given and b in given:
            raise ParameterError(
                f"{a}={fmt(given[a])}, {b}={fmt(given[b])}: give one claim (ε alone, ρ or μ, "
                "or ε with δ), not both"
            )
    if "mu" in given and "delta" in given:
        raise ParameterError(
            f"mu={fmt(mu)}, delta={fmt(delta)}: give one claim (ε alone, ρ or μ, or ε with δ)"
        )
    if "delta" in given and "epsilon" not in given:
        raise ParameterError(f"delta={fmt(delta)}: an (ε, δ) claim needs epsilon= as well")
    declared = _declared(target_mechanism) or _declared(reference)
    if privacy is None:
        if given.keys() & {"rho", "mu", "delta"}:
            privacy = "gdp"
        elif "epsilon" not in given and declared is not None:
            privacy = "gdp" if declared.noise == "gaussian" else "zcdp"
        else:
            privacy = "pure"
    if privacy == "pure":
        for name in ("rho", "mu", "delta"):
            if name in given:
                raise ParameterError(
                    f"{name}={fmt(given[name])}: privacy='pure' claims ε alone; use "
                    "privacy='gdp' (or 'zcdp') for this claim"
                )
        return Claim("pure", epsilon=None if epsilon is None else check_epsilon("epsilon", epsilon))
    if privacy == "zcdp" and ("delta" in given or "epsilon" in given):
        name = "delta" if "delta" in given else "epsilon"
        raise ParameterError(
            f"{name}={fmt(given[name])}: privacy='zcdp' claims ρ (rho= or mu=); an (ε, δ) claim "
            "is privacy='gdp' with epsilon= and delta="
        )
    if "epsilon" in given and "delta" not in given:
        raise ParameterError(
            f"epsilon={fmt(epsilon)}: privacy={privacy!r} needs delta= with epsilon= (an (ε, δ) "
            "claim), or rho= / mu=; a pure ε claim is privacy='pure'"
        )
    if "epsilon" in given:
        eps = check_epsilon("epsilon", epsilon)
        if eps > 700:
            raise ParameterError(f"epsilon={fmt(epsilon)}: must be <= 700 for an (ε, δ) claim")
        d = check_probability_open("delta", delta)
        return Claim("gdp", epsilon=eps, delta=d)
    if "mu" in given:
        m = check_exact("mu", mu)
        if m <= 0:
            raise ParameterError(f"mu={fmt(mu)}: must be > 0")
        if m * m > 2**20:
            raise ParameterError(f"mu={fmt(mu)}: must be <= 1024")
        return Claim(privacy, mu2=m * m, rho=m * m / 2 if privacy == "zcdp" else None)
    if "rho" in given:
        r = check_rho("rho", rho)
    else:
        if declared is None:
            raise ParameterError(
                f"rho=None: privacy={privacy!r} needs a claim (rho=, mu=, or epsilon= with "
                "delta=): only a Gaussian built-in target or reference declares one"
            )
        r = declared.declared_rho
        if privacy == "gdp" and declared.noise != "gaussian":
            raise ParameterError(
                f"privacy='gdp': {declared!r} adds discrete Gaussian noise, which is ρ-zCDP but "
                "not exactly μ-GDP; audit it with privacy='zcdp' or give mu="
            )
    return Claim(privacy, mu2=2 * r if privacy == "gdp" else None, rho=r)


# ------------------------------------------------------------------ bounds of one event
def mu_lower_bound(p1_low: float, p2_high: float) -> float:
    """``Φ⁻¹(p₁_low) − Φ⁻¹(p₂_high)``: a lower bound on μ of any μ-GDP mechanism whose event
    has ``p₁ ≥ p₁_low`` and ``p₂ ≤ p₂_high`` (module docstring); ``-inf`` when p₁_low = 0,
    ``inf`` when p₂_high = 0 < p₁_low or p₁_low = 1 > p₂_high.  The float value is lowered
    by ``_SHAVE·max(1, |value|)`` (ndtri and the subtraction round either way: about two
    thirds of the time the unshaved float exceeds the real difference)."""
    if p1_low <= 0.0 or p2_high >= 1.0:
        return -math.inf
    value = float(special.ndtri(p1_low) - special.ndtri(p2_high))
    if math.isinf(value):
        return value
    return value - _SHAVE * max(1.0, abs(value))


def _log_bern_renyi(p: float, q: float, alphas: FloatArray) -> FloatArray:
    """``(α − 1)·D_α(Bern(p) ‖ Bern(q))`` per order, for ``0 < q < p ≤ 1`` (log-sum-exp)."""
    terms = [alphas * math.log(p) + (1 - alphas) * math.log(q)]
    if p < 1:
        terms.append(alphas * math.log1p(-p) + (1 - alphas) * math.log1p(-q))
    out: FloatArray = special.logsumexp(np.stack(terms), axis=0)
    return out


def zcdp_lower_bound(p1_low: float, p2_high: float) -> float:
    """``sup_{α>1} D_α(Bern(p₁_low) ‖ Bern(p₂_high))/α``, a lower bound on the ρ of any
    ρ-zCDP mechanism whose event has ``p₁ ≥ p₁_low`` and ``p₂ ≤ p₂_high`` (0 unless
    ``p₁_low > p₂_high``; ``inf`` when p₂_high = 0 < p₁_low).

    Why it is valid: ρ-zCDP says ``D_α(M(x) ‖ M(x′)) ≤ ρα`` for every α > 1, and the
    indicator of E is post-processing, so ``D_α(Bern(p₁) ‖ Bern(p₂)) ≤ ρα`` (data
    processing).  Write ``D(p‖q)`` for the Bernoulli divergence at a fixed α.  It is 0 on
    the diagonal p = q and jointly quasi-convex (van Erven and Harremoës, Thm 13), so along
    any segment from a diagonal point to (p, q) it never exceeds its value at (p, q).  With
    ``p₂ ≤ p₂_high < p₁_low ≤ p₁``: ``(p₁_low, p₂_high)`` lies on the segment from
    ``(p₁_low, p₁_low)`` to ``(p₁_low, p₂)``, and ``(p₁_low, p₂)`` on the segment from
    ``(p₂, p₂)`` to ``(p₁, p₂)``, so ``D(p₁_low‖p₂_high) ≤ D(p₁_low‖p₂) ≤ D(p₁‖p₂) ≤ ρα``.
    Every α gives a valid bound; the supremum is searched on a grid of orders in
    (1, 10⁴] and refined by a bounded scalar search, and the result lowered by a relative
    ``1e-9`` for floating-point rounding.
    """
    if not (0.0 <= p2_high < p1_low <= 1.0):
        return 0.0
    if p2_high == 0.0:
        return math.inf

    def value(alpha: float) -> float:
        v = float(_log_bern_renyi(p1_low, p2_high, np.array([alpha]))[0])
        return v / ((alpha - 1.0) * alpha)

    grid = _log_bern_renyi(p1_low, p2_high, _ALPHAS) / ((_ALPHAS - 1.0) * _ALPHAS)
    k = int(np.argmax(grid))
    best = float(grid[k])
    lo = float(_ALPHAS[max(k - 1, 0)])
    hi = float(_ALPHAS[min(k + 1, _ALPHAS.size - 1)])
    if hi > lo:
        res = optimize.minimize_scalar(
            lambda a: -value(a), bounds=(lo, hi), method="bounded", options={"xatol": 1e-10}
        )
        if res.success and -float(res.fun) > best:
            best = -float(res.fun)
    return max(0.0, best * (1.0 - _SHAVE))


def epsilon_delta_excess(
    p1_low: float, p2_high: float, epsilon: Fraction, delta: Fraction
) -> float:
    """``p₁_low − (e^ε p₂_high + δ)`` with the subtracted side rounded up (a positive value
    refutes (ε, δ)-DP: module docstring)."""
    cap = math.exp(float(epsilon)) * (1.0 + 4 * _SHAVE) * p2_high + float(delta) * (1.0 + _SHAVE)
    return p1_low - cap


# ------------------------------------------------------------------ GDP curves (floats)
def _gdp_delta(mu: float, eps: float) -> float:
    """δ(ε) of μ-GDP in floats: ``Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2)``."""
    a = stats.norm.logcdf(-eps / mu + mu / 2)
    b = eps + stats.norm.logcdf(-eps / mu - mu / 2)
    return float(math.exp(a) * -math.expm1(b - a)) if b < a else 0.0


def epsilon_at_delta(mu: float, delta: float) -> float | None:
    """ε(δ) of a μ-GDP mechanism, in floats (informational; None when μ ≤ 0, ``inf`` when
    μ is infinite).  Solves ``δ_μ(ε) = δ`` by Brent's method (relative tolerance 1e-12)."""
    if not mu > 0:
        return None
    if math.isinf(mu):
        return math.inf
    if _gdp_delta(mu, 0.0) <= delta:
        return 0.0
    hi = 1.0
    while _gdp_delta(mu, hi) > delta:
        hi *= 2
        if hi > 1e6:
            return math.inf
    return float(optimize.brentq(lambda e: _gdp_delta(mu, e) - delta, 0.0, hi, rtol=1e-12))


def mu_star(epsilon: Fraction, delta: Fraction) -> float:
    """The largest μ whose GDP curve implies (ε, δ): ``δ_μ(ε) ≤ δ`` (δ_μ grows with μ).

    Found in floats by Brent's method, then lowered until the certified upper bound of
    :meth:`~dpref.accounting.GaussianDP.delta_bounds` confirms ``δ_μ(ε) ≤ δ`` (so every
    μ up to the returned one implies the claim)."""
    eps, d = float(epsilon), float(delta)
    lo, hi = 1e-9, 1.0
    while _gdp_delta(hi, eps) < d and hi < 1000:
        hi *= 2
    if _gdp_delta(lo, eps) >= d:
        return 0.0
    m = float(optimize.brentq(lambda u: _gdp_delta(u, eps) - d, lo, hi, rtol=1e-12))
    for _ in range(60):
        if m <= 2**-30:
            return 0.0
        if GaussianDP(Fraction(m) ** 2).delta_bounds(epsilon)[1] <= delta:
            return m
        m = m * (1 - 1e-9) if _ < 30 else m / 2
    return 0.0


# ------------------------------------------------------------------ the verdict
def refutes(claim: Claim, results: Sequence[EventResult], mu_lb: float, rho_lb: float) -> bool:
    """Whether the tested events refute the claim (never more than it implies: a μ-GDP
    claim by μ_lb > μ, exactly; ρ-zCDP by the Rényi bound ρ_lb > ρ; (ε, δ) by an event
    with ``p₁_low > e^ε p₂_high + δ``)."""
    if not results:
        return False
    if claim.kind == "mu":
        assert claim.mu2 is not None
        return mu_lb > 0 and (math.isinf(mu_lb) or Fraction(mu_lb) ** 2 > claim.mu2)
    if claim.kind == "rho":
        assert claim.rho is not None
        return rho_lb > 0 and (math.isinf(rho_lb) or Fraction(rho_lb) > claim.rho)
    assert claim.epsilon is not None and claim.delta is not None
    eps, delta = claim.epsilon, claim.delta
    return any(
        epsilon_delta_excess(r.p_numerator_low, r.p_denominator_high, eps, delta) > 0
        for r in results
    )


@dataclass(frozen=True)
class Reading:
    """The tested events read for a claim (:func:`read_events`)."""

    results: list[EventResult]
    """The events with their ``mu_lower_bound`` and ``zcdp_rho_lower_bound`` filled in."""
    violation: bool
    """Whether they refute the claim (:func:`refutes`)."""
    mu_lower_bound: float | None
    """The largest μ bound (None: no event was tested)."""
    zcdp_rho_lower_bound: float | None
    """The largest zCDP ρ bound (None: no event was tested)."""
    event_text: str
    """The event that decides the verdict, in words."""
    mu_star: float | None
    """(ε, δ) claim: :func:`mu_star`."""
    epsilon_delta: dict[str, float | None] | None
    """ε(δ) of a μ_lb-GDP mechanism at :data:`INFO_DELTAS` (None: no event was tested)."""


def read_events(claim: Claim, results: Sequence[EventResult]) -> Reading:
    """Each tested event read as a μ, a ρ and an (ε, δ) bound, the verdict for ``claim``, and
    the event that decides it (the largest bound of the claim's kind)."""
    rs = [
        replace(
            r,
            mu_lower_bound=mu_lower_bound(r.p_numerator_low, r.p_denominator_high),
            zcdp_rho_lower_bound=zcdp_lower_bound(r.p_numerator_low, r.p_denominator_high),
        )
        for r in results
    ]
    mu_lb = max((r.mu_lower_bound or -math.inf for r in rs), default=-math.inf)
    rho_lb = max((r.zcdp_rho_lower_bound or 0.0 for r in rs), default=0.0)

    def key(r: EventResult) -> float:
        if claim.kind == "rho":
            return r.zcdp_rho_lower_bound or 0.0
        if claim.kind == "epsilon-delta":
            assert claim.epsilon is not None and claim.delta is not None
            return epsilon_delta_excess(
                r.p_numerator_low, r.p_denominator_high, claim.epsilon, claim.delta
            )
        return r.mu_lower_bound if r.mu_lower_bound is not None else -math.inf

    event_text = ""
    if rs:
        best = max(rs, key=key)
        other = "x′" if best.numerator == "x" else "x"
        event_text = (
            f"E = {{{best.description}}}: P[M({best.numerator}) ∈ E] ≥ "
            f"{best.p_numerator_low:.4g}, P[M({other}) ∈ E] ≤ {best.p_denominator_high:.4g}"
        )
    star = None
    if claim.epsilon is not None and claim.delta is not None:
        star = mu_star(claim.epsilon, claim.delta)
    return Reading(
        results=rs,
        violation=refutes(claim, rs, mu_lb, rho_lb),
        mu_lower_bound=mu_lb if rs else None,
        zcdp_rho_lower_bound=rho_lb if rs else None,
        event_text=event_text,
        mu_star=star,
        epsilon_delta=(
            {f"{d:.0e}": epsilon_at_delta(mu_lb, d) for d in INFO_DELTAS} if rs else None
        ),
    )
