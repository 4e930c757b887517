"""The C-grid thesis cases (docs/CASES.md §B) on the Cartesian adapter: run one, draw its figure.

    python scripts/run_cgrid.py drop [--nx 50] [--backend cpu] [-o cgrid-drop.png]
    python scripts/run_cgrid.py island --nx 50
    python scripts/run_cgrid.py tide --nx 48
    python scripts/run_cgrid.py tide-islands --nx 48

drop, island: the free surface eta at four times over 100 s, a section along
the middle row at those times, and a time series at one point: eta at the
centre of the drop; for the island, the water depth on its summit, which
stands 3 cm above still water and must stay dry (grey: cells with h < 1 mm).

tide, tide-islands: maps of the water depth h over the second tidal cycle
(rising, high, falling, low; grey: dry), the water level eta(x) along the
middle row every 1.5 h of that cycle over the bed, and an x-t diagram of the
depth along that row over the 24 h with the wet/dry front (the first dry cell
from the west) and where the imposed level meets the bed (still-water estimate).
The thin film that drains off the flat marsh after high tide keeps the slope
wet for hours after the still-water estimate has retreated.

Times are the published ones on any grid (see grid_figure.py); run times are
printed.
"""

from __future__ import annotations

import sys

import numpy as np
from grid_figure import DRY, guarded, parser, run, save

CASES = {
    "drop": "cgrid-drop",
    "island": "cgrid-island",
    "tide": "cgrid-tide",
    "tide-islands": "cgrid-tide-islands",
}


def _keep(sim) -> dict:
    f = sim.fields()
    return {"h": f["h"].copy(), "eta": f["eta"].copy(), "qy": float(np.abs(f["qy"]).max())}


def _middle(r, values: np.ndarray) -> np.ndarray:
    """The row of cells through the middle of the basin (the upper one of two)."""
    return r.grid.as_array(values)[r.grid.ny // 2]


def basin(name: str, args):
    """drop / island: eta maps, a section and a time series at a point over 100 s."""
    from matplotlib.figure import Figure

    island = name == "cgrid-island"
    r = run(name, args, np.arange(0.0, 100.0 + 0.5, 1.0), _keep)
    f = r.sim.fields()
    # The probe: the island summit (highest bed) or the centre of the drop (highest eta at t=0).
    probe = int(np.argmin(f["H"])) if island else int(np.argmax(r.frames[0]["eta"]))
    picks = [r.at(t) for t in ((0, 15, 30, 100) if island else (0, 10, 25, 100))]

    fig = Figure(figsize=(15, 8.4), layout="constrained")
    top, bottom = fig.subfigures(2, 1, height_ratios=[1.1, 1])
    maps = top.subplots(1, 4)
    # Each map its own scale: the wave is a tenth of the drop's height by 25 s.
    r.map_row(maps, picks, "eta", lambda fr: fr["eta"], lambda t: f"t = {t:g} s", shared=False)
    if island:  # the island is small: outline its flank where the bed is 0.5 m deep
        for ax, i in zip(maps, picks, strict=True):
            r.shade_dry(ax, r.frames[i]["h"])
            ax.contour(
                r.grid.x,
                r.grid.y,
                -r.grid.as_array(f["H"]),
                levels=[-0.5],
                colors="w",
                linewidths=0.8,
                linestyles="--",
            )
    sec, ts = bottom.subplots(1, 2, width_ratios=[1.6, 1])
    x = r.grid.x
    y0 = r.grid.y[r.grid.ny // 2]
    for i in picks:
        wet = _middle(r, r.frames[i]["h"]) >= DRY
        sec.plot(
            x, np.where(wet, _middle(r, r.frames[i]["eta"]), np.nan), label=f"t = {r.times[i]:g} s"
        )
    if island:
        sec.fill_between(x, -_middle(r, f["H"]), -1.0, color="0.6", label="bed (-H)")
        sec.set_ylim(-0.06, 0.11)
    sec.set_xlabel("x [m]")
    sec.set_ylabel("free surface eta [m]")
    sec.set_title(f"section along y = {y0:g} m (wet cells)", fontsize=10)
    sec.legend(fontsize=8)
    sec.grid(alpha=0.3)
    px, py = f["x"][probe], f["y"][probe]
    if island:
        ts.plot(r.times, [1e3 * fr["h"][probe] for fr in r.frames], "C3")
        ts.set_ylabel("water depth h [mm]")
        ts.set_title(
            f"depth on the island summit ({px:g}, {py:g}) m, bed "
            f"{-f['H'][probe] * 100:.1f} cm above still water",
            fontsize=10,
        )
        ts.axhline(1e3 * DRY, color="k", ls=":", lw=1, label=f"dry below {DRY * 1e3:g} mm")
        ts.set_ylim(-0.1, max(2.0, 1.2e3 * max(fr["h"][probe] for fr in r.frames)))
        n_dry = ts.twinx()
        n_dry.plot(r.times, [int((fr["h"] < DRY).sum()) for fr in r.frames], "C0", lw=1)
        n_dry.set_ylabel("dry cells in the basin", color="C0")
        n_dry.set_ylim(0, 1.5 * max(1, n_dry.get_ylim()[1]))
        ts.legend(fontsize=8, loc="center right")
    else:
        ts.plot(r.times, [fr["eta"][probe] for fr in r.frames], "C3")
        ts.set_ylabel("free surface eta [m]")
        ts.set_title(f"eta at the centre ({px:g}, {py:g}) m", fontsize=10)
    ts.set_xlabel("t [s]")
    ts.grid(alpha=0.3)
    dry = " — grey: dry cells (h < 1 mm), dashed: island flank (bed 0.5 m deep)" if island else ""
    fig.suptitle(f"{r.heading()}: free surface after a Gaussian drop{dry}")
    return fig


def tide(name: str, args):
    """tide / tide-islands: depth maps over one cycle, eta(x) sections and the front against t."""
    from matplotlib import colormaps
    from matplotlib.colors import LogNorm
    from matplotlib.figure import Figure

    hour = 3600.0
    r = run(name, args, np.arange(0.0, 24 * hour + 1.0, 600.0), _keep)
    g, f = r.grid, r.sim.fields()
    level = r.case.boundary["west"].eta
    bed = -_middle(r, f["H"])

    def front(h):  # the left face of the first dry cell from the west, or the east wall
        dry = np.flatnonzero(_middle(r, h) < DRY)
        return g.x_nodes[dry[0]] if dry.size else g.x_nodes[-1]

    xs = np.linspace(0.0, g.x_nodes[-1], 4001)
    fine_bed = -r.case.H(xs, np.full_like(xs, g.y[g.ny // 2]))

    def still(eta):  # where the level first meets the bed along the row
        above = np.flatnonzero(fine_bed >= eta)
        return xs[above[0]] if above.size else xs[-1]

    fig = Figure(figsize=(15, 9), layout="constrained")
    top, bottom = fig.subfigures(2, 1, height_ratios=[1.05, 1])
    maps = top.subplots(1, 4)
    picks = [r.at(t * hour) for t in (12, 15, 18, 21)]
    r.map_row(
        maps,
        picks,
        "h",
        lambda fr: fr["h"],
        lambda t: f"t = {t / hour:g} h, level {level(t):.1f} m",
    )
    for ax, i in zip(maps, picks, strict=True):
        r.shade_dry(ax, r.frames[i]["h"])
        ax.axhline(g.y[g.ny // 2], color="w", ls="--", lw=0.8)
    sec, xt = bottom.subplots(1, 2, width_ratios=[1.2, 1])
    cycle = [r.at(t * hour) for t in np.arange(12.0, 24.0, 1.5)]
    cmap = colormaps["viridis"]
    for n, i in enumerate(cycle):
        wet = _middle(r, r.frames[i]["h"]) >= DRY
        t = r.times[i]
        sec.plot(
            g.x,
            np.where(wet, _middle(r, r.frames[i]["eta"]), np.nan),
            color=cmap(n / len(cycle)),
            label=f"{t / hour:g} h ({level(t):.1f} m)",
        )
    sec.fill_between(g.x, bed, 0.0, color="0.6", label="bed")
    sec.set_xlabel("x [m]")
    sec.set_ylabel("water level eta [m]")
    sec.set_title(
        f"eta along y = {g.y[g.ny // 2]:g} m (dashed in the maps), second cycle, wet cells",
        fontsize=10,
    )
    sec.legend(fontsize=8, ncol=2, title="t (west level)", title_fontsize=8, loc="lower right")
    sec.grid(alpha=0.3)
    hours = r.times / hour
    # x-t diagram of the row: the depth on a log scale, dry grey, the front and its estimate.
    depth = np.array([_middle(r, fr["h"]) for fr in r.frames]).T
    edges = np.concatenate([hours, [hours[-1] + hours[1] - hours[0]]]) - (hours[1] - hours[0]) / 2
    im = xt.pcolormesh(
        edges,
        g.x_nodes,
        np.ma.masked_less(depth, DRY),
        cmap="Blues",
        norm=LogNorm(DRY, depth.max()),
        shading="flat",
    )
    xt.set_facecolor("0.7")
    fig.colorbar(im, ax=xt, label="water depth h along the row [m]")
    xt.plot(
        hours,
        [front(fr["h"]) for fr in r.frames],
        "C3",
        lw=1.5,
        label=f"wet/dry front (first cell from the west with h < {DRY * 1e3:g} mm)",
    )
    xt.plot(
        hours,
        [still(level(t)) for t in r.times],
        "k:",
        lw=1.5,
        label="where the west level meets the bed",
    )
    xt.set_xlabel("t [h]")
    xt.set_ylabel("x [m]")
    xt.set_xticks(np.arange(0, 25, 3))
    xt.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.13), ncol=1)
    xt.set_title("depth along the row against time (grey: dry)", fontsize=10)
    qy = max(fr["qy"] for fr in r.frames)
    fig.suptitle(
        f"{r.heading()}: tide 3 + 2 sin(2πt/12 h) m at the west side, 24 h — "
        f"grey: dry; max |q_y| over the run {qy:.2g} m²/s"
    )
    return fig


def main(argv=None) -> int:
    p = parser("Run a C-grid thesis case and draw its figure.")
    p.add_argument("case", choices=tuple(CASES))
    args = p.parse_args(argv)
    name = CASES[args.case]
    draw = tide if args.case.startswith("tide") else basin
    return guarded(lambda: save(draw(name, args), args.output or f"{name}.png"))


if __name__ == "__main__":
    sys.exit(main())
