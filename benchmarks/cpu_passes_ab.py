"""The CPU's first-order passes of two trees, per pass, interleaved in one run (issue 26).

    python3 benchmarks/cpu_passes_ab.py /work/wt/base . --cells 64000 --threads 8 \
        --rounds 5 --out $OUT/cpu_passes_ab.json

For each round, each configuration (scheme x dtype, test1, lagged Δt, RCM order) and each
tree (old first, then new), a fresh process with ``PYTHONPATH`` at that tree builds the
backend, runs ``--steps`` steps after a warm-up and reports the median µs of one edge pass
and of one volume pass (the dispatchers ``fvswe.backends.cpu.pipeline.edge_pass`` and
``volume_pass``, which both trees' backends call through their module). The table gives,
per configuration and pass, the median over rounds and new/old.

Instructions instead of time (this machine's timings swing; callgrind's do not): a worker
re-calls one pass ``--calls`` times after its run, and two runs under callgrind that differ
only in ``--calls`` give the instructions of one pass by difference:

    NUMBA_NUM_THREADS=1 PYTHONPATH=TREE valgrind --tool=callgrind --callgrind-out-file=/dev/null \
        python3 benchmarks/cpu_passes_ab.py --worker --cells 4000 --threads 1 --steps 2 \
        --scheme pvm-ifcp --dtype float32 --pass volume --calls 20
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

SCHEMES = ("pvm-ifcp", "roe")
DTYPES = ("float64", "float32")
PASSES = ("edge_pass", "volume_pass")


class Timed:
    """A pass that times its calls and keeps the arguments of the last one."""

    def __init__(self, fn) -> None:
        self.fn, self.seconds, self.args = fn, [], None

    def __call__(self, *args):
        start = time.perf_counter()
        result = self.fn(*args)
        self.seconds.append(time.perf_counter() - start)
        self.args = args
        return result


def worker(args: argparse.Namespace) -> dict:
    """One tree's backend (the tree on ``sys.path``): median µs per pass over ``steps`` steps;
    then ``calls`` more calls of one pass with its last arguments."""
    import numba

    from benchmarks.throughput import case_layout
    from fvswe.backends.cpu import pipeline
    from fvswe.cases import get_case
    from fvswe.mesh import family

    case = get_case("test1")
    mesh, _ = family(args.cells).reordered("rcm")
    layout = case_layout(case, mesh, args.dtype)
    backend = pipeline.CpuBackend(layout, args.scheme, cfl=case.cfl, dt_mode="lagged",
                                  threads=args.threads)  # fmt: skip
    timed = {name: Timed(getattr(pipeline, name)) for name in PASSES}
    for name, fn in timed.items():
        setattr(pipeline, name, fn)
    backend.advance(1e9, 3)  # compiled or loaded from Numba's cache
    for fn in timed.values():
        fn.seconds.clear()
    backend.advance(1e9, args.steps)
    if args.calls:
        fn = timed[f"{args.pass_}_pass"]
        for _ in range(args.calls):
            fn.fn(*fn.args)
    us = {name: 1e6 * statistics.median(fn.seconds) for name, fn in timed.items()}
    return {"tree": os.environ.get("PYTHONPATH", ""), "threads": numba.get_num_threads(), **us}


def run_tree(tree: Path, args: argparse.Namespace, scheme: str, dtype: str) -> dict:
    """A worker process on ``tree``."""
    command = [sys.executable, __file__, "--worker", "--cells", str(args.cells), "--threads",
               str(args.threads), "--steps", str(args.steps), "--scheme", scheme,
               "--dtype", dtype]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": f"{tree}{os.pathsep}{Path(__file__).parent.parent}"}
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    if done.returncode:
        sys.exit(f"cpu_passes_ab: {tree}: {scheme} {dtype}: {done.stderr.strip()[-400:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("trees", nargs="*", type=Path, help="the old tree, then the new one")
    p.add_argument("--cells", type=int, default=64000)
    p.add_argument("--threads", type=int, default=8)
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--out", type=Path)
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--scheme", default="pvm-ifcp")
    p.add_argument("--dtype", default="float64")
    p.add_argument("--pass", dest="pass_", choices=("edge", "volume"), default="edge")
    p.add_argument("--calls", type=int, default=0)
    args = p.parse_args()
    if args.worker:
        print(json.dumps(worker(args)))
        return
    if len(args.trees) != 2:
        sys.exit("cpu_passes_ab: give two trees, the old one and the new one")
    rows = []
    for _ in range(args.rounds):
        for scheme in SCHEMES:
            for dtype in DTYPES:
                for label, tree in zip(("old", "new"), args.trees, strict=True):
                    result = run_tree(tree.resolve(), args, scheme, dtype)
                    rows.append({"scheme": scheme, "dtype": dtype, "side": label, **result})
    print(f"{'scheme':9} {'dtype':8} {'pass':12} {'old µs':>9} {'new µs':>9} {'new/old':>8}")
    for scheme in SCHEMES:
        for dtype in DTYPES:
            for name in PASSES:
                med = {side: statistics.median(r[name] for r in rows if r["scheme"] == scheme
                                               and r["dtype"] == dtype and r["side"] == side)
                       for side in ("old", "new")}  # fmt: skip
                print(f"{scheme:9} {dtype:8} {name:12} {med['old']:9.1f} {med['new']:9.1f} "
                      f"{med['new'] / med['old']:8.3f}")  # fmt: skip
    if args.out:
        meta = {"trees": [str(t) for t in args.trees], "cells": args.cells,
                "threads": args.threads, "steps": args.steps, "rounds": args.rounds}  # fmt: skip
        args.out.write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
