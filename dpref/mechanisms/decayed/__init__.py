"""Decayed sums under continual observation (SPEC §2): WindowSum, AllWindowSum,
ExponentialSum, PolynomialSum."""

from dpref.mechanisms.decayed.window import (
    AllWindowSum,
    ExponentialSum,
    PolynomialSum,
    WindowSum,
    exponential_sensitivity_bounds,
    exponential_sensitivity_partial,
    polynomial_breakpoint,
    zeta_bounds,
)
from dpref.mechanisms.decayed.window import (
    _cover_scalar as _cover_scalar,
)
from dpref.mechanisms.decayed.window import (
    _polynomial_series_upper as _polynomial_series_upper,
)

__all__ = [
    "AllWindowSum",
    "ExponentialSum",
    "PolynomialSum",
    "WindowSum",
    "exponential_sensitivity_bounds",
    "exponential_sensitivity_partial",
    "polynomial_breakpoint",
    "zeta_bounds",
]
