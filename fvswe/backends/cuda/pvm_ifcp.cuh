// PVM-IFCP scheme, docs/SCHEMES.md §5: CUDA mirror of fvswe/schemes/pvm_ifcp.py.
//
// The 4x4 normal part uses a quadratic viscosity matrix Q = alpha0 I + alpha1 A +
// alpha2 A^2 interpolating |x| at the approximate external speeds and chi; no
// eigenvectors. Tangential momentum is upwinded as in IR-Roe (§4).
#pragma once
#include "common.cuh"
#include "hll.cuh"

namespace pvm_ifcp {

// Rusanov safeguard (§5.2): a node gap <= gap (|lambda1| + |lambda4|); FLT_EPSILON in
// float32 as HySEA does, since a 1e-12 relative gap is below float resolution.
template <typename T> struct Gap;
template <> struct Gap<double> { static constexpr double rusanov = 1e-12; };
template <> struct Gap<float> { static constexpr float rusanov = 1.1920929e-7f; };

// Approximate eigenvalues (§5.1), sorted, into lam[0..3]; returns the approximate
// hyperbolicity criterion (u1-u2)^2 < (1-r) g (h1+h2) (cint takes |.| as HySEA does).
template <typename T>
FVSWE_DEV bool approx_eigenvalues(const Layer<T>& L1, const Layer<T>& L2, T r, T* lam)
{
    const T h1 = L1.hbar, h2 = L2.hbar;
    const T Hs = h1 + h2;
    const bool wet = Hs > T(0);
    const T inv = wet ? T(1) / Hs : T(0);
    const T U = (h1 * L1.u + h2 * L2.u) * inv;
    const T Uc = (h1 * L2.u + h2 * L1.u) * inv;
    const T csum = L1.c2 + L2.c2;
    const T cext = sqrt(csum);
    const T du = L1.u - L2.u;
    const T gp = (T(1) - r) * csum;
    const T crit = T(1) - du * du * (wet ? T(1) / gp : T(0));
    const T cint = sqrt((T(1) - r) * L1.c2 * h2 * inv * fabs(crit));
    const T e1 = U - cext, e4 = U + cext, i2 = Uc - cint, i3 = Uc + cint;
    lam[0] = min_(e1, i2);
    lam[1] = max_(e1, i2);
    lam[2] = min_(e4, i3);
    lam[3] = max_(e4, i3);
    return crit >= T(0);
}

// (alpha0, alpha1, alpha2): |x| interpolated at lambda1, lambda4, chi (§5.2); the three
// Lagrange weights share one division by (l1-l4)(l1-chi)(l4-chi). Rusanov
// (max(|l1|, |l4|), 0, 0) when two nodes nearly coincide.
template <typename T>
FVSWE_DEV void ifcp_coefficients(T l1, T l4, T chi, T& alpha0, T& alpha1, T& alpha2)
{
    const T a1 = fabs(l1);
    const T a4 = fabs(l4);
    const T gap = min_(min_(fabs(l1 - l4), fabs(l1 - chi)), fabs(l4 - chi));
    if (gap <= T(Gap<T>::rusanov) * (a1 + a4)) {
        alpha0 = max_(a1, a4);
        alpha1 = T(0);
        alpha2 = T(0);
        return;
    }
    const T d14 = l1 - l4;
    const T d1c = l1 - chi;
    const T d4c = l4 - chi;
    const T inv = T(1) / (d14 * d1c * d4c);
    const T d1 = a1 * d4c * inv;
    const T d4 = -a4 * d1c * inv;
    const T dc = fabs(chi) * d14 * inv;
    alpha2 = d1 + d4 + dc;
    alpha1 = -(d1 * (l4 + chi) + d4 * (l1 + chi) + dc * (l1 + l4));
    alpha0 = d1 * l4 * chi + d4 * l1 * chi + dc * l1 * l4;
}

// D-_4 = (v - Vis)/2, Vis = alpha0 wj + alpha1 v + alpha2 A v (§5.3), with
// wj = (Dh1, Dq1n, Dh2 - DH, Dq2n) standing for A^{-1} v (HySEA's form).
template <typename T>
FVSWE_DEV void viscous_split2(const T* v, const Layer<T>& L1, const Layer<T>& L2, T DH,
                                               T r, T a0, T a1, T a2, T* m)
{
    const T u1 = L1.u, u2 = L2.u, c1 = L1.c2, c2 = L2.c2;
    const T Av1 = (c1 - u1 * u1) * v[0] + T(2) * u1 * v[1] + c1 * v[2];
    const T Av3 = r * c2 * v[0] + (c2 - u2 * u2) * v[2] + T(2) * u2 * v[3];
    m[0] = T(0.5) * (v[0] - (a0 * L1.dh + a1 * v[0] + a2 * v[1]));
    m[1] = T(0.5) * (v[1] - (a0 * L1.dqn + a1 * v[1] + a2 * Av1));
    m[2] = T(0.5) * (v[2] - (a0 * (L2.dh - DH) + a1 * v[2] + a2 * v[3]));
    m[3] = T(0.5) * (v[3] - (a0 * L2.dqn + a1 * v[3] + a2 * Av3));
}

// A thin edge (§13): both interfaces reconstructed over min(H_i, H_j), HLL coefficients with
// the widened speeds, corrections back to the cells' states; flag 4 (| 1 if non-hyperbolic).
template <typename T>
FVSWE_DEV int thin_flux2(const T* Wi, const T* Wj, T Hi, T Hj, T ex, T ey, T g, T r, T eps_h,
                         T* Fm, T* Fp, T& dmax)
{
    Layer<T> L1, L2;
    Correction<T> C1, C2;
    T v[4], lam[4], m[4], sl, sr, a0, a1;
    reconstructed_edge2(Wi, Wj, Hi, Hj, ex, ey, g, eps_h, L1, L2, C1, C2);
    total_fluctuation(L1, L2, T(0), r, v);
    const bool hyperbolic = approx_eigenvalues(L1, L2, r, lam);
    reconstructed_speeds(lam[0], lam[3], L1, L2, g, sl, sr);
    hll::hll_coefficients(sl, sr, a0, a1);
    viscous_split2(v, L1, L2, T(0), r, a0, a1, T(0), m);
    T Dm1[3], Dp1[3], Dm2[3], Dp2[3];
    upwind_tangential(L1.qni + m[0], L1.qni, L1.qnj, L1.uti, L1.utj, Dm1[2], Dp1[2]);
    upwind_tangential(L2.qni + m[2], L2.qni, L2.qnj, L2.uti, L2.utj, Dm2[2], Dp2[2]);
    Dm1[0] = m[0];
    Dm1[1] = m[1];
    Dp1[0] = v[0] - m[0];
    Dp1[1] = v[1] - m[1];
    Dm2[0] = m[2];
    Dm2[1] = m[3];
    Dp2[0] = v[2] - m[2];
    Dp2[1] = v[3] - m[3];
    corrected(Dm1, Dp1, C1);
    corrected(Dm2, Dp2, C2);
    assemble2(Dm1[0], Dm1[1], Dm1[2], Dm2[0], Dm2[1], Dm2[2], ex, ey, Fm);
    assemble2(Dp1[0], Dp1[1], Dp1[2], Dp2[0], Dp2[1], Dp2[2], ex, ey, Fp);
    dmax = max_(fabs(sl), fabs(sr));
    return FLAG_THIN | (hyperbolic ? 0 : FLAG_NONHYPERBOLIC);
}

// Two-layer PVM-IFCP edge contributions F-, F+, ||D||_inf = max(|lambda1|, |lambda4|)
// and flags (§5): S_ext = sgn(lambda1 + lambda4) (1 where that sum is 0), flag 1 where the
// approximate hyperbolicity criterion fails (the scheme still runs: it needs only real
// speeds); thin edges (a layer below eps_h on either side) go to thin_flux2 (§13).
template <typename T>
FVSWE_DEV int flux2(const T* Wi, const T* Wj, T Hi, T Hj, T ex, T ey, T g, T r, T eps_h,
                                     T* Fm, T* Fp, T& dmax)
{
    Layer<T> L1, L2;
    T DH, v[4], lam[4], m[4], a0, a1, a2;
    edge2(Wi, Wj, Hi, Hj, ex, ey, g, eps_h, L1, L2, DH);
    if (thin_edge(L1, L2, eps_h)) return thin_flux2(Wi, Wj, Hi, Hj, ex, ey, g, r, eps_h, Fm, Fp, dmax);
    total_fluctuation(L1, L2, DH, r, v);
    const bool hyperbolic = approx_eigenvalues(L1, L2, r, lam);
    const T S = sgn(lam[0] + lam[3]);
    const T chi = (S == T(0) ? T(1) : S) * max_(fabs(lam[1]), fabs(lam[2]));
    ifcp_coefficients(lam[0], lam[3], chi, a0, a1, a2);
    viscous_split2(v, L1, L2, DH, r, a0, a1, a2, m);
    T t1m, t1p, t2m, t2p;
    upwind_tangential(L1.qni + m[0], L1.qni, L1.qnj, L1.uti, L1.utj, t1m, t1p);
    upwind_tangential(L2.qni + m[2], L2.qni, L2.qnj, L2.uti, L2.utj, t2m, t2p);
    assemble2(m[0], m[1], t1m, m[2], m[3], t2m, ex, ey, Fm);
    assemble2(v[0] - m[0], v[1] - m[1], t1p, v[2] - m[2], v[3] - m[3], t2p, ex, ey, Fp);
    dmax = max_(fabs(lam[0]), fabs(lam[3]));
    return hyperbolic ? 0 : FLAG_NONHYPERBOLIC;
}

}  // namespace pvm_ifcp
