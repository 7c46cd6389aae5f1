"""Reading and writing plan files (JSON and ``.npz``): :func:`read_plan_file`,
:func:`make_plan` (the same checks on an in-memory object), :func:`write_plan_file`.

Every malformed file is a :class:`~dpref.errors.ParameterError` naming the first offending
entry (the CLI prints it as one line and exits 2)."""

from __future__ import annotations

import json
import math
import zipfile
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

from dpref.errors import ParameterError
from dpref.planfile.model import (
    KINDS,
    MAX_BUFFERS,
    MAX_DENSE_EXACT,
    MAX_DENSE_STEPS,
    MAX_STEPS,
    PRECISIONS,
    FloatArray,
    PlanFile,
)
from dpref.validation import choose_from

MAX_JSON_BYTES = 64 << 20
"""Largest JSON plan file read (64 MiB)."""
MAX_NPZ_BYTES = 2 * MAX_DENSE_STEPS * MAX_DENSE_STEPS * 8 + (1 << 20)
"""Largest ``.npz`` plan file read, and the largest sum of its uncompressed arrays (257 MiB:
two float64 4096 × 4096 matrices and their headers)."""
KEYS = {
    "dense": ("C", "B", "scales"),
    "toeplitz": ("C", "B", "horizon"),
    "blt": ("theta", "omega", "horizon"),
}
"""The data keys of each form (besides ``kind``, ``precision``, ``noise``, ``comment``,
``$schema``)."""
COMMON_KEYS = ("kind", "precision", "noise", "comment", "$schema")
NOISE_LAWS = ("laplace", "gaussian")
"""The noise laws a plan may name (``"noise"``: what ``dpref plan extract`` recorded)."""


def _error(message: str) -> ParameterError:
    return ParameterError(message)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


# ------------------------------------------------------------------ files
def read_plan_file(path: str | Path, *, precision: str | None = None) -> PlanFile:
    """Read and validate a plan file (``.json`` or ``.npz``); see docs/plan-format.md.

    ``precision`` (``"float64"`` or ``"float32"``) overrides the precision a float plan
    declares; it is refused for an exact plan."""
    p = Path(path)
    suffix = p.suffix.lower()
    if suffix not in (".json", ".npz"):
        raise _error(f"file={str(path)!r}: expected a .json or .npz file")
    try:
        size = p.stat().st_size
    except OSError as exc:
        raise _error(f"file={str(path)!r}: cannot read ({exc.strerror})") from None
    cap = MAX_JSON_BYTES if suffix == ".json" else MAX_NPZ_BYTES
    if size > cap:
        raise _error(f"file={str(path)!r}: {size:,} bytes, above {cap:,}")
    doc = _read_json(p) if suffix == ".json" else _read_npz(p)
    return make_plan(doc, source=str(path), precision=precision)


def _read_json(path: Path) -> dict[str, Any]:
    try:
        doc = json.loads(path.read_bytes())
    except (ValueError, RecursionError) as exc:
        why = str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
        raise _error(f"file={str(path)!r}: not valid JSON ({why})") from None
    if not isinstance(doc, dict):
        raise _error(f"file={str(path)!r}: the top level must be an object with keys C and B")
    return doc


def _read_npz(path: Path) -> dict[str, Any]:
    try:
        with zipfile.ZipFile(path) as zf:
            total = sum(info.file_size for info in zf.infolist())
    except (zipfile.BadZipFile, OSError) as exc:
        raise _error(f"file={str(path)!r}: not a valid .npz archive ({exc})") from None
    if total > MAX_NPZ_BYTES:
        raise _error(f"file={str(path)!r}: {total:,} bytes uncompressed, above {MAX_NPZ_BYTES:,}")
    try:
        with np.load(path, allow_pickle=False) as npz:
            out: dict[str, Any] = {k: npz[k] for k in npz.files}
    except (ValueError, OSError, EOFError, zipfile.BadZipFile) as exc:
        why = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else type(exc).__name__
        raise _error(f"file={str(path)!r}: cannot read .npz ({why})") from None
    for key in ("kind", "precision", "noise", "comment"):
        if key in out:
            v = out[key]
            if not (isinstance(v, np.ndarray) and v.dtype.kind == "U" and v.ndim == 0):
                raise _error(f"{key}: must be a string (a 0-d unicode array in a .npz)")
            out[key] = str(v)
    if "horizon" in out:
        v = out["horizon"]
        if not (isinstance(v, np.ndarray) and v.dtype.kind in "iu" and v.ndim == 0):
            raise _error("horizon: must be an integer (a 0-d integer array in a .npz)")
        out["horizon"] = int(v)
    out["__npz__"] = True
    return out


# ------------------------------------------------------------------ parsing
def make_plan(
    doc: dict[str, Any], *, source: str = "<plan>", precision: str | None = None
) -> PlanFile:
    """Validate a plan given as a dict (as :func:`json.load` returns it, or with numpy arrays
    as in a ``.npz``) and build the :class:`PlanFile`."""
    if not isinstance(doc, dict):
        raise _error(f"plan={_short(doc)}: must be an object (a dict) of the plan's keys")
    from_npz = bool(doc.get("__npz__"))
    kind = doc.get("kind", "dense")
    if not isinstance(kind, str) or kind not in KINDS:
        raise _error(f"kind={_short(kind)}: {choose_from(kind, KINDS)}")
    allowed = (*KEYS[kind], *COMMON_KEYS)
    extra = sorted(k for k in doc if k not in allowed and k != "__npz__")
    if extra:
        raise _error(
            f"{extra[0]}=...: {choose_from(extra[0], allowed)} (the keys of kind {kind!r})"
        )
    declared = doc.get("precision")
    if declared is not None and declared not in PRECISIONS:
        raise _error(f"precision={_short(declared)}: {choose_from(declared, PRECISIONS)}")
    if precision is not None and precision not in PRECISIONS:
        raise _error(f"precision={_short(precision)}: {choose_from(precision, PRECISIONS)}")
    comment = doc.get("comment")
    if comment is not None and not isinstance(comment, str):
        raise _error(f"comment={_short(comment)}: must be a string")
    noise = doc.get("noise")
    if noise is not None and noise not in NOISE_LAWS:
        raise _error(f"noise={_short(noise)}: {choose_from(noise, NOISE_LAWS)}")
    data = [doc[k] for k in KEYS[kind] if k in doc]
    exact = not from_npz and not any(_has_float(v) for v in data)
    float32_arrays = from_npz and any(
        isinstance(v, np.ndarray) and v.dtype == np.float32 for v in data
    )
    if exact and (declared is not None or precision is not None):
        raise _error(
            f"precision={precision or declared}: the plan {source!r} is exact (integers and "
            "rational strings); a precision applies to float plans"
        )
    prec: Any = (
        "exact"
        if exact
        else (precision or declared or ("float32" if float32_arrays else "float64"))
    )
    common = {
        "exact": exact,
        "precision": prec,
        "source": source,
        "comment": comment,
        "noise": noise,
    }
    if kind == "dense":
        return _dense(doc, common)
    if kind == "toeplitz":
        return _toeplitz(doc, common)
    return _blt(doc, common)


def _has_float(v: Any) -> bool:
    if isinstance(v, float):
        return True
    if isinstance(v, list):
        return any(_has_float(x) for x in v)
    if isinstance(v, np.ndarray):
        return bool(v.dtype.kind == "f")
    return False


def _dense(doc: dict[str, Any], common: dict[str, Any]) -> PlanFile:
    for key in ("C", "B"):
        if key not in doc:
            raise _error(f"{key}=missing: the file {common['source']!r} has keys {sorted(doc)[:8]}")
    exact = common["exact"]
    C: Any
    B: Any
    if exact:
        C = _matrix_exact("C", doc["C"], MAX_DENSE_EXACT)
        B = _matrix_exact("B", doc["B"], MAX_DENSE_EXACT)
        nodes, horizon, b_shape = len(C), len(C[0]), (len(B), len(B[0]))
        scales: Any = None
        if "scales" in doc:
            raw = doc["scales"]
            if not isinstance(raw, list):
                raise _error(f"scales={_short(raw)}: must be a list")
            scales = _matrix_exact("scales", [raw], MAX_DENSE_EXACT)[0] if raw else []
    else:
        C = _array("C", doc["C"], MAX_DENSE_STEPS, 2)
        B = _array("B", doc["B"], MAX_DENSE_STEPS, 2)
        nodes, horizon = C.shape
        b_shape = B.shape
        scales = None
        if "scales" in doc:
            scales = _array("scales", doc["scales"], MAX_DENSE_STEPS, 1)
    if b_shape != (horizon, nodes):
        raise _error(
            f"B: shape ({b_shape[0]}, {b_shape[1]}), need (T, rows of C) = ({horizon}, {nodes})"
        )
    if scales is not None:
        if len(scales) != nodes:
            raise _error(f"scales: {len(scales)} entries, need one per row of C ({nodes})")
        for n, v in enumerate(scales):
            if v <= 0:
                raise _error(f"scales[{n}]={v}: must be > 0")
    return PlanFile(kind="dense", horizon=horizon, C=C, B=B, scales=scales, **common)


def _toeplitz(doc: dict[str, Any], common: dict[str, Any]) -> PlanFile:
    if "C" not in doc:
        raise _error("C=missing: a toeplitz plan needs C (the strategy's first column)")
    c = _column("C", doc["C"], common["exact"])
    b = None if doc.get("B") is None else _column("B", doc["B"], common["exact"])
    horizon = _horizon(doc, len(c)) if "horizon" in doc else len(c)
    if len(c) > horizon:
        raise _error(f"C: {len(c)} coefficients, above horizon={horizon}")
    if b is not None and len(b) > horizon:
        raise _error(f"B: {len(b)} coefficients, above the horizon T = {horizon}")
    c = _pad(c, horizon, common["exact"])
    b = None if b is None else _pad(b, horizon, common["exact"])
    return PlanFile(kind="toeplitz", horizon=horizon, c=c, b=b, **common)


def _blt(doc: dict[str, Any], common: dict[str, Any]) -> PlanFile:
    for key in ("theta", "omega", "horizon"):
        if key not in doc:
            raise _error(f"{key}=missing: a blt plan needs theta, omega and horizon")
    theta = _column("theta", doc["theta"], common["exact"], MAX_BUFFERS)
    omega = _column("omega", doc["omega"], common["exact"], MAX_BUFFERS)
    if len(omega) != len(theta):
        raise _error(f"omega: {len(omega)} scales for {len(theta)} decays (theta)")
    for i, t in enumerate(theta):
        if not -1 <= t <= 1:
            raise _error(f"theta[{i}]={t}: a buffer decay must lie in [-1, 1]")
    horizon = _horizon(doc, 1)
    return PlanFile(kind="blt", horizon=horizon, theta=theta, omega=omega, **common)


def _horizon(doc: dict[str, Any], least: int) -> int:
    h = doc["horizon"]
    if isinstance(h, bool) or not isinstance(h, int) or not max(1, least) <= h <= MAX_STEPS:
        raise _error(f"horizon={_short(h)}: must be an integer in [{max(1, least)}, {MAX_STEPS}]")
    return h


def _pad(values: Any, n: int, exact: bool) -> Any:
    if len(values) == n:
        return values
    if exact:
        return [*values, *([Fraction(0)] * (n - len(values)))]
    return np.concatenate([values, np.zeros(n - len(values))])


def _column(name: str, value: Any, exact: bool, limit: int = MAX_STEPS) -> Any:
    if exact:
        if not isinstance(value, list) or not value:
            raise _error(f"{name}={_short(value)}: must be a non-empty list of numbers")
        if len(value) > limit:
            raise _error(f"{name}: {len(value)} entries, above the limit {limit}")
        return _row_exact(name, value)
    arr = _array(name, value, limit, 1)
    return arr


def _row_exact(name: str, row: list[Any], prefix: str = "") -> list[Fraction]:
    from dpref.validation import check_fraction

    vals = []
    for i, v in enumerate(row):
        if isinstance(v, bool) or not isinstance(v, int | str):
            raise _error(
                f"{name}{prefix}[{i}]={_short(v)}: must be an integer or a rational string"
            )
        vals.append(check_fraction(f"{name}{prefix}[{i}]", v))
    return vals


def _matrix_exact(name: str, value: Any, limit: int) -> list[list[Fraction]]:
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
        out.append(_row_exact(name, row, f"[{r}]"))
    return out


def _array(name: str, value: Any, limit: int, ndim: int) -> FloatArray:
    """A finite float64 array of ``ndim`` dimensions (JSON lists, with rational strings and
    integers rounded to the nearest float, or a numpy array of reals)."""
    if isinstance(value, list) and _plain_numbers(value, ndim):
        _check_ragged(name, value, ndim)
        try:
            arr = np.array(value, dtype=np.float64)
        except OverflowError:
            arr = np.array(_to_floats(name, value), dtype=np.float64)
    elif isinstance(value, list):
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
        arr = value.astype(np.float64, copy=False)
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


def _plain_numbers(value: list[Any], ndim: int) -> bool:
    """Whether a (list of) list(s) holds only floats and ints (the fast path: no walk)."""
    rows = value if ndim == 2 else [value]
    if ndim == 2 and not all(type(r) is list for r in rows):
        return False
    kinds: set[type] = set()
    for r in rows:
        kinds.update(map(type, r))
    return kinds <= {float, int}


def _check_ragged(name: str, value: Any, ndim: int) -> None:
    if ndim == 1:
        if any(isinstance(v, list) for v in value):
            raise _error(f"{name}: must be a flat list of numbers")
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
    """Nested lists with rational strings and integers converted to the nearest floats (an
    unparsable string or an integer too large for a float is named by its index)."""
    from dpref.validation import check_fraction

    if isinstance(value, list):
        return [_to_floats(name, v, f"{idx}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, str | int):
        try:
            return float(check_fraction(f"{name}{idx}", value))
        except OverflowError:
            raise _error(f"{name}{idx}={_short(value)}: too large for a float") from None
    return value


# ------------------------------------------------------------------ writing
def write_plan_file(path: str | Path, plan: PlanFile) -> None:
    """Write ``plan`` as JSON (floats by their shortest exact repr, Fractions as ``"p/q"``
    strings) or ``.npz`` (float arrays; an exact plan's entries rounded to float64)."""
    p = Path(path)
    doc = plan_document(plan)
    if p.suffix.lower() == ".json":
        p.write_text(json.dumps(doc))
        return
    if p.suffix.lower() != ".npz":
        raise _error(f"path={str(path)!r}: expected a .json or .npz file")
    arrays: dict[str, Any] = {}
    for key, value in doc.items():
        if key in ("kind", "precision", "noise", "comment"):
            arrays[key] = np.array(value)
        elif key == "horizon":
            arrays[key] = np.array(value, dtype=np.int64)
        else:
            arrays[key] = np.array(_to_floats(key, value), dtype=np.float64)
    np.savez(p, **arrays)


def plan_document(plan: PlanFile) -> dict[str, Any]:
    """The JSON object of a plan (the inverse of :func:`make_plan`)."""
    doc: dict[str, Any] = {"kind": plan.kind}
    if plan.kind == "dense":
        doc["C"] = _json_value(plan.C)
        doc["B"] = _json_value(plan.B)
        if plan.scales is not None:
            doc["scales"] = _json_value(plan.scales)
    elif plan.kind == "toeplitz":
        doc["C"] = _json_value(plan.c)
        if plan.b is not None:
            doc["B"] = _json_value(plan.b)
    else:
        doc["theta"] = _json_value(plan.theta)
        doc["omega"] = _json_value(plan.omega)
        doc["horizon"] = plan.horizon
    if not plan.exact:
        doc["precision"] = plan.precision
    if plan.noise is not None:
        doc["noise"] = plan.noise
    if plan.comment is not None:
        doc["comment"] = plan.comment
    return doc


def _json_value(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, list | tuple):
        return [_json_value(v) for v in value]
    if isinstance(value, Fraction):
        return value.numerator if value.denominator == 1 else str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise _error(f"value={value}: must be finite")
        return value
    return value
