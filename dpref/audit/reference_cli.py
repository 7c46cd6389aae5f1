"""The command-line side of ``--reference FILE`` (a plan file) in ``dpref audit`` and
``dpref conform``: the ``--scale`` / ``--sigma`` flags, building the
:class:`~dpref.audit.reference_file.PlanReference`, and the notes the report prints about
inputs taken at their exact binary values (docs/auditing.md, "Third-party plans as
references")."""

from __future__ import annotations

import argparse
from typing import Any

from dpref.errors import ParameterError

__all__ = ["add_reference_flags", "input_notes", "plan_reference"]


def add_reference_flags(p: argparse.ArgumentParser) -> None:
    """``--scale`` and ``--sigma``: the unit noise of a plan-file reference."""
    p.add_argument(
        "--scale",
        default=None,
        help="with --reference FILE: Laplace scale b per unit row scale of the plan (node n "
        "gets Lap(b·scales[n])); the claim is the ε the plan supports, or --epsilon",
    )
    p.add_argument(
        "--sigma",
        default=None,
        help="with --reference FILE: Gaussian σ per unit row scale of the plan; the claim is "
        "the ρ the plan supports, or --rho",
    )


def input_notes(args: argparse.Namespace) -> list[str]:
    """The notes gathered while reading the inputs (shown with the report)."""
    notes: list[str] = getattr(args, "input_notes", None) or []
    return notes


def _note(args: argparse.Namespace, text: str) -> None:
    notes = getattr(args, "input_notes", None)
    if notes is None:
        notes = []
        args.input_notes = notes
    notes.append(text)


def plan_reference(args: argparse.Namespace) -> Any:
    """The plan-file reference ``--reference FILE`` names, or None (a mechanism name, or no
    reference).  Refuses ``--scale`` / ``--sigma`` without a plan file and mechanism flags
    a black-box target would not use; fills in ``--horizon`` from the file when it is not
    given.  Starts ``args.input_notes``, the notes the report prints (call it first).
    Under ``--exact`` nothing is built (the exact audit takes no reference and says so)."""
    from dpref.audit.reference_file import PlanReference, is_plan_file, load_reference_plan
    from dpref.cli.common import parse_domain
    from dpref.registry import mechanism_names, parameter_flags

    if getattr(args, "input_notes", None) is None:
        args.input_notes = []  # shared by the copies of args the mechanisms are built from
    ref = getattr(args, "reference", None)
    scale, sigma = getattr(args, "scale", None), getattr(args, "sigma", None)
    if ref is None or ref in mechanism_names() or not is_plan_file(ref):
        for flag, value in (("--scale", scale), ("--sigma", sigma)):
            if value is not None:
                raise ParameterError(
                    f"{flag}={value}: applies only with --reference FILE (a plan file's unit noise)"
                )
        return None
    if getattr(args, "exact", False):
        return None
    blackbox = args.target not in mechanism_names()
    if blackbox:
        for param in parameter_flags():
            value = getattr(args, param, None)
            if value is not None:
                raise ParameterError(
                    f"--{param.replace('_', '-')}={value}: a mechanism parameter, but the "
                    f"target is a black box and the reference the plan file {ref!r}, so it "
                    "would be ignored"
                )
    plan_file = load_reference_plan(ref)
    if args.horizon is None:
        args.horizon = plan_file.horizon
    domain = parse_domain(args.domain or "bits", args.neighbours or "replace")
    reference = PlanReference.from_file(
        plan_file,
        noise=args.noise if blackbox else None,
        epsilon=args.epsilon,
        rho=args.rho,
        scale=scale,
        sigma=sigma,
        domain=domain,
    )
    if plan_file.floats:
        _note(
            args,
            f"the plan file's {plan_file.floats} float entries are taken at their exact "
            "binary values (Fraction(float))",
        )
    budget = "ε" if reference.rho is None else "ρ"
    given = args.epsilon if reference.rho is None else args.rho
    if given is None:
        _note(args, f"claimed {budget} = the plan's own at its noise: {reference!r}")
    return reference
