"""Continual-release mechanisms: counting (SPEC §1) and decayed sums (SPEC §2)."""

from dpref.mechanisms.base import EXACT, BudgetTerm, ExactOps, Mechanism, NodeTable, OnlineCounter
from dpref.mechanisms.counting import Binary, Hybrid, SimpleI, SimpleII, TwoLevel
from dpref.mechanisms.decayed import AllWindowSum, ExponentialSum, PolynomialSum, WindowSum

__all__ = [
    "EXACT",
    "AllWindowSum",
    "Binary",
    "BudgetTerm",
    "ExactOps",
    "ExponentialSum",
    "Hybrid",
    "Mechanism",
    "NodeTable",
    "OnlineCounter",
    "PolynomialSum",
    "SimpleI",
    "SimpleII",
    "TwoLevel",
    "WindowSum",
]

MECHANISMS: dict[str, type[Mechanism]] = {
    cls.name: cls
    for cls in (
        SimpleI,
        SimpleII,
        TwoLevel,
        Binary,
        Hybrid,
        WindowSum,
        AllWindowSum,
        ExponentialSum,
        PolynomialSum,
    )
}
"""Mechanism classes by their command-line name."""
