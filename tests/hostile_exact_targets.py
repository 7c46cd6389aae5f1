"""Hostile and non-private targets for the exact audit, the neighbour pairs and the exit codes
(issue 24, "Verdicts that pass non-private code"; tests/test_audit_exact_sound.py).

Each is written as a third party would.  The noise-injectable ones (``f(stream, rng)``
drawing ``rng.laplace``, or ``f(stream, noise)``) are Simple II — ``cumsum(x + Lap(1))``,
exactly 1-DP on bits — with one planted departure; every one of them was passed by
``dpref audit --exact`` (exit 0, "holds exactly") or by the sampled audit before the fix.
The ``*_batched`` ones use the vectorised protocol (``dpref_batched``), so that the
sampled audit of them costs a fraction of a second.
"""

from __future__ import annotations

from typing import Any

import numpy as np

Array = np.ndarray[Any, Any]


def _simple2(x: Any, z: Any) -> Array:
    return np.cumsum(np.asarray(x, dtype=float) + np.asarray(z, dtype=float))


def simple2_ok(x: Any, rng: Any) -> Any:
    """Correct Simple II: one ``Lap(1)`` per item (ε = 1 exactly)."""
    return _simple2(x, rng.laplace(0.0, 1.0, size=len(x)))


def truncated_laplace(x: Any, rng: Any) -> Any:
    """BUG: the noise is clipped at ±10b (bounded support: ε = ∞)."""
    return _simple2(x, np.clip(rng.laplace(0.0, 1.0, size=len(x)), -10.0, 10.0))


def rejection_truncated(x: Any, rng: Any) -> Any:
    """BUG: truncated Laplace by rejection — redraws every value beyond ±10b (ε = ∞)."""
    z = np.asarray(rng.laplace(0.0, 1.0, size=len(x)), dtype=float)
    bad = np.abs(z) > 10.0
    for _ in range(100):
        if not bad.any():
            break
        z[bad] = rng.laplace(0.0, 1.0, size=int(bad.sum()))
        bad = np.abs(z) > 10.0
    return _simple2(x, z)


def saturating(x: Any, rng: Any) -> Any:
    """BUG: outputs saturate at ±1e12 (a fixed-point or clamped pipeline)."""
    return np.clip(_simple2(x, rng.laplace(0.0, 1.0, size=len(x))), -1e12, 1e12)


def rounded(x: Any, rng: Any) -> Any:
    """BUG: outputs rounded to three decimals (a discretised release, not the Laplace law)."""
    return np.round(_simple2(x, rng.laplace(0.0, 1.0, size=len(x))), 3)


def scale_on_all_ones(x: Any, rng: Any) -> Any:
    """BUG: scale 0.01 on the all-ones stream (loss 100ε there), 1 elsewhere."""
    b = 0.01 if np.all(np.asarray(x) == 1) else 1.0
    return _simple2(x, rng.laplace(0.0, b, size=len(x)))


def releases_item2(x: Any, rng: Any) -> Any:
    """BUG: output t=2 is item 2 itself (ε = ∞)."""
    out = _simple2(x, rng.laplace(0.0, 1.0, size=len(x)))
    if out.size > 1:
        out[1] = float(x[1])
    return out


def signed_zero_item1(x: Any, rng: Any) -> Any:
    """BUG: output t=1 is ``+0.0`` when item 1 is 0 and ``-0.0`` when it is 1 (ε = ∞)."""
    out = _simple2(x, rng.laplace(0.0, 1.0, size=len(x)))
    out[0] = 0.0 if float(x[0]) == 0.0 else -0.0
    return out


def blog_binary(stream: Any, noise: Any) -> Any:
    """The blog's Binary mechanism, unedited third-party code taking ``(stream, noise)``:
    ``noise(scale)`` per node with scale ``log₂T/ε`` (ε = 1) — exact ε = 3/log₂T at
    T = 5, 6, 7 (1.2920, 1.1606, 1.0686).  No ``dpref_noise`` attribute: the protocol
    must be chosen on the command line."""
    x = [float(v) for v in stream]
    T = len(x)
    b = float(np.log2(T)) if T > 1 else 1.0
    node = []
    for t in range(1, T + 1):
        low = t - (t & -t)
        node.append(sum(x[low:t]) + float(noise(b)))
    out = []
    for t in range(1, T + 1):
        total, u = 0.0, t
        while u:
            total += node[u - 1]
            u -= u & -u
        out.append(total)
    return out


# ------------------------------------------------------------- sampled (batched)
def releases_item2_batched(xs: Array, rng: np.random.Generator) -> Any:
    """BUG: vectorised Simple II whose output t=2 is item 2 itself (ε = ∞)."""
    out = np.cumsum(xs + rng.laplace(0.0, 1.0, xs.shape), axis=1)
    out[:, 1] = xs[:, 1]
    return out


releases_item2_batched.dpref_batched = True  # type: ignore[attr-defined]


def signed_zero_batched(xs: Array, rng: np.random.Generator) -> Any:
    """BUG: vectorised Simple II whose output t=1 is ±0.0 by item 1 (ε = ∞)."""
    out = np.cumsum(xs + rng.laplace(0.0, 1.0, xs.shape), axis=1)
    out[:, 0] = np.where(xs[:, 0] == 0, 0.0, -0.0)
    return out


signed_zero_batched.dpref_batched = True  # type: ignore[attr-defined]


def nan_tenth_batched(xs: Array, rng: np.random.Generator) -> Any:
    """Correct vectorised Simple II (ε = 1) whose last output is NaN in 10 % of calls."""
    out = np.cumsum(xs + rng.laplace(0.0, 1.0, xs.shape), axis=1)
    out[rng.random(xs.shape[0]) < 0.1, -1] = np.nan
    return out


nan_tenth_batched.dpref_batched = True  # type: ignore[attr-defined]


def simple2_batched(xs: Array, rng: np.random.Generator) -> Any:
    """Correct vectorised Simple II (ε = 1)."""
    return np.cumsum(xs + rng.laplace(0.0, 1.0, xs.shape), axis=1)


simple2_batched.dpref_batched = True  # type: ignore[attr-defined]


def sleeps_batched(xs: Array, rng: np.random.Generator) -> Any:
    """Hangs (a time-out: nothing can be established)."""
    import time

    time.sleep(60)
    return np.zeros(xs.shape)


sleeps_batched.dpref_batched = True  # type: ignore[attr-defined]
