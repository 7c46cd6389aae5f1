"""An independent implementation of the ``blue`` golden vectors, for ``dpref golden run``.

Written from the definition in docs/blue.md, with no dpref code: the layout's blocks from the
parameters (``complete``: every aligned block of levels 0 … ⌈log_k T⌉; ``kary``: the blocks
that end by T on levels ``k^j ≤ T``; ``elders``: the blocks Elders' balanced-digit outputs use;
``elders_full``: every block of the levels with ``k^j ≤ 2T − 1``), in canonical order (interval
length, then level, then start), the per-level noise variances from the budget, and the prefix
estimates by *dense* generalised least squares in exact rationals,
``Q (AᵀΣ⁻¹A)⁻¹ AᵀΣ⁻¹ (A x + z)`` — not the tree recursions of
:mod:`dpref.mechanisms.blue.decode`::

    dpref golden run tests/blue_golden_target.py:blue --mechanism blue
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any


def _ceil_log(T: int, k: int) -> int:
    h, p = 0, 1
    while p < T:
        h, p = h + 1, p * k
    return h


def _nearest(t: int, u: int) -> int:
    """The multiple of the odd u nearest to t."""
    return u * ((2 * t + u) // (2 * u))


def _elders_blocks(T: int, k: int) -> set[tuple[int, int]]:
    """(level, block) of every block some output t ≤ T uses, starting by T."""
    used: set[tuple[int, int]] = set()
    top = 0
    while k ** (top + 1) <= 2 * T - 1:
        top += 1
    for t in range(1, T + 1):
        for j in range(top + 1):
            u = k**j
            here, above = _nearest(t, u) // u, _nearest(t, k * u) // u
            for m in range(min(here, above), max(here, above)):
                if m * u < T:
                    used.add((j, m))
    return used


def blocks(T: int, k: int, layout: str) -> tuple[list[tuple[int, int, int]], int]:
    """The released blocks ``(level, lo, hi)`` in canonical order, and the level count L."""
    if layout == "elders":
        chosen = sorted(_elders_blocks(T, k))
        levels = 1 + max(j for j, _ in chosen)
    else:
        H = _ceil_log(T, k)
        if layout == "complete":
            levels = H + 1
        elif layout == "kary":
            levels = 1 + max(j for j in range(H + 1) if k**j <= T)
        else:  # elders_full
            levels = 1 + max(j for j in range(H + 1) if k**j <= 2 * T - 1)
        chosen = []
        for j in range(levels):
            u = k**j
            for m in range(-(-T // u)):
                if layout != "kary" or (m + 1) * u <= T:
                    chosen.append((j, m))
    out = [(j, m * k**j + 1, min((m + 1) * k**j, T)) for j, m in chosen]
    out.sort(key=lambda b: (b[2] - b[1], b[0], b[1]))
    return out, levels


def _solve(M: list[list[Fraction]], b: list[Fraction]) -> list[Fraction]:
    n = len(b)
    rows = [[*M[i], b[i]] for i in range(n)]
    for c in range(n):
        p = next(r for r in range(c, n) if rows[r][c] != 0)
        rows[c], rows[p] = rows[p], rows[c]
        for r in range(n):
            if r != c and rows[r][c] != 0:
                f = rows[r][c] / rows[c][c]
                rows[r] = [x - f * y for x, y in zip(rows[r], rows[c], strict=True)]
    return [rows[i][n] / rows[i][i] for i in range(n)]


def blue(stream: Any, noise: Any, config: dict[str, Any]) -> list[float]:
    """The BLUE outputs of one golden vector of ``blue`` (module doc)."""
    assert config["mechanism"] == "blue", config
    params = config["parameters"]
    T = len(stream)
    k = int(params.get("k", 2))
    nodes, L = blocks(T, k, str(params.get("layout", "complete")))
    budget = str(params.get("budget", "uniform"))
    shares = (
        [Fraction(1, L)] * L if budget == "uniform" else [Fraction(v) for v in budget.split(",")]
    )
    gaussian = config["noise_kind"] in ("gaussian", "discrete_gaussian")
    # node variance ∝ b_j² = (Δ/ε_j)² (Laplace), ∝ b_j (Gaussian, docs/gaussian.md); only
    # the ratios between levels shape the estimate
    var = [1 / shares[j] if gaussian else 1 / shares[j] ** 2 for j, _, _ in nodes]
    y = [
        sum((Fraction(int(v)) for v in stream[lo - 1 : hi]), Fraction(0)) + Fraction(float(z))
        for (_, lo, hi), z in zip(nodes, noise, strict=True)
    ]
    M = [[Fraction(0)] * T for _ in range(T)]
    rhs = [Fraction(0)] * T
    for (_, lo, hi), v, yn in zip(nodes, var, y, strict=True):
        for i in range(lo - 1, hi):
            rhs[i] += yn / v
            for j in range(lo - 1, hi):
                M[i][j] += 1 / v
    x_hat = _solve(M, rhs)  # the GLS estimate of every item; prefixes are its partial sums
    out, acc = [], Fraction(0)
    for v in x_hat:
        acc += v
        out.append(float(acc))
    return out


blue.dpref_golden = "vector"  # type: ignore[attr-defined]


def blue_ignores_budget(stream: Any, noise: Any, config: dict[str, Any]) -> list[float]:
    """A planted bug: every level weighted alike whatever the budget (right for the uniform
    vectors, wrong for an explicit split)."""
    params = {k: v for k, v in config["parameters"].items() if k != "budget"}
    return blue(stream, noise, {**config, "parameters": params})


blue_ignores_budget.dpref_golden = "vector"  # type: ignore[attr-defined]
