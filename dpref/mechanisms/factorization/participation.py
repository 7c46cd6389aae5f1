"""(k, b)-participation for the Toeplitz factorizations: the one function that gives the
column sum a factorization calibrates its noise with (:func:`column_sum`), and the
sensitivity record behind it (:func:`mechanism_participation`); the mathematics is in
:mod:`dpref.strategy.participation`.

With ``participations=k, min_separation=b`` (defaults 1, 1: single participation, the
column norms S₁, S₂ themselves) a mechanism's Laplace scale is ``P₁Δ/ε`` and its Gaussian
variance ``P₂Δ²/(2ρ)``, where P₁ is the L1 sensitivity and P₂ the squared L2 sensitivity of
its strategy under (k, b)-participation.  Both strategies here have non-negative,
non-increasing coefficients — sqrt's ratios ``c_k/c_{k−1} = (2k−1)/(2k)`` lie in (0, 1);
BLT's constructor demands ``θ_i ∈ (0, 1)``, ``ω_i > 0`` and ``Σω_i ≤ 1``, so ``c_1 = Σω_i ≤ 1 =
c_0`` and each ``ω_iθ_i^{k−1}`` decreases — so the earliest pattern ``(0, b, …, (m−1)b)`` is
a maximiser (:mod:`dpref.strategy.participation`), and:

* ``P₁ = Σ_{a<m} S₁(T − ab)``: the class's own :meth:`s1` at T − ab (exact where S₁ is,
  else its rigorous upper bound);
* ``P₂ = ‖C(e_0 + e_b + … + e_{(m−1)b})‖²``: exact from the exact coefficients while
  ``T·log₂(g) ≤`` :data:`PARTICIPATION_EXACT_BITS` (g the geometric base of their
  denominators; the hypothesis is then also checked on them), else a rigorous upper bound:
  the same norm of float coefficients ``c̃`` with ``c ≤ F·c̃`` (every term non-negative, so
  the norm is at most ``F²`` times theirs, computed exactly), ``F − 1 ≤ 4(2T + d + 4)·2⁻⁵³``
  from the roundings of the cumulative products (d = 1 for sqrt, the buffers for BLT).
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from dpref.errors import ParameterError
from dpref.mechanisms.base import EXACT
from dpref.strategy.participation import (
    LABEL_TOEPLITZ_L1,
    LABEL_TOEPLITZ_L2,
    ParticipationSensitivity,
    check_participation,
    effective_participations,
    exact_coefficients,
    toeplitz_participation,
    toeplitz_pattern,
)

PARTICIPATION_EXACT_BITS = 2**14
"""P₂ is computed exactly while ``T·bit_length(g) ≤`` this (sqrt, g = 4: T ≤ 5461, about
0.2 s; the ``"2^20"`` BLT preset, g = 2³²: T ≤ 496); above, a rigorous upper bound within a
relative ``8(2T + d + 4)·2⁻⁵³`` (≤ 2·10⁻⁹ at T = 2²⁰)."""
LABEL_FLOAT_UPPER = (
    "upper bound (closed form: non-increasing non-negative Toeplitz pattern; its norm from "
    "float coefficients rounded up by a factor F, F − 1 ≤ {slack:.1e})"
)
LABEL_S1_UPPER = (
    "upper bound (closed form: non-negative Toeplitz pattern; Σ_a S₁(T − ab) with S₁'s "
    "rigorous upper bound)"
)
MAX_S1_TERMS = 64
"""Above this many participations P₁ is summed over the coefficients (``Σ_n w_n c_n``,
``w_n = min(m, ⌊(T−1−n)/b⌋ + 1)``) instead of over m calls of ``s1``."""
_U = Fraction(1, 2**53)


MAX_PARTICIPATION_HORIZON = 2**21
"""Largest T of a mechanism with more than one participation (P₁, P₂ take O(T) memory and
time: about 3 s at T = 2²⁰); beyond, the constructor refuses."""


def check_mechanism_participation(
    participations: Any, min_separation: Any, horizon: int | None
) -> tuple[int, int]:
    """``(k, b)`` validated (:func:`~dpref.strategy.participation.check_participation`), and
    T ≤ :data:`MAX_PARTICIPATION_HORIZON` when more than one participation fits in T."""
    k, b = check_participation(participations, min_separation)
    if horizon is not None and horizon > MAX_PARTICIPATION_HORIZON:
        if effective_participations(horizon, k, b) > 1:
            raise ParameterError(
                f"participations={k}: (k, b)-participation is computed for horizon ≤ "
                f"{MAX_PARTICIPATION_HORIZON} (2^21; O(T) work), got horizon={horizon}"
            )
    return k, b


def participation_params(m: Any) -> dict[str, int]:
    """``participations``/``min_separation`` for ``repr`` and reports (only when not 1)."""
    k, b = m.participations, m.min_separation
    out = {}
    if k != 1:
        out["participations"] = k
    if b != 1:
        out["min_separation"] = b
    return out


def column_sum(m: Any, power: int, horizon: Any, ops: Any = EXACT) -> Any:
    """What the noise of ``m`` is calibrated with: ``S₁``/``S₂`` (``m.s1``/``m.s2``) under
    single participation — or symbolic ``ops`` (the proofs) — else ``P₁``/``P₂`` of
    :func:`mechanism_participation`.  The one formula :meth:`laplace_scale`,
    :meth:`gaussian_variance`, the budget terms and the declared privacy sum all call."""
    if ops is not EXACT:
        if m.participations != 1:
            raise ParameterError(
                f"participations={m.participations}: the symbolic column sums (the proofs) "
                "cover single participation; (k, b) is evaluated at a concrete T"
            )
        return m.s1(horizon, ops) if power == 1 else m.s2(horizon, ops)
    if effective_participations(horizon, m.participations, m.min_separation) == 1:
        return m.s1(horizon, ops) if power == 1 else m.s2(horizon, ops)
    return mechanism_participation(m, horizon, "l1" if power == 1 else "l2").value


def column_sum_exact(m: Any, power: int, horizon: int) -> bool:
    """Whether :func:`column_sum` is exact at T."""
    if effective_participations(horizon, m.participations, m.min_separation) == 1:
        return bool(m._s1_exact(horizon) if power == 1 else m._s2_exact(horizon))
    return mechanism_participation(m, horizon, "l1" if power == 1 else "l2").exact


def mechanism_participation(m: Any, horizon: int, norm: str = "l2") -> ParticipationSensitivity:
    """P₁ (``norm="l1"``) or P₂ (``"l2"``) of the factorization ``m`` at T (cached on the
    instance: a release, the plan and the declaration read the same record)."""
    cache: dict[tuple[int, str], ParticipationSensitivity] = m.__dict__.setdefault(
        "_participation_cache", {}
    )
    key = (horizon, norm)
    if key not in cache:
        cache[key] = _compute(m, horizon, norm)
    return cache[key]


def _compute(m: Any, T: int, norm: str) -> ParticipationSensitivity:
    k, b = m.participations, m.min_separation
    mm = effective_participations(T, k, b)
    pattern = toeplitz_pattern(T, k, b)
    common: dict[str, Any] = {
        "relation": "participation",
        "participations": k,
        "min_separation": b,
        "effective_participations": mm,
        "pattern": pattern,
    }
    if norm == "l1" and mm > MAX_S1_TERMS:  # Σ_n w_n c_n over the coefficients instead
        return _coefficient_l1(m, T, k, b)
    if norm == "l1":
        value = sum((m.s1(T - p) for p in pattern), Fraction(0))
        exact = all(m._s1_exact(T - p) for p in pattern)
        return ParticipationSensitivity(
            norm="l1",
            value=value,
            exact=exact,
            label=LABEL_TOEPLITZ_L1 if exact else LABEL_S1_UPPER,
            **common,
        )
    base = m.strategy_exact(1).base
    if T * max(1, base.bit_length()) <= PARTICIPATION_EXACT_BITS:
        result = toeplitz_participation(
            m.strategy_exact(T), participations=k, min_separation=b, norm="l2"
        )
        if result.label != LABEL_TOEPLITZ_L2:  # pragma: no cover - the classes guarantee it
            raise AssertionError(f"{m!r}: coefficients not non-increasing non-negative")
        return result
    floats, steps = m.rounded_coefficients(T)
    factor = 1 + 4 * (2 * T + steps + 4) * _U
    approx = toeplitz_participation(
        exact_coefficients("coefficients", floats),
        participations=k,
        min_separation=b,
        norm="l2",
    )
    value = _round_up(approx.value * factor * factor)
    return ParticipationSensitivity(
        norm="l2",
        value=value,
        exact=False,
        label=LABEL_FLOAT_UPPER.format(slack=float(factor - 1)),
        **common,
    )


def _round_up(value: Fraction, den: int = 2**64) -> Fraction:
    """The smallest multiple of 1/den that is ≥ value."""
    return Fraction(-((-value.numerator * den) // value.denominator), den)


def _coefficient_l1(m: Any, T: int, k: int, b: int) -> ParticipationSensitivity:
    """P₁ as ``Σ_n w_n c_n`` (exact coefficients within :data:`PARTICIPATION_EXACT_BITS`,
    else float coefficients rounded up by F: an upper bound)."""
    base = m.strategy_exact(1).base
    if T * max(1, base.bit_length()) <= PARTICIPATION_EXACT_BITS:
        return toeplitz_participation(
            m.strategy_exact(T), participations=k, min_separation=b, norm="l1"
        )
    floats, steps = m.rounded_coefficients(T)
    factor = 1 + 4 * (2 * T + steps + 4) * _U
    approx = toeplitz_participation(
        exact_coefficients("coefficients", floats),
        participations=k,
        min_separation=b,
        norm="l1",
    )
    return ParticipationSensitivity(
        norm="l1",
        value=_round_up(approx.value * factor),
        exact=False,
        label=LABEL_FLOAT_UPPER.format(slack=float(factor - 1)),
        relation="participation",
        participations=k,
        min_separation=b,
        effective_participations=approx.effective_participations,
        pattern=approx.pattern,
    )
