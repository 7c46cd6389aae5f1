"""What an audit reports: the verdicts and their exit codes, the neighbouring pair, each
tested event's bound, and :class:`AuditReport` (its JSON form and its summary)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt

from dpref.audit.isolation.targets import Finding
from dpref.audit.pure.exact import ExactLoss
from dpref.report_html import HtmlSummary

__all__ = [
    "CONFORMS",
    "CONFORM_VERDICTS",
    "DOES_NOT_CONFORM",
    "EXIT_CODES",
    "EXIT_USAGE",
    "INCONCLUSIVE",
    "NO_VIOLATION",
    "UNDETERMINING",
    "VERDICTS",
    "VIOLATION",
    "AuditReport",
    "EventResult",
    "NeighbourPair",
    "golden_exit_code",
]

FloatArray = npt.NDArray[np.float64]


VIOLATION = "violation"
"""Verdict: a privacy violation was established (audit: a lower bound, or the exact loss,
exceeds the claim; conform: the output-level budget's interval lies above the claim)."""

NO_VIOLATION = "no-violation-found"
"""Verdict: everything that was meant to run ran, and nothing was proven wrong."""

INCONCLUSIVE = "inconclusive"
"""Verdict: the target prevented part of the run (crash, time-out, bad output) and
nothing was proven wrong with what could run: neither a pass nor a failure."""

VERDICTS = (VIOLATION, NO_VIOLATION, INCONCLUSIVE)

CONFORMS = "conforms"
"""Conform verdict: every check that applies ran and passed."""

DOES_NOT_CONFORM = "does-not-conform"
"""Conform verdict: a check failed or the target showed a defect the reference never
shows — the target is not the reference.  Not a privacy verdict: an over-noised target
does not conform either."""

CONFORM_VERDICTS = (CONFORMS, DOES_NOT_CONFORM, VIOLATION, INCONCLUSIVE)
"""``dpref conform``'s verdicts: ``violation`` only when the output-level budget's
interval lies above the claim (:mod:`dpref.audit.conformance.conform_output`)."""

EXIT_CODES = {NO_VIOLATION: 0, CONFORMS: 0, VIOLATION: 1, DOES_NOT_CONFORM: 1, INCONCLUSIVE: 3}
"""Exit code of ``dpref audit`` (sampled and ``--exact``), ``dpref conform`` and
``dpref golden run`` per verdict; 2 is a usage or input error (docs/auditing.md §5):
0 only when nothing was found; 1 a proven violation or (conform) a failure to conform."""

EXIT_USAGE = 2
"""Exit code of a usage or input error (one line on stderr)."""

UNDETERMINING = ("timeout", "not-deterministic", "gave-up")
"""Finding kinds that leave a conformance check (``conform``, ``golden run``) untested
rather than failed: exit 3.  Any other finding there is a difference from the reference
that the reference never shows (an exception, NaN, a wrong length): exit 1."""


def golden_exit_code(result: Any) -> int:
    """The exit code of ``dpref golden run`` for a
    :class:`~dpref.audit.conformance.golden_run.GoldenRun`:
    0 every vector matched; 1 a wrong output or a defect finding on some vector
    (non-conformance); 3 the target only timed out, was given up on or left vectors
    unrun (nothing proven wrong, nothing established)."""
    if result.ok:
        return EXIT_CODES[CONFORMS]
    if result.mismatches or any(f.kind not in UNDETERMINING for _, f in result.findings):
        return EXIT_CODES[DOES_NOT_CONFORM]  # a wrong output is not a privacy verdict
    return EXIT_CODES[INCONCLUSIVE]


@dataclass(frozen=True)
class NeighbourPair:
    """Two streams that differ in exactly one item."""

    x: tuple[float, ...]
    """The first stream."""
    x_prime: tuple[float, ...]
    """Its neighbour."""
    description: str
    """How it was built, in words."""

    @property
    def position(self) -> int:
        """The (1-indexed) step where they differ."""
        for i, (a, b) in enumerate(zip(self.x, self.x_prime, strict=True)):
            if a != b:
                return i + 1
        return 0

    def as_dict(self) -> dict[str, Any]:
        """JSON-friendly dict."""
        return {
            "x": _compact(self.x),
            "x_prime": _compact(self.x_prime),
            "position": self.position,
            "description": self.description,
        }


def _compact(v: Sequence[float]) -> list[float | int]:
    return [int(a) if float(a).is_integer() else float(a) for a in v]


def _num(v: float) -> str:
    return str(int(v)) if float(v).is_integer() else f"{v:g}"


@dataclass(frozen=True)
class EventResult:
    """One event evaluated on the test split."""

    kind: str
    """``black-box`` or ``plan-aware``."""
    description: str
    """The event in words."""
    numerator: str
    """Which stream is in the numerator (``x`` or ``x′``)."""
    count_numerator: int
    """Test samples of the numerator stream in the event."""
    count_denominator: int
    """Test samples of the denominator stream in the event."""
    samples: int
    """Test samples per side."""
    p_numerator_low: float
    """Clopper–Pearson lower bound on the numerator probability."""
    p_denominator_high: float
    """Clopper–Pearson upper bound on the denominator probability."""
    epsilon_lower_bound: float
    """``ln(p_low / p_high)`` (``-inf`` when the numerator count is 0)."""
    epsilon_estimate: float
    """The plug-in ``ln(p̂₁/p̂₂)`` (``inf`` when the denominator count is 0)."""
    selection_score: float
    """The projected bound that got it chosen."""
    mu_lower_bound: float | None = None
    """Approximate-DP view: ``Φ⁻¹(p_low) − Φ⁻¹(p_high)``
    (:func:`~dpref.audit.gaussian.gdp.mu_lower_bound`)."""
    zcdp_rho_lower_bound: float | None = None
    """Approximate-DP view: the Bernoulli Rényi bound on ρ
    (:func:`~dpref.audit.gaussian.gdp.zcdp_lower_bound`)."""

    def as_dict(self) -> dict[str, Any]:
        """JSON-friendly dict (the approximate-DP keys only in that view)."""
        out = self._base_dict()
        if self.mu_lower_bound is not None:
            out["mu_lower_bound"] = _json_float(self.mu_lower_bound)
        if self.zcdp_rho_lower_bound is not None:
            out["zcdp_rho_lower_bound"] = _json_float(self.zcdp_rho_lower_bound)
        return out

    def _base_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "description": self.description,
            "numerator": self.numerator,
            "count_numerator": self.count_numerator,
            "count_denominator": self.count_denominator,
            "samples": self.samples,
            "p_numerator_low": self.p_numerator_low,
            "p_denominator_high": self.p_denominator_high,
            "epsilon_lower_bound": _json_float(self.epsilon_lower_bound),
            "epsilon_estimate": _json_float(self.epsilon_estimate),
            "selection_score": _json_float(self.selection_score),
        }


def _json_float(v: float) -> float | str:
    return v if math.isfinite(v) else ("inf" if v > 0 else "-inf")


@dataclass
class AuditReport(HtmlSummary):
    """The outcome of :func:`audit`."""

    target: str
    """The target's name."""
    claimed_epsilon: Fraction | None
    """The ε the target claims (pure, or the ε of an (ε, δ) claim; else None)."""
    horizon: int
    """T."""
    confidence: float
    """The confidence of the bound."""
    epsilon_lower_bound: float | None
    """The largest bound over the test events (None: no pair could be sampled)."""
    violation: bool
    """``ε_lb > claimed ε``: a violation proven at this confidence."""
    neighbours: NeighbourPair | None
    """The pair the bound is for."""
    event: str
    """The best event in words (with its orientation)."""
    events: list[EventResult]
    """Every event evaluated on the test split (the Bonferroni family)."""
    samples: int
    """Samples per side of the reported pair (selection + test)."""
    selection_samples: int
    """Selection samples per stream."""
    test_samples: int
    """Fresh test samples per side."""
    pairs_screened: int
    """Neighbouring pairs screened on the selection split."""
    seconds: float
    """Wall time."""
    findings: list[Finding] = field(default_factory=list)
    """Crashes, bad outputs and time-outs of the target."""
    exact: ExactLoss | None = None
    """The exact loss (built-in mechanisms, T ≤ 8)."""
    seed: Any = None
    """The seed used."""
    streams_failed: int = 0
    """Distinct streams of the screened pairs the target could not be sampled on."""
    streams_total: int = 0
    """Distinct streams of the screened pairs."""
    privacy: str = "pure"
    """``pure`` (ε-DP), ``gdp`` (μ-GDP or (ε, δ)) or ``zcdp`` (ρ-zCDP): the claim's view."""
    claim_kind: str = "epsilon"
    """``epsilon``, ``mu``, ``rho`` or ``epsilon-delta``: which bound decides the verdict."""
    mu_lower_bound: float | None = None
    """μ_lb: the largest ``Φ⁻¹(p₁_low) − Φ⁻¹(p₂_high)`` over the tested events."""
    zcdp_rho_lower_bound: float | None = None
    """The largest Bernoulli Rényi bound on a zCDP ρ over the tested events."""
    claimed_mu2: Fraction | None = None
    """μ² of a μ-GDP claim (exact)."""
    claimed_rho: Fraction | None = None
    """ρ of a ρ-zCDP claim, or the ρ a μ-GDP claim was given as (exact)."""
    isolation: str | None = None
    """Where a black-box target ran (:data:`dpref.audit.isolation.sandbox.LEVELS`); None:
    in-process."""
    claimed_delta: Fraction | None = None
    """δ of an (ε, δ) claim (exact)."""
    mu_star: float | None = None
    """(ε, δ) claim: the largest μ whose GDP curve implies it (rounded down)."""
    epsilon_delta: dict[str, float | None] | None = None
    """ε(δ) of a μ_lb-GDP mechanism at δ = 1e-3, 1e-5, 1e-7 (informational, floats)."""
    model_mu: float | None = None
    """The chosen pair's exact μ under a Gaussian built-in's / reference's model."""
    pairs_design: str = ""
    """Which positions the screened pairs flip (:func:`~dpref.audit.pure.pairs.cover_design`)."""

    @property
    def claimed_mu(self) -> float | None:
        """The claimed μ (nearest float; the verdict compares the exact μ²)."""
        return None if self.claimed_mu2 is None else math.sqrt(self.claimed_mu2)

    @property
    def rho_of_mu_lower_bound(self) -> float | None:
        """``μ_lb²/2``: the ρ of a μ_lb-GDP mechanism (not a zCDP bound for other mechanisms:
        that is :attr:`zcdp_rho_lower_bound`); None unless μ_lb > 0.  Named so that it is
        not read as a lower bound on a claimed zCDP ρ."""
        mu = self.mu_lower_bound
        return None if mu is None or not mu > 0 else mu * mu / 2

    @property
    def rho_lower_bound(self) -> float | None:
        """The lower bound on ρ *in the report's view*, comparable with :attr:`claimed_rho`:
        the Rényi bound :attr:`zcdp_rho_lower_bound` under ``privacy="zcdp"`` (zCDP does not
        imply GDP, so μ_lb²/2 bounds nothing there), and :attr:`rho_of_mu_lower_bound` =
        μ_lb²/2 under ``privacy="gdp"`` (the ρ = μ²/2 of the GDP guarantee the target is
        audited for).  None in the pure view."""
        if self.privacy == "zcdp":
            return self.zcdp_rho_lower_bound
        if self.privacy == "gdp":
            return self.rho_of_mu_lower_bound
        return None

    @property
    def verdict(self) -> str:
        """``violation`` (proven, whatever else happened), else ``inconclusive`` when the
        target kept a pair from being sampled, no event could be tested or anything was
        found (a finding — NaN, a crash, a time-out, a fork, a signed zero … — means the
        outputs sampled are not the release a pass would speak for), else
        ``no-violation-found`` (docs/auditing.md §5)."""
        if self.violation:
            return VIOLATION
        if self.epsilon_lower_bound is None or self.streams_failed or self.findings:
            return INCONCLUSIVE
        return NO_VIOLATION

    @property
    def verdict_basis(self) -> str:
        """The number the verdict rests on, in words: the lower bound of the claim's kind
        (measured on the released outputs, so it bounds their output-level loss) against
        the claim; a violation is established only when it exceeds the claim."""
        if self.privacy == "pure":
            lb = self.epsilon_lower_bound
            claim = f"the claimed ε = {self.claimed_epsilon}"
            bound = None if lb is None else f"ε ≥ {lb:.4f}"
        else:
            claim = f"the claimed {self._claim_text()}"
            bound = None if self.mu_lower_bound is None else self._bound_text()
        if bound is None:
            return "no lower bound: no neighbouring pair could be sampled and tested"
        where = (
            "output-level: a lower bound on what the released outputs leak, confidence "
            f"{self.confidence:g}"
        )
        rel = "exceeds" if self.violation else "does not exceed"
        text = f"{bound} ({where}), which {rel} {claim}"
        if self.verdict == INCONCLUSIVE and not self.violation:
            text += "; findings or unsampled streams keep it from being a pass"
        return text

    def _found(self) -> str:
        """The findings' kinds, for the reason of an inconclusive verdict."""
        return ", ".join(sorted({f.kind for f in self.findings}))

    @property
    def reason(self) -> str:
        """Why the verdict is what it is: what was established and what was not."""
        if self.privacy != "pure":
            return self._gdp_reason()
        lb, claimed = self.epsilon_lower_bound, self.claimed_epsilon
        failed = (
            f"the target failed on {self.streams_failed} of {self.streams_total} streams "
            f"({self._blocking()})"
            if self.streams_failed
            else ""
        )
        if self.violation:
            assert lb is not None
            text = (
                f"ε ≥ {lb:.4f} > claimed ε = {claimed} with confidence {self.confidence:g}: "
                "the target is not ε-DP"
            )
            return text + (f"; also, {failed}" if failed else "")
        if lb is None:
            if failed:
                return f"{failed}: no neighbouring pair could be sampled and tested; nothing proven"
            return "no event could be built on the outputs (see findings); nothing proven"
        within = (
            f"ε ≥ {lb:.4f} does not exceed the claimed ε = {claimed} "
            f"(confidence {self.confidence:g})"
        )
        if failed:
            return f"{failed}: the pairs on those streams were not audited; on the others {within}"
        if self.findings:
            return f"{within}, but the target showed findings ({self._found()}): not a pass"
        return f"{within}; an audit can refute a claim, never prove it"

    def _claim_text(self) -> str:
        if self.claim_kind == "mu":
            return f"μ = {self.claimed_mu:.6g} (μ² = {self.claimed_mu2})"
        if self.claim_kind == "rho":
            return f"ρ = {self.claimed_rho} (zCDP)"
        return f"(ε, δ) = ({self.claimed_epsilon}, {self.claimed_delta})"

    def _bound_text(self) -> str:
        if self.claim_kind == "rho":
            return f"zCDP ρ ≥ {self.zcdp_rho_lower_bound:.4f}"
        if self.claim_kind == "epsilon-delta":
            return f"an event with P[M(x) ∈ E] > e^ε·P[M(x′) ∈ E] + δ ({self.event})"
        return f"μ ≥ {self.mu_lower_bound:.4f}"

    def _gdp_reason(self) -> str:
        failed = (
            f"the target failed on {self.streams_failed} of {self.streams_total} streams "
            f"({self._blocking()})"
            if self.streams_failed
            else ""
        )
        claim, conf = self._claim_text(), f"confidence {self.confidence:g}"
        what = {"mu": "μ-GDP", "rho": "ρ-zCDP", "epsilon-delta": "(ε, δ)-DP"}[self.claim_kind]
        if self.violation:
            text = f"{self._bound_text()} refutes the claimed {claim} with {conf}: not {what}"
            return text + (f"; also, {failed}" if failed else "")
        if self.mu_lower_bound is None:
            if failed:
                return f"{failed}: no neighbouring pair could be sampled and tested; nothing proven"
            return "no event could be built on the outputs (see findings); nothing proven"
        if self.claim_kind == "epsilon-delta":
            within = (
                f"no tested event exceeds e^ε·P[M(x′) ∈ E] + δ for the claimed {claim} ({conf})"
            )
        else:
            within = f"{self._bound_text()} does not exceed the claimed {claim} ({conf})"
        if failed:
            return f"{failed}: the pairs on those streams were not audited; on the others {within}"
        if self.findings:
            return f"{within}, but the target showed findings ({self._found()}): not a pass"
        return f"{within}; an audit can refute a claim, never prove it"

    def _blocking(self) -> str:
        return "; ".join(str(f) for f in self.findings[:1]) or "no output"

    @property
    def exit_code(self) -> int:
        """0 no violation found, 1 violation, 3 inconclusive."""
        return EXIT_CODES[self.verdict]

    @property
    def ok(self) -> bool:
        """No violation found (not inconclusive) and no findings."""
        return self.verdict == NO_VIOLATION and not self.findings

    def as_dict(self) -> dict[str, Any]:
        """The JSON report (the approximate-DP keys only in that view)."""
        out = self._base_dict()
        if self.privacy == "pure":
            return out

        def frac(v: Fraction | None) -> str | None:
            return None if v is None else str(v)

        def num(v: float | None) -> float | str | None:
            return None if v is None else _json_float(v)

        out["claimed_epsilon_float"] = (
            None if self.claimed_epsilon is None else float(self.claimed_epsilon)
        )
        out.update(
            privacy=self.privacy,
            claim=self.claim_kind,
            mu_lower_bound=num(self.mu_lower_bound),
            rho_lower_bound=num(self.rho_lower_bound),
            rho_of_mu_lower_bound=num(self.rho_of_mu_lower_bound),
            zcdp_rho_lower_bound=num(self.zcdp_rho_lower_bound),
            claimed_mu=self.claimed_mu,
            claimed_mu2=frac(self.claimed_mu2),
            claimed_rho=frac(self.claimed_rho),
            claimed_delta=frac(self.claimed_delta),
            claimed_delta_float=None if self.claimed_delta is None else float(self.claimed_delta),
            mu_star=self.mu_star,
            epsilon_delta=(
                None
                if self.epsilon_delta is None
                else {k: num(v) for k, v in self.epsilon_delta.items()}
            ),
            model_mu=num(self.model_mu),
        )
        return out

    def _base_dict(self) -> dict[str, Any]:
        lb = self.epsilon_lower_bound
        claimed = self.claimed_epsilon
        return {
            "verdict": self.verdict,
            "reason": self.reason,
            "verdict_basis": self.verdict_basis,
            "target": self.target,
            "claimed_epsilon": None if claimed is None else str(claimed),
            "claimed_epsilon_float": None if claimed is None else float(claimed),
            "horizon": self.horizon,
            "epsilon_lower_bound": None if lb is None else _json_float(lb),
            "confidence": self.confidence,
            "violation": self.violation,
            "neighbours": None if self.neighbours is None else self.neighbours.as_dict(),
            "event": self.event,
            "events": [e.as_dict() for e in self.events],
            "samples": self.samples,
            "selection_samples": self.selection_samples,
            "test_samples": self.test_samples,
            "pairs_screened": self.pairs_screened,
            "seconds": round(self.seconds, 3),
            "findings": [f.as_dict() for f in self.findings],
            "exact": None if self.exact is None else self.exact.as_dict(),
            "seed": self.seed,
            "streams_failed": self.streams_failed,
            "streams_total": self.streams_total,
            "pairs_design": self.pairs_design,
            "isolation": self.isolation,
        }

    def summary(self) -> str:
        """A human-readable report; the first line is the verdict."""
        if self.privacy != "pure":
            return self._gdp_summary()
        label = {
            VIOLATION: "VIOLATION: the target is not ε-DP (proven at this confidence)",
            NO_VIOLATION: "no violation found",
            INCONCLUSIVE: "INCONCLUSIVE: the target could not be audited in full",
        }[self.verdict]
        lines = [
            f"verdict     {label}",
            f"reason      {self.reason}",
            f"target      {self.target}",
            f"horizon     T={self.horizon}",
        ]
        claimed = self.claimed_epsilon
        assert claimed is not None  # a pure report always claims an ε
        lines.append(f"claimed     ε = {claimed} ({float(claimed):.6g})")
        if self.epsilon_lower_bound is None:
            lines.append("lower bound none (no neighbouring pair could be sampled)")
        else:
            lb = self.epsilon_lower_bound
            ratio = lb / float(claimed) if math.isfinite(lb) else lb
            lines.append(
                f"lower bound ε ≥ {lb:.4f} with confidence {self.confidence:g} "
                f"({ratio:.3f} × claimed)"
            )
        if self.exact is not None:
            e = self.exact
            val = "∞" if e.epsilon is None else f"{e.epsilon} = {float(e.epsilon):.6g}"
            lines.append(f"exact loss  {val} ({e.scope}, {e.pairs_checked} pairs enumerated)")
        if self.neighbours is not None:
            n = self.neighbours
            lines.append(f"neighbours  {n.description}")
            lines.append(f"            x  = {_compact(n.x)}")
            lines.append(f"            x′ = {_compact(n.x_prime)}")
            lines.append(f"event       {self.event}")
        for ev in self.events:
            lines.append(
                f"  {ev.kind:<10} ε ≥ {ev.epsilon_lower_bound:.4f} (plug-in "
                f"{ev.epsilon_estimate:.4f}; {ev.count_numerator} vs {ev.count_denominator} "
                f"of {ev.samples})"
            )
        lines.append(
            f"samples     {self.samples:,} per side ({self.selection_samples:,} selection + "
            f"{self.test_samples:,} test); {self.pairs_screened} pairs screened; "
            f"{self.seconds:.2f} s"
        )
        if self.pairs_design:
            lines.append(f"pairs       {self.pairs_design}")
        if self.isolation is not None:
            lines.append(f"isolation   {self.isolation} (docs/auditing.md §8)")
        for f in self.findings:
            lines.append(f"FINDING     {f}")
        return "\n".join(lines)

    def _gdp_summary(self) -> str:
        what = {"mu": "μ-GDP", "rho": "ρ-zCDP", "epsilon-delta": "(ε, δ)-DP"}[self.claim_kind]
        label = {
            VIOLATION: f"VIOLATION: the target is not {what} as claimed (proven at this "
            "confidence)",
            NO_VIOLATION: "no violation found",
            INCONCLUSIVE: "INCONCLUSIVE: the target could not be audited in full",
        }[self.verdict]
        lines = [
            f"verdict     {label}",
            f"reason      {self.reason}",
            f"target      {self.target}",
            f"horizon     T={self.horizon}",
            f"claimed     {self._claim_text()} [privacy {self.privacy}]",
        ]
        if self.claim_kind == "epsilon-delta":
            lines.append(
                f"            μ* = {self.mu_star:.4f}: the largest μ whose GDP curve implies it "
                "(μ_lb > μ* alone is no violation)"
            )
        mu = self.mu_lower_bound
        if mu is None:
            lines.append("lower bound none (no neighbouring pair could be sampled)")
        else:
            lines.append(f"lower bound μ ≥ {mu:.4f} with confidence {self.confidence:g}")
            rho = self.rho_of_mu_lower_bound
            if rho is not None:
                lines.append(
                    f"            μ²/2 ≥ {rho:.4f} (the ρ of a {mu:.4f}-GDP mechanism; not a "
                    "zCDP bound)"
                )
            lines.append(
                f"            zCDP ρ ≥ {self.zcdp_rho_lower_bound:.4f} (Rényi bound of the events)"
            )
            if self.epsilon_delta:
                eds = ", ".join(
                    f"ε({k}) = {'-' if v is None else f'{v:.4f}'}"
                    for k, v in self.epsilon_delta.items()
                )
                lines.append(f"            a {mu:.4f}-GDP mechanism has {eds}")
        if self.model_mu is not None:
            lines.append(
                f"model μ     {self.model_mu:.4f} (the pair's exact μ under the reference)"
            )
        if self.neighbours is not None:
            n = self.neighbours
            lines.append(f"neighbours  {n.description}")
            lines.append(f"            x  = {_compact(n.x)}")
            lines.append(f"            x′ = {_compact(n.x_prime)}")
            lines.append(f"event       {self.event}")
        for ev in self.events:
            lines.append(
                f"  {ev.kind:<10} μ ≥ {ev.mu_lower_bound:.4f}, zCDP ρ ≥ "
                f"{ev.zcdp_rho_lower_bound:.4f} ({ev.count_numerator} vs "
                f"{ev.count_denominator} of {ev.samples})"
            )
        k = len(self.events)
        lines.append(
            f"samples     {self.samples:,} per side ({self.selection_samples:,} selection + "
            f"{self.test_samples:,} test); {self.pairs_screened} pairs screened; "
            f"{self.seconds:.2f} s"
        )
        if self.pairs_design:
            lines.append(f"pairs       {self.pairs_design}")
        if k:
            lines.append(
                f"confidence  each of the {2 * k} Clopper–Pearson bounds at level "
                f"{(1 - self.confidence) / (2 * k):.4g} (Bonferroni over {k} "
                f"event{'s' if k > 1 else ''} × 2 rates)"
            )
        for f in self.findings:
            lines.append(f"FINDING     {f}")
        return "\n".join(lines)
