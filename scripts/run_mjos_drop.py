"""The drop that broke Lax–Wendroff (docs/CASES.md §C, mjos-drop): run it, draw its figure.

    python scripts/run_mjos_drop.py [--nx 64] [--backend cpu] [-o mjos-drop.png]

The water depth h at a few of the 5000 published steps (dt = 0.01 s), among
them step 703, where the thesis's Lax–Wendroff scheme lost positivity, and the
smallest h over the whole run, step by step: it must stay positive. The title
gives the volume change (round-off) and the x<->y symmetry of the final state.
"""

from __future__ import annotations

import sys

import numpy as np
from grid_figure import guarded, parser, run, save

from fvswe.cases import get_case

NAME = "mjos-drop"
#: Published steps shown as maps (of dt = 0.01 s).
STEPS = (0, 50, 150, 703, 5000)
#: Where the thesis's Lax–Wendroff run went negative.
LW_FAILED = 703


def draw(args):
    from matplotlib.figure import Figure

    dt = get_case(NAME).dt  # the published step; a coarser --nx takes longer steps
    lowest: list[tuple[float, float]] = []

    def probe(sim) -> None:
        lowest.append((sim.t, float(sim.state()[:, 0].min())))  # h is component 0

    r = run(
        NAME,
        args,
        [s * dt for s in STEPS],
        lambda sim: sim.fields()["h"].copy(),
        every=1,
        probe=probe,
    )
    fig = Figure(figsize=(16, 7.8), layout="constrained")
    top, bottom = fig.subfigures(2, 1, height_ratios=[1, 1])
    maps = top.subplots(1, len(STEPS))
    # Each map its own scale: the drop is 4.5 m high, the waves later a few decimetres.
    r.map_row(
        maps,
        range(len(STEPS)),
        "h",
        lambda h: h,
        lambda t: f"t = {t:g} s (published step {round(t / dt)})",
        shared=False,
    )
    ax = bottom.subplots()
    t, h_min = np.array([(0.0, r.frames[0].min()), *lowest]).T
    ax.plot(t, h_min, "C0", lw=1, label="min h over the basin")
    ax.axvline(
        LW_FAILED * dt,
        color="C3",
        ls="--",
        lw=1,
        label=f"step {LW_FAILED}: Lax–Wendroff went negative (thesis)",
    )
    ax.axhline(0.0, color="k", lw=0.8)
    ax.set_xlabel("t [s]")
    ax.set_ylabel("min h [m]")
    ax.set_ylim(bottom=min(0.0, h_min.min()) - 0.05)
    top_axis = ax.secondary_xaxis("top", functions=(lambda t: t / dt, lambda s: s * dt))
    top_axis.set_xlabel(f"published step (dt = {dt:g} s)")
    ax.grid(alpha=0.3)
    ax.legend(loc="lower right", fontsize=9)
    ax.set_title(f"smallest depth after every step: {h_min.min():.3f} m at its lowest", fontsize=10)
    h = r.grid.as_array(r.frames[-1])
    sim = r.sim
    drift = (sim.mass()[0] - sim.mass_initial[0]) / sim.mass_initial[0]
    fig.suptitle(
        f"{r.heading()}: {sim.steps} steps, volume change {drift:.1e}, "
        f"max |h - h^T| = {np.abs(h - h.T).max():.1e} m at the end"
    )
    return fig


def main(argv=None) -> int:
    args = parser("Run mjos-drop (5000 steps of a 3.5 m drop) and draw its figure.").parse_args(
        argv
    )
    return guarded(lambda: save(draw(args), args.output or f"{NAME}.png"))


if __name__ == "__main__":
    sys.exit(main())
