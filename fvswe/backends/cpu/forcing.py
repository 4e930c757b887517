"""Coriolis and wind per cell on the CPU, mirroring :mod:`fvswe.schemes.forcing` one for one.

Scalar functions on floats (no arrays inside, tuple returns) that the volume pass of
:mod:`fvswe.backends.cpu.pipeline` calls after a cell's flux update; the CUDA mirror is
``fvswe/backends/cuda/forcing.cuh``. Same operations in the same order, so float64
results are bitwise those of the reference and of the GPU (docs/SCHEMES.md §15).
"""

from __future__ import annotations

import math

from ...physics.common import jit_inline
from ...schemes.forcing import LP_BREAK, LP_CAP


@jit_inline
def table_value(t, times, values, lo, hi):
    """A piecewise-linear table's value at ``t``, samples ``lo..hi`` (inclusive), end
    values held outside: ``v[m] + (v[m+1] - v[m]) / (t[m+1] - t[m]) (t - t[m])`` with
    ``m`` the last sample at or before ``t`` (binary search)."""
    if t <= times[lo]:
        return values[lo]
    if t >= times[hi]:
        return values[hi]
    while hi - lo > 1:  # invariant: times[lo] <= t < times[hi]
        mid = (lo + hi) // 2
        if times[mid] <= t:
            lo = mid
        else:
            hi = mid
    slope = (values[hi] - values[lo]) / (times[hi] - times[lo])
    return values[lo] + slope * (t - times[lo])


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
def wind_at(t, times, u, v, law, cd, ratio):
    """``tau / rho_w`` at time ``t`` of the wind table ``(times, u, v)``."""
    hi = times.shape[0] - 1
    return wind_stress(
        table_value(t, times, u, 0, hi), table_value(t, times, v, 0, hi), law, cd, ratio
    )


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
