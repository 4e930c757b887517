"""A layer's sources on a longitude/latitude mesh solved on the sphere (docs/SCHEMES.md §20).

The fluctuation form ``W_i - dt/|V_i| sum |Gamma| F-`` of every scheme adds
``F(W_i) . G_i``, ``G_i = sum_e |Gamma_e| n_e / |V_i|`` (not 0 on the sphere): right for the
pressure (it makes the flux divergence the physical gradient), wrong for the advection.
:func:`metric_rates` takes the advective part back out; the metric terms
``(+h u v, -h u^2) tan(phi) / R`` join the Coriolis rotation as ``f + u tan(phi) / R``
(:func:`metric_f`; a rotation, as the metric terms do no work). Float64 in both backends.
"""

from __future__ import annotations

from .common import exact, inverse_depth


@exact
def metric_rates(h, qx, qy, gx, gy, eps_h):
    """``-F_adv(W) . G`` of one layer ``(h, qx, qy)``: the rates of its depth and discharges
    (``u = q inverse_depth(h)``), with ``G = (gx, gy)`` the cell's closure defect."""
    flux = qx * gx + qy * gy
    ug = flux * inverse_depth(h, eps_h)
    return -flux, -(qx * ug), -(qy * ug)


@exact
def metric_add(w, dt, rate):
    """One component after its metric rate: ``w + dt rate``."""
    return w + dt * rate


@exact
def metric_f(f, h, qx, tan_r, eps_h):
    """The rotation rate of a layer: Coriolis ``f`` plus the metric ``u tan(phi) / R``."""
    return f + (qx * inverse_depth(h, eps_h)) * tan_r
