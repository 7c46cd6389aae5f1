"""Sensitivity of a strategy matrix C under (k, b)-participation and under a change spread
over the stream (docs/factorization.md, "Participation").

**(k, b)-participation** (DP-FTRL / DP-MF training; Choquette-Choo et al. 2023): neighbouring
streams x, x' differ in at most k positions ``i_1 < … < i_m`` (m ≤ k), any two at least b
apart (``i_{a+1} − i_a ≥ b``; b = 1 allows every step), each by at most Δ.  The L1
sensitivity is ``sup ‖C(x − x')‖₁`` and the L2 one ``sup ‖C(x − x')‖₂``; values here are per
unit Δ, and for L2 the *square* (the quantity a Gaussian calibration uses, jax_privacy's
``minsep_sensitivity_squared``).  ``u = (x − x')/Δ`` ranges over a box, the norms are convex,
so the supremum sits at a vertex ``u ∈ {−1, 0, 1}^T``; with ``X = CᵀC`` the L2 value is
``max_π max_{s ∈ {±1}^π} sᵀ X_ππ s``.

Three ways to the number, each result labelled with the one used:

* ``exact (closed form: non-increasing non-negative Toeplitz)`` — C lower-triangular
  Toeplitz with ``c_0 ≥ c_1 ≥ … ≥ 0`` (checked exactly on the given coefficients): the
  earliest, tightest pattern ``π* = (0, b, 2b, …, (m−1)b)``, m = ``min(k, ⌈T/b⌉)``, is a
  maximiser, so the L2² value is ``‖C(e_0 + e_b + … + e_{(m−1)b})‖²``.  *Proof.* C ≥ 0, so
  ``X ≥ 0`` entrywise and all signs +1 are best (``|sᵀXs| ≤ 1ᵀX1``).  For columns i ≤ j,
  ``X_ij = g(j − i, j)`` with ``g(d, j) = Σ_{n=0}^{T−1−j} c_n c_{n+d}``, non-increasing in d
  (``c_{n+d} ≥ c_{n+d+1} ≥ 0``) and in j (fewer non-negative terms).  Any admissible pattern
  has ``i_a ≥ (a−1)b`` and ``i_{a'} − i_a ≥ (a'−a)b``, so every term of ``1ᵀX_ππ1`` is at most
  the matching term of ``1ᵀX_{π*π*}1``, and more participations only add non-negative terms.
  (Kalinin & Lampert 2024, arXiv 2405.13763, Theorem 2; jax_privacy's
  ``toeplitz.minsep_sensitivity_squared`` computes the same vector.)  For L1 non-negativity
  alone suffices (``exact (closed form: non-negative Toeplitz)``): ``‖Σ_{i∈π} Ce_i‖₁ =
  Σ_{i∈π} S₁(T − i)`` with ``S₁(n) = Σ_{j<n} c_j`` non-increasing in i.
* ``exact (enumerated)`` — small dense plans: every admissible pattern (and every sign
  vector, unless the signs are forced) is evaluated in exact integer arithmetic, at most
  :data:`MAX_ENUMERATION` evaluations and T ≤ :data:`MAX_EXACT_COLUMNS` (else refused, or a
  bound below).
* ``upper bound (…)`` — otherwise, a rigorous upper bound named by its method.

**Spread change** (the b-ary tree bug class: a change of L1/L2 norm ≤ Δ spread over many
items adds up in every node covering several of them): ``sup_{‖u‖_p ≤ 1} ‖Cu‖_p``.  For L1
it is exactly the largest column L1 norm (a vertex of the L1 ball).  For L2 it is the
largest singular value of C, irrational in general: reported squared as the rigorous upper
bound ``min(‖C‖₁·‖C‖_∞, ‖C‖_F²)`` (Schur test; Frobenius), with the exact lower bound
``max(largest column norm², ‖C1‖²/T)``.

Every number is exact rational arithmetic on the given entries (floats are taken at their
exact binary value); float arithmetic appears only inside the dense upper bound, where each
rounding is bounded and rounded up.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from dpref.errors import DprefTypeError, EnumerationBudgetError, ParameterError
from dpref.strategy.sequences import ScaledSeq
from dpref.validation import check_choice, check_fraction, check_int_range, fmt

__all__ = [
    "LABEL_ENUMERATED",
    "LABEL_TOEPLITZ_L1",
    "LABEL_TOEPLITZ_L2",
    "MAX_ENUMERATION",
    "MAX_EXACT_COLUMNS",
    "MAX_PARTICIPATIONS",
    "ParticipationSensitivity",
    "check_participation",
    "dense_participation",
    "dense_spread",
    "effective_participations",
    "exact_coefficients",
    "toeplitz_participation",
    "toeplitz_pattern",
    "toeplitz_spread",
]

Norm = Literal["l1", "l2"]
FloatArray = npt.NDArray[np.float64]

MAX_PARTICIPATIONS = 2**20
"""Largest k accepted (participations beyond ⌈T/b⌉ are void: m = ``min(k, ⌈T/b⌉)``)."""
MAX_MIN_SEPARATION = 2**40
"""Largest b accepted."""
MAX_ENUMERATION = 200_000
"""Most (pattern, sign vector) evaluations of the exact dense maximisation."""
MAX_EXACT_COLUMNS = 128
"""Largest T of the exact dense maximisation (its Gram matrix is T² exact integers)."""
MAX_GRAM_COLUMNS = 1024
"""Above this T the dense L2 bound uses column norms only (the Gram bound costs T³ flops)."""
MAX_SEPARATED_WORK = 2**20
"""Above ``m·T`` this, the separated-pattern maximum of a bound is replaced by the sum of the
m largest weights (an upper bound of it)."""
_ROUND_DEN = 2**64
"""Denominator of the rounded-up square roots of the Toeplitz upper bound."""

LABEL_TOEPLITZ_L2 = "exact (closed form: non-increasing non-negative Toeplitz)"
LABEL_TOEPLITZ_L1 = "exact (closed form: non-negative Toeplitz)"
LABEL_ENUMERATED = "exact (enumerated)"
LABEL_TOEPLITZ_BOUND = (
    "upper bound (Toeplitz: m·S₂ + 2·Σ_l (m−l)·√(S₂·tail(l·b)), Cauchy–Schwarz on the lags)"
)
LABEL_TRIANGLE_L1 = "upper bound (triangle inequality: the pattern's column L1 norms)"
LABEL_GRAM_BOUND = (
    "upper bound (Gram rows: max over separated patterns of Σ (|X_ii| + the m−1 largest "
    "|X_ij|, |i−j| ≥ b), float Gram rounded up)"
)
LABEL_CS_BOUND = "upper bound (Cauchy–Schwarz: (max over separated patterns of Σ ‖Ce_i‖₂)²)"
LABEL_SPREAD_L1 = "exact (largest column L1 norm)"
LABEL_SPREAD_L2 = "upper bound (largest singular value² ≤ min(‖C‖₁·‖C‖∞, ‖C‖_F²))"
LABEL_SPREAD_L2_EXACT = "exact (largest singular value²: the upper and lower bounds meet)"


@dataclass(frozen=True, kw_only=True)
class ParticipationSensitivity:
    """One sensitivity of a strategy C, per unit Δ, with how it was obtained."""

    norm: Norm
    """``"l1"`` or ``"l2"``."""
    value: Fraction
    """L1: ``sup ‖C(x − x')‖₁/Δ``; L2: its square ``sup ‖C(x − x')‖₂²/Δ²`` (exact, or a
    rigorous upper bound when :attr:`exact` is False)."""
    relation: Literal["participation", "spread"]
    """``"participation"``: (k, b)-participation; ``"spread"``: any change of L1/L2 norm ≤ Δ
    spread over the stream."""
    participations: int
    """k as given (1 for the spread relation)."""
    min_separation: int
    """b as given (1 for the spread relation)."""
    effective_participations: int
    """``m = min(k, ⌈T/b⌉)``: how many participations fit in T steps."""
    exact: bool
    """Whether :attr:`value` is the exact supremum (else an upper bound)."""
    label: str
    """How the value was obtained: ``exact (…)`` or ``upper bound (…)``."""
    pattern: tuple[int, ...] | None = None
    """0-based columns of a maximising pattern, when one is known."""
    lower: Fraction | None = None
    """An exact lower bound, when :attr:`value` is only an upper bound and one is known."""

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready fields (rationals as strings, with a float beside)."""
        out: dict[str, Any] = {
            "norm": self.norm,
            "relation": self.relation,
            "quantity": "sensitivity" if self.norm == "l1" else "sensitivity squared",
            "value": str(self.value),
            "value_float": float(self.value),
            "exact": self.exact,
            "label": self.label,
            "participations": self.participations,
            "min_separation": self.min_separation,
            "effective_participations": self.effective_participations,
        }
        if self.pattern is not None:
            out["pattern"] = list(self.pattern)
        if self.lower is not None:
            out["lower"] = str(self.lower)
            out["lower_float"] = float(self.lower)
        return out


# ------------------------------------------------------------------ parameters
def check_participation(participations: Any, min_separation: Any) -> tuple[int, int]:
    """``(k, b)`` from ``participations=`` (default 1) and ``min_separation=`` (default 1:
    none), validated (:class:`~dpref.errors.ParameterError` naming the parameter)."""
    k = 1 if participations is None else participations
    b = 1 if min_separation is None else min_separation
    k = check_int_range("participations", k, 1, MAX_PARTICIPATIONS)
    b = check_int_range("min_separation", b, 1, MAX_MIN_SEPARATION)
    return k, b


def effective_participations(horizon: int, participations: int, min_separation: int) -> int:
    """``min(k, ⌈T/b⌉)``: the most positions in ``[0, T)`` pairwise at least b apart."""
    return min(participations, (horizon - 1) // min_separation + 1)


def toeplitz_pattern(horizon: int, participations: int, min_separation: int) -> tuple[int, ...]:
    """The earliest, tightest pattern ``(0, b, …, (m−1)b)``."""
    m = effective_participations(horizon, participations, min_separation)
    return tuple(a * min_separation for a in range(m))


def _check_norm(norm: Any) -> Norm:
    check_choice("norm", norm, ("l1", "l2"))
    return "l1" if norm == "l1" else "l2"


# ------------------------------------------------------------ exact coefficients
def exact_coefficients(name: str, values: Any) -> ScaledSeq:
    """Exact coefficients from a :class:`ScaledSeq`, a float array (each float at its exact
    binary value, via its integer mantissa and exponent) or a sequence of exact numbers
    (ints, Fractions, rational strings, floats)."""
    if isinstance(values, ScaledSeq):
        if len(values) == 0:
            raise ParameterError(f"{name}: no coefficients")
        return values
    if isinstance(values, np.ndarray) and values.dtype.kind == "f":
        arr = np.asarray(values, dtype=np.float64).reshape(-1)
        if arr.size == 0 or not np.all(np.isfinite(arr)):
            raise ParameterError(f"{name}: need a non-empty array of finite floats")
        mant, expo = np.frexp(arr)
        ints = (mant * 2.0**53).astype(np.int64)  # exact: |mant| < 1 has 53 bits
        expo = expo.astype(np.int64) - 53
        low = int(expo[ints != 0].min()) if np.any(ints != 0) else 0
        nums = tuple(int(v) << int(e - low) if v else 0 for v, e in zip(ints, expo, strict=True))
        if low >= 0:
            return ScaledSeq(tuple(n << low for n in nums), 1, 1)
        return ScaledSeq(nums, 1 << -low, 1)
    if isinstance(values, (str, bytes)) or not isinstance(values, (Sequence, np.ndarray)):
        raise DprefTypeError(f"{name}={fmt(values)}: must be a sequence of numbers")
    items = list(values)
    if not items:
        raise ParameterError(f"{name}: no coefficients")
    return ScaledSeq.from_fractions(
        [check_fraction(f"{name}[{i}]", v) for i, v in enumerate(items)]
    )


def _horizon(seq: ScaledSeq, horizon: Any) -> int:
    if horizon is None:
        return len(seq)
    t = check_int_range("horizon", horizon, 1, None)
    if t > len(seq):
        raise ParameterError(f"horizon={t}: only {len(seq)} coefficients given")
    return t


def _nonneg_nonincreasing(seq: ScaledSeq, horizon: int) -> tuple[bool, bool]:
    """(all ``c_n ≥ 0``, ``c_{n+1} ≤ c_n`` for every n < T−1), exactly:
    ``c_{n+1} ≤ c_n ⇔ N_{n+1} ≤ g·N_n`` over the common denominator ``D·g^{n+1}``."""
    nums, g = seq.nums[:horizon], seq.base
    nonneg = all(n >= 0 for n in nums)
    noninc = all(nums[i + 1] <= g * nums[i] for i in range(horizon - 1))
    return nonneg, noninc


def _weighted_sum(seq: ScaledSeq, horizon: int, weights: Sequence[int]) -> Fraction:
    """``Σ_{n<T} w_n |c_n|`` exactly (Horner over the common denominator ``D·g^{T−1}``)."""
    g, acc = seq.base, 0
    for n in range(horizon):
        acc = acc * g + weights[n] * abs(seq.nums[n])
    return Fraction(acc, seq.denom * g ** (horizon - 1))


def _pattern_square_norm(seq: ScaledSeq, horizon: int, pattern: Sequence[int]) -> Fraction:
    """``‖C·Σ_{p∈pattern} e_p‖²`` exactly: ``v_n = Σ_p c_{n−p} = V_n/(D·g^n)`` with
    ``V_n = Σ_p N_{n−p}·g^p``; then ``Σ_n V_n² g^{2(T−1−n)}`` by Horner.  For the arithmetic
    pattern ``(0, b, …, (m−1)b)`` in O(T) whatever m: ``V_n = N_n + g^b·V_{n−b} −
    g^{mb}·N_{n−mb}`` (jax_privacy's difference of cumulative sums)."""
    g, nums = seq.base, seq.nums
    g2, acc = g * g, 0
    m = len(pattern)
    b = pattern[1] - pattern[0] if m > 1 else 1
    if m > 8 and pattern[0] == 0 and all(q - p == b for p, q in itertools.pairwise(pattern)):
        lift_b, lift_mb = g**b, g ** (m * b)
        V: list[int] = []
        for n in range(horizon):
            v = nums[n]
            if n >= b:
                v += lift_b * V[n - b]
            if n >= m * b:
                v -= lift_mb * nums[n - m * b]
            V.append(v)
            acc = acc * g2 + v * v
        return Fraction(acc, seq.denom**2 * g2 ** (horizon - 1))
    lifts = [(p, g**p) for p in pattern]
    for n in range(horizon):
        v = 0
        for p, lift in lifts:
            if p > n:
                break
            v += nums[n - p] * lift
        acc = acc * g2 + v * v
    return Fraction(acc, seq.denom**2 * g2 ** (horizon - 1))


def _prefix_square_sums(seq: ScaledSeq, horizon: int, cuts: Sequence[int]) -> dict[int, Fraction]:
    """``Σ_{n<cut} c_n²`` for each cut (one exact running sum)."""
    g2, acc, out = seq.base**2, 0, {}
    wanted = set(cuts)
    if 0 in wanted:
        out[0] = Fraction(0)
    for n in range(horizon):
        acc = acc * g2 + seq.nums[n] ** 2
        if n + 1 in wanted:
            out[n + 1] = Fraction(acc, seq.denom**2 * g2**n)
    return out


def _sqrt_up(x: Fraction) -> Fraction:
    """A multiple of 2⁻⁶⁴ at least ``√x`` (x ≥ 0)."""
    num = x.numerator * _ROUND_DEN * _ROUND_DEN
    root = math.isqrt(num // x.denominator)
    while root * root * x.denominator < num:
        root += 1
    return Fraction(root, _ROUND_DEN)


# ------------------------------------------------------------------- Toeplitz
def toeplitz_participation(
    coefficients: Any,
    *,
    participations: Any = 1,
    min_separation: Any = 1,
    norm: Any = "l2",
    horizon: Any = None,
) -> ParticipationSensitivity:
    """(k, b)-participation sensitivity of the lower-triangular Toeplitz C with first column
    ``c_0 … c_{T−1}`` (T = ``horizon``, default all given).

    Exact by the closed form when the hypothesis holds (checked exactly; see the module
    docstring); else exact by enumeration when T ≤ :data:`MAX_EXACT_COLUMNS` and the work fits
    :data:`MAX_ENUMERATION`; else a rigorous upper bound (L2: ``m·S₂ + 2Σ_{l<m}(m−l)U(lb)``
    with ``|X_ij| ≤ U(|i−j|) = √(S₂·Σ_{n≥|i−j|} c_n²)``; L1: the triangle inequality).
    """
    k, b = check_participation(participations, min_separation)
    nm = _check_norm(norm)
    seq = exact_coefficients("coefficients", coefficients)
    T = _horizon(seq, horizon)
    m = effective_participations(T, k, b)
    pattern = toeplitz_pattern(T, k, b)
    nonneg, noninc = _nonneg_nonincreasing(seq, T)
    common: dict[str, Any] = {"relation": "participation", "participations": k, "min_separation": b}
    common["effective_participations"] = m
    if nm == "l1":
        weights = [min(m, (T - 1 - n) // b + 1) for n in range(T)]
        value = _weighted_sum(seq, T, weights)
        if nonneg:
            return ParticipationSensitivity(
                norm="l1",
                value=value,
                exact=True,
                label=LABEL_TOEPLITZ_L1,
                pattern=pattern,
                **common,
            )
    elif nonneg and noninc:
        value = _pattern_square_norm(seq, T, pattern)
        return ParticipationSensitivity(
            norm="l2",
            value=value,
            exact=True,
            label=LABEL_TOEPLITZ_L2,
            pattern=pattern,
            **common,
        )
    if T <= MAX_EXACT_COLUMNS and _enumeration_work(T, k, b, signs=True) <= MAX_ENUMERATION:
        dense = [
            [seq.fraction(n - i) if i <= n else Fraction(0) for i in range(T)] for n in range(T)
        ]
        return dense_participation(dense, participations=k, min_separation=b, norm=nm)
    if nm == "l1":
        return ParticipationSensitivity(
            norm="l1", value=value, exact=False, label=LABEL_TRIANGLE_L1, **common
        )
    lags = [lag * b for lag in range(1, m)]
    sums = _prefix_square_sums(seq, T, [T, *lags])
    s2 = sums[T]
    total = m * s2
    for lag_index, lag in enumerate(lags, start=1):
        total += 2 * (m - lag_index) * _sqrt_up(s2 * (s2 - sums[lag]))
    return ParticipationSensitivity(
        norm="l2", value=total, exact=False, label=LABEL_TOEPLITZ_BOUND, **common
    )


def toeplitz_spread(
    coefficients: Any, *, norm: Any = "l2", horizon: Any = None
) -> ParticipationSensitivity:
    """Sensitivity of the lower-triangular Toeplitz C to any change of L1/L2 norm ≤ Δ spread
    over the stream: L1 exactly ``Σ|c_n|`` (column 1 is the largest); L2 squared, bounded by
    ``min((Σ|c_n|)², Σ_n (T−n)c_n²)`` (``‖C‖₁ = ‖C‖∞ = Σ|c_n|`` for a triangular Toeplitz
    matrix), with the exact lower bound ``max(Σc_n², ‖C1‖²/T)``."""
    nm = _check_norm(norm)
    seq = exact_coefficients("coefficients", coefficients)
    T = _horizon(seq, horizon)
    common: dict[str, Any] = {"relation": "spread", "participations": 1, "min_separation": 1}
    s1 = _weighted_sum(seq, T, [1] * T)
    if nm == "l1":
        return ParticipationSensitivity(
            norm="l1",
            value=s1,
            exact=True,
            label=LABEL_SPREAD_L1,
            pattern=(0,),
            effective_participations=T,
            **common,
        )
    frob = _weighted_squares(seq, T)
    upper = min(s1 * s1, frob)
    column = _prefix_square_sums(seq, T, [T])[T]
    ones = _ones_square_norm(seq, T) / T
    lower = max(column, ones)
    exact = lower == upper
    return ParticipationSensitivity(
        norm="l2",
        value=upper,
        exact=exact,
        label=LABEL_SPREAD_L2_EXACT if exact else LABEL_SPREAD_L2,
        lower=None if exact else lower,
        effective_participations=T,
        **common,
    )


def _ones_square_norm(seq: ScaledSeq, horizon: int) -> Fraction:
    """``‖C1‖² = Σ_n (Σ_{j≤n} c_j)²`` exactly: ``V_n = V_{n−1}·g + N_n`` over ``D·g^n``."""
    g, g2, v, acc = seq.base, seq.base**2, 0, 0
    for n in range(horizon):
        v = v * g + seq.nums[n]
        acc = acc * g2 + v * v
    return Fraction(acc, seq.denom**2 * g2 ** (horizon - 1))


def _weighted_squares(seq: ScaledSeq, horizon: int) -> Fraction:
    """``‖C‖_F² = Σ_n (T−n) c_n²`` exactly."""
    g2, acc = seq.base**2, 0
    for n in range(horizon):
        acc = acc * g2 + (horizon - n) * seq.nums[n] ** 2
    return Fraction(acc, seq.denom**2 * g2 ** (horizon - 1))


# ---------------------------------------------------------------------- dense
def _dense_fractions(name: str, matrix: Any) -> list[list[Fraction]]:
    """C as exact Fractions (floats at their binary value), rectangular and non-empty."""
    if isinstance(matrix, np.ndarray) and matrix.dtype.kind == "f":
        if matrix.ndim != 2 or not np.all(np.isfinite(matrix)):
            raise ParameterError(f"{name}: need a 2-d array of finite floats")
        rows = [[Fraction(float(v)) for v in row] for row in matrix]
    else:
        try:
            rows = [
                [
                    v if type(v) is Fraction else check_fraction(f"{name}[{r}][{c}]", v)
                    for c, v in enumerate(row)
                ]
                for r, row in enumerate(matrix)
            ]
        except TypeError:
            raise DprefTypeError(f"{name}={fmt(matrix)}: must be a matrix of numbers") from None
    if not rows or not rows[0] or any(len(r) != len(rows[0]) for r in rows):
        raise ParameterError(f"{name}: need a non-empty rectangular matrix")
    return rows


def _dense_integers(name: str, matrix: Any) -> tuple[list[list[int]], int]:
    """``(N, D)`` with ``C = N/D`` exactly (floats at their binary value: integer mantissas
    over one power of two, without a Fraction per entry)."""
    if isinstance(matrix, np.ndarray) and matrix.dtype.kind == "f" and matrix.ndim == 2:
        if matrix.size == 0 or not np.all(np.isfinite(matrix)):
            raise ParameterError(f"{name}: need a non-empty 2-d array of finite floats")
        seq = exact_coefficients(name, matrix.reshape(-1))
        width = matrix.shape[1]
        flat = seq.nums
        ints = [list(flat[r * width : (r + 1) * width]) for r in range(matrix.shape[0])]
        return ints, seq.denom
    rows = _dense_fractions(name, matrix)
    den = 1
    for row in rows:
        for v in row:
            den = math.lcm(den, v.denominator)
    return [[int(v * den) for v in row] for row in rows], den


def _admissible(T: int, k: int, b: int) -> list[int]:
    """``count[s]`` = number of admissible patterns of size s (1 ≤ s ≤ k) in ``[0, T)``."""
    # ways[s][i]: patterns of size s whose last element is < i
    counts = [0] * (k + 1)
    prev = [1] * (T + 1)  # size 0: one empty pattern, whatever the bound
    for s in range(1, k + 1):
        cur = [0] * (T + 1)
        for i in range(1, T + 1):
            j = i - 1  # last element j
            cur[i] = cur[i - 1] + (prev[max(0, j - b + 1)] if s > 1 else 1)
        counts[s] = cur[T]
        prev = cur
    return counts


def _enumeration_work(T: int, k: int, b: int, *, signs: bool) -> int:
    m = effective_participations(T, k, b)
    counts = _admissible(T, m, b)
    return sum(c * (2 ** (s - 1) if signs else 1) for s, c in enumerate(counts) if s)


def dense_participation(
    matrix: Any,
    *,
    participations: Any = 1,
    min_separation: Any = 1,
    norm: Any = "l2",
    method: Any = "auto",
) -> ParticipationSensitivity:
    """(k, b)-participation sensitivity of a dense C (rows = noise nodes, columns = items).

    ``method="exact"``: enumerate every admissible pattern (and sign vector, unless C ≥ 0 for
    L1 or CᵀC ≥ 0 for L2 make all signs + best) in exact integers; refused
    (:class:`~dpref.errors.EnumerationBudgetError`) above T = :data:`MAX_EXACT_COLUMNS` or
    :data:`MAX_ENUMERATION` evaluations.  ``"bound"``: the rigorous upper bound (L1: the
    best separated pattern's column L1 norms — exact when C ≥ 0; L2: the Gram-row bound).
    ``"auto"``: exact when within the limits, else the bound.
    """
    k, b = check_participation(participations, min_separation)
    nm = _check_norm(norm)
    how = check_choice("method", method, ("auto", "exact", "bound"))
    T = _columns(matrix)
    m = effective_participations(T, k, b)
    fits = T <= MAX_EXACT_COLUMNS and _enumeration_work(T, k, b, signs=False) <= MAX_ENUMERATION
    if how == "exact" and not fits:
        raise EnumerationBudgetError(
            f"participations={k}, min_separation={b}: T={T} columns; the exact "
            f"maximisation takes T ≤ {MAX_EXACT_COLUMNS} and ≤ {MAX_ENUMERATION} "
            "evaluations (use method='bound' for a rigorous upper bound)"
        )
    common: dict[str, Any] = {"relation": "participation", "participations": k, "min_separation": b}
    common["effective_participations"] = m
    if fits and how != "bound":
        ints, den = _dense_integers("matrix", matrix)
        result = _enumerate(ints, den, m, b, nm)
        if result is not None:
            value, pattern = result
            return ParticipationSensitivity(
                norm=nm,
                value=value,
                exact=True,
                label=LABEL_ENUMERATED,
                pattern=pattern,
                **common,
            )
        if how == "exact":
            raise EnumerationBudgetError(
                f"participations={k}, min_separation={b}: the sign vectors of T={T} columns "
                f"exceed {MAX_ENUMERATION} evaluations"
            )
    return _dense_bound(matrix, m, b, nm, common)


def _columns(matrix: Any) -> int:
    """The number of columns T of a non-empty 2-d matrix (else a DprefError naming it)."""
    if isinstance(matrix, np.ndarray):
        if matrix.ndim != 2 or matrix.size == 0:
            raise ParameterError(f"matrix={fmt(matrix)}: need a non-empty 2-d array")
        return int(matrix.shape[1])
    rows_ok = isinstance(matrix, Sequence) and not isinstance(matrix, str) and len(matrix) > 0
    first = matrix[0] if rows_ok else None
    if not rows_ok or not isinstance(first, Sequence) or isinstance(first, str) or not first:
        raise DprefTypeError(f"matrix={fmt(matrix)}: must be a non-empty matrix (rows of numbers)")
    return len(first)


def _enumerate(
    ints: list[list[int]], den: int, m: int, b: int, norm: Norm
) -> tuple[Fraction, tuple[int, ...]] | None:
    """Exact maximum over admissible patterns (None: signs needed beyond the budget)."""
    T = len(ints[0])
    cols = [[row[i] for row in ints] for i in range(T)]
    if norm == "l2":
        X = [
            [sum(a * c for a, c in zip(cols[i], cols[j], strict=True)) for j in range(T)]
            for i in range(T)
        ]
        forced = all(v >= 0 for row in X for v in row)
    else:
        X = []
        forced = all(v >= 0 for row in ints for v in row) or all(
            v <= 0 for row in ints for v in row
        )
    if not forced and _enumeration_work(T, m, b, signs=True) > MAX_ENUMERATION:
        return None
    best: list[Any] = [-1, ()]

    def value_l1(pattern: list[int], signs: list[int]) -> int:
        return sum(
            abs(sum(s * row[i] for s, i in zip(signs, pattern, strict=True))) for row in ints
        )

    def visit(pattern: list[int], signs: list[int], q: int) -> None:
        val = q if norm == "l2" else value_l1(pattern, signs)
        if val > best[0]:
            best[0], best[1] = val, tuple(pattern)
        if len(pattern) == m:
            return
        start = pattern[-1] + b if pattern else 0
        for j in range(start, T):
            choices = (1,) if (forced or not pattern) else (1, -1)
            for s in choices:
                if norm == "l2":
                    cross = sum(si * X[i][j] for si, i in zip(signs, pattern, strict=True))
                    nq = q + 2 * s * cross + X[j][j]
                else:
                    nq = 0
                pattern.append(j)
                signs.append(s)
                visit(pattern, signs, nq)
                pattern.pop()
                signs.pop()

    visit([], [], 0)
    scale = den * den if norm == "l2" else den
    return Fraction(best[0], scale), best[1]


def _best_separated(
    weights: Sequence[Fraction], m: int, b: int
) -> tuple[Fraction, tuple[int, ...]]:
    """``max Σ_{i∈π} w_i`` over patterns of ≤ m positions pairwise ≥ b apart (w ≥ 0), and a
    maximiser: ``best[s][i] = max(best[s][i−1], w_{i−1} + best[s−1][i−b])``."""
    T = len(weights)
    if m * T > MAX_SEPARATED_WORK:  # the m largest weights, separation ignored: still ≥
        return sum(sorted(weights)[-m:], Fraction(0)), ()
    zero = Fraction(0)
    prev: list[Fraction] = [zero] * (T + 1)
    choice: list[list[bool]] = []
    for _ in range(m):
        cur = [zero] * (T + 1)
        took = [False] * (T + 1)
        for i in range(1, T + 1):
            take = weights[i - 1] + prev[max(0, i - b)]
            if take > cur[i - 1]:
                cur[i], took[i] = take, True
            else:
                cur[i] = cur[i - 1]
        choice.append(took)
        prev = cur
    pattern, i = [], T
    for s in range(m - 1, -1, -1):
        while i > 0 and not choice[s][i]:
            i -= 1
        if i == 0:
            break
        pattern.append(i - 1)
        i = max(0, i - b)
    return prev[T], tuple(sorted(pattern))


def _abs_float_up(matrix: Any) -> FloatArray:
    """``|C|`` as floats each ≥ the exact magnitude."""
    if isinstance(matrix, np.ndarray) and matrix.dtype.kind == "f":
        return np.abs(np.asarray(matrix, dtype=np.float64))
    rows = _dense_fractions("matrix", matrix)
    # float(Fraction) is correctly rounded (within half an ulp): one step up is ≥ |v|
    out = np.abs(np.array([[float(v) for v in row] for row in rows], dtype=np.float64))
    return np.nextafter(out, np.inf)


def _dense_bound(
    matrix: Any, m: int, b: int, norm: Norm, common: dict[str, Any]
) -> ParticipationSensitivity:
    A = _abs_float_up(matrix)
    rows, T = A.shape
    u = 2.0**-53
    if norm == "l1":
        # column sums of non-negative floats: math.fsum is correctly rounded; one step up
        w = [Fraction(float(np.nextafter(math.fsum(A[:, i]), np.inf))) for i in range(T)]
        value, pattern = _best_separated(w, m, b)
        return ParticipationSensitivity(
            norm="l1", value=value, exact=False, label=LABEL_TRIANGLE_L1, pattern=pattern, **common
        )
    if T > MAX_GRAM_COLUMNS:
        # |X_ij| ≤ ‖c_i‖‖c_j‖, so 1ᵀ|X_ππ|1 ≤ (Σ_{i∈π} ‖c_i‖)²; each Σ_n fl(a²) is within
        # (1 ± u) per term and fsum rounds once: ·(1 + 4u), one step up, is ≥ ‖c_i‖²
        norms = [
            _sqrt_up(Fraction(float(np.nextafter(math.fsum(A[:, i] ** 2) * (1 + 4 * u), np.inf))))
            for i in range(T)
        ]
        total, _ = _best_separated(norms, m, b)
        return ParticipationSensitivity(
            norm="l2", value=total * total, exact=False, label=LABEL_CS_BOUND, **common
        )
    # G = |C|ᵀ|C| by BLAS: each entry a sum of `rows` non-negative products, any order, so
    # |Ĝ − G| ≤ γ_rows·G with γ_n = nu/(1 − nu); Ĝ·(1 + 2γ + 4u), rounded up, is ≥ G.
    gamma = rows * u / (1 - rows * u)
    G = np.nextafter((A.T @ A) * (1 + 2 * gamma + 4 * u), np.inf)
    h: list[Fraction] = []
    idx = np.arange(T)
    for i in range(T):
        far = G[i][np.abs(idx - i) >= b]
        top = np.sort(far)[::-1][: m - 1] if m > 1 else far[:0]
        h.append(Fraction(float(G[i, i])) + sum((Fraction(float(v)) for v in top), Fraction(0)))
    value, _ = _best_separated(h, m, b)
    return ParticipationSensitivity(
        norm="l2", value=value, exact=False, label=LABEL_GRAM_BOUND, **common
    )


def dense_spread(matrix: Any, *, norm: Any = "l2") -> ParticipationSensitivity:
    """Spread-change sensitivity of a dense C: L1 exactly the largest column L1 norm; L2
    squared bounded by ``min(‖C‖₁‖C‖∞, ‖C‖_F²)``, lower bound the largest column norm² and
    ``‖C1‖²/T`` (all exact rationals)."""
    nm = _check_norm(norm)
    return _spread_of(_dense_integers("matrix", matrix), nm)


def _spread_of(scaled: tuple[list[list[int]], int], nm: Norm) -> ParticipationSensitivity:
    ints, den = scaled
    T = len(ints[0])
    common: dict[str, Any] = {"relation": "spread", "participations": 1, "min_separation": 1}
    col_abs = [sum(abs(row[i]) for row in ints) for i in range(T)]
    best = max(range(T), key=lambda i: col_abs[i])
    if nm == "l1":
        return ParticipationSensitivity(
            norm="l1",
            value=Fraction(col_abs[best], den),
            exact=True,
            label=LABEL_SPREAD_L1,
            pattern=(best,),
            effective_participations=T,
            **common,
        )
    row_abs = max(sum(abs(v) for v in row) for row in ints)
    frob = sum(v * v for row in ints for v in row)
    upper = Fraction(min(col_abs[best] * row_abs, frob), den * den)
    col2 = max(sum(row[i] ** 2 for row in ints) for i in range(T))
    ones = sum(sum(row) ** 2 for row in ints)
    lower = max(Fraction(col2, den * den), Fraction(ones, den * den * T))
    exact = lower == upper
    return ParticipationSensitivity(
        norm="l2",
        value=upper,
        exact=exact,
        label=LABEL_SPREAD_L2_EXACT if exact else LABEL_SPREAD_L2,
        lower=None if exact else lower,
        effective_participations=T,
        **common,
    )
