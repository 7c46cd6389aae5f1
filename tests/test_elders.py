"""The balanced-digit k-ary counter (``Elders``, docs/elders.md) beyond the generic
contract (tests/test_contract.py covers plans, agreement and the variance statistics)."""

from __future__ import annotations

import re
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from dpref import DprefError, Elders, SimpleII
from dpref.mechanisms.elders import MAX_K, balanced_digits, elders_levels
from dpref.plan import LinearPlan

ROOT = Path(__file__).resolve().parents[1]
odd_k = st.integers(1, 40).map(lambda h: 2 * h + 1)


@given(t=st.integers(0, 10**12), k=odd_k)
def test_balanced_digits_represent_t(t: int, k: int) -> None:
    digits = balanced_digits(t, k)
    assert sum(d * k**j for j, d in enumerate(digits)) == t
    assert all(abs(d) <= (k - 1) // 2 for d in digits)
    assert not digits or digits[-1] != 0


@given(horizon=st.integers(1, 10**6), k=odd_k)
def test_levels_are_the_levels_an_output_uses(horizon: int, k: int) -> None:
    L = elders_levels(horizon, k)
    assert k ** (L - 1) <= 2 * horizon - 1 < k**L
    # the largest t ≤ T reaches level L − 1 through its balanced digits, none goes beyond
    worst = max(len(balanced_digits(t, k)) for t in {horizon, (k ** (L - 1) + 1) // 2})
    assert worst == L


@pytest.mark.parametrize("k", [3, 5, 19])
def test_every_item_one_node_per_level_item_one_in_all(k: int) -> None:
    T = 300
    m = Elders(epsilon=1, horizon=T, k=k)
    nodes = m.nodes(T)
    member = np.zeros(T + 2, dtype=np.int64)
    np.add.at(member, nodes.lo, 1)
    np.add.at(member, nodes.hi + 1, -1)
    per_item = np.cumsum(member)[1 : T + 1]
    assert per_item.max() == per_item[0] == elders_levels(T, k)


def test_k_above_2t_minus_1_is_simple_ii() -> None:
    T = 9
    m = Elders(epsilon=Fraction(1, 2), horizon=T, k=19)
    assert m.variance_exact(T) == SimpleII(epsilon=Fraction(1, 2), horizon=T).variance_exact(T)
    assert Elders(epsilon=Fraction(1, 2), horizon=T, k=17).variance_exact(T) != m.variance_exact(T)


@pytest.mark.parametrize("k", [2, 4, 1, 0, -3, 2.5, "5", True, None, MAX_K + 2])
def test_bad_k_is_refused_naming_it(k: object) -> None:
    with pytest.raises(DprefError, match=r"^k="):
        Elders(epsilon=1, horizon=16, k=k)


def test_online_state_stays_within_the_declared_memory() -> None:
    for k in (3, 5, 7, 19):
        for T in (50, 700, 2500):
            m = Elders(epsilon=1, horizon=T, k=k)
            counter = m.online(rng=1)
            bound = m._levels() * 3 * (k - 1) // 2
            most = 0
            for _ in range(T):
                counter.step(1)
                most = max(most, sum(len(d) for d in counter._blocks))
            assert most <= bound, (k, T, most, bound)
            assert m.online_memory() == bound + 2 * m._levels() + 2


def test_open_nodes_need_their_release_times() -> None:
    """The causal check reads the declared release times: drawing a node later than its
    first use, or a non-causal target, fails it."""
    m = Elders(epsilon=1, horizon=20, k=3)
    plan = m.plan(20)
    assert plan.check_causal().passed
    late = plan.release.copy()
    late[-1] = 21
    fields = {f: getattr(plan, f) for f in plan.__dataclass_fields__}
    bad = LinearPlan(**{**fields, "release": late})
    assert not bad.check_causal().passed
    # without the release times the plan is not causal in the strict node sense
    strict = LinearPlan(**{**fields, "release": None})
    assert not strict.check_causal().passed


def test_issue_targets_and_documented_numbers() -> None:
    """k = 19 at T = 2^20 and 10^6, ε = 1: mean ≤ 2000 and max ≤ 4500 (issue 13), and the
    table of docs/elders.md is what the code computes."""
    text = (ROOT / "docs" / "elders.md").read_text()
    for label, T in (("2^20", 2**20), ("10^6", 10**6)):
        m = Elders(epsilon=1, horizon=T, k=19)
        unit, n = m.variance_counts(T)
        mean, top = unit * Fraction(int(n.sum()), T), unit * int(n.max())
        assert mean <= 2000 and top <= 4500
        row = re.search(rf"^\| {re.escape(label)} \| ([\d.]+) \| ([\d.]+) \|$", text, re.M)
        assert row is not None, label
        assert row.group(1) == f"{float(mean):.1f}" and row.group(2) == f"{float(top):g}"


@pytest.mark.parametrize("k", [3, 5, 19])
def test_chunked_counts_equal_the_plan(monkeypatch: pytest.MonkeyPatch, k: int) -> None:
    """The vectorised counts are computed in chunks of steps; chunk boundaries change
    nothing (a chunk of 7 steps against the plan's exact variance)."""
    import dpref.mechanisms.elders as elders

    monkeypatch.setattr(elders, "_CHUNK", 7)
    for T in (1, 50, 333):
        m = Elders(epsilon=Fraction(2, 3), horizon=T, k=k)
        assert m.variance_exact(T) == m.plan(T).variance_exact()
