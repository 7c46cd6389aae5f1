"""Exact objectives of the BLUE tree at large T (:mod:`dpref.mechanisms.blue`).

* **Mean**: ``Σ_t Var(out_t)`` by a dynamic programme over node *types* (module
  :mod:`~dpref.mechanisms.blue.decode`'s path recursion is quadratic in ``(φ, C)`` and
  linear in ``Var R``, so the sums over the leaves of a subtree of
  ``1, φ, φ², C, φC, Var R`` are closed under the step to the parent).  Regular subtrees
  of one level are identical, so the cost is O(k·H) Fraction operations whatever T.
* **Max**: the same path recursion in float64 *interval* arithmetic over every t
  (vectorised per level; each operation's result is widened outward by one ulp with
  ``nextafter``, which encloses the exact result of the IEEE-754 correctly rounded
  operation; every exact constant enters as an enclosing float interval), so
  ``lo_t ≤ Var(out_t) ≤ hi_t`` rigorously.  Every t with ``hi_t ≥ max_s lo_s`` is then
  evaluated exactly (:func:`~dpref.mechanisms.blue.decode.variance_at`) and the largest is
  the maximum: a t outside has ``Var ≤ hi_t < max lo ≤`` the variance of the argmax of lo.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt

from dpref.errors import ParameterError
from dpref.mechanisms.blue.decode import Parent, Weights, variance_at

__all__ = ["Moments", "mean_exact", "objective_exact", "variance_floats"]

FloatArray = npt.NDArray[np.float64]
Interval = tuple[FloatArray, FloatArray]
Moments = tuple[Fraction, Fraction, Fraction, Fraction, Fraction, Fraction]
"""Sums over the leaves t of a subtree of ``(1, φ, φ², C, φC, Var R)``."""

_LEAF: Moments = (Fraction(1), Fraction(1), Fraction(1), Fraction(0), Fraction(0), Fraction(0))


def _step(p: Parent, r: int, mom: Moments) -> Moments:
    """The moments at parent p of the leaves below its child r (module doc of decode)."""
    n, X, XX, C, XC, R = mom
    G, g = p.before[r], p.split[r]
    sl, sr, vr = p.left[r], p.right[r], p.child_var[r]
    s_phi = G * n + g * X
    s_phi2 = G * G * n + 2 * G * g * X + g * g * XX
    s_one2 = (1 - G) ** 2 * n - 2 * (1 - G) * g * X + g * g * XX
    s_r = s_one2 * sl + s_phi2 * sr + R
    if vr is not None:
        s_mu2 = (1 - g) ** 2 * XX - 2 * (1 - g) * G * X + G * G * n
        s_muc = (1 - g) * XC - G * C
        s_r += s_mu2 * vr + 2 * s_muc
    if p.own == 1 or p.var is None or vr is None:
        return (n, s_phi, s_phi2, Fraction(0), Fraction(0), s_r)
    kappa = 1 - p.own
    alpha = sl * (1 - G) - sr * G - vr * G  # C_p/κ = α + β φ_r + C_r
    beta = -(sl + sr) * g + vr * (1 - g)
    s_c = kappa * (alpha * n + beta * X + C)
    s_phic = kappa * (G * alpha * n + (G * beta + g * alpha) * X + g * beta * XX + G * C + g * XC)
    return (n, s_phi, s_phi2, s_c, s_phic, s_r)


def _add(a: Moments, b: Moments) -> Moments:
    return (a[0] + b[0], a[1] + b[1], a[2] + b[2], a[3] + b[3], a[4] + b[4], a[5] + b[5])


def _sum_children(p: Parent, kids: list[Moments]) -> Moments:
    zero = Fraction(0)
    out: Moments = (zero, zero, zero, zero, zero, zero)
    for r, mom in enumerate(kids):
        out = _add(out, _step(p, r, mom))
    return out


def mean_exact(w: Weights) -> Fraction:
    """The exact mean of ``Var(out_t)`` over t = 1..T (module doc): O(k·H) Fractions."""
    lay = w.layout
    k = lay.k
    reg: list[tuple[Moments, Moments]] = [(_LEAF, _LEAF)]
    spine: list[Moments | None] = [None]
    for j in range(1, lay.top + 1):
        below = reg[j - 1]
        kids = [below[int(o)] for o in lay.pattern[j - 1]]
        reg.append((_sum_children(w.regular[j][0], kids), _sum_children(w.regular[j][1], kids)))
        if not lay.spine(j):
            spine.append(None)
            continue
        sp = w.spine[j]
        assert sp is not None
        m = lay.count[j] - 1
        first, stop = m * k, lay.count[j - 1]
        kids_sp: list[Moments] = []
        for c in range(first, stop):
            if lay.spine(j - 1) and c == stop - 1:
                s_mom = spine[j - 1]
                assert s_mom is not None
                kids_sp.append(s_mom)
            else:
                kids_sp.append(below[int(lay.is_observed(j - 1, c))])
        spine.append(_sum_children(sp, kids_sp))
    H = lay.top
    top = spine[H] if lay.spine(H) else reg[H][int(lay.is_observed(H, 0))]
    assert top is not None
    root = w.root.var
    assert root is not None and top[0] == lay.horizon
    return (root * top[2] + 2 * top[4] + top[5]) / lay.horizon


# ------------------------------------------------------------ interval floats
def _enclose(v: Fraction) -> tuple[float, float]:
    """The tightest float interval containing v."""
    f = float(v)
    lo = f if Fraction(f) <= v else float(np.nextafter(f, -np.inf))
    hi = f if Fraction(f) >= v else float(np.nextafter(f, np.inf))
    return lo, hi


def _out(lo: FloatArray, hi: FloatArray) -> Interval:
    return np.nextafter(lo, -np.inf), np.nextafter(hi, np.inf)


def _iadd(a: Interval, b: Interval) -> Interval:
    return _out(a[0] + b[0], a[1] + b[1])


def _isub(a: Interval, b: Interval) -> Interval:
    return _out(a[0] - b[1], a[1] - b[0])


def _imul(a: Interval, b: Interval) -> Interval:
    p = (a[0] * b[0], a[0] * b[1], a[1] * b[0], a[1] * b[1])
    lo = np.minimum(np.minimum(p[0], p[1]), np.minimum(p[2], p[3]))
    hi = np.maximum(np.maximum(p[0], p[1]), np.maximum(p[2], p[3]))
    return _out(lo, hi)


_FIELDS = ("before", "split", "left", "right", "vr", "fin", "kappa")


def _tables(w: Weights, j: int) -> dict[str, tuple[FloatArray, FloatArray]]:
    """Per parent type at level j (0/1: regular not observed/observed, 2: the spine), per
    child position r, the enclosures of the constants of the path step."""
    lay = w.layout
    k = lay.k
    types: list[Parent | None] = [w.regular[j][0], w.regular[j][1], w.spine[j]]
    width = max(k, len(types[2].split) if types[2] is not None else 0)
    out = {f: (np.zeros((3, width)), np.zeros((3, width))) for f in _FIELDS}
    for ti, p in enumerate(types):
        if p is None:
            continue
        for r in range(len(p.split)):
            vr = p.child_var[r]
            kappa = Fraction(0) if (p.own == 1 or p.var is None or vr is None) else 1 - p.own
            vals = {
                "before": p.before[r],
                "split": p.split[r],
                "left": p.left[r],
                "right": p.right[r],
                "vr": vr if vr is not None else Fraction(0),
                "fin": Fraction(int(vr is not None)),
                "kappa": kappa,
            }
            for f, v in vals.items():
                lo, hi = _enclose(v)
                out[f][0][ti, r] = lo
                out[f][1][ti, r] = hi
    return out


def _imul_pos(c: Interval, x: Interval) -> Interval:
    """``c·x`` for an interval ``c ≥ 0`` (the constants of the path step)."""
    lo = np.minimum(c[0] * x[0], c[1] * x[0])
    hi = np.maximum(c[0] * x[1], c[1] * x[1])
    return _out(lo, hi)


State = tuple[Interval, Interval, Interval]
"""``(φ, Var R, C)`` as intervals."""


def _path_step(state: State, c: dict[str, Interval]) -> State:
    """One step of the path recursion (decode's module doc) in interval arithmetic; ``c``
    holds the enclosures of the parent's constants for the child position."""
    phi, var_r, cov = state
    phi_p = _iadd(c["before"], _imul_pos(c["split"], phi))
    one_m = _isub((np.ones(1), np.ones(1)), phi_p)
    mu = _isub(phi, phi_p)
    new_r = _iadd(
        _iadd(
            _imul_pos(c["left"], _imul(one_m, one_m)), _imul_pos(c["right"], _imul(phi_p, phi_p))
        ),
        var_r,
    )
    mu_terms = _iadd(_imul_pos(c["vr"], _imul(mu, mu)), _imul((2 * mu[0], 2 * mu[1]), cov))
    new_r = _iadd(new_r, _imul_pos(c["fin"], mu_terms))
    inner = _iadd(
        _isub(_imul_pos(c["left"], one_m), _imul_pos(c["right"], phi_p)),
        _iadd(_imul_pos(c["vr"], mu), cov),
    )
    return phi_p, new_r, _imul_pos(c["kappa"], inner)


def _pick(tab: dict[str, tuple[FloatArray, FloatArray]], ti: int, r: Any) -> dict[str, Interval]:
    return {f: (tab[f][0][ti, r], tab[f][1][ti, r]) for f in _FIELDS}


def _take(state: State, idx: Any) -> State:
    return tuple((iv[0][idx], iv[1][idx]) for iv in state)  # type: ignore[return-value]


def _select(cond: Any, a: State, b: State) -> State:
    return tuple(  # type: ignore[return-value]
        (np.where(cond, x[0], y[0]), np.where(cond, x[1], y[1])) for x, y in zip(a, b, strict=True)
    )


def variance_floats(w: Weights) -> Interval:
    """``(lo, hi)`` float arrays with ``lo_t ≤ Var(out_t) ≤ hi_t`` for t = 1..T (module
    doc: the path recursion in outward-rounded interval arithmetic).

    A step that stays inside regular blocks depends on t only through ``(t−1) mod k^j``, so
    the states of regular paths are computed once per residue (``Σ_j 2k^j ≈ 2T·k/(k−1)``
    states, one variant per own flag of the block); the steps through the clipped spine
    are then taken for the steps below each spine block.
    """
    lay = w.layout
    k, T, H = lay.k, lay.horizon, lay.top
    one, zero = np.ones(1), np.zeros(1)
    leaf: State = ((one, one), (zero, zero), (zero, zero))
    tabs = [None] + [_tables(w, j) for j in range(1, H + 1)]
    # reg[j][o]: state at a regular level-j block of own flag o, per residue (t−1) mod k^j
    reg: list[tuple[State, State]] = [(leaf, leaf)]
    j = 0
    while j < H and k ** (j + 1) <= T:
        tab = tabs[j + 1]
        assert tab is not None
        n = k ** (j + 1)
        rho = np.arange(n, dtype=np.int64)
        d, low = rho // k**j, rho % k**j
        child_obs = np.asarray(lay.pattern[j], dtype=bool)[d]
        below = _select(child_obs, _take(reg[j][1], low), _take(reg[j][0], low)) if j else leaf
        reg.append((_path_step(below, _pick(tab, 0, d)), _path_step(below, _pick(tab, 1, d))))
        j += 1
    lo_out, hi_out = np.empty(T), np.empty(T)

    def finish(state: State, t0: Any) -> None:
        root = w.root.var
        assert root is not None
        rv = _enclose(root)
        rint: Interval = (np.full(1, rv[0]), np.full(1, rv[1]))
        phi, var_r, cov = state
        total = _iadd(
            _iadd(_imul_pos(rint, _imul(phi, phi)), _imul((2 * phi[0], 2 * phi[1]), cov)), var_r
        )
        lo_out[t0] = np.broadcast_to(total[0], np.shape(t0))
        hi_out[t0] = np.broadcast_to(total[1], np.shape(t0))

    if not lay.spine(H):  # T = k^H: every path is regular
        finish(reg[H][int(lay.is_observed(H, 0))], np.arange(T))
        return lo_out, hi_out
    filled = 0
    for j in range(1, H + 1):
        if not lay.spine(j):
            continue
        tab = tabs[j]
        assert tab is not None
        base_block = (lay.count[j] - 1) * k  # first child (level j−1) of the spine block
        n_reg = lay.full[j - 1] - base_block  # its regular children
        if n_reg <= 0:
            continue
        u = k ** (j - 1)
        t0 = base_block * u + np.arange(n_reg * u, dtype=np.int64)  # t − 1
        i = (t0 // u) - base_block
        low = t0 % u
        obs = np.asarray(lay.pattern[j - 1], dtype=bool)[(base_block + i) % k]
        if j - 1 == 0:
            below = leaf
        else:
            below = _select(obs, _take(reg[j - 1][1], low), _take(reg[j - 1][0], low))
        state = _path_step(below, _pick(tab, 2, i))
        for up in range(j + 1, H + 1):  # through the spine blocks above
            tab_up = tabs[up]
            assert tab_up is not None
            pos = lay.count[up - 1] - 1 - (lay.count[up] - 1) * k  # the spine child's position
            state = _path_step(state, _pick(tab_up, 2, pos))
        finish(state, t0)
        filled += t0.size
    assert filled == T  # every t lies below exactly one spine block's regular child
    return lo_out, hi_out


MAX_CANDIDATES = 1 << 16
"""At most this many steps are evaluated exactly for the maximum."""


def max_exact(w: Weights) -> Fraction:
    """The exact maximum of ``Var(out_t)`` over t ≤ T (module doc)."""
    lo, hi = variance_floats(w)
    best_lo = float(lo.max())
    cand = np.flatnonzero(hi >= best_lo)
    if cand.size > MAX_CANDIDATES:
        raise ParameterError(
            f"horizon={w.layout.horizon}: {cand.size} steps tie within the float enclosure; "
            "the exact maximum would need them all"
        )
    return max(variance_at(w, int(t) + 1) for t in cand)


def objective_exact(w: Weights, kind: str) -> Fraction:
    """The exact ``mean`` or ``max`` of ``Var(out_t)`` over t ≤ T."""
    return mean_exact(w) if kind == "mean" else max_exact(w)
