"""Which proof module proves which mechanism class.

Every class in :data:`dpref.MECHANISMS` must map (through its MRO, so a subclass is
held to its parent's theorem) to a module in :data:`PROOF_MODULES`, and that module
must name the class in its ``PROOFS`` dict; ``tests/test_proofs_registry.py`` fails
when one is missing (OpenDP's rule: an unproven construction does not build).

A proof module exposes

* ``PROOFS: dict[str, ProofFn]`` — class name → ``fn(cls, limit) -> list[ClaimResult]``,
  where ``limit`` is the largest T (or t) of the exhaustive checks;
* a module docstring stating each theorem and its proof in words, with citations.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from typing import Any

from dpref.errors import ParameterError
from dpref.mechanisms import MECHANISMS, Mechanism
from proofs.core import FAILED, ClaimResult

__all__ = [
    "EXHAUSTIVE_LIMIT",
    "PROOF_MODULES",
    "ProofFn",
    "label",
    "proof_for",
    "prove",
    "prove_all",
]

ProofFn = Callable[[type[Any], int], list[ClaimResult]]

EXHAUSTIVE_LIMIT = 4096
"""Exhaustive checks run for every T (or t) up to this (2¹²)."""

PROOF_MODULES: dict[str, str] = {
    "dpref.mechanisms.counting.SimpleI": "proofs.counting",
    "dpref.mechanisms.counting.SimpleII": "proofs.counting",
    "dpref.mechanisms.counting.TwoLevel": "proofs.counting",
    "dpref.mechanisms.counting.Binary": "proofs.counting",
    "dpref.mechanisms.counting.Hybrid": "proofs.counting",
    "dpref.mechanisms.decayed.window.WindowSum": "proofs.decayed",
    "dpref.mechanisms.decayed.window.AllWindowSum": "proofs.decayed",
    "dpref.mechanisms.decayed.exponential.ExponentialSum": "proofs.decayed",
    "dpref.mechanisms.decayed.polynomial.PolynomialSum": "proofs.decayed",
}
"""Fully qualified mechanism class → the proof module that proves it."""


def _qualname(cls: type[Any]) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def proof_for(cls: type[Mechanism]) -> tuple[type[Any], ProofFn]:
    """The registered class ``cls`` is held to (itself or its nearest ancestor) and its proof.

    Raises :class:`~dpref.errors.ParameterError` when no proof is registered.
    """
    for base in cls.__mro__:
        module_name = PROOF_MODULES.get(_qualname(base))
        if module_name is None:
            continue
        module = importlib.import_module(module_name)
        proofs: dict[str, ProofFn] = getattr(module, "PROOFS", {})
        fn = proofs.get(base.__qualname__)
        if fn is None:
            raise ParameterError(
                f"mechanism={cls.__name__}: {module_name}.PROOFS has no entry {base.__qualname__!r}"
            )
        return base, fn
    raise ParameterError(f"mechanism={cls.__name__}: no proof module registered for it")


def label(cls: type[Mechanism]) -> str:
    """Row label: the command-line name of a registered class, else the class name."""
    return cls.name if MECHANISMS.get(cls.name) is cls else cls.__name__


def prove(cls: type[Mechanism], limit: int = EXHAUSTIVE_LIMIT) -> list[ClaimResult]:
    """Run every claim of ``cls``'s theorem (the subclass's own declarations are read)."""
    _, fn = proof_for(cls)
    return fn(cls, limit)


def prove_all(names: Sequence[str] = (), limit: int = EXHAUSTIVE_LIMIT) -> list[ClaimResult]:
    """Prove every mechanism in :data:`dpref.MECHANISMS` (or those named: CLI or class name).

    A mechanism with no registered proof gets one ``FAILED`` row (``proof module``).
    """
    by_name: dict[str, type[Mechanism]] = {}
    for name, cls in MECHANISMS.items():
        by_name[name] = cls
        by_name[cls.__name__] = cls
    chosen: list[type[Mechanism]] = []
    for name in names:
        if name not in by_name:
            raise ParameterError(
                f"mechanism={name!r}: unknown; choose from {', '.join(MECHANISMS)}"
            )
        if by_name[name] not in chosen:
            chosen.append(by_name[name])
    rows: list[ClaimResult] = []
    for cls in chosen or list(MECHANISMS.values()):
        try:
            _, fn = proof_for(cls)
        except ParameterError as exc:  # an unproven mechanism is a failed claim
            rows.append(ClaimResult(label(cls), "proof module", FAILED, 0.0, detail=str(exc)))
            continue
        rows.extend(fn(cls, limit))
    return rows
