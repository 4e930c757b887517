"""Single-layer ``hll-wd``: HLL with the hydrostatic reconstruction of Audusse et al. (2004).

Wetting and drying for one layer, NumPy reference; mirrored by
:mod:`fvswe.physics.wetdry` (from which the CUDA is emitted).

**Why hydrostatic reconstruction (HR) and not the wet/dry edge fix of
docs/SCHEMES.md §8.** HR has three properties we need, each by construction rather
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
    u_i  = q_i inverse_depth(h_i)     (desingularised, §8),   u_i* = u_i (0 where h_i* = 0)
    U_i* = (h_i*, h_i* u_i*)

The HLL of :mod:`fvswe.schemes.hll` is applied to the flat-bed problem
``(U_i*, U_j*)`` (``DH = 0``), which gives its fluctuations ``D-_HLL, D+_HLL``.
Its Roe averages and Einfeldt speeds are formed from the velocities ``u*``
themselves (:func:`~fvswe.schemes.common.reconstructed_layer`), not recomputed from ``q*/h*``: in a
thin layer (``h < eps_h``) the desingularised ``q inverse_depth(h)`` is smaller
than ``q/h``, and a solver fed a discharge faster than its speed bounds loses
positivity. Here every state the HLL sees moves exactly with the velocity its
speeds are built from, so the depths stay non-negative under the CFL.
In flux form HR is ``G_i = F_HLL(U_i*, U_j*) + (0, g/2 (h_i^2 - h_i*^2) eta)``;
subtracting the cell's own flux ``F_eta(U_i)`` (fluctuation form, docs/SCHEMES.md
§2.2) the pressure terms cancel exactly and what is left is

    F-_ij = D-_HLL + m_i (1, u_i),   m_i = h_i* (u_i*.eta) - q_i.eta
    F+_ij = D+_HLL - m_j (1, u_j)

(in the rotated frame, then rotated back with ``D±_HLL``; the mass parts of
``F-`` and ``F+`` add up to ``q_j.eta - q_i.eta``, so mass is conserved to
round-off).

with ``||D||_inf = max(|SL|, |SR|)`` of the reconstructed states. At rest
(``u = 0``) everything but the HLL's pressure fluctuation vanishes, and that
vanishes with the reconstructed depth jump; a wet cell beside a dry cell whose
bed lies above the water sees ``h_i* = h_j* = 0`` there: zero contribution,
so the lake stays at rest and the dry cell stays dry, both exactly. Over a
flat bed and in wet cells (``h >= eps_h``) it is HLL up to round-off.
"""

from __future__ import annotations

import numpy as np

from .common import (
    Correction,
    as_inputs,
    assemble1,
    by_layers,
    corrected,
    moving_side,
    reconstructed_layer,
    total_fluctuation1,
    upwind_tangential,
)
from .hll import einfeldt_speeds, hll_coefficients, viscous_split1


def reconstruct(h, qx, qy, H, Hm, ex, ey, eps_h: float):
    """One side, rotated: ``h*``, the velocity ``(un, ut)`` and ``qn`` of the cell, ``(un*, ut*)``.

    ``h* = h`` where ``H == Hm``, else ``max(0, (h - H) + Hm)``; ``u`` is
    desingularised (§8); ``u* = u`` where ``h* > 0``, else 0.
    """
    hs = np.where(Hm == H, h, np.maximum(0.0, (h - H) + Hm))
    return (hs, *moving_side(hs, h, qx, qy, ex, ey, eps_h))


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
    hi, uni, uti, qni, usi, vsi = reconstruct(Wi[:, 0], Wi[:, 1], Wi[:, 2], Hi, Hm, ex, ey, eps_h)
    hj, unj, utj, qnj, usj, vsj = reconstruct(Wj[:, 0], Wj[:, 1], Wj[:, 2], Hj, Hm, ex, ey, eps_h)
    L = reconstructed_layer(hi, usi, vsi, hj, usj, vsj, g)
    DH = Hm - Hm
    v = total_fluctuation1(L, DH)
    sl, sr = einfeldt_speeds(L, g)
    a0, a1 = hll_coefficients(sl, sr)
    m0, m1 = viscous_split1(v, L, DH, a0, a1)
    tm, tp = upwind_tangential(L.qni + m0, L.qni, L.qnj, L.uti, L.utj)
    C = Correction(L.qni - qni, uni, uti, L.qnj - qnj, unj, utj)
    Fm, Fp = corrected((m0, m1, tm), (v[0] - m0, v[1] - m1, tp), C)
    Fm = assemble1(Fm, ex, ey)
    Fp = assemble1(Fp, ex, ey)
    dmax = np.maximum(np.abs(sl), np.abs(sr))
    if return_flags:
        return Fm, Fp, dmax, np.zeros(len(dmax), dtype=np.int32)
    return Fm, Fp, dmax


#: The public flux: picks the two- or one-layer form by the state width.
flux = by_layers("hll-wd", None, flux1)
