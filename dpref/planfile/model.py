"""The :class:`PlanFile` value: a factorization read from a plan file, in one of three forms
(dense matrices, Toeplitz coefficient columns, BLT buffers), with its coefficient columns and
dense matrices on demand.  See docs/plan-format.md."""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from dpref.errors import ParameterError

FloatArray = npt.NDArray[np.float64]
Kind = Literal["dense", "toeplitz", "blt"]
Precision = Literal["exact", "float64", "float32"]

KINDS: tuple[str, ...] = ("dense", "toeplitz", "blt")
"""The plan forms."""
PRECISIONS: tuple[str, ...] = ("float64", "float32")
"""The precisions a float plan may declare (``"precision"`` in the file, or the override)."""
MAX_DENSE_EXACT = 1024
"""Most rows of C and most items T of an exact (rational) dense plan."""
MAX_DENSE_STEPS = 4096
"""Most rows of C and most items T of a float dense plan, and the largest T
:meth:`PlanFile.to_dense` materialises."""
MAX_STEPS = 2**20
"""Largest horizon T of a Toeplitz or BLT plan."""
MAX_EXACT_STEPS = 4096
"""Largest T at which an exact Toeplitz plan with a decoder is checked exactly (the exact
convolution by Kronecker substitution); above, its entries are rounded to float64."""
MAX_EXACT_DERIVED = 512
"""Largest T at which a decoder is derived exactly (O(T²) rational operations); above,
in float64."""
MAX_EXACT_BLT = 64
"""Largest T at which an exact BLT plan is checked exactly (its coefficients' denominators
grow like den(θ)^k); above, θ and ω are rounded to float64."""
MAX_BUFFERS = 64
"""Most BLT buffers."""


@dataclass(frozen=True, kw_only=True, eq=False)
class PlanFile:
    """A factorization ``B·C`` of prefix (or window) sums as a plan file gives it.

    ``kind`` says which of the data fields are set: ``"dense"`` — ``C`` (nodes × T), ``B``
    (T × nodes), ``scales``; ``"toeplitz"`` — ``c`` (first column of the lower-triangular
    Toeplitz strategy, length T), ``b`` (the decoder's, or None: derived for the target);
    ``"blt"`` — ``theta``, ``omega`` (C's coefficients ``c₀ = 1``, ``c_k = Σ_i ω_i θ_i^{k−1}``,
    jax_privacy's ``buf_decay`` and ``output_scale``).  Exact plans hold Fractions (lists),
    float plans float64 numpy arrays holding the file's floats at their exact binary value.
    """

    kind: Kind
    """``"dense"``, ``"toeplitz"`` or ``"blt"``."""
    horizon: int
    """T, the number of items (columns of C)."""
    exact: bool
    """True when every number in the file is an integer or a rational string."""
    precision: Precision
    """``"exact"``, or the float precision the plan declares (``"float64"`` default,
    ``"float32"`` from the file's ``"precision"``, a float32 ``.npz`` array, or the
    override of :func:`~dpref.planfile.read_plan_file`)."""
    scales: Any = None
    """Dense plans: the relative noise scale of each row of C (None: all 1).  Toeplitz and
    BLT plans: None (every node gets the same noise)."""
    C: Any = None
    """Dense: the strategy (list of rows of Fractions, or a float array)."""
    B: Any = None
    """Dense: the decoder."""
    c: Any = None
    """Toeplitz: the strategy's first column (length T)."""
    b: Any = None
    """Toeplitz: the decoder's first column (length T), or None (derived)."""
    theta: Any = None
    """BLT: the buffer decays θ_i."""
    omega: Any = None
    """BLT: the output scales ω_i."""
    source: str = "<plan>"
    """Where the plan came from (a path)."""
    comment: str | None = None
    """The file's ``"comment"``, if any."""
    noise: str | None = None
    """The noise law the file names (``"laplace"`` or ``"gaussian"``, as ``dpref plan
    extract`` writes it), or None; ``plan check`` takes the law from its flags."""
    _cache: dict[str, Any] = field(default_factory=dict, repr=False)
    """Derived columns, computed once."""

    # ------------------------------------------------------------------ shape
    @property
    def nodes(self) -> int:
        """The number of noise nodes (rows of C)."""
        if self.kind == "dense":
            return len(self.C)
        return self.horizon

    @property
    def has_decoder(self) -> bool:
        """Whether the file gives the decoder (else it is derived for the target)."""
        return self.kind == "dense" or self.b is not None

    def exact_columns(self, window: int | None = None) -> bool:
        """Whether :meth:`strategy_column` and :meth:`decoder_column` are exact by default:
        an exact file with T ≤ :data:`MAX_EXACT_STEPS` whose decoder is given or derivable
        exactly (T ≤ :data:`MAX_EXACT_DERIVED`)."""
        if not self.exact or self.kind == "dense":
            return self.exact
        if self.horizon > MAX_EXACT_STEPS:
            return False
        if self.kind == "blt":
            return self.horizon <= MAX_EXACT_BLT
        return self.b is not None or self.horizon <= MAX_EXACT_DERIVED

    # --------------------------------------------------------------- columns
    def strategy_column(self, exact: bool | None = None) -> Any:
        """C's first column ``c₀ … c_{T−1}`` (Toeplitz and BLT): a list of Fractions when
        ``exact`` (default: :meth:`exact_columns`), else a float64 array."""
        if self.kind == "dense":
            raise ParameterError("kind='dense': a dense plan has no coefficient column")
        want = self.exact_columns() if exact is None else exact
        if want and not self.exact:
            raise ParameterError(f"exact={exact}: the plan {self.source!r} holds floats")
        key = f"c:{want}"
        if key not in self._cache:
            self._cache[key] = self._strategy(want)
        return self._cache[key]

    def _strategy(self, exact: bool) -> Any:
        T = self.horizon
        if self.kind == "toeplitz":
            if exact:
                return list(self.c)
            return _floats(self.c)
        if exact:
            out = [Fraction(1)]
            powers = [Fraction(1)] * len(self.theta)
            for _ in range(1, T):
                out.append(
                    sum((w * p for w, p in zip(self.omega, powers, strict=True)), Fraction(0))
                )
                powers = [p * t for p, t in zip(powers, self.theta, strict=True)]
            return out
        th, om = _floats(self.theta), _floats(self.omega)
        c = np.zeros(T, dtype=np.float64)
        c[0] = 1.0
        if T > 1:
            k = np.arange(T - 1, dtype=np.float64)
            for t, w in zip(th.tolist(), om.tolist(), strict=True):
                c[1:] += w * np.power(t, k)
        return c

    def decoder_column(self, window: int | None = None, exact: bool | None = None) -> Any:
        """B's first column (Toeplitz and BLT): the file's, or derived so that ``b ∗ c ≡ q
        mod x^T`` for the target q (prefix sums, or windows of ``window`` items)."""
        if self.kind == "dense":
            raise ParameterError("kind='dense': a dense plan has no coefficient column")
        want = self.exact_columns(window) if exact is None else exact
        if want and not self.exact:
            raise ParameterError(f"exact={exact}: the plan {self.source!r} holds floats")
        key = f"b:{window}:{want}"
        if key not in self._cache:
            self._cache[key] = self._decoder(window, want)
        return self._cache[key]

    def _decoder(self, window: int | None, exact: bool) -> Any:
        from dpref.planfile.numeric import derive_decoder, derive_decoder_exact

        if self.b is not None:
            return list(self.b) if exact else _floats(self.b)
        c = self.strategy_column(exact)
        if (c[0] == 0) if exact else (float(c[0]) == 0.0):
            raise ParameterError(
                f"C[0]={c[0]}: c₀ = 0 makes C singular: no decoder can be derived (give B)"
            )
        if exact:
            if self.horizon > MAX_EXACT_DERIVED:
                raise ParameterError(
                    f"horizon={self.horizon}: an exact decoder is derived up to "
                    f"T = {MAX_EXACT_DERIVED} (use exact=False)"
                )
            return derive_decoder_exact(c, window)
        return derive_decoder(c, window)

    def to_dense(self, window: int | None = None, limit: int = MAX_DENSE_STEPS) -> tuple[Any, Any]:
        """``(B, C)`` as dense matrices (Fractions for an exact plan, float arrays otherwise);
        refused above ``limit`` (default :data:`MAX_DENSE_STEPS`) items."""
        if self.horizon > limit or self.nodes > limit:
            raise ParameterError(
                f"horizon={self.horizon}: to_dense materialises at most {limit} rows and "
                "columns (T² entries); use the coefficient columns"
            )
        if self.kind == "dense":
            return self.B, self.C
        T = self.horizon
        exact = self.exact_columns(window)
        c = self.strategy_column(exact)
        b = self.decoder_column(window, exact)
        if exact:
            zero = Fraction(0)
            Cm = [[c[n - i] if i <= n else zero for i in range(T)] for n in range(T)]
            Bm = [[b[t - n] if n <= t else zero for n in range(T)] for t in range(T)]
            return Bm, Cm
        from scipy.linalg import toeplitz

        zeros = np.zeros(T)
        cf, bf = np.asarray(c, dtype=np.float64), np.asarray(b, dtype=np.float64)
        Cf = toeplitz(cf, np.concatenate([cf[:1], zeros[1:]]))
        Bf = toeplitz(bf, np.concatenate([bf[:1], zeros[1:]]))
        return Bf, Cf


def _floats(values: Any) -> FloatArray:
    if isinstance(values, np.ndarray):
        out: FloatArray = values.astype(np.float64, copy=False)
        return out
    return np.array([float(v) for v in values], dtype=np.float64)
