"""Which counter for my T and ε (or ρ)?  The exact accuracy frontier (docs/frontier.md).

For every registered counting mechanism (target: prefix sums, ``decay()`` is the prefix
decay) and every parameterisation it offers (:meth:`Mechanism.frontier_variants`), the
exact mean and maximum of ``Var(out_t)`` over ``t = 1..T`` — from the mechanism's
vectorised closed form :meth:`Mechanism.variance_counts` when it has one, else from its
exact per-step :meth:`Mechanism.variance_exact` — as Fractions, never sampled, times Δ²
for items of sensitivity Δ; the online memory in floats; the Python expression that builds
the mechanism and the ``dpref release`` command that runs it.  Under the table: the
variance lower bound every linear Laplace counter obeys
(:class:`dpref.frontier_rows.LaplaceLowerBound`, in the table's unit) and, as an error
bound (not a variance), the packing bound of Dwork et al. (2010, Thm 4.2) with its constant
(:func:`dpref.lower_bound` with ``g ≡ 1`` and q = T).  The best row by the objective
(``max`` or ``mean``) is marked; ``top=N`` keeps the N best rows.

With ``rho=`` instead of ``epsilon=`` the same table is drawn for ρ-zCDP with Gaussian
node noise, and the bound is the factorization-norm bound every linear Gaussian counter
obeys (:func:`dpref.lower_bounds.factorization_lower_bound`).  A class whose exact
per-step variances cannot be listed at large T (the square-root factorization: its
Fractions have Θ(T)-bit denominators) gives rigorous float upper bounds through
:meth:`Mechanism.variance_upper`; such rows are marked ``≤``.

A class with an exact ``objective("mean"|"max")`` and an exact one-step variance (the BLUE
tree) is ranked by its exact mean and a one-step lower bound on its maximum
(:func:`~dpref.frontier_rows.deferred_bounds`); its exact maximum is computed only for rows
that could be shown (:func:`_resolve`), the others print ``≥`` that bound.

A mechanism or variant that cannot be evaluated at T (a parameter out of its range at
this T, a horizon limit, no vectorised form above :data:`EXACT_LIST_LIMIT`) is reported
as skipped with the reason.
"""

from __future__ import annotations

import bisect
import math
from collections import Counter
from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt

from dpref.errors import DprefError, DprefTypeError, HorizonError, ParameterError
from dpref.frontier_rows import (
    DeferredBounds,
    LaplaceLowerBound,
    cache_key,
    check_sensitivity,
    constructor,
    deferred_bounds,
    laplace_lower_bound,
    online_memory,
    release_command,
    remember,
)
from dpref.lower_bounds import (
    FactorizationLowerBound,
    LowerBound,
    factorization_lower_bound,
    lower_bound,
    prefix_decay,
)
from dpref.mechanisms.base import MECHANISMS, Mechanism
from dpref.report_html import HtmlSummary, html_table
from dpref.validation import check_choice, check_epsilon, check_int_range, check_rho, fmt

__all__ = [
    "EXACT_LIST_LIMIT",
    "EXACT_MAX_LIMIT",
    "MAX_FRONTIER_HORIZON",
    "OBJECTIVES",
    "FrontierReport",
    "FrontierRow",
    "counting_mechanisms",
    "frontier",
    "variance_summary",
]

FloatArray = npt.NDArray[np.float64]

OBJECTIVES = ("max", "mean")
"""What "best" minimises: the maximum or the mean of ``Var(out_t)`` over t ≤ T."""
MAX_FRONTIER_HORIZON = 2**24
"""Largest T accepted: the vectorised closed forms hold a few int64 arrays of T entries
per variant (at 2^24, about 0.5 GiB at the peak)."""
EXACT_MAX_LIMIT = 2**12
"""Largest T at which every row of a class whose maximum is computed on demand
(:func:`~dpref.frontier_rows.deferred_bounds`) gets its exact maximum; above, only the rows
that could be shown (``top``; without it, the best) do, and the others print a rigorous
lower bound (``≥``, the exact variance at one step) beside their exact mean."""
EXACT_LIST_LIMIT = 2**14
"""Largest T at which a mechanism without :meth:`Mechanism.variance_counts` is evaluated
through its per-step list of exact Fractions (Θ(T) Python objects); beyond, skipped."""


@dataclass(frozen=True)
class FrontierRow:
    """One mechanism with one parameterisation."""

    mechanism: str
    """The command-line name."""
    params: dict[str, Any]
    """Constructor keywords besides ``epsilon`` and ``horizon``."""
    label: str
    """``name[k=v,…]``, the parameters resolved at T."""
    mean: Fraction | None = None
    """Exact mean of ``Var(out_t)`` over t = 1..T (None when skipped; an upper bound when
    :attr:`upper` is set)."""
    max: Fraction | None = None
    """Exact maximum of ``Var(out_t)`` over t = 1..T (an upper bound when :attr:`upper`)."""
    memory: int | None = None
    """Floats the online counter holds at most (None: not known)."""
    skipped: str | None = None
    """Why the row could not be evaluated."""
    best: bool = False
    """Whether this row minimises the objective."""
    upper: bool = False
    """Whether mean and max are rigorous upper bounds (from floats rounded up) rather than
    exact values."""
    lower: bool = False
    """Whether max is a rigorous lower bound (the exact variance at one step) rather than
    the exact maximum, which was not computed: a row certainly behind the best
    (:data:`EXACT_MAX_LIMIT`); the mean is exact."""
    constructor: str = ""
    """A Python expression that builds the mechanism: evaluated after ``from dpref import *;
    from fractions import Fraction``, its exact ``variance()`` gives the row's numbers."""
    command: str = ""
    """The ``dpref release`` command that runs the mechanism on a stream file."""

    def as_dict(self) -> dict[str, Any]:
        """JSON-friendly dict (variances as floats and as exact strings)."""
        return {
            "mechanism": self.mechanism,
            "params": {k: _jsonable(v) for k, v in self.params.items()},
            "label": self.label,
            "mean_variance": None if self.mean is None else float(self.mean),
            "max_variance": None if self.max is None else float(self.max),
            "mean_variance_exact": None if self.mean is None or self.upper else str(self.mean),
            "max_variance_exact": (
                None if self.max is None or self.upper or self.lower else str(self.max)
            ),
            "variance_is_upper_bound": self.upper,
            "max_variance_is_lower_bound": self.lower,
            "online_memory": self.memory,
            "online_memory_unit": "floats",
            "constructor": self.constructor or None,
            "release_command": self.command or None,
            "skipped": self.skipped,
            "best": self.best,
        }


@dataclass(frozen=True)
class FrontierReport(HtmlSummary):
    """The frontier at one (T, ε)."""

    horizon: int
    """T."""
    epsilon: Fraction | None
    """ε (None for a zCDP report)."""
    objective: str
    """``max`` or ``mean``."""
    rows: tuple[FrontierRow, ...]
    """Evaluated rows sorted by the objective (best first), then the skipped ones."""
    bound: LaplaceLowerBound | FactorizationLowerBound
    """The bound on the maximum variance every linear counter of the table obeys (ε: with
    Laplace node noise; ρ: with Gaussian node noise) — the table's unit."""
    notes: tuple[str, ...] = field(default=())
    """Remarks printed under the table."""
    rho: Fraction | None = None
    """ρ (None for a pure-DP report)."""
    error_bound: LowerBound | None = None
    """ε: the packing bound ``C ≥ Δ·G(D)/2 = Δ·D/2`` on the error of any ε-DP counter
    simultaneously over q = T steps (Dwork et al. 2010) — an error, not a variance."""
    sensitivity: Fraction = Fraction(1)
    """Δ: the variances are those of items in ``[0, Δ]`` (Δ² times those of bits)."""
    omitted: int = 0
    """Rows left out by ``top`` (evaluated and skipped)."""

    @property
    def best(self) -> FrontierRow | None:
        """The marked row."""
        return next((r for r in self.rows if r.best), None)

    def as_dict(self) -> dict[str, Any]:
        """JSON-friendly dict."""
        best = self.best
        if isinstance(self.bound, LaplaceLowerBound):
            bound = self.bound.as_dict()
        else:
            bound = {**self.bound.as_dict(), "unit": "variance"}
            bound["statement"] = _GAUSSIAN_BOUND_STATEMENT
        error = None
        if self.error_bound is not None:
            error = {
                **self.error_bound.as_dict(),
                "lower_bound": float(self.error_bound.value * self.sensitivity),
                "sensitivity": str(self.sensitivity),
                "unit": "error (not a variance)",
                "statement": _BOUND_STATEMENT,
            }
        return {
            "horizon": self.horizon,
            "privacy": "pure" if self.rho is None else "zcdp",
            "epsilon": None if self.epsilon is None else str(self.epsilon),
            "rho": None if self.rho is None else str(self.rho),
            "objective": self.objective,
            "sensitivity": str(self.sensitivity),
            "best": None if best is None else best.label,
            "lower_bound": bound,
            "error_lower_bound": error,
            "rows": [r.as_dict() for r in self.rows],
            "rows_omitted": self.omitted,
            "notes": list(self.notes),
        }

    def table(self) -> str:
        """The report as text: one line per row, the best marked with ``*``."""
        w = max([31, *(len(r.label) + 1 for r in self.rows if r.skipped is None)])
        head = f"{'':2}{'mechanism':<{w}}{'mean Var':>17}{'max Var':>17}{'memory':>9}"
        budget = (
            f"ε = {self.epsilon}" if self.rho is None else f"ρ = {self.rho} (zCDP, Gaussian noise)"
        )
        if self.sensitivity != 1:
            budget += f", Δ = {self.sensitivity}"
        lines = [
            f"dpref frontier: T = {self.horizon}, {budget}, objective = {self.objective}",
            head + " (floats)",
        ]
        for r in self.rows:
            mark = "* " if r.best else "  "
            if r.skipped is not None:
                lines.append(f"{mark}{r.label:<{w}}  skipped: {r.skipped}")
                continue
            assert r.mean is not None and r.max is not None
            mem = "n/a" if r.memory is None else str(r.memory)
            le = "≤" if r.upper else ""
            mean, top = f"{le}{_up1(r.mean, r.upper)}", f"{le}{_up1(r.max, r.upper)}"
            if r.lower:
                top = f"≥{_down1(r.max)}"
            lines.append(f"{mark}{r.label:<{w}}{mean:>17}{top:>17}{mem:>9}")
            if r.constructor:
                lines.append(f"    build: {r.constructor}; run: {r.command}")
        if self.omitted:
            lines.append(f"  … {self.omitted} more rows (without --top: all of them)")
        b = self.bound
        if isinstance(b, LaplaceLowerBound):
            lines.append(
                f"lower bound: every linear Laplace counter has max Var ≥ {b.value:.2f}; "
                f"{b.formula}"
            )
        else:
            lines.append(
                f"lower bound: every linear Gaussian counter has max Var ≥ {b.value:.2f}; "
                f"{b.formula}"
            )
        e = self.error_bound
        if e is not None:
            lines.append(
                f"error bound (not a variance): no ε-DP counter is within "
                f"C = {float(e.value * self.sensitivity):g} of every c_t, t ≤ T, w.p. ≥ 2/3; "
                f"C ≥ Δ·G(D)/2, G(D) = D = ⌈ln(2q)/ε⌉ − 1 = {e.D} (q = {e.q}; Dwork et al. 2010)"
            )
        lines.extend(self.notes)
        return "\n".join(lines)

    def summary(self) -> str:
        """A short text: the first :meth:`table` line, the best row, how many rows, and the
        lower bound (:meth:`table` has every row)."""
        lines = self.table().splitlines()
        evaluated = [r for r in self.rows if r.skipped is None]
        best = self.best
        out = [lines[0]]
        if best is not None and best.mean is not None and best.max is not None:
            le = "≤" if best.upper else ""
            out.append(
                f"best        {best.label}: mean Var {le}{_up1(best.mean, best.upper)}, "
                f"max Var {le}{_up1(best.max, best.upper)}"
            )
            if best.constructor:
                out.append(f"build       {best.constructor}")
        out.append(
            f"rows        {len(evaluated)} evaluated, {len(self.rows) - len(evaluated)} skipped"
            + (f", {self.omitted} omitted" if self.omitted else "")
        )
        out.extend(line for line in lines if line.startswith("lower bound:"))
        return "\n".join(out)

    def _repr_html_(self) -> str:
        """The rows as an HTML table (mechanism, mean and max Var, memory), the best
        marked ``*``, then the lower bound; every cell escaped."""
        rows: list[list[str]] = []
        for r in self.rows:
            if r.skipped is not None or r.mean is None or r.max is None:
                rows.append(["*" if r.best else "", r.label, "skipped", r.skipped or "", ""])
                continue
            le = "≤" if r.upper else ""
            mem = "n/a" if r.memory is None else str(r.memory)
            mean, top = le + _up1(r.mean, r.upper), le + _up1(r.max, r.upper)
            if r.lower:
                top = "≥" + _down1(r.max)
            rows.append(["*" if r.best else "", r.label, mean, top, mem])
        first, *rest = self.table().splitlines()
        notes = [line for line in rest if line.startswith(("lower bound:", "error bound", "  …"))]
        rows.extend([["", n.strip(), "", "", ""] for n in notes])
        header = ["", "mechanism", "mean Var", "max Var", "memory (floats)"]
        return html_table(first, rows, header)

    def head(self, n: int) -> FrontierReport:
        """The report with only its ``n`` best evaluated rows (the rest counted in
        :attr:`omitted`)."""
        n = check_int_range("top", n, 1, None)
        kept = tuple(r for r in self.rows if r.skipped is None)[:n]
        return replace(self, rows=kept, omitted=self.omitted + len(self.rows) - len(kept))


def _down1(value: Fraction) -> str:
    """A lower bound to one decimal, rounded down."""
    tenths = (value.numerator * 10) // value.denominator
    return f"{tenths // 10}.{tenths % 10}"


def _up1(value: Fraction, upper: bool) -> str:
    """An exact value to one decimal (nearest); an upper bound to two decimals, rounded up."""
    if not upper:
        return f"{float(value):.1f}"
    hundredths = -((-value.numerator * 100) // value.denominator)
    return f"{hundredths // 100}.{hundredths % 100:02d}"


_GAUSSIAN_BOUND_STATEMENT = (
    "every linear counter with Gaussian node noise that is ρ-zCDP through its L2 sensitivity "
    "has max_t Var(out_t) ≥ γ₂(M_T)²Δ²/(2ρ) ≥ (‖M_T‖_*/T)²Δ²/(2ρ) (trace-norm bound on the "
    "factorization norm of the prefix matrix; Matoušek, Nikolov, Talwar 2020)"
)

_BOUND_STATEMENT = (
    "no ε-DP counter is within C of every c_t, t ≤ T, with probability ≥ 2/3 when "
    "C < lower_bound (Dwork et al. 2010, Thm 4.2; constant: packing with q = T)"
)


def _jsonable(v: Any) -> Any:
    if isinstance(v, Fraction):
        return str(v)
    if isinstance(v, (int, float, str, bool)) or v is None:
        return v
    return repr(v)


def _is_counter(cls: type[Mechanism]) -> bool:
    example = cls.examples[0] if cls.examples else None
    if example is None:
        return False
    try:
        m = example.build(cls, 1, 8)
    except DprefError:
        return False
    return m.decay() == prefix_decay()


def counting_mechanisms() -> list[type[Mechanism]]:
    """Registered classes whose target is the prefix sum, by name."""
    return [MECHANISMS[n] for n in sorted(MECHANISMS) if _is_counter(MECHANISMS[n])]


def variance_summary(m: Mechanism, horizon: int) -> tuple[Fraction, Fraction]:
    """Exact ``(mean, max)`` of ``Var(out_t)`` over t = 1..T (the mechanism's noise).

    From :meth:`Mechanism.variance_counts` (``unit · Σn/T`` and ``unit · max n``) when the
    class has it; else from :meth:`Mechanism.variance_exact`, grouping equal Fractions;
    that path is refused above :data:`EXACT_LIST_LIMIT` with a :class:`DprefError`
    (:func:`variance_summary_upper` then gives rigorous upper bounds when the class can).
    """
    counts = m.variance_counts(horizon)
    if counts is not None:
        return _summary_from_counts(*counts, horizon)
    if horizon > EXACT_LIST_LIMIT:
        raise HorizonError(
            f"horizon={horizon}: {type(m).__name__} declares no variance_counts (vectorised "
            f"closed form); its exact per-step list is evaluated up to T = {EXACT_LIST_LIMIT}"
        )
    tally = Counter(m.variance_exact(horizon))
    total = sum((v * c for v, c in tally.items()), Fraction(0))
    return total / horizon, max(tally)


def variance_summary_upper(m: Mechanism, horizon: int) -> tuple[Fraction, Fraction] | None:
    """Upper bounds on ``(mean, max)`` of ``Var(out_t)`` from :meth:`Mechanism.variance_upper`
    (floats, each ≥ the exact variance), summed exactly; None when the class has none."""
    upper = m.variance_upper(horizon)
    if upper is None:
        return None
    vals = np.asarray(upper, dtype=np.float64)
    if vals.shape != (horizon,) or not np.all(np.isfinite(vals)):
        raise ParameterError(f"variance_upper: shape {vals.shape} ≠ ({horizon},) or not finite")
    # math.fsum is correctly rounded; the exact sum of the floats is bounded by it plus one
    # ulp of the sum, so the mean is rounded up
    total = Fraction(math.fsum(vals.tolist()))
    total += Fraction(math.ulp(float(total)))
    return total / horizon, Fraction(float(vals.max()))


_DEFERRED: dict[Any, DeferredBounds | None] = {}
"""Deferred bounds by (row key, ascent): the frontier is often drawn again at one T (both
objectives, ``--plot``'s sweep, tests); a design's numbers do not change."""
_MAXIMA: dict[Any, Fraction] = {}
"""Exact maxima by row key (see :data:`_DEFERRED`)."""


@dataclass(frozen=True)
class _Pending:
    """A row known so far by its exact mean and a lower bound on its maximum
    (:func:`~dpref.frontier_rows.deferred_bounds`); :meth:`resolve` computes the exact
    maximum through the class's ``objective("max")``."""

    row: FrontierRow
    m: Mechanism
    scale: Fraction
    """Δ²."""
    mean: Fraction
    max_lower: Fraction
    key: Any = None
    """The row's key in the cache of exact maxima (None: not cached)."""

    def interval(self, objective: str) -> tuple[Fraction, Fraction | None]:
        """Bounds on the objective's statistic, × Δ² (None: no upper bound yet)."""
        if objective == "mean":
            return self.mean * self.scale, self.mean * self.scale
        return self.max_lower * self.scale, None

    def resolve(self) -> FrontierRow:
        """The row with its exact mean and max (the max checked against its lower bound)."""
        top = _MAXIMA.get(self.key)
        if top is None:
            top = Fraction(self.m.objective("max"))  # type: ignore[attr-defined]
            remember(_MAXIMA, self.key, top)
        if top < self.max_lower:
            raise DprefError(
                f"{self.row.label}: exact max {float(top)} below the exact variance "
                f"{float(self.max_lower)} of one step"
            )
        return replace(self.row, mean=self.mean * self.scale, max=top * self.scale)

    def bounded(self) -> FrontierRow:
        """The row with its exact mean and the lower bound on its max, marked ``≥``."""
        return replace(
            self.row, mean=self.mean * self.scale, max=self.max_lower * self.scale, lower=True
        )


def _resolve(
    rows: list[FrontierRow | _Pending], objective: str, shown: int
) -> tuple[list[FrontierRow], list[FrontierRow]]:
    """Exact values for every pending row that could be among the ``shown`` best: a pending
    row stays unresolved only when ``shown`` rows are certainly better (their exact
    objective below its lower bound).  Returns the resolved rows and the unresolved ones
    (exact mean, the lower bound on the max, marked ``≥``)."""

    def interval(r: FrontierRow | _Pending) -> tuple[Fraction, Fraction | None]:
        if isinstance(r, _Pending):
            return r.interval(objective)
        assert r.mean is not None and r.max is not None
        value = r.max if objective == "max" else r.mean
        return value, value

    while True:
        pending = [r for r in rows if isinstance(r, _Pending)]
        his = sorted(h for h in (interval(r)[1] for r in rows) if h is not None)
        todo = [p for p in pending if bisect.bisect_left(his, interval(p)[0]) < shown]
        if not todo:
            break
        first = min(todo, key=lambda p: interval(p)[0])  # the most promising, then again
        rows = [first.resolve() if r is first else r for r in rows]
    done = [r for r in rows if isinstance(r, FrontierRow)]
    return done, [r.bounded() for r in rows if isinstance(r, _Pending)]


def _summary_from_counts(
    units: Fraction | tuple[Fraction, ...], n: npt.NDArray[np.integer[Any]], horizon: int
) -> tuple[Fraction, Fraction]:
    """Exact (mean, max) of ``Σ_i units_i n_{i,t}``: the mean from integer column sums; the
    max among the t whose float value is within 1e−9 of the float maximum, exactly."""
    if isinstance(units, Fraction):
        units, n = (units,), n.reshape(1, -1)
    if n.shape != (len(units), horizon):
        raise ParameterError(f"variance_counts: shape {n.shape} ≠ ({len(units)}, {horizon})")
    sums = n.sum(axis=1, dtype=np.int64).tolist()
    mean = sum((u * int(c) for u, c in zip(units, sums, strict=True)), Fraction(0)) / horizon
    approx = np.zeros(horizon, dtype=np.float64)
    for u, row in zip(units, n, strict=True):
        approx += float(u) * row
    top = float(approx.max())
    cand = np.unique(n[:, approx >= top * (1 - 1e-9)], axis=1)
    best = max(
        sum((u * int(c) for u, c in zip(units, col, strict=True)), Fraction(0))
        for col in cand.T.tolist()
    )
    return mean, best


def _label(cls: type[Mechanism], params: dict[str, Any]) -> str:
    rest = ",".join(f"{k}={v}" for k, v in params.items())
    return f"{cls.name}[{rest}]" if rest else cls.name


def _evaluate(
    cls: type[Mechanism],
    params: dict[str, Any],
    horizon: int,
    budget: dict[str, Any],
    sensitivity: Fraction = Fraction(1),
) -> FrontierRow | _Pending | None:
    """One row, or a :class:`_Pending` row (float bounds now, exact values on demand); None
    when this parameterisation is not a counter (e.g. a window sum).  ``budget`` is
    ``{"epsilon": ε}`` or ``{"rho": ρ}``; the variances are those of items of sensitivity
    Δ (``sensitivity``): Δ² times those of bits (noise scales are ∝ Δ)."""
    label = _label(cls, params)
    upper = False
    try:
        m = cls(horizon=horizon, **budget, **params)
        if m.decay() != prefix_decay():
            return None
        label = _label(cls, {**params, **m.extra_params()})
        memory = online_memory(m, horizon)
        how = (cls, params, horizon, budget, sensitivity)
        key = cache_key(cls, params, horizon, budget)
        ascent = horizon > EXACT_MAX_LIMIT
        deferred = _DEFERRED.get((key, ascent))
        if deferred is None:
            deferred = deferred_bounds(m, horizon, ascent=ascent)
            remember(_DEFERRED, (key, ascent), deferred)
        if deferred is not None:
            row = FrontierRow(
                cls.name,
                params,
                label,
                memory=memory,
                constructor=constructor(*how),
                command=release_command(*how),
            )
            return _Pending(row, m, sensitivity**2, deferred.mean, deferred.max_lower, key)
        try:
            mean, top = variance_summary(m, horizon)
        except HorizonError:
            upper_bounds = variance_summary_upper(m, horizon)
            if upper_bounds is None:
                raise
            (mean, top), upper = upper_bounds, True
    except (DprefError, MemoryError) as exc:
        return FrontierRow(cls.name, params, label, skipped=str(exc).split("\n")[0])
    scale = sensitivity**2
    return FrontierRow(
        cls.name,
        params,
        label,
        mean * scale,
        top * scale,
        memory,
        upper=upper,
        constructor=constructor(*how),
        command=release_command(*how),
    )


def _evaluate_exact(
    cls: type[Mechanism],
    params: dict[str, Any],
    horizon: int,
    budget: dict[str, Any],
    sensitivity: Fraction = Fraction(1),
) -> FrontierRow | None:
    """:func:`_evaluate` with a pending row resolved to its exact values."""
    row = _evaluate(cls, params, horizon, budget, sensitivity)
    return row.resolve() if isinstance(row, _Pending) else row


def frontier(
    horizon: Any,
    epsilon: Any = None,
    objective: Any = "max",
    mechanisms: Any = None,
    *,
    rho: Any = None,
    sensitivity: Any = 1,
    top: Any = None,
    exact: bool = False,
) -> FrontierReport:
    """The exact frontier at T = ``horizon`` and ε = ``epsilon`` (pure DP, Laplace noise) or
    ρ = ``rho`` (zCDP, Gaussian noise) — see the module docstring.

    Parameters
    ----------
    horizon
        T, an integer in ``[1, 2^24]``.
    epsilon
        ε > 0 (exact: an int, a Fraction or a decimal string); give this or ``rho``.
    rho
        ρ > 0 (exact), for the zCDP table with Gaussian noise; give this or ``epsilon``.
    objective
        ``"max"`` (default) or ``"mean"``: which statistic the best row minimises.
    mechanisms
        Names of registered counting mechanisms to compare (default: all of them).
    sensitivity
        Δ, exact, ``0 < Δ ≤ 10^9`` (default 1, bits): items in ``[0, Δ]``; every variance
        and bound scales by Δ² (the error bound by Δ).
    top
        Keep only the ``top`` best evaluated rows (default: every row, skipped ones last).
    exact
        Compute every row's exact maximum, also above :data:`EXACT_MAX_LIMIT` (default:
        there, only the rows that could be shown — the ``top``, else the best — and the
        others print a lower bound, ``≥``).
    """
    T = check_int_range("horizon", horizon, 1, MAX_FRONTIER_HORIZON)
    delta = check_sensitivity(sensitivity)
    if top is not None:
        top = check_int_range("top", top, 1, None)
    if (epsilon is None) == (rho is None):
        raise ParameterError(
            f"epsilon={fmt(epsilon)}, rho={fmt(rho)}: give exactly one of epsilon (pure DP, "
            "Laplace noise) and rho (zCDP, Gaussian noise)"
        )
    eps = None if epsilon is None else check_epsilon("epsilon", epsilon)
    r = None if rho is None else check_rho("rho", rho)
    budget: dict[str, Any] = {}
    if eps is not None:
        budget["epsilon"] = eps
    if r is not None:
        budget["rho"] = r
    check_choice("objective", objective, OBJECTIVES)
    privacy = "pure" if r is None else "zcdp"
    classes = [c for c in counting_mechanisms() if privacy in c.frontier_privacy]
    if mechanisms is not None:
        if isinstance(mechanisms, str) or not all(isinstance(n, str) for n in mechanisms):
            raise DprefTypeError(f"mechanisms={fmt(mechanisms)}: must be a list of names")
        names = {c.name for c in classes}
        unknown = [n for n in mechanisms if n not in names]
        if unknown:
            raise ParameterError(
                f"mechanisms={fmt(unknown)}: not registered counting mechanisms {sorted(names)}"
            )
        classes = [c for c in classes if c.name in set(mechanisms)]
    rows: list[FrontierRow | _Pending] = []
    for cls in classes:
        try:
            variants = cls.frontier_variants(T)
        except DprefError as exc:
            rows.append(FrontierRow(cls.name, {}, cls.name, skipped=str(exc)))
            continue
        for params in variants:
            row = _evaluate(cls, params, T, budget, delta)
            if row is not None:
                rows.append(row)
    skipped = [r for r in rows if isinstance(r, FrontierRow) and r.skipped is not None]
    evaluated = [r for r in rows if isinstance(r, _Pending) or r.skipped is None]
    shown = len(evaluated) if exact or (top is None and T <= EXACT_MAX_LIMIT) else top or 1
    done, rest = _resolve(evaluated, objective, shown)

    def key(r: FrontierRow) -> tuple[Fraction, Fraction]:
        assert r.mean is not None and r.max is not None
        return (r.max, r.mean) if objective == "max" else (r.mean, r.max)

    done.sort(key=key)
    rest.sort(key=key)  # upper bounds of rows certainly behind the shown ones (see _resolve)
    done += rest
    if done:
        done[0] = replace(done[0], best=True)
    if r is not None:
        report = FrontierReport(
            T,
            None,
            objective,
            tuple(done + skipped),
            factorization_lower_bound(r, T, delta),
            rho=r,
            sensitivity=delta,
        )
    else:
        assert eps is not None
        report = FrontierReport(
            T,
            eps,
            objective,
            tuple(done + skipped),
            laplace_lower_bound(eps, T, delta),
            error_bound=lower_bound("prefix", eps, T),
            sensitivity=delta,
        )
    return report if top is None else report.head(top)


def _budget(report: FrontierReport) -> dict[str, Any]:
    """``{"epsilon": ε}`` or ``{"rho": ρ}`` of a report."""
    if report.rho is not None:
        return {"rho": report.rho}
    assert report.epsilon is not None
    return {"epsilon": report.epsilon}


def _bound_at(report: FrontierReport, horizon: int) -> float:
    """The report's variance lower bound at another T (same budget and Δ)."""
    if report.rho is not None:
        return factorization_lower_bound(report.rho, horizon, report.sensitivity).value
    return laplace_lower_bound(report.epsilon, horizon, report.sensitivity).value


def variance_curve(
    row: FrontierRow, horizon: int, budget: dict[str, Any], sensitivity: Any = 1
) -> FloatArray:
    """``Var(out_t)`` for t = 1..T of one evaluated row (floats, for plotting); ``budget``
    is ``{"epsilon": ε}`` or ``{"rho": ρ}``; items of sensitivity Δ (variances × Δ²)."""
    m = MECHANISMS[row.mechanism](horizon=horizon, **budget, **row.params)
    scale = float(check_sensitivity(sensitivity) ** 2)
    counts = m.variance_counts(horizon)
    if counts is None:
        upper = m.variance_upper(horizon) if horizon > EXACT_LIST_LIMIT else None
        curve = m.variance(horizon) if upper is None else np.asarray(upper, dtype=np.float64)
        return np.asarray(curve, dtype=np.float64) * scale
    units, n = counts
    if isinstance(units, Fraction):
        units, n = (units,), n.reshape(1, -1)
    out: FloatArray = np.zeros(horizon, dtype=np.float64)
    for u, counts_row in zip(units, n, strict=True):
        out += float(u) * counts_row
    return out * scale


def plot(
    report: FrontierReport, path: str, leading: int = 3, max_exponent: int | None = None
) -> list[str]:
    """Draw ``Var(out_t)`` against t (T of the report) and the objective against
    ``T = 2^4, 2^5, …`` up to the report's T (the last point is the table's own number) — or
    up to ``2^max_exponent`` when given — for the best row of each of the ``leading`` best
    mechanisms; write the figure to ``path``.

    The sweep stops at the report's T by default: each point evaluates the row at that T,
    and points up to T cost at most about twice the row at T (sizes double), while a sweep
    to ``2^24`` cost ~20× the whole table at T = 1000.

    Needs matplotlib (the ``plot`` extra).  Returns the labels drawn.
    """
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise ParameterError("plot: needs matplotlib (pip install 'dpref[plot]')") from None
    rows: list[FrontierRow] = []
    for r in report.rows:  # the best row of each of the `leading` best mechanisms
        if r.skipped is None and all(r.mechanism != o.mechanism for o in rows):
            rows.append(r)
    rows = rows[:leading]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4.2))
    T = report.horizon
    step = max(1, T // 4096)
    delta = report.sensitivity
    for r in rows:
        curve = variance_curve(r, T, _budget(report), delta)
        t = np.arange(1, T + 1)
        ax1.plot(t[::step], curve[::step], lw=0.7, label=r.label)
    ax1.set_xlabel("t")
    ax1.set_ylabel("Var(out_t)")
    ax1.set_title(f"T = {T}, " + ", ".join(f"{k} = {v}" for k, v in _budget(report).items()))
    ax1.legend(fontsize=8)
    if max_exponent is None:
        horizons = [2**p for p in range(4, T.bit_length()) if 2**p < T] + [T]
    else:
        top = check_int_range("max_exponent", max_exponent, 4, 24)
        horizons = [2**p for p in range(4, top + 1)]
    for r in rows:
        xs, ys = [], []
        for h in horizons:
            if h == T:  # the table's own number
                row: FrontierRow | None = r
            else:
                row = _evaluate_exact(MECHANISMS[r.mechanism], r.params, h, _budget(report), delta)
            value = None if row is None else (row.max if report.objective == "max" else row.mean)
            if value is not None:
                xs.append(h)
                ys.append(float(value))
        ax2.plot(xs, ys, marker=".", label=r.label)
    if report.objective == "max":  # the bound is on the maximum variance
        ax2.plot(horizons, [_bound_at(report, h) for h in horizons], "k:", label="lower bound")
    ax2.set_xscale("log", base=2)
    ax2.set_xlabel("T")
    ax2.set_ylabel(f"{report.objective} Var over t ≤ T")
    ax2.legend(fontsize=8)
    fig.tight_layout()
    try:
        fig.savefig(path)
    except (OSError, ValueError) as exc:
        raise ParameterError(f"plot={fmt(path)}: cannot write the figure ({exc})") from None
    finally:
        plt.close(fig)
    return [r.label for r in rows]
