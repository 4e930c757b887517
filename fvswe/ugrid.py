"""CF-UGRID NetCDF output: the fields of a run on its mesh, appended at every output time.

The file follows UGRID 1.0 (a ``mesh`` topology variable with
``cf_role = "mesh_topology"``, face-node connectivity, node and face
coordinates) and CF 1.8 (a ``time`` coordinate with units, a standard name or
long name and units on every field, an optional ``crs`` grid mapping), so
xarray, xugrid/uxarray, QGIS's mesh layer and ParaView read it.

Written with **netCDF4** (the Unidata C library's own binding): it is the
reference implementation that QGIS, ParaView and xarray's default engine
use, it writes an unlimited ``time`` dimension that each output appends to,
and ``Dataset.sync()`` flushes every output to disk, so a run that dies
leaves a readable file up to its last output. A full disk must never fail a
write inside HDF5 (the file is left unreadable, and closing it fails again), so
each output is written into disk space held for it (:meth:`NetCDFSeries.write`).
xarray reads the result (tests/test_ugrid.py). h5netcdf would reuse the h5py we
already depend on, but writes through HDF5 alone and is a second implementation
of the format.

:class:`NetCDFSeries` has the interface of :class:`fvswe.output.Series`
(``with NetCDFSeries(dir, sim) as s: s.write()``) so the CLI can use either.
"""

from __future__ import annotations

import datetime
import errno
import json
import os
import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import numpy as np

from .errors import ConfigError, OutputError
from .mesh.core import inverse_permutation
from .output import FIELD_NAMES, IDENTITY_ATTRS, PART, original_cells, os_error, output_fields

#: File name of the series in an output folder.
FILENAME = "solution.nc"
#: Output fields that do not change in time (the bed): stored once, on ``face`` only.
STATIC = ("bathymetry",)
#: The time origin written when none is given: model time is relative, CF wants a date.
TIME_ORIGIN = "1970-01-01 00:00:00"
#: The disk space :class:`NetCDFSeries` holds for its next write (see :func:`_reserve`):
#: twice the bytes it writes and this much more for HDF5's metadata.
RESERVE_EXTRA = 64 * 1024

#: Field -> (CF standard name or None, long name, units). ``cell_thickness`` is CF's name
#: for the thickness of a model layer (CMIP's thkcello); the interface ``eta2`` has no
#: CF standard name and carries a long name only.
FIELD_ATTRS: dict[str, tuple[str | None, str, str]] = {
    "h1": ("cell_thickness", "upper layer thickness", "m"),
    "h2": ("cell_thickness", "lower layer thickness", "m"),
    "h": ("sea_floor_depth_below_sea_surface", "water depth", "m"),
    "eta1": ("sea_surface_height_above_geopotential_datum", "free surface", "m"),
    "eta": ("sea_surface_height_above_geopotential_datum", "free surface", "m"),
    "eta2": (None, "interface between the layers above the reference level", "m"),
    "u1": ("sea_water_x_velocity", "upper layer velocity, x component", "m s-1"),
    "v1": ("sea_water_y_velocity", "upper layer velocity, y component", "m s-1"),
    "u2": ("sea_water_x_velocity", "lower layer velocity, x component", "m s-1"),
    "v2": ("sea_water_y_velocity", "lower layer velocity, y component", "m s-1"),
    "u": ("sea_water_x_velocity", "velocity, x component", "m s-1"),
    "v": ("sea_water_y_velocity", "velocity, y component", "m s-1"),
    "bathymetry": (
        "sea_floor_depth_below_geopotential_datum",
        "depth of the bottom below the reference level (positive down)",
        "m",
    ),
}


def netcdf4():
    """The netCDF4 module, or a one-line error saying how to install it."""
    try:
        import netCDF4
    except ImportError:
        raise ConfigError(
            "NetCDF output needs the netCDF4 package: pip install 'fvswe[netcdf]'"
        ) from None
    return netCDF4


def set_attrs(var, standard_name: str | None, long_name: str, units: str, **extra) -> None:
    """CF attributes of one variable (a standard name only where CF has one)."""
    if standard_name:
        var.standard_name = standard_name
    var.long_name = long_name
    var.units = units
    for key, value in extra.items():
        setattr(var, key, value)


def create_time(ds, origin: str = TIME_ORIGIN):
    """An unlimited ``time`` dimension and its CF coordinate variable."""
    ds.createDimension("time", None)
    t = ds.createVariable("time", "f8", ("time",))
    set_attrs(t, "time", "simulated time", f"seconds since {origin}", axis="T", calendar="standard")
    return t


def check_time_origin(text: str, where: str) -> str:
    """``text`` as CF's reference date ``YYYY-MM-DD HH:MM:SS`` (UTC where it has an offset),
    or a one-line ConfigError naming ``where``: an ISO date or date-time, nothing else, so
    that every reader can decode the ``time`` units it is written into."""
    try:
        when = datetime.datetime.fromisoformat(text.strip())
    except (TypeError, ValueError, AttributeError):
        raise ConfigError(f"{where}: expected an ISO date or date-time such as 2026-01-01 or "
                          f"2026-01-01 12:00:00, got {text!r}") from None  # fmt: skip
    if when.tzinfo is not None:
        when = when.astimezone(datetime.timezone.utc).replace(tzinfo=None)
    return when.isoformat(sep=" ")


def check_crs(crs: str, where: str) -> str:
    """``crs`` without surrounding blanks if it is ``EPSG:<code>`` or WKT (a keyword and a
    bracketed, balanced body), and, where pyproj is installed, a CRS pyproj knows; else a
    one-line ConfigError naming ``where``."""
    text = crs.strip() if isinstance(crs, str) else ""
    epsg = re.fullmatch(r"EPSG:\d+", text, re.IGNORECASE)
    wkt = re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*\s*\[.*\]", text, re.S) and _balanced(text)
    if not (epsg or wkt):
        raise ConfigError(f"{where}: expected EPSG:<code> (e.g. EPSG:32631) or WKT, got {crs!r}")
    try:
        import pyproj
    except ImportError:
        return text
    try:
        pyproj.CRS.from_user_input(text)
    except pyproj.exceptions.CRSError as exc:
        reason = " ".join(str(exc).split())
        raise ConfigError(f"{where}: {crs!r} is no CRS pyproj knows ({reason})") from None
    return text


# Geographic (degree) CRSs recognised without pyproj: WGS 84, ETRS89, NAD83, GDA94/2020,
# JGD2000, SIRGAS 2000, CGCS2000, NAD83(2011), ED50 and WGS 84 3D.
GEOGRAPHIC_EPSG = {4326, 4258, 4269, 4283, 7844, 4612, 4674, 4490, 6318, 4230, 4979}
#: CF's standard name and units of the x and y coordinates of a geographic CRS.
GEOGRAPHIC_AXES = {"x": ("longitude", "degrees_east"), "y": ("latitude", "degrees_north")}
GEOGRAPHIC_WKT = re.compile(r"\s*(GEOGCS|GEOGCRS|GEOGRAPHICCRS)\s*\[", re.IGNORECASE)


def is_geographic(crs: str) -> bool:
    """Whether ``crs`` (checked by :func:`check_crs`) is geographic, longitude/latitude in
    degrees: a known EPSG code or WKT keyword, or pyproj's verdict where installed. Such a
    mesh is solved on the sphere (:mod:`fvswe.mesh.sphere`)."""
    text = crs.strip()
    epsg = re.fullmatch(r"EPSG:(\d+)", text, re.IGNORECASE)
    geographic = bool(GEOGRAPHIC_WKT.match(text)) or bool(
        epsg and int(epsg.group(1)) in GEOGRAPHIC_EPSG
    )
    try:
        import pyproj

        geographic = geographic or pyproj.CRS.from_user_input(text).is_geographic
    except ImportError:
        pass
    return geographic


def _balanced(wkt: str) -> bool:
    """Whether the brackets of ``wkt`` outside its quoted strings pair up and close at its end."""
    depth, quoted = 0, False
    for k, char in enumerate(wkt):
        if char == '"':
            quoted = not quoted
        elif not quoted and char in "[]":
            depth += 1 if char == "[" else -1
            if depth < 0 or (depth == 0 and k != len(wkt) - 1):
                return False
    return depth == 0 and not quoted


def add_crs(ds, crs: str | None) -> str | None:
    """A ``crs`` grid-mapping variable for ``crs`` (``"EPSG:n"`` or WKT); its name, or None."""
    if not crs:
        return None
    var = ds.createVariable("crs", "i4")
    if crs.upper().startswith("EPSG:"):
        var.epsg_code = crs.upper()
    else:
        var.crs_wkt = crs
        var.spatial_ref = crs  # GDAL's (and QGIS's) name for the same WKT
    return "crs"


def global_attrs(ds, title: str) -> None:
    ds.Conventions = "CF-1.8 UGRID-1.0"
    ds.title = title
    ds.source = "fvswe"


def mesh_variables(ds, mesh, crs: str | None) -> dict[str, str]:
    """The UGRID mesh of ``mesh`` in ``ds`` (topology, face-node connectivity, node and face
    coordinates, face areas; faces in the original cell order) and the ``crs`` grid mapping;
    the ``grid_mapping`` attribute its face variables take (empty without a CRS)."""
    grid_mapping = add_crs(ds, crs)
    ds.createDimension("node", mesh.n_nodes)
    ds.createDimension("face", mesh.n_cells)
    ds.createDimension("max_face_nodes", mesh.k)
    topo = ds.createVariable("mesh", "i4")
    topo.cf_role = "mesh_topology"
    topo.long_name = "topology of the 2-D unstructured mesh"
    topo.topology_dimension = 2
    topo.node_coordinates = "node_x node_y"
    topo.face_node_connectivity = "face_nodes"
    topo.face_coordinates = "face_x face_y"
    topo.face_dimension = "face"
    topo.node_dimension = "node"
    face_nodes = ds.createVariable("face_nodes", "i4", ("face", "max_face_nodes"))
    face_nodes.cf_role = "face_node_connectivity"
    face_nodes.long_name = "nodes of each face, counter-clockwise"
    face_nodes.start_index = 0
    face_nodes[:] = original_cells(mesh).astype(np.int32)
    o = inverse_permutation(mesh.original_index)
    coords = {
        "node_x": ("node", mesh.nodes[:, 0], "x", "node"),
        "node_y": ("node", mesh.nodes[:, 1], "y", "node"),
        "face_x": ("face", mesh.centroid[o, 0], "x", "face barycentre"),
        "face_y": ("face", mesh.centroid[o, 1], "y", "face barycentre"),
    }
    extra = {"grid_mapping": grid_mapping} if grid_mapping else {}
    geographic = bool(crs) and is_geographic(crs)  # lon/lat in degrees (on the sphere)
    for name, (dim, values, axis, what) in coords.items():
        var = ds.createVariable(name, "f8", (dim,))
        if geographic:
            standard, units = GEOGRAPHIC_AXES[axis]
            set_attrs(var, standard, f"{standard} of {what}", units, **extra)
        else:
            set_attrs(var, f"projection_{axis}_coordinate", f"{axis} of {what}", "m", **extra)
        var[:] = values
    area = ds.createVariable("face_area", "f8", ("face",))
    set_attrs(area, "cell_area", "face area", "m2", mesh="mesh", location="face")
    area[:] = mesh.area[o]
    return extra


class NetCDFSeries:
    """A CF-UGRID NetCDF time series of :func:`fvswe.output.output_fields`.

    Use as a context manager; :meth:`write` appends the current fields along the
    unlimited ``time`` dimension and syncs the file. ``directory/solution.nc``
    is created under a hidden name with the mesh (and, with ``resume_at``, the
    outputs of an existing series before that time) and renamed into place before
    the first new output, so a restarted run leaves the same series as an
    uninterrupted one. ``crs`` (``"EPSG:n"`` or WKT) becomes the ``crs`` grid
    mapping; ``time_origin`` is the date that model time 0 is written as; ``identity`` (the
    run's, :func:`fvswe.restart.identity`) is stored so that a restart continues only its own
    run's series (:func:`fvswe.output.identity_of`). The hidden file is removed on any failure.
    """

    def __init__(
        self,
        directory: str | Path,
        sim,
        *,
        resume_at: float | None = None,
        crs: str | None = None,
        time_origin: str = TIME_ORIGIN,
        title: str = "",
        identity: Mapping[str, Any] | None = None,
    ) -> None:
        netcdf4()  # fail before any file is touched when it is missing
        self.directory = Path(directory)
        self.sim = sim
        self.resume_at = resume_at
        self.crs = None if crs is None else check_crs(crs, "crs")
        self.time_origin = check_time_origin(time_origin, "time_origin")
        self.title = title
        self.identity = json.dumps(dict(identity or {}), sort_keys=True)
        self.times: list[float] = []

    @property
    def path(self) -> Path:
        return self.directory / FILENAME

    @property
    def reserve(self) -> Path:
        """The file that holds the disk space of the next output (:func:`_reserve`); a
        temporary by its name, so :func:`fvswe.output.clean_stale` removes one a kill left."""
        return self.directory / f".{FILENAME}{PART}reserve"

    def __enter__(self) -> NetCDFSeries:
        previous = self._previous() if self.resume_at is not None else []
        tmp = self.directory / f".{FILENAME}.tmp"
        self._ds = None
        mesh = self.sim.mesh  # its nodes, connectivity, centroids and areas, and the outputs
        made = mesh.nodes.nbytes + mesh.n_cells * (4 * mesh.k + 24)
        try:
            self._hold(made + len(previous) * self._output_bytes())
            self.reserve.unlink()  # its room is the new file's
            with self._failed_write():
                self._ds = netcdf4().Dataset(tmp, "w", format="NETCDF4")
                self._create(self._ds)
                for t, fields in previous:
                    self._write(t, fields)
                self._ds.sync()
            self._hold(self._output_bytes())  # no series in place that cannot take an output
            with self._failed_write():
                os.replace(tmp, self.path)  # the open handle follows the file
        except BaseException:
            self._close()
            tmp.unlink(missing_ok=True)
            raise
        return self

    def _output_bytes(self) -> int:
        """The bytes of one output: its fields, its time and (the first time) the bed."""
        fields = len(FIELD_NAMES[self.sim.model.layers]) - len(STATIC) + 1
        return 8 * self.sim.mesh.n_cells * fields

    def _hold(self, nbytes: int) -> None:
        """Hold the disk space of a write of ``nbytes`` (twice them and
        :data:`RESERVE_EXTRA` for HDF5's metadata), or fail now, while the file is whole."""
        _reserve(self.reserve, 2 * nbytes + RESERVE_EXTRA, self.path)

    @contextmanager
    def _failed_write(self) -> Iterator[None]:
        """A netCDF error inside the block (a write that failed despite the space held: an
        I/O error, a file system that over-commits) as a one-line OutputError naming the
        series."""
        try:
            yield
        except (RuntimeError, OSError) as exc:
            if isinstance(exc, OSError) and (exc.errno or 0) > 0:  # netCDF's codes are < 0
                raise os_error(self.path, exc) from None
            raise OutputError(f"{self.path}: cannot write ({exc})") from None

    def _close(self) -> None:
        """Close the file and give back the reserve; a close that fails (its flush met the
        error that stopped the run) adds nothing to that error."""
        self.reserve.unlink(missing_ok=True)
        if self._ds is not None and self._ds.isopen():
            with suppress(RuntimeError, OSError):
                self._ds.close()

    def _create(self, ds) -> None:
        sim = self.sim
        global_attrs(ds, self.title or sim.mesh.source)
        ds.layers = sim.model.layers
        ds.scheme = sim.scheme
        setattr(ds, IDENTITY_ATTRS[FILENAME], self.identity)
        extra = mesh_variables(ds, sim.mesh, self.crs)
        create_time(ds, self.time_origin)
        for name in FIELD_NAMES[sim.model.layers]:  # no gather: MPI ranks call this on rank 0
            dims = ("face",) if name in STATIC else ("time", "face")
            var = ds.createVariable(name, "f8", dims, fill_value=False)
            standard, long_name, units = FIELD_ATTRS[name]
            set_attrs(var, standard, long_name, units, mesh="mesh", location="face",
                      coordinates="face_x face_y", **extra)  # fmt: skip

    def _previous(self) -> list[tuple[float, dict[str, np.ndarray]]]:
        """The outputs of an existing series before ``resume_at`` (the runner writes one at
        ``resume_at`` again when it is an output time)."""
        if not self.path.is_file():
            return []
        with netcdf4().Dataset(self.path) as ds:
            times = np.asarray(ds["time"][:], dtype=np.float64)
            names = list(FIELD_NAMES[self.sim.model.layers])
            return [  # a static field once (per time in series written before STATIC)
                (
                    float(t),
                    {n: np.asarray(ds[n][k] if ds[n].ndim == 2 else ds[n][:]) for n in names},
                )  # fmt: skip
                for k, t in enumerate(times)
                if t < self.resume_at  # the run writes an output at resume_at itself
            ]

    def _write(self, t: float, fields: Mapping[str, np.ndarray]) -> None:
        k = len(self.times)
        self._ds["time"][k] = t
        for name, values in fields.items():
            if name not in STATIC:
                self._ds[name][k, :] = values
            elif k == 0:
                self._ds[name][:] = values
        self.times.append(t)

    def write(self) -> None:
        """Append the simulation's current fields at its current time, and sync.

        HDF5 does not survive a write that fails in the middle of a flush (the file is
        left unreadable, and closing it fails again), so the write never meets a full
        disk: it spends the space held for it, and the space of the next one is held
        again (a full disk is then an OSError from Python, the file whole)."""
        fields = output_fields(self.sim)
        self.reserve.unlink(missing_ok=True)
        with self._failed_write():
            self._write(float(self.sim.t), fields)
            self._ds.sync()
        self._hold(self._output_bytes())

    def __exit__(self, *exc) -> None:
        if exc[0] is not None:
            self._close()
            return
        self.reserve.unlink(missing_ok=True)
        with self._failed_write():
            self._ds.close()


def _reserve(path: Path, nbytes: int, name: Path) -> None:
    """Make ``path`` a file of ``nbytes`` allocated on disk; a disk without the room is an
    OutputError naming ``name`` (and leaves no ``path``)."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
        try:
            _allocate(fd, nbytes)
        finally:
            os.close(fd)
    except OSError as exc:
        path.unlink(missing_ok=True)
        raise os_error(name, exc) from None


def _allocate(fd: int, nbytes: int) -> None:
    """``posix_fallocate``, or zeros written where there is none (macOS, some file systems)."""
    try:
        os.posix_fallocate(fd, 0, nbytes)
    except AttributeError:
        pass
    except OSError as exc:
        if exc.errno not in (errno.EINVAL, errno.EOPNOTSUPP, errno.ENOSYS):
            raise
    else:
        return
    os.pwrite(fd, bytes(nbytes), 0)
