"""Per-part files of a run whose CPU ranks hold their parts alone (``fvswe run --parts DIR``).

A checkpoint (:func:`save_checkpoint`): each rank writes its owned cells' rows of the
snapshot (``W``, a compensated state's remainders ``C``, maxima maps) with their global
cell ids (``cells``) into its own file ``checkpoint-parts/SSSSSSSSSS-TOKEN-part-NNNN.npz``
(the step count and a token of this checkpoint), flushed to disk; then rank 0 writes the
index ``checkpoint.npz`` (time, steps, pending Δt, counters, initial masses, the run's
identity, and each part file's name, rows and SHA-256 of its arrays), atomically and last,
and removes the part files no index lists. Whatever happens to the run, the index names a
whole checkpoint: the files of a new one bear new names, and the old index, and the files
it lists, stay until the new index replaces it.

:func:`part_rows` reads a checkpoint's rows back by global cell id (through
:func:`fvswe.output.load_checkpoint`): all of them on one process, or on a rank holding its
part alone the rows of its own cells (owned and halo) of any partition of the same mesh
in the same order, each part file read in turn and only the rows asked for kept, so a
rank's memory is one part file's beyond its own rows. docs/PARALLEL.md, "Per-part
outputs", has the design.
"""

from __future__ import annotations

import hashlib
import json
import secrets
from pathlib import Path
from typing import Any

import numpy as np

from .errors import ConfigError
from .output import CHECKPOINT_PARTS as PARTS_DIR
from .output import atomic_write, checkpoint_meta, os_error

#: The per-cell arrays of a snapshot that a part file holds (its owned rows).
ROWS = ("W", "C", "maxima")


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
    from .parallel import agreed

    path = Path(path)
    tag = f"{int(snap['steps']):010d}-{secrets.token_hex(4)}" if comm.rank == 0 else None
    tag = comm.bcast(tag)
    name = f"{PARTS_DIR}/{tag}-part-{comm.rank:04d}.npz"
    owned = int(snap["owned"])
    arrays = {"cells": np.asarray(snap["cells"][:owned], dtype=np.int64),
              **{key: np.asarray(snap[key])[:owned] for key in ROWS if key in snap}}  # fmt: skip

    def write() -> dict[str, Any]:
        try:
            (path.parent / PARTS_DIR).mkdir(exist_ok=True)
        except OSError as exc:
            raise os_error(path.parent / PARTS_DIR, exc) from None
        atomic_write(path.parent / name, lambda p: np.savez(p, **arrays))
        return {"file": name, "cells": owned, "sha256": digest(arrays)}

    parts = comm.allgather(agreed(comm, write))
    agreed(comm, lambda: _write_index(path, snap, parts) if comm.rank == 0 else None)


def _write_index(path: Path, snap: dict[str, Any], parts: list[dict[str, Any]]) -> None:
    """The index of a per-part checkpoint, atomically; then the part files it does not list."""
    meta = {**checkpoint_meta(snap), "parts": parts, "cells": sum(p["cells"] for p in parts)}
    scalars = {key: snap[key] for key in ("t", "steps", "dt")}
    extra = {k: v for k, v in snap.items()
             if isinstance(v, np.ndarray) and k not in (*ROWS, "cells")}  # fmt: skip
    atomic_write(path, lambda p: np.savez(p, **scalars, meta=json.dumps(meta), **extra))
    listed = {p["file"] for p in parts}
    for old in (path.parent / PARTS_DIR).glob("*.npz"):
        if f"{PARTS_DIR}/{old.name}" not in listed:
            old.unlink(missing_ok=True)


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
