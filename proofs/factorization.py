"""Proofs for the Toeplitz factorization counters (``SqrtFactorization``, ``BLT``;
docs/factorization.md), evaluating the classes' own functions.

Setting: C and B lower-triangular Toeplitz (T × T) with coefficient sequences c and b;
row n of C is node n (items ``1..n``, weights ``c_{n−i}``), released at n; every node gets
``Lap(b)`` (ε-DP) or ``N(0, σ²)`` (ρ-zCDP).  The product of two lower-triangular Toeplitz
matrices is the lower-triangular Toeplitz matrix of the product of their generating
functions truncated at ``x^T``, so ``B·C = Q`` (prefix sums, ``q(x) = 1/(1−x)``) for every T
iff ``b(x)c(x) = 1/(1−x)`` as power series.  The release computes ``Qx + Bz``, which is
``B(Cx + z)`` exactly when ``B·C = Q``.

Theorem (square root; about the code).  The code's coefficients (``sqrt_coefficients``,
stepping by ``sqrt_ratio``) are ``c_k = binom(2k,k)/4^k``, the coefficients of
``(1−x)^{−1/2}``, and ``C = B``: ``C·C = Q`` for every T.
Proof.  Induction on k: ``c_0 = 1`` (the class's strategy and decoder), and ``sqrt_ratio(k)``
evaluated at a symbolic k is ``binom(2k,k)/4^k ÷ binom(2k−2,k−1)/4^{k−1}`` (combsimp); the
integer step ``N_k = N_{k−1}·4p//q`` is exact (the quotient is ``binom(2k,k)``).
``f = (1−x)^{−1/2}`` solves ``2(1−x)f' = f``, whose coefficients obey
``2(k+1)a_{k+1} = (2k+1)a_k``: the code's step.  ``f² = 1/(1−x)``.  ∎

Theorem (columns; lemma).  Column i of a lower-triangular Toeplitz C is ``(c_0, …, c_{T−i})``,
a prefix of column 1, so ``Σ_n |C_{n,i}|^p ≤ Σ_n |C_{n,1}|^p`` (p = 1, 2).  Hence the L1 and L2
sensitivities are ``S₁Δ`` and ``√S₂ Δ`` with ``S₁ = Σ_{k<T}|c_k|``, ``S₂ = Σ_{k<T} c_k²``.  ∎
(sympy: the sign of a generic term; the plans' columns compared exactly for T ≤ 64.)

Theorem (budget, square root; about the code).  For every T ≤ 2¹⁶ the class's ``s1(T)`` is
``Σ_{k<T} c_k`` and its declared term (``budget_terms``: membership S₁, scale
``laplace_scale = S₁Δ/ε``, the function ``node_scale``/``nodes`` use) gives the L1 sum ε;
for 2¹⁶ < T ≤ 2²⁰ the code's ``(2T−1)⌈√u_{T−1}⌉/2^{P/2}`` (the fixed-point bound below) and
for T > 2²⁰ its ``sqrt_s1_bound = (2n+1)/√(π(n+1/4))`` exceed S₁, so the sum is ≤ ε.
Proof.  ``s1`` at a symbolic T: ``S₁(1) = 1`` and ``S₁(T+1) − S₁(T) = c_T``
(induction); the L1 identity at symbolic T, ε, Δ.  ``S₁(T) = (2T−1)c_{T−1}`` and
``c_k² < 1/(π(k + 1/4))``: ``a_k = c_k²(k+1/4)`` has ``a_{k+1}/a_k − 1 = 1/((2k+2)²(4k+1)) > 0``
(the code's ratio), so ``a_k`` increases strictly to its limit ``1/π`` (Wallis's product,
cited).  The 60-digit evaluation is widened by 10⁻⁴⁰ and rounded up (``dpref.rigorous``:
its precision is an assumption, not proven here).  ∎

Theorem (zCDP budget, square root; about the code).  ``_sqrt_s2_exact(T) = Σ_{k<T} c_k²``
for every T; for 2¹⁴ < T ≤ F = 2²⁰ the fixed-point sum ``s_{T−1}`` of ``sqrt_fixed_state``
(``u_0 = 2^P``, ``u_k = sqrt_fixed_step(u_{k−1}, p², q²)`` with ``p/q = sqrt_ratio(k)``) is at
least ``2^P S₂(T)``, and above F ``S₂(F) + sqrt_s2_tail(T) ≥ S₂(T)``; the class's
``gaussian_terms`` (``σ² = S₂Δ²/(2ρ)``, ``gaussian_variance``) give the L2 sum 2ρ (≤ 2ρ
above the switch), and the Gaussian mechanism is ``s²/(2σ²)``-zCDP (proofs/gaussian.py).
Proof.  The binary splitting: its leaf and merge (evaluated on symbols) keep the invariant
``R/Q = Σ_{k=a}^{b−1} Π_{j=a}^{k} r_j``, ``P/Q = Π r_j``; its split point lies strictly
inside for ``b ≥ a + 2`` (z3, every ``b ≤ 2⁶²``).  The fixed-point step ``⌊u·p/q⌋ + 1``
lies in ``(u·p/q, u·p/q + 1]`` (z3, all integers), so ``2^P c_k² ≤ u_k ≤ 2^P c_k² + k`` by
induction.  The tail: ``tail(K) = 0`` and its step
``ln((4T+1)/(4T−3))/π ≥ 1/(π(T + 1/4)) > c_T²`` (``ln(1+u) ≥ u/(1+u)``: equal at 0, derivative
``u/(1+u)² ≥ 0``).  ∎

Theorem (BLT).  For ``0 < θ_i < 1``, ``ω_i > 0`` and ``Σ ω_i ≤ 1``, ``c_0 = 1``,
``c_k = Σ_i ω_i θ_i^{k−1}`` is positive and non-increasing; ``c(x) = P(x)/D(x)``
(``blt_polynomials``: checked with symbolic θ, ω for 1–3 buffers, label ``checked for d ≤ 3``).
About the code: (release) ``blt_step``, the step of the batch and online releases, computes
``w = C⁻¹z``: evaluated on 16 symbolic buffers with the previous state ``x·S_i(x)``, its
fixed point is ``S_i = W/(1 − θ_i x)``, ``Z = c(x)W`` (fewer buffers are ``ω_j = 0``); the
running sum of w is ``QC⁻¹z``.  (budget) the class's ``s1``/``s2`` on 16 symbolic buffers are
sums over pairs of ``blt_column_sum``'s term, whose step in T is ``w t^{T−1}``, so
``S₁(T+1) − S₁(T) = c_T``, ``S₂(T+1) − S₂(T) = c_T²``, ``S(1) = 1``; the declared terms give
ε and 2ρ at symbolic T, ε, ρ, Δ.  Above ``BLT_EXACT_BITS`` the same function is evaluated at
60 digits, widened and rounded up.  ∎

The plans are checked exactly for every T ≤ 64 (Laplace and Gaussian, with σ_float² ≥ σ²),
and at T = ``limit`` (4096 by default, Laplace): SqrtFactorization by the
Kronecker-substitution convolution, the BLT examples in full, the shipped BLT preset
(Gaussian) for ``B·C = Q`` and the privacy sum — evidence, labelled ``checked``.

References
----------
.. [1] H. Fichtenberger, M. Henzinger, J. Upadhyay. "Constant Matters: Fine-grained Error
   Bound on Differentially Private Continual Observation." ICML 2023.
.. [2] K. Dvijotham, H. B. McMahan, K. Pillutla, T. Steinke, A. Thakurta. "Efficient and
   Near-Optimal Noise Generation for Streaming Differential Privacy." FOCS 2024.
.. [3] M. Bun, T. Steinke. "Concentrated Differential Privacy: Simplifications, Extensions,
   and Lower Bounds." TCC 2016.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from fractions import Fraction
from functools import partial
from types import SimpleNamespace
from typing import Any

import sympy as sp

from dpref.mechanisms import BLT
from dpref.mechanisms.factorization import blt as blt_module
from dpref.mechanisms.factorization import sqrt as sqrt_module
from dpref.strategy import dense_from_toeplitz
from proofs.core import (
    ClaimResult,
    Delta,
    Outcome,
    ProofFailure,
    SymbolicOps,
    T,
    about_code,
    check_identity,
    check_sign,
    checked,
    eps,
    label,
    lemma,
    run_claim,
)
from proofs.participation import participation_claims

__all__ = ["OPS", "PROOFS", "FactorOps"]

OWN_GAUSSIAN_PROOF = True
"""The Gaussian budget is proven here (``zCDP budget``: L2 sum S₂Δ²/σ² = 2ρ, evaluating the
class's own :meth:`gaussian_terms`), not by :mod:`proofs.zcdp`, whose node rule
σ² = |w|Δb/(2ρ) is that of the interval plans: every node of a Toeplitz factorization has
the same variance S₂Δ²/(2ρ)."""

SMALL = 64
"""Every T up to this is checked exactly, both noises."""
SYMBOLIC_BUFFERS = 16
"""BLT's column sums and buffer recursion are evaluated with this many symbolic buffers
(:data:`~dpref.mechanisms.factorization.MAX_BUFFERS`): fewer buffers are the case
``ω_j = 0`` of the extra ones (their terms are ``0·s_j`` and ``0·(…)``, exactly 0)."""


class FactorOps(SymbolicOps):
    """The sympy twin the factorization classes' ``s1``/``s2``/``budget_terms`` take: the
    proofs' :data:`~proofs.core.SYMBOLIC` plus ``binomial`` and ``coefficient_square_sum``."""

    binomial = staticmethod(sp.binomial)

    @staticmethod
    def coefficient_square_sum(ratio: Callable[[Any], tuple[Any, Any]], horizon: Any) -> Any:
        """``Σ_{k<T} (Π_{j=1}^{k} p_j/q_j)²`` for ``(p_j, q_j) = ratio(j)`` (unevaluated)."""
        kk = sp.Symbol("k", integer=True, nonnegative=True)
        jj = sp.Symbol("j", integer=True, positive=True)
        p, q = ratio(jj)
        return sp.Sum(sp.Product(p / q, (jj, 1, kk)) ** 2, (kk, 0, horizon - 1))


OPS = FactorOps()
"""The ops the proofs pass to the factorization classes."""
MP = SimpleNamespace(sqrt=sp.sqrt, pi=sp.pi, mpf=sp.sympify, log=sp.log)
"""The sympy stand-in for the mpmath context the rigorous bounds are evaluated with."""

_k = sp.Symbol("k", integer=True, positive=True)
_n = sp.Symbol("n", integer=True, nonnegative=True)
_x = sp.Symbol("x", real=True)
_c = sp.Symbol("c", positive=True)
_rho = sp.Symbol("ρ", positive=True)


def _identity(lhs: Any, rhs: Any, what: str) -> None:
    """``lhs = rhs``: ``expand(lhs − rhs) == 0``, else ``simplify`` for small expressions;
    failing fast (no counterexample search: the expressions here carry up to 256 terms of
    symbolic buffers, on which a failed ``simplify`` can run for minutes)."""
    diff = sp.expand(sp.sympify(lhs) - sp.sympify(rhs))
    if diff != 0 and sp.count_ops(diff) <= _SIMPLIFY_OPS:
        diff = sp.simplify(diff)
    if diff != 0:
        raise ProofFailure(f"{what}: does not hold (difference {str(diff)[:200]})")


_SIMPLIFY_OPS = 200
"""Largest expression (sympy operation count) :func:`_identity` hands to ``simplify``."""


def _central(k: Any) -> Any:
    """``binom(2k, k)/4^k``: the coefficients of ``(1−x)^{−1/2}`` (the independent side)."""
    return sp.binomial(2 * k, k) / 4**k


def _coefficient_steps() -> list[str]:
    """The code's coefficient step :func:`sqrt_ratio` is the ratio of ``binom(2k,k)/4^k``,
    and its integer form (``N_k = N_{k−1}·4p//q``) divides exactly."""
    p, q = sqrt_module.sqrt_ratio(_k)
    _identity(sp.combsimp(_central(_k) / _central(_k - 1)), p / q, "sqrt_ratio(k)")
    _identity(
        sp.combsimp(4 * sp.binomial(2 * _k - 2, _k - 1) * p / q),
        sp.binomial(2 * _k, _k),
        "4·binom(2k−2, k−1)·p/q = binom(2k, k) (the // is exact)",
    )
    return ["sqrt_ratio(k) = c_k/c_{k−1} of binom(2k,k)/4^k; 4·N_{k−1}·p/q = binom(2k,k) ∈ ℤ"]


def _sqrt_coefficients(cls: type[Any]) -> Outcome:
    m = cls(epsilon=1, horizon=3)
    _coefficient_steps()
    for what, seq in (("strategy", m.strategy_exact(3)), ("decoder", m.decoder_exact(3))):
        if seq.fractions() != [1, Fraction(1, 2), Fraction(3, 8)]:
            raise ProofFailure(f"{cls.__name__}.{what}_exact(3) = {seq.fractions()}")
    # f = (1−x)^{−1/2} solves 2(1−x)f' = f: coefficients 2(k+1)a_{k+1} = (2k+1)a_k, which
    # is the code's step (k+1 ↦ sqrt_module.sqrt_ratio(k+1))
    f = (1 - _x) ** sp.Rational(-1, 2)
    _identity(2 * (1 - _x) * sp.diff(f, _x), f, "2(1−x)f' = f")
    p, q = sqrt_module.sqrt_ratio(_n + 1)
    _identity(2 * (_n + 1) * _c * p / q - (2 * _n + 1) * _c, 0, "coefficient recurrence")
    _identity(f * f, 1 / (1 - _x), "((1−x)^{−1/2})²")
    return about_code(
        "the code's c_k are binom(2k,k)/4^k, the coefficients of (1−x)^{−1/2}, for every k; "
        "C = B and c(x)² = 1/(1−x), so C·C = Q for every T",
        evaluates=[
            sqrt_module.sqrt_ratio,
            sqrt_module.sqrt_coefficients,
            cls.strategy_exact,
            cls.decoder_exact,
        ],
        detail="induction on k: the class's c_0 = 1 (strategy and decoder), each step "
        "sqrt_ratio(k) (symbolic k) is binom(2k,k)/4^k ÷ binom(2k−2,k−1)/4^(k−1) and the "
        "recurrence of (1−x)^{−1/2} (2(1−x)f' = f); the integer step divides exactly",
    )


def _columns() -> Outcome:
    ck = sp.Symbol("c_k", real=True)
    check_sign(sp.Abs(ck), "nonnegative", "|c_k|")
    check_sign(ck**2, "nonnegative", "c_k²")
    return lemma(
        "max_i Σ_n |C_ni|^p = Σ_{k<T} |c_k|^p (p = 1, 2) for lower-triangular Toeplitz C",
        "column i is a prefix of column 1; the rest of column 1 is a sum of non-negative terms "
        "(the plans' columns are compared exactly in 'plan = closed forms')",
    )


def _wallis_steps() -> str:
    """``a_k = c_k²(k+1/4)`` increases strictly (to 1/π), so ``c_k² < 1/(π(k+1/4))``."""
    diff = sp.expand((2 * _n + 1) ** 2 * (4 * _n + 5) - (2 * _n + 2) ** 2 * (4 * _n + 1))
    _identity(diff, 1, "(2k+1)²(4k+5) − (2k+2)²(4k+1)")
    p, q = sqrt_module.sqrt_ratio(
        _n + 1
    )  # a_{k+1}/a_k = (p/q)²·(4k+5)/(4k+1), with the code's ratio
    _identity(
        (p / q) ** 2 * (4 * _n + 5) / (4 * _n + 1) - 1,
        diff / ((2 * _n + 2) ** 2 * (4 * _n + 1)),
        "a_{k+1}/a_k − 1",
    )
    return (
        "a_k = c_k²(k+1/4) strictly increases (a_{k+1}/a_k − 1 = 1/((2k+2)²(4k+1)), the "
        "code's ratio) to 1/π (Wallis's product, cited), so c_k² < 1/(π(k+1/4))"
    )


def _sqrt_budget(cls: type[Any]) -> Outcome:
    m = cls(epsilon=1, horizon=16)
    _coefficient_steps()
    # S₁ of the class, at a symbolic T: Σ_{k<T} c_k by induction on T
    s1 = partial(m.s1, ops=OPS)
    _identity(s1(1), 1, "S₁(1) = c_0")
    _identity(sp.combsimp(s1(T + 1) - s1(T)), _central(T), "S₁(T+1) − S₁(T) = c_T")
    terms = m.budget_terms(OPS, horizon=T, epsilon=eps, sensitivity=Delta)
    if len(terms) != 1:
        raise ProofFailure(f"{m!r}: {len(terms)} budget terms, expected the column of item 1")
    term = terms[0]
    _identity(term.membership, s1(T), "membership = Σ_{k<T} c_k (item 1's weights)")
    _identity(s1(T) * Delta / term.scale, eps, "L1 sum Σ_k c_kΔ/b")
    # above the switch point: the bound the code evaluates, at a symbolic n = T − 1
    wallis = _wallis_steps()
    bound = sqrt_module.sqrt_s1_bound(T - 1, MP)
    _identity(bound**2 * sp.pi * (T - sp.Rational(3, 4)), (2 * T - 1) ** 2, "bound²")
    _identity(sp.combsimp(s1(T) / _central(T - 1)), 2 * T - 1, "S₁(T) = (2T−1)c_{T−1} (< bound)")
    switch = sqrt_module.SQRT_EXACT_S1
    if sqrt_module.sqrt_s1(switch) != sqrt_module.sqrt_s1_closed(switch):
        raise ProofFailure(f"sqrt_s1({switch}) is not the exact closed form")
    above = switch + 1
    exact_above = sqrt_module.sqrt_s1_closed(above)
    if not exact_above <= sqrt_module.sqrt_s1(above) <= exact_above * (1 + Fraction(1, 10**15)):
        raise ProofFailure(f"sqrt_s1({above}) is not a tight upper bound of S₁")
    fixed = _fixed_steps()
    F = sqrt_module.SQRT_FIXED_STEPS
    if not m.node_scale() == m.design_scale() == m.budget_terms()[0].scale:
        raise ProofFailure(f"{m!r}: node_scale, design_scale and budget_terms disagree")
    return about_code(
        "L1 sum = S₁Δ/b = ε for every T ≤ 2¹⁶ (S₁ exact), ≤ ε above (S₁ a rigorous bound)",
        evaluates=[
            cls.budget_terms,
            cls.laplace_scale,
            cls.s1,
            sqrt_module.sqrt_s1_closed,
            sqrt_module.sqrt_fixed_step,
            sqrt_module.sqrt_s1_bound,
        ],
        detail="the class's s1 at a symbolic T is Σ_{k<T} binom(2k,k)/4^k (induction: S₁(1) = 1, "
        "step c_T) and budget_terms' membership and scale (laplace_scale) give L1 = ε for "
        f"symbolic T, ε, Δ; {switch} < T ≤ {F}: (2T−1)⌈√u_{{T−1}}⌉/2^(P/2) ≥ (2T−1)c_{{T−1}} "
        f"= S₁ ({fixed}: u_k ≥ 2^P c_k²); T > {F}: sqrt_s1_bound at a symbolic n = "
        "(2n+1)/√(π(n+1/4)) "
        f"> (2n+1)c_n = S₁ ({wallis}); the 60-digit evaluation is widened by 10⁻⁴⁰ and "
        f"rounded up (dpref.rigorous); dispatch checked at T = {switch} and {switch + 1}; "
        "the release's node_scale and nodes() read laplace_scale",
        value="ε",
    )


def _split_steps() -> str:
    """The binary splitting of :func:`_sqrt_s2_exact` sums ``Σ_{k=a}^{b−1} Π_{j=a}^{k} r_j``
    (``r_j = (p_j/q_j)²``, the code's ratio squared): leaf, merge and split point."""
    from proofs.smt import Z3Ops, prove_smt

    a = sp.Symbol("a", integer=True, positive=True)
    p, q, r = sqrt_module._split_leaf(a)
    ratio = sp.Rational(1, 1) * sqrt_module.sqrt_ratio(a)[0] / sqrt_module.sqrt_ratio(a)[1]
    _identity(p / q, ratio**2, "leaf product P/Q = (c_a/c_{a−1})²")
    _identity(r / q, ratio**2, "leaf sum R/Q = its one term")
    p1, q1, r1, p2, q2, r2 = sp.symbols("P_1 Q_1 R_1 P_2 Q_2 R_2", positive=True)
    pm, qm, rm = sqrt_module._split_merge((p1, q1, r1), (p2, q2, r2))
    _identity(pm / qm, (p1 / q1) * (p2 / q2), "merged product")
    _identity(rm / qm, r1 / q1 + (p1 / q1) * (r2 / q2), "merged sum")
    ops = Z3Ops()
    lo, hi = ops.var("a"), ops.var("b")
    mid = sqrt_module._split_mid(lo, hi)
    how = prove_smt(
        ops.z3.And(ops.lt(lo, mid), ops.lt(mid, hi)),
        "a < ⌊(a+b)/2⌋ < b",
        assumptions=[ops.le(1, lo), ops.le(lo, 2**62), ops.le(lo + 2, hi), ops.le(hi, 2**62)],
    )
    return (
        "binary splitting: leaf (P/Q = R/Q = r_a) and merge (R/Q = R₁/Q₁ + (P₁/Q₁)(R₂/Q₂), "
        f"P/Q = P₁P₂/Q₁Q₂) by sympy, the split point a < mid < b for b ≥ a+2 by {how}"
    )


class _IntTerm:
    """A z3 integer term for code written with ``*``, ``//`` and ``+`` on ints
    (``//`` is z3's integer division: the floor for a positive divisor)."""

    def __init__(self, term: Any) -> None:
        self.term = term

    @staticmethod
    def _of(other: Any) -> Any:
        return other.term if isinstance(other, _IntTerm) else other

    def __mul__(self, other: Any) -> _IntTerm:
        return _IntTerm(self.term * self._of(other))

    def __floordiv__(self, other: Any) -> _IntTerm:
        return _IntTerm(self.term / self._of(other))

    def __add__(self, other: Any) -> _IntTerm:
        return _IntTerm(self.term + self._of(other))


def _fixed_steps() -> str:
    """The fixed-point step :func:`sqrt_fixed_step` (``⌊u·p/q⌋ + 1``) exceeds ``u·p/q`` by at
    most 1, for all integers u, p ≥ 0, q ≥ 1 (z3 over unbounded integers): by induction
    ``2^P c_k² ≤ u_k ≤ 2^P c_k² + k`` with ``p/q = (c_k/c_{k−1})²``, the squared
    :func:`sqrt_ratio` the code steps by."""
    from proofs.smt import prove_smt, require_z3

    z3 = require_z3()
    u, p, q = z3.Ints("u p q")
    nxt = sqrt_module.sqrt_fixed_step(_IntTerm(u), _IntTerm(p), _IntTerm(q)).term
    how = prove_smt(
        z3.And(nxt * q > u * p, nxt * q <= u * p + q),
        "u·p/q < sqrt_fixed_step(u, p, q) ≤ u·p/q + 1",
        assumptions=[u >= 0, p >= 0, q >= 1],
    )
    return f"fixed-point step: u·p/q < ⌊u·p/q⌋ + 1 ≤ u·p/q + 1 for all integers ({how})"


def _sqrt_zcdp(cls: type[Any]) -> Outcome:
    m = cls(rho=Fraction(1, 2), horizon=16)
    _coefficient_steps()
    split = _split_steps()
    # the class's Gaussian declaration at a symbolic T, ρ, Δ
    terms = m.gaussian_terms(OPS, horizon=T, rho=_rho, sensitivity=Delta)
    if len(terms) != 1:
        raise ProofFailure(f"{m!r}: {len(terms)} Gaussian terms, expected one column")
    s2 = OPS.coefficient_square_sum(sqrt_module.sqrt_ratio, T)
    _identity(terms[0].membership, s2, "membership = Σ_{k<T} c_k² (item 1's weights²)")
    _identity(s2 * Delta**2 / terms[0].scale, 2 * _rho, "L2 sum Σ_k c_k²Δ²/σ²")
    # above the switch: the fixed-point sums up to F, then S₂(F) + the code's tail ≥ S₂(T)
    K = sqrt_module.SQRT_EXACT_S2
    F = sqrt_module.SQRT_FIXED_STEPS
    fixed = _fixed_steps()
    wallis = _wallis_steps()
    tail = partial(sqrt_module.sqrt_s2_tail, start=sp.Integer(F), ns=MP)
    _identity(tail(sp.Integer(F)), 0, "tail(F) = 0")
    step = sp.expand_log(tail(T + 1) - tail(T), force=True)
    _identity(step, sp.log((4 * T + 1) / (4 * T - 3)) / sp.pi, "tail step")
    u = sp.Symbol("u", nonnegative=True)  # ln(1+u) ≥ u/(1+u): 0 at u = 0, derivative ≥ 0
    g = sp.log(1 + u) - u / (1 + u)
    _identity(g.subs(u, 0), 0, "g(0)")
    check_sign(sp.diff(g, u), "nonnegative", "g'(u) = u/(1+u)²")
    uu = 4 / (4 * T - 3)
    _identity(1 + uu, (4 * T + 1) / (4 * T - 3), "1 + u")
    _identity(uu / (1 + uu), 1 / (T + sp.Rational(1, 4)), "u/(1+u)")
    for horizon in (K, K + 1, 2 * K):
        exact = sqrt_module._sqrt_s2_exact(horizon)
        got = sqrt_module.sqrt_s2(horizon)
        tight = exact * (1 + Fraction(1, 10**18))
        if (horizon == K and got != exact) or not exact <= got <= tight:
            raise ProofFailure(f"sqrt_s2({horizon}) = {got} vs exact {exact}")
    if m.node_scale() != m.gaussian_terms()[0].scale or m.unit_variance() != m.node_scale():
        raise ProofFailure(f"{m!r}: node_scale, unit_variance and gaussian_terms disagree")
    if Fraction(m.noise_multiplier(Fraction(1))) ** 2 < m.node_scale():
        raise ProofFailure(f"{m!r}: σ_float² < σ²")
    return about_code(
        "L2 sum = S₂Δ²/σ² = 2ρ for every T ≤ 2¹⁴ (S₂ exact), ≤ 2ρ above: ρ-zCDP",
        evaluates=[
            cls.gaussian_terms,
            cls.gaussian_variance,
            sqrt_module._split_leaf,
            sqrt_module._split_merge,
            sqrt_module._split_mid,
            sqrt_module.sqrt_fixed_step,
            sqrt_module.sqrt_s2_tail,
        ],
        detail=f"{split}, so _sqrt_s2_exact(T) = 1 + Σ_{{k=1}}^{{T−1}} c_k² for every T; the "
        f"class's gaussian_terms at symbolic T, ρ, Δ give L2 = 2ρ; {K} < T ≤ {F}: {fixed}, so "
        "the fixed-point sum s_{T−1} ≥ 2^P·S₂(T), rounded up; above "
        f"{F}: sqrt_s2_tail(F) = 0 and its step ln((4T+1)/(4T−3))/π ≥ 1/(π(T+1/4)) > c_T² "
        f"(ln(1+u) ≥ u/(1+u); {wallis}); dispatch checked at T = {K}, {K + 1}, {2 * K} "
        "(above S₂ by < 10⁻¹⁸ relative); "
        "the Gaussian mechanism is s²/(2σ²)-zCDP and composes (proofs/gaussian.py)",
        value="2ρ",
    )


def _blt_validity() -> Outcome:
    u = sp.Symbol("u", positive=True)  # θ = u/(1+u) ranges over (0, 1)
    om = sp.Symbol("ω", positive=True)
    theta = u / (1 + u)
    check_sign(om * theta ** (_k - 1) * (1 - theta), "positive", "ω θ^{k−1}(1−θ), 0 < θ < 1")
    for d in (1, 2, 3):
        thetas = sp.symbols(f"t1:{d + 1}", positive=True)
        omegas = sp.symbols(f"w1:{d + 1}", positive=True)
        P, D = blt_module.blt_polynomials(thetas, omegas)
        p_x = sum(sp.sympify(v) * _x**j for j, v in enumerate(P))
        d_x = sum(sp.sympify(v) * _x**j for j, v in enumerate(D))
        c_x = 1 + sum(w * _x / (1 - t * _x) for t, w in zip(thetas, omegas, strict=True))
        check_identity(p_x, d_x * c_x, f"P = D·c with {d} buffers")
        check_identity((d_x / ((1 - _x) * p_x)) * (p_x / d_x), 1 / (1 - _x), "b(x)c(x) = 1/(1−x)")
    return checked(
        "d",
        3,
        "0<θ_i<1, ω_i>0, Σω_i≤1 ⇒ c positive non-increasing; blt_polynomials gives c = P/D; "
        "b(x)c(x) = 1/(1−x)",
        "c_k − c_{k+1} = Σ ω_i θ_i^{k−1}(1−θ_i) > 0 (lemma); the plan's generating functions "
        "(blt_polynomials) evaluated with symbolic θ, ω for 1–3 buffers, not for every d",
    )


def _symbolic_blt(m: Any) -> Any:
    """A copy of ``m`` whose θ and ω are :data:`SYMBOLIC_BUFFERS` positive symbols (the
    class's own methods then run on them)."""
    proxy = copy.copy(m)
    proxy.theta = sp.symbols(f"θ1:{SYMBOLIC_BUFFERS + 1}", positive=True)
    proxy.omega = sp.symbols(f"ω1:{SYMBOLIC_BUFFERS + 1}", positive=True)
    return proxy


def _blt_coefficient(proxy: Any, k: Any) -> Any:
    """``c_k = Σ_i ω_i θ_i^{k−1}`` (k ≥ 1): the coefficient of x^k in ``1 + Σ ω_i x/(1−θ_i x)``."""
    return sum((w * t ** (k - 1) for t, w in zip(proxy.theta, proxy.omega, strict=True)), 0)


def _blt_release(cls: type[Any]) -> Outcome:
    m = cls(epsilon=1, horizon=16)
    proxy = _symbolic_blt(m)
    W = sp.Symbol("W")
    states = [W / (1 - t * _x) for t in proxy.theta]
    c_x = 1 + sum(w * _x / (1 - t * _x) for t, w in zip(proxy.theta, proxy.omega, strict=True))
    w_out, new = blt_module.blt_step([_x * s for s in states], W * c_x, proxy.theta, proxy.omega)
    _identity(sp.expand(w_out - W), 0, "w = W when z = c(x)·W")
    for i, (got, want, theta) in enumerate(zip(new, states, proxy.theta, strict=True)):
        diff = sp.expand((got - want) * (1 - theta * _x))  # the other buffers cancel here
        if diff != 0 and sp.count_ops(diff) <= _SIMPLIFY_OPS:
            diff = sp.cancel(diff)
        if diff != 0:
            raise ProofFailure(f"buffer {i + 1}: s_i ≠ W/(1 − θ_i x)")
    return about_code(
        "the release's buffer recursion computes w = C⁻¹z for c(x) = 1 + Σ_i ω_i x/(1−θ_i x), "
        "so out = Qx + QC⁻¹z = B(Cx + z) with B = QC⁻¹, for every T and every θ, ω (d ≤ 16)",
        evaluates=[blt_module.blt_step],
        detail=f"blt_step evaluated on {SYMBOLIC_BUFFERS} symbolic buffers with the previous "
        "state x·S_i(x) (generating functions): its fixed point is S_i = W/(1−θ_i x) and "
        "Z = c(x)·W; fewer buffers are ω_j = 0; combine (batch, vectorised) and the online "
        "counter step by blt_step and sum w (1/(1−x))",
    )


def _blt_budget(cls: type[Any]) -> Outcome:
    m = cls(epsilon=1, horizon=16)
    proxy = _symbolic_blt(m)
    w, t = sp.symbols("w t", positive=True)
    one = blt_module.blt_column_sum([(w, t)], T - 1, OPS.number) - 1
    _identity(one.subs(T, 1), 0, "one pair at T = 1")
    _identity(sp.simplify(one.subs(T, T + 1) - one - w * t ** (T - 1)), 0, "one pair's step")
    for power, fn in ((1, proxy.s1), (2, proxy.s2)):
        pairs = proxy._pairs(power, OPS.number)
        termwise = 1 + sum((one.xreplace({w: a, t: b}) for a, b in pairs), sp.Integer(0))
        _identity(sp.expand(fn(T, OPS) - termwise), 0, f"S{power} is a sum over pairs")
        step = sum((a * b ** (T - 1) for a, b in pairs), sp.Integer(0))
        _identity(
            sp.expand(step - _blt_coefficient(proxy, T) ** power), 0, f"S{power} step = c_T^{power}"
        )
    terms = m.budget_terms(OPS, horizon=T, epsilon=eps, sensitivity=Delta)
    s1 = m.s1(T, OPS)
    _identity(terms[0].membership, s1, "membership = S₁")
    _identity(s1 * Delta / terms[0].scale, eps, "L1 sum S₁Δ/b")
    g = m.gaussian_terms(OPS, horizon=T, rho=_rho, sensitivity=Delta)
    s2 = m.s2(T, OPS)
    _identity(g[0].membership, s2, "Gaussian membership = S₂")
    _identity(s2 * Delta**2 / g[0].scale, 2 * _rho, "L2 sum S₂Δ²/σ²")
    one_buffer = cls(epsilon=1, horizon=16, theta="1/2", omega="1/2")
    switch = blt_module.BLT_EXACT_BITS // 4  # θ = 1/2: 2·2 bits per power of θ_iθ_j
    if not one_buffer._sums_exact(switch) or one_buffer._sums_exact(switch + 1):
        raise ProofFailure(f"{one_buffer!r}: the exact sums do not switch at T = {switch}")
    for horizon in (switch, switch + 1):
        for exact, upper in ((one_buffer.s1, 1), (one_buffer.s2, 2)):
            got = exact(horizon)
            want = blt_module.blt_column_sum(one_buffer._pairs(upper), horizon - 1, lambda v: v)
            if not want <= got <= want * (1 + Fraction(1, 10**15)):
                raise ProofFailure(f"S{upper}({horizon}) = {float(got)} vs {float(want)}")
    return about_code(
        "S₁ = Σ_{k<T} c_k, S₂ = Σ_{k<T} c_k² for every T and θ, ω (d ≤ 16); L1 sum = ε and "
        "L2 sum = 2ρ while the sums are exact, ≤ above",
        evaluates=[
            cls.s1,
            cls.s2,
            cls.budget_terms,
            cls.gaussian_terms,
            blt_module.blt_pairs,
            blt_module.blt_column_sum,
        ],
        detail=f"the class's s1/s2 on {SYMBOLIC_BUFFERS} symbolic buffers (fewer: ω_j = 0) are "
        "1 + Σ over pairs of blt_column_sum's term, whose step at T is w·t^(T−1) (sympy), so "
        "the step of S₁ is c_T and of S₂ is c_T² (c_k = Σ ω_iθ_i^(k−1), the coefficients "
        "the release inverts); budget_terms and gaussian_terms at symbolic T, ε, ρ, Δ; "
        "above BLT_EXACT_BITS the same blt_column_sum at 60 digits, widened and rounded "
        "up (checked against the exact sum on both sides of the switch, θ = ω = 1/2)",
        value="ε / 2ρ",
    )


def _plan_check(m: Any, horizon: int, variance: bool = True) -> str | None:
    report = m.plan(horizon).check(m.variance_exact(horizon) if variance else None)
    if not report.passed:
        return f"{m!r}: {report}"
    expected = m.expected_privacy_sum(horizon)
    if expected is not None and report.privacy_sum != expected:
        return f"{m!r}: privacy sum {report.privacy_sum} ≠ {expected}"
    return None


def _build(cls: type[Any], kwargs: dict[str, Any], horizon: int) -> Any:
    return cls(horizon=horizon, **kwargs)


def _dense_columns(cls: type[Any], small: int) -> None:
    """Every column of the dense C (every example, both p) is at most column 1's."""
    for ex in cls.examples:
        for horizon in range(1, small + 1, 7):
            kw: dict[str, Any] = dict(ex.params)
            plan = dense_from_toeplitz(cls(epsilon=1, horizon=horizon, **kw).plan(horizon))
            for squares in (False, True):
                sums = plan.column_sums(squares)
                if max(sums) != sums[0]:
                    raise ProofFailure(f"T={horizon}: a column beats column 1")


def _exhaustive(cls: type[Any], limit: int) -> Outcome:
    small = min(SMALL, limit)
    builders: list[Callable[[int], Any]] = []
    for ex in cls.examples:
        kw: dict[str, Any] = dict(ex.params)
        builders.append(partial(_build, cls, {"epsilon": Fraction(7, 10), **kw}))
        builders.append(partial(_build, cls, {"rho": Fraction(1, 2), **kw}))
    for horizon in range(1, small + 1):
        for build in builders:
            m = build(horizon)
            bad = _plan_check(m, horizon)
            if bad:
                raise ProofFailure(bad)
            if m.gaussian and Fraction(m.noise_multiplier(Fraction(1))) ** 2 < m.node_scale():
                raise ProofFailure(f"{m!r}: σ_float² < σ²")
    _dense_columns(cls, small)
    extra = ""
    if limit > small:
        for build in builders[::2]:  # Laplace (the Gaussian plans differ only in the scale)
            bad = _plan_check(build(limit), limit)
            if bad:
                raise ProofFailure(bad)
        if cls is BLT:
            for m in (BLT(rho=Fraction(1, 2), horizon=limit),):
                bad = _plan_check(m, limit, variance=False)
                if bad:
                    raise ProofFailure(bad)
            extra = "; the shipped preset: B·C = Q and privacy sum (no per-step variance)"
        extra = f"; every example at T = {limit} (Laplace){extra}"
    return checked(
        "T",
        small,
        "B·C = Q, causal, privacy sum = ε or 2ρ, variance = v·Σ_{k<t} b_k², σ_float² ≥ σ², "
        "max column sum = column 1's",
        f"every T ≤ {small}, Laplace and Gaussian; dense columns every 7th T{extra}",
    )


def _prove_sqrt(cls: type[Any], limit: int) -> list[ClaimResult]:
    """Prove the SqrtFactorization theorems (see the module docstring)."""
    name = label(cls)
    return [
        run_claim(name, "square root", lambda: _sqrt_coefficients(cls)),
        run_claim(name, "columns", _columns),
        run_claim(name, "budget", lambda: _sqrt_budget(cls)),
        run_claim(name, "zCDP budget", lambda: _sqrt_zcdp(cls)),
        run_claim(name, "plan = closed forms", lambda: _exhaustive(cls, limit)),
        *participation_claims(cls, limit),  # proofs/participation.py
    ]


def _prove_blt(cls: type[Any], limit: int) -> list[ClaimResult]:
    """Prove the BLT theorems (see the module docstring)."""
    name = label(cls)
    return [
        run_claim(name, "valid strategy", _blt_validity),
        run_claim(name, "release = B(Cx + z)", lambda: _blt_release(cls)),
        run_claim(name, "columns", _columns),
        run_claim(name, "budget", lambda: _blt_budget(cls)),
        run_claim(name, "plan = closed forms", lambda: _exhaustive(cls, limit)),
        *participation_claims(cls, limit),  # proofs/participation.py
    ]


PROOFS: dict[str, Callable[[type[Any], int], list[ClaimResult]]] = {
    "SqrtFactorization": _prove_sqrt,
    "BLT": _prove_blt,
}
"""Class name → proof function ``(cls, limit) -> list[ClaimResult]`` (see proofs.registry)."""
