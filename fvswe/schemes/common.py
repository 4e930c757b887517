"""Building blocks shared by every scheme: NumPy reference, vectorised over edges.

Index conventions follow docs/SCHEMES.md §0 exactly: two-layer states are
``(h1, q1x, q1y, h2, q2x, q2y)``, the rotated normal 4-vector is
``U = (h1, q1n, h2, q2n)`` and the tangent is ``tau = (-ey, ex)``.
Everything is computed in float64. The Numba kernels in
:mod:`fvswe.physics.common` mirror these functions one for one, with the
same order of floating-point operations.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..errors import ConfigError
from ..physics.constants import (
    NEWTON_MAXIT,
    NEWTON_TOL,
    OUTRUN_REACH,
    PIERCED_RATIO,
    POLISH_REACH,
    POLISH_STEPS,
    SQRT2,
    Layer,
)


def s_minus(x: np.ndarray) -> np.ndarray:
    """Splitting weight ``s-(x) = (1 - sgn x)/2`` with ``sgn 0 = 0`` (§0)."""
    return 0.5 * (1.0 - np.sign(x))


def rotate(qx: np.ndarray, qy: np.ndarray, ex: np.ndarray, ey: np.ndarray):
    """``(qn, qt) = (q.eta, q.tau)`` (§0)."""
    return qx * ex + qy * ey, -qx * ey + qy * ex


def rotate_back(qn: np.ndarray, qt: np.ndarray, ex: np.ndarray, ey: np.ndarray):
    """Inverse of :func:`rotate`: ``(qx, qy)``."""
    return qn * ex - qt * ey, qn * ey + qt * ex


def inverse_depth(h: np.ndarray, eps_h: float) -> np.ndarray:
    """Desingularised ``1/h`` (§8): ``sqrt(2) h / sqrt(h^4 + max(h, eps_h)^4)``.

    That is ``1/h`` where ``h >= eps_h`` and tends to 0 as ``h -> 0``. Velocities
    are ``q * inverse_depth(h)``: one division serves both components.
    """
    hh = np.maximum(h, eps_h)
    h2 = h * h
    m2 = hh * hh
    return np.where(h >= eps_h, 1.0 / hh, SQRT2 * h / np.sqrt(h2 * h2 + m2 * m2))


def roe_weights(hi: np.ndarray, hj: np.ndarray):
    """Weights ``sqrt(h_i)/(sqrt h_i + sqrt h_j)`` and its mate; both 0 on a dry edge (§3.1)."""
    si = np.sqrt(hi)
    sj = np.sqrt(hj)
    den = si + sj
    wet = den > 0
    inv = np.where(wet, 1.0 / np.where(wet, den, 1.0), 0.0)
    return si * inv, sj * inv


def averaged_layer(hi, hj, qni, qnj, qti, qtj, uni, unj, uti, utj, g: float) -> Layer:
    """The :class:`Layer` of one layer's rotated states and velocities: Roe averages, jumps."""
    ai, aj = roe_weights(hi, hj)
    hbar = 0.5 * (hi + hj)
    return Layer(
        hi, hj, qni, qnj, qti, qtj, uni, unj, uti, utj,
        hbar, ai * uni + aj * unj, ai * uti + aj * utj, g * hbar,
        hj - hi, qnj - qni, qtj - qti,
    )  # fmt: skip


def layer_edge(hi, qxi, qyi, hj, qxj, qyj, ex, ey, g: float, eps_h: float) -> Layer:
    """Rotate one layer's two states and form its Roe averages and jumps (§0, §3.1)."""
    qni, qti = rotate(qxi, qyi, ex, ey)
    qnj, qtj = rotate(qxj, qyj, ex, ey)
    ki = inverse_depth(hi, eps_h)
    kj = inverse_depth(hj, eps_h)
    uni = qni * ki
    unj = qnj * kj
    uti = qti * ki
    utj = qtj * kj
    return averaged_layer(hi, hj, qni, qnj, qti, qtj, uni, unj, uti, utj, g)


def edge2(Wi, Wj, Hi, Hj, ex, ey, g: float, eps_h: float):
    """Both layers of a two-layer edge plus ``DH = H_j - H_i``."""
    L1 = layer_edge(Wi[:, 0], Wi[:, 1], Wi[:, 2], Wj[:, 0], Wj[:, 1], Wj[:, 2], ex, ey, g, eps_h)
    L2 = layer_edge(Wi[:, 3], Wi[:, 4], Wi[:, 5], Wj[:, 3], Wj[:, 4], Wj[:, 5], ex, ey, g, eps_h)
    return L1, L2, Hj - Hi


def edge1(Wi, Wj, Hi, Hj, ex, ey, g: float, eps_h: float):
    """The single layer of a one-layer edge plus ``DH``."""
    L = layer_edge(Wi[:, 0], Wi[:, 1], Wi[:, 2], Wj[:, 0], Wj[:, 1], Wj[:, 2], ex, ey, g, eps_h)
    return L, Hj - Hi


def total_fluctuation(L1: Layer, L2: Layer, DH, r: float):
    """``v = A DU - S DH`` in the grouped form that vanishes at rest (§3.3)."""
    v0 = L1.dqn
    v1 = L1.c2 * (L1.dh + L2.dh - DH) - L1.u * L1.u * L1.dh + 2.0 * L1.u * L1.dqn
    v2 = L2.dqn
    v3 = L2.c2 * (r * L1.dh + L2.dh - DH) - L2.u * L2.u * L2.dh + 2.0 * L2.u * L2.dqn
    return v0, v1, v2, v3


def total_fluctuation1(L: Layer, DH):
    """Single-layer ``(v0, v1)`` (§6)."""
    return L.dqn, L.c2 * (L.dh - DH) - L.u * L.u * L.dh + 2.0 * L.u * L.dqn


def tangential_fluctuation(L: Layer):
    """``vt = -u w Dh + w Dqn + u Dqt`` = D(qn qt/h) by the Roe property (§3.3)."""
    return -L.u * L.w * L.dh + L.w * L.dqn + L.u * L.dqt


def thin_edge(L1: Layer, L2: Layer, DH, eps_h: float):
    """Edges where a layer is thinner than ``eps_h`` on either side, or the lower layer
    thinner than the bed step ``|DH|`` and than ``PIERCED_RATIO`` of the water column (the
    step pierces it) (§5.2, §8, §13.1).

    On these edges a layer may vanish, so PVM-IFCP reconstructs both interfaces
    hydrostatically (:func:`reconstructed_edge2`) and Roe/IR-Roe fall back to it.
    """
    h2 = np.minimum(L2.hi, L2.hj)
    column = np.minimum(L1.hi + L2.hi, L1.hj + L2.hj)
    pierced = (h2 < np.abs(DH)) & (h2 < PIERCED_RATIO * column)
    return (np.minimum(L1.hi, L1.hj) < eps_h) | (h2 < eps_h) | pierced | outrun(L1, L2)


def outrun(L1: Layer, L2: Layer):
    """Edges where the lower layer's normal velocity on a side lies beyond the column's
    external waves ``U -+ sqrt(c1^2 + c2^2)`` (Roe averages), which the wet formulas do not
    see: a thin lower layer leaving a wall faster than them gains momentum there (§13.1).
    Only where a side is that far from both ``u1`` and ``u2`` (``U`` lies between them), as
    the physics tests it first (:func:`fvswe.physics.common.outrun`)."""
    u_lo, u_hi = np.minimum(L1.u, L2.u), np.maximum(L1.u, L2.u)
    reach = np.maximum(np.maximum(L2.uni, L2.unj) - u_lo, u_hi - np.minimum(L2.uni, L2.unj))
    near = reach * reach >= OUTRUN_REACH * (L1.c2 + L2.c2)
    hs = L1.hbar + L2.hbar
    wet = hs > 0.0
    U = np.where(wet, (L1.hbar * L1.u + L2.hbar * L2.u) / np.where(wet, hs, 1.0), 0.0)
    c = np.sqrt(L1.c2 + L2.c2)
    return near & ((np.minimum(L2.uni, L2.unj) < U - c) | (np.maximum(L2.uni, L2.unj) > U + c))


def hydrostatic_depths(h1, h2, H, Hm):
    """One side's ``(h1*, h2*)`` over the bed ``Hm``, keeping its surface and interface (§13).

    ``h* = h`` where ``H == Hm``; else the total depth ``ht* = max(0, (h1 + h2 - H) + Hm)``,
    ``h2* = min(ht*, max(0, (h2 - H) + Hm))`` and ``h1* = ht* - h2*``.
    """
    ht = np.maximum(0.0, ((h1 + h2) - H) + Hm)
    h2s = np.minimum(ht, np.maximum(0.0, (h2 - H) + Hm))
    same = Hm == H
    return np.where(same, h1, ht - h2s), np.where(same, h2, h2s)


def moving_side(hs, h, qx, qy, ex, ey, eps_h: float):
    """One side of a reconstructed layer, rotated: ``(un, ut, qn, un*, ut*)``.

    ``u = q inverse_depth(h)`` is the cell's desingularised velocity (§8) and
    ``u* = u`` where the reconstructed depth ``hs > 0``, else 0.
    """
    qn, qt = rotate(qx, qy, ex, ey)
    k = inverse_depth(h, eps_h)
    un = qn * k
    ut = qt * k
    wet = hs > 0.0
    return un, ut, qn, np.where(wet, un, 0.0), np.where(wet, ut, 0.0)


def reconstructed_layer(hi, uni, uti, hj, unj, utj, g: float) -> Layer:
    """The :class:`Layer` of the states ``(h, h u)`` with the velocities as given (not ``q/h``)."""
    qni = hi * uni
    qti = hi * uti
    qnj = hj * unj
    qtj = hj * utj
    return averaged_layer(hi, hj, qni, qnj, qti, qtj, uni, unj, uti, utj, g)


class Correction(NamedTuple):
    """What brings a reconstructed layer's fluctuations back to the cells' own states (§13).

    ``F-`` gains ``ci (1, uni, uti)`` and ``F+`` loses ``cj (1, unj, utj)`` on
    ``(h, qn, qt)``, with ``c = h* u*.eta - q.eta`` on each side.
    """

    ci: np.ndarray
    uni: np.ndarray
    uti: np.ndarray
    cj: np.ndarray
    unj: np.ndarray
    utj: np.ndarray


def corrected(Dm, Dp, C: Correction):
    """One reconstructed layer's ``(D-, D+)`` on ``(h, qn, qt)`` brought back to the cells (§13).

    ``F- = D- + ci (1, uni, uti)`` and ``F+ = D+ - cj (1, unj, utj)``: the mass
    parts add up to ``q_j.eta - q_i.eta``, so mass is conserved to round-off.
    """
    Fm = (Dm[0] + C.ci, Dm[1] + C.ci * C.uni, Dm[2] + C.ci * C.uti)
    Fp = (Dp[0] - C.cj, Dp[1] - C.cj * C.unj, Dp[2] - C.cj * C.utj)
    return Fm, Fp


def reconstructed_side(Wi, Wj, k: int, hi, hj, ex, ey, g: float, eps_h: float):
    """Layer ``k`` (component offset 0 or 3) of a reconstructed edge: ``(L*, Correction)``."""
    uni, uti, qni, usi, vsi = moving_side(hi, Wi[:, k], Wi[:, k + 1], Wi[:, k + 2], ex, ey, eps_h)
    unj, utj, qnj, usj, vsj = moving_side(hj, Wj[:, k], Wj[:, k + 1], Wj[:, k + 2], ex, ey, eps_h)
    L = reconstructed_layer(hi, usi, vsi, hj, usj, vsj, g)
    return L, Correction(L.qni - qni, uni, uti, L.qnj - qnj, unj, utj)


def reconstructed_edge2(Wi, Wj, Hi, Hj, ex, ey, g: float, eps_h: float):
    """Both layers of a two-layer edge reconstructed over ``Hm = min(H_i, H_j)`` (§13).

    Returns ``(L1*, L2*, C1, C2)``: the :class:`Layer` of each reconstructed layer
    (flat bed, so ``DH* = 0``) and its :class:`Correction`.
    """
    Hm = np.minimum(Hi, Hj)
    h1i, h2i = hydrostatic_depths(Wi[:, 0], Wi[:, 3], Hi, Hm)
    h1j, h2j = hydrostatic_depths(Wj[:, 0], Wj[:, 3], Hj, Hm)
    L1, C1 = reconstructed_side(Wi, Wj, 0, h1i, h1j, ex, ey, g, eps_h)
    L2, C2 = reconstructed_side(Wi, Wj, 3, h2i, h2j, ex, ey, g, eps_h)
    return L1, L2, C1, C2


def reconstructed_speeds(l1, l4, L1: Layer, L2: Layer, g: float):
    """``(SL, SR)``: ``l1, l4`` widened to bound each side's layer velocities (§13).

    ``SL = min(l1, min(u1i*, u2i*) - sqrt(g (h1i* + h2i*)))`` and its mirror on
    side j, so that the HLL mass flux of each layer keeps its depth non-negative.
    """
    sl = np.minimum(l1, np.minimum(L1.uni, L2.uni) - np.sqrt(g * (L1.hi + L2.hi)))
    sr = np.maximum(l4, np.maximum(L1.unj, L2.unj) + np.sqrt(g * (L1.hj + L2.hj)))
    return sl, sr


def select_layer(mask, a: Layer, b: Layer) -> Layer:
    """``a`` where ``mask``, else ``b``, field by field."""
    return Layer(*(np.where(mask, x, y) for x, y in zip(a, b, strict=True)))


def quartic(x, u1, u2, c1sq, c2sq, r: float):
    """Characteristic polynomial ``f`` of the 4x4 ``A`` and ``f'`` at ``x`` (§3.4)."""
    y1 = x - u1
    y2 = x - u2
    p1 = y1 * y1 - c1sq
    p2 = y2 * y2 - c2sq
    return p1 * p2 - r * c1sq * c2sq, 2.0 * (y1 * p2 + y2 * p1)


def nonpositive(u1, u2, c1sq, c2sq, r: float):
    """How many of a cell's four eigenvalues are ``<= 0``, at least; no EIG4, no square root.

    Exact for a real internal pair without a zero eigenvalue (§3.6, "Which edges need the
    cells' eigenvalues"). 0 is placed against ``m1 <= M- < M+ <= M4`` (``[M-, M+]`` the
    middle region between the velocity bands ``(u_k - c_k, u_k + c_k)``, which holds
    ``lambda2 < x* < lambda3``, ``f'(x*) = 0``) with the signs of ``u_k`` and
    ``p_k = u_k^2 - c_k^2``, then against the roots with ``f(0)`` and ``f'(0)``. Of the
    mirrored state ``(-u1, -u2)`` it counts the eigenvalues ``>= 0``.
    """
    p1 = u1 * u1 - c1sq
    p2 = u2 * u2 - c2sq
    f0 = p1 * p2 - r * c1sq * c2sq
    below1 = (u1 <= 0.0) & (p1 >= 0.0)  # u1 + c1 <= 0
    below2 = (u2 <= 0.0) & (p2 >= 0.0)
    above1 = (u1 >= 0.0) & (p1 >= 0.0)  # u1 - c1 >= 0
    above2 = (u2 >= 0.0) & (p2 >= 0.0)
    right = ((u1 <= 0.0) | (p1 <= 0.0)) & ((u2 <= 0.0) | (p2 <= 0.0)) & (below1 | below2)
    left = ((u1 >= 0.0) | (p1 <= 0.0)) & ((u2 >= 0.0) | (p2 <= 0.0)) & (above1 | above2)
    middle = ((p1 < 0.0) & (p2 < 0.0)) | ((p1 > 0.0) & (p2 > 0.0) & (u1 * u2 < 0.0))
    return np.select(
        [right, left, middle],
        [
            np.where(below1 & below2 & (f0 >= 0.0), 4, 3),
            np.where(above1 & above2 & (f0 > 0.0), 0, 1),
            np.where(f0 >= 0.0, 2, np.where(u1 * p2 + u2 * p1 > 0.0, 3, 1)),
        ],
        0,
    )


def polish(x, u1, u2, c1sq, c2sq, r: float):
    """One Newton step on ``f``, skipped where ``f' = 0`` (internal roots, §3.4)."""
    f, fp = quartic(x, u1, u2, c1sq, c2sq, r)
    nz = fp != 0
    return np.where(nz, x - f / np.where(nz, fp, 1.0), x)


def eig4(u1, u2, c1sq, c2sq, r: float):
    """Algorithm EIG4 (§3.4): ``(lambda1, lambda2, lambda3, lambda4, disc)``.

    External roots by Newton, internal pair by deflation then polishing (kept unless a
    root was :func:`thrown` off a near-double root).
    ``disc < 0`` means a complex internal pair; then ``lambda2 = lambda3`` is
    its real part. Needs ``c1sq, c2sq > 0``.

    Newton starts from ``U -/+ sext``, the exact external roots when
    ``u1 = u2 = U`` (then ``f`` is a quadratic in ``(l - U)^2``), if that lies
    beyond ``m1`` (resp. ``M4``); otherwise from §3.4's bracket. Either start
    converges: ``f`` is convex and monotone on ``(-inf, m1]`` and ``[M4, inf)``,
    so a first step from the inner side lands on the outer side, and from
    there Newton is monotone. The shear-free start saves 1 to 4 iterations.
    """
    c1 = np.sqrt(c1sq)
    c2 = np.sqrt(c2sq)
    m1 = np.minimum(u1 - c1, u2 - c2)
    M4 = np.maximum(u1 + c1, u2 + c2)
    dw = np.sqrt(c1 * c2)
    csum = c1sq + c2sq
    U = (u1 * c1sq + u2 * c2sq) / csum
    cext = np.sqrt(csum)
    d = c1sq - c2sq
    sext = np.sqrt(0.5 * (csum + np.sqrt(d * d + 4.0 * r * c1sq * c2sq)))
    x1 = np.minimum(U - cext, m1)
    x1 = np.where(quartic(x1, u1, u2, c1sq, c2sq, r)[0] < 0, m1 - dw, x1)
    x1 = np.where(U - sext < m1, U - sext, x1)
    x4 = np.maximum(U + cext, M4)
    x4 = np.where(quartic(x4, u1, u2, c1sq, c2sq, r)[0] < 0, M4 + dw, x4)
    x4 = np.where(U + sext > M4, U + sext, x4)
    run1 = np.ones(x1.shape, dtype=bool)
    run4 = run1.copy()
    for _ in range(NEWTON_MAXIT):
        f, fp = quartic(x1, u1, u2, c1sq, c2sq, r)
        dx = np.where(run1, f / fp, 0.0)
        x1 = x1 - dx
        run1 &= ~(np.abs(dx) <= NEWTON_TOL * (np.abs(x1) + cext))
        f, fp = quartic(x4, u1, u2, c1sq, c2sq, r)
        dx = np.where(run4, f / fp, 0.0)
        x4 = x4 - dx
        run4 &= ~(np.abs(dx) <= NEWTON_TOL * (np.abs(x4) + cext))
        if not (run1.any() or run4.any()):
            break
    a = -2.0 * (u1 + u2)
    b = (u1 * u1 - c1sq) + 4.0 * u1 * u2 + (u2 * u2 - c2sq)
    s = x1 + x4
    p = x1 * x4
    Bq = a + s
    Cq = b + s * Bq - p
    disc = Bq * Bq - 4.0 * Cq
    sq = np.sqrt(np.maximum(disc, 0.0))
    x2 = 0.5 * (-Bq - sq)
    x3 = 0.5 * (-Bq + sq)
    y2 = x2
    y3 = x3
    for _ in range(POLISH_STEPS):
        y2 = polish(y2, u1, u2, c1sq, c2sq, r)
        y3 = polish(y3, u1, u2, c1sq, c2sq, r)
    keep = (disc >= 0) & (x1 < y2) & (y2 < y3) & (y3 < x4)
    if POLISH_REACH < 1.0:  # 1 switches the guard off: float64 (the GPU's float32 sets 1e-3)
        reach = POLISH_REACH * (x4 - x1)
        keep &= ~(thrown(y2, x2, reach, u1, u2, c1sq, c2sq, r)
                  | thrown(y3, x3, reach, u1, u2, c1sq, c2sq, r))  # fmt: skip
    return x1, np.where(keep, y2, x2), np.where(keep, y3, x3), x4, disc


def thrown(y, x, reach, u1, u2, c1sq, c2sq, r: float):
    """The polished roots ``y`` of the deflated ``x`` that moved by more than ``reach`` and
    raised ``|f|``: Newton steps thrown off a near-double root, where ``f'`` vanishes (§3.4)."""
    far = np.abs(y - x) > reach
    fy = quartic(y, u1, u2, c1sq, c2sq, r)[0]
    fx = quartic(x, u1, u2, c1sq, c2sq, r)[0]
    return far & (np.abs(fy) > np.abs(fx))


def eigen_coefficient(lam, v, u1, u2, c1sq, c2sq, r: float):
    """``(alpha, a)``: the wave strength ``l_m . v`` and the ``a_m`` of ``k_m`` (§3.4).

    ``k_m = (1, lam, a, a lam)``; ``l_m`` is normalised so that ``l_m . k_n = delta_mn``.
    """
    v0, v1, v2, v3 = v
    y1 = lam - u1
    a = (y1 * y1 - c1sq) / c1sq
    rc2 = r * c2sq
    ac1 = a * c1sq
    delta = 2.0 * (rc2 * y1 + a * ac1 * (lam - u2))
    num = (lam - 2.0 * u1) * rc2 * v0 + rc2 * v1 + ((lam - 2.0 * u2) * v2 + v3) * ac1
    return num / delta, a


def harten_hyman(lam, lam_l, lam_r):
    """Harten-Hyman entropy fix of one wave (§3.6): the weight added to ``beta_m k_m``.

    ``lam`` is the Roe eigenvalue, ``lam_l``/``lam_r`` the field's eigenvalue in the
    left/right cell. A transonic wave (``lam_l < 0 < lam_r``) sends the part
    ``theta = (lam_r - lam)/(lam_r - lam_l)`` of its strength ``beta_m`` left at
    speed ``lam_l`` instead of ``min(lam, 0)`` (the Roe part; ``theta`` is not
    clipped to [0, 1], which would break the reversal symmetry of §10.1 (f));
    any other wave gets weight 0. Also returns the speed bound ``max(-lam_l, lam_r)``
    of a transonic wave (0 otherwise) for ``||D||_inf``.
    """
    transonic = (lam_l < 0.0) & (lam_r > 0.0)
    den = np.where(transonic, lam_r - lam_l, 1.0)
    weight = np.where(transonic, lam_l * ((lam_r - lam) / den) - np.minimum(lam, 0.0), 0.0)
    return weight, np.where(transonic, np.maximum(-lam_l, lam_r), 0.0)


def upwind_tangential(Phi, qni, qnj, uti, utj):
    """Tangential momentum upwinded with the layer mass flux ``Phi`` (§4): ``(D-_qt, D+_qt)``."""
    ut = np.where(Phi > 0, uti, np.where(Phi < 0, utj, 0.0))
    flow = Phi * ut
    return flow - qni * uti, qnj * utj - flow


def assemble2(D, ex, ey):
    """``T^{-1} (D_h1, D_q1n, D_q1t, D_h2, D_q2n, D_q2t)`` as an (E, 6) array (§3.5)."""
    d0, d1, t1, d2, d3, t2 = D
    q1x, q1y = rotate_back(d1, t1, ex, ey)
    q2x, q2y = rotate_back(d3, t2, ex, ey)
    return np.stack((d0, q1x, q1y, d2, q2x, q2y), axis=1)


def assemble1(D, ex, ey):
    """``T^{-1} (D_h, D_qn, D_qt)`` as an (E, 3) array."""
    d0, d1, t = D
    qx, qy = rotate_back(d1, t, ex, ey)
    return np.stack((d0, qx, qy), axis=1)


def wall_ghost(W: np.ndarray, normal: np.ndarray) -> np.ndarray:
    """Wall ghost (§7.1): depths kept, each ``q -> q - 2 (q.eta) eta``. W is (E, 6) or (E, 3)."""
    G = np.array(W, dtype=np.float64, copy=True)
    ex, ey = normal[:, 0], normal[:, 1]
    for k in range(1, W.shape[1], 3):
        qn = G[:, k] * ex + G[:, k + 1] * ey
        G[:, k] -= 2.0 * qn * ex
        G[:, k + 1] -= 2.0 * qn * ey
    return G


def open_ghost(W: np.ndarray) -> np.ndarray:
    """Open/transmissive ghost (§7.2): a copy of the cell's state (and ``H_g = H_i``)."""
    return np.array(W, dtype=np.float64, copy=True)


def as_inputs(Wi, Wj, Hi, Hj, normal, nvar: int):
    """Validated float64 views of the edge inputs: ``Wi, Wj, Hi, Hj, ex, ey``."""
    Wi = np.asarray(Wi, dtype=np.float64)
    Wj = np.asarray(Wj, dtype=np.float64)
    normal = np.asarray(normal, dtype=np.float64)
    if Wi.ndim != 2 or Wi.shape[1] != nvar or Wj.shape != Wi.shape:
        raise ConfigError(f"Wi, Wj: expected two (E, {nvar}) arrays, got {Wi.shape} and {Wj.shape}")
    E = Wi.shape[0]
    Hi = np.broadcast_to(np.asarray(Hi, dtype=np.float64), (E,))
    Hj = np.broadcast_to(np.asarray(Hj, dtype=np.float64), (E,))
    normal = np.broadcast_to(normal, (E, 2))
    return Wi, Wj, Hi, Hj, normal[:, 0], normal[:, 1]


FLUX_RETURNS = (
    "Returns ``F-`` (contribution to cell i, not yet times ``|Gamma|``), ``F+`` (to cell j), "
    "``||D||_inf`` and, with ``return_flags``, int32 flags (1 non-hyperbolic, 2 near-coincident "
    "pair, 4 thin-layer fallback)."
)


def by_layers(name: str, flux2, flux1):
    """A scheme's public ``flux``: ``flux2`` for (E, 6) states, ``flux1`` for (E, 3).

    Either may be None where the scheme has no such form; asking for it is a
    one-line ConfigError.
    """

    def flux(
        Wi, Wj, Hi, Hj, normal, g: float = 9.81, r: float = 0.5, eps_h: float = 5e-3,
        return_flags: bool = False,
    ) -> tuple[np.ndarray, ...]:  # fmt: skip
        impl = flux1 if np.shape(Wi)[-1] == 3 else flux2
        if impl is None:
            form = "(E, 6) two-layer" if flux1 is None else "(E, 3) single-layer"
            raise ConfigError(f"{name}: expects {form} states, got {np.shape(Wi)}")
        return impl(Wi, Wj, Hi, Hj, normal, g, r, eps_h, return_flags)

    flux.__doc__ = f"{name} for (E, 6) two-layer or (E, 3) one-layer states. {FLUX_RETURNS}"
    return flux
