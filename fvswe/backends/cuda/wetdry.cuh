// Single-layer hll-wd: HLL with the hydrostatic reconstruction of Audusse et al. (2004),
// wetting and drying for one layer: CUDA mirror of fvswe/schemes/wetdry.py.
//
// With Hm = min(H_i, H_j) each side is reconstructed to the flat bed Hm (h* = h on the
// higher bed, else max(0, (h - H) + Hm), moving with the cell's velocity); HLL of the
// reconstructed pair (DH = 0) plus the corrections that bring the mass and momentum
// fluxes back to the cells' own states.
#pragma once
#include "common.cuh"
#include "hll.cuh"

namespace wetdry {

// One side's h*, qx*, qy* and the desingularised ux, uy (§8).
template <typename T>
FVSWE_DEV void reconstruct(T h, T qx, T qy, T H, T Hm, T eps_h, T* R, T& ux, T& uy)
{
    const T hs = Hm == H ? h : max_(T(0), (h - H) + Hm);
    const T k = inverse_depth(h, eps_h);
    ux = qx * k;
    uy = qy * k;
    const bool same = hs == h;
    R[0] = hs;
    R[1] = same ? qx : hs * ux;
    R[2] = same ? qy : hs * uy;
}

// F_eta(U*) - F_eta(U) less pressure: m (1, ux, uy), m = q*.eta - q.eta, with qns the
// reconstructed normal discharge exactly as the HLL saw it (mass stays conservative).
template <typename T>
FVSWE_DEV void correction(T qns, T qx, T qy, T ux, T uy, T ex, T ey, T* c)
{
    const T m = qns - (qx * ex + qy * ey);
    c[0] = m;
    c[1] = m * ux;
    c[2] = m * uy;
}

// Single-layer HLL with hydrostatic reconstruction: F-, F+, ||D||_inf; r is unused and
// the flags are 0.
template <typename T>
FVSWE_DEV int flux1(const T* Wi, const T* Wj, T Hi, T Hj, T ex, T ey, T g, T r, T eps_h, T* Fm, T* Fp,
                    T& dmax)
{
    const T Hm = min_(Hi, Hj);
    T Ri[3], Rj[3], uxi, uyi, uxj, uyj, ci[3], cj[3];
    reconstruct(Wi[0], Wi[1], Wi[2], Hi, Hm, eps_h, Ri, uxi, uyi);
    reconstruct(Wj[0], Wj[1], Wj[2], Hj, Hm, eps_h, Rj, uxj, uyj);
    Layer<T> L;
    T DH, v[2], sl, sr, a0, a1, m0, m1, tm, tp;
    edge1(Ri, Rj, Hm, Hm, ex, ey, g, eps_h, L, DH);
    total_fluctuation1(L, DH, v);
    hll::einfeldt_speeds(L, g, sl, sr);
    hll::hll_coefficients(sl, sr, a0, a1);
    hll::viscous_split1(v, L, DH, a0, a1, m0, m1);
    upwind_tangential(L.qni + m0, L.qni, L.qnj, L.uti, L.utj, tm, tp);
    correction(L.qni, Wi[1], Wi[2], uxi, uyi, ex, ey, ci);
    correction(L.qnj, Wj[1], Wj[2], uxj, uyj, ex, ey, cj);
    assemble1(m0, m1, tm, ex, ey, Fm);
    assemble1(v[0] - m0, v[1] - m1, tp, ex, ey, Fp);
#pragma unroll
    for (int m = 0; m < 3; ++m) {
        Fm[m] = Fm[m] + ci[m];
        Fp[m] = Fp[m] - cj[m];
    }
    dmax = max_(fabs(sl), fabs(sr));
    return 0;
}

}  // namespace wetdry
