"""Continual-release mechanisms: counting (docs/spec.md §1), trees (§1.1), decayed sums (§2)
and Toeplitz factorizations (§6).

Each class declares itself (its command-line name, examples, proof file, docs page
and decay) and registers in :data:`MECHANISMS` when its module is imported; this
package imports every family, so ``MECHANISMS`` is complete once it is loaded.
"""

from dpref.mechanisms.base import (
    EXACT,
    MECHANISMS,
    BudgetTerm,
    ExactOps,
    Example,
    Mechanism,
    NodeTable,
    OnlineCounter,
    register_mechanism,
)
from dpref.mechanisms.counting import Binary, Hybrid, SimpleI, SimpleII, TwoLevel
from dpref.mechanisms.decayed import AllWindowSum, ExponentialSum, PolynomialSum, WindowSum
from dpref.mechanisms.elders import Elders
from dpref.mechanisms.factorization import BLT, SqrtFactorization
from dpref.mechanisms.smooth import SmoothBinary
from dpref.mechanisms.trees import Honaker, KaryTree

# isort: split
# BlueTree imports Elders and the trees: imported last, so the registry keeps its order.
from dpref.mechanisms.blue import BlueTree

__all__ = [
    "BLT",
    "EXACT",
    "MECHANISMS",
    "AllWindowSum",
    "Binary",
    "BlueTree",
    "BudgetTerm",
    "Elders",
    "ExactOps",
    "Example",
    "ExponentialSum",
    "Honaker",
    "Hybrid",
    "KaryTree",
    "Mechanism",
    "NodeTable",
    "OnlineCounter",
    "PolynomialSum",
    "SimpleI",
    "SimpleII",
    "SmoothBinary",
    "SqrtFactorization",
    "TwoLevel",
    "WindowSum",
    "register_mechanism",
]
