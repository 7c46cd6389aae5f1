"""``dpref plan check FILE``: check someone else's factorization (docs/factorization.md).

The file holds a strategy ``C`` (rows = noise nodes, columns = items 1..T), a decoder ``B``
(T × rows of C) and optionally per-row relative noise scales ``scales`` (node n gets noise
of standard deviation ``σ·scales[n]``, or Laplace scale ``b·scales[n]``; default 1), as

* JSON: ``{"C": [[...], ...], "B": [[...], ...], "scales": [...]}`` with integers or
  rational strings (``"3/8"``) — checked exactly — or floats (any float in the file puts
  the whole file in float mode, checked with ``--tolerance``);
* ``.npz``: arrays ``C``, ``B`` (and ``scales``) of real numbers (float mode).

The report: does ``B·C`` equal the target (prefix sums or windows), is B causal (row n of
C is released at its last nonzero column; output t may use only rows released by t), the
L1 and L2 column sensitivities under single participation (event level, Δ =
``--sensitivity``), the per-step variance (max and mean) and the ρ (Gaussian, ``--sigma``)
or ε (Laplace, ``--scale``) the plan supports at the given noise, or the noise it needs for
a given ``--rho``/``--epsilon``.  A malformed file — wrong shapes, non-finite entries, a
non-causal decoder, a product that is not the target, bad JSON, missing keys, a file over
:data:`MAX_FILE_BYTES` — is one line on stderr naming the first offending entry, exit 2.
Exit 1: both a budget and a noise level were given and the noise is too small.
"""

from __future__ import annotations

import argparse
import json
import math
import zipfile
from fractions import Fraction
from pathlib import Path
from typing import Any

__all__ = ["MAX_FILE_BYTES", "MAX_ROWS", "add_parser", "check_file", "run"]

CHECK_DESCRIPTION = """\
Check a factorization file: a strategy C (rows are noise nodes, columns the items 1..T), a
decoder B (T rows, one column per row of C) and optional per-row noise scales. A JSON file
holds integers or rational strings such as "3/8" (checked exactly) or floats (checked with
--tolerance); a .npz file holds arrays C, B and scales (checked as floats). The report: does
B·C equal the target, is B causal, the L1 and L2 column sensitivities, the per-step variance,
and the ρ or ε supported at the given noise (or the noise needed for a given budget). A
malformed file is one line on stderr and exit code 2; exit 1 when both a budget and a noise
level are given and the noise is too small. With --participations K --min-separation B the
sensitivities are for (k, b)-participation (docs/factorization.md, "Participation")."""

MAX_FILE_BYTES = 64 << 20
"""Largest plan file read (64 MiB; for ``.npz``, also the sum of its uncompressed arrays)."""
MAX_ROWS = 1024
"""Most rows of C and most items T in an exact (rational) plan file."""
MAX_FLOAT_ROWS = 4096
"""Most rows of C and most items T in a float plan file."""


def add_parser(subparsers: Any) -> None:
    """Add the ``plan`` subcommand (``plan check FILE``)."""
    p = subparsers.add_parser(
        "plan",
        help="check a strategy/decoder factorization file",
        description="Check a factorization of prefix or window sums given as a file: a "
        "strategy C and a decoder B.",
    )
    sub = p.add_subparsers(
        dest="plan_command", required=True, metavar="COMMAND", help="check: check one file"
    )
    c = sub.add_parser(
        "check",
        help="is B·C the target, is B causal; sensitivity, variance, the ρ/ε supported",
        description=CHECK_DESCRIPTION,
    )
    c.add_argument("file", help="a .json or .npz file with C, B (and optional scales)")
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
        help="absolute tolerance of the checks of a float file (default %(default)s)",
    )
    c.add_argument("--sensitivity", default="1", help="Δ, one item's sensitivity (default 1)")
    c.add_argument(
        "--participations",
        default=None,
        type=int,
        help="k: a user contributes at most k times (default 1)",
    )
    c.add_argument(
        "--min-separation",
        default=None,
        type=int,
        help="b: contributions at least b steps apart (default 1)",
    )
    c.add_argument("--json", action="store_true", help="print one JSON object")
    c.set_defaults(func=run)


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
        participations=args.participations,
        min_separation=args.min_separation,
    )
    if args.json:
        print(json.dumps(report))
    else:
        print(_text(report))
    return 0 if report["noise_sufficient"] is not False else 1


# ------------------------------------------------------------------ parsing
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


def _read_json(path: Path) -> tuple[dict[str, Any], bool]:
    try:
        doc = json.loads(path.read_bytes())
    except (ValueError, RecursionError) as exc:
        why = str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
        raise _error(f"file={str(path)!r}: not valid JSON ({why})") from None
    if not isinstance(doc, dict):
        raise _error(f"file={str(path)!r}: the top level must be an object with keys C and B")
    exact = True

    def scan(v: Any) -> None:
        nonlocal exact
        if isinstance(v, list):
            for x in v:
                scan(x)
        elif isinstance(v, float):
            exact = False

    for key in ("C", "B", "scales"):
        if key in doc:
            scan(doc[key])
    return doc, exact


def _read_npz(path: Path) -> dict[str, Any]:
    import numpy as np

    try:
        with zipfile.ZipFile(path) as zf:
            total = sum(info.file_size for info in zf.infolist())
    except (zipfile.BadZipFile, OSError) as exc:
        raise _error(f"file={str(path)!r}: not a valid .npz archive ({exc})") from None
    if total > MAX_FILE_BYTES:
        raise _error(f"file={str(path)!r}: {total:,} bytes uncompressed, above {MAX_FILE_BYTES:,}")
    try:
        with np.load(path, allow_pickle=False) as npz:
            return {k: npz[k] for k in npz.files}
    except (ValueError, OSError, EOFError, zipfile.BadZipFile) as exc:
        why = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else type(exc).__name__
        raise _error(f"file={str(path)!r}: cannot read .npz ({why})") from None


def _matrix_exact(name: str, value: Any, limit: int) -> list[list[Fraction]]:
    from dpref.validation import check_fraction

    if not isinstance(value, list) or not value:
        raise _error(f"{name}={_short(value)}: must be a non-empty list of rows")
    if len(value) > limit:
        raise _error(f"{name}: {len(value)} rows, above the limit {limit}")
    out = []
    width = None
    for r, row in enumerate(value):
        if not isinstance(row, list) or not row:
            raise _error(f"{name}[{r}]={_short(row)}: must be a non-empty list")
        if width is None:
            width = len(row)
            if width > limit:
                raise _error(f"{name}[0]: {width} entries, above the limit {limit}")
        elif len(row) != width:
            raise _error(f"{name}[{r}]: {len(row)} entries, row 0 has {width}")
        vals = []
        for i, v in enumerate(row):
            if isinstance(v, bool) or not isinstance(v, int | str):
                raise _error(
                    f"{name}[{r}][{i}]={_short(v)}: must be an integer or a rational string"
                )
            vals.append(check_fraction(f"{name}[{r}][{i}]", v))
        out.append(vals)
    return out


def _matrix_float(name: str, value: Any, limit: int, ndim: int = 2) -> Any:
    import numpy as np

    if isinstance(value, list):
        _check_ragged(name, value, ndim)
        for idx, v in _walk(value):
            if isinstance(v, bool) or not isinstance(v, int | float | str):
                raise _error(f"{name}{idx}={_short(v)}: must be a number")
        try:
            arr = np.array(_to_floats(name, value), dtype=np.float64)
        except (ValueError, OverflowError) as exc:
            raise _error(f"{name}: not an array of numbers ({exc})") from None
    elif isinstance(value, np.ndarray):
        if value.dtype.kind not in "biuf":
            raise _error(f"{name}: dtype {value.dtype} is not real numbers")
        arr = value.astype(np.float64)
    else:
        raise _error(f"{name}={_short(value)}: must be an array")
    if arr.ndim != ndim or arr.size == 0:
        raise _error(f"{name}: shape {arr.shape}, need a non-empty {ndim}-d array")
    if max(arr.shape) > limit:
        raise _error(f"{name}: shape {arr.shape}, above the limit {limit}")
    bad = np.argwhere(~np.isfinite(arr))
    if bad.size:
        idx = "".join(f"[{int(i)}]" for i in bad[0])
        raise _error(f"{name}{idx}={arr[tuple(bad[0])]}: must be finite")
    return arr


def _check_ragged(name: str, value: Any, ndim: int) -> None:
    if ndim == 1:
        return
    if not value or not all(isinstance(r, list) for r in value):
        raise _error(f"{name}={_short(value)}: must be a non-empty list of rows")
    width = len(value[0])
    for r, row in enumerate(value):
        if len(row) != width:
            raise _error(f"{name}[{r}]: {len(row)} entries, row 0 has {width}")


def _walk(value: Any, prefix: str = "") -> Any:
    if isinstance(value, list):
        for i, v in enumerate(value):
            yield from _walk(v, f"{prefix}[{i}]")
    else:
        yield prefix, value


def _to_floats(name: str, value: Any, idx: str = "") -> Any:
    """Nested lists with rational strings converted to floats (an unparsable string or an
    integer too large for a float is named by its index)."""
    from dpref.validation import check_fraction

    if isinstance(value, list):
        return [_to_floats(name, v, f"{idx}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, str | int):
        try:
            return float(check_fraction(f"{name}{idx}", value))
        except OverflowError:
            raise _error(f"{name}{idx}={_short(value)}: too large for a float") from None
    return value


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


# ------------------------------------------------------------------ checks
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
    participations: Any = None,
    min_separation: Any = None,
) -> dict[str, Any]:
    """Check a plan file; the report as a JSON-ready dict (see the module docstring).

    Raises :class:`~dpref.errors.ParameterError` naming the first offending entry for a
    malformed file, a non-causal decoder or a product that is not the target.
    """
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
    path = Path(file)
    suffix = path.suffix.lower()
    if suffix not in (".json", ".npz"):
        raise _error(f"file={file!r}: expected a .json or .npz file")
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise _error(f"file={file!r}: cannot read ({exc.strerror})") from None
    if size > MAX_FILE_BYTES:
        raise _error(f"file={file!r}: {size:,} bytes, above {MAX_FILE_BYTES:,}")
    if suffix == ".json":
        doc, exact = _read_json(path)
    else:
        doc, exact = _read_npz(path), False
    for key in ("C", "B"):
        if key not in doc:
            raise _error(f"{key}=missing: the file {file!r} has keys {sorted(doc)[:8]}")
    extra = sorted(set(doc) - {"C", "B", "scales", "comment"})
    if extra:
        raise _error(f"{extra[0]}=...: unknown key (expected C, B, scales, comment)")
    gaussian = not (want_eps is not None or lap is not None)
    if exact:
        core = _exact_core(doc, window, delta)
    else:
        core = _float_core(doc, window, float(tol), float(delta))
    report: dict[str, Any] = {
        "file": file,
        "mode": "exact" if exact else f"float (tolerance {float(tol):g})",
        **core["report"],
    }
    if (
        participations is not None or min_separation is not None
    ):  # dpref.strategy.participation_report
        from dpref.strategy.participation_report import plan_participation

        part = plan_participation(
            doc["C"],
            doc.get("scales"),
            participations=participations,
            min_separation=min_separation,
            delta=delta,
            exact=exact,
        )
        core["l1"], core["l2"] = part.pop("core")
        report["participation"] = part
    report.update(_noise_report(core, gaussian, want_rho, want_eps, sig, lap))
    return report


def _shape_checks(nodes: int, horizon: int, b_rows: int, b_cols: int, n_scales: int | None) -> None:
    if b_rows != horizon or b_cols != nodes:
        raise _error(f"B: shape ({b_rows}, {b_cols}), need (T, rows of C) = ({horizon}, {nodes})")
    if n_scales is not None and n_scales != nodes:
        raise _error(f"scales: {n_scales} entries, need one per row of C ({nodes})")


def _exact_core(doc: dict[str, Any], window: int | None, delta: Fraction) -> dict[str, Any]:
    from dpref.strategy import dense_mismatch

    C = _matrix_exact("C", doc["C"], MAX_ROWS)
    B = _matrix_exact("B", doc["B"], MAX_ROWS)
    nodes, horizon = len(C), len(C[0])
    scales: list[Fraction] | None = None
    if "scales" in doc:
        raw = doc["scales"]
        if not isinstance(raw, list):
            raise _error(f"scales={_short(raw)}: must be a list")
        scales = _matrix_exact("scales", [raw], MAX_ROWS)[0] if raw else []
    _shape_checks(nodes, horizon, len(B), len(B[0]), None if scales is None else len(scales))
    s = scales or [Fraction(1)] * nodes
    for n, v in enumerate(s):
        if v <= 0:
            raise _error(f"scales[{n}]={v}: must be > 0")
    release = _release_exact(C)
    _causal(B, release, lambda v: v != 0)
    found = dense_mismatch(B, C, window)
    if found is not None:
        t, i, got, want = found
        raise _error(
            f"B·C[{t - 1}][{i - 1}]={got}: the target ({_target_name(window)}) has {want} "
            f"(output t={t}, item i={i})"
        )
    l1 = max(sum((abs(C[n][i]) / s[n] for n in range(nodes)), Fraction(0)) for i in range(horizon))
    l2 = max(
        sum((C[n][i] ** 2 / s[n] ** 2 for n in range(nodes)), Fraction(0)) for i in range(horizon)
    )
    var_unit = [
        sum((B[t][n] ** 2 * s[n] ** 2 for n in range(nodes)), Fraction(0)) for t in range(horizon)
    ]
    return {
        "l1": l1 * delta,
        "l2": l2 * delta**2,
        "var_unit": var_unit,
        "exact": True,
        "report": _core_report(nodes, horizon, window, release, True),
    }


def _release_exact(C: list[list[Fraction]]) -> list[int]:
    out = []
    for row in C:
        last = 0
        for i in range(len(row) - 1, -1, -1):
            if row[i] != 0:
                last = i
                break
        out.append(last + 1)
    return out


def _causal(B: Any, release: list[int], nonzero: Any) -> None:
    for t, row in enumerate(B, 1):
        for n, v in enumerate(row):
            if release[n] > t and nonzero(v):
                raise _error(
                    f"B[{t - 1}][{n}]={v}: output t={t} uses row {n} of C, released at "
                    f"t={release[n]} (B is not causal)"
                )


def _target_name(window: int | None) -> str:
    return "prefix sums" if window is None else f"windows of {window}"


def _core_report(
    nodes: int, horizon: int, window: int | None, release: list[int], exact: bool
) -> dict[str, Any]:
    order = sorted(range(nodes), key=lambda n: (release[n], n))
    return {
        "nodes": nodes,
        "horizon": horizon,
        "target": _target_name(window),
        "unbiased": True,
        "causal": True,
        "canonical_order_is_row_order": order == list(range(nodes)),
    }


def _float_core(
    doc: dict[str, Any], window: int | None, tol: float, delta: float
) -> dict[str, Any]:
    import numpy as np

    C = _matrix_float("C", doc["C"], MAX_FLOAT_ROWS)
    B = _matrix_float("B", doc["B"], MAX_FLOAT_ROWS)
    nodes, horizon = C.shape
    scales = None
    if "scales" in doc:
        scales = _matrix_float("scales", doc["scales"], MAX_FLOAT_ROWS, ndim=1)
    _shape_checks(nodes, horizon, B.shape[0], B.shape[1], None if scales is None else scales.size)
    s = np.ones(nodes) if scales is None else scales
    bad = np.flatnonzero(s <= 0)
    if bad.size:
        raise _error(f"scales[{int(bad[0])}]={s[bad[0]]}: must be > 0")
    big = np.abs(C) > tol
    release = [int(np.flatnonzero(big[n])[-1]) + 1 if big[n].any() else 1 for n in range(nodes)]
    rel = np.array(release)
    t_idx = np.arange(1, horizon + 1)[:, None]
    noncausal = (np.abs(B) > tol) & (rel[None, :] > t_idx)
    if noncausal.any():
        t, n = (int(v) for v in np.argwhere(noncausal)[0])
        raise _error(
            f"B[{t}][{n}]={float(B[t, n])!r}: output t={t + 1} uses row {n} of C, released at "
            f"t={release[n]} (B is not causal; |entries| <= {tol:g} count as zero)"
        )
    prod = B @ C
    i_idx = np.arange(1, horizon + 1)[None, :]
    w = horizon if window is None else window
    q = ((i_idx <= t_idx) & (i_idx > t_idx - w)).astype(np.float64)
    err = np.abs(prod - q)
    if err.max() > tol:
        t, i = (int(v) for v in np.argwhere(err > tol)[0])
        raise _error(
            f"B·C[{t}][{i}]={float(prod[t, i])!r}: the target ({_target_name(window)}) has "
            f"{q[t, i]:g}, "
            f"off by {err[t, i]:.3g} > tolerance {tol:g}"
        )
    l1 = float(np.max(np.sum(np.abs(C) / s[:, None], axis=0))) * delta
    l2 = float(np.max(np.sum(C**2 / s[:, None] ** 2, axis=0))) * delta**2
    var_unit = list((B**2 @ s**2).tolist())
    report = _core_report(nodes, horizon, window, release, False)
    report["max_abs_error"] = float(err.max())
    return {"l1": l1, "l2": l2, "var_unit": var_unit, "exact": False, "report": report}


def _num(v: Any) -> Any:
    """A JSON value for a number: a float, and the exact string beside it when exact."""
    return float(v)


def _noise_report(
    core: dict[str, Any],
    gaussian: bool,
    want_rho: Fraction | None,
    want_eps: Fraction | None,
    sig: Fraction | None,
    lap: Fraction | None,
) -> dict[str, Any]:
    exact = core["exact"]
    l1, l2 = core["l1"], core["l2"]
    var_unit = core["var_unit"]  # Σ_n B_tn² s_n²: variance per unit noise variance
    out: dict[str, Any] = {
        "sensitivity_l1": float(l1),
        "sensitivity_l2_squared": float(l2),
        "noise": "gaussian" if gaussian else "laplace",
    }
    if exact:
        out["sensitivity_l1_exact"] = str(l1)
        out["sensitivity_l2_squared_exact"] = str(l2)
    noise_var: Any = None  # the node variance per unit row scale
    sufficient: bool | None = None
    if gaussian:
        if sig is not None:
            noise_var = sig * sig if exact else float(sig) ** 2
            supported = l2 / (2 * noise_var)
            out["sigma"] = float(sig)
            out["rho_supported"] = float(supported)
            if exact:
                out["rho_supported_exact"] = str(supported)
            if want_rho is not None:
                sufficient = bool(supported <= (want_rho if exact else float(want_rho)))
        elif want_rho is not None:
            noise_var = l2 / (2 * want_rho) if exact else l2 / (2 * float(want_rho))
            out["sigma_needed"] = math.sqrt(float(noise_var))
            out["sigma_squared_needed"] = float(noise_var)
            if exact:
                out["sigma_squared_needed_exact"] = str(noise_var)
        if want_rho is not None:
            out["rho"] = float(want_rho)
    else:
        if lap is not None:
            noise_var = 2 * lap * lap if exact else 2 * float(lap) ** 2
            supported = l1 / lap if exact else l1 / float(lap)
            out["scale"] = float(lap)
            out["epsilon_supported"] = float(supported)
            if exact:
                out["epsilon_supported_exact"] = str(supported)
            if want_eps is not None:
                sufficient = bool(supported <= (want_eps if exact else float(want_eps)))
        elif want_eps is not None:
            b = l1 / want_eps if exact else l1 / float(want_eps)
            noise_var = 2 * b * b
            out["scale_needed"] = float(b)
            if exact:
                out["scale_needed_exact"] = str(b)
        if want_eps is not None:
            out["epsilon"] = float(want_eps)
    if noise_var is None:
        out["variance_per_unit_noise_variance"] = _var_summary(var_unit, 1, exact)
    else:
        out["variance"] = _var_summary(var_unit, noise_var, exact)
    out["noise_sufficient"] = sufficient
    return out


def _var_summary(var_unit: list[Any], factor: Any, exact: bool) -> dict[str, Any]:
    vals = [v * factor for v in var_unit]
    best = max(range(len(vals)), key=lambda t: vals[t])
    total = sum(vals, Fraction(0)) if exact else math.fsum(vals)
    out: dict[str, Any] = {
        "max": float(vals[best]),
        "argmax_t": best + 1,
        "mean": float(total / len(vals)),
    }
    if exact:
        out["max_exact"] = str(vals[best])
        out["mean_exact"] = str(total / len(vals))
    return out


def _text(report: dict[str, Any]) -> str:
    from dpref.strategy.participation_report import participation_lines

    lines = [
        f"plan {report['file']} ({report['mode']}): {report['nodes']} rows, "
        f"T = {report['horizon']}",
        f"  B·C = {report['target']}: yes; causal: yes; "
        f"canonical order = row order: {'yes' if report['canonical_order_is_row_order'] else 'no'}",
        f"  sensitivity: L1 = {report['sensitivity_l1']:.6g}, "
        f"L2² = {report['sensitivity_l2_squared']:.6g}",
    ]
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
    lines.extend(participation_lines(report))
    if report["noise_sufficient"] is not None:
        lines.append(f"  noise sufficient: {'yes' if report['noise_sufficient'] else 'NO'}")
    return "\n".join(lines)
