"""``dpref plan check FILE``: check someone else's factorization (docs/plan-format.md).

The file (read by :func:`dpref.planfile.read_plan_file`) is one of three forms:

* dense: ``{"C": [[...]], "B": [[...]], "scales": [...]}`` — a strategy C (rows = noise
  nodes, columns = items 1..T), a decoder B (T × rows of C), per-row relative noise scales;
* Toeplitz: ``{"kind": "toeplitz", "C": [c₀ … c_{T−1}], "B": [b₀ … b_{T−1}]}`` — the first
  columns of the lower-triangular Toeplitz strategy and decoder (B optional: derived);
* BLT: ``{"kind": "blt", "theta": [...], "omega": [...], "horizon": T}``;

with integers or rational strings (checked exactly) or floats (taken at their exact binary
value, checked with ``--tolerance`` at the plan's precision), in JSON or ``.npz``.

The report: does ``B·C`` equal the target (prefix sums or windows), is B causal, the L1 and
L2 column sensitivities under single participation (event level, Δ = ``--sensitivity``),
the per-step variance (max, argmax, mean) and the ρ (Gaussian, ``--sigma``) or ε (Laplace,
``--scale``) the plan supports at the given noise, or the noise it needs for a given
``--rho``/``--epsilon``.  Exit 1: the product is not the target (a failed check: the full
report is printed, ``"unbiased": false``; ``null`` when a float product could not be
decided within its error bound), or both a budget and a noise level were given and
the noise is too small.  A malformed file — wrong shapes, non-finite entries, a non-causal
dense decoder, bad JSON, missing keys, a file over the size caps — is one line on stderr
naming the first offending entry, exit 2.
"""

from __future__ import annotations

import argparse
import json
import math
from fractions import Fraction
from typing import Any

from dpref.planfile import MAX_DENSE_EXACT, MAX_DENSE_STEPS, MAX_JSON_BYTES, MAX_NPZ_BYTES

__all__ = [
    "MAX_FILE_BYTES",
    "MAX_FLOAT_ROWS",
    "MAX_ROWS",
    "add_parser",
    "check_file",
    "run",
]

CHECK_DESCRIPTION = """\
Check a factorization file: dense (a strategy C whose rows are noise nodes and columns the
items 1..T, a decoder B with T rows, optional per-row noise scales), Toeplitz ("kind":
"toeplitz", the first columns C and B of the lower-triangular Toeplitz strategy and decoder;
B optional, then derived) or BLT ("kind": "blt", theta, omega, horizon). A JSON file holds
integers or rational strings such as "3/8" (checked exactly) or floats (checked with
--tolerance at the plan's precision); a .npz file holds arrays (checked as floats). The
report: does B·C equal the target, is B causal, the L1 and L2 column sensitivities, the
per-step variance, and the ρ or ε supported at the given noise (or the noise needed for a
given budget). Toeplitz and BLT plans are checked in O(T log T), up to T = 2^20. Exit 1 when
B·C is not the target (with the full report) or when both a budget and a noise level are
given and the noise is too small; a malformed file is one line on stderr and exit code 2."""

MAX_FILE_BYTES = MAX_JSON_BYTES
"""Largest JSON plan file read (64 MiB); a ``.npz`` may have up to
:data:`dpref.planfile.MAX_NPZ_BYTES` (257 MiB: two float64 4096 × 4096 matrices)."""
MAX_ROWS = MAX_DENSE_EXACT
"""Most rows of C and most items T in an exact (rational) dense plan file."""
MAX_FLOAT_ROWS = MAX_DENSE_STEPS
"""Most rows of C and most items T in a float dense plan file."""
MAX_NPZ = MAX_NPZ_BYTES


def add_parser(subparsers: Any) -> None:
    """Add the ``plan`` subcommand (``plan check FILE``)."""
    p = subparsers.add_parser(
        "plan",
        help="check a strategy/decoder factorization file",
        description="Check a factorization of prefix or window sums given as a file: a "
        "strategy C and a decoder B.",
    )
    sub = p.add_subparsers(
        dest="plan_command",
        required=True,
        metavar="COMMAND",
        help="check: check one file; extract: write a target's plan file",
    )
    c = sub.add_parser(
        "check",
        help="is B·C the target, is B causal; sensitivity, variance, the ρ/ε supported",
        description=CHECK_DESCRIPTION,
    )
    c.add_argument("file", help="a .json or .npz plan file (dense, toeplitz or blt)")
    c.add_argument(
        "--target",
        default="prefix",
        help="prefix or window:W (sums of the last W items) (default %(default)s)",
    )
    budget = c.add_mutually_exclusive_group()
    budget.add_argument("--rho", default=None, help="ρ-zCDP wanted: report the σ needed")
    budget.add_argument("--epsilon", default=None, help="ε-DP wanted: report the b needed")
    noise = c.add_mutually_exclusive_group()
    noise.add_argument("--sigma", default=None, help="Gaussian σ per unit row scale")
    noise.add_argument("--scale", default=None, help="Laplace scale b per unit row scale")
    c.add_argument(
        "--tolerance",
        default="1e-9",
        help="tolerance of every comparison of a float plan: absolute for the entries of B·C, "
        "relative for the budget (default %(default)s)",
    )
    c.add_argument("--sensitivity", default="1", help="Δ, one item's sensitivity (default 1)")
    c.add_argument(
        "--precision",
        default=None,
        choices=("float64", "float32"),
        help='the float precision of the plan (default: the file\'s "precision", float32 for '
        "float32 .npz arrays, else float64); comparisons allow its unit roundoff",
    )
    c.add_argument("--json", action="store_true", help="print one JSON object")
    c.set_defaults(func=run)
    from dpref.cli.plan_extract import add_extract_parser

    add_extract_parser(sub)


def run(args: argparse.Namespace) -> int:
    """Check the file and print the report (or one JSON object)."""
    report = check_file(
        args.file,
        target=args.target,
        rho=args.rho,
        epsilon=args.epsilon,
        sigma=args.sigma,
        scale=args.scale,
        tolerance=args.tolerance,
        sensitivity=args.sensitivity,
        precision=args.precision,
    )
    if args.json:
        print(json.dumps(report))
    else:
        print(_text(report))
    failed = report["unbiased"] is not True or report["noise_sufficient"] is False
    return 1 if failed else 0


# ------------------------------------------------------------------ checks
def _error(message: str) -> Exception:
    from dpref.errors import ParameterError

    return ParameterError(message)


def _positive(name: str, text: Any) -> Fraction:
    """A positive exact number in [2^-400, 2^400] (so every float of the report is finite)."""
    from dpref.validation import check_epsilon

    value = check_epsilon(name, text)
    if not Fraction(1, 2**400) <= value <= 2**400:
        raise _error(f"{name}={text!r}: must lie in [2^-400, 2^400]")
    return value


def _parse_target(text: str) -> int | None:
    if text == "prefix":
        return None
    kind, _, w = text.partition(":")
    if kind != "window" or not w.isdigit() or len(w) > 12 or int(w) < 1:
        raise _error(f"target={text!r}: expected prefix or window:W with an integer W >= 1")
    return int(w)


def check_file(
    file: str,
    *,
    target: str = "prefix",
    rho: Any = None,
    epsilon: Any = None,
    sigma: Any = None,
    scale: Any = None,
    tolerance: Any = "1e-9",
    sensitivity: Any = "1",
    precision: str | None = None,
) -> dict[str, Any]:
    """Check a plan file; the report as a JSON-ready dict (see the module docstring).

    Raises :class:`~dpref.errors.ParameterError` naming the first offending entry for a
    malformed file or a non-causal dense decoder.  A product that is not the target is
    reported (``"unbiased": False`` and the first mismatch), not raised.
    """
    from dpref.planfile import read_plan_file
    from dpref.planfile.checks import dense_core, toeplitz_core, unit_roundoff

    window = _parse_target(target)
    tol = _positive("tolerance", tolerance)
    delta = _positive("sensitivity", sensitivity)
    want_rho = None if rho is None else _positive("rho", rho)
    want_eps = None if epsilon is None else _positive("epsilon", epsilon)
    sig = None if sigma is None else _positive("sigma", sigma)
    lap = None if scale is None else _positive("scale", scale)
    if want_rho is not None and lap is not None:
        raise _error(
            f"rho={rho} with scale={scale}: ρ-zCDP is accounted for Gaussian noise (--sigma)"
        )
    if want_eps is not None and sig is not None:
        raise _error(f"epsilon={epsilon} with sigma={sigma}: ε-DP needs Laplace noise (--scale)")
    plan = read_plan_file(file, precision=precision)
    gaussian = not (want_eps is not None or lap is not None)
    if plan.kind == "dense":
        core = dense_core(plan, window, float(tol))
    else:
        core = toeplitz_core(plan, window, float(tol))
    if core["exact"]:
        mode = "exact"
    elif plan.exact:
        mode = f"float (an exact file rounded to float64, tolerance {float(tol):g})"
    else:
        name = "float32" if plan.precision == "float32" else "float"
        mode = f"{name} (tolerance {float(tol):g})"
    report: dict[str, Any] = {
        "file": file,
        "mode": mode,
        "precision": plan.precision,
        **core["report"],
    }
    if not core["exact"]:
        report["tolerance"] = float(tol)
        report["unit_roundoff"] = unit_roundoff(plan)
    report.update(_noise_report(core, gaussian, want_rho, want_eps, sig, lap, tol, delta, plan))
    return report


def _sensitivities(core: dict[str, Any], delta: Fraction) -> dict[str, Any]:
    """Δ-scaled sensitivities: exact Fractions, or (nearest, rigorous upper) floats."""
    if core["exact"]:
        return {"l1": core["l1"] * delta, "l2": core["l2"] * delta**2}
    return {
        "l1": core["l1"] * float(delta),
        "l2": core["l2"] * float(delta) ** 2,
        "l1_upper": Fraction(core["l1_upper"]) * delta,
        "l2_upper": Fraction(core["l2_upper"]) * delta**2,
    }


def _noise_report(
    core: dict[str, Any],
    gaussian: bool,
    want_rho: Fraction | None,
    want_eps: Fraction | None,
    sig: Fraction | None,
    lap: Fraction | None,
    tol: Fraction,
    delta: Fraction,
    plan: Any,
) -> dict[str, Any]:
    """The sensitivities, the budget supported or the noise needed, the variance, and the
    sufficiency verdict.  Exact plans compare exactly.  Float plans compare the rigorous
    upper bound of the sensitivity with the budget widened by the tolerance and by the
    plan's precision (each entry may be off its intended value by a relative u: L1 by u,
    L2² by 2u + u²); ``noise_sufficient_without_tolerance`` says whether it holds without."""
    from dpref.planfile.checks import unit_roundoff

    exact = core["exact"]
    sens = _sensitivities(core, delta)
    l1, l2 = sens["l1"], sens["l2"]
    out: dict[str, Any] = {
        "sensitivity_l1": float(l1),
        "sensitivity_l2_squared": float(l2),
        "noise": "gaussian" if gaussian else "laplace",
    }
    if exact:
        _put_exact(out, "sensitivity_l1_exact", l1)
        _put_exact(out, "sensitivity_l2_squared_exact", l2)
        up1, up2 = l1, l2
    else:
        up1, up2 = sens["l1_upper"], sens["l2_upper"]
        out["sensitivity_l1_upper"] = float(up1)
        out["sensitivity_l2_squared_upper"] = float(up2)
    u = Fraction(unit_roundoff(plan))
    noise_var: Any = None  # the node variance per unit row scale (exact Fraction)
    supported: Any = None
    wanted: Fraction | None = None
    slack = Fraction(0)
    if gaussian:
        wanted = want_rho
        slack = tol + (2 * u + u * u) * Fraction(10001, 10000)
        if sig is not None:
            noise_var = sig * sig
            supported = up2 / (2 * noise_var)
            out["sigma"] = float(sig)
            out["rho_supported"] = (
                float(l2 / (2 * noise_var)) if exact else l2 / (2 * float(noise_var))
            )
            if exact:
                _put_exact(out, "rho_supported_exact", supported)
            else:
                out["rho_supported_upper"] = float(supported)
        elif want_rho is not None:
            noise_var = up2 / (2 * want_rho)
            out["sigma_needed"] = math.sqrt(float(noise_var))
            out["sigma_squared_needed"] = float(noise_var)
            if exact:
                _put_exact(out, "sigma_squared_needed_exact", noise_var)
        if want_rho is not None:
            out["rho"] = float(want_rho)
    else:
        wanted = want_eps
        slack = tol + u * Fraction(10001, 10000)
        if lap is not None:
            noise_var = 2 * lap * lap
            supported = up1 / lap
            out["scale"] = float(lap)
            out["epsilon_supported"] = float(l1 / lap) if exact else l1 / float(lap)
            if exact:
                _put_exact(out, "epsilon_supported_exact", supported)
            else:
                out["epsilon_supported_upper"] = float(supported)
        elif want_eps is not None:
            b = up1 / want_eps
            noise_var = 2 * b * b
            out["scale_needed"] = float(b)
            if exact:
                _put_exact(out, "scale_needed_exact", b)
        if want_eps is not None:
            out["epsilon"] = float(want_eps)
    sufficient: bool | None = None
    if supported is not None and wanted is not None:
        strict = bool(supported <= wanted)
        sufficient = strict if exact else bool(supported <= wanted * (1 + slack))
        if not exact:
            out["noise_sufficient_without_tolerance"] = strict
            out["budget_excess_relative"] = float(supported / wanted - 1)
            out["budget_slack_relative"] = float(slack)
    var = core["var"]
    factor = Fraction(1) if noise_var is None else noise_var
    key = "variance_per_unit_noise_variance" if noise_var is None else "variance"
    if exact:
        out[key] = {
            "max": float(var["max"] * factor),
            "argmax_t": var["argmax_t"],
            "mean": float(var["mean"] * factor),
        }
        _put_exact(out[key], "max_exact", var["max"] * factor)
        _put_exact(out[key], "mean_exact", var["mean"] * factor)
    else:
        f = float(factor)
        out[key] = {"max": var["max"] * f, "argmax_t": var["argmax_t"], "mean": var["mean"] * f}
    out["noise_sufficient"] = sufficient
    return out


EXACT_STRING_BITS = 4000
"""Exact values whose numerator or denominator has more bits are left out of the report
(their float is there)."""


def _put_exact(out: dict[str, Any], key: str, value: Fraction) -> None:
    """``out[key] = "p/q"`` unless p or q is longer than :data:`EXACT_STRING_BITS`."""
    if max(value.numerator.bit_length(), value.denominator.bit_length()) <= EXACT_STRING_BITS:
        out[key] = str(value)


def _text(report: dict[str, Any]) -> str:
    kind = report.get("kind", "dense")
    shape = (
        f"{report['nodes']} rows, T = {report['horizon']}"
        if kind == "dense"
        else f"{kind}, T = {report['horizon']}"
    )
    if report["unbiased"] is True:
        product = "yes"
    elif report["unbiased"] is None:
        product = (
            f"not established ({report['unresolved_entries']} entries within the FFT error "
            "bound of the tolerance)"
        )
    else:
        m = report["mismatch"]
        product = f"NO (B·C[{m['t'] - 1}][{m['i'] - 1}] = {m['got']!r}, the target has {m['want']})"
        product = product.replace("'", "")
    order = "yes" if report["canonical_order_is_row_order"] else "no"
    lines = [f"plan {report['file']} ({report['mode']}): {shape}"]
    if kind == "dense":
        lines.append(
            f"  B·C = {report['target']}: {product}; causal: yes; canonical order = row order: "
            f"{order}"
        )
    else:
        lines.append(
            f"  B·C = {report['target']}: {product}; causal: yes (lower triangular); "
            f"decoder: {report['decoder']}"
        )
    if "max_abs_error" in report and report["unbiased"] is not True:
        lines.append(f"  largest |B·C − target|: {report['max_abs_error']:.6g}")
    lines.append(
        f"  sensitivity: L1 = {report['sensitivity_l1']:.6g}, "
        f"L2² = {report['sensitivity_l2_squared']:.6g}"
    )
    for key, label in (
        ("sigma_needed", "σ needed for ρ"),
        ("scale_needed", "Laplace scale needed for ε"),
        ("rho_supported", "ρ supported at σ"),
        ("epsilon_supported", "ε supported at b"),
    ):
        if key in report:
            lines.append(f"  {label}: {report[key]:.6g}")
    var = report.get("variance") or report.get("variance_per_unit_noise_variance")
    label = "variance" if "variance" in report else "variance per unit node variance"
    assert var is not None
    lines.append(f"  {label}: max {var['max']:.6g} (t = {var['argmax_t']}), mean {var['mean']:.6g}")
    if report["noise_sufficient"] is not None:
        lines.append(f"  noise sufficient: {_sufficiency(report)}")
    return "\n".join(lines)


def _sufficiency(report: dict[str, Any]) -> str:
    """yes / NO, with the digits that explain a float comparison."""
    verdict = "yes" if report["noise_sufficient"] else "NO"
    if "budget_excess_relative" not in report:
        return verdict
    name, key = ("ρ", "rho") if "rho_supported" in report else ("ε", "epsilon")
    upper = report[f"{key}_supported_upper"]
    excess = report["budget_excess_relative"]
    if excess <= 0:
        return verdict
    return (
        f"{verdict} ({name} supported ≤ {upper!r} exceeds {name} = {report[key]!r} by "
        f"{excess:.3g} relative; allowed: {report['budget_slack_relative']:.3g} = tolerance + "
        "the plan's rounding)"
    )
