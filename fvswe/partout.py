"""Per-part files of a run whose ranks hold their parts alone (``fvswe run --parts DIR``).

Every kind of output is a file a rank, its owned cells' rows with their cell numbers, under
one index that rank 0 writes once every part is on disk (:func:`write_parts`):

- a checkpoint (:func:`save_checkpoint`): ``checkpoint-parts/TOKEN-part-NNNN.npz`` (``W``,
  a compensated state's ``C``; ``cells``: global ids in the run's order), flushed to disk,
  under the index ``checkpoint.npz`` (time, steps, pending Δt, counters, initial masses, the
  run's identity, each part file's name, rows and SHA-256 of its arrays);
- the final state (:func:`write_final`): ``final-parts/TOKEN-part-NNNN.npz`` under
  ``final.json``; :func:`load_final` gives one process's ``final.npz`` arrays;
- the maximum and arrival maps (:func:`write_maxima`, at the end and at every checkpoint):
  ``maxima-parts/TOKEN-part-NNNN.npz`` under ``maxima.json``; :func:`load_maxima` gives one
  process's maps;
- the series (:class:`PartSeries`): per-part HDF5 files under the XDMF index
  ``solution.xdmf``, which ParaView opens as one dataset, and :func:`open_parts` as one
  xarray Dataset.

Whatever happens to the run, an index names whole files: new parts bear new names (a
token), and the old index, and the files it lists, stay until the new index replaces it.
:func:`part_rows` reads a checkpoint's rows back by global cell id (through
:func:`fvswe.output.load_checkpoint`): all of them on one process, or on a rank holding its
part alone the rows of its own cells (owned and halo) of any partition of the same mesh in
the same order, each part file read in turn and only the rows asked for kept, so a rank's
memory is one part file's beyond its own rows. docs/PARALLEL.md, "Per-part outputs", has
the design.
"""

from __future__ import annotations

import hashlib
import json
import secrets
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from .errors import ConfigError
from .output import CHECKPOINT_PARTS as PARTS_DIR
from .output import (
    FIELD_NAMES,
    IDENTITY_ATTRS,
    SERIES,
    _data_item,
    _h5_write,
    atomic_write,
    checkpoint_meta,
    os_error,
    people_fields,
)

#: The per-cell arrays of a snapshot that a part file holds (its owned rows).
ROWS = ("W", "C", "maxima")
#: The final state's index, the folder of its per-part files (beside ``final.npz``) and
#: the index's format; those of the maximum and arrival maps.
FINAL = FINAL_INDEX, FINAL_PARTS, FINAL_FORMAT = "final.json", "final-parts", "fvswe-final-parts"
MAXIMA = "maxima.json", "maxima-parts", "fvswe-maxima-parts"
#: The XDMF collections of a per-part series: of its output times, and of each one's parts.
TEMPORAL, SPATIAL = "@CollectionType='Temporal'", "@CollectionType='Spatial'"


def digest(arrays: dict[str, np.ndarray]) -> str:
    """SHA-256 of named arrays: each name, dtype, shape and bytes, in name order."""
    h = hashlib.sha256()
    for name in sorted(arrays):
        a = np.ascontiguousarray(arrays[name])
        h.update(f"{name}:{a.dtype.str}:{a.shape}".encode())
        h.update(a.tobytes())
    return h.hexdigest()


def save_checkpoint(path: str | Path, snap: dict[str, Any], comm) -> None:
    """Write a rank's snapshot (:meth:`Simulation.snapshot
    <fvswe.simulation.Simulation.snapshot>` of a rank holding its part alone: its rows,
    ``cells``, ``owned``) as its part of the checkpoint whose index is ``path``; rank 0
    writes the index once every part is on disk. Collective; an error on any rank (a full
    disk) is raised on every rank, and the index then still names the previous checkpoint."""
    path, owned = Path(path), int(snap["owned"])
    arrays = {"cells": np.asarray(snap["cells"][:owned], dtype=np.int64),
              **{key: np.asarray(snap[key])[:owned] for key in ROWS if key in snap}}  # fmt: skip

    def index(parts: list[dict[str, Any]]) -> None:
        meta = {**checkpoint_meta(snap), "parts": parts, "cells": sum(p["cells"] for p in parts)}
        scalars = {key: snap[key] for key in ("t", "steps", "dt")}
        extra = {k: v for k, v in snap.items()
                 if isinstance(v, np.ndarray) and k not in (*ROWS, "cells")}  # fmt: skip
        atomic_write(path, lambda p: np.savez(p, **scalars, meta=json.dumps(meta), **extra))

    write_parts(comm, path.parent / PARTS_DIR, arrays, index)


def write_parts(comm, folder: Path, arrays: dict[str, np.ndarray], index: Callable) -> None:
    """Each rank's ``arrays`` (rows, ``cells`` their global ids) into a file of its own in
    ``folder``, flushed to disk, under a name no earlier write used; then, on rank 0,
    ``index(parts)`` (each part's ``file`` relative to the folder's parent, ``cells`` and
    ``sha256``, in rank order), and the files in ``folder`` that it does not list removed.
    Collective: an error on any rank is raised on every rank."""
    from .parallel import agreed

    tag = comm.bcast(secrets.token_hex(6) if comm.rank == 0 else None)
    name = f"{folder.name}/{tag}-part-{comm.rank:04d}.npz"

    def write() -> dict[str, Any]:
        try:
            folder.mkdir(exist_ok=True)
        except OSError as exc:
            raise os_error(folder, exc) from None
        atomic_write(folder.parent / name, lambda p: np.savez(p, **arrays))
        return {"file": name, "cells": len(arrays["cells"]), "sha256": digest(arrays)}

    parts = comm.allgather(agreed(comm, write))

    def listed() -> None:
        index(parts)
        names = {p["file"] for p in parts}
        for old in folder.glob("*.npz"):
            if f"{folder.name}/{old.name}" not in names:
                old.unlink(missing_ok=True)

    agreed(comm, lambda: listed() if comm.rank == 0 else None)


def part_rows(index: Path, meta: dict[str, Any], cells: np.ndarray | None,
              src: str) -> dict[str, np.ndarray]:  # fmt: skip
    """The per-cell arrays of the per-part checkpoint whose index is ``index`` (its ``meta``):
    every cell's row in global order (``cells`` None), or the rows of the global ``cells`` in
    their order. Each part file is read in turn, checked against the index's SHA-256, and
    only the rows asked for are kept. One-line ConfigErrors name the file."""
    n = int(meta["cells"])
    if cells is not None:
        at_sorted = np.argsort(cells, kind="stable")
        ordered = np.asarray(cells)[at_sorted]
    out: dict[str, np.ndarray] = {}
    filled = 0
    for entry in meta["parts"]:
        a = _read_part(index.parent / entry["file"], entry, src)
        ids = a.pop("cells")
        if ids.size and not (ids.min() >= 0 and ids.max() < n):
            raise ConfigError(f"{index.parent / entry['file']}: cell ids beyond the index's {n}")
        if cells is None:
            at, take = ids, slice(None)
        else:
            i = np.minimum(np.searchsorted(ordered, ids), max(ordered.size - 1, 0))
            take = ordered[i] == ids if ordered.size else np.zeros(ids.size, bool)
            at = at_sorted[i[take]]
        for key, rows in a.items():
            if key not in out:
                out[key] = np.empty((n if cells is None else len(cells), *rows.shape[1:]),
                                    dtype=rows.dtype)  # fmt: skip
            out[key][at] = rows[take]
        filled += np.size(at)
    wanted = n if cells is None else len(cells)
    if filled != wanted:
        raise ConfigError(f"{src}: its parts hold {filled} of the {wanted} cells asked for")
    return out


def _read_part(path: Path, entry: dict[str, Any], src: str) -> dict[str, np.ndarray]:
    """A checkpoint part file's arrays, checked against its index's entry."""
    try:
        with np.load(path, allow_pickle=False) as z:
            a = {key: z[key] for key in z.files}
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such checkpoint part ({src} lists it)") from None
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{path}: cannot read ({' '.join(str(exc).split())})") from None
    if "cells" not in a or digest(a) != entry["sha256"]:
        raise ConfigError(f"{path}: its SHA-256 is not the one {src} lists (a part of another "
                          "checkpoint, or changed since)")  # fmt: skip
    return a


# -- the final state and the maximum maps -------------------------------------------------------
def write_final(directory: str | Path, sim) -> None:
    """The final state of a run whose ranks hold their parts alone: each rank's owned cells'
    ``final.npz`` arrays (x, y, area, H, the state components) and ``cells``, their numbers
    in the mesh's original order, in ``final-parts/``; then the index ``final.json`` (rank 0).
    :func:`load_final` gives one process's ``final.npz``; the ``final.npz`` of a run this one
    continued is removed. Collective."""
    f = sim.part_fields()
    keep = ("x", "y", "area", "H", *sim.model.fields)
    _write_cells(Path(directory), sim, FINAL, {k: f[k] for k in keep}, {}, ("final.npz",))


def write_maxima(directory: str | Path, sim) -> None:
    """The maximum and arrival maps so far of a run whose ranks hold their parts alone (a
    file a part, as :func:`write_final`): each rank's owned cells' maps
    (:data:`fvswe.maxima.NAMES`, the formulas of :func:`fvswe.maxima.fields` row by row, so
    one process's bits) in ``maxima-parts/`` under the index ``maxima.json`` (with the time
    and the arrival threshold); :func:`load_maxima` gives one process's maps. The maps a run
    this one continued wrote as one process (``maxima.h5``, ``.xdmf``, ``.nc``) are removed.
    Collective."""
    from .maxima import FILES, fields

    n = sim.part.part.n_owned
    maps = fields(sim.backend.local.maxima()[:n], sim.model.layers)
    meta = {"arrival_threshold": float(sim.layout.maxima)}
    _write_cells(Path(directory), sim, MAXIMA, maps, meta, FILES)


def _write_cells(directory: Path, sim, kind: tuple[str, str, str], arrays: dict[str, Any],
                 meta: dict[str, Any], stale: tuple[str, ...]) -> None:  # fmt: skip
    """Each rank's per-owned-cell ``arrays`` and ``cells`` (their numbers in the original
    order) in the folder of ``kind`` (index, folder, format); then, on rank 0, its index (the
    time, ``meta``, the arrays' names and the parts) and the files ``stale`` removed."""
    index_name, folder, fmt = kind
    cells = np.asarray(sim.mesh.original_index[: sim.part.part.n_owned], dtype=np.int64)

    def index(parts: list[dict[str, Any]]) -> None:
        full = {"format": fmt, "t": float(sim.t), **meta, "fields": list(arrays), "parts": parts,
                "cells": sum(p["cells"] for p in parts)}  # fmt: skip
        atomic_write(directory / index_name, lambda p: Path(p).write_text(json.dumps(full)))
        for name in stale:  # of a one-process run continued
            (directory / name).unlink(missing_ok=True)

    write_parts(sim.comm, directory / folder, {"cells": cells, **arrays}, index)


def load_final(directory: str | Path) -> dict[str, np.ndarray]:
    """The final state in ``directory`` as one process's ``final.npz`` holds it (its arrays
    in the original cell order): of ``final.npz``, or of the per-part files under
    ``final.json``. One-line ConfigErrors name the file."""
    directory = Path(directory)
    if (directory / "final.npz").is_file():
        with np.load(directory / "final.npz") as z:
            return {key: z[key] for key in z.files}
    return _read_cells(directory / FINAL_INDEX, FINAL[2])


def load_maxima(directory: str | Path) -> dict[str, np.ndarray]:
    """The maximum and arrival maps in ``directory`` as one process holds them
    (:meth:`Simulation.maxima <fvswe.simulation.Simulation.maxima>`: the original cell
    order): of one process's ``maxima.h5``, or of the per-part files under ``maxima.json``.
    One-line ConfigErrors name the file."""
    import h5py

    from .maxima import FILES, NAMES

    directory = Path(directory)
    path = directory / FILES[2]
    if (directory / MAXIMA[0]).is_file() or not path.is_file():
        return _read_cells(directory / MAXIMA[0], MAXIMA[2])
    try:
        with h5py.File(path, "r") as f:
            return {name: f[name][()] for name in NAMES[2 if "max_eta1" in f else 1]}
    except (OSError, KeyError) as exc:
        raise ConfigError(f"{path}: cannot read ({' '.join(str(exc).split())})") from None


def _read_cells(path: Path, fmt: str) -> dict[str, np.ndarray]:
    """The arrays of the per-part index ``path`` (format ``fmt``) in the original order."""
    try:
        meta = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{path}: cannot read ({' '.join(str(exc).split())})") from None
    if not isinstance(meta, dict) or meta.get("format") != fmt:
        raise ConfigError(f"{path}: not an fvswe per-part index (format {fmt!r})")
    rows = part_rows(path, meta, None, str(path))
    return {key: rows[key] for key in meta["fields"]}


# -- the time series ----------------------------------------------------------------------------
class PartSeries:
    """The XDMF + HDF5 series of a run whose ranks hold their parts alone, which ParaView
    opens as one dataset: each rank writes its owned cells' mesh once
    (``solution-parts/mesh-SHA.h5``: ``points``, ``cells`` and ``cell``, their numbers in
    the original order; SHA of its part file) and at each output time its fields
    (``solution/NNNNNN-PPPP.h5``, those of :func:`fvswe.output.people_fields`); rank 0 then
    rewrites the index ``solution.xdmf``: a temporal collection of spatial collections, a
    grid a part. ``solution.h5`` holds the run's identity only (what a restart checks).
    With ``resume_at`` (a restart, on any rank count) the outputs before it are kept, their
    index entries as written. :func:`open_parts` reads it as one xarray Dataset. The calls
    are collective."""

    def __init__(self, directory, sim, *, resume_at=None, identity=None) -> None:
        self.directory, self.sim, self.resume_at = Path(directory), sim, resume_at
        self.identity = json.dumps(dict(identity or {}), sort_keys=True)
        self.steps: list[tuple[float, str]] = []  # (time, its index entry)

    @property
    def times(self) -> list[float]:
        return [t for t, _ in self.steps]

    def __enter__(self) -> PartSeries:
        from .parallel import agreed

        sim, comm = self.sim, self.sim.comm
        own = sim.part
        name = f"{SERIES}-parts/mesh-{own.manifest['part_sha256'][comm.rank][:16]}.h5"
        n = own.part.n_owned
        mesh = sim.mesh
        used, cells = np.unique(mesh.cells[:n], return_inverse=True)
        arrays = {"points": np.column_stack([mesh.nodes[used], np.zeros(used.size)]),
                  "cells": cells.reshape(n, -1).astype(np.int64),
                  "cell": np.asarray(mesh.original_index[:n], dtype=np.int64)}  # fmt: skip

        def write() -> None:
            for folder in (f"{SERIES}-parts", SERIES):
                try:
                    (self.directory / folder).mkdir(exist_ok=True)
                except OSError as exc:
                    raise os_error(self.directory / folder, exc) from None
            atomic_write(self.directory / name, lambda p: _h5_write(p, arrays, {}))

        agreed(comm, write)
        self._meshes = comm.allgather((name, used.size, n, mesh.k))
        agreed(comm, lambda: self._start() if comm.rank == 0 else None)
        return self

    def __exit__(self, *exc) -> None:
        """Nothing to do: every output is complete on disk once :meth:`write` returns."""

    def _start(self) -> None:
        """Rank 0: the outputs kept (a restart's before ``resume_at``), the identity file,
        the step files no kept output lists removed, the index."""
        index = self.directory / f"{SERIES}.xdmf"
        if self.resume_at is not None and index.is_file():
            root = ET.parse(index).getroot()
            # a per-part run's outputs (one process's, after their "mesh" grid, are not)
            for grid in root.findall(f"Domain/Grid[{TEMPORAL}]/Grid[{SPATIAL}]"):
                t = float(grid.find("Time").get("Value"))
                if t < self.resume_at:
                    self.steps.append((t, ET.tostring(grid, encoding="unicode").strip() + "\n"))
        ident = {IDENTITY_ATTRS[f"{SERIES}.h5"]: self.identity}
        atomic_write(self.directory / f"{SERIES}.h5", lambda p: _h5_write(p, {}, ident))
        kept = {self.directory / f for _, text in self.steps for f in _files(text)}
        for stale in (self.directory / SERIES).glob("*.h5"):
            if stale not in kept:
                stale.unlink()
        self._write_index()

    def write(self) -> None:
        """Append the fields of every part at the simulation's current time (once a time)."""
        from .parallel import agreed

        t, comm = float(self.sim.t), self.sim.comm
        if self.steps and t <= self.steps[-1][0]:
            return  # this time is written already (every rank holds the same later times)
        k = comm.bcast(len(self.steps))  # (rank 0 alone holds a restart's earlier outputs)
        fields = people_fields(self.sim.part_fields(), self.sim.model)
        name = f"{SERIES}/{k:06d}-{comm.rank:04d}.h5"
        agreed(comm, lambda: atomic_write(self.directory / name,
                                          lambda p: _h5_write(p, fields, {"t": repr(t)}),
                                          sync=False))  # fmt: skip
        self.steps.append((t, self._step_text(t, k)))
        agreed(comm, lambda: self._write_index() if comm.rank == 0 else None)

    def _step_text(self, t: float, k: int) -> str:
        """One output time of the index: a spatial collection of the parts' grids."""
        names = FIELD_NAMES[self.sim.model.layers]
        grids = []
        for rank, (mesh, nodes, n, corners) in enumerate(self._meshes):
            step = f"{SERIES}/{k:06d}-{rank:04d}.h5"
            topology = "Triangle" if corners == 3 else "Quadrilateral"
            attributes = "".join(
                f'<Attribute Name="{f}" AttributeType="Scalar" Center="Cell">'
                f"{_data_item(f'{step}:/{f}', (n,), np.float64)}</Attribute>"
                for f in names
            )
            grids.append(
                f'<Grid Name="part{rank}" GridType="Uniform"><Geometry GeometryType="XYZ">'
                f"{_data_item(f'{mesh}:/points', (nodes, 3), np.float64)}</Geometry>"
                f'<Topology TopologyType="{topology}" NumberOfElements="{n}">'
                f"{_data_item(f'{mesh}:/cells', (n, corners), np.int64)}</Topology>"
                f"{attributes}</Grid>"
            )
        return (f'<Grid Name="t{k}" GridType="Collection" CollectionType="Spatial">'
                f'<Time Value="{t!r}"/>{"".join(grids)}</Grid>\n')  # fmt: skip

    def _write_index(self) -> None:
        text = (
            '<?xml version="1.0"?>\n<Xdmf Version="3.0">\n<Domain>\n'
            '<Grid Name="TimeSeries" GridType="Collection" CollectionType="Temporal">\n'
            + "".join(text for _, text in self.steps)
            + "</Grid>\n</Domain>\n</Xdmf>\n"
        )
        path = self.directory / f"{SERIES}.xdmf"
        atomic_write(path, lambda p: Path(p).write_text(text, encoding="utf-8"), sync=False)


def _files(text: str) -> list[str]:
    """The files an index entry's data items name (relative to the folder)."""
    return [item.text.split(":")[0] for item in ET.fromstring(text).iter("DataItem")]


def open_parts(directory: str | Path):
    """The per-part series in ``directory`` (:class:`PartSeries`) as one xarray Dataset: each
    field of :data:`fvswe.output.FIELD_NAMES` over ``(time, cell)``, the cells in the mesh's
    original order (as one process's series holds them), whatever the rank count of each
    output (a restart may continue on another)."""
    import xarray as xr

    index = Path(directory) / f"{SERIES}.xdmf"
    try:
        steps = ET.parse(index).getroot().findall(f"Domain/Grid[{TEMPORAL}]/Grid[{SPATIAL}]")
    except (OSError, ET.ParseError) as exc:
        raise ConfigError(f"{index}: cannot read ({' '.join(str(exc).split())})") from None
    if not steps:
        raise ConfigError(f"{index}: no output of a per-part series (fvswe run --parts)")
    times, data, numbers = [], {}, {}
    for step in steps:
        times.append(float(step.find("Time").get("Value")))
        parts = step.findall("Grid")
        n = sum(int(g.find("Topology").get("NumberOfElements")) for g in parts)
        row = {}
        for grid in parts:
            mesh = grid.find("Topology/DataItem").text.split(":")[0]
            if mesh not in numbers:  # the part's cells' numbers in the original order
                numbers[mesh] = _dataset(index.parent / mesh, "cell")
            cells = numbers[mesh]
            for attr in grid.findall("Attribute"):
                file, _, field = attr.find("DataItem").text.partition(":/")
                if attr.get("Name") not in row:
                    row[attr.get("Name")] = np.empty(n)
                row[attr.get("Name")][cells] = _dataset(index.parent / file, field)
        for key, values in row.items():
            data.setdefault(key, []).append(values)
    return xr.Dataset(
        {key: (("time", "cell"), np.stack(rows)) for key, rows in data.items()},
        coords={"time": np.array(times)},
    )


def _dataset(path: Path, name: str) -> np.ndarray:
    """Dataset ``name`` of the HDF5 file ``path`` (a one-line ConfigError naming the file)."""
    import h5py

    try:
        with h5py.File(path, "r") as f:
            return f[name][()]
    except (OSError, KeyError) as exc:
        raise ConfigError(f"{path}: cannot read {name} ({' '.join(str(exc).split())})") from None
