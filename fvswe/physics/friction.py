"""Bottom and interfacial friction per cell, mirroring :mod:`fvswe.schemes.friction`.

Scalar ``@jit`` functions on floats with tuple returns, in the reference's order of
floating-point operations (docs/SCHEMES.md §14): the volume pass of
:mod:`fvswe.backends.cpu.pipeline` calls them on a cell's updated state, and
:mod:`fvswe.codegen` emits them for the GPU's volume pass (``friction::bottom<double>``
in ``pipeline.cuh``: float64 in every module, docs/CODEGEN.md).
"""

from __future__ import annotations

import math

from .common import inverse_depth, jit
from .constants import CHEZY


@jit
def bottom(h, qx, qy, kind, coef, g, dt):
    """``(qx, qy)`` after one backward-Euler bottom-friction step, solved exactly.

    ``beta = dt g |u| / (C^2 h)`` (Chézy) or ``dt g n^2 |u| / h^(4/3)`` (Manning),
    ``q <- q 2 / (1 + sqrt(1 + 4 beta))``: the exact normal depth in steady uniform
    flow, and ``q`` keeps its direction. A dry cell (``h <= 0``) gets ``q = 0``.
    """
    if not h > 0:
        return 0.0, 0.0
    speed = math.sqrt(qx * qx + qy * qy)
    if speed == 0:
        return qx, qy
    chezy = kind == CHEZY
    num = dt * g * (speed / h) if chezy else dt * g * coef * coef * (speed / h)
    den = coef * coef * h if chezy else math.pow(h, 4.0 / 3.0)
    # h^(4/3) may underflow: q -> 0, the limit beta -> inf
    factor = 2.0 / (1.0 + math.sqrt(1.0 + 4.0 * (num / den))) if den > 0 else 0.0
    return qx * factor, qy * factor


@jit
def interfacial(h1, q1x, q1y, h2, q2x, q2y, coef, r, eps_h, dt):
    """``(q1x, q1y, q2x, q2y)`` after the exact decay of the shear ``s = u1 - u2`` over ``dt``.

    ``p = m w / (m + w)`` with ``w = dt c_i |s|`` and ``m = h1 h2 / (r h1 + h2)``: layer 1
    loses ``p s``, layer 2 gains ``r p s`` (``r q1 + q2`` is conserved). Nothing happens
    where a layer is dry or ``c_i = 0``.
    """
    if not (h1 > 0 and h2 > 0 and coef > 0):
        return q1x, q1y, q2x, q2y
    k1 = inverse_depth(h1, eps_h)
    k2 = inverse_depth(h2, eps_h)
    sx = q1x * k1 - q2x * k2
    sy = q1y * k1 - q2y * k2
    shear = math.sqrt(sx * sx + sy * sy)
    if shear == 0:
        return q1x, q1y, q2x, q2y
    m = h1 * h2 / (r * h1 + h2)
    w = dt * coef * shear
    p = m * w / (m + w)
    px = p * sx
    py = p * sy
    return q1x - px, q1y - py, q2x + r * px, q2y + r * py
