// Bottom and interfacial friction per cell: CUDA mirror of fvswe/backends/cpu/friction.py
// (NumPy reference fvswe/schemes/friction.py, docs/SCHEMES.md §14). Same names, same order
// of floating-point operations, all in float64 whatever the module's real type.
#pragma once

#include "physics.cuh"

#define FRICTION_CHEZY 1  // fvswe.schemes.friction.FRICTION_KINDS
#define FRICTION_MANNING 2

namespace friction {

// One backward-Euler bottom-friction step, solved exactly: beta = dt g |u| / (C^2 h) (Chezy)
// or dt g n^2 |u| / h^(4/3) (Manning), q <- q 2 / (1 + sqrt(1 + 4 beta)); a dry cell
// (h <= 0) gets q = 0.
FVSWE_DEV void bottom(double h, double& qx, double& qy, int kind, double coef, double g, double dt)
{
    if (!(h > 0)) {
        qx = 0.0;
        qy = 0.0;
        return;
    }
    const double speed = sqrt(qx * qx + qy * qy);
    if (speed == 0) return;
    double num, den;
    if (kind == FRICTION_CHEZY) {
        num = dt * g * (speed / h);
        den = coef * coef * h;
    } else {
        num = dt * g * coef * coef * (speed / h);
        den = pow(h, 4.0 / 3.0);
    }
    // h^(4/3) may underflow: q -> 0, the limit beta -> inf
    const double factor = den > 0 ? 2.0 / (1.0 + sqrt(1.0 + 4.0 * (num / den))) : 0.0;
    qx = qx * factor;
    qy = qy * factor;
}

// Exact decay of the shear s = u1 - u2 over dt: p = m w / (m + w), w = dt c_i |s|,
// m = h1 h2 / (r h1 + h2); layer 1 loses p s, layer 2 gains r p s (r q1 + q2 conserved).
// Nothing happens where a layer is dry or c_i = 0.
FVSWE_DEV void interfacial(double h1, double& q1x, double& q1y, double h2, double& q2x, double& q2y,
                           double coef, double r, double eps_h, double dt)
{
    if (!(h1 > 0 && h2 > 0 && coef > 0)) return;
    const double k1 = common::inverse_depth<double>(h1, eps_h);
    const double k2 = common::inverse_depth<double>(h2, eps_h);
    const double sx = q1x * k1 - q2x * k2;
    const double sy = q1y * k1 - q2y * k2;
    const double shear = sqrt(sx * sx + sy * sy);
    if (shear == 0) return;
    const double m = h1 * h2 / (r * h1 + h2);
    const double w = dt * coef * shear;
    const double p = m * w / (m + w);
    const double px = p * sx;
    const double py = p * sy;
    q1x = q1x - px;
    q1y = q1y - py;
    q2x = q2x + r * px;
    q2y = q2y + r * py;
}

}  // namespace friction
