"""Observed order in space of the linear reconstruction (docs/SCHEMES.md §19, issue 27).

The steady vortex of :func:`fvswe.exact.vortex` (one layer, flat bed, an exact smooth
solution) run to ``--t`` on irregular triangles (a structured square with its inner nodes
moved at random by up to a quarter of the spacing) at both reconstructions, SSP-RK2: the
L1 error ``Σ |V_i| (|Δh| + |Δqx| + |Δqy|)`` per mesh and the observed order between
successive meshes (each has 4 times the cells of the previous), of the sum and of its parts
in ``h`` and in ``q`` (the limiter's acceptance, docs/SCHEMES.md §19.2). The test
(tests/test_reconstruction.py) runs three small meshes; this script carries it further::

    python benchmarks/second_order.py --n 16 32 64 128 --schemes hll ir-roe roe rusanov hll-wd

and prints the table of docs/validation.md (``--json PATH`` writes it too).

``--two-layer N`` instead measures a smooth two-layer problem by self-convergence (no exact
solution): an interface bump (:func:`interface_bump`, flat surface, at rest, r = 0.98) run to
``--t`` on ``irregular(N)`` and ``--levels - 1`` (default 3) nested 1->4 refinements of it; the
L1 difference between each mesh's solution and the next finer one's averaged onto it, and the
orders between them (``--cfl`` sets the Courant number, ``--half`` moves the walls to
``±half``, ``--reconstructions`` picks which)::

    python benchmarks/second_order.py --two-layer 16 --t 0.5 --schemes ir-roe
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

from fvswe.exact import vortex
from fvswe.mesh import Mesh
from fvswe.mesh.catalog import refine
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
    """``(L1 error, steps, seconds, (error of h, error of q))`` of the vortex on ``mesh`` at
    time ``t`` (the L1 error is the sum of the two)."""

    def exact(x, y):
        return vortex(x, y, gamma=GAMMA, R=R)

    start = time.perf_counter()
    sim = Simulation(mesh, layers=1, scheme=scheme, H=1.0, initial=exact(*mesh.centroid.T),
                     integrator="ssp-rk2", reconstruction=reconstruction,
                     backend="cpu")  # fmt: skip
    summary = sim.run(t)
    W, want = sim.state(), exact(*mesh.centroid.T)
    err = [
        float(np.sum(mesh.area * np.abs(W[:, c] - want[f])))
        for c, f in enumerate(("h", "qx", "qy"))
    ]
    split = (err[0], err[1] + err[2])
    return sum(split), summary.steps, time.perf_counter() - start, split


def interface_bump(x, y):
    """The lower layer's depth of the two-layer problem: 0.5 m with a 5 cm Gaussian bump of
    radius 1 m; the upper layer fills to a flat surface at 1 m. Smooth: no front, and neither
    layer is thinner than 0.45 m, so it stays smooth over the short runs measured."""
    return 0.5 + 0.05 * np.exp(-(x**2 + y**2))


def self_convergence(mesh: Mesh, reconstruction: str, scheme: str, t: float, levels: int = 4,
                     cfl: float | None = None):  # fmt: skip
    """L1 differences ``Σ |V_i| Σ_c |W_c - R(W_fine)_c|`` of the two-layer interface bump
    between ``levels`` nested meshes (``mesh`` refined 1->4 each time), each against the next
    finer solution averaged over the four children (catalog.refine's numbering); ``cfl``
    overrides the run's Courant number (the time error's share, halved)."""
    extra = {} if cfl is None else {"cfl": cfl}
    initial = {"h2": interface_bump, "h1": lambda x, y: 1.0 - interface_bump(x, y)}
    meshes, states = [mesh], []
    while len(meshes) < levels:
        meshes.append(refine(meshes[-1]))
    for m in meshes:
        sim = Simulation(m, layers=2, scheme=scheme, r=0.98, H=1.0, initial=initial,
                         integrator="ssp-rk2", reconstruction=reconstruction,
                         backend="cpu", **extra)  # fmt: skip
        sim.run(t)
        states.append(sim.state())
    errors = []
    for m, fine, W, Wf in zip(meshes, meshes[1:], states, states[1:], strict=False):
        p = np.arange(m.n_cells)
        kids = np.stack([p, m.n_cells + 3 * p, m.n_cells + 3 * p + 1, m.n_cells + 3 * p + 2], 1)
        a = fine.area[kids]
        mean = np.einsum("pk,pkc->pc", a, Wf[kids]) / a.sum(axis=1)[:, None]
        errors.append(float(np.sum(m.area[:, None] * np.abs(mean - W))))
    return [m.n_cells for m in meshes[:-1]], errors


def orders(errors: list[float]) -> list[float]:
    """The observed orders between successive meshes (the spacing halves)."""
    e = np.asarray(errors)
    return [float(o) for o in np.log2(e[:-1] / e[1:])]


def vortex_table(args) -> list[dict]:
    """The vortex's rows (and printed table) over ``--n`` for ``--schemes``."""
    meshes = [irregular(n) for n in args.n]
    rows = []
    print("| scheme | reconstruction | cells | L1 error | order | order h | order q | steps | s |")
    print("|---|---|---|---|---|---|---|---|---|")
    for scheme in args.schemes:
        for rec in ("constant", "linear"):
            runs = [vortex_error(m, rec, scheme, args.t) for m in meshes]
            order, oh, oq = (
                ["", *(f"{o:.2f}" for o in orders(e))]
                for e in ([r[0] for r in runs], [r[3][0] for r in runs], [r[3][1] for r in runs])
            )
            for m, (err, steps, sec, (eh, eq)), o, o_h, o_q in zip(
                meshes, runs, order, oh, oq, strict=True
            ):
                print(
                    f"| {scheme} | {rec} | {m.n_cells} | {err:.3e} | {o} | {o_h} | {o_q} "
                    f"| {steps} | {sec:.1f} |"
                )
                rows.append(dict(scheme=scheme, reconstruction=rec, cells=m.n_cells,
                                 error=err, error_h=eh, error_q=eq, steps=steps,
                                 seconds=sec))  # fmt: skip
    return rows


def two_layer_table(args) -> list[dict]:
    """The two-layer self-convergence rows (and printed table) from ``irregular(--two-layer)``."""
    rows = []
    print("| scheme | reconstruction | cells | L1 difference | order |")
    print("|---|---|---|---|---|")
    for scheme in args.schemes:
        for rec in args.reconstructions:
            mesh = irregular(args.two_layer, args.half)
            cells, errors = self_convergence(mesh, rec, scheme, args.t,
                                             args.levels, args.cfl)  # fmt: skip
            for n, err, o in zip(cells, errors, ["", *orders(errors)], strict=True):
                print(f"| {scheme} | {rec} | {n} | {err:.3e} | {o if o == '' else f'{o:.2f}'} |")
                rows.append(dict(scheme=scheme, reconstruction=rec, cells=n, difference=err))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, nargs="+", default=[16, 32, 64, 128])
    parser.add_argument("--two-layer", type=int, default=0, metavar="N")
    parser.add_argument("--schemes", nargs="+", default=["hll"])
    parser.add_argument("--t", type=float, default=0.3)
    parser.add_argument("--levels", type=int, default=4, help="two-layer: nested meshes")
    parser.add_argument("--half", type=float, default=HALF, help="two-layer: walls at ±half")
    parser.add_argument("--cfl", type=float, default=None, help="two-layer: Courant number")
    parser.add_argument("--reconstructions", nargs="+", default=["constant", "linear"],
                        help="two-layer: which reconstructions")  # fmt: skip
    parser.add_argument("--json", default="")
    args = parser.parse_args()
    rows = two_layer_table(args) if args.two_layer else vortex_table(args)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"t": args.t, "two_layer": args.two_layer, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
