"""Lazy package exports (PEP 562): a package names what it exports and where each name
lives, and loads the submodule on first use — so that ``import dpref`` and
``dpref --help`` do not pay for scipy.stats or sympy behind names they never touch."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(
    package: str, namespace: dict[str, Any], home: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for ``package``: ``home`` maps each exported name to the
    submodule (relative to ``package``) that defines it; a loaded name is cached in
    ``namespace`` (the package's ``globals()``)."""

    def getattr_(name: str) -> Any:
        where = home.get(name)
        if where is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{where}"), name)
        namespace[name] = value
        return value

    def dir_() -> list[str]:
        return sorted({*namespace, *home})

    return getattr_, dir_
