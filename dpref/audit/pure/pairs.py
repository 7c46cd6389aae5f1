"""Neighbouring pairs for ``dpref audit``: a family that covers every position.

An event-level neighbour differs from its stream in one item, and a target may leak one
item only (say item 2 released exactly): a family that flips a few fixed positions misses
it whatever the sample size.  :func:`standard_pairs` therefore flips

* the **anchor** positions — the first, the middle and the last item, and any
  ``extra_positions`` (the item a known plan charges most) — on three base streams: the
  all-low, the all-high and a random stream ("low" and "high" realise the event-level
  sensitivity, :meth:`~dpref.domains.Domain.extremes`);
* every **other** position on one base stream (all-low for even 0-based positions,
  all-high for odd ones: one new stream per position, since the bases are sampled anyway),
  screened on ``1/COVER_SCREEN`` of the selection samples and drawn, with its events,
  from :func:`side_generator`, so that the anchor pairs' numbers do not change.

At ``T ≤`` :data:`FULL_COVER_HORIZON` that is every position.  Above it the other
positions are a stratified random design: the items are cut into
:data:`COVER_BLOCKS` consecutive blocks of ``⌈T/16⌉`` items and one position is drawn
uniformly in each block (from the audit's seeded generator), so a single leaking item
at an unknown position is flipped with probability at least ``1/⌈T/16⌉`` per run — the
price of a bounded number of sampled streams, stated in every report
(:func:`cover_design`).  ``pairs=`` replaces the family.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from dpref.audit.limits import MAX_HORIZON
from dpref.audit.reports.audit_report import NeighbourPair, _num
from dpref.domains import Domain
from dpref.errors import DprefTypeError, ParameterError
from dpref.noise import make_rng
from dpref.validation import check_int_range, fmt

__all__ = [
    "COVER_BLOCKS",
    "COVER_SCREEN",
    "FULL_COVER_HORIZON",
    "check_pairs",
    "cover_design",
    "cover_positions",
    "is_covering",
    "random_stream",
    "side_generator",
    "standard_pairs",
]

FloatArray = npt.NDArray[np.float64]

FULL_COVER_HORIZON = 16
"""Largest T at which the standard family flips every position."""
COVER_BLOCKS = 16
"""Blocks of the stratified random design above :data:`FULL_COVER_HORIZON`."""
COVER_SCREEN = 4
"""A stream only covering pairs use is screened on ``1/COVER_SCREEN`` of the selection
samples of an anchor stream (the test split of the chosen pair is full size whatever it is)."""


def random_stream(T: int, domain: Domain, rng: np.random.Generator) -> FloatArray:
    """A uniformly random stream of the domain (integers, or reals in its range)."""
    lo, hi = float(domain.lower), float(domain.upper)
    if domain.integer:
        return rng.integers(int(lo), int(hi) + 1, T).astype(np.float64)
    return rng.uniform(lo, hi, T)


def cover_positions(T: int, anchors: Sequence[int], rng: np.random.Generator) -> list[int]:
    """The non-anchor positions the family flips (0-based, sorted): every one at
    ``T ≤ FULL_COVER_HORIZON``, else one uniformly random position per block."""
    taken = set(anchors)
    if T <= FULL_COVER_HORIZON:
        return [p for p in range(T) if p not in taken]
    width = -(-T // COVER_BLOCKS)
    out = set()
    for start in range(0, T, width):
        p = int(rng.integers(start, min(T, start + width)))
        if p not in taken:
            out.add(p)
    return sorted(out)


def cover_design(T: int) -> str:
    """The covering design of :func:`standard_pairs` at T, in words (for reports)."""
    if T <= FULL_COVER_HORIZON:
        return (
            f"every position t = 1..{T} flipped (first, middle, last on the all-low, all-high "
            f"and a random stream; the others on all-low/all-high, screened on 1/{COVER_SCREEN} "
            "of the selection samples)"
        )
    width = -(-T // COVER_BLOCKS)
    return (
        f"first, middle, last flipped on the all-low, all-high and a random stream, plus one "
        f"random position in each of {-(-T // width)} blocks of {width} items (seeded; "
        f"screened on 1/{COVER_SCREEN} of the selection samples): a single leaking item is "
        f"flipped with probability ≥ 1/{width} per run"
    )


def standard_pairs(
    horizon: int, domain: Domain, rng: np.random.Generator, extra_positions: Sequence[int] = ()
) -> list[NeighbourPair]:
    """The standard neighbouring pairs at T = ``horizon`` (module doc): anchors on three
    bases, every other position (a stratified random choice above
    :data:`FULL_COVER_HORIZON`) on one.

    A flip moves an item to the other extreme (for a random stream's item that is
    neither, to the farther one).  ``extra_positions`` (0-based) are further anchors.
    ``horizon`` is at most :data:`~dpref.audit.limits.MAX_HORIZON`; ``rng`` follows NEP 19.
    """
    T = check_int_range("horizon", horizon, 1, MAX_HORIZON)
    if not isinstance(domain, Domain):
        raise DprefTypeError(f"domain={fmt(domain)}: must be a dpref Domain")
    rng = make_rng(rng)
    if isinstance(extra_positions, str | bytes):
        raise DprefTypeError(f"extra_positions={fmt(extra_positions)}: must be a sequence of ints")
    try:
        extra = list(extra_positions)
    except TypeError:
        raise DprefTypeError(
            f"extra_positions={fmt(extra_positions)}: must be a sequence of ints"
        ) from None
    extra_positions = [
        check_int_range(f"extra_positions[{i}]", p, 0, T - 1) for i, p in enumerate(extra)
    ]
    lo, hi = domain.extremes()
    low, high = (f"all-{_num(lo)}", np.full(T, lo)), (f"all-{_num(hi)}", np.full(T, hi))
    bases = [low, high, ("random", random_stream(T, domain, rng))]
    anchors = sorted({0, (T - 1) // 2, T - 1, *(int(p) for p in extra_positions)})
    names = {0: "first", T - 1: "last", (T - 1) // 2: "middle"}
    plan: list[tuple[tuple[str, FloatArray], int]] = [(b, p) for b in bases for p in anchors]
    plan += [(low if p % 2 == 0 else high, p) for p in cover_positions(T, anchors, rng)]
    out: list[NeighbourPair] = []
    seen: set[tuple[tuple[float, ...], tuple[float, ...]]] = set()
    for (label, base), pos in plan:
        x2 = base.copy()
        v = float(base[pos])
        x2[pos] = hi if abs(v - lo) <= abs(v - hi) else lo
        key = (tuple(base.tolist()), tuple(x2.tolist()))
        if key in seen or key[::-1] in seen:
            continue
        seen.add(key)
        where = names.get(pos, "most charged" if pos in anchors else "covering")
        out.append(
            NeighbourPair(
                key[0],
                key[1],
                f"{label} stream, {where} item (t={pos + 1}) set to {_num(float(x2[pos]))}",
            )
        )
    return out


def is_covering(pair: NeighbourPair) -> bool:
    """Whether a standard pair flips a covering (non-anchor) position."""
    return ", covering item (t=" in pair.description


_SIDE_JUMPS = 1_000_003
"""Jumps of the side generator: far from the single jumps a worker's seed material makes."""


def side_generator(gen: np.random.Generator) -> np.random.Generator:
    """A generator independent of ``gen`` that leaves ``gen`` untouched: its bit generator
    jumped :data:`_SIDE_JUMPS` times (PCG64, Philox, MT19937), else a spawned child, else
    ``gen`` itself.  The covering pairs' streams are sampled from it, so that adding them
    changes nothing that ``gen`` draws afterwards."""
    jumped = getattr(gen.bit_generator, "jumped", None)
    try:
        if jumped is not None:
            return np.random.Generator(jumped(_SIDE_JUMPS))
        return gen.spawn(1)[0]
    except (TypeError, ValueError, AttributeError):
        return gen


def check_pairs(pairs: Any, horizon: int, domain: Domain) -> list[NeighbourPair]:
    """The user's pairs, checked: streams of the domain, of length T, differing in one item."""
    if not isinstance(pairs, list | tuple) or not pairs:
        raise DprefTypeError(f"pairs={fmt(pairs)}: must be a non-empty list of (x, x') pairs")
    out = []
    for k, pair in enumerate(pairs):
        if isinstance(pair, NeighbourPair):
            pair = (pair.x, pair.x_prime)
        if not isinstance(pair, list | tuple) or len(pair) != 2:
            raise DprefTypeError(f"pairs[{k}]={fmt(pair)}: must be a pair (x, x')")
        x = domain.check_stream(f"pairs[{k}][0]", pair[0])
        x2 = domain.check_stream(f"pairs[{k}][1]", pair[1])
        if x.size != horizon or x2.size != horizon:
            raise ParameterError(
                f"pairs[{k}]: streams of length {x.size} and {x2.size}, expected horizon={horizon}"
            )
        diff = np.flatnonzero(x != x2)
        if diff.size != 1:
            raise ParameterError(
                f"pairs[{k}]: event-level neighbours differ in exactly one item, these differ "
                f"in {diff.size}"
            )
        out.append(
            NeighbourPair(
                tuple(x.tolist()), tuple(x2.tolist()), f"given pair {k + 1} (t={diff[0] + 1})"
            )
        )
    return out
