"""Golden vectors: stream + node noise in canonical order → exact outputs.

An implementer in any language reproduces dpref by reading, for each vector, the
mechanism and its parameters, the stream, and the node noise in canonical order
(SPEC §0), and checking that their implementation produces ``outputs``.  The node
noise is drawn from Laplace and then rounded to a dyadic grid (multiples of 2⁻¹⁰,
magnitude < 2²⁰), so for mechanisms whose weights and recombination coefficients
are integers (every counting mechanism, WindowSum) every partial sum is exact in
float64: *any* summation order reproduces ``outputs`` bit for bit
(``"exact_in_float": true``).  For decayed weights (α^k, (1−β)^j) the exact
rational output is given in ``outputs_exact`` and ``outputs`` is its nearest float.

Each vector also carries the node intervals, the exact per-node scales, the exact
per-step variances and the exact privacy sum, so an implementation's plan can be
compared node by node.
"""

from __future__ import annotations

import json
from fractions import Fraction
from importlib import resources
from typing import Any

import numpy as np

from dpref.errors import DprefError, ParameterError
from dpref.mechanisms import Mechanism
from dpref.registry import build_mechanism, mechanism_names
from dpref.validation import fmt

__all__ = ["GOLDEN_CASES", "check_golden", "golden_vectors", "load_shipped"]

FORMAT = "dpref-golden/1"
GRID_BITS = 10
"""Node noise is rounded to multiples of 2^-GRID_BITS."""

GOLDEN_CASES: list[tuple[str, dict[str, Any], int]] = [
    ("simple1", {"horizon": 8}, 8),
    ("simple2", {}, 9),
    ("two-level", {"horizon": 10}, 10),
    ("two-level", {"horizon": 7, "block_size": 1}, 7),
    ("binary", {"horizon": 1}, 1),
    ("binary", {"horizon": 5}, 5),
    ("binary", {"horizon": 16}, 16),
    ("hybrid", {}, 13),
    ("window", {"window": 3}, 12),
    ("allwindow", {"delta": "3/2"}, 10),
    ("exponential", {"alpha": "1/2"}, 9),
    ("polynomial", {"c": 2, "beta": "1/5"}, 10),
]
"""(mechanism, parameters, T) of every vector; mechanisms not installed are skipped."""

EPSILON = Fraction(1, 2)
SEED = 20261122


def _frac(x: Fraction) -> str:
    return str(x)


def _exact_outputs(
    m: Mechanism, horizon: int, stream: list[int], noise: list[Fraction]
) -> list[Fraction]:
    plan = m.plan(horizon)
    A = plan.dense_A_exact()
    R = plan.recombination.to_dense_exact()
    noisy = [
        sum((a * x for a, x in zip(row, stream, strict=True)), Fraction(0)) + z
        for row, z in zip(A, noise, strict=True)
    ]
    return [sum((r * v for r, v in zip(row, noisy, strict=True) if r), Fraction(0)) for row in R]


def _vector(
    name: str, params: dict[str, Any], horizon: int, rng: np.random.Generator
) -> dict[str, Any]:
    m = build_mechanism(name, epsilon=EPSILON, **params)
    plan = m.plan(horizon)
    stream = rng.integers(0, 2, horizon).astype(int).tolist()
    raw = m.node_noise(horizon, rng)
    noise = np.round(raw * 2**GRID_BITS) / 2**GRID_BITS
    noise_exact = [Fraction(float(v)) for v in noise]
    exact = _exact_outputs(m, horizon, stream, noise_exact)
    outputs = m.release(np.array(stream, dtype=np.float64), noise=noise)
    integral = (
        all(v.denominator == 1 for v in plan.recombination.table)
        and all(w.denominator == 1 for w in plan.weight_table)
        and plan.base == 1
    )
    return {
        "mechanism": name,
        "parameters": {k: v if isinstance(v, int) else str(v) for k, v in params.items()},
        "epsilon": _frac(EPSILON),
        "horizon": horizon,
        "description": repr(m),
        "stream": stream,
        "nodes": [[int(a), int(b)] for a, b in zip(plan.lo, plan.hi, strict=True)],
        "weights": [_frac(plan.weight(n)) for n in range(plan.n_nodes)],
        "base": _frac(plan.base),
        "scales": [_frac(plan.scale(n)) for n in range(plan.n_nodes)],
        "noise": noise.tolist(),
        "outputs": outputs.tolist(),
        "outputs_exact": [_frac(v) for v in exact],
        "exact_in_float": integral,
        "variance": [_frac(v) for v in plan.variance_exact()],
        "privacy_sum": _frac(plan.privacy_sum()),
    }


def golden_vectors() -> dict[str, Any]:
    """Generate the golden-vector document (deterministic)."""
    rng = np.random.default_rng(SEED)
    known = set(mechanism_names())
    vectors = [_vector(n, p, t, rng) for n, p, t in GOLDEN_CASES if n in known]
    return {
        "format": FORMAT,
        "noise_grid": f"2^-{GRID_BITS}",
        "canonical_order": "release time ascending, then interval length ascending, then "
        "instance index; Two-Level: item node before block node",
        "vectors": vectors,
    }


def load_shipped() -> dict[str, Any]:
    """The golden vectors shipped with this version of dpref."""
    text = resources.files("dpref").joinpath("data/golden.json").read_text()
    doc: dict[str, Any] = json.loads(text)
    return doc


def check_golden(doc: dict[str, Any]) -> list[str]:
    """Recompute every vector with dpref; return the list of mismatches (empty: all match)."""
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        found = doc.get("format") if isinstance(doc, dict) else type(doc).__name__
        raise ParameterError(f"format={found!r}: expected {FORMAT!r}")
    vectors = doc.get("vectors")
    if not isinstance(vectors, list):
        raise ParameterError(f"vectors={fmt(vectors)}: must be a list of vectors")
    problems: list[str] = []
    for k, vec in enumerate(vectors):
        try:
            problems.extend(_check_vector(vec))
        except DprefError:
            raise
        except (
            KeyError,
            TypeError,
            ValueError,
            AttributeError,
            IndexError,
            ZeroDivisionError,
        ) as exc:
            # an untrusted file: a malformed vector is bad input, not a crash
            raise ParameterError(
                f"vectors[{k}]: malformed golden vector ({type(exc).__name__}: {exc})"
            ) from None
    return problems


def _check_vector(vec: dict[str, Any]) -> list[str]:
    """The mismatches of one golden vector."""
    problems: list[str] = []
    label = f"{vec['mechanism']}{vec['parameters']} T={vec['horizon']}"
    m = build_mechanism(vec["mechanism"], epsilon=Fraction(vec["epsilon"]), **vec["parameters"])
    T = int(vec["horizon"])
    plan = m.plan(T)
    nodes = [[int(a), int(b)] for a, b in zip(plan.lo, plan.hi, strict=True)]
    if nodes != vec["nodes"]:
        problems.append(f"{label}: node intervals differ")
        return problems
    if [_frac(plan.scale(n)) for n in range(plan.n_nodes)] != vec["scales"]:
        problems.append(f"{label}: node scales differ")
    out = m.release(np.array(vec["stream"], dtype=np.float64), noise=np.array(vec["noise"]))
    want = np.array(vec["outputs"])
    exact = [Fraction(s) for s in vec["outputs_exact"]]
    if vec["exact_in_float"]:
        if not np.array_equal(out, want):
            problems.append(f"{label}: outputs differ (must be bit-exact)")
    elif not np.allclose(out, [float(v) for v in exact], rtol=1e-12, atol=1e-9):
        problems.append(f"{label}: outputs differ from the exact rationals")
    if [_frac(v) for v in plan.variance_exact()] != vec["variance"]:
        problems.append(f"{label}: exact variances differ")
    if _frac(plan.privacy_sum()) != vec["privacy_sum"]:
        problems.append(f"{label}: privacy sum differs")
    return problems
