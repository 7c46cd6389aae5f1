"""How a noise-injectable target is called: guarded, in this process or in its worker.

A *runner* is any callable ``run(stream, script) -> (outputs, requests)`` that calls the
target once with the noise object of :mod:`dpref.audit.isolation.recording` scripted by
``script``, and raises :class:`CallFailure` (carrying a
:class:`~dpref.audit.isolation.targets.Finding`) when the call raises, exits, hangs, returns the
wrong length or something that is not real numbers.  :class:`WorkerRunner` — the
default for third-party targets — makes the call in the target's isolated worker
process (:mod:`dpref.audit.isolation.supervisor`), so nothing the target does can reach dpref;
:class:`InProcessRunner` calls in this process (for dpref's own mechanisms, and for
tests of the analysis itself).
"""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from dpref.audit.isolation import protocol as P
from dpref.audit.isolation.recording import LAWS, Requests, make_noise
from dpref.audit.isolation.supervisor import Worker, WorkerDied
from dpref.audit.isolation.targets import LOAD_TIMEOUT, Finding, _preview
from dpref.audit.isolation.worker import MAX_LAW_RUNS, describe

__all__ = ["CallFailure", "InProcessRunner", "Runner", "WorkerRunner", "call_in_process"]

FloatArray = npt.NDArray[np.float64]


class CallFailure(Exception):
    """A target call failed (raised, wrong length, not numbers); carries the finding."""

    def __init__(self, finding: Finding, requests: Requests) -> None:
        super().__init__(str(finding))
        self.finding = finding
        self.requests = requests


Runner = Callable[[FloatArray, FloatArray], tuple[FloatArray, Requests]]
"""``run(stream, script) -> (outputs, requests)``; raises :class:`CallFailure`."""


def call_in_process(
    fn: Callable[..., Any], protocol: str, stream: FloatArray, script: FloatArray
) -> tuple[FloatArray, Requests]:
    """Call ``fn(stream, noise object)`` once, in this process, guarded.

    Returns the outputs (float64, length T; NaN and ±inf are kept, the caller judges
    them) and the requests.  Raises :class:`CallFailure` when the call raises (any
    ``Exception`` or ``SystemExit``), returns a value that is not a sequence of numbers,
    or returns the wrong number of values.
    """
    T = int(stream.size)
    requests = Requests()
    noise = make_noise(protocol, script, requests)
    view = stream.copy()
    view.flags.writeable = False
    try:
        # third-party prints must not corrupt `--json` on stdout
        with contextlib.redirect_stdout(sys.stderr):
            r = fn(view, noise)
    except (Exception, SystemExit) as exc:
        kind = (
            "mutates-input"
            if isinstance(exc, ValueError) and "read-only" in str(exc)
            else "exception"
        )
        raise CallFailure(Finding(kind, describe(exc), T, _preview(stream)), requests) from None
    try:
        out = np.asarray(r, dtype=np.float64)
    except (Exception, SystemExit) as exc:
        text = repr(r) if len(repr(r)) <= 80 else repr(r)[:77] + "..."
        detail = f"output {text} is not a sequence of numbers ({type(exc).__name__}: {exc})"
        raise CallFailure(Finding("bad-output", detail, T, _preview(stream)), requests) from None
    if out.ndim != 1:
        detail = f"output has shape {out.shape}, expected ({T},)"
        kind = "bad-output" if out.ndim == 0 else "wrong-length"
        raise CallFailure(Finding(kind, detail, T, _preview(stream)), requests)
    if out.size != T:
        detail = f"returned {out.size} values for a stream of length {T}"
        raise CallFailure(Finding("wrong-length", detail, T, _preview(stream)), requests)
    return out, requests


@dataclass(frozen=True)
class InProcessRunner:
    """The default runner: :func:`call_in_process` on ``fn`` with ``protocol``."""

    fn: Callable[..., Any]
    protocol: str = "rng"

    def __call__(self, stream: FloatArray, script: FloatArray) -> tuple[FloatArray, Requests]:
        """One guarded call (see :func:`call_in_process`)."""
        return call_in_process(self.fn, self.protocol, stream, script)


@dataclass
class WorkerRunner:
    """Calls through the target's own worker process (see :mod:`dpref.audit.isolation.supervisor`).

    ``spec`` (``module:function``) is imported only in a spawned worker; a callable
    ``fn`` runs in a forked one.  Each call has ``timeout`` seconds; a worker that dies,
    hangs or breaks the protocol is a :class:`CallFailure` (kinds ``exited``,
    ``killed``, ``timeout``, ``memory``, ``protocol`` …) and the next call starts a
    fresh one.
    """

    spec: str | None
    fn: Callable[..., Any] | None
    protocol: str | None = None
    """``"rng"`` or ``"callback"``; None: what the target declares (``dpref_noise``),
    read in the worker when it loads."""
    timeout: float | None = 60.0
    memory_limit: int | None = 4 << 30
    _worker: Worker | None = field(default=None, repr=False)
    isolation: str | None = field(default=None, init=False, compare=False)
    """The isolation the last worker reported (:mod:`dpref.audit.isolation.sandbox`); None before
    one loaded."""

    def __call__(self, stream: FloatArray, script: FloatArray) -> tuple[FloatArray, Requests]:
        """One scripted call in the worker."""
        T = int(stream.size)
        try:
            worker = self._started(T)
            protocol = self.protocol_of(worker)
            reply = worker.scripted(stream, script, protocol, self.timeout)
        except WorkerDied as died:
            self.close()
            finding = Finding(died.kind, died.detail, T, _preview(stream))
            raise CallFailure(finding, Requests()) from None
        except _LoadFailed as failed:
            self.close()
            raise CallFailure(failed.finding, Requests()) from None
        scales = reply.arrays[1] if reply.status == P.ST_OK else np.zeros(0)
        parsed = _requests(scales, reply.text, reply.status == P.ST_OK)
        if parsed is None:
            self.close()
            detail = "the worker sent malformed draw records"
            raise CallFailure(Finding("protocol", detail, T, _preview(stream)), Requests())
        detail, requests = parsed
        if reply.status != P.ST_OK:
            kind = P.STATUS_KIND.get(reply.status, "exception")
            raise CallFailure(Finding(kind, detail, T, _preview(stream)), requests)
        return np.array(reply.arrays[0], dtype=np.float64), requests

    def protocol_of(self, worker: Worker) -> str:
        """The protocol the calls use: the one given, else what the loaded target declares."""
        if self.protocol is not None:
            return self.protocol
        return "callback" if worker.callback else "rng"

    def start(self, T: int) -> str:
        """Start (and load) the worker now; the protocol.  Raises :class:`CallFailure`."""
        try:
            return self.protocol_of(self._started(T))
        except WorkerDied as died:
            self.close()
            raise CallFailure(Finding(died.kind, died.detail, T), Requests()) from None
        except _LoadFailed as failed:
            self.close()
            raise CallFailure(failed.finding, Requests()) from None

    def _started(self, T: int) -> Worker:
        if self._worker is not None and not self._worker.dead:
            return self._worker
        worker = Worker(spec=self.spec, fn=self.fn, memory_limit=self.memory_limit)
        reply = worker.load(max(LOAD_TIMEOUT, self.timeout or 0.0))
        if reply.status != P.ST_OK:
            worker.kill()
            kind = P.STATUS_KIND.get(reply.status, "exception")
            raise _LoadFailed(Finding(kind, f"while loading the target: {reply.text}", T))
        self._worker = worker
        self.isolation = worker.isolation
        return worker

    def close(self) -> None:
        """End the worker (a new call starts a fresh one)."""
        if self._worker is not None:
            self._worker.kill()
            self._worker = None


class _LoadFailed(Exception):
    def __init__(self, finding: Finding) -> None:
        super().__init__(str(finding))
        self.finding = finding


def _requests(scales: FloatArray, text: str, ok: bool = True) -> tuple[str, Requests] | None:
    """The failure detail and the draw records a worker sent back, validated field by
    field (None: malformed).  On a success (``ok``) the laws must account for every
    scale sent (all of them, unless the runs were cut at ``MAX_LAW_RUNS``)."""
    try:
        doc = json.loads(text)
    except ValueError:
        return None
    if not isinstance(doc, dict) or set(doc) != {"detail", "other", "unknown", "laws"}:
        return None
    detail, other, unknown, laws = doc["detail"], doc["other"], doc["unknown"], doc["laws"]
    if not isinstance(laws, list) or not all(
        isinstance(o, list) and len(o) == 2 and o[0] in LAWS and type(o[1]) is int and o[1] > 0
        for o in laws
    ):
        return None
    counted = sum(o[1] for o in laws)
    if ok and (counted > scales.size or (len(laws) < MAX_LAW_RUNS and counted != scales.size)):
        return None
    if not isinstance(detail, str) or not isinstance(other, list) or not isinstance(unknown, list):
        return None
    if not all(
        isinstance(o, list)
        and len(o) == 2
        and isinstance(o[0], str)
        and type(o[1]) is int
        and o[1] > 0
        for o in other
    ) or not all(isinstance(u, str) for u in unknown):
        return None
    return detail, Requests(
        scales=[float(v) for v in scales.tolist()],
        other=[(str(o[0]), int(o[1])) for o in other],
        unknown=[str(u) for u in unknown],
        laws=[(str(o[0]), int(o[1])) for o in laws],
    )
