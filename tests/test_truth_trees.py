"""One source of truth for the tree family (issue 23): KaryTree, Honaker, Elders.

A subclass whose level function or scale function is off (by one level, by a factor)
changes what the release draws, and fails ``proofs.prove`` and ``dpref verify`` (the plans
suite); a subclass whose *declaration* alone claims one level too few draws the same noise
and fails ``prove`` and verify's proofs suite.  And each symbolic claim fails when the
function it evaluates is monkeypatched wrong.  No statistics: exact comparisons.
"""

from __future__ import annotations

import importlib
from fractions import Fraction
from typing import Any

import numpy as np
import pytest

import dpref.mechanisms
import dpref.mechanisms.elders as elders_module
import dpref.mechanisms.trees as trees_module
from dpref import Elders, Honaker, KaryTree
from dpref.mechanisms.base import EXACT, BudgetTerm
from dpref.mechanisms.tree_arith import uniform_split
from dpref.verify import VerifyOptions
from dpref.verify.plans import plan_suite
from proofs.registry import prove

# The proof modules bind the functions they evaluate at import; import them now, before any
# test below patches those functions, so that a patch cannot outlive its test through them.
importlib.import_module("proofs.trees")
importlib.import_module("proofs.elders")

pytest.importorskip("z3")

LIMIT = 16
"""The exhaustive limit of the proofs run here (the symbolic claims do not depend on it)."""


def _one_short(L: Any) -> Any:
    """L − 1, but at least 1 for an int (a tree needs a level)."""
    return max(L - 1, 1) if isinstance(L, int) else L - 1


class KaryOneLevelShort(KaryTree):
    """The code's level function is one short: uniform scales (L−1)Δ/ε, under-noised."""

    def levels_at(self, horizon: Any, ops: Any = EXACT) -> Any:
        return _one_short(super().levels_at(horizon, ops))


class KaryHalfScale(KaryTree):
    """The code's level-scale function halves the scale: 2ε spent."""

    def level_scale(self, share: Any, sensitivity: Any = None) -> Any:
        return super().level_scale(share, sensitivity) / 2


class KaryDeclaresOneLevelFewer(KaryTree):
    """Only the declaration claims one level too few (the issue's surviving bug)."""

    def budget_terms(self, ops: Any = EXACT, **s: Any) -> list[BudgetTerm]:
        (term,) = super().budget_terms(ops, **s)
        L = term.membership - 1
        eps = s.get("epsilon", self.design_epsilon)
        return [
            BudgetTerm("level", L, self.level_scale(uniform_split(eps, L), s.get("sensitivity")))
        ]


class HonakerOneLevelShort(Honaker):
    def levels_at(self, horizon: Any, ops: Any = EXACT) -> Any:
        return _one_short(super().levels_at(horizon, ops))


class HonakerDeclaresOneLevelFewer(Honaker):
    def budget_terms(self, ops: Any = EXACT, **s: Any) -> list[BudgetTerm]:
        (term,) = super().budget_terms(ops, **s)
        L = term.membership - 1
        eps = s.get("epsilon", self.design_epsilon)
        return [
            BudgetTerm("level", L, self.level_scale(uniform_split(eps, L), s.get("sensitivity")))
        ]


class EldersOneLevelShort(Elders):
    def levels_at(self, horizon: Any, ops: Any = EXACT) -> Any:
        return _one_short(super().levels_at(horizon, ops))


class EldersHalfScale(Elders):
    def node_scale(self, levels: Any, sensitivity: Any = None, epsilon: Any = None) -> Any:
        return super().node_scale(levels, sensitivity, epsilon) / 2


class EldersDeclaresOneLevelFewer(Elders):
    def budget_terms(self, ops: Any = EXACT, **s: Any) -> list[BudgetTerm]:
        (term,) = super().budget_terms(ops, **s)
        L = term.membership - 1
        return [BudgetTerm("level", L, self.node_scale(L, s.get("sensitivity"), s.get("epsilon")))]


def _failed(cls: type[Any]) -> set[str]:
    return {r.claim for r in prove(cls, LIMIT) if not r.passed}


def _noise(m: Any, horizon: int) -> Any:
    return m.release(np.zeros(horizon), rng=20261125)


# ------------------------------------------------------ a wrong code function is drawn
@pytest.mark.parametrize(
    ("sub", "base", "kw", "ratio"),
    [
        (KaryOneLevelShort, KaryTree, {"k": 3}, Fraction(2, 3)),  # L = 3 at T = 16
        (KaryHalfScale, KaryTree, {"k": 3}, Fraction(1, 2)),
        (HonakerOneLevelShort, Honaker, {}, None),
        (EldersOneLevelShort, Elders, {"k": 3}, None),  # fewer levels: another layout
        (EldersHalfScale, Elders, {"k": 3}, Fraction(1, 2)),
    ],
)
def test_a_wrong_level_or_scale_function_changes_the_draws_and_fails(
    monkeypatch: pytest.MonkeyPatch, sub: Any, base: Any, kw: Any, ratio: Any
) -> None:
    T = 16
    good, bad = base(epsilon=1, horizon=T, **kw), sub(epsilon=1, horizon=T, **kw)
    assert not np.array_equal(_noise(good, T), _noise(bad, T))  # the release draws it
    if ratio is not None:  # same draws, every node's scale times the ratio
        np.testing.assert_allclose(_noise(bad, T), _noise(good, T) * float(ratio), rtol=1e-12)
    assert {"budget"} <= _failed(sub)
    monkeypatch.setitem(dpref.mechanisms.MECHANISMS, base.name, sub)
    opts = VerifyOptions(max_exhaustive=16, random_horizons=0, mechanisms=(base.name,))
    try:
        rows = plan_suite(opts)
    except IndexError:  # the plan cannot even be built: dpref verify stops with an error
        assert sub.levels_at is not base.levels_at
        return
    assert sum(r.failed for r in rows) > 0


@pytest.mark.parametrize("sub", [KaryOneLevelShort, HonakerOneLevelShort, EldersOneLevelShort])
def test_a_short_level_function_fails_the_membership_claim(sub: Any) -> None:
    assert {"membership", "budget"} <= _failed(sub)


# --------------------------------------------- a wrong declaration fails prove and verify
@pytest.mark.parametrize(
    ("sub", "base", "kw"),
    [
        (KaryDeclaresOneLevelFewer, KaryTree, {"k": 3}),
        (HonakerDeclaresOneLevelFewer, Honaker, {}),
        (EldersDeclaresOneLevelFewer, Elders, {"k": 3}),
    ],
)
def test_a_declaration_one_level_short_fails_prove(sub: Any, base: Any, kw: Any) -> None:
    T = 16
    assert np.array_equal(
        _noise(base(epsilon=1, horizon=T, **kw), T), _noise(sub(epsilon=1, horizon=T, **kw), T)
    )  # the code is right: only the declaration is wrong
    failed = _failed(sub)
    assert "budget" in failed and "membership" not in failed


def test_a_declaration_one_level_short_fails_verify(monkeypatch: pytest.MonkeyPatch) -> None:
    from proofs.cli import verify_suite

    monkeypatch.setitem(dpref.mechanisms.MECHANISMS, "honaker", HonakerDeclaresOneLevelFewer)
    (row,) = verify_suite(VerifyOptions(mechanisms=("honaker",)))
    assert row.failed > 0 and row.detail.startswith("budget")


# ----------------------------------------------- the claims evaluate the code they name
def test_membership_fails_when_tree_levels_is_wrong(monkeypatch: pytest.MonkeyPatch) -> None:
    real = trees_module.tree_levels
    monkeypatch.setattr(
        trees_module, "tree_levels", lambda T, k, ops=EXACT: _one_short(real(T, k, ops))
    )
    assert {"membership", "budget"} <= _failed(KaryTree)


def test_membership_fails_when_the_release_rule_is_wrong(monkeypatch: pytest.MonkeyPatch) -> None:
    import dpref.mechanisms.tree_arith as arith

    real = arith.end_level
    monkeypatch.setattr(arith, "end_level", lambda e, T, k, ops=EXACT: real(e, T, k, ops) + 1)
    assert "membership" in _failed(Honaker)


def test_elders_claims_fail_when_its_functions_are_wrong(monkeypatch: pytest.MonkeyPatch) -> None:
    real = elders_module.elders_scale
    monkeypatch.setattr(elders_module, "elders_scale", lambda L, d, e: real(L, d, e) * 2)
    assert "budget" in _failed(Elders)
    monkeypatch.undo()
    real_levels = elders_module.elders_levels
    monkeypatch.setattr(
        elders_module, "elders_levels", lambda T, k, ops=EXACT: real_levels(T, k, ops) + 1
    )
    assert {"membership", "budget"} <= _failed(Elders)


# ------------------------------------------------------------- one scale for every path
@pytest.mark.parametrize(
    "m",
    [
        KaryTree(epsilon=1, horizon=40, k=3, budget="1/2,1/4,1/8,1/8"),
        KaryTree(epsilon=1, horizon=40, k=4, combine=True, budget="1/2,1/4,1/4"),
        Honaker(epsilon=1, horizon=40, budget="1/2,1/4,1/8,1/16,1/32,1/32"),
    ],
    ids=repr,
)
def test_online_draws_each_level_with_the_batch_scale(m: Any) -> None:
    """Same seed, same standard draws in canonical order: online and batch agree to float
    rounding (observed ≤ 2e-14; a level drawn at another level's scale — 2× to 32× apart
    here — moves an output by ≥ 0.1 for this seed), and both index ``level_multipliers``."""
    x = np.ones(40)
    np.testing.assert_allclose(m.online(rng=3).run(x), m.release(x, rng=3), rtol=0, atol=1e-9)
    assert [float(v) for v in m.online(rng=1)._scales_f] == m.level_multipliers.tolist()
    assert set(np.atleast_1d(m.noise_multipliers(40)).tolist()) == set(m.level_multipliers.tolist())


def test_online_level_zero_scale_bug_is_seen() -> None:
    """The power of the test above: an online path that draws every level at level 0's
    scale (the issue's surviving mutant) differs from the batch path by far more than 1e-9."""
    m = KaryTree(epsilon=1, horizon=40, k=3, budget="1/2,1/4,1/8,1/8")
    online: Any = m.online(rng=3)
    online._scales_f = [online._scales_f[0]] * len(online._scales_f)
    x = np.ones(40)
    assert np.max(np.abs(online.run(x) - m.release(x, rng=3))) > 0.1
