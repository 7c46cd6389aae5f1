"""The Python side a newcomer meets (issue 27 item 6): one rule for float budgets in the
API, the CLI and strings; pandas in, pandas out; concise error messages; real types on
the public signatures."""

from __future__ import annotations

import contextlib
import inspect
import io
import json
import re
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from hypothesis import example, given, settings
from strategies import float_budgets, float_fractions

import dpref
from dpref.cli import main
from dpref.errors import DprefError, DprefTypeError, ParameterError
from dpref.validation import (
    check_epsilon,
    check_exact,
    check_fraction,
    check_probability_open,
    check_rho,
    fmt,
)

LONG_BINARY = re.compile(r"\d{15,}")
"""A numerator or denominator of 15 or more digits: a float's binary value, not its decimal."""


# ------------------------------------------------------------ floats as budgets
def _cli_epsilon(text: str, stream: Path) -> Fraction:
    """ε as ``dpref release binary --epsilon TEXT`` reports it (in process)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["release", "binary", "--epsilon", text, "--input", str(stream), "--json"])
    assert code == 0
    return Fraction(json.loads(out.getvalue())["epsilon"])


@pytest.fixture(scope="module")
def stream_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("stream") / "s.txt"
    path.write_text("1\n0\n1\n")
    return path


@settings(max_examples=8)  # each runs the CLI in process (~0.1 s)
@given(x=float_budgets)
@example(x=0.1)
@example(x=0.3)
@example(x=1e-5)
def test_a_float_epsilon_is_the_same_in_the_api_a_string_and_the_cli(
    x: float, stream_file: Path
) -> None:
    api = dpref.Binary(epsilon=x, horizon=8).epsilon
    assert api == Fraction(repr(x))  # the shortest decimal that round-trips
    assert api == dpref.Binary(epsilon=repr(x), horizon=8).epsilon
    assert api == _cli_epsilon(repr(x), stream_file)


@given(x=float_budgets)
@example(x=0.1)
def test_every_budget_checker_reads_a_float_as_its_decimal(x: float) -> None:
    want = Fraction(repr(x))
    assert check_exact("x", x) == check_exact("x", repr(x)) == want
    assert check_epsilon("epsilon", x) == want
    assert check_rho("rho", x) == want
    assert float(want) == x  # the decimal denotes x: nothing is lost
    if x < 1:
        assert check_probability_open("delta", x) == want


@given(x=float_fractions)
def test_zcdp_budgets_and_decay_parameters_follow_the_same_rule(x: float) -> None:
    want = Fraction(repr(x))
    assert dpref.Binary(rho=x, horizon=4).rho == want
    assert dpref.ExponentialSum(epsilon=1, alpha=x).alpha == want


def test_numpy_floats_are_read_at_their_own_width() -> None:
    for kind in (np.float16, np.float32, np.float64):
        assert check_epsilon("epsilon", kind(0.1)) == Fraction(1, 10), kind
    # a float32 0.1 is not the double 0.1: its decimal at float32 width is still 0.1
    assert Fraction(float(np.float32(0.1))) != Fraction(1, 10)


def test_repr_plan_description_and_shares_are_readable() -> None:
    m = dpref.Binary(epsilon=0.1, horizon=8)
    assert repr(m) == "Binary(epsilon=1/10, horizon=8)"
    described = m.plan().check().describe()
    assert "1/10" in described and not LONG_BINARY.search(described), described
    # per-level shares given as floats sum exactly (their binary values would not)
    shares = dpref.Binary(epsilon=1, horizon=4, budget=[0.1, 0.2, 0.7]).level_epsilons
    assert shares == (Fraction(1, 10), Fraction(1, 5), Fraction(7, 10))
    assert not LONG_BINARY.search(repr(dpref.PolynomialSum(epsilon=0.5, c=1.5, beta=0.3)))


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -0.1, 0.0, np.float32("nan")])
def test_non_finite_or_non_positive_float_budgets_are_refused(bad: float) -> None:
    with pytest.raises(ParameterError, match="epsilon="):
        dpref.Binary(epsilon=bad, horizon=4)


def test_blt_theta_omega_keep_the_exact_binary_value() -> None:
    """θ/ω are float-derived implementation parameters: their float is taken exactly."""
    b = dpref.BLT(epsilon=0.5, horizon=8, theta=[0.9], omega=[0.1])
    assert b.theta == (Fraction(0.9),) and b.omega == (Fraction(0.1),)
    assert b.epsilon == Fraction(1, 2)
    assert check_fraction("x", 0.1) == Fraction(0.1) != check_exact("x", 0.1)


# ------------------------------------------------------------ pandas in, pandas out
def test_a_series_keeps_its_index_and_name() -> None:
    pd = pytest.importorskip("pandas")
    idx = pd.date_range("2026-01-01", periods=8, freq="D")
    s = pd.Series([1, 0, 1, 1, 0, 1, 0, 0], index=idx, name="clicks")
    m = dpref.Binary(epsilon=1, horizon=8)
    out = m.release(s, rng=7)
    assert isinstance(out, pd.Series) and out.name == "clicks" and out.index.equals(idx)
    assert np.array_equal(out.to_numpy(), m.release(s.to_numpy(), rng=7))
    assert m.release(stream=s, rng=7).index.equals(idx)
    target = m.target(s)
    assert isinstance(target, pd.Series) and list(target) == [1, 1, 2, 3, 3, 4, 4, 4]
    frame = m.release(s.to_frame(), rng=7)
    assert isinstance(frame, pd.DataFrame) and list(frame.columns) == ["clicks"]
    # (``import dpref`` never imports pandas: HEAVY in tests/test_structure.py)
    assert frame.index.equals(idx) and np.array_equal(frame["clicks"].to_numpy(), out)


def test_release_many_of_a_series_is_a_runs_by_index_frame() -> None:
    pd = pytest.importorskip("pandas")
    s = pd.Series([1, 0, 1, 1], index=["a", "b", "c", "d"])
    m = dpref.SimpleII(epsilon=1)
    many = m.release_many(s, 3, rng=2)
    assert isinstance(many, pd.DataFrame) and many.shape == (3, 4)
    assert list(many.columns) == ["a", "b", "c", "d"] and list(many.index) == [0, 1, 2]
    assert np.array_equal(many.to_numpy(), m.release_many(s.to_numpy(), 3, rng=2))


def test_allwindow_windows_and_a_wide_frame() -> None:
    pd = pytest.importorskip("pandas")
    s = pd.Series([1, 0, 1, 1], index=[10, 20, 30, 40])
    w = dpref.AllWindowSum(epsilon=1, horizon=4)
    both = w.release(s, rng=1, windows=[2, None])
    assert list(both.index) == [10, 20, 30, 40] and list(both.columns) == [2, None]
    wide = pd.DataFrame({"a": range(10_000), "b": range(10_000)})
    with pytest.raises(DprefTypeError, match="exactly one column, got 2") as info:
        dpref.SimpleII(epsilon=1).release(wide)
    assert len(str(info.value)) < 200 and "\n" not in str(info.value)


# ------------------------------------------------------------ concise errors
def test_a_large_dataframe_in_an_error_is_abbreviated() -> None:
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame({"a": np.arange(10_000), "b": np.arange(10_000)})
    for build in (
        lambda: dpref.Binary(epsilon=frame, horizon=4),
        lambda: dpref.Binary(epsilon=1, horizon=4, bogus=frame),  # type: ignore[call-arg]
        lambda: dpref.Binary(epsilon=1, horizon=frame),
    ):
        with pytest.raises(DprefError) as info:
            build()
        text = str(info.value)
        assert "<DataFrame of shape (10000, 2): columns 'a', 'b'>" in text, text
        assert len(text) < 250 and "\n" not in text


def test_a_million_element_array_in_an_error_is_abbreviated() -> None:
    big = np.arange(10**6)
    with pytest.raises(DprefTypeError) as info:
        dpref.Binary(epsilon=1, horizon=big)
    text = str(info.value)
    assert text.startswith("horizon=<ndarray of shape (1000000,): 0, 1, 2, …>"), text
    assert len(text) < 200
    with pytest.raises(DprefError) as info:
        dpref.Binary(epsilon=1, horizon=8).release(list(range(10**6)))
    assert "<list of shape (1000000,): 0, 1, 2, …>" in str(info.value)


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (0.1, "0.1"),
        ([1, 2], "[1, 2]"),
        ("x" * 100, "'" + "x" * 56 + "..."),
        ({str(i): i for i in range(20)}, "<dict of shape (20,): '0', '1', '2', …>"),
        (np.zeros((3, 3)), "<ndarray of shape (3, 3): 0.0, 0.0, 0.0, …>"),
        (range(10**9), "<range of shape (1000000000,): 0, 1, 2, …>"),
    ],
)
def test_fmt_is_short_for_every_input_type(value: object, shown: str) -> None:
    assert fmt(value) == shown


# ------------------------------------------------------------ real types
def test_public_signatures_name_the_types() -> None:
    sig = inspect.signature(dpref.Binary).parameters
    assert sig["epsilon"].annotation == "Budget | None"
    assert sig["horizon"].annotation == "Horizon"
    assert sig["budget"].annotation == "BudgetSplit"
    for cls in dpref.mechanisms.MECHANISMS.values():
        for name, p in inspect.signature(cls).parameters.items():
            assert p.annotation not in ("Any", inspect.Parameter.empty), (cls.__name__, name)
    release = inspect.signature(dpref.Binary.release).parameters
    assert release["stream"].annotation == "Stream" and release["rng"].annotation == "Seed"
