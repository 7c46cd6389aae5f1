"""The recovered :class:`Structure` of an exact audit, and filling a
:class:`~dpref.audit.reports.structural_report.StructuralReport` from it: the exact loss
(:mod:`dpref.audit.pure.l1loss`, :mod:`dpref.audit.gaussian.l2loss`), its rounding-proof
lower bound, and under a precision other than float64 the rounding slack
(:mod:`dpref.audit.injected.rounding`).
Split out of :mod:`dpref.audit.injected.structural` (which calls these after
:func:`~dpref.audit.injected.structural.recover_structure`) to keep each module short.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import numpy.typing as npt

from dpref.audit.gaussian.l2loss import ItemMuSquared, item_mu_squared, mu_squared_lower_bound
from dpref.audit.injected.exact_probes import basis_text
from dpref.audit.injected.rounding import FLOAT64, Precision, loss_upper_bounds
from dpref.audit.pure.l1loss import item_losses, stated_epsilon
from dpref.audit.reports.structural_report import StructuralReport
from dpref.domains import Domain

STATED_MAX_DENOMINATOR = 100
"""Largest denominator of the readable loss stated within a float32 slack."""

__all__ = [
    "Structure",
    "certify_gaussian",
    "certify_laplace",
    "domain_base",
    "fill",
    "fill_gaussian",
    "fill_slack",
]


FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True, eq=False)
class Structure:
    """The fitted ``y = A·(x − x₀) + M·ξ + c`` of a target at T (floats, as probed)."""

    horizon: int
    base: FloatArray
    """x₀, the stream the probes start from (0 when the domain contains it)."""
    A: FloatArray
    """T × T: the outputs' response to a unit increase of each item."""
    M: FloatArray
    """T × K: the outputs' response to each standard value ξ_j (Laplace or normal)."""
    c: FloatArray
    """The outputs at ``(x₀, ξ = 0)``."""
    scales: FloatArray
    """The K recorded draw scales, in the order drawn."""
    residual: float
    """Largest ``|y − fit|`` on the random verification points."""
    residual_ratio: float
    """Largest ``|y − fit| / tolerance`` (≤ 1: linear within rounding)."""
    calls: int
    """Target calls made."""
    law: str = "laplace"
    """The law of the scripted draws: ``laplace``, ``normal`` or ``none`` (no draw)."""
    checks: int = 0
    """Random verification points (besides the structured streams and the ladder)."""
    precision: str = "float64"
    """The precision of the error model the fit was verified in
    (:mod:`dpref.audit.injected.rounding`)."""
    precision_source: str = "requested"
    """How it was chosen (``requested`` or auto-detected, in words)."""
    ladder_cap: float = 1e300
    """The output magnitude the noise ladder was capped at (1e36 when it was built under
    float32)."""


def domain_base(domain: Domain) -> tuple[float, float]:
    """x₀ (0 when the domain contains it, else its lower end) and the probe value."""
    lo, hi = float(domain.lower), float(domain.upper)
    base = 0.0 if lo <= 0.0 <= hi else lo
    probe = hi if hi != base else lo
    return base, probe


def certify_gaussian(
    report: StructuralReport, s: Structure, dom: Domain, prec: Precision = FLOAT64
) -> None:
    """When μ² exceeds the claim, the rounding-proof lower bound of the deciding item
    (always, under a precision other than float64: the slack's lower end)."""
    claim = report.claimed_mu_squared
    always = prec is not FLOAT64 and report.privacy != "pure"
    if (claim is None and not always) or report.privacy == "pure" or report.mu_item is None:
        return
    exceeds = report.mu_infinite or (
        report.mu_squared is not None and claim is not None and report.mu_squared > claim
    )
    if not exceeds and not always:
        return
    base, probe = domain_base(dom)
    i = report.mu_item - 1
    lower, infinite = mu_squared_lower_bound(
        s.M, s.A[:, i], s.c, dom.sensitivity, probe - base, unit=prec.unit, tiny=prec.tiny
    )
    report.mu_squared_lower, report.mu_lower_infinite = lower, infinite


def certify_laplace(
    report: StructuralReport, s: Structure, dom: Domain, prec: Precision = FLOAT64
) -> None:
    """When the Laplace loss exceeds the ε claim, the rounding-proof lower bound of the
    deciding item (:func:`~dpref.audit.gaussian.l2loss.mu_squared_lower_bound` with ``l1=True``;
    always, under a precision other than float64: the slack's lower end)."""
    claim = report.claimed
    always = prec is not FLOAT64 and not report.gaussian
    if (claim is None and not always) or report.item is None or report.scope == "unavailable":
        return
    exceeds = report.infinite or (
        report.epsilon is not None and claim is not None and report.epsilon > claim
    )
    if not exceeds and not always:
        return
    base, probe = domain_base(dom)
    i = report.item - 1
    dual = report.lp_duals[i] if report.lp_duals is not None else None
    lower, infinite = mu_squared_lower_bound(
        s.M,
        s.A[:, i],
        s.c,
        dom.sensitivity,
        probe - base,
        l1=True,
        unit=prec.unit,
        tiny=prec.tiny,
        extra=() if dual is None or prec is FLOAT64 else (dual,),
    )
    report.epsilon_lower_rounding, report.epsilon_lower_infinite = lower, infinite


def fill_slack(report: StructuralReport, s: Structure, dom: Domain, prec: Precision) -> None:
    """The rounding slack of a non-float64 target (:mod:`dpref.audit.injected.rounding`): the
    interval ``[lower, upper]`` around the loss, and the readable value re-stated within
    it (the claim when the claim lies inside)."""
    report.unit_roundoff = prec.unit
    base, probe = domain_base(dom)
    gaussian = report.privacy != "pure"
    if gaussian and report.gaussian:
        value, lower, inf = report.mu_squared, report.mu_squared_lower, report.mu_lower_infinite
        measured, vectors = report.item_mu_squared, None
    elif not gaussian and not report.gaussian:
        value, lower = report.epsilon, report.epsilon_lower_rounding
        inf = report.epsilon_lower_infinite
        measured, vectors = report.item_epsilons, report.lp_vectors
    else:
        return
    if value is None or inf or lower is None:
        report.slack_note = "no slack: the loss is infinite"
        return
    upper, why = loss_upper_bounds(
        s.M,
        s.A,
        s.c,
        dom.sensitivity,
        probe - base,
        prec,
        measured,
        l1=not gaussian,
        vectors=vectors,
    )
    top = None
    if upper is not None and all(q is not None for q in upper):
        top = max(q for q in upper if q is not None)
    lo = min(lower, value)
    report.slack_lower, report.slack_upper = lo, top
    report.slack_note = why
    claim = report.claimed_mu_squared if gaussian else report.claimed
    hi = top if top is not None else value
    # the claim when the slack holds it; else a rational with denominator ≤ 100 within
    # 4u (relative) of the value — what rounding the target's own scales to the precision
    # moves a loss by — else the float64 rule.  (Not "any small rational in the slack":
    # a float32 slack holds many, and stating one would claim digits not established.)
    stated: Fraction | None = stated_epsilon(value, claim)
    q = value.limit_denominator(STATED_MAX_DENOMINATOR)
    if claim is not None and lo <= claim <= hi:
        stated = claim
    elif abs(q - value) <= 4 * prec.unit * value:
        stated = q
    if gaussian:
        report.mu_squared_stated = stated
    else:
        report.epsilon_stated = stated


def _fill_common(report: StructuralReport, s: Structure) -> None:
    cap = f"{s.ladder_cap:.0e}".replace("e+", "e")
    top = "1e300" if s.ladder_cap >= 1e300 else f"outputs of about {cap}"
    report.ladder_top = cap
    report.basis = basis_text(s.horizon, int(s.M.shape[1]), s.checks, s.law, top)
    report.draws = int(s.M.shape[1])
    report.distinct_scales = sorted({float(b) for b in s.scales.tolist()})
    report.residual, report.residual_ratio, report.calls = s.residual, s.residual_ratio, s.calls


def fill(report: StructuralReport, s: Structure, delta: Fraction) -> None:
    losses = item_losses(s.M, s.A, delta)
    _fill_common(report, s)
    report.rank, report.used_draws = losses.rank, losses.used
    report.item_epsilons = list(losses.upper)
    report.lp_vectors = list(losses.vectors) or None
    report.lp_duals = list(losses.duals) or None
    report.certified = losses.certified
    report.notes += losses.notes
    report.scope = "exact" if losses.method == "unique" else "upper bound"
    inf = [i for i, u in enumerate(losses.upper) if u is None]
    if inf:
        report.infinite = True
        report.item = inf[0] + 1
        return
    finite = [u for u in losses.upper if u is not None]
    top = max(finite)
    i = finite.index(top)
    report.item = i + 1
    report.epsilon = top
    report.epsilon_lower = max(q for q in losses.lower if q is not None)
    report.epsilon_stated = stated_epsilon(top, report.claimed)


def fill_gaussian(report: StructuralReport, s: Structure, delta: Fraction) -> None:
    """The exact μ of normal draws; in the pure view also the pure loss (0 or ∞)."""
    mus: ItemMuSquared = item_mu_squared(s.M, s.A, delta)
    _fill_common(report, s)
    report.rank, report.used_draws, report.free_draws = mus.rank, mus.used, mus.free
    report.mu_method = mus.method
    report.item_mu_squared = list(mus.mu_squared)
    report.scope = "exact"
    report.certified = True
    inf = [i for i, q in enumerate(mus.mu_squared) if q is None]
    if inf:
        report.mu_infinite = True
        report.mu_item = inf[0] + 1
    else:
        finite = [q for q in mus.mu_squared if q is not None]
        top = max(finite)
        report.mu_item = finite.index(top) + 1
        report.mu_squared = top
        report.mu_squared_stated = stated_epsilon(top, report.claimed_mu_squared)
    # the pure view: a shift v ≠ 0 of standard normal noise has an unbounded density
    # ratio, and an uncovered shift is infinite too, so ε_i is 0 exactly when item i
    # moves no output, else ∞
    moves = [bool(np.any(s.A[:, i] != 0.0)) for i in range(s.A.shape[1])]
    report.item_epsilons = [None if m else Fraction(0) for m in moves]
    if report.privacy == "pure":
        report.infinite = any(moves)
        report.item = moves.index(True) + 1 if any(moves) else 1
        if not report.infinite:
            report.epsilon = report.epsilon_lower = report.epsilon_stated = Fraction(0)
    else:
        report.infinite = report.mu_infinite
        report.item = report.mu_item
