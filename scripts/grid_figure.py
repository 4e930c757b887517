"""Shared by run_cgrid.py and run_mjos_drop.py: the command line, a recorded run, rows of maps.

A script names a single-layer grid case (docs/CASES.md §B, §C). ``--nx`` coarsens its
grid (square cells kept) so that a figure comes in seconds on a CPU. The
physical times are the published ones whatever the grid: a fixed time step
scales with the cell size (``Case.with_grid`` keeps the Courant number), so a
coarse grid takes fewer, longer steps to the same time.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from fvswe.cases import Case, get_case
from fvswe.errors import FvsweError
from fvswe.grid import Grid
from fvswe.output import original_cells
from fvswe.plot import panel
from fvswe.simulation import Simulation

#: Cells thinner than this (m) are drawn as dry.
DRY = 1e-3


def parser(description: str) -> argparse.ArgumentParser:
    """--backend, --nx, --dtype and -o, as every grid-case script takes them."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--backend", default="auto", choices=("cpu", "gpu", "auto"))
    p.add_argument(
        "--nx",
        type=int,
        metavar="N",
        help="cells along x, square cells (default: the published grid)",
    )
    p.add_argument("--dtype", default="float64", choices=("float64", "float32"))
    p.add_argument("-o", "--output", metavar="PNG", help="figure to write (default: <case>.png)")
    return p


@dataclass
class Run:
    """A finished run: the published case, the grid it ran on, and what was kept at each time."""

    case: Case
    grid: Grid
    sim: Simulation
    times: np.ndarray
    frames: list
    wall_s: float

    def map_row(
        self,
        axes,
        picks: Sequence[int],
        name: str,
        values: Callable,
        when: Callable,
        *,
        shared: bool = True,
    ):
        """One :func:`fvswe.plot.panel` of ``values(frame)`` per picked frame, each titled
        ``when(t)``; one colour scale if ``shared``, else each its own. Returns the artists."""
        nodes, cells = self.grid.mesh().nodes, original_cells(self.sim.mesh)
        data = [values(self.frames[i]) for i in picks]
        lo, hi = min(d.min() for d in data), max(d.max() for d in data)
        ims = []
        for ax, i, d in zip(axes, picks, data, strict=True):
            im = panel(ax, nodes, cells, name, d)
            if shared:
                im.set_clim(lo, hi)
            ax.set_title(f"{ax.get_title()}\n{when(self.times[i])}", fontsize=9)
            ims.append(im)
        return ims

    def at(self, t: float) -> int:
        """The index of the frame nearest time ``t``."""
        return int(np.argmin(np.abs(self.times - t)))

    def shade_dry(self, ax, h: np.ndarray) -> None:
        """Grey over the cells with ``h < DRY``."""
        from matplotlib.colors import ListedColormap

        dry = self.grid.as_array(h) < DRY
        g = self.grid
        ax.pcolormesh(
            g.x_nodes,
            g.y_nodes,
            np.ma.masked_where(~dry, dry),
            cmap=ListedColormap(["0.7"]),
            shading="flat",
        )

    def heading(self) -> str:
        """Case, grid, dtype and backend, for a suptitle."""
        g, s = self.grid, self.sim
        return (
            f"{self.case.name} on {g.nx}x{g.ny} cells of {g.dx:g} m "
            f"({s.scheme}, {s.dtype}, {s.backend.name})"
        )


def run(
    name: str,
    args,
    times,
    keep: Callable,
    *,
    every: int | None = None,
    probe: Callable | None = None,
) -> Run:
    """Run case ``name`` on ``args``' grid and backend to each of ``times`` in turn.

    ``keep(sim)`` is stored at each time; ``probe(sim)``, if given, is called
    every ``every`` steps in between. A fixed-step case stops at whole steps only
    (each time rounded to a multiple of its step), so no step is cut short.
    """
    case = get_case(name)
    sized = case.with_grid(args.nx)
    sim = sized.simulation(backend=args.backend, dtype=args.dtype)
    times = np.asarray(times, dtype=np.float64)
    if sized.dt is not None:
        times = np.unique(np.round(times / sized.dt)) * sized.dt
    frames = []
    start = time.perf_counter()
    for t in times:
        sim.run(float(t), check_every=every, callback=probe)
        frames.append(keep(sim))
    wall = time.perf_counter() - start
    drift = (sim.mass()[0] - sim.mass_initial[0]) / sim.mass_initial[0]
    grid = sized.grid()
    print(
        f"{name}: {sim.steps} steps to t = {sim.t:g} s in {wall:.2f} s ({sim.backend.name}, "
        f"{sim.dtype}, {grid.nx}x{grid.ny} cells), volume change {drift:.2e}"
    )
    return Run(case, grid, sim, times, frames, wall)


def save(fig, path: str | Path) -> None:
    fig.savefig(path, dpi=100)
    print(f"wrote {path}")


def guarded(fn: Callable[[], None]) -> int:
    """Run ``fn``; a user mistake prints one line and exits 2."""
    try:
        fn()
    except FvsweError as exc:
        print(f"{Path(sys.argv[0]).name}: error: {exc}", file=sys.stderr)
        return 2
    return 0
