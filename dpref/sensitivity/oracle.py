"""The brute-force oracle: the definition of global sensitivity, enumerated literally.

The reference every fast algorithm is tested against: index combinations of people (a
dataset universe) or combinations with replacement of values (a range universe), each
query evaluated exactly with :class:`~fractions.Fraction`.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

from dpref.sensitivity.model import _check_budget, _Problem
from dpref.sensitivity.queries import _evaluate

__all__: list[str] = []


def _oracle(prob: _Problem, budget: int) -> Fraction | float:
    """Literal enumeration of the definition (see the :mod:`dpref.sensitivity` docstring)."""
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
