"""Digests of a matrix of runs, to show that a change keeps every result bit for bit.

``python benchmarks/digests.py --backend cpu -o OUT.json`` runs every configuration of
:func:`specs` (schemes, dtypes, Δt rules, orderings, one- and two-layer cases, boundaries with
tables, forcing, friction, the positivity limiter, restarts, and on the GPU every variant) and
writes ``{name: sha256}`` of what a run is compared by (:func:`digest`: the state in the
original cell order, steps, time and counters). Under ``mpiexec -n P`` the runs are spread over
the ranks and rank 0 writes the file: CPU ranks must give the single process's digests.

The old and the new code are compared by running this script twice, with ``PYTHONPATH``
pointing at each tree (the script imports ``fvswe`` and the tree's ``tests/mpi_driver.py``
from wherever ``fvswe`` comes from), then ``--compare A.json B.json``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from pathlib import Path

import numpy as np


def _driver():
    """The tree's tests/mpi_driver.py (named cases, the limiter's cases) of the fvswe imported."""
    import fvswe

    tests = Path(fvswe.__file__).resolve().parents[1] / "tests"
    sys.path.insert(0, str(tests))
    import mpi_driver

    return mpi_driver


TWO = ("roe", "ir-roe", "pvm-ifcp")
ONE = ("hll", "hll-wd", "roe", "ir-roe", "rusanov")


def specs(backend: str) -> list[dict]:
    """The configurations: each a spec of tests/mpi_driver.py (plus ``dt``, ``restart``)."""
    out = []
    for scheme in TWO:
        for dtype in ("float64", "float32"):
            for dt_mode in ("lagged", "nonlagged"):
                out.append({"case": "test1", "scheme": scheme, "dtype": dtype,
                            "dt_mode": dt_mode, "t_end": 0.1})  # fmt: skip
            out.append({"case": "test2", "scheme": scheme, "dtype": dtype, "t_end": 0.1})
    out.append({"case": "test1", "scheme": "ir-roe", "dt_mode": "fixed", "dt": 2e-4,
                "t_end": 0.01})  # fmt: skip
    for order in ("rcm", "hilbert", "gps"):
        out.append({"case": "test1", "scheme": "pvm-ifcp", "order": order, "t_end": 0.02})
    for scheme in ONE:
        out.append({"case": "cgrid-drop", "scheme": scheme, "nx": 40, "t_end": 20.0})
    out.append({"case": "cgrid-drop", "nx": 40, "t_end": 20.0, "dt_mode": "nonlagged"})
    for dtype in ("float64", "float32"):
        out.append({"case": "cgrid-island", "nx": 40, "dtype": dtype, "t_end": 30.0})
        out.append({"case": "cgrid-tide", "nx": 12, "dtype": dtype, "t_end": 1800.0})
        out.append({"case": "boundaries1", "dtype": dtype, "t_end": 5.0})
        out.append({"case": "boundaries2", "dtype": dtype, "t_end": 5.0})
        out.append({"case": "pulled-apart", "nx": 100, "dtype": dtype, "t_end": 0.5})
    out.append({"case": "mjos-drop", "nx": 24, "t_end": 2.0})
    out.append({"case": "cgrid-tide", "nx": 12, "t_end": 1800.0,
                "friction": ("chezy", "chezy_field")})  # fmt: skip
    out.append({"case": "test1", "t_end": 0.02, "coriolis": {"f": 2.0, "beta": 0.5},
                "wind": {"u": 20.0, "v": -5.0, "rho_water": 50.0}})  # fmt: skip
    out.append({"case": "test1", "t_end": 0.02, "friction": ("manning", "manning_field"),
                "interfacial_friction": "interfacial_field"})  # fmt: skip
    for scheme in TWO:
        for dt_mode in ("lagged", "nonlagged"):
            out.append({"case": "slope-surge", "scheme": scheme, "nx": 60, "t_end": 2.0,
                        "dt_mode": dt_mode})  # fmt: skip
    out.append({"case": "test1", "scheme": "roe", "t_end": 0.02, "restart": True})
    out.append({"case": "boundaries2", "t_end": 5.0, "restart": True})
    if backend == "gpu":
        out = _gpu_variants(out)
    for spec in out:
        spec["backend"] = backend
        spec["name"] = _name(spec)
    return out


def _gpu_variants(base: list[dict]) -> list[dict]:
    """Every GPU variant of each configuration (block in Hilbert order, grid on the grids)."""
    out = []
    grids = ("cgrid-drop", "cgrid-island", "cgrid-tide", "mjos-drop")
    for spec in base:
        for variant in ("edge", "gather", "slot", "block", "grid"):
            if variant == "grid" and spec["case"] not in grids:
                continue
            extra = {"variant": variant}
            if variant == "block":
                extra["order"] = "hilbert"
            if variant == "grid":
                extra["order"] = "none"
            out.append({**spec, **extra})
    return out


def _name(spec: dict) -> str:
    skip = ("backend", "name", "compensated")
    return ",".join(f"{k}={spec[k]}" for k in sorted(spec) if k not in skip)


def _resolved(spec: dict, driver) -> dict:
    """``spec`` with the named coefficient fields of tests/mpi_driver.py resolved."""
    spec = dict(spec)
    if "friction" in spec:
        law, field = spec["friction"]
        spec["friction"] = (law, getattr(driver, field))
    if "interfacial_friction" in spec:
        spec["interfacial_friction"] = getattr(driver, spec["interfacial_friction"])
    return spec


def simulation(spec: dict, comm, driver):
    """The Simulation of ``spec`` (tests/mpi_driver.py's, or the boundary cases of
    tests/test_boundaries.py, ``boundaries1`` and ``boundaries2``)."""
    spec = _resolved(spec, driver)
    options = {"dtype": spec.get("dtype", "float64")}
    options.update({k: spec[k] for k in ("dt_mode", "dt") if k in spec})
    if spec["case"].startswith("boundaries"):
        from test_boundaries import _emulated_case

        return _emulated_case(
            int(spec["case"][-1]), **options, **driver.backend_options(spec, comm)
        )
    if "dt" in spec or spec["case"] in ("slope-surge", "pulled-apart"):
        return _with_options(spec, comm, driver, options)
    return driver.simulation(spec, comm)


def _with_options(spec: dict, comm, driver, options: dict):
    """A named case built with options the driver does not pass (a fixed dt, a dtype of the
    limiter's cases)."""
    if spec["case"] == "slope-surge":
        from test_vanishing import slope_surge_simulation

        return slope_surge_simulation(spec["scheme"], spec["nx"], **options,
                                      **driver.backend_options(spec, comm))  # fmt: skip
    if spec["case"] == "pulled-apart":
        from test_vanishing import pulled_apart_simulation

        return pulled_apart_simulation(spec["nx"], **options, **driver.backend_options(spec, comm))
    case = driver.get_case(spec["case"])
    return case.simulation(scheme=spec.get("scheme", case.scheme),
                           **options, **driver.backend_options(spec, comm))  # fmt: skip


def run(spec: dict, comm, driver) -> dict:
    """One run of ``spec``; with ``restart`` it is stopped at half time, snapshotted, and a
    new Simulation continues from the snapshot."""
    sim = simulation(spec, comm, driver)
    if spec.get("restart"):
        sim.run(spec["t_end"] / 2)
        snap = sim.backend.snapshot()
        sim = simulation(spec, comm, driver)
        sim.backend.restore(snap)
    sim.run(spec["t_end"])
    return driver.results(sim)


def _host_gpu() -> None:
    """Runs asking for the GPU get the GPU backend on the host runtime of the tests."""
    import functools

    from host_runtime import HostRuntime

    import fvswe.simulation
    from fvswe.backends import gpu

    host = functools.partial(gpu.GpuBackend, runtime=HostRuntime())
    host.name = "gpu"
    real = fvswe.simulation.backend_class
    fvswe.simulation.backend_class = lambda name: host if name == "gpu" else real(name)


def digest(results: dict) -> str:
    """sha256 of the state's bytes, steps and counters (not the masses, a function of the
    state: left out so that trees from before their exact sums, fvswe.exactsum, compare)."""
    h = hashlib.sha256()
    for key in ("state", "steps", "counters", "inflow"):
        h.update(np.ascontiguousarray(results[key]).tobytes())
    return h.hexdigest()[:16]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--backend",
        default="cpu",
        choices=("cpu", "gpu", "host-gpu"),
        help="host-gpu: the GPU backend on the host (tests/host_runtime.py)",
    )
    ap.add_argument("-o", "--output", type=Path)
    ap.add_argument("-k", "--only", default="", help="run the names containing this text")
    ap.add_argument(
        "--shard",
        default="0/1",
        metavar="I/N",
        help="run every N-th configuration from the I-th (processes sharing a GPU)",
    )
    ap.add_argument(
        "--plain-float32",
        action="store_true",
        help="float32 runs without the compensated state (issue 31), under the same names: "
        "to compare with a tree that predates it",
    )
    ap.add_argument("--compare", nargs=2, type=Path, metavar=("A", "B"))
    args = ap.parse_args(argv)
    if args.compare:
        return compare(*args.compare)
    comm = None
    from fvswe.parallel import world

    comm = world()
    driver = _driver()
    if args.backend == "host-gpu":
        _host_gpu()
    out = {}
    first, every = (int(x) for x in args.shard.split("/"))
    chosen = specs("gpu" if args.backend == "host-gpu" else args.backend)[first::every]
    if args.plain_float32:
        chosen = [{**s, "compensated": False} if s.get("dtype") == "float32" else s for s in chosen]
    for spec in chosen:
        if args.only not in spec["name"]:
            continue
        start = time.perf_counter()
        steps = 0
        try:
            res = run(spec, comm, driver)
            out[spec["name"]], steps = digest(res), int(res["steps"])
        except Exception as exc:  # recorded: a configuration that fails is a result too
            out[spec["name"]] = f"error: {type(exc).__name__}: {exc}"
        if comm is None or comm.rank == 0:
            took = time.perf_counter() - start
            print(f"{out[spec['name']]} {steps:5d} steps {took:6.2f} s  {spec['name']}", flush=True)
    if args.output and (comm is None or comm.rank == 0):
        args.output.write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
    return 0


def _digests(path: Path) -> dict:
    """The digests of a file, or of all files ``path*.json`` (the shards of one tree's run)."""
    if path.exists():
        return json.loads(path.read_text())
    out = {}
    for shard in sorted(path.parent.glob(path.name + "*.json")):
        out.update(json.loads(shard.read_text()))
    return out


def compare(a: Path, b: Path) -> int:
    """Print the configurations whose digests differ (or exist in one file only); exit 1 if any.
    ``a`` and ``b`` are files, or prefixes of shard files."""
    da, db = _digests(a), _digests(b)
    bad = sorted(k for k in da.keys() | db.keys() if da.get(k) != db.get(k))
    for k in bad:
        print(f"DIFFERS {k}: {da.get(k)} -> {db.get(k)}")
    same = len(da.keys() & db.keys()) - len([k for k in bad if k in da and k in db])
    print(f"{same} equal, {len(bad)} differ or missing")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
