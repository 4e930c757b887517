"""Issue 33, item 1: a layer's dam break onto a dry layer over a bump, every two-layer scheme.

    python scripts/thin_layer_bump.py [--nx 100] [--t-end 20] [--layer 2] [--eps-h M]
                                      [--backend cpu|gpu]
    python scripts/thin_layer_bump.py --front [--layer 2] [--t-front 0.5] [--threshold 0.05]

A 1 m channel (a strip of ``2 nx`` triangles of [-5, 5], walls) with a bump rising to
0.2 m below the surface at x = 0. The layer ``--layer`` (2: the lower, the issue's case;
1: its mirror, the upper) is 0.5 m deep for x < -2 and absent beyond; the other layer
fills the channel to the surface. Each of Roe, IR-Roe and PVM-IFCP at r = 0.5 and 0.98
runs to ``--t-end`` at the default settings (``--eps-h`` sets the thin-layer threshold);
one line per run: how it ended (the stop line of docs/SCHEMES.md §13.5 if it stopped),
the steps, each layer's relative mass drift, clipped cells, the smallest depth and the
cell-layers the positivity limiter scaled. Reproduces the runs that stop or run away
(thin tips above ``eps_h`` taking the wet formulas) and checks a thin-layer criterion.
With ``--front``, the front's convergence instead (CPU): for each scheme and ``r`` the layer
run to ``--t-front`` on nx 100, 200, 400, 800 and 1600, its column averages' last crossing
of ``--threshold`` (interpolated between column centres) and the centroid of its volume
beyond the dam, their errors against nx 1600 and the observed orders (docs/SCHEMES.md §13.1).

measured on the CPU at 4537286 (default ``eps_h`` = 1e-6 m). ``--nx 100``: lower layer,
PVM-IFCP r = 0.5 clipped at t = 14.8 s, r = 0.98 clipped at 4.92 s (h2's mass then off
by 100 %), Roe and IR-Roe 20 s clean; upper layer, PVM-IFCP r = 0.5 clipped at 3.57 s,
r = 0.98 mass drift 5.2e-11 at 13.0 s, the others clean. ``--nx 200``: lower layer,
PVM-IFCP r = 0.5 clipped at 10.4 s, r = 0.98 NaN at 2.77 s. ``--nx 50``: all six lower-layer
runs clean. ``--eps-h 1e-4``, ``--nx 100``: all twelve clean. Which runs stop moves with the
mesh and with the initial state's last bits (0.5 against ``H - 0.5`` for x < -2 turns
Roe r = 0.5 from 20 s clean into a NaN at 11.2 s): these flows sit at the edge of stability.

With the bed-step criterion of docs/SCHEMES.md §13.1 (a lower layer thinner than the bed
step and 5 % of the column takes the hydrostatic reconstruction), default settings: all 36
runs (``--nx`` 50, 100, 200, ``--layer`` 1 and 2) reach 20 s with each layer's mass to
<= 1.1e-15, no clip and no negative depth (9 PVM-IFCP runs stopped before). ``--nx 1600
--t-end 1.5``, PVM-IFCP r = 0.5, stopped at t = 1.446 s (a tip's cross-strip discharge ran
away: the reconstructed edges upwinded the tangential discharge, docs/SCHEMES.md §13.1);
with HLL's viscosity on it it reaches 20 s (masses to 4.9e-15, no clip), and at ``--nx 400``
all twelve runs reach 20 s (masses to <= 1.1e-15, no clip). ``--nx 1600``, PVM-IFCP
r = 0.98, lower layer: stopped at t = 3.43 s (a thin lower layer leaving a wall, pushed
away by the wet formulas there); with the outrun condition of docs/SCHEMES.md §13.1 it
reaches 20 s (40021 steps, masses to 1.6e-15, no clip), as do the other eleven runs at
``--nx 1600`` (masses to <= 2.5e-15; the upper layer's at r = 0.98 with 4.5e4 limited
cell-layers each), and at ``--nx 100`` and ``400`` all twelve runs (masses to <= 1.1e-15).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from fvswe.errors import BlowUpError
from fvswe.mesh.generate import strip
from fvswe.simulation import Simulation

SCHEMES = ("roe", "ir-roe", "pvm-ifcp")


def bump(x, y):
    """H (positive down): 1 m, with a bump rising to 0.2 m below the surface at x = 0."""
    return 1.0 - 0.8 * np.exp(-(x**2) / 0.5)


def simulation(
    layer: int, scheme: str, r: float, nx: int, eps_h: float | None, backend: str = "cpu"
) -> Simulation:
    """The dam break of ``layer`` (2 lower, 1 upper) onto the dry layer over :func:`bump`, on
    ``backend``."""

    def thick(x, y):
        return np.where(x < -2.0, 0.5, 0.0)

    def rest(x, y):
        return bump(x, y) - thick(x, y)

    initial = {"h2": thick, "h1": rest} if layer == 2 else {"h1": thick, "h2": rest}
    extra = {} if eps_h is None else {"eps_h": eps_h}
    return Simulation(strip(nx, 1, -5.0, 5.0), layers=2, scheme=scheme, r=r, H=bump,
                      initial=initial, backend=backend, **extra)  # fmt: skip


def run(layer: int, scheme: str, r: float, nx: int, t_end: float, eps_h: float | None,
        backend: str = "cpu") -> str:  # fmt: skip
    """One run's line: clean to ``t_end`` with its counts, or the line that stopped it."""
    start = time.perf_counter()
    sim = simulation(layer, scheme, r, nx, eps_h, backend)
    head = f"layer {layer} {scheme:8s} r = {r:<4}"
    try:
        s = sim.run(t_end)
    except BlowUpError as err:
        return f"{head} STOPPED: {err}"
    drift = ", ".join(f"{d:.1e}" for d in s.mass_rel_drift)
    lowest = sim.state()[:, [0, 3]].min()
    return (f"{head} t = {s.t:g} s, {s.steps} steps, drift [{drift}], clipped "
            f"{s.counters['clipped_cells']}, min depth {lowest:.2e}, limited "
            f"{s.counters['limited']} ({time.perf_counter() - start:.1f} s)")  # fmt: skip


def column_average(sim: Simulation, layer: int, nx: int) -> np.ndarray:
    """The layer's depth averaged over each of the strip's ``nx`` columns (two triangles)."""
    f = sim.fields()
    col = np.clip(((f["x"] + 5.0) * nx / 10.0).astype(int), 0, nx - 1)
    volume = np.bincount(col, f["area"] * f[f"h{layer}"], nx)
    return volume / np.bincount(col, f["area"], nx)


def front_measures(h: np.ndarray, threshold: float) -> tuple[float, float]:
    """``(front, centroid)`` of a layer's column averages ``h`` over [-5, 5]: the last
    crossing of ``threshold``, interpolated linearly between column centres (sub-cell), and
    the centroid of the layer's volume beyond the dam (x > -2)."""
    dx = 10.0 / h.size
    x = -5.0 + dx * (np.arange(h.size) + 0.5)
    k = np.nonzero(h >= threshold)[0].max()
    front = x[k] + dx * (h[k] - threshold) / (h[k] - h[k + 1])
    past = x > -2.0
    return float(front), float((h[past] * x[past]).sum() / h[past].sum())


def front_table(layer: int, t: float, threshold: float, meshes: tuple[int, ...]) -> None:
    """Print, per scheme and ``r``, the front and the centroid of :func:`front_measures` at
    ``t`` on each mesh: their errors against the finest mesh (the front's also in cell
    widths) and the observed orders."""
    *coarse, finest = meshes
    print(f"layer {layer}, t = {t:g} s, front at {threshold:g} m; errors against nx {finest}")
    print("scheme   r     nx    front (m)  error     /dx   order  centroid (m)  error     order")
    for scheme in SCHEMES:
        for r in (0.5, 0.98):
            values = []
            for nx in meshes:
                sim = simulation(layer, scheme, r, nx, None)
                sim.run(t)
                values.append(front_measures(column_average(sim, layer, nx), threshold))
            errors = np.abs(np.array(values[:-1]) - values[-1])
            for i, nx in enumerate(coarse):
                orders = np.log2(errors[i - 1] / errors[i]) if i else (np.nan, np.nan)
                print(f"{scheme:8s} {r:<5} {nx:<5} {values[i][0]:9.4f}  {errors[i][0]:.2e}  "
                      f"{errors[i][0] * nx / 10.0:4.2f}  {orders[0]:5.2f}  {values[i][1]:11.4f}  "
                      f"{errors[i][1]:.2e}  {orders[1]:5.2f}", flush=True)  # fmt: skip


def main() -> None:
    """Run the six schemes and ratios for the chosen layer and print one line each, or with
    ``--front`` the front's convergence table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nx", type=int, default=100, help="strip cells in x (2 nx triangles)")
    parser.add_argument("--t-end", type=float, default=20.0, help="simulated seconds")
    parser.add_argument("--layer", type=int, choices=(1, 2), default=2, help="the dam's layer")
    parser.add_argument("--eps-h", type=float, default=None, help="thin-layer threshold (m)")
    parser.add_argument("--backend", default="cpu", help="cpu or gpu")
    parser.add_argument("--front", action="store_true",
                        help="the front's convergence table (nx 100-800 against 1600) at "
                             "--t-front instead of the runs")  # fmt: skip
    parser.add_argument("--t-front", type=float, default=0.5, help="the table's time (s)")
    parser.add_argument("--threshold", type=float, default=0.05, help="the front's depth (m)")
    args = parser.parse_args()
    if args.front:
        front_table(args.layer, args.t_front, args.threshold, (100, 200, 400, 800, 1600))
        return
    for scheme in SCHEMES:
        for r in (0.5, 0.98):
            line = run(args.layer, scheme, r, args.nx, args.t_end, args.eps_h, args.backend)
            print(line, flush=True)


if __name__ == "__main__":
    main()
