"""BlueTree (issue 28): the BLUE decoder against a dense exact GLS oracle, the issue's
numbers, online == batch, validation.  Cheap; the contract tests cover the rest."""

from __future__ import annotations

import dataclasses
from fractions import Fraction

import numpy as np
import pytest
from blue_oracle import gls_recombination

from dpref import BlueTree, Elders, KaryTree
from dpref.errors import DprefError, ParameterError
from dpref.mechanisms.blue.decode import exact_weights, variance_at
from dpref.mechanisms.blue.hierarchy import Layout, layout
from dpref.mechanisms.blue.variance import mean_exact, variance_floats


@pytest.mark.parametrize(
    ("kw", "horizon"),
    [
        ({"k": 2}, 7),
        ({"k": 3}, 11),
        ({"k": 4, "layout": "kary"}, 10),
        ({"k": 3, "layout": "elders"}, 9),
        ({"k": 3, "layout": "elders_full"}, 8),
        ({"k": 13, "layout": "elders_full"}, 9),
        ({"k": 2, "budget": "1/2,1/6,1/12,1/4"}, 6),
        ({"k": 3, "layout": "kary", "budget": "2/3,1/3"}, 8),
    ],
)
def test_recombination_is_the_dense_gls(kw: dict[str, object], horizon: int) -> None:
    """R and the per-step variances equal ``Q (AᵀΣ⁻¹A)⁻¹AᵀΣ⁻¹`` exactly (non-uniform
    budgets, T not a power of k, clipped blocks, unobserved middles)."""
    m = BlueTree(epsilon=1, horizon=horizon, **kw)  # type: ignore[arg-type]
    R, var = gls_recombination(m, horizon)
    assert m.recombination(horizon).to_dense_exact() == R
    assert m.variance_exact(horizon) == var


def test_gaussian_recombination_is_the_dense_gls() -> None:
    m = BlueTree(rho=Fraction(1, 2), horizon=7, k=2, budget="1/16,1/16,1/8,1/4")
    R, var = gls_recombination(m, 7)
    assert m.recombination(7).to_dense_exact() == R
    assert m.variance_exact(7) == var


@pytest.mark.parametrize(
    ("kw", "horizon", "mean", "max_"),
    [
        ({"k": 2}, 2048, 380, 548),
        ({"k": 3}, 729, 179, 260),
        ({"k": 13}, 2197, 197, 289),
        ({"k": 19, "layout": "elders_full"}, 2906, Fraction(1737, 10), Fraction(2859, 10)),
    ],
)
def test_issue_numbers(kw: dict[str, object], horizon: int, mean: Fraction, max_: Fraction) -> None:
    """The issue's table (ε = 1, uniform budgets), rounded as the issue prints them; the
    exact mean (moment DP) and max (interval screen) equal the per-step exact values."""
    m = BlueTree(epsilon=1, horizon=horizon, **kw)  # type: ignore[arg-type]
    mean_v, max_v = m.objective("mean"), m.objective("max")
    digits = 0 if isinstance(mean, int) else 1
    assert round(float(mean_v), digits) == float(mean)
    assert round(float(max_v), digits) == float(max_)


@pytest.mark.parametrize(
    ("k", "kind"), [(2, "complete"), (3, "elders"), (5, "kary"), (4, "elders_full")]
)
def test_objectives_equal_per_step_exact(k: int, kind: str) -> None:
    m = BlueTree(epsilon=Fraction(3, 2), horizon=150, k=k, layout=kind)
    v = m.variance_exact()
    assert m.objective("mean") == sum(v) / 150
    assert m.objective("max") == max(v)
    lo, hi = variance_floats(m.weights())
    exact = np.array([float(x) for x in v])
    assert np.all(lo <= exact) and np.all(exact <= hi)
    assert np.all(hi - lo <= 1e-12 * exact)


def test_elders_layout_is_elders_decoder() -> None:
    """On Elders' node set every node has one unobserved child: the BLUE is Elders' own
    decoder (same node set, same variances)."""
    for T in (1, 13, 40, 81):
        e, b = (
            Elders(epsilon=1, horizon=T, k=3),
            BlueTree(epsilon=1, horizon=T, k=3, layout="elders"),
        )
        en, bn = e.nodes(T), b.nodes(T)
        assert sorted(zip(en.lo.tolist(), en.hi.tolist(), strict=True)) == sorted(
            zip(bn.lo.tolist(), bn.hi.tolist(), strict=True)
        )
        assert b.variance_exact(T) == e.variance_exact(T)


def test_kary_layout_is_kary_combined_node_set() -> None:
    for T, k in ((10, 3), (16, 2), (27, 3)):
        a = KaryTree(epsilon=1, horizon=T, k=k, combine=True).nodes(T)
        b = BlueTree(epsilon=1, horizon=T, k=k, layout="kary").nodes(T)
        assert sorted(zip(a.lo.tolist(), a.hi.tolist(), strict=True)) == sorted(
            zip(b.lo.tolist(), b.hi.tolist(), strict=True)
        )


@pytest.mark.parametrize("kind", ["complete", "kary", "elders", "elders_full"])
def test_layout_arrays_follow_the_rules(kind: str) -> None:
    """The O(H) description (pattern, spine flags, size) matches the per-block arrays, and
    L is the number of levels with an observed block."""
    for T in (1, 2, 7, 26, 27, 28, 100):
        lay: Layout = layout(T, 3, kind)
        assert lay.size == sum(int(o.sum()) for o in lay.observed) == lay.lo.size
        assert lay.levels == max(j + 1 for j in range(lay.top + 1) if lay.observed[j].any())
        for j in range(lay.top + 1):
            assert lay.observed[j][0] or j >= lay.levels  # item 1 at every level j < L


def test_online_equals_batch_seeded_and_injected() -> None:
    stream = np.random.default_rng(0).integers(0, 2, 57)
    for kw in ({"k": 2}, {"k": 3, "layout": "elders_full"}):
        m = BlueTree(epsilon=1, horizon=57, **kw)  # type: ignore[arg-type]
        np.testing.assert_allclose(
            m.online(rng=4).run(stream), m.release(stream, rng=4), rtol=1e-12
        )
        z = np.random.default_rng(1).standard_normal(m.node_count(57))
        np.testing.assert_allclose(
            m.online(noise=z).run(stream), m.release(stream, noise=z), rtol=1e-12
        )
        assert m.online_memory() == m.node_count(57) + 57 + 1


def test_weights_mean_dp_matches_sum() -> None:
    w = exact_weights(layout(50, 4, "kary"), tuple([Fraction(2)] * 3 + [None]))
    assert mean_exact(w) == sum(variance_at(w, t) for t in range(1, 51)) / 50


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"k": 1}, "k="),
        ({"k": 4, "layout": "elders"}, "k=4"),
        ({"layout": "dyadic"}, "layout="),
        ({"budget": "max"}, "budget="),
        ({"budget": "1/2,1/2"}, "budget="),
        ({"noise": "discrete"}, "noise="),
    ],
)
def test_validation(kw: dict[str, object], match: str) -> None:
    with pytest.raises(DprefError, match=match):
        BlueTree(epsilon=1, horizon=16, **kw)  # type: ignore[arg-type]


def test_unidentifiable_layout_refused() -> None:
    """Two children without an estimate: the prefixes between them are not identifiable."""
    lay = layout(9, 3, "complete")

    bad = dataclasses.replace(lay, pattern=((True, False, False), *lay.pattern[1:]))
    with pytest.raises(ParameterError, match="not identifiable"):
        exact_weights(bad, (Fraction(1), Fraction(1), Fraction(1)))


# ------------------------------------------------------------------ keyed noise
ALPHA = 1e-6
"""False-failure rate of each Kolmogorov–Smirnov law check below (p-value threshold)."""
DRAWS = 50_000
"""Draws per law check: the KS statistic's 1e-6 critical value is about 2.6/√n ≈ 0.012,
while a scale off by 10 % moves the CDF by ≥ 0.017 somewhere (power check)."""


@pytest.mark.parametrize(("gaussian", "law"), [(False, "laplace"), (True, "norm")])
def test_keyed_standard_laws(gaussian: bool, law: str) -> None:
    from scipy import stats

    from dpref.mechanisms.blue.online import keyed_standard

    z = keyed_standard((7, 11), 3, DRAWS, gaussian)
    assert stats.kstest(z, law, method="asymp").pvalue > ALPHA
    assert (
        stats.kstest(z * 1.1, law, method="asymp").pvalue < ALPHA
    )  # power: a 10 % scale error is caught
    # regenerable: any window of the stream is the same words
    np.testing.assert_array_equal(keyed_standard((7, 11), 10, 5, gaussian), z[7:12])


@pytest.mark.parametrize(
    ("kw", "horizon"),
    [({"k": 2}, 37), ({"k": 3, "layout": "elders_full"}, 50), ({"k": 4, "layout": "kary"}, 70)],
)
def test_keyed_online_equals_keyed_batch(kw: dict[str, object], horizon: int) -> None:
    """The O(k·H)-memory counter outputs what the batch path gives on the keyed noise."""
    stream = np.random.default_rng(3).integers(0, 2, horizon)
    for budget in ({"epsilon": 1}, {"rho": Fraction(1, 2)}):
        m = BlueTree(horizon=horizon, **budget, **kw)  # type: ignore[arg-type]
        key = m.draw_key(5)
        batch = m.release(stream, noise=m.keyed_noise(key))
        c = m.online_keyed(key)
        online = np.array([c.step(x) for x in stream.tolist()])
        np.testing.assert_allclose(online, batch, rtol=1e-12, atol=1e-9)
        with pytest.raises(DprefError, match="horizon"):
            c.step(1)


def test_keyed_online_memory_bounded_recursion(monkeypatch: pytest.MonkeyPatch) -> None:
    """With a tiny work buffer the subtree passes recurse; the outputs are unchanged."""
    from dpref.mechanisms.blue import online

    monkeypatch.setattr(online, "WORK", 8)
    m = BlueTree(epsilon=1, horizon=100, k=3, layout="elders_full")
    key = (1, 2)
    batch = m.release(np.ones(100), noise=m.keyed_noise(key))
    c = m.online_keyed(key)
    np.testing.assert_allclose([c.step(1) for _ in range(100)], batch, rtol=1e-12, atol=1e-9)
    assert m.online_keyed_memory() < 10_000 + 6 * online.WORK


def test_keyed_key_validation() -> None:
    m = BlueTree(epsilon=1, horizon=8)
    with pytest.raises(DprefError, match="key="):
        m.online_keyed((1, -1))
    with pytest.raises(DprefError, match="key="):
        m.keyed_noise("abc")


def test_variance_upper_bounds_exact() -> None:
    """The frontier's fallback: every float is at least the exact variance."""
    m = BlueTree(epsilon=1, horizon=300, k=3, layout="elders_full")
    upper = m.variance_upper()
    assert upper is not None
    assert all(Fraction(float(u)) >= v for u, v in zip(upper, m.variance_exact(), strict=True))


def test_exact_mean_at_any_horizon_max_bounded() -> None:
    """The mean costs O(k·H) Fractions whatever T; the max screens every t (T ≤ 2^20)."""
    m = BlueTree(epsilon=1, horizon=2**40, k=13, layout="elders_full")
    assert 5804 < m.objective("mean") < 5805
    with pytest.raises(DprefError, match="horizon="):
        m.objective("max")


def test_fast_rows_equal_reference_rows() -> None:
    """rows.py (distinct values per level) equals decode.row_weights (node by node)."""
    from dpref.mechanisms.blue.decode import row_weights

    m = BlueTree(epsilon=1, horizon=23, k=3, layout="elders_full", budget="1/3,1/6,1/6,1/3")
    w, lay = m.weights(), m._layout(23)
    dense = m.recombination(23).to_dense_exact()
    for t in range(1, 24):
        want = [Fraction(0)] * lay.size
        for j, vals in enumerate(row_weights(w, t)):
            for b, v in enumerate(vals):
                if lay.canon[j][b] >= 0:
                    want[int(lay.canon[j][b])] = v
        assert dense[t - 1] == want


def test_mean_budget_beats_uniform_and_sums_exactly() -> None:
    m = BlueTree(epsilon=Fraction(3, 2), horizon=20, k=3, budget="mean")
    u = BlueTree(epsilon=Fraction(3, 2), horizon=20, k=3)
    assert sum(m.level_epsilons) == Fraction(3, 2) and m.budget == "mean"
    assert m.objective("mean") < u.objective("mean")
    assert m.plan(20).check(m.variance_exact(20)).passed
    g = BlueTree(rho=Fraction(1, 2), horizon=20, k=2, budget="mean")
    assert sum(g.level_budget_values()) == Fraction(1, 2)
    assert g.objective("mean") < BlueTree(rho=Fraction(1, 2), horizon=20, k=2).objective("mean")
