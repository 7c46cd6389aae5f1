"""The ``samplers`` verify suite: exact laws pass on the real samplers and fail,
deterministically, on a single-point bug of each kind (the power check)."""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import pytest

from dpref import noise
from dpref.verify import VerifyOptions
from dpref.verify.samplers import ExpSum, enumerate_paths, sampler_suite


def _rows() -> dict[str, tuple[int, str]]:
    return {r.mechanism: (r.failed, r.detail) for r in sampler_suite(VerifyOptions())}


def test_samplers_pass_on_the_real_code() -> None:
    rows = _rows()
    assert set(rows) == {"bernoulli_exp", "discrete_laplace", "discrete_gaussian", "continuous"}
    assert all(failed == 0 for failed, _ in rows.values()), rows


def test_discrete_laplace_with_p0_doubled_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    # the "negative zero" rejection dropped: P[0] doubled (≈ +ln 2 per node)
    def attempt(rng: Any, s: int, t: int, bexp: Any) -> int | None:
        u = noise.uniform_below(rng, t)
        if not bexp(rng, Fraction(u, t)):
            return None
        v = 0
        while bexp(rng, Fraction(1)):
            v += 1
        y = (u + t * v) // s
        return -y if noise._bernoulli(rng, 1, 2) else y

    monkeypatch.setattr(noise, "_discrete_laplace_attempt", attempt)
    failed, detail = _rows()["discrete_laplace"]
    assert failed >= 5 and "A(z)" in detail


def test_discrete_gaussian_acceptance_missing_a_factor_2_fails(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def accept(rng: Any, sigma2: Fraction, t: int, y: int, bexp: Any) -> bool:
        d = abs(y) - sigma2 / t
        return bool(bexp(rng, d * d / sigma2))

    monkeypatch.setattr(noise, "_discrete_gaussian_accept", accept)
    failed, _ = _rows()["discrete_gaussian"]
    assert failed >= 4


def test_bernoulli_exp_off_by_a_factor_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    def coin(rng: Any, gamma: Fraction) -> bool:  # the k-loop tests γ/2 instead of γ/k
        while gamma > 1:
            if not coin(rng, Fraction(1)):
                return False
            gamma -= 1
        k = 1
        while noise._bernoulli(rng, gamma.numerator, gamma.denominator * 2):
            k += 1
        return k % 2 == 1

    monkeypatch.setattr(noise, "bernoulli_exp_neg", coin)
    failed, _ = _rows()["bernoulli_exp"]
    assert failed > 0


def test_laplace_of_unit_variance_instead_of_unit_scale_fails(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(
        noise, "standard_laplace", lambda rng, size: rng.laplace(0.0, 1 / math.sqrt(2), size)
    )
    failed, detail = _rows()["continuous"]
    assert failed == 1 and "standard quantile" in detail


def test_normal_of_the_wrong_scale_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(noise, "standard_normal", lambda rng, size: 2 * rng.standard_normal(size))
    failed, _ = _rows()["continuous"]
    assert failed == 1


def test_expsum_is_exact_and_enumeration_sums_to_one() -> None:
    e = ExpSum.exp_neg(Fraction(1, 3))
    assert e * e == ExpSum.exp_neg(Fraction(2, 3))
    assert (ExpSum.const(1) - e) + e == ExpSum.const(1)
    law, cut = enumerate_paths(lambda s: s.integers(0, 3) + s.integers(0, 2), 2)
    assert not cut.terms and sum(law.values(), ExpSum()) == ExpSum.const(1)
    assert law[0] == ExpSum.const(Fraction(1, 6))


def test_observing_discrete_draws_sees_them_and_changes_nothing() -> None:
    import numpy as np

    plain = noise.discrete_laplace(np.random.default_rng(3), Fraction(7, 3), 20)
    seen: list[tuple[str, Fraction, list[float]]] = []
    with noise.observe_discrete_draws(lambda k, p, v: seen.append((k, p, v.tolist()))):
        watched = noise.discrete_laplace(np.random.default_rng(3), Fraction(7, 3), 20)
        g = noise.discrete_gaussian(np.random.default_rng(3), Fraction(5, 2), 3)
    assert watched.tolist() == plain.tolist()
    assert seen == [
        ("discrete", Fraction(7, 3), plain.tolist()),
        ("discrete_gaussian", Fraction(5, 2), g.tolist()),
    ]
    assert not noise._OBSERVERS  # removed on leaving the block


def test_discrete_laplace_with_scale_inverted_in_the_wrapper_fails(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real = noise._discrete_laplace_one

    def one(rng: Any, s: int, t: int, bexp: Any = None) -> int:
        return real(rng, t, s, bexp)  # DLap(s/t) instead of DLap(t/s)

    monkeypatch.setattr(noise, "_discrete_laplace_one", one)
    failed, detail = _rows()["discrete_laplace"]
    assert failed > 0 and "repeated" in detail


def test_a_sampler_that_never_accepts_fails_instead_of_hanging(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(noise, "_discrete_gaussian_accept", lambda *a: False)
    failed, detail = _rows()["discrete_gaussian"]
    assert failed > 0 and "more uniform integers than allowed" in detail
