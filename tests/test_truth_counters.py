"""One source of truth for the counters (issue 23): a subclass whose scale or level
function is off changes what every release path draws, and fails ``proofs.prove`` and
``dpref verify``; a subclass whose declaration alone is off fails them too; and each
``proven about the code`` claim fails when the function it evaluates is broken.

Every test here is deterministic (seeded draws compared exactly or by ratio, exact
proofs): none can pass by luck.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np
import pytest

import dpref.mechanisms
from dpref import Binary, Hybrid, SimpleI, SimpleII, SmoothBinary, TwoLevel
from dpref.mechanisms.base import EXACT, BudgetTerm, Mechanism
from dpref.mechanisms.smooth import smooth_depth, smooth_item_count
from dpref.verify import VerifyOptions
from dpref.verify import plans as verify_plans
from proofs import FAILED, PROVEN, prove
from proofs.cli import verify_suite

# The proof modules bind the functions they evaluate at import; import them now, before any
# test below patches those functions, so that a patch cannot outlive its test through them.
importlib.import_module("proofs.counting")
importlib.import_module("proofs.smooth")
importlib.import_module("proofs.zcdp")

SMALL = 64
"""Exhaustive limit of the proofs of the wrong subclasses (they fail long before)."""
SEED = 20261125


# ------------------------------------------- code off: the scale/level function
class SimpleIOneNodeMore(SimpleI):
    """Counts T + 1 nodes for item 1: scale (T+1)Δ/ε (what is drawn changes)."""

    @classmethod
    def memberships(cls, horizon: Any, ops: Any = EXACT) -> dict[str, Any]:
        return {"prefix": horizon + 1}


class SimpleIIHalfScale(SimpleII):
    """Item nodes with Lap(Δ/(2ε)): 2ε in truth."""

    @classmethod
    def node_scale(cls, horizon: Any, epsilon: Any, sensitivity: Any, ops: Any = EXACT) -> Any:
        return sensitivity / (2 * epsilon)


class TwoLevelNoBlock(TwoLevel):
    """Forgets the block node: every node gets Lap(Δ/ε), 2ε in truth."""

    @classmethod
    def memberships(cls, horizon: Any, ops: Any = EXACT) -> dict[str, Any]:
        return {"item": 1, "block": 0}


class BinaryOneLevelShort(Binary):
    """``L = ⌊log₂T⌋`` (the lecture's log T): one level too few."""

    @staticmethod
    def levels(horizon: Any, ops: Any = EXACT) -> Any:
        return ops.floor_log2(horizon)


class HybridOneLevelShort(Hybrid):
    """The k-th instance counted with k − 1 levels."""

    @staticmethod
    def instance_levels(k: Any, ops: Any = EXACT) -> Any:
        return k - 1


class SmoothScaleShort(SmoothBinary):
    """Nodes of scale (d/2 − 1)Δ/ε."""

    @staticmethod
    def node_scale(depth: Any, epsilon: Any, sensitivity: Any, ops: Any = EXACT) -> Any:
        return (ops.number(depth) / 2 - 1) * sensitivity / epsilon


# ---------------------------------------- declaration off: budget_terms alone
def _one_fewer(parent: type[Mechanism], kind: str) -> type[Mechanism]:
    """A subclass declaring one node fewer of ``kind`` than its code uses."""

    def budget_terms(self: Any, ops: Any = EXACT, **s: Any) -> list[BudgetTerm]:
        terms: list[BudgetTerm] = parent.budget_terms(self, ops, **s)
        return [
            BudgetTerm(x.kind, x.membership - 1, x.scale) if x.kind == kind else x for x in terms
        ]

    return type(f"{parent.__name__}DeclaresOneFewer", (parent,), {"budget_terms": budget_terms})


# (wrong class, its parent, registered name, T observed, kinds whose scale changes)
CODE_OFF: list[tuple[type[Mechanism], type[Mechanism], str, int]] = [
    (SimpleIOneNodeMore, SimpleI, "simple1", 8),
    (SimpleIIHalfScale, SimpleII, "simple2", 9),
    (TwoLevelNoBlock, TwoLevel, "two-level", 10),
    (BinaryOneLevelShort, Binary, "binary", 16),
    (HybridOneLevelShort, Hybrid, "hybrid", 13),
    (SmoothScaleShort, SmoothBinary, "smooth", 16),
]
DECLARATION_OFF: list[tuple[type[Mechanism], str]] = [
    (_one_fewer(SimpleI, "prefix"), "simple1"),
    (_one_fewer(SimpleII, "item"), "simple2"),
    (_one_fewer(TwoLevel, "block"), "two-level"),
    (_one_fewer(Binary, "level"), "binary"),
    (_one_fewer(Hybrid, "binary_k"), "hybrid"),
    (_one_fewer(SmoothBinary, "node"), "smooth"),
]


def _build(cls: type[Mechanism], horizon: int, **kw: Any) -> Mechanism:
    return cls(epsilon=1, horizon=None if not cls.needs_horizon else horizon, **kw)


def _rows(cls: type[Mechanism]) -> dict[str, Any]:
    return {r.claim: r for r in prove(cls, SMALL)}


@pytest.mark.parametrize(("wrong", "parent", "name", "horizon"), CODE_OFF)
def test_a_wrong_scale_function_changes_every_draw(
    wrong: type[Mechanism], parent: type[Mechanism], name: str, horizon: int
) -> None:
    """Same seed, same stream: the batch, release_many and online outputs all move with the
    one scale function (a second copy of the scale in any path would leave one unchanged)."""
    good, bad = _build(parent, horizon), _build(wrong, horizon)
    x = np.zeros(horizon)
    for m_out in (
        lambda m: m.release(x, rng=SEED),
        lambda m: m.release_many(x, runs=2, rng=SEED)[1],
        lambda m: m.online(rng=SEED).run(x),
    ):
        assert not np.allclose(m_out(good), m_out(bad))
    # the node scales the plan records are the drawn ones
    g_nodes, b_nodes = good.nodes(horizon), bad.nodes(horizon)
    assert not np.array_equal(g_nodes.scales, b_nodes.scales)
    ratio = b_nodes.scales / g_nodes.scales
    z = bad.node_noise(horizon, SEED) / good.node_noise(horizon, SEED)
    finite = np.isfinite(z) & (good.node_noise(horizon, SEED) != 0)
    np.testing.assert_allclose(z[finite], ratio[finite], rtol=1e-12)


@pytest.mark.parametrize(("wrong", "parent", "name", "horizon"), CODE_OFF)
def test_a_wrong_scale_function_fails_the_proofs(
    wrong: type[Mechanism], parent: type[Mechanism], name: str, horizon: int
) -> None:
    rows = _rows(wrong)
    assert rows["budget"].status == FAILED, rows["budget"]
    assert "not a function of the dpref package" not in rows["budget"].detail


@pytest.mark.parametrize(("wrong", "name"), DECLARATION_OFF)
def test_a_wrong_declaration_fails_the_proofs(wrong: type[Mechanism], name: str) -> None:
    rows = _rows(wrong)
    failed = {c for c, r in rows.items() if r.status == FAILED}
    assert {"membership", "budget"} <= failed, rows
    assert "not a function of the dpref package" not in rows["membership"].detail


def _verify(monkeypatch: pytest.MonkeyPatch, name: str, cls: type[Mechanism]) -> list[Any]:
    import proofs.registry

    monkeypatch.setitem(dpref.mechanisms.MECHANISMS, name, cls)
    # the proofs suite at exhaustive limit SMALL instead of 4096 (seconds, not minutes)
    monkeypatch.setattr(proofs.registry.prove_all, "__defaults__", ((), SMALL))
    verify_plans._unbounded.cache_clear()  # examples built once per name: rebuild them
    opts = VerifyOptions(mechanisms=(name,), max_exhaustive=16, random_horizons=0)
    try:
        return verify_suite(opts)
    finally:
        verify_plans._unbounded.cache_clear()


@pytest.mark.parametrize(("wrong", "name"), [(w, n) for w, _, n, _ in CODE_OFF])
def test_verify_fails_a_wrong_scale_function(
    monkeypatch: pytest.MonkeyPatch, wrong: type[Mechanism], name: str
) -> None:
    rows = _verify(monkeypatch, name, wrong)
    proofs_row = next(r for r in rows if r.suite == "proofs")
    assert proofs_row.failed > 0 and proofs_row.status == "FAIL"


@pytest.mark.parametrize(("wrong", "name"), DECLARATION_OFF)
def test_verify_fails_a_wrong_declaration(
    monkeypatch: pytest.MonkeyPatch, wrong: type[Mechanism], name: str
) -> None:
    rows = _verify(monkeypatch, name, wrong)
    assert next(r for r in rows if r.suite == "proofs").failed > 0


def test_verify_passes_the_real_classes_in_the_same_harness(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The control: the harness itself does not fail correct classes."""
    rows = _verify(monkeypatch, "hybrid", Hybrid)
    assert rows and all(r.failed == 0 for r in rows), rows


# ------------------------------- each about-code claim fails with a broken function
def _counting_claims(cls: type[Any]) -> dict[str, str]:
    from proofs.core import run_claim
    from proofs.counting import _SPECS, _budget, _membership

    spec = _SPECS[next(c.__name__ for c in cls.__mro__ if c.__name__ in _SPECS)]
    m = cls(epsilon=Fraction(7, 10), horizon=None if not cls.needs_horizon else 16)
    return {
        "membership": run_claim("x", "membership", lambda: _membership(m, spec)).status,
        "budget": run_claim("x", "budget", lambda: _budget(m, spec)).status,
    }


BREAKS: list[tuple[type[Any], str, Any, set[str]]] = [
    (SimpleI, "node_interval", staticmethod(lambda t: (t - t + 2, t)), {"membership"}),
    (SimpleII, "node_interval", staticmethod(lambda t: (t - 1, t)), {"membership"}),
    (
        TwoLevel,
        "block_interval",
        staticmethod(lambda q, b: ((q - 1) * b + 1, q * b + 1)),
        {"membership"},
    ),
    (
        TwoLevel,
        "node_scale",
        classmethod(lambda cls, T, e, d, ops=EXACT: 3 * d / e),
        {"budget"},
    ),
    (Binary, "node_interval", staticmethod(lambda t: (t - 2 * (t & -t) + 1, t)), {"membership"}),
    (
        Binary,
        "levels",
        staticmethod(lambda T, ops=EXACT: ops.floor_log2(2 * T - 1)),
        {"membership", "budget"},
    ),
    (
        Hybrid,
        "node_interval",
        staticmethod(lambda t, ops=EXACT: (Hybrid.node_interval(t, ops)[0] + 1, t)),
        {"membership"},
    ),
    (Hybrid, "instance_levels", staticmethod(lambda k, ops=EXACT: k + 1), {"membership", "budget"}),
    (
        Hybrid,
        "log_scale",
        classmethod(lambda cls, e, d, ops=EXACT: d / e),
        {"budget"},
    ),
]


@pytest.mark.parametrize(("cls", "attr", "broken", "fail"), BREAKS)
def test_a_counting_claim_fails_when_its_function_is_wrong(
    monkeypatch: pytest.MonkeyPatch, cls: type[Any], attr: str, broken: Any, fail: set[str]
) -> None:
    assert _counting_claims(cls) == {"membership": PROVEN, "budget": PROVEN}
    if attr == "node_interval" and cls is Hybrid:  # wrap the original, not the patch
        inner = cls.__dict__[attr].__func__
        broken = staticmethod(lambda t, ops=EXACT: (inner(t, ops)[0] + 1, t))
    monkeypatch.setattr(cls, attr, broken)
    got = _counting_claims(cls)
    assert {c for c, s in got.items() if s == FAILED} >= fail, got


SMOOTH_BREAKS: list[tuple[str, Callable[..., Any], str]] = [
    ("depth_for", lambda T, ops=EXACT: smooth_depth(T, ops) + 2, "membership"),
    ("item_count_for", lambda T, d, ops=EXACT: smooth_item_count(T, d, ops) - 1, "membership"),
    ("node_scale", lambda d, e, s, ops=EXACT: (ops.number(d) / 2 + 1) * s / e, "budget"),
    ("spent_share", lambda c, d, ops=EXACT: ops.number(c) / ops.number(d), "budget"),
]


@pytest.mark.parametrize(("attr", "broken", "claim"), SMOOTH_BREAKS)
def test_a_smooth_claim_fails_when_its_function_is_wrong(
    monkeypatch: pytest.MonkeyPatch, attr: str, broken: Callable[..., Any], claim: str
) -> None:
    from proofs.core import run_claim
    from proofs.smooth import _budget_code, _membership_code

    claims = {"membership": _membership_code, "budget": _budget_code}
    assert run_claim("s", claim, lambda: claims[claim](SmoothBinary)).status == PROVEN
    monkeypatch.setattr(SmoothBinary, attr, staticmethod(broken))
    row = run_claim("s", claim, lambda: claims[claim](SmoothBinary))
    assert row.status == FAILED and "not a function of the dpref package" not in row.detail
