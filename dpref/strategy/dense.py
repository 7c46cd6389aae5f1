"""General dense plans (any exact C and B, a few thousand rows) and their exact modular
check of ``B·C = Q``; see :mod:`dpref.strategy`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from functools import cached_property
from math import lcm
from typing import Any

import numpy as np
import numpy.typing as npt

from dpref.errors import ParameterError
from dpref.plan import PlanCheck
from dpref.strategy.sequences import (
    NoiseFamily,
)
from dpref.strategy.toeplitz import (
    ToeplitzPlan,
    _check_family,
    _noise_float,
    _show,
    _StrategyChecks,
)
from dpref.validation import fmt

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

MAX_DENSE = 4096
"""Largest number of rows or columns of a :class:`DensePlan`."""


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
