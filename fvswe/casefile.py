"""What one run is: a named case or a TOML case file, plus command-line overrides.

A case file (``fvswe run path/to/case.toml``) names every choice of a run::

    title = "internal circular dam break"   # optional
    case = "test1"        # optional: start from a named case, the file overrides it
    layers = 2
    g = 9.81
    r = 0.5
    scheme = "ir-roe"     # one of fvswe.registry (`fvswe run --help` lists them)
    order = "rcm"         # none, rcm, gps, random, hilbert, morton, auto
    cfl = 0.9
    dtype = "float64"     # or float32
    backend = "auto"      # cpu, gpu, auto
    dt_mode = "lagged"    # lagged, nonlagged, fixed (then give dt)
    t_end = 0.1

    [mesh]                # a file (relative to this file) ...
    file = "meshes/square.msh"
    bathymetry = "z:elevation"  # z or a field, as elevation (up) or depth (down), or none
    # ... or a member of the paper's family (square-4k, square-16k, ... square-2m):
    # family = "square-4k"
    # ... or a generator and its arguments:
    # generator = "square"; cells = 4000; seed = 0
    # generator = "structured_square"; n = 16
    # generator = "strip"; nx = 200; ny = 1; x0 = 0.0; x1 = 1.0

    [boundary]            # one condition per boundary tag of the mesh (absent: all walls)
    wall = "wall"         # wall or open

    [initial]             # numbers or expressions of x, y (cell barycentres)
    H = 6.0               # depth of the bottom below the reference level (default: 0, or
                          # the mesh file's depth field when it has one)
    h1 = "where(hypot(x, y) > 1.5, 4.0, 0.5)"
    h2 = "H - h1"         # earlier entries, and `depth` (the mesh file's field), are names too
    # momenta q1x, q1y, q2x, q2y (one layer: h, qx, qy), or velocities u1, v1, u2, v2 (u, v)

    [output]              # pictures and checkpoints need an output folder (--output DIR)
    every = 0.025         # or times = [0.05, 0.1]; t_end is always written
    png = ["h1", "eta2"]  # fields drawn at every output time
    checkpoint_every = 0.05

Expressions are parsed and checked against a whitelist (numbers, arithmetic,
comparisons, the names above and the NumPy functions in :data:`FUNCTIONS`)
before they are evaluated without builtins, so a case file cannot run code.
"""

from __future__ import annotations

import ast
import inspect
import math
from collections.abc import Callable, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from . import settings as run_settings
from .errors import ConfigError, check_finite
from .settings import NUMBER

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

#: NumPy functions an initial-state expression may call.
FUNCTIONS: dict[str, Callable] = {
    name: getattr(np, name)
    for name in (
        "abs", "arccos", "arcsin", "arctan", "arctan2", "ceil", "clip", "cos", "cosh", "exp",
        "floor", "heaviside", "hypot", "log", "log10", "logical_and", "logical_not",
        "logical_or", "maximum", "minimum", "sign", "sin", "sinh", "sqrt", "tan", "tanh",
        "where",
    )
}  # fmt: skip
CONSTANTS = {"pi": math.pi, "e": math.e}


@dataclass(frozen=True)
class Key:
    """One key of a case file: where it lives, its TOML type(s), what it means.

    ``section`` is ``""`` for the top level, else the table (``"output"``) or
    array of tables (``"gauges"``) that holds it; a ``name`` in angle brackets
    (``<tag>``) stands for names the file chooses. ``example`` is the TOML text
    of the value :func:`template` writes (``""``: left out of the template) and
    ``active=False`` writes it commented out, as an alternative.
    """

    section: str
    name: str
    types: type | tuple[type, ...]
    help: str
    example: str = ""
    active: bool = True

    @property
    def dotted(self) -> str:
        return f"{self.section}.{self.name}" if self.section else self.name

    def type_names(self) -> str:
        kinds = self.types if isinstance(self.types, tuple) else (self.types,)
        names = {bool: "boolean", int: "integer", float: "number", str: "string", list: "array",
                 dict: "table"}  # fmt: skip
        shown = [names[t] for t in kinds if not (t is int and float in kinds)]  # int is a number
        return " or ".join(dict.fromkeys(shown))


#: Every key a case file may hold, in the order of :func:`template` and the docs' table.
SCHEMA: tuple[Key, ...] = (
    Key("", "title", str, "a name for the run (default: the file's name)", '"tidal channel"'),
    Key("", "case", str, "start from a named case (`fvswe cases`); the file overrides it",
        '"test1"', active=False),
    Key("", "t_end", NUMBER, "simulated end time (s)", "60.0"),
    *(Key("", s.name, s.types, s.help, s.toml_example(), s.active)
      for s in run_settings.SETTINGS),  # the run settings: one table, fvswe/settings.py
    Key("friction", "law", str, "bottom friction law (one layer, or the lower of two), chezy or "
        "manning", '"manning"'),
    Key("friction", "coefficient", (*NUMBER, dict), "Chézy C (m^½/s, at least 1) or Manning n "
        "(s/m^⅓, at most 1; natural channels 0.01-0.2, so 25 is a Chézy value): a number or a "
        "raster table as for initial.<field>", "0.03"),
    Key("friction", "interfacial", (*NUMBER, dict), "two layers: c_i of the interfacial stress "
        "c_i |u1 - u2| (u1 - u2): a number or a raster table", "1e-3", active=False),
    Key("coriolis", "latitude", NUMBER, "Coriolis parameter from a latitude φ (degrees): f0 = "
        "2Ω sin φ (docs/SCHEMES.md §15)", "45.0"),
    Key("coriolis", "f", NUMBER, "or f0 itself (1/s)", "1e-4", active=False),
    Key("coriolis", "beta", NUMBER, "a beta-plane f = f0 + beta (y - y0): beta (1/(m s)); 0 "
        "(default): an f-plane", "1.6e-11", active=False),
    Key("coriolis", "y0", NUMBER, "the beta-plane's y where f = f0 (m; default 0)", "0.0",
        active=False),
    Key("coriolis", "sphere", bool, "on a lon/lat mesh (output.crs geographic), alone: f = 2Ω "
        "sin φ at each cell's latitude (docs/SCHEMES.md §20)", "true", active=False),
    Key("wind", "speed", (*NUMBER, list), "wind speed 10 m up (m/s), on the upper (or only) "
        "layer: a number, or values at `times`", "5.0"),
    Key("wind", "direction", (*NUMBER, list), "where the wind blows from (degrees clockwise "
        "from north = +y; 270: towards +x)", "270.0"),
    Key("wind", "u", (*NUMBER, list), "or the wind's components u, v (m/s, towards +x, +y)",
        "5.0", active=False),
    Key("wind", "v", (*NUMBER, list), "the y component, with `u`", "0.0", active=False),
    Key("wind", "times", list, "a wind series: sample times (s); linear in u, v between them",
        "[0.0, 3600.0]", active=False),
    Key("wind", "file", str, "or a three-column `t speed direction` text file (relative to "
        "the case file)", '"wind.txt"', active=False),
    Key("wind", "drag", (str, *NUMBER), "drag law: large-pond (Large & Pond 1981), wu (Wu "
        "1982) or a number, a constant C_d", '"large-pond"'),
    Key("wind", "rho_air", NUMBER, "air density (kg/m³)", "1.225"),
    Key("wind", "rho_water", NUMBER, "density of the layer the wind drives (kg/m³)", "1025.0"),
    Key("slide", "thickness", NUMBER, "a rigid slide moving on the bed (docs/SCHEMES.md §17): "
        "its height T (m); in [initial], H is the bed with the slide at t = 0", "0.2"),
    Key("slide", "length", NUMBER, "its half-length L along the path (m)", "5.0"),
    Key("slide", "width", NUMBER, "its half-width W across the path (m; inf: uniform across)",
        "2.0"),
    Key("slide", "start", list, "[x, y] of its centre at t = 0", "[30.0, 2.0]"),
    Key("slide", "direction", list, "[x, y] of its path (normalised; default [1, 0])",
        "[1.0, 0.0]"),
    Key("slide", "speed", NUMBER, "a constant speed U along the path (m/s)", "0.5"),
    Key("slide", "acceleration", NUMBER, "or Watts and Grilli's law from rest: the initial "
        "acceleration a0 (m/s²), with terminal_velocity", "0.2", active=False),
    Key("slide", "terminal_velocity", NUMBER, "its terminal velocity u_t (m/s)", "1.0",
        active=False),
    Key("mesh", "file", str, "a mesh file (relative to the case file) or a family member "
        "(square-4k ... square-2m)", '"meshes/channel.msh"', active=False),
    Key("mesh", "bathymetry", str, "with mesh.file: the bed, z:elevation (positive up), z:depth "
        "(positive down), FIELD:elevation, FIELD:depth or none", '"z:elevation"', active=False),
    Key("mesh", "family", str, "a member of the paper's mesh family: square-4k ... square-2m",
        '"square-4k"', active=False),
    Key("mesh", "generator", str, "square, structured_square, strip or lonlat_band (a band of "
        "the globe in degrees, for output.crs = \"EPSG:4326\"), with its arguments as further "
        "keys", '"strip"'),
    Key("mesh", "<argument>", NUMBER, "an argument of the generator: square: cells, seed, half; "
        "structured_square: n, half; strip: nx, ny, x0, x1, width; lonlat_band: nlon, nlat, lat",
        "nx = 100\nny = 2\nx0 = 0.0\nx1 = 100.0"),
    Key("boundary", "<tag>", (str, dict), 'a boundary tag\'s condition: "wall", "open", '
        '"outflow" (free outflow down the bed\'s slope) or a table (keys below); absent '
        "table: all walls",
        'east = "wall"\nwall = "wall"  # the strip\'s long sides'),
    Key("boundary.<tag>", "kind", str, "level (the default), discharge, characteristic "
        "(non-reflecting, toward a far field at rest at `level`, default 0) or periodic "
        "(with `partner`)", '"level"'),
    Key("boundary.<tag>", "partner", str, "kind periodic: the tag whose edges this tag's are "
        "joined to, each to the one it equals after one translation (the partner needs no "
        "condition)", '"east"', active=False),
    Key("boundary.<tag>", "level", (*NUMBER, str), "imposed level η(t) (m), a number "
        "or an expression of t", '"0.2 * sin(2 * pi * t / 30)"'),
    Key("boundary.<tag>", "level_file", str, "the level from a two-column `t eta` text file "
        "(relative to the case file)", '"tide.txt"', active=False),
    Key("boundary.<tag>", "times", list, "the level as a table: sample times (s), with `levels`",
        "[0.0, 30.0, 60.0]", active=False),
    Key("boundary.<tag>", "levels", list, "the level table's values (m), with `times`",
        "[0.0, 0.2, 0.0]", active=False),
    Key("boundary.<tag>", "interface", (*NUMBER, str, dict), "two layers, kind level: the "
        "interface level (m, negative below the reference): a number, an expression of t, "
        "{file = ...} or {times = [...], values = [...]}", '"-5.0"', active=False),
    Key("boundary.<tag>", "Q", (*NUMBER, str, dict), "kind discharge: m³/s into the domain "
        "over the tag (the upper layer's of two), spread uniformly over its length; a number, "
        "an expression of t, {file = ...} or {times = [...], values = [...]}",
        '"100 + 50 * sin(2 * pi * t / 3600)"', active=False),
    Key("boundary.<tag>", "q", (*NUMBER, str, dict), "kind discharge, instead of Q: m²/s per "
        "metre of boundary", "1.5", active=False),
    Key("boundary.<tag>", "Q_lower", (*NUMBER, str, dict), "two layers, kind discharge: the lower "
        "layer's m³/s (default 0); q_lower per metre with q", "0.0", active=False),
    Key("boundary.<tag>", "q_lower", (*NUMBER, str, dict), "two layers, with q: the lower "
        "layer's m²/s per metre (default 0)", "0.0", active=False),
    Key("boundary.<tag>", "every", NUMBER, "sampling interval of an expression (s)", "1.0"),
    Key("boundary.<tag>", "until", NUMBER, "last sample of an expression (s; default 30 "
        "days)", "60.0"),
    Key("initial", "<field>", (*NUMBER, str, dict), "H (bottom depth, positive down), a state "
        "field (h1 q1x q1y h2 q2x q2y; one layer h qx qy) or a velocity (u1 v1 u2 v2; u v): a "
        "number, an expression of x, y, depth and earlier keys, or a raster table {raster, "
        "variable, method}",
        'H = 1.0\n# H = {raster = "bed.nc", variable = "depth"}  # from a raster file\n'
        'h = "H"  # at rest: eta = h - H = 0\nu = 0.0'),
    Key("initial.<field>", "raster", str, "a raster file sampled at the cell barycentres: NetCDF "
        "(coordinates x/y or lon/lat) or .npz (arrays x, y and the variable); relative to the "
        "case file", '"bed.nc"'),
    Key("initial.<field>", "variable", str, "the raster's variable (default: its only one)",
        '"depth"'),
    Key("initial.<field>", "method", str, "bilinear (default) or nearest", '"bilinear"'),
    Key("output", "every", NUMBER, "write the fields every this many simulated seconds", "20.0"),
    Key("output", "times", list, "and/or at these times (s); t_end is always written", "[5.0]",
        active=False),
    Key("output", "format", str, "field series: xdmf (solution.xdmf + .h5), netcdf "
        "(CF-UGRID solution.nc) or both", '"xdmf"'),
    Key("output", "crs", str, "coordinate reference system of the mesh, EPSG:n or WKT "
        "(NetCDF grid mapping); a geographic one (EPSG:4326: lon/lat in degrees) is solved on "
        "the sphere (docs/SCHEMES.md §20)", '"EPSG:32631"', active=False),
    Key("output", "time_origin", str, "the date model time 0 is written as in NetCDF files, "
        "an ISO date or date-time (default 1970-01-01 00:00:00)", '"2026-01-01 00:00:00"',
        active=False),
    Key("output", "png", list, "fields drawn at every output time", '["h", "u"]', active=False),
    Key("output", "checkpoint_every", NUMBER, "write checkpoint.npz this often (s)", "30.0",
        active=False),
    Key("output", "probe_every", NUMBER, "sample gauges and sections this often (s; default: "
        "at output times)", "1.0"),
    Key("maxima", "arrival_threshold", NUMBER, "[maxima]: keep maximum-value and arrival-time "
        "maps (maxima.nc / maxima.xdmf); a wave has arrived in a cell when its surface departs "
        "from the initial one by more than this (m)", "0.01"),
    Key("gauges", "name", str, "gauge name ([[gauges]]: one table per gauge)", '"middle"'),
    Key("gauges", "x", NUMBER, "x of the gauge (m)", "50.0"),
    Key("gauges", "y", NUMBER, "y of the gauge (m)", "1.0"),
    Key("sections", "name", str, "section name ([[sections]]: one table per section)",
        '"weir"'),
    Key("sections", "points", list, "polyline [[x, y], ...] from boundary to boundary; its "
        "discharge per layer is the mass flux through the edges it cuts, positive to its right",
        "[[70.0, -1.0], [70.0, 5.0]]"),
    Key("sources", "name", str, "source or sink name ([[sources]]: one table per source; "
        "docs/SCHEMES.md §16)", '"outfall"'),
    Key("sources", "point", list, "[x, y]: into the cell holding it", "[20.0, 2.0]"),
    Key("sources", "polygon", list, "or [[x, y], ...]: spread over the cells inside by area",
        "[[10.0, 0.0], [12.0, 0.0], [12.0, 4.0], [10.0, 4.0]]", active=False),
    Key("sources", "discharge", (*NUMBER, str, dict), "Q into the domain (m³/s; negative: a "
        "sink): a number, an expression of t, {file = ...} or {times, values}", "0.5"),
    Key("sources", "lower", (*NUMBER, str, dict), "two layers: the lower layer's Q (the "
        "discharge goes to the upper one)", "0.1", active=False),
    Key("rain", "name", str, "rain or evaporation name ([[rain]]: one table each)", '"storm"'),
    Key("rain", "rate", (*NUMBER, str, dict), "depth rate on the upper or only layer (m/s; 1 "
        "mm/h = 2.778e-7; negative: evaporation): a number, an expression of t, {file} or "
        "{times, values}", '"2.8e-6 * (t < 3600)"'),
    Key("rain", "polygon", list, "[[x, y], ...]: where it falls (default: everywhere)",
        "[[0.0, 0.0], [50.0, 0.0], [50.0, 4.0], [0.0, 4.0]]", active=False),
    Key("rain", "field", (*NUMBER, str, dict), "its spatial factor (>= 0): a number, an "
        "expression of x, y or a raster table as for initial.<field>", "1.0", active=False),
)  # fmt: skip


def keys(section: str) -> dict[str, Key]:
    """The keys of one section of :data:`SCHEMA`, by name."""
    return {k.name: k for k in SCHEMA if k.section == section}


#: Where :func:`template` puts a table whose name the file chooses (None: an inline table,
#: its keys commented out in the table above).
TEMPLATE_TABLES = {"boundary.<tag>": "boundary.west", "initial.<field>": None}


#: The template's examples of two layers where one layer's differ: ``(section, key) ->
#: (example, active)``. The same channel holds an upper layer of 0.4 m over a lower one of
#: 0.6 m at rest, and the tide at its west end keeps the interface at that level.
TWO_LAYER_EXAMPLES = {
    ("", "layers"): ("2", True),
    ("", "scheme"): ('"ir-roe"', True),
    ("initial", "<field>"): (
        'H = 1.0\n# H = {raster = "bed.nc", variable = "depth"}  # from a raster file\n'
        'h1 = "0.4 * H"  # upper layer\nh2 = "0.6 * H"  # lower layer: at rest, eta1 = 0, '
        "eta2 = h2 - H = -0.4 H\nu1 = 0.0", True),
    ("boundary.<tag>", "interface"): ('"-0.4"', True),
}  # fmt: skip


def template(layers: int = 1) -> str:
    """A case file with every key of :data:`SCHEMA` (alternatives commented out) that runs:
    a tide entering a 100 m channel, with a gauge and a section (``fvswe case --template``);
    of two layers with ``layers=2`` (:data:`TWO_LAYER_EXAMPLES`, ``--layers 2``)."""
    lines = [
        "# fvswe case file: every key, with its meaning (alternatives commented out).",
        "# Run:  fvswe run case.toml -o out   (flags override the file; see `fvswe run --help`)",
    ]
    section = ""
    for key in SCHEMA:
        inline = TEMPLATE_TABLES.get(key.section, "") is None
        if key.section != section and not inline:
            section = key.section
            brackets = "[[{}]]" if section in ARRAYS else "[{}]"
            lines += ["", brackets.format(TEMPLATE_TABLES.get(section, section))]
        example, active = key.example, key.active
        if layers == 2:
            example, active = TWO_LAYER_EXAMPLES.get((key.section, key.name), (example, active))
        if not example:
            continue
        hash_ = "" if active and not inline else "# "
        if key.name.startswith("<"):
            lines.append(f"# {key.name}: {key.help}")
            lines += [hash_ + line for line in example.splitlines()]
        else:
            lines.append(f"{hash_}{key.name} = {example}  # {key.help}")
    return "\n".join(lines) + "\n"


def reference_markdown() -> str:
    """The table of every case-file key, for docs/guide/case-files.md."""
    rows = ["| key | type | meaning |", "|---|---|---|"]
    for key in SCHEMA:
        where = f"[[{key.section}]] " if key.section in ARRAYS else ""
        name = f"{where}{key.name}" if where else key.dotted
        help_ = key.help.replace("|", "\\|")
        rows.append(f"| `{name}` | {key.type_names()} | {help_} |")
    return "\n".join(rows) + "\n"


#: Tables and arrays of tables of a case file.
TABLES = (
    "mesh",
    "boundary",
    "initial",
    "output",
    "friction",
    "coriolis",
    "wind",
    "slide",
    "maxima",
)
ARRAYS = ("gauges", "sections", "sources", "rain")
#: Output formats of the field series.
FORMATS = ("xdmf", "netcdf", "both")

#: Velocity keys of ``[initial]`` -> (momentum component, thickness) they define.
VELOCITIES = {
    "u1": ("q1x", "h1"), "v1": ("q1y", "h1"), "u2": ("q2x", "h2"), "v2": ("q2y", "h2"),
    "u": ("qx", "h"), "v": ("qy", "h"),
}  # fmt: skip


@dataclass(frozen=True)
class RunSpec:
    """Everything one run needs except the mesh object, from a named case or a case file.

    ``settings`` holds the :class:`~fvswe.simulation.Simulation` keywords: every run
    setting (:data:`fvswe.settings.SETTINGS`), and friction, Coriolis and wind where set;
    ``initial`` maps ``H`` and state fields to numbers, expressions or functions
    of ``(x, y)``; ``mesh`` is ``{"file": path}``, ``{"generator": name, ...}``
    or None for the named case's bundled mesh.
    """

    name: str
    source: str
    t_end: float
    settings: dict[str, Any]
    initial: dict[str, Any]
    mesh: dict[str, Any] | None = None
    boundary: dict[str, str] | None = None
    output_times: tuple[float, ...] = ()
    output_every: float | None = None
    png: tuple[str, ...] = ()
    checkpoint_every: float | None = None
    output_format: str | None = None
    crs: str | None = None
    time_origin: str | None = None
    probe_every: float | None = None
    gauges: tuple = ()
    sections: tuple = ()
    case: Any = field(default=None, repr=False)

    def with_overrides(self, **values: Any) -> RunSpec:
        """A copy with the given settings or fields replaced; ``None`` values are ignored."""
        values = {k: v for k, v in values.items() if v is not None}
        settings = {
            **self.settings,
            **{k: values.pop(k) for k in list(values) if k in run_settings.BY_NAME},
        }
        return replace(self, settings=settings, **values)

    # -- mesh --------------------------------------------------------------------------------
    def load_mesh(self):
        """The mesh this spec names (a file, a generator, or the named case's bundled mesh)."""
        from . import mesh

        if self.mesh is None:
            return self.case.default_mesh()
        if "bathymetry" in self.mesh:
            return mesh.read_mesh(self.mesh["file"], bathymetry=self.mesh["bathymetry"])
        if "file" in self.mesh:
            return mesh.load(self.mesh["file"])  # a path, or a family name such as square-16k
        if "family" in self.mesh:
            return mesh.family(self.mesh["family"])
        return _generated(self.mesh, self.source)

    # -- simulation --------------------------------------------------------------------------
    def simulation(self, mesh):
        """A :class:`~fvswe.simulation.Simulation` of this spec on ``mesh``."""
        from .simulation import Simulation

        H, initial = self.initial_fields(mesh)
        return Simulation(mesh, H=H, initial=initial, boundary=self.boundary, crs=self.crs,
                          **self.settings)  # fmt: skip

    def initial_fields(self, mesh) -> tuple[Any, dict[str, Any]]:
        """``(H, initial)`` for :class:`Simulation`: expressions evaluated at the barycentres."""
        names: dict[str, Any] = {"x": mesh.centroid[:, 0], "y": mesh.centroid[:, 1]}
        if mesh.depth is not None:
            names["depth"] = mesh.depth
        values: dict[str, Any] = {}
        for key, value in self.initial.items():
            if isinstance(value, str):
                value = evaluate(value, names, f"{self.source}: initial.{key}")
            elif callable(value):
                value = value(names["x"], names["y"])
            values[key] = names[key] = value
            if key == "H" and self.settings.get("slide") is not None:  # the bed at t = 0
                names[key] = _slid(self.settings["slide"], mesh, value)
        for key, value in values.items():  # named here after the case file's key
            check_finite(value, f"{self.source}: initial.{key}")
        default_H = mesh.depth if mesh.depth is not None else 0.0
        H = values.pop("H", default_H)
        for key, (q, h) in VELOCITIES.items():
            if key in values:
                if q in values:
                    raise ConfigError(f"{self.source}: initial.{key} and initial.{q} both given")
                values[q] = np.asarray(values.pop(key), dtype=np.float64) * values.get(h, 0.0)
        return H, values

    # -- times -------------------------------------------------------------------------------
    def times(self) -> list[float]:
        """Sorted output times in (0, t_end], ending with ``t_end``."""
        t_end = self.t_end
        if not (isinstance(t_end, (int, float)) and t_end > 0 and math.isfinite(t_end)):
            raise ConfigError(f"{self.source}: t_end must be a positive number, got {t_end!r}")
        times = [float(t) for t in self.output_times]
        bad = [t for t in times if not 0 < t <= t_end]
        if bad:
            raise ConfigError(f"{self.source}: output time {bad[0]!r} lies outside (0, t_end]")
        every = self.output_every
        if every is not None:
            if not every > 0:
                raise ConfigError(f"{self.source}: output every must be positive, got {every!r}")
            times += [k * every for k in range(1, int(t_end / every) + 1)]
        # a time within round-off of t_end is t_end (e.g. 3 * 0.2 for t_end = 0.6)
        return sorted({t for t in times if t < t_end * (1 - 1e-12)} | {float(t_end)})


# -- named cases and case files ---------------------------------------------------------------
def from_case(name: str) -> RunSpec:
    """The spec of a named case (see ``fvswe cases``)."""
    from .cases import get_case

    case = get_case(name)
    settings = {
        **run_settings.defaults(),
        "layers": case.layers,
        "g": case.g,
        "r": case.r,
        "scheme": case.scheme,
        "cfl": case.cfl,
        **case.options(),  # grid cases: friction, dt_mode, dt
    }
    return RunSpec(
        name=case.name,
        source=f"case {case.name!r}",
        t_end=case.t_end,
        settings=settings,
        initial={"H": case.H, **case.initial},
        boundary=None if case.boundary is None else dict(case.boundary),
        case=case,
    )


def load(path: str | Path) -> RunSpec:
    """Read a TOML case file, every key checked against :data:`SCHEMA`; errors are one line
    naming the file and the key."""
    path = Path(path)
    src = str(path)
    if not path.is_file():
        raise ConfigError(f"{src}: no such case file")
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{src}: cannot read case file ({exc})") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{src}: malformed TOML ({exc})") from None
    for key, value in data.items():
        if key in TABLES:
            if not isinstance(value, dict):
                raise ConfigError(f"{src}: {key!r} must be a table ([{key}])")
        elif key in ARRAYS:
            if not (isinstance(value, list) and all(isinstance(v, dict) for v in value)):
                raise ConfigError(f"{src}: {key!r} must be an array of tables ([[{key}]])")
        else:
            _check(key, value, keys(""), src)
    base = from_case(data["case"]) if "case" in data else None
    settings = dict(run_settings.defaults() if base is None else base.settings)
    settings.update({k: data[k] for k in run_settings.NAMES if k in data})
    settings.update(_inputs(data, path))
    out = data.get("output", {})
    for key, value in out.items():
        _check(key, value, keys("output"), src, section="output")
    fmt = out.get("format")
    if fmt is not None and fmt not in FORMATS:
        choices = ", ".join(FORMATS)
        raise ConfigError(f"{src}: 'output.format' must be one of {choices}, got {fmt!r}")
    initial = dict(base.initial) if base is not None else {}
    for key, value in data.get("initial", {}).items():
        if isinstance(value, dict):
            value = _raster(f"initial.{key}", value, path)
        elif not isinstance(value, (int, float, str)) or isinstance(value, bool):
            raise ConfigError(
                f"{src}: initial.{key} must be a number, an expression string or a raster table"
            )
        initial[key] = value
    _check_initial_names(initial, settings["layers"], src)
    boundary = data.get("boundary")
    if boundary is not None:
        boundary = {tag: _condition(tag, value, path) for tag, value in boundary.items()}
    elif base is not None:
        boundary = base.boundary
    if "t_end" not in data and base is None:
        raise ConfigError(f"{src}: missing key 't_end'")
    return RunSpec(
        name=data.get("title", base.name if base else path.stem),
        source=src,
        t_end=data.get("t_end", base.t_end if base else 0.0),
        settings=settings,
        initial=initial,
        mesh=_mesh_spec(data["mesh"], path) if "mesh" in data else None,
        boundary=boundary,
        output_times=tuple(_numbers(out.get("times", []), "output.times", src)),
        output_every=out.get("every"),
        png=tuple(_strings(out.get("png", []), "output.png", src)),
        checkpoint_every=out.get("checkpoint_every"),
        output_format=fmt,
        crs=out.get("crs"),
        time_origin=out.get("time_origin"),
        probe_every=out.get("probe_every"),
        gauges=tuple(_gauge(k, g, src) for k, g in enumerate(data.get("gauges", []))),
        sections=tuple(_section(k, s, src) for k, s in enumerate(data.get("sections", []))),
        case=None if base is None else base.case,
    )


def _inputs(data: Mapping[str, Any], path: Path) -> dict[str, Any]:
    """The Simulation keywords of the case file's tables of physics and maps: friction,
    Coriolis, wind, sources and rain, a slide, maxima (each checked now)."""
    src, out = str(path), {}
    if "friction" in data:
        out.update(_friction(data["friction"], path))
    if "coriolis" in data:
        out["coriolis"] = _coriolis(data["coriolis"], src)
    if "wind" in data:
        out["wind"] = _wind(data["wind"], path)
    if "sources" in data or "rain" in data:
        out["sources"] = _sources(data, path)
    if "slide" in data:
        out["slide"] = _slide(data["slide"], src)
    if "maxima" in data:
        out["maxima"] = _maxima(data["maxima"], src)
    return out


def _table(table: Mapping[str, Any], section: str, src: str, shown: str = "") -> None:
    """Every key of one table known to :data:`SCHEMA` (``section``) and of its type; errors
    name the table as ``shown`` (e.g. ``boundary.west`` for ``boundary.<tag>``)."""
    allowed = keys(section)
    for key, value in table.items():
        _check(key, value, allowed, src, section=shown or section)


def _friction(table: Mapping[str, Any], path: Path) -> dict[str, Any]:
    """The Simulation keywords ``friction`` and ``interfacial_friction`` of ``[friction]``;
    a coefficient is a number or a raster table (:func:`_raster`)."""
    src = str(path)
    _table(table, "friction", src)
    out: dict[str, Any] = {}
    if "law" in table or "coefficient" in table or "interfacial" not in table:
        missing = [k for k in ("law", "coefficient") if k not in table]
        if missing:
            raise ConfigError(f"{src}: missing key 'friction.{missing[0]}'")
        out["friction"] = (table["law"], _coefficient(table, "coefficient", path))
    if "interfacial" in table:
        out["interfacial_friction"] = _coefficient(table, "interfacial", path)
    return out


def _coefficient(table: Mapping[str, Any], key: str, path: Path) -> float | Callable:
    """``friction.<key>``: a number, or a raster sampled at the cell barycentres."""
    value = table[key]
    return _raster(f"friction.{key}", value, path) if isinstance(value, dict) else float(value)


@contextmanager
def _named(src: str):
    """A ConfigError raised inside, prefixed with the case file ``src`` (one line)."""
    try:
        yield
    except ConfigError as exc:
        raise ConfigError(f"{src}: {exc}") from None


def _coriolis(table: Mapping[str, Any], src: str):
    """``[coriolis]``: a :class:`~fvswe.forcing.Coriolis`, checked now."""
    from .forcing import Coriolis

    _table(table, "coriolis", src)
    with _named(src):
        return Coriolis(**table)


def _slid(slide, mesh, H) -> np.ndarray:
    """The bed ``H`` with ``slide`` at t = 0, at the cells of ``mesh`` (float64)."""
    from .slide import bed_at, slide_table

    H0 = np.broadcast_to(np.asarray(H, dtype=np.float64), (mesh.n_cells,))
    return bed_at(slide_table(slide, mesh.centroid, H0), 0.0, np.float64)


def _slide(table: Mapping[str, Any], src: str):
    """``[slide]``: a :class:`~fvswe.slide.Slide`, checked now."""
    from .slide import Slide

    _table(table, "slide", src)
    for key in ("thickness", "length", "width", "start"):
        if key not in table:
            raise ConfigError(f"{src}: missing key 'slide.{key}'")
    values = {k: tuple(v) if isinstance(v, list) else v for k, v in table.items()}
    with _named(src):
        slide = Slide(**values)
        slide.parameters()
    return slide


def _maxima(table: Mapping[str, Any], src: str):
    """``[maxima]``: a :class:`~fvswe.maxima.Maxima`, checked now."""
    from .maxima import Maxima

    _table(table, "maxima", src)
    with _named(src):
        return Maxima(**table)


def _wind(table: Mapping[str, Any], path: Path):
    """``[wind]``: a :class:`~fvswe.forcing.Wind` (a file relative to the case file),
    its table checked now."""
    from .forcing import Wind

    src = str(path)
    _table(table, "wind", src)
    values = dict(table)
    for key in ("speed", "direction", "u", "v", "times"):
        if isinstance(values.get(key), list):
            values[key] = _numbers(values[key], f"wind.{key}", src)
    if "file" in values:
        values["file"] = path.parent / values["file"]
    with _named(src):
        wind = Wind(**values)
        wind.table()
    return wind


def _sources(data: Mapping[str, Any], path: Path) -> list:
    """``[[sources]]`` and ``[[rain]]``: :class:`fvswe.sources.Source` and
    :class:`~fvswe.sources.Rain` (series as for the boundaries, :func:`_series`)."""
    from .sources import Rain, Source

    src, out = str(path), []
    for k, table in enumerate(data.get("sources", [])):
        _table(table, "sources", src)
        where = f"sources[{k}]"
        if "discharge" not in table:
            raise ConfigError(f"{src}: missing key '{where}.discharge'")
        lower = table.get("lower")
        out.append(Source(
            _series(table["discharge"], f"{where}.discharge", path), point=table.get("point"),
            polygon=table.get("polygon"), name=table.get("name", f"source {k + 1}"),
            lower=None if lower is None else _series(lower, f"{where}.lower", path),
        ))  # fmt: skip
    for k, table in enumerate(data.get("rain", [])):
        _table(table, "rain", src)
        where = f"rain[{k}]"
        if "rate" not in table:
            raise ConfigError(f"{src}: missing key '{where}.rate'")
        out.append(Rain(_series(table["rate"], f"{where}.rate", path),
                        polygon=table.get("polygon"), name=table.get("name", f"rain {k + 1}"),
                        field=_field(table.get("field", 1.0), f"{where}.field", path)))  # fmt: skip
    return out


def _field(value: Any, where: str, path: Path):
    """A number, an expression of x and y, or a raster table (:func:`_raster`)."""
    if isinstance(value, dict):
        return _raster(where, value, path)
    if isinstance(value, str):
        return lambda x, y: evaluate(value, {"x": x, "y": y}, f"{path}: {where}")
    return value


def _raster(where: str, table: Mapping[str, Any], path: Path) -> Callable:
    """A field from a raster file (fvswe/raster.py), read and checked now; ``where`` is the
    key it came from (``initial.<field>``, ``friction.coefficient``)."""
    from .raster import raster_field

    src = str(path)
    _table(table, "initial.<field>", src, shown=where)
    if "raster" not in table:
        raise ConfigError(f"{src}: missing key '{where}.raster'")
    method = table.get("method", "bilinear")
    return raster_field(path.parent / table["raster"], table.get("variable"), method)


def _condition(tag: str, value: Any, path: Path):
    """A boundary tag's condition: "wall", "open", "outflow", or a :class:`~fvswe.boundary.Level`,
    :class:`~fvswe.boundary.Discharge` (:class:`~fvswe.boundary.UnitDischarge`),
    :class:`~fvswe.boundary.Characteristic` or :class:`~fvswe.boundary.Periodic` from a table."""
    from .boundary import Characteristic, Discharge, Level, Periodic, UnitDischarge

    src, where = str(path), f"boundary.{tag}"
    if isinstance(value, str):
        return value
    if not isinstance(value, dict):
        raise ConfigError(f"{src}: {where!r} must be a string (wall, open, outflow) or a table")
    _table(value, "boundary.<tag>", src, shown=where)
    kind = value.get("kind", "level")
    allowed = BOUNDARY_KEYS.get(kind)
    if allowed is None:
        raise ConfigError(
            f"{src}: '{where}.kind' must be one of {', '.join(BOUNDARY_KEYS)}, got {kind!r}"
        )
    extra = sorted(set(value) - set(allowed) - {"kind", "every", "until"})
    if extra:
        raise ConfigError(f"{src}: '{where}.{extra[0]}' is not a key of a {kind} boundary")
    sampling = {k: float(value[k]) for k in ("every", "until") if k in value}
    if kind == "periodic":
        if not isinstance(value.get("partner"), str) or sampling:
            raise ConfigError(f"{src}: {where!r}: a periodic boundary takes one key, 'partner' "
                              "(a tag name)")  # fmt: skip
        return Periodic(value["partner"])
    if kind == "discharge":
        given = [k for k in ("Q", "q") if k in value]
        if len(given) != 1:
            raise ConfigError(f"{src}: {where!r} needs exactly one of 'Q' or 'q'")
        key = given[0]
        if f"{'q' if key == 'Q' else 'Q'}_lower" in value:
            raise ConfigError(f"{src}: {where!r}: give '{key}_lower' with '{key}'")
        lower = value.get(f"{key}_lower")
        series = _series(value[key], f"{where}.{key}", path)
        lower = None if lower is None else _series(lower, f"{where}.{key}_lower", path)
        cls = Discharge if key == "Q" else UnitDischarge
        return cls(series, lower, **sampling)
    given = [k for k in ("level", "level_file", "times") if k in value]
    if kind == "characteristic" and not given:
        return Characteristic(0.0, **sampling)
    if len(given) != 1 or ("levels" in value) != ("times" in value):
        raise ConfigError(
            f"{src}: {where!r} needs exactly one of 'level', 'level_file' or 'times' + 'levels'"
        )
    sampled = given[0] == "level" or "interface" in value
    if not sampled and ({"every", "until"} & set(value)):
        raise ConfigError(f"{src}: {where!r}: 'every' and 'until' are for a level expression")
    if given[0] == "level_file":
        eta = str(path.parent / value["level_file"])
    elif given[0] == "times":
        times = _numbers(value["times"], f"{where}.times", src)
        eta = (times, _numbers(value["levels"], f"{where}.levels", src))
    else:
        eta = _function_of_t(value["level"], f"{src}: {where}.level")
    if kind == "characteristic":
        return Characteristic(eta, **sampling)
    interface = value.get("interface")
    if interface is not None:
        interface = _series(interface, f"{where}.interface", path)
    return Level(eta, interface, **sampling)


#: The keys of each boundary kind (besides kind, every and until).
BOUNDARY_KEYS = {
    "level": ("level", "level_file", "times", "levels", "interface"),
    "discharge": ("Q", "q", "Q_lower", "q_lower"),
    "characteristic": ("level", "level_file", "times", "levels"),
    "periodic": ("partner",),
}


def _series(value: Any, where: str, path: Path):
    """A time series of a boundary (:data:`fvswe.boundary.Series`): a number or an expression
    of t, or a table ``{file = ...}`` (relative to the case file) or ``{times, values}``."""
    src = str(path)
    if not isinstance(value, dict):
        return _function_of_t(value, f"{src}: {where}")
    if set(value) == {"file"} and isinstance(value["file"], str):
        return str(path.parent / value["file"])
    if set(value) == {"times", "values"} and all(isinstance(value[k], list) for k in value):
        times = _numbers(value["times"], f"{where}.times", src)
        return times, _numbers(value["values"], f"{where}.values", src)
    raise ConfigError(
        f"{src}: {where!r} must be a number, an expression of t, {{file = ...}} or "
        f"{{times = [...], values = [...]}}"
    )


def _function_of_t(expression: int | float | str, where: str) -> Callable:
    """``eta(t)`` of a number or an expression of ``t``, vectorised over sample times."""

    def eta(t):
        t = np.asarray(t, dtype=np.float64)
        value = (
            expression if not isinstance(expression, str) else evaluate(expression, {"t": t}, where)
        )
        return np.broadcast_to(np.asarray(value, dtype=np.float64), t.shape)

    return eta


def _gauge(k: int, table: Mapping[str, Any], src: str):
    from .probes import Gauge

    _table(table, "gauges", src)
    for key in ("x", "y"):
        if key not in table:
            raise ConfigError(f"{src}: missing key 'gauges.{key}' in gauge {k + 1}")
    return Gauge(table.get("name", f"gauge{k + 1}"), float(table["x"]), float(table["y"]))


def _section(k: int, table: Mapping[str, Any], src: str):
    from .probes import Section

    _table(table, "sections", src)
    name = table.get("name", f"section{k + 1}")
    points = table.get("points")
    ok = isinstance(points, list) and len(points) >= 2
    ok = ok and all(
        isinstance(p, list) and len(p) == 2
        and all(isinstance(c, (int, float)) and not isinstance(c, bool) for c in p)
        for p in points
    )  # fmt: skip
    if not ok:
        raise ConfigError(
            f"{src}: 'sections.points' of section {name!r} must be two or more [x, y] pairs"
        )
    return Section(name, tuple((float(x), float(y)) for x, y in points))


def resolve(name_or_path: str) -> RunSpec:
    """A named case, or a case file when the argument ends in ``.toml`` or names a file."""
    if name_or_path.endswith(".toml") or Path(name_or_path).is_file():
        return load(name_or_path)
    return from_case(name_or_path)


# -- helpers ----------------------------------------------------------------------------------
def _check(key: str, value: Any, allowed: Mapping[str, Key], src: str, section: str = "") -> None:
    """One key: known to :data:`SCHEMA`, and of the right type."""
    dotted = f"{section}.{key}" if section else key
    if key not in allowed:
        names = ", ".join(allowed)
        raise ConfigError(f"{src}: unknown key {dotted!r} (allowed: {names})")
    kind = allowed[key].types
    boolean = bool in (kind if isinstance(kind, tuple) else (kind,))
    if isinstance(value, bool) != boolean or not isinstance(value, kind):
        raise ConfigError(f"{src}: {dotted!r} must be {allowed[key].type_names()}, got {value!r}")


def _numbers(values: list, key: str, src: str) -> list[float]:
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
        raise ConfigError(f"{src}: {key!r} must be a list of numbers")
    return [float(v) for v in values]


def _strings(values: list, key: str, src: str) -> list[str]:
    if not all(isinstance(v, str) for v in values):
        raise ConfigError(f"{src}: {key!r} must be a list of field names")
    return list(values)


def _check_initial_names(initial: Mapping[str, Any], layers: int, src: str) -> None:
    from .model import Model

    fields = Model(layers=layers).fields
    velocity = [k for k, (q, _) in VELOCITIES.items() if q in fields]
    allowed = ("H", *fields, *velocity)
    for key in initial:
        if key not in allowed:
            raise ConfigError(f"{src}: unknown key 'initial.{key}' (allowed: {', '.join(allowed)})")


def _mesh_spec(table: dict, path: Path) -> dict[str, Any]:
    """``{"file": path}``, ``{"family": name}`` or ``{"generator": name, **args}`` from ``[mesh]``.

    A file's path is taken relative to the case file.
    """
    src = str(path)
    given = [key for key in ("file", "family", "generator") if key in table]
    if len(given) != 1:
        raise ConfigError(f"{src}: [mesh] needs exactly one of 'file', 'family' or 'generator'")
    key = given[0]
    if key != "generator":
        options = {"bathymetry"} if key == "file" else set()
        extra = sorted(set(table) - {key} - options)
        if extra:
            takes = ", ".join(sorted(options)) or "no options"
            raise ConfigError(f"{src}: unknown key 'mesh.{extra[0]}' (mesh.{key} takes {takes})")
        for name in table:
            if not isinstance(table[name], str):
                raise ConfigError(f"{src}: 'mesh.{name}' must be a string")
        return {**table, key: str(path.parent / table[key]) if key == "file" else table[key]}
    spec = {**table, "source": src}
    _generator(spec)  # validates the name and the arguments now, before any run
    return spec


def _generator(spec: Mapping[str, Any]) -> tuple[Callable, dict[str, Any]]:
    """The generator function named by ``spec`` and its checked keyword arguments."""
    from .mesh import generate

    generators = {"square": generate.square, "structured_square": generate.structured_square,
                  "strip": generate.strip, "lonlat_band": generate.lonlat_band}  # fmt: skip
    src, name = spec["source"], spec["generator"]
    if name not in generators:
        raise ConfigError(
            f"{src}: unknown mesh generator {name!r} (choose from {', '.join(generators)})"
        )
    fn = generators[name]
    params = inspect.signature(fn).parameters
    kwargs = {k: v for k, v in spec.items() if k not in ("generator", "source")}
    for key, value in kwargs.items():
        if key not in params:
            raise ConfigError(
                f"{src}: unknown key 'mesh.{key}' for generator {name!r} "
                f"(allowed: {', '.join(params)})"
            )
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(f"{src}: 'mesh.{key}' must be a number, got {value!r}")
    return fn, kwargs


def _generated(spec: Mapping[str, Any], src: str):
    """Run the generator named by ``spec``."""
    fn, kwargs = _generator({"source": src, **spec})
    return fn(**kwargs)


_NODES = (ast.Expression, ast.BinOp, ast.UnaryOp, ast.Compare, ast.Call, ast.Name, ast.Load,
          ast.Constant, ast.operator, ast.unaryop, ast.cmpop)  # fmt: skip
#: Bounds of an expression: characters, syntax-tree nodes and nesting depth. With every
#: number evaluated as a float64 (so ``9**9**9**9`` is inf, not a bignum), the work is at
#: most MAX_NODES array operations over the cells or samples: bounded in time by construction.
MAX_CHARS, MAX_NODES, MAX_DEPTH = 2000, 400, 40


def _depth(node: ast.AST) -> int:
    """Nesting depth of a syntax tree, without recursion."""
    deepest, stack = 0, [(node, 1)]
    while stack:
        node, level = stack.pop()
        deepest = max(deepest, level)
        stack.extend((child, level + 1) for child in ast.iter_child_nodes(node))
    return deepest


def _parse(expression: str, where: str) -> ast.Expression:
    """The syntax tree of ``expression``, within :data:`MAX_CHARS`, :data:`MAX_NODES` and
    :data:`MAX_DEPTH`."""
    if len(expression) > MAX_CHARS:
        raise ConfigError(f"{where}: expression longer than {MAX_CHARS} characters")
    try:
        tree = ast.parse(expression.strip(), mode="eval")
    except SyntaxError as exc:
        raise ConfigError(
            f"{where}: invalid expression {_quoted(expression)} ({exc.msg})"
        ) from None
    except (RecursionError, MemoryError):
        raise ConfigError(f"{where}: expression nested too deeply") from None
    nodes = sum(1 for _ in ast.walk(tree))
    if nodes > MAX_NODES:
        raise ConfigError(f"{where}: expression too long ({nodes} terms, at most {MAX_NODES})")
    if _depth(tree) > MAX_DEPTH:
        raise ConfigError(f"{where}: expression nested too deeply (at most {MAX_DEPTH} levels)")
    return tree


def _quoted(expression: str, limit: int = 60) -> str:
    """The expression quoted for a one-line message, cut short when long."""
    return repr(expression if len(expression) <= limit else expression[:limit] + "...")


class _Float64Constants(ast.NodeTransformer):
    """Numbers become names bound to float64 values (so ``**`` overflows to inf, in constant
    time, instead of building a huge Python integer)."""

    def __init__(self, scope: dict[str, Any]) -> None:
        self.scope = scope

    def visit_Constant(self, node: ast.Constant) -> ast.Name:
        name = f"_number{len(self.scope)}"
        self.scope[name] = np.float64(node.value)
        return ast.copy_location(ast.Name(id=name, ctx=ast.Load()), node)


def evaluate(expression: str, names: Mapping[str, Any], where: str) -> np.ndarray:
    """Evaluate an arithmetic expression over per-cell (or per-sample) arrays, safely.

    Only numbers, arithmetic, comparisons, the given ``names``, :data:`CONSTANTS`
    and calls of :data:`FUNCTIONS` are allowed; anything else (attributes,
    subscripts, lambdas, strings...) is a :class:`ConfigError` naming ``where``,
    and so is an expression beyond the bounds of :func:`_parse` or a value that
    is not finite. Numbers are float64, never Python integers.
    """
    tree = _parse(expression, where)
    text = _quoted(expression)
    numbers = {k: np.float64(v) for k, v in names.items() if isinstance(v, (int, float))}
    scope = {**FUNCTIONS, **CONSTANTS, **names, **numbers}
    for node in ast.walk(tree):
        if not isinstance(node, _NODES):
            raise ConfigError(
                f"{where}: {type(node).__name__.lower()} not allowed in {text} "
                "(use numbers, + - * / ** %, comparisons and functions)"
            )
        if isinstance(node, ast.Constant):
            if isinstance(node.value, bool) or not isinstance(node.value, (int, float)):
                raise ConfigError(f"{where}: constant {node.value!r} not allowed in {text}")
            try:
                float(node.value)
            except OverflowError:
                raise ConfigError(f"{where}: number too large in {text}") from None
        if isinstance(node, ast.Name) and node.id not in scope:
            known = ", ".join([*names, *CONSTANTS])
            raise ConfigError(f"{where}: unknown name {node.id!r} (known here: {known})")
        if isinstance(node, ast.Call) and not (
            isinstance(node.func, ast.Name) and node.func.id in FUNCTIONS and not node.keywords
        ):
            raise ConfigError(
                f"{where}: only calls of {', '.join(FUNCTIONS)} (without keywords) are allowed"
            )
    tree = _Float64Constants(scope).visit(tree)
    try:
        with np.errstate(all="ignore"):
            value = eval(compile(tree, where, "eval"), {"__builtins__": {}}, scope)  # noqa: S307
    except Exception as exc:  # numpy shape or argument errors: one line for the user
        raise ConfigError(f"{where}: cannot evaluate {text} ({exc})") from None
    if callable(value):
        raise ConfigError(f"{where}: {text} is a function, not a value (call it)")
    value = np.asarray(value, dtype=np.float64)
    if not np.all(np.isfinite(value)):
        shape = np.broadcast_shapes(value.shape, *(np.shape(v) for v in names.values()))
        bad = int(np.flatnonzero(~np.isfinite(np.broadcast_to(value, shape)))[0])
        at = "in cell" if "x" in names else "at sample"
        raise ConfigError(f"{where}: {text} is not finite {at} {bad}")
    return value
