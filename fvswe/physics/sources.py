"""Point sources, sinks and rain in a cell's update (docs/SCHEMES.md §16), for both backends.

A source's piecewise-linear series enters a step through its exact integral over the step
(the pipelines walk the table; each linear piece adds :func:`segment_integral`), and a cell's
layer takes its depth rate with :func:`fed`. ``@exact``: every operation rounded on its own,
so that the CPU and the GPU add the same bits.
"""

from __future__ import annotations

from .common import exact


@exact
def segment_integral(t0, v0, t1, v1):
    """The integral of the linear piece from ``(t0, v0)`` to ``(t1, v1)``."""
    return 0.5 * (v0 + v1) * (t1 - t0)


@exact
def fed(h, qx, qy, rate, dt):
    """A layer of depth ``h`` and discharge ``(qx, qy)`` after a step ``dt`` of a source of
    depth rate ``rate`` (m/s): water comes in at rest (the discharge unchanged) and goes out
    at the cell's velocity (the discharge scaled by the depth left); a sink that asks for more
    than the layer holds leaves a negative depth, which the clip of §8 then counts."""
    h1 = h + dt * rate
    if rate < 0.0 and h > 0.0:
        left = h1 if h1 > 0.0 else 0.0
        keep = left / h
        return h1, qx * keep, qy * keep
    return h1, float(qx), float(qy)
