"""Coriolis and wind per cell, mirroring :mod:`fvswe.schemes.forcing` one for one.

Scalar ``@jit`` functions on floats (tuple returns) that the volume passes call after a
cell's flux update: the CPU's :mod:`fvswe.backends.cpu.pipeline` directly, the GPU's
``pipeline.cuh`` as emitted by :mod:`fvswe.codegen` (``forcing::rotation<double>`` etc.,
float64 in every module). The wind table's lookup walks arrays and stays in each
pipeline (``table_value``). Same operations in the same order, so float64 results are
bitwise those of the reference and of the GPU (docs/SCHEMES.md §15).
"""

from __future__ import annotations

import math

from .common import jit_inline
from .constants import LP_BREAK, LP_CAP


@jit_inline
def drag_coefficient(speed, law, cd):
    """C_d(U10): 1 constant ``cd``, 2 Large & Pond (1981), 3 Wu (1982)."""
    if law == 2:
        if speed < LP_BREAK:
            return 1.2e-3
        capped = speed if speed < LP_CAP else LP_CAP
        return (0.49 + 0.065 * capped) * 1e-3
    if law == 3:
        return (0.8 + 0.065 * speed) * 1e-3
    return cd


@jit_inline
def wind_stress(u, v, law, cd, ratio):
    """``tau / rho_w = (rho_a / rho_w) C_d |U10| U10`` of the wind ``(u, v)``."""
    speed = math.sqrt(u * u + v * v)
    k = ratio * drag_coefficient(speed, law, cd) * speed
    return k * u, k * v


@jit_inline
def rotation(f, dt):
    """``(cos theta, sin theta)`` of the Cayley (Crank-Nicolson) rotation, ``a = f dt / 2``."""
    a = 0.5 * (f * dt)
    a2 = a * a
    d = 1.0 + a2
    return (1.0 - a2) / d, (a + a) / d


@jit_inline
def force_layer(h, qx, qy, c, s, ax, ay, dt, eps_h, wind):
    """One layer's ``(qx, qy)`` after the wind (if ``wind`` and ``h >= eps_h``) and the
    rotation."""
    if wind and h >= eps_h:
        qx = qx + dt * ax
        qy = qy + dt * ay
    return c * qx + s * qy, c * qy - s * qx
