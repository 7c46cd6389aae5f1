"""The pure ε-DP offline sanitizer for threshold functions over a finite ordered
domain (Kaplan, Stemmer 2021, Remark 3.3; docs/spec.md §3).

The records of a dataset are bucketed onto the domain points ``x_1 < … < x_D``
(a value goes to the largest point ≤ it, which answers every threshold query
``c_x(y) = [x ≤ y]`` at a domain point exactly).  Their histogram ``h`` is a stream
of D items, and a tree counter of dpref — :class:`~dpref.mechanisms.Binary` by
default, any registered counter whose target is the prefix sum — is run over it
*as if the domain were time*: its nodes are p-sums of ``h`` over dyadic ranges of
the domain, and its outputs are noisy prefix sums ``F̃(x_j) = Σ_{i ≤ j} h_i`` — a
noisy CDF (in counts).  Nothing here draws tree noise itself: the counter's own
``node_noise`` and ``combine`` do, and its ``plan(D)`` is the explicit linear plan
over the histogram that the audits check.

Sensitivity.  Replacing a record moves one unit between two leaves: ``‖h − h'‖₁ ≤ 2``.
Adding or removing a record changes one leaf by 1: ``‖h − h'‖₁ = 1``.  A linear plan
whose every item column has privacy sum ε at item sensitivity Δ has loss
``Σ_n |Σ_i A_{ni} v_i| / b_n ≤ Σ_i |v_i| Σ_n |A_{ni}|/b_n ≤ ‖v‖₁ ε / Δ`` for any change v,
so the counter is built with Δ = 2 (replace) or Δ = 1 (add/remove): for Binary, scale
``LΔ/ε`` with ``L = ⌊log₂D⌋ + 1`` levels — 2 per level for replace-one, 1 for
add/remove (``proofs/sanitize.py``).

Post-processing.  ``F̃`` is projected in L2 onto the monotone CDFs
``0 ≤ F_1 ≤ … ≤ F_D = N`` by isotonic regression (pool adjacent violators, O(D),
``scipy.optimize.isotonic_regression``) of the first D − 1 values, clipped to
``[0, N]`` (clipping an isotonic fit is the projection onto the monotone cone
intersected with the box).  Why isotonic regression and not the tree's least-squares
consistency (Hay et al. 2010): it needs only the prefix sums, so it works unchanged for
every tree counter dpref has or will have; it is the exact L2 projection onto the
feasible set; and it is 1-Lipschitz in the sup norm and fixes every monotone CDF with
total N, so **the post-processed CDF is never farther from the true CDF, in max error,
than the noisy one** — on every run, not on average (a hypothesis test checks it).  The
synthetic dataset rounds the CDF to integers (rounding is monotone) and repeats each
domain point by its count: deterministic given the noise.

N.  Under replace-one the dataset size is public, N = |D|.  Under add/remove it is not:
N is the projected noisy total, rounded and clipped to ``[0, capacity]`` where
``capacity`` is a public bound on the number of records (a block's length).

References
----------
.. [1] H. Kaplan, U. Stemmer. "A Note on Sanitizing Streams with Differential Privacy."
   2021 (Remark 3.3).
.. [2] T.-H. H. Chan, E. Shi, D. Song. "Private and Continual Release of Statistics."
   ACM TISSEC 14(3), 2011 (the Binary mechanism).
.. [3] M. Hay, V. Rastogi, G. Miklau, D. Suciu. "Boosting the Accuracy of
   Differentially Private Histograms Through Consistency." VLDB 2010.
.. [4] R. E. Barlow, D. J. Bartholomew, J. M. Bremner, H. D. Brunk. "Statistical
   Inference under Order Restrictions." Wiley 1972 (pool adjacent violators).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt

from dpref.domains import Domain
from dpref.errors import DomainError, DprefTypeError, ParameterError
from dpref.lower_bounds import prefix_decay
from dpref.mechanisms import MECHANISMS, Mechanism
from dpref.noise import make_rng
from dpref.plan import LinearPlan
from dpref.registry import build_mechanism
from dpref.sanitize.amplification import NEIGHBOURS
from dpref.types import Budget, Seed
from dpref.validation import (
    check_choice,
    check_flag,
    check_int_range,
    check_real_vector,
    fmt,
)

__all__ = [
    "MAX_DOMAIN",
    "MAX_RECORDS",
    "ThresholdRelease",
    "ThresholdSanitizer",
    "check_domain_points",
    "check_records",
    "histogram_sensitivity",
    "leaf_domain",
    "project_cdf",
    "tree_counters",
]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

MAX_DOMAIN = 1 << 22
"""Most domain points (a tree over 2²² leaves: a few 32 MiB arrays per release)."""
MAX_RECORDS = 1 << 26
"""Most records one :meth:`ThresholdSanitizer.sanitize` call takes (and most synthetic
points it writes)."""


_TREES: dict[tuple[tuple[str, int], ...], tuple[str, ...]] = {}


def tree_counters() -> tuple[str, ...]:
    """Registered mechanisms usable as the tree: counters whose target is the prefix sum
    (decay ``g ≡ 1``) and whose plan is the default prefix target over interval nodes — a
    :class:`~dpref.plan.LinearPlan`, which the sanitizer's proof reads; the Toeplitz
    factorizations (``dpref.strategy`` plans) are not trees (cached per registry content)."""
    key = tuple((name, id(cls)) for name, cls in MECHANISMS.items())
    if key not in _TREES:
        _TREES[key] = _find_trees()
    return _TREES[key]


def _find_trees() -> tuple[str, ...]:
    out = []
    for name, cls in MECHANISMS.items():
        try:
            m = cls(epsilon=1, horizon=4)
        except (ValueError, TypeError):
            continue
        if (
            m.decay() == prefix_decay()
            and type(m).target_rows is Mechanism.target_rows
            and isinstance(m.plan(4), LinearPlan)
        ):
            out.append(name)
    return tuple(out)


LEAVES_TOUCHED: dict[str, int] = {"replace": 2, "add-remove": 1}
"""How many histogram leaves one neighbouring step changes, each by one: a replaced
record leaves one leaf and joins another; an added or removed record changes one."""


def leaf_domain(neighbours: str) -> Domain:
    """The domain the tree counter runs over the histogram with: a leaf count changes by
    at most ``LEAVES_TOUCHED[neighbours]`` units in all, present-or-absent (add/remove,
    from 0), so its item sensitivity — :attr:`Domain.sensitivity`, the calculator's — is
    the histogram's L1 sensitivity, 2 (replace) or 1 (add/remove)."""
    relation = check_choice("neighbours", neighbours, NEIGHBOURS)
    return Domain(
        lower=Fraction(0),
        upper=Fraction(LEAVES_TOUCHED[relation]),
        integer=True,
        neighbours="add_remove",
        name=f"histogram/{relation}",
    )


def histogram_sensitivity(neighbours: str) -> Fraction:
    """Δ of the tree: ``leaf_domain(neighbours).sensitivity`` (through :mod:`dpref.domains`
    and the sensitivity calculator), the L1 change of the histogram one step can make."""
    return leaf_domain(neighbours).sensitivity


def check_records(
    name: str,
    value: Any,
    *,
    limit: int = MAX_RECORDS,
    unit: str = "records",
    limit_name: str = "MAX_RECORDS",
    allow_empty: bool = True,
) -> FloatArray:
    """A 1-D sequence of finite reals, at most ``limit`` long (its length checked before
    it is converted when it is a list, tuple or array), with every error message naming
    ``name=`` (a scalar or a 2-D array is refused; empty only with ``allow_empty``)."""

    def too_long(n: int) -> ParameterError:
        return ParameterError(f"{name}={fmt(value)}: {n} {unit}, more than {limit_name}={limit}")

    if isinstance(value, np.ndarray) and value.ndim == 1 and value.size > limit:
        raise too_long(value.size)
    if isinstance(value, list | tuple) and len(value) > limit:
        raise too_long(len(value))
    x = check_real_vector(name, value, allow_empty=allow_empty)
    if x.size > limit:
        raise too_long(x.size)
    return x


def check_domain_points(name: str, value: Any) -> FloatArray:
    """A non-empty, strictly increasing 1-D array of finite reals, at most
    :data:`MAX_DOMAIN` long."""
    pts = check_records(
        name, value, limit=MAX_DOMAIN, unit="points", limit_name="MAX_DOMAIN", allow_empty=False
    )
    if pts.size > 1:
        with np.errstate(over="ignore"):  # -1e308, 1e308: the difference overflows to inf > 0
            bad = np.flatnonzero(np.diff(pts) <= 0)
        if bad.size:
            i = int(bad[0]) + 1
            raise ParameterError(
                f"{name}[{i}]={float(pts[i])!r}: the domain must be strictly increasing "
                f"(after {float(pts[i - 1])!r})"
            )
    return pts


def _uniform_grid(pts: FloatArray) -> tuple[float, float] | None:
    """``(lo, step)`` when the points are exactly ``lo + step·k`` in float arithmetic."""
    if pts.size < 2:
        return None
    with np.errstate(over="ignore", invalid="ignore"):  # a span beyond 1.8e308 is no grid
        lo, step = float(pts[0]), float(pts[1] - pts[0])
        if np.isfinite(step) and np.array_equal(
            pts, lo + step * np.arange(pts.size, dtype=np.float64)
        ):
            return lo, step
    return None


def project_cdf(noisy: Any, total: Any, capacity: Any) -> tuple[FloatArray, int]:
    """The L2 projection of a noisy CDF (counts) onto ``0 ≤ F_1 ≤ … ≤ F_D = N``.

    ``total`` is N when it is public (replace-one; ``0 ≤ total ≤ capacity``); with
    ``None`` (add/remove) N is the isotonic fit's last value rounded and clipped to
    ``[0, capacity]``, ``0 ≤ capacity ≤`` :data:`MAX_RECORDS`.  ``noisy`` has 1 to
    :data:`MAX_DOMAIN` finite values.  Returns the projected CDF and N.
    """
    from scipy.optimize import isotonic_regression

    if isinstance(noisy, np.ndarray) and noisy.ndim == 1 and noisy.size > MAX_DOMAIN:
        raise ParameterError(f"noisy={fmt(noisy)}: more than MAX_DOMAIN={MAX_DOMAIN} values")
    noisy = check_real_vector("noisy", noisy, max_len=MAX_DOMAIN)
    capacity = check_int_range("capacity", capacity, 0, MAX_RECORDS)
    if total is not None:
        total = check_int_range("total", total, 0, None)
        if total > capacity:
            raise ParameterError(f"total={total}: must be <= capacity={capacity}")

    if total is None:
        fit = isotonic_regression(noisy).x if noisy.size > 1 else noisy.copy()
        n = int(min(max(round(float(fit[-1])), 0), capacity))
    else:
        n = total
    head = noisy[:-1]
    if head.size > 1:
        head = isotonic_regression(head).x
    cdf = np.empty(noisy.size, dtype=np.float64)
    np.clip(head, 0.0, float(n), out=cdf[:-1])
    cdf[-1] = float(n)
    return cdf, n


@dataclass(frozen=True)
class ThresholdRelease:
    """What one :meth:`ThresholdSanitizer.sanitize` call releases."""

    noisy_cdf: FloatArray
    """The tree counter's noisy prefix sums over the domain (counts, before projection)."""
    cdf: FloatArray
    """The projected CDF: monotone, in ``[0, total]``, ending at ``total``."""
    counts: IntArray
    """Records of the synthetic dataset at each domain point (sum: ``total``)."""
    total: int
    """N, the size of the synthetic dataset."""
    points: FloatArray
    """The domain points (shared with the sanitizer, not copied)."""

    @property
    def synthetic(self) -> FloatArray:
        """The synthetic dataset, sorted: domain point j repeated ``counts[j]`` times."""
        out: FloatArray = np.repeat(self.points, self.counts)
        return out


class ThresholdSanitizer:
    """Pure ε-DP sanitizer for the threshold queries over a finite ordered domain.

    Parameters
    ----------
    domain
        The domain points ``x_1 < … < x_D`` (a strictly increasing 1-D sequence of
        finite reals, 1 ≤ D ≤ 2²²).  A record is bucketed to the largest point ≤ it.
    epsilon
        ε > 0 of one release under ``neighbours`` (the tree counter's range applies).
    tree
        The registry name of a tree counter (default ``"binary"``): any name in
        :func:`tree_counters`; it runs over the domain instead of time.
    neighbours
        ``"replace"`` (one record replaced: Δ = 2 on the tree, N public) or
        ``"add-remove"`` (one record added or removed: Δ = 1, N released noisily).

    References
    ----------
    .. [1] Kaplan, Stemmer 2021, Remark 3.3.
    """

    proof = "proofs/sanitize.py"
    """The module proving the tree's sensitivity under both relations."""
    docs = "docs/quantiles.md"
    """The page describing it."""

    def __init__(
        self, *, domain: Any, epsilon: Budget, tree: Any = "binary", neighbours: Any = "replace"
    ) -> None:
        self.points: FloatArray = check_domain_points("domain", domain)
        self.points.flags.writeable = False
        self._grid = _uniform_grid(self.points)
        self.neighbours: str = check_choice("neighbours", neighbours, NEIGHBOURS)
        self.tree: str = check_choice("tree", tree, tree_counters())
        self.mechanism: Mechanism = build_mechanism(
            self.tree,
            epsilon=epsilon,
            horizon=int(self.points.size),
            domain=leaf_domain(self.neighbours),
        )
        self.epsilon: Fraction = self.mechanism.declared_epsilon
        """The exact ε of one release under :attr:`neighbours` (the tree's ε)."""

    @property
    def size(self) -> int:
        """D, the number of domain points (the tree's horizon)."""
        return int(self.points.size)

    @property
    def sensitivity(self) -> Fraction:
        """The L1 change of the histogram one neighbouring step can make: 2 or 1."""
        return self.mechanism.sensitivity

    def __repr__(self) -> str:
        return (
            f"ThresholdSanitizer(D={self.size}, epsilon={self.epsilon}, tree={self.tree!r}, "
            f"neighbours={self.neighbours!r})"
        )

    def plan(self) -> LinearPlan:
        """The tree's explicit linear plan over the histogram (D items, Δ = 2 or 1)."""
        return self.mechanism.plan(self.size)

    def bucket(self, name: str, values: Any, *, clamp: Any = False) -> tuple[IntArray, int]:
        """Validate records and map each to its domain index (largest point ≤ it).

        Outside ``[x_1, x_D]`` a record is a :class:`~dpref.errors.DomainError`, or with
        ``clamp=True`` moved to the nearest end and counted.  Returns the indices and
        the number clamped.
        """
        do_clamp = check_flag("clamp", clamp)
        x = check_records(name, values)
        lo, hi = float(self.points[0]), float(self.points[-1])
        outside = (x < lo) | (x > hi)
        n_out = int(np.count_nonzero(outside))
        if n_out and not do_clamp:
            i = int(np.flatnonzero(outside)[0])
            raise DomainError(
                f"{name}[{i}]={float(x[i])!r}: outside domain=[{lo!r}, {hi!r}] "
                "(clamp=True moves it to the nearest end)"
            )
        if n_out:
            x = np.clip(x, lo, hi)
        return self._locate(x), n_out

    def _locate(self, x: FloatArray) -> IntArray:
        """Index of the largest point ≤ each x (x within the domain): arithmetic on a
        uniform grid, checked against the points and repaired by binary search where
        rounding put it off (searchsorted alone is ~4× slower on unsorted input)."""
        pts = self.points
        if self._grid is None or x.size == 0:
            out: IntArray = np.searchsorted(pts, x, side="right").astype(np.int64) - 1
            return out
        lo, step = self._grid
        k = np.floor((x - lo) / step).astype(np.int64)
        np.clip(k, 0, pts.size - 1, out=k)
        nxt = np.minimum(k + 1, pts.size - 1)
        bad = (pts[k] > x) | ((k + 1 < pts.size) & (pts[nxt] <= x))
        if bad.any():
            k[bad] = np.searchsorted(pts, x[bad], side="right") - 1
        return k

    def sanitize_indices(
        self, idx: IntArray, rng: Seed = None, *, capacity: Any = None
    ) -> ThresholdRelease:
        """:meth:`sanitize` for records already bucketed by :meth:`bucket`."""
        if not isinstance(idx, np.ndarray) or idx.dtype != np.int64 or idx.ndim != 1:
            raise DprefTypeError(f"idx={fmt(idx)}: must be a 1-D int64 array from bucket()")
        if idx.size and (int(idx.min()) < 0 or int(idx.max()) >= self.size):
            raise ParameterError(f"idx={fmt(idx)}: indices must lie in [0, {self.size})")
        if self.neighbours == "add-remove":
            if capacity is None:
                raise ParameterError(
                    "capacity=None: neighbours='add-remove' needs a public bound on the "
                    "number of records (the size itself is private)"
                )
            cap = check_int_range("capacity", capacity, 0, MAX_RECORDS)
            total: int | None = None
        else:
            if capacity is not None:
                check_int_range("capacity", capacity, 0, MAX_RECORDS)
            cap = int(idx.size)
            total = int(idx.size)
        gen = make_rng(rng)
        D = self.size
        hist = np.bincount(idx, minlength=D)
        noisy = self.mechanism.combine(self.mechanism.node_noise(D, gen), D)
        noisy += np.cumsum(hist)
        cdf, n = project_cdf(noisy, total, cap)
        cum = np.rint(cdf).astype(np.int64)
        cum[-1] = n
        counts = np.diff(cum, prepend=np.int64(0))
        return ThresholdRelease(noisy, cdf, counts, n, self.points)

    def sanitize(
        self, data: Any, rng: Seed = None, *, capacity: Any = None, clamp: Any = False
    ) -> ThresholdRelease:
        """Release a synthetic dataset for ``data`` (records in the domain).

        ``capacity`` is the public bound on the number of records that
        ``neighbours='add-remove'`` needs (ignored under replace, where N = len(data)).
        Every argument is checked before any noise is drawn.
        """
        idx, _ = self.bucket("data", data, clamp=clamp)
        return self.sanitize_indices(idx, rng, capacity=capacity)
