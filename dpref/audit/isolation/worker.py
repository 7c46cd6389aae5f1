"""The process that runs an untrusted target, on dpref's behalf (docs/auditing.md, "Isolation").

Started by :class:`dpref.audit.isolation.supervisor.Worker` in one of two ways:

* **spawned** — ``python -m dpref.audit.isolation.worker REQ_FD REP_FD`` for a target named by a
  spec string; the target is imported here and never in dpref's process;
* **forked** — :func:`run_forked` in a child of dpref's process, for a callable passed
  through the Python API (it cannot be re-imported).

Either way the worker's fds 1 and 2 are a pipe dpref reads only as diagnostic text,
fd 0 is ``/dev/null``, and the protocol (:mod:`dpref.audit.isolation.protocol`) runs over two
dedicated pipes.  The worker answers one request at a time; :data:`HANDLERS` maps each
op to a handler ``(state, request) -> reply``: to add an op, add a handler (and a
method on the parent's side that sends it and checks the reply's arrays).

Inside a request the worker sends a ``progress`` frame at least every
:data:`PROGRESS_INTERVAL` seconds between calls; the parent kills the worker's process
group when none arrives within its timeout.  After every target call the worker checks
``os.getpid()`` and ends at once if it finds itself in a forked child; a fork made
through :func:`os.fork` is also ended inside the child by an at-fork hook, and the call
fails with the status ``forked``.
"""

from __future__ import annotations

import importlib
import importlib.util
import io
import json
import os
import resource
import sys
import time
import traceback
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from dpref.audit.isolation import protocol as P
from dpref.audit.isolation import sandbox

__all__ = [
    "HANDLERS",
    "PROGRESS_INTERVAL",
    "LoadError",
    "State",
    "check_spec",
    "generator_from",
    "import_target",
    "main",
    "run_forked",
    "to_row",
]

FloatArray = npt.NDArray[np.float64]
Handler = Callable[["State", P.Frame], P.Frame]

PROGRESS_INTERVAL = 0.05
"""Longest time between two heartbeats while the worker is making progress (seconds)."""

_REAL_KINDS = "fiu"
"""dtype kinds accepted as outputs: float, signed and unsigned integers (not bool)."""


_FORKED = "the target forked a child process (ended at once: targets must not create processes)"


class LoadError(Exception):
    """The spec cannot be loaded (an ordinary exception at import, no such attribute)."""


# ----------------------------------------------------------------- loading
def check_spec(spec: object) -> str | None:
    """Why ``spec`` is not a loadable ``module:function`` / ``file.py:function`` (None: fine).

    Checks only the syntax and that a named file exists: nothing is imported.
    """
    if not isinstance(spec, str) or ":" not in spec:
        return "expected module:function or file.py:function"
    where, _, func_name = spec.rpartition(":")
    if not where or not func_name.isidentifier():
        return "expected module:function or file.py:function"
    if _is_path(where) and not Path(where).is_file():
        return f"no such file {where}"
    return None


def _is_path(where: str) -> bool:
    return where.endswith(".py") or "/" in where or "\\" in where


def import_target(spec: str, source: tuple[str, bytes] | None = None) -> Any:
    """Import the callable ``spec`` names (in *this* process).

    ``source``: the resolved path and the bytes of a ``file.py`` target, already read
    (the file is then not looked at again: see :func:`_read_source`).  An ordinary
    exception while importing becomes a :class:`LoadError`; a ``BaseException``
    (``SystemExit`` …) propagates.
    """
    bad = check_spec(spec) if source is None else None
    if bad is not None:
        raise LoadError(bad)
    where, _, func_name = spec.rpartition(":")
    module: types.ModuleType | None
    try:
        if source is not None:
            mod_name = f"_dpref_target_{abs(hash(source[0]))}"
            module = types.ModuleType(mod_name)
            module.__file__ = source[0]
            sys.modules[mod_name] = module
            try:
                exec(compile(source[1], source[0], "exec"), module.__dict__)
            except BaseException:
                del sys.modules[mod_name]
                raise
        elif _is_path(where):
            path = Path(where)
            mod_name = f"_dpref_target_{abs(hash(str(path.resolve())))}"
            module = sys.modules.get(mod_name)
            if module is None:
                file_spec = importlib.util.spec_from_file_location(mod_name, path)
                if file_spec is None or file_spec.loader is None:
                    raise LoadError(f"cannot load {where}")
                module = importlib.util.module_from_spec(file_spec)
                sys.modules[mod_name] = module
                try:
                    file_spec.loader.exec_module(module)
                except BaseException:
                    del sys.modules[mod_name]
                    raise
        else:
            module = importlib.import_module(where)
    except LoadError:
        raise
    except Exception as exc:
        raise LoadError(f"importing it raised {type(exc).__name__}: {_text(exc)}") from None
    fn = getattr(module, func_name, None)
    if fn is None:
        raise LoadError(f"{where} has no attribute {func_name}")
    if not callable(fn):
        raise LoadError(f"{func_name} is not callable")
    return fn


# ------------------------------------------------------------- the state
@dataclass
class State:
    """What the worker keeps between requests."""

    rfd: int
    """Requests come in here."""
    wfd: int
    """Replies and heartbeats go out here."""
    pid: int
    """This worker's pid: any other value of ``os.getpid()`` means a forked child."""
    fn: Any = None
    """The target."""
    batched: bool = False
    """The target takes ``(n, T)`` streams (``fn.dpref_batched is True``)."""
    gen: np.random.Generator = field(default_factory=np.random.default_rng)
    """The Generator handed to the target (reseeded by requests that carry seed words)."""
    seq: int = 0
    """The sequence number of the request being served."""
    forks: int = 0
    """Forks the target made during this request."""
    box: sandbox.Sandbox = field(default_factory=sandbox.Sandbox)
    """The isolation this worker runs in (:mod:`dpref.audit.isolation.sandbox`)."""

    def forked(self) -> bool:
        """The target forked during this request (``os.fork``, libc ``fork``, a
        subprocess, a double fork into a new session: any process still there)."""
        return bool(self.forks) or sandbox.strays(self.box)


def _text(exc: BaseException) -> str:
    try:
        msg = str(exc)
    except BaseException:  # a hostile __str__
        msg = "<unprintable>"
    return msg if len(msg) <= 200 else msg[:197] + "..."


def describe(exc: BaseException) -> str:
    """``Type: message (file.py:line in function)``."""
    where = ""
    try:
        frames = traceback.extract_tb(exc.__traceback__)
        if frames:
            last = frames[-1]
            where = f" ({Path(last.filename).name}:{last.lineno} in {last.name})"
    except Exception:
        pass
    return f"{type(exc).__name__}: {_text(exc)}{where}"


def _failure(exc: BaseException) -> tuple[int, str]:
    """The status and detail of a call that raised ``exc``."""
    if isinstance(exc, SystemExit):
        return P.ST_EXITED, f"the target called sys.exit({_text(exc)}) (SystemExit)"
    if isinstance(exc, MemoryError):
        return P.ST_MEMORY, describe(exc)
    if isinstance(exc, ValueError) and "read-only" in _text(exc):
        return P.ST_MUTATES_INPUT, describe(exc)
    return P.ST_EXCEPTION, describe(exc)


def _bad(r: object, why: str) -> tuple[int, str]:
    try:
        text = repr(r)
    except BaseException:
        text = f"<{type(r).__name__}>"
    if len(text) > 80:
        text = text[:77] + "..."
    return P.ST_BAD_OUTPUT, f"output {text} is not a sequence of real numbers ({why})"


def to_row(r: object, shape: tuple[int, ...]) -> tuple[int, str, Any]:
    """``(status, detail, array)``: the target's output ``r`` checked strictly.

    Accepted: anything :func:`numpy.asarray` turns into an array of exactly ``shape``
    with a float or (un)signed integer dtype.  Rejected as ``bad-output``: strings and
    bytes (also numeric ones, also a single string), complex, bool, object, datetime64,
    timedelta64 and other dtypes, and arrays of another dimension; as ``wrong-length``:
    the right dimension but another length.
    """
    if isinstance(r, str | bytes | bytearray):
        return (*_bad(r, f"a {type(r).__name__}"), None)
    try:
        a = np.asarray(r)
    except Exception as exc:
        return (*_bad(r, describe(exc)), None)
    if a.ndim != len(shape):
        what = "a scalar" if a.ndim == 0 else f"{a.ndim}-d, shape {a.shape}"
        return (*_bad(r, what), None)
    if a.dtype.kind not in _REAL_KINDS:
        return (*_bad(r, f"dtype {a.dtype}"), None)
    if a.shape != shape:
        n = a.shape[0] if len(shape) == 1 else a.shape
        return P.ST_WRONG_LENGTH, f"returned {n} values for a stream of length {shape[-1]}", None
    return P.ST_OK, "", a


# ------------------------------------------------------------- framing
def _read_exact(fd: int, n: int) -> bytes:
    parts: list[bytes] = []
    while n:
        b = os.read(fd, min(n, 1 << 20))
        if not b:
            raise EOFError
        parts.append(b)
        n -= len(b)
    return b"".join(parts)


def read_request(fd: int) -> P.Frame:
    """The next request from dpref (blocking)."""
    frame, n_arrays, text_len = P.parse_header(_read_exact(fd, P.HEADER.size))
    for _ in range(n_arrays):
        dtype, shape = P.parse_array_header(_read_exact(fd, P.ARRAY.size), (P.F64, P.U64))
        raw = _read_exact(fd, 8 * int(np.prod(shape)))
        frame.arrays.append(np.frombuffer(raw, dtype=dtype).reshape(shape))
    frame.text = _read_exact(fd, text_len).decode("utf-8")
    return frame


def _write_all(fd: int, bufs: list[bytes | memoryview]) -> None:
    views = [memoryview(b).cast("B") for b in bufs]
    while views:
        n = os.writev(fd, views)
        while views and n >= len(views[0]):
            n -= len(views[0])
            views.pop(0)
        if views and n:
            views[0] = views[0][n:]


def send(st: State, frame: P.Frame) -> None:
    """Send ``frame`` as part of the request being served."""
    frame.seq = st.seq
    _write_all(st.wfd, P.encode(frame))


# ------------------------------------------------------------- handlers
def _op_load(st: State, req: P.Frame) -> P.Frame:
    """Set sys.path and the limits, import the target (spawned workers), say if batched."""
    opts = json.loads(req.text)
    if opts.get("path") is not None:
        sys.path[:] = [str(p) for p in opts["path"]]
    _limit_memory(opts.get("memory"))
    spec = opts.get("spec")
    if spec is not None:
        try:
            source = _read_source(str(spec))
            sandbox.drop_privileges(st.box)
            st.fn = import_target(str(spec), source)
        except LoadError as exc:
            return P.Frame(P.OP_LOAD, P.ST_LOAD_ERROR, text=str(exc))
        except SystemExit as exc:
            return P.Frame(
                P.OP_LOAD, P.ST_EXITED, text=f"importing it called sys.exit({_text(exc)})"
            )
        except MemoryError as exc:
            return P.Frame(P.OP_LOAD, P.ST_MEMORY, text=f"importing it raised {describe(exc)}")
    try:
        st.batched = getattr(st.fn, "dpref_batched", False) is True
    except Exception:
        st.batched = False
    try:
        callback = getattr(st.fn, "dpref_noise", None) == "callback"
    except Exception:
        callback = False
    flags = (P.FLAG_BATCHED if st.batched else 0) | (P.FLAG_CALLBACK if callback else 0)
    return P.Frame(P.OP_LOAD, flags=flags, text=json.dumps({"isolation": st.box.level}))


def _read_source(spec: str) -> tuple[str, bytes] | None:
    """The resolved path and the bytes of a ``file.py:function`` target's file, read
    before the worker drops its privileges (it may sit in a directory only dpref's user
    can read); None for a module name (imported from ``sys.path`` after the drop)."""
    bad = check_spec(spec)
    if bad is not None:
        raise LoadError(bad)
    where = spec.rpartition(":")[0]
    if not _is_path(where):
        return None
    try:
        path = Path(where).resolve()
        return str(path), path.read_bytes()
    except OSError as exc:
        raise LoadError(f"cannot read {where}: {exc.strerror}") from None


def generator_from(words: npt.NDArray[Any]) -> np.random.Generator:
    """The Generator seed words describe: ``[1, state hi, lo, inc hi, lo, has_uint32,
    uinteger]`` is an exact PCG64 state, ``[0, w…]`` entropy for a SeedSequence."""
    w = [int(v) for v in words]
    if w and w[0] == 1 and len(w) == 7:
        bg = np.random.PCG64()
        bg.state = {
            "bit_generator": "PCG64",
            "state": {"state": (w[1] << 64) | w[2], "inc": (w[3] << 64) | w[4]},
            "has_uint32": w[5],
            "uinteger": w[6],
        }
        return np.random.Generator(bg)
    return np.random.default_rng(w[1:])


def _op_call(st: State, req: P.Frame) -> P.Frame:
    """``count`` calls of the target on the stream; outputs ``(count, T)`` or a failure."""
    stream = np.array(req.arrays[0], dtype=np.float64)
    if len(req.arrays) > 1:
        st.gen = generator_from(req.arrays[1])
    if st.batched:
        return _call_batched(st, stream, req.count)
    T = stream.size
    n = req.count
    out = np.empty((n, T), dtype=np.float64)
    ref = stream.tobytes()
    f, gen, pid = st.fn, st.gen, st.pid
    clock = time.monotonic
    beat = clock() + PROGRESS_INTERVAL
    for i in range(n):
        view = stream.copy()
        view.flags.writeable = False
        try:
            r = f(view, gen)
        except BaseException as exc:
            if os.getpid() != pid:
                os._exit(0)
            status, text = _failure(exc)
            return P.Frame(P.OP_CALL, status, count=i, text=text)
        if os.getpid() != pid:
            os._exit(0)
        if st.forks:
            return P.Frame(P.OP_CALL, P.ST_FORKED, count=i, text=_FORKED)
        if view.tobytes() != ref:
            return P.Frame(
                P.OP_CALL,
                P.ST_MUTATES_INPUT,
                count=i,
                text="the target wrote into its (read-only) input stream",
            )
        status, text, row = to_row(r, (T,))
        if status != P.ST_OK:
            return P.Frame(P.OP_CALL, status, count=i, text=text)
        out[i] = row
        now = clock()
        if now >= beat:
            send(st, P.Frame(P.OP_PROGRESS, count=i + 1))
            beat = now + PROGRESS_INTERVAL
    if sandbox.strays(st.box):
        return P.Frame(P.OP_CALL, P.ST_FORKED, count=0, text=_FORKED)
    return P.Frame(P.OP_CALL, count=n, arrays=[out])


def _call_batched(st: State, stream: FloatArray, n: int) -> P.Frame:
    """One vectorised call ``f(streams (n, T), rng) -> (n, T)``."""
    T = stream.size
    streams = np.broadcast_to(stream, (n, T)).copy()
    streams.flags.writeable = False
    ref = streams.tobytes()
    try:
        r = st.fn(streams, st.gen)
    except BaseException as exc:
        if os.getpid() != st.pid:
            os._exit(0)
        status, text = _failure(exc)
        return P.Frame(P.OP_CALL, status, count=0, text=text)
    if os.getpid() != st.pid:
        os._exit(0)
    if st.forked():
        return P.Frame(P.OP_CALL, P.ST_FORKED, text=_FORKED)
    if streams.tobytes() != ref:
        return P.Frame(
            P.OP_CALL, P.ST_MUTATES_INPUT, text="the target wrote into its (read-only) streams"
        )
    status, text, out = to_row(r, (n, T))
    if status != P.ST_OK:
        if status == P.ST_WRONG_LENGTH:
            text = f"returned shape {_shape(r)} for {n} streams of length {T}"
        return P.Frame(P.OP_CALL, status, text=text)
    return P.Frame(P.OP_CALL, count=n, arrays=[np.ascontiguousarray(out, dtype=np.float64)])


def _shape(r: object) -> tuple[int, ...]:
    try:
        return tuple(int(d) for d in np.asarray(r).shape)
    except Exception:
        return ()


MAX_DRAWS = 1 << 22
"""Most scalar scripted (Laplace or normal) draws one scripted call may request (more is
a ``bad-output``)."""
MAX_LAW_RUNS = 64
"""Most runs of the draws' laws a scripted reply carries (more than one run is already a
mixed-noise target, which the parent does not analyse)."""


def _op_scripted(st: State, req: P.Frame) -> P.Frame:
    """One call ``f(stream, noise)`` with dpref's recording noise object: the outputs and
    the scales of the scripted draws it requested; the text is JSON ``{detail, other,
    unknown, laws}`` (its other requests and the run-length encoded laws of the scripted
    draws, also on a failure, where ``detail`` says what failed)."""
    from dpref.audit.isolation.recording import Requests, make_noise

    stream = np.array(req.arrays[0], dtype=np.float64)
    script = np.array(req.arrays[1], dtype=np.float64)
    requests = Requests()
    view = stream.copy()
    view.flags.writeable = False
    try:
        r = st.fn(view, make_noise(req.text, script, requests))
    except BaseException as exc:
        if os.getpid() != st.pid:
            os._exit(0)
        return _scripted(requests, *_failure(exc))
    if os.getpid() != st.pid:
        os._exit(0)
    if st.forked():
        return _scripted(requests, P.ST_FORKED, _FORKED)
    if view.tobytes() != stream.tobytes():
        text = "the target wrote into its (read-only) input stream"
        return _scripted(requests, P.ST_MUTATES_INPUT, text)
    if len(requests.scales) > MAX_DRAWS:
        text = f"requested {len(requests.scales)} scripted draws (at most {MAX_DRAWS})"
        return _scripted(requests, P.ST_BAD_OUTPUT, text)
    status, text, row = to_row(r, (stream.size,))
    if status != P.ST_OK:
        return _scripted(requests, status, text)
    arrays = [np.ascontiguousarray(row, dtype=np.float64), np.array(requests.scales)]
    return _scripted(requests, P.ST_OK, "", arrays)


def _scripted(
    requests: Any, status: int, detail: str, arrays: list[npt.NDArray[Any]] | None = None
) -> P.Frame:
    text = json.dumps(
        {
            "detail": detail[:4096],
            "other": requests.other[:64],
            "unknown": requests.unknown[:64],
            "laws": requests.laws[:MAX_LAW_RUNS],
        }
    )
    return P.Frame(P.OP_SCRIPTED, status, arrays=arrays or [], text=text)


def _op_injected(st: State, req: P.Frame) -> P.Frame:
    """One call ``f(stream, noise)`` with read-only arrays — or ``f(stream, noise, config)``
    when the target sets ``f.dpref_golden = "vector"`` (``config``: the request's JSON
    text, a dict); outputs ``(T,)``."""
    stream = np.array(req.arrays[0], dtype=np.float64)
    noise = np.array(req.arrays[1], dtype=np.float64)
    args: list[Any] = [stream.copy(), noise.copy()]
    for a in args:
        a.flags.writeable = False
    try:
        mode = getattr(st.fn, "dpref_golden", None)
        wants = isinstance(mode, str) and str.__eq__(mode, "vector") is True
    except Exception:
        wants = False
    if wants:
        args.append(json.loads(req.text or "{}"))
    try:
        r = st.fn(*args)
    except BaseException as exc:
        if os.getpid() != st.pid:
            os._exit(0)
        status, text = _failure(exc)
        return P.Frame(P.OP_INJECTED, status, text=text)
    if os.getpid() != st.pid:
        os._exit(0)
    if st.forked():
        return P.Frame(P.OP_INJECTED, P.ST_FORKED, text=_FORKED)
    if args[0].tobytes() != stream.tobytes() or args[1].tobytes() != noise.tobytes():
        text = "the target wrote into its (read-only) input"
        return P.Frame(P.OP_INJECTED, P.ST_MUTATES_INPUT, text=text)
    status, text, row = to_row(r, (stream.size,))
    if status != P.ST_OK:
        return P.Frame(P.OP_INJECTED, status, text=text)
    return P.Frame(P.OP_INJECTED, arrays=[np.ascontiguousarray(row, dtype=np.float64)])


HANDLERS: dict[int, Handler] = {
    P.OP_LOAD: _op_load,
    P.OP_CALL: _op_call,
    P.OP_SCRIPTED: _op_scripted,
    P.OP_INJECTED: _op_injected,
}
"""The dispatch table: op code → handler.  A handler returns the reply frame (any
number of float64 arrays; a nonzero status for a failure the parent turns into a
finding) and may :func:`send` ``progress`` frames while it works."""


# ------------------------------------------------------------- the loop
def _limit_memory(limit: object) -> None:
    """Cap the address space at what the worker has now plus ``limit`` bytes."""
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if limit is None:
        return
    try:
        with open("/proc/self/statm") as fh:
            now = int(fh.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        now = 0
    cap = now + int(str(limit))
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard != resource.RLIM_INFINITY:
        cap = min(cap, hard)
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))  # the hard limit too: no way back up


def _flush_std() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:
            pass


def serve(st: State) -> None:
    """Answer requests until dpref closes the request pipe."""

    def forked_child() -> None:
        os._exit(0)

    def forked_parent() -> None:
        st.forks += 1

    os.register_at_fork(after_in_child=forked_child, after_in_parent=forked_parent)
    while True:
        try:
            req = read_request(st.rfd)
        except BaseException:
            os._exit(0)
        st.seq = req.seq
        st.forks = 0
        handler = HANDLERS.get(req.op)
        try:
            if handler is None:
                reply = P.Frame(req.op, P.ST_EXCEPTION, text=f"unknown op {req.op}")
            else:
                reply = handler(st, req)
        except MemoryError:
            reply = P.Frame(req.op, P.ST_MEMORY, text="MemoryError in the worker")
        except BaseException as exc:
            status, text = _failure(exc)
            reply = P.Frame(req.op, status, text=text)
        if os.getpid() != st.pid:
            os._exit(0)
        sandbox.kill_strays(st.box)
        _flush_std()
        try:
            send(st, reply)
        except BaseException:
            os._exit(71)


def _own_std_streams() -> None:
    """New ``sys.stdout`` / ``sys.stderr`` on fds 1 and 2 (after the fds were redirected)."""
    for fd, name in ((1, "stdout"), (2, "stderr")):
        raw = io.FileIO(fd, "w", closefd=False)
        setattr(sys, name, io.TextIOWrapper(raw, line_buffering=True, errors="backslashreplace"))


def _die_with_parent(parent: int) -> None:
    """Have Linux SIGKILL this worker when dpref's process dies (``PR_SET_PDEATHSIG``):
    a dpref that is killed cannot end its workers, and a target stuck in a loop would
    otherwise run on as an orphan.  (The signal follows the *thread* that started the
    worker: a worker started from a thread that then exits is ended too — a ``killed``
    finding, never a silent pass.)  Elsewhere this does nothing."""
    try:
        import ctypes
        import signal

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, int(signal.SIGKILL), 0, 0, 0)  # 1 = PR_SET_PDEATHSIG
    except (OSError, AttributeError, TypeError):
        return
    if os.getppid() != parent:  # dpref died before the request took effect
        os._exit(0)


def run_forked(fn: Any, rfd: int, wfd: int, diag: int, parent: int) -> None:
    """The body of a forked worker (never returns): redirect, close the rest, serve."""
    try:
        _die_with_parent(parent)
        os.setsid()
        box = sandbox.enter()
        os.dup2(diag, 1)
        os.dup2(diag, 2)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        lo = 3
        for keep in sorted((rfd, wfd)):
            if keep > lo:
                os.closerange(lo, keep)
            lo = keep + 1
        os.closerange(lo, 1 << 16)
        _own_std_streams()
        sandbox.drop_privileges(box)
        serve(State(rfd, wfd, os.getpid(), fn=fn, box=box))
    finally:
        os._exit(70)


def main(argv: list[str] | None = None) -> None:
    """``python -m dpref.audit.isolation.worker REQ_FD REP_FD PARENT_PID`` (started by dpref)."""
    args = sys.argv[1:] if argv is None else argv
    rfd, wfd = int(args[0]), int(args[1])
    if len(args) > 2:
        _die_with_parent(int(args[2]))
    os.set_inheritable(rfd, False)
    os.set_inheritable(wfd, False)
    box = sandbox.enter()
    try:
        serve(State(rfd, wfd, os.getpid(), box=box))
    finally:
        os._exit(70)


if __name__ == "__main__":
    main()
