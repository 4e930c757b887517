"""The integrators' order in time (fvswe.integrators): error against Δt on a fixed mesh.

A smooth problem on a fixed mesh (one layer: a Gaussian hump of the surface on 24 x 24 x 2
triangles; two layers: a Gaussian hump of the interface under a flat surface), run to
``t_end`` with fixed steps Δt, 2Δt/2, ...; the error is the L1 distance of the depths from the
same integrator's run at Δt/64, so that the spatial error (the same for every Δt) cancels
and what is left is the time error: order 1 for ``euler``, 2 for ``ssp-rk2``, 3 for
``ssp-rk3``. Writes the JSON and the figure of docs/validation.md (§ "Order in time").

    python scripts/time_convergence.py [--backend gpu] [--json out.json] [--png out.png]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from fvswe.integrators import INTEGRATORS
from fvswe.mesh.generate import structured_square
from fvswe.simulation import Simulation

ROOT = Path(__file__).resolve().parents[1]
#: (scheme, layers): a one-layer and a two-layer problem.
PROBLEMS = (("hll", 1), ("pvm-ifcp", 2))
STEPS = (0.02, 0.01, 0.005, 0.0025)
T_END = 1.0


def _hump(x, y):
    return 0.1 * np.exp(-(x * x + y * y) / 2.0)


def run(scheme: str, layers: int, integrator: str, dt: float, backend: str = "cpu") -> np.ndarray:
    """The depths at ``T_END`` of the problem, fixed step ``dt``."""
    mesh = structured_square(24, half=5.0)
    if layers == 1:
        initial = {"h": lambda x, y: 1.0 + _hump(x, y)}
    else:
        initial = {"h1": lambda x, y: 0.5 + _hump(x, y), "h2": lambda x, y: 0.5 - _hump(x, y)}
    sim = Simulation(mesh, layers=layers, scheme=scheme, H=1.0, r=0.9, initial=initial,
                     dt_mode="fixed", dt=dt, integrator=integrator, backend=backend)  # fmt: skip
    sim.run(T_END)
    return sim.state()[:, [0, 3][:layers]]


def errors(scheme: str, layers: int, integrator: str, steps=STEPS, backend: str = "cpu",
           ref: np.ndarray | None = None):  # fmt: skip
    """L1 errors (mean over cells and layers) at ``steps`` against Δt = steps[0] / 64, or
    against the depths ``ref`` of another reference run (:func:`run`)."""
    if ref is None:
        ref = run(scheme, layers, integrator, steps[0] / 64, backend)
    return [float(np.abs(run(scheme, layers, integrator, dt, backend) - ref).mean())
            for dt in steps]  # fmt: skip


def orders(errs: list[float]) -> list[float]:
    """The observed orders between successive halvings of Δt."""
    e = np.asarray(errs)
    return [float(v) for v in np.log2(e[:-1] / e[1:])]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backend", default="cpu", choices=("cpu", "gpu"))
    ap.add_argument("--json", type=Path, default=ROOT / "benchmarks/results/time_convergence.json")
    ap.add_argument("--png", type=Path, default=ROOT / "docs/images/time_convergence.png")
    args = ap.parse_args(argv)
    out = {"steps": list(STEPS), "t_end": T_END, "backend": args.backend, "runs": []}
    for scheme, layers in PROBLEMS:
        for integ in INTEGRATORS:
            errs = errors(scheme, layers, integ.name, backend=args.backend)
            row = {"scheme": scheme, "layers": layers, "integrator": integ.name,
                   "errors": errs, "orders": orders(errs)}  # fmt: skip
            out["runs"].append(row)
            print(f"{scheme}/{layers} {integ.name}: orders " + " ".join(
                f"{o:.3f}" for o in row["orders"]), flush=True)  # fmt: skip
    args.json.write_text(json.dumps(out, indent=1) + "\n")
    _figure(out, args.png)
    return 0


def _figure(out: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(PROBLEMS), figsize=(9, 3.6), sharey=True)
    for ax, (scheme, layers) in zip(axes, PROBLEMS, strict=True):
        for row in out["runs"]:
            if (row["scheme"], row["layers"]) == (scheme, layers):
                ax.loglog(out["steps"], row["errors"], "o-", label=row["integrator"])
        ax.set_title(f"{scheme}, {layers} layer{'s' if layers > 1 else ''}")
        ax.set_xlabel("Δt (s)")
        ax.set_xticks(out["steps"], [f"{s:g}" for s in out["steps"]], minor=False)
        ax.set_xticks([], minor=True)
        ax.grid(True, which="both", alpha=0.3)
    axes[0].set_ylabel("L1 error of the depths")
    axes[0].legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    sys.exit(main())
