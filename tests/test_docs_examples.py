"""Every code example in ``README.md`` and ``docs/`` is executed and its output compared.

The convention is in ``tests/docs_examples.py``: one test per page runs its ``pycon``,
``python``, ``console`` and ``bash`` blocks in order (a failure names the page, the line,
the command and a diff), one test per page checks that every fence declares a known
language, and every ``<!-- docs-test: skip REASON -->`` marker shows up as a skipped test
with its reason (``pytest -ra`` lists them).  ``docs/cli.md`` is generated from the real
parsers; a test compares it with the committed page.

Run one page by hand: ``python tests/docs_examples.py docs/auditing.md``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_reference import REGENERATE, cli_reference
from docs_examples import ROOT, Block, page_id, pages, parse, run_page

MAX_SKIPS = 8
"""At most a handful of blocks may be skipped (each one a command that takes minutes)."""

PAGES = pages()

SLOW_PAGES = {
    "docs/auditing.md": 3,
    "docs/golden.md": 3,
    "docs/mechanisms/kary.md": 2,
    "docs/reproductions.md": 3,
}
"""Pages whose whole run takes minutes of CPU (auditing.md alone ~120 s: about sixty
audits and conformance runs, each its own ``dpref`` process): the whole page is
``slow`` (CI runs it in its ``-m 'slow and ci'`` step); the default run executes its
first N runnable blocks (:func:`test_slow_page_opening_runs`)."""


def _page_param(page: Path) -> object:
    if page_id(page) in SLOW_PAGES:
        return pytest.param(page, marks=[pytest.mark.slow, pytest.mark.ci])
    return page


@pytest.mark.parametrize("page", [_page_param(p) for p in PAGES], ids=page_id)
def test_page_examples_run(page: Path, tmp_path: Path) -> None:
    failures = run_page(page, tmp_path)
    assert not failures, f"{len(failures)} example(s) in {page_id(page)} failed:\n\n" + "\n\n".join(
        failures
    )


@pytest.mark.parametrize("name", sorted(SLOW_PAGES))
def test_slow_page_opening_runs(name: str, tmp_path: Path) -> None:
    """The default-run companion of a slow page: its opening blocks, through the same
    sandbox and runners as the whole page."""
    failures = run_page(ROOT / name, tmp_path, limit=SLOW_PAGES[name])
    assert not failures, f"{len(failures)} example(s) in {name} failed:\n\n" + "\n\n".join(failures)


def test_slow_pages_exist() -> None:
    assert {page_id(p) for p in PAGES} >= set(SLOW_PAGES)


@pytest.mark.parametrize("page", PAGES, ids=page_id)
def test_page_fences_are_labelled(page: Path) -> None:
    from docs_examples import label_errors

    assert label_errors(page) == []


def _skipped() -> list[Block]:
    return [b for p in PAGES for b in parse(p) if b.skip is not None]


def test_skips_are_few() -> None:
    skipped = _skipped()
    assert len(skipped) <= MAX_SKIPS, "too many skipped blocks:\n" + "\n".join(
        f"{b.where}: {b.skip}" for b in skipped
    )


@pytest.mark.parametrize("block", _skipped(), ids=lambda b: b.where)
def test_skipped_block(block: Block) -> None:
    """Listed by ``pytest -ra`` with the marker's reason."""
    pytest.skip(f"{block.where}: {block.skip}")


def test_cli_reference_is_current() -> None:
    committed = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    assert committed == cli_reference(), f"docs/cli.md is out of date; regenerate: {REGENERATE}"
