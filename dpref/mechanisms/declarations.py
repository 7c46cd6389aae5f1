"""The values a mechanism declares: exact ops, ranges, budget and row terms, node
tables and examples (re-exported by :mod:`dpref.mechanisms.base`).

Declarations are code written against an ``ops`` namespace: :data:`EXACT` evaluates
them with Python ints and Fractions, ``proofs`` passes a sympy namespace (and
``proofs.smt.Z3Ops``, a z3 one) to prove them for symbolic T and ε.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt

from dpref.errors import DprefTypeError, ParameterError
from dpref.validation import ceil_float, check_real_vector, fmt, fmt_sequence

__all__ = [
    "EXACT",
    "MAX_EPSILON",
    "MAX_HORIZON",
    "MAX_PLAN_STEPS",
    "MAX_STEPS",
    "MAX_UNIT_SCALE",
    "MAX_VARIANCE_STEPS",
    "MIN_UNIT_SCALE",
    "BudgetTerm",
    "ExactOps",
    "NodeTable",
    "PerHorizon",
    "RowTerm",
    "check_node_noise",
    "numpydoc_parameters",
]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


class ExactOps:
    """Integer/Fraction arithmetic for declarations (the symbolic twin lives in ``proofs``)."""

    @staticmethod
    def floor_log2(t: Any) -> Any:
        """``⌊log₂ t⌋`` for a positive int, exactly."""
        return int(t).bit_length() - 1

    @staticmethod
    def ceil_sqrt(t: Any) -> Any:
        """``⌈√t⌉`` for a positive int, exactly."""
        r = math.isqrt(int(t))
        return r if r * r == int(t) else r + 1

    @staticmethod
    def number(x: Any) -> Any:
        """An exact number."""
        return Fraction(x)

    @staticmethod
    def popcount(t: Any) -> Any:
        """The number of 1-bits of a non-negative int."""
        return bin(int(t)).count("1")

    @staticmethod
    def le(a: Any, b: Any) -> Any:
        """``a ≤ b`` (the z3 twin compares unsigned)."""
        return a <= b

    @staticmethod
    def lt(a: Any, b: Any) -> Any:
        """``a < b``."""
        return a < b

    @staticmethod
    def ite(cond: Any, a: Any, b: Any) -> Any:
        """``a if cond else b``."""
        return a if cond else b

    @staticmethod
    def shl(a: Any, b: Any) -> Any:
        """``a << b``."""
        return int(a) << int(b)


EXACT = ExactOps()

MAX_UNIT_SCALE = Fraction(2**900)
"""Largest ``Δ/ε`` accepted: node scales (a factor times Δ/ε) must stay finite floats."""
MIN_UNIT_SCALE = Fraction(1, 2**400)
"""Smallest ``Δ/ε`` accepted: a variance ``2b²`` of a node scale b stays a normal float
(at ``Δ/ε ≈ 10⁻¹⁵⁵`` it would underflow to 0)."""
MAX_EPSILON = Fraction(2**400)
"""Largest ε accepted (whatever Δ): the exact plan checks convert ε and ``Δ/b`` to floats."""
MAX_HORIZON = 2**62
"""Largest horizon T a mechanism accepts: times and node indices are int64, and a node
scale T·Δ/ε stays below ``2^962``, a finite float.  Online counters step up to it."""
MAX_STEPS = 2**31
"""Largest T of the paths that build one value per step (``release``, ``release_many``,
``plan``, ``variance``, ``variance_exact``, ``nodes``, ``node_noise``): they need Θ(T) memory
and time (a float64 array of 2^31 steps is 16 GiB; scipy indexes sparse matrices in int32)."""
MAX_VARIANCE_STEPS = 2**20
"""Largest T of ``variance``/``variance_exact``: one exact Fraction per step (Hybrid, the
slowest, takes tens of seconds at 2^20 = 1,048,576 on the 2-core machine)."""
MAX_PLAN_STEPS = 2**16
"""Default largest T of ``plan``: the explicit plan holds every node's interval and the
decoder's nonzeros (Two-Level, the slowest, takes seconds at 2^16).  A class whose plan is
denser lowers it (:attr:`Mechanism.max_plan_steps`)."""


@dataclass(frozen=True)
class BudgetTerm:
    """One kind of node in a mechanism's privacy accounting.

    The worst-placed item belongs to ``membership`` nodes of this kind, each released
    with Laplace scale ``scale`` (so each costs ``Δ/scale``).
    """

    kind: str
    """Node kind (``"level"``, ``"item"``, ``"block"``, ``"log"``, ``"binary_k"`` …)."""
    membership: Any
    """How many nodes of this kind the worst item lies in (int or sympy expression)."""
    scale: Any
    """Laplace scale of those nodes (Fraction or sympy expression)."""
    weight: Any = 1
    """The nodes' weight ``|w_n|`` when they are weighted (PolynomialSum's ``(1−β)^j``;
    ``membership`` then counts weight, ``weight × #nodes``).  The Gaussian node variance
    of the term is ``weight·Δ·scale/(2ρ)`` (:meth:`Mechanism.node_variance`)."""


@dataclass(frozen=True)
class RowTerm:
    """One kind of node in the recombination of the output at time t.

    The output at t adds ``count`` noisy nodes of this kind, each with coefficient
    ``coefficient`` and Laplace scale ``scale``, so it contributes
    ``2 · count · coefficient² · scale²`` to ``Var(out_t)`` (docs/spec.md §0, item 4).
    """

    kind: str
    """Node kind (as in :class:`BudgetTerm`)."""
    count: Any
    """How many nodes of this kind the output at t uses (int or sympy expression)."""
    coefficient: Any
    """Their recombination coefficient ``r_{t,n}``."""
    scale: Any
    """Their Laplace scale ``b_n``."""


@dataclass(frozen=True, eq=False)
class NodeTable:
    """Nodes released up to a horizon, in canonical order (docs/spec.md §0)."""

    lo: IntArray
    """Interval starts (1-indexed)."""
    hi: IntArray
    """Interval ends = release times."""
    scale_table: tuple[Fraction, ...]
    """Distinct exact scales."""
    scale_idx: IntArray
    """Scale index per node."""
    weight_table: tuple[Fraction, ...] = (Fraction(1),)
    """Distinct exact weights ``w_n``."""
    weight_idx: IntArray | None = None
    """Weight index per node (all zeros when ``None``)."""

    @property
    def size(self) -> int:
        """Number of nodes."""
        return int(self.lo.size)

    @property
    def scales(self) -> FloatArray:
        """Per-node float scales, rounded up."""
        table = np.array([ceil_float(b) for b in self.scale_table], dtype=np.float64)
        return table[self.scale_idx]


PerHorizon = Callable[[int], Any]
"""A parameter value that depends on the horizon T (e.g. Two-Level's ``B = T``)."""


_SECTION = re.compile(r"^Parameters\n-{3,}\n(.*?)(?:\n\n[A-Z][A-Za-z ]+\n-{3,}\n|\Z)", re.S | re.M)


def numpydoc_parameters(doc: str) -> dict[str, str]:
    """``name -> first sentence`` of a numpydoc ``Parameters`` section."""
    match = _SECTION.search(doc)
    if match is None:
        return {}
    out: dict[str, str] = {}
    current = ""
    for line in match.group(1).splitlines():
        if line and not line[0].isspace():
            current = line.split(":")[0].strip()
            out[current] = ""
        elif current and line.strip():
            out[current] = (out[current] + " " + line.strip()).strip()
    return {k: v.split(". ")[0].rstrip(".").replace("``", "") for k, v in out.items()}


def check_node_noise(noise: Any, n_nodes: int, runs: int | None = None) -> FloatArray:
    """Injected node noise: ``n_nodes`` finite values, or shape ``(runs, n_nodes)``."""
    if runs is None:
        arr = check_real_vector("noise", noise)
        if arr.size != n_nodes:
            raise ParameterError(
                f"noise={fmt_sequence(noise, arr.shape)}: expected {n_nodes} node values "
                f"in canonical order, got {arr.size}"
            )
        return arr
    try:
        arr2 = np.asarray(noise, dtype=np.float64)
    except Exception as exc:  # any __float__/__array__ of the caller's object
        raise DprefTypeError(f"noise={fmt(noise)}: not an array of numbers ({exc})") from None
    if arr2.shape != (runs, n_nodes) or not np.all(np.isfinite(arr2)):
        raise ParameterError(
            f"noise={fmt_sequence(noise, arr2.shape)}: expected a finite array of shape "
            f"({runs}, {n_nodes})"
        )
    return arr2
