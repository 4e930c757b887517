"""Throughput of the step pipeline on the paper's mesh family (RCM order), CPU or GPU.

    python3 benchmarks/throughput.py --backend gpu --out $OUT/throughput_gpu.json
    python3 benchmarks/throughput.py --backend cpu --sizes 4k,64k --out cpu.json
    python3 benchmarks/throughput.py --variants default --order hilbert --sizes 2m --fast-math

For each size, scheme, dtype (and GPU variant) it runs the case (test1 by
default) in the lagged mode of the paper: after a warm-up (compilation, graph
capture), ``--repeats`` timed runs of a fixed number of steps, timed with CUDA
events on the GPU (wall clock on the CPU), median reported as cell-steps/s and
µs/step. On the GPU also the effective bandwidth (compulsory bytes of the
variant per step / time) against a measured device-to-device copy bandwidth,
and the whole run to ``t_end`` from the initial state (host time, everything
included) beside the paper's GTX 580 RCM time (docs/CASES.md Tables 1-2). Results
go to JSON with the device, library versions and date. The variant ``default`` is the one a
run gets (:func:`fvswe.backends.gpu.default_variant`, its shape
:func:`fvswe.backends.gpu.block_shape`); ``--fast-math`` measures each float32 row a second
time compiled with ``fast_math`` (docs/GPU.md, "Fast math"), ``--compensated`` a second
time with a compensated state (docs/SCHEMES.md §2.7, what a float32 Simulation runs by
default; the rows without it are the plain float32 pipeline), in the same process:

    python3 benchmarks/throughput.py --variants default --order hilbert --sizes 2m \
        --dtypes float32 --compensated --no-whole-run --out $OUT/compensated.json

``--reconstruction linear`` measures the second-order pipeline (docs/SCHEMES.md §19): SSP-RK2,
one step two stages, each with its reconstruction passes; the effective bandwidth (which
counts a first-order Euler step's bytes) is left out of its rows:

    python3 benchmarks/throughput.py --variants block --order hilbert --sizes 2m \
        --reconstruction linear --no-whole-run --out $OUT/second_order_gpu.json
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import platform
import statistics
import time
from pathlib import Path

import numpy as np

from fvswe.backends.layout import Layout, twice_evaluated
from fvswe.boundary import edge_conditions
from fvswe.cases import get_case
from fvswe.mesh import family
from fvswe.model import Model

SIZES = {"4k": 4000, "16k": 16000, "64k": 64000, "256k": 256000, "1m": 1024000, "2m": 2080560}
#: The paper's GTX 580 float32 times for t = 0.1 s (docs/CASES.md Tables 1-2), transcribed once.
PAPER_TABLES = Path(__file__).resolve().parent / "reference" / "paper_tables.json"
PAPER = json.loads(PAPER_TABLES.read_text())


def paper_seconds(case: str, cells: int, scheme: str, order: str) -> float | None:
    """The paper's run time for this case, mesh size, scheme and ordering, if it measured it."""
    return PAPER["seconds"].get(case, {}).get(str(cells), {}).get(scheme, {}).get(order)


def case_layout(case, mesh, dtype, linear: bool = False) -> Layout:
    """The case's Layout on ``mesh`` (fields sampled at the barycentres), in ``dtype``
    (``linear``: with the linear reconstruction's geometry)."""
    model = Model(layers=case.layers, g=case.g, r=case.r)
    x, y = mesh.centroid[:, 0], mesh.centroid[:, 1]
    H = np.broadcast_to(case.H(x, y), (mesh.n_cells,))
    W0 = model.pack({k: f(x, y) for k, f in case.initial.items()}, mesh.n_cells)
    return Layout.build(
        mesh, model, W0, H, edge_conditions(mesh, case.boundary), dtype, linear=linear
    )


class GpuTimer:
    """CUDA events on the backend's stream; also the copy bandwidth and versions."""

    def __init__(self) -> None:
        import cupy

        self.cp = cupy

    def time(self, backend, fn) -> float:
        cp = self.cp
        start, end = cp.cuda.Event(), cp.cuda.Event()
        start.record(backend.stream)
        fn()
        end.record(backend.stream)
        end.synchronize()
        return cp.cuda.get_elapsed_time(start, end) * 1e-3

    def copy_bandwidth(self, nbytes: int = 1 << 30, repeats: int = 10) -> float:
        """Device-to-device copy bandwidth in GB/s, counting read + write."""
        cp = self.cp
        a = cp.ones(nbytes // 4, dtype=np.float32)
        b = cp.empty_like(a)
        cp.copyto(b, a)
        times = []
        for _ in range(repeats):
            start, end = cp.cuda.Event(), cp.cuda.Event()
            start.record()
            cp.copyto(b, a)
            end.record()
            end.synchronize()
            times.append(cp.cuda.get_elapsed_time(start, end) * 1e-3)
        return 2 * a.nbytes / statistics.median(times) / 1e9

    def machine(self) -> dict:
        from fvswe.backends import gpu

        cp = self.cp
        return {
            "device": gpu.device_name(),
            "cupy": cp.__version__,
            "cuda_runtime": cp.cuda.runtime.runtimeGetVersion(),
            "cuda_driver": cp.cuda.runtime.driverGetVersion(),
        }


class CpuTimer:
    """Wall clock (the CPU backend returns when its steps are done)."""

    def time(self, backend, fn) -> float:
        t0 = time.perf_counter()
        fn()
        return time.perf_counter() - t0

    def machine(self) -> dict:
        import os

        import numba

        return {"device": platform.processor() or platform.machine(), "cores": os.cpu_count(),
                "numba": numba.__version__, "threads": numba.get_num_threads()}  # fmt: skip


def backend_factory(name: str):
    if name == "gpu":
        from fvswe.backends.gpu import GpuBackend

        return GpuBackend, GpuTimer()
    from fvswe.backends.cpu.pipeline import CpuBackend

    return CpuBackend, CpuTimer()


def measure(B, timer, cells: int, min_time: float, repeats: int, max_steps: int) -> dict:
    """Median time per step over ``repeats`` runs of a step count chosen to last ``min_time``."""
    B.advance(math.inf, 8)  # warm-up: compilation, first dt, graph capture
    trial = timer.time(B, lambda: B.advance(math.inf, 16))
    steps = int(min(max_steps, max(16, 16 * math.ceil(min_time / trial))))
    B.advance(math.inf, steps)  # graphs of every size this count uses
    times = [timer.time(B, lambda: B.advance(math.inf, steps)) for _ in range(repeats)]
    per_step = statistics.median(times) / steps
    if B.first_invalid() is not None:
        raise SystemExit(f"state blew up during the benchmark ({B.first_invalid()})")
    return {
        "steps_per_repeat": steps,
        "repeats": repeats,
        "us_per_step": per_step * 1e6,
        "cell_steps_per_s": cells / per_step,
        "times_s": times,
    }


def whole_run(B, layout, case, runs: int) -> dict:
    """The full run to ``t_end`` from the initial state, host clock; the last of ``runs``
    (on the GPU the first captures the graphs that the second replays)."""
    times = []
    for _ in range(runs):
        B.set_state(layout.W0)
        B.t = 0.0
        t0 = time.perf_counter()
        t, steps = B.advance(case.t_end, 10**9)
        B.get_state()  # waits for the device
        times.append(time.perf_counter() - t0)
    return {"whole_run_s": times[-1], "whole_run_steps": steps, "t": t}


def best_variants(rows: list[dict]) -> dict[tuple, str]:
    """The fastest GPU variant for each (scheme, dtype, cells) measured (IEEE, plain rows)."""
    best: dict[tuple, dict] = {}
    for row in rows:
        key = (row["scheme"], row["dtype"], row["cells"])
        if row.get("fast_math") or row.get("compensated"):
            continue
        if key not in best or row["cell_steps_per_s"] > best[key]["cell_steps_per_s"]:
            best[key] = row
    return {key: row["variant"] for key, row in best.items()}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--backend", choices=("cpu", "gpu"), default="gpu")
    ap.add_argument("--case", default="test1", choices=("test1", "test2"))
    ap.add_argument("--schemes", default="pvm-ifcp,ir-roe,roe")
    ap.add_argument("--dtypes", default="float32,float64")
    ap.add_argument("--sizes", default="4k,64k,1m,2m", help=f"of {', '.join(SIZES)} or counts")
    ap.add_argument("--variants", default="edge,gather,slot,block",
                    help="GPU variants to measure; default: the one a run gets")  # fmt: skip
    ap.add_argument("--order", default="rcm")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--min-time", type=float, default=0.1, help="seconds per timed repeat")
    ap.add_argument("--max-steps", type=int, default=16384, help="most steps per timed repeat")
    ap.add_argument("--block", type=int, default=None, help="GPU threads per block")
    ap.add_argument("--cells", type=int, default=None, help="cells a thread block owns (block)")
    ap.add_argument(
        "--fast-math",
        action="store_true",
        help="GPU float32 rows also with approximate division/sqrt (fast_math)",
    )
    ap.add_argument("--compensated", action="store_true",
                    help="float32 rows also with a compensated state (remainders)")  # fmt: skip
    ap.add_argument("--reconstruction", choices=("constant", "linear"), default="constant",
                    help="linear: second order (docs/SCHEMES.md §19), one step = two SSP-RK2 "
                    "stages")  # fmt: skip
    ap.add_argument("--no-whole-run", action="store_true", help="skip the full t_end runs")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)

    Backend, timer = backend_factory(args.backend)
    case = get_case(args.case)
    sizes = [SIZES.get(s.lower()) or int(s) for s in args.sizes.split(",")]
    variants = args.variants.split(",") if args.backend == "gpu" else [None]
    machine = {
        "python": platform.python_version(),
        "numpy": np.__version__,
        **timer.machine(),
    }
    copy_bw = timer.copy_bandwidth() if args.backend == "gpu" else None
    threads = f", {machine['threads']} threads" if "threads" in machine else ""
    print(f"{args.backend}: {machine['device']}{threads}" +
          (f", device-to-device copy {copy_bw:.0f} GB/s" if copy_bw else ""))  # fmt: skip
    head = (f"{'cells':>9} {'scheme':>8} {'dtype':>7} {'variant':>7} {'Gcell-steps/s':>13} "
            f"{'us/step':>9} {'GB/s':>7} {'%copy':>6} {'run_s':>8} {'steps':>6} {'paper_s':>8} "
            f"{'x paper':>8}")  # fmt: skip
    print(head)
    rows = []
    for cells in sizes:
        mesh, _ = family(cells).reordered(args.order)
        for dtype in args.dtypes.split(","):
            layout = case_layout(case, mesh, np.dtype(dtype), args.reconstruction == "linear")
            for scheme in args.schemes.split(","):
                single = dtype == "float32"
                modes = [
                    {},
                    *([{"fast_math": True}] if args.fast_math and single else []),
                    *([{"compensated": True}] if args.compensated and single else []),
                ]
                for variant, mode in ((v, m) for v in variants for m in modes):
                    extra = {} if variant in (None, "default") else {"variant": variant}
                    if args.block and args.backend == "gpu":
                        extra["block"] = args.block
                    if args.cells and variant == "block":
                        extra["cells"] = args.cells
                    if args.reconstruction == "linear":  # a step: two stages, each reconstructed
                        extra.update(integrator="ssp-rk2", reconstruction="linear")
                    fast_math = mode.get("fast_math", False)
                    B = Backend(layout, scheme, cfl=case.cfl, dt_mode="lagged", **extra, **mode)
                    variant = getattr(B, "variant", None)
                    row = {"case": args.case, "cells": mesh.n_cells, "order": args.order,
                           "scheme": scheme, "dtype": dtype, "variant": variant,
                           "block": getattr(B, "block", None), "fast_math": fast_math,
                           "compensated": mode.get("compensated", False),
                           "reconstruction": args.reconstruction}  # fmt: skip
                    row.update(measure(B, timer, mesh.n_cells, args.min_time, args.repeats,
                                       args.max_steps))  # fmt: skip
                    if variant == "block":  # its locality measure (layout.twice_evaluated)
                        twice = twice_evaluated(mesh.edge_cells, B.cells)
                        row.update(cells_per_block=B.cells, twice_evaluated=twice)
                    if hasattr(B, "bytes_per_step") and args.reconstruction == "constant":
                        gbs = B.bytes_per_step() / (row["us_per_step"] * 1e-6) / 1e9
                        row.update(bytes_per_step=B.bytes_per_step(), effective_GBs=gbs,
                                   fraction_of_copy=gbs / copy_bw)  # fmt: skip
                    if not args.no_whole_run:
                        row.update(whole_run(B, layout, case, 2 if args.backend == "gpu" else 1))
                        paper = paper_seconds(args.case, mesh.n_cells, scheme, args.order)
                        if paper:
                            row.update(paper_rcm_s=paper, speedup=paper / row["whole_run_s"])
                    del B
                    rows.append(row)
                    label = (variant or "-") + ("+fm" if fast_math else "")
                    label += "+c" if row["compensated"] else ""
                    print(f"{row['cells']:>9} {scheme:>8} {dtype:>7} {label:>7} "
                          f"{row['cell_steps_per_s'] / 1e9:>13.3f} {row['us_per_step']:>9.1f} "
                          f"{row.get('effective_GBs', math.nan):>7.0f} "
                          f"{100 * row.get('fraction_of_copy', math.nan):>6.1f} "
                          f"{row.get('whole_run_s', math.nan):>8.4f} "
                          f"{row.get('whole_run_steps', 0):>6} "
                          f"{row.get('paper_rcm_s', math.nan):>8.4g} "
                          f"{row.get('speedup', math.nan):>8.3g}", flush=True)  # fmt: skip
    if len(variants) > 1:
        print("fastest variant (cell-steps/s):")
        for key, best in best_variants(rows).items():
            print("  " + " ".join(map(str, key)) + f": {best}")
    if args.out:
        doc = {
            "benchmark": "throughput",
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "backend": args.backend,
            "machine": machine,
            "copy_bandwidth_GBs": copy_bw,
            "dt_mode": "lagged",
            "results": rows,
        }
        if len(variants) > 1:
            doc["fastest_variant"] = [[*k, v] for k, v in best_variants(rows).items()]
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(doc, indent=2) + "\n")
        print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
