"""Maximum-value and arrival-time maps (docs/SCHEMES.md §18), for both backends.

Per cell a map keeps the largest value each quantity of :func:`quantities` has taken and
the first time it took it, and the first time the free surface departed from its initial
level by more than a threshold (the arrival of a wave, of a flood front on dry land, or of
a drawdown). The values are those of the output fields (docs/guide/outputs.md), in float64
from the run's state: the surface ``eta = h - H`` (two layers ``h1 + h2 - H`` and the
interface ``h2 - H``), the water column's depth and a layer's speed ``|u|`` with the
desingularised velocity of §8 that ``u``, ``v`` are written with. A map row holds, per
quantity ``k``, its maximum at ``2 k`` and that maximum's time at ``2 k + 1``, then the
initial surface and the arrival time (-1 until the wave arrives). ``@exact``: every
operation rounded on its own, so the CPU and every GPU variant keep the same bits.
:func:`maxima_cells` is the CPU's pass over the cells (not emitted: the GPU's is
``maxima_pass``), here so that the CPU's cache check renews it with the formulas.
"""

from __future__ import annotations

import math

import numpy as np

from .common import exact, jit
from .constants import SQRT2

#: Per layer count, the number of quantities :func:`quantities` gives a map.
QUANTITIES = {1: 3, 2: 5}
#: The arrival time of a cell the wave has not reached (written as NaN).
NOT_ARRIVED = -1.0


@exact
def speed(h, qx, qy, eps_h):
    """A layer's speed ``sqrt(2) h |q| / sqrt(h^4 + max(h, eps_h)^4)``: the magnitude of the
    output velocity (0 on a dry layer)."""
    m = max(h, eps_h)
    h2 = h * h
    m2 = m * m
    return SQRT2 * h * math.sqrt(qx * qx + qy * qy) / math.sqrt(h2 * h2 + m2 * m2)


@exact
def quantities(h1, q1x, q1y, h2, q2x, q2y, H, layers, eps_h):
    """What a map keeps the maximum of, in a cell: ``(surface, depth, speed)`` of one layer
    (``h2`` and its discharge unused), ``(surface, depth, upper speed, interface, lower
    speed)`` of two; the rest of the 5-tuple 0."""
    if layers == 2:
        depth = h1 + h2
        return (depth - H, depth, speed(h1, q1x, q1y, eps_h), h2 - H,
                speed(h2, q2x, q2y, eps_h))  # fmt: skip
    return h1 - H, h1, speed(h1, q1x, q1y, eps_h), 0.0, 0.0


@exact
def keep_max(value, best, when, t):
    """``(best, when)`` after seeing ``value`` at time ``t``: the first time of the largest."""
    if value > best:
        return value, t
    return best, when


@exact
def arrival(eta, eta0, threshold, when, t):
    """The arrival time after a surface ``eta`` at time ``t``: ``t`` the first time ``|eta -
    eta0| > threshold`` (``when`` is :data:`NOT_ARRIVED` until then), else ``when``."""
    if when < 0.0 and abs(eta - eta0) > threshold:
        return t
    return when


@jit
def maxima_cells(W, H, n, t, layers, eps_h, threshold, M, start):
    """Cells ``0 .. n-1`` of the map ``M`` (float64, a row per cell) after the state ``W``
    (the run's packed state) over the bed ``H`` at time ``t``; ``start``: the map's first
    state, which sets every maximum, its time and the initial surface."""
    nq = 3 if layers == 1 else 5
    for i in range(n):
        if start:
            for k in range(nq):
                M[i, 2 * k], M[i, 2 * k + 1] = -math.inf, t
            M[i, 2 * nq + 1] = NOT_ARRIVED
        d = 3 if layers == 2 else 0
        f64 = np.float64  # Numba's float() of a float32 stays float32
        v = quantities(f64(W[i, 0]), f64(W[i, 1]), f64(W[i, 2]), f64(W[i, d]), f64(W[i, d + 1]),
                       f64(W[i, d + 2]), f64(H[i]), layers, eps_h)  # fmt: skip
        if start:
            M[i, 2 * nq] = v[0]
        for k in range(nq):
            M[i, 2 * k], M[i, 2 * k + 1] = keep_max(v[k], M[i, 2 * k], M[i, 2 * k + 1], t)
        M[i, 2 * nq + 1] = arrival(v[0], M[i, 2 * nq], threshold, M[i, 2 * nq + 1], t)
