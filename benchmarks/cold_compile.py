"""What a cold Numba cache costs: one tiny step of every scheme kernel in both dtypes.

The test suite's first use of each CPU pass compiles it (CI starts with no cache), so this
total is what CI pays for the passes. Each run takes a fresh, empty ``NUMBA_CACHE_DIR``
(the package's own ``__pycache__`` is then not read) in a child process, and prints the
seconds of each case and the total, the scheme kernels it compiled and the cached functions
it compiled rather than loaded; ``--warm`` repeats it in a second child process on the cache
the first left, which must compile nothing.

    PYTHONPATH=$PWD python benchmarks/cold_compile.py [--warm] [--only SCHEME:LAYERS]

``--only`` runs one (scheme, layers) in float64 (the entropy-fixed kernel), the cost of a
first run of that scheme alone.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time


def cases(only: str | None) -> list[tuple[str, int, bool, str]]:
    """``(scheme, layers, entropy_fix, dtype)`` per distinct kernel and dtype (or ``only``)."""
    from fvswe import registry

    if only:
        name, layers = only.split(":")
        return [(name, int(layers), True, "float64")]
    out = []
    for dtype in ("float64", "float32"):
        for name, layers in registry.distinct_kernels():
            out.append((name, layers, True, dtype))
            if (name, layers) in registry.UNFIXED:
                out.append((name, layers, False, dtype))
    return out


def step(name: str, layers: int, entropy_fix: bool, dtype: str) -> None:
    """One fixed step of a 2x2x2-cell square (walls), the CPU backend."""
    from fvswe.mesh.generate import structured_square
    from fvswe.simulation import Simulation

    depths = {"h": 1.0} if layers == 1 else {"h1": 1.0, "h2": 1.0}
    sim = Simulation(structured_square(2), H=2.0 * layers, initial=depths, layers=layers,
                     scheme=name, entropy_fix=entropy_fix, dtype=dtype, backend="cpu",
                     dt_mode="fixed", dt=1e-4)  # fmt: skip
    sim.run(1e-4)


def child(only: str | None) -> None:
    """Run every case in this process; print one JSON line of seconds: wall, and this
    process's CPU time (compiling is one thread: on a loaded machine the steadier figure)."""
    start, cpu = time.perf_counter(), time.process_time()
    import fvswe.backends.cpu.pipeline  # noqa: F401  (importing compiles nothing)

    imported = time.perf_counter() - start
    seconds = {}
    for case in cases(only):
        t0, c0 = time.perf_counter(), time.process_time()
        step(*case)
        wall, used = time.perf_counter() - t0, time.process_time() - c0
        seconds[":".join(map(str, case))] = (round(wall, 2), round(used, 2))
    total = time.perf_counter() - start
    print(json.dumps({"import_s": round(imported, 2), "total_s": round(total, 2),
                      "cpu_s": round(time.process_time() - cpu, 2),
                      "cases (wall, cpu)": seconds, **compiled()}))  # fmt: skip


def compiled() -> dict:
    """The scheme kernels this process compiled or loaded (``kernels``), and the cached
    functions of fvswe it compiled rather than loaded (``compiled``; none on a warm cache)."""
    from numba.core.registry import CPUDispatcher

    from fvswe import physics, registry

    kernels = [ref for ref in registry.KERNEL_IDS if physics.kernel(ref).signatures]
    misses = set()
    for name, module in list(sys.modules.items()):
        if not name.startswith("fvswe"):
            continue
        for f in vars(module).values():
            cached = isinstance(f, CPUDispatcher) and type(f._cache).__name__ == "FunctionCache"
            if cached and sum(f.stats.cache_misses.values()):
                misses.add(f"{f.py_func.__module__}.{f.py_func.__name__}")
    return {"kernels": kernels, "compiled": sorted(misses)}


def spawn(cache: str, only: str | None) -> dict:
    env = {**os.environ, "NUMBA_CACHE_DIR": cache}
    argv = [sys.executable, __file__, "--child", *(["--only", only] if only else [])]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
    if done.returncode:
        sys.exit(done.stderr.strip().splitlines()[-1] if done.stderr else "child failed")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--warm", action="store_true", help="then once more on that cache")
    parser.add_argument("--only", help="SCHEME:LAYERS, float64 only")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.only)
        return
    print(f"load: {os.getloadavg()}", flush=True)
    with tempfile.TemporaryDirectory(prefix="fvswe-numba-") as cache:
        cold = spawn(cache, args.only)
        print("cold", json.dumps(cold), flush=True)
        if args.warm:
            print("warm", json.dumps(spawn(cache, args.only)), flush=True)
    print(f"load: {os.getloadavg()}")


if __name__ == "__main__":
    main()
