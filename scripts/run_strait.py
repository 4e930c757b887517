"""Lock exchange through the synthetic strait: the steady exchange flux against hydraulic theory.

    python scripts/run_strait.py [--mesh meshes/strait.npz] [--r 0.98] [--t-end 36000]
                                 [--scheme ir-roe] [--eps-h 1] [-o FIGURE.png]

The west basin and the channel up to the sill crest (x < 0) hold heavy water
(layer 2) over the whole depth, the rest light water (layer 1), at rest; walls
everywhere. The heavy water flows east under the light water flowing west, and
after the adjustment the exchange through the contraction is steady until the
basins' interfaces have moved. Theory (Armi & Farmer 1986; docs/validation.md):
with the narrowest and shallowest section at the same place, the maximal
two-layer exchange is controlled there, in the Boussinesq limit
``Q = b sqrt(g' Hs^3) / 4`` each way (``b`` the width, ``Hs`` the depth at the
control, ``g' = (1 - r) g``). The discharge of each layer through the section
x = 0 comes from :class:`fvswe.probes.Probes` (exact volume budget of the
closed west part), averaged over the window ``--window`` (fractions of
``--t-end``).

``--eps-h`` defaults to 1 m: with the 5 mm default the thin heavy layer spilling down the
sill runs at tens of m/s where the system is not hyperbolic, and the run is ruined
(docs/validation.md).

measured on the CPU (1 thread), ``python scripts/run_strait.py --scheme S`` (2192 cells,
r = 0.98, window 3-10 h), exchange / theory (heavy east, light west): ir-roe 0.956
(0.942, 0.970); pvm-ifcp 1.002 (0.994, 1.010); roe 0.956 (0.942, 0.970).
measured on the CPU, the same with ``--mesh strait750.npz`` from
``make_strait_mesh.py --size 750`` (8552 cells): ir-roe 0.962 (0.948, 0.977);
pvm-ifcp 0.988 (0.978, 0.998).
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np
from lock_exchange import label, save_figure
from make_strait_mesh import BMIN, HS, WB

from fvswe.mesh import read_mesh
from fvswe.probes import Probes, Section
from fvswe.simulation import Simulation

G = 9.81


def theory(r: float, g: float = G) -> float:
    """Maximal exchange ``b sqrt(g' Hs^3) / 4`` (m³/s) through the sill/contraction."""
    return BMIN * np.sqrt((1 - r) * g * HS**3) / 4


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mesh", default="meshes/strait.npz")
    parser.add_argument("--r", type=float, default=0.98, help="density ratio rho1/rho2")
    parser.add_argument("--t-end", type=float, default=36000.0, help="simulated time (s)")
    parser.add_argument("--every", type=float, default=600.0, help="sampling interval (s)")
    parser.add_argument("--window", type=float, nargs=2, default=(0.3, 1.0),
                        help="averaging window, fractions of t-end")  # fmt: skip
    parser.add_argument("--scheme", default="ir-roe")
    parser.add_argument("--backend", default="cpu")
    parser.add_argument("--order", default="none")
    parser.add_argument(
        "--eps-h", type=float, default=1.0, help="thin-layer depth (m; docs/SCHEMES.md §8)"
    )
    parser.add_argument("-o", "--output", default=None, help="figure of Q(t) (PNG)")
    args = parser.parse_args(argv)

    mesh = read_mesh(args.mesh)
    heavy = np.where(mesh.centroid[:, 0] < 0, mesh.depth, 0.0)
    sim = Simulation(mesh, layers=2, scheme=args.scheme, g=G, r=args.r, H=mesh.depth,
                     initial={"h2": heavy, "h1": mesh.depth - heavy}, backend=args.backend,
                     order=args.order, eps_h=args.eps_h)  # fmt: skip
    probes = Probes(sim, sections=[Section("sill", ((0.0, -WB), (0.0, WB)))])
    start = time.perf_counter()
    for t in np.arange(1, int(round(args.t_end / args.every)) + 1) * args.every:
        sim.run(min(t, args.t_end))
        probes.sample()
    wall = time.perf_counter() - start
    t = np.asarray(probes.times)
    volume = probes.volume[:, 0, :]  # (samples, layers): crossed eastward since t = 0
    q = theory(args.r)
    a, b = (np.searchsorted(t, f * args.t_end) for f in args.window)
    b = min(b, len(t) - 1)
    mean = (volume[b] - volume[a]) / (t[b] - t[a])  # mean discharge per layer over the window
    exchange = (mean[1] - mean[0]) / 2  # the net (barotropic) flow cancels
    print(
        f"{args.mesh}: {mesh.n_cells} cells, {args.scheme}, r = {args.r}, t = {sim.t:g} s, "
        f"{sim.steps} steps, {wall:.1f} s wall, eps_h = {args.eps_h:g} m, {sim.backend.counters()}"
    )
    print(
        f"exchange over t in [{t[a]:g}, {t[b]:g}] s: heavy (east) {mean[1]:.4g} m3/s, "
        f"light (west) {-mean[0]:.4g} m3/s, theory {q:.4g} m3/s: "
        f"ratio {mean[1] / q:.3f} / {-mean[0] / q:.3f}, exchange {exchange / q:.3f}"
    )
    if args.output:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        flux = probes.discharge[:, 0, :]
        fig, ax = plt.subplots(figsize=(7, 4))
        ax.plot(t[1:] / 3600, flux[1:, 1] / q, label="heavy layer, eastward")
        ax.plot(t[1:] / 3600, -flux[1:, 0] / q, label="light layer, westward")
        ax.plot(t[1:] / 3600, (flux[1:, 1] - flux[1:, 0]) / 2 / q, "k", label="exchange (mean)")
        ax.axhline(1.0, color="k", ls="--", lw=1, label="theory b sqrt(g' Hs³)/4")
        ax.axvspan(t[a] / 3600, t[b] / 3600, color="0.9", label="averaging window")
        title = f"strait exchange, {mesh.n_cells} cells, r = {args.r}, {args.scheme}"
        label(ax, "t [h]", "discharge / theory", title)
        save_figure(fig, args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
