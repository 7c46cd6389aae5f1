"""The fuzz harness's catalogue of odd values (tests/test_fuzz.py): numbers, strings,
containers and hostile objects (a ``__repr__``, ``__float__`` or ``__array__`` that raises)
that every public function must refuse with a ``DprefError`` naming the parameter."""

from __future__ import annotations

from decimal import Decimal
from fractions import Fraction
from typing import Any

import numpy as np


def odd_values(slow: bool) -> list[tuple[str, Any]]:
    """(label, value): the odd values every parameter is fed."""

    values: list[tuple[str, Any]] = [
        ("np.int8(3)", np.int8(3)),
        ("np.uint64(max)", np.uint64(2**64 - 1)),
        ("np.float16(0.5)", np.float16(0.5)),
        ("np.float32(nan)", np.float32("nan")),
        ("np.int64(-1)", np.int64(-1)),
        ("np.timedelta64(4,D)", np.timedelta64(4, "D")),
        ("np.datetime64(2020-01-01)", np.datetime64("2020-01-01")),
        ("np.complex128(1+1j)", np.complex128(1 + 1j)),
        ("np.array(3,dtype=object)", np.array(3, dtype=object)),
        ("np.bool_(True)", np.bool_(True)),
        ("True", True),
        ("False", False),
        ("2**70", 2**70),
        ("-1", -1),
        ("0", 0),
        ("1", 1),
        ("nan", float("nan")),
        ("inf", float("inf")),
        ("-inf", float("-inf")),
        ("1e308", 1e308),
        ("5e-324", 5e-324),
        ("'1e-999999999'", "1e-999999999"),
        ("'1e999999999'", "1e999999999"),
        ("Decimal(1.5)", Decimal("1.5")),
        ("Fraction(1,3)", Fraction(1, 3)),
        ("None", None),
        ("'abc'", "abc"),
        # containers where scalars belong (and odd streams)
        ("np.array([1.,2.])", np.array([1.0, 2.0])),
        ("np.zeros(0)", np.zeros(0)),
        ("[]", []),
        ("[[1,0],[0,1]]", [[1, 0], [0, 1]]),
        ("[[1],[1,0]]", [[1], [1, 0]]),
        ("[1,None]", [1, None]),
        ("[nan]", [float("nan")]),
        ("[2**70]", [2**70]),
        ("['1','0']", ["1", "0"]),
        ("[timedelta64]", np.array([np.timedelta64(1)])),
        ("np.ones(9)", np.ones(9)),
        # hostile objects: every error message must survive them (issue 24)
        ("RaisingRepr()", RaisingRepr()),
        ("RaisingFloat()", RaisingFloat()),
        ("RaisingArray()", RaisingArray()),
        ("[RaisingFloat()]", [RaisingFloat()]),
    ]
    if slow:
        values += [
            ("np.float64(-0.0)", np.float64(-0.0)),
            ("np.int32(7)", np.int32(7)),
            ("np.longdouble(1e-4000)", np.longdouble("1e-4000")),
            ("10**400", 10**400),
            ("-2**70", -(2**70)),
            ("0.5", 0.5),
            ("1e-300", 1e-300),
            ("'1/3'", "1/3"),
            ("'  2 '", "  2 "),
            ("'1_000'", "1_000"),
            ("'9'*2000", "9" * 2000),
            ("Decimal(nan)", Decimal("nan")),
            ("Fraction(10**400,3)", Fraction(10**400, 3)),
            ("1+2j", 1 + 2j),
            ("b'1'", b"1"),
            ("object()", object()),
            ("{'a':1}", {"a": 1}),
            ("range(3)", range(3)),
            ("np.array([[1]])", np.array([[1]])),
            ("np.array([1,0],dtype=object)", np.array([1, 0], dtype=object)),
            ("[True,False]", [True, False]),
            ("[Decimal(1)]", [Decimal(1)]),
            ("np.ones(2**20)", np.ones(2**20)),
            ("[1e308,1e308]", [1e308, 1e308]),
        ]
    return values


class RaisingRepr:
    """An object whose ``__repr__`` raises (it broke every error message that named it)."""

    def __repr__(self) -> str:
        raise RuntimeError("hostile __repr__")


class RaisingFloat(RaisingRepr):
    """A number-like object whose ``__float__`` (and ``__index__``) raise."""

    def __float__(self) -> float:
        raise RuntimeError("hostile __float__")

    def __index__(self) -> int:
        raise RuntimeError("hostile __index__")


class RaisingArray(RaisingRepr):
    """An array-like object whose ``__array__`` and ``__len__`` raise."""

    def __array__(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("hostile __array__")

    def __len__(self) -> int:
        raise RuntimeError("hostile __len__")
