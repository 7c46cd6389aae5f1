"""What a certificate certified: sha256 digests of the golden-vector file and of the installed
packages' files, and abbreviations of long exact values (a reader can match an abbreviated
value against the JSON twin by its digest).

A package's *manifest digest* is the sha256 of the text ``"<sha256 of file>  <path>\\n"`` for
every file under the package directory, sorted by its relative POSIX path (the format of
``sha256sum``; ``__pycache__`` directories and ``.pyc`` files are left out: Python writes them,
they are not the package).  It can be recomputed from a shell::

    cd site-packages && find dpref -type f ! -path '*__pycache__*' ! -name '*.pyc' \\
        | LC_ALL=C sort | xargs sha256sum | sha256sum
"""

from __future__ import annotations

import hashlib
import re
from fractions import Fraction
from importlib import resources
from pathlib import Path
from typing import Any

__all__ = [
    "ABBREVIATE_DIGITS",
    "abbreviate",
    "abbreviate_number",
    "golden_digest",
    "package_manifest",
    "sha256_hex",
]

ABBREVIATE_DIGITS = 24
"""An exact integer or fraction with more digits than this (numerator and denominator
together) is abbreviated in the Markdown certificate."""
_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:/\d+)?(?![\w.])")
"""An integer or a fraction ``p/q`` standing alone (not part of a word or a decimal)."""


def sha256_hex(data: bytes) -> str:
    """The sha256 of ``data``, lower-case hex."""
    return hashlib.sha256(data).hexdigest()


def abbreviate_number(text: str) -> str:
    """``≈ <float> (exact: N digits, sha256 <first 12 hex>)`` for an exact integer or fraction
    ``text`` with more than :data:`ABBREVIATE_DIGITS` digits; ``text`` itself otherwise.  N
    counts the digits of numerator and denominator; the digest is of ``text`` (UTF-8), the
    string the JSON certificate holds."""
    digits = sum(c.isdigit() for c in text)
    if digits <= ABBREVIATE_DIGITS:
        return text
    try:
        approx = repr(float(Fraction(text)))  # the shortest decimal that round-trips
    except (ValueError, ZeroDivisionError, OverflowError):
        approx = "?"
    return f"≈ {approx} (exact: {digits} digits, sha256 {sha256_hex(text.encode())[:12]})"


def abbreviate(text: str) -> str:
    """``text`` with every long exact integer or fraction in it abbreviated
    (:func:`abbreviate_number`)."""
    return _NUMBER.sub(lambda m: abbreviate_number(m.group(0)), text)


def package_manifest(package: str) -> dict[str, Any] | None:
    """``{"files": n, "sha256": manifest digest, "path": directory}`` of an importable
    package (see the module docstring), or None when it cannot be found on disk."""
    try:
        root = Path(str(resources.files(package)))
    except (ModuleNotFoundError, TypeError):
        return None
    if not root.is_dir():
        return None
    lines = []
    for path in root.rglob("*"):
        rel = path.relative_to(root.parent).as_posix()
        if not path.is_file() or "__pycache__" in path.parts or path.suffix == ".pyc":
            continue
        lines.append((rel, sha256_hex(path.read_bytes())))
    lines.sort(key=lambda item: item[0].encode())
    text = "".join(f"{digest}  {rel}\n" for rel, digest in lines)
    return {"files": len(lines), "sha256": sha256_hex(text.encode()), "path": str(root)}


def golden_digest() -> dict[str, Any]:
    """The shipped golden-vector file's name, size and sha256."""
    raw = resources.files("dpref").joinpath("data/golden.json.gz").read_bytes()
    return {"file": "dpref/data/golden.json.gz", "bytes": len(raw), "sha256": sha256_hex(raw)}
