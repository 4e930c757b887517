"""Von Neumann stability of the θ-step's linearisation (docs/IMPLICIT.md, "The flooding marsh").

    python3 benchmarks/implicit_stability.py

About a uniform flow ``U`` over depth ``h`` on the C-grid, both the momentum's advection and
the continuity's (the face depth ``h_f`` of step n, upwind) are explicit first-order upwind,
Fourier symbol ``α = C (1 - e^{-ik})`` (``C = U Δt/Δx``), and the gravity waves θ-implicit
with the staggered difference, ``μ = ±2 W sin(k/2)`` (``W = √(g h) Δt/Δx``). A mode's
amplification per step is ``|1 - α - (1 - θ) i μ| / |1 + θ i μ|``. Printed: its largest
value over ``k`` per ``C``, ``θ`` and ``W``, and per ``C`` the smallest θ (to 0.01) with no
growth for any ``W`` in [0.05, 100]. Friction (which damps) is left out.
"""

from __future__ import annotations

import numpy as np

K = np.linspace(1e-4, np.pi, 4001)
SWEEP = np.geomspace(0.05, 100, 300)
WAVES = (0.5, 1.0, 2.0, 3.0, 5.0, 10.0, 30.0)


def amplification(C: float, theta: float, W: float) -> float:
    """The largest amplification over the wavenumbers ``K`` and both wave directions."""
    a = C * (1 - np.exp(-1j * K))
    m = 2 * W * np.sin(K / 2)
    return max(float(np.abs((1 - a - (1 - theta) * 1j * s * m) / (1 + theta * 1j * s * m)).max())
               for s in (1.0, -1.0))  # fmt: skip


def smallest_theta(C: float) -> float:
    """The smallest θ (to 0.01) whose modes grow for no ``W`` of ``SWEEP``."""
    for theta in np.arange(0.5, 1.0001, 0.01):
        if all(amplification(C, theta, W) <= 1 + 1e-9 for W in SWEEP):
            return float(theta)
    return float("nan")


def main() -> None:
    for C in (0.5, 0.9):
        for theta in (0.5, 0.55, 0.6, 0.75, 1.0):
            row = " ".join(f"{amplification(C, theta, W):.3f}" for W in WAVES)
            print(f"C {C:g} theta {theta:g}: W {', '.join(f'{w:g}' for w in WAVES)}: {row}")
    for C in (0.3, 0.5, 0.7, 0.8, 0.9, 1.0):
        print(f"C {C:g}: stable for theta >= {smallest_theta(C):.2f}")


if __name__ == "__main__":
    main()
