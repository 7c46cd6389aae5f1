"""Noise samplers: exact discrete Laplace and Gaussian (CKS 2020), Bernoulli(exp(−γ)), ints."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from dpref import Binary, DprefError, bits, bounded_integers, bounded_reals
from dpref.noise import (
    bernoulli_exp_neg,
    discrete_gaussian,
    discrete_gaussian_variance,
    discrete_laplace,
    discrete_laplace_variance,
    make_rng,
    standard_normal,
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


def dgauss_pmf(z: np.ndarray, sigma2: float) -> np.ndarray:
    support = np.arange(-400, 401)
    norm = np.exp(-(support**2) / (2 * sigma2)).sum()  # terms beyond |z| = 400 are < e^-800
    return np.exp(-(z.astype(np.float64) ** 2) / (2 * sigma2)) / norm


def dgauss_chisq_pvalue(sample: np.ndarray, sigma2: float, k: int) -> float:
    """Chi-square GOF of integer draws against N_Z(0, σ²) on bins −k..k plus two tails."""
    inner = np.arange(-k, k + 1)
    probs = dgauss_pmf(inner, sigma2)
    tail = (1 - probs.sum()) / 2
    expected = np.concatenate([[tail], probs, [tail]]) * sample.size
    observed = np.concatenate(
        [[np.sum(sample < -k)], [np.sum(sample == v) for v in inner], [np.sum(sample > k)]]
    )
    return float(stats.chisquare(observed, expected).pvalue)


@pytest.mark.parametrize(
    ("sigma2", "k", "seed"),
    [(Fraction(1, 3), 3, 21), (Fraction(9, 4), 6, 22), (Fraction(10), 9, 23)],
)
def test_discrete_gaussian_law_and_power(sigma2: Fraction, k: int, seed: int) -> None:
    """σ² = 1/3 (proposal scale t = 1), 9/4 (t = 2) and 10 (t = 4): the exact pmf passes
    at ALPHA, and a σ off by 10 % either way is rejected at the same ALPHA."""
    sample = discrete_gaussian(np.random.default_rng(seed), sigma2, 20_000)
    assert np.all(sample == np.round(sample))
    s2 = float(sigma2)
    assert dgauss_chisq_pvalue(sample, s2, k) > ALPHA
    assert dgauss_chisq_pvalue(sample, s2 * 1.1**2, k) < ALPHA
    assert dgauss_chisq_pvalue(sample, s2 * 0.9**2, k) < ALPHA


def test_discrete_gaussian_variance_is_a_tight_upper_bound() -> None:
    for sigma2 in (Fraction(1, 100), Fraction(1, 10), Fraction(1, 2), Fraction(1), Fraction(7, 3)):
        z = np.arange(-400, 401)
        direct = float((z.astype(np.float64) ** 2 * dgauss_pmf(z, float(sigma2))).sum())
        got = discrete_gaussian_variance(sigma2)
        assert got <= float(sigma2)
        assert direct * (1 - 1e-12) <= got <= direct * (1 + 1e-12)
    sample = discrete_gaussian(np.random.default_rng(24), Fraction(1, 4), 20_000)
    var = discrete_gaussian_variance(Fraction(1, 4))
    # z-test on mean(Z²), Var(Z²) estimated from the sample; Φ⁻¹(1 − ALPHA/2) ≈ 4.9
    se = np.std(sample**2) / math.sqrt(sample.size)
    assert abs(np.mean(sample**2) - var) < stats.norm.isf(ALPHA / 2) * se
    # power: the continuous σ² (1/4, about 17 % above the discrete variance 0.213) fails
    assert abs(np.mean(sample**2) - 0.25) > stats.norm.isf(ALPHA / 2) * se


@pytest.mark.parametrize(
    ("sigma2", "size"),
    [(Fraction(0), 3), (Fraction(-1), 3), (2.0, 3), (Fraction(1), -1), (Fraction(1), 2.5)],
)
def test_discrete_gaussian_bad_input_leaves_rng_untouched(sigma2: object, size: object) -> None:
    rng = np.random.default_rng(25)
    before = rng.bit_generator.state
    with pytest.raises(DprefError, match=r"sigma2=|size="):
        discrete_gaussian(rng, sigma2, size)  # type: ignore[arg-type]
    assert rng.bit_generator.state == before
    with pytest.raises(DprefError, match="sigma2="):
        discrete_gaussian_variance(Fraction(0))


def test_standard_normal_is_the_generator_draw() -> None:
    a = standard_normal(np.random.default_rng(26), (2, 3))
    b = np.random.default_rng(26).standard_normal((2, 3))
    np.testing.assert_array_equal(a, b)
