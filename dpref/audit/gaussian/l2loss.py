"""The exact algebra of the Gaussian structural audit: the μ of a linear Gaussian release.

For outputs ``y = A·x + M·ξ + c`` with ξ standard normal (column j of M carries draw j's
scale), moving item i by Δ shifts the outputs by ``d = Δ·A·e_i``.  The output law is
``N(A·x + c, M·Mᵀ)``; the two laws of a neighbouring pair differ by a shift d, and:

* if d is not in the column space of M, some event has probability 1 under one law and 0
  under the other: μ_i = ∞;
* otherwise the pair is exactly a Gaussian shift with
  ``μ_i² = dᵀ(MMᵀ)⁺d = min{‖v‖₂² : M·v = d}`` (the least-norm v): for any v with
  ``M·v = d`` the outputs under x′ are those under x with ξ replaced by ξ + v, the log
  density ratio of that shift is ``N(‖v‖²/2, ‖v‖²)``, and since ξ's law is isotropic
  only the component of v orthogonal to ker M matters — the least-norm one.  Its
  trade-off function is exactly ``G_{μ_i}``, and its Rényi divergences are
  ``α·μ_i²/2``.

So the release is exactly μ-GDP and exactly ρ-zCDP with ``μ² = max_i μ_i²`` and
``ρ = μ²/2``, no smaller value holds, and μ is a tight number, not a bound.

How it is computed, exactly (:func:`item_mu_squared`).  Every entry is the rational value
of a float the target computed (``Fraction(float)``).  Exact Gauss–Jordan elimination of
``[M_u | Δ·A]`` over ℚ (M_u: the used, non-zero columns; sparse rows, pivot on the
shortest row) gives the rank r, the inconsistent items (a non-pivot row left with a
right-hand side: μ_i = ∞) and the reduced system ``ξ_P + C·ξ_F = b′`` — P the r pivot
draws, F the f free ones, C an r × f rational matrix.  Then

* f = 0 (the used columns are independent: the outputs determine the noise): v = b′ is
  the only solution and ``μ_i² = ‖b′_i‖²``;
* f ≤ r: minimise ``‖b′ − C·u‖² + ‖u‖²`` over the free part u: ``(I + CᵀC)·u = Cᵀb′``
  and ``μ_i² = b′ᵀb′ − b′ᵀC·u``;
* f > r: v = Eᵀw on the row space ``E = [I | C]``: ``(I + CCᵀ)·w = b′`` and
  ``μ_i² = b′ᵀw``.

Both systems are symmetric positive definite, of size min(r, f), solved by the same exact
elimination.  This was chosen over the Gram system ``(M_u M_uᵀ)w = b`` on a row basis
because the first elimination is needed anyway (rank, consistency) and is sparse for tree
mechanisms, and the second system is then the smaller of the two sides (f = 0 for every
counting mechanism whose outputs use independent nodes: no second system at all).

Cost: the elimination is exact rational arithmetic whose numbers grow with the dense
part of the system, so :data:`MAX_GAUSSIAN_EXACT_WORK` bounds the work (not T): beyond it
the audit stops with a :class:`~dpref.errors.ParameterError` (docs/auditing.md §9).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import numpy.typing as npt

from dpref.audit.pure.l1loss import Row, eliminate, rational_bits
from dpref.errors import ParameterError

__all__ = [
    "MAX_GAUSSIAN_EXACT_WORK",
    "ItemMuSquared",
    "item_mu_squared",
    "mu_squared_lower_bound",
    "probe_gamma",
]

FloatArray = npt.NDArray[np.float64]

MAX_GAUSSIAN_EXACT_WORK = 5 * 10**7
"""Most *word operations* the exact elimination may do before it is abandoned with a
:class:`~dpref.errors.ParameterError` naming the horizon.  The rational numbers of a
dense elimination grow with T, so the cost is not a function of T alone: each entry
update counts ``1 + (bits of the multiplier + bits of the pivot row)/64``, about 10⁶
per second here.  Measured with ``rho=1/2`` on the 2-core machine (shared, so ±50 %):
Binary T = 1024 2.1·10⁶ (6 s in all, mostly probing); SqrtFactorization T = 32 1.8·10⁶
(1 s), T = 64 3.0·10⁷ (33 s); Honaker T = 64 3.1·10⁷ (24 s); BLT T = 128 3.8·10⁷
(11 s).  SqrtFactorization and Honaker at T = 128 exceed it (refused after 72 s and
36 s)."""


@dataclass(frozen=True)
class ItemMuSquared:
    """The per-item ``μ_i²`` of a linear Gaussian release, exact rationals."""

    mu_squared: list[Fraction | None]
    """``μ_i² = min{‖v‖₂² : M·v = Δ·A·e_i}`` per item (None: no solution, μ_i = ∞)."""
    rank: int
    """Rank of M's used columns (exact)."""
    used: int
    """Non-zero columns of M (draws some output depends on)."""
    free: int
    """Used draws the outputs do not determine (``used − rank``; 0: v is unique)."""
    method: str
    """``unique`` (f = 0), ``free`` (the f × f system) or ``rows`` (the r × r system)."""


_bits = rational_bits


def _rational(v: object) -> Fraction:
    """An entry of M or A exactly: a Fraction as it is, a float at its binary value."""
    return v if isinstance(v, Fraction) else Fraction(float(v))  # type: ignore[arg-type]


class _Work:
    """The word-operation count of the eliminations against a budget."""

    def __init__(self, budget: int, horizon: int) -> None:
        self.budget = budget
        self.horizon = horizon
        self.done = 0

    def add(self, entries: int, f: Fraction, row_bits: int) -> None:
        """One row update: ``entries`` products of the multiplier ``f`` with entries of
        at most ``row_bits`` bits."""
        self.done += entries * (1 + (_bits(f) + row_bits) // 64)
        if self.done > self.budget:
            raise ParameterError(
                f"horizon={self.horizon}: the exact μ of this target needs more than "
                f"{self.budget:,} word operations of exact rational elimination (the numbers "
                "of a dense system grow with T); audit a smaller horizon"
            )


def _eliminate(rows: list[Row], ncols: int, work: _Work) -> tuple[dict[int, int], list[int]]:
    """:func:`~dpref.audit.pure.l1loss.eliminate` with every row update charged to ``work``."""
    return eliminate(rows, ncols, charge=work.add)


def _solve_spd(G: list[Row], rhs: list[Row], n: int, work: _Work) -> list[Row]:
    """``G·W = R`` exactly for a symmetric positive definite n × n ``G`` (rows as dicts)
    and right-hand sides ``rhs[a]`` (row a of R: item → value); returns the rows of W."""
    rows: list[Row] = []
    for a in range(n):
        row = dict(G[a])
        for i, v in rhs[a].items():
            if v:
                row[n + i] = v
        rows.append(row)
    pivot, free = _eliminate(rows, n, work)
    if free:  # cannot happen: I + CᵀC is positive definite
        raise AssertionError("the least-norm system is singular")
    return [{k - n: v for k, v in rows[pivot[a]].items() if k >= n} for a in range(n)]


def item_mu_squared(
    M: FloatArray, A: FloatArray, delta: Fraction, *, max_work: int = MAX_GAUSSIAN_EXACT_WORK
) -> ItemMuSquared:
    """``μ_i² = min{‖v‖₂² : M·v = Δ·A·e_i}`` for every item i, exactly (module doc).

    ``M`` and ``A`` are float arrays (each entry taken at its exact binary value) or object
    arrays of :class:`~fractions.Fraction` (a mechanism's exact plan:
    :mod:`dpref.audit.gaussian.output_budget`).

    Raises :class:`~dpref.errors.ParameterError` (naming the horizon) when the exact
    elimination would exceed ``max_work`` word operations."""
    T, n_items = A.shape
    work = _Work(max_work, T)
    used = [j for j in range(M.shape[1]) if np.any(M[:, j] != 0.0)]
    k = len(used)
    rows: list[Row] = [
        {a: _rational(M[t, j]) for a, j in enumerate(used) if M[t, j] != 0.0} for t in range(T)
    ]
    for t in range(T):
        for i in range(n_items):
            if A[t, i] != 0.0:
                rows[t][k + i] = delta * _rational(A[t, i])
    pivot, free = _eliminate(rows, k, work)
    pivot_rows = set(pivot.values())
    bad = {col - k for r, row in enumerate(rows) if r not in pivot_rows for col in row}
    P = [j for j in range(k) if j in pivot]
    r, f = len(P), len(free)
    fpos = {j: a for a, j in enumerate(free)}
    # b'[p] (item → value) and C[p] (free position → value), p indexing P
    b = [{col - k: v for col, v in rows[pivot[j]].items() if col >= k} for j in P]
    C = [{fpos[col]: v for col, v in rows[pivot[j]].items() if col < k and col != j} for j in P]
    sq: list[Fraction] = [Fraction(0)] * n_items
    for bp in b:
        for i, v in bp.items():
            sq[i] += v * v
    method = "unique"
    if f:
        if f <= r:
            method = "free"
            # (I + CᵀC)·u = Cᵀb′; μ² = b′ᵀb′ − (Cᵀb′)ᵀu
            G: list[Row] = [{a: Fraction(1)} for a in range(f)]
            Ctb: list[Row] = [{} for _ in range(f)]
            for p in range(r):
                cp = C[p]
                for a, ca in cp.items():
                    ga = G[a]
                    for c2, cb in cp.items():
                        ga[c2] = ga.get(c2, 0) + ca * cb
                    ra = Ctb[a]
                    for i, v in b[p].items():
                        ra[i] = ra.get(i, 0) + ca * v
            U = _solve_spd(G, Ctb, f, work)
            for a in range(f):
                for i, u in U[a].items():
                    sq[i] -= Ctb[a].get(i, 0) * u
        else:
            method = "rows"
            # (I + CCᵀ)·w = b′; μ² = b′ᵀw
            G = [{p: Fraction(1)} for p in range(r)]
            for p in range(r):
                for q in range(p, r):
                    s = sum((v * C[q][a] for a, v in C[p].items() if a in C[q]), Fraction(0))
                    if s:
                        G[p][q] = G[p].get(q, 0) + s
                        if q != p:
                            G[q][p] = G[q].get(p, 0) + s
            W = _solve_spd(G, b, r, work)
            sq = [Fraction(0)] * n_items
            for p in range(r):
                for i, w in W[p].items():
                    sq[i] += b[p].get(i, 0) * w
    out: list[Fraction | None] = [None if i in bad else sq[i] for i in range(n_items)]
    return ItemMuSquared(out, r, k, f, method)


def probe_gamma(horizon: int, draws: int, unit: Fraction = Fraction(1, 2**53)) -> Fraction:
    """``4·(n + 1)·u`` with ``n = T + K + 1`` and the unit roundoff ``u`` (2⁻⁵³ for a
    float64 target, 2⁻²⁴ for float32): the relative rounding allowance of one output of a
    linear target (the factor of :func:`~dpref.audit.injected.structural.linearity_tolerance`)."""
    return 4 * (horizon + draws + 2) * unit


def _dual_candidates(M: FloatArray, d: FloatArray, l1: bool = False) -> list[FloatArray]:
    """Float vectors u to try in :func:`mu_squared_lower_bound` (any u gives a valid bound):
    the optimal dual ``(MMᵀ)⁺d`` (``l1``: u with ``Mᵀu = sign(v)``, v the least-norm
    solution), the part of d outside M's column space, and mixtures."""
    if M.shape[1]:
        pinv = np.linalg.pinv(M)
        v = pinv @ d
        u_fit: FloatArray = pinv.T @ (np.sign(v) if l1 else v)
        r: FloatArray = d - M @ v
    else:
        u_fit, r = np.zeros_like(d), d.copy()
    out = [u_fit]
    if np.any(r != 0.0):
        out.append(r)
        scale = float(np.abs(u_fit).max()) / float(np.abs(r).max())
        out += [u_fit + t * scale * r for t in (1e-3, 1e-1, 1.0, 10.0, 1e3, 1e6)]
    return out


def _dual_value(
    u: list[Fraction],
    M: FloatArray,
    d: list[Fraction],
    e_d: list[Fraction],
    c_abs: list[Fraction],
    gamma: Fraction,
    l1: bool = False,
    floor: Fraction = Fraction(0),
) -> tuple[Fraction, Fraction]:
    """``(ā, b̄)`` of :func:`mu_squared_lower_bound` for one u, exactly (``l1``: b̄ bounds
    ``‖M*ᵀu‖_∞`` instead of ``‖M*ᵀu‖₂²``)."""
    a = sum((ut * dt - abs(ut) * et for ut, dt, et in zip(u, d, e_d, strict=True)), Fraction(0))
    cu = sum((abs(ut) * ct for ut, ct in zip(u, c_abs, strict=True)), Fraction(0))
    fu = floor * sum((abs(ut) for ut in u), Fraction(0)) if floor else Fraction(0)
    b = Fraction(0)
    rows, cols = np.nonzero(M)
    signed: dict[int, Fraction] = {}
    absolute: dict[int, Fraction] = {}
    for t, j in zip(rows.tolist(), cols.tolist(), strict=True):
        if u[t]:
            m = Fraction(float(M[t, j]))
            signed[j] = signed.get(j, Fraction(0)) + m * u[t]
            absolute[j] = absolute.get(j, Fraction(0)) + abs(m) * abs(u[t])
    for j in range(M.shape[1]):
        col = (
            abs(signed.get(j, Fraction(0)))
            + gamma * (4 * cu + 3 * absolute.get(j, Fraction(0)))
            + fu
        )
        b = max(b, col) if l1 else b + col * col
    return a, b


def mu_squared_lower_bound(
    M: FloatArray,
    a_col: FloatArray,
    c: FloatArray,
    delta: Fraction,
    step: float,
    *,
    l1: bool = False,
    unit: Fraction = Fraction(1, 2**53),
    tiny: float = 0.0,
    extra: tuple[FloatArray, ...] = (),
) -> tuple[Fraction, bool]:
    """A lower bound on item i's μ_i² that survives the rounding of the probed structure.

    ``M`` and ``a_col = A·e_i`` are *measured*: differences of the target's float outputs
    (``M[:, j] = y(ξ = e_j) − y₀``, ``A·e_i = (y(x₀ + step·e_i) − y₀)/step``), so they
    differ from the structure the target computes in real arithmetic, M* and ``d* =
    Δ·A*·e_i``, by the rounding of those outputs.  Under the error model of
    :func:`~dpref.audit.injected.structural.linearity_tolerance` (each output within
    ``γ·(|terms|)`` of its real value, ``γ`` = :func:`probe_gamma`):
    ``|M* − M| ≤ γ·(4|c| + 3|M|)`` and ``|d* − d| ≤ Δ·γ·((3 + |step|)/|step|·|c| + 3|A·e_i|)``
    entrywise (c: the outputs at ``(x₀, ξ = 0)``).

    The least-norm problem has the dual ``μ_i² = max_u 2uᵀd* − ‖M*ᵀu‖²``, so every u
    gives ``μ_i² ≥ ā²/b̄`` (ā > 0, optimal scaling of u) with ``ā ≤ uᵀd*`` and
    ``b̄ ≥ ‖M*ᵀu‖²`` taken over the whole error box; ``b̄ = 0 < ā`` means μ_i = ∞
    whatever the rounding.  u is found in floats (the optimal dual and the part of d
    outside M's range), the bound evaluated in exact rationals.  Returns
    ``(bound, infinite)``; the bound is 0 when no u certifies anything.

    ``l1=True`` bounds the Laplace loss ``ε_i = min{‖v‖₁ : M*·v = d*}`` instead, by its
    dual ``max uᵀd*`` over ``‖M*ᵀu‖_∞ ≤ 1``: ``ε_i ≥ ā/b̄`` with ``b̄ ≥ ‖M*ᵀu‖_∞``.

    ``unit`` is the target's unit roundoff (2⁻²⁴ for a float32 target) and ``tiny`` the
    absolute error floor per output of :mod:`dpref.audit.injected.rounding` (0: none, the float64
    default); the box then widens by ``8·(n + 1)·tiny`` per entry of M and
    ``Δ·8·(n + 1)·tiny/|step|`` per entry of d.  ``extra``: more candidate u (e.g. the
    LP's dual for ``l1``), tried with both signs."""
    T, K = M.shape
    gamma = probe_gamma(T, K, unit)
    s = abs(Fraction(step))
    floor = 8 * (T + K + 2) * Fraction(tiny)
    d = [delta * Fraction(float(v)) for v in a_col]
    c_abs = [abs(Fraction(float(v))) for v in c]
    e_d = [
        delta * (gamma * ((3 + s) / s * ct + 3 * abs(Fraction(float(v)))) + floor / s)
        for ct, v in zip(c_abs, a_col, strict=True)
    ]
    d_float = float(delta) * a_col.astype(np.float64)
    best: tuple[Fraction, bool] = (Fraction(0), False)
    candidates = _dual_candidates(M, d_float, l1)
    candidates += [sign * np.asarray(u, dtype=np.float64) for u in extra for sign in (1.0, -1.0)]
    for u_f in candidates:
        if not np.all(np.isfinite(u_f)):
            continue
        u = [Fraction(float(v)) for v in u_f]
        a, b = _dual_value(u, M, d, e_d, c_abs, gamma, l1, floor)
        if a <= 0:
            continue
        if b == 0:
            return Fraction(0), True
        value = a / b if l1 else a * a / b
        if value > best[0]:
            best = (value, False)
    return best
