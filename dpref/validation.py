"""Small checkers used by every public entry point.

Each checker validates one parameter, raises a :class:`~dpref.errors.DprefError`
subclass whose message reads ``name=value: what is wrong``, and returns the
value converted to its canonical type.  They run before any noise is drawn.
"""

from __future__ import annotations

import difflib
import math
import numbers
import re
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt

from dpref.errors import DomainError, DprefTypeError, HorizonError, ParameterError

__all__ = [
    "MAX_NUMBER_STRING",
    "MAX_RHO",
    "MAX_STRING_EXPONENT",
    "MIN_RHO",
    "ceil_float",
    "ceil_sqrt_float",
    "check_choice",
    "check_epsilon",
    "check_flag",
    "check_fraction",
    "check_int_range",
    "check_int_vector",
    "check_positive_int",
    "check_probability_open",
    "check_real_scalar",
    "check_real_vector",
    "check_rho",
    "check_runs",
    "choose_from",
    "floor_float",
    "fmt",
    "is_real_number",
    "parse_number_string",
]

MAX_NUMBER_STRING = 1000
"""Longest string :func:`check_fraction` parses (characters, after stripping blanks)."""
MAX_STRING_EXPONENT = 4000
"""Largest ``|exponent|`` :func:`check_fraction` accepts in a string such as ``"1e-5"``:
``Fraction("1e-999999999")`` would build a 10⁹-digit integer and hang."""
_EXPONENT = re.compile(r"[eE]\s*([+-]?[0-9_]+)\s*$")


def fmt(value: Any) -> str:
    """Render a value for an error message, short and unambiguous.

    Never raises (an error message must survive its subject): a ``__repr__`` that raises
    or returns a non-string gives ``<TypeName object: repr raised E>``.
    """
    try:
        text = repr(value)
        if not isinstance(text, str):
            raise TypeError("__repr__ returned a non-string")
    except ValueError:  # an int beyond sys.get_int_max_str_digits(), or a Fraction of them
        text = f"<a {_type_name(value)} too large to print>"
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # a hostile or broken __repr__
        text = f"<{_type_name(value)} object: repr raised {_type_name(exc)}>"
    if len(text) > 60:
        text = text[:57] + "..."
    return text


def _type_name(value: Any) -> str:
    try:
        name = type(value).__name__
        return name if isinstance(name, str) else "object"
    except Exception:
        return "object"


def parse_number_string(name: str, value: str) -> Fraction:
    """``Fraction(value)`` of a number string with its length and exponent bounded first
    (``"1e-999999999"`` would build a 10⁹-digit integer): a
    :class:`~dpref.errors.ParameterError` naming ``name`` otherwise."""
    return _parse_number_string(name, value)


def fmt_sequence(value: Any, shape: tuple[int, ...] | None = None) -> str:
    """Render a sequence-like value for an error message without printing a long one.

    Short inputs are shown as :func:`fmt` shows them; a long list or array (or one whose
    shape is given) as ``<list of shape (9,)>`` — its repr would cost time and memory
    proportional to its length on the error path.
    """
    if shape is None:
        shape = getattr(value, "shape", None)
        if not (isinstance(shape, tuple) and all(isinstance(d, int) for d in shape)):
            try:
                shape = (len(value),)
            except TypeError:
                return fmt(value)
    if math.prod(shape) <= 8:
        return fmt(value)
    return f"<{type(value).__name__} of shape {shape}>"


def _is_bool(value: Any) -> bool:
    return isinstance(value, bool | np.bool_)


def is_real_number(value: Any) -> bool:
    """Whether ``value`` is one real number as dpref accepts it (bools included).

    numpy registers ``timedelta64`` as an integer type; it, ``datetime64``, complex
    numbers, strings, ``Decimal`` and other objects are not real numbers here.  The one
    predicate behind the batch path (object arrays) and the online path (one item).
    """
    if isinstance(value, np.timedelta64 | np.datetime64 | str | bytes):
        return False
    return _is_bool(value) or isinstance(value, numbers.Real)


def _parse_number_string(name: str, value: str) -> Fraction:
    """``Fraction(value)`` with the length and exponent bounded first (no hang)."""
    text = value.strip()
    if len(text) > MAX_NUMBER_STRING:
        raise ParameterError(
            f"{name}={fmt(value)}: a number string may have at most {MAX_NUMBER_STRING} "
            f"characters, got {len(text)}"
        )
    match = _EXPONENT.search(text)
    if match is not None:
        digits = match.group(1).replace("_", "").lstrip("+-").lstrip("0")
        if len(digits) > len(str(MAX_STRING_EXPONENT)) or int(digits or "0") > MAX_STRING_EXPONENT:
            raise ParameterError(
                f"{name}={fmt(value)}: the exponent must lie in "
                f"[-{MAX_STRING_EXPONENT}, {MAX_STRING_EXPONENT}]"
            )
    try:
        return Fraction(text)
    except (ValueError, ZeroDivisionError) as exc:
        raise ParameterError(f"{name}={fmt(value)}: not a number ({exc})") from None


def check_fraction(name: str, value: Any) -> Fraction:
    """Convert an exact-able real number to :class:`Fraction`.

    Accepts ints, Fractions, finite floats (converted exactly, so ``0.1`` becomes
    the binary fraction nearest 0.1; numpy floats of every width, ``longdouble``
    included) and strings such as ``"1/3"`` or ``"0.5"`` of at most
    :data:`MAX_NUMBER_STRING` characters whose exponent (``"1e-5"``) lies within
    ±:data:`MAX_STRING_EXPONENT`.  Rejects bools, complex numbers, ``timedelta64``,
    ``datetime64`` and other non-real objects (:class:`~dpref.errors.DprefTypeError`).
    """
    if _is_bool(value):
        raise DprefTypeError(f"{name}={fmt(value)}: must be a real number, not a bool")
    if isinstance(value, Fraction):
        return value
    if isinstance(value, str):
        return _parse_number_string(name, value)
    if not is_real_number(value):
        raise DprefTypeError(f"{name}={fmt(value)}: must be a real number")
    if isinstance(value, numbers.Integral):
        return Fraction(int(value))
    if isinstance(value, numbers.Real):
        if isinstance(value, np.floating) and not isinstance(value, np.float64 | np.float32):
            # np.longdouble carries more bits than a double: through float() a budget could
            # round up (1/5), so it is converted exactly
            try:
                return Fraction(*value.as_integer_ratio())
            except (OverflowError, ValueError):
                raise ParameterError(f"{name}={fmt(value)}: must be finite") from None
        as_float = float(value)
        if not math.isfinite(as_float):
            raise ParameterError(f"{name}={fmt(value)}: must be finite")
        return Fraction(as_float)
    raise DprefTypeError(f"{name}={fmt(value)}: must be a real number")


def check_epsilon(name: str, value: Any) -> Fraction:
    """A privacy parameter: finite and strictly positive, returned exactly."""
    eps = check_fraction(name, value)
    if eps <= 0:
        raise ParameterError(f"{name}={fmt(value)}: must be > 0")
    return eps


MAX_RHO = Fraction(2**400)
"""Largest ρ accepted (the twin of ε's ``2^400``): node variances ``Δ²·f/(2ρ)`` must stay
normal floats and the exact plan checks convert ρ to a float."""
MIN_RHO = Fraction(1, 2**800)
"""Smallest ρ accepted: a node variance ``Δ²·f/(2ρ)`` (f a factor below 2^100) stays a
finite float; beyond Δ's own limit the mechanism refuses too (``MAX_UNIT_SCALE``)."""


def check_rho(name: str, value: Any) -> Fraction:
    """A zCDP parameter ρ: an exact rational with ``MIN_RHO <= ρ <= MAX_RHO`` (so ρ > 0
    and finite: NaN and infinities are refused by :func:`check_fraction`)."""
    rho = check_fraction(name, value)
    if rho <= 0:
        raise ParameterError(f"{name}={fmt(value)}: must be > 0")
    if rho > MAX_RHO:
        raise ParameterError(f"{name}={fmt(value)}: must be <= 2^400 (node variances underflow)")
    if rho < MIN_RHO:
        raise ParameterError(
            f"{name}={fmt(value)}: must be >= 2^-800 (node variances would overflow a float)"
        )
    return rho


def check_positive_int(name: str, value: Any) -> int:
    """A positive integer; bools and floats are rejected."""
    return check_int_range(name, value, 1, None)


def check_int_range(name: str, value: Any, low: int | None, high: int | None) -> int:
    """An integer in ``[low, high]`` (either bound may be ``None``); bools, floats,
    strings and ``timedelta64`` rejected."""
    if (
        _is_bool(value)
        or not isinstance(value, numbers.Integral)
        or isinstance(value, np.timedelta64)
    ):
        raise DprefTypeError(f"{name}={fmt(value)}: must be an int")
    out = int(value)
    if low is not None and out < low:
        raise ParameterError(f"{name}={fmt(value)}: must be >= {low}")
    if high is not None and out > high:
        raise ParameterError(f"{name}={fmt(value)}: must be <= {high}")
    return out


def choose_from(value: object, names: Sequence[str], *, close: Sequence[str] | None = None) -> str:
    """The one way dpref lists valid names after an unknown ``value``: ``unknown; did you
    mean 'binary'? choose from kary, binary, …`` — the close names first
    (:func:`difflib.get_close_matches`, at most three, unless the caller gives ``close``),
    then every name in its order."""
    if close is None:
        close = difflib.get_close_matches(value, list(names), n=3) if isinstance(value, str) else []
    hint = f" did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
    return f"unknown;{hint} choose from {', '.join(names)}"


def check_choice(name: str, value: Any, choices: tuple[str, ...]) -> str:
    """One of the strings ``choices`` (a type check first, so arrays fail cleanly)."""
    if not isinstance(value, str):
        raise DprefTypeError(f"{name}={fmt(value)}: must be a str; {choose_from(value, choices)}")
    if value not in choices:
        raise ParameterError(f"{name}={fmt(value)}: {choose_from(value, choices)}")
    return value


def check_flag(name: str, value: Any) -> bool:
    """A bool (Python or numpy), returned as ``bool``; ``"no"``, 0 and None are rejected."""
    if not _is_bool(value):
        raise DprefTypeError(f"{name}={fmt(value)}: must be a bool")
    return bool(value)


def check_int_vector(name: str, value: Any, low: int, high: int) -> npt.NDArray[np.int64]:
    """A non-empty 1-D array of integers in ``[low, high]``, as int64.

    Integer dtypes pass; an object array (Python ints) is checked item by item with
    :func:`check_int_range`; floats (even ``2.0``), bools, ``timedelta64``,
    ``datetime64``, strings and complex numbers are refused — ``1.9`` is never
    truncated to 1.
    """
    try:
        arr = np.asarray(value)
    except (ValueError, TypeError) as exc:
        raise DprefTypeError(f"{name}={fmt(value)}: not an array of integers ({exc})") from None
    if arr.ndim != 1 or arr.size == 0:
        raise ParameterError(f"{name}={fmt(value)}: must be a non-empty 1-D array")
    if arr.dtype.kind == "O":
        items = [check_int_range(name, v, low, high) for v in arr.tolist()]
        return np.array(items, dtype=np.int64)
    if arr.dtype.kind not in "iu":
        raise DprefTypeError(f"{name}={fmt(value)}: must be integers, got dtype {arr.dtype}")
    lo_v, hi_v = int(arr.min()), int(arr.max())
    if lo_v < low or hi_v > high:
        bad = lo_v if lo_v < low else hi_v
        raise ParameterError(
            f"{name}={fmt(value)}: every value must be in [{low}, {high}], got {bad}"
        )
    return arr.astype(np.int64)


def check_real_scalar(name: str, value: Any) -> float:
    """One real number as a float, accepted exactly when :func:`check_real_vector`
    would accept it as an item (the online twin of the batch check)."""
    if not is_real_number(value):
        raise DprefTypeError(f"{name}={fmt(value)}: must be a real number")
    try:
        out = float(value)
    except OverflowError:
        raise DomainError(f"{name}={fmt(value)}: too large for a float") from None
    except (ValueError, TypeError) as exc:
        raise DprefTypeError(f"{name}={fmt(value)}: not convertible to float ({exc})") from None
    if not math.isfinite(out):
        raise DomainError(f"{name}={fmt(value)}: values must be finite")
    return out


def check_runs(name: str, value: Any) -> int:
    """A number of independent runs (positive int)."""
    return check_positive_int(name, value)


def check_probability_open(name: str, value: Any) -> Fraction:
    """A number strictly inside (0, 1), returned exactly."""
    p = check_fraction(name, value)
    if not 0 < p < 1:
        raise ParameterError(f"{name}={fmt(value)}: must be in the open interval (0, 1)")
    return p


def check_real_vector(
    name: str, value: Any, *, max_len: int | None = None, allow_empty: bool = False
) -> npt.NDArray[np.float64]:
    """A 1-D array of finite reals as float64 (not copied when it already is float64).

    Rejects strings, ragged or nested input, complex numbers, NaN and infinities,
    and (when ``max_len`` is given) arrays longer than ``max_len``.
    """
    if isinstance(value, str | bytes):
        raise DprefTypeError(f"{name}={fmt(value)}: must be a 1-D sequence of numbers")
    try:
        arr = np.asarray(value)
    except (ValueError, TypeError) as exc:
        raise DprefTypeError(f"{name}={fmt(value)}: not an array of numbers ({exc})") from None
    except Exception as exc:  # a raising __array__, __len__ or __getitem__ of the caller's
        raise DprefTypeError(
            f"{name}={fmt(value)}: not an array of numbers ({type(exc).__name__})"
        ) from None
    if arr.ndim != 1:
        raise DprefTypeError(f"{name}={fmt_sequence(value, arr.shape)}: must be 1-D")
    if arr.dtype.kind not in "biuf":
        if arr.dtype.kind == "O" and arr.size > 0:
            ok = all(is_real_number(v) for v in arr)
            if not ok:
                raise DprefTypeError(f"{name}={fmt(value)}: must contain only real numbers")
        elif arr.size > 0 or arr.dtype.kind not in "O":
            raise DprefTypeError(
                f"{name}={fmt(value)}: must contain real numbers, got dtype {arr.dtype}"
            )
    try:
        out = np.asarray(arr, dtype=np.float64)
    except OverflowError:
        raise DomainError(f"{name}={fmt(value)}: an item is too large for a float") from None
    except (ValueError, TypeError) as exc:
        raise DprefTypeError(f"{name}={fmt(value)}: not convertible to float ({exc})") from None
    except Exception as exc:  # a raising __float__ of an item
        raise DprefTypeError(
            f"{name}={fmt(value)}: not convertible to float ({type(exc).__name__})"
        ) from None
    if out.size == 0 and not allow_empty:
        raise ParameterError(f"{name}={fmt(value)}: must not be empty")
    if not np.isfinite(out).all():
        bad = int(np.flatnonzero(~np.isfinite(out))[0])
        raise DomainError(f"{name}[{bad}]={float(out[bad])!r}: values must be finite")
    if max_len is not None and out.size > max_len:
        raise HorizonError(
            f"{name}={fmt_sequence(value, out.shape)}: length {out.size} exceeds horizon={max_len}"
        )
    return out


def ceil_float(value: Fraction) -> float:
    """The smallest float >= ``value`` (round a budget or a noise scale up)."""
    try:
        out = float(value)
    except OverflowError:
        raise ParameterError(f"value={fmt(value)}: too large for a float") from None
    if Fraction(out) < value:
        out = math.nextafter(out, math.inf)
    return out


def ceil_sqrt_float(value: Fraction) -> float:
    """The smallest float >= ``√value`` (a Gaussian node's σ from its exact variance, up)."""
    if value < 0:
        raise ParameterError(f"value={fmt(value)}: must be >= 0")
    out = math.sqrt(ceil_float(value))
    while Fraction(out) ** 2 < value:
        out = math.nextafter(out, math.inf)
    while out > 0:
        lower = math.nextafter(out, -math.inf)
        if Fraction(lower) ** 2 < value:
            break
        out = lower
    return out


def floor_float(value: Fraction) -> float:
    """The largest float <= ``value``."""
    out = float(value)
    if Fraction(out) > value:
        out = math.nextafter(out, -math.inf)
    return out
