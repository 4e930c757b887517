"""Accuracy per hour: the wall time to reach a given L1 error, first order against linear.

Issue 27 asks whether the linear reconstruction (SSP-RK2, docs/SCHEMES.md §19) reaches a
given accuracy sooner than first order on the same machine. Each reconstruction runs a
problem on a chain of nested meshes (each 4 times the cells of the one before); every run
gives an L1 error and the pipeline's wall time (``RunSummary.wall_s``: compiling is not in
it). The wall time at an error ``E`` is read off each reconstruction's (error, wall) points
by log-log interpolation; outside a reconstruction's measured errors it is extrapolated
along its last two points and marked so. The speed-up at ``E`` is first order's wall time
over the linear one's, at each error the linear runs reached.

Problems:

- ``vortex``: the steady vortex of :func:`fvswe.exact.vortex` on the irregular triangles of
  ``benchmarks/second_order.py`` (one layer, flat bed, an exact smooth solution), to ``--t``;
  ``--n`` lists the meshes (``2 n^2`` triangles each).
- ``test1``: the paper's test 1 (two layers, an internal circular dam break, walls, t = 0.1
  s) on ``--base`` of the paper's mesh family and its 1->4 refinements; no exact solution,
  so the error is the L1 difference from a linear run one refinement finer than the finest
  level (averaged over the children, :func:`coarsen`), the "fine reference" of the issue.

``--extra K`` runs first order on ``K`` further refinements (the vortex: ``n`` doubled; test 1:
the reference is then one refinement finer than those).

Examples (the GPU's figures in docs/validation.md)::

    python benchmarks/accuracy_per_hour.py vortex --backend gpu --n 128 256 512 1024 --extra 2
    python benchmarks/accuracy_per_hour.py test1 --backend gpu --base square-64k --levels 3 \
        --extra 1
"""

from __future__ import annotations

import argparse
import datetime
import json
import platform
import sys
from dataclasses import dataclass
from functools import partial

import numpy as np
from second_order import GAMMA, R, irregular

from fvswe.cases import CASES
from fvswe.exact import vortex
from fvswe.mesh import Mesh, family
from fvswe.mesh.catalog import refine

RECONSTRUCTIONS = ("constant", "linear")
#: Steps of the unmeasured warm-up run before the measured ones.
WARM_STEPS = 3


@dataclass
class Run:
    """One reconstruction on one mesh: its error, wall time and steps."""

    reconstruction: str
    cells: int
    error: float
    wall_s: float
    steps: int

    def row(self) -> dict:
        return dict(self.__dict__, cell_steps_per_s=self.cells * self.steps / self.wall_s)


def settings(args, reconstruction: str) -> dict:
    """The Simulation settings a run of this study takes."""
    integrator = "ssp-rk2" if reconstruction == "linear" else "euler"
    return dict(backend=args.backend, dtype=args.dtype, scheme=args.scheme,
                reconstruction=reconstruction, integrator=integrator)  # fmt: skip


def vortex_runs(args) -> list[Run]:
    """The vortex on ``irregular(n)`` for each ``--n``, both reconstructions."""
    from fvswe.simulation import Simulation

    runs = []
    sizes = args.n + [args.n[-1] * 2**k for k in range(1, args.extra + 1)]
    for i, n in enumerate(sizes):
        mesh = irregular(n)
        want = vortex(*mesh.centroid.T, gamma=GAMMA, R=R)
        for rec in reconstructions(i, len(args.n)):
            kwargs = dict(layers=1, H=1.0, initial=want, **settings(args, rec))
            sim, summary = measured(partial(Simulation, mesh, **kwargs), args.t, warm=i == 0)
            W = sim.state().astype(np.float64)
            err = sum(np.abs(W[:, c] - want[f]) for c, f in enumerate(("h", "qx", "qy")))
            runs.append(Run(rec, mesh.n_cells, float(np.sum(mesh.area * err)),
                            summary.wall_s, summary.steps))  # fmt: skip
            print(f"  vortex {rec} {mesh.n_cells} cells: {runs[-1].error:.3e}, "
                  f"{summary.wall_s:.3f} s", flush=True)  # fmt: skip
    return runs


def reconstructions(level: int, linear_levels: int) -> tuple[str, ...]:
    """What runs on mesh ``level``: both reconstructions on the first ``linear_levels``
    meshes, first order alone on the ``--extra`` finer ones (so that its errors reach the
    linear runs' and its wall times there are measured, not extrapolated)."""
    return RECONSTRUCTIONS if level < linear_levels else ("constant",)


def coarsen(coarse: Mesh, fine: Mesh, W: np.ndarray) -> np.ndarray:
    """``W`` on ``fine = refine(coarse)`` averaged over each coarse cell's four children
    (catalog.refine's numbering: the centre child keeps the parent's number, the corner
    children follow all parents, three a parent)."""
    p = np.arange(coarse.n_cells)
    kids = np.stack([p, coarse.n_cells + 3 * p, coarse.n_cells + 3 * p + 1,
                     coarse.n_cells + 3 * p + 2], 1)  # fmt: skip
    a = fine.area[kids]
    return np.einsum("pk,pkc->pc", a, W[kids]) / a.sum(axis=1)[:, None]


def test1_runs(args) -> list[Run]:
    """Test 1 on ``--levels`` nested meshes from ``--base``, both reconstructions, each
    against a linear run on the next refinement of the finest level."""
    case = CASES["test1"]
    meshes = [family(args.base)]
    while len(meshes) < args.levels + args.extra + 1:
        meshes.append(refine(meshes[-1]))
    reference = run_test1(case, meshes[-1], "linear", args)[0]
    refs = [reference]
    for coarse, fine in zip(meshes[-2::-1], meshes[:0:-1], strict=True):
        refs.insert(0, coarsen(coarse, fine, refs[0]))
    runs = []
    for i, (mesh, ref) in enumerate(zip(meshes[:-1], refs[:-1], strict=True)):
        for rec in reconstructions(i, args.levels):
            W, summary = run_test1(case, mesh, rec, args)
            err = float(np.sum(mesh.area[:, None] * np.abs(W - ref)))
            runs.append(Run(rec, mesh.n_cells, err, summary.wall_s, summary.steps))
            print(f"  test1 {rec} {mesh.n_cells} cells: {err:.3e}, {summary.wall_s:.3f} s",
                  flush=True)  # fmt: skip
    return runs


def run_test1(case, mesh: Mesh, reconstruction: str, args):
    """``(state in float64, summary)`` of test 1 on ``mesh``, warmed up on the same mesh."""
    kwargs = settings(args, reconstruction)
    sim, summary = measured(partial(case.simulation, mesh, **kwargs), case.t_end)
    return sim.state().astype(np.float64), summary


def measured(make, t_end: float, warm: bool = True):
    """``(simulation, summary)`` of a fresh ``make()`` run to ``t_end``; with ``warm``, after
    WARM_STEPS of another (compiling or loading the kernels, first launches: not measured)."""
    if warm:
        make().run(t_end, max_steps=WARM_STEPS)
    sim = make()
    return sim, sim.run(t_end)


def wall_at(runs: list[Run], error: float) -> tuple[float, bool]:
    """The wall time at ``error`` by log-log interpolation of ``runs`` (one reconstruction,
    coarse to fine), and whether it was extrapolated past their errors."""
    e = np.log([r.error for r in runs])
    w = np.log([r.wall_s for r in runs])
    inside = e.min() <= np.log(error) <= e.max()
    i = int(np.clip(np.searchsorted(-e, -np.log(error)) - 1, 0, len(runs) - 2))
    slope = (w[i + 1] - w[i]) / (e[i + 1] - e[i])
    return float(np.exp(w[i] + slope * (np.log(error) - e[i]))), not inside


def speedups(runs: list[Run]) -> list[dict]:
    """First order's wall time over the linear one's at each error a linear run reached."""
    first = [r for r in runs if r.reconstruction == "constant"]
    linear = [r for r in runs if r.reconstruction == "linear"]
    rows = []
    for lin in linear:
        wall, extrapolated = wall_at(first, lin.error)
        rows.append(dict(error=lin.error, linear_cells=lin.cells, linear_wall_s=lin.wall_s,
                         first_order_wall_s=wall, speedup=wall / lin.wall_s,
                         extrapolated=extrapolated))  # fmt: skip
    return rows


def table(runs: list[Run], rows: list[dict]) -> None:
    """Print the runs and the speed-ups as Markdown tables."""
    print("| reconstruction | cells | L1 error | wall s | steps | G cell-steps/s |")
    print("|---|---|---|---|---|---|")
    for r in runs:
        rate = r.cells * r.steps / r.wall_s / 1e9
        print(f"| {r.reconstruction} | {r.cells} | {r.error:.3e} | {r.wall_s:.3f} | "
              f"{r.steps} | {rate:.3f} |")  # fmt: skip
    print("\n| L1 error | linear cells | linear s | first order s | speed-up |")
    print("|---|---|---|---|---|")
    for s in rows:
        mark = " (extrapolated)" if s["extrapolated"] else ""
        print(f"| {s['error']:.3e} | {s['linear_cells']} | {s['linear_wall_s']:.3f} | "
              f"{s['first_order_wall_s']:.3f}{mark} | {s['speedup']:.2f}× |")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("problem", choices=("vortex", "test1"))
    parser.add_argument("--backend", default="cpu")
    parser.add_argument("--dtype", default="float64")
    parser.add_argument("--scheme", default="")
    parser.add_argument("--n", type=int, nargs="+", default=[16, 32, 64])
    parser.add_argument("--t", type=float, default=0.3, help="vortex: the end time")
    parser.add_argument("--base", default="square-4k", help="test1: the coarsest mesh")
    parser.add_argument("--levels", type=int, default=3, help="test1: meshes measured")
    parser.add_argument(
        "--extra",
        type=int,
        default=0,
        help="refinements beyond the last level run at first order only",
    )
    parser.add_argument("--json", default="")
    args = parser.parse_args()
    args.scheme = args.scheme or ("hll" if args.problem == "vortex" else "pvm-ifcp")
    if (len(args.n) if args.problem == "vortex" else args.levels) < 2:
        parser.error("a wall time at an error needs two meshes or more (--n N1 N2 ..., --levels)")
    runs = vortex_runs(args) if args.problem == "vortex" else test1_runs(args)
    rows = speedups(runs)
    table(runs, rows)
    if args.json:
        out = dict(benchmark="accuracy_per_hour", problem=args.problem, settings=vars(args),
                   date=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                   host=platform.node(), python=sys.version.split()[0], device=device_name(args),
                   runs=[r.row() for r in runs], speedups=rows)  # fmt: skip
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)


def device_name(args) -> str:
    """The GPU's name for a GPU run, else the processor's."""
    if args.backend != "gpu":
        return platform.processor() or platform.machine()
    import cupy

    return cupy.cuda.runtime.getDeviceProperties(0)["name"].decode()


if __name__ == "__main__":
    main()
