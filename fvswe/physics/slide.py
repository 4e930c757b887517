"""A rigid slide moving on the bed (docs/SCHEMES.md §17), for both backends.

The bed under the slide is ``H(x, y, t) = H0(x, y) - T shape(xi, zeta)``: ``xi``, ``zeta``
are the distances from the slide's centre along and across its path, scaled by its
half-length ``L`` and half-width ``W``, and the centre has travelled ``s(t)`` along the path.
The shape is ``(1 - r^2)^3`` inside the ellipse ``r^2 = xi^2 + zeta^2 < 1``, 0 outside:
smooth (continuous to the second derivative), of compact support and volume ``pi L W T / 4``,
and made of ``+ - *`` only, so that the CPU and the GPU compute the same bits. The law of
motion is a constant speed ``U`` (``s = U t``: validation against
:func:`fvswe.exact.moving_bed`) or Watts and Grilli's ``s = s0 ln cosh(t / t0)``, ``s0 =
u_t^2 / a0``, ``t0 = u_t / a0``, of a slide starting from rest with the acceleration ``a0``
towards its terminal velocity ``u_t`` (Watts, Grilli, Kirby, Fryer & Tappin 2003, Nat.
Hazards Earth Syst. Sci. 3; Grilli & Watts 2005, J. Waterw. Port Coastal Ocean Eng. 131).
``@exact``: every operation rounded on its own. :func:`bed_cells` is the CPU's pass over the
cells (not emitted: the GPU's is ``bed_pass``), here so that the CPU's cache check
(:func:`fvswe.backends.cpu.kernels.fresh_cache`) renews it with the formulas.
"""

from __future__ import annotations

import math

from .common import exact, jit

#: Laws of motion: the code of each (``Slide`` parameters p1, p2: ``U``, unused; ``s0``, ``t0``).
SLIDE_LAWS = {"speed": 0, "watts-grilli": 1}
#: Beyond ``t / t0`` this, ``ln cosh x = x - ln 2`` to double precision (e^-40 < 2^-53 x).
LNCOSH_LINEAR = 20.0
LN2 = 0.6931471805599453


@exact
def travel(t, law, p1, p2):
    """The distance ``s(t)`` the slide's centre has moved along its path at time ``t >= 0``:
    law 0 ``p1 t`` (``p1 = U``), law 1 ``p1 ln cosh(t / p2)`` (``p1 = s0``, ``p2 = t0``)."""
    if law == 0:
        return p1 * t
    x = t / p2
    if x > LNCOSH_LINEAR:  # cosh overflows near 710; the linear asymptote is exact here
        return p1 * (x - LN2)
    return p1 * math.log(math.cosh(x))


@exact
def shape(xi, zeta):
    """The slide's thickness over ``T`` at scaled coordinates ``(xi, zeta)``: ``(1 - r^2)^3``
    inside the unit circle, 0 outside."""
    r2 = xi * xi + zeta * zeta
    if r2 >= 1.0:
        return 0.0
    u = 1.0 - r2
    return u * u * u


@exact
def bed(H0, x, y, t, x0, y0, ex, ey, inv_l, inv_w, thickness, law, p1, p2):
    """The bed depth ``H`` at ``(x, y)`` and time ``t`` over the static ``H0``: a slide of
    ``thickness`` T that started at ``(x0, y0)`` and moves along the unit ``(ex, ey)``
    (``inv_l``, ``inv_w``: 1 / its half-length and half-width; 0: uniform across)."""
    s = travel(t, law, p1, p2)
    dx = x - (x0 + s * ex)
    dy = y - (y0 + s * ey)
    xi = (dx * ex + dy * ey) * inv_l
    zeta = (dy * ex - dx * ey) * inv_w
    return H0 - thickness * shape(xi, zeta)


@jit
def bed_cells(t, p, x, y, H0, out):
    """``out[i]``: the bed of cell ``i`` at time ``t`` (:func:`bed` with the parameters ``p``
    of :meth:`fvswe.slide.Slide.parameters`; float64, rounded to ``out``'s type)."""
    for i in range(out.shape[0]):
        out[i] = bed(H0[i], x[i], y[i], t, p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7], p[8],
                     p[9])  # fmt: skip
