"""Hostile targets for ``tests/test_audit_isolation.py``: each one attacks dpref's process.

Each is ``f(stream, rng)`` as a third party would write it; most return the exact
prefix sums (no noise at all), so an audit that is not fooled proves a violation.
Before the worker process, every one of them ended or forged the audit (a zero exit
status with no output, a ``{"violation": false}`` on stdout, two reports, a hang).
"""

from __future__ import annotations

import builtins
import json
import os
import signal
import sys
import time
from typing import Any

import numpy as np

Array = np.ndarray[Any, Any]


def exact(x: Array, rng: np.random.Generator) -> Any:
    """No noise at all (not private): the control."""
    return np.cumsum(x)


def exits(x: Array, rng: np.random.Generator) -> Any:
    sys.exit(0)


def os_exits(x: Array, rng: np.random.Generator) -> Any:
    os._exit(0)


def exits_on_last_one(x: Array, rng: np.random.Generator) -> Any:
    """Ends its process on streams with a 1 at the last step; noisy elsewhere."""
    if x[-1] == 1:
        os._exit(3)
    return np.cumsum(x) + rng.laplace(0.0, 1.0, x.size)


def zeroes_input(x: Array, rng: np.random.Generator) -> Any:
    """Re-enables writing and zeroes the stream: every stream then looks the same."""
    x.flags.writeable = True
    x[:] = 0
    return np.cumsum(x)


def catches_everything(x: Array, rng: np.random.Generator) -> Any:
    while True:
        try:
            time.sleep(10)
        except BaseException:
            pass


def ignores_alarm(x: Array, rng: np.random.Generator) -> Any:
    signal.signal(signal.SIGALRM, signal.SIG_IGN)
    time.sleep(30)
    return np.cumsum(x)


class _EndlessLen:
    def __len__(self) -> int:
        while True:
            pass

    def __getitem__(self, i: int) -> float:
        return 0.0


def endless_len(x: Array, rng: np.random.Generator) -> Any:
    return _EndlessLen()


def writes_fd1(x: Array, rng: np.random.Generator) -> Any:
    os.write(1, b'{"violation": false}\n')
    return np.cumsum(x)


def prints(x: Array, rng: np.random.Generator) -> Any:
    print('{"violation": false}')
    return np.cumsum(x)


def forks(x: Array, rng: np.random.Generator) -> Any:
    """The child returns too: in-process, it went on to print a second report."""
    os.fork()
    return np.cumsum(x)


def hijacks_printer(x: Array, rng: np.random.Generator) -> Any:
    forged = '{"violation": false}'
    builtins.print = lambda *a, **k: sys.__stdout__.write(forged + "\n")  # type: ignore[union-attr]
    json.dumps = lambda *a, **k: forged
    return np.cumsum(x)


def forges_frames(x: Array, rng: np.random.Generator) -> Any:
    """Writes garbage into every file descriptor it can find (the protocol pipe too)."""
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        if fd > 2:
            try:
                os.write(fd, b"\x00garbage" * 8)
            except OSError:
                pass
    return np.cumsum(x)


def segfaults(x: Array, rng: np.random.Generator) -> Any:
    os.kill(os.getpid(), signal.SIGSEGV)
    return np.cumsum(x)


def returns_complex(x: Array, rng: np.random.Generator) -> Any:
    return np.cumsum(x) + 0j


def returns_numeric_strings(x: Array, rng: np.random.Generator) -> Any:
    return [str(v) for v in np.cumsum(x)]


def returns_one_string(x: Array, rng: np.random.Generator) -> Any:
    return "0" * x.size


def returns_datetime(x: Array, rng: np.random.Generator) -> Any:
    return np.cumsum(x).astype(np.int64).astype("datetime64[s]")


def returns_bools(x: Array, rng: np.random.Generator) -> Any:
    return x > 0


def returns_nested(x: Array, rng: np.random.Generator) -> Any:
    return [[v] for v in np.cumsum(x)]


def hogs_memory(x: Array, rng: np.random.Generator) -> Any:
    """Asks for 128 GiB (refused at once under the default 4 GiB limit)."""
    return np.ones(1 << 37, dtype=np.uint8)[: x.size].astype(np.float64)


def hogs_touched_memory(x: Array, rng: np.random.Generator) -> Any:
    """Fills 512 MiB (succeeds without a limit; the tests set a 64 MiB one)."""
    block = np.ones(1 << 29, dtype=np.uint8)
    return np.cumsum(x) + float(block[0])


def laplace_batched(xs: Array, rng: np.random.Generator) -> Any:
    """The vectorised protocol: (n, T) streams in, (n, T) outputs out; Simple II with Lap(1)."""
    return np.cumsum(xs + rng.laplace(0.0, 1.0, xs.shape), axis=1)


laplace_batched.dpref_batched = True  # type: ignore[attr-defined]


def half_noise_batched(xs: Array, rng: np.random.Generator) -> Any:
    """Vectorised Simple II with Lap(1/2) (loss 2ε)."""
    return np.cumsum(xs + rng.laplace(0.0, 0.5, xs.shape), axis=1)


half_noise_batched.dpref_batched = True  # type: ignore[attr-defined]


def wrong_shape_batched(xs: Array, rng: np.random.Generator) -> Any:
    return np.cumsum(xs, axis=1)[:, :-1]


wrong_shape_batched.dpref_batched = True  # type: ignore[attr-defined]
