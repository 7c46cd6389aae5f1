"""The output law of a Gaussian-noise reference mechanism, for the approximate-DP audits.

A dpref mechanism with Gaussian node noise releases ``y = m(x) + R·(σ ⊙ ξ)`` with ξ
standard normal: ``m(x)`` is the noiseless release (``release(x, noise=0)``), R the
recombination matrix (T × N) and σ the node standard deviations actually drawn
(:meth:`~dpref.mechanisms.Mechanism.noise_multipliers`, rounded up).  So
``y ~ N(m(x), C)`` with ``C = R·diag(σ²)·Rᵀ``, and for neighbouring streams ``x, x′``

* the log-likelihood ratio ``ln p_x(y)/p_{x′}(y)`` is affine in y along the direction
  ``w = C⁺·(m(x) − m(x′))`` (Neyman–Pearson: its half-spaces are the optimal events);
* the projection ``s = wᵀy`` is ``N(wᵀm(x), μ²)`` under x and ``N(wᵀm(x′), μ²)`` under
  x′ scaled so that the two means are μ apart: the pair is exactly μ-GDP with
  ``μ² = dᵀC⁺d``, ``d = m(x) − m(x′)``, when d lies in the range of C (else the change is
  not covered by noise: μ = ∞).

:class:`GaussianModel` holds R and σ as floats; it is what the plan-aware GDP event and
Gaussian conformance use.  The claimed μ comes from the mechanism's exact declared ρ
(``μ = √(2ρ)``), never from these floats.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from dpref.errors import ParameterError
from dpref.mechanisms import Mechanism
from dpref.validation import fmt

__all__ = ["MAX_MODEL_HORIZON", "GaussianModel", "PairShift"]

FloatArray = npt.NDArray[np.float64]

MAX_MODEL_HORIZON = 1024
"""Largest T of a :class:`GaussianModel`: it holds dense T × N and T × T matrices."""

_RANK_RTOL = 1e-10
"""Relative singular-value cut-off of C's pseudo-inverse (C's spectrum is computed in float64)."""


@dataclass(frozen=True, eq=False)
class PairShift:
    """The Gaussian shift between ``M(x)`` and ``M(x′)`` for one neighbouring pair."""

    direction: FloatArray
    """``w ∝ C⁺d``, normalised so that ``wᵀCw = 1`` (then ``wᵀd = μ``)."""
    offset: float
    """``wᵀ(m(x) + m(x′))/2``: the midpoint of the two projected means."""
    mu: float
    """``√(dᵀC⁺d)``: the pair's exact GDP parameter under this model (∞: not covered)."""

    def statistic(self, Y: FloatArray) -> FloatArray:
        """``wᵀy − offset`` for rows y of ``Y``: N(μ/2, 1) under x, N(−μ/2, 1) under x′."""
        out: FloatArray = np.asarray(Y, dtype=np.float64) @ self.direction - self.offset
        return out


@dataclass(frozen=True, eq=False)
class GaussianModel:
    """``y ~ N(m(x), R·diag(σ²)·Rᵀ)`` for a Gaussian-noise dpref mechanism at T (module doc)."""

    mechanism: Mechanism
    horizon: int
    R: FloatArray
    """T × N recombination matrix (each exact entry rounded to the nearest float)."""
    sigma: FloatArray
    """N node standard deviations, as drawn (rounded up)."""

    @classmethod
    def of(cls, mechanism: Any, horizon: int) -> GaussianModel:
        """The model of ``mechanism`` at T = ``horizon`` (≤ :data:`MAX_MODEL_HORIZON`).

        Raises :class:`~dpref.errors.ParameterError` naming ``reference`` when the mechanism
        does not add Gaussian noise.
        """
        if not isinstance(mechanism, Mechanism):
            raise ParameterError(f"reference={fmt(mechanism)}: must be a dpref Mechanism")
        if not mechanism.gaussian:
            raise ParameterError(
                f"reference={mechanism!r}: adds {mechanism.noise} noise, not Gaussian noise"
            )
        T = int(horizon)
        if not 1 <= T <= MAX_MODEL_HORIZON:
            raise ParameterError(
                f"horizon={T}: the Gaussian output model is built for 1 <= T <= {MAX_MODEL_HORIZON}"
            )
        R = np.asarray(mechanism.recombination(T).to_scipy().toarray(), dtype=np.float64)
        sig = mechanism.noise_multipliers(T)
        sigma = np.broadcast_to(np.asarray(sig, dtype=np.float64), (R.shape[1],)).copy()
        return cls(mechanism, T, R, sigma)

    @property
    def nodes(self) -> int:
        """N, the number of noise draws."""
        return int(self.R.shape[1])

    def mean(self, x: Any) -> FloatArray:
        """``m(x)``: the release with every node's noise set to 0."""
        out: FloatArray = np.asarray(
            self.mechanism.release(np.asarray(x, dtype=np.float64), noise=np.zeros(self.nodes)),
            dtype=np.float64,
        )
        return out

    def covariance(self) -> FloatArray:
        """``C = R·diag(σ²)·Rᵀ`` (T × T)."""
        Rs = self.R * self.sigma
        out: FloatArray = Rs @ Rs.T
        return out

    def step_variance(self) -> FloatArray:
        """The diagonal of C: the per-step variance of the noise as drawn."""
        out: FloatArray = ((self.R * self.sigma) ** 2).sum(axis=1)
        return out

    def shift(self, x: Any, x_prime: Any) -> PairShift:
        """The optimal (likelihood-ratio) projection for the pair and its exact μ.

        ``d = m(x) − m(x′)`` is whitened through the noise: with ``R·diag(σ) = U·S·Vᵀ``
        (thin SVD, singular values below :data:`_RANK_RTOL` of the largest dropped),
        ``μ² = ‖S⁻¹Uᵀd‖²`` and ``w = U·S⁻¹·(S⁻¹Uᵀd)/μ``.  A component of d outside the
        range of C (relative size above 1e-9) makes μ infinite and w the unit vector
        along that component (a noiseless direction: the events separate perfectly).
        """
        m1, m2 = self.mean(x), self.mean(x_prime)
        d = m1 - m2
        U, S, _ = np.linalg.svd(self.R * self.sigma, full_matrices=False)
        keep = S > _RANK_RTOL * (S[0] if S.size else 0.0)
        U, S = U[:, keep], S[keep]
        coef = U.T @ d
        outside = d - U @ coef
        scale = max(float(np.abs(d).max(initial=0.0)), 1.0)
        if float(np.abs(outside).max(initial=0.0)) > 1e-9 * scale:
            w = outside / float(np.linalg.norm(outside))
            return PairShift(w, float(w @ (m1 + m2)) / 2.0, math.inf)
        white = coef / S
        mu = float(np.linalg.norm(white))
        if mu == 0.0:
            w = np.zeros_like(d)
            return PairShift(w, 0.0, 0.0)
        w = U @ (white / S) / mu
        return PairShift(w, float(w @ (m1 + m2)) / 2.0, mu)
