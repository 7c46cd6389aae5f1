"""Hypothesis strategies shared by the test suite."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import strategies as st

from dpref.sensitivity import NOTEBOOK_QUERIES

__all__ = [
    "SENSITIVITY_QUERIES",
    "bit_streams",
    "float_budgets",
    "float_fractions",
    "junk",
    "monotone_cdfs",
    "node_noise_for",
    "sanitizer_streams",
    "seeds",
    "sensitivity_cases",
]

seeds = st.integers(min_value=0, max_value=2**32 - 1)

float_budgets = st.floats(min_value=2.0**-60, max_value=2.0**60)
"""Finite float budgets every mechanism accepts as ε or ρ at Δ = 1 (ε in [2^-400, 2^400],
ρ in [2^-800, 2^400])."""

float_fractions = st.floats(min_value=2.0**-20, max_value=1 - 2.0**-20)
"""Floats in (0, 1) every decay α and zCDP ρ accepts (α ≤ 1 − 2^-64)."""


def bit_streams(min_size: int = 1, max_size: int = 64) -> st.SearchStrategy[np.ndarray]:
    """0/1 streams as float arrays."""
    return st.lists(st.integers(0, 1), min_size=min_size, max_size=max_size).map(
        lambda xs: np.array(xs, dtype=np.float64)
    )


def node_noise_for(n: int) -> st.SearchStrategy[np.ndarray]:
    """Node-noise vectors of length n: finite floats of any reasonable magnitude."""
    return st.lists(
        st.floats(min_value=-1e6, max_value=1e6, allow_nan=False, allow_infinity=False),
        min_size=n,
        max_size=n,
    ).map(lambda zs: np.array(zs, dtype=np.float64))


@st.composite
def monotone_cdfs(draw: Any, max_size: int = 40) -> tuple[np.ndarray, int, np.ndarray]:
    """(a true integer CDF ending at N, N, noise of the same length): for the projection."""
    counts = draw(st.lists(st.integers(0, 20), min_size=1, max_size=max_size))
    cdf = np.cumsum(np.array(counts, dtype=np.int64))
    noise = draw(
        st.lists(
            st.floats(min_value=-200, max_value=200, allow_nan=False),
            min_size=cdf.size,
            max_size=cdf.size,
        )
    )
    return cdf.astype(np.float64), int(cdf[-1]), np.array(noise, dtype=np.float64)


@st.composite
def sanitizer_streams(draw: Any) -> tuple[int, int, np.ndarray]:
    """(domain size D, block size n, a stream of integer values in [0, D))."""
    size = draw(st.integers(1, 33))
    block = draw(st.integers(1, 12))
    values = draw(st.lists(st.integers(0, size - 1), min_size=0, max_size=60))
    return size, block, np.array(values, dtype=np.float64)


_scalars: st.SearchStrategy[Any] = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=5),
    st.binary(max_size=4),
    st.complex_numbers(allow_nan=True, allow_infinity=True),
    st.just(object()),
    st.just(np.nan),
    st.just(np.float64("inf")),
)

junk: st.SearchStrategy[Any] = st.recursive(
    _scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.tuples(inner, inner),
        st.dictionaries(st.text(max_size=3), inner, max_size=2),
        st.lists(st.floats(allow_nan=True), max_size=5).map(np.array),
        st.lists(st.lists(st.integers(-3, 3), min_size=2, max_size=2), max_size=3).map(np.array),
    ),
    max_leaves=6,
)
"""Arbitrary junk for constructors and ``release``: only DprefErrors may come out."""


# --------------------------------------------------------------------------- global sensitivity
# Strategies for tests/test_sensitivity.py (docs/spec.md §4): universes small enough for the
# brute-force oracle to enumerate.


SENSITIVITY_QUERIES = (*NOTEBOOK_QUERIES, "percentile_0", "percentile_10", "percentile_100")
"""The notebook's ten queries plus the percentile edge cases."""


@st.composite
def sensitivity_cases(
    draw: st.DrawFn,
    *,
    max_dataset: int = 6,
    max_range: int = 4,
    max_size: int = 4,
    queries: tuple[str, ...] = SENSITIVITY_QUERIES,
) -> dict[str, Any]:
    """A universe, release size, Hamming distance (<= 3), model, kind, side and query.

    ``max_dataset`` bounds a dataset universe's records; ``max_range`` and ``max_size`` a
    range universe's values and release size.
    """
    kind = draw(st.sampled_from(["dataset", "range"]))
    if kind == "dataset":
        values = draw(st.lists(st.integers(-6, 12), min_size=1, max_size=max_dataset))
        n = draw(st.integers(1, len(values)))
    else:
        values = draw(st.lists(st.integers(-6, 12), min_size=1, max_size=max_range))
        n = draw(st.integers(1, max_size))
    k = draw(st.integers(1, min(n, 3)))
    query = draw(st.sampled_from(queries))
    model = draw(st.sampled_from(["unbounded", "bounded"]))
    side = draw(st.sampled_from(["both", "remove", "add"]))
    if draw(st.booleans()):
        values = [v / 4 for v in values]  # non-integer (dyadic) values
    return {
        "values": values,
        "size": n,
        "hamming": k,
        "query": query,
        "model": model,
        "universe": kind,
        "unbounded_side": side,
    }
