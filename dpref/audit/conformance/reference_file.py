"""A plan file as the reference of ``dpref conform`` and ``dpref audit`` (``--reference FILE``).

A third party's mechanism — FDA, KTCR, a banded or column-normalised strategy — is a
strategy C (rows: noise nodes, columns: items 1..T), a decoder B (T × rows of C) and
per-row noise scales s (node n gets Laplace noise of scale ``b·s_n`` or Gaussian noise of
standard deviation ``σ·s_n``), as ``dpref plan check`` reads them.  Such a file, read by
:func:`dpref.cli.plan_reference.load_reference_plan` (the one place a reference plan file
is read) into a :class:`ReferencePlan`, becomes here the :class:`~dpref.mechanisms.Mechanism`
that conformance and the plan-aware audit need (:class:`PlanReference`): its plan R = B,
its node scales, its noiseless release ``m(x) = B·C·x``.

**The noise** is Laplace (``--epsilon E`` and/or ``--scale b``) or Gaussian (``--rho R``
and/or ``--sigma σ``); without any of them the file's ``"noise"`` key names the law and
its scales are absolute (unit 1, as ``dpref plan extract`` writes them).  With a budget
alone the unit is calibrated so that the plan is exactly that budget: ``b = L1·Δ/ε`` with
``L1 = max_i Σ_n |C_{n,i}|/s_n`` (Gaussian: ``σ² = L2·Δ²/(2ρ)``, ``L2 = max_i Σ_n
C_{n,i}²/s_n²``); with a unit alone the claim is what the plan supports at it (``ε =
L1·Δ/b``, ``ρ = L2·Δ²/(2σ²)``); with both the plan must support the claim (else an error).

**Floats** in the file (JSON floats, a ``.npz``) are taken at their exact binary values
(``Fraction(float)``), like every float dpref is given; the report says how many.  The
privacy sums of a file with floats, or with more than :data:`EXACT_SUM_LIMIT` rows, add
each term rounded up to a multiple of 2⁻⁶⁴ (an upper bound, cheap where the exact
denominators would grow without bound); an all-rational small file's are exact.

Internally each row of C is divided by its largest ``|C_{n,i}|`` (and B's column and the
scale by the same factor): the release is unchanged, and every node has weight 1 as the
conformance checks' per-node ε assume.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from dpref.domains import Domain, bits
from dpref.errors import DprefTypeError, ParameterError
from dpref.mechanisms.base import EXACT, BudgetTerm, Mechanism, NodeTable, OnlineCounter
from dpref.plan import ExactSparse, LinearPlan, PlanCheck, TargetRows
from dpref.validation import ceil_float, ceil_sqrt_float, check_epsilon, fmt

__all__ = [
    "EXACT_SUM_LIMIT",
    "MAX_REFERENCE_ROWS",
    "DenseLinearPlan",
    "PlanReference",
    "ReferencePlan",
    "is_plan_file",
]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

MAX_REFERENCE_ROWS = 1024
"""Most rows of C and most items T of a reference plan file (the Gaussian output model and
the dense exact tables are built for T ≤ 1024)."""
EXACT_SUM_LIMIT = 256
"""Largest number of rows of an all-rational plan whose privacy sums are added exactly."""
_GRID = 2**64
"""Denominator of the rounded-up privacy-sum terms."""

Law = Literal["laplace", "gaussian"]


def is_plan_file(spec: Any) -> bool:
    """Whether a ``--reference`` value names a plan file rather than a mechanism: it ends in
    ``.json`` or ``.npz``, or contains a path separator."""
    if not isinstance(spec, str):
        return False
    return spec.lower().endswith((".json", ".npz")) or os.sep in spec or "/" in spec


# ------------------------------------------------------------------ the file
@dataclass(frozen=True, eq=False, kw_only=True)
class ReferencePlan:
    """A dense plan file as read: exact entries, floats at their exact binary values."""

    path: str
    """The file's name, as given."""
    strategy: tuple[tuple[Fraction, ...], ...]
    """C, one row per noise node (columns: items 1..T)."""
    decoder: tuple[tuple[Fraction, ...], ...]
    """B, one row per output step (columns: rows of C)."""
    scales: tuple[Fraction, ...]
    """Per row of C, its relative noise scale (1 when the file has none)."""
    noise: Law | None
    """The noise law the file names (``"noise"`` key), or None."""
    floats: int
    """How many entries were given as floats (taken at their exact binary values)."""

    @property
    def horizon(self) -> int:
        """T, the number of columns of C."""
        return len(self.strategy[0])

    @property
    def rows(self) -> int:
        """The number of rows of C (noise nodes)."""
        return len(self.strategy)


# ------------------------------------------------------------------ the plan
def _round_up(q: Fraction) -> Fraction:
    """The smallest multiple of 2⁻⁶⁴ that is ≥ q."""
    return Fraction(-((-q.numerator * _GRID) // q.denominator), _GRID)


def column_sums(
    strategy: tuple[tuple[Fraction, ...], ...],
    scales: tuple[Fraction, ...],
    *,
    squares: bool,
    exact: bool,
) -> list[Fraction]:
    """Per item i: ``Σ_n |C_{n,i}|/s_n`` (or ``Σ_n C_{n,i}²/s_n²``), exactly, or (``exact``
    False) with every term rounded up to a multiple of 2⁻⁶⁴: an upper bound."""
    T = len(strategy[0]) if strategy else 0
    out = [Fraction(0)] * T
    for n, row in enumerate(strategy):
        s = scales[n]
        for i, v in enumerate(row):
            if v:
                term = v * v / (s * s) if squares else abs(v) / s
                out[i] += term if exact else _round_up(term)
    return out


@dataclass(frozen=True, eq=False)
class DenseLinearPlan(LinearPlan):
    """A :class:`~dpref.plan.LinearPlan` whose nodes are arbitrary rows of a strategy C
    (not weighted intervals): the plan of a :class:`PlanReference`.

    ``lo``/``hi`` are each row's first and last nonzero column (``hi`` the release time);
    every row's largest ``|entry|`` is 1 (weight 1, or 0 for an all-zero row), so the
    per-node ε is ``Δ/b_n``.  :meth:`A` is C itself and :meth:`item_privacy_sums` sums its
    columns (exactly when :attr:`exact_sums`, else each term rounded up to 2⁻⁶⁴).
    """

    strategy: tuple[tuple[Fraction, ...], ...] = ()
    """C (canonical node order), each row scaled to largest ``|entry|`` 1."""
    exact_sums: bool = True
    """Whether :meth:`item_privacy_sums` adds exactly (else rounded-up terms)."""

    def A(self) -> Any:
        """C as float64 sparse (nodes × T)."""
        import scipy.sparse as sp

        dense = np.array([[float(v) for v in row] for row in self.strategy], dtype=np.float64)
        return sp.csr_matrix(dense.reshape(self.n_nodes, self.horizon))

    def dense_A_exact(self) -> list[list[Fraction]]:
        """C as a dense exact matrix."""
        return [list(row) for row in self.strategy]

    def item_privacy_sums(self) -> list[Fraction]:
        """Per item i: ``Σ_n |C_{n,i}|Δ/b_n`` (Laplace) or ``Σ_n (C_{n,i}Δ)²/σ_n²``."""
        per_node = self.scale_table_per_node()
        if self.gaussian:  # the table holds σ²: Σ C²/σ², the squared entries over the variances
            sums = column_sums(
                _squares_strategy(self.strategy), per_node, squares=False, exact=self.exact_sums
            )
            return [v * self.sensitivity**2 for v in sums]
        sums = column_sums(self.strategy, per_node, squares=False, exact=self.exact_sums)
        return [v * self.sensitivity for v in sums]

    def scale_table_per_node(self) -> tuple[Fraction, ...]:
        """Per node, its exact scale (Laplace) or variance (Gaussian)."""
        return tuple(self.scale_table[int(k)] for k in self.scale_idx)

    def check_unbiased(self) -> PlanCheck:
        """Q is B·C by construction (the reference's noiseless release)."""
        return PlanCheck("unbiased", True, "Q = B·C: the reference's noiseless release")


def _squares_strategy(
    strategy: tuple[tuple[Fraction, ...], ...],
) -> tuple[tuple[Fraction, ...], ...]:
    return tuple(tuple(v * v for v in row) for row in strategy)


# --------------------------------------------------------------- the mechanism
class PlanReference(Mechanism):
    """A plan file as a reference mechanism (not registered: built by ``--reference FILE``).

    Use :meth:`from_file`.  The nodes are the rows of C in canonical order (release time,
    then row); node n gets Laplace noise of scale ``b_n`` or Gaussian noise of variance
    ``σ_n²`` (each row normalised to largest entry 1, module doc); the release is
    ``B·(C·x + z)``.  It has no online counter.
    """

    max_plan_steps = MAX_REFERENCE_ROWS

    def __init__(
        self,
        *,
        plan_file: ReferencePlan,
        law: Law,
        unit: Fraction,
        epsilon: Any = None,
        rho: Any = None,
        domain: Domain | None = None,
        label: str = "",
    ) -> None:
        if not isinstance(plan_file, ReferencePlan):
            raise DprefTypeError(f"plan_file={fmt(plan_file)}: must be a ReferencePlan")
        if law not in ("laplace", "gaussian"):
            raise ParameterError(f"law={fmt(law)}: must be 'laplace' or 'gaussian'")
        if not (isinstance(unit, Fraction) and unit > 0):
            raise ParameterError(f"unit={fmt(unit)}: must be a Fraction > 0")
        super().__init__(
            epsilon=epsilon, rho=rho, horizon=plan_file.horizon, domain=domain, noise=law
        )
        self.plan_file = plan_file
        """The file the plan was read from."""
        self.unit = unit
        """The unit scale: Laplace ``b`` or Gaussian ``σ²`` per unit row scale."""
        self.label = label or f"plan file {plan_file.path}"
        """How reports name the reference."""
        C, B, s = plan_file.strategy, plan_file.decoder, plan_file.scales
        release = [max((i + 1 for i, v in enumerate(row) if v != 0), default=1) for row in C]
        first = [min((i + 1 for i, v in enumerate(row) if v != 0), default=1) for row in C]
        order = sorted(range(len(C)), key=lambda n: (release[n], n))
        self.row_order: tuple[int, ...] = tuple(order)
        """Canonical node k is row ``row_order[k]`` of the file's C."""
        peak = [max((abs(v) for v in C[n]), default=Fraction(0)) for n in order]
        norm = [m if m else Fraction(1) for m in peak]
        self._C = tuple(tuple(v / norm[k] for v in C[n]) for k, n in enumerate(order))
        self._B = tuple(
            tuple(B[t][n] * norm[k] for k, n in enumerate(order)) for t in range(len(B))
        )
        if law == "laplace":
            node = [unit * s[n] / norm[k] for k, n in enumerate(order)]
        else:  # unit is σ²: the node variance is σ²·s_n²/m_n²
            node = [unit * s[n] * s[n] / (norm[k] * norm[k]) for k, n in enumerate(order)]
        table = tuple(dict.fromkeys(node))
        index = {v: i for i, v in enumerate(table)}
        self._scale_table = table
        self._scale_idx = np.array([index[v] for v in node], dtype=np.int64)
        self._weight_idx = np.array([0 if m else 1 for m in peak], dtype=np.int64)
        self._lo = np.array([first[n] for n in order], dtype=np.int64)
        self._hi = np.array([release[n] for n in order], dtype=np.int64)
        self._exact_sums = plan_file.floats == 0 and len(C) <= EXACT_SUM_LIMIT
        Cf = np.array([[float(v) for v in row] for row in self._C], dtype=np.float64)
        self._Bf = np.array([[float(v) for v in row] for row in self._B], dtype=np.float64)
        self._Qf = self._Bf @ Cf
        self._mult = np.array(
            [ceil_float(v) if law == "laplace" else ceil_sqrt_float(v) for v in table]
        )[self._scale_idx]

    # ------------------------------------------------------------ construction
    @classmethod
    def from_file(
        cls,
        plan_file: ReferencePlan,
        *,
        noise: Any = None,
        epsilon: Any = None,
        rho: Any = None,
        scale: Any = None,
        sigma: Any = None,
        domain: Domain | None = None,
    ) -> PlanReference:
        """The reference for ``plan_file`` under the noise the options give (module doc):
        ``epsilon``/``scale`` Laplace, ``rho``/``sigma`` Gaussian, else the file's
        ``noise`` law at unit scale; ``noise`` (``"laplace"``/``"gaussian"``) may name
        the law too.  Raises :class:`~dpref.errors.ParameterError` for contradicting
        options or a unit too small for the claim."""
        if not isinstance(plan_file, ReferencePlan):
            raise DprefTypeError(f"plan_file={fmt(plan_file)}: must be a ReferencePlan")
        dom = bits() if domain is None else domain
        law = _law(plan_file, noise, epsilon, rho, scale, sigma)
        delta = dom.sensitivity
        exact = plan_file.floats == 0 and plan_file.rows <= EXACT_SUM_LIMIT
        gaussian = law == "gaussian"
        sums = column_sums(plan_file.strategy, plan_file.scales, squares=gaussian, exact=exact)
        top = max(sums)
        if gaussian:
            l2 = top * delta**2
            if l2 == 0:
                raise ParameterError(f"reference={plan_file.path!r}: C is all zero")
            want = None if rho is None else _positive("rho", rho)
            if sigma is not None:
                sd = _positive("sigma", sigma)
                variance = sd * sd
                supported = l2 / (2 * variance)
                _check_supported("--sigma", sigma, "ρ", supported, want)
            elif want is not None:
                variance = l2 / (2 * want)
            else:
                variance = Fraction(1)
            claim = want if want is not None else _claim(l2 / (2 * variance))
            return cls(plan_file=plan_file, law=law, unit=variance, rho=claim, domain=dom)
        l1 = top * delta
        if l1 == 0:
            raise ParameterError(f"reference={plan_file.path!r}: C is all zero")
        want = None if epsilon is None else _positive("epsilon", epsilon)
        if scale is not None:
            b = _positive("scale", scale)
            _check_supported("--scale", scale, "ε", l1 / b, want)
        elif want is not None:
            b = l1 / want
        else:
            b = Fraction(1)
        claim = want if want is not None else _claim(l1 / b)
        return cls(plan_file=plan_file, law=law, unit=b, epsilon=claim, domain=dom)

    # ----------------------------------------------------------- the contract
    def __repr__(self) -> str:
        unit = (
            f"Laplace scale {_short(self.unit)} per unit row scale"
            if self.rho is None
            else f"Gaussian σ² {_short(self.unit)} per unit row scale"
        )
        budget = (
            f"epsilon={_short(self.epsilon)}" if self.rho is None else f"rho={_short(self.rho)}"
        )
        return f"{self.label} ({unit}, {budget})"

    def _nodes_up_to(self, horizon: int) -> IntArray:
        return np.flatnonzero(self._hi <= horizon).astype(np.int64)

    def budget_terms(self, ops: Any = EXACT, **symbols: Any) -> list[BudgetTerm]:
        """One term: the largest column sum ``max_i Σ_n |C_{n,i}|/b_n`` at scale 1."""
        sums = self.plan().item_privacy_sums()
        return [BudgetTerm("column", max(sums) / self.sensitivity, Fraction(1))]

    def nodes(self, horizon: int) -> NodeTable:
        """The rows of C released up to ``horizon`` (canonical order)."""
        t = self._horizon_for(horizon, limit=MAX_REFERENCE_ROWS)
        keep = self._nodes_up_to(t)
        return NodeTable(
            self._lo[keep],
            self._hi[keep],
            self._scale_table,
            self._scale_idx[keep],
            (Fraction(1), Fraction(0)),
            self._weight_idx[keep],
        )

    def recombination(self, horizon: int) -> ExactSparse:
        """B (rows 1..horizon, the nodes released by then), exact."""
        t = self._horizon_for(horizon, limit=MAX_REFERENCE_ROWS)
        keep = self._nodes_up_to(t).tolist()
        rows, cols, idx = [], [], []
        table: dict[Fraction, int] = {}
        for r in range(t):
            for c, k in enumerate(keep):
                v = self._B[r][k]
                if v != 0:
                    rows.append(r)
                    cols.append(c)
                    idx.append(table.setdefault(v, len(table)))
        return ExactSparse.from_triples(
            (t, len(keep)),
            np.array(rows, dtype=np.int64),
            np.array(cols, dtype=np.int64),
            tuple(table),
            np.array(idx, dtype=np.int64),
        )

    def target_rows(self, horizon: int) -> TargetRows:
        """Q = B·C as one-item segments (each entry rounded to the nearest float, exact)."""
        t = self._horizon_for(horizon, limit=MAX_REFERENCE_ROWS)
        Q = self._Qf[:t, :t]
        table: dict[Fraction, int] = {}
        indptr, lo, idx = [0], [], []
        for r in range(t):
            for i in np.flatnonzero(Q[r]).tolist():
                lo.append(i + 1)
                idx.append(table.setdefault(Fraction(float(Q[r, i])), len(table)))
            indptr.append(len(lo))
        pos = np.array(lo, dtype=np.int64)
        return TargetRows(
            np.array(indptr, dtype=np.int64),
            pos,
            pos.copy(),
            tuple(table),
            np.array(idx, dtype=np.int64),
        )

    def plan(self, horizon: int | None = None) -> DenseLinearPlan:
        """The plan at T ≤ the file's T (its first T outputs and the rows released by T)."""
        t = self._horizon_for(horizon, limit=MAX_REFERENCE_ROWS)
        nodes = self.nodes(t)
        keep = self._nodes_up_to(t).tolist()
        return DenseLinearPlan(
            name=repr(self),
            horizon=t,
            lo=nodes.lo,
            hi=nodes.hi,
            weight_table=nodes.weight_table,
            weight_idx=nodes.weight_idx if nodes.weight_idx is not None else nodes.lo * 0,
            scale_table=nodes.scale_table,
            scale_idx=nodes.scale_idx,
            recombination=self.recombination(t),
            target=self.target_rows(t),
            sensitivity=self.sensitivity,
            declared_epsilon=self.design_epsilon,
            noise_family=self.noise_family,
            declared_rho=self.rho,
            noise_kind=self.noise,
            strategy=tuple(self._C[k][:t] for k in keep),
            exact_sums=self._exact_sums,
        )

    def noise_scales(self, horizon: int) -> FloatArray | float:
        """Per-node Laplace scales (rounded up), canonical order."""
        out: FloatArray = self._mult[self._nodes_up_to(self._horizon_for(horizon))]
        return out

    def noise_multipliers(self, horizon: int) -> FloatArray | float:
        """Per-node Laplace scales or Gaussian standard deviations (rounded up)."""
        return self.noise_scales(horizon)

    def variance_exact(self, horizon: int | None = None) -> list[Fraction]:
        """``Var(out_t) = Σ_n B_{t,n}² v_n`` (v = 2b² or σ²), exact."""
        t = self._horizon_for(horizon, limit=MAX_REFERENCE_ROWS)
        keep = self._nodes_up_to(t).tolist()
        table = self._scale_table
        v = [
            (
                2 * table[int(self._scale_idx[k])] ** 2
                if self.rho is None
                else table[int(self._scale_idx[k])]
            )
            for k in keep
        ]
        return [
            sum(
                (self._B[r][k] ** 2 * v[j] for j, k in enumerate(keep) if self._B[r][k]),
                Fraction(0),
            )
            for r in range(t)
        ]

    def variance(self, horizon: int | None = None) -> FloatArray:
        """Per-step variance of the noise as drawn (float64, from the rounded-up scales)."""
        t = self._horizon_for(horizon, limit=MAX_REFERENCE_ROWS)
        keep = self._nodes_up_to(t)
        m = self._mult[keep]
        v = 2 * m * m if self.rho is None else m * m
        out: FloatArray = (self._Bf[:t][:, keep] ** 2) @ v
        return out

    def combine(self, noise: FloatArray, horizon: int) -> FloatArray:
        """``B z`` along the last axis."""
        keep = self._nodes_up_to(horizon)
        out: FloatArray = np.asarray(noise, dtype=np.float64) @ self._Bf[:horizon][:, keep].T
        return out

    def target(self, stream: Any) -> FloatArray:
        """The noiseless release ``B·C·x`` (float64)."""
        return self._target_checked(self._stream(stream))

    def _target_checked(self, x: FloatArray) -> FloatArray:
        T = x.size
        out: FloatArray = self._Qf[:T, :T] @ x
        return out

    def online(self, rng: Any = None, noise: Any = None) -> OnlineCounter:
        """A plan file has no online counter."""
        raise ParameterError(
            f"reference={self.plan_file.path!r}: a plan file has no online counter"
        )


# ---------------------------------------------------------------- options
def _positive(name: str, value: Any) -> Fraction:
    v = check_epsilon(name, value)
    if not Fraction(1, 2**400) <= v <= 2**400:
        raise ParameterError(f"{name}={fmt(value)}: must lie in [2^-400, 2^400]")
    return v


def _claim(value: Fraction) -> Fraction:
    """A supported budget as a claim: exact, or rounded up to a multiple of 2⁻⁶⁴ when its
    denominator is longer than 64 bits."""
    return value if value.denominator <= _GRID else _round_up(value)


def _check_supported(flag: str, given: Any, budget: str, supported: Fraction, want: Any) -> None:
    if want is not None and supported > want:
        name = "--epsilon" if budget == "ε" else "--rho"
        raise ParameterError(
            f"{flag}={given}: the plan supports {budget} = {_short(supported)} at this noise, "
            f"above the claimed {name}={_short(want)} (give a larger {flag} or only one of them)"
        )


def _law(
    plan_file: ReferencePlan, noise: Any, epsilon: Any, rho: Any, scale: Any, sigma: Any
) -> Law:
    lap = [f for f, v in (("--epsilon", epsilon), ("--scale", scale)) if v is not None]
    gau = [f for f, v in (("--rho", rho), ("--sigma", sigma)) if v is not None]
    if lap and gau:
        raise ParameterError(
            f"{gau[0]}: contradicts {lap[0]} (Laplace noise: --epsilon/--scale; Gaussian "
            "noise: --rho/--sigma)"
        )
    if noise is not None and noise not in ("laplace", "gaussian"):
        raise ParameterError(
            f"--noise={noise}: a plan file reference has 'laplace' or 'gaussian' noise"
        )
    law: Law | None = "laplace" if lap else "gaussian" if gau else noise
    if law is None:
        law = plan_file.noise
    if law is None:
        raise ParameterError(
            f"reference={plan_file.path!r}: the file names no noise law; give --epsilon or "
            "--scale (Laplace) or --rho or --sigma (Gaussian)"
        )
    for given, what in ((noise, "--noise"), (plan_file.noise, "the file's noise")):
        if given is not None and given != law:
            raise ParameterError(f"{what}={given}: contradicts the {law} noise the options give")
    return law


def _short(q: Any) -> str:
    """Exact when short, else ``≈`` a float."""
    if isinstance(q, Fraction) and q.numerator.bit_length() + q.denominator.bit_length() > 128:
        return f"≈{float(q):.17g}"
    return str(q)
