"""Bottom and interfacial friction: NumPy reference, vectorised over cells (docs/SCHEMES.md §14).

Applied in the volume pass after a cell's update (the flux increment, the clip and the
thin-layer damping), with the depths of the updated state. The scalar functions of
:mod:`fvswe.physics.friction` (Numba on the CPU, emitted for CUDA) mirror these one for
one, with the same order of floating-point operations, all in float64.

- **Bottom friction** (Chézy or Manning) on the one layer, or on the lower layer of two,
  is one backward-Euler step of ``dq/dt = -K |q| q`` from the updated ``q*``, solved
  exactly: ``q = q* 2 / (1 + sqrt(1 + 4 beta))`` with ``beta = dt K |q*|``. Its
  discrete steady state with any explicit driving term is the exact balance, so a
  uniform flow down a slope has exactly the normal depth, and ``q`` never reverses.
- **Interfacial friction** ``tau = c_i |u1 - u2| (u1 - u2)`` exchanges momentum between
  the layers, ``dq1/dt = -tau``, ``dq2/dt = r tau``, conserving ``r q1 + q2`` (the total
  momentum ``rho1 h1 u1 + rho2 h2 u2`` over ``rho2``). With the depths frozen the shear
  ``s = u1 - u2`` decays as ``ds/dt = -c_i (1/h1 + r/h2) |s| s``, solved exactly:
  ``s -> s / (1 + w/m)``, ``w = dt c_i |s|``, ``m = h1 h2 / (r h1 + h2)``; the shear
  never reverses and a uniform state follows the ODE to round-off at any Δt.
"""

from __future__ import annotations

import math

import numpy as np

from ..physics.constants import CHEZY, FRICTION_KINDS  # noqa: F401
from .common import inverse_depth

#: The C library's ``pow`` element by element, as Numba's ``**`` calls it (NumPy's SIMD
#: ``power`` may differ in the last bit).
_libm_pow = np.vectorize(math.pow, otypes=[np.float64])


def bottom(h, qx, qy, kind: int, coef, g: float, dt: float):
    """``(qx, qy)`` after one backward-Euler bottom-friction step, solved exactly.

    ``beta = dt g |u| / (C^2 h)`` (Chézy, ``coef = C``) or ``dt g n^2 |u| / h^(4/3)``
    (Manning, ``coef = n``), ``|u| = |q| / h``; ``q <- q 2 / (1 + sqrt(1 + 4 beta))``.
    A dry cell (``h <= 0``) gets ``q = 0``, the limit ``beta -> inf``.
    """
    h, qx, qy, coef = np.broadcast_arrays(*(np.asarray(a, dtype=np.float64)
                                            for a in (h, qx, qy, coef)))  # fmt: skip
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        speed = np.sqrt(qx * qx + qy * qy)
        if kind == CHEZY:
            num = dt * g * (speed / h)
            den = coef * coef * h
        else:
            num = dt * g * coef * coef * (speed / h)
            den = _libm_pow(h, 4.0 / 3.0)
        # h^(4/3) may underflow: q -> 0, the limit beta -> inf
        factor = np.where(den > 0, 2.0 / (1.0 + np.sqrt(1.0 + 4.0 * (num / den))), 0.0)
    wet = h > 0
    still = wet & (speed == 0)
    fx = np.where(still, qx, np.where(wet, qx * factor, 0.0))
    fy = np.where(still, qy, np.where(wet, qy * factor, 0.0))
    return fx, fy


def interfacial(h1, q1x, q1y, h2, q2x, q2y, coef, r: float, eps_h: float, dt: float):
    """``(q1x, q1y, q2x, q2y)`` after the exact decay of the interlayer shear over ``dt``.

    ``s = u1 - u2`` (desingularised velocities, §8), ``w = dt c_i |s|``,
    ``m = h1 h2 / (r h1 + h2)`` and ``p = m w / (m + w)``: layer 1 loses ``p s`` and
    layer 2 gains ``r p s``, so ``r q1 + q2`` is unchanged and ``s`` shrinks to
    ``s / (1 + w/m)``. Nothing happens where a layer is dry or ``c_i = 0``.
    """
    arrays = (h1, q1x, q1y, h2, q2x, q2y, coef)
    h1, q1x, q1y, h2, q2x, q2y, coef = np.broadcast_arrays(
        *(np.asarray(a, dtype=np.float64) for a in arrays)
    )
    k1 = inverse_depth(h1, eps_h)
    k2 = inverse_depth(h2, eps_h)
    sx = q1x * k1 - q2x * k2
    sy = q1y * k1 - q2y * k2
    with np.errstate(divide="ignore", invalid="ignore"):
        shear = np.sqrt(sx * sx + sy * sy)
        m = h1 * h2 / (r * h1 + h2)
        w = dt * coef * shear
        p = m * w / (m + w)
    live = (h1 > 0) & (h2 > 0) & (coef > 0) & (shear > 0)
    px = np.where(live, p * sx, 0.0)
    py = np.where(live, p * sy, 0.0)
    out1 = np.where(live, q1x - px, q1x), np.where(live, q1y - py, q1y)
    out2 = np.where(live, q2x + r * px, q2x), np.where(live, q2y + r * py, q2y)
    return (*out1, *out2)


def apply(W, kind: int, coef, interfacial_coef, g: float, r: float, eps_h: float, dt: float):
    """Friction on updated states ``W`` ``(L, 3)`` or ``(L, 6)``: a new array.

    Two layers: the interfacial exchange first (where ``interfacial_coef`` is not None),
    then the bottom friction on the lower layer (``kind`` != 0); one layer: the bottom
    friction. ``coef`` and ``interfacial_coef`` are scalars or per-cell arrays.
    """
    W = np.array(W, dtype=np.float64)
    if W.shape[1] == 6 and interfacial_coef is not None:
        W[:, 1], W[:, 2], W[:, 4], W[:, 5] = interfacial(
            W[:, 0], W[:, 1], W[:, 2], W[:, 3], W[:, 4], W[:, 5], interfacial_coef, r, eps_h, dt
        )
    if kind:
        b = W.shape[1] - 3  # the layer on the bed
        W[:, b + 1], W[:, b + 2] = bottom(W[:, b], W[:, b + 1], W[:, b + 2], kind, coef, g, dt)
    return W
