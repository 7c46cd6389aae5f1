"""The Toeplitz plan (C and B lower-triangular Toeplitz) and the checks and reports both
plan forms share; see :mod:`dpref.strategy`."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from fractions import Fraction
from functools import cached_property
from math import lcm
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    import scipy.sparse as sp

from dpref.errors import ParameterError
from dpref.plan import ExactSparse, PlanCheck, PlanReport
from dpref.strategy.sequences import (
    DIRECT_LIMIT,
    NoiseFamily,
    RationalGF,
    ScaledSeq,
    _poly_mul,
    _poly_trim,
    _target_gf,
    convolution_mismatch,
    scale_all,
    target_coefficients,
)
from dpref.validation import ceil_float, ceil_sqrt_float

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

MAX_TOEPLITZ = 2**22
"""Largest T of an exact Toeplitz check (the Kronecker product of two length-T sequences
whose coefficients have O(T) digits costs O(T²) digits of memory: the check is for the
horizons of the exact plans, not for T = 2^20 with growing denominators)."""


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
    """The float a node draw is multiplied by, rounded up: b, or √σ² (the rounding of
    :func:`~dpref.validation.ceil_float` and :func:`~dpref.validation.ceil_sqrt_float`
    that every mechanism uses)."""
    if family == "laplace":
        return ceil_float(value)
    return ceil_sqrt_float(value)
