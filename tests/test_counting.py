"""Mechanism-specific facts of the counting mechanisms (docs/spec.md §1)."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from strategies import junk

from dpref import Binary, DprefError, Hybrid, ParameterError, SimpleI, SimpleII, TwoLevel
from dpref.dyadic import prefix_nodes


class LectureBinary(Binary):
    """The lecture's pitfall: ``ε' = ε/log₂T`` per node (Lap(log₂T/ε))."""

    def _scale(self) -> Fraction:
        assert self.horizon is not None
        return Fraction(math.log2(self.horizon)) * self.sensitivity / self.epsilon


@pytest.mark.parametrize("horizon", [1, 2, 3, 4, 5, 7, 8, 9, 1000, 1024, 1025])
def test_binary_levels_are_floor_log2_plus_one(horizon: int) -> None:
    assert Binary.levels(horizon) == math.floor(math.log2(horizon)) + 1
    nodes = Binary(epsilon=1, horizon=horizon).nodes(horizon)
    sizes = set((nodes.hi - nodes.lo + 1).tolist())
    assert len(sizes) == Binary.levels(horizon)
    # item 1 is in the nodes ending at 1, 2, 4, ..., 2^(L-1)
    assert int(np.sum(nodes.lo == 1)) == Binary.levels(horizon)


@pytest.mark.parametrize("horizon", [2, 4, 8, 16, 1024])
def test_ceil_log2_undercounts_at_powers_of_two(horizon: int) -> None:
    """Sizing level arrays by ⌈log₂T⌉ overflows when T is a power of two."""
    assert math.ceil(math.log2(horizon)) == Binary.levels(horizon) - 1


def test_lecture_pitfall_overspends() -> None:
    """With Lap(log₂T/ε) the real loss is ε(⌊log₂T⌋+1)/log₂T: 1.29ε at T = 5."""
    m = LectureBinary(epsilon=1, horizon=5)
    report = m.plan(5).check()
    assert not report.passed
    assert report.privacy_sum > 1
    assert report.privacy_sum == pytest.approx(3 / math.log2(5), rel=1e-12)
    assert float(report.privacy_sum) == pytest.approx(1.292, abs=1e-3)
    # dpref's own Binary spends exactly ε
    assert Binary(epsilon=1, horizon=5).plan().privacy_sum() == 1


def test_lecture_pitfall_power_of_two_is_exact_fraction() -> None:
    m = LectureBinary(epsilon=1, horizon=8)
    assert m.plan().privacy_sum() == Fraction(4, 3)


def test_binary_output_uses_popcount_nodes() -> None:
    m = Binary(epsilon=1, horizon=13)
    R = m.plan().recombination
    for t in range(1, 14):
        assert int(R.indptr[t] - R.indptr[t - 1]) == bin(t).count("1") == len(prefix_nodes(t))


@pytest.mark.parametrize("horizon,block", [(1, 1), (2, 2), (10, 4), (16, 4), (17, 5), (100, 10)])
def test_two_level_default_block_is_ceil_sqrt(horizon: int, block: int) -> None:
    assert TwoLevel(epsilon=1, horizon=horizon).block_size == block


@pytest.mark.parametrize("block", [0, -1, 11, 2.0, True])
def test_two_level_block_size_validated(block: object) -> None:
    with pytest.raises(DprefError, match="block_size="):
        TwoLevel(epsilon=1, horizon=10, block_size=block)


def test_two_level_variance_formula() -> None:
    m = TwoLevel(epsilon=Fraction(1, 2), horizon=20, block_size=6)
    unit = 2 * Fraction(4) ** 2  # scale 2Δ/ε = 4
    assert m.variance_exact(20) == [unit * (t // 6 + t % 6) for t in range(1, 21)]


def test_two_level_item_node_precedes_block_node() -> None:
    nodes = TwoLevel(epsilon=1, horizon=4, block_size=1).nodes(4)
    # B = 1: both nodes at t are [t, t]; the item node comes first in canonical order
    assert nodes.lo.tolist() == [1, 1, 2, 2, 3, 3, 4, 4]


def test_simple_mechanisms_scales() -> None:
    assert SimpleI(epsilon=2, horizon=10).plan().scale(0) == 5
    assert SimpleII(epsilon=2).plan(10).scale(3) == Fraction(1, 2)
    assert SimpleI(epsilon=1, horizon=7).variance_exact() == [Fraction(98)] * 7


def test_hybrid_needs_no_horizon_and_reaches_epsilon_from_t4() -> None:
    m = Hybrid(epsilon=1)
    sums = [m.plan(t).privacy_sum() for t in range(1, 12)]
    assert sums[:3] == [Fraction(1, 2)] * 3
    assert sums[3:] == [Fraction(1)] * 8


def test_hybrid_variance_formula() -> None:
    m = Hybrid(epsilon=1)
    var = m.variance_exact(12)
    # t = 2^k + r: 2(2/ε)²(k+1) + popcount(r)·2(2k/ε)²
    assert var[0] == 8  # t = 1: one log block
    assert var[3] == 3 * 8  # t = 4: blocks {1}, {2}, [3,4]
    assert var[4] == 3 * 8 + 2 * 16  # t = 5 = 4 + 1, k = 2
    assert var[6] == 3 * 8 + 2 * 2 * 16  # t = 7 = 4 + 3


def test_hybrid_online_memory_is_logarithmic() -> None:
    counter = Hybrid(epsilon=1).online(rng=1)
    for _ in range(5000):
        counter.step(1)
    state = counter._bin  # type: ignore[attr-defined]
    assert len(state.alpha) <= math.floor(math.log2(5000)) + 1


def test_binary_online_memory_is_logarithmic() -> None:
    counter = Binary(epsilon=1, horizon=5000).online(rng=1)
    for _ in range(5000):
        counter.step(0)
    assert len(counter._state.alpha) == Binary.levels(5000)  # type: ignore[attr-defined]


def test_horizon_type_errors() -> None:
    for bad in (True, 0, -5, 2.5, "10", None):
        with pytest.raises(DprefError, match="horizon="):
            Binary(epsilon=1, horizon=bad)


def test_plan_horizon_beyond_mechanism_rejected() -> None:
    with pytest.raises(DprefError, match="horizon=9"):
        Binary(epsilon=1, horizon=8).plan(9)


def test_unbounded_plan_needs_a_horizon() -> None:
    with pytest.raises(ParameterError, match="horizon=None"):
        Hybrid(epsilon=1).plan()


def test_real_domain_sensitivity_scales_noise() -> None:
    from dpref import bounded_reals

    m = Binary(epsilon=1, horizon=8, domain=bounded_reals(-1, 3))
    assert m.sensitivity == 4
    assert m.plan().privacy_sum() == 1
    assert m.plan().scale(0) == 16  # L·Δ/ε = 4·4
    with pytest.raises(DprefError, match="stream"):
        m.release([0.5, 3.5])
    out = m.release([0.5, -1.0, 2.25], rng=1)
    assert out.shape == (3,)


@settings(max_examples=80)
@given(horizon=junk, block=junk, lower=junk, upper=junk)
def test_junk_block_size_and_domains(
    horizon: object, block: object, lower: object, upper: object
) -> None:
    """Only DprefErrors come out of the remaining constructors, whatever they are fed."""
    from dpref import Domain

    try:
        TwoLevel(epsilon=1, horizon=horizon, block_size=block)
    except DprefError:
        pass
    try:
        Domain(lower=lower, upper=upper)  # type: ignore[arg-type]
    except DprefError:
        pass
