"""``dpref golden run``: a third-party implementation against the golden vectors.

The implementation under test accepts injected node noise: for each selected vector it
gets the stream and the node noise (canonical order, already scaled) and returns its T
outputs, which are compared with the vector's — bit for bit when the vector is
``exact_in_float``, else within ``atol + rtol·|exact|`` of the exact rational output.

Two kinds of target:

* a Python callable ``f(stream, noise) -> outputs`` named ``module:function`` or
  ``path/to/file.py:function``, imported and called only in a worker process, as audit
  targets are (:mod:`dpref.audit.isolation.worker`): its exceptions, hangs (``timeout``), exits,
  outputs of the wrong shape or type and non-finite outputs are findings, never a dpref
  traceback.  A callable that sets ``f.dpref_golden = "vector"`` is called
  ``f(stream, noise, config)`` with the vector's configuration (:data:`CONFIG_KEYS`), so
  one function can serve every parameterisation;
* an external program (``command``), run once per vector: it reads the vector as JSON
  on stdin (without its expected outputs) and writes its outputs as a JSON array of
  numbers (or an object with an ``outputs`` array) on stdout.

``precision="float32"`` judges an implementation that computes in float32: no vector
need match bit for bit, and output t must be within the rigorous float32 bound
:func:`float32_bound` of the exact output instead of ``rtol``/``atol`` — the error of
evaluating ``y = R·(A·x + z)`` in float32 (any summation order), inflated as the exact
audit's error model is (:mod:`dpref.audit.injected.rounding`).  The report says which tolerance
was used.  (A golden run injects the noise already scaled, so it cannot see a wrong
noise scale; ``dpref audit --exact`` and ``dpref conform`` do.)
"""

from __future__ import annotations

import fnmatch
import json
import math
import shlex
import shutil
import signal
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt

from dpref.audit.isolation import protocol as P
from dpref.audit.isolation import sandbox
from dpref.audit.isolation.supervisor import Worker, WorkerDied
from dpref.audit.isolation.targets import DEFAULT_MEMORY_LIMIT, LOAD_TIMEOUT, MAX_TIMEOUTS, Finding
from dpref.audit.isolation.worker import check_spec
from dpref.audit.limits import MAX_TIMEOUT
from dpref.errors import DprefError, DprefTypeError, ParameterError, TargetError
from dpref.golden import _MALFORMED, _check_format, load_shipped, vector_mechanism
from dpref.validation import check_choice, fmt

__all__ = [
    "CONFIG_KEYS",
    "DEFAULT_ATOL",
    "DEFAULT_RTOL",
    "DEFAULT_TIMEOUT",
    "GOLDEN_PRECISIONS",
    "GoldenRun",
    "Mismatch",
    "command_input",
    "float32_bound",
    "mismatch_hint",
    "run_golden",
    "select_vectors",
    "vector_config",
]

FloatArray = npt.NDArray[np.float64]

DEFAULT_RTOL = 1e-12
"""Relative tolerance for vectors that are not ``exact_in_float``."""
DEFAULT_ATOL = 1e-9
"""Absolute tolerance added to it (an output near 0 has no relative precision)."""
GOLDEN_PRECISIONS = ("float64", "float32")
"""The tolerance presets of :func:`run_golden` (``dpref golden run --precision``)."""
DEFAULT_TIMEOUT = 10.0
"""Seconds one call (one vector) may take."""
MAX_DEATHS = 10
"""Consecutive worker deaths after which the target is not called again."""
CONFIG_KEYS = ("case", "mechanism", "parameters", "epsilon", "rho", "noise_kind", "horizon")
"""The fields of a vector a ``dpref_golden = "vector"`` target receives as ``config``."""
_EXPECTED = ("outputs", "outputs_exact")
"""Fields an external command is not given (the answers)."""
_MAX_STDOUT = 16 << 20


@dataclass(frozen=True)
class Mismatch:
    """The first wrong output of one vector."""

    case: str
    """The vector's name."""
    step: int
    """The step t (1-indexed) of the first wrong output."""
    expected: float
    """The vector's output at t (its float)."""
    expected_exact: str
    """The exact rational output at t."""
    got: float
    """What the target returned at t."""
    rule: str
    """The comparison: ``bit-exact`` or ``rtol=…, atol=…``."""
    hint: str = ""
    """What the wrong outputs look like (a permuted or rescaled noise), when recognised."""
    wrong_steps: int = 1
    """How many of the T outputs are wrong."""

    def as_dict(self) -> dict[str, Any]:
        """JSON-friendly dict."""
        return {
            "case": self.case,
            "step": self.step,
            "expected": self.expected,
            "expected_exact": self.expected_exact,
            "got": self.got,
            "rule": self.rule,
            "hint": self.hint,
            "wrong_steps": self.wrong_steps,
        }

    def __str__(self) -> str:
        text = (
            f"{self.case}: step t={self.step}: expected {self.expected!r} "
            f"(exact {self.expected_exact}), got {self.got!r} ({self.rule}; "
            f"{self.wrong_steps} wrong step{'s' if self.wrong_steps != 1 else ''})"
        )
        return text + (f"\n  hint: {self.hint}" if self.hint else "")


@dataclass
class GoldenRun:
    """The outcome of :func:`run_golden`."""

    target: str
    """The target's name (spec or command)."""
    vectors: int = 0
    """Vectors selected."""
    passed: int = 0
    """Vectors whose outputs all matched."""
    failures: list[tuple[str, Mismatch | Finding]] = field(default_factory=list)
    """Per failing vector, in file order: its case and its first mismatch or finding."""
    not_run: int = 0
    """Vectors not run because the target was given up on."""
    gave_up: Finding | None = None
    """Why the target was not called again (it died or timed out too often in a row)."""
    isolation: str | None = None
    """Where the target ran (:data:`dpref.audit.isolation.sandbox.LEVELS`; None: it never
    started)."""
    tolerance: str = ""
    """The comparison used, in words (the precision preset and its rule)."""
    precision: str = "float64"
    """The tolerance preset: ``float64`` (rtol/atol, bit-exact where the vector is
    ``exact_in_float``) or ``float32`` (:func:`float32_bound`)."""

    @property
    def ok(self) -> bool:
        """Every selected vector matched."""
        return not self.failures and self.passed == self.vectors

    @property
    def mismatches(self) -> list[Mismatch]:
        """The failures that are wrong outputs."""
        return [f for _, f in self.failures if isinstance(f, Mismatch)]

    @property
    def findings(self) -> list[tuple[str, Finding]]:
        """The failures that are findings (the target failed to answer)."""
        return [(c, f) for c, f in self.failures if isinstance(f, Finding)]

    def as_dict(self) -> dict[str, Any]:
        """JSON-friendly dict (at most 100 failures listed)."""

        def one(case: str, f: Mismatch | Finding) -> dict[str, Any]:
            if isinstance(f, Mismatch):
                return {"type": "mismatch", **f.as_dict()}
            return {"type": "finding", "case": case, **f.as_dict()}

        return {
            "target": self.target,
            "vectors": self.vectors,
            "passed": self.passed,
            "failed": len(self.failures),
            "not_run": self.not_run,
            "gave_up": None if self.gave_up is None else self.gave_up.as_dict(),
            "ok": self.ok,
            "first": one(*self.failures[0]) if self.failures else None,
            "failures": [one(c, f) for c, f in self.failures[:100]],
            "isolation": self.isolation,
            "precision": self.precision,
            "tolerance": self.tolerance,
        }

    def text(self) -> str:
        """The human report: the first failure, then the counts."""
        lines = []
        if self.failures:
            case, f = self.failures[0]
            lines.append(f"first failure: {f}" if isinstance(f, Mismatch) else f"{case}: {f}")
        if self.ok:
            lines.append(f"{self.passed} of {self.vectors} golden vectors match")
        else:
            n_f = len(self.findings)
            lines.append(
                f"{len(self.failures)} of {self.vectors} golden vectors fail "
                f"({len(self.mismatches)} mismatch{'es' if len(self.mismatches) != 1 else ''}, "
                f"{n_f} finding{'s' if n_f != 1 else ''})"
            )
        if self.gave_up is not None:
            lines.append(f"{self.gave_up.kind}: {self.gave_up.detail}")
        if self.precision != "float64":
            lines.append(f"tolerance: {self.tolerance}")
        return "\n".join(lines)


# ------------------------------------------------------------------ selection
def _matches(vec: dict[str, Any], key: str, want: str) -> bool:
    if key in ("epsilon", "rho", "horizon", "noise_kind"):
        got = vec.get(key)
    else:
        got = vec["parameters"].get(key)
    return got is not None and str(got) == want


def select_vectors(
    doc: dict[str, Any],
    *,
    mechanism: str | None = None,
    noise: str | None = None,
    case: str | None = None,
    params: Mapping[str, str] | None = None,
) -> list[dict[str, Any]]:
    """The vectors of ``doc`` a target implements: of ``mechanism``, with noise kind
    ``noise``, whose case name matches the glob ``case`` (``*`` and ``?``; brackets are
    literal, as in ``binary[T=16]*``), and whose parameters (or
    ``epsilon``, ``rho``, ``horizon``) equal ``params``' values (compared as strings).

    Raises :class:`~dpref.errors.ParameterError` when none is left, naming the filter."""
    vectors = _check_format(doc)
    for name, value in (("mechanism", mechanism), ("noise", noise), ("case", case)):
        if value is not None and not isinstance(value, str):
            raise DprefTypeError(f"{name}={fmt(value)}: must be a string")
    params = dict(params or {})
    pattern = "" if case is None else case.replace("[", "[[]")  # brackets are literal
    out = []
    for k, vec in enumerate(vectors):
        if not isinstance(vec, dict) or not isinstance(vec.get("parameters"), dict):
            raise ParameterError(f"vectors[{k}]: malformed golden vector (not an object)")
        if mechanism is not None and vec.get("mechanism") != mechanism:
            continue
        if noise is not None and vec.get("noise_kind") != noise:
            continue
        if case is not None and not fnmatch.fnmatchcase(str(vec.get("case")), pattern):
            continue
        if not all(_matches(vec, key, str(want)) for key, want in params.items()):
            continue
        out.append(vec)
    if not out:
        given = {"mechanism": mechanism, "noise": noise, "case": case, **params}
        shown = ", ".join(f"{k}={v!r}" for k, v in given.items() if v is not None)
        raise ParameterError(f"{shown or 'vectors'}: no golden vector matches")
    return out


def vector_config(vec: dict[str, Any]) -> dict[str, Any]:
    """What a ``dpref_golden = "vector"`` target receives: :data:`CONFIG_KEYS` of ``vec``."""
    return {k: vec[k] for k in CONFIG_KEYS if k in vec}


def command_input(vec: dict[str, Any]) -> dict[str, Any]:
    """What an external command reads on stdin: the vector without its expected outputs."""
    return {k: v for k, v in vec.items() if k not in _EXPECTED}


# ------------------------------------------------------------------ comparison
_F32_GAMMA_RULE = "float32 bound 4(m + 1)·2⁻²⁴·(|R|·(|A|·|x| + |z|)) + 2⁻¹²⁶, m = T + nodes + 2"


def float32_bound(vec: dict[str, Any]) -> FloatArray:
    """Per output, how far a float32 evaluation of the vector's release may be from its
    exact value: ``γ·(|R|·(|A|·|x| + |z|))_t + 2⁻¹²⁶·(m + 1)`` with ``γ = 4(m + 1)·u``,
    ``u = 2⁻²⁴``, ``m = T + n + 2`` (n nodes).

    A float32 implementation rounds each item and each noise value (relative error u),
    computes the node values ``A·x + z`` and the outputs ``R·(node values)`` as sums of
    at most T + 1 and n terms; by Higham's bound for nested sums (*Accuracy and Stability
    of Numerical Algorithms*, §3.1) the error is at most ``γ_{m}·(|R|·(|A|·|x| + |z|))``
    in any summation order, ``γ_m = m·u/(1 − m·u) < 4(m + 1)·u``; the last term covers
    underflow (2⁻¹²⁶, float32's smallest normal, per operation).  The plan's |A| and |R|
    are evaluated in float64 and the bound doubled for that rounding.  ``vec`` must be a
    valid vector."""
    m = vector_mechanism(vec)
    T = int(vec["horizon"])
    plan = m.plan(T)
    x = np.abs(np.array(vec["stream"], dtype=np.float64))
    z = np.abs(np.array(vec["noise"], dtype=np.float64))
    nodes = abs(plan.A()) @ x + z
    terms = np.asarray(abs(plan.R()) @ nodes, dtype=np.float64)
    steps = T + plan.n_nodes + 2
    gamma = 4.0 * (steps + 1) * 2.0**-24
    out: FloatArray = 2.0 * (gamma * terms + (steps + 1) * 2.0**-126)
    return out


def _first_wrong(
    vec: dict[str, Any],
    got: FloatArray,
    rtol: float,
    atol: float,
    exact: bool,
    precision: str = "float64",
) -> Mismatch | None:
    want = np.array(vec["outputs"], dtype=np.float64)
    ex = [Fraction(s) for s in vec["outputs_exact"]]
    if precision == "float32":
        ref = np.array([float(v) for v in ex])
        bad = ~(np.abs(got - ref) <= float32_bound(vec) + 2.0**-52 * np.abs(ref))
        rule = _F32_GAMMA_RULE
    elif exact and vec["exact_in_float"] is True:
        bad = got != want
        rule = "bit-exact"
    else:
        ref = np.array([float(v) for v in ex])
        bad = ~(np.abs(got - ref) <= atol + rtol * np.abs(ref))
        rule = f"rtol={rtol:g}, atol={atol:g}"
    wrong = np.flatnonzero(bad)
    if wrong.size == 0:
        return None
    t = int(wrong[0])
    return Mismatch(
        str(vec["case"]),
        t + 1,
        float(want[t]),
        str(ex[t]),
        float(got[t]),
        rule,
        wrong_steps=int(wrong.size),
    )


def _order_names(plan: Any) -> list[tuple[str, npt.NDArray[np.int64]]]:
    n = plan.n_nodes
    lo, hi = np.asarray(plan.lo), np.asarray(plan.hi)
    length = hi - lo + 1
    ident = np.arange(n)
    return [
        ("in reverse canonical order", ident[::-1].copy()),
        ("shifted by one node (node n got the noise of node n+1)", np.roll(ident, -1)),
        ("shifted by one node (node n got the noise of node n-1)", np.roll(ident, 1)),
        ("ordered by interval start, then length", np.lexsort((length, lo))),
        ("ordered by interval length (level by level), then end", np.lexsort((hi, length))),
        ("ordered by interval end, longest first", np.lexsort((-length, hi))),
    ]


def mismatch_hint(vec: dict[str, Any], got: FloatArray, rtol: float, atol: float) -> str:
    """What wrong outputs look like, when recognisable: dpref's outputs with the noise
    permuted (a known order, or two nodes swapped), one node's noise or one scale group's
    rescaled or missing.  Empty when none fits.  ``vec`` must be a valid vector."""
    m = vector_mechanism(vec)
    T = int(vec["horizon"])
    plan = m.plan(T)
    stream = np.array(vec["stream"], dtype=np.float64)
    z = np.array(vec["noise"], dtype=np.float64)
    want = m.release(stream, noise=z)

    def fits(out: FloatArray) -> bool:
        return bool(np.all(np.abs(out - got) <= atol + 1e-9 * np.abs(got)))

    canon = "canonical order is release time, then interval length, then instance (spec §0)"
    for name, perm in _order_names(plan):
        # the target reads the noise in that order (z[inverse]) or writes it so (z[perm])
        for p in (np.argsort(perm), perm):
            if plan.n_nodes > 1 and fits(m.release(stream, noise=z[p])):
                return f"the outputs are dpref's with the noise {name}: {canon}"
    R = plan.R().toarray()
    D = got - want
    n = plan.n_nodes
    if 1 < n <= 600:
        # two nodes i < j swapped: D = (R_i - R_j)(z_j - z_i)
        cols = R * 1.0
        for i in range(n - 1):
            dz = z[i + 1 :] - z[i]
            pred = (cols[:, [i]] - cols[:, i + 1 :]) * dz
            ok = np.all(np.abs(pred - D[:, None]) <= atol + 1e-9 * np.abs(got)[:, None], axis=0)
            hit = np.flatnonzero(ok & (dz != 0))
            if hit.size:
                j = i + 1 + int(hit[0])
                return (
                    f"the outputs are dpref's with the noise of nodes {i} {vec['nodes'][i]} and "
                    f"{j} {vec['nodes'][j]} swapped: {canon}"
                )
    t0 = int(np.flatnonzero(np.abs(D) > atol)[0]) if np.any(np.abs(D) > atol) else 0
    groups: dict[str, list[int]] = {f"#{k}": [k] for k in range(n)}
    for k, s in enumerate(vec["scales"]):
        groups.setdefault(str(s), []).append(k)
    for s, members in groups.items():
        part = R[:, members] @ z[members]
        if part[t0] == 0:
            continue
        c = D[t0] / part[t0]
        if fits(want + c * part):
            factor = 1 + c
            what = "missing" if abs(factor) < 1e-12 else f"multiplied by {factor:.6g}"
            if len(members) == 1:
                one = f"the noise of node {members[0]} {vec['nodes'][members[0]]} appears"
            else:
                one = f"the noise of the {len(members)} nodes of scale {s} appears"
            return f"{one} {what} (a wrong scale or weight?)"
    return ""


# ------------------------------------------------------------------ targets
def _check_outputs(r: Any, T: int) -> tuple[str, str, FloatArray | None]:
    from dpref.audit.isolation.worker import to_row

    status, text, row = to_row(r, (T,))
    if status != P.ST_OK:
        return P.STATUS_KIND[status], text, None
    arr = np.asarray(row, dtype=np.float64)
    if not np.all(np.isfinite(arr)):
        k = int(np.flatnonzero(~np.isfinite(arr))[0])
        return "non-finite", f"output at t={k + 1} is {float(arr[k])!r}", None
    return "", "", arr


class _PythonTarget:
    """A spec run in a worker process, restarted after a death."""

    def __init__(self, spec: str, timeout: float, memory_limit: int | None) -> None:
        self.spec, self.timeout, self.memory_limit = spec, timeout, memory_limit
        self.worker: Worker | None = None
        self.isolation: str | None = None

    def _start(self) -> Worker:
        if self.worker is not None and not self.worker.dead:
            return self.worker
        w = Worker(spec=self.spec, fn=None, memory_limit=self.memory_limit)
        try:
            reply = w.load(max(LOAD_TIMEOUT, self.timeout))
        except WorkerDied as died:
            raise _Fatal(Finding(died.kind, f"while loading the target: {died.detail}")) from None
        if reply.status == P.ST_LOAD_ERROR:
            w.kill()
            raise TargetError(f"target={fmt(self.spec)}: {reply.text}")
        if reply.status != P.ST_OK:
            w.kill()
            kind = P.STATUS_KIND.get(reply.status, "protocol")
            raise _Fatal(Finding(kind, f"while loading the target: {reply.text}"))
        self.worker = w
        self.isolation = w.isolation
        return w

    def __call__(self, vec: dict[str, Any]) -> FloatArray | Finding:
        w = self._start()
        T = int(vec["horizon"])
        stream = np.array(vec["stream"], dtype=np.float64)
        noise = np.array(vec["noise"], dtype=np.float64)
        try:
            reply = w.injected(stream, noise, json.dumps(vector_config(vec)), self.timeout)
        except WorkerDied as died:
            self.worker = None
            return Finding(died.kind, died.detail, T)
        finally:
            _emit_diag(w)
        if reply.status != P.ST_OK:
            return Finding(P.STATUS_KIND.get(reply.status, "protocol"), reply.text[:300], T)
        kind, detail, arr = _check_outputs(reply.arrays[0], T)
        if arr is None:
            return Finding(kind, detail, T)
        return arr

    def close(self) -> None:
        if self.worker is not None:
            self.worker.kill()
            self.worker = None


def _emit_diag(w: Worker) -> None:
    """The worker's stdout/stderr so far, onto dpref's stderr (never stdout)."""
    try:
        text = w.take_diag()
    except OSError:
        return
    if text:
        sys.stderr.write(text if text.endswith("\n") else text + "\n")


class _CommandTarget:
    """An external program run once per vector: JSON in on stdin, JSON out on stdout."""

    def __init__(self, command: str, timeout: float) -> None:
        try:
            self.argv = shlex.split(command)
        except ValueError as exc:
            raise ParameterError(f"command={fmt(command)}: cannot split it ({exc})") from None
        if not self.argv:
            raise ParameterError(f"command={fmt(command)}: empty")
        self.timeout = timeout
        self.isolation: str | None = None

    def __call__(self, vec: dict[str, Any]) -> FloatArray | Finding:
        T = int(vec["horizon"])
        data = json.dumps(command_input(vec)).encode()
        if shutil.which(self.argv[0]) is None:
            raise TargetError(
                f"command={fmt(shlex.join(self.argv))}: cannot run it (no such program)"
            )
        try:
            done = sandbox.run_command(self.argv, data, self.timeout, _MAX_STDOUT, 1 << 16)
        except OSError as exc:
            raise TargetError(
                f"command={fmt(shlex.join(self.argv))}: cannot run it ({exc})"
            ) from None
        self.isolation = done.isolation or self.isolation
        if done.timed_out:
            return Finding("timeout", f"ran longer than timeout={self.timeout}s and was stopped", T)
        if done.overflow:
            return Finding("bad-output", f"more than {_MAX_STDOUT} bytes on stdout", T)
        out, err, proc = bytes(done.stdout), bytes(done.stderr), done
        last = err.decode("utf-8", "replace").strip().splitlines()
        tail = f"; its last stderr line: {last[-1][:120]}" if last else ""
        if proc.returncode < 0:
            name = (
                signal.Signals(-proc.returncode).name
                if -proc.returncode in signal.valid_signals()
                else str(-proc.returncode)
            )
            return Finding("killed", f"the command was killed by {name}{tail}", T)
        if proc.returncode != 0:
            return Finding("exited", f"the command exited with status {proc.returncode}{tail}", T)
        try:
            parsed = json.loads(out, parse_constant=_nonfinite)
        except (ValueError, RecursionError) as exc:
            return Finding("bad-output", f"stdout is not a JSON array of numbers ({exc})", T)
        if isinstance(parsed, dict):
            parsed = parsed.get("outputs")
        if not isinstance(parsed, list) or not all(
            isinstance(v, int | float) and not isinstance(v, bool) for v in parsed
        ):
            return Finding("bad-output", "stdout is not a JSON array of numbers", T)
        kind, detail, arr = _check_outputs(parsed, T)
        if arr is None:
            return Finding(kind, detail, T)
        return arr

    def close(self) -> None:
        """Nothing to release (one process per vector)."""


def _nonfinite(name: str) -> float:
    return float(name.replace("Infinity", "inf"))


class _Fatal(Exception):
    def __init__(self, finding: Finding) -> None:
        super().__init__(str(finding))
        self.finding = finding


def _check_number(name: str, value: Any, low: float, high: float) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise DprefTypeError(f"{name}={fmt(value)}: must be a number")
    if not (math.isfinite(value) and low <= value <= high):
        raise ParameterError(f"{name}={fmt(value)}: must be in [{low:g}, {high:g}]")
    return float(value)


def run_golden(
    target: str | None = None,
    *,
    command: str | None = None,
    doc: dict[str, Any] | None = None,
    mechanism: str | None = None,
    noise: str | None = None,
    case: str | None = None,
    params: Mapping[str, str] | None = None,
    rtol: float = DEFAULT_RTOL,
    atol: float = DEFAULT_ATOL,
    exact: bool = True,
    timeout: float = DEFAULT_TIMEOUT,
    memory_limit: int | None = DEFAULT_MEMORY_LIMIT,
    progress: Callable[[int], object] | None = None,
    precision: str = "float64",
) -> GoldenRun:
    """Run a target that accepts injected noise against golden vectors.

    Parameters
    ----------
    target
        ``module:function`` or ``path/to/file.py:function``: a Python callable
        ``f(stream, noise) -> outputs`` (or ``f(stream, noise, config)`` when it sets
        ``f.dpref_golden = "vector"``), run in a worker process.
    command
        Instead of ``target``: a command line run once per vector, reading the vector's
        JSON (:func:`command_input`) on stdin and writing its outputs as JSON on stdout.
    doc
        The golden document (default: the shipped vectors).
    mechanism, noise, case, params
        Which vectors (:func:`select_vectors`).
    rtol, atol
        The tolerance of vectors that are not ``exact_in_float`` (and of all of them when
        ``exact`` is false).
    exact
        Require bit-exact outputs where the vector is ``exact_in_float`` (default).
    timeout
        Seconds one call may take (0 < timeout ≤ one day).
    memory_limit
        Bytes of address space the worker may add once the target is loaded (None: no limit).
    progress
        Called with 1 after each vector.
    precision
        ``float64`` (default: ``rtol``/``atol``, bit-exact where ``exact``) or
        ``float32``: every output within :func:`float32_bound` of the exact one
        (``rtol``, ``atol`` and ``exact`` unused).

    Returns
    -------
    GoldenRun
        Passed vectors, and per failing vector its first :class:`Mismatch` (with a hint)
        or its :class:`~dpref.audit.isolation.targets.Finding`.

    Raises :class:`~dpref.errors.ParameterError` (bad arguments, no matching vector, a
    malformed document) and :class:`~dpref.errors.TargetError` (a spec that cannot be
    imported, a command that cannot be started) before any vector is judged.
    """
    if (target is None) == (command is None):
        raise ParameterError(
            f"target={fmt(target)}, command={fmt(command)}: give exactly one of them"
        )
    if target is not None:
        why = check_spec(target)
        if why is not None:
            raise TargetError(f"target={fmt(target)}: {why}")
    if command is not None and not isinstance(command, str):
        raise DprefTypeError(f"command={fmt(command)}: must be a string")
    rtol = _check_number("rtol", rtol, 0.0, 1.0)
    atol = _check_number("atol", atol, 0.0, 1e300)
    timeout = _check_number("timeout", timeout, 1e-3, MAX_TIMEOUT)
    if not isinstance(exact, bool):
        raise DprefTypeError(f"exact={fmt(exact)}: must be a bool")
    precision = check_choice("precision", precision, GOLDEN_PRECISIONS)
    if doc is None:
        doc = load_shipped()
    vectors = select_vectors(doc, mechanism=mechanism, noise=noise, case=case, params=params)
    for k, vec in enumerate(vectors):
        try:
            _valid(vec)
        except DprefError as exc:
            raise ParameterError(f"vector {vec.get('case', k)!r}: {exc}") from None
    run = GoldenRun(target or str(command), len(vectors), precision=precision)
    run.tolerance = (
        _F32_GAMMA_RULE + " (no vector bit-exact)"
        if precision == "float32"
        else f"rtol={rtol:g}, atol={atol:g}" + (", bit-exact where exact_in_float" if exact else "")
    )
    runner: _PythonTarget | _CommandTarget = (
        _PythonTarget(target, timeout, memory_limit)
        if target is not None
        else _CommandTarget(str(command), timeout)
    )
    deaths = timeouts = 0
    try:
        for k, vec in enumerate(vectors):
            try:
                got = runner(vec)
            except _Fatal as fatal:
                run.failures.append((str(vec["case"]), fatal.finding))
                run.not_run = len(vectors) - k - 1
                if run.not_run:
                    run.gave_up = Finding(
                        "gave-up",
                        f"the target could not be loaded; the other {run.not_run} vectors "
                        "were not run",
                    )
                break
            if progress is not None:
                progress(1)
            if isinstance(got, Finding):
                run.failures.append((str(vec["case"]), got))
                deaths = (
                    deaths + 1 if got.kind in ("exited", "killed", "protocol", "timeout") else 0
                )
                timeouts = timeouts + 1 if got.kind == "timeout" else 0
                if deaths >= MAX_DEATHS or timeouts >= MAX_TIMEOUTS:
                    what = "timed out" if timeouts >= MAX_TIMEOUTS else "died"
                    n = timeouts if timeouts >= MAX_TIMEOUTS else deaths
                    run.not_run = len(vectors) - k - 1
                    if run.not_run:
                        run.gave_up = Finding(
                            "gave-up",
                            f"the target {what} {n} times in a row; the other "
                            f"{run.not_run} vectors were not run",
                        )
                    break
                continue
            deaths = timeouts = 0
            wrong = _first_wrong(vec, got, rtol, atol, exact, precision)
            if wrong is None:
                run.passed += 1
                continue
            if not run.failures:
                hint = mismatch_hint(vec, got, rtol, atol)
                wrong = Mismatch(**{**wrong.as_dict(), "hint": hint})
            run.failures.append((str(vec["case"]), wrong))
    finally:
        runner.close()
        run.isolation = runner.isolation
    return run


def _valid(vec: dict[str, Any]) -> None:
    """A selected vector is well formed (the checks :func:`~dpref.golden.check_golden`
    starts with) and agrees with this dpref's plan size."""
    try:
        _check_vector_fields(vec)
    except _MALFORMED as exc:
        raise ParameterError(f"malformed golden vector ({type(exc).__name__}: {exc})") from None


def _check_vector_fields(vec: dict[str, Any]) -> None:
    from dpref.golden import _check_size, _noise_values

    _check_size(vec)
    m = vector_mechanism(vec)
    n = m.plan(int(vec["horizon"])).n_nodes
    _noise_values(vec, n, m.noise in ("discrete", "discrete_gaussian"))
    T = int(vec["horizon"])
    for key in _EXPECTED:
        if not isinstance(vec.get(key), list) or len(vec[key]) != T:
            raise ParameterError(f"{key}: must be a list of horizon={T} values")
    for s in vec["outputs_exact"]:
        Fraction(s)
    for v in vec["outputs"]:
        if isinstance(v, bool) or not isinstance(v, int | float):
            raise ParameterError(f"outputs: {fmt(v)} is not a number")
    if not isinstance(vec.get("exact_in_float"), bool):
        raise ParameterError("exact_in_float: must be true or false")
