"""Point sources, sinks and rain: water added to or taken from cells (docs/SCHEMES.md §16).

:class:`Source` puts a discharge ``Q(t)`` (m^3/s; negative: a sink) into the cell holding a
point, or spreads it over the cells of a polygon by area (a river mouth, an outfall, a
pumping station); :class:`Rain` adds a depth rate ``rate(t)`` (m/s; negative: evaporation)
over a polygon or the whole mesh, times a spatial ``field`` (a number, a function of (x, y)
or :func:`fvswe.raster.raster_field`). Their series are those of the boundaries
(:func:`fvswe.boundary.series_table`): a number, a function of t, a two-column file or a
``(times, values)`` pair, piecewise linear.

The backends add, in every stage of a step, each cell's depth rate averaged exactly over
the step (the integral of the piecewise-linear series over [t, t + dt], divided by dt), so
that a step adds exactly the series' integral and the volume counters (``source_volume``,
``rain_volume``) are the analytic volumes. Added water comes at rest; a sink takes water at
the cell's velocity; a sink that asks for more than a cell holds leaves a negative depth,
which the clip of docs/SCHEMES.md §8 counts and which stops a run (``allow_mass_error`` lets
it go on). :func:`source_tables` lays the sources out for the backends.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np
from matplotlib.path import Path as PolygonPath

from . import exactsum
from .boundary import LEVEL_EVERY_S, LEVEL_UNTIL_S, Series, series_table
from .errors import ConfigError

#: Volume counters of the backends, per kind of source and layer (``rain_volume``: the upper
#: or only layer).
SOURCE_KEYS = ("source_volume", "source_volume2")
RAIN_KEY = "rain_volume"
#: Table kinds (the counter each table's volume goes to).
SOURCE, RAIN = 0, 1


@dataclass(frozen=True)
class Source:
    """A discharge ``Q(t)`` (m^3/s into the domain; negative: out) at ``point`` ``(x, y)``
    (into the cell holding it) or over the cells of ``polygon`` (``[(x, y), ...]``; spread
    by area). Two layers: ``Q`` goes to the upper layer, ``lower`` (a series) to the lower
    one. ``every`` and ``until`` say how a function is sampled. ``name`` labels it."""

    Q: Series
    point: tuple[float, float] | None = None
    polygon: Sequence[tuple[float, float]] | None = None
    lower: Series | None = None
    name: str = "source"
    every: float = LEVEL_EVERY_S
    until: float = LEVEL_UNTIL_S


@dataclass(frozen=True)
class Rain:
    """A depth rate ``rate(t)`` (m/s of water; negative: evaporation) on the upper (or only)
    layer of the cells of ``polygon`` (None: every cell), times ``field`` per cell (a number,
    a function of (x, y), e.g. :func:`fvswe.raster.raster_field`; >= 0)."""

    rate: Series
    polygon: Sequence[tuple[float, float]] | None = None
    field: float | Callable = 1.0
    name: str = "rain"
    every: float = LEVEL_EVERY_S
    until: float = LEVEL_UNTIL_S


@dataclass(frozen=True)
class SourceTables:
    """The sources of a run as the backends read them, in the layout's cell order.

    Cell i's entries are ``[start[i], start[i+1])``: each names a table and a weight, and
    adds ``weight * mean(table over the step)`` to the depth rate (m/s) of the table's layer.
    Table k is ``times/values[offsets[k]:offsets[k+1]]`` (as :class:`fvswe.boundary.
    LevelTables`), feeds layer ``layer[k]`` and the counter of ``kind[k]``, and adds
    ``volume[k]`` (m^2: its weights times the cells' areas, over the whole mesh) times its
    integral to that counter.
    """

    start: np.ndarray
    table: np.ndarray
    weight: np.ndarray
    offsets: np.ndarray
    times: np.ndarray
    values: np.ndarray
    layer: np.ndarray
    kind: np.ndarray
    volume: np.ndarray
    names: tuple[str, ...]

    @property
    def count(self) -> int:
        return len(self.names)

    def cells(self, cells: np.ndarray) -> SourceTables:
        """The entries of ``cells`` (a part's, in its order); the tables stay whole."""
        n = np.diff(self.start)[cells]
        start = np.concatenate(([0], np.cumsum(n))).astype(np.int32)
        take = np.concatenate([np.arange(self.start[c], self.start[c + 1]) for c in cells]
                              + [np.zeros(0, np.int64)]).astype(np.int64)  # fmt: skip
        return replace(self, start=start, table=self.table[take], weight=self.weight[take])


def _polygon_cells(mesh, polygon, where: str, cells: Cells) -> np.ndarray:
    vertices = np.asarray(polygon, dtype=np.float64)
    if vertices.ndim != 2 or vertices.shape[1] != 2 or len(vertices) < 3:
        raise ConfigError(f"{where}: a polygon needs at least three (x, y) vertices")
    centres = mesh.centroid[: cells.owned]
    inside = np.flatnonzero(PolygonPath(vertices).contains_points(centres))
    if not cells.count(inside.size):
        raise ConfigError(f"{where}: no cell of {mesh.source} has its centre inside the polygon")
    return inside


def _point_cell(mesh, point, where: str, cells: Cells) -> np.ndarray:
    from .probes import first_holders

    try:
        x, y = (float(v) for v in point)
    except (TypeError, ValueError):
        raise ConfigError(f"{where}: a point is (x, y), got {point!r}") from None
    (first,), (row,) = first_holders(mesh, [(x, y)], cells.owned, cells.ids, cells.comm)
    if first is None:
        raise ConfigError(f"{where}: ({x:g}, {y:g}) lies outside {mesh.source}")
    return np.array([row] if row >= 0 else [], dtype=np.int64)  # one process's first: its owner's


def _source_entries(mesh, source: Source, layers: int, where: str, at: Cells) -> list:
    """``(cells, weights, layer, kind, table, name)`` of each table of a Source."""
    if (source.point is None) == (source.polygon is None):
        raise ConfigError(f"{where}: give a point or a polygon")
    if source.point is not None:
        cells = _point_cell(mesh, source.point, where, at)
    else:
        cells = _polygon_cells(mesh, source.polygon, where, at)
    weights = np.full(cells.size, 1.0 / at.total(mesh.area[cells]))  # Q / area: m/s
    table = series_table(source.Q, source.every, source.until, where, "discharge")
    out = [(cells, weights, 0, SOURCE, table, source.name)]
    if source.lower is not None:
        if layers != 2:
            raise ConfigError(f"{where}: a lower-layer discharge needs a two-layer model")
        table = series_table(
            source.lower, source.every, source.until, f"{where} lower", "discharge"
        )
        out.append((cells, weights, 1, SOURCE, table, f"{source.name} lower"))
    return out


def _rain_entries(mesh, rain: Rain, where: str, at: Cells) -> list:
    cells = (
        np.arange(mesh.n_cells if at.owned is None else at.owned)
        if rain.polygon is None
        else _polygon_cells(mesh, rain.polygon, where, at)
    )
    field = rain.field
    xy = mesh.centroid[cells]
    values = field(xy[:, 0], xy[:, 1]) if callable(field) else field
    try:
        weights = np.broadcast_to(np.asarray(values, dtype=np.float64), cells.shape).copy()
    except (TypeError, ValueError):
        raise ConfigError(f"{where}: field: expected a number or f(x, y), got {field!r}") from None
    bad = np.flatnonzero(~(np.isfinite(weights) & (weights >= 0)))

    def check() -> None:
        if bad.size:
            cell = cells[bad[0]] if at.ids is None else at.ids[cells[bad[0]]]
            raise ConfigError(f"{where}: field is {float(weights[bad[0]])!r} in cell {cell}: "
                              "finite and >= 0")  # fmt: skip

    from .parallel import agreed  # (fvswe.parallel imports this module)

    agreed(at.comm, check)
    table = series_table(rain.rate, rain.every, rain.until, where, "rain")
    return [(cells, weights, 0, RAIN, table, rain.name)]


@dataclass(frozen=True)
class Cells:
    """Where the sources are laid out: the whole mesh (``comm`` None), or a rank's part (its
    first ``owned`` cells its own, ``ids`` their global numbers in the run's order), whose
    sums over cells are all-reduced exactly and whose point is the owner's of one process's
    first cell holding it (the least global id)."""

    comm: object = None
    owned: int | None = None
    ids: np.ndarray | None = None

    def total(self, values: np.ndarray) -> float:
        """``Σ values`` over all ranks' cells, exactly, rounded once (any order, any split)."""
        return exactsum.rounded(exactsum.over(exactsum.sums(values), self.comm))

    def count(self, n: int) -> int:
        """``n`` summed over the ranks."""
        return n if self.comm is None else self.comm.allreduce(n)


def source_tables(mesh, sources: Sequence[Source | Rain], layers: int,
                  cells: Cells = Cells()) -> SourceTables | None:  # fmt: skip
    """The :class:`SourceTables` of ``sources`` on ``mesh`` (cells in its order; ``cells``: a
    rank's part of it, the entries its owned cells'), or None."""
    entries = []
    for k, source in enumerate(sources or ()):
        where = f"sources[{k}] ({getattr(source, 'name', '?')})"
        if isinstance(source, Source):
            entries += _source_entries(mesh, source, layers, where, cells)
        elif isinstance(source, Rain):
            entries += _rain_entries(mesh, source, where, cells)
        else:
            raise ConfigError(f"{where}: expected Source(...) or Rain(...), got {source!r}")
    if not entries:
        return None
    return _tables(mesh, entries, cells)


def _tables(mesh, entries: list, cells: Cells) -> SourceTables:
    """Entries grouped by cell (in table order within a cell: the sums' fixed order)."""
    cell = np.concatenate([e[0] for e in entries])
    table = np.concatenate([np.full(e[0].size, k, np.int32) for k, e in enumerate(entries)])
    weight = np.concatenate([e[1] for e in entries])
    order = np.argsort(cell, kind="stable")
    start = np.searchsorted(cell[order], np.arange(mesh.n_cells + 1)).astype(np.int32)
    times = [e[4][0] for e in entries]
    offsets = np.concatenate(([0], np.cumsum([t.size for t in times]))).astype(np.int64)
    volume = np.array([cells.total(e[1] * mesh.area[e[0]]) for e in entries])
    return SourceTables(
        start=start, table=table[order], weight=weight[order], offsets=offsets,
        times=np.concatenate(times), values=np.concatenate([e[4][1] for e in entries]),
        layer=np.array([e[2] for e in entries], np.int32),
        kind=np.array([e[3] for e in entries], np.int32), volume=volume,
        names=tuple(e[5] for e in entries),
    )  # fmt: skip


def counter_keys(tables: SourceTables | None, layers: int) -> tuple[str, ...]:
    """The volume counters a run with these sources reports."""
    if tables is None:
        return ()
    keys = [SOURCE_KEYS[layer] for layer in range(layers) if
            np.any((tables.kind == SOURCE) & (tables.layer == layer))]  # fmt: skip
    if np.any(tables.kind == RAIN):
        keys.append(RAIN_KEY)
    return tuple(keys)


def added(counters, layers: int) -> list[float]:
    """Per layer, the volume (m^3) the sources and rain put in (counters of
    :func:`counter_keys`; 0 where absent)."""
    out = [float(counters.get(SOURCE_KEYS[layer], 0.0)) for layer in range(layers)]
    out[0] += float(counters.get(RAIN_KEY, 0.0))
    return out
