"""pandas in, pandas out for a mechanism's release paths — without importing pandas.

A stream given to :meth:`~dpref.mechanisms.base.Mechanism.release` or ``target`` as a
``pandas.Series`` comes back as a Series with the same index and name; a one-column
``DataFrame`` comes back as a one-column DataFrame with the same index and column (with
AllWindowSum's ``windows=``, a DataFrame with one column per window).
:meth:`~dpref.mechanisms.base.Mechanism.release_many` returns a DataFrame of shape
(runs, T) — the numpy result's shape — whose columns are the stream's index and whose
rows are the runs ``0 … runs−1`` (transpose it for one column per run).  The numbers are
exactly those of the same call on ``stream.to_numpy()``.  A DataFrame of several columns is
a :class:`~dpref.errors.DprefTypeError` that names its columns.

pandas is not a dependency: an object is recognised as pandas by its class's module, and
the result is built with the pandas the caller's object came from (already imported), so
``import dpref`` stays light.  Every :class:`~dpref.mechanisms.base.Mechanism` subclass
gets this for the methods it defines (:func:`pandas_paths`, from ``__init_subclass__``).
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable
from typing import Any, Literal, TypeVar

import numpy as np

from dpref.errors import DprefTypeError
from dpref.validation import fmt

__all__ = ["pandas_io", "pandas_kind", "pandas_paths"]

F = TypeVar("F", bound=Callable[..., Any])
Kind = Literal["one", "many"]

_MARK = "__dpref_pandas_io__"
_PATHS: dict[str, Kind] = {"release": "one", "target": "one", "release_many": "many"}
"""The methods that take a stream first and return per-item answers, and their output form:
``"one"`` (T,) or (T, m); ``"many"`` (runs, T)."""


def pandas_kind(obj: Any) -> Literal["Series", "DataFrame"] | None:
    """``"Series"`` or ``"DataFrame"`` when ``obj`` is one (or a subclass), else None;
    pandas is not imported."""
    for klass in type(obj).__mro__:
        if klass.__module__.startswith("pandas") and klass.__name__ in ("Series", "DataFrame"):
            return "Series" if klass.__name__ == "Series" else "DataFrame"
    return None


def _values(name: str, obj: Any, kind: str) -> Any:
    """The stream's values as numpy (validated by the caller like any stream)."""
    if kind == "DataFrame":
        n_cols = int(obj.shape[1])
        if n_cols != 1:
            shown = ", ".join(fmt(c) for c in list(obj.columns[:5]))
            hint = f"; pass one column, e.g. {name}[{fmt(obj.columns[0])}]" if n_cols else ""
            raise DprefTypeError(
                f"{name}={fmt(obj)}: a DataFrame stream must have exactly one column, got "
                f"{n_cols}{' (' + shown + ')' if n_cols else ''}{hint}"
            )
        return obj.iloc[:, 0].to_numpy()
    return obj.to_numpy()


def _rebuild(obj: Any, kind: str, out: Any, form: Kind, kwargs: dict[str, Any]) -> Any:
    """The result as pandas, indexed like ``obj`` (numpy unchanged for other shapes)."""
    pd: Any = importlib.import_module("pandas")  # imported already: obj is a pandas object
    if not isinstance(out, np.ndarray):
        return out
    index = obj.index
    if form == "one" and out.ndim == 1 and out.shape[0] == len(index):
        if kind == "Series":
            return pd.Series(out, index=index, name=obj.name)
        return pd.DataFrame(out.reshape(-1, 1), index=index, columns=obj.columns)
    if form == "one" and out.ndim == 2 and out.shape[0] == len(index):
        windows = kwargs.get("windows")
        columns = None if windows is None else pd.Index(list(windows), dtype=object)
        return pd.DataFrame(out, index=index, columns=columns)
    if form == "many" and out.ndim == 2 and out.shape[1] == len(index):
        return pd.DataFrame(out, columns=index, index=pd.RangeIndex(out.shape[0], name="run"))
    return out


def pandas_io(form: Kind) -> Callable[[F], F]:
    """Decorate a method whose first argument is the stream (named ``stream``): pandas in,
    pandas out (see the module docstring); any other stream passes straight through."""

    def decorate(method: F) -> F:
        if getattr(method, _MARK, False):
            return method

        @functools.wraps(method)
        def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
            positional = bool(args)
            stream = args[0] if positional else kwargs.get("stream")
            kind = pandas_kind(stream)
            if kind is None:
                return method(self, *args, **kwargs)
            values = _values("stream", stream, kind)
            if positional:
                out = method(self, values, *args[1:], **kwargs)
            else:
                out = method(self, *args, **{**kwargs, "stream": values})
            return _rebuild(stream, kind, out, form, kwargs)

        setattr(wrapper, _MARK, True)
        return wrapper  # type: ignore[return-value]

    return decorate


def pandas_paths(cls: type) -> None:
    """Give the release paths ``cls`` defines itself (``release``, ``release_many``,
    ``target``) pandas in, pandas out (idempotent)."""
    for name, form in _PATHS.items():
        method = cls.__dict__.get(name)
        if callable(method) and not getattr(method, "__isabstractmethod__", False):
            setattr(cls, name, pandas_io(form)(method))
