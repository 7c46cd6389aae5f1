"""Griffe extension: turn the Sphinx roles of dpref's numpy docstrings into cross-references.

dpref's docstrings are written for numpydoc, so they name objects with Sphinx roles
(``:class:`~fractions.Fraction` ``, ``:meth:`release` ``, ``:data:`EXACT` ``). mkdocstrings renders
docstrings as Markdown and knows no roles: left alone they reach the site as raw text. This
extension (loaded by mkdocs.yml through the Python handler's ``extensions`` option) rewrites every
role, once the whole package is loaded, into the tag mkdocstrings itself emits for signature
annotations: ``<autoref identifier="PATH" optional><code>TITLE</code></autoref>``.

* PATH is the role's target made absolute with griffe's own scoping (``release`` inside a class
  method resolves to that class's member, ``Mechanism.variance`` to the class in scope); a target
  griffe cannot resolve is kept as written.
* ``optional`` makes autorefs link the target when the site documents it and otherwise render the
  title as plain code (with the path as tooltip) — so an external name such as
  ``fractions.Fraction`` never breaks ``mkdocs build --strict``.
* TITLE follows Sphinx: ``~a.b.C`` shows ``C``; functions and methods get ``()``.

Pages named in prose (``docs/spec.md §2.4``) become links to the site's page and section.
Formula spans (``2^{lsb(t)}``, ``Lap(LΔ/ε)``) become math through docs_build/mathspans.py, as
on the pages.

``convert`` is a pure function so that tests/test_site.py can check every docstring cheaply.
"""

from __future__ import annotations

import html
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import griffe

# griffe loads this file by path (mkdocs.yml), so its sibling is found through sys.path.
sys.path.insert(0, str(Path(__file__).resolve().parent))
from mathspans import convert_markdown

ROLE = re.compile(r":(?:py:)?(class|func|meth|attr|mod|data|exc|obj|const):`(?P<body>[^`]+)`")
"""A Sphinx Python-domain role; the body is ``target``, ``~target`` or ``title <target>``."""

CALLABLE_ROLES = frozenset({"func", "meth"})


def convert(text: str, resolve: Callable[[str], str] | None = None) -> str:
    """Rewrite every Sphinx role of ``text`` as an optional autoref tag.

    ``resolve`` maps a target as written to an absolute identifier (default: unchanged).
    """

    def one(match: re.Match[str]) -> str:
        role, body = match.group(1), match.group("body").strip()
        explicit = re.fullmatch(r"(?P<title>.+?)\s*<(?P<target>[^>]+)>", body)
        if explicit:
            title, target = explicit.group("title"), explicit.group("target")
        else:
            target = body.lstrip("!")
            short = target.startswith("~")
            target = target.lstrip("~").lstrip(".")
            title = target.rsplit(".", 1)[-1] if short else target
            if role in CALLABLE_ROLES and not title.endswith(")"):
                title += "()"
        identifier = resolve(target) if resolve else target
        return (
            f'<autoref identifier="{html.escape(identifier)}" optional>'
            f"<code>{html.escape(title)}</code></autoref>"
        )

    return ROLE.sub(one, text)


DOCS = Path(__file__).resolve().parent.parent / "docs"
DOC_REF = re.compile(
    r"(?<![\w/`\"'\[<])(?<!\]\()docs/(?P<page>[\w/-]+\.md)(?P<section> §(?P<s>\d+(?:\.\d+)*))?"
)
"""A page of the site named in prose (``docs/spec.md §2.4``), to become a link."""


def link_docs(text: str, docs: Path = DOCS) -> str:
    """Turn ``docs/PAGE.md [§N]`` in prose (not in code) into a link from the API pages.

    The API pages live in ``docs/api/``, so the target is ``../PAGE.md``; a section number
    becomes the ``sN`` anchor when the page defines it (docs/spec.md does).
    """

    def one(match: re.Match[str]) -> str:
        page = docs / match.group("page")
        if not page.is_file():
            return match.group(0)
        target = f"../{match.group('page')}"
        if match.group("s") and f'<a id="s{match.group("s")}">' in page.read_text("utf-8"):
            target += f"#s{match.group('s')}"
        return f"[{match.group(0)}]({target})"

    parts = re.split(r"(``[^`]*``|`[^`]*`)", text)
    return "".join(p if p.startswith("`") else DOC_REF.sub(one, p) for p in parts)


def _resolver(obj: griffe.Object | griffe.Alias) -> Callable[[str], str]:
    """Resolve a role target the way Python would see the name from inside ``obj``."""

    def resolve(target: str) -> str:
        head, _, rest = target.partition(".")
        scopes: list[Any] = [obj]
        parent = obj.parent
        while parent is not None:
            scopes.append(parent)
            parent = parent.parent
        for scope in scopes:
            try:
                if head in scope.members:
                    member = scope.members[head]
                    base = member.target_path if member.is_alias else member.path
                else:
                    base = scope.resolve(head)
            except (griffe.NameResolutionError, griffe.AliasResolutionError, KeyError):
                continue
            return f"{base}.{rest}" if rest else base
        return target

    return resolve


class SphinxRoles(griffe.Extension):
    """Convert Sphinx roles in every docstring of the loaded package."""

    def on_package(self, *, pkg: griffe.Module, **kwargs: Any) -> None:
        seen: set[int] = set()
        stack: list[Any] = [pkg]
        while stack:
            obj = stack.pop()
            if id(obj) in seen or obj.is_alias:
                continue
            seen.add(id(obj))
            if obj.docstring is not None and ":" in obj.docstring.value:
                obj.docstring.value = convert(obj.docstring.value, _resolver(obj))
            if obj.docstring is not None:
                value = convert_markdown(obj.docstring.value, double=True)
                obj.docstring.value = link_docs(value)
            stack.extend(obj.members.values())
