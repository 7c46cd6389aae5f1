"""Small checkers used by every public entry point.

Each checker validates one parameter, raises a :class:`~dpref.errors.DprefError`
subclass whose message reads ``name=value: what is wrong``, and returns the
value converted to its canonical type.  They run before any noise is drawn.
"""

from __future__ import annotations

import difflib
import itertools
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
    "check_exact",
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
    "fmt_sequence",
    "is_real_number",
    "parse_number_string",
]

MAX_NUMBER_STRING = 1000
"""Longest string :func:`check_fraction` parses (characters, after stripping blanks)."""
MAX_STRING_EXPONENT = 4000
"""Largest ``|exponent|`` :func:`check_fraction` accepts in a string such as ``"1e-5"``:
``Fraction("1e-999999999")`` would build a 10⁹-digit integer and hang."""
_EXPONENT = re.compile(r"[eE]\s*([+-]?[0-9_]+)\s*$")


FMT_LENGTH = 60
"""Longest rendering :func:`fmt` gives of one value (characters; a longer repr is cut)."""
_SHOWN_ITEMS = 3
"""How many items an abbreviated array, frame or sequence shows."""


def fmt(value: Any) -> str:
    """Render a value for an error message, short and unambiguous.

    A scalar or a short sequence is its ``repr`` (one line, at most :data:`FMT_LENGTH`
    characters); an array, a pandas object or a sequence of more than 8 items is
    abbreviated to its type, shape and first items — ``<DataFrame of shape (10000, 2):
    columns 'a', 'b'>``, ``<ndarray of shape (1000000,): 0.0, 1.0, 2.0, …>`` — at a cost
    that does not grow with its size.  Never raises (an error message must survive its
    subject): a ``__repr__`` that raises or returns a non-string gives ``<TypeName object:
    repr raised E>``.
    """
    brief = _abbreviated(value, None)
    if brief is not None:
        return brief
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
    return _clip(text, FMT_LENGTH)


def _clip(text: str, limit: int) -> str:
    """``text`` on one line (runs of blanks and newlines made one blank), at most ``limit``
    characters (``...`` marks a cut)."""
    if "\n" in text or "\r" in text:
        text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _shape_of(value: Any) -> tuple[int, ...] | None:
    """``value.shape`` when it is a tuple of ints, else ``(len(value),)`` for a sized
    non-string, else None (never raises)."""
    if isinstance(value, str | bytes | bytearray):
        return None
    try:
        shape = getattr(value, "shape", None)
        if isinstance(shape, tuple) and all(isinstance(d, int) for d in shape):
            return shape
        if hasattr(value, "__len__"):
            return (len(value),)
    except KeyboardInterrupt:
        raise
    except BaseException:
        return None
    return None


def _pandas_class(value: Any) -> str | None:
    """The pandas class a value is (``"DataFrame"``, ``"Series"``, …) or None; pandas is
    not imported."""
    try:
        klass = type(value)
        return klass.__name__ if klass.__module__.startswith("pandas") else None
    except Exception:
        return None


def _first_items(value: Any) -> str:
    """The first :data:`_SHOWN_ITEMS` items of a long array, pandas object or sequence
    (a DataFrame: its first column names), each clipped; "" when they cannot be read."""
    try:
        columns = getattr(value, "columns", None)
        if columns is not None and type(value).__module__.startswith("pandas"):
            names = [fmt(c) for c in list(columns[:_SHOWN_ITEMS])]
            more = ", …" if len(columns) > _SHOWN_ITEMS else ""
            return f": columns {', '.join(names)}{more}"
        if isinstance(value, np.ndarray):
            items = value.flat[:_SHOWN_ITEMS].tolist()
        elif type(value).__module__.startswith("pandas") and hasattr(value, "iloc"):
            items = value.iloc[:_SHOWN_ITEMS].tolist()
        else:
            items = list(itertools.islice(iter(value), _SHOWN_ITEMS))
        return ": " + ", ".join(_clip(fmt(v), 16) for v in items) + ", …"
    except KeyboardInterrupt:
        raise
    except BaseException:
        return ""


def _abbreviated(value: Any, shape: tuple[int, ...] | None) -> str | None:
    """``<list of shape (9,): 1, 2, 3, …>`` for a value of more than 8 items or a
    DataFrame (``shape`` when the caller knows it), else None."""
    if shape is None:
        shape = _shape_of(value)
        if shape is None:
            return None
    if math.prod(shape) <= 8 and (len(shape) <= 1 or _pandas_class(value) != "DataFrame"):
        return None
    text = f"<{_type_name(value)} of shape {shape}{_first_items(value)}>"
    return _clip(text, 2 * FMT_LENGTH)


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

    As :func:`fmt` (which abbreviates every long value the same way), with the shape given
    when the caller has already computed it (e.g. from ``np.asarray``): ``<list of shape
    (9,): 1, 1, 1, …>``.
    """
    brief = _abbreviated(value, shape)
    return fmt(value) if brief is None else brief


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

    For numbers that come out of a computation (plan-file entries, BLT's θ/ω): a
    parameter a person gives goes through :func:`check_exact`, which reads a float as
    the decimal it prints as.  Accepts ints, Fractions, finite floats (converted exactly,
    so ``0.1`` becomes the binary fraction nearest 0.1; numpy floats of every width,
    ``longdouble`` included) and strings such as ``"1/3"`` or ``"0.5"`` of at most
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


def check_exact(name: str, value: Any) -> Fraction:
    """An exact parameter a person gives (a privacy budget, a decay parameter), as a
    :class:`~fractions.Fraction`; **a float is read as the decimal it prints as**.

    The rule for floats (docs/getting-started.md, "Floats as budgets"): a float is read as
    the shortest decimal that round-trips — ``Fraction(repr(x))`` for a Python float
    (``0.1`` is exactly ``1/10``), numpy's shortest unique digits at the float's own width
    for ``float16``/``float32``/``longdouble`` — so ``epsilon=0.1``, ``epsilon="0.1"`` and
    ``--epsilon 0.1`` on the command line are the same ``1/10``.  NaN and infinities are
    refused (:class:`~dpref.errors.ParameterError`); ints, Fractions and other rationals
    stay exact; strings are parsed as :func:`check_fraction` parses them.  Numbers that
    come out of a computation (BLT's θ/ω, plan-file entries) are read by
    :func:`check_fraction` instead, at their exact binary value.
    """
    if _is_bool(value):
        raise DprefTypeError(f"{name}={fmt(value)}: must be a real number, not a bool")
    if isinstance(value, np.floating) and not isinstance(value, float):
        if not np.isfinite(value):
            raise ParameterError(f"{name}={fmt(value)}: must be finite")
        return Fraction(np.format_float_scientific(value, unique=True))
    if isinstance(value, numbers.Rational) and not isinstance(value, Fraction | numbers.Integral):
        return Fraction(int(value.numerator), int(value.denominator))
    if is_real_number(value) and not isinstance(value, numbers.Rational):
        try:
            as_float = float(value)
        except Exception as exc:  # a raising __float__ of the caller's
            raise DprefTypeError(
                f"{name}={fmt(value)}: not convertible to float ({_type_name(exc)})"
            ) from None
        if not math.isfinite(as_float):
            raise ParameterError(f"{name}={fmt(value)}: must be finite")
        return Fraction(repr(as_float))
    return check_fraction(name, value)


def check_epsilon(name: str, value: Any) -> Fraction:
    """A privacy parameter: finite and strictly positive, returned exactly (a float is
    read as the decimal it prints as: :func:`check_exact`)."""
    eps = check_exact(name, value)
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
    and finite); a float is read as the decimal it prints as (:func:`check_exact`)."""
    rho = check_exact(name, value)
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
    """A number strictly inside (0, 1), returned exactly (a float is read as the decimal
    it prints as: :func:`check_exact`)."""
    p = check_exact(name, value)
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
