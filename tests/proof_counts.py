"""The table of proof labels in docs/proofs.md, generated from ``dpref prove``.

``python tests/proof_counts.py --write`` rewrites the table between the ``proof-counts``
markers of docs/proofs.md; ``tests/test_proofs.py::test_documented_counts_are_what_prove_prints``
(marked slow: it runs every proof, about a minute) fails when the page and the code disagree.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "proofs.md"
START, END = "<!-- proof-counts:start -->", "<!-- proof-counts:end -->"


def table() -> str:
    """The Markdown table of ``dpref prove``'s counts per subject, with a total row."""
    from proofs.cli import counts_by_mechanism
    from proofs.core import FAILED, KINDS
    from proofs.registry import prove_all

    headers = (*KINDS, FAILED)
    counts = counts_by_mechanism(prove_all())
    lines = [
        "| subject | " + " | ".join(headers) + " |",
        "|---|" + "---:|" * len(headers),
    ]
    total = dict.fromkeys(headers, 0)
    for name, by_kind in counts.items():
        lines.append(f"| {name} | " + " | ".join(str(by_kind[h]) for h in headers) + " |")
        for h in headers:
            total[h] += by_kind[h]
    lines.append("| **total** | " + " | ".join(f"**{total[h]}**" for h in headers) + " |")
    return "\n".join(lines)


def block(text: str) -> str:
    """The part of the page between the markers."""
    match = re.search(re.escape(START) + r"\n(.*?)\n" + re.escape(END), text, re.S)
    if match is None:
        raise SystemExit(f"{PAGE}: no {START} … {END} block")
    return match.group(1)


def main(argv: list[str]) -> int:
    text = PAGE.read_text(encoding="utf-8")
    current = block(text)
    fresh = table()
    if "--write" in argv:
        PAGE.write_text(text.replace(current, fresh), encoding="utf-8")
        return 0
    print(fresh)
    return 0 if current == fresh else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
