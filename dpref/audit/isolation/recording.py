"""Noise-injectable targets: a recording generator and a noise callback (docs/auditing.md §9).

A *noise-injectable* target takes its randomness from an object dpref hands it.  Two
protocols are supported:

* ``"rng"`` (the default) — ``f(stream, rng)``: ``rng`` is a :class:`RecordingGenerator`,
  which looks like a :class:`numpy.random.Generator`.  Every ``rng.laplace(loc, scale,
  size)`` call is *recorded* (the scale of each scalar draw, broadcast as numpy does) and
  *scripted*: dpref chooses the standard values ``ξ`` and the call returns
  ``loc + scale·ξ``; ``rng.normal(loc, scale, size)`` and ``rng.standard_normal(size)``
  likewise, with ξ standard normal in law (each draw's law is recorded beside its
  scale).  Draws of any other law (``exponential``, ``integers``, ``random``,
  ``standard_*``, ``choice`` …) are recorded by name and answered by a
  generator with a fixed seed (so the target still runs, reproducibly); they make the
  exact analysis unavailable.  Any other attribute (``rng.bit_generator``, ``rng.foo``)
  is recorded and raises :class:`AttributeError` inside the target.
* ``"callback"`` — ``f(stream, noise)``: ``noise(scale, size=None)`` returns Laplace
  noise of that scale (recorded and scripted exactly like ``rng.laplace(0, scale,
  size)``).

A target declares its protocol with a function attribute, ``f.dpref_noise = "callback"``
(absent: ``"rng"``); :func:`dpref.audit.exact_audit` takes ``protocol=`` to override it.

This module holds only the noise objects (plain data, no dpref machinery), so that the
isolated worker process (:mod:`dpref.audit.isolation.worker`) can build them; how a target is
called with them is :mod:`dpref.audit.isolation.runners`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from dpref.errors import ParameterError
from dpref.validation import fmt

__all__ = [
    "LAWS",
    "OTHER_LAWS",
    "PROTOCOLS",
    "NoiseCallback",
    "RecordingGenerator",
    "Requests",
    "make_noise",
    "protocol_of",
]

FloatArray = npt.NDArray[np.float64]

PROTOCOLS = ("rng", "callback")
"""The two noise-injection protocols."""

OTHER_LAWS = frozenset(
    {
        "beta",
        "binomial",
        "bytes",
        "chisquare",
        "choice",
        "dirichlet",
        "exponential",
        "f",
        "gamma",
        "geometric",
        "gumbel",
        "hypergeometric",
        "integers",
        "logistic",
        "lognormal",
        "logseries",
        "multinomial",
        "multivariate_hypergeometric",
        "multivariate_normal",
        "negative_binomial",
        "noncentral_chisquare",
        "noncentral_f",
        "pareto",
        "permutation",
        "permuted",
        "poisson",
        "power",
        "random",
        "rayleigh",
        "shuffle",
        "standard_cauchy",
        "standard_exponential",
        "standard_gamma",
        "standard_t",
        "triangular",
        "uniform",
        "vonmises",
        "wald",
        "weibull",
        "zipf",
    }
)
"""Generator methods other than the scripted ``laplace``, ``normal`` and
``standard_normal``: recorded, answered by a fixed-seed generator."""

LAWS = ("laplace", "normal")
"""The laws of the scripted draws: standard Laplace and standard normal ξ."""


@dataclass
class Requests:
    """What one call of a target asked its noise object for (plain data, picklable)."""

    scales: list[float] = field(default_factory=list)
    """The scale of each scalar scripted draw (Laplace or normal), in the order drawn."""
    laws: list[tuple[str, int]] = field(default_factory=list)
    """The law of the scripted draws, run-length encoded: ``(law, count)`` for each run
    of consecutive draws of one law (``law`` in :data:`LAWS`)."""
    other: list[tuple[str, int]] = field(default_factory=list)
    """Draws of the other (unscripted) laws: ``(law, number of calls)`` in order of
    first use."""
    unknown: list[str] = field(default_factory=list)
    """Attributes the target read that the recording generator does not provide."""

    def signature(self) -> tuple[Any, ...]:
        """What must not depend on the input or the noise: the draws, their scales and
        laws."""
        return (tuple(self.scales), tuple(self.other), tuple(self.unknown), tuple(self.laws))

    def law(self) -> str:
        """``laplace``, ``normal`` (every scripted draw of that law), ``mixed`` or
        ``none`` (no scripted draw)."""
        names = {name for name, _ in self.laws}
        if not names:
            return "none"
        return names.pop() if len(names) == 1 else "mixed"

    def note_law(self, law: str, n: int) -> None:
        """Record n scripted draws of ``law`` (extending the last run when it is the same)."""
        if n <= 0:
            return
        if self.laws and self.laws[-1][0] == law:
            self.laws[-1] = (law, self.laws[-1][1] + n)
        else:
            self.laws.append((law, n))

    def note_other(self, law: str) -> None:
        """Count one call of an unscripted law."""
        for k, (name, n) in enumerate(self.other):
            if name == law:
                self.other[k] = (name, n + 1)
                return
        self.other.append((law, 1))


class _Script:
    """The standard values ξ handed out in order (0 beyond the script)."""

    def __init__(self, script: FloatArray, requests: Requests) -> None:
        self._xi = script
        self._pos = 0
        self._req = requests

    def laplace(self, loc: Any, scale: Any, size: Any) -> Any:
        return self.draw("laplace", loc, scale, size)

    def draw(self, law: str, loc: Any, scale: Any, size: Any) -> Any:
        """``loc + scale·ξ`` for the next ξ of the script, recorded as draws of ``law``."""
        loc_a = np.asarray(loc, dtype=np.float64)
        scale_a = np.asarray(scale, dtype=np.float64)
        if np.any(np.isnan(scale_a)) or np.any(scale_a < 0):
            raise ValueError("scale < 0")  # numpy's own message for a bad scale
        if size is None:
            shape = np.broadcast_shapes(loc_a.shape, scale_a.shape)
        else:
            shape = (int(size),) if np.ndim(size) == 0 else tuple(int(s) for s in size)
            if np.broadcast_shapes(loc_a.shape, scale_a.shape, shape) != shape:
                raise ValueError(f"shape mismatch: loc, scale cannot be broadcast to size {shape}")
        n = math.prod(shape)
        scales = np.broadcast_to(scale_a, shape).reshape(-1)
        self._req.scales.extend(float(s) for s in scales)
        self._req.note_law(law, n)
        xi = np.zeros(n, dtype=np.float64)
        take = max(0, min(n, self._xi.size - self._pos))
        xi[:take] = self._xi[self._pos : self._pos + take]
        self._pos += n
        out = np.broadcast_to(loc_a, shape) + (scales * xi).reshape(shape)
        if size is None and shape == ():
            return float(out)
        return np.asarray(out, dtype=np.float64)


class RecordingGenerator:
    """A :class:`numpy.random.Generator` look-alike whose Laplace and normal draws dpref
    scripts.

    ``laplace(loc=0.0, scale=1.0, size=None)`` and ``normal(loc=0.0, scale=1.0,
    size=None)`` return ``loc + scale·ξ`` for the next scripted standard values ξ
    (standard Laplace, respectively standard normal, in law) and record each scalar
    draw's scale and law; ``standard_normal(size=None)`` is ``normal(0, 1, size)``.
    Other laws are recorded and drawn from a fixed-seed generator; unknown attributes are
    recorded and raise :class:`AttributeError`.
    """

    def __init__(self, script: Any = (), requests: Requests | None = None) -> None:
        self.requests = requests if requests is not None else Requests()
        self._script = _Script(np.asarray(script, dtype=np.float64).reshape(-1), self.requests)
        self._shadow = np.random.default_rng(0)

    def laplace(self, loc: Any = 0.0, scale: Any = 1.0, size: Any = None) -> Any:
        """``loc + scale·ξ`` with ξ scripted by dpref (shape as numpy's ``laplace``)."""
        return self._script.laplace(loc, scale, size)

    def normal(self, loc: Any = 0.0, scale: Any = 1.0, size: Any = None) -> Any:
        """``loc + scale·ξ`` with ξ scripted by dpref, standard normal in law (shape as
        numpy's ``normal``)."""
        return self._script.draw("normal", loc, scale, size)

    def standard_normal(self, size: Any = None, dtype: Any = np.float64, out: Any = None) -> Any:
        """``normal(0, 1, size)``; ``dtype`` float32 rounds the values, ``out`` is filled."""
        if out is not None:
            if size is not None:
                raise ValueError("size must be None or match out.shape when out is given")
            size = np.shape(out)
        z = self._script.draw("normal", 0.0, 1.0, size)
        if np.dtype(dtype) != np.float64:
            z = np.asarray(z, dtype=dtype) if np.ndim(z) else np.dtype(dtype).type(z)
        if out is not None:
            out[...] = z
            return out
        return z

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        if name in OTHER_LAWS:
            law = getattr(self._shadow, name)
            requests = self.requests

            def draw(*args: Any, **kwargs: Any) -> Any:
                requests.note_other(name)
                return law(*args, **kwargs)

            return draw
        self.requests.unknown.append(name)
        raise AttributeError(
            f"dpref's recording generator has no attribute {name!r} (only laplace, normal "
            "and standard_normal are scripted; other numpy Generator draws are recorded)"
        )

    def __repr__(self) -> str:
        return "RecordingGenerator()"


class NoiseCallback:
    """The ``"callback"`` protocol: ``noise(scale, size=None)`` is scripted Laplace noise."""

    def __init__(self, script: Any = (), requests: Requests | None = None) -> None:
        self.requests = requests if requests is not None else Requests()
        self._script = _Script(np.asarray(script, dtype=np.float64).reshape(-1), self.requests)

    def __call__(self, scale: Any, size: Any = None) -> Any:
        """``scale·ξ`` for the next scripted standard Laplace values ξ."""
        return self._script.laplace(0.0, scale, size)


def protocol_of(fn: Any, protocol: str | None = None) -> str:
    """The protocol to call ``fn`` with: ``protocol``, else ``fn.dpref_noise``, else ``"rng"``."""
    chosen = protocol if protocol is not None else getattr(fn, "dpref_noise", "rng")
    if chosen not in PROTOCOLS:
        raise ParameterError(f"protocol={fmt(chosen)}: must be 'rng' or 'callback'")
    return str(chosen)


def make_noise(protocol: str, script: FloatArray, requests: Requests) -> Any:
    """The noise object a target of ``protocol`` is called with."""
    if protocol == "callback":
        return NoiseCallback(script, requests)
    return RecordingGenerator(script, requests)
