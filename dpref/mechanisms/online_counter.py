"""The online counter every mechanism's ``online()`` returns (re-exported by
:mod:`dpref.mechanisms.base`)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from fractions import Fraction
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from dpref.domains import Domain
from dpref.errors import HorizonError, ParameterError
from dpref.noise import make_rng, standard_laplace, standard_normal
from dpref.validation import check_real_vector, fmt_sequence

__all__ = ["NodeNoiseSource", "OnlineCounter"]

FloatArray = npt.NDArray[np.float64]


class NodeNoiseSource(Protocol):
    """What an online counter needs of its mechanism (:class:`dpref.mechanisms.Mechanism`
    provides it; this module does not import it, to keep the import graph acyclic)."""

    @property
    def noise(self) -> str: ...

    @property
    def rho(self) -> Fraction | None: ...

    @property
    def horizon(self) -> int | None: ...

    @property
    def domain(self) -> Domain: ...

    def noise_multiplier(self, scale: Fraction, weight: Fraction = ...) -> float: ...

    def draw_node(self, rng: np.random.Generator, scale: Fraction, weight: Fraction) -> float: ...


class OnlineCounter(ABC):
    """A streaming counter: ``step(x)`` consumes one item and returns one estimate.

    Node noise is taken in canonical order from the injected array, or drawn from the
    Generator in buffered chunks of standard Laplace (or, for Gaussian noise, standard
    normal) draws — the same draws, in the same order, as the batch path — or one exact
    discrete draw per node.  Counters pass :meth:`_noise` a node's exact Laplace design
    scale (and its float); the mechanism turns it into the node's noise
    (:meth:`Mechanism.node_variance`).
    """

    _CHUNK = 256

    def __init__(self, mechanism: NodeNoiseSource, rng: Any = None, noise: Any = None) -> None:
        self.mechanism = mechanism
        self.t = 0
        """Number of items consumed so far."""
        self._injected: Sequence[float] | None = None
        if noise is not None:
            self._injected = check_real_vector("noise", noise).tolist()
            self._rng = None
        else:
            self._rng = make_rng(rng)
        self._used = 0
        self._buf: list[float] = []
        self._buf_pos = 0
        self._multipliers: dict[tuple[Fraction, Fraction], float] = {}

    def _standard(self) -> float:
        """The next standard draw (Laplace or normal) of the buffered stream."""
        assert self._rng is not None
        if self._buf_pos >= len(self._buf):
            draw = standard_normal if self.mechanism.noise == "gaussian" else standard_laplace
            self._buf = draw(self._rng, self._CHUNK).tolist()
            self._buf_pos = 0
        value = self._buf[self._buf_pos]
        self._buf_pos += 1
        return value

    def _multiplier(self, scale_float: float, scale: Fraction, weight: Fraction) -> float:
        """The float a standard draw is scaled by: the Laplace scale as given, or the
        Gaussian σ of the node (cached per (scale, weight))."""
        if self.mechanism.rho is None:
            return scale_float
        key = (scale, weight)
        got = self._multipliers.get(key)
        if got is None:
            got = self._multipliers[key] = self.mechanism.noise_multiplier(scale, weight)
        return got

    def _noise(self, scale_float: float, scale: Fraction, weight: Fraction = Fraction(1)) -> float:
        if self._injected is not None:
            if self._used >= len(self._injected):
                raise ParameterError(
                    f"noise: injected array has {len(self._injected)} values; step t={self.t} "
                    "needs more"
                )
            value = self._injected[self._used]
            self._used += 1
            return value
        assert self._rng is not None
        self._used += 1
        if self.mechanism.noise in ("discrete", "discrete_gaussian"):
            return self.mechanism.draw_node(self._rng, scale, weight)
        return self._standard() * self._multiplier(scale_float, scale, weight)

    def _admit(self, x: Any) -> float:
        horizon = self.mechanism.horizon
        if horizon is not None and self.t >= horizon:
            raise HorizonError(f"step t={self.t + 1}: past the horizon={horizon}")
        value = self.mechanism.domain.check_value("x", x, self.t + 1)
        self.t += 1
        return value

    @abstractmethod
    def step(self, x: Any) -> float:
        """Consume item ``x_t`` and return the estimate at t."""

    def run(self, stream: Any) -> FloatArray:
        """Feed a whole stream, returning every estimate.

        The whole stream is validated first, its length against the steps left before
        the horizon included, so an error draws no noise.
        """
        arr = self.mechanism.domain.check_stream("stream", stream)
        horizon = self.mechanism.horizon
        if horizon is not None and self.t + arr.size > horizon:
            raise HorizonError(
                f"stream={fmt_sequence(stream, arr.shape)}: length {arr.size} after {self.t} "
                f"steps goes past the horizon={horizon}"
            )
        return np.array([self.step(v) for v in arr.tolist()], dtype=np.float64)
