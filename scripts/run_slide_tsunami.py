"""Tsunami from a submarine slide: a dense lower-layer mound slides down a continental slope.

    python scripts/run_slide_tsunami.py [--n 80] [--t-end 300] [--r 0.5] [--scheme pvm-ifcp]
                                        [--backend cpu|gpu] [--eps-h 1] [--open]
                                        [-o FIGURE.png] [--json SUMMARY.json]

A synthetic plane (x, y) ocean, after the two-layer slide models of Landslide-HySEA
(Fernández-Nieto et al. 2008, "A new Savage-Hutter type model for submarine avalanches
and generated tsunami", J. Comput. Phys. 227; Macías et al. 2015/2017, the NTHMP
landslide benchmarks) without their Coulomb rheology: the slide is a fluid layer of
density ``rho2`` under the water (``rho1``), ``r = rho1/rho2 = 0.5``. The bed (``H``
positive down, :func:`depth`) rises westward as a beach of slope 1:40 to the land
(``x < 0``, dry: the upper layer vanishes there), 25 m deep at the shelf break
(x = 1 km), and falls down a continental slope of 0.15 to a 400 m deep plain
(x > 3.5 km). A paraboloid mound of slide material (60 m thick, 400 m radius,
:func:`mound`) rests on the slope at x = 1.8 km, y = 0, the water at rest above it;
released at t = 0 it slides downslope, pushing an elevation wave offshore ahead of its
front and leaving a depression above its starting place that reaches the shore as a
leading depression (the dipole of slide tsunamis; Grilli & Watts 2005, J. Waterway
Port Coastal Ocean Eng. 131). The wave runs up the beach: the upper layer wets and
dries the shore. Walls everywhere (each layer's volume is conserved to round-off and
the run checks it), or with ``--open`` a non-reflecting (characteristic) boundary
offshore (east), whose outflow is the change of the volumes.

``--n`` cells across the 4 km width, square cells (``dx = 4000/n``): the default 80
(50 m, 13 440 cells) runs on the CPU in about 10 s; the README's GPU resolution is
``--n 1000`` (4 m, 2.1 M cells). Gauges: the surface at an offshore point (x = 6 km)
and at the shore (1.9 m deep, x = 75 m), both on y = 0; the run-up is the highest bed
elevation ``-H`` of a cell whose upper layer is deeper than ``WET`` (1 cm).

The defaults are the ones that run: PVM-IFCP, ``eps_h`` = 1 m (docs/SCHEMES.md §8),
Manning n = 0.05 under the slide and interfacial c_i = 1e-3 (§14; the slide's
resistance, in place of HySEA's Coulomb friction), non-lagged Δt. Without friction the
slide's thin front, racing downslope under 200 m of water, is emptied within a step by
the wet formulas and the run stops at the clip (§13.4; seen with all three schemes on a
1:10 variant at 43-54 s), and at eps_h = 0.1 m PVM-IFCP clips the mound's rim within
seconds. As in run_strait.py, eps_h = 1 m keeps the thin rim on the positive side and
lies far below the slide's 60 m.
Measured on the CPU (1 thread), 300 s: ``--n 80`` 888 steps, run-up 0.6 m (the beach's
cells are 1.25 m high), offshore arrival 65 s against 64 s at sqrt(g H); ``--n 200``
(84 000 cells) 2148 steps, 50 s wall, run-up 2.25 m, volumes to 2.4e-15. Within the
300 s no wet cell dries (the flooded land keeps films above 1 cm; ``dried`` stays 0).
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np

from fvswe.boundary import Characteristic
from fvswe.grid import Grid
from fvswe.simulation import Simulation

G = 9.81
LAND, SEA, WIDTH = -400.0, 8000.0, 4000.0  # domain x in [LAND, SEA], y in [-WIDTH/2, WIDTH/2]
BEACH, SHELF, SLOPE, PLAIN = 0.025, 1000.0, 0.15, 400.0  # slopes, shelf break (x), plain depth
X0, R0, A0 = 1800.0, 400.0, 60.0  # the mound: centre x, radius, thickness (m)
GAUGES = {"offshore": 6000.0, "shore": 75.0}  # x of the gauges, on y = 0
WET = 0.01  # upper-layer depth (m) that counts as wet for the run-up


def depth(x, y=None):
    """``H`` (m, positive down): beach 1:10 through the shoreline x = 0, slope 0.15 from the
    shelf break (x = 1 km, 100 m) to the plain (400 m)."""
    x = np.asarray(x, dtype=float)
    return np.minimum(np.where(x < SHELF, BEACH * x, BEACH * SHELF + SLOPE * (x - SHELF)), PLAIN)


def mound(x, y):
    """The slide's thickness ``h2``: a paraboloid cap of ``A0`` over radius ``R0`` at (X0, 0)."""
    return A0 * np.maximum(0.0, 1.0 - ((x - X0) ** 2 + y**2) / R0**2)


def travel_time(x0: float, x1: float, g: float = G) -> float:
    """Long-wave travel time ``∫ dx / sqrt(g H)`` along y = 0 from ``x0`` to ``x1`` (s)."""
    x = np.linspace(x0, x1, 4001)
    return float(np.trapezoid(1.0 / np.sqrt(g * depth(x)), x))


def build(n: int, *, r: float = 0.5, scheme: str = "pvm-ifcp", backend: str = "cpu",
          eps_h: float = 1.0, open_sea: bool = False, order: str = "none",
          manning: float = 0.05, interfacial: float = 0.001, cfl: float = 0.9,
          dt_mode: str = "nonlagged") -> Simulation:  # fmt: skip
    """The set-up on ``n`` cells across the width (square cells), at rest, released at t = 0."""
    dx = WIDTH / n
    grid = Grid(int(round((SEA - LAND) / dx)), n, dx, dx, origin=(LAND, -WIDTH / 2))
    x, y = grid.centres()
    H = depth(x)
    h2 = mound(x, y)
    h1 = np.maximum(H, 0.0) - h2
    walls = dict.fromkeys(("west", "east", "south", "north"), "wall")
    if open_sea:
        walls["east"] = Characteristic()
    return Simulation(grid.mesh(), layers=2, scheme=scheme, g=G, r=r, H=grid.from_array(H),
                      initial={"h1": grid.from_array(h1), "h2": grid.from_array(h2)},
                      boundary=walls, backend=backend, eps_h=eps_h, order=order, cfl=cfl,
                      dt_mode=dt_mode,
                      friction=("manning", manning) if manning else None,
                      interfacial_friction=interfacial or None)  # fmt: skip


def run(sim: Simulation, t_end: float, every: float) -> dict:
    """Run to ``t_end`` sampling every ``every`` s: gauges, run-up, the cells flooded and dried
    (upper layer above or below ``WET``, against t = 0), the slide's front (its
    farthest cell thicker than 0.1 m) and centre of mass, volumes, and the transect y ~ 0."""
    f = sim.fields()
    x, y, H = f["x"], f["y"], f["H"]
    row = np.abs(y - y[np.argmin(np.abs(y))]) < 1e-9  # the row of cells nearest y = 0
    order = np.argsort(x[row])
    gauge = {
        k: int(np.flatnonzero(row)[np.argmin(np.abs(x[row] - gx))]) for k, gx in GAUGES.items()
    }
    wet0 = f["h1"] > WET
    rec = {"t": [], "runup": [], "flooded": [], "dried": [], "front": [], "centre": [],
           "mass": [], "eta1": [], "eta2": [], **{k: [] for k in GAUGES}}  # fmt: skip

    def sample(s: Simulation) -> None:
        f = s.fields()
        rec["t"].append(s.t)
        wet = f["h1"] > WET
        rec["runup"].append(float(-H[wet].min()))
        rec["flooded"].append(int(np.count_nonzero(wet & ~wet0)))
        rec["dried"].append(int(np.count_nonzero(wet0 & ~wet)))
        rec["front"].append(float(x[f["h2"] > 0.1].max()))
        rec["centre"].append(float((f["area"] * f["h2"]) @ x / (f["area"] @ f["h2"])))
        rec["mass"].append(s.mass())
        rec["eta1"].append(np.where(f["h1"] > WET, f["eta1"], np.nan)[row][order])
        rec["eta2"].append(f["eta2"][row][order])
        for k, c in gauge.items():
            rec[k].append(float(f["eta1"][c]))

    sample(sim)
    start = time.perf_counter()
    steps = sim.steps
    for t in np.arange(1, int(round(t_end / every)) + 1) * every:
        sim.run(min(t, t_end))
        sample(sim)
    wall = time.perf_counter() - start
    out = {k: np.asarray(v) for k, v in rec.items()}
    out.update(x=x[row][order], H=H[row][order], wall=wall, steps=sim.steps - steps)
    return out


def arrival(t: np.ndarray, eta: np.ndarray, fraction: float = 0.1) -> float:
    """First time ``|eta|`` exceeds ``fraction`` of its maximum."""
    return float(t[np.argmax(np.abs(eta) >= fraction * np.abs(eta).max())])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=80, help="cells across the 4 km width")
    parser.add_argument("--t-end", type=float, default=300.0, help="simulated time (s)")
    parser.add_argument("--every", type=float, default=5.0, help="sampling interval (s)")
    parser.add_argument("--r", type=float, default=0.5, help="density ratio rho1/rho2")
    parser.add_argument("--scheme", default="pvm-ifcp")
    parser.add_argument("--backend", default="cpu", choices=("cpu", "gpu"))
    parser.add_argument("--order", default="none", help="cell renumbering (Simulation order=)")
    parser.add_argument("--eps-h", type=float, default=1.0,
                        help="thin-layer depth (m; docs/SCHEMES.md §8)")  # fmt: skip
    parser.add_argument("--manning", type=float, default=0.05, help="slide's bed Manning n")
    parser.add_argument("--interfacial", type=float, default=0.001, help="interfacial c_i")
    parser.add_argument("--cfl", type=float, default=0.9)
    parser.add_argument("--open", action="store_true", help="non-reflecting east boundary")
    parser.add_argument("-o", "--output", default=None, help="figure (PNG)")
    parser.add_argument("--json", default=None, help="write a JSON summary here")
    args = parser.parse_args(argv)

    sim = build(args.n, r=args.r, scheme=args.scheme, backend=args.backend, eps_h=args.eps_h,
                open_sea=args.open, order=args.order, manning=args.manning,
                interfacial=args.interfacial, cfl=args.cfl)  # fmt: skip
    res = run(sim, args.t_end, args.every)
    cells = sim.mesh.n_cells
    rate = cells * res["steps"] / res["wall"]
    mass = res["mass"]
    drift = np.abs(mass[-1] - mass[0]) / mass[0]
    t = res["t"]
    expected = travel_time(X0 + R0, GAUGES["offshore"])
    summary = {
        "cells": cells, "dx_m": WIDTH / args.n, "scheme": args.scheme, "backend": args.backend,
        "r": args.r, "eps_h": args.eps_h, "t_end": sim.t, "steps": res["steps"],
        "wall_s": res["wall"], "cell_steps_per_s": rate,
        "mass_rel_change": drift.tolist(), "open": args.open,
        "net_outflow_m3": (mass[0] - mass[-1]).tolist(),  # per layer, out of the open side
        "offshore_arrival_s": arrival(t, res["offshore"]), "offshore_expected_s": expected,
        "offshore_max_m": float(res["offshore"].max()),
        "shore_min_m": float(res["shore"].min()), "shore_max_m": float(res["shore"].max()),
        "runup_max_m": float(res["runup"].max()), "runup_initial_m": float(res["runup"][0]),
        "flooded_max": int(res["flooded"].max()), "dried_max": int(res["dried"].max()),
        "slide_front_m": [float(res["front"][0]), float(res["front"][-1])],
        "counters": sim.backend.counters(),
    }  # fmt: skip
    print(
        f"{cells} cells (dx = {WIDTH / args.n:g} m), {args.scheme}, {args.backend}, r = {args.r}, "
        f"t = {sim.t:g} s, {res['steps']} steps, {res['wall']:.1f} s wall, "
        f"{rate / 1e6:.2f} M cell-steps/s, eps_h = {args.eps_h:g} m"
    )
    print(
        f"offshore gauge: arrival {summary['offshore_arrival_s']:.1f} s "
        f"(sqrt(gH) travel {expected:.1f} s), max {summary['offshore_max_m']:.2f} m; "
        f"shore: min {summary['shore_min_m']:.2f} m, max {summary['shore_max_m']:.2f} m; "
        f"run-up {summary['runup_max_m']:.2f} m; slide front {res['front'][0]:.0f} -> "
        f"{res['front'][-1]:.0f} m; layer volume change {drift[0]:.1e}, {drift[1]:.1e}"
    )
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(summary, fh, indent=1)
    if args.output:
        figure(res, summary, args.output)
    return 0


def figure(res: dict, summary: dict, path: str) -> None:
    """Transect of the surface and interface at several times, the gauges, the run-up."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from lock_exchange import label, save_figure

    t, x = res["t"], res["x"] / 1000
    fig, axes = plt.subplots(4, 1, figsize=(8, 11), height_ratios=(1, 1.2, 1, 0.8))
    picks = [np.argmin(np.abs(t - s)) for s in np.linspace(0, t[-1], 5)]
    for k, i in enumerate(picks):
        axes[0].plot(x, res["eta1"][i], f"C{k}", label=f"t = {t[i]:.0f} s")
        axes[1].plot(x, res["eta2"][i], f"C{k}", label=f"t = {t[i]:.0f} s")
    title = (f"slide tsunami, {summary['cells']} cells (dx = {summary['dx_m']:g} m), "
             f"r = {summary['r']}, {summary['scheme']}: free surface at y = 0")  # fmt: skip
    label(axes[0], "x [km]", "surface [m]", title)
    axes[1].fill_between(x, -res["H"], -PLAIN - 20, color="0.8")
    axes[1].set_ylim(-PLAIN - 20, 20)
    label(axes[1], "x [km]", "elevation [m]", "interface (top of the slide) and bed at y = 0")
    ax = axes[2]
    for k in GAUGES:
        ax.plot(t, res[k], label=f"{k} gauge (x = {GAUGES[k] / 1000:g} km)")
    ax.axvline(summary["offshore_expected_s"], color="k", ls=":", lw=1,
               label="offshore: sqrt(gH) travel time from the slide's front")  # fmt: skip
    label(ax, "t [s]", "surface [m]", "gauges")
    ax = axes[3]
    ax.plot(t, res["runup"], label="highest wet bed elevation (run-up)")
    label(ax, "t [s]", "elevation [m]", "run-up on the beach")
    save_figure(fig, path)


if __name__ == "__main__":
    sys.exit(main())
