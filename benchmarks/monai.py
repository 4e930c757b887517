"""Benchmark 2 of the Third International Workshop on Long-Wave Runup Models (2004): the Monai
valley at 1:400 (Okushiri 1993), a laboratory experiment of CRIEPI (Matsuyama & Tanaka 2001).

    python benchmarks/monai.py [--sizes 0.2,0.1,0.05] [--backend cpu|gpu] [--dtype float64]
                               [--boundary characteristic|level] [--manning 0.0025]
                               [-o docs/images/monai.png] [--json benchmarks/results/monai.json]

Set-up (docs/benchmarks.md): the tank's 5.488 m x 3.402 m near-shore part, bathymetry
``Benchmark_2_Bathymetry.asc`` sampled bilinearly at the cell barycentres, still water at
rest, one layer, ``hll-wd`` (HLL with hydrostatic reconstruction: wetting and drying), walls
on three sides and the incident wave ``Benchmark_2_input.txt`` at x = 0 for 22.5 s.
Meshes: ``scripts/make_monai_mesh.py --size S`` (S the offshore edge length, graded by the
depth and refined in the valley); ``meshes/monai-S.npz`` where committed, else made with
gmsh into ``meshes/cache/``.

The offshore boundary is ``Characteristic`` (docs/SCHEMES.md §7.6) with the far-field level
:func:`far_field_level` of the incident wave: the record is the *incident* wave (the
benchmark's description: prescribed for the first 22.5 s, a non-reflective condition after),
and a characteristic ghost imposes exactly the incoming Riemann invariant of that wave while
letting the waves reflected by the coast leave the tank; an imposed level (``--boundary
level``, ANUGA's choice) would instead hold the total surface to the record and send the
reflected waves back in.

Compared with the record of gauges 5, 7 and 9 (``output_ch5-7-9.txt``, cm): the maximum
and minimum over 0-22.5 s, the arrival of the first crest (the first time the surface
rises past half the record's maximum, on the steep front of the main wave) and the time of
the maximum, and the RMS difference over the wave (10-22.5 s); the record's own noise is
the standard deviation of its first 8 s, before the wave. The runup, as the experiment
measured it (``RUNUP_SITES``: the runup at three points, six runs each): the highest surface
of each site's cell while wetter than ``WET``, sampled every ``EVERY`` s, against the six
runs' mean and range; beside it the highest bed of a valley cell (box ``RUNUP_BOX``) that
was ever wetter than ``WET`` (the tip of the thinnest tongue, wherever it climbs).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np
from anuga_runs import anuga_run

# fvswe's modules are imported where they are used: anuga_worker runs without fvswe.

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "benchmarks" / "data" / "monai"
G, T_END, EVERY = 9.81, 22.5, 0.05
#: Gauges 5, 7 and 9 (m; the benchmark's Table 1).
GAUGES = {"5": (4.521, 1.196), "7": (4.521, 1.696), "9": (4.521, 2.196)}
#: The runup measured at three points in six runs of the experiment (m; x, y in m):
#: Matsuyama & Tanaka (2001), tabulated in the NTHMP benchmark problem 7's OBS_RUNUP.txt (as
#: SWALS's BP07 test quotes it, github.com/GeoscienceAustralia/ptha). "A" is the highest, in
#: the valley, where the bed stands 8.87 cm high: the runup's limit.
RUNUP_SITES = {
    "A": ((5.1575, 1.88), (0.0875, 0.09, 0.08, 0.09, 0.1, 0.09)),
    "B": ((5.03, 2.2062), (0.0525, 0.0575, 0.055, 0.065, 0.0675, 0.065)),
    "C": ((4.9975, 2.32), (0.0525, 0.055, 0.055, 0.0575, 0.0575, 0.0575)),
}
RUNUP_MEASURED = RUNUP_SITES["A"][1]
#: Where the runup is looked for (x0, x1, y0, y1, m): the valley around the measured point.
RUNUP_BOX = (5.0, 5.3, 1.7, 2.1)
#: Depth (m) above which a cell counts as wet for the runup: 2 mm, the wet-dry contour that
#: GeoClaw's and SWALS's NTHMP reports draw for this benchmark; WETS are reported beside it.
WET, WETS = 2e-3, (5e-4, 1e-3, 2e-3, 5e-3)
#: The wave window of the RMS difference and the pre-wave window of the record's noise (s).
WAVE, QUIET = (10.0, T_END), (0.0, 8.0)


def read_grid(path: Path = DATA / "Benchmark_2_Bathymetry.asc"):
    """The bathymetry grid (bed elevation, m, positive up) as a :class:`fvswe.raster.Raster`."""
    from fvswe.raster import Raster

    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        from make_monai_mesh import read_asc
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    x, y, z = read_asc(path)
    return Raster.from_arrays(x, y, z, str(path))


def read_table(path: Path, columns: int) -> np.ndarray:
    """A whitespace table with one header line, ``columns`` wide; a one-line error otherwise."""
    if not path.is_file() or np.loadtxt(path, skiprows=1, ndmin=2).shape[1] != columns:
        from fvswe.errors import ConfigError

        raise ConfigError(f"{path}: missing or not {columns} columns of numbers under a header "
                          "(benchmarks/data/monai/README.md says where it comes from)")  # fmt: skip
    return np.loadtxt(path, skiprows=1, ndmin=2)


def incident_wave() -> tuple[np.ndarray, np.ndarray]:
    """``(t, eta)`` of the incident wave at x = 0 (s, m)."""
    data = read_table(DATA / "Benchmark_2_input.txt", 2)
    return data[:, 0], data[:, 1]


def measured_gauges() -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """``(t, {gauge: eta})`` of gauges 5, 7 and 9 (s, m; the file is in cm)."""
    data = read_table(DATA / "output_ch5-7-9.txt", 4)
    return data[:, 0], {name: data[:, k + 1] / 100.0 for k, name in enumerate(GAUGES)}


def far_field_level(eta: np.ndarray, depth: float) -> np.ndarray:
    """The far-field level of a :class:`~fvswe.boundary.Characteristic` boundary that lets in
    the simple wave of surface ``eta`` over still water ``depth`` deep.

    A wave entering at rest-state speed ``c0 = sqrt(g depth)`` keeps the outgoing invariant
    ``u_n + 2c = 2 c0``, so its incoming one is ``u_n - 2c = 2 c0 - 4c``; the ghost takes
    ``-2 sqrt(g (depth + level))`` for it, which gives
    ``depth + level = (2 sqrt(depth + eta) - sqrt(depth))^2`` (about ``2 eta``: a far field at
    rest must stand twice as high as the wave it sends).
    """
    return (2.0 * np.sqrt(depth + eta) - np.sqrt(depth)) ** 2 - depth


def mesh_file(size: float) -> Path:
    """The mesh of offshore edge length ``size``: committed, cached, or made now with gmsh."""
    for folder in (ROOT / "meshes", ROOT / "meshes" / "cache"):
        path = folder / f"monai-{size:g}.npz"
        if path.is_file():
            return path
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import make_monai_mesh
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    path.parent.mkdir(exist_ok=True)
    if make_monai_mesh.main(["--size", f"{size:g}", "-o", str(path)]) != 0:
        from fvswe.errors import ConfigError

        raise ConfigError(f"no mesh monai-{size:g}.npz, and gmsh could not make one")
    return path


def build(mesh, *, boundary: str = "characteristic", manning: float = 0.0025,
          backend: str = "cpu", dtype: str = "float64", order: str = "none",
          threads: int | None = None, cfl: float = 0.9):  # fmt: skip
    """The tank at rest on ``mesh`` with the incident wave at its ``offshore`` tag."""
    from fvswe.boundary import Characteristic, Level
    from fvswe.errors import ConfigError
    from fvswe.raster import sample
    from fvswe.simulation import Simulation

    grid = read_grid()
    z = sample(grid, mesh.centroid[:, 0], mesh.centroid[:, 1])
    t, eta = incident_wave()
    depth = float(-grid.values[:, 0].mean())  # the flat offshore floor at x = 0
    if boundary == "characteristic":
        offshore = Characteristic((t, far_field_level(eta, depth)))
    elif boundary == "level":
        offshore = Level((t, eta))
    else:
        raise ConfigError(f"--boundary: unknown {boundary!r} (characteristic or level)")
    return Simulation(
        mesh, layers=1, scheme="hll-wd", g=G, H=-z, initial={"h": np.maximum(-z, 0.0)},
        boundary={"offshore": offshore, "wall": "wall"}, backend=backend, dtype=dtype,
        order=order, friction=("manning", manning) if manning else None, threads=threads,
        cfl=cfl,
    )  # fmt: skip


def run(sim, mesh, t_end: float = T_END, every: float = EVERY) -> dict:
    """Step to ``t_end`` sampling every ``every`` s: the surface at the gauges, each valley
    cell's highest depth (for the runup); wall time of the steps alone."""
    from fvswe.probes import locate

    cells = {name: locate(mesh, *xy) for name, xy in GAUGES.items()}
    sites = np.array([locate(mesh, *xy) for xy, _ in RUNUP_SITES.values()])
    crest = np.full(sites.size, -np.inf)
    c = mesh.centroid
    x0, x1, y0, y1 = RUNUP_BOX
    valley = np.flatnonzero((c[:, 0] >= x0) & (c[:, 0] <= x1) & (c[:, 1] >= y0) & (c[:, 1] <= y1))
    deepest = np.zeros(valley.size)
    times, series = [], {name: [] for name in GAUGES}
    wall, steps = 0.0, 0
    for k in range(int(round(t_end / every)) + 1):
        if k:
            summary = sim.run(min(k * every, t_end))
            wall, steps = wall + summary.wall_s, steps + summary.steps
        f = sim.fields()
        times.append(sim.t)
        for name, cell in cells.items():
            series[name].append(f["eta"][cell])
        deepest = np.maximum(deepest, f["h"][valley])
        crest = np.maximum(crest, np.where(f["h"][sites] > WET, f["eta"][sites], -np.inf))
    z = -sim.fields()["H"][valley]
    top = {w: int(np.argmax(np.where(deepest > w, z, -np.inf))) for w in WETS}
    return {
        "t": np.array(times), "gauges": {k: np.array(v) for k, v in series.items()},
        "runup": float(z[top[WET]]),
        "runup_at": [float(c[valley[top[WET]], 0]), float(c[valley[top[WET]], 1])],
        "runup_by_wet": {f"{w:g}": float(z[k]) for w, k in top.items()},
        "site_runup": site_runup(crest),
        "wall_s": wall, "steps": steps, "cells": mesh.n_cells,
        "mass_rel_drift": summary.mass_rel_drift[0], "loadavg": os.getloadavg()[0],
    }  # fmt: skip


def site_runup(crest: np.ndarray) -> dict:
    """Per runup site: the highest surface its cell reached while wetter than WET (None if
    it never did), against the six runs: error against their mean, and whether within their
    range (SWALS's criterion)."""
    out = {}
    for value, (name, (_, runs)) in zip(crest, RUNUP_SITES.items(), strict=True):
        mean, wet = float(np.mean(runs)), bool(np.isfinite(value))
        out[name] = {"max_surface": float(value) if wet else None, "measured_mean": mean,
                     "rel_error": (float(value) - mean) / mean if wet else None,
                     "in_range": wet and min(runs) <= value <= max(runs)}  # fmt: skip
    return out


def features(t: np.ndarray, eta: np.ndarray, crest_level: float) -> dict:
    """Maximum, minimum, time of the maximum, and the arrival of the first crest: the first
    time ``eta`` rises past ``crest_level`` (linear between samples)."""
    window = t <= T_END + 1e-9
    t, eta = t[window], eta[window]
    above = np.flatnonzero(eta >= crest_level)
    k = int(above[0]) if above.size else -1
    arrival = np.nan if k <= 0 else t[k - 1] + (crest_level - eta[k - 1]) / (
        eta[k] - eta[k - 1]) * (t[k] - t[k - 1])  # fmt: skip
    return {"max": float(eta.max()), "min": float(eta.min()), "t_max": float(t[np.argmax(eta)]),
            "arrival": float(arrival)}  # fmt: skip


def compare(result: dict, t_obs: np.ndarray, obs: dict[str, np.ndarray]) -> dict:
    """Per gauge: measured and modelled features, their errors, the RMS difference over the
    wave and the record's noise (m, s)."""
    out = {}
    for name in GAUGES:
        level = 0.5 * float(obs[name][t_obs <= T_END].max())
        m = features(t_obs, obs[name], level)
        s = features(result["t"], result["gauges"][name], level)
        wave = (t_obs >= WAVE[0]) & (t_obs <= WAVE[1])
        model = np.interp(t_obs[wave], result["t"], result["gauges"][name])
        quiet = (t_obs >= QUIET[0]) & (t_obs <= QUIET[1])
        out[name] = {
            "measured": m, "model": s,
            "max_rel_error": (s["max"] - m["max"]) / abs(m["max"]),
            "min_rel_error": (s["min"] - m["min"]) / abs(m["min"]),
            "arrival_error_s": s["arrival"] - m["arrival"],
            "rms_m": float(np.sqrt(np.mean((model - obs[name][wave]) ** 2))),
            "record_noise_m": float(np.std(obs[name][quiet])),
        }  # fmt: skip
    return out


def figure(results: list[dict], t_obs, obs, path: Path) -> None:
    """Gauges 5, 7, 9: the record and every mesh's series."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(3, 1, figsize=(8, 8), sharex=True)
    for ax, name in zip(axes, GAUGES, strict=True):
        ax.plot(t_obs, 100 * obs[name], "k-", lw=1.2, label="measured")
        for r in results:
            ax.plot(r["t"], 100 * r["gauges"][name], lw=1, label=f"{r['code']}, {r['cells']} cells")
        ax.set_ylabel(f"gauge {name}: eta (cm)")
        ax.grid(alpha=0.3)
    axes[0].legend(loc="upper left", fontsize=8)
    axes[-1].set_xlim(0, T_END)
    axes[-1].set_xlabel("t (s)")
    fig.suptitle("Monai valley (Benchmark 2): gauges 5, 7, 9")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


# -- ANUGA (runs in its own interpreter, without fvswe) -------------------------------------------
#: ANUGA's validation mesh (create_okushiri.py of anuga_core, base resolution 2): the
#: rectangle it meshes (x to 5.448 m), the largest triangle area (m^2) everywhere and in its
#: three regions: the near-shore quadrilateral, the polygon around the island and the valley.
ANUGA_BOX, ANUGA_AREA = (5.448, 3.402), 0.02
ANUGA_REGIONS = (
    (((2.816, 2.002), (5.348, 3.202), (5.348, 0.2), (2.816, 0.5)), 0.001),
    (((4.832, 2.902), (4.132, 2.268), (3.124, 1.968), (3.124, 1.434), (4.032, 0.834),
      (4.832, 0.8), (4.79, 1.6), (4.79, 2.3)), 0.0006),
    (((4.8, 1.6), (5.3, 1.6), (5.3, 2.3), (4.8, 2.3)), 0.00006),
)  # fmt: skip


def anuga_worker(alg: str, output: str) -> None:
    """ANUGA's validation set-up of this benchmark (create_okushiri.py and run_okushiri.py in
    anuga_core's validation_tests/experimental_data/okushiri): its mesh (ANUGA_REGIONS), the
    bathymetry grid, Manning 0.0025, the input wave as an imposed stage with transmissive
    normal momentum, walls elsewhere, flow algorithm ``alg``. Writes the gauges' cells and the
    valley cells' deepest water, every EVERY s, to ``output`` (npz)."""
    import anuga

    anuga.set_omp_num_threads(1, verbose=False)
    lx, ly = ANUGA_BOX
    domain = anuga.create_domain_from_regions(
        [[lx, 0.0], [lx, ly], [0.0, ly], [0.0, 0.0]], {"wall": [0, 1, 3], "wave": [2]},
        maximum_triangle_area=ANUGA_AREA,
        interior_regions=[[[list(p) for p in poly], area] for poly, area in ANUGA_REGIONS],
    )  # fmt: skip
    domain.set_flow_algorithm(alg)
    domain.set_store(False)
    domain.set_quantity("friction", 0.0025)
    domain.set_quantity("stage", 0.0)
    domain.set_quantity("elevation", filename=str(DATA / "Benchmark_2_Bathymetry.asc"))
    t_in, eta_in = incident_wave()
    wave = anuga.Transmissive_n_momentum_zero_t_momentum_set_stage_boundary(
        domain, lambda t: float(np.interp(t, t_in, eta_in)))  # fmt: skip
    domain.set_boundary({"wave": wave, "wall": anuga.Reflective_boundary(domain)})
    cells = [domain.get_triangle_containing_point(list(xy)) for xy in GAUGES.values()]
    sites = [domain.get_triangle_containing_point(list(xy)) for xy, _ in RUNUP_SITES.values()]
    c = domain.centroid_coordinates
    x0, x1, y0, y1 = RUNUP_BOX
    valley = np.flatnonzero((c[:, 0] >= x0) & (c[:, 0] <= x1) & (c[:, 1] >= y0) & (c[:, 1] <= y1))
    q = domain.quantities
    z = np.array(q["elevation"].centroid_values)
    deepest, times, series, steps = np.zeros(valley.size), [], [], 0
    crest = np.full(len(sites), -np.inf)
    start = time.perf_counter()
    for t in domain.evolve(yieldstep=EVERY, finaltime=T_END):
        steps += domain.number_of_steps  # counted per yield step
        stage = np.array(q["stage"].centroid_values)
        times.append(t)
        series.append(stage[cells])
        deepest = np.maximum(deepest, stage[valley] - z[valley])
        crest = np.maximum(crest, np.where(stage[sites] - z[sites] > WET, stage[sites], -np.inf))
    np.savez(output, t=times, gauges=np.array(series), z=z[valley], deepest=deepest, crest=crest,
             valley_xy=c[valley], cells=len(z), steps=steps, version=anuga.__version__,
             wall_s=time.perf_counter() - start, loadavg=os.getloadavg()[0])  # fmt: skip


def run_anuga(python: str, alg: str) -> dict:
    """:func:`anuga_worker` in ``python``'s interpreter, read back as :func:`run`'s dict."""
    d = anuga_run(python, "monai", alg)
    top = {w: int(np.argmax(np.where(d["deepest"] > w, d["z"], -np.inf))) for w in WETS}
    return {
        "t": d["t"], "gauges": {name: d["gauges"][:, k] for k, name in enumerate(GAUGES)},
        "runup": float(d["z"][top[WET]]), "runup_at": d["valley_xy"][top[WET]].tolist(),
        "runup_by_wet": {f"{w:g}": float(d["z"][k]) for w, k in top.items()},
        "site_runup": site_runup(d["crest"]),
        "wall_s": float(d["wall_s"]), "steps": int(d["steps"]), "cells": int(d["cells"]),
        "loadavg": float(d["loadavg"]), "backend": "cpu", "threads": 1,
        "code": f"ANUGA {d['version']} {alg}",
    }  # fmt: skip


def one(size: float, args) -> dict:
    """Mesh, build, run and compare at offshore edge length ``size``."""
    from fvswe.mesh import read_mesh

    mesh = read_mesh(mesh_file(size))
    sim = build(mesh, boundary=args.boundary, manning=args.manning, backend=args.backend,
                dtype=args.dtype, order=args.order, threads=args.threads, cfl=args.cfl)  # fmt: skip
    if sim.backend.name == "cpu":  # compile outside the timing
        build(mesh, backend="cpu", dtype=args.dtype, threads=args.threads).run(EVERY, max_steps=2)
    result = run(sim, mesh)
    result["size"] = size
    result["backend"], result["threads"] = sim.backend.name, sim.backend.threads
    result["code"] = f"fvswe hll-wd {args.dtype}"
    print(
        f"size {size:g}: {mesh.n_cells} cells, {result['steps']} steps, "
        f"{result['wall_s']:.1f} s, highest wetted bed {result['runup']:.4f} m at "
        f"{result['runup_at']}, at the sites "
        f"{ {k: v['max_surface'] for k, v in result['site_runup'].items()} }"
    )
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="0.2,0.1", help="offshore edge lengths (m)")
    parser.add_argument("--boundary", default="characteristic", choices=("characteristic", "level"))
    parser.add_argument("--manning", type=float, default=0.0025)
    parser.add_argument("--backend", default="cpu")
    parser.add_argument("--dtype", default="float64")
    parser.add_argument("--order", default="none")
    parser.add_argument("--cfl", type=float, default=0.9, help="CFL number (0.45: see docs)")
    parser.add_argument("--threads", type=int, help="CPU threads (default: the idle cores)")
    parser.add_argument("--anuga-python", help="an interpreter that imports anuga")
    parser.add_argument("--anuga", default="DE0", help="ANUGA flow algorithms")
    parser.add_argument("-o", "--figure", type=Path, default=None)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    t_obs, obs = measured_gauges()
    results = [one(float(s), args) for s in args.sizes.split(",") if s]
    if args.anuga_python:
        results += [run_anuga(args.anuga_python, alg) for alg in args.anuga.split(",")]
    runs = []
    for r in results:
        runs.append({k: v for k, v in r.items() if k not in ("t", "gauges")}
                    | {"gauges": compare(r, t_obs, obs)})  # fmt: skip
    report = {
        "benchmark": "monai (LWRM 2004 benchmark 2)", "boundary": args.boundary,
        "manning": args.manning, "dtype": args.dtype, "cfl": args.cfl,
        "runup_measured": RUNUP_MEASURED,
        "machine": platform.node(), "date": datetime.datetime.now().isoformat(timespec="seconds"),
        "runs": runs,
    }  # fmt: skip
    print(json.dumps(runs, indent=1, default=float))
    if args.json:
        args.json.write_text(json.dumps(report, indent=1, default=float) + "\n")
    if args.figure:
        figure(results, t_obs, obs, args.figure)
    return 0


if __name__ == "__main__":
    from fvswe.errors import FvsweError

    t0 = time.perf_counter()
    try:
        code = main()
    except FvsweError as err:  # one line (a lost run says where and when), not a traceback
        sys.exit(f"monai: {err}")
    print(f"total {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    sys.exit(code)
