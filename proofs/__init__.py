"""Symbolic proofs (sympy) of the budget every dpref mechanism class declares.

One module per mechanism family (:mod:`proofs.counting`; the decayed sums add
``proofs.decayed``), a registry mapping each mechanism class to its proof module
(:mod:`proofs.registry`), and a common result type (:class:`~proofs.core.ClaimResult`).
Run ``dpref prove`` or ``python -m proofs``; ``docs/proofs.md`` collects the theorems.
"""

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
