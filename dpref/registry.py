"""Mechanism lookup by command-line name, and construction from parameters."""

from __future__ import annotations

import inspect
from typing import Any

from dpref.errors import ParameterError
from dpref.mechanisms import MECHANISMS, Mechanism
from dpref.validation import fmt

__all__ = ["MECHANISM_PARAMS", "build_mechanism", "mechanism_names"]

MECHANISM_PARAMS: dict[str, tuple[str, ...]] = {
    "simple1": ("horizon",),
    "simple2": ("horizon",),
    "two-level": ("horizon", "block_size"),
    "binary": ("horizon",),
    "hybrid": ("horizon",),
    "window": ("horizon", "window"),
    "allwindow": ("horizon", "delta", "window"),
    "exponential": ("horizon", "alpha"),
    "polynomial": ("horizon", "c", "beta"),
}
"""Constructor parameters each mechanism takes besides ``epsilon`` (and ``domain``/``noise``)."""


def mechanism_names() -> list[str]:
    """Every registered mechanism name."""
    return list(MECHANISMS)


def build_mechanism(name: str, *, epsilon: Any, **params: Any) -> Mechanism:
    """Construct a mechanism by CLI name; ``None`` parameters are left out.

    Raises :class:`~dpref.errors.ParameterError` for an unknown name or a parameter
    the mechanism does not take.
    """
    if name not in MECHANISMS:
        raise ParameterError(f"mechanism={fmt(name)}: unknown; choose from {', '.join(MECHANISMS)}")
    allowed = set(MECHANISM_PARAMS.get(name, ())) | {"domain", "noise"}
    given = {k: v for k, v in params.items() if v is not None}
    extra = sorted(set(given) - allowed)
    if extra:
        raise ParameterError(f"{extra[0]}={fmt(given[extra[0]])}: not a parameter of {name}")
    cls = MECHANISMS[name]
    for pname, param in inspect.signature(cls).parameters.items():
        if param.default is inspect.Parameter.empty and pname != "epsilon" and pname not in given:
            raise ParameterError(f"{pname}=None: {name} needs it (--{pname.replace('_', '-')})")
    return cls(epsilon=epsilon, **given)
