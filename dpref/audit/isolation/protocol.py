"""The framed binary protocol between dpref and a target's worker process.

Every message, in both directions, is one *frame*::

    header   24 bytes  "<4sBBHIIII": magic b"DPW1", op, status, flags, seq, count,
                        n_arrays, text_len
    arrays   n_arrays × (12-byte "<BBHII" header: dtype code, ndim, 0, d0, d1;
                         then d0·d1 (ndim 2) or d0 (ndim 1) little-endian values)
    text     text_len bytes of UTF-8

Replies from the worker may carry only float64 arrays (dtype code 1); requests may
also carry uint64 (code 2, seed words).  dpref never unpickles anything a worker
sends: a reply is parsed field by field with :mod:`struct` and ``np.frombuffer``,
and anything that does not parse *exactly* (bad magic, unknown op or status,
unexpected seq, too many or too large arrays, a dtype other than float64, nonzero
padding) is a :class:`ProtocolError`.

Ops are numbers in :data:`OPS`; the worker's dispatch table
(:data:`dpref.audit.isolation.worker.HANDLERS`) maps each to a handler that returns a
:class:`Frame` carrying any number of float64 arrays, so a new op needs one handler
there and one method on the parent's side (:class:`dpref.audit.isolation.supervisor.Worker`).
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = [
    "ARRAY",
    "F64",
    "FLAG_BATCHED",
    "FLAG_CALLBACK",
    "HEADER",
    "MAGIC",
    "MAX_ARRAYS",
    "MAX_BYTES",
    "MAX_TEXT",
    "OPS",
    "OP_CALL",
    "OP_INJECTED",
    "OP_LOAD",
    "OP_PROGRESS",
    "OP_SCRIPTED",
    "STATUS_KIND",
    "ST_BAD_OUTPUT",
    "ST_EXCEPTION",
    "ST_EXITED",
    "ST_FORKED",
    "ST_LOAD_ERROR",
    "ST_MEMORY",
    "ST_MUTATES_INPUT",
    "ST_OK",
    "ST_WRONG_LENGTH",
    "U64",
    "Frame",
    "ProtocolError",
    "encode",
    "parse_array_header",
    "parse_header",
]

MAGIC = b"DPW1"
HEADER = struct.Struct("<4sBBHIIII")
"""magic, op, status, flags, seq, count, n_arrays, text_len (24 bytes)."""
ARRAY = struct.Struct("<BBHII")
"""dtype code, ndim (1 or 2), padding (0), d0, d1 (d1 = 0 when ndim = 1) (12 bytes)."""

F64 = 1
"""Little-endian float64: the only dtype a reply may carry."""
U64 = 2
"""Little-endian uint64 (requests only: seed words)."""
_DTYPES: dict[int, np.dtype[Any]] = {F64: np.dtype("<f8"), U64: np.dtype("<u8")}

MAX_ARRAYS = 8
MAX_TEXT = 1 << 16
MAX_BYTES = 1 << 30
"""Largest array payload of one frame (1 GiB)."""

# ------------------------------------------------------------------ ops
OP_LOAD = 1
"""Parent → worker: text = JSON {spec, path, memory}; reply flags: FLAG_BATCHED,
FLAG_CALLBACK."""
OP_CALL = 2
"""Parent → worker: arrays = [stream (T,), seed words (4,) optional], count = calls;
reply: arrays = [outputs (count, T)] or a failure status, count = the failing call."""
OP_PROGRESS = 100
"""Worker → parent, during a request: count = calls done so far (a heartbeat)."""
OP_SCRIPTED = 3
"""One call with dpref's scripted noise object (:mod:`dpref.audit.isolation.recording`): request
arrays ``[stream (T,), script (K,)]`` and the protocol name as text; reply arrays
``[outputs (T,), laplace scales (n,)]`` and the other requests as JSON text."""
OP_INJECTED = 4
"""One call ``f(stream, noise)`` with injected node noise (``dpref golden run``): request
arrays ``[stream (T,), noise (n,)]`` and, as text, the vector's configuration as JSON (passed
on when the target takes it, ``f.dpref_golden == "vector"``: ``f(stream, noise, config)``); reply
arrays ``[outputs (T,)]`` or a failure status."""
OPS = {
    OP_LOAD: "load",
    OP_CALL: "call",
    OP_SCRIPTED: "scripted",
    OP_INJECTED: "injected",
    OP_PROGRESS: "progress",
}

# ------------------------------------------------------------- statuses
ST_OK = 0
ST_EXCEPTION = 1
ST_BAD_OUTPUT = 2
ST_WRONG_LENGTH = 3
ST_MUTATES_INPUT = 4
ST_EXITED = 5
ST_MEMORY = 6
ST_LOAD_ERROR = 7
ST_FORKED = 8
STATUS_KIND = {
    ST_EXCEPTION: "exception",
    ST_BAD_OUTPUT: "bad-output",
    ST_WRONG_LENGTH: "wrong-length",
    ST_MUTATES_INPUT: "mutates-input",
    ST_EXITED: "exited",
    ST_MEMORY: "memory",
    ST_LOAD_ERROR: "load-error",
    ST_FORKED: "forked",
}
"""The finding kind of each failure status."""

FLAG_CALLBACK = 4
"""Load-reply flag: the target declares the callback noise protocol (``dpref_noise``)."""
FLAG_BATCHED = 2
"""Load-reply flag: the target declares the vectorised protocol (``dpref_batched``)."""


class ProtocolError(Exception):
    """A frame from the worker that does not parse exactly."""


@dataclass
class Frame:
    """One decoded frame."""

    op: int
    status: int = ST_OK
    flags: int = 0
    seq: int = 0
    count: int = 0
    arrays: list[npt.NDArray[Any]] = field(default_factory=list)
    text: str = ""


def encode(frame: Frame) -> list[bytes | memoryview]:
    """The buffers of ``frame`` (for ``os.writev``); arrays must be float64 or uint64."""
    text = frame.text.encode("utf-8", "replace")[:MAX_TEXT]
    bufs: list[bytes | memoryview] = [
        HEADER.pack(
            MAGIC,
            frame.op,
            frame.status,
            frame.flags,
            frame.seq,
            frame.count,
            len(frame.arrays),
            len(text),
        )
    ]
    for a in frame.arrays:
        if a.dtype == np.float64:
            code = F64
        elif a.dtype == np.uint64:
            code = U64
        else:
            raise TypeError(f"cannot send dtype {a.dtype}")
        if a.ndim not in (1, 2):
            raise TypeError(f"cannot send a {a.ndim}-d array")
        d1 = a.shape[1] if a.ndim == 2 else 0
        bufs.append(ARRAY.pack(code, a.ndim, 0, a.shape[0], d1))
        data = np.ascontiguousarray(a, dtype=_DTYPES[code])
        if data.size:
            bufs.append(data.data.cast("B"))
    if text:
        bufs.append(text)
    return bufs


def parse_header(raw: bytes) -> tuple[Frame, int, int]:
    """The frame header (arrays and text still to read), the number of arrays and
    the length of the text that follow; strict."""
    if len(raw) != HEADER.size:
        raise ProtocolError(f"short header ({len(raw)} bytes)")
    magic, op, status, flags, seq, count, n_arrays, text_len = HEADER.unpack(raw)
    if magic != MAGIC:
        raise ProtocolError(f"bad magic {magic!r}")
    if op not in OPS:
        raise ProtocolError(f"unknown op {op}")
    if status != ST_OK and status not in STATUS_KIND:
        raise ProtocolError(f"unknown status {status}")
    if flags & ~(FLAG_BATCHED | FLAG_CALLBACK):
        raise ProtocolError(f"unknown flags {flags:#x}")
    if n_arrays > MAX_ARRAYS:
        raise ProtocolError(f"{n_arrays} arrays (at most {MAX_ARRAYS})")
    if text_len > MAX_TEXT:
        raise ProtocolError(f"text of {text_len} bytes (at most {MAX_TEXT})")
    return Frame(op, status, flags, seq, count), n_arrays, text_len


def parse_array_header(raw: bytes, allowed: Sequence[int]) -> tuple[np.dtype[Any], tuple[int, ...]]:
    """The dtype and shape an array header announces; strict."""
    if len(raw) != ARRAY.size:
        raise ProtocolError(f"short array header ({len(raw)} bytes)")
    code, ndim, pad, d0, d1 = ARRAY.unpack(raw)
    if code not in allowed:
        raise ProtocolError(f"array dtype code {code} (allowed: {list(allowed)})")
    if pad != 0 or ndim not in (1, 2) or (ndim == 1 and d1 != 0):
        raise ProtocolError(f"bad array header (ndim={ndim}, padding={pad}, d1={d1})")
    shape = (d0,) if ndim == 1 else (d0, d1)
    if 8 * d0 * max(d1, 1) > MAX_BYTES:
        raise ProtocolError(f"array of shape {shape} exceeds {MAX_BYTES} bytes")
    return _DTYPES[code], shape
