"""The equations: one or two layers, physical constants and the packed state layout.

State per cell, in component order (docs/SCHEMES.md §0):
two layers ``(h1, q1x, q1y, h2, q2x, q2y)``, one layer ``(h, qx, qy)``.
``H`` is the depth of the bottom below the reference level (positive down).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import exactsum
from .errors import ConfigError

#: Default thin-layer threshold ``eps_h`` (docs/SCHEMES.md §8): this fraction of the
#: problem's depth scale (the largest initial total depth), by precision...
EPS_H_RELATIVE = {"float64": 1e-6, "float32": 1e-4}
#: ... and never below this depth (m), whose fourth power float32 still represents.
EPS_H_FLOOR = 1e-8


def thin_layer_threshold(depth_scale: float, dtype: str = "float64") -> float:
    """The default ``eps_h``: ``max(EPS_H_RELATIVE[dtype] * depth_scale, EPS_H_FLOOR)``.

    A fixed 5 mm (HySEA's) is a sizeable part of a metre-deep flow and stops a
    dam break from converging; relative to the depth scale it lies far below
    anything a refined mesh resolves, and round-off is still well below it.
    """
    return max(EPS_H_RELATIVE[dtype] * float(depth_scale), EPS_H_FLOOR)


TWO_LAYER_FIELDS = ("h1", "q1x", "q1y", "h2", "q2x", "q2y")
ONE_LAYER_FIELDS = ("h", "qx", "qy")


def volume_sums(h, area, rest=None, xp=np) -> np.ndarray:
    """One layer's volume ``Σ area_i h_i`` as exact partial sums (:func:`fvswe.exactsum.sums`,
    NumPy or CuPy arrays ``xp``): each ``area_i h_i`` rounded in float64, then summed exactly;
    with a compensated state's depth remainders ``rest`` (docs/SCHEMES.md §2.7), of ``h + c``
    (rounded in float64 first), the depth it carries."""
    h = h.astype(np.float64)
    if rest is not None:
        h += rest
    return exactsum.sums(area * h, xp)


@dataclass(frozen=True)
class Model:
    """Physical model: number of layers, gravity ``g``, density ratio ``r = rho1/rho2``.

    ``eps_h`` is the thin-layer threshold and desingularisation depth of
    docs/SCHEMES.md §8 (velocities are ``q/h`` exactly where ``h >= eps_h``); a
    :class:`~fvswe.simulation.Simulation` sets it from the problem's depth scale
    (:func:`thin_layer_threshold`) unless given.
    """

    layers: int = 2
    g: float = 9.81
    r: float = 0.5
    eps_h: float = 5e-3

    def __post_init__(self) -> None:
        if self.layers not in (1, 2):
            raise ConfigError(f"layers: must be 1 or 2, got {self.layers!r}")
        if not self.g > 0:
            raise ConfigError(f"g: must be positive, got {self.g!r}")
        if self.layers == 2 and not 0 < self.r < 1:
            raise ConfigError(f"r: the density ratio rho1/rho2 must lie in (0, 1), got {self.r!r}")
        if not self.eps_h > 0:
            raise ConfigError(f"eps_h: must be positive, got {self.eps_h!r}")

    @property
    def fields(self) -> tuple[str, ...]:
        """Names of the state components, in packed order."""
        return TWO_LAYER_FIELDS if self.layers == 2 else ONE_LAYER_FIELDS

    @property
    def nvar(self) -> int:
        return len(self.fields)

    @property
    def depth_components(self) -> tuple[int, ...]:
        """Component indices of the layer thicknesses (h1, h2) or (h,)."""
        return (0, 3) if self.layers == 2 else (0,)

    def layer_sums(self, W: np.ndarray, area: np.ndarray, C=None) -> np.ndarray:
        """Each layer's volume ``Σ area_i h_k,i`` as exact partial sums, one row a layer
        (:func:`volume_sums`; W and area in one cell order); with a compensated state's
        depth remainders ``C`` (one column per layer), of ``h + c``."""
        rests = [None] * self.layers if C is None else C.T
        layers = zip(self.depth_components, rests, strict=True)
        return np.stack([volume_sums(W[:, c], area, r) for c, r in layers])

    def pack(self, fields: dict[str, np.ndarray], n: int, dtype=np.float64) -> np.ndarray:
        """Stack per-cell arrays (or scalars) named by :attr:`fields` into ``(n, nvar)``."""
        W = np.zeros((n, self.nvar), dtype=dtype)
        for c, name in enumerate(self.fields):
            if name in fields:
                W[:, c] = np.broadcast_to(np.asarray(fields[name], dtype=np.float64), (n,))
        return W

    def unpack(self, W: np.ndarray) -> dict[str, np.ndarray]:
        """The inverse of :meth:`pack`: a dict of per-cell arrays."""
        return {name: W[:, c] for c, name in enumerate(self.fields)}
