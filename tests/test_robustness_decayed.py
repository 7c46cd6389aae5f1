"""Every decayed-sum parameter has a range in which its work is bounded (docs/decayed.md,
"Parameter ranges").

Each defect below used to hang or run for minutes; the regression tests run the call in a
subprocess with a ``timeout=`` so that a regression fails instead of hanging CI.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
import textwrap
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

import dpref
from dpref.errors import EnumerationBudgetError, ParameterError
from dpref.lower_bounds import exponential_decay, lower_bound
from dpref.mechanisms.decayed import ExponentialSum, PolynomialSum
from dpref.rigorous import (
    exponential_sensitivity_bounds,
    polynomial_breakpoint,
    polynomial_next_break,
    polynomial_series_upper,
    zeta_bounds,
)

ROOT = Path(__file__).resolve().parents[1]


def _run(code: str, timeout: float = 60) -> str:
    """Run ``code`` in a fresh interpreter on this checkout; fail (not hang) past ``timeout``."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    try:
        proc = subprocess.run(
            [sys.executable, "-c", textwrap.dedent(code)],
            capture_output=True,
            text=True,
            timeout=timeout,
            env=env,
            cwd=ROOT,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"did not finish within {timeout} s:\n{code}")
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def _rejects(expr: str, name: str, timeout: float = 60) -> str:
    """``expr`` raises a ParameterError naming ``name=`` (in a subprocess, bounded)."""
    out = _run(
        f"""
        from fractions import Fraction
        import dpref
        from dpref.errors import ParameterError
        try:
            {expr}
        except ParameterError as exc:
            print("REJECTED", exc)
        else:
            print("ACCEPTED")
        """,
        timeout,
    )
    assert out.startswith("REJECTED"), out
    assert f"{name}=" in out, out
    return out


# ------------------------------------------------------------------ ExponentialSum
def test_exponential_alpha_next_to_one_is_rejected() -> None:
    """α = 1 − 10⁻⁴⁰ (> 1 − 2⁻¹²⁸) looped forever in the fixed point of S(α)."""
    _rejects("dpref.ExponentialSum(alpha=1 - Fraction(1, 10**40), epsilon=1)", "alpha")
    with pytest.raises(ParameterError, match="alpha="):
        exponential_sensitivity_bounds(1 - Fraction(1, 2**65))


def test_exponential_alpha_range_edge_is_cheap() -> None:
    lo, up = exponential_sensitivity_bounds(1 - Fraction(1, 2**64))
    assert 63 < lo <= up < 66
    ExponentialSum(alpha=1 - Fraction(1, 2**64), epsilon=1).release([1, 0, 1], rng=0)


def test_exponential_exact_plan_has_a_work_bound() -> None:
    """``ExponentialSum(0.9).plan(4096).check()`` took over a minute (α = 0.9 is a
    54-bit fraction; the check multiplies ~T² powers of it)."""
    # the float's binary value (a float alpha=0.9 is read as 9/10: docs/getting-started.md)
    m = ExponentialSum(alpha=Fraction(0.9), epsilon=1)
    with pytest.raises(EnumerationBudgetError, match="horizon=4096"):
        m.plan(4096)
    with pytest.raises(EnumerationBudgetError, match="horizon=4096"):
        m.variance_exact(4096)
    assert m.plan(64).check().passed
    assert m.release([1.0] * 4096, rng=0).shape == (4096,)  # release is not limited


# ------------------------------------------------------------------- PolynomialSum
@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ("c=1.5, beta=1e-6", "beta"),
        ("c=1.5, beta=1 - 2**-53", "beta"),
        ("c=10**6, beta=0.5", "c"),
    ],
)
def test_polynomial_parameters_beyond_range_are_rejected(kwargs: str, name: str) -> None:
    """β = 10⁻⁶ (c·ln2/β ≈ 10⁶ mpmath contexts before the first item), β = 1 − 2⁻⁵³
    (a linear search around a 10⁸⁰-sized breakpoint) and c = 10⁶ hung."""
    _rejects(f"dpref.PolynomialSum({kwargs}, epsilon=1).release([1])", name)


def test_polynomial_small_beta_in_range_finishes() -> None:
    """β = 10⁻³ at T = 100 took over 20 s (one breakpoint per empty step of g'), and
    β = 1 − 2⁻¹⁰ with c = 16 hung.  The subprocess's 60 s timeout is only a hang guard
    (no speed is asserted; ``dpref bench`` times PolynomialSum's release)."""
    out = _run(
        """
        import dpref
        from fractions import Fraction
        cases = [(1.5, 1e-3), (16, Fraction(1, 1024)), (16, 1 - Fraction(1, 1024))]
        outs = [
            dpref.PolynomialSum(c=c, beta=b, epsilon=1).release([1] * 100, rng=0)
            for c, b in cases
        ]
        print(sum(o.size for o in outs))
        """,
        timeout=60,
    )
    assert int(out) == 300


@pytest.mark.parametrize(
    ("c", "beta"),
    [
        (Fraction(3, 2), Fraction(1, 10)),
        (2, Fraction(1, 5)),
        (Fraction(11, 10), Fraction(1, 3)),
        (4, Fraction(9, 10)),
        (Fraction(3, 2), Fraction(1, 100)),
    ],
)
def test_polynomial_skipping_empty_steps_changes_nothing(c: object, beta: Fraction) -> None:
    """The jump to the next non-empty step agrees with stepping j one at a time."""
    cf, bf = Fraction(c), beta  # type: ignore[arg-type]
    naive = [polynomial_breakpoint(j, cf, bf) for j in range(400)]
    for j in range(300):
        jn = polynomial_next_break(naive[j], j, cf, bf)
        assert naive[jn] > naive[j] and all(naive[k] == naive[j] for k in range(j, jn))
    m = PolynomialSum(c=c, beta=beta, epsilon=1)
    expected = [
        (j, naive[j - 1] + 1 if j else 0, naive[j] - (naive[j - 1] if j else -1))
        for j in range(300)
        if naive[j] > (naive[j - 1] if j else -1)
    ]
    got = [(i.j, i.d, i.window) for i in m.instances(naive[299] - 1)]
    assert got == expected[: len(got)] and len(got) >= 5


def test_polynomial_node_budget_stops_before_any_noise() -> None:
    """A release past NODE_BUDGET raises before drawing noise (the count is closed-form)."""
    m = PolynomialSum(c=Fraction(3, 2), beta=Fraction(1, 10), epsilon=1)
    with pytest.raises(EnumerationBudgetError, match="NODE_BUDGET"):
        m.node_count(10**6)
    gen = np.random.default_rng(0)
    before = gen.bit_generator.state
    with pytest.raises(EnumerationBudgetError, match="horizon=1000000"):
        m.release(np.zeros(10**6), rng=gen)
    assert gen.bit_generator.state == before


def _series_upper_naive(c: Fraction, beta: Fraction, allocation: str) -> Fraction:
    """The series bound computed without skipping empty steps (one b(j) per j)."""
    from dpref.rigorous import _FIX, _SERIES_TERMS, _ceil_div, _root_upper_fixed

    one = 1 << _FIX
    rho = 1 - beta
    if allocation == "uniform":
        num, den = rho.numerator, rho.denominator
    else:
        num, den = _root_upper_fixed(rho, 2, 3), one
    x = Fraction(num, den)
    kappa = (1 / rho - 1) * Fraction(1443, 1000) / c
    total, p, j = 0, one, 0
    while True:
        bp, bj = polynomial_breakpoint(j - 1, c, beta), polynomial_breakpoint(j, c, beta)
        if bj > bp:
            total += p * (math.floor(math.log2(bj - bp)) + 1)
        p_next = _ceil_div(p * num, den)
        if j >= 8 and (p_next < one >> 70 or j >= _SERIES_TERMS):
            r = Fraction(p_next, one)
            jj = j + 1
            tail = r * (kappa * (jj * (1 - x) + x) / (1 - x) ** 2 + 1 / (1 - x))
            return Fraction(total, one) + tail
        p = p_next
        j += 1


@pytest.mark.parametrize("allocation", ["uniform", "decaying"])
@pytest.mark.parametrize(
    ("c", "beta"),
    [
        (Fraction(2), Fraction(1, 5)),
        (Fraction(3, 2), Fraction(1, 2)),
        (Fraction(3, 2), Fraction(1, 10)),
        (Fraction(4), Fraction(9, 10)),
        (Fraction(11, 10), Fraction(1, 100)),
    ],
)
def test_polynomial_series_bound_unchanged(c: Fraction, beta: Fraction, allocation: str) -> None:
    """Skipping empty steps leaves the series bound (hence every scale) bit-identical."""
    levels = PolynomialSum.instance_levels
    assert polynomial_series_upper(c, beta, allocation, levels=levels) == _series_upper_naive(
        c, beta, allocation
    )


def test_polynomial_decaying_root_is_an_upper_bound() -> None:
    """The fixed-point ``(1−β)^{2/3}`` is the smallest 128-bit value above it, exactly."""
    from dpref.rigorous import _FIX, _root_upper_fixed

    for beta in (Fraction(1, 1024), Fraction(1, 10), Fraction(1, 2), 1 - Fraction(1, 1024)):
        rho = 1 - beta
        s = _root_upper_fixed(rho, 2, 3)
        assert Fraction(s, 1 << _FIX) ** 3 >= rho**2 > Fraction(s - 1, 1 << _FIX) ** 3


# -------------------------------------------------------------------- AllWindowSum
@pytest.mark.parametrize("delta", ["1e300", "2**64 - 1", "2000", "1 + Fraction(1, 2**40)"])
def test_allwindow_delta_beyond_range_is_rejected(delta: str) -> None:
    """δ = 10³⁰⁰ hung in ζ(δ); δ = 2⁶⁴−1 hung on release (k^δ exactly); δ = 2000 failed
    with a message that did not name ``delta``."""
    _rejects(f"dpref.AllWindowSum(delta={delta}, epsilon=1).release([1, 0, 1])", "delta")


def test_zeta_bounds_refuses_out_of_range_delta() -> None:
    with pytest.raises(ParameterError, match="delta="):
        zeta_bounds(Fraction(10**300))
    lo, up = zeta_bounds(Fraction(128))
    assert 1 < lo <= up < 1 + Fraction(1, 2**127)


def test_allwindow_delta_range_edges_release() -> None:
    for d in (1 + Fraction(1, 2**32), Fraction(128)):
        out = dpref.AllWindowSum(delta=d, epsilon=1).release([1, 0, 1], rng=0)
        assert out.shape == (3,)


# -------------------------------------------------------------------- lower bounds
def test_exponential_lower_bound_with_huge_packing_distance() -> None:
    """D ≈ 7.6·10⁹: ``α^D`` was computed exactly (a 7.6-Gbit fraction)."""
    out = _run(
        """
        from dpref.lower_bounds import exponential_decay, lower_bound
        r = lower_bound(exponential_decay(0.5), epsilon=1e-9, q=1000)
        print(r.D, r.value)
        """,
        timeout=60,
    )
    d, value = out.split()
    assert int(d) == 7600902459
    assert Fraction(1, 2) < Fraction(value) <= 1


def test_exponential_lower_bound_is_exact_in_range() -> None:
    r = lower_bound(exponential_decay(Fraction(1, 2)), 1, 1000)
    assert r.D == 7 and r.value == (1 - Fraction(1, 2**7)) / 1


def test_lower_bound_with_tiny_epsilon_is_exact() -> None:
    """At ε = 10⁻²⁰⁰ the 50-digit ``ln(2q)/ε`` had no fractional digits left."""
    r = lower_bound(exponential_decay(Fraction(1, 2)), Fraction(1, 10**200), 1000)
    assert r.D > 10**200 and 0 < r.value <= 1
