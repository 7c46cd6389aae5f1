"""Hostile targets of issue 24 ("a gate a target can hang, stop or forge").

Each is ``f(stream, rng)`` as a third party could write it; most release the exact prefix
sums (no noise at all), so an audit that is not fooled proves a violation.  Against the
supervisor of before issue 24 each one hung dpref, stopped or killed it, forged its
report, or left a process running after dpref had exited.  Processes they leave behind
name themselves ``$DPREF_TEST_TOKEN`` (``/proc/PID/comm``) so a test can look for them.
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
import time
from typing import Any

import numpy as np

Array = np.ndarray[Any, Any]
FORGED = b'{"verdict": "no-violation-found", "violation": false, "findings": []}\n'


def _worker_state() -> Any:
    """The worker's ``State`` (pipes and sequence number), found on the call stack."""
    frame = sys._getframe(1)
    while frame is not None:
        st = frame.f_locals.get("st")
        if st is not None and hasattr(st, "wfd") and hasattr(st, "seq"):
            return st
        frame = frame.f_back  # type: ignore[assignment]
    raise RuntimeError("no worker state on the stack")


def beats_forever(x: Array, rng: np.random.Generator) -> Any:
    """Well-formed heartbeats every 50 ms, never an answer (defeated ``--timeout``)."""
    from dpref.audit.isolation import protocol as P
    from dpref.audit.isolation.worker import send

    st = _worker_state()
    while True:
        send(st, P.Frame(P.OP_PROGRESS, count=0))
        time.sleep(0.05)


def beats_counting(x: Array, rng: np.random.Generator) -> Any:
    """Heartbeats whose count goes up by one each time, forever."""
    from dpref.audit.isolation import protocol as P
    from dpref.audit.isolation.worker import send

    st = _worker_state()
    n = 0
    while True:
        n += 1
        send(st, P.Frame(P.OP_PROGRESS, count=n))
        time.sleep(0.05)


def _parents() -> list[int]:
    """dpref's pid as the worker can learn it (its command line, its parent)."""
    pids = [os.getppid()]
    if len(sys.argv) > 3 and sys.argv[3].isdigit():
        pids.append(int(sys.argv[3]))
    return [p for p in pids if p > 1]


def forges_report(x: Array, rng: np.random.Generator) -> Any:
    """Writes a passing report into dpref's stdout through ``/proc/PID/fd/1``."""
    for pid in _parents():
        try:
            fd = os.open(f"/proc/{pid}/fd/1", os.O_WRONLY)
        except OSError:
            continue
        try:
            os.write(fd, FORGED)
        except OSError:
            pass
        os.close(fd)
    return np.cumsum(x)


def stops_parent(x: Array, rng: np.random.Generator) -> Any:
    """SIGSTOPs dpref (it hung for ever)."""
    for pid in _parents():
        try:
            os.kill(pid, signal.SIGSTOP)
        except OSError:
            pass
    return np.cumsum(x)


def forges_then_kills_parent(x: Array, rng: np.random.Generator) -> Any:
    """Writes the forged report, then SIGKILLs dpref: exactly one forged object was left."""
    forges_report(x, rng)
    for pid in _parents():
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    return np.cumsum(x)


def _name_me() -> None:
    token = os.environ.get("DPREF_TEST_TOKEN", "dpref-stray").encode()[:15]
    ctypes.CDLL(None).prctl(15, ctypes.c_char_p(token), 0, 0, 0)  # PR_SET_NAME


def libc_forks(x: Array, rng: np.random.Generator) -> Any:
    """``fork()`` through libc (no at-fork hook runs); the child lingers for ever."""
    libc = ctypes.CDLL(None)
    if libc.fork() == 0:
        _name_me()
        while True:
            time.sleep(1)
    return np.cumsum(x) + rng.laplace(0.0, 1.0, x.size)


def double_forks_detached(x: Array, rng: np.random.Generator) -> Any:
    """A libc double fork into a new session: the grandchild is an orphan in its own session."""
    libc = ctypes.CDLL(None)
    if libc.fork() == 0:
        os.setsid()
        if libc.fork() == 0:
            _name_me()
            while True:
                time.sleep(1)
        os._exit(0)
    time.sleep(0.05)
    return np.cumsum(x) + rng.laplace(0.0, 1.0, x.size)


def forks_then_exits(x: Array, rng: np.random.Generator) -> Any:
    """A libc double fork into a new session, then the worker ends itself: the orphan's
    subreaper is gone with it."""
    libc = ctypes.CDLL(None)
    if libc.fork() == 0:
        os.setsid()
        if libc.fork() == 0:
            _name_me()
            while True:
                time.sleep(1)
        os._exit(0)
    time.sleep(0.05)
    os._exit(0)


def spawns_session(x: Array, rng: np.random.Generator) -> Any:
    """A subprocess in a new session that outlives the call."""
    token = os.environ.get("DPREF_TEST_TOKEN", "dpref-stray")[:15]
    code = (
        "import ctypes, time\n"
        f"ctypes.CDLL(None).prctl(15, ctypes.c_char_p({token.encode()!r}), 0, 0, 0)\n"
        "time.sleep(1000)\n"
    )
    subprocess.Popen([sys.executable, "-c", code], start_new_session=True)
    return np.cumsum(x) + rng.laplace(0.0, 1.0, x.size)


def laplace(x: Array, rng: np.random.Generator) -> Any:
    """Simple II with Lap(1) per item (ε = 1 exactly): the well-behaved control."""
    return np.cumsum(x + rng.laplace(0.0, 1.0, x.size))


def injected_beats_forever(stream: Array, noise: Array) -> Any:
    """``golden run`` protocol ``f(stream, noise)``: heartbeats for ever."""
    return beats_forever(stream, np.random.default_rng(0))
