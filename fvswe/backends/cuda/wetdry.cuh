// Single-layer hll-wd: HLL with the hydrostatic reconstruction of Audusse et al. (2004),
// wetting and drying for one layer: CUDA mirror of fvswe/schemes/wetdry.py.
//
// With Hm = min(H_i, H_j) each side is reconstructed to the flat bed Hm (h* = h on the
// higher bed, else max(0, (h - H) + Hm), moving with the cell's desingularised velocity);
// HLL of the reconstructed pair (DH = 0) plus the corrections that bring the mass and
// momentum fluxes back to the cells' own states.
#pragma once
#include "common.cuh"
#include "hll.cuh"

namespace wetdry {

// One side, rotated: h*, the cell's desingularised velocity (un, ut) and qn, and the
// reconstructed velocity (un*, ut*) = (un, ut) where h* > 0, else 0. h* = h where H == Hm,
// else max(0, (h - H) + Hm).
template <typename T>
FVSWE_DEV void reconstruct(T h, T qx, T qy, T H, T Hm, T ex, T ey, T eps_h, T& hs, T& un, T& ut,
                           T& qn, T& uns, T& uts)
{
    hs = Hm == H ? h : max_(T(0), (h - H) + Hm);
    moving_side(hs, h, qx, qy, ex, ey, eps_h, un, ut, qn, uns, uts);
}

// Single-layer HLL with hydrostatic reconstruction: F-, F+, ||D||_inf; r is unused and
// the flags are 0. F-_ij = D-_HLL + m_i (1, u_i), F+_ij = D+_HLL - m_j (1, u_j) with
// m = h* (u*.eta) - q.eta, in the rotated frame.
template <typename T>
FVSWE_DEV int flux1(const T* Wi, const T* Wj, T Hi, T Hj, T ex, T ey, T g, T r, T eps_h, T* Fm, T* Fp,
                    T& dmax)
{
    const T Hm = min_(Hi, Hj);
    T hi, uni, uti, qni, usi, vsi, hj, unj, utj, qnj, usj, vsj;
    reconstruct(Wi[0], Wi[1], Wi[2], Hi, Hm, ex, ey, eps_h, hi, uni, uti, qni, usi, vsi);
    reconstruct(Wj[0], Wj[1], Wj[2], Hj, Hm, ex, ey, eps_h, hj, unj, utj, qnj, usj, vsj);
    const Layer<T> L = reconstructed_layer(hi, usi, vsi, hj, usj, vsj, g);
    const T DH = Hm - Hm;
    T v[2], sl, sr, a0, a1, m0, m1, tm, tp;
    total_fluctuation1(L, DH, v);
    hll::einfeldt_speeds(L, g, sl, sr);
    hll::hll_coefficients(sl, sr, a0, a1);
    hll::viscous_split1(v, L, DH, a0, a1, m0, m1);
    upwind_tangential(L.qni + m0, L.qni, L.qnj, L.uti, L.utj, tm, tp);
    T Dm[3] = {m0, m1, tm}, Dp[3] = {v[0] - m0, v[1] - m1, tp};
    corrected(Dm, Dp, Correction<T>{L.qni - qni, uni, uti, L.qnj - qnj, unj, utj});
    assemble1(Dm[0], Dm[1], Dm[2], ex, ey, Fm);
    assemble1(Dp[0], Dp[1], Dp[2], ex, ey, Fp);
    dmax = max_(fabs(sl), fabs(sr));
    return 0;
}

}  // namespace wetdry
