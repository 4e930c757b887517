"""The formulas of a cell's update (docs/SCHEMES.md §2, §8), written once for both backends.

``W_i - dt/|V_i| sum(slots)`` (:func:`rate`, :func:`increment`; a compensated float32 state's
:func:`compensated` and :func:`remainder`, §2.7), the thin-layer damping of
the discharge (:func:`damped`), a cell's stable step (:func:`stable_dt`) and the convex
combination of the multi-stage integrators (:func:`combine`). Summing a cell's slots walks
arrays and stays in the pipelines. ``@exact``: every operation rounded on its own, so all
GPU variants and the CPU form the same values.
"""

from __future__ import annotations

from .common import exact, inverse_depth


@exact
def rate(dt, area):
    """``dt / |V|``: what a cell's summed slots are multiplied by."""
    return dt / area


@exact
def increment(w, rate, total):
    """One component after the step: ``w - (dt / |V|) total``."""
    return w - rate * total


@exact
def compensated(w, c, rate, total):
    """A compensated float32 component after the step (§2.7): ``w + (c - rate total)``,
    ``c`` the remainder that earlier updates could not add to ``w``. Called with float64
    arguments on both backends (``rate`` formed in float64, ``total`` the float32 sum of the
    slots), so the new value is rounded in float64, far below float32's ulp."""
    return w + (c - rate * total)


@exact
def remainder(x, w):
    """What rounding ``x`` (float64) to the float32 ``w`` left out, ``x - w`` (exact in
    float64), stored as the component's next ``c`` (rounded to float32 itself)."""
    return x - w


@exact
def compensated_combine(a, u, cu, b, w, cw):
    """:func:`combine` of compensated components, ``a (u + cu) + b (w + cw)``, in float64
    with float64 weights (float32 weights such as ``1/3 + 2/3`` do not sum to 1)."""
    return a * (u + cu) + b * (w + cw)


@exact
def damped(h, qx, qy, eps_u):
    """The discharge of a layer thinner than ``eps_u`` damped to ``h u`` with the
    desingularised ``u = q inverse_depth(h, eps_u)`` (0 on a dry layer; §8, §13.4)."""
    damp = h * inverse_depth(h, eps_u)
    return qx * damp, qy * damp


@exact
def stable_dt(cfl2, area, speed):
    """A cell's stable step ``2 cfl |V| / sum(|Gamma| ||D||)`` (``cfl2 = 2 cfl``; §2.4)."""
    return cfl2 * area / speed


@exact
def combine(a, u, b, w):
    """A stage of a multi-stage integrator (fvswe.integrators): ``a u + b w``, ``u`` the
    step's start and ``w`` the stage's forward-Euler update."""
    return a * u + b * w
