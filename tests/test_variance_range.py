"""Issue 26 item 4: ``variance(T)`` of every mechanism is the exact per-step variance, each
float the nearest to the exact Fraction, computed without a per-step Fraction where the class
has a vectorised form (:mod:`dpref.mechanisms.variance_floats`), up to ``MAX_VARIANCE_STEPS``.

The default-run tests compare the fast paths with the per-step Fractions at small T; the
``slow`` ones run T = 2²⁰."""

from __future__ import annotations

import random
from fractions import Fraction

import numpy as np
import pytest

from dpref.mechanisms import MECHANISMS
from dpref.mechanisms.variance_floats import counts_to_floats


def _built(name: str, privacy: str, horizon: int) -> object:
    cls = MECHANISMS[name]
    kw = cls.examples[0].kwargs(cls, horizon)
    kw["horizon"] = horizon
    budget = Fraction(1, 3) if privacy == "epsilon" else Fraction(2, 7)
    return cls(**{privacy: budget}, **kw)


@pytest.mark.parametrize("name", sorted(MECHANISMS))
@pytest.mark.parametrize("privacy", ["epsilon", "rho"])
def test_variance_is_the_nearest_float_of_the_exact_value(name: str, privacy: str) -> None:
    """Every registered mechanism, both budgets (where offered), T = 200: ``variance(T)``
    equals ``float`` of each exact Fraction, bit for bit, where the class has
    ``variance_counts`` (:func:`counts_to_floats`) or is the square root (fixed-point sums);
    BLT's float decoder (doubling) within 10⁻¹³ (measured ≤ 1.4·10⁻¹⁴), the decayed sums'
    vectorised float formulas (Laplace) within 10⁻¹⁴ (measured ≤ 3.4·10⁻¹⁶)."""
    T = 200
    try:
        m = _built(name, privacy, T)
    except ValueError:
        pytest.skip(f"{name} takes no {privacy}")
    fast = m.variance(T)  # type: ignore[attr-defined]
    exact = [float(v) for v in m.variance_exact(T)]  # type: ignore[attr-defined]
    if m.variance_counts(T) is not None or name == "sqrt":  # type: ignore[attr-defined]
        assert fast.tolist() == exact
    elif name == "blt":  # float decoder by doubling + blocked sums (measured ≤ 1.4e−14)
        np.testing.assert_allclose(fast, exact, rtol=1e-13, atol=0)
    else:
        np.testing.assert_allclose(fast, exact, rtol=1e-14, atol=0)


def test_counts_to_floats_rounds_like_fraction_in_every_path() -> None:
    """The int64 path, the one-group table and the several-group sum (units with 100-bit
    denominators, 40 rows of 0..3 counts: three groups) all give ``float(Fraction)``."""
    rng = np.random.default_rng(5)
    gen = random.Random(5)
    T = 300
    cases = [
        (Fraction(3, 8), rng.integers(0, 1000, T)),  # int64 path
        (tuple(Fraction(gen.randrange(1, 99), 7) for _ in range(3)), rng.integers(0, 5, (3, T))),
        (
            tuple(Fraction(gen.getrandbits(120) + 1, gen.getrandbits(100) + 1) for _ in range(40)),
            rng.integers(0, 4, (40, T)),
        ),
        (Fraction(2**200 + 1, 3**90), rng.integers(0, 2**40, T)),  # one big row
    ]
    for units, counts in cases:
        us = (units,) if isinstance(units, Fraction) else units
        n = np.asarray(counts).reshape(len(us), T)
        want = [
            float(sum((u * int(c) for u, c in zip(us, col, strict=True)), Fraction(0)))
            for col in n.T
        ]
        assert counts_to_floats(units, counts).tolist() == want
