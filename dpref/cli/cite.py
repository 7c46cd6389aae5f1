"""``dpref cite [--format bibtex|cff|apa] [--mechanism NAME]``: how to cite dpref, and the papers
behind a mechanism.

The data is ``dpref/data/citation.json``, derived from ``CITATION.cff`` (the software and every
paper) and the mechanism cards' *Citation* sections (which papers a mechanism rests on) by
``python tests/citation_data.py --write``; tests/test_citation.py keeps the three in step.
"""

from __future__ import annotations

import argparse
import json
from functools import cache
from importlib.resources import files
from typing import Any

from dpref.errors import ParameterError
from dpref.validation import choose_from

__all__ = ["FORMATS", "add_parser", "citation_data", "render", "run"]

FORMATS = ("bibtex", "cff", "apa")
"""The output formats, the first the default."""


@cache
def citation_data() -> dict[str, Any]:
    """The shipped citation data (software, references, mechanism → reference keys)."""
    text = files("dpref").joinpath("data/citation.json").read_text(encoding="utf-8")
    data: dict[str, Any] = json.loads(text)
    return data


def add_parser(subparsers: Any) -> None:
    """Add the ``cite`` subcommand."""
    p = subparsers.add_parser(
        "cite",
        help="how to cite dpref (BibTeX, CFF or APA), and the papers behind a mechanism",
        description="Print the citation of this version of dpref; with --mechanism, also the "
        "papers the mechanism implements (from CITATION.cff and the mechanism's reference card).",
    )
    p.add_argument(
        "--format",
        default=FORMATS[0],
        choices=FORMATS,
        help="bibtex, cff (CITATION.cff YAML) or apa (default %(default)s)",
    )
    p.add_argument(
        "--mechanism",
        action="append",
        default=None,
        metavar="NAME",
        help="also cite the papers behind this mechanism (repeatable; a registered name)",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=run)


def _references(names: list[str]) -> list[dict[str, Any]]:
    data = citation_data()
    table: dict[str, list[str]] = data["mechanisms"]
    keys: list[str] = []
    for name in names:
        if name not in table:
            raise ParameterError(f"--mechanism={name!r}: {choose_from(name, sorted(table))}")
        keys += [k for k in table[name] if k not in keys]
    by_key = {r["key"]: r for r in data["references"]}
    return [by_key[k] for k in keys]


def _bib_escape(text: str) -> str:
    return text.replace("&", r"\&").replace("%", r"\%").replace("#", r"\#")


def _bib_people(people: list[dict[str, str]]) -> str:
    names = []
    for a in people:
        if "name" in a:
            names.append("others" if a["name"] == "et al." else "{" + a["name"] + "}")
        else:
            names.append(f"{a['family']}, {a['given']}")
    return " and ".join(names)


def _bibtex(software: dict[str, Any], refs: list[dict[str, Any]]) -> str:
    year, month, _ = software["date_released"].split("-")
    fields = [
        ("title", "{" + _bib_escape(software["title"]) + "}"),
        ("author", " and ".join("{" + a + "}" for a in software["authors"])),
        ("version", software["version"]),
        ("year", year),
        ("month", str(int(month))),
        ("date", software["date_released"]),
        ("license", software["license"]),
    ]
    fields += [(f, software[f]) for f in ("url", "doi") if software.get(f)]
    if software.get("repository_code"):
        fields.append(("repository", software["repository_code"]))
    entries = [_bib_entry("software", f"dpref{software['version'].replace('.', '')}", fields)]
    for r in refs:
        kind = "inproceedings" if r["type"] == "conference-paper" else "article"
        venue = "booktitle" if kind == "inproceedings" else "journal"
        rf = [("title", "{" + _bib_escape(r["title"]) + "}"), ("author", _bib_people(r["authors"]))]
        rf += [(venue, r["venue"])] if "venue" in r else []
        rf += [(f, str(r[f])) for f in ("year", "volume") if r.get(f) is not None]
        rf += [("number", str(r["issue"]))] if "issue" in r else []
        rf += [("pages", r["pages"].replace("–", "--"))] if "pages" in r else []
        rf += [("doi", r["doi"])] if "doi" in r else []
        if "arxiv" in r:
            rf += [("eprint", r["arxiv"]), ("archiveprefix", "arXiv")]
        entries.append(_bib_entry(kind, r["key"], rf))
    return "\n\n".join(entries)


def _bib_entry(kind: str, key: str, fields: list[tuple[str, str]]) -> str:
    body = ",\n".join(f"  {name} = {{{value}}}" for name, value in fields)
    return f"@{kind}{{{key},\n{body}\n}}"


def _apa_people(people: list[dict[str, str]]) -> str:
    names = [a["name"] if "name" in a else f"{a['family']}, {a['given']}" for a in people]
    if len(names) <= 1:
        return "".join(names)
    return ", ".join(names[:-1]) + ", & " + names[-1]


def _apa(software: dict[str, Any], refs: list[dict[str, Any]]) -> str:
    year = software["date_released"][:4]
    line = f"{', '.join(software['authors'])}. ({year}). {software['title']} (Version "
    line += f"{software['version']}) [Computer software]."
    for f in ("doi", "url", "repository_code"):
        if software.get(f):
            line += f" {'https://doi.org/' if f == 'doi' else ''}{software[f]}"
            break
    lines = [line]
    for r in refs:
        text = f"{_apa_people(r['authors'])} ({r.get('year', 'n.d.')}). {r['title']}."
        if "venue" in r:
            text += f" {r['venue']}"
            if "volume" in r:
                text += f", {r['volume']}" + (f"({r['issue']})" if "issue" in r else "")
            if "pages" in r:
                text += f", {r['pages']}"
            text += "."
        if "doi" in r:
            text += f" https://doi.org/{r['doi']}"
        elif "arxiv" in r:
            text += f" arXiv:{r['arxiv']}"
        lines.append(text)
    return "\n\n".join(lines)


def _yaml(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)  # a JSON string or number is a YAML scalar


def _cff(software: dict[str, Any], refs: list[dict[str, Any]]) -> str:
    out = [
        "cff-version: 1.2.0",
        f"message: {_yaml(software['message'])}",
        "type: software",
        f"title: {_yaml(software['title'])}",
        f"version: {_yaml(software['version'])}",
        f"date-released: {_yaml(software['date_released'])}",
        f"license: {software['license']}",
        "authors:",
        *(f"  - name: {_yaml(a)}" for a in software["authors"]),
    ]
    for field in ("repository_code", "url", "doi"):
        if software.get(field):
            out.append(f"{field.replace('_', '-')}: {_yaml(software[field])}")
    if refs:
        out.append("references:")
    for r in refs:
        out += [f"  - type: {r['type']}", f"    title: {_yaml(r['title'])}", "    authors:"]
        for a in r["authors"]:
            if "name" in a:
                out.append(f"      - name: {_yaml(a['name'])}")
            else:
                out.append(f"      - family-names: {_yaml(a['family'])}")
                out.append(f"        given-names: {_yaml(a['given'])}")
        if r.get("year") is not None:
            out.append(f"    year: {r['year']}")
        if "doi" in r:
            out.append(f"    doi: {r['doi']}")
        if "arxiv" in r:
            out.append(f"    url: {_yaml('https://arxiv.org/abs/' + r['arxiv'])}")
    return "\n".join(out)


def render(fmt: str = "bibtex", mechanisms: list[str] | None = None) -> str:
    """The citation text in ``fmt``; with ``mechanisms``, their papers follow the software."""
    if fmt not in FORMATS:
        raise ParameterError(f"--format={fmt!r}: {choose_from(fmt, list(FORMATS))}")
    refs = _references(mechanisms or [])
    software = citation_data()["software"]
    return {"bibtex": _bibtex, "cff": _cff, "apa": _apa}[fmt](software, refs)


def run(args: argparse.Namespace) -> int:
    """Print the citation (or one JSON object with the text and the structured entries)."""
    text = render(args.format, args.mechanism)
    if args.json:
        data = citation_data()
        payload = {
            "format": args.format,
            "text": text,
            "software": data["software"],
            "references": _references(args.mechanism or []),
        }
        print(json.dumps(payload, ensure_ascii=False))
    else:
        print(text)
    return 0
