// Coriolis and wind per cell (docs/SCHEMES.md §15), mirroring fvswe/backends/cpu/forcing.py
// one for one: the same operations in the same order, in double, so that float64 runs agree
// with the CPU bit for bit (the modules are compiled without FMA contraction).
#pragma once

// Large & Pond (1981): C_d = 1.2e-3 below LP_BREAK m/s, (0.49 + 0.065 U10) 1e-3 above, U10
// held at LP_CAP beyond it (fvswe.schemes.forcing.LP_BREAK, LP_CAP).
#define LP_BREAK 11.0
#define LP_CAP 25.0

// A piecewise-linear table's value at t, samples lo..hi (inclusive), end values held outside.
__device__ __forceinline__ double table_value(double t, const double* times, const double* values,
                                              int lo, int hi)
{
    if (t <= times[lo]) return values[lo];
    if (t >= times[hi]) return values[hi];
    while (hi - lo > 1) {  // invariant: times[lo] <= t < times[hi]
        const int mid = (lo + hi) / 2;
        if (times[mid] <= t) lo = mid;
        else hi = mid;
    }
    const double slope = (values[hi] - values[lo]) / (times[hi] - times[lo]);
    return values[lo] + slope * (t - times[lo]);
}

// C_d(U10): 1 constant cd, 2 Large & Pond (1981), 3 Wu (1982).
__device__ __forceinline__ double drag_coefficient(double speed, int law, double cd)
{
    if (law == 2) {
        if (speed < LP_BREAK) return 1.2e-3;
        const double capped = speed < LP_CAP ? speed : LP_CAP;
        return (0.49 + 0.065 * capped) * 1e-3;
    }
    if (law == 3) return (0.8 + 0.065 * speed) * 1e-3;
    return cd;
}

// tau / rho_w = (rho_a / rho_w) C_d |U10| U10 of the wind (u, v).
__device__ __forceinline__ void wind_stress(double u, double v, int law, double cd, double ratio,
                                            double& ax, double& ay)
{
    const double speed = sqrt(u * u + v * v);
    const double k = ratio * drag_coefficient(speed, law, cd) * speed;
    ax = k * u;
    ay = k * v;
}

// tau / rho_w at time t of the wind table (times, u, v) of n samples.
__device__ __forceinline__ void wind_at(double t, const double* times, const double* u,
                                        const double* v, int n, int law, double cd, double ratio,
                                        double& ax, double& ay)
{
    wind_stress(table_value(t, times, u, 0, n - 1), table_value(t, times, v, 0, n - 1), law, cd,
                ratio, ax, ay);
}

// (cos theta, sin theta) of the Cayley (Crank-Nicolson) rotation, a = f dt / 2.
__device__ __forceinline__ void rotation(double f, double dt, double& c, double& s)
{
    const double a = 0.5 * (f * dt);
    const double a2 = a * a;
    const double d = 1.0 + a2;
    c = (1.0 - a2) / d;
    s = (a + a) / d;
}

// One layer's (qx, qy) after the wind (if wind and h >= eps_h) and the rotation.
__device__ __forceinline__ void force_layer(double h, double& qx, double& qy, double c, double s,
                                            double ax, double ay, double dt, double eps_h, bool wind)
{
    if (wind && h >= eps_h) {
        qx = qx + dt * ax;
        qy = qy + dt * ay;
    }
    const double x = c * qx + s * qy;
    qy = c * qy - s * qx;
    qx = x;
}
