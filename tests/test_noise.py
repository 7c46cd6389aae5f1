"""Noise samplers: exact discrete Laplace (CKS 2020), Bernoulli(exp(−γ)), uniform ints."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from dpref import Binary, DprefError, bits, bounded_integers, bounded_reals
from dpref.noise import (
    bernoulli_exp_neg,
    discrete_laplace,
    discrete_laplace_variance,
    make_rng,
    uniform_below,
)

ALPHA = 1e-6
"""False-failure rate of every goodness-of-fit test in this module."""


def dlap_pmf(z: np.ndarray, scale: float) -> np.ndarray:
    q = math.exp(-1.0 / scale)
    return (1 - q) / (1 + q) * q ** np.abs(z)


def chisq_pvalue(sample: np.ndarray, scale: float, k: int) -> float:
    """Chi-square GOF of integer draws against DLap(scale) on bins −k..k plus two tails."""
    inner = np.arange(-k, k + 1)
    probs = dlap_pmf(inner, scale)
    tail = (1 - probs.sum()) / 2
    expected = np.concatenate([[tail], probs, [tail]]) * sample.size
    observed = np.concatenate(
        [[np.sum(sample < -k)], [np.sum(sample == v) for v in inner], [np.sum(sample > k)]]
    )
    return float(stats.chisquare(observed, expected).pvalue)


def test_discrete_laplace_law_and_power() -> None:
    scale = Fraction(3, 2)
    sample = discrete_laplace(np.random.default_rng(11), scale, 20_000)
    assert np.all(sample == np.round(sample))
    # the true law passes at ALPHA ...
    assert chisq_pvalue(sample, 1.5, 6) > ALPHA
    # ... and a 10 % scale error is rejected at the same ALPHA (power check)
    assert chisq_pvalue(sample, 1.65, 6) < ALPHA
    assert chisq_pvalue(sample, 1.35, 6) < ALPHA


def test_discrete_laplace_variance_formula() -> None:
    sample = discrete_laplace(np.random.default_rng(12), Fraction(2), 20_000)
    var = discrete_laplace_variance(Fraction(2))
    # z-test on mean(Z²); Var(Z²) estimated from the sample, Φ⁻¹(1 − ALPHA/2) ≈ 4.9
    se = np.std(sample**2) / math.sqrt(sample.size)
    assert abs(np.mean(sample**2) - var) < stats.norm.isf(ALPHA / 2) * se


@pytest.mark.parametrize("gamma", [Fraction(0), Fraction(1, 3), Fraction(1), Fraction(7, 3)])
def test_bernoulli_exp_neg(gamma: Fraction) -> None:
    rng = np.random.default_rng(13)
    n = 20_000
    hits = sum(bernoulli_exp_neg(rng, gamma) for _ in range(n))
    p = math.exp(-float(gamma))
    assert stats.binomtest(hits, n, p).pvalue > ALPHA
    wrong = min(1.0, p * 1.1) if p < 0.9 else p * 0.9
    assert stats.binomtest(hits, n, wrong).pvalue < ALPHA


def test_uniform_below_big_integers() -> None:
    rng = np.random.default_rng(14)
    n = 3 * 2**64
    draws = [uniform_below(rng, n) for _ in range(3_000)]
    assert all(0 <= d < n for d in draws)
    counts = np.bincount([d // 2**64 for d in draws], minlength=3)
    assert stats.chisquare(counts).pvalue > ALPHA


def test_discrete_noise_mechanism_gives_integers() -> None:
    m = Binary(epsilon=Fraction(1, 2), horizon=16, noise="discrete")
    out = m.release(np.ones(16), rng=3)
    assert np.all(out == np.round(out))
    online = m.online(rng=3).run(np.ones(16))
    np.testing.assert_array_equal(out, online)
    assert np.all(m.variance(16) > 0)


def test_discrete_noise_needs_integer_domain() -> None:
    with pytest.raises(DprefError, match="noise='discrete'"):
        Binary(epsilon=1, horizon=4, domain=bounded_reals(0, 1), noise="discrete")
    Binary(epsilon=1, horizon=4, domain=bounded_integers(-2, 5), noise="discrete")


def test_bad_noise_kind_and_rng() -> None:
    with pytest.raises(DprefError, match="noise="):
        Binary(epsilon=1, horizon=4, noise="gaussian")  # type: ignore[arg-type]
    for bad in (-1, "seed", 1.5, True):
        with pytest.raises(DprefError, match="rng="):
            make_rng(bad)
    assert bits().sensitivity == 1
