"""Constructor calls checked against the signature: a :class:`~dpref.errors.DprefTypeError`
naming the parameter, instead of Python's bare ``TypeError``, for a missing required keyword
(``Binary(epsilon=1)`` without ``horizon``), an unknown keyword or a positional argument.

Every :class:`~dpref.mechanisms.base.Mechanism` subclass gets this from
``Mechanism.__init_subclass__`` (:func:`guard_init`), so no class repeats it.  The check
costs nothing on a good call: the signature is bound only after the constructor raised a
``TypeError``, and a ``TypeError`` from inside a well-formed call is re-raised unchanged.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

from dpref.errors import DprefTypeError
from dpref.validation import fmt

__all__ = ["call_error", "guard_init"]

_GUARD = "__dpref_keywords_checked__"


def call_error(
    cls: type, init: Callable[..., None], args: tuple[Any, ...], kwargs: dict[str, Any]
) -> DprefTypeError | None:
    """The error for calling ``cls(*args, **kwargs)`` (``init`` is its ``__init__``), or
    None when the call matches the signature."""
    params = list(inspect.signature(init).parameters.values())[1:]  # without self
    keywords = [p.name for p in params if p.kind is p.KEYWORD_ONLY]
    name = cls.__name__
    if args:
        return DprefTypeError(
            f"{name}: takes keyword arguments only ({', '.join(k + '=' for k in keywords)}); "
            f"got {len(args)} positional"
        )
    for key, value in kwargs.items():
        if key not in keywords:
            import difflib  # only on the error path: `import dpref` stays light

            close = difflib.get_close_matches(key, keywords, n=1)
            hint = f"did you mean {close[0]}=? " if close else ""
            return DprefTypeError(
                f"{key}={fmt(value)}: {name} has no parameter {key!r}; {hint}"
                f"its parameters: {', '.join(keywords)}"
            )
    missing = [
        p.name
        for p in params
        if p.kind is p.KEYWORD_ONLY and p.default is p.empty and p.name not in kwargs
    ]
    if missing:
        what = ", ".join(f"{m}=" for m in missing)
        return DprefTypeError(
            f"{missing[0]}=<missing>: {name} requires {what} (no default)"
            + (f"; e.g. {name}({_example(cls)})" if _example(cls) else "")
        )
    return None


def _example(cls: type) -> str:
    """The first declared example's keywords, as a hint (empty when there is none)."""
    examples = getattr(cls, "examples", ())
    if not examples:
        return ""
    params = getattr(examples[0], "params", {})
    if not isinstance(params, dict) or any(callable(v) for v in params.values()):
        return ""
    return ", ".join(f"{k}={v!r}" for k, v in params.items())


def guard_init(cls: type) -> None:
    """Make ``cls``'s constructor raise :func:`call_error`'s error on a malformed call
    (idempotent; the wrapper keeps the signature, which the CLI and docs read)."""
    init: Callable[..., None] = getattr(cls, "__init__")  # noqa: B009
    if getattr(init, _GUARD, False):
        return

    @functools.wraps(init)
    def checked(self: Any, *args: Any, **kwargs: Any) -> None:
        try:
            init(self, *args, **kwargs)
        except TypeError as exc:
            if isinstance(exc, DprefTypeError):
                raise
            error = call_error(type(self), init, args, kwargs)
            if error is None:
                raise
            raise error from None

    setattr(checked, _GUARD, True)
    setattr(cls, "__init__", checked)  # noqa: B010 (mypy rejects assigning a method)
