"""Targets for ``dpref golden run`` in the tests: correct implementations written from the
definitions (docs/spec.md), planted bugs, hostile targets, and an external-command script.

Each takes ``(stream, noise)`` — the bits and the node noise in canonical order — and
returns the T outputs.  Run as a script it is the external command: one vector's JSON on
stdin, its outputs as a JSON array on stdout.
"""

from __future__ import annotations

import json
import os
import sys
import time
from fractions import Fraction
from typing import Any

import numpy as np


def _lsb(t: int) -> int:
    return t & -t


def _decomposition(t: int) -> list[tuple[int, int]]:
    """The left nodes [l, u] of the binary decomposition of t, oldest first."""
    out, u = [], 0
    for bit in reversed(range(t.bit_length())):
        if t >> bit & 1:
            out.append((u + 1, u + (1 << bit)))
            u += 1 << bit
    return out


def binary(stream: Any, noise: Any) -> list[float]:
    """The binary mechanism: node t is [t − lsb(t) + 1, t]; out_t adds t's decomposition."""
    x = [int(v) for v in stream]
    noisy = [sum(x[t - _lsb(t) : t]) + float(noise[t - 1]) for t in range(1, len(x) + 1)]
    return [sum(noisy[u - 1] for _, u in _decomposition(t)) for t in range(1, len(x) + 1)]


def binary_vector(stream: Any, noise: Any, config: dict[str, Any]) -> list[float]:
    """:func:`binary`, told the vector's configuration (checks it is a binary vector)."""
    assert config["mechanism"] == "binary", config
    return binary(stream, noise)


binary_vector.dpref_golden = "vector"  # type: ignore[attr-defined]


def exponential(stream: Any, noise: Any, alpha: Fraction = Fraction(1, 2)) -> list[float]:
    """ExponentialSum (spec §2.3) in exact rationals, rounded once at the end: node [l, u]
    holds Σ α^{u−i} x_i; out_t = Σ_m α^{t−u_m} (node_m + z_m)."""
    x = [int(v) for v in stream]
    T = len(x)
    noisy = []
    for u in range(1, T + 1):
        lo = u - _lsb(u) + 1
        value = sum((alpha ** (u - i) for i in range(lo, u + 1) if x[i - 1]), Fraction(0))
        noisy.append(value + Fraction(float(noise[u - 1])))
    out = []
    for t in range(1, T + 1):
        out.append(float(sum(alpha ** (t - u) * noisy[u - 1] for _, u in _decomposition(t))))
    return out


def exponential_float(stream: Any, noise: Any) -> list[float]:
    """The same in float64 arithmetic (passes within the 1e-12 tolerance)."""
    x = np.asarray(stream, dtype=np.float64)
    T, a = x.size, 0.5
    noisy = np.empty(T)
    for u in range(1, T + 1):
        lo = u - _lsb(u) + 1
        noisy[u - 1] = sum(a ** (u - i) * x[i - 1] for i in range(lo, u + 1)) + noise[u - 1]
    return [
        float(sum(a ** (t - u) * noisy[u - 1] for _, u in _decomposition(t)))
        for t in range(1, T + 1)
    ]


# ------------------------------------------------------------------ planted bugs
def binary_shifted(stream: Any, noise: Any) -> list[float]:
    """Off by one in the node order: node n reads the noise of node n + 1."""
    return binary(stream, np.roll(np.asarray(noise), -1))


def binary_swapped(stream: Any, noise: Any) -> list[float]:
    """Nodes 1 and 2 (0-based: [1,2] and [3,3]) read each other's noise."""
    z = np.array(noise)
    if z.size > 2:
        z[[1, 2]] = z[[2, 1]]
    return binary(stream, z)


def binary_wrong_scale(stream: Any, noise: Any) -> list[float]:
    """Rescales the injected noise of every node by 2 (as if it were a unit draw)."""
    return binary(stream, 2 * np.asarray(noise))


def binary_last_step(stream: Any, noise: Any) -> list[float]:
    """Forgets the noise of the last output."""
    out = binary(stream, noise)
    out[-1] = binary(stream, np.zeros(len(noise)))[-1]
    return out


def exponential_float32(stream: Any, noise: Any) -> list[float]:
    """Float32 summation of the decayed weights: errors far beyond 1e-12 relative."""
    x = np.asarray(stream, dtype=np.float32)
    z = np.asarray(noise, dtype=np.float32)
    a = np.float32(0.5)
    T = x.size
    noisy = np.empty(T, dtype=np.float32)
    for u in range(1, T + 1):
        lo = u - _lsb(u) + 1
        s = np.float32(0)
        for i in range(lo, u + 1):
            s = np.float32(s + a ** np.float32(u - i) * x[i - 1])
        noisy[u - 1] = np.float32(s + z[u - 1] * np.float32(1.0000001))
    return [
        float(sum(a ** np.float32(t - u) * noisy[u - 1] for _, u in _decomposition(t)))
        for t in range(1, T + 1)
    ]


# ------------------------------------------------------------------ hostile targets
def raises(stream: Any, noise: Any) -> list[float]:
    """Raises."""
    raise RuntimeError("boom")


def sleeps(stream: Any, noise: Any) -> list[float]:
    """Hangs."""
    time.sleep(60)
    return []


def exits(stream: Any, noise: Any) -> list[float]:
    """Ends the process."""
    os._exit(3)


def wrong_length(stream: Any, noise: Any) -> list[float]:
    """One output short."""
    return binary(stream, noise)[:-1]


def nan(stream: Any, noise: Any) -> list[float]:
    """A NaN output."""
    return [float("nan")] * len(stream)


def main() -> None:
    """The external command: a vector on stdin, its binary outputs on stdout."""
    vec = json.load(sys.stdin)
    if vec["mechanism"] == "exponential":
        alpha = Fraction(vec["parameters"]["alpha"])
        out = exponential(vec["stream"], vec["noise"], alpha)
    else:
        out = binary(vec["stream"], vec["noise"])
    if len(sys.argv) > 1 and sys.argv[1] == "--bug":
        out[0] += 1
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
