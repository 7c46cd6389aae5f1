"""Linear plans (docs/spec.md §0) and their exact checks.

A continual-release mechanism is a *linear plan*:

* nodes ``n`` with intervals ``[lo_n, hi_n]`` and weights
  ``a_{n,i} = w_n · γ^{hi_n − i}`` for ``lo_n ≤ i ≤ hi_n`` (γ = 1 for plain counts,
  γ = α for exponential decay);
* independent noise added to each node, released at time ``hi_n``: Laplace of scale
  ``b_n`` (``noise_family="laplace"``, pure ε-DP) or Gaussian of variance ``σ_n²``
  (``noise_family="gaussian"``, ρ-zCDP; docs/gaussian.md);
* a recombination ``R`` (T × nodes): ``out_t = Σ_n r_{t,n} · noisy_n``;
* a target ``Q`` (T × T) whose row t is a sum of segments ``coef · γ^{t−i}`` on ``[l, u]``.

The checks are exact (``fractions.Fraction``, never floats):

1. **unbiased**: ``R·A = Q``.  Multiplying row t by ``γ^{i−t}`` turns both sides into
   piecewise-constant functions of i, which are compared through their breakpoint
   deltas, so the check costs ``O(nnz(R))`` and scales to any T;
   :meth:`LinearPlan.check_unbiased_dense` is the brute-force cross-check for small T;
2. **causal**: ``r_{t,n} ≠ 0 ⇒ hi_n ≤ t`` (or the node's declared release time, with a causal
   target, for plans that use open nodes);
3. **private**: ``max_i Σ_n |a_{n,i}|·Δ/b_n`` (basic composition of the nodes' Laplace
   releases; the L1 sensitivity of the scaled node vector) ≤ ε, exactly; for Gaussian
   noise the L2 sum ``max_i Σ_n (a_{n,i}Δ)²/σ_n²`` ≤ 2ρ (the squared L2 sensitivity of
   the whitened node vector: the release is ``ρ``-zCDP, exactly ``√(2ρ)``-GDP);
4. **variance**: ``Var(out_t) = 2 Σ_n r_{t,n}² b_n²`` (Laplace) or ``Σ_n r_{t,n}² σ_n²``
   (Gaussian), exactly.

Exact values are stored compactly as a small table of distinct Fractions plus an
index array per entry, so plans of ``10⁵`` steps stay cheap.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from fractions import Fraction
from functools import cached_property
from math import gcd
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:  # scipy.sparse costs ~0.2 s to import: loaded where a matrix is built
    import scipy.sparse as sp

from dpref.errors import ParameterError, PlanCheckError
from dpref.report_html import HtmlSummary
from dpref.validation import ceil_float, ceil_sqrt_float, fmt_sequence

__all__ = ["ExactSparse", "LinearPlan", "PlanCheck", "PlanReport", "TargetRows"]

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]

DENSE_LIMIT = 4096
"""Largest T for which dense exact matrices may be materialised."""


@dataclass(frozen=True, eq=False)
class ExactSparse:
    """A sparse matrix in CSR layout whose values are exact.

    Values are ``table[idx[k]]``: a few distinct Fractions shared by many entries.
    """

    shape: tuple[int, int]
    """(rows, columns)."""
    indptr: IntArray
    """CSR row pointers, length rows + 1."""
    indices: IntArray
    """Column index of each stored entry."""
    table: tuple[Fraction, ...]
    """The distinct exact values."""
    idx: IntArray
    """For each stored entry, its value's position in ``table``."""

    @property
    def nnz(self) -> int:
        """Number of stored entries."""
        return int(self.indices.size)

    def row_of_entry(self) -> IntArray:
        """Row index of each stored entry."""
        return np.repeat(np.arange(self.shape[0], dtype=np.int64), np.diff(self.indptr))

    def to_scipy(self) -> sp.csr_matrix:
        """The matrix as a float64 ``scipy.sparse.csr_matrix`` (values rounded to nearest)."""
        import scipy.sparse as sp

        vals = np.array([float(v) for v in self.table], dtype=np.float64)[self.idx]
        return sp.csr_matrix((vals, self.indices, self.indptr), shape=self.shape)

    def to_dense_exact(self) -> list[list[Fraction]]:
        """Dense exact matrix (small shapes only)."""
        rows, cols = self.shape
        if rows * cols > DENSE_LIMIT * DENSE_LIMIT:
            raise ParameterError(f"shape={self.shape}: too large for a dense exact matrix")
        out = [[Fraction(0)] * cols for _ in range(rows)]
        for r in range(rows):
            for k in range(int(self.indptr[r]), int(self.indptr[r + 1])):
                out[r][int(self.indices[k])] += self.table[int(self.idx[k])]
        return out

    @staticmethod
    def from_triples(
        shape: tuple[int, int],
        rows: IntArray,
        cols: IntArray,
        table: tuple[Fraction, ...],
        idx: IntArray,
    ) -> ExactSparse:
        """Build from COO triples (rows need not be sorted)."""
        rows = np.asarray(rows, dtype=np.int64)
        cols = np.asarray(cols, dtype=np.int64)
        idx = np.asarray(idx, dtype=np.int64)
        order = np.lexsort((cols, rows))
        indptr = np.zeros(shape[0] + 1, dtype=np.int64)
        np.add.at(indptr, rows + 1, 1)
        np.cumsum(indptr, out=indptr)
        return ExactSparse(shape, indptr, cols[order], tuple(table), idx[order])


@dataclass(frozen=True, eq=False)
class TargetRows:
    """The target matrix Q: row t (1-indexed) is ``Σ_seg coef · γ^{t−i}`` on ``[l, u]``."""

    indptr: IntArray
    """Row pointers into the segment arrays (length T + 1)."""
    lo: IntArray
    """Segment starts (1-indexed items)."""
    hi: IntArray
    """Segment ends (inclusive)."""
    table: tuple[Fraction, ...]
    """Distinct segment coefficients."""
    idx: IntArray
    """Coefficient index per segment."""

    @staticmethod
    def prefix(horizon: int) -> TargetRows:
        """Prefix sums: row t is 1 on ``[1, t]``."""
        t = np.arange(1, horizon + 1, dtype=np.int64)
        return TargetRows(
            np.arange(horizon + 1, dtype=np.int64),
            np.ones(horizon, dtype=np.int64),
            t,
            (Fraction(1),),
            np.zeros(horizon, dtype=np.int64),
        )


@dataclass(frozen=True)
class PlanCheck:
    """The outcome of one exact check of a plan."""

    name: str
    """Which check (``unbiased``, ``causal``, ``privacy``, ``variance``)."""
    passed: bool
    """Whether it held exactly."""
    detail: str
    """A human-readable account (the first counter-example when it failed)."""


@dataclass(frozen=True)
class PlanReport(HtmlSummary):
    """All exact checks of one plan at one horizon."""

    mechanism: str
    """Mechanism label."""
    horizon: int
    """T."""
    checks: tuple[PlanCheck, ...]
    """Each check's outcome."""
    privacy_sum: Fraction
    """``max_i Σ_n |a_{n,i}|Δ/b_n`` (Laplace) or ``max_i Σ_n (a_{n,i}Δ)²/σ_n²``
    (Gaussian), exact."""
    declared_epsilon: Fraction
    """The ε the mechanism declares (for a Gaussian plan: its design ε, 1)."""
    noise_family: Literal["laplace", "gaussian"] = "laplace"
    """``"laplace"`` (the privacy sum is bounded by ε) or ``"gaussian"`` (by 2ρ)."""
    declared_rho: Fraction | None = None
    """The ρ a Gaussian plan declares (None for Laplace)."""

    @property
    def privacy_bound(self) -> Fraction:
        """What :attr:`privacy_sum` may reach: ε (Laplace) or 2ρ (Gaussian)."""
        if self.noise_family == "gaussian":
            assert self.declared_rho is not None
            return 2 * self.declared_rho
        return self.declared_epsilon

    def describe(self) -> str:
        """One line: passed or the failed checks, with the privacy sum and its bound."""
        what = (
            f"L2 sum {_show(self.privacy_sum)} (2ρ = {_show(self.privacy_bound)})"
            if self.noise_family == "gaussian"
            else f"L1 sum {_show(self.privacy_sum)} (ε = {_show(self.declared_epsilon)})"
        )
        state = "passed" if self.passed else "FAILED"
        return f"{self.mechanism} at T={self.horizon}: {state}; {what}"

    def summary(self) -> str:
        """:meth:`describe`, then one line per check (``pass``/``FAIL``, name, detail)."""
        rows = [
            f"  {'pass' if c.passed else 'FAIL'}  {c.name:<10}  {c.detail}" for c in self.checks
        ]
        return "\n".join([self.describe(), *rows])

    @property
    def passed(self) -> bool:
        """True when every check held."""
        return all(c.passed for c in self.checks)

    def raise_if_failed(self) -> None:
        """Raise :class:`PlanCheckError` naming the failed checks."""
        bad = [f"{c.name}: {c.detail}" for c in self.checks if not c.passed]
        if bad:
            raise PlanCheckError(f"{self.mechanism} at T={self.horizon}: " + "; ".join(bad))


def _show(q: Fraction) -> str:
    """A Fraction for a message: exact when short, else a float and its size.

    ``str`` of a Fraction with a numerator or denominator beyond 4300 digits raises
    ``ValueError`` (``sys.get_int_max_str_digits``); decayed plans with a float α
    reach such sizes (``α^T`` with a 2^−53 denominator).
    """
    if q.numerator.bit_length() + q.denominator.bit_length() <= 512:
        return str(q)
    return (
        f"≈{float(q):.17g} (a {q.numerator.bit_length()}-bit / "
        f"{q.denominator.bit_length()}-bit fraction)"
    )


def _grouped_exact_sums(counts: npt.NDArray[np.int64], weights: list[Fraction]) -> list[Fraction]:
    """Exact ``Σ_g counts[r, g] · weights[g]`` per row.

    The weights are put over their least common denominator D, so the row sums are
    integer dot products (int64 when no partial sum can overflow, Python ints
    otherwise), divided by D once per distinct value.
    """
    if counts.shape[0] == 0:
        return []
    if not weights:
        return [Fraction(0)] * counts.shape[0]
    denom = 1
    for w in weights:
        denom = denom * w.denominator // gcd(denom, w.denominator)
    nums = [int(w * denom) for w in weights]
    bound = max(abs(v) for v in nums) * int(np.abs(counts).sum(axis=1).max(initial=0))
    if bound < 2**62:
        sums: npt.NDArray[Any] = counts @ np.array(nums, dtype=np.int64)
    else:
        sums = counts.astype(object) @ np.array(nums, dtype=object)
    cache: dict[int, Fraction] = {}
    out = []
    for v in sums.tolist():
        value = cache.get(v)
        if value is None:
            value = cache[v] = Fraction(int(v), denom)
        out.append(value)
    return out


@dataclass(frozen=True, eq=False)
class LinearPlan:
    """An explicit linear plan ``(A, b, R, Q)`` with exact checks (docs/spec.md §0)."""

    name: str
    """Mechanism label for reports."""
    horizon: int
    """T: number of steps (outputs) and items."""
    lo: IntArray
    """Node interval starts (1-indexed), canonical node order."""
    hi: IntArray
    """Node interval ends = release times."""
    weight_table: tuple[Fraction, ...]
    """Distinct node weights ``w_n``."""
    weight_idx: IntArray
    """Per node, its weight's index."""
    scale_table: tuple[Fraction, ...]
    """Distinct noise parameters: Laplace scales ``b_n`` (``noise_family="laplace"``) or
    Gaussian variances ``σ_n²`` (``noise_family="gaussian"``)."""
    scale_idx: IntArray
    """Per node, its scale's index."""
    recombination: ExactSparse
    """R, T × nodes."""
    target: TargetRows
    """Q."""
    sensitivity: Fraction
    """Δ, the event-level sensitivity of one item."""
    declared_epsilon: Fraction
    """The ε the mechanism declares; for a Gaussian plan its design ε (1), whose per-node
    shares ``Δ|w_n|/b_n`` set the node variances (docs/gaussian.md)."""
    base: Fraction = Fraction(1)
    """γ in ``a_{n,i} = w_n γ^{hi_n − i}`` (1 for counts, α for exponential decay)."""
    expected_privacy_sum: Fraction | None = None
    """When known, the exact privacy sum this T must reach (equality is checked)."""
    labels: tuple[str, ...] = field(default=())
    """Optional per-node group labels (for reports)."""
    release: IntArray | None = None
    """Per node, the time its noise is drawn and it is first used, when a mechanism uses
    nodes before their interval ends (``dpref.mechanisms.elders``); None: at ``hi_n``."""
    noise_family: Literal["laplace", "gaussian"] = "laplace"
    """``"laplace"``: ``scale_table`` holds Laplace scales and the L1 sum is checked
    against ε; ``"gaussian"``: it holds variances σ_n² and the L2 sum is checked against
    2ρ."""
    declared_rho: Fraction | None = None
    """The ρ a Gaussian plan declares (required for ``noise_family="gaussian"``)."""
    noise_kind: str = ""
    """The node-noise kind when known (``"discrete"`` and ``"discrete_gaussian"`` are
    integer-valued: they need integer node weights, γ = 1 and an integer Δ)."""

    def __post_init__(self) -> None:
        if self.noise_family not in ("laplace", "gaussian"):
            raise ParameterError(
                f"noise_family={self.noise_family!r}: must be 'laplace' or 'gaussian'"
            )
        if self.noise_family == "gaussian" and (
            self.declared_rho is None or not self.declared_rho > 0
        ):
            raise ParameterError(
                f"declared_rho={self.declared_rho!r}: a Gaussian plan needs a rho > 0"
            )
        if self.noise_kind in ("discrete", "discrete_gaussian"):
            fractional = [w for w in self.weight_table if w.denominator != 1]
            if fractional or self.base != 1 or self.sensitivity.denominator != 1:
                why = (
                    f"node weight {fractional[0]}"
                    if fractional
                    else (f"base γ={self.base}" if self.base != 1 else f"Δ={self.sensitivity}")
                )
                raise ParameterError(
                    f"noise={self.noise_kind!r}: integer-valued noise needs integer node "
                    f"values (integer weights, γ = 1, an integer Δ), got {why}"
                )
        n = self.lo.size
        if not (self.hi.size == n == self.weight_idx.size == self.scale_idx.size):
            raise ParameterError("plan arrays must have one entry per node")
        if self.recombination.shape != (self.horizon, n):
            raise ParameterError(
                f"recombination shape {self.recombination.shape} != ({self.horizon}, {n})"
            )
        if not 0 < self.base <= 1:
            raise ParameterError(f"base={self.base}: must be in (0, 1]")
        # The exact checks rely on these: a node outside [1, T], a non-positive scale or
        # a negative Δ would make the privacy sum smaller than the real loss.
        if n and not (
            int(self.lo.min()) >= 1
            and int(self.hi.max()) <= self.horizon
            and bool(np.all(self.lo <= self.hi))
        ):
            bad = int(
                np.flatnonzero((self.lo < 1) | (self.hi > self.horizon) | (self.lo > self.hi))[0]
            )
            raise ParameterError(
                f"node {bad}=[{int(self.lo[bad])}, {int(self.hi[bad])}]: "
                f"need 1 <= lo <= hi <= horizon={self.horizon}"
            )
        for name, idx, table in (
            ("weight_idx", self.weight_idx, self.weight_table),
            ("scale_idx", self.scale_idx, self.scale_table),
            ("recombination.idx", self.recombination.idx, self.recombination.table),
            ("recombination.indices", self.recombination.indices, range(n)),
        ):
            if idx.size and not (0 <= int(idx.min()) and int(idx.max()) < len(table)):
                raise ParameterError(
                    f"{name}={fmt_sequence(idx)}: entries must lie in [0, {len(table)})"
                )
        if any(b <= 0 for b in self.scale_table):
            raise ParameterError(
                f"scale_table={fmt_sequence(self.scale_table)}: scales (variances) must be > 0"
            )
        if self.sensitivity < 0:
            raise ParameterError(f"sensitivity={self.sensitivity}: must be >= 0")
        tr = self.target
        if tr.indptr.size != self.horizon + 1 or (
            tr.lo.size
            and not (
                int(tr.lo.min()) >= 1
                and int(tr.hi.max()) <= self.horizon
                and bool(np.all(tr.lo <= tr.hi))
            )
        ):
            raise ParameterError(
                f"target: need {self.horizon} rows of segments with 1 <= l <= u <= "
                f"horizon={self.horizon}"
            )

    # ------------------------------------------------------------------ views
    @property
    def n_nodes(self) -> int:
        """Number of nodes released up to T."""
        return int(self.lo.size)

    @property
    def gaussian(self) -> bool:
        """Whether the nodes get Gaussian noise (``scale_table`` holds variances)."""
        return self.noise_family == "gaussian"

    @cached_property
    def scales(self) -> FloatArray:
        """Per-node noise multipliers as floats, each rounded up: the Laplace scale ``b_n``,
        or for Gaussian noise the standard deviation ``σ_n = √(σ_n²)``."""
        up = ceil_sqrt_float if self.gaussian else ceil_float
        table = np.array([up(b) for b in self.scale_table], dtype=np.float64)
        return table[self.scale_idx]

    def scale(self, n: int) -> Fraction:
        """Exact scale (Laplace) or variance (Gaussian) of node n."""
        return self.scale_table[int(self.scale_idx[n])]

    def weight(self, n: int) -> Fraction:
        """Exact weight ``w_n`` of node n."""
        return self.weight_table[int(self.weight_idx[n])]

    def per_node_epsilon(self) -> list[Fraction]:
        """``ε_n = Δ · max_i |a_{n,i}| / b_n = Δ|w_n|/b_n`` (γ ≤ 1: the max is at i = hi_n).

        A Gaussian plan has no per-node ε: :class:`~dpref.errors.ParameterError`
        (:meth:`per_node_rho` is its twin)."""
        if self.gaussian:
            raise ParameterError(
                "noise_family='gaussian': a Gaussian node has no pure ε; use per_node_rho()"
            )
        return [abs(self.weight(n)) * self.sensitivity / self.scale(n) for n in range(self.n_nodes)]

    def per_node_rho(self) -> list[Fraction]:
        """``ρ_n = (Δ · max_i |a_{n,i}|)²/(2σ_n²) = (Δw_n)²/(2σ_n²)`` (Gaussian plans)."""
        if not self.gaussian:
            raise ParameterError("noise_family='laplace': a Laplace plan has per_node_epsilon()")
        return [
            (self.weight(n) * self.sensitivity) ** 2 / (2 * self.scale(n))
            for n in range(self.n_nodes)
        ]

    def A(self) -> sp.csr_matrix:
        """The node matrix A (nodes × T) as float64 sparse."""
        import scipy.sparse as sp

        lengths = (self.hi - self.lo + 1).astype(np.int64)
        indptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        total = int(indptr[-1])
        offsets = np.arange(total, dtype=np.int64) - np.repeat(indptr[:-1], lengths)
        cols = np.repeat(self.lo - 1, lengths) + offsets
        w = np.array([float(x) for x in self.weight_table])[self.weight_idx]
        vals = np.repeat(w, lengths)
        if self.base != 1:
            expo = np.repeat(self.hi - 1, lengths) - cols  # hi_n - i
            vals = vals * float(self.base) ** expo
        return sp.csr_matrix((vals, cols, indptr), shape=(self.n_nodes, self.horizon))

    def R(self) -> sp.csr_matrix:
        """The recombination R (T × nodes) as float64 sparse."""
        return self.recombination.to_scipy()

    def Q(self) -> sp.csr_matrix:
        """The target Q (T × T) as float64 sparse."""
        import scipy.sparse as sp

        tr = self.target
        rows = np.repeat(np.arange(self.horizon, dtype=np.int64), np.diff(tr.indptr))
        lengths = tr.hi - tr.lo + 1
        r = np.repeat(rows, lengths)
        starts = np.repeat(np.concatenate([[0], np.cumsum(lengths)[:-1]]), lengths)
        c = np.repeat(tr.lo - 1, lengths) + np.arange(int(lengths.sum())) - starts
        coef = np.array([float(x) for x in tr.table])[np.repeat(tr.idx, lengths)]
        if self.base != 1:
            coef = coef * float(self.base) ** (r - c)
        return sp.csr_matrix((coef, (r, c)), shape=(self.horizon, self.horizon))

    def dense_A_exact(self) -> list[list[Fraction]]:
        """A as a dense exact matrix (small T only)."""
        if self.horizon > DENSE_LIMIT:
            raise ParameterError(f"horizon={self.horizon}: too large for dense exact A")
        out = [[Fraction(0)] * self.horizon for _ in range(self.n_nodes)]
        for n in range(self.n_nodes):
            w, lo, hi = self.weight(n), int(self.lo[n]), int(self.hi[n])
            for i in range(lo, hi + 1):
                out[n][i - 1] = w * self.base ** (hi - i)
        return out

    def dense_Q_exact(self) -> list[list[Fraction]]:
        """Q as a dense exact matrix (small T only)."""
        if self.horizon > DENSE_LIMIT:
            raise ParameterError(f"horizon={self.horizon}: too large for dense exact Q")
        tr = self.target
        out = [[Fraction(0)] * self.horizon for _ in range(self.horizon)]
        for t in range(1, self.horizon + 1):
            for k in range(int(tr.indptr[t - 1]), int(tr.indptr[t])):
                coef = tr.table[int(tr.idx[k])]
                for i in range(int(tr.lo[k]), int(tr.hi[k]) + 1):
                    out[t - 1][i - 1] += coef * self.base ** (t - i)
        return out

    # ----------------------------------------------------------------- checks
    def check_unbiased(self) -> PlanCheck:
        """``R·A = Q`` exactly, via breakpoint deltas of ``γ^{i−t}·(row t)``.

        Row t of ``R·A`` times ``γ^{i−t}`` is ``Σ_n r_{t,n} w_n γ^{hi_n−t}`` on
        ``[lo_n, hi_n]``, and row t of Q times ``γ^{i−t}`` is ``Σ coef`` on ``[l, u]``:
        both piecewise constant in i, so they are equal iff every breakpoint delta
        cancels.  With γ = 1 all values are multiples of one common denominator and
        the deltas are summed in exact integer arithmetic (vectorised: int64, or
        Python ints when int64 could overflow); otherwise in Fractions.
        """
        if self.base == 1:
            fast = self._check_unbiased_integer()
            if fast is not None:
                return fast
        return self._check_unbiased_fractions()

    def _check_unbiased_integer(self) -> PlanCheck | None:
        R, tr = self.recombination, self.target
        values = [r * w for r in R.table for w in self.weight_table] + list(tr.table)
        denom = 1
        for v in values:
            denom = denom * v.denominator // gcd(denom, v.denominator)
        nums = [int(v * denom) for v in values]
        bound = max((abs(v) for v in nums), default=0) * (2 * (R.nnz + tr.lo.size) + 1)
        # exact either way: int64 when no partial sum can overflow, else Python ints
        dtype: type = np.int64 if bound < 2**62 else object
        n_w = len(self.weight_table)
        rw: npt.NDArray[Any] = np.array(nums[: len(R.table) * n_w], dtype=dtype)
        qv: npt.NDArray[Any] = np.array(nums[len(R.table) * n_w :], dtype=dtype)
        rows = R.row_of_entry()
        nodes = R.indices
        val = rw[R.idx * n_w + self.weight_idx[nodes]]
        q_rows = np.repeat(np.arange(self.horizon, dtype=np.int64), np.diff(tr.indptr))
        qval = qv[tr.idx]
        width = self.horizon + 2
        keys = np.concatenate(
            [
                rows * width + self.lo[nodes],
                rows * width + self.hi[nodes] + 1,
                q_rows * width + tr.lo,
                q_rows * width + tr.hi + 1,
            ]
        )
        deltas = np.concatenate([val, -val, -qval, qval])
        order = np.argsort(keys, kind="stable")
        keys, deltas = keys[order], deltas[order]
        if keys.size == 0:
            return PlanCheck("unbiased", True, "empty plan")
        starts = np.flatnonzero(np.concatenate([[True], keys[1:] != keys[:-1]]))
        net = np.add.reduceat(deltas, starts)
        pos = keys[starts] % width
        bad = (net != 0) & (pos <= self.horizon)
        if bad.any():
            k = int(np.flatnonzero(bad)[0])
            t, i = int(keys[starts[k]] // width) + 1, int(pos[k])
            return PlanCheck(
                "unbiased",
                False,
                f"(R·A − Q) row t={t} jumps by {_show(Fraction(int(net[k]), denom))} at i={i}",
            )
        return PlanCheck("unbiased", True, f"R·A = Q exactly for all {self.horizon} rows")

    def _check_unbiased_fractions(self) -> PlanCheck:
        R, tr, base = self.recombination, self.target, self.base
        wt, st = self.weight_table, self.weight_idx
        for t in range(1, self.horizon + 1):
            delta: defaultdict[int, Fraction] = defaultdict(Fraction)
            for k in range(int(R.indptr[t - 1]), int(R.indptr[t])):
                n = int(R.indices[k])
                value = R.table[int(R.idx[k])] * wt[int(st[n])]
                if base != 1:
                    value *= base ** (int(self.hi[n]) - t)
                delta[int(self.lo[n])] += value
                delta[int(self.hi[n]) + 1] -= value
            for k in range(int(tr.indptr[t - 1]), int(tr.indptr[t])):
                coef = tr.table[int(tr.idx[k])]
                delta[int(tr.lo[k])] -= coef
                delta[int(tr.hi[k]) + 1] += coef
            running = Fraction(0)
            for pos in sorted(delta):
                if pos > self.horizon:
                    break
                running += delta[pos]
                if running != 0:
                    return PlanCheck(
                        "unbiased",
                        False,
                        f"(R·A − Q)[t={t}, i={pos}] = {_show(running)} ≠ 0",
                    )
        return PlanCheck("unbiased", True, f"R·A = Q exactly for all {self.horizon} rows")

    def check_unbiased_dense(self) -> PlanCheck:
        """Brute-force exact ``R·A = Q`` with dense Fraction matrices (small T)."""
        A = self.dense_A_exact()
        Rd = self.recombination.to_dense_exact()
        Qd = self.dense_Q_exact()
        for t in range(self.horizon):
            for i in range(self.horizon):
                v = sum((Rd[t][n] * A[n][i] for n in range(self.n_nodes) if Rd[t][n]), Fraction(0))
                if v != Qd[t][i]:
                    return PlanCheck(
                        "unbiased-dense",
                        False,
                        f"(R·A)[{t + 1},{i + 1}] = {_show(v)} ≠ {_show(Qd[t][i])}",
                    )
        return PlanCheck("unbiased-dense", True, "dense exact R·A = Q")

    def check_causal(self) -> PlanCheck:
        """No output uses a node released after it: ``r_{t,n} ≠ 0 ⇒ release_n ≤ t``.

        ``release_n = hi_n`` unless the plan says otherwise.  A node used while still open
        (``hi_n > t``) enters the output at t through its partial sum: that is exact only
        when the target row t depends on items ``≤ t`` (checked here), for then
        ``R·A = Q`` (the unbiasedness check) cancels the node's later items.
        """
        R = self.recombination
        nonzero = np.array([v != 0 for v in R.table], dtype=bool)[R.idx]
        rows = R.row_of_entry() + 1
        release = self.hi if self.release is None else self.release
        bad = nonzero & (release[R.indices] > rows)
        if bad.any():
            k = int(np.flatnonzero(bad)[0])
            n = int(R.indices[k])
            return PlanCheck(
                "causal",
                False,
                f"output t={int(rows[k])} uses node {n} released at {int(release[n])}",
            )
        if self.release is None:
            return PlanCheck("causal", True, "every output uses only released nodes")
        tr = self.target
        seg_rows = np.repeat(np.arange(1, self.horizon + 1), np.diff(tr.indptr))
        if tr.hi.size and bool(np.any(tr.hi > seg_rows)):
            return PlanCheck("causal", False, "open nodes are used but the target is not causal")
        opened = int(np.count_nonzero(nonzero & (self.hi[R.indices] > rows)))
        return PlanCheck(
            "causal",
            True,
            f"every output uses only drawn nodes; {opened} uses of open nodes, whose later "
            "items R·A = Q cancels (causal target)",
        )

    def item_privacy_sums(self) -> list[Fraction]:
        """Per item i: ``Σ_n |a_{n,i}| Δ / b_n`` (Laplace) or ``Σ_n (a_{n,i}Δ)²/σ_n²``
        (Gaussian), exact.

        With γ = 1 each node adds a constant per (weight, scale) pair to every item of its
        interval: integer counts per pair times exact pair costs (one grouped integer sum).
        With γ < 1 the term ``c_n γ^{p(hi_n − i)}`` (p = 1, or 2 for the squared Gaussian
        weights) is ``γ^{−pi}·(c_n γ^{p·hi_n})``: a difference array of exact Fractions.
        """
        T = self.horizon
        power = 2 if self.gaussian else 1
        # only the (weight, scale) pairs that occur: with one weight and one scale per
        # instance (PolynomialSum) the full product table is quadratic in the instances
        n_s = len(self.scale_table)
        pairs, group = np.unique(
            self.weight_idx.astype(np.int64) * n_s + self.scale_idx, return_inverse=True
        )
        group = group.reshape(-1)
        if self.gaussian:
            eps_node = [
                (self.weight_table[int(p) // n_s] * self.sensitivity) ** 2
                / self.scale_table[int(p) % n_s]
                for p in pairs
            ]
        else:
            eps_node = [
                abs(self.weight_table[int(p) // n_s])
                * self.sensitivity
                / self.scale_table[int(p) % n_s]
                for p in pairs
            ]
        if self.base == 1:
            n_groups = len(eps_node)
            diff = np.zeros((T + 1, n_groups), dtype=np.int64)
            np.add.at(diff, (self.lo - 1, group), 1)
            np.add.at(diff, (self.hi, group), -1)
            counts = np.cumsum(diff[:T], axis=0)
            used = np.flatnonzero(counts.any(axis=0))
            return _grouped_exact_sums(counts[:, used], [eps_node[g] for g in used])
        # γ < 1: item i's term from node n is c_n γ^{p(hi_n − i)} = γ^{−pi} · (c_n γ^{p·hi_n}).
        gamma = self.base**power
        diff2: list[Fraction] = [Fraction(0)] * (T + 2)
        for n in range(self.n_nodes):
            c = eps_node[int(group[n])] * gamma ** int(self.hi[n])
            diff2[int(self.lo[n])] += c
            diff2[int(self.hi[n]) + 1] -= c
        out: list[Fraction] = []
        running = Fraction(0)
        for i in range(1, T + 1):
            running += diff2[i]
            out.append(running / gamma**i)
        return out

    def privacy_sum(self) -> Fraction:
        """``max_i Σ_n |a_{n,i}|·Δ/b_n``: the ε of the node release by basic composition;
        for Gaussian noise ``max_i Σ_n (a_{n,i}Δ)²/σ_n²`` = 2ρ of the node release."""
        sums = self.item_privacy_sums()
        return max(sums) if sums else Fraction(0)

    @property
    def privacy_bound(self) -> Fraction:
        """What the privacy sum may reach: the declared ε, or 2ρ for Gaussian noise."""
        if self.gaussian:
            assert self.declared_rho is not None
            return 2 * self.declared_rho
        return self.declared_epsilon

    def check_privacy(self) -> tuple[PlanCheck, Fraction]:
        """The privacy sum is at most the declared ε (2ρ for Gaussian noise), and equals the
        expected sum when known."""
        total = self.privacy_sum()
        ok = total <= self.privacy_bound
        if self.gaussian:
            detail = (
                f"max_i Σ_n (a_ni Δ)²/σ_n² = {_show(total)} (declared 2ρ = "
                f"{_show(self.privacy_bound)}, ρ = {_show(self.privacy_bound / 2)})"
            )
        else:
            detail = (
                f"max_i Σ_n |a_ni|Δ/b_n = {_show(total)} "
                f"(declared ε = {_show(self.declared_epsilon)})"
            )
        if self.expected_privacy_sum is not None and total != self.expected_privacy_sum:
            ok = False
            detail += f"; expected exactly {_show(self.expected_privacy_sum)}"
        return PlanCheck("privacy", ok, detail), total

    def node_variance_table(self) -> tuple[Fraction, ...]:
        """Per entry of ``scale_table``, the node variance: ``2b²`` (Laplace) or ``σ²``."""
        if self.gaussian:
            return self.scale_table
        return tuple(2 * b * b for b in self.scale_table)

    def variance_exact(self) -> list[Fraction]:
        """``Var(out_t) = 2 Σ_n r_{t,n}² b_n²`` for Laplace node noise, ``Σ_n r_{t,n}² σ_n²``
        for Gaussian, exact, t = 1..T."""
        node_var = self.node_variance_table()
        R = self.recombination
        n_s = len(self.scale_table)
        pairs, group = np.unique(
            R.idx.astype(np.int64) * n_s + self.scale_idx[R.indices], return_inverse=True
        )
        group = group.reshape(-1)
        weights = [R.table[int(p) // n_s] ** 2 * node_var[int(p) % n_s] for p in pairs]
        n_groups = len(weights)
        counts = np.zeros((self.horizon, n_groups), dtype=np.int64)
        np.add.at(counts, (R.row_of_entry(), group), 1)
        used = np.flatnonzero(counts.any(axis=0))
        return _grouped_exact_sums(counts[:, used], [weights[g] for g in used])

    def variance(self) -> FloatArray:
        """Per-step variance as floats (nearest)."""
        return np.array([float(v) for v in self.variance_exact()], dtype=np.float64)

    def check(self, variance_formula: list[Fraction] | None = None) -> PlanReport:
        """Run every exact check; compare with a closed-form variance when given."""
        checks = [self.check_unbiased(), self.check_causal()]
        priv, total = self.check_privacy()
        checks.append(priv)
        if variance_formula is not None:
            plan_var = self.variance_exact()
            mism = [
                t
                for t, (a, b) in enumerate(zip(plan_var, variance_formula, strict=True), 1)
                if a != b
            ]
            if mism:
                t0 = mism[0]
                formula, planned = variance_formula[t0 - 1], plan_var[t0 - 1]
                detail = f"t={t0}: formula {_show(formula)} ≠ plan {_show(planned)}"
            else:
                detail = "closed form = " + ("Σ r²σ²" if self.gaussian else "2Σ r²b²") + " exactly"
            checks.append(PlanCheck("variance", not mism, detail))
        return PlanReport(
            self.name,
            self.horizon,
            tuple(checks),
            total,
            self.declared_epsilon,
            self.noise_family,
            self.declared_rho,
        )

    # ----------------------------------------------------------------- output
    def node_values(self, stream: FloatArray) -> FloatArray:
        """True node values ``A x``."""
        return np.asarray(self.A() @ stream, dtype=np.float64)

    def output(self, stream: FloatArray, noise: FloatArray) -> FloatArray:
        """``R (A x + z)``: the plan's release for a stream and node noise (canonical order)."""
        if noise.shape[-1] != self.n_nodes:
            raise ParameterError(
                f"noise: expected {self.n_nodes} node values, got {noise.shape[-1]}"
            )
        noisy = self.node_values(stream) + noise
        return np.asarray(self.R() @ noisy.T, dtype=np.float64).T
