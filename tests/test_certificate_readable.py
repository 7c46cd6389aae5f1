"""The Markdown certificate is readable (issue 27 item 3): long exact values abbreviated with a
digest of the JSON's string, the working tree's state, the proof statements, the digests of the
golden file and of the shipped packages, and no line longer than MAX_LINE."""

from __future__ import annotations

import hashlib
import json
import re
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

from dpref.verify import VerifyOptions, VerifyRow
from dpref.verify.certificate import MAX_LINE, build_certificate, to_markdown, write_certificate
from dpref.verify.digest import (
    ABBREVIATE_DIGITS,
    abbreviate,
    abbreviate_number,
    golden_digest,
    package_manifest,
)

HUGE = str(Fraction(3**400, 7**300))
"""An exact fraction of about 450 digits."""


def _rows() -> list[VerifyRow]:
    claim = {
        "mechanism": "toy",
        "claim": "budget",
        "status": "proven about the code",
        "statement": "Σ_k ε/(ζ(δ)k^δ) = ε for every δ > 1 " + "and a long tail " * 60,
    }
    return [
        VerifyRow("proofs", "toy", 1, 0, "ε", "-", extra={"claims": [claim]}),
        VerifyRow("plans", "toy", 5, 0, "7/10", HUGE, detail=f"exact sum {HUGE} " + "x" * 500),
        VerifyRow("audit-gaussian", "toy", 3, 0, "rho=1/2", f"mu^2={HUGE}"),
    ]


def _cert() -> dict[str, Any]:
    opts = VerifyOptions(mechanisms=("allwindow",))
    return build_certificate(
        _rows(), opts, jobs=1, started="2026-11-26T00:00:00+00:00", wall_seconds=1.0
    )


def test_no_line_over_the_limit_and_values_abbreviated() -> None:
    cert = _cert()
    md = to_markdown(cert)
    assert max(len(line) for line in md.splitlines()) <= MAX_LINE
    assert HUGE not in md
    digest = hashlib.sha256(HUGE.encode()).hexdigest()[:12]
    digits = sum(c.isdigit() for c in HUGE)
    short = f"≈ {float(Fraction(HUGE))!r} (exact: {digits} digits, sha256 {digest})"
    assert short in md
    # the JSON keeps the exact value
    assert cert["rows"][1]["proven_sum"] == HUGE
    assert HUGE in json.dumps(cert)
    # the theorem statement is there, wrapped, whole
    assert "**toy — budget** (proven about the code): Σ_k ε/(ζ(δ)k^δ) = ε" in md
    joined = " ".join(line.strip() for line in md.splitlines())  # undo the wrapping
    assert joined.count("and a long tail") == 60


def test_the_tree_state_is_stated() -> None:
    cert = _cert()
    for dirty, word in ((True, "dirty"), (False, "clean"), (None, "unknown")):
        text = to_markdown({**cert, "git_dirty": dirty})
        line = next(ln for ln in text.splitlines() if ln.startswith("| working tree |"))
        assert word in line


def test_digests_identify_what_was_certified(tmp_path: Path) -> None:
    cert = _cert()
    golden = golden_digest()
    raw = (Path(package_manifest("dpref")["path"]) / "data" / "golden.json.gz").read_bytes()  # type: ignore[index]
    assert golden["sha256"] == hashlib.sha256(raw).hexdigest() == cert["golden"]["sha256"]
    man = cert["manifest"]["dpref"]
    root = Path(man["path"])
    files = sorted(
        (
            p
            for p in root.rglob("*")
            if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"
        ),
        key=lambda p: p.relative_to(root.parent).as_posix().encode(),
    )
    text = "".join(
        f"{hashlib.sha256(p.read_bytes()).hexdigest()}  {p.relative_to(root.parent).as_posix()}\n"
        for p in files
    )
    assert man["files"] == len(files) > 50
    assert man["sha256"] == hashlib.sha256(text.encode()).hexdigest()
    md_path, js_path = write_certificate(cert, tmp_path / "cert.md")
    md = md_path.read_text(encoding="utf-8")
    assert man["sha256"] in md and golden["sha256"] in md
    assert json.loads(js_path.read_text(encoding="utf-8"))["manifest"]["dpref"] == man


@pytest.mark.parametrize(
    ("text", "same"),
    [("7/10", True), ("1" * ABBREVIATE_DIGITS, True), ("1" * (ABBREVIATE_DIGITS + 1), False)],
)
def test_abbreviation_threshold(text: str, same: bool) -> None:
    assert (abbreviate_number(text) == text) is same


def test_abbreviate_leaves_decimals_and_words_alone() -> None:
    long = "1" * 30
    assert abbreviate(f"x1e-9 0.{long} k=13 v{long}") == f"x1e-9 0.{long} k=13 v{long}"
    assert re.fullmatch(
        r"≈ 1\.111111111111111e\+29 \(exact: 30 digits, sha256 [0-9a-f]{12}\)", abbreviate(long)
    )
