"""Targets under audit: dpref's own mechanisms, or untrusted third-party callables.

A *black-box target* is any callable ``f(stream, rng) -> sequence of len(stream)
floats`` (docs/auditing.md, "The target"), named on the command line as
``package.module:function`` or ``path/to/file.py:function``.  A target is untrusted
code: its exceptions, outputs of the wrong length or type, non-finite outputs and
calls that run longer than the timeout are recorded as :class:`Finding` s and never crash dpref.

A *built-in target* wraps a :class:`~dpref.mechanisms.Mechanism` and is sampled
through :meth:`~dpref.mechanisms.Mechanism.release_many` (vectorised).  Mechanisms
with exact discrete Laplace noise are sampled with their public ``noise=`` argument
fed by a vectorised two-sided geometric sampler with the same law (the exact CKS
sampler draws one value at a time and is far too slow for 10⁶ samples).
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import math
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

import numpy as np
import numpy.typing as npt

from dpref.errors import DprefTypeError, ParameterError, TargetError
from dpref.mechanisms import Mechanism
from dpref.noise import make_rng
from dpref.validation import fmt

__all__ = ["Finding", "Target", "TargetFailure", "as_target", "load_callable"]

FloatArray = npt.NDArray[np.float64]
TargetFn = Callable[[np.ndarray[Any, Any], np.random.Generator], Any]

_BUILTIN_CHUNK = 1 << 16


def _preview(stream: FloatArray) -> str:
    vals = [int(v) if float(v).is_integer() else float(v) for v in stream[:12].tolist()]
    text = ",".join(str(v) for v in vals)
    return text + (",…" if stream.size > 12 else "")


@dataclass(frozen=True)
class Finding:
    """Something wrong with a target that is not a statistical verdict.

    ``kind`` is one of ``exception``, ``bad-output`` (not a sequence of numbers),
    ``wrong-length``, ``non-finite``, ``timeout``, ``not-deterministic``,
    ``mutates-input``.
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


class _CallTimeout(BaseException):
    """Raised in the main thread by the watchdog (a BaseException, so targets that
    catch ``Exception`` cannot swallow it)."""


class _Watchdog:
    """Interrupt a target call that makes no progress for ``timeout`` seconds.

    The sampling loop stores the index of the call in progress in ``busy[0]`` (−1
    between calls): two list stores per call, so the overhead stays in nanoseconds.
    A daemon thread polls it; when one call has been running for at least
    ``timeout`` seconds it sends SIGALRM to the main thread, whose handler raises
    :class:`_CallTimeout` inside the target.  Signals only reach the main thread, so
    elsewhere (or without ``pthread_kill``) the watchdog is passive and over-long
    calls are reported after they return.
    """

    def __init__(self, timeout: float | None) -> None:
        self.timeout = timeout
        self.busy: list[int] = [-1]
        self.fired = False
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._old: Any = None
        self.active = (
            timeout is not None
            and threading.current_thread() is threading.main_thread()
            and hasattr(signal, "pthread_kill")
            and hasattr(signal, "SIGALRM")
        )

    def _handler(self, signum: int, frame: FrameType | None) -> None:
        raise _CallTimeout()

    def _watch(self) -> None:
        assert self.timeout is not None
        main_id = threading.main_thread().ident
        assert main_id is not None
        period = max(0.01, min(0.25, self.timeout / 4))
        last, since = -2, time.monotonic()
        while not self._stop.wait(period):
            now = time.monotonic()
            cur = self.busy[0]
            if cur != last or cur < 0:
                last, since = cur, now
                continue
            if now - since >= self.timeout and not self.fired:
                self.fired = True
                signal.pthread_kill(main_id, signal.SIGALRM)

    def __enter__(self) -> _Watchdog:
        if self.active:
            self._old = signal.signal(signal.SIGALRM, self._handler)
            self._thread = threading.Thread(target=self._watch, daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._thread is not None:
            self._stop.set()
            self._thread.join()
            signal.signal(signal.SIGALRM, self._old)


def load_callable(spec: str) -> tuple[str, TargetFn]:
    """Load ``package.module:function`` or ``path/to/file.py:function``.

    Any error while importing the (untrusted) module becomes a
    :class:`~dpref.errors.TargetError` naming the target.
    """
    if not isinstance(spec, str) or ":" not in spec:
        raise TargetError(f"target={fmt(spec)}: expected module:function or file.py:function")
    where, _, func_name = spec.rpartition(":")
    if not where or not func_name.isidentifier():
        raise TargetError(f"target={fmt(spec)}: expected module:function or file.py:function")
    try:
        if where.endswith(".py") or "/" in where or "\\" in where:
            path = Path(where)
            if not path.is_file():
                raise TargetError(f"target={fmt(spec)}: no such file {where}")
            mod_name = f"_dpref_target_{abs(hash(str(path.resolve())))}"
            module = sys.modules.get(mod_name)
            if module is None:
                file_spec = importlib.util.spec_from_file_location(mod_name, path)
                if file_spec is None or file_spec.loader is None:
                    raise TargetError(f"target={fmt(spec)}: cannot load {where}")
                module = importlib.util.module_from_spec(file_spec)
                sys.modules[mod_name] = module
                try:
                    file_spec.loader.exec_module(module)
                except BaseException:
                    del sys.modules[mod_name]
                    raise
        else:
            module = importlib.import_module(where)
    except TargetError:
        raise
    except (Exception, SystemExit) as exc:
        raise TargetError(
            f"target={fmt(spec)}: importing it raised {type(exc).__name__}: {exc}"
        ) from None
    fn = getattr(module, func_name, None)
    if fn is None:
        raise TargetError(f"target={fmt(spec)}: {where} has no attribute {func_name}")
    if not callable(fn):
        raise TargetError(f"target={fmt(spec)}: {func_name} is not callable")
    return spec, fn


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
    """The black-box callable (None for a built-in)."""
    timeout: float | None = 60.0
    """Longest a single call may run, in seconds (None: no limit)."""
    findings: list[Finding] = field(default_factory=list)
    """Findings recorded so far (deduplicated by kind and horizon)."""

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

    def _sample_blackbox(
        self,
        stream: FloatArray,
        runs: int,
        rng: np.random.Generator,
        progress: Callable[[int], object] | None,
    ) -> FloatArray:
        f = self.func
        assert f is not None
        T = int(stream.size)
        view = stream.copy()
        view.flags.writeable = False  # a target that mutates its input raises: a finding
        out = np.empty((runs, T), dtype=np.float64)
        step = 4096 if progress is not None else runs
        i = 0
        r: Any = None
        # the target is third-party code: its prints must not corrupt `--json` stdout
        with contextlib.redirect_stdout(sys.stderr), _Watchdog(self.timeout) as dog:
            busy = dog.busy
            start_time = time.perf_counter()
            try:
                for lo in range(0, runs, step):
                    hi = min(runs, lo + step)
                    for i in range(lo, hi):
                        busy[0] = i
                        r = f(view, rng)
                        busy[0] = -1
                        if len(r) != T:
                            raise _WrongLength()
                        out[i] = r
                    if progress is not None:
                        progress(hi - lo)
            except (_WrongLength, _CallTimeout, Exception) as exc:
                raise self._fail(self._call_finding(exc, r, i, busy[0] < 0, stream)) from None
        if self.timeout is not None and not dog.active:
            self._check_mean_time(time.perf_counter() - start_time, runs, stream)
        return out

    def _call_finding(
        self, exc: BaseException, r: Any, i: int, returned: bool, stream: FloatArray
    ) -> Finding:
        """What a failed call ``i`` (which returned ``r`` when ``returned``) went wrong with."""
        T = int(stream.size)
        if isinstance(exc, _WrongLength):
            return Finding(
                "wrong-length",
                f"returned {len(r)} values for a stream of length {T}",
                T,
                _preview(stream),
            )
        if isinstance(exc, _CallTimeout):
            return Finding(
                "timeout",
                f"call {i + 1} ran longer than timeout={self.timeout}s and was stopped",
                T,
                _preview(stream),
            )
        if returned:  # the call returned; its output is what failed
            return Finding("bad-output", _bad_output(r, exc), T, _preview(stream))
        kind = "mutates-input" if _is_readonly_write(exc) else "exception"
        return Finding(kind, _describe(exc), T, _preview(stream))

    def _check_mean_time(self, seconds: float, runs: int, stream: FloatArray) -> None:
        """Without an active watchdog, record calls that took longer than the timeout on average."""
        assert self.timeout is not None
        per_call = seconds / max(runs, 1)
        if per_call > self.timeout:
            self.record(
                Finding(
                    "timeout",
                    f"calls took {per_call:.3g}s on average (timeout={self.timeout}s)",
                    int(stream.size),
                    _preview(stream),
                )
            )

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


class _WrongLength(Exception):
    pass


def _is_readonly_write(exc: BaseException) -> bool:
    return isinstance(exc, ValueError) and "read-only" in str(exc)


def _describe(exc: BaseException) -> str:
    frames = traceback.extract_tb(exc.__traceback__)
    where = ""
    if frames:
        last = frames[-1]
        where = f" ({Path(last.filename).name}:{last.lineno} in {last.name})"
    msg = str(exc)
    if len(msg) > 200:
        msg = msg[:197] + "..."
    return f"{type(exc).__name__}: {msg}{where}"


def _bad_output(r: Any, exc: BaseException) -> str:
    text = repr(r)
    if len(text) > 80:
        text = text[:77] + "..."
    return f"output {text} is not a sequence of numbers ({type(exc).__name__}: {exc})"


def as_target(obj: Any, *, timeout: float | None = 60.0) -> Target:
    """A :class:`Target` from a Target, a Mechanism, a callable or a spec string."""
    if timeout is not None:
        if isinstance(timeout, bool) or not isinstance(timeout, int | float):
            raise DprefTypeError(f"timeout={fmt(timeout)}: must be a number of seconds")
        if not (timeout > 0 and math.isfinite(timeout)):
            raise ParameterError(f"timeout={fmt(timeout)}: must be > 0 and finite")
    if isinstance(obj, Target):
        return obj
    if isinstance(obj, Mechanism):
        return Target(repr(obj), mechanism=obj, timeout=timeout)
    if isinstance(obj, str):
        name, fn = load_callable(obj)
        return Target(name, func=fn, timeout=timeout)
    if callable(obj):
        name = getattr(obj, "__qualname__", None) or repr(obj)
        module = getattr(obj, "__module__", None)
        return Target(f"{module}:{name}" if module else str(name), func=obj, timeout=timeout)
    raise DprefTypeError(
        f"target={fmt(obj)}: must be a Mechanism, a callable f(stream, rng) or 'module:function'"
    )


def seeded(seed: Any) -> np.random.Generator:
    """The Generator every audit draws from (NEP 19 seed handling)."""
    return make_rng(seed, "seed")
