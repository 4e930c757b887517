"""The implicit method's step collapse on cgrid-tide's flooding marsh (issue 30, docs/IMPLICIT.md).

    python3 benchmarks/implicit_marsh.py --dtype float64 --hours 1.5,2,2.5,3
    python3 benchmarks/implicit_marsh.py --dtype float64 --store float32   # rounded state

cgrid-tide on ``--nx`` x ``--ny`` cells (528 x 4 by default; pseudo-1-D: the bed varies
along x only), the implicit method with Jacobi, gravity-wave Courant cap ``--wave-courant``
(30, the H200 runs'), advective ``--cfl`` (0.9) and ``--theta`` (0.55), run in one
``Simulation.run`` per listed hour: the output times, whose shortened last steps are
perturbation enough to decide whether the run collapses at θ = 0.55. Per hour: the steps,
the largest ``|u|`` and the highest level of a wet cell (deeper than 1 cm) against the tide
imposed at the west side (a level above it on the marsh is the collapse's noise, the flood
itself stays below it). ``--store float32`` rounds the state (levels, velocities; the bed
too) to float32 after every step of a float64 run: float32 storage with float64 arithmetic.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from fvswe.cases import _tide, get_case
from fvswe.implicit import step as stepmod


def _round_state(step_call):
    """``ThetaStep.__call__`` whose new state is rounded to float32 (kept in float64)."""

    def call(self, s, t, dt):
        new, report = step_call(self, s, t, dt)
        for key in ("zeta", "u", "v"):
            setattr(new, key, getattr(new, key).astype(np.float32).astype(np.float64))
        return new, report

    return call


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dtype", default="float64", choices=("float32", "float64"))
    ap.add_argument("--store", choices=("float32",), help="round the state after each step")
    ap.add_argument("--nx", type=int, default=528)
    ap.add_argument("--ny", type=int, default=4)
    ap.add_argument("--hours", default="1.5,2,2.5,3")
    ap.add_argument("--theta", type=float, default=0.55)
    ap.add_argument("--wave-courant", type=float, default=30.0)
    ap.add_argument("--cfl", type=float, default=0.9)
    ap.add_argument("--backend", default="cpu", choices=("cpu", "gpu"))
    args = ap.parse_args()
    if args.store and args.backend == "gpu":
        raise SystemExit("--store float32: the CPU backend only")
    if args.store:
        stepmod.ThetaStep.__call__ = _round_state(stepmod.ThetaStep.__call__)
    sim = get_case("cgrid-tide").with_grid(args.nx, args.ny).simulation(
        method="implicit", backend=args.backend, dtype=args.dtype, preconditioner="jacobi",
        theta=args.theta, cfl=args.cfl, max_wave_courant=args.wave_courant, allow_mass_error=True,
    )  # fmt: skip
    if args.store:
        step, state = sim.backend.step, sim.backend.state
        step.H = step.H.astype(np.float32).astype(np.float64)  # h = zeta + H as in float32
        for f in step.faces:
            f.bed = f.bed.astype(np.float32).astype(np.float64)
        for key in ("zeta", "u", "v"):
            setattr(state, key, getattr(state, key).astype(np.float32).astype(np.float64))
    start = time.perf_counter()
    for hours in (float(h) for h in args.hours.split(",")):
        sim.run(hours * 3600.0)
        s = sim.backend.state
        wet = s.zeta + sim.backend.step.H > 0.01  # a dry cell's level is its bed
        excess = float(s.zeta[wet].max()) - float(_tide(hours * 3600.0))
        print(
            f"{args.dtype} store={args.store} {args.nx}x{args.ny} theta={args.theta:g} "
            f"cfl={args.cfl:g} t={hours:g} h: {sim.steps} steps, |u|max "
            f"{float(abs(s.u).max()):.3g} m/s, level above the tide {excess:+.3f} m, "
            f"{time.perf_counter() - start:.0f} s",
            flush=True,
        )


if __name__ == "__main__":
    main()
