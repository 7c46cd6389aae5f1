"""Noise-injectable Gaussian targets for the exact audit (``dpref audit --exact --rho``).

Each function is ``f(stream, rng) -> len(stream) floats`` written as a third party would,
with numpy's Generator API (``rng.normal``), for bit streams and ρ = ``RHO`` = 1/2 zCDP
(μ² = 2ρ = 1).  L = ⌊log₂T⌋ + 1 is the number of tree levels; node t covers
``(t − lowbit(t), t]`` and output t sums the nodes of t's binary decomposition.  The exact
μ² at T = 16 (L = 5), up to the float rounding of σ (each σ is a float the target
computes, e.g. ``√5``; tests/test_audit_exact_gaussian.py has the exact values):

* ``binary_ok`` — correct Gaussian Binary, ``σ² = L/(2ρ)`` per node: μ² = 1;
* ``binary_standard_normal`` — the same through ``rng.standard_normal(size)``: μ² = 1;
* ``binary_sigma_15pct`` — σ 15 % short: μ² = 1/0.85² = 400/289;
* ``binary_level0_under`` — the single-item nodes (level 0, odd t) get σ/2: item 1 lies
  in L nodes, one of them with 4× the precision: μ² = (L + 3)/L = 8/5;
* ``binary_node_sensitivity`` — σ calibrated to one node (``σ² = 1/(2ρ)``) where the
  tree's L2 sensitivity √L is needed: μ² = L = 5;
* ``binary_redraw`` — every output redraws the noise of its nodes: item 1 moves all T
  outputs, each with its own noise of variance ``popcount(t)·σ²``:
  μ² = Σ_t 1/(L·popcount(t)) = 23/12;
* ``sqrt_ok`` — the square-root factorization ``y = C·(C·x + z)``, ``c_k = binom(2k,
  k)/4^k``, ``σ² = Σ_{k<T} c_k²/(2ρ)``: μ² = 1;
* ``sqrt_decoder_off`` — ``c_1`` 1 % too large in the *decoder* only (the outer C): the
  outputs are biased, but the decoder is post-processing of ``C·x + z``, so μ² = 1 still
  — the exact μ tells the truth where a statistical test of the outputs' law may not.

Targets the exact audit must *report*, not analyse: ``binary_mixed`` (Laplace and normal
draws in one release: *mixed-noise*), ``binary_data_sigma`` (σ depends on the data:
*structure-depends*), ``binary_global_normal`` (``np.random.normal``: randomness dpref
does not control, *not-reproducible*).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

RHO = 0.5


def _levels(T: int) -> int:
    return T.bit_length()


def _sigma(T: int) -> float:
    return math.sqrt(_levels(T) / (2 * RHO))


def _nodes(x: Any) -> Any:
    """Node t (1-based) sums the items of ``(t − lowbit(t), t]``."""
    x = np.asarray(x, dtype=float)
    prefix = np.concatenate([[0.0], np.cumsum(x)])
    t = np.arange(1, x.size + 1)
    return prefix[t] - prefix[t - (t & -t)]


def _parts(t: int) -> list[int]:
    """The nodes (1-based) of t's binary decomposition."""
    out = []
    while t:
        out.append(t)
        t -= t & -t
    return out


def _combine(noisy: Any) -> Any:
    T = len(noisy)
    return np.array([sum(noisy[n - 1] for n in _parts(t)) for t in range(1, T + 1)])


def _binary(x: Any, sigmas: Any, rng: Any) -> Any:
    nodes = _nodes(x)
    return _combine(nodes + rng.normal(0.0, sigmas, size=nodes.size))


def binary_ok(x: Any, rng: Any) -> Any:
    """Correct Gaussian Binary: ``N(0, L/(2ρ))`` per node."""
    return _binary(x, _sigma(len(x)), rng)


def binary_standard_normal(x: Any, rng: Any) -> Any:
    """Correct Gaussian Binary through ``rng.standard_normal``."""
    nodes = _nodes(x)
    return _combine(nodes + _sigma(len(x)) * rng.standard_normal(nodes.size))


def binary_sigma_15pct(x: Any, rng: Any) -> Any:
    """BUG: σ 15 % too small."""
    return _binary(x, 0.85 * _sigma(len(x)), rng)


def binary_level0_under(x: Any, rng: Any) -> Any:
    """BUG: the single-item nodes (odd t) get σ/2."""
    T = len(x)
    sigmas = [_sigma(T) / 2 if t % 2 == 1 else _sigma(T) for t in range(1, T + 1)]
    return _binary(x, np.array(sigmas), rng)


def binary_node_sensitivity(x: Any, rng: Any) -> Any:
    """BUG: σ from one node's sensitivity, ``σ² = 1/(2ρ)``, not the tree's L2 norm √L."""
    return _binary(x, math.sqrt(1 / (2 * RHO)), rng)


def binary_redraw(x: Any, rng: Any) -> Any:
    """BUG: every output draws fresh noise for each node it sums."""
    nodes = _nodes(x)
    T = nodes.size
    s = _sigma(T)
    return np.array(
        [sum(nodes[n - 1] + rng.normal(0.0, s) for n in _parts(t)) for t in range(1, T + 1)]
    )


def _sqrt_table(T: int) -> Any:
    c = np.empty(T)
    c[0] = 1.0
    for k in range(1, T):
        c[k] = c[k - 1] * (2 * k - 1) / (2 * k)
    return c


def _toeplitz(c: Any, v: Any) -> Any:
    """``(C·v)_t = Σ_{k ≤ t} c_k v_{t−k}``."""
    return np.convolve(c, v)[: len(v)]


def _sqrt(x: Any, rng: Any, decoder: Any) -> Any:
    x = np.asarray(x, dtype=float)
    c = _sqrt_table(x.size)
    sigma = math.sqrt(float(np.sum(c**2)) / (2 * RHO))
    return _toeplitz(decoder, _toeplitz(c, x) + rng.normal(0.0, sigma, x.size))


def sqrt_ok(x: Any, rng: Any) -> Any:
    """Correct square-root factorization with Gaussian noise."""
    return _sqrt(x, rng, _sqrt_table(len(x)))


def sqrt_decoder_off(x: Any, rng: Any) -> Any:
    """BUG (accuracy, not privacy): ``c_1`` 1 % too large in the decoder only."""
    d = _sqrt_table(len(x)).copy()
    if d.size > 1:
        d[1] *= 1.01
    return _sqrt(x, rng, d)


def binary_mixed(x: Any, rng: Any) -> Any:
    """Laplace noise on the single-item nodes, Gaussian on the others."""
    nodes = _nodes(x)
    T = nodes.size
    s = _sigma(T)
    noise = [rng.laplace(0.0, s) if t % 2 == 1 else rng.normal(0.0, s) for t in range(1, T + 1)]
    return _combine(nodes + np.array(noise))


def binary_data_sigma(x: Any, rng: Any) -> Any:
    """BUG: σ grows with the stream's total (the noise depends on the data)."""
    T = len(x)
    return _binary(x, _sigma(T) * (1.0 + float(np.sum(x)) / T), rng)


def binary_global_normal(x: Any, rng: Any) -> Any:
    """BUG: draws from numpy's global generator, not the one it is given."""
    nodes = _nodes(x)
    return _combine(nodes + np.random.normal(0.0, _sigma(len(x)), nodes.size))
