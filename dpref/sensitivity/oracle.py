"""The brute-force oracle: the definition of global sensitivity, enumerated literally.

The reference every fast algorithm is tested against: index combinations of people (a
dataset universe) or combinations with replacement of values (a range universe), each
query evaluated exactly with :class:`~fractions.Fraction`.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator, Sequence
from fractions import Fraction
from typing import Any

from dpref.sensitivity.model import _check_budget, _Problem
from dpref.sensitivity.queries import _evaluate, _Query

__all__: list[str] = []


def _oracle(prob: _Problem, budget: int) -> Fraction | float:
    """Literal enumeration of the definition (see the :mod:`dpref.sensitivity` docstring)."""
    _check_budget(_oracle_work(prob), budget, "brute-force oracle")
    values = [Fraction(v, prob.scale) for v in prob.vals]
    if prob.caps is not None:
        people = sorted(v for v, c in zip(values, prob.caps, strict=True) for _ in range(c))
        gaps = _dataset_gaps(prob, people)
    else:
        gaps = _range_gaps(prob, values)
    best: Any = Fraction(0)
    for gap in gaps:
        best = max(best, gap)
    out: Fraction | float = best
    return out


def _oracle_work(prob: _Problem) -> int:
    """The number of datasets the enumeration evaluates (checked against the budget)."""
    n, k = prob.n, prob.k
    if prob.caps is not None:
        size = prob.people
        if prob.model == "unbounded":
            return math.comb(size, n) * (math.comb(n, k) + math.comb(size - n, k))
        return math.comb(size, n - k) * math.comb(size - n + k, k)
    m = len(prob.vals)
    if prob.model == "unbounded":
        return math.comb(m + n - 1, n) * (math.comb(n, k) + math.comb(m + k - 1, k))
    return math.comb(m + n - k - 1, n - k) * math.comb(m + k - 1, k)


def _ev(q: _Query, xs: Sequence[Fraction]) -> Any:
    return _evaluate(q, sorted(xs))


def _dataset_gaps(prob: _Problem, people: Sequence[Fraction]) -> Iterator[Any]:
    """``|q(D) − q(D')|`` candidates, people as index combinations (each used at most once).

    Unbounded: every release and each neighbour with k fewer or k more people; bounded:
    for every shared core, the spread of q over the ways to add k of the other people.
    """
    n, k, q = prob.n, prob.k, prob.query
    everyone = range(len(people))
    if prob.model == "unbounded":
        for rel in itertools.combinations(everyone, n):
            base = _ev(q, [people[i] for i in rel])
            rest = sorted(set(everyone) - set(rel))
            for sub in itertools.combinations(rel, n - k) if prob.can_remove else ():
                yield abs(base - _ev(q, [people[i] for i in sub]))
            for add in itertools.combinations(rest, k) if prob.side != "remove" else ():
                yield abs(base - _ev(q, [people[i] for i in rel + add]))
        return
    for core in itertools.combinations(everyone, n - k):
        rest = sorted(set(everyone) - set(core))
        results = [
            _ev(q, [people[i] for i in core + extra]) for extra in itertools.combinations(rest, k)
        ]
        yield max(results) - min(results)


def _range_gaps(prob: _Problem, values: Sequence[Fraction]) -> Iterator[Any]:
    """``|q(D) − q(D')|`` candidates, values as combinations with replacement (a range)."""
    n, k, q = prob.n, prob.k, prob.query
    if prob.model == "unbounded":
        for release in itertools.combinations_with_replacement(values, n):
            base = _ev(q, release)
            for smaller in itertools.combinations(release, n - k) if prob.can_remove else ():
                yield abs(base - _ev(q, smaller))
            for more in itertools.combinations_with_replacement(values, k) if prob.can_add else ():
                yield abs(base - _ev(q, release + more))
        return
    for shared in itertools.combinations_with_replacement(values, n - k):
        outcomes = [
            _ev(q, shared + other) for other in itertools.combinations_with_replacement(values, k)
        ]
        yield max(outcomes) - min(outcomes)
