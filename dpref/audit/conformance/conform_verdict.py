"""The verdict of ``dpref conform`` and its reason, from the checks, the findings and the
budgets the measured scales imply.

Four verdicts (docs/auditing.md §5):

* ``violation`` — a privacy violation is **established**: the noise has the reference's
  structure and the *output-level* budget's interval (what the released outputs leak at
  the measured scales, :mod:`dpref.audit.conformance.conform_output`) lies above the claim.  Nothing
  else is a violation: not a failed check, not a plan-level implied budget above the claim
  (Honaker's outputs leak less than its plan), not a different noise structure;
* ``does-not-conform`` — a check failed or the target showed a defect the reference never
  shows (exception, wrong length, bad, non-finite or input-mutating output): the target is
  not the reference.  Privacy was not established either way (an over-noised target does
  not conform);
* ``inconclusive`` — a check could not run because of the target (time-out, not
  deterministic given its rng, main sample lost) and nothing that ran failed;
* ``conforms`` — every check that applies ran and passed.

``violation`` and ``does-not-conform`` exit 1, ``inconclusive`` 3, ``conforms`` 0.  The
report names the number the verdict rests on (``verdict_basis``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from dpref.audit.conformance.conform_checks import Check
from dpref.audit.isolation.targets import Finding
from dpref.audit.reports.audit_report import (
    CONFORMS,
    DOES_NOT_CONFORM,
    INCONCLUSIVE,
    UNDETERMINING,
    VIOLATION,
)
from dpref.mechanisms import Mechanism

if TYPE_CHECKING:
    from dpref.audit.conformance.conform_output import OutputLevel

__all__ = ["NOT_DEFECTS", "differs", "verdict"]

NOT_DEFECTS = UNDETERMINING
"""Findings that are not defects of the target: they leave checks untested (a time-out,
a target given up on after time-outs, not deterministic given its rng): exit 3."""


class _Stat(Protocol):
    @property
    def implied(self) -> dict[str, float] | None: ...
    @property
    def output(self) -> OutputLevel | None: ...


def differs(reference: str | None, budget: str = "ε") -> str:
    """``noise structure differs from REF: no ε implied``."""
    return f"noise structure differs from {reference}: no {budget} implied"


def verdict(
    checks: list[Check],
    findings: list[Finding],
    reference: Mechanism | None,
    structure: str,
    stat: _Stat | None,
) -> tuple[str, str, str]:
    """The verdict (module doc), its reason and the number or checks it rests on."""
    failed = [c.name for c in checks if c.passed is False]
    defects = sorted({f.kind for f in findings if f.kind not in NOT_DEFECTS})
    untested = [c.name for c in checks if c.passed is None and c.detail.startswith("not ")]
    untested = [u for u in untested if not _is_limitation(checks, u)]
    ref = "" if reference is None else repr(reference)
    gauss = reference is not None and reference.gaussian
    budget = "ρ" if gauss else "ε"
    dp = "ρ-zCDP" if gauss else "ε-DP"
    out = None if stat is None else stat.output
    if out is not None and out.above_claim:
        parts = [f"failed: {', '.join(failed)}"] if failed else []
        text = (
            f"privacy violation established: {out.text()} lies above the claimed "
            f"{budget} = {out.claimed} (the released outputs at the measured noise scale, "
            f"false-alarm rate {_alpha_of(checks):g}; the noise has the reference's structure)"
        )
        if stat is not None and stat.implied is not None:
            e = stat.implied
            parts.append(
                f"plan-level implied {budget} = {e['estimate']:.5g} [{e['low']:.5g}, "
                f"{e['high']:.5g}]"
            )
        return VIOLATION, "; ".join([text, *parts]), f"output-level {budget}"
    law = (
        "recovered noise is not independent Gaussian noise on the reference's structure"
        if gauss
        else "recovered node noise is not independent Laplace noise on the reference's nodes"
    )
    if failed or defects:
        parts = []
        if failed:
            parts.append("failed: " + ", ".join(failed))
        if defects:
            parts.append("target defects: " + ", ".join(defects))
        text = "; ".join(parts)
        if structure == "differs":
            text += (
                f". {differs(ref, budget)}. Established: the target is not {ref} (its "
                f"{law}). Not established: whether it is {dp} — less variance than the "
                "reference is not a violation (`dpref audit` tests privacy)"
            )
        elif stat is not None and stat.implied is not None:
            e = stat.implied
            beyond = "above" if e["low"] > e["claimed"] else "consistent with more than"
            text += (
                f". Its noise is the reference's structure at a smaller scale: plan-level "
                f"implied {budget} = {e['estimate']:.5g} [{e['low']:.5g}, {e['high']:.5g}], "
                f"{beyond} the claimed {e['claimed']:g}"
            )
        elif structure == "untested" and reference is not None and "noise-scale" in failed:
            text += f". The noise structure could not be tested: no {budget} implied"
        if out is not None:
            within = "within the claim" if out.high <= float(out.claimed) else "not above the claim"
            text += (
                f"; {out.text()} is {within}, so no privacy violation is established "
                f"(the target does not conform; the output-level {budget} decides privacy)"
            )
        basis = ("failed checks: " + ", ".join(failed)) if failed else "target defects"
        if out is not None:
            basis += f" (not a privacy verdict: the output-level {budget} is not above the claim)"
        return DOES_NOT_CONFORM, text, basis
    why = [f"{f.kind} ({f})" for f in findings if f.kind in NOT_DEFECTS]
    if untested or why:
        return (
            INCONCLUSIVE,
            (
                "not tested: "
                + (", ".join(untested) or "part of the run")
                + (" — " + "; ".join(why) if why else "")
                + "; nothing that ran failed"
            ),
            "untested checks",
        )
    if reference is None:
        return (
            CONFORMS,
            (
                "reference-free: ran at every probe horizon with outputs of the right length, "
                "deterministic given its rng and causal by replay; noise and ε were not tested "
                "(give a reference)"
            ),
            "every reference-free check passed",
        )
    limits = [c.name for c in checks if c.passed is None]
    return (
        CONFORMS,
        (
            f"every check passed at false-alarm rate {_alpha_of(checks):g}"
            + (f" ({', '.join(limits)} not applicable: see its line)" if limits else "")
            + f"; conformance is evidence, not a proof of {dp}"
        ),
        "every check passed",
    )


def _is_limitation(checks: list[Check], name: str) -> bool:
    """A check skipped because of the reference (not the target): not a reason for doubt."""
    c = next(c for c in checks if c.name == name)
    return c.detail.startswith("not run: R ") or c.detail.startswith("not run: the reference")


def _alpha_of(checks: list[Check]) -> float:
    return sum(c.alpha for c in checks)
