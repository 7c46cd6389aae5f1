"""The mechanism contract (docs/plans.md), inherited by every mechanism's tests.

Tumult-style: :class:`MechanismContract` holds every test; one test class per
declared example of every registered mechanism inherits it and only says how to
build the mechanism.  A mechanism that joins dpref is covered here by declaring its
examples — there is nothing to add to this file.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from fractions import Fraction
from typing import Any, ClassVar

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from strategies import bit_streams, junk, node_noise_for, seeds

from dpref import MECHANISMS, DprefError, HorizonError, Mechanism, PolynomialSum
from dpref.lower_bounds import prefix_decay
from dpref.mechanisms import Example

EPS = Fraction(7, 10)

# Statistical test of the per-step variance.
ALPHA = 1e-6
"""False-failure rate of the variance test (for the whole test, all steps together)."""
RUNS = 20_000
"""Independent runs; the relative standard error of the variance estimate is
sqrt((κ₄/σ⁴ + 2)/RUNS) ≤ sqrt(5/RUNS) ≈ 1.6 %, so a 10 % scale error (21 % in
variance) is ≥ 12 standard errors away."""
VAR_T = 40


def variance_z_scores(errors: np.ndarray, mech: Mechanism, horizon: int) -> np.ndarray:
    """z-scores of the mean squared error per step against the exact variance.

    With known mean 0, ``mean(e²)`` is unbiased for σ² and has variance
    ``(κ₄ + 2σ⁴)/N`` where, for ``e = Σ_n r_n z_n`` with ``z_n ~ Lap(b_n)``,
    ``σ² = Σ 2 r²b²`` and ``κ₄ = Σ 12 r⁴ b⁴`` (Laplace fourth cumulant 12b⁴); with
    Gaussian node noise ``σ² = Σ r²σ_n²`` and ``κ₄ = 0``.
    """
    plan = mech.plan(horizon)
    R = plan.R()
    b = plan.scales
    sigma2 = mech.variance(horizon)
    if plan.gaussian:
        kappa4 = np.zeros(horizon)
    else:
        kappa4 = np.asarray(R.power(4) @ (12.0 * b**4)).ravel()
    se = np.sqrt((kappa4 + 2.0 * sigma2**2) / errors.shape[0])
    return (np.mean(errors**2, axis=0) - sigma2) / se


def critical_z(steps: int) -> float:
    """Two-sided normal critical value with a Bonferroni split of ALPHA over the steps.

    z = Φ⁻¹(1 − ALPHA/(2·steps)) ≈ 6.2 for 40 steps.  The mean of RUNS i.i.d. squared
    errors is close to normal (its skewness is skew(e²)/√RUNS < 0.05 here).
    """
    return float(stats.norm.isf(ALPHA / (2 * steps)))


class MechanismContract(ABC):
    """Every test every mechanism must pass."""

    unbounded: ClassVar[bool] = False
    """Whether the mechanism runs without a horizon."""
    budget_name: ClassVar[str] = "epsilon"
    """The privacy keyword of the example: ``epsilon`` (pure) or ``rho`` (zCDP); the
    budget EPS is passed to it."""

    @abstractmethod
    def make(self, horizon: int | None, epsilon: Any = EPS) -> Mechanism:
        """Build the mechanism (``horizon`` is ignored by unbounded mechanisms); ``epsilon``
        is passed as :attr:`budget_name` (ε, or ρ for a zCDP example)."""

    @abstractmethod
    def example_kwargs(self, horizon: int) -> dict[str, Any]:
        """The example's keyword arguments at T = ``horizon`` (``horizon`` included when
        the mechanism is bounded), without ``epsilon``."""

    # --------------------------------------------------------------- plans
    @pytest.mark.parametrize("horizon", [1, 2, 7, 16, 40])
    def test_variance_counts_equal_variance_exact(self, horizon: int) -> None:
        """The vectorised form ``dpref frontier`` reads at large T is the exact variance."""
        m = self.make(horizon)
        counts = m.variance_counts(horizon)
        if counts is None:
            pytest.skip(f"{type(m).__name__} declares no variance_counts")
        units, n = counts
        if isinstance(units, Fraction):
            got = [units * int(c) for c in n]
        else:
            got = [
                sum((u * int(n[i, t]) for i, u in enumerate(units)), Fraction(0))
                for t in range(horizon)
            ]
        assert got == m.variance_exact(horizon)

    @pytest.mark.parametrize("horizon", range(1, 65))
    def test_plan_exact_checks(self, horizon: int) -> None:
        m = self.make(horizon)
        report = m.plan(horizon).check(m.variance_exact(horizon))
        assert report.passed, report
        assert {c.name for c in report.checks} == {"unbiased", "causal", "privacy", "variance"}
        # pure: the L1 sum is at most ε; zCDP: the L2 sum is at most 2ρ
        bound = m.declared_epsilon if m.rho is None else 2 * m.declared_rho
        assert report.privacy_sum <= bound == report.privacy_bound
        expected = m.expected_privacy_sum(horizon)
        if expected is not None:
            assert report.privacy_sum == expected
        if not self.unbounded:
            # a mechanism with a horizon spends exactly what it declares (2ρ for zCDP)
            assert report.privacy_sum == bound

    def test_plan_random_larger_horizons(self) -> None:
        # one T > 64 per example here (all ~40 examples); `dpref verify` (CI's first step)
        # checks every T ≤ 256 and four random T ≤ 2048 of every mechanism exactly (up to
        # its max_plan_steps)
        rng = np.random.default_rng(64)
        cap = self.make(16).max_plan_steps  # a dense plan (BlueTree) stops lower
        for horizon in sorted({min(int(t), cap) for t in rng.integers(65, 1500, 1)}):
            m = self.make(horizon)
            report = m.plan(horizon).check(m.variance_exact(horizon))
            assert report.passed, report

    @pytest.mark.parametrize("horizon", [1, 2, 3, 5, 8, 12])
    def test_plan_dense_cross_check(self, horizon: int) -> None:
        """The fast breakpoint check agrees with brute-force dense R·A = Q."""
        plan = self.make(horizon).plan(horizon)
        assert plan.check_unbiased_dense().passed
        assert plan.check_unbiased().passed

    def test_declared_budget_is_epsilon(self) -> None:
        """Pure: the declared terms add up to ε.  zCDP: they add up to the design ε = 1
        (each node's share), and ρ is declared exactly; there is no pure ε."""
        m = self.make(16)
        if m.rho is None:
            assert m.declared_budget() == m.declared_epsilon == EPS
            assert isinstance(m.declared_epsilon, Fraction)
            return
        assert m.declared_budget() == m.design_epsilon == 1
        assert m.declared_rho == EPS and isinstance(m.declared_rho, Fraction)
        with pytest.raises(DprefError, match="rho="):
            _ = m.declared_epsilon

    def test_per_node_epsilon(self) -> None:
        m = self.make(16)
        plan = m.plan(16)
        if m.rho is not None:  # per-node ρ_n = (w_nΔ)²/(2σ_n²), at most ρ
            per_node = plan.per_node_rho()
            assert len(per_node) == plan.n_nodes
            assert all(isinstance(e, Fraction) and 0 <= e <= EPS for e in per_node)
            assert all(e > 0 for n, e in enumerate(per_node) if plan.weight(n) != 0)
            return
        per_node = m.per_node_epsilon(16)
        assert len(per_node) == plan.n_nodes
        assert all(isinstance(e, Fraction) and 0 <= e <= EPS for e in per_node)
        # only a noise-only node (weight 0, SmoothBinary's) may cost nothing
        assert all(e > 0 for n, e in enumerate(per_node) if plan.weight(n) != 0)

    def test_canonical_order(self) -> None:
        """Nodes are sorted by release time, then by interval length (then instance)."""
        m = self.make(50)
        nodes = m.nodes(50)
        released = m.release_times(50)
        instance = nodes.weight_idx if isinstance(m, PolynomialSum) else None
        key = list(
            zip(
                released.tolist(),
                (nodes.hi - nodes.lo).tolist(),
                (instance if instance is not None else np.zeros(nodes.size, int)).tolist(),
                strict=True,
            )
        )
        assert key == sorted(key)

    # ----------------------------------------------------------- agreement
    @settings(max_examples=40)
    @given(data=st.data(), stream=bit_streams(1, 40))
    def test_online_batch_plan_agree(self, data: st.DataObject, stream: np.ndarray) -> None:
        horizon = stream.size
        m = self.make(horizon)
        z = data.draw(node_noise_for(m.plan(horizon).n_nodes))
        batch = m.release(stream, noise=z)
        plan_out = m.plan(horizon).output(stream, z)
        online = m.online(noise=z).run(stream)
        tol = 1e-9 * (1.0 + np.abs(z).sum())
        np.testing.assert_allclose(batch, plan_out, rtol=0, atol=tol)
        np.testing.assert_allclose(batch, online, rtol=0, atol=tol)

    @settings(max_examples=10)
    @given(stream=bit_streams(1, 200), seed=seeds)
    def test_seeded_online_equals_batch(self, stream: np.ndarray, seed: int) -> None:
        m = self.make(stream.size)
        batch = m.release(stream, rng=seed)
        online = m.online(rng=seed).run(stream)
        np.testing.assert_allclose(batch, online, rtol=1e-12, atol=1e-9)

    def test_release_many_rows_are_successive_releases(self) -> None:
        stream = np.random.default_rng(1).integers(0, 2, 33)
        m = self.make(33)
        many = m.release_many(stream, 4, rng=np.random.default_rng(9))
        gen = np.random.default_rng(9)
        one_by_one = np.array([m.release(stream, rng=gen) for _ in range(4)])
        assert many.shape == (4, 33) and many.dtype == np.float64
        np.testing.assert_array_equal(many, one_by_one)

    def test_release_is_reproducible_and_unbiased_shape(self) -> None:
        stream = np.ones(20)
        m = self.make(20)
        a, b = m.release(stream, rng=5), m.release(stream, rng=5)
        np.testing.assert_array_equal(a, b)
        assert a.shape == (20,)
        if m.decay() == prefix_decay():  # counting: the prefix sums themselves
            np.testing.assert_array_equal(m.target(stream), np.arange(1, 21))
        else:  # a decayed sum: Q x of the exact plan
            np.testing.assert_allclose(m.target(stream), m.plan(20).Q() @ stream, rtol=1e-12)

    # ------------------------------------------------------------ variance
    def test_empirical_variance_matches_exact(self) -> None:
        m = self.make(VAR_T)
        stream = np.random.default_rng(2).integers(0, 2, VAR_T)
        errors = m.release_many(stream, RUNS, rng=np.random.default_rng(3)) - m.target(stream)
        z = variance_z_scores(errors, m, VAR_T)
        crit = critical_z(VAR_T)
        assert np.max(np.abs(z)) < crit, f"max |z| = {np.max(np.abs(z)):.2f} >= {crit:.2f}"
        # power: the same test rejects a 10 % error in the noise scale either way
        for factor in (1.1, 0.9):
            z_bad = variance_z_scores(errors * factor, m, VAR_T)
            assert np.max(np.abs(z_bad)) >= crit, f"scale x{factor} not caught"

    def test_variance_is_closed_form_of_plan(self) -> None:
        m = self.make(64)
        assert m.variance_exact(64) == m.plan(64).variance_exact()
        np.testing.assert_allclose(m.variance(64), m.plan(64).variance(), rtol=1e-15)

    # ----------------------------------------------------------- bad input
    @pytest.mark.parametrize("eps", [0, -1, float("nan"), float("inf"), "-0.5", "x"])
    def test_bad_epsilon(self, eps: Any) -> None:
        """A junk ε (or ρ for a zCDP example) is refused naming it, before any noise."""
        with pytest.raises(DprefError, match=f"{self.budget_name}="):
            self.make(8, epsilon=eps)

    @pytest.mark.parametrize("eps", [True, 1j, [1.0], None])
    def test_epsilon_wrong_type(self, eps: Any) -> None:
        with pytest.raises((DprefError, TypeError), match=f"{self.budget_name}="):
            self.make(8, epsilon=eps)

    @pytest.mark.parametrize(
        "bad", [[0, 2, 1], [0, -1], [0.5], [np.nan], [np.inf], [[0, 1], [1, 0]], "0101", []]
    )
    def test_bad_stream(self, bad: Any) -> None:
        m = self.make(8)
        gen = np.random.default_rng(0)
        state = gen.bit_generator.state
        with pytest.raises(DprefError, match="stream"):
            m.release(bad, rng=gen)
        with pytest.raises(DprefError, match="stream"):
            m.release_many(bad, 3, rng=gen)
        assert gen.bit_generator.state == state, "noise was drawn before validation"

    @pytest.mark.parametrize("runs", [0, -3, 2.5, True, "4"])
    def test_bad_runs(self, runs: Any) -> None:
        with pytest.raises(DprefError, match="runs="):
            self.make(8).release_many([0, 1], runs)

    def test_bad_noise_length(self) -> None:
        m = self.make(8)
        n = m.plan(4).n_nodes
        with pytest.raises(DprefError, match="noise"):
            m.release([0, 1, 1, 0], noise=np.zeros(n + 1))
        with pytest.raises(DprefError, match="noise"):
            m.release([0, 1, 1, 0], noise=np.full(n, np.nan))

    def test_online_rejects_bad_items(self) -> None:
        counter = self.make(8).online(rng=1)
        for bad in (2, -1, 0.5, np.nan, "1", None):
            with pytest.raises(DprefError, match="x="):
                counter.step(bad)
        assert counter.t == 0
        counter.step(True)
        assert counter.t == 1

    def test_horizon_limits(self) -> None:
        if self.unbounded:
            m = self.make(None)
            assert m.horizon is None
            out = m.release(np.ones(300), rng=1)
            assert out.shape == (300,)
            return
        m = self.make(4)
        with pytest.raises(HorizonError, match="horizon=4"):
            m.release(np.ones(5))
        counter = m.online(rng=0)
        for _ in range(4):
            counter.step(1)
        with pytest.raises(HorizonError, match="t=5"):
            counter.step(1)

    # The junk tests below run on every example of every mechanism (~40 classes).  Each
    # keyword alone, release(stream), variance/plan(T) and online().step(x) also meet the
    # whole odd-value catalogue deterministically in tests/test_fuzz.py, so 20 random
    # examples each suffice here (junk_parameters, the combinations, keeps 60).
    @settings(max_examples=20)
    @given(eps=junk, horizon=junk)
    def test_junk_constructor(self, eps: Any, horizon: Any) -> None:
        try:
            m = self.make(horizon, epsilon=eps) if not self.unbounded else self.make(None, eps)
        except DprefError as exc:
            assert _names_one_of(str(exc), (self.budget_name, "horizon")), str(exc)
            return
        declared = m.declared_epsilon if m.rho is None else m.declared_rho
        assert isinstance(declared, Fraction)

    @settings(max_examples=60)
    @given(data=st.data())
    def test_junk_parameters(self, data: st.DataObject) -> None:
        """Junk in any subset of the mechanism's own parameters (several at once): a
        mechanism, or a DprefError naming one of the junk parameters."""
        m = self.make(16)
        cls = type(m)
        kwargs = self.example_kwargs(16)
        own = [p for p in cls.parameters() if p not in ("epsilon", "horizon")]
        chosen = data.draw(st.lists(st.sampled_from(own), unique=True)) if own else []
        for p in chosen:
            kwargs[p] = data.draw(junk, label=p)
        try:
            cls(**{self.budget_name: EPS}, **kwargs)
        except DprefError as exc:
            assert chosen and _names_one_of(str(exc), chosen), str(exc)

    @settings(max_examples=20)
    @given(stream=junk)
    def test_junk_release(self, stream: Any) -> None:
        m = self.make(6)
        gen = np.random.default_rng(0)
        before = gen.bit_generator.state
        try:
            out = m.release(stream, rng=gen)
        except DprefError as exc:
            assert _names_one_of(str(exc), ("stream",)), str(exc)
            assert gen.bit_generator.state == before
            return
        assert out.shape == np.asarray(stream).shape

    @settings(max_examples=20)
    @given(horizon=junk, x=junk)
    def test_junk_methods(self, horizon: Any, x: Any) -> None:
        """variance/plan with a junk T, online().step with a junk item."""
        m = self.make(6)
        for method in (m.variance, m.plan):
            try:
                method(horizon)
            except DprefError as exc:
                assert _names_one_of(str(exc), ("horizon",)), str(exc)
        gen = np.random.default_rng(0)
        counter = m.online(rng=gen)
        before = gen.bit_generator.state
        try:
            counter.step(x)
        except DprefError as exc:
            assert _names_one_of(str(exc), ("x",)), str(exc)
            assert gen.bit_generator.state == before


def _names_one_of(message: str, names: Any) -> bool:
    """Whether an error message names one of the parameters (``NAME=`` or ``NAME[i]=``)."""
    return any(
        re.search(rf"(?<![\w.-]){re.escape(n)}(\[\d+\])*=", message) is not None for n in names
    )


# ------------------------------------------------- one class per registered example
def _contract_for(cls: type[Mechanism], index: int, example: Example) -> type[MechanismContract]:
    """The contract test class of one declared example of a registered mechanism."""
    bounded = cls.needs_horizon if example.bounded is None else example.bounded

    def make(self: MechanismContract, horizon: Any, epsilon: Any = EPS) -> Mechanism:
        # parameters that depend on T are resolved at a valid T, so that a junk horizon
        # reaches the constructor's own check
        valid = type(horizon) is int and horizon >= 1
        kwargs = example.kwargs(cls, horizon if valid else 16)
        if bounded:
            kwargs["horizon"] = horizon
        return cls(**{example.budget_name: epsilon}, **kwargs)

    def example_kwargs(self: MechanismContract, horizon: int) -> dict[str, Any]:
        kwargs = example.kwargs(cls, horizon)
        if bounded:
            kwargs["horizon"] = horizon
        return kwargs

    label = example.label(cls, 16).replace("-", "_")
    name = "Test_" + "".join(ch if ch.isalnum() else "_" for ch in label).strip("_")
    return type(
        name,
        (MechanismContract,),
        {
            "make": make,
            "example_kwargs": example_kwargs,
            "unbounded": not bounded,
            "budget_name": example.budget_name,
        },
    )


for _cls in MECHANISMS.values():
    for _index, _example in enumerate(_cls.examples):
        _test_class = _contract_for(_cls, _index, _example)
        globals()[_test_class.__name__] = _test_class
