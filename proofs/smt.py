"""SMT proofs of integer facts for every T in range: the z3 twin of the mechanisms' ops.

Membership and level facts are integer and bit arithmetic.  A claim proves them for
*every* ``1 ≤ T ≤ 2⁶²`` (:data:`dpref.mechanisms.base.MAX_HORIZON`) by evaluating the
mechanism's own functions with :class:`Z3Ops` — the same interface as
:data:`dpref.mechanisms.base.EXACT` (``floor_log2``, ``popcount``, ``number``) over
64-bit bit-vectors — and asking z3 whether the negation of the statement is
satisfiable (:func:`prove_smt`).  ``unsat`` is a proof; ``sat`` comes with a
counterexample, ``unknown`` or a time-out is a failure.

The primitives themselves are proven against their definitions by
:func:`primitive_lemmas` (``2^L ≤ x < 2^{L+1}`` for ``L = floor_log2(x)``; popcount as
the sum of the bits), so a claim that evaluates code through them rests on the code,
the primitives' lemmas, and z3.

z3 is an optional dependency (the ``prove`` extra, also in ``dev``): without it every
claim that needs it fails with the install hint (an unproven claim is a failed claim).
Results are cached per release in ``$XDG_CACHE_HOME/dpref/smt`` keyed by the z3
version and the exact formula (SMT-LIB text): the formula is built by evaluating the
code, so changed code is a changed key and is proven afresh.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path
from typing import Any

from proofs.core import ProofFailure

__all__ = [
    "BITS",
    "Z3Ops",
    "primitive_lemmas",
    "prove_smt",
    "require_z3",
    "z3_available",
]

BITS = 64
"""Width of the bit-vectors: horizons up to 2⁶² and their products by small factors fit."""
TIMEOUT_MS = 60_000
"""z3's time limit per query; a query that times out is a failed proof."""
INSTALL_HINT = "z3-solver is not installed: pip install 'dpref[prove]'"


def z3_available() -> bool:
    """Whether the z3 solver can be imported."""
    try:
        import z3  # noqa: F401
    except ImportError:
        return False
    return True


def require_z3() -> Any:
    """The z3 module, or a :class:`ProofFailure` with the install hint."""
    try:
        import z3
    except ImportError:
        raise ProofFailure(INSTALL_HINT) from None
    return z3


class Z3Ops:
    """The z3 (bit-vector) twin of :class:`dpref.mechanisms.base.ExactOps`.

    Values are unsigned 64-bit bit-vectors; comparisons must use :meth:`le`/:meth:`lt`
    (unsigned), which code written for the ops should call instead of ``<=``/``<``.
    """

    def __init__(self) -> None:
        self.z3 = require_z3()

    def var(self, name: str) -> Any:
        """A fresh unsigned 64-bit integer variable."""
        return self.z3.BitVec(name, BITS)

    def const(self, value: int) -> Any:
        """The constant ``value`` as a 64-bit bit-vector."""
        return self.z3.BitVecVal(value, BITS)

    def number(self, x: Any) -> Any:
        """An exact value: integers become bit-vector constants; bit-vectors stay."""
        if isinstance(x, int):
            return self.const(x)
        return x

    def floor_log2(self, x: Any) -> Any:
        """``⌊log₂ x⌋`` for ``x ≥ 1``: the number of i ≥ 1 with ``2^i ≤ x``."""
        z3 = self.z3
        x = self.number(x)
        return sum(
            (
                z3.If(z3.UGE(x, self.const(1 << i)), self.const(1), self.const(0))
                for i in range(1, BITS)
            ),
            self.const(0),
        )

    def popcount(self, x: Any) -> Any:
        """The number of 1-bits of ``x``."""
        z3 = self.z3
        x = self.number(x)
        return sum((z3.ZeroExt(BITS - 1, z3.Extract(i, i, x)) for i in range(BITS)), self.const(0))

    def le(self, a: Any, b: Any) -> Any:
        """Unsigned ``a ≤ b``."""
        return self.z3.ULE(self.number(a), self.number(b))

    def lt(self, a: Any, b: Any) -> Any:
        """Unsigned ``a < b``."""
        return self.z3.ULT(self.number(a), self.number(b))

    def ite(self, cond: Any, a: Any, b: Any) -> Any:
        """``a if cond else b``."""
        return self.z3.If(cond, self.number(a), self.number(b))

    def shl(self, a: Any, b: Any) -> Any:
        """``a << b``."""
        return self.number(a) << self.number(b)


def _cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(Path.home(), ".cache")
    return Path(base) / "dpref" / "smt"


_LET_NAME = re.compile(r"[?$]x\d+")


def _cache_key(z3: Any, text: str) -> str:
    """The formula's hash, with z3's let-names (AST ids, which depend on what else the
    process built) renumbered in order of first appearance."""
    names: dict[str, str] = {}
    canonical = _LET_NAME.sub(lambda m: names.setdefault(m.group(0), f"?n{len(names)}"), text)
    return hashlib.sha256(f"{z3.get_version_string()}\n{canonical}".encode()).hexdigest()


def _cached(key: str) -> bool:
    try:
        return bool(json.loads((_cache_dir() / f"{key}.json").read_text())["unsat"])
    except (OSError, ValueError, KeyError, TypeError):
        return False


def _store(key: str) -> None:
    path = _cache_dir() / f"{key}.json"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps({"unsat": True}))
        tmp.replace(path)
    except OSError:  # a read-only home only costs the cache
        pass


def prove_smt(statement: Any, what: str, *, assumptions: Any = ()) -> str:
    """Prove ``assumptions ⟹ statement`` for every assignment of its bit-vector variables.

    Returns ``"z3"`` or ``"z3 (cached)"``; raises :class:`ProofFailure` with a
    counterexample when the negation is satisfiable, or when z3 answers ``unknown``.
    """
    z3 = require_z3()
    solver = z3.Solver()
    solver.set("timeout", TIMEOUT_MS)
    for a in assumptions:
        solver.add(a)
    solver.add(z3.Not(statement))
    text = solver.to_smt2()
    key = _cache_key(z3, text)
    if _cached(key):
        return "z3 (cached)"
    result = solver.check()
    if result == z3.unsat:
        _store(key)
        return "z3"
    if result == z3.sat:
        model = solver.model()
        where = ", ".join(f"{d.name()}={model[d]}" for d in sorted(model.decls(), key=str))
        raise ProofFailure(f"{what}: does not hold; counterexample {where}")
    raise ProofFailure(f"{what}: z3 could not decide it ({solver.reason_unknown()})")


def primitive_lemmas() -> list[str]:
    """Prove :class:`Z3Ops`'s primitives against their definitions, for every 64-bit x.

    ``floor_log2``: ``2^L ≤ x < 2^{L+1}`` for ``1 ≤ x < 2⁶³``; ``popcount``: its value is
    the sum of the bits (by construction) and ``popcount(2^j) = 1``.  Returns the
    discharged steps.
    """
    ops = Z3Ops()
    z3 = ops.z3
    x = ops.var("x")
    j = ops.var("j")
    L = ops.floor_log2(x)
    steps = [
        prove_smt(
            z3.And(ops.le(ops.shl(1, L), x), ops.lt(x, ops.shl(1, L + 1))),
            "2^⌊log₂x⌋ ≤ x < 2^(⌊log₂x⌋+1)",
            assumptions=[ops.le(1, x), ops.lt(x, 1 << (BITS - 1))],
        ),
        prove_smt(
            ops.popcount(ops.shl(1, j)) == ops.const(1),
            "popcount(2^j) = 1",
            assumptions=[ops.lt(j, BITS)],
        ),
    ]
    return [f"floor_log2 ({steps[0]})", f"popcount ({steps[1]})"]
