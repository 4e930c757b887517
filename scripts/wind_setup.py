"""Wind set-up of a closed basin against the steady balance g h dη/dx = τ/ρ, a figure.

    python scripts/wind_setup.py [--cells 20 40 80 160 320] [--hours 96] [-o FIGURE.png]

A basin 10 km long and 10 m deep, closed by walls, under a wind from the west ramped
from 0 to 20 m/s over 4 h and then held (a ramp long against the 34 min seiche, so
that little sloshing starts; a Chézy friction, C = 3, damps what does). Once the
water is still, the surface stress of the wind balances the pressure gradient,
``g h dη/dx = τ/ρ`` with ``τ = ρ_air C_d |U| U`` (Large & Pond 1981: ``C_d = 1.79e-3``
at 20 m/s), i.e. ``h² = h(0)² + 2 τ x / (ρ g)`` with the basin's volume fixing
``h(0)``: the linear set-up ``dη/dx = τ / (ρ g H)`` to within ``η/H``. The friction does
not enter the steady state (u = 0).

measured on the CPU (``python scripts/wind_setup.py``, 28 s wall), after 96 h: largest
|g h dη/dx / (τ/ρ) - 1| between neighbouring cells, and largest |η - η_exact| over the
set-up η(L) - η(0) = 0.087 m: 20 cells 6.0e-3 / 2.8e-3; 40: 1.5e-3 / 7.3e-4;
80: 3.8e-4 / 1.9e-4; 160: 9.8e-5 / 4.7e-5; 320: 2.6e-5 / 1.2e-5 (second order; each
layer's mass to 1.2e-15). The finer basins ring longer: at 24 h the 320-cell one is
still 4.5e-3 off.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np
from scipy.optimize import brentq

from fvswe.forcing import Wind
from fvswe.grid import Grid
from fvswe.schemes.forcing import wind_stress
from fvswe.simulation import Simulation

#: Basin length (m), depth (m), gravity (m/s²).
LENGTH, DEPTH, G = 10e3, 10.0, 9.81
WIND = Wind(times=[0.0, 4 * 3600.0, 1e6], speed=[0.0, 20.0, 20.0], direction=270.0)


def stress() -> float:
    """``τ/ρ`` (m²/s²) of the held wind (towards +x)."""
    table = WIND.table()
    return float(wind_stress(table.u[-1], table.v[-1], table.law, table.cd, table.ratio)[0])


def wind_setup(cells: int, hours: float = 16.0) -> tuple[np.ndarray, ...]:
    """``(x, η, h, mass drift)`` of the basin on ``cells`` cells after ``hours`` hours."""
    dx = LENGTH / cells
    sim = Simulation(Grid(cells, 1, dx=dx, dy=dx).mesh(), layers=1, scheme="hll", H=DEPTH,
                     wind=WIND, friction=("chezy", 3.0), initial={"h": DEPTH})  # fmt: skip
    summary = sim.run(hours * 3600.0)
    f = sim.fields()
    return f["x"], f["eta"], f["h"], max(summary.mass_rel_drift)


def balance(x: np.ndarray, eta: np.ndarray, h: np.ndarray) -> np.ndarray:
    """``g h dη/dx / (τ/ρ)`` between neighbouring cells (1 at the steady state)."""
    return np.diff(eta) / np.diff(x) * G * 0.5 * (h[1:] + h[:-1]) / stress()


def exact(x: np.ndarray) -> np.ndarray:
    """The steady surface ``η(x)``: ``h = √(h0² + 2 s x)``, ``s = τ/(ρ g)``, of volume
    ``DEPTH LENGTH``."""
    s = stress() / G

    def volume(a: float) -> float:
        return ((a + 2 * s * LENGTH) ** 1.5 - a**1.5) / (3 * s) - DEPTH * LENGTH

    a = brentq(volume, (0.5 * DEPTH) ** 2, DEPTH**2, xtol=1e-14)
    return np.sqrt(a + 2 * s * x) - DEPTH


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", type=int, nargs="+", default=[20, 40, 80, 160, 320])
    parser.add_argument("--hours", type=float, default=96.0)
    parser.add_argument("-o", "--output", default="docs/images/wind_setup.png")
    args = parser.parse_args(argv)

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from lock_exchange import label, save_figure

    fig, (ax, bx) = plt.subplots(1, 2, figsize=(11, 4.2))
    xs = np.linspace(0, LENGTH, 401)
    setup = exact(np.array([LENGTH]))[0] - exact(np.array([0.0]))[0]
    for cells in args.cells:
        x, eta, h, drift = wind_setup(cells, args.hours)
        ratio = balance(x, eta, h)
        off = np.abs(eta - exact(x)).max() / setup
        print(f"{cells} cells: max |g h deta/dx / (tau/rho) - 1| {np.abs(ratio - 1).max():.2e}, "
              f"max |eta - exact| / set-up {off:.2e}, mass drift {drift:.1e}")  # fmt: skip
        ax.plot(x / 1e3, eta, ".", ms=3, label=f"{cells} cells")
        bx.plot(0.5 * (x[1:] + x[:-1]) / 1e3, ratio, lw=1, label=f"{cells} cells")
    ax.plot(xs / 1e3, exact(xs), "k-", lw=1, label="steady balance")
    lin = stress() / (G * DEPTH) * (xs - LENGTH / 2)
    ax.plot(xs / 1e3, lin, "k:", lw=1, label="linear: dη/dx = τ/(ρ g H)")
    label(ax, "x (km)", "η (m)", f"set-up after {args.hours:g} h, wind 20 m/s from the west")
    label(bx, "x (km)", "g h dη/dx / (τ/ρ)", "steady balance")
    save_figure(fig, args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
