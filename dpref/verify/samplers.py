"""The ``samplers`` suite of ``dpref verify``: the noise samplers' laws, computed exactly.

No sample is drawn.  Each row drives the sampler's own code (:mod:`dpref.noise`) with a
scripted source of randomness and enumerates its random choices:

* ``bernoulli_exp``: :func:`~dpref.noise.bernoulli_exp_neg` (CKS 2020, Algorithm 1) run on
  every sequence of uniform integers up to ``D`` calls.  The mass of the paths returning
  True is a Fraction; it must equal, exactly, the Taylor partial sums of ``e^{−γ}`` that the
  algorithm's specification gives for those paths (for γ ≤ 1 and ``D`` odd:
  ``Σ_{i≤D} (−γ)^i/i!``; the truncated mass is ``γ^D/D!``).
* ``discrete_laplace``: one pass of the rejection loop of CKS Algorithm 2
  (:func:`~dpref.noise._discrete_laplace_attempt`) enumerated over every uniform integer and
  every outcome of its Bernoulli(exp(−γ)) coins, each coin an exact symbolic weight
  ``e^{−γ}`` / ``1 − e^{−γ}``.  Probabilities are finite sums ``Σ c_i e^{−a_i}`` with
  rational ``c_i, a_i`` (:class:`ExpSum`); since the ``e^{−a}`` of distinct rationals are
  linearly independent over the rationals (Lindemann–Weierstrass), equality is decided
  exactly by comparing coefficients.  With ``A(z)`` the accepted mass of z and ``Rej`` the
  rejected mass, the law is ``A(z)/(1 − Rej)``; the check is
  ``A(z)·(1 + q) = (1 − Rej)·(1 − q)·q^{|z|}`` (``q = e^{−1/b}``), for every ``|z| ≤ Z``,
  and that the enumerated masses, the rejected mass and the truncated mass sum to 1.
  Total variation 0 on ``|z| ≤ Z``; beyond, the target's mass is ``2q^{Z+1}/(1+q)``.
* ``discrete_gaussian``: CKS Algorithm 3's acceptance test
  (:func:`~dpref.noise._discrete_gaussian_accept`) enumerated over proposals ``|y| ≤ Y``
  with the exact DLap(t) weights ``∝ e^{−|y|/t}`` (the row above checks that law) and its
  symbolic coin; the accepted mass must be exactly proportional to ``e^{−y²/(2σ²)}``
  (``A(y)·e^{−y'²/(2σ²)} = A(y')·e^{−y²/(2σ²)}``), i.e. TV 0 on ``|y| ≤ Y`` up to the
  normalisation, which only the tails ``|y| > Y`` move.
* both discrete rows also check, draw for draw on a seeded generator, that the public
  samplers (:func:`~dpref.noise.discrete_laplace`, :func:`~dpref.noise.discrete_gaussian`)
  are those checked pieces composed: the pass repeated until it accepts, at ``t/s = b``;
  DLap(⌊σ⌋+1) proposals and the checked acceptance test.
* ``continuous``: :func:`~dpref.noise.standard_laplace` and
  :func:`~dpref.noise.standard_normal` run on a stand-in generator whose draws are numpy's
  documented inverse-CDF transforms evaluated at a grid of exact uniforms ``u = i/64``;
  each output must be the standard quantile at ``u`` (computed with mpmath at 80 bits) to
  within 4 ulps — a draw of the wrong scale (e.g. unit variance instead of unit scale)
  is off by a constant factor.  numpy's samplers themselves are trusted as documented.

References
----------
.. [1] C. Canonne, G. Kamath, T. Steinke. "The Discrete Gaussian for Differential
   Privacy." NeurIPS 2020, Algorithms 1–3.
"""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Callable, Mapping, Sequence
from fractions import Fraction
from typing import Any

from dpref import noise
from dpref.validation import check_int_range
from dpref.verify import VerifyOptions, VerifyRow
from dpref.verify.floats import BudgetedGenerator, DrawBudgetExceeded

__all__ = ["ExpSum", "enumerate_paths", "sampler_suite"]

GAMMAS: tuple[tuple[Fraction, int], ...] = (
    (Fraction(0), 1),
    (Fraction(1), 5),
    (Fraction(1, 2), 5),
    (Fraction(2, 3), 3),
    (Fraction(5, 7), 3),
    (Fraction(3, 2), 5),
)
"""``(γ, D)``: the Bernoulli(exp(−γ)) coins enumerated, up to ``D`` uniform integers."""
LAPLACE_SCALES = (Fraction(1), Fraction(1, 2), Fraction(3, 2), Fraction(7, 3), Fraction(5))
"""Discrete Laplace scales whose law is enumerated (``t/s`` with small t)."""
LAPLACE_Z = 6
"""Outputs ``|z| ≤ LAPLACE_Z`` are compared."""
GAUSS_SIGMA2 = (Fraction(1, 3), Fraction(1), Fraction(5, 2), Fraction(9))
"""Discrete Gaussian variances whose law is enumerated."""
GAUSS_Y = 12
"""Proposals ``|y| ≤ GAUSS_Y`` are compared."""


class ExpSum:
    """An exact number ``Σ c_i·e^{−a_i}`` (rational ``c_i``, ``a_i``), kept as ``{a_i: c_i}``.

    Two are equal iff their coefficients are (Lindemann–Weierstrass: ``e^{a}`` for distinct
    rationals a are linearly independent over the algebraic numbers)."""

    __slots__ = ("terms",)

    def __init__(self, terms: Mapping[Fraction, Fraction] | None = None) -> None:
        self.terms: dict[Fraction, Fraction] = {a: c for a, c in (terms or {}).items() if c}

    @classmethod
    def const(cls, c: Fraction | int) -> ExpSum:
        """The rational ``c``."""
        return cls({Fraction(0): Fraction(c)})

    @classmethod
    def exp_neg(cls, a: Fraction) -> ExpSum:
        """``e^{−a}``."""
        return cls({Fraction(a): Fraction(1)})

    def __add__(self, other: ExpSum) -> ExpSum:
        out = dict(self.terms)
        for a, c in other.terms.items():
            out[a] = out.get(a, Fraction(0)) + c
        return ExpSum(out)

    def __sub__(self, other: ExpSum) -> ExpSum:
        return self + other.scale(Fraction(-1))

    def __mul__(self, other: ExpSum) -> ExpSum:
        out: dict[Fraction, Fraction] = {}
        for a, c in self.terms.items():
            for b, d in other.terms.items():
                out[a + b] = out.get(a + b, Fraction(0)) + c * d
        return ExpSum(out)

    def scale(self, c: Fraction) -> ExpSum:
        """``c`` times this."""
        return ExpSum({a: c * v for a, v in self.terms.items()})

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ExpSum) and self.terms == other.terms

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return " + ".join(f"{c}·e^-({a})" for a, c in sorted(self.terms.items())) or "0"


class _Branch(Exception):
    """Raised by the scripted source when the script runs out: the choice's outcomes."""

    def __init__(self, outcomes: list[tuple[Any, ExpSum]]) -> None:
        super().__init__()
        self.outcomes = outcomes


class _Truncated(Exception):
    """The path needs more choices than the enumeration allows."""


class _Script:
    """A scripted source of randomness: ``integers(0, n)`` (what
    :func:`~dpref.noise.uniform_below` calls) and, when ``symbolic``, Bernoulli(exp(−γ))
    coins with exact symbolic weights.  Replays a fixed prefix of choices, then raises
    :class:`_Branch` with the next choice's outcomes."""

    def __init__(self, prefix: list[Any], max_choices: int) -> None:
        self.prefix = prefix
        self.pos = 0
        self.max_choices = max_choices

    def _next(self, outcomes: Callable[[], list[tuple[Any, ExpSum]]]) -> Any:
        if self.pos < len(self.prefix):
            self.pos += 1
            return self.prefix[self.pos - 1]
        if self.pos >= self.max_choices:
            raise _Truncated
        raise _Branch(outcomes())

    def integers(self, low: int, high: int | None = None, size: Any = None) -> int:
        """A uniform integer in ``[low, high)`` (numpy's signature, scalar only)."""
        if high is None:
            low, high = 0, low
        if size is not None:
            raise TypeError("the scripted source serves scalar integers only")
        n = int(high) - int(low)
        w = ExpSum.const(Fraction(1, n))
        return int(self._next(lambda: [(int(low) + i, w) for i in range(n)]))

    def coin(self, _rng: Any, gamma: Fraction) -> bool:
        """Bernoulli(exp(−γ)), as a symbolic choice."""
        g = Fraction(gamma)
        if g < 0:
            raise ValueError(f"gamma={g}: must be >= 0")
        p = ExpSum.exp_neg(g)
        return bool(self._next(lambda: [(True, p), (False, ExpSum.const(1) - p)]))


def enumerate_paths(
    run: Callable[[_Script], Any], max_choices: int
) -> tuple[dict[Any, ExpSum], ExpSum]:
    """Every outcome of ``run`` over all choice sequences of at most ``max_choices`` choices:
    ``({outcome: exact mass}, truncated mass)``."""
    check_int_range("max_choices", max_choices, 0, None)
    law: dict[Any, ExpSum] = {}
    truncated = ExpSum()
    stack: list[tuple[list[Any], ExpSum]] = [([], ExpSum.const(1))]
    while stack:
        prefix, mass = stack.pop()
        script = _Script(prefix, max_choices)
        try:
            out = run(script)
        except _Branch as b:
            stack.extend(([*prefix, v], mass * w) for v, w in b.outcomes)
            continue
        except _Truncated:
            truncated = truncated + mass
            continue
        law[out] = law.get(out, ExpSum()) + mass
    return law, truncated


def _taylor_true_mass(stages: list[Fraction], calls: int) -> Fraction:
    """The mass of the True paths of Algorithm 1 with at most ``calls`` uniform integers.

    Per stage of parameter γ (the γ = 1 stages for γ > 1, then the rest), the k-loop stops
    at k = j with probability ``p_γ(j) = γ^{j−1}/(j−1)! − γ^j/j!`` after j integers; the
    coin is True when every stage stops at an odd j (``Σ_{j odd} p_γ(j) = e^{−γ}``)."""

    def p(g: Fraction, j: int) -> Fraction:
        return g ** (j - 1) / math.factorial(j - 1) - g**j / math.factorial(j)

    total = Fraction(0)

    def walk(i: int, left: int, mass: Fraction) -> None:
        nonlocal total
        if i == len(stages):
            total += mass
            return
        for j in range(1, left + 1, 2):
            walk(i + 1, left - j, mass * p(stages[i], j))

    walk(0, calls, Fraction(1))
    return total


def _check_bernoulli(gamma: Fraction, calls: int) -> str:
    law, truncated = enumerate_paths(
        lambda s: noise.bernoulli_exp_neg(s, gamma),  # type: ignore[arg-type]
        calls,
    )
    one = ExpSum.const(1)
    got = law.get(True, ExpSum())
    if sum(law.values(), ExpSum()) + truncated != one:
        return f"γ={gamma}: enumerated masses do not sum to 1"
    stages = [Fraction(1)] * (math.ceil(gamma) - 1) + [gamma - (math.ceil(gamma) - 1)]
    if gamma == 0:
        stages = [Fraction(0)]
    want = ExpSum.const(_taylor_true_mass(stages, calls))
    if got != want:
        return f"γ={gamma}: P[True] over {calls} integers is {got}, want {want}"
    return ""


def _check_laplace(scale: Fraction, zmax: int) -> str:
    s, t = scale.denominator, scale.numerator
    # a pass makes v + 4 choices (u, its coin, v + 1 coins of the v-loop, the sign) and
    # returns |y| = ⌊(u + tv)/s⌋: every |z| ≤ zmax needs v ≤ v_max, so its paths are complete
    v_max = (s * (zmax + 1)) // t + 1
    law, truncated = enumerate_paths(
        lambda sc: noise._discrete_laplace_attempt(sc, s, t, sc.coin),  # type: ignore[arg-type]
        v_max + 4,
    )
    one = ExpSum.const(1)
    if sum(law.values(), ExpSum()) + truncated != one:
        return f"b={scale}: enumerated masses do not sum to 1"
    rej = law.get(None, ExpSum())
    q = ExpSum.exp_neg(Fraction(1) / scale)
    for z in range(-zmax, zmax + 1):
        a = law.get(z, ExpSum())
        lhs = a * (one + q)
        rhs = (one - rej) * (one - q) * ExpSum.exp_neg(abs(z) / scale)
        if lhs != rhs:
            return f"b={scale}: z={z}: A(z)·(1+q) = {lhs}, want (1−Rej)(1−q)q^|z| = {rhs}"
    return ""


def _accept(sigma2: Fraction, t: int, y: int, script: _Script) -> bool:
    """Algorithm 3's acceptance test of proposal y, on the symbolic coin."""
    return noise._discrete_gaussian_accept(script, sigma2, t, y, script.coin)  # type: ignore[arg-type]


def _check_gaussian(sigma2: Fraction, ymax: int) -> str:
    t = math.isqrt(sigma2.numerator // sigma2.denominator) + 1
    accepted: dict[int, ExpSum] = {}
    for y in range(-ymax, ymax + 1):
        law, truncated = enumerate_paths(functools.partial(_accept, sigma2, t, y), 1)
        if truncated.terms or set(law) - {True, False}:
            return f"σ²={sigma2}: the acceptance test of y={y} is not one coin"
        accepted[y] = ExpSum.exp_neg(Fraction(abs(y), t)) * law.get(True, ExpSum())
    g = {y: ExpSum.exp_neg(Fraction(y * y) / (2 * sigma2)) for y in accepted}
    for y in accepted:
        if accepted[y] * g[0] != accepted[0] * g[y]:
            return (
                f"σ²={sigma2}: accepted mass of y={y} over y=0 is not "
                f"exp(−y²/(2σ²)): {accepted[y]} vs {accepted[0]}"
            )
    return ""


class _QuantileSource:
    """A stand-in generator whose draws are numpy's documented inverse-CDF transforms at
    exact uniforms ``u_i = i/(n+1)`` (only the methods the samplers may call)."""

    def __init__(self, n: int) -> None:
        self.n = n

    def _u(self, size: Any) -> list[Fraction]:
        count = int(size if isinstance(size, int) else math.prod(size))
        if count != self.n:
            raise ValueError(f"size={size}: the grid has {self.n} points")
        return [Fraction(i, self.n + 1) for i in range(1, self.n + 1)]

    def laplace(self, loc: float = 0.0, scale: float = 1.0, size: Any = None) -> Any:
        import numpy as np

        return np.array([loc + scale * _laplace_quantile(u) for u in self._u(size)])

    def normal(self, loc: float = 0.0, scale: float = 1.0, size: Any = None) -> Any:
        import numpy as np

        return np.array([loc + scale * _normal_quantile(u) for u in self._u(size)])

    def standard_normal(self, size: Any = None, **_: Any) -> Any:
        return self.normal(0.0, 1.0, size)


COMPOSED_DRAWS = 40
"""Draws compared in each composition check."""
COMPOSED_BUDGET = 20_000
"""Uniform integers a composition check may use (about 10 per draw are expected)."""


def _check_laplace_composed(scale: Fraction, seed: int) -> str:
    """The public sampler is the checked pass, repeated until it accepts, at ``t/s = b``:
    ``discrete_laplace(rng, b, n)`` draws what ``n`` such loops draw, on the same seed."""
    got = noise.discrete_laplace(BudgetedGenerator(seed, COMPOSED_BUDGET), scale, COMPOSED_DRAWS)
    rng = BudgetedGenerator(seed, COMPOSED_BUDGET)
    want = []
    for _ in range(COMPOSED_DRAWS):
        y = None
        while y is None:
            y = noise._discrete_laplace_attempt(
                rng, scale.denominator, scale.numerator, noise.bernoulli_exp_neg
            )
        want.append(float(y))
    if got.tolist() != want:
        return f"b={scale}: discrete_laplace is not the checked pass at t/s = b, repeated"
    return ""


def _check_gaussian_composed(sigma2: Fraction, seed: int) -> str:
    """``discrete_gaussian(rng, σ², n)`` draws what ``n`` loops of a DLap(t) proposal (the
    sampler checked above) and the checked acceptance test draw, on the same seed, with
    ``t = ⌊σ⌋ + 1`` (any integer t ≥ 1 gives the same law; this one is CKS's)."""
    got = noise.discrete_gaussian(BudgetedGenerator(seed, COMPOSED_BUDGET), sigma2, COMPOSED_DRAWS)
    rng = BudgetedGenerator(seed, COMPOSED_BUDGET)
    t = math.isqrt(sigma2.numerator // sigma2.denominator) + 1
    want = []
    for _ in range(COMPOSED_DRAWS):
        while True:
            y = noise._discrete_laplace_one(rng, 1, t)
            if noise._discrete_gaussian_accept(rng, sigma2, t, y, noise.bernoulli_exp_neg):
                break
        want.append(float(y))
    if got.tolist() != want:
        return f"σ²={sigma2}: discrete_gaussian is not DLap(t) proposals and the checked test"
    return ""


def _laplace_quantile(u: Fraction) -> float:
    """The standard Laplace quantile at u (80-bit mpmath, then to the nearest float)."""
    import mpmath  # type: ignore[import-untyped]

    with mpmath.workprec(80):
        v = mpmath.mpf(u.numerator) / u.denominator
        x = mpmath.log(2 * v) if u < Fraction(1, 2) else -mpmath.log(2 - 2 * v)
        return float(x)


def _normal_quantile(u: Fraction) -> float:
    """The standard normal quantile at u (80-bit mpmath, then to the nearest float)."""
    import mpmath

    with mpmath.workprec(80):
        v = mpmath.mpf(u.numerator) / u.denominator
        return float(mpmath.sqrt(2) * mpmath.erfinv(2 * v - 1))


def _check_continuous(
    sampler: Callable[[Any, int], Any], quantile: Callable[[Fraction], float], n: int = 63
) -> str:
    try:
        out = [float(v) for v in sampler(_QuantileSource(n), n)]
    except (AttributeError, TypeError, ValueError) as exc:
        return f"not a transform of the modelled draws ({type(exc).__name__}: {exc})"
    for i, v in enumerate(out, 1):
        want = quantile(Fraction(i, n + 1))
        if abs(v - want) > 4 * math.ulp(want):
            return f"u={i}/{n + 1}: draw {v!r}, the standard quantile is {want!r}"
    return ""


def sampler_suite(opts: VerifyOptions) -> list[VerifyRow]:
    """Exact laws of the samplers (module doc); the same rows for every ``opts``."""
    rows = []
    cases: list[tuple[str, Sequence[Callable[[], str]]]] = [
        ("bernoulli_exp", [functools.partial(_check_bernoulli, g, d) for g, d in GAMMAS]),
        (
            "discrete_laplace",
            [functools.partial(_check_laplace, b, LAPLACE_Z) for b in LAPLACE_SCALES]
            + [functools.partial(_check_laplace_composed, b, opts.seed) for b in LAPLACE_SCALES],
        ),
        (
            "discrete_gaussian",
            [functools.partial(_check_gaussian, s2, GAUSS_Y) for s2 in GAUSS_SIGMA2]
            + [functools.partial(_check_gaussian_composed, s2, opts.seed) for s2 in GAUSS_SIGMA2],
        ),
        (
            "continuous",
            [
                functools.partial(_check_continuous, noise.standard_laplace, _laplace_quantile),
                functools.partial(_check_continuous, noise.standard_normal, _normal_quantile),
            ],
        ),
    ]
    summaries = {
        "bernoulli_exp": "P[True] = Taylor partial sums of e^−γ exactly, γ ∈ "
        + ", ".join(str(g) for g, _ in GAMMAS),
        "discrete_laplace": f"law = DLap(b) exactly on |z| ≤ {LAPLACE_Z}, b ∈ "
        + ", ".join(str(b) for b in LAPLACE_SCALES)
        + "; discrete_laplace = that pass, repeated",
        "discrete_gaussian": f"accepted ∝ exp(−y²/2σ²) exactly on |y| ≤ {GAUSS_Y}, σ² ∈ "
        + ", ".join(str(s) for s in GAUSS_SIGMA2)
        + "; discrete_gaussian = DLap(t) proposals and that test",
        "continuous": "Laplace and normal draws = standard quantiles on a 63-point grid",
    }
    for name, checks in cases:
        start = time.perf_counter()
        failed = 0
        detail = ""
        for check in checks:
            try:
                problem = check()
            except DrawBudgetExceeded as exc:
                problem = f"{name}: {exc}"
            if problem:
                failed += 1
                detail = detail or problem
        rows.append(
            VerifyRow(
                "samplers",
                name,
                len(checks),
                failed,
                seconds=time.perf_counter() - start,
                detail=detail or summaries[name],
            )
        )
    return rows
