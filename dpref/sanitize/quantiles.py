"""Private quantiles under continual observation: the sanitized stream fed into a
non-private KLL sketch (Kaplan, Stemmer 2021, Section 3; docs/quantiles.md).

The streaming sanitizer's output is ε-DP, so anything computed from it is too
(post-processing): a KLL sketch (Karnin, Lang, Liberty 2016; Apache DataSketches'
``kll_doubles_sketch``) of the synthetic stream answers every quantile and rank, after
every block, for no further privacy cost — continual monitoring comes free (Remark
1.4).  Its memory is the sketch's plus one block, independent of the stream length.
For streams small enough to keep (``exact_limit`` synthetic points), the exact
quantiles of the synthetic stream are available too, which separates the sketch's
own error from the privacy error.

Determinism: the synthetic stream (and so :meth:`PrivateQuantiles.exact_quantiles`) is
a function of the input and the rng.  The KLL sketch compacts with DataSketches' own
random bits, which its Python binding does not let us seed: past k retained items its
answers may differ between runs, within the sketch's rank error.

Also here, for comparison: :func:`exponential_quantile`, the one-shot offline private
quantile of Smith (2011) — the exponential mechanism over the domain, needing all the
data at once.

References
----------
.. [1] H. Kaplan, U. Stemmer. "A Note on Sanitizing Streams with Differential Privacy."
   2021.
.. [2] Z. Karnin, K. Lang, E. Liberty. "Optimal Quantile Approximation in Streams."
   FOCS 2016.
.. [3] A. Smith. "Privacy-Preserving Statistical Estimation with Optimal Convergence
   Rates." STOC 2011.
.. [4] D. Alabi, O. Ben-Eliezer, A. Chaturvedi. "Bounded Space Differentially Private
   Quantiles." TPDP 2021.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt

from dpref.errors import ParameterError
from dpref.mechanisms.base import MAX_EPSILON
from dpref.noise import make_rng
from dpref.sanitize.amplification import check_subsample
from dpref.sanitize.streaming import StreamingRun, StreamingSanitizer
from dpref.sanitize.threshold import (
    MAX_RECORDS,
    ThresholdSanitizer,
    check_domain_points,
    check_records,
)
from dpref.types import Budget, Count, Seed, Stream
from dpref.validation import (
    check_epsilon,
    check_int_range,
    check_real_scalar,
    check_real_vector,
    fmt,
)

__all__ = [
    "DEFAULT_SKETCH_K",
    "MAX_EXACT",
    "PrivateQuantiles",
    "check_quantiles",
    "exact_quantiles",
    "exponential_quantile",
    "private_quantiles",
    "rank_errors",
]

FloatArray = npt.NDArray[np.float64]

DEFAULT_SKETCH_K = 1000
"""KLL's k: normalized rank error about 0.28 % (DataSketches' 99 % single-rank bound)."""
MAX_SKETCH_K = 1 << 15
"""Largest sketch k (DataSketches allows 2¹⁶ − 1; memory grows linearly with k)."""
MAX_EXACT = MAX_RECORDS
"""Most synthetic points kept for exact quantiles."""
MAX_QUANTILES = 10_000
"""Most quantiles asked at once."""


def _kll(k: int) -> Any:
    try:
        from datasketches import kll_doubles_sketch
    except ImportError:
        raise ParameterError(
            "sketch='kll': needs the optional package datasketches (pip install 'dpref[quantiles]')"
        ) from None
    return kll_doubles_sketch(k)


def check_quantiles(name: str, value: Any) -> FloatArray:
    """A non-empty 1-D sequence (or one number) of quantiles in [0, 1]."""
    if isinstance(value, float | int | Fraction | np.floating | np.integer) and not isinstance(
        value, bool | np.bool_
    ):
        value = [value]
    qs = check_records(
        name,
        value,
        limit=MAX_QUANTILES,
        unit="quantiles",
        limit_name="MAX_QUANTILES",
        allow_empty=False,
    )
    bad = np.flatnonzero((qs < 0) | (qs > 1))
    if bad.size:
        i = int(bad[0])
        raise ParameterError(f"{name}[{i}]={float(qs[i])!r}: a quantile must be in [0, 1]")
    return qs


def _check_sorted(name: str, value: Any, *, allow_empty: bool) -> FloatArray:
    x = check_records(name, value, allow_empty=allow_empty)
    bad = np.flatnonzero(np.diff(x) < 0)
    if bad.size:
        i = int(bad[0]) + 1
        raise ParameterError(
            f"{name}[{i}]={float(x[i])!r}: must be sorted (after {float(x[i - 1])!r})"
        )
    return x


def exact_quantiles(sorted_values: Any, qs: Any) -> FloatArray:
    """The smallest value whose normalized rank (count ≤ it, over N) is ≥ q: item
    ``⌈qN⌉`` (1-based, at least 1) of the sorted values — DataSketches' inclusive rule
    (NaN for every q when there are no values)."""
    sorted_values = _check_sorted("sorted_values", sorted_values, allow_empty=True)
    qs = check_quantiles("qs", qs)
    n = sorted_values.size
    if n == 0:
        return np.full(qs.size, np.nan)
    pos = np.clip(np.ceil(qs * n).astype(np.int64), 1, n) - 1
    out: FloatArray = sorted_values[pos]
    return out


def rank_errors(sorted_truth: Any, values: Any, qs: Any) -> FloatArray:
    """How far q lies from the normalized rank interval ``[F(v⁻), F(v)]`` of each answer
    v in the true data (0 when v is a correct q-quantile; ties count as correct).
    ``sorted_truth`` is non-empty and sorted; ``values`` has one answer per q."""
    sorted_truth = _check_sorted("sorted_truth", sorted_truth, allow_empty=False)
    qs = check_quantiles("qs", qs)
    values = check_records("values", values)
    if values.size != qs.size:
        raise ParameterError(
            f"values={fmt(values)}: {values.size} answers for qs={fmt(qs)} "
            f"({qs.size} quantiles); give one per quantile"
        )
    n = sorted_truth.size
    below = np.searchsorted(sorted_truth, values, side="left") / n
    upto = np.searchsorted(sorted_truth, values, side="right") / n
    out: FloatArray = np.maximum(np.maximum(below - qs, qs - upto), 0.0)
    return out


class PrivateQuantiles:
    """ε-DP quantiles of a stream, answerable after every block.

    A :class:`~dpref.sanitize.StreamingSanitizer` over a
    :class:`~dpref.sanitize.ThresholdSanitizer` feeds a KLL sketch.

    Parameters
    ----------
    domain
        The domain points (strictly increasing, 1 ≤ D ≤ 2²²).
    epsilon
        ε₀ of each block's threshold sanitizer (the declared ε of the whole stream, under
        replace-one, is :attr:`epsilon`: ε₀ with the default relation and p = 1, 2ε₀ with
        ``neighbours="add-remove"`` and p = 1, the subsampled bound for p < 1).
    block_size
        n, records per block, 1 ≤ n ≤ 2²⁴.
    subsample
        p in (0, 1] (default 1); p < 1 needs ``neighbours='add-remove'``.
    tree
        Registry name of the tree counter (default ``"binary"``).
    neighbours
        ``"replace"`` (default) or ``"add-remove"``: the relation each block's threshold
        sanitizer is calibrated for (``"add-remove"`` is needed for p < 1).  The declared
        :attr:`epsilon` is always for the stream relation a stream of values has:
        one record replaced (the stream's length is public).
    clamp
        Move records outside the domain to its nearest end (counted in
        :attr:`clamped`, an exact count that is not private) instead of raising.
    sketch_k
        KLL's k, 8 ≤ k ≤ 2¹⁵ (default 1000).
    exact_limit
        Keep the synthetic stream for exact quantiles while it has at most this many
        points (0 ≤ limit ≤ 2²⁶; default 2²⁰); beyond it only the sketch answers.
    rng
        A numpy Generator, an int seed or None.
    """

    def __init__(
        self,
        *,
        domain: Any,
        epsilon: Budget,
        block_size: Count,
        subsample: Any = 1,
        tree: Any = "binary",
        neighbours: Any = "replace",
        clamp: Any = False,
        sketch_k: Any = DEFAULT_SKETCH_K,
        exact_limit: Any = 1 << 20,
        rng: Seed = None,
    ) -> None:
        offline = ThresholdSanitizer(
            domain=domain, epsilon=epsilon, tree=tree, neighbours=neighbours
        )
        self.sanitizer = StreamingSanitizer(
            offline, block_size=block_size, subsample=subsample, clamp=clamp
        )
        self.sketch_k: int = check_int_range("sketch_k", sketch_k, 8, MAX_SKETCH_K)
        self.exact_limit: int = check_int_range("exact_limit", exact_limit, 0, MAX_EXACT)
        gen = make_rng(rng)
        self._sketch = _kll(self.sketch_k)
        self._run: StreamingRun = self.sanitizer.online(gen)
        self._kept: list[FloatArray] | None = []
        self._points = 0

    @property
    def epsilon(self) -> Fraction:
        """The exact declared ε of everything this object releases."""
        return self.sanitizer.epsilon

    @property
    def blocks(self) -> int:
        """Blocks released so far."""
        return self._run.blocks

    @property
    def items(self) -> int:
        """Records read so far."""
        return self._run.items

    @property
    def clamped(self) -> int:
        """Records moved to the nearest end of the domain.  Exact, computed from the raw
        data: not covered by :attr:`epsilon`, for the data holder only (``dpref quantiles``
        does not print it)."""
        return self._run.clamped

    @property
    def synthetic_size(self) -> int:
        """Points of the synthetic stream so far (what the sketch has seen)."""
        return self._points

    @property
    def last_release(self) -> Any:
        """The last block's :class:`~dpref.sanitize.ThresholdRelease` (or None)."""
        return self._run.last

    def _feed(self, blocks: list[FloatArray]) -> int:
        for block in blocks:
            if block.size:
                self._sketch.update(block)
            self._points += int(block.size)
            if self._kept is not None:
                if self._points > self.exact_limit:
                    self._kept = None
                else:
                    self._kept.append(block)
        return len(blocks)

    def step(self, x: Any) -> int:
        """Read one record; the number of blocks it completed (0 or 1)."""
        block = self._run.step(x)
        return self._feed([] if block is None else [block])

    def extend(self, values: Any) -> int:
        """Read records (checked, and the call's work bounded by
        :data:`~dpref.sanitize.streaming.MAX_BATCH_WORK`, before any noise); the number
        of blocks completed."""
        return self._feed(self._run.extend(values))

    def close(self) -> int:
        """Release the final partial block and end the stream; 1 if there was one."""
        block = self._run.close()
        return self._feed([] if block is None else [block])

    def quantiles(self, q: Any) -> FloatArray:
        """The sketch's answer for each quantile in ``q``: the smallest retained value whose
        inclusive rank (fraction ≤ it) is ≥ q, as :func:`exact_quantiles` (NaN before the
        first block)."""
        qs = check_quantiles("q", q)
        if self._points == 0:
            return np.full(qs.size, np.nan)
        return np.asarray(self._sketch.get_quantiles(qs.tolist(), True), dtype=np.float64)

    def rank(self, x: Any) -> float:
        """The sketch's normalized rank (fraction ≤ x) of a value (NaN before data)."""
        value = check_real_scalar("x", x)  # a real, finite number (not a bool or a timedelta)
        if self._points == 0:
            return math.nan
        return float(self._sketch.get_rank(value, True))

    def exact_quantiles(self, q: Any) -> FloatArray:
        """Exact quantiles of the synthetic stream (kept while at most ``exact_limit``
        points); NaN before the first block."""
        qs = check_quantiles("q", q)
        if self._kept is None:
            raise ParameterError(
                f"exact_limit={self.exact_limit}: the synthetic stream has "
                f"{self._points} points, more than kept; use quantiles() (the sketch)"
            )
        values = np.sort(np.concatenate(self._kept)) if self._kept else np.zeros(0)
        return exact_quantiles(values, qs)

    def sketch_rank_error(self) -> float:
        """DataSketches' a-priori 99 % bound on the sketch's normalized rank error."""
        return float(self._sketch.normalized_rank_error(False))


def private_quantiles(
    stream: Stream,
    q: Any = (0.01, 0.5, 0.99),
    *,
    domain: Any,
    epsilon: Budget,
    block_size: Count,
    subsample: Any = 1,
    rng: Seed = None,
) -> FloatArray:
    """One-call form: sanitize ``stream`` (at most 2²⁶ records, its final partial block
    included, at most :data:`~dpref.sanitize.streaming.MAX_BATCH_WORK` =
    2²⁸ units of ``blocks × (D + 2048)`` work) and return the KLL sketch's quantiles
    ``q`` of the synthetic stream (ε-DP as :class:`PrivateQuantiles` for one record
    replaced; the blocks' sanitizer is add/remove when p < 1, so ε is the subsampled
    replace-one bound)."""
    qs = check_quantiles("q", q)
    p = check_subsample("subsample", subsample)
    pq = PrivateQuantiles(
        domain=domain,
        epsilon=epsilon,
        block_size=block_size,
        subsample=p,
        neighbours="add-remove" if p < 1 else "replace",
        exact_limit=0,
        rng=rng,
    )
    idx, _ = pq.sanitizer.offline.bucket("stream", stream)
    pq.sanitizer.check_work(int(idx.size))
    pq._feed([r.synthetic for r in pq._run._extend_indices(idx)])
    pq.close()
    return pq.quantiles(qs)


def exponential_quantile(
    data: Any, q: Any, *, domain: Any, epsilon: Budget, rng: Seed = None
) -> float:
    """Smith's (2011) one-shot ε-DP quantile: the exponential mechanism over the domain
    points with utility ``u(x) = −dist(qN, [#{y < x}, #{y ≤ x}])`` (sensitivity 1 under
    replace-one), ``P(x) ∝ exp(ε u(x)/2)``, sampled by the Gumbel-max trick.  Needs all
    the data at once; a floating-point comparison baseline, not a reference mechanism.
    """
    pts = check_domain_points("domain", domain)
    eps = check_epsilon("epsilon", epsilon)
    if eps > MAX_EPSILON:
        raise ParameterError(f"epsilon={fmt(epsilon)}: must be <= 2^400 (MAX_EPSILON)")
    qs = check_quantiles("q", q)
    if qs.size != 1:
        raise ParameterError(f"q={fmt(q)}: one quantile per call")
    x = check_real_vector("data", data)
    if x.size > MAX_RECORDS:
        raise ParameterError(f"data: {x.size} records, more than MAX_RECORDS={MAX_RECORDS}")
    outside = np.flatnonzero((x < pts[0]) | (x > pts[-1]))
    if outside.size:
        i = int(outside[0])
        raise ParameterError(
            f"data[{i}]={float(x[i])!r}: outside domain=[{float(pts[0])!r}, {float(pts[-1])!r}]"
        )
    gen = make_rng(rng)
    idx = np.searchsorted(pts, x, side="right") - 1
    hist = np.bincount(idx, minlength=pts.size)
    upto = np.cumsum(hist)
    below = upto - hist
    target = float(qs[0]) * x.size
    utility = -np.maximum(np.maximum(below - target, target - upto), 0.0)
    score = float(eps) / 2 * utility + gen.gumbel(size=pts.size)
    return float(pts[int(np.argmax(score))])
