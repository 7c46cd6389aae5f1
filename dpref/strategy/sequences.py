"""Exact coefficient sequences of the Toeplitz plans: scaled-integer sequences, rational
generating functions, and the exact convolution check (direct or by Kronecker
substitution through ``decimal``); see :mod:`dpref.strategy`."""

from __future__ import annotations

import decimal
import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from math import lcm
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from dpref.errors import ParameterError

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
NoiseFamily = Literal["laplace", "gaussian"]

DIRECT_LIMIT = 192
"""Sequences up to this length are convolved directly (O(T²) integer products); longer
ones by Kronecker substitution through ``decimal``."""
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
