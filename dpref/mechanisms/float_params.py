"""Float-derived mechanism parameters given as text: a decimal is the float it denotes.

**The rule.**  A mechanism parameter is *float-derived* when its class lists it in
``float_parameters`` (BLT's ``theta`` and ``omega``: the values a library such as
jax_privacy computes in floating point and hands over as floats).  On the command line a
decimal literal given to such a parameter (``--theta 0.9989,0.95``: a number with a
decimal point or an exponent) is the float64 that literal denotes, taken at its exact
binary value — ``Fraction(float("0.9989"))`` = 8997291335560777/2⁵³ — exactly what the
Python API does with a float (``BLT(theta=[0.9989])``).  Integers and rational strings
(``"9989/10000"``) stay the exact rationals they are.  Every other parameter — ε, ρ, α, β,
window sizes — takes a decimal as the decimal rational it spells (``--epsilon 0.1`` is
1/10): a budget is what its author wrote.  Each conversion is reported (the report's
``note`` lines, ``input_notes`` in its JSON) when the float differs from the decimal.
"""

from __future__ import annotations

import math
import re
from decimal import Decimal
from fractions import Fraction
from typing import Any

from dpref.errors import ParameterError

__all__ = ["binary_hint", "binary_parameters", "float_parameters"]

_DECIMAL = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")
"""A decimal literal (a float's spelling); it is float-like when it has a point or an exponent."""


def float_parameters(cls: Any) -> tuple[str, ...]:
    """The parameters ``cls`` declares float-derived (``float_parameters``; none by default)."""
    value = getattr(cls, "float_parameters", ())
    return tuple(value) if isinstance(value, tuple | list) else ()


def binary_hint(param: str) -> str:
    """The sentence a float-derived parameter's ``--help`` ends with ('' for the others)."""
    from dpref.mechanisms.base import MECHANISMS

    if any(param in float_parameters(cls) for cls in MECHANISMS.values()):
        return (
            " A decimal such as 0.9989 is the float it denotes, taken at its exact binary "
            "value (as a Python float is); p/q stays exact."
        )
    return ""


def _binary(name: str, item: str, notes: list[str]) -> str:
    text = item.strip()
    if not (_DECIMAL.fullmatch(text) and ("." in text or "e" in text.lower())):
        return item
    value = float(text)
    if not math.isfinite(value):
        raise ParameterError(f"{name}={text}: must be finite")
    exact = Fraction(value)
    # the decimal is a float exactly (0.5): nothing to say.  Compared as Decimals: a
    # Fraction of "1e-999999999" would build a billion-digit integer
    if Decimal(text) == Decimal(value):
        return str(exact)
    den = exact.denominator
    shown = (
        f"{exact.numerator}/2^{den.bit_length() - 1}"
        if den > 1 and den & (den - 1) == 0
        else str(exact)
    )
    notes.append(f"{name} taken at the exact binary value of the float {text} = {shown}")
    return str(exact)


def binary_parameters(cls: Any, params: dict[str, Any], args: Any) -> dict[str, Any]:
    """``params`` with every decimal given to a float-derived parameter of ``cls`` replaced
    by the exact rational of its float (module doc); the notes go to ``args.input_notes``
    (``args``: the command line's namespace, or any object with attributes)."""
    names = float_parameters(cls)
    if not names:
        return params
    notes: list[str] = []
    out = dict(params)
    for name in names:
        value = out.get(name)
        if isinstance(value, str):
            parts = value.replace(";", ",").split(",")
            if len(parts) > 1:
                converted = [_binary(f"{name}[{i}]", p, notes) for i, p in enumerate(parts)]
            else:
                converted = [_binary(name, value, notes)]
            out[name] = ",".join(converted)
    if notes:
        held = getattr(args, "input_notes", None)
        if held is None:
            args.input_notes = held = []
        held.extend(n for n in notes if n not in held)
    return out
