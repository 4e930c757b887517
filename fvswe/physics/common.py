"""Numba per-edge building blocks, mirroring :mod:`fvswe.schemes.common` one for one.

Scalar code on float tuples, compiled with ``@njit(cache=True)`` and no
fastmath, with the reference's order of floating-point operations so the two
agree to round-off. NumPy's error model: a division by zero gives inf or NaN (as
in CUDA), which the blow-up check reports, instead of raising ZeroDivisionError
from deep inside a kernel. Inputs of any float type are promoted to float64 on entry
(:func:`as_inputs2`, :func:`as_inputs1`); all arithmetic and the outputs are float64.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from .constants import (
    FLAG_NEAR_COINCIDENT,
    FLAG_NONHYPERBOLIC,
    FLAG_THIN,
    NEAR_COINCIDENT,
    NEWTON_MAXIT,
    NEWTON_TOL,
    OUTRUN_REACH,
    PAIR_GAP,
    PIERCED_RATIO,
    POLISH_REACH,
    POLISH_STEPS,
    SQRT2,
    Layer,
)

__all__ = [
    "FLAG_NEAR_COINCIDENT",
    "FLAG_NONHYPERBOLIC",
    "FLAG_THIN",
    "NEAR_COINCIDENT",
    "PAIR_GAP",
    "Layer",
]

#: float32 values of the constants whose float64 value is below float32 resolution, for the
#: float32 GPU modules (the CPU computes in float64); fvswe.codegen emits both (docs/CODEGEN.md).
FLOAT32 = {
    "NEWTON_TOL": 1e-6,
    "NEAR_COINCIDENT": 1e-3,
    "POLISH_REACH": 1e-3,
    "RUSANOV_GAP": float(np.finfo(np.float32).eps),  # as HySEA does (docs/SCHEMES.md §5.2)
    "DRY_DEPTH": float(np.finfo(np.float32).tiny),  # 1/DRY_DEPTH finite in float32 (§5.1)
}

jit = njit(cache=True, error_model="numpy")
#: For the per-edge setup that returns large tuples: inlined at the Numba IR level so that
#: LLVM sees through it (saves the stores/loads of a 17-field struct per layer).
jit_inline = njit(cache=True, inline="always", error_model="numpy")


def exact(func):
    """:data:`jit_inline`, and emitted for CUDA with every ``+ - * /`` rounded on its own
    (``fv_add`` etc.: never contracted into an FMA, also in float32 modules): for the
    formulas of the cell update and the limiter, whose sums must be the same in every GPU
    variant (docs/CODEGEN.md)."""
    func.fvswe_exact = True
    return jit_inline(func)


def bound(flux, fixed: bool):
    """The edge kernel ``flux(..., eps_h, fixed)`` with ``fixed`` bound (a compile-time
    constant): a registry kernel without a wrapper of its own (:data:`fvswe.registry.BOUND`)."""

    def kernel(Wi, Wj, Hi, Hj, ex, ey, g, r, eps_h):
        return flux(Wi, Wj, Hi, Hj, ex, ey, g, r, eps_h, fixed)

    kernel.__qualname__ = symbol_name(f"bound_{flux.__module__}_{flux.__name__}_{fixed}")
    return njit(error_model="numpy")(kernel)


def symbol_name(what: str) -> str:
    """A qualified name of its own for a compiled closure that a cached pass calls (not
    inlines). Numba names machine code by qualified name, types and a per-process counter,
    so two closures of one ``def`` compiled in two processes can share a name; loaded from
    Numba's cache into one process, calls to both then link to the first loaded (a one-layer
    float32 run after a two-layer one ran the two-layer fluxes)."""
    return "".join(c if c.isalnum() else "_" for c in what)


@jit
def s_minus(x):
    """``(1 - sgn x)/2`` with ``sgn 0 = 0`` (§0)."""
    if x > 0.0:
        return 0.0
    if x < 0.0:
        return 1.0
    return 0.5


@jit
def rotate(qx, qy, ex, ey):
    """``(q.eta, q.tau)`` (§0)."""
    return qx * ex + qy * ey, -qx * ey + qy * ex


@jit
def rotate_back(qn, qt, ex, ey):
    """Inverse of :func:`rotate`."""
    return qn * ex - qt * ey, qn * ey + qt * ex


@jit
def inverse_depth(h, eps_h):
    """Desingularised ``1/h`` (§8)."""
    if h >= eps_h:
        return 1.0 / h
    hh = max(h, eps_h)
    h2 = h * h
    m2 = hh * hh
    return SQRT2 * h / math.sqrt(h2 * h2 + m2 * m2)


@jit
def roe_weights(hi, hj):
    """``sqrt(h_i)/(sqrt h_i + sqrt h_j)`` and its mate; 0 on a dry edge (§3.1)."""
    si = math.sqrt(hi)
    sj = math.sqrt(hj)
    den = si + sj
    inv = 1.0 / den if den > 0.0 else 0.0
    return si * inv, sj * inv


@jit_inline
def averaged_layer(hi, hj, qni, qnj, qti, qtj, uni, unj, uti, utj, g):
    """The Layer of one layer's rotated states and velocities: Roe averages, jumps."""
    ai, aj = roe_weights(hi, hj)
    hbar = 0.5 * (hi + hj)
    return Layer(
        hi, hj, qni, qnj, qti, qtj, uni, unj, uti, utj,
        hbar, ai * uni + aj * unj, ai * uti + aj * utj, g * hbar,
        hj - hi, qnj - qni, qtj - qti,
    )  # fmt: skip


@jit_inline
def layer_edge(hi, qxi, qyi, hj, qxj, qyj, ex, ey, g, eps_h):
    """One layer rotated, with Roe averages and jumps (§0, §3.1)."""
    qni, qti = rotate(qxi, qyi, ex, ey)
    qnj, qtj = rotate(qxj, qyj, ex, ey)
    ki = inverse_depth(hi, eps_h)
    kj = inverse_depth(hj, eps_h)
    uni = qni * ki
    unj = qnj * kj
    uti = qti * ki
    utj = qtj * kj
    return averaged_layer(hi, hj, qni, qnj, qti, qtj, uni, unj, uti, utj, g)


@jit
def as_inputs2(Wi, Wj, Hi, Hj, ex, ey):
    """Two-layer edge inputs promoted to float64 (the reference's ``as_inputs``)."""
    f = np.float64
    Wi = (f(Wi[0]), f(Wi[1]), f(Wi[2]), f(Wi[3]), f(Wi[4]), f(Wi[5]))
    Wj = (f(Wj[0]), f(Wj[1]), f(Wj[2]), f(Wj[3]), f(Wj[4]), f(Wj[5]))
    return Wi, Wj, f(Hi), f(Hj), f(ex), f(ey)


@jit
def as_inputs1(Wi, Wj, Hi, Hj, ex, ey):
    """One-layer edge inputs promoted to float64."""
    f = np.float64
    Wi = (f(Wi[0]), f(Wi[1]), f(Wi[2]))
    Wj = (f(Wj[0]), f(Wj[1]), f(Wj[2]))
    return Wi, Wj, f(Hi), f(Hj), f(ex), f(ey)


@jit_inline
def edge2(Wi, Wj, Hi, Hj, ex, ey, g, eps_h):
    """Both layers of a two-layer edge (6-tuples) and ``DH``."""
    L1 = layer_edge(Wi[0], Wi[1], Wi[2], Wj[0], Wj[1], Wj[2], ex, ey, g, eps_h)
    L2 = layer_edge(Wi[3], Wi[4], Wi[5], Wj[3], Wj[4], Wj[5], ex, ey, g, eps_h)
    return L1, L2, Hj - Hi


@jit_inline
def edge1(Wi, Wj, Hi, Hj, ex, ey, g, eps_h):
    """The layer of a one-layer edge (3-tuples) and ``DH``."""
    L = layer_edge(Wi[0], Wi[1], Wi[2], Wj[0], Wj[1], Wj[2], ex, ey, g, eps_h)
    return L, Hj - Hi


@jit
def total_fluctuation(L1, L2, DH, r):
    """``v = A DU - S DH``, grouped form (§3.3)."""
    v0 = L1.dqn
    v1 = L1.c2 * (L1.dh + L2.dh - DH) - L1.u * L1.u * L1.dh + 2.0 * L1.u * L1.dqn
    v2 = L2.dqn
    v3 = L2.c2 * (r * L1.dh + L2.dh - DH) - L2.u * L2.u * L2.dh + 2.0 * L2.u * L2.dqn
    return v0, v1, v2, v3


@jit
def total_fluctuation1(L, DH):
    """Single-layer ``(v0, v1)`` (§6)."""
    return L.dqn, L.c2 * (L.dh - DH) - L.u * L.u * L.dh + 2.0 * L.u * L.dqn


@jit
def tangential_fluctuation(L):
    """``vt = -u w Dh + w Dqn + u Dqt`` (§3.3)."""
    return -L.u * L.w * L.dh + L.w * L.dqn + L.u * L.dqt


@jit
def thin_edge(L1, L2, DH, eps_h):
    """A layer thinner than ``eps_h`` on either side, the lower one thinner than the bed
    step ``|DH|`` and than ``PIERCED_RATIO`` of the water column, or the lower one outrunning
    the column's external waves (:func:`outrun`) (§5.2, §8, §13.1)."""
    h2 = min(L2.hi, L2.hj)
    if min(L1.hi, L1.hj) < eps_h or h2 < eps_h:
        return True
    column = min(L1.hi + L2.hi, L1.hj + L2.hj)
    if h2 < abs(DH) and h2 < PIERCED_RATIO * column:
        return True
    return outrun(L1, L2)


@jit
def outrun(L1, L2):
    """The lower layer's normal velocity on a side beyond the column's external waves
    ``U -+ sqrt(c1^2 + c2^2)`` (Roe averages), which the wet formulas do not see (§13.1).
    Reached only with both layers thicker than ``eps_h``, so ``hbar1 + hbar2 > 0``. ``U``
    lies between ``u1`` and ``u2``: a side that far from both of them (:func:`outrun_reach`)
    is needed, and on most edges its absence spares the division and the square root."""
    reach = outrun_reach(L1, L2)
    if reach * reach < OUTRUN_REACH * (L1.c2 + L2.c2):
        return False
    U = (L1.hbar * L1.u + L2.hbar * L2.u) / (L1.hbar + L2.hbar)
    c = math.sqrt(L1.c2 + L2.c2)
    return min(L2.uni, L2.unj) < U - c or max(L2.uni, L2.unj) > U + c


@jit
def outrun_reach(L1, L2):
    """How far a side's lower-layer normal velocity lies beyond ``u1`` and ``u2`` (>= 0)."""
    u_lo = min(L1.u, L2.u)
    u_hi = max(L1.u, L2.u)
    return max(max(L2.uni, L2.unj) - u_lo, u_hi - min(L2.uni, L2.unj))


@jit
def hydrostatic_depths(h1, h2, H, Hm):
    """One side's ``(h1*, h2*)`` over the bed ``Hm``, keeping its surface and interface (§13)."""
    if Hm == H:
        return h1, h2
    ht = max(0.0, ((h1 + h2) - H) + Hm)
    h2s = min(ht, max(0.0, (h2 - H) + Hm))
    return ht - h2s, h2s


@jit
def moving_side(hs, h, qx, qy, ex, ey, eps_h):
    """One side of a reconstructed layer, rotated: ``(un, ut, qn, un*, ut*)``."""
    qn, qt = rotate(qx, qy, ex, ey)
    k = inverse_depth(h, eps_h)
    un = qn * k
    ut = qt * k
    if hs > 0.0:
        return un, ut, qn, un, ut
    return un, ut, qn, 0.0, 0.0


@jit_inline
def reconstructed_layer(hi, uni, uti, hj, unj, utj, g):
    """The Layer of the states ``(h, h u)`` with the velocities as given."""
    qni = hi * uni
    qti = hi * uti
    qnj = hj * unj
    qtj = hj * utj
    return averaged_layer(hi, hj, qni, qnj, qti, qtj, uni, unj, uti, utj, g)


@jit
def corrected(Dm, Dp, C):
    """One reconstructed layer's ``(D-, D+)`` brought back to the cells' states (§13).

    ``C = (ci, uni, uti, cj, unj, utj)``.
    """
    ci, uni, uti, cj, unj, utj = C
    Fm = (Dm[0] + ci, Dm[1] + ci * uni, Dm[2] + ci * uti)
    Fp = (Dp[0] - cj, Dp[1] - cj * unj, Dp[2] - cj * utj)
    return Fm, Fp


@jit_inline
def reconstructed_side(Wi, Wj, k, hi, hj, ex, ey, g, eps_h):
    """Layer ``k`` (component offset 0 or 3) of a reconstructed edge: ``(L*, correction)``."""
    uni, uti, qni, usi, vsi = moving_side(hi, Wi[k], Wi[k + 1], Wi[k + 2], ex, ey, eps_h)
    unj, utj, qnj, usj, vsj = moving_side(hj, Wj[k], Wj[k + 1], Wj[k + 2], ex, ey, eps_h)
    L = reconstructed_layer(hi, usi, vsi, hj, usj, vsj, g)
    return L, (L.qni - qni, uni, uti, L.qnj - qnj, unj, utj)


@jit_inline
def reconstructed_edge2(Wi, Wj, Hi, Hj, ex, ey, g, eps_h):
    """Both layers reconstructed over ``Hm = min(H_i, H_j)``: ``(L1*, L2*, C1, C2)`` (§13)."""
    Hm = min(Hi, Hj)
    h1i, h2i = hydrostatic_depths(Wi[0], Wi[3], Hi, Hm)
    h1j, h2j = hydrostatic_depths(Wj[0], Wj[3], Hj, Hm)
    L1, C1 = reconstructed_side(Wi, Wj, 0, h1i, h1j, ex, ey, g, eps_h)
    L2, C2 = reconstructed_side(Wi, Wj, 3, h2i, h2j, ex, ey, g, eps_h)
    return L1, L2, C1, C2


@jit
def reconstructed_speeds(l1, l4, L1, L2, g):
    """``(SL, SR)``: ``l1, l4`` widened to bound each side's layer velocities (§13)."""
    sl = min(l1, min(L1.uni, L2.uni) - math.sqrt(g * (L1.hi + L2.hi)))
    sr = max(l4, max(L1.unj, L2.unj) + math.sqrt(g * (L1.hj + L2.hj)))
    return sl, sr


@jit
def quartic(x, u1, u2, c1sq, c2sq, r):
    """``f(x)`` and ``f'(x)`` of the 4x4 normal matrix (§3.4)."""
    y1 = x - u1
    y2 = x - u2
    p1 = y1 * y1 - c1sq
    p2 = y2 * y2 - c2sq
    return p1 * p2 - r * c1sq * c2sq, 2.0 * (y1 * p2 + y2 * p1)


@jit
def nonpositive(u1, u2, c1sq, c2sq, r):
    """How many of a cell's eigenvalues are ``<= 0``, at least, without EIG4 (§3.6)."""
    p1 = u1 * u1 - c1sq
    p2 = u2 * u2 - c2sq
    f0 = p1 * p2 - r * c1sq * c2sq
    below1 = u1 <= 0.0 and p1 >= 0.0
    below2 = u2 <= 0.0 and p2 >= 0.0
    above1 = u1 >= 0.0 and p1 >= 0.0
    above2 = u2 >= 0.0 and p2 >= 0.0
    if (u1 <= 0.0 or p1 <= 0.0) and (u2 <= 0.0 or p2 <= 0.0) and (below1 or below2):
        return 4 if below1 and below2 and f0 >= 0.0 else 3
    if (u1 >= 0.0 or p1 <= 0.0) and (u2 >= 0.0 or p2 <= 0.0) and (above1 or above2):
        return 0 if above1 and above2 and f0 > 0.0 else 1
    if (p1 < 0.0 and p2 < 0.0) or (p1 > 0.0 and p2 > 0.0 and u1 * u2 < 0.0):
        if f0 >= 0.0:
            return 2
        return 3 if u1 * p2 + u2 * p1 > 0.0 else 1
    return 0


@jit
def polish(x, u1, u2, c1sq, c2sq, r):
    """One Newton step on ``f``, skipped where ``f' = 0``."""
    f, fp = quartic(x, u1, u2, c1sq, c2sq, r)
    if fp != 0.0:
        return x - f / fp
    return x


@jit
def eig4(u1, u2, c1sq, c2sq, r):
    """Algorithm EIG4 (§3.4): ``(lambda1, lambda2, lambda3, lambda4, disc)``.

    Shear-free start (see the reference), at most NEWTON_MAXIT Newton steps per
    external root (both roots iterate in one loop), deflation, POLISH_STEPS
    polishing steps per internal root, kept unless one was :func:`thrown`.
    """
    c1 = math.sqrt(c1sq)
    c2 = math.sqrt(c2sq)
    m1 = min(u1 - c1, u2 - c2)
    M4 = max(u1 + c1, u2 + c2)
    csum = c1sq + c2sq
    U = (u1 * c1sq + u2 * c2sq) / csum
    cext = math.sqrt(csum)
    d = c1sq - c2sq
    sext = math.sqrt(0.5 * (csum + math.sqrt(d * d + 4.0 * r * c1sq * c2sq)))
    x1 = U - sext
    if not x1 < m1:
        x1 = min(U - cext, m1)
        if quartic(x1, u1, u2, c1sq, c2sq, r)[0] < 0.0:
            x1 = m1 - math.sqrt(c1 * c2)
    x4 = U + sext
    if not x4 > M4:
        x4 = max(U + cext, M4)
        if quartic(x4, u1, u2, c1sq, c2sq, r)[0] < 0.0:
            x4 = M4 + math.sqrt(c1 * c2)
    done1 = False
    done4 = False
    for _ in range(NEWTON_MAXIT):
        if not done1:
            f, fp = quartic(x1, u1, u2, c1sq, c2sq, r)
            dx = f / fp
            x1 = x1 - dx
            done1 = abs(dx) <= NEWTON_TOL * (abs(x1) + cext)
        if not done4:
            f, fp = quartic(x4, u1, u2, c1sq, c2sq, r)
            dx = f / fp
            x4 = x4 - dx
            done4 = abs(dx) <= NEWTON_TOL * (abs(x4) + cext)
        if done1 and done4:
            break
    a = -2.0 * (u1 + u2)
    b = (u1 * u1 - c1sq) + 4.0 * u1 * u2 + (u2 * u2 - c2sq)
    s = x1 + x4
    p = x1 * x4
    Bq = a + s
    Cq = b + s * Bq - p
    disc = Bq * Bq - 4.0 * Cq
    sq = math.sqrt(max(disc, 0.0))
    x2 = 0.5 * (-Bq - sq)
    x3 = 0.5 * (-Bq + sq)
    y2 = x2
    y3 = x3
    for _ in range(POLISH_STEPS):
        y2 = polish(y2, u1, u2, c1sq, c2sq, r)
        y3 = polish(y3, u1, u2, c1sq, c2sq, r)
    if disc >= 0.0 and x1 < y2 and y2 < y3 and y3 < x4:
        reach = POLISH_REACH * (x4 - x1)  # POLISH_REACH 1: no guard (float64)
        if POLISH_REACH >= 1.0 or not (
            thrown(y2, x2, reach, u1, u2, c1sq, c2sq, r)
            or thrown(y3, x3, reach, u1, u2, c1sq, c2sq, r)
        ):
            return x1, y2, y3, x4, disc
    return x1, x2, x3, x4, disc


@jit
def thrown(y, x, reach, u1, u2, c1sq, c2sq, r):
    """The polished root ``y`` of the deflated ``x`` moved by more than ``reach`` and raised
    ``|f|``: a Newton step thrown off a near-double root, where ``f'`` vanishes (§3.4)."""
    if abs(y - x) <= reach:
        return False
    return abs(quartic(y, u1, u2, c1sq, c2sq, r)[0]) > abs(quartic(x, u1, u2, c1sq, c2sq, r)[0])


@jit
def eigen_coefficient(lam, v, u1, u2, c1sq, c2sq, r):
    """``(l_m . v, a_m)`` for the eigenvalue ``lam`` (§3.4)."""
    v0, v1, v2, v3 = v
    y1 = lam - u1
    a = (y1 * y1 - c1sq) / c1sq
    rc2 = r * c2sq
    ac1 = a * c1sq
    delta = 2.0 * (rc2 * y1 + a * ac1 * (lam - u2))
    num = (lam - 2.0 * u1) * rc2 * v0 + rc2 * v1 + ((lam - 2.0 * u2) * v2 + v3) * ac1
    return num / delta, a


@jit
def harten_hyman(lam, lam_l, lam_r):
    """Harten-Hyman weight of one wave and its speed bound (§3.6); ``(0, 0)`` unless transonic."""
    if lam_l < 0.0 and lam_r > 0.0:
        return lam_l * ((lam_r - lam) / (lam_r - lam_l)) - min(lam, 0.0), max(-lam_l, lam_r)
    return 0.0, 0.0


@jit
def upwind_tangential(Phi, qni, qnj, uti, utj):
    """``(D-_qt, D+_qt)`` upwinded with the mass flux ``Phi`` (§4)."""
    ut = uti if Phi > 0.0 else (utj if Phi < 0.0 else 0.0)
    flow = Phi * ut
    return flow - qni * uti, qnj * utj - flow


@jit
def assemble2(D, ex, ey):
    """``T^{-1}`` of a rotated 6-vector, as a 6-tuple."""
    d0, d1, t1, d2, d3, t2 = D
    q1x, q1y = rotate_back(d1, t1, ex, ey)
    q2x, q2y = rotate_back(d3, t2, ex, ey)
    return (d0, q1x, q1y, d2, q2x, q2y)


@jit
def assemble1(D, ex, ey):
    """``T^{-1}`` of a rotated 3-vector, as a 3-tuple."""
    d0, d1, t = D
    qx, qy = rotate_back(d1, t, ex, ey)
    return (d0, qx, qy)


@jit
def wall_ghost(W, ex, ey):
    """Wall ghost of a 6-tuple (§7.1): ``q -> q - 2 (q.eta) eta`` per layer."""
    p1 = W[1] * ex + W[2] * ey
    p2 = W[4] * ex + W[5] * ey
    return (
        W[0], W[1] - 2.0 * p1 * ex, W[2] - 2.0 * p1 * ey,
        W[3], W[4] - 2.0 * p2 * ex, W[5] - 2.0 * p2 * ey,
    )  # fmt: skip


@jit_inline
def constant_faces(Wi, Wj):
    """The piecewise-constant reconstruction (:data:`fvswe.registry.RECONSTRUCTIONS`): an edge's
    face states are its cells' states."""
    return Wi, Wj
