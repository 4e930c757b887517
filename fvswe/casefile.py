"""What one run is: a named case or a TOML case file, plus command-line overrides.

A case file (``fvswe run path/to/case.toml``) names every choice of a run::

    title = "internal circular dam break"   # optional
    case = "test1"        # optional: start from a named case, the file overrides it
    layers = 2
    g = 9.81
    r = 0.5
    scheme = "ir-roe"     # roe, ir-roe, pvm-ifcp (one layer: also hll)
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
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from .errors import ConfigError

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

#: Top-level keys of a case file, with the type each must have.
SETTINGS: dict[str, type | tuple[type, ...]] = {
    "layers": int,
    "g": (int, float),
    "r": (int, float),
    "eps_h": (int, float),
    "scheme": str,
    "order": str,
    "cfl": (int, float),
    "dtype": str,
    "backend": str,
    "dt_mode": str,
    "dt": (int, float),
    "threads": int,
}
TOP_KEYS = {"title": str, "case": str, "t_end": (int, float), **SETTINGS}
SECTIONS = ("mesh", "boundary", "initial", "output")
OUTPUT_KEYS = {"times": list, "every": (int, float), "png": list, "checkpoint_every": (int, float)}

#: Velocity keys of ``[initial]`` -> (momentum component, thickness) they define.
VELOCITIES = {
    "u1": ("q1x", "h1"), "v1": ("q1y", "h1"), "u2": ("q2x", "h2"), "v2": ("q2y", "h2"),
    "u": ("qx", "h"), "v": ("qy", "h"),
}  # fmt: skip

#: Defaults of a run that neither the case nor the file sets.
DEFAULTS: dict[str, Any] = {
    "layers": 2,
    "g": 9.81,
    "r": 0.5,
    "scheme": "ir-roe",
    "order": "none",
    "cfl": 0.9,
    "dtype": "float64",
    "backend": "auto",
    "dt_mode": "lagged",
}


@dataclass(frozen=True)
class RunSpec:
    """Everything one run needs except the mesh object, from a named case or a case file.

    ``settings`` holds the :class:`~fvswe.simulation.Simulation` keywords (layers,
    g, r, scheme, order, cfl, dtype, backend, dt_mode, dt, eps_h, threads);
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
    case: Any = field(default=None, repr=False)

    def with_overrides(self, **values: Any) -> RunSpec:
        """A copy with the given settings or fields replaced; ``None`` values are ignored."""
        values = {k: v for k, v in values.items() if v is not None}
        settings = {**self.settings, **{k: values.pop(k) for k in list(values) if k in SETTINGS}}
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
        return Simulation(mesh, H=H, initial=initial, boundary=self.boundary, **self.settings)

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
        **DEFAULTS,
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
    """Read a TOML case file; errors are one line naming the file and the key."""
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
        if key in SECTIONS:
            if not isinstance(value, dict):
                raise ConfigError(f"{src}: {key!r} must be a table ([{key}])")
        else:
            _check(key, value, TOP_KEYS, src)
    base = from_case(data["case"]) if "case" in data else None
    settings = dict(DEFAULTS if base is None else base.settings)
    settings.update({k: data[k] for k in SETTINGS if k in data})
    out = data.get("output", {})
    for key, value in out.items():
        _check(key, value, OUTPUT_KEYS, src, section="output")
    initial = dict(base.initial) if base is not None else {}
    for key, value in data.get("initial", {}).items():
        if not isinstance(value, (int, float, str)) or isinstance(value, bool):
            raise ConfigError(f"{src}: initial.{key} must be a number or an expression string")
        initial[key] = value
    _check_initial_names(initial, settings["layers"], src)
    boundary = data.get("boundary")
    if boundary is not None:
        for tag, kind in boundary.items():
            if not isinstance(kind, str):
                raise ConfigError(f"{src}: boundary.{tag} must be a string (wall or open)")
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
        case=None if base is None else base.case,
    )


def resolve(name_or_path: str) -> RunSpec:
    """A named case, or a case file when the argument ends in ``.toml`` or names a file."""
    if name_or_path.endswith(".toml") or Path(name_or_path).is_file():
        return load(name_or_path)
    return from_case(name_or_path)


# -- helpers ----------------------------------------------------------------------------------
def _check(key: str, value: Any, allowed: Mapping[str, Any], src: str, section: str = "") -> None:
    """One key: known, and of the right type."""
    dotted = f"{section}.{key}" if section else key
    if key not in allowed:
        raise ConfigError(f"{src}: unknown key {dotted!r} (allowed: {', '.join(allowed)})")
    kind = allowed[key]
    if isinstance(value, bool) or not isinstance(value, kind):
        names = " or ".join(t.__name__ for t in (kind if isinstance(kind, tuple) else (kind,)))
        raise ConfigError(f"{src}: {dotted!r} must be {names}, got {value!r}")


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
                  "strip": generate.strip}  # fmt: skip
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


def evaluate(expression: str, names: Mapping[str, Any], where: str) -> np.ndarray:
    """Evaluate an arithmetic expression over per-cell arrays, safely.

    Only numbers, arithmetic, comparisons, the given ``names``, :data:`CONSTANTS`
    and calls of :data:`FUNCTIONS` are allowed; anything else (attributes,
    subscripts, lambdas, strings...) is a :class:`ConfigError` naming ``where``.
    """
    try:
        tree = ast.parse(expression.strip(), mode="eval")
    except SyntaxError as exc:
        raise ConfigError(f"{where}: invalid expression {expression!r} ({exc.msg})") from None
    scope = {**FUNCTIONS, **CONSTANTS, **names}
    for node in ast.walk(tree):
        if not isinstance(node, _NODES):
            raise ConfigError(
                f"{where}: {type(node).__name__.lower()} not allowed in {expression!r} "
                "(use numbers, + - * / ** %, comparisons and functions)"
            )
        if isinstance(node, ast.Constant) and (
            isinstance(node.value, bool) or not isinstance(node.value, (int, float))
        ):
            raise ConfigError(f"{where}: constant {node.value!r} not allowed in {expression!r}")
        if isinstance(node, ast.Name) and node.id not in scope:
            known = ", ".join([*names, *CONSTANTS])
            raise ConfigError(f"{where}: unknown name {node.id!r} (known here: {known})")
        if isinstance(node, ast.Call) and not (
            isinstance(node.func, ast.Name) and node.func.id in FUNCTIONS and not node.keywords
        ):
            raise ConfigError(
                f"{where}: only calls of {', '.join(FUNCTIONS)} (without keywords) are allowed"
            )
    try:
        with np.errstate(all="ignore"):
            value = eval(compile(tree, where, "eval"), {"__builtins__": {}}, scope)  # noqa: S307
    except Exception as exc:  # numpy shape or argument errors: one line for the user
        raise ConfigError(f"{where}: cannot evaluate {expression!r} ({exc})") from None
    if callable(value):
        raise ConfigError(f"{where}: {expression!r} is a function, not a value (call it)")
    value = np.asarray(value, dtype=np.float64)
    if not np.all(np.isfinite(value)):
        cell = int(np.flatnonzero(~np.isfinite(np.broadcast_to(value, np.shape(names["x"]))))[0])
        raise ConfigError(f"{where}: {expression!r} is not finite in cell {cell}")
    return value
