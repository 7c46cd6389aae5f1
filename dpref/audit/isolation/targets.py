"""Targets under audit: dpref's own mechanisms, or untrusted third-party callables.

A *black-box target* is any callable ``f(stream, rng) -> sequence of len(stream)
floats`` (docs/auditing.md, "The target"), named on the command line as
``package.module:function`` or ``path/to/file.py:function``.  A target is untrusted
code, and it never runs in dpref's process (docs/auditing.md, "Isolation"): a spec
string is imported only in a spawned worker process, a callable passed through the
Python API runs in a forked one (:mod:`dpref.audit.isolation.supervisor`,
:mod:`dpref.audit.isolation.worker`).  Its exceptions, outputs of the wrong length or type,
non-finite outputs, calls longer than the timeout, memory beyond the limit, and a
worker that exits, is killed or breaks the protocol are recorded as :class:`Finding` s
and never crash dpref.

A target may declare the vectorised protocol ``f(streams (n, T), rng) -> (n, T)`` by
setting the attribute ``f.dpref_batched = True``.

A *built-in target* wraps a :class:`~dpref.mechanisms.Mechanism` and is sampled
in-process through :meth:`~dpref.mechanisms.Mechanism.release_many` (vectorised).  Mechanisms
with exact discrete Laplace noise are sampled with their public ``noise=`` argument
fed by a vectorised two-sided geometric sampler with the same law (the exact CKS
sampler draws one value at a time and is far too slow for 10⁶ samples).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from dpref.audit.isolation import protocol as P
from dpref.audit.isolation.supervisor import Worker, WorkerDied
from dpref.audit.isolation.worker import LoadError, check_spec, import_target
from dpref.audit.limits import MAX_TIMEOUT
from dpref.errors import DprefTypeError, ParameterError, TargetError
from dpref.mechanisms import Mechanism
from dpref.noise import make_rng
from dpref.validation import fmt

__all__ = [
    "DEFAULT_MEMORY_LIMIT",
    "LOAD_TIMEOUT",
    "MAX_DEATHS",
    "MAX_TIMEOUTS",
    "Finding",
    "Target",
    "TargetFailure",
    "as_target",
    "load_callable",
]

FloatArray = npt.NDArray[np.float64]
TargetFn = Callable[[np.ndarray[Any, Any], np.random.Generator], Any]

_BUILTIN_CHUNK = 1 << 16

DEFAULT_MEMORY_LIMIT = 4 << 30
"""Address space a worker may add once its target is loaded (4 GiB)."""
LOAD_TIMEOUT = 30.0
"""Longest a worker may take to start and import its target, at least (seconds)."""
MAX_DEATHS = 10
"""Consecutive worker deaths after which a target is not called again."""
MAX_TIMEOUTS = 3
"""Consecutive timeouts (each one costs ``timeout`` seconds) after which likewise."""
_BATCH_SECONDS = 0.25
"""Aim of the time one request of scalar calls takes (the first request is 1 call)."""
_MAX_BATCH_BYTES = 32 << 20
"""Largest reply of one request (its outputs)."""
_BATCHED_ROWS = 1 << 16
"""Streams per call of a vectorised (``dpref_batched``) target."""


def _preview(stream: FloatArray) -> str:
    vals = [int(v) if float(v).is_integer() else float(v) for v in stream[:12].tolist()]
    text = ",".join(str(v) for v in vals)
    return text + (",…" if stream.size > 12 else "")


@dataclass(frozen=True)
class Finding:
    """Something wrong with a target that is not a statistical verdict.

    ``kind`` is one of ``exception``, ``bad-output`` (not a sequence of real numbers),
    ``wrong-length``, ``non-finite``, ``timeout``, ``not-deterministic``,
    ``mutates-input``, ``memory`` (MemoryError: the memory limit), ``exited`` (the
    target called ``sys.exit`` or the worker exited), ``killed`` (the worker died of a
    signal), ``protocol`` (the worker sent something that is not a valid frame),
    ``forked`` (the target forked; the child was ended at once), ``gave-up`` (the worker died
    :data:`MAX_DEATHS` times, or timed out :data:`MAX_TIMEOUTS` times, in a row; the target
    was not called again).
    """

    kind: str
    """What went wrong."""
    detail: str
    """One line: the exception, the offending value, the step."""
    horizon: int | None = None
    """The stream length T that triggered it."""
    stream: str = ""
    """The (start of the) stream that triggered it."""

    def as_dict(self) -> dict[str, Any]:
        """JSON-friendly dict."""
        return {
            "kind": self.kind,
            "detail": self.detail,
            "horizon": self.horizon,
            "stream": self.stream,
        }

    def __str__(self) -> str:
        where = f" at T={self.horizon}" if self.horizon is not None else ""
        on = f" on stream [{self.stream}]" if self.stream else ""
        return f"{self.kind}{where}{on}: {self.detail}"


class TargetFailure(Exception):
    """Raised inside dpref when a target call fails; carries the :class:`Finding`."""

    def __init__(self, finding: Finding) -> None:
        super().__init__(str(finding))
        self.finding = finding


def load_callable(target: str) -> tuple[str, TargetFn]:
    """Load ``package.module:function`` or ``path/to/file.py:function`` into *this* process.

    Audits never use it (they import a spec only in a worker process); it is kept for
    callers that want the callable itself.  Any error while importing the (untrusted)
    module, ``SystemExit`` included, becomes a :class:`~dpref.errors.TargetError`
    naming the target.
    """
    if not isinstance(target, str):
        raise DprefTypeError(f"target={fmt(target)}: must be a 'module:function' string")
    try:
        return target, import_target(target)
    except LoadError as exc:
        raise TargetError(f"target={fmt(target)}: {exc}") from None
    except SystemExit as exc:
        raise TargetError(f"target={fmt(target)}: importing it raised SystemExit: {exc}") from None


def _discrete_noise(
    mech: Mechanism, horizon: int, runs: int, gen: np.random.Generator
) -> FloatArray:
    """Two-sided geometric node noise of the mechanism's scales, vectorised.

    ``DLap(b)`` has ``P[Z = z] ∝ q^{|z|}`` with ``q = e^{−1/b}``; it is the law of
    ``G₁ − G₂`` for independent ``G ~ Geometric(1 − q)`` on {0, 1, …}.
    """
    nodes = mech.nodes(horizon)
    q = np.exp(-1.0 / np.array([float(b) for b in nodes.scale_table]))[nodes.scale_idx]
    p = np.broadcast_to(1.0 - q, (runs, nodes.size))
    g1 = gen.geometric(p) - 1
    g2 = gen.geometric(p) - 1
    return (g1 - g2).astype(np.float64)


@dataclass
class Target:
    """A target under audit: a built-in mechanism or a black-box callable.

    Use :func:`as_target` to build one from a mechanism, a callable or a spec string.
    """

    name: str
    """How reports name it (the spec string, or the mechanism's repr)."""
    mechanism: Mechanism | None = None
    """The built-in mechanism (None for a black box)."""
    func: TargetFn | None = None
    """The black-box callable, run in a forked worker (None for a built-in or a spec)."""
    timeout: float | None = 60.0
    """Longest a single call may run, in seconds (None: no limit)."""
    findings: list[Finding] = field(default_factory=list)
    """Findings recorded so far (deduplicated by kind and horizon)."""
    spec: str | None = None
    """``module:function`` / ``file.py:function``, imported only in a spawned worker."""
    memory_limit: int | None = DEFAULT_MEMORY_LIMIT
    """Bytes of address space the worker may add once the target is loaded (None: no limit)."""
    _worker: Worker | None = field(default=None, init=False, repr=False, compare=False)
    _deaths: int = field(default=0, init=False, repr=False, compare=False)
    _timeouts: int = field(default=0, init=False, repr=False, compare=False)
    _gave_up: Finding | None = field(default=None, init=False, repr=False, compare=False)
    _isolation: str | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def isolation(self) -> str | None:
        """Where the target's calls ran (:data:`dpref.audit.isolation.sandbox.LEVELS`: the level its
        worker reported); None for a built-in mechanism (sampled in dpref's process)."""
        if self.mechanism is not None:
            return None
        return self._isolation

    @property
    def batched(self) -> bool:
        """The target declared the vectorised protocol (known once its worker has started)."""
        return self._worker is not None and self._worker.batched

    def close(self) -> None:
        """End the target's worker process (a later call starts a fresh one)."""
        if self._worker is not None:
            self._emit_diag(self._worker)
            self._worker.kill()
            self._worker = None

    def __enter__(self) -> Target:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def is_builtin(self) -> bool:
        """True for dpref's own mechanisms."""
        return self.mechanism is not None

    def record(self, finding: Finding) -> None:
        """Add a finding unless one of the same kind and horizon is already there."""
        for f in self.findings:
            if f.kind == finding.kind and f.horizon == finding.horizon:
                return
        self.findings.append(finding)

    def mechanism_at(self, horizon: int) -> Mechanism:
        """The built-in mechanism (its horizon must cover ``horizon``)."""
        assert self.mechanism is not None
        m = self.mechanism
        if m.horizon is not None and m.horizon < horizon:
            raise ParameterError(
                f"horizon={horizon}: exceeds the target mechanism's horizon={m.horizon}"
            )
        return m

    # ------------------------------------------------------------ sampling
    def sample(
        self,
        stream: FloatArray,
        runs: int,
        rng: np.random.Generator,
        progress: Callable[[int], object] | None = None,
    ) -> FloatArray:
        """``runs`` outputs of the target on ``stream``, shape (runs, T).

        Raises :class:`TargetFailure` when a call raises, times out or returns
        something that is not ``T`` numbers; non-finite outputs are kept (an event
        may well be "the output is NaN") and recorded as a finding.
        """
        T = int(stream.size)
        if self.mechanism is not None:
            out = self._sample_builtin(stream, runs, rng, progress)
        else:
            out = self._sample_blackbox(stream, runs, rng, progress)
        if not np.isfinite(out).all():
            r, t = (int(v[0]) for v in np.nonzero(~np.isfinite(out)))
            self.record(
                Finding(
                    "non-finite",
                    f"output at t={t + 1} is {out[r, t]!r}",
                    T,
                    _preview(stream),
                )
            )
        return out

    def _sample_builtin(
        self,
        stream: FloatArray,
        runs: int,
        rng: np.random.Generator,
        progress: Callable[[int], object] | None,
    ) -> FloatArray:
        m = self.mechanism_at(int(stream.size))
        T = int(stream.size)
        out = np.empty((runs, T), dtype=np.float64)
        for start in range(0, runs, _BUILTIN_CHUNK):
            k = min(_BUILTIN_CHUNK, runs - start)
            if m.noise == "discrete":
                z = _discrete_noise(m, T, k, rng)
                out[start : start + k] = m.release_many(stream, k, noise=z)
            else:
                out[start : start + k] = m.release_many(stream, k, rng=rng)
            if progress is not None:
                progress(k)
        return out

    def _fail(self, finding: Finding) -> TargetFailure:
        self.record(finding)
        return TargetFailure(finding)

    # ------------------------------------------------------------ the worker
    def start(self) -> None:
        """Start the worker and load the target, unless it is running.

        Raises :class:`~dpref.errors.TargetError` when a spec cannot be imported (an
        exception at import, no such attribute) and :class:`TargetFailure` when the
        worker cannot be started (it died while loading, or died too often).
        """
        if self._gave_up is not None:
            raise TargetFailure(self._gave_up)
        if self._worker is not None and not self._worker.dead:
            return
        if self._deaths >= MAX_DEATHS or self._timeouts >= MAX_TIMEOUTS:
            what = "timed out" if self._timeouts >= MAX_TIMEOUTS else "died"
            n = self._timeouts if self._timeouts >= MAX_TIMEOUTS else self._deaths
            self._gave_up = Finding(
                "gave-up", f"the worker {what} {n} times in a row; the target was not called again"
            )
            raise self._fail(self._gave_up)
        try:
            w = Worker(spec=self.spec, fn=self.func, memory_limit=self.memory_limit)
        except OSError as exc:
            raise self._fail(Finding("exited", f"the worker could not be started: {exc}")) from None
        try:
            reply = w.load(max(LOAD_TIMEOUT, self.timeout or 0.0))
        except WorkerDied as died:
            self._emit_diag(w)
            self._gave_up = Finding(died.kind, f"while loading the target: {died.detail}")
            raise self._fail(self._gave_up) from None
        if reply.status == P.ST_LOAD_ERROR:
            self._emit_diag(w)
            w.kill()
            raise TargetError(f"target={fmt(self.name)}: {_clean(reply.text)}")
        if reply.status != P.ST_OK:
            self._emit_diag(w)
            w.kill()
            kind = P.STATUS_KIND.get(reply.status, "protocol")
            self._gave_up = Finding(kind, f"while loading the target: {_clean(reply.text)}")
            raise self._fail(self._gave_up)
        self._worker = w
        self._isolation = w.isolation

    def _emit_diag(self, w: Worker) -> None:
        """The worker's stdout/stderr text so far, onto dpref's stderr (never stdout)."""
        text = w.take_diag()
        if text:
            sys.stderr.write(text if text.endswith("\n") else text + "\n")

    def _sample_blackbox(
        self,
        stream: FloatArray,
        runs: int,
        rng: np.random.Generator,
        progress: Callable[[int], object] | None,
    ) -> FloatArray:
        """``runs`` calls in the worker, in requests of many calls each.

        The worker's Generator is set from ``rng`` by the first request (see
        :func:`_seed_material`) and carried on by the next ones, so the outputs do not
        depend on how the calls are batched.
        """
        T = int(stream.size)
        self.start()
        seed = _seed_material(rng)
        w = self._worker
        assert w is not None
        out = np.empty((runs, T), dtype=np.float64)
        cap = max(1, _MAX_BATCH_BYTES // (8 * max(T, 1)))
        batch = min(_BATCHED_ROWS, cap) if w.batched else 1
        done = 0
        while done < runs:
            k = min(batch, runs - done)
            t0 = time.perf_counter()
            try:
                reply = w.call(stream, k, seed if done == 0 else None, self.timeout)
            except WorkerDied as died:
                self._emit_diag(w)
                self._worker = None
                self._deaths += 1
                self._timeouts += died.kind == "timeout"
                call = "" if w.batched else f"call {done + died.done + 1}: "
                found = Finding(died.kind, call + died.detail, T, _preview(stream))
                raise self._fail(found) from None
            self._emit_diag(w)
            self._deaths = self._timeouts = 0
            if reply.status != P.ST_OK:
                kind = P.STATUS_KIND[reply.status]
                raise self._fail(Finding(kind, _clean(reply.text), T, _preview(stream)))
            out[done : done + k] = reply.arrays[0]
            done += k
            if progress is not None:
                progress(k)
            if not w.batched:
                per_call = max(time.perf_counter() - t0, 1e-6) / k
                batch = max(1, min(cap, int(_BATCH_SECONDS / per_call), 64 * k))
        return out

    def call_once(self, stream: FloatArray, rng: np.random.Generator) -> FloatArray:
        """One output of the target (used for replays and crash probes)."""
        if self.mechanism is not None:
            m = self.mechanism_at(int(stream.size))
            if m.noise == "discrete":
                z = _discrete_noise(m, int(stream.size), 1, rng)
                one: FloatArray = m.release_many(stream, 1, noise=z)[0]
                return one
            return m.release(stream, rng=rng)
        row: FloatArray = self._sample_blackbox(stream, 1, rng, None)[0]
        return row


_MASK64 = (1 << 64) - 1


def _seed_material(rng: np.random.Generator) -> npt.NDArray[np.uint64]:
    """The words a worker builds its Generator from; ``rng`` moves past what they give.

    A PCG64 generator (what ``np.random.default_rng`` and the audit seeds make) is
    handed over as its exact state — the target draws the same numbers it drew when it
    ran in dpref's process — and ``rng`` jumps ahead by 2¹²⁷ steps, so dpref's later
    draws never overlap the target's.  Nothing comes back from the worker: dpref's
    generator never depends on what the target did.  Any other bit generator gives
    four words of entropy for a ``SeedSequence``.
    """
    bg = rng.bit_generator
    if type(bg) is np.random.PCG64:
        st = bg.state
        s, inc = int(st["state"]["state"]), int(st["state"]["inc"])
        words = [1, s >> 64, s & _MASK64, inc >> 64, inc & _MASK64]
        words += [int(st["has_uint32"]), int(st["uinteger"])]
        bg.state = bg.jumped().state
        return np.array(words, dtype=np.uint64)
    entropy = rng.integers(0, 2**64, size=4, dtype=np.uint64)
    return np.concatenate([np.zeros(1, dtype=np.uint64), entropy])


def _clean(text: str) -> str:
    """A worker's text as one printable line of at most 300 characters."""
    line = "".join(c if c.isprintable() else " " for c in text).strip()
    return line if len(line) <= 300 else line[:297] + "..."


def as_target(
    target: Any, *, timeout: float | None = 60.0, memory_limit: int | None = DEFAULT_MEMORY_LIMIT
) -> Target:
    """A :class:`Target` from a Target, a Mechanism, a callable or a spec string.

    A spec string is checked and loaded at once, in a spawned worker (a load error is
    a :class:`~dpref.errors.TargetError`); a callable runs in a forked worker started
    on first use.  ``timeout`` bounds every call (seconds, None: no limit),
    ``memory_limit`` the address space the worker may add once the target is loaded
    (bytes, None: no limit).
    """
    if timeout is not None:
        if isinstance(timeout, bool) or not isinstance(timeout, int | float):
            raise DprefTypeError(f"timeout={fmt(timeout)}: must be a number of seconds")
        if not (0 < timeout <= MAX_TIMEOUT):  # compared before any float conversion
            raise ParameterError(
                f"timeout={fmt(timeout)}: must be > 0 and at most {MAX_TIMEOUT:g} seconds"
            )
    if memory_limit is not None:
        if isinstance(memory_limit, bool) or not isinstance(memory_limit, int):
            raise DprefTypeError(f"memory_limit={fmt(memory_limit)}: must be a number of bytes")
        if memory_limit < 1 << 20:
            raise ParameterError(f"memory_limit={fmt(memory_limit)}: must be >= 1 MiB (1048576)")
    if isinstance(target, Target):
        return target
    if isinstance(target, Mechanism):
        return Target(repr(target), mechanism=target, timeout=timeout)
    if isinstance(target, str):
        bad = check_spec(target)
        if bad is not None:
            raise TargetError(f"target={fmt(target)}: {bad}")
        tgt = Target(target, spec=target, timeout=timeout, memory_limit=memory_limit)
        try:
            tgt.start()
        except TargetFailure:
            pass  # recorded: the audit reports it
        return tgt
    if callable(target):
        name = getattr(target, "__qualname__", None) or repr(target)
        module = getattr(target, "__module__", None)
        return Target(
            f"{module}:{name}" if module else str(name),
            func=target,
            timeout=timeout,
            memory_limit=memory_limit,
        )
    raise DprefTypeError(
        f"target={fmt(target)}: must be a Mechanism, a callable f(stream, rng) or 'module:function'"
    )


def seeded(seed: Any) -> np.random.Generator:
    """The Generator every audit draws from (NEP 19 seed handling)."""
    return make_rng(seed, "seed")
