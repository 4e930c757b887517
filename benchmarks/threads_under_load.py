"""CPU threads under load: one thread against all cores, on an idle machine and a busy one.

    python3 benchmarks/threads_under_load.py --out benchmarks/results/threads_under_load.json

"Busy" is one ``yes > /dev/null`` process competing for the cores. For each
load and each OpenMP wait policy (libgomp's own default, reached by an empty
``OMP_WAIT_POLICY`` that libgomp ignores with a warning; ``active``; and
``passive``, fvswe's default since it sets it when the user has not)
a fresh process times ``--steps`` steps of test1 on ``--mesh`` (RCM order,
float64, after :func:`fvswe.runner.warm_up`) with 1 thread and with every core,
``--repeats`` times interleaved; the median is reported in ms per step, with
the thread count :func:`fvswe.backends.cpu.default_threads` picks under that load.
Other processes on the machine show in ``idle_cores_before`` of each row.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

#: What a child process runs: prints {"threads": [ms per step, ...], "default": n} as JSON.
CHILD = """
import json, sys, time, numba
from fvswe.backends.cpu import default_threads, idle_cores
from fvswe.cases import get_case
from fvswe.mesh import load
from fvswe.runner import warm_up
mesh, steps, repeats = load(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
idle = idle_cores()
sim = get_case("test1").simulation(mesh=mesh, backend="cpu", order="rcm", threads=1)
warm_up(sim, 1e9)
snap = sim.backend.snapshot()
counts = sorted({1, numba.config.NUMBA_NUM_THREADS})
out = {n: [] for n in counts}
for _ in range(repeats):
    for n in counts:
        numba.set_num_threads(n)
        sim.backend.restore(snap)
        start = time.perf_counter()
        sim.backend.advance(1e9, steps)
        out[n].append(1e3 * (time.perf_counter() - start) / steps)
default_threads.cache_clear()
print(json.dumps({"ms_per_step": out, "idle_cores_before": idle, "default": default_threads()}))
"""


def child(args, policy: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_NUM_THREADS"}
    env["OMP_WAIT_POLICY"] = policy
    cmd = [sys.executable, "-c", CHILD, args.mesh, str(args.steps), str(args.repeats)]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--mesh", default="square-16k", help="mesh file or family member")
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--out", type=Path, help="JSON file for the rows")
    args = p.parse_args(argv)
    rows = []
    for load in ("idle", "busy"):
        hog = subprocess.Popen(["yes"], stdout=subprocess.DEVNULL) if load == "busy" else None
        try:
            time.sleep(0.5 if hog else 0.0)
            for policy in ("", "active", "passive"):
                result = child(args, policy)
                medians = {n: statistics.median(v) for n, v in result["ms_per_step"].items()}
                row = {"load": load, "omp_wait_policy": policy or "libgomp default", **result,
                       "median_ms_per_step": medians}  # fmt: skip
                rows.append(row)
                print(f"{load:5} policy {policy or 'libgomp':8} idle cores "
                      f"{result['idle_cores_before']:.2f}: "
                      + ", ".join(f"{n} thread(s) {ms:.3g} ms/step" for n, ms in medians.items())
                      + f"; default_threads() -> {result['default']}")  # fmt: skip
        finally:
            if hog is not None:
                hog.kill()
                hog.wait()
    if args.out:
        meta = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                "host": platform.node(), "cores": len(os.sched_getaffinity(0)),
                "loadavg": os.getloadavg(), "mesh": args.mesh, "steps": args.steps,
                "repeats": args.repeats}  # fmt: skip
        args.out.write_text(json.dumps({**meta, "rows": rows}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
