"""1-D NumPy prototype of the outflow limiter of docs/SCHEMES.md §13.4, on the slope surge.

    python scripts/limiter_prototype.py [--nx 200 400] [--scheme pvm-ifcp] [--t-end 4]

A lower layer 0.6 m deep (x < -3) surges up a bed rising 0.15 m/m to a shore at
x = 1.67 under an upper layer filling the rest (r = 0.5, walls; ``slope_surge`` of
tests/test_vanishing.py on a 1-D line of cells). Each step evaluates the NumPy reference
flux (fvswe.schemes) at every edge and updates in fluctuation form, as the pipelines do;
with ``--limit`` (both runs are printed) each layer's mass flux ``Phi = F-_h + q_i`` out of
a cell is scaled by ``theta = min(1, h dx / (dt * outflow))`` of the cell it leaves, the
same value on both sides of the edge, so no layer can go below zero and mass stays
conserved to round-off; the momentum that mass no longer carries out, ``(theta - 1) Phi u``
with the donor's velocity ``u``, stays in the donor. Thin layers are damped as in the volume
pass (``q <- q h inverse_depth(h)`` below ``eps_h``; below ``eps_u = 1e3 eps_h`` in the cells
with a limited layer and their neighbours).

Measured (PVM-IFCP, default eps_h = 1e-6 m, t = 4 s): without the limiter 1 clip at 200
cells and 9 at 400 (lower layer's mass off by 5e-6, 1e-5); with it no clip, both masses
to 2e-16, smallest theta 0.56 and 0.065.
"""

from __future__ import annotations

import argparse

import numpy as np

from fvswe.schemes import get_flux
from fvswe.schemes.common import inverse_depth

R = 0.5
DEPTHS = (0, 3)  # h1, h2 columns of a two-layer state


def initial(nx):
    """Cell centres, bed depth H and state of the slope surge on nx cells of [-5, 5]."""
    dx = 10.0 / nx
    x = -5.0 + dx * (np.arange(nx) + 0.5)
    H = 1.0 - 0.15 * (x + 5.0)
    W = np.zeros((nx, 6))
    W[:, 3] = np.where(x < -3.0, 0.6, 0.0)
    W[:, 0] = np.maximum(H, 0.0) - W[:, 3]
    return x, H, W


def limit(W, Wl, Fm, U, dt, dx, eps_h):
    """Replaces the layers' depths in ``U`` (the unlimited update) by those with each edge's
    mass flux scaled by its donor's theta and moves the momentum that no longer leaves back
    to the donor; returns the smallest theta and whether each cell has a limited layer."""
    smallest, limited = 1.0, np.zeros(len(W), dtype=bool)
    for k in DEPTHS:
        phi = Fm[:, k] + Wl[:, k + 1]  # mass flux i -> j through each edge
        phi[[0, -1]] = 0.0  # walls
        outflow = np.maximum(phi[1:], 0.0) + np.maximum(-phi[:-1], 0.0)
        need = dt * outflow
        theta = np.where(need > W[:, k] * dx, W[:, k] * dx / np.where(need > 0, need, 1.0), 1.0)
        smallest = min(smallest, theta.min())
        limited |= theta < 1
        donor = np.ones(len(phi))
        donor[1:-1] = np.where(phi[1:-1] > 0, theta[:-1], theta[1:])
        U[:, k] = W[:, k] - dt / dx * (donor[1:] * phi[1:] - donor[:-1] * phi[:-1])
        u = W[:, k + 1 : k + 3] * inverse_depth(W[:, k], eps_h)[:, None]
        up = np.zeros((len(phi), 2))
        up[1:-1] = np.where(phi[1:-1, None] > 0, u[:-1], u[1:])
        kept = ((donor - 1.0) * phi)[:, None] * up  # momentum flux that no longer leaves
        U[:, k + 1 : k + 3] -= dt / dx * (kept[1:] - kept[:-1])
    return smallest, limited


def run(nx, scheme="pvm-ifcp", t_end=4.0, limiter=True, cfl=0.9, eps_h=1e-6, dt=None):
    """Steps, clipped layer-cells, relative mass change per layer, smallest theta and the
    final state; ``dt``: a fixed step instead of the CFL one (the last one clipped)."""
    flux = get_flux(scheme, 2)
    x, H, W = initial(nx)
    dx = 10.0 / nx
    He = np.r_[H[0], H, H[-1]]
    normal = np.tile([1.0, 0.0], (nx + 1, 1))
    m0 = W[:, DEPTHS].sum(axis=0)
    t, steps, clips, smallest = 0.0, 0, 0, 1.0
    while t < t_end:
        Wl, Wr = np.vstack([W[:1], W]), np.vstack([W, W[-1:]])
        Wl[0, [1, 4]] *= -1
        Wr[-1, [1, 4]] *= -1
        Fm, Fp, d = flux(Wl, Wr, He[:-1], He[1:], normal, r=R, eps_h=eps_h)
        step = dt if dt is not None else cfl * dx / np.maximum(d[:-1], d[1:]).max()
        step = min(step, t_end - t)
        U = W - step / dx * (Fm[1:] + Fp[:-1])
        eps = np.full(nx, eps_h)
        if limiter:
            low, limited = limit(W, Wl, Fm, U, step, dx, eps_h)
            smallest = min(smallest, low)
            near = limited.copy()  # and their neighbours
            near[1:] |= limited[:-1]
            near[:-1] |= limited[1:]
            eps[near] = 1e3 * eps_h
        if not np.all(np.isfinite(U)):
            raise FloatingPointError(f"{scheme}, {nx} cells: NaN at step {steps}, t = {t:.4g} s")
        for k in DEPTHS:
            clips += int(np.count_nonzero(U[:, k] < 0))
            U[:, k] = np.maximum(U[:, k], 0.0)
            thin = U[:, k] < eps
            damp = U[thin, k] * inverse_depth(U[thin, k], eps[thin])
            U[thin, k + 1] *= damp
            U[thin, k + 2] *= damp
        W = U
        t = t_end if step == t_end - t else t + step
        steps += 1
    drift = np.abs(W[:, DEPTHS].sum(axis=0) - m0) / m0
    return steps, clips, drift, smallest, W


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--nx", type=int, nargs="+", default=[200, 400])
    p.add_argument("--scheme", default="pvm-ifcp")
    p.add_argument("--t-end", type=float, default=4.0)
    a = p.parse_args(argv)
    for nx in a.nx:
        for on in (False, True):
            steps, clips, drift, smallest, _ = run(nx, a.scheme, a.t_end, on)
            print(f"{a.scheme} {nx} cells, {'limiter' if on else 'plain  '}: {steps} steps, "
                  f"{clips} clips, mass change {drift[0]:.1e} {drift[1]:.1e}, "
                  f"smallest theta {smallest:.3f}")  # fmt: skip


if __name__ == "__main__":
    main()
