"""Which proof module proves which mechanism class.

Every class in :data:`dpref.MECHANISMS` points at its proof file (its ``proof``
attribute, inherited from the family's base class; :data:`PROOF_MODULES` is derived
from those pointers), and that module must name the class — or, for a subclass, the
nearest ancestor whose theorem it is held to — in its ``PROOFS`` dict;
``tests/test_proofs_registry.py`` fails when one is missing (OpenDP's rule: an unproven
construction does not build).

A proof module exposes

* ``PROOFS: dict[str, ProofFn]`` — class name → ``fn(cls, limit) -> list[ClaimResult]``,
  where ``limit`` is the largest T (or t) of the exhaustive checks;
* a module docstring stating each theorem and its proof in words, with citations.

Every mechanism class is also held to the Gaussian (ρ-zCDP) budget of its declarations,
:func:`proofs.zcdp.gaussian_claims` (the twin of its L1 budget), run after its own
module's claims — unless its proof module sets ``OWN_GAUSSIAN_PROOF = True`` (a mechanism
that is not an interval plan proves its Gaussian budget itself).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from typing import Any

from dpref.errors import DprefTypeError, ParameterError
from dpref.mechanisms import MECHANISMS, Mechanism
from dpref.validation import check_int_range, choose_from, fmt
from proofs.core import FAILED, ClaimResult, label

__all__ = [
    "EXHAUSTIVE_LIMIT",
    "MAX_LIMIT",
    "PROOF_MODULES",
    "ProofFn",
    "label",
    "proof_for",
    "prove",
    "prove_all",
    "resolve_names",
]

ProofFn = Callable[[type[Any], int], list[ClaimResult]]

SUBJECTS = (
    "dpref.sanitize.threshold:ThresholdSanitizer",
    "dpref.sanitize.streaming:StreamingSanitizer",
    "dpref.accounting:GaussianDP",
)
"""Proven classes that are not mechanisms (no entry in :data:`dpref.MECHANISMS`), as
``module:class``; each has a ``proof`` pointer like a mechanism's.  ``prove_all``
proves them after the mechanisms."""


def subjects() -> list[type[Any]]:
    """The classes of :data:`SUBJECTS`, imported."""
    out = []
    for spec in SUBJECTS:
        module, _, name = spec.partition(":")
        out.append(getattr(importlib.import_module(module), name))
    return out


EXHAUSTIVE_LIMIT = 4096
"""Exhaustive checks run for every T (or t) up to this (2¹²)."""
MAX_LIMIT = 2**14
"""The largest ``limit`` accepted: the exhaustive checks build every plan up to T =
``limit`` (the default 4096 takes seconds per mechanism; the cost grows like T²)."""


def _check_class(cls: Any) -> type[Any]:
    if not (isinstance(cls, type) and (issubclass(cls, Mechanism) or cls in subjects())):
        raise DprefTypeError(
            f"cls={fmt(cls)}: must be a dpref Mechanism class or one of {', '.join(SUBJECTS)}"
        )
    return cls


def _check_limit(limit: Any) -> int:
    return check_int_range("limit", limit, 1, MAX_LIMIT)


def resolve_names(names: Any, option: str | None = None) -> list[type[Any]]:
    """The mechanism classes named (CLI or class names; the :data:`SUBJECTS` by class
    name), in order, without repeats.

    An unknown or non-string name is an error naming ``names[i]`` (or ``option`` — the
    command-line flag — when given)."""
    if isinstance(names, str | bytes):
        raise DprefTypeError(f"names={fmt(names)}: must be a sequence of mechanism names")
    try:
        items = list(names)
    except TypeError:
        raise DprefTypeError(f"names={fmt(names)}: must be a sequence of mechanism names") from None
    by_name: dict[str, type[Any]] = {}
    for name, cls in MECHANISMS.items():
        by_name[name] = cls
        by_name[cls.__name__] = cls
    for cls in subjects():
        by_name[cls.__name__] = cls
    chosen: list[type[Any]] = []
    for i, name in enumerate(items):
        where = option or f"names[{i}]"
        if not isinstance(name, str) or name not in by_name:
            known = [*MECHANISMS, *(c.__name__ for c in subjects())]
            raise ParameterError(f"{where}={fmt(name)}: {choose_from(name, known)}")
        if by_name[name] not in chosen:
            chosen.append(by_name[name])
    return chosen


def proof_module(cls: type[Any]) -> str | None:
    """The module named by the proof pointer ``cls`` declares in its own body, if any.

    The pointer is a file path from the repository root (``"proofs/counting.py"``, the
    OpenDP habit of keeping the proof's location on the implementation); the module is
    its dotted form.
    """
    pointer = cls.__dict__.get("proof")
    if not isinstance(pointer, str) or not pointer.endswith(".py"):
        return None
    return pointer[: -len(".py")].replace("/", ".")


def _qualname(cls: type[Any]) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def proof_modules() -> dict[str, str]:
    """Fully qualified registered class → the proof module that proves it (derived)."""
    out: dict[str, str] = {}
    for cls in MECHANISMS.values():
        module = next((m for m in map(proof_module, cls.__mro__) if m is not None), None)
        if module is not None:
            out[_qualname(cls)] = module
    return out


PROOF_MODULES: dict[str, str] = proof_modules()
"""Fully qualified mechanism class → the proof module that proves it (read from the
classes' ``proof`` pointers when this module is imported)."""


def proof_for(cls: type[Any]) -> tuple[type[Any], ProofFn]:
    """The registered class ``cls`` is held to (itself or its nearest ancestor) and its proof.

    Raises :class:`~dpref.errors.ParameterError` when no proof is registered.
    """
    cls = _check_class(cls)
    module_name = next((m for m in map(proof_module, cls.__mro__) if m is not None), None)
    if module_name is None:
        raise ParameterError(f"mechanism={cls.__name__}: no proof module registered for it")
    proofs: dict[str, ProofFn] = getattr(importlib.import_module(module_name), "PROOFS", {})
    for base in cls.__mro__:
        fn = proofs.get(base.__qualname__)
        if fn is not None:
            return base, fn
    raise ParameterError(
        f"mechanism={cls.__name__}: {module_name}.PROOFS has no entry {cls.__qualname__!r}"
    )


def _with_gaussian(cls: type[Any], fn: ProofFn, limit: int) -> list[ClaimResult]:
    """The class's own claims, then its Gaussian-budget claims (a mechanism class whose
    proof module does not prove them itself)."""
    rows = fn(cls, limit)
    if isinstance(cls, type) and issubclass(cls, Mechanism):
        module_name = next((m for m in map(proof_module, cls.__mro__) if m is not None), "")
        module = importlib.import_module(module_name)
        if not getattr(module, "OWN_GAUSSIAN_PROOF", False):
            from proofs.zcdp import gaussian_claims

            rows.extend(gaussian_claims(cls, limit))
    return rows


def prove(cls: type[Any], limit: int = EXHAUSTIVE_LIMIT) -> list[ClaimResult]:
    """Run every claim of ``cls``'s theorem (the subclass's own declarations are read),
    and for a mechanism its Gaussian budget (:mod:`proofs.zcdp`).

    ``limit`` (1 … :data:`MAX_LIMIT`) bounds the exhaustive checks."""
    limit = _check_limit(limit)
    _, fn = proof_for(cls)
    return _with_gaussian(cls, fn, limit)


def prove_all(names: Sequence[str] = (), limit: int = EXHAUSTIVE_LIMIT) -> list[ClaimResult]:
    """Prove every mechanism in :data:`dpref.MECHANISMS` (or those named: CLI or class name).

    A mechanism with no registered proof gets one ``FAILED`` row (``proof module``).
    """
    chosen = resolve_names(names)
    limit = _check_limit(limit)
    extra = subjects()
    rows: list[ClaimResult] = []
    for cls in chosen or [*MECHANISMS.values(), *extra]:
        try:
            _, fn = proof_for(cls)
        except ParameterError as exc:  # an unproven mechanism is a failed claim
            rows.append(ClaimResult(label(cls), "proof module", FAILED, 0.0, detail=str(exc)))
            continue
        rows.extend(_with_gaussian(cls, fn, limit))
    return rows
