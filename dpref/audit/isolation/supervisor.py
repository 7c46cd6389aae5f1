"""dpref's side of a target's worker process: start it, talk to it, enforce its limits.

A :class:`Worker` is started either by spawning ``python -m dpref.audit.isolation.worker``
(a target named by a spec string: imported only there) or by forking dpref's own
process (a callable passed through the Python API).  It runs in its own session, so
:meth:`Worker.kill` ends its whole process group, including anything it forked.

Every wait on the worker has a deadline, enforced here with :func:`select.poll` and
``SIGKILL`` — nothing the target does (catching ``BaseException``, ignoring
``SIGALRM``, looping in ``__len__``) can stop it.  A worker that dies, overruns or
sends a frame that does not parse raises :class:`WorkerDied` with the finding kind
(``timeout``, ``exited``, ``killed``, ``protocol``) and is killed; the caller starts a
fresh one if it wants to go on.  What the worker writes to its fds 1 and 2 is kept
(at most :data:`DIAG_LIMIT` bytes) as diagnostic text and never reaches dpref's stdout.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
import warnings
import weakref
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

import dpref
from dpref.audit.isolation import protocol as P
from dpref.audit.isolation import sandbox
from dpref.audit.isolation.worker import run_forked

__all__ = ["DIAG_LIMIT", "GRACE", "Worker", "WorkerDied"]

FloatArray = npt.NDArray[np.float64]

SCRIPTED_MAX_DRAWS = 1 << 22
"""Largest number of Laplace scales a scripted reply may carry (the worker's ``MAX_DRAWS``)."""
GRACE = 0.25
"""Seconds allowed beyond the timeout for heartbeats to arrive (see worker.PROGRESS_INTERVAL)."""
DIAG_LIMIT = 1 << 16
"""Bytes of a worker's stdout/stderr kept; the rest is counted and dropped."""
_EXIT_WAIT = 1.0
"""Seconds to wait for a worker that closed its pipe to exit, before killing it."""
_PIPE_SIZE = 1 << 20


class WorkerDied(Exception):
    """The worker is gone (or was killed): ``kind`` and ``detail`` of the finding."""

    def __init__(self, kind: str, detail: str, done: int) -> None:
        super().__init__(f"{kind}: {detail}")
        self.kind = kind
        self.detail = detail
        self.done = done
        """Calls of the request that had completed (from the heartbeats)."""


class _Deadline(Exception):
    pass


class _Eof(Exception):
    pass


def _reap(proc: dict[str, Any], fds: list[int]) -> None:
    """Kill the process group of the worker and reap it (also a weakref finalizer).

    The group is killed while its leader is still unreaped (a zombie at worst), so its
    id cannot have been reused by then.
    """
    pid, popen = proc["pid"], proc["popen"]
    if not proc["reaped"] and pid > 0:
        sandbox.kill_tree(pid)  # any session, any fork: stopped first, then killed
        for kill in (os.killpg, os.kill):
            try:
                kill(pid, signal.SIGKILL)
            except OSError:
                pass
        try:
            if popen is not None:
                popen.wait()
            else:
                os.waitpid(pid, 0)
        except (OSError, subprocess.SubprocessError):
            pass
        proc["reaped"] = True
    for fd in fds:
        try:
            os.close(fd)
        except OSError:
            pass
    fds.clear()


def _earliest(timeout: float | None, cap: float | None) -> float | None:
    """The deadline of the next frame: ``timeout`` (+ grace) from now, never past ``cap``."""
    if timeout is None:
        return cap
    mine = time.monotonic() + timeout + GRACE
    return mine if cap is None else min(mine, cap)


def _signal_name(num: int) -> str:
    try:
        return signal.Signals(num).name
    except ValueError:
        return f"signal {num}"


class Worker:
    """One worker process running one target.

    Parameters
    ----------
    spec
        ``module:function`` / ``file.py:function``: spawn a worker that imports it.
    fn
        A callable: fork a worker that runs it (when ``spec`` is None).
    memory_limit
        Bytes of address space the worker may add once loaded (``RLIMIT_AS``); None: no limit.
    """

    def __init__(self, *, spec: str | None, fn: Any, memory_limit: int | None) -> None:
        self.spec = spec
        self.memory_limit = memory_limit
        self.batched = False
        self.callback = False
        """The target declares the callback noise protocol (known once loaded)."""
        self.dead = False
        self.isolation = "none"
        """The isolation level the worker reported (:mod:`dpref.audit.isolation.sandbox`)."""
        self._seq = 0
        self._diag = bytearray()
        self._dropped = 0
        self._emitted = 0
        sandbox.protect_parent()
        req_r, self._req = os.pipe()
        self._rep, rep_w = os.pipe()
        self._diag_fd, diag_w = os.pipe()
        for fd in (self._req, self._rep):
            try:
                import fcntl

                fcntl.fcntl(fd, 1031, _PIPE_SIZE)  # F_SETPIPE_SZ (Linux); fewer wake-ups
            except (ImportError, OSError):
                pass
        self._popen: subprocess.Popen[bytes] | None = None
        if spec is not None:
            self._popen = self._spawn(req_r, rep_w, diag_w)
            self.pid = self._popen.pid
        else:
            self.pid = self._fork(fn, req_r, rep_w, diag_w)
        for fd in (req_r, rep_w, diag_w):
            os.close(fd)
        for fd in (self._req, self._rep, self._diag_fd):
            os.set_blocking(fd, False)
        self._poll = select.poll()
        self._poll.register(self._rep, select.POLLIN)
        self._poll.register(self._diag_fd, select.POLLIN)
        self._diag_open = True
        self._fds = [self._req, self._rep, self._diag_fd]
        self._proc: dict[str, Any] = {"pid": self.pid, "popen": self._popen, "reaped": False}
        self._finalizer = weakref.finalize(self, _reap, self._proc, self._fds)

    # ------------------------------------------------------------ starting
    @staticmethod
    def _spawn(req_r: int, rep_w: int, diag_w: int) -> subprocess.Popen[bytes]:
        env = dict(os.environ)
        root = str(Path(dpref.__file__).resolve().parent.parent)  # the same dpref as ours
        env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH", "")) if p)
        # numpy's BLAS starts no threads: a multi-threaded process cannot unshare a user
        # namespace (the worker's sandbox), and one thread keeps the target's runs alike
        for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
            env[var] = "1"
        return subprocess.Popen(
            [
                sys.executable,
                "-m",
                "dpref.audit.isolation.worker",
                str(req_r),
                str(rep_w),
                str(os.getpid()),
            ],
            stdin=subprocess.DEVNULL,
            stdout=diag_w,
            stderr=diag_w,
            pass_fds=(req_r, rep_w),
            start_new_session=True,
            env=env,
        )

    @staticmethod
    def _fork(fn: Any, req_r: int, rep_w: int, diag_w: int) -> int:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:
                pass
        parent = os.getpid()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # fork with threads (3.12+)
            pid = os.fork()
        if pid == 0:  # pragma: no cover - the child
            try:
                run_forked(fn, req_r, rep_w, diag_w, parent)
            finally:
                os._exit(70)
        return pid

    # ------------------------------------------------------------ requests
    def load(self, timeout: float | None) -> P.Frame:
        """Send ``load`` (limits, sys.path, the spec); the reply (status may be a failure)."""
        text = json.dumps(
            {
                "spec": self.spec,
                "path": list(sys.path) if self.spec is not None else None,
                "memory": self.memory_limit,
            }
        )
        reply = self.request(P.Frame(P.OP_LOAD, text=text), timeout, max_bytes=0, limit=0)
        if reply.arrays or reply.flags & ~(P.FLAG_BATCHED | P.FLAG_CALLBACK):
            self._protocol("a load reply with arrays or unknown flags")
        self.batched = bool(reply.flags & P.FLAG_BATCHED)
        self.callback = bool(reply.flags & P.FLAG_CALLBACK)
        if reply.status == P.ST_OK:
            try:
                level = json.loads(reply.text).get("isolation")
            except (ValueError, AttributeError):
                level = None
            if level not in sandbox.LEVELS:
                self._protocol("a load reply without a known isolation level")
            self.isolation = str(level)
        return reply

    def call(
        self,
        stream: FloatArray,
        count: int,
        seed: npt.NDArray[np.uint64] | None,
        timeout: float | None,
    ) -> P.Frame:
        """``count`` calls on ``stream``: a reply with outputs ``(count, T)`` (validated here),
        or with a failure status and the failing call's index in ``count``."""
        T = int(stream.size)
        arrays: list[npt.NDArray[Any]] = [np.ascontiguousarray(stream, dtype=np.float64)]
        if seed is not None:
            arrays.append(seed)
        reply = self.request(
            P.Frame(P.OP_CALL, count=count, arrays=arrays), timeout, 8 * count * T, count
        )
        if reply.flags:
            self._protocol(f"a call reply with flags {reply.flags:#x}")
        if reply.status == P.ST_OK:
            shapes = [a.shape for a in reply.arrays]
            if shapes != [(count, T)] or reply.count != count:
                self._protocol(f"a call reply with arrays {shapes} for {count} calls at T={T}")
        elif reply.arrays or reply.count >= max(count, 1):
            self._protocol("a failure reply with arrays or a call index out of range")
        return reply

    def scripted(
        self, stream: FloatArray, script: FloatArray, protocol: str, timeout: float | None
    ) -> P.Frame:
        """One call with dpref's scripted noise object (op ``scripted``): a reply with
        arrays ``[outputs (T,), laplace scales (n,)]`` (shapes validated here) and the
        other requests as JSON text, or a failure status."""
        T = int(stream.size)
        arrays: list[npt.NDArray[Any]] = [
            np.ascontiguousarray(stream, dtype=np.float64),
            np.ascontiguousarray(script, dtype=np.float64),
        ]
        frame = P.Frame(P.OP_SCRIPTED, count=1, arrays=arrays, text=protocol)
        reply = self.request(frame, timeout, 8 * (T + SCRIPTED_MAX_DRAWS), 1)
        if reply.flags:
            self._protocol(f"a scripted reply with flags {reply.flags:#x}")
        if reply.status == P.ST_OK:
            shapes = [a.shape for a in reply.arrays]
            if len(shapes) != 2 or shapes[0] != (T,) or len(shapes[1]) != 1:
                self._protocol(f"a scripted reply with arrays {shapes} at T={T}")
        elif reply.arrays:
            self._protocol("a failure reply with arrays")
        return reply

    def injected(
        self, stream: FloatArray, noise: FloatArray, config: str, timeout: float | None
    ) -> P.Frame:
        """One call with injected node noise (op ``injected``): a reply with the outputs
        ``(T,)`` (shape validated here), or with a failure status.  ``config`` (JSON text,
        or empty) is passed to a target that takes the vector's configuration."""
        T = int(stream.size)
        arrays: list[npt.NDArray[Any]] = [
            np.ascontiguousarray(stream, dtype=np.float64),
            np.ascontiguousarray(noise, dtype=np.float64),
        ]
        frame = P.Frame(P.OP_INJECTED, count=1, arrays=arrays, text=config)
        reply = self.request(frame, timeout, 8 * T, 0)
        if reply.flags:
            self._protocol(f"an injected reply with flags {reply.flags:#x}")
        if reply.status == P.ST_OK:
            shapes = [a.shape for a in reply.arrays]
            if shapes != [(T,)]:
                self._protocol(f"an injected reply with arrays {shapes} at T={T}")
        elif reply.arrays:
            self._protocol("a failure reply with arrays")
        return reply

    def request(self, frame: P.Frame, timeout: float | None, max_bytes: int, limit: int) -> P.Frame:
        """Send ``frame`` and return the reply to it.

        ``timeout`` bounds the time between two frames from the worker, and
        ``timeout × max(limit, 1)`` (+ :data:`GRACE`) the whole request: a wall-clock cap
        fixed when the request is sent, which no stream of frames extends.  Each heartbeat
        must make progress (its count strictly above the last one, at most ``limit``), so
        at most ``limit`` of them arrive.  ``max_bytes`` bounds the array payload of the
        reply.  Raises :class:`WorkerDied` (the worker is then killed).
        """
        if self.dead:
            raise WorkerDied("exited", "the worker is gone", 0)
        self._seq = (self._seq + 1) & 0xFFFFFFFF
        frame.seq = self._seq
        done = 0
        cap = None if timeout is None else time.monotonic() + timeout * max(limit, 1) + GRACE
        try:
            self._send(P.encode(frame), timeout, cap)
            while True:
                reply = self._read_frame(timeout, max_bytes, cap)
                if reply.seq != self._seq:
                    raise P.ProtocolError(f"seq {reply.seq}, expected {self._seq}")
                if reply.op == P.OP_PROGRESS:
                    if (
                        reply.arrays
                        or reply.text
                        or reply.status
                        or reply.flags
                        or not done < reply.count <= limit
                    ):
                        raise P.ProtocolError("a malformed progress frame")
                    done = reply.count
                    continue
                if reply.op != frame.op:
                    raise P.ProtocolError(f"reply op {reply.op} to a request of op {frame.op}")
                return reply
        except _Deadline:
            self.kill()
            raise WorkerDied(
                "timeout", f"ran longer than timeout={timeout}s and was stopped", done
            ) from None
        except P.ProtocolError as exc:
            self.kill()
            why = f"the worker sent a malformed frame ({exc})"
            raise WorkerDied("protocol", why, done) from None
        except _Eof:
            raise self._gone(done) from None

    def _protocol(self, what: str) -> None:
        self.kill()
        raise WorkerDied("protocol", f"the worker sent {what}", 0)

    def _gone(self, done: int) -> WorkerDied:
        """The worker closed its pipe: how it ended (killing it if it did not)."""
        status = self._wait_exit(_EXIT_WAIT)
        self.kill()
        tail = self._diag_tail()
        if status is None:
            return WorkerDied("protocol", "the worker closed its pipe but kept running", done)
        if status < 0:
            name = _signal_name(-status)
            why = " (out of memory?)" if -status == signal.SIGKILL else ""
            return WorkerDied("killed", f"the worker was killed by {name}{why}{tail}", done)
        return WorkerDied("exited", f"the worker exited with status {status}{tail}", done)

    def _diag_tail(self) -> str:
        self._drain_diag()
        lines = bytes(self._diag).decode("utf-8", "replace").strip().splitlines()
        if not lines:
            return ""
        last = lines[-1] if len(lines[-1]) <= 120 else lines[-1][:117] + "..."
        return f"; its last output: {last}"

    def _wait_exit(self, seconds: float) -> int | None:
        """The exit status (negative: killed by that signal), or None if still running.

        Observes the exit without reaping (``WNOWAIT``): :meth:`kill` reaps it after
        killing the rest of its process group.
        """
        end = time.monotonic() + seconds
        while True:
            try:
                res = os.waitid(os.P_PID, self.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
            except ChildProcessError:
                return 0
            if res is not None and res.si_pid == self.pid:
                if res.si_code == os.CLD_EXITED:
                    return int(res.si_status)
                return -int(res.si_status)
            if time.monotonic() >= end:
                return None
            time.sleep(0.005)

    # ------------------------------------------------------------ the pipes
    def _send(
        self, bufs: list[bytes | memoryview], timeout: float | None, cap: float | None
    ) -> None:
        views = [memoryview(b).cast("B") for b in bufs]
        deadline = _earliest(timeout, cap)
        while views:
            try:
                n = os.writev(self._req, views)
            except BlockingIOError:
                self._wait(select.POLLOUT, deadline)
                continue
            except BrokenPipeError:
                raise _Eof() from None
            while views and n >= len(views[0]):
                n -= len(views[0])
                views.pop(0)
            if views and n:
                views[0] = views[0][n:]

    def _wait(self, event: int, deadline: float | None) -> None:
        """Until the request pipe is writable (POLLOUT) or the reply pipe readable."""
        poll = self._poll
        if event == select.POLLOUT:
            poll = select.poll()
            poll.register(self._req, select.POLLOUT)
            if self._diag_open:
                poll.register(self._diag_fd, select.POLLIN)
        while True:
            wait_ms = None
            if deadline is not None:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise _Deadline()
                wait_ms = max(1, int(left * 1000))
            ready = False
            for fd, _ in poll.poll(wait_ms):
                if fd == self._diag_fd:
                    if not self._drain_diag() and poll is not self._poll:
                        poll.unregister(self._diag_fd)
                else:
                    ready = True
            if ready:
                return

    def _drain_diag(self) -> bool:
        """Read what the worker wrote to fds 1/2; False at end of file."""
        if not self._diag_open:
            return False
        while True:
            try:
                b = os.read(self._diag_fd, 1 << 16)
            except BlockingIOError:
                return True
            except OSError:
                b = b""
            if not b:
                self._diag_open = False
                try:
                    self._poll.unregister(self._diag_fd)
                except KeyError:
                    pass
                return False
            room = DIAG_LIMIT - len(self._diag)
            self._diag += b[:room]
            self._dropped += max(0, len(b) - room)

    def take_diag(self) -> str:
        """The diagnostic text written since the last call (control characters escaped)."""
        self._drain_diag()
        new = bytes(self._diag[self._emitted :]).decode("utf-8", "replace")
        self._emitted = len(self._diag)
        if self._dropped and self._emitted >= DIAG_LIMIT:
            new += f"\n[dpref: {self._dropped} more bytes of target output dropped]\n"
            self._dropped = 0
        return "".join(c if c.isprintable() or c in "\n\t" else f"\\x{ord(c):02x}" for c in new)

    def _recv(self, n: int, deadline: float | None) -> bytearray:
        buf = bytearray(n)
        view = memoryview(buf)
        pos = 0
        while pos < n:
            try:
                k = os.readv(self._rep, [view[pos:]])
            except BlockingIOError:
                self._wait(select.POLLIN, deadline)
                continue
            if k == 0:
                raise _Eof()
            pos += k
        return buf

    def _read_frame(self, timeout: float | None, max_bytes: int, cap: float | None) -> P.Frame:
        deadline = _earliest(timeout, cap)
        frame, n_arrays, text_len = P.parse_header(bytes(self._recv(P.HEADER.size, deadline)))
        total = 0
        for _ in range(n_arrays):
            dtype, shape = P.parse_array_header(bytes(self._recv(P.ARRAY.size, deadline)), (P.F64,))
            size = 8 * int(np.prod(shape))
            total += size
            if total > max_bytes:
                raise P.ProtocolError(f"arrays of {total} bytes (at most {max_bytes} expected)")
            raw = self._recv(size, deadline)
            frame.arrays.append(np.frombuffer(raw, dtype=dtype).reshape(shape))
        frame.text = bytes(self._recv(text_len, deadline)).decode("utf-8", "replace")
        return frame

    # ------------------------------------------------------------ the end
    def kill(self) -> None:
        """Kill the worker's process group and reap it (idempotent)."""
        self.dead = True
        self._drain_diag()
        self._finalizer()
