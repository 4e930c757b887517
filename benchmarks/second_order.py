"""Observed order in space of the linear reconstruction (docs/SCHEMES.md §19, issue 27).

The steady vortex of :func:`fvswe.exact.vortex` (one layer, flat bed, an exact smooth
solution) run to ``--t`` on irregular triangles (a structured square with its inner nodes
moved at random by up to a quarter of the spacing) at both reconstructions, SSP-RK2: the
L1 error ``Σ |V_i| (|Δh| + |Δqx| + |Δqy|)`` per mesh and the observed order between
successive meshes (each has 4 times the cells of the previous). The test
(tests/test_reconstruction.py) runs three small meshes; this script carries it further::

    python benchmarks/second_order.py --n 16 32 64 128 --schemes hll ir-roe roe rusanov hll-wd

and prints the table of docs/validation.md (``--json PATH`` writes it too).
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

from fvswe.exact import vortex
from fvswe.mesh import Mesh
from fvswe.mesh.generate import structured_square
from fvswe.simulation import Simulation

#: The vortex of the study: ``[-HALF, HALF]^2``, radius ``R``, strength ``GAMMA`` (1 m deep,
#: 0.45 m/s at most, a 2.5 cm dip).
HALF, R, GAMMA = 2.0, 0.6, 2.0


def irregular(n: int, half: float = HALF, seed: int = 0) -> Mesh:
    """``2 n^2`` irregular triangles of ``[-half, half]^2``: the structured square's inner
    nodes moved at random by up to a quarter of the spacing in each direction."""
    base = structured_square(n, half)
    nodes = base.nodes.copy()
    inner = np.all(np.abs(nodes) < half - 1e-9, axis=1)
    step = 2.0 * half / n
    rng = np.random.default_rng(seed)
    nodes[inner] += rng.uniform(-0.25 * step, 0.25 * step, (int(inner.sum()), 2))
    return Mesh.from_arrays(nodes, base.cells, source=f"<irregular {n}>")


def vortex_error(mesh: Mesh, reconstruction: str, scheme: str = "hll", t: float = 0.05):
    """``(L1 error, steps, seconds)`` of the vortex on ``mesh`` at time ``t``."""

    def exact(x, y):
        return vortex(x, y, gamma=GAMMA, R=R)

    start = time.perf_counter()
    sim = Simulation(mesh, layers=1, scheme=scheme, H=1.0, initial=exact(*mesh.centroid.T),
                     integrator="ssp-rk2", reconstruction=reconstruction,
                     backend="cpu")  # fmt: skip
    summary = sim.run(t)
    W, want = sim.state(), exact(*mesh.centroid.T)
    err = sum(np.abs(W[:, c] - want[f]) for c, f in enumerate(("h", "qx", "qy")))
    return float(np.sum(mesh.area * err)), summary.steps, time.perf_counter() - start


def orders(errors: list[float]) -> list[float]:
    """The observed orders between successive meshes (the spacing halves)."""
    e = np.asarray(errors)
    return [float(o) for o in np.log2(e[:-1] / e[1:])]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, nargs="+", default=[16, 32, 64, 128])
    parser.add_argument("--schemes", nargs="+", default=["hll"])
    parser.add_argument("--t", type=float, default=0.3)
    parser.add_argument("--json", default="")
    args = parser.parse_args()
    meshes = [irregular(n) for n in args.n]
    rows = []
    print("| scheme | reconstruction | cells | L1 error | order | steps | s |")
    print("|---|---|---|---|---|---|---|")
    for scheme in args.schemes:
        for rec in ("constant", "linear"):
            runs = [vortex_error(m, rec, scheme, args.t) for m in meshes]
            order = ["", *(f"{o:.2f}" for o in orders([r[0] for r in runs]))]
            for m, (err, steps, sec), o in zip(meshes, runs, order, strict=True):
                print(f"| {scheme} | {rec} | {m.n_cells} | {err:.3e} | {o} | {steps} | {sec:.1f} |")
                rows.append(dict(scheme=scheme, reconstruction=rec, cells=m.n_cells,
                                 error=err, steps=steps, seconds=sec))  # fmt: skip
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"t": args.t, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
