"""A malformed constructor call of any registered mechanism — a missing required keyword
(``Binary(epsilon=1)`` without ``horizon``), an unknown keyword, a positional argument —
raises a :class:`~dpref.errors.DprefTypeError` naming the parameter (also a ``TypeError``),
from the one check in :mod:`dpref.mechanisms.keywords`, before anything is computed."""

from __future__ import annotations

import inspect
from typing import Any

import pytest

import dpref
from dpref.errors import DprefError, DprefTypeError
from dpref.mechanisms.base import MECHANISMS, Mechanism

NAMES = sorted(MECHANISMS)
T = 16


def _good(cls: type[Mechanism]) -> dict[str, Any]:
    example = cls.examples[0]
    return {example.budget_name: 1, **example.kwargs(cls, T)}


def test_every_registered_class_is_covered_and_binary_needs_horizon() -> None:
    assert {"binary", "polynomial", "window", "exponential"} <= set(NAMES)
    with pytest.raises(DprefTypeError, match=r"^horizon=<missing>: Binary requires horizon="):
        dpref.Binary(epsilon=1)


@pytest.mark.parametrize("name", NAMES)
def test_a_missing_required_keyword_is_a_dpref_error_naming_it(name: str) -> None:
    cls = MECHANISMS[name]
    good = _good(cls)
    cls(**good)  # the example builds: the errors below come from the removed keyword
    required = [
        p.name
        for p in inspect.signature(cls).parameters.values()
        if p.kind is p.KEYWORD_ONLY and p.default is p.empty
    ]
    assert set(required) <= set(good)
    for key in required:
        kw = {k: v for k, v in good.items() if k != key}
        with pytest.raises(DprefTypeError, match=f"^{key}=<missing>: {cls.__name__} requires"):
            cls(**kw)


@pytest.mark.parametrize("name", NAMES)
def test_an_unknown_keyword_or_a_positional_argument_is_named(name: str) -> None:
    cls = MECHANISMS[name]
    good = _good(cls)
    with pytest.raises(DprefTypeError, match=r"^epsilonn=1: .* did you mean epsilon=\?"):
        cls(**good, epsilonn=1)
    with pytest.raises(DprefTypeError, match="takes keyword arguments only"):
        cls(1, **good)


def test_a_type_error_inside_a_well_formed_call_is_not_relabelled() -> None:
    class Broken(dpref.SimpleI):
        def __init__(self, *, epsilon: Any = None, horizon: Any = None) -> None:
            super().__init__(epsilon=epsilon, horizon=horizon)
            raise TypeError("inner")

    with pytest.raises(TypeError, match=r"^inner$") as info:
        Broken(epsilon=1, horizon=4)
    assert not isinstance(info.value, DprefError)
    # and the guard keeps the signature the CLI reads
    assert "horizon" in inspect.signature(Broken).parameters
