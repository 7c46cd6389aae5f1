"""``dpref.strategy.scale_all``: the fast exact products behind the Toeplitz plans'
variances are the very Fractions ``v * s`` gives (value, and lowest terms)."""

from __future__ import annotations

import random
from fractions import Fraction

import pytest

from dpref.strategy import scale_all


def _fraction(rng: random.Random) -> Fraction:
    """Dyadic, odd-denominator, mixed, negative, zero, and long ones."""
    kind = rng.randrange(5)
    bits = rng.choice((3, 60, 2000))
    num = rng.randrange(-(2**bits), 2**bits)
    if kind == 0:
        den = 2 ** rng.randrange(0, bits)
    elif kind == 1:
        den = rng.randrange(1, 2**bits) | 1
    elif kind == 2:
        den = (rng.randrange(1, 50) | 1) << rng.randrange(0, bits)
    elif kind == 3:
        den = rng.randrange(1, 2**bits)
    else:
        num, den = num << rng.randrange(0, 40), 1 << rng.randrange(0, 40)
    return Fraction(num, den)


@pytest.mark.parametrize("seed", range(5))
def test_scale_all_is_the_plain_product(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(20):
        v = _fraction(rng)
        values = [_fraction(rng) for _ in range(25)] + [Fraction(0), Fraction(-1), Fraction(1, 2)]
        got = scale_all(v, values)
        want = [v * s for s in values]
        assert got == want
        assert [(g.numerator, g.denominator) for g in got] == [
            (w.numerator, w.denominator) for w in want
        ]


def test_scale_all_of_nothing_and_of_zero() -> None:
    assert scale_all(Fraction(3, 4), []) == []
    (zero,) = scale_all(Fraction(0), [Fraction(5, 8)])
    assert (zero.numerator, zero.denominator) == (0, 1)
