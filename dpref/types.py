"""The types of dpref's public parameters, named once.

The mechanism constructors and the public functions take these; each is checked at run
time by a checker of :mod:`dpref.validation`, which raises a
:class:`~dpref.errors.DprefError` naming the parameter and the value for anything else.

**Floats as budgets.** A float given as a :data:`Budget` or an :data:`ExactReal` is read as
the shortest decimal that prints it: ``epsilon=0.1`` is exactly ``1/10``, the same as
``epsilon="0.1"`` and ``--epsilon 0.1`` on the command line
(:func:`~dpref.validation.check_exact`; docs/getting-started.md, "Floats as budgets").  The
float-derived parameters of BLT (θ, ω) are taken at their exact binary value instead.
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from fractions import Fraction
from typing import Any, TypeAlias

import numpy as np
import numpy.typing as npt

__all__ = ["Budget", "BudgetSplit", "Count", "ExactReal", "Horizon", "Seed", "Stream"]

ExactReal: TypeAlias = (
    int | float | str | Fraction | numbers.Rational | np.integer[Any] | np.floating[Any]
)
"""A real number dpref keeps exactly, as a :class:`~fractions.Fraction`: an int, a
``Fraction`` (or another rational), a string such as ``"1/3"``, ``"0.1"`` or ``"1e-5"``, or
a finite float (Python or numpy).  NaN, infinities and bools are refused.  For the decay
parameters (α, β, c, AllWindowSum's δ) a float is read as the shortest decimal that
round-trips (``0.1`` is ``1/10``), as for a :data:`Budget`; a sensitivity Δ or a domain
bound takes a float at its exact binary value (float items are compared with it)."""

Budget: TypeAlias = ExactReal
"""A privacy budget — ε, ρ, a per-level share, δ or μ — given as an :data:`ExactReal`:
``1``, ``"1/2"``, ``Fraction(1, 10)`` or ``0.1`` (exactly ``1/10``).  It must be > 0 (δ < 1);
each checker states its range."""

Horizon: TypeAlias = int | np.integer[Any]
"""T, the number of items: a positive integer (a Python or numpy int; not a float, not a
bool), at most :data:`~dpref.mechanisms.base.MAX_HORIZON`."""

Count: TypeAlias = int | np.integer[Any]
"""A positive integer parameter of a mechanism: a block size, an arity k, a window W, a
number of participations or runs (a Python or numpy int; not a float, not a bool)."""

BudgetSplit: TypeAlias = str | Sequence[Budget]
"""How a tree splits its budget over the levels: ``"uniform"``, ``"mean"``, ``"max"``, or the
per-level shares, as a sequence of :data:`Budget` or a comma list ``"1/2,1/4,1/4"`` that
sums to ε (ρ) exactly."""

Seed: TypeAlias = np.random.Generator | int | np.integer[Any] | None
"""Randomness, as NEP 19 has it: a :class:`numpy.random.Generator`, an int seed (≥ 0) or
None (fresh entropy).  dpref never uses numpy's global random state."""

Stream: TypeAlias = npt.ArrayLike
"""A stream of items: a 1-D sequence or array of real numbers in the mechanism's domain
(bits by default), or a pandas Series or one-column DataFrame (the result then keeps its
index: :mod:`dpref.mechanisms.frames`)."""
