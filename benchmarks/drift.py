"""Volume drift of a long float32 run: compensated against plain, in one process (issue 31).

    python3 benchmarks/drift.py --out $OUT/drift_test1.json             # GPU, test1, 2.08 M cells
    python3 benchmarks/drift.py --backend cpu --size 4000 --steps 2000   # a quick look on the CPU

Runs the paper's test1 (``--case``; walls all round, so each layer's volume is a constant of
the exact scheme) on a member of the mesh family (``--size``, Hilbert order: the GPU's default)
for ``--steps`` steps with the case's Δt rule, once per state: ``compensated`` (the float32
default, docs/SCHEMES.md §2.7; the mass check on, as a user's run) and ``plain`` (the mass
check off: its drift is what is measured), and ``float64`` with ``--float64``. Each row records
the relative volume drift per layer (``mass_rel_drift``), the wall time from the initial state
(after a warm-up restored away: compilation and graph capture excluded) and the cell-steps/s,
and the compensation's cost against plain. The JSON (device, versions, date, rows) is
rewritten after each run.
"""

from __future__ import annotations

import argparse
import datetime
import math
import platform
import time
from pathlib import Path

import numpy as np
from cgrid import write
from throughput import backend_factory

from fvswe.cases import get_case
from fvswe.errors import FvsweError
from fvswe.mesh import family

#: The states measured, in order: (name, dtype, compensated).
STATES = (("compensated", "float32", True), ("plain", "float32", False))
FLOAT64 = ("float64", "float64", False)


def run_one(mesh, args, name: str, dtype: str, compensated: bool) -> dict:
    """Build, warm up, restore and time one state's run; its row of the JSON."""
    case = get_case(args.case)
    plain = dtype == "float32" and not compensated  # the mass check would stop it
    sim = case.simulation(mesh=mesh, backend=args.backend, dtype=dtype, order="hilbert",
                          scheme=args.scheme, compensated=compensated,
                          allow_mass_error=plain)  # fmt: skip
    snap = sim.backend.snapshot()
    sim.run(math.inf, max_steps=args.warmup, check_every=args.warmup)
    sim.backend.restore(snap)
    row = {
        "state": name,
        "dtype": dtype,
        "compensated": bool(sim.backend.compensated),
        "variant": getattr(sim.backend, "variant", None),
    }  # variant: the GPU's kernel variant, None on the CPU
    start = time.perf_counter()
    try:
        sim.run(math.inf, max_steps=args.steps)
    except FvsweError as e:
        row["error"] = str(e)
    return row | sim.summary(time.perf_counter() - start, sim.steps).to_dict()


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--backend", choices=("gpu", "cpu"), default="gpu")
    ap.add_argument("--case", default="test1", choices=("test1", "test2"))
    ap.add_argument("--scheme", default="pvm-ifcp")
    ap.add_argument("--size", type=int, default=2080560, help="triangles (a family member)")
    ap.add_argument("--steps", type=int, default=180_000)
    ap.add_argument("--warmup", type=int, default=20, help="untimed steps, restored away")
    ap.add_argument("--float64", action="store_true", help="a float64 run too")
    ap.add_argument("--out", type=Path, default=Path("benchmarks/results/drift_test1.json"))
    args = ap.parse_args(argv)

    _, timer = backend_factory(args.backend)
    mesh = family(args.size)
    doc = {
        "benchmark": "drift", "case": args.case, "scheme": args.scheme, "cells": mesh.n_cells,
        "steps": args.steps, "backend": args.backend, "order": "hilbert",
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "machine": {"python": platform.python_version(), "numpy": np.__version__,
                    **timer.machine()},
        "rows": [],
    }  # fmt: skip
    for state in STATES + ((FLOAT64,) if args.float64 else ()):
        row = run_one(mesh, args, *state)
        doc["rows"].append(row)
        print(f"{row['state']:>12} {row['steps']:>8} steps {row['wall_s']:>9.3f} s "
              f"{row['cell_steps_per_s'] / 1e9:>7.3f} G cell-steps/s  volume drift "
              f"{', '.join(f'{d:.2g}' for d in row['mass_rel_drift'])}"
              f"{'  ' + row['error'] if 'error' in row else ''}", flush=True)  # fmt: skip
        write(doc, args.out)
    rate = {r["state"]: r["cell_steps_per_s"] for r in doc["rows"]}
    doc["compensation_cost"] = 1.0 - rate["compensated"] / rate["plain"]
    print(f"compensation cost {100 * doc['compensation_cost']:.1f} % of plain's cell-steps/s")
    write(doc, args.out)


if __name__ == "__main__":
    main()
