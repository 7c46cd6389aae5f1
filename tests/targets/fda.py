"""A third party's FDA counter (Fenwick tree, per-node weights), written independently of
dpref for ``dpref plan extract`` and ``dpref conform --reference FILE`` (docs/auditing.md,
"Third-party plans as references").

FDA (Cai et al.; the ``bitMethods/fda.py`` design of the dpcrpy library, re-written here from
its description, not copied): for T = 2^K − 1 (other T: the first T steps of the smallest such
tree), node t covers the items ``(t − lowbit(t), t]``
and releases ``cof(t)·count_t + Lap(1/ε)``.  The coefficient of a node whose lowest set bit
is level i is ``α_i · Π_{j>i, bit j of t is 0} (1 − α_j)``: the zero bits above the node
decide its share of the budget, and every item's coefficients along its Fenwick update path
sum to 1 (L1 sensitivity 1, so ε-DP with one ``Lap(1/ε)`` per node).  The level shares
are ``α_i = s_i/(s_i + h^{1/3})`` with ``s_i = (2^i)^{1/3}`` and ``h`` accumulating
``(s_i + h^{1/3})³`` level by level.  Output t is the Fenwick prefix query: the sum of
``noisy_n / cof(n)`` over the nodes of t's binary decomposition.  Everything is float64,
as a library computes it: the weights are irrational, so the extracted plan is a float plan.

* ``fda`` — correct, ε = ``EPSILON``;
* ``fda_half_node`` — node ``HALVED_NODE`` draws ``Lap(1/(2ε))``: half the noise of the plan.

Name them on the command line as ``tests/targets/fda.py:fda``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

EPSILON = 1.0
HALVED_NODE = 4
"""The node (1-indexed release time) whose noise ``fda_half_node`` halves: the root of the
first subtree of four items, level 2."""


def _levels(T: int) -> int:
    """K with 2^(K−1) ≤ T < 2^K: the smallest FDA tree (2^K − 1 items) that holds T items
    (the published FDA is defined for T = 2^K − 1; a shorter stream is its prefix)."""
    return T.bit_length()


def _alphas(K: int) -> list[float]:
    out = []
    h = 0.0
    for i in range(K):
        s = float(2**i) ** (1.0 / 3.0)
        r = h ** (1.0 / 3.0)
        out.append(s / (s + r))
        h += (s + r) ** 3
    return out


def coefficients(T: int) -> np.ndarray[Any, Any]:
    """``cof(t)`` for t = 1..T (float64)."""
    K = _levels(T)
    alpha = _alphas(K)
    cof = np.empty(T)
    for t in range(1, T + 1):
        low = (t & -t).bit_length() - 1
        c = alpha[low]
        for j in range(low + 1, K):
            if not (t >> j) & 1:
                c *= 1.0 - alpha[j]
        cof[t - 1] = c
    return cof


def _release(stream: Any, rng: Any, halve: int | None) -> np.ndarray[Any, Any]:
    x = np.asarray(stream, dtype=np.float64)
    T = x.size
    cof = coefficients(T)
    scales = np.full(T, 1.0 / EPSILON)
    if halve is not None and halve <= T:
        scales[halve - 1] /= 2.0
    noise = rng.laplace(0.0, scales, size=T)
    prefix = np.concatenate([[0.0], np.cumsum(x)])
    noisy = np.empty(T)
    for t in range(1, T + 1):
        low = t & -t
        noisy[t - 1] = cof[t - 1] * (prefix[t] - prefix[t - low]) + noise[t - 1]
    out = np.empty(T)
    for t in range(1, T + 1):
        total, n = 0.0, t
        while n > 0:
            total += noisy[n - 1] / cof[n - 1]
            n -= n & -n
        out[t - 1] = total
    return out


def fda(stream: Any, rng: Any) -> np.ndarray[Any, Any]:
    """The correct FDA counter."""
    return _release(stream, rng, None)


def fda_half_node(stream: Any, rng: Any) -> np.ndarray[Any, Any]:
    """FDA with node ``HALVED_NODE``'s noise halved (a planted bug)."""
    return _release(stream, rng, HALVED_NODE)
