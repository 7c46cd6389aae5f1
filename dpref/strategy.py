"""General strategy/decoder plans (docs/spec.md §6) and their exact checks.

:class:`dpref.plan.LinearPlan` describes nodes that are intervals with geometric
weights.  Factorization mechanisms need nodes with arbitrary exact weights: a
*strategy* C (nodes × T; row n is node n, released at its last nonzero column) and a
*decoder* B (T × nodes) with ``B·C = Q``, the target (prefix sums, or window sums of
width W).  Node n gets independent noise: Laplace of scale ``b_n`` or Gaussian of
variance ``σ_n²``.  The output is ``B(Cx + z) = Qx + Bz``.  The checks are exact:

1. **unbiased**: ``B·C = Q``;
2. **causal**: ``B_{t,n} ≠ 0 ⇒ release_n ≤ t``;
3. **private** (single participation, event level): the L1 sum
   ``max_i Σ_n |C_{n,i}|Δ/b_n`` (Laplace; ≤ ε, = ε when the mechanism declares it), or
   the L2 sum ``max_i Σ_n C_{n,i}²Δ²/σ_n²`` (Gaussian; ≤ 2ρ, = 2ρ when declared);
4. **variance**: ``Var(out_t) = 2 Σ_n B_{t,n}² b_n²`` (Laplace) or ``Σ_n B_{t,n}² σ_n²``.

Two forms share these checks (both have ``check(variance_formula) -> PlanReport``, the
interface of :class:`~dpref.plan.LinearPlan`):

* :class:`ToeplitzPlan`: C and B lower-triangular Toeplitz (T × T), given by their
  coefficient sequences c, b.  ``B·C = Q`` is the power-series identity
  ``b(x)c(x) ≡ q(x) mod x^T``.  Each sequence is held in *scaled-integer* form
  ``s_k = N_k/(D·g^k)`` (:class:`ScaledSeq`), so the convolution is an integer one; it is
  computed by Kronecker substitution — each sequence packed into one big decimal number
  with fixed-width slots wide enough for any output coefficient, multiplied once with the
  ``decimal`` module (libmpdec multiplies huge operands with a number-theoretic
  transform), the slots compared — or directly for small T.  When both sequences are given
  as rational generating functions (:class:`RationalGF`, e.g. BLT), the identity is checked
  as a polynomial identity, exact for every T at once.  Column 1 of a lower-triangular
  Toeplitz matrix contains every other column as a prefix, so the L1 and L2 sums are those
  of column 1.
* :class:`DensePlan`: any C and B with exact entries (a few thousand rows at most).
  ``B·C = Q`` is checked exactly by modular arithmetic: after putting B and C over integer
  common denominators, every entry of ``B_int·C_int − D_B D_C Q`` is computed modulo enough
  primes that their product exceeds twice the largest possible absolute value of the entry,
  so a zero residue for every prime means the entry is exactly 0 (Chinese remainder theorem).

Canonical node order (docs/spec.md §6): by release time, then by row index.
"""

from __future__ import annotations

import decimal
import math
import sys
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from functools import cached_property
from math import lcm
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    import scipy.sparse as sp

from dpref.errors import ParameterError
from dpref.plan import ExactSparse, PlanCheck, PlanReport
from dpref.validation import ceil_float, fmt

__all__ = [
    "DensePlan",
    "NoiseFamily",
    "RationalGF",
    "ScaledSeq",
    "ToeplitzPlan",
    "convolution_mismatch",
    "dense_mismatch",
    "scale_all",
    "target_coefficients",
]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
NoiseFamily = Literal["laplace", "gaussian"]

DIRECT_LIMIT = 192
"""Sequences up to this length are convolved directly (O(T²) integer products); longer
ones by Kronecker substitution through ``decimal``."""
MAX_TOEPLITZ = 2**22
"""Largest T of an exact Toeplitz check (the Kronecker product of two length-T sequences
whose coefficients have O(T) digits costs O(T²) digits of memory: the check is for the
horizons of the exact plans, not for T = 2^20 with growing denominators)."""
MAX_DENSE = 4096
"""Largest number of rows or columns of a :class:`DensePlan`."""
MAX_KRONECKER_DIGITS = 400_000_000
"""Largest packed operand (decimal digits) the Kronecker product accepts (≈ 0.5 GB of
libmpdec words across the operands and the product)."""


# ----------------------------------------------------------------- sequences
@dataclass(frozen=True, eq=False)
class ScaledSeq:
    """An exact rational sequence in scaled-integer form: ``s_k = nums[k] / (denom · base^k)``.

    Sequences whose denominators grow geometrically (``binom(2k, k)/4^k``: base 4) stay
    small integers this way; :meth:`from_fractions` puts any sequence over one common
    denominator (base 1).
    """

    nums: tuple[int, ...]
    """The integer numerators ``N_k``."""
    denom: int = 1
    """The constant part D of the denominator (> 0)."""
    base: int = 1
    """The geometric part g of the denominator (> 0)."""

    def __post_init__(self) -> None:
        if self.denom <= 0 or self.base <= 0:
            raise ParameterError(f"denom={self.denom}, base={self.base}: must be > 0")

    def __len__(self) -> int:
        return len(self.nums)

    @staticmethod
    def from_fractions(values: Sequence[Fraction]) -> ScaledSeq:
        """Over the least common denominator (base 1)."""
        d = 1
        for v in values:
            d = lcm(d, v.denominator)
        return ScaledSeq(tuple(int(v * d) for v in values), d, 1)

    def fraction(self, k: int) -> Fraction:
        """``s_k`` exactly."""
        return Fraction(self.nums[k], self.denom * self.base**k)

    def fractions(self) -> list[Fraction]:
        """Every ``s_k`` exactly."""
        out = []
        den = self.denom
        for n in self.nums:
            out.append(_coprime(n, den))
            den *= self.base
        return out

    def floats(self) -> FloatArray:
        """Every ``s_k`` rounded to the nearest float (correctly rounded)."""
        return np.array([float(f) for f in self.fractions()], dtype=np.float64)

    def truncate(self, length: int) -> ScaledSeq:
        """The first ``length`` terms."""
        return ScaledSeq(self.nums[:length], self.denom, self.base)

    def rebased(self, base: int) -> tuple[int, ...]:
        """Numerators over ``denom · base^k`` for a multiple ``base`` of :attr:`base`."""
        if base % self.base:
            raise ParameterError(f"base={base}: not a multiple of {self.base}")
        ratio = base // self.base
        if ratio == 1:
            return self.nums
        out, f = [], 1
        for n in self.nums:
            out.append(n * f)
            f *= ratio
        return tuple(out)

    def abs_sum(self) -> Fraction:
        """``Σ_k |s_k|`` exactly (one common denominator, one Fraction)."""
        return _scaled_sum(self, squares=False)

    def square_sum(self) -> Fraction:
        """``Σ_k s_k²`` exactly."""
        return _scaled_sum(self, squares=True)

    def prefix_sums(self, squares: bool) -> list[Fraction]:
        """``Σ_{k<t} |s_k|`` (or ``s_k²``) for t = 1..len, exactly (one integer running sum)."""
        if squares:
            return self.cumulative_square_sums()
        m = len(self.nums)
        if m == 0:
            return []
        g = self.base
        scale = g ** (m - 1)
        den = self.denom * scale
        running, out = 0, []
        for n in self.nums:
            running += abs(n) * scale
            scale //= g if scale >= g else 1
            out.append(_coprime(running, den))
        return out

    def cumulative_square_sums(self) -> list[Fraction]:
        """``Σ_{k<t} s_k²`` for t = 1..len, exactly (integer running sum over
        ``D²·g^{2(len−1)}``, one Fraction per t)."""
        m = len(self.nums)
        if m == 0:
            return []
        g2 = self.base * self.base
        top = g2 ** (m - 1)
        running, out = 0, []
        den = self.denom * self.denom * top
        scale = top
        for n in self.nums:
            running += n * n * scale
            scale //= g2 if scale >= g2 else 1
            out.append(_coprime(running, den))
        return out


def _coprime(num: int, den: int) -> Fraction:
    """``num/den`` for a power-of-two ``den`` without a big gcd: the common factors are the
    trailing zero bits of ``num``, removed by shifting (Fraction's own normalisation runs a
    Lehmer gcd, quadratic in the size of ``den``: minutes for thousands of 10⁴-bit values)."""
    if den & (den - 1) or num == 0:
        return Fraction(num, den)
    shift = min((num & -num).bit_length() - 1, den.bit_length() - 1)
    return _lowest(num >> shift, den >> shift)


def _gcd_split(x: int, y: int) -> int:
    """``gcd(x, y)`` for ``y > 0``, with the powers of two split off first: the exact
    coefficients here have power-of-two denominators (or a small odd part), and CPython's
    gcd of two long integers costs time quadratic in their length even when it is 1 or a
    power of two."""
    if x == 0:
        return y
    tx, ty = (x & -x).bit_length() - 1, (y & -y).bit_length() - 1
    return math.gcd(x >> tx, y >> ty) << min(tx, ty)


def scale_all(v: Fraction, values: Sequence[Fraction]) -> list[Fraction]:
    """``[v * s for s in values]``, exactly and in lowest terms (the same Fractions), with
    the two cross gcds of each product taken by :func:`_gcd_split` — 4–5× faster for
    the long dyadic variances of a Toeplitz plan at T = 4096."""
    nv, dv = v.numerator, v.denominator
    out = []
    for s in values:
        ns, ds = s.numerator, s.denominator
        g1, g2 = _gcd_split(nv, ds), _gcd_split(ns, dv)
        out.append(_lowest(nv // g1 * (ns // g2), dv // g2 * (ds // g1)))
    return out


def _lowest(num: int, den: int) -> Fraction:
    """``num/den`` already in lowest terms with ``den > 0``, built without another gcd."""
    make = getattr(Fraction, "_from_coprime_ints", None)
    if make is not None:  # Python 3.12+
        out: Fraction = make(num, den)
        return out
    plain: Any = Fraction  # Python 3.11: the private keyword skips the gcd
    built = plain(num, den, _normalize=False)
    assert isinstance(built, Fraction)
    return built


def _scaled_sum(seq: ScaledSeq, squares: bool) -> Fraction:
    m = len(seq.nums)
    if m == 0:
        return Fraction(0)
    g = seq.base * seq.base if squares else seq.base
    # Horner from the last term: Σ_k v_k g^{m−1−k} over g^{m−1}
    acc = 0
    for n in seq.nums:
        acc = acc * g + (n * n if squares else abs(n))
    den = (seq.denom * seq.denom if squares else seq.denom) * g ** (m - 1)
    return _coprime(acc, den)


@dataclass(frozen=True, eq=False)
class RationalGF:
    """A sequence given by its rational generating function ``num(x)/den(x)``, exact.

    ``den[0] ≠ 0``; coefficients are lists of Fractions, lowest degree first.
    """

    num: tuple[Fraction, ...]
    """Numerator coefficients."""
    den: tuple[Fraction, ...]
    """Denominator coefficients (``den[0] ≠ 0``)."""

    def __post_init__(self) -> None:
        if not self.den or self.den[0] == 0:
            raise ParameterError(f"den={self.den}: the constant term must be nonzero")

    def expand(self, length: int) -> ScaledSeq:
        """The first ``length`` coefficients, exactly, in the form ``N_k/(M·M^k)``.

        With the coefficients normalised to ``den[0] = 1`` and M their common
        denominator, ``s_k = num_k − Σ_{j≥1} den_j s_{k−j}`` times ``M^{k+1}`` is the
        integer recurrence ``N_k = num_k M^{k+1} − Σ_j (den_j M^j)·N_{k−j}``.
        """
        d0 = self.den[0]
        num = [v / d0 for v in self.num]
        den = [v / d0 for v in self.den]
        m = 1
        for v in (*num, *den):
            m = lcm(m, v.denominator)
        pn = [int(v * m) for v in num]  # num_k·M
        pd = [int(v * m**j) for j, v in enumerate(den)]  # den_j·M^j
        out: list[int] = []
        power = 1  # M^k
        for k in range(length):
            acc = pn[k] * power if k < len(pn) else 0
            for j in range(1, min(k, len(pd) - 1) + 1):
                if pd[j]:
                    acc -= pd[j] * out[k - j]
            out.append(acc)
            power *= m
        return ScaledSeq(tuple(out), m, m)


def _poly_mul(a: Sequence[Fraction], b: Sequence[Fraction]) -> list[Fraction]:
    if not a or not b:
        return []
    out = [Fraction(0)] * (len(a) + len(b) - 1)
    for i, x in enumerate(a):
        if x:
            for j, y in enumerate(b):
                out[i + j] += x * y
    return out


def _poly_trim(a: Sequence[Fraction]) -> list[Fraction]:
    out = list(a)
    while out and out[-1] == 0:
        out.pop()
    return out


def target_coefficients(horizon: int, window: int | None) -> list[int]:
    """``q_k`` of the Toeplitz target: 1 for ``k < W`` (prefix sums: W = T), else 0."""
    w = horizon if window is None else min(window, horizon)
    return [1] * w + [0] * (horizon - w)


def _target_gf(window: int | None) -> RationalGF:
    """Prefix sums ``1/(1−x)``; windows of width W ``(1 − x^W)/(1 − x)``."""
    if window is None:
        return RationalGF((Fraction(1),), (Fraction(1), Fraction(-1)))
    num = [Fraction(0)] * (window + 1)
    num[0], num[window] = Fraction(1), Fraction(-1)
    return RationalGF(tuple(num), (Fraction(1), Fraction(-1)))


# ------------------------------------------------------- exact convolution
def _pack(values: Sequence[int], width: int, ctx: decimal.Context) -> decimal.Decimal:
    """``Σ_k values[k]·10^{width·k}`` (values ≥ 0, each below 10^width) as one Decimal."""
    text = "".join(str(v).zfill(width) for v in reversed(values))
    return ctx.create_decimal(text or "0")


def _split(values: Sequence[int]) -> tuple[list[int], list[int]]:
    return [v if v > 0 else 0 for v in values], [-v if v < 0 else 0 for v in values]


def convolution_mismatch(
    a: Sequence[int], b: Sequence[int], target: Sequence[int]
) -> tuple[int, int] | None:
    """The first k < len(target) with ``Σ_{j≤k} a_j b_{k−j} ≠ target_k``, as ``(k, value)``,
    or None when the truncated product equals the target exactly.

    Integers of any sign and size.  Short sequences are convolved directly; longer ones by
    Kronecker substitution: with every slot ``width`` digits wide — wide enough that no
    output coefficient of the non-negative parts (plus the target's) carries into the next
    slot — the packed decimal products of the positive and negative parts satisfy
    ``A⁺B⁺ + A⁻B⁻ + Q⁻ = A⁺B⁻ + A⁻B⁺ + Q⁺`` slot by slot iff the convolution equals the
    target, and without carries slot-wise equality is equality of the two numbers.
    ``sys.set_int_max_str_digits`` is lifted for the packing and restored afterwards.
    """
    n = len(target)
    a, b = list(a[:n]), list(b[:n])
    if min(len(a), len(b)) <= 32:  # one short factor: O(n·short) directly
        short, long_ = (a, b) if len(a) <= len(b) else (b, a)
        nz = [(j, v) for j, v in enumerate(short) if v]
        for k in range(n):
            s = sum(v * long_[k - j] for j, v in nz if 0 <= k - j < len(long_))
            if s != target[k]:
                return k, s
        return None
    if n <= DIRECT_LIMIT:
        for k in range(n):
            s = sum(a[j] * b[k - j] for j in range(max(0, k - len(b) + 1), min(k, len(a) - 1) + 1))
            if s != target[k]:
                return k, s
        return None
    old = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(0)
    try:
        return _kronecker_mismatch(a, b, list(target))
    finally:
        sys.set_int_max_str_digits(old)


def _kronecker_mismatch(a: list[int], b: list[int], target: list[int]) -> tuple[int, int] | None:
    n = len(target)
    max_a = max((abs(v) for v in a), default=0)
    max_b = max((abs(v) for v in b), default=0)
    max_q = max((abs(v) for v in target), default=0)
    # each side: two products (≤ min(len)·max_a·max_b per slot) plus the target part
    bound = 2 * min(len(a), len(b), n) * max_a * max_b + max_q + 1
    width = len(str(bound)) + 1
    if width * (n + max(len(a), len(b))) > MAX_KRONECKER_DIGITS:
        raise ParameterError(
            f"horizon={n}: the exact Kronecker check would pack {width * n:,} digits per "
            f"operand (coefficients of ~{width} digits); above {MAX_KRONECKER_DIGITS:,}"
        )
    ctx = decimal.Context(
        prec=decimal.MAX_PREC, Emax=decimal.MAX_EMAX, Emin=decimal.MIN_EMIN, traps=[]
    )
    ap, an = _split(a)
    bp, bn = _split(b)
    qp, qn = _split(target)
    lhs = ctx.multiply(_pack(ap, width, ctx), _pack(bp, width, ctx))
    rhs = _pack(qp, width, ctx)
    if any(an) and any(bn):
        lhs = ctx.add(lhs, ctx.multiply(_pack(an, width, ctx), _pack(bn, width, ctx)))
    if any(an):
        rhs = ctx.add(rhs, ctx.multiply(_pack(an, width, ctx), _pack(bp, width, ctx)))
    if any(bn):
        rhs = ctx.add(rhs, ctx.multiply(_pack(ap, width, ctx), _pack(bn, width, ctx)))
    if any(qn):
        lhs = ctx.add(lhs, _pack(qn, width, ctx))
    digits = width * n
    left = str(lhs).zfill(digits)[-digits:]
    right = str(rhs).zfill(digits)[-digits:]
    if left == right:
        return None
    for k in range(n):  # slot k is the k-th block from the right
        lo, hi = digits - width * (k + 1), digits - width * k
        if left[lo:hi] != right[lo:hi]:
            value = int(left[lo:hi]) - int(right[lo:hi]) + target[k]
            return k, value
    raise AssertionError("unequal packings with equal slots")  # pragma: no cover


def _show(q: Fraction) -> str:
    if q.numerator.bit_length() + q.denominator.bit_length() <= 256:
        return str(q)
    return f"≈{float(q):.17g}"


# --------------------------------------------------------------- the plans
class _StrategyChecks(ABC):
    """The checks and reports both plan forms share (they provide the primitives)."""

    name: str
    horizon: int
    noise_family: NoiseFamily
    declared_epsilon: Fraction | None
    declared_rho: Fraction | None
    expected_privacy_sum: Fraction | None

    @abstractmethod
    def check_unbiased(self) -> PlanCheck:
        """Provided by each plan form."""

    @abstractmethod
    def check_causal(self) -> PlanCheck:
        """Provided by each plan form."""

    @abstractmethod
    def privacy_sum(self) -> Fraction:
        """Provided by each plan form."""

    @abstractmethod
    def variance_exact(self) -> list[Fraction]:
        """Provided by each plan form."""

    @property
    def privacy_bound(self) -> Fraction | None:
        """What the privacy sum may reach: ε (Laplace) or 2ρ (Gaussian); None: undeclared."""
        if self.noise_family == "gaussian":
            return None if self.declared_rho is None else 2 * self.declared_rho
        return self.declared_epsilon

    @property
    def gaussian(self) -> bool:
        """Whether the node noise is Gaussian."""
        return self.noise_family == "gaussian"

    def check_privacy(self) -> tuple[PlanCheck, Fraction]:
        """The L1 (Laplace) or L2 (Gaussian) privacy sum is at most ε or 2ρ, and equals the
        expected sum when one is known (a plan that declares no budget only reports it)."""
        total = self.privacy_sum()
        bound = self.privacy_bound
        if bound is None:
            return PlanCheck(
                "privacy", True, f"privacy sum {_show(total)} (no budget declared)"
            ), total
        ok = total <= bound
        if self.noise_family == "gaussian":
            detail = f"max_i Σ_n C_ni²Δ²/σ_n² = {_show(total)} (declared 2ρ = {_show(bound)})"
        else:
            detail = f"max_i Σ_n |C_ni|Δ/b_n = {_show(total)} (declared ε = {_show(bound)})"
        if self.expected_privacy_sum is not None and total != self.expected_privacy_sum:
            ok = False
            detail += f"; expected exactly {_show(self.expected_privacy_sum)}"
        return PlanCheck("privacy", ok, detail), total

    def check(self, variance_formula: list[Fraction] | None = None) -> PlanReport:
        """Run every exact check; compare with a closed-form variance when given."""
        checks = [self.check_unbiased(), self.check_causal()]
        priv, total = self.check_privacy()
        checks.append(priv)
        if variance_formula is not None:
            plan_var = self.variance_exact()
            if len(plan_var) != len(variance_formula):
                checks.append(
                    PlanCheck(
                        "variance",
                        False,
                        f"formula has {len(variance_formula)} steps, plan {len(plan_var)}",
                    )
                )
            else:
                bad = next(
                    (
                        t
                        for t, (a, b) in enumerate(zip(plan_var, variance_formula, strict=True), 1)
                        if a != b
                    ),
                    None,
                )
                if bad is None:
                    checks.append(PlanCheck("variance", True, "closed form = plan exactly"))
                else:
                    checks.append(
                        PlanCheck(
                            "variance",
                            False,
                            f"t={bad}: formula {_show(variance_formula[bad - 1])} ≠ plan "
                            f"{_show(plan_var[bad - 1])}",
                        )
                    )
        gaussian = self.noise_family == "gaussian"
        if gaussian:
            design = Fraction(1)
        else:
            design = self.declared_epsilon if self.declared_epsilon is not None else total
        return PlanReport(
            self.name,
            self.horizon,
            tuple(checks),
            total,
            design,
            noise_family=self.noise_family,
            declared_rho=self.declared_rho if gaussian else None,
        )

    def variance(self) -> FloatArray:
        """Per-step variance as floats (nearest)."""
        return np.array([float(v) for v in self.variance_exact()], dtype=np.float64)


@dataclass(frozen=True, eq=False)
class ToeplitzPlan(_StrategyChecks):
    """A plan whose strategy C and decoder B are lower-triangular Toeplitz (T × T).

    Node n (row n of C, n = 1..T) covers items ``1..n`` with weights ``c_{n−i}`` and is
    released at n (``c_0 ≠ 0``); every node has the same noise (``noise_scale``: the
    Laplace scale b, or the Gaussian variance σ²).
    """

    name: str
    """Mechanism label for reports."""
    horizon: int
    """T."""
    strategy: ScaledSeq | RationalGF
    """The coefficients c of C (at least T of them, or a generating function)."""
    decoder: ScaledSeq | RationalGF
    """The coefficients of B."""
    noise_scale: Fraction
    """Per-node Laplace scale b, or Gaussian variance σ² (``noise_family``)."""
    sensitivity: Fraction
    """Δ."""
    noise_family: NoiseFamily = "laplace"
    """Which noise ``scale`` describes."""
    declared_epsilon: Fraction | None = None
    """The ε the mechanism declares (Laplace)."""
    declared_rho: Fraction | None = None
    """The ρ the mechanism declares (Gaussian)."""
    window: int | None = None
    """None: prefix sums; W: window sums of width W."""
    expected_privacy_sum: Fraction | None = None
    """When known, the exact privacy sum this T must reach."""
    strategy_values: ScaledSeq | None = None
    """When ``strategy`` is a generating function: its coefficients in a cheaper exact form
    (checked against the generating function by :meth:`check_unbiased`)."""

    def __post_init__(self) -> None:
        if not 1 <= self.horizon <= MAX_TOEPLITZ:
            raise ParameterError(f"horizon={self.horizon}: must lie in [1, {MAX_TOEPLITZ}]")
        if self.noise_scale <= 0:
            raise ParameterError(f"noise_scale={self.noise_scale}: must be > 0")
        _check_family(self.noise_family, self.declared_epsilon, self.declared_rho)
        for nm, seq in (("strategy", self.strategy), ("decoder", self.decoder)):
            if isinstance(seq, ScaledSeq) and len(seq) < self.horizon:
                raise ParameterError(f"{nm}: {len(seq)} coefficients for horizon={self.horizon}")
        if self.strategy_seq.nums[0] == 0:
            raise ParameterError("strategy: c_0 = 0 (node n would not be released at n)")

    @cached_property
    def strategy_seq(self) -> ScaledSeq:
        """c_0 … c_{T−1}, exact."""
        if self.strategy_values is not None:
            return self.strategy_values.truncate(self.horizon)
        return _materialise(self.strategy, self.horizon)

    @cached_property
    def decoder_seq(self) -> ScaledSeq:
        """The decoder's coefficients, exact (materialised on first use)."""
        return _materialise(self.decoder, self.horizon)

    @property
    def n_nodes(self) -> int:
        """T nodes, one per row of C."""
        return self.horizon

    @property
    def release(self) -> IntArray:
        """Node n is released at n (canonical order = row order)."""
        return np.arange(1, self.horizon + 1, dtype=np.int64)

    @cached_property
    def scales(self) -> FloatArray:
        """Per-node Laplace scale (rounded up), or Gaussian standard deviation √σ² (up)."""
        return np.full(self.horizon, _noise_float(self.noise_scale, self.noise_family))

    # ------------------------------------------------------------ checks
    def check_unbiased(self) -> PlanCheck:
        """``b(x)c(x) ≡ q(x) mod x^T`` exactly (polynomial identity for two generating
        functions; else the integer convolution of the scaled numerators)."""
        if isinstance(self.strategy, RationalGF) and isinstance(self.decoder, RationalGF):
            if self.strategy_values is not None:
                bad = _gf_mismatch(self.strategy, self.strategy_values.truncate(self.horizon))
                if bad is not None:
                    return PlanCheck("unbiased", False, bad)
            q = _target_gf(self.window)
            lhs = _poly_trim(_poly_mul(_poly_mul(self.strategy.num, self.decoder.num), q.den))
            rhs = _poly_trim(_poly_mul(_poly_mul(self.strategy.den, self.decoder.den), q.num))
            if lhs == rhs:
                return PlanCheck(
                    "unbiased",
                    True,
                    "B·C = Q for every T: c(x)·b(x)·den_q(x) = den_c(x)·den_b(x)·num_q(x) "
                    "as exact polynomials",
                )
            return PlanCheck("unbiased", False, "the generating functions give b(x)c(x) ≠ q(x)")
        c, e = self.strategy_seq, self.decoder_seq
        base = lcm(c.base, e.base)
        a, b = c.rebased(base), e.rebased(base)
        scale = c.denom * e.denom
        target: list[int] = []
        f = scale
        for qk in target_coefficients(self.horizon, self.window):
            target.append(qk * f)
            f *= base
        found = convolution_mismatch(a, b, target)
        if found is None:
            how = "directly" if self.horizon <= DIRECT_LIMIT else "by Kronecker substitution"
            return PlanCheck(
                "unbiased", True, f"B·C = Q exactly for all {self.horizon} rows ({how})"
            )
        k, value = found
        got = Fraction(value, scale * base**k)
        want = target_coefficients(self.horizon, self.window)[k]
        return PlanCheck(
            "unbiased",
            False,
            f"(B·C)[t, t−{k}] = {_show(got)} ≠ Q = {want} (every t > {k})",
        )

    def check_causal(self) -> PlanCheck:
        """Lower-triangular Toeplitz with ``c_0 ≠ 0``: node n is released at n and output t
        uses nodes ``n ≤ t`` only."""
        return PlanCheck(
            "causal", True, "C and B lower triangular, c_0 ≠ 0: node n released at n ≤ t"
        )

    def column_abs_sum(self) -> Fraction:
        """``max_i Σ_n |C_{n,i}| = Σ_{k<T} |c_k|`` (column 1 holds every column as a prefix)."""
        return self.strategy_seq.abs_sum()

    def column_square_sum(self) -> Fraction:
        """``max_i Σ_n C_{n,i}² = Σ_{k<T} c_k²``."""
        return self.strategy_seq.square_sum()

    def item_privacy_sums(self) -> list[Fraction]:
        """Per item i = 1..T: its column's ``Σ_{k≤T−i}|c_k|·Δ/b`` (Laplace) or
        ``Σ_{k≤T−i} c_k²·Δ²/σ²`` (Gaussian), exact."""
        gaussian = self.noise_family == "gaussian"
        sums = self.strategy_seq.prefix_sums(squares=gaussian)
        factor = (self.sensitivity**2 if gaussian else self.sensitivity) / self.noise_scale
        return [s * factor for s in reversed(sums)]

    @property
    def scale_table(self) -> tuple[Fraction, ...]:
        """The one noise parameter every node shares (Laplace b or Gaussian σ²)."""
        return (self.noise_scale,)

    @property
    def scale_idx(self) -> IntArray:
        """Every node uses ``scale_table[0]``."""
        return np.zeros(self.horizon, dtype=np.int64)

    def node_values(self, stream: FloatArray) -> FloatArray:
        """True node values ``C x``."""
        return np.asarray(self.A() @ stream, dtype=np.float64)

    def privacy_sum(self) -> Fraction:
        """L1 sum ``S₁Δ/b`` (Laplace) or L2 sum ``S₂Δ²/σ²`` (Gaussian), exact."""
        if self.noise_family == "gaussian":
            return self.column_square_sum() * self.sensitivity**2 / self.noise_scale
        return self.column_abs_sum() * self.sensitivity / self.noise_scale

    def node_variance(self) -> Fraction:
        """The variance of one node's noise: ``2b²`` or ``σ²``."""
        return 2 * self.noise_scale**2 if self.noise_family == "laplace" else self.noise_scale

    def variance_exact(self) -> list[Fraction]:
        """``Var(out_t) = v · Σ_{k<t} b_k²`` (v the node variance), t = 1..T."""
        v = self.node_variance()
        return scale_all(v, self.decoder_seq.cumulative_square_sums())

    def per_node_rho(self) -> list[Fraction]:
        """Gaussian: node n's zCDP cost ``(Δ·max_{k<n}|c_k|)²/(2σ²)``."""
        if self.noise_family != "gaussian":
            raise ParameterError("noise_family='laplace': a Laplace plan has per_node_epsilon()")
        out, best = [], Fraction(0)
        for c in self.strategy_seq.fractions():
            best = max(best, abs(c))
            out.append((best * self.sensitivity) ** 2 / (2 * self.noise_scale))
        return out

    def per_node_epsilon(self) -> list[Fraction]:
        """Laplace: ``Δ·max_{k<n}|c_k|/b`` for node n."""
        if self.noise_family == "gaussian":
            raise ParameterError(
                "noise_family='gaussian': a Gaussian node has no pure ε; use per_node_rho()"
            )
        out, best = [], Fraction(0)
        for c in self.strategy_seq.fractions():
            best = max(best, abs(c))
            out.append(best * self.sensitivity / self.noise_scale)
        return out

    # ------------------------------------------------- LinearPlan-style views
    @property
    def lo(self) -> IntArray:
        """Node n covers items from 1 (interval starts, for reports)."""
        return np.ones(self.horizon, dtype=np.int64)

    @property
    def hi(self) -> IntArray:
        """Node n ends (and is released) at n."""
        return self.release

    @property
    def base(self) -> Fraction:
        """1: node weights are the coefficients c, not a geometric decay."""
        return Fraction(1)

    @property
    def weight_table(self) -> tuple[Fraction, ...]:
        """The distinct strategy coefficients ``c_k`` (node n has weight ``c_{n−i}`` on item i)."""
        return tuple(dict.fromkeys(self.strategy_seq.fractions()))

    def weight(self, n: int) -> Fraction:
        """Node n's weight on its release item: ``c_0``."""
        return self.strategy_seq.fraction(0)

    def scale(self, n: int) -> Fraction:
        """Node n's noise: the Laplace scale b or the Gaussian variance σ² (every node)."""
        return self.noise_scale

    @cached_property
    def recombination(self) -> ExactSparse:
        """B as an exact sparse matrix (T(T+1)/2 entries: small T)."""
        if self.horizon > 8192:
            raise ParameterError(f"horizon={self.horizon}: an explicit B is for T <= 8192")
        rows, cols = np.tril_indices(self.horizon)
        return ExactSparse.from_triples(
            (self.horizon, self.horizon),
            rows.astype(np.int64),
            cols.astype(np.int64),
            tuple(self.decoder_seq.fractions()),
            (rows - cols).astype(np.int64),
        )

    def dense_A_exact(self) -> list[list[Fraction]]:
        """C as a dense exact matrix (small T)."""
        if self.horizon > 4096:
            raise ParameterError(f"horizon={self.horizon}: too large for dense exact C")
        c = self.strategy_seq.fractions()
        zero = Fraction(0)
        T = self.horizon
        return [[c[n - i] if i <= n else zero for i in range(T)] for n in range(T)]

    # ------------------------------------------------------------ matrices
    def A(self) -> sp.csr_matrix:
        """C as float64 sparse (lower triangle; T² / 2 entries: small T)."""
        return _toeplitz_sparse(self.strategy_seq.floats(), self.horizon)

    def R(self) -> sp.csr_matrix:
        """B as float64 sparse."""
        return _toeplitz_sparse(self.decoder_seq.floats(), self.horizon)

    def Q(self) -> sp.csr_matrix:
        """The target as float64 sparse."""
        q = np.array(target_coefficients(self.horizon, self.window), dtype=np.float64)
        return _toeplitz_sparse(q, self.horizon)

    def check_unbiased_dense(self) -> PlanCheck:
        """Brute force over dense Fraction matrices (small T)."""
        if self.horizon > 64:
            raise ParameterError(f"horizon={self.horizon}: dense cross-check is for T <= 64")
        c, e = self.strategy_seq.fractions(), self.decoder_seq.fractions()
        q = target_coefficients(self.horizon, self.window)
        for t in range(self.horizon):
            for i in range(t + 1):
                v = sum((e[t - n] * c[n - i] for n in range(i, t + 1)), Fraction(0))
                if v != q[t - i]:
                    return PlanCheck("unbiased-dense", False, f"(B·C)[{t + 1},{i + 1}] = {v}")
        return PlanCheck("unbiased-dense", True, "dense exact B·C = Q")

    def output(self, stream: FloatArray, noise: FloatArray) -> FloatArray:
        """``B(Cx + z)`` with dense float matrices (the reference, small T)."""
        if noise.shape[-1] != self.n_nodes:
            raise ParameterError(
                f"noise: expected {self.n_nodes} node values, got {noise.shape[-1]}"
            )
        noisy = np.asarray(self.A() @ stream, dtype=np.float64) + noise
        return np.asarray(self.R() @ noisy.T, dtype=np.float64).T


def _gf_mismatch(gf: RationalGF, seq: ScaledSeq) -> str | None:
    """Whether ``den(x)·s(x) ≡ num(x) mod x^T`` fails for the given coefficients (then they
    are not the generating function's): a short exact convolution."""
    den = ScaledSeq.from_fractions(gf.den)
    base = seq.base
    T = len(seq)
    scale = seq.denom * den.denom
    target = []
    f = scale
    for k in range(T):
        target.append(int(gf.num[k] * f) if k < len(gf.num) else 0)
        f *= base
    nums_den = den.rebased(base) if base % den.base == 0 else None
    if nums_den is None or any(
        (gf.num[k] * scale * base**k).denominator != 1 for k in range(min(T, len(gf.num)))
    ):
        # general fallback: exact Fractions
        vals = seq.fractions()
        for k in range(T):
            acc = sum(
                (gf.den[j] * vals[k - j] for j in range(min(k, len(gf.den) - 1) + 1)), Fraction(0)
            )
            want = gf.num[k] if k < len(gf.num) else Fraction(0)
            if acc != want:
                return f"coefficient c_{k} is not that of the generating function"
        return None
    found = convolution_mismatch(nums_den, seq.nums, target)
    if found is not None:
        return f"coefficient c_{found[0]} is not that of the generating function"
    return None


def _materialise(seq: ScaledSeq | RationalGF, horizon: int) -> ScaledSeq:
    if isinstance(seq, RationalGF):
        return seq.expand(horizon)
    return seq.truncate(horizon)


def _toeplitz_sparse(coef: FloatArray, horizon: int) -> sp.csr_matrix:
    import scipy.sparse as sp

    if horizon > 8192:
        raise ParameterError(f"horizon={horizon}: a dense Toeplitz matrix is for T <= 8192")
    rows, cols = np.tril_indices(horizon)
    return sp.csr_matrix((coef[rows - cols], (rows, cols)), shape=(horizon, horizon))


def _check_family(family: str, epsilon: Fraction | None, rho: Fraction | None) -> None:
    """The noise family and the declared budget match (a plan may declare none)."""
    if family not in ("laplace", "gaussian"):
        raise ParameterError(f"noise_family={family!r}: must be 'laplace' or 'gaussian'")
    if family == "laplace" and rho is not None:
        raise ParameterError(f"declared_rho={rho}: a Laplace plan declares an ε, not a ρ")
    if family == "gaussian" and epsilon is not None:
        raise ParameterError(f"declared_epsilon={epsilon}: a Gaussian plan declares a ρ, not ε")


def _noise_float(value: Fraction, family: str) -> float:
    """The float a node draw is multiplied by, rounded up: b, or √σ²."""
    if family == "laplace":
        return ceil_float(value)
    return sqrt_up(value)


def sqrt_up(value: Fraction) -> float:
    """The smallest float s with ``s² ≥ value`` checked exactly (a standard deviation,
    rounded up)."""
    import math

    s = math.sqrt(float(value))
    while Fraction(s) ** 2 < value:
        s = math.nextafter(s, math.inf)
    return s


# ---------------------------------------------------------- dense plans
@dataclass(frozen=True, eq=False)
class DensePlan(_StrategyChecks):
    """A general plan: strategy C (nodes × T) and decoder B (T × nodes), exact entries.

    Row n of C is released at its last nonzero column (a zero row at 1); node n's noise is
    ``node_scales[n]`` (Laplace scale or Gaussian variance).
    """

    name: str
    """Label for reports."""
    strategy: tuple[tuple[Fraction, ...], ...]
    """C, one tuple per node."""
    decoder: tuple[tuple[Fraction, ...], ...]
    """B, one tuple per output step."""
    node_scales: tuple[Fraction, ...]
    """Per node: Laplace scale b_n or Gaussian variance σ_n² (> 0)."""
    sensitivity: Fraction = Fraction(1)
    """Δ."""
    noise_family: NoiseFamily = "laplace"
    """Which noise ``node_scales`` describe."""
    declared_epsilon: Fraction | None = None
    """ε (Laplace)."""
    declared_rho: Fraction | None = None
    """ρ (Gaussian)."""
    window: int | None = None
    """None: prefix sums; W: window sums."""
    expected_privacy_sum: Fraction | None = None
    """The exact privacy sum required, when known."""
    horizon: int = field(init=False)
    """T (the number of columns of C)."""

    def __post_init__(self) -> None:
        nodes = len(self.strategy)
        if nodes == 0 or nodes > MAX_DENSE:
            raise ParameterError(f"C: {nodes} rows; need 1 to {MAX_DENSE}")
        horizon = len(self.strategy[0])
        if not 1 <= horizon <= MAX_DENSE:
            raise ParameterError(f"C: {horizon} columns; need 1 to {MAX_DENSE}")
        object.__setattr__(self, "horizon", horizon)
        for n, row in enumerate(self.strategy):
            if len(row) != horizon:
                raise ParameterError(f"C[{n}]: {len(row)} entries, row 0 has {horizon}")
        if len(self.decoder) != horizon:
            raise ParameterError(f"B: {len(self.decoder)} rows, need T={horizon}")
        for t, row in enumerate(self.decoder):
            if len(row) != nodes:
                raise ParameterError(f"B[{t}]: {len(row)} entries, need {nodes} (rows of C)")
        if len(self.node_scales) != nodes:
            raise ParameterError(f"scales: {len(self.node_scales)} entries, need {nodes}")
        for n, s in enumerate(self.node_scales):
            if s <= 0:
                raise ParameterError(f"scales[{n}]={fmt(s)}: must be > 0")
        _check_family(self.noise_family, self.declared_epsilon, self.declared_rho)

    @property
    def n_nodes(self) -> int:
        """Rows of C."""
        return len(self.strategy)

    @cached_property
    def release(self) -> IntArray:
        """Per node, its last nonzero column (1-indexed; 1 for an all-zero row)."""
        out = np.ones(self.n_nodes, dtype=np.int64)
        for n, row in enumerate(self.strategy):
            for i in range(len(row) - 1, -1, -1):
                if row[i] != 0:
                    out[n] = i + 1
                    break
        return out

    @cached_property
    def canonical_order(self) -> IntArray:
        """Row indices sorted by (release time, row index)."""
        return np.lexsort((np.arange(self.n_nodes), self.release)).astype(np.int64)

    @cached_property
    def scales(self) -> FloatArray:
        """Per node (row order): Laplace scale or standard deviation, rounded up."""
        return np.array([_noise_float(s, self.noise_family) for s in self.node_scales])

    def check_unbiased(self) -> PlanCheck:
        """``B·C = Q`` exactly (modular arithmetic with a CRT bound, see module docs)."""
        found = dense_mismatch(self.decoder, self.strategy, self.window)
        if found is None:
            return PlanCheck("unbiased", True, f"B·C = Q exactly ({self.horizon} × {self.horizon})")
        t, i, got, want = found
        return PlanCheck(
            "unbiased", False, f"(B·C)[{t},{i}] = {_show(got)} ≠ Q[{t},{i}] = {_show(want)}"
        )

    def check_causal(self) -> PlanCheck:
        """``B_{t,n} ≠ 0 ⇒ release_n ≤ t``."""
        rel = self.release
        for t, row in enumerate(self.decoder, 1):
            for n, v in enumerate(row):
                if v != 0 and int(rel[n]) > t:
                    return PlanCheck(
                        "causal",
                        False,
                        f"B[{t - 1}][{n}] = {_show(v)} ≠ 0: output t={t} uses row {n} of C, "
                        f"released at t={int(rel[n])}",
                    )
        return PlanCheck("causal", True, "every output uses only released rows")

    def column_sums(self, squares: bool) -> list[Fraction]:
        """Per item i: ``Σ_n |C_{n,i}|/s_n`` or ``Σ_n C_{n,i}²/s_n`` (s the node scales)."""
        out = []
        for i in range(self.horizon):
            total = Fraction(0)
            for n, row in enumerate(self.strategy):
                v = row[i]
                if v:
                    total += (v * v if squares else abs(v)) / self.node_scales[n]
            out.append(total)
        return out

    def privacy_sum(self) -> Fraction:
        """``max_i Σ_n |C_ni|Δ/b_n`` or ``max_i Σ_n C_ni²Δ²/σ_n²``, exact."""
        gaussian = self.noise_family == "gaussian"
        sums = self.column_sums(squares=gaussian)
        d = self.sensitivity**2 if gaussian else self.sensitivity
        return max(sums) * d

    def variance_exact(self) -> list[Fraction]:
        """``Σ_n B_{t,n}² v_n`` with v_n = 2b_n² or σ_n²."""
        if self.noise_family == "laplace":
            v = [2 * s * s for s in self.node_scales]
        else:
            v = list(self.node_scales)
        return [
            sum((x * x * v[n] for n, x in enumerate(row) if x), Fraction(0)) for row in self.decoder
        ]

    def C_float(self) -> FloatArray:
        """C as float64 (nearest)."""
        return np.array([[float(v) for v in row] for row in self.strategy], dtype=np.float64)

    def B_float(self) -> FloatArray:
        """B as float64 (nearest)."""
        return np.array([[float(v) for v in row] for row in self.decoder], dtype=np.float64)

    def output(self, stream: FloatArray, noise: FloatArray) -> FloatArray:
        """``B(Cx + z)`` with z given in canonical node order."""
        if noise.shape[-1] != self.n_nodes:
            raise ParameterError(
                f"noise: expected {self.n_nodes} node values, got {noise.shape[-1]}"
            )
        z = np.empty_like(noise)
        z[..., self.canonical_order] = noise
        noisy = self.C_float() @ stream + z
        return np.asarray(noisy @ self.B_float().T, dtype=np.float64)


_PRIMES = (
    2147483647, 2147483629, 2147483587, 2147483579, 2147483563, 2147483549,
    2147483543, 2147483497, 2147483489, 2147483477, 2147483423, 2147483399,
)  # fmt: skip
"""Primes below 2^31 (products of two residues fit int64 after a split; see
:func:`_modmatmul`)."""


def _common(rows: Sequence[Sequence[Fraction]]) -> tuple[list[list[int]], int]:
    d = 1
    for row in rows:
        for v in row:
            if v.denominator != 1:
                d = lcm(d, v.denominator)
    return [[int(v * d) for v in row] for row in rows], d


def _modmatmul(a: npt.NDArray[Any], b: npt.NDArray[Any], p: int) -> IntArray:
    """``a·b mod p`` for int64 residues in [0, p): each residue is split into 16-bit halves
    so every partial product and sum stays below 2^63."""
    lo_mask = (1 << 16) - 1
    a_hi, a_lo = a >> 16, a & lo_mask
    out = np.zeros((a.shape[0], b.shape[1]), dtype=np.int64)
    step = max(1, (1 << 62) // ((1 << 16) * p))  # columns of a per exact int64 block
    for start in range(0, a.shape[1], step):
        sl = slice(start, start + step)
        hi = (a_hi[:, sl] @ b[sl, :]) % p
        lo = (a_lo[:, sl] @ b[sl, :]) % p
        out = (out + (hi * (1 << 16)) % p + lo) % p
    return out


def dense_mismatch(
    decoder: Sequence[Sequence[Fraction]],
    strategy: Sequence[Sequence[Fraction]],
    window: int | None,
) -> tuple[int, int, Fraction, Fraction] | None:
    """The first (t, i) (1-indexed) where ``(B·C)[t,i] ≠ Q[t,i]``, with both values."""
    bi, db = _common(decoder)
    ci, dc = _common(strategy)
    horizon, nodes = len(decoder), len(strategy)
    max_b = max((abs(v) for row in bi for v in row), default=0)
    max_c = max((abs(v) for row in ci for v in row), default=0)
    bound = 2 * (nodes * max_b * max_c + db * dc) + 1
    primes: list[int] = []
    prod = 1
    for p in _PRIMES:
        if prod > bound:
            break
        primes.append(p)
        prod *= p
    while prod <= bound:  # more primes than the table: next ones below the last
        p = primes[-1] - 2
        while any(p % d == 0 for d in range(3, int(p**0.5) + 1, 2)):
            p -= 2
        primes.append(p)
        prod *= p
    t_idx = np.arange(horizon)[:, None]
    i_idx = np.arange(horizon)[None, :]
    w = horizon if window is None else window
    q = ((i_idx <= t_idx) & (i_idx > t_idx - w)).astype(np.int64)
    bad = np.zeros((horizon, horizon), dtype=bool)
    for p in primes:
        bm = np.array([[v % p for v in row] for row in bi], dtype=np.int64).reshape(horizon, nodes)
        cm = np.array([[v % p for v in row] for row in ci], dtype=np.int64).reshape(nodes, horizon)
        prodm = _modmatmul(bm, cm, p)
        bad |= prodm != (q * ((db * dc) % p)) % p
    if not bad.any():
        return None
    t, i = (int(v) for v in np.argwhere(bad)[0])
    got = sum((decoder[t][n] * strategy[n][i] for n in range(nodes) if decoder[t][n]), Fraction(0))
    return t + 1, i + 1, got, Fraction(int(q[t, i]))


def dense_from_toeplitz(plan: ToeplitzPlan) -> DensePlan:
    """The same plan as explicit dense matrices (small T: a cross-check of both forms)."""
    c = plan.strategy_seq.fractions()
    e = plan.decoder_seq.fractions()
    T = plan.horizon
    zero = Fraction(0)
    C = tuple(tuple(c[n - i] if i <= n else zero for i in range(T)) for n in range(T))
    B = tuple(tuple(e[t - n] if n <= t else zero for n in range(T)) for t in range(T))
    return DensePlan(
        name=plan.name,
        strategy=C,
        decoder=B,
        node_scales=(plan.noise_scale,) * T,
        sensitivity=plan.sensitivity,
        noise_family=plan.noise_family,
        declared_epsilon=plan.declared_epsilon,
        declared_rho=plan.declared_rho,
        window=plan.window,
        expected_privacy_sum=plan.expected_privacy_sum,
    )
