"""The ``agreement`` verify suite compares online and batch bit for bit on dyadic noise where
the plan's sums are exact, and within a per-step rounding bound elsewhere: it passes on
the real code and fails on an online bug a tolerance proportional to Σ|z| let through."""

from __future__ import annotations

import math
from typing import Any

import pytest

from dpref.mechanisms import MECHANISMS, OnlineCounter, trees
from dpref.verify import VerifyOptions
from dpref.verify.plans import agreement_suite, exact_in_floats


def _row(name: str) -> tuple[int, str]:
    (row,) = agreement_suite(VerifyOptions(mechanisms=(name,)))
    return row.failed, row.detail


def test_agreement_passes_and_is_bit_exact_on_dyadic_plans() -> None:
    failed, detail = _row("binary")
    assert failed == 0, detail
    m = MECHANISMS["binary"](epsilon=1, horizon=16)
    assert exact_in_floats(m.plan(16))
    assert not exact_in_floats(MECHANISMS["exponential"](epsilon=1, alpha="1/2").plan(16))


def test_online_off_by_one_ulp_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    real = OnlineCounter.run

    def run(self: Any, stream: Any) -> Any:
        out = real(self, stream)
        out[-1] = math.nextafter(out[-1], math.inf)
        return out

    monkeypatch.setattr(OnlineCounter, "run", run)
    failed, detail = _row("binary")
    assert failed > 0 and "bit-exact expected" in detail


def test_online_tree_with_level_zero_sigma_everywhere_fails(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real = trees._TreeOnline.__init__

    def init(self: Any, m: Any, rng: Any, noise: Any) -> None:
        real(self, m, rng, noise)
        self._scales_f = [self._scales_f[0]] * len(self._scales_f)

    monkeypatch.setattr(trees._TreeOnline, "__init__", init)
    failed, detail = _row("honaker")  # its budget=mean example: scales differ by level
    assert failed > 0 and "seeded online" in detail
