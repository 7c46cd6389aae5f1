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
_HY = "dpref/mechanisms/hybrid.py"
_T = "dpref/mechanisms/trees.py"
_TA = "dpref/mechanisms/tree_arith.py"
_TB = "dpref/mechanisms/tree_budgets.py"
_E = "dpref/mechanisms/elders.py"
_FC = "dpref/mechanisms/factorization/common.py"
_FS = "dpref/mechanisms/factorization/sqrt.py"
_FB = "dpref/mechanisms/factorization/blt.py"
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
        old='        return {"prefix": horizon}',
        new='        return {"prefix": horizon - 1 or 1}',
        why="SimpleI divides ε over T − 1 nodes, but item 1 is in all T: loss T/(T−1)·ε"
        " (in memberships, the one source node_scale and the declaration read)",
        mechanisms=("simple1",),
    ),
    Mutant(
        id="simple2-scale",
        kind="scale",
        file=_C,
        old='        return {"item": 1}\n',
        new='        return {"item": Fraction(1, 2)}\n',
        why="SimpleII's item node gets Δ/(2ε): loss 2ε (in memberships, the one source"
        " node_scale and the declaration read)",
        mechanisms=("simple2",),
    ),
    Mutant(
        id="two-level-scale",
        kind="scale",
        file=_C,
        old='        return {"item": 1, "block": 1}',
        new='        return {"item": 1, "block": 0}',
        why="Two-Level forgets the ε/2 + ε/2 split: item and block node both at Δ/ε, loss 2ε"
        " (in memberships, the one source node_scale and the declaration read)",
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
        old="        return ops.floor_log2(horizon) + 1",
        new="        return ops.floor_log2(2 * horizon - 1) or 1",
        why="Binary's scale uses ⌈log₂T⌉ levels (1 at T = 1; the lecture pitfall): one too"
        " few at T = 2^j — in Binary.levels, the one level count the scale (via memberships)"
        " and the declaration read",
        mechanisms=("binary",),
    ),
    Mutant(
        id="binary-levels-decl",
        kind="level count (declaration)",
        file=_C,
        old="        return super().budget_terms(ops, **s)",
        new='        L = self.levels(s.get("horizon", self.horizon), ops) - 1\n'
        '        eps = s.get("epsilon", self.design_epsilon)\n'
        '        delta = s.get("sensitivity", self.sensitivity)\n'
        '        return [BudgetTerm("level", L, ops.number(L) * delta / eps)]',
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
        file=_HY,
        old='        return ops.number(cls.memberships(k, ops)["binary_k"]) * sensitivity'
        " / (epsilon / 2)",
        new='        return ops.number(cls.memberships(k, ops)["binary_k"]) * sensitivity'
        " / epsilon",
        why="Hybrid's binary part gets ε instead of ε/2: loss 3ε/2 (in instance_scale, the"
        " one scale function the draws and the declaration read)",
        mechanisms=("hybrid",),
    ),
    Mutant(
        id="hybrid-log-node-shift",
        kind="released node",
        file=_HY,
        old="        return (ops.ite(r == 0, (t >> 1) + 1, t - (r & -r) + 1), t)",
        new="        return (ops.ite(r == 0, ops.ite(t == 1, 1, t >> 1), t - (r & -r) + 1), t)",
        why="Hybrid's log block at 2^k starts one item early (overlaps the previous block;"
        " in node_interval, the one interval function of nodes() and the proofs)",
        mechanisms=("hybrid",),
    ),
    Mutant(
        id="hybrid-variance",
        kind="variance formula",
        file=_HY,
        old="                (k + 1) * log_unit + _popcount(r)",
        new="                k * log_unit + _popcount(r)",
        why="Hybrid's variance counts k log blocks instead of k + 1",
        mechanisms=("hybrid",),
    ),
    Mutant(
        id="hybrid-online-k",
        kind="online path",
        file=_HY,
        old="            self._bin_scale = m._bin_scale(max(self._k, 1))",
        new="            self._bin_scale = m._bin_scale(max(self._k - 1, 1))",
        why="Hybrid's online k-th binary instance uses instance k−1's scale (too little noise)",
        mechanisms=("hybrid",),
    ),
    # ------------------------------------------------------------------ trees
    Mutant(
        id="tree-levels-code",
        kind="level count (code)",
        file=_TA,
        old="        levels = levels + op_ite(ops, op_le(ops, size, horizon), 1, 0)",
        new="        levels = levels + op_ite(ops, op_le(ops, size + 1, horizon), 1, 0)",
        why="tree_levels misses the top level at T = k^j (counts k^j < T; item 1 in L+1 nodes"
        " at scale LΔ/ε) — tree_levels is now the one level count of the code and the"
        " declaration",
        mechanisms=("kary", "honaker"),
    ),
    Mutant(
        id="tree-levels-decl",
        kind="level count (declaration)",
        file=_T,
        old='            L = self.levels_at(s.get("horizon", self.horizon), ops)\n',
        new='            L = self.levels_at(s.get("horizon", self.horizon), ops) - 1 or 1\n',
        why="KaryTree/Honaker declare one level too few (the declaration still sums to ε)",
        mechanisms=("kary", "honaker"),
    ),
    Mutant(
        id="tree-combined-variance",
        kind="variance formula",
        file=_TA,
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
        file=_TB,
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
        old="    top = 2 * horizon - 1\n",
        new="    top = horizon\n",
        why="Elders counts levels with k^j ≤ T instead of k^j ≤ 2T − 1 (in elders_levels, now"
        " the one level count of the code and the declaration)",
        mechanisms=("elders",),
    ),
    Mutant(
        id="elders-levels-decl",
        kind="level count (declaration)",
        file=_E,
        old='        L = self.levels_at(s.get("horizon", self.horizon), ops)\n'
        "        scale = self.node_scale(",
        new='        L = self.levels_at(s.get("horizon", self.horizon), ops) - 1 or 1\n'
        "        scale = self.node_scale(",
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
        old="        return Fraction(self.node_scale(self._levels()))",
        new="        return Fraction(self.node_scale(self._levels() - 1 or 1))",
        why="Elders' node scale uses L − 1 levels",
        mechanisms=("elders",),
    ),
    # ------------------------------------------------------------ factorization
    Mutant(
        id="sqrt-l1-uses-s2",
        kind="scale",
        file=_FC,
        old="        return column_sum(self, 1, horizon, ops) * delta / eps",
        new="        return column_sum(self, 2, horizon, ops) * delta / eps",
        why="sqrt's Laplace scale uses the column's L2² norm S₂ < S₁ (in laplace_scale, the"
        " one Laplace scale formula the draws, the plan and the declaration read)",
        mechanisms=("sqrt",),
    ),
    Mutant(
        id="sqrt-gaussian-rho",
        kind="zCDP composition",
        file=_FC,
        old="        return column_sum(self, 2, horizon, ops) * delta**2 / (2 * r)",
        new="        return column_sum(self, 2, horizon, ops) * delta**2 / (4 * r)",
        why="factorization's Gaussian variance S₂Δ²/(4ρ): L2 sum 4ρ (in gaussian_variance, the"
        " one formula the draws, the plan and gaussian_terms read)",
        mechanisms=("sqrt", "blt"),
    ),
    Mutant(
        id="sqrt-s1-large-t",
        kind="switch point",
        file=_FS,
        old="    return (2 * n + 1) / ns.sqrt(ns.pi * (ns.mpf(n) + ns.mpf(1) / 4))",
        new="    return (2 * n + 1) / ns.sqrt(ns.pi * (ns.mpf(n) + ns.mpf(1) / 2))",
        why="sqrt's S₁ bound above 2¹⁶ uses c_n ≤ 1/√(π(n+1/2)), which is below c_n (in"
        " sqrt_s1_bound, the one bound sqrt_s1 and the proofs evaluate)",
        mechanisms=("sqrt",),
    ),
    Mutant(
        id="sqrt-s2-large-t",
        kind="switch point",
        file=_FS,
        old="    return ns.log((ns.mpf(horizon) * four - 3) / (ns.mpf(start) * four - 3)) / ns.pi",
        new="    return ns.log((ns.mpf(horizon) * four - 3) / (ns.mpf(start) * four - 3))"
        " / (2 * ns.pi)",
        why="sqrt's S₂ tail bound above 2¹⁴ halved: below the true S₂ (in sqrt_s2_tail, the"
        " one tail bound sqrt_s2_upper and the proofs evaluate)",
        mechanisms=("sqrt",),
    ),
    Mutant(
        id="sqrt-fixed-step",
        kind="switch point",
        file=_FS,
        old="    return u * p // q + 1",
        new="    return u * p // q",
        why="sqrt's fixed-point step rounds down: the S₁/S₂ bounds between 2¹⁴ and 2²⁰ fall"
        " below the exact sums (in sqrt_fixed_step, the one step the bounds, the variance and"
        " the proof's z3 lemma use)",
        mechanisms=("sqrt",),
    ),
    Mutant(
        id="blt-s1-column",
        kind="scale",
        file=_FB,
        old="        total += wn * (1 - tn**n) / (1 - tn)",
        new="        total += wn * (1 - tn ** (n - 1)) / (1 - tn)",
        why="BLT's S₁ drops the last column entry: scale below S₁Δ/ε (blt_column_sum is now"
        " the one function of S₁ and S₂, so S₂ drops it too)",
        mechanisms=("blt",),
    ),
    # ------------------------------------------------------------------ smooth
    Mutant(
        id="smooth-item-count",
        kind="level count (code)",
        file=_S,
        old="        cases = [(ops.le(comb(2 * half - j, half), horizon), half - j + 1)"
        " for j in range(1, half)]",
        new="        cases = [(ops.lt(comb(2 * half - j, half), horizon), half - j + 1)"
        " for j in range(1, half)]",
        why="smooth binary's item count misses a node at T = binom(d − j, d/2), j < d/2"
        " (the j = d/2 term, binom = 1 ≤ T, is now the chain's constant 1)",
        mechanisms=("smooth",),
    ),
    Mutant(
        id="smooth-scale",
        kind="scale",
        file=_S,
        old="        return ops.number(depth) / 2 * sensitivity / epsilon",
        new="        return (ops.number(depth) / 2 - 1 or 1) * sensitivity / epsilon",
        why="smooth binary's node scale uses d/2 − 1 nodes per item (in node_scale, the one"
        " scale function the draws and the declaration read)",
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
        old="        return self.levels(ops, **s) * delta / eps",
        new="        return (self.levels(ops, **s) - 1 or 1) * delta / eps",
        why="WindowSum's scale uses ⌊log₂W⌋ levels (1 at W = 1) instead of ⌊log₂W⌋ + 1 (in"
        " scale(), the one scale function the draws and the declaration read)",
        mechanisms=("window",),
    ),
    Mutant(
        id="window-levels-decl",
        kind="level count (declaration)",
        file=_W,
        old='        return [BudgetTerm("level", self.levels(ops, **s), self.scale(ops, **s))]',
        new="        L = self.levels(ops, **s) - 1 or 1\n"
        '        eps = s.get("epsilon", self.design_epsilon)\n'
        '        return [BudgetTerm("level", L, L * s.get("sensitivity", self.sensitivity) / eps)]',
        why="WindowSum declares one level too few (the declaration still sums to ε)",
        mechanisms=("window",),
    ),
    Mutant(
        id="allwindow-level-index",
        kind="scale",
        file=_W,
        old="            zeta_v, power = self._zeta_up, power_upper(int(k), delta)",
        new="            zeta_v, power = self._zeta_up, power_upper(max(int(k) - 1, 1), delta)",
        why="AllWindowSum's level k gets level k−1's ε_k: the ζ series exceeds ε",
        mechanisms=("allwindow",),
    ),
    Mutant(
        id="exponential-no-delta",
        kind="item sensitivity",
        file=_X,
        old='        exact = S * s.get("sensitivity", self.sensitivity)'
        ' / s.get("epsilon", self.design_epsilon)',
        new='        exact = S / s.get("epsilon", self.design_epsilon)',
        why="ExponentialSum's scale forgets Δ (invisible on bits, where Δ = 1; in scale(),"
        " the one scale function the draws and the declaration read)",
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
        old="    if negative and y == 0:\n        return None\n",
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
        old='    return epsilon if neighbours == "add-remove" else 2 * epsilon',
        new="    return epsilon",
        why="at p = 1 the replace-one bound is 2ε₀, not ε₀ (in amplification_cap, which is"
        " now also the cap of the p < 1 bound)",
        mechanisms=("binary",),
    ),
    Mutant(
        id="amplification-replace-sign",
        kind="sanitizer",
        file=_A,
        old="ops.log1p(-p * (-ops.expm1(-epsilon)))",
        new="ops.log1p(p * (-ops.expm1(-epsilon)))",
        why="replace-one amplification divides by 1 + p(1 − e^{−ε₀}) instead of 1 − p(1 − e^{−ε₀})"
        " (in amplified_epsilon, the one formula the bound and the proofs evaluate)",
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
        old='LEAVES_TOUCHED: dict[str, int] = {"replace": 2, "add-remove": 1}',
        new='LEAVES_TOUCHED: dict[str, int] = {"replace": 1, "add-remove": 1}',
        why="the threshold sanitizer's histogram tree built with Δ = 1 under replace-one (in"
        " LEAVES_TOUCHED, the one source of leaf_domain, the tree's domain and its Δ)",
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
