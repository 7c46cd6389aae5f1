"""Exact audits of noise-injectable targets: recover the linear structure, then the loss.

A noise-injectable target (:mod:`dpref.audit.recording`) is called with noise that dpref
scripts, so its release can be *measured* instead of sampled.  :func:`recover_structure`
probes it and fits ``y = A·(x − x₀) + M·ξ + c`` for the K standard Laplace values ξ the
target requested (column j of M is the outputs' response to ξ_j, the draw's scale folded
in): one call at ``(x₀, ξ = 0)``, one per unit change of an item, one per unit ξ_j.
It then *verifies* the fit: the number, order and scales of the draws must be the same on
every call; replaying a call must give the same outputs bit for bit (else the target
uses randomness dpref does not control); and on random ``(x, ξ)`` the outputs must equal
the fit within the rounding error of a float64 sum (:func:`linearity_tolerance`).

With the structure, the privacy loss of item i under Laplace noise is the smallest
``‖v‖₁`` with ``M·v = Δ·A·e_i``: moving item i by Δ moves the outputs exactly as moving
ξ by v does, and ξ's density ratio under that shift is at most ``e^{‖v‖₁}``.  No solution
means the change is not covered by noise (infinite loss).  ``ε = max_i ε_i``.

* When the non-zero columns of M are linearly independent (checked exactly), v is
  unique, the outputs determine the used ξ, and ε is the **exact** loss of the released
  vector.
* Otherwise ε is the optimum of a linear programme (HiGHS) and an **upper bound** on the
  loss of the released vector.  It is certified in rationals: an exactly feasible v
  (``U``) and a dual vector u rescaled so that ``‖Mᵀu‖_∞ ≤ 1`` exactly (``L = uᵀ·Δ·A·e_i``,
  a lower bound on the optimum by weak duality).

Every number in the certificate is the exact rational value of the floats the target
computed (``Fraction(float)``).  For readability the report also states ε as the
nearest rational with denominator ≤ 1000 when that is within 10⁻¹² (relative) of the
exact value (the claimed ε is preferred when it qualifies); see docs/auditing.md §9.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt

from dpref.audit.audit_report import AuditReport
from dpref.audit.l1loss import (
    SNAP_MAX_DENOMINATOR,
    SNAP_RELATIVE,
    ItemLosses,
    item_losses,
    stated_epsilon,
)
from dpref.audit.limits import MAX_CHECKS, MAX_EXACT_HORIZON, refuse_zcdp
from dpref.audit.recording import PROTOCOLS, Requests, protocol_of
from dpref.audit.runners import CallFailure, InProcessRunner, Runner, WorkerRunner
from dpref.audit.targets import Finding, seeded
from dpref.domains import Domain, bits
from dpref.errors import DprefTypeError
from dpref.mechanisms import Mechanism
from dpref.validation import check_choice, check_epsilon, check_int_range, fmt

__all__ = [
    "SNAP_MAX_DENOMINATOR",
    "SNAP_RELATIVE",
    "ItemLosses",
    "StructuralReport",
    "Structure",
    "exact_audit",
    "item_losses",
    "linearity_tolerance",
    "mechanism_target",
    "recover_structure",
]

FloatArray = npt.NDArray[np.float64]

_U = 2.0**-53  # unit roundoff of float64


# ----------------------------------------------------------------- the target
def mechanism_target(mech: Mechanism) -> Callable[[FloatArray, Any], FloatArray]:
    """A built-in mechanism as a noise-injectable ``f(stream, rng)``.

    It draws the standard node noise through ``rng.laplace(0, scales)`` with the plan's
    node scales (``m.plan(T).scales``, canonical order) and returns
    ``m.release(stream, noise=z)``.  (Laplace noise, whatever ``mech.noise`` says; a
    zCDP mechanism is refused: :func:`~dpref.audit.limits.refuse_zcdp`.)
    """
    refuse_zcdp("mech", mech)
    cache: dict[int, FloatArray] = {}

    def f(stream: FloatArray, rng: Any) -> FloatArray:
        T = len(stream)
        if T not in cache:
            cache[T] = mech.plan(T).scales
        scales = cache[T]
        z = rng.laplace(0.0, scales, size=scales.size)
        return mech.release(stream, noise=z)

    f.__qualname__ = repr(mech)
    return f


# -------------------------------------------------------------- the structure
@dataclass(frozen=True, eq=False)
class Structure:
    """The fitted ``y = A·(x − x₀) + M·ξ + c`` of a target at T (floats, as probed)."""

    horizon: int
    base: FloatArray
    """x₀, the stream the probes start from (0 when the domain contains it)."""
    A: FloatArray
    """T × T: the outputs' response to a unit increase of each item."""
    M: FloatArray
    """T × K: the outputs' response to each standard Laplace value ξ_j."""
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


def linearity_tolerance(
    s: Structure | None,
    y: FloatArray,
    dx: FloatArray,
    xi: FloatArray,
    *,
    A: Any = None,
    M: Any = None,
    c: Any = None,
) -> FloatArray:
    """Per-output tolerance of ``|y − (A·dx + M·ξ + c)|`` for a linear float64 target.

    A target evaluating a sum of at most n = T + K + 1 products makes an error of at
    most ``γ_n·Σ|terms|`` (``γ_n ≈ n·u``, Higham, *Accuracy and Stability*, §3.1); the
    probed columns of A and M are differences of such outputs, so each carries an error
    ``≲ n·u·(|c| + |y_probe|)``, weighted by |dx_i| and |ξ_j| in the fit.  The tolerance
    is ``4·(n + 1)·u·(|y| + |c|·(1 + ‖dx‖₁ + ‖ξ‖₁) + |A|·|dx| + |M|·|ξ|)``: the sum of
    those bounds with a factor 2 margin.
    """
    A_ = s.A if s is not None else A
    M_ = s.M if s is not None else M
    c_ = s.c if s is not None else c
    n = A_.shape[1] + M_.shape[1] + 1
    scale = (
        np.abs(y)
        + np.abs(c_) * (1.0 + np.abs(dx).sum() + np.abs(xi).sum())
        + np.abs(A_) @ np.abs(dx)
        + (np.abs(M_) @ np.abs(xi) if M_.shape[1] else 0.0)
    )
    out: FloatArray = 4.0 * (n + 1) * _U * scale
    return out


def _domain_base(domain: Domain) -> tuple[float, float]:
    """x₀ (0 when the domain contains it, else its lower end) and the probe value."""
    lo, hi = float(domain.lower), float(domain.upper)
    base = 0.0 if lo <= 0.0 <= hi else lo
    probe = hi if hi != base else lo
    return base, probe


def _random_stream(domain: Domain, T: int, rng: np.random.Generator) -> FloatArray:
    lo, hi = float(domain.lower), float(domain.upper)
    if domain.integer:
        return rng.integers(int(domain.lower), int(domain.upper) + 1, size=T).astype(np.float64)
    return rng.uniform(lo, hi, size=T)


def _same(a: FloatArray, b: FloatArray) -> bool:
    return bool(np.array_equal(a, b, equal_nan=True))


class _Probe:
    """Calls through the runner, checking each call against the first one's draws."""

    def __init__(self, run: Runner, findings: list[Finding]) -> None:
        self.run = run
        self.findings = findings
        self.calls = 0
        self.signature: tuple[Any, ...] | None = None

    def __call__(self, x: FloatArray, xi: FloatArray, what: str) -> FloatArray | None:
        self.calls += 1
        try:
            y, req = self.run(x, xi)
        except CallFailure as failure:
            self.findings.append(failure.finding)
            self._draw_findings(failure.requests, int(x.size))
            return None
        if self.signature is None:
            if self._draw_findings(req, int(x.size)):
                return None
            self.signature = req.signature()
        elif req.signature() != self.signature:
            self.findings.append(
                Finding(
                    "structure-depends",
                    f"the draws requested on {what} differ from those at x = x₀, ξ = 0 "
                    f"({_draw_difference(req, self.signature)}): the structure "
                    "depends on the input/noise",
                    int(x.size),
                )
            )
            return None
        if not np.isfinite(y).all():
            t = int(np.flatnonzero(~np.isfinite(y))[0])
            self.findings.append(
                Finding(
                    "non-finite", f"output at t={t + 1} is {float(y[t])!r} on {what}", int(x.size)
                )
            )
            return None
        return y

    def _draw_findings(self, req: Requests, T: int) -> bool:
        found = False
        for law, n in req.other:
            self.findings.append(
                Finding(
                    "non-laplace",
                    f"the target drew from rng.{law} ({n} call{'s' * (n != 1)}); only Laplace "
                    "noise is analysed exactly for now",
                    T,
                )
            )
            found = True
        for name in dict.fromkeys(req.unknown):
            self.findings.append(
                Finding(
                    "unknown-attribute",
                    f"the target read rng.{name}, which the recording generator does not "
                    "provide (it scripts laplace and records numpy's other draws)",
                    T,
                )
            )
            found = True
        return found


def _draw_difference(req: Requests, first: tuple[Any, ...]) -> str:
    """How the draws of a call differ from the first call's."""
    scales, first_scales = req.scales, list(first[0])
    if len(scales) != len(first_scales):
        return f"{len(scales)} Laplace draws instead of {len(first_scales)}"
    for j, (a, b) in enumerate(zip(scales, first_scales, strict=True)):
        if a != b:
            return f"draw {j + 1} has scale {a!r} instead of {b!r}"
    return f"{_describe_draws(req)} instead of " + _describe_draws(
        Requests(first_scales, list(first[1]), list(first[2]))
    )


def _describe_draws(req: Requests) -> str:
    parts = [f"{len(req.scales)} Laplace draws"]
    parts += [f"{law}×{n}" for law, n in req.other]
    return ", ".join(parts)


def recover_structure(
    run: Runner,
    horizon: int,
    domain: Domain,
    *,
    rng: np.random.Generator,
    checks: int = 4,
) -> tuple[Structure | None, list[Finding]]:
    """Probe and verify the linear structure of a target at T = ``horizon`` (module doc).

    ``run(stream, script) -> (outputs, requests)`` makes one guarded call.  Returns the
    structure, or None with the findings that make it unavailable.
    """
    T = horizon
    findings: list[Finding] = []
    probe = _Probe(run, findings)
    base_v, probe_v = _domain_base(domain)
    step = probe_v - base_v
    x0 = np.full(T, base_v)
    y0 = probe(x0, np.zeros(0), "x = x₀, ξ = 0")
    if y0 is None:
        return None, findings
    K = len(probe.signature[0]) if probe.signature is not None else 0
    zeros = np.zeros(K)
    again = probe(x0, zeros, "a replay of x = x₀, ξ = 0")
    if again is None:
        return None, findings
    if not _same(again, y0):
        findings.append(_not_reproducible(y0, again, T, "x = x₀, ξ = 0"))
        return None, findings
    A = np.empty((T, T))
    for i in range(T):
        x = x0.copy()
        x[i] = probe_v
        y = probe(x, zeros, f"item {i + 1} set to {probe_v:g}")
        if y is None:
            return None, findings
        A[:, i] = (y - y0) / step
    M = np.empty((T, K))
    for j in range(K):
        xi = np.zeros(K)
        xi[j] = 1.0
        y = probe(x0, xi, f"ξ_{j + 1} = 1")
        if y is None:
            return None, findings
        M[:, j] = y - y0
    worst, worst_ratio = 0.0, 0.0
    for k in range(checks):
        x = _random_stream(domain, T, rng)
        xi = rng.laplace(size=K)
        what = f"random check {k + 1} (random stream, ξ ~ Lap(1))"
        y = probe(x, xi, what)
        if y is None:
            return None, findings
        y2 = probe(x, xi, f"a replay of {what}")
        if y2 is None:
            return None, findings
        if not _same(y, y2):
            findings.append(_not_reproducible(y, y2, T, what))
            return None, findings
        dx = x - x0
        fit = A @ dx + (M @ xi if K else 0.0) + y0
        res = np.abs(y - fit)
        tol = linearity_tolerance(None, y, dx, xi, A=A, M=M, c=y0)
        ratio = np.where(res == 0, 0.0, res / np.maximum(tol, np.finfo(float).tiny))
        t = int(np.argmax(ratio))
        worst = max(worst, float(res.max()))
        worst_ratio = max(worst_ratio, float(ratio[t]))
        if ratio[t] > 1.0:
            findings.append(
                Finding(
                    "not-linear",
                    f"not linear in its input/noise: on {what} output t={t + 1} is "
                    f"{float(y[t])!r} but the linear fit gives {float(fit[t])!r} "
                    f"(residual {res[t]:.3g}, "
                    f"{ratio[t]:.3g} × the rounding tolerance {tol[t]:.3g})",
                    T,
                )
            )
            return None, findings
    structure = Structure(
        T,
        x0,
        A,
        M,
        y0,
        np.asarray(probe.signature[0] if probe.signature else (), float),
        worst,
        worst_ratio,
        probe.calls,
    )
    return structure, findings


def _not_reproducible(y: FloatArray, y2: FloatArray, T: int, what: str) -> Finding:
    t = int(np.flatnonzero(~np.isclose(y, y2, rtol=0, atol=0, equal_nan=True))[0])
    return Finding(
        "not-reproducible",
        f"two calls with the same stream and the same scripted noise ({what}) returned "
        f"different outputs (t={t + 1}: {float(y[t])!r} vs {float(y2[t])!r}): the target "
        "draws randomness dpref does not control",
        T,
    )


# ------------------------------------------------------------------ the report
def _show(q: Fraction | None) -> str:
    if q is None:
        return "∞"
    if q.denominator == 1 or (q.denominator < 10**6 and q.numerator < 10**9):
        return str(q)
    return (
        f"{float(q):.17g} (exactly a rational with a {q.denominator.bit_length()}-bit denominator)"
    )


@dataclass
class StructuralReport:
    """The result of :func:`exact_audit`."""

    target: str
    horizon: int
    protocol: str
    domain: str
    sensitivity: Fraction
    claimed: Fraction | None
    epsilon: Fraction | None = None
    """The certified upper bound U = max_i U_i, exactly (None: infinite or unavailable)."""
    epsilon_lower: Fraction | None = None
    """The certified lower bound on the LP optimum (equal to ``epsilon`` when exact)."""
    epsilon_stated: Fraction | None = None
    """``epsilon`` as a readable rational (see :func:`stated_epsilon`)."""
    scope: str = "unavailable"
    """``exact`` (the loss of the released vector), ``upper bound`` or ``unavailable``."""
    infinite: bool = False
    item: int | None = None
    """The item (1-indexed) that attains ε."""
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
    """A statistical lower bound from the sampled audit, when one was run."""
    sampled_confidence: float | None = None

    @property
    def available(self) -> bool:
        """True when the loss was computed (no finding blocked the analysis)."""
        return self.scope != "unavailable"

    @property
    def outcome(self) -> str:
        """What the exact analysis established: ``violation``, ``holds-exactly``,
        ``holds-within-rounding`` (the loss exceeds the claim only by float rounding of the
        target's own scales, at most 1e-12 relative), ``over-noised``, ``no-claim``,
        ``unavailable`` or ``undetermined`` (only an upper bound, and it exceeds the claim)."""
        if not self.available:
            return "unavailable"
        if self.claimed is None:
            return "no-claim"
        if self.infinite:
            return "violation"
        assert self.epsilon is not None and self.epsilon_stated is not None
        if self.epsilon == self.claimed:
            return "holds-exactly"
        if self.epsilon_stated == self.claimed:
            return "holds-within-rounding" if self.epsilon > self.claimed else "holds-exactly"
        if self.epsilon <= self.claimed:
            return "over-noised"
        # an exact loss above the claim refutes it; an upper bound above it does not
        return "violation" if self.scope == "exact" else "undetermined"

    @property
    def verdict(self) -> str:
        """The audit verdict every dpref report carries: ``violation``,
        ``no-violation-found`` or ``inconclusive`` (:attr:`outcome` says more)."""
        outcome = self.outcome
        if outcome == "violation":
            return "violation"
        if outcome in ("unavailable", "undetermined"):
            return "inconclusive"
        return "no-violation-found"

    @property
    def reason(self) -> str:
        """The verdict in words."""
        return _VERDICT_TEXT[self.outcome]

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

        return {
            "target": self.target,
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
            },
            "certified": self.certified,
            "calls": self.calls,
            "seconds": self.seconds,
            "notes": list(self.notes),
            "findings": [f.as_dict() for f in self.findings],
            "sampled_lower_bound": self.sampled_lower_bound,
            "sampled_confidence": self.sampled_confidence,
        }

    def summary(self) -> str:
        """A human-readable report: the verdict and its reason first, as every audit report."""
        headline = {
            "violation": "VIOLATION: the target is not ε-DP (its exact loss exceeds the claim)",
            "inconclusive": "INCONCLUSIVE",
        }.get(self.verdict, "no violation found")
        lines = [
            f"verdict     {headline} ({self.seconds:.2f} s)",
            f"reason      {self.reason}",
            f"target      {self.target} (noise protocol: {self.protocol})",
            f"horizon     T={self.horizon}, domain {self.domain}, Δ = {self.sensitivity}",
        ]
        if self.claimed is not None:
            lines.append(f"claimed     ε = {self.claimed}")
        if self.available:
            scales = ", ".join(f"{b:.6g}" for b in self.distinct_scales[:6])
            more = ", …" if len(self.distinct_scales) > 6 else ""
            lines.append(
                f"structure   y = A·x + M·ξ + c: {self.draws} Laplace draws "
                f"(scales {scales}{more}); "
                f"{self.used_draws} reach the outputs, rank M = {self.rank}; A is "
                f"{self.horizon}×{self.horizon}"
            )
            lines.append(
                f"linearity   verified on random (x, ξ): worst residual {self.residual:.3g} "
                f"({self.residual_ratio:.3g} × the rounding tolerance); reproducible; "
                f"{self.calls} calls"
            )
            where = f" (item t={self.item})" if self.item is not None else ""
            if self.infinite:
                lines.append(
                    f"exact loss  ε = ∞{where}: a change of this item is not covered by noise"
                )
            else:
                kind = "exact loss " if self.scope == "exact" else "loss ≤     "
                stated = self.epsilon_stated
                value = (
                    f"{_show(stated)}"
                    if stated == self.epsilon
                    else (f"{_show(stated)} (to 10⁻¹²; exactly {_show(self.epsilon)})")
                )
                lines.append(f"{kind} ε = {value}{where}")
                if self.scope == "exact":
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
        if self.sampled_lower_bound is not None:
            lines.append(
                f"sampled     ε ≥ {self.sampled_lower_bound:.4f} with confidence "
                f"{self.sampled_confidence} (statistical audit)"
            )
        lines += [f"note        {n}" for n in self.notes]
        lines += [f"finding     {f}" for f in self.findings]
        return "\n".join(lines)


_VERDICT_TEXT = {
    "violation": "violation: the exact loss exceeds the claimed ε",
    "holds-exactly": "holds exactly: the loss equals the claimed ε",
    "holds-within-rounding": "holds up to float rounding: the loss exceeds the claimed ε by at "
    "most 1e-12 relative, from the target's own float scales",
    "over-noised": "holds, over-noised: the loss is below the claimed ε",
    "no-claim": "no ε claimed",
    "undetermined": "undetermined: the upper bound exceeds the claimed ε (not a refutation)",
    "unavailable": "unavailable: the exact loss could not be computed (see findings)",
}


def _resolve(
    target: Any, protocol: str | None, timeout: float | None, memory_limit: int | None
) -> tuple[str, Runner | WorkerRunner, str | None, Domain | None]:
    """The target's name, how to call it, its protocol (None: known once its worker
    loads it) and its own domain.  Third-party code runs in a worker process; only
    dpref's own mechanisms are called in this process."""
    if protocol is not None:
        protocol = check_choice("protocol", protocol, tuple(PROTOCOLS))
    if isinstance(target, Mechanism):
        refuse_zcdp("target", target)
        fn = mechanism_target(target)
        return repr(target), InProcessRunner(fn, "rng"), "rng", target.domain
    if isinstance(target, str):
        runner = WorkerRunner(target, None, protocol, timeout, memory_limit)
        return target, runner, protocol, None
    if callable(target):
        qual = getattr(target, "__qualname__", None) or repr(target)
        module = getattr(target, "__module__", None)
        name = f"{module}:{qual}" if module else str(qual)
        proto = protocol_of(target, protocol)
        return name, WorkerRunner(None, target, proto, timeout, memory_limit), proto, None
    raise DprefTypeError(
        f"target={fmt(target)}: must be a Mechanism, a callable or 'module:function'"
    )


def exact_audit(
    target: Any,
    horizon: Any,
    *,
    epsilon: Any = None,
    domain: Domain | None = None,
    protocol: str | None = None,
    seed: Any = 0,
    checks: int = 4,
    runner: Runner | None = None,
    sampled: Any = None,
    timeout: float | None = 60.0,
    memory_limit: int | None = 4 << 30,
) -> StructuralReport:
    """The exact privacy loss of a noise-injectable target at T = ``horizon``.

    ``target`` is a :class:`~dpref.mechanisms.Mechanism` (audited through
    :func:`mechanism_target`), a callable ``f(stream, rng)`` / ``f(stream, noise)``
    or a ``module:function`` spec; ``protocol`` (``"rng"`` or ``"callback"``)
    overrides the callable's ``dpref_noise`` attribute.  ``epsilon`` is the claimed ε,
    ``domain`` the stream domain (default: the mechanism's, else bits), ``checks`` the
    number of random verification points, ``sampled`` an
    :class:`~dpref.audit.loss.AuditReport` whose lower bound is shown beside the exact
    value.  A third-party target (a callable or a spec) runs in its own worker process
    (:class:`~dpref.audit.runners.WorkerRunner`, ``timeout`` seconds per call,
    ``memory_limit`` bytes); a spec is imported only there.  ``runner`` replaces that
    (``run(stream, script) -> (outputs, requests)``, see :mod:`dpref.audit.runners`).
    """
    start = time.perf_counter()
    T = check_int_range("horizon", horizon, 1, MAX_EXACT_HORIZON)
    claimed = None if epsilon is None else check_epsilon("epsilon", epsilon)
    checks = check_int_range("checks", checks, 1, MAX_CHECKS)
    if domain is not None and not isinstance(domain, Domain):
        raise DprefTypeError(f"domain={fmt(domain)}: must be a dpref.domains.Domain")
    if protocol is not None:
        protocol = check_choice("protocol", protocol, tuple(PROTOCOLS))
    if sampled is not None and not isinstance(sampled, AuditReport):
        raise DprefTypeError(f"sampled={fmt(sampled)}: must be an AuditReport or None")
    rng = seeded(seed)
    name, default_run, proto, own_domain = _resolve(target, protocol, timeout, memory_limit)
    dom = domain if domain is not None else (own_domain if own_domain is not None else bits())
    run = runner if runner is not None else default_run
    structure: Structure | None = None
    findings: list[Finding] = []
    try:
        if isinstance(run, WorkerRunner):
            proto = run.start(T)
        structure, findings = recover_structure(run, T, dom, rng=rng, checks=checks)
    except CallFailure as failed:  # the worker could not even be started
        findings = [failed.finding]
    finally:
        if isinstance(run, WorkerRunner):
            run.close()
    shown = proto if proto is not None else protocol_of(None, None)
    report = StructuralReport(name, T, shown, dom.name, dom.sensitivity, claimed, findings=findings)
    if sampled is not None:
        lb = sampled.epsilon_lower_bound
        report.sampled_lower_bound = None if lb is None else float(lb)
        report.sampled_confidence = float(sampled.confidence)
    if structure is not None:
        _fill(report, structure, dom.sensitivity)
    report.seconds = time.perf_counter() - start
    return report


def _fill(report: StructuralReport, s: Structure, delta: Fraction) -> None:
    losses = item_losses(s.M, s.A, delta)
    report.draws = int(s.M.shape[1])
    report.distinct_scales = sorted({float(b) for b in s.scales.tolist()})
    report.rank, report.used_draws = losses.rank, losses.used
    report.residual, report.residual_ratio, report.calls = s.residual, s.residual_ratio, s.calls
    report.item_epsilons = list(losses.upper)
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
