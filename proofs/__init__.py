"""Symbolic proofs (sympy) of the budget every dpref mechanism class declares.

One module per mechanism family (:mod:`proofs.counting`; the decayed sums add
``proofs.decayed``), a registry mapping each mechanism class to its proof module
(:mod:`proofs.registry`), and a common result type (:class:`~proofs.core.ClaimResult`).
Run ``dpref prove`` or ``python -m proofs``; ``docs/proofs.md`` collects the theorems.

The names load on first use (PEP 562): sympy takes ~0.4 s to import, and
``dpref --help`` imports :mod:`proofs.cli` (and so this package) to list ``prove``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dpref.lazy import lazy_exports

if TYPE_CHECKING:
    from proofs.core import FAILED, PROVEN, SYMBOLIC, ClaimResult, SymbolicOps
    from proofs.registry import EXHAUSTIVE_LIMIT, PROOF_MODULES, proof_for, prove, prove_all

__all__ = [
    "EXHAUSTIVE_LIMIT",
    "FAILED",
    "PROOF_MODULES",
    "PROVEN",
    "SYMBOLIC",
    "ClaimResult",
    "SymbolicOps",
    "proof_for",
    "prove",
    "prove_all",
]

_HOME = dict.fromkeys(("FAILED", "PROVEN", "SYMBOLIC", "ClaimResult", "SymbolicOps"), "core")
_HOME.update(
    dict.fromkeys(
        ("EXHAUSTIVE_LIMIT", "PROOF_MODULES", "proof_for", "prove", "prove_all"), "registry"
    )
)

__getattr__, __dir__ = lazy_exports(__name__, globals(), _HOME)
