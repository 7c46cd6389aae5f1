"""Privacy-loss audit on event-level neighbouring streams (``dpref audit``).

For neighbouring streams ``x, x′`` (equal except at one step) and any event E, an
ε-DP mechanism satisfies ``P[M(x) ∈ E] ≤ e^ε P[M(x′) ∈ E]``.  The audit

1. builds neighbouring pairs of length T: the given ones, or a standard family that
   covers every position (:mod:`dpref.audit.pure.pairs`: the first, middle and last item
   of the all-low, all-high and a random stream, every other position on one base at
   T ≤ 16, a stated stratified random design above) and, when a plan is known, also
   the item the plan charges most;
2. draws a *selection* split of outputs on every stream and, for every pair and
   both orientations, chooses candidate events (:mod:`dpref.audit.pure.events`):
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
at T ≤ 8 the exact loss (:mod:`dpref.audit.pure.exact`) is reported beside the estimate.

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
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt
from scipy import stats

from dpref.audit.cluster import (
    CountShard,
    Executor,
    TargetRecipe,
    check_cluster,
    check_sendable,
    count_events,
    open_executor,
    remote_count,
    root_seed,
    shard_layout,
    shard_seed,
)
from dpref.audit.gaussian.gaussian_model import MAX_MODEL_HORIZON, GaussianModel
from dpref.audit.gaussian.gdp import Claim, read_events, resolve_claim
from dpref.audit.gaussian.gdp_events import (
    FeatureStatistic,
    GdpScored,
    most_exposed_item,
    pair_candidates,
)
from dpref.audit.isolation.bitlevel import BitChannels
from dpref.audit.isolation.targets import Target, TargetFailure, as_target, seeded
from dpref.audit.limits import MAX_HORIZON, MAX_SAMPLES, refuse_zcdp
from dpref.audit.pure.events import (
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
from dpref.audit.pure.exact import EXACT_MAX_HORIZON, exact_loss
from dpref.audit.pure.pairs import (
    COVER_SCREEN,
    check_pairs,
    cover_design,
    is_covering,
    side_generator,
    standard_pairs,
)
from dpref.audit.reports.audit_report import (
    EXIT_CODES,
    INCONCLUSIVE,
    NO_VIOLATION,
    VERDICTS,
    VIOLATION,
    AuditReport,
    EventResult,
    NeighbourPair,
)
from dpref.audit.reports.progress import Progress
from dpref.audit.stats import cp_lower, cp_upper, shave_down
from dpref.domains import Domain, bits
from dpref.errors import DprefTypeError, ParameterError
from dpref.mechanisms import Mechanism
from dpref.plan import LinearPlan
from dpref.validation import (
    check_choice,
    check_flag,
    check_int_range,
    check_probability_open,
    fmt,
)

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
_EXPOSED_MAX_HORIZON = 256
"""Largest T at which the approximate-DP view adds the item of largest model μ to the pairs
(T noiseless releases of the reference)."""
_PLAN_MAX_HORIZON = 1024
"""Largest T for the plan-aware event (its recovery matrix is dense, T × T)."""


def _stream_key(x: Sequence[float]) -> bytes:
    return np.asarray(x, dtype=np.float64).tobytes()


@dataclass(frozen=True)
class _Candidate:
    pair: int
    numerator_is_x: bool
    scored: Scored | GdpScored


def audit(
    target: Any,
    *,
    horizon: Any,
    epsilon: Any = None,
    privacy: Any = None,
    delta: Any = None,
    rho: Any = None,
    mu: Any = None,
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
    workers: Any = None,
    scheduler: Any = None,
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
        The claimed ε (default: a built-in mechanism's declared ε); with ``delta``, the ε
        of an (ε, δ) claim.
    privacy
        ``"pure"`` (ε-DP: the Laplace-loss audit), ``"gdp"`` (a μ-GDP or (ε, δ) claim) or
        ``"zcdp"`` (a ρ-zCDP claim); default ``"gdp"`` when ``rho``, ``mu`` or ``delta`` is
        given, else from a Gaussian built-in target or reference (``"gdp"`` for continuous
        Gaussian noise, ``"zcdp"`` for discrete Gaussian), else ``"pure"``
        (:func:`~dpref.audit.gaussian.gdp.resolve_claim`; docs/auditing.md §11).
    delta
        The δ of an (ε, δ) claim, in (0, 1) (with ``epsilon``; privacy ``"gdp"``).
    rho
        The claimed ρ: μ-GDP with μ² = 2ρ (``"gdp"``) or ρ-zCDP (``"zcdp"``); default a
        Gaussian built-in target's or reference's declared ρ.
    mu
        The claimed μ of μ-GDP (exact, > 0); under ``"zcdp"`` the claim ρ = μ²/2.
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
    workers
        Draw the test split on a local Dask cluster of this many worker processes
        (1 to :data:`~dpref.audit.limits.MAX_WORKERS`; needs ``dpref[cluster]``).
    scheduler
        Draw it on the existing Dask cluster at this address (``tcp://host:port``); at
        most one of ``workers`` and ``scheduler``.  Either way the report is the one the
        default, in-process run gives for the same seed and samples (the test split's
        shards and their seeds depend on the seed and ``samples`` only;
        :mod:`dpref.audit.cluster`).
    """
    start = time.perf_counter()
    cluster = check_cluster(workers, scheduler)
    exact = check_flag("exact", exact)
    opts = _audit_options(
        target,
        horizon=horizon,
        epsilon=epsilon,
        claim_args=(privacy, delta, rho, mu),
        samples=samples,
        confidence=confidence,
        domain=domain,
        reference=reference,
        events=events,
        selection_fraction=selection_fraction,
        timeout=timeout,
    )
    check_sendable(opts.tgt, cluster)
    gen = seeded(seed)
    pair_list = _neighbour_pairs(opts, pairs, gen)
    families = _event_families(opts)
    split = _split(opts, families)
    streams = _distinct_streams(pair_list)
    with open_executor(cluster) as executor:  # started once every option is valid
        bar = Progress(
            total=len(streams) * split.n_sel + 2 * split.n_test, enabled=progress, unit="samples"
        )
        covering = _covering_only(pair_list)
        selection = _sample_selection(opts.tgt, streams, split.n_sel, gen, bar, covering)
        failed = len(streams) - len(selection)
        if opts.claim.privacy == "pure":
            candidates = _select_events(pair_list, selection, families, split, gen)
        else:
            candidates = _select_gdp_events(pair_list, selection, families, split, opts.claim)
        del selection
        chosen, family = _choose_pair(candidates, pair_list, families)
        root = root_seed(gen)
        results: list[EventResult] = []
        if chosen is not None:
            results = _test(opts.tgt, chosen, family, split, root, executor, bar)
            if not results and family:  # the target failed on the test split
                failed = max(failed, 1)
        bar.close()
    report = _audit_report(opts, split, pair_list, chosen, results, exact, seed, start)
    report.streams_failed, report.streams_total = failed, len(streams)
    report.pairs_design = (
        cover_design(opts.T) if pairs is None else f"{len(pair_list)} given pair(s)"
    )
    return report


@dataclass(frozen=True)
class _Options:
    """The validated options of one :func:`audit` run."""

    tgt: Target
    T: int
    claimed: Fraction | None
    """The claimed ε of a pure claim (None in the approximate-DP view)."""
    claim: Claim
    """The claim tested (its privacy kind and exact parameters)."""
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
    claim_args: tuple[Any, Any, Any, Any],
    samples: Any,
    confidence: Any,
    domain: Domain | None,
    reference: Mechanism | None,
    events: str,
    selection_fraction: float,
    timeout: float | None,
) -> _Options:
    """Check the arguments of :func:`audit` and fill in defaults: the sizes and choices
    first (within :mod:`dpref.audit.limits`), then the target (a spec is loaded in a
    worker only once everything else is known to be valid)."""
    T = check_int_range("horizon", horizon, 1, MAX_HORIZON)
    n_total = check_int_range("samples", samples, 200, MAX_SAMPLES)
    conf = float(check_probability_open("confidence", confidence))
    events = check_choice("events", events, ("auto", "blackbox", "plan"))
    fraction = float(check_probability_open("selection_fraction", selection_fraction))
    if reference is not None and not isinstance(reference, Mechanism):
        raise DprefTypeError(f"reference={fmt(reference)}: must be a dpref Mechanism")
    if domain is not None and not isinstance(domain, Domain):
        raise DprefTypeError(f"domain={fmt(domain)}: must be a dpref Domain")
    target_mech = (
        target.mechanism
        if isinstance(target, Target)
        else target
        if isinstance(target, Mechanism)
        else None
    )
    privacy, delta, rho, mu = claim_args
    claim = resolve_claim(
        privacy=privacy,
        epsilon=epsilon,
        delta=delta,
        rho=rho,
        mu=mu,
        target_mechanism=target_mech,
        reference=reference,
    )
    if claim.privacy == "pure":
        refuse_zcdp("reference", reference)
        refuse_zcdp("target", target_mech)
    tgt = as_target(target, timeout=timeout)
    claimed: Fraction | None = None
    if claim.privacy == "pure":
        if claim.epsilon is None:
            if tgt.mechanism is None:
                raise ParameterError("epsilon=None: give the ε a black-box target claims")
            claimed = tgt.mechanism.declared_epsilon
        else:
            claimed = claim.epsilon
    if tgt.mechanism is not None:
        tgt.mechanism_at(T)
    plan_source = reference if reference is not None else tgt.mechanism
    if events == "plan" and plan_source is None:
        raise ParameterError("events='plan' needs a built-in target or a reference mechanism")
    if events == "plan" and claim.privacy != "pure" and not (plan_source and plan_source.gaussian):
        raise ParameterError(
            f"events='plan': the plan-aware event of privacy={claim.privacy!r} needs a Gaussian "
            f"built-in target or reference, not {plan_source!r}"
        )
    if events == "plan" and T > _PLAN_MAX_HORIZON:
        raise ParameterError(
            f"events='plan': the plan-aware event is built for T <= {_PLAN_MAX_HORIZON}, "
            f"not horizon={T}; use events='blackbox' or 'auto'"
        )
    if domain is None:
        domain = plan_source.domain if plan_source is not None else bits()
    return _Options(tgt, T, claimed, claim, n_total, conf, events, fraction, plan_source, domain)


def _neighbour_pairs(opts: _Options, pairs: Any, gen: np.random.Generator) -> list[NeighbourPair]:
    """The given pairs (checked), or the standard family plus the plan's most charged item."""
    T = opts.T
    extra: list[int] = []
    src = opts.plan_source
    if src is not None:
        sums = src.plan(T).item_privacy_sums()
        extra.append(max(range(T), key=lambda i: sums[i]))
        if opts.claim.privacy != "pure" and src.gaussian and T <= _EXPOSED_MAX_HORIZON:
            lo, hi = opts.domain.extremes()
            extra.append(most_exposed_item(GaussianModel.of(src, T), float(lo), float(hi)))
    if pairs is None:
        return standard_pairs(T, opts.domain, gen, extra)
    return check_pairs(pairs, T, opts.domain)


@dataclass(frozen=True)
class _Families:
    """Which candidate-event families the audit builds."""

    use_bb: bool
    """Black-box half-line conjunctions."""
    plan: LinearPlan | None
    """The plan for the plan-aware event (None: no plan-aware event)."""
    inverse: FloatArray | None
    """The plan's recovery matrix (with ``plan``)."""
    model: GaussianModel | None = None
    """The Gaussian output model for the approximate-DP view's plan-aware event."""


def _event_families(opts: _Options) -> _Families:
    """Black-box events unless ``events='plan'``; plan-aware ones when a plan is known, T ≤ 1024
    (in the approximate-DP view: a Gaussian plan's :class:`GaussianModel`)."""
    if opts.claim.privacy != "pure":
        src = opts.plan_source
        model = None
        if (
            src is not None
            and src.gaussian
            and opts.events != "blackbox"
            and opts.T <= MAX_MODEL_HORIZON
        ):
            model = GaussianModel.of(src, opts.T)
        return _Families(opts.events != "plan", None, None, model)
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
    k_test = int(families.use_bb) + int(families.plan is not None or families.model is not None)
    alpha = 1.0 - opts.conf
    a_each = alpha / (2 * k_test)
    z = float(stats.norm.isf(a_each))
    return _Split(fpairs, n_sel, n_test, a_each, z)


def _distinct_streams(pair_list: list[NeighbourPair]) -> dict[bytes, FloatArray]:
    """Every stream of every pair, once, in order of first appearance (the anchor pairs'
    streams first, then the streams only the covering pairs use)."""
    streams: dict[bytes, FloatArray] = {}
    for p in sorted(pair_list, key=is_covering):
        for xs in (p.x, p.x_prime):
            streams.setdefault(_stream_key(xs), np.asarray(xs, dtype=np.float64))
    return streams


def _covering_only(pair_list: list[NeighbourPair]) -> set[bytes]:
    """The streams only covering pairs use (:func:`~dpref.audit.pure.pairs.is_covering`)."""
    anchored = {_stream_key(xs) for p in pair_list if not is_covering(p) for xs in (p.x, p.x_prime)}
    return {_stream_key(p.x_prime) for p in pair_list if is_covering(p)} - anchored


def _sample_selection(
    tgt: Target,
    streams: dict[bytes, FloatArray],
    n_sel: int,
    gen: np.random.Generator,
    bar: Progress,
    covering: AbstractSet[bytes] = frozenset(),
) -> dict[bytes, FloatArray]:
    """The selection split of every stream (streams the target fails on are left out).

    The streams only covering pairs use are drawn from
    :func:`~dpref.audit.pure.pairs.side_generator`
    (a far-jumped copy of ``gen``), so ``gen`` ends where the anchor pairs alone leave it and
    everything drawn after the selection (events, the test split's root) is the same as
    without the covering pairs.  Every stream's outputs go through
    :class:`~dpref.audit.isolation.bitlevel.BitChannels` (signed zeros, NaN payloads)."""
    selection: dict[bytes, FloatArray] = {}
    bits = BitChannels()
    side = side_generator(gen) if covering else gen
    for key, arr in streams.items():
        try:
            if key in covering:  # a screen: fewer selection samples (COVER_SCREEN)
                selection[key] = tgt.sample(arr, max(100, n_sel // COVER_SCREEN), side, bar.update)
            else:
                selection[key] = tgt.sample(arr, n_sel, gen, bar.update)
        except TargetFailure:
            continue
        bits.add(selection[key])
    for finding in bits.findings(next(iter(streams.values())).size if streams else None):
        tgt.record(finding)
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
    side: np.random.Generator | None = None  # the covering pairs' (leaves gen as without them)
    for k, p in enumerate(pair_list):
        kx, kx2 = _stream_key(p.x), _stream_key(p.x_prime)
        if kx not in selection or kx2 not in selection:
            continue
        Y1, Y2 = selection[kx], selection[kx2]
        n = min(Y1.shape[0], Y2.shape[0])  # a covering stream is screened on fewer samples
        Y1, Y2 = Y1[:n], Y2[:n]
        if families.use_bb:
            for key in (kx, kx2):
                if key not in features:
                    features[key] = compute_features(selection[key], fpairs)
            if is_covering(p) and side is None:
                side = side_generator(gen)
            for numerator_is_x, bb in greedy_conjunctions(
                features[kx][:n],
                features[kx2][:n],
                fpairs,
                split.z,
                side if side is not None and is_covering(p) else gen,
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


def _select_gdp_events(
    pair_list: list[NeighbourPair],
    selection: dict[bytes, FloatArray],
    families: _Families,
    split: _Split,
    claim: Claim,
) -> list[_Candidate]:
    """The approximate-DP view's candidates (:mod:`dpref.audit.gaussian.gdp_events`): for
    every pair, the best black-box half-line (features and learned projections) and the best
    half-line of the plan-aware projection, thresholds scored for the claim at the test size."""
    candidates: list[_Candidate] = []
    features = [FeatureStatistic(int(i), int(j)) for i, j in split.fpairs]
    model = families.model
    model_name = "" if model is None else repr(model.mechanism)
    for k, p in enumerate(pair_list):
        kx, kx2 = _stream_key(p.x), _stream_key(p.x_prime)
        if kx not in selection or kx2 not in selection:
            continue
        Y1, Y2 = selection[kx], selection[kx2]
        n = min(Y1.shape[0], Y2.shape[0])  # a covering stream is screened on fewer samples
        Y1, Y2 = Y1[:n], Y2[:n]
        shift = None if model is None else model.shift(p.x, p.x_prime)
        for x_num, sc in pair_candidates(
            Y1, Y2, features if families.use_bb else None, shift, model_name, split.n_test,
            split.z, claim
        ):  # fmt: skip
            candidates.append(_Candidate(k, x_num, sc))
    return candidates


def _choose_pair(
    candidates: list[_Candidate], pair_list: list[NeighbourPair], families: _Families
) -> tuple[NeighbourPair | None, list[_Candidate]]:
    """The pair to test and its best candidate of each family (None: no candidates)."""
    if not candidates:
        return None, []
    # The pair: the best plan-aware candidate's when there is a plan (its score is
    # the more reliable), else the best black-box candidate's.
    lead = [c for c in candidates if c.scored.event.kind == "plan-aware"]
    top = max(lead or candidates, key=lambda c: c.scored.score)
    pair_idx = top.pair
    family: list[_Candidate] = []
    # One black-box slot: the better-scored of the conjunction and the projection (K unchanged).
    has_plan = families.plan is not None or families.model is not None
    for kind in (("black-box",) if families.use_bb else ()) + (("plan-aware",) if has_plan else ()):
        mine = [c for c in candidates if c.pair == pair_idx and c.scored.event.kind == kind]
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
    if opts.claim.privacy != "pure":
        return _gdp_report(opts, split, pair_list, chosen, results, seed, start)
    best_lb, event_text = _best_event(results)
    claimed = opts.claimed
    assert claimed is not None
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
        isolation=tgt.isolation,
        exact=exact_report,
        seed=seed if isinstance(seed, int | type(None)) else repr(seed),
    )


def _gdp_report(
    opts: _Options,
    split: _Split,
    pair_list: list[NeighbourPair],
    chosen: NeighbourPair | None,
    results: list[EventResult],
    seed: Any,
    start: float,
) -> AuditReport:
    """The approximate-DP report: each tested event read as a μ, a ρ and an (ε, δ) bound
    (:mod:`dpref.audit.gaussian.gdp`), the verdict for the claim, and the model's exact μ."""
    claim = opts.claim
    reading = read_events(claim, results)
    model_mu = None
    src = opts.plan_source
    if chosen is not None and src is not None and src.gaussian and opts.T <= MAX_MODEL_HORIZON:
        model_mu = GaussianModel.of(src, opts.T).shift(chosen.x, chosen.x_prime).mu
    tgt = opts.tgt
    return AuditReport(
        target=tgt.name,
        claimed_epsilon=claim.epsilon,
        horizon=opts.T,
        confidence=opts.conf,
        epsilon_lower_bound=_best_event(reading.results)[0],
        violation=reading.violation,
        neighbours=chosen,
        event=reading.event_text,
        events=reading.results,
        samples=split.n_sel + split.n_test,
        selection_samples=split.n_sel,
        test_samples=split.n_test,
        pairs_screened=len(pair_list),
        seconds=time.perf_counter() - start,
        findings=list(tgt.findings),
        isolation=tgt.isolation,
        seed=seed if isinstance(seed, int | type(None)) else repr(seed),
        privacy=claim.privacy,
        claim_kind=claim.kind,
        mu_lower_bound=reading.mu_lower_bound,
        zcdp_rho_lower_bound=reading.zcdp_rho_lower_bound,
        claimed_mu2=claim.mu2,
        claimed_rho=claim.rho,
        claimed_delta=claim.delta,
        mu_star=reading.mu_star,
        epsilon_delta=reading.epsilon_delta,
        model_mu=model_mu,
    )


def _test(
    tgt: Target,
    pair: NeighbourPair,
    family: list[_Candidate],
    split: _Split,
    root: np.random.SeedSequence,
    executor: Executor,
    bar: Progress,
) -> list[EventResult]:
    """Count the chosen events on fresh samples of the pair, shard by shard.

    Side ``s`` (0: x, 1: x′) is cut into :func:`~dpref.audit.cluster.shard_layout` shards,
    shard ``i`` drawn from :func:`~dpref.audit.cluster.shard_seed` ``(root, s, i)``; the
    counts are summed and the findings merged in shard order, and the first shard the
    target failed on ends the test (no result), wherever the shards ran.
    """
    n_test, a_each = split.n_test, split.a_each
    sides = (np.asarray(pair.x, dtype=np.float64), np.asarray(pair.x_prime, dtype=np.float64))
    events = [cand.scored.event for cand in family]
    layout = shard_layout(n_test)
    tasks = [
        (sides[side], shard_seed(root, side, i), size)
        for side in (0, 1)
        for i, size in enumerate(layout)
    ]

    def local(k: int) -> CountShard:
        stream, seed, size = tasks[k]
        return count_events(tgt, stream, events, seed, size, bar.update)

    counts = np.zeros((len(family), 2), dtype=np.int64)  # [event, x / x′]
    shared = (TargetRecipe.of(tgt), events)
    for k, summary in enumerate(executor.results(local, remote_count, shared, tasks)):
        shard: CountShard = summary
        if not executor.sequential:  # the live target recorded them itself
            for f in shard.findings:
                tgt.record(f)
            bar.update(shard.samples)
        if shard.failure is not None:
            return []
        counts[:, k // len(layout)] += shard.counts
    out = []
    for e, cand in enumerate(family):
        cx, cx2 = int(counts[e, 0]), int(counts[e, 1])
        c_num, c_den = (cx, cx2) if cand.numerator_is_x else (cx2, cx)
        lo = cp_lower(c_num, n_test, a_each)
        hi = cp_upper(c_den, n_test, a_each)
        lb = shave_down(math.log(lo) - math.log(hi)) if lo > 0 else -math.inf
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
