"""Toeplitz matrix-factorization counters (docs/factorization.md, docs/spec.md §6).

A factorization mechanism releases ``B(Cx + z)`` for a strategy C and a decoder B with
``B·C = Q`` (prefix sums).  Here C and B are lower-triangular Toeplitz matrices given by
coefficient sequences c and b (``b(x)c(x) = 1/(1−x)`` as power series), node n is row n
of C (items 1..n with weights ``c_{n−i}``, released at n), and every node gets the same
noise:

* ``epsilon=`` (pure ε-DP): Laplace of scale ``b = S₁Δ/ε`` with ``S₁ = Σ_{k<T} |c_k|``, the
  L1 norm of column 1 — the largest column L1 norm, since column i of a lower-triangular
  Toeplitz matrix is a prefix of column 1 — so the L1 privacy sum is exactly ε;
* ``rho=`` (ρ-zCDP): Gaussian of variance ``σ² = S₂Δ²/(2ρ)`` with ``S₂ = Σ_{k<T} c_k²``,
  so the L2 privacy sum ``S₂Δ²/σ²`` is exactly 2ρ (or at most 2ρ where S₂ is replaced by
  a rigorous upper bound, see :data:`SQRT_EXACT_S2` and :data:`SQRT_FIXED_STEPS`).

The output at t is ``c_t + Σ_{n≤t} b_{t−n} z_n``: ``Var(out_t) = v·Σ_{k<t} b_k²`` with v the
node variance (``2b²`` or ``σ²``).

* :class:`SqrtFactorization`: ``C = B``, ``c_k = binom(2k, k)/4^k``, the coefficients of
  ``(1−x)^{−1/2}`` (Fichtenberger, Henzinger, Upadhyay 2023; Henzinger, Upadhyay, Upadhyay
  2023).
* :class:`BLT`: buffered linear Toeplitz (Dvijotham, McMahan, Pillutla, Steinke, Thakurta
  2024): ``c_0 = 1``, ``c_k = Σ_i ω_i θ_i^{k−1}``, a rational generating function, so the
  decoder and C⁻¹ are rational too and the online counter runs in O(buffers) per step.

Modules: :mod:`~dpref.mechanisms.factorization.common` (the shared base class),
:mod:`~dpref.mechanisms.factorization.sqrt` and :mod:`~dpref.mechanisms.factorization.blt`;
every public name is re-exported here.
"""

# isort: off
# sqrt first: importing a module registers its class, and dpref.MECHANISMS (the order of every
# printed table and of the golden file) lists sqrt before blt
import dpref.mechanisms.factorization.sqrt  # noqa: F401

# isort: on
from dpref.mechanisms.factorization.blt import (
    BLT,
    BLT_EXACT_BITS,
    BLT_PRESETS,
    MAX_BUFFERS,
    blt_polynomials,
)
from dpref.mechanisms.factorization.blt import (
    _blt_max_variance_factor as _blt_max_variance_factor,
)
from dpref.mechanisms.factorization.common import (
    FACTORIZATION_PLAN_STEPS,
    ToeplitzFactorization,
)
from dpref.mechanisms.factorization.sqrt import (
    SQRT_EXACT_S1,
    SQRT_EXACT_S2,
    SQRT_FIXED_STEPS,
    SqrtFactorization,
    sqrt_coefficients,
    sqrt_s1,
    sqrt_s2,
    sqrt_s2_upper,
)
from dpref.mechanisms.factorization.sqrt import (
    _sqrt_s2_exact as _sqrt_s2_exact,
)

__all__ = [
    "BLT",
    "BLT_EXACT_BITS",
    "BLT_PRESETS",
    "FACTORIZATION_PLAN_STEPS",
    "MAX_BUFFERS",
    "SQRT_EXACT_S1",
    "SQRT_EXACT_S2",
    "SQRT_FIXED_STEPS",
    "SqrtFactorization",
    "ToeplitzFactorization",
    "blt_polynomials",
    "sqrt_coefficients",
    "sqrt_s1",
    "sqrt_s2",
    "sqrt_s2_upper",
]
