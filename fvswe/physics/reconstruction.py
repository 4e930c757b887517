"""The linear reconstruction's formulas (docs/SCHEMES.md §19), written once for every backend.

A cell's reconstruction variables are the levels that stay flat in a lake at rest and the
layers' velocities, as a 7-tuple ``(eta1, eta2, H, u1, v1, u2, v2)``: the free surface
``eta1 = h1 + h2 - H``, the interface ``eta2 = h2 - H`` and the bed depth ``H`` (one layer:
``eta1 = h - H``, the rest of the second layer 0). Their least-squares gradients over the
face neighbours are limited (:func:`limited`: the free surface by Barth and Jespersen, the
rest by Venkatakrishnan with a discontinuity sensor, docs/SCHEMES.md §19.2), the face
states are formed from the limited values (:func:`face_state`) and the cell-interior term
of the second-order path-conservative scheme (:func:`interior`) balances the faces'
fluctuations. A cell falls back to its own state (first order) where it or a neighbour is
:func:`troubled`, or a face depth would be negative. Walking a cell's neighbours is the
pipelines' (``reconstruct_pass`` of :mod:`fvswe.backends.cpu.kernels`).
"""

from __future__ import annotations

from .common import as_inputs2, assemble2, edge2, jit, tangential_fluctuation, total_fluctuation

#: Δt of the linear reconstruction: the stable step times this (docs/SCHEMES.md §19.4).
LINEAR_CFL = 0.5
#: Wang's constant of the Venkatakrishnan limiter of every variable but the free surface
#: (Barth and Jespersen's): ``eps = K R``, ``R`` the variable's range over the cells
#: (docs/SCHEMES.md §19.2).
VENKAT_K = 0.05
#: The discontinuity sensor of that ``eps`` (docs/SCHEMES.md §19.2): where a cell's local
#: range (its value and its face neighbours') is at most this fraction of ``R``, Wang's
#: ``eps``; at twice it or more, none; a cubic step between.
SHOCK_RANGE = 0.07


@jit
def variables(W, H, layers):
    """The reconstruction variables ``(eta1, eta2, H, u1, v1, u2, v2)`` of a cell state
    ``W`` (6-tuple) on the bed ``H``, in float64; depths must be positive."""
    h1 = float(W[0])
    Hd = float(H)
    if layers == 2:
        h2 = float(W[3])
        return (h1 + h2 - Hd, h2 - Hd, Hd, float(W[1]) / h1, float(W[2]) / h1,
                float(W[4]) / h2, float(W[5]) / h2)  # fmt: skip
    return (h1 - Hd, 0.0, Hd, float(W[1]) / h1, float(W[2]) / h1, 0.0, 0.0)


@jit
def troubled(W, layers, g, r, eps_h):
    """Whether a cell must not be reconstructed, nor its neighbours: a layer thinner than
    ``eps_h`` (dry or thin), or two layers whose shear ``(u1 - u2)^2`` reaches ``(1 - r) g
    (h1 + h2)``, the approximate limit of hyperbolicity (docs/SCHEMES.md §19.3)."""
    h1 = float(W[0])
    if not h1 >= eps_h:
        return True
    if layers == 1:
        return False
    h2 = float(W[3])
    if not h2 >= eps_h:
        return True
    du = float(W[1]) / h1 - float(W[4]) / h2
    dv = float(W[2]) / h1 - float(W[5]) / h2
    return du * du + dv * dv >= (1.0 - r) * g * (h1 + h2)


@jit
def lsq_sums(gx, gy, Vi, Vj, wx, wy):
    """The gradient sums ``(gx, gy)`` with one neighbour's term ``w (V_j - V_i)``
    (``(wx, wy)`` its least-squares weight, :func:`fvswe.backends.layout.lsq_weights`)."""
    return (
        (gx[0] + wx * (Vj[0] - Vi[0]), gx[1] + wx * (Vj[1] - Vi[1]), gx[2] + wx * (Vj[2] - Vi[2]),
         gx[3] + wx * (Vj[3] - Vi[3]), gx[4] + wx * (Vj[4] - Vi[4]), gx[5] + wx * (Vj[5] - Vi[5]),
         gx[6] + wx * (Vj[6] - Vi[6])),
        (gy[0] + wy * (Vj[0] - Vi[0]), gy[1] + wy * (Vj[1] - Vi[1]), gy[2] + wy * (Vj[2] - Vi[2]),
         gy[3] + wy * (Vj[3] - Vi[3]), gy[4] + wy * (Vj[4] - Vi[4]), gy[5] + wy * (Vj[5] - Vi[5]),
         gy[6] + wy * (Vj[6] - Vi[6])),
    )  # fmt: skip


@jit
def bounds(lo, hi, V):
    """The neighbours' smallest and largest values so far, with ``V``'s."""
    return (
        (min(lo[0], V[0]), min(lo[1], V[1]), min(lo[2], V[2]), min(lo[3], V[3]),
         min(lo[4], V[4]), min(lo[5], V[5]), min(lo[6], V[6])),
        (max(hi[0], V[0]), max(hi[1], V[1]), max(hi[2], V[2]), max(hi[3], V[3]),
         max(hi[4], V[4]), max(hi[5], V[5]), max(hi[6], V[6])),
    )  # fmt: skip


@jit
def venkat_factor(phi, v, lo, hi, delta, eps2):
    """Venkatakrishnan's limiter of one variable at one face: ``phi`` lowered to the smooth
    limiter function of the face's increment ``delta`` and the room to the neighbours'
    ``[lo, hi]`` (``eps2``: Wang's ``(K range)^2``, docs/SCHEMES.md §19.2)."""
    if delta == 0.0:
        return phi
    room = (hi - v) if delta > 0.0 else (lo - v)
    num = (room * room + eps2) * delta + 2.0 * delta * delta * room
    den = delta * (room * room + 2.0 * delta * delta + room * delta + eps2)
    return min(phi, num / den)


@jit
def barth_jespersen(phi, v, lo, hi, delta):
    """Barth and Jespersen's limiter of one variable at one face: ``phi`` lowered to
    ``room / delta`` where the face's increment ``delta`` would pass the neighbours'
    ``[lo, hi]`` (the free surface's, docs/SCHEMES.md §19.2)."""
    if delta == 0.0:
        return phi
    room = (hi - v) if delta > 0.0 else (lo - v)
    return min(phi, min(1.0, room / delta))


@jit
def eps2(span, v, lo, hi):
    """The limiter's ``eps^2`` of variable ``v`` at a cell whose own and face neighbours'
    values span ``[lo, hi]`` (docs/SCHEMES.md §19.2): Wang's ``(K R_v)^2``, ``R_v`` the
    variable's range over the cells (``span``), faded by a cubic step to 0 as the local
    range ``hi - lo`` goes from ``SHOCK_RANGE R_v`` to twice it (a jump of the order of the
    range: a shock)."""
    e = VENKAT_K * span[v]
    smooth = SHOCK_RANGE * span[v]
    local = hi - lo
    if local <= smooth:
        return e * e
    if local >= 2.0 * smooth:
        return 0.0
    t = (local - smooth) / smooth
    return e * e * (1.0 - t * t * (3.0 - 2.0 * t))


@jit
def limited(phi, Vi, gx, gy, lo, hi, ox, oy, span):
    """The 7 limiter factors ``phi`` after one face, at ``(ox, oy)`` from the centroid: the
    free surface's by Barth and Jespersen, the others' by Venkatakrishnan with ``eps2``."""
    return (
        barth_jespersen(phi[0], Vi[0], lo[0], hi[0], gx[0] * ox + gy[0] * oy),
        venkat_factor(phi[1], Vi[1], lo[1], hi[1], gx[1] * ox + gy[1] * oy,
                      eps2(span, 1, lo[1], hi[1])),
        venkat_factor(phi[2], Vi[2], lo[2], hi[2], gx[2] * ox + gy[2] * oy,
                      eps2(span, 2, lo[2], hi[2])),
        venkat_factor(phi[3], Vi[3], lo[3], hi[3], gx[3] * ox + gy[3] * oy,
                      eps2(span, 3, lo[3], hi[3])),
        venkat_factor(phi[4], Vi[4], lo[4], hi[4], gx[4] * ox + gy[4] * oy,
                      eps2(span, 4, lo[4], hi[4])),
        venkat_factor(phi[5], Vi[5], lo[5], hi[5], gx[5] * ox + gy[5] * oy,
                      eps2(span, 5, lo[5], hi[5])),
        venkat_factor(phi[6], Vi[6], lo[6], hi[6], gx[6] * ox + gy[6] * oy,
                      eps2(span, 6, lo[6], hi[6])),
    )  # fmt: skip


@jit
def face_value(phi, v, gx, gy, ox, oy):
    """One variable at a face: ``v + phi (g . o)``."""
    return v + phi * (gx * ox + gy * oy)


@jit
def face_state(phi, Vi, gx, gy, ox, oy, layers):
    """The face state at ``(ox, oy)`` from the centroid: ``(W 6-tuple, H)`` from the limited
    variables, ``h2 = eta2 + H``, ``h1 = eta1 - eta2`` (one layer ``h = eta1 + H``) and
    ``q = h u``; a depth may come out negative (the caller falls back)."""
    eta1 = face_value(phi[0], Vi[0], gx[0], gy[0], ox, oy)
    H = face_value(phi[2], Vi[2], gx[2], gy[2], ox, oy)
    u1 = face_value(phi[3], Vi[3], gx[3], gy[3], ox, oy)
    v1 = face_value(phi[4], Vi[4], gx[4], gy[4], ox, oy)
    if layers == 1:
        h = eta1 + H
        return (h, h * u1, h * v1, 0.0, 0.0, 0.0), H
    eta2 = face_value(phi[1], Vi[1], gx[1], gy[1], ox, oy)
    u2 = face_value(phi[5], Vi[5], gx[5], gy[5], ox, oy)
    v2 = face_value(phi[6], Vi[6], gx[6], gy[6], ox, oy)
    h1 = eta1 - eta2
    h2 = eta2 + H
    return (h1, h1 * u1, h1 * v1, h2, h2 * u2, h2 * v2), H


@jit
def interior(Wc, Wf, Hc, Hf, ex, ey, g, r, eps_h):
    """The cell-interior term of one face (a 6-tuple, times the face's length by the caller):
    the path integral ``∫ A(W) dW`` along the segment from the cell state ``(Wc, Hc)`` to its
    face state ``(Wf, Hf)`` in the outward normal ``(ex, ey)``, i.e. the total fluctuation of
    the Roe linearisation (exact for this path: Castro, Gallardo and Parés 2006; Castro et al.
    2009 for two layers). Zero where the face state is the cell's; zero at rest (§19.1)."""
    Wc, Wf, Hc, Hf, ex, ey = as_inputs2(Wc, Wf, Hc, Hf, ex, ey)
    L1, L2, DH = edge2(Wc, Wf, Hc, Hf, ex, ey, g, eps_h)
    v0, v1, v2, v3 = total_fluctuation(L1, L2, DH, r)
    t1 = tangential_fluctuation(L1)
    t2 = tangential_fluctuation(L2)
    return assemble2((v0, v1, t1, v2, v3, t2), ex, ey)
