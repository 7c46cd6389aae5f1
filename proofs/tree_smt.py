"""SMT and symbolic ops for the level facts of the tree families (proofs/trees.py, elders.py).

The tree counters' level counts and release rules (:mod:`dpref.mechanisms.tree_arith`,
:func:`dpref.mechanisms.elders.elders_levels`) are sums of indicators ``[k^j ≤ T]`` written
over an ``ops`` namespace.  Two namespaces evaluate the very same functions:

* :class:`CountZ3Ops` — z3 bit-vectors: T is a 64-bit variable, the indicator sums are
  8-bit (a count of at most 63 levels; a narrow adder keeps the queries small), and the
  comparisons zero-extend the narrower side.  :func:`prove_smt` then proves a statement
  for every ``1 ≤ T ≤ 2⁶²``.
* :class:`PiecewiseOps` — sympy: ``[k^j ≤ T]`` becomes ``Piecewise((1, k^j ≤ T), (0, True))``,
  so a declaration (``budget_terms``) evaluated at a symbolic T is an exact expression in T;
  :func:`to_z3` translates its integer part for z3.

:func:`levels_characterised` states the independent derivation of a level count: L is the
number of j ≥ 0 for which level j is usable, i.e. ``(j < L) ⟺ usable(j)`` for every j.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import sympy as sp

from dpref.mechanisms.base import MAX_HORIZON
from proofs.core import Delta, SymbolicOps, T, check_identity, eps
from proofs.smt import Z3Ops, prove_smt, require_z3

__all__ = [
    "COUNT_BITS",
    "CountZ3Ops",
    "FreeEnd",
    "PiecewiseOps",
    "declared_budget_steps",
    "horizon_range",
    "indicators_as_symbols",
    "levels_characterised",
    "prove_for_all_T",
    "to_z3",
]

COUNT_BITS = 8
"""Width of the level-count bit-vectors (counts ≤ 63 < 2⁸)."""


class CountZ3Ops(Z3Ops):
    """:class:`proofs.smt.Z3Ops` with small counts: ``ite`` of two ints gives an 8-bit
    value; ``le``/``lt``/``ite`` zero-extend the narrower operand; ``and_`` is ``z3.And``."""

    def _pair(self, a: Any, b: Any) -> tuple[Any, Any]:
        z3 = self.z3
        widths = [x.size() for x in (a, b) if z3.is_bv(x)]
        w = max(widths) if widths else 64
        out = []
        for x in (a, b):
            x = z3.BitVecVal(x, w) if isinstance(x, int) else x
            if x.size() < w:
                x = z3.ZeroExt(w - x.size(), x)
            out.append(x)
        return out[0], out[1]

    def le(self, a: Any, b: Any) -> Any:
        """Unsigned ``a ≤ b``."""
        x, y = self._pair(a, b)
        return self.z3.ULE(x, y)

    def lt(self, a: Any, b: Any) -> Any:
        """Unsigned ``a < b``."""
        x, y = self._pair(a, b)
        return self.z3.ULT(x, y)

    def eq(self, a: Any, b: Any) -> Any:
        """``a = b``."""
        x, y = self._pair(a, b)
        return x == y

    def ite(self, cond: Any, a: Any, b: Any) -> Any:
        """``a if cond else b`` (8-bit when both are ints)."""
        z3 = self.z3
        if isinstance(a, int) and isinstance(b, int):
            return z3.If(cond, z3.BitVecVal(a, COUNT_BITS), z3.BitVecVal(b, COUNT_BITS))
        x, y = self._pair(a, b)
        return z3.If(cond, x, y)

    def and_(self, a: Any, b: Any) -> Any:
        """``a ∧ b``."""
        return self.z3.And(a, b)


class FreeEnd:
    """A symbolic node end whose divisibility by each power is a fresh z3 Boolean: code
    that tests ``end % size == 0`` is then proven for every pattern of divisibility, hence
    for every end."""

    def __init__(self, z3: Any, name: str = "e") -> None:
        self._z3 = z3
        self._name = name

    def __mod__(self, size: int) -> _Divides:
        return _Divides(self._z3.Bool(f"{self._name}_div_{size}"))


class _Divides:
    def __init__(self, flag: Any) -> None:
        self.flag = flag

    def __eq__(self, other: object) -> Any:
        if other != 0:
            raise TypeError("FreeEnd supports only 'end % size == 0'")
        return self.flag

    __hash__ = None  # type: ignore[assignment]


class PiecewiseOps(SymbolicOps):
    """:data:`proofs.core.SYMBOLIC` with ``le``/``lt``/``ite``/``and_``: indicators become
    ``Piecewise`` expressions in the symbolic horizon."""

    @staticmethod
    def le(a: Any, b: Any) -> Any:
        """``a ≤ b``."""
        return sp.Le(sp.sympify(a), sp.sympify(b))

    @staticmethod
    def lt(a: Any, b: Any) -> Any:
        """``a < b``."""
        return sp.Lt(sp.sympify(a), sp.sympify(b))

    @staticmethod
    def ite(cond: Any, a: Any, b: Any) -> Any:
        """``a if cond else b``."""
        return sp.Piecewise((sp.sympify(a), cond), (sp.sympify(b), True))

    @staticmethod
    def and_(a: Any, b: Any) -> Any:
        """``a ∧ b``."""
        return sp.And(a, b)


def to_z3(expr: Any, env: dict[Any, Any], ops: CountZ3Ops) -> Any:
    """The z3 term of an integer sympy expression built from integers, the symbols of
    ``env``, sums and products, ``Piecewise`` and comparisons (raises ProofFailure-free
    ``TypeError`` on anything else: the caller's claim then fails)."""
    z3 = ops.z3
    e = sp.sympify(expr)
    if e in env:
        return env[e]
    if e.is_Integer:
        return int(e)
    if isinstance(e, sp.Add | sp.Mul):
        parts = [to_z3(a, env, ops) for a in e.args]
        acc = parts[0]
        for p in parts[1:]:
            if isinstance(acc, int) and isinstance(p, int):
                acc = acc + p if isinstance(e, sp.Add) else acc * p
                continue
            x, y = ops._pair(acc, p)
            acc = x + y if isinstance(e, sp.Add) else x * y
        return acc
    if isinstance(e, sp.Piecewise):
        out = to_z3(e.args[-1][0], env, ops)
        for value, cond in reversed(e.args[:-1]):
            out = ops.ite(to_z3(cond, env, ops), to_z3(value, env, ops), out)
        return out
    if e is sp.true:
        return z3.BoolVal(True)
    if e is sp.false:
        return z3.BoolVal(False)
    if isinstance(e, sp.LessThan):
        return ops.le(to_z3(e.lhs, env, ops), to_z3(e.rhs, env, ops))
    if isinstance(e, sp.StrictLessThan):
        return ops.lt(to_z3(e.lhs, env, ops), to_z3(e.rhs, env, ops))
    if isinstance(e, sp.GreaterThan):
        return ops.le(to_z3(e.rhs, env, ops), to_z3(e.lhs, env, ops))
    if isinstance(e, sp.StrictGreaterThan):
        return ops.lt(to_z3(e.rhs, env, ops), to_z3(e.lhs, env, ops))
    if isinstance(e, sp.And):
        return z3.And(*[to_z3(a, env, ops) for a in e.args])
    raise TypeError(f"to_z3: cannot translate {e!r}")


def horizon_range(ops: CountZ3Ops, T: Any) -> list[Any]:
    """The assumptions ``1 ≤ T ≤ 2⁶²`` (:data:`dpref.mechanisms.base.MAX_HORIZON`)."""
    return [ops.le(1, T), ops.le(T, MAX_HORIZON)]


def levels_characterised(ops: CountZ3Ops, L: Any, usable: Callable[[int], Any], top: int) -> Any:
    """``(j < L) ⟺ usable(j)`` for ``j = 0 … top − 1``, and ``L ≤ top``: L counts exactly the
    usable levels (``usable(j)`` must be false for ``j ≥ top`` — the caller picks ``top``
    past the range)."""
    z3 = ops.z3
    conds = [ops.lt(j, L) == usable(j) for j in range(top)]
    conds.append(ops.le(L, top))
    return z3.And(*conds)


def prove_for_all_T(statement: Any, what: str, ops: CountZ3Ops, T: Any) -> str:
    """:func:`proofs.smt.prove_smt` of ``statement`` for every ``1 ≤ T ≤ 2⁶²``."""
    require_z3()
    return prove_smt(statement, what, assumptions=horizon_range(ops, T))


def indicators_as_symbols(expr: Any) -> Any:
    """``expr`` with each ``Piecewise`` indicator replaced by a fresh non-negative integer
    symbol: an identity that holds for every value of those symbols holds for the code's
    indicators (and sympy decides it without case splits)."""
    e = sp.sympify(expr)
    atoms = sorted(e.atoms(sp.Piecewise), key=sp.default_sort_key)
    subs = {a: sp.Symbol(f"I_{n}", integer=True, nonnegative=True) for n, a in enumerate(atoms)}
    return e.xreplace(subs)


def declared_budget_steps(
    m: Any, k: int, T_: Any, usable: Callable[[int], Any], top: int, what: str, ops: CountZ3Ops
) -> None:
    """The symbolic part of a tree's ``budget`` claim, on the mechanism ``m`` of arity ``k``.

    ``m.budget_terms`` is evaluated at symbolic T, ε, Δ (:class:`PiecewiseOps`: its level
    count is a sum of indicators); ``Σ membership·Δ/scale`` must simplify to ε with the
    indicators free, and the declared membership, translated to z3, must be the count
    characterised by ``usable``/``top`` (over the z3 horizon ``T_``) for every
    ``1 ≤ T ≤ 2⁶²`` (``what`` names it).
    Raises :class:`~proofs.core.ProofFailure` otherwise."""
    terms = m.budget_terms(PiecewiseOps(), horizon=T, epsilon=eps, sensitivity=Delta)
    total = sum((t.membership * Delta / t.scale for t in terms), sp.Integer(0))
    check_identity(indicators_as_symbols(total), eps, f"k={k}: Σ membership·Δ/scale")
    count = sum((sp.sympify(t.membership) for t in terms), sp.Integer(0))
    declared = to_z3(count, {T: T_}, ops)
    prove_for_all_T(
        levels_characterised(ops, declared, usable, top),
        f"{m!r}: the declared membership is {what}",
        ops,
        T_,
    )
