"""``dpref audit TARGET --epsilon E`` without ``--horizon``: the horizon sweep's command line.

The options are those of ``dpref audit`` (:mod:`dpref.audit.cli`), read per horizon:

* the claim: ``--epsilon`` (pure ε), ``--rho`` (ρ-zCDP) or ``--mu`` (μ-GDP); a built-in
  target is built from ``--epsilon`` / ``--rho`` at every T and claims its declaration;
* ``--exact``: the exact audit only (a target whose noise cannot be recorded is then
  ``inconclusive`` at every horizon); ``--no-exact``: the sampled audit only; neither:
  exact where it can run, sampled elsewhere (:mod:`dpref.audit.sweep`);
* the sampled audit's ``--samples``, ``--confidence``, ``--events``, ``--reference``,
  ``--workers``, ``--scheduler`` and the exact audit's ``--protocol`` apply wherever that
  audit runs; ``--pair`` (pairs of one length) and an (ε, δ) claim (``--delta``, which the
  exact audit cannot judge) need ``--horizon``;
* ``--seed`` (default :data:`~dpref.audit.sweep.DEFAULT_SEED`) draws the random horizons
  and seeds every audit; ``--max-seconds`` (default
  :data:`~dpref.audit.sweep.DEFAULT_MAX_SECONDS`) is the budget of the whole sweep.
"""

from __future__ import annotations

import argparse
from types import ModuleType
from typing import Any

from dpref.audit.reports.deadline import current
from dpref.audit.sweep import DEFAULT_SEED, KeptWorker, SweepReport, run_sweep
from dpref.cli.common import parse_domain
from dpref.errors import ParameterError
from dpref.registry import mechanism_names

__all__ = ["run_sweep_cli"]


def _at(args: argparse.Namespace, T: int) -> argparse.Namespace:
    ns = argparse.Namespace(**vars(args))
    ns.horizon = T
    return ns


def _check(audit_cli: ModuleType, args: argparse.Namespace) -> str:
    """The method (``exact``, ``sampled`` or ``auto``), after the option rules of
    ``dpref audit`` — the sampled ones for what the sampled audit uses, the exact ones
    for what the exact audit uses."""
    if args.reference is not None and args.reference not in mechanism_names():
        raise ParameterError(
            f"--reference={args.reference}: not a mechanism; a plan file has one horizon, "
            "so it cannot be swept"
        )
    if args.pair:
        raise ParameterError(
            f"--pair={args.pair[0]}: a pair fixes the stream length; give --horizon T "
            "(without --horizon, dpref audit sweeps the horizons)"
        )
    if args.exact and args.no_exact:
        raise ParameterError("--no-exact: contradicts --exact")
    if args.exact:
        audit_cli._check_exact_options(args)
        return "exact"
    protocol, no_exact = args.protocol, args.no_exact
    args.protocol, args.no_exact = None, False  # read by the exact part / the method here
    delta = audit_cli._check_claim_options(args)
    if delta is not None:
        raise ParameterError(
            f"--delta={delta}: an (ε, δ) claim is audited by the sampled audit at one "
            "horizon; give --horizon T (the sweep's exact audits judge ε, ρ or μ)"
        )
    audit_cli._check_audit_options(args)
    audit_cli._check_cluster_flags(args)
    args.protocol, args.no_exact = protocol, no_exact
    if no_exact and protocol is not None:
        raise ParameterError(f"--protocol={protocol}: used only by the exact audit (--no-exact)")
    return "sampled" if no_exact else "auto"


def run_sweep_cli(audit_cli: ModuleType, args: argparse.Namespace) -> int:
    """Run the sweep of ``args`` and print its report; the exit code.  ``audit_cli`` is
    :mod:`dpref.audit.cli`, whose option checks and builders the sweep reuses (passed in,
    not imported: that module imports this one)."""
    audit_cli._check_ranges(args)
    method = _check(audit_cli, args)
    builtin = args.target in mechanism_names()
    if not builtin and ":" not in args.target:
        audit_cli._target(args)  # the error naming the target
    if not builtin and args.epsilon is None and args.rho is None and args.mu is None:
        if method == "sampled":
            raise ParameterError(
                "epsilon=None: the sampled audit tests a claim; give --epsilon, --rho or --mu"
            )
        method = "exact"  # no claim: exact losses are reported; nothing to sample against
    seed = DEFAULT_SEED if args.seed is None else args.seed
    domain = None if builtin else parse_domain(args.domain, args.neighbours)
    kept = (
        None
        if builtin or method == "sampled"
        else KeptWorker(args.target, protocol=args.protocol, timeout=args.timeout)
    )
    exact = (
        None if method == "sampled" else (lambda T: _exact(audit_cli, args, T, seed, domain, kept))
    )
    sampled = None if method == "exact" else (lambda T: _sampled(audit_cli, args, T, seed))
    b = current()
    try:
        report: SweepReport = run_sweep(
            target=args.target,
            claim=_claim(args, builtin),
            exact=exact,
            sampled=sampled,
            seed=seed,
            max_seconds=None if b is None else b.seconds,
            use_current_budget=True,
        )
    finally:
        if kept is not None:
            kept.close()
    code: int = audit_cli._emit(args, report, report.exit_code)
    return code


def _claim(args: argparse.Namespace, builtin: bool) -> str:
    for symbol, name in (("ε", "epsilon"), ("ρ", "rho"), ("μ", "mu")):
        value = getattr(args, name)
        if value is not None:
            own = f" ({args.target}'s declaration at each T)" if builtin and name != "mu" else ""
            return f"{symbol} = {value}{own}"
    return "none (the exact loss is reported, not judged)"


def _exact(
    audit_cli: ModuleType,
    args: argparse.Namespace,
    T: int,
    seed: int,
    domain: Any,
    kept: KeptWorker | None,
) -> Any:
    from dpref.audit.injected.structural import exact_audit

    builtin = args.target in mechanism_names()
    target: Any = audit_cli._mechanism_named(_at(args, T), args.target) if builtin else args.target
    replaced = builtin and args.mu is not None  # --mu replaces a built-in's declaration
    options: dict[str, Any] = {
        "epsilon": None if replaced else args.epsilon,
        "rho": None if replaced else args.rho,
        "mu": args.mu,
        "privacy": args.privacy,
        "domain": domain,
        "protocol": args.protocol,
        "seed": seed,
        "timeout": args.timeout,
    }
    if kept is None:
        return exact_audit(target, T, **options)
    return kept.exact_audit(T, **options)


def _sampled(audit_cli: ModuleType, args: argparse.Namespace, T: int, seed: int) -> Any:
    from dpref.audit.pure.loss import audit

    ns = _at(args, T)
    target = audit_cli._target(ns)
    try:
        reference = audit_cli._mechanism_named(ns, args.reference) if args.reference else None
        built = target.mechanism is not None or reference is not None
        domain = None
        if target.mechanism is None and reference is None:
            domain = parse_domain(args.domain, args.neighbours)
        with audit_cli._flag_names():
            return audit(
                target,
                horizon=T,
                epsilon=None if (built and args.mu is not None) else args.epsilon,
                privacy=args.privacy,
                rho=None if built else args.rho,
                mu=args.mu,
                samples=args.samples,
                confidence=args.confidence,
                seed=seed,
                domain=domain,
                reference=reference,
                events=args.events,
                exact=False,
                timeout=args.timeout,
                progress=not args.json,
                workers=args.workers,
                scheduler=args.scheduler,
            )
    finally:
        target.close()
