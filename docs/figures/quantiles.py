"""Regenerate docs/figures/quantiles.png: private against true quantiles over time.

    PYTHONPATH=. python docs/figures/quantiles.py

A seeded drifting stream of 10⁶ values over 2¹⁶ points (``dpref.sanitize.bench``'s
``seeded_stream`` with the drift spread over the whole stream) is written to a
temporary ``.npy`` file and run through ``dpref quantiles`` (ε = 1, blocks of 10⁴,
``--plot``); the command's JSON summary is printed.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import numpy as np

from dpref.sanitize.bench import seeded_stream
from dpref.sanitize.cli import main

OUT = Path(__file__).resolve().parent / "quantiles.png"


def build() -> int:
    """Write the stream, run the command, write the figure."""
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "stream.npy"
        np.save(source, seeded_stream(1_000_000, drift_items=1e6))
        return main(
            [
                f"--input={source}",
                "--domain=0:65535",
                "--epsilon=1",
                "--block-size=10000",
                "--q=0.01,0.1,0.5,0.9,0.99",
                "--seed=20261122",
                f"--plot={OUT}",
                "--json",
            ]
        )


if __name__ == "__main__":
    sys.exit(build())
