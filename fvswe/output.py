"""What a run leaves behind: an XDMF + HDF5 time series, final.npz, a JSON summary, checkpoints.

Every file appears complete or not at all: it is written under a temporary
name in its destination folder and renamed into place.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from .errors import ConfigError

#: Name of the time series (``solution.xdmf`` + ``solution.h5``) in an output folder.
SERIES = "solution"
CHECKPOINT = "checkpoint.npz"
CHECKPOINT_VERSION = 1
#: Names of :func:`output_fields` for one and two layers.
FIELD_NAMES = {
    2: ("h1", "h2", "eta1", "eta2", "u1", "v1", "u2", "v2", "bathymetry"),
    1: ("h", "eta", "u", "v", "bathymetry"),
}


def atomic_write(path: str | Path, write: Callable[[str], Any]) -> None:
    """Call ``write(tmp)`` on a temporary file beside ``path``, then rename it to ``path``."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=path.suffix)
    os.close(fd)
    try:
        write(tmp)
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp's 0600 is for the temporary name only
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _writes(sim) -> bool:
    """Whether this process writes the run's files: rank 0 of a distributed run, or the only
    one. The others still compute what is written (the gathers are collective) and drop it."""
    return getattr(sim, "is_root", True)


def write_json(path: str | Path, data: Mapping[str, Any]) -> None:
    """``data`` as indented JSON, atomically."""
    atomic_write(path, lambda p: Path(p).write_text(json.dumps(data, indent=2) + "\n"))


# -- fields -----------------------------------------------------------------------------------
def original_cells(mesh) -> np.ndarray:
    """The cell-node array in the mesh's original cell order (the order fields are reported in)."""
    return mesh.cells[np.argsort(mesh.original_index)]


def velocity(h: np.ndarray, q: np.ndarray, eps_h: float) -> np.ndarray:
    """Desingularised velocity ``√2 h q / √(h⁴ + max(h, ε)⁴)`` (docs/SCHEMES.md §8)."""
    return np.sqrt(2.0) * h * q / np.sqrt(h**4 + np.maximum(h, eps_h) ** 4)


def output_fields(sim) -> dict[str, np.ndarray]:
    """Cell fields for people, in the original cell order.

    Two layers: ``h1, h2, eta1`` (free surface), ``eta2`` (interface), ``u1, v1,
    u2, v2``, ``bathymetry`` (H, the depth of the bottom below the reference
    level, positive down). One layer: ``h, eta, u, v, bathymetry``.
    """
    f = sim.fields()
    eps = sim.model.eps_h
    if sim.model.layers == 2:
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


def write_final(sim, path: str | Path) -> None:
    """``final.npz``: x, y, area, H and the state components, in the original cell order."""
    fields = sim.fields()
    keep = ("x", "y", "area", "H", *sim.model.fields)
    if _writes(sim):
        atomic_write(path, lambda p: np.savez(p, **{k: fields[k] for k in keep}))


# -- XDMF time series -------------------------------------------------------------------------
def _xdmf_writer(filename: Path):
    """meshio's TimeSeriesWriter, with its ``.h5`` beside the ``.xdmf``.

    meshio opens the HDF5 file relative to the working directory; the XDMF
    refers to it by base name, i.e. relative to itself. Opening it beside the
    XDMF keeps the pair together wherever the run was started.
    """
    import h5py
    from meshio.xdmf import TimeSeriesWriter

    writer = TimeSeriesWriter(filename)
    writer.h5_filename = str(filename.with_suffix(".h5"))
    writer.h5_file = h5py.File(writer.h5_filename, "w")
    return writer


class Series:
    """An XDMF + HDF5 time series of :func:`output_fields`, which ParaView opens.

    Use as a context manager; call :meth:`write` at each output time. The pair
    ``directory/solution.xdmf`` + ``.h5`` is assembled in a hidden folder and
    moved into place on exit (also after an error or an interrupt, so the
    outputs up to that moment are kept). With ``resume_at``, the outputs of an
    existing series in ``directory`` up to that time are carried over first:
    a restarted run leaves the same series as an uninterrupted one.
    """

    def __init__(self, directory: str | Path, sim, *, resume_at: float | None = None) -> None:
        self.directory = Path(directory)
        self.sim = sim
        self.resume_at = resume_at
        self.times: list[float] = []

    @property
    def path(self) -> Path:
        return self.directory / f"{SERIES}.xdmf"

    def __enter__(self) -> Series:
        if not _writes(self.sim):
            return self
        previous = self._previous() if self.resume_at is not None else []
        self._tmp = Path(tempfile.mkdtemp(dir=self.directory, prefix=".series-"))
        self._writer = _xdmf_writer(self._tmp / f"{SERIES}.xdmf")
        mesh = self.sim.mesh
        kind = "triangle" if mesh.k == 3 else "quad"
        points = np.column_stack([mesh.nodes, np.zeros(mesh.n_nodes)])  # XYZ: every reader's
        self._writer.write_points_cells(points, [(kind, original_cells(mesh))])
        for t, fields in previous:
            self._write(t, fields)
        return self

    def _previous(self) -> list[tuple[float, dict[str, np.ndarray]]]:
        if not self.path.is_file():
            return []
        from meshio.xdmf import TimeSeriesReader

        steps = []
        with TimeSeriesReader(self.path) as reader:
            reader.read_points_cells()
            for k in range(reader.num_steps):
                t, _, cell_data = reader.read_data(k)
                if t <= self.resume_at:
                    steps.append((float(t), {name: v[0] for name, v in cell_data.items()}))
        return steps

    def _write(self, t: float, fields: Mapping[str, np.ndarray]) -> None:
        self._writer.write_data(t, cell_data={k: [np.asarray(v)] for k, v in fields.items()})
        self.times.append(t)

    def write(self) -> None:
        """Append the simulation's current fields at its current time."""
        fields = output_fields(self.sim)
        if _writes(self.sim):
            self._write(float(self.sim.t), fields)
        else:
            self.times.append(float(self.sim.t))

    def __exit__(self, *exc) -> None:
        if not _writes(self.sim):
            return
        self._writer.__exit__()
        for suffix in (".h5", ".xdmf"):  # the data first, then the file that points at it
            os.replace(self._tmp / f"{SERIES}{suffix}", self.directory / f"{SERIES}{suffix}")
        shutil.rmtree(self._tmp, ignore_errors=True)


# -- checkpoints ------------------------------------------------------------------------------
def mesh_fingerprint(mesh) -> str:
    """A short hash of the nodes and of the cells in original order: same mesh, same hash."""
    h = hashlib.sha1(np.ascontiguousarray(mesh.nodes, dtype=np.float64).tobytes())
    h.update(np.ascontiguousarray(original_cells(mesh), dtype=np.int64).tobytes())
    return h.hexdigest()[:16]


def save_checkpoint(path: str | Path, sim, identity: Mapping[str, Any]) -> None:
    """The backend's snapshot plus what the run must match to continue from it."""
    snap = sim.backend.snapshot()
    meta = {"version": CHECKPOINT_VERSION, "identity": dict(identity),
            "counters": snap["counters"], "mass_initial": list(sim.mass_initial)}  # fmt: skip
    if not _writes(sim):
        return
    atomic_write(
        path,
        lambda p: np.savez(
            p, W=snap["W"], t=snap["t"], steps=snap["steps"], dt=snap["dt"], meta=json.dumps(meta)
        ),
    )


def load_checkpoint(path: str | Path, identity: Mapping[str, Any]) -> dict[str, Any]:
    """Read a checkpoint and check it belongs to a run with this ``identity``."""
    src = str(path)
    if not Path(path).is_file():
        raise ConfigError(f"--restart: {src}: no such checkpoint")
    try:
        with np.load(path, allow_pickle=False) as z:
            meta = json.loads(str(z["meta"]))
            snap = {"W": z["W"], "t": float(z["t"]), "steps": int(z["steps"]), "dt": float(z["dt"])}
    except Exception as exc:  # zip, key and JSON errors all mean "not a checkpoint"
        raise ConfigError(f"--restart: {src}: not a fvswe checkpoint ({exc})") from None
    if meta.get("version") != CHECKPOINT_VERSION:
        raise ConfigError(f"--restart: {src}: checkpoint version {meta.get('version')!r} unknown")
    saved = meta["identity"]
    for key, value in identity.items():
        if saved.get(key) != value:
            raise ConfigError(
                f"--restart: {src} was written by a run with {key} = {saved.get(key)!r}, "
                f"this run has {value!r}"
            )
    snap["counters"] = meta["counters"]
    snap["mass_initial"] = meta["mass_initial"]
    return snap


def restore_checkpoint(sim, snap: Mapping[str, Any]) -> None:
    """Put ``sim`` where the checkpoint left it, initial masses included (for drift reports)."""
    sim.backend.restore({k: snap[k] for k in ("W", "t", "steps", "dt", "counters")})
    sim.mass_initial = list(snap["mass_initial"])
