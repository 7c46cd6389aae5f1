"""The report of an exact audit (:func:`~dpref.audit.injected.structural.exact_audit`).

:class:`StructuralReport` holds what the exact analysis of a noise-injectable target
established — the exact pure-ε loss (Laplace draws) or the exact μ² (Gaussian draws), its
rounding-proof lower bound, the structure recovered — and turns it into the outcome, the
verdict every dpref audit report carries, the JSON and the text summary
(docs/auditing.md §9).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from dpref.audit.isolation.targets import Finding
from dpref.report_html import HtmlSummary
from dpref.validation import ceil_sqrt_float

__all__ = ["StructuralReport"]


def _show(q: Fraction | None) -> str:
    if q is None:
        return "∞"
    if q.denominator == 1 or (q.denominator < 10**6 and q.numerator < 10**9):
        return str(q)
    return (
        f"{float(q):.17g} (exactly a rational with a {q.denominator.bit_length()}-bit denominator)"
    )


@dataclass
class StructuralReport(HtmlSummary):
    """The result of :func:`exact_audit`.

    ``privacy`` is the view the claim is judged in: ``pure`` (ε, Laplace draws), ``gdp``
    (a μ claim) or ``zcdp`` (a ρ claim); ``law`` the law of the recorded draws.  For
    normal draws the exact values are ``mu_squared`` (``μ² = max_i μ_i²``), ``rho =
    μ²/2`` and ``mu`` (a float, rounded up); both GDP and zCDP claims are judged by
    ``μ² ≤ μ²_claimed`` exactly (``2ρ`` or ``μ²``), because a linear Gaussian release is
    exactly μ-GDP and exactly μ²/2-zCDP.
    """

    target: str
    horizon: int
    protocol: str
    domain: str
    sensitivity: Fraction
    claimed: Fraction | None
    """The claimed ε (None: no ε claim)."""
    epsilon: Fraction | None = None
    """The certified upper bound U = max_i U_i, exactly (None: infinite or unavailable)."""
    epsilon_lower: Fraction | None = None
    """The certified lower bound on the LP optimum (equal to ``epsilon`` when exact)."""
    epsilon_stated: Fraction | None = None
    """``epsilon`` as a readable rational (see :func:`stated_epsilon`)."""
    scope: str = "unavailable"
    """``exact`` (the loss of the released vector), ``upper bound`` or ``unavailable``."""
    infinite: bool = False
    """The loss analysed (ε, or μ for normal draws in the GDP/zCDP view) is infinite."""
    item: int | None = None
    """The item (1-indexed) that attains ε (μ for normal draws)."""
    item_epsilons: list[Fraction | None] = field(default_factory=list)
    draws: int = 0
    distinct_scales: list[float] = field(default_factory=list)
    rank: int = 0
    used_draws: int = 0
    residual: float = 0.0
    residual_ratio: float = 0.0
    calls: int = 0
    seconds: float = 0.0
    certified: bool = False
    notes: list[str] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    sampled_lower_bound: float | None = None
    """A statistical lower bound from the sampled audit, when one was run (ε; μ in the
    GDP/zCDP view)."""
    sampled_confidence: float | None = None
    privacy: str = "pure"
    isolation: str | None = None
    """The isolation the target's worker ran in (:mod:`dpref.audit.isolation.sandbox`); None for a
    target run in this process."""
    """The view of the claim: ``pure``, ``gdp`` or ``zcdp`` (see the class doc)."""
    law: str = "unknown"
    """Law of the recorded draws: ``laplace``, ``normal``, ``none`` (no draw) or
    ``unknown`` (the analysis did not get that far)."""
    claimed_rho: Fraction | None = None
    """The claimed ρ (zCDP), exactly."""
    claimed_mu: Fraction | None = None
    """The claimed μ (GDP), exactly."""
    mu_squared: Fraction | None = None
    """``μ² = max_i μ_i²`` of normal draws, exactly (None: infinite or not computed)."""
    mu_squared_stated: Fraction | None = None
    """``mu_squared`` as a readable rational (the claimed μ² or a small denominator when
    within 1e-12 relative, see :func:`stated_epsilon`)."""
    item_mu_squared: list[Fraction | None] = field(default_factory=list)
    """``μ_i²`` per item (None: ∞)."""
    mu_infinite: bool = False
    """Some item's change is not covered by the normal noise (μ = ∞)."""
    mu_item: int | None = None
    """The item (1-indexed) that attains μ."""
    mu_method: str | None = None
    """How the least-norm shift was solved: ``unique``, ``free`` or ``rows``
    (:class:`~dpref.audit.gaussian.l2loss.ItemMuSquared`)."""
    free_draws: int = 0
    """Used draws the outputs do not determine (normal draws: ``used − rank``)."""
    mu_squared_lower: Fraction | None = None
    """When μ² exceeds a μ/ρ claim: a lower bound on :attr:`mu_item`'s μ² that holds
    whatever the rounding of the probed structure
    (:func:`~dpref.audit.gaussian.l2loss.mu_squared_lower_bound`); only a bound above the claim
    makes the outcome a violation (None: not computed)."""
    mu_lower_infinite: bool = False
    """The item's change is outside the noise's reach whatever the probe rounding."""
    epsilon_lower_rounding: Fraction | None = None
    """Laplace draws, when the loss exceeds an ε claim: a lower bound on :attr:`item`'s
    ε that holds whatever the rounding of the probed structure (the L1 twin of
    :attr:`mu_squared_lower`); only a bound above the claim makes a violation."""
    epsilon_lower_infinite: bool = False
    """Laplace draws: the item's change is outside the noise's reach whatever the probe
    rounding."""
    basis: str = ""
    """What the exactness rests on: the probes that verified the structure
    (:func:`~dpref.audit.injected.exact_probes.basis_text`)."""
    precision: str = "float64"
    """The error model of the target's rounding: ``float64`` or ``float32``
    (:mod:`dpref.audit.injected.rounding`)."""
    precision_source: str = "requested"
    """How the precision was chosen (``requested``, or auto-detected, in words)."""
    unit_roundoff: Fraction | None = None
    """The unit roundoff of a non-float64 precision (2⁻²⁴ for float32), exactly."""
    slack_lower: Fraction | None = None
    """Non-float64 precision: a lower bound on the loss (μ², or ε) of every real linear
    structure the probes allow under the error model — what a violation rests on."""
    slack_upper: Fraction | None = None
    """Non-float64 precision: the matching upper bound (None: not certified, see
    :attr:`slack_note`)."""
    slack_note: str = ""
    """Why the upper slack was not certified (empty when it was)."""
    lp_vectors: list[Any] | None = None
    """The LP's v per item (Laplace draws, dependent columns), for the slack."""
    ladder_top: str = "1e300"
    """The output magnitude the noise ladder reached (``1e36`` under float32)."""
    lp_duals: list[Any] | None = None
    """The LP's dual u per item (Laplace draws, dependent columns), for the slack."""

    @property
    def slack(self) -> bool:
        """True when the verdict rests on a rounding slack (a non-float64 precision)."""
        return self.precision != "float64"

    @property
    def available(self) -> bool:
        """True when the loss was computed (no finding blocked the analysis)."""
        return self.scope != "unavailable"

    @property
    def gaussian(self) -> bool:
        """True when the target's draws are normal (the exact μ is the analysis)."""
        return self.law == "normal"

    @property
    def claimed_mu_squared(self) -> Fraction | None:
        """The claimed μ², exactly: ``2ρ`` for a ρ claim, ``μ²`` for a μ claim."""
        if self.claimed_rho is not None:
            return 2 * self.claimed_rho
        if self.claimed_mu is not None:
            return self.claimed_mu**2
        return None

    @property
    def rho(self) -> Fraction | None:
        """``μ²/2``, exactly: the least ρ of zCDP of the linear Gaussian release."""
        return None if self.mu_squared is None else self.mu_squared / 2

    @property
    def mu(self) -> float | None:
        """μ as a float rounded up (``inf`` when μ is infinite, None when not computed)."""
        if self.mu_infinite:
            return math.inf
        return None if self.mu_squared is None else ceil_sqrt_float(self.mu_squared)

    @property
    def _mismatch(self) -> bool:
        """A μ/ρ claim on a target whose draws are Laplace: not analysed."""
        return self.privacy != "pure" and self.law == "laplace"

    @property
    def outcome(self) -> str:
        """What the exact analysis established: ``violation``, ``holds-exactly``,
        ``holds-within-rounding`` (the loss exceeds the claim only by float rounding of the
        target's own scales, at most 1e-12 relative), ``over-noised``, ``no-claim``,
        ``unavailable``, ``undetermined`` (only an upper bound, and it exceeds the claim)
        or ``law-mismatch`` (a ρ/μ claim on a target drawing Laplace noise)."""
        if not self.available:
            return "unavailable"
        if self._mismatch:
            return "law-mismatch"
        if self.privacy != "pure":
            claim = self.claimed_mu_squared
            if claim is None:
                return "no-claim"
            if self.mu_infinite:
                return "violation" if self._certified_above(claim) else "undetermined"
            assert self.mu_squared is not None and self.mu_squared_stated is not None
            outcome = _compare(self.mu_squared, self.mu_squared_stated, claim, True, self.slack)
            if outcome == "violation" and not self._certified_above(claim):
                return "undetermined"
            return outcome
        if self.claimed is None:
            return "no-claim"
        rounding_proof = (
            self.gaussian
            or self.epsilon_lower_infinite
            or (
                self.epsilon_lower_rounding is not None
                and self.epsilon_lower_rounding > self.claimed
            )
        )
        if self.infinite:
            return "violation" if rounding_proof else "undetermined"
        assert self.epsilon is not None and self.epsilon_stated is not None
        outcome = _compare(
            self.epsilon, self.epsilon_stated, self.claimed, self.scope == "exact", self.slack
        )
        return "undetermined" if outcome == "violation" and not rounding_proof else outcome

    def _certified_above(self, claim: Fraction) -> bool:
        """Whether μ² exceeds ``claim`` even allowing for the rounding of the probes."""
        lower = self.mu_squared_lower
        return self.mu_lower_infinite or (lower is not None and lower > claim)

    @property
    def verdict(self) -> str:
        """The audit verdict every dpref report carries: ``violation``,
        ``no-violation-found`` or ``inconclusive`` (:attr:`outcome` says more)."""
        outcome = self.outcome
        if outcome == "violation":
            return "violation"
        if outcome in ("unavailable", "undetermined", "law-mismatch"):
            return "inconclusive"
        return "no-violation-found"

    @property
    def reason(self) -> str:
        """The verdict in words."""
        outcome = self.outcome
        if self.privacy == "pure" and self.gaussian and outcome == "violation":
            return (
                "violation: the target adds Gaussian noise, so its pure loss is unbounded "
                "(ε = ∞); a Gaussian target claims ρ (--rho) or μ (--mu)"
            )
        if (
            self.privacy == "pure"
            and outcome == "undetermined"
            and (self.scope == "exact" or self.infinite)
        ):
            return (
                "undetermined: the exact loss exceeds the claimed ε, but by no more than the "
                "float rounding of the probed structure can account for (not a refutation)"
            )
        if self.privacy != "pure" and outcome in _GDP_TEXT:
            what = "2ρ" if self.privacy == "zcdp" else "μ²"
            text = _GDP_TEXT[outcome].replace("{claim}", what)
        else:
            text = _VERDICT_TEXT[outcome]
        if self.slack and outcome == "holds-within-rounding":
            what = "2ρ" if self.privacy == "zcdp" else "μ²" if self.privacy == "gdp" else "ε"
            return (
                f"holds up to {self.precision} rounding: the claimed {what} lies within the "
                "rounding slack of the loss (see the slack line)"
            )
        return text

    @property
    def exit_code(self) -> int:
        """0 no violation found, 1 violation, 3 inconclusive (as ``dpref audit``)."""
        return {"violation": 1, "inconclusive": 3}.get(self.verdict, 0)

    @property
    def ok(self) -> bool:
        """No violation and nothing that blocked the analysis."""
        return self.verdict == "no-violation-found"

    def as_dict(self) -> dict[str, Any]:
        """JSON-friendly dict (exact values as strings ``"p/q"``, ``null`` for ∞)."""

        def s(q: Fraction | None) -> str | None:
            return None if q is None else str(q)

        mu = self.mu
        return {
            "target": self.target,
            "isolation": self.isolation,
            "horizon": self.horizon,
            "protocol": self.protocol,
            "domain": self.domain,
            "sensitivity": str(self.sensitivity),
            "claimed_epsilon": s(self.claimed),
            "epsilon": s(self.epsilon),
            "epsilon_float": None if self.epsilon is None else float(self.epsilon),
            "epsilon_lower": s(self.epsilon_lower),
            "epsilon_stated": s(self.epsilon_stated),
            "scope": self.scope,
            "infinite": self.infinite,
            "item": self.item,
            "item_epsilons": [s(q) for q in self.item_epsilons],
            "verdict": self.verdict,
            "outcome": self.outcome,
            "reason": self.reason,
            "structure": {
                "draws": self.draws,
                "distinct_scales": self.distinct_scales,
                "used_draws": self.used_draws,
                "rank": self.rank,
                "A_shape": [self.horizon, self.horizon],
                "residual": self.residual,
                "residual_ratio": self.residual_ratio,
                "free_draws": self.free_draws,
            },
            "certified": self.certified,
            "calls": self.calls,
            "seconds": self.seconds,
            "notes": list(self.notes),
            "findings": [f.as_dict() for f in self.findings],
            "sampled_lower_bound": self.sampled_lower_bound,
            "sampled_confidence": self.sampled_confidence,
            "privacy": self.privacy,
            "law": self.law,
            "claimed_rho": s(self.claimed_rho),
            "claimed_mu": s(self.claimed_mu),
            "claimed_mu_squared": s(self.claimed_mu_squared),
            "mu_squared": s(self.mu_squared),
            "mu_squared_stated": s(self.mu_squared_stated),
            "mu": None if mu is None or math.isinf(mu) else mu,
            "rho": s(self.rho),
            "mu_infinite": self.mu_infinite,
            "mu_item": self.mu_item,
            "mu_method": self.mu_method,
            "item_mu_squared": [s(q) for q in self.item_mu_squared],
            "mu_squared_lower": s(self.mu_squared_lower),
            "epsilon_lower_rounding": s(self.epsilon_lower_rounding),
            "epsilon_lower_infinite": self.epsilon_lower_infinite,
            "mu_lower_infinite": self.mu_lower_infinite,
            "basis": self.basis,
            "precision": self.precision,
            "precision_source": self.precision_source,
            "unit_roundoff": s(self.unit_roundoff),
            "rounding_slack": None
            if not self.slack
            else {
                "lower": s(self.slack_lower),
                "upper": s(self.slack_upper),
                "lower_float": None if self.slack_lower is None else float(self.slack_lower),
                "upper_float": None if self.slack_upper is None else float(self.slack_upper),
                "of": "epsilon" if self.privacy == "pure" else "mu_squared",
                "upper_not_certified": self.slack_note or None,
            },
        }

    def _claim_line(self) -> str | None:
        if self.claimed is not None:
            return f"claimed     ε = {self.claimed}"
        if self.claimed_rho is not None:
            return f"claimed     ρ = {self.claimed_rho} (zCDP; μ² = 2ρ = {self.claimed_mu_squared})"
        if self.claimed_mu is not None:
            return f"claimed     μ = {self.claimed_mu} (GDP; μ² = {self.claimed_mu_squared})"
        return None

    def _structure_lines(self) -> list[str]:
        scales = ", ".join(f"{b:.6g}" for b in self.distinct_scales[:6])
        more = ", …" if len(self.distinct_scales) > 6 else ""
        noun = "Gaussian draws (scales" if self.gaussian else "Laplace draws (scales"
        ξ = "ξ ~ N(0, 1)" if self.gaussian else "ξ"
        return [
            f"structure   y = A·x + M·ξ + c: {self.draws} {noun} {scales}{more}); "
            f"{self.used_draws} reach the outputs, rank M = {self.rank}; A is "
            f"{self.horizon}×{self.horizon}",
            f"linearity   verified on structured and random streams, random {ξ} and a noise "
            f"ladder 1e-310..{self.ladder_top}: worst residual "
            f"{self.residual_ratio:.3g} × the {'float32 ' if self.slack else ''}rounding "
            f"tolerance; reproducible; {self.calls} calls",
        ]

    def _mu_lines(self) -> list[str]:
        return self._mu_value_lines() + _rounding_line(
            "μ", "μ²", self.mu_lower_infinite, self.mu_squared_lower
        )

    def _mu_value_lines(self) -> list[str]:
        where = f" (item t={self.mu_item})" if self.mu_item is not None else ""
        if self.mu_infinite:
            return [f"exact μ     μ = ∞{where}: a change of this item is not covered by noise"]
        assert self.mu_squared is not None
        stated = self.mu_squared_stated
        value = (
            _show(stated)
            if stated == self.mu_squared
            else f"{_show(stated)} ({self._near}; exactly {_show(self.mu_squared)})"
        )
        rho = self.rho
        assert rho is not None and stated is not None
        method = {
            "unique": "M's used columns are independent, so v is unique",
            "free": f"least-norm v over {self.free_draws} free draws",
            "rows": f"least-norm v on M's row space ({self.rank} rows)",
        }.get(self.mu_method or "", "")
        return [
            f"exact μ     μ² = {value}{where}: μ = {self.mu:.6g} (rounded up), "
            f"ρ = μ²/2 = {_show(stated / 2)}",
            f"            exact: μ_i² = min ‖v‖₂² over M·v = Δ·A·e_i ({method}; exact "
            "rational elimination)",
        ]

    def _epsilon_lines(self) -> list[str]:
        return self._epsilon_value_lines() + _rounding_line(
            "ε", "ε", self.epsilon_lower_infinite, self.epsilon_lower_rounding
        )

    def _epsilon_value_lines(self) -> list[str]:
        where = f" (item t={self.item})" if self.item is not None else ""
        if self.infinite:
            if self.gaussian:
                return [
                    f"pure loss   ε = ∞{where}: Gaussian noise has an unbounded density ratio "
                    "under any shift"
                ]
            return [f"exact loss  ε = ∞{where}: a change of this item is not covered by noise"]
        kind = "exact loss " if self.scope == "exact" else "loss ≤     "
        stated = self.epsilon_stated
        value = (
            f"{_show(stated)}"
            if stated == self.epsilon
            else (f"{_show(stated)} ({self._near}; exactly {_show(self.epsilon)})")
        )
        lines = [f"{kind} ε = {value}{where}"]
        if self.gaussian:
            lines.append("            (no item moves an output: the release does not use x)")
        elif self.scope == "exact":
            lines.append(
                "            exact: M's used columns are independent, so the outputs "
                "determine the noise (unique v, exact rational elimination)"
            )
        else:
            lo = self.epsilon_lower
            lines.append(
                "            upper bound on the loss of the released vector: min-L1 LP "
                f"(HiGHS), certified LP optimum in [{_show(lo)}, {_show(self.epsilon)}]"
            )
        return lines

    @property
    def _near(self) -> str:
        """How close the readable value is to the exact one."""
        return f"within the {self.precision} slack" if self.slack else "to 10⁻¹²"

    def _slack_lines(self) -> list[str]:
        """The precision and the rounding slack (non-float64 precision only)."""
        if not self.slack:
            return []
        u = self.unit_roundoff
        sup = str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹")
        unit = f"2⁻{str(u.denominator.bit_length() - 1).translate(sup)}" if u else "?"
        lines = [
            f"precision   {self.precision} (unit roundoff u = {unit}; {self.precision_source})"
        ]
        sym = "ε" if self.privacy == "pure" else "μ²"
        if self.privacy == "pure" and self.scope == "upper bound":
            sym = "ε (the LP bound)"
        lo, hi = self.slack_lower, self.slack_upper
        if lo is None:
            if self.slack_note:
                lines.append(f"slack       {self.slack_note}")
            return lines
        value = self.epsilon if self.privacy == "pure" else self.mu_squared
        rel = ""
        if value and hi is not None:
            rel = f" (±{float(max(hi - value, value - lo) / value):.2g} relative)"
        upper = f"{float(hi):.12g}" if hi is not None else "not certified"
        lines.append(
            f"slack       {sym} ∈ [{float(lo):.12g}, {upper}]{rel} for every real linear "
            f"structure within the {self.precision} rounding of the probes (each output a "
            "sum of ≤ T + K + 1 terms with error ≤ 4(n + 1)·u·Σ|terms|; docs/auditing.md §9)"
        )
        if hi is None and self.slack_note:
            lines.append(f"            upper end not certified: {self.slack_note}")
        return lines

    def summary(self) -> str:
        """A human-readable report: the verdict and its reason first, as every audit report."""
        if self.privacy == "pure":
            violated = "VIOLATION: the target is not ε-DP (its exact loss exceeds the claim)"
        elif self.privacy == "zcdp":
            violated = "VIOLATION: the target is not ρ-zCDP (its exact ρ exceeds the claim)"
        else:
            violated = "VIOLATION: the target is not μ-GDP (its exact μ exceeds the claim)"
        headline = {"violation": violated, "inconclusive": "INCONCLUSIVE"}.get(
            self.verdict, "no violation found"
        )
        lines = [
            f"verdict     {headline} ({self.seconds:.2f} s)",
            f"reason      {self.reason}",
            f"target      {self.target} (noise protocol: {self.protocol})",
            f"horizon     T={self.horizon}, domain {self.domain}, Δ = {self.sensitivity}",
        ]
        claim = self._claim_line()
        if claim is not None:
            lines.append(claim)
        if self.available:
            lines += self._structure_lines()
            if self.gaussian:
                lines += self._mu_lines()
            if not self.gaussian or self.privacy == "pure":
                lines += self._epsilon_lines()
            lines += self._slack_lines()
        if self.sampled_lower_bound is not None:
            sym = "ε" if self.privacy == "pure" else "μ"
            lines.append(
                f"sampled     {sym} ≥ {self.sampled_lower_bound:.4f} with confidence "
                f"{self.sampled_confidence} (statistical audit)"
            )
        if self.available and self.basis:
            lines.append(f"basis       {self.basis}")
        lines += [f"note        {n}" for n in self.notes]
        lines += [f"finding     {f}" for f in self.findings]
        return "\n".join(lines)


def _rounding_line(symbol: str, bounded: str, infinite: bool, lower: Fraction | None) -> list[str]:
    """The report line saying what a violation rests on: the rounding-proof lower bound."""
    if infinite:
        return [f"rounding    {symbol} = ∞ whatever the rounding of the probed structure"]
    if lower is None:
        return []
    return [
        f"rounding    {bounded} ≥ {float(lower):.10g} whatever the rounding of the probed "
        "structure (what a violation rests on)"
    ]


def _compare(
    value: Fraction, stated: Fraction, claim: Fraction, exact: bool, slack: bool = False
) -> str:
    """The outcome of an exact (or upper-bound) loss ``value`` against ``claim``
    (``slack``: ``stated`` is the claim when the claim lies within the rounding slack,
    on either side of the value)."""
    if value == claim:
        return "holds-exactly"
    if stated == claim:
        return "holds-within-rounding" if value > claim or slack else "holds-exactly"
    if value <= claim:
        return "over-noised"
    # an exact loss above the claim refutes it; an upper bound above it does not
    return "violation" if exact else "undetermined"


_VERDICT_TEXT = {
    "violation": "violation: the exact loss exceeds the claimed ε",
    "holds-exactly": "holds exactly: the loss equals the claimed ε",
    "holds-within-rounding": "holds up to float rounding: the loss exceeds the claimed ε by at "
    "most 1e-12 relative, from the target's own float scales",
    "over-noised": "holds, over-noised: the loss is below the claimed ε",
    "no-claim": "no ε claimed",
    "undetermined": "undetermined: the upper bound exceeds the claimed ε (not a refutation)",
    "unavailable": "unavailable: the exact loss could not be computed (see findings)",
    "law-mismatch": "law mismatch: the target draws Laplace noise; its exact pure ε is "
    "reported, a ρ/μ claim is not analysed for Laplace draws (give --epsilon)",
}

_GDP_TEXT = {
    "violation": "violation: the exact μ² exceeds the claimed {claim}",
    "holds-exactly": "holds exactly: μ² equals the claimed {claim}",
    "holds-within-rounding": "holds up to float rounding: μ² exceeds the claimed {claim} by "
    "at most 1e-12 relative, from the target's own float σ",
    "over-noised": "holds, over-noised: μ² is below the claimed {claim}",
    "no-claim": "no ρ or μ claimed",
    "undetermined": "undetermined: the computed μ² exceeds the claimed {claim}, but by no more "
    "than the float rounding of the probed structure can account for (not a refutation)",
}
