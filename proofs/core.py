"""The proof framework: the symbolic ops namespace, the result type, the labels, proof steps.

A *claim* is one statement about one mechanism class (its membership, its budget,
its variance, …).  A claim's function returns an :class:`Outcome`, and its label says
exactly what was shown (docs/proofs.md):

* ``proven about the code`` (:func:`about_code`) — every step was discharged (by sympy,
  by an SMT solver over the whole integer range, or by an induction whose steps were
  discharged), and the proof *evaluated the functions the release uses* (named in
  :attr:`Outcome.evaluates`), for every parameter in the documented range;
* ``proven lemma`` (:func:`lemma`) — a statement every step of which was discharged but
  which evaluates no class code (a property of the maths, not of dpref);
* ``checked for T ≤ N`` (:func:`checked`) — an exact, exhaustive comparison for every T up
  to N: evidence, not a proof;
* ``note`` (:func:`note`) — a citation (e.g. closure under post-processing), not a claim.

A row never carries a stronger label than its weakest code-touching step: a claim whose
only contact with the code is a finite check is ``checked``, not ``proven``.  A step
that cannot be discharged raises :class:`ProofFailure`, and the claim is reported
``FAILED``: an unproven claim is a failed claim (OpenDP's rule).

Proofs read the mechanism classes' own declarations
(:meth:`dpref.mechanisms.Mechanism.budget_terms`, ``row_terms``, ``Binary.levels``,
``Binary.level_node``) evaluated with :data:`SYMBOLIC`, the sympy twin of
:data:`dpref.mechanisms.base.EXACT`, or with :class:`proofs.smt.Z3Ops`, its SMT twin.
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
    "CHECKED",
    "FAILED",
    "KINDS",
    "LEMMA",
    "NOTE",
    "PROVEN",
    "PROVEN_CODE",
    "SYMBOLIC",
    "ClaimResult",
    "Outcome",
    "ProofFailure",
    "SymbolicOps",
    "about_code",
    "check_identity",
    "check_sign",
    "checked",
    "kind_counts",
    "kind_of",
    "label",
    "lemma",
    "note",
    "run_claim",
]

PROVEN_CODE = "proven about the code"
"""Status of a claim every step of which was discharged, and which evaluated the
functions the release uses (:attr:`Outcome.evaluates`) for every parameter in range."""
PROVEN = PROVEN_CODE
"""The strongest status (an alias of :data:`PROVEN_CODE`)."""
LEMMA = "proven lemma"
"""Status of a claim every step of which was discharged but that evaluates no class code."""
CHECKED = "checked"
"""Kind of a ``checked for T ≤ N`` status (an exhaustive finite check)."""
NOTE = "note"
"""Status of a row that cites a result rather than claiming one."""
FAILED = "FAILED"
"""Status of a claim that failed or could not be proven."""
KINDS = (PROVEN_CODE, LEMMA, CHECKED, NOTE)
"""The passing kinds, strongest first (a status is one of them or :data:`FAILED`)."""


def kind_of(status: str) -> str:
    """The kind of a status: one of :data:`KINDS`, or :data:`FAILED`."""
    if status.startswith("checked for "):
        return CHECKED
    if status in (PROVEN_CODE, LEMMA, NOTE):
        return status
    return FAILED


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
    """One of the labels (:data:`PROVEN_CODE`, :data:`LEMMA`, ``checked for T ≤ N``,
    :data:`NOTE`)."""
    statement: str
    """The claim, as a formula."""
    detail: str = ""
    """The proof's steps and lemmas, or what was checked."""
    value: str = ""
    """The proven quantity (e.g. the budget ``ε``), when there is one."""
    evaluates: tuple[str, ...] = ()
    """For :data:`PROVEN_CODE`: the dpref functions the proof evaluated (qualified names)."""


def _code_name(fn: Any) -> str:
    """``module:qualname`` of a dpref function or method (the code a proof evaluated)."""
    target = getattr(fn, "__func__", fn)
    module = getattr(target, "__module__", None) or ""
    qualname = getattr(target, "__qualname__", None)
    if not callable(target) or qualname is None or not module.startswith("dpref."):
        raise ProofFailure(
            f"evaluates: {target!r} is not a function of the dpref package; a claim is "
            "about the code only if it evaluated the code"
        )
    return f"{module}:{qualname}"


def about_code(statement: str, *, evaluates: Any, detail: str = "", value: str = "") -> Outcome:
    """An outcome every step of which was discharged, for every parameter in range, by a
    proof that evaluated the release's own functions ``evaluates`` (function objects of
    the ``dpref`` package — bound or unbound methods, module functions; not names)."""
    names = tuple(dict.fromkeys(_code_name(fn) for fn in evaluates))
    if not names:
        raise ProofFailure("about_code: a claim about the code must name the code it evaluated")
    return Outcome(PROVEN_CODE, statement, detail, value, names)


def lemma(statement: str, detail: str = "", value: str = "") -> Outcome:
    """An outcome every step of which was discharged, about no class code (the maths)."""
    return Outcome(LEMMA, statement, detail, value)


def note(statement: str, detail: str = "") -> Outcome:
    """A citation, not a claim (e.g. closure under post-processing): nothing was checked."""
    return Outcome(NOTE, statement, detail)


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
    """A label of :data:`KINDS` (``checked for T ≤ N`` in full) or ``FAILED``."""
    seconds: float
    """Wall time of the claim."""
    statement: str = ""
    """The claim as a formula."""
    detail: str = ""
    """Proof steps, or why it failed."""
    value: str = ""
    """The proven quantity, when there is one."""
    evaluates: tuple[str, ...] = ()
    """For a claim proven about the code: the dpref functions its proof evaluated."""

    @property
    def passed(self) -> bool:
        """Whether the claim holds (proven, checked, or a note)."""
        return self.status != FAILED

    @property
    def kind(self) -> str:
        """The label's kind: one of :data:`KINDS`, or :data:`FAILED`."""
        return kind_of(self.status)

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
            "kind": self.kind,
            "evaluates": list(self.evaluates),
        }


def kind_counts(rows: Any) -> dict[str, int]:
    """How many rows of each kind (:data:`KINDS`, then :data:`FAILED`), zeros included."""
    counts = dict.fromkeys((*KINDS, FAILED), 0)
    for row in rows:
        counts[row.kind] += 1
    return counts


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
        out.evaluates,
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
