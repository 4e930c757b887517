"""Coriolis and wind: what a run is given, turned into what the backends read.

:class:`Coriolis` is an f-plane (``f``, or a ``latitude``: ``f = 2 Ω sin φ``) or a
beta-plane (``f = f0 + beta (y - y0)``), evaluated once per cell at the barycentres.
:class:`Wind` is the wind 10 m above the surface, constant or a time series, and
its drag law; :meth:`Wind.table` packs it as the piecewise-linear table of
``(u10, v10)`` that both backends interpolate, like the tables of
:class:`fvswe.boundary.Level`. The maths is in docs/SCHEMES.md §15.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .boundary import check_series, read_columns
from .errors import ConfigError

#: Earth's sidereal rotation rate Ω (rad/s).
OMEGA = 7.2921159e-5
#: Drag laws C_d(U10) of the wind stress -> the code the backends dispatch on.
DRAG_LAWS = {"constant": 1, "large-pond": 2, "wu": 3}
#: Default densities (kg/m^3): air near the sea surface, and sea water.
RHO_AIR = 1.225
RHO_WATER = 1025.0


def _finite(value, name: str) -> float:
    try:
        out = float(value)
    except (TypeError, ValueError):
        out = math.nan
    if not math.isfinite(out):
        raise ConfigError(f"{name}: expected a finite number, got {value!r}")
    return out


@dataclass(frozen=True)
class Coriolis:
    """The Coriolis parameter ``f = f0 + beta (y - y0)`` (1/s) of each cell.

    Give ``f`` (``f0``, 1/s) or ``latitude`` (degrees: ``f0 = 2 Ω sin φ``), not both;
    ``beta`` (1/(m s), 0: an f-plane; on Earth ``2 Ω cos φ0 / 6.371e6``) and ``y0`` (m)
    make it a beta-plane. ``y`` is the mesh's y coordinate, pointing north. ``sphere=True``
    alone (a lon/lat mesh solved on the sphere, docs/SCHEMES.md §20): ``f = 2 Ω sin φ`` at
    each cell's latitude ``y`` (degrees).
    """

    f: float | None = None
    latitude: float | None = None
    beta: float = 0.0
    y0: float = 0.0
    sphere: bool = False

    def __post_init__(self) -> None:
        if self.sphere is not False:
            if self.sphere is not True or (self.f, self.latitude, self.beta, self.y0) != (
                None, None, 0.0, 0.0):  # fmt: skip
                raise ConfigError("coriolis: sphere = true takes no other key (f = 2 Ω sin φ "
                                  f"per cell), got {self!r}")  # fmt: skip
            return
        if (self.f is None) == (self.latitude is None):
            raise ConfigError("coriolis: give either f (1/s) or latitude (degrees), or "
                              "sphere = true on a lon/lat mesh")  # fmt: skip
        if self.latitude is not None and not abs(_finite(self.latitude, "coriolis latitude")) <= 90:
            raise ConfigError(f"coriolis latitude: must lie in [-90, 90], got {self.latitude!r}")
        for name in ("f", "beta", "y0"):
            if getattr(self, name) is not None:
                _finite(getattr(self, name), f"coriolis {name}")

    @property
    def f0(self) -> float:
        """``f`` at ``y0``: the given ``f``, or ``2 Ω sin φ``."""
        if self.f is not None:
            return float(self.f)
        return 2.0 * OMEGA * math.sin(math.radians(float(self.latitude)))

    def values(self, y: np.ndarray) -> np.ndarray:
        """``f`` at the ordinates ``y`` (float64; latitudes in degrees with ``sphere``)."""
        y = np.asarray(y, dtype=np.float64)
        if self.sphere:
            return 2.0 * OMEGA * np.sin(np.radians(y))
        return self.f0 + float(self.beta) * (y - float(self.y0))

    @classmethod
    def of(cls, value) -> Coriolis | None:
        """A Coriolis from None, a Coriolis, a number (f-plane ``f``) or a dict of keywords."""
        if value is None or isinstance(value, cls):
            return value
        if isinstance(value, dict):
            try:
                return cls(**value)
            except TypeError:
                raise ConfigError(
                    f"coriolis: unknown key in {value!r} (keys: f, latitude, beta, y0, sphere)"
                ) from None
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return cls(f=value)
        raise ConfigError(f"coriolis: expected None, f (1/s) or Coriolis(...), got {value!r}")


@dataclass(frozen=True)
class WindTable:
    """A wind as the backends read it: samples ``times`` of ``(u, v)`` (m/s, 10 m up),
    linear between samples and held outside, the drag law code (:data:`DRAG_LAWS`), the
    constant law's ``cd`` and ``ratio = rho_air / rho_water``."""

    times: np.ndarray
    u: np.ndarray
    v: np.ndarray
    law: int
    cd: float
    ratio: float

    def end(self) -> float | None:
        """The last sample time of a series (None for a constant wind)."""
        return float(self.times[-1]) if self.times.size > 1 else None


@dataclass(frozen=True)
class Wind:
    """Wind 10 m above the surface and the stress it puts on the upper (or only) layer.

    The velocity is ``(u, v)`` (m/s, towards +x and +y) or ``speed`` (m/s) and
    ``direction`` (degrees, meteorological: where the wind blows *from*, clockwise
    from north = +y; 270 blows towards +x). Each is a number (a constant wind) or a
    sequence of values at ``times`` (s); ``file`` instead names a text file of three
    columns ``t speed direction``. Between samples ``u`` and ``v`` are linear.

    ``drag``: ``"large-pond"`` (Large & Pond 1981), ``"wu"`` (Wu 1982) or a number,
    a constant C_d. ``rho_water`` is the density of the layer the wind drives.
    """

    u: object = None
    v: object = None
    speed: object = None
    direction: object = None
    times: object = None
    file: str | Path | None = None
    drag: str | float = "large-pond"
    rho_air: float = RHO_AIR
    rho_water: float = RHO_WATER

    def table(self) -> WindTable:
        """The :class:`WindTable` both backends interpolate, or a one-line ConfigError."""
        t, u, v = self._samples()
        check_series(t, (u, v), "wind", "")
        if isinstance(self.drag, str):
            if self.drag not in DRAG_LAWS or self.drag == "constant":
                raise ConfigError(
                    f"wind drag: unknown law {self.drag!r} (large-pond, wu, or a number C_d)"
                )
            law, cd = DRAG_LAWS[self.drag], 0.0
        else:
            law, cd = DRAG_LAWS["constant"], _finite(self.drag, "wind drag")
            if not cd > 0:
                raise ConfigError(f"wind drag: a constant C_d must be positive, got {cd!r}")
        rho_air = _finite(self.rho_air, "wind rho_air")
        rho_water = _finite(self.rho_water, "wind rho_water")
        if not (rho_air > 0 and rho_water > 0):
            raise ConfigError("wind: rho_air and rho_water must be positive")
        return WindTable(t, u, v, law, cd, rho_air / rho_water)

    def _samples(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(times, u, v)`` from whichever way the wind was given."""
        polar = self.speed is not None or self.direction is not None
        cartesian = self.u is not None or self.v is not None
        if self.file is not None:
            if polar or cartesian or self.times is not None:
                raise ConfigError("wind: give a file or values, not both")
            names = ("t", "speed", "direction")
            t, speed, direction = read_columns(Path(self.file), "wind", "wind", names)
            return t, *_polar(speed, direction)
        if polar == cartesian:
            raise ConfigError("wind: give (u, v), or speed and direction, or a file")
        a, b = (self.speed, self.direction) if polar else (self.u, self.v)
        names = ("speed", "direction") if polar else ("u", "v")
        if a is None or b is None:
            raise ConfigError(f"wind: give both {names[0]} and {names[1]}")
        try:
            a, b = (np.atleast_1d(np.asarray(x, dtype=np.float64)) for x in (a, b))
            t = np.zeros(1) if self.times is None else np.asarray(self.times, dtype=np.float64)
        except (TypeError, ValueError):
            raise ConfigError(f"wind: {names[0]}, {names[1]} and times must be numbers") from None
        t = np.atleast_1d(t)
        try:
            a, b = np.broadcast_to(a, t.shape).copy(), np.broadcast_to(b, t.shape).copy()
        except ValueError:
            raise ConfigError("wind: times and values must be equal, non-empty lists") from None
        return (t, *_polar(a, b)) if polar else (t, a, b)


def _polar(speed: np.ndarray, direction: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(u, v)`` of a wind of ``speed`` blowing from ``direction`` (degrees from north)."""
    if np.any(speed < 0):
        raise ConfigError(f"wind speed: must be >= 0, got {float(speed.min())!r}")
    d = np.radians(direction)
    return -speed * np.sin(d), -speed * np.cos(d)
