"""Scaling over MPI ranks: the same run on 1 rank and on N, and rank 0's partitioning cost.

    python3 benchmarks/scaling.py --ranks 1,2 --cells 16k --out scaling.json
    python3 benchmarks/scaling.py --ranks 1,2,4,8 --cells 1m --threads 4 --out cluster.json
    python3 benchmarks/scaling.py --backend gpu --ranks 1,2 --cells 8m --dtype float32 \
        --scheme pvm-ifcp --mpiexec "mpirun --allow-run-as-root" --out gpu_strong.json
    python3 benchmarks/scaling.py --backend gpu --ranks 1,2 --cells 1m,2m ...   # weak

For each rank count it launches ``mpiexec -n N python3 benchmarks/scaling.py
--worker ...`` (one rank runs without mpiexec): every rank builds the case
(test1 by default, lagged Δt), takes ``--warmup`` steps (compilation, first
exchange), then ``--steps`` steps between two barriers, ``--repeats`` times; the
median wall time gives cell-steps/s, the speed-up over one rank and the
parallel efficiency. ``--cells`` names one mesh for every rank count (strong
scaling) or one per rank count (weak scaling: 1m, 2m are 1.02 M and 2.08 M cells).
On more than one rank, ``halo_us`` is one halo round alone (exchange of the current
state's halo and the Δt reduction, repeated ``--steps`` times, synchronised) and
``halo_share`` its fraction of a step; ``compute_us`` a step with the halo hook detached
(its kernels alone: the ranks then step with their own Δt), and ``exposed_us`` =
``us_per_step`` - ``compute_us`` the halo time not hidden behind the kernels
(``exposed_share`` of a step). ``--overlap 0,1`` runs each rank count above one with the
GPU ranks' halo exchange overlapped (1) and not (0) (docs/PARALLEL.md). Rank 0's
``assign`` + ``split`` time (METIS or Hilbert, fvswe.partition) is measured on its own.
``--backend gpu`` runs one GPU a rank (``FVSWE_HALO``: docs/PARALLEL.md).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shlex
import statistics
import subprocess
import sys
import time
from pathlib import Path

#: Members of the paper's mesh family (fvswe.mesh.family: square-4k ...).
SIZES = ("4k", "16k", "64k", "130k", "256k", "1m", "2m", "8m")
ROOT = Path(__file__).resolve().parent.parent
#: The prefix of rank 0's result line (a launch's other output, MPI's or NCCL's, may follow).
RESULT = "scaling result: "


def worker(args) -> None:
    """One measurement on the ranks of this launch; rank 0 prints one JSON line."""
    from fvswe.cases import get_case
    from fvswe.mesh import family
    from fvswe.parallel import world

    comm = world()
    mesh = family(f"square-{args.cells}")
    t0 = time.perf_counter()
    options = {"overlap": args.overlap == "1"} if comm is not None and args.backend == "gpu" else {}
    sim = get_case(args.case).simulation(
        mesh, scheme=args.scheme, backend=args.backend, order=args.order, threads=args.threads,
        dtype=args.dtype, comm=comm, backend_options=options or None,
    )  # fmt: skip
    setup = time.perf_counter() - t0
    sim.backend.advance(float("inf"), args.warmup)
    times = []
    for _ in range(args.repeats):
        if comm is not None:
            comm.Barrier()
        start = time.perf_counter()
        sim.backend.advance(float("inf"), args.steps)
        if comm is not None:
            comm.Barrier()
        times.append(time.perf_counter() - start)
    halo = halo_seconds(sim, args.steps) / args.steps if comm is not None else 0.0
    wall = statistics.median(times)
    compute = compute_seconds(sim, args) if comm is not None else wall
    if sim.is_root:
        part = getattr(sim.backend, "part", None)
        print(RESULT + json.dumps({
            "ranks": sim.ranks, "setup_s": setup, "wall_s": wall, "runs_s": times,
            "cell_steps_per_s": mesh.n_cells * args.steps / wall,
            "us_per_step": wall / args.steps * 1e6,
            "rank0_owned": None if part is None else part.n_owned,
            "rank0_halo": None if part is None else part.n_halo,
            "halo_us": halo * 1e6, "halo_share": halo * args.steps / wall,
            "overlap": getattr(getattr(sim.backend, "local", None), "halo", None) is not None
            and bool(getattr(sim.backend.local.halo, "overlap", False)),
            "compute_us": compute / args.steps * 1e6,
            "exposed_us": (wall - compute) / args.steps * 1e6,
            "exposed_share": (wall - compute) / wall,
        }), flush=True)  # fmt: skip


def compute_seconds(sim, args) -> float:
    """The median seconds of ``--steps`` steps with the halo hook detached (no exchange, no
    Δt reduction: each rank's kernels alone), synchronised as the timed runs."""
    local = sim.backend.local
    halo, local.halo = local.halo, None
    drop = getattr(local, "drop_graphs", lambda: None)  # graphs captured the hook's calls
    drop()
    times = []
    for _ in range(args.repeats):
        sim.comm.Barrier()
        start = time.perf_counter()
        local.advance(float("inf"), args.steps)
        sim.comm.Barrier()
        times.append(time.perf_counter() - start)
    drop()
    local.halo = halo
    return statistics.median(times)


def halo_seconds(sim, rounds: int) -> float:
    """Seconds of ``rounds`` halo rounds alone on this rank: what a step without limiting
    does besides its kernels (two layers: the limiter's question whether some rank has
    candidates on CPU ranks, its theta exchange on GPU ranks; then the exchange of the
    current state's halo and the Δt reduction). All leave the state, theta and Δt as they
    are."""
    local = sim.backend.local
    halo = local.halo
    gpu = local.name == "gpu"
    two = sim.model.layers == 2
    sim.comm.Barrier()
    start = time.perf_counter()
    for _ in range(rounds):
        if gpu:
            if two:
                halo.exchange_theta()
            halo.exchange(local._W)
            halo.reduce_dt(True)
        else:
            if two:
                halo.any(False)
            halo.exchange(local.W)
            halo.min(local.dt)
    if gpu:
        local.stream.synchronize()
    sim.comm.Barrier()
    return time.perf_counter() - start


def partition_cost(size: str, ranks: int, method: str) -> dict:
    """Seconds rank 0 spends in assign + split for this mesh and part count."""
    from fvswe.mesh import family
    from fvswe.partition import assign, method_name, split, stats

    mesh = family(f"square-{size}")
    start = time.perf_counter()
    part = assign(mesh, ranks, method)
    parts = split(mesh, part)
    elapsed = time.perf_counter() - start
    info = stats(mesh, part, parts)
    return {"cells": mesh.n_cells, "parts": ranks, "method": method_name(method),
            "seconds": elapsed, "edge_cut": info["edge_cut"],
            "imbalance": info["imbalance"]}  # fmt: skip


def launch(n: int, cells: str, args, overlap: int = 0) -> dict:
    argv = [sys.executable, str(Path(__file__).resolve()), "--worker", "--cells", cells]
    argv += ["--overlap", str(overlap)]
    for key in ("case", "scheme", "backend", "dtype", "order", "threads", "steps", "warmup",
                "repeats"):  # fmt: skip
        argv += [f"--{key}", str(getattr(args, key))]
    if n > 1:
        argv = [*shlex.split(args.mpiexec), "-n", str(n), *argv]
    path = os.pathsep.join(filter(None, (str(ROOT), os.environ.get("PYTHONPATH"))))
    env = {**os.environ, "PYTHONPATH": path, "NUMBA_NUM_THREADS": str(args.threads)}
    done = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=ROOT)
    found = [line for line in done.stdout.splitlines() if line.startswith(RESULT)]
    if done.returncode != 0 or not found:
        tail = " | ".join((done.stdout + done.stderr).strip().splitlines()[-6:])
        sys.exit(f"scaling: {n} ranks failed (exit {done.returncode}): {tail}")
    return json.loads(found[-1][len(RESULT) :])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--ranks", default="1,2", help="rank counts, comma-separated")
    p.add_argument("--case", default="test1")
    p.add_argument(
        "--cells",
        default="16k",
        help=f"mesh ({', '.join(SIZES)}), or one per rank count (weak scaling)",
    )
    p.add_argument("--dtype", default="float64", choices=("float32", "float64"))
    p.add_argument(
        "--mpiexec",
        default="mpiexec",
        help="the launcher and its options, e.g. 'mpirun --allow-run-as-root'",
    )
    p.add_argument("--scheme", default="ir-roe")
    p.add_argument("--backend", default="cpu", choices=("cpu", "gpu"))
    p.add_argument("--order", default="rcm", help="cell ordering inside each part")
    p.add_argument("--threads", type=int, default=1, help="Numba threads per rank")
    p.add_argument("--steps", type=int, default=100)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--partition-sizes", default="16k,64k,130k",
                   help="meshes on which to time rank 0's partitioning")  # fmt: skip
    p.add_argument("--overlap", default="0",
                   help="GPU ranks: 0, 1 or 0,1 (each rank count above one with each)")  # fmt: skip
    p.add_argument("--note", default="", help="a remark stored with the results")
    p.add_argument("--out", help="JSON file")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.worker:
        worker(args)
        return
    ranks = [int(n) for n in args.ranks.split(",")]
    cells = args.cells.split(",")
    if len(cells) == 1:
        cells *= len(ranks)
    if len(cells) != len(ranks) or not set(cells) <= set(SIZES):
        sys.exit(f"scaling: --cells: one of {', '.join(SIZES)}, or one per rank count")
    overlaps = [int(v) for v in args.overlap.split(",")]
    runs = [{**launch(n, c, args, v), "cells": c} for n, c in zip(ranks, cells, strict=True)
            for v in (overlaps if n > 1 else overlaps[:1])]  # fmt: skip
    for run in runs:
        run["speedup"] = runs[0]["wall_s"] / run["wall_s"]  # strong; weak: ideally 1
        # cell-steps/s per rank against the first launch's (strong and weak scaling alike)
        per_rank = run["cell_steps_per_s"] / run["ranks"]
        run["efficiency"] = per_rank / (runs[0]["cell_steps_per_s"] / runs[0]["ranks"])
    cost = [partition_cost(s, max(ranks), "auto") for s in args.partition_sizes.split(",")]
    result = {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "host": platform.node(), "cpus": os.cpu_count(), "python": platform.python_version(),
        "note": args.note,
        "settings": {k: getattr(args, k) for k in ("case", "cells", "scheme", "backend", "dtype",
                                                   "order", "threads", "steps", "warmup",
                                                   "repeats")},
        "runs": runs, "partition_cost": cost,
    }  # fmt: skip
    text = json.dumps(result, indent=2)
    if args.out:
        Path(args.out).write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
