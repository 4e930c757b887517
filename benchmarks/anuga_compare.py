"""fvswe's one-layer HLL against ANUGA's DE0 on the same triangles (issue 3).

    python3 benchmarks/anuga_compare.py --sizes 64k,256k --threads 2

ANUGA is not a dependency of fvswe; get it with ``pip install anuga``.

The problem is a circular dam break on a flat bed: ``h = 2`` inside ``r < 1.5``,
1 outside, reflective walls, run to ``--t-end``. The script builds ONE mesh per
size (a member of fvswe's family, renumbered by ``--order`` so neither code pays
for the family's deliberately poor numbering) and hands exactly those nodes and
triangles to both codes: ANUGA (flow algorithm DE0, each ``--anuga-modes``) and
fvswe (scheme hll, float64, CPU backend). Each run happens in its own
subprocess with ``OMP_NUM_THREADS`` and ``NUMBA_NUM_THREADS`` set to
``--threads``, so no idle OpenMP pool of one code spins beside the other. Only
the evolve loop is timed; fvswe is warmed up first (compilation) by a short
run. CFL is each code's default (0.9 in both, but the two define the time step
differently, so step counts differ: compare cell-steps/s and time to t_end).
The end states are compared through their radial profiles of h. Results go to
JSON with the machine, versions, load average and date.
"""

from __future__ import annotations

import argparse
import datetime
import importlib.util
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from mesh_prep import _cpu as cpu_model  # the CPU model name, as every benchmark records it

RADIUS, H_IN, H_OUT = 1.5, 2.0, 1.0
ANUGA_MISSING = "ANUGA is not installed (it is not an fvswe dependency): pip install anuga"


def initial_depth(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """The dam break: 2 m of water inside r < 1.5, 1 m outside, flat bed."""
    return np.where(x * x + y * y < RADIUS**2, H_IN, H_OUT)


# -- the two codes (each runs inside a worker subprocess) ---------------------------------------
def run_anuga(nodes: np.ndarray, cells: np.ndarray, args) -> tuple[dict, np.ndarray, np.ndarray]:
    """DE0 on ``nodes``/``cells`` with every boundary edge reflective; (stats, h, centroids)."""
    import anuga

    anuga.set_omp_num_threads(args.threads, verbose=False)
    domain = anuga.Domain(nodes, cells)  # no boundary dict: every boundary edge is 'exterior'
    domain.set_flow_algorithm("DE0")
    domain.set_store(False)  # no .sww file
    if args.cfl is not None:
        domain.set_cfl(args.cfl)
    domain.set_quantity("elevation", 0.0)
    domain.set_quantity("stage", initial_depth, location="centroids")
    domain.set_boundary({"exterior": anuga.Reflective_boundary(domain)})
    domain.set_compute_mode(args.mode)  # after the boundaries: 'unified' builds its kernels now

    def depth() -> np.ndarray:
        q = domain.quantities
        return q["stage"].centroid_values - q["elevation"].centroid_values

    area = np.asarray(domain.areas, dtype=np.float64)
    mass0 = float(area @ depth())
    start = time.perf_counter()
    for _ in domain.evolve(yieldstep=args.t_end, finaltime=args.t_end):
        pass
    wall = time.perf_counter() - start
    h = np.array(depth())
    stats = {
        "code": "anuga",
        "version": anuga.__version__,
        "method": f"DE0 ({domain.get_timestepping_method()}, order {domain.default_order})",
        "mode": domain.get_compute_mode(),
        "cfl": float(domain.get_cfl()),
        "threads": anuga.get_omp_num_threads(),
        "t": float(domain.get_time()),
        "steps": int(domain.number_of_steps),
        "wall_s": wall,
        "mass_initial": mass0,
        "mass": float(area @ h),
    }
    return stats, h, np.asarray(domain.centroid_coordinates, dtype=np.float64)


def run_fvswe(nodes: np.ndarray, cells: np.ndarray, args) -> tuple[dict, np.ndarray, np.ndarray]:
    """HLL, float64, CPU backend on ``nodes``/``cells`` (all walls); (stats, h, centroids)."""
    import numba

    import fvswe
    from fvswe.mesh import Mesh
    from fvswe.simulation import Simulation

    mesh = Mesh.from_arrays(nodes, cells, source="anuga_compare mesh")
    extra = {} if args.cfl is None else {"cfl": args.cfl}

    def simulation() -> Simulation:
        return Simulation(
            mesh, layers=1, scheme="hll", H=0.0, initial={"h": initial_depth},
            dtype="float64", backend="cpu", threads=args.threads, **extra,
        )  # fmt: skip

    simulation().run(args.t_end, max_steps=3)  # warm-up: compilation and first touches
    sim = simulation()
    summary = sim.run(args.t_end)
    fields = sim.fields()
    stats = {
        "code": "fvswe",
        "version": fvswe.__version__,
        "method": "hll (first order, lagged dt)",
        "mode": f"cpu, numba {numba.__version__}, {numba.threading_layer()} threading layer",
        "cfl": sim.backend.cfl,
        "threads": summary.threads,
        "t": summary.t,
        "steps": summary.steps,
        "wall_s": summary.wall_s,
        "mass_initial": summary.mass_initial[0],
        "mass": summary.mass[0],
    }
    return stats, fields["h"], np.stack([fields["x"], fields["y"]], axis=1)


CODES = {"anuga": run_anuga, "fvswe": run_fvswe}


def worker(args) -> None:
    """Run one code on the mesh in ``args.mesh``; write ``<result>.json`` and ``<result>.npz``."""
    mesh = np.load(args.mesh)
    load = os.getloadavg()[0]
    stats, h, centroids = CODES[args.worker](mesh["nodes"], mesh["cells"], args)
    n = len(mesh["cells"])
    stats |= {
        "cells": n,
        "cell_steps_per_s": n * stats["steps"] / stats["wall_s"],
        "mass_rel_drift": abs(stats["mass"] - stats["mass_initial"]) / stats["mass_initial"],
        "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS"),
        "loadavg_1min_before": load,
        "loadavg_1min_after": os.getloadavg()[0],
    }
    Path(args.result + ".json").write_text(json.dumps(stats))
    np.savez(args.result + ".npz", h=h, centroids=centroids)


def spawn(code: str, mesh_file: Path, result: Path, args, mode: str = "") -> tuple[dict, dict]:
    """Run ``code`` in a fresh interpreter with the thread count fixed in its environment."""
    n = str(args.threads)
    env = {**os.environ, "OMP_NUM_THREADS": n, "NUMBA_NUM_THREADS": n}
    cmd = [sys.executable, __file__, "--worker", code, "--mesh", str(mesh_file),
           "--result", str(result), "--threads", n, "--t-end", repr(args.t_end),
           "--mode", mode]  # fmt: skip
    if args.cfl is not None:
        cmd += ["--cfl", repr(args.cfl)]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if proc.returncode:
        sys.exit(f"{code} {mode} failed:\n{proc.stdout[-3000:]}{proc.stderr[-3000:]}")
    arrays = np.load(str(result) + ".npz")
    return json.loads(Path(str(result) + ".json").read_text()), dict(arrays)


# -- comparison ----------------------------------------------------------------------------------
def radial_profile(h: np.ndarray, xy: np.ndarray, area: np.ndarray, bins: np.ndarray):
    """Area-weighted mean of ``h`` in rings ``bins`` around the origin."""
    r = np.hypot(xy[:, 0], xy[:, 1])
    ring = np.digitize(r, bins) - 1
    ok = (ring >= 0) & (ring < len(bins) - 1)
    wsum = np.bincount(ring[ok], weights=area[ok] * h[ok], minlength=len(bins) - 1)
    asum = np.bincount(ring[ok], weights=area[ok], minlength=len(bins) - 1)
    return wsum / np.maximum(asum, 1e-300)


def compare(a: dict, b: dict, area: np.ndarray, ring: float) -> dict:
    """How far two end states lie apart: radial profiles (rings of width ``ring`` inside the
    walls' inscribed circle) and cell by cell, both relative to the initial jump of 1 m."""
    if not np.allclose(a["centroids"], b["centroids"], rtol=0, atol=1e-9):
        sys.exit("the two codes number the triangles differently: cannot compare end states")
    bins = np.arange(0.0, 5.0 + ring / 2, ring)
    pa, pb = (radial_profile(s["h"], a["centroids"], area, bins) for s in (a, b))
    jump = H_IN - H_OUT
    return {
        "radial_ring_width": ring,
        "radial_max_abs_diff_rel": float(np.max(np.abs(pa - pb)) / jump),
        "radial_mean_abs_diff_rel": float(np.mean(np.abs(pa - pb)) / jump),
        "cell_l1_diff_rel": float(area @ np.abs(a["h"] - b["h"]) / (area.sum() * jump)),
    }


# -- driver --------------------------------------------------------------------------------------
def build_mesh(size: str, order: str, folder: Path) -> tuple[Path, np.ndarray, str]:
    """The family member ``square-<size>`` renumbered by ``order``, saved for the workers."""
    from fvswe.mesh import family

    mesh = family(f"square-{size}")
    if order != "none":
        mesh, _ = mesh.reordered(order)
    path = folder / f"mesh-{size}.npz"
    np.savez(path, nodes=mesh.nodes, cells=mesh.cells)
    return path, mesh.area, mesh.source


def measure(size: str, args, folder: Path) -> dict:
    """Both codes on one mesh: their stats and how far their end states lie apart."""
    mesh_file, area, source = build_mesh(size, args.order, folder)
    runs, states = [], {}
    for code, mode in [("fvswe", "")] + [("anuga", m) for m in args.anuga_modes]:
        name = f"{code}-{mode}" if mode else code
        stats, arrays = spawn(code, mesh_file, folder / f"{size}-{name}", args, mode)
        runs.append(stats)
        states[name] = arrays
        print(
            f"{size:>5} {name:<14} {stats['steps']:6d} steps {stats['wall_s']:8.2f} s "
            f"{stats['cell_steps_per_s'] / 1e6:7.2f} M cell-steps/s  threads {stats['threads']}  "
            f"mass drift {stats['mass_rel_drift']:.1e}  load {stats['loadavg_1min_before']:.1f}",
            flush=True,
        )
    fv = runs[0]
    agreement = {}
    for name, state in states.items():
        if name == "fvswe":
            continue
        agreement[name] = compare(states["fvswe"], state, area, args.ring)
        an = next(r for r in runs if f"anuga-{r['mode']}" == name)
        agreement[name]["cell_steps_speedup"] = fv["cell_steps_per_s"] / an["cell_steps_per_s"]
        agreement[name]["time_to_t_end_speedup"] = an["wall_s"] / fv["wall_s"]
        print(
            f"{size:>5} fvswe vs {name}: radial profiles of h differ by at most "
            f"{agreement[name]['radial_max_abs_diff_rel']:.3f} of the 1 m jump; fvswe "
            f"{agreement[name]['cell_steps_speedup']:.2f}x cell-steps/s, "
            f"{agreement[name]['time_to_t_end_speedup']:.2f}x time to t_end",
            flush=True,
        )
    return {"size": size, "mesh": source, "order": args.order, "cells": len(area),
            "runs": runs, "agreement": agreement}  # fmt: skip


def versions() -> dict:
    import numba

    import fvswe

    out = {"python": platform.python_version(), "numpy": np.__version__,
           "numba": numba.__version__, "fvswe": fvswe.__version__}  # fmt: skip
    try:
        from importlib.metadata import version

        out["anuga"] = version("anuga")
    except Exception:
        out["anuga"] = None
    return out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="64k,256k", help="family members, e.g. 16k,64k,256k")
    ap.add_argument("--threads", type=int, default=2, help="threads for both codes")
    ap.add_argument("--t-end", type=float, default=0.5, help="simulated seconds")
    ap.add_argument("--cfl", type=float, default=None, help="same CFL in both (default: each's)")
    ap.add_argument("--order", default="rcm", help="cell numbering given to both codes")
    ap.add_argument("--anuga-modes", default="legacy,unified", help="ANUGA compute modes")
    ap.add_argument("--ring", type=float, default=0.1, help="ring width of the radial profiles")
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "anuga_compare.json"))
    hidden = argparse.SUPPRESS
    ap.add_argument("--worker", choices=sorted(CODES), help=hidden)
    ap.add_argument("--mesh", help=hidden)
    ap.add_argument("--result", help=hidden)
    ap.add_argument("--mode", default="", help=hidden)
    args = ap.parse_args(argv)
    if args.worker:
        return worker(args)
    if importlib.util.find_spec("anuga") is None:
        sys.exit(ANUGA_MISSING)
    args.anuga_modes = [m for m in args.anuga_modes.split(",") if m]
    started = datetime.datetime.now(datetime.timezone.utc)
    with tempfile.TemporaryDirectory(prefix="anuga_compare-") as tmp:
        results = [measure(s, args, Path(tmp)) for s in args.sizes.split(",")]
    out = {
        "problem": {
            "case": "circular dam break, flat bed, reflective walls",
            "domain": "[-5, 5]^2",
            "h": f"{H_IN} for r < {RADIUS}, else {H_OUT}",
            "t_end": args.t_end,
            "cfl": args.cfl or "each code's default",
        },
        "machine": {"cpu": cpu_model(), "cores": os.cpu_count(), "platform": platform.platform()},
        "threads": args.threads,
        "versions": versions(),
        "date": started.isoformat(timespec="seconds"),
        "command": " ".join([Path(sys.argv[0]).name, *sys.argv[1:]]),
        "results": results,
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
