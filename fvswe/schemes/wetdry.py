"""Single-layer ``hll-wd``: HLL with the hydrostatic reconstruction of Audusse et al. (2004).

Wetting and drying for one layer, NumPy reference; mirrored by
:mod:`fvswe.backends.cpu.wetdry` (and the CUDA ``wetdry.cuh``).

**Why hydrostatic reconstruction (HR) and not the wet/dry edge fix of
SCHEMES.md §8.** HR has three properties we need, each by construction rather
than by tuning: (1) it is well-balanced for every lake at rest, *including
dry cells above the water*; (2) a dry cell that no water can reach gets
exactly zero contributions, so it stays bitwise dry (``h == 0``, ``q == 0``);
(3) depths stay non-negative under a CFL condition, because it only feeds a
positive two-point solver (HLL with Einfeldt speeds) with non-negative
states. The §8 recipe (treat a wet/dry edge as a wall when the neighbour's
level lies below the local bottom, clip pressure jumps, limit outgoing
fluxes) needs a flux limiter that knows Δt, which a single edge pass does
not, and it is well-balanced at the wet/dry line only approximately. HR is
also the simpler kernel to mirror: a few lines in front of the existing HLL.

**Edge formulas.** ``H`` is the depth of the bed below the reference
(positive down), so the bed elevation is ``-H`` and the surface ``eta = h - H``.
With ``Hm = min(H_i, H_j)`` (the higher bed of the two):

    h_i* = h_i                        where H_i == Hm (the higher side is unchanged)
           max(0, (h_i - H_i) + Hm)   otherwise      (and likewise for j)
    q_i* = q_i                        where h_i* == h_i
           h_i* u_i                   otherwise, u_i = q_i inverse_depth(h_i) (§8)

The HLL of :mod:`fvswe.schemes.hll` is applied to the flat-bed problem
``(U_i*, U_j*)`` (``DH = 0``), which gives its fluctuations ``D-_HLL, D+_HLL``.
In flux form HR is ``G_i = F_HLL(U_i*, U_j*) + (0, g/2 (h_i^2 - h_i*^2) eta)``;
subtracting the cell's own flux ``F_eta(U_i)`` (fluctuation form, SCHEMES.md
§2.2) the pressure terms cancel exactly and what is left is

    F-_ij = D-_HLL + (q_i*.eta - q_i.eta) (1, u_i)
    F+_ij = D+_HLL - (q_j*.eta - q_j.eta) (1, u_j)

(``q*.eta`` exactly as the HLL rotated it, so the mass parts of ``F-`` and
``F+`` add up to ``q_j.eta - q_i.eta`` and mass is conserved to round-off).

with ``||D||_inf = max(|SL|, |SR|)`` of the reconstructed states. The
corrections vanish exactly where nothing was reconstructed, so over a flat bed
``hll-wd`` equals ``hll`` bit for bit. A wet cell beside a dry cell whose bed
lies above the water sees ``h_i* = h_j* = 0`` there: zero contribution, the
lake stays at rest and the dry cell stays dry.
"""

from __future__ import annotations

import numpy as np

from .common import (
    as_inputs,
    assemble1,
    edge1,
    inverse_depth,
    total_fluctuation1,
    upwind_tangential,
)
from .hll import einfeldt_speeds, hll_coefficients, viscous_split1


def reconstruct(h, qx, qy, H, Hm, eps_h: float):
    """One side's ``h*, qx*, qy*`` and the desingularised ``ux, uy`` (§8)."""
    hs = np.where(Hm == H, h, np.maximum(0.0, (h - H) + Hm))
    k = inverse_depth(h, eps_h)
    ux = qx * k
    uy = qy * k
    same = hs == h
    return hs, np.where(same, qx, hs * ux), np.where(same, qy, hs * uy), ux, uy


def correction(qns, qx, qy, ux, uy, ex, ey):
    """``F_eta(U*) - F_eta(U)`` less pressure: ``m (1, ux, uy)``, ``m = q*.eta - q.eta``.

    ``qns`` is the reconstructed normal discharge exactly as the HLL saw it, so
    the mass parts of ``F-`` and ``F+`` add up to ``q_j.eta - q_i.eta``
    (conservation) even where ``u`` is desingularised; ``m == 0`` where ``q* == q``.
    """
    m = qns - (qx * ex + qy * ey)
    return np.stack((m, m * ux, m * uy), axis=1)


def flux1(
    Wi,
    Wj,
    Hi,
    Hj,
    normal,
    g: float = 9.81,
    r: float = 0.5,
    eps_h: float = 5e-3,
    return_flags: bool = False,
):
    """Single-layer HLL with hydrostatic reconstruction: ``(F-, F+, ||D||_inf[, flags])``.

    ``Wi, Wj`` are (E, 3) states ``(h, qx, qy)``; ``r`` is unused; flags are all 0.
    """
    Wi, Wj, Hi, Hj, ex, ey = as_inputs(Wi, Wj, Hi, Hj, normal, 3)
    Hm = np.minimum(Hi, Hj)
    hi, qxi, qyi, uxi, uyi = reconstruct(Wi[:, 0], Wi[:, 1], Wi[:, 2], Hi, Hm, eps_h)
    hj, qxj, qyj, uxj, uyj = reconstruct(Wj[:, 0], Wj[:, 1], Wj[:, 2], Hj, Hm, eps_h)
    Ri = np.stack((hi, qxi, qyi), axis=1)
    Rj = np.stack((hj, qxj, qyj), axis=1)
    L, DH = edge1(Ri, Rj, Hm, Hm, ex, ey, g, eps_h)
    v = total_fluctuation1(L, DH)
    sl, sr = einfeldt_speeds(L, g)
    a0, a1 = hll_coefficients(sl, sr)
    m0, m1 = viscous_split1(v, L, DH, a0, a1)
    tm, tp = upwind_tangential(L.qni + m0, L.qni, L.qnj, L.uti, L.utj)
    ci = correction(L.qni, Wi[:, 1], Wi[:, 2], uxi, uyi, ex, ey)
    cj = correction(L.qnj, Wj[:, 1], Wj[:, 2], uxj, uyj, ex, ey)
    Fm = assemble1((m0, m1, tm), ex, ey) + ci
    Fp = assemble1((v[0] - m0, v[1] - m1, tp), ex, ey) - cj
    dmax = np.maximum(np.abs(sl), np.abs(sr))
    if return_flags:
        return Fm, Fp, dmax, np.zeros(len(dmax), dtype=np.int32)
    return Fm, Fp, dmax


def flux(
    Wi,
    Wj,
    Hi,
    Hj,
    normal,
    g: float = 9.81,
    r: float = 0.5,
    eps_h: float = 5e-3,
    return_flags: bool = False,
):
    """``hll-wd`` exists for one layer only: (E, 3) states."""
    if np.shape(Wi)[-1] != 3:
        raise ValueError("hll-wd: single-layer scheme, expects (E, 3) states")
    return flux1(Wi, Wj, Hi, Hj, normal, g, r, eps_h, return_flags)
