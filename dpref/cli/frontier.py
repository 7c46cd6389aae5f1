"""``dpref frontier --horizon T (--epsilon E | --rho R)``: which counter for this T and ε (Laplace
noise) or ρ (zCDP, Gaussian noise) — docs/frontier.md."""

from __future__ import annotations

import argparse
import json
from typing import Any

__all__ = ["add_parser", "run"]


def add_parser(subparsers: Any) -> None:
    """Add the ``frontier`` subcommand."""
    p = subparsers.add_parser(
        "frontier",
        help="exact mean/max variance of every counter and parameterisation at T and ε or ρ",
        description="Compute, exactly, the mean and the maximum per-step variance of every "
        "counting mechanism and parameterisation at horizon T and budget ε (pure DP, Laplace "
        "noise) or ρ (zCDP, Gaussian noise), and print them best first by --objective, each "
        "with the Python expression that builds it and the dpref release command that runs "
        "it; under the table, the lower bound on the maximum variance (the table's unit) and, "
        "for ε, the packing bound on the error.",
    )
    p.add_argument("--horizon", required=True, help="T, an integer in [1, 2^24]")
    budget = p.add_mutually_exclusive_group(required=True)
    budget.add_argument(
        "--epsilon", default=None, help="ε > 0 (exact: 1, 0.5, 1/3): pure DP, Laplace noise"
    )
    budget.add_argument("--rho", default=None, help="ρ > 0 (exact: 1/2): zCDP, Gaussian noise")
    p.add_argument(
        "--objective",
        default="max",
        help="what the best row minimises: max or mean variance over t ≤ T (default %(default)s)",
    )
    p.add_argument(
        "--mechanism",
        action="append",
        default=None,
        help="compare only this counting mechanism (repeatable; default: all)",
    )
    p.add_argument(
        "--top",
        default=None,
        metavar="N",
        help="print only the N best rows (default: every row, skipped ones last)",
    )
    p.add_argument(
        "--sensitivity",
        default="1",
        metavar="DELTA",
        help="Δ, exact, 0 < Δ ≤ 10^9: items in [0, Δ]; variances and bounds scale by Δ² "
        "(default %(default)s: bits)",
    )
    p.add_argument(
        "--plot",
        default=None,
        metavar="FILE",
        help="draw Var(out_t) of the three leading mechanisms and their objective at T = 2^4 … "
        "T (matplotlib)",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Print the frontier table (or one JSON object); write the figure with ``--plot``."""
    from dpref.frontier import frontier, plot
    from dpref.validation import check_int_range

    horizon = _int_arg("horizon", args.horizon, check_int_range)
    top = None if args.top is None else _int_arg("top", args.top, check_int_range)
    delta = _number_arg("sensitivity", args.sensitivity)
    if args.rho is not None:
        budget: dict[str, Any] = {"rho": _number_arg("rho", args.rho)}
        eps = None
    else:
        budget, eps = {}, _number_arg("epsilon", args.epsilon)
    _check_mechanisms(args.mechanism, "zcdp" if args.rho is not None else "pure")
    if args.plot:
        from dpref.cli.common import pyplot_for

        pyplot_for(args.plot)  # a mistyped image format fails before anything is computed
    full = frontier(horizon, eps, args.objective, args.mechanism, sensitivity=delta, **budget)
    drawn = plot(full, args.plot) if args.plot else []
    report = full if top is None else full.head(top)
    if args.json:
        doc = report.as_dict()
        if args.plot:
            doc["plot"] = {"file": args.plot, "rows": drawn}
        print(json.dumps(doc))
    else:
        print(report.table())
        if args.plot:
            print(f"plot: {args.plot} ({', '.join(drawn)})")
    return 0


def _check_mechanisms(names: list[str] | None, privacy: str) -> None:
    """Each ``--mechanism`` is a counter the frontier compares under this budget, else an
    error in the format of every unknown name (:func:`~dpref.validation.choose_from`)."""
    from dpref.errors import ParameterError
    from dpref.frontier import counting_mechanisms
    from dpref.mechanisms import MECHANISMS
    from dpref.validation import choose_from, fmt

    valid = [c.name for c in counting_mechanisms() if privacy in c.frontier_privacy]
    for name in names or []:
        if name in valid:
            continue
        if name in MECHANISMS:  # registered, but not a counter compared under this budget
            flag = "--rho (zCDP)" if privacy == "zcdp" else "--epsilon (pure DP)"
            why = f"not a counter the frontier compares under {flag}; choose from"
            raise ParameterError(f"--mechanism={fmt(name)}: {why} {', '.join(valid)}")
        raise ParameterError(f"--mechanism={fmt(name)}: {choose_from(name, valid)}")


def _int_arg(name: str, text: str, check: Any) -> int:
    from dpref.errors import ParameterError

    if len(text) > 30 or not text.strip().lstrip("+").isdigit():
        limit = "[1, 2^24]" if name == "horizon" else ">= 1"
        raise ParameterError(f"{name}={text!r}: must be an integer {limit}")
    value: int = check(name, int(text), 1, None)
    return value


def _number_arg(name: str, text: str) -> str:
    from dpref.errors import ParameterError

    if len(text) > 60:
        raise ParameterError(f"{name}={text[:20]!r}…: too long for a number")
    if "e" in text.lower() and not text.lower().startswith(("nan", "inf")):
        exponent = text.lower().partition("e")[2]
        if not exponent.lstrip("+-").isdigit() or abs(int(exponent)) > 400:
            raise ParameterError(f"{name}={text!r}: exponent out of range")
    return text
