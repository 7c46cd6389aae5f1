"""Exact audits of noise-injectable targets: recover the linear structure, then the loss.

A noise-injectable target (:mod:`dpref.audit.isolation.recording`) is called with noise that dpref
scripts, so its release can be *measured* instead of sampled.  :func:`recover_structure`
probes it and fits ``y = A·(x − x₀) + M·ξ + c`` for the K standard Laplace values ξ the
target requested (column j of M is the outputs' response to ξ_j, the draw's scale folded
in): one call at ``(x₀, ξ = 0)``, one per unit change of an item, one per unit ξ_j.
It then *verifies* the fit: the number, order and scales of the draws must be the same on
every call; replaying a call must give the same outputs bit for bit (else the target
uses randomness dpref does not control); and on random ``(x, ξ)`` the outputs must equal
the fit within the rounding error of a float64 sum (:func:`linearity_tolerance`) — or
of a float32 one, for a target whose outputs are float32 numbers (``precision``,
:mod:`dpref.audit.injected.rounding`: the report then states the loss's rounding slack).

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

When the target draws standard *normal* values instead (``rng.normal``,
``rng.standard_normal``), the release is a Gaussian shift for each neighbouring pair and
:mod:`dpref.audit.gaussian.l2loss` gives its exact μ: ``μ_i² = min{‖v‖₂² : M·v = Δ·A·e_i}`` (the
least-norm v, ∞ without a solution), ``μ = max_i μ_i``, ``ρ = μ²/2``.  The law of the
recorded draws decides the analysis; a target mixing both laws is a finding.

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

from dpref.audit.gaussian.l2loss import (
    MAX_GAUSSIAN_EXACT_WORK,
    item_mu_squared,
)
from dpref.audit.injected.exact_probes import Point, check_points, ladder_points
from dpref.audit.injected.rounding import (
    FLOAT32,
    FLOAT64,
    Precision,
    PrecisionChooser,
    check_precision,
)
from dpref.audit.injected.structural_fill import (
    Structure,
    certify_gaussian,
    certify_laplace,
    domain_base,
    fill,
    fill_gaussian,
    fill_slack,
)
from dpref.audit.isolation.bitlevel import BitChannels
from dpref.audit.isolation.recording import PROTOCOLS, Requests, protocol_of
from dpref.audit.isolation.runners import CallFailure, InProcessRunner, Runner, WorkerRunner
from dpref.audit.isolation.targets import Finding, seeded
from dpref.audit.limits import MAX_CHECKS, MAX_EXACT_HORIZON
from dpref.audit.pure.l1loss import (
    SNAP_MAX_DENOMINATOR,
    SNAP_RELATIVE,
    ItemLosses,
    item_losses,
    stated_epsilon,
)
from dpref.audit.reports.audit_report import AuditReport
from dpref.audit.reports.structural_report import StructuralReport
from dpref.domains import Domain, bits
from dpref.errors import DprefTypeError, ParameterError
from dpref.mechanisms import Mechanism
from dpref.validation import (
    check_choice,
    check_epsilon,
    check_int_range,
    check_rho,
    fmt,
)

__all__ = [
    "MAX_GAUSSIAN_EXACT_WORK",
    "PRIVACY_VIEWS",
    "SNAP_MAX_DENOMINATOR",
    "SNAP_RELATIVE",
    "ItemLosses",
    "StructuralReport",
    "Structure",
    "exact_audit",
    "item_losses",
    "item_mu_squared",
    "linearity_tolerance",
    "mechanism_target",
    "recover_structure",
    "stated_epsilon",
]

FloatArray = npt.NDArray[np.float64]

_U = 2.0**-53  # unit roundoff of float64
_TINY = 2.0**-1074  # the smallest subnormal float64

PRIVACY_VIEWS = ("pure", "zcdp", "gdp")
"""The claims an exact audit compares with: pure ε-DP (Laplace draws), ρ-zCDP or μ-GDP
(normal draws; for a linear Gaussian release both are exact: ρ = μ²/2)."""


# ----------------------------------------------------------------- the target
def mechanism_target(mech: Mechanism) -> Callable[[FloatArray, Any], FloatArray]:
    """A built-in mechanism as a noise-injectable ``f(stream, rng)``.

    A pure-ε mechanism draws the standard node noise through ``rng.laplace(0, scales)``
    with the plan's node scales (``m.plan(T).scales``, canonical order); a Gaussian (zCDP)
    one draws ``rng.normal(0, σ)`` with its node standard deviations
    (``m.noise_multipliers(T)``, rounded up).  Both return ``m.release(stream,
    noise=z)``.  (Continuous noise of that family, whatever ``mech.noise`` says: a
    discrete Laplace or discrete Gaussian mechanism is audited through its continuous
    twin of the same scale.)
    """
    if not isinstance(mech, Mechanism):
        raise DprefTypeError(f"mech={fmt(mech)}: must be a dpref Mechanism")
    gaussian = bool(getattr(mech, "gaussian", False))
    cache: dict[int, FloatArray] = {}

    def f(stream: FloatArray, rng: Any) -> FloatArray:
        T = len(stream)
        if T not in cache:
            if gaussian:
                n = int(mech.recombination(T).shape[1])
                sig = np.asarray(mech.noise_multipliers(T), dtype=np.float64)
                cache[T] = np.broadcast_to(sig, (n,)).copy()
            else:
                cache[T] = mech.plan(T).scales
        scales = cache[T]
        if gaussian:
            z = rng.normal(0.0, scales, size=scales.size)
        else:
            z = rng.laplace(0.0, scales, size=scales.size)
        return mech.release(stream, noise=z)

    f.__qualname__ = repr(mech)
    return f


# -------------------------------------------------------------- the structure
def linearity_tolerance(
    s: Structure | None,
    y: FloatArray,
    dx: FloatArray,
    xi: FloatArray,
    *,
    A: Any = None,
    M: Any = None,
    c: Any = None,
    unit: float = _U,
    tiny: float = _TINY,
) -> FloatArray:
    """Per-output tolerance of ``|y − (A·dx + M·ξ + c)|`` for a linear float64 target
    (``unit``, ``tiny``: another precision's unit roundoff and smallest subnormal, e.g.
    2⁻²⁴ and 2⁻¹⁴⁹ for float32; :mod:`dpref.audit.injected.rounding`).

    A target evaluating a sum of at most n = T + K + 1 products makes an error of at
    most ``γ_n·Σ|terms|`` (``γ_n ≈ n·u``, Higham, *Accuracy and Stability*, §3.1); the
    probed columns of A and M are differences of such outputs, so each carries an error
    ``≲ n·u·(|c| + |y_probe|)``, weighted by |dx_i| and |ξ_j| in the fit.  The tolerance
    is ``4·(n + 1)·(u·(|y| + |c|·(1 + ‖dx‖₁ + ‖ξ‖₁) + |A|·|dx| + |M|·|ξ|) + 2⁻¹⁰⁷⁴)``:
    the sum of those bounds with a factor 2 margin, and an absolute floor for subnormal
    outputs (each operation there errs by up to half the smallest subnormal).
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
    # an absolute floor for the subnormal range, where each operation's error is up to
    # half the smallest subnormal whatever the magnitudes (the noise ladder probes there)
    out: FloatArray = 4.0 * (n + 1) * (unit * scale + tiny)
    return out


def _same(a: FloatArray, b: FloatArray) -> bool:
    """The same bits (a replay must reproduce the sign of a zero and a NaN's payload too)."""
    a64, b64 = np.ascontiguousarray(a, np.float64), np.ascontiguousarray(b, np.float64)
    return a64.shape == b64.shape and bool(np.array_equal(a64.view(np.uint64), b64.view(np.uint64)))


class _Probe:
    """Calls through the runner, checking each call against the first one's draws."""

    def __init__(self, run: Runner, findings: list[Finding], precision: str = "float64") -> None:
        self.run = run
        self.findings = findings
        self.calls = 0
        self.signature: tuple[Any, ...] | None = None
        self.law = "none"
        self.bits = BitChannels()
        self.chooser = PrecisionChooser(precision)

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
            self.law = req.law()
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
        self.bits.add(y)
        self.chooser.see(y)
        return y

    def _draw_findings(self, req: Requests, T: int) -> bool:
        found = False
        for law, n in req.other:
            self.findings.append(
                Finding(
                    "non-laplace",
                    f"the target drew from rng.{law} ({n} call{'s' * (n != 1)}); only Laplace "
                    "and normal noise are analysed exactly for now",
                    T,
                )
            )
            found = True
        if req.law() == "mixed":
            runs = ", ".join(f"{law}×{n}" for law, n in req.laws[:6])
            more = ", …" if len(req.laws) > 6 else ""
            self.findings.append(
                Finding(
                    "mixed-noise",
                    f"the target drew both Laplace and normal noise ({runs}{more}): a release "
                    "with both laws at once is not analysed exactly",
                    T,
                )
            )
            found = True
        for name in dict.fromkeys(req.unknown):
            self.findings.append(
                Finding(
                    "unknown-attribute",
                    f"the target read rng.{name}, which the recording generator does not "
                    "script (it scripts laplace and normal and records numpy's other draws)",
                    T,
                )
            )
            found = True
        return found


def _draw_difference(req: Requests, first: tuple[Any, ...]) -> str:
    """How the draws of a call differ from the first call's."""
    scales, first_scales = req.scales, list(first[0])
    noun = _LAW_NOUN.get(req.law(), "scripted")
    if len(scales) != len(first_scales):
        return f"{len(scales)} {noun} draws instead of {len(first_scales)}"
    for j, (a, b) in enumerate(zip(scales, first_scales, strict=True)):
        if a != b:
            return f"draw {j + 1} has scale {a!r} instead of {b!r}"
    return f"{_describe_draws(req)} instead of " + _describe_draws(
        Requests(first_scales, list(first[1]), list(first[2]), list(first[3]))
    )


_LAW_NOUN = {"laplace": "Laplace", "normal": "Gaussian", "none": "Laplace"}


def _describe_draws(req: Requests) -> str:
    if req.law() == "mixed":
        parts = [f"{law}×{n}" for law, n in req.laws]
    else:
        parts = [f"{len(req.scales)} {_LAW_NOUN[req.law()]} draws"]
    parts += [f"{law}×{n}" for law, n in req.other]
    return ", ".join(parts)


def recover_structure(
    run: Runner,
    horizon: int,
    domain: Domain,
    *,
    rng: np.random.Generator,
    checks: int = 4,
    precision: str = "float64",
) -> tuple[Structure | None, list[Finding]]:
    """Probe and verify the linear structure of a target at T = ``horizon`` (module doc).

    ``run(stream, script) -> (outputs, requests)`` makes one guarded call.  Returns the
    structure, or None with the findings that make it unavailable.  ``precision``
    (``float64``, ``float32`` or ``auto``, :mod:`dpref.audit.injected.rounding`) is the error
    model of the linearity check; ``auto`` is float32 while every output seen is a
    float32 number, and a point passed under float32 is re-judged when it is not.
    """
    T = horizon
    findings: list[Finding] = []
    probe = _Probe(run, findings, check_precision(precision))
    base_v, probe_v = domain_base(domain)
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
    fit = _Fit(A, M, y0, x0)
    for point in check_points(domain, x0, M, probe.law, checks, rng):
        if not _verify(probe, fit, point, findings):
            return None, findings
    now = probe.chooser.current
    ladder = ladder_points(
        domain, x0, M, y0, rng, cap=now.output_cap, distinct=now.name != "float64"
    )
    for point in ladder:
        if not _verify(probe, fit, point, findings):
            return None, findings
    findings += probe.bits.findings(T)
    if findings:
        return None, findings
    chosen = probe.chooser.current
    worst, worst_ratio, _ = fit.track.get(chosen.name, (0.0, 0.0, None))
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
        probe.law,
        checks,
        chosen.name,
        probe.chooser.source,
        now.output_cap,
    )
    return structure, findings


@dataclass(eq=False)
class _Fit:
    """The fitted structure while it is verified, and the worst residual so far."""

    A: FloatArray
    M: FloatArray
    c: FloatArray
    base: FloatArray
    track: dict[str, tuple[float, float, Finding | None]] = field(default_factory=dict)
    """Per precision judged: the worst residual, its ratio to the tolerance, and the
    first point's finding that exceeded it (None: none)."""


def _verify(probe: _Probe, fit: _Fit, point: Point, findings: list[Finding]) -> bool:
    """Call the target at one verification point (twice when it is replayed) and check
    the outputs against the fit; False (with a finding) when they depart from it."""
    T = int(point.x.size)
    y = probe(point.x, point.xi, point.what)
    if y is None:
        return False
    if point.replay:
        y2 = probe(point.x, point.xi, f"a replay of {point.what}")
        if y2 is None:
            return False
        if not _same(y, y2):
            findings.append(_not_reproducible(y, y2, T, point.what))
            return False
    dx, xi = point.x - fit.base, point.xi
    chooser = probe.chooser
    judged = [chooser.current]
    if chooser.requested == "auto" and chooser.all_float32:
        judged.append(FLOAT64)  # re-judged in float64 if an output later is not float32
    with np.errstate(over="ignore", invalid="ignore"):
        pred = fit.A @ dx + (fit.M @ xi if xi.size else 0.0) + fit.c
        res = np.abs(y - pred)
    for prec in judged:
        _judge(fit, prec, point.what, y, pred, res, dx, xi)
    failed = fit.track.get(chooser.current.name, (0.0, 0.0, None))[2]
    if failed is not None:
        findings.append(failed)
        return False
    return True


def _judge(
    fit: _Fit,
    prec: Precision,
    what: str,
    y: FloatArray,
    pred: FloatArray,
    res: FloatArray,
    dx: FloatArray,
    xi: FloatArray,
) -> None:
    """Compare one point's residual with the tolerance of ``prec``; keep the worst."""
    T = int(y.size)
    with np.errstate(over="ignore", invalid="ignore"):
        tol = linearity_tolerance(
            None, y, dx, xi, A=fit.A, M=fit.M, c=fit.c, unit=prec.u, tiny=prec.tiny
        )
        ratio = np.where(res == 0, 0.0, res / np.maximum(tol, np.finfo(float).tiny))
    ratio = np.where(np.isfinite(ratio), ratio, np.inf)
    t = int(np.argmax(ratio))
    worst, worst_ratio, failed = fit.track.get(prec.name, (0.0, 0.0, None))
    if ratio[t] >= worst_ratio:  # the residual where the ratio is worst
        worst, worst_ratio = float(res[t]), float(ratio[t])
    if ratio[t] > 1.0 and failed is None:
        ladder = (
            " — clipped, rounded, saturated or bounded noise is not the claimed law"
            if what.startswith("noise ladder")
            else ""
        )
        where = "" if prec.name == "float64" else f" of {prec.name}"
        failed = Finding(
            "not-linear",
            f"not linear in its input/noise: on {what} output t={t + 1} is "
            f"{float(y[t])!r} but the linear fit gives {float(pred[t])!r} "
            f"(residual {res[t]:.3g}, {ratio[t]:.3g} × the rounding tolerance{where} "
            f"{tol[t]:.3g}){ladder}",
            T,
        )
    fit.track[prec.name] = (worst, worst_ratio, failed)


def _not_reproducible(y: FloatArray, y2: FloatArray, T: int, what: str) -> Finding:
    t = int(np.flatnonzero(~np.isclose(y, y2, rtol=0, atol=0, equal_nan=True))[0])
    return Finding(
        "not-reproducible",
        f"two calls with the same stream and the same scripted noise ({what}) returned "
        f"different outputs (t={t + 1}: {float(y[t])!r} vs {float(y2[t])!r}): the target "
        "draws randomness dpref does not control",
        T,
    )


def _resolve(
    target: Any, protocol: str | None, timeout: float | None, memory_limit: int | None
) -> tuple[str, Runner | WorkerRunner, str | None, Domain | None]:
    """The target's name, how to call it, its protocol (None: known once its worker
    loads it) and its own domain.  Third-party code runs in a worker process; only
    dpref's own mechanisms are called in this process."""
    if protocol is not None:
        protocol = check_choice("protocol", protocol, tuple(PROTOCOLS))
    if isinstance(target, Mechanism):
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


MAX_MU = Fraction(2**200)
"""Largest μ a claim may give (μ² = 2^400, the twin of ρ's ``MAX_RHO``)."""


def _claims(
    epsilon: Any, rho: Any, mu: Any, privacy: Any
) -> tuple[Fraction | None, Fraction | None, Fraction | None, str | None]:
    """Validate the claim: at most one of ε, ρ, μ, consistent with ``privacy``."""
    given = [n for n, v in (("epsilon", epsilon), ("rho", rho), ("mu", mu)) if v is not None]
    if len(given) > 1:
        a, b = given[0], given[1]
        va = {"epsilon": epsilon, "rho": rho, "mu": mu}
        raise ParameterError(
            f"{a}={fmt(va[a])}, {b}={fmt(va[b])}: give one claim (ε for pure DP, ρ for "
            "zCDP or μ for GDP), not both"
        )
    if privacy is not None:
        privacy = check_choice("privacy", privacy, PRIVACY_VIEWS)
    eps = None if epsilon is None else check_epsilon("epsilon", epsilon)
    r = None if rho is None else check_rho("rho", rho)
    m = None if mu is None else check_epsilon("mu", mu)
    if m is not None and m > MAX_MU:
        raise ParameterError(f"mu={fmt(mu)}: must be <= 2^200")
    implied = "pure" if eps is not None else "zcdp" if r is not None else "gdp" if m else None
    if privacy is not None and implied is not None and privacy != implied:
        name = given[0]
        value = {"epsilon": epsilon, "rho": rho, "mu": mu}[name]
        raise ParameterError(
            f"privacy={fmt(privacy)}: contradicts the claim {name}={fmt(value)} "
            f"(which is a {implied} claim)"
        )
    return eps, r, m, privacy if privacy is not None else implied


def exact_audit(
    target: Any,
    horizon: Any,
    *,
    epsilon: Any = None,
    rho: Any = None,
    mu: Any = None,
    privacy: str | None = None,
    domain: Domain | None = None,
    protocol: str | None = None,
    seed: Any = 0,
    checks: int = 4,
    runner: Runner | None = None,
    sampled: Any = None,
    timeout: float | None = 60.0,
    memory_limit: int | None = 4 << 30,
    precision: str = "auto",
) -> StructuralReport:
    """The exact privacy loss of a noise-injectable target at T = ``horizon``.

    ``target`` is a :class:`~dpref.mechanisms.Mechanism` (audited through
    :func:`mechanism_target`), a callable ``f(stream, rng)`` / ``f(stream, noise)``
    or a ``module:function`` spec; ``protocol`` (``"rng"`` or ``"callback"``)
    overrides the callable's ``dpref_noise`` attribute.  The claim is at most one of
    ``epsilon`` (pure ε-DP), ``rho`` (ρ-zCDP) or ``mu`` (μ-GDP); ``privacy``
    (``"pure"``, ``"zcdp"``, ``"gdp"``) names the view and must agree with the claim
    (default: the claim's, else the law of the target's draws).  The law of the recorded
    draws decides the analysis: Laplace → the exact ε, normal → the exact μ
    (:mod:`dpref.audit.gaussian.l2loss`; a :class:`~dpref.errors.ParameterError` naming the
    horizon when its exact elimination would exceed :data:`MAX_GAUSSIAN_EXACT_WORK`).  A Gaussian
    target with an ε claim is a violation when some item moves an output (its pure loss
    is unbounded); a Laplace target with a ρ/μ claim has outcome ``law-mismatch``.
    ``domain`` is the stream domain (default: the mechanism's, else bits), ``checks`` the
    number of random verification points, ``sampled`` an
    :class:`~dpref.audit.pure.loss.AuditReport` whose lower bound is shown beside the exact
    value (its ``mu_lower_bound`` in the GDP/zCDP view, when it has one).  A third-party
    target (a callable or a spec) runs in its own worker process
    (:class:`~dpref.audit.isolation.runners.WorkerRunner`, ``timeout`` seconds per call,
    ``memory_limit`` bytes); a spec is imported only there.  ``runner`` replaces that
    (``run(stream, script) -> (outputs, requests)``, see :mod:`dpref.audit.isolation.runners`).
    ``precision`` (``auto``, ``float64``, ``float32``) is the error model of the
    target's rounding (:mod:`dpref.audit.injected.rounding`); under float32 the report states
    the rounding slack — an interval holding the loss of every real linear structure
    the probes allow — and the verdict rests on it.
    """
    start = time.perf_counter()
    precision = check_precision(precision)
    T = check_int_range("horizon", horizon, 1, MAX_EXACT_HORIZON)
    claimed, claimed_rho, claimed_mu, view = _claims(epsilon, rho, mu, privacy)
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
        structure, findings = recover_structure(
            run, T, dom, rng=rng, checks=checks, precision=precision
        )
    except CallFailure as failed:  # the worker could not even be started
        findings = [failed.finding]
    finally:
        if isinstance(run, WorkerRunner):
            run.close()
    shown = proto if proto is not None else protocol_of(None, None)
    report = StructuralReport(name, T, shown, dom.name, dom.sensitivity, claimed, findings=findings)
    report.claimed_rho, report.claimed_mu = claimed_rho, claimed_mu
    report.isolation = run.isolation if isinstance(run, WorkerRunner) else None
    law = structure.law if structure is not None else "unknown"
    report.law = law
    report.privacy = view if view is not None else ("gdp" if law == "normal" else "pure")
    if sampled is not None:
        if report.privacy == "pure":
            lb = sampled.epsilon_lower_bound
        else:
            lb = getattr(sampled, "mu_lower_bound", None)
        report.sampled_lower_bound = None if lb is None else float(lb)
        if report.privacy == "pure" or lb is not None:
            report.sampled_confidence = float(sampled.confidence)
    if precision != "auto":  # what was requested, also when the probing stopped early
        report.precision = precision
    if structure is not None:
        report.precision = structure.precision
        report.precision_source = structure.precision_source
        prec = FLOAT64 if structure.precision == "float64" else FLOAT32
        if law == "normal" or (law == "none" and report.privacy != "pure"):
            fill_gaussian(report, structure, dom.sensitivity)
            certify_gaussian(report, structure, dom, prec)
        else:
            fill(report, structure, dom.sensitivity)
            certify_laplace(report, structure, dom, prec)
        if prec is not FLOAT64:
            fill_slack(report, structure, dom, prec)
    report.seconds = time.perf_counter() - start
    return report
