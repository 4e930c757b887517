"""Coriolis and wind per cell: the NumPy reference, vectorised over cells (docs/SCHEMES.md §15).

After a step's flux update (and the clip and thin-layer damping of §8) each cell's
momenta get the wind's acceleration ``dt tau / rho_w`` on the upper (or only) layer where
it is wet (``h >= eps_h``), then every layer's ``(qx, qy)`` is rotated by the angle
``-theta``, ``theta = 2 atan(f dt / 2)``: the Crank-Nicolson (Cayley) step of
``dq/dt = f (qy, -qx)``. :mod:`fvswe.physics.forcing` (Numba on the CPU, emitted for
CUDA) mirrors these functions with the same operations in the same order, so the NumPy,
CPU and GPU results agree bit for bit in float64.
"""

from __future__ import annotations

import numpy as np

from ..physics.constants import LP_BREAK, LP_CAP


def drag_coefficient(speed: np.ndarray, law: int, cd: float) -> np.ndarray:
    """C_d(U10): law 1 constant ``cd``; 2 Large & Pond (1981) ``1.2e-3`` for U10 < 11 m/s,
    ``(0.49 + 0.065 min(U10, 25)) 1e-3`` above; 3 Wu (1982) ``(0.8 + 0.065 U10) 1e-3``."""
    speed = np.asarray(speed, dtype=np.float64)
    if law == 2:
        capped = np.where(speed < LP_CAP, speed, LP_CAP)
        return np.where(speed < LP_BREAK, 1.2e-3, (0.49 + 0.065 * capped) * 1e-3)
    if law == 3:
        return (0.8 + 0.065 * speed) * 1e-3
    return np.full_like(speed, cd)


def wind_stress(u, v, law: int, cd: float, ratio: float) -> tuple[np.ndarray, np.ndarray]:
    """``tau / rho_w = (rho_a / rho_w) C_d |U10| U10`` (m^2/s^2) of the wind ``(u, v)``."""
    u = np.asarray(u, dtype=np.float64)
    v = np.asarray(v, dtype=np.float64)
    speed = np.sqrt(u * u + v * v)
    k = ratio * drag_coefficient(speed, law, cd) * speed
    return k * u, k * v


def rotation(f, dt) -> tuple[np.ndarray, np.ndarray]:
    """``(cos theta, sin theta)`` of the Cayley step: ``a = f dt / 2``,
    ``c = (1 - a^2) / (1 + a^2)``, ``s = 2 a / (1 + a^2)``; ``c^2 + s^2 = 1`` exactly."""
    a = 0.5 * (np.asarray(f, dtype=np.float64) * dt)
    a2 = a * a
    d = 1.0 + a2
    return (1.0 - a2) / d, (a + a) / d


def force_layer(h, qx, qy, c, s, ax, ay, dt, eps_h, wind: bool):
    """One layer's ``(qx, qy)`` after the forcing: ``q += dt (ax, ay)`` where ``wind`` and
    ``h >= eps_h``, then the rotation ``(c qx + s qy, c qy - s qx)``."""
    if wind:
        wet = np.asarray(h) >= eps_h
        qx = np.where(wet, qx + dt * ax, qx)
        qy = np.where(wet, qy + dt * ay, qy)
    return c * qx + s * qy, c * qy - s * qx


def apply(W: np.ndarray, f: np.ndarray, dt: float, ax: float, ay: float, eps_h: float):
    """A copy of ``W`` (``(L, 3)`` or ``(L, 6)``) after one step's forcing; ``f`` per cell
    (zeros: wind only), ``(ax, ay)`` the wind's ``tau / rho_w`` (zeros: no wind)."""
    out = np.array(W, dtype=np.float64)
    c, s = rotation(f, dt)
    for layer in range(out.shape[1] // 3):
        h, qx, qy = (out[:, 3 * layer + m] for m in range(3))
        out[:, 3 * layer + 1], out[:, 3 * layer + 2] = force_layer(
            h, qx, qy, c, s, ax, ay, dt, eps_h, layer == 0
        )
    return out
