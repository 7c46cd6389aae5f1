"""``dpref plan extract TARGET --horizon T --out FILE``: the plan of a noise-injectable target.

The exact audit's probes (:func:`dpref.audit.injected.structural.recover_structure`) recover a
recordable target's release as ``y = A·(x − x₀) + M·ξ + c``: A is the noiseless response
to each item (the target's Q), column j of M the response to its j-th standard draw ξ_j
(Laplace or normal) with the draw's recorded scale ``s_j`` folded in.  That is a plan:
node j gets noise of scale ``s_j`` (Laplace) or standard deviation ``s_j`` (Gaussian), the
decoder is ``B = M·diag(s)⁻¹`` and the strategy C any solution of ``B·C = A``:

* when the used draws' responses are linearly independent (every counter whose outputs
  determine its node noise: Binary, FDA, Simple I/II, …) C is unique — ``C = B⁺·A`` on
  the used rows, 0 on the others;
* otherwise C is not determined by the outputs; the file holds the causal solution that
  costs least — a draw first used at output u carries no item after u, and per item the
  least ``Σ_n |C_{n,i}|/s_n`` (Laplace, a linear programme) or ``Σ_n C_{n,i}²/s_n²``
  (Gaussian, least squares) — whose column sums are at least the exact audit's
  output-level loss (equal when the unconstrained optimum is causal); the report says so.

The file is the dense JSON ``dpref plan check`` reads: rows of C are the draws in the
order the target made them, ``scales`` the recorded scales (absolute: check it with
``--scale 1`` or ``--sigma 1``), ``"noise"`` the law.  When every probed value is a short
dyadic (a multiple of 2⁻³⁰ below 2⁵³ — what integer and dyadic arithmetic produce) and
T ≤ :data:`EXACT_SOLVE_LIMIT`, C and B are solved in rationals and written exactly
(integers and ``"p/q"`` strings); otherwise every entry is written as a float (the
shortest decimal that reads back as the same float) — for a determined C and T ≤
:data:`FLOAT_SOLVE_LIMIT` solved in rationals from the probed floats' binary values and
then rounded, so that a structural zero stays 0.  Floats dpref reads are taken at their
exact binary values.  The file is written atomically (:mod:`dpref.cli.outputs`).

Exit codes: 0 the plan was written; 1 no plan exists (an item moves the outputs in a
direction no noise covers: infinite loss); 3 the structure could not be recovered (a
finding says why; nothing is written); 2 usage or input error.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt

from dpref.errors import ParameterError
from dpref.validation import fmt

__all__ = [
    "EXACT_SOLVE_LIMIT",
    "ExtractedPlan",
    "add_extract_parser",
    "extract_plan",
    "run_extract",
]

FloatArray = npt.NDArray[np.float64]

EXACT_SOLVE_LIMIT = 128
"""Largest T whose strategy is solved in rationals (the elimination is O(T³) Fractions)."""
FLOAT_SOLVE_LIMIT = 64
"""Largest T of a float plan whose strategy is solved in rationals (then rounded)."""
_SHORT_DENOMINATOR = 2**30
"""A probed value is a short dyadic when its denominator divides 2³⁰ ..."""
_SHORT_MAGNITUDE = 2**53
"""... and its magnitude is below 2⁵³."""

EXTRACT_DESCRIPTION = """\
Probe a noise-injectable target (f(stream, rng) drawing rng.laplace or rng.normal, or
f(stream, noise) with dpref_noise = "callback") with scripted noise, recover its linear
structure as the exact audit does, and write its plan — strategy C (one row per draw, in
the order drawn), decoder B, the draws' recorded scales and the noise law — as the dense
JSON file dpref plan check and dpref conform --reference FILE read. Exact rationals when
every probed value is a short dyadic, floats otherwise. Exit 0 written; 1 no plan exists
(an item moves the outputs where no noise covers it); 3 the structure could not be
recovered (nothing written); 2 usage or input error."""


@dataclass(kw_only=True)
class ExtractedPlan:
    """The outcome of :func:`extract_plan`."""

    target: str
    """The target's name."""
    horizon: int
    """T."""
    law: str | None = None
    """``laplace`` or ``gaussian`` (None: not recovered)."""
    exact: bool = False
    """Whether C, B and the scales are exact rationals (else floats)."""
    strategy: list[list[Fraction]] | None = None
    """C, one row per draw (None when no plan was extracted)."""
    decoder: list[list[Fraction]] | None = None
    """B (T × draws)."""
    scales: list[Fraction] = field(default_factory=list)
    """The draws' recorded scales (absolute)."""
    determined: bool = True
    """Whether C is the only solution of ``B·C = A`` (the used draws' responses are
    independent)."""
    target_kind: str = ""
    """``prefix sums``, ``windows of W`` or ``other``: what A (= B·C) is."""
    max_error: float = 0.0
    """Largest ``|B·C − A|`` (0 for an exact plan) and of A against that target."""
    budget: float | None = None
    """The plan's ε (Laplace: the largest L1 column sum ``Σ|C|Δ/s``) or ρ (Gaussian: half the
    largest ``Σ C²Δ²/s²``) at the recorded scales, as a float (:attr:`budget_exact`)."""
    budget_exact: Fraction | None = None
    """The same exactly, or an upper bound (:attr:`budget_is_bound`)."""
    budget_is_bound: bool = False
    """Whether :attr:`budget_exact` adds terms rounded up to 2⁻⁶⁴ (a float plan, or a large
    one): an upper bound, not the exact sum."""
    findings: list[str] = field(default_factory=list)
    """Why no plan was extracted."""
    notes: list[str] = field(default_factory=list)
    """What the reader should know (dropped zero-scale draws, an undetermined C, …)."""
    out: str | None = None
    """The file written."""
    verdict: str = "extracted"
    """``extracted``, ``no-plan`` (exit 1) or ``inconclusive`` (exit 3)."""

    @property
    def exit_code(self) -> int:
        """0 extracted, 1 no plan exists, 3 not recovered."""
        return {"extracted": 0, "no-plan": 1, "inconclusive": 3}[self.verdict]

    def document(self) -> dict[str, Any]:
        """The plan file's JSON object."""
        if self.strategy is None or self.decoder is None:
            raise ParameterError(f"target={self.target!r}: no plan was extracted")
        put = _exact_value if self.exact else _float_value
        check = "--scale 1" if self.law == "laplace" else "--sigma 1"
        return {
            "C": [[put(v) for v in row] for row in self.strategy],
            "B": [[put(v) for v in row] for row in self.decoder],
            "scales": [put(v) for v in self.scales],
            "noise": self.law,
            "comment": (
                f"extracted by dpref plan extract from {self.target} at T={self.horizon}: "
                f"rows of C are its {len(self.strategy)} {self.law} draws in the order drawn, "
                f"scales their recorded scales (absolute; dpref plan check FILE {check})"
                + (
                    ""
                    if self.determined
                    else "; C is not determined by the outputs: the least-cost causal solution"
                )
            ),
        }

    def as_dict(self) -> dict[str, Any]:
        """The JSON report."""
        return {
            "verdict": self.verdict,
            "target": self.target,
            "horizon": self.horizon,
            "noise": self.law,
            "mode": None if self.strategy is None else ("exact" if self.exact else "float"),
            "rows": None if self.strategy is None else len(self.strategy),
            "determined": self.determined,
            "target_kind": self.target_kind or None,
            "max_error": self.max_error,
            "budget": self.budget,
            "budget_exact": None if self.budget_exact is None else str(self.budget_exact),
            "budget_is_upper_bound": self.budget_is_bound,
            "budget_name": None
            if self.law is None
            else ("epsilon" if self.law == "laplace" else "rho"),
            "findings": self.findings,
            "notes": self.notes,
            "out": self.out,
        }

    def summary(self) -> str:
        """A human-readable report; the first line says what happened."""
        if self.strategy is None:
            head = "NO PLAN" if self.verdict == "no-plan" else "INCONCLUSIVE"
            lines = [f"{head}: no plan extracted from {self.target} at T={self.horizon}"]
            lines += [f"FINDING     {f}" for f in self.findings]
            return "\n".join(lines)
        mode = "exact rationals" if self.exact else "floats"
        noun = "Laplace" if self.law == "laplace" else "Gaussian"
        lines = [
            f"plan extracted from {self.target} at T={self.horizon}: "
            f"{len(self.strategy)} {noun} draws, written as {mode}",
            "  C "
            + (
                "determined by the outputs (the draws' responses are independent)"
                if self.determined
                else "NOT determined by the outputs: the least-cost causal solution"
            ),
            f"  B·C = {self.target_kind}"
            + (f" (largest deviation {self.max_error:.3g})" if self.max_error else " exactly"),
        ]
        if self.budget_exact is not None:
            name = "ε" if self.law == "laplace" else "ρ"
            how = " (upper bound: each term rounded up to 2⁻⁶⁴)" if self.budget_is_bound else ""
            lines.append(
                f"  {name} of the plan at its recorded scales: {_show(self.budget_exact)}{how}"
            )
        lines += [f"  note: {n}" for n in self.notes]
        if self.out is not None:
            flag = "--scale 1" if self.law == "laplace" else "--sigma 1"
            lines.append(
                f"wrote {self.out}; check it: dpref plan check {self.out} {flag}; conform a "
                f"target to it: dpref conform TARGET --horizon {self.horizon} --reference "
                f"{self.out}"
            )
        return "\n".join(lines)


def _show(q: Fraction) -> str:
    """Exact when short; beside it 20 significant digits when it is not an integer."""
    import decimal

    if q.denominator == 1:
        return str(q)
    with decimal.localcontext() as ctx:
        ctx.prec = 20
        approx = decimal.Decimal(q.numerator) / decimal.Decimal(q.denominator)
    if q.numerator.bit_length() + q.denominator.bit_length() > 128:
        return f"≈{approx}"
    return f"{q} ≈ {approx}"


def _exact_value(v: Fraction) -> int | str:
    return int(v) if v.denominator == 1 else str(v)


def _float_value(v: Fraction) -> float:
    return float(v)


def _short(v: float) -> bool:
    f = Fraction(v)
    return _SHORT_DENOMINATOR % f.denominator == 0 and abs(f) < _SHORT_MAGNITUDE


# ------------------------------------------------------------------ extraction
def extract_plan(
    target: Any,
    horizon: Any,
    *,
    domain: Any = None,
    protocol: str | None = None,
    seed: Any = 0,
    timeout: float | None = 60.0,
) -> ExtractedPlan:
    """Probe ``target`` at T = ``horizon`` and extract its plan (module doc).

    ``target`` is a :class:`~dpref.mechanisms.Mechanism`, a callable ``f(stream, rng)`` /
    ``f(stream, noise)`` or a ``module:function`` / ``file.py:function`` spec (run in its
    own worker process, ``timeout`` seconds per call); ``domain`` the stream domain
    (default: the mechanism's, else bits).
    """
    from dpref.audit.injected.structural import _resolve, recover_structure
    from dpref.audit.isolation.runners import CallFailure, WorkerRunner
    from dpref.audit.isolation.targets import seeded
    from dpref.audit.limits import MAX_EXACT_HORIZON
    from dpref.domains import Domain, bits
    from dpref.errors import DprefTypeError
    from dpref.validation import check_int_range

    T = check_int_range("horizon", horizon, 1, min(MAX_EXACT_HORIZON, 1024))
    if domain is not None and not isinstance(domain, Domain):
        raise DprefTypeError(f"domain={fmt(domain)}: must be a dpref.domains.Domain")
    name, run, _, own = _resolve(target, protocol, timeout, 4 << 30)
    dom = domain if domain is not None else (own if own is not None else bits())
    report = ExtractedPlan(target=str(name), horizon=T, verdict="inconclusive")
    try:
        if isinstance(run, WorkerRunner):
            run.start(T)
        structure, findings = recover_structure(run, T, dom, rng=seeded(seed))
    except CallFailure as failed:
        structure, findings = None, [failed.finding]
    finally:
        if isinstance(run, WorkerRunner):
            run.close()
    if structure is None:
        report.findings = [str(f) for f in findings] or ["the structure was not recovered"]
        return report
    if structure.law == "none":
        report.findings = ["the target drew no noise: a noiseless release has no plan"]
        report.verdict = "no-plan"
        return report
    report.law = "gaussian" if structure.law == "normal" else "laplace"
    _solve(report, structure.A, structure.M, structure.scales, dom.sensitivity)
    return report


def _solve(
    report: ExtractedPlan, A: FloatArray, M: FloatArray, s: FloatArray, delta: Fraction
) -> None:
    """Fill ``report`` with B, C and the scales from the probed A, M and draw scales."""
    T, K = M.shape
    keep = [j for j in range(K) if s[j] > 0]
    if len(keep) < K:
        report.notes.append(
            f"{K - len(keep)} draw(s) of scale 0 left out (they add nothing): rows of C are "
            "the remaining draws in the order drawn"
        )
    M, s = M[:, keep], s[keep]
    K = len(keep)
    if K == 0:
        report.findings = ["every draw has scale 0: the release carries no noise"]
        report.verdict = "no-plan"
        return
    used = [j for j in range(K) if np.any(M[:, j] != 0)]
    rank = int(np.linalg.matrix_rank(M[:, used])) if used else 0
    report.determined = rank == len(used)
    short = all(_short(float(v)) for v in np.concatenate([A.ravel(), M.ravel(), s]))
    rational = report.determined and T <= (EXACT_SOLVE_LIMIT if short else FLOAT_SOLVE_LIMIT)
    solved = _exact_solve(A, M, s, used) if rational else "dependent"
    if solved == "uncovered":
        _uncovered(report, A, M, exact=True)
        return
    if isinstance(solved, tuple):
        # solved in rationals (the floats at their binary values): a structural zero of C
        # stays exactly 0 instead of a rounding residue of a float solve
        report.exact = short
        report.strategy, report.decoder = solved
        report.scales = [Fraction(float(v)) for v in s]
        if not short:  # the file holds the floats nearest the rational solution
            report.strategy = [[Fraction(float(v)) for v in row] for row in report.strategy]
            report.decoder = [[Fraction(float(v)) for v in row] for row in report.decoder]
            report.max_error = _float_error(report.strategy, report.decoder, A)
    else:
        if rational:  # the float rank missed a dependency the rational elimination found
            report.determined = False
        C = _float_strategy(A, M, s, used, report)
        B = M / s[None, :]
        err = float(np.abs(B @ C - A).max(initial=0.0))
        tol = 1e-9 * max(1.0, float(np.abs(A).max(initial=0.0)))
        if not err <= tol:  # NaN (a failed programme) included
            _uncovered(report, A, M, exact=False)
            return
        report.max_error = err
        report.strategy = [[Fraction(float(v)) for v in row] for row in C]
        report.decoder = [[Fraction(float(v)) for v in row] for row in B]
        report.scales = [Fraction(float(v)) for v in s]
    report.verdict = "extracted"
    _describe(report, A, delta)


def _float_error(C: list[list[Fraction]], B: list[list[Fraction]], A: FloatArray) -> float:
    """Largest ``|B·C − A|`` with B and C rounded to the floats the file holds."""
    Cf = np.array([[float(v) for v in row] for row in C])
    Bf = np.array([[float(v) for v in row] for row in B])
    return float(np.abs(Bf @ Cf - A).max(initial=0.0))


def _uncovered(report: ExtractedPlan, A: FloatArray, M: FloatArray, exact: bool) -> None:
    U, S, _ = np.linalg.svd(M, full_matrices=False)
    U = U[:, S > 1e-12 * (S[0] if S.size else 0.0)]
    off = A - U @ (U.T @ A)
    i = int(np.argmax(np.abs(off).max(axis=0)))
    report.findings = [
        f"item {i + 1} moves the outputs in a direction no noise covers (no C solves "
        + ("B·C = A exactly" if exact else "B·C = A within 1e-9")
        + "): its loss is unbounded — dpref audit --exact computes it"
    ]
    report.verdict = "no-plan"


def _exact_solve(
    A: FloatArray, M: FloatArray, s: FloatArray, used: list[int]
) -> tuple[list[list[Fraction]], list[list[Fraction]]] | str:
    """``B = M/s`` and the unique C with ``B·C = A`` in rationals, or why not:
    ``"uncovered"`` (no solution) or ``"dependent"`` (the used columns are dependent)."""
    T, K = M.shape
    sf = [Fraction(float(v)) for v in s]
    B = [[Fraction(float(M[t, j])) / sf[j] for j in range(K)] for t in range(T)]
    Af = [[Fraction(float(A[t, i])) for i in range(T)] for t in range(T)]
    r = len(used)
    rows = [[B[t][j] for j in used] + Af[t] for t in range(T)]
    pivots: list[int] = []
    row = 0
    for col in range(r):
        p = next((k for k in range(row, T) if rows[k][col] != 0), None)
        if p is None:
            return "dependent"  # the float rank missed a dependency: not determined
        rows[row], rows[p] = rows[p], rows[row]
        lead = rows[row][col]
        rows[row] = [v / lead for v in rows[row]]
        for k in range(T):
            if k != row and rows[k][col] != 0:
                f = rows[k][col]
                rows[k] = [a - f * b for a, b in zip(rows[k], rows[row], strict=True)]
        pivots.append(row)
        row += 1
    if any(v != 0 for k in range(row, T) for v in rows[k][r:]):
        return "uncovered"  # A has a part outside the range of B
    C = [[Fraction(0)] * T for _ in range(K)]
    for col, j in enumerate(used):
        C[j] = rows[pivots[col]][r:]
    return C, B


def _float_strategy(
    A: FloatArray, M: FloatArray, s: FloatArray, used: list[int], report: ExtractedPlan
) -> FloatArray:
    """C in floats: the unique solution, or the least-cost causal one (module doc)."""
    T, K = M.shape
    C = np.zeros((K, T))
    if not used:
        return C
    Mu = M[:, used]
    if report.determined:
        C[used] = s[used][:, None] * np.linalg.lstsq(Mu, A, rcond=None)[0]
        return C
    # causal: a draw first used at output u carries no item after u (else the file's row
    # would be released after the output that uses it); per item, the cheapest solution
    # among the draws it may reach
    first = np.array([int(np.flatnonzero(Mu[:, k])[0]) for k in range(len(used))])
    gaussian = report.law == "gaussian"
    for i in range(T):
        allowed = np.flatnonzero(first >= i)
        if allowed.size == 0:
            if np.any(A[:, i] != 0):
                C[:, i] = np.nan  # no draw can carry item i: not a plan
            continue
        sub = Mu[:, allowed]
        col = A[:, i : i + 1]
        v = np.linalg.pinv(sub) @ col if gaussian else _least_l1(sub, col)
        rows = [used[int(k)] for k in allowed]
        C[rows, i] = s[rows] * v[:, 0]
    what = (
        "the least Σ_n C²/s² per item (least squares), its column sums at least the exact "
        "audit's output-level μ²"
        if gaussian
        else "the least Σ_n |C|/s per item (a linear programme), its column sums at least "
        "the exact audit's output-level ε"
    )
    report.notes.append(
        "C is not determined by the outputs: the least-cost causal C (a draw carries no "
        f"item after the first output that uses it) — {what} (equal when that optimum is "
        "causal)"
    )
    return C


def _least_l1(Mu: FloatArray, A: FloatArray) -> FloatArray:
    """Per column of A, the least-‖v‖₁ solution of ``Mu·v = A_i`` (HiGHS)."""
    from scipy.optimize import linprog

    r = Mu.shape[1]
    out = np.zeros((r, A.shape[1]))
    eq = np.hstack([Mu, -Mu])
    for i in range(A.shape[1]):
        res = linprog(np.ones(2 * r), A_eq=eq, b_eq=A[:, i], bounds=(0, None), method="highs")
        if res.status != 0:
            return np.full((r, A.shape[1]), np.nan)
        out[:, i] = res.x[:r] - res.x[r:]
    return out


def _describe(report: ExtractedPlan, A: FloatArray, delta: Fraction) -> None:
    """What B·C (= A) is, and the plan's budget at the recorded scales."""
    T = A.shape[0]
    t_idx = np.arange(T)[:, None]
    i_idx = np.arange(T)[None, :]
    best = (
        "other (neither prefix nor window sums: dpref plan check cannot check it; "
        "dpref conform can)",
        np.inf,
    )
    for w in [T, *range(1, T)]:
        q = ((i_idx <= t_idx) & (i_idx > t_idx - w)).astype(np.float64)
        dev = float(np.abs(A - q).max())
        if dev <= 1e-9:
            best = ("prefix sums" if w == T else f"windows of {w}", dev)
            break
    report.target_kind = best[0]
    if np.isfinite(best[1]):
        report.max_error = max(report.max_error, best[1])
    assert report.strategy is not None
    from dpref.audit.conformance.reference_file import column_sums

    gaussian = report.law == "gaussian"
    C = tuple(tuple(row) for row in report.strategy)
    small = len(C) <= EXACT_SOLVE_LIMIT
    # exact for an exact plan; for a float plan each term |C|/s (C²/s²) is rounded up to a
    # multiple of 2⁻⁶⁴ (an upper bound: the exact sums of 2⁻⁵³-floats grow without bound)
    sums = column_sums(C, tuple(report.scales), squares=gaussian, exact=report.exact and small)
    top = max(sums)
    report.budget_exact = top * delta**2 / 2 if gaussian else top * delta
    report.budget_is_bound = not (report.exact and small)
    report.budget = float(report.budget_exact)
    if not report.exact:
        report.notes.append(
            "a float plan: its entries are the floats the target computed; dpref reads "
            "them at their exact binary values"
        )


# ------------------------------------------------------------------ command line
def add_extract_parser(sub: Any) -> None:
    """Add ``plan extract`` to the ``plan`` subcommands."""
    e = sub.add_parser(
        "extract",
        help="probe a noise-injectable target and write its plan file",
        description=EXTRACT_DESCRIPTION,
    )
    e.add_argument("target", help="module:function or path/to/file.py:function")
    e.add_argument("--horizon", type=int, required=True, help="T, the stream length probed")
    e.add_argument("--out", required=True, help="the plan file to write (.json)")
    e.add_argument(
        "--domain",
        default="bits",
        help="item domain: bits, LO:HI (integers when both bounds are, else reals), "
        "int:LO:HI or real:LO:HI (default bits)",
    )
    e.add_argument(
        "--neighbours",
        choices=["replace", "add_remove"],
        default="replace",
        help="event-level neighbour relation, for the sensitivity Δ (default replace)",
    )
    e.add_argument(
        "--protocol",
        choices=["rng", "callback"],
        default=None,
        help="how the target takes its noise (default: its dpref_noise attribute, else rng)",
    )
    e.add_argument(
        "--seed", type=int, default=0, help="seed of the verification points (default 0)"
    )
    e.add_argument(
        "--timeout", type=float, default=60.0, help="longest one call may run, seconds (default 60)"
    )
    e.add_argument("--json", action="store_true", help="print one JSON object")
    e.set_defaults(func=run_extract)


def run_extract(args: argparse.Namespace) -> int:
    """``dpref plan extract``: probe, write the file (atomically), print the report."""
    from dpref.audit.limits import MAX_TIMEOUT
    from dpref.cli.common import parse_domain
    from dpref.cli.outputs import write_file

    if ":" not in args.target:
        raise ParameterError(
            f"target={fmt(args.target)}: expected module:function or path/to/file.py:function"
        )
    if not str(args.out).lower().endswith(".json"):
        raise ParameterError(f"--out={fmt(args.out)}: the plan file is written as .json")
    if not (0 < args.timeout <= MAX_TIMEOUT):
        raise ParameterError(
            f"--timeout={args.timeout:g}: must be > 0 and at most {MAX_TIMEOUT:,.0f}"
        )
    domain = parse_domain(args.domain, args.neighbours)
    report = extract_plan(
        args.target,
        args.horizon,
        domain=domain,
        protocol=args.protocol,
        seed=args.seed,
        timeout=args.timeout,
    )
    if report.strategy is not None:
        data = (json.dumps(report.document()) + "\n").encode("utf-8")
        write_file(args.out, data, "--out")
        report.out = str(args.out)
    print(json.dumps(report.as_dict()) if args.json else report.summary())
    return report.exit_code
