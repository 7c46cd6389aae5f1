"""A third party's banded Toeplitz factorization (jax_privacy-style, Gaussian noise), written
independently of dpref for ``dpref plan extract`` / ``conform --reference FILE``.

Strategy C is lower-triangular Toeplitz with band 2: ``c_0 = 1``, ``c_1 = 1/2`` (row n sees
items n − 1 and n with weights 1/2 and 1: not an interval with one weight).  Node n gets
``N(0, SIGMA²)``; the decoder is ``B = Q·C⁻¹`` (Q: prefix sums), applied by the recursion
``w_t = noisy_t − w_{t−1}/2`` (so ``w = C⁻¹·noisy``) and the running sum of w.  Its entries
are dyadic, so its plan file comes out exact.

* ``banded`` — correct, ``SIGMA = 1``;
* ``banded_thin`` — the same with ``σ = 0.7·SIGMA`` (a planted bug: ρ becomes ``ρ/0.49``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

SIGMA = 1.0


def _release(stream: Any, rng: Any, sigma: float) -> np.ndarray[Any, Any]:
    x = np.asarray(stream, dtype=np.float64)
    T = x.size
    z = rng.normal(0.0, sigma, size=T)
    noisy = x + np.concatenate([[0.0], x[:-1] / 2]) + z  # C·x + z
    w = np.empty(T)
    prev = 0.0
    for t in range(T):
        prev = noisy[t] - prev / 2
        w[t] = prev
    return np.cumsum(w)


def banded(stream: Any, rng: Any) -> np.ndarray[Any, Any]:
    """The correct banded factorization."""
    return _release(stream, rng, SIGMA)


def banded_thin(stream: Any, rng: Any) -> np.ndarray[Any, Any]:
    """σ = 0.7·SIGMA (a planted bug)."""
    return _release(stream, rng, 0.7 * SIGMA)
