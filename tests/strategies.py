"""Hypothesis strategies shared by the test suite (one module, as DESIGN.md asks)."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import strategies as st

__all__ = ["bit_streams", "junk", "node_noise_for", "seeds"]

seeds = st.integers(min_value=0, max_value=2**32 - 1)


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
