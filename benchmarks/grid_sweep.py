"""Launch sweep of the GPU ``grid`` variant (grid.cu) on cgrid-tide, one-layer float32.

    PYTHONPATH=$PWD python3 benchmarks/grid_sweep.py --out $OUT/grid_sweep_h100.json

cgrid-tide on ``--size`` squared cells (hll-wd, Chezy friction, the level boundary,
non-lagged steps as the case runs), from its initial state: per configuration (threads a
block, hence the tile: 16 cells along x and block / 16 rows; threads per SM the module is
compiled to keep resident, hence its register cap, 0 = none), ``--steps`` steps timed
``--repeats`` times after a warm-up, the median kept. Each configuration runs as the
library's default (``gpu.GRID_LAUNCH`` patched for the call), so the winner goes into that
table as it is; every row carries the kernel's registers and local (spill) bytes. The
default configuration is also timed with lagged steps and, as a reference only, with
``fast_math`` (it changes float32 results). The JSON is rewritten after each row.
"""

from __future__ import annotations

import argparse
import datetime
import math
import platform
from pathlib import Path

import numpy as np
from block_sweep import kernel_info, patched
from cgrid import write
from throughput import GpuTimer

from fvswe.backends import gpu
from fvswe.cases import get_case

#: (threads a block, resident threads per SM) swept; the 16 x 8 tile without a cap was the
#: default before the sweep.
CONFIGS = ((128, 0), (128, 1536), (256, 0), (256, 1024), (256, 1280), (256, 1536), (256, 2048))


def run_config(sim_of, block: int, resident: int, timer, args, **extra) -> dict:
    """One measurement of the tide's steps at this launch (``extra``: Simulation options)."""
    launch = {**gpu.GRID_LAUNCH, (1, False): (block, resident)}
    with patched(gpu, "GRID_LAUNCH", launch):
        sim = sim_of(**extra)
    B = sim.backend
    assert B.variant == gpu.GRID_VARIANT and B.block == block
    B.advance(math.inf, args.warmup)
    times = [timer.time(B, lambda: B.advance(math.inf, args.steps)) for _ in range(args.repeats)]
    us = float(np.median(times)) / args.steps * 1e6
    return {
        "threads": block, "tile": [gpu.GRID_TILE_X, block // gpu.GRID_TILE_X],
        "resident": resident, "dt_mode": B.dt_mode, "fast_math": B.fast_math,
        **kernel_info(B), "us_per_step": us, "cell_steps_per_s": args.size**2 / us * 1e6,
        "times_s": times, "t_s": B.t,
    }  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", type=int, default=1056, help="cells along each side")
    ap.add_argument("--steps", type=int, default=3000)
    ap.add_argument("--warmup", type=int, default=128)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    timer = GpuTimer()
    case = get_case("cgrid-tide").with_grid(args.size, args.size)
    mesh = case.grid().mesh()

    def sim_of(**extra):
        return case.simulation(mesh=mesh, backend="gpu", dtype="float32", **extra)

    doc = {
        "benchmark": "grid_sweep",
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "machine": {"python": platform.python_version(), **timer.machine()},
        "case": "cgrid-tide", "size": args.size, "dtype": "float32", "steps": args.steps,
        "warmup": args.warmup, "repeats": args.repeats, "rows": [],
    }  # fmt: skip
    default = gpu.GRID_LAUNCH[1, False]
    runs = [(c, {}) for c in CONFIGS]
    runs += [(default, {"dt_mode": "lagged"}), (default, {"backend_options": {"fast_math": True}})]
    for (block, resident), extra in runs:
        row = run_config(sim_of, block, resident, timer, args, **extra)
        doc["rows"].append(row)
        print(f"threads {block:4d} resident {resident:5d} {row['dt_mode']:9s} "
              f"fast_math {row['fast_math']!s:5s} regs {row['regs']} local {row['local_bytes']}: "
              f"{row['us_per_step']:7.1f} us a step, "
              f"{row['cell_steps_per_s'] / 1e9:.3f} G cell-steps/s", flush=True)  # fmt: skip
        if args.out:
            write(doc, args.out)


if __name__ == "__main__":
    main()
