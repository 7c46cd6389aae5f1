"""Dyadic decompositions and the exact checks of LinearPlan (they must be able to fail)."""

from __future__ import annotations

import dataclasses
import itertools
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from dpref import Binary, SimpleII, TwoLevel
from dpref.dyadic import (
    aligned_cover,
    binary_node,
    binary_noise_sum,
    is_left_node,
    level_of,
    node_at_level,
    prefix_nodes,
)
from dpref.errors import ParameterError
from dpref.plan import ExactSparse


@given(st.integers(1, 5000), st.integers(0, 5000))
def test_aligned_cover(lo: int, length: int) -> None:
    hi = lo + length
    cover = aligned_cover(lo, hi)
    # disjoint, contiguous, exact union
    assert cover[0][0] == lo and cover[-1][1] == hi
    for (_, b), (c, _) in itertools.pairwise(cover):
        assert c == b + 1
    for node in cover:
        level_of(node)  # raises unless aligned
    assert len(cover) <= 2 * (length + 1).bit_length()


@given(st.integers(1, 10**6))
def test_prefix_nodes_are_left_nodes_one_per_bit(t: int) -> None:
    nodes = prefix_nodes(t)
    assert len(nodes) == bin(t).count("1")
    assert nodes == aligned_cover(1, t)
    assert all(is_left_node(n) for n in nodes)
    assert len({level_of(n) for n in nodes}) == len(nodes)


@given(st.integers(1, 10**6), st.integers(1, 20))
def test_node_at_level_contains_item(i: int, level: int) -> None:
    lo, hi = node_at_level(i, level)
    assert lo <= i <= hi and hi - lo + 1 == 2 ** (level - 1)
    assert binary_node(hi)[1] == hi


def test_binary_noise_sum_matches_decomposition() -> None:
    z = np.random.default_rng(0).normal(size=100)
    s = binary_noise_sum(z)
    for t in range(1, 101):
        assert s[t - 1] == pytest.approx(sum(z[u - 1] for _, u in prefix_nodes(t)), abs=1e-12)


def test_popcount_group_cache_is_bounded_by_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    """Popcount groups are cached by size, not count: the newest entry plus at most a
    budget (an lru_cache of 64 entries could hold 1 GB at T = 10⁶), and Hybrid's
    blocks reuse the entries of their lengths."""
    from dpref import Hybrid, dyadic
    from dpref.caching import BytesCache, array_bytes

    cache = BytesCache(dyadic.popcount_groups, budget=1 << 16)
    monkeypatch.setattr(dyadic, "_POPCOUNT_GROUPS", cache)
    for horizon in (1000, 2000, 3000, 40_000):
        Binary(epsilon=1, horizon=horizon).release(np.zeros(horizon), rng=0)
    newest = cache.get(40_000)
    assert cache.get(40_000) is newest
    assert array_bytes(newest) > cache.budget
    assert cache.nbytes() <= cache.budget + array_bytes(newest)
    assert len(cache) == 1
    assert all(not a.flags.writeable for group in newest for a in group)
    big = BytesCache(dyadic.popcount_groups, budget=1 << 30)
    monkeypatch.setattr(dyadic, "_POPCOUNT_GROUPS", big)
    hybrid = Hybrid(epsilon=1)
    first = hybrid.release(np.zeros(5000), rng=1)
    held = len(big)
    np.testing.assert_array_equal(hybrid.release(np.zeros(5000), rng=1), first)
    assert len(big) == held  # the second release built nothing


def test_bytes_cache_drops_least_recently_used_first() -> None:
    from dpref.caching import BytesCache

    cache: BytesCache[int, np.ndarray] = BytesCache(lambda n: np.zeros(n, np.uint8), budget=100)
    a, b = cache.get(40), cache.get(50)
    assert cache.get(40) is a  # 40 is now the most recent
    cache.get(30)  # 120 bytes > 100: drop the least recently used, 50
    assert len(cache) == 2 and cache.nbytes() == 70 and cache.get(40) is a
    assert cache.get(50) is not b
    big = cache.get(1000)  # the newest is kept whatever its size
    assert len(cache) == 1 and cache.get(1000) is big
    cache.clear()
    assert len(cache) == 0 and cache.nbytes() == 0


def _tamper_recombination(plan, entry: int, factor: int):  # type: ignore[no-untyped-def]
    R = plan.recombination
    idx = R.idx.copy()
    idx[entry] = 1
    R2 = ExactSparse(R.shape, R.indptr, R.indices, (R.table[0], R.table[0] * factor), idx)
    return dataclasses.replace(plan, recombination=R2)


def test_unbiased_check_catches_a_wrong_coefficient() -> None:
    plan = Binary(epsilon=1, horizon=9).plan()
    bad = _tamper_recombination(plan, 5, 2)
    assert not bad.check_unbiased().passed
    assert not bad._check_unbiased_fractions().passed
    assert not bad.check_unbiased_dense().passed


def test_causality_check_catches_a_future_node() -> None:
    plan = SimpleII(epsilon=1).plan(6)
    R = plan.recombination
    # make output 1 use node 6 instead of node 1
    indices = R.indices.copy()
    indices[0] = 5
    bad = dataclasses.replace(
        plan, recombination=ExactSparse(R.shape, R.indptr, indices, R.table, R.idx)
    )
    check = bad.check_causal()
    assert not check.passed and "t=1" in check.detail


def test_privacy_check_catches_too_little_noise_and_too_much() -> None:
    plan = TwoLevel(epsilon=1, horizon=9).plan()
    less = dataclasses.replace(plan, scale_table=(Fraction(1),))
    assert not less.check_privacy()[0].passed
    assert less.privacy_sum() == 2
    more = dataclasses.replace(plan, scale_table=(Fraction(4),))
    # too much noise is caught too: the sum must equal the expected ε exactly
    assert not more.check_privacy()[0].passed


def test_variance_check_catches_a_wrong_formula() -> None:
    m = Binary(epsilon=1, horizon=8)
    formula = m.variance_exact()
    formula[2] += 1
    report = m.plan().check(formula)
    assert not report.passed
    with pytest.raises(Exception, match="variance"):
        report.raise_if_failed()


def test_decayed_base_fraction_path() -> None:
    """γ < 1 goes through the Fraction path of the unbiasedness and privacy checks."""
    plan = Binary(epsilon=1, horizon=5).plan()
    decayed = dataclasses.replace(plan, base=Fraction(1, 2), expected_privacy_sum=None)
    # Binary's recombination is not unbiased for exponential decay
    assert not decayed.check_unbiased().passed
    assert decayed.privacy_sum() <= plan.privacy_sum()


def test_plan_sparse_views_consistent() -> None:
    plan = TwoLevel(epsilon=1, horizon=10, block_size=3).plan()
    dense_A = np.array([[float(v) for v in row] for row in plan.dense_A_exact()])
    np.testing.assert_array_equal(plan.A().toarray(), dense_A)
    np.testing.assert_array_equal((plan.R() @ plan.A()).toarray(), plan.Q().toarray())


def _with_extra_node(plan, lo: int, hi: int, scale: Fraction):  # type: ignore[no-untyped-def]
    R = plan.recombination
    R2 = ExactSparse((R.shape[0], R.shape[1] + 1), R.indptr, R.indices, R.table, R.idx)
    return dataclasses.replace(
        plan,
        lo=np.append(plan.lo, lo),
        hi=np.append(plan.hi, hi),
        weight_idx=np.append(plan.weight_idx, 0),
        scale_table=(*plan.scale_table, scale),
        scale_idx=np.append(plan.scale_idx, len(plan.scale_table)),
        recombination=R2,
        expected_privacy_sum=None,
    )


def test_malformed_plans_are_refused_not_passed() -> None:
    """Plans whose privacy sum would understate the loss cannot be built.

    Before validation, each of these passed every check: a negative scale (same
    Laplace noise as |b|) or a negative Δ made the privacy sum negative, and an
    unused node [0, 0] or [8, 0] subtracted from the other items' counts, so a plan
    with half the noise it needs "passed".
    """
    plan = Binary(epsilon=1, horizon=8).plan()
    half = dataclasses.replace(
        plan, scale_table=(plan.scale_table[0] / 2,), expected_privacy_sum=None
    )
    assert not half.check_privacy()[0].passed  # the honest failure
    bad_plans = [
        lambda: dataclasses.replace(half, scale_table=(-plan.scale_table[0] / 4,)),
        lambda: dataclasses.replace(half, scale_table=(Fraction(0),)),
        lambda: dataclasses.replace(half, sensitivity=Fraction(-1)),
        lambda: _with_extra_node(half, 0, 0, Fraction(1, 4)),
        lambda: _with_extra_node(half, 8, 0, Fraction(1, 4)),
        lambda: _with_extra_node(half, 1, 20, Fraction(1)),
    ]
    for build in bad_plans:
        with pytest.raises(ParameterError):
            build()
    R = plan.recombination
    indices = R.indices.copy()
    indices[0] = -1  # numpy would wrap this to the last node
    with pytest.raises(ParameterError, match=r"recombination\.indices"):
        dataclasses.replace(
            plan, recombination=ExactSparse(R.shape, R.indptr, indices, R.table, R.idx)
        )
