"""Maximum-value and arrival-time maps: what a run asks for, and the files they go to.

A run with ``maxima = Maxima(arrival_threshold)`` (``Simulation(maxima=...)``, a case file's
``[maxima]``, ``fvswe run --maxima``) keeps, per cell and on the backend's own memory, the
largest free surface (two layers: and interface), water depth and speed reached and the first
time each was reached, and the first time the surface departed from its initial level by more
than ``arrival_threshold`` (docs/SCHEMES.md §18; the formulas are
:mod:`fvswe.physics.maxima`'s). The backends update them once per step, after the step; a
run without maps takes no such pass. ``Simulation.maxima()`` gives them as named cell fields
(:data:`NAMES`, original cell order); :func:`write` puts them into ``maxima.nc`` (CF-UGRID)
and/or ``maxima.xdmf`` + ``maxima.h5`` beside the field series, at the end and at every
checkpoint; a checkpoint holds them, so a restarted run continues them bit for bit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .errors import ConfigError
from .output import _data_item, _h5_write, atomic_write, original_cells
from .physics.maxima import NOT_ARRIVED, QUANTITIES, maxima_cells

#: The maps of one and two layers, in the columns of a backend's map rows.
NAMES = {
    1: ("max_eta", "time_max_eta", "max_depth", "time_max_depth", "max_speed",
        "time_max_speed", "initial_eta", "arrival_time"),
    2: ("max_eta1", "time_max_eta1", "max_depth", "time_max_depth", "max_speed1",
        "time_max_speed1", "max_eta2", "time_max_eta2", "max_speed2", "time_max_speed2",
        "initial_eta1", "arrival_time"),
}  # fmt: skip
#: Files :func:`write` writes (NetCDF; XDMF index and its HDF5 data).
FILES = ("maxima.nc", "maxima.xdmf", "maxima.h5")
#: A map -> (long name, units), for the files.
ATTRS = {
    "max_eta": ("largest free surface elevation", "m"),
    "max_eta1": ("largest free surface elevation", "m"),
    "max_eta2": ("largest interface elevation between the layers", "m"),
    "max_depth": ("largest water depth", "m"),
    "max_speed": ("largest speed", "m s-1"),
    "max_speed1": ("largest upper layer speed", "m s-1"),
    "max_speed2": ("largest lower layer speed", "m s-1"),
    "initial_eta": ("free surface elevation when the maps started", "m"),
    "initial_eta1": ("free surface elevation when the maps started", "m"),
    "arrival_time": ("first time the free surface departed from its initial elevation by more "
                     "than the arrival threshold (NaN: never)", "s"),
}  # fmt: skip


@dataclass(frozen=True)
class Maxima:
    """Maximum-value and arrival-time maps for a run: ``arrival_threshold`` (m) is how far the
    free surface must depart from its initial elevation for a wave to count as arrived
    (GeoClaw's fgmax ``arrival_tol``, 0.01 m by default there and here)."""

    arrival_threshold: float = 0.01

    def __post_init__(self) -> None:
        value = self.arrival_threshold
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        if not (ok and math.isfinite(value) and value > 0):
            raise ConfigError(f"maxima.arrival_threshold: must be a positive number of metres, "
                              f"got {value!r}")  # fmt: skip

    @classmethod
    def of(cls, value) -> Maxima:
        """``value`` as maps: a Maxima, True (the defaults) or an arrival threshold (m)."""
        if isinstance(value, Maxima):
            return value
        return cls() if value is True else cls(value)


def columns(layers: int) -> int:
    """The width of a map row: a maximum and its time per quantity, the initial surface and
    the arrival time."""
    return 2 * QUANTITIES[layers] + 2


def start(W: np.ndarray, H: np.ndarray, n: int, t: float, model, threshold: float) -> np.ndarray:
    """The map rows of the state ``W`` (the first ``n`` rows are computed; the rest, a halo,
    stay NaN) at time ``t``: every maximum the current value, reached at ``t``, no arrival."""
    M = np.full((W.shape[0], columns(model.layers)), np.nan)
    maxima_cells(W, H, n, float(t), model.layers, float(model.eps_h), float(threshold), M, True)
    return M


def fields(rows: np.ndarray, layers: int) -> dict[str, np.ndarray]:
    """The named maps of map ``rows`` (one per cell, any order): arrival time NaN where the
    surface never departed from its initial elevation by the threshold."""
    out = {name: rows[:, k].copy() for k, name in enumerate(NAMES[layers])}
    out["arrival_time"][out["arrival_time"] == NOT_ARRIVED] = np.nan
    return out


def write(sim, directory: str | Path, fmt: str = "xdmf", crs: str | None = None) -> list[Path]:
    """The maps of ``sim`` now (collective on several ranks; rank 0 writes) into ``directory``:
    ``maxima.nc`` for the ``netcdf`` format, ``maxima.xdmf`` + ``maxima.h5`` for ``xdmf``,
    all three for ``both``, each atomically (the per-part maps of a run this one continued,
    :func:`fvswe.partout.write_maxima`, are removed)."""
    maps = sim.maxima()
    if not sim.is_root:
        return []
    directory, written = Path(directory), []
    if fmt in ("netcdf", "both"):
        written.append(_netcdf(sim, maps, directory / FILES[0], crs))
    if fmt in ("xdmf", "both"):
        written += _xdmf(sim, maps, directory)
    (directory / "maxima.json").unlink(missing_ok=True)  # a per-part run's, continued
    return written


def _netcdf(sim, maps: dict[str, np.ndarray], path: Path, crs: str | None) -> Path:
    """``maxima.nc``: the maps on the run's UGRID mesh, at the time of the run (``time``)."""
    from .probes import _write_nc
    from .ugrid import mesh_variables, set_attrs

    def fill(ds):
        ds.layers = sim.model.layers
        ds.arrival_threshold = float(sim.layout.maxima)
        extra = mesh_variables(ds, sim.mesh, crs)
        t = ds.createVariable("time", "f8")
        set_attrs(t, "time", "simulated time the maps cover up to", "s")
        t.assignValue(float(sim.t))
        for name, values in maps.items():
            var = ds.createVariable(name, "f8", ("face",), fill_value=np.nan)
            long_name, units = ATTRS.get(name) or _time_attrs(name)
            set_attrs(var, None, long_name, units, mesh="mesh", location="face",
                      coordinates="face_x face_y", **extra)  # fmt: skip
            var[:] = values

    return _write_nc(path, "maxima", fill)


def _time_attrs(name: str) -> tuple[str, str]:
    """``time_max_X``: when the maximum of X was first reached."""
    return f"simulated time of the {ATTRS[name[5:]][0]} (first reached)", "s"


def _xdmf(sim, maps: dict[str, np.ndarray], directory: Path) -> list[Path]:
    """``maxima.h5`` (mesh and maps) and ``maxima.xdmf``, its index for ParaView."""
    mesh = sim.mesh
    data, index = directory / FILES[2], directory / FILES[1]
    points = np.column_stack([mesh.nodes, np.zeros(mesh.n_nodes)])
    arrays = {"points": points, "cells": original_cells(mesh).astype(np.int64), **maps}
    atomic_write(data, lambda p: _h5_write(p, arrays, {"t": repr(float(sim.t))}))
    n, k = mesh.n_cells, mesh.k
    topology = "Triangle" if k == 3 else "Quadrilateral"
    attributes = "".join(
        f'<Attribute Name="{name}" AttributeType="Scalar" Center="Cell">'
        f"{_data_item(f'{data.name}:/{name}', (n,), np.float64)}</Attribute>\n"
        for name in maps
    )
    text = (
        '<?xml version="1.0"?>\n<Xdmf Version="3.0">\n<Domain>\n<Grid Name="maxima" '
        f'GridType="Uniform">\n<Time Value="{float(sim.t)!r}"/>\n<Geometry GeometryType="XYZ">'
        f"{_data_item(f'{data.name}:/points', (mesh.n_nodes, 3), np.float64)}</Geometry>\n"
        f'<Topology TopologyType="{topology}" NumberOfElements="{n}">'
        f"{_data_item(f'{data.name}:/cells', (n, k), np.int64)}</Topology>\n"
        f"{attributes}</Grid>\n</Domain>\n</Xdmf>\n"
    )
    atomic_write(index, lambda p: Path(p).write_text(text, encoding="utf-8"))
    return [data, index]
