"""One-layer dam breaks (Stoker, Ritter): L1 error of h by mesh, region and scheme.

    python scripts/convergence.py [--nx 100 200 400 800 1600 3200] [--schemes hll-wd hll roe]
                                  [--hr 0.1 0] [--mesh quad tri] [--eps-h EPS] [--t0 0 1]

A 100 m channel, h = 1 m for x < 50 and ``hr`` beyond, walls, t = 5 s (the front never
reaches a wall). The exact solution is Stoker's (``hr > 0``) or Ritter's (``hr = 0``).
The L1 error ``sum |h - h_exact(x_c)| dx`` (column means on the triangle strip) is split
into windows of fixed width around the solution's features -- the rarefaction's head and
tail corners, the dam (the sonic point, where an entropy fix leaves its remnant), the
shock or the dry front -- and the rest. A first-order monotone scheme has ``O(dx)`` at a
shock and ``O(dx log(1/dx))`` for a rarefaction centred on a jump (Harabetian 1988), which
shows as order ~0.8 here; the orders printed are ``log2`` of successive ratios, and
``total/dx`` grows by about a constant per halving under ``dx log(1/dx)``. ``--t0 1`` starts
from the exact solution at t = 1 s instead of the dam (the fan already open); scheme
``hll-1d`` is an independent 1-D HLL without fvswe code (docs/validation.md).
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


def hll_1d(nx, hr, t0=0.0, dt=None, cfl=0.9):
    """Independent 1-D HLL (Einfeldt speeds, flux form, reflecting walls; no fvswe code) for
    the same dam break: column centres and depths at T_END. The step is ``dt`` or
    ``cfl dx / max |S|``."""
    dx = LENGTH / nx
    x = dx * (np.arange(nx) + 0.5)
    if t0 > 0:
        h, u, _ = dam_break(x, t0, HL, hr, DAM, G)
        q = h * u
    else:
        h, q = np.where(x < DAM, HL, hr), np.zeros(nx)
    t = t0
    while t < T_END:
        hl, hr_ = np.r_[h[0], h], np.r_[h, h[-1]]
        ql, qr = np.r_[-q[0], q], np.r_[q, -q[-1]]
        ul = np.where(hl > 0, ql / np.where(hl > 0, hl, 1), 0)
        ur = np.where(hr_ > 0, qr / np.where(hr_ > 0, hr_, 1), 0)
        sa, sb = np.sqrt(hl), np.sqrt(hr_)
        uhat = (sa * ul + sb * ur) / np.where(sa + sb > 0, sa + sb, 1)
        chat = np.sqrt(G * (hl + hr_) / 2)
        sl = np.minimum(np.minimum(uhat - chat, ul - np.sqrt(G * hl)), 0)
        sr = np.maximum(np.maximum(uhat + chat, ur + np.sqrt(G * hr_)), 0)
        fl = np.array([ql, ql * ul + G * hl * hl / 2])
        fr = np.array([qr, qr * ur + G * hr_ * hr_ / 2])
        jump = np.array([hr_ - hl, qr - ql])
        F = (sr * fl - sl * fr + sl * sr * jump) / np.where(sr > sl, sr - sl, 1)
        step = min(dt or cfl * dx / max(-sl.min(), sr.max()), T_END - t)
        h = h - step / dx * (F[0, 1:] - F[0, :-1])
        q = q - step / dx * (F[1, 1:] - F[1, :-1])
        t = T_END if step == T_END - t else t + step
    return x, h


def errors(scheme, nx, hr, mesh="quad", eps_h=None, t0=0.0):
    """L1 error of h: the total and per region (the features' windows, then the rest);
    scheme ``hll-1d`` is :func:`hll_1d`."""
    if scheme == "hll-1d":
        x, h = hll_1d(nx, hr, t0)
    else:
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
                if hr == 0 and scheme in ("hll", "roe"):
                    continue  # hll and one-layer roe refuse dry cells
                rows = [errors(scheme, nx, hr, mesh, a.eps_h, t0) for nx in a.nx]
                print(f"\n{scheme}  hr={hr}  {mesh}  t0={t0}  eps_h={a.eps_h or 'default'}")
                keys = list(rows[0])
                print("nx      " + " ".join(f"{k:>10}" for k in keys))
                for nx, row in zip(a.nx, rows, strict=True):
                    print(f"{nx:<7} " + " ".join(f"{row[k]:10.3e}" for k in keys))
                over = " ".join(
                    f"{r['total'] * nx / LENGTH:.3f}" for nx, r in zip(a.nx, rows, strict=True)
                )
                print(f"total/dx {over}")  # dx log(1/dx): grows by a constant per halving
                cols = [orders([r[k] for r in rows]) for k in keys]
                for n, nx in enumerate(a.nx[1:]):
                    print(f"order{nx:<3}" + " ".join(f"{c[n]:10.2f}" for c in cols))


if __name__ == "__main__":
    main()
