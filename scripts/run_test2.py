"""Test 2 of the renumbering paper (two unstable layers over a bump): run it, draw its figure.

    python scripts/run_test2.py [--mesh square-16k] [--backend cpu] [-o test2.png]

Maps of h1 at t = 0.1 s for the three schemes, and a section along y = 0 of the
interface eta2 and the free surface eta1 over the bottom -H (cells within half a
metre of the axis): the heavy lower layer sliding under the light one across
the Gaussian bump.
"""

from __future__ import annotations

import sys

import numpy as np
from paper_figure import SCHEMES, STYLE, main

#: Cells whose barycentre lies this close to y = 0 make the section.
BAND = 0.5


def profile(ax, sims) -> None:
    for scheme in SCHEMES:
        f = sims[scheme].fields()
        near = np.abs(f["y"]) < BAND
        order = np.argsort(f["x"][near])
        x = f["x"][near][order]
        ax.plot(x, f["eta2"][near][order], "-", lw=1, color=STYLE[scheme],
                label=f"{scheme}: interface eta2")  # fmt: skip
        ax.plot(x, f["eta1"][near][order], ":", lw=1, color=STYLE[scheme],
                label=f"{scheme}: surface eta1")  # fmt: skip
    x = np.linspace(-5, 5, 400)
    ax.fill_between(x, -(1 - 1.5 * np.exp(-(x**2))), -1.2, color="0.75", label="bottom -H")
    ax.set_xlabel(f"x [m] (cells with |y| < {BAND} m)")
    ax.set_ylabel("elevation [m]")


if __name__ == "__main__":
    sys.exit(main("test2", profile))
