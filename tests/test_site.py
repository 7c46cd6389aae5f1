"""The documentation site: no raw Sphinx role, no unrendered ``^{``, math where formulas are.

The default run checks the sources cheaply: every Sphinx role in dpref's docstrings is one the
griffe extension (docs_build/sphinx_roles.py) converts, the pages this check covers have no
``^{`` outside math, and the formula converter (docs_build/mathspans.py) on samples. The slow
test builds the site with ``mkdocs build --strict`` (as CI does) and scans the HTML.
"""

from __future__ import annotations

import inspect
import re
import subprocess
import sys
from pathlib import Path

import pytest

from dpref import Mechanism

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "docs_build"))
import mathspans  # noqa: E402
import sphinx_roles  # noqa: E402

RAW_ROLE = re.compile(r":(?:py:)?[a-z]+:`")
"""Any Sphinx role left in text (``:class:`X` ``), known to the converter or not."""

PENDING: frozenset[str] = frozenset()
"""Pages whose pseudo-LaTeX is not converted yet (none since issue 27: every page is math); the
checks skip a page named here, so a new page is covered from the start."""

CHANGELOG = ROOT / "CHANGELOG.md"
"""The changelog page's text: docs/changelog.md only includes it (pymdownx.snippets)."""


CONVERTED = ("index.md", "spec.md", "counting.md", "trees.md", "elders.md", "gaussian.md",
             "noise.md", "smooth.md", "decayed.md", "mechanisms/*.md", "proofs.md",
             "factorization.md", "quantiles.md", "pitfalls.md", "plans.md", "accounting.md",
             "auditing.md", "golden.md", "plan-format.md", "blue.md")  # fmt: skip
"""Pages whose formulas were rewritten as math: no formula may remain in a code span there."""


def _pages() -> list[Path]:
    pages = sorted(p for p in (ROOT / "docs").rglob("*.md") if p.name not in PENDING)
    return [*pages, CHANGELOG]


def _converted() -> list[Path]:
    return [*sorted(p for pattern in CONVERTED for p in (ROOT / "docs").glob(pattern)), CHANGELOG]


def _outside_fences(text: str) -> str:
    return re.sub(r"^([ \t]*)(```|~~~).*?^\1\2", "", text, flags=re.S | re.M)


def _outside_math_and_code(text: str) -> str:
    """Markdown ``text`` without fenced blocks, ``$$…$$``, ``$…$`` and code spans."""
    text = _outside_fences(text)
    text = re.sub(r"\$\$.*?\$\$", "", text, flags=re.S)
    text = re.sub(r"\$[^$\n]+\$", "", text)
    return re.sub(r"`[^`\n]+`", "", text)


def test_every_sphinx_role_in_the_docstrings_is_converted() -> None:
    # The roles occur only in docstrings and comments; converting whole files is the cheap
    # superset (no parsing), and every role the extension would see is in it.
    sources = {p: p.read_text(encoding="utf-8") for p in sorted((ROOT / "dpref").rglob("*.py"))}
    assert sum(len(RAW_ROLE.findall(t)) for t in sources.values()) > 200  # it sees the roles
    left = [
        (p.name, m) for p, t in sources.items() for m in RAW_ROLE.findall(sphinx_roles.convert(t))
    ]
    assert not left, left[:10]


def test_role_conversion() -> None:
    resolve = {"release": "dpref.Binary.release"}.get
    out = sphinx_roles.convert(
        "See :meth:`release`, :class:`~fractions.Fraction` and :func:`title <dpref.audit>`.",
        lambda t: resolve(t) or t,
    )
    assert out == (
        'See <autoref identifier="dpref.Binary.release" optional><code>release()</code></autoref>, '
        '<autoref identifier="fractions.Fraction" optional><code>Fraction</code></autoref> and '
        '<autoref identifier="dpref.audit" optional><code>title</code></autoref>.'
    )


@pytest.mark.parametrize(
    ("span", "tex"),
    [
        ("[t − 2^{lsb(t)} + 1, t]", r"[t - 2^{\operatorname{lsb}(t)} + 1, t]"),
        ("O(log^{1.5} T/ε)", r"O(\log ^{1.5} T/\varepsilon )"),
        ("L = ⌊log₂T⌋ + 1", r"L = \lfloor \log _{2}T\rfloor  + 1"),
        ("{2^{k−1}+1 … 2^k}", r"\{2^{k-1}+1 \dots  2^k\}"),
        ("√(2ρ)", r"\sqrt{2\rho}"),
        ("4ε/2^32", r"4\varepsilon /2^{32}"),
        ("Φ⁻¹(p₁_low)", r"\Phi ^{-1}(p_{1,\mathit{low}})"),
        # issue 27's last pages: a Unicode minus, a word, a Greek letter with its subscript,
        # parentheses or a ceiling is the whole exponent or index
        ("2^−64", r"2^{-64}"),
        ("μ_lb > √(2ρ)", r"\mu _{lb} > \sqrt{2\rho}"),
        ("μ²_claimed", r"\mu ^{2}_{\mathit{claimed}}"),
        ("pe^−ε₀", r"pe^{-\varepsilon _{0}}"),
        ("2^(k−1)", r"2^{k-1}"),
        ("2^⌈log₂W⌉", r"2^{\lceil \log _{2}W\rceil}"),
        ("Σ̂ + λI", r"\hat{\Sigma} + \lambda I"),  # a covariance matrix, not a sum
        ("z ~ N(0, σ²)", r"z \sim  N(0, \sigma ^{2})"),
        ("(ε′, δ↑)", r"(\varepsilon ', \delta \uparrow )"),
        ("A⁺B⁻", r"A^{+}B^{-}"),
    ],
)
def test_formula_spans_become_tex(span: str, tex: str) -> None:
    assert mathspans.is_math(span)
    assert mathspans.tex(span) == tex


@pytest.mark.parametrize(
    "span",
    [
        "dpref.Binary(epsilon=ε | rho=ρ, horizon=T)",
        "dpref release binary --epsilon ε",
        '"2^20"',
        "factorization_lower_bound(ρ, T)",
        "KaryTree(k=2)",
        "k=4: must be odd …",
        "sensitivity S(α)",
        "Binary.levels(2^k − 1)",
        "Fraction(σ_float)² ≥ σ²",
        "VIOLATION: …",
        "…",
        "≈ 0.59 (exact: 186 digits, sha256 2ae433fa2716)",
    ],
)
def test_code_spans_stay_code(span: str) -> None:
    assert not mathspans.is_math(span)
    assert mathspans.convert_markdown(f"a `{span}` b") == f"a `{span}` b"


def test_fenced_blocks_are_never_rewritten() -> None:
    text = "`2^{k}`\n\n```pycon\n>>> x  # `2^{k}`\n```\n"
    assert mathspans.convert_markdown(text) == "$2^{k}$\n\n```pycon\n>>> x  # `2^{k}`\n```\n"


@pytest.mark.parametrize("page", _pages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_page_has_no_pseudo_latex_outside_math(page: Path) -> None:
    rest = _outside_math_and_code(page.read_text(encoding="utf-8"))
    assert "^{" not in rest, page
    # A heading's math would reach the table of contents as raw TeX.
    headings = re.findall(r"^#+ .*$", _outside_fences(page.read_text(encoding="utf-8")), re.M)
    assert not [h for h in headings if "$" in h], page


@pytest.mark.parametrize("page", _converted(), ids=lambda p: str(p.relative_to(ROOT)))
def test_converted_page_has_no_formula_in_a_code_span(page: Path) -> None:
    with_backticks = re.sub(r"^([ \t]*)(```|~~~).*?^\1\2", "", page.read_text(), flags=re.S | re.M)
    spans = [s for s in re.findall(r"`([^`\n]+)`", with_backticks) if mathspans.is_math(s)]
    assert not spans, f"{page.name}: formulas still in code spans: {spans[:5]}"


def test_mechanism_api_page_lists_every_member_of_the_contract() -> None:
    text = (ROOT / "docs" / "api" / "mechanisms.md").read_text(encoding="utf-8")
    listed = set(re.findall(r"^ {10}- (\w+)$", text, flags=re.M))
    public = {n for n in vars(Mechanism) if not n.startswith("_")}
    public |= {n for n in inspect.get_annotations(Mechanism) if not n.startswith("_")}
    assert public <= listed, sorted(public - listed)
    # the contract comes first
    assert text.index("- release\n") < text.index("- nodes\n")


def _strip_rendered(html: str) -> str:
    html = re.sub(r'<(span|div) class="arithmatex">.*?</\1>', "", html, flags=re.S)
    return re.sub(r"<pre.*?</pre>", "", html, flags=re.S)


@pytest.mark.slow
@pytest.mark.ci
def test_built_site_has_no_raw_role_and_renders_the_math(tmp_path: Path) -> None:
    site = tmp_path / "site"
    mkdocs = Path(sys.executable).with_name("mkdocs")
    subprocess.run(
        [str(mkdocs), "build", "--strict", "--quiet", "--site-dir", str(site)],
        cwd=ROOT,
        check=True,
        capture_output=True,
    )
    pending = {f"{Path(p).stem}/index.html" for p in PENDING}
    problems = []
    for page in sorted(site.rglob("*.html")):
        html = page.read_text(encoding="utf-8")
        where = str(page.relative_to(site))
        roles = re.findall(r":(?:py:)?(?:class|func|meth|attr|mod|data|exc|obj):(?:<code>|`)", html)
        if roles:
            problems.append(f"{where}: {len(roles)} raw Sphinx roles")
        if where not in pending and "^{" in _strip_rendered(html):
            problems.append(f"{where}: unrendered ^{{")
    assert not problems, problems
    for card in sorted((site / "mechanisms").glob("*/index.html")):
        assert 'class="arithmatex"' in card.read_text(encoding="utf-8"), card


def test_docs_pages_named_in_docstrings_become_links() -> None:
    text = (
        "as (docs/spec.md §2.4) says; ``docs/spec.md`` and docs/nothere.md stay; [x](docs/spec.md)"
    )
    assert sphinx_roles.link_docs(text) == (
        "as ([docs/spec.md §2.4](../spec.md#s2.4)) says; ``docs/spec.md`` and docs/nothere.md "
        "stay; [x](docs/spec.md)"
    )
