"""Exact privacy loss of a built-in mechanism's release, without sampling (small T).

For a linear plan (docs/spec.md §0) with independent Laplace or discrete Laplace node noise,
the release of the node vector ``v = Ax + z`` on stream x has density (or pmf)
``Π_n p_{b_n}(v_n − (Ax)_n)``.  For neighbours ``x, x′`` the ratio of the two
densities factorises over nodes, so

``sup_E ln P[v ∈ E]/P[v′ ∈ E] = ess sup_v ln p_x(v)/p_{x′}(v) = Σ_n max_{v_n} ℓ_n(v_n)``,

with ``ℓ_n(v) = (|v − μ′_n| − |v − μ_n|)/b_n`` (``μ = Ax``), because each factor's
maximum is attained on a half-line of positive probability and the product of those
half-lines is an event.  ``ℓ_n`` is piecewise linear with breakpoints ``μ_n, μ′_n``,
so its maximum is found by evaluating it exactly (``Fraction``) at the breakpoints
and one point beyond each; for discrete Laplace noise the two node values must lie
on the same integer lattice, otherwise the supports are disjoint and the loss is
infinite.  Nothing here reads the declared budget: it is computed from the noise
distributions.

The outputs are ``R v``; when R restricted to its used nodes is invertible (every
counting mechanism) the outputs are a bijective image of the used nodes, so the
loss of the outputs is the same sum over the *used* nodes.  Otherwise the node
release's loss is reported as an upper bound.  The maximum is taken over every
neighbouring pair: all streams of the domain when there are at most 4096 of them
(bits up to T = 12), else all single-item changes ``(i, u, u′)`` — the node loss
depends on ``(x, x′)`` only through ``A(x − x′)``.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from dpref.audit.limits import refuse_zcdp
from dpref.audit.pure.events import used_nodes
from dpref.errors import DprefTypeError, ParameterError
from dpref.mechanisms import Mechanism
from dpref.plan import LinearPlan
from dpref.validation import check_int_range, check_positive_int, fmt

__all__ = ["EXACT_MAX_HORIZON", "ExactLoss", "exact_loss"]

EXACT_MAX_HORIZON = 8
"""Largest T for which :func:`exact_loss` runs by default."""
EXACT_HORIZON_LIMIT = 1024
"""The largest ``max_horizon`` :func:`exact_loss` accepts: above 4096 neighbouring
stream pairs it enumerates single-item changes (``O(T·|values|²)`` node-loss sums over a
dense ``T × nodes`` decoder), which stays within seconds and a few hundred MB here."""


@dataclass(frozen=True)
class ExactLoss:
    """The exact worst-case privacy loss of a release."""

    epsilon: Fraction | None
    """The loss, exactly (None when it is infinite)."""
    scope: str
    """``"outputs"`` (exact) or ``"node release (upper bound on the outputs)"``."""
    x: tuple[float, ...]
    """A worst pair's first stream."""
    x_prime: tuple[float, ...]
    """Its neighbour."""
    nodes: tuple[tuple[int, int], ...]
    """The nodes whose values differ on the worst pair."""
    pairs_checked: int
    """How many neighbouring pairs were enumerated."""
    noise: str
    """``laplace`` or ``discrete``."""

    @property
    def infinite(self) -> bool:
        """True when the loss is unbounded."""
        return self.epsilon is None

    def as_float(self) -> float:
        """The loss as a float (``inf`` when unbounded)."""
        return float("inf") if self.epsilon is None else float(self.epsilon)

    def as_dict(self) -> dict[str, Any]:
        """JSON-friendly dict."""
        return {
            "epsilon": None if self.epsilon is None else str(self.epsilon),
            "epsilon_float": self.as_float(),
            "scope": self.scope,
            "x": list(self.x),
            "x_prime": list(self.x_prime),
            "nodes": [list(n) for n in self.nodes],
            "pairs_checked": self.pairs_checked,
            "noise": self.noise,
        }


def _node_loss(mu: Fraction, mu2: Fraction, b: Fraction, discrete: bool) -> Fraction | None:
    """``max_v (|v − μ′| − |v − μ|)/b`` exactly (None: infinite)."""
    if mu == mu2:
        return Fraction(0)
    if discrete and (mu - mu2).denominator != 1:
        return None  # disjoint lattices μ + ℤ and μ′ + ℤ
    lo, hi = min(mu, mu2), max(mu, mu2)
    points = [lo - 1, lo, hi, hi + 1]
    return max((abs(v - mu2) - abs(v - mu)) / b for v in points)


def _domain_values(mech: Mechanism) -> list[Fraction]:
    d = mech.domain
    if d.integer and d.upper - d.lower <= 16:
        return [Fraction(v) for v in range(int(d.lower), int(d.upper) + 1)]
    lo, hi = d.extremes()
    return sorted({d.lower, d.upper, Fraction(lo), Fraction(hi)})


@dataclass(frozen=True, eq=False)
class _Problem:
    """What :func:`exact_loss` enumerates over: the plan's nodes, exactly."""

    plan: LinearPlan
    T: int
    nodes: list[int]
    """The used nodes when the outputs determine them, else every node."""
    scope: str
    """``"outputs"`` or the node-release upper bound (see :class:`ExactLoss`)."""
    A: list[list[Fraction]]
    scales: list[Fraction]
    discrete: bool
    values: list[Fraction]
    """The item values enumerated."""
    add_remove: bool


def _problem(mech: Mechanism, horizon: int) -> _Problem:
    """The plan at T, its scope (outputs when R on the used nodes is injective) and domain."""
    plan = mech.plan(horizon)
    T = horizon
    used = used_nodes(plan)
    Ru = plan.R().toarray()[:, used]
    injective = used.size <= T and int(np.linalg.matrix_rank(Ru)) == used.size
    nodes = list(used) if injective else list(range(plan.n_nodes))
    scope = "outputs" if injective else "node release (upper bound on the outputs)"
    A = plan.dense_A_exact()
    scales = [plan.scale(n) for n in range(plan.n_nodes)]
    discrete = mech.noise == "discrete"
    values = _domain_values(mech)
    add_remove = mech.domain.neighbours == "add_remove"
    return _Problem(plan, T, nodes, scope, A, scales, discrete, values, add_remove)


def _changes(prob: _Problem) -> list[tuple[Fraction, Fraction]]:
    """Single-item changes ``(u, u′)``: to 0 for add/remove neighbours, else any two values."""
    values = prob.values
    if prob.add_remove:
        return [(v, Fraction(0)) for v in values if v != 0]
    return [(u, w) for u in values for w in values if u != w]


def _streams(prob: _Problem) -> Any:
    """Every stream when there are at most 4096, else one (the node loss depends on A(x − x′))."""
    values, T = prob.values, prob.T
    if len(values) ** T <= 4096:
        return itertools.product(values, repeat=T)
    return [tuple([Fraction(0) if 0 in values else values[0]] * T)]


def _change_loss(
    prob: _Problem,
    mu_base: list[Fraction],
    base: tuple[Fraction, ...],
    i: int,
    u: Fraction,
    w: Fraction,
) -> tuple[Fraction | None, list[tuple[int, int]]]:
    """The loss of item i of ``base`` set to u versus w (None: infinite), and the nodes it moves."""
    total: Fraction | None = Fraction(0)
    touched = []
    for k, n in enumerate(prob.nodes):
        a = prob.A[n][i]
        if a == 0:
            continue
        mu = mu_base[k] + a * (u - base[i])
        mu2 = mu_base[k] + a * (w - base[i])
        loss = _node_loss(mu, mu2, prob.scales[n], prob.discrete)
        touched.append((int(prob.plan.lo[n]), int(prob.plan.hi[n])))
        if loss is None or total is None:
            total = None
        else:
            total += loss
    return total, touched


def _improves(total: Fraction | None, best: Fraction | None) -> bool:
    """Larger than the best so far (None, infinite, beats any finite loss and nothing beats it)."""
    better = total is None if best is not None else False
    if best is not None and total is not None and total > best:
        better = True
    return better


def exact_loss(mech: Mechanism, horizon: int, *, max_horizon: int = EXACT_MAX_HORIZON) -> ExactLoss:
    """The exact privacy loss of ``mech``'s outputs at T = ``horizon`` (see module doc).

    Raises :class:`~dpref.errors.ParameterError` when ``horizon > max_horizon``;
    ``max_horizon`` is at most :data:`EXACT_HORIZON_LIMIT`.
    """
    if not isinstance(mech, Mechanism):
        raise DprefTypeError(f"mech={fmt(mech)}: must be a dpref Mechanism")
    refuse_zcdp("mech", mech)
    horizon = check_positive_int("horizon", horizon)
    max_horizon = check_int_range("max_horizon", max_horizon, 1, EXACT_HORIZON_LIMIT)
    if horizon > max_horizon:
        raise ParameterError(
            f"horizon={horizon}: exact mode runs only for T <= max_horizon={max_horizon}"
        )
    prob = _problem(mech, horizon)
    T, A, nodes = prob.T, prob.A, prob.nodes
    best: Fraction | None = Fraction(-1)
    best_pair: tuple[tuple[Fraction, ...], tuple[Fraction, ...]] = ((), ())
    best_nodes: tuple[tuple[int, int], ...] = ()
    checked = 0
    for base in _streams(prob):
        mu_base = [sum((A[n][i] * base[i] for i in range(T)), Fraction(0)) for n in nodes]
        for i in range(T):
            for u, w in _changes(prob):
                if not prob.add_remove and base[i] != u:
                    continue
                checked += 1
                total, touched = _change_loss(prob, mu_base, base, i, u, w)
                if _improves(total, best):
                    x = list(base)
                    x[i] = u
                    x2 = list(base)
                    x2[i] = w
                    best = total
                    best_pair = (tuple(x), tuple(x2))
                    best_nodes = tuple(touched)
    return ExactLoss(
        epsilon=best,
        scope=prob.scope,
        x=tuple(float(v) for v in best_pair[0]),
        x_prime=tuple(float(v) for v in best_pair[1]),
        nodes=best_nodes,
        pairs_checked=checked,
        noise=mech.noise,
    )
