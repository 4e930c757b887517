"""Two-layer lock exchange in a flat channel: front positions against theory, a figure.

    python scripts/lock_exchange.py [--nx 800] [--r 0.98] [--t-end 8] [-o FIGURE.png]

Heavy fluid (layer 2) fills the channel ``x < 0`` to the depth ``H``, light fluid
(layer 1) fills ``x > 0``; at t = 0 the lock is removed. In the Boussinesq limit
``r -> 1`` the two-layer Riemann problem leaves the state ``h2 = H/2`` with the
shear ``u2 - u1 = sqrt(g' H)`` at the lock (``g' = (1 - r) g``; docs/validation.md),
and the two gravity currents' fronts travel at ``±c``,
``c = sqrt(g' H) / 2`` (Benjamin's energy-conserving current of half depth;
Rottman & Simpson 1983, Klemp, Rotunno & Skamarock 1994). The state at the lock
is on the boundary of hyperbolicity, where a front's jump conditions depend on the
conserved form: the independent 1-D reference here (:func:`boussinesq_reference`, the
rigid-lid Boussinesq equations in conservation form, Rusanov) tends to the half-depth
currents, while fvswe's path-conservative schemes spread the interface into a fan
(docs/validation.md). What they share with the theory, and what is measured here, is

- the *volume front*: the volume of heavy fluid past the lock over ``H/2``
  (the length of a half-depth current carrying it), ``c t`` in the theory, and
  its light-fluid mirror; the exchange flux at the lock is then
  ``H c / 2 = sqrt(g' H^3) / 4`` per unit width;
- the *level front*: where the interface crosses ``H/4`` (``±c t`` both for the
  half-depth current and for the fan of the self-similar solution).

The volume front converges to ``c t`` with refinement; the leading edges of the
fan's two thin noses run ahead, near ``±1.6 c t`` (the figure's right panel).

measured on the CPU, ``python scripts/lock_exchange.py --nx 800`` (r = 0.98, t = 8 s),
front / (c t), volume dense/light, level dense/light:
roe +1.0028 -0.9738 +1.0494 -0.9914; ir-roe +1.0027 -0.9736 +1.0484 -0.9913;
pvm-ifcp +1.0035 -0.9744 +1.0768 -1.0265; Boussinesq reference (6400 cells): volume 0.9538.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from fvswe.mesh.generate import strip
from fvswe.simulation import Simulation

SCHEMES = ("roe", "ir-roe", "pvm-ifcp")
STYLE = {"roe": "tab:blue", "ir-roe": "tab:orange", "pvm-ifcp": "tab:green"}
#: Total depth (m), gravity (m/s²) and channel half length (m) of the experiment.
DEPTH, G, HALF = 1.0, 9.81, 4.0


def front_speed(r: float, g: float = G, depth: float = DEPTH) -> float:
    """Boussinesq front speed ``c = sqrt(g' H) / 2`` of the full-depth lock exchange."""
    return 0.5 * np.sqrt((1.0 - r) * g * depth)


def lock_exchange(scheme: str, nx: int, r: float = 0.98, **options) -> Simulation:
    """The lock exchange on a ``nx x 1`` strip of ``[-HALF, HALF]`` (walls at both ends)."""
    heavy = lambda x, y: np.where(x < 0, DEPTH, 0.0)  # noqa: E731
    return Simulation(
        strip(nx, 1, -HALF, HALF),
        layers=2,
        scheme=scheme,
        g=G,
        r=r,
        H=DEPTH,
        initial={"h2": heavy, "h1": lambda x, y: DEPTH - heavy(x, y)},
        **options,
    )


def _crossing(x: np.ndarray, h: np.ndarray, level: float, last: bool) -> float:
    """The first (or last) x where ``h`` crosses ``level``, linearly interpolated."""
    above = h > level
    k = np.flatnonzero(above[:-1] != above[1:])
    if not k.size:
        return float("nan")
    k = k[-1] if last else k[0]
    return float(x[k] + (level - h[k]) * (x[k + 1] - x[k]) / (h[k + 1] - h[k]))


def fronts(sim: Simulation) -> dict[str, float]:
    """Front positions (m) of both currents: by volume and by the ``H/4`` level."""
    f = sim.fields()
    width = f["area"].sum() / (2 * HALF)
    o = np.argsort(f["x"], kind="stable")
    x, h1, h2 = f["x"][o], f["h1"][o], f["h2"][o]
    return {
        "dense_volume": float(np.sum(f["area"] * f["h2"] * (f["x"] > 0)) / width / (DEPTH / 2)),
        "light_volume": -float(np.sum(f["area"] * f["h1"] * (f["x"] < 0)) / width / (DEPTH / 2)),
        "dense_level": _crossing(x, h2, DEPTH / 4, last=True),
        "light_level": _crossing(x, h1, DEPTH / 4, last=False),
    }


def boussinesq_reference(nx: int, t_end: float, r: float) -> tuple[np.ndarray, np.ndarray]:
    """Cell centres and ``h2`` of the rigid-lid Boussinesq two-layer equations
    (docs/validation.md) solved with Rusanov's scheme on ``nx`` cells of ``[-HALF, HALF]``:
    an independent 1-D reference (no code shared with fvswe). Walls: ``U = u2 - u1`` odd."""
    gp = (1.0 - r) * G
    dx = 2 * HALF / nx
    x = -HALF + dx * (np.arange(nx) + 0.5)
    h, shear = np.where(x < 0, DEPTH, 0.0), np.zeros(nx)
    t = 0.0
    while t < t_end:
        a = np.abs(shear).max() + np.sqrt(gp * DEPTH)  # bounds |U (H - 2h)/H ± ...|
        dt = min(0.45 * dx / a, t_end - t)
        hh = np.r_[h[0], h, h[-1]]
        uu = np.r_[-shear[0], shear, -shear[-1]]
        f1 = hh * (DEPTH - hh) * uu / DEPTH
        f2 = uu**2 * (DEPTH - 2 * hh) / (2 * DEPTH) + gp * hh
        g1 = 0.5 * (f1[:-1] + f1[1:]) - 0.5 * a * np.diff(hh)
        g2 = 0.5 * (f2[:-1] + f2[1:]) - 0.5 * a * np.diff(uu)
        h = h - dt / dx * np.diff(g1)
        shear = shear - dt / dx * np.diff(g2)
        t += dt
    return x, h


def label(ax, xlabel: str, ylabel: str, title: str) -> None:
    """Axis labels, title and legend of a panel of the validation scripts."""
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend(fontsize=8)


def save_figure(fig, path: str | Path) -> None:
    """Lay out, write (making the folder) and report a figure of the validation scripts."""
    fig.tight_layout()
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    print(f"wrote {path}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nx", type=int, default=800, help="cells along the channel (x2)")
    parser.add_argument("--r", type=float, default=0.98, help="density ratio rho1/rho2")
    parser.add_argument("--t-end", type=float, default=8.0)
    parser.add_argument("--reference-nx", type=int, default=6400,
                        help="cells of the 1-D Boussinesq reference")  # fmt: skip
    parser.add_argument("-o", "--output", default="docs/images/lock_exchange.png", help="figure")
    args = parser.parse_args(argv)

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    c = front_speed(args.r)
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(11, 4.2))
    for scheme in SCHEMES:
        sim = lock_exchange(scheme, args.nx, args.r)
        series = []
        record = lambda s, out=series: out.append((s.t, fronts(s)))  # noqa: E731
        sim.run(args.t_end, check_every=20, callback=record)
        t = np.array([s[0] for s in series])
        for key, mark in (("dense_volume", "-"), ("light_volume", "-"), ("dense_level", ":"),
                          ("light_level", ":")):  # fmt: skip
            ax.plot(t, [s[1][key] for s in series], mark, color=STYLE[scheme],
                    label=scheme if key == "dense_volume" else None)  # fmt: skip
        end = series[-1][1]
        print(
            f"{scheme:9s} nx={args.nx} r={args.r} t={t[-1]:g}: front / (c t): "
            + ", ".join(f"{k} {v / (c * t[-1]):+.4f}" for k, v in end.items())
        )
        f = sim.fields()
        o = np.argsort(f["x"])
        bx.plot(f["x"][o] / (c * t[-1]), f["h2"][o], color=STYLE[scheme], label=scheme)
    x, h2 = boussinesq_reference(args.reference_nx, args.t_end, args.r)
    volume = np.sum(h2 * (x > 0)) * (x[1] - x[0]) / (DEPTH / 2) / (c * args.t_end)
    print(f"Boussinesq reference, {args.reference_nx} cells: volume front / (c t) {volume:.4f}")
    bx.plot(x / (c * args.t_end), h2, color="0.5", lw=1, label="Boussinesq 1-D reference")
    tt = np.linspace(0, args.t_end, 50)
    ax.plot(tt, c * tt, "k--", lw=1, label="theory ±c t")
    ax.plot(tt, -c * tt, "k--", lw=1)
    label(ax, "t [s]", "front position [m]",
          f"fronts (solid: volume, dotted: h = H/4), {args.nx} cells, r = {args.r}")  # fmt: skip
    xi = np.linspace(-2.5, 2.5, 501)
    bx.plot(xi, np.where(xi < -1, DEPTH, np.where(xi < 1, DEPTH / 2, 0.0)), "k--", lw=1,
            label="half-depth currents")  # fmt: skip
    bx.plot(xi, np.clip(DEPTH * (1 - xi / 2) / 2, 0, DEPTH), "k:", lw=1, label="self-similar fan")
    label(bx, "x / (c t)", "h2 [m]", f"heavy layer at t = {args.t_end:g} s")
    save_figure(fig, args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
