"""A progress bar on stderr for long audits, via tqdm when it is installed.

tqdm is an optional dependency (``pip install dpref[audit]``); without it there is
simply no bar.  The bar appears only after about two seconds (``delay=2``), so short
runs print nothing, and it is never shown with ``--json`` or when stderr is not a
terminal (so logs and CI output stay clean).
"""

from __future__ import annotations

import sys
from typing import Any

from dpref.audit.reports.deadline import tick

__all__ = ["Progress"]

_DELAY_SECONDS = 2.0


class Progress:
    """``update(n)`` / ``close()``; a no-op unless enabled and tqdm is importable."""

    def __init__(self, *, total: int, enabled: bool, unit: str = "it", desc: str = "") -> None:
        self._bar: Any = None
        tick(0, total=total, unit=unit)  # the run's record, and its time budget
        if enabled:
            try:
                from tqdm import tqdm
            except ImportError:  # optional dependency: degrade to no bar
                return
            self._bar = tqdm(
                total=total,
                file=sys.stderr,
                delay=_DELAY_SECONDS,
                unit=unit,
                unit_scale=True,
                desc=desc or None,
                leave=False,
                disable=None,  # tqdm: no bar when stderr is not a terminal (logs, CI)
            )

    def update(self, n: int) -> None:
        """Advance by n."""
        if self._bar is not None:
            self._bar.update(n)
        tick(n)  # raises OutOfTime when the run's budget is spent (dpref/audit/reports/deadline.py)

    def close(self) -> None:
        """Remove the bar."""
        if self._bar is not None:
            self._bar.close()
            self._bar = None
