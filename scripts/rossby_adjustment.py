"""Rossby adjustment of a step in surface height against Gill's geostrophic state, a figure.

    python scripts/rossby_adjustment.py [--cells 100 200 400 800 1600 3200] [-o FIGURE.png]

One layer of depth ``H`` on an f-plane, at rest, with the surface ``η = -η0 sgn x``
(Gill 1982 §7.2; Rossby 1938). Inertia-gravity waves carry the excess energy away
through the open ends (at ±10 a) and the middle relaxes to the geostrophic state
``η = -η0 sgn x (1 - e^{-|x|/a})``, ``v = -(g η0 / (f a)) e^{-|x|/a}``, ``u = 0``,
``a = √(gH)/f`` the Rossby radius of deformation (linear theory: η0 << H). The run
is 1-D on a row of square cells with open sides (the along-front flow ``v`` crosses
them unchanged); the state is averaged over the inertial period after four, which
removes the inertial oscillation that decays only slowly, and compared with Gill's
within 3 a of the step.

measured on the CPU (``python scripts/rossby_adjustment.py``, 17 s wall), RMS error of
v / max|v| and of η / η0 against Gill, by cells per Rossby radius:
5: 0.160 0.164; 10: 0.095 0.093; 20: 0.053 0.048; 40: 0.029 0.024; 80: 0.016 0.011;
160: 0.009 0.004 (order 0.75 to 0.85 in v, 0.8 to 1.4 in η).
"""

from __future__ import annotations

import argparse
import math
import sys

import numpy as np

from fvswe.grid import Grid
from fvswe.simulation import Simulation

#: Coriolis parameter (1/s), gravity (m/s²), depth (m), step half-height (m).
F, G, H, ETA0 = 1e-4, 9.81, 100.0, 0.1
#: Rossby radius of deformation (m).
A = math.sqrt(G * H) / F


def gill(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Gill's geostrophic steady state ``(v, η)`` at ``x`` (m)."""
    decay = np.exp(-np.abs(x) / A)
    return -(G * ETA0 / (F * A)) * decay, -ETA0 * np.sign(x) * (1 - decay)


def rossby_adjustment(cells: int, periods: int = 4) -> tuple[np.ndarray, ...]:
    """``(x, v, η)`` on ``cells`` cells of ``[-10 a, 10 a]``, averaged over the inertial
    period after ``periods`` of them."""
    dx = 20 * A / cells
    grid = Grid(cells, 1, dx=dx, dy=dx, origin=(-10 * A, 0.0))
    sim = Simulation(grid.mesh(), layers=1, scheme="hll", H=H, coriolis=F,
                     boundary=dict.fromkeys(("west", "east", "south", "north"), "open"),
                     initial={"h": lambda x, y: H - ETA0 * np.sign(x)})  # fmt: skip
    period = 2 * math.pi / F
    sim.run(periods * period)
    samples = []
    for k in range(8):
        sim.run((periods + (k + 1) / 8) * period)
        samples.append(sim.fields())
    v = np.mean([s["qy"] / s["h"] for s in samples], axis=0)
    return samples[0]["x"], v, np.mean([s["eta"] for s in samples], axis=0)


def errors(cells: int) -> tuple[float, float]:
    """RMS errors of v (over max |v|) and η (over η0) against Gill within 3 a of the step."""
    x, v, eta = rossby_adjustment(cells)
    gv, ge = gill(x)
    near = np.abs(x) < 3 * A
    return (float(np.sqrt(np.mean((v - gv)[near] ** 2)) / np.abs(gv).max()),
            float(np.sqrt(np.mean((eta - ge)[near] ** 2)) / ETA0))  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", type=int, nargs="+", default=[100, 200, 400, 800, 1600, 3200],
                        help="cells over the 20 Rossby radii of the domain")  # fmt: skip
    parser.add_argument("-o", "--output", default="docs/images/rossby_adjustment.png")
    args = parser.parse_args(argv)

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from lock_exchange import label, save_figure

    fig, (ax, bx, cx) = plt.subplots(1, 3, figsize=(14, 4.2))
    rows = []
    for cells in args.cells:
        x, v, eta = rossby_adjustment(cells)
        gv, ge = gill(x)
        near = np.abs(x) < 3 * A
        err = (np.sqrt(np.mean((v - gv)[near] ** 2)) / np.abs(gv).max(),
               np.sqrt(np.mean((eta - ge)[near] ** 2)) / ETA0)  # fmt: skip
        rows.append((cells, *err))
        print(f"{cells / 20:g} cells per Rossby radius: RMS error v {err[0]:.3f}, eta {err[1]:.3f}")
        o = np.argsort(x)
        ax.plot(x[o] / A, v[o], lw=1, label=f"{cells / 20:g} cells / a")
        bx.plot(x[o] / A, eta[o], lw=1, label=f"{cells / 20:g} cells / a")
    xs = np.linspace(-5 * A, 5 * A, 2001)
    gv, ge = gill(xs)
    ax.plot(xs / A, gv, "k--", lw=1, label="Gill (geostrophic)")
    bx.plot(xs / A, ge, "k--", lw=1, label="Gill (geostrophic)")
    for panel in (ax, bx):
        panel.set_xlim(-5, 5)
    label(ax, "x / a", "v (m/s)", "along-front velocity, mean over the 5th inertial period")
    label(bx, "x / a", "η (m)", "surface")
    n, ev, ee = np.array(rows).T
    cx.loglog(n / 20, ev, "o-", label="v")
    cx.loglog(n / 20, ee, "s-", label="η")
    cx.loglog(n / 20, ev[0] * n[0] / n, "k:", lw=1, label="first order")
    label(cx, "cells per Rossby radius", "RMS error within 3 a", "convergence to Gill")
    save_figure(fig, args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
