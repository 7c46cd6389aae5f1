"""The best BlueTree design per horizon over ``BlueTree.frontier_variants`` (not a test).

Usage: ``python tests/blue_frontier_table.py pure 4 8 12 16 20`` (ε = 1) or
``python tests/blue_frontier_table.py zcdp 4 8 12 16 20`` (ρ = 1/2): for each T = 2^e, the
exact mean and exact max of every variant (``objective``), then the design with the least
max and the one with the least mean.
"""

from __future__ import annotations

import sys
import time
from fractions import Fraction
from typing import Any

from dpref import BlueTree


def main(argv: list[str]) -> None:
    privacy = argv[0]
    budget: dict[str, Any] = {"epsilon": 1} if privacy == "pure" else {"rho": Fraction(1, 2)}
    for e in (int(x) for x in argv[1:]):
        T = 2**e
        start = time.process_time()
        rows = []
        for kw in BlueTree.frontier_variants(T):
            m = BlueTree(horizon=T, **budget, **kw)
            rows.append((m.objective("max"), m.objective("mean"), kw))
        bmax = min(rows, key=lambda r: (r[0], r[1]))
        bmean = min(rows, key=lambda r: (r[1], r[0]))
        print(
            f"{privacy} T=2^{e}: best max {float(bmax[0]):.2f} (mean {float(bmax[1]):.2f}) "
            f"{bmax[2]}; best mean {float(bmean[1]):.2f} (max {float(bmean[0]):.2f}) "
            f"{bmean[2]}; {len(rows)} designs, {time.process_time() - start:.0f} s CPU",
            flush=True,
        )


if __name__ == "__main__":
    main(sys.argv[1:])
