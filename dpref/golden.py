"""Golden vectors: stream + node noise in canonical order → exact outputs.

An implementer in any language reproduces dpref by reading, for each vector, the
mechanism and its parameters, the stream, and the node noise in canonical order
(docs/spec.md §0), and checking that their implementation produces ``outputs``.  The node
noise is drawn from Laplace and then rounded to a dyadic grid (multiples of 2⁻¹⁰,
magnitude < 2²⁰), so for mechanisms whose weights and recombination coefficients
are integers (every counting mechanism, WindowSum) every partial sum is exact in
float64: *any* summation order reproduces ``outputs`` bit for bit
(``"exact_in_float": true``).  For decayed weights (α^k, (1−β)^j) the exact
rational output is given in ``outputs_exact`` and ``outputs`` is its nearest float.

Each vector also carries the node intervals, the exact per-node scales, the exact
per-step variances and the exact privacy sum, so an implementation's plan can be
compared node by node.  ``noise_kind`` names the node-noise kind (``noise`` is the node
noise itself); a ρ-zCDP vector (Gaussian
noise) carries ``rho`` (an exact rational string) instead of ``epsilon``, its
``scales`` are the exact node variances σ_n², and its ``privacy_sum`` is the L2 sum
``max_i Σ_n (a_{n,i}Δ)²/σ_n²`` (= 2ρ for the bounded counters); its node noise is drawn
from the standard normal and rounded to the same grid (docs/gaussian.md).
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass
from fractions import Fraction
from importlib import resources
from typing import Any

import numpy as np

from dpref.errors import DprefError, DprefTypeError, ParameterError
from dpref.mechanisms import MECHANISMS, Mechanism
from dpref.registry import build_mechanism
from dpref.validation import check_fraction, fmt, fmt_sequence

__all__ = [
    "GOLDEN_CASES",
    "GoldenCase",
    "check_golden",
    "golden_cases",
    "golden_vectors",
    "load_shipped",
    "loads_golden",
    "vector_mechanism",
]

FORMAT = "dpref-golden/2"
"""Version 2: every vector draws from its own seed, derived from its case name (version 1
drew all vectors from one stream, so adding a case shifted every later vector)."""
GRID_BITS = 10
"""Node noise is rounded to multiples of 2^-GRID_BITS."""

MAX_HORIZON = 256
"""The largest horizon :func:`check_golden` accepts (the shipped vectors have T <= 16): a
golden file is untrusted input, and checking a vector builds exact T x T matrices."""

EPSILON = Fraction(1, 2)
SEED = 20261122


@dataclass(frozen=True)
class GoldenCase:
    """One golden vector to generate: a mechanism's declared example at one horizon."""

    mechanism: str
    """The mechanism's command-line name."""
    params: dict[str, Any]
    """Constructor keywords besides ``epsilon`` (``horizon`` included when bounded)."""
    horizon: int
    """T: the stream length."""
    name: str
    """The case's stable name, e.g. ``binary[T=5]``; its seed derives from it."""
    privacy: str = "pure"
    """``"pure"`` (built with ``epsilon=``) or ``"zcdp"`` (built with ``rho=``)."""

    @property
    def budget(self) -> dict[str, Fraction]:
        """The privacy keyword: ``{"epsilon": EPSILON}`` or ``{"rho": EPSILON}``."""
        return {"rho" if self.privacy == "zcdp" else "epsilon": EPSILON}

    def rng(self) -> np.random.Generator:
        """The case's own Generator: ``SeedSequence([SEED, sha256(name)])``."""
        digest = int.from_bytes(hashlib.sha256(self.name.encode()).digest()[:16], "big")
        return np.random.default_rng(np.random.SeedSequence([SEED, digest]))


def golden_cases() -> list[GoldenCase]:
    """Every registered mechanism's examples at each of their golden horizons."""
    return [
        GoldenCase(name, example.kwargs(cls, T), T, example.label(cls, T), example.privacy)
        for name, cls in MECHANISMS.items()
        for example in cls.examples
        for T in example.horizons
    ]


GOLDEN_CASES: list[tuple[str, dict[str, Any], int]] = [
    (c.mechanism, c.params, c.horizon) for c in golden_cases()
]
"""(mechanism, parameters, T) of every vector, derived from the registry."""


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


def _vector(case: GoldenCase) -> dict[str, Any]:
    name, params, horizon, rng = case.mechanism, case.params, case.horizon, case.rng()
    m = build_mechanism(name, **case.budget, **params)
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
        "case": case.name,
        "mechanism": name,
        "parameters": {k: v if isinstance(v, int) else str(v) for k, v in params.items()},
        **{key: _frac(value) for key, value in case.budget.items()},
        "noise_kind": m.noise,
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
        **_toeplitz_fields(plan),
    }


def _toeplitz_fields(plan: Any) -> dict[str, Any]:
    """For a Toeplitz factorization plan (dpref.strategy.ToeplitzPlan): its strategy and
    decoder coefficients (node n has weight ``c_{n−i}`` on item i; ``out_t`` adds
    ``b_{t−n}`` times node n) — the ``weights`` field only gives each node's ``c_0``."""
    if not hasattr(plan, "strategy_seq"):
        return {}
    return {
        "strategy_coefficients": [_frac(v) for v in plan.strategy_seq.fractions()],
        "decoder_coefficients": [_frac(v) for v in plan.decoder_seq.fractions()],
    }


def golden_vectors() -> dict[str, Any]:
    """Generate the golden-vector document (deterministic)."""
    vectors = [_vector(case) for case in golden_cases()]
    return {
        "format": FORMAT,
        "seeds": f"per vector: SeedSequence([{SEED}, first 16 bytes of sha256(case) as an int])",
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


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number in golden vectors")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text} overflows a float")
    return value


def loads_golden(text: str) -> Any:
    """Parse a golden-vector file strictly: standard JSON only (no ``NaN``, ``Infinity``,
    nor numbers such as ``1e400`` that overflow a float), and nesting Python can parse.
    Raises :class:`~dpref.errors.ParameterError`; :func:`check_golden` checks the rest."""
    if not isinstance(text, str | bytes | bytearray):
        raise DprefTypeError(f"text={fmt(text)}: must be the JSON text (str or bytes)")
    try:
        return json.loads(text, parse_constant=_reject_constant, parse_float=_finite_float)
    except RecursionError:
        raise ParameterError(
            f"text={fmt_sequence(text)}: golden vectors: JSON nested too deeply"
        ) from None
    except ValueError as exc:  # JSONDecodeError, the two above, int digits over the limit
        raise ParameterError(
            f"text={fmt_sequence(text)}: golden vectors: not valid JSON ({exc})"
        ) from None


def check_golden(doc: dict[str, Any]) -> list[str]:
    """Recompute every vector with dpref; return the list of mismatches (empty: all match).

    ``doc`` is a parsed document (:func:`loads_golden`); an error in it names the field
    (``format=``, ``vectors[3]``, ``parameters.horizon=``)."""
    if not isinstance(doc, dict):
        raise DprefTypeError(f"doc={fmt(doc)}: must be a dict (a parsed golden-vector document)")
    if doc.get("format") != FORMAT:
        raise ParameterError(
            f"format={fmt(doc.get('format'))}: expected {FORMAT!r} (doc={fmt_sequence(doc)})"
        )
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
            OverflowError,
        ) as exc:
            # an untrusted file: a malformed vector is bad input, not a crash
            raise ParameterError(
                f"vectors[{k}]: malformed golden vector ({type(exc).__name__}: {exc})"
            ) from None
    return problems


def _check_size(vec: dict[str, Any]) -> None:
    """Refuse, before anything is computed, a horizon that is not a small int."""
    if not isinstance(vec, dict) or not isinstance(vec.get("parameters"), dict):
        raise ParameterError("golden vector: must be an object with a 'parameters' object")
    for where, T in (
        ("horizon", vec.get("horizon")),
        ("parameters.horizon", vec["parameters"].get("horizon", 1)),
    ):
        if isinstance(T, bool) or not isinstance(T, int):
            raise ParameterError(f"{where}={fmt(T)}: must be an int")
        if not 1 <= T <= MAX_HORIZON:
            raise ParameterError(f"{where}={T}: golden vectors have 1 <= T <= {MAX_HORIZON}")
    stream = vec.get("stream")
    if not isinstance(stream, list) or len(stream) != vec["horizon"]:
        raise ParameterError(
            f"stream={fmt_sequence(stream)}: must be a list of horizon={vec['horizon']} items"
        )


def vector_mechanism(vec: Any) -> Mechanism:
    """The mechanism a golden vector describes: built with its ``epsilon`` (pure) or its
    ``rho`` (zCDP), both exact rational strings, and its parameters.

    Raises :class:`~dpref.errors.ParameterError` naming ``vec`` (or the field) when the
    vector is not an object with a mechanism name, a parameters object and one budget."""
    if not isinstance(vec, dict):
        raise DprefTypeError(f"vec={fmt(vec)}: must be a golden vector (a dict)")
    name, params = vec.get("mechanism"), vec.get("parameters")
    if not isinstance(name, str) or not isinstance(params, dict):
        raise ParameterError(
            f"vec={fmt_sequence(vec)}: needs a 'mechanism' name and a 'parameters' object"
        )
    key = "rho" if "rho" in vec else "epsilon"
    text = vec.get(key)
    if not isinstance(text, str):
        raise ParameterError(f"{key}={fmt(text)}: a golden vector's budget is a rational string")
    budget = check_fraction(key, text)
    return build_mechanism(name, **{key: budget}, **params)


def _check_vector(vec: dict[str, Any]) -> list[str]:
    """The mismatches of one golden vector."""
    problems: list[str] = []
    _check_size(vec)
    label = f"{vec['mechanism']}{vec['parameters']} T={vec['horizon']}"
    m = vector_mechanism(vec)
    if m.noise != vec.get("noise_kind", "laplace"):
        problems.append(f"{label}: noise kind {m.noise!r} ≠ the vector's {vec['noise_kind']!r}")
        return problems
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
    for key, value in _toeplitz_fields(plan).items():
        if vec.get(key) != value:
            problems.append(f"{label}: {key.replace('_', ' ')} differ")
    return problems
