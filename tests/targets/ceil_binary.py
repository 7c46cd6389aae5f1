"""Binary-tree counters as a third party writes them, for the horizon sweep (issue 25).

The level count of a Binary tree over T items is ``⌊log₂T⌋ + 1`` (item 1 lies in that
many nodes).  A common slip is ``⌈log₂T⌉``: the same number except at powers of two,
where it is one short (so each node's ``Lap(levels/ε)`` is too small and item 1 costs
``ε(log₂T + 1)/log₂T``), and ``0`` at T = 1 (no noise at all).  At T = 5 or T = 100 the
buggy counter is exactly the correct one, so an audit at one such horizon passes it.

* ``binary_ceil_levels`` — BUG: ``Lap(⌈log₂T⌉/ε)`` per node (``rng.laplace``);
* ``binary_levels`` — correct: ``Lap((⌊log₂T⌋ + 1)/ε)`` per node (``rng.laplace``);
* ``binary_ceil_levels_exponential`` — the same bug with Laplace noise made from two
  exponential draws, which the exact audit does not script: the sweep falls back to the
  sampled audit for it;
* ``slow_binary`` — correct, but every call sleeps (time-budget tests);
* ``recombine`` — the shared tree with the node noise given, already scaled (canonical
  order: node t ends at t): the entry point ``dpref golden run`` calls.  It is correct —
  and so golden vectors pass all four functions, level bug included, because the level
  count only enters the noise *scale*, which a golden vector supplies.

ε = ``EPSILON`` = 1, bit streams.  Name them as ``tests/targets/ceil_binary.py:binary_levels``.
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np

EPSILON = 1.0


def _tree(x: Any, z: Any) -> np.ndarray[Any, Any]:
    """Node t covers (t − lowbit(t), t] plus noise z[t−1]; out_t sums t's binary cover."""
    x = np.asarray(x, dtype=float)
    T = x.size
    prefix = np.concatenate([[0.0], np.cumsum(x)])
    node = np.empty(T)
    for t in range(1, T + 1):
        node[t - 1] = prefix[t] - prefix[t - (t & -t)] + z[t - 1]
    out = np.zeros(T)
    for t in range(1, T + 1):
        u = t
        while u:
            out[t - 1] += node[u - 1]
            u -= u & -u
    return out


def recombine(x: Any, noise: Any) -> Any:
    """The release from given node noise (``dpref golden run``'s ``f(stream, noise)``)."""
    return _tree(x, np.asarray(noise, dtype=float))


def binary_ceil_levels(x: Any, rng: Any) -> Any:
    """BUG: ``⌈log₂T⌉`` levels — one short at powers of two, no noise at T = 1."""
    T = len(x)
    levels = math.ceil(math.log2(T))
    return _tree(x, rng.laplace(0.0, levels / EPSILON, T))


def binary_levels(x: Any, rng: Any) -> Any:
    """Correct: ``⌊log₂T⌋ + 1`` levels."""
    T = len(x)
    levels = T.bit_length()
    return _tree(x, rng.laplace(0.0, levels / EPSILON, T))


def binary_ceil_levels_exponential(x: Any, rng: Any) -> Any:
    """BUG of ``binary_ceil_levels``, Laplace noise drawn as a difference of exponentials."""
    T = len(x)
    b = math.ceil(math.log2(T)) / EPSILON
    return _tree(x, b * (rng.exponential(1.0, T) - rng.exponential(1.0, T)))


def slow_binary(x: Any, rng: Any) -> Any:
    """Correct Binary that sleeps 0.05 s per call (a slow target for time budgets)."""
    time.sleep(0.05)
    return binary_levels(x, rng)
