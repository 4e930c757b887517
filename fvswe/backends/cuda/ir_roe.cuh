// IR-Roe (rotational-invariance Roe), docs/SCHEMES.md §4 (two layers) and §6 (one layer):
// CUDA mirror of fvswe/schemes/ir_roe.py. The normal part is exactly the classical Roe
// 4x4 (or 2x2) problem; tangential momentum is upwinded with the sign of each layer's
// mass flux.
#pragma once
#include "common.cuh"
#include "hll.cuh"
#include "pvm_ifcp.cuh"
#include "roe.cuh"

namespace ir_roe {

// Two-layer IR-Roe edge contributions F-, F+, ||D||_inf and flags (§4):
// Phi_k = q_kn,i + D-_4[h_k]; thin or non-hyperbolic edges fall back to PVM-IFCP.
template <typename T>
FVSWE_DEV int flux2(const T* Wi, const T* Wj, T Hi, T Hj, T ex, T ey, T g, T r, T eps_h,
                                     T* Fm, T* Fp, T& dmax)
{
    Layer<T> L1, L2;
    T DH, v[4], m[4];
    int flags;
    edge2(Wi, Wj, Hi, Hj, ex, ey, g, eps_h, L1, L2, DH);
    total_fluctuation(L1, L2, DH, r, v);
    if (roe::normal_part2(v, L1, L2, r, g, eps_h, m, dmax, flags))  // apply_fallback
        return flags | pvm_ifcp::flux2(Wi, Wj, Hi, Hj, ex, ey, g, r, eps_h, Fm, Fp, dmax);
    T t1m, t1p, t2m, t2p;
    upwind_tangential(L1.qni + m[0], L1.qni, L1.qnj, L1.uti, L1.utj, t1m, t1p);
    upwind_tangential(L2.qni + m[2], L2.qni, L2.qnj, L2.uti, L2.utj, t2m, t2p);
    assemble2(m[0], m[1], t1m, m[2], m[3], t2m, ex, ey, Fm);
    assemble2(v[0] - m[0], v[1] - m[1], t1p, v[2] - m[2], v[3] - m[3], t2p, ex, ey, Fp);
    return flags;
}

// Single-layer IR-Roe F-, F+, ||D||_inf (§6); HLL where thin (flag 4).
template <typename T>
FVSWE_DEV int flux1(const T* Wi, const T* Wj, T Hi, T Hj, T ex, T ey, T g, T r, T eps_h,
                                     T* Fm, T* Fp, T& dmax)
{
    Layer<T> L;
    T DH, v[2], m[2], tm, tp;
    edge1(Wi, Wj, Hi, Hj, ex, ey, g, eps_h, L, DH);
    if (L.hbar < eps_h) {  // thin_fallback1
        hll::flux1(Wi, Wj, Hi, Hj, ex, ey, g, T(0), eps_h, Fm, Fp, dmax);
        return FLAG_THIN;
    }
    total_fluctuation1(L, DH, v);
    dmax = roe::normal_split1(v, L, g, m);
    upwind_tangential(L.qni + m[0], L.qni, L.qnj, L.uti, L.utj, tm, tp);
    assemble1(m[0], m[1], tm, ex, ey, Fm);
    assemble1(v[0] - m[0], v[1] - m[1], tp, ex, ey, Fp);
    return 0;
}

}  // namespace ir_roe
