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
* the default fast path uses closed forms for ``count``, ``sum`` and ``mean``, and
  polynomial families of structured candidates, each proven to contain an optimal pair:
  for percentiles the ``ℓ + 1`` prefix + suffix subsets of the sorted people
  (:func:`_fast_percentile`); for ``var``/``std`` a block of consecutive people plus
  sorted extremes (Lemmas U, D, B of :func:`_fast_moment`; ``std`` reduces to a
  weighted variance difference by quasi-convexity).  Sums are exact integers.

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


def _check_values(values: Any) -> list[int | Fraction]:
    """The universe's values, exactly: plain ints kept as ints (fast), others as Fractions."""
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
    out: list[int | Fraction] = []
    for i, v in enumerate(items):
        if type(v) is int:  # the common case; bools are not ``int`` by type
            out.append(v)
            continue
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
    counts: dict[int | Fraction, int] = {}
    for v in fracs:  # equal ints and Fractions hash and compare equal
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
    """The sorted records a dataset may use (a range value repeated ``limit`` times)."""
    caps = _caps_for(prob, limit)
    return [v for v, c in zip(prob.vals, caps, strict=True) for _ in range(c)]


def _best_split(people: Sequence[int], size: int, weights: Mapping[int, int]) -> int:
    r"""Max of ``Σ_c W_c m_c`` over the prefix + suffix subsequences ``m`` of ``people``.

    ``m`` has ``size`` records: the ``j`` smallest and the ``size − j`` largest people,
    ``0 ≤ j ≤ size``.  ``weights`` maps sorted positions of ``m`` to integer weights.

    Lemma (why these ``size + 1`` candidates suffice).  Suppose ``Σ W = 0`` and the tail
    sums ``T_c = Σ_{c' ≥ c} W_{c'}`` (``1 ≤ c < size``) are ``≥ 0`` and unimodal with a
    maximum at ``c*``.  Then ``Σ W_c m_c = Σ_c T_c (m_c − m_{c−1})`` and each gap
    ``m_c − m_{c−1}`` is a sum of gaps ``δ_t = u_t − u_{t−1}`` of the sorted people ``u``.
    In any ``m``, gap ``δ_t`` is counted by at most one ``c(t)``, with
    ``t − (N − size) ≤ c(t) ≤ t``.  In the split ``j = c*``, ``δ_t`` is counted with
    ``T_t`` (``t < c*``), ``T_{c*}`` (middle) or ``T_{t − (N − size)}`` (top); by
    unimodality each of these is ``≥ T_{c(t)}``, and ``T ≥ 0`` covers gaps ``m`` skips.
    Since ``δ_t ≥ 0`` the split is at least as good.  Callers pass weights with this
    property (see :func:`_fast_percentile`).
    """
    n_people = len(people)
    shift = n_people - size
    best: int | None = None
    for j in range(size + 1):
        total = 0
        for c, w in weights.items():
            total += w * people[c if c < j else c + shift]
        if best is None or total > best:
            best = total
    assert best is not None
    return best


def _fast_percentile(prob: _Problem, budget: int) -> Fraction:
    r"""Percentiles (and the median) via prefix + suffix candidates (exact).

    A numpy ``linear`` percentile of ``r`` sorted values puts weight ``1 − f`` on position
    ``⌊h⌋`` and ``f`` on ``⌊h⌋ + 1``, ``h = (r − 1)p/100``.  Write ``w^r`` for these
    weights; the chance that this two-point distribution is ``≥ c`` is
    ``|[c − 1, c] ∩ (−∞, h]|``.

    *Unbounded.*  Every pair is ``S ⊂ L``, ``|L| = ℓ``, ``|S| = s = ℓ − k`` (removal:
    ``L`` is the release; addition: ``S`` is), and every ``ℓ``-subset of the people is
    some ``L``.  For a fixed ``L``, ``s_c ≤ l_{c+k}`` and ``s_c ≥ l_c``, so
    ``q(S) − q(L)`` is largest when ``S`` drops the ``k`` smallest records of ``L`` and
    ``q(L) − q(S)`` when it drops the ``k`` largest: the two directions are
    ``Σ_c W_c l_c`` with ``W = w^s(· − k) − w^ℓ`` or ``W = w^ℓ − w^s``.
    *Bounded.*  For ``D, D'`` sharing ``≥ n − k`` records let ``M ⊇ D ∪ D'`` have
    ``n + j`` records, ``j = min(k, |U| − n)`` (``k`` for a range).  Then
    ``d_c ≤ m_{c+j}`` and ``d'_c ≥ m_c``, and ``M`` minus its ``j`` smallest / largest is
    itself a valid pair, so the sensitivity is the max of ``Σ_c (w^n_{c−j} − w^n_c) m_c``
    over ``M``; by symmetry of ``D ↔ D'`` one sign suffices.

    In each case ``W`` is a later two-point distribution minus an earlier one
    (``h_s + k − h_ℓ = k(1 − p/100) ≥ 0``, ``h_ℓ − h_s = kp/100 ≥ 0``,
    ``h_n + j − h_n = j ≥ 0``), so ``T_c = |[c − 1, c] ∩ (x, y]| ≥ 0`` is unimodal and
    :func:`_best_split` applies: ``O(ℓ)`` candidates instead of a search over datasets.
    """
    n, k, p = prob.n, prob.k, prob.query.p
    jobs: list[tuple[int, dict[int, Fraction], dict[int, Fraction]]] = []
    if prob.model == "unbounded":
        for small, big in prob.unbounded_sides():
            ws, wl = _percentile_weights(small, p), _percentile_weights(big, p)
            jobs.append((big, {c + k: w for c, w in ws.items()}, wl))  # q(S) − q(L)
            jobs.append((big, wl, ws))  # q(L) − q(S)
    else:
        j = k if prob.caps is None else min(k, prob.people - n)
        if j == 0:
            return Fraction(0)
        wn = _percentile_weights(n, p)
        jobs.append((n + j, {c + j: w for c, w in wn.items()}, wn))
    people = _people(prob, max(size for size, _, _ in jobs))
    _check_budget(sum(4 * (size + 1) for size, _, _ in jobs), budget, "percentile candidates")
    best = Fraction(0)
    for size, plus, minus in jobs:
        den = math.lcm(*(w.denominator for w in (*plus.values(), *minus.values())))
        weights: dict[int, int] = {}
        for c, w in plus.items():
            weights[c] = weights.get(c, 0) + int(w * den)
        for c, w in minus.items():
            weights[c] = weights.get(c, 0) - int(w * den)
        got = _best_split(people, size, weights)
        if got > 0:
            best = max(best, Fraction(got, den * prob.scale))
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
    ``rest``; a minimiser takes a contiguous window (Lemma E2 of :func:`_fast_moment`).
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


def _prefix_sums(xs: Sequence[int]) -> tuple[list[int], list[int]]:
    p1, p2 = [0], [0]
    a = b = 0
    for x in xs:
        a += x
        b += x * x
        p1.append(a)
        p2.append(b)
    return p1, p2


def _unbounded_pairs(
    people: Sequence[int], small: int, k: int, down: bool
) -> Iterator[tuple[int, int]]:
    """``(s²·var(S), ℓ²·var(L))`` for the structured pairs ``S ⊂ L`` (Lemmas U and D).

    Up (``var L > var S``): ``S`` a block of ``small`` consecutive people, ``L − S`` the
    ``i`` smallest and ``k − i`` largest of the others.  Down (``down=True``): ``L − S`` a
    block of ``k`` consecutive people, ``S`` the ``j`` smallest and ``small − j`` largest
    of the others.  With a block ``[a, e)`` removed, the ``t`` smallest others sum to
    ``P[t]`` (``t ≤ a``) or ``P[t + e − a] − (P[e] − P[a])``, and the ``t`` largest to
    ``P[N] − P[N − t]`` (``N − t ≥ e``) or ``P[N] − (P[e] − P[a]) − P[N − t − e + a]``.
    """
    p1, p2 = _prefix_sums(people)
    total, big = len(people), small + k
    block, other = (k, small) if down else (small, k)
    t1, t2 = p1[total], p2[total]
    for a in range(total - block + 1):
        e = a + block
        b1, b2 = p1[e] - p1[a], p2[e] - p2[a]
        low1, low2, high1, high2 = [], [], [], []
        for t in range(other + 1):
            if t <= a:
                low1.append(p1[t])
                low2.append(p2[t])
            else:
                low1.append(p1[t + block] - b1)
                low2.append(p2[t + block] - b2)
            if total - t >= e:
                high1.append(t1 - p1[total - t])
                high2.append(t2 - p2[total - t])
            else:
                high1.append(t1 - b1 - p1[total - t - block])
                high2.append(t2 - b2 - p2[total - t - block])
        for i in range(other + 1):
            o1 = low1[i] + high1[other - i]
            o2 = low2[i] + high2[other - i]
            s1, s2 = (o1, o2) if down else (b1, b2)
            yield small * s2 - s1 * s1, big * (b2 + o2) - (b1 + o1) ** 2


def _std_down_needs_search(small: int, big: int) -> bool:
    """Whether Lemma D's third exchange may fail for ``std`` (``s³(ℓ−1)² > (s−1)²ℓ³``)."""
    return small >= 2 and small**3 * (big - 1) ** 2 > (small - 1) ** 2 * big**3


def _bounded_cores(total: int, core: int, k: int) -> Iterator[tuple[int, int, tuple[int, ...]]]:
    """Cores ``C``: ``(start, span, holes)``, a block of people minus ``≤ k`` inner holes."""
    if core == 0:
        yield 0, 0, ()
        return
    for h in range(k + 1):
        span = core + h
        if h and span < 3:
            continue
        for start in range(total - span + 1):
            for holes in itertools.combinations(range(start + 1, start + span - 1), h):
                yield start, span, holes


def _moment_work(prob: _Problem) -> int:
    n, k = prob.n, prob.k
    if prob.model == "bounded":
        total = len(_people(prob, n))
        core = n - k
        cores = sum(
            max(0, total - core - h + 1) * (math.comb(max(core + h - 2, 0), h) if core else 1)
            for h in range(k + 1 if core else 1)
        )
        return cores * (total + 2 * k + 2)
    work = 0
    for small, big in prob.unbounded_sides():
        total = len(_people(prob, big))
        work += (total + 1) * (k + 1) + (total + 1) * (small + 1)
        if prob.query.kind == "std" and _std_down_needs_search(small, big):
            caps = _caps_for(prob, big)
            work += _count_submultisets(caps, small) * (len(prob.vals) * k + k + 2)
    return work


def _fast_moment(prob: _Problem, budget: int) -> Fraction | float:
    r"""var and std from a polynomial family of structured candidate pairs (exact).

    People are the records sorted by value (a range value repeated often enough:
    ``ℓ`` copies for unbounded pairs, ``n`` for bounded ones); sets are sets of
    positions, so ties need no care.  ``SS(T)`` is ``|T|·var(T)``; for one record ``y``
    of ``T`` with the rest ``R`` fixed, ``SS(T) = SS(R) + (|R|/|T|)(y − mean R)²``.

    *Exchange facts.*  (E1) With the rest fixed, var is a convex quadratic in one record,
    so replacing a record lying between two candidates by one of them never lowers it.
    (E2) If ``a ≤ b`` are records of ``T`` and a candidate ``x`` lies between them,
    replacing ``a`` or ``b`` by ``x`` does not raise var(T): otherwise
    ``mean(T − a) < (a + x)/2 ≤ (x + b)/2 < mean(T − b)``, but
    ``mean(T − a) − mean(T − b) = (b − a)/(|T| − 1) ≥ 0``.  Both hold for std too.

    *std reduces to weighted var.*  Let ``(A*, B*)`` maximise ``√A − √B = t* > 0`` over a
    finite set of pairs.  Every pair lies in ``{A ≤ (t* + √B)²}``, the hypograph of a
    strictly concave function; the tangent at ``B*`` shows that ``(A*, B*)`` maximises
    ``A − θB`` with ``θ = √(A*/B*) ≥ 1`` (or any large θ when ``B* = 0``), and that every
    maximiser of ``A − θB`` also maximises ``√A − √B``.  So a structure lemma proven for
    ``A − θB`` with the relevant θ (``θ = 1`` is var) transfers to std.

    *Lemma U (unbounded, var(L) − θ·var(S), θ ≥ 1).*  Some maximiser has ``S`` a block of
    consecutive people and ``X = L − S`` the ``i`` smallest and ``k − i`` largest of the
    rest.  Take a maximiser minimising (span of S, span of O), O = people outside L.
    (M1) X inside O's span: E1 on var(L) moves it out, O's span shrinks.  (M3) X inside
    S's span: E2 on S (L fixed) swaps it with S's min or max, S's span shrinks.  (M2) O
    inside S's span: as a function of one record ``y`` of S (X fixed) the objective is
    ``g(ℓ)(y − λ)² − θg(s)(y − ρ)²`` with ``g(z) = (z − 1)/z²``, λ, ρ the means of
    ``L − y``, ``S − y``.  ``g`` decreases on ``z ≥ 2`` so it is concave when ``s ≥ 2``,
    and the vertices for ``y = min S`` and ``y = max S`` satisfy
    ``v_min − v_max ∝ (max − min)(θ/s² − 1/ℓ²) ≥ 0``; as in E2 one of the two
    replacements by the record in between does not lose.  Hence neither O nor X lies
    inside S's span, and no X inside O's span.
    *Lemma D (unbounded, var(S) − θ·var(L)).*  Some maximiser has ``X`` a block of ``k``
    consecutive people and ``S`` the ``j`` smallest and ``s − j`` largest of the rest.
    Minimise (span of X, span of O): O inside X's span (E2 on L, S fixed) and S inside X's
    span (E1 on var(S), L fixed) both shrink X's span; S inside O's span (X fixed): the
    objective in one record of S is ``g(s)(y − ρ)² − θg(ℓ)(y − λ)²``, convex when
    ``θ ≤ g(s)/g(ℓ)``, and E1 applies.  θ = 1 for var; for std ``θ = σ(S*)/σ(L*)`` and
    ``θ² ≤ ℓ/s`` (``SS(S) ≤ SS(L)``), which is enough when ``s³(ℓ − 1)² ≤ (s − 1)²ℓ³``
    — all ``s ≥ 3`` (``z³/(z − 1)²`` increases for ``z ≥ 3``) and ``s = 2, ℓ ≥ 6``.
    The remaining std cases (``s = 2``, ``ℓ ≤ 5``) enumerate every ``S`` (pairs) and
    take the best contiguous X (E2).
    *Lemma B (bounded, var(C + A) − θ·var(C + B), θ ≥ 1, A, B ⊆ U − C independent).*
    Some maximiser has ``C`` a block of consecutive people with at most ``k`` inner holes.
    Minimise the span of C: an O record inside it (the objective in one record of C is
    ``((n − 1)/n²)[(y − λ_D)² − θ(y − λ_{D'})²]``: linear for θ = 1 with the same slope
    for every record of C, else concave with ``v_min − v_max = (max − min)/(n − 1) ≥ 0``)
    or an ``A − B`` record (E2 on ``C + B`` with ``D = C + A`` fixed) can be swapped
    with C's min or max; an ``A ∩ B`` record swaps with no change to ``D, D'``.  So only
    records of B (≤ k) lie inside C's span.  For each such C, the best A (E1: j smallest
    and k − j largest of ``U − C``) and B (E2: a contiguous window) are found exactly.

    Sums are integers (values scaled to integers); var is compared over the common
    denominator ``s²ℓ²`` (or ``n²``), so the var result is exact.

    References
    ----------
    .. [1] S. Boyd, L. Vandenberghe, "Convex Optimization", 2004, §3.4 (quasiconvex
       functions; a supporting line of a convex sublevel set), used for std.
    .. [2] C. Dwork, A. Roth, "The Algorithmic Foundations of Differential Privacy",
       2014, Def. 3.1 (ℓ1 sensitivity).
    """
    n, k = prob.n, prob.k
    want_std = prob.query.kind == "std"
    _check_budget(_moment_work(prob), budget, "structured var/std candidates")
    best_float = 0.0
    best_exact = Fraction(0)
    if prob.model == "bounded":
        people = _people(prob, n)
        core = n - k
        hi_lo: list[tuple[int, int]] = []
        for start, span, holes in _bounded_cores(len(people), core, k):
            if core:
                inside = set(holes)
                kept = [people[i] for i in range(start, start + span) if i not in inside]
                rest = [*people[:start], *(people[i] for i in holes), *people[start + span :]]
            else:
                kept, rest = [], list(people)
            s1 = sum(kept)
            s2 = sum(x * x for x in kept)
            hi_lo.append(_moment_extremes(rest, k, n, s1, s2))
        if want_std:
            best_float = max((math.sqrt(hi) - math.sqrt(lo)) / n for hi, lo in hi_lo)
            return max(best_float, 0.0) / prob.scale
        top = max(hi - lo for hi, lo in hi_lo)
        return Fraction(max(top, 0), n * n * prob.scale * prob.scale)
    for small, big in prob.unbounded_sides():
        people = _people(prob, big)
        a2, b2 = small * small, big * big
        top = 0
        for own, num in _unbounded_pairs(people, small, k, down=False):
            if want_std:
                best_float = max(best_float, math.sqrt(num) / big - math.sqrt(own) / small)
            else:
                top = max(top, num * a2 - own * b2)
        if small >= 2:
            if want_std and _std_down_needs_search(small, big):
                vals = prob.vals
                caps = _caps_for(prob, big)
                for counts in _submultisets(caps, small):
                    s1 = sum(c * v for c, v in zip(counts, vals, strict=True))
                    s2 = sum(c * v * v for c, v in zip(counts, vals, strict=True))
                    rest = [
                        v
                        for v, c, cap in zip(vals, counts, caps, strict=True)
                        for _ in range(min(k, cap - c))
                    ]
                    if len(rest) < k:
                        continue
                    _, lo = _moment_extremes(rest, k, big, s1, s2)
                    own = small * s2 - s1 * s1
                    best_float = max(best_float, math.sqrt(own) / small - math.sqrt(lo) / big)
            else:
                for own, num in _unbounded_pairs(people, small, k, down=True):
                    if want_std:
                        best_float = max(best_float, math.sqrt(own) / small - math.sqrt(num) / big)
                    else:
                        top = max(top, own * b2 - num * a2)
        if not want_std:
            best_exact = max(best_exact, Fraction(top, a2 * b2))
    if want_std:
        return best_float / prob.scale
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
