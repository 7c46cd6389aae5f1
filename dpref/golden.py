"""Golden vectors: stream + node noise in canonical order → exact outputs.

An implementer in any language reproduces dpref by reading, for each vector, the
mechanism and its parameters, the stream, and the node noise in canonical order
(docs/spec.md §0), and checking that their implementation produces ``outputs``.

The vectors cover every registered mechanism with every noise kind it accepts
(``laplace``, ``discrete``, ``gaussian``, ``discrete_gaussian``) at several budgets, and
each mechanism over a grid of horizons T ≤ 64 and of the parameters that change its
structure (:data:`GRID`; the rule is in docs/golden.md).  One rule makes the node noise:
dpref's own draw (:meth:`~dpref.mechanisms.Mechanism.node_noise`) rounded to the nearest
multiple of 2⁻¹⁰ — the scaled Laplace or Gaussian draw for the continuous kinds, the
exact integer draw (unchanged by the rounding) for the discrete ones.  Dyadic noise keeps
every partial sum of a mechanism with integer weights and recombination exact in float64,
so *any* summation order reproduces ``outputs`` bit for bit (``"exact_in_float": true``);
for decayed weights (α^k, (1−β)^j) and factorizations the exact rational output is in
``outputs_exact`` and ``outputs`` is what dpref's float code returns.

Each vector also carries the node intervals, release times, weights, exact scales,
per-node ε (or ρ), the exact per-step variances and the exact privacy sum, so an
implementation's plan can be compared node by node.  The shipped file is
``dpref/data/golden.json.gz``; its JSON Schema is ``dpref/data/golden.schema.json``.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from importlib import resources
from typing import Any

import numpy as np

from dpref.errors import DprefError, DprefTypeError, ParameterError
from dpref.mechanisms import MECHANISMS, Mechanism
from dpref.noise import NOISE_KINDS, NoiseKind, noise_family
from dpref.registry import build_mechanism
from dpref.validation import check_choice, check_fraction, fmt, fmt_sequence

__all__ = [
    "EPSILONS",
    "FORMAT",
    "GRID",
    "KIND_HORIZONS",
    "OLD_FORMATS",
    "RHOS",
    "SAMPLE_CASES",
    "T_GRID",
    "GoldenCase",
    "GridConfig",
    "check_golden",
    "golden_cases",
    "golden_vectors",
    "load_schema",
    "load_shipped",
    "loads_golden",
    "read_golden",
    "vector_mechanism",
]

FORMAT = "dpref-golden/3"
"""Version 3: every noise kind and several budgets per mechanism, a T and parameter grid, and
per vector the budget actually declared, release times and per-node ε or ρ.  (Version 2 drew
each vector from its own seed; version 1 drew all vectors from one stream.)"""
OLD_FORMATS = ("dpref-golden/1", "dpref-golden/2")
"""Formats :func:`check_golden` refuses by name (their fields differ: regenerate)."""
GRID_BITS = 10
"""Node noise is rounded to multiples of 2^-GRID_BITS."""

MAX_HORIZON = 256
"""The largest horizon :func:`check_golden` accepts (the shipped vectors have T <= 64): a
golden file is untrusted input, and checking a vector builds exact per-step sums."""

EPSILON = Fraction(1, 2)
"""The budget (ε, or ρ for a zCDP example) of the declared examples and of the T grid."""
EPSILONS = (Fraction(1, 2), Fraction(1), Fraction(3))
"""The ε of the noise-kind block (``laplace`` and ``discrete``)."""
RHOS = (Fraction(1, 8), Fraction(1, 2), Fraction(2))
"""The ρ of the noise-kind block (``gaussian`` and ``discrete_gaussian``)."""
SEED = 20261122

T_GRID: tuple[int, ...] = (1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 27, 31, 32, 33, 63, 64)
"""Horizons of the T grid: 1, powers of 2 and 3 (and of 4) with their neighbours, up to 64."""
SMALL_GRID: tuple[int, ...] = (1, 2, 3, 4, 5, 7, 8, 9, 16)
"""A shorter grid for mechanisms whose node count grows fast (PolynomialSum)."""
KIND_HORIZONS: tuple[int, ...] = (5, 16)
"""Horizons of the noise-kind block: every kind at every budget of :data:`EPSILONS` or
:data:`RHOS`, for each mechanism's first configuration."""


@dataclass(frozen=True)
class GridConfig:
    """One structure of a mechanism the grid covers: its parameters and horizons."""

    params: Mapping[str, Any] = field(default_factory=dict)
    """Constructor keywords besides the budget, ``horizon`` and ``noise``."""
    horizons: tuple[int, ...] = T_GRID
    """The T of the T grid (at ε = 1/2, Laplace)."""
    bounded: bool | None = None
    """Pass ``horizon=T`` (None: exactly when the class needs it)."""
    kinds: bool = True
    """Also build this structure with every noise kind (at the middle budget, T = 16)."""


GRID: dict[str, tuple[GridConfig, ...]] = {
    "kary": (
        GridConfig({"k": 3}),
        GridConfig({"k": 2}),
        GridConfig({"k": 4}),
        GridConfig({"k": 5}, (1, 4, 5, 6, 16, 24, 25, 26, 64)),
        GridConfig({"k": 2, "combine": True}),
        GridConfig({"k": 3, "combine": True}),
        GridConfig({"k": 4, "combine": True}),
        GridConfig({"k": "auto"}, (1, 2, 5, 9, 16, 27, 64)),
        GridConfig({"k": 3, "budget": "1/4,1/8,1/16,1/16"}, (27,), kinds=False),
    ),
    "honaker": (
        GridConfig(),
        GridConfig({"budget": "1/4,1/8,1/16,1/32,1/32"}, (16,), kinds=False),
    ),
    "simple1": (GridConfig(),),
    "simple2": (GridConfig(bounded=True), GridConfig(bounded=False)),
    "two-level": (
        GridConfig({"block_size": 4}),
        GridConfig({"block_size": 1}),
        GridConfig({"block_size": 2}),
        GridConfig({"block_size": 3}),
        GridConfig({"block_size": 5}),
        GridConfig({"block_size": 8}),
    ),
    "binary": (
        GridConfig(),
        GridConfig({"budget": "1/4,1/8,1/16,1/32,1/32"}, (16,), kinds=False),
    ),
    "hybrid": (GridConfig(),),
    "window": (
        GridConfig({"window": 3}),
        GridConfig({"window": 1}),
        GridConfig({"window": 2}),
        GridConfig({"window": 4}),
        GridConfig({"window": 8}),
        GridConfig({"window": 3}, bounded=True),
        GridConfig({"window": 8}, bounded=True),
    ),
    "allwindow": (
        GridConfig({"delta": Fraction(3, 2)}),
        GridConfig({"delta": 2}),
        GridConfig({"delta": 2, "window": 5}),
        GridConfig({"delta": Fraction(3, 2), "window": 6}, bounded=True),
    ),
    "exponential": (
        GridConfig({"alpha": Fraction(1, 2)}),
        GridConfig({"alpha": Fraction(9, 10)}),
        GridConfig({"alpha": Fraction(1, 3)}),
        GridConfig({"alpha": Fraction(1, 2)}, bounded=True),
    ),
    "polynomial": (
        GridConfig({"c": 2, "beta": Fraction(1, 5)}, (*SMALL_GRID, 15, 17, 31, 32, 33)),
        GridConfig({"c": Fraction(3, 2), "beta": Fraction(1, 2)}, SMALL_GRID),
        GridConfig({"c": 2, "beta": Fraction(1, 5), "allocation": "uniform"}, SMALL_GRID),
    ),
    "elders": (
        GridConfig({"k": 3}),
        GridConfig({"k": 5}, (1, 4, 5, 6, 16, 24, 25, 26, 64)),
        GridConfig({"k": 7}, (1, 6, 7, 8, 48, 49, 50, 64)),
    ),
    "sqrt": (
        GridConfig(),
        # (k, b)-participation (docs/factorization.md, "Participation"): one or several fit
        GridConfig({"participations": 3, "min_separation": 4}, (1, 4, 5, 9, 16, 33, 64)),
    ),
    "blt": (
        GridConfig({"theta": "1/2", "omega": "1/2"}),
        GridConfig({"theta": "1/2,7/8", "omega": "1/4,1/8"}),
        GridConfig({"theta": "1/4,1/2,3/4", "omega": "1/8,1/4,1/2"}, (1, 2, 3, 8, 16, 33, 64)),
        GridConfig(
            {"theta": "1/2,7/8", "omega": "1/4,1/8", "participations": 2, "min_separation": 8},
            (8, 9, 16, 64),
        ),
    ),
    "smooth": (GridConfig(),),
    "blue": (
        GridConfig({"k": 2}, (1, 2, 3, 4, 5, 7, 8, 9, 16)),
        GridConfig({"k": 3}, (1, 2, 3, 4, 8, 9, 10, 27)),
        GridConfig({"k": 3, "layout": "elders"}, (1, 2, 3, 5, 8, 9, 14)),
        GridConfig({"k": 3, "layout": "elders_full"}, (1, 2, 5, 9, 14)),
        GridConfig({"k": 3, "budget": "1/4,1/8,1/16,1/16"}, (27,), kinds=False),
    ),
}
"""Per mechanism (its command-line name), the structures of the T grid; the first one is
also built with every noise kind at every budget (:data:`KIND_HORIZONS`).  A registered
mechanism missing here gets its first declared example as its only structure."""

SAMPLE_CASES: tuple[str, ...] = (
    "binary[T=5]",
    "two-level[T=10]",
    "kary[T=16,k=4,combine=True]",
    "binary[T=16,zcdp]",
    "exponential[T=9,unbounded,alpha=1/2]",
    "binary[T=16] discrete epsilon=1",
    "binary[T=16] discrete_gaussian rho=1/2",
)
"""The vectors of the small uncompressed sample ``dpref/data/golden-sample.json``."""


@dataclass(frozen=True)
class GoldenCase:
    """One golden vector to generate: a mechanism, its parameters, T, noise kind and budget."""

    mechanism: str
    """The mechanism's command-line name."""
    params: dict[str, Any]
    """Constructor keywords besides the budget and ``noise`` (``horizon`` when bounded)."""
    horizon: int
    """T: the stream length."""
    name: str
    """The case's stable name, e.g. ``binary[T=5]``; its seed derives from it."""
    privacy: str = "pure"
    """``"pure"`` (built with ``epsilon=``) or ``"zcdp"`` (built with ``rho=``)."""
    value: Fraction = EPSILON
    """The budget: ε (pure) or ρ (zCDP)."""
    noise: str | None = None
    """The noise kind (None: the default of :attr:`privacy`)."""

    @property
    def budget(self) -> dict[str, Fraction]:
        """The privacy keyword: ``{"epsilon": ε}`` or ``{"rho": ρ}``."""
        return {"rho" if self.privacy == "zcdp" else "epsilon": self.value}

    def build(self) -> Mechanism:
        """The mechanism this case describes."""
        noise = {} if self.noise is None else {"noise": self.noise}
        return build_mechanism(self.mechanism, **self.budget, **self.params, **noise)

    def rng(self) -> np.random.Generator:
        """The case's own Generator: ``SeedSequence([SEED, sha256(name)])``."""
        digest = int.from_bytes(hashlib.sha256(self.name.encode()).digest()[:16], "big")
        return np.random.default_rng(np.random.SeedSequence([SEED, digest]))


def _show(v: Any) -> str:
    return str(v)


def _grid_case(mech: str, cfg: GridConfig, T: int, kind: NoiseKind, value: Fraction) -> GoldenCase:
    cls = MECHANISMS[mech]
    params = dict(cfg.params)
    bounded = cls.needs_horizon if cfg.bounded is None else cfg.bounded
    if bounded:
        params["horizon"] = T
    rest = ",".join(f"{k}={_show(v)}" for k, v in params.items() if k != "horizon")
    label = f"{mech}[T={T}{'' if bounded else ',unbounded'}{',' if rest else ''}{rest}]"
    privacy = "zcdp" if noise_family(kind) == "gaussian" else "pure"
    key = "rho" if privacy == "zcdp" else "epsilon"
    name = f"{label} {kind} {key}={value}"
    return GoldenCase(mech, params, T, name, privacy, value, kind)


def _configs(mech: str) -> tuple[GridConfig, ...]:
    if mech in GRID:
        return GRID[mech]
    cls = MECHANISMS[mech]
    ex = cls.examples[0]
    params = {k: v for k, v in ex.params.items() if not callable(v)}
    return (GridConfig(params, bounded=ex.bounded),)


def _accepts(case: GoldenCase) -> str | None:
    """None when dpref builds the case, else why not (the error message)."""
    try:
        case.build()
    except ParameterError as exc:
        return str(exc)
    return None


def _all_cases() -> Iterator[tuple[GoldenCase, str | None]]:
    seen: set[tuple[Any, ...]] = set()

    def key(c: GoldenCase) -> tuple[Any, ...]:
        m = c.build()
        return (c.mechanism, repr(m), c.horizon, m.noise, c.value)

    # 1. every declared example at each of its golden horizons (ε or ρ = 1/2)
    for name, cls in MECHANISMS.items():
        for example in cls.examples:
            for T in example.horizons:
                kw = example.kwargs(cls, T)
                noise = kw.pop("noise", None)
                c = GoldenCase(name, kw, T, example.label(cls, T), example.privacy, EPSILON, noise)
                seen.add(key(c))
                yield c, None
    for mech in MECHANISMS:
        configs = _configs(mech)
        # 2. the T grid: every structure at every horizon of its grid, ε = 1/2, Laplace
        for cfg in configs:
            for T in cfg.horizons:
                c = _grid_case(mech, cfg, T, "laplace", EPSILON)
                if _accepts(c) is None and key(c) not in seen:
                    seen.add(key(c))
                    yield c, None
        # 3. every noise kind at every budget, the first structure, T in KIND_HORIZONS;
        # 4. every other structure with every noise kind at the middle budget, T = 16
        blocks = [(configs[0], T, kind) for T in KIND_HORIZONS for kind in NOISE_KINDS]
        blocks += [(cfg, 16, kind) for cfg in configs[1:] if cfg.kinds for kind in NOISE_KINDS]
        for cfg, T, kind in blocks:
            values: tuple[Fraction, ...] = RHOS if noise_family(kind) == "gaussian" else EPSILONS
            if cfg is not configs[0]:
                values = values[1:2]
            for value in values:
                c = _grid_case(mech, cfg, T, kind, value)
                why = _accepts(c)
                if why is not None:
                    yield c, why
                elif key(c) not in seen:
                    seen.add(key(c))
                    yield c, None


_CASES: dict[tuple[tuple[str, type[Mechanism]], ...], list[tuple[GoldenCase, str | None]]] = {}
""":func:`_all_cases` per state of the registry (building ~1,100 mechanisms takes a second)."""


def _cases() -> list[tuple[GoldenCase, str | None]]:
    key = tuple(MECHANISMS.items())
    if key not in _CASES:
        _CASES.clear()
        _CASES[key] = list(_all_cases())
    return _CASES[key]


def golden_cases() -> list[GoldenCase]:
    """Every vector of the golden file, in file order (docs/golden.md, "The grid")."""
    return [c for c, why in _cases() if why is None]


def golden_exclusions() -> list[dict[str, str]]:
    """The (mechanism, noise kind) pairs the grid leaves out because dpref refuses them
    (the discrete kinds need integer node weights), with dpref's reason."""
    out: dict[tuple[str, str], str] = {}
    for c, why in _cases():
        if why is not None:
            out.setdefault((c.mechanism, str(c.noise)), why)
    return [{"mechanism": m, "noise_kind": k, "reason": why} for (m, k), why in out.items()]


def _frac(x: Fraction) -> str:
    return str(x)


def _exact_node_values(plan: Any, stream: list[int]) -> list[Fraction]:
    """``A x`` exactly: intervals ``w_n Σ_{i=lo}^{hi} γ^{hi−i} x_i``, or for a Toeplitz
    factorization ``Σ_{i≤n} c_{n−i} x_i``."""
    if hasattr(plan, "strategy_seq"):
        c = plan.strategy_seq.fractions()
        ones = [i for i, x in enumerate(stream) if x]
        return [sum((c[n - i] for i in ones if i <= n), Fraction(0)) for n in range(plan.n_nodes)]
    base = plan.base
    out = []
    for n in range(plan.n_nodes):
        lo, hi = int(plan.lo[n]), int(plan.hi[n])
        if base == 1:
            s = Fraction(sum(stream[lo - 1 : hi]))
        else:
            s = sum((base ** (hi - i) for i in range(lo, hi + 1) if stream[i - 1]), Fraction(0))
        out.append(plan.weight(n) * s)
    return out


def _exact_outputs(
    m: Mechanism, stream: list[int], noise: list[Fraction], plan: Any = None
) -> list[Fraction]:
    """``R (A x + z)`` in exact rationals, from the sparse recombination (no T×T matrix):
    the noisy node values and R's entries are brought to common denominators, so the sums
    are Python ints.  ``plan`` is ``m.plan(len(stream))`` when already built.

    Raises :class:`~dpref.errors.ParameterError` when ``noise`` has the wrong length."""
    horizon = len(stream)
    if plan is None:
        plan = m.plan(horizon)
    if len(noise) != plan.n_nodes:
        raise ParameterError(
            f"noise={fmt_sequence(noise)}: expected {plan.n_nodes} node values, got {len(noise)}"
        )
    noisy = [v + z for v, z in zip(_exact_node_values(plan, stream), noise, strict=True)]
    R = plan.recombination
    d_nodes = math.lcm(*(v.denominator for v in noisy))
    ints = [v.numerator * (d_nodes // v.denominator) for v in noisy]
    d_table = math.lcm(*(v.denominator for v in R.table))
    coef = [v.numerator * (d_table // v.denominator) for v in R.table]
    idx, cols, ptr = R.idx.tolist(), R.indices.tolist(), R.indptr.tolist()
    den = d_nodes * d_table
    return [
        Fraction(sum(coef[idx[k]] * ints[cols[k]] for k in range(ptr[t], ptr[t + 1])), den)
        for t in range(horizon)
    ]


def _grid_noise(raw: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    out: np.ndarray[Any, Any] = np.round(raw * 2**GRID_BITS) / 2**GRID_BITS
    return out


def _golden_vector(case: GoldenCase) -> dict[str, Any]:
    """The vector of one case (deterministic: the case's own seed)."""
    horizon, rng = case.horizon, case.rng()
    m = case.build()
    plan = m.plan(horizon)
    stream = rng.integers(0, 2, horizon).astype(int).tolist()
    noise = _grid_noise(m.node_noise(horizon, rng))
    discrete = m.noise in ("discrete", "discrete_gaussian")
    noise_exact = [Fraction(float(v)) for v in noise]
    exact = _exact_outputs(m, stream, noise_exact, plan)
    outputs = m.release(np.array(stream, dtype=np.float64), noise=noise)
    integral = (
        all(v.denominator == 1 for v in plan.recombination.table)
        and all(w.denominator == 1 for w in plan.weight_table)
        and plan.base == 1
        and not hasattr(plan, "strategy_seq")
    )
    key = "rho" if m.rho is not None else "epsilon"
    declared = m.declared_rho if m.rho is not None else m.declared_epsilon
    per_node = plan.per_node_rho() if m.rho is not None else plan.per_node_epsilon()
    return {
        "case": case.name,
        "mechanism": case.mechanism,
        "parameters": {k: v if isinstance(v, int) else str(v) for k, v in case.params.items()},
        key: _frac(case.value),
        "declared_budget": _frac(declared),
        "noise_kind": m.noise,
        "horizon": horizon,
        "description": repr(m),
        "stream": stream,
        "nodes": [[int(a), int(b)] for a, b in zip(plan.lo, plan.hi, strict=True)],
        "release_times": [int(v) for v in m.release_times(horizon)],
        "weights": [_frac(plan.weight(n)) for n in range(plan.n_nodes)],
        "base": _frac(plan.base),
        "scales": [_frac(plan.scale(n)) for n in range(plan.n_nodes)],
        "node_rho" if m.rho is not None else "node_epsilon": [_frac(v) for v in per_node],
        **_toeplitz_fields(plan),
        "noise": [int(v) for v in noise] if discrete else noise.tolist(),
        "outputs": outputs.tolist(),
        "outputs_exact": [_frac(v) for v in exact],
        "exact_in_float": integral,
        "variance": [_frac(v) for v in plan.variance_exact()],
        "privacy_sum": _frac(plan.privacy_sum()),
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


def golden_vectors(mechanisms: Any = None, cases: Any = None) -> dict[str, Any]:
    """Generate the golden-vector document (deterministic).  ``mechanisms`` (command-line
    names) and ``cases`` (case names), iterables, keep only those vectors (None: all)."""
    keep = None if mechanisms is None else set(mechanisms)
    names = None if cases is None else set(cases)
    vectors = [
        _golden_vector(c)
        for c in golden_cases()
        if (keep is None or c.mechanism in keep) and (names is None or c.name in names)
    ]
    return {
        "$schema": SCHEMA_ID,
        "format": FORMAT,
        "seeds": f"per vector: SeedSequence([{SEED}, first 16 bytes of sha256(case) as an int])",
        "noise_grid": f"2^-{GRID_BITS}",
        "canonical_order": "release time ascending, then interval length ascending, then "
        "instance index; Two-Level: item node before block node",
        "excluded": golden_exclusions(),
        "vectors": vectors,
    }


def golden_sample(doc: dict[str, Any] | None = None) -> dict[str, Any]:
    """The small sample: the vectors of ``doc`` named in :data:`SAMPLE_CASES` (file
    order), or, when ``doc`` is None, those vectors generated."""
    if doc is None:
        return golden_vectors(cases=SAMPLE_CASES)
    vectors = _check_format(doc)
    keep = [v for v in vectors if isinstance(v, dict) and v.get("case") in SAMPLE_CASES]
    return {**doc, "vectors": keep}


SCHEMA_ID = "urn:dpref:schema:golden:3"
"""The JSON Schema's ``$id`` (also the documents' ``$schema``): a URN, so it names the schema
without depending on where it is published."""


def load_schema() -> dict[str, Any]:
    """The JSON Schema (Draft 2020-12) of a golden-vector document."""
    text = resources.files("dpref").joinpath("data/golden.schema.json").read_text()
    doc: dict[str, Any] = json.loads(text)
    return doc


def load_shipped() -> dict[str, Any]:
    """The golden vectors shipped with this version of dpref (``data/golden.json.gz``)."""
    raw = resources.files("dpref").joinpath("data/golden.json.gz").read_bytes()
    doc: dict[str, Any] = json.loads(gzip.decompress(raw))
    return doc


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number in golden vectors")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text} overflows a float")
    return value


MAX_FILE_BYTES = 256 << 20
"""The largest (decompressed) golden file :func:`read_golden` reads."""


def loads_golden(text: str | bytes | bytearray) -> Any:
    """Parse a golden-vector file strictly: standard JSON only (no ``NaN``, ``Infinity``,
    nor numbers such as ``1e400`` that overflow a float), and nesting Python can parse.
    Gzip-compressed bytes are decompressed first.  Raises
    :class:`~dpref.errors.ParameterError`; :func:`check_golden` checks the rest."""
    if not isinstance(text, str | bytes | bytearray):
        raise DprefTypeError(f"text={fmt(text)}: must be the JSON text (str or bytes)")
    if isinstance(text, bytes | bytearray) and text[:2] == b"\x1f\x8b":
        try:
            with gzip.GzipFile(fileobj=io.BytesIO(text)) as f:
                text = f.read(MAX_FILE_BYTES + 1)
        except (OSError, EOFError) as exc:
            raise ParameterError(
                f"text={fmt_sequence(text)}: golden vectors: not valid gzip ({exc})"
            ) from None
        if len(text) > MAX_FILE_BYTES:
            raise ParameterError(f"golden vectors: more than {MAX_FILE_BYTES} bytes decompressed")
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


def read_golden(file: str | None = None) -> dict[str, Any]:
    """A golden document from a file (plain or gzip JSON), or the shipped one (None).

    Raises :class:`~dpref.errors.ParameterError` naming the file when it cannot be read
    or parsed, or is not a JSON object."""
    if file is None:
        return load_shipped()
    if not isinstance(file, str):
        raise DprefTypeError(f"file={fmt(file)}: must be a file name (str) or None")
    from pathlib import Path

    try:
        with Path(file).open("rb") as f:
            data = f.read(MAX_FILE_BYTES + 1)
    except (OSError, ValueError) as exc:  # ValueError: an embedded NUL
        raise ParameterError(f"file={fmt(file)}: cannot read golden vectors ({exc})") from None
    if len(data) > MAX_FILE_BYTES:
        raise ParameterError(f"file={fmt(file)}: more than {MAX_FILE_BYTES} bytes")
    try:
        doc = loads_golden(data)
    except ParameterError as exc:
        raise ParameterError(f"file={fmt(file)}: {exc}") from None
    if not isinstance(doc, dict):
        raise ParameterError(f"file={fmt(file)}: a golden document is a JSON object")
    return doc


def _check_format(doc: Any) -> list[Any]:
    if not isinstance(doc, dict):
        raise DprefTypeError(f"doc={fmt(doc)}: must be a dict (a parsed golden-vector document)")
    got = doc.get("format")
    if got in OLD_FORMATS:
        raise ParameterError(
            f"format={got!r}: an older golden-vector format; this dpref reads {FORMAT!r} "
            "(regenerate with `dpref golden export FILE`)"
        )
    if got != FORMAT:
        raise ParameterError(f"format={fmt(got)}: expected {FORMAT!r} (doc={fmt_sequence(doc)})")
    vectors = doc.get("vectors")
    if not isinstance(vectors, list):
        raise ParameterError(f"vectors={fmt(vectors)}: must be a list of vectors")
    return vectors


_MALFORMED = (
    KeyError,
    TypeError,
    ValueError,
    AttributeError,
    IndexError,
    ZeroDivisionError,
    OverflowError,
)


def check_golden(doc: dict[str, Any]) -> list[str]:
    """Recompute every vector with dpref; return the list of mismatches (empty: all match).

    Per vector: the plan (nodes, release times, weights, scales, per-node ε or ρ, Toeplitz
    coefficients), the outputs of the fast float path (bit-exact when ``exact_in_float``,
    else within 1e-12 relative of ``outputs_exact``), ``outputs_exact`` recomputed as
    ``R (A x + z)`` in exact rationals from the sparse plan, the exact variances, the
    privacy sum and the declared budget.  ``doc`` is a parsed document
    (:func:`loads_golden`); an error in it names the field (``format=``, ``vectors[3]``,
    ``parameters.horizon=``)."""
    vectors = _check_format(doc)
    problems: list[str] = []
    for k, vec in enumerate(vectors):
        try:
            problems.extend(_check_vector(vec))
        except DprefError:
            raise
        except _MALFORMED as exc:
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
    if not all(type(x) is int and x in (0, 1) for x in stream):
        raise ParameterError(f"stream={fmt_sequence(stream)}: golden streams are bits (0 or 1)")


def vector_mechanism(vec: Any) -> Mechanism:
    """The mechanism a golden vector describes: built with its ``epsilon`` (pure) or its
    ``rho`` (zCDP), both exact rational strings, its ``noise_kind`` and its parameters.

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
    noise = vec.get("noise_kind")
    if noise is not None:
        check_choice("noise_kind", noise, NOISE_KINDS)
    if "noise" in params:
        raise ParameterError("parameters.noise: the noise kind is the vector's 'noise_kind'")
    return build_mechanism(name, **{key: budget}, noise=noise, **params)


def _noise_values(vec: dict[str, Any], n_nodes: int, discrete: bool) -> list[Fraction]:
    noise = vec["noise"]
    if not isinstance(noise, list) or len(noise) != n_nodes:
        raise ParameterError(
            f"noise={fmt_sequence(noise)}: expected {n_nodes} node values in canonical order"
        )
    out = []
    for v in noise:
        if isinstance(v, bool) or not isinstance(v, int | float):
            raise ParameterError(f"noise: {fmt(v)} is not a number")
        q = Fraction(v)
        if discrete and q.denominator != 1:
            raise ParameterError(f"noise: {v} is not an integer (discrete noise kind)")
        if (q * 2**GRID_BITS).denominator != 1:
            raise ParameterError(f"noise: {v} is not a multiple of 2^-{GRID_BITS}")
        out.append(q)
    return out


def _check_vector(vec: dict[str, Any]) -> list[str]:
    """The mismatches of one golden vector."""
    problems: list[str] = []
    _check_size(vec)
    label = str(vec.get("case", f"{vec['mechanism']}{vec['parameters']} T={vec['horizon']}"))
    m = vector_mechanism(vec)
    if m.noise != vec.get("noise_kind"):
        problems.append(f"{label}: noise kind {m.noise!r} ≠ the vector's {vec['noise_kind']!r}")
        return problems
    T = int(vec["horizon"])
    plan = m.plan(T)
    nodes = [[int(a), int(b)] for a, b in zip(plan.lo, plan.hi, strict=True)]
    if nodes != vec["nodes"]:
        problems.append(f"{label}: node intervals differ")
        return problems
    plan_fields: dict[str, Any] = {
        "release_times": [int(v) for v in m.release_times(T)],
        "weights": [_frac(plan.weight(n)) for n in range(plan.n_nodes)],
        "base": _frac(plan.base),
        "scales": [_frac(plan.scale(n)) for n in range(plan.n_nodes)],
        **_toeplitz_fields(plan),
    }
    if m.rho is not None:
        plan_fields["node_rho"] = [_frac(v) for v in plan.per_node_rho()]
        plan_fields["declared_budget"] = _frac(m.declared_rho)
    else:
        plan_fields["node_epsilon"] = [_frac(v) for v in plan.per_node_epsilon()]
        plan_fields["declared_budget"] = _frac(m.declared_epsilon)
    for key, value in plan_fields.items():
        if vec.get(key) != value:
            problems.append(f"{label}: {key.replace('_', ' ')} differ")
    discrete = m.noise in ("discrete", "discrete_gaussian")
    noise = _noise_values(vec, plan.n_nodes, discrete)
    stream = [int(x) for x in vec["stream"]]
    out = m.release(np.array(stream, dtype=np.float64), noise=np.array(vec["noise"], dtype=float))
    exact = _exact_outputs(m, stream, noise, plan)
    if [_frac(v) for v in exact] != vec["outputs_exact"]:
        problems.append(f"{label}: exact outputs differ")
    want = np.array(vec["outputs"], dtype=np.float64)
    if want.shape != out.shape:
        problems.append(f"{label}: outputs differ (expected {out.size} values)")
    elif vec["exact_in_float"] is True:
        if not np.array_equal(out, want) or any(
            Fraction(v) != e for v, e in zip(want, exact, strict=True)
        ):
            problems.append(f"{label}: outputs differ (must be bit-exact)")
    elif not np.allclose(out, [float(v) for v in exact], rtol=1e-12, atol=1e-9) or not np.allclose(
        want, [float(v) for v in exact], rtol=1e-12, atol=1e-9
    ):
        problems.append(f"{label}: outputs differ from the exact rationals")
    if [_frac(v) for v in plan.variance_exact()] != vec["variance"]:
        problems.append(f"{label}: exact variances differ")
    if _frac(plan.privacy_sum()) != vec["privacy_sum"]:
        problems.append(f"{label}: privacy sum differs")
    return problems
