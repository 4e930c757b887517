"""A moving bed: a rigid slide on the static bed, as given and as the backends read it.

:class:`Slide` is a slide of thickness ``T`` (the bed rises by ``T`` at its centre),
half-length ``L`` along its path and half-width ``W`` across it (``math.inf``: uniform
across, a 1-D slide), whose centre starts at ``start`` and moves along ``direction`` at a
constant ``speed`` or by Watts and Grilli's law (``acceleration`` ``a0`` from rest towards
the ``terminal_velocity`` ``u_t``). The formulas are :mod:`fvswe.physics.slide`'s;
docs/SCHEMES.md §17 says when in a step the backends evaluate them. The water column rides on
the bed: a layer's volume does not change, the surface rises and falls with the bed.

:func:`slide_table` lays a slide out for a run (its parameters and, per cell, the centre and
the static bed in float64); :func:`bed_at` is the bed of every cell at a time, by the
compiled pass :func:`fvswe.physics.slide.bed_cells` that the CPU backend runs too.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from .errors import ConfigError
from .physics.slide import SLIDE_LAWS, bed_cells

__all__ = ["Slide", "SlideTable", "bed_at", "describe", "slide_table"]


@dataclass(frozen=True)
class Slide:
    """A rigid slide moving along a straight path from ``start`` (``(x, y)`` of its centre at
    t = 0) in ``direction`` (normalised here): ``speed`` (m/s; 0: at rest) or both
    ``acceleration`` (m/s^2) and ``terminal_velocity`` (m/s). ``thickness`` (m, >= 0),
    ``length`` and ``width`` (m, > 0) are its height and half-axes."""

    thickness: float
    length: float
    width: float
    start: tuple[float, float]
    direction: tuple[float, float] = (1.0, 0.0)
    speed: float | None = None
    acceleration: float | None = None
    terminal_velocity: float | None = None

    def law(self) -> tuple[int, float, float]:
        """``(law code, p1, p2)`` of :func:`fvswe.physics.slide.travel`, checked."""
        wg = (self.acceleration, self.terminal_velocity)
        if (self.speed is None) == all(v is None for v in wg) or (None in wg and any(wg)):
            raise ConfigError("slide: give speed, or acceleration and terminal_velocity")
        if self.speed is not None:
            return SLIDE_LAWS["speed"], _number(self.speed, "slide speed"), 0.0
        a0 = _number(self.acceleration, "slide acceleration", positive=True)
        ut = _number(self.terminal_velocity, "slide terminal_velocity", positive=True)
        return SLIDE_LAWS["watts-grilli"], ut * ut / a0, ut / a0

    def parameters(self) -> np.ndarray:
        """The float64 parameters of :func:`fvswe.physics.slide.bed` after ``H0, x, y, t``."""
        T = _number(self.thickness, "slide thickness")
        if T < 0:
            raise ConfigError(f"slide thickness: must be >= 0, got {self.thickness!r}")
        L = _number(self.length, "slide length", positive=True)
        W = _number(self.width, "slide width", positive=True, infinite=True)
        x0, y0 = _pair(self.start, "slide start")
        ex, ey = _pair(self.direction, "slide direction")
        norm = math.hypot(ex, ey)
        if not norm > 0:
            raise ConfigError("slide direction: must not be (0, 0)")
        law, p1, p2 = self.law()
        return np.array([x0, y0, ex / norm, ey / norm, 1.0 / L, 1.0 / W, T, law, p1, p2])


def _number(value, name: str, positive: bool = False, infinite: bool = False) -> float:
    try:
        out = float(value)
    except (TypeError, ValueError):
        out = math.nan
    if not (math.isfinite(out) or (infinite and out == math.inf)):
        raise ConfigError(f"{name}: expected a finite number, got {value!r}")
    if positive and not out > 0:
        raise ConfigError(f"{name}: must be > 0, got {value!r}")
    return out


def _pair(value, name: str) -> tuple[float, float]:
    try:
        x, y = value
    except (TypeError, ValueError):
        raise ConfigError(f"{name}: expected [x, y], got {value!r}") from None
    return _number(x, name), _number(y, name)


@dataclass(frozen=True)
class SlideTable:
    """A slide as the backends read it: ``params`` (:meth:`Slide.parameters`) and, per cell
    in the layout's order, the centre ``x``, ``y`` and the static bed ``H0`` (float64)."""

    params: np.ndarray
    x: np.ndarray
    y: np.ndarray
    H0: np.ndarray

    def cells(self, cells: np.ndarray) -> SlideTable:
        """The entries of ``cells`` (a part's, in its order)."""
        take = [np.ascontiguousarray(a[cells]) for a in (self.x, self.y, self.H0)]
        return replace(self, x=take[0], y=take[1], H0=take[2])


def slide_table(slide: Slide | None, centroid: np.ndarray, H0: np.ndarray) -> SlideTable | None:
    """The :class:`SlideTable` of ``slide`` over cells at ``centroid`` with the static bed
    ``H0`` (both in the layout's order), or None without a slide."""
    if slide is None:
        return None
    if not isinstance(slide, Slide):
        raise ConfigError(f"slide: expected Slide(...), got {slide!r}")
    xy = np.asarray(centroid, dtype=np.float64)
    x, y = (np.ascontiguousarray(xy[:, k]) for k in (0, 1))
    return SlideTable(slide.parameters(), x, y, np.ascontiguousarray(H0, np.float64))


def describe(params: np.ndarray) -> str:
    """A readable line of a slide's :meth:`Slide.parameters` (the restart details)."""
    x0, y0, ex, ey, inv_l, inv_w, T, law, p1, p2 = (float(v) for v in params)
    motion = f"speed {p1:g} m/s" if law == SLIDE_LAWS["speed"] else f"s0 {p1:g} m, t0 {p2:g} s"
    return (
        f"thickness {T:g} m, length {1 / inv_l:g} m, width {1 / inv_w if inv_w else math.inf:g}"
        f" m, start ({x0:g}, {y0:g}), direction ({ex:g}, {ey:g}), {motion}"
    )


def bed_at(table: SlideTable, t: float, dtype) -> np.ndarray:
    """The bed of every cell of ``table`` at time ``t``, in ``dtype``."""
    out = np.empty(table.H0.shape[0], dtype=dtype)
    bed_cells(float(t), table.params, table.x, table.y, table.H0, out)
    return out
