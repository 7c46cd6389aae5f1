"""Targets for the output-level privacy numbers of ``dpref conform`` (issue 25 item 3).

``honaker_variance_as_std`` is TensorFlow Privacy's efficient (Honaker) tree with the bug of
the public smooth-binary code: the node *variance* passed where the standard deviation is
expected.  It calls ``dpref.Honaker(rho=4, horizon=T, noise="gaussian").release`` with node
noise ``N(0, (σ²)²)`` instead of ``N(0, σ²)``; at T = 64 each node has ``σ² = L/(2ρ) = 7/8``,
so the noise is the reference's structure at the scale ratio ``σ = √(7/8) = 0.935``: its plan
implies ρ = 4/(7/8) = 4.571 > 4, but Honaker's outputs leak only 0.870 of its plan's ρ, so
the released outputs are 3.978-zCDP (μ² = 7.9556 < 8): within the claim.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from dpref import Honaker

RHO = 4


@functools.lru_cache(maxsize=16)
def _honaker(T: int) -> tuple[Honaker, Any]:
    m = Honaker(rho=RHO, horizon=T, noise="gaussian")
    n = int(m.recombination(T).shape[1])
    sigma = np.broadcast_to(np.asarray(m.noise_multipliers(T), dtype=np.float64), (n,))
    return m, sigma


def honaker_variance_as_std(x: Any, rng: np.random.Generator) -> Any:
    """Honaker at ρ = 4 with node std σ² instead of σ (module doc)."""
    x = np.asarray(x, dtype=np.float64)
    m, sigma = _honaker(x.size)
    return m.release(x, noise=rng.normal(0.0, sigma * sigma))


def honaker_ok(x: Any, rng: np.random.Generator) -> Any:
    """Honaker at ρ = 4 with the right node std σ."""
    x = np.asarray(x, dtype=np.float64)
    m, sigma = _honaker(x.size)
    return m.release(x, noise=rng.normal(0.0, sigma))
