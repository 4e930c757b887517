"""A bump of the bed moving at constant speed: fvswe against the linear long waves of
:func:`fvswe.exact.moving_bed` (docs/validation.md, "A moving bed"; docs/SCHEMES.md §17).

    python benchmarks/moving_bed.py [--nx 100 200 400 800 1600] [--speeds 0.5 1.5]
                                    [--integrator euler] [--json out.json]

A 400 m strip of one row of quads (exactly 1-D), still water ``DEPTH`` deep, walls; a 1-D
slide (uniform across) of height ``BUMP`` (1e-3 of the depth) and half-length ``HALF``
starts at 200 m, under water at rest, and moves at ``speed`` times the long-wave speed
``c``; at ``T_END`` the free waves are still inside. The L1 error of eta (m^2 per m of
width) against the linear solution for the slide's profile ``BUMP (1 - (s/HALF)^2)^3``
falls at first order (``hll-wd``, CFL 0.9); the nonlinear terms, ``O(BUMP / DEPTH)``
smaller, stay below the discretisation error at these resolutions. Prints the table and
writes it as JSON with ``--json``; tests/test_slide.py runs :func:`strip_error`.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from fvswe import Simulation  # noqa: E402
from fvswe.exact import moving_bed  # noqa: E402
from fvswe.grid import Grid  # noqa: E402
from fvswe.slide import Slide, bed_at, slide_table  # noqa: E402

G = 9.81
DEPTH, BUMP, HALF = 10.0, 0.01, 20.0  # m: still water, the slide's height and half-length
LENGTH, START, T_END = 400.0, 200.0, 8.0  # m, m, s
C = math.sqrt(G * DEPTH)


def bump(s):
    """The slide's profile along its path (:func:`fvswe.physics.slide.shape` across a 1-D
    slide)."""
    u = np.maximum(1.0 - (np.asarray(s) / HALF) ** 2, 0.0)
    return BUMP * u**3


def strip_error(nx: int, speed: float = 0.5, integrator: str = "euler") -> float:
    """The L1 error of eta at ``T_END`` on ``nx`` cells for a slide at ``speed`` times c."""
    mesh = Grid(nx, 1, LENGTH / nx, 1.0).mesh()
    slide = Slide(thickness=BUMP, length=HALF, width=math.inf, start=(START, 0.5),
                  speed=speed * C)  # fmt: skip
    table = slide_table(slide, mesh.centroid, np.full(mesh.n_cells, DEPTH))
    rest = {"h": bed_at(table, 0.0, np.float64)}  # flat surface over the bed and the slide
    sim = Simulation(mesh, layers=1, H=DEPTH, initial=rest, slide=slide, scheme="hll-wd",
                     backend="cpu", order="none", integrator=integrator)  # fmt: skip
    sim.run(T_END)
    f = sim.fields()
    eta = moving_bed(f["x"] - START, T_END, bump, speed * C, DEPTH, G)[0]
    return float(np.sum(np.abs(f["eta"] - eta) * f["area"]))


def orders(errors: list[float]) -> list[float]:
    """Observed orders between successive halvings of the cell size."""
    return [math.log2(a / b) for a, b in zip(errors, errors[1:], strict=False)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nx", type=int, nargs="+", default=[100, 200, 400, 800, 1600])
    parser.add_argument("--speeds", type=float, nargs="+", default=[0.5, 1.5],
                        help="slide speeds in units of c = sqrt(g depth)")  # fmt: skip
    parser.add_argument("--integrator", default="euler")
    parser.add_argument("--json", type=Path, help="write the table here")
    args = parser.parse_args(argv)
    rows = []
    print("| U / c | cells | L1 error of eta (m^2) | order |\n|---|---|---|---|")
    for speed in args.speeds:
        start = time.perf_counter()
        errors = [strip_error(nx, speed, args.integrator) for nx in args.nx]
        for nx, err, order in zip(args.nx, errors, [None, *orders(errors)], strict=True):
            shown = "" if order is None else f"{order:.2f}"
            print(f"| {speed:g} | {nx} | {err:.3g} | {shown} |")
        rows.append({"speed": speed, "nx": args.nx, "errors": errors, "orders": orders(errors),
                     "seconds": time.perf_counter() - start})  # fmt: skip
    if args.json:
        setup = {"depth": DEPTH, "bump": BUMP, "half_length": HALF, "length": LENGTH,
                 "t_end": T_END, "scheme": "hll-wd", "integrator": args.integrator}  # fmt: skip
        args.json.write_text(json.dumps({"setup": setup, "runs": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
