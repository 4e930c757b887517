"""Run named cases on the ranks of ``mpiexec`` and save what rank 0 sees (tests/test_mpi.py).

``mpiexec -n P python tests/mpi_driver.py RUNS.json OUT.npz``: RUNS.json is a list of
``{"name", "case", "t_end", "scheme", "order", "dtype", "nx", "backend", "variant",
"cells", "dt_mode", "restart_at", "section", "overlap", "misplit", "parts", "outflow"}`` (from
"scheme" on
optional; backend "cpu" by default; with "restart_at", the run is continued from a
checkpoint written at that time; with "section" (a list of points), a section's volume is
counted; "overlap": the GPU ranks' option (docs/PARALLEL.md), "misplit": one border block
launched among the interior ones, before the halo is in (a wrong overlap), "parts": the ranks
each hold their part alone, from part files, restarted on fewer ranks (:func:`parts_runs`:
``NAME`` and ``NAME-fewer``, each with ``holds``), "outflow": tags whose conditions become
free outflows; the cases ``slope-surge``
and ``pulled-apart`` are tests/test_vanishing.py's, on ``nx`` x 2 triangles,
``periodic-strip`` tests/test_periodic.py's dam break on ``nx`` x 4 triangles and
``sphere-band`` tests/test_sphere.py's Williamson test 2 on ``3 nx x nx`` rectangles of a
lon/lat band, ``layers`` 1 or 2); OUT.npz
gets, per run, ``NAME.state`` (the global state in the original cell order), ``NAME.mass``,
``NAME.steps``, ``NAME.counters`` (sorted by name), ``NAME.inflow`` (the counter
``level_inflow``), ``NAME.limited`` (the positivity limiter's counter), ``NAME.sections``
(the section's volume per layer at the end; empty without one) and ``NAME.variant`` (the GPU
variant that ran), as
:func:`run_case` returns them.

``mpiexec -n P python tests/mpi_driver.py --blowup [host-gpu]``: rank 0 prints the smallest
border cell ``b`` of the parts of test1 and the blow-up message when every cell from ``b`` on
holds NaN (:func:`blowup_message`), on CPU ranks or GPU ranks of the host runtime.

``mpiexec -n P python tests/mpi_driver.py --identity``: :data:`IDENTITY_RUNS` on ranks each
holding its part alone, the run identity hashed in chunks of 7 rows (many chunks, most of
them owned by one rank); rank 0 prints one JSON line ``{run: [identity, details]}``
(:func:`identities`).

``mpiexec -n P python tests/mpi_driver.py --gpu [WORD ...]``: GPU ranks (:data:`GPU_RUNS`, and
:data:`GPU_RESTARTS` across rank counts; with words, the runs whose name holds one of them)
against one GPU on rank 0, bitwise; rank 0 prints
each run's times to stderr and one JSON line ``{run: equal}``, and the job exits 1 on any
difference (:func:`gpu_check`).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np

from fvswe import registry
from fvswe.cases import get_case
from fvswe.errors import BlowUpError
from fvswe.probes import Probes, Section


def chezy_field(x, y):
    """A Chézy coefficient varying over every cell of cgrid-tide (a part must read its own)."""
    return 40.0 + 0.05 * x + 0.02 * y


def manning_field(x, y):
    """A Manning coefficient varying over every cell of test1 (likewise)."""
    return 0.02 + 0.01 * np.sin(x + 2.0 * y)


def interfacial_field(x, y):
    """An interfacial friction coefficient varying over every cell of test1 (likewise)."""
    return 0.05 + 0.02 * np.cos(x * y)


#: A section across the pulled-apart strip where the limiter acts, and across the tide's grid.
PULLED_SECTION, TIDE_SECTION = [[0.1, -1.0], [-0.1, 2.0]], [[110.0, -1e4], [90.0, 1e4]]
TIDE = {"case": "cgrid-tide", "nx": 12, "t_end": 1800.0, "backend": "gpu", "section": TIDE_SECTION}
#: The runs whose identity the ranks holding their parts alone compute (--identity): bottom and
#: interfacial friction and Coriolis varying per cell, and the tide's level boundary and
#: uniform friction.
IDENTITY_RUNS = [
    {"name": "test1-fields", "case": "test1", "friction": ("manning", manning_field),
     "interfacial_friction": interfacial_field, "coriolis": {"f": 2.0, "beta": 0.5}},
    {"name": "tide", "case": "cgrid-tide", "nx": 12},
]  # fmt: skip
#: GPU ranks (--gpu): test1 with every two-layer scheme in both dtypes (at 4000 cells the
#: default variant is slot), the edge variant (its halo edges are a second launch) and the
#: gather variant, and the non-lagged Δt (a reduction between the two kernels of a step);
#: the wetting-and-drying tide with its level boundary (inflow counters summed over the
#: ranks) in both dtypes, and on the edge variant with a Chézy coefficient varying per
#: cell; test1 with Coriolis on a beta-plane (f per cell) and wind, and with bottom and
#: interfacial friction coefficients varying per cell; the positivity limiter acting beside
#: the parts' borders ("limits": it must limit, and the ranks without the exchange of theta
#: must differ) in each variant; the linear reconstruction (SSP-RK2) on gather and edge, and
#: with the limiter acting on slot; the dam break on a strip periodic across (edge: the
#: joined edges among the halo edges), and under the linear reconstruction on slot;
#: Williamson's test 2 on a lon/lat band round the globe (the sphere's metric per cell), one
#: layer on edge, two on slot. The block variant on the ranks (its blocks tile the owned
#: cells): the limiter beside the borders, the linear reconstruction, test1 PVM-IFCP and Roe
#: in both dtypes in blocks of 64 cells, the tide's level boundary under SSP-RK2, and the
#: tide on 130 x 130 cells in Hilbert order with no variant asked for, where one GPU's default
#: is block and the ranks must run it too (``variant`` is compared).
GPU_RUNS = [
    *({"name": f"test1-{scheme}-{dtype}", "case": "test1", "scheme": scheme, "dtype": dtype,
       "t_end": 0.02, "backend": "gpu"}
      for scheme in registry.names(2) for dtype in ("float64", "float32")),
    {"name": "test1-roe-edge", "case": "test1", "scheme": "roe", "variant": "edge",
     "t_end": 0.02, "backend": "gpu"},
    {"name": "test1-pvm-ifcp-gather-float32", "case": "test1", "scheme": "pvm-ifcp",
     "dtype": "float32", "variant": "gather", "t_end": 0.02, "backend": "gpu"},
    {"name": "test1-nonlagged-edge", "case": "test1", "scheme": "ir-roe", "variant": "edge",
     "dt_mode": "nonlagged", "t_end": 0.02, "backend": "gpu"},
    {"name": "tide-float64", **TIDE},
    {"name": "tide-float32", **TIDE, "dtype": "float32"},
    {"name": "tide-chezy-field-edge", **TIDE, "variant": "edge",
     "friction": ("chezy", chezy_field)},
    {"name": "test1-forcing", "case": "test1", "t_end": 0.02, "backend": "gpu",
     "coriolis": {"f": 2.0, "beta": 0.5}, "wind": {"u": 20.0, "v": -5.0, "rho_water": 50.0}},
    {"name": "test1-friction-fields", "case": "test1", "t_end": 0.02, "backend": "gpu",
     "friction": ("manning", manning_field), "interfacial_friction": interfacial_field},
    *({"name": f"pulled-apart-{variant}", "case": "pulled-apart", "nx": 100, "t_end": 0.5,
       "variant": variant, "backend": "gpu", "limits": True, "section": PULLED_SECTION}
      for variant in ("slot", "edge", "gather", "block")),
    *({"name": f"test1-linear-{variant}", "case": "test1", "scheme": "pvm-ifcp", "t_end": 0.02,
       "variant": variant, "integrator": "ssp-rk2", "reconstruction": "linear", "backend": "gpu"}
      for variant in ("gather", "edge", "block")),
    *({"name": f"test1-{scheme}-block-{dtype}", "case": "test1", "scheme": scheme, "dtype": dtype,
       "variant": "block", "cells": 64, "t_end": 0.02, "backend": "gpu"}
      for scheme in ("pvm-ifcp", "roe") for dtype in ("float64", "float32")),
    {"name": "tide-block-rk2", **TIDE, "variant": "block", "integrator": "ssp-rk2"},
    {"name": "tide-hilbert-float32", **TIDE, "nx": 130, "t_end": 300.0, "order": "hilbert",
     "dtype": "float32"},
    {"name": "pulled-apart-linear", "case": "pulled-apart", "nx": 100, "t_end": 0.5,
     "variant": "slot", "integrator": "ssp-rk2", "reconstruction": "linear", "backend": "gpu",
     "limits": True},
    {"name": "periodic-strip-edge", "case": "periodic-strip", "nx": 24, "t_end": 2.0,
     "variant": "edge", "backend": "gpu"},
    {"name": "periodic-strip-linear-slot", "case": "periodic-strip", "nx": 24, "t_end": 1.0,
     "variant": "slot", "integrator": "ssp-rk2", "reconstruction": "linear", "backend": "gpu"},
    *({"name": f"sphere-band-{layers}-{variant}", "case": "sphere-band", "nx": 12,
       "layers": layers, "t_end": 7200.0, "variant": variant, "backend": "gpu"}
      for layers, variant in ((1, "edge"), (2, "slot"))),
]  # fmt: skip
#: The block runs again with the state's halo exchange overlapped with the interior blocks
#: (``overlap``; docs/PARALLEL.md): the limiter beside the borders, the linear
#: reconstruction, test1 in both schemes and dtypes, the tide's level boundary under SSP-RK2
#: (blocks of 32 cells where none are asked for, so that each part of these small meshes has
#: interior blocks) and the Hilbert-ordered tide on the block default.
GPU_RUNS += [
    {"cells": 32, **run, "name": f"{run['name']}-overlap", "overlap": True}
    if run.get("variant") == "block"
    else {**run, "name": f"{run['name']}-overlap", "overlap": True}
    for run in GPU_RUNS
    if run.get("variant") == "block" or run["name"] == "tide-hilbert-float32"
]
#: The GPU runs restarted across rank counts: test1, and the tide (its inflow counters).
GPU_RESTARTS = [run for run in GPU_RUNS if run["name"] in ("test1-roe-float64", "tide-float64")]


def backend_options(spec: dict, comm=None) -> dict:
    """The Simulation's backend arguments of ``spec``: backend (``host-gpu``: the GPU backend
    on the host runtime of tests/host_runtime.py), comm, GPU variant (and the block variant's
    cells a block), integrator,
    reconstruction, whether a mass error may pass (a run made wrong on purpose), and the
    compensated float32 state where the spec names it."""
    options = {k: spec[k] for k in ("variant", "cells") if k in spec}
    if comm is not None and "overlap" in spec:  # GPU ranks' option (one device has no halo)
        options["overlap"] = spec["overlap"]
    backend = spec.get("backend", "cpu")
    if backend == "host-gpu":
        from host_runtime import HostRuntime

        backend, options["runtime"] = "gpu", HostRuntime()
    return {"backend": backend, "comm": comm, "backend_options": options or None,
            "integrator": spec.get("integrator", "euler"),
            "reconstruction": spec.get("reconstruction", "constant"),
            "allow_mass_error": spec.get("allow_mass_error", False),
            **({"compensated": spec["compensated"]} if "compensated" in spec else {})}  # fmt: skip


def simulation(spec: dict, comm=None, own=None):
    """The Simulation of ``spec`` (on ``comm``'s ranks, or alone; ``own``: ``(local mesh,
    OwnPart)`` of :func:`fvswe.parallel.read_own`, each rank holding its part alone: the named
    cases only)."""
    if spec["case"] == "slope-surge":
        from test_vanishing import slope_surge_simulation

        return slope_surge_simulation(spec["scheme"], spec["nx"], **backend_options(spec, comm))
    if spec["case"] == "pulled-apart":
        from test_vanishing import pulled_apart_simulation

        return pulled_apart_simulation(spec["nx"], **backend_options(spec, comm))
    if spec["case"] == "periodic-strip":
        from test_periodic import periodic_strip_simulation

        return periodic_strip_simulation(spec["nx"], **backend_options(spec, comm))
    if spec["case"] == "sphere-band":
        from test_sphere import williamson2

        return williamson2(spec["nx"], spec.get("layers", 1), scheme=spec.get("scheme", "roe"),
                           **backend_options(spec, comm))  # fmt: skip
    if spec["case"] == "rain-basin":
        from test_sources import rain_basin_simulation

        return rain_basin_simulation(spec.get("layers", 1), **backend_options(spec, comm))
    if spec["case"] == "slide-basin":
        from test_slide import slide_basin_simulation

        return slide_basin_simulation(spec.get("layers", 1), **backend_options(spec, comm))
    case = get_case(spec["case"])
    if "nx" in spec:
        case = case.with_grid(spec["nx"])
    options = {k: spec[k] for k in ("friction", "interfacial_friction") if k in spec}
    if "outflow" in spec:  # these tags' conditions free outflows
        options["boundary"] = {**case.boundary, **dict.fromkeys(spec["outflow"], "outflow")}
    if own is not None:
        options.update(mesh=own[0], part=own[1])
    return case.simulation(
        scheme=spec.get("scheme", case.scheme), order=spec.get("order", "none"),
        dtype=spec.get("dtype", "float64"), coriolis=spec.get("coriolis"), wind=spec.get("wind"),
        dt_mode=spec.get("dt_mode", "lagged"), **backend_options(spec, comm), **options,
    )  # fmt: skip


def run_case(spec: dict, comm=None) -> dict[str, np.ndarray]:
    """One run of ``spec`` (on ``comm``'s ranks, or alone) and its final results; with
    ``restart_at``, continued from a checkpoint file (:func:`restarted`); with
    ``no_theta_exchange``, GPU ranks that skip the exchange of the limiter's theta."""
    if "restart_at" in spec:
        return results(restarted(spec, comm))
    sim = simulation(spec, comm)
    if spec.get("no_theta_exchange") and comm is not None:
        sim.backend.local.halo.exchange_theta = lambda: None
    if spec.get("misplit") and comm is not None:  # a border block run before the halo is in
        sim.backend.local.halo.interior_blocks += 1
    probes = None
    if "section" in spec:  # counted edge by edge (Backend.count_edges)
        probes = Probes(sim, sections=[Section("s", tuple(map(tuple, spec["section"])))])
    sim.run(spec["t_end"])
    return results(sim, probes)


def restarted(spec: dict, comm=None):
    """``spec`` run to ``restart_at``, its snapshot written as a checkpoint (by rank 0), and
    a new Simulation of ``spec`` restored from the file and run to ``t_end``: the library's
    checkpoint path, as ``Simulation.snapshot``/``restore`` document it."""
    import shutil
    import tempfile

    from fvswe import output

    first = simulation(spec, comm)
    first.run(spec["restart_at"])
    snap = first.snapshot()  # collective
    folder = tempfile.mkdtemp() if first.is_root else None
    folder = Path(folder if comm is None else comm.bcast(folder))
    if first.is_root:
        output.save_checkpoint(folder / "c.npz", snap)
    if comm is not None:
        comm.Barrier()
    again = simulation(spec, comm)
    again.restore(output.load_checkpoint(folder / "c.npz"))
    if comm is not None:
        comm.Barrier()
    if again.is_root:
        shutil.rmtree(folder)
    again.run(spec["t_end"])
    return again


def parts_runs(spec: dict, comm) -> dict[str, dict[str, np.ndarray]]:
    """``spec`` on the P ranks of ``comm``, each holding its part alone (its part file of
    :func:`cut`, :func:`fvswe.parallel.read_own`): run to ``restart_at``, where each rank writes
    its part of a checkpoint (:func:`fvswe.partout.save_checkpoint`), and on to ``t_end``
    (``NAME``); that checkpoint continued to ``t_end`` on P - 1 ranks from their own partition,
    or on one process (P = 2), which reads every part (``NAME-fewer``). The results on rank 0
    (``holds``: the rank held its part alone, its layout the part's cells only). The kernels
    are warmed up first, as ``fvswe run`` does (a step taken and undone on each rank)."""
    import shutil
    import tempfile

    from mpi4py import MPI

    from fvswe import output, partout
    from fvswe.parallel import read_own
    from fvswe.runner import warm_up

    folder = Path(comm.bcast(tempfile.mkdtemp() if comm.rank == 0 else None))
    fewer = comm.size - 1
    if comm.rank == 0:
        for n in sorted({comm.size, fewer} - {1}):
            cut(spec, n, folder / f"parts{n}")
    comm.Barrier()
    own = read_own(comm, folder / f"parts{comm.size}")
    sim = simulation(spec, comm, own)
    holds = sim.backend.holds_part and sim.layout.n_cells == own[1].part.cells.size
    warm_up(sim, spec["t_end"])  # as fvswe run does: a step taken and undone on each rank
    sim.run(spec["restart_at"])
    partout.save_checkpoint(folder / "c.npz", sim.snapshot(), comm)
    sim.run(spec["t_end"])
    done = {spec["name"]: {**results(sim), "holds": np.array(holds)}}
    sub = comm.Split(0 if comm.rank < fewer else MPI.UNDEFINED)
    again = None
    if fewer > 1 and comm.rank < fewer:
        own = read_own(sub, folder / f"parts{fewer}")
        again = simulation(spec, sub, own)
        again.restore(output.load_checkpoint(folder / "c.npz", cells=own[1].part.cells))
    elif fewer == 1 and comm.rank == 0:
        again = simulation(spec)
        again.restore(output.load_checkpoint(folder / "c.npz"))
    if again is not None:
        again.run(spec["t_end"])
        done[f"{spec['name']}-fewer"] = {**results(again), "holds": np.array(fewer > 1)}
    comm.Barrier()
    if comm.rank == 0:
        shutil.rmtree(folder)
    return done


def cut(spec: dict, n: int, folder: Path) -> None:
    """``spec``'s mesh in its order cut into ``n`` parts (Hilbert runs) and written to
    ``folder`` (as ``fvswe mesh partition --method hilbert --order ORDER -o`` does)."""
    from fvswe.partfile import write_parts
    from fvswe.partition import assign, split

    case = get_case(spec["case"])
    mesh = (case.with_grid(spec["nx"]) if "nx" in spec else case).default_mesh()
    order = spec.get("order", "none")
    if order != "none":
        mesh = mesh.reordered(order)[0]
    write_parts(mesh, split(mesh, assign(mesh, n, "hilbert")), folder, method="hilbert",
                order=order)  # fmt: skip


def results(sim, probes=None) -> dict[str, np.ndarray]:
    """What a run is compared by: state (original cell order), masses, steps, counters (the
    positivity limiter's also alone), the section volumes of ``probes`` (collective), the
    GPU variant that ran (empty on the CPU) and the interior blocks that an overlapping GPU
    rank launches before its halo is in (``split``; 0 without overlap)."""
    counters = sim.backend.counters()
    if probes is not None:
        probes.sample()
    halo = getattr(getattr(sim.backend, "local", None), "halo", None)
    return {"state": sim.state(), "mass": np.array(sim.mass()), "steps": np.array(sim.steps),
            "counters": np.array([counters[k] for k in sorted(counters)]),
            "inflow": np.array(counters.get("level_inflow", 0.0)),
            "limited": np.array(counters.get("limited", 0)),
            "sections": np.zeros(0) if probes is None else probes.volume[-1],
            "split": np.array(getattr(halo, "interior_blocks", 0)),
            "variant": np.array(getattr(getattr(sim.backend, "local", sim.backend), "variant",
                                        ""))}  # fmt: skip


def _no_copy():
    raise AssertionError("a look at a sound state copied a rank's state to the host")


def blowup_message(sim, first: int) -> str:
    """The blow-up check's message once cells ``first`` on (layout order) hold NaN depths."""
    W = sim.backend.get_state()
    W[first:, 0] = np.nan
    sim.backend.set_state(W)
    try:
        sim._check()
    except BlowUpError as exc:
        return str(exc)
    return "no blow-up"


def blowup(comm, backend: str = "cpu") -> None:
    """Print ``[b, message]`` on rank 0: see the module docstring. First a look at the sound
    state, with the ranks' own backends unable to hand their states to the host: it copies
    none (a GPU's looks on the device)."""
    from mpi4py import MPI

    sim = get_case("test1").simulation(**backend_options({"backend": backend}, comm))
    part = sim.backend.part
    border = part.cells[part.n_interior : part.n_owned]
    first = comm.allreduce(int(border.min()) if border.size else sim.mesh.n_cells, op=MPI.MIN)
    local = sim.backend.local
    local.get_state = _no_copy
    sim._check()
    del local.get_state
    message = blowup_message(sim, first)
    if comm.rank == 0:
        print(json.dumps([first, message]))


def same(a: dict, b: dict) -> bool:
    """Whether two :func:`results` are bitwise equal, after more than one step, the masses
    too (one GPU and the ranks: the exact sum, fvswe.exactsum), and the variant
    (:func:`same_variant`)."""
    keys = ("state", "mass", "steps", "counters", "inflow", "sections")
    return (int(a["steps"]) > 1 and all(np.array_equal(a[k], b[k]) for k in keys)
            and same_variant(str(a["variant"]), str(b["variant"])))  # fmt: skip


def same_variant(a: str, b: str) -> bool:
    """Whether two runs ran the variant they should: the same one, but where one GPU ran the
    Cartesian grid's kernel (``grid``), which a part cannot run (it is no grid), so its ranks
    run their default (float64 bitwise the same; the tide's runs check it)."""
    return a == b or "grid" in (a, b)


def gpu_check(comm, words: list[str] | None = None) -> dict[str, bool]:
    """Every :data:`GPU_RUNS` on the ranks against one GPU on rank 0, and every
    :data:`GPU_RESTARTS` across rank counts (:func:`gpu_restart`); with ``words``, only the
    runs whose name holds one of them and no restart. ``{name: equal}`` on rank 0 (empty
    elsewhere)."""
    equal = {}
    chosen = [s for s in GPU_RUNS if not words or any(w in s["name"] for w in words)]
    for spec in chosen:
        start = time.perf_counter()
        ranks = run_case(spec, comm)
        if comm.rank == 0:
            middle = time.perf_counter()
            one = run_case(spec)
            split = int(ranks["split"]) > 0  # overlapping ranks split their block steps
            equal[spec["name"]] = same(one, ranks) and split == bool(spec.get("overlap"))
            took = ", ".join(f"{t:.1f}" for t in (middle - start, time.perf_counter() - middle))
            print(f"{spec['name']}: ranks, one GPU {took} s (compiling included)", file=sys.stderr)
        if spec.get("limits"):
            unexchanged = without_theta_exchange(spec, comm)
            if comm.rank == 0:
                differs = unexchanged is None or not same(one, unexchanged)
                note = "different" if differs else "EQUAL"
                print(f"{spec['name']}: limited {int(one['limited'])}, without the theta "
                      f"exchange {note}", file=sys.stderr)  # fmt: skip
                equal[spec["name"]] &= int(one["limited"]) > 0 and differs
    for spec in GPU_RESTARTS if not words else ():
        equal.update(gpu_restart(comm, spec))
    return equal


def gpu_restart(comm, spec: dict) -> dict[str, bool]:
    """The ranks' snapshot of ``spec`` at half time continued by one GPU, and one GPU's
    continued by the ranks, both against the straight single-GPU run (on rank 0), through
    ``Simulation.snapshot``/``restore`` (which also check the run identity)."""
    equal = {}
    half = spec["t_end"] / 2
    ranks = simulation(spec, comm)
    ranks.run(half)
    snap = ranks.snapshot()  # collective: the global state on every rank
    one_snap = None
    if comm.rank == 0:
        one = simulation(spec)
        one.run(half)
        one_snap = one.snapshot()
        one.run(spec["t_end"])
        alone = simulation(spec)
        alone.restore(snap)
        alone.run(spec["t_end"])
        equal[f"{spec['name']}: restart {comm.size} ranks -> 1"] = same(
            results(one), results(alone)
        )
    ranks.restore(comm.bcast(one_snap))
    ranks.run(spec["t_end"])
    continued = results(ranks)
    if comm.rank == 0:
        equal[f"{spec['name']}: restart 1 -> {comm.size} ranks"] = same(results(one), continued)
    return equal


def without_theta_exchange(spec: dict, comm) -> dict[str, np.ndarray] | None:
    """:func:`run_case` on GPU ranks that skip the exchange of the limiter's theta (so an
    owned cell beside a halo cell limited by its owner keeps its unlimited update), or None
    where that run stopped (every rank together) at a clip or a mass error."""
    sim = simulation(spec, comm)
    sim.backend.local.halo.exchange_theta = lambda: None
    try:
        sim.run(spec["t_end"])
    except BlowUpError:
        return None
    return results(sim)


def identities(comm) -> dict[str, list]:
    """``[identity, details]`` of each of :data:`IDENTITY_RUNS` on the ranks of ``comm``, each
    holding its part alone (cut as :func:`cut` does), hashed 7 rows at a time (on rank 0)."""
    import shutil
    import tempfile

    from fvswe import parallel, restart

    parallel.DIGEST_ROWS = 7
    folder = Path(comm.bcast(tempfile.mkdtemp() if comm.rank == 0 else None))
    found = {}
    for spec in IDENTITY_RUNS:
        if comm.rank == 0:
            cut(spec, comm.size, folder / spec["name"])
        comm.Barrier()
        sim = simulation(spec, comm, parallel.read_own(comm, folder / spec["name"]))
        assert sim.backend.holds_part
        found[spec["name"]] = list(restart.identified(sim))
    comm.Barrier()
    if comm.rank == 0:
        shutil.rmtree(folder)
    return found


def runs(comm, runs_json: str, out: str) -> None:
    """Every run of ``runs_json``; rank 0 saves the results to ``out``."""
    saved = {}
    for spec in json.loads(Path(runs_json).read_text()):
        done = parts_runs(spec, comm) if spec.get("parts") else {spec["name"]: run_case(spec, comm)}
        for name, values in done.items():
            saved.update({f"{name}.{key}": value for key, value in values.items()})
    if comm.rank == 0:
        np.savez(out, **saved)


def _abort_all(kind, value, trace) -> None:
    """An error uncaught on one rank ends every rank at once (its traceback printed), rather
    than leaving the others waiting in a collective until the launch's timeout."""
    from mpi4py import MPI

    sys.__excepthook__(kind, value, trace)
    sys.stderr.flush()
    MPI.COMM_WORLD.Abort(1)


if __name__ == "__main__":
    from mpi4py import MPI

    sys.excepthook = _abort_all
    if sys.argv[1:2] == ["--blowup"]:
        blowup(MPI.COMM_WORLD, *sys.argv[2:])
    elif sys.argv[1:] == ["--identity"]:
        found = identities(MPI.COMM_WORLD)
        if MPI.COMM_WORLD.rank == 0:
            print(json.dumps(found))
    elif sys.argv[1:2] == ["--gpu"]:
        equal = gpu_check(MPI.COMM_WORLD, sys.argv[2:])
        if MPI.COMM_WORLD.rank == 0:
            print(json.dumps(equal))
        failed = MPI.COMM_WORLD.bcast(not all(equal.values()))
        sys.exit(1 if failed else 0)
    else:
        runs(MPI.COMM_WORLD, *sys.argv[1:])
