"""What a user's ``Simulation.run`` costs beyond the pipeline's own steps, and the time to
the first step.

    python3 benchmarks/run_overhead.py --backend gpu --out $OUT/run_overhead.json

For test1 on a family member (2.08 M cells by default; ``--cells``) in the GPU's default
order (``--order``, Hilbert), each dtype (``--dtypes``, float32) and scheme named: the time
to the first step (mesh load, Simulation set-up with its renumbering, split into its
stages as ``fvswe run --json`` reports them, first step with compilation), the pipeline's
speed as ``throughput.py`` measures it (``backend.advance`` of a fixed number of steps,
median of repeats), and the speed of ``Simulation.run`` over ``--steps`` steps through the
public API (host clock, blow-up checks and the summary's mass included). The ratio of the
two is the run's overhead.
"""

from __future__ import annotations

import argparse
import datetime
import itertools
import json
import math
import statistics
import time
from pathlib import Path

from fvswe.cases import get_case
from fvswe.mesh import family


def _clock(fn):
    start = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - start


def measure(case, args, scheme: str, dtype: str) -> dict:
    """One scheme and dtype: set-up times, pipeline speed and Simulation.run speed
    (cell-steps/s)."""
    steps, repeats = args.steps, args.repeats
    mesh, t_mesh = _clock(lambda: family(args.cells))
    options = dict(scheme=scheme, backend=args.backend, dtype=dtype, order=args.order)
    sim, t_setup = _clock(lambda: case.simulation(mesh, **options))
    _, t_first = _clock(lambda: sim.run(math.inf, max_steps=1))
    B = sim.backend
    B.advance(math.inf, steps)  # warm-up: graphs of every size the count uses
    pipeline = []
    for _ in range(repeats):
        pipeline.append(_clock(lambda: B.advance(math.inf, steps))[1])
    # Host clock around the whole call (the summary's mass included); t_end far enough that
    # max_steps stops the run.
    runs = [_clock(lambda: sim.run(sim.t + 1e6, max_steps=steps))[1] for _ in range(repeats)]
    per_step = statistics.median(pipeline) / steps
    per_step_run = statistics.median(runs) / steps
    return {
        "scheme": scheme,
        "dtype": dtype,
        "order": args.order,
        "variant": getattr(B, "variant", None),
        "cells": mesh.n_cells,
        "seconds_to_first_step": {"mesh": t_mesh, "setup": t_setup, "first_step": t_first},
        "setup_stages": sim.setup_stages,  # the set-up's own split (Simulation.setup_stages)
        "pipeline_cell_steps_per_s": mesh.n_cells / per_step,
        "run_cell_steps_per_s": mesh.n_cells / per_step_run,
        "run_over_pipeline_time": per_step_run / per_step,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backend", default="gpu")
    ap.add_argument("--cells", type=int, default=2080560)
    ap.add_argument("--schemes", default="pvm-ifcp,roe")
    ap.add_argument("--dtypes", default="float32")
    ap.add_argument("--order", default="hilbert", help="the cell order (the GPU's default)")
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", default="run_overhead.json")
    args = ap.parse_args()
    case = get_case("test1")
    rows = []
    for dtype, scheme in itertools.product(args.dtypes.split(","), args.schemes.split(",")):
        row = measure(case, args, scheme, dtype)
        rows.append(row)
        print(
            f"{scheme:>9} {dtype} {row['cells']:>9} pipeline "
            f"{row['pipeline_cell_steps_per_s'] / 1e9:6.3f}"
            f" G  run {row['run_cell_steps_per_s'] / 1e9:6.3f} G  ratio "
            f"{row['run_over_pipeline_time']:.3f}  to first step "
            + ", ".join(f"{k} {v:.2f} s" for k, v in row["seconds_to_first_step"].items()),
            flush=True,
        )
    out = {
        "benchmark": "run_overhead",
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "backend": args.backend,
        "rows": rows,
    }
    if args.backend == "gpu":
        from fvswe.backends.gpu import device_name

        out["device"] = device_name()
    Path(args.out).write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
