"""Noise-injectable planted-bug targets for ``dpref audit --exact`` (docs/auditing.md §9).

Each function is written as a third party would, independently of dpref's code:
``f(stream, rng)`` drawing its noise with ``rng.laplace`` (numpy's Generator API), or
``f(stream, noise)`` with ``noise(scale, size)`` when it sets ``dpref_noise =
"callback"``.  ε = ``EPSILON`` = 1, bit streams.  Name them on the command line as
``tests/injectable_targets.py:binary_ok``.

Correct: ``binary_ok``, ``binary_callback``, ``simple2_seven_tenths`` (ε = 7/10 through a
float scale ``1/0.7``).  Planted bugs and their true loss of the released vector:

* ``binary_level0_under`` — the single-item nodes get ``Lap(L/(2ε))``: ``(L+1)/L · ε``;
* ``simple2_redraw`` — Simple II outputs ``c_t + Lap(1/ε)`` with fresh noise per step:
  ``T·ε`` (item 1 moves every output, each output costs ε);
* ``binary_log_t`` — ``Lap(log₂T/ε)`` per node: ``ε(⌊log₂T⌋+1)/log₂T`` (∞ at T = 1);
* ``binary_exact_last`` — the last count is released without noise: ∞.

Targets the exact audit must *report*, not analyse: ``binary_clipped`` (not linear),
``binary_global_random`` (uses ``np.random`` — randomness dpref does not control),
``binary_exponential`` (a law dpref does not script), ``binary_bit_generator`` (reads an
attribute the recording generator does not provide), ``binary_data_scale`` (a scale that
depends on the data), ``raises``, ``wrong_length``, ``returns_text``.  (``binary_gaussian``
draws normal noise: the exact audit computes its μ, tests/test_audit_exact_gaussian.py.)
"""

from __future__ import annotations

from typing import Any

import numpy as np

EPSILON = 1.0


def _levels(T: int) -> int:
    return T.bit_length()  # ⌊log₂T⌋ + 1


def _binary(x: Any, scales: Any, draw: Any) -> np.ndarray[Any, Any]:
    """Node t covers (t − lowbit(t), t]; out_t sums the nodes of t's binary decomposition."""
    x = np.asarray(x, dtype=float)
    T = x.size
    prefix = np.concatenate([[0.0], np.cumsum(x)])
    z = draw(np.asarray(scales, dtype=float))
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


def binary_ok(x: Any, rng: Any) -> Any:
    """Correct Binary mechanism: ``Lap(L/ε)`` per node, L = ⌊log₂T⌋ + 1."""
    T = len(x)
    return _binary(x, [_levels(T) / EPSILON] * T, lambda b: rng.laplace(0.0, b))


def binary_callback(x: Any, noise: Any) -> Any:
    """Correct Binary, taking its noise from a callback ``noise(scale, size)``."""
    T = len(x)
    return _binary(x, [_levels(T) / EPSILON] * T, lambda b: noise(b, b.size))


binary_callback.dpref_noise = "callback"  # type: ignore[attr-defined]


def binary_level0_under(x: Any, rng: Any) -> Any:
    """BUG: single-item nodes (level 0, odd t) get half the noise, ``Lap(L/(2ε))``."""
    T = len(x)
    L = _levels(T)
    scales = [L / EPSILON / 2 if t % 2 == 1 else L / EPSILON for t in range(1, T + 1)]
    return _binary(x, scales, lambda b: rng.laplace(0.0, b))


def binary_log_t(x: Any, rng: Any) -> Any:
    """BUG: ``Lap(log₂T/ε)`` per node (the lecture's ε/log T; no noise at all at T = 1)."""
    T = len(x)
    return _binary(x, [np.log2(T) / EPSILON] * T, lambda b: rng.laplace(0.0, b))


def binary_exact_last(x: Any, rng: Any) -> Any:
    """BUG: the last count is released exactly."""
    out = binary_ok(x, rng)
    out[-1] = float(np.sum(x))
    return out


def simple2_redraw(x: Any, rng: Any) -> Any:
    """BUG: running count plus fresh ``Lap(1/ε)`` at every step (loss T·ε)."""
    c = np.cumsum(np.asarray(x, dtype=float))
    return c + rng.laplace(0.0, 1.0 / EPSILON, size=c.size)


def simple2_seven_tenths(x: Any, rng: Any) -> Any:
    """Correct Simple II for ε = 0.7: each item gets ``Lap(1/0.7)`` once (a float scale)."""
    x = np.asarray(x, dtype=float)
    return np.cumsum(x + rng.laplace(0.0, 1.0 / 0.7, size=x.size))


def binary_clipped(x: Any, rng: Any) -> Any:
    """Binary with negative counts clipped to 0 (post-processing, but not linear)."""
    return np.maximum(binary_ok(x, rng), 0.0)


def binary_global_random(x: Any, rng: Any) -> Any:
    """Binary drawing its noise from numpy's global generator, ignoring ``rng``."""
    T = len(x)
    return _binary(x, [_levels(T) / EPSILON] * T, lambda b: np.random.laplace(0.0, b))


def binary_gaussian(x: Any, rng: Any) -> Any:
    """Binary with Gaussian node noise."""
    T = len(x)
    return _binary(x, [_levels(T) * np.sqrt(2) / EPSILON] * T, lambda b: rng.normal(0.0, b))


def binary_exponential(x: Any, rng: Any) -> Any:
    """Binary with exponential node noise (a law the exact audit does not script)."""
    T = len(x)
    return _binary(x, [_levels(T) / EPSILON] * T, lambda b: rng.exponential(b))


def binary_bit_generator(x: Any, rng: Any) -> Any:
    """Binary that builds its own Generator from ``rng.bit_generator``."""
    gen = np.random.Generator(rng.bit_generator)
    return binary_ok(x, gen)


def binary_data_scale(x: Any, rng: Any) -> Any:
    """BUG: the noise scale depends on the data (more noise when the count is high)."""
    T = len(x)
    b = (_levels(T) + float(np.sum(x))) / EPSILON
    return _binary(x, [b] * T, lambda s: rng.laplace(0.0, s))


def raises(x: Any, rng: Any) -> Any:
    """Crashes."""
    raise RuntimeError("boom")


def wrong_length(x: Any, rng: Any) -> Any:
    """One value too many."""
    return [*list(binary_ok(x, rng)), 0.0]


def returns_text(x: Any, rng: Any) -> Any:
    """Not numbers."""
    return ["a"] * len(x)
