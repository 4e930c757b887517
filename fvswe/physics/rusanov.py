"""Single-layer Rusanov (local Lax-Friedrichs) per-edge kernel (docs/SCHEMES.md §6.1).

HLL's fluctuation form (:mod:`fvswe.physics.hll`) with ``(alpha0, alpha1) = (s, 0)``,
``s = max(|un_i| + c_i, |un_j| + c_j)``, and the same viscosity on the tangential
momentum, so that on a flat bed ``F-`` is the textbook Rusanov flux minus ``F(U_i)``. No
NumPy module: its reference is this kernel looped (:mod:`fvswe.schemes.looped`).
"""

from __future__ import annotations

import math

from .common import as_inputs1, assemble1, edge1, jit, total_fluctuation1
from .hll import viscous_split1


@jit
def local_speed(L, g):
    """``s = max(|un_i| + c_i, |un_j| + c_j)``: the largest wave speed of either side."""
    return max(abs(L.uni) + math.sqrt(g * L.hi), abs(L.unj) + math.sqrt(g * L.hj))


@jit
def flux1(Wi, Wj, Hi, Hj, ex, ey, g, r, eps_h):
    """Single-layer Rusanov: ``(F- 3-tuple, F+ 3-tuple, ||D||_inf = s, flag = 0)``."""
    Wi, Wj, Hi, Hj, ex, ey = as_inputs1(Wi, Wj, Hi, Hj, ex, ey)
    L, DH = edge1(Wi, Wj, Hi, Hj, ex, ey, g, eps_h)
    v = total_fluctuation1(L, DH)
    vt = L.qnj * L.utj - L.qni * L.uti
    s = local_speed(L, g)
    m0, m1 = viscous_split1(v, L, DH, s, 0.0)
    mt = 0.5 * (vt - s * L.dqt)
    Fm = assemble1((m0, m1, mt), ex, ey)
    Fp = assemble1((v[0] - m0, v[1] - m1, vt - mt), ex, ey)
    return Fm, Fp, s, 0
