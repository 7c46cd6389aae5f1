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
from dpref.lower_bounds import lower_bound
from dpref.mechanisms import (
    MECHANISMS,
    AllWindowSum,
    Binary,
    Elders,
    ExponentialSum,
    Honaker,
    Hybrid,
    KaryTree,
    Mechanism,
    PolynomialSum,
    SimpleI,
    SimpleII,
    TwoLevel,
    WindowSum,
)
from dpref.plan import LinearPlan
from dpref.sanitize import (
    PrivateQuantiles,
    StreamingSanitizer,
    ThresholdSanitizer,
    private_quantiles,
    subsampled_epsilon,
)

__version__ = "0.1.0"

__all__ = [
    "MECHANISMS",
    "AllWindowSum",
    "Binary",
    "Domain",
    "DomainError",
    "DprefError",
    "DprefTypeError",
    "Elders",
    "ExponentialSum",
    "Honaker",
    "HorizonError",
    "Hybrid",
    "KaryTree",
    "LinearPlan",
    "Mechanism",
    "ParameterError",
    "PlanCheckError",
    "PolynomialSum",
    "PrivateQuantiles",
    "SimpleI",
    "SimpleII",
    "StreamingSanitizer",
    "ThresholdSanitizer",
    "TwoLevel",
    "WindowSum",
    "__version__",
    "bits",
    "bounded_integers",
    "bounded_reals",
    "lower_bound",
    "private_quantiles",
    "subsampled_epsilon",
]
