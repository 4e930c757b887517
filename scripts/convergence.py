"""One-layer dam breaks (Stoker, Ritter): L1 error of h by mesh, region and scheme.

    python scripts/convergence.py [--nx 100 200 400 800 1600 3200] [--schemes hll-wd hll roe]
                                  [--hr 0.1 0] [--mesh quad tri] [--eps-h EPS]

A 100 m channel, h = 1 m for x < 50 and ``hr`` beyond, walls, t = 5 s (the front never
reaches a wall). The exact solution is Stoker's (``hr > 0``) or Ritter's (``hr = 0``).
The L1 error ``sum |h - h_exact(x_c)| dx`` (column means on the triangle strip) is split
into windows of fixed width around the solution's features -- the rarefaction's head and
tail corners, the dam (the sonic point, where an entropy fix leaves its remnant), the
shock or the dry front -- and the rest. A first-order monotone scheme has ``O(dx)`` at a
shock, ``O(dx log dx)`` at a rarefaction corner (Harabetian; Tang and Teng), and the
rest ``O(dx)``; the orders printed are ``log2`` of successive ratios.
"""

from __future__ import annotations

import argparse
import itertools

import numpy as np

from fvswe.exact import dam_break
from fvswe.grid import Grid
from fvswe.mesh.generate import strip
from fvswe.simulation import Simulation

G = 9.81
LENGTH, DAM, T_END, HL = 100.0, 50.0, 5.0, 1.0
WINDOW = 4.0  # half-width (m) of each feature's window


def run(scheme, nx, hr, mesh="quad", eps_h=None, t0=0.0, dt=None):
    """Cell-column centres and depths at T_END on an nx-column strip (quads or triangles),
    from the dam at t = 0 or from the exact solution at ``t0`` (the fan already open);
    the step is the non-lagged CFL step, or ``dt`` fixed."""
    dx = LENGTH / nx
    m = Grid(nx, 1, dx, 1.0).mesh() if mesh == "quad" else strip(nx, 1, 0.0, LENGTH)
    if t0 > 0:
        h0, u0, _ = dam_break(m.centroid[:, 0], t0, HL, hr, DAM, G)
        initial = {"h": h0, "qx": h0 * u0}
    else:
        initial = {"h": lambda x, y: np.where(x < DAM, HL, hr)}
    walls = dict.fromkeys(m.tags, "wall")
    sim = Simulation(m, layers=1, scheme=scheme, H=0.0, boundary=walls, eps_h=eps_h,
                     initial=initial, dt_mode="fixed" if dt else "nonlagged", dt=dt)  # fmt: skip
    s = sim.run(T_END - t0)
    assert s.counters["clipped_cells"] == 0
    f = sim.fields()
    col = np.minimum((f["x"] / dx).astype(int), nx - 1)
    area = np.bincount(col, f["area"], nx)
    return dx * (np.arange(nx) + 0.5), np.bincount(col, f["area"] * f["h"], nx) / area


def errors(scheme, nx, hr, mesh="quad", eps_h=None, t0=0.0):
    """L1 error of h: the total and per region (the features' windows, then the rest)."""
    x, h = run(scheme, nx, hr, mesh, eps_h, t0)
    he, _, features = dam_break(x, T_END, HL, hr, DAM, G)
    err = np.abs(h - he) * (LENGTH / nx)
    out = {"total": err.sum()}
    rest = np.ones(nx, bool)
    for name, xf in features.items():
        near = np.abs(x - xf) < WINDOW
        out[name] = err[near].sum()
        rest &= ~near
    out["rest"] = err[rest].sum()
    return out


def orders(values):
    """log2 of successive ratios."""
    v = np.asarray(values, float)
    return np.log2(v[:-1] / v[1:])


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--nx", type=int, nargs="+", default=[100, 200, 400, 800, 1600, 3200])
    p.add_argument("--schemes", nargs="+", default=["hll-wd", "hll", "roe"])
    p.add_argument("--hr", type=float, nargs="+", default=[0.1, 0.0])
    p.add_argument("--mesh", nargs="+", default=["quad"], choices=["quad", "tri"])
    p.add_argument("--eps-h", type=float, default=None)
    p.add_argument("--t0", type=float, nargs="+", default=[0.0, 1.0])
    a = p.parse_args(argv)
    for hr in a.hr:
        for mesh in a.mesh:
            for scheme, t0 in itertools.product(a.schemes, a.t0):
                if hr == 0 and scheme != "hll-wd":
                    continue  # hll and one-layer roe refuse dry cells
                rows = [errors(scheme, nx, hr, mesh, a.eps_h, t0) for nx in a.nx]
                print(f"\n{scheme}  hr={hr}  {mesh}  t0={t0}  eps_h={a.eps_h or 'default'}")
                keys = list(rows[0])
                print("nx      " + " ".join(f"{k:>10}" for k in keys))
                for nx, row in zip(a.nx, rows, strict=True):
                    print(f"{nx:<7} " + " ".join(f"{row[k]:10.3e}" for k in keys))
                cols = [orders([r[k] for r in rows]) for k in keys]
                for n, nx in enumerate(a.nx[1:]):
                    print(f"order{nx:<3}" + " ".join(f"{c[n]:10.2f}" for c in cols))


if __name__ == "__main__":
    main()
