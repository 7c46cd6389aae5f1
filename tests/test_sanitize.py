"""The streaming sanitizer, the threshold sanitizer and private quantiles (issue 12).

Contract: exact declared budgets, every argument checked before any noise, determinism
given the rng, the three forms (step, extend, batch) agreeing; properties of the
projected CDF (hypothesis); statistical checks of the tree's noise scale under both
neighbour relations and of the subsampling rate; the CLI.
"""

from __future__ import annotations

import io
import json
import math
import sys
from contextlib import redirect_stderr, redirect_stdout
from fractions import Fraction
from pathlib import Path
from typing import Any

import mpmath  # type: ignore[import-untyped]
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import norm

from dpref import (
    Binary,
    DprefError,
    PrivateQuantiles,
    StreamingSanitizer,
    ThresholdSanitizer,
    private_quantiles,
    subsampled_epsilon,
)
from dpref.errors import DomainError
from dpref.sanitize import (
    effective_probability,
    exact_quantiles,
    exponential_quantile,
    project_cdf,
    rank_errors,
    tree_counters,
)
from dpref.sanitize.threshold import MAX_DOMAIN
from tests.strategies import monotone_cdfs, sanitizer_streams, seeds

ALPHA = 1e-6
"""False-failure rate of each statistical test."""
Z_CRIT = float(norm.ppf(1 - ALPHA / 2))
"""Two-sided normal critical value at ALPHA: Φ⁻¹(1 − 5·10⁻⁷) ≈ 4.892."""


def _points(size: int) -> np.ndarray:
    return np.arange(size, dtype=np.float64)


# ------------------------------------------------------------------ budgets
def test_threshold_budget_is_the_trees_with_the_relations_sensitivity() -> None:
    rep = ThresholdSanitizer(domain=_points(16), epsilon=Fraction(1, 2))
    add = ThresholdSanitizer(domain=_points(16), epsilon=Fraction(1, 2), neighbours="add-remove")
    assert isinstance(rep.mechanism, Binary)
    assert rep.epsilon == add.epsilon == Fraction(1, 2)
    assert rep.sensitivity == 2 and add.sensitivity == 1
    # Binary over D = 16 has L = 5 levels: scale LΔ/ε, 2 per level for replace-one
    assert rep.plan().scale_table == (Fraction(5 * 2 * 2),)
    assert add.plan().scale_table == (Fraction(5 * 1 * 2),)
    assert rep.plan().check().passed and add.plan().check().passed


def test_streaming_budget_is_exact_and_rounded_up() -> None:
    rep = ThresholdSanitizer(domain=_points(4), epsilon=1)
    add = ThresholdSanitizer(domain=_points(4), epsilon=1, neighbours="add-remove")
    assert StreamingSanitizer(rep, block_size=3).epsilon == 1
    assert StreamingSanitizer(add, block_size=3).epsilon == 2  # the default is replace-one
    assert StreamingSanitizer(add, block_size=3, neighbours="add-remove").epsilon == 1
    assert StreamingSanitizer(add, block_size=3, neighbours="replace").epsilon == 2
    s = StreamingSanitizer(add, block_size=3, subsample=Fraction(1, 10), neighbours="add-remove")
    _, keep = effective_probability(Fraction(1, 10))
    assert keep >= Fraction(1, 10)
    mp = mpmath.MPContext()
    mp.dps = 50
    pk = mp.mpf(keep.numerator) / keep.denominator
    exact = mp.log1p(pk * mp.expm1(1))
    assert isinstance(s.epsilon, Fraction)
    declared = mp.mpf(s.epsilon.numerator) / s.epsilon.denominator
    assert exact <= declared <= exact + mp.mpf("1e-14")
    assert s.epsilon_float >= s.epsilon
    r = StreamingSanitizer(add, block_size=3, subsample=Fraction(1, 10), neighbours="replace")
    exact_r = mp.log((1 - pk + pk * mp.e) / (1 - pk + pk / mp.e))
    declared_r = mp.mpf(r.epsilon.numerator) / r.epsilon.denominator
    assert exact_r <= declared_r <= exact_r + mp.mpf("1e-14")
    assert r.epsilon <= 2 * s.epsilon  # never worse than the group-of-two bound


@pytest.mark.parametrize("rel", ["add-remove", "replace"])
def test_subsampled_epsilon_is_monotone_and_capped(rel: str) -> None:
    cap = 1 if rel == "add-remove" else 2
    values = [subsampled_epsilon(1, Fraction(k, 10), rel) for k in range(1, 11)]
    assert values == sorted(values) and values[-1] == cap and all(v <= cap for v in values)


def test_subsampled_pipelines_declare_the_replace_one_bound() -> None:
    """Regression: with p < 1, ``PrivateQuantiles``, ``private_quantiles`` and ``dpref
    quantiles`` declared the *add/remove* bound ``ln(1 + p(e^{ε₀} − 1))``.  Their input is
    a stream of values, so the neighbours they can be given are two streams of the same
    length differing in one record, and for those the release's loss is larger.  Exact
    check at D = 5, ε₀ = 1, p = 1/2, one record per block (a Binary tree with Δ = 1,
    L = 3, scale 3): for [x_1] against [x_5], at a node vector z far above the mean on
    the 3 nodes holding leaf 1 and far below it elsewhere, the likelihood ratio of the
    released noisy CDF (an invertible image of z) is
    ``((1 − p) + p e^{3/3}) / ((1 − p) + p e^{−1/3})`` = e^{0.773} > e^{0.620}."""
    pq = PrivateQuantiles(
        domain=_points(5), epsilon=1, block_size=1, subsample=Fraction(1, 2),
        neighbours="add-remove",
    )  # fmt: skip
    san = pq.sanitizer
    plan = san.offline.plan()
    assert plan.scale_table == (Fraction(3),)
    items = np.arange(1, 6)[None, :]
    member = (plan.lo[:, None] <= items) & (items <= plan.hi[:, None])  # nodes × leaves
    # |z − A e_1| − |z − 0| summed over nodes, with z = ±100 by whether the node holds leaf 1
    up = -int(member[:, 0].sum())  # every node holding leaf 1 moves z closer by one
    down = int((member[:, 4] & ~member[:, 0]).sum())  # leaf 5's own nodes move z away
    p = float(san.keep_probability)
    loss = math.log(((1 - p) + p * math.exp(-up / 3)) / ((1 - p) + p * math.exp(-down / 3)))
    assert loss > 0.77
    assert san.neighbours == "replace" and loss <= san.epsilon
    assert san.epsilon == san.budget("replace") > san.budget("add-remove")
    assert float(san.budget("add-remove")) < loss  # the bound that used to be declared


def test_every_tree_counter_plugs_in_by_registry_name() -> None:
    assert "binary" in tree_counters() and "window" not in tree_counters()
    for tree in tree_counters():
        san = ThresholdSanitizer(domain=_points(9), epsilon=1, tree=tree)
        assert san.plan().check().passed
        out = san.sanitize([0, 3, 3, 8], rng=1)
        assert out.total == 4 and out.counts.sum() == 4


# ------------------------------------------------------------------ bad input
def _untouched(call: Any, name: str, exc: type[Exception] = DprefError) -> None:
    gen = np.random.default_rng(7)
    before = gen.bit_generator.state
    with pytest.raises(exc) as info:
        call(gen)
    assert f"{name}=" in str(info.value) or f"{name}[" in str(info.value), str(info.value)
    assert gen.bit_generator.state == before, "noise was drawn before the error"


TS = ThresholdSanitizer


@pytest.mark.parametrize(
    ("name", "call"),
    [
        ("domain", lambda g: TS(domain=[], epsilon=1)),
        ("domain", lambda g: TS(domain=[0, 2, 1], epsilon=1)),
        ("domain", lambda g: TS(domain=[0, 1, 1], epsilon=1)),
        ("domain", lambda g: TS(domain=[0, float("nan")], epsilon=1)),
        ("domain", lambda g: TS(domain=np.zeros((2, 2)), epsilon=1)),
        ("domain", lambda g: TS(domain=np.arange(MAX_DOMAIN + 1.0), epsilon=1)),
        ("domain", lambda g: TS(domain="abc", epsilon=1)),
        ("epsilon", lambda g: TS(domain=[0, 1], epsilon=0)),
        ("epsilon", lambda g: TS(domain=[0, 1], epsilon=float("nan"))),
        ("tree", lambda g: TS(domain=[0, 1], epsilon=1, tree="window")),
        ("tree", lambda g: TS(domain=[0, 1], epsilon=1, tree=3)),
        ("neighbours", lambda g: TS(domain=[0, 1], epsilon=1, neighbours="add_remove")),
        ("data", lambda g: TS(domain=[0, 1], epsilon=1).sanitize([0, 2], rng=g)),
        ("data", lambda g: TS(domain=[0, 1], epsilon=1).sanitize([0, float("nan")], rng=g)),
        ("clamp", lambda g: TS(domain=[0, 1], epsilon=1).sanitize([0], rng=g, clamp="yes")),
        (
            "capacity",
            lambda g: TS(domain=[0, 1], epsilon=1, neighbours="add-remove").sanitize([0], rng=g),
        ),
        ("offline", lambda g: StreamingSanitizer(Binary(epsilon=1, horizon=2), block_size=2)),
        ("block_size", lambda g: StreamingSanitizer(TS(domain=[0, 1], epsilon=1), block_size=0)),
        ("block_size", lambda g: StreamingSanitizer(TS(domain=[0, 1], epsilon=1), block_size=1.5)),
        (
            "subsample",
            lambda g: StreamingSanitizer(
                TS(domain=[0, 1], epsilon=1, neighbours="add-remove"), block_size=2, subsample=0
            ),
        ),
        (
            "subsample",
            lambda g: StreamingSanitizer(
                TS(domain=[0, 1], epsilon=1, neighbours="add-remove"), block_size=2, subsample=1.5
            ),
        ),
        (
            "subsample",
            lambda g: StreamingSanitizer(
                TS(domain=[0, 1], epsilon=1), block_size=2, subsample=Fraction(1, 2)
            ),
        ),
        (
            "neighbours",
            lambda g: StreamingSanitizer(
                TS(domain=[0, 1], epsilon=1), block_size=2, neighbours="add-remove"
            ),
        ),
        (
            "values",
            lambda g: (
                StreamingSanitizer(TS(domain=[0, 1], epsilon=1), block_size=1)
                .online(g)
                .extend([0, 1, 5])
            ),
        ),
        (
            "x",
            lambda g: (
                StreamingSanitizer(TS(domain=[0, 1], epsilon=1), block_size=1)
                .online(g)
                .step(float("nan"))
            ),
        ),
        ("q", lambda g: PrivateQuantiles(domain=[0, 1], epsilon=1, block_size=1).quantiles(1.5)),
        ("q", lambda g: PrivateQuantiles(domain=[0, 1], epsilon=1, block_size=1).quantiles([])),
        # regression: a timedelta64 reached float() and raised a raw TypeError
        (
            "x",
            lambda g: PrivateQuantiles(domain=[0, 1], epsilon=1, block_size=1).rank(
                np.timedelta64(4, "D")
            ),
        ),
        (
            "x",
            lambda g: PrivateQuantiles(domain=[0, 1], epsilon=1, block_size=1).rank(float("nan")),
        ),
        (
            "sketch_k",
            lambda g: PrivateQuantiles(domain=[0, 1], epsilon=1, block_size=1, sketch_k=2),
        ),
        ("q", lambda g: private_quantiles([0, 1], [-0.1], domain=[0, 1], epsilon=1, block_size=1)),
        ("stream", lambda g: private_quantiles([0, 3], domain=[0, 1], epsilon=1, block_size=1)),
        (
            "block_size",
            lambda g: private_quantiles(
                np.zeros(10**6), domain=np.arange(2.0**16), epsilon=1, block_size=1, rng=g
            ),
        ),
        ("subsample", lambda g: subsampled_epsilon(1, 0)),
        # regression: these public helpers took anything and raised AttributeError or
        # IndexError, or returned junk (p = 2 gave keep probability 1; total = −5 gave a
        # "CDF" ending at −5); the fuzz harness now covers dpref.sanitize's functions
        ("p", lambda g: effective_probability(2)),
        ("p", lambda g: effective_probability("abc")),
        ("total", lambda g: project_cdf(np.array([1.0, 2.0]), -5, 3)),
        ("total", lambda g: project_cdf(np.array([1.0, 2.0]), 4, 3)),
        ("noisy", lambda g: project_cdf([1.0, float("nan")], 2, 3)),
        ("noisy", lambda g: project_cdf([], 2, 3)),
        ("sorted_values", lambda g: exact_quantiles([2.0, 1.0], [0.5])),
        ("qs", lambda g: exact_quantiles([1.0, 2.0], [1.5])),
        ("sorted_truth", lambda g: rank_errors([], [1.0], [0.5])),
        ("values", lambda g: rank_errors([1.0, 2.0], [1.0, 2.0], [0.5])),
        ("data", lambda g: exponential_quantile([0, 5], 0.5, domain=[0, 1], epsilon=1, rng=g)),
        ("epsilon", lambda g: subsampled_epsilon(10**7, Fraction(1, 2))),
    ],
)
def test_bad_input_names_the_parameter_before_any_noise(name: str, call: Any) -> None:
    _untouched(call, name)


def test_the_work_bound_counts_each_blocks_fixed_cost() -> None:
    """Regression: the bound was ``blocks × D ≤ 2³³``, so n = 1 over D = 2 let 2²⁶ blocks
    through (measured ≈ 350 µs per block: about six hours), and at D = 2²² it allowed
    2048 blocks of ≈ 1.2 s each.  Now ``blocks × (D + BLOCK_OVERHEAD) ≤ 2²⁸``."""
    from dpref.sanitize.streaming import BLOCK_OVERHEAD, MAX_BATCH_WORK

    tiny = StreamingSanitizer(ThresholdSanitizer(domain=[0.0, 1.0], epsilon=1), block_size=1)
    with pytest.raises(DprefError, match=r"^block_size=1: "):
        tiny.check_work(1 << 26)
    most = MAX_BATCH_WORK // (2 + BLOCK_OVERHEAD)
    tiny.check_work(most)  # the largest accepted batch …
    with pytest.raises(DprefError, match="block_size="):
        tiny.check_work(most + 1)  # … and one more block is refused
    with pytest.raises(DprefError, match="block_size="):
        tiny.sanitize(np.zeros(most + 1))


def test_one_extend_call_is_bounded_before_any_noise() -> None:
    """Regression: ``extend`` (and ``PrivateQuantiles.extend``) had no bound at all: one
    call with 2¹⁸ values in blocks of 1 ran ≈ 90 s (and unboundedly long for larger
    inputs or domains).  It is now refused, naming ``values``, with the rng untouched."""
    san = StreamingSanitizer(ThresholdSanitizer(domain=[0.0, 1.0], epsilon=1), block_size=1)
    _untouched(lambda g: san.online(g).extend(np.zeros(1 << 18)), "values")
    pq = PrivateQuantiles(domain=[0.0, 1.0], epsilon=1, block_size=1, rng=0)
    with pytest.raises(DprefError, match="values="):
        pq.extend(np.zeros(1 << 18))
    assert pq.blocks == 0 and pq.items == 0
    run = san.online(0)
    assert len(run.extend(np.zeros(1000))) == 1000  # a modest call still runs


def test_cli_work_is_bounded_like_the_batch_form(tmp_path: Path) -> None:
    """Regression: ``dpref quantiles`` fed the stream block by block, so no bound applied:
    70 values in blocks of 1 over 2²² points ran ≈ 85 s, and 10⁶ values for two weeks.
    It is now refused at once, one stderr line naming ``block_size``."""
    stream = tmp_path / "s.txt"
    stream.write_text("1\n" * 70)
    code, out, err = _cli(
        [f"--input={stream}", "--domain=0:4194303", "--epsilon=1", "--block-size=1"]
    )
    assert code == 2 and out == "" and len(err.splitlines()) == 1 and "block_size=1" in err


def test_a_domain_spanning_all_floats_warns_nothing() -> None:
    """Regression: ``[-1e308, 1e308]`` overflowed in the grid test and the order check
    (RuntimeWarnings, errors under ``-W error``); the span is no grid, the points are
    increasing, and records are bucketed by search."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        san = ThresholdSanitizer(domain=[-1e308, 1e308], epsilon=1)
        assert san.sanitize([0.0, 1e308], rng=1).total == 2
        assert san.bucket("x", [-1e308, 0.0, 1e308])[0].tolist() == [0, 0, 1]


def test_values_outside_the_domain_are_clamped_and_counted_on_request() -> None:
    san = StreamingSanitizer(ThresholdSanitizer(domain=_points(4), epsilon=1), block_size=3)
    with pytest.raises(DomainError, match=r"stream\[1\]=7\.0"):
        san.sanitize([0, 7, 1], rng=0)
    clamped = StreamingSanitizer(san.offline, block_size=3, clamp=True).sanitize([-2, 7, 1], 0)
    assert clamped.clamped == 2 and clamped.synthetic.size == 3


def test_a_closed_run_releases_nothing_more() -> None:
    run = StreamingSanitizer(ThresholdSanitizer(domain=_points(4), epsilon=1), block_size=3).online(
        0
    )
    assert run.extend([0, 1, 2, 3]) and run.close() is not None
    with pytest.raises(DprefError, match="closed=True"):
        run.step(1)
    with pytest.raises(DprefError, match="closed=True"):
        run.close()


def test_missing_datasketches_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "datasketches", None)
    with pytest.raises(DprefError, match=r"sketch='kll'.*datasketches"):
        PrivateQuantiles(domain=[0, 1], epsilon=1, block_size=2)
    # the sanitizers themselves need no sketch
    assert StreamingSanitizer(TS(domain=[0, 1], epsilon=1), block_size=2).sanitize([0, 1], 0)


# ------------------------------------------------------------- properties
@given(monotone_cdfs())
def test_projection_is_a_cdf_with_total_n_never_farther_than_the_noisy_one(
    case: tuple[np.ndarray, int, np.ndarray],
) -> None:
    truth, n, noise = case
    noisy = truth + noise
    cdf, total = project_cdf(noisy, n, n)
    assert total == n and cdf[-1] == n
    assert np.all(np.diff(cdf) >= 0) and cdf.min() >= 0 and cdf.max() <= n
    # isotonic regression is 1-Lipschitz in the sup norm and fixes monotone CDFs ending at n
    assert np.abs(cdf - truth).max() <= np.abs(noisy[:-1] - truth[:-1]).max(initial=0) + 1e-9


@given(monotone_cdfs(max_size=12), st.integers(0, 60))
def test_add_remove_projection_total_is_clipped_to_the_capacity(
    case: tuple[np.ndarray, int, np.ndarray], capacity: int
) -> None:
    truth, _, noise = case
    cdf, total = project_cdf(truth + noise, None, capacity)
    assert 0 <= total <= capacity and cdf[-1] == total
    assert np.all(np.diff(cdf) >= 0) and cdf.min() >= 0


def test_projection_is_the_least_squares_fit() -> None:
    from scipy.optimize import minimize

    gen = np.random.default_rng(3)
    for size in (2, 3, 5, 7):
        noisy = gen.normal(5, 4, size)
        n = 10
        cdf, _ = project_cdf(noisy, n, n)
        cons = [{"type": "ineq", "fun": (lambda f, j=j: f[j + 1] - f[j])} for j in range(size - 2)]
        head = minimize(
            lambda f, y=noisy[:-1]: float(np.sum((f - y) ** 2)),
            np.full(size - 1, n / 2),
            method="SLSQP",
            bounds=[(0, n)] * (size - 1),
            constraints=cons,
            options={"ftol": 1e-12, "maxiter": 500},
        )
        assert np.allclose(cdf[:-1], head.x, atol=1e-5)


@settings(max_examples=40)
@given(sanitizer_streams(), seeds, st.sampled_from(["replace", "add-remove"]))
def test_step_extend_and_batch_agree_and_are_deterministic(
    case: tuple[int, int, np.ndarray], seed: int, rel: str
) -> None:
    size, block, stream = case
    san = StreamingSanitizer(
        ThresholdSanitizer(domain=_points(size), epsilon=1, neighbours=rel),
        block_size=block,
        subsample=Fraction(1, 2) if rel == "add-remove" else 1,
    )
    batch = san.sanitize(stream, seed) if stream.size else None
    again = san.sanitize(stream, seed) if stream.size else None
    run = san.online(seed)
    stepped = [b for x in stream if (b := run.step(x)) is not None]
    last = run.close()
    run2 = san.online(seed)
    extended = run2.extend(stream)
    last2 = run2.close()
    parts = [*stepped, *([last] if last is not None else [])]
    parts2 = [*extended, *([last2] if last2 is not None else [])]
    assert len(parts) == len(parts2) == math.ceil(stream.size / block)
    for a, b in zip(parts, parts2, strict=True):
        assert np.array_equal(a, b)
        assert np.all(np.diff(a) >= 0) and np.isin(a, san.offline.points).all()
        if rel == "add-remove":
            assert a.size <= block
    if batch is not None and again is not None:
        assert np.array_equal(batch.synthetic, again.synthetic)
        joined = np.concatenate(parts) if parts else np.zeros(0)
        assert np.array_equal(batch.synthetic, joined)
        if rel == "replace":
            assert batch.synthetic.size == stream.size  # one synthetic point per record
        assert list(batch.lengths) == [block] * (stream.size // block) + (
            [stream.size % block] if stream.size % block else []
        )


# ------------------------------------------------------------- statistics
RUNS = 4000
"""Releases per noise-scale test: the mean |error| of RUNS Laplace(b) draws has standard
deviation b/√RUNS, so a scale off by 30 % is ≈ 0.3·√4000 ≈ 19 standard errors away."""


def _scale_z(errors: np.ndarray, scale: float) -> float:
    """|X| of X ~ Lap(b) is Exponential with mean b and sd b; the CLT gives z."""
    return float((np.abs(errors).mean() - scale) / (scale / math.sqrt(errors.size)))


@pytest.mark.parametrize(("rel", "delta"), [("replace", 2), ("add-remove", 1)])
def test_the_trees_noise_scale_matches_the_relation(rel: str, delta: int) -> None:
    """At D = 16 the prefix sum at the last point is one tree node (the root), so its
    error is Lap(LΔ/ε) with L = 5: 10 for replace-one, 5 for add/remove (ε = 1).
    Critical value: Z_CRIT (two-sided, ALPHA); power: the same errors reject 0.7b and 1.3b,
    and 0.8b — the smallest error that matters here, the lecture's level count
    ``⌈log₂16⌉ = 4`` instead of L = 5 (z ≈ 0.25·√4000 ≈ 16)."""
    san = ThresholdSanitizer(domain=_points(16), epsilon=1, neighbours=rel)
    gen = np.random.default_rng(20261122 + delta)
    data = np.array([0, 3, 3, 9, 15], dtype=np.float64)
    errors = np.array(
        [san.sanitize(data, gen, capacity=5).noisy_cdf[-1] - data.size for _ in range(RUNS)]
    )
    scale = 5.0 * delta
    assert abs(_scale_z(errors, scale)) < Z_CRIT
    assert abs(_scale_z(errors, 0.7 * scale)) > Z_CRIT
    assert abs(_scale_z(errors, 0.8 * scale)) > Z_CRIT
    assert abs(_scale_z(errors, 1.3 * scale)) > Z_CRIT


def test_subsampling_keeps_each_record_with_probability_p() -> None:
    """With ε₀ = 10⁴ the add/remove release's total is the kept count (noise ≪ 0.5), which
    is Binomial(m, p).  z-test at Z_CRIT; power: the same count rejects p ± 0.03."""
    p, m = Fraction(3, 10), 20_000
    san = StreamingSanitizer(
        ThresholdSanitizer(domain=_points(8), epsilon=10**4, neighbours="add-remove"),
        block_size=1000,
        subsample=p,
    )
    kept = san.sanitize(np.zeros(m), rng=5).synthetic.size

    def z(prob: float) -> float:
        return (kept - m * prob) / math.sqrt(m * prob * (1 - prob))

    assert abs(z(0.3)) < Z_CRIT
    assert abs(z(0.27)) > Z_CRIT and abs(z(0.33)) > Z_CRIT


# ------------------------------------------------------------- quantiles
def test_small_streams_have_exact_synthetic_quantiles_equal_to_the_sketch() -> None:
    """Under k items KLL keeps everything, so its quantiles are the exact ones."""
    pq = PrivateQuantiles(domain=_points(50), epsilon=2, block_size=40, rng=3)
    gen = np.random.default_rng(4)
    assert math.isnan(pq.quantiles(0.5)[0])
    blocks = 0
    for _ in range(5):
        blocks += pq.extend(gen.integers(0, 50, 40).astype(np.float64))
        qs = np.array([0.0, 0.1, 0.5, 0.99, 1.0])
        assert np.array_equal(pq.quantiles(qs), pq.exact_quantiles(qs))
    assert blocks == pq.blocks == 5 and pq.synthetic_size == 200
    assert 0.0 <= pq.rank(25) <= 1.0


def test_exact_quantile_rule_and_rank_errors() -> None:
    data = np.array([1.0, 2.0, 2.0, 3.0])
    qs = np.array([0.0, 0.25, 0.5, 0.75, 1.0])
    assert exact_quantiles(data, qs).tolist() == [1.0, 1.0, 2.0, 2.0, 3.0]
    assert rank_errors(data, np.array([2.0]), np.array([0.5])).tolist() == [0.0]
    assert rank_errors(data, np.array([3.0]), np.array([0.25])).tolist() == [0.5]


def test_private_quantiles_are_accurate_on_a_seeded_stream() -> None:
    """A regression bound: m = 60 000 values over 1024 points, ε = 1, n = 6000; the
    synthetic stream is fixed by the seed (its exact quantiles are 0.00195 from the truth
    in rank) and must be within 0.02 in rank of the truth through the sketch.

    The KLL sketch compacts with DataSketches' own unseedable bits, so two assertions are
    statistical.  False-failure rate: KLL's rank error is sub-Gaussian (Karnin, Lang,
    Liberty 2016) with its 99 % bound ε₉₉ = sketch_rank_error() ≈ 2.58σ; the bound
    2·ε₉₉ ≈ 5.2σ fails with probability ≈ 2·10⁻⁷ per quantile, ≈ 10⁻⁶ for five, and the
    0.02 bound needs a sketch error of ≈ 0.018 ≈ 17σ (20 runs measured total errors
    ≤ 0.003).  This is a regression and consistency check, not a test of the noise scale
    (that is test_the_trees_noise_scale_matches_the_relation)."""
    gen = np.random.default_rng(11)
    data = np.clip(np.round(gen.normal(512, 120, 60_000)), 0, 1023)
    pq = PrivateQuantiles(domain=_points(1024), epsilon=1, block_size=6000, rng=12)
    pq.extend(data)
    pq.close()
    qs = np.array([0.01, 0.1, 0.5, 0.9, 0.99])
    assert rank_errors(np.sort(data), pq.quantiles(qs), qs).max() <= 0.02
    exact = pq.exact_quantiles(qs)
    one_shot = private_quantiles(data, qs, domain=_points(1024), epsilon=1, block_size=6000, rng=12)
    # the synthetic stream is determined by the rng; the KLL sketch compacts with
    # DataSketches' own (unseedable) randomness, so compare ranks in the synthetic stream
    again = PrivateQuantiles(domain=_points(1024), epsilon=1, block_size=6000, rng=12)
    again.extend(data)
    again.close()
    assert np.array_equal(again.exact_quantiles(qs), exact)
    synthetic = np.sort(np.concatenate(again._kept or []))
    bound = 2 * again.sketch_rank_error()
    assert rank_errors(synthetic, one_shot, qs).max() <= bound


def test_exponential_quantile_concentrates_at_large_epsilon() -> None:
    data = np.arange(100, dtype=np.float64)
    got = exponential_quantile(data, 0.5, domain=_points(100), epsilon=1000, rng=0)
    assert got in (49.0, 50.0)


# --------------------------------------------------------------------- CLI
def _cli(argv: list[str]) -> tuple[int, str, str]:
    from dpref.sanitize.cli import main

    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


def test_cli_prints_one_json_object(tmp_path: Path) -> None:
    stream = tmp_path / "s.txt"
    gen = np.random.default_rng(0)
    stream.write_text("\n".join(str(int(v)) for v in gen.integers(0, 100, 2500)) + "\n")
    code, out, err = _cli(
        [f"--input={stream}", "--domain=0:99", "--epsilon=1", "--block-size=1000", "--json",
         "--seed=1", "--q=0.1,0.5"]
    )  # fmt: skip
    assert code == 0 and err == ""
    doc = json.loads(out)
    assert doc["epsilon"] == "1" and doc["blocks"] == 3 and doc["items"] == 2500
    assert doc["synthetic_points"] == 2500 and len(doc["history"]) == 3
    assert doc["quantiles"] == doc["history"][-1]["quantiles"]
    assert doc["neighbours"] == doc["block_neighbours"] == "replace"


def test_cli_subsampling_declares_the_replace_one_bound(tmp_path: Path) -> None:
    """Regression: ``--subsample`` switched the declared relation to add/remove (a smaller
    ε for neighbours the input file cannot express).  The declared ε is the replace-one
    bound at the sampler's keep probability."""
    stream = tmp_path / "s.txt"
    stream.write_text("\n".join(["1", "5", "9"] * 10) + "\n")
    code, out, _ = _cli(
        [f"--input={stream}", "--domain=0:9", "--epsilon=1", "--block-size=10",
         "--subsample=0.1", "--json", "--seed=1"]
    )  # fmt: skip
    assert code == 0
    doc = json.loads(out)
    _, keep = effective_probability(Fraction(0.1))
    assert doc["neighbours"] == "replace" and doc["block_neighbours"] == "add-remove"
    assert Fraction(doc["epsilon"]) == subsampled_epsilon(1, keep, "replace")
    assert Fraction(doc["epsilon"]) > subsampled_epsilon(1, keep, "add-remove")


def test_cli_plot_and_clamp(tmp_path: Path) -> None:
    stream = tmp_path / "s.txt"
    stream.write_text("\n".join(["-5", "3", "120"] * 40) + "\n")
    png = tmp_path / "q.png"
    code, out, _ = _cli(
        [f"--input={stream}", "--domain=0:100:0.5", "--epsilon=1", "--block-size=50",
         "--clamp", f"--plot={png}", "--every=2"]
    )  # fmt: skip
    assert code == 0 and png.stat().st_size > 0
    assert "clamped" not in out and "nearest end" in out


def test_cli_does_not_print_the_exact_number_of_clamped_values(tmp_path: Path) -> None:
    """Regression: ``--json`` printed ``"clamped": k``, the exact count of out-of-domain
    values.  Two inputs that differ in one record (10 against 25, domain 0…10) are
    neighbours; 25 is clamped to 10, so with the same seed both give the same histogram
    and the same noise, and (under k points, KLL keeps everything) the same answers.  Any
    difference in the output is a deterministic raw-data leak: infinite privacy loss."""
    outs = []
    for value in ("10", "25"):
        stream = tmp_path / f"s{value}.txt"
        stream.write_text("\n".join(["3", "10", value, "7", "1"]) + "\n")
        for extra in (["--json"], []):
            code, out, err = _cli(
                [f"--input={stream}", "--domain=0:10", "--epsilon=1", "--block-size=2",
                 "--clamp", "--seed=4", *extra]
            )  # fmt: skip
            assert code == 0 and err == "", err
            outs.append(out)
    assert outs[0] == outs[2] and outs[1] == outs[3]
    doc = json.loads(outs[0])
    assert "clamped" not in doc and doc["clamp"] is True


@pytest.mark.parametrize(
    ("flag", "name"),
    [
        ("--domain=5:1", "domain="),
        ("--domain=0:1:0", "domain="),
        ("--domain=0:99999999", "domain="),
        ("--q=0.5,1.5", "q["),
        ("--subsample=0", "subsample="),
        ("--every=0", "every="),
        ("--epsilon=-1", "epsilon="),
        ("--block-size=0", "block_size="),
        ("--seed=-1", "seed="),  # regression: the message named rng=, not the flag
    ],
)
def test_cli_bad_input_is_one_stderr_line(tmp_path: Path, flag: str, name: str) -> None:
    stream = tmp_path / "s.txt"
    stream.write_text("1\n2\n")
    base = [f"--input={stream}", "--domain=0:10", "--epsilon=1", "--block-size=2"]
    argv = [a for a in base if a.split("=")[0] != flag.split("=")[0]] + [flag]
    code, out, err = _cli(argv)
    assert code == 2 and out == "" and len(err.splitlines()) == 1 and name in err, err


# ------------------------------------------------------- proofs, docs, verify
ROOT = Path(__file__).resolve().parents[1]


def test_the_sanitizers_are_proven_and_documented() -> None:
    from proofs.registry import proof_for, prove_all, subjects

    sanitizers = [c for c in subjects() if c.__name__.endswith("Sanitizer")]
    assert {c.__name__ for c in sanitizers} == {"ThresholdSanitizer", "StreamingSanitizer"}
    for cls in sanitizers:
        held_to, _ = proof_for(cls)
        assert held_to is cls
        assert cls.__name__ in (ROOT / cls.docs).read_text()
    rows = prove_all(["ThresholdSanitizer", "StreamingSanitizer"], limit=16)
    assert rows and all(r.passed for r in rows), [r.detail for r in rows if not r.passed]
    assert {r.claim for r in rows} >= {"tree sensitivity", "disjoint blocks", "budget"}


def test_the_docs_name_every_tree_counter() -> None:
    """The page lists ``tree_counters()``; it went stale when issue 13 registered kary,
    honaker and elders (all three plug in, and the proofs cover them)."""
    text = (ROOT / "docs" / "quantiles.md").read_text()
    assert all(f"`{tree}`" in text for tree in tree_counters()), tree_counters()


def test_the_docs_example_prints_what_the_page_says() -> None:
    import doctest

    result = doctest.testfile(str(ROOT / "docs" / "quantiles.md"), module_relative=False)
    assert result.attempted >= 5 and result.failed == 0


def test_verify_suite_finds_no_violation() -> None:
    from dpref.sanitize.suite import sanitize_suite
    from dpref.verify import VerifyOptions

    assert sanitize_suite(VerifyOptions(mechanisms=("binary",))) == []
    rows = sanitize_suite(VerifyOptions(max_exhaustive=8))
    assert [r.mechanism for r in rows] == [
        "threshold plans",
        "tree counts, exact audit",
        "tree counts, sampled audit",
        "streaming output, sampled audit",
    ]
    assert all(r.failed == 0 for r in rows), [r.detail for r in rows]
