"""Run named cases on the ranks of ``mpiexec`` and save what rank 0 sees (tests/test_mpi.py).

``mpiexec -n P python tests/mpi_driver.py RUNS.json OUT.npz``: RUNS.json is a list of
``{"name", "case", "t_end", "scheme", "order", "dtype", "nx"}`` (the last four optional; the
case ``slope-surge`` is tests/test_vanishing.py's, on ``nx`` x 2 triangles); OUT.npz
gets, per run, ``NAME.state`` (the global state in the original cell order), ``NAME.mass``,
``NAME.steps``, ``NAME.counters`` (sorted by name), ``NAME.inflow`` (the counter
``level_inflow``) and ``NAME.limited`` (the positivity limiter's counter), as
:func:`run_case` returns them.

``mpiexec -n P python tests/mpi_driver.py --blowup``: rank 0 prints the smallest border
cell ``b`` of the parts of test1 and the blow-up message when every cell from ``b`` on
holds NaN (:func:`blowup_message`).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

from fvswe.cases import get_case
from fvswe.errors import BlowUpError


def simulation(spec: dict, comm=None):
    """The simulation of ``spec`` on ``comm``'s ranks (or alone)."""
    if spec["case"] == "slope-surge":
        from test_vanishing import slope_surge_simulation

        return slope_surge_simulation(spec["scheme"], spec["nx"], backend="cpu", comm=comm)
    if spec["case"] == "pulled-apart":
        from test_vanishing import pulled_apart_simulation

        return pulled_apart_simulation(spec["nx"], backend="cpu", comm=comm)
    case = get_case(spec["case"])
    if "nx" in spec:
        case = case.with_grid(spec["nx"])
    return case.simulation(
        scheme=spec.get("scheme", case.scheme), order=spec.get("order", "none"),
        dtype=spec.get("dtype", "float64"), backend="cpu", comm=comm,
        coriolis=spec.get("coriolis"), wind=spec.get("wind"),
    )  # fmt: skip


def run_case(spec: dict, comm=None) -> dict[str, np.ndarray]:
    """One run of ``spec`` (on ``comm``'s ranks, or alone) and its final results."""
    sim = simulation(spec, comm)
    sim.run(spec["t_end"])
    counters = sim.backend.counters()
    return {"state": sim.state(), "mass": np.array(sim.mass()), "steps": np.array(sim.steps),
            "counters": np.array([counters[k] for k in sorted(counters)]),
            "inflow": np.array(counters.get("level_inflow", 0.0)),
            "limited": np.array(counters["limited"])}  # fmt: skip


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


def blowup(comm) -> None:
    """Print ``[b, message]`` on rank 0: see the module docstring."""
    from mpi4py import MPI

    sim = get_case("test1").simulation(backend="cpu", comm=comm)
    part = sim.backend.part
    border = part.cells[part.n_interior : part.n_owned]
    first = comm.allreduce(int(border.min()) if border.size else sim.mesh.n_cells, op=MPI.MIN)
    message = blowup_message(sim, first)
    if comm.rank == 0:
        print(json.dumps([first, message]))


def runs(comm, runs_json: str, out: str) -> None:
    """Every run of ``runs_json``; rank 0 saves the results to ``out``."""
    saved = {}
    for spec in json.loads(Path(runs_json).read_text()):
        for key, value in run_case(spec, comm).items():
            saved[f"{spec['name']}.{key}"] = value
    if comm.rank == 0:
        np.savez(out, **saved)


if __name__ == "__main__":
    from mpi4py import MPI

    if sys.argv[1:] == ["--blowup"]:
        blowup(MPI.COMM_WORLD)
    else:
        runs(MPI.COMM_WORLD, *sys.argv[1:])
