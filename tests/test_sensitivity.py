"""Global sensitivity (docs/spec.md §4): fast == oracle, hand-checked values, bad input, CLI."""

from __future__ import annotations

import argparse
import json
import math
from fractions import Fraction
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import sensitivity_cases

from dpref.domains import bounded_integers, bounded_reals
from dpref.errors import DprefError, DprefTypeError, EnumerationBudgetError, ParameterError
from dpref.sensitivity import (
    NOTEBOOK_QUERIES,
    evaluate_query,
    exact_global_sensitivity,
    global_sensitivity,
    global_sensitivity_table,
    stream_item_sensitivity,
)
from dpref.sensitivity.cli import add_parser, run

ABSENCE = [1, 2, 3, 4, 5, 6, 7, 8, 15, 20]


def _both(case: dict[str, Any]) -> tuple[Any, Any]:
    out = []
    for method in ("fast", "oracle"):
        try:
            out.append(global_sensitivity(method=method, **case))
        except DprefError as exc:
            out.append(type(exc))
    return out[0], out[1]


@settings(max_examples=400, deadline=None)
@given(sensitivity_cases())
def test_fast_equals_oracle(case: dict[str, Any]) -> None:
    fast, oracle = _both(case)
    if case["query"] == "std" and isinstance(fast, float) and isinstance(oracle, float):
        assert fast == pytest.approx(oracle, rel=1e-12, abs=1e-12)
    else:
        assert fast == oracle


# Larger universes for the structured var/std and percentile algorithms (Lemmas U, D, B in
# dpref/sensitivity/moments.py, the prefix + suffix lemma in percentiles.py): more room between
# blocks.
_WIDE_QUERIES = ("var", "std", "median", "percentile_10", "percentile_75", "percentile_90")


@settings(max_examples=250, deadline=None)
@given(sensitivity_cases(max_dataset=9, max_range=5, max_size=5, queries=_WIDE_QUERIES))
def test_fast_equals_oracle_wider_universes(case: dict[str, Any]) -> None:
    fast, oracle = _both(case)
    if case["query"] == "std" and isinstance(fast, float) and isinstance(oracle, float):
        assert fast == pytest.approx(oracle, rel=1e-12, abs=1e-12)
    else:
        assert fast == oracle


# Each code path of the fast var/std algorithm on a universe with ties, gaps and outliers:
# unbounded up/down (Lemmas U, D), the std search for s = 2, l <= 5, bounded cores with
# holes (Lemma B), k = n cores, and a range universe.
_PATH_UNIVERSE = [0, 1, 1, 2, 5, 9, 10, 10, 20]


@pytest.mark.parametrize("query", ["var", "std"])
@pytest.mark.parametrize(
    ("size", "hamming", "model", "side", "universe"),
    [
        (4, 2, "unbounded", "remove", "dataset"),  # s = 2, l = 4: std searches every S
        (3, 1, "unbounded", "remove", "dataset"),  # s = 2, l = 3
        (2, 2, "unbounded", "add", "dataset"),  # s = 2, l = 4 on the add side
        (5, 2, "unbounded", "both", "dataset"),  # s = 3: Lemma D without search
        (6, 3, "bounded", "both", "dataset"),  # cores of 3 with up to 3 holes
        (3, 3, "bounded", "both", "dataset"),  # empty core
        (3, 2, "unbounded", "add", "range"),
        (4, 2, "bounded", "both", "range"),
    ],
)
def test_fast_var_std_paths_equal_oracle(
    query: str, size: int, hamming: int, model: str, side: str, universe: str
) -> None:
    values = [0, 1, 9, 20] if universe == "range" else _PATH_UNIVERSE
    case: dict[str, Any] = {
        "values": values,
        "size": size,
        "hamming": hamming,
        "query": query,
        "model": model,
        "universe": universe,
        "unbounded_side": side,
    }
    fast, oracle = _both(case)
    assert isinstance(fast, float) and fast > 0
    assert fast == pytest.approx(oracle, rel=1e-12) if query == "std" else fast == oracle


@pytest.mark.parametrize(
    "case",
    [
        # Found by random search: dropping the candidates that take >= 2 records from the
        # low end of the people (i, j >= 2 in Lemmas U and D) changes these answers.
        {"values": [2, -5, 6, 9, 12, 3, 9], "size": 6, "hamming": 2, "query": "var"},
        {
            "values": [0.5, -1.0, -1.0, -0.25, 2.75, 0.25, 1.25, 2.25, 2.25],
            "size": 6,
            "hamming": 2,
            "query": "std",
        },
        {
            "values": [-1, 8, 9, 7, 2, 4, 11, 6],
            "size": 4,
            "hamming": 3,
            "query": "std",
            "unbounded_side": "add",
        },
    ],
)
def test_fast_var_std_needs_every_split(case: dict[str, Any]) -> None:
    fast, oracle = _both(case)
    assert fast == pytest.approx(oracle, rel=1e-12) if case["query"] == "std" else fast == oracle


def test_std_down_search_cases() -> None:
    # s³(l−1)² > (s−1)²l³ exactly for s = 2, l in {3, 4, 5}: z³/(z−1)² increases for z >= 3.
    from dpref.sensitivity import _std_down_needs_search

    found = {(s, l) for s in range(1, 30) for l in range(s + 1, 60) if _std_down_needs_search(s, l)}
    assert found == {(2, 3), (2, 4), (2, 5)}


@settings(max_examples=150, deadline=None)
@given(sensitivity_cases())
def test_exact_fast_equals_exact_oracle(case: dict[str, Any]) -> None:
    if case["query"] == "std":
        return
    try:
        fast = exact_global_sensitivity(**case)
    except DprefError as exc:
        with pytest.raises(type(exc)):
            exact_global_sensitivity(method="oracle", **case)
        return
    assert fast == exact_global_sensitivity(method="oracle", **case)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(-50, 50), min_size=1, max_size=9),
    st.sampled_from(["mean", "median", "var", "std", "percentile_10", "percentile_90"]),
)
def test_query_semantics_match_numpy(xs: list[int], query: str) -> None:
    arr = np.array(xs, dtype=float)
    expected = {
        "mean": np.mean(arr),
        "median": np.median(arr),
        "var": np.var(arr),
        "std": np.std(arr),
        "percentile_10": np.percentile(arr, 10),
        "percentile_90": np.percentile(arr, 90),
    }[query]
    got = float(evaluate_query(query, [Fraction(x) for x in xs]))
    assert got == pytest.approx(float(expected), rel=1e-12, abs=1e-9)


# Hand-checkable values (docs/sensitivity.md works these out).
@pytest.mark.parametrize(
    ("query", "model", "expected"),
    [
        ("count", "unbounded", 1),
        ("count", "bounded", 0),
        ("sum", "unbounded", 3),  # remove the 3 from {1, 2, 3}
        ("sum", "bounded", 2),  # {1, 2} vs {2, 3}: share 1 record, replace 1 by 3
        ("mean", "unbounded", 1),  # {1, 3} -> {1}: mean 2 -> 1
        ("mean", "bounded", 1),  # {1, 2} -> {2, 3} share the 2: mean 3/2 -> 5/2
        ("median", "unbounded", 1),  # {1, 3} -> {1}: median 2 -> 1
        ("var", "unbounded", Fraction(1, 1)),  # {1, 3}: var 1 -> {1}: var 0
    ],
)
def test_small_worked_examples(query: str, model: str, expected: Any) -> None:
    got = exact_global_sensitivity([1, 2, 3], size=2, query=query, model=model)
    assert got == expected
    assert got == exact_global_sensitivity(
        [1, 2, 3], size=2, query=query, model=model, method="oracle"
    )


def test_notebook_scenario_a_values() -> None:
    # absence_days, release size 6, k = 1: independent hand derivations.
    # unbounded sum: remove the 20.  bounded sum: 20 - 1 (replace the smallest by the largest).
    assert global_sensitivity(ABSENCE, size=6, query="sum") == 20
    assert global_sensitivity(ABSENCE, size=6, query="sum", model="bounded") == 19
    # bounded mean = 19 / 6.
    assert exact_global_sensitivity(ABSENCE, size=6, query="mean", model="bounded") == Fraction(
        19, 6
    )
    # unbounded mean, remove 20 from {1..5, 20}: mean 35/6 -> 3, diff 17/6.
    assert exact_global_sensitivity(ABSENCE, size=6, query="mean") == Fraction(17, 6)


def test_sensitivity_grows_with_hamming() -> None:
    for q in NOTEBOOK_QUERIES:
        if q == "count":
            continue
        prev = 0.0
        for k in (1, 2, 3):
            cur = global_sensitivity(ABSENCE, size=6, query=q, hamming=k, model="bounded")
            assert cur >= prev
            prev = cur


def test_median_is_percentile_50() -> None:
    for model in ("unbounded", "bounded"):
        a = exact_global_sensitivity(ABSENCE, size=5, query="median", hamming=2, model=model)
        b = exact_global_sensitivity(ABSENCE, size=5, query="percentile_50", hamming=2, model=model)
        c = exact_global_sensitivity(
            ABSENCE, size=5, query="percentile", percentile=50, hamming=2, model=model
        )
        assert a == b == c


def test_range_versus_notebook_emulation() -> None:
    # Notebook emulation: each allowed value repeated n times, as a dataset.  Adding a value
    # already used n times is impossible there, so the add-neighbours differ: range {1, 11},
    # n = k = 3, median: {1, 11, 11} (median 11) -> {1, 1, 1, 1, 11, 11} (median 1) needs four 1s.
    kw: dict[str, Any] = {"size": 3, "hamming": 3, "query": "median", "unbounded_side": "add"}
    assert global_sensitivity([1, 11], universe="range", **kw) == 10
    assert global_sensitivity([1, 11] * 3, universe="dataset", **kw) == 5
    for method in ("fast", "oracle"):
        assert global_sensitivity([1, 11], universe="range", method=method, **kw) == 10
        assert global_sensitivity([1, 11] * 3, universe="dataset", method=method, **kw) == 5


def test_range_equals_emulation_with_both_sides_on_a_small_case() -> None:
    # With both sides the removal neighbours already reach the maximum here.
    for q in NOTEBOOK_QUERIES:
        for model in ("unbounded", "bounded"):
            a = global_sensitivity(
                [1, 2, 3], size=3, hamming=2, query=q, model=model, universe="range"
            )
            b = global_sensitivity([1, 2, 3] * 3, size=3, hamming=2, query=q, model=model)
            assert a == pytest.approx(b, rel=1e-12)


def test_bounded_full_universe_is_zero() -> None:
    # n = |U| in a dataset: the only release is U itself.
    assert global_sensitivity([1, 5, 9], size=3, query="sum", model="bounded") == 0


@pytest.mark.parametrize(
    ("lower", "upper", "neighbours"),
    [(0, 1, "replace"), (0, 1, "add_remove"), (-3, 5, "replace"), (-7, 2, "add_remove")],
)
def test_stream_item_sensitivity_agrees_with_calculator(
    lower: int, upper: int, neighbours: str
) -> None:
    lo, hi = Fraction(lower), Fraction(upper)
    delta = stream_item_sensitivity(lo, hi, neighbours)
    assert isinstance(delta, Fraction)
    model = "bounded" if neighbours == "replace" else "unbounded"
    assert delta == exact_global_sensitivity(
        [lo, hi], size=1, query="sum", model=model, universe="range", method="oracle"
    )
    expected = hi - lo if neighbours == "replace" else max(abs(lo), abs(hi))
    assert delta == expected
    assert bounded_integers(lower, upper, neighbours).sensitivity == delta  # type: ignore[arg-type]


def test_domain_sensitivity_exact_fraction() -> None:
    d = bounded_reals("-1/3", "1/2", "replace")
    assert d.sensitivity == Fraction(5, 6)


def test_table() -> None:
    table = global_sensitivity_table(
        {"absence_days": ABSENCE, "school_year": [1, 2, 2, 2, 5, 5, 7, 8, 9, 9]},
        size=6,
        query="sum",
    )
    assert table == {"absence_days": 20.0, "school_year": 9.0}


def test_float_result_rounds_up() -> None:
    exact = exact_global_sensitivity([1, 2, 3], size=3, hamming=1, query="mean", universe="range")
    assert Fraction(global_sensitivity([1, 2, 3], size=3, query="mean", universe="range")) >= exact


@pytest.mark.parametrize(
    ("kwargs", "error", "needle"),
    [
        ({"values": [1, 2], "size": 1, "query": "sum", "hamming": 0}, ParameterError, "hamming=0"),
        ({"values": [1, 2], "size": 1, "query": "sum", "hamming": 2}, ParameterError, "hamming=2"),
        ({"values": [1, 2], "size": 3, "query": "sum"}, ParameterError, "size=3"),
        ({"values": [], "size": 1, "query": "sum"}, ParameterError, "values"),
        ({"values": [1, float("nan")], "size": 1, "query": "sum"}, ParameterError, "values[1]"),
        ({"values": [1, "a"], "size": 1, "query": "sum"}, DprefTypeError, "values[1]"),
        ({"values": "123", "size": 1, "query": "sum"}, DprefTypeError, "values"),
        ({"values": [1, 2], "size": 1, "query": "mode"}, ParameterError, "query='mode'"),
        (
            {"values": [1, 2], "size": 1, "query": "percentile_101"},
            ParameterError,
            "percentile_101",
        ),
        (
            {"values": [1, 2], "size": 1, "query": "percentile", "percentile": -1},
            ParameterError,
            "percentile=-1",
        ),
        ({"values": [1, 2], "size": 2, "query": "mean", "hamming": 2}, ParameterError, "hamming=2"),
        ({"values": [1, 2], "size": 1, "query": "sum", "model": "x"}, ParameterError, "model='x'"),
        (
            {"values": [1, 2], "size": 1, "query": "sum", "universe": "x"},
            ParameterError,
            "universe",
        ),
        ({"values": [1, 2], "size": True, "query": "sum"}, DprefTypeError, "size=True"),
    ],
)
def test_bad_input(kwargs: dict[str, Any], error: type[Exception], needle: str) -> None:
    with pytest.raises(error) as info:
        global_sensitivity(**kwargs)
    assert needle in str(info.value)
    assert isinstance(info.value, DprefError)


def test_budget_is_checked_up_front() -> None:
    values = list(range(200))
    with pytest.raises(EnumerationBudgetError, match="max_enumeration=1000"):
        global_sensitivity(values, size=20, query="var", max_enumeration=1000)
    with pytest.raises(EnumerationBudgetError, match="max_enumeration"):
        global_sensitivity(values, size=20, query="median", method="oracle")
    # Closed forms need no budget.
    assert global_sensitivity(values, size=100, query="sum", max_enumeration=1) == 199 * 1


def _cli(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="dpref")
    add_parser(parser.add_subparsers(dest="command"))
    return parser.parse_args(["sensitivity", *argv])


def test_cli_json(capsys: pytest.CaptureFixture[str]) -> None:
    args = _cli(["--universe", "1,2,3", "--size", "2", "--query", "sum", "--json"])
    assert run(args) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["sensitivity"] == 3.0
    assert out["size"] == 2 and out["query"] == "sum" and out["model"] == "unbounded"


def test_cli_csv_text(tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "d.csv"
    path.write_text("name,absence_days\n" + "".join(f"p{i},{v}\n" for i, v in enumerate(ABSENCE)))
    args = _cli(
        [
            "--csv",
            str(path),
            "--column",
            "absence_days",
            "--size",
            "6",
            "--query",
            "sum",
            "--model",
            "bounded",
        ]
    )
    assert run(args) == 0
    assert "19.0" in capsys.readouterr().out


def test_cli_errors_are_dpref_errors(tmp_path: Any) -> None:
    with pytest.raises(ParameterError, match="--universe"):
        run(_cli(["--universe", "1,x", "--size", "1", "--query", "sum"]))
    with pytest.raises(ParameterError, match="--column"):
        run(_cli(["--csv", str(tmp_path / "nope.csv"), "--size", "1", "--query", "sum"]))
    with pytest.raises(ParameterError, match="hamming=5"):
        run(_cli(["--universe", "1,2", "--size", "2", "--query", "sum", "--hamming", "5"]))


def test_cli_plot(tmp_path: Any) -> None:
    pytest.importorskip("matplotlib")
    png = tmp_path / "s.png"
    args = _cli(["--universe", "1,2,3,9", "--size", "3", "--query", "mean", "--plot", str(png)])
    assert run(args) == 0
    assert png.read_bytes()[:4] == b"\x89PNG"


def test_std_is_float_close_to_sqrt_of_var_pair() -> None:
    s = global_sensitivity([0, 2], size=2, query="std", universe="range")
    assert math.isclose(s, 1.0)  # {0, 2} has std 1, {0} has std 0
