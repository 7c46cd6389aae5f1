"""Continual-release mechanisms: counting (SPEC §1)."""

from dpref.mechanisms.base import EXACT, BudgetTerm, ExactOps, Mechanism, NodeTable, OnlineCounter
from dpref.mechanisms.counting import Binary, Hybrid, SimpleI, SimpleII, TwoLevel

__all__ = [
    "EXACT",
    "Binary",
    "BudgetTerm",
    "ExactOps",
    "Hybrid",
    "Mechanism",
    "NodeTable",
    "OnlineCounter",
    "SimpleI",
    "SimpleII",
    "TwoLevel",
]

MECHANISMS: dict[str, type[Mechanism]] = {
    cls.name: cls for cls in (SimpleI, SimpleII, TwoLevel, Binary, Hybrid)
}
"""Mechanism classes by their command-line name."""
