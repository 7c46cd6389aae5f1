"""General strategy/decoder plans (docs/spec.md §6) and their exact checks.

:class:`dpref.plan.LinearPlan` describes nodes that are intervals with geometric
weights.  Factorization mechanisms need nodes with arbitrary exact weights: a
*strategy* C (nodes × T; row n is node n, released at its last nonzero column) and a
*decoder* B (T × nodes) with ``B·C = Q``, the target (prefix sums, or window sums of
width W).  Node n gets independent noise: Laplace of scale ``b_n`` or Gaussian of
variance ``σ_n²``.  The output is ``B(Cx + z) = Qx + Bz``.  The checks are exact:

1. **unbiased**: ``B·C = Q``;
2. **causal**: ``B_{t,n} ≠ 0 ⇒ release_n ≤ t``;
3. **private** (single participation, event level): the L1 sum
   ``max_i Σ_n |C_{n,i}|Δ/b_n`` (Laplace; ≤ ε, = ε when the mechanism declares it), or
   the L2 sum ``max_i Σ_n C_{n,i}²Δ²/σ_n²`` (Gaussian; ≤ 2ρ, = 2ρ when declared);
4. **variance**: ``Var(out_t) = 2 Σ_n B_{t,n}² b_n²`` (Laplace) or ``Σ_n B_{t,n}² σ_n²``.

Two forms share these checks (both have ``check(variance_formula) -> PlanReport``, the
interface of :class:`~dpref.plan.LinearPlan`):

* :class:`ToeplitzPlan`: C and B lower-triangular Toeplitz (T × T), given by their
  coefficient sequences c, b.  ``B·C = Q`` is the power-series identity
  ``b(x)c(x) ≡ q(x) mod x^T``.  Each sequence is held in *scaled-integer* form
  ``s_k = N_k/(D·g^k)`` (:class:`ScaledSeq`), so the convolution is an integer one; it is
  computed by Kronecker substitution — each sequence packed into one big decimal number
  with fixed-width slots wide enough for any output coefficient, multiplied once with the
  ``decimal`` module (libmpdec multiplies huge operands with a number-theoretic
  transform), the slots compared — or directly for small T.  When both sequences are given
  as rational generating functions (:class:`RationalGF`, e.g. BLT), the identity is checked
  as a polynomial identity, exact for every T at once.  Column 1 of a lower-triangular
  Toeplitz matrix contains every other column as a prefix, so the L1 and L2 sums are those
  of column 1.
* :class:`DensePlan`: any C and B with exact entries (a few thousand rows at most).
  ``B·C = Q`` is checked exactly by modular arithmetic: after putting B and C over integer
  common denominators, every entry of ``B_int·C_int − D_B D_C Q`` is computed modulo enough
  primes that their product exceeds twice the largest possible absolute value of the entry,
  so a zero residue for every prime means the entry is exactly 0 (Chinese remainder theorem).

Canonical node order (docs/spec.md §6): by release time, then by row index.

Modules: :mod:`~dpref.strategy.sequences` (exact sequences, generating functions, the
Kronecker convolution), :mod:`~dpref.strategy.toeplitz` (:class:`ToeplitzPlan` and the
shared checks), :mod:`~dpref.strategy.dense` (:class:`DensePlan` and its modular check);
every name is re-exported here.
"""

from dpref.strategy.dense import MAX_DENSE, DensePlan, dense_from_toeplitz, dense_mismatch
from dpref.strategy.sequences import (
    DIRECT_LIMIT,
    MAX_KRONECKER_DIGITS,
    NoiseFamily,
    RationalGF,
    ScaledSeq,
    convolution_mismatch,
    scale_all,
    target_coefficients,
)
from dpref.strategy.toeplitz import MAX_TOEPLITZ, ToeplitzPlan

__all__ = [
    "DIRECT_LIMIT",
    "MAX_DENSE",
    "MAX_KRONECKER_DIGITS",
    "MAX_TOEPLITZ",
    "DensePlan",
    "NoiseFamily",
    "RationalGF",
    "ScaledSeq",
    "ToeplitzPlan",
    "convolution_mismatch",
    "dense_from_toeplitz",
    "dense_mismatch",
    "scale_all",
    "target_coefficients",
]
