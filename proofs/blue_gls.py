"""The dense generalised-least-squares oracle of :mod:`proofs.blue`, in exact Fractions.

For a linear plan with node matrix A (nodes × T), independent node noise of variances
``Σ = diag(σ_n²)`` and target Q (T × T), the best linear unbiased estimate of ``Q x`` from the
noisy node vector ``y = A x + z`` (Gauss–Markov, A of full column rank) is ``R* y`` with

    R* = Q (AᵀΣ⁻¹A)⁻¹ AᵀΣ⁻¹,   Var(R* y)_t = q_tᵀ (AᵀΣ⁻¹A)⁻¹ q_t,

and it is the unique linear unbiased estimate of least variance at every t (Aitken 1935).
:func:`gls_decoder` computes both exactly from the plan's own A, Q and node variances by
Gaussian elimination over the rationals — dense algebra, nothing of the tree recursions —
so a tree decoder that equals it row for row is the BLUE of its node set.  O(T³) Fractions:
small T only.

References
----------
.. [1] A. C. Aitken. "On Least Squares and Linear Combination of Observations." Proceedings
   of the Royal Society of Edinburgh 55 (1935): the generalised least squares estimate.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

__all__ = ["MAX_T", "gls_decoder", "solve_many"]

MAX_T = 128
"""Largest T the oracle accepts (O(T³) exact operations)."""


class SingularError(ArithmeticError):
    """The normal matrix ``AᵀΣ⁻¹A`` is singular: some item is not identifiable."""


def solve_many(M: list[list[Fraction]], B: list[list[Fraction]]) -> list[list[Fraction]]:
    """X with ``M·X = B`` exactly (Gauss–Jordan elimination over the rationals).

    Raises :class:`SingularError` when M is singular."""
    n = len(M)
    width = len(B[0]) if B else 0
    rows = [[*M[i], *B[i]] for i in range(n)]
    for c in range(n):
        p = next((r for r in range(c, n) if rows[r][c] != 0), None)
        if p is None:
            raise SingularError(f"the normal matrix is singular at column {c}")
        rows[c], rows[p] = rows[p], rows[c]
        pivot_row = rows[c]
        pivot = pivot_row[c]
        nz = [j for j in range(c, n + width) if pivot_row[j] != 0]
        for r in range(n):
            f = rows[r][c]
            if r != c and f != 0:
                f /= pivot
                row = rows[r]
                for j in nz:
                    row[j] -= f * pivot_row[j]
    return [[rows[i][n + j] / rows[i][i] for j in range(width)] for i in range(n)]


def gls_decoder(plan: Any) -> tuple[list[list[Fraction]], list[Fraction]]:
    """``(R*, v)``: the exact GLS recombination (T × nodes) of a plan and the exact variance
    ``v_t = q_tᵀ(AᵀΣ⁻¹A)⁻¹q_t`` of each of its T outputs (module doc).

    Uses only the plan's dense exact A and Q and its node variances
    (:meth:`dpref.plan.LinearPlan.node_variance_table`).  Raises :class:`SingularError` when
    A does not have full column rank, ``ValueError`` when ``T > MAX_T``."""
    T = plan.horizon
    if T > MAX_T:
        raise ValueError(f"horizon={T}: the dense oracle takes T ≤ {MAX_T}")
    A = plan.dense_A_exact()
    Q = plan.dense_Q_exact()
    table = plan.node_variance_table()
    inv = [1 / table[int(s)] for s in plan.scale_idx]
    support = [[i for i in range(T) if row[i] != 0] for row in A]
    M = [[Fraction(0)] * T for _ in range(T)]
    for a, row in enumerate(A):
        for i in support[a]:
            f = row[i] * inv[a]
            Mi = M[i]
            for j in support[a]:
                Mi[j] += f * row[j]
    U = solve_many(M, [[Q[t][i] for t in range(T)] for i in range(T)])  # M·U = Qᵀ
    R = [
        [sum((A[a][i] * U[i][t] for i in support[a]), Fraction(0)) * inv[a] for a in range(len(A))]
        for t in range(T)
    ]
    v = [sum((Q[t][i] * U[i][t] for i in range(T) if Q[t][i]), Fraction(0)) for t in range(T)]
    return R, v
