"""``dpref release MECHANISM``: one noisy estimate per item of a stream."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

import numpy as np

from dpref.cli.common import add_mechanism_args, mechanism_from_args, parse_domain, read_stream
from dpref.errors import ParameterError
from dpref.registry import check_mechanism_name

__all__ = ["add_parser", "run"]


def add_parser(subparsers: Any) -> None:
    """Add the ``release`` subcommand."""
    p = subparsers.add_parser(
        "release",
        help="release a noisy estimate after every item",
        description="Read a stream and print the mechanism's noisy estimate after every item, "
        "one number per line (with --json: one object with the outputs and their exact "
        "standard deviations). The mechanism and its budget are chosen with the flags below; "
        "a flag that belongs to another mechanism is refused.",
    )
    add_mechanism_args(p)
    p.add_argument(
        "--seed", type=int, default=None, help="random seed (default: fresh randomness each run)"
    )
    p.add_argument(
        "--input",
        default="-",
        help="FILE (one number per line; a blank line is an error, a line starting with # a "
        "comment), a .npy array, a CSV file with --column, or - for stdin (default %(default)s)",
    )
    p.add_argument(
        "--column",
        default=None,
        help="read this column of a CSV --input with a header row (default: one number per line)",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Release the stream read from ``--input``; with ``--json`` also the exact std."""
    if args.seed is not None and args.seed < 0:  # named as the flag, before reading input
        raise ParameterError(f"--seed={args.seed}: must be >= 0")
    check_mechanism_name(args.mechanism)  # before waiting for a stream on stdin
    parse_domain(args.domain, args.neighbours)
    stream = read_stream(args.input, column=args.column)
    mech = mechanism_from_args(args, horizon=max(1, stream.size))
    out = mech.release(stream, rng=args.seed)
    if not args.json:
        sys.stdout.write("".join(f"{v!r}\n" for v in out.tolist()))
        return 0
    std = np.sqrt(mech.variance(stream.size))
    print(
        json.dumps(
            {
                "mechanism": args.mechanism,
                "parameters": repr(mech),
                "privacy": mech.privacy,
                "epsilon": None if mech.epsilon is None else str(mech.epsilon),
                "rho": None if mech.rho is None else str(mech.rho),
                **_output_rho(mech, stream.size),
                "noise": mech.noise,
                "seed": args.seed,
                "estimates": out.tolist(),
                "std": std.tolist(),
            }
        )
    )
    return 0


def _output_rho(mech: Any, horizon: int) -> dict[str, Any]:
    """``output_rho`` beside ``rho`` for a continuous Gaussian mechanism: the exact ρ its
    released outputs leak (below ``rho`` when they do not determine the node noise, e.g.
    Honaker), or null with the reason when the exact computation is beyond its budget."""
    if mech.rho is None or mech.noise != "gaussian":
        return {}
    from dpref.audit.gaussian.output_budget import DECLARATION_WORK, output_budget

    try:
        found = output_budget(mech, horizon, max_work=DECLARATION_WORK)
    except ParameterError as exc:  # a factorization's plan: no node-interval plan
        return {"output_rho": None, "output_rho_label": f"not computed: {exc}; rho bounds it"}
    if found is None:
        return {
            "output_rho": None,
            "output_rho_label": f"not computed: the exact computation at T={horizon} is "
            "beyond its size or work budget; rho bounds it",
        }
    return found.as_dict()
