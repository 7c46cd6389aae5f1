"""The public calculator: validate, then dispatch to the oracle or a fast algorithm."""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from typing import Any, Literal

from dpref.errors import DprefError, DprefTypeError, ParameterError
from dpref.sensitivity.closed_forms import _fast_closed_form
from dpref.sensitivity.model import (
    DEFAULT_MAX_ENUMERATION,
    Model,
    UniverseKind,
    _Problem,
    _validate,
)
from dpref.sensitivity.moments import _fast_moment
from dpref.sensitivity.oracle import _oracle
from dpref.sensitivity.percentiles import _fast_percentile
from dpref.validation import ceil_float, check_choice, check_int_range, fmt

__all__ = [
    "exact_global_sensitivity",
    "global_sensitivity",
    "global_sensitivity_table",
    "oracle_sensitivity",
]


def _fast(prob: _Problem, budget: int) -> Fraction | float:
    kind = prob.query.kind
    if kind in ("count", "sum", "mean"):
        return _fast_closed_form(prob)
    if kind == "percentile":
        return _fast_percentile(prob, budget)
    return _fast_moment(prob, budget)


def _solve(
    values: Any,
    *,
    size: Any,
    query: Any,
    hamming: Any,
    model: Any,
    universe: Any,
    method: Any,
    percentile: Any,
    unbounded_side: Any,
    max_enumeration: Any,
) -> Fraction | float:
    method = check_choice("method", method, ("fast", "oracle"))
    budget = check_int_range("max_enumeration", max_enumeration, 1, None)
    prob = _validate(
        values,
        size=size,
        query=query,
        hamming=hamming,
        model=model,
        universe=universe,
        percentile=percentile,
        side=unbounded_side,
    )
    return _oracle(prob, budget) if method == "oracle" else _fast(prob, budget)


def exact_global_sensitivity(
    values: Any,
    *,
    size: int,
    query: str,
    hamming: int = 1,
    model: Model = "unbounded",
    universe: UniverseKind = "dataset",
    method: Literal["fast", "oracle"] = "fast",
    percentile: Any = 50,
    unbounded_side: Literal["both", "remove", "add"] = "both",
    max_enumeration: int = DEFAULT_MAX_ENUMERATION,
) -> Fraction:
    """The global sensitivity as an exact :class:`~fractions.Fraction`.

    Same arguments as :func:`global_sensitivity`.  ``query="std"`` is irrational in general
    and raises :class:`~dpref.errors.ParameterError`; use :func:`global_sensitivity`.
    """
    if isinstance(query, str) and query.strip().lower() == "std":
        raise ParameterError("query='std': not exact (a square root); use global_sensitivity")
    out = _solve(
        values,
        size=size,
        query=query,
        hamming=hamming,
        model=model,
        universe=universe,
        method=method,
        percentile=percentile,
        unbounded_side=unbounded_side,
        max_enumeration=max_enumeration,
    )
    assert isinstance(out, Fraction)
    return out


def global_sensitivity(
    values: Any,
    *,
    size: int,
    query: str,
    hamming: int = 1,
    model: Model = "unbounded",
    universe: UniverseKind = "dataset",
    method: Literal["fast", "oracle"] = "fast",
    percentile: Any = 50,
    unbounded_side: Literal["both", "remove", "add"] = "both",
    max_enumeration: int = DEFAULT_MAX_ENUMERATION,
) -> float:
    r"""Global L1 sensitivity ``max |q(D) − q(D')|`` of ``query`` (docs/spec.md §4).

    Parameters
    ----------
    values
        The universe: the records of a dataset (``universe="dataset"``; duplicates are
        different people) or the allowed values (``universe="range"``; duplicates ignored).
    size
        ``n``, the number of records of a release.
    query
        ``count``, ``sum``, ``mean``, ``median``, ``var``, ``std``, ``percentile_<p>``
        (``0 <= p <= 100``), or ``percentile`` with ``percentile=p``.
    hamming
        ``k``, the number of records added, removed (unbounded) or replaced (bounded);
        ``1 <= k <= n``.  ``k > 1`` is group privacy for groups of ``k`` people.
    model
        ``"unbounded"`` (add/remove) or ``"bounded"`` (replace).
    universe
        ``"dataset"`` or ``"range"``.
    method
        ``"fast"`` (default, exact algorithms) or ``"oracle"`` (literal enumeration).
    percentile
        The percentile for ``query="percentile"``.
    unbounded_side
        For ``model="unbounded"``: ``"both"`` (default; the notebook's choice), or only the
        neighbours with k fewer (``"remove"``) or k more (``"add"``) records.
    max_enumeration
        Work budget; larger problems raise :class:`~dpref.errors.EnumerationBudgetError`
        before any enumeration starts.

    Returns
    -------
    float
        The exact sensitivity rounded up to a float (``std``: a float computed from exact
        variances, accurate to a few ulps).

    References
    ----------
    .. [1] C. Dwork, A. Roth, "The Algorithmic Foundations of Differential Privacy",
       2014, Def. 3.1 (ℓ1 sensitivity) and §2.3 (group privacy).
    """
    out = _solve(
        values,
        size=size,
        query=query,
        hamming=hamming,
        model=model,
        universe=universe,
        method=method,
        percentile=percentile,
        unbounded_side=unbounded_side,
        max_enumeration=max_enumeration,
    )
    return ceil_float(out) if isinstance(out, Fraction) else float(out)


def global_sensitivity_table(columns: Mapping[str, Any], **kwargs: Any) -> dict[str, float]:
    """:func:`global_sensitivity` for every column of a table, as the notebook reports it."""
    if not isinstance(columns, Mapping):
        raise DprefTypeError(f"columns={fmt(columns)}: must map column names to values")
    out = {}
    for name, col in columns.items():
        try:
            out[str(name)] = global_sensitivity(col, **kwargs)
        except DprefError as exc:
            raise type(exc)(f"columns[{name!r}]: {exc} (columns={fmt(columns)})") from None
    return out


def oracle_sensitivity(values: Any, **kwargs: Any) -> float:
    """The brute-force reference: :func:`global_sensitivity` with ``method="oracle"``."""
    return global_sensitivity(values, method="oracle", **kwargs)
