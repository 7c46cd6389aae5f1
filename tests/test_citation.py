"""Citation metadata: CITATION.cff, the shipped ``dpref/data/citation.json`` and ``dpref cite``.

Everything here runs in-process and in well under a second.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import sys
import tomllib
from pathlib import Path

import pytest
import yaml

import dpref
from dpref.cli import main
from dpref.cli.cite import citation_data, render
from dpref.mechanisms import MECHANISMS

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
import citation_data as generator  # noqa: E402

CFF = yaml.safe_load((ROOT / "CITATION.cff").read_text(encoding="utf-8"))


def test_cff_version_is_the_package_version() -> None:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert str(CFF["version"]) == dpref.__version__ == pyproject["project"]["version"]


def test_cff_has_a_release_date_and_no_invented_location() -> None:
    released = dt.date.fromisoformat(str(CFF["date-released"]))
    assert released.year >= 2025
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    urls = pyproject["project"].get("urls", {})
    # A repository field only where pyproject.toml names one, and then the same one.
    for field in ("repository-code", "url"):
        if field in CFF:
            assert CFF[field] in urls.values(), f"CITATION.cff {field} not in [project.urls]"


def test_shipped_citation_data_is_current() -> None:
    committed = (ROOT / "dpref" / "data" / "citation.json").read_text(encoding="utf-8")
    assert committed == generator.render(), f"stale: run {generator.REGENERATE}"


def test_every_mechanism_cites_at_least_one_paper() -> None:
    table = citation_data()["mechanisms"]
    assert set(table) == set(MECHANISMS)
    keys = {r["key"] for r in citation_data()["references"]}
    assert len(keys) == len(citation_data()["references"]), "reference keys must be unique"
    for name, cited in table.items():
        assert cited and set(cited) <= keys, name


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_cite_bibtex_prints_a_software_entry(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(["cite", "--format", "bibtex"], capsys)
    assert code == 0 and not err
    assert out.startswith("@software{dpref")
    assert f"version = {{{dpref.__version__}}}" in out
    assert f"date = {{{CFF['date-released']}}}" in out
    assert out.count("@") == 1  # no paper without --mechanism


def test_cite_mechanism_adds_its_papers(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(["cite", "--mechanism", "binary"], capsys)
    assert code == 0
    assert "@article{chan2011private," in out and "doi = {10.1145/2043621.2043626}" in out
    assert "@inproceedings{dwork2010differential," in out and "pages = {715--724}" in out
    assert "Honaker" not in out  # only the papers of this mechanism
    # Braces balance in every entry (a BibTeX parser rejects the file otherwise).
    for entry in out.split("\n\n"):
        assert entry.count("{") == entry.count("}"), entry


def test_cite_cff_is_valid_yaml_with_the_references(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(["cite", "--format", "cff", "--mechanism", "sqrt"], capsys)
    assert code == 0
    doc = yaml.safe_load(out)
    assert doc["type"] == "software" and str(doc["version"]) == dpref.__version__
    assert str(doc["date-released"]) == str(CFF["date-released"])
    titles = {r["title"] for r in doc["references"]}
    assert "Almost Tight Error Bounds on Differentially Private Continual Counting" in titles


def test_cite_apa(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(["cite", "--format", "apa", "--mechanism", "elders"], capsys)
    assert code == 0
    first, *rest = out.strip().split("\n\n")
    assert re.match(r"The dpref developers\. \(\d{4}\)\. dpref: .*\(Version [\d.]+\)", first)
    assert rest and rest[0].startswith("Andersson, J. D., Pagh, R., Steiner, T. A., & Torkamani")


def test_cite_json_is_one_object(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(["cite", "--json", "--mechanism", "smooth"], capsys)
    assert code == 0
    payload = json.loads(out)
    assert payload["format"] == "bibtex" and payload["text"] == render("bibtex", ["smooth"])
    assert [r["key"] for r in payload["references"]] == ["andersson2023smooth"]


@pytest.mark.parametrize(
    ("argv", "named"),
    [
        (["cite", "--mechanism", "binray"], "--mechanism='binray'"),
        (["cite", "--format", "xml"], "--format"),
    ],
)
def test_cite_bad_input_is_one_line_exit_2(
    argv: list[str], named: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = _run(argv, capsys)
    assert code == 2 and not out
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("dpref: error: ") and named in lines[0], err
    if "binray" in argv:
        assert "did you mean 'binary'" in err
