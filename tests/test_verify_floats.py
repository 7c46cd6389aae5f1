"""The ``floats`` verify suite: it passes on the real code and fails, deterministically, on
each bug class it exists for (the power check: one monkeypatched single-point bug each)."""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np
import pytest

from dpref.mechanisms import MECHANISMS, Mechanism, counting, hybrid, trees
from dpref.mechanisms import base as mech_base
from dpref.verify import VerifyOptions
from dpref.verify.floats import ScriptedGenerator, floats_suite


def _failed(name: str) -> tuple[int, str]:
    (row,) = floats_suite(VerifyOptions(mechanisms=(name,)))
    assert row.suite == "floats" and row.mechanism == name and row.checks > 0
    return row.failed, row.detail


@pytest.mark.parametrize("name", ["binary", "kary", "hybrid", "sqrt"])
def test_floats_pass_on_the_real_code(name: str) -> None:
    failed, detail = _failed(name)
    assert failed == 0, detail


def test_every_mechanism_runs_a_discrete_kind_or_says_it_refuses() -> None:
    # cheap: read the row's summary of the one mechanism with all four kinds
    failed, detail = _failed("smooth")
    assert failed == 0, detail
    assert "discrete, discrete_gaussian, gaussian, laplace" in detail


def test_gaussian_sigma_rounded_to_nearest_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    # float(√σ²) instead of the ceil-rounding helper: about half the σ fall below
    monkeypatch.setattr(mech_base, "ceil_sqrt_float", lambda v: math.sqrt(float(v)))
    failed, detail = _failed("binary")
    assert failed > 0 and "unsafe rounding" in detail


def test_laplace_scale_rounded_to_nearest_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(counting, "ceil_float", float)
    failed, detail = _failed("simple2")
    assert failed > 0 and "unsafe rounding" in detail


def test_online_tree_with_level_zero_sigma_everywhere_fails(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real = trees._TreeOnline.__init__

    def init(self: Any, m: Any, rng: Any, noise: Any) -> None:
        real(self, m, rng, noise)
        self._scales_f = [self._scales_f[0]] * len(self._scales_f)

    monkeypatch.setattr(trees._TreeOnline, "__init__", init)
    failed, detail = _failed("kary")
    assert failed > 0 and "online draw" in detail


def test_hybrid_online_with_the_wrong_instance_scale_fails(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real = hybrid._HybridOnline.step

    def step(self: Any, x: Any) -> float:
        out = real(self, x)
        if self._k >= 2:  # instance k scaled like instance k − 1
            self._bin_scale_f = ceil_float_prev(self.mechanism, self._k)
        return out

    def ceil_float_prev(m: Any, k: int) -> float:
        return float(mech_base.ceil_float(m._bin_scale(k - 1)))

    monkeypatch.setattr(hybrid._HybridOnline, "step", step)
    failed, detail = _failed("hybrid")
    assert failed > 0 and "online draw" in detail


def test_discrete_noise_shared_by_the_nodes_of_one_scale_fails(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Binary with one discrete draw per scale: out₂ − out₁ = x₂ exactly (unbounded loss)
    real = Mechanism.draw_node

    def draw_node(self: Any, rng: np.random.Generator, scale: Fraction, weight: Fraction) -> float:
        cache = self.__dict__.setdefault("_shared", {})
        if scale not in cache:
            cache[scale] = real(self, rng, scale, weight)
        return float(cache[scale])

    monkeypatch.setattr(MECHANISMS["binary"], "draw_node", draw_node)
    failed, detail = _failed("binary")
    assert failed > 0 and "sampler draws" in detail


def test_release_many_sharing_draws_between_runs_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    real = Mechanism.node_noise

    def node_noise(self: Any, horizon: int, rng: Any = None, runs: int | None = None) -> Any:
        one = real(self, horizon, rng)
        return one if runs is None else np.tile(one, (runs, 1))

    monkeypatch.setattr(Mechanism, "node_noise", node_noise)
    failed, detail = _failed("simple1")
    assert failed > 0 and "release_many" in detail


def test_scripted_generator_counts_and_refuses_non_standard_draws() -> None:
    gen = ScriptedGenerator("powers")
    assert gen.laplace(0.0, 1.0, (2, 2)).tolist() == [[1.0, -1.0], [2.0, -2.0]]
    assert gen.drawn == 4
    with pytest.raises(ValueError, match="not a standard draw"):
        gen.laplace(0.0, 2.0, 3)


def test_a_draw_of_the_wrong_scale_fails_the_row_instead_of_crashing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from dpref import noise

    monkeypatch.setattr(noise, "standard_laplace", lambda rng, size: rng.laplace(0.0, 0.5, size))
    monkeypatch.setattr(mech_base, "standard_laplace", noise.standard_laplace)
    failed, detail = _failed("simple1")
    assert failed > 0 and "not a standard draw" in detail


def test_the_instrumented_generators_validate_their_arguments() -> None:
    from dpref.errors import DprefError
    from dpref.noise import observe_discrete_draws
    from dpref.verify.floats import BudgetedGenerator

    with pytest.raises(DprefError, match="mode="):
        ScriptedGenerator("ones")
    with pytest.raises(DprefError, match="budget="):
        BudgetedGenerator(1, budget=0)
    with pytest.raises(DprefError, match="observer="), observe_discrete_draws(3):  # type: ignore[arg-type]
        pass
