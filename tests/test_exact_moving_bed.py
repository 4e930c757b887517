"""The linear long waves of a bed bump moving at constant speed (fvswe.exact.moving_bed), held
against the equations it solves and an independent numerical integration of them."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.integrate import solve_ivp

from fvswe.exact import moving_bed

G, DEPTH = 9.81, 10.0
C = np.sqrt(G * DEPTH)


def bump(s):
    """A 0.1 m Gaussian bump, 20 m wide."""
    return 0.1 * np.exp(-((s / 20.0) ** 2))


@pytest.mark.parametrize("speed", [0.3 * C, 1.7 * C, -0.5 * C])
def test_starts_at_rest_and_solves_the_linear_equations(speed):
    """Flat and at rest at t = 0; the residuals of ``eta_t + D u_x = b_t`` and
    ``u_t + g eta_x = 0`` by centred differences fall as the step squared (below 0.1 % of
    the time derivatives at a 0.025 step)."""
    x = np.linspace(-300.0, 300.0, 1201)
    eta, u = moving_bed(x, 0.0, bump, speed, DEPTH, G)
    assert np.abs(eta).max() < 1e-15 and np.abs(u).max() < 1e-15

    def residuals(h):
        t = 7.0
        (ep, up), (em, um) = (moving_bed(x, t + s, bump, speed, DEPTH, G) for s in (h, -h))
        (ex, ux), (ew, uw) = (moving_bed(x + s, t, bump, speed, DEPTH, G) for s in (h, -h))
        bt = (bump(x - speed * (t + h)) - bump(x - speed * (t - h))) / (2 * h)
        eta_t, u_t = (ep - em) / (2 * h), (up - um) / (2 * h)
        mass = eta_t + DEPTH * (ux - uw) / (2 * h) - bt
        momentum = u_t + G * (ex - ew) / (2 * h)
        return (np.abs(mass).max() / np.abs(eta_t).max(),
                np.abs(momentum).max() / np.abs(u_t).max())  # fmt: skip

    coarse, fine = residuals(0.05), residuals(0.025)  # relative to the time derivatives
    for r0, r1 in zip(coarse, fine, strict=True):
        assert r1 < 0.3 * r0  # second order: a quarter
        assert r1 < 1e-3


@pytest.mark.parametrize("speed", [0.4 * C, 1.5 * C])
def test_matches_an_independent_integration(speed):
    """Fourth-order differences in x and an adaptive Runge-Kutta in t of the same linear
    system (nothing shared with the formula) agree with it at t = 8 s to 1e-5 of the bump."""
    x = np.linspace(-400.0, 400.0, 3201)
    dx = x[1] - x[0]

    def ddx(f):
        out = np.zeros_like(f)
        out[2:-2] = (f[:-4] - 8 * f[1:-3] + 8 * f[3:-1] - f[4:]) / (12 * dx)
        return out

    def rhs(t, y):
        eta, u = y[: x.size], y[x.size :]
        bt = -speed * ddx(bump(x - speed * t))
        return np.concatenate([bt - DEPTH * ddx(u), -G * ddx(eta)])

    sol = solve_ivp(rhs, (0.0, 8.0), np.zeros(2 * x.size), rtol=1e-10, atol=1e-12)
    eta, u = moving_bed(x, 8.0, bump, speed, DEPTH, G)
    assert np.abs(sol.y[: x.size, -1] - eta).max() < 1e-5 * 0.1
    assert np.abs(sol.y[x.size :, -1] - u).max() < 1e-5 * 0.1 * C / DEPTH * 10


def test_subcritical_bump_carries_a_depression_and_resonance_is_refused():
    """Long after the start a bump slower than the waves rides under a depression
    ``U^2 / (U^2 - c^2) b``, a faster one under a hump; ``U = c`` is refused."""
    x = np.linspace(-100.0, 100.0, 401)
    for speed, sign in ((0.5 * C, -1), (2.0 * C, 1)):
        t = 2000.0 / abs(speed - C)  # the free waves far away from the bump
        eta, _ = moving_bed(x + speed * t, t, bump, speed, DEPTH, G)
        np.testing.assert_allclose(eta, speed**2 / (speed**2 - C**2) * bump(x), atol=1e-12)
        assert sign * eta[200] > 0
    with pytest.raises(ValueError, match="resonates"):
        moving_bed(x, 1.0, bump, C, DEPTH, G)
