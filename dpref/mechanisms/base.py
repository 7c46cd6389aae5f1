"""The mechanism contract every continual-release mechanism implements.

A mechanism is a linear plan (docs/spec.md §0) written once and viewed four ways: the fast
batch path (:meth:`Mechanism.release`, :meth:`Mechanism.release_many`), the online
counter (:meth:`Mechanism.online`), the explicit plan (:meth:`Mechanism.plan`) and
the symbolic declarations the proofs in ``proofs/`` read.

Declarations are code.  Each class states, through :meth:`Mechanism.budget_terms`,
for the worst-placed item, how many nodes of each kind contain it and the scale of
those nodes, as functions of the horizon, ε and Δ written against an ``ops``
namespace: :data:`EXACT` evaluates them with Python ints and Fractions, and
``proofs`` passes a sympy namespace to prove them for symbolic T and ε.  The
declared budget is ``Σ_kinds membership · Δ / scale``.
"""

from __future__ import annotations

import inspect
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, ClassVar, Literal

import numpy as np
import numpy.typing as npt

from dpref.accounting import GaussianDP
from dpref.domains import Domain, bits
from dpref.errors import DprefTypeError, EnumerationBudgetError, HorizonError, ParameterError
from dpref.lower_bounds import Decay
from dpref.mechanisms.declarations import (
    EXACT,
    MAX_EPSILON,
    MAX_HORIZON,
    MAX_PLAN_STEPS,
    MAX_STEPS,
    MAX_UNIT_SCALE,
    MAX_VARIANCE_STEPS,
    MIN_UNIT_SCALE,
    BudgetTerm,
    ExactOps,
    NodeTable,
    PerHorizon,
    RowTerm,
    check_node_noise,
    numpydoc_parameters,
)
from dpref.mechanisms.frames import pandas_io, pandas_paths
from dpref.mechanisms.keywords import guard_init
from dpref.mechanisms.online_counter import OnlineCounter
from dpref.mechanisms.variance_floats import counts_to_floats
from dpref.noise import (
    NOISE_KINDS,
    NoiseFamily,
    NoiseKind,
    discrete_gaussian,
    discrete_gaussian_variance,
    discrete_laplace,
    discrete_laplace_variance,
    make_rng,
    noise_family,
    standard_laplace,
    standard_normal,
)
from dpref.plan import ExactSparse, LinearPlan, TargetRows
from dpref.types import Budget, Count, Horizon, Seed, Stream
from dpref.validation import (
    ceil_float,
    ceil_sqrt_float,
    check_choice,
    check_epsilon,
    check_int_range,
    check_positive_int,
    check_rho,
    check_runs,
    fmt,
    fmt_sequence,
)

__all__ = [
    "EXACT",
    "MAX_EPSILON",
    "MAX_HORIZON",
    "MAX_PLAN_STEPS",
    "MAX_STEPS",
    "MAX_UNIT_SCALE",
    "MAX_VARIANCE_STEPS",
    "MECHANISMS",
    "MIN_UNIT_SCALE",
    "BudgetTerm",
    "ExactOps",
    "Example",
    "Mechanism",
    "NodeTable",
    "OnlineCounter",
    "PerHorizon",
    "RowTerm",
    "register_mechanism",
]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True)
class Example:
    """One parameterisation a mechanism offers to the rest of dpref.

    ``dpref verify`` checks every example at every horizon; the golden vectors are one
    per example and horizon in :attr:`horizons`; the audit suite, the benchmarks and
    the contract tests build the mechanism from its examples.  Declaring them on the
    class is what makes a new mechanism covered everywhere without editing any table.
    """

    params: Mapping[str, Any] = field(default_factory=dict)
    """Constructor keywords besides ``epsilon`` and ``horizon``; a value may be a
    callable of T (:data:`PerHorizon`), resolved by :meth:`kwargs`."""
    bounded: bool | None = None
    """Pass ``horizon=T`` to the constructor (None: exactly when the class needs it)."""
    horizons: tuple[int, ...] = (16,)
    """Horizons of this example's golden vectors (empty: none)."""
    privacy: Literal["pure", "zcdp"] = "pure"
    """``"pure"``: built with ``epsilon=`` (Laplace kinds); ``"zcdp"``: built with ``rho=``
    (Gaussian kinds) — the budget the callers pass (:meth:`build`) is then ρ."""
    noise: NoiseKind | None = None
    """The node noise (None: the default of :attr:`privacy`, Laplace or Gaussian)."""

    @property
    def budget_name(self) -> str:
        """``"epsilon"`` or ``"rho"``: the constructor keyword the budget goes to."""
        return "rho" if self.privacy == "zcdp" else "epsilon"

    def kwargs(self, cls: type[Mechanism], horizon: int) -> dict[str, Any]:
        """The constructor keywords (besides ``epsilon``/``rho``) at T = ``horizon``
        (``noise`` included when the example sets it)."""
        out = {k: (v(horizon) if callable(v) else v) for k, v in self.params.items()}
        bounded = cls.needs_horizon if self.bounded is None else self.bounded
        if bounded:
            out["horizon"] = horizon
        if self.noise is not None:
            out["noise"] = self.noise
        return out

    def build(self, cls: type[Mechanism], epsilon: Any, horizon: int) -> Mechanism:
        """The mechanism this example describes, at T = ``horizon``, with the budget
        ``epsilon`` as ε (pure) or as ρ (zCDP example)."""
        return cls(**{self.budget_name: epsilon}, **self.kwargs(cls, horizon))

    def label(self, cls: type[Mechanism], horizon: int) -> str:
        """A short name: the mechanism's name, then its parameters at T (no budget);
        a zCDP example says ``zcdp``."""
        kw = self.kwargs(cls, horizon)
        bound = "" if "horizon" in kw else ",unbounded"
        rest = ",".join(f"{k}={v}" for k, v in kw.items() if k != "horizon")
        if self.privacy == "zcdp":
            rest = "zcdp" + ("," + rest if rest else "")
        return f"{cls.name}[T={horizon}{bound}{',' if rest else ''}{rest}]"


MECHANISMS: dict[str, type[Mechanism]] = {}
"""Every registered mechanism class by its command-line name (filled by the classes)."""

_CORE_PARAMETERS = ("epsilon", "rho", "horizon", "domain", "noise")


def register_mechanism(cls: type[Mechanism]) -> type[Mechanism]:
    """Add ``cls`` to :data:`MECHANISMS` under ``cls.name`` (usable as a decorator).

    dpref's own classes register themselves when they are defined (a class in a
    ``dpref.`` module that sets ``name`` in its own body); other code calls this.
    Raises :class:`~dpref.errors.ParameterError` when the name is empty or taken by
    another class.
    """
    name = cls.__dict__.get("name", "")
    if not name:
        raise ParameterError(f"mechanism={cls.__name__}: a registered class sets its own name")
    held = MECHANISMS.get(name)
    if held is not None and held.__qualname__ != cls.__qualname__:
        raise ParameterError(f"name={name!r}: already registered by {held.__qualname__}")
    MECHANISMS[name] = cls
    return cls


class Mechanism(ABC):
    """Base class of every continual-release mechanism (the contract: docs/plans.md).

    Parameters
    ----------
    epsilon
        The privacy budget ε > 0 for pure ε-DP, kept exactly (a float is read as its
        decimal: ``0.1`` is 1/10, :data:`~dpref.types.Budget`); give one of ε and ρ.
    rho
        The zCDP budget ρ > 0 (exact) for Gaussian noise: the release is ρ-zCDP and
        exactly √(2ρ)-GDP (docs/gaussian.md).
    horizon
        T, the number of items; required unless the mechanism is unbounded.
    domain
        Item domain and neighbour relation (default: bits, Δ = 1).
    noise
        With ``epsilon``: ``"laplace"`` (default, continuous) or ``"discrete"`` (exact
        discrete Laplace); with ``rho``: ``"gaussian"`` (default, continuous) or
        ``"discrete_gaussian"`` (exact discrete Gaussian).  The discrete kinds need an
        integer domain.

    Notes
    -----
    A zCDP mechanism keeps the Laplace design at ε = 1 (:attr:`design_epsilon`): node n
    of Laplace scale ``b_n`` there (its share of the budget is ``f_n = Δ|w_n|/b_n``) gets
    ``N(0, σ_n²)`` with ``σ_n² = |w_n|·Δ·b_n/(2ρ)``, so every item's L2 privacy sum is
    ``2ρ·Σ_{n∋i} f_n γ^{2(hi_n−i)} ≤ 2ρ`` (:meth:`node_variance`).
    """

    name: ClassVar[str] = ""
    """The mechanism's name on the command line (setting it in a dpref module registers
    the class in :data:`MECHANISMS`)."""
    needs_horizon: ClassVar[bool] = True
    """Whether the mechanism needs T in advance."""
    examples: ClassVar[tuple[Example, ...]] = ()
    """The parameterisations verify, golden, the audit suite, bench and the contract
    tests use (the first is the default one)."""
    proof: ClassVar[str | None] = None
    """The file (from the repository root) whose ``PROOFS`` proves this class's budget,
    e.g. ``"proofs/counting.py"``; a subclass that sets none is held to its parent's."""
    docs: ClassVar[str | None] = None
    """The documentation page that defines this mechanism, e.g. ``"docs/counting.md"``."""
    max_plan_steps: ClassVar[int] = MAX_PLAN_STEPS
    """The largest T :meth:`plan` builds (:data:`MAX_PLAN_STEPS` unless the plan is denser)."""
    opens_nodes: ClassVar[bool] = False
    """Whether outputs use nodes before their interval ends (through partial sums whose
    later items cancel); then :meth:`release_times` is passed to the plan."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        guard_init(cls)  # a missing or unknown keyword: a DprefTypeError naming it
        pandas_paths(cls)  # a pandas Series in, a Series out (dpref.mechanisms.frames)
        if cls.__dict__.get("name") and cls.__module__.startswith("dpref."):
            register_mechanism(cls)

    @classmethod
    def parameters(cls) -> tuple[str, ...]:
        """Constructor parameters besides ``epsilon``, ``domain`` and ``noise``.

        Derived from the signature, so a new keyword is a new CLI flag with no table
        to edit; ``horizon`` comes first.
        """
        names = inspect.signature(cls).parameters
        own = tuple(n for n in names if n not in _CORE_PARAMETERS)
        return ("horizon", *own) if "horizon" in names else own

    @classmethod
    def required_parameters(cls) -> tuple[str, ...]:
        """The :meth:`parameters` that have no default."""
        sig = inspect.signature(cls).parameters
        return tuple(p for p in cls.parameters() if sig[p].default is inspect.Parameter.empty)

    @classmethod
    def parameter_help(cls) -> dict[str, str]:
        """Each own parameter's description, from the class docstring's numpydoc
        ``Parameters`` section (first sentence)."""
        return {
            name: text
            for name, text in numpydoc_parameters(inspect.getdoc(cls) or "").items()
            if name in cls.parameters()
        }

    frontier_privacy: ClassVar[tuple[str, ...]] = ("pure", "zcdp")
    """The tables of ``dpref frontier`` this class appears in: ``"pure"`` (``--epsilon``,
    Laplace noise) and/or ``"zcdp"`` (``--rho``, Gaussian noise)."""

    @classmethod
    def frontier_variants(cls, horizon: int) -> list[dict[str, Any]]:
        """The parameterisations ``dpref frontier`` compares at T = ``horizon``: constructor
        keywords besides ``epsilon`` and ``horizon``, each value resolved at T.

        Default: one per distinct :attr:`examples` entry (a class overrides this to offer
        more, e.g. every arity k of a tree).
        """
        t = check_int_range("horizon", horizon, 1, MAX_HORIZON)
        out: list[dict[str, Any]] = []
        for example in cls.examples:
            kw = {k: (v(t) if callable(v) else v) for k, v in example.params.items()}
            if kw not in out:
                out.append(kw)
        return out

    def variance_counts(
        self, horizon: int | None = None
    ) -> tuple[Fraction | tuple[Fraction, ...], npt.NDArray[np.integer[Any]]] | None:
        """A vectorised exact form of :meth:`variance_exact` (Laplace noise), or None.

        Either ``(unit, n)`` with ``n`` of shape (T,) and ``Var(out_t) = unit · n_t``, or
        ``(units, n)`` with ``n`` of shape (len(units), T) and ``Var(out_t) = Σ_i units_i ·
        n_{i,t}`` (integer arrays of any integer dtype).  ``dpref frontier`` reads it at
        large T, where a per-step list of Fractions is too slow.
        """
        return None

    def variance_upper(self, horizon: int | None = None) -> FloatArray | None:
        """Per-step variances as floats, each at least the exact value, or None.

        For classes whose exact per-step variances are too costly at large T and that have
        no :meth:`variance_counts` (their Fractions carry Θ(T)-bit denominators);
        ``dpref frontier`` then reports upper bounds, marked ``≤``.
        """
        return None

    def online_memory(self, horizon: int | None = None) -> int | None:
        """The most floats the online counter holds at once up to T (None: not declared)."""
        return None

    def decay(self) -> Decay | None:
        """The decay function g of the target ``F(t) = Σ g(t−i) x_i`` (None: not a decayed
        sum); :func:`dpref.lower_bound` reads it."""
        return None

    def __init__(
        self,
        *,
        epsilon: Budget | None = None,
        rho: Budget | None = None,
        horizon: Horizon | None = None,
        domain: Domain | None = None,
        noise: NoiseKind | None = None,
    ) -> None:
        if (epsilon is None) == (rho is None):
            raise ParameterError(
                f"epsilon={fmt(epsilon)}, rho={fmt(rho)}: give exactly one of epsilon "
                "(pure ε-DP, Laplace noise) and rho (ρ-zCDP, Gaussian noise)"
            )
        self.epsilon: Fraction | None = None
        """ε of a pure ε-DP mechanism (None for zCDP)."""
        self.rho: Fraction | None = None
        """ρ of a ρ-zCDP mechanism (None for pure ε-DP)."""
        self.privacy: Literal["pure", "zcdp"]
        """``"pure"`` (ε-DP, Laplace kinds) or ``"zcdp"`` (ρ-zCDP, Gaussian kinds)."""
        if epsilon is not None:
            self.epsilon = check_epsilon("epsilon", epsilon)
            self.privacy = "pure"
        else:
            self.rho = check_rho("rho", rho)
            self.privacy = "zcdp"
        self.design_epsilon: Fraction = self.epsilon if self.epsilon is not None else Fraction(1)
        """The ε of the Laplace design the node scales are computed from: ε itself, or 1
        for zCDP (its per-node ε are the nodes' shares of the budget)."""
        if horizon is None:
            if self.needs_horizon:
                raise ParameterError(f"horizon=None: {type(self).__name__} needs a horizon T")
            self.horizon: int | None = None
        else:
            self.horizon = check_int_range("horizon", horizon, 1, MAX_HORIZON)
        if domain is None:
            domain = bits()
        if not isinstance(domain, Domain):
            raise DprefTypeError(f"domain={fmt(domain)}: must be a dpref.domains.Domain")
        self.domain: Domain = domain
        if noise is None:
            noise = "laplace" if self.privacy == "pure" else "gaussian"
        check_choice("noise", noise, NOISE_KINDS)
        family = noise_family(noise)
        if self.privacy == "pure" and family == "gaussian":
            raise ParameterError(
                f"epsilon={fmt(epsilon)} with noise={noise!r}: Gaussian noise is not pure "
                "ε-DP; give rho= (ρ-zCDP) instead, or noise='laplace' or 'discrete'"
            )
        if self.privacy == "zcdp" and family == "laplace":
            raise ParameterError(
                f"rho={fmt(rho)} with noise={noise!r}: Laplace noise is accounted in pure "
                "ε; give epsilon= instead, or noise='gaussian' or 'discrete_gaussian'"
            )
        if noise in ("discrete", "discrete_gaussian") and not (
            domain.integer and domain.sensitivity.denominator == 1
        ):
            raise ParameterError(
                f"noise={noise!r} needs an integer domain, got domain={domain.name}"
            )
        self.noise: NoiseKind = noise
        self.noise_family: NoiseFamily = family
        """``"laplace"`` (L1 accounting) or ``"gaussian"`` (L2 accounting)."""
        self.sensitivity: Fraction = domain.sensitivity
        if self.rho is not None:
            unit = self.sensitivity**2 / (2 * self.rho)
            if unit > MAX_UNIT_SCALE or (self.sensitivity > 0 and unit < MIN_UNIT_SCALE**2):
                raise ParameterError(
                    f"rho={fmt(rho)}: out of range for domain={domain.name}, the node variance "
                    "unit Δ²/(2ρ) must lie in [2^-800, 2^900] to stay a normal float"
                )
        if self.sensitivity / self.design_epsilon > MAX_UNIT_SCALE:
            # every node scale is Δ/ε times a factor far below 2^100 (T, L, ζ(δ)k^δ, S):
            # refuse here rather than overflow a float scale after noise was drawn
            raise ParameterError(
                f"epsilon={fmt(epsilon)}: too small for domain={domain.name}, the noise "
                "scale Δ/ε exceeds 2^900 and would overflow a float"
            )
        if (
            self.design_epsilon > MAX_EPSILON
            or self.sensitivity / self.design_epsilon < MIN_UNIT_SCALE
        ):
            raise ParameterError(
                f"epsilon={fmt(epsilon)}: too large for domain={domain.name}, need ε <= 2^400 "
                "and Δ/ε >= 2^-400, else the noise variance underflows to 0"
            )

    # ------------------------------------------------------------ declarations
    @property
    def declared_epsilon(self) -> Fraction:
        """The ε this mechanism claims (exact); a zCDP mechanism has none
        (:class:`~dpref.errors.ParameterError`)."""
        if self.epsilon is None:
            raise ParameterError(
                f"rho={self.rho}: a ρ-zCDP mechanism (noise={self.noise!r}) has no pure ε — "
                "Gaussian noise is not ε-DP for any ε; use declared_rho (or the mechanism's "
                "(ε, δ) guarantee through dpref.accounting)"
            )
        return self.epsilon

    @property
    def declared_rho(self) -> Fraction:
        """The ρ this zCDP mechanism claims (exact); a pure mechanism declares ε instead
        (:class:`~dpref.errors.ParameterError`)."""
        if self.rho is None:
            raise ParameterError(
                f"epsilon={self.epsilon}: a pure ε-DP mechanism declares epsilon, not rho "
                "(it is also ε²/2-zCDP, but that is not its declaration)"
            )
        return self.rho

    def gdp(self) -> GaussianDP:
        """The exact Gaussian-DP guarantee of continuous Gaussian noise: μ-GDP with
        ``μ² = 2·declared_rho`` (``proofs/gaussian.py``), with rigorous ``delta(ε)`` and
        ``epsilon(δ)`` (docs/accounting.md).

        Laplace noise has no GDP curve, and discrete Gaussian noise is ρ-zCDP but not exactly
        GDP (use ``dpref.accounting.ZCDP(m.declared_rho)``): both are a
        :class:`~dpref.errors.ParameterError`.
        """
        if self.noise != "gaussian":
            raise ParameterError(
                f"noise={self.noise!r}: gdp() needs continuous Gaussian noise (rho= with "
                "noise='gaussian'); for discrete Gaussian noise use "
                "dpref.accounting.ZCDP(declared_rho), for Laplace noise declared_epsilon"
            )
        try:
            return GaussianDP(2 * self.declared_rho)
        except ParameterError as exc:
            raise ParameterError(f"rho={self.rho}: {exc}") from None

    @property
    def gaussian(self) -> bool:
        """Whether the node noise is Gaussian (continuous or discrete)."""
        return self.noise_family == "gaussian"

    def node_variance(self, scale: Fraction, weight: Fraction = Fraction(1)) -> Fraction:
        """The exact variance of a node of Laplace scale ``scale`` (at :attr:`design_epsilon`)
        and weight ``weight``: ``2b²`` for Laplace noise, ``|w|·Δ·b/(2ρ)`` for Gaussian.

        The Gaussian rule gives the node the L2 cost ``(wΔ)²/σ² = 2ρ·Δ|w|/b``: 2ρ times its
        per-node ε in the design at ε = 1 (docs/gaussian.md).  For the discrete kinds this
        is the variance of the continuous twin (the discrete law's variance is slightly
        smaller: :meth:`variance` reports it).
        """
        if self.rho is None:
            return 2 * scale * scale
        return abs(weight) * self.sensitivity * scale / (2 * self.rho)

    def noise_multiplier(self, scale: Fraction, weight: Fraction = Fraction(1)) -> float:
        """The float a standard draw is multiplied by for such a node, rounded up: the
        Laplace scale ``b``, or the Gaussian ``σ = √(|w|Δb/(2ρ))``."""
        if self.rho is None:
            return ceil_float(scale)
        return ceil_sqrt_float(self.node_variance(scale, weight))

    def node_variance_float(self, scale: Fraction, weight: Fraction = Fraction(1)) -> float:
        """The variance of the noise actually drawn for such a node, as a float: the
        multiplier of :meth:`noise_multiplier` (rounded up) squared, times 2 for Laplace."""
        m = self.noise_multiplier(scale, weight)
        return 2 * m * m if self.rho is None else m * m

    def draw_node(self, rng: np.random.Generator, scale: Fraction, weight: Fraction) -> float:
        """One exact discrete draw for a node (``noise="discrete"`` or
        ``"discrete_gaussian"``) of Laplace design scale ``scale`` and weight ``weight``."""
        if self.noise == "discrete_gaussian":
            return float(discrete_gaussian(rng, self.node_variance(scale, weight), 1)[0])
        return float(discrete_laplace(rng, scale, 1)[0])

    @abstractmethod
    def budget_terms(self, ops: Any = EXACT, **symbols: Any) -> list[BudgetTerm]:
        """The declared accounting for the worst-placed item (see module docstring).

        ``symbols`` may override ``horizon``, ``epsilon`` and ``sensitivity`` (and,
        for mechanisms made of instances, the instance index ``k``) so that the proofs
        can pass sympy symbols.
        """

    def declared_budget(self, ops: Any = EXACT, **symbols: Any) -> Any:
        """``Σ_terms membership · Δ / scale`` — what the declarations add up to."""
        delta = symbols.get("sensitivity", self.sensitivity)
        return sum(
            (term.membership * delta / term.scale for term in self.budget_terms(ops, **symbols)),
            ops.number(0),
        )

    def per_node_epsilon(self, horizon: int | None = None) -> list[Fraction]:
        """Per-node ε in canonical order, ``Δ·|w_n|/b_n``, exact (pure ε-DP only)."""
        return self.plan(horizon).per_node_epsilon()

    def expected_l1_sum(self, horizon: int) -> Fraction | None:
        """The exact L1 privacy sum the Laplace design (at :attr:`design_epsilon`) reaches at
        this horizon (None: only ≤ the design ε)."""
        return None

    def expected_privacy_sum(self, horizon: int) -> Fraction | None:
        """The exact privacy sum the plan must reach at this horizon (None: only a bound).

        Pure ε-DP: the L1 sum (:meth:`expected_l1_sum`).  Gaussian noise with γ = 1:
        ``2ρ`` times the L1 sum at ε = 1 (each node's L2 cost is 2ρ times its share); with
        γ < 1 the squared weights make it smaller than that, and None is returned.
        """
        l1 = self.expected_l1_sum(horizon)
        if self.rho is None or l1 is None:
            return l1
        if self.base != 1:
            return None
        return 2 * self.rho * l1

    # ---------------------------------------------------------- plan structure
    @abstractmethod
    def nodes(self, horizon: int) -> NodeTable:
        """The nodes released up to ``horizon``, in canonical order."""

    @abstractmethod
    def recombination(self, horizon: int) -> ExactSparse:
        """R (horizon × nodes), exact."""

    def target_rows(self, horizon: int) -> TargetRows:
        """Q; prefix sums unless overridden."""
        return TargetRows.prefix(horizon)

    @property
    def base(self) -> Fraction:
        """γ of the node weights (1 unless the mechanism decays)."""
        return Fraction(1)

    @abstractmethod
    def variance_exact(self, horizon: int | None = None) -> list[Fraction]:
        """Closed-form exact per-step variance, t = 1..horizon: ``Σ_n r_{t,n}²·v_n`` with the
        node variances ``v_n`` of :meth:`node_variance` (``2b²`` Laplace, ``σ²`` Gaussian;
        for the discrete kinds, the continuous twin's)."""

    @abstractmethod
    def combine(self, noise: FloatArray, horizon: int) -> FloatArray:
        """``R z`` along the last axis: the noise part of the output, vectorised."""

    @abstractmethod
    def target(self, stream: Any) -> FloatArray:
        """The exact non-private answers ``Q x``."""

    def _target_checked(self, x: FloatArray) -> FloatArray:
        """``Q x`` for a stream already validated (override to skip re-validation)."""
        return self.target(x)

    def release_times(self, horizon: int) -> IntArray:
        """When each node is released, in canonical order (its interval end unless the
        mechanism delays it)."""
        return self.nodes(horizon).hi

    def node_count(self, horizon: int) -> int:
        """Number of nodes released up to ``horizon`` (override when cheaper than nodes())."""
        return self.nodes(horizon).size

    def noise_scales(self, horizon: int) -> FloatArray | float:
        """Per-node float Laplace scales (rounded up), or one float when all nodes share it."""
        return self.nodes(horizon).scales

    def noise_multipliers(self, horizon: int) -> FloatArray | float:
        """Per-node floats a standard draw is multiplied by (rounded up), canonical order,
        or one float when all nodes share it: :meth:`noise_scales` for Laplace noise, the
        Gaussian standard deviations ``σ_n`` otherwise."""
        if self.rho is None:
            return self.noise_scales(horizon)
        nodes = self.nodes(horizon)
        weight_idx = (
            nodes.weight_idx if nodes.weight_idx is not None else np.zeros(nodes.size, np.int64)
        )
        table, idx = self._variance_table(
            nodes.scale_table, nodes.weight_table, weight_idx, nodes.scale_idx
        )
        sd = np.array([ceil_sqrt_float(v) for v in table], dtype=np.float64)
        if sd.size == 1:
            return float(sd[0])
        out: FloatArray = sd[idx]
        return out

    def _variance_table(
        self,
        scale_table: tuple[Fraction, ...],
        weight_table: tuple[Fraction, ...],
        weight_idx: IntArray,
        scale_idx: IntArray,
    ) -> tuple[tuple[Fraction, ...], IntArray]:
        """The distinct Gaussian node variances of (weight, scale) pairs and each node's index."""
        n_s = len(scale_table)
        pairs, group = np.unique(weight_idx.astype(np.int64) * n_s + scale_idx, return_inverse=True)
        table = tuple(
            self.node_variance(scale_table[int(p) % n_s], weight_table[int(p) // n_s])
            for p in pairs
        )
        return table, group.reshape(-1).astype(np.int64)

    @abstractmethod
    def online(self, rng: Any = None, noise: Any = None) -> OnlineCounter:
        """A streaming counter drawing node noise in canonical order (or using ``noise``)."""

    # --------------------------------------------------------------- helpers
    def _horizon_for(
        self,
        horizon: int | None,
        name: str = "horizon",
        limit: int = MAX_STEPS,
        limit_name: str = "MAX_STEPS",
    ) -> int:
        """T for a path that builds one value per step (plan, variance, node noise):
        the given or own horizon, at most the mechanism's and at most ``limit``
        (:data:`MAX_STEPS`, :data:`MAX_VARIANCE_STEPS` or :attr:`max_plan_steps`)."""
        if horizon is None:
            if self.horizon is None:
                raise ParameterError(f"{name}=None: give T for an unbounded mechanism")
            t = self.horizon
        else:
            t = check_positive_int(name, horizon)
            if self.horizon is not None and t > self.horizon:
                raise HorizonError(f"{name}={t}: exceeds the mechanism's horizon={self.horizon}")
        if t > limit:
            raise HorizonError(
                f"{name}={fmt(t)}: above {limit_name}={limit} (2^{limit.bit_length() - 1}); this "
                "path builds one value per step (Θ(T) memory and time); online() steps "
                "through longer streams"
            )
        return t

    def _variance_horizon(self, horizon: int | None) -> int:
        """T for ``variance``/``variance_exact`` (at most :data:`MAX_VARIANCE_STEPS`)."""
        return self._horizon_for(horizon, limit=MAX_VARIANCE_STEPS, limit_name="MAX_VARIANCE_STEPS")

    def _stream(self, stream: Any) -> FloatArray:
        limit = MAX_STEPS if self.horizon is None else min(self.horizon, MAX_STEPS)
        return self.domain.check_stream("stream", stream, horizon=limit)

    def _stream_node_count(self, stream: Any, x: FloatArray) -> int:
        """The node count for a release of ``x``; a stream too long for an enumeration
        budget is an error about ``stream`` (the caller chose its length), not ``horizon``."""
        try:
            return self.node_count(x.size)
        except EnumerationBudgetError as exc:
            raise EnumerationBudgetError(
                f"stream={fmt_sequence(stream, x.shape)}: {len(x)} items; {exc}"
            ) from None

    def plan(self, horizon: int | None = None) -> LinearPlan:
        """The explicit linear plan at T = ``horizon`` (default: the mechanism's T), for
        T up to :attr:`max_plan_steps`."""
        t = self._horizon_for(horizon, limit=self.max_plan_steps, limit_name="max_plan_steps")
        nodes = self.nodes(t)
        weight_idx = (
            nodes.weight_idx if nodes.weight_idx is not None else np.zeros(nodes.size, np.int64)
        )
        scale_table, scale_idx = nodes.scale_table, nodes.scale_idx
        if self.rho is not None:  # the plan holds the exact node variances σ_n²
            scale_table, scale_idx = self._variance_table(
                scale_table, nodes.weight_table, weight_idx, scale_idx
            )
        return LinearPlan(
            name=repr(self),
            horizon=t,
            lo=nodes.lo,
            hi=nodes.hi,
            weight_table=nodes.weight_table,
            weight_idx=weight_idx,
            scale_table=scale_table,
            scale_idx=scale_idx,
            recombination=self.recombination(t),
            target=self.target_rows(t),
            sensitivity=self.sensitivity,
            # the plan is checked against what the mechanism declares (SmoothBinary declares
            # less than its ε or ρ at some T: what it really spends)
            declared_epsilon=self.declared_epsilon if self.rho is None else self.design_epsilon,
            base=self.base,
            expected_privacy_sum=self.expected_privacy_sum(t),
            release=self.release_times(t) if self.opens_nodes else None,
            noise_family=self.noise_family,
            declared_rho=None if self.rho is None else self.declared_rho,
            noise_kind=self.noise,
        )

    def node_noise(self, horizon: int, rng: Any = None, runs: int | None = None) -> FloatArray:
        """Draw node noise in canonical order: shape (nodes,) or (runs, nodes)."""
        t = self._horizon_for(horizon)
        gen = make_rng(rng)
        size = self.node_count(t)
        shape: tuple[int, ...] = (size,) if runs is None else (check_runs("runs", runs), size)
        if len(shape) == 2 and shape[0] * size >= 2**62:
            raise ParameterError(f"runs={runs}: {shape[0]} × {size} node draws is too many")
        if self.noise in ("laplace", "gaussian"):
            # before drawing: any error leaves rng untouched
            multipliers = self.noise_multipliers(t)
            z = (
                standard_laplace(gen, shape)
                if self.noise == "laplace"
                else standard_normal(gen, shape)
            )
            z *= multipliers
            return z
        nodes = self.nodes(t)
        flat = np.empty(int(np.prod(shape)), dtype=np.float64)
        wt = nodes.weight_table
        widx = nodes.weight_idx
        pairs = [
            (nodes.scale_table[int(i)], wt[0 if widx is None else int(widx[n])])
            for n, i in enumerate(nodes.scale_idx)
        ]
        for j in range(flat.size):
            scale, weight = pairs[j % nodes.size]
            flat[j] = self.draw_node(gen, scale, weight)
        return flat.reshape(shape)

    def _check_noise(self, noise: Any, n_nodes: int, runs: int | None = None) -> FloatArray:
        return check_node_noise(noise, n_nodes, runs)

    # ---------------------------------------------------------------- release
    @pandas_io("one")
    def release(self, stream: Stream, rng: Seed = None, *, noise: Any = None) -> FloatArray:
        """Release one noisy answer per item (float64, length ``len(stream)``).

        ``noise``, when given, is the node noise in canonical order (no randomness
        is used); otherwise it is drawn from ``rng`` (a Generator, a seed or None).
        A pandas Series (or one-column DataFrame) comes back as one, its index kept.
        """
        x = self._stream(stream)
        t = x.size
        n_nodes = self._stream_node_count(stream, x)
        if noise is None:
            gen = make_rng(rng)
            z = self.node_noise(t, gen)
        else:
            z = self._check_noise(noise, n_nodes)
        out = self.combine(z, t)
        out += self._target_checked(x)
        return out

    @pandas_io("many")
    def release_many(
        self, stream: Stream, runs: Count, rng: Seed = None, *, noise: Any = None
    ) -> FloatArray:
        """``runs`` independent releases of one stream, shape (runs, T), vectorised (a
        pandas stream: a DataFrame, one row per run, its index as the columns).

        Run r uses the r-th block of node draws, so row r equals the r-th of ``runs``
        successive :meth:`release` calls on the same Generator.
        """
        x = self._stream(stream)
        n_runs = check_runs("runs", runs)
        t = x.size
        n_nodes = self._stream_node_count(stream, x)
        if noise is None:
            gen = make_rng(rng)
            z = self.node_noise(t, gen, runs=n_runs)
        else:
            z = self._check_noise(noise, n_nodes, runs=n_runs)
        out = self.combine(z, t)
        out += self._target_checked(x)
        return out

    def variance(self, horizon: int | None = None) -> FloatArray:
        """Exact per-step variance of the release error (as floats, each the nearest to the
        exact value, from :meth:`variance_counts` when the class has it; for the discrete
        kinds from the discrete laws' variances, rounded up)."""
        t = self._variance_horizon(horizon)
        if self.noise in ("laplace", "gaussian"):
            counts = self.variance_counts(t)
            if counts is not None:  # the same floats without a Fraction per step
                return counts_to_floats(*counts)
            return np.array([float(v) for v in self.variance_exact(t)], dtype=np.float64)
        plan = self.plan(t)
        law = discrete_laplace_variance if self.noise == "discrete" else discrete_gaussian_variance
        node_var = np.array([law(b) for b in plan.scale_table])[plan.scale_idx]
        r2 = plan.R().multiply(plan.R())
        return np.asarray(r2 @ node_var, dtype=np.float64)

    def __repr__(self) -> str:
        params = [f"epsilon={self.epsilon}" if self.rho is None else f"rho={self.rho}"]
        if self.horizon is not None:
            params.append(f"horizon={self.horizon}")
        params.extend(f"{k}={v}" for k, v in self.extra_params().items())
        if self.noise not in ("laplace", "gaussian"):
            params.append(f"noise={self.noise}")
        return f"{type(self).__name__}({', '.join(params)})"

    def extra_params(self) -> dict[str, Any]:
        """Mechanism-specific parameters for ``repr`` and reports."""
        return {}
