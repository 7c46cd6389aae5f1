"""The command-line side of ``--reference FILE`` (a plan file) in ``dpref audit`` and
``dpref conform``: reading the file (:func:`load_reference_plan`), the ``--scale`` /
``--sigma`` flags, building the
:class:`~dpref.audit.conformance.reference_file.PlanReference`, and the notes the report
prints about inputs taken at their exact binary values (docs/auditing.md §12)."""

from __future__ import annotations

import argparse
import math
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

from dpref.audit.conformance.reference_file import MAX_REFERENCE_ROWS, Law, ReferencePlan
from dpref.errors import ParameterError
from dpref.validation import check_fraction, fmt

__all__ = ["add_reference_flags", "input_notes", "load_reference_plan", "plan_reference"]


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
    from dpref.audit.conformance.reference_file import PlanReference, is_plan_file
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


# ------------------------------------------------------------------ the file
def _entry(name: str, v: Any) -> tuple[Fraction, bool]:
    """One entry: exact (int, rational string) or a float at its binary value (True)."""
    if isinstance(v, Fraction):
        return v, False
    if isinstance(v, bool) or not isinstance(v, int | float | str):
        raise ParameterError(f"{name}={fmt(v)}: must be a number or a rational string")
    if isinstance(v, float):
        if not math.isfinite(v):
            raise ParameterError(f"{name}={v!r}: must be finite")
        return Fraction(v), True
    return check_fraction(name, v), False


def _rows(value: Any) -> Any:
    """A matrix or vector as nested lists (numpy arrays through ``tolist``)."""
    return value.tolist() if isinstance(value, np.ndarray) else value


def _matrix(name: str, value: Any, ndim: int = 2) -> tuple[list[list[Fraction]], int]:
    """Rows of exact entries (a 1-d value is one row) and the number of float entries."""
    if isinstance(value, np.ndarray):
        if value.dtype.kind not in "biuf":
            raise ParameterError(f"{name}: dtype {value.dtype} is not real numbers")
        if value.ndim != ndim:
            raise ParameterError(f"{name}: shape {value.shape}, need a {ndim}-d array")
        value = value.tolist()
    if ndim == 1:
        value = [value]
    if not isinstance(value, list) or not value:
        raise ParameterError(f"{name}: must be a non-empty list of rows")
    if len(value) > MAX_REFERENCE_ROWS:
        raise ParameterError(f"{name}: {len(value)} rows, above the limit {MAX_REFERENCE_ROWS}")
    out: list[list[Fraction]] = []
    floats = 0
    width = None
    for r, row in enumerate(value):
        label = name if ndim == 1 else f"{name}[{r}]"
        if not isinstance(row, list) or not row:
            raise ParameterError(f"{label}: must be a non-empty list")
        if width is None:
            width = len(row)
            if width > MAX_REFERENCE_ROWS:
                raise ParameterError(
                    f"{label}: {width} entries, above the limit {MAX_REFERENCE_ROWS}"
                )
        elif len(row) != width:
            raise ParameterError(f"{label}: {len(row)} entries, row 0 has {width}")
        vals = []
        for i, v in enumerate(row):
            f, was_float = _entry(f"{label}[{i}]", v)
            floats += was_float
            vals.append(f)
        out.append(vals)
    return out, floats


def load_reference_plan(path: str) -> ReferencePlan:
    """Read a plan file (any form of docs/plan-format.md: dense ``C``, ``B``, optional
    ``scales``, or Toeplitz/BLT coefficients, with optional ``noise``) for use as a reference.

    This is the one function through which conformance and the plan-aware audit read a
    plan file: :func:`dpref.planfile.read_plan_file` reads and validates it (size caps, JSON
    and ``.npz`` parsing), a Toeplitz or BLT plan is expanded to its dense matrices, and the
    entries are kept exact — integers and rational strings as they are, floats at their
    exact binary values.  Raises :class:`~dpref.errors.ParameterError` naming the first
    offending entry: a bad file, a scale ≤ 0, a decoder that uses a row before its last
    nonzero column (not causal), a plan above :data:`MAX_REFERENCE_ROWS`.
    """
    from dpref.planfile import read_plan_file

    if Path(path).suffix.lower() not in (".json", ".npz"):
        raise ParameterError(f"reference={path!r}: a plan file is a .json or .npz file")
    plan = read_plan_file(path)
    if plan.horizon > MAX_REFERENCE_ROWS or plan.nodes > MAX_REFERENCE_ROWS:
        raise ParameterError(
            f"reference={path!r}: horizon {plan.horizon}, {plan.nodes} rows: above the limit "
            f"{MAX_REFERENCE_ROWS} of a reference plan"
        )
    B_dense, C_dense = plan.to_dense()
    C, fc = _matrix("C", _rows(C_dense))
    B, fb = _matrix("B", _rows(B_dense))
    nodes = len(C)
    fs = 0
    scales = [Fraction(1)] * nodes
    if plan.scales is not None:
        rows, fs = _matrix("scales", _rows(plan.scales), ndim=1)
        scales = rows[0]
    for n, s in enumerate(scales):
        if s <= 0:
            raise ParameterError(f"scales[{n}]={s}: must be > 0")
    law: Law | None = None
    if plan.noise is not None:
        law = "laplace" if plan.noise == "laplace" else "gaussian"
    release = [max((i + 1 for i, v in enumerate(row) if v != 0), default=1) for row in C]
    for t, row in enumerate(B, 1):
        for n, v in enumerate(row):
            if v != 0 and release[n] > t:
                raise ParameterError(
                    f"B[{t - 1}][{n}]={v}: output t={t} uses row {n} of C, released at "
                    f"t={release[n]} (B is not causal)"
                )
    return ReferencePlan(
        path=path,
        strategy=tuple(tuple(r) for r in C),
        decoder=tuple(tuple(r) for r in B),
        scales=tuple(scales),
        noise=law,
        floats=fc + fb + fs,
    )
