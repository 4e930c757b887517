"""Boundary conditions by tag: which ghost state each boundary edge sees (docs/SCHEMES.md §7).

Conditions are ``"wall"``, ``"open"``, ``"outflow"`` (:class:`Outflow`: a free outflow
down the bed's slope), an imposed level :class:`Level` (or the
shorthand ``("level", eta)``), an imposed discharge :class:`Discharge` (m^3/s
over the tag) or :class:`UnitDischarge` (m^2/s per metre of boundary), or a
non-reflecting far field :class:`Characteristic`. Each takes time series: a
number, a function of time, a two-column ``t value`` text file or a
``(times, values)`` pair. The ghost states are those of docs/SCHEMES.md §7.4-§7.7.
:class:`Periodic` is no ghost: it joins two tags' edges into interior edges (§7.8).

Every series is handed to the backends as a piecewise-linear table, so the CPU
and the GPU evaluate the same values: a function (or a number) is sampled every
``every`` seconds up to ``until``; a file or a pair is used at its own samples.
Before the first and after the last sample the end values hold, and
:class:`~fvswe.simulation.Simulation` refuses to run past the last one.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from numbers import Real
from pathlib import Path

import numpy as np

from .errors import ConfigError
from .mesh.core import DEFAULT_TAG
from .registry import BOUNDARY_CODES

#: Edge condition codes stored in ``Layout.edge_bc`` (0 marks an interior edge): the boundary
#: registry's (:data:`fvswe.registry.BOUNDARIES`).
KINDS = dict(BOUNDARY_CODES)
INTERIOR = 0
WALL, OPEN, LEVEL = KINDS["wall"], KINDS["open"], KINDS["level"]
DISCHARGE, CHARACTERISTIC, OUTFLOW = KINDS["discharge"], KINDS["characteristic"], KINDS["outflow"]

#: Backend counters of the volume (m^3) in through the edges with tables, per layer.
INFLOW_KEYS = ("level_inflow", "level_inflow2")

#: Defaults for sampling a series given as a function: every 10 s for 30 days.
LEVEL_EVERY_S = 10.0
LEVEL_UNTIL_S = 30 * 86400.0

#: A time series: a number, a function of ``t``, a two-column file or ``(times, values)``.
Series = Callable[[float], float] | str | Path | tuple | float


def series_table(
    series, every: float, until: float, where: str, what: str = "level"
) -> tuple[np.ndarray, np.ndarray]:
    """The piecewise-linear table ``(times, values)`` of a series, checked; its errors call
    it a ``what`` series (``"level"``, ``"discharge"``, ``"rain"``).

    A function is sampled every ``every`` seconds on ``[0, until]``; a number is the table
    ``([0, until], [value, value])``.
    """
    if isinstance(series, Real) and not isinstance(series, bool):
        t, v = np.array([0.0, float(until)]), np.full(2, float(series))
    elif callable(series):
        if not (every > 0 and until > 0):
            raise ConfigError(f"{where}: every and until must be positive")
        n = int(np.ceil(until / every))
        t = np.arange(n + 1) * float(every)
        try:
            v = np.asarray(series(t), dtype=np.float64)
            if v.shape != t.shape:
                raise ValueError
        except (TypeError, ValueError):  # a function of a scalar only
            v = np.array([float(series(float(s))) for s in t])
    elif isinstance(series, (str, Path)):
        t, v = read_columns(Path(series), where, "series", ("t", "value"))
    else:
        try:
            t, v = (np.asarray(a, dtype=np.float64).reshape(-1) for a in series)
        except (TypeError, ValueError):
            raise ConfigError(
                f"{where}: expected a number, a function of t, a file or (times, values), "
                f"got {series!r}"
            ) from None
    check_series(t, (v,), where, f"{what} ")
    return t, v


@dataclass(frozen=True)
class Level:
    """An imposed water level ``eta(t)`` (m above the reference) on a boundary tag.

    ``eta``: a :data:`Series`. Two layers also need ``interface``, the interface
    level ``eta_2(t)`` (m, negative below the reference). ``every`` and ``until``
    say how a function is sampled. Ghost: docs/SCHEMES.md §7.4.
    """

    eta: Series
    interface: Series | None = None
    every: float = LEVEL_EVERY_S
    until: float = LEVEL_UNTIL_S

    code = LEVEL

    def table(self, where: str = "level") -> tuple[np.ndarray, np.ndarray]:
        """The piecewise-linear table ``(times, values)`` of ``eta``."""
        return series_table(self.eta, self.every, self.until, where)

    def tables(self, layers: int, length: float, where: str) -> list[tuple[str, tuple]]:
        """``(suffix, table)`` per table the backends read: eta, then the interface."""
        if layers == 1:
            if self.interface is not None:
                raise ConfigError(f"{where}: an interface level needs a two-layer model")
            return [("", self.table(where))]
        if self.interface is None:
            raise ConfigError(f"{where}: a two-layer level needs the interface level too")
        outer = self.table(where)
        inner = series_table(self.interface, self.every, self.until, f"{where} interface")
        times = np.union1d(outer[0], inner[0])  # both linear between these: checked at them
        eta, eta2 = np.interp(times, *outer), np.interp(times, *inner)
        above = np.flatnonzero(eta2 > eta)
        if above.size:
            k = above[0]
            raise ConfigError(
                f"{where}: the interface level {eta2[k]:g} m is above the surface level "
                f"{eta[k]:g} m at t = {times[k]:g} s (the upper layer would be negative)"
            )
        return [("", outer), (" interface", inner)]


@dataclass(frozen=True)
class Discharge:
    """An imposed discharge into the domain through a boundary tag: ``Q(t)`` m^3/s in total,
    spread uniformly over the tag's length (``q = Q / L``, docs/SCHEMES.md §7.5); negative
    ``Q`` flows out.

    Two layers: ``Q`` is the upper layer's, ``lower`` the lower layer's (0 if None). Both
    are :data:`Series`; ``every`` and ``until`` say how a function is sampled.
    """

    Q: Series
    lower: Series | None = None
    every: float = LEVEL_EVERY_S
    until: float = LEVEL_UNTIL_S

    code = DISCHARGE
    per_metre = False

    def tables(self, layers: int, length: float, where: str) -> list[tuple[str, tuple]]:
        """The tables of the unit discharges (m^2/s, into the domain), one per layer."""
        scale = 1.0 if self.per_metre else 1.0 / length
        out = []
        for suffix, series in (("", self.Q), (" lower", self.lower))[:layers]:
            t, v = series_table(0.0 if series is None else series, self.every, self.until,
                                f"{where}{suffix}", "discharge")  # fmt: skip
            out.append((suffix, (t, v * scale)))
        if layers == 1 and self.lower is not None:
            raise ConfigError(f"{where}: a lower-layer discharge needs a two-layer model")
        return out


@dataclass(frozen=True)
class UnitDischarge(Discharge):
    """As :class:`Discharge`, with ``Q`` and ``lower`` per metre of boundary (m^2/s)."""

    per_metre = True


@dataclass(frozen=True)
class Characteristic:
    """A non-reflecting open boundary: the ghost keeps the outgoing Riemann invariant and takes
    the incoming one from a far field at rest at level ``eta(t)`` (default 0), so that waves
    leave (docs/SCHEMES.md §7.6). Two layers: the external (barotropic) mode only."""

    eta: Series = 0.0
    every: float = LEVEL_EVERY_S
    until: float = LEVEL_UNTIL_S

    code = CHARACTERISTIC

    def tables(self, layers: int, length: float, where: str) -> list[tuple[str, tuple]]:
        """The far-field level's table."""
        return [("", series_table(self.eta, self.every, self.until, where))]


@dataclass(frozen=True)
class Outflow:
    """A free outflow (``"outflow"``): the ghost continues the cell's depths and velocities
    over a bed extrapolated along its slope, so that uniform flow down a slope leaves
    without backing up, where ``"open"`` copies the cell's bed and its last half cell loses
    the slope's forcing (docs/SCHEMES.md §7.7). Each edge's table is its bed drop."""

    code = OUTFLOW

    def edge_tables(self, drops: np.ndarray) -> list[tuple]:
        """One constant table per edge: its bed drop ``H_g - H_i`` (:func:`bed_drops`)."""
        return [(np.array([FOREVER_S]), np.array([d])) for d in drops]


@dataclass(frozen=True)
class Periodic:
    """A periodic boundary: this tag's edges are joined, edge by edge, to those of tag
    ``partner`` that they equal after one translation, as interior edges
    (:func:`fvswe.mesh.periodic.periodic`, docs/SCHEMES.md §7.8). The partner needs no
    condition of its own (or ``Periodic`` back)."""

    partner: str


def periodic_pairs(conditions: Mapping[str, object] | None) -> tuple[list, dict | None]:
    """``(pairs, rest)``: the tag pairs of the :class:`Periodic` conditions (a pair named
    from both ends once) and the other conditions, which the joined mesh's boundary takes."""
    if conditions is None:
        return [], None
    pairs: list[tuple[str, str]] = []
    for name, cond in conditions.items():
        if isinstance(cond, Periodic) and (cond.partner, name) not in pairs:
            pairs.append((name, cond.partner))
    rest = {k: v for k, v in conditions.items() if not isinstance(v, Periodic)}
    return pairs, rest


def refuse_joined_conditions(pairs: list, rest: Mapping[str, object] | None) -> None:
    """A one-line error where a tag of a periodic pair is also given another condition (it
    has no boundary edge left for it to act on)."""
    for a, b in pairs:
        for name, partner in ((a, b), (b, a)):
            if name in (rest or {}):
                raise ConfigError(f"boundary tag {name!r}: joined periodic with {partner!r}, it "
                                  "takes no condition of its own")  # fmt: skip


#: The time of a constant table's one sample: no run reaches it (outflow's bed drops).
FOREVER_S = float(np.finfo(np.float64).max)


def bed_drops(mesh, edges: np.ndarray, H: np.ndarray | None) -> np.ndarray:
    """Per boundary edge, ``H_g - H_i`` (H positive down; 0 without a bed): the bed at the
    inner cell's barycentre mirrored in the edge, extrapolated with the cell's bed gradient
    (least squares over the cells two neighbours away or nearer, in the order of their
    numbers: :func:`bed_drop`). (The order is fixed here: SciPy's sparse product leaves a
    row's indices in an order of its own, which the least squares' bits would follow.)"""
    out = np.zeros(edges.size)
    if H is None:
        return out
    adjacency = mesh.adjacency()
    ring2 = adjacency @ adjacency + adjacency
    for k, e in enumerate(edges):
        i = int(mesh.edge_cells[e, 0])
        around = np.sort(ring2.indices[ring2.indptr[i] : ring2.indptr[i + 1]])
        around = around[around != i]
        out[k] = bed_drop(mesh, e, mesh.centroid[around], H[around], H[i])
    return out


def bed_drop(mesh, e: int, xy: np.ndarray, H: np.ndarray, H_i: float) -> float:
    """Edge ``e``'s bed drop from the barycentres ``xy`` and beds ``H`` of the cells around
    its inner cell ``i`` (in the order of their numbers), ``H_i`` its bed:
    ``2 ((m - x_i).n) (grad H.n)``, ``m`` the edge's midpoint, the gradient by least squares
    (exact for a plane; minimum norm where the cells are collinear, 0 without any). One
    process's :func:`bed_drops` and a part's (:func:`fvswe.parallel.outflow_drops`) alike."""
    if not len(H):
        return 0.0
    centre = mesh.centroid[int(mesh.edge_cells[e, 0])]
    grad = np.linalg.lstsq(xy - centre, H - H_i, rcond=None)[0]
    n = mesh.edge_normal[e]
    mid = mesh.nodes[mesh.edge_nodes[e]].mean(axis=0)
    return 2.0 * float((mid - centre) @ n) * float(grad @ n)


def read_columns(path: Path, where: str, what: str, names: tuple[str, ...]) -> tuple:
    """The columns ``names`` of a ``what`` text file (whitespace or commas, ``#`` comments),
    as float64 arrays; a one-line ConfigError starting with ``where`` otherwise."""
    if not path.is_file():
        raise ConfigError(f"{where}: no such {what} file {path}")
    try:
        text = path.read_text(encoding="utf-8").replace(",", " ")
        data = np.loadtxt(text.splitlines(), dtype=np.float64, ndmin=2)
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise ConfigError(f"{where}: cannot read {what} file {path} ({exc})") from None
    if data.shape[1] != len(names):
        count = {2: "two", 3: "three"}.get(len(names), str(len(names)))
        raise ConfigError(f"{where}: {what} file {path} needs {count} columns ({', '.join(names)})")
    return tuple(data[:, k].copy() for k in range(len(names)))


def check_series(t: np.ndarray, values: tuple[np.ndarray, ...], where: str, what: str) -> None:
    """A piecewise-linear series' samples: times and each of ``values`` equal, non-empty
    arrays, all finite, times increasing; else a one-line ConfigError starting with
    ``where`` and naming the series as ``what`` (``"level "``, or ``""``)."""
    if t.size < 1 or any(v.shape != t.shape for v in values):
        raise ConfigError(f"{where}: {what}times and values must be equal, non-empty lists")
    finite = np.logical_and.reduce([np.isfinite(a) for a in (t, *values)])
    if not np.all(finite):
        bad = int(np.flatnonzero(~finite)[0])
        raise ConfigError(f"{where}: {what}sample {bad} is not finite")
    if np.any(np.diff(t) <= 0):
        bad = int(np.flatnonzero(np.diff(t) <= 0)[0]) + 1
        raise ConfigError(f"{where}: {what}times must increase (sample {bad}: t = {t[bad]:g})")


#: The conditions that read tables.
TABLE_CONDITIONS = (Level, Discharge, Characteristic, Outflow)


def outflow_tags(conditions: Mapping[str, object] | None) -> list[str]:
    """The tags of ``conditions`` (validated) that are free outflows."""
    return [name for name, c in (conditions or {}).items()
            if isinstance(_kind(name, c)[1], Outflow)]  # fmt: skip


def _kind(name: str, condition) -> tuple[int, Level | Discharge | Characteristic | Outflow | None]:
    """``(code, condition object or None)`` of one tag's condition."""
    if isinstance(condition, TABLE_CONDITIONS):
        return condition.code, condition
    if isinstance(condition, tuple) and len(condition) == 2 and condition[0] == "level":
        return LEVEL, Level(condition[1])
    if isinstance(condition, str) and condition in ("wall", "open"):
        return KINDS[condition], None
    if condition == "outflow":
        return OUTFLOW, Outflow()
    raise ConfigError(
        f"boundary tag {name!r}: unknown condition {condition!r} (choose from wall, open, "
        f"outflow, Level(eta), Discharge(Q), UnitDischarge(q), Characteristic(eta), "
        "Periodic(partner) or ('level', eta))"
    )


def edge_conditions(
    mesh, conditions: Mapping[str, object] | None = None, present: set[str] | None = None
) -> np.ndarray:
    """Per-edge condition codes from ``{tag name: condition}``.

    ``None`` puts walls on every boundary. Otherwise every boundary tag of the
    mesh needs a condition, and every condition needs a tag of the mesh that owns
    boundary edges, so a misspelt tag, or an interior physical group, is an error
    rather than a silent wall or a condition acting nowhere. ``present``: the tags that own
    boundary edges in the whole mesh where ``mesh`` is one part of it
    (:func:`fvswe.partfile.tags_present`); None: ``mesh``'s own.
    """
    codes = np.zeros(mesh.n_edges, dtype=np.int8)
    boundary = mesh.edge_cells[:, 1] < 0
    if conditions is None:
        codes[boundary] = WALL
        return codes
    if present is None:
        present = {name for name, tid in mesh.tags.items() if np.any(mesh.edge_tag == tid)}
    known = ", ".join(sorted(present)) or "none"
    for name, condition in conditions.items():
        if name not in mesh.tags:
            untagged = f"; {_untagged(mesh)}" if DEFAULT_TAG in present else ""
            raise ConfigError(
                f"boundary condition for tag {name!r}, which {mesh.source} lacks "
                f"(its boundary tags: {known}){untagged}"
            )
        if name not in present:  # an interior physical group: the condition would act nowhere
            raise ConfigError(
                f"boundary condition for tag {name!r}, which owns no boundary edge of "
                f"{mesh.source} (an interior line? its boundary tags: {known})"
            )
        codes[mesh.edge_tag == mesh.tags[name]] = _kind(name, condition)[0]
    missing = sorted(present - set(conditions))
    if missing == [DEFAULT_TAG]:
        raise ConfigError(f"{mesh.source}: {_untagged(mesh)} and has no condition (give "
                          f"'{DEFAULT_TAG}' one of {', '.join(KINDS)})")  # fmt: skip
    if missing:
        raise ConfigError(
            f"boundary tag {missing[0]!r} of {mesh.source} has no condition "
            f"(give one of {', '.join(KINDS)})"
        )
    return codes


def _untagged(mesh) -> str:
    """Where the boundary edges tagged :data:`~fvswe.mesh.core.DEFAULT_TAG` lie (those a mesh
    file names no tag for, such as a hole's rim, get it): their count and the first one."""
    edges = np.flatnonzero(mesh.edge_tag == mesh.tags[DEFAULT_TAG])
    if not edges.size:  # one part of a mesh (fvswe.partfile): the edges lie in other parts
        return f"boundary tag '{DEFAULT_TAG}' holds edges the mesh file leaves untagged"
    (x0, y0), (x1, y1) = mesh.nodes[mesh.edge_nodes[edges[0]], :2]
    return (f"boundary tag '{DEFAULT_TAG}' (given to the edges the mesh file leaves untagged, "
            f"such as a hole's rim) holds {edges.size} edge(s), the first from "
            f"({x0:g}, {y0:g}) to ({x1:g}, {y1:g})")  # fmt: skip


@dataclass(frozen=True)
class LevelTables:
    """All time series of a run's boundaries (levels, discharges, far fields), for the backends.

    ``edge_level[e]`` is the first table of edge ``e`` (-1: none); a condition with
    two tables (two-layer level: surface, interface; two-layer discharge: upper, lower
    layer) has them at ``k`` and ``k + 1``. Table ``k`` is
    ``times[offsets[k]:offsets[k+1]]`` / ``values[...]``; ``names[k]`` its tag (with
    " interface" or " lower" for a second table).
    """

    edge_level: np.ndarray  # (E,) int32
    offsets: np.ndarray  # (n_tables + 1,) int64
    times: np.ndarray  # (N,) float64
    values: np.ndarray  # (N,) float64
    names: tuple[str, ...]

    @property
    def count(self) -> int:
        return len(self.names)

    def at(self, t: float) -> np.ndarray:
        """The value at ``t`` of every table (linear between samples, end values held)."""
        o = self.offsets
        return np.array(
            [np.interp(t, self.times[o[k] : o[k + 1]], self.values[o[k] : o[k + 1]])
             for k in range(self.count)]
        )  # fmt: skip

    def end(self, edge_bc: np.ndarray) -> tuple[float, str] | None:
        """The earliest last sample over the tables and what it ends, e.g. "the discharge
        series of boundary tag 'west'" (``edge_bc``: the edges' codes; None without tables)."""
        if not self.count:
            return None
        ends = self.times[self.offsets[1:] - 1]
        k = int(np.argmin(ends))
        second = k not in self.edge_level  # a condition's second table
        code = int(edge_bc[np.flatnonzero(self.edge_level == k - second)[0]])
        kind = {
            DISCHARGE: ("discharge", "lower-layer discharge"),
            CHARACTERISTIC: ("far-field level", ""),
        }.get(code, ("level", "interface level"))
        tag = self.names[k - second]
        return float(ends[k]), f"the {kind[second]} series of boundary tag {tag!r}"


def tag_length(mesh, name: str) -> float:
    """The length of boundary tag ``name``: its edges' lengths summed in edge order."""
    return float(np.sum(mesh.edge_length[mesh.edge_tag == mesh.tags[name]]))


def level_tables(
    mesh,
    conditions: Mapping[str, object] | None = None,
    layers: int = 1,
    H: np.ndarray | None = None,
    lengths: Mapping[str, float] | None = None,
    outflow: Mapping[str, tuple] | None = None,
    edge_ids: np.ndarray | None = None,
) -> LevelTables:
    """The tables of ``conditions`` (validated as by :func:`edge_conditions`) for a model of
    ``layers`` layers; a :class:`Discharge` is divided by its tag's length here, an
    :class:`Outflow` has one table per edge, from the bed ``H`` per cell. Where ``mesh`` is
    one part of the whole: ``lengths``, each tag's length in the whole mesh (a partition
    manifest's ``tag_length``, summed as here); ``outflow``, each outflow tag's ``(edges,
    drops)`` over the whole mesh in the order of the edges' numbers
    (:func:`fvswe.parallel.outflow_drops`), and ``edge_ids`` the part's edges' numbers: the
    tables are the whole mesh's on every rank. None: ``mesh``'s own."""
    edge_level = np.full(mesh.n_edges, -1, dtype=np.int32)
    names, times, values = [], [], []
    for name, condition in (conditions or {}).items():
        code, cond = _kind(name, condition)
        if cond is None or name not in mesh.tags:
            continue
        edges = mesh.edge_tag == mesh.tags[name]
        if isinstance(cond, Outflow):
            where = np.flatnonzero(edges)
            ids, drops = (where, bed_drops(mesh, where, H)) if outflow is None else outflow[name]
            mine = where if edge_ids is None else edge_ids[where]
            edge_level[where] = len(names) + np.searchsorted(ids, mine)
            tables = [(f" edge {e}", table) for e, table in
                      zip(ids, cond.edge_tables(drops), strict=True)]  # fmt: skip
        else:
            length = tag_length(mesh, name) if lengths is None else lengths[name]
            tables = cond.tables(layers, length, f"boundary tag {name!r}")
            edge_level[edges] = len(names)
        for suffix, (t, v) in tables:
            names.append(name + suffix)
            times.append(t)
            values.append(v)
    offsets = np.concatenate(([0], np.cumsum([t.size for t in times]))).astype(np.int64)
    if not names:
        times, values = [np.zeros(0)], [np.zeros(0)]
    return LevelTables(
        edge_level, offsets, np.concatenate(times), np.concatenate(values), tuple(names)
    )


def inflows(counters: Mapping[str, float], layers: int) -> list[float]:
    """Per layer, the volume (m^3) that came in through the boundaries with tables
    (counters :data:`INFLOW_KEYS`; 0 where absent)."""
    return [float(counters.get(k, 0.0)) for k in INFLOW_KEYS[:layers]]
