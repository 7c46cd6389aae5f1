"""Percentiles and the median: the prefix + suffix candidate family (exact).

:func:`_fast_percentile` reduces every case to maximising a weighted sum of sorted
records; :func:`_best_split` proves that ``size + 1`` prefix + suffix subsets contain a
maximiser.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from fractions import Fraction

from dpref.sensitivity.model import _check_budget, _people, _Problem
from dpref.sensitivity.queries import _percentile_weights

__all__: list[str] = []


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
    _check_budget(sum(4 * (size + 1) for size, _, _ in jobs), budget, "percentile candidates")
    people = _people(prob, max(size for size, _, _ in jobs))  # O(size): after the budget
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
