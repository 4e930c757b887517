"""``fvswe run CASE``: run a named case on a mesh and write its final state and summary."""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

import numpy as np

from ..cases import CASES, get_case
from ..errors import ConfigError


def register(sub) -> None:
    p = sub.add_parser(
        "run",
        help="run a named case",
        description="Run a named case (see `fvswe cases`) and report a summary.",
    )
    p.add_argument("case", help="case name, e.g. test1")
    p.add_argument("--mesh", help="mesh file (default: the case's bundled mesh)")
    p.add_argument("--scheme", help="roe, ir-roe, pvm-ifcp (one layer: also hll)")
    p.add_argument("--order", default="none", help="cell ordering: none, rcm, gps, random, hilbert, morton")
    p.add_argument("--dtype", default="float64", choices=("float64", "float32"))
    p.add_argument("--backend", default="auto", choices=("cpu", "gpu", "auto"),
                   help="auto: the GPU when CuPy sees one, else the CPU")  # fmt: skip
    p.add_argument("--t-end", type=float, help="simulated end time in seconds")
    p.add_argument("--cfl", type=float, help="CFL number gamma in (0, 1]")
    p.add_argument("--dt-mode", default="lagged", choices=("lagged", "nonlagged", "fixed"))
    p.add_argument("--dt", type=float, help="time step for --dt-mode fixed")
    p.add_argument("--threads", type=int, help="CPU threads (default: all cores)")
    p.add_argument("--output", "-o", help="directory for final.npz and summary.json")
    p.add_argument("--json", action="store_true", help="print the summary as one JSON object")
    p.set_defaults(func=run)

    c = sub.add_parser("cases", help="list the named cases", description="List the named cases.")
    c.set_defaults(func=list_cases)


def list_cases(args) -> int:
    width = max(map(len, CASES))
    for name, case in CASES.items():
        print(f"{name:<{width}}  {case.summary}")
    return 0


def _atomic_write(path: Path, write) -> None:
    """Write through a temporary file in the same folder, then rename: nothing half-written."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=path.suffix)
    os.close(fd)
    try:
        write(tmp)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def run(args) -> int:
    case = get_case(args.case)
    mesh = None
    if args.mesh:
        from ..mesh import read_mesh

        mesh = read_mesh(args.mesh)
    options = {"order": args.order, "dtype": args.dtype, "backend": args.backend,
               "dt_mode": args.dt_mode, "dt": args.dt, "threads": args.threads}  # fmt: skip
    if args.scheme:
        options["scheme"] = args.scheme
    if args.cfl is not None:
        options["cfl"] = args.cfl
    t_end = case.t_end if args.t_end is None else args.t_end
    if not t_end > 0:
        raise ConfigError(f"--t-end: must be positive, got {t_end!r}")
    out = Path(args.output) if args.output else None
    if out is not None and out.exists() and not out.is_dir():
        raise ConfigError(f"--output: {out} exists and is not a directory")
    sim = case.simulation(mesh, **options)
    summary = sim.run(t_end)
    report = {"case": case.name, "mesh": sim.mesh.source, **summary.to_dict()}
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        fields = sim.fields()
        keep = ("x", "y", "area", "H", *sim.model.fields)
        _atomic_write(out / "final.npz", lambda p: np.savez(p, **{k: fields[k] for k in keep}))
        _atomic_write(out / "summary.json",
                      lambda p: Path(p).write_text(json.dumps(report, indent=2) + "\n"))  # fmt: skip
    if args.json:
        print(json.dumps(report))
    else:
        drift = ", ".join(f"{d:.1e}" for d in summary.mass_rel_drift)
        print(
            f"{case.name}: t = {summary.t:g} s in {summary.steps} steps, {summary.wall_s:.3g} s wall "
            f"({summary.cell_steps_per_s / 1e6:.3g} M cell-steps/s, {sim.backend.name}, "
            f"{sim.dtype}, {sim.scheme}); mass drift per layer {drift}",
            file=sys.stdout,
        )
    return 0
