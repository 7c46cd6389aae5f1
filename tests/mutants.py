"""The mutants of dpref's mutation self-test (issue 23, item 7), as data.

Each :class:`Mutant` is one realistic single-point bug: in ``file`` (relative to the
repository root) the exact source text ``old`` is replaced by ``new``.  ``old`` must occur
exactly once in the file; a snippet that occurs zero or several times is an error of the
suite (:func:`tests.mutation.check_applies` says which), so when the code moves the
self-test fails loudly instead of silently testing nothing — re-anchor ``old`` then.

``mechanisms`` names the registered mechanisms whose ``dpref verify --mechanism …`` run
must fail (the cheap, restricted run); empty means the whole ``dpref verify``.  The
sanitizer mutants name ``binary``: the ``coverage`` suite checks the sanitizers in the
part of the sanitizers' default tree (the ``sanitize`` suite runs only unrestricted).
``kind`` is the bug class of the issue.

Snippets are kept short and distinctive (a ``def`` line or a comment is included where the
statement itself is not unique) so that they survive reformatting of their neighbours.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["KINDS", "MUTANTS", "Mutant", "by_id"]

KINDS = (
    "scale",
    "level count (code)",
    "level count (declaration)",
    "released node",
    "variance formula",
    "online path",
    "canonical order",
    "zCDP composition",
    "sampler",
    "float rounding",
    "level budget",
    "sanitizer",
    "item sensitivity",
    "switch point",
)
"""The bug classes (issue 23, introduction and items 4–6)."""


@dataclass(frozen=True, kw_only=True)
class Mutant:
    """One single-point bug applied to a scratch copy of the package."""

    id: str
    """Short unique name (the table's first column)."""
    kind: str
    """Its bug class, one of :data:`KINDS`."""
    file: str
    """The mutated file, relative to the repository root."""
    old: str
    """Exact source text replaced (must occur exactly once in ``file``)."""
    new: str
    """What replaces it."""
    why: str
    """One line: what is wrong and why it matters."""
    mechanisms: tuple[str, ...]
    """``--mechanism`` names of the restricted verify run (empty: the whole verify)."""


_C = "dpref/mechanisms/counting.py"
_T = "dpref/mechanisms/trees.py"
_E = "dpref/mechanisms/elders.py"
_F = "dpref/mechanisms/factorization.py"
_S = "dpref/mechanisms/smooth.py"
_W = "dpref/mechanisms/decayed/window.py"
_X = "dpref/mechanisms/decayed/exponential.py"
_P = "dpref/mechanisms/decayed/polynomial.py"
_B = "dpref/mechanisms/base.py"
_N = "dpref/noise.py"
_V = "dpref/validation.py"
_A = "dpref/sanitize/amplification.py"
_H = "dpref/sanitize/threshold.py"

MUTANTS: tuple[Mutant, ...] = (
    # ------------------------------------------------------------------ counters
    Mutant(
        id="simple1-scale",
        kind="scale",
        file=_C,
        old="        return Fraction(self.horizon) * self.sensitivity / self.design_epsilon",
        new="        return Fraction(self.horizon - 1 or 1) * self.sensitivity"
        " / self.design_epsilon",
        why="SimpleI divides ε over T − 1 nodes, but item 1 is in all T: loss T/(T−1)·ε",
        mechanisms=("simple1",),
    ),
    Mutant(
        id="simple2-scale",
        kind="scale",
        file=_C,
        old="    def _scale(self) -> Fraction:\n"
        "        return self.sensitivity / self.design_epsilon",
        new="    def _scale(self) -> Fraction:\n"
        "        return self.sensitivity / (2 * self.design_epsilon)",
        why="SimpleII's item node gets Δ/(2ε): loss 2ε",
        mechanisms=("simple2",),
    ),
    Mutant(
        id="two-level-scale",
        kind="scale",
        file=_C,
        old="    def _scale(self) -> Fraction:\n"
        "        return 2 * self.sensitivity / self.design_epsilon",
        new="    def _scale(self) -> Fraction:\n"
        "        return self.sensitivity / self.design_epsilon",
        why="Two-Level forgets the ε/2 + ε/2 split: item and block node both at Δ/ε, loss 2ε",
        mechanisms=("two-level",),
    ),
    Mutant(
        id="two-level-online-float",
        kind="float rounding",
        file=_C,
        old="        self._B = m.block_size\n        self._scale = m._scale()\n"
        "        self._scale_f = ceil_float(self._scale)",
        new="        self._B = m.block_size\n        self._scale = m._scale()\n"
        "        self._scale_f = float(self._scale)",
        why="Two-Level's online scale rounded to nearest: b_float < b for some ε (20/7)",
        mechanisms=("two-level",),
    ),
    Mutant(
        id="two-level-online-order",
        kind="canonical order",
        file=_C,
        old="        self._items += v + self._noise(self._scale_f, self._scale)\n"
        "        self._block_true += v\n"
        "        if self.t % self._B == 0:\n"
        "            self._blocks += self._block_true + self._noise(self._scale_f, self._scale)",
        new="        zb = self._noise(self._scale_f, self._scale)"
        " if self.t % self._B == 0 else 0.0\n"
        "        self._items += v + self._noise(self._scale_f, self._scale)\n"
        "        self._block_true += v\n"
        "        if self.t % self._B == 0:\n"
        "            self._blocks += self._block_true + zb",
        why="Two-Level's online counter draws a block's node before its last item's",
        mechanisms=("two-level",),
    ),
    Mutant(
        id="binary-levels-code",
        kind="level count (code)",
        file=_C,
        old="        return Fraction(self.levels(self.horizon)) * self.sensitivity"
        " / self.design_epsilon",
        new="        return Fraction(max(1, (self.horizon - 1).bit_length())) * self.sensitivity"
        " / self.design_epsilon",
        why="Binary's scale uses ⌈log₂T⌉ levels (the lecture pitfall): one too few at T = 2^j",
        mechanisms=("binary",),
    ),
    Mutant(
        id="binary-levels-decl",
        kind="level count (declaration)",
        file=_C,
        old="        L = self.levels(T, ops)\n"
        '        return [BudgetTerm("level", L, L * delta / eps)]',
        new="        L = self.levels(T, ops) - 1\n"
        '        return [BudgetTerm("level", L, L * delta / eps)]',
        why="Binary's declaration claims L − 1 levels (sums to ε by itself); the code uses L",
        mechanisms=("binary",),
    ),
    Mutant(
        id="binary-online-level0",
        kind="online path",
        file=_C,
        old="            b, b_f = self._levels[(self.t & -self.t).bit_length() - 1]",
        new="            b, b_f = self._levels[0]",
        why="Binary's online counter scales every level by level 0's b (level budgets)",
        mechanisms=("binary",),
    ),
    Mutant(
        id="binary-level-budget-reversed",
        kind="level budget",
        file=_C,
        old="        self._level_scales = tuple(self.sensitivity / e for e in self.level_epsilons)",
        new="        self._level_scales = tuple(\n"
        "            self.sensitivity / e for e in reversed(self.level_epsilons)\n        )",
        why="Binary gives level h the budget of level L−1−h: an explicit split is not honoured",
        mechanisms=("binary",),
    ),
    Mutant(
        id="hybrid-bin-scale",
        kind="scale",
        file=_C,
        old="    def _bin_scale(self, k: int) -> Fraction:\n"
        "        return 2 * k * self.sensitivity / self.design_epsilon",
        new="    def _bin_scale(self, k: int) -> Fraction:\n"
        "        return k * self.sensitivity / self.design_epsilon",
        why="Hybrid's binary part gets ε instead of ε/2: loss 3ε/2",
        mechanisms=("hybrid",),
    ),
    Mutant(
        id="hybrid-log-node-shift",
        kind="released node",
        file=_C,
        old="                lo[t - 1] = t // 2 + 1 if t > 1 else 1",
        new="                lo[t - 1] = t // 2 if t > 1 else 1",
        why="Hybrid's log block at 2^k starts one item early (overlaps the previous block)",
        mechanisms=("hybrid",),
    ),
    Mutant(
        id="hybrid-variance",
        kind="variance formula",
        file=_C,
        old="                (k + 1) * log_unit + _popcount(r)",
        new="                k * log_unit + _popcount(r)",
        why="Hybrid's variance counts k log blocks instead of k + 1",
        mechanisms=("hybrid",),
    ),
    Mutant(
        id="hybrid-online-k",
        kind="online path",
        file=_C,
        old="            self._bin_scale = m._bin_scale(max(self._k, 1))",
        new="            self._bin_scale = m._bin_scale(max(self._k - 1, 1))",
        why="Hybrid's online k-th binary instance uses instance k−1's scale (too little noise)",
        mechanisms=("hybrid",),
    ),
    # ------------------------------------------------------------------ trees
    Mutant(
        id="tree-levels-code",
        kind="level count (code)",
        file=_T,
        old="    levels, size = 1, k\n    while size <= horizon:",
        new="    levels, size = 1, k\n    while size < horizon:",
        why="tree_levels misses the top level at T = k^j (item 1 in L+1 nodes at scale LΔ/ε)",
        mechanisms=("kary", "honaker"),
    ),
    Mutant(
        id="tree-levels-decl",
        kind="level count (declaration)",
        file=_T,
        old='            return [BudgetTerm("level", L, L * delta / eps)]',
        new='            return [BudgetTerm("level", L - 1, (L - 1) * delta / eps)]',
        why="KaryTree/Honaker declare one level too few (the declaration still sums to ε)",
        mechanisms=("kary", "honaker"),
    ),
    Mutant(
        id="tree-combined-variance",
        kind="variance formula",
        file=_T,
        old="        prev = k * out[-1]",
        new="        prev = out[-1]",
        why="combined (Honaker) variance forgets that k children are summed",
        mechanisms=("honaker",),
    ),
    Mutant(
        id="tree-online-level0",
        kind="online path",
        file=_T,
        old="                noise = self._buf[pos] * scales_f[v]",
        new="                noise = self._buf[pos] * scales_f[0]",
        why="the online tree fast path scales every level by level 0's σ (budget=mean/max)",
        mechanisms=("kary", "honaker"),
    ),
    Mutant(
        id="tree-online-combined-level0",
        kind="online path",
        file=_T,
        old="                    z[h] * scales_f[h]",
        new="                    z[h] * scales_f[0]",
        why="the combined online tree scales every level by level 0's σ",
        mechanisms=("kary", "honaker"),
    ),
    Mutant(
        id="tree-level-budget-reversed",
        kind="level budget",
        file=_T,
        old="    shares = tuple(v * m.design_epsilon / total for v in values)",
        new="    shares = tuple(v * m.design_epsilon / total for v in reversed(values))",
        why="a tree's explicit per-level budget is applied top level first",
        mechanisms=("kary", "honaker", "binary"),
    ),
    # ------------------------------------------------------------------ Elders
    Mutant(
        id="elders-levels-code",
        kind="level count (code)",
        file=_E,
        old="    while power <= 2 * horizon - 1:",
        new="    while power <= horizon:",
        why="Elders counts levels with k^j ≤ T instead of k^j ≤ 2T − 1",
        mechanisms=("elders",),
    ),
    Mutant(
        id="elders-levels-decl",
        kind="level count (declaration)",
        file=_E,
        old='        L = s.get("levels", self._levels(s.get("horizon", self.horizon)))',
        new='        L = s.get("levels", self._levels(s.get("horizon", self.horizon)) - 1 or 1)',
        why="Elders declares one level too few (the declaration still sums to ε)",
        mechanisms=("elders",),
    ),
    Mutant(
        id="elders-online-order",
        kind="canonical order",
        file=_E,
        old="        if len(new) > 1:\n            new.sort()",
        new="        if len(new) > 1:\n            new.sort(reverse=True)",
        why="Elders' online counter draws a step's new blocks out of canonical order",
        mechanisms=("elders",),
    ),
    Mutant(
        id="elders-scale",
        kind="scale",
        file=_E,
        old="        return Fraction(self._levels()) * self.sensitivity / self.design_epsilon",
        new="        return Fraction(self._levels() - 1 or 1) * self.sensitivity"
        " / self.design_epsilon",
        why="Elders' node scale uses L − 1 levels",
        mechanisms=("elders",),
    ),
    # ------------------------------------------------------------ factorization
    Mutant(
        id="sqrt-l1-uses-s2",
        kind="scale",
        file=_F,
        old="        return self.s1(T) * self.sensitivity / self.design_epsilon",
        new="        return self.s2(T) * self.sensitivity / self.design_epsilon",
        why="sqrt's Laplace scale uses the column's L2² norm S₂ < S₁",
        mechanisms=("sqrt",),
    ),
    Mutant(
        id="sqrt-gaussian-rho",
        kind="zCDP composition",
        file=_F,
        old="            return self.s2(T) * self.sensitivity**2 / (2 * self.rho)",
        new="            return self.s2(T) * self.sensitivity**2 / (4 * self.rho)",
        why="factorization's Gaussian variance S₂Δ²/(4ρ): L2 sum 4ρ",
        mechanisms=("sqrt", "blt"),
    ),
    Mutant(
        id="sqrt-s1-large-t",
        kind="switch point",
        file=_F,
        old="    value = (2 * n + 1) / ctx.sqrt(ctx.pi * (ctx.mpf(n) + ctx.mpf(1) / 4))",
        new="    value = (2 * n + 1) / ctx.sqrt(ctx.pi * (ctx.mpf(n) + ctx.mpf(1) / 2))",
        why="sqrt's S₁ bound above 2¹⁶ uses c_n ≤ 1/√(π(n+1/2)), which is below c_n",
        mechanisms=("sqrt",),
    ),
    Mutant(
        id="sqrt-s2-large-t",
        kind="switch point",
        file=_F,
        old="    tail = ctx.log((ctx.mpf(horizon) * q - 3) / (ctx.mpf(K) * q - 3)) / ctx.pi",
        new="    tail = ctx.log((ctx.mpf(horizon) * q - 3) / (ctx.mpf(K) * q - 3)) / (2 * ctx.pi)",
        why="sqrt's S₂ tail bound above 2¹⁴ halved: below the true S₂",
        mechanisms=("sqrt",),
    ),
    Mutant(
        id="blt-s1-column",
        kind="scale",
        file=_F,
        old="                (w * (1 - t**n) / (1 - t)"
        " for t, w in zip(self.theta, self.omega, strict=True)),",
        new="                (w * (1 - t ** (n - 1)) / (1 - t)"
        " for t, w in zip(self.theta, self.omega, strict=True)),",
        why="BLT's S₁ drops the last column entry: scale below S₁Δ/ε",
        mechanisms=("blt",),
    ),
    # ------------------------------------------------------------------ smooth
    Mutant(
        id="smooth-item-count",
        kind="level count (code)",
        file=_S,
        old="    return sum(1 for j in range(1, half + 1) if comb(depth - j, half) <= horizon)",
        new="    return sum(1 for j in range(1, half + 1) if comb(depth - j, half) < horizon)",
        why="smooth binary's item count misses a node at T = binom(d − j, d/2)",
        mechanisms=("smooth",),
    ),
    Mutant(
        id="smooth-scale",
        kind="scale",
        file=_S,
        old="        return Fraction(self.depth // 2) * self.sensitivity / self.design_epsilon",
        new="        return Fraction(self.depth // 2 - 1 or 1) * self.sensitivity"
        " / self.design_epsilon",
        why="smooth binary's node scale uses d/2 − 1 nodes per item",
        mechanisms=("smooth",),
    ),
    Mutant(
        id="smooth-variance",
        kind="variance formula",
        file=_S,
        old="        return [(self.depth // 2) * self.node_variance(self._scale())] * t",
        new="        return [self.node_variance(self._scale())] * t",
        why="smooth binary's variance counts one node per output instead of d/2",
        mechanisms=("smooth",),
    ),
    # smooth binary's online draw order within the trailing (noise-only) nodes is not a
    # mutant: those nodes are always summed and dropped together (an equivalent mutant)
    # ------------------------------------------------------------------ decayed
    Mutant(
        id="window-scale",
        kind="scale",
        file=_W,
        old="        return (self.cap + 1) * self.sensitivity / self.design_epsilon",
        new="        return max(self.cap, 1) * self.sensitivity / self.design_epsilon",
        why="WindowSum's scale uses ⌊log₂W⌋ levels instead of ⌊log₂W⌋ + 1",
        mechanisms=("window",),
    ),
    Mutant(
        id="window-levels-decl",
        kind="level count (declaration)",
        file=_W,
        old='        L = s.get("levels", self.levels())',
        new='        L = s.get("levels", max(self.levels() - 1, 1))',
        why="WindowSum declares one level too few (the declaration still sums to ε)",
        mechanisms=("window",),
    ),
    Mutant(
        id="allwindow-level-index",
        kind="scale",
        file=_W,
        old="                self._zeta_up * power_upper(j, self.delta)",
        new="                self._zeta_up * power_upper(max(j - 1, 1), self.delta)",
        why="AllWindowSum's level k gets level k−1's ε_k: the ζ series exceeds ε",
        mechanisms=("allwindow",),
    ),
    Mutant(
        id="exponential-no-delta",
        kind="item sensitivity",
        file=_X,
        old="            ceil_float(self.sensitivity_bounds[1] * self.sensitivity"
        " / self.design_epsilon)",
        new="            ceil_float(self.sensitivity_bounds[1] / self.design_epsilon)",
        why="ExponentialSum's scale forgets Δ (invisible on bits, where Δ = 1)",
        mechanisms=("exponential",),
    ),
    Mutant(
        id="polynomial-allocation",
        kind="scale",
        file=_P,
        old="        self.factor: Fraction = root_power_upper(rho, j, 3)"
        " if decaying else Fraction(1)",
        new="        self.factor: Fraction = root_power_upper(rho, j, 2)"
        " if decaying else Fraction(1)",
        why="PolynomialSum's decaying allocation q_j = (1−β)^{j/2}, not the j/3 its series bounds",
        mechanisms=("polynomial",),
    ),
    # ------------------------------------------------------- zCDP, samplers, floats
    Mutant(
        id="gaussian-weight-squared",
        kind="zCDP composition",
        file=_B,
        old="        return abs(weight) * self.sensitivity * scale / (2 * self.rho)",
        new="        return weight * weight * self.sensitivity * scale / (2 * self.rho)",
        why="a weighted node's Gaussian variance uses w² for |w| (PolynomialSum's (1−β)^j nodes)",
        mechanisms=("polynomial",),
    ),
    Mutant(
        id="dlap-zero-doubled",
        kind="sampler",
        file=_N,
        old="        if negative and y == 0:\n            continue\n",
        new="",
        why="discrete Laplace keeps −0: P[0] doubled (≈ +ln 2 per node)",
        mechanisms=("binary",),
    ),
    Mutant(
        id="laplace-unit-variance",
        kind="sampler",
        file=_N,
        old="    return rng.laplace(0.0, 1.0, size)",
        new="    return rng.laplace(0.0, 0.7071067811865476, size)",
        why="the standard Laplace draw has unit variance instead of unit scale",
        mechanisms=("binary",),
    ),
    Mutant(
        id="dgauss-acceptance",
        kind="sampler",
        file=_N,
        old="    two_s2 = 2 * sigma2",
        new="    two_s2 = sigma2",
        why="discrete Gaussian acceptance exp(−(|Y|−σ²/t)²/σ²): the law has variance σ²/2",
        mechanisms=("binary",),
    ),
    Mutant(
        id="discrete-noise-shared",
        kind="sampler",
        file=_B,
        old="        for j in range(flat.size):\n"
        "            scale, weight = pairs[j % nodes.size]\n"
        "            flat[j] = self.draw_node(gen, scale, weight)",
        new="        drawn: dict[Any, float] = {}\n"
        "        for j in range(flat.size):\n            scale, weight = pairs[j % nodes.size]\n"
        "            if (scale, weight) not in drawn:\n"
        "                drawn[(scale, weight)] = self.draw_node(gen, scale, weight)\n"
        "            flat[j] = drawn[(scale, weight)]",
        why="discrete noise drawn once per scale and shared by every node: unbounded loss",
        mechanisms=("binary",),
    ),
    Mutant(
        id="gaussian-sigma-nearest",
        kind="float rounding",
        file=_V,
        old="    out = math.sqrt(ceil_float(value))\n",
        new="    return math.sqrt(float(value))\n    out = math.sqrt(ceil_float(value))\n",
        why="Gaussian σ rounded to nearest instead of up: σ_float² < σ² for some nodes",
        mechanisms=("binary", "sqrt"),
    ),
    Mutant(
        id="ceil-float-nearest",
        kind="float rounding",
        file=_V,
        old="    if Fraction(out) < value:\n        out = math.nextafter(out, math.inf)\n"
        "    return out",
        new="    return out",
        why="every Laplace scale rounded to nearest instead of up: b_float < b",
        mechanisms=("binary",),
    ),
    # ------------------------------------------------------- sanitizers, domains
    Mutant(
        id="amplification-p1-replace",
        kind="sanitizer",
        file=_A,
        old='        return eps if neighbours == "add-remove" else 2 * eps',
        new="        return eps",
        why="at p = 1 the replace-one bound is 2ε₀, not ε₀",
        mechanisms=("binary",),
    ),
    Mutant(
        id="amplification-replace-sign",
        kind="sanitizer",
        file=_A,
        old="ctx.log1p(-pm * (-ctx.expm1(-e)))",
        new="ctx.log1p(pm * (-ctx.expm1(-e)))",
        why="replace-one amplification divides by 1 + p(1 − e^{−ε₀}) instead of 1 − p(1 − e^{−ε₀})",
        mechanisms=("binary",),
    ),
    Mutant(
        id="subsample-probability-floor",
        kind="sanitizer",
        file=_A,
        old="    keep = Fraction(math.ceil(scaled), 1 << _UNIT_BITS)",
        new="    keep = Fraction(math.floor(scaled), 1 << _UNIT_BITS)",
        why="the sampler's keep probability rounded down: the bound is evaluated below it",
        mechanisms=("binary",),
    ),
    Mutant(
        id="threshold-delta",
        kind="sanitizer",
        file=_H,
        old='        delta = 2 if self.neighbours == "replace" else 1',
        new="        delta = 1",
        why="the threshold sanitizer's histogram tree built with Δ = 1 under replace-one",
        mechanisms=("binary",),
    ),
    Mutant(
        id="item-delta-replace-max",
        kind="item sensitivity",
        file="dpref/sensitivity/closed_forms.py",
        old="        diff = Fraction(hi(j) - lo(j), prob.scale)",
        new="        diff = Fraction(max(abs(hi(j)), abs(lo(j))), prob.scale)",
        why="bounded (replace-one) sum Δ is max(|lo|,|hi|) for hi − lo: Δ = 1 on [−1, 1]",
        mechanisms=("binary",),
    ),
    Mutant(
        id="item-delta-model-swap",
        kind="item sensitivity",
        file="dpref/sensitivity/items.py",
        old='        "bounded"\n        if check_choice',
        new='        "unbounded"\n        if check_choice',
        why="a stream item's replace-one Δ computed with the add/remove model",
        mechanisms=("simple2",),
    ),
)
"""Every mutant of the self-test."""


def by_id(mutant_id: str) -> Mutant:
    """The mutant named ``mutant_id``."""
    for m in MUTANTS:
        if m.id == mutant_id:
            return m
    raise KeyError(mutant_id)
