"""Issue 24, "Verdicts that pass non-private code": each test names the defect it covers.

Every target here got exit 0 before the fix ("holds exactly", or `no-violation-found`).
The targets are in tests/hostile_exact_targets.py; each test is cheap (a fraction of a
second to a few seconds: exact audits script a few dozen calls, sampled audits use
vectorised targets and a few thousand samples).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from dpref.audit import audit, exact_audit
from dpref.audit.isolation.bitlevel import BitChannels
from dpref.audit.pure.pairs import COVER_BLOCKS, cover_design
from dpref.audit.reports.audit_report import EXIT_CODES, UNDETERMINING, golden_exit_code
from dpref.cli import main

sys.path.insert(0, str(Path(__file__).parent))
import hostile_exact_targets as h

HERE = Path(__file__).parent
HOSTILE = str(HERE / "hostile_exact_targets.py")
AUDIT_TARGETS = str(HERE / "audit_targets.py")
GOLDEN_TARGETS = str(HERE / "golden_targets.py")


# ---------------------------------------------- 1. a sound exact audit
def test_correct_target_still_holds_exactly() -> None:
    """The companion of the tests below: the verification probes raise no false alarm."""
    r = exact_audit(h.simple2_ok, 10, epsilon=1)
    assert r.outcome == "holds-exactly" and r.exit_code == 0 and not r.findings
    assert "noise magnitudes from 1e-310 to 1e300" in r.basis  # what exactness rests on
    assert "basis" in r.summary() and r.as_dict()["basis"] == r.basis


@pytest.mark.parametrize(
    ("fn", "kind", "where"),
    [
        # defect: `--exact` said "holds exactly" for Laplace noise clipped at ±10b (ε = ∞)
        (h.truncated_laplace, "not-linear", "noise ladder"),
        (h.rejection_truncated, "structure-depends", "noise ladder"),
        (h.saturating, "not-linear", "noise ladder"),
        (h.rounded, "not-linear", "random check"),
    ],
)
def test_bounded_or_rounded_noise_is_not_holds_exactly(fn: Any, kind: str, where: str) -> None:
    r = exact_audit(fn, 10, epsilon=1)
    assert r.outcome == "unavailable" and r.verdict == "inconclusive" and r.exit_code == 3
    found = [f for f in r.findings if f.kind == kind]
    assert found and where in found[0].detail, r.summary()


def test_data_dependent_scale_on_the_all_ones_stream_is_caught() -> None:
    # defect: `--exact` said "holds exactly, ε = 1" for scale 0.01 on the all-ones stream
    r = exact_audit(h.scale_on_all_ones, 10, epsilon=1)
    assert r.exit_code == 3 and r.outcome == "unavailable"
    found = [f for f in r.findings if f.kind == "structure-depends"]
    assert found and "all-1 stream" in found[0].detail and "0.01" in found[0].detail


@pytest.mark.parametrize(
    ("T", "epsilon"), [(5, "1.2920296742"), (6, "1.1605584217"), (7, "1.0686215613")]
)
def test_callback_target_is_auditable_exactly_from_the_cli(
    T: int, epsilon: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # defect: `--exact` on an unedited `(stream, noise)` function ended inconclusive (no
    # way to choose the callback protocol on the command line)
    argv = ["audit", f"{HOSTILE}:blog_binary", "--exact", "--horizon", str(T), "--epsilon", "1"]
    code = main([*argv, "--protocol", "callback", "--json"])
    data = json.loads(capsys.readouterr().out)
    assert code == 1 and data["protocol"] == "callback" and data["outcome"] == "violation"
    assert f"{data['epsilon_float']:.10f}".startswith(epsilon)
    assert main([*argv, "--json"]) == 3  # without it: the rng protocol cannot call it
    capsys.readouterr()


def test_protocol_flag_lists_every_protocol_of_the_api() -> None:
    from dpref.audit import cli
    from dpref.audit.isolation.recording import PROTOCOLS

    assert tuple(cli._PROTOCOLS) == tuple(PROTOCOLS)
    assert main(["audit", "binary", "--exact", "--horizon", "4", "--protocol", "rng"]) == 2
    assert main(["audit", f"{HOSTILE}:simple2_ok", "--horizon", "4", "--epsilon", "1",
                 "--protocol", "rng"]) == 2  # fmt: skip


# ------------------------------- 2. neighbour pairs that cover every position
@pytest.mark.parametrize("T", [5, 8, 16])
def test_a_target_releasing_item_2_is_caught_by_the_default_pairs(T: int) -> None:
    # defect: the default pairs flipped only the first, middle and last item: exit 0
    r = audit(h.releases_item2_batched, horizon=T, epsilon=1, samples=2_000, seed=T)
    assert r.violation and r.exit_code == 1 and r.neighbours is not None
    assert r.neighbours.position == 2
    assert "every position" in r.pairs_design and "every position" in r.summary()


def test_item_2_release_is_infinite_in_the_exact_audit() -> None:
    r = exact_audit(h.releases_item2, 8, epsilon=1)
    assert r.infinite and r.item == 2 and r.outcome == "violation" and r.exit_code == 1


def test_the_covering_design_above_16_is_stated() -> None:
    text = cover_design(100)  # ⌈100/16⌉ = 7 items per block, 15 blocks
    assert "15 blocks of 7 items" in text and "≥ 1/7" in text
    assert f"{COVER_BLOCKS} blocks of 2 items" in cover_design(32)
    assert "every position t = 1..16" in cover_design(16)


def test_signed_zero_is_a_finding_in_audit_and_exact() -> None:
    # defect: item 1 published as ±0.0 passed `audit` (exit 0) and `--exact` said over-noised
    r = audit(h.signed_zero_batched, horizon=5, epsilon=1, samples=2_000, seed=1)
    assert [f.kind for f in r.findings] == ["signed-zero"] and "t=1" in str(r.findings[0])
    assert r.exit_code != 0 and r.verdict in ("violation", "inconclusive")
    e = exact_audit(h.signed_zero_item1, 6, epsilon=1)
    assert e.outcome == "unavailable" and e.exit_code == 3
    assert [f.kind for f in e.findings] == ["signed-zero"]


def test_nan_payloads_and_zero_signs_are_bit_level_channels() -> None:
    bits = BitChannels()
    quiet, payload = np.float64(np.nan), np.array([0x7FF8000000000001], np.uint64).view(np.float64)
    bits.add(np.array([[0.0, quiet], [0.0, payload[0]]]))
    assert [f.kind for f in bits.findings(2)] == ["nan-payload"]
    bits.add(np.array([-0.0, 1.0]))
    assert [f.kind for f in bits.findings(2)] == ["signed-zero", "nan-payload"]
    clean = BitChannels()
    clean.add(np.array([[0.0, np.nan], [1.0, np.nan]]))
    assert clean.findings(2) == []


# ------------------------------------------------ 3. one exit-code contract
def test_nan_in_a_tenth_of_calls_exits_3(capsys: pytest.CaptureFixture[str]) -> None:
    # defect: a finding, `no-violation-found` and exit 0
    argv = ["audit", f"{HOSTILE}:nan_tenth_batched", "--horizon", "4", "--epsilon", "1"]
    code = main([*argv, "--samples", "2000", "--seed", "1", "--json"])
    data = json.loads(capsys.readouterr().out)
    assert code == 3 and data["verdict"] == "inconclusive"
    assert [f["kind"] for f in data["findings"]] == ["non-finite"]


def _code(argv: list[str], capsys: pytest.CaptureFixture[str]) -> int:
    code = main(argv)
    capsys.readouterr()
    return code


def test_exit_code_contract(capsys: pytest.CaptureFixture[str]) -> None:
    """0 no violation and no finding; 1 violation / non-conformance; 3 inconclusive; 2 usage,
    for audit, conform, --exact and golden run (docs/auditing.md §5, docs/cli.md)."""
    assert EXIT_CODES == {
        "no-violation-found": 0,
        "conforms": 0,
        "violation": 1,
        "does-not-conform": 1,
        "inconclusive": 3,
    }
    small = ["--horizon", "4", "--epsilon", "1", "--samples", "2000", "--seed", "1"]
    # audit's 3 (a NaN finding) is test_nan_in_a_tenth_of_calls_exits_3
    audit_cases = {f"{HOSTILE}:simple2_batched": 0, f"{HOSTILE}:releases_item2_batched": 1}
    for target, want in audit_cases.items():
        assert _code(["audit", target, *small], capsys) == want, target
    assert _code(["audit", f"{HOSTILE}:simple2_batched", "--horizon", "4"], capsys) == 2
    exact = ["--exact", "--horizon", "6", "--epsilon", "1"]
    exact_cases = {"simple2_ok": 0, "releases_item2": 1, "truncated_laplace": 3}
    for name, want in exact_cases.items():
        assert _code(["audit", f"{HOSTILE}:{name}", *exact], capsys) == want, name
    assert _code(["audit", f"{HOSTILE}:simple2_ok", "--exact", "--samples", "9"], capsys) == 2
    conform = ["conform", "--horizon", "4"]
    assert _code([*conform, f"{HOSTILE}:simple2_batched"], capsys) == 0
    assert _code([*conform, f"{AUDIT_TARGETS}:wrong_length"], capsys) == 1
    assert _code([*conform, f"{HOSTILE}:sleeps_batched", "--timeout", "0.1"], capsys) == 3
    assert _code([*conform, f"{HOSTILE}:simple2_batched", "--runs", "50"], capsys) == 2
    golden = ["golden", "run", "--case", "binary[T=5]"]
    assert _code([*golden, f"{GOLDEN_TARGETS}:binary"], capsys) == 0
    assert _code([*golden, f"{GOLDEN_TARGETS}:binary_shifted"], capsys) == 1
    assert _code([*golden, f"{GOLDEN_TARGETS}:sleeps", "--timeout", "0.1"], capsys) == 3
    assert _code([*golden, f"{GOLDEN_TARGETS}:binary", "--rtol", "-1"], capsys) == 2


def test_the_contract_is_documented_and_shared() -> None:
    from dpref.audit.conformance import conform as conform_module

    assert set(conform_module._NOT_DEFECTS) <= set(UNDETERMINING)
    for page in ("docs/cli.md", "docs/auditing.md"):
        text = (HERE.parent / page).read_text(encoding="utf-8")
        assert "3 inconclusive" in text or "| `inconclusive` | 3 |" in text, page
        assert "2 usage or input error" in text or "usage or input error | 2" in text, page

    class _Run:
        ok, mismatches, findings = False, [], []

    assert golden_exit_code(_Run()) == 3  # vectors not run, nothing wrong: inconclusive
