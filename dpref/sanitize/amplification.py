"""Privacy amplification by Poisson subsampling, as exact rational upper bounds.

A mechanism ``M`` that is ε₀-DP under add/remove neighbours, run on a Poisson
subsample (each record kept independently with probability p), is

* ``ln(1 + p(e^{ε₀} − 1))``-DP under add/remove neighbours (Balle, Barthe, Gaboardi
  2018, Table 1; Li, Qardaji, Su 2012), and
* ``ln((1 − p + p·e^{ε₀}) / (1 − p + p·e^{−ε₀}))``-DP under replace-one neighbours
  (a record replaced): with the same coins for both inputs, the record is dropped
  (probability 1 − p, both outputs ``M(K)``) or kept (``M(K ∪ {x})`` against
  ``M(K ∪ {x'})``); each kept output is within ``e^{±ε₀}`` of ``M(K)`` (add/remove),
  so ``P ≤ (1 − p + p e^{ε₀}) M(K)`` and ``Q ≥ (1 − p + p e^{−ε₀}) M(K)``.  This is
  never worse than the group-of-two bound ``2 ln(1 + p(e^{ε₀} − 1))`` and equals
  ``2ε₀`` at p = 1 (``proofs/sanitize.py`` proves both facts).

Both are irrational; :func:`subsampled_epsilon` returns a rational *upper* bound (the
safe direction: a larger declared ε claims less), evaluated with mpmath at 60 digits,
widened by a relative 1e−40 and rounded up to a multiple of 10⁻¹⁵.  The probability
actually used by the sampler is :func:`effective_probability` (≥ p), and the bound is
evaluated there.

References
----------
.. [1] B. Balle, G. Barthe, M. Gaboardi. "Privacy Amplification by Subsampling: Tight
   Analyses via Couplings and Divergences." NeurIPS 2018.
.. [2] N. Li, W. Qardaji, D. Su. "On Sampling, Anonymization, and Differential Privacy
   Or, K-Anonymization Meets Differential Privacy." ASIACCS 2012.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

from dpref.errors import ParameterError
from dpref.rigorous import mp_context, mpf_fraction
from dpref.types import Budget
from dpref.validation import ceil_float, check_choice, check_epsilon, check_fraction, fmt

__all__ = [
    "MAX_SUBSAMPLED_EPSILON",
    "NEIGHBOURS",
    "amplification_cap",
    "amplified_epsilon",
    "check_subsample",
    "effective_probability",
    "subsampled_epsilon",
]

NEIGHBOURS = ("replace", "add-remove")
"""The neighbour relations of the sanitizers: one record replaced, or added/removed."""
MAX_SUBSAMPLED_EPSILON = Fraction(10**6)
"""Largest ε₀ :func:`subsampled_epsilon` evaluates (``e^{ε₀}`` has ~434 000 digits)."""
_MARGIN = Fraction(1, 10**40)
_GRID = 10**15
_UNIT_BITS = 53
"""``Generator.random()`` returns ``k·2^{-53}``, k uniform in ``[0, 2^{53})``."""


def check_subsample(name: str, value: Any) -> Fraction:
    """A sampling probability in (0, 1], returned exactly."""
    p = check_fraction(name, value)
    if not 0 < p <= 1:
        raise ParameterError(f"{name}={fmt(value)}: must be in the interval (0, 1]")
    return p


def effective_probability(p: Fraction) -> tuple[float, Fraction]:
    """The float threshold the sampler compares ``Generator.random()`` against, and
    the exact probability that keeps a record (≥ p).

    A record is kept when ``U < q`` with ``q = ceil_float(p) ≥ p`` and
    ``U = k·2^{-53}``; that happens for ``⌈q·2^{53}⌉`` of the ``2^{53}`` values of k,
    so the keep probability is ``⌈q·2^{53}⌉/2^{53} ≥ q ≥ p``.  The amplification bound
    increases with p, so evaluating it there is safe.  ``p`` must be in (0, 1].
    """
    p = check_subsample("p", p)
    if p == 1:
        return 1.0, Fraction(1)
    q = ceil_float(p)
    scaled = Fraction(q) * (1 << _UNIT_BITS)
    keep = Fraction(math.ceil(scaled), 1 << _UNIT_BITS)
    return q, min(keep, Fraction(1))


def _round_up(x: Fraction) -> Fraction:
    return Fraction(math.ceil(x * _GRID), _GRID)


def amplified_epsilon(epsilon: Any, p: Any, neighbours: str, ops: Any) -> Any:
    """The amplified ε as one formula over ``ops`` (which gives ``log1p`` and ``expm1``):
    ``ln(1 + p(e^{ε₀} − 1))`` (add/remove) or that minus ``ln(1 − p(1 − e^{−ε₀}))``
    (replace).  :func:`subsampled_epsilon` evaluates it with an mpmath context at 60
    digits; ``proofs/sanitize.py`` evaluates it with sympy for symbolic ε₀ and p."""
    value = ops.log1p(p * ops.expm1(epsilon))
    if neighbours == "add-remove":
        return value
    return value - ops.log1p(-p * (-ops.expm1(-epsilon)))


def amplification_cap(epsilon: Any, neighbours: str) -> Any:
    """The bound without subsampling (p = 1): ε₀ (add/remove), 2ε₀ (replace, group of
    two).  :func:`subsampled_epsilon` returns it at p = 1 and never more than it."""
    return epsilon if neighbours == "add-remove" else 2 * epsilon


def subsampled_epsilon(epsilon: Budget, subsample: Any, neighbours: str = "add-remove") -> Fraction:
    """A rational upper bound on the ε of an ε₀-DP (add/remove) mechanism run on a
    Poisson subsample with keep probability ``subsample``, under ``neighbours``.

    ``"add-remove"``: ``ln(1 + p(e^{ε₀} − 1))``; ``"replace"``:
    ``ln((1 − p + p e^{ε₀}) / (1 − p + p e^{−ε₀}))``.  At p = 1 the exact values ε₀
    and 2ε₀ are returned; below 1, ε₀ may be at most :data:`MAX_SUBSAMPLED_EPSILON`.
    """
    eps = check_epsilon("epsilon", epsilon)
    p = check_subsample("subsample", subsample)
    check_choice("neighbours", neighbours, NEIGHBOURS)
    cap: Fraction = amplification_cap(eps, neighbours)
    if p == 1:
        return cap
    if eps > MAX_SUBSAMPLED_EPSILON:
        raise ParameterError(
            f"epsilon={fmt(epsilon)}: must be <= {MAX_SUBSAMPLED_EPSILON} when subsampling"
        )
    ctx = mp_context()
    e = ctx.mpf(eps.numerator) / eps.denominator
    pm = ctx.mpf(p.numerator) / p.denominator
    value = amplified_epsilon(e, pm, neighbours, ctx)
    bound = _round_up(mpf_fraction(value) * (1 + _MARGIN))
    return min(bound, cap)
