"""Single-layer ``hll-wd`` per-edge kernel, mirroring :mod:`fvswe.schemes.wetdry` one for one.

HLL with the hydrostatic reconstruction of Audusse et al. (2004); the formulas
and the reasons for the choice are in the reference module's docstring.
"""

from __future__ import annotations

from .common import (
    as_inputs1,
    assemble1,
    corrected,
    jit,
    moving_side,
    reconstructed_layer,
    total_fluctuation1,
    upwind_tangential,
)
from .hll import einfeldt_speeds, hll_coefficients, viscous_split1


@jit
def reconstruct(h, qx, qy, H, Hm, ex, ey, eps_h):
    """One side, rotated: ``h*, un, ut, qn, un*, ut*`` (``u*`` = 0 where ``h*`` = 0)."""
    hs = h if Hm == H else max(0.0, (h - H) + Hm)
    un, ut, qn, us, vs = moving_side(hs, h, qx, qy, ex, ey, eps_h)
    return hs, un, ut, qn, us, vs


@jit
def flux1(Wi, Wj, Hi, Hj, ex, ey, g, r, eps_h):
    """``hll-wd``: ``(F- 3-tuple, F+ 3-tuple, ||D||_inf, flag = 0)``."""
    Wi, Wj, Hi, Hj, ex, ey = as_inputs1(Wi, Wj, Hi, Hj, ex, ey)
    Hm = min(Hi, Hj)
    hi, uni, uti, qni, usi, vsi = reconstruct(Wi[0], Wi[1], Wi[2], Hi, Hm, ex, ey, eps_h)
    hj, unj, utj, qnj, usj, vsj = reconstruct(Wj[0], Wj[1], Wj[2], Hj, Hm, ex, ey, eps_h)
    L = reconstructed_layer(hi, usi, vsi, hj, usj, vsj, g)
    DH = Hm - Hm
    v = total_fluctuation1(L, DH)
    sl, sr = einfeldt_speeds(L, g)
    a0, a1 = hll_coefficients(sl, sr)
    m0, m1 = viscous_split1(v, L, DH, a0, a1)
    tm, tp = upwind_tangential(L.qni + m0, L.qni, L.qnj, L.uti, L.utj)
    C = (L.qni - qni, uni, uti, L.qnj - qnj, unj, utj)
    Fm, Fp = corrected((m0, m1, tm), (v[0] - m0, v[1] - m1, tp), C)
    Fm = assemble1(Fm, ex, ey)
    Fp = assemble1(Fp, ex, ey)
    return Fm, Fp, max(abs(sl), abs(sr)), 0


#: ``hll-wd`` exists for one layer only.
flux = flux1
