"""Where an untrusted target runs: namespaces, an unprivileged uid, and no survivors.

A target's worker (and an external ``golden run --command``) is started under a small
*keeper* process that builds the strongest isolation Linux allows, best first:

* ``pid-namespace`` — the keeper ``unshare``\\ s a new PID namespace (as root directly,
  otherwise inside a new user namespace that maps only the caller's uid) and forks an
  *init* (PID 1 there) that forks the worker (PID 2).  dpref's process, and every other
  process of the machine, has no pid inside the namespace: the target cannot signal,
  stop or ``ptrace`` it, nor open ``/proc/PID/fd`` through a pidfd.  When init exits,
  the kernel kills every process left in the namespace (any session, any ``fork``).
* ``uid`` is added when dpref runs as root: the worker drops to uid/gid 65534
  (``nobody``) after its pipes are prepared and sets ``PR_SET_NO_NEW_PRIVS``, so it has no
  permission on dpref's (root's) process and files.  When the Python installation is not
  usable by that uid (an interpreter under ``/root``) — and always for an external
  ``--command``, which may live in the caller's private directories — the worker keeps
  uid 0 but drops every capability, also from its bounding set (``nocaps``): no
  ``CAP_KILL``, ``CAP_SYS_PTRACE`` or ``CAP_DAC_OVERRIDE``, never regained by ``exec``.
* ``subreaper`` — no namespace: the keeper forks the worker, and both are child
  subreapers (``PR_SET_CHILD_SUBREAPER``), so every orphan of the target becomes the
  worker's child (found and killed after each request) or, once the worker is gone, the
  keeper's (killed when the worker ends).

In every mode dpref makes its own process non-dumpable (``PR_SET_DUMPABLE`` 0): a process
without ``CAP_SYS_PTRACE`` in dpref's user namespace cannot open ``/proc/<dpref>/fd/1``
(a forged report on dpref's stdout) even under the same uid.  At the end of every request
the worker kills every process the target started (:func:`kill_strays`), and when dpref
ends a worker it stops and kills the worker's whole process tree (:func:`kill_tree`).

:func:`level` names what was in force (``"pid-namespace+uid"``, ``"pid-namespace"``,
``"uid+subreaper"``, ``"subreaper"``, ``"none"`` off Linux); reports carry it.
"""

from __future__ import annotations

import ctypes
import os
import signal
import struct
import sys
from collections.abc import Sequence
from pathlib import Path

__all__ = [
    "LEVELS",
    "NOBODY",
    "CommandResult",
    "Sandbox",
    "drop_privileges",
    "enter",
    "kill_strays",
    "kill_tree",
    "main",
    "protect_parent",
    "run_command",
    "strays",
]

NOBODY = 65534
"""The uid and gid a worker started by root drops to."""

LEVELS = (
    "pid-namespace+uid",
    "pid-namespace+nocaps",
    "pid-namespace",
    "subreaper+uid",
    "subreaper+nocaps",
    "subreaper",
    "none",
)
"""Every isolation level, strongest first (see the module docstring)."""

_CLONE_NEWUSER = 0x10000000
_CLONE_NEWPID = 0x20000000
_PR_SET_PDEATHSIG = 1
_PR_SET_DUMPABLE = 4
_PR_SET_CHILD_SUBREAPER = 36
_PR_SET_NO_NEW_PRIVS = 38
_STATUS = struct.Struct("<i")


def _libc() -> ctypes.CDLL | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None


def _prctl(option: int, arg: int) -> bool:
    libc = _libc()
    if libc is None:
        return False
    return int(libc.prctl(option, arg, 0, 0, 0)) == 0


def protect_parent() -> None:
    """Make dpref's own process non-dumpable: no ``/proc/<pid>/fd``, ``mem`` or ``ptrace``
    for a process lacking ``CAP_SYS_PTRACE`` in dpref's user namespace (Linux; else a no-op).
    """
    _prctl(_PR_SET_DUMPABLE, 0)


class Sandbox:
    """What the keeper established, carried into init and the worker."""

    def __init__(self) -> None:
        self.pidns = False
        """The worker runs in its own PID namespace (as PID 2; init is PID 1)."""
        self.drop = ""
        """``uid``: the worker drops to :data:`NOBODY`; ``nocaps``: it keeps uid 0 and drops
        every capability; empty: dpref does not run as root (nothing to drop)."""
        self.subreaper = False
        """The worker is a child subreaper (no PID namespace)."""

    @property
    def level(self) -> str:
        """The isolation level, as reports print it."""
        base = "pid-namespace" if self.pidns else "subreaper" if self.subreaper else ""
        if not base:
            return "none"
        return f"{base}+{self.drop}" if self.drop else base


def _write(path: str, text: str) -> bool:
    try:
        with open(path, "w") as fh:
            fh.write(text)
        return True
    except OSError:
        return False


def _unshare_pid() -> bool:
    """A new PID namespace for this process's children (a user namespace first when not
    root); False (nothing changed) where Linux refuses."""
    libc = _libc()
    if libc is None or os.environ.get("DPREF_NO_NAMESPACES"):
        return False
    if os.geteuid() == 0:
        return int(libc.unshare(_CLONE_NEWPID)) == 0
    uid, gid = os.geteuid(), os.getegid()
    if int(libc.unshare(_CLONE_NEWUSER | _CLONE_NEWPID)) != 0:
        return False
    _write("/proc/self/setgroups", "deny")
    _write("/proc/self/uid_map", f"{uid} {uid} 1")
    _write("/proc/self/gid_map", f"{gid} {gid} 1")
    return True


def _mirror(status: int) -> None:
    """End this process the way a child ended (wait status ``status``); never returns."""
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        try:
            import resource

            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
            if sig not in (signal.SIGKILL, signal.SIGSTOP):
                signal.signal(sig, signal.SIG_DFL)
            signal.pthread_sigmask(signal.SIG_UNBLOCK, [sig])
            os.kill(os.getpid(), sig)
        except (OSError, ValueError):
            pass
        os._exit(128 + sig)
    os._exit(os.WEXITSTATUS(status) if os.WIFEXITED(status) else 70)


def _wait_status(pid: int) -> int:
    while True:
        try:
            _, status = os.waitpid(pid, 0)
            return status
        except InterruptedError:
            continue
        except ChildProcessError:
            return 70 << 8


def _init(worker: int, report: int) -> None:
    """PID 1 of the namespace: reap everything; when the worker ends, send its status to
    the keeper, kill the namespace and exit (never returns)."""
    while True:
        try:
            pid, status = os.waitpid(-1, 0)
        except InterruptedError:
            continue
        except ChildProcessError:
            status = 70 << 8
            pid = worker
        if pid == worker:
            try:
                os.write(report, _STATUS.pack(status))
            except OSError:
                pass
            try:
                os.kill(-1, signal.SIGKILL)  # everything in the namespace but init
            except OSError:
                pass
            os._exit(0)


def _close_all_but(keep: Sequence[int]) -> None:
    lo = 0
    for fd in sorted(set(keep)):
        if fd > lo:  # (os.closerange(n, n) closes more than nothing on some Pythons)
            os.closerange(lo, fd)
        lo = fd + 1
    os.closerange(lo, 1 << 16)


def _usable_by_others(path: str) -> bool:
    """``path`` and every directory above it can be reached and read by any uid."""
    p = Path(path)
    try:
        p = p.resolve()
        if not os.stat(p).st_mode & 0o004:
            return False
        for parent in p.parents:
            if not os.stat(parent).st_mode & 0o001:
                return False
    except OSError:
        return False
    return True


def _python_usable_by_nobody() -> bool:
    """The interpreter, its standard library and dpref's and numpy's packages."""
    import numpy

    import dpref

    paths = [sys.executable, os.__file__, dpref.__file__, numpy.__file__]
    return all(_usable_by_others(p) for p in paths)


def enter(allow_uid: bool = True) -> Sandbox:
    """Build the sandbox around *this* process; returns in the worker (PID 2 of a new
    namespace, or this very process).  Call it with dpref's death signal already set;
    the keeper and init never return (they close every fd they inherited, so the pipes
    see the worker's end, and mirror the worker's end).  The uid is dropped later, by
    :func:`drop_privileges` (after the worker has read what it needs as its caller).
    """
    box = Sandbox()
    if os.geteuid() == 0 and sys.platform.startswith("linux"):
        box.drop = "uid" if allow_uid and _python_usable_by_nobody() else "nocaps"
    if _unshare_pid():
        r, w = os.pipe()
        init = os.fork()
        if init == 0:  # PID 1 of the namespace
            os.close(r)
            _prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL))
            worker = os.fork()
            if worker == 0:
                os.close(w)
                _prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL))
                box.pidns = True
                return box
            _close_all_but([w])
            _init(worker, w)
        # the keeper, outside: wait for init's report of the worker's end, mirror it
        os.close(w)
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        _close_all_but([0, 1, 2, r])
        raw = b""
        try:
            raw = os.read(r, _STATUS.size)
        except OSError:
            pass
        _wait_status(init)
        _mirror(_STATUS.unpack(raw)[0] if len(raw) == _STATUS.size else signal.SIGKILL)
    if not _prctl(_PR_SET_CHILD_SUBREAPER, 1):
        return box  # not Linux: the worker is this very process
    box.subreaper = True
    worker = os.fork()
    if worker == 0:  # the worker, a subreaper too: the target's orphans come to it
        _prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL))
        _prctl(_PR_SET_CHILD_SUBREAPER, 1)  # (not inherited across fork)
        return box
    # the keeper: a dead worker's orphans come here; when the worker ends, kill them all
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    _close_all_but([0, 1, 2])
    status = _reap_until(worker)
    kill_strays(box)
    _mirror(status)
    raise AssertionError("unreachable")  # pragma: no cover


def _reap_until(pid: int) -> int:
    """Reap every child (orphans included) until ``pid`` ends; its wait status."""
    while True:
        try:
            got, status = os.waitpid(-1, 0)
        except InterruptedError:
            continue
        except ChildProcessError:
            return 70 << 8
        if got == pid:
            return status


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [
        ("effective", ctypes.c_uint32),
        ("permitted", ctypes.c_uint32),
        ("inheritable", ctypes.c_uint32),
    ]


def _drop_capabilities() -> None:
    """Empty the bounding set (no ``exec`` gives them back, even to uid 0), then the
    effective, permitted and inheritable sets."""
    libc = _libc()
    if libc is None:
        return
    for cap in range(64):
        if int(libc.prctl(24, cap, 0, 0, 0)) != 0:  # PR_CAPBSET_DROP
            break
    libc.prctl(47, 4, 0, 0, 0)  # PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL
    header = _CapHeader(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3
    data = (_CapData * 2)()
    if int(libc.capset(ctypes.byref(header), data)) != 0:
        raise OSError(ctypes.get_errno(), "capset failed")


def drop_privileges(box: Sandbox) -> None:
    """Become :data:`NOBODY`, or drop every capability (when dpref runs as root), and
    forbid gaining privileges."""
    if box.drop == "uid":
        os.setgroups([])
        os.setresgid(NOBODY, NOBODY, NOBODY)
        os.setresuid(NOBODY, NOBODY, NOBODY)
    elif box.drop == "nocaps":
        _drop_capabilities()
    _prctl(_PR_SET_NO_NEW_PRIVS, 1)


def _children(pid: int) -> list[int]:
    """The direct children of ``pid`` (all its threads), from /proc."""
    kids: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return kids
    for tid in tasks:
        try:
            text = Path(f"/proc/{pid}/task/{tid}/children").read_text()
        except OSError:
            continue
        kids.extend(int(v) for v in text.split())
    return kids


def strays(box: Sandbox) -> bool:
    """Whether any process the worker's target started is still there."""
    if box.pidns:
        try:
            os.kill(-1, 0)  # any process of the namespace other than init and us
            return True
        except OSError:
            return False
    return bool(_children(os.getpid()))


def kill_strays(box: Sandbox) -> bool:
    """Kill every process the target started (and reap the worker's children); whether
    there was any.  In a PID namespace ``kill(-1)`` reaches exactly them (Linux skips
    init and the caller); otherwise the subreaper's tree is stopped, then killed."""
    found = False
    if box.pidns:
        try:
            os.kill(-1, signal.SIGKILL)
            found = True
        except OSError:
            pass
    else:
        for kid in _children(os.getpid()):
            found = True
            kill_tree(kid)
    while True:  # reap our own children (killed above, or exited)
        try:
            pid, _ = os.waitpid(-1, 0 if found else os.WNOHANG)
        except ChildProcessError:
            break
        except InterruptedError:
            continue
        if pid == 0:
            break
        found = True
    return found


def kill_tree(root: int) -> None:
    """Stop ``root`` and all its descendants (until no new one appears), then kill them.

    Stopping first means no process of the tree can fork, exit or be reparented away
    while the tree is read: a ``setsid``, double-forked or libc-forked child is found as
    long as it descends from ``root`` (a subreaper keeps orphans in the tree).
    """
    seen: list[int] = []
    todo = [root]
    for _ in range(10_000):
        if not todo:
            break
        pid = todo.pop()
        if pid in seen:
            continue
        try:
            os.kill(pid, signal.SIGSTOP)
        except OSError:
            continue
        seen.append(pid)
        todo.extend(_children(pid))
    for pid in seen:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def main(argv: list[str] | None = None) -> None:
    """``python dpref/audit/isolation/sandbox.py COMMAND [ARG…]``: run an external command in the
    sandbox (``golden run --command``); exit as it does.  Whatever it started is killed
    when it ends (the namespace's init, or the subreaper here)."""
    args = sys.argv[1:] if argv is None else argv
    report = -1
    if len(args) > 1 and args[0] == "--level-fd":
        report, args = int(args[1]), args[2:]
    if not args:
        os._exit(2)
    _prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL))
    box = enter(allow_uid=False)
    if report >= 0:  # say which isolation is in force (run_command reads it)
        try:
            os.write(report, box.level.encode())
            os.close(report)
        except OSError:
            pass
    # PID 2 of the namespace (init kills the rest when we end), or the child of a
    # subreaper keeper (which kills the rest when we end)
    drop_privileges(box)
    _exec(args)


def _exec(args: list[str]) -> None:
    try:
        os.execvp(args[0], args)
    except OSError as exc:
        os.write(2, f"dpref sandbox: cannot run {args[0]}: {exc}\n".encode())
        os._exit(127)


if __name__ == "__main__":
    main()


class CommandResult:
    """What :func:`run_command` saw: the exit status and the (bounded) output."""

    def __init__(self) -> None:
        self.returncode = 0
        """The exit status (negative: killed by that signal)."""
        self.stdout = bytearray()
        """At most ``max_out + 1`` bytes of its stdout."""
        self.stderr = bytearray()
        """At most ``max_err`` bytes of its stderr (the rest dropped)."""
        self.timed_out = False
        """It ran past the deadline and was killed."""
        self.overflow = False
        """It wrote more than ``max_out`` bytes on stdout and was killed."""
        self.isolation: str | None = None
        """The isolation level the sandbox reported (:data:`LEVELS`)."""


def run_command(
    argv: Sequence[str], data: bytes, timeout: float, max_out: int, max_err: int
) -> CommandResult:
    """Run ``argv`` in the sandbox with ``data`` on stdin; at most ``timeout`` seconds of
    wall clock (whatever it writes) and ``max_out`` bytes of stdout, else it is killed.
    Every process it started is killed before this returns (raises :class:`OSError`
    when the sandbox itself cannot start)."""
    import select
    import subprocess
    import time

    level_r, level_w = os.pipe()
    try:
        proc = subprocess.Popen(  # this file as a script: only the standard library loads
            [sys.executable, "-I", "-S", __file__, "--level-fd", str(level_w), *argv],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
            pass_fds=(level_w,),
        )
    finally:
        os.close(level_w)
    res = CommandResult()
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    fds = {proc.stdout.fileno(): res.stdout, proc.stderr.fileno(): res.stderr}
    todo = memoryview(data)
    win = proc.stdin.fileno()
    for fd in (*fds, win):
        os.set_blocking(fd, False)
    poll = select.poll()
    for fd in fds:
        poll.register(fd, select.POLLIN)
    if todo:
        poll.register(win, select.POLLOUT)
    else:
        proc.stdin.close()
    end = time.monotonic() + timeout
    try:
        while fds:
            left = end - time.monotonic()
            if left <= 0:
                res.timed_out = True
                break
            for fd, _ in poll.poll(max(1, int(left * 1000))):
                if fd == win:
                    try:
                        n = os.write(win, todo[: 1 << 16])
                    except BlockingIOError:
                        continue
                    except OSError:
                        n = len(todo)
                    todo = todo[n:]
                    if not todo:
                        poll.unregister(win)
                        proc.stdin.close()
                    continue
                try:
                    chunk = os.read(fd, 1 << 16)
                except BlockingIOError:
                    continue
                if not chunk:
                    poll.unregister(fd)
                    del fds[fd]
                    continue
                buf = fds[fd]
                room = (max_out + 1 if buf is res.stdout else max_err) - len(buf)
                buf += chunk[: max(room, 0)]
                if buf is res.stdout and len(buf) > max_out:
                    res.overflow = True
                    fds.clear()
                    break
        if not res.timed_out and not res.overflow:
            try:
                res.returncode = proc.wait(max(end - time.monotonic(), 0.001))
            except subprocess.TimeoutExpired:
                res.timed_out = True
    finally:
        kill_tree(proc.pid)
        proc.wait()
        for f in (proc.stdin, proc.stdout, proc.stderr):
            try:
                f.close()
            except OSError:
                pass
    try:
        os.set_blocking(level_r, False)
        level = os.read(level_r, 64).decode("ascii", "replace")
    except OSError:
        level = ""
    finally:
        os.close(level_r)
    res.isolation = level if level in LEVELS else None
    if res.timed_out or res.overflow:
        res.returncode = -int(signal.SIGKILL)
    else:
        res.returncode = proc.returncode
    return res
