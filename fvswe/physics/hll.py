"""Single-layer HLL per-edge kernel (docs/SCHEMES.md §6), mirroring :mod:`fvswe.schemes.hll`."""

from __future__ import annotations

import math

from .common import as_inputs1, assemble1, edge1, jit, total_fluctuation1, upwind_tangential


@jit
def hll_coefficients(sl, sr):
    """``(alpha0, alpha1)`` interpolating ``|x|`` at ``sl < sr``; Rusanov if ``sr <= sl``."""
    asl = abs(sl)
    asr = abs(sr)
    if sr > sl:
        den = sr - sl
        return (sr * asl - sl * asr) / den, (asr - asl) / den
    return max(asl, asr), 0.0


@jit
def hll_tangential(L, a0, a1):
    """``(D-_qt, D+_qt)`` of HLL's viscosity ``a0 + a1 A`` on the tangential discharge (§13.3)."""
    vt = L.qnj * L.utj - L.qni * L.uti
    dm = 0.5 * (vt - (a0 * L.dqt + a1 * vt))
    return dm, vt - dm


@jit
def einfeldt_speeds(L, g):
    """``SL = min(u - c, un_i - c_i)``, ``SR = max(u + c, un_j + c_j)``."""
    c = math.sqrt(L.c2)
    sl = min(L.u - c, L.uni - math.sqrt(g * L.hi))
    sr = max(L.u + c, L.unj + math.sqrt(g * L.hj))
    return sl, sr


@jit
def viscous_split1(v, L, DH, a0, a1):
    """``D-_2 = (v - Vis)/2``, ``Vis = alpha0 (Dh - DH, Dqn) + alpha1 v``."""
    v0, v1 = v
    return 0.5 * (v0 - (a0 * (L.dh - DH) + a1 * v0)), 0.5 * (v1 - (a0 * L.dqn + a1 * v1))


@jit
def flux1(Wi, Wj, Hi, Hj, ex, ey, g, r, eps_h):
    """Single-layer HLL: ``(F- 3-tuple, F+ 3-tuple, ||D||_inf, flag = 0)``."""
    Wi, Wj, Hi, Hj, ex, ey = as_inputs1(Wi, Wj, Hi, Hj, ex, ey)
    L, DH = edge1(Wi, Wj, Hi, Hj, ex, ey, g, eps_h)
    v = total_fluctuation1(L, DH)
    sl, sr = einfeldt_speeds(L, g)
    a0, a1 = hll_coefficients(sl, sr)
    m0, m1 = viscous_split1(v, L, DH, a0, a1)
    tm, tp = upwind_tangential(L.qni + m0, L.qni, L.qnj, L.uti, L.utj)
    Fm = assemble1((m0, m1, tm), ex, ey)
    Fp = assemble1((v[0] - m0, v[1] - m1, tp), ex, ey)
    return Fm, Fp, max(abs(sl), abs(sr)), 0


#: HLL exists for one layer only.
flux = flux1
