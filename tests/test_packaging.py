"""The package looks after itself: the license file matches the metadata, one version
everywhere, a valid CITATION.cff, and an sdist that carries everything its tests need.

The sdist check builds the archive (``python -m build --sdist``, an isolated build: pip
fetches the ``[build-system]`` requirements) and reads its member list against what the
test files import and read — found by scanning ``tests/*.py``, so a new helper module or
data file is held to it without being named here.  The slow part (``-m slow``) unpacks
the sdist and runs a subset of its tests from the unpacked tree alone.
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
import tarfile
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml

import dpref

ROOT = Path(__file__).resolve().parents[1]
TESTS = ROOT / "tests"
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
PROJECT = PYPROJECT["project"]

ALWAYS = (
    "LICENSE",
    "CHANGELOG.md",
    "CITATION.cff",
    "README.md",
    "pyproject.toml",
    "tests/conftest.py",
    "tests/strategies.py",
    "proofs/__init__.py",
    "dpref/py.typed",
)
"""Files the sdist must hold whatever the tests read (the issue's list)."""


# ------------------------------------------------------------ license, versions
def test_the_license_file_matches_the_metadata() -> None:
    text = (ROOT / "LICENSE").read_text()
    assert text.lstrip().startswith("Apache License\n                           Version 2.0")
    assert "TERMS AND CONDITIONS FOR USE, REPRODUCTION, AND DISTRIBUTION" in text
    assert "END OF TERMS AND CONDITIONS" in text
    assert PROJECT["license"] == "Apache-2.0"  # an SPDX expression, not a table
    assert PROJECT["license-files"] == ["LICENSE"]
    assert not [c for c in PROJECT["classifiers"] if c.startswith("License ::")]
    requires = PYPROJECT["build-system"]["requires"]
    floor = next(r for r in requires if r.startswith("setuptools"))
    assert re.fullmatch(r"setuptools>=(\d+)(\.\d+)*", floor)
    assert int(floor.split(">=")[1].split(".")[0]) >= 77  # reads SPDX `license`


def _changelog_version() -> str:
    heading = next(
        line for line in (ROOT / "CHANGELOG.md").read_text().splitlines() if line.startswith("## ")
    )
    match = re.match(r"## \[?(\d+\.\d+\.\d+\S*?)\]?( |$)", heading)
    assert match, f"the top changelog section names no version: {heading!r}"
    return match.group(1)


def test_one_version_everywhere() -> None:
    version = PROJECT["version"]
    assert dpref.__version__ == version
    assert _changelog_version() == version
    assert str(yaml.safe_load((ROOT / "CITATION.cff").read_text())["version"]) == version


# ------------------------------------------------------------ CITATION.cff
CFF = yaml.safe_load((ROOT / "CITATION.cff").read_text())

CITED = {
    "Private and Continual Release of Statistics": "Chan",
    "Differential Privacy under Continual Observation": "Dwork",
    "Efficient Use of Differentially Private Binary Trees": "Honaker",
    "Private Decayed Predicate Sums on Streams": "Bolot",
    "Count on Your Elders: Laplace vs Gaussian Noise": "Andersson",
    "A Smooth Binary Mechanism for Efficient Private Continual Observation": "Andersson",
    "Efficient and Near-Optimal Noise Generation for Streaming Differential Privacy": "Dvijotham",
    "Gaussian Differential Privacy": "Dong",
    "The Discrete Gaussian for Differential Privacy": "Canonne",
    "Optimal Quantile Approximation in Streams": "Karnin",
    "On Significance of the Least Significant Bits for Differential Privacy": "Mironov",
    "Detecting Violations of Differential Privacy": "Ding",
    "Tight Auditing of Differentially Private Machine Learning": "Nasr",
}
"""Papers dpref implements that the citation must list (title: first author)."""


def _person_or_entity(author: Any) -> bool:
    return isinstance(author, dict) and (
        bool(author.get("family-names")) or bool(author.get("name"))
    )


def test_citation_is_cff_1_2_0() -> None:
    """The keys CFF 1.2.0 requires, with the types its schema gives them."""
    assert CFF["cff-version"] == "1.2.0"
    assert isinstance(CFF["message"], str) and CFF["message"]
    assert isinstance(CFF["title"], str) and CFF["title"].startswith("dpref")
    assert CFF["type"] == "software" and CFF["license"] == PROJECT["license"]
    assert CFF["authors"] and all(_person_or_entity(a) for a in CFF["authors"])
    allowed = {"article", "conference-paper", "book", "report", "software", "patent"}
    for ref in CFF["references"]:
        assert ref["type"] in allowed, ref
        assert isinstance(ref["title"], str) and ref["title"], ref
        assert ref["authors"] and all(_person_or_entity(a) for a in ref["authors"]), ref
        assert isinstance(ref["year"], int) and 1900 < ref["year"] < 2100, ref
        if "doi" in ref:
            assert re.fullmatch(r"10\.\d{4,9}/\S+", ref["doi"]), ref
        for ident in ref.get("identifiers", []):
            assert ident["type"] in {"doi", "url", "swh", "other"}, ref
            assert re.fullmatch(r"arXiv:\d{4}\.\d{4,5}", ident["value"]), ref
        if "conference" in ref:
            assert ref["conference"]["name"], ref


def test_citation_lists_the_papers_dpref_implements() -> None:
    listed = {ref["title"]: ref["authors"][0].get("family-names") for ref in CFF["references"]}
    assert {t: listed.get(t) for t in CITED} == CITED
    assert len(listed) == len(CFF["references"])  # no paper twice


# ------------------------------------------------------------ the sdist
def _joined(node: ast.AST) -> str | None:
    """``"a" / "b" / "c"`` (a chain of string constants joined by ``/``) as ``a/b/c``."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
        right = _joined(node.right)
        left = _joined(node.left)
        if right is None:
            return None
        return right if left is None else f"{left}/{right}"
    return None


def _repo_files(path: Path) -> list[str]:
    """The files under ``path`` (one file: itself) relative to the root, caches left out."""
    if path.is_file():
        return [path.relative_to(ROOT).as_posix()]
    return sorted(
        p.relative_to(ROOT).as_posix()
        for p in path.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and p.suffix not in (".pyc", ".pyo")
    )


def needed_by_tests() -> set[str]:
    """The repository files the tests import or name: local modules of ``tests/`` and
    every string (or ``/``-joined chain of strings) that is a path under the root or under
    ``tests/``."""
    local = {p.stem for p in TESTS.glob("*.py")}
    needed: set[str] = set(ALWAYS)
    for source in sorted(TESTS.glob("*.py")):
        needed.add(source.relative_to(ROOT).as_posix())
        tree = ast.parse(source.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                needed |= {f"tests/{a.name}.py" for a in node.names if a.name in local}
            elif isinstance(node, ast.ImportFrom) and node.module in local and not node.level:
                needed.add(f"tests/{node.module}.py")
            text = _joined(node)
            if not text or len(text) > 200 or not re.fullmatch(r"[\w./-]+", text):
                continue
            if not re.search(r"[A-Za-z]", text) or text.strip("./") == "":
                continue
            for base in (ROOT, TESTS):
                candidate = (base / text).resolve()
                if candidate.exists() and ROOT in candidate.parents:
                    needed |= set(_repo_files(candidate))
    outside = {".git", ".venv", "build", "dist", ".pytest_cache", ".mypy_cache", ".ruff_cache"}
    return {n for n in needed if n.split("/")[0] not in outside}


def _build_sdist(out: Path) -> Path:
    done = subprocess.run(
        [sys.executable, "-m", "build", "--sdist", "--outdir", str(out), str(ROOT)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    (archive,) = out.glob("dpref-*.tar.gz")
    return archive


@pytest.fixture(scope="module")
def sdist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("build", reason="the dev extra installs build")
    return _build_sdist(tmp_path_factory.mktemp("sdist"))


def _members(archive: Path) -> set[str]:
    with tarfile.open(archive) as tar:
        names = tar.getnames()
    prefix = names[0].split("/")[0] + "/"
    return {n[len(prefix) :] for n in names if n.startswith(prefix)}


def test_the_scan_finds_the_helpers_and_data() -> None:
    """Power: the scan sees the helper modules and data files the tests really use."""
    needed = needed_by_tests()
    for helper in ("audit_targets", "gaussian_targets", "injectable_targets", "hostile_targets"):
        assert f"tests/{helper}.py" in needed
    assert "docs/examples/sqrt-T8.json" in needed and "pyproject.toml" in needed
    assert not [n for n in needed if "__pycache__" in n]


def test_the_sdist_holds_everything_the_tests_need(sdist: Path) -> None:
    members = _members(sdist)
    missing = sorted(needed_by_tests() - members)
    assert missing == []
    for tree in ("tests", "docs", "proofs", "dpref/data"):
        assert not sorted(set(_repo_files(ROOT / tree)) - members), tree
    if (ROOT / "mkdocs.yml").exists():
        assert "mkdocs.yml" in members
    assert not [m for m in members if "__pycache__" in m or m.endswith(".pyc")]


SDIST_SUBSET = (
    "tests/test_structure.py",
    "tests/test_packaging.py",
    "tests/test_cli_help.py",
    "tests/test_verify_run.py",
    "tests/test_golden.py",
    "tests/test_factorization.py",
    "tests/test_audit_isolation.py",
)
"""The tests run from the unpacked sdist: layout and entry points, packaging, the CLI,
verify, the shipped data (golden vectors, docs examples) and the helper target modules."""


@pytest.mark.slow
def test_the_unpacked_sdist_passes_its_tests(sdist: Path, tmp_path: Path) -> None:
    with tarfile.open(sdist) as tar:
        tar.extractall(tmp_path, filter="data")
    (tree,) = tmp_path.glob("dpref-*")
    env = {**os.environ, "PYTHONPATH": str(tree)}
    where = subprocess.run(
        [sys.executable, "-P", "-c", "import dpref; print(dpref.__file__)"],
        capture_output=True,
        text=True,
        cwd=tree,
        env=env,
        check=True,
    )
    assert Path(where.stdout.strip()).is_relative_to(tree)  # not the checkout's dpref
    done = subprocess.run(
        [sys.executable, "-P", "-m", "pytest", "-q", "-n", "0", "-p", "no:cacheprovider"]
        + [t for t in SDIST_SUBSET if (tree / t).exists()]
        + ["-k", "not unpacked_sdist"],
        capture_output=True,
        text=True,
        cwd=tree,
        env=env,
        timeout=1800,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
