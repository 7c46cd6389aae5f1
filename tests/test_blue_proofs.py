"""``proofs/blue.py`` and the ``blue`` golden vectors: the symbolic claims hold about the real
decoder and fail on planted ones, the GLS oracle is right on a hand-computed case and tells the
BLUE from another unbiased decoder, and an independent implementation reproduces the vectors.

Cheap by design (each test well under a second); the whole theorem at the default limit is
``test_blue_theorem_at_the_verify_limit`` (slow).
"""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction
from pathlib import Path
from typing import Any

import blue_golden_target as bg
import pytest

import dpref.mechanisms.blue as blue_module
import proofs.blue as pb
from dpref import BlueTree, Honaker
from dpref.audit.conformance.golden_run import run_golden, vector_config
from dpref.golden import load_shipped
from dpref.mechanisms.blue import decode
from dpref.mechanisms.blue.hierarchy import LAYOUT_KINDS
from proofs.blue_gls import SingularError, gls_decoder, solve_many
from proofs.core import CHECKED, LEMMA, NOTE, PROVEN_CODE, ProofFailure, kind_of
from proofs.registry import prove

TARGET = str(Path(__file__).with_name("blue_golden_target.py"))


@pytest.fixture(autouse=True)
def _no_planted_rows_survive() -> Any:
    """These tests plant faults in functions whose results ``BlueTree.recombination`` caches
    (``_cached_rows``, keyed by layout and node variances): clear it on both sides, so a
    planted R never reaches another test (test_contract's plan checks failed after this file)."""
    blue_module._cached_rows.cache_clear()
    yield
    blue_module._cached_rows.cache_clear()


def test_gls_oracle_on_a_hand_computed_tree() -> None:
    # T = 2, binary: nodes [1], [2], [1, 2] (canonical order), each Lap(2/ε), variance σ² = 8/ε²;
    # M = AᵀA/σ² = [[2, 1], [1, 2]]/σ², so x̂ = M⁻¹Aᵀy/σ² and Var(c_2) = Var(x̂_1) = 2σ²/3
    m = BlueTree(epsilon=1, horizon=2, k=2)
    R, v = gls_decoder(m.plan(2))
    third = Fraction(1, 3)
    assert R == [[2 * third, -third, third], [third, third, 2 * third]]
    assert v == [Fraction(16, 3), Fraction(16, 3)]


def test_gls_oracle_tells_the_blue_from_the_causal_decoder() -> None:
    # Honaker's streaming decoder is unbiased but uses only the nodes released by t: its
    # R·A = Q holds, yet it is not the GLS estimate from all nodes, and has more variance
    plan = Honaker(epsilon=1, horizon=4).plan(4)
    R, v = gls_decoder(plan)
    assert plan.check_unbiased().passed
    assert plan.recombination.to_dense_exact() != R
    assert all(a <= b for a, b in zip(v, plan.variance_exact(), strict=True))
    assert v != plan.variance_exact()


def test_singular_normal_matrix_is_refused() -> None:
    with pytest.raises(SingularError):
        solve_many([[Fraction(1), Fraction(1)], [Fraction(1), Fraction(1)]], [[Fraction(1)]] * 2)


def test_layout_definitions_agree_with_the_release() -> None:
    for k, kind in pb.DESIGNS:
        for T in (1, 2, 5, 9, 10):
            nt = BlueTree(epsilon=1, horizon=T, k=k, layout=kind).nodes(T)
            got = sorted(zip(nt.lo.tolist(), nt.hi.tolist(), strict=True))
            assert got == sorted(pb.node_multiset(k, kind, T).elements()), (k, kind, T)


FEW_ARITIES = {"complete": (2,), "elders_full": (3,)}


def test_symbolic_claims_and_their_labels(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pb, "CHILDREN", 4)
    monkeypatch.setattr(pb, "SMT_ARITIES", FEW_ARITIES)
    monkeypatch.setattr(pb, "DESIGNS", ((2, "complete"), (3, "elders")))
    for fn, kind in [
        (pb._levels, PROVEN_CODE),
        (pb._budget, PROVEN_CODE),
        (pb._splits, PROVEN_CODE),
        (pb._upward, PROVEN_CODE),
        (pb._consistency, PROVEN_CODE),
        (pb._unbiased_lemma, LEMMA),
        (pb._post_processing, NOTE),
    ]:
        out = fn()
        assert kind_of(out.status) == kind, (fn.__name__, out.status)
        if kind == PROVEN_CODE:
            assert out.evaluates and all(e.startswith("dpref.") for e in out.evaluates)


def test_a_wrong_level_count_fails_levels_and_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    from dpref.mechanisms.blue import hierarchy
    from dpref.mechanisms.tree_arith import tree_levels

    real = hierarchy.blue_levels

    def floor_log(horizon: Any, k: int, kind: str, ops: Any = None) -> Any:
        # ⌊log_k T⌋ + 1 for the complete layout: one level short when T is not a power of k
        if kind == "complete":
            return tree_levels(horizon, k, ops) if ops is not None else tree_levels(horizon, k)
        return real(horizon, k, kind, ops) if ops is not None else real(horizon, k, kind)

    monkeypatch.setattr(pb, "SMT_ARITIES", {"complete": (2,)})
    monkeypatch.setattr(pb, "blue_levels", floor_log)
    with pytest.raises(ProofFailure, match="blue_levels"):
        pb._levels()
    monkeypatch.setattr(blue_module, "blue_levels", floor_log)  # what levels_at calls
    with pytest.raises(ProofFailure):
        pb._budget()


def _perturbed(field: str) -> Any:
    real = decode._node

    def node(observed: bool, s: Any, child_var: Any, where: str) -> decode.Parent:
        p = real(observed, s, child_var, where)
        if field == "split" and len(p.split) > 1:
            # a plausible slip: shares from the children's standard deviations' ratio squared
            return replace(p, split=(p.split[0] * 2, *p.split[1:]))
        if field == "own" and child_var and None not in child_var:
            return replace(p, own=p.own / 2)
        return p

    return node


@pytest.mark.parametrize(("field", "claim"), [("split", "_consistency"), ("own", "_upward")])
def test_a_wrong_decoder_weight_fails_its_claim(
    monkeypatch: pytest.MonkeyPatch, field: str, claim: str
) -> None:
    monkeypatch.setattr(pb, "CHILDREN", 3)
    monkeypatch.setattr(decode, "_node", _perturbed(field))
    with pytest.raises(ProofFailure):
        getattr(pb, claim)()


def test_exhaustive_claims_at_a_small_limit() -> None:
    for fn in (pb._membership, pb._plans, pb._blue):
        out = fn(4)
        assert kind_of(out.status) == CHECKED and out.status == "checked for T ≤ 4"


def test_a_wrong_variance_or_decoder_fails_the_checks(monkeypatch: pytest.MonkeyPatch) -> None:
    real = BlueTree.variance_exact

    def off(self: BlueTree, horizon: int | None = None) -> list[Fraction]:
        v = real(self, horizon)
        return [v[0] * Fraction(101, 100), *v[1:]]

    monkeypatch.setattr(BlueTree, "variance_exact", off)
    with pytest.raises(ProofFailure, match="variance"):
        pb._plans(3)
    monkeypatch.undo()
    real_r = blue_module.recombination_exact

    def skewed(w: decode.Weights) -> Any:
        R = real_r(w)  # one stored value doubled: still a plan, no longer the GLS decoder
        return replace(R, table=(R.table[0] * 2, *R.table[1:])) if R.table else R

    monkeypatch.setattr(blue_module, "recombination_exact", skewed)
    with pytest.raises(ProofFailure, match="GLS"):
        pb._blue(3)


def _close(got: list[float], want: list[float]) -> bool:
    # dpref golden run's default float64 rule: |got − want| ≤ 1e-12·|want| + 1e-9
    return all(abs(g - w) <= 1e-12 * abs(w) + 1e-9 for g, w in zip(got, want, strict=True))


def test_an_independent_implementation_reproduces_the_vectors() -> None:
    # in process (dpref golden run's worker processes cost seconds; the slow test runs it):
    # every T ≤ 9 vector of each layout and noise kind, and the explicit split at T = 27
    vectors = [v for v in load_shipped()["vectors"] if v["mechanism"] == "blue"]
    chosen = [v for v in vectors if v["horizon"] <= 9 or "budget" in v["parameters"]]
    assert {v["parameters"].get("layout", "complete") for v in chosen} >= set(LAYOUT_KINDS) - {
        "kary"
    }
    for v in chosen:
        got = bg.blue(v["stream"], v["noise"], vector_config(v))
        assert _close(got, v["outputs"]), v["case"]
    split = next(v for v in vectors if "budget" in v["parameters"])
    assert not _close(bg.blue_ignores_budget(split["stream"], split["noise"], vector_config(split)),
                      split["outputs"])  # fmt: skip


@pytest.mark.slow
def test_dpref_golden_run_on_the_blue_vectors() -> None:
    run = run_golden(f"{TARGET}:blue", mechanism="blue")
    assert run.ok and run.passed == run.vectors >= 40, run.text()
    wrong = run_golden(f"{TARGET}:blue_ignores_budget", mechanism="blue", case="blue[T=27*")
    assert not wrong.ok
    assert (
        wrong.failures[0][1].case == "blue[T=27,k=3,budget=1/4,1/8,1/16,1/16] laplace epsilon=1/2"
    )


@pytest.mark.slow
def test_blue_theorem_at_the_verify_limit() -> None:
    rows = prove(BlueTree)
    assert [r for r in rows if not r.passed] == []
    kinds = {r.claim: r.kind for r in rows}
    assert kinds["budget"] == kinds["upward weights"] == kinds["consistency"] == PROVEN_CODE
    assert kinds["best linear unbiased"] == kinds["plans"] == CHECKED
