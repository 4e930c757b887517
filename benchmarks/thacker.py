"""Thacker's planar surface in a paraboloid (Thacker 1981; SWASHES' 2-D case, Delestre et al.
2013 §4.2.2): a tilted plane of water rotating in a paraboloidal basin, with a moving wet/dry
front, fvswe's two reconstructions against the exact solution and ANUGA's DE algorithms on
the same Delaunay meshes (issue 27).

    python benchmarks/thacker.py [--cells 1000,4000,16000] [--anuga-python /venv/bin/python
                                  --anuga DE0,DE1] [--json benchmarks/results/thacker_cpu.json]

Set-up (SWASHES' parameters, centred at the origin): the bed ``z = -h0 (1 - r^2 / a^2)`` with
``h0 = 0.1`` m, ``a = 1`` m on the square ``[-2, 2]^2`` (walls; the water never reaches
them), ``g = 9.81``; the surface ``eta = (ETA h0 / a^2) (2 x cos wt + 2 y sin wt - ETA)`` with
``ETA = 0.5``, ``w = sqrt(2 g h0) / a`` (period ``2 pi / w`` = 4.486 s), the velocity
``(u, v) = ETA w (-sin wt, cos wt)`` where wet; no friction. Meshes:
:func:`fvswe.mesh.generate.square` (Delaunay, smoothed points) of ``--cells`` triangles, the
same nodes and triangles given to ANUGA.

fvswe: ``hll-wd`` (the one-layer wet/dry scheme), float64, ``reconstruction="constant"``
(forward Euler) and ``"linear"`` (SSP-RK2). ANUGA (``--anuga-python``: an interpreter with
``pip install anuga``; ANUGA is no fvswe dependency): ``anuga.Domain`` on the same points and
triangles, reflective walls, no friction, the bed, the surface (``max(eta, z)``) and the
momenta set as functions (ANUGA's usual way: at the vertices), flow algorithm ``--anuga``.

Both codes measured alike (:func:`errors`): at TIMES (a quarter and a half period) the L1
error of the depth ``sum_i A_i |h_i - h(c_i, t)| / sum_i A_i`` (m) over every cell, ``c_i``
the centroid, ``h_i`` the code's centroid depth, and the same for the velocity's magnitude
error ``|(u_i, v_i) - (u, v)(c_i, t)|`` over the cells wet in both (deeper than WET).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from anuga_runs import anuga_run

G, H0, A, ETA, HALF = 9.81, 0.1, 1.0, 0.5, 2.0
OMEGA = np.sqrt(2.0 * G * H0) / A
PERIOD = 2.0 * np.pi / OMEGA
TIMES = (0.25 * PERIOD, 0.5 * PERIOD)
#: Depth (m) below which a cell counts as dry for the velocity error.
WET = 1e-3


def bed(x, y):
    """The bed elevation ``z`` (m, up)."""
    return -H0 * (1.0 - (x**2 + y**2) / A**2)


def exact(x, y, t: float):
    """The exact ``(h, u, v)`` at ``(x, y)`` and time ``t``."""
    c, s = np.cos(OMEGA * t), np.sin(OMEGA * t)
    eta = ETA * H0 / A**2 * (2.0 * x * c + 2.0 * y * s - ETA)
    h = np.maximum(eta - bed(x, y), 0.0)
    wet = h > 0.0
    return h, np.where(wet, -ETA * OMEGA * s, 0.0), np.where(wet, ETA * OMEGA * c, 0.0)


def mesh(cells: int):
    """The Delaunay square of ``cells`` triangles on ``[-HALF, HALF]^2``."""
    from fvswe.mesh.generate import square

    return square(cells, seed=0, half=HALF)


def errors(x, y, area, h, u, v) -> dict:
    """L1 errors (m, m/s) at one time against :func:`exact` (columns per TIMES entry)."""
    out = {}
    for k, t in enumerate(TIMES):
        he, ue, ve = exact(x, y, t)
        wet = (h[k] > WET) & (he > WET)
        dvel = np.hypot(u[k] - ue, v[k] - ve)
        out[f"t{k + 1}"] = {
            "t": t,
            "h_l1": float(np.sum(area * np.abs(h[k] - he)) / area.sum()),
            "vel_l1": float(np.sum((area * dvel)[wet]) / area[wet].sum()),
        }
    return out


def run_fvswe(cells: int, rec: str) -> dict:
    """fvswe ``hll-wd`` with reconstruction ``rec`` on :func:`mesh`; the fields at TIMES."""
    from fvswe.simulation import Simulation

    m = mesh(cells)
    xy = m.centroid
    h, u, v = exact(xy[:, 0], xy[:, 1], 0.0)
    integrator = "ssp-rk2" if rec == "linear" else "euler"
    sim = Simulation(m, layers=1, scheme="hll-wd", g=G, H=-bed(xy[:, 0], xy[:, 1]),
                     initial={"h": h, "qx": h * u, "qy": h * v}, reconstruction=rec,
                     integrator=integrator, boundary=dict.fromkeys(m.tags, "wall"),
                     backend="cpu", dtype="float64")  # fmt: skip
    rows = {"h": [], "u": [], "v": []}
    wall, steps, low, drift = 0.0, 0, [], 0.0
    for t in TIMES:
        s = sim.run(t, check_every=1, callback=lambda x: low.append(float(x.state()[:, 0].min())))
        wall, steps, drift = wall + s.wall_s, steps + s.steps, max(drift, abs(s.mass_rel_drift[0]))
        f = sim.fields()
        d = np.maximum(f["h"], WET)
        rows["h"].append(f["h"])
        rows["u"].append(np.where(f["h"] > WET, f["qx"] / d, 0.0))
        rows["v"].append(np.where(f["h"] > WET, f["qy"] / d, 0.0))
    return {
        "code": f"fvswe hll-wd {rec}",
        "cells": cells,
        "steps": steps,
        "wall_s": wall,
        "min_depth": min(low),
        "mass_rel_drift": drift,
        "errors": errors(f["x"], f["y"], f["area"], *(np.array(rows[k]) for k in "huv")),
    }


def anuga_worker(alg: str, output: str, mesh_npz: str) -> None:
    """ANUGA with flow algorithm ``alg`` on the mesh in ``mesh_npz`` (nodes, triangles
    counter-clockwise); writes the centroid fields at TIMES to ``output``. Needs anuga, numpy."""
    import anuga

    anuga.set_omp_num_threads(1, verbose=False)
    with np.load(mesh_npz) as m:
        domain = anuga.Domain(m["nodes"], m["cells"])
    domain.set_flow_algorithm(alg)
    domain.set_store(False)
    domain.set_quantity("elevation", bed)
    domain.set_quantity("friction", 0.0)
    domain.set_quantity("stage", lambda x, y: np.maximum(exact(x, y, 0.0)[0] + bed(x, y),
                                                         bed(x, y)))  # fmt: skip
    domain.set_quantity("xmomentum", lambda x, y: exact(x, y, 0.0)[0] * exact(x, y, 0.0)[1])
    domain.set_quantity("ymomentum", lambda x, y: exact(x, y, 0.0)[0] * exact(x, y, 0.0)[2])
    domain.set_boundary({tag: anuga.Reflective_boundary(domain)
                         for tag in domain.get_boundary_tags()})  # fmt: skip
    q = domain.quantities
    z = np.array(q["elevation"].centroid_values)
    rows = {"h": [], "u": [], "v": []}
    start, steps = time.perf_counter(), 0
    for t in domain.evolve(yieldstep=TIMES[0], finaltime=TIMES[-1]):
        steps += domain.number_of_steps
        if t > 0.0:
            h = np.array(q["stage"].centroid_values) - z
            d = np.maximum(h, WET)
            rows["h"].append(h)
            rows["u"].append(np.where(h > WET, q["xmomentum"].centroid_values / d, 0.0))
            rows["v"].append(np.where(h > WET, q["ymomentum"].centroid_values / d, 0.0))
    xy = domain.centroid_coordinates
    np.savez(output, x=xy[:, 0], y=xy[:, 1], area=np.array(domain.areas), steps=steps,
             wall_s=time.perf_counter() - start, version=anuga.__version__,
             **{k: np.array(v) for k, v in rows.items()})  # fmt: skip


def run_anuga(python: str, alg: str, cells: int) -> dict:
    """:func:`anuga_worker` on :func:`mesh` in ``python``'s interpreter, as :func:`run_fvswe`."""
    m = mesh(cells)
    tri = m.cells[:, :3].copy()
    p = m.nodes[tri]
    e1, e2 = p[:, 1] - p[:, 0], p[:, 2] - p[:, 0]
    cw = e1[:, 0] * e2[:, 1] - e1[:, 1] * e2[:, 0] < 0
    tri[cw] = tri[cw][:, ::-1]
    with tempfile.TemporaryDirectory() as tmp:
        path = str(Path(tmp) / "mesh.npz")
        np.savez(path, nodes=m.nodes, cells=tri)
        d = anuga_run(python, "thacker", alg, path)
    return {"code": f"ANUGA {d['version']} {alg}", "cells": cells, "steps": int(d["steps"]),
            "wall_s": float(d["wall_s"]),
            "errors": errors(d["x"], d["y"], d["area"], d["h"], d["u"], d["v"])}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", default="1000,4000,16000", help="triangles per mesh")
    parser.add_argument("--anuga-python", help="an interpreter that imports anuga")
    parser.add_argument("--anuga", default="DE0,DE1", help="ANUGA flow algorithms")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    runs = []
    for cells in (int(c) for c in args.cells.split(",")):
        runs += [run_fvswe(cells, rec) for rec in ("constant", "linear")]
        if args.anuga_python:
            runs += [run_anuga(args.anuga_python, alg, cells) for alg in args.anuga.split(",")]
    print("| cells | code | L1 h, T/4 | L1 h, T/2 | L1 speed, T/4 | L1 speed, T/2 | steps | s |")
    print("|---|---|---|---|---|---|---|---|")
    for r in runs:
        e = r["errors"]
        print(f"| {r['cells']} | {r['code']} | {e['t1']['h_l1']:.3e} | {e['t2']['h_l1']:.3e} | "
              f"{e['t1']['vel_l1']:.3e} | {e['t2']['vel_l1']:.3e} | {r['steps']} | "
              f"{r['wall_s']:.1f} |")  # fmt: skip
    if args.json:
        report = {
            "benchmark": "Thacker's planar surface in a paraboloid (SWASHES parameters)",
            "h0": H0,
            "a": A,
            "eta": ETA,
            "g": G,
            "period": PERIOD,
            "times": TIMES,
            "wet": WET,
            "machine": platform.node(),
            "loadavg": os.getloadavg()[0],
            "runs": runs,
            "date": datetime.datetime.now().isoformat(timespec="seconds"),
        }
        args.json.write_text(json.dumps(report, indent=1, default=float) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
