"""Output files that are never stale, truncated, mixed or interleaved.

Every file a command writes (``verify --out``, ``reproduce --out``, ``golden export``,
audit reports) goes through :func:`write_file`: it is written to a temporary file in the
same directory, flushed to disk and renamed over the destination only once complete, so
a reader sees the old file or the new one, never a part of either.  A directory
(``reproduce --out``) is built beside its destination by :func:`staged_dir` and swapped
in as a whole.  :func:`output_lock` makes a second run writing to the same place refuse
(instead of interleaving its bytes with the first one's).  An ``OSError`` (a full disk,
a read-only file system) becomes a :class:`~dpref.errors.ParameterError` naming the
option: one line and exit code 2.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

from dpref.errors import ParameterError
from dpref.validation import fmt

__all__ = ["io_error", "output_lock", "remove", "staged_dir", "write_file"]


def io_error(option: str, path: str | os.PathLike[str], exc: OSError) -> ParameterError:
    """``option=path: cannot write (reason)`` — the error an I/O failure becomes."""
    reason = exc.strerror or type(exc).__name__
    return ParameterError(f"{option}={fmt(str(path))}: cannot write ({reason})")


def _special(dest: Path) -> bool:
    """``dest`` exists and is not a regular file (``/dev/stdout``, a FIFO, ``/dev/full``):
    it is written in place, never replaced by a file."""
    try:
        return dest.exists() and not dest.is_file() and not dest.is_dir()
    except OSError:
        return False


def write_file(path: str | os.PathLike[str], data: bytes, option: str) -> Path:
    """Write ``data`` to ``path`` atomically (temporary file, fsync, rename); a device
    or FIFO that exists is written in place (a directory is refused)."""
    dest = Path(path)
    parent = dest.parent if str(dest.parent) else Path(".")
    if dest.is_dir():
        raise ParameterError(f"{option}={fmt(str(path))}: is a directory")
    if _special(dest):
        try:
            with open(dest, "wb") as fh:
                fh.write(data)
        except OSError as exc:
            raise io_error(option, path, exc) from None
        return dest
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{dest.name}.", suffix=".tmp", dir=parent)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o644 & ~_umask())
        os.replace(tmp, dest)
        tmp = None
    except OSError as exc:
        raise io_error(option, path, exc) from None
    finally:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
    return dest


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def remove(path: str | os.PathLike[str], option: str) -> None:
    """Delete ``path`` if it exists (an old output that must not outlive a new run)."""
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    except OSError as exc:
        raise io_error(option, path, exc) from None


@contextlib.contextmanager
def output_lock(path: str | os.PathLike[str], option: str) -> Iterator[None]:
    """Hold ``.<name>.lock`` beside ``path`` for the run; refuse when another run holds it.

    The lock file is left in place (removing it would race with a third run); it is
    empty and hidden.  Where ``fcntl`` is missing (Windows) this does nothing.
    """
    try:
        import fcntl
    except ImportError:
        yield
        return
    dest = Path(path)
    if _special(dest):  # a device or FIFO: nothing to replace, nothing to lock
        yield
        return
    parent = dest.parent if str(dest.parent) else Path(".")
    lock = parent / f".{dest.name}.lock"
    try:
        fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise io_error(option, path, exc) from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            raise ParameterError(
                f"{option}={fmt(str(path))}: another dpref run is writing it (lock {lock})"
            ) from None
        yield
    finally:
        os.close(fd)


@contextlib.contextmanager
def staged_dir(path: str | os.PathLike[str], option: str) -> Iterator[Path]:
    """A fresh directory beside ``path`` to fill; on success it replaces ``path`` as a
    whole (an old ``path`` is moved aside, then deleted), on failure it is deleted and
    ``path`` is left as it was."""
    dest = Path(path)
    parent = dest.parent if str(dest.parent) else Path(".")
    try:
        parent.mkdir(parents=True, exist_ok=True)
        stage = Path(tempfile.mkdtemp(prefix=f".{dest.name}.", suffix=".tmp", dir=parent))
    except OSError as exc:
        raise io_error(option, path, exc) from None
    try:
        yield stage
        os.chmod(stage, 0o755 & ~_umask())
        old = None
        if dest.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{dest.name}.", suffix=".old", dir=parent))
            os.replace(dest, old / dest.name)
        os.replace(stage, dest)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    except OSError as exc:
        raise io_error(option, path, exc) from None
    finally:
        if stage.exists():
            shutil.rmtree(stage, ignore_errors=True)
