"""``dpref verify``'s ``audit-gaussian`` rows: the approximate-DP checks of every mechanism.

The rows' statistical checks run at a fixed seed with stated false-alarm rates
(sampled audit at confidence 0.999, conformance at 10⁻⁴: ``FALSE_ALARM`` per row at
most); the power check under-noises Binary and expects the exact audit to fail it.
"""

from __future__ import annotations

import math
from fractions import Fraction

import pytest

from dpref.audit.suite import gaussian_audit_suite
from dpref.mechanisms import Binary
from dpref.verify import VerifyOptions

FALSE_ALARM = 1e-3 + 1e-4
"""At most this probability that a correct mechanism's row fails (audit + conformance)."""


@pytest.mark.parametrize("name", ["binary", "honaker", "sqrt"])
def test_correct_mechanisms_pass(name: str) -> None:
    (row,) = gaussian_audit_suite(VerifyOptions(mechanisms=(name,)))
    assert row.suite == "audit-gaussian" and row.mechanism == name
    assert row.checks == 3 and row.failed == 0, row.detail
    assert row.extra["declared_rho"] == "1/2"
    mu2 = Fraction(row.extra["exact_mu_squared"])
    assert mu2 <= 1 * (1 + Fraction(1, 10**12))  # μ² ≤ 2ρ = 1 up to the float σ's rounding
    assert row.extra["mu_lower_bound"] is None or row.extra["mu_lower_bound"] <= math.sqrt(mu2)


def test_binary_released_exactly_at_mu_one() -> None:
    (row,) = gaussian_audit_suite(VerifyOptions(mechanisms=("binary",)))
    assert row.proven_sum == "mu^2=1"


def test_an_under_noised_mechanism_fails_its_row(monkeypatch: pytest.MonkeyPatch) -> None:
    """Power: σ drawn 10 % too small makes the exact μ² exceed 2ρ (1/0.81 > 1)."""
    honest = Binary.noise_multipliers

    def short(self: Binary, horizon: int) -> object:
        return honest(self, horizon) * 0.9

    monkeypatch.setattr(Binary, "noise_multipliers", short)
    (row,) = gaussian_audit_suite(VerifyOptions(mechanisms=("binary",)))
    assert row.failed >= 1
    assert "exact audit" in row.detail
