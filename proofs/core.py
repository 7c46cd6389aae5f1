"""The proof framework: the symbolic ops namespace, the result type, proof steps.

A *claim* is one statement about one mechanism class (its membership, its budget,
its variance, …).  A claim's function returns an :class:`Outcome` whose status is
either ``proven`` — every step was discharged by sympy (an identity that
``simplify`` reduces to 0, or a sign that sympy's assumption system decides), with
the standard lemmas it relies on named in the detail — or ``checked for T ≤ N`` —
an exact, exhaustive comparison for every T up to N, which is evidence, not a
proof, and is labelled as such.  A step that sympy cannot discharge raises
:class:`ProofFailure`, and the claim is reported ``FAILED``: an unproven claim is a
failed claim (OpenDP's rule).

Proofs read the mechanism classes' own declarations
(:meth:`dpref.mechanisms.Mechanism.budget_terms`, ``row_terms``, ``Binary.levels``,
``Binary.level_node``) evaluated with :data:`SYMBOLIC`, the sympy twin of
:data:`dpref.mechanisms.base.EXACT`.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import sympy as sp

from dpref.mechanisms import MECHANISMS

__all__ = [
    "FAILED",
    "PROVEN",
    "SYMBOLIC",
    "ClaimResult",
    "Outcome",
    "ProofFailure",
    "SymbolicOps",
    "check_identity",
    "check_sign",
    "checked",
    "label",
    "proven",
    "run_claim",
]

PROVEN = "proven"
"""Status of a claim every step of which sympy discharged."""
FAILED = "FAILED"
"""Status of a claim that failed or could not be proven."""

# The symbols every proof uses (assumptions are part of the theorem statements).
T = sp.Symbol("T", integer=True, positive=True)
"""The horizon, an integer ≥ 1."""
t = sp.Symbol("t", integer=True, positive=True)
"""A time step, an integer ≥ 1."""
i = sp.Symbol("i", integer=True, positive=True)
"""An item index, an integer ≥ 1."""
j = sp.Symbol("j", integer=True, nonnegative=True)
"""A level (node size 2^j), an integer ≥ 0."""
k = sp.Symbol("k", integer=True, positive=True)
"""An instance index (Hybrid), an integer ≥ 1."""
q = sp.Symbol("q", integer=True, positive=True)
"""A block index, an integer ≥ 1."""
B = sp.Symbol("B", integer=True, positive=True)
"""A block size, an integer ≥ 1."""
eps = sp.Symbol("ε", positive=True)
"""The privacy budget ε > 0."""
Delta = sp.Symbol("Δ", positive=True)
"""The sensitivity of one item, Δ > 0."""
popcount = sp.Function("popcount", integer=True, nonnegative=True)
"""Number of 1-bits, an uninterpreted non-negative integer function."""


class SymbolicOps:
    """The sympy twin of :class:`dpref.mechanisms.base.ExactOps`."""

    @staticmethod
    def floor_log2(x: Any) -> Any:
        """``⌊log₂ x⌋`` as ``floor(log(x, 2))`` (exact for integer literals)."""
        return sp.floor(sp.log(x, 2))

    @staticmethod
    def ceil_sqrt(x: Any) -> Any:
        """``⌈√x⌉`` as ``ceiling(sqrt(x))``."""
        return sp.ceiling(sp.sqrt(x))

    @staticmethod
    def number(x: Any) -> Any:
        """An exact sympy number (Fractions become Rationals)."""
        if isinstance(x, Fraction):
            return sp.Rational(x.numerator, x.denominator)
        return sp.sympify(x)

    @staticmethod
    def popcount(x: Any) -> Any:
        """Number of 1-bits: exact for integer literals, else ``popcount(x)``."""
        value = sp.sympify(x)
        if value.is_Integer:
            return sp.Integer(bin(int(value)).count("1"))
        return popcount(value)


SYMBOLIC = SymbolicOps()
"""The namespace the proofs pass to the mechanisms' declarations."""


class ProofFailure(Exception):
    """A proof step that does not hold, or that sympy could not discharge."""


@dataclass(frozen=True)
class Outcome:
    """What a claim function returns."""

    status: str
    """``proven`` or ``checked for T ≤ N``."""
    statement: str
    """The claim, as a formula."""
    detail: str = ""
    """The proof's steps and lemmas, or what was checked."""
    value: str = ""
    """The proven quantity (e.g. the budget ``ε``), when there is one."""


def proven(statement: str, detail: str = "", value: str = "") -> Outcome:
    """An outcome every step of which sympy discharged."""
    return Outcome(PROVEN, statement, detail, value)


def checked(variable: str, limit: int, statement: str, detail: str = "") -> Outcome:
    """An outcome of an exhaustive exact check for every ``variable`` ≤ ``limit``."""
    return Outcome(f"checked for {variable} ≤ {limit}", statement, detail)


@dataclass(frozen=True)
class ClaimResult:
    """One row of ``dpref prove``."""

    mechanism: str
    """The mechanism (class) the claim is about."""
    claim: str
    """Which claim (``membership``, ``budget``, ``variance``, …)."""
    status: str
    """``proven``, ``checked for T ≤ N`` or ``FAILED``."""
    seconds: float
    """Wall time of the claim."""
    statement: str = ""
    """The claim as a formula."""
    detail: str = ""
    """Proof steps, or why it failed."""
    value: str = ""
    """The proven quantity, when there is one."""

    @property
    def passed(self) -> bool:
        """Whether the claim was proven or passed its exhaustive check."""
        return self.status != FAILED

    def as_dict(self) -> dict[str, Any]:
        """JSON-friendly dict."""
        return {
            "mechanism": self.mechanism,
            "claim": self.claim,
            "status": self.status,
            "seconds": round(self.seconds, 3),
            "statement": self.statement,
            "detail": self.detail,
            "value": self.value,
        }


def run_claim(mechanism: str, claim: str, fn: Callable[[], Outcome]) -> ClaimResult:
    """Run one claim, timing it; any exception makes it ``FAILED`` (a crash proves nothing)."""
    start = time.perf_counter()
    try:
        out = fn()
    except ProofFailure as exc:
        return ClaimResult(mechanism, claim, FAILED, time.perf_counter() - start, detail=str(exc))
    except Exception as exc:  # a declaration that crashes is a failed proof, not a crash
        return ClaimResult(
            mechanism,
            claim,
            FAILED,
            time.perf_counter() - start,
            detail=f"{type(exc).__name__}: {exc}",
        )
    return ClaimResult(
        mechanism,
        claim,
        out.status,
        time.perf_counter() - start,
        out.statement,
        out.detail,
        out.value,
    )


def _counterexample(expr: Any) -> str:
    """A small assignment of the integer symbols at which ``expr`` is not 0, if any."""
    free = sorted(expr.free_symbols, key=lambda s: s.name)
    ints = [s for s in free if s.is_integer]
    base: dict[Any, Any] = {s: sp.Rational(7, 10) for s in free if not s.is_integer}
    if len(ints) > 2:
        return ""
    ranges = [range(0 if s.is_nonnegative and not s.is_positive else 1, 33) for s in ints]
    for values in itertools.product(*ranges):
        sub = dict(base)
        sub.update(zip(ints, values, strict=True))
        try:
            val = sp.simplify(expr.subs(sub))
        except (ZeroDivisionError, TypeError, ValueError):
            continue
        if val.is_number and val != 0 and val is not sp.nan:
            where = ", ".join(f"{s}={v}" for s, v in zip(ints, values, strict=True))
            return f"; counterexample {where} (ε=Δ=7/10): difference {val}"
    return ""


def check_identity(lhs: Any, rhs: Any, what: str) -> None:
    """Prove ``lhs = rhs`` by ``simplify(lhs − rhs) == 0``; else raise ProofFailure."""
    diff = sp.simplify(sp.sympify(lhs) - sp.sympify(rhs))
    if diff != 0:
        raise ProofFailure(
            f"{what}: {lhs} = {rhs} does not hold (difference {diff}){_counterexample(diff)}"
        )


def check_sign(expr: Any, sign: str, what: str) -> None:
    """Prove ``expr`` is ``positive``/``nonnegative``/``nonpositive`` by sympy's assumptions."""
    value = sp.simplify(sp.sympify(expr))
    decided = getattr(value, f"is_{sign}")
    if decided is not True:
        verdict = "is false" if decided is False else "could not be decided"
        raise ProofFailure(f"{what}: '{value} is {sign}' {verdict}")


def label(cls: type[Any]) -> str:
    """Row label: the command-line name of a registered class, else the class name."""
    name = getattr(cls, "name", "")
    return str(name) if MECHANISMS.get(name) is cls else cls.__name__
