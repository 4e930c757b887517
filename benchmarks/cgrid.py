"""The C-grid thesis's timings (docs/CASES.md §B) through the finite-volume pipeline on quads.

    python3 benchmarks/cgrid.py --budget-s 480                    # GPU, float32: the issue's set
    python3 benchmarks/cgrid.py --backend cpu --sizes 96 --hours 0.5 --out cpu.json

``cgrid-tide`` (24 h of tide by default, ``--hours``) at 96², 192², 384² and 1056², and
``cgrid-island`` (1000 steps, ``--steps``) at 6148², each beside the thesis's RTX 2080 Ti
float32 time. Every run builds its grid and Simulation (timed apart), takes ``--warmup``
steps (compilation, CUDA graph capture), restores the initial state, then is timed with
the host clock from the initial state to its end through ``Simulation.run`` (its blow-up
checks included, each synchronising the device: every ``--check-every`` steps, by default
the backend's own interval, as a user's run).

Runs keep the mass check on: a float32 run is compensated (docs/SCHEMES.md §2.7, the
default), so its volume holds to round-off. ``--no-compensated`` runs plain float32, which
loses every state increment smaller than half an ulp of the depth (its volume drifts
linearly in its steps, about 1e-9 a step at 1056², beyond the check's 1e-5 after ~10^4
steps): with the check off then (``allow_mass_error``), for the comparison. Every row
records ``mass_rel_drift`` (per layer, relative, net of the boundary inflow), ``clipped``
and ``compensated``.

Runs go cheapest first (estimated cell-steps). With ``--budget-s`` a run that would start
too late is skipped and a run still going at the deadline is cut there: its row records
the simulated time and the wall time actually measured (``"cut": true``), never an
extrapolation. The JSON (device, versions, date, every row) is rewritten after each run.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np
from throughput import backend_factory

from fvswe.cases import get_case
from fvswe.errors import FvsweError

DEFAULT_SIZES = {"cgrid-tide": (96, 192, 384, 1056), "cgrid-island": (6148,)}
#: The thesis's RTX 2080 Ti float32 times (s) and step counts (docs/CASES.md §B): the tide over
#: 24 h, the island 1000 steps.
THESIS = {
    "cgrid-tide": {96: (4.35, 237_670), 192: (8.90, 465_642), 384: (30.2, 922_757),
                   1056: (503.0, 2_510_297)},
    "cgrid-island": {6148: (5.757, 1000), 12292: (24.589, 1000)},
}  # fmt: skip
#: Other published timings quoted beside ours (docs/CASES.md §B).
REFERENCES = {
    "delft3d_flow_cpu_tide_24h_s": {"100x100": 40.0, "1000x1000": 57_600.0},
    "thesis_best_12_thread_cpu_island_1000_steps_s": {"6148x6148": 264.36},
}
#: Steps per 24 h per cell across the tide (the thesis's counts), for ordering runs only.
TIDE_STEPS_PER_CELL_WIDTH = 2400
#: A run is not started with less than this left of the budget (s).
MIN_START_S = 10.0


class Cut(Exception):
    """Raised from the run's callback at the deadline."""


def plan(cases: list[str], sizes: list[int] | None, hours: float, steps: int) -> list[dict]:
    """The runs, cheapest first by estimated cell-steps (so a budget cuts the largest)."""
    runs = []
    for name in cases:
        for n in sizes or DEFAULT_SIZES[name]:
            est = TIDE_STEPS_PER_CELL_WIDTH * n * hours / 24 if name == "cgrid-tide" else steps
            runs.append({"case": name, "n": n, "estimated_cell_steps": n * n * est})
    return sorted(runs, key=lambda r: r["estimated_cell_steps"])


def thesis_entry(name: str, n: int, hours: float, steps: int) -> tuple[float, int] | None:
    """The thesis's (seconds, steps) for this run, if it ran the same simulated span."""
    full = hours == 24 if name == "cgrid-tide" else steps == 1000
    return THESIS.get(name, {}).get(n) if full else None


def run_one(spec: dict, args, deadline: float) -> dict:
    """Build, warm up, restore and time one run; the row of the JSON."""
    name, n = spec["case"], spec["n"]
    case = get_case(name).with_grid(n, n)
    row = {"case": name, "nx": n, "ny": n, "cells": n * n}
    t0 = time.perf_counter()
    mesh = case.grid().mesh()
    t1 = time.perf_counter()
    plain = args.no_compensated and args.dtype == "float32"  # the check would stop it
    sim = case.simulation(mesh=mesh, backend=args.backend, dtype=args.dtype,
                          compensated=not args.no_compensated, allow_mass_error=plain)  # fmt: skip
    t2 = time.perf_counter()
    row.update(mesh_s=t1 - t0, setup_s=t2 - t1, scheme=case.scheme,
               compensated=getattr(sim.backend, "compensated", False),
               dt_mode=case.options().get("dt_mode", "lagged"),
               variant=getattr(sim.backend, "variant", None))  # fmt: skip
    if name == "cgrid-tide":
        t_end, max_steps = args.hours * 3600.0, None
    else:  # fixed dt (scaled with the cell to keep the thesis's Courant number): count steps
        t_end, max_steps = math.inf, args.steps
        row["dt"] = case.dt
    snap = sim.backend.snapshot()
    sim.run(t_end, max_steps=args.warmup, check_every=args.warmup)
    sim.backend.restore(snap)
    t3 = time.perf_counter()
    row["warmup_s"] = t3 - t2

    marks = {"last": time.perf_counter()}

    def checkpoint(s) -> None:
        marks["last"] = time.perf_counter()
        if marks["last"] > deadline:
            raise Cut

    start = time.perf_counter()
    marks["last"] = start
    try:
        sim.run(t_end, max_steps=max_steps, check_every=args.check_every, callback=checkpoint)
        row["cut"] = False
    except Cut:
        row["cut"] = True
    except FvsweError as e:
        row.update(cut=True, error=str(e))
    row.update(sim.summary(marks["last"] - start, sim.steps).to_dict())
    row["t_goal"] = None if math.isinf(t_end) else t_end
    row["steps_goal"] = max_steps
    if name == "cgrid-tide":  # pseudo-1-D: v must stay exactly 0
        row["max_abs_qy"] = float(np.abs(sim.fields()["qy"]).max())
    ref = None if row["cut"] else thesis_entry(name, n, args.hours, args.steps)
    if ref:
        row.update(thesis_s=ref[0], thesis_steps=ref[1], speedup_vs_thesis=ref[0] / row["wall_s"])
    return row


def machine_info(backend: str) -> dict:
    _, timer = backend_factory(backend)
    return {"python": platform.python_version(), "numpy": np.__version__, **timer.machine()}


def write(doc: dict, path: Path) -> None:
    """Atomic rewrite, so a run killed mid-write leaves the previous partial JSON."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(doc, indent=2) + "\n")
    os.replace(tmp, path)


HEAD = (f"{'case':>12} {'grid':>10} {'cells':>10} {'steps':>9} {'sim_t_s':>9} {'wall_s':>9} "
        f"{'Gcell-st/s':>10} {'thesis_s':>8} {'speedup':>7}  note")  # fmt: skip


def line(row: dict) -> str:
    note = []
    if row.get("skipped"):
        note.append(f"skipped: {row['skipped']}")
    elif row["cut"]:
        goal = row["t_goal"] if row["t_goal"] is not None else f"{row['steps_goal']} steps"
        note.append(f"CUT at the budget (goal {goal}); measured part only")
    if row.get("error"):
        note.append(row["error"])
    if not row.get("skipped"):
        note.append(f"volume drift {max(row['mass_rel_drift']):.2g}")
    if row.get("thesis_steps"):
        note.append(f"thesis steps {row['thesis_steps']}")
    grid = f"{row['nx']}x{row['ny']}"
    if row.get("skipped"):
        return f"{row['case']:>12} {grid:>10} {row['cells']:>10}  " + "; ".join(note)
    return (f"{row['case']:>12} {grid:>10} {row['cells']:>10} {row['steps']:>9} {row['t']:>9.1f} "
            f"{row['wall_s']:>9.3f} {row['cell_steps_per_s'] / 1e9:>10.3f} "
            f"{row.get('thesis_s', math.nan):>8.4g} {row.get('speedup_vs_thesis', math.nan):>7.3g}"
            f"  " + "; ".join(note))  # fmt: skip


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--backend", choices=("gpu", "cpu"), default="gpu")
    ap.add_argument("--cases", default="cgrid-tide,cgrid-island")
    ap.add_argument("--sizes", default=None,
                    help="cells per side for every case (default: tide 96,192,384,1056; island "
                         "6148)")  # fmt: skip
    ap.add_argument("--dtype", choices=("float32", "float64"), default="float32")
    ap.add_argument("--hours", type=float, default=24.0, help="simulated hours of the tide")
    ap.add_argument("--no-compensated", action="store_true",
                    help="plain float32 (no remainders; the mass check off)")  # fmt: skip
    ap.add_argument("--steps", type=int, default=1000, help="steps of cgrid-island")
    ap.add_argument("--variant", default=None,
                    help="GPU variant (edge, gather, slot; grid: default on grids)")  # fmt: skip
    ap.add_argument("--warmup", type=int, default=100, help="untimed steps before each run")
    ap.add_argument("--check-every", type=int, default=None,
                    help="steps between blow-up checks (and budget looks); default: the "
                         "backend's")  # fmt: skip
    ap.add_argument("--budget-s", type=float, default=None, help="wall budget of everything")
    ap.add_argument("--out", type=Path, default=Path("benchmarks/results/cgrid_gpu.json"))
    args = ap.parse_args(argv)
    begin = time.perf_counter()
    deadline = begin + args.budget_s if args.budget_s else math.inf
    if args.variant:
        os.environ["FVSWE_GPU_VARIANT"] = args.variant  # read by GpuBackend
    cases = args.cases.split(",")
    for name in cases:
        if name not in DEFAULT_SIZES:
            raise SystemExit(f"--cases: {name!r} is not one of {', '.join(DEFAULT_SIZES)}")
    sizes = [int(s) for s in args.sizes.split(",")] if args.sizes else None
    machine = machine_info(args.backend)
    doc = {
        "benchmark": "cgrid",
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "argv": sys.argv[1:] if argv is None else list(argv),
        "backend": args.backend,
        "machine": machine,
        "dtype": args.dtype,
        "tide_hours": args.hours,
        "island_steps": args.steps,
        "budget_s": args.budget_s,
        "timing": "host clock, initial state to end through Simulation.run after a warm-up "
        "and a restore; mesh and setup timed apart",
        "mass_check": "off (allow_mass_error): plain float32 stagnation drifts the volume "
        "linearly in steps; each row's mass_rel_drift is the measured drift"
        if args.no_compensated and args.dtype == "float32"
        else "on (a compensated float32 state, docs/SCHEMES.md §2.7, or float64)",
        "thesis": "RTX 2080 Ti, float32, staggered C-grid finite differences (docs/CASES.md §B)",
        "thesis_s_steps": {c: {str(n): v for n, v in t.items()} for c, t in THESIS.items()},
        "references": REFERENCES,
        "results": [],
    }
    print(f"{args.backend}: {machine['device']}, {args.dtype}, tide {args.hours:g} h, island "
          f"{args.steps} steps", flush=True)  # fmt: skip
    print(HEAD, flush=True)
    for spec in plan(cases, sizes, args.hours, args.steps):
        left = deadline - time.perf_counter()
        if left < MIN_START_S:
            n = spec["n"]
            skipped = f"{left:.0f} s of the budget left"
            row = {"case": spec["case"], "nx": n, "ny": n, "cells": n * n, "skipped": skipped}
        else:
            try:
                row = run_one(spec, args, deadline)
            except FvsweError as e:  # a set-up the case refuses (e.g. past its tide table)
                raise SystemExit(f"{spec['case']} {spec['n']}x{spec['n']}: {e}") from None
        doc["results"].append(row)
        doc["elapsed_s"] = time.perf_counter() - begin
        write(doc, args.out)
        print(line(row), flush=True)
    print(f"wrote {args.out} ({time.perf_counter() - begin:.0f} s in all)", flush=True)


if __name__ == "__main__":
    main()
