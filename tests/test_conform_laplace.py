"""The Laplace structure test through R⁺R (issue 25, item 5;
dpref.audit.conformance.conform_laplace).

Named rates: every check below is the noise-law check at ``ALPHA``; its false-alarm rate is
at most ``ALPHA`` for every N (Bernstein, Gamma, KS and binomial bounds, Bonferroni — the
module doc), so the conforming rows fail with probability at most ``ALPHA`` each (fixed
seeds: deterministic).  Power: the wrong laws below are detected with p-values far below
``ALPHA`` (measured: see each test).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from dpref import Honaker, SmoothBinary
from dpref.audit.conformance.conform import conform
from dpref.audit.conformance.conform_laplace import _projection, laplace_structure
from dpref.mechanisms import Mechanism

ALPHA = 1e-4
RUNS = 2000


def _sample(
    mech: Mechanism, T: int, seed: int, law: str = "laplace", node: int | None = None, f: float = 1
) -> tuple[Any, Any, Any]:
    """RUNS releases of the reference's plan with node noise of ``law`` (Gaussian: the same
    variance 2b²), node ``node``'s scale multiplied by ``f`` (every node when None)."""
    rng = np.random.default_rng(seed)
    plan = mech.plan(T)
    b = np.asarray(plan.scales, dtype=np.float64)
    x = rng.integers(0, 2, T).astype(np.float64)
    if law == "gaussian":
        Z = rng.normal(0.0, 1.0, (RUNS, plan.n_nodes)) * b * np.sqrt(2.0)
    else:
        Z = rng.laplace(0.0, 1.0, (RUNS, plan.n_nodes)) * b
    if node is None:
        Z *= f
    else:
        Z[:, node] *= f
    Y = (plan.R() @ (plan.node_values(x)[:, None] + Z.T)).T
    return np.asarray(Y), x, plan


def _node(plan: Any, lo: int, hi: int) -> int:
    return int(np.flatnonzero((plan.lo == lo) & (plan.hi == hi))[0])


HONAKER = Honaker(epsilon=1, horizon=16)
SMOOTH = SmoothBinary(epsilon=1, horizon=16)


def test_the_projection_identifies_honakers_odd_leaves_only() -> None:
    plan = HONAKER.plan(16)
    proj = _projection(plan)
    assert proj is not None and proj.nodes.size == 31
    lengths = plan.hi[proj.nodes] - plan.lo[proj.nodes] + 1
    ident = proj.nodes[proj.identified]
    assert plan.lo[ident].tolist() == list(range(1, 16, 2)) and set(lengths[proj.identified]) == {1}
    smooth = _projection(SMOOTH.plan(16))
    assert smooth is not None and not smooth.identified.any()


@pytest.mark.parametrize("mech", [HONAKER, SMOOTH], ids=["honaker", "smooth"])
@pytest.mark.parametrize("f", [1.0, 0.8])
def test_the_reference_law_passes_at_any_common_scale(mech: Mechanism, f: float) -> None:
    """No false alarm (rate ≤ ALPHA each): the reference itself, and the reference with
    every scale × 0.8 — the same structure, whose shortfall is the scale check's."""
    for seed in range(3):
        Y, x, plan = _sample(mech, 16, seed, f=f)
        check = laplace_structure(Y, x, plan, ALPHA)
        assert check is not None and check.passed, check.detail if check else None


def test_gaussian_node_noise_of_the_same_variance_is_detected() -> None:
    """Power (measured: 10/10 seeds at T = 16 and T = 64 for Honaker, p ≈ 1e-26 here)."""
    Y, x, plan = _sample(HONAKER, 16, 7, law="gaussian")
    check = laplace_structure(Y, x, plan, ALPHA)
    assert check is not None and check.passed is False and check.p_value is not None
    assert check.p_value < 1e-10 and "not independent Laplace" in check.detail


@pytest.mark.parametrize(
    ("mech", "span"),
    [(HONAKER, (1, 16)), (HONAKER, (1, 2)), (HONAKER, (5, 5)), (SMOOTH, None)],
    ids=["honaker-root", "honaker-[1,2]", "honaker-odd-leaf", "smooth-heaviest-node"],
)
def test_one_node_with_half_its_scale_is_detected(mech: Mechanism, span: Any) -> None:
    """Power for a single node whose projection weight ``P_nn ≥ 1/2`` (measured at N = 2000:
    every such node of Honaker T = 16 and 64, and of SmoothBinary T = 16, is detected;
    Honaker's nodes with ``P_nn < 0.3`` — even leaves, right spines — are mostly not:
    their noise barely reaches the outputs)."""
    plan = mech.plan(16)
    proj = _projection(plan)
    assert proj is not None
    weight = np.diag(proj.coef) / np.asarray(plan.scales)[proj.nodes]  # P_nn
    node = _node(plan, *span) if span else int(proj.nodes[int(np.argmax(weight))])
    assert weight[int(np.flatnonzero(proj.nodes == node)[0])] >= 0.5
    Y, x, _ = _sample(mech, 16, 11, node=node, f=0.5)
    check = laplace_structure(Y, x, plan, ALPHA)
    assert check is not None and check.passed is False, check.detail if check else None


def test_conform_runs_the_structure_test_for_laplace_honaker() -> None:
    ok = conform(HONAKER, HONAKER, horizon=16, runs=RUNS, seed=1, alpha=ALPHA)
    law = next(c for c in ok.checks if c.name == "noise-law")
    assert law.passed is True and "8 of 31 nodes identified exactly" in law.detail
    assert ok.conforms and ok.structure == "matches"
    scale = next(c for c in ok.checks if c.name == "noise-scale")
    assert "structure untested" not in scale.detail

    plan = HONAKER.plan(16)
    b = np.asarray(plan.scales, dtype=np.float64)

    def gaussian_honaker(stream: Any, rng: Any) -> Any:
        z = rng.normal(0.0, 1.0, plan.n_nodes) * b * np.sqrt(2.0)
        return HONAKER.release(stream, noise=z)

    bad = conform(gaussian_honaker, HONAKER, horizon=16, runs=RUNS, seed=1, alpha=ALPHA)
    law = next(c for c in bad.checks if c.name == "noise-law")
    assert law.passed is False and bad.structure == "differs" and not bad.conforms


def test_no_projection_beyond_its_limits() -> None:
    from dpref.audit.conformance import conform_laplace

    plan = HONAKER.plan(16)
    Y = np.zeros((3, 16))
    check = laplace_structure(Y + plan.R() @ plan.node_values(np.ones(16)), np.ones(16), plan, 0.1)
    assert check is not None and check.passed is False and "exactly 0" in check.detail
    assert conform_laplace.MAX_PROJECTION_HORIZON >= 2048


@pytest.mark.slow
def test_power_table_at_t64() -> None:
    """The measured table (Honaker, ε = 1, T = 64, N = 2000): no false alarm in 20 seeds;
    every node with ``P_nn ≥ 1/2`` (the 32 odd leaves and the 32 combined nodes above
    them) detected when its scale alone is halved; Gaussian noise of the same variance
    detected at every seed."""
    mech = Honaker(epsilon=1, horizon=64)
    plan = mech.plan(64)
    proj = _projection(plan)
    assert proj is not None
    for seed in range(20):
        Y, x, _ = _sample(mech, 64, 100 + seed)
        check = laplace_structure(Y, x, plan, ALPHA)
        assert check is not None and check.passed, check.detail if check else None
    weight = np.diag(proj.coef) / np.asarray(plan.scales)[proj.nodes]
    heavy = proj.nodes[weight >= 0.5]
    assert heavy.size == 64
    for node in heavy.tolist():
        Y, x, _ = _sample(mech, 64, 200 + node, node=node, f=0.5)
        check = laplace_structure(Y, x, plan, ALPHA)
        assert check is not None and check.passed is False, (node, check.detail)
    for seed in range(5):
        Y, x, _ = _sample(mech, 64, 300 + seed, law="gaussian")
        check = laplace_structure(Y, x, plan, ALPHA)
        assert check is not None and check.passed is False
