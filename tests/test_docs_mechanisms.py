"""The per-mechanism reference pages (docs/mechanisms/*.md) and the pitfalls page.

Every registered mechanism has a page with the same sections in the same order, links its
topic page, names proof modules that exist (its own among them) and cites papers that
CITATION.cff lists (by title or DOI).  The examples on the pages are executed by
``tests/test_docs_examples.py``; this file checks their structure only, so it is fast.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from dpref.mechanisms import MECHANISMS

ROOT = Path(__file__).resolve().parent.parent
PAGES = ROOT / "docs" / "mechanisms"

SECTIONS = (
    "Definition",
    "Budget",
    "Theorem",
    "Proof",
    "Variance",
    "Lower bound",
    "Example",
    "Citation",
)
"""The ``##`` headings every mechanism page has, in this order and no others."""

PENDING_CITATIONS: frozenset[str] = frozenset()
"""Normalised titles a page may cite although CITATION.cff does not list them (none: every
paper the cards cite is a ``references`` entry of CITATION.cff)."""


def _norm(title: str) -> str:
    """A title compared case- and punctuation-insensitively."""
    return " ".join(re.sub(r"[^a-z0-9 ]", "", title.casefold()).split())


def _page(name: str) -> str:
    return (PAGES / f"{name}.md").read_text(encoding="utf-8")


def _section(text: str, heading: str) -> str:
    """The body of the ``## heading`` section (up to the next ``##`` heading)."""
    match = re.search(rf"^## {re.escape(heading)}\n(.*?)(?=^## |\Z)", text, flags=re.S | re.M)
    assert match is not None, f"no section '## {heading}'"
    return match.group(1)


def _cff_references() -> tuple[set[str], set[str]]:
    """The normalised titles and the DOIs of CITATION.cff's ``references``."""
    text = (ROOT / "CITATION.cff").read_text(encoding="utf-8")
    _, _, refs = text.partition("\nreferences:")
    titles = {_norm(t) for t in re.findall(r"^\s+-?\s*title:\s*[\"']?(.+?)[\"']?\s*$", refs, re.M)}
    dois = {d.lower() for d in re.findall(r"^\s+doi:\s*[\"']?(10\.[^\s\"']+)", refs, re.M)}
    return titles, dois


def _citations(text: str) -> list[tuple[str, set[str]]]:
    """Each bullet of the Citation section: its italic title and the DOIs it gives."""
    body = _section(text, "Citation")
    bullets = re.split(r"^\* ", body, flags=re.M)[1:]
    out = []
    for bullet in bullets:
        title = re.search(r"\*([^*]+?)\.?\*", bullet)
        assert title is not None, f"citation without an italic title: {bullet[:80]!r}"
        dois = {d.rstrip(".").lower() for d in re.findall(r"10\.\d{4,}/[^\s,;)]+", bullet)}
        out.append((title.group(1), dois))
    return out


NAMES = sorted(MECHANISMS)


def test_every_registered_mechanism_has_a_page_and_nothing_else() -> None:
    pages = {p.stem for p in PAGES.glob("*.md")} - {"index"}
    assert pages == set(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_page_has_the_sections_in_order(name: str) -> None:
    text = _page(name)
    headings = re.findall(r"^## (.+?)\s*$", text, flags=re.M)
    assert tuple(headings) == SECTIONS
    title = text.splitlines()[0]
    assert title.startswith("# ") and f"`{name}`" in title, title


@pytest.mark.parametrize("name", NAMES)
def test_definition_names_the_class_and_the_command_line(name: str) -> None:
    cls = MECHANISMS[name]
    body = _section(_page(name), "Definition")
    assert f"dpref.{cls.__name__}(" in body
    assert f"dpref release {name}" in body
    undocumented = [p for p in cls.parameters() if f"`{p}`" not in body and f"{p}=" not in body]
    assert not undocumented, f"{name}: Definition does not name parameters {undocumented}"


@pytest.mark.parametrize("name", NAMES)
def test_page_links_its_topic_page(name: str) -> None:
    cls = MECHANISMS[name]
    assert cls.docs is not None and cls.docs.startswith("docs/")
    assert f"](../{cls.docs.removeprefix('docs/')})" in _page(name)


@pytest.mark.parametrize("name", NAMES)
def test_proof_modules_named_exist_and_include_the_class_proof(name: str) -> None:
    cls = MECHANISMS[name]
    text = _page(name)
    named = set(re.findall(r"proofs/[a-z_]+\.py", text))
    assert cls.proof in named, f"{name}: the Proof section must name {cls.proof}"
    assert cls.proof in _section(text, "Proof")
    missing = sorted(p for p in named if not (ROOT / p).is_file())
    assert not missing, f"{name}: names proof modules that do not exist: {missing}"
    assert f"dpref prove --mechanism {name}" in _section(text, "Proof")


@pytest.mark.parametrize("name", NAMES)
def test_citations_match_citation_cff(name: str) -> None:
    titles, dois = _cff_references()
    cited = _citations(_page(name))
    assert cited, f"{name}: no citation"
    unknown = [
        title
        for title, page_dois in cited
        if _norm(title) not in titles
        and not (page_dois & dois)
        and _norm(title) not in PENDING_CITATIONS
    ]
    assert not unknown, f"{name}: cites papers CITATION.cff does not list: {unknown}"
    assert "One line:" in _section(_page(name), "Citation")


def test_pending_citations_are_cited_somewhere() -> None:
    cited = {_norm(title) for name in NAMES for title, _ in _citations(_page(name))}
    assert PENDING_CITATIONS <= cited, sorted(PENDING_CITATIONS - cited)


def test_citation_parsers_on_a_planted_page() -> None:
    text = (
        "## Citation\n\n* A. B. *Private and Continual Release of Statistics.* TISSEC 2011.\n"
        "* C. D. *A Paper Nobody Lists.* 2020. DOI 10.1145/1806689.1806787.\n\nOne line: x\n"
    )
    (first, first_dois), (second, second_dois) = _citations(text)
    assert not first_dois
    titles, dois = _cff_references()
    assert _norm(first) in titles
    assert _norm(second) not in titles and second_dois <= dois and second_dois


def test_index_links_every_page() -> None:
    text = _page("index")
    for name in NAMES:
        assert f"]({name}.md)" in text, f"index does not link {name}.md"
        assert f"`{MECHANISMS[name].__name__}`" in text


@pytest.mark.parametrize(
    "page", [*(f"mechanisms/{n}.md" for n in [*NAMES, "index"]), "pitfalls.md"]
)
def test_relative_links_resolve(page: str) -> None:
    path = ROOT / "docs" / page
    targets = re.findall(r"\]\(([^)#:\s]+\.md)(?:#[^)]*)?\)", path.read_text(encoding="utf-8"))
    broken = sorted({t for t in targets if not (path.parent / t).resolve().is_file()})
    assert not broken, f"{page}: broken links {broken}"


def test_pitfalls_page_covers_the_issue_list() -> None:
    text = (ROOT / "docs" / "pitfalls.md").read_text(encoding="utf-8")
    headings = re.findall(r"^## (.+?)\s*$", text, flags=re.M)
    needed = (
        "⌊log₂T⌋ + 1",
        "Floating-point Laplace",
        "Redrawn noise",
        "Replication-based range universes",
        "Canonical node order",
        "Float summation of decayed weights",
        "zCDP does not imply μ-GDP",
        "beyond the horizon",
    )
    for phrase in needed:
        assert any(phrase in h for h in headings), f"pitfalls.md: no section on {phrase!r}"
    for heading in headings:
        body = _section(text, heading)
        assert re.search(r"\]\([^)]+\.md", body), f"pitfalls.md '{heading}': no in-depth link"


@pytest.mark.parametrize("name", NAMES)
def test_topic_page_links_the_card(name: str) -> None:
    docs = MECHANISMS[name].docs
    assert docs is not None
    text = (ROOT / docs).read_text(encoding="utf-8")
    assert f"](mechanisms/{name}.md)" in text, f"{docs} does not link mechanisms/{name}.md"
