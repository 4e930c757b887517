"""Gauges (time series at points) and cross-sections (discharge per layer through a line).

A :class:`Gauge` samples every output field (:func:`fvswe.output.output_fields`)
in the cell that contains its point. A :class:`Section` is a polyline across
the mesh; its discharge is the mass flux through the mesh edges it cuts:

The polyline cuts every pair of neighbouring cells whose barycentres lie on
opposite sides of it. Removing those adjacencies must split the mesh into
exactly two parts, the part to the right of the line (walking from its first
point to its last) and the part to the left; the section is the set of mesh
edges between them (on a periodic mesh, with its seams opened and each joined cell seen
beside its partner: :func:`split`). The finite-volume update is conservative in every layer's
mass (docs/SCHEMES.md §2.1-2.2: the mass rows of ``F-_ij + F+_ij`` are
``(q_j - q_i)·n``, so edge ``ij`` moves ``dt |Γ_ij| (q_i·n + F-_ij,h)`` from
``i`` to ``j``; docs/theory.md). The CPU and GPU backends (on MPI ranks too) count
that volume for every cut edge at every stage, as the update used it, exactly as
they count the boundary inflow (:meth:`fvswe.backends.cpu.CpuBackend.count_edges`;
the GPU's ``count_edges`` kernel, bitwise the CPU's in float64); the section's
volume, positive to the right, is their signed sum, wherever the section lies.
A backend that counts no edges (the implicit method's)
take the route that needs no edge fluxes: a layer's volume in a region changes
only by the mass fluxes through the region's boundary edges, and a wall edge
carries none, so when one part is bounded by walls and the section alone, the
volume that has crossed is the change of that part's volume (with the sign of
the side), to round-off; a section both of whose parts touch an open or level
boundary is refused there.

:class:`Probes` samples both, at any times the caller chooses (at output
times, or every ``k`` steps through ``Simulation.run(..., check_every=k,
callback=probes.sample)``), on one process or MPI ranks, also ranks holding their parts
alone (``fvswe run --parts``: each finds its gauges' cells and the cut edges among its owned
ones, and the few ids and values are gathered; one process's bits, docs/PARALLEL.md), and
writes ``gauges.nc``/``.csv`` and
``sections.nc``/``.csv`` (CF NetCDF, ``featureType = "timeSeries"``) and a
PNG of both.
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from .boundary import WALL
from .errors import ConfigError
from .output import FIELD_NAMES, atomic_write, output_fields, people_fields


@dataclass(frozen=True)
class Gauge:
    """A point ``(x, y)`` whose cell is sampled; ``name`` labels its series."""

    name: str
    x: float
    y: float


@dataclass(frozen=True)
class Section:
    """A polyline ``points`` (at least two ``(x, y)``) across the mesh; discharge is positive
    towards the right of the line, walking from its first point to its last."""

    name: str
    points: tuple[tuple[float, float], ...]


# -- geometry ---------------------------------------------------------------------------------
def locate(mesh, x: float, y: float) -> int | None:
    """The (first) cell of ``mesh`` that contains ``(x, y)``, edges included, or None."""
    inside = holding(mesh, x, y)
    return int(inside[0]) if inside.size else None


def holding(mesh, x: float, y: float, n: int | None = None) -> np.ndarray:
    """The cells of ``mesh`` (its first ``n``: a part's owned ones) that contain ``(x, y)``,
    edges included, in order.

    Cells are convex and counter-clockwise: a point is inside when it lies left of
    (or on) every side.
    """
    nodes = mesh.nodes[mesh.cells[:n]]  # (n, k, 2)
    side = np.roll(nodes, -1, axis=1) - nodes
    rel = np.array([x, y]) - nodes
    cross = side[..., 0] * rel[..., 1] - side[..., 1] * rel[..., 0]
    scale = np.abs(side).max(axis=(1, 2)) ** 2
    return np.flatnonzero(np.all(cross >= -1e-12 * scale[:, None], axis=1))


def first_holders(mesh, points, n: int | None = None, ids: np.ndarray | None = None,
                  comm=None) -> tuple[list[int | None], np.ndarray]:  # fmt: skip
    """For each ``(x, y)`` of ``points``, one process's :func:`locate`: the first cell in the
    run's order holding it (None: none does), and its row among this rank's first ``n``
    cells (-1: none, or another rank's). On ranks holding their parts alone (``ids``: the
    global numbers of this rank's cells, its first ``n`` owned; ``comm`` the ranks), the
    least global id over the ranks' owned cells holding it, its owner's row. Collective
    where ``comm`` is given."""
    rows = np.full(len(points), -1, dtype=np.int64)
    mine: list[int | None] = []
    for j, (x, y) in enumerate(points):
        inside = holding(mesh, x, y, n)
        number = inside if ids is None else ids[inside]
        if inside.size:
            rows[j] = inside[np.argmin(number)]
        mine.append(int(number.min()) if inside.size else None)
    every = [mine] if comm is None else comm.allgather(mine)
    first = [min((f[j] for f in every if f[j] is not None), default=None)
             for j in range(len(points))]  # fmt: skip
    for j, row in enumerate(rows):
        if row >= 0 and (row if ids is None else ids[row]) != first[j]:
            rows[j] = -1  # another rank's cell, earlier in the run's order, holds it too
    return first, rows


def _crossings(a: np.ndarray, b: np.ndarray, p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Whether segments ``a[n]-b[n]`` properly cross segment ``p-q`` (an endpoint on the line
    counts as the side its sign gives, so a barycentre exactly on the line is on its left)."""
    d = q - p

    def side(z):
        return d[0] * (z[:, 1] - p[1]) - d[1] * (z[:, 0] - p[0]) >= 0  # left or on the line

    e = b - a
    sp_ = e[:, 0] * (p[1] - a[:, 1]) - e[:, 1] * (p[0] - a[:, 0])
    sq_ = e[:, 0] * (q[1] - a[:, 1]) - e[:, 1] * (q[0] - a[:, 0])
    return (side(a) != side(b)) & ((sp_ > 0) != (sq_ > 0))


def split(mesh, section: Section) -> tuple[np.ndarray, np.ndarray]:
    """``(right, cut)``: a boolean per cell, True right of the section, and the indices of the
    interior edges the section cuts. A one-line error unless the cut splits the mesh in two.

    On a periodic mesh (``mesh.edge_shift``, docs/SCHEMES.md §7.8) each side of a joined edge
    sees the other at its image, moved by the translation; a section cutting a joined edge
    (crossing a seam) is refused, and the mesh is split with its seams opened: the section
    must then split the opened mesh in two and meet each seam whole (every joined edge of a
    pair across the section, or none), so it runs from wall to wall or once around a period."""
    interior = np.flatnonzero(mesh.edge_cells[:, 1] >= 0)
    ci, cj = mesh.edge_cells[interior, 0], mesh.edge_cells[interior, 1]
    cut, j_right, joined, shift = _cut_pairs(mesh, section, interior)
    if not cut.any():
        raise ConfigError(f"section {section.name!r}: the line crosses no pair of cells")
    keep = ~cut & ~joined  # the seams opened
    count, label = _components(mesh.n_cells, ci[keep], cj[keep])
    _in_two(section, count)
    right_label = np.where(j_right, label[cj], label[ci])[cut]
    _once(section, right_label, np.any(label[ci[cut]] == label[cj[cut]]))
    _whole_seams(section, _midpoints(mesh, interior[joined]),
                 label[ci[joined]] != label[cj[joined]], shift[joined])  # fmt: skip
    return label == right_label[0], interior[cut]


def _components(n: int, ci: np.ndarray, cj: np.ndarray) -> tuple[int, np.ndarray]:
    """``(count, label)`` of the graph of ``n`` nodes joined by the pairs ``ci``-``cj``."""
    graph = sp.coo_matrix((np.ones(ci.size), (ci, cj)), shape=(n, n))
    return connected_components(graph, directed=False)


def _in_two(section: Section, count: int) -> None:
    """A one-line error unless the cut left ``count`` == 2 connected parts."""
    if count != 2:
        raise ConfigError(
            f"section {section.name!r}: the line must cross the mesh from boundary to boundary, "
            f"splitting it in two (it leaves {count} connected part(s))"
        )


def _once(section: Section, right: np.ndarray, same: bool) -> None:
    """A one-line error unless every cut edge has the same part on the line's right
    (``right``, its labels) and no cut edge joins a part to itself (``same``)."""
    if np.any(right != right[0]) or same:
        raise ConfigError(f"section {section.name!r}: the line crosses the mesh more than once")


def _midpoints(mesh, edges: np.ndarray) -> np.ndarray:
    """The midpoints of ``edges``: the means of their two nodes."""
    return mesh.nodes[mesh.edge_nodes[edges]].mean(axis=1)


def _cut_pairs(mesh, section: Section, interior: np.ndarray):
    """``(cut, j_right, joined, shift)`` of the ``interior`` edges of ``mesh``: whether the
    section cuts the pair of cells of each (its seams opened), whether the second cell lies
    right of the line, whether the edge joins a periodic pair, and the pair's translation;
    a one-line error where the points are not a polyline or the line crosses a seam."""
    pts = np.asarray(section.points, dtype=np.float64)
    if pts.ndim != 2 or pts.shape[1] != 2 or len(pts) < 2 or not np.all(np.isfinite(pts)):
        raise ConfigError(f"section {section.name!r}: needs two or more finite (x, y) points")
    ci, cj = mesh.edge_cells[interior, 0], mesh.edge_cells[interior, 1]
    a, b = mesh.centroid[ci], mesh.centroid[cj]
    shift = np.zeros_like(a) if mesh.edge_shift is None else mesh.edge_shift[interior]
    joined = np.any(shift != 0.0, axis=1)
    cut, j_right = _cut(pts, a, b - shift)  # j seen from i
    seam = joined & (cut | _cut(pts, a + shift, b)[0])  # or i seen from j
    if seam.any():  # the seam's place on the side the line crossed it
        k = np.argmax(seam)
        x, y = mesh.nodes[mesh.edge_nodes[interior[k]]].mean(axis=0) + (0 if cut[k] else shift[k])
        raise ConfigError(f"section {section.name!r}: crosses a periodic seam at "
                          f"({x:.6g}, {y:.6g}); draw it off the seams")  # fmt: skip
    return cut, j_right, joined, shift


def _whole_seams(section: Section, mids: np.ndarray, across: np.ndarray, shift) -> None:
    """A one-line error where some of a periodic pair's joined edges (midpoints ``mids``, in
    the edges' order; the pair's translation ``shift``) join the section's two sides
    (``across``) and others do not: the section ends on that seam, and the flow passes around
    its end."""
    _, pair = np.unique(shift, axis=0, return_inverse=True)
    for p in np.unique(pair):
        mine = across[pair.ravel() == p]
        if mine.any() and not mine.all():
            x, y = mids[pair.ravel() == p][np.argmax(mine)]
            raise ConfigError(f"section {section.name!r}: ends on a periodic seam near "
                              f"({x:.6g}, {y:.6g}), where the flow passes around it; run it "
                              "from wall to wall or once around the period")  # fmt: skip


def _cut(pts: np.ndarray, a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(cut, j_right)`` per segment ``a[n]-b[n]``: whether the polyline ``pts`` cuts it (at
    its first crossing), and whether ``b[n]`` lies right of the line there."""
    cut = np.zeros(len(a), dtype=bool)
    j_right = np.zeros(len(a), dtype=bool)
    for p, q in zip(pts[:-1], pts[1:], strict=True):
        hit = _crossings(a, b, p, q) & ~cut
        d = q - p
        j_right[hit] = (d[0] * (b[hit, 1] - p[1]) - d[1] * (b[hit, 0] - p[0])) < 0
        cut |= hit
    return cut, j_right


def _closed(mesh, edge_bc: np.ndarray, part: np.ndarray) -> bool:
    """Whether every boundary edge of the cells in ``part`` is a wall."""
    boundary = mesh.edge_cells[:, 1] < 0
    mine = boundary & part[mesh.edge_cells[:, 0]]
    return bool(np.all(edge_bc[mine] == WALL))


# -- ranks holding their parts alone ----------------------------------------------------------
def _part_gauges(sim, gauges: Sequence[Gauge]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """On ranks holding their parts alone (``sim.part``): ``(cells, original, rows)``, each
    gauge's cell as one process's :func:`locate` finds it (the first in the run's order that
    contains the point: the least global id over the ranks' owned cells), its number in the
    original order, and its row among this rank's owned cells (-1: another rank's). Each
    rank searches its owned cells; the few ids are gathered. Collective."""
    from .parallel import agreed

    mesh, part, comm = sim.mesh, sim.part.part, sim.comm
    agreed(comm, lambda: [_finite(g) for g in gauges])
    cells, rows = first_holders(mesh, [(g.x, g.y) for g in gauges], part.n_owned, part.cells,
                                comm)  # fmt: skip
    for g, cell in zip(gauges, cells, strict=True):
        if cell is None:
            raise ConfigError(f"gauge {g.name!r}: ({g.x:g}, {g.y:g}) lies outside "
                              f"{sim.part.manifest['source']}")  # fmt: skip
    mine = {j: int(mesh.original_index[row]) for j, row in enumerate(rows) if row >= 0}
    every = {j: n for found in comm.allgather(mine) for j, n in found.items()}
    original = [every[j] for j in range(len(gauges))]
    return np.array(cells, dtype=np.int64), np.array(original, dtype=np.int64), rows


def _part_cuts(sim, sections: Sequence[Section]) -> list[tuple[np.ndarray, np.ndarray]]:
    """On ranks holding their parts alone: each section's ``(cut, sign)`` as one process's
    :func:`split` gives them: the global interior edges the line cuts, in order, and +1 where
    an edge's normal points to the right of the line. Each rank cuts its edges (the
    centroids of its halo cells are in its part), the few owned cut edges are gathered, and
    :func:`split`'s checks are made over the ranks (:func:`_part_split`), section by section
    as :func:`split` makes them. Collective."""
    from .parallel import agreed

    mesh, part, comm = sim.mesh, sim.part.part, sim.comm
    interior = np.flatnonzero(mesh.edge_cells[:, 1] >= 0)  # every edge with an owned cell
    own = interior < part.n_owned_edges
    found = []
    for s in sections:
        pairs = agreed(comm, lambda s=s: _cut_pairs(mesh, s, interior))
        cut, j_right = pairs[0] & own, pairs[1]
        every = comm.allgather((part.edges[interior[cut]], np.where(j_right[cut], 1.0, -1.0)))
        edges = np.concatenate([e for e, _ in every]).astype(np.int64)
        if not edges.size:
            raise ConfigError(f"section {s.name!r}: the line crosses no pair of cells")
        _part_split(sim, s, interior, pairs)
        order = np.argsort(edges, kind="stable")
        found.append((edges[order], np.concatenate([g for _, g in every])[order]))
    return found


def _part_split(sim, section: Section, interior: np.ndarray, pairs: tuple) -> None:
    """:func:`split`'s checks (the line splits the mesh in two, once, and meets each periodic
    seam whole) over the ranks holding their parts alone, the same one-line errors on every
    rank; ``pairs``: :func:`_cut_pairs` of the rank's ``interior`` edges (those with an
    owned cell). Each rank labels the connected parts of its cells (the cut edges and the
    seams left out) by their least global id; the labels of its border and halo cells, where
    parts meet, are gathered, and every rank joins the ranks' parts alike (connected
    components of the few labels and cells). Collective."""
    mesh, part, comm = sim.mesh, sim.part.part, sim.comm
    cut, j_right, joined, shift = pairs
    ci, cj = mesh.edge_cells[interior, 0], mesh.edge_cells[interior, 1]
    keep = ~cut & ~joined
    gid = part.cells.astype(np.int64)
    _, local = _components(gid.size, ci[keep], cj[keep])
    least = np.full(local.max() + 1, gid.max() + 1)
    np.minimum.at(least, local, gid)
    meet = np.arange(part.n_interior, gid.size)  # border and halo cells
    links = np.concatenate(([least[local[meet]], gid[meet]], [least, least]), axis=1)
    links = np.concatenate(comm.allgather(links), axis=1)
    nodes, at = np.unique(links.ravel(), return_inverse=True)
    count, label = _components(nodes.size, *at.reshape(links.shape))
    _in_two(section, count)
    g = label[np.searchsorted(nodes, least)][local]  # each local cell's part of the mesh
    own = interior < part.n_owned_edges
    mine = (np.unique(np.where(j_right, g[cj], g[ci])[cut & own]),
            bool(np.any(g[ci[cut & own]] == g[cj[cut & own]])))  # fmt: skip
    every = comm.allgather(mine)
    right = np.unique(np.concatenate([r for r, _ in every]))
    _once(section, right, any(same for _, same in every))
    seams = joined & own
    found = comm.allgather((part.edges[interior[seams]], _midpoints(mesh, interior[seams]),
                            g[ci[seams]] != g[cj[seams]], shift[seams]))  # fmt: skip
    edges, mids, across, shifts = (np.concatenate([f[k] for f in found]) for k in range(4))
    order = np.argsort(edges, kind="stable")  # one process's order of the joined edges
    _whole_seams(section, mids[order], across[order], shifts[order])


def _finite(gauge: Gauge) -> None:
    if not (math.isfinite(gauge.x) and math.isfinite(gauge.y)):
        raise ConfigError(f"gauge {gauge.name!r}: coordinates must be finite numbers")


# -- sampling ---------------------------------------------------------------------------------
def read_gauges(path: str | Path) -> list[Gauge]:
    """Gauges from a CSV file of ``name,x,y`` lines (``#`` comments and a header allowed)."""
    src = str(path)
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"--gauges: cannot read {src} ({exc})") from None
    gauges = []
    for number, line in enumerate(lines, 1):
        fields = [f.strip() for f in line.split("#")[0].split(",")]
        if fields == [""] or (number == 1 and fields[1:] == ["x", "y"]):
            continue
        try:
            name, x, y = fields
            gauges.append(Gauge(name, float(x), float(y)))
        except ValueError:
            raise ConfigError(f"--gauges: {src} line {number}: expected name,x,y") from None
    if not gauges:
        raise ConfigError(f"--gauges: {src} lists no gauges")
    return gauges


def sample_times(every: float, t_end: float) -> list[float]:
    """``every, 2 every, ...`` up to ``t_end``."""
    return [k * every for k in range(1, int(t_end / every) + 1)]


def memory_needed(samples: float, gauges: int, sections: int, layers: int) -> float:
    """Bytes that ``samples`` samples of :class:`Probes` take at their peak (held through the
    run, then as the CSV rows), roughly: measured with tracemalloc on 20 000 samples of
    1-10 gauges or sections, one and two layers, plus a quarter."""
    fields = 9 if layers == 2 else 5
    gauge = (150 * fields if gauges else 0) + gauges * (550 + 125 * fields)
    return samples * (400 + gauge + sections * (320 + 260 * layers))


def available_memory() -> int | None:
    """Bytes of memory available to a new allocation (Linux's MemAvailable; None: unknown)."""
    try:
        with open("/proc/meminfo") as f:
            kib = next(int(line.split()[1]) for line in f if line.startswith("MemAvailable:"))
    except (OSError, StopIteration, ValueError, IndexError):
        return None
    return 1024 * kib


def netcdf_available() -> bool:
    """Whether the optional netCDF4 package is installed (``fvswe[netcdf]``)."""
    import importlib.util

    return importlib.util.find_spec("netCDF4") is not None


class Probes:
    """Gauges and sections of one simulation, sampled now and by every :meth:`sample`.

    ``gauge_values[name]`` is ``(samples, gauges)`` per output field; ``volume`` is
    ``(samples, sections, layers)``, the volume that has crossed each section since the
    first sample (m³, positive to the right); ``discharge`` is its mean rate over each
    interval between samples (m³/s; the first row is 0).
    """

    def __init__(
        self,
        sim,
        gauges: Sequence[Gauge] = (),
        sections: Sequence[Section] = (),
        *,
        resume: Mapping[str, Any] | None = None,
    ):
        """``resume``: the checkpoint (:func:`fvswe.output.load_checkpoint`) ``sim`` was restored
        from; when its run had these probes (:meth:`state`), the sections go on counting from
        its volumes, and :meth:`keep_earlier` takes the records before it from the files."""
        self.sim = sim
        self.gauges, self.sections = tuple(gauges), tuple(sections)
        mesh = sim.mesh  # the backend's (possibly renumbered) cells, as get_state()
        for kind, items in (("gauge", self.gauges), ("section", self.sections)):
            names = [g.name for g in items]
            if len(set(names)) != len(names):
                raise ConfigError(f"{kind}s: two named {_duplicate(names)!r}")
        #: The gauges' cells (the run's numbering, as ``sim.mesh`` on one process) and their
        #: numbers in the mesh's original order (that of ``sim.fields()``).
        if sim.part is None:
            self.cells = np.array([self._cell(mesh, g) for g in self.gauges], dtype=np.int64)
            self.original_cells = mesh.original_index[self.cells]
        else:  # ranks holding their parts alone: each gauge's row on the rank that owns it
            self.cells, self.original_cells, self._rows = _part_gauges(sim, self.gauges)
        #: The backend counts the volume through each cut edge (the CPU's and the GPU's, on
        #: ranks too); else a section's volume is that of a side closed by walls.
        self.counted = bool(self.sections) and getattr(sim.backend, "counts_edges", False)
        self._parts, self._signs, self.cut_edges, self._right = [], [], [], []
        self._cut_sections(sim, mesh)
        saved = None if resume is None else self._saved(resume)
        if self.counted:  # where this object's edges start among the backend's counted ones
            edges = np.concatenate(self.cut_edges)
            counted = None if saved is None else saved["probe_edges"]
            self._first = sim.backend.count_edges(edges, counted)
        self.times: list[float] = []
        self.gauge_values: dict[str, list[np.ndarray]] = {}
        #: Per sample, the sections' volumes less those of the run's first sample (``_base``).
        self._volumes: list[np.ndarray] = []
        self._base = None if saved is None else saved.get("probe_base")
        self.resumed = saved is not None
        if not self.resumed:
            self.sample()  # the start: sections count their volume from here

    def _cut_sections(self, sim, mesh) -> None:
        """Each section's cut edges and their signs (``counted``), else the cells and sign of
        its side closed by walls; on ranks holding their parts alone, the cut edges alone
        (:func:`_part_cuts`: the whole mesh's cells are on no rank)."""
        if sim.part is not None and self.sections:
            for cut, sign in _part_cuts(sim, self.sections):
                self.cut_edges.append(cut)
                self._signs.append(sign)
            return
        for s in self.sections:
            right, cut = split(mesh, s)
            self._right.append(right)
            self.cut_edges.append(cut)
            if self.counted:  # +1 where the edge's normal points to the right
                self._signs.append(np.where(right[mesh.edge_cells[cut, 1]], 1.0, -1.0))
            else:
                part, sign = self._closed_side(s, mesh, right, sim)
                self._parts.append(part)
                self._signs.append(sign)

    @staticmethod
    def _closed_side(section: Section, mesh, right: np.ndarray, sim) -> tuple[np.ndarray, float]:
        """The cells of the side closed by walls and its sign (+1 right), for a backend that
        counts no edge volumes; a one-line error when neither side is closed."""
        for part, sign in ((right, 1.0), (~right, -1.0)):
            if _closed(mesh, sim.layout.edge_bc, part):
                return np.flatnonzero(part), sign
        raise ConfigError(
            f"section {section.name!r}: both sides reach an open or level boundary, and the "
            f"{sim.backend.name} backend counts no edge fluxes; run it with the explicit method, "
            "or close one side with walls"
        )

    @staticmethod
    def _cell(mesh, gauge: Gauge) -> int:
        _finite(gauge)
        cell = locate(mesh, gauge.x, gauge.y)
        if cell is None:
            raise ConfigError(
                f"gauge {gauge.name!r}: ({gauge.x:g}, {gauge.y:g}) lies outside {mesh.source}"
            )
        return cell

    def part_cells(self, k: int, *, right: bool) -> np.ndarray:
        """The cells (backend numbering, as ``sim.mesh``) right or left of section ``k`` (not
        on ranks holding their parts alone: the whole mesh's cells are on none of them)."""
        if self.sim.part is not None:
            raise ConfigError("part_cells: not on ranks holding their parts alone")
        return np.flatnonzero(self._right[k] == right)

    def _section_volumes(self) -> np.ndarray:
        """``(sections, layers)``: the counted volumes through each section's edges, signed
        and summed in float64 in the section's edge order; without counts, the signed volume
        of the closed side."""
        if self.counted:
            v = self.sim.backend.edge_volumes()
            ends = self._first + np.cumsum([0, *(len(e) for e in self.cut_edges)])
            return np.array(
                [np.sum(sign[:, None] * v[a:b], axis=0)
                 for sign, a, b in zip(self._signs, ends[:-1], ends[1:], strict=True)]
            )  # fmt: skip
        W = self.sim.backend.get_state().astype(np.float64)
        area = self.sim.mesh.area
        cols = list(self.sim.model.depth_components)
        return np.array(
            [s * (area[p] @ W[p][:, cols]) for p, s in zip(self._parts, self._signs, strict=True)]
        ).reshape(len(self.sections), len(cols))

    def _gauge_fields(self) -> dict[str, np.ndarray]:
        """Every output field at the gauges' cells now (collective on several ranks): of the
        whole fields, or on ranks holding their parts alone of each gauge's owner's part,
        the few values gathered (the same elementwise formulas: one process's bits)."""
        sim = self.sim
        if sim.part is None:
            return {name: v[self.original_cells] for name, v in output_fields(sim).items()}
        fields = people_fields(sim.part_fields(), sim.model)
        mine = {j: {name: v[row] for name, v in fields.items()}
                for j, row in enumerate(self._rows) if row >= 0}  # fmt: skip
        every = {j: values for part in sim.comm.allgather(mine) for j, values in part.items()}
        return {name: np.array([every[j][name] for j in range(len(self.gauges))])
                for name in fields}  # fmt: skip

    def sample(self, sim=None) -> None:
        """Record the gauges and section volumes at the simulation's current time.

        Takes (and ignores) the simulation so it can be a ``Simulation.run`` callback.
        """
        t = float(self.sim.t)
        if self.times and t == self.times[-1]:
            return  # an output time that is also a probe time
        self.times.append(t)
        if self.gauges:
            for name, values in self._gauge_fields().items():
                self.gauge_values.setdefault(name, []).append(values)
        if self.sections:
            v = self._section_volumes()
            if self._base is None:
                self._base = v
            self._volumes.append(v - self._base)

    @property
    def volume(self) -> np.ndarray:
        shape = (len(self.times), len(self.sections), len(self._layer_names()))
        return np.array(self._volumes).reshape(shape)

    @property
    def discharge(self) -> np.ndarray:
        v = self.volume
        dt = np.diff(np.asarray(self.times))
        q = np.zeros_like(v)
        if len(v) > 1:
            q[1:] = np.diff(v, axis=0) / dt[:, None, None]
        return q

    # -- restarts ---------------------------------------------------------------------------
    @property
    def key(self) -> str:
        """The gauges, sections and how sections count (JSON): what a restart must repeat."""
        return json.dumps({
            "gauges": [[g.name, g.x, g.y] for g in self.gauges],
            "sections": [[s.name, [list(p) for p in s.points]] for s in self.sections],
            "edge_counts": self.counted,
        })  # fmt: skip

    def state(self) -> dict[str, np.ndarray]:
        """The arrays a checkpoint keeps (:func:`fvswe.output.save_checkpoint`) so that a
        restart continues these records bit for bit: :attr:`key`, the sections' first
        volumes and their counted edges' volumes. Collective on several ranks."""
        out = {"probe_key": np.array(self.key)}
        if self.sections:
            out["probe_base"] = np.asarray(self._base, dtype=np.float64)
        if self.counted:
            n = sum(len(e) for e in self.cut_edges)
            out["probe_edges"] = self.sim.backend.edge_volumes()[self._first : self._first + n]
        return out

    def _saved(self, snap: Mapping[str, Any]) -> dict[str, np.ndarray] | None:
        """:meth:`state` as ``snap`` holds it; None when its run had no probes (a checkpoint
        of an fvswe before 0.x included); a one-line error when it had others."""
        if "probe_key" not in snap:
            return None
        src = snap.get("source", "snapshot")
        then, now = json.loads(str(snap["probe_key"])), json.loads(self.key)
        differs = next((k for k in now if then.get(k) != now[k]), None)
        if differs is not None:
            raise ConfigError(
                f"{src}: its run recorded other {differs.replace('_', ' ')} ({then.get(differs)} "
                f"then, {now[differs]} now); restart with the same, or into another --output"
            )
        layers = len(self._layer_names())
        shapes = {"probe_base": (len(self.sections), layers)} if self.sections else {}
        if self.counted:
            shapes["probe_edges"] = (sum(len(e) for e in self.cut_edges), layers)
        for name, shape in shapes.items():
            if name not in snap or np.shape(snap[name]) != shape:
                raise ConfigError(f"{src}: {name} is not the {list(shape)} of these sections")
        return {name: np.asarray(snap[name], dtype=np.float64) for name in shapes}

    def keep_earlier(self, directory: str | Path) -> None:
        """Take the records before the restart (``sim.t``) from ``directory``'s gauges.csv and
        sections.csv, as :class:`fvswe.output.Series` keeps a series' earlier outputs: the
        rows the run wrote at its checkpoints, read back bitwise (``repr`` of each value).
        Without them (a file missing) the records start at the restart."""
        if not self.resumed or not self.sim.is_root:
            return
        directory, t0 = Path(directory), float(self.sim.t)
        kinds = [k for k in ("gauges", "sections") if getattr(self, k)]
        paths = [directory / f"{kind}.csv" for kind in kinds]
        if not all(p.is_file() for p in paths):
            return
        read = [self._read_rows(p, kind, t0) for p, kind in zip(paths, kinds, strict=True)]
        times = [t for t, _ in read[0]]
        for p, rows in zip(paths, read, strict=True):
            if [t for t, _ in rows] != times:
                raise ConfigError(f"{p}: its times are not those of {paths[0].name}")
        for k, t in enumerate(times):
            self.times.insert(k, t)
        for kind, rows in zip(kinds, read, strict=True):
            if kind == "sections":
                self._volumes[:0] = [values for _, values in rows]
                continue
            for j, name in enumerate(FIELD_NAMES[self.sim.model.layers]):
                earlier = [values[:, j] for _, values in rows]
                self.gauge_values[name] = earlier + self.gauge_values.get(name, [])

    def _read_rows(self, path: Path, kind: str, before: float) -> list[tuple[float, np.ndarray]]:
        """``(t, values)`` per sample before ``before`` in ``path``, a CSV of :meth:`write`:
        gauges' field values ``(gauges, fields)`` or sections' volumes ``(sections, layers)``;
        a one-line error naming the file and line when it is not this run's."""
        items = self.gauges if kind == "gauges" else self.sections
        layers = self._layer_names()
        if kind == "gauges":
            head, skip = ["t", "gauge", "x", "y", *FIELD_NAMES[self.sim.model.layers]], 4
        else:
            head = ["t", "section", *(f"discharge{k}" for k in layers)]
            head, skip = head + [f"volume{k}" for k in layers], 2 + len(layers)
        try:
            with open(path, newline="") as f:
                rows = list(csv.reader(f))
        except (OSError, UnicodeDecodeError, csv.Error) as exc:
            raise ConfigError(f"{path}: cannot read it ({exc})") from None
        if not rows or rows[0] != head:
            raise ConfigError(f"{path}: line 1: not the columns {','.join(head)}")
        out = []
        for at in range(1, len(rows), len(items)):
            block = rows[at : at + len(items)]
            try:
                t = float(block[0][0])
                ok = [
                    r[0] == block[0][0] and r[1] == item.name
                    for r, item in zip(block, items, strict=False)
                ]
                values = np.array([[float(v) for v in r[skip:]] for r in block])
            except (ValueError, IndexError):
                ok = []
            if len(ok) != len(items) or not all(ok) or values.shape[1:] != (len(head) - skip,):
                raise ConfigError(f"{path}: line {at + 1}: not a sample of this run's {kind}")
            if t < before:
                out.append((t, values))
        return out

    # -- files ------------------------------------------------------------------------------
    def write(self, directory: str | Path, *, netcdf: bool = True, png: bool = True) -> list[Path]:
        """``gauges.csv``/``sections.csv`` (and ``.nc`` with ``netcdf``, a PNG with ``png``)."""
        directory = Path(directory)
        written = []
        if self.gauges:
            written.append(self._gauges_csv(directory / "gauges.csv"))
            if netcdf:
                written.append(self._gauges_nc(directory / "gauges.nc"))
        if self.sections:
            written.append(self._sections_csv(directory / "sections.csv"))
            if netcdf:
                written.append(self._sections_nc(directory / "sections.nc"))
        if png and (self.gauges or self.sections):
            path = directory / "probes.png"
            atomic_write(path, lambda p: self.plot(p))
            written.append(path)
        return written

    def plot(self, path: str | Path) -> None:
        """A PNG: one panel of free surface per gauge set, one of discharge per section set."""
        from matplotlib.figure import Figure  # not pyplot: no global state, no display needed

        panels = [p for p in ("gauges", "sections") if getattr(self, p)]
        fig = Figure(figsize=(8, 3.2 * len(panels)))
        axes = fig.subplots(len(panels), 1, squeeze=False)
        t = np.asarray(self.times)
        for ax, panel in zip(axes[:, 0], panels, strict=True):
            if panel == "gauges":
                surface = "eta1" if "eta1" in self.gauge_values else "eta"
                values = np.array(self.gauge_values[surface])
                for j, g in enumerate(self.gauges):
                    ax.plot(t, values[:, j], label=g.name)
                ax.set_ylabel(f"{surface} (m)")
            else:
                q = self.discharge
                for j, s in enumerate(self.sections):
                    for k, layer in enumerate(self._layer_names()):
                        ax.step(t, q[:, j, k], where="pre", label=f"{s.name} {layer}".strip())
                ax.set_ylabel("discharge (m³/s)")
            ax.set_xlabel("t (s)")
            ax.legend(fontsize="small")
            ax.grid(alpha=0.3)
        fig.tight_layout()
        fig.savefig(path, dpi=100, format="png")

    def _layer_names(self) -> list[str]:
        return ["1", "2"] if self.sim.model.layers == 2 else [""]

    def _gauges_csv(self, path: Path) -> Path:
        names = list(self.gauge_values)
        rows = [["t", "gauge", "x", "y", *names]]
        for k, t in enumerate(self.times):
            for j, g in enumerate(self.gauges):
                rows.append([t, g.name, g.x, g.y, *(self.gauge_values[n][k][j] for n in names)])
        return _write_csv(path, rows)

    def _sections_csv(self, path: Path) -> Path:
        layers = self._layer_names()
        head = ["t", "section"]
        head += [f"discharge{k}" for k in layers] + [f"volume{k}" for k in layers]
        rows = [head]
        q, v = self.discharge, self.volume
        for k, t in enumerate(self.times):
            for j, s in enumerate(self.sections):
                rows.append([t, s.name, *q[k, j], *v[k, j]])
        return _write_csv(path, rows)

    def _gauges_nc(self, path: Path) -> Path:
        from .ugrid import FIELD_ATTRS, set_attrs

        def fill(ds):
            _station_frame(ds, "gauge", [g.name for g in self.gauges], self.times)
            for k, axis in enumerate("xy"):
                var = ds.createVariable(axis, "f8", ("gauge",))
                set_attrs(var, f"projection_{axis}_coordinate", f"{axis} of the gauge", "m")
                var[:] = [(g.x, g.y)[k] for g in self.gauges]
            cell = ds.createVariable("cell", "i8", ("gauge",))
            cell.long_name = "sampled cell (original numbering, from 0)"
            cell[:] = self.original_cells
            for name, values in self.gauge_values.items():
                var = ds.createVariable(name, "f8", ("gauge", "time"), fill_value=False)
                set_attrs(var, *FIELD_ATTRS[name], coordinates="x y gauge_name")
                var[:] = np.array(values).T

        return _write_nc(path, "gauges", fill)

    def _sections_nc(self, path: Path) -> Path:
        from .ugrid import set_attrs

        def fill(ds):
            _station_frame(ds, "section", [s.name for s in self.sections], self.times)
            ds.createDimension("layer", len(self._layer_names()))
            layer = ds.createVariable("layer", "i4", ("layer",))
            layer.long_name = "layer (1 upper, 2 lower)"
            layer[:] = np.arange(1, len(self._layer_names()) + 1)
            dims = ("section", "time", "layer")
            q = ds.createVariable("discharge", "f8", dims, fill_value=False)
            set_attrs(q, "ocean_volume_transport_across_line", "discharge through the section, "
                      "mean since the previous sample, positive to the right", "m3 s-1",
                      cell_methods="time: mean")  # fmt: skip
            q[:] = self.discharge.transpose(1, 0, 2)
            v = ds.createVariable("volume", "f8", dims, fill_value=False)
            set_attrs(v, None, "volume through the section since the first sample", "m3")
            v[:] = self.volume.transpose(1, 0, 2)

        return _write_nc(path, "sections", fill)


def _duplicate(names: list[str]) -> str:
    return next(n for n in names if names.count(n) > 1)


def _write_csv(path: Path, rows: list[list]) -> Path:
    def write(p):
        with open(p, "w", newline="") as f:
            csv.writer(f).writerows([[_fmt(v) for v in row] for row in rows])

    atomic_write(path, write)
    return path


def _fmt(value) -> str:
    return repr(float(value)) if isinstance(value, (float, np.floating)) else str(value)


def _station_frame(ds, dim: str, names: list[str], times: list[float]) -> None:
    """CF discrete-sampling-geometry frame (orthogonal multidimensional time series, CF §9.3.1:
    data on ``(dim, time)``): ``time`` and the named stations along ``dim``."""
    from .ugrid import create_time, global_attrs

    global_attrs(ds, f"fvswe {dim}s")
    ds.featureType = "timeSeries"
    create_time(ds)[:] = times
    ds.createDimension(dim, len(names))
    var = ds.createVariable(f"{dim}_name", str, (dim,))
    var.cf_role = "timeseries_id"
    var.long_name = f"{dim} name"
    for k, name in enumerate(names):
        var[k] = name


def _write_nc(path: Path, title: str, fill) -> Path:
    """``fill(ds)`` on a NetCDF-4 file made in memory, whose bytes Python writes to ``path``
    (atomically): HDF5 under netCDF never meets a full disk, which it does not survive."""
    from .ugrid import netcdf4

    ds = netcdf4().Dataset(path.name, "w", format="NETCDF4", memory=1)
    try:
        fill(ds)
    finally:
        image = ds.close()
    atomic_write(path, lambda p: Path(p).write_bytes(image))
    return path
