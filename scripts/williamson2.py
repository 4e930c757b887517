"""Williamson et al. (1992) test 2 on a lon/lat band of the sphere: the error after a day.

    python scripts/williamson2.py [--n 6 12 24 48 96] [--hours 24] [--scheme roe]
                                  [--backend cpu] [--variant edge]

The steady zonal geostrophic flow ``u = u0 cos φ``, ``g h = g h0 - (R Ω u0 + u0²/2) sin² φ``
(``α = 0``, ``u0 = 2πR / 12 days``, ``g h0 = 2.94e4 m²/s²``) on the band ``|φ| <= 60°`` round
the globe (tests/test_sphere.py's ``williamson2``: ``3n x n`` rectangles of ``120/n`` degrees
cut into triangles, periodic at ±180°, walls at ±60°, where ``v = 0`` is exact), Coriolis
``f = 2Ω sin φ`` per cell, crs EPSG:4326 (docs/SCHEMES.md §20). Prints per mesh the L1 and
L∞ errors of ``h`` relative to the exact mean and maximum, the order between successive
meshes and each layer's relative mass drift. ``--backend gpu --variant V`` runs it on a GPU
(the table in docs/validation.md is the CPU's; a GPU's float64 run is the same bits).
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from test_sphere import williamson2, zonal_flow  # noqa: E402


def error(n: int, hours: float, **kw) -> tuple[int, int, float, float, float, float]:
    """``(cells, steps, L1, Linf, mass drift, wall s)`` of test 2 on the ``n`` mesh."""
    start = time.perf_counter()
    sim = williamson2(n, **kw)
    summary = sim.run(hours * 3600.0)
    h, _ = zonal_flow(sim.mesh.centroid[np.argsort(sim.mesh.original_index), 1])
    e = np.abs(sim.fields()["h"] - h)
    wall = time.perf_counter() - start
    return sim.mesh.n_cells, summary.steps, e.mean() / h.mean(), e.max() / h.max(), \
        max(summary.mass_rel_drift), wall  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, nargs="+", default=[6, 12, 24, 48, 96])
    p.add_argument("--hours", type=float, default=24.0)
    p.add_argument("--scheme", default="roe")
    p.add_argument("--backend", default="cpu")
    p.add_argument("--variant", default=None, help="the GPU variant")
    args = p.parse_args(argv)
    kw = {"scheme": args.scheme, "backend": args.backend}
    if args.variant:
        kw["backend_options"] = {"variant": args.variant}
    print("| mesh | cells | steps | L1(h) | order | Linf(h) | order | mass drift | wall s |")
    print("|---|---|---|---|---|---|---|---|---|")
    last = None
    for n in args.n:
        cells, steps, l1, linf, drift, wall = error(n, args.hours, **kw)
        orders = ("", "")
        if last is not None:
            ratio = math.log(n / last[0])
            orders = (f"{math.log(last[1] / l1) / ratio:.2f}",
                      f"{math.log(last[2] / linf) / ratio:.2f}")  # fmt: skip
        print(f"| {120 / n:g}° | {cells} | {steps} | {l1:.3e} | {orders[0]} | {linf:.3e} | "
              f"{orders[1]} | {drift:.1e} | {wall:.1f} |", flush=True)  # fmt: skip
        last = (n, l1, linf)
    return 0


if __name__ == "__main__":
    sys.exit(main())
