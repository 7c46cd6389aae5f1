"""Query names, their parsing and their exact evaluation (numpy semantics).

``count``, ``sum``, ``mean``, ``median``, ``var`` and ``std`` (population, ``ddof=0``) and
``percentile_<p>`` (numpy's ``linear`` method, ``0 ≤ p ≤ 100``).  Evaluation is exact
(:class:`~fractions.Fraction`), except ``std``, a float square root of an exact variance.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from dpref.errors import DprefTypeError, ParameterError
from dpref.validation import check_fraction, choose_from, fmt, parse_number_string

__all__ = ["NOTEBOOK_QUERIES", "evaluate_query"]

NOTEBOOK_QUERIES: tuple[str, ...] = (
    "mean",
    "median",
    "count",
    "sum",
    "std",
    "var",
    "percentile_25",
    "percentile_50",
    "percentile_75",
    "percentile_90",
)
"""The ten queries of the notebook's figures, in its order."""

_PERCENTILE_RE = re.compile(r"^percentile_?(.+)$")


@dataclass(frozen=True, kw_only=True)
class _Query:
    """A parsed query name."""

    kind: str
    """One of count, sum, mean, var, std, percentile."""
    p: Fraction = Fraction(50)
    """The percentile in [0, 100] (only for ``kind == "percentile"``)."""


def _parse_query(query: Any, percentile: Any) -> _Query:
    if not isinstance(query, str):
        raise DprefTypeError(f"query={fmt(query)}: must be a string such as 'mean'")
    name = query.strip().lower()
    if name in ("count", "sum", "mean", "var", "std"):
        return _Query(kind=name)
    if name == "median":
        return _Query(kind="percentile", p=Fraction(50))
    if name == "percentile":
        p = check_fraction("percentile", percentile)
        if not 0 <= p <= 100:
            raise ParameterError(f"percentile={fmt(percentile)}: must be in [0, 100]")
        return _Query(kind="percentile", p=p)
    match = _PERCENTILE_RE.match(name)
    if match:
        try:  # bounded: "percentile_1e999999999" hung (and then failed) in Fraction()
            p = parse_number_string("query", match.group(1))
        except ParameterError:
            raise ParameterError(
                f"query={fmt(query)}: percentile must be a number, as in 'percentile_25'"
            ) from None
        if not 0 <= p <= 100:
            raise ParameterError(f"query={fmt(query)}: percentile must be in [0, 100]")
        return _Query(kind="percentile", p=p)
    names = ["count", "sum", "mean", "median", "var", "std", "percentile_<p>"]
    raise ParameterError(
        f"query={fmt(query)}: {choose_from(name, names)} (percentile_<p>: 0 <= p <= 100)"
    )


def _percentile_weights(size: int, p: Fraction) -> dict[int, Fraction]:
    """Weights on sorted positions giving numpy's linear percentile of ``size`` values."""
    h = (size - 1) * p / 100
    i = math.floor(h)
    f = h - i
    weights = {i: 1 - f}
    if f:
        weights[i + 1] = f
    return weights


def evaluate_query(query: str, values: Sequence[Fraction], *, percentile: Any = 50) -> Any:
    """Evaluate ``query`` on ``values`` exactly (a Fraction; a float for ``std``).

    numpy semantics: ``var`` and ``std`` use ``ddof=0``; percentiles use the linear method.
    The empty dataset has count and sum 0; the other queries raise ``ParameterError``.
    """
    q = _parse_query(query, percentile)
    return _evaluate(q, sorted(_dataset(values)))


def _dataset(values: Any) -> list[Fraction]:
    """A dataset as exact Fractions: a 1-D sequence of real numbers (the empty one too)."""
    if isinstance(values, str | bytes) or getattr(values, "ndim", 1) != 1:
        raise DprefTypeError(f"values={fmt(values)}: must be a 1-D sequence of numbers")
    try:
        items = list(values)
    except TypeError:
        raise DprefTypeError(f"values={fmt(values)}: must be a 1-D sequence of numbers") from None
    return [check_fraction(f"values[{i}]", v) for i, v in enumerate(items)]


def _evaluate(q: _Query, xs: Sequence[Fraction]) -> Any:
    """``q`` on an already sorted sequence of Fractions."""
    n = len(xs)
    if q.kind == "count":
        return Fraction(n)
    if q.kind == "sum":
        return sum(xs, Fraction(0))
    if n == 0:
        raise ParameterError(f"query={q.kind!r}: undefined on an empty dataset")
    if q.kind == "percentile":
        return sum((w * xs[i] for i, w in _percentile_weights(n, q.p).items()), Fraction(0))
    mean = sum(xs, Fraction(0)) / n
    if q.kind == "mean":
        return mean
    var = sum(((x - mean) ** 2 for x in xs), Fraction(0)) / n
    if q.kind == "var":
        return var
    return _sqrt(var)


def _sqrt(x: Fraction) -> float:
    return math.sqrt(x.numerator) / math.sqrt(x.denominator)
