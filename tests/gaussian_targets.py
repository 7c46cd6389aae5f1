"""Planted-bug Gaussian targets for the approximate-DP audit and Gaussian conformance.

Each function is ``f(stream, rng) -> array of len(stream) floats`` written independently
of dpref's code, as a third party would, for bit streams and ρ = ``RHO`` = 1/2 zCDP
(μ = ``MU`` = 1 GDP).  Name them on the command line as
``tests/gaussian_targets.py:binary_ok``.

Correct implementations (each is the dpref mechanism named, in law):

* ``binary_ok`` — Gaussian Binary: node t covers ``(t − lowbit(t), t]``, every node gets
  ``N(0, σ²)`` with ``σ² = L/(2ρ)``, L = ⌊log₂T⌋ + 1 (= ``Binary(rho=1/2, horizon=T)``);
* ``sqrt_ok`` — the square-root factorization: ``y = C·(C·x + z)``, C lower-triangular
  Toeplitz with ``c_k = binom(2k, k)/4^k``, ``z ~ N(0, σ²I)``, ``σ² = Σ_{k<T} c_k²/(2ρ)``
  (= ``SqrtFactorization(rho=1/2, horizon=T)``).

Planted bugs (what each gets wrong; μ at T = 16 where it is a number):

* ``binary_sigma_15pct`` — σ 15 % too small: μ = 1/0.85 = 1.18;
* ``binary_level0_under`` — the single-item nodes (odd t, level 0) get σ/2, the other
  levels are right: too little noise on one level only, μ = √((L + 3)/L) = 1.26;
* ``binary_node_sensitivity`` — σ calibrated to one node's sensitivity, ``σ² = 1/(2ρ)``,
  where the L2 sensitivity of the whole tree, ``√L``, is needed: μ = √L = 2.24.  (The
  issue's "L1 sensitivity used where L2 is needed": an L1 norm is never below the L2
  norm, so substituting it adds noise and is safe; the under-noising confusion is
  the per-node sensitivity in place of the L2 norm over the nodes an item reaches);
* ``binary_redraw`` — every output draws fresh noise for the nodes of its binary
  decomposition: each output alone has the right variance, but item 1 moves all T
  outputs and the noise is not shared: μ² = Σ_t 2ρ/(L·popcount(t)), μ = 1.38;
* ``binary_short_1pct`` — σ 1 % too small (conformance must detect it at T = 1000);
* ``sqrt_coef_off`` — the square-root factorization whose table has ``c_1`` off by 1 %
  (0.505 instead of 1/2), in both factors it applies.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

RHO = 0.5
MU = 1.0


def _levels(T: int) -> int:
    return T.bit_length()


def _binary_nodes(x: Any) -> np.ndarray[Any, Any]:
    """Node t (1-based) sums the items of ``(t − lowbit(t), t]``."""
    x = np.asarray(x, dtype=float)
    T = x.size
    prefix = np.concatenate([[0.0], np.cumsum(x)])
    t = np.arange(1, T + 1)
    out: np.ndarray[Any, Any] = prefix[t] - prefix[t - (t & -t)]
    return out


@functools.lru_cache(maxsize=32)
def _decomposition(T: int) -> tuple[np.ndarray[Any, Any], ...]:
    """For each t, the 0-based node indices of t's binary decomposition, level by level."""
    t = np.arange(1, T + 1)
    parts = []
    u = t.copy()
    while u.any():
        parts.append(np.where(u > 0, u - 1, -1))
        u = u - (u & -u)
    return tuple(parts)


def _combine(nodes: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """out_t = the sum of the nodes of t's binary decomposition."""
    out = np.zeros(nodes.size)
    for idx in _decomposition(nodes.size):
        out += np.where(idx >= 0, nodes[np.maximum(idx, 0)], 0.0)
    return out


def _binary(x: Any, rng: np.random.Generator, sigma: np.ndarray[Any, Any] | float) -> Any:
    nodes = _binary_nodes(x)
    return _combine(nodes + rng.normal(0.0, 1.0, nodes.size) * sigma)


def _sigma(T: int) -> float:
    return math.sqrt(_levels(T) / (2 * RHO))


def binary_ok(x: Any, rng: np.random.Generator) -> Any:
    """Correct Gaussian Binary: ``N(0, L/(2ρ))`` per node."""
    return _binary(x, rng, _sigma(len(x)))


def binary_sigma_15pct(x: Any, rng: np.random.Generator) -> Any:
    """BUG: σ 15 % too small."""
    return _binary(x, rng, 0.85 * _sigma(len(x)))


def binary_short_1pct(x: Any, rng: np.random.Generator) -> Any:
    """BUG: σ 1 % too small."""
    return _binary(x, rng, 0.99 * _sigma(len(x)))


def binary_level0_under(x: Any, rng: np.random.Generator) -> Any:
    """BUG: the single-item nodes (odd t) get σ/2; every other level is right."""
    T = len(x)
    t = np.arange(1, T + 1)
    sigma = np.where(t % 2 == 1, 0.5, 1.0) * _sigma(T)
    return _binary(x, rng, sigma)


def binary_node_sensitivity(x: Any, rng: np.random.Generator) -> Any:
    """BUG: σ from one node's sensitivity (Δ = 1), not the tree's L2 sensitivity √L."""
    return _binary(x, rng, math.sqrt(1 / (2 * RHO)))


def binary_redraw(x: Any, rng: np.random.Generator) -> Any:
    """BUG: every output redraws the noise of the nodes it sums."""
    nodes = _binary_nodes(x)
    T = nodes.size
    sigma = _sigma(T)
    out = np.zeros(T)
    for idx in _decomposition(T):
        present = idx >= 0
        out += np.where(present, nodes[np.maximum(idx, 0)], 0.0)
        out += np.where(present, rng.normal(0.0, sigma, T), 0.0)
    return out


@functools.lru_cache(maxsize=32)
def _sqrt_coefficients(T: int) -> np.ndarray[Any, Any]:
    c = np.empty(T)
    c[0] = 1.0
    for k in range(1, T):
        c[k] = c[k - 1] * (2 * k - 1) / (2 * k)
    return c


def _toeplitz_apply(c: np.ndarray[Any, Any], v: np.ndarray[Any, Any]) -> Any:
    """``(C·v)_t = Σ_{k ≤ t} c_k v_{t−k}`` (lower-triangular Toeplitz)."""
    return np.convolve(c, v)[: v.size]


def _sqrt(x: Any, rng: np.random.Generator, c: np.ndarray[Any, Any]) -> Any:
    x = np.asarray(x, dtype=float)
    T = x.size
    true_c = _sqrt_coefficients(T)
    sigma = math.sqrt(float(np.sum(true_c**2)) / (2 * RHO))
    z = rng.normal(0.0, sigma, T)
    return _toeplitz_apply(c, _toeplitz_apply(c, x) + z)


def sqrt_ok(x: Any, rng: np.random.Generator) -> Any:
    """Correct square-root factorization with Gaussian noise."""
    return _sqrt(x, rng, _sqrt_coefficients(len(x)))


def sqrt_coef_off(x: Any, rng: np.random.Generator) -> Any:
    """BUG: the coefficient table has ``c_1 = 0.505`` (1 % off) in both factors."""
    c = _sqrt_coefficients(len(x)).copy()
    if c.size > 1:
        c[1] *= 1.01
    return _sqrt(x, rng, c)


# ---------------------------------------------------------------- vectorised variants
# The same laws on many streams at once (``f(streams (n, T), rng) -> (n, T)``, the
# ``dpref_batched`` protocol of dpref/audit/isolation/targets.py), so that CI audits of these
# targets draw 10^5 samples in seconds.  Each ``*_batched`` has exactly the law of the
# function without the suffix (tests/test_audit_gdp.py checks the structure row by row).


def _binary_nodes_many(X: Any) -> np.ndarray[Any, Any]:
    X = np.asarray(X, dtype=float)
    n, T = X.shape
    prefix = np.concatenate([np.zeros((n, 1)), np.cumsum(X, axis=1)], axis=1)
    t = np.arange(1, T + 1)
    out: np.ndarray[Any, Any] = prefix[:, t] - prefix[:, t - (t & -t)]
    return out


def _combine_many(nodes: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    out = np.zeros(nodes.shape)
    for idx in _decomposition(nodes.shape[1]):
        out += np.where(idx >= 0, nodes[:, np.maximum(idx, 0)], 0.0)
    return out


def _binary_many(X: Any, rng: np.random.Generator, sigma: Any) -> Any:
    nodes = _binary_nodes_many(X)
    return _combine_many(nodes + rng.normal(0.0, 1.0, nodes.shape) * sigma)


def binary_ok_batched(X: Any, rng: np.random.Generator) -> Any:
    """:func:`binary_ok` on many streams."""
    return _binary_many(X, rng, _sigma(np.shape(X)[1]))


def binary_sigma_15pct_batched(X: Any, rng: np.random.Generator) -> Any:
    """:func:`binary_sigma_15pct` on many streams."""
    return _binary_many(X, rng, 0.85 * _sigma(np.shape(X)[1]))


def binary_level0_under_batched(X: Any, rng: np.random.Generator) -> Any:
    """:func:`binary_level0_under` on many streams."""
    T = np.shape(X)[1]
    t = np.arange(1, T + 1)
    return _binary_many(X, rng, np.where(t % 2 == 1, 0.5, 1.0) * _sigma(T))


def binary_node_sensitivity_batched(X: Any, rng: np.random.Generator) -> Any:
    """:func:`binary_node_sensitivity` on many streams."""
    return _binary_many(X, rng, math.sqrt(1 / (2 * RHO)))


def binary_redraw_batched(X: Any, rng: np.random.Generator) -> Any:
    """:func:`binary_redraw` on many streams."""
    nodes = _binary_nodes_many(X)
    n, T = nodes.shape
    sigma = _sigma(T)
    out = np.zeros((n, T))
    for idx in _decomposition(T):
        present = idx >= 0
        out += np.where(present, nodes[:, np.maximum(idx, 0)], 0.0)
        out += np.where(present, rng.normal(0.0, sigma, (n, T)), 0.0)
    return out


def sqrt_ok_batched(X: Any, rng: np.random.Generator) -> Any:
    """:func:`sqrt_ok` on many streams."""
    X = np.asarray(X, dtype=float)
    n, T = X.shape
    c = _sqrt_coefficients(T)
    sigma = math.sqrt(float(np.sum(c**2)) / (2 * RHO))
    C = np.zeros((T, T))
    for k in range(T):
        C += np.diag(np.full(T - k, c[k]), -k)
    z = rng.normal(0.0, sigma, (n, T))
    return (X @ C.T + z) @ C.T


for _f in (
    binary_ok_batched,
    binary_sigma_15pct_batched,
    binary_level0_under_batched,
    binary_node_sensitivity_batched,
    binary_redraw_batched,
    sqrt_ok_batched,
):
    _f.dpref_batched = True  # type: ignore[attr-defined]
