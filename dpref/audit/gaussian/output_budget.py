"""Output-level privacy of a Gaussian mechanism: what its *released outputs* leak.

A mechanism's declared ρ is a property of its plan: the node values ``A·x + σ ⊙ ξ`` are
ρ-zCDP.  The release is ``y = R·(A·x + σ ⊙ ξ)``, a post-processing, so it is ρ-zCDP too,
and sometimes strictly less: when R has a kernel (Honaker's T × (2T − 1) recombination,
SmoothBinary) the outputs do not determine the node noise, and the noise in ker R hides
part of each item's shift.  The outputs are then exactly ``ρ_out``-zCDP (and
``√(2ρ_out)``-GDP) with

    ``ρ_out = max_i μ_i²/2``,  ``μ_i² = min{‖v‖₂² : R·diag(σ)·v = Δ·Q·e_i}``

(:mod:`dpref.audit.gaussian.l2loss`: the least-norm shift of the standard noise that moves the
outputs by item i's shift; the pair's laws are then exactly a Gaussian shift of size μ_i).

:func:`output_budget` computes it with the function the exact audit uses
(:func:`~dpref.audit.gaussian.l2loss.item_mu_squared`), on the mechanism's exact plan: R and Q
exact rationals (``R·A = Q`` is checked exactly by the plan), σ the node standard
deviations *as drawn* (:meth:`~dpref.mechanisms.Mechanism.noise_multipliers`, each
rounded up from ``√σ²``, taken at its exact binary value).  The result is the exact
``ρ_out`` of the release in real arithmetic, never more than the declared ρ (more noise
than the plan's σ only lowers it).  Nothing is hard-coded: Honaker at T = 64 gives
``ρ_out/ρ = 0.870148…`` because the elimination says so.

The elimination is exact rational arithmetic whose cost grows with T
(:data:`~dpref.audit.gaussian.l2loss.MAX_GAUSSIAN_EXACT_WORK`); ``max_work`` bounds it, and beyond
it, or above :data:`MAX_EXACT_OUTPUT_HORIZON`, :func:`output_budget` returns None (the
declared ρ is then the only stated bound).
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import ROUND_CEILING, Context, Decimal
from fractions import Fraction

import numpy as np

from dpref.audit.gaussian.l2loss import MAX_GAUSSIAN_EXACT_WORK, item_mu_squared
from dpref.errors import ParameterError
from dpref.mechanisms import Mechanism
from dpref.plan import DENSE_LIMIT, LinearPlan
from dpref.validation import check_positive_int, fmt

__all__ = ["DECLARATION_WORK", "MAX_EXACT_OUTPUT_HORIZON", "OutputBudget", "output_budget"]

DECLARATION_WORK = 4 * 10**6
"""Word-operation budget of the exact elimination when a declaration is printed
(``dpref release --json``): a few seconds at most on the 2-core machine.  Measured with
``rho=4``: Honaker T = 64 in 0.3 s, T = 128 in 1 s (below it)."""


MAX_EXACT_OUTPUT_HORIZON = 128
"""Largest T at which :func:`output_budget` computes: the dense exact R, Q and M and the
rational elimination grow fast with T (measured on the shared 2-core machine: Honaker
T = 128 1.5 s, T = 256 17 s, SmoothBinary T = 256 18 s).  Above it the answer is None."""


@dataclass(frozen=True, kw_only=True)
class OutputBudget:
    """The exact output-level privacy of a Gaussian mechanism at a horizon (module doc)."""

    horizon: int
    """T."""
    rho: Fraction
    """``ρ_out = max_i μ_i²/2``: the released outputs are exactly ρ_out-zCDP (exact)."""
    declared_rho: Fraction
    """The plan's declared ρ (the mechanism's ``declared_rho``)."""
    item: int
    """The (1-indexed) item whose shift attains the maximum."""
    free_draws: int
    """Draws the outputs do not determine (0: R restricted to its used nodes is
    invertible, and ``ρ_out`` is the plan's ρ at the σ as drawn)."""

    @property
    def mu_squared(self) -> Fraction:
        """``μ² = 2·ρ_out``: the outputs are exactly μ-GDP."""
        return 2 * self.rho

    @property
    def fraction(self) -> Fraction:
        """``ρ_out / declared ρ``: the share of the plan's budget the outputs leak."""
        return self.rho / self.declared_rho

    @property
    def label(self) -> str:
        """How the number was obtained, in words."""
        return (
            "exact: max over items of mu_i^2/2 of the released outputs "
            "(exact plan, node sigma as drawn)"
        )

    def as_dict(self) -> dict[str, object]:
        """JSON-friendly: exact values as strings, floats rounded up to 6 significant digits."""
        return {
            "output_rho": _up(self.rho),
            "output_rho_exact": str(self.rho),
            "output_mu_squared": _up(self.mu_squared),
            "output_rho_fraction_of_declared": _up(self.fraction),
            "output_rho_item": self.item,
            "output_rho_label": self.label,
        }


def _up(q: Fraction, digits: int = 6) -> str:
    """``q`` in decimal with ``digits`` significant digits, rounded up (a bound)."""
    ctx = Context(prec=digits, rounding=ROUND_CEILING)
    return str(ctx.divide(Decimal(q.numerator), Decimal(q.denominator)))


def output_budget(
    mechanism: Mechanism, horizon: int, *, max_work: int = MAX_GAUSSIAN_EXACT_WORK
) -> OutputBudget | None:
    """The exact output-level ρ of a Gaussian ``mechanism`` at T = ``horizon`` (module doc),
    or None when T exceeds :data:`MAX_EXACT_OUTPUT_HORIZON` or the exact elimination needs
    more than ``max_work`` word operations.

    Raises :class:`~dpref.errors.ParameterError` naming ``mechanism`` for a mechanism whose
    plan is not a :class:`~dpref.plan.LinearPlan` (the factorizations) or that
    does not add continuous Gaussian noise (discrete Gaussian noise is not exactly a
    Gaussian shift), and naming ``horizon`` beyond the mechanism's
    horizon or the dense plan's size."""
    if not isinstance(mechanism, Mechanism):
        raise ParameterError(f"mechanism={fmt(mechanism)}: must be a dpref Mechanism")
    if mechanism.rho is None or mechanism.noise != "gaussian":
        raise ParameterError(
            f"mechanism={mechanism!r}: adds {mechanism.noise} noise; the exact output-level "
            "ρ is for continuous Gaussian (ρ-zCDP) mechanisms"
        )
    T = check_positive_int("horizon", horizon)
    if T > DENSE_LIMIT or (mechanism.horizon is not None and T > mechanism.horizon):
        raise ParameterError(
            f"horizon={T}: must be at most {min(DENSE_LIMIT, mechanism.horizon or DENSE_LIMIT)}"
        )
    if T > MAX_EXACT_OUTPUT_HORIZON:
        return None
    plan = mechanism.plan(T)
    if not isinstance(plan, LinearPlan):
        raise ParameterError(
            f"mechanism={mechanism!r}: its plan is a {type(plan).__name__}, not a node-interval "
            "LinearPlan; the exact output-level ρ is computed for LinearPlans"
        )
    R = plan.recombination.to_dense_exact()
    sig = mechanism.noise_multipliers(T)
    sigma = [Fraction(float(s)) for s in np.broadcast_to(np.asarray(sig), (len(R[0]),))]
    M = np.array([[r * s for r, s in zip(row, sigma, strict=True)] for row in R], dtype=object)
    Q = np.array(plan.dense_Q_exact(), dtype=object)
    try:
        mus = item_mu_squared(M, Q, plan.sensitivity, max_work=max_work)
    except ParameterError:
        return None
    finite = [q for q in mus.mu_squared if q is not None]
    if len(finite) != len(mus.mu_squared):  # pragma: no cover - every dpref node has noise
        raise AssertionError(f"{mechanism!r}: an item's shift is not covered by noise")
    top = max(finite, default=Fraction(0))
    return OutputBudget(
        horizon=T,
        rho=top / 2,
        declared_rho=mechanism.declared_rho,
        item=finite.index(top) + 1 if finite else 1,
        free_draws=mus.free,
    )
