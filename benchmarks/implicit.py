"""The implicit method of the C-grid thesis against the explicit finite volumes (docs/IMPLICIT.md).

    python3 benchmarks/implicit.py iterations --backend cpu --n 128     # GPU: --n 1536
    python3 benchmarks/implicit.py tide --backend cpu --n 48 --hours 2 --explicit
    python3 benchmarks/implicit.py basin --backend cpu --n 100

``iterations``: CG iterations per solve with the RRB, Jacobi and AMG preconditioners at
Δt = 1, 10, 50, 100 times the explicit step ``Δx / √(g h_max)``, on cgrid-drop (``n``²)
after ``--spinup`` s at the explicit step, ``--steps`` steps each from that state (the
advective Courant number is not checked here), beside the thesis's counts at 1536²; and
each preconditioner's set-up time on a system of that size.

``tide``: cgrid-tide over ``--hours`` with the implicit method at each ``--wave-courant``
cap (the step: advective Courant number ``cfl``, at most that gravity-wave Courant number),
its wall time beside the explicit run's (``--explicit`` runs it; else, when ``n`` is 1056,
the recorded 24 h GPU run of benchmarks/results/cgrid1056_grid_h100_24h.json at its mean
rate, scaled to ``--hours``), and the level
at three gauges against the explicit run's when there is one.

``basin``: tidal-basin (``n`` by ``n/2``, 24 h): the explicit finite volumes, then the
implicit method at fixed steps ``k`` times the explicit step (each ``k`` rounded so that
whole steps meet the half-hourly gauge samples, so no step is longer than 1800 s), with
θ = ``--theta`` (½ by default: a deep basin has no wetting and drying, and the damping of
θ > ½ shrinks its resonant response at large steps). Per ``k``: wall time, speed-up, and the
gauges' RMS difference from the explicit run and from the implicit run at ``k = 1`` (its
time error). The break-even ratio is the smallest ``k`` at which the implicit run is the
faster; a ``k`` is as accurate as the explicit method where its time error stays below the
explicit-implicit difference at ``k = 1`` (what the choice of method costs anyway).

The JSON is rewritten after every row, so a run cut short keeps what it measured.
Timing: the host clock around ``Simulation.run`` (each implicit step ends with one
transfer from the device, and CG's stopping tests are transfers: every iteration with RRB,
every 8 with Jacobi on the GPU; the explicit GPU run synchronises at its checks and at the
end). ``--preconditioner`` picks the implicit runs' preconditioner in ``tide`` and ``basin``.
"""

from __future__ import annotations

import argparse
import datetime
import math
import sys
import time
from pathlib import Path

import numpy as np
from cgrid import machine_info, write

from fvswe.cases import get_case
from fvswe.implicit import precond
from fvswe.implicit.backend import array_module
from fvswe.implicit.cg import UNFUSED
from fvswe.implicit.operator import Stencil
from fvswe.implicit.rrb import COARSE_CELLS

RESULTS = Path("benchmarks/results")
#: The thesis's CG iterations at 1536², ||r||_2 < 1e-5 (docs/IMPLICIT.md).
THESIS_ITERATIONS = {"rrb": (1, 2, 4, 7), "amg": (2, 8, 16, 20), "jacobi": (3, 42, 231, 496)}
RATIOS = (1, 10, 50, 100)
#: iterations: θ of the RRB table (README, IMPLICIT.md), the default when it was measured.
TABLE_THETA = 0.55
#: The explicit GPU run of cgrid-tide at 1056² over 24 h (H100, float32).
EXPLICIT_TIDE = RESULTS / "cgrid1056_grid_h100_24h.json"


def explicit_step(case, h_max: float) -> float:
    """The step of gravity-wave Courant number 1: ``min(Δx, Δy) / √(g h_max)``."""
    g = case.grid()
    return min(g.dx, g.dy) / math.sqrt(case.g * h_max)


def gauge_cells(case, points) -> list[int]:
    g = case.grid()
    return [int(min(int(y / g.dy), g.ny - 1) * g.nx + min(int(x / g.dx), g.nx - 1))
            for x, y in points]  # fmt: skip


def timed_run(sim, times, cells, progress: bool = False) -> tuple[float, np.ndarray]:
    """Wall seconds of running through ``times`` and the level at ``cells`` at each;
    ``progress``: a line at each time (a run cut short shows how far it got)."""
    wall, series = 0.0, []
    for t in times:
        wall += sim.run(t).wall_s
        series.append(sim.fields()["eta"][cells])
        if progress:
            print(f"  t = {t / 3600:g} h: {wall:.1f} s, {sim.steps} steps", flush=True)
    return wall, np.array(series)


def rms(a, b) -> float:
    return float(np.sqrt(np.mean((np.asarray(a) - np.asarray(b)) ** 2)))


def setup_ms(name: str, shape, c: float, backend: str, coarse: int) -> float:
    """Milliseconds to build preconditioner ``name`` for a system of ``shape`` (median of 3)."""
    xp = array_module(backend)
    ny, nx = shape
    st = Stencil(xp.full((ny, nx + 1), c), xp.full((ny + 1, nx), c))
    took = []
    for _ in range(3):
        _sync(xp)
        t0 = time.perf_counter()
        precond.build(name, st, xp, coarse)
        _sync(xp)
        took.append(time.perf_counter() - t0)
    return 1e3 * sorted(took)[1]


def _sync(xp) -> None:
    if xp.__name__ == "cupy":
        xp.cuda.Device().synchronize()


def iterations(args, emit) -> dict:
    case = get_case("cgrid-drop").with_grid(args.n, args.n)
    dte = explicit_step(case, 1.1)
    spin = case.simulation(method="implicit", dt_mode="fixed", dt=dte, backend=args.backend,
                           theta=TABLE_THETA)  # fmt: skip
    spin.run(args.spinup)
    snap = spin.backend.snapshot()
    rows = []
    for k, ratio in enumerate(RATIOS):
        for name in args.preconditioners.split(","):
            sim = case.simulation(method="implicit", dt_mode="fixed", dt=ratio * dte,
                                  backend=args.backend, preconditioner=name,
                                  rrb_coarse=args.rrb_coarse, theta=TABLE_THETA)  # fmt: skip
            sim.backend.restore(snap)
            t0 = time.perf_counter()
            sim.backend.advance(math.inf, args.steps)
            wall = time.perf_counter() - t0
            c = sim.backend.counters()
            row = {"ratio": ratio, "preconditioner": name, "steps": args.steps,
                   "iterations_per_solve": c["cg_iterations"] / c["solves"],
                   "ms_per_step": 1e3 * wall / args.steps,
                   "advection_courant": c["advection_courant_max"],
                   "thesis_iterations": THESIS_ITERATIONS.get(name, (None,) * 4)[k]}  # fmt: skip
            rows.append(row)
            emit({"rows": rows})
            print(f"{ratio:>5} {name:>7} {row['iterations_per_solve']:>8.1f} "
                  f"{row['thesis_iterations']!s:>7} {row['ms_per_step']:>10.1f}",
                  flush=True)  # fmt: skip
    c100 = TABLE_THETA**2 * 100**2  # θ² (Courant 100)²: a face's coefficient at ratio 100
    setups = {name: setup_ms(name, (args.n, args.n), c100, args.backend, args.rrb_coarse)
              for name in args.preconditioners.split(",")}  # fmt: skip
    print("set-up ms:", {k: round(v, 2) for k, v in setups.items()})
    return {"case": "cgrid-drop", "n": args.n, "spinup_s": args.spinup, "dt_explicit": dte,
            "rrb_coarse": args.rrb_coarse,
            "rows": rows, "setup_ms": setups, "thesis_rrb_setup_ms_1536": 8.7}  # fmt: skip


def tide(args, emit) -> dict:
    case = get_case("cgrid-tide").with_grid(args.n, args.n)
    times = [3600.0 * h for h in range(1, int(args.hours) + 1)] or [3600.0 * args.hours]
    cells = gauge_cells(case, [(100.0, 300.0), (200.0, 300.0), (400.0, 300.0)])
    out = {"case": "cgrid-tide", "n": args.n, "hours": args.hours,
           "preconditioner": args.preconditioner, "rows": []}  # fmt: skip
    ref = None
    if args.explicit:
        sim = case.simulation(backend=args.backend, dtype=args.dtype, allow_mass_error=True)
        sim.run(times[0] / 100, max_steps=5)  # compile before the clock
        sim = case.simulation(backend=args.backend, dtype=args.dtype, allow_mass_error=True)
        wall, ref = timed_run(sim, times, cells)
        out["explicit"] = {"wall_s": wall, "steps": sim.steps}
    elif args.n == 1056 and EXPLICIT_TIDE.is_file():  # the recorded 24 h, pro rata
        import json

        recorded = json.loads(EXPLICIT_TIDE.read_text())["results"][0]
        share = args.hours * 3600.0 / recorded["t"]
        note = (
            f"the recorded {recorded['t'] / 3600:g} h run's wall time times {share:.4g} "
            "(its mean rate), not a run of these hours"
        )
        out["explicit"] = {"wall_s": recorded["wall_s"] * share, "recorded": str(EXPLICIT_TIDE),
                           "note": note}  # fmt: skip
    for cap in (float(c) for c in args.wave_courant.split(",")):
        sim = case.simulation(method="implicit", backend=args.backend, dtype=args.dtype,
                              allow_mass_error=args.dtype == "float32",
                              max_wave_courant=cap, preconditioner=args.preconditioner)  # fmt: skip
        wall, series = timed_run(sim, times, cells, progress=True)
        c = sim.backend.counters()
        row = {"wave_courant_cap": cap, "wall_s": wall, "steps": sim.steps,
               "iterations_per_solve": c["cg_iterations"] / c["solves"],
               "drying_repeats": c["drying_repeats"], "gravity_courant_max":
               c["gravity_courant_max"], "advection_courant_max": c["advection_courant_max"],
               "max_abs_v": float(np.abs(_host(sim.backend.state.v)).max())}  # fmt: skip
        if ref is not None:
            row["gauge_rms_vs_explicit_m"] = rms(series, ref)
        if "explicit" in out:
            row["speedup_vs_explicit"] = out["explicit"]["wall_s"] / wall
        out["rows"].append(row)
        emit(out)
        print({k: (round(v, 4) if isinstance(v, float) else v) for k, v in row.items()}, flush=True)
    return out


def _host(a):
    return a.get() if hasattr(a, "get") else a


def basin(args, emit) -> dict:
    case = get_case("tidal-basin").with_grid(args.n, max(1, args.n // 2))
    sample = 1800.0
    times = list(np.arange(sample, args.hours * 3600.0 + 1.0, sample))
    length = case.extent[0]
    cells = gauge_cells(case, [(f * length, case.extent[1] / 2) for f in (0.25, 0.5, 0.95)])
    warm = case.simulation(backend=args.backend, dtype=args.dtype)
    warm.run(60.0, max_steps=3)  # compile before the clock
    sim = case.simulation(backend=args.backend, dtype=args.dtype, allow_mass_error=True)
    ex_wall, ex = timed_run(sim, times, cells)
    out = {"case": "tidal-basin", "grid": list(case.grid_size), "hours": args.hours,
           "theta": args.theta, "preconditioner": args.preconditioner,
           "explicit": {"wall_s": ex_wall, "steps": sim.steps}, "rows": []}  # fmt: skip
    emit(out)
    print(f"explicit: {ex_wall:.3f} s, {sim.steps} steps", flush=True)
    dte = explicit_step(case, 100.0 + 1.0)
    first, done = None, set()
    for k in (float(r) for r in args.ratios.split(",")):
        per_sample = max(1, round(sample / (k * dte)))
        if per_sample in done:  # the half-hourly samples cap the step at 1800 s
            continue
        done.add(per_sample)
        dt = sample / per_sample
        imp = case.simulation(method="implicit", dt_mode="fixed", dt=dt, backend=args.backend,
                              dtype=args.dtype, allow_mass_error=args.dtype == "float32",
                              theta=args.theta, preconditioner=args.preconditioner)  # fmt: skip
        wall, series = timed_run(imp, times, cells)
        first = series if first is None else first
        c = imp.backend.counters()
        row = {"ratio": dt / dte, "dt": dt, "wall_s": wall, "steps": imp.steps,
               "speedup_vs_explicit": ex_wall / wall,
               "iterations_per_solve": c["cg_iterations"] / c["solves"],
               "gauge_rms_vs_explicit_m": rms(series, ex),
               "gauge_rms_vs_first_ratio_m": rms(series, first)}  # fmt: skip
        out["rows"].append(row)
        emit(out)
        print({k: (round(v, 5) if isinstance(v, float) else v) for k, v in row.items()}, flush=True)
    rows = out["rows"]
    floor = rows[0]["gauge_rms_vs_explicit_m"]
    faster = [r["ratio"] for r in rows if r["speedup_vs_explicit"] >= 1]
    good = [r for r in rows if r["gauge_rms_vs_first_ratio_m"] <= floor]
    out["break_even_ratio"] = min(faster) if faster else None
    out["best_as_accurate"] = max(good, key=lambda r: r["speedup_vs_explicit"]) if good else None
    best = out["best_as_accurate"]
    print("break-even ratio:", out["break_even_ratio"], "; best as accurate:",
          best and round(best["speedup_vs_explicit"], 3))  # fmt: skip
    return out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("study", choices=("iterations", "tide", "basin"))
    ap.add_argument("--backend", choices=("gpu", "cpu"), default="gpu")
    ap.add_argument("--dtype", choices=("float32", "float64"), default="float64")
    ap.add_argument("--n", type=int, default=128, help="cells along x")
    ap.add_argument("--steps", type=int, default=3, help="iterations: steps per ratio")
    ap.add_argument("--spinup", type=float, default=10.0, help="iterations: seconds first")
    ap.add_argument("--preconditioners", default="rrb,jacobi,amg")
    ap.add_argument("--hours", type=float, default=24.0, help="tide, basin: simulated hours")
    ap.add_argument("--wave-courant", default="10,30", help="tide: the step's caps")
    ap.add_argument("--explicit", action="store_true", help="tide: run the explicit one too")
    ap.add_argument("--ratios", default="1,2,5,10,20,50", help="basin: Δt / explicit step")
    ap.add_argument("--theta", type=float, default=0.5,
                    help="basin: θ (default ½: no wetting and drying there to damp)")  # fmt: skip
    ap.add_argument("--preconditioner", default="rrb", choices=precond.PRECONDITIONERS,
                    help="tide, basin: the implicit runs' preconditioner")  # fmt: skip
    ap.add_argument("--rrb-coarse", type=int, default=COARSE_CELLS,
                    help="iterations: RRB's completely factored level (cells)")  # fmt: skip
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    begin = time.perf_counter()
    doc = {"benchmark": f"implicit-{args.study}",
           "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
           "argv": sys.argv[1:] if argv is None else list(argv), "backend": args.backend,
           "dtype": args.dtype, "machine": machine_info(args.backend)}  # fmt: skip
    out = args.out or RESULTS / f"implicit_{args.study}_{args.backend}.json"

    def emit(part: dict) -> None:  # the JSON so far, after every row (a killed run keeps it)
        doc.update(part)
        doc["unfused"] = sorted(UNFUSED)  # CG updates CuPy could not fuse (none expected)
        doc["elapsed_s"] = time.perf_counter() - begin
        write(doc, out)

    emit({"iterations": iterations, "tide": tide, "basin": basin}[args.study](args, emit))
    print(f"wrote {out} ({doc['elapsed_s']:.0f} s in all)")


if __name__ == "__main__":
    main()
