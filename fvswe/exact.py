"""Exact one-layer solutions for verification: the dam breaks (Ritter: dry bed; Stoker: wet
bed), the linear long waves forced by a bed moving at constant speed, and a steady vortex
(:func:`vortex`, smooth: the order of accuracy in space).

Flat frictionless bed, depth ``hl`` behind a dam at ``x0`` and ``hr`` beyond it, at rest at
t = 0. The left state opens into a centred rarefaction ``h = (2 c_l - xi)^2 / (9 g)``,
``u = 2 (xi + c_l) / 3`` (``xi = (x - x0) / t``, ``c_l = sqrt(g h_l)``). On a dry bed it
reaches ``h = 0`` at the front ``xi = 2 c_l`` (Ritter 1892); on a wet bed it ends in a
plateau ``(h_m, u_m)`` and a shock, with ``h_m`` from ``u_m = 2 (c_l - c_m)`` (the
rarefaction) equal to the shock's ``(h_m - h_r) sqrt(g (h_m + h_r) / (2 h_m h_r))``
(Stoker 1957; Toro, Shock-Capturing Methods for Free-Surface Shallow Flows, 2001, §4).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from scipy.optimize import brentq


def dam_break(
    x: np.ndarray, t: float, hl: float, hr: float, x0: float = 0.0, g: float = 9.81
) -> tuple[np.ndarray, np.ndarray, dict[str, float]]:
    """Depth and velocity at ``x`` and time ``t > 0``, and the features' positions.

    The features are the rarefaction's ``head`` and (Stoker) ``tail``, the ``shock`` or the
    dry ``front``, and the ``dam`` where the fan is transonic (the sonic point stays there:
    always on a dry bed, for ``hr / hl`` below about 0.138 on a wet one).
    """
    x = np.asarray(x, dtype=float)
    cl = np.sqrt(g * hl)
    xi = (x - x0) / t
    h = np.full_like(x, hl)
    u = np.zeros_like(x)
    fan = xi > -cl
    h[fan] = (2 * cl - xi[fan]) ** 2 / (9 * g)
    u[fan] = 2 * (xi[fan] + cl) / 3
    if hr == 0:
        dry = xi >= 2 * cl
        h[dry], u[dry] = 0.0, 0.0
        return h, u, {"head": x0 - cl * t, "dam": x0, "front": x0 + 2 * cl * t}

    def gap(hm: float) -> float:  # rarefaction velocity minus the shock's, behind the shock
        return 2 * (cl - np.sqrt(g * hm)) - (hm - hr) * np.sqrt(g * (hm + hr) / (2 * hm * hr))

    hm = brentq(gap, hr, hl, xtol=1e-15)
    um, cm = 2 * (cl - np.sqrt(g * hm)), np.sqrt(g * hm)
    shock = hm * um / (hm - hr)
    plateau, right = xi >= um - cm, xi >= shock
    h[plateau], u[plateau] = hm, um
    h[right], u[right] = hr, 0.0
    features = {"head": x0 - cl * t, "tail": x0 + (um - cm) * t, "shock": x0 + shock * t}
    if um - cm > 0:
        features["dam"] = x0
    return h, u, features


def moving_bed(
    x: np.ndarray,
    t: float,
    bump: Callable[[np.ndarray], np.ndarray],
    speed: float,
    depth: float,
    g: float = 9.81,
) -> tuple[np.ndarray, np.ndarray]:
    """Surface ``eta`` and velocity ``u`` at ``x`` and ``t >= 0`` of the linear long waves
    made by a bed bump ``b(x - U t)`` (elevation above a flat floor ``depth`` deep, small)
    that moves at the constant ``speed`` U from t = 0, the water at rest and flat before.

    The linear equations ``eta_t + depth u_x = b_t``, ``u_t + g eta_x = 0`` give
    ``eta_tt - c^2 eta_xx = b_tt`` (``c = sqrt(g depth)``). Their solution is the forced wave
    riding on the bump, ``U^2 / (U^2 - c^2) b(x - U t)``, plus the two free waves that the
    start leaves, ``-U / (2 (U - c)) b(x - c t)`` and ``-U / (2 (U + c)) b(x + c t)``
    (their sum is 0 at t = 0, and so is ``eta_t - b_t``); ``u`` follows from the mass
    equation of each travelling part (the forced wave of a landslide at constant speed,
    e.g. Tinti, Bortolucci & Chiavettieri 2001, Pure Appl. Geophys. 158). A bump at the
    long-wave speed (``U = c``) resonates and grows without bound: refused.
    """
    x = np.asarray(x, dtype=float)
    c = np.sqrt(g * depth)
    U = float(speed)
    if abs(U * U - c * c) <= 1e-9 * c * c:
        raise ValueError(f"moving_bed: a bump at the long-wave speed {c:g} m/s resonates")
    forced, ahead, behind = bump(x - U * t), bump(x - c * t), bump(x + c * t)
    eta = (U * U * forced - 0.5 * U * (U + c) * ahead - 0.5 * U * (U - c) * behind) / (
        U * U - c * c
    )
    u = (U * c * c * forced - 0.5 * U * c * (U + c) * ahead + 0.5 * U * c * (U - c) * behind) / (
        (U * U - c * c) * depth
    )
    return eta, u


def vortex(
    x: np.ndarray,
    y: np.ndarray,
    h0: float = 1.0,
    gamma: float = 1.0,
    R: float = 1.0,
    g: float = 9.81,
) -> dict[str, np.ndarray]:
    """A steady vortex on a flat bed (``h, qx, qy`` at ``(x, y)``, any time): the azimuthal
    velocity ``u_θ = gamma r exp(-r^2 / R^2)`` balanced by the depth's gradient,
    ``g h' = u_θ^2 / r``, so ``h = h0 - gamma^2 R^2 / (4 g) exp(-2 r^2 / R^2)``. Smooth, an
    exact solution of the shallow-water equations, at rest far from the centre."""
    r2 = np.asarray(x, dtype=float) ** 2 + np.asarray(y, dtype=float) ** 2
    h = h0 - gamma**2 * R**2 / (4.0 * g) * np.exp(-2.0 * r2 / R**2)
    speed = gamma * np.exp(-r2 / R**2)  # u_θ / r
    return {"h": h, "qx": -h * speed * y, "qy": h * speed * x}
