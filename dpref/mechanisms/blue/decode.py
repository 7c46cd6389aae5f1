"""The BLUE decoder of a tree layout: exact weights, per-t exact variances, R, and the
vectorised float decoder (:mod:`dpref.mechanisms.blue`).

Notation: node v has noisy value ``z_v = x_v + n_v`` (observed, ``Var n_v = s_j`` at level
j) or none.  **Upward**: ``ŷ_v`` is the BLUE of ``x_v`` from the observations inside v's
subtree, of variance ``V_v`` (``∞``: none): a leaf has ``ŷ = z, V = s_0`` (observed) or
``V = ∞``; an internal node with ``C = Σ_children ŷ``, ``V_C = Σ_children V`` takes
``ŷ = a z + (1 − a) C`` with ``a = V_C/(s + V_C)`` (observed; ``a = 1`` when ``V_C = ∞``)
or ``a = 0`` (unobserved).  **Downward**: the root keeps ``x̄ = ŷ``; a child c of v gets
``x̄_c = ŷ_c + g_c (x̄_v − Σ_children ŷ)`` with ``g_c = V_c/Σ V`` (a single child of
infinite variance takes the whole residual; two or more: not identifiable, refused).
The prefix estimate at t is the sum of ``x̄`` over the k-ary decomposition of ``[1, t]``
(the ``x̄`` are consistent: a parent's is the sum of its children's).  This is the
generalised least squares estimate of every prefix from all noisy nodes (Hay, Rastogi,
Miklau, Suciu 2010; checked against the dense GLS formula in tests/blue_oracle.py).

**Exact variance of the prefix estimate** (a recursion along t's path).  Write, for a path
node p whose child on the path is ``c_r``, the error of p's within-block prefix estimate
as ``φ_p e_p + R_p`` where ``e_p`` is the error of ``x̄_p`` and ``R_p`` collects the
upward errors ``ε_c = ŷ_c − x_c`` below p.  With ``G = Σ_{i<r} g_i``:
``φ_p = G + g_r φ_r``; ``R_p = Σ_{i≠r} ([i<r] − φ_p) ε_{c_i} + (φ_r − φ_p) ε_{c_r} + R_r``.
The ``ε`` of distinct children are independent, and ``ε_p = a_p n_p + (1−a_p) Σ_i ε_{c_i}``,
so with ``SL = Σ_{i<r} V_i``, ``SR = Σ_{i>r} V_i``, ``μ = φ_r − φ_p`` and
``C_p = Cov(R_p, ε_p)``:

* ``Var R_p = (1−φ_p)² SL + φ_p² SR + μ² V_r + 2μ C_r + Var R_r``;
* ``C_p = (1 − a_p)((1−φ_p) SL − φ_p SR + μ V_r + C_r)`` (0 when ``a_p = 1``);
* a leaf has ``φ = 1, R = 0``; at the root ``e = ε``, so
  ``Var(out_t) = φ² V_root + 2φ C_root + Var R_root``.

(Children of infinite variance have coefficient 0 in every sum.)
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import numpy.typing as npt

from dpref.errors import ParameterError
from dpref.mechanisms.blue.hierarchy import Layout

__all__ = ["Parent", "Weights", "combine_noise", "exact_weights", "row_weights", "variance_at"]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
Var = Fraction | None
"""A variance; None is ∞ (no unbiased estimate)."""


@dataclass(frozen=True, kw_only=True, eq=False)
class Parent:
    """The exact data of one internal node type: its children and its own weights."""

    child_var: tuple[Var, ...]
    """``V`` of each child, in order (None: ∞)."""
    split: tuple[Fraction, ...]
    """``g_i``: each child's share of the parent's residual (they sum to 1)."""
    own: Fraction
    """``a``: the weight of the node's own noisy value in ``ŷ`` (0 when not observed)."""
    var: Var
    """``V`` of the node itself."""
    before: tuple[Fraction, ...]
    """``G_r = Σ_{i<r} g_i``."""
    left: tuple[Fraction, ...]
    """``SL_r = Σ_{i<r} V_i`` over the finite ``V_i``."""
    right: tuple[Fraction, ...]
    """``SR_r = Σ_{i>r} V_i`` over the finite ``V_i``."""


def _node(observed: bool, s: Fraction | None, child_var: tuple[Var, ...], where: str) -> Parent:
    """The exact weights of one node (module doc); raises when two children have V = ∞."""
    inf = [i for i, v in enumerate(child_var) if v is None]
    finite = [v for v in child_var if v is not None]
    if len(inf) >= 2:
        raise ParameterError(
            f"{where}: children {inf} have no unbiased estimate from their subtrees, so the "
            "prefixes between them are not identifiable from this layout"
        )
    if inf:
        split = tuple(Fraction(int(i == inf[0])) for i in range(len(child_var)))
        vc: Var = None
    elif child_var:
        total = sum(finite, Fraction(0))
        split = tuple(v / total for v in finite)
        vc = total
    else:
        split, vc = (), None
    if observed:
        assert s is not None
        var: Var
        if vc is None:
            own, var = Fraction(1), s
        else:
            own, var = vc / (s + vc), s * vc / (s + vc)
    else:
        own, var = Fraction(0), vc
    before, left, right = [], [], []
    g_acc, l_acc = Fraction(0), Fraction(0)
    total_f = sum(finite, Fraction(0))
    for i, v in enumerate(child_var):
        before.append(g_acc)
        left.append(l_acc)
        right.append(total_f - l_acc - (v or 0))
        g_acc += split[i]
        l_acc += v or 0
    return Parent(
        child_var=child_var,
        split=split,
        own=own,
        var=var,
        before=tuple(before),
        left=tuple(left),
        right=tuple(right),
    )


@dataclass(frozen=True, kw_only=True, eq=False)
class Weights:
    """Every exact weight of a layout with per-level node variances (module doc)."""

    layout: Layout
    """The layout."""
    node_var: tuple[Fraction | None, ...]
    """``s_j`` per level (None for a level without observed nodes)."""
    regular: tuple[tuple[Parent, Parent], ...]
    """Per level j, the regular node types (not observed, observed)."""
    spine: tuple[Parent | None, ...]
    """Per level j, the clipped node (None when level j has none)."""

    def node(self, j: int, m: int) -> Parent:
        """The type of block ``(j, m)``."""
        lay = self.layout
        if lay.spine(j) and m == lay.count[j] - 1:
            sp = self.spine[j]
            assert sp is not None
            return sp
        return self.regular[j][int(lay.pattern[j][m % lay.k])]

    @property
    def root(self) -> Parent:
        """The root's type."""
        return self.node(self.layout.top, 0)


def exact_weights(lay: Layout, node_var: tuple[Fraction | None, ...]) -> Weights:
    """The exact weights of every node type, bottom-up: O(k·H) Fractions.

    Raises :class:`~dpref.errors.ParameterError` when the layout leaves a prefix
    unidentifiable (two children of one node with V = ∞, or the root's V = ∞).
    """
    where = f"layout={lay.kind!r}, k={lay.k}, horizon={lay.horizon}"
    regular: list[tuple[Parent, Parent]] = []
    spine: list[Parent | None] = []
    for j in range(lay.top + 1):
        s = node_var[j]
        if j == 0:
            regular.append((_node(False, s, (), where), _node(s is not None, s, (), where)))
            spine.append(None)
            continue
        below = regular[j - 1]
        kids = tuple(below[int(o)].var for o in lay.pattern[j - 1])
        # a level without observed nodes (s = None) has no observed type: both are unobserved
        regular.append((_node(False, s, kids, where), _node(s is not None, s, kids, where)))
        if not lay.spine(j):
            spine.append(None)
            continue
        m = lay.count[j] - 1
        first, stop = m * lay.k, lay.count[j - 1]
        child: list[Var] = []
        for c in range(first, stop):
            if lay.spine(j - 1) and c == stop - 1:
                sp = spine[j - 1]
                assert sp is not None
                child.append(sp.var)
            else:
                child.append(below[int(lay.is_observed(j - 1, c))].var)
        spine.append(_node(lay.spine_observed[j], s, tuple(child), where))
    w = Weights(layout=lay, node_var=node_var, regular=tuple(regular), spine=tuple(spine))
    if w.root.var is None:
        raise ParameterError(f"{where}: the total [1, T] has no unbiased estimate")
    return w


# ----------------------------------------------------------------- exact per step
def variance_at(w: Weights, t: int) -> Fraction:
    """The exact variance of the prefix estimate at t (the path recursion, module doc)."""
    lay = w.layout
    k = lay.k
    phi, var_r, cov = Fraction(1), Fraction(0), Fraction(0)
    m = t - 1
    for j in range(lay.top):
        r = m % k
        m //= k
        p = w.node(j + 1, m)
        g, vr = p.split[r], p.child_var[r]
        sl, sr = p.left[r], p.right[r]
        phi_p = p.before[r] + g * phi
        new_r = (1 - phi_p) ** 2 * sl + phi_p**2 * sr + var_r
        mu = phi - phi_p
        if vr is not None:
            new_r += mu * mu * vr + 2 * mu * cov
        if p.own == 1 or p.var is None or vr is None:
            new_c = Fraction(0)
        else:
            new_c = (1 - p.own) * ((1 - phi_p) * sl - phi_p * sr + mu * vr + cov)
        phi, var_r, cov = phi_p, new_r, new_c
    root = w.root.var
    assert root is not None
    return phi * phi * root + 2 * phi * cov + var_r


def row_weights(w: Weights, t: int) -> list[list[Fraction]]:
    """Row t of R, level-major: per level j, the weight of every block's noise in the
    prefix estimate at t (0 for unobserved blocks).

    The estimate's error is ``Σ_x coef_x ε_x`` over the path nodes (``coef = φ_p − φ_{par}``,
    the root ``φ``) and the children off the path (``[i<r] − φ_par``); ``ε_x`` weighs node
    u of x's subtree by ``a_u Π (1 − a_w)`` over the nodes w from u's parent up to x.  So
    ``r_{t,u} = a_u E(u)`` with ``E(u) = coef_u + (1 − a_{par u}) E(par u)`` top-down.
    """
    lay = w.layout
    k, H = lay.k, lay.top
    path = [(t - 1) // k**j for j in range(H + 1)]
    phis = [Fraction(1)] * (H + 1)  # φ of the path node at each level
    for j in range(H):
        p = w.node(j + 1, path[j + 1])
        r = path[j] % k
        phis[j + 1] = p.before[r] + p.split[r] * phis[j]
    e_above: list[Fraction] = [phis[H]]  # E at level H (the root)
    own_above = [w.node(H, 0).own]
    out: list[list[Fraction]] = [[] for _ in range(H + 1)]
    out[H] = [own_above[0] * e_above[0]]
    for j in range(H - 1, -1, -1):
        n = lay.count[j]
        e_here: list[Fraction] = []
        own_here: list[Fraction] = []
        for m in range(n):
            par = m // k
            carry = (1 - own_above[par]) * e_above[par]
            if par == path[j + 1]:  # a child of the path node
                coef = phis[j] - phis[j + 1] if m == path[j] else int(m < path[j]) - phis[j + 1]
            else:
                coef = Fraction(0)
            a = w.node(j, m).own
            e_here.append(coef + carry)
            own_here.append(a)
        out[j] = [a * e for a, e in zip(own_here, e_here, strict=True)]
        e_above, own_above = e_here, own_here
    return out


# ----------------------------------------------------------------- float decoder
@dataclass(frozen=True, kw_only=True, eq=False)
class FloatWeights:
    """Per level, the float ``a`` of every block and the float ``g`` of every block as a
    child (the exact weights rounded to nearest; they only shape the estimate, the
    privacy is the node noise's)."""

    own: tuple[FloatArray, ...]
    """``a`` per block, level-major."""
    split: tuple[FloatArray, ...]
    """``g`` per block (as a child of its parent), level-major; 1 at the root."""


def float_weights(w: Weights) -> FloatWeights:
    """The float arrays of :class:`FloatWeights`, built from the exact types by index."""
    lay = w.layout
    k = lay.k
    own, split = [], []
    for j in range(lay.top + 1):
        n = lay.count[j]
        reg = w.regular[j]
        a = np.where(lay.observed[j], float(reg[1].own), float(reg[0].own))
        if lay.spine(j):
            sp = w.spine[j]
            assert sp is not None
            a[n - 1] = float(sp.own)
        own.append(a)
        if j == lay.top:
            split.append(np.ones(n))
            continue
        up = w.regular[j + 1][1]  # a regular parent (its split does not depend on its own flag)
        g = np.array([float(v) for v in up.split], dtype=np.float64)[np.arange(n) % k]
        if lay.spine(j + 1):
            sp = w.spine[j + 1]
            assert sp is not None
            first = (lay.count[j + 1] - 1) * k
            g[first:n] = [float(v) for v in sp.split]
        split.append(g)
    return FloatWeights(own=tuple(own), split=tuple(split))


def combine_noise(z_levels: list[FloatArray], lay: Layout, fw: FloatWeights) -> FloatArray:
    """The prefix estimates from level-major node values (leading axes broadcast): the
    upward pass, the downward pass, then per level the within-parent sums of the left
    siblings gathered at each t.  O(T·H) float operations."""
    k, H, T = lay.k, lay.top, lay.horizon
    lead = z_levels[0].shape[:-1]
    yhat: list[FloatArray] = [z_levels[0]]
    csum: list[FloatArray | None] = [None]
    for j in range(1, H + 1):
        n, below = lay.count[j], yhat[j - 1]
        pad = np.zeros((*lead, n * k), dtype=np.float64)
        pad[..., : below.shape[-1]] = below
        c = pad.reshape((*lead, n, k)).sum(axis=-1)
        a = fw.own[j]
        yhat.append(a * z_levels[j] + (1.0 - a) * c)
        csum.append(c)
    xbar = yhat[H]
    parts: list[FloatArray] = [xbar]
    for j in range(H, 0, -1):
        c = csum[j]
        assert c is not None
        resid = xbar - c
        n_child = lay.count[j - 1]
        spread = np.repeat(resid, k, axis=-1)[..., :n_child]
        xbar = yhat[j - 1] + fw.split[j - 1] * spread
        parts.append(xbar)
    parts.reverse()  # parts[j] = x̄ of level j
    t0 = np.arange(T, dtype=np.int64)
    out = np.array(parts[0][..., t0], dtype=np.float64)
    for j in range(H):
        n_par = lay.count[j + 1]
        pad = np.zeros((*lead, n_par * k), dtype=np.float64)
        pad[..., : lay.count[j]] = parts[j]
        grp = pad.reshape((*lead, n_par, k))
        excl = np.cumsum(grp, axis=-1) - grp  # sum of the left siblings
        flat = excl.reshape((*lead, n_par * k))
        out += flat[..., t0 // k**j]
    return out
