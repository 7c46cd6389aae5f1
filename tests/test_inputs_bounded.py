"""Issue 24, "inputs that still hang or trace back": each is now a DprefError naming its
parameter (exit 2 with one line on the command line), raised before any work or noise."""

from __future__ import annotations

import io
import json
import os
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import dpref
from dpref.cli import main
from dpref.cli.common import MAX_INPUT_BYTES, read_input, read_stream
from dpref.errors import DprefError, DprefTypeError, ParameterError
from dpref.validation import fmt


class RaisingRepr:
    def __repr__(self) -> str:
        raise RuntimeError("hostile __repr__")


class RaisingFloat(RaisingRepr):
    def __float__(self) -> float:
        raise RuntimeError("hostile __float__")


# ---------------------------------------------------------------- files
@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom"])
def test_devices_are_refused(device: str) -> None:
    """Defect: /dev/zero and /dev/urandom as --input hung or were MemoryError tracebacks."""
    with pytest.raises(ParameterError, match="character device, not a regular file"):
        read_stream(device)


def test_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    """Defect: a FIFO with no writer as --input hung for ever."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(ParameterError, match="is a FIFO"):
        read_stream(str(fifo))


def test_a_large_file_is_refused_before_it_is_read(tmp_path: Path) -> None:
    """Defect: a 60 MB CSV as --input had no size cap (MemoryError tracebacks)."""
    big = tmp_path / "big.csv"
    with open(big, "wb") as fh:
        fh.truncate(60 << 20)  # sparse: no disk used
    with pytest.raises(ParameterError, match="above the limit"):
        read_stream(str(big))
    assert MAX_INPUT_BYTES < 60 << 20


def test_a_npy_with_a_huge_shape_is_refused(tmp_path: Path) -> None:
    """Defect: a .npy declaring a huge shape was allocated (MemoryError)."""
    header = np.lib.format.header_data_from_array_1_0(np.zeros(1))
    header["shape"] = (10**12,)
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, header)
    path = tmp_path / "huge.npy"
    path.write_bytes(buf.getvalue() + bytes(8))
    with pytest.raises(ParameterError, match="holds 1,000,000,000,000 values"):
        read_stream(str(path))
    np.save(tmp_path / "ok.npy", np.array([1.0, 0.0, 1.0]))
    assert read_stream(str(tmp_path / "ok.npy")).tolist() == [1.0, 0.0, 1.0]


def test_stdin_is_read_when_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    class Stdin:
        buffer = io.BytesIO(b"1\n0\n")

    monkeypatch.setattr(sys, "stdin", Stdin())
    assert read_input("-") == b"1\n0\n"


def test_release_cli_refuses_a_device_in_one_line(capsys: Any) -> None:
    argv = ["release", "binary", "--epsilon=1", "--horizon=4", "--input=/dev/zero", "--json"]
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert err.count("\n") == 1 and json.loads(out)["error"]["parameter"] == "--input"


# ---------------------------------------------------------------- number strings
@pytest.mark.parametrize(
    "argv",
    [
        ["--universe=1,1e-999999999", "--query=sum"],
        ["--universe=1,2", "--query=percentile_1e999999999"],
    ],
)
def test_sensitivity_number_strings_are_bounded(argv: list[str], capsys: Any) -> None:
    """Defect: `dpref sensitivity --universe 1,1e-999999999` and `--query
    percentile_1e999999999` hung in, or failed with, a bare Fraction()."""
    assert main(["sensitivity", "--size=2", *argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err


# ---------------------------------------------------------------- the Python API
def test_polynomial_lower_bound_with_a_huge_integer_c() -> None:
    """Defect: lower_bound(polynomial_decay(c)) for c >= 2**40 built k**c (a hang)."""
    from dpref.lower_bounds import lower_bound, polynomial_decay

    bound = lower_bound(polynomial_decay(2**40), epsilon=1, q=100)
    # G(D) = 1 + 2^-c + …: just above 1, and the bound is a lower one (rounded down)
    assert Fraction(1, 2) - Fraction(1, 10**12) < bound.value <= Fraction(1, 2) + Fraction(1, 10**9)


def test_conform_runs_is_capped() -> None:
    """Defect: conform(runs=10**11) from Python allocated without bound."""
    from dpref.audit.conformance.conform import conform

    m = dpref.Binary(epsilon=1, horizon=4)
    with pytest.raises(ParameterError, match=r"runs=100000000000: must be in \[20, 1000000\]"):
        conform(m, m, horizon=4, runs=10**11)


def test_fmt_survives_any_repr() -> None:
    """Defect: an argument whose __repr__ raises broke every error message (364 raw
    exceptions had this one cause)."""
    assert fmt(RaisingRepr()) == "<RaisingRepr object: repr raised RuntimeError>"
    with pytest.raises(DprefTypeError, match=r"^epsilon=<RaisingRepr object"):
        dpref.Binary(epsilon=RaisingRepr(), horizon=4)


def test_release_many_with_a_raising_float_noise() -> None:
    """Defect: release_many(noise=obj) with a raising __float__ was a raw exception."""
    m = dpref.Binary(epsilon=1, horizon=4)
    with pytest.raises(DprefTypeError, match=r"^noise="):
        m.release_many(np.ones(4), 1, noise=RaisingFloat())
    with pytest.raises(DprefTypeError, match=r"^noise="):
        m.release_many(np.ones(4), 1, noise=[[RaisingFloat()] * 7])
    with pytest.raises(DprefError, match=r"^stream="):
        m.release([RaisingFloat()] * 4)


def test_global_sensitivity_masked_and_long_double() -> None:
    """Defect: global_sensitivity on a masked or long-double array was a raw TypeError."""
    from dpref.sensitivity import global_sensitivity

    masked = np.ma.masked_array([1.0, 2.0, 3.0], mask=[0, 1, 0])
    with pytest.raises(DprefTypeError, match=r"^values=<masked array>"):
        global_sensitivity(masked, size=2, query="sum")
    wide = np.array([1.0, 2.0, 3.0], dtype=np.longdouble)
    plain = np.array([1.0, 2.0, 3.0])
    assert global_sensitivity(wide, size=2, query="sum") == global_sensitivity(
        plain, size=2, query="sum"
    )


@pytest.mark.parametrize(
    ("name", "params"),
    [("elders", {"k": 3}), ("sqrt", {}), ("blt", {"theta": "1/2", "omega": "1/2"})],
)
def test_plan_check_below_the_horizon(name: str, params: dict[str, Any]) -> None:
    """Issue 24: plan(T).check() for T below the horizon failed on Elders, SqrtFactorization
    and BLT ("expected exactly ε" — the plan of the first T < H steps spends only its share
    ε·L(T)/L(H), resp. ε·S₁(T)/S₁(H), of a budget set for H). It must pass, Laplace and
    Gaussian, and its exact privacy sum must be that share."""
    for budget in ({"epsilon": 1}, {"rho": Fraction(1, 2)}):
        for horizon in (2, 7, 16, 100):
            m = dpref.MECHANISMS[name](horizon=horizon, **budget, **params)
            for T in (*range(1, min(horizon, 18)), horizon):
                report = m.plan(T).check()
                assert report.passed, (name, budget, horizon, T, report)
                assert m.plan(T).privacy_sum() == m.expected_privacy_sum(T)
