"""dpref: a formally checked reference implementation of differentially private
continual-release mechanisms.

Every mechanism is a linear plan (``dpref.plan``) checked four ways: fast code, the
explicit plan checked exactly, a sympy proof of its budget (``proofs``), and a
statistical audit.
"""

from typing import TYPE_CHECKING

from dpref.domains import Domain, bits, bounded_integers, bounded_reals
from dpref.errors import (
    DomainError,
    DprefError,
    DprefTypeError,
    HorizonError,
    ParameterError,
    PlanCheckError,
)
from dpref.lazy import lazy_exports
from dpref.lower_bounds import lower_bound
from dpref.mechanisms import (
    BLT,
    MECHANISMS,
    AllWindowSum,
    Binary,
    BlueTree,
    Elders,
    ExponentialSum,
    Honaker,
    Hybrid,
    KaryTree,
    Mechanism,
    PolynomialSum,
    SimpleI,
    SimpleII,
    SmoothBinary,
    SqrtFactorization,
    TwoLevel,
    WindowSum,
)
from dpref.plan import LinearPlan

if TYPE_CHECKING:
    from dpref.sanitize import (
        PrivateQuantiles,
        StreamingSanitizer,
        ThresholdSanitizer,
        private_quantiles,
        subsampled_epsilon,
    )

_HOME = {
    name: "sanitize"
    for name in (
        "PrivateQuantiles",
        "StreamingSanitizer",
        "ThresholdSanitizer",
        "private_quantiles",
        "subsampled_epsilon",
    )
}
"""Exports loaded on first use (the sanitizer package is not needed to release a count)."""

__version__ = "0.1.0"

__all__ = [
    "BLT",
    "MECHANISMS",
    "AllWindowSum",
    "Binary",
    "BlueTree",
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
    "SmoothBinary",
    "SqrtFactorization",
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

__getattr__, __dir__ = lazy_exports(__name__, globals(), _HOME)
