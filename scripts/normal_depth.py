"""Uniform flow down a constant slope: the Chézy and Manning normal depth, a figure.

    python scripts/normal_depth.py [--dx 10] [--slope 1e-3] [--t-end 1500] [-o FIGURE.png]

Still water of depth ``h = 1 m`` on a bed falling ``S0`` in x, in a 30 km channel one
cell wide (quads, Roe) with the depth ``h`` held at both ends by imposed levels, starts
to flow under gravity against bottom friction (docs/SCHEMES.md §14). Away from the ends
the flow stays uniform and obeys ``dq/dt = g h S0 - K |q| q``; both laws give
``q(t) = q_n tanh(t / T)``, ``T = q_n / (g h S0)``, with the normal discharge of the depth
``h`` (Chow 1959): ``q_n = C h^(3/2) S0^(1/2)`` (Chézy) or ``h^(5/3) S0^(1/2) / n``
(Manning); conversely ``h`` is the normal depth of ``q_n``. Measured in the middle 4 km
(beyond the numerical reach of the ends, one cell a step): the steady discharge (the
backward-Euler friction step balances the slope exactly: round-off at any Δt) and the
largest error of ``q(t)`` against ``q_n tanh(t/T)`` over the run (first order in Δt).

measured on the CPU, ``python scripts/normal_depth.py`` (dx = 10 m, 3000 cells, S0 = 1e-3,
C = 30, n = 0.03, t = 1500 s, 1200 / 1216 steps): final |q/q_n - 1| = 9.8e-14 (Chézy), 2.0e-12
(Manning: the rest of the transient, ``1 - tanh(14)``), |h - h_n| = 3e-15; max over the run of
|q(t) - q_n tanh(t/T)| / q_n = 2.5e-3, 2.2e-3; ``--dx 100``: 2.5e-2, 2.2e-2 (first order).
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np

from fvswe.boundary import Level
from fvswe.grid import Grid
from fvswe.simulation import Simulation

#: Depth (m), gravity (m/s²), channel length (m), and the two laws with their coefficients.
DEPTH, G, LENGTH = 1.0, 9.81, 30_000.0
LAWS = {"chezy": 30.0, "manning": 0.03}


def normal_discharge(law: str, coef: float, h: float, slope: float) -> float:
    """Chézy ``C h^(3/2) S^(1/2)``, Manning ``h^(5/3) S^(1/2) / n`` (m²/s)."""
    if law == "chezy":
        return coef * h**1.5 * math.sqrt(slope)
    return h ** (5 / 3) * math.sqrt(slope) / coef


def channel(law: str, coef: float, dx: float, slope: float) -> Simulation:
    """The sloping channel at rest, levels holding the depth at both ends."""
    n = int(round(LENGTH / dx))

    def H(x, y):
        return 5.0 + slope * x

    def level(x):
        return Level(([0.0, 1e9], [DEPTH - H(x, 0.0)] * 2))

    ends = {"west": level(dx / 2), "east": level(LENGTH - dx / 2)}
    return Simulation(Grid(n, 1, dx=dx, dy=dx).mesh(), layers=1, scheme="roe", H=H,
                      friction=(law, coef), initial={"h": DEPTH},
                      boundary={**ends, "south": "wall", "north": "wall"})  # fmt: skip


def run(law: str, coef: float, dx: float, slope: float, t_end: float) -> dict:
    """Time series of the mid-channel discharge and the final profile."""
    sim = channel(law, coef, dx, slope)
    qn = normal_discharge(law, coef, DEPTH, slope)
    f = sim.fields()
    middle = np.abs(f["x"] - LENGTH / 2) < 2_000.0
    times, q = [0.0], [0.0]
    while sim.t < t_end:
        sim.run(t_end, max_steps=1)
        f = sim.fields()
        times.append(sim.t)
        q.append(float(f["qx"][middle].mean()))
        spread = np.ptp(f["qx"][middle])
        assert spread <= 1e-10 * qn, spread  # uniform to round-off: the ends are out of reach
    times, q = np.array(times), np.array(q)
    exact = qn * np.tanh(times / (qn / (G * DEPTH * slope)))
    return {
        "t": times,
        "q": q / qn,
        "exact": exact / qn,
        "x": f["x"],
        "profile": f["qx"] / qn,
        "h": f["h"],
        "steps": sim.steps,
        "steady": abs(q[-1] / qn - 1),
        "depth": float(np.abs(f["h"][middle] - DEPTH).max()),
        "transient": float(np.abs(q / qn - exact / qn).max()),
    }


def figure(results: dict, path: Path, dx: float, slope: float) -> None:
    import matplotlib.pyplot as plt

    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4))
    for (law, res), color in zip(results.items(), ("tab:blue", "tab:orange"), strict=True):
        a.plot(res["t"], res["q"], color=color, label=f"{law}, fvswe (mid-channel)")
        a.plot(res["t"], res["exact"], "k--", lw=0.8)
        b.plot(res["x"] / 1000, res["profile"], color=color, label=f"{law}: q / q_n")
    a.plot([], [], "k--", lw=0.8, label="q_n tanh(t/T)")
    a.set(xlabel="t (s)", ylabel="q / q_n", title=f"Uniform flow from rest, S0 = {slope:g}")
    b.set(xlabel="x (km)", ylabel="q / q_n", title=f"Profile at t = {res['t'][-1]:g} s, "
          f"dx = {dx:g} m")  # fmt: skip
    for ax in (a, b):
        ax.grid(alpha=0.3)
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dx", type=float, default=10.0, help="cell size (m)")
    parser.add_argument("--slope", type=float, default=1e-3)
    parser.add_argument("--t-end", type=float, default=1500.0)
    parser.add_argument(
        "-o",
        "--output",
        type=Path,
        default=Path(__file__).parents[1] / "docs/images/normal_depth.png",
    )
    args = parser.parse_args(argv)
    import matplotlib

    matplotlib.use("Agg")
    results = {law: run(law, coef, args.dx, args.slope, args.t_end) for law, coef in LAWS.items()}
    for law, res in results.items():
        print(f"{law}: {res['steps']} steps, steady |q/q_n - 1| = {res['steady']:.2g}, "
              f"|h - h_n| = {res['depth']:.2g}, max |q(t) - q_n tanh(t/T)| / q_n = "
              f"{res['transient']:.2g}")  # fmt: skip
    figure(results, args.output, args.dx, args.slope)
    print(f"figure: {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
