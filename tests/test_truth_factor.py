"""One source of truth for the factorizations and the Gaussian layer (issue 23).

A subclass whose column norm (the code's scale function) is off by one step changes the
noise that is drawn, and fails both the proofs (``proofs.prove``) and ``dpref verify``'s
plan suite; a class whose Gaussian node variance is off by a factor fails the zCDP claims;
each function a "proven about the code" claim evaluates, when broken, fails that claim.
"""

from __future__ import annotations

import importlib
from fractions import Fraction
from typing import Any

import numpy as np
import pytest

from dpref import BLT, Binary, SqrtFactorization
from dpref.mechanisms import MECHANISMS
from dpref.mechanisms.base import EXACT
from dpref.mechanisms.factorization import blt as blt_module
from dpref.mechanisms.factorization import sqrt as sqrt_module
from dpref.verify import VerifyOptions
from dpref.verify.plans import plan_suite
from proofs import FAILED, PROVEN, prove
from proofs.core import run_claim

# The proof modules bind the functions they evaluate at import; import them now, before any
# test below patches those functions, so that a patch cannot outlive its test through them.
importlib.import_module("proofs.factorization")
importlib.import_module("proofs.zcdp")


class ShortSqrt(SqrtFactorization):
    """S₁ and S₂ one coefficient short (the column norm of T − 1): too little noise."""

    def s1(self, horizon: Any, ops: Any = EXACT) -> Any:
        return super().s1(horizon - 1 if ops is not EXACT or horizon > 1 else horizon, ops)

    def s2(self, horizon: Any, ops: Any = EXACT) -> Any:
        return super().s2(horizon - 1 if ops is not EXACT or horizon > 1 else horizon, ops)


class ShortBLT(BLT):
    """The same bug in a BLT."""

    def s1(self, horizon: Any, ops: Any = EXACT) -> Any:
        return super().s1(horizon - 1 if ops is not EXACT or horizon > 1 else horizon, ops)

    def s2(self, horizon: Any, ops: Any = EXACT) -> Any:
        return super().s2(horizon - 1 if ops is not EXACT or horizon > 1 else horizon, ops)


class HalfVariance(Binary):
    """A Gaussian node variance half the rule's (σ² = |w|Δb/(4ρ)): too little noise."""

    def node_variance(self, scale: Fraction, weight: Fraction = Fraction(1)) -> Fraction:
        return super().node_variance(scale, weight) / (2 if self.rho is not None else 1)


def _claim(rows: list[Any], name: str) -> Any:
    return next(r for r in rows if r.claim == name)


@pytest.mark.parametrize(("good", "bad"), [(SqrtFactorization, ShortSqrt), (BLT, ShortBLT)])
def test_a_short_column_norm_changes_the_draws(good: type[Any], bad: type[Any]) -> None:
    for privacy in ({"epsilon": 1}, {"rho": Fraction(1, 2)}):
        m, b = good(horizon=16, **privacy), bad(horizon=16, **privacy)
        z_good, z_bad = m.node_noise(16, rng=5), b.node_noise(16, rng=5)
        assert not np.array_equal(z_good, z_bad)
        ratio = b.node_scale() / m.node_scale()  # the same draws, scaled by the node scale
        expected = z_good * (float(ratio) if "epsilon" in privacy else float(ratio) ** 0.5)
        np.testing.assert_allclose(z_bad, expected, rtol=1e-12)
        assert b.node_scale() < m.node_scale()


@pytest.mark.parametrize("bad", [ShortSqrt, ShortBLT])
def test_a_short_column_norm_fails_the_budget_claims(bad: type[Any]) -> None:
    from proofs import factorization as fz

    claims = [fz._sqrt_budget, fz._sqrt_zcdp] if bad is ShortSqrt else [fz._blt_budget]
    for fn in claims:
        row = run_claim("x", fn.__name__, lambda fn=fn: fn(bad))
        assert row.status == FAILED, row
    # the plans (checked for T ≤ 64) catch it too: the privacy sum exceeds ε / 2ρ
    assert fz._plan_check(bad(epsilon=1, horizon=8), 8) is not None


@pytest.mark.slow
@pytest.mark.parametrize("bad", [ShortSqrt, ShortBLT])
def test_a_short_column_norm_fails_prove(bad: type[Any]) -> None:
    rows = prove(bad, 4)
    assert _claim(rows, "budget").status == FAILED
    assert _claim(rows, "plan = closed forms").status == FAILED


@pytest.mark.parametrize(("name", "bad"), [("sqrt", ShortSqrt), ("blt", ShortBLT)])
def test_a_short_column_norm_fails_verify(
    name: str, bad: type[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    opts = VerifyOptions(max_exhaustive=6, random_horizons=0, mechanisms=(name,))
    assert all(r.failed == 0 for r in plan_suite(opts))
    monkeypatch.setitem(MECHANISMS, name, bad)
    rows = plan_suite(opts)
    assert rows and all(r.failed > 0 for r in rows)


def test_a_halved_gaussian_variance_fails_the_zcdp_claims_and_verify(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from proofs.zcdp import gaussian_claims

    m, b = Binary(rho=Fraction(1, 2), horizon=16), HalfVariance(rho=Fraction(1, 2), horizon=16)
    assert float(np.asarray(b.noise_multipliers(16)).max()) < float(
        np.asarray(m.noise_multipliers(16)).max()
    )
    rows = {r.claim: r for r in gaussian_claims(HalfVariance, 8)}
    assert rows["zCDP node rule"].status == FAILED
    assert rows["zCDP budget"].status == FAILED
    assert rows["zCDP budget = plans(T)"].status == FAILED
    good = {r.claim: r for r in gaussian_claims(Binary, 8)}
    assert good["zCDP node rule"].status == PROVEN and good["zCDP budget"].status == PROVEN
    opts = VerifyOptions(max_exhaustive=6, random_horizons=0, mechanisms=("binary",))
    monkeypatch.setitem(MECHANISMS, "binary", HalfVariance)
    assert any(r.failed > 0 for r in plan_suite(opts))


# ------------------------------------------ each evaluated function, broken, fails its claim
def _wrong_ratio(k: Any) -> tuple[Any, Any]:
    return 2 * k - 1, 2 * k + 1


def _wrong_merge(left: Any, right: Any) -> Any:
    p1, q1, r1 = left
    p2, q2, r2 = right
    return p1 * p2, q1 * q2, r1 * q2 + r2 * q1  # forgets the left product on the right sum


_TAIL = sqrt_module.sqrt_s2_tail


def _wrong_tail(horizon: Any, start: Any, ns: Any) -> Any:
    return _TAIL(horizon, start, ns) / 2


def _wrong_step(state: Any, z: Any, theta: Any, omega: Any) -> Any:
    w = z - sum(o * s for o, s in zip(omega, state, strict=True))
    return w, [t * v + z for t, v in zip(theta, state, strict=True)]  # adds z, not w


def _wrong_column_sum(pairs: Any, n: Any, number: Any) -> Any:
    total = number(Fraction(1))
    for w, t in pairs:
        total += number(w) * (1 - number(t) ** (n - 1)) / (1 - number(t))
    return total


@pytest.mark.parametrize(
    ("module", "attr", "wrong", "claim"),
    [
        (sqrt_module, "sqrt_ratio", _wrong_ratio, "_sqrt_coefficients"),
        (sqrt_module, "sqrt_ratio", _wrong_ratio, "_sqrt_budget"),
        (sqrt_module, "_split_merge", _wrong_merge, "_sqrt_zcdp"),
        (sqrt_module, "sqrt_s2_tail", _wrong_tail, "_sqrt_zcdp"),
        (blt_module, "blt_step", _wrong_step, "_blt_release"),
        (blt_module, "blt_column_sum", _wrong_column_sum, "_blt_budget"),
    ],
)
def test_a_broken_evaluated_function_fails_its_claim(
    module: Any, attr: str, wrong: Any, claim: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from proofs import factorization as fz

    cls = BLT if module is blt_module else SqrtFactorization
    fn = getattr(fz, claim)
    assert run_claim("x", claim, lambda: fn(cls)).status == PROVEN
    monkeypatch.setattr(module, attr, wrong)
    assert run_claim("x", claim, lambda: fn(cls)).status == FAILED


def test_the_release_scales_come_from_one_function() -> None:
    """node_scale, nodes(), the plan, budget_terms and gaussian_terms read laplace_scale /
    gaussian_variance: the same Fraction everywhere."""
    for cls in (SqrtFactorization, BLT):
        pure = cls(epsilon=Fraction(7, 10), horizon=20)
        b = pure.laplace_scale(20)
        assert pure.node_scale() == pure.design_scale() == pure.plan().noise_scale == b
        assert pure.nodes(20).scale_table == (b,) and pure.budget_terms()[0].scale == b
        gauss = cls(rho=Fraction(1, 3), horizon=20)
        v = gauss.gaussian_variance(20)
        assert gauss.node_scale() == gauss.plan().noise_scale == gauss.unit_variance() == v
        assert gauss.gaussian_terms()[0].scale == v
        assert Fraction(gauss.noise_multiplier(Fraction(1))) ** 2 >= v
