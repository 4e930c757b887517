"""One step of the θ-scheme on the staggered C-grid (docs/IMPLICIT.md).

Momentum, per face (x faces shown; the y faces are the x faces of the transposed grid)::

    u' = r (u - Δt A(u) - g Δt/Δx (ζ_R - ζ_L)) - r θ g Δt/Δx (δ_R - δ_L)

with ``δ = ζⁿ⁺¹ - ζⁿ``, explicit first-order upwind advection ``A`` in Stelling and
Duinmeijer's momentum-conservative form, and implicit Chézy/Manning friction through
``r = 1 / (1 + Δt c_f |u| / h_f)``. Continuity with the face depths ``h_f`` of step n::

    δ_i = -Δt/Δx (F_e - F_w) - Δt/Δy (F_n - F_s),   F = h_f (θ u' + (1 - θ) u)

Substituting gives ``(I + θ² g Δt² Σ_f h_f r_f / Δ² (difference)) δ = b``
(:class:`~fvswe.implicit.operator.Stencil`), solved by preconditioned CG from ``δ = 0``
(the previous level). The level then comes from the continuity equation with the new
velocities, so the volume is conserved to round-off whatever CG's residual. A cell the
step would leave with a negative depth is taken out (its faces closed) and the step is
repeated (Delft3D-FLOW's rule), so depths stay non-negative.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from ..schemes.friction import CHEZY
from . import kernel_cg, precond
from .cg import NotConverged, fused, pcg
from .cgrid import CGrid, Faces
from .kernel_cg import KernelCG
from .operator import Stencil, _host, add_into
from .options import ImplicitOptions

#: A step repeated this often (cells taken out each time) has failed.
MAX_REPEATS = 100


@dataclass
class State:
    """Levels ``zeta`` ``(ny, nx)``, ``u`` ``(ny, nx + 1)``, ``v`` ``(ny + 1, nx)``."""

    zeta: object
    u: object
    v: object

    def copy(self) -> State:
        return State(self.zeta.copy(), self.u.copy(), self.v.copy())


@dataclass(frozen=True)
class Report:
    """What a step did: CG iterations (all solves), solves, volume in (m^3), and of the new
    state :meth:`ThetaStep.maxima`: the largest speeds at which the next step advects ``u``
    and ``v`` and the largest depth (the next step's Δt needs them)."""

    iterations: int
    solves: int
    inflow: float
    maxima: tuple[float, float, float]


@dataclass
class _Terms:
    """One direction's face quantities of a step (x orientation)."""

    hf: object  # upwind face depth, 0 where dry
    r: object  # friction factor
    ustar: object  # u' without the level increment
    c: object  # the system's face coefficient
    u0: object  # uⁿ, 0 where dry


class _DeviceFaces:
    """:class:`~fvswe.implicit.cgrid.Faces` on the device, in the run's dtype."""

    def __init__(self, faces: Faces, xp, dtype):
        self.open = xp.asarray(faces.open)
        self.bed = xp.asarray(faces.bed, dtype=dtype)
        self.friction = None if faces.friction is None else xp.asarray(faces.friction, dtype)
        self.table = faces.table
        self.spacing, self.across = faces.spacing, faces.across


class ThetaStep:
    """The θ-step of a :class:`~fvswe.implicit.cgrid.CGrid` on NumPy or CuPy (``xp``)."""

    def __init__(self, grid: CGrid, g: float, options: ImplicitOptions, xp, dtype,
                 check: int = 1):  # fmt: skip
        """``check``: CG's iterations between two stopping tests (:func:`~.cg.pcg`)."""
        self.grid, self.g, self.options, self.xp, self.dtype = grid, g, options, xp, dtype
        self.check = check
        self.kernels = (
            KernelCG(xp, dtype, options.preconditioner)
            if kernel_cg.applies(xp, options.preconditioner) else None
        )  # fmt: skip
        self.H = xp.asarray(grid.H, dtype=dtype)
        self.faces = (_DeviceFaces(grid.x, xp, dtype), _DeviceFaces(grid.y, xp, dtype))
        self._unclosed = [xp.zeros(f.open.shape, dtype=bool) for f in self.faces]  # none closed

    def ghosts(self, t: float, dt: float):
        """The imposed level at each end of every row of faces (x, then transposed y) at
        ``t`` and at ``t + dt``: two lists of two arrays, on the device in one upload."""
        levels = self.grid.levels
        host = []
        for time in (t, t + dt):
            values = levels.at(time) if levels is not None and levels.count else np.zeros(1)
            host += [np.where(f.table >= 0, values[f.table], 0.0) for f in self.faces]
        flat = self.xp.asarray(np.concatenate([a.ravel() for a in host]), self.dtype)
        ends = np.cumsum([a.size for a in host])
        out = [flat[end - a.size : end].reshape(a.shape) for a, end in zip(host, ends, strict=True)]
        return out[:2], out[2:]

    def __call__(self, s: State, t: float, dt: float) -> tuple[State, Report]:
        """The state at ``t + dt`` and what the step did (``s`` is left unchanged). Besides
        CG's tests, one transfer to the host an attempt: whether a cell went dry, the
        boundary fluxes and the new state's maxima."""
        xp = self.xp
        now, then = self.ghosts(t, dt)
        closed = [xp.zeros(f.open.shape, dtype=bool) for f in self.faces]
        iterations = solves = 0
        while True:
            new, flux, its = self._attempt(s, dt, now, then, closed)
            iterations, solves = iterations + its, solves + 1
            dry = new.zeta + self.H < 0
            any_dry, in_x, in_y, *maxima = self._status(new, dry, flux, then)
            if not any_dry:
                break
            if solves > MAX_REPEATS:  # each repeat closes faces, so it cannot go on for ever
                raise NotConverged(f"cells still drying below 0 after {MAX_REPEATS} repeats")
            for c, d in zip(closed, (dry, dry.T), strict=True):  # take the cells out
                c[:, :-1] |= d
                c[:, 1:] |= d
        inflow = dt * (self.grid.dy * in_x + self.grid.dx * in_y)
        return new, Report(iterations, solves, inflow, tuple(maxima))

    def _status(self, new: State, dry, flux, ghosts) -> list:
        """On the host in one transfer: whether any cell is ``dry``, the net inflow through
        the x and the y boundary faces (per unit width) and the :meth:`maxima` of ``new``
        (exact: values of the dtype, as Python floats)."""
        xp, (fx, fy) = self.xp, flux
        values = (dry.any(), (fx[:, 0] - fx[:, -1]).sum(), (fy[:, 0] - fy[:, -1]).sum(),
                  *self.maxima(new, ghosts))  # fmt: skip
        return [float(v) for v in _host(xp.stack([xp.asarray(v, self.dtype) for v in values]))]

    def maxima(self, s: State, ghosts) -> tuple:
        """On the device: the largest speed at which a step from ``s`` (boundary levels
        ``ghosts``) advects ``u`` and ``v`` (``|u|`` or the carrying speed ``q̄/h̄`` of
        :func:`_carrying_speed`, whichever is larger; the Δt rule bounds its Courant
        number) and the largest depth."""
        xp, h = self.xp, s.zeta + self.H
        speeds = []
        sides = ((s.zeta, h, s.u), (s.zeta.T, h.T, s.v.T))
        for f, (zeta, hh, u), g, none in zip(self.faces, sides, ghosts, self._unclosed,
                                             strict=True):  # fmt: skip
            speed = xp.abs(u).max()
            if u.shape[1] >= 3:
                left = xp.concatenate((g[:, :1], zeta), axis=1)
                right = xp.concatenate((zeta, g[:, 1:]), axis=1)
                _, hf, u0 = _kernel(xp, _wet_faces)(u, left, right, f.bed, f.open, none,
                                                    self.options.dry_depth)  # fmt: skip
                carried = _kernel(xp, _carrying_speed)(
                    hf[:, :-2], hf[:, 1:-1], hf[:, 2:], u0[:, :-2], u0[:, 1:-1], u0[:, 2:],
                    hh[:, :-1], hh[:, 1:],
                )  # fmt: skip
                speed = xp.maximum(speed, carried.max())
            speeds.append(speed)
        return speeds[0], speeds[1], h.max()

    def _attempt(self, s: State, dt: float, now, then, closed):
        """One solve of the step with the faces ``closed`` shut: the new state, the face
        fluxes (x orientation each) and CG's iterations."""
        xp = self.xp
        h = s.zeta + self.H
        fx, fy = self.faces
        X = self._terms(fx, s.zeta, h, s.u, s.v, now[0], closed[0], dt)
        Y = self._terms(fy, s.zeta.T, h.T, s.v.T, s.u.T, now[1], closed[1], dt)
        rise = (then[0] - now[0], then[1] - now[1])
        stencil = Stencil(X.c, Y.c.T)
        rhs = self._divergence(self._fluxes(X, Y, X.ustar, Y.ustar), dt)
        for T, R, b in ((X, rise[0], rhs), (Y, rise[1], rhs.T)):  # known outside increments
            add_into(b[:, 0], T.c[:, 0] * R[:, 0])
            add_into(b[:, -1], T.c[:, -1] * R[:, 1])
        delta, solve = self._solve(stencil, rhs)
        u = self._velocity(X, fx, delta, rise[0], dt)
        v = self._velocity(Y, fy, delta.T, rise[1], dt)
        flux = self._fluxes(X, Y, u, v)
        zeta = s.zeta + self._divergence(flux, dt)
        return State(zeta, u, xp.ascontiguousarray(v.T)), flux, solve.iterations

    def _solve(self, stencil: Stencil, rhs):
        """``δ`` from ``δ = 0`` and the solve: the kernels of :mod:`~.kernel_cg` on the GPU
        with Jacobi or none, else :func:`~.cg.pcg` over the array code."""
        xp, o = self.xp, self.options
        if self.kernels is not None:
            return self.kernels.solve(stencil, rhs, xp.zeros_like(rhs), o.cg_tol, check=self.check)
        M = precond.build(o.preconditioner, stencil, xp, o.rrb_coarse)
        diag = stencil.boundary_diagonal(xp)
        apply = lambda v: stencil.apply(v, xp, diag)  # noqa: E731
        return pcg(apply, M, rhs, xp.zeros_like(rhs), xp, o.cg_tol, check=self.check)

    def _fluxes(self, X: _Terms, Y: _Terms, u, v):
        """The face fluxes ``h_f (θ u + (1 - θ) uⁿ)`` of both directions (x orientation)."""
        theta, flux = self.options.theta, _kernel(self.xp, _flux)
        return tuple(flux(T.hf, w, T.u0, theta, 1 - theta) for T, w in ((X, u), (Y, v)))

    def _divergence(self, flux, dt: float):
        """``-Δt div F`` per cell, ``(ny, nx)``, of the fluxes of :meth:`_fluxes`."""
        fx, fy = flux
        sx, sy = self.faces[0].spacing, self.faces[1].spacing
        out = _kernel(self.xp, _net_outflow)(fx[:, 1:], fx[:, :-1], fy[:, 1:].T, fy[:, :-1].T,
                                             -dt / sx, -dt / sy)  # fmt: skip
        return out.astype(self.dtype, copy=False)  # a fused kernel may compute in float64

    def _velocity(self, T: _Terms, f: _DeviceFaces, delta, rise, dt: float):
        """``u'`` from the level increments ``delta`` (x orientation), 0 on dry faces."""
        xp = self.xp
        left = xp.concatenate((rise[:, :1], delta), axis=1)
        right = xp.concatenate((delta, rise[:, 1:]), axis=1)
        k = self.options.theta * self.g * dt / f.spacing
        u = _kernel(xp, _corrected)(T.hf, T.ustar, T.r, k, left, right)
        return u.astype(self.dtype, copy=False)

    def _terms(self, f: _DeviceFaces, zeta, h, u, w, ghost, closed, dt: float) -> _Terms:
        """Face depths, advection, friction, ``u'`` and the coefficients of one direction."""
        xp, g, o = self.xp, self.g, self.options
        left = xp.concatenate((ghost[:, :1], zeta), axis=1)
        right = xp.concatenate((zeta, ghost[:, 1:]), axis=1)
        wet, hf, u0 = _kernel(xp, _wet_faces)(u, left, right, f.bed, f.open, closed, o.dry_depth)
        hf, u0 = hf.astype(self.dtype, copy=False), u0.astype(self.dtype, copy=False)
        adv, speed = _advection(xp, h, hf, u0, w, f.spacing, f.across)
        r = self._friction(f, hf, speed, wet, dt)
        coef = o.theta * o.theta * g * dt * dt / f.spacing**2
        ustar, c = _kernel(xp, _predictor)(wet, r, u0, adv, left, right, hf, dt,
                                           g * dt / f.spacing, coef)  # fmt: skip
        ustar, c = ustar.astype(self.dtype, copy=False), c.astype(self.dtype, copy=False)
        return _Terms(hf, r, ustar, c, u0)

    def _friction(self, f: _DeviceFaces, hf, speed, wet, dt: float):
        """``r = 1 / (1 + Δt c_f |u| / h_f)`` (1 without friction or on a dry face)."""
        xp, kind = self.xp, self.grid.friction_kind
        if f.friction is None or kind == 0:
            return xp.ones_like(hf)
        factor = _kernel(xp, _chezy if kind == CHEZY else _manning)
        return factor(wet, hf, speed, f.friction, self.g, dt).astype(self.dtype, copy=False)


def _advection(xp, h, hf, u, w, dx: float, dy: float):
    """``u ∂u/∂x + w ∂u/∂y`` at the interior faces, first-order upwind (0 on the end faces),
    and the speed ``|(u, w̄)|`` at every face (:func:`_upwind`, one kernel on CuPy)."""
    adv = xp.zeros_like(u)
    speed = xp.abs(u)
    if u.shape[1] < 3:
        return adv, speed
    ui = u[:, 1:-1]
    du = xp.zeros((ui.shape[0] + 1, ui.shape[1]), dtype=ui.dtype)
    du[1:-1] = ui[1:] - ui[:-1]
    adv[:, 1:-1], speed[:, 1:-1] = _kernel(xp, _upwind)(
        hf[:, :-2], hf[:, 1:-1], hf[:, 2:], u[:, :-2], ui, u[:, 2:], h[:, :-1], h[:, 1:],
        w[:-1, :-1], w[1:, :-1], w[:-1, 1:], w[1:, 1:], du[:-1], du[1:], dx, dy,
    )  # fmt: skip
    return adv, speed


@functools.cache
def _kernel(xp, fn):
    """``fn(xp, *args)`` (array expressions) as one kernel on CuPy (:func:`~.cg.fused`)."""

    def kernel(*args):
        return fn(xp, *args)

    kernel.__name__ = fn.__name__
    return fused(xp, kernel)


def _wet_faces(xp, u, left, right, bed, is_open, closed, dry: float):
    """Per face: whether it is wet (open, not ``closed``, its upwind depth at least ``dry``;
    upwind: the larger level at rest) and, 0 where it is not, that depth and ``u``."""
    up = xp.where(u > 0, left, xp.where(u < 0, right, xp.maximum(left, right)))
    hf = up + bed
    wet = is_open & ~closed & (hf >= dry)
    return wet, xp.where(wet, hf, 0.0), xp.where(wet, u, 0.0)


def _predictor(xp, wet, r, u0, adv, left, right, hf, dt: float, gdt_dx: float, coef: float):
    """``u'`` without the level increment (0 on dry faces) and the system's face
    coefficient ``coef h_f r`` (``coef = θ² g Δt² / Δx²``)."""
    ustar = xp.where(wet, r * (u0 - dt * adv - gdt_dx * (right - left)), 0.0)
    return ustar, coef * hf * r


def _carried(xp, hf_w, hf_c, hf_e, u_w, u_c, u_e):
    """The discharge ``q̄`` that carries ``u`` along the normal in :func:`_upwind`: the mean
    of the face's and its upwind neighbour's ``h_f u``."""
    q_w, q_c, q_e = hf_w * u_w, hf_c * u_c, hf_e * u_e
    return xp.where(u_c > 0, 0.5 * (q_w + q_c), 0.5 * (q_c + q_e))


def _carrying_speed(xp, hf_w, hf_c, hf_e, u_w, u_c, u_e, h_l, h_r):
    """``|q̄/h̄|``: the speed at which :func:`_upwind` moves ``u`` along the normal (0 where
    ``h̄ = 0``, as there); at a front it can be twice ``|u|``."""
    hbar = 0.5 * (h_l + h_r)
    ok = hbar > 0
    q = _carried(xp, hf_w, hf_c, hf_e, u_w, u_c, u_e)
    return xp.where(ok, xp.abs(q) / xp.where(ok, hbar, 1.0), 0.0)


def _chezy(xp, wet, hf, speed, coef, g: float, dt: float):
    """The friction factor ``r = 1 / (1 + Δt c_f |u| / h_f)`` with Chézy's ``c_f = g / C²``
    (1 on dry faces)."""
    depth = xp.where(wet, hf, 1.0)
    return _factor(xp, wet, depth, g / (coef * coef), speed, dt)


def _manning(xp, wet, hf, speed, coef, g: float, dt: float):
    """As :func:`_chezy` with Manning's ``c_f = g n² / h^(1/3)``."""
    depth = xp.where(wet, hf, 1.0)
    return _factor(xp, wet, depth, g * coef * coef / depth ** (1.0 / 3.0), speed, dt)


def _factor(xp, wet, depth, cf, speed, dt: float):
    """``1 / (1 + Δt c_f |u| / h_f)`` on wet faces, 1 on dry ones: both laws' factor."""
    return xp.where(wet, 1.0 / (1.0 + dt * cf * speed / depth), 1.0)


def _net_outflow(xp, east, west, north, south, kx: float, ky: float):
    """``-Δt div F`` of a cell from the fluxes through its faces (``kx = -Δt/Δx``,
    ``ky = -Δt/Δy``)."""
    return kx * (east - west) + ky * (north - south)


def _flux(xp, hf, u, u0, theta: float, rest: float):
    """The face flux ``h_f (θ u + (1 - θ) uⁿ)`` (``rest = 1 - θ``)."""
    return hf * (theta * u + rest * u0)


def _corrected(xp, hf, ustar, r, k: float, left, right):
    """``u' = u* - r θ g Δt/Δx (δ_R - δ_L)`` (``k = θ g Δt/Δx``), 0 on dry faces."""
    return xp.where(hf > 0, ustar - r * k * (right - left), 0.0)


def _upwind(xp, hf_w, hf_c, hf_e, u_w, u_c, u_e, h_l, h_r, w_sw, w_nw, w_se, w_ne,
            du_s, du_n, dx, dy):  # fmt: skip
    """Per interior face (``_c``; ``_w``, ``_e`` its neighbours along the normal, ``h_l``,
    ``h_r`` its cells, ``w_*`` the four nearest cross velocities, ``du_s``, ``du_n`` the
    differences of ``u`` with the faces south and north, 0 beyond the first and last row):
    the advection and the speed. Along the normal Stelling and Duinmeijer's
    momentum-conservative form ``q̄/h̄ ∂u`` (``q̄``: the upwind cell's mean discharge);
    across, ``w̄ ∂u/∂y`` with ``w̄`` the mean of the four ``w``."""
    where = xp.where
    along = _carried(xp, hf_w, hf_c, hf_e, u_w, u_c, u_e) * where(u_c > 0, u_c - u_w, u_e - u_c)
    hbar = 0.5 * (h_l + h_r)
    wbar = 0.25 * (w_sw + w_nw + w_se + w_ne)
    cross = wbar * where(wbar > 0, du_s, du_n)
    ok = hbar > 0
    adv = where(ok, along / where(ok, hbar, 1.0), 0.0) / dx + cross / dy
    return adv, xp.sqrt(u_c * u_c + wbar * wbar)
