"""Mechanism lookup by command-line name, and construction from parameters.

The table of mechanisms is :data:`dpref.mechanisms.MECHANISMS`, filled by the classes
themselves; everything here is derived from it (the parameters from each class's
constructor signature).
"""

from __future__ import annotations

from typing import Any

from dpref.errors import ParameterError
from dpref.mechanisms import MECHANISMS, Mechanism
from dpref.validation import choose_from, fmt

__all__ = [
    "MECHANISM_PARAMS",
    "build_mechanism",
    "check_mechanism_name",
    "mechanism_names",
    "parameter_flags",
]


def mechanism_names() -> list[str]:
    """Every registered mechanism name, in registration order."""
    return list(MECHANISMS)


def mechanism_params() -> dict[str, tuple[str, ...]]:
    """Constructor parameters of every registered mechanism besides ``epsilon``,
    ``domain`` and ``noise`` (from the signatures)."""
    return {name: cls.parameters() for name, cls in MECHANISMS.items()}


MECHANISM_PARAMS: dict[str, tuple[str, ...]] = mechanism_params()
"""Constructor parameters each mechanism takes besides ``epsilon`` (and ``domain``/``noise``),
derived from the signatures when this module is imported."""


def parameter_flags() -> dict[str, str]:
    """Every mechanism-specific parameter (besides ``horizon``) → its help text, naming
    the mechanisms that take it (for the command line)."""
    helps: dict[str, list[str]] = {}
    for cls in MECHANISMS.values():
        described = cls.parameter_help()
        for param in cls.parameters():
            if param != "horizon":
                text = described.get(param, "")
                helps.setdefault(param, []).append(
                    f"{cls.__name__}: {text}" if text else cls.__name__
                )
    return {param: "; ".join(texts) for param, texts in helps.items()}


def check_mechanism_name(name: str, option: str = "mechanism") -> None:
    """A registered mechanism name; otherwise an error naming ``option`` with the close
    names and the list (:func:`~dpref.validation.choose_from`)."""
    if name not in MECHANISMS:
        raise ParameterError(f"{option}={fmt(name)}: {choose_from(name, list(MECHANISMS))}")


def build_mechanism(name: str, *, epsilon: Any = None, rho: Any = None, **params: Any) -> Mechanism:
    """Construct a mechanism by CLI name with ``epsilon`` (pure ε-DP) or ``rho`` (ρ-zCDP);
    ``None`` parameters are left out.

    Raises :class:`~dpref.errors.ParameterError` for an unknown name, a parameter the
    mechanism does not take, or a required parameter that is missing.
    """
    check_mechanism_name(name)
    cls = MECHANISMS[name]
    allowed = set(cls.parameters()) | {"domain", "noise"}
    given = {k: v for k, v in params.items() if v is not None}
    extra = sorted(set(given) - allowed)
    if extra:
        raise ParameterError(f"{extra[0]}={fmt(given[extra[0]])}: not a parameter of {name}")
    for pname in cls.required_parameters():
        if pname not in given:
            raise ParameterError(f"{pname}=None: {name} needs it (--{pname.replace('_', '-')})")
    return cls(epsilon=epsilon, rho=rho, **given)
