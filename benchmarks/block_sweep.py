"""Tuning sweep of the GPU ``block`` variant (issue 14) on test1, 2.08 M cells, in one call.

    PYTHONPATH=$PWD python3 benchmarks/block_sweep.py --out $OUT/block_sweep_h100.json

Hilbert order (``order="auto"`` on the GPU), lagged steps, per scheme and dtype:

1. shapes: cells a thread block owns x threads per block (``SHAPES``). Each block
   evaluates about 1.5 (1 + twice-evaluated fraction) edge tasks a cell, so 128 cells
   are ~217 tasks: 224 threads run them in one round, 128 or 256 leave ~15 % of the
   thread-rounds idle at the barrier;
2. at the fastest shape: the register cap (``BlockShape.resident``, hence
   ``FVSWE_MIN_BLOCKS``; 0 = no cap), the task order inside a block (``interior-first``:
   the edges between two of its cells first, the cut and boundary edges last, so the
   warps whose neighbours lie in other blocks are grouped), and for float32 the
   approximate division and square root (``fast_math``: changes float32 results, an
   option, never a default);
3. RCM order: edge, gather and block at each scheme's fastest bitwise configuration
   (for :func:`fvswe.backends.gpu.default_variant`: block evaluates ~95 % of the edges
   twice in band orders).

Each block configuration runs as the library's default shape
(``gpu.BLOCK_SHAPES`` patched for the call), so the winners go into that table as they are.
Every row carries the kernel's registers, local (spill) bytes and resident blocks per SM
(CUDA occupancy API) and the compulsory bytes of a step with the bandwidth they make; the
JSON is rewritten after each row, so a cut-off run keeps what it measured. ``--budget-s``
bounds the whole call (the RCM stage keeps ``RCM_RESERVE_S``).

``--shapes`` and ``--caps`` replace stage 1's shapes and stage 2's caps (a follow-up sweep of
a few shapes at more caps, e.g. ``--shapes 256x224,256x256 --caps 768,1024,1280,1344,1536``).

``--ab CONFIGS --rounds N`` instead times each scheme and dtype at these configurations,
interleaved, ``N`` rounds: a register cap at the library's default shape (``1280``) or cells x
threads x cap (``256x256x1280``), in the default shape's task order (candidates whose gain in a
sweep is within the run-to-run spread; tests hold ``gpu.BLOCK_SHAPES`` to the best median).

``--profile SCHEME:DTYPE[:MODE]`` (MODE ``compensated`` or ``fast-math``) instead runs 24 block
steps without CUDA graphs, for Nsight Compute (docs/GPU.md gives the command).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import math
import platform
import time
from pathlib import Path

import numpy as np
from throughput import SIZES, GpuTimer, case_layout, measure

from fvswe import registry
from fvswe.backends import gpu
from fvswe.backends.layout import twice_evaluated
from fvswe.cases import get_case
from fvswe.mesh import family

#: (cells a thread block owns, threads per block) of stage 1.
SHAPES = ((64, 64), (64, 128), (128, 128), (128, 224), (128, 256), (256, 224), (256, 256))
#: Register caps of stage 2 (resident threads per SM; 0: none), beside the library's.
RESIDENT = {False: (0, 1024), True: (0, 640)}
#: Seconds of the budget kept for the RCM stage.
RCM_RESERVE_S = 70.0


@contextlib.contextmanager
def patched(obj, name: str, value):
    """``obj.name = value`` for the duration of the block."""
    old = getattr(obj, name)
    setattr(obj, name, value)
    try:
        yield
    finally:
        setattr(obj, name, old)


def kernel_info(B) -> dict:
    """Registers, local bytes and resident blocks per SM of the backend's step kernel."""
    import cupy

    name = "block_step" if B.variant == "block" else f"{B.variant}_step"
    f = B._k.get(name) or B._k["edge_pass"]
    info = {
        "regs": getattr(f, "num_regs", None),
        "local_bytes": getattr(f, "local_size_bytes", None),
    }
    with contextlib.suppress(Exception):  # the occupancy API, where this CuPy has it
        info["blocks_per_sm"] = cupy.cuda.driver.occupancyMaxActiveBlocksPerMultiprocessor(
            f.ptr, B.block, 0
        )
    return info


def run_config(layout, case, scheme, variant, timer, args, cells=None, threads=128,
               resident=None, task_order="edge", fast_math=False) -> dict:  # fmt: skip
    """One measurement; ``resident`` None: the :data:`gpu.RESIDENT_THREADS` register cap. A
    block configuration runs as the default shape of its (scheme kind, dtype)."""
    double = np.dtype(layout.dtype) == np.float64
    caps = dict(gpu.RESIDENT_THREADS)
    if resident is not None:
        caps[(2, double)] = resident
    shapes = dict(gpu.BLOCK_SHAPES)
    if variant == "block":
        shapes[registry.get(scheme).costly, double] = gpu.BlockShape(
            cells, threads, caps[(2, double)], task_order == "interior"
        )
    row = {"scheme": scheme, "dtype": str(layout.dtype), "variant": variant, "threads": threads,
           "cells_per_block": cells, "resident": caps.get((2, double), 0),
           "min_blocks": max(1, caps.get((2, double), 0) // threads), "task_order": task_order,
           "extra_options": list(gpu.FAST_MATH if fast_math else ())}  # fmt: skip
    with patched(gpu, "RESIDENT_THREADS", caps), patched(gpu, "BLOCK_SHAPES", shapes):
        try:
            B = gpu.GpuBackend(layout, scheme, cfl=case.cfl, dt_mode="lagged", variant=variant,
                               block=None if variant == "block" else threads,
                               fast_math=fast_math)  # fmt: skip
            assert (B.block, B.cells if variant == "block" else None) == (threads, cells)
            row.update(kernel_info(B))
            row.update(measure(B, timer, layout.n_cells, args.min_time, args.repeats, 16384))
            gbs = B.bytes_per_step() / (row["us_per_step"] * 1e-6) / 1e9
            row.update(bytes_per_step=B.bytes_per_step(), effective_GBs=gbs)
            del B
        except (Exception, SystemExit) as e:  # a config that does not fit or blows up
            row["error"] = f"{type(e).__name__}: {e}"
    return row


def best(rows: list[dict], scheme: str, dtype: str, order: str) -> dict | None:
    """The fastest bitwise block row of this scheme and dtype in this order."""
    ok = [r for r in rows if r["variant"] == "block" and r["scheme"] == scheme
          and r["dtype"] == dtype and r["order"] == order and "error" not in r
          and not r["extra_options"]]  # fmt: skip
    return max(ok, key=lambda r: r["cell_steps_per_s"], default=None)


def size(label: str) -> int:
    return SIZES.get(label.lower()) or int(label)


def profile(args) -> None:
    """24 block steps of one module without graphs (Nsight Compute profiles one launch)."""
    scheme, dtype, *mode = args.profile.split(":")
    if mode not in ([], ["compensated"], ["fast-math"]):
        raise SystemExit(f"--profile {args.profile}: the mode is compensated or fast-math")
    case = get_case("test1")
    mesh, _ = family(size(args.size)).reordered("hilbert")
    layout = case_layout(case, mesh, np.dtype(dtype))
    shape = gpu.block_shape(scheme, layout.model.layers, layout.dtype, layout.k)
    B = gpu.GpuBackend(layout, scheme, cfl=case.cfl, dt_mode="lagged", variant="block",
                       block=args.threads or shape.threads, cells=args.cells or shape.cells,
                       graphs=False, compensated=mode == ["compensated"],
                       fast_math=mode == ["fast-math"])  # fmt: skip
    B.advance(math.inf, 24)
    print(f"{args.profile} block cells {B.cells} threads {B.block}: {B.steps} steps; "
          f"{mesh.n_cells} cells, {mesh.n_edges} edges")  # fmt: skip


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size", default="2m", help=f"of {', '.join(SIZES)} or a count")
    ap.add_argument("--schemes", default="pvm-ifcp,roe")
    ap.add_argument("--dtypes", default="float32,float64")
    ap.add_argument("--budget-s", type=float, default=280.0, help="wall seconds for the call")
    ap.add_argument("--min-time", type=float, default=0.05, help="seconds per timed repeat")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--no-rcm", action="store_true", help="skip stage 3")
    ap.add_argument("--profile", default=None, metavar="SCHEME:DTYPE[:MODE]")
    ap.add_argument("--cells", type=int, default=None, help="with --profile (default: the shape's)")
    ap.add_argument("--threads", type=int, default=None, help="with --profile (the shape's)")
    ap.add_argument(
        "--shapes",
        default=None,
        metavar="CELLSxTHREADS,...",
        help="stage 1's shapes (default SHAPES), e.g. 256x224,256x256",
    )
    ap.add_argument(
        "--caps",
        default=None,
        metavar="THREADS,...",
        help="stage 2's register caps as resident threads (default RESIDENT)",
    )
    ap.add_argument(
        "--ab",
        default=None,
        metavar="CAP|CELLSxTHREADSxCAP,...",
        help="interleaved A/B of these configurations (a cap alone: at the default shape)",
    )
    ap.add_argument("--rounds", type=int, default=3, help="with --ab")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    if args.profile:
        return profile(args)
    t0 = time.perf_counter()
    timer, case = GpuTimer(), get_case("test1")
    schemes, dtypes = args.schemes.split(","), args.dtypes.split(",")
    mesh, _ = family(size(args.size)).reordered("hilbert")
    doc = {"benchmark": "block_sweep", "case": "test1", "cells": mesh.n_cells, "dt_mode": "lagged",
           "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
           "machine": {"python": platform.python_version(), "numpy": np.__version__,
                       **timer.machine()},
           "library_resident_threads": {str(k): v for k, v in gpu.RESIDENT_THREADS.items()},
           "rows": []}  # fmt: skip
    rows = doc["rows"]

    def record(row: dict, order: str, mesh) -> None:
        row.update(order=order, elapsed_s=round(time.perf_counter() - t0, 1))
        if row["variant"] == "block" and row["cells_per_block"]:
            row["twice_evaluated"] = twice_evaluated(mesh.edge_cells, row["cells_per_block"])
        rows.append(row)
        rate = row.get("cell_steps_per_s", math.nan) / 1e9
        print(f"{row['elapsed_s']:6.1f}s {order:>7} {row['scheme']:>8} {row['dtype']:>7} "
              f"{row['variant']:>6} cells {row['cells_per_block']} threads {row['threads']} "
              f"res {row['resident']} {row['task_order']} {' '.join(row['extra_options'])} "
              f"regs {row.get('regs')} local {row.get('local_bytes')} "
              f"blocks/SM {row.get('blocks_per_sm')}: {rate:.3f} G cell-steps/s "
              f"{row.get('error', '')}", flush=True)  # fmt: skip
        if args.out:
            args.out.parent.mkdir(parents=True, exist_ok=True)
            args.out.write_text(json.dumps(doc, indent=1) + "\n")

    def left(reserve: float) -> bool:
        return time.perf_counter() - t0 < args.budget_s - reserve

    if args.ab:
        for dtype in dtypes:
            layout = case_layout(case, mesh, np.dtype(dtype))
            for scheme in schemes:
                shape = gpu.block_shape(scheme, 2, dtype)
                order = "interior" if shape.interior_first else "edge"
                default = (shape.cells, shape.threads)
                configs = [(*default, int(x)) if "x" not in x else tuple(map(int, x.split("x")))
                           for x in args.ab.split(",")]  # fmt: skip
                for r in range(1, args.rounds + 1):
                    for config in configs:
                        row = run_config(layout, case, scheme, "block", timer, args, *config,
                                         order)  # fmt: skip
                        record({**row, "round": r}, "hilbert", mesh)
        return
    reserve = 0.0 if args.no_rcm else RCM_RESERVE_S
    shapes = (
        [tuple(map(int, x.split("x"))) for x in args.shapes.split(",")] if args.shapes else SHAPES
    )
    caps = [int(x) for x in args.caps.split(",")] if args.caps else None
    layouts = {dtype: case_layout(case, mesh, np.dtype(dtype)) for dtype in dtypes}
    combos = [(dtype, scheme) for dtype in dtypes for scheme in schemes]
    for dtype, scheme in combos:  # stage 1 of every combination first, then stage 2
        for cells, threads in shapes:
            if left(reserve):
                record(run_config(layouts[dtype], case, scheme, "block", timer, args, cells,
                                  threads), "hilbert", mesh)  # fmt: skip
    for dtype, scheme in combos:
        top = best(rows, scheme, dtype, "hilbert")
        if top is None:
            continue
        shape = (top["cells_per_block"], top["threads"])
        double = np.dtype(dtype) == np.float64
        stage2 = [{"resident": r} for r in caps or RESIDENT[double]] + [{"task_order": "interior"}]
        stage2 += [] if double else [{"fast_math": True}]
        for knobs in stage2:
            if left(reserve):
                record(run_config(layouts[dtype], case, scheme, "block", timer, args, *shape,
                                  **knobs), "hilbert", mesh)  # fmt: skip
    del layouts
    if not args.no_rcm:  # stage 3
        rcm, _ = family(size(args.size)).reordered("rcm")
        for dtype in dtypes:
            layout = case_layout(case, rcm, np.dtype(dtype))
            for scheme in schemes:
                top = best(rows, scheme, dtype, "hilbert") or {"cells_per_block": 128,
                                                               "threads": 128, "resident": None,
                                                               "task_order": "edge"}  # fmt: skip
                for variant in ("edge", "gather", "block"):
                    if not left(0.0):
                        continue
                    if variant == "block":
                        row = run_config(layout, case, scheme, "block", timer, args,
                                         top["cells_per_block"], top["threads"],
                                         top["resident"], top["task_order"])  # fmt: skip
                    else:
                        row = run_config(layout, case, scheme, variant, timer, args)
                    record(row, "rcm", rcm)
    print(f"done in {time.perf_counter() - t0:.0f} s" + (f", wrote {args.out}" if args.out else ""))


if __name__ == "__main__":
    main()
