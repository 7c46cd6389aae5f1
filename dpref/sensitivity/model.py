"""The problem model: a validated sensitivity question and the universe's records.

:func:`_validate` turns the public arguments into a :class:`_Problem` (values scaled to
integers, multiplicities for a dataset universe); the helpers below list the records a
release may use, count and enumerate sub-multisets, and enforce the work budget
(:class:`~dpref.errors.EnumerationBudgetError`) before any enumeration starts.
"""

from __future__ import annotations

import itertools
import math
import numbers
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Literal

import numpy as np

from dpref.errors import DprefTypeError, EnumerationBudgetError, ParameterError
from dpref.sensitivity.queries import _parse_query, _Query
from dpref.validation import check_choice, check_fraction, check_int_range, fmt, fmt_sequence

__all__ = ["DEFAULT_MAX_ENUMERATION", "Model", "UniverseKind"]

Model = Literal["unbounded", "bounded"]
UniverseKind = Literal["dataset", "range"]

DEFAULT_MAX_ENUMERATION = 10_000_000
"""Default work budget (enumerated datasets, or DP state updates); about seconds of work."""


# --------------------------------------------------------------------------- validation


@dataclass(frozen=True, kw_only=True)
class _Problem:
    """A validated sensitivity question; values scaled to integers."""

    vals: tuple[int, ...]
    """Distinct values, ascending, multiplied by ``scale``."""
    caps: tuple[int, ...] | None
    """Multiplicity of each value (dataset); ``None`` for a range."""
    scale: int
    """Common denominator of the values."""
    n: int
    """Release size."""
    k: int
    """Hamming distance."""
    model: str
    """``"unbounded"`` or ``"bounded"``."""
    query: _Query
    """The query."""
    side: str = "both"
    """Unbounded neighbours used: ``"both"``, ``"remove"`` (k fewer) or ``"add"`` (k more)."""

    @property
    def people(self) -> int:
        """|U| for a dataset (number of records), or the number of range values."""
        return sum(self.caps) if self.caps is not None else len(self.vals)

    @property
    def can_add(self) -> bool:
        """Whether neighbours with k more records exist and are asked for."""
        if self.side == "remove":
            return False
        return self.caps is None or self.people >= self.n + self.k

    @property
    def can_remove(self) -> bool:
        """Whether neighbours with k fewer records are asked for."""
        return self.side != "add"

    def unbounded_sides(self) -> list[tuple[int, int]]:
        """``(|S|, |L|)`` for each kind of unbounded pair ``S ⊂ L`` in use."""
        out = [(self.n - self.k, self.n)] if self.can_remove else []
        return out + ([(self.n, self.n + self.k)] if self.can_add else [])


def _check_values(values: Any) -> list[int | Fraction]:
    """The universe's values, exactly: plain ints kept as ints (fast), others as Fractions."""
    if isinstance(values, str | bytes) or isinstance(values, Mapping):
        raise DprefTypeError(f"values={fmt(values)}: must be a 1-D sequence of numbers")
    if isinstance(values, np.ndarray):
        if values.ndim != 1:
            raise DprefTypeError(f"values={fmt_sequence(values, values.shape)}: must be 1-D")
        items: list[Any] = values.tolist()
    else:
        try:
            items = list(values)
        except TypeError:
            raise DprefTypeError(
                f"values={fmt(values)}: must be a 1-D sequence of numbers"
            ) from None
    if not items:
        raise ParameterError("values=[]: the universe must not be empty")
    out: list[int | Fraction] = []
    for i, v in enumerate(items):
        if type(v) is int:  # the common case; bools are not ``int`` by type
            out.append(v)
            continue
        if isinstance(v, str | bytes) or not isinstance(v, numbers.Real):
            raise DprefTypeError(f"values[{i}]={fmt(v)}: must be a real number")
        out.append(check_fraction(f"values[{i}]", v))
    return out


def _value_counts(values: Any) -> tuple[dict[int | Fraction, int], int]:
    """Each distinct value of the universe (exactly) with its multiplicity, and their total.

    A finite numeric numpy vector is counted with ``np.unique`` (a million values in well
    under a second; a Fraction per record took tens of seconds); anything else goes
    through :func:`_check_values`, which names the first bad item."""
    if isinstance(values, np.ma.MaskedArray):  # its masked entries have no value
        raise DprefTypeError(
            "values=<masked array>: give the values themselves (values.compressed(), or "
            "values.filled(x))"
        )
    if (
        isinstance(values, np.ndarray)
        and values.ndim == 1
        and values.size
        and values.dtype.kind in "iuf"
        and (values.dtype.kind != "f" or bool(np.isfinite(values).all()))
    ):
        uniq, cnt = np.unique(values, return_counts=True)
        counts: dict[int | Fraction, int] = {}
        for v, c in zip(uniq.tolist(), cnt.tolist(), strict=True):
            # as_integer_ratio: exact for float and for long double (Fraction() refused it)
            counts[v if type(v) is int else Fraction(*v.as_integer_ratio())] = int(c)
        return counts, int(values.size)
    fracs = _check_values(values)
    counts = {}
    for v in fracs:  # equal ints and Fractions hash and compare equal
        counts[v] = counts.get(v, 0) + 1
    return counts, len(fracs)


def _validate(
    values: Any,
    *,
    size: Any,
    query: Any,
    hamming: Any,
    model: Any,
    universe: Any,
    percentile: Any,
    side: Any = "both",
) -> _Problem:
    # check_choice tests the type first: an array compared with `in` raised a raw ValueError
    side = check_choice("unbounded_side", side, ("both", "remove", "add"))
    model = check_choice("model", model, ("unbounded", "bounded"))
    universe = check_choice("universe", universe, ("dataset", "range"))
    q = _parse_query(query, percentile)
    counts, n_values = _value_counts(values)
    n = check_int_range("size", size, 1, None)
    if universe == "dataset" and n > n_values:
        raise ParameterError(
            f"size={n}: a release drawn from a dataset universe cannot be larger than the "
            f"universe (|values|={n_values})"
        )
    k = check_int_range("hamming", hamming, 1, None)
    if k > n:
        raise ParameterError(f"hamming={k}: must be <= size={n}")
    if model == "unbounded" and side != "add" and k == n and q.kind not in ("count", "sum"):
        raise ParameterError(
            f"hamming={k}: with model='unbounded' and size={n}, a neighbour is the empty "
            f"dataset, on which query={query!r} is undefined; use hamming < size or "
            "unbounded_side='add'"
        )
    if model == "unbounded" and side == "add" and universe == "dataset" and n + k > n_values:
        raise ParameterError(
            f"hamming={k}: unbounded_side='add' needs size + hamming <= |values|="
            f"{n_values}, got size={n}"
        )
    distinct = sorted(counts)
    scale = math.lcm(*(v.denominator for v in distinct))
    vals = tuple(int(v * scale) for v in distinct)
    caps = tuple(counts[v] for v in distinct) if universe == "dataset" else None
    return _Problem(vals=vals, caps=caps, scale=scale, n=n, k=k, model=model, query=q, side=side)


# --------------------------------------------------------------------------- records and budgets


def _caps_for(prob: _Problem, limit: int) -> tuple[int, ...]:
    """Capacities of each value, a range's being ``limit`` (never more is needed)."""
    if prob.caps is None:
        return tuple(limit for _ in prob.vals)
    return tuple(min(c, limit) for c in prob.caps)


def _people(prob: _Problem, limit: int) -> list[int]:
    """The sorted records a dataset may use (a range value repeated ``limit`` times)."""
    caps = _caps_for(prob, limit)
    return [v for v, c in zip(prob.vals, caps, strict=True) for _ in range(c)]


def _count_submultisets(caps: Sequence[int], r: int) -> int:
    """Number of sub-multisets of size ``r``: the x^r coefficient of Π (1 + … + x^c)."""
    poly = [1] + [0] * r
    for c in caps:
        c = min(c, r)
        prefix = list(itertools.accumulate(poly))
        poly = [prefix[j] - (prefix[j - c - 1] if j - c - 1 >= 0 else 0) for j in range(r + 1)]
    return poly[r]


def _submultisets(caps: Sequence[int], r: int) -> Iterator[list[int]]:
    """Every multiplicity vector ``c`` with ``0 <= c_i <= caps_i`` and ``Σ c = r``."""
    m = len(caps)
    suffix = [*list(itertools.accumulate(reversed(caps)))[::-1], 0]
    counts = [0] * m

    def rec(i: int, left: int) -> Iterator[list[int]]:
        if left == 0:
            yield counts
            return
        if i == m or suffix[i] < left:
            return
        for c in range(min(caps[i], left), -1, -1):
            counts[i] = c
            yield from rec(i + 1, left - c)
        counts[i] = 0

    yield from rec(0, r)


def _check_budget(work: int, budget: int, what: str) -> None:
    if work > budget:
        raise EnumerationBudgetError(
            f"max_enumeration={budget}: the {what} needs about {work} steps; raise "
            "max_enumeration or shrink the universe, size or hamming"
        )
