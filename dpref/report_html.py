"""Reports in a notebook: a small HTML table built from a report's own text form.

Every report users print (:class:`~dpref.audit.AuditReport`, the conform, exact-audit and
sweep reports, :class:`~dpref.plan.PlanReport`, :class:`~dpref.frontier.FrontierReport`)
has ``summary()``, a short multi-line text; :class:`HtmlSummary` gives it
``_repr_html_``, which Jupyter shows instead of the dataclass repr.  The table is that
same text, one row per line: a line ``key  value`` (the key, then two or more spaces)
becomes a header cell and a value cell, any other line one value cell; every cell is
escaped with :func:`html.escape`, so a target name or a finding holding ``<`` or ``&``
prints as written and cannot inject markup.
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence

__all__ = ["HtmlSummary", "html_table", "summary_rows", "summary_table"]

_KEYED = re.compile(r"^(\S+(?: \S+)*?) {2,}(\S.*)$")
"""``key  value``: a key of words separated by single spaces, then at least two spaces."""
_CELL = "text-align:left;vertical-align:top;font-family:monospace;white-space:pre-wrap"


def summary_rows(text: str) -> list[tuple[str, str]]:
    """``(key, value)`` per non-empty line of ``text``; the key is empty for a line that is
    indented or has no ``key  value`` form (the value keeps its indentation).  A key padded
    to the column the other keyed lines use, with one space left (``lower bound ε ≥ …``
    beside ``verdict     …``), is split at that column too."""
    lines = [line.rstrip() for line in text.splitlines() if line.strip()]
    matches = [_KEYED.match(line) for line in lines]
    starts = [m.start(2) for m in matches if m is not None]
    column = max(set(starts), key=starts.count) if starts else 0
    rows: list[tuple[str, str]] = []
    for line, m in zip(lines, matches, strict=True):
        if m is not None:
            rows.append((m.group(1), m.group(2)))
        elif (
            column > 1
            and len(line) > column
            and not line[0].isspace()
            and line[column - 1] == " "
            and not line[column].isspace()
            and ":" not in line[:column]
        ):
            rows.append((line[:column].rstrip(), line[column:]))
        else:
            rows.append(("", line))
    return rows


def html_table(
    title: str, rows: Sequence[Sequence[str]], header: Sequence[str] | None = None
) -> str:
    """An HTML table with a caption; every string is escaped.  A row of two cells whose
    first is a key is drawn as header cell + value cell."""
    e = html.escape
    parts = [f'<table class="dpref-report"><caption style="text-align:left">{e(title)}</caption>']
    if header is not None:
        cells = "".join(f'<th style="{_CELL}">{e(h)}</th>' for h in header)
        parts.append(f"<thead><tr>{cells}</tr></thead>")
    parts.append("<tbody>")
    for row in rows:
        if header is None and len(row) == 2:
            key, value = row
            if key:
                cells = f'<th style="{_CELL}">{e(key)}</th><td style="{_CELL}">{e(value)}</td>'
            else:
                cells = f'<td colspan="2" style="{_CELL}">{e(value)}</td>'
        else:
            cells = "".join(f'<td style="{_CELL}">{e(c)}</td>' for c in row)
        parts.append(f"<tr>{cells}</tr>")
    parts.append("</tbody></table>")
    return "".join(parts)


def summary_table(title: str, text: str) -> str:
    """The HTML table of a report's text form (:func:`summary_rows`)."""
    return html_table(title, summary_rows(text))


class HtmlSummary:
    """Mixin: ``_repr_html_`` from the class's ``summary()`` (no fields, no ``__init__``,
    so frozen dataclasses may inherit it)."""

    __slots__ = ()

    def summary(self) -> str:
        """A short multi-line text: the first line says what the report established."""
        raise NotImplementedError

    def _repr_html_(self) -> str:
        """The :meth:`summary` as an HTML table (Jupyter's rich display)."""
        return summary_table(type(self).__name__, self.summary())
