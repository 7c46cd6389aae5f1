"""Where an exact audit verifies a fitted structure: streams and noise values.

:func:`~dpref.audit.injected.structural.recover_structure` fits ``y = A·(x − x₀) + M·ξ + c`` from
``T + K + 2`` probes; the exact loss it then computes is the loss of *that* linear
release.  It is the target's loss only if the target is that release on every stream and
for every noise value of positive probability.  No finite set of probes proves that, so
the probes are chosen where realistic and adversarial departures show
(:func:`verification_points`):

* **structured streams** — all-low, all-high, the two alternating streams, and every
  neighbour of the all-high stream (the neighbours of x₀ are the fit's own probes), each
  with ξ = 0 and with a random ξ: a scale, a draw count or a linear part that depends on
  the data there changes the recorded draws or the outputs (``structure-depends``,
  ``not-linear``);
* **the noise ladder** — ``ξ = ±s·r`` for a random Laplace direction r and magnitudes s
  from subnormal (``1e-310``) through ``1e-150``, ``1e-20``, ``1e3``, ``1e6``, ``1e15``,
  ``1e40``, ``1e100``, ``1e200`` up to ``1e300`` (capped so that no output exceeds about
  ``1e300``), at x₀ and at the all-high stream: noise that is clipped (bounded support:
  a truncated Laplace has ε = ∞), rounded, saturated, rejected and redrawn, or flushed
  leaves the fit somewhere on this ladder (``not-linear``, ``structure-depends``,
  ``non-finite``);
* ``checks`` **random points** ``(x, ξ ~ Lap(1) or N(0, 1))``, each called twice (a
  replay that differs in any bit means randomness dpref does not control).

Every output of every probe also goes through :class:`~dpref.audit.isolation.bitlevel.BitChannels`
(a zero whose sign varies is a channel the linear model does not contain).  What the
exactness rests on is stated in the report (:func:`basis_text`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from dpref.domains import Domain

__all__ = ["LADDER", "Point", "basis_text", "check_points", "ladder_points", "verification_points"]

FloatArray = npt.NDArray[np.float64]

LADDER = (1e-310, 1e-150, 1e-20, 1e3, 1e6, 1e15, 1e40, 1e100, 1e200, 1e300)
"""Magnitudes of the noise ladder (the last one capped, see :func:`verification_points`)."""
_OUTPUT_CAP = 1e300
"""Largest output magnitude the ladder aims at (float64 overflows at 1.8e308)."""


@dataclass(frozen=True)
class Point:
    """One verification probe."""

    what: str
    """The point in words (for findings)."""
    x: FloatArray
    """The stream."""
    xi: FloatArray
    """The K standard noise values."""
    replay: bool = False
    """Call it twice and require the same bits."""


def _law_draw(law: str, K: int, rng: np.random.Generator) -> FloatArray:
    out: FloatArray = rng.standard_normal(K) if law == "normal" else rng.laplace(size=K)
    return out


def _random_stream(domain: Domain, T: int, rng: np.random.Generator) -> FloatArray:
    lo, hi = float(domain.lower), float(domain.upper)
    if domain.integer:
        return rng.integers(int(domain.lower), int(domain.upper) + 1, size=T).astype(np.float64)
    return rng.uniform(lo, hi, size=T)


def structured_streams(domain: Domain, T: int) -> list[tuple[str, FloatArray]]:
    """All-low, all-high, the alternating streams and every neighbour of all-high."""
    lo, hi = float(domain.lower), float(domain.upper)
    alt = np.where(np.arange(T) % 2 == 0, lo, hi)
    alt2 = np.where(np.arange(T) % 2 == 0, hi, lo)
    out = [
        (f"the all-{lo:g} stream", np.full(T, lo)),
        (f"the all-{hi:g} stream", np.full(T, hi)),
        ("the alternating stream", alt),
        ("the other alternating stream", alt2),
    ]
    for i in range(T):
        x = np.full(T, hi)
        x[i] = lo
        out.append((f"the all-{hi:g} stream with item {i + 1} set to {lo:g}", x))
    return out


def verification_points(
    domain: Domain,
    base: FloatArray,
    M: FloatArray,
    c: FloatArray,
    law: str,
    checks: int,
    rng: np.random.Generator,
) -> list[Point]:
    """The probes that verify a fit (module doc): random points first, then the
    structured streams, then the noise ladder (:func:`check_points` then
    :func:`ladder_points`, the same random draws in the same order)."""
    points = check_points(domain, base, M, law, checks, rng)
    return points + ladder_points(domain, base, M, c, rng)


def check_points(
    domain: Domain,
    base: FloatArray,
    M: FloatArray,
    law: str,
    checks: int,
    rng: np.random.Generator,
) -> list[Point]:
    """The random points, then the structured streams (each with ξ = 0 and a random ξ)."""
    T, K = int(base.size), int(M.shape[1])
    sym = "N(0, 1)" if law == "normal" else "Lap(1)"
    points = [
        Point(
            f"random check {k + 1} (random stream, ξ ~ {sym})",
            _random_stream(domain, T, rng),
            _law_draw(law, K, rng),
            replay=True,
        )
        for k in range(checks)
    ]
    zeros = np.zeros(K)
    for label, x in structured_streams(domain, T):
        points.append(Point(f"{label}, ξ = 0", x, zeros))
        if K:
            points.append(Point(f"{label}, random ξ ~ {sym}", x, _law_draw(law, K, rng)))
    return points


def ladder_points(
    domain: Domain,
    base: FloatArray,
    M: FloatArray,
    c: FloatArray,
    rng: np.random.Generator,
    *,
    cap: float = _OUTPUT_CAP,
    distinct: bool = False,
) -> list[Point]:
    """The noise ladder: ``ξ = ±s·r`` at x₀ (and at the all-high stream from 1e6), each
    magnitude capped so that no output exceeds about ``cap`` (1e300; a float32 target's
    audit passes 1e36, below float32's overflow at 3.4e38).  ``distinct``: a magnitude
    the cap repeats is probed once."""
    T, K = int(base.size), int(M.shape[1])
    if not K:
        return []
    r = rng.laplace(size=K)
    r[r == 0.0] = 1.0
    reach = max(
        float((np.abs(M) @ np.abs(r)).max(initial=0.0)),
        float(np.abs(c).max(initial=0.0) * np.abs(r).sum()),
        1.0,
    )
    top = cap / reach
    high = np.full(T, float(domain.upper))
    points: list[Point] = []
    seen: set[float] = set()
    for s in LADDER:
        s = min(s, top)
        if distinct and s in seen:
            continue
        seen.add(s)
        for sign in (1.0, -1.0):
            xi = sign * s * r
            points.append(Point(f"noise ladder ξ = {sign * s:+.3g}·r at x = x₀", base, xi))
            if s >= 1e6:
                points.append(
                    Point(f"noise ladder ξ = {sign * s:+.3g}·r at the all-high stream", high, xi)
                )
    return points


def basis_text(T: int, K: int, checks: int, law: str, top: str = "1e300") -> str:
    """What the exactness of the reported loss rests on, in words (``top``: the largest
    output magnitude the ladder aimed at)."""
    sym = "standard normal" if law == "normal" else "standard Laplace"
    return (
        f"the loss is exact for y = A·x + M·ξ + c with ξ i.i.d. {sym} (the law dpref "
        f"scripted); that this is the target's release rests on: the same draws (number, "
        f"order, scale, law) and outputs linear within float rounding at every probe — "
        f"the fit's {T + K + 2}, {checks} random points (replayed bit for bit), the all-low, "
        f"all-high and alternating streams and all {T} neighbours of all-high (ξ = 0 and "
        f"random), and noise magnitudes from 1e-310 to {top} (clipping, rounding, "
        "saturation or redraws of the noise would show there); zeros of one sign. A "
        "departure at streams or noise values never probed is not excluded"
    )
