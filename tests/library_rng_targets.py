"""Targets that hand their ``rng`` to a library which checks for a ``numpy.random.Generator``
(issue 25, item 2): dpref's own ``Honaker``, scipy, and a wrapper Generator subclass.

``honaker_sigma2`` is the bug of the public smooth-binary code: Honaker's tree at ρ = 4,
T = 64 with each node's *variance* σ² passed where its standard deviation σ belongs
(σ² = L/(2ρ) = 7/8 < 1, so every node gets less noise than the plan's).  It calls
``dpref.Honaker(...).release(stream, rng=rng)``, which checks ``rng`` is a Generator.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
from scipy import stats

import dpref

FloatArray = npt.NDArray[np.float64]


class _VarianceAsStd(dpref.Honaker):
    """Honaker whose standard normal node draws are multiplied by σ² instead of σ."""

    def noise_multipliers(self, horizon: int) -> Any:
        sd = super().noise_multipliers(horizon)
        return np.asarray(sd, dtype=np.float64) ** 2 if np.ndim(sd) else float(sd) ** 2


def honaker(stream: FloatArray, rng: np.random.Generator) -> FloatArray:
    """dpref's correct Honaker tree at ρ = 4 (its own ``release``, drawing from ``rng``)."""
    return dpref.Honaker(rho=4, horizon=len(stream)).release(stream, rng=rng)


def honaker_sigma2(stream: FloatArray, rng: np.random.Generator) -> FloatArray:
    """Honaker at ρ = 4 with node std σ² instead of σ (the smooth-binary bug)."""
    return _VarianceAsStd(rho=4, horizon=len(stream)).release(stream, rng=rng)


def honaker_laplace(stream: FloatArray, rng: np.random.Generator) -> FloatArray:
    """dpref's Honaker tree at ε = 1 with Laplace noise, through its ``release``."""
    return dpref.Honaker(epsilon=1, horizon=len(stream)).release(stream, rng=rng)


class _Wrapped(np.random.Generator):
    """A wrapper Generator (as jax-style code builds): its normal draws come from ``inner``,
    multiplied by ``factor``."""

    def __init__(self, inner: np.random.Generator, factor: float) -> None:
        super().__init__(np.random.PCG64(1))
        self.inner = inner
        self.factor = factor

    def standard_normal(self, size: Any = None, dtype: Any = np.float64, out: Any = None) -> Any:
        return self.inner.standard_normal(size) * self.factor


def honaker_wrapped_sigma2(stream: FloatArray, rng: np.random.Generator) -> FloatArray:
    """The same bug through a wrapper: every node has the same σ, so scaling the standard
    normal draws by σ makes each node's std σ²."""
    mech = dpref.Honaker(rho=4, horizon=len(stream))
    sigma = float(np.max(mech.noise_multipliers(len(stream))))
    return mech.release(stream, rng=_Wrapped(rng, sigma))


def scipy_counter(stream: FloatArray, rng: np.random.Generator) -> FloatArray:
    """A running count with Laplace(1/ε = 2) noise per step drawn by scipy.stats."""
    noise = stats.laplace.rvs(scale=2.0, size=len(stream), random_state=rng)
    return np.cumsum(np.asarray(stream, dtype=np.float64) + noise)


def raw_bits(stream: FloatArray, rng: np.random.Generator) -> FloatArray:
    """Escapes the script: noise from the generator's bit generator directly."""
    raw = rng.bit_generator.random_raw(len(stream))
    return np.cumsum(stream) + (np.asarray(raw, dtype=np.float64) / 2.0**64 - 0.5)


def spawned(stream: FloatArray, rng: np.random.Generator) -> FloatArray:
    """Escapes the script: noise from a spawned child generator."""
    child = rng.spawn(1)[0]
    return np.cumsum(stream) + child.laplace(0.0, 1.0, len(stream))


def base_method(stream: FloatArray, rng: np.random.Generator) -> FloatArray:
    """Escapes the script: numpy's own ``Generator.laplace`` called on ``rng``."""
    return np.cumsum(stream) + np.random.Generator.laplace(rng, 0.0, 1.0, len(stream))
