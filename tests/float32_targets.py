"""Float32 binary trees, written as a numpy user computing in float32 would (issue 25).

Each function is ``f(stream, rng) -> len(stream) values`` for bit streams.  Node t
(1-based) sums the items of ``(t − lowbit(t), t]``; output t is the float32 sum of the
noisy nodes of t's binary decomposition; L = ⌊log₂T⌋ + 1 levels, so an item lies in at
most L nodes — the tree of dpref's ``Binary`` (``Binary(rho=1/2, horizon=16)`` has
σ = √5 per node at T = 16).  Everything after the draw is float32: the node noise is
``rng.normal(0, σ, T)`` (or ``rng.laplace``) cast to float32, the node sums are float32
prefix differences and the outputs float32 sums, returned as a float32 array.

* ``gaussian_ok`` — σ² = L/(2ρ), ρ = 1/2, σ rounded to float32 as a float32 library
  would hold it: μ² = L/σ₃₂² = 1 up to float32 rounding;
* ``gaussian_sigma_over_sqrt2`` — σ/√2: μ² = 2 (a violation of ρ = 1/2);
* ``laplace_ok`` — Laplace node noise of scale b = L/ε, ε = 3/10: ε up to float32
  rounding;
* ``laplace_half_scale`` — b/2: ε = 3/5 (a violation of ε = 3/10);
* ``gaussian_clipped`` — the noise clipped at ±4σ: not linear (a finding, not a loss);
* ``honaker_laplace`` — dpref's Laplace Honaker plan in float32 (dependent noise: an LP).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

RHO = 0.5
EPSILON = 0.3


def _levels(T: int) -> int:
    return T.bit_length()


def _tree(stream: Any, z: Any) -> Any:
    """The float32 tree release with float32 node noise ``z`` (length T)."""
    x = np.asarray(stream, dtype=np.float32)
    T = x.size
    prefix = np.concatenate([np.zeros(1, np.float32), np.cumsum(x, dtype=np.float32)])
    t = np.arange(1, T + 1)
    noisy = (prefix[t] - prefix[t - (t & -t)]).astype(np.float32) + z
    out = np.zeros(T, dtype=np.float32)
    for s in range(1, T + 1):
        acc = np.float32(0.0)
        k = s
        while k:
            acc = np.float32(acc + noisy[k - 1])
            k -= k & -k
        out[s - 1] = acc
    return out


def _gaussian(stream: Any, rng: Any, shrink: float) -> Any:
    T = len(stream)
    sigma = np.float32(math.sqrt(_levels(T) / (2 * RHO)) / shrink)
    z = rng.normal(0.0, sigma, size=T).astype(np.float32)
    return _tree(stream, z)


def _laplace(stream: Any, rng: Any, shrink: float) -> Any:
    T = len(stream)
    b = np.float32(_levels(T) / EPSILON / shrink)
    z = rng.laplace(0.0, b, size=T).astype(np.float32)
    return _tree(stream, z)


def gaussian_ok(stream: Any, rng: Any) -> Any:
    """Correct: σ² = L/(2ρ) per node (μ² = 1 up to float32 rounding)."""
    return _gaussian(stream, rng, 1.0)


def gaussian_sigma_over_sqrt2(stream: Any, rng: Any) -> Any:
    """σ/√2 per node: μ² = 2."""
    return _gaussian(stream, rng, math.sqrt(2.0))


def laplace_ok(stream: Any, rng: Any) -> Any:
    """Correct: b = L/ε per node (ε = 3/10 up to float32 rounding)."""
    return _laplace(stream, rng, 1.0)


def laplace_half_scale(stream: Any, rng: Any) -> Any:
    """b/2 per node: ε = 3/5."""
    return _laplace(stream, rng, 2.0)


def gaussian_clipped(stream: Any, rng: Any) -> Any:
    """Correct σ, but the float32 noise is clipped at ±4σ (bounded noise: not the normal
    law; the exact audit must not accept it as linear)."""
    T = len(stream)
    sigma = np.float32(math.sqrt(_levels(T) / (2 * RHO)))
    z = rng.normal(0.0, sigma, size=T).astype(np.float32)
    return _tree(stream, np.clip(z, -4 * sigma, 4 * sigma).astype(np.float32))


def honaker_laplace(stream: Any, rng: Any) -> Any:
    """dpref's Laplace Honaker plan (ε = 3/10) evaluated in float32, ``y = R·(A·x + z)``:
    2T − 1 nodes for T outputs, so the exact ε is a linear programme (dependent noise)."""
    import dpref

    T = len(stream)
    plan = dpref.Honaker(epsilon=EPSILON, horizon=T).plan(T)
    A = plan.A().toarray().astype(np.float32)
    R = plan.R().toarray().astype(np.float32)
    z = rng.laplace(0.0, plan.scales).astype(np.float32)
    out = R @ (A @ np.asarray(stream, dtype=np.float32) + z)
    return out
