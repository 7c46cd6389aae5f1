"""Regression tests for defects found in the adversarial review of the privacy paths."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

import dpref
from dpref import DprefError


@pytest.mark.parametrize("eps", [5e-324, 1e-308, "1e-400", Fraction(1, 10**400)])
@pytest.mark.parametrize("name", sorted(dpref.MECHANISMS))
def test_tiny_epsilon_is_a_parameter_error(name: str, eps: object) -> None:
    """A Δ/ε that overflows a float scale used to raise a raw OverflowError after drawing."""
    cls = dpref.MECHANISMS[name]
    extra = {"window": 4, "alpha": Fraction(1, 2), "c": 2, "beta": Fraction(1, 2)}
    kwargs = {k: v for k, v in extra.items() if k in cls.__init__.__code__.co_varnames}
    with pytest.raises(dpref.ParameterError, match="epsilon="):
        cls(epsilon=eps, horizon=8, **kwargs).release([1, 0, 1])


def test_scale_overflow_leaves_the_generator_untouched() -> None:
    m = dpref.SimpleI(epsilon=Fraction(1, 2**850), horizon=2**200)  # scale T/ε = 2^1050
    gen = np.random.default_rng(0)
    before = gen.bit_generator.state
    with pytest.raises(dpref.ParameterError):
        m.release([1, 0], rng=gen)
    assert gen.bit_generator.state == before


@pytest.mark.parametrize("noise", [[["a", "b"]], [[1.0], [1.0, 2.0]]])
def test_release_many_bad_noise_is_a_dpref_error(noise: object) -> None:
    with pytest.raises(DprefError, match="noise"):
        dpref.Binary(epsilon=1, horizon=4).release_many([1, 0], 2, noise=noise)


def test_runs_too_large_is_a_dpref_error() -> None:
    with pytest.raises(dpref.ParameterError, match="runs="):
        dpref.Binary(epsilon=1, horizon=4).release_many([1, 0], 10**20)


@pytest.mark.parametrize("bound", ["a", None, 1.5])
def test_bounded_integers_bad_bounds(bound: object) -> None:
    with pytest.raises(DprefError, match="lower="):
        dpref.bounded_integers(bound, 5)  # type: ignore[arg-type]
