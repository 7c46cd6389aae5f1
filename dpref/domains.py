"""Stream domains and the event-level sensitivity Δ they induce.

A domain says which values one stream item may take and which streams are
neighbours.  Event-level privacy compares streams that differ in one item:

* ``"replace"`` (bounded): one item changes from any allowed value to any other,
  so ``Δ = upper − lower``;
* ``"add_remove"`` (unbounded): one item is present or absent (absent counts as 0),
  so ``Δ = max(|lower|, |upper|)``.

For bits both give ``Δ = 1``.  Δ is an exact :class:`~fractions.Fraction`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from functools import cached_property
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from dpref.errors import DomainError, DprefTypeError, ParameterError
from dpref.sensitivity.items import stream_item_sensitivity
from dpref.validation import (
    check_choice,
    check_flag,
    check_fraction,
    check_real_scalar,
    check_real_vector,
    fmt,
)

__all__ = ["Domain", "Neighbours", "bits", "bounded_integers", "bounded_reals"]

Neighbours = Literal["replace", "add_remove"]


@dataclass(frozen=True, kw_only=True)
class Domain:
    """The set of values a stream item may take, and the neighbour relation."""

    lower: Fraction
    """Smallest allowed item value (exact)."""
    upper: Fraction
    """Largest allowed item value (exact)."""
    integer: bool = True
    """Whether items must be integers (required for exact discrete Laplace noise)."""
    neighbours: Neighbours = "replace"
    """``"replace"``: one item replaced; ``"add_remove"``: one item present or absent."""
    name: str = field(default="")
    """A short label for reports."""

    def __post_init__(self) -> None:
        lower = check_fraction("lower", self.lower)
        upper = check_fraction("upper", self.upper)
        object.__setattr__(self, "lower", lower)
        object.__setattr__(self, "upper", upper)
        object.__setattr__(self, "integer", check_flag("integer", self.integer))
        check_choice("neighbours", self.neighbours, ("replace", "add_remove"))
        if not isinstance(self.name, str):
            raise DprefTypeError(f"name={fmt(self.name)}: must be a str")
        if lower >= upper:
            raise ParameterError(f"upper={fmt(self.upper)}: must be > lower={fmt(self.lower)}")
        if self.integer and (lower.denominator != 1 or upper.denominator != 1):
            raise ParameterError(
                f"lower={fmt(self.lower)}, upper={fmt(self.upper)}: integer domains need "
                "integer bounds"
            )
        if self.neighbours == "add_remove" and not lower <= 0 <= upper:
            raise ParameterError(
                f"neighbours='add_remove' needs 0 in [lower, upper], got [{lower}, {upper}]"
            )
        if not self.name:
            kind = "int" if self.integer else "real"
            object.__setattr__(self, "name", f"{kind}[{lower},{upper}]/{self.neighbours}")

    @property
    def sensitivity(self) -> Fraction:
        """Event-level sensitivity Δ of one item (exact)."""
        return stream_item_sensitivity(self.lower, self.upper, self.neighbours)

    @property
    def is_bits(self) -> bool:
        """True for the bit domain {0, 1}."""
        return self.integer and self.lower == 0 and self.upper == 1

    def extremes(self) -> tuple[float, float]:
        """The two values that realise Δ on a neighbouring pair."""
        if self.neighbours == "replace":
            return float(self.lower), float(self.upper)
        far = self.upper if abs(self.upper) >= abs(self.lower) else self.lower
        return 0.0, float(far)

    @cached_property
    def _float_bounds(self) -> tuple[float, float]:
        return float(self.lower), float(self.upper)

    def check_value(self, name: str, value: Any, step: int | None = None) -> float:
        """Validate one item (online counters) and return it as a float.

        ``step``, when given, is named in the error (``x=2 at step t=5: …``).  The item
        is checked as :meth:`check_stream` checks each item of a stream (one checker,
        :func:`~dpref.validation.check_real_scalar`): a complex number, a ``Decimal``
        or a string is a :class:`~dpref.errors.DprefTypeError` on both paths.
        """
        where = "" if step is None else f" at step t={step}"
        try:
            x = check_real_scalar(name, value)
        except (DprefTypeError, DomainError) as exc:
            raise type(exc)(f"{exc}{where}") from None
        lo, hi = self._float_bounds
        if lo <= x <= hi and (not self.integer or x.is_integer()):
            return x
        raise DomainError(f"{name}={fmt(value)}{where}: outside the domain {self.name}")

    def check_stream(
        self, name: str, stream: Any, *, horizon: int | None = None
    ) -> npt.NDArray[np.float64]:
        """Validate a whole stream: 1-D, finite, in the domain, not past the horizon."""
        if isinstance(stream, np.ndarray) and stream.dtype == np.bool_:
            stream = stream.astype(np.int64)
        arr = check_real_vector(name, stream, max_len=horizon)
        lo, hi = self._float_bounds
        if self.is_bits:
            ok = arr == 0.0
            ok |= arr == 1.0
        else:
            ok = arr >= lo
            ok &= arr <= hi
            if self.integer:
                ok &= arr == np.floor(arr)
        if not ok.all():
            bad = ~ok
            i = int(np.flatnonzero(bad)[0])
            raise DomainError(f"{name}[{i}]={float(arr[i])!r}: outside the domain {self.name}")
        return arr


def bits() -> Domain:
    """The bit domain {0, 1} (Δ = 1), the default for counting."""
    return Domain(lower=Fraction(0), upper=Fraction(1), integer=True, name="bits")


def bounded_integers(lower: int, upper: int, neighbours: Neighbours = "replace") -> Domain:
    """Integers in ``[lower, upper]``."""
    return Domain(
        lower=check_fraction("lower", lower),
        upper=check_fraction("upper", upper),
        integer=True,
        neighbours=neighbours,
    )


def bounded_reals(lower: Any, upper: Any, neighbours: Neighbours = "replace") -> Domain:
    """Reals in ``[lower, upper]`` (bounds exact)."""
    return Domain(
        lower=check_fraction("lower", lower),
        upper=check_fraction("upper", upper),
        integer=False,
        neighbours=neighbours,
    )
