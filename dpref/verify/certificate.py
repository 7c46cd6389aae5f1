"""The certificate of a ``dpref verify`` run (``--out FILE``): what was checked, on what,
and the result — as Markdown (``FILE``) and JSON (``FILE`` with the suffix ``.json``).

The JSON object has the keys ``format`` (:data:`FORMAT`), ``passed``, ``dpref_version``,
``git_commit`` and ``git_dirty`` (``null`` outside a git checkout), ``platform``,
``python``, ``packages`` (numpy, scipy, sympy versions), ``options``, ``seed``,
``started`` (UTC, ISO 8601), ``wall_seconds``, ``totals`` (rows, checks, failed rows,
failed checks), ``golden`` (the golden-vector file's sha256), ``manifest`` (per shipped
package, the number of files and their manifest digest, :mod:`dpref.verify.digest`) and
``rows`` (each row of the verify table, with its checks and details, as
:meth:`~dpref.verify.VerifyRow.as_dict` gives it: exact values in full).

The Markdown page abbreviates every exact value longer than
:data:`~dpref.verify.digest.ABBREVIATE_DIGITS` digits as ``≈ <float> (exact: N digits,
sha256 <first 12 hex>)`` (the digest of the JSON's string), states whether the working tree
had uncommitted changes, lists every proof claim with its statement, and has no line longer
than :data:`MAX_LINE` characters.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from dpref.errors import ParameterError
from dpref.validation import fmt
from dpref.verify import VerifyOptions, VerifyRow
from dpref.verify.digest import abbreviate, golden_digest, package_manifest

__all__ = [
    "FORMAT",
    "MAX_LINE",
    "build_certificate",
    "certificate_paths",
    "check_writable",
    "environment",
    "to_markdown",
    "write_certificate",
]

FORMAT = "dpref-verify-certificate/1"
"""The ``format`` key of the JSON certificate."""
MAX_LINE = 400
"""No line of the Markdown certificate is longer than this (characters)."""
SHIPPED = ("dpref", "proofs")
"""The packages whose files the manifest digest covers."""
PACKAGES = ("numpy", "scipy", "sympy")
"""The dependencies whose versions a certificate records."""
_ROOT = Path(__file__).resolve().parents[2]
"""The directory holding the ``dpref`` package (a git checkout, in development)."""


def certificate_paths(path: str | os.PathLike[str]) -> tuple[Path, Path]:
    """The Markdown file ``path`` and its JSON twin (same stem, suffix ``.json``).

    Raises :class:`~dpref.errors.ParameterError` when ``path`` itself ends in ``.json``
    (both files would be the same)."""
    md = Path(path)
    js = md.with_suffix(".json")
    if md.suffix.lower() == ".json" or md.name in ("", ".", ".."):
        raise ParameterError(
            f"--out={fmt(str(path))}: give the Markdown file (e.g. cert.md); "
            "the JSON goes next to it with the suffix .json"
        )
    return md, js


def check_writable(path: str | os.PathLike[str]) -> tuple[Path, Path]:
    """Both certificate files can be written (checked before a run, without creating
    them); raises :class:`~dpref.errors.ParameterError` naming ``--out`` otherwise."""
    md, js = certificate_paths(path)
    for target in (md, js):
        parent = target.parent if str(target.parent) else Path(".")
        if target.is_dir():
            raise ParameterError(f"--out={fmt(str(path))}: {target} is a directory")
        if not parent.is_dir():
            raise ParameterError(f"--out={fmt(str(path))}: no directory {parent}")
        if target.exists() and not os.access(target, os.W_OK):
            raise ParameterError(f"--out={fmt(str(path))}: {target} is not writable")
        if not target.exists() and not os.access(parent, os.W_OK | os.X_OK):
            raise ParameterError(f"--out={fmt(str(path))}: directory {parent} is not writable")
    return md, js


def _version(package: str) -> str | None:
    try:
        return version(package)
    except PackageNotFoundError:
        return None


def _git(*args: str) -> str | None:
    """``git args…`` in the checkout holding dpref, or ``None`` (no git, no checkout)."""
    if not (_ROOT / ".git").exists():
        return None
    try:
        done = subprocess.run(
            ["git", "-C", str(_ROOT), *args], capture_output=True, text=True, timeout=10
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def environment() -> dict[str, Any]:
    """dpref's version and commit, the platform, Python and the numerical packages."""
    import dpref

    commit = _git("rev-parse", "HEAD")
    status = _git("status", "--porcelain", "--untracked-files=no") if commit else None
    return {
        "dpref_version": _version("dpref") or dpref.__version__,
        "git_commit": commit,
        "git_dirty": None if status is None else bool(status),
        "platform": platform.platform(),
        "python": f"{platform.python_implementation()} {sys.version.split()[0]}",
        "packages": {name: _version(name) for name in PACKAGES},
    }


def proof_kinds(rows: Sequence[VerifyRow]) -> dict[str, dict[str, int]]:
    """``{subject: {kind: n}}`` from the proofs suite's rows (each carries its claims'
    counts per label, strongest first, in ``extra["kinds"]``; the labels are the proofs'
    own, not named here), plus a ``total``; empty without proof rows."""
    out: dict[str, dict[str, int]] = {}
    for row in rows:
        kinds = row.extra.get("kinds")
        if row.suite == "proofs" and isinstance(kinds, dict):
            out[row.mechanism] = {str(k): int(v) for k, v in kinds.items()}
    if out:
        names = list(dict.fromkeys(k for by_kind in out.values() for k in by_kind))
        out = {m: {k: by_kind.get(k, 0) for k in names} for m, by_kind in out.items()}
        out["total"] = {k: sum(by_kind[k] for by_kind in out.values()) for k in names}
    return out


def proof_kinds_line(rows: Sequence[VerifyRow]) -> str | None:
    """One line with the total count of each proof label (None without proof rows)."""
    kinds = proof_kinds(rows)
    if not kinds:
        return None
    return "proof claims: " + ", ".join(f"{n} {kind}" for kind, n in kinds["total"].items())


def build_certificate(
    rows: Sequence[VerifyRow],
    opts: VerifyOptions,
    *,
    jobs: int,
    started: str,
    wall_seconds: float,
) -> dict[str, Any]:
    """The certificate of a finished run, as a JSON-ready dict."""
    failed = [r for r in rows if r.failed]
    return {
        "format": FORMAT,
        "passed": not failed,
        **environment(),
        "options": {
            "max_horizon": opts.max_exhaustive,
            "random_horizons": opts.random_horizons,
            "random_max": opts.random_max,
            "mechanisms": list(opts.mechanisms),
            "jobs": jobs,
        },
        "seed": opts.seed,
        "started": started,
        "wall_seconds": round(wall_seconds, 3),
        "totals": {
            "rows": len(rows),
            "checks": sum(r.checks for r in rows),
            "failed_rows": len(failed),
            "failed_checks": sum(r.failed for r in rows),
        },
        "golden": golden_digest(),
        "manifest": {name: package_manifest(name) for name in SHIPPED},
        "proof_kinds": proof_kinds(rows),
        "rows": [r.as_dict() for r in rows],
    }


def _cell(value: Any, limit: int | None = None) -> str:
    """A Markdown table cell: one line, long exact values abbreviated, pipes escaped; cut to
    ``limit`` characters (the JSON keeps the whole text)."""
    text = abbreviate(" ".join(("" if value is None else str(value)).split()))
    if limit is not None and len(text) > limit:
        text = text[: limit - 1].rstrip() + "…"
    return text.replace("|", "\\|")


def _wrapped(text: str, first: str, rest: str = "  ") -> list[str]:
    """``first + text`` as Markdown lines of at most :data:`MAX_LINE` characters (a list
    item's continuation lines are indented by ``rest``)."""
    import textwrap

    return textwrap.wrap(
        abbreviate(" ".join(text.split())),
        width=MAX_LINE // 2,
        initial_indent=first,
        subsequent_indent=rest,
        break_long_words=True,
        break_on_hyphens=False,
    ) or [first.rstrip()]


def _tree_state(cert: dict[str, Any]) -> str:
    """Whether the checkout had uncommitted changes to tracked files."""
    if cert.get("git_dirty") is None:
        return "unknown (not a git checkout)"
    if cert["git_dirty"]:
        return "dirty: uncommitted changes to tracked files (the commit alone is not what ran)"
    return "clean: no uncommitted changes to tracked files"


def _digest_lines(cert: dict[str, Any]) -> list[str]:
    """The golden file's and the shipped packages' digests (table rows)."""
    lines = []
    golden = cert.get("golden")
    if golden:
        lines.append(
            f"| golden vectors | {_cell(golden['file'])}: {golden['bytes']} bytes, "
            f"sha256 `{golden['sha256']}` |"
        )
    for name, man in (cert.get("manifest") or {}).items():
        if man is None:
            lines.append(f"| package {_cell(name)} | not found |")
        else:
            lines.append(
                f"| package {_cell(name)} | {man['files']} files, manifest sha256 "
                f"`{man['sha256']}` |"
            )
    return lines


def _theorems(rows: list[dict[str, Any]]) -> list[str]:
    """Every proof claim of the proofs rows: subject, claim, label and statement."""
    lines: list[str] = []
    for row in rows:
        claims = row.get("claims")
        if row.get("suite") != "proofs" or not isinstance(claims, list):
            continue
        for c in claims:
            if not isinstance(c, dict):
                continue
            head = f"- **{c.get('mechanism', row['mechanism'])} — {c.get('claim', '')}** "
            head += f"({c.get('status', '')}): "
            lines += _wrapped(str(c.get("statement", "")), head)
    if not lines:
        return []
    return [
        "## Proof claims",
        "",
        "The statement of every proof claim (the theorem, for a proven one), with its label.",
        "",
        *lines,
        "",
    ]


def _kinds_table(kinds: dict[str, dict[str, int]]) -> list[str]:
    """The proof labels per subject (docs/proofs.md says what each label means)."""
    if not kinds:
        return []
    lines = [
        "## Proof labels",
        "",
        "What each proof claim established (docs/proofs.md): proven about the code, a lemma "
        "about the maths only, an exhaustive check up to a bound, or a note (a citation).",
        "",
        "| subject | " + " | ".join(kinds["total"]) + " |",
        "|---|" + "---:|" * len(kinds["total"]),
    ]
    for name, by_kind in kinds.items():
        cells = " | ".join(str(n) for n in by_kind.values())
        lines.append(f"| {_cell(name)} | {cells} |")
    return [*lines, ""]


_DETAIL = 160
"""The detail column is cut to this many characters (the JSON holds the whole text)."""


def to_markdown(cert: dict[str, Any]) -> str:
    """The certificate as a Markdown page."""
    totals = cert["totals"]
    verdict = "PASSED" if cert["passed"] else "FAILED"
    opts = cert["options"]
    commit = cert["git_commit"] or "not a git checkout"
    lines = [
        "# dpref verify certificate",
        "",
        f"**{verdict}**: {totals['checks']} checks in {totals['rows']} rows, "
        f"{totals['failed_checks']} failed checks in {totals['failed_rows']} rows; "
        f"wall time {cert['wall_seconds']:.1f} s.",
        "",
        "## Environment",
        "",
        "| item | value |",
        "|---|---|",
        f"| dpref | {_cell(cert['dpref_version'])} |",
        f"| git commit | {_cell(commit)} |",
        f"| working tree | {_tree_state(cert)} |",
        *_digest_lines(cert),
        f"| platform | {_cell(cert['platform'])} |",
        f"| Python | {_cell(cert['python'])} |",
        *(f"| {name} | {_cell(v or 'not installed')} |" for name, v in cert["packages"].items()),
        f"| started (UTC) | {_cell(cert['started'])} |",
        "",
        "## Options",
        "",
        "| option | value |",
        "|---|---|",
        f"| --max-horizon | {opts['max_horizon']} |",
        f"| --random-horizons | {opts['random_horizons']} |",
        f"| largest random T | {opts['random_max']} |",
        f"| --mechanism | {_cell(', '.join(opts['mechanisms']) or 'all')} |",
        f"| --seed | {cert['seed']} |",
        f"| --jobs | {opts['jobs']} |",
        "",
        *_kinds_table(cert.get("proof_kinds") or {}),
        *_theorems(cert["rows"]),
        "## Rows",
        "",
        "| # | suite | subject | checks | failed | declared | proven | status | seconds | detail |",
        "|---:|---|---|---:|---:|---|---|---|---:|---|",
    ]
    for i, row in enumerate(cert["rows"], 1):
        lines.append(
            f"| {i} | {_cell(row['suite'])} | {_cell(row['mechanism'])} | {row['checks']} | "
            f"{row['failed']} | {_cell(row['declared_epsilon'])} | {_cell(row['proven_sum'])} "
            f"| {row['status']} | {row['seconds']:.2f} | {_cell(row['detail'], _DETAIL)} |"
        )
    lines += [
        "",
        f"Certificate format `{cert['format']}`; the JSON twin holds every field. A value "
        "written `≈ x (exact: N digits, sha256 h)` is exact in the JSON; h is the first 12 hex "
        "digits of the sha256 of its string there; a detail ending in … is cut (whole in "
        "the JSON). A package's manifest sha256 is that of "
        "`sha256sum` over its files sorted by path (dpref.verify.digest).",
        "",
    ]
    text = "\n".join(lines)
    longest = max(len(line) for line in lines)
    if longest > MAX_LINE:  # a row with many long cells: the JSON has everything
        text = "\n".join(ln if len(ln) <= MAX_LINE else ln[: MAX_LINE - 1] + "…" for ln in lines)
    return text


def write_certificate(cert: dict[str, Any], path: str | os.PathLike[str]) -> tuple[Path, Path]:
    """Write the Markdown and JSON files (each to a temporary file renamed into place);
    their paths.  Raises :class:`~dpref.errors.ParameterError` when a file cannot be
    written, after removing both (no certificate survives a failed write)."""
    from dpref.cli.outputs import remove, write_file

    md, js = certificate_paths(path)
    try:  # each file whole or not at all; on a failure neither is left
        write_file(js, (json.dumps(cert, indent=2, ensure_ascii=False) + "\n").encode(), "--out")
        write_file(md, to_markdown(cert).encode("utf-8"), "--out")
    except ParameterError:
        for done in (js, md):
            try:
                remove(done, "--out")
            except ParameterError:
                pass
        raise
    return md, js
