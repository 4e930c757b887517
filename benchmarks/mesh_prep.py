"""Mesh preparation cost and the paper's Table 3 (bandwidths) on the renumbering paper's family.

    python benchmarks/mesh_prep.py [--out benchmarks/results/mesh_prep.json] [--repeat 3]
    python benchmarks/mesh_prep.py --no-table --large --out mesh_prep_large.json

For the 2 080 560-triangle mesh it times reading + topology (from the cached
.npz), and each ordering (rcm, gps, hilbert): computing the permutation and
building the renumbered mesh. ``--large`` also times, for the 8.3 M and 33 M
members, building each by refinement (the topology of that size) and the same
orderings. For every member it reports the bandwidths in
the "original" (generator + 1->4 append), RCM and GPS orders beside the
paper's Table 3 (docs/CASES.md §A), plus space-filling-curve bandwidths (not in the
paper; their bandwidth is large, their mean neighbour gap small). Results go
to JSON with the machine, its load average and the date; spy plots of the 16k member
beside it. Each 2.08 M timing is the least of ``--repeat`` runs (on a shared machine the
least is the one the others disturbed least); the larger members are timed once.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import time
from dataclasses import replace
from pathlib import Path

import numba
import numpy as np
import scipy

from fvswe.mesh import bandwidth, family, read_mesh, refine
from fvswe.mesh.catalog import mesh_dir
from fvswe.mesh.generate import square
from fvswe.mesh.orderings import ordering
from fvswe.mesh.spy import spy_png

#: The paper's Table 3: cells -> (original, RCM, GPS).
PAPER = {
    4000: (3786, 73, 62),
    16000: (12000, 147, 126),
    64000: (48000, 294, 249),
    256000: (192000, 598, 500),
    1024000: (768000, 1206, 1004),
    2080560: (1996159, 1728, 1378),
}
TIMED = ("rcm", "gps", "hilbert")
ORDERS = ("rcm", "gps", "hilbert", "morton")


def _cpu() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _mean_gap(mesh) -> float:
    """Mean ``|i - j|`` over neighbouring cells: average locality (bandwidth is the worst)."""
    ec = mesh.edge_cells[mesh.edge_cells[:, 1] >= 0]
    return float(np.abs(ec[:, 0] - ec[:, 1]).mean())


def _clock(fn, repeat: int = 1):
    """``fn()`` and the least wall-clock seconds of ``repeat`` calls."""
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return out, best


def _orderings(mesh, repeat: int = 1) -> dict[str, float]:
    """Seconds of each timed ordering and of renumbering the mesh with it. Each run orders
    a fresh copy of the mesh, so that the adjacency an ordering builds is not reused."""
    out = {}
    for method in TIMED:
        perm, out[method] = _clock(lambda m=method: ordering(replace(mesh), m), repeat)
        _, out[f"{method}_renumber_mesh"] = _clock(lambda p=perm: mesh.permuted(p), repeat)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "mesh_prep.json"))
    ap.add_argument("--no-table", action="store_true", help="skip Table 3 over the family")
    ap.add_argument("--large", action="store_true", help="also time the 8.3 M and 33 M members")
    ap.add_argument("--repeat", type=int, default=3, help="runs per 2.08 M timing (least kept)")
    args = ap.parse_args()

    for method in TIMED:  # compile (or load) the Numba kernels outside the timings
        square(200).reordered(method)

    rows = []
    for cells, (p_orig, p_rcm, p_gps) in {} if args.no_table else PAPER.items():
        mesh = family(cells)
        renumbered = {m: mesh.permuted(ordering(mesh, m)) for m in ORDERS}
        bw = {m: bandwidth(r) for m, r in renumbered.items()}
        gap = {m: _mean_gap(r) for m, r in renumbered.items()}
        rows.append(
            {
                "cells": cells,
                "original": bandwidth(mesh),
                **bw,
                "mean_neighbour_gap": {"original": _mean_gap(mesh), **gap},
                "paper": {"original": p_orig, "rcm": p_rcm, "gps": p_gps},
            }
        )
        print(
            f"{cells:>8}: original {rows[-1]['original']:>8} (paper {p_orig:>8})  "
            f"RCM {bw['rcm']:>5} (paper {p_rcm:>5})  GPS {bw['gps']:>5} (paper {p_gps:>5})",
            flush=True,
        )

    cached = mesh_dir() / "cache" / "square-2m.npz"
    family(2080560)  # make sure the cache exists
    load_before = os.getloadavg()
    mesh, t_read = _clock(lambda: read_mesh(cached), args.repeat)
    timings = {"read_and_topology": t_read, **_orderings(mesh, args.repeat)}
    large = {}
    parent = mesh
    for name in ("square-8m", "square-33m") if args.large else ():
        parent, t_refine = _clock(lambda p=parent: refine(p))
        large[name] = {
            "cells": parent.n_cells,
            "refine_and_topology": t_refine,
            **_orderings(parent),
        }
        print(f"{name}: " + ", ".join(f"{k} {v:.2f}" for k, v in large[name].items()), flush=True)

    result = {
        "benchmark": "mesh_prep",
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "machine": {
            "cpu": _cpu(),
            "cores": os.cpu_count(),
            "python": platform.python_version(),
            "numpy": np.__version__,
            "scipy": scipy.__version__,
            "numba_threads": numba.get_num_threads(),
            "load_average_1_5_15_min": {"before": load_before, "after": os.getloadavg()},
        },
        "repeats_2m": args.repeat,
        "mesh_2m": {"cells": mesh.n_cells, "edges": mesh.n_edges, "file": cached.name},
        "seconds_2m": timings,
        "seconds_large": large,
        "table3": rows,
        "gps_le_rcm_on_every_member": all(r["gps"] <= r["rcm"] for r in rows),
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    spy = Path(args.out).with_name("mesh_spy_16k.png")
    if rows:
        spy_png(family(16000), spy, methods=("none", "rcm", "gps", "hilbert"))

    print("\nTable 3 - bandwidth of the cell adjacency matrix (ours / paper)\n")
    print("| volumes | original | RCM | GPS | Hilbert | Morton |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        p = r["paper"]
        print(
            f"| {r['cells']} | {r['original']} / {p['original']} | {r['rcm']} / {p['rcm']} "
            f"| {r['gps']} / {p['gps']} | {r['hilbert']} | {r['morton']} |"
        )
    print(f"\nGPS <= RCM on every member: {result['gps_le_rcm_on_every_member']}")
    print(f"\n2 080 560 triangles, {os.cpu_count()} cores ({_cpu()}), seconds:")
    for key, val in timings.items():
        print(f"  {key:<26} {val:6.2f}")
    print(f"\nwrote {args.out} and {spy} (the paper's Figure 4 for the 16k mesh)")


if __name__ == "__main__":
    main()
