// Ghost states of the boundaries with time series (docs/SCHEMES.md §7.4-§7.6): CUDA mirror
// of fvswe/backends/cpu/ghosts.py, with the same names, branches and order of
// floating-point operations, in double on 6-vectors (one layer fills the first three, as
// the CPU's 6-tuples), so float64 runs agree with the CPU bit for bit. Table values: a
// level or far-field level (m), or a unit discharge into the domain (m^2/s).
#pragma once

#include "physics.cuh"

// Out-parameter forms of the emitted common::rotate and common::rotate_back (physics.cuh).
FVSWE_DEV void rotate(double qx, double qy, double ex, double ey, double& qn, double& qt)
{
    const auto r = common::rotate<double>(qx, qy, ex, ey);
    qn = r.f0;
    qt = r.f1;
}
FVSWE_DEV void rotate_back(double qn, double qt, double ex, double ey, double& qx, double& qy)
{
    const auto r = common::rotate_back<double>(qn, qt, ex, ey);
    qx = r.f0;
    qy = r.f1;
}

// Newton on the ghost celerity of a discharge edge (mirrors ghosts.DISCHARGE_MAXIT, _TOL).
#define DISCHARGE_MAXIT 60
#define DISCHARGE_TOL 1e-15

// Imposed surface level eta (and interface level eta2, two layers) over the inner bed,
// moving with the inner cell's desingularised velocities (§7.4).
FVSWE_DEV void level_ghost(const double* w, double H, double eta, double eta2, int layers,
                           double eps_h, double* g)
{
    if (layers == 1) {
        const double hg = max_(eta + H, 0.0);
        const double k = common::inverse_depth<double>(w[0], eps_h);
        g[0] = hg; g[1] = hg * (w[1] * k); g[2] = hg * (w[2] * k);
        g[3] = 0.0; g[4] = 0.0; g[5] = 0.0;
        return;
    }
    const double ht = max_(eta + H, 0.0);
    const double h2 = min_(max_(eta2 + H, 0.0), ht);
    const double h1 = ht - h2;
    const double k1 = common::inverse_depth<double>(w[0], eps_h);
    const double k2 = common::inverse_depth<double>(w[3], eps_h);
    g[0] = h1; g[1] = h1 * (w[1] * k1); g[2] = h1 * (w[2] * k1);
    g[3] = h2; g[4] = h2 * (w[4] * k2); g[5] = h2 * (w[5] * k2);
}

// Ghost celerity c = sqrt(g h) of an outward unit discharge phi that keeps the outgoing
// invariant R = u_n + 2 c: the subcritical root of 2c^3 - R c^2 + g phi by Newton from above
// (the critical R/3 when an outflow has no root; §7.5).
FVSWE_DEV double discharge_celerity(double phi, double R, double grav)
{
    const double Rp = max_(R, 0.0);
    double c;
    if (phi < 0.0) {
        const double x = -0.5 * grav * phi;
        c = 0.5 * Rp + max_(sqrt(x), sqrt(sqrt(x)));
    } else {
        const double cc = Rp / 3.0;
        if ((2.0 * cc - R) * cc * cc + grav * phi >= 0.0) return cc;
        c = 0.5 * Rp;
    }
    for (int it = 0; it < DISCHARGE_MAXIT; ++it) {
        const double p = (2.0 * c - R) * c * c + grav * phi;
        const double dp = (6.0 * c - 2.0 * R) * c;
        if (!(dp > 0.0)) break;
        const double dc = p / dp;
        c = c - dc;
        if (fabs(dc) <= DISCHARGE_TOL * c) break;
    }
    return c;
}

// Ghost (qx, qy) with normal discharge phi: no tangential flow coming in, the inner
// tangential velocity ut going out.
FVSWE_DEV void discharge_momentum(double hg, double phi, double ut, double ex, double ey,
                                  double& qx, double& qy)
{
    const double qt = phi > 0.0 ? hg * ut : 0.0;
    rotate_back(phi, qt, ex, ey, qx, qy);
}

// Imposed unit discharges into the domain qin1 (qin2: lower layer): one layer takes its
// depth from the outgoing Riemann invariant, two layers keep the inner depths (§7.5).
FVSWE_DEV void discharge_ghost(const double* w, double qin1, double qin2, double ex, double ey,
                               double grav, int layers, double eps_h, double* g)
{
    const double phi1 = -qin1;
    double qn1, qt1;
    rotate(w[1], w[2], ex, ey, qn1, qt1);
    const double k1 = common::inverse_depth<double>(w[0], eps_h);
    if (layers == 1) {
        const double c = discharge_celerity(phi1, qn1 * k1 + 2.0 * sqrt(grav * w[0]), grav);
        const double hg = c * c / grav;
        g[0] = hg;
        discharge_momentum(hg, phi1, qt1 * k1, ex, ey, g[1], g[2]);
        g[3] = 0.0; g[4] = 0.0; g[5] = 0.0;
        return;
    }
    const double phi2 = -qin2;
    double qn2, qt2;
    rotate(w[4], w[5], ex, ey, qn2, qt2);
    const double k2 = common::inverse_depth<double>(w[3], eps_h);
    g[0] = w[0];
    discharge_momentum(w[0], phi1, qt1 * k1, ex, ey, g[1], g[2]);
    g[3] = w[3];
    discharge_momentum(w[3], phi2, qt2 * k2, ex, ey, g[4], g[5]);
}

// F- with its mass components replaced so that each layer's outward mass flux
// F-_h + q_i.eta is exactly -qin (§7.5).
FVSWE_DEV void discharge_fluctuation(double* Fm, const double* w, double qin1, double qin2,
                                     double ex, double ey, int layers)
{
    Fm[0] = -qin1 - (w[1] * ex + w[2] * ey);
    if (layers == 1) return;
    Fm[3] = -qin2 - (w[4] * ex + w[5] * ey);
}

// (h_g, u_g) from the outgoing invariant u_n + 2 sqrt(g h) of the inner state and the
// incoming one -2 sqrt(g h_ext) of a far field at rest of depth h_ext (§7.6).
FVSWE_DEV void characteristic_state(double h, double un, double hext, double grav, double& hg,
                                    double& ug)
{
    const double rp = un + 2.0 * sqrt(grav * h);
    const double rm = -2.0 * sqrt(grav * max_(hext, 0.0));
    const double c = max_(0.25 * (rp - rm), 0.0);
    hg = c * c / grav;
    ug = 0.5 * (rp + rm);
}

// Non-reflecting ghost toward a far field at rest at level eta (§7.6): one layer, or the
// external mode of two (the interface depth and the layers' velocity difference are the
// inner cell's).
FVSWE_DEV void characteristic_ghost(const double* w, double H, double eta, double ex, double ey,
                                    double grav, int layers, double eps_h, double* g)
{
    double qn1, qt1, hg, ug;
    rotate(w[1], w[2], ex, ey, qn1, qt1);
    const double k1 = common::inverse_depth<double>(w[0], eps_h);
    if (layers == 1) {
        characteristic_state(w[0], qn1 * k1, eta + H, grav, hg, ug);
        g[0] = hg;
        rotate_back(hg * ug, hg * (qt1 * k1), ex, ey, g[1], g[2]);
        g[3] = 0.0; g[4] = 0.0; g[5] = 0.0;
        return;
    }
    double qn2, qt2;
    rotate(w[4], w[5], ex, ey, qn2, qt2);
    const double k2 = common::inverse_depth<double>(w[3], eps_h);
    const double h = w[0] + w[3];
    const double un = (qn1 + qn2) * common::inverse_depth<double>(h, eps_h);
    characteristic_state(h, un, eta + H, grav, hg, ug);
    const double du = ug - un;
    const double h2 = min_(w[3], hg);
    const double h1 = hg - h2;
    g[0] = h1;
    rotate_back(h1 * (qn1 * k1 + du), h1 * (qt1 * k1), ex, ey, g[1], g[2]);
    g[3] = h2;
    rotate_back(h2 * (qn2 * k2 + du), h2 * (qt2 * k2), ex, ey, g[4], g[5]);
}
