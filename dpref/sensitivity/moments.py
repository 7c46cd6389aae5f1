"""var and std: structured candidate pairs from the moment lemmas (U, D, B; exact).

The lemmas and their exchange-argument proofs are in :func:`_fast_moment`; the helpers
enumerate the candidate families they justify.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator, Sequence
from fractions import Fraction

from dpref.sensitivity.model import (
    _caps_for,
    _check_budget,
    _count_submultisets,
    _people,
    _Problem,
    _submultisets,
)

__all__: list[str] = []


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


def _moment_work(prob: _Problem, budget: int) -> int:
    """The number of steps of :func:`_fast_moment`, estimated in time independent of the
    release size (a range universe of n = 10¹² records must not be listed to be refused);
    any value above ``budget`` is only known to exceed it."""
    n, k = prob.n, prob.k
    if prob.model == "bounded":
        total = sum(_caps_for(prob, n))
        core = n - k
        if k + 1 > budget:  # the sum below has k + 1 terms
            return k + 1
        cores = sum(
            max(0, total - core - h + 1) * (math.comb(max(core + h - 2, 0), h) if core else 1)
            for h in range(k + 1 if core else 1)
        )
        return cores * (total + 2 * k + 2)
    work = 0
    for small, big in prob.unbounded_sides():
        total = sum(_caps_for(prob, big))
        work += (total + 1) * (k + 1) + (total + 1) * (small + 1)
        if work > budget:
            return work
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
    _check_budget(_moment_work(prob, budget), budget, "structured var/std candidates")
    if prob.model == "bounded":
        return _bounded_moment(prob)
    if prob.query.kind == "std":
        return _unbounded_std(prob)
    return _unbounded_var(prob)


def _bounded_moment(prob: _Problem) -> Fraction | float:
    """Lemma B: the best ``D = C + A``, ``D' = C + B`` over the candidate cores ``C``."""
    n = prob.n
    hi_lo = _bounded_extremes(prob)
    if prob.query.kind == "std":
        best = max((math.sqrt(hi) - math.sqrt(lo)) / n for hi, lo in hi_lo)
        return max(best, 0.0) / prob.scale
    top = max(hi - lo for hi, lo in hi_lo)
    return Fraction(max(top, 0), n * n * prob.scale * prob.scale)


def _bounded_extremes(prob: _Problem) -> list[tuple[int, int]]:
    """For each core of :func:`_bounded_cores`, max and min of ``n·SS`` over ``k`` more."""
    n, k = prob.n, prob.k
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
    return hi_lo


def _unbounded_var(prob: _Problem) -> Fraction:
    """Lemmas U and D with θ = 1, both directions compared exactly over ``s²ℓ²``."""
    k = prob.k
    best = Fraction(0)
    for small, big in prob.unbounded_sides():
        people = _people(prob, big)
        a2, b2 = small * small, big * big
        top = 0
        for own, num in _unbounded_pairs(people, small, k, down=False):
            top = max(top, num * a2 - own * b2)
        if small >= 2:
            for own, num in _unbounded_pairs(people, small, k, down=True):
                top = max(top, own * b2 - num * a2)
        best = max(best, Fraction(top, a2 * b2))
    return best / (prob.scale * prob.scale)


def _unbounded_std(prob: _Problem) -> float:
    """Lemmas U and D for std; the cases Lemma D does not cover use :func:`_std_down_search`."""
    k = prob.k
    best = 0.0
    for small, big in prob.unbounded_sides():
        people = _people(prob, big)
        for own, num in _unbounded_pairs(people, small, k, down=False):
            best = max(best, math.sqrt(num) / big - math.sqrt(own) / small)
        if small < 2:
            continue
        if _std_down_needs_search(small, big):
            down = _std_down_search(prob, small, big)
        else:
            down = (
                math.sqrt(own) / small - math.sqrt(num) / big
                for own, num in _unbounded_pairs(people, small, k, down=True)
            )
        for gap in down:
            best = max(best, gap)
    return best / prob.scale


def _std_down_search(prob: _Problem, small: int, big: int) -> Iterator[float]:
    """``σ(S) − σ(L)`` for every ``S`` of ``small`` records and its best contiguous ``X`` (E2).

    For the std cases where Lemma D's third exchange may fail (``s = 2``, ``ℓ ≤ 5``).
    """
    k, vals = prob.k, prob.vals
    caps = _caps_for(prob, big)
    for counts in _submultisets(caps, small):
        s1 = sum(c * v for c, v in zip(counts, vals, strict=True))
        s2 = sum(c * v * v for c, v in zip(counts, vals, strict=True))
        rest = [
            v for v, c, cap in zip(vals, counts, caps, strict=True) for _ in range(min(k, cap - c))
        ]
        if len(rest) < k:
            continue
        _, lo = _moment_extremes(rest, k, big, s1, s2)
        own = small * s2 - s1 * s1
        yield math.sqrt(own) / small - math.sqrt(lo) / big
