"""Privacy-loss audit on event-level neighbouring streams (``dpref audit``).

For neighbouring streams ``x, x′`` (equal except at one step) and any event E, an
ε-DP mechanism satisfies ``P[M(x) ∈ E] ≤ e^ε P[M(x′) ∈ E]``.  The audit

1. builds neighbouring pairs of length T: the given ones, or a standard family —
   flip the first, middle and last item of the all-low, all-high and a random
   stream (for non-bit domains the flip goes between the domain's extremes), and,
   when a plan is known, also the item the plan charges most;
2. draws a *selection* split of outputs on every stream and, for every pair and
   both orientations, chooses candidate events (:mod:`dpref.audit.events`):
   greedy conjunctions of half-lines on output coordinates and their differences,
   or half-lines of learned projections of the outputs (the better-scored fills
   the one black-box slot), and, when a linear plan is known (a built-in target,
   or ``reference=``), the plan-aware likelihood-ratio event;
3. keeps the pair whose best candidate promises the largest bound and draws a
   fresh *test* split on it (no double dipping);
4. bounds ``ln p₁/p₂`` for each of its K candidate events with one-sided
   Clopper–Pearson bounds, each at level ``(1 − confidence)/(2K)``, so that with
   probability at least ``confidence`` *every* reported bound holds (Bonferroni
   over the two proportions and the K events), and reports the largest:
   ``ε_lb = max_E ln(p̂₁_low(E) / p̂₂_high(E))``.

``ε_lb > claimed ε`` proves a violation at that confidence.  For built-in mechanisms
at T ≤ 8 the exact loss (:mod:`dpref.audit.exact`) is reported beside the estimate.

References
----------
.. [1] Z. Ding et al. "Detecting Violations of Differential Privacy." CCS 2018.
.. [2] B. Bichsel et al. "DP-Sniper." IEEE S&P 2021 (Clopper–Pearson ε bounds).
.. [3] T.-H. H. Chan, E. Shi, D. Song. "Private and Continual Release of
   Statistics." ACM TISSEC 2011 (event-level neighbouring streams).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt
from scipy import stats

from dpref.audit.events import (
    ConjunctionEvent,
    LikelihoodRatioEvent,
    ProjectionEvent,
    Scored,
    best_llr_threshold,
    best_projections,
    compute_features,
    feature_pairs,
    greedy_conjunctions,
    plan_recovery,
    recovery_matrix,
    used_nodes,
)
from dpref.audit.exact import EXACT_MAX_HORIZON, ExactLoss, exact_loss
from dpref.audit.progress import Progress
from dpref.audit.stats import cp_lower, cp_upper
from dpref.audit.targets import Finding, Target, TargetFailure, as_target, seeded
from dpref.domains import Domain, bits
from dpref.errors import DprefTypeError, ParameterError
from dpref.mechanisms import Mechanism
from dpref.plan import LinearPlan
from dpref.validation import check_epsilon, check_positive_int, fmt

__all__ = [
    "EXIT_CODES",
    "INCONCLUSIVE",
    "NO_VIOLATION",
    "VERDICTS",
    "VIOLATION",
    "AuditReport",
    "EventResult",
    "NeighbourPair",
    "audit",
    "standard_pairs",
]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

_FEATURE_BUDGET = 24_000_000
"""Cap on selection samples × features per stream (memory of the selection step)."""
_MAX_SELECTION = 50_000
"""Cap on selection samples per stream: enough to rank events; the rest go to the test."""
_TEST_CHUNK = 1 << 16
_PLAN_MAX_HORIZON = 1024
"""Largest T for the plan-aware event (its recovery matrix is dense, T × T)."""

VIOLATION = "violation"
"""Verdict: a violation was proven (audit: ε_lb > claimed ε; conform: a check failed)."""
NO_VIOLATION = "no-violation-found"
"""Verdict: everything that was meant to run ran, and nothing was proven wrong."""
INCONCLUSIVE = "inconclusive"
"""Verdict: the target prevented part of the run (crash, time-out, bad output) and
nothing was proven wrong with what could run: neither a pass nor a failure."""
VERDICTS = (VIOLATION, NO_VIOLATION, INCONCLUSIVE)
EXIT_CODES = {NO_VIOLATION: 0, VIOLATION: 1, INCONCLUSIVE: 3}
"""Exit code of ``dpref audit`` / ``dpref conform`` per verdict (2 is bad input)."""


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


def _random_stream(T: int, domain: Domain, rng: np.random.Generator) -> FloatArray:
    lo, hi = float(domain.lower), float(domain.upper)
    if domain.integer:
        return rng.integers(int(lo), int(hi) + 1, T).astype(np.float64)
    return rng.uniform(lo, hi, T)


def standard_pairs(
    horizon: int, domain: Domain, rng: np.random.Generator, extra_positions: Sequence[int] = ()
) -> list[NeighbourPair]:
    """Flip the first, middle and last item of the all-low, all-high and a random stream.

    "Low" and "high" are the two values that realise the event-level sensitivity
    (:meth:`~dpref.domains.Domain.extremes`); a flip moves an item to the other one
    (for a random stream's item that is neither, to the farther one).
    ``extra_positions`` (0-based) adds items to flip — the audit adds the item a
    known plan charges most (``argmax_i Σ_n |a_{n,i}|Δ/b_n``).
    """
    T = horizon
    lo, hi = domain.extremes()
    bases = [
        (f"all-{_num(lo)}", np.full(T, lo)),
        (f"all-{_num(hi)}", np.full(T, hi)),
        ("random", _random_stream(T, domain, rng)),
    ]
    positions = sorted({0, (T - 1) // 2, T - 1, *(int(p) for p in extra_positions)})
    out: list[NeighbourPair] = []
    seen: set[tuple[tuple[float, ...], tuple[float, ...]]] = set()
    for label, base in bases:
        for pos in positions:
            x2 = base.copy()
            v = float(base[pos])
            x2[pos] = hi if abs(v - lo) <= abs(v - hi) else lo
            key = (tuple(base.tolist()), tuple(x2.tolist()))
            if key in seen or key[::-1] in seen:
                continue
            seen.add(key)
            where = {0: "first", T - 1: "last", (T - 1) // 2: "middle"}.get(pos, "most charged")
            out.append(
                NeighbourPair(
                    tuple(base.tolist()),
                    tuple(x2.tolist()),
                    f"{label} stream, {where} item (t={pos + 1}) set to {_num(float(x2[pos]))}",
                )
            )
    return out


def _check_pairs(pairs: Any, horizon: int, domain: Domain) -> list[NeighbourPair]:
    if not isinstance(pairs, list | tuple) or not pairs:
        raise DprefTypeError(f"pairs={fmt(pairs)}: must be a non-empty list of (x, x') pairs")
    out = []
    for k, pair in enumerate(pairs):
        if isinstance(pair, NeighbourPair):
            pair = (pair.x, pair.x_prime)
        if not isinstance(pair, list | tuple) or len(pair) != 2:
            raise DprefTypeError(f"pairs[{k}]={fmt(pair)}: must be a pair (x, x')")
        x = domain.check_stream(f"pairs[{k}][0]", pair[0])
        x2 = domain.check_stream(f"pairs[{k}][1]", pair[1])
        if x.size != horizon or x2.size != horizon:
            raise ParameterError(
                f"pairs[{k}]: streams of length {x.size} and {x2.size}, expected horizon={horizon}"
            )
        diff = np.flatnonzero(x != x2)
        if diff.size != 1:
            raise ParameterError(
                f"pairs[{k}]: event-level neighbours differ in exactly one item, these differ "
                f"in {diff.size}"
            )
        out.append(
            NeighbourPair(
                tuple(x.tolist()), tuple(x2.tolist()), f"given pair {k + 1} (t={diff[0] + 1})"
            )
        )
    return out


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

    def as_dict(self) -> dict[str, Any]:
        """JSON-friendly dict."""
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
class AuditReport:
    """The outcome of :func:`audit`."""

    target: str
    """The target's name."""
    claimed_epsilon: Fraction
    """The ε the target claims."""
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

    @property
    def verdict(self) -> str:
        """``violation`` (proven, whatever else happened), else ``inconclusive`` when the
        target kept a pair from being sampled or no event could be tested, else
        ``no-violation-found``."""
        if self.violation:
            return VIOLATION
        if self.epsilon_lower_bound is None or self.streams_failed:
            return INCONCLUSIVE
        return NO_VIOLATION

    @property
    def reason(self) -> str:
        """Why the verdict is what it is: what was established and what was not."""
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
        notes = "; ".join(sorted({f.kind for f in self.findings}))
        return f"{within}; an audit can refute a claim, never prove it" + (
            f" (findings that did not stop sampling: {notes})" if notes else ""
        )

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
        """The JSON report."""
        lb = self.epsilon_lower_bound
        return {
            "verdict": self.verdict,
            "reason": self.reason,
            "target": self.target,
            "claimed_epsilon": str(self.claimed_epsilon),
            "claimed_epsilon_float": float(self.claimed_epsilon),
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
        }

    def summary(self) -> str:
        """A human-readable report; the first line is the verdict."""
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
        lines.append(f"claimed     ε = {self.claimed_epsilon} ({float(self.claimed_epsilon):.6g})")
        if self.epsilon_lower_bound is None:
            lines.append("lower bound none (no neighbouring pair could be sampled)")
        else:
            lb = self.epsilon_lower_bound
            ratio = lb / float(self.claimed_epsilon) if math.isfinite(lb) else lb
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
        for f in self.findings:
            lines.append(f"FINDING     {f}")
        return "\n".join(lines)


def _stream_key(x: Sequence[float]) -> bytes:
    return np.asarray(x, dtype=np.float64).tobytes()


@dataclass(frozen=True)
class _Candidate:
    pair: int
    numerator_is_x: bool
    scored: Scored


def audit(
    target: Any,
    *,
    horizon: Any,
    epsilon: Any = None,
    samples: Any = 200_000,
    confidence: Any = 0.99,
    seed: Any = None,
    pairs: Any = None,
    domain: Domain | None = None,
    reference: Mechanism | None = None,
    events: str = "auto",
    exact: bool = True,
    selection_fraction: float = 0.2,
    timeout: float | None = 60.0,
    progress: bool = False,
) -> AuditReport:
    """Lower-bound the privacy loss of ``target`` on neighbouring streams of length T.

    Parameters
    ----------
    target
        A :class:`~dpref.mechanisms.Mechanism`, a callable ``f(stream, rng)`` or a
        ``"module:function"`` / ``"file.py:function"`` spec.
    horizon
        T, the stream length.
    epsilon
        The claimed ε (default: a built-in mechanism's declared ε).
    samples
        Samples per side for the reported pair: selection + test.
    confidence
        Probability that the reported lower bound is below the true loss.
    seed
        Makes the audit reproducible (NEP 19: int, Generator or None).
    pairs
        Neighbouring pairs ``[(x, x′), …]`` to audit instead of the standard family.
    domain
        Item domain (default: the mechanism's, else bits).
    reference
        A mechanism the target claims to be: enables the plan-aware event for a
        black-box target.
    events
        ``"auto"`` (both families), ``"blackbox"`` or ``"plan"``.
    exact
        Also compute the exact loss (built-in mechanisms, T ≤ 8).
    selection_fraction
        Share of ``samples`` used to choose events.
    timeout
        Longest a single target call may run (seconds).
    progress
        Show a tqdm progress bar on stderr (when installed and the run is long).
    """
    start = time.perf_counter()
    opts = _audit_options(
        target,
        horizon=horizon,
        epsilon=epsilon,
        samples=samples,
        confidence=confidence,
        domain=domain,
        reference=reference,
        events=events,
        selection_fraction=selection_fraction,
        timeout=timeout,
    )
    gen = seeded(seed)
    pair_list = _neighbour_pairs(opts, pairs, gen)
    families = _event_families(opts)
    split = _split(opts, families)
    streams = _distinct_streams(pair_list)
    bar = Progress(
        total=len(streams) * split.n_sel + 2 * split.n_test, enabled=progress, unit="samples"
    )
    selection = _sample_selection(opts.tgt, streams, split.n_sel, gen, bar)
    failed = len(streams) - len(selection)
    candidates = _select_events(pair_list, selection, families, split, gen)
    del selection
    chosen, family = _choose_pair(candidates, pair_list, families)
    results: list[EventResult] = []
    if chosen is not None:
        results = _test(opts.tgt, chosen, family, split.n_test, split.a_each, gen, bar)
        if not results and family:  # the target failed on the test split
            failed = max(failed, 1)
    bar.close()
    report = _audit_report(opts, split, pair_list, chosen, results, exact, seed, start)
    report.streams_failed, report.streams_total = failed, len(streams)
    return report


@dataclass(frozen=True)
class _Options:
    """The validated options of one :func:`audit` run."""

    tgt: Target
    T: int
    claimed: Fraction
    n_total: int
    conf: float
    events: str
    selection_fraction: float
    plan_source: Mechanism | None
    """``reference`` if given, else the built-in target's mechanism, else None."""
    domain: Domain


def _audit_options(
    target: Any,
    *,
    horizon: Any,
    epsilon: Any,
    samples: Any,
    confidence: Any,
    domain: Domain | None,
    reference: Mechanism | None,
    events: str,
    selection_fraction: float,
    timeout: float | None,
) -> _Options:
    """Check the arguments of :func:`audit` (in its order of errors) and fill in defaults."""
    tgt = as_target(target, timeout=timeout)
    T = check_positive_int("horizon", horizon)
    if epsilon is None:
        if tgt.mechanism is None:
            raise ParameterError("epsilon=None: give the ε a black-box target claims")
        claimed = tgt.mechanism.declared_epsilon
    else:
        claimed = check_epsilon("epsilon", epsilon)
    n_total = check_positive_int("samples", samples)
    if n_total < 200:
        raise ParameterError(f"samples={n_total}: must be >= 200")
    conf = float(confidence)
    if isinstance(confidence, bool) or not 0 < conf < 1:
        raise ParameterError(f"confidence={fmt(confidence)}: must be in (0, 1)")
    if events not in ("auto", "blackbox", "plan"):
        raise ParameterError(f"events={fmt(events)}: must be 'auto', 'blackbox' or 'plan'")
    if not 0 < float(selection_fraction) < 1:
        raise ParameterError(f"selection_fraction={fmt(selection_fraction)}: must be in (0, 1)")
    if reference is not None and not isinstance(reference, Mechanism):
        raise DprefTypeError(f"reference={fmt(reference)}: must be a dpref Mechanism")
    if tgt.mechanism is not None:
        tgt.mechanism_at(T)
    plan_source = reference if reference is not None else tgt.mechanism
    if events == "plan" and plan_source is None:
        raise ParameterError("events='plan' needs a built-in target or a reference mechanism")
    if events == "plan" and T > _PLAN_MAX_HORIZON:
        raise ParameterError(
            f"events='plan': the plan-aware event is built for T <= {_PLAN_MAX_HORIZON}, "
            f"not horizon={T}; use events='blackbox' or 'auto'"
        )
    if domain is None:
        domain = plan_source.domain if plan_source is not None else bits()
    if not isinstance(domain, Domain):
        raise DprefTypeError(f"domain={fmt(domain)}: must be a dpref Domain")
    return _Options(
        tgt, T, claimed, n_total, conf, events, float(selection_fraction), plan_source, domain
    )


def _neighbour_pairs(opts: _Options, pairs: Any, gen: np.random.Generator) -> list[NeighbourPair]:
    """The given pairs (checked), or the standard family plus the plan's most charged item."""
    T = opts.T
    extra: list[int] = []
    if opts.plan_source is not None:
        sums = opts.plan_source.plan(T).item_privacy_sums()
        extra.append(max(range(T), key=lambda i: sums[i]))
    if pairs is None:
        return standard_pairs(T, opts.domain, gen, extra)
    return _check_pairs(pairs, T, opts.domain)


@dataclass(frozen=True)
class _Families:
    """Which candidate-event families the audit builds."""

    use_bb: bool
    """Black-box half-line conjunctions."""
    plan: LinearPlan | None
    """The plan for the plan-aware event (None: no plan-aware event)."""
    inverse: FloatArray | None
    """The plan's recovery matrix (with ``plan``)."""


def _event_families(opts: _Options) -> _Families:
    """Black-box events unless ``events='plan'``; plan-aware ones when a plan is known, T ≤ 1024."""
    plan = (
        opts.plan_source.plan(opts.T)
        if opts.plan_source is not None and opts.events != "blackbox"
        else None
    )
    inverse = None
    if plan is not None:
        if opts.T <= _PLAN_MAX_HORIZON:
            inverse, _ = recovery_matrix(plan, used_nodes(plan))
        else:
            plan = None
    return _Families(opts.events != "plan", plan, inverse)


@dataclass(frozen=True)
class _Split:
    """Sample sizes of the selection and test splits, and the per-bound level."""

    fpairs: IntArray
    """The black-box features: output coordinates and their differences."""
    n_sel: int
    """Selection samples per stream."""
    n_test: int
    """Test samples per side of the chosen pair."""
    a_each: float
    """Level of each one-sided Clopper–Pearson bound (Bonferroni)."""
    z: float
    """The normal quantile at ``a_each``, for scoring candidates."""


def _split(opts: _Options, families: _Families) -> _Split:
    """Divide ``samples`` between selection and test; Bonferroni over 2 × the test events."""
    fpairs = feature_pairs(opts.T)
    n_total = opts.n_total
    n_sel = max(100, min(_MAX_SELECTION, round(n_total * opts.selection_fraction)))
    n_sel = min(n_sel, max(100, _FEATURE_BUDGET // max(1, fpairs.shape[0])))
    n_test = n_total - n_sel
    if n_test < 100:
        raise ParameterError(f"samples={n_total}: too few for a selection and a test split")
    k_test = int(families.use_bb) + int(families.plan is not None)
    alpha = 1.0 - opts.conf
    a_each = alpha / (2 * k_test)
    z = float(stats.norm.isf(a_each))
    return _Split(fpairs, n_sel, n_test, a_each, z)


def _distinct_streams(pair_list: list[NeighbourPair]) -> dict[bytes, FloatArray]:
    """Every stream of every pair, once, in order of first appearance."""
    streams: dict[bytes, FloatArray] = {}
    for p in pair_list:
        for xs in (p.x, p.x_prime):
            streams.setdefault(_stream_key(xs), np.asarray(xs, dtype=np.float64))
    return streams


def _sample_selection(
    tgt: Target,
    streams: dict[bytes, FloatArray],
    n_sel: int,
    gen: np.random.Generator,
    bar: Progress,
) -> dict[bytes, FloatArray]:
    """The selection split of every stream (streams the target fails on are left out)."""
    selection: dict[bytes, FloatArray] = {}
    for key, arr in streams.items():
        try:
            selection[key] = tgt.sample(arr, n_sel, gen, bar.update)
        except TargetFailure:
            continue
    return selection


def _select_events(
    pair_list: list[NeighbourPair],
    selection: dict[bytes, FloatArray],
    families: _Families,
    split: _Split,
    gen: np.random.Generator,
) -> list[_Candidate]:
    """Score candidate events on the selection split, for every pair and both orientations."""
    candidates: list[_Candidate] = []
    features: dict[bytes, FloatArray] = {}
    plan, fpairs = families.plan, split.fpairs
    for k, p in enumerate(pair_list):
        kx, kx2 = _stream_key(p.x), _stream_key(p.x_prime)
        if kx not in selection or kx2 not in selection:
            continue
        Y1, Y2 = selection[kx], selection[kx2]
        if families.use_bb:
            for key in (kx, kx2):
                if key not in features:
                    features[key] = compute_features(selection[key], fpairs)
            for numerator_is_x, bb in greedy_conjunctions(
                features[kx], features[kx2], fpairs, split.z, gen
            ):
                candidates.append(_Candidate(k, numerator_is_x, bb))
            # learned projections (fitted and thresholded on this selection split only)
            for numerator_is_x, pr in best_projections(Y1, Y2, split.z, split.n_test):
                candidates.append(_Candidate(k, numerator_is_x, pr))
        if plan is not None:
            x = np.asarray(p.x)
            x2 = np.asarray(p.x_prime)
            for numerator_is_x in (True, False):
                A_, B_ = (Y1, Y2) if numerator_is_x else (Y2, Y1)
                num, den = (x, x2) if numerator_is_x else (x2, x)
                rec = plan_recovery(plan, num, den, families.inverse)
                if rec is not None:
                    pl = best_llr_threshold(rec, A_, B_, split.z)
                    if pl is not None:
                        candidates.append(_Candidate(k, numerator_is_x, pl))
    return candidates


def _choose_pair(
    candidates: list[_Candidate], pair_list: list[NeighbourPair], families: _Families
) -> tuple[NeighbourPair | None, list[_Candidate]]:
    """The pair to test and its best candidate of each family (None: no candidates)."""
    if not candidates:
        return None, []
    # The pair: the best plan-aware candidate's when there is a plan (its score is
    # the more reliable), else the best black-box candidate's.
    lead = [c for c in candidates if isinstance(c.scored.event, LikelihoodRatioEvent)]
    top = max(lead or candidates, key=lambda c: c.scored.score)
    pair_idx = top.pair
    family: list[_Candidate] = []
    # One black-box slot: the better-scored of the conjunction and the projection (K unchanged).
    black_box: tuple[type, ...] = (ConjunctionEvent, ProjectionEvent)
    for kind in ((black_box,) if families.use_bb else ()) + (
        ((LikelihoodRatioEvent,),) if families.plan is not None else ()
    ):
        mine = [c for c in candidates if c.pair == pair_idx and isinstance(c.scored.event, kind)]
        if mine:
            family.append(max(mine, key=lambda c: c.scored.score))
    return pair_list[pair_idx], family


def _best_event(results: list[EventResult]) -> tuple[float | None, str]:
    """The largest lower bound over the test events and that event in words."""
    if not results:
        return None, ""
    best = max(results, key=lambda r: r.epsilon_lower_bound)
    other = "x′" if best.numerator == "x" else "x"
    event_text = (
        f"E = {{{best.description}}}: P[M({best.numerator}) ∈ E] ≥ "
        f"{best.p_numerator_low:.4g}, P[M({other}) ∈ E] ≤ {best.p_denominator_high:.4g}"
    )
    return best.epsilon_lower_bound, event_text


def _audit_report(
    opts: _Options,
    split: _Split,
    pair_list: list[NeighbourPair],
    chosen: NeighbourPair | None,
    results: list[EventResult],
    exact: bool,
    seed: Any,
    start: float,
) -> AuditReport:
    """The verdict against the claimed ε, the exact loss when asked for, and the report."""
    best_lb, event_text = _best_event(results)
    claimed = opts.claimed
    violation = (
        best_lb is not None and best_lb > 0 and (math.isinf(best_lb) or Fraction(best_lb) > claimed)
    )
    tgt, T = opts.tgt, opts.T
    exact_report = None
    if exact and tgt.mechanism is not None and T <= EXACT_MAX_HORIZON:
        exact_report = exact_loss(tgt.mechanism, T)
    return AuditReport(
        target=tgt.name,
        claimed_epsilon=claimed,
        horizon=T,
        confidence=opts.conf,
        epsilon_lower_bound=best_lb,
        violation=bool(violation),
        neighbours=chosen,
        event=event_text,
        events=results,
        samples=split.n_sel + split.n_test,
        selection_samples=split.n_sel,
        test_samples=split.n_test,
        pairs_screened=len(pair_list),
        seconds=time.perf_counter() - start,
        findings=list(tgt.findings),
        exact=exact_report,
        seed=seed if isinstance(seed, int | type(None)) else repr(seed),
    )


def _test(
    tgt: Target,
    pair: NeighbourPair,
    family: list[_Candidate],
    n_test: int,
    a_each: float,
    gen: np.random.Generator,
    bar: Progress,
) -> list[EventResult]:
    """Evaluate the chosen events on fresh samples of the pair (chunked)."""
    x = np.asarray(pair.x, dtype=np.float64)
    x2 = np.asarray(pair.x_prime, dtype=np.float64)
    counts = np.zeros((len(family), 2), dtype=np.int64)  # [event, x / x′]
    for side, s in enumerate((x, x2)):
        done = 0
        while done < n_test:
            k = min(_TEST_CHUNK, n_test - done)
            try:
                Y = tgt.sample(s, k, gen, bar.update)
            except TargetFailure:
                return []
            for e, cand in enumerate(family):
                counts[e, side] += int(np.count_nonzero(cand.scored.event.indicator(Y)))
            done += k
    out = []
    for e, cand in enumerate(family):
        cx, cx2 = int(counts[e, 0]), int(counts[e, 1])
        c_num, c_den = (cx, cx2) if cand.numerator_is_x else (cx2, cx)
        lo = cp_lower(c_num, n_test, a_each)
        hi = cp_upper(c_den, n_test, a_each)
        lb = math.log(lo) - math.log(hi) if lo > 0 else -math.inf
        est = (
            math.log(c_num / c_den)
            if c_num > 0 and c_den > 0
            else (math.inf if c_num > 0 else -math.inf)
        )
        out.append(
            EventResult(
                kind=cand.scored.event.kind,
                description=str(cand.scored.event),
                numerator="x" if cand.numerator_is_x else "x′",
                count_numerator=c_num,
                count_denominator=c_den,
                samples=n_test,
                p_numerator_low=lo,
                p_denominator_high=hi,
                epsilon_lower_bound=lb,
                epsilon_estimate=est,
                selection_score=cand.scored.score,
            )
        )
    return out


ProgressFn = Callable[[int], object]
