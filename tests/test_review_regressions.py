"""Regression tests for defects found in the adversarial review of the privacy paths."""

from __future__ import annotations

import inspect
from fractions import Fraction

import numpy as np
import pytest

import dpref
from dpref import DprefError


@pytest.mark.parametrize("eps", [5e-324, 1e-308, "1e-400", Fraction(1, 10**400)])
@pytest.mark.parametrize("name", sorted(dpref.MECHANISMS))
def test_tiny_epsilon_is_a_parameter_error(name: str, eps: object) -> None:
    """A Δ/ε that overflows a float scale used to raise a raw OverflowError after drawing."""
    cls = dpref.MECHANISMS[name]
    extra = {"window": 4, "alpha": Fraction(1, 2), "c": 2, "beta": Fraction(1, 2)}
    params = inspect.signature(cls).parameters  # __init__ is wrapped (keyword checks)
    kwargs = {k: v for k, v in extra.items() if k in params}
    with pytest.raises(dpref.ParameterError, match="epsilon="):
        cls(epsilon=eps, horizon=8, **kwargs).release([1, 0, 1])


def test_scale_overflow_leaves_the_generator_untouched() -> None:
    # a scale T/ε = 2^1050 can no longer be built: T <= MAX_HORIZON = 2^62 is checked at
    # construction, and T·Δ/ε <= 2^62 · 2^900 is a finite float
    with pytest.raises(dpref.ParameterError, match="horizon="):
        dpref.SimpleI(epsilon=Fraction(1, 2**850), horizon=2**200)
    m = dpref.SimpleI(epsilon=Fraction(1, 2**900), horizon=2**62)  # the largest scale
    gen = np.random.default_rng(0)
    out = m.release([1, 0], rng=gen)
    assert np.isfinite(out).all()


@pytest.mark.parametrize("noise", [[["a", "b"]], [[1.0], [1.0, 2.0]]])
def test_release_many_bad_noise_is_a_dpref_error(noise: object) -> None:
    with pytest.raises(DprefError, match="noise"):
        dpref.Binary(epsilon=1, horizon=4).release_many([1, 0], 2, noise=noise)


def test_runs_too_large_is_a_dpref_error() -> None:
    with pytest.raises(dpref.ParameterError, match="runs="):
        dpref.Binary(epsilon=1, horizon=4).release_many([1, 0], 10**20)


@pytest.mark.parametrize("bound", ["a", None, 1.5])
def test_bounded_integers_bad_bounds(bound: object) -> None:
    with pytest.raises(DprefError, match="lower="):
        dpref.bounded_integers(bound, 5)  # type: ignore[arg-type]


def test_plan_check_with_a_float_alpha_reports_huge_fractions() -> None:
    """α = 0.3 is a 2^−53-denominator binary fraction: at T = 512 the exact privacy sum
    has a ~27,000-bit denominator, and formatting it in the check's detail raised
    ``ValueError: Exceeds the limit (4300 digits)``."""
    # the float's binary value (a float alpha=0.3 is read as 3/10: docs/getting-started.md)
    report = dpref.ExponentialSum(epsilon=1, alpha=Fraction(0.3)).plan(512).check()
    assert report.passed
    assert "≈" in report.checks[2].detail


def test_error_message_of_a_huge_value_is_a_dpref_error() -> None:
    """ζ(δ)·2^δ overflows a float for δ = 10^6; the message's repr used to raise ValueError."""
    with pytest.raises(dpref.ParameterError, match="too large"):
        dpref.AllWindowSum(epsilon=1, delta=10**6).release([1, 0, 1])


@pytest.mark.parametrize("alpha", [Fraction(3, 10**9), Fraction(1, 10**10), 5e-324])
def test_exponential_sensitivity_bounds_terminate_for_tiny_alpha(alpha: object) -> None:
    """For α < 2^−28 the fixed-point loop never met its stopping rule (an endless loop)."""
    from dpref.mechanisms.decayed import (
        exponential_sensitivity_bounds,
        exponential_sensitivity_partial,
    )

    a = Fraction(alpha)  # type: ignore[arg-type]
    lo, up = exponential_sensitivity_bounds(a)
    assert lo <= exponential_sensitivity_partial(a, 8) <= up
    assert up - lo < Fraction(1, 2**60)
    m = dpref.ExponentialSum(epsilon=1, alpha=alpha)
    assert m.plan(16).check().passed


@pytest.mark.parametrize("name", ["window", "allwindow"])
@pytest.mark.parametrize("window", [2**63, 10**30])
def test_huge_window_is_a_parameter_error(name: str, window: int) -> None:
    """A window beyond int64 used to reach numpy and raise a raw OverflowError."""
    with pytest.raises(dpref.ParameterError, match="window="):
        dpref.MECHANISMS[name](epsilon=1, window=window).release([1, 0])


def test_allwindow_query_with_a_float_window() -> None:
    """``query(4.0)`` matched the served window 4 and then failed on a bit shift."""
    counter = dpref.AllWindowSum(epsilon=1).online(rng=0, windows=[4])
    counter.step(1)
    with pytest.raises(dpref.DprefTypeError, match=r"window=4\.0"):
        counter.query(4.0)  # type: ignore[arg-type]


@pytest.mark.parametrize("domain", [dpref.bits(), dpref.bounded_reals(-1, 3)])
def test_online_step_with_a_huge_int(domain: dpref.Domain) -> None:
    counter = dpref.Binary(epsilon=1, horizon=4, domain=domain).online(rng=0)
    with pytest.raises(dpref.DomainError, match="x="):
        counter.step(10**400)


def _cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    from dpref.cli import main

    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def _json_error(out: str, err: str) -> bool:
    """With ``--json`` an error is one JSON object on stdout carrying the stderr message."""
    import json

    doc = json.loads(out)
    return (
        out.count("\n") == 1
        and doc["error"]["message"] == err.removeprefix("dpref: error: ").strip()
    )


@pytest.mark.parametrize(
    "argv",
    [
        ["release", "window", "--epsilon", "1", "--json"],  # missing --window: TypeError
        ["verify", "--random-horizons", "-1", "--json"],  # numpy "negative dimensions"
        ["verify", "--max-horizon", "0", "--json"],  # silently checked nothing
        ["golden", "export", "/nonexistent-dir/x.json", "--json"],  # FileNotFoundError
    ],
)
def test_cli_bad_input_is_one_stderr_line(
    argv: list[str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import io

    monkeypatch.setattr("sys.stdin", io.StringIO("1\n0\n1\n"))
    code, out, err = _cli(argv, capsys)
    assert code == 2 and _json_error(out, err)
    assert err.count("\n") == 1 and err.startswith("dpref: error: ")


def test_cli_golden_check_of_a_malformed_file(
    tmp_path: pytest.TempPathFactory, capsys: pytest.CaptureFixture[str]
) -> None:
    import json
    from pathlib import Path

    from dpref.golden import FORMAT

    docs = [[], {"format": FORMAT, "vectors": [{"mechanism": "binary"}]}]
    for k, doc in enumerate(docs):
        path = Path(str(tmp_path)) / f"g{k}.json"
        path.write_text(json.dumps(doc))
        code, out, err = _cli(["golden", "check", str(path), "--json"], capsys)
        assert code == 2 and _json_error(out, err) and err.count("\n") == 1, err


def test_cli_verify_max_horizon_above_random_max(capsys: pytest.CaptureFixture[str]) -> None:
    """``--max-horizon 2048`` left no range for the random T: ``ValueError: low >= high``."""
    from dpref.verify import VerifyOptions
    from dpref.verify.plans import _horizons

    opts = VerifyOptions(max_exhaustive=2048, random_max=2048)
    assert _horizons(opts, np.random.default_rng(0)) == list(range(1, 2049))


def test_cli_complex_npy_is_refused(
    tmp_path: pytest.TempPathFactory, capsys: pytest.CaptureFixture[str]
) -> None:
    """A complex .npy was cast to float (imaginary part dropped, a warning on stderr)."""
    from pathlib import Path

    path = Path(str(tmp_path)) / "c.npy"
    np.save(path, np.array([1 + 1j, 0]))
    argv = ["release", "binary", "--epsilon", "1", "--input", str(path), "--json"]
    code, out, err = _cli(argv, capsys)
    assert code == 2 and _json_error(out, err) and err.count("\n") == 1 and "complex" in err


def _printing_target(stream: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    print("a line from the target")
    out: np.ndarray = np.cumsum(stream) + rng.laplace(0.0, 5.0, stream.size)
    return out


def test_audit_json_stdout_survives_a_printing_target(capsys: pytest.CaptureFixture[str]) -> None:
    """A black-box target's prints landed on stdout, breaking ``--json``'s one object."""
    from dpref.audit.isolation.targets import as_target

    target = as_target(_printing_target, timeout=None)
    target.sample(np.array([1.0, 0.0, 1.0]), 3, np.random.default_rng(0))
    out, err = capsys.readouterr()
    assert out == "" and "a line from the target" in err
