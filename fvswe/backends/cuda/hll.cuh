// Single-layer HLL (PVM-1U with Einfeldt speeds), docs/SCHEMES.md §6: CUDA mirror of
// fvswe/schemes/hll.py. Also provides the HLL viscosity coefficients that PVM-IFCP
// uses on thin layers (§5.2).
#pragma once
#include "common.cuh"

namespace hll {

// (alpha0, alpha1) of the degree-1 interpolation of |x| at sl < sr (§6); Rusanov's
// (max(|sl|, |sr|), 0) where sr <= sl (only a dry edge, where both are 0).
template <typename T> FVSWE_DEV void hll_coefficients(T sl, T sr, T& a0, T& a1)
{
    const T asl = fabs(sl);
    const T asr = fabs(sr);
    if (sr > sl) {
        const T den = sr - sl;
        a0 = (sr * asl - sl * asr) / den;
        a1 = (asr - asl) / den;
    } else {
        a0 = max_(asl, asr);
        a1 = T(0);
    }
}

// SL = min(u - c, un_i - c_i), SR = max(u + c, un_j + c_j) (§6).
template <typename T> FVSWE_DEV void einfeldt_speeds(const Layer<T>& L, T g, T& sl, T& sr)
{
    const T c = sqrt(L.c2);
    sl = min_(L.u - c, L.uni - sqrt(g * L.hi));
    sr = max_(L.u + c, L.unj + sqrt(g * L.hj));
}

// D-_2 = (v - Vis)/2 with Vis = alpha0 (Dh - DH, Dqn) + alpha1 v (§6).
template <typename T>
FVSWE_DEV void viscous_split1(const T* v, const Layer<T>& L, T DH, T a0, T a1, T& m0,
                                               T& m1)
{
    m0 = T(0.5) * (v[0] - (a0 * (L.dh - DH) + a1 * v[0]));
    m1 = T(0.5) * (v[1] - (a0 * L.dqn + a1 * v[1]));
}

// Single-layer HLL edge contributions F-, F+, ||D||_inf (§6, §4); r is unused and HLL
// needs no fallback, so the flags are 0.
template <typename T>
FVSWE_DEV int flux1(const T* Wi, const T* Wj, T Hi, T Hj, T ex, T ey, T g, T r,
                                         T eps_h, T* Fm, T* Fp, T& dmax)
{
    Layer<T> L;
    T DH, v[2], sl, sr, a0, a1, m0, m1, tm, tp;
    edge1(Wi, Wj, Hi, Hj, ex, ey, g, eps_h, L, DH);
    total_fluctuation1(L, DH, v);
    einfeldt_speeds(L, g, sl, sr);
    hll_coefficients(sl, sr, a0, a1);
    viscous_split1(v, L, DH, a0, a1, m0, m1);
    upwind_tangential(L.qni + m0, L.qni, L.qnj, L.uti, L.utj, tm, tp);
    assemble1(m0, m1, tm, ex, ey, Fm);
    assemble1(v[0] - m0, v[1] - m1, tp, ex, ey, Fp);
    dmax = max_(fabs(sl), fabs(sr));
    return 0;
}

}  // namespace hll
