"""What a run leaves behind: an XDMF + HDF5 time series, final.npz, a JSON summary, checkpoints.

Every file appears complete or not at all: it is written under a temporary
name (``.NAME.part-XXXX``) in its destination folder, flushed to disk and
renamed into place. A killed run leaves only such temporaries, which the
next run into the folder removes (:func:`clean_stale`), with those of older
versions (:func:`remove_old_temporaries`). An output folder has one owner at a
time (:func:`folder_lock`).
"""

from __future__ import annotations

import fcntl
import glob
import io
import json
import os
import re
import shutil
import tempfile
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from xml.sax.saxutils import escape

import numpy as np

from .errors import ConfigError, OutputError

#: Name of the time series in an output folder: ``solution.xdmf`` (the index ParaView
#: opens), ``solution.h5`` (the mesh) and ``solution/NNNNNN.h5`` (one file per output time).
SERIES = "solution"
CHECKPOINT = "checkpoint.npz"
CHECKPOINT_VERSION = 2
#: The folder of a per-part checkpoint's files (:mod:`fvswe.partout`), beside its index.
CHECKPOINT_PARTS = "checkpoint-parts"
#: What a run writes into its output folder (and ``--overwrite`` removes first).
RESULTS = (f"{SERIES}.xdmf", f"{SERIES}.h5", SERIES, f"{SERIES}-parts", f"{SERIES}.nc",
           "final.npz", "final.json", "final-parts", "summary.json", CHECKPOINT,
           CHECKPOINT_PARTS, "grid.npz", "gauges.csv", "gauges.nc",
           "sections.csv",
           "sections.nc", "probes.png", "maxima.nc", "maxima.xdmf", "maxima.h5",
           "maxima.json", "maxima-parts", "png")  # fmt: skip
#: The series files that record the identity of the run that wrote them, and the attribute
#: of the file's root that holds it (JSON). Both are HDF5 files (``solution.nc`` is NetCDF-4),
#: so h5py reads either, without netCDF4.
IDENTITY_ATTRS = {f"{SERIES}.h5": "identity", f"{SERIES}.nc": "fvswe_identity"}
#: The lock file that makes a run the folder's only writer.
LOCK = ".fvswe.lock"
#: Marks the temporary names of :func:`atomic_write`.
PART = ".part-"
#: Names of :func:`output_fields` for one and two layers.
FIELD_NAMES = {
    2: ("h1", "h2", "eta1", "eta2", "u1", "v1", "u2", "v2", "bathymetry"),
    1: ("h", "eta", "u", "v", "bathymetry"),
}


def os_error(path: str | Path, exc: OSError) -> OutputError:
    """One line naming ``path`` and what the system said (disk full, read-only, ...).

    HDF5's errors are OSErrors whose message spans lines and names the errno inside.
    """
    errno = exc.errno or next(map(int, re.findall(r"errno = (\d+)", str(exc))), None)
    reason = os.strerror(errno) if errno else " ".join(str(exc).split())
    return OutputError(f"{path}: cannot write ({reason})")


def atomic_write(path: str | Path, write: Callable[[str], Any], *, sync: bool = True) -> None:
    """Call ``write(tmp)`` on a temporary file beside ``path``, then rename it to ``path``.

    ``path`` holds either the old or the new content whatever happens to the
    process (kill, full disk); with ``sync`` the data is also flushed to disk
    before the rename, which guards against a power cut too. OS errors become
    an :class:`OutputError` naming ``path``.
    """
    path = Path(path)
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}{PART}",
                                   suffix=path.suffix)  # fmt: skip
        os.close(fd)
        write(tmp)
        if sync:
            with open(tmp, "rb+") as f:
                os.fsync(f.fileno())
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp's 0600 is for the temporary name only
        os.replace(tmp, path)
    except OSError as exc:
        raise os_error(path, exc) from None
    finally:
        if tmp is not None and os.path.exists(tmp):
            os.unlink(tmp)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_json(path: str | Path, data: Mapping[str, Any]) -> None:
    """``data`` as indented JSON, atomically."""
    atomic_write(path, lambda p: Path(p).write_text(json.dumps(data, indent=2) + "\n"))


# -- the output folder ------------------------------------------------------------------------
@contextmanager
def folder_lock(directory: str | Path) -> Iterator[None]:
    """Hold ``directory/.fvswe.lock`` while the block runs: a second run is refused.

    An exclusive ``flock`` on the file, which the kernel releases when the
    process ends however it ends, so a lock left by a killed run is never in
    the way. The file names the holder's pid: for the message, and to tell a
    live holder from a dead one where the file system has no ``flock`` (some
    network ones). The file is removed on a clean exit.
    """
    path = Path(directory) / LOCK
    try:
        while True:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
            holder = os.read(fd, 32).decode(errors="replace").strip()
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                busy = False
            except BlockingIOError:
                busy = True
            except OSError:  # no flock here: the recorded pid decides
                busy = holder.isdigit() and int(holder) != os.getpid() and _alive(int(holder))
            if busy:
                os.close(fd)
                raise ConfigError(
                    f"--output: {directory} is in use by another fvswe run (pid {holder or '?'})"
                )
            try:
                if os.path.samestat(os.fstat(fd), os.stat(path)):
                    break  # else the holder removed the file as we opened it: try again
            except FileNotFoundError:
                pass
            os.close(fd)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    except OSError as exc:
        raise os_error(path, exc) from None
    try:
        yield
    finally:
        path.unlink(missing_ok=True)
        os.close(fd)


def _alive(pid: int) -> bool:
    """Whether process ``pid`` exists (signal 0 checks without sending anything)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def clean_stale(directory: str | Path) -> None:
    """Remove the temporaries that killed runs left in ``directory`` (and its series and PNGs)."""
    directory = Path(directory)
    folders = (".", SERIES, "png", CHECKPOINT_PARTS, f"{SERIES}-parts", "final-parts",
               "maxima-parts")  # fmt: skip
    for name in folders:
        folder = directory / name
        for tmp in folder.glob(f".*{PART}*"):
            tmp.unlink(missing_ok=True)
    for name in RESULTS:
        remove_old_temporaries(directory / name)
    for old in directory.glob(".series-*"):  # the hidden series folders of older versions
        shutil.rmtree(old, ignore_errors=True)
    (directory / f".{SERIES}.nc.tmp").unlink(missing_ok=True)  # fvswe.ugrid's, being made


def identity_of(path: str | Path) -> dict[str, Any] | None:
    """The run identity stored in the series file ``path`` (a name of :data:`IDENTITY_ATTRS`)
    as written (None: none, or unreadable); :func:`fvswe.restart.mismatch` compares it with a
    run's."""
    import h5py

    try:
        with h5py.File(path, "r") as f:
            saved = f.attrs[IDENTITY_ATTRS[Path(path).name]]
        saved = json.loads(saved.decode() if isinstance(saved, bytes) else str(saved))
    except (OSError, KeyError, ValueError):
        return None
    return saved if isinstance(saved, dict) else None


def remove_old_temporaries(path: Path) -> None:
    """Remove the temporaries of ``path`` that a killed run of an fvswe before :data:`PART`
    left: mkstemp's ``.NAME.XXXXXXXX.SUFFIX`` (eight of ``a-z0-9_``), which nothing else
    writes, so a live writer's temporary is never among them."""
    old = re.compile(re.escape(f".{path.name}.") + "[a-z0-9_]{8}" + re.escape(path.suffix))
    for tmp in path.parent.glob(f".{glob.escape(path.name)}.*"):
        if old.fullmatch(tmp.name):
            tmp.unlink(missing_ok=True)


def previous_results(directory: str | Path) -> list[str]:
    """The names of :data:`RESULTS` present in ``directory``."""
    return [name for name in RESULTS if (Path(directory) / name).exists()]


def remove_results(directory: str | Path, keep: Path | None = None) -> None:
    """Delete what a run writes (``png/``: only the snapshots), except the file ``keep`` (a
    checkpoint: with its part files, when it is this folder's)."""
    directory = Path(directory)
    ours = keep is not None and keep.resolve().parent == directory.resolve()
    for name in RESULTS:
        path = directory / name
        if keep is not None and path.exists() and path.resolve() == keep.resolve():
            continue
        if ours and name == CHECKPOINT_PARTS:
            continue
        if name == "png" and path.is_dir():
            for png in path.glob("snapshot_*.png"):
                png.unlink()
        elif path.is_dir():
            shutil.rmtree(path)
        else:
            path.unlink(missing_ok=True)


# -- fields -----------------------------------------------------------------------------------
def original_cells(mesh) -> np.ndarray:
    """The cell-node array in the mesh's original cell order (the order fields are reported in)."""
    from .mesh.core import inverse_permutation  # here: fvswe.mesh imports this module

    return mesh.cells[inverse_permutation(mesh.original_index)]


def velocity(h: np.ndarray, q: np.ndarray, eps_h: float) -> np.ndarray:
    """Desingularised velocity ``√2 h q / √(h⁴ + max(h, ε)⁴)`` (docs/SCHEMES.md §8)."""
    return np.sqrt(2.0) * h * q / np.sqrt(h**4 + np.maximum(h, eps_h) ** 4)


def output_fields(sim) -> dict[str, np.ndarray]:
    """Cell fields for people, in the original cell order (:func:`people_fields` of the
    simulation's fields)."""
    return people_fields(sim.fields(), sim.model)


def people_fields(f: Mapping[str, np.ndarray], model) -> dict[str, np.ndarray]:
    """The fields for people of :meth:`Simulation.fields
    <fvswe.simulation.Simulation.fields>`'s ``f`` (or of a part's, ``part_fields``).

    Two layers: ``h1, h2, eta1`` (free surface), ``eta2`` (interface), ``u1, v1,
    u2, v2``, ``bathymetry`` (H, the depth of the bottom below the reference
    level, positive down). One layer: ``h, eta, u, v, bathymetry``.
    """
    eps = model.eps_h
    if model.layers == 2:
        return {
            "h1": f["h1"],
            "h2": f["h2"],
            "eta1": f["eta1"],
            "eta2": f["eta2"],
            "u1": velocity(f["h1"], f["q1x"], eps),
            "v1": velocity(f["h1"], f["q1y"], eps),
            "u2": velocity(f["h2"], f["q2x"], eps),
            "v2": velocity(f["h2"], f["q2y"], eps),
            "bathymetry": f["H"],
        }
    return {
        "h": f["h"],
        "eta": f["eta"],
        "u": velocity(f["h"], f["qx"], eps),
        "v": velocity(f["h"], f["qy"], eps),
        "bathymetry": f["H"],
    }


def _writes(sim) -> bool:
    """Whether this process writes the run's files: rank 0 of a distributed run, or the only
    one. The others still compute what is written (the gathers are collective) and drop it."""
    return getattr(sim, "is_root", True)


def write_final(sim, path: str | Path) -> None:
    """``final.npz``: x, y, area, H and the state components, in the original cell order (a
    per-part final state of a run this one continued, ``final.json``, is removed)."""
    fields = sim.fields()
    keep = ("x", "y", "area", "H", *sim.model.fields)
    if _writes(sim):
        atomic_write(path, lambda p: np.savez(p, **{k: fields[k] for k in keep}))
        Path(path).with_name("final.json").unlink(missing_ok=True)


# -- XDMF time series -------------------------------------------------------------------------
XINCLUDE = "http://www.w3.org/2001/XInclude"


def _h5_write(path: str, arrays: Mapping[str, np.ndarray], attrs: Mapping[str, str]) -> None:
    """An HDF5 file of ``arrays`` (one dataset each) and string ``attrs``.

    The file is made in memory and its bytes written by Python, so HDF5 never meets a
    failed write: one on a full disk, in the flush of a dataset's or the file's close, leaves
    an id that HDF5 can neither close nor forget, and that its exit handler
    (``H5_term_library``) then closes again, in a segfault after the run's error.
    """
    import h5py

    image = io.BytesIO()
    with h5py.File(image, "w") as f:
        for name, value in arrays.items():
            f.create_dataset(name, data=np.asarray(value))
        f.attrs.update(attrs)
    Path(path).write_bytes(image.getbuffer())


def _data_item(ref: str, shape: tuple[int, ...], dtype) -> str:
    """An XDMF ``DataItem`` that points at the HDF5 dataset ``ref`` (``file:/name``)."""
    kind = "Int" if np.dtype(dtype).kind in "iu" else "Float"
    dims = " ".join(map(str, shape))
    return (f'<DataItem DataType="{kind}" Dimensions="{dims}" Format="HDF" '
            f'Precision="{np.dtype(dtype).itemsize}">{escape(ref)}</DataItem>')  # fmt: skip


class Series:
    """An XDMF + HDF5 time series of :func:`output_fields`, which ParaView opens.

    Use as a context manager; call :meth:`write` at each output time. The
    series is valid at every instant: ``solution.h5`` (the mesh) is written
    first, each output time goes to its own ``solution/NNNNNN.h5``, and only
    then is the index ``solution.xdmf`` replaced by one that lists it (all
    atomically), so a killed run leaves a readable series up to its last
    completed output. (They are not flushed to disk one by one: that would cost
    more than the output itself; a power cut may cost the last outputs, while
    checkpoints are flushed.) With ``resume_at`` (a restart), the series in
    ``directory`` keeps its outputs before that time and continues in place (an
    output at ``resume_at`` is written again, the same bits, by the continued run: under
    MPI every rank must take the gather of an output, and only rank 0 reads the series).
    """

    def __init__(
        self,
        directory: str | Path,
        sim,
        *,
        resume_at: float | None = None,
        identity: Mapping[str, Any] | None = None,
    ) -> None:
        self.directory = Path(directory)
        self.sim = sim
        self.resume_at = resume_at
        self.identity = json.dumps(dict(identity or {}), sort_keys=True)
        self.steps: list[tuple[float, str]] = []  # (time, step file relative to directory)

    @property
    def path(self) -> Path:
        return self.directory / f"{SERIES}.xdmf"

    @property
    def times(self) -> list[float]:
        return [t for t, _ in self.steps]

    def __enter__(self) -> Series:
        if not _writes(self.sim):
            return self
        mesh_file = self.directory / f"{SERIES}.h5"
        if self.resume_at is not None and self.path.is_file() and mesh_file.is_file():
            # before resume_at only: the run writes an output at resume_at itself, on every
            # rank, so the ranks that write nothing take the same (collective) path as rank 0
            self.steps = [(t, f) for t, f in self.read_index(self.path) if t < self.resume_at]
        else:
            mesh = self.sim.mesh
            points = np.column_stack([mesh.nodes, np.zeros(mesh.n_nodes)])  # XYZ: every reader's
            arrays = {"points": points, "cells": original_cells(mesh).astype(np.int64)}
            attrs = {IDENTITY_ATTRS[mesh_file.name]: self.identity}
            atomic_write(mesh_file, lambda p: _h5_write(p, arrays, attrs))
        steps_dir = self.directory / SERIES
        try:
            steps_dir.mkdir(exist_ok=True)
        except OSError as exc:
            raise os_error(steps_dir, exc) from None
        kept = {self.directory / f for _, f in self.steps}
        for stale in steps_dir.glob("*.h5"):  # outputs after the checkpoint, or of a killed run
            if stale not in kept:
                stale.unlink()
        self._write_index()
        return self

    def __exit__(self, *exc) -> None:
        """Nothing to do: every output is complete on disk once :meth:`write` returns."""

    @staticmethod
    def read_index(path: Path) -> list[tuple[float, str]]:
        """``(time, step file)`` of every output listed in an index ``solution.xdmf``."""
        root = ET.parse(path).getroot()
        out = []
        for grid in root.iter("Grid"):
            time = grid.find("Time")
            item = grid.find("Attribute/DataItem")
            if time is not None and item is not None:
                out.append((float(time.get("Value")), item.text.split(":")[0]))
        return out

    def write(self) -> None:
        """Append the simulation's current fields at its current time (once per time)."""
        t = float(self.sim.t)
        if self.steps and t <= self.steps[-1][0]:
            return  # this time is written already (every rank holds the same later times)
        name = f"{SERIES}/{len(self.steps):06d}.h5"
        fields = {k: np.asarray(v, dtype=np.float64) for k, v in output_fields(self.sim).items()}
        if not _writes(self.sim):
            self.steps.append((t, name))
            return
        atomic_write(
            self.directory / name, lambda p: _h5_write(p, fields, {"t": repr(t)}), sync=False
        )
        self.steps.append((t, name))
        try:
            self._write_index()
        except OutputError:  # a full disk: no output file that the index does not list
            (self.directory / name).unlink(missing_ok=True)
            self.steps.pop()
            raise

    def _write_index(self) -> None:
        """Replace ``solution.xdmf`` by an index of the mesh and of every output written.

        The index is rewritten whole (the price of being valid at every instant), from
        text kept per output, so an output costs one file write, not an XML rebuild.
        """
        mesh = self.sim.mesh
        if not hasattr(self, "_head"):
            n, k = mesh.n_cells, mesh.k
            topology = "Triangle" if k == 3 else "Quadrilateral"
            self._head = (
                f'<?xml version="1.0"?>\n<Xdmf Version="3.0" xmlns:xi="{XINCLUDE}">\n<Domain>\n'
                '<Grid Name="mesh" GridType="Uniform">\n<Geometry GeometryType="XYZ">'
                f"{_data_item(f'{SERIES}.h5:/points', (mesh.n_nodes, 3), np.float64)}</Geometry>\n"
                f'<Topology TopologyType="{topology}" NumberOfElements="{n}">'
                f"{_data_item(f'{SERIES}.h5:/cells', (n, k), np.int64)}</Topology>\n</Grid>\n"
                '<Grid Name="TimeSeries" GridType="Collection" CollectionType="Temporal">\n'
            )
            self._text: dict[tuple[float, str], str] = {}
        for t, name in self.steps:
            if (t, name) not in self._text:
                self._text[t, name] = self._step_text(t, name)
        body = "".join(self._text[step] for step in self.steps)
        text = self._head + body + "</Grid>\n</Domain>\n</Xdmf>\n"
        atomic_write(self.path, lambda p: Path(p).write_text(text, encoding="utf-8"), sync=False)

    def _step_text(self, t: float, name: str) -> str:
        """One output time of the index: the mesh (by XInclude), the time, every field."""
        n = self.sim.mesh.n_cells
        pointer = 'xpointer(//Grid[@Name="mesh"]/*[self::Topology or self::Geometry])'
        fields = "".join(
            f'<Attribute Name="{field}" AttributeType="Scalar" Center="Cell">'
            f"{_data_item(f'{name}:/{field}', (n,), np.float64)}</Attribute>"
            for field in FIELD_NAMES[self.sim.model.layers]
        )
        return f"<Grid><xi:include xpointer='{pointer}'/><Time Value=\"{t!r}\"/>{fields}</Grid>\n"


# -- checkpoints ------------------------------------------------------------------------------
def checkpoint_meta(snap: Mapping[str, Any]) -> dict[str, Any]:
    """The JSON part of a checkpoint: its version, the run's identity (and the readable values
    behind it), the counters and the initial masses."""
    return {"version": CHECKPOINT_VERSION, "identity": dict(snap["identity"]),
            "identity_details": dict(snap.get("identity_details") or {}),
            "counters": snap["counters"], "mass_initial": list(snap["mass_initial"])}  # fmt: skip


def save_checkpoint(path: str | Path, snap: Mapping[str, Any]) -> None:
    """Write a :meth:`Simulation.snapshot <fvswe.simulation.Simulation.snapshot>` to ``path``,
    atomically and flushed to disk (under MPI, rank 0 writes: ``if sim.is_root``; ranks
    holding their parts alone write theirs: :func:`fvswe.partout.save_checkpoint`). Its
    arrays beyond ``W`` (the implicit method's staggered state) are stored beside it. The
    temporaries of this name that older fvswe versions left are removed first."""
    meta = checkpoint_meta(snap)
    extra = {k: v for k, v in snap.items() if isinstance(v, np.ndarray) and k != "W"}
    remove_old_temporaries(Path(path))
    atomic_write(
        path,
        lambda p: np.savez(
            p,
            W=snap["W"],
            t=snap["t"],
            steps=snap["steps"],
            dt=snap["dt"],
            meta=json.dumps(meta),
            **extra,
        ),
    )


def load_checkpoint(
    path: str | Path, label: str | None = None, cells: np.ndarray | None = None
) -> dict[str, Any]:
    """The snapshot in the checkpoint file ``path``, for :meth:`Simulation.restore
    <fvswe.simulation.Simulation.restore>`, which checks it belongs to the run. A file that
    is missing or no fvswe checkpoint is a one-line ConfigError naming ``label`` (default: the
    path), which the snapshot also carries as its ``source``. ``path`` may be the index of a
    per-part checkpoint (:mod:`fvswe.partout`), whose part files are read by global cell id.
    ``cells`` (a rank holding its part alone: its cells' global ids): the rows of those cells
    only, in their order (of a one-file checkpoint, read whole, then taken)."""
    src = label or str(path)
    if not Path(path).is_file():
        raise ConfigError(f"{src}: no such checkpoint")
    try:
        with np.load(path, allow_pickle=False) as z:
            meta = json.loads(str(z["meta"]))
            snap = {key: z[key][()] for key in ("t", "steps", "dt")}
            snap.update({k: z[k] for k in z.files if k not in (*snap, "meta")})
        if "parts" not in meta and "W" not in snap:
            raise KeyError("W")
        snap["identity"] = dict(meta["identity"])
        snap["identity_details"] = dict(meta.get("identity_details") or {})
        snap["counters"] = dict(meta["counters"])
        snap["mass_initial"] = [float(m) for m in meta["mass_initial"]]
    except Exception as exc:  # zip, key, type and JSON errors all mean "not a checkpoint"
        raise ConfigError(f"{src}: not a fvswe checkpoint ({exc})") from None
    if meta.get("version") != CHECKPOINT_VERSION:
        raise ConfigError(f"{src}: checkpoint version {meta.get('version')!r} unknown")
    if "parts" in meta:
        from .partout import part_rows

        snap.update(part_rows(Path(path), meta, cells, src))
    elif cells is not None:
        snap.update({key: snap[key][cells] for key in ("W", "C", "maxima") if key in snap})
    return {**snap, "source": src}
