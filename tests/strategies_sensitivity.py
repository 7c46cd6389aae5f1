"""Hypothesis strategies for the global-sensitivity tests (small enough to enumerate)."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from dpref.sensitivity import NOTEBOOK_QUERIES

QUERIES = (*NOTEBOOK_QUERIES, "percentile_0", "percentile_10", "percentile_100")


@st.composite
def sensitivity_cases(draw: st.DrawFn) -> dict[str, Any]:
    """A universe, release size, Hamming distance (<= 3), model, kind, side and query."""
    kind = draw(st.sampled_from(["dataset", "range"]))
    if kind == "dataset":
        values = draw(st.lists(st.integers(-6, 12), min_size=1, max_size=6))
        n = draw(st.integers(1, len(values)))
    else:
        values = draw(st.lists(st.integers(-6, 12), min_size=1, max_size=4))
        n = draw(st.integers(1, 4))
    k = draw(st.integers(1, min(n, 3)))
    query = draw(st.sampled_from(QUERIES))
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
