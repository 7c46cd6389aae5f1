"""count, sum and mean: closed forms over the extreme records (no search)."""

from __future__ import annotations

from fractions import Fraction

from dpref.sensitivity.model import _Problem

__all__: list[str] = []


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
