"""Regression tests: the core validators reject hostile input before any noise is drawn.

Each test names the defect it pins down; every error is a DprefError whose message
names the parameter, and the Generator is untouched.
"""

from __future__ import annotations

import functools
import signal
from collections.abc import Callable
from decimal import Decimal
from fractions import Fraction
from typing import Any

import numpy as np
import pytest

import dpref
from dpref.domains import Domain
from dpref.errors import DprefError, DprefTypeError, HorizonError, ParameterError
from dpref.mechanisms.base import MAX_HORIZON, MAX_STEPS
from dpref.validation import (
    MAX_NUMBER_STRING,
    check_choice,
    check_fraction,
    check_int_range,
    check_real_scalar,
)


def _within_seconds(test: Callable[..., None]) -> Callable[..., None]:
    """Fail (rather than hang) a test that runs past 10 s: the defects here were hangs."""

    @functools.wraps(test)
    def wrapper(*args: Any, **kwargs: Any) -> None:
        def _alarm(signum: int, frame: object) -> None:
            raise TimeoutError(f"{test.__name__} ran past 10 s")

        previous = signal.signal(signal.SIGALRM, _alarm)
        signal.setitimer(signal.ITIMER_REAL, 10.0)
        try:
            test(*args, **kwargs)
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0.0)
            signal.signal(signal.SIGALRM, previous)

    return wrapper


TIMES = [np.timedelta64(4, "D"), np.datetime64("2020-01-01"), np.timedelta64(1)]
NOT_REAL = [*TIMES, 1 + 0j, np.complex128(1), object(), Decimal(1)]


@pytest.mark.parametrize("value", [*TIMES, 1 + 0j, "4", 4.0, object()])
def test_int_checker_rejects_times_complex_and_strings(value: Any) -> None:
    with pytest.raises(DprefTypeError, match="horizon="):
        check_int_range("horizon", value, 1, None)


@pytest.mark.parametrize("value", NOT_REAL)
def test_fraction_checker_rejects_times_and_complex(value: Any) -> None:
    with pytest.raises(DprefTypeError, match="epsilon="):
        check_fraction("epsilon", value)


@pytest.mark.parametrize("cls", [dpref.SimpleI, dpref.TwoLevel, dpref.Binary])
@pytest.mark.parametrize("value", TIMES)
def test_mechanisms_reject_time_horizon_and_epsilon(cls: type[Any], value: Any) -> None:
    with pytest.raises(DprefTypeError, match="horizon="):
        cls(epsilon=1, horizon=value)
    with pytest.raises(DprefTypeError, match="epsilon="):
        cls(epsilon=value, horizon=4)


def test_other_int_parameters_reject_timedelta() -> None:
    with pytest.raises(DprefTypeError, match="rng="):
        dpref.Binary(epsilon=1, horizon=4).release([1, 0], rng=np.timedelta64(3, "D"))
    with pytest.raises(DprefTypeError, match="block_size="):
        dpref.TwoLevel(epsilon=1, horizon=8, block_size=np.timedelta64(2, "D"))
    with pytest.raises(DprefTypeError, match="runs="):
        dpref.Binary(epsilon=1, horizon=4).release_many([1, 0], np.timedelta64(2, "D"))
    with pytest.raises(DprefTypeError, match="horizon="):
        dpref.SimpleII(epsilon=1).variance(np.timedelta64(3, "D"))


@pytest.mark.parametrize(
    "build",
    [
        lambda v: dpref.Binary(epsilon=1, horizon=4, noise=v),
        lambda v: Domain(lower=0, upper=1, neighbours=v),
        lambda v: dpref.bounded_integers(0, 3, neighbours=v),
    ],
)
@pytest.mark.parametrize(
    "value", [np.array(["laplace", "discrete"]), np.array(["replace"]), ["replace"], 1, None]
)
def test_choice_parameters_check_the_type_first(build: Callable[[Any], Any], value: Any) -> None:
    if value is None and "Binary" in build.__code__.co_names:
        # noise=None is the default: Laplace with epsilon, Gaussian with rho
        assert build(value).noise == "laplace"
        return
    with pytest.raises(DprefTypeError, match=r"(noise|neighbours)=.*must be a str"):
        build(value)


def test_check_choice_names_the_choices() -> None:
    assert check_choice("noise", "discrete", ("laplace", "discrete")) == "discrete"
    with pytest.raises(ParameterError, match="noise='gauss'"):
        check_choice("noise", "gauss", ("laplace", "discrete"))


@_within_seconds
@pytest.mark.parametrize(
    "text", ["1e-999999999", "1e999999999", "1E+4001", "5e-4001", "1e" + "9" * 50, "1_0e-99999"]
)
def test_huge_exponent_strings_are_refused_without_parsing(text: str) -> None:
    with pytest.raises(ParameterError, match=r"epsilon=.*exponent"):
        dpref.Binary(epsilon=text, horizon=4)


@_within_seconds
def test_long_number_strings_are_refused() -> None:
    text = "1/" + "3" * MAX_NUMBER_STRING
    with pytest.raises(ParameterError, match=r"epsilon=.*characters"):
        check_fraction("epsilon", text)


def test_reasonable_number_strings_still_parse() -> None:
    assert check_fraction("epsilon", " 1e-4000 ") == Fraction(1, 10**4000)
    assert check_fraction("epsilon", "1/3") == Fraction(1, 3)
    assert check_fraction("epsilon", "0.5e1") == 5
    assert check_fraction("epsilon", "1_000") == 1000


@_within_seconds
@pytest.mark.parametrize(
    "call",
    [
        lambda: dpref.SimpleII(epsilon=1).variance(2**70),
        lambda: dpref.Hybrid(epsilon=1).variance(2**40),
        lambda: dpref.SimpleII(epsilon=1).plan(2**70),
        lambda: dpref.SimpleII(epsilon=1).variance_exact(2**40),
        lambda: dpref.Binary(epsilon=1, horizon=2**40).variance(),
        lambda: dpref.Binary(epsilon=1, horizon=2**40).plan(),
        lambda: dpref.SimpleII(epsilon=1).node_noise(MAX_STEPS + 1, rng=0),
    ],
)
def test_per_step_paths_refuse_horizons_above_max_steps(call: Callable[[], Any]) -> None:
    with pytest.raises(
        HorizonError, match=r"horizon=.*(MAX_STEPS|MAX_VARIANCE_STEPS|max_plan_steps)="
    ):
        call()


def test_horizon_has_an_upper_bound_at_construction() -> None:
    with pytest.raises(ParameterError, match="horizon="):
        dpref.SimpleI(epsilon=1, horizon=2**2000)
    with pytest.raises(ParameterError, match="horizon="):
        dpref.Binary(epsilon=1, horizon=MAX_HORIZON + 1)
    big = dpref.Binary(epsilon=1, horizon=2**40)  # online use and short releases work
    assert np.isfinite(big.release([1, 0, 1], rng=0)).all()
    assert np.isfinite(big.online(rng=0).step(1))


@pytest.mark.parametrize("eps", [10**155, 2**2000, Fraction(2**401), "1e200"])
def test_epsilon_has_an_upper_bound(eps: Any) -> None:
    with pytest.raises(ParameterError, match=r"epsilon=.*too large"):
        dpref.SimpleII(epsilon=eps)


def test_large_but_allowed_epsilon_has_positive_variance() -> None:
    var = dpref.SimpleII(epsilon=2**399).variance(3)
    assert (var > 0).all()
    report = dpref.Binary(epsilon=2**399, horizon=8).plan().check()
    assert report.passed


@pytest.mark.parametrize("value", [1 + 0j, Decimal(1), np.timedelta64(1, "D"), "1", b"1"])
def test_online_and_batch_share_one_item_checker(value: Any) -> None:
    m = dpref.SimpleII(epsilon=1, domain=dpref.bounded_reals(-2, 2))
    gen = np.random.default_rng(0)
    before = gen.bit_generator.state
    with pytest.raises(DprefTypeError, match="stream="):
        m.release([value], rng=gen)
    with pytest.raises(DprefTypeError, match="x="):
        m.online(rng=gen).step(value)
    assert gen.bit_generator.state == before


def test_online_accepts_what_batch_accepts() -> None:
    for value in (True, np.int8(1), np.float32(0.5), Fraction(1, 2)):
        m = dpref.SimpleII(epsilon=1, domain=dpref.bounded_reals(-2, 2))
        assert np.isfinite(m.release([value], rng=0)).all()
        assert np.isfinite(m.online(rng=0).step(value))
    assert check_real_scalar("x", np.float64(2.5)) == 2.5


def test_online_run_checks_the_stream_length_before_drawing() -> None:
    gen = np.random.default_rng(0)
    before = gen.bit_generator.state
    counter = dpref.Binary(epsilon=1, horizon=4).online(rng=gen)
    with pytest.raises(HorizonError, match=r"stream=.*: length 6"):
        counter.run([1] * 6)
    assert gen.bit_generator.state == before
    assert counter.t == 0
    counter.run([1, 0])
    with pytest.raises(HorizonError, match=r"stream=\[1, 0, 1\]: length 3 after 2 steps"):
        counter.run([1, 0, 1])
    assert counter.t == 2


@pytest.mark.parametrize(
    ("field", "value"), [("integer", "no"), ("integer", 1), ("integer", None), ("name", 3)]
)
def test_domain_fields_are_validated(field: str, value: Any) -> None:
    with pytest.raises(DprefTypeError, match=f"{field}="):
        Domain(lower=0, upper=1, **{field: value})


def test_domain_integer_numpy_bool_is_normalised() -> None:
    d = Domain(lower=0, upper=3, integer=np.bool_(False))
    assert d.integer is False


def test_every_error_here_is_a_dpref_error() -> None:
    assert issubclass(DprefTypeError, DprefError)
    assert issubclass(HorizonError, ValueError)


@pytest.mark.parametrize(
    "bad", [[1.9], np.array([2.0]), [np.datetime64("2020-01-01")], [True], [0], [], [[1]], "3"]
)
def test_variance_at_refuses_what_is_not_times(bad: Any) -> None:
    """``variance_at([1.9])`` used to truncate to t = 1 and accepted ``datetime64``."""
    from dpref import WindowSum

    with pytest.raises(DprefError, match="t="):
        WindowSum(window=3, epsilon=1).variance_at(bad)


def test_variance_at_accepts_integer_times() -> None:
    from dpref import WindowSum

    m = WindowSum(window=3, epsilon=1)
    assert m.variance_at([1, 2, 3]).tolist() == m.variance_at(np.arange(1, 4)).tolist()
    assert m.variance_at(np.array([3], dtype=np.uint8)).tolist() == m.variance(3)[2:].tolist()


@_within_seconds
@pytest.mark.parametrize("query", ["var", "std", "median", "percentile_90"])
@pytest.mark.parametrize("model", ["unbounded", "bounded"])
def test_range_universe_of_a_huge_release_is_refused_without_listing_it(
    query: str, model: str
) -> None:
    """Issue 11: ``--universe-kind range --size 10**12`` hung while estimating its own
    work (the estimate listed every record); it is now refused by the budget at once."""
    from dpref.errors import EnumerationBudgetError
    from dpref.sensitivity import global_sensitivity

    with pytest.raises(EnumerationBudgetError, match="max_enumeration="):
        global_sensitivity(
            [0, 1, 5], size=10**12, query=query, hamming=3, model=model, universe="range"
        )


def test_the_sized_audit_and_plan_paths_have_documented_bounds() -> None:
    """variance/plan at a horizon an unbounded mechanism accepts but cannot build (the
    junk contract tests found T ≈ 10⁹ running for hours): refused, naming horizon."""
    from dpref.mechanisms.base import MAX_PLAN_STEPS, MAX_VARIANCE_STEPS

    hybrid = dpref.Hybrid(epsilon=1)
    with pytest.raises(HorizonError, match=f"horizon={MAX_VARIANCE_STEPS + 1}"):
        hybrid.variance(MAX_VARIANCE_STEPS + 1)
    with pytest.raises(HorizonError, match=f"horizon={MAX_VARIANCE_STEPS + 1}"):
        hybrid.variance_exact(MAX_VARIANCE_STEPS + 1)
    with pytest.raises(HorizonError, match=f"horizon={MAX_PLAN_STEPS + 1}"):
        hybrid.plan(MAX_PLAN_STEPS + 1)
    with pytest.raises(HorizonError, match="horizon=4097"):
        dpref.SimpleII(epsilon=1).plan(4097)  # T(T+1)/2 decoder nonzeros: 2^12 at most
    assert dpref.SimpleII(epsilon=1).plan(4096).horizon == 4096
