"""PVM-IFCP per-edge kernel (docs/SCHEMES.md §5), mirroring :mod:`fvswe.schemes.pvm_ifcp`.

``flux`` is the two-layer kernel; ``flux1`` (one layer) is HLL (§6).
"""

from __future__ import annotations

import math

from . import hll
from .common import (
    FLAG_NONHYPERBOLIC,
    FLAG_THIN,
    as_inputs2,
    assemble2,
    corrected,
    edge2,
    jit,
    reconstructed_edge2,
    reconstructed_speeds,
    thin_edge,
    total_fluctuation,
    upwind_tangential,
)
from .constants import DRY_DEPTH, RUSANOV_GAP


@jit
def approx_eigenvalues(L1, L2, r):
    """Sorted approximate eigenvalues and the approximate hyperbolicity test (§5.1)."""
    h1 = L1.hbar
    h2 = L2.hbar
    Hs = h1 + h2
    wet = Hs > DRY_DEPTH
    inv = 1.0 / Hs if wet else 0.0
    U = (h1 * L1.u + h2 * L2.u) * inv
    Uc = (h1 * L2.u + h2 * L1.u) * inv
    csum = L1.c2 + L2.c2
    cext = math.sqrt(csum)
    du = L1.u - L2.u
    gp = (1.0 - r) * csum
    crit = 1.0 - du * du * (1.0 / gp if gp > DRY_DEPTH else 0.0)
    cint = math.sqrt((1.0 - r) * L1.c2 * h2 * inv * abs(crit))
    e1 = U - cext
    e4 = U + cext
    i2 = Uc - cint
    i3 = Uc + cint
    return min(e1, i2), max(e1, i2), min(e4, i3), max(e4, i3), crit >= 0.0


@jit
def ifcp_coefficients(l1, l4, chi):
    """``(alpha0, alpha1, alpha2)`` interpolating ``|x|`` at ``l1, l4, chi``; Rusanov if close."""
    a1 = abs(l1)
    a4 = abs(l4)
    gap = min(min(abs(l1 - l4), abs(l1 - chi)), abs(l4 - chi))
    if gap <= RUSANOV_GAP * (a1 + a4):
        return max(a1, a4), 0.0, 0.0
    d14 = l1 - l4
    d1c = l1 - chi
    d4c = l4 - chi
    inv = 1.0 / (d14 * d1c * d4c)
    d1 = a1 * d4c * inv
    d4 = -a4 * d1c * inv
    dc = abs(chi) * d14 * inv
    alpha2 = d1 + d4 + dc
    alpha1 = -(d1 * (l4 + chi) + d4 * (l1 + chi) + dc * (l1 + l4))
    alpha0 = d1 * l4 * chi + d4 * l1 * chi + dc * l1 * l4
    return alpha0, alpha1, alpha2


@jit
def viscous_split2(v, L1, L2, DH, r, a0, a1, a2):
    """``D-_4 = (v - Vis)/2``, ``Vis = alpha0 wj + alpha1 v + alpha2 A v`` (§5.3)."""
    v0, v1, v2, v3 = v
    u1 = L1.u
    u2 = L2.u
    c1 = L1.c2
    c2 = L2.c2
    Av1 = (c1 - u1 * u1) * v0 + 2.0 * u1 * v1 + c1 * v2
    Av3 = r * c2 * v0 + (c2 - u2 * u2) * v2 + 2.0 * u2 * v3
    return (
        0.5 * (v0 - (a0 * L1.dh + a1 * v0 + a2 * v1)),
        0.5 * (v1 - (a0 * L1.dqn + a1 * v1 + a2 * Av1)),
        0.5 * (v2 - (a0 * (L2.dh - DH) + a1 * v2 + a2 * v3)),
        0.5 * (v3 - (a0 * L2.dqn + a1 * v3 + a2 * Av3)),
    )


@jit
def flux2(Wi, Wj, Hi, Hj, ex, ey, g, r, eps_h):
    """Two-layer PVM-IFCP: ``(F- 6-tuple, F+ 6-tuple, ||D||_inf, flag)`` (§5, §13)."""
    Wi, Wj, Hi, Hj, ex, ey = as_inputs2(Wi, Wj, Hi, Hj, ex, ey)
    L1, L2, DH = edge2(Wi, Wj, Hi, Hj, ex, ey, g, eps_h)
    if thin_edge(L1, L2, DH, eps_h):
        return thin_flux2(Wi, Wj, Hi, Hj, ex, ey, g, r, eps_h)
    v = total_fluctuation(L1, L2, DH, r)
    l1, l2, l3, l4, hyperbolic = approx_eigenvalues(L1, L2, r)
    S = -1.0 if l1 + l4 < 0.0 else 1.0
    chi = S * max(abs(l2), abs(l3))
    a0, a1, a2 = ifcp_coefficients(l1, l4, chi)
    m = viscous_split2(v, L1, L2, DH, r, a0, a1, a2)
    t1m, t1p = upwind_tangential(L1.qni + m[0], L1.qni, L1.qnj, L1.uti, L1.utj)
    t2m, t2p = upwind_tangential(L2.qni + m[2], L2.qni, L2.qnj, L2.uti, L2.utj)
    Fm = assemble2((m[0], m[1], t1m, m[2], m[3], t2m), ex, ey)
    Fp = assemble2((v[0] - m[0], v[1] - m[1], t1p, v[2] - m[2], v[3] - m[3], t2p), ex, ey)
    return Fm, Fp, max(abs(l1), abs(l4)), 0 if hyperbolic else FLAG_NONHYPERBOLIC


@jit
def thin_flux2(Wi, Wj, Hi, Hj, ex, ey, g, r, eps_h):
    """A thin edge: both interfaces reconstructed, HLL with widened speeds (§13), flag 4."""
    L1, L2, C1, C2 = reconstructed_edge2(Wi, Wj, Hi, Hj, ex, ey, g, eps_h)
    v = total_fluctuation(L1, L2, 0.0, r)
    l1, l2, l3, l4, hyperbolic = approx_eigenvalues(L1, L2, r)
    sl, sr = reconstructed_speeds(l1, l4, L1, L2, g)
    a0, a1 = hll.hll_coefficients(sl, sr)
    m = viscous_split2(v, L1, L2, 0.0, r, a0, a1, 0.0)
    t1m, t1p = hll.hll_tangential(L1, a0, a1)
    t2m, t2p = hll.hll_tangential(L2, a0, a1)
    Fm1, Fp1 = corrected((m[0], m[1], t1m), (v[0] - m[0], v[1] - m[1], t1p), C1)
    Fm2, Fp2 = corrected((m[2], m[3], t2m), (v[2] - m[2], v[3] - m[3], t2p), C2)
    Fm = assemble2((Fm1[0], Fm1[1], Fm1[2], Fm2[0], Fm2[1], Fm2[2]), ex, ey)
    Fp = assemble2((Fp1[0], Fp1[1], Fp1[2], Fp2[0], Fp2[1], Fp2[2]), ex, ey)
    flag = FLAG_THIN if hyperbolic else FLAG_THIN | FLAG_NONHYPERBOLIC
    return Fm, Fp, max(abs(sl), abs(sr)), flag


flux = flux2
flux1 = hll.flux1
