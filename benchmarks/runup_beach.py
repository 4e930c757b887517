"""Benchmark 1 of the Third International Workshop on Long-Wave Runup Models (2004): a
leading-depression wave running up a 1:10 beach, against the analytic solution of Carrier,
Wu & Yeh (2003), side by side with ANUGA's DE algorithms on ANUGA's own set-up.

    python benchmarks/runup_beach.py [--dx 25,4,1] [--backend cpu|gpu] [--reference analytic]
                                     [--anuga-python /path/to/venv/bin/python --anuga DE0,DE1]
                                     [-o docs/images/runup_beach.png] [--json ...]

Set-up (docs/benchmarks.md; data in benchmarks/data/runup_beach/): x is the distance
offshore from the still shoreline, the bed ``z = -x / 10`` on ``[-400, 59600]`` m (ANUGA's
validation script's domain), the initial surface Carrier, Wu & Yeh's two Gaussians
(:func:`cwy_surface`; ``initial_condition.txt`` samples it; the land dry), at rest, walls
at both ends (no reflection reaches the shore before 600 s). fvswe: one row of quads
(exactly 1-D), ``hll-wd``, float64; ``--dx`` is the cell length from the land to 500 m
offshore, growing beyond as ``sqrt(depth)`` (a uniform Courant number) up to ``DX_MAX``,
except ``--dx 25`` and larger, uniform (ANUGA's 25 m).
ANUGA (``--anuga-python``: an interpreter with ``pip install anuga``, ANUGA is no fvswe
dependency): ``anuga.rectangular_cross`` 25 m squares (4 triangles each) of 60 km x 25 m,
reflective walls, no friction, flow algorithms ``--anuga`` -- the set-up of
``validation_tests/analytical_exact/landslide_tsunami/runup.py`` in anuga_core, run here by
:func:`anuga_worker` (that script itself calls ``scipy.genfromtxt``, gone from SciPy).

Both codes are measured the same way (:func:`errors`): the surface at the analytic
solution's points at t = 160, 175 and 220 s (RMS and maximum difference, linear
interpolation between cell centres), and the shoreline from 100 to 280 s: the landward end
of the water connected to the sea (the centre of the last cell deeper than ``WET``, 1 cm
as in ANUGA's plot_results.py), every second, against ``Shoreline.csv`` (RMS and maximum
difference, and the highest runup ``-min(x_s) / 10``). Without the benchmark's files (or with
``--reference analytic``) the reference is fvswe's own evaluation of the analytic solution
(:class:`fvswe.exact.BeachRunup`: the profiles at 101 points from the shoreline to 800 m, the
shoreline every 0.25 s), which matches the files (tests/test_runup_beach.py).
"""

from __future__ import annotations

import argparse
import datetime
import functools
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np
from anuga_runs import anuga_run

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "benchmarks" / "data" / "runup_beach"
G, SLOPE, X_LAND, X_SEA = 9.81, 0.1, -400.0, 59600.0
TIMES = (160.0, 175.0, 220.0)
#: The shoreline window (s) and sampling interval.
SHORE_T, SHORE_EVERY = (100.0, 280.0), 1.0
#: Depth (m) that counts as wet for the shoreline.
WET = 0.01
#: Graded strips: the cell length grows offshore of X_FINE up to DX_MAX (m); the strip's width.
X_FINE, DX_MAX, WIDTH = 500.0, 100.0, 100.0


# -- the data and the analytic solution ------------------------------------------------------
#: Carrier, Wu & Yeh's initial wave (2003, the benchmark's): in units of ``L`` and
#: ``SLOPE L``, ``eta0 = a1 exp(-k1 (xi - x1)^2) - a2 exp(-k2 (xi - x2)^2)`` at
#: ``xi = x + eta0 / SLOPE`` (initial_condition.txt holds it to 1e-8 m).
CWY = {"L": 5000.0, "a1": 0.006, "a2": 0.018, "k1": 4.0 / 9.0, "k2": 4.0, "x1": 4.1209,
       "x2": 1.6384}  # fmt: skip
#: Where the analytic profiles are compared: 101 points from the shoreline to PROFILE_END m
#: offshore (the benchmark files' points: from the shoreline to about 800 m).
PROFILE_END, PROFILE_POINTS = 800.0, 101


def _data(name: str) -> Path:
    path = DATA / name
    if not path.is_file():
        from fvswe.errors import ConfigError

        raise ConfigError(
            f"{path}: missing (benchmarks/data/runup_beach/README.md says where from)"
        )
    return path


def has_data() -> bool:
    """Whether all the benchmark's files are in DATA."""
    names = ("initial_condition.txt", "Shoreline.csv", *(f"t{t:g}.csv" for t in TIMES))
    return all((DATA / n).is_file() for n in names)


def initial_surface() -> tuple[np.ndarray, np.ndarray]:
    """``(x, eta)`` of the initial wave from the data file (m; its 13 lines of text first)."""
    data = np.loadtxt(_data("initial_condition.txt"), skiprows=13)
    return data[:, 0], data[:, 1]


def cwy_surface(xi: np.ndarray) -> np.ndarray:
    """The initial surface (m) as Carrier, Wu & Yeh give it, at ``xi = x + eta / SLOPE`` (m)."""
    X = np.asarray(xi, dtype=float) / CWY["L"]
    wave = CWY["a1"] * np.exp(-CWY["k1"] * (X - CWY["x1"]) ** 2) - CWY["a2"] * np.exp(
        -CWY["k2"] * (X - CWY["x2"]) ** 2
    )
    return SLOPE * CWY["L"] * wave


def eta0(x: np.ndarray) -> np.ndarray:
    """The initial surface at ``x``: ``eta = cwy_surface(x + eta / SLOPE)`` by fixed-point
    iteration (it contracts: the wave's slope is a few hundredths of the beach's), never
    below the bed (dry land)."""
    x = np.asarray(x, dtype=float)
    eta = np.zeros_like(x)
    for _ in range(40):
        eta = cwy_surface(x + eta / SLOPE)
    return np.maximum(eta, -SLOPE * x)


@functools.cache
def analytic():
    """The exact solution of the benchmark (:class:`fvswe.exact.BeachRunup`)."""
    from fvswe.exact import BeachRunup

    return BeachRunup(cwy_surface, SLOPE, 10.0 * CWY["L"], G)


def profile(t: float, reference: str = "data") -> np.ndarray:
    """The analytic ``(x, eta, u)`` rows at ``t`` (160, 175 or 220 s): the benchmark's file,
    or (``reference="analytic"``) :func:`analytic` at PROFILE_POINTS points."""
    if reference == "data":
        return np.loadtxt(_data(f"t{t:g}.csv"), delimiter=",", skiprows=1)
    x = np.linspace(float(analytic().shoreline([t])[0][0]), PROFILE_END, PROFILE_POINTS)
    return np.column_stack([x, *analytic().profile(x, t)])


def shoreline(reference: str = "data") -> np.ndarray:
    """The analytic shoreline ``(t, x_s, u_s)`` rows: the benchmark's file (0.7 to 357 s), or
    (``reference="analytic"``) :func:`analytic` every 0.25 s from 0 to 357 s."""
    if reference == "data":
        return np.loadtxt(_data("Shoreline.csv"), delimiter=",", skiprows=1)
    return _analytic_shoreline().copy()


@functools.cache
def _analytic_shoreline() -> np.ndarray:
    t = np.arange(0.0, 357.0 + 1e-9, 0.25)
    return np.column_stack([t, *analytic().shoreline(t)])


# -- fvswe -------------------------------------------------------------------------------------
def edges(dx: float) -> np.ndarray:
    """Cell edges on ``[X_LAND, X_SEA]``: uniform ``dx`` (``dx >= 25``), else ``dx`` to X_FINE
    and ``dx sqrt(x / X_FINE)`` beyond, at most DX_MAX."""
    if dx >= 25.0:
        return np.linspace(X_LAND, X_SEA, int(round((X_SEA - X_LAND) / dx)) + 1)
    out = [X_LAND]
    while out[-1] < X_SEA:
        x = out[-1]
        out.append(x + min(dx * np.sqrt(max(x, X_FINE) / X_FINE), DX_MAX))
    out[-2:] = [X_SEA]  # the last cell takes in what is left (a sliver would set the time step)
    return np.array(out)


def strip(dx: float):
    """One row of quads over :func:`edges` (tags west, east; the long sides walls)."""
    from fvswe.mesh import Mesh

    x = edges(dx)
    n = x.size
    nodes = np.concatenate([np.c_[x, np.zeros(n)], np.c_[x, np.full(n, WIDTH)]])
    k = np.arange(n - 1)
    cells = np.c_[k, k + 1, n + k + 1, n + k]
    tags = {"west": np.array([[0, n]]), "east": np.array([[n - 1, 2 * n - 1]])}
    return Mesh.from_arrays(nodes, cells, boundary_tags=tags, source=f"<runup strip dx {dx:g}>")


def build(dx: float, backend: str = "cpu", dtype: str = "float64", threads: int | None = None):
    """The beach at rest under the initial wave, on :func:`strip`."""
    from fvswe.simulation import Simulation

    mesh = strip(dx)
    x = mesh.centroid[:, 0]
    H = SLOPE * x  # depth below the still level, positive down; negative on land
    return Simulation(mesh, layers=1, scheme="hll-wd", g=G, H=H, initial={"h": eta0(x) + H},
                      boundary=None, backend=backend, dtype=dtype, threads=threads)  # fmt: skip


def shore(x: np.ndarray, depth: np.ndarray) -> float:
    """The centre of the last cell deeper than WET, walking landward from the sea (``x``
    increasing offshore)."""
    order = np.argsort(x)
    dry = np.flatnonzero(depth[order] <= WET)
    first_wet = 0 if dry.size == 0 else int(dry[-1]) + 1
    return float(x[order][min(first_wet, x.size - 1)])


def run_fvswe(dx: float, backend: str, dtype: str, threads: int | None = None) -> dict:
    """Samples of the fvswe run: the shoreline every SHORE_EVERY s and the three profiles."""
    sim = build(dx, backend, dtype, threads)
    if sim.backend.name == "cpu":  # compile outside the timing
        build(dx, "cpu", dtype, threads).run(1.0, max_steps=2)
    stops = sorted(set(np.arange(SHORE_T[0], SHORE_T[1] + 1e-9, SHORE_EVERY)) | set(TIMES))
    out = {"t": [], "shore": [], "profiles": {}, "wall_s": 0.0, "steps": 0}
    for t in stops:
        summary = sim.run(t)
        out["wall_s"] += summary.wall_s
        out["steps"] += summary.steps
        f = sim.fields()
        out["t"].append(t)
        out["shore"].append(shore(f["x"], f["h"]))
        if t in TIMES:
            u = np.where(f["h"] > WET, f["qx"] / np.maximum(f["h"], WET), 0.0)
            order = np.argsort(f["x"])
            out["profiles"][t] = np.c_[f["x"], f["eta"], u][order]
    out |= {"cells": sim.mesh.n_cells, "backend": sim.backend.name, "dx": dx,
            "threads": sim.backend.threads, "loadavg": os.getloadavg()[0],
            "code": f"fvswe hll-wd {dtype}"}  # fmt: skip
    return out


# -- ANUGA (runs in its own interpreter) ---------------------------------------------------------
def anuga_worker(alg: str, output: str) -> None:
    """ANUGA's validation set-up (runup.py of anuga_core) with flow algorithm ``alg``;
    writes the centroid samples to ``output`` (npz). Needs only anuga and numpy."""
    import anuga

    anuga.set_omp_num_threads(1, verbose=False)
    dx = 25.0
    points, vertices, boundary = anuga.rectangular_cross(
        int(60000 / dx), 1, len1=60000.0, len2=dx, origin=(X_LAND + 200.0, 0.0)
    )
    domain = anuga.Domain(points, vertices, boundary)
    domain.set_flow_algorithm(alg)
    domain.set_store(False)
    shift = 200.0  # ANUGA's x is ours plus 200 m
    domain.set_quantity("elevation", lambda x, y: -SLOPE * (x - shift))
    domain.set_quantity("friction", 0.0)
    domain.set_quantity("stage", lambda x, y: eta0(x - shift))
    domain.set_boundary(dict.fromkeys(("left", "right", "top", "bottom"),
                                      anuga.Reflective_boundary(domain)))  # fmt: skip
    x = domain.centroid_coordinates[:, 0] - shift
    stops = sorted(set(np.arange(SHORE_T[0], SHORE_T[1] + 1e-9, SHORE_EVERY)) | set(TIMES))
    rows = {"t": [], "stage": [], "xmom": []}
    start = time.perf_counter()
    q = domain.quantities
    steps = 0
    for t in domain.evolve(yieldstep=SHORE_EVERY, finaltime=SHORE_T[1]):
        steps += domain.number_of_steps  # counted per yield step
        if any(abs(t - s) < 1e-6 for s in stops):
            rows["t"].append(t)
            rows["stage"].append(np.array(q["stage"].centroid_values))
            rows["xmom"].append(np.array(q["xmomentum"].centroid_values))
    wall = time.perf_counter() - start
    np.savez(output, x=x, elevation=np.array(q["elevation"].centroid_values), wall_s=wall,
             steps=steps, version=anuga.__version__, loadavg=os.getloadavg()[0],
             **{k: np.array(v) for k, v in rows.items()})  # fmt: skip


def run_anuga(python: str, alg: str) -> dict:
    """:func:`anuga_worker` in ``python``'s interpreter, read back as :func:`run_fvswe`'s dict."""
    d = anuga_run(python, "runup_beach", alg)
    x, z = d["x"], d["elevation"]
    res = {"t": [], "shore": [], "profiles": {}, "wall_s": float(d["wall_s"]),
           "steps": int(d["steps"]), "cells": int(x.size), "backend": "cpu", "dx": 25.0,
           "threads": 1, "loadavg": float(d["loadavg"]),
           "code": f"ANUGA {d['version']} {alg}"}  # fmt: skip
    order = np.argsort(x)
    for t, stage, xmom in zip(d["t"], d["stage"], d["xmom"], strict=True):
        depth = stage - z
        res["t"].append(float(t))
        res["shore"].append(shore(x, depth))
        if any(abs(t - s) < 1e-6 for s in TIMES):
            u = np.where(depth > WET, xmom / np.maximum(depth, WET), 0.0)
            res["profiles"][float(round(t))] = np.c_[x, stage, u][order]
    return res


# -- the comparison ----------------------------------------------------------------------------
def errors(res: dict, reference: str = "data") -> dict:
    """Surface and velocity errors at the analytic points of each profile, and the shoreline's
    RMS and largest error over SHORE_T and the highest runup (m), against the benchmark's
    files (``reference="data"``) or fvswe's own analytic solution (``"analytic"``)."""
    out = {}
    for t in TIMES:
        exact = profile(t, reference)
        model = res["profiles"][t]
        eta = np.interp(exact[:, 0], model[:, 0], model[:, 1])
        u = np.interp(exact[:, 0], model[:, 0], model[:, 2])
        d, du = eta - exact[:, 1], u - exact[:, 2]
        out[f"t{t:g}"] = {"eta_rms": float(np.sqrt(np.mean(d**2))),
                          "eta_max": float(np.abs(d).max()),
                          "u_rms": float(np.sqrt(np.mean(du**2)))}  # fmt: skip
    ts, xs = np.array(res["t"]), np.array(res["shore"])
    s = shoreline(reference)
    window = (ts >= SHORE_T[0]) & (ts <= SHORE_T[1])
    d = xs[window] - np.interp(ts[window], s[:, 0], s[:, 1])
    out["shore"] = {"rms": float(np.sqrt(np.mean(d**2))), "max": float(np.abs(d).max()),
                    "runup": float(-SLOPE * xs[window].min()),
                    "runup_exact": float(-SLOPE * s[:, 1].min())}  # fmt: skip
    return out


def figure(results: list[dict], path: Path, reference: str = "data") -> None:
    """The three surface profiles near the shore and the shoreline, every run and the analytic."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 2, figsize=(10, 7))
    for ax, t in zip(axes.flat, TIMES, strict=False):
        exact = profile(t, reference)
        ax.plot(exact[:, 0], exact[:, 1], "k-", lw=2, label="analytic")
        for r in results:
            p = r["profiles"][t]
            near = (p[:, 0] > -300) & (p[:, 0] < 900)
            ax.plot(p[near, 0], p[near, 1], lw=1, label=r["label"])
        x = np.linspace(-300, 900, 3)
        ax.plot(x, -SLOPE * x, color="0.6", lw=0.8)
        ax.set(title=f"t = {t:g} s", xlabel="x (m)", ylabel="eta (m)", ylim=(-25, 20))
    ax = axes.flat[3]
    s = shoreline(reference)
    ax.plot(s[:, 0], s[:, 1], "k-", lw=2, label="analytic")
    for r in results:
        ax.plot(r["t"], r["shore"], lw=1, label=r["label"])
    ax.set(title="shoreline", xlabel="t (s)", ylabel="x_s (m)", xlim=SHORE_T)
    axes.flat[0].legend(fontsize=7)
    fig.suptitle("Runup on a 1:10 beach (Benchmark 1): Carrier, Wu & Yeh (2003)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dx", default="25,4,1", help="fvswe cell lengths at the shore (m)")
    parser.add_argument("--backend", default="cpu")
    parser.add_argument("--dtype", default="float64")
    parser.add_argument("--threads", type=int, help="CPU threads (default: the idle cores)")
    parser.add_argument("--anuga-python", help="an interpreter that imports anuga")
    parser.add_argument("--anuga", default="DE0,DE1", help="ANUGA flow algorithms")
    parser.add_argument("--reference", choices=("data", "analytic"),
                        help="the benchmark's files (default, where present) or fvswe's own "
                        "analytic solution (fvswe.exact.BeachRunup)")  # fmt: skip
    parser.add_argument("-o", "--figure", type=Path)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    reference = args.reference or ("data" if has_data() else "analytic")
    results = []
    for dx in (float(v) for v in args.dx.split(",")):
        results.append(run_fvswe(dx, args.backend, args.dtype, args.threads))
    if args.anuga_python:
        results += [run_anuga(args.anuga_python, alg) for alg in args.anuga.split(",")]
    rows = []
    for r in results:
        r["label"] = f"{r['code']}, {r['cells']} cells (dx {r['dx']:g} m at the shore)"
        rows.append({k: r.get(k) for k in ("code", "cells", "dx", "backend", "threads", "steps",
                                            "wall_s", "loadavg")}
                    | {"errors": errors(r, reference)})  # fmt: skip
        print(json.dumps(rows[-1], default=float))
    if args.json:
        report = {"benchmark": "runup on a 1:10 beach (LWRM 2004 benchmark 1)", "wet": WET,
                  "reference": reference,
                  "machine": platform.node(), "cpu": platform.processor(), "runs": rows,
                  "date": datetime.datetime.now().isoformat(timespec="seconds")}  # fmt: skip
        args.json.write_text(json.dumps(report, indent=1, default=float) + "\n")
    if args.figure:
        figure(results, args.figure, reference)
    return 0


if __name__ == "__main__":
    sys.exit(main())
