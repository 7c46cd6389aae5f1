"""``dpref audit`` and ``dpref conform``: audit another implementation from the shell.

``TARGET`` is a built-in mechanism name (``binary``, ``simple1``, …, built with the
mechanism flags) or a black-box callable ``package.module:function`` /
``path/to/file.py:function`` with signature ``f(stream, rng) -> len(stream) floats``.

Exit codes: 0 — nothing found; 1 — a violation was proven (audit), the target does
not conform (conform) or the target crashed; 2 — bad input.
"""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, Any

from dpref.cli.common import add_mechanism_args, mechanism_from_args, parse_domain
from dpref.errors import ParameterError
from dpref.mechanisms import Mechanism
from dpref.registry import mechanism_names
from dpref.validation import fmt

if TYPE_CHECKING:
    from dpref.audit.targets import Target

# The audit machinery (scipy.stats) is imported by the commands when they run, not
# when `dpref --help` builds the parser.

__all__ = ["add_parser", "run", "run_audit", "run_conform"]


def _mechanism_named(args: argparse.Namespace, name: str) -> Mechanism:
    ns = argparse.Namespace(**vars(args))
    ns.mechanism = name
    mech: Mechanism = mechanism_from_args(ns, horizon=args.horizon)
    return mech


def _target(args: argparse.Namespace) -> Target:
    from dpref.audit.targets import as_target

    spec = args.target
    if spec in mechanism_names():
        return as_target(_mechanism_named(args, spec), timeout=args.timeout)
    if ":" not in spec:
        raise ParameterError(
            f"target={fmt(spec)}: not a mechanism ({', '.join(mechanism_names())}) "
            "nor module:function / file.py:function"
        )
    return as_target(spec, timeout=args.timeout)


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
        help="longest a single call of the target may run, seconds (default 60)",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object")


def add_parser(subparsers: Any) -> None:
    """Register ``audit`` and ``conform``."""
    p = subparsers.add_parser(
        "audit",
        help="lower-bound a target's privacy loss on neighbouring streams",
        description="Clopper–Pearson lower bound on the privacy loss of TARGET on event-level "
        "neighbouring streams of length T; --epsilon is the ε the target claims.",
    )
    _common(p)
    p.add_argument("--samples", type=int, default=200_000, help="samples per side (default 200000)")
    p.add_argument(
        "--confidence", type=float, default=0.99, help="confidence of the bound (default 0.99)"
    )
    p.add_argument(
        "--pair",
        action="append",
        default=None,
        help="a neighbouring pair X/X' (comma-separated items), repeatable; default: flip the "
        "first, middle and last item of all-low, all-high and random streams",
    )
    p.add_argument(
        "--reference",
        default=None,
        help="a mechanism the black-box target claims to be (enables the plan-aware event)",
    )
    p.add_argument(
        "--events",
        choices=["auto", "blackbox", "plan"],
        default="auto",
        help="candidate events: both families (auto), half-line conjunctions only, or the "
        "plan's likelihood-ratio event only",
    )
    p.add_argument(
        "--no-exact", action="store_true", help="skip the exact loss (built-ins, T <= 8)"
    )
    # --exact: exact audit of a noise-injectable target (dpref/audit/structural.py)
    p.add_argument(
        "--exact",
        action="store_true",
        help="script the target's Laplace draws and compute its loss exactly (docs/auditing.md §6)",
    )
    p.set_defaults(func=run_audit)

    p = subparsers.add_parser(
        "conform",
        help="check that a target behaves like the reference mechanism it claims to be",
        description="Crashes, causality by replay, unbiasedness, noise law and scale, per-step "
        "variance of TARGET against --reference (built with the mechanism flags).",
    )
    _common(p)
    p.add_argument("--reference", required=True, help="the mechanism the target claims to be")
    p.add_argument("--runs", type=int, default=2000, help="runs of the target (default 2000)")
    p.add_argument(
        "--false-alarm",
        type=float,
        default=0.01,
        help="false-alarm rate of the whole test: the chance a conforming target is flagged "
        "(default 0.01)",
    )
    p.set_defaults(func=run_conform)


def run_audit(args: argparse.Namespace) -> int:
    """``dpref audit``."""
    if args.exact:  # --exact: exact audit of a noise-injectable target (structural.py)
        from dpref.audit.structural import run_exact_cli

        return run_exact_cli(args)
    from dpref.audit.loss import audit

    T = _need_horizon(args)
    target = _target(args)
    reference = _mechanism_named(args, args.reference) if args.reference else None
    domain = None
    if target.mechanism is None and reference is None:
        domain = parse_domain(args.domain, args.neighbours)
    pairs = [_parse_pair(t) for t in args.pair] if args.pair else None
    report = audit(
        target,
        horizon=T,
        epsilon=args.epsilon,
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
    )
    return _emit(args, report, report.ok)


def run_conform(args: argparse.Namespace) -> int:
    """``dpref conform``."""
    from dpref.audit.conform import conform

    T = _need_horizon(args)
    target = _target(args)
    reference = _mechanism_named(args, args.reference)
    report = conform(
        target,
        reference,
        horizon=T,
        runs=args.runs,
        alpha=args.false_alarm,
        seed=args.seed,
        timeout=args.timeout,
        progress=not args.json,
    )
    return _emit(args, report, report.conforms)


def _emit(args: argparse.Namespace, report: Any, passed: bool) -> int:
    """Print the report (one JSON object with ``--json``, else its summary); exit 0 or 1."""
    print(json.dumps(report.as_dict()) if args.json else report.summary())
    return 0 if passed else 1


def run(args: argparse.Namespace) -> int:
    """Dispatch ``audit`` / ``conform`` (the plugin's ``run``)."""
    return run_audit(args) if args.command == "audit" else run_conform(args)
