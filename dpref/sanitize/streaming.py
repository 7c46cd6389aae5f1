"""The streaming sanitizer: an offline sanitizer run on disjoint blocks of a stream
(Kaplan, Stemmer 2021, Theorem 2.1 and Remark 2.3; docs/spec.md §3).

The stream is cut into consecutive blocks of n *positions*.  When a block is
complete, each of its records is kept independently with probability p (Poisson
subsampling; p = 1 keeps all), and the offline sanitizer's synthetic dataset of the
kept records is emitted.  Memory: the n buffered records plus the offline sanitizer's.

Neighbours.  The input is a stream of values, so two inputs of the same length that
differ in one record (``"replace"``, the default) are the neighbours this class can be
given; the stream's length, the block lengths and the number of blocks are public.
Exactly one block's dataset changes, and every other block's input is identical: by
parallel composition over the disjoint blocks the whole output stream has the ε of one
block.  ``neighbours="add-remove"`` (opt-in) declares the bound for *positional*
presence — the record at one position present or absent, an absent record taking no part
in its block while the positions stay where they are.  The input has no "absent" marker,
so no two inputs this class accepts are neighbours in that sense: it is a statement about
a slot model the caller maintains.  It is **not** a guarantee for inserting or deleting a
record: that shifts every later block boundary (each later block then differs by a
replace), and it changes the stream's length, which is released exactly.

* p = 1: ε is the offline sanitizer's ε₀ under its own relation; an add/remove
  offline sanitizer gives 2ε₀ for a replaced record (a removal then an addition).
* p < 1 (the offline sanitizer must be ε₀-DP under add/remove, since a dropped record
  is a removed one): ``ln((1 − p + p e^{ε₀})/(1 − p + p e^{−ε₀}))`` for replace and
  ``ln(1 + p(e^{ε₀} − 1))`` for positional add/remove
  (:mod:`dpref.sanitize.amplification`), rounded up to an exact Fraction.

**The final partial block** (fewer than n records when the stream ends) is released
with the same guarantee, by :meth:`StreamingRun.close`: its positions are disjoint from
every full block's, and the offline sanitizer's ε does not depend on how many records
it is given (a replace-one offline sanitizer uses that count, which is public — it is
the stream length mod n; an add/remove one is given the block's capacity n).  ``close``
then ends the run: a record is released in exactly one block, never twice (a second
release of the same positions would compose, doubling ε).  ``proofs/sanitize.py``
states and checks it.

References
----------
.. [1] H. Kaplan, U. Stemmer. "A Note on Sanitizing Streams with Differential Privacy."
   2021 (Theorem 2.1, Remark 2.3).
.. [2] F. McSherry. "Privacy Integrated Queries." SIGMOD 2009 (parallel composition).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt

from dpref.errors import DprefTypeError, ParameterError
from dpref.noise import make_rng
from dpref.sanitize.amplification import (
    NEIGHBOURS,
    check_subsample,
    effective_probability,
    subsampled_epsilon,
)
from dpref.sanitize.threshold import MAX_RECORDS, ThresholdRelease, ThresholdSanitizer
from dpref.validation import ceil_float, check_choice, check_flag, check_int_range, fmt

__all__ = [
    "BLOCK_OVERHEAD",
    "MAX_BATCH_WORK",
    "MAX_BLOCK",
    "MAX_STREAM",
    "SanitizedStream",
    "StreamingRun",
    "StreamingSanitizer",
]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

MAX_BLOCK = 1 << 24
"""Largest block size n (the buffer is n int64 indices: 128 MiB)."""
MAX_STREAM = MAX_RECORDS
"""Most records :meth:`StreamingSanitizer.sanitize` (the batch form) takes in one call;
the online form has no limit."""
BLOCK_OVERHEAD = 1 << 11
"""The fixed cost of one block release, in domain points: measured, a block over D = 2
points takes about 350 µs (Python and numpy call overhead), as much as ~1400 points of a
large tree at ~250 ns each.  Without it, n = 1 over a tiny domain looked free: 2²⁶ blocks
over D = 2 passed the bound and ran for about six hours."""
MAX_BATCH_WORK = 1 << 28
"""Largest ``blocks × (D + BLOCK_OVERHEAD)`` of one call (:meth:`StreamingSanitizer.sanitize`,
:meth:`StreamingRun.extend`, ``dpref quantiles``): each block costs O(D) for the tree
and the projection.  Measured with Binary, about 250 ns per unit at D = 2²², so about a
minute (Hybrid is about three times slower per point).  Across calls the online form has
no limit: the caller paces it."""


@dataclass(frozen=True)
class SanitizedStream:
    """The batch form's output: every synthetic block, concatenated."""

    synthetic: FloatArray
    """The synthetic stream: the blocks' synthetic datasets in order (each sorted)."""
    block_sizes: IntArray
    """Synthetic points per block (under replace and p = 1, n for every full block)."""
    lengths: IntArray
    """Positions of each block (n, and the partial block's length last)."""
    clamped: int
    """Records moved to the nearest end of the domain (``clamp=True``).  An exact count of
    the raw data, for the data holder: it is *not* covered by the declared ε (changing one
    record changes it by one, with no noise), so it must not be released."""
    partial: bool
    """Whether the last block was a partial one (released by ``close``)."""


class StreamingSanitizer:
    """Kaplan–Stemmer's streaming sanitizer: ``offline`` on disjoint blocks of n records.

    Parameters
    ----------
    offline
        The offline sanitizer (a :class:`~dpref.sanitize.ThresholdSanitizer`).
    block_size
        n, the records per block, 1 ≤ n ≤ 2²⁴.
    subsample
        p in (0, 1]: keep each record independently with probability p (default 1);
        p < 1 needs an offline sanitizer with ``neighbours='add-remove'``.
    neighbours
        The stream-level relation :attr:`epsilon` is declared for: ``"replace"`` (the
        default, whatever the offline sanitizer's relation: one record of a stream of the
        same length replaced) or ``"add-remove"`` (positional presence, see the module
        docstring; not insertion or deletion; needs an add/remove offline sanitizer).
    clamp
        Move records outside the domain to its nearest end (counted) instead of raising.
    """

    proof = "proofs/sanitize.py"
    """The module proving parallel composition and the subsampling bound."""
    docs = "docs/quantiles.md"
    """The page describing it."""

    def __init__(
        self,
        offline: Any,
        *,
        block_size: Any,
        subsample: Any = 1,
        neighbours: Any = None,
        clamp: Any = False,
    ) -> None:
        if not isinstance(offline, ThresholdSanitizer):
            raise DprefTypeError(f"offline={fmt(offline)}: must be a ThresholdSanitizer")
        self.offline: ThresholdSanitizer = offline
        self.block_size: int = check_int_range("block_size", block_size, 1, MAX_BLOCK)
        self.subsample: Fraction = check_subsample("subsample", subsample)
        self.clamp: bool = check_flag("clamp", clamp)
        # the default is replace whatever the offline relation: a stream of values can
        # only differ from another of the same length by a replaced record (add/remove
        # here is positional presence, which no input expresses)
        relation = "replace" if neighbours is None else neighbours
        self.neighbours: str = check_choice("neighbours", relation, NEIGHBOURS)
        if self.subsample < 1 and offline.neighbours != "add-remove":
            raise ParameterError(
                f"subsample={fmt(subsample)}: amplification by subsampling needs an offline "
                "sanitizer that is DP under add/remove (neighbours='add-remove'); a dropped "
                "record is a removed one"
            )
        if self.neighbours == "add-remove" and offline.neighbours != "add-remove":
            raise ParameterError(
                f"neighbours={fmt(neighbours)}: an offline sanitizer with "
                "neighbours='replace' releases the exact block size, so it gives no "
                "guarantee when a record is added or removed"
            )
        self._threshold, self.keep_probability = effective_probability(self.subsample)
        self.epsilon: Fraction = self.budget(self.neighbours)
        """The exact declared ε of the whole output stream under :attr:`neighbours`."""

    def budget(self, neighbours: Any) -> Fraction:
        """The exact (rounded-up) ε of the output stream under ``neighbours``."""
        relation = check_choice("neighbours", neighbours, NEIGHBOURS)
        eps0 = self.offline.epsilon
        if self.offline.neighbours == "replace":
            if relation != "replace":
                raise ParameterError(
                    "neighbours='add-remove': no guarantee with a replace-one offline sanitizer"
                )
            return eps0
        return subsampled_epsilon(eps0, self.keep_probability, relation)

    @property
    def epsilon_float(self) -> float:
        """:attr:`epsilon` as the smallest float ≥ it."""
        return ceil_float(self.epsilon)

    def __repr__(self) -> str:
        return (
            f"StreamingSanitizer({self.offline!r}, block_size={self.block_size}, "
            f"subsample={self.subsample}, neighbours={self.neighbours!r})"
        )

    def check_work(
        self, records: int, *, buffered: int = 0, final: bool = True, name: str = "block_size"
    ) -> None:
        """Refuse one call that would release blocks worth more than
        :data:`MAX_BATCH_WORK` (``blocks × (D + BLOCK_OVERHEAD)``).

        ``records`` arrive after ``buffered`` already held; with ``final`` the partial
        block is released too (the batch form).  The error names ``name``: the block size
        for a whole stream, the values for one :meth:`StreamingRun.extend` call.
        """
        total = buffered + records
        n = self.block_size
        blocks = -(-total // n) if final else total // n
        per_block = self.offline.size + BLOCK_OVERHEAD
        if blocks * per_block > MAX_BATCH_WORK:
            value = self.block_size if name == "block_size" else f"<{records} values>"
            raise ParameterError(
                f"{name}={value}: {records} records make {blocks} blocks of "
                f"n={n} at O(D + {BLOCK_OVERHEAD}) = {per_block} work each, more than "
                f"MAX_BATCH_WORK={MAX_BATCH_WORK} in one call; use larger blocks"
                + ("" if name == "block_size" else ", or pass fewer values per call")
            )

    def online(self, rng: Any = None) -> StreamingRun:
        """A run over one stream: ``step``/``extend`` emit synthetic blocks as they
        complete, ``close`` releases the final partial block and ends the run."""
        return StreamingRun(self, make_rng(rng))

    def sanitize(self, stream: Any, rng: Any = None) -> SanitizedStream:
        """The batch form: the whole stream (at most 2²⁶ records), the final partial
        block included; equal to ``online(rng)``'s ``extend`` then ``close``."""
        idx, clamped = self.offline.bucket("stream", stream, clamp=self.clamp)
        self.check_work(int(idx.size))
        run = StreamingRun(self, make_rng(rng))
        releases = run._extend_indices(idx)
        last = run._close()
        if last is not None:
            releases.append(last)
        sizes = np.array([r.total for r in releases], dtype=np.int64)
        synthetic = np.concatenate([r.synthetic for r in releases]) if releases else np.zeros(0)
        return SanitizedStream(
            synthetic, sizes, np.array(run.lengths, dtype=np.int64), clamped, last is not None
        )

    # -------------------------------------------------------------- one block
    def _release_block(self, idx: IntArray, gen: np.random.Generator) -> ThresholdRelease:
        """Subsample one block's records (positions in order) and sanitize them."""
        if self.subsample < 1:
            keep = gen.random(idx.size) < self._threshold
            idx = idx[keep]
        capacity = self.block_size if self.offline.neighbours == "add-remove" else None
        return self.offline.sanitize_indices(idx, gen, capacity=capacity)


class StreamingRun:
    """One pass of a :class:`StreamingSanitizer` over a stream (from ``online()``)."""

    def __init__(self, sanitizer: StreamingSanitizer, gen: np.random.Generator) -> None:
        self.sanitizer = sanitizer
        self._gen = gen
        self._buffer = np.empty(sanitizer.block_size, dtype=np.int64)
        self._fill = 0
        self._closed = False
        self.items = 0
        """Records seen so far."""
        self.clamped = 0
        """Records moved to the nearest end of the domain: exact, not private (see
        :attr:`SanitizedStream.clamped`), not to be released."""
        self.lengths: list[int] = []
        """Positions (records before subsampling) of each released block: public, n for
        every full block.  How many records subsampling kept is not recorded: under
        add/remove it is private."""
        self.last: ThresholdRelease | None = None
        """The most recent block's release (its noisy and projected CDF)."""

    @property
    def blocks(self) -> int:
        """Blocks released so far."""
        return len(self.lengths)

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` ended the run."""
        return self._closed

    def _check_open(self) -> None:
        if self._closed:
            raise ParameterError(
                "closed=True: the run released its final partial block; a record is "
                "released once (start a new run with online())"
            )

    def step(self, x: Any) -> FloatArray | None:
        """Add one record; the synthetic block when it completes one, else None."""
        self._check_open()
        idx, clamped = self.sanitizer.offline.bucket("x", [x], clamp=self.sanitizer.clamp)
        self.clamped += clamped
        out = self._extend_indices(idx)
        return out[0].synthetic if out else None

    def extend(self, values: Any) -> list[FloatArray]:
        """Add records; the synthetic blocks they complete, in order.  Every record is
        checked, and the call's work bounded (:data:`MAX_BATCH_WORK`), before any noise
        is drawn."""
        self._check_open()
        idx, clamped = self.sanitizer.offline.bucket("values", values, clamp=self.sanitizer.clamp)
        self.sanitizer.check_work(int(idx.size), buffered=self._fill, final=False, name="values")
        self.clamped += clamped
        return [r.synthetic for r in self._extend_indices(idx)]

    def close(self) -> FloatArray | None:
        """Release the final partial block (None if the stream ended on a block
        boundary) and end the run."""
        self._check_open()
        last = self._close()
        return None if last is None else last.synthetic

    # ------------------------------------------------------------- internals
    def _extend_indices(self, idx: IntArray) -> list[ThresholdRelease]:
        n = self.sanitizer.block_size
        out: list[ThresholdRelease] = []
        pos = 0
        self.items += int(idx.size)
        while pos < idx.size:
            take = min(n - self._fill, idx.size - pos)
            self._buffer[self._fill : self._fill + take] = idx[pos : pos + take]
            self._fill += take
            pos += take
            if self._fill == n:
                out.append(self._emit(self._buffer))
                self._fill = 0
        return out

    def _emit(self, idx: IntArray) -> ThresholdRelease:
        release = self.sanitizer._release_block(idx, self._gen)
        self.lengths.append(int(idx.size))
        self.last = release
        return release

    def _close(self) -> ThresholdRelease | None:
        self._closed = True
        if self._fill == 0:
            return None
        return self._emit(self._buffer[: self._fill].copy())
