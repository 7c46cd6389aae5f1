"""Errors raised by dpref.

Every error dpref raises on bad input is a :class:`DprefError`, and also a
:class:`ValueError` or :class:`TypeError`, so callers may catch either the dpref
hierarchy or the standard one.  Messages name the parameter and its value
(``epsilon=-1: must be > 0``), following Hypothesis's ``internal/validation.py``.
"""

from __future__ import annotations

__all__ = [
    "ClusterError",
    "DomainError",
    "DprefError",
    "DprefTypeError",
    "EnumerationBudgetError",
    "HorizonError",
    "ParameterError",
    "PlanCheckError",
    "TargetError",
]


class DprefError(Exception):
    """Base class of every error dpref raises on purpose."""


class ParameterError(DprefError, ValueError):
    """A parameter has the right type but an invalid value (``epsilon=0``)."""


class DprefTypeError(DprefError, TypeError):
    """A parameter has the wrong type (``horizon=True``, ``stream='abc'``)."""


class DomainError(DprefError, ValueError):
    """A stream value lies outside the mechanism's domain (``2`` in a bit stream)."""


class HorizonError(DprefError, ValueError):
    """A stream is longer than the horizon, or an online counter stepped past it."""


class EnumerationBudgetError(DprefError, ValueError):
    """An exact computation would exceed its configured enumeration budget."""


class PlanCheckError(DprefError, ValueError):
    """A linear plan failed one of its exact checks (unbiasedness, causality, privacy)."""


class TargetError(DprefError, ValueError):
    """A third-party audit target could not be loaded or called."""


class ClusterError(DprefError, RuntimeError):
    """A Dask cluster running an audit's shards failed (a lost worker, a task not run)."""
