"""Global L1 sensitivity of one-dimensional queries (SPEC §4).

The definitions are the sensitivity notebook's (see ``seeds/sensitivity-notebook.txt``),
made exact.  A *universe* ``U`` is either

* ``universe="dataset"``: a multiset of people; equal values are different people, and a
  dataset uses each person at most once (notebook scenario (a)); or
* ``universe="range"``: a set of allowed values, each usable any number of times
  (scenario (b)).

Release datasets are the sub-multisets of ``U`` of size ``n``.  At Hamming distance ``k``:

* **unbounded** (add/remove): the neighbours of a release ``D`` are ``D − R`` for every
  ``R ⊆ D`` with ``|R| = k`` and ``D + A`` for every ``A ⊆ U − D`` with ``|A| = k``;
* **bounded** (replace): ``D = C + A`` and ``D' = C + B`` share a core ``C`` of ``n − k``
  records and ``A, B ⊆ U − C`` have ``k`` records each (so ``D`` and ``D'`` share at least
  ``n − k`` records; when ``A`` and ``B`` overlap they share more).

The global sensitivity is ``max |q(D) − q(D')|`` over all such pairs, or 0 when the only
pair is ``D = D'`` (bounded, ``universe="dataset"``, ``n = |U|``: the only release is
``U`` itself; the notebook raises on ``max([])`` there).

Queries (numpy semantics): ``count``, ``sum``, ``mean``, ``median``, ``var`` and ``std``
(population, ``ddof=0``) and ``percentile_<p>`` (numpy's ``linear`` method, ``0 ≤ p ≤ 100``;
the notebook uses ``percentile_25``, ``_50``, ``_75``, ``_90``).  The mean, median, variance,
standard deviation and percentiles of an empty dataset are undefined, so those queries with
``model="unbounded"`` and ``hamming == size`` raise :class:`~dpref.errors.ParameterError`
instead of comparing against an empty neighbour.  ``count`` under the bounded model is 0:
every dataset has ``n`` records (the notebook's prose says 1, its code computes 0).

Two implementations agree on every input the tests can enumerate:

* :func:`oracle_sensitivity` enumerates the definition above literally (index combinations
  of people, or combinations with replacement of range values) and evaluates every query
  exactly with :class:`~fractions.Fraction`;
* the default fast path uses closed forms for ``count``, ``sum`` and ``mean``; an exact
  dynamic programme over the sorted universe for the order statistics (a percentile is a
  linear function of two adjacent order statistics, so the best pair of datasets is a
  best pair of subsequences of the sorted universe); and, for ``var``/``std``, enumeration
  of distinct sub-multisets (value → multiplicity) of the smaller dataset only, the
  other side reduced to ``k + 1`` sorted-extreme candidates (variance is convex in each
  added record, so a maximiser takes the j smallest and k − j largest remaining records)
  and the contiguous windows of the remaining sorted records (a minimiser takes the k
  records closest to the mean).

Every result except ``std`` is an exact rational, rounded up when converted to a float.

Notes
-----
The notebook emulates a range by repeating each allowed value ``n`` times and calling its
dataset function.  That forbids adding a value already used ``n`` times to a release, so the
neighbours with k more records are fewer than ``universe="range"`` allows.  Example: values
``{1, 11}``, ``n = k = 3``, median, ``unbounded_side="add"``: ``range`` gives 10
(``{1, 11, 11}`` has median 11, ``{1, 1, 1, 1, 11, 11}`` has median 1), the emulation
``[1, 11] * 3`` gives 5, because the first pair needs four 1s.  With both sides (the
default) we found no input where the two differ: the tests search small cases, and the
removal side reaches the same maximum.
"""

from __future__ import annotations

import itertools
import math
import numbers
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Literal

import numpy as np

from dpref.errors import DprefTypeError, EnumerationBudgetError, ParameterError
from dpref.validation import ceil_float, check_fraction, check_int_range, fmt

__all__ = [
    "DEFAULT_MAX_ENUMERATION",
    "NOTEBOOK_QUERIES",
    "Model",
    "UniverseKind",
    "evaluate_query",
    "exact_global_sensitivity",
    "global_sensitivity",
    "global_sensitivity_table",
    "oracle_sensitivity",
    "stream_item_sensitivity",
]

Model = Literal["unbounded", "bounded"]
UniverseKind = Literal["dataset", "range"]

NOTEBOOK_QUERIES: tuple[str, ...] = (
    "mean",
    "median",
    "count",
    "sum",
    "std",
    "var",
    "percentile_25",
    "percentile_50",
    "percentile_75",
    "percentile_90",
)
"""The ten queries of the notebook's figures, in its order."""

DEFAULT_MAX_ENUMERATION = 10_000_000
"""Default work budget (enumerated datasets, or DP state updates); about seconds of work."""

_PERCENTILE_RE = re.compile(r"^percentile_?(.+)$")


# --------------------------------------------------------------------------- queries


@dataclass(frozen=True, kw_only=True)
class _Query:
    """A parsed query name."""

    kind: str
    """One of count, sum, mean, var, std, percentile."""
    p: Fraction = Fraction(50)
    """The percentile in [0, 100] (only for ``kind == "percentile"``)."""


def _parse_query(query: Any, percentile: Any) -> _Query:
    if not isinstance(query, str):
        raise DprefTypeError(f"query={fmt(query)}: must be a string such as 'mean'")
    name = query.strip().lower()
    if name in ("count", "sum", "mean", "var", "std"):
        return _Query(kind=name)
    if name == "median":
        return _Query(kind="percentile", p=Fraction(50))
    if name == "percentile":
        p = check_fraction("percentile", percentile)
        if not 0 <= p <= 100:
            raise ParameterError(f"percentile={fmt(percentile)}: must be in [0, 100]")
        return _Query(kind="percentile", p=p)
    match = _PERCENTILE_RE.match(name)
    if match:
        try:
            p = Fraction(match.group(1))
        except (ValueError, ZeroDivisionError):
            raise ParameterError(
                f"query={fmt(query)}: percentile must be a number, as in 'percentile_25'"
            ) from None
        if not 0 <= p <= 100:
            raise ParameterError(f"query={fmt(query)}: percentile must be in [0, 100]")
        return _Query(kind="percentile", p=p)
    raise ParameterError(
        f"query={fmt(query)}: unknown query; use count, sum, mean, median, var, std or "
        "percentile_<p> with 0 <= p <= 100"
    )


def _percentile_weights(size: int, p: Fraction) -> dict[int, Fraction]:
    """Weights on sorted positions giving numpy's linear percentile of ``size`` values."""
    h = (size - 1) * p / 100
    i = math.floor(h)
    f = h - i
    weights = {i: 1 - f}
    if f:
        weights[i + 1] = f
    return weights


def evaluate_query(query: str, values: Sequence[Fraction], *, percentile: Any = 50) -> Any:
    """Evaluate ``query`` on ``values`` exactly (a Fraction; a float for ``std``).

    numpy semantics: ``var`` and ``std`` use ``ddof=0``; percentiles use the linear method.
    The empty dataset has count and sum 0; the other queries raise ``ParameterError``.
    """
    q = _parse_query(query, percentile)
    return _evaluate(q, sorted(Fraction(v) for v in values))


def _evaluate(q: _Query, xs: Sequence[Fraction]) -> Any:
    """``q`` on an already sorted sequence of Fractions."""
    n = len(xs)
    if q.kind == "count":
        return Fraction(n)
    if q.kind == "sum":
        return sum(xs, Fraction(0))
    if n == 0:
        raise ParameterError(f"query={q.kind!r}: undefined on an empty dataset")
    if q.kind == "percentile":
        return sum((w * xs[i] for i, w in _percentile_weights(n, q.p).items()), Fraction(0))
    mean = sum(xs, Fraction(0)) / n
    if q.kind == "mean":
        return mean
    var = sum(((x - mean) ** 2 for x in xs), Fraction(0)) / n
    if q.kind == "var":
        return var
    return _sqrt(var)


def _sqrt(x: Fraction) -> float:
    return math.sqrt(x.numerator) / math.sqrt(x.denominator)


# --------------------------------------------------------------------------- validation


@dataclass(frozen=True, kw_only=True)
class _Problem:
    """A validated sensitivity question; values scaled to integers."""

    vals: tuple[int, ...]
    """Distinct values, ascending, multiplied by ``scale``."""
    caps: tuple[int, ...] | None
    """Multiplicity of each value (dataset); ``None`` for a range."""
    scale: int
    """Common denominator of the values."""
    n: int
    """Release size."""
    k: int
    """Hamming distance."""
    model: str
    """``"unbounded"`` or ``"bounded"``."""
    query: _Query
    """The query."""
    side: str = "both"
    """Unbounded neighbours used: ``"both"``, ``"remove"`` (k fewer) or ``"add"`` (k more)."""

    @property
    def people(self) -> int:
        """|U| for a dataset (number of records), or the number of range values."""
        return sum(self.caps) if self.caps is not None else len(self.vals)

    @property
    def can_add(self) -> bool:
        """Whether neighbours with k more records exist and are asked for."""
        if self.side == "remove":
            return False
        return self.caps is None or self.people >= self.n + self.k

    @property
    def can_remove(self) -> bool:
        """Whether neighbours with k fewer records are asked for."""
        return self.side != "add"

    def unbounded_sides(self) -> list[tuple[int, int]]:
        """``(|S|, |L|)`` for each kind of unbounded pair ``S ⊂ L`` in use."""
        out = [(self.n - self.k, self.n)] if self.can_remove else []
        return out + ([(self.n, self.n + self.k)] if self.can_add else [])


def _check_values(values: Any) -> list[Fraction]:
    if isinstance(values, str | bytes) or isinstance(values, Mapping):
        raise DprefTypeError(f"values={fmt(values)}: must be a 1-D sequence of numbers")
    if isinstance(values, np.ndarray):
        if values.ndim != 1:
            raise DprefTypeError(f"values: must be 1-D, got shape {values.shape}")
        items: list[Any] = values.tolist()
    else:
        try:
            items = list(values)
        except TypeError:
            raise DprefTypeError(
                f"values={fmt(values)}: must be a 1-D sequence of numbers"
            ) from None
    if not items:
        raise ParameterError("values=[]: the universe must not be empty")
    out = []
    for i, v in enumerate(items):
        if isinstance(v, str | bytes) or not isinstance(v, numbers.Real):
            raise DprefTypeError(f"values[{i}]={fmt(v)}: must be a real number")
        out.append(check_fraction(f"values[{i}]", v))
    return out


def _validate(
    values: Any,
    *,
    size: Any,
    query: Any,
    hamming: Any,
    model: Any,
    universe: Any,
    percentile: Any,
    side: Any = "both",
) -> _Problem:
    if side not in ("both", "remove", "add"):
        raise ParameterError(f"unbounded_side={fmt(side)}: must be 'both', 'remove' or 'add'")
    if model not in ("unbounded", "bounded"):
        raise ParameterError(f"model={fmt(model)}: must be 'unbounded' or 'bounded'")
    if universe not in ("dataset", "range"):
        raise ParameterError(f"universe={fmt(universe)}: must be 'dataset' or 'range'")
    q = _parse_query(query, percentile)
    fracs = _check_values(values)
    n = check_int_range("size", size, 1, None)
    if universe == "dataset" and n > len(fracs):
        raise ParameterError(
            f"size={n}: a release drawn from a dataset universe cannot be larger than the "
            f"universe (|values|={len(fracs)})"
        )
    k = check_int_range("hamming", hamming, 1, None)
    if k > n:
        raise ParameterError(f"hamming={k}: must be <= size={n}")
    if model == "unbounded" and side != "add" and k == n and q.kind not in ("count", "sum"):
        raise ParameterError(
            f"hamming={k}: with model='unbounded' and size={n}, a neighbour is the empty "
            f"dataset, on which query={query!r} is undefined; use hamming < size or "
            "unbounded_side='add'"
        )
    if model == "unbounded" and side == "add" and universe == "dataset" and n + k > len(fracs):
        raise ParameterError(
            f"hamming={k}: unbounded_side='add' needs size + hamming <= |values|="
            f"{len(fracs)}, got size={n}"
        )
    counts: dict[Fraction, int] = {}
    for v in fracs:
        counts[v] = counts.get(v, 0) + 1
    distinct = sorted(counts)
    scale = math.lcm(*(v.denominator for v in distinct))
    vals = tuple(int(v * scale) for v in distinct)
    caps = tuple(counts[v] for v in distinct) if universe == "dataset" else None
    return _Problem(vals=vals, caps=caps, scale=scale, n=n, k=k, model=model, query=q, side=side)


# --------------------------------------------------------------------------- counting


def _count_submultisets(caps: Sequence[int], r: int) -> int:
    """Number of sub-multisets of size ``r``: the x^r coefficient of Π (1 + … + x^c)."""
    poly = [1] + [0] * r
    for c in caps:
        c = min(c, r)
        prefix = list(itertools.accumulate(poly))
        poly = [prefix[j] - (prefix[j - c - 1] if j - c - 1 >= 0 else 0) for j in range(r + 1)]
    return poly[r]


def _caps_for(prob: _Problem, limit: int) -> tuple[int, ...]:
    """Capacities of each value, a range's being ``limit`` (never more is needed)."""
    if prob.caps is None:
        return tuple(limit for _ in prob.vals)
    return tuple(min(c, limit) for c in prob.caps)


def _check_budget(work: int, budget: int, what: str) -> None:
    if work > budget:
        raise EnumerationBudgetError(
            f"max_enumeration={budget}: the {what} needs about {work} steps; raise "
            "max_enumeration or shrink the universe, size or hamming"
        )


# --------------------------------------------------------------------------- oracle


def _oracle(prob: _Problem, budget: int) -> Fraction | float:
    """Literal enumeration of the definition (see the module docstring)."""
    n, k, q = prob.n, prob.k, prob.query
    values = [Fraction(v, prob.scale) for v in prob.vals]
    if prob.caps is not None:
        people = sorted(v for v, c in zip(values, prob.caps, strict=True) for _ in range(c))
        size = len(people)
        if prob.model == "unbounded":
            work = math.comb(size, n) * (math.comb(n, k) + math.comb(size - n, k))
        else:
            work = math.comb(size, n - k) * math.comb(size - n + k, k)
    else:
        m = len(values)
        if prob.model == "unbounded":
            work = math.comb(m + n - 1, n) * (math.comb(n, k) + math.comb(m + k - 1, k))
        else:
            work = math.comb(m + n - k - 1, n - k) * math.comb(m + k - 1, k)
    _check_budget(work, budget, "brute-force oracle")

    def ev(xs: Sequence[Fraction]) -> Any:
        return _evaluate(q, sorted(xs))

    best: Any = Fraction(0)
    if prob.caps is not None:
        everyone = range(len(people))
        if prob.model == "unbounded":
            for rel in itertools.combinations(everyone, n):
                base = ev([people[i] for i in rel])
                rest = sorted(set(everyone) - set(rel))
                for sub in itertools.combinations(rel, n - k) if prob.can_remove else ():
                    best = max(best, abs(base - ev([people[i] for i in sub])))
                for add in itertools.combinations(rest, k) if prob.side != "remove" else ():
                    best = max(best, abs(base - ev([people[i] for i in rel + add])))
        else:
            for core in itertools.combinations(everyone, n - k):
                rest = sorted(set(everyone) - set(core))
                results = [
                    ev([people[i] for i in core + extra])
                    for extra in itertools.combinations(rest, k)
                ]
                best = max(best, max(results) - min(results))
    elif prob.model == "unbounded":
        for release in itertools.combinations_with_replacement(values, n):
            base = ev(release)
            for smaller in itertools.combinations(release, n - k) if prob.can_remove else ():
                best = max(best, abs(base - ev(smaller)))
            for more in itertools.combinations_with_replacement(values, k) if prob.can_add else ():
                best = max(best, abs(base - ev(release + more)))
    else:
        for shared in itertools.combinations_with_replacement(values, n - k):
            outcomes = [
                ev(shared + other) for other in itertools.combinations_with_replacement(values, k)
            ]
            best = max(best, max(outcomes) - min(outcomes))
    out: Fraction | float = best
    return out


# --------------------------------------------------------------------------- fast path


def _top(prob: _Problem, j: int, *, largest: bool) -> int:
    """Sum of the j largest (or smallest) records a dataset may hold (scaled)."""
    order = range(len(prob.vals) - 1, -1, -1) if largest else range(len(prob.vals))
    total, left = 0, j
    for i in order:
        take = left if prob.caps is None else min(left, prob.caps[i])
        total += take * prob.vals[i]
        left -= take
        if left == 0:
            break
    return total


def _fast_closed_form(prob: _Problem) -> Fraction:
    """count, sum and mean in closed form."""
    n, k, kind = prob.n, prob.k, prob.query.kind
    if kind == "count":
        return Fraction(k if prob.model == "unbounded" else 0)

    def hi(j: int) -> int:
        return _top(prob, j, largest=True)

    def lo(j: int) -> int:
        return _top(prob, j, largest=False)

    if prob.model == "bounded":
        # D = C + A, D' = C + B: the sums differ by sum(A) − sum(B); with j = min(k, |U| − n)
        # free records on each side the best is the j largest minus the j smallest.
        j = k if prob.caps is None else min(k, prob.people - n)
        diff = Fraction(hi(j) - lo(j), prob.scale)
        return diff if kind == "sum" else diff / n
    if kind == "sum":
        # Removing or adding any k records; |sum| is largest at an extreme k-subset.
        # (Both sides reach every k-subset X whenever they exist; validation rejects
        # unbounded_side='add' when no neighbour with k more records exists.)
        return Fraction(max(abs(hi(k)), abs(lo(k))), prob.scale)
    # mean(S + X) − mean(S) = |X| / |S + X| · (mean X − mean S), X and S disjoint.
    best = Fraction(0)
    for small, big in prob.unbounded_sides():
        up = Fraction(hi(k), k) - Fraction(lo(small), small)
        down = Fraction(hi(small), small) - Fraction(lo(k), k)
        best = max(best, Fraction(k, big) * max(up, down))
    return best / prob.scale


def _people(prob: _Problem, limit: int) -> list[int]:
    caps = _caps_for(prob, limit)
    return [v for v, c in zip(prob.vals, caps, strict=True) for _ in range(c)]


def _best_pair_linear(
    people: Sequence[int],
    size_d: int,
    size_e: int,
    w_d: Mapping[int, int],
    w_e: Mapping[int, int],
    max_d_only: int,
    max_e_only: int,
) -> int | None:
    """Max of ``Σ w_d[c]·d_c − Σ w_e[c]·e_c`` over datasets D, E drawn from ``people``.

    ``d_c`` is the c-th smallest record of D.  Every person is in neither, both, D only or
    E only; ``|D| = size_d``, ``|E| = size_e``, at most ``max_d_only`` in D only and
    ``max_e_only`` in E only.  Because ``people`` is sorted, every pair of datasets is a
    pair of subsequences and the c-th chosen record is the c-th smallest: a DP over
    ``(both, d_only, e_only)`` is exact.  Returns None when no pair exists.
    """
    states: dict[tuple[int, int, int], int] = {(0, 0, 0): 0}
    total = len(people)
    for idx, u in enumerate(people):
        remaining = total - idx - 1
        new = dict(states)
        for (b, do, eo), val in states.items():
            cd, ce = b + do, b + eo
            gain_d = w_d.get(cd, 0) * u if cd < size_d else None
            gain_e = w_e.get(ce, 0) * u if ce < size_e else None
            cands: list[tuple[tuple[int, int, int], int]] = []
            if gain_d is not None and gain_e is not None:
                cands.append(((b + 1, do, eo), val + gain_d - gain_e))
            if gain_d is not None and do < max_d_only:
                cands.append(((b, do + 1, eo), val + gain_d))
            if gain_e is not None and eo < max_e_only:
                cands.append(((b, do, eo + 1), val - gain_e))
            for key, cand in cands:
                nb, ndo, neo = key
                if max(size_d - nb - ndo, size_e - nb - neo) > remaining:
                    continue
                old = new.get(key)
                if old is None or cand > old:
                    new[key] = cand
        states = new
    finals = [v for (b, do, eo), v in states.items() if b + do == size_d and b + eo == size_e]
    return max(finals) if finals else None


def _fast_percentile(prob: _Problem, budget: int) -> Fraction:
    n, k, p = prob.n, prob.k, prob.query.p
    people = _people(prob, n + k)
    if prob.model == "unbounded":
        pairs = [(n, n - k, k, 0)] if prob.can_remove else []
        pairs += [(n, n + k, 0, k)] if prob.can_add else []
    else:
        pairs = [(n, n, k, k)]
    work = sum(len(people) * (min(d, e) + 1) * (a + 1) * (b + 1) for d, e, a, b in pairs)
    _check_budget(2 * work, budget, "order-statistic dynamic programme")
    best = Fraction(0)
    for size_d, size_e, max_do, max_eo in pairs:
        wd = _percentile_weights(size_d, p)
        we = _percentile_weights(size_e, p)
        den = math.lcm(*(w.denominator for w in (*wd.values(), *we.values())))
        wd_int = {i: int(w * den) for i, w in wd.items()}
        we_int = {i: int(w * den) for i, w in we.items()}
        for sign in (1, -1):
            got = _best_pair_linear(
                people,
                size_d,
                size_e,
                {i: sign * w for i, w in wd_int.items()},
                {i: sign * w for i, w in we_int.items()},
                max_do,
                max_eo,
            )
            if got is not None:
                best = max(best, Fraction(got, den * prob.scale))
            if prob.model == "bounded":
                break  # symmetric: swapping D and D' gives the other sign
    return best


def _submultisets(caps: Sequence[int], r: int) -> Iterator[list[int]]:
    """Every multiplicity vector ``c`` with ``0 <= c_i <= caps_i`` and ``Σ c = r``."""
    m = len(caps)
    suffix = [*list(itertools.accumulate(reversed(caps)))[::-1], 0]
    counts = [0] * m

    def rec(i: int, left: int) -> Iterator[list[int]]:
        if left == 0:
            yield counts
            return
        if i == m or suffix[i] < left:
            return
        for c in range(min(caps[i], left), -1, -1):
            counts[i] = c
            yield from rec(i + 1, left - c)
        counts[i] = 0

    yield from rec(0, r)


def _moment_extremes(rest: Sequence[int], k: int, size: int, s1: int, s2: int) -> tuple[int, int]:
    """Max and min of ``size·Σy² − (Σy)²`` over ``S + X``, X a k-subset of sorted ``rest``.

    ``size·var = size·Σy² − (Σy)²`` over ``size``; S has sums ``s1``, ``s2``.  Var is convex
    in each record of X, so a maximiser takes the j smallest and k − j largest records of
    ``rest``; a minimiser takes the k records nearest the mean, a contiguous window.
    """
    pre1 = [0, *itertools.accumulate(rest)]
    pre2 = [0, *itertools.accumulate(x * x for x in rest)]
    r = len(rest)

    def num(a: int, b: int) -> int:
        return size * (s2 + b) - (s1 + a) ** 2

    hi = max(
        num(pre1[j] + pre1[r] - pre1[r - k + j], pre2[j] + pre2[r] - pre2[r - k + j])
        for j in range(k + 1)
    )
    lo = min(num(pre1[i + k] - pre1[i], pre2[i + k] - pre2[i]) for i in range(r - k + 1))
    return hi, lo


def _fast_moment(prob: _Problem, budget: int) -> Fraction | float:
    """var and std: enumerate distinct sub-multisets of the smaller side only."""
    n, k = prob.n, prob.k
    want_std = prob.query.kind == "std"
    m = len(prob.vals)
    if prob.model == "unbounded":
        sides = prob.unbounded_sides()
    else:
        sides = [(n - k, n)]
    work = 0
    for small, _ in sides:
        work += _count_submultisets(_caps_for(prob, small), small) * (m * k + k + 2)
    _check_budget(work, budget, "multiset enumeration")
    vals = prob.vals
    best_exact = Fraction(0)
    best_float = 0.0
    best_num: dict[int, int] = {}
    for small, big in sides:
        caps = _caps_for(prob, max(small, k) + k)
        for counts in _submultisets(_caps_for(prob, small), small):
            s1 = sum(c * v for c, v in zip(counts, vals, strict=True))
            s2 = sum(c * v * v for c, v in zip(counts, vals, strict=True))
            rest = [
                v
                for v, c, cap in zip(vals, counts, caps, strict=True)
                for _ in range(min(k, cap - c))
            ]
            if len(rest) < k:
                continue
            hi, lo = _moment_extremes(rest, k, big, s1, s2)
            if prob.model == "bounded":
                # D = C + A, D' = C + B with A, B chosen independently from ``rest``.
                if want_std:
                    best_float = max(best_float, (math.sqrt(hi) - math.sqrt(lo)) / big)
                else:
                    best_exact = max(best_exact, Fraction(hi - lo, big * big))
                continue
            own = small * s2 - s1 * s1  # small² · var(S)
            if want_std:
                s_small = math.sqrt(own) / small
                best_float = max(
                    best_float,
                    math.sqrt(hi) / big - s_small,
                    s_small - math.sqrt(lo) / big,
                )
            else:
                # Integers over the common denominator big² · small² (exact, and fast).
                a, b = small * small, big * big
                top = max(hi * a - own * b, own * b - lo * a)
                if top > best_num.get(small, 0):
                    best_num[small] = top
    if want_std:
        return best_float / prob.scale
    for small, top in best_num.items():
        big = small + k
        best_exact = max(best_exact, Fraction(top, small * small * big * big))
    return best_exact / (prob.scale * prob.scale)


def _fast(prob: _Problem, budget: int) -> Fraction | float:
    kind = prob.query.kind
    if kind in ("count", "sum", "mean"):
        return _fast_closed_form(prob)
    if kind == "percentile":
        return _fast_percentile(prob, budget)
    return _fast_moment(prob, budget)


# --------------------------------------------------------------------------- public API


def _solve(
    values: Any,
    *,
    size: Any,
    query: Any,
    hamming: Any,
    model: Any,
    universe: Any,
    method: Any,
    percentile: Any,
    unbounded_side: Any,
    max_enumeration: Any,
) -> Fraction | float:
    if method not in ("fast", "oracle"):
        raise ParameterError(f"method={fmt(method)}: must be 'fast' or 'oracle'")
    budget = check_int_range("max_enumeration", max_enumeration, 1, None)
    prob = _validate(
        values,
        size=size,
        query=query,
        hamming=hamming,
        model=model,
        universe=universe,
        percentile=percentile,
        side=unbounded_side,
    )
    return _oracle(prob, budget) if method == "oracle" else _fast(prob, budget)


def exact_global_sensitivity(
    values: Any,
    *,
    size: int,
    query: str,
    hamming: int = 1,
    model: Model = "unbounded",
    universe: UniverseKind = "dataset",
    method: Literal["fast", "oracle"] = "fast",
    percentile: Any = 50,
    unbounded_side: Literal["both", "remove", "add"] = "both",
    max_enumeration: int = DEFAULT_MAX_ENUMERATION,
) -> Fraction:
    """The global sensitivity as an exact :class:`~fractions.Fraction`.

    Same arguments as :func:`global_sensitivity`.  ``query="std"`` is irrational in general
    and raises :class:`~dpref.errors.ParameterError`; use :func:`global_sensitivity`.
    """
    if isinstance(query, str) and query.strip().lower() == "std":
        raise ParameterError("query='std': not exact (a square root); use global_sensitivity")
    out = _solve(
        values,
        size=size,
        query=query,
        hamming=hamming,
        model=model,
        universe=universe,
        method=method,
        percentile=percentile,
        unbounded_side=unbounded_side,
        max_enumeration=max_enumeration,
    )
    assert isinstance(out, Fraction)
    return out


def global_sensitivity(
    values: Any,
    *,
    size: int,
    query: str,
    hamming: int = 1,
    model: Model = "unbounded",
    universe: UniverseKind = "dataset",
    method: Literal["fast", "oracle"] = "fast",
    percentile: Any = 50,
    unbounded_side: Literal["both", "remove", "add"] = "both",
    max_enumeration: int = DEFAULT_MAX_ENUMERATION,
) -> float:
    r"""Global L1 sensitivity ``max |q(D) − q(D')|`` of ``query`` (SPEC §4).

    Parameters
    ----------
    values
        The universe: the records of a dataset (``universe="dataset"``; duplicates are
        different people) or the allowed values (``universe="range"``; duplicates ignored).
    size
        ``n``, the number of records of a release.
    query
        ``count``, ``sum``, ``mean``, ``median``, ``var``, ``std``, ``percentile_<p>``
        (``0 <= p <= 100``), or ``percentile`` with ``percentile=p``.
    hamming
        ``k``, the number of records added, removed (unbounded) or replaced (bounded);
        ``1 <= k <= n``.  ``k > 1`` is group privacy for groups of ``k`` people.
    model
        ``"unbounded"`` (add/remove) or ``"bounded"`` (replace).
    universe
        ``"dataset"`` or ``"range"``.
    method
        ``"fast"`` (default, exact algorithms) or ``"oracle"`` (literal enumeration).
    percentile
        The percentile for ``query="percentile"``.
    unbounded_side
        For ``model="unbounded"``: ``"both"`` (default; the notebook's choice), or only the
        neighbours with k fewer (``"remove"``) or k more (``"add"``) records.
    max_enumeration
        Work budget; larger problems raise :class:`~dpref.errors.EnumerationBudgetError`
        before any enumeration starts.

    Returns
    -------
    float
        The exact sensitivity rounded up to a float (``std``: a float computed from exact
        variances, accurate to a few ulps).

    References
    ----------
    .. [1] C. Dwork, A. Roth, "The Algorithmic Foundations of Differential Privacy",
       2014, Def. 3.1 (ℓ1 sensitivity) and §2.3 (group privacy).
    """
    out = _solve(
        values,
        size=size,
        query=query,
        hamming=hamming,
        model=model,
        universe=universe,
        method=method,
        percentile=percentile,
        unbounded_side=unbounded_side,
        max_enumeration=max_enumeration,
    )
    return ceil_float(out) if isinstance(out, Fraction) else float(out)


def global_sensitivity_table(columns: Mapping[str, Any], **kwargs: Any) -> dict[str, float]:
    """:func:`global_sensitivity` for every column of a table, as the notebook reports it."""
    if not isinstance(columns, Mapping):
        raise DprefTypeError(f"columns={fmt(columns)}: must map column names to values")
    return {str(name): global_sensitivity(col, **kwargs) for name, col in columns.items()}


def oracle_sensitivity(values: Any, **kwargs: Any) -> float:
    """The brute-force reference: :func:`global_sensitivity` with ``method="oracle"``."""
    return global_sensitivity(values, method="oracle", **kwargs)


def stream_item_sensitivity(lower: Fraction, upper: Fraction, neighbours: str) -> Fraction:
    """Event-level Δ of one stream item with values in ``[lower, upper]``.

    Computed by the calculator itself: the exact sum-query sensitivity for the range
    universe ``{lower, upper}``, release size 1, Hamming distance 1, with ``"replace"``
    → bounded (``upper − lower``) and ``"add_remove"`` → unbounded
    (``max(|lower|, |upper|)``).  The stream mechanisms and the calculator therefore
    agree by construction.
    """
    if neighbours == "replace":
        model: Model = "bounded"
    elif neighbours == "add_remove":
        model = "unbounded"
    else:
        raise ParameterError(f"neighbours={fmt(neighbours)}: must be 'replace' or 'add_remove'")
    lo = check_fraction("lower", lower)
    hi = check_fraction("upper", upper)
    return exact_global_sensitivity(
        [lo, hi], size=1, query="sum", hamming=1, model=model, universe="range"
    )
