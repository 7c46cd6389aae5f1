"""Decayed sums under continual observation (docs/spec.md §2): WindowSum, AllWindowSum,
ExponentialSum, PolynomialSum.

The decayed sum induced by a non-increasing ``g`` with ``g(0) = 1`` is
``F(t) = Σ_{i≤t} g(t−i) x_i``.  Every mechanism here keeps noisy nodes of a dyadic
tree and adds up a few of them; the tree is treated non-uniformly, either with
different noise per level (AllWindowSum) or with different weights per node
(ExponentialSum, PolynomialSum).  Levels are numbered as in the patent: level
``k ≥ 1`` (leaves at level 1) holds the aligned intervals
``[(m−1)2^{k−1}+1, m·2^{k−1}]``; in code a node's level is ``b = k − 1`` (its size is
``2^b``).

None of the four needs a horizon: each is ε-DP for every stream length, because
every node is released once and never updated, and the per-item privacy sum is
bounded by a series whose limit is ε (``proofs/decayed.py`` proves each budget
symbolically).

**Canonical node order** (docs/spec.md §0): by release time ``u`` ascending, then by
interval length ascending, then (PolynomialSum) by instance index ascending.  For
PolynomialSum the release time of a node of instance j is its interval end plus the
instance's delay ``d_j`` (see :class:`PolynomialSum`).

**Irrational budgets.**  ζ(δ), ``k^δ``, ``S(α)`` and the PolynomialSum series are
irrational in general.  The declared budget stays exact symbolically (the proofs
use sympy's ``zeta``); the noise scale actually used is a rational upper bound —
a float, rounded up — of the exact scale, computed rigorously (see
:mod:`dpref.rigorous`: :func:`zeta_bounds`, :func:`exponential_sensitivity_bounds`),
so the mechanism adds at least the noise the proof requires.  Every plan built from
these scales is then checked exactly in Fractions.

**Modules.**  :mod:`~dpref.mechanisms.decayed.common` (the shared base class, checks
and the windowed online state), :mod:`~dpref.mechanisms.decayed.window` (WindowSum,
AllWindowSum and the cover slots their batch path sums),
:mod:`~dpref.mechanisms.decayed.exponential` and
:mod:`~dpref.mechanisms.decayed.polynomial`.  The dyadic covers are in
:mod:`dpref.dyadic`, the rigorous constants in :mod:`dpref.rigorous`; both are
re-exported here under the names they had when this was one module.

References
----------
.. [1] J. Bolot, N. Fawaz, S. Muthukrishnan, A. Nikolov, N. Taft. "Private Decayed
   Predicate Sums on Streams." ICDT 2013, pp. 284–295 (arXiv:1108.6123).
.. [2] US patent 9,471,791 (US 2013/0212690 A1), "Private decayed sum estimation
   under continual observation" — Assertions 1–2, Theorems 3–7, Lemma 2.
"""

from dpref.dyadic import window_cover

# The import order is the registration order, i.e. the order of dpref.MECHANISMS.
# isort: off
from dpref.mechanisms.decayed.window import AllWindowSum, WindowSum
from dpref.mechanisms.decayed.exponential import ExponentialSum
from dpref.mechanisms.decayed.polynomial import PolynomialSum

# isort: on
from dpref.rigorous import (
    exponential_sensitivity_bounds,
    exponential_sensitivity_partial,
    polynomial_breakpoint,
    polynomial_series_upper,
    zeta_bounds,
)

__all__ = [
    "AllWindowSum",
    "ExponentialSum",
    "PolynomialSum",
    "WindowSum",
    "exponential_sensitivity_bounds",
    "exponential_sensitivity_partial",
    "polynomial_breakpoint",
    "zeta_bounds",
]

_cover_scalar = window_cover
"""The name :func:`dpref.dyadic.window_cover` had here (tests import it)."""
_polynomial_series_upper = polynomial_series_upper
"""The name :func:`dpref.rigorous.polynomial_series_upper` had here (tests clear its cache;
patch ``dpref.rigorous._SERIES_TERMS``, which is where it reads its cap)."""
