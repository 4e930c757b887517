"""Exact one-layer solutions for verification: the dam breaks (Ritter: dry bed; Stoker: wet
bed), the linear long waves forced by a bed moving at constant speed, a steady vortex
(:func:`vortex`, smooth: the order of accuracy in space), and the nonlinear runup of a wave
on a plane beach (Carrier, Wu & Yeh 2003: :class:`BeachRunup`).

Flat frictionless bed, depth ``hl`` behind a dam at ``x0`` and ``hr`` beyond it, at rest at
t = 0. The left state opens into a centred rarefaction ``h = (2 c_l - xi)^2 / (9 g)``,
``u = 2 (xi + c_l) / 3`` (``xi = (x - x0) / t``, ``c_l = sqrt(g h_l)``). On a dry bed it
reaches ``h = 0`` at the front ``xi = 2 c_l`` (Ritter 1892); on a wet bed it ends in a
plateau ``(h_m, u_m)`` and a shock, with ``h_m`` from ``u_m = 2 (c_l - c_m)`` (the
rarefaction) equal to the shock's ``(h_m - h_r) sqrt(g (h_m + h_r) / (2 h_m h_r))``
(Stoker 1957; Toro, Shock-Capturing Methods for Free-Surface Shallow Flows, 2001, §4).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from scipy.optimize import brentq
from scipy.special import j0, j1


def dam_break(
    x: np.ndarray, t: float, hl: float, hr: float, x0: float = 0.0, g: float = 9.81
) -> tuple[np.ndarray, np.ndarray, dict[str, float]]:
    """Depth and velocity at ``x`` and time ``t > 0``, and the features' positions.

    The features are the rarefaction's ``head`` and (Stoker) ``tail``, the ``shock`` or the
    dry ``front``, and the ``dam`` where the fan is transonic (the sonic point stays there:
    always on a dry bed, for ``hr / hl`` below about 0.138 on a wet one).
    """
    x = np.asarray(x, dtype=float)
    cl = np.sqrt(g * hl)
    xi = (x - x0) / t
    h = np.full_like(x, hl)
    u = np.zeros_like(x)
    fan = xi > -cl
    h[fan] = (2 * cl - xi[fan]) ** 2 / (9 * g)
    u[fan] = 2 * (xi[fan] + cl) / 3
    if hr == 0:
        dry = xi >= 2 * cl
        h[dry], u[dry] = 0.0, 0.0
        return h, u, {"head": x0 - cl * t, "dam": x0, "front": x0 + 2 * cl * t}

    def gap(hm: float) -> float:  # rarefaction velocity minus the shock's, behind the shock
        return 2 * (cl - np.sqrt(g * hm)) - (hm - hr) * np.sqrt(g * (hm + hr) / (2 * hm * hr))

    hm = brentq(gap, hr, hl, xtol=1e-15)
    um, cm = 2 * (cl - np.sqrt(g * hm)), np.sqrt(g * hm)
    shock = hm * um / (hm - hr)
    plateau, right = xi >= um - cm, xi >= shock
    h[plateau], u[plateau] = hm, um
    h[right], u[right] = hr, 0.0
    features = {"head": x0 - cl * t, "tail": x0 + (um - cm) * t, "shock": x0 + shock * t}
    if um - cm > 0:
        features["dam"] = x0
    return h, u, features


def moving_bed(
    x: np.ndarray,
    t: float,
    bump: Callable[[np.ndarray], np.ndarray],
    speed: float,
    depth: float,
    g: float = 9.81,
) -> tuple[np.ndarray, np.ndarray]:
    """Surface ``eta`` and velocity ``u`` at ``x`` and ``t >= 0`` of the linear long waves
    made by a bed bump ``b(x - U t)`` (elevation above a flat floor ``depth`` deep, small)
    that moves at the constant ``speed`` U from t = 0, the water at rest and flat before.

    The linear equations ``eta_t + depth u_x = b_t``, ``u_t + g eta_x = 0`` give
    ``eta_tt - c^2 eta_xx = b_tt`` (``c = sqrt(g depth)``). Their solution is the forced wave
    riding on the bump, ``U^2 / (U^2 - c^2) b(x - U t)``, plus the two free waves that the
    start leaves, ``-U / (2 (U - c)) b(x - c t)`` and ``-U / (2 (U + c)) b(x + c t)``
    (their sum is 0 at t = 0, and so is ``eta_t - b_t``); ``u`` follows from the mass
    equation of each travelling part (the forced wave of a landslide at constant speed,
    e.g. Tinti, Bortolucci & Chiavettieri 2001, Pure Appl. Geophys. 158). A bump at the
    long-wave speed (``U = c``) resonates and grows without bound: refused.
    """
    x = np.asarray(x, dtype=float)
    c = np.sqrt(g * depth)
    U = float(speed)
    if abs(U * U - c * c) <= 1e-9 * c * c:
        raise ValueError(f"moving_bed: a bump at the long-wave speed {c:g} m/s resonates")
    forced, ahead, behind = bump(x - U * t), bump(x - c * t), bump(x + c * t)
    eta = (U * U * forced - 0.5 * U * (U + c) * ahead - 0.5 * U * (U - c) * behind) / (
        U * U - c * c
    )
    u = (U * c * c * forced - 0.5 * U * c * (U + c) * ahead + 0.5 * U * c * (U - c) * behind) / (
        (U * U - c * c) * depth
    )
    return eta, u


def vortex(
    x: np.ndarray,
    y: np.ndarray,
    h0: float = 1.0,
    gamma: float = 1.0,
    R: float = 1.0,
    g: float = 9.81,
) -> dict[str, np.ndarray]:
    """A steady vortex on a flat bed (``h, qx, qy`` at ``(x, y)``, any time): the azimuthal
    velocity ``u_θ = gamma r exp(-r^2 / R^2)`` balanced by the depth's gradient,
    ``g h' = u_θ^2 / r``, so ``h = h0 - gamma^2 R^2 / (4 g) exp(-2 r^2 / R^2)``. Smooth, an
    exact solution of the shallow-water equations, at rest far from the centre."""
    r2 = np.asarray(x, dtype=float) ** 2 + np.asarray(y, dtype=float) ** 2
    h = h0 - gamma**2 * R**2 / (4.0 * g) * np.exp(-2.0 * r2 / R**2)
    speed = gamma * np.exp(-r2 / R**2)  # u_θ / r
    return {"h": h, "qx": -h * speed * y, "qy": h * speed * x}


def _gauss(lo: float, hi: float, panels: int, order: int = 8) -> tuple[np.ndarray, np.ndarray]:
    """Nodes and weights of composite Gauss-Legendre quadrature on ``[lo, hi]``."""
    t, w = np.polynomial.legendre.leggauss(order)
    edges = np.linspace(lo, hi, panels + 1)
    half = 0.5 * np.diff(edges)[:, None]
    mid = 0.5 * (edges[1:] + edges[:-1])[:, None]
    return (mid + half * t).ravel(), (half * w).ravel()


class BeachRunup:
    """The exact nonlinear shallow-water solution for a wave at rest at t = 0 over a plane
    beach, running down and up it (Carrier & Greenspan 1958; Carrier, Wu & Yeh 2003).

    ``x`` is the distance offshore from the still shoreline, the bed ``z = -slope x``. The
    initial surface is given, as in Carrier, Wu & Yeh's problem, as a function of
    ``xi = x + eta / slope`` (the distance at which the still water is as deep as the water
    column): ``eta0 = surface(xi)`` (m, negligible beyond ``reach``). In units of
    ``L = reach / 10``, ``slope L`` and ``sqrt(L / (slope g))`` the hodograph transformation
    ``sigma = 4 sqrt(x + eta)``, ``lambda = 2 (t - u)`` turns the equations into the linear
    ``phi_ll = phi_ss + phi_s / sigma``, with ``u = phi_s / sigma``,
    ``eta = -phi_l / 4 - u^2 / 2``, ``x = sigma^2 / 16 - eta``, ``t = u + lambda / 2``; t = 0
    is ``lambda = 0``, where ``phi = 0`` and ``phi_l = -4 eta0``. Its solution is the Hankel
    integral ``phi = int A(k) J0(k sigma) sin(k lambda) dk``, ``A(k) = int phi_l(s, 0) J0(k s)
    s ds`` (the initial-value integral), evaluated here by Gauss-Legendre quadrature up to
    ``kmax`` (``A`` must have decayed there: 25 for Carrier, Wu & Yeh's wave, whose digits 40
    does not change); a point ``(x, t)`` is found by Newton's method in ``lambda`` along each
    ``sigma``. Valid while the wave does not break (the transformation's Jacobian keeps its
    sign); where the solution folds (Carrier, Wu & Yeh's shoreline for 0.3 s near 173 s) the
    bracketed iteration returns one of its branches.
    """

    def __init__(self, surface: Callable[[np.ndarray], np.ndarray], slope: float,
                 reach: float, g: float = 9.81, kmax: float = 25.0) -> None:  # fmt: skip
        self.slope, self.L = float(slope), reach / 10.0
        self.T = np.sqrt(self.L / (slope * g))
        self.V = np.sqrt(g * slope * self.L)
        self.a = slope * self.L  # the surface's unit
        s, ws = _gauss(0.0, 4.0 * np.sqrt(12.0), 240)
        self.k, wk = _gauss(0.0, kmax, 100)
        p0 = -4.0 * surface(self.L * s * s / 16.0) / self.a  # phi_lambda at lambda = 0
        A = j0(np.outer(self.k, s)) @ (p0 * s * ws)
        self.Ak = A * wk  # the weights folded in

    def _bessel(self, sigma: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``J0(k sigma)`` and ``J1(k sigma) / sigma`` (``k / 2`` at ``sigma = 0``)."""
        ks = np.outer(sigma, self.k)
        safe = np.where(sigma > 0, sigma, 1.0)[:, None]
        return j0(ks), np.where(sigma[:, None] > 0, j1(ks) / safe, 0.5 * self.k)

    def _fields(self, sigma: np.ndarray, lam: np.ndarray, bessel: tuple) -> tuple[np.ndarray, ...]:
        """``u``, ``eta``, ``x``, ``t`` and ``du/dlambda`` at ``(sigma, lambda)`` (scaled),
        given :meth:`_bessel` of ``sigma``."""
        kl = np.outer(lam, self.k)
        cos, sin = np.cos(kl), np.sin(kl)
        phi_l = (bessel[0] * cos) @ (self.Ak * self.k)
        u = -(bessel[1] * sin) @ (self.Ak * self.k)
        u_l = -(bessel[1] * cos) @ (self.Ak * self.k**2)
        eta = -phi_l / 4.0 - u * u / 2.0
        return u, eta, sigma**2 / 16.0 - eta, u + lam / 2.0, u_l

    def _at_time(self, sigma: np.ndarray, t: np.ndarray | float) -> tuple[np.ndarray, ...]:
        """:meth:`_fields` where the scaled time is ``t``: Newton's method in ``lambda``,
        kept inside a bracket (``t`` grows with ``lambda`` along ``sigma`` while the wave
        does not break; ``|u| < 1``, so ``lambda`` lies within 2 of ``2 t``)."""
        t = np.broadcast_to(np.asarray(t, dtype=float), sigma.shape)
        lo, hi, lam = 2.0 * t - 2.0, 2.0 * t + 2.0, 2.0 * t
        bessel = self._bessel(sigma)
        todo = np.arange(sigma.size)  # the points not converged yet
        for _ in range(200):
            part = (bessel[0][todo], bessel[1][todo])
            u, _, _, tt, u_l = self._fields(sigma[todo], lam[todo], part)
            miss = tt - t[todo]
            lo[todo] = np.where(miss < 0, lam[todo], lo[todo])
            hi[todo] = np.where(miss > 0, lam[todo], hi[todo])
            newton = lam[todo] - miss / (u_l + 0.5)
            inside = (newton > lo[todo]) & (newton < hi[todo])
            lam[todo] = np.where(inside, newton, 0.5 * (lo[todo] + hi[todo]))
            todo = todo[np.abs(miss) >= 1e-13]
            if todo.size == 0:
                return self._fields(sigma, lam, bessel)
        raise ArithmeticError(f"BeachRunup: no convergence at t = {t.max() * self.T:g} s")

    def shoreline(self, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The shoreline's position ``x_s`` (m) and velocity (m/s) at the times ``t`` (s)."""
        t = np.atleast_1d(np.asarray(t, dtype=float))
        u, _, x, _, _ = self._at_time(np.zeros(t.shape), t / self.T)
        return x * self.L, u * self.V

    def profile(self, x: np.ndarray, t: float, n: int = 201) -> tuple[np.ndarray, np.ndarray]:
        """The surface ``eta`` (m) and velocity ``u`` (m/s, positive offshore) at the points
        ``x`` (m; landward of the shoreline, the shoreline's) and the time ``t`` (s),
        interpolated from ``n`` values of ``sigma`` from the shoreline to beyond ``max(x)``."""
        x = np.asarray(x, dtype=float)
        top = 4.0 * np.sqrt(max(x.max(), 0.0) / self.L + 0.1)
        u, eta, xs, _, _ = self._at_time(np.linspace(0.0, top, n), t / self.T)
        if np.any(np.diff(xs) <= 0) or x.max() > xs[-1] * self.L:
            raise ValueError(f"BeachRunup.profile: breaking, or x beyond the sea, at t = {t} s")
        return np.interp(x, xs * self.L, eta * self.a), np.interp(x, xs * self.L, u * self.V)
