"""Shared by run_test1.py and run_test2.py: run a paper case with the three schemes, draw it.

The figure: the upper-layer thickness h1 at t_end for Roe, IR-Roe and PVM-IFCP
(one colour scale), and underneath a profile that overlays the three schemes.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

from fvswe import casefile
from fvswe.errors import FvsweError
from fvswe.output import original_cells
from fvswe.plot import panel

SCHEMES = ("roe", "ir-roe", "pvm-ifcp")
STYLE = {"roe": "C0", "ir-roe": "C1", "pvm-ifcp": "C2"}


def run(case: str, args) -> dict:
    """One finished Simulation per scheme."""
    spec = casefile.from_case(case).with_overrides(
        backend=args.backend, dtype=args.dtype, order=args.order, mesh=args.mesh
    )
    mesh = spec.load_mesh()
    sims = {}
    for scheme in SCHEMES:
        sim = spec.with_overrides(scheme=scheme).simulation(mesh)
        start = time.perf_counter()
        summary = sim.run(spec.t_end)
        print(f"{case} {scheme:>8}: {summary.steps} steps, {time.perf_counter() - start:.2f} s "
              f"({sim.backend.name}, {sim.dtype}, {mesh.n_cells} cells)")  # fmt: skip
        sims[scheme] = sim
    return sims


def draw(case: str, sims: dict, profile: Callable, path: Path) -> None:
    """Three h1 maps over one profile panel; saved as a PNG."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(14, 8.4), layout="constrained")
    top, bottom = fig.subfigures(2, 1, height_ratios=[1.15, 1])
    maps = top.subplots(1, 3)
    lo = min(s.fields()["h1"].min() for s in sims.values())
    hi = max(s.fields()["h1"].max() for s in sims.values())
    for ax, (scheme, sim) in zip(maps, sims.items(), strict=True):
        im = panel(ax, sim.mesh.nodes, original_cells(sim.mesh), "h1", sim.fields()["h1"])
        im.set_clim(lo, hi)
        ax.set_title(f"{scheme}: upper layer thickness h1", fontsize=10)
    ax = bottom.subplots()
    profile(ax, sims)
    ax.grid(alpha=0.3)
    ax.legend()
    sim = next(iter(sims.values()))
    fig.suptitle(f"{case} at t = {sim.t:g} s on {sim.mesh.n_cells} triangles ({sim.dtype})")
    fig.savefig(path, dpi=100)
    print(f"wrote {path}")


def main(case: str, profile: Callable, argv=None) -> int:
    p = argparse.ArgumentParser(description=f"Run {case} with the three schemes and draw it.")
    p.add_argument("--mesh", help="mesh file or family member (default: square-4k)")
    p.add_argument("--backend", default="auto", choices=("cpu", "gpu", "auto"))
    p.add_argument("--dtype", default="float64", choices=("float64", "float32"))
    p.add_argument("--order", default="rcm", help="cell ordering (results do not depend on it)")
    p.add_argument("-o", "--output", default=f"{case}.png", help="PNG to write")
    args = p.parse_args(argv)
    if args.mesh:
        args.mesh = {"file": args.mesh}
    try:
        draw(case, run(case, args), profile, Path(args.output))
    except FvsweError as exc:
        print(f"{Path(sys.argv[0]).name}: error: {exc}", file=sys.stderr)
        return 2
    return 0
