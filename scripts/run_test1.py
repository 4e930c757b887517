"""Test 1 of the renumbering paper (internal circular dam break): run it, draw its figure.

    python scripts/run_test1.py [--mesh square-16k] [--backend cpu] [-o test1.png]

Maps of h1 at t = 0.1 s for the three schemes, and h1 against the distance
from the centre (each dot a cell): the collapsing cylinder of heavy fluid and
its radially symmetric front.
"""

from __future__ import annotations

import sys

import numpy as np
from paper_figure import SCHEMES, STYLE, main


def profile(ax, sims) -> None:
    for scheme in SCHEMES:
        f = sims[scheme].fields()
        ax.plot(np.hypot(f["x"], f["y"]), f["h1"], ".", ms=2.5, color=STYLE[scheme],
                label=scheme)  # fmt: skip
    r = np.linspace(0, 5 * np.sqrt(2), 400)
    ax.plot(r, np.where(r > 1.5, 4.0, 0.5), "k--", lw=1, label="initial")
    ax.set_xlabel("distance from the centre r [m]")
    ax.set_ylabel("h1 [m]")


if __name__ == "__main__":
    sys.exit(main("test1", profile))
