"""The ``floats`` suite of ``dpref verify``: the noise each release path really draws.

For every registered mechanism, each of its examples' parameters, each noise kind the
mechanism accepts with them (``laplace`` and ``discrete`` with ``epsilon=``, ``gaussian`` and
``discrete_gaussian`` with ``rho=``; a refusal is listed in the row) and each horizon of
:data:`HORIZONS` (up to ``--max-horizon``), the paths are run on an all-zero stream with
instrumented randomness, and what reaches each node is compared with the exact value of the
node in the mechanism's plan (``m.plan(T)``, whose privacy sum the ``plans`` suite checks
exactly).  Nothing is re-derived: the multipliers are observed where the code applies them.

* ``release`` (continuous): a generator whose standard draws are all 1; the node noise
  handed to the recombination (``combine``) is then the float multiplier of each node,
  which must be at least the exact value — ``Fraction(b_float) ≥ b``,
  ``Fraction(σ_float)² ≥ σ²`` — and within ``2⁻⁴⁸`` of it (relative);
* ``release_many`` (continuous, 2 runs): standard draws ``±2^e``, distinct per draw; node j
  of run r must get draw ``r·N + j`` (a fresh draw per node and per run, in canonical
  order) times the multiplier ``release`` used, bit for bit;
* ``online()`` (continuous, the fast paths of the trees and Hybrid included): standard draws
  that record what they are multiplied by; draw j must be used exactly once, scaled by
  node j's ``release`` multiplier bit for bit, and no other draw used (a path that turns a
  standard draw into a float before scaling it cannot be observed, and fails the row);
* ``release``, ``release_many`` and ``online()`` with the discrete kinds (exact samplers on
  a seeded generator, :func:`dpref.noise.observe_discrete_draws`): one sampler draw per node
  and per run, in canonical order, with exactly the node's plan scale (discrete Laplace) or
  variance (discrete Gaussian); on the batch paths, exactly those draws, in that order,
  are the node noise handed to the recombination.

A path that raises under the instrumented randomness fails its row.  Scope: the examples'
parameters at the horizons and budgets listed in the row; AllWindowSum's extra windows
(``release(windows=)``, ``online().query``) share the nodes but are not run.
"""

from __future__ import annotations

import functools
import math
import time
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt

from dpref.errors import DprefError
from dpref.mechanisms import MECHANISMS, Mechanism
from dpref.noise import NOISE_KINDS, NoiseKind, noise_family, observe_discrete_draws
from dpref.validation import check_choice, check_int_range
from dpref.verify import VerifyOptions, VerifyRow, by_mechanism, splittable

__all__ = [
    "HORIZONS",
    "BudgetedGenerator",
    "DrawBudgetExceeded",
    "ScriptedGenerator",
    "floats_suite",
    "node_exact_values",
]

HORIZONS = (1, 2, 5, 16, 37)
"""Horizons every example is run at (those up to ``--max-horizon``)."""
BUDGETS = (Fraction(7, 10), Fraction(10, 3))
"""ε (or ρ) of the instances with continuous noise: not powers of two, so that most scales
are not floats, and two of them, so that a scale rounded to nearest instead of up lands
below its exact value at some node (``Δ/ε = 3/10`` rounds down, ``10/7`` up).  The
discrete kinds, whose parameters are exact, run at the first."""
TIGHT = Fraction(1, 2**48)
"""A multiplier may exceed its exact value by this much (relative): rounding up costs at
most one ulp (2⁻⁵²); more means the noise drawn is not the plan's."""
MAX_EXPONENT = 800
"""Scripted draws ``±2^e`` use ``|e| ≤ MAX_EXPONENT`` (3202 distinct values; times node
multipliers within ``2^±200`` the products stay normal floats, so they are exact)."""
FloatArray = npt.NDArray[np.float64]


class _Draw:
    """A standard draw of value 1 that records every float it is multiplied by."""

    __slots__ = ("index", "uses")
    __array_ufunc__ = None  # numpy defers to __rmul__ instead of converting

    def __init__(self, index: int) -> None:
        self.index = index
        self.uses: list[float] = []

    def __mul__(self, other: Any) -> float:
        m = float(other)
        self.uses.append(m)
        return m

    __rmul__ = __mul__


def _power(i: int) -> float:
    """The i-th scripted draw: ``±2^e`` with e = 0, 1, −1, 2, −2, …: distinct for
    ``i < 2(2·MAX_EXPONENT + 1)``."""
    k = i // 2
    e = (k + 1) // 2 if k % 2 else -(k // 2)
    if abs(e) > MAX_EXPONENT:
        raise ValueError(f"draw {i}: more draws than distinct scripted values")
    return math.ldexp(-1.0 if i % 2 else 1.0, e)


SCRIPT_MODES = ("unit", "powers", "trace")
"""The scripts of :class:`ScriptedGenerator`."""


class ScriptedGenerator(np.random.Generator):
    """A Generator whose standard Laplace and normal draws are scripted (module doc):
    ``"unit"`` (all 1), ``"powers"`` (draw i is :func:`_power`) or ``"trace"``
    (:class:`_Draw` objects).  It counts the draws; a non-standard request is an error."""

    def __init__(self, mode: str) -> None:
        check_choice("mode", mode, SCRIPT_MODES)
        super().__init__(np.random.PCG64(0))
        self.mode = mode
        self.drawn = 0
        self.draws: list[_Draw] = []

    def _standard(self, size: Any) -> Any:
        if size is None:
            shape: tuple[int, ...] = ()
        elif isinstance(size, int | np.integer):
            shape = (int(size),)
        else:
            shape = tuple(int(s) for s in size)
        n = math.prod(shape)
        first = self.drawn
        self.drawn += n
        if self.mode == "unit":
            out: Any = np.ones(n)
        elif self.mode == "powers":
            out = np.array([_power(i) for i in range(first, first + n)], dtype=np.float64)
        else:
            new = [_Draw(i) for i in range(first, first + n)]
            self.draws.extend(new)
            out = np.empty(n, dtype=object)
            out[:] = new
        return out.reshape(shape) if size is not None else out[0]

    def laplace(self, loc: Any = 0.0, scale: Any = 1.0, size: Any = None) -> Any:
        """Scripted standard Laplace draws (loc 0, scale 1 only)."""
        if loc != 0 or scale != 1:
            raise ValueError(f"laplace(loc={loc}, scale={scale}): not a standard draw")
        return self._standard(size)

    def normal(self, loc: Any = 0.0, scale: Any = 1.0, size: Any = None) -> Any:
        """Scripted standard normal draws (loc 0, scale 1 only)."""
        if loc != 0 or scale != 1:
            raise ValueError(f"normal(loc={loc}, scale={scale}): not a standard draw")
        return self._standard(size)

    def standard_normal(self, size: Any = None, dtype: Any = None, out: Any = None) -> Any:
        """Scripted standard normal draws."""
        if out is not None:
            raise ValueError("standard_normal(out=...): not scripted")
        return self._standard(size)


class DrawBudgetExceeded(RuntimeError):
    """A sampler asked for more uniform integers than a check allows (it would not end)."""


class BudgetedGenerator(np.random.Generator):
    """A seeded PCG64 Generator that refuses more than ``budget`` calls of ``integers`` (the
    exact samplers' source): a sampler that never accepts fails a row instead of hanging."""

    def __init__(self, seed: int, budget: int = 10**6) -> None:
        check_int_range("seed", seed, 0, None)
        super().__init__(np.random.PCG64(seed))
        self.budget = check_int_range("budget", budget, 1, None)

    def integers(self, *args: Any, **kwargs: Any) -> Any:
        """``Generator.integers``, counted."""
        self.budget -= 1
        if self.budget < 0:
            raise DrawBudgetExceeded("a sampler drew more uniform integers than allowed")
        return super().integers(*args, **kwargs)


def node_exact_values(m: Mechanism, horizon: int) -> list[Fraction]:
    """Each node's exact noise parameter in canonical order, from the plan: the Laplace
    scale ``b_n`` (pure ε) or the variance ``σ_n²`` (zCDP)."""
    plan = m.plan(horizon)
    return [plan.scale_table[int(i)] for i in plan.scale_idx]


def _float_problem(m: float, exact: Fraction, gaussian: bool) -> str:
    """Why the float multiplier ``m`` is not the exact value rounded up ('' when it is)."""
    if not math.isfinite(m) or m <= 0:
        return f"multiplier {m!r} for exact {exact}"
    got = Fraction(m) ** 2 if gaussian else Fraction(m)
    what = "σ²" if gaussian else "b"
    if got < exact:
        return f"{what}_float = {got} < exact {what} = {exact} (unsafe rounding)"
    if got > exact * (1 + TIGHT) ** (2 if gaussian else 1):
        return f"{what}_float = {float(got)!r} is not the exact {what} = {exact} rounded up"
    return ""


class _Capture:
    """Replaces ``m.combine`` on one instance to record the node noise it is handed."""

    def __init__(self, m: Mechanism) -> None:
        self.m = m
        self.seen: list[FloatArray] = []
        self.real = m.combine

    def __enter__(self) -> _Capture:
        def combine(noise: FloatArray, horizon: int) -> FloatArray:
            z = np.asarray(noise, dtype=np.float64)
            self.seen.append(z.copy())
            return self.real(z, horizon)

        self.m.combine = combine  # type: ignore[method-assign]
        return self

    def __exit__(self, *exc: object) -> None:
        del self.m.combine


def _continuous(m: Mechanism, T: int, exact: list[Fraction]) -> list[str]:
    """The three continuous paths (module doc); one entry per check, '' when passed."""
    gaussian = m.rho is not None
    n = len(exact)
    x = np.zeros(T)
    out: list[str] = []
    gen = ScriptedGenerator("unit")
    with _Capture(m) as cap:
        m.release(x, rng=gen)
    if len(cap.seen) != 1 or cap.seen[0].shape != (n,) or gen.drawn != n:
        shapes = [z.shape for z in cap.seen]
        return [f"release: {gen.drawn} draws, node noise {shapes}; the plan has {n} nodes"]
    mult = cap.seen[0]
    for j in range(n):
        problem = _float_problem(float(mult[j]), exact[j], gaussian)
        out.append(f"release node {j}: {problem}" if problem else "")
    gen = ScriptedGenerator("powers")
    with _Capture(m) as cap:
        m.release_many(x, runs=2, rng=gen)
    if len(cap.seen) != 1 or cap.seen[0].shape != (2, n) or gen.drawn != 2 * n:
        shapes = [z.shape for z in cap.seen]
        out.append(f"release_many: {gen.drawn} draws, node noise {shapes}; want 2 × {n}")
    else:
        z = cap.seen[0]
        bad = [
            (r, j)
            for r in range(2)
            for j in range(n)
            if z[r, j] != mult[j] * _power(r * n + j)  # exact: a power of two times mult
        ]
        out.append(
            f"release_many run {bad[0][0]} node {bad[0][1]}: not draw {bad[0][0] * n + bad[0][1]}"
            f" times release's multiplier ({len(bad)} such nodes)"
            if bad
            else ""
        )
    gen = ScriptedGenerator("trace")
    try:
        m.online(rng=gen).run(x)
    except (TypeError, ValueError) as exc:
        return [*out, f"online: a standard draw used other than scaled ({exc})"]
    if gen.drawn < n:
        return [*out, f"online: {gen.drawn} standard draws for {n} nodes"]
    for d in gen.draws[:n]:  # draw j: node j's, once, scaled as release scales node j
        want = [float(mult[d.index])]
        ok = d.uses == want
        out.append("" if ok else f"online draw {d.index}: scaled by {d.uses}, want {want}")
    extra = [d.index for d in gen.draws[n:] if d.uses]  # buffered draws beyond: unused
    out.append(f"online: draws {extra[:5]} used beyond the {n} nodes" if extra else "")
    return out


def _record(
    seen: list[tuple[NoiseKind, Fraction, float]],
    kind: NoiseKind,
    param: Fraction,
    values: FloatArray,
) -> None:
    seen.extend((kind, param, float(v)) for v in values)


def _discrete(m: Mechanism, T: int, exact: list[Fraction], seed: int) -> list[str]:
    """The discrete paths (module doc); one entry per check, '' when passed."""
    n = len(exact)
    x = np.zeros(T)
    out: list[str] = []
    for path, runs in (("release", None), ("release_many", 2), ("online", None)):
        seen: list[tuple[NoiseKind, Fraction, float]] = []
        rng = BudgetedGenerator(seed)
        with observe_discrete_draws(functools.partial(_record, seen)), _Capture(m) as cap:
            try:
                if path == "release":
                    m.release(x, rng=rng)
                elif path == "release_many":
                    m.release_many(x, runs=2, rng=rng)
                else:
                    m.online(rng=rng).run(x)
            except DrawBudgetExceeded as exc:
                out.append(f"{path}: {exc}")
                continue
        want = n * (runs or 1)
        if len(seen) != want:
            out.append(f"{path}: {len(seen)} sampler draws, want {want} (one per node and run)")
            continue
        for c, (kind, param, _) in enumerate(seen):
            j = c % n
            target = exact[j]
            if kind != m.noise:
                out.append(f"{path} draw {c}: a {kind} draw for noise={m.noise}")
            elif param < target:
                out.append(f"{path} draw {c} (node {j}): parameter {param} < exact {target}")
            elif param != target:
                out.append(f"{path} draw {c} (node {j}): parameter {param}, the plan's {target}")
            else:
                out.append("")
        if path != "online":  # the node noise is the sampler's draws, in canonical order
            drawn = np.array([v for _, _, v in seen])
            ok = len(cap.seen) == 1 and np.array_equal(cap.seen[0].ravel(), drawn)
            out.append("" if ok else f"{path}: the node noise is not the draws, in order")
    return out


class _Refused(Exception):
    """The class refuses this noise kind with these parameters (by design, a DprefError)."""


def _instance(
    cls: type[Mechanism], kwargs: dict[str, Any], T: int, seed: int, first: bool
) -> tuple[str, list[str]]:
    """Build one instance and run its paths: ``(label, problems per check)``.  A refusal at
    the first horizon and budget raises :class:`_Refused`; anything else that raises — a
    refusal where the class accepted before, or a crash — is a failed check."""
    label = f"{cls.__name__}({', '.join(f'{a}={v}' for a, v in kwargs.items())})"
    try:
        m = cls(**kwargs)
    except DprefError as exc:
        if first:
            raise _Refused(str(exc)) from None
        return label, [f"refused where it accepted the first horizon and budget: {exc}"]
    except Exception as exc:  # a crash of the constructor fails the row
        return label, [f"raised {type(exc).__name__}: {exc}"]
    try:
        exact = node_exact_values(m, T)
        if kwargs["noise"] in ("laplace", "gaussian"):
            return repr(m), _continuous(m, T, exact)
        return repr(m), _discrete(m, T, exact, seed)
    except Exception as exc:  # a crash under checked noise fails the row
        return repr(m), [f"raised {type(exc).__name__}: {exc}"]


@splittable(by_mechanism)
def floats_suite(opts: VerifyOptions) -> list[VerifyRow]:
    """Per mechanism: the floats and sampler draws of every path (module doc)."""
    rows = []
    for name in opts.mechanisms or tuple(MECHANISMS):
        cls = MECHANISMS[name]
        start = time.perf_counter()
        checks = failed = 0
        detail = ""
        refused: dict[str, str] = {}
        paths: set[str] = set()
        horizons = [T for T in HORIZONS if T <= opts.max_exhaustive] or [1]
        for k, ex in enumerate(cls.examples):
            for kind in NOISE_KINDS:
                budget_name = "rho" if noise_family(kind) == "gaussian" else "epsilon"
                budgets = BUDGETS if kind in ("laplace", "gaussian") else BUDGETS[:1]
                try:
                    for budget in budgets:
                        for T in horizons:
                            kwargs: dict[str, Any] = {**ex.kwargs(cls, T), "noise": kind}
                            kwargs[budget_name] = budget
                            first = T == horizons[0] and budget == budgets[0]
                            label, results = _instance(cls, kwargs, T, opts.seed + T, first)
                            paths.add(kind)
                            checks += len(results)
                            bad = [r for r in results if r]
                            failed += len(bad)
                            if bad and not detail:
                                detail = f"{label} T={T}: {bad[0]}"
                except _Refused as exc:
                    refused.setdefault(kind, f"example {k}: {exc}")
        rows.append(
            VerifyRow(
                "floats",
                name,
                checks,
                failed,
                seconds=time.perf_counter() - start,
                detail=detail
                or (
                    "every node's float ≥ exact (tight), one fresh draw per node and run on "
                    f"release, release_many, online; noise {', '.join(sorted(paths))}; "
                    f"T ∈ {{{', '.join(map(str, horizons))}}}, budget "
                    f"{' and '.join(map(str, BUDGETS))} (discrete: {BUDGETS[0]})"
                    + "".join(f"; refuses {kind} ({why})" for kind, why in refused.items())
                ),
            )
        )
    return rows
