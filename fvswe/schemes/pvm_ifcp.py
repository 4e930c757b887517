"""PVM-IFCP scheme, docs/SCHEMES.md §5 — NumPy reference (one layer: HLL, §6).

The 4x4 normal part uses a quadratic viscosity matrix
``Q = alpha0 I + alpha1 A + alpha2 A^2`` interpolating ``|x|`` at the
approximate external speeds and ``chi``; no eigenvectors. Tangential momentum
is upwinded as in IR-Roe (§4). Mirrored by :mod:`fvswe.physics.pvm_ifcp`.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from ..physics.constants import DRY_DEPTH, FLAG_NONHYPERBOLIC, FLAG_THIN, RUSANOV_GAP
from . import hll
from .common import (
    as_inputs,
    assemble2,
    by_layers,
    corrected,
    edge2,
    reconstructed_edge2,
    reconstructed_speeds,
    select_layer,
    thin_edge,
    total_fluctuation,
    upwind_tangential,
)


def approx_eigenvalues(L1, L2, r: float):
    """Approximate eigenvalues (§5.1), sorted: ``(lambda1, lambda2, lambda3, lambda4, hyperbolic)``.

    ``hyperbolic`` is the approximate criterion ``(u1-u2)^2 < (1-r) g (h1+h2)``;
    ``cint`` takes ``|.|`` of the criterion term as HySEA does.
    """
    h1, h2 = L1.hbar, L2.hbar
    Hs = h1 + h2
    wet = Hs > DRY_DEPTH
    inv = np.where(wet, 1.0 / np.where(wet, Hs, 1.0), 0.0)
    U = (h1 * L1.u + h2 * L2.u) * inv
    Uc = (h1 * L2.u + h2 * L1.u) * inv
    csum = L1.c2 + L2.c2
    cext = np.sqrt(csum)
    du = L1.u - L2.u
    gp = (1.0 - r) * csum
    live = gp > DRY_DEPTH
    crit = 1.0 - du * du * np.where(live, 1.0 / np.where(live, gp, 1.0), 0.0)
    cint = np.sqrt((1.0 - r) * L1.c2 * h2 * inv * np.abs(crit))
    e1 = U - cext
    e4 = U + cext
    i2 = Uc - cint
    i3 = Uc + cint
    return np.minimum(e1, i2), np.maximum(e1, i2), np.minimum(e4, i3), np.maximum(e4, i3), crit >= 0


def ifcp_coefficients(l1, l4, chi):
    """``(alpha0, alpha1, alpha2)``: ``|x|`` interpolated at ``lambda1, lambda4, chi`` (§5.2).

    The three Lagrange weights share one division by ``(l1-l4)(l1-chi)(l4-chi)``.
    Falls back to Rusanov ``(max(|l1|, |l4|), 0, 0)`` when two nodes nearly coincide.
    """
    a1 = np.abs(l1)
    a4 = np.abs(l4)
    gap = np.minimum(np.minimum(np.abs(l1 - l4), np.abs(l1 - chi)), np.abs(l4 - chi))
    rus = gap <= RUSANOV_GAP * (a1 + a4)
    d14 = l1 - l4
    d1c = l1 - chi
    d4c = l4 - chi
    inv = 1.0 / np.where(rus, 1.0, d14 * d1c * d4c)
    d1 = a1 * d4c * inv
    d4 = -a4 * d1c * inv
    dc = np.abs(chi) * d14 * inv
    alpha2 = d1 + d4 + dc
    alpha1 = -(d1 * (l4 + chi) + d4 * (l1 + chi) + dc * (l1 + l4))
    alpha0 = d1 * l4 * chi + d4 * l1 * chi + dc * l1 * l4
    return (
        np.where(rus, np.maximum(a1, a4), alpha0),
        np.where(rus, 0.0, alpha1),
        np.where(rus, 0.0, alpha2),
    )


def viscous_split2(v, L1, L2, DH, r: float, a0, a1, a2):
    """``D-_4 = (v - Vis)/2``, ``Vis = alpha0 wj + alpha1 v + alpha2 A v`` (§5.3).

    ``wj = (Dh1, Dq1n, Dh2 - DH, Dq2n)`` stands for ``A^{-1} v`` (HySEA's form).
    """
    v0, v1, v2, v3 = v
    u1, u2, c1, c2 = L1.u, L2.u, L1.c2, L2.c2
    Av1 = (c1 - u1 * u1) * v0 + 2.0 * u1 * v1 + c1 * v2
    Av3 = r * c2 * v0 + (c2 - u2 * u2) * v2 + 2.0 * u2 * v3
    return (
        0.5 * (v0 - (a0 * L1.dh + a1 * v0 + a2 * v1)),
        0.5 * (v1 - (a0 * L1.dqn + a1 * v1 + a2 * Av1)),
        0.5 * (v2 - (a0 * (L2.dh - DH) + a1 * v2 + a2 * v3)),
        0.5 * (v3 - (a0 * L2.dqn + a1 * v3 + a2 * Av3)),
    )


def flux2(
    Wi: ArrayLike,
    Wj: ArrayLike,
    Hi: ArrayLike,
    Hj: ArrayLike,
    normal: ArrayLike,
    g: float = 9.81,
    r: float = 0.5,
    eps_h: float = 5e-3,
    return_flags: bool = False,
) -> tuple[np.ndarray, ...]:
    """Two-layer PVM-IFCP edge contributions ``(F-, F+, ||D||_inf[, flags])`` (§5, §13).

    ``S_ext = sgn(lambda1 + lambda4)`` (1 where that sum is 0); flag 1 where the
    approximate hyperbolicity criterion fails (the scheme still runs, it needs
    only real speeds); ``||D||_inf = max(|lambda1|, |lambda4|)``. On thin edges
    (:func:`~fvswe.schemes.common.thin_edge`, flag 4) both interfaces are
    reconstructed hydrostatically and HLL coefficients with the widened speeds of
    :func:`~fvswe.schemes.common.reconstructed_speeds` are used (§13).
    """
    Wi, Wj, Hi, Hj, ex, ey = as_inputs(Wi, Wj, Hi, Hj, normal, 6)
    L1, L2, DH = edge2(Wi, Wj, Hi, Hj, ex, ey, g, eps_h)
    thin = thin_edge(L1, L2, DH, eps_h)
    R1, R2, C1, C2 = reconstructed_edge2(Wi, Wj, Hi, Hj, ex, ey, g, eps_h)
    L1 = select_layer(thin, R1, L1)
    L2 = select_layer(thin, R2, L2)
    DH = np.where(thin, 0.0, DH)
    v = total_fluctuation(L1, L2, DH, r)
    l1, l2, l3, l4, hyperbolic = approx_eigenvalues(L1, L2, r)
    S = np.sign(l1 + l4)
    chi = np.where(S == 0, 1.0, S) * np.maximum(np.abs(l2), np.abs(l3))
    a0, a1, a2 = ifcp_coefficients(l1, l4, chi)
    sl, sr = reconstructed_speeds(l1, l4, L1, L2, g)
    h0, h1 = hll.hll_coefficients(sl, sr)
    a0 = np.where(thin, h0, a0)
    a1 = np.where(thin, h1, a1)
    a2 = np.where(thin, 0.0, a2)
    m = viscous_split2(v, L1, L2, DH, r, a0, a1, a2)
    t1m, t1p = upwind_tangential(L1.qni + m[0], L1.qni, L1.qnj, L1.uti, L1.utj)
    t2m, t2p = upwind_tangential(L2.qni + m[2], L2.qni, L2.qnj, L2.uti, L2.utj)
    (h1m, h1p), (h2m, h2p) = hll.hll_tangential(L1, a0, a1), hll.hll_tangential(L2, a0, a1)
    t1m, t1p, t2m, t2p = (np.where(thin, h, t) for h, t in
                          ((h1m, t1m), (h1p, t1p), (h2m, t2m), (h2p, t2p)))  # fmt: skip
    Dm = (m[0], m[1], t1m, m[2], m[3], t2m)
    Dp = (v[0] - m[0], v[1] - m[1], t1p, v[2] - m[2], v[3] - m[3], t2p)
    Cm1, Cp1 = corrected(Dm[:3], Dp[:3], C1)
    Cm2, Cp2 = corrected(Dm[3:], Dp[3:], C2)
    Fm = assemble2(tuple(np.where(thin, c, d) for c, d in zip(Cm1 + Cm2, Dm, strict=True)), ex, ey)
    Fp = assemble2(tuple(np.where(thin, c, d) for c, d in zip(Cp1 + Cp2, Dp, strict=True)), ex, ey)
    dmax = np.where(thin, np.maximum(np.abs(sl), np.abs(sr)), np.maximum(np.abs(l1), np.abs(l4)))
    if return_flags:
        flags = np.where(hyperbolic, 0, FLAG_NONHYPERBOLIC) | np.where(thin, FLAG_THIN, 0)
        return Fm, Fp, dmax, flags.astype(np.int32)
    return Fm, Fp, dmax


#: The public flux: picks the two- or one-layer form by the state width.
flux = by_layers("pvm-ifcp", flux2, hll.flux1)  # one layer: HLL (§6)
