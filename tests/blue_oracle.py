"""Dense exact GLS oracle for the BLUE tree (tests only; small T).

``R = Q (AᵀΣ⁻¹A)⁻¹ AᵀΣ⁻¹`` in Fractions by Gauss–Jordan elimination, from the plan's node
intervals and node variances alone — no code of :mod:`dpref.mechanisms.blue.decode`.
"""

from __future__ import annotations

from fractions import Fraction

from dpref import BlueTree


def _solve(M: list[list[Fraction]], B: list[list[Fraction]]) -> list[list[Fraction]]:
    """``M⁻¹ B`` exactly (M square, invertible)."""
    n = len(M)
    aug = [row[:] + brow[:] for row, brow in zip(M, B, strict=True)]
    for col in range(n):
        piv = next(r for r in range(col, n) if aug[r][col] != 0)
        aug[col], aug[piv] = aug[piv], aug[col]
        inv = 1 / aug[col][col]
        aug[col] = [v * inv for v in aug[col]]
        for r in range(n):
            if r != col and aug[r][col] != 0:
                f = aug[r][col]
                aug[r] = [a - f * b for a, b in zip(aug[r], aug[col], strict=True)]
    return [row[n:] for row in aug]


def gls_recombination(m: BlueTree, horizon: int) -> tuple[list[list[Fraction]], list[Fraction]]:
    """``(R, Var)``: the dense GLS decoder of the plan's node set and its exact per-step
    variances ``Σ_n R_{t,n}² s_n``."""
    plan = m.plan(horizon)
    T, N = horizon, plan.n_nodes
    s = [plan.scale_table[int(i)] for i in plan.scale_idx]
    if not plan.gaussian:
        s = [2 * b * b for b in s]
    A = [[Fraction(int(plan.lo[n] <= i + 1 <= plan.hi[n])) for i in range(T)] for n in range(N)]
    # AᵀΣ⁻¹A (T × T) and AᵀΣ⁻¹ (T × N)
    At_Si = [[A[n][i] / s[n] for n in range(N)] for i in range(T)]
    M = [
        [sum((At_Si[i][n] * A[n][c] for n in range(N)), Fraction(0)) for c in range(T)]
        for i in range(T)
    ]
    X = _solve(M, At_Si)  # (AᵀΣ⁻¹A)⁻¹AᵀΣ⁻¹: the GLS estimate of every item
    R = []
    acc = [Fraction(0)] * N
    for t in range(T):
        acc = [a + x for a, x in zip(acc, X[t], strict=True)]
        R.append(acc[:])
    var = [sum((r * r * sn for r, sn in zip(row, s, strict=True)), Fraction(0)) for row in R]
    return R, var
