// Classical Roe scheme, docs/SCHEMES.md §3 (two layers) and §6 (one layer): CUDA mirror of
// fvswe/schemes/roe.py.
//
// The 6x6 projector P- is never formed: the block formula of §3.5 splits the 4x4
// normal part with the eigenpairs of EIG4 and treats the two shear waves in closed
// form. Edges the eigen-decomposition cannot serve fall back to PVM-IFCP (§3.5 (c), §8).
#pragma once
#include "common.cuh"
#include "hll.cuh"
#include "pvm_ifcp.cuh"

namespace roe {

// x k_m = x (1, lam, a, a lam).
template <typename T> FVSWE_DEV void wave_terms(T x, T lam, T a, T* t)
{
    t[0] = x;
    t[1] = x * lam;
    t[2] = x * a;
    t[3] = x * a * lam;
}

// Upwind part D-_4 = sum_m s-(lambda_m) (l_m . v) k_m of the 4x4 Roe problem (§3.5)
// for the Roe state (u1, u2, c1sq, c2sq); lambda1, lambda4 out, returns the flags.
// A near-coincident real pair (flag 2) uses the internal-subspace projector
// I - k1 l1 - k4 l4 with weight s-(lambda2) (1/2 if lambda2, lambda3 differ in sign).
// A complex pair gets flag 1 and a meaningless D-_4: the caller replaces it.
template <typename T>
FVSWE_DEV int normal_split2(const T* v, T u1, T u2, T c1, T c2, T r, T* Dm, T& l1,
                                             T& l4)
{
    T lam[4], alpha[4], a[4], t[4];
    const T disc = eig4(u1, u2, c1, c2, r, lam);
    const bool near = (lam[2] - lam[1]) < T(Prec<T>::near_coincident) * (lam[3] - lam[0]);
#pragma unroll
    for (int k = 0; k < 4; ++k) Dm[k] = T(0);
#pragma unroll
    for (int m = 0; m < 4; ++m) {
        alpha[m] = eigen_coefficient(lam[m], v, u1, u2, c1, c2, r, a[m]);
        wave_terms(s_minus(lam[m]) * alpha[m], lam[m], a[m], t);
#pragma unroll
        for (int k = 0; k < 4; ++k) Dm[k] = Dm[k] + t[k];
    }
    if (near) {
        T t1[4], t4[4];
        wave_terms(alpha[0], lam[0], a[0], t1);
        wave_terms(alpha[3], lam[3], a[3], t4);
        const T s1 = s_minus(lam[0]);
        const T s4 = s_minus(lam[3]);
        const T wgt = sgn(lam[1]) == sgn(lam[2]) ? s_minus(lam[1]) : T(0.5);
#pragma unroll
        for (int k = 0; k < 4; ++k) Dm[k] = s1 * t1[k] + s4 * t4[k] + wgt * (v[k] - t1[k] - t4[k]);
    }
    l1 = lam[0];
    l4 = lam[3];
    return disc < T(0) ? FLAG_NONHYPERBOLIC : (near ? FLAG_NEAR_COINCIDENT : 0);
}

// Roe normal part shared by Roe and IR-Roe: D-_4, ||D||_inf and flags; returns whether
// the edge falls back to PVM-IFCP (thin, flag 4, or non-hyperbolic, flag 1). Thin edges
// run the split on a harmless placeholder state (u = 0, c^2 = 1) since they are replaced.
template <typename T>
FVSWE_DEV bool normal_part2(const T* v, const Layer<T>& L1, const Layer<T>& L2, T r,
                                             T eps_h, T* Dm, T& dmax, int& flags)
{
    const bool thin = thin_edge(L1, L2, eps_h);
    T l1, l4;
    flags = normal_split2(v, thin ? T(0) : L1.u, thin ? T(0) : L2.u, thin ? T(1) : L1.c2,
                          thin ? T(1) : L2.c2, r, Dm, l1, l4);
    dmax = max_(max_(fabs(l1), fabs(l4)), max_(fabs(L1.u), fabs(L2.u)));
    if (thin) flags = FLAG_THIN;
    return thin || (flags & FLAG_NONHYPERBOLIC);
}

// Two-layer classical Roe edge contributions F-, F+, ||D||_inf and flags (§3.5).
// Shear waves: D-_qkt = w_k D-_4[h_k] + s-(u_k)(vt_k - w_k v_{h_k});
// ||D||_inf = max(|lambda1|, |lambda4|, |u1|, |u2|).
template <typename T>
FVSWE_DEV int flux2(const T* Wi, const T* Wj, T Hi, T Hj, T ex, T ey, T g, T r, T eps_h,
                                     T* Fm, T* Fp, T& dmax)
{
    Layer<T> L1, L2;
    T DH, v[4], m[4];
    int flags;
    edge2(Wi, Wj, Hi, Hj, ex, ey, g, eps_h, L1, L2, DH);
    total_fluctuation(L1, L2, DH, r, v);
    if (normal_part2(v, L1, L2, r, eps_h, m, dmax, flags))  // apply_fallback
        return flags | pvm_ifcp::flux2(Wi, Wj, Hi, Hj, ex, ey, g, r, eps_h, Fm, Fp, dmax);
    const T vt1 = tangential_fluctuation(L1);
    const T vt2 = tangential_fluctuation(L2);
    const T t1 = L1.w * m[0] + s_minus(L1.u) * (vt1 - L1.w * v[0]);
    const T t2 = L2.w * m[2] + s_minus(L2.u) * (vt2 - L2.w * v[2]);
    assemble2(m[0], m[1], t1, m[2], m[3], t2, ex, ey, Fm);
    assemble2(v[0] - m[0], v[1] - m[1], vt1 - t1, v[2] - m[2], v[3] - m[3], vt2 - t2, ex, ey, Fp);
    return flags;
}

// Single-layer Roe upwind part D-_2 (m[0], m[1]) and ||D||_inf = |u| + c (§6).
template <typename T> FVSWE_DEV T normal_split1(const T* v, T u, T c2, T* m)
{
    const T c = sqrt(c2);
    const T lm = u - c;
    const T lp = u + c;
    const T tm = s_minus(lm) * ((lp * v[0] - v[1]) / (T(2) * c));
    const T tp = s_minus(lp) * ((v[1] - lm * v[0]) / (T(2) * c));
    m[0] = tm + tp;
    m[1] = tm * lm + tp * lp;
    return fabs(u) + c;
}

// Single-layer classical Roe F-, F+, ||D||_inf (§6); HLL where thin (hbar < eps_h, flag 4).
template <typename T>
FVSWE_DEV int flux1(const T* Wi, const T* Wj, T Hi, T Hj, T ex, T ey, T g, T r, T eps_h,
                                     T* Fm, T* Fp, T& dmax)
{
    Layer<T> L;
    T DH, v[2], m[2];
    edge1(Wi, Wj, Hi, Hj, ex, ey, g, eps_h, L, DH);
    if (L.hbar < eps_h) {  // thin_fallback1
        hll::flux1(Wi, Wj, Hi, Hj, ex, ey, g, T(0), eps_h, Fm, Fp, dmax);
        return FLAG_THIN;
    }
    total_fluctuation1(L, DH, v);
    dmax = normal_split1(v, L.u, L.c2, m);
    const T vt = tangential_fluctuation(L);
    const T t = L.w * m[0] + s_minus(L.u) * (vt - L.w * v[0]);
    assemble1(m[0], m[1], t, ex, ey, Fm);
    assemble1(v[0] - m[0], v[1] - m[1], vt - t, ex, ey, Fp);
    return 0;
}

}  // namespace roe
