"""The output-level budget ``dpref conform`` reports beside the plan-level implied one.

When the target's noise passed the noise-law test for the reference's structure, its law
is the reference's with each node's scale multiplied by a measured ratio r (per level, or
one ratio for whitened residuals).  Two budgets follow from the measured scales:

* **plan-level** (``implied_epsilon`` / ``implied_rho``): the budget of the *node
  release* at the measured scales, ``max_i Σ_n (a_{n,i}Δ)²/(2 r_n² σ_n²)`` (Laplace:
  ``max_i Σ_n |a_{n,i}|Δ/(r_n b_n)``).  It is what the implementation's plan spends;
* **output-level** (``output_rho`` / ``output_epsilon``): the budget of the *released
  outputs* ``y = R·(A·x + noise)`` at the measured scales — what an adversary who sees
  only y can learn, and the number a privacy verdict rests on.

They coincide when the outputs determine the node noise (R restricted to its used nodes
is invertible: every counting tree, the Toeplitz factorizations) — then the output-level
budget is the plan-level one over the used nodes.  They differ when R has a kernel
(Honaker, SmoothBinary: the residuals are whitened, one ratio r): the outputs are then
exactly ``ρ_out(reference)/r²``-zCDP, with ``ρ_out(reference)`` the reference's own exact
output-level ρ (:func:`~dpref.audit.gaussian.output_budget.output_budget`; a float SVD of
``R·diag(σ)`` when the exact elimination is beyond its work budget, and the basis says so).

**The interval.**  μ² is non-increasing in every node's scale (more noise on one node is
a post-processing of the release), so the budget at the upper ends of the ratios'
intervals is the low end and at the lower ends the high end.  The ratios' intervals are
the fit's (exact χ² or Gamma, Bonferroni, the noise-scale check's ``a``): the pooled one
when every level's interval contains the pooled estimate (one common ratio, as the
plan-level budget takes it), else the per-level ones, which hold simultaneously.  So the
output-level interval holds with probability ``1 − a`` given that the noise has the
reference's structure (the noise-law test did not reject it) and, when pooled, a common
ratio (the per-level intervals did not reject it).  Unlike the plan-level interval it is
not capped at ratio 1 (the plan-level low end takes a level consistent with 1 at 1; a
lower confidence bound must not).  A **privacy violation is established**
when its low end, lowered by :data:`~dpref.audit.stats.SHAVE` for the floats, exceeds the
claim.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt

from dpref.audit.conformance.conform_checks import _implied_epsilon, _ScaleFit
from dpref.audit.gaussian.gaussian_model import GaussianModel
from dpref.audit.gaussian.output_budget import DECLARATION_WORK, output_budget
from dpref.audit.stats import SHAVE
from dpref.mechanisms import Mechanism
from dpref.plan import LinearPlan

__all__ = ["OutputLevel", "gaussian_output_level", "implied_rho", "laplace_output_level"]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True, kw_only=True)
class OutputLevel:
    """The output-level budget of the target's released outputs at the measured scales."""

    budget: str
    """``rho`` (ρ-zCDP; also μ = √(2ρ)-GDP for Gaussian noise) or ``epsilon`` (ε-DP)."""
    estimate: float
    """At the estimated scale ratios."""
    low: float
    """At the upper ends of the ratios' intervals (module doc)."""
    high: float
    """At the lower ends (``inf`` when a ratio's lower end is 0)."""
    claimed: Fraction
    """The reference's claim (exact)."""
    basis: str
    """How the number was computed from the measured scales, in words."""
    reference: float
    """The reference's own output-level budget (at ratio 1)."""

    @property
    def symbol(self) -> str:
        """ρ or ε."""
        return "ρ" if self.budget == "rho" else "ε"

    @property
    def above_claim(self) -> bool:
        """The interval lies above the claim: a privacy violation is established (the low
        end lowered by :data:`~dpref.audit.stats.SHAVE` before the exact comparison)."""
        low = self.low * (1.0 - SHAVE)
        return math.isinf(low) or (math.isfinite(low) and Fraction(low) > self.claimed)

    def text(self) -> str:
        """``output-level ρ = 3.97 [3.92, 4.01]`` (with μ for ρ)."""
        out = f"output-level {self.symbol} = {self.estimate:.5g} [{self.low:.5g}, {self.high:.5g}]"
        if self.budget == "rho":
            out += f" (μ = {math.sqrt(2 * self.estimate):.5g})"
        return out

    def as_dict(self) -> dict[str, Any]:
        """JSON-friendly."""

        def num(v: float) -> float | str:
            return v if math.isfinite(v) else "inf"

        out: dict[str, Any] = {
            "estimate": num(self.estimate),
            "low": num(self.low),
            "high": num(self.high),
            "claimed": float(self.claimed),
            "claimed_exact": str(self.claimed),
            "reference": self.reference,
            "above_claim": self.above_claim,
            "basis": self.basis,
        }
        if self.budget == "rho":
            out["mu"] = {k: num(math.sqrt(2 * v)) for k, v in self.bounds().items()}
        return out

    def bounds(self) -> dict[str, float]:
        """estimate, low, high."""
        return {"estimate": self.estimate, "low": self.low, "high": self.high}


_RECOVERED = (
    "the outputs determine the used nodes' noise (R restricted to them is invertible), so "
    "the output-level {b} is the plan-level {b} over the used nodes at the measured scale "
    "ratios (interval not capped at ratio 1)"
)


def implied_rho(plan: LinearPlan, node_ratio: FloatArray) -> float:
    """``max_i Σ_n (a_{n,i}Δ)²/(2 r_n² σ_n²)``: the ρ of the plan's node release when node
    n's standard deviation is ``r_n·σ_n`` (``r_n = ∞``: the node does not count)."""
    var = np.array([float(v) for v in plan.scale_table], dtype=np.float64)[plan.scale_idx]
    delta = float(plan.sensitivity)
    with np.errstate(divide="ignore"):
        per = delta * delta / (2.0 * var * node_ratio * node_ratio)
    per = np.where(np.isfinite(node_ratio), per, 0.0)
    A = plan.A()
    sums = np.asarray(A.multiply(A).T @ per, dtype=np.float64)
    return float(sums.max(initial=0.0))


def _ratios(fit: _ScaleFit) -> tuple[FloatArray, FloatArray, FloatArray]:
    """The ratios, their lower and their upper ends: the pooled ones when every level's
    interval contains the pooled estimate (one common ratio, which the per-level intervals
    did not reject — as the plan-level implied budget does), else per level."""
    G = fit.ratios.size
    if bool(np.all((fit.lows <= fit.est) & (fit.est <= fit.highs))):
        return np.full(G, fit.est), np.full(G, fit.lo), np.full(G, fit.hi)
    return fit.ratios, fit.lows, fit.highs


def gaussian_output_level(
    plan: LinearPlan,
    reference: Mechanism,
    nodes: IntArray | None,
    group: IntArray,
    fit: _ScaleFit,
) -> OutputLevel:
    """The output-level ρ at the fitted σ ratios (module doc): ``nodes`` are the recovered
    nodes (None: whitened residuals, one ratio)."""
    claimed = reference.declared_rho
    if nodes is not None:

        def at(r: FloatArray) -> float:
            node = np.full(plan.n_nodes, math.inf)
            node[nodes] = r[group]
            return implied_rho(plan, node)

        ones = np.ones(fit.ratios.size)
        ratios, lows, highs = _ratios(fit)
        return OutputLevel(
            budget="rho",
            estimate=at(ratios),
            low=at(highs),
            high=at(np.maximum(lows, 1e-300)),
            claimed=claimed,
            basis=_RECOVERED.format(b="ρ"),
            reference=at(ones),
        )
    ref, how = _reference_output_rho(reference, plan.horizon)
    lo, hi = fit.lo, fit.hi
    return OutputLevel(
        budget="rho",
        estimate=ref / (fit.est * fit.est),
        low=ref / (hi * hi),
        high=ref / (lo * lo) if lo > 0 else math.inf,
        claimed=claimed,
        basis=(
            f"the outputs do not determine the node noise (R has a kernel; residuals "
            f"whitened, one σ ratio r): output-level ρ = ρ_out(reference)/r² with "
            f"ρ_out(reference) = {ref:.6g} ({how}), {ref / float(claimed):.4g} of its "
            "plan's ρ; interval from the exact χ² interval of r"
        ),
        reference=ref,
    )


def _reference_output_rho(reference: Mechanism, T: int) -> tuple[float, str]:
    """The reference's exact output-level ρ at T, else (beyond the work budget) the float
    value from the SVD of its model's ``R·diag(σ)``."""
    exact = output_budget(reference, T, max_work=DECLARATION_WORK)
    if exact is not None:
        return float(exact.rho), "exact μ²/2 of its outputs, max over items"
    model = GaussianModel.of(reference, T)
    plan = reference.plan(T)
    U, S, _ = np.linalg.svd(model.R * model.sigma, full_matrices=False)
    keep = S > 1e-10 * (S[0] if S.size else 0.0)
    Q = np.asarray(plan.Q().toarray(), dtype=np.float64) * float(plan.sensitivity)
    W = (U[:, keep].T @ Q) / S[keep, None]
    mu2 = float((W * W).sum(axis=0).max(initial=0.0))
    return mu2 / 2, "float: SVD of R·diag(σ), the exact computation is beyond its budget"


def laplace_output_level(
    plan: LinearPlan, reference: Mechanism, nodes: IntArray, group: IntArray, fit: _ScaleFit
) -> OutputLevel:
    """The output-level ε at the fitted scale ratios of recovered Laplace node noise (the
    outputs determine the used nodes' noise, so it is the plan-level ε over them)."""
    ones = np.ones(fit.ratios.size)
    ratios, lows, highs = _ratios(fit)
    return OutputLevel(
        budget="epsilon",
        estimate=_implied_epsilon(plan, nodes, group, ratios),
        low=_implied_epsilon(plan, nodes, group, highs),
        high=_implied_epsilon(plan, nodes, group, np.maximum(lows, 1e-300)),
        claimed=reference.declared_epsilon,
        basis=_RECOVERED.format(b="ε"),
        reference=_implied_epsilon(plan, nodes, group, ones),
    )
