"""Distributed runs on MPI ranks: launch detection, the halo exchange and a distributed backend.

Contract (docs/PARALLEL.md): every rank holds the
global Layout (built from the same inputs, so bitwise the same); rank 0 cuts
it into parts (:mod:`fvswe.partition`) and scatters them (or, with per-part files, CPU and
GPU ranks hold their part alone: :func:`read_own`, the layout built from the part); each rank
runs an ordinary backend on its part's Layout, whose volume pass updates the owned
cells only and then calls the :class:`Halo`: the halo states are exchanged
(persistent Isend/Irecv of packed NumPy buffers) and the next Δt is the
min-allreduce of the parts' minima. :class:`DistributedBackend` presents the
ranks to :class:`~fvswe.simulation.Simulation` as one backend over the global
layout: states, snapshots and blow-up cells come back global (allgathered:
every rank gets them), so the time loop needs no MPI of its own.

Nothing here imports mpi4py until a run is launched on more than one process.
"""

from __future__ import annotations

import math
import os
import sys
import traceback
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import exactsum
from .boundary import INFLOW_KEYS
from .errors import ConfigError, FvsweError
from .partition import Part, assign, split
from .sources import RAIN_KEY, SOURCE_KEYS

#: Environment variables in which launchers (Open MPI, MPICH/Hydra and Intel MPI, MVAPICH)
#: announce the number of processes they started and the rank of each.
LAUNCH_SIZE_VARS = ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "MV2_COMM_WORLD_SIZE")
LAUNCH_RANK_VARS = ("OMPI_COMM_WORLD_RANK", "PMI_RANK", "MV2_COMM_WORLD_RANK")
#: Counters every rank holds whole (the ranks' level fluxes are summed in global order
#: each step); the others are per-rank counts, summed when reported.
WHOLE_COUNTERS = (*INFLOW_KEYS, *SOURCE_KEYS, RAIN_KEY)
#: Rows of a whole array that rank 0 holds at once while hashing it (:meth:`Owned.update`).
DIGEST_ROWS = 1 << 18


def _launch_env(names: tuple[str, ...], default: int) -> int:
    for var in names:
        value = os.environ.get(var, "")
        if value.isdigit():
            return int(value)
    return default


def launch_size() -> int:
    """The number of processes the launcher says it started (1 outside mpiexec)."""
    return _launch_env(LAUNCH_SIZE_VARS, 1)


def launch_rank() -> int:
    """This process's rank as the launcher numbers it (0 outside mpiexec)."""
    return _launch_env(LAUNCH_RANK_VARS, 0)


def abort_job() -> None:
    """Print the exception being handled and abort every rank (no-op outside an MPI job)."""
    mpi = sys.modules.get("mpi4py.MPI")
    if mpi is None or mpi.COMM_WORLD.size == 1:
        return
    traceback.print_exc()
    mpi.COMM_WORLD.Abort(1)


def world():
    """``MPI.COMM_WORLD`` when launched as several processes, else None (mpi4py not imported).

    A launch that MPI does not see as one job (mpi4py missing, or built against
    another MPI than the ``mpiexec`` used) is a one-line :class:`ConfigError`.
    """
    n = launch_size()
    if n <= 1:
        return None
    try:
        with warnings.catch_warnings():  # its multi-line launch warning: ours is one line
            warnings.simplefilter("ignore", RuntimeWarning)
            from mpi4py import MPI
    except ImportError:
        raise ConfigError(
            f"launched as {n} MPI processes but mpi4py is not installed "
            "(pip install 'fvswe[mpi]'; add mpich where there is no system MPI)"
        ) from None
    comm = MPI.COMM_WORLD
    if comm.size != n:
        library = MPI.Get_library_version().splitlines()[0].strip()
        raise ConfigError(
            f"launched as {n} MPI processes but MPI sees {comm.size}: this mpiexec does not "
            f"belong to mpi4py's MPI ({library}); use that library's mpiexec"
        )
    return comm


def on_root(comm, make: Callable[[], Any], *, scatter: bool = False) -> Any:
    """``make()`` on rank 0, broadcast (or, ``scatter``, one item per rank) to every rank.

    An exception on rank 0 is raised on every rank, so all stop together.
    """
    value, error = None, None
    if comm.rank == 0:
        try:
            value = make()
        except Exception as exc:  # re-raised below on every rank, rank 0 included
            error = exc
    error = comm.bcast(error)
    if error is not None:
        raise error
    return comm.scatter(value) if scatter else comm.bcast(value)


def agreed(comm, make: Callable[[], Any]) -> Any:
    """``make()`` on every rank; an error (a :class:`~fvswe.errors.FvsweError`: a bad input, a
    file that cannot be written) on any rank is raised on every rank, the first rank's, so
    that all stop together and none waits in a collective. ``comm`` None: ``make()``."""
    if comm is None:
        return make()
    value, error = None, None
    try:
        value = make()
    except FvsweError as exc:
        error = exc
    errors = [e for e in comm.allgather(error) if e is not None]
    if errors:
        raise errors[0]
    return value


@dataclass(frozen=True)
class OwnPart:
    """A rank's part of a run that holds nothing global (:func:`read_own`): its :class:`Part`
    (global numbering), the partition's manifest (the whole mesh's counts, tags and tag
    lengths) and the folder it came from."""

    part: Part
    manifest: dict
    directory: str

    @property
    def cells(self) -> int:
        """The whole mesh's cells."""
        return int(self.manifest["cells"])

    @property
    def edges(self) -> int:
        """The whole mesh's edges."""
        return int(self.manifest["edges"])

    @property
    def owned(self) -> tuple[int, int]:
        """The part's owned cells and edges (``Layout.build``'s ``owned``)."""
        return self.part.n_owned, self.part.n_owned_edges


def read_own(comm, directory) -> tuple[Any, OwnPart]:
    """``(local mesh, OwnPart)`` of this rank, from the manifest and its own part file in
    ``directory`` only (:func:`fvswe.partfile.read_part`): no rank reads the whole mesh. An
    error on any rank is raised on every rank."""
    from .partfile import read_manifest, read_part

    def read():
        mesh, part = read_part(directory, comm.rank, comm.size)
        return mesh, OwnPart(part, read_manifest(directory), str(directory))

    return agreed(comm, read)


def outflow_drops(comm, part: Part, mesh, H: np.ndarray | None, tags: list[str]) -> dict:
    """Each outflow tag's ``(edges, drops)`` over the whole mesh, in the order of the edges'
    numbers, on every rank (collective): each rank's owned edges of the tag with their bed
    drops (:func:`fvswe.boundary.bed_drop` over the cells two rings around the inner cell,
    one process's operands in one process's order), gathered. The second ring reaches past
    the halo: each rank first sends its peers its border cells' neighbours (their numbers,
    barycentres and beds), whose owners hold them all."""
    from .boundary import bed_drop

    rows = _neighbour_rows(comm, part, mesh, H) if H is not None and tags else {}
    out = {}
    for name in tags:
        where = np.flatnonzero(mesh.edge_tag[: part.n_owned_edges] == mesh.tags[name])
        drops = np.zeros(where.size)
        for k, e in enumerate(where if H is not None else ()):
            i = int(mesh.edge_cells[e, 0])
            ids, xy, bed = _around(part, mesh, H, rows, i)
            drops[k] = bed_drop(mesh, e, xy, bed, H[i])
        every = comm.allgather((part.edges[where], drops))
        ids = np.concatenate([a for a, _ in every])
        order = np.argsort(ids, kind="stable")
        out[name] = (ids[order], np.concatenate([d for _, d in every])[order])
    return out


def _neighbour_rows(comm, part: Part, mesh, H: np.ndarray) -> dict[int, tuple]:
    """Per local halo cell, its neighbours' ``(numbers, barycentres, beds)``, from its owner
    (one exchange with the peers): what the second ring around a border cell needs."""
    sent: list = [None] * comm.size
    for q, cells in zip(part.peers, part.send, strict=True):
        sent[q] = [_rows(part, mesh, H, _neighbours(mesh, c)) for c in cells]
    got = comm.alltoall(sent)
    return {int(c): row for q, cells in zip(part.peers, part.recv, strict=True)
            for c, row in zip(cells, got[q], strict=True)}  # fmt: skip


def _neighbours(mesh, c: int) -> np.ndarray:
    """Local cell ``c``'s neighbours across its edges (all of them for an owned cell)."""
    adjacency = mesh.adjacency()
    return adjacency.indices[adjacency.indptr[c] : adjacency.indptr[c + 1]]


def _rows(part: Part, mesh, H: np.ndarray, cells: np.ndarray) -> tuple:
    """Local ``cells``' numbers, barycentres and beds."""
    return part.cells[cells], mesh.centroid[cells], H[cells]


def _around(part: Part, mesh, H: np.ndarray, rows: dict, i: int) -> tuple:
    """The cells two neighbours or nearer around owned cell ``i``, ``i`` left out, in the
    order of their numbers: ``(numbers, barycentres, beds)``."""
    ring = _neighbours(mesh, i)
    found = [_rows(part, mesh, H, ring)]
    found += [_rows(part, mesh, H, _neighbours(mesh, c)) if c < part.n_owned else rows[int(c)]
              for c in ring]  # fmt: skip
    ids, first = np.unique(np.concatenate([f[0] for f in found]), return_index=True)
    keep = ids != part.cells[i]
    xy, bed = (np.concatenate([f[k] for f in found])[first][keep] for k in (1, 2))
    return ids[keep], xy, bed


@dataclass(frozen=True)
class Owned:
    """The ranks' owned rows of a global array of ``n`` rows: this rank's ``rows``, row
    ``order[i]`` at global row ``ids[i]`` (``ids`` sorted, :meth:`of`; ``order`` None: row
    ``i``). What the run identity reads of a run whose ranks hold their parts alone
    (:func:`fvswe.restart.whole_run`), without the whole array on any rank."""

    comm: Any
    rows: np.ndarray
    ids: np.ndarray
    order: np.ndarray | None
    n: int

    @classmethod
    def of(cls, comm, ids: np.ndarray, n: int) -> Owned:
        """No rows yet, at the global ``ids`` (in the rows' order) of ``n`` (sorted once: give
        each array's rows with ``dataclasses.replace(owned, rows=...)``)."""
        ids = np.asarray(ids, dtype=np.int64)
        if np.all(ids[1:] > ids[:-1]):  # (a part's owned edges: no copies)
            return cls(comm, np.zeros(0), ids, None, n)
        order = np.argsort(ids, kind="stable")
        return cls(comm, np.zeros(0), ids[order], order, n)

    @property
    def dtype(self) -> np.dtype:
        return self.rows.dtype

    def _flat(self) -> np.ndarray:
        return self.rows.reshape(self.rows.shape[0], math.prod(self.rows.shape[1:]))

    def update(self, h) -> None:
        """Feed rank 0's hasher ``h`` the whole array's bytes in global order (those of
        ``np.ascontiguousarray(whole).tobytes()``), :data:`DIGEST_ROWS` rows at a time: for each
        chunk of global rows every rank sends those it owns (``Gatherv``), rank 0 places them
        and hashes the chunk. Rank 0 holds one chunk, not the whole array. Collective."""
        rows = self._flat()
        width = rows.shape[1]
        starts = np.arange(0, self.n, DIGEST_ROWS)
        at = np.searchsorted(self.ids, np.append(starts, self.n))
        counts = self.comm.gather(np.diff(at), root=0)  # each rank's rows in each chunk
        root = self.comm.rank == 0
        for k, a in enumerate(starts):
            m = min(self.n, a + DIGEST_ROWS) - a
            sizes = np.array([c[k] for c in counts]) if root else None
            got_ids = np.empty(m, dtype=np.int64) if root else None
            got = np.empty((m, width), dtype=rows.dtype) if root else None
            part = slice(at[k], at[k + 1])
            self.comm.Gatherv(self.ids[part], [got_ids, sizes] if root else None, root=0)
            mine = np.ascontiguousarray(
                rows[part] if self.order is None else rows[self.order[part]]
            )
            self.comm.Gatherv(mine, [got, sizes * width] if root else None, root=0)
            if root:
                got_ids -= a  # (in place: one chunk's buffers, no more)
                chunk = np.empty_like(got)
                chunk[got_ids] = got
                h.update(chunk)  # (its buffer: the bytes of tobytes(), not copied)

    def uniform(self) -> float | None:
        """The whole array's first entry (global row 0's, as a float) where every entry equals
        it, else None (also where it is empty), on every rank. Collective."""
        flat = self._flat()
        first = 0 if self.order is None or not self.ids.size else self.order[0]
        head = flat[first, 0] if self.ids.size and self.ids[0] == 0 and flat.size else None
        heads = [v for v in self.comm.allgather(head) if v is not None]
        if not heads:
            return None
        same = all(self.comm.allgather(bool(np.all(flat == heads[0]))))
        return float(heads[0]) if same else None


def peak_memory(comm) -> list[int]:
    """Each rank's peak resident memory so far (bytes, ``getrusage``'s ``ru_maxrss``), in rank
    order, on every rank (``comm`` None: this process's alone)."""
    import resource

    unit = 1 if sys.platform == "darwin" else 1024  # bytes there, KiB on Linux
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * unit
    return [peak] if comm is None else comm.allgather(peak)


def device_memory(comm, on_device: bool) -> list[int]:
    """Each rank's device memory in CuPy's pool (bytes; the pool keeps the blocks its arrays
    freed, so this is the high-water mark of the process's device arrays; 0 where the run is
    not ``on_device``), in rank order, on every rank (``comm`` None: this process's alone)."""
    cupy = sys.modules.get("cupy") if on_device else None
    held = int(cupy.get_default_memory_pool().total_bytes()) if cupy is not None else 0
    return [held] if comm is None else comm.allgather(held)


def _threads_per_rank(comm) -> int:
    """The cores of this node shared between its ranks (Numba's thread limit permitting)."""
    import numba
    from mpi4py import MPI

    node = comm.Split_type(MPI.COMM_TYPE_SHARED)
    ranks = node.size
    node.Free()
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(1, min(numba.config.NUMBA_NUM_THREADS, (cores or 1) // ranks))


class DistributedBackend:
    """One backend over the global ``layout``, its cells spread over the ranks of ``comm``
    (a :class:`~fvswe.backends.base.Backend`).

    ``mesh`` is the mesh of ``layout`` (rank 0 partitions it with ``method``);
    ``backend`` the per-rank backend class (CPU or GPU); ``options`` its keyword arguments.
    ``own`` (:func:`read_own`): this rank's part read from its file, ``layout`` then the
    part's own layout and ``mesh`` None: the rank holds nothing global.
    """

    def __init__(
        self, mesh, layout, comm, backend, scheme: str, *, method: str = "auto",
        own: OwnPart | None = None, **options,
    ) -> None:  # fmt: skip
        self.comm = comm
        self.model, self.nvar, self._maps = layout.model, layout.nvar, layout.maxima is not None
        #: Whether the rank holds its part alone (``own``), not the global layout.
        self.holds_part = own is not None
        if own is not None:
            self.part, local = own.part, layout
            self.n_cells, self.n_edges = own.cells, own.edges
        else:
            self.part = on_root(comm, lambda: split(mesh, assign(mesh, comm.size, method)),
                                scatter=True)  # fmt: skip
            local = layout.part(self.part)
            self.n_cells, self.n_edges = layout.n_cells, layout.n_edges
        gpu = backend.name == "gpu"
        if gpu:
            mode, overlap = self._gpu_options(local, scheme, options)
        elif options.get("threads") is None:
            options["threads"] = _threads_per_rank(comm)
        self.local = backend(local, scheme, **options)
        levels = np.empty(0, dtype=np.int64)  # the level edges, by global edge index
        if local.levels is not None:
            levels = self.part.edges[np.flatnonzero(local.levels.edge_level >= 0)]
        if gpu:
            from .backends.gpu.halo import GpuHalo

            # (every part has the whole mesh's tags, hence its tables: the same on every rank)
            tables = local.levels is not None and local.levels.count > 0
            self.local.halo = GpuHalo(comm, self.part, self.local, mode, levels if tables else None,
                                      overlap)  # fmt: skip
        else:
            from .backends.halo import Halo

            self.local.halo = Halo(comm, self.part, self.local.W, levels, self.local.theta)
        self._owned = np.array(comm.allgather(self.part.n_owned))  # each rank's owned cells
        self._ids: np.ndarray | None = None  # the ranks' owned cells (_owned_ids)
        self._cut_at = np.zeros(0, dtype=np.int64)  # count_edges: where this rank's edges go
        self._cut_count = 0

    def _gpu_options(self, local, scheme: str, options: dict) -> tuple[str, bool]:
        """GPU ranks: this rank's device taken, the GPU backend's ``options`` completed (its
        runtime, the variant, graphs) and ``(halo transport, overlap)``. Every rank compiles
        the single device's variant (float32 differs between them), chosen as one device
        chooses it: ``block`` where the global order keeps its blocks compact (Hilbert,
        Morton), each part's cells keeping that order (:meth:`_twice_evaluated`)."""
        from .backends.gpu import block_shape, resolve_variant
        from .backends.gpu.build import runtime_of
        from .backends.gpu.halo import gpu_device, halo_mode, overlap_mode

        runtime = options["runtime"] = runtime_of(options.get("runtime"))
        device, shared = gpu_device(self.comm, runtime)
        runtime.cuda.Device(device).use()
        mode = halo_mode(shared)
        cells = (
            options.get("cells")
            or block_shape(scheme, local.model.layers, local.dtype, local.k).cells
        )
        twice = self._twice_evaluated(local, cells)
        options["variant"] = resolve_variant(options.get("variant"), scheme, self.n_cells,
                                             cells=cells, twice=twice)  # fmt: skip
        # host staging cannot be captured; NCCL in graphs only when asked (FVSWE_NCCL_GRAPHS)
        options["graphs"] = mode == "nccl" and os.environ.get("FVSWE_NCCL_GRAPHS") == "1"
        return mode, overlap_mode(options.pop("overlap", None), options["variant"])

    def _twice_evaluated(self, local, cells: int) -> float:
        """One device's :func:`~fvswe.backends.layout.twice_evaluated` of the whole mesh in
        blocks of ``cells``, from the parts: the ranks' :func:`owned_twice` summed (exact),
        over the whole mesh's edges. Collective."""
        mine = owned_twice(self.part, local.edge_cells, cells)
        return sum(self.comm.allgather(mine)) / max(1, self.n_edges)

    # -- the time loop's view: the local backend's clock and settings ------------------------
    @property
    def name(self) -> str:
        return self.local.name

    @property
    def check_every(self) -> int:
        return self.local.check_every

    def cold_start_note(self) -> str | None:
        return self.local.cold_start_note()

    @property
    def t(self) -> float:
        return self.local.t

    @property
    def steps(self) -> int:
        return self.local.steps

    @property
    def dt(self) -> float:
        return self.local.dt

    @property
    def threads(self) -> int:
        return self.local.threads

    def advance(self, t_end: float, max_steps: int) -> tuple[float, int]:
        """Whole steps on every rank together (the Δt and the last step agree everywhere)."""
        return self.local.advance(t_end, max_steps)

    # -- global views (collective: every rank must call them) --------------------------------
    def get_state(self) -> np.ndarray:
        """The global state in layout order, on every rank."""
        return self.whole(self.local.get_state())

    def whole(self, local: np.ndarray) -> np.ndarray:
        """The global array in layout order, on every rank, of the ranks' per-cell ``local``
        arrays (their owned rows; any width and type; one value a cell gives one a cell).
        Collective."""
        owned = np.ascontiguousarray(local[: self.part.n_owned])
        flat_in = owned.reshape(owned.shape[0], -1)
        width = flat_in.shape[1]
        flat = np.empty((self.n_cells, width), dtype=owned.dtype)
        self.comm.Allgatherv(flat_in, [flat, self._owned * width])
        W = np.empty_like(flat)
        W[self._owned_ids()] = flat
        return W.reshape(self.n_cells, *owned.shape[1:])

    def _owned_ids(self) -> np.ndarray:
        """The ranks' owned global cells concatenated in rank order, on every rank; gathered
        when first asked for (collective) and kept."""
        if self._ids is None:
            self._ids = np.concatenate(self.comm.allgather(self.part.cells[: self.part.n_owned]))
        return self._ids

    @property
    def snapshot_arrays(self) -> dict[str, tuple[int, ...]]:
        """As the ranks' backend's, global (a rank holding its part alone: its part's rows): a
        compensated state's remainders ``C``."""
        local = getattr(self.local, "snapshot_arrays", {})
        rows = self.part.cells.size if self.holds_part else self.n_cells
        return {key: (rows, *shape[1:]) for key, shape in local.items()}

    def set_state(self, W: np.ndarray) -> None:
        self.local.set_state(W[self.part.cells])

    def counters(self) -> dict[str, int | float]:
        """The ranks' event counts summed (in rank order, so every rank gets the same)."""
        every = self.comm.allgather(self.local.counters())
        return {
            key: every[0][key] if key in WHOLE_COUNTERS else sum(c[key] for c in every)
            for key in every[0]
        }

    def snapshot(self) -> dict:
        """As the single-device snapshot: global state, time, steps, pending Δt, counters
        (and the rank's counted edges' volumes, which :meth:`restore` gives back to it).
        A rank holding its part alone keeps its part's rows (owned, then halo), ``cells``
        their global ids and ``owned`` how many it owns (:func:`fvswe.partout.save_checkpoint`
        writes those): nothing global is gathered."""
        part = self.holds_part
        snap = {"W": self.local.get_state() if part else self.get_state(), "t": self.t,
                "steps": self.steps, "dt": self.dt, "counters": self.counters()}  # fmt: skip
        if part:
            snap.update(cells=self.part.cells, owned=self.part.n_owned)
        if self.snapshot_arrays:  # a compensated state's remainders, per owned cell
            C = self.local.remainders()
            snap["C"] = C if part else self.whole(C)
        if self._cut_count:
            snap["cut_volume"] = self.local.edge_volumes().tolist()
        if self._maps:
            snap["maxima"] = self.local.maxima() if part else self.maxima()
        return snap

    def restore(self, snap: dict) -> None:
        """The inverse of :meth:`snapshot`, on any number of ranks (rank 0 keeps the counts);
        a rank holding its part alone is given its part's rows (owned and halo: a snapshot of
        its own, or :func:`fvswe.output.load_checkpoint`'s ``cells``)."""
        counters = snap["counters"]
        if self.comm.rank != 0:
            counters = {
                key: value if key in WHOLE_COUNTERS else type(value)(0)
                for key, value in counters.items()
            }
        rows = slice(None) if self.holds_part else self.part.cells  # (its part's already)
        local = {key: np.asarray(snap[key])[rows] for key in ("W", "C", "maxima") if key in snap}
        self.local.restore({**snap, **local, "counters": counters})
        if hasattr(self.local.halo, "restored"):  # the GPU's: its inflow record
            self.local.halo.restored()

    def maxima(self) -> np.ndarray:
        """The global maximum and arrival maps in layout order, on every rank: each cell's
        row from the rank that owns it, so bitwise one process's."""
        return self.whole(self.local.maxima())

    @property
    def counts_edges(self) -> bool:
        """Whether the ranks' backend counts edge volumes (the CPU's and the GPU's)."""
        return getattr(self.local, "counts_edges", False)

    def count_edges(self, edges: np.ndarray, volumes: np.ndarray | None = None) -> int:
        """As the CPU's :meth:`~fvswe.backends.cpu.CpuBackend.count_edges` of the global
        ``edges`` (from ``volumes``, one row per edge, when given): each rank counts those
        it owns (found among its owned edges: nothing the size of the whole mesh)."""
        edges = np.asarray(edges, dtype=np.int64)
        owned = self.part.edges[: self.part.n_owned_edges]  # (no array over the whole mesh)
        order = np.argsort(owned, kind="stable")
        i = np.searchsorted(owned, edges, sorter=order)
        found = i < owned.size
        found[found] = owned[order[i[found]]] == edges[found]
        at = np.flatnonzero(found)
        start = self._cut_count
        self._cut_at = np.concatenate((self._cut_at, start + at))
        self._cut_count += edges.size
        self.local.count_edges(order[i[at]], None if volumes is None else np.asarray(volumes)[at])
        return start

    def edge_volumes(self) -> np.ndarray:
        """The counted edges' volumes, in the order given to :meth:`count_edges`, on every
        rank: each from the rank that owns its edge, so bitwise one process's."""
        out = np.zeros((self._cut_count, self.model.layers))
        for at, volumes in self.comm.allgather((self._cut_at, self.local.edge_volumes())):
            out[at] = volumes
        return out

    def first_invalid(self) -> tuple[int, int] | None:
        """The first invalid (global cell, component) over all ranks, else None. Each rank
        looks with its own backend first (a GPU's on the device: no state copied to the host)
        and only where one found something do all find the least global key."""
        nvar, n_cells = self.nvar, self.n_cells
        if self.local.halo.min(0.0 if self.local.first_invalid() is None else -1.0) == 0.0:
            return None
        # local order is not global order: every bad owned cell, then the first over all ranks
        cells, comps = np.nonzero(_invalid(self.local, self.part.n_owned, self.model))
        keys = self.part.cells[cells] * nvar + comps
        key = int(keys.min()) if keys.size else n_cells * nvar
        key = int(self.local.halo.min(float(key)))  # exact: keys stay far below 2**53
        return None if key == n_cells * nvar else (key // nvar, key % nvar)

    def layer_mass(self, area: np.ndarray) -> list[float]:
        """Volume of each layer over the global state (with a compensated state's
        remainders), on every rank: each rank's exact partial sums over its owned cells
        (``layer_sums``: the ranks' backend's, a GPU's on the device) added by an
        ``Allreduce`` of int64 (exact, in any order), then rounded once
        (:mod:`fvswe.exactsum`): one process's and one device's bits, whatever the partition,
        nothing gathered. ``area``: the global mesh's, or the part's where the rank holds its
        part alone."""
        mine = area if self.holds_part else area[self.part.cells]
        sums = exactsum.over(self.local.layer_sums(mine, self.part.n_owned), self.comm)
        return [exactsum.rounded(s) for s in sums]

    @property
    def first_clip(self) -> tuple[int, int, float] | None:
        """The earliest clipped depth over all ranks ``(global cell, step, t)``, else None
        (collective: every rank learns it, so every rank stops)."""
        return self._earliest(self.local.first_clip)

    def watch_dt(self, floor: float) -> None:
        self.local.watch_dt(floor)

    @property
    def first_below_floor(self) -> tuple[int, int, float] | None:
        """The earliest step whose stable Δt fell below the floor of :meth:`watch_dt` over
        all ranks ``(global cell, step, t)``, else None (collective)."""
        return self._earliest(self.local.first_below_floor)

    def _earliest(self, record: tuple[int, int, float] | None) -> tuple[int, int, float] | None:
        """The earliest of the ranks' ``(local cell, step, t)`` records, its smallest global
        cell: ``(global cell, step, t)`` on every rank, else None (cell -1: not known)."""
        cell = -1 if record is None or record[0] < 0 else int(self.part.cells[record[0]])
        mine = None if record is None else (record[1], cell, record[2])
        seen = [c for c in self.comm.allgather(mine) if c is not None]
        if not seen:
            return None
        step, cell, t = min(seen)
        return cell, step, t

    @property
    def courant_violation(self) -> tuple[int, int, float, float] | None:
        """The step whose fixed Δt exceeded the stable one ``(global cell, step, t, largest
        Courant number)``, else None; every rank records that step (Δt is global)."""
        v = self.local.courant_violation
        if v is not None and v[0] >= 0:
            v = (int(self.part.cells[v[0]]), *v[1:])
        every = [x for x in self.comm.allgather(v) if x is not None]
        if not every:
            return None
        cells = [x[0] for x in every if x[0] >= 0]
        return min(cells), every[0][1], every[0][2], max(x[3] for x in every)


def owned_twice(part: Part, edge_cells: np.ndarray, cells: int) -> int:
    """How many of ``part``'s owned edges (side ``i`` owned: each edge of the mesh is one
    part's) one device's ``block`` variant evaluates twice in blocks of ``cells``
    (:func:`~fvswe.backends.layout.twice_count` of their global cells); ``edge_cells``: the
    part layout's (local cells)."""
    from .backends.layout import twice_count

    e = np.asarray(edge_cells[: part.n_owned_edges], dtype=np.int64)
    return twice_count(np.where(e >= 0, part.cells[np.maximum(e, 0)], -1), cells)


def _invalid(local, n_owned: int, model) -> np.ndarray:
    """The CPU backend's ``invalid()`` mask of the owned cells, or the same from a GPU's
    state (NaN/inf, or a negative depth)."""
    if hasattr(local, "invalid"):
        return local.invalid()
    W = local.get_state()[:n_owned]
    bad = ~np.isfinite(W)
    for c in model.depth_components:
        bad[:, c] |= W[:, c] < 0
    return bad
