"""Tree counters (docs/trees.md, docs/spec.md §1.1): what the shared contract test does not
cover — the identities between plans, the exact objectives, ``k="auto"``, level budgets,
bad input, the command line, and conformance against planted Honaker bugs.

Error rates.  Conformance: a correct black box is checked at ``alpha = ALPHA``; each
planted bug must be flagged at the default ``alpha = 0.01`` by the check that names it
(the power: ``w_h = 1/2`` raises the noise scale implied by the per-step variances by
about 2.8 % at T = 16, and 20,000 runs estimate it to ±0.9 % at the check's level).
"""

from __future__ import annotations

import json
import sys
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from dpref import Binary, DprefError, Honaker, KaryTree, SimpleII
from dpref.audit.conformance.conform import conform
from dpref.cli import main
from dpref.mechanisms.trees import (
    AUTO_K_MAX,
    digit_sums,
    level_variances,
    max_digit_vectors,
    tree_levels,
    tree_objective,
)

sys.path.insert(0, str(Path(__file__).parent))
import audit_targets as at

ALPHA = 1e-6


def _same_plan(a: Any, b: Any, T: int) -> None:
    pa, pb = a.plan(T), b.plan(T)
    np.testing.assert_array_equal(pa.lo, pb.lo)
    np.testing.assert_array_equal(pa.hi, pb.hi)
    assert [pa.scale(n) for n in range(pa.n_nodes)] == [pb.scale(n) for n in range(pb.n_nodes)]
    assert pa.recombination.to_dense_exact() == pb.recombination.to_dense_exact()


# ------------------------------------------------------------------ identities
@pytest.mark.parametrize("T", [1, 2, 3, 4, 7, 8, 16, 33, 100])
def test_kary_two_is_binary(T: int) -> None:
    _same_plan(KaryTree(epsilon=1, horizon=T, k=2), Binary(epsilon=1, horizon=T), T)
    _same_plan(
        KaryTree(epsilon=1, horizon=T, k=2, budget="max"),
        Binary(epsilon=1, horizon=T, budget="max"),
        T,
    )


@pytest.mark.parametrize("T", [1, 2, 5, 8, 31, 64])
def test_honaker_is_the_combined_binary_tree(T: int) -> None:
    _same_plan(Honaker(epsilon=1, horizon=T), KaryTree(epsilon=1, horizon=T, k=2, combine=True), T)


@pytest.mark.parametrize("T", [1, 2, 5, 9])
def test_k_above_horizon_is_simple_two(T: int) -> None:
    m = KaryTree(epsilon=1, horizon=T, k=T + 1)
    assert m.levels == 1
    _same_plan(m, SimpleII(epsilon=1, horizon=T), T)


def test_binary_default_is_unchanged() -> None:
    a, b = Binary(epsilon=1, horizon=37), Binary(epsilon=1, horizon=37, budget="uniform")
    assert repr(a) == repr(b) == "Binary(epsilon=1, horizon=37)"
    _same_plan(a, b, 37)
    x = np.random.default_rng(0).integers(0, 2, 37)
    np.testing.assert_array_equal(a.release(x, rng=4), b.release(x, rng=4))


# --------------------------------------------------------------- exact numbers
def test_honaker_weights_and_spec_numbers() -> None:
    m = Honaker(epsilon=1, horizon=2**20)
    assert m.weights() == tuple(Fraction(2**h, 2 ** (h + 1) - 1) for h in range(21))
    assert m.weights()[:4] == (1, Fraction(2, 3), Fraction(4, 7), Fraction(8, 15))
    assert round(float(m.objective("mean")), 1) == 4764.3
    assert round(float(m.objective("max")), 1) == 9528.6


def test_kary_spec_numbers() -> None:
    m8 = KaryTree(epsilon=1, horizon=2**20, k=8)
    assert m8.levels == 7
    assert m8.objective("max") == 4410
    assert round(float(m8.objective("mean")), 1) == 2205.0
    m16 = KaryTree(epsilon=1, horizon=10**6, k=16)
    assert m16.objective("max") == 3700
    assert round(float(m16.objective("mean")), 1) == 1851.6


def test_frontier_targets_at_two_to_the_twenty() -> None:
    """docs/trees.md: the combined 16-ary tree with a level budget meets mean ≤ 2,000 and
    max ≤ 4,500 (and beats Honaker's 4,764 / 9,529)."""
    m = KaryTree(epsilon=1, horizon=2**20, k=16, combine=True, budget="mean")
    assert round(float(m.objective("mean")), 1) == 1780.3
    assert round(float(m.objective("max")), 1) == 3560.6


@pytest.mark.parametrize("k", [2, 3, 5, 10])
@pytest.mark.parametrize("T", [1, 9, 26, 27, 100, 243])
def test_digit_statistics_are_brute_force(k: int, T: int) -> None:
    L = tree_levels(T, k)
    assert k ** (L - 1) <= T < k**L
    digits = [[(t // k**h) % k for h in range(L)] for t in range(1, T + 1)]
    assert digit_sums(T, k, L) == [sum(d[h] for d in digits) for h in range(L)]
    rng = np.random.default_rng(T * k)
    for _ in range(5):
        a = rng.integers(1, 50, L).tolist()
        brute = max(sum(x * y for x, y in zip(d, a, strict=True)) for d in digits)
        assert brute == max(
            sum(x * y for x, y in zip(v, a, strict=True)) for v in max_digit_vectors(T, k, L)
        )


@pytest.mark.parametrize(
    "kw",
    [
        {"k": 3},
        {"k": 4, "combine": True},
        {"k": 3, "budget": "max"},
        {"k": 5, "combine": True, "budget": "mean"},
    ],
)
@pytest.mark.parametrize("T", [1, 12, 81, 130])
def test_objective_is_the_plans_mean_and_max(kw: dict[str, Any], T: int) -> None:
    m = KaryTree(epsilon=Fraction(1, 2), horizon=T, **kw)
    var = m.plan(T).variance_exact()
    assert m.objective("mean") == sum(var, Fraction(0)) / T
    assert m.objective("max") == max(var)


@pytest.mark.parametrize("objective", ["mean", "max"])
@pytest.mark.parametrize("combine", [False, True])
@pytest.mark.parametrize("T", [2, 7, 50, 300])
def test_auto_picks_the_exact_minimiser(objective: str, combine: bool, T: int) -> None:
    m = KaryTree(epsilon=1, horizon=T, k="auto", combine=combine, objective=objective)
    values = {
        k: KaryTree(epsilon=1, horizon=T, k=k, combine=combine).objective(objective)
        for k in range(2, min(max(T, 2), AUTO_K_MAX) + 1)
    }
    best = min(values.values())
    assert values[m.k] == best and m.k == min(k for k, v in values.items() if v == best)
    assert m.objective(objective) == best


# ------------------------------------------------------------------ level budgets
@pytest.mark.parametrize("T", [2, 15, 16, 1000])
@pytest.mark.parametrize("cls_kw", [(Binary, {}), (Honaker, {}), (KaryTree, {"k": 3})])
def test_optimised_budgets_sum_to_epsilon_and_never_lose(T: int, cls_kw: Any) -> None:
    cls, kw = cls_kw
    eps = Fraction(3, 7)
    uniform = cls(epsilon=eps, horizon=T, **kw)
    for objective in ("mean", "max"):
        m = cls(epsilon=eps, horizon=T, budget=objective, **kw)
        assert sum(m.level_epsilons, Fraction(0)) == eps
        assert all(e > 0 for e in m.level_epsilons)
        assert m.declared_budget() == eps
        if T <= 16:
            assert m.plan(T).privacy_sum() == eps
        k = kw.get("k", 2)
        combine = cls is Honaker
        got = tree_objective(
            level_variances([m.sensitivity / e for e in m.level_epsilons], k, combine),
            T,
            k,
            objective,
        )
        ref = tree_objective(
            level_variances([uniform.sensitivity / e for e in uniform.level_epsilons], k, combine),
            T,
            k,
            objective,
        )
        assert got <= ref


def test_optimised_budget_beats_uniform_where_it_should() -> None:
    # Honaker at 2^20: the top level serves only t = T, so shifting budget down pays
    u = Honaker(epsilon=1, horizon=2**20)
    m = Honaker(epsilon=1, horizon=2**20, budget="max")
    assert m.objective("max") < u.objective("max") / 2


def test_explicit_budget() -> None:
    m = KaryTree(epsilon=1, horizon=26, k=3, budget="1/2,1/3,1/6")
    assert m.level_epsilons == (Fraction(1, 2), Fraction(1, 3), Fraction(1, 6))
    assert m.level_scales == (2, 3, 6)
    assert m.plan(26).check(m.variance_exact(26)).passed
    same = KaryTree(epsilon=1, horizon=26, k=3, budget=[Fraction(1, 2), "1/3", Fraction(1, 6)])
    assert same.level_epsilons == m.level_epsilons
    h = Honaker(epsilon=2, horizon=3, budget=(1.5, 0.5))
    # b = (2/3, 2): σ_0² = 8/9, σ_1² = 8, w_1 = 2σ_0²/(σ_1² + 2σ_0²) = (16/9)/(88/9) = 2/11
    assert h.weights() == (1, Fraction(2, 11))
    assert h.plan(3).check(h.variance_exact(3)).passed


# ------------------------------------------------------------------ bad input
BAD = [
    ({"k": 1}, "k="),
    ({"k": 0}, "k="),
    ({"k": -3}, "k="),
    ({"k": 2.5}, "k="),
    ({"k": True}, "k="),
    ({"k": "3"}, "k="),
    ({"k": [3]}, "k="),
    ({"k": 2**70}, "k="),
    ({"k": 3, "budget": "1/2,1/2"}, "budget="),  # 2 values, 3 levels at T = 26
    ({"k": 3, "budget": "1/2,1/4,1/8"}, "budget="),  # sums to 7/8
    ({"k": 3, "budget": "1/2,1/2,0"}, "budget="),
    ({"k": 3, "budget": [0.5, 0.25, None]}, "budget="),
    ({"k": 3, "budget": "optimal"}, "budget="),
    ({"k": 3, "budget": 1}, "budget="),
    ({"k": 3, "budget": "x" * 70_000}, "budget="),
    ({"k": "auto", "budget": "1/2,1/4,1/4"}, "budget="),
    ({"k": 3, "objective": "median"}, "objective="),
    ({"k": 3, "objective": None}, "objective="),
    ({"k": 3, "combine": "maybe"}, "combine="),
    ({"k": 3, "combine": 1}, "combine="),
]


@pytest.mark.parametrize(("kw", "named"), BAD)
def test_bad_input_names_the_parameter(kw: dict[str, Any], named: str) -> None:
    with pytest.raises(DprefError, match=named):
        KaryTree(epsilon=1, horizon=26, **kw)


@pytest.mark.parametrize("cls", [Binary, Honaker])
@pytest.mark.parametrize("budget", ["1/2,1/2", "1,0,0,0,0", "uniformly", [1], None, 3.0])
def test_bad_budget_binary_and_honaker(cls: Any, budget: Any) -> None:
    with pytest.raises(DprefError, match="budget="):
        cls(epsilon=1, horizon=16, budget=budget)


# ------------------------------------------------------------------ online and CLI
def test_online_state_is_o_log_t() -> None:
    counter = KaryTree(epsilon=1, horizon=10**9, k=4, combine=True).online(rng=1)
    for _ in range(5000):
        counter.step(1)
    state = counter.__dict__
    assert len(state["_start"]) == len(state["_child"]) == len(state["_digit"]) == 15


def test_cli_release_with_tree_flags(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    stream = tmp_path / "s.txt"
    stream.write_text("\n".join(["1", "0", "1", "1"] * 4))
    args = ["release", "kary", "--epsilon=1", f"--input={stream}", "--seed=3", "--json"]
    assert main([*args, "--k=3", "--combine=true", "--budget=max"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert "KaryTree(epsilon=1, horizon=16, k=3, combine=True, budget=max)" in json.dumps(out)
    assert main([*args, "--k=3", "--budget=1/2,1/4"]) == 2
    err = capsys.readouterr()
    assert "budget=" in err.err and len(err.err.strip().splitlines()) == 1
    assert main(["release", "honaker", "--epsilon=1", f"--input={stream}", "--seed=3"]) == 0


@pytest.mark.parametrize("cls", [Binary, Honaker, KaryTree])
def test_frontier_variants_build(cls: Any) -> None:
    variants = cls.frontier_variants(64)
    assert variants and all("epsilon" not in v and "horizon" not in v for v in variants)
    for v in variants[:: max(1, len(variants) // 8)]:
        m = cls(epsilon=1, horizon=64, **v)
        assert m.plan(64).check(m.variance_exact(64)).passed


# ------------------------------------------------------------------ conformance
def test_correct_honaker_black_box_conforms() -> None:
    r = conform(
        at.honaker_ok, Honaker(epsilon=1, horizon=100), horizon=100, runs=2000, seed=9, alpha=ALPHA
    )
    assert r.conforms, r.summary()


def test_conform_flags_honaker_with_half_weights() -> None:
    T = 16
    r = conform(
        at.honaker_half_weights, Honaker(epsilon=1, horizon=T), horizon=T, runs=20_000, seed=3
    )
    assert not r.conforms, r.summary()
    assert {c.name for c in r.checks if c.passed is False} == {"noise-scale"}
    assert r.noise_scale_ratio is not None and r.noise_scale_ratio["low"] > 1.0


def test_conform_flags_honaker_with_a_level_short() -> None:
    T = 64
    r = conform(at.honaker_ceil_levels, Honaker(epsilon=1, horizon=T), horizon=T, runs=2000, seed=3)
    assert not r.conforms, r.summary()
    assert {"noise-scale", "variance"} <= {c.name for c in r.checks if c.passed is False}
    ratio = r.noise_scale_ratio
    assert ratio is not None and ratio["low"] <= 6 / 7 <= ratio["high"]


# ------------------------------------------------------------------ docs numbers
def _doc_rows() -> list[tuple[int, str, str, str]]:
    text = (Path(__file__).resolve().parents[1] / "docs" / "trees.md").read_text()
    table = text[text.index("| T | mechanism | mean Var | max Var |") :].splitlines()[2:]
    rows = []
    for line in table:
        if not line.startswith("| 2^20") and not line.startswith("| 10^6"):
            break
        horizon, label, mean, top = (c.strip() for c in line.strip("|").split("|"))
        rows.append((2**20 if horizon == "2^20" else 10**6, label.strip("`"), mean, top))
    return rows


@pytest.mark.parametrize(("T", "label", "mean", "top"), _doc_rows())
def test_docs_table_is_what_the_code_prints(T: int, label: str, mean: str, top: str) -> None:
    name, _, args = label.partition("(")
    args = args.rstrip(")")
    if name == "Binary":  # the same plan as the 2-ary tree (test_kary_two_is_binary)
        name, args = "KaryTree", ", ".join(a for a in ("k=2", args) if a)
    extra = f", {args}" if args else ""
    m = eval(f"{name}(epsilon=1, horizon={T}{extra})", {"KaryTree": KaryTree, "Honaker": Honaker})
    shown = [f"{float(m.objective(o)):,.1f}" for o in ("mean", "max")]
    assert shown == [mean.strip("*"), top.strip("*")]


@pytest.mark.parametrize(
    "make",
    [
        lambda: KaryTree(epsilon=1, horizon=100, k=3),
        lambda: KaryTree(epsilon=1, horizon=100, k=5, combine=True),
        lambda: Honaker(epsilon=1, horizon=100),
    ],
)
def test_online_memory_is_the_counters_state(make: Any) -> None:
    """The memory ``dpref frontier`` reports is the floats the online counter keeps."""
    m = make()
    counter = m.online(rng=0)
    counter.run([1] * 100)
    state = [counter._start, counter._child, counter._digit]
    assert sum(len(s) for s in state) + 2 == m.online_memory()  # + count and total
    assert all(len(s) == m.levels for s in state)
