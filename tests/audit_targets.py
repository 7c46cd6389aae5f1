"""Planted-bug targets for ``dpref audit`` and ``dpref conform`` (black boxes).

Each function is ``f(stream, rng) -> list/array of len(stream) floats`` written
independently of dpref's own code (as a third party would), for ε = ``EPSILON`` = 1
and bit streams.  Name them on the command line as
``tests/audit_targets.py:binary_log_t``.

Correct implementations: ``binary_ok``, ``two_level_ok``, ``simple2_ok``.
Planted bugs (what each one gets wrong):

* ``binary_log_t`` — Binary with ``Lap(log₂T/ε)`` per node (the lecture's
  ``ε/log T``): the true loss is ``ε(⌊log₂T⌋+1)/log₂T`` (1.29ε at T = 5);
* ``two_level_unit`` — Two-Level with ``Lap(1/ε)`` on items and blocks (loss 2ε);
* ``simple1_no_t`` — Simple I with ``Lap(1/ε)``, forgetting the factor T (loss Tε);
* ``simple2_half_noise`` — Simple II with ``Lap(1/(2ε))`` (loss 2ε);
* ``binary_exact_last`` — Binary that releases the last count exactly (loss ∞);
* ``binary_redraw`` — Binary that redraws every node's noise at every query;
* ``binary_gaussian`` — Binary with Gaussian node noise of the right variance;
* ``binary_short_0_5pct`` — Binary whose scale is 0.5 % too small;
* ``binary_peek`` — Binary whose output at t leaks item t+1 (not causal);
* ``binary_ceil_levels`` — Binary sizing its level arrays by ⌈log₂T⌉: crashes at
  T = 1 and whenever T is a power of two.

And misbehaving targets for the robustness tests: ``raises``, ``wrong_length``,
``returns_nan``, ``returns_scalar``, ``sleeps``, ``mutates_input``.
"""

from __future__ import annotations

import functools
import math
import time
from typing import Any

import numpy as np

EPSILON = 1.0


@functools.lru_cache(maxsize=64)
def _decomposition(T: int) -> Any:
    """0/1 matrix (T × T): row t-1 marks the nodes of the binary decomposition of t."""
    if T > 64:
        return None
    M = np.zeros((T, T))
    for t in range(1, T + 1):
        u = t
        while u:
            M[t - 1, u - 1] = 1.0
            u -= u & -u
    return M.T.copy()


def _binary_combine(nodes: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """out_t = sum of the nodes of the binary decomposition of t (node t ends at t)."""
    T = nodes.size
    M = _decomposition(T)
    if M is not None:
        out: np.ndarray[Any, Any] = nodes @ M
        return out
    out = np.zeros(T)
    u = np.arange(1, T + 1)
    while True:
        live = u > 0
        if not live.any():
            return out
        out[live] += nodes[u[live] - 1]
        u = u - (u & -u)


@functools.lru_cache(maxsize=64)
def _node_matrix(T: int) -> Any:
    """0/1 matrix (T × T): column t-1 marks the items of the node ending at t."""
    if T > 64:
        return None
    N = np.zeros((T, T))
    for t in range(1, T + 1):
        N[t - (t & -t) : t, t - 1] = 1.0
    return N


def _binary_node_values(x: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    N = _node_matrix(x.size)
    if N is not None:
        out: np.ndarray[Any, Any] = x @ N
        return out
    c = np.concatenate([[0.0], np.cumsum(x)])
    t = np.arange(1, x.size + 1)
    return c[t] - c[t - (t & -t)]


def _binary(x: np.ndarray[Any, Any], rng: np.random.Generator, scale: float) -> Any:
    z = rng.laplace(0.0, scale, x.size) if scale > 0 else np.zeros(x.size)
    return _binary_combine(_binary_node_values(x) + z)


def _levels(T: int) -> int:
    return T.bit_length()  # ⌊log₂T⌋ + 1


def binary_ok(x: np.ndarray[Any, Any], rng: np.random.Generator) -> Any:
    """Correct Binary: Lap(L/ε) with L = ⌊log₂T⌋ + 1."""
    return _binary(x, rng, _levels(x.size) / EPSILON)


def binary_log_t(x: np.ndarray[Any, Any], rng: np.random.Generator) -> Any:
    """BUG: Lap(log₂T/ε) per node (undercounts the levels; no noise at all at T = 1)."""
    return _binary(x, rng, math.log2(x.size) / EPSILON)


def binary_short_0_5pct(x: np.ndarray[Any, Any], rng: np.random.Generator) -> Any:
    """BUG: scale 0.995·L/ε (a 0.5 % noise shortfall)."""
    return _binary(x, rng, 0.995 * _levels(x.size) / EPSILON)


def binary_exact_last(x: np.ndarray[Any, Any], rng: np.random.Generator) -> Any:
    """BUG: the final count is released without noise."""
    out = _binary(x, rng, _levels(x.size) / EPSILON)
    out[-1] = float(np.sum(x))
    return out


def binary_redraw(x: np.ndarray[Any, Any], rng: np.random.Generator) -> Any:
    """BUG: every query draws fresh noise for each node of its decomposition."""
    T = x.size
    b = _levels(T) / EPSILON
    c = np.cumsum(x)
    pop = np.array([bin(t).count("1") for t in range(1, T + 1)])
    z = rng.laplace(0.0, b, int(pop.sum()))
    sums = np.add.reduceat(z, np.concatenate([[0], np.cumsum(pop)[:-1]]))
    return c + sums


def binary_gaussian(x: np.ndarray[Any, Any], rng: np.random.Generator) -> Any:
    """BUG: Gaussian node noise with the Laplace variance 2b² (not ε-DP)."""
    b = _levels(x.size) / EPSILON
    z = rng.normal(0.0, math.sqrt(2.0) * b, x.size)
    return _binary_combine(_binary_node_values(x) + z)


def binary_peek(x: np.ndarray[Any, Any], rng: np.random.Generator) -> Any:
    """BUG: the output at t adds 0.01·x_{t+1} (peeks at the next item)."""
    out = _binary(x, rng, _levels(x.size) / EPSILON)
    out[:-1] += 0.01 * x[1:]
    return out


def binary_ceil_levels(x: np.ndarray[Any, Any], rng: np.random.Generator) -> Any:
    """BUG: online Binary with ⌈log₂T⌉ level slots (IndexError at T = 2^k and T = 1)."""
    T = x.size
    L = math.ceil(math.log2(T))
    b = max(L, 1) / EPSILON
    alpha = [0.0] * L
    noisy = [0.0] * L
    out = []
    for t in range(1, T + 1):
        i = (t & -t).bit_length() - 1
        a = float(x[t - 1]) + sum(alpha[:i])
        for j in range(i):
            alpha[j] = noisy[j] = 0.0
        alpha[i] = a  # IndexError when i == L
        noisy[i] = a + float(rng.laplace(0.0, b))
        out.append(sum(noisy[j] for j in range(L) if t >> j & 1))
    return out


def two_level_ok(x: np.ndarray[Any, Any], rng: np.random.Generator) -> Any:
    """Correct Two-Level, B = ⌈√T⌉, Lap(2/ε) on items and blocks."""
    return _two_level(x, rng, 2.0 / EPSILON)


def two_level_unit(x: np.ndarray[Any, Any], rng: np.random.Generator) -> Any:
    """BUG: Two-Level with Lap(1/ε) on items and on blocks (forgets the ε/2 split)."""
    return _two_level(x, rng, 1.0 / EPSILON)


def _two_level(x: np.ndarray[Any, Any], rng: np.random.Generator, b: float) -> Any:
    T = x.size
    B = math.isqrt(T - 1) + 1 if T > 1 else 1
    out = np.empty(T)
    blocks = 0.0
    items = 0.0
    block_true = 0.0
    for t in range(1, T + 1):
        v = float(x[t - 1])
        items += v + rng.laplace(0.0, b)
        block_true += v
        if t % B == 0:
            blocks += block_true + rng.laplace(0.0, b)
            items = 0.0
            block_true = 0.0
        out[t - 1] = blocks + items
    return out


def simple1_no_t(x: np.ndarray[Any, Any], rng: np.random.Generator) -> Any:
    """BUG: Simple I with Lap(1/ε) instead of Lap(T/ε)."""
    return np.cumsum(x) + rng.laplace(0.0, 1.0 / EPSILON, x.size)


def simple2_ok(x: np.ndarray[Any, Any], rng: np.random.Generator) -> Any:
    """Correct Simple II: noisy items Lap(1/ε), summed."""
    return np.cumsum(x + rng.laplace(0.0, 1.0 / EPSILON, x.size))


def simple2_half_noise(x: np.ndarray[Any, Any], rng: np.random.Generator) -> Any:
    """BUG: Simple II with Lap(1/(2ε))."""
    return np.cumsum(x + rng.laplace(0.0, 0.5 / EPSILON, x.size))


# ------------------------------------------------------------ misbehaving targets
def raises(x: np.ndarray[Any, Any], rng: np.random.Generator) -> Any:
    """Raises on streams with a 1 at the last step."""
    if x[-1] == 1:
        raise RuntimeError("boom")
    return np.cumsum(x) + rng.laplace(0.0, 10.0, x.size)


def wrong_length(x: np.ndarray[Any, Any], rng: np.random.Generator) -> Any:
    """Returns one value too few."""
    return list(np.cumsum(x)[:-1])


def returns_nan(x: np.ndarray[Any, Any], rng: np.random.Generator) -> Any:
    """Returns NaN at the first step."""
    out = np.cumsum(x) + rng.laplace(0.0, 10.0, x.size)
    out[0] = float("nan")
    return out


def returns_scalar(x: np.ndarray[Any, Any], rng: np.random.Generator) -> Any:
    """Returns one number instead of a sequence."""
    return 3.0


def sleeps(x: np.ndarray[Any, Any], rng: np.random.Generator) -> Any:
    """Hangs (sleeps 30 s) on its first call."""
    time.sleep(30)
    return np.cumsum(x)


def mutates_input(x: np.ndarray[Any, Any], rng: np.random.Generator) -> Any:
    """Writes into the stream it was given."""
    x[0] = 0.0
    return np.cumsum(x)


def all_nan(x: np.ndarray[Any, Any], rng: np.random.Generator) -> Any:
    """Every output NaN: a finding, never a crash (there is no finite cut to build events on)."""
    return np.full(x.shape, np.nan)


# ------------------------------------------- correct, but not structured like Binary
@functools.lru_cache(maxsize=64)
def _honaker_weights(T: int) -> Any:
    """(W, N): outputs = W @ (N.T @ x + noise) for the online Honaker tree at horizon T.

    N (T × nodes) marks the items of every dyadic interval [a, b] ⊆ [1, 2^k] with
    b ≤ T (all levels of the full tree, 2^k ≥ T); row t−1 of W is the least-squares
    (equal-variance BLUE) estimate of the prefix count c_t from the nodes that end by t.
    """
    k = max(0, (T - 1).bit_length())
    spans = [
        (a, a + (1 << lv) - 1)
        for lv in range(k + 1)
        for a in range(1, T + 1, 1 << lv)
        if a + (1 << lv) - 1 <= T
    ]
    N = np.zeros((T, len(spans)))
    for j, (a, b) in enumerate(spans):
        N[a - 1 : b, j] = 1.0
    ends = np.array([b for _, b in spans])
    W = np.zeros((T, len(spans)))
    for t in range(1, T + 1):
        cols = np.flatnonzero(ends <= t)
        A = N[:t, cols].T  # nodes × items 1..t
        W[t - 1, cols] = np.ones(t) @ np.linalg.pinv(A)
    return W, N


def honaker_tree(x: np.ndarray[Any, Any], rng: np.random.Generator) -> Any:
    """CORRECT ε-DP: full dyadic tree, Lap((k+1)/ε) per node (an item lies in k+1 nodes,
    2^k ≥ T), each count the least-squares estimate from the nodes released so far
    (Honaker 2015, online).  Post-processing only: less variance than Binary, same ε."""
    W, N = _honaker_weights(x.size)
    levels = max(0, (x.size - 1).bit_length()) + 1
    v = x @ N + rng.laplace(0.0, levels / EPSILON, N.shape[1])
    return W @ v


def always_raises(x: np.ndarray[Any, Any], rng: np.random.Generator) -> Any:
    """Raises on every call: nothing can be sampled (the audit is inconclusive)."""
    raise RuntimeError("not implemented yet")


# ------------------------------------------- Honaker's streaming tree (docs/trees.md)
def _honaker_stream(
    x: np.ndarray[Any, Any], rng: np.random.Generator, levels: int, weight: Any
) -> Any:
    """Every complete aligned dyadic node with Lap(levels/ε); bottom-up estimates
    ``v = w_h·noisy + (1 − w_h)(v_left + v_right)``; out_t sums the estimates of the
    nodes of t's binary decomposition.  Written from the definition, not from dpref."""
    T = x.size
    t = np.arange(1, T + 1)
    out = np.cumsum(x).astype(np.float64) * 0.0
    est = np.zeros(0)
    for h in range(T.bit_length()):
        size = 1 << h
        n = T >> h
        sums = x[: n * size].reshape(n, size).sum(axis=1)
        noisy = sums + rng.laplace(0.0, levels / EPSILON, n)
        if h == 0:
            est = noisy
        else:
            w = weight(h)
            est = w * noisy + (1.0 - w) * est[: 2 * n].reshape(n, 2).sum(axis=1)
        has = (t >> h) & 1 == 1
        out[has] += est[(t[has] >> h) - 1]
    return out


def honaker_ok(x: np.ndarray[Any, Any], rng: np.random.Generator) -> Any:
    """Correct streaming Honaker: L = ⌊log₂T⌋ + 1, w_h = 2^h/(2^{h+1} − 1)."""
    return _honaker_stream(x, rng, x.size.bit_length(), lambda h: 2**h / (2 ** (h + 1) - 1))


def honaker_half_weights(x: np.ndarray[Any, Any], rng: np.random.Generator) -> Any:
    """BUG (accuracy, not privacy): w_h = 1/2 at every height — unbiased and ε-DP, but
    every combined estimate has more variance than the reference promises."""
    return _honaker_stream(x, rng, x.size.bit_length(), lambda h: 0.5)


def honaker_ceil_levels(x: np.ndarray[Any, Any], rng: np.random.Generator) -> Any:
    """BUG: L = ⌈log₂T⌉ (one level short when T is a power of two): Lap(log₂T/ε) per node,
    a loss of ε(log₂T + 1)/log₂T (7/6·ε at T = 64); needs T ≥ 2."""
    levels = max(1, (x.size - 1).bit_length())
    return _honaker_stream(x, rng, levels, lambda h: 2**h / (2 ** (h + 1) - 1))
