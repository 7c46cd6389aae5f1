"""dpref: a formally checked reference implementation of differentially private
continual-release mechanisms.

Every mechanism is a linear plan (``dpref.plan``) checked four ways: fast code, the
explicit plan checked exactly, a sympy proof of its budget (``proofs``), and a
statistical audit.
"""

from dpref.domains import Domain, bits, bounded_integers, bounded_reals
from dpref.errors import (
    DomainError,
    DprefError,
    DprefTypeError,
    HorizonError,
    ParameterError,
    PlanCheckError,
)
from dpref.mechanisms import (
    MECHANISMS,
    Binary,
    Hybrid,
    Mechanism,
    SimpleI,
    SimpleII,
    TwoLevel,
)
from dpref.plan import LinearPlan

__version__ = "0.1.0"

__all__ = [
    "MECHANISMS",
    "Binary",
    "Domain",
    "DomainError",
    "DprefError",
    "DprefTypeError",
    "HorizonError",
    "Hybrid",
    "LinearPlan",
    "Mechanism",
    "ParameterError",
    "PlanCheckError",
    "SimpleI",
    "SimpleII",
    "TwoLevel",
    "__version__",
    "bits",
    "bounded_integers",
    "bounded_reals",
]
