"""The exact dense R of the BLUE tree, built with few Fraction operations
(:mod:`dpref.mechanisms.blue`).

Row t: ``r_{t,u} = a_u E(u)`` with ``E(u) = coef_u + (1 − a_{par u}) E(par u)`` top-down
(:func:`~dpref.mechanisms.blue.decode.row_weights`, the reference form).  Blocks of one
level share few distinct ``(E(parent), a(parent))`` pairs (only the k children of t's path
node get a coefficient), so each level is computed on the distinct pairs (``np.unique``)
and the values are indices into one table of Fractions.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import numpy.typing as npt

from dpref.mechanisms.blue.decode import Weights
from dpref.plan import ExactSparse

__all__ = ["recombination_exact"]

IntArray = npt.NDArray[np.int64]


def _types(w: Weights, j: int) -> tuple[IntArray, list[Fraction]]:
    """Per block of level j its type (0/1 regular not observed/observed, 2 spine) and the
    ``a`` of each type."""
    lay = w.layout
    n = lay.count[j]
    ty = np.asarray(lay.pattern[j], dtype=np.int64)[np.arange(n, dtype=np.int64) % lay.k]
    if lay.spine(j):
        ty[n - 1] = 2
    sp = w.spine[j]
    own = [w.regular[j][0].own, w.regular[j][1].own, sp.own if sp is not None else Fraction(0)]
    return ty, own


def recombination_exact(w: Weights) -> ExactSparse:
    """R (T × N), exact, canonical columns; zero entries are not stored."""
    lay = w.layout
    k, H, T = lay.k, lay.top, lay.horizon
    types = [_types(w, j) for j in range(H + 1)]
    table: dict[Fraction, int] = {}
    rows_all: list[IntArray] = []
    cols_all: list[IntArray] = []
    idx_all: list[IntArray] = []
    for t in range(1, T + 1):
        path = [(t - 1) // k**j for j in range(H + 1)]
        phis = [Fraction(1)] * (H + 1)
        for j in range(H):
            p = w.node(j + 1, path[j + 1])
            r = path[j] % k
            phis[j + 1] = p.before[r] + p.split[r] * phis[j]
        vals: list[Fraction] = [phis[H]]  # E values of this row
        e_idx = np.zeros(1, dtype=np.int64)
        for j in range(H, -1, -1):
            ty, own = types[j]
            if j < H:
                n = lay.count[j]
                par = np.arange(n, dtype=np.int64) // k
                pty, pown = types[j + 1]
                key = e_idx[par] * 3 + pty[par]
                uniq, inv = np.unique(key, return_inverse=True)
                base = len(vals)
                for u in uniq.tolist():
                    vals.append((1 - pown[u % 3]) * vals[u // 3])
                e_idx = base + inv.reshape(-1)
                first = path[j + 1] * k
                for m in range(first, min(first + k, n)):  # the path node's children
                    coef = (
                        phis[j] - phis[j + 1]
                        if m == path[j]
                        else Fraction(int(m < path[j])) - phis[j + 1]
                    )
                    if coef:
                        vals.append(coef + vals[int(e_idx[m])])
                        e_idx[m] = len(vals) - 1
            canon = lay.canon[j]
            have = np.flatnonzero(canon >= 0)
            if have.size == 0:
                continue
            key = e_idx[have] * 3 + ty[have]
            uniq, inv = np.unique(key, return_inverse=True)
            gidx = np.empty(uniq.size, dtype=np.int64)
            for i, u in enumerate(uniq.tolist()):
                v = own[u % 3] * vals[u // 3]
                gidx[i] = table.setdefault(v, len(table))
            g = gidx[inv.reshape(-1)]
            keep = np.array([table_key != 0 for table_key in _zero_mask(table, g)], dtype=bool)
            rows_all.append(np.full(int(keep.sum()), t - 1, dtype=np.int64))
            cols_all.append(canon[have][keep])
            idx_all.append(g[keep])
    return ExactSparse.from_triples(
        (T, lay.size),
        np.concatenate(rows_all) if rows_all else np.zeros(0, np.int64),
        np.concatenate(cols_all) if cols_all else np.zeros(0, np.int64),
        tuple(table),
        np.concatenate(idx_all) if idx_all else np.zeros(0, np.int64),
    )


def _zero_mask(table: dict[Fraction, int], g: IntArray) -> list[int]:
    """1 where the table value at g is non-zero, else 0."""
    zero = table.get(Fraction(0), -1)
    return [int(x != zero) for x in g.tolist()]
