"""SmoothBinary (Andersson, Pagh 2023): leaves, nodes against a brute-force tree, the
constant variance, d, online = batch, and the exact plan checks at many T."""

from __future__ import annotations

import itertools
from fractions import Fraction
from math import comb

import numpy as np
import pytest

from dpref import DprefError, HorizonError, SmoothBinary
from dpref.mechanisms.smooth import (
    smooth_depth,
    smooth_item_count,
    smooth_leaf,
    smooth_leaves,
)

EPS = Fraction(3, 4)


def _balanced(depth: int) -> list[str]:
    """Every depth-bit string with depth/2 ones, in increasing order (brute force)."""
    half = depth // 2
    out = []
    for ones in itertools.combinations(range(depth), half):
        out.append("".join("1" if i in ones else "0" for i in range(depth)))
    return sorted(out)


def _brute(horizon: int, depth: int) -> tuple[dict[str, tuple[int, list[int]]], list[list[str]]]:
    """The tree construction spelled out on strings.

    Returns ``nodes``: prefix (ending in 0) → (release time, items), and per output t the
    prefixes it adds: the 0-children of the set bits of the leaf of rank t.
    """
    leaves = _balanced(depth)
    rank = {leaf: r for r, leaf in enumerate(leaves)}
    nodes: dict[str, tuple[int, list[int]]] = {}
    rows = []
    for t in range(1, horizon + 1):
        leaf = leaves[t]
        used = []
        for j, bit in enumerate(leaf):
            if bit == "1":
                prefix = leaf[:j] + "0"
                items = sorted(rank[x] + 1 for x in leaves if x.startswith(prefix))
                nodes.setdefault(prefix, (t, items))
                used.append(prefix)
        rows.append(used)
    return nodes, rows


@pytest.mark.parametrize("depth", [2, 4, 6, 8, 10])
def test_leaf_enumeration(depth: int) -> None:
    leaves = [int(s, 2) for s in _balanced(depth)]
    assert [smooth_leaf(r, depth) for r in range(len(leaves))] == leaves
    horizon = len(leaves) - 1
    assert smooth_leaves(horizon, depth).tolist() == leaves[1:]


def test_depth_is_the_smallest_even_depth_with_enough_leaves() -> None:
    assert [smooth_depth(t) for t in (1, 2, 5, 6, 19, 20, 69, 70)] == [2, 4, 4, 6, 6, 8, 8, 10]
    for t in range(1, 3000):
        d = smooth_depth(t)
        assert d % 2 == 0 and comb(d, d // 2) > t and (d == 2 or comb(d - 2, d // 2 - 1) <= t)
    assert smooth_depth(2**20) == 24
    assert SmoothBinary(epsilon=1, horizon=2**62).depth == 66  # binom(66, 33) > 2^62


@pytest.mark.parametrize("horizon", [*range(1, 40), 69, 70, 100, 251])
def test_nodes_match_the_brute_force_tree(horizon: int) -> None:
    m = SmoothBinary(epsilon=EPS, horizon=horizon)
    nodes, rows = _brute(horizon, m.depth)
    table = m.nodes(horizon)
    R = m.plan(horizon).recombination.to_dense_exact() if horizon <= 100 else None
    # node n of the plan ↔ its prefix: (release time, items) identify it
    got = []
    for n in range(table.size):
        lo, hi = int(table.lo[n]), int(table.hi[n])
        empty = table.weight_idx is not None and table.weight_table[int(table.weight_idx[n])] == 0
        got.append((hi, () if empty else tuple(range(lo, hi + 1))))
    want = sorted(
        ((t, tuple(items)) for t, items in nodes.values()),
        key=lambda node: (node[0], len(node[1])),
    )
    assert sorted(got, key=lambda node: (node[0], len(node[1]))) == want
    assert got == sorted(got, key=lambda node: (node[0], len(node[1])))  # canonical order
    # every output uses exactly d/2 nodes, the brute-force ones
    assert all(len(r) == m.depth // 2 for r in rows)
    if R is not None:
        for t, used in enumerate(rows):
            picked = sorted(got[n] for n, v in enumerate(R[t]) if v)
            assert [v for v in R[t] if v] == [1] * (m.depth // 2)
            assert picked == sorted((nodes[p][0], tuple(nodes[p][1])) for p in used)


@pytest.mark.parametrize("horizon", [1, 2, 3, 5, 6, 9, 10, 19, 35, 70, 200, 924, 1000])
def test_item_counts_and_the_declared_budget(horizon: int) -> None:
    """c(t) (item 1 is a worst item) is the plan's exact maximum for every t ≤ T, and the
    declared ε is c·ε/(d/2): ε exactly iff T ≥ binom(d, d/2)/2."""
    m = SmoothBinary(epsilon=EPS, horizon=horizon)
    d = m.depth
    for t in sorted({1, min(2, horizon), horizon // 2 or 1, horizon}):
        plan = m.plan(t)
        sums = plan.item_privacy_sums()
        c = smooth_item_count(t, d)
        assert max(sums) == sums[0] == Fraction(c) * EPS / (d // 2)
        assert m.expected_privacy_sum(t) == max(sums)
    full = horizon >= comb(d, d // 2) // 2
    assert m.item_count() == (d // 2 if full else d // 2 - 1)
    assert m.declared_epsilon == (EPS if full else EPS * (d - 2) / d)
    assert m.declared_budget() == m.declared_epsilon


def test_the_budget_at_two_to_the_twenty() -> None:
    m = SmoothBinary(epsilon=1, horizon=2**20)
    assert m.depth == 24 and comb(24, 12) // 2 > 2**20
    assert m.item_count() == 11 and m.declared_epsilon == Fraction(11, 12)
    # the same error at every step: (d/2)·2((d/2)/ε)² = 12·2·144 = 3456
    counts = m.variance_counts(2**10)
    assert counts is not None and counts[0] * 12 == 3456 and set(counts[1].tolist()) == {12}
    # Gaussian calibration (node variance dΔ²/(4ρ), d/2 nodes): d²/(8ρ) = 144 at ρ = 1/2
    assert Fraction(m.depth**2, 8) / Fraction(1, 2) == 144


@pytest.mark.parametrize("horizon", [1, 7, 16, 64, 300])
def test_constant_variance(horizon: int) -> None:
    m = SmoothBinary(epsilon=EPS, horizon=horizon)
    var = m.variance_exact()
    b = Fraction(m.depth // 2) / EPS
    assert var == [(m.depth // 2) * 2 * b * b] * horizon
    assert m.plan(horizon).variance_exact() == var


def test_plan_checks_at_many_horizons() -> None:
    for horizon in [*range(1, 130), 923, 924, 1715, 1716, 3432, 4096]:
        m = SmoothBinary(epsilon=EPS, horizon=horizon)
        report = m.plan(horizon).check(m.variance_exact(horizon))
        assert report.passed, report
        assert report.privacy_sum == m.declared_epsilon == m.expected_privacy_sum(horizon)


@pytest.mark.parametrize("horizon", [1, 2, 20, 70, 500])
def test_online_equals_batch_and_memory_is_logarithmic(horizon: int) -> None:
    m = SmoothBinary(epsilon=EPS, horizon=horizon)
    stream = np.random.default_rng(horizon).integers(0, 2, horizon)
    batch = m.release(stream, rng=11)
    counter = m.online(rng=11)
    out = []
    for x in stream:
        out.append(counter.step(x))
        assert len(counter._noise_at) == m.depth // 2  # type: ignore[attr-defined]
    np.testing.assert_allclose(out, batch, rtol=1e-12, atol=1e-9)
    assert m.online_memory() == m.depth // 2 + 1
    z = np.random.default_rng(1).normal(size=m.node_count(horizon))
    np.testing.assert_allclose(m.online(noise=z).run(stream), m.plan(horizon).output(stream, z))


def test_combine_is_vectorised_over_runs() -> None:
    m = SmoothBinary(epsilon=EPS, horizon=50)
    z = np.random.default_rng(2).normal(size=(3, m.node_count(50)))
    rows = np.array([m.combine(z[i], 50) for i in range(3)])
    np.testing.assert_allclose(m.combine(z, 50), rows)


def test_discrete_noise_and_errors() -> None:
    from dpref.domains import bounded_integers

    m = SmoothBinary(epsilon=1, horizon=12, domain=bounded_integers(0, 3), noise="discrete")
    out = m.release(np.arange(12) % 4, rng=0)
    assert np.all(out == np.round(out))
    with pytest.raises(DprefError, match="epsilon="):
        SmoothBinary(epsilon=0, horizon=4)
    with pytest.raises(DprefError, match="horizon="):
        SmoothBinary(epsilon=1, horizon=0)
    with pytest.raises(DprefError, match="horizon=None"):
        SmoothBinary(epsilon=1, horizon=None)
    counter = SmoothBinary(epsilon=1, horizon=2).online(rng=0)
    counter.step(1)
    counter.step(0)
    with pytest.raises(HorizonError, match="t=3"):
        counter.step(1)


# ------------------------------------------------------------------ Gaussian noise
ALPHA = 1e-6
"""False-failure rate of the Gaussian variance test (all steps together)."""
RUNS = 20_000
"""Independent runs: for Gaussian errors mean(e²) has standard error σ²·√(2/RUNS) = 1 % of
σ², so a 10 % error in σ (21 % in σ²) is ≥ 19 standard errors away."""


def test_gaussian_at_two_to_the_twenty_is_144_at_every_step() -> None:
    m = SmoothBinary(rho=Fraction(1, 2), horizon=2**20)
    assert m.depth == 24
    assert m.variance_exact(64) == [Fraction(144)] * 64
    units, counts = m.variance_counts(2**20)  # type: ignore[misc]
    assert units == Fraction(12) and set(counts.tolist()) == {12}  # σ² = d/(4ρ) = 12
    # the budget it really spends there: c = 11 of 12 nodes, ρ·11/12
    assert m.declared_rho == Fraction(11, 24)
    gdp = m.gdp()
    assert gdp.mu2 == Fraction(11, 12) == 2 * m.declared_rho


@pytest.mark.parametrize("horizon", [1, 2, 5, 6, 19, 20, 35, 69, 70, 256, 1716])
def test_gaussian_plan_checks(horizon: int) -> None:
    for noise in ("gaussian", "discrete_gaussian"):
        m = SmoothBinary(rho=Fraction(3, 8), horizon=horizon, noise=noise)
        report = m.plan(horizon).check(m.variance_exact(horizon))
        assert report.passed, report
        d = m.depth
        # the L2 sum: c nodes of cost Δ²/σ² = 2ρ/(d/2) each
        assert (
            report.privacy_sum == 2 * m.declared_rho == Fraction(3, 4) * m.item_count() / (d // 2)
        )
        assert len(set(m.variance_exact(horizon))) == 1
        assert m.variance_exact(horizon)[0] == Fraction(d * d, 8) / Fraction(3, 8)


def test_gaussian_noise_only_nodes_have_the_common_variance() -> None:
    m = SmoothBinary(rho=1, horizon=30)
    plan = m.plan(30)
    variances = {plan.scale(n) for n in range(plan.n_nodes)}
    assert variances == {Fraction(m.depth, 4)}  # dΔ²/(4ρ), weight-0 nodes included
    assert any(plan.weight(n) == 0 for n in range(plan.n_nodes))


def test_gaussian_online_equals_batch() -> None:
    m = SmoothBinary(rho=Fraction(1, 2), horizon=300)
    stream = np.random.default_rng(5).integers(0, 2, 300)
    np.testing.assert_allclose(
        m.online(rng=7).run(stream), m.release(stream, rng=7), rtol=1e-12, atol=1e-9
    )
    d = SmoothBinary(rho=2, horizon=50, noise="discrete_gaussian")
    out = d.release(np.ones(50), rng=1)
    assert np.all(out == np.round(out))
    np.testing.assert_array_equal(d.online(rng=1).run(np.ones(50)), out)


def test_gaussian_empirical_variance_and_power() -> None:
    from scipy import stats

    horizon = 40
    m = SmoothBinary(rho=Fraction(1, 2), horizon=horizon)
    sigma2 = float(m.variance_exact()[0])
    assert sigma2 == 16.0  # d = 8: d²/(8ρ)
    stream = np.random.default_rng(2).integers(0, 2, horizon)
    errors = m.release_many(stream, RUNS, rng=np.random.default_rng(3)) - m.target(stream)
    msq = np.mean(errors**2, axis=0)
    # Bonferroni over the steps, two-sided: Φ⁻¹(1 − ALPHA/(2·40)) ≈ 5.9
    crit = float(stats.norm.isf(ALPHA / (2 * horizon)))

    def worst_z(true_variance: float) -> float:
        se = true_variance * np.sqrt(2 / RUNS)
        return float(np.max(np.abs(msq - true_variance) / se))

    assert worst_z(sigma2) < crit
    # power: a σ off by 10 % either way is rejected
    assert worst_z(sigma2 * 0.9**2) > crit and worst_z(sigma2 * 1.1**2) > crit
    assert np.all(np.abs(errors.mean(axis=0)) < 6 * np.sqrt(sigma2 / RUNS))


def test_gdp_refuses_non_gaussian_noise() -> None:
    with pytest.raises(DprefError, match="noise='laplace'"):
        SmoothBinary(epsilon=1, horizon=8).gdp()
    with pytest.raises(DprefError, match="noise='discrete_gaussian'"):
        SmoothBinary(rho=1, horizon=8, noise="discrete_gaussian").gdp()
    with pytest.raises(DprefError, match="rho="):
        SmoothBinary(rho=1, horizon=8).declared_epsilon  # noqa: B018
