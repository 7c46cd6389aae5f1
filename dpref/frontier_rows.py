"""How to build a frontier row, and the variance lower bound of the pure-DP frontier.

A :class:`~dpref.frontier.FrontierRow` carries the Python expression that rebuilds its mechanism
(:func:`constructor`) and the ``dpref release`` command that runs it (:func:`release_command`);
:func:`online_memory` fills in the memory of a class that declares none; and
:func:`laplace_lower_bound` is the ε table's bound in the table's own unit (a variance).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from dpref.errors import ParameterError
from dpref.lower_bounds import factorization_lower_bound
from dpref.mechanisms.base import Mechanism
from dpref.validation import check_epsilon, check_fraction, floor_float, fmt

__all__ = [
    "ASCENT_SWEEPS",
    "MAX_SENSITIVITY",
    "DeferredBounds",
    "LaplaceLowerBound",
    "cache_key",
    "check_sensitivity",
    "constructor",
    "deferred_bounds",
    "laplace_lower_bound",
    "online_memory",
    "release_command",
    "remember",
]

MAX_SENSITIVITY = 10**9
"""Largest Δ accepted by the frontier (variances scale by Δ²)."""


def check_sensitivity(value: Any) -> Fraction:
    """Δ: an exact rational with ``0 < Δ ≤ 10^9``; a :class:`ParameterError` naming
    ``sensitivity`` otherwise."""
    delta = check_fraction("sensitivity", value)
    if not 0 < delta <= MAX_SENSITIVITY:
        raise ParameterError(f"sensitivity={fmt(value)}: must be > 0 and <= 10^9")
    return delta


def _py(value: Any) -> str:
    """A Python literal for a constructor argument (Fractions as ``Fraction(p, q)``)."""
    if isinstance(value, Fraction):
        if value.denominator == 1:
            return f"Fraction({value.numerator})"
        return f"Fraction({value.numerator}, {value.denominator})"
    return repr(value)


def _domain_py(delta: Fraction) -> str | None:
    """The domain ``[0, Δ]`` (whose replace-neighbour sensitivity is Δ), or None for Δ = 1."""
    if delta == 1:
        return None
    if delta.denominator == 1:
        return f"bounded_integers(0, {delta.numerator})"
    return f"bounded_reals(0, {_py(delta)})"


def constructor(
    cls: type[Mechanism],
    params: dict[str, Any],
    horizon: int,
    budget: dict[str, Fraction],
    sensitivity: Fraction = Fraction(1),
) -> str:
    """``Name(epsilon=Fraction(…), horizon=T, k=…)``: evaluated after ``from dpref import *;
    from fractions import Fraction`` it builds the row's mechanism (items in ``[0, Δ]`` when
    Δ ≠ 1: ``domain=bounded_integers(0, Δ)`` or ``bounded_reals(0, Δ)``)."""
    args = [f"{k}={_py(v)}" for k, v in budget.items()]
    args.append(f"horizon={horizon}")
    args += [f"{k}={_py(v)}" for k, v in params.items()]
    domain = _domain_py(sensitivity)
    if domain is not None:
        args.append(f"domain={domain}")
    return f"{cls.__name__}({', '.join(args)})"


def release_command(
    cls: type[Mechanism],
    params: dict[str, Any],
    horizon: int,
    budget: dict[str, Fraction],
    sensitivity: Fraction = Fraction(1),
) -> str:
    """The ``dpref release`` command that runs the row's mechanism on ``stream.txt``."""
    words = ["dpref", "release", cls.name]
    for k, v in budget.items():
        words += [f"--{k}", str(v)]
    words += ["--horizon", str(horizon)]
    for k, v in params.items():
        text = ("true" if v else "false") if isinstance(v, bool) else str(v)
        words += [f"--{k.replace('_', '-')}", text]
    if sensitivity != 1:
        kind = "int" if sensitivity.denominator == 1 else "real"
        words += ["--domain", f"{kind}:0:{sensitivity}"]
    return " ".join([*words, "--input", "stream.txt"])


def online_memory(m: Mechanism, horizon: int) -> int | None:
    """Floats the online counter holds at most up to T: the class's :meth:`online_memory`,
    else, for AllWindowSum reporting the running sum (which declares none), the latest
    left node of each of its ``⌊log₂T⌋ + 1`` levels, true and noisy (``2(⌊log₂T⌋ + 1)``,
    what its online counter's ``state_size()`` reaches at T; a test checks it)."""
    declared = m.online_memory(horizon)
    if declared is not None:
        return declared
    if m.name == "allwindow" and getattr(m, "window", 0) is None:
        return 2 * horizon.bit_length()
    return None


@dataclass(frozen=True, kw_only=True)
class LaplaceLowerBound:
    """``max_t Var(out_t) ≥ value`` for every linear counter with independent Laplace node
    noise that is ε-DP through the L1 sum of its nodes (every counter of the ε table).

    Such a counter releases ``R(Ax + z)`` with ``RA = M_T`` (the T × T prefix matrix) and
    ``z_n ~ Lap(b_n)``, ``Σ_n |A_{n,i}|Δ/b_n ≤ ε`` for every item i.  Rescale the nodes:
    ``A' = diag(Δ/(ε b_n))A`` has every column's L1 norm ≤ 1, hence L2 norm ≤ 1, and
    ``R' = R·diag(ε b_n/Δ)`` gives ``Var(out_t) = Σ_n R_{t,n}² 2b_n² = (2Δ²/ε²)‖R'_t‖²``.
    So ``max_t Var ≥ (2Δ²/ε²)‖R'‖²_{2→∞}‖A'‖²_{1→2} ≥ 2γ₂(M_T)²Δ²/ε²``, and
    ``γ₂(M_T) ≥ ‖M_T‖_*/T`` (trace-norm bound; Matoušek, Nikolov, Talwar 2020) — the
    number :func:`dpref.lower_bounds.factorization_lower_bound` computes, rounded down.
    It is a bound on linear Laplace counters, not on every ε-DP algorithm."""

    value: float
    """``2(‖M_T‖_*/T)²Δ²/ε²``, rounded down."""
    gamma2: float
    """The lower bound ``‖M_T‖_*/T`` on γ₂(M_T), rounded down."""
    horizon: int
    """T."""
    epsilon: Fraction
    """ε."""
    sensitivity: Fraction
    """Δ."""

    @property
    def formula(self) -> str:
        """How the value was obtained."""
        return (
            f"max Var ≥ 2γ₂(M_T)²Δ²/ε², γ₂(M_T) ≥ ‖M_T‖_*/T = {self.gamma2:.6f} "
            f"(T = {self.horizon}, ε = {self.epsilon}, Δ = {self.sensitivity})"
        )

    def as_dict(self) -> dict[str, Any]:
        """JSON-friendly dict."""
        return {
            "lower_bound": self.value,
            "unit": "variance",
            "gamma2_lower_bound": self.gamma2,
            "horizon": self.horizon,
            "epsilon": str(self.epsilon),
            "sensitivity": str(self.sensitivity),
            "formula": self.formula,
            "statement": LAPLACE_BOUND_STATEMENT,
        }


LAPLACE_BOUND_STATEMENT = (
    "every linear counter with independent Laplace node noise that is ε-DP through the L1 sum "
    "of its nodes has max_t Var(out_t) ≥ 2γ₂(M_T)²Δ²/ε² ≥ 2(‖M_T‖_*/T)²Δ²/ε² (column L1 norm ≥ "
    "column L2 norm, then the factorization-norm bound of Matoušek, Nikolov, Talwar 2020)"
)


def laplace_lower_bound(epsilon: Any, horizon: int, sensitivity: Any = 1) -> LaplaceLowerBound:
    """The variance lower bound of the ε table (:class:`LaplaceLowerBound`)."""
    eps = check_epsilon("epsilon", epsilon)
    delta = check_sensitivity(sensitivity)
    gamma2 = factorization_lower_bound(Fraction(1, 2), horizon).gamma2  # rounded down
    exact = Fraction(gamma2) ** 2 * 2 * delta**2 / eps**2 * (1 - Fraction(1, 10**12))
    value = floor_float(min(exact, Fraction(sys.float_info.max)))
    return LaplaceLowerBound(
        value=value, gamma2=gamma2, horizon=horizon, epsilon=eps, sensitivity=delta
    )


ASCENT_SWEEPS = 4
"""Sweeps of the digit-wise ascent of :func:`deferred_bounds` (it stops earlier at a local
maximum)."""


def point_variance(m: Mechanism) -> Callable[[int], Fraction] | None:
    """The exact ``Var(out_t)`` at one t (noise of bits): the class's ``variance_at(t)``
    when it has one (:meth:`dpref.BlueTree.variance_at`), else None."""
    own = getattr(m, "variance_at", None)
    if callable(own):
        return lambda t: Fraction(own(t))
    return None


def _ascent(point: Callable[[int], Fraction], horizon: int, k: int) -> Fraction:
    """``Var(out_t)`` at the t found by a digit-wise ascent: t − 1 written in base k, each
    digit in turn set to the value that maximises the variance, the others fixed, from three
    starts (every digit ``(k−1)//2``, every digit ``k − 1``, t = T).  A heuristic for *which* t;
    the value returned is exact, so it is a rigorous lower bound on the maximum."""
    digits = 1
    while k**digits < horizon:
        digits += 1

    def t_of(d: list[int]) -> int:
        return int(sum(x * k**j for j, x in enumerate(d))) + 1

    last = [(horizon - 1) // k**j % k for j in range(digits)]  # t = T
    best = Fraction(0)
    for d in ([(k - 1) // 2] * digits, [k - 1] * digits, last):
        while t_of(d) > horizon:  # lower the top nonzero digit until t ≤ T
            top = max(j for j in range(digits) if d[j] > 0)
            d = [*d[:top], d[top] - 1, *d[top + 1 :]]
        value = point(t_of(d))
        for _ in range(ASCENT_SWEEPS):
            improved = False
            for j in range(digits):
                for x in range(k):
                    if x == d[j]:
                        continue
                    trial = [*d[:j], x, *d[j + 1 :]]
                    t = t_of(trial)
                    if t > horizon:
                        continue
                    v = point(t)
                    if v > value:
                        value, d, improved = v, trial, True
            if not improved:
                break
        best = max(best, value)
    return best


@dataclass(frozen=True, kw_only=True)
class DeferredBounds:
    """What the frontier knows of a row before its exact maximum: the exact mean and a
    rigorous lower bound on the maximum (the exact variance at one t)."""

    mean: Fraction
    """The exact mean of ``Var(out_t)`` over t ≤ T."""
    max_lower: Fraction
    """``Var(out_t)`` at the t of a digit-wise ascent: ``≤`` the maximum."""


def deferred_bounds(m: Mechanism, horizon: int, ascent: bool = True) -> DeferredBounds | None:
    """For a class with an exact ``objective("mean"|"max")`` and an exact one-step variance
    (:func:`point_variance`): the exact mean (cheap) and a lower bound on the
    maximum (:func:`point_variance` at the t of a digit-wise ascent, base ``m.k``; with
    ``ascent=False`` the mean, for callers that compute every maximum anyway).  None
    for every other class.  The frontier ranks these rows by them and computes the exact
    maximum (``objective("max")``, the costly part at large T) only for the rows it shows."""
    objective = getattr(m, "objective", None)
    point = point_variance(m) if callable(objective) else None
    if objective is None or point is None:
        return None
    mean = Fraction(objective("mean"))
    if not ascent:
        return DeferredBounds(mean=mean, max_lower=mean)
    k = int(getattr(m, "k", 2))
    return DeferredBounds(mean=mean, max_lower=max(mean, _ascent(point, horizon, k)))


CACHE_ROWS = 4096
"""Entries a frontier cache holds before it is cleared (:func:`remember`)."""


def cache_key(
    cls: type[Mechanism], params: dict[str, Any], horizon: int, budget: dict[str, Any]
) -> Any:
    """A hashable key of one design at (T, budget), or None when a value is unhashable."""
    key = (cls, tuple(params.items()), horizon, tuple(sorted(budget.items())))
    try:
        hash(key)
    except TypeError:
        return None
    return key


def remember(cache: dict[Any, Any], key: Any, value: Any) -> None:
    """``cache[key] = value`` unless the design key is None; cleared at :data:`CACHE_ROWS`."""
    if key is None or (isinstance(key, tuple) and key[0] is None):
        return
    if len(cache) >= CACHE_ROWS:
        cache.clear()
    cache[key] = value
