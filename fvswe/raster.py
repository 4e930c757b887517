"""Fields given on a regular grid (bathymetry, friction maps), sampled at cell barycentres.

A raster is a 2-D array of values on the nodes of a rectilinear grid ``x[i]``,
``y[j]`` (``values[j, i]``), read from

- a NetCDF file (through xarray): one variable over two coordinates named ``x``/``y``,
  ``lon``/``lat`` or ``longitude``/``latitude``, in either order;
- an ``.npz`` archive: the arrays ``x``, ``y`` and the variable (``values[y, x]``).

:func:`sample` interpolates it bilinearly (exact for ``a + b x + c y + d x y``)
or takes the nearest node. A point outside the grid, a missing variable or a NaN or
infinite value where the mesh needs a value is a :class:`~fvswe.errors.ConfigError` of
one line naming the file and the cell. :func:`raster_field` gives a function of
``(x, y)`` that :class:`~fvswe.simulation.Simulation` accepts for ``H`` or an
initial field, and case files name one as ``H = {raster = "bed.nc", variable = "depth"}``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .errors import ConfigError

#: Interpolation methods of :func:`sample`.
METHODS = ("bilinear", "nearest")
#: Coordinate names a NetCDF raster may use, (x, y) pairs.
COORDINATES = (("x", "y"), ("lon", "lat"), ("longitude", "latitude"))


@dataclass(frozen=True)
class Raster:
    """Values ``(ny, nx)`` on the nodes of the increasing coordinates ``x (nx,)``, ``y (ny,)``."""

    x: np.ndarray
    y: np.ndarray
    values: np.ndarray
    source: str

    @classmethod
    def from_arrays(cls, x, y, values, source: str = "<raster>") -> Raster:
        """Checked raster; decreasing coordinates (north-up images) are flipped."""
        x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
        values = np.asarray(values, np.float64)
        if x.ndim != 1 or y.ndim != 1 or values.shape != (y.size, x.size):
            raise ConfigError(
                f"{source}: expected values of shape (len(y), len(x)) = ({y.size}, {x.size}) "
                f"over 1-D coordinates, got {values.shape}"
            )
        for name, c in (("x", x), ("y", y)):
            if c.size < 2 or not np.all(np.isfinite(c)):
                raise ConfigError(f"{source}: coordinate {name} needs 2 or more finite values")
            steps = np.diff(c)
            if not (np.all(steps > 0) or np.all(steps < 0)):
                raise ConfigError(f"{source}: coordinate {name} is not strictly monotonic")
        if x[1] < x[0]:
            x, values = x[::-1], values[:, ::-1]
        if y[1] < y[0]:
            y, values = y[::-1], values[::-1, :]
        return cls(x, y, np.ascontiguousarray(values), source)


def read_raster(path: str | Path, variable: str | None = None) -> Raster:
    """A raster from a NetCDF (``.nc``) or ``.npz`` file; ``variable`` may be left out when
    the file holds a single one."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"{path}: no such raster file")
    readers = {".npz": _read_npz, ".nc": _read_netcdf, ".nc4": _read_netcdf, ".cdf": _read_netcdf}
    if path.suffix not in readers:
        raise ConfigError(f"{path}: unknown raster format (use .nc, or .npz with arrays x, y and "
                          "the variable)")  # fmt: skip
    try:
        return readers[path.suffix](path, variable)
    except MemoryError:  # a header claiming more than this machine holds, a zip bomb
        raise ConfigError(f"{path}: the raster does not fit in memory") from None


def _pick(names: list[str], variable: str | None, src: str) -> str:
    """The variable to read: the one named, or the only one there is."""
    if variable is None:
        if len(names) != 1:
            raise ConfigError(f"{src}: name the variable to read (one of {', '.join(names)})")
        return names[0]
    if variable not in names:
        raise ConfigError(
            f"{src}: no variable {variable!r} (variables: {', '.join(names) or 'none'})"
        )
    return variable


def _read_npz(path: Path, variable: str | None) -> Raster:
    src = str(path)
    try:
        with np.load(path, allow_pickle=False) as data:
            arrays = {k: data[k] for k in data.files}
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{src}: cannot read raster ({exc})") from None
    missing = [c for c in ("x", "y") if c not in arrays]
    if missing:
        raise ConfigError(f"{src}: missing coordinate array {missing[0]!r}")
    name = _pick([k for k in arrays if k not in ("x", "y")], variable, src)
    return Raster.from_arrays(arrays["x"], arrays["y"], arrays[name], f"{src}:{name}")


def _read_netcdf(path: Path, variable: str | None) -> Raster:
    src = str(path)
    try:
        import xarray as xr
    except ImportError:
        raise ConfigError(
            f"{src}: reading NetCDF rasters needs xarray and netCDF4 (pip install 'fvswe[netcdf]')"
        ) from None
    try:
        with xr.open_dataset(path) as ds:
            name = _pick([str(v) for v in ds.data_vars], variable, src)
            da = ds[name]
            pair = next((p for p in COORDINATES if set(p) <= set(map(str, da.dims))), None)
            if da.ndim != 2 or pair is None:
                choices = " or ".join("/".join(p) for p in COORDINATES)
                raise ConfigError(
                    f"{src}: variable {name!r} must have the two dimensions {choices}, "
                    f"has {tuple(map(str, da.dims))}"
                )
            da = da.transpose(pair[1], pair[0]).load()
            return Raster.from_arrays(
                da[pair[0]].values, da[pair[1]].values, da.values, f"{src}:{name}"
            )
    except ConfigError:
        raise
    except Exception as exc:  # netCDF4/HDF5 errors of a damaged file: one line for the user
        raise ConfigError(f"{src}: cannot read raster ({exc})") from None


def _check_method(method: str, source: str) -> None:
    if method not in METHODS:
        raise ConfigError(
            f"{source}: unknown interpolation {method!r} (choose from {', '.join(METHODS)})"
        )


def sample(raster: Raster, x, y, method: str = "bilinear") -> np.ndarray:
    """The raster's values at the points ``(x, y)`` (cell barycentres, in cell order)."""
    _check_method(method, raster.source)
    x, y = np.broadcast_arrays(np.asarray(x, np.float64), np.asarray(y, np.float64))
    gx, gy = raster.x, raster.y
    outside = ~((x >= gx[0]) & (x <= gx[-1]) & (y >= gy[0]) & (y <= gy[-1]))
    if outside.any():
        k = int(np.flatnonzero(outside)[0])
        raise ConfigError(
            f"{raster.source}: cell {k} at ({x.flat[k]:.6g}, {y.flat[k]:.6g}) lies outside the "
            f"raster [{gx[0]:.6g}, {gx[-1]:.6g}] x [{gy[0]:.6g}, {gy[-1]:.6g}] "
            f"({int(outside.sum())} cells outside)"
        )
    # cell of the grid holding each point: i in [0, nx - 2], local coordinates s, t in [0, 1]
    i = np.clip(np.searchsorted(gx, x, side="right") - 1, 0, gx.size - 2)
    j = np.clip(np.searchsorted(gy, y, side="right") - 1, 0, gy.size - 2)
    s = (x - gx[i]) / (gx[i + 1] - gx[i])
    t = (y - gy[j]) / (gy[j + 1] - gy[j])
    v = raster.values
    if method == "nearest":
        out = v[j + (t > 0.5), i + (s > 0.5)]
    else:
        out = (1 - t) * ((1 - s) * v[j, i] + s * v[j, i + 1]) + t * (
            (1 - s) * v[j + 1, i] + s * v[j + 1, i + 1]
        )
    bad = ~np.isfinite(out)  # NaN, or ±inf (bilinear: NaN where an inf is weighted by 0)
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        raise ConfigError(
            f"{raster.source}: not finite ({float(out.flat[k])!r}) where cell {k} at "
            f"({x.flat[k]:.6g}, {y.flat[k]:.6g}) needs a value ({int(bad.sum())} cells)"
        )
    return out


def raster_field(
    path: str | Path, variable: str | None = None, method: str = "bilinear"
) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    """A function of ``(x, y)`` sampling a raster file (read once, now, so that a bad file
    or variable is reported before any run)."""
    raster = read_raster(path, variable)
    _check_method(method, raster.source)

    def field(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        return sample(raster, x, y, method)

    return field
