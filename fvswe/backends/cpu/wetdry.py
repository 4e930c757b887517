"""Single-layer ``hll-wd`` per-edge kernel, mirroring :mod:`fvswe.schemes.wetdry` one for one.

HLL with the hydrostatic reconstruction of Audusse et al. (2004); the formulas
and the reasons for the choice are in the reference module's docstring.
"""

from __future__ import annotations

from .common import (
    as_inputs1,
    assemble1,
    edge1,
    inverse_depth,
    jit,
    total_fluctuation1,
    upwind_tangential,
)
from .hll import einfeldt_speeds, hll_coefficients, viscous_split1


@jit
def reconstruct(h, qx, qy, H, Hm, eps_h):
    """One side's ``h*, qx*, qy*`` and the desingularised ``ux, uy`` (§8)."""
    hs = h if Hm == H else max(0.0, (h - H) + Hm)
    k = inverse_depth(h, eps_h)
    ux = qx * k
    uy = qy * k
    if hs == h:
        return hs, qx, qy, ux, uy
    return hs, hs * ux, hs * uy, ux, uy


@jit
def correction(qns, qx, qy, ux, uy, ex, ey):
    """``m (1, ux, uy)`` with ``m = q*.eta - q.eta`` as a 3-tuple."""
    m = qns - (qx * ex + qy * ey)
    return (m, m * ux, m * uy)


@jit
def flux1(Wi, Wj, Hi, Hj, ex, ey, g, r, eps_h):
    """``hll-wd``: ``(F- 3-tuple, F+ 3-tuple, ||D||_inf, flag = 0)``."""
    Wi, Wj, Hi, Hj, ex, ey = as_inputs1(Wi, Wj, Hi, Hj, ex, ey)
    Hm = min(Hi, Hj)
    hi, qxi, qyi, uxi, uyi = reconstruct(Wi[0], Wi[1], Wi[2], Hi, Hm, eps_h)
    hj, qxj, qyj, uxj, uyj = reconstruct(Wj[0], Wj[1], Wj[2], Hj, Hm, eps_h)
    L, DH = edge1((hi, qxi, qyi), (hj, qxj, qyj), Hm, Hm, ex, ey, g, eps_h)
    v = total_fluctuation1(L, DH)
    sl, sr = einfeldt_speeds(L, g)
    a0, a1 = hll_coefficients(sl, sr)
    m0, m1 = viscous_split1(v, L, DH, a0, a1)
    tm, tp = upwind_tangential(L.qni + m0, L.qni, L.qnj, L.uti, L.utj)
    A = assemble1((m0, m1, tm), ex, ey)
    B = assemble1((v[0] - m0, v[1] - m1, tp), ex, ey)
    ci = correction(L.qni, Wi[1], Wi[2], uxi, uyi, ex, ey)
    cj = correction(L.qnj, Wj[1], Wj[2], uxj, uyj, ex, ey)
    Fm = (A[0] + ci[0], A[1] + ci[1], A[2] + ci[2])
    Fp = (B[0] - cj[0], B[1] - cj[1], B[2] - cj[2])
    return Fm, Fp, max(abs(sl), abs(sr)), 0


#: ``hll-wd`` exists for one layer only.
flux = flux1
