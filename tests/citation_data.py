"""Generate ``dpref/data/citation.json`` — what ``dpref cite`` prints — from its two sources.

* ``CITATION.cff``: the software entry and every paper (``references``);
* the ``## Citation`` section of each mechanism card (``docs/mechanisms/<name>.md``): which of
  those papers a mechanism rests on, matched by title or DOI (tests/test_docs_mechanisms.py
  already requires every card citation to be a ``references`` entry).

The package cannot read either source once installed (neither is in the wheel, and the CFF is
YAML while dpref depends on no YAML parser), so the derived JSON ships instead;
``tests/test_citation.py`` fails when it and its sources disagree. Regenerate::

    python tests/citation_data.py --write
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "dpref" / "data" / "citation.json"
REGENERATE = "python tests/citation_data.py --write"


def _norm(title: str) -> str:
    return " ".join(re.sub(r"[^a-z0-9 ]", "", title.casefold()).split())


def _card_citations(text: str) -> list[tuple[str, set[str]]]:
    """Each bullet of a card's ``## Citation`` section: its italic title and its DOIs."""
    match = re.search(r"^## Citation\n(.*?)(?=^## |\Z)", text, flags=re.S | re.M)
    body = match.group(1) if match else ""
    out = []
    for bullet in re.split(r"^\* ", body, flags=re.M)[1:]:
        title = re.search(r"\*([^*]+?)\.?\*", bullet)
        dois = {d.rstrip(".").lower() for d in re.findall(r"10\.\d{4,}/[^\s,;)]+", bullet)}
        if title:
            out.append((title.group(1), dois))
    return out


def _reference(entry: dict[str, Any]) -> dict[str, Any]:
    authors = []
    for a in entry.get("authors", []):
        if "family-names" in a:
            authors.append({"family": a["family-names"], "given": a.get("given-names", "")})
        else:
            authors.append({"name": a["name"]})
    arxiv = [
        i["value"].removeprefix("arXiv:")
        for i in entry.get("identifiers", [])
        if str(i.get("value", "")).startswith("arXiv:")
    ]
    ref: dict[str, Any] = {
        "type": entry["type"],
        "title": entry["title"],
        "authors": authors,
        "year": entry.get("year"),
    }
    venue = entry.get("journal") or entry.get("conference", {}).get("name")
    for key, value in (
        ("venue", venue),
        ("volume", entry.get("volume")),
        ("issue", entry.get("issue")),
        ("pages", f"{entry['start']}–{entry['end']}" if "start" in entry else None),
        ("doi", entry.get("doi")),
        ("arxiv", arxiv[0] if arxiv else None),
        ("notes", entry.get("notes")),
    ):
        if value is not None:
            ref[key] = value
    family = authors[0].get("family", authors[0].get("name", "anon")) if authors else "anon"
    word = next((w for w in _norm(entry["title"]).split() if len(w) > 3), "paper")
    ref["key"] = re.sub(r"[^a-z]", "", family.casefold()) + f"{entry.get('year', '')}{word}"
    return ref


def build() -> dict[str, Any]:
    """The citation data: software, references, and each mechanism's references by key."""
    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text(encoding="utf-8"))
    references = [_reference(e) for e in cff.get("references", [])]
    by_title = {_norm(r["title"]): r["key"] for r in references}
    by_doi = {r["doi"].lower(): r["key"] for r in references if "doi" in r}
    mechanisms: dict[str, list[str]] = {}
    for card in sorted((ROOT / "docs" / "mechanisms").glob("*.md")):
        if card.stem == "index":
            continue
        keys: list[str] = []
        for title, dois in _card_citations(card.read_text(encoding="utf-8")):
            key = by_title.get(_norm(title)) or next(
                (by_doi[d] for d in sorted(dois) if d in by_doi), None
            )
            if key is None:
                raise SystemExit(f"{card.name}: cites {title!r}, which CITATION.cff does not list")
            if key not in keys:
                keys.append(key)
        mechanisms[card.stem] = keys
    software: dict[str, Any] = {
        "title": cff["title"],
        "version": str(cff["version"]),
        "date_released": str(cff["date-released"]),
        "license": cff.get("license"),
        "authors": [
            a.get("name") or f"{a['given-names']} {a['family-names']}" for a in cff["authors"]
        ],
        "abstract": " ".join(str(cff.get("abstract", "")).split()),
        "message": cff.get("message"),
    }
    for field in ("repository-code", "url", "doi"):
        if field in cff:
            software[field.replace("-", "_")] = cff[field]
    return {
        "generated_by": REGENERATE,
        "software": software,
        "references": references,
        "mechanisms": mechanisms,
    }


def render() -> str:
    return json.dumps(build(), indent=1, ensure_ascii=False) + "\n"


if __name__ == "__main__":
    if sys.argv[1:] == ["--write"]:
        OUT.write_text(render(), encoding="utf-8")
        print(f"wrote {OUT.relative_to(ROOT)}")
    else:
        sys.stdout.write(render())
