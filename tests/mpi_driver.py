"""Run named cases on the ranks of ``mpiexec`` and save what rank 0 sees (tests/test_mpi.py).

``mpiexec -n P python tests/mpi_driver.py RUNS.json OUT.npz``: RUNS.json is a list of
``{"name", "case", "t_end", "scheme", "order", "dtype", "nx"}`` (the last four optional); OUT.npz
gets, per run, ``NAME.state`` (the global state in the original cell order), ``NAME.mass``,
``NAME.steps``, ``NAME.counters`` (sorted by name) and ``NAME.inflow`` (the counter
``level_inflow``), as :func:`run_case` returns them.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

from fvswe.cases import get_case


def run_case(spec: dict, comm=None) -> dict[str, np.ndarray]:
    """One run of ``spec`` (on ``comm``'s ranks, or alone) and its final results."""
    case = get_case(spec["case"])
    if "nx" in spec:
        case = case.with_grid(spec["nx"])
    sim = case.simulation(
        scheme=spec.get("scheme", case.scheme), order=spec.get("order", "none"),
        dtype=spec.get("dtype", "float64"), backend="cpu", comm=comm,
    )  # fmt: skip
    sim.run(spec["t_end"])
    counters = sim.backend.counters()
    return {"state": sim.state(), "mass": np.array(sim.mass()), "steps": np.array(sim.steps),
            "counters": np.array([counters[k] for k in sorted(counters)]),
            "inflow": np.array(counters.get("level_inflow", 0.0))}  # fmt: skip


def main(runs_json: str, out: str) -> None:
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    saved = {}
    for spec in json.loads(Path(runs_json).read_text()):
        for key, value in run_case(spec, comm).items():
            saved[f"{spec['name']}.{key}"] = value
    if comm.rank == 0:
        np.savez(out, **saved)


if __name__ == "__main__":
    main(*sys.argv[1:])
