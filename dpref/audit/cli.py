"""``dpref audit`` and ``dpref conform``: audit another implementation from the shell.

``TARGET`` is a built-in mechanism name (``binary``, ``simple1``, …, built with the
mechanism flags) or a black-box callable ``package.module:function`` /
``path/to/file.py:function`` with signature ``f(stream, rng) -> len(stream) floats``.

Exit codes follow the report's verdict: 0 — ``no-violation-found`` and no finding
(conform: ``conforms``); 1 — ``violation`` (a privacy violation established) or, in
conform, ``does-not-conform``; 3 — ``inconclusive`` (nothing was proven wrong,
and a finding — NaN, a crash, a time-out, a fork, a signed zero — or an uncomputable
exact loss keeps it from being a pass); 2 — usage or input error.

Options never collide silently: every option given must be used by the run.  A
mechanism flag (``--window``, ``--delta``, ``--alpha``, …) configures the built-in
target and/or ``--reference``; given when neither exists (a black-box target without
``--reference``) it is an error, as are ``--noise`` there, ``--no-exact`` for a black
box, ``--epsilon`` / ``--runs`` / ``--false-alarm`` in a reference-free ``conform`` of a
black box (``--runs`` / ``--false-alarm`` in any reference-free ``conform``).  Options
of the other subcommand are not recognised, and abbreviations are not accepted.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from typing import TYPE_CHECKING, Any

from dpref.audit.injected.rounding import add_precision_argument, check_precision_unused
from dpref.audit.limits import (
    CONNECT_TIMEOUT,
    MAX_HORIZON,
    MAX_RUNS,
    MAX_SAMPLES,
    MAX_TIMEOUT,
    MAX_WORKERS,
)
from dpref.audit.reports.deadline import finish, stoppable, watch
from dpref.audit.sweep import GRID, RANDOM_HORIZONS
from dpref.cli.common import (
    add_mechanism_args,
    check_target,
    mechanism_from_args,
    parse_domain,
)
from dpref.cli.plan_reference import add_reference_flags, input_notes, plan_reference
from dpref.domains import Domain
from dpref.errors import DprefError, ParameterError
from dpref.mechanisms import Mechanism
from dpref.registry import MECHANISM_PARAMS, mechanism_names, parameter_flags
from dpref.validation import check_fraction, fmt

if TYPE_CHECKING:
    from dpref.audit.isolation.targets import Target

# The audit machinery (scipy.stats) is imported by the commands when they run, not
# when `dpref --help` builds the parser.

__all__ = ["EXIT_INCONCLUSIVE", "add_parser", "run", "run_audit", "run_conform"]

EXIT_INCONCLUSIVE = 3
"""Exit code of an inconclusive audit or conformance run (0 pass, 1 violation, 2 bad input)."""

_PROTOCOLS = ("rng", "callback")
"""The noise protocols of ``--exact`` (:data:`dpref.audit.isolation.recording.PROTOCOLS`; a test
keeps the two equal without importing the audit machinery here)."""

_EXIT_EPILOG = (
    "exit status: 0 no violation and no finding (conform: conforms); 1 a violation proven "
    "(conform: does-not-conform, or a violation established); 3 inconclusive — nothing "
    "proven, and something (a finding such as NaN, a crash, a time-out, a fork, a signed "
    "zero; an uncomputable exact loss) keeps it from being a pass; 2 usage or input error "
    "(docs/auditing.md §5)"
)

_FLAG_DEFAULTS = {"noise": None, "domain": "bits", "neighbours": "replace"}
"""Shared flags whose default is filled in after checking whether they were given."""
_AUDIT_DEFAULTS = {"samples": 200_000, "confidence": 0.99, "events": "auto"}
"""``dpref audit``'s sampling flags, filled in likewise (``--exact`` uses none of them)."""


_RANGES: dict[str, tuple[float, float]] = {
    "samples": (200, MAX_SAMPLES),
    "runs": (20, MAX_RUNS),
    "horizon": (1, MAX_HORIZON),
}


def _check_ranges(args: argparse.Namespace) -> None:
    """Bound the size options to their documented ranges before anything runs, so an
    absurd value is an error naming its flag rather than a hang or an allocation failure
    after the target has been called."""
    for name, (lo, hi) in _RANGES.items():
        value = getattr(args, name, None)
        if value is not None and value > hi:  # below lo: the library says why
            raise ParameterError(f"{_flag(name)}={value}: must be in [{lo:,}, {hi:,}]")
    if args.epsilon is not None:
        try:
            # check_fraction bounds the string first: Fraction("1e999999999") hangs
            float(check_fraction("epsilon", str(args.epsilon)))
        except OverflowError:  # the audit's bound and its report are floats
            raise ParameterError(f"--epsilon={args.epsilon}: too large for a float") from None
        except DprefError:
            pass  # not a number: the mechanism or the audit says why, naming epsilon
    t = args.timeout
    if not (math.isfinite(t) and 0 < t <= MAX_TIMEOUT):
        raise ParameterError(f"--timeout={t:g}: must be > 0 and at most {MAX_TIMEOUT:,.0f} seconds")


def _mechanism_named(args: argparse.Namespace, name: str) -> Mechanism:
    ns = argparse.Namespace(**vars(args))
    ns.mechanism = name
    mech: Mechanism = mechanism_from_args(ns, horizon=args.horizon)
    return mech


def _target(args: argparse.Namespace) -> Target:
    from dpref.audit.isolation.targets import as_target

    spec = args.target
    if spec in mechanism_names():
        return as_target(_mechanism_named(args, spec), timeout=args.timeout)
    check_target(spec)
    return as_target(spec, timeout=args.timeout)


def _flag(param: str) -> str:
    return f"--{param.replace('_', '-')}"


def _unused_mechanism_flags(args: argparse.Namespace, why: str) -> None:
    """Raise for any mechanism flag (or ``--noise``) given when no mechanism is built."""
    for param in parameter_flags():
        value = getattr(args, param, None)
        if value is not None:
            takers = ", ".join(n for n, ps in MECHANISM_PARAMS.items() if param in ps)
            hint = _HINTS.get(param, "")
            raise ParameterError(
                f"{_flag(param)}={value}: a parameter of the mechanism(s) {takers}, but "
                f"{why}, so it would be ignored{hint}"
            )
    if args.noise is not None:
        raise ParameterError(f"--noise={args.noise}: {why}, so it would be ignored")


_HINTS = {
    "delta": " (the δ of an (ε, δ) claim is --delta with --epsilon in dpref audit)",
    "alpha": " (the false-alarm rate of conform is --false-alarm)",
}

_FOREIGN = {
    "audit": {"--runs": "conform", "--false-alarm": "conform"},
    "conform": {
        "--samples": "audit",
        "--confidence": "audit (conform: --false-alarm)",
        "--pair": "audit",
        "--events": "audit",
        "--no-exact": "audit",
    },
}
"""Options of the other subcommand: recognised only to say where they belong."""


def _add_foreign(p: argparse.ArgumentParser, command: str) -> None:
    for opt in _FOREIGN[command]:
        p.add_argument(
            opt,
            dest=f"foreign_{opt[2:].replace('-', '_')}",
            nargs="?",
            const=True,
            default=None,
            help=argparse.SUPPRESS,
        )


def _check_foreign(args: argparse.Namespace, command: str) -> None:
    for opt, home in _FOREIGN[command].items():
        if getattr(args, f"foreign_{opt[2:].replace('-', '_')}", None) is not None:
            raise ParameterError(f"{opt}: an option of dpref {home}, not of dpref {command}")


def _fill_defaults(args: argparse.Namespace) -> None:
    for name, value in _FLAG_DEFAULTS.items():
        if getattr(args, name) is None:
            setattr(args, name, value)


def _check_audit_options(args: argparse.Namespace) -> None:
    """Every option given to ``dpref audit`` must be used by this run."""
    _check_foreign(args, "audit")
    check_target(args.target)  # a mistyped name is not a black box
    check_precision_unused(args)  # --precision: --exact only (dpref/audit/injected/rounding.py)
    blackbox = args.target not in mechanism_names()
    if args.protocol is not None:
        raise ParameterError(
            f"--protocol={args.protocol}: used only by --exact (the sampled audit calls "
            "f(stream, rng) with a numpy Generator)"
        )
    if blackbox and args.reference is None:
        _unused_mechanism_flags(args, "the target is a black box and no --reference is given")
    if blackbox and args.no_exact:
        raise ParameterError(
            "--no-exact: the exact loss is only computed for built-in targets, not a black box"
        )
    _fill_defaults(args)
    for name, value in _AUDIT_DEFAULTS.items():
        if getattr(args, name) is None:
            setattr(args, name, value)


def _takes_delta(args: argparse.Namespace) -> bool:
    """Whether ``--delta`` is a mechanism flag in this run (an ``allwindow`` target or
    reference); otherwise it is the δ of an (ε, δ) claim."""
    return any(
        name is not None and "delta" in MECHANISM_PARAMS.get(name, ())
        for name in (args.target, args.reference)
    )


def _check_claim_options(args: argparse.Namespace) -> Any:
    """The claim flags of ``dpref audit`` (not ``--exact``): ``--privacy``, ``--epsilon``,
    ``--rho``, ``--mu``, ``--delta``.  Returns the claim's δ (None: no (ε, δ) claim) and
    clears ``args.delta`` when it is one, so that no mechanism is built with it.

    ``--delta`` is the mechanism's for an ``allwindow`` target or reference (there an
    (ε, δ) claim cannot be given), else the δ of an (ε, δ) claim with ``--epsilon``.  A
    built-in target or ``--reference`` is built from ``--epsilon`` or ``--rho`` (as
    ``dpref release``) and claims its declaration; ``--mu`` (or ``--delta``) replaces it.
    """
    from dpref.validation import check_fraction, check_probability_open

    eps, rho, mu, privacy = args.epsilon, args.rho, args.mu, args.privacy
    if rho is not None and eps is not None:
        raise ParameterError(
            f"--rho={rho}, --epsilon={eps}: give one of them (ρ: a zCDP/GDP claim or a "
            "Gaussian mechanism; ε: a pure claim or a Laplace mechanism)"
        )
    if mu is not None and rho is not None:
        raise ParameterError(f"--mu={mu}, --rho={rho}: give one claim, μ or ρ (μ² = 2ρ)")
    builds = args.target in mechanism_names() or args.reference is not None
    if mu is not None and eps is not None and not builds:
        raise ParameterError(f"--mu={mu}, --epsilon={eps}: give one claim, μ or ε")
    if privacy == "pure":
        for flag, value in (("--rho", rho), ("--mu", mu)):
            if value is not None:
                raise ParameterError(
                    f"{flag}={value}: --privacy pure audits a pure ε claim of a Laplace "
                    "mechanism; use --privacy gdp or zcdp"
                )
    if mu is not None:
        try:
            m = check_fraction("--mu", str(mu))
        except DprefError as exc:
            raise ParameterError(str(exc)) from None
        if not 0 < m <= 1024:
            raise ParameterError(f"--mu={mu}: must be > 0 and at most 1024")
    if _takes_delta(args):
        if privacy in ("gdp", "zcdp") and eps is not None and mu is None:
            raise ParameterError(
                f"--privacy {privacy} --epsilon {eps}: --delta is the allwindow mechanism's "
                "parameter here, so an (ε, δ) claim cannot be given; claim --mu or use "
                "--privacy pure"
            )
        return None
    delta = args.delta
    if delta is None:
        return None
    if eps is None:
        raise ParameterError(f"--delta={delta}: an (ε, δ) claim needs --epsilon as well")
    if privacy == "pure" or mu is not None:
        other = "--privacy pure" if privacy == "pure" else f"--mu={mu}"
        raise ParameterError(f"--delta={delta}, {other}: an (ε, δ) claim is --privacy gdp")
    check_probability_open("--delta", str(delta))
    args.delta = None
    return str(delta)


def _check_exact_options(args: argparse.Namespace) -> None:
    """Every option given to ``dpref audit --exact`` must be used by it: it samples
    nothing and builds no reference."""
    _check_foreign(args, "audit")
    check_target(args.target)  # a mistyped name is not a black box
    for name in ("samples", "confidence", "pair", "events", "reference", "workers", "scheduler"):
        if getattr(args, name, None) is not None:
            raise ParameterError(
                f"{_flag(name)}={getattr(args, name)}: not used by --exact (the exact audit "
                "scripts the target's noise; it samples nothing and needs no reference)"
            )
    if args.no_exact:
        raise ParameterError("--no-exact: contradicts --exact")
    claims = [
        (flag, value)
        for flag, value in (("--epsilon", args.epsilon), ("--rho", args.rho), ("--mu", args.mu))
        if value is not None
    ]
    if len(claims) > 1:
        (f1, v1), (f2, v2) = claims[0], claims[1]
        raise ParameterError(
            f"{f1}={v1}, {f2}={v2}: give one claim — --epsilon (pure ε-DP), --rho (ρ-zCDP) "
            "or --mu (μ-GDP)"
        )
    if args.target not in mechanism_names():
        _unused_mechanism_flags(args, "the target is a black box (--exact scripts its own draws)")
    elif args.protocol is not None:
        raise ParameterError(
            f"--protocol={args.protocol}: a built-in target is called in dpref's process "
            "with its own noise; --protocol is for a black-box target"
        )
    elif args.mu is not None:
        raise ParameterError(
            f"--mu={args.mu}: a built-in target is built from its budget, --epsilon or --rho, "
            "which is also the claim (a Gaussian built-in claims ρ: give --rho)"
        )
    _fill_defaults(args)


def _check_conform_options(args: argparse.Namespace) -> None:
    """Every option given to ``dpref conform`` must be used by this run; the budget is
    exactly one of ``--epsilon`` (Laplace reference) and ``--rho`` (Gaussian reference)."""
    _check_foreign(args, "conform")
    check_target(args.target)  # a mistyped name is not a black box
    blackbox = args.target not in mechanism_names()
    if args.epsilon is not None and args.rho is not None:
        raise ParameterError(
            f"--rho={args.rho}: give one of --epsilon (pure ε-DP, Laplace noise) and --rho "
            f"(ρ-zCDP, Gaussian noise), not both (--epsilon={args.epsilon})"
        )
    if args.reference is None:
        for name, value in (
            ("runs", args.runs),
            ("false_alarm", args.false_alarm),
            ("workers", args.workers),
            ("scheduler", args.scheduler),
        ):
            if value is not None:
                raise ParameterError(
                    f"{_flag(name)}={value}: applies only with --reference (the "
                    "reference-free checks are deterministic)"
                )
        if blackbox:
            why = "the target is a black box and no --reference is given (reference-free checks)"
            _unused_mechanism_flags(args, why)
            if args.epsilon is not None:
                raise ParameterError(
                    f"--epsilon={args.epsilon}: {why}: no ε is tested; give --reference to test one"
                )
            if args.rho is not None:
                raise ParameterError(
                    f"--rho={args.rho}: {why}: no ρ is tested; give --reference to test one"
                )
    named = args.reference is not None and args.reference in mechanism_names()
    if args.epsilon is None and args.rho is None and (named or not blackbox):
        what = "the reference's" if args.reference is not None else "the built-in target's"
        raise ParameterError(
            f"epsilon=None: give --epsilon ({what} ε) or --rho ({what} ρ, Gaussian noise)"
        )
    _fill_defaults(args)


def _check_cluster_flags(args: argparse.Namespace) -> None:
    """``--workers`` / ``--scheduler``: valid, not both, Dask installed — before the target
    is loaded or anything is sampled."""
    from dpref.audit.cluster import check_cluster, option_names

    with option_names("--workers", "--scheduler"):
        check_cluster(args.workers, args.scheduler)


def _flag_names() -> Any:
    """Errors about ``workers`` / ``scheduler`` raised inside the run name the flags."""
    from dpref.audit.cluster import option_names

    return option_names("--workers", "--scheduler")


def _need_horizon(args: argparse.Namespace) -> int:
    if args.horizon is None:
        raise ParameterError("horizon=None: give --horizon T")
    h: int = args.horizon
    return h


def _parse_pair(text: str) -> tuple[list[float], list[float]]:
    left, sep, right = text.partition("/")
    if not sep:
        raise ParameterError(f"pair={fmt(text)}: expected X/X' such as 0,1,0,0/1,1,0,0")
    try:
        return (
            [float(v) for v in left.split(",") if v.strip()],
            [float(v) for v in right.split(",") if v.strip()],
        )
    except ValueError:
        raise ParameterError(f"pair={fmt(text)}: not comma-separated numbers") from None


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "target",
        help="a mechanism name (" + ", ".join(mechanism_names()) + ") or module:function / "
        "path/to/file.py:function, a callable f(stream, rng) -> len(stream) floats",
    )
    add_mechanism_args(p, with_name=False)
    p.add_argument("--seed", type=int, default=None, help="random seed (reproducible results)")
    p.add_argument(
        "--timeout",
        type=float,
        default=60.0,
        help="longest a single call of the target may run, in seconds, at most 86400 "
        "(default %(default)s)",
    )
    p.add_argument(
        "--workers",
        type=int,
        default=None,
        help=f"sample on a local Dask cluster of N worker processes (1 to {MAX_WORKERS}; "
        "pip install 'dpref[cluster]'); the result is the one the in-process run gives",
    )
    p.add_argument(
        "--scheduler",
        default=None,
        metavar="ADDRESS",
        help="sample on the existing Dask cluster at ADDRESS (tcp://host:8786); "
        f"refused if it does not answer within {CONNECT_TIMEOUT:g} s",
    )
    p.add_argument(
        "--max-seconds",
        type=float,
        default=None,
        metavar="SECONDS",
        help="time budget of the run, in seconds; when it runs out (or on ^C / SIGTERM) the "
        "report so far is printed, marked partial, verdict inconclusive (exit 3; 130 / 143)",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object")
    add_reference_flags(p)
    p.set_defaults(**dict.fromkeys(_FLAG_DEFAULTS))  # None: not given (filled in later)


_SWEEP = (
    f"Without --horizon: a sweep of T = {', '.join(map(str, GRID))} and {RANDOM_HORIZONS} "
    "random horizons, exact where the noise can be scripted (docs/auditing.md)."
)


def add_parser(subparsers: Any) -> None:
    """Register ``audit`` and ``conform``."""
    p = subparsers.add_parser(
        "audit",
        allow_abbrev=False,
        help="lower-bound a target's privacy loss on neighbouring streams",
        description="Clopper–Pearson lower bound on the privacy loss of TARGET on event-level "
        "neighbouring streams of length T; --epsilon is the ε the target claims. " + _SWEEP,
        epilog=_EXIT_EPILOG,
    )
    _common(p)
    p.add_argument(
        "--samples", type=int, default=None, help="samples per side (default 200000; 200 to 10^9)"
    )
    p.add_argument(
        "--confidence", type=float, default=None, help="confidence of the bound (default 0.99)"
    )
    p.add_argument(
        "--pair",
        action="append",
        default=None,
        help="a neighbouring pair X/X' (comma-separated items), repeatable; default: every "
        "position flipped at T <= 16 (first, middle and last on all-low, all-high and random "
        "streams), a stated random covering design above",
    )
    p.add_argument(
        "--reference",
        default=None,
        help="a mechanism the black-box target claims to be (enables the plan-aware event)",
    )
    p.add_argument(
        "--events",
        choices=["auto", "blackbox", "plan"],
        default=None,
        help="candidate events: both families (auto), half-line conjunctions only, or the "
        "plan's likelihood-ratio event only",
    )
    p.add_argument(
        "--no-exact", action="store_true", help="skip the exact loss (built-ins, T <= 8)"
    )
    p.add_argument(
        "--privacy",
        choices=["pure", "gdp", "zcdp"],
        default=None,
        help="the claim audited: pure ε-DP, μ-GDP or (ε, δ) (gdp), ρ-zCDP (zcdp); default "
        "gdp with --rho/--mu/--delta or a Gaussian mechanism (zcdp: discrete Gaussian), else "
        "pure (docs/auditing.md §11)",
    )
    p.add_argument(
        "--mu",
        default=None,
        help="the claimed μ of μ-GDP, e.g. 1, 0.5, 3/2 (replaces a built-in's declared ρ; with "
        "--exact: a target drawing normal noise); an (ε, δ) claim is --epsilon E --delta D",
    )
    # --exact: exact audit of a noise-injectable target (dpref/audit/injected/structural.py)
    p.add_argument(
        "--exact",
        action="store_true",
        help="script the target's Laplace or normal draws and compute its exact ε (Laplace) "
        "or μ (normal) (docs/auditing.md §9)",
    )
    p.add_argument(
        "--protocol",
        choices=list(_PROTOCOLS),
        default=None,
        help="with --exact: how a black-box target takes its noise — rng: f(stream, rng) "
        "drawing rng.laplace / rng.normal; callback: f(stream, noise) calling noise(scale, "
        "size) for Laplace noise (default: the target's dpref_noise attribute, else rng)",
    )
    add_precision_argument(p)  # --exact's float error model (dpref/audit/injected/rounding.py)
    _add_foreign(p, "audit")
    p.set_defaults(func=run_audit)

    p = subparsers.add_parser(
        "conform",
        allow_abbrev=False,
        help="check that a target behaves like the reference mechanism it claims to be",
        description="Crashes, causality by replay, unbiasedness, noise law and scale, per-step "
        "variance of TARGET against --reference (built with the mechanism flags: --epsilon "
        "for a Laplace reference, --rho for a Gaussian one); without --reference only the "
        "reference-free checks (crashes, output length, determinism, causality).",
        epilog=_EXIT_EPILOG.replace(
            "(a finding such as NaN, a crash, a time-out, a fork, a signed zero; an "
            "uncomputable exact loss)",
            "(a time-out, a target not deterministic given its rng; a crash or NaN is a "
            "difference from the reference: 1)",
        ),
    )
    _common(p)
    for action in p._actions:  # a reference-free conform of a black box claims no ε
        if action.dest == "epsilon":
            action.required = False
            action.default = None
    p.add_argument(
        "--reference",
        default=None,
        help="the mechanism the target claims to be (default: reference-free checks only)",
    )
    p.add_argument(
        "--runs",
        type=int,
        default=None,
        help="runs of the target (default 2000, 20 to 10^6; with --reference)",
    )
    p.add_argument(
        "--false-alarm",
        type=float,
        default=None,
        help="false-alarm rate of the whole test: the chance a conforming target is flagged "
        "(default 0.01; with --reference)",
    )
    _add_foreign(p, "conform")
    p.set_defaults(func=run_conform)


def _sweep_budget(args: argparse.Namespace) -> float | None:
    """The sweep's default budget: no --horizon, and no plan file to take T from."""
    from dpref.audit.sweep import DEFAULT_MAX_SECONDS

    file = args.reference is not None and args.reference not in mechanism_names()
    return DEFAULT_MAX_SECONDS if args.horizon is None and not file else None


@stoppable("audit", _sweep_budget)  # --max-seconds, ^C, SIGTERM: dpref/audit/reports/deadline.py
def run_audit(args: argparse.Namespace) -> int:
    """``dpref audit``."""
    _check_ranges(args)
    plan_ref = plan_reference(args)  # --reference FILE (dpref/cli/plan_reference.py)
    if args.horizon is None:  # no --horizon (nor a plan file's): sweep (dpref/audit/sweep.py)
        from dpref.audit.sweep_cli import run_sweep_cli

        return run_sweep_cli(sys.modules[__name__], args)
    if args.exact:  # --exact: exact audit of a noise-injectable target (structural.py)
        _check_exact_options(args)
        return run_exact_cli(args)
    from dpref.audit.pure.loss import audit

    T = _need_horizon(args)
    delta = _check_claim_options(args)
    _check_audit_options(args)
    _check_cluster_flags(args)
    target = _target(args)
    watch(target)
    reference = plan_ref or (_mechanism_named(args, args.reference) if args.reference else None)
    built = target.mechanism is not None or reference is not None
    # a built mechanism claims its declaration (--epsilon / --rho built it), unless --mu
    # replaces the claim; a black box claims what --epsilon / --rho say
    epsilon = None if (built and args.mu is not None) else args.epsilon
    rho = None if built else args.rho
    domain = None
    if target.mechanism is None and reference is None:
        domain = parse_domain(args.domain, args.neighbours)
    pairs = [_parse_pair(t) for t in args.pair] if args.pair else None
    with _flag_names():
        report = audit(
            target,
            horizon=T,
            epsilon=epsilon,
            privacy=args.privacy,
            delta=delta,
            rho=rho,
            mu=args.mu,
            samples=args.samples,
            confidence=args.confidence,
            seed=args.seed,
            pairs=pairs,
            domain=domain,
            reference=reference,
            events=args.events,
            exact=not args.no_exact,
            timeout=args.timeout,
            progress=not args.json,
            workers=args.workers,
            scheduler=args.scheduler,
        )
    return _emit(args, report, report.exit_code)


@stoppable("conform")
def run_conform(args: argparse.Namespace) -> int:
    """``dpref conform``."""
    from dpref.audit.conformance.conform import conform

    _check_ranges(args)
    plan_ref = plan_reference(args)  # --reference FILE (dpref/cli/plan_reference.py)
    T = _need_horizon(args)
    _check_conform_options(args)
    _check_cluster_flags(args)
    # a built-in target goes to conform as a Mechanism: it accepts Gaussian (zCDP) ones
    builtin = args.target in mechanism_names()
    target: Any = _mechanism_named(args, args.target) if builtin else _target(args)
    watch(target)
    reference = plan_ref or (_mechanism_named(args, args.reference) if args.reference else None)
    domain = None
    if reference is None and not builtin:
        domain = parse_domain(args.domain, args.neighbours)
    with _flag_names():
        report = conform(
            target,
            reference,
            horizon=T,
            runs=args.runs,
            alpha=args.false_alarm,
            seed=args.seed,
            domain=domain,
            timeout=args.timeout,
            progress=not args.json,
            workers=args.workers,
            scheduler=args.scheduler,
        )
    return _emit(args, report, report.exit_code)


def _emit(args: argparse.Namespace, report: Any, code: int) -> int:
    """Print the report (one JSON object with ``--json``, else its summary); return the
    exit code of its verdict."""
    finish()  # no partial report from here on (dpref/audit/reports/deadline.py)
    notes = input_notes(args)
    if args.json:
        print(json.dumps({**report.as_dict(), **({"input_notes": notes} if notes else {})}))
    else:
        print("\n".join([report.summary(), *(f"note        {n}" for n in notes)]))
    return code


def run(args: argparse.Namespace) -> int:
    """Dispatch ``audit`` / ``conform`` (the plugin's ``run``)."""
    return run_audit(args) if args.command == "audit" else run_conform(args)


def run_exact_cli(args: argparse.Namespace) -> int:
    """``dpref audit TARGET --exact``: print the exact report; exit 0 (no violation),
    1 (violation) or 3 (inconclusive: the loss could not be computed, or only a bound).
    The claim is ``--epsilon`` (pure ε, Laplace draws), ``--rho`` (ρ-zCDP) or ``--mu``
    (μ-GDP) — normal draws; a built-in Gaussian target is built from ``--rho``."""
    from dpref.audit.injected.structural import exact_audit

    if args.horizon is None:
        raise ParameterError("horizon=None: give --horizon T")
    target: Any = args.target
    domain: Domain | None = None
    if target in mechanism_names():
        ns = argparse.Namespace(**vars(args))
        ns.mechanism = target
        target = mechanism_from_args(ns, horizon=args.horizon)
    else:
        check_target(target)
        domain = parse_domain(args.domain, args.neighbours)
    report = exact_audit(
        target,
        args.horizon,
        epsilon=args.epsilon,
        rho=args.rho,
        mu=args.mu,
        privacy=args.privacy,
        domain=domain,
        protocol=args.protocol,
        seed=args.seed or 0,
        timeout=args.timeout,
        precision=args.precision or "auto",
    )
    return _emit(args, report, report.exit_code)
