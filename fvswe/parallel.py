"""Distributed runs on MPI ranks: launch detection, the halo exchange and a distributed backend.

Contract (docs/PARALLEL.md): every rank holds the
global Layout (built from the same inputs, so bitwise the same); rank 0 cuts
it into parts (:mod:`fvswe.partition`) and scatters them; each rank runs an
ordinary backend on its part's Layout, whose volume pass updates the owned
cells only and then calls the :class:`Halo`: the halo states are exchanged
(persistent Isend/Irecv of packed NumPy buffers) and the next Δt is the
min-allreduce of the parts' minima. :class:`DistributedBackend` presents the
ranks to :class:`~fvswe.simulation.Simulation` as one backend over the global
layout: states, snapshots and blow-up cells come back global (allgathered:
every rank gets them), so the time loop needs no MPI of its own.

Nothing here imports mpi4py until a run is launched on more than one process.
"""

from __future__ import annotations

import atexit
import os
import sys
import traceback
import warnings
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

from .boundary import INFLOW_KEYS
from .errors import ConfigError
from .partition import Part, assign, split

#: Environment variables in which launchers (Open MPI, MPICH/Hydra and Intel MPI, MVAPICH)
#: announce the number of processes they started and the rank of each.
LAUNCH_SIZE_VARS = ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "MV2_COMM_WORLD_SIZE")
LAUNCH_RANK_VARS = ("OMPI_COMM_WORLD_RANK", "PMI_RANK", "MV2_COMM_WORLD_RANK")
HALO_TAG = 11
#: The tag of the exchange of the positivity limiter's theta (docs/SCHEMES.md §13.4).
THETA_TAG = 12
#: Counters every rank holds whole (the ranks' level fluxes are summed in global order
#: each step); the others are per-rank counts, summed when reported.
WHOLE_COUNTERS = INFLOW_KEYS


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


class _Rows:
    """The exchange of one per-cell array's halo rows: send and receive buffers are packed
    NumPy arrays bound once to persistent requests (tag ``tag``); :meth:`exchange` gathers
    the owned rows each neighbour needs, starts all requests, waits, and scatters the
    received rows into the halo."""

    def __init__(self, mpi, comm, part: Part, rows: np.ndarray, tag: int) -> None:
        self._mpi = mpi
        shape, dtype = rows.shape[1:], rows.dtype
        self._send = [(i, np.empty((i.size, *shape), dtype=dtype)) for i in part.send]
        self._recv = [(i, np.empty((i.size, *shape), dtype=dtype)) for i in part.recv]
        self._requests = _persistent(
            self, comm, tag,
            [(q, buf) for q, (_, buf) in zip(part.peers, self._recv, strict=True)],
            [(q, buf) for q, (_, buf) in zip(part.peers, self._send, strict=True)],
        )  # fmt: skip

    def exchange(self, rows: np.ndarray) -> None:
        for idx, buf in self._send:
            np.take(rows, idx, axis=0, out=buf)
        self._mpi.Prequest.Startall(self._requests)
        self._mpi.Request.Waitall(self._requests)
        for idx, buf in self._recv:
            rows[idx] = buf


class Halo:
    """The halo exchange and Δt reduction of one part (the CPU backend's ``halo`` hook).

    :meth:`exchange` brings the halo's states up to date, :meth:`exchange_theta` the
    positivity limiter's theta of the halo cells (``theta``: the backend's array, None with
    one layer). ``sum_keys`` are the global positions of the values this rank passes to
    :meth:`sum`.
    """

    def __init__(
        self, comm, part: Part, W: np.ndarray, sum_keys: np.ndarray, theta: np.ndarray | None
    ) -> None:
        from mpi4py import MPI

        self._mpi, self._comm = MPI, comm
        self._states = _Rows(MPI, comm, part, W, HALO_TAG)
        self._theta = None if theta is None else _Rows(MPI, comm, part, theta, THETA_TAG)
        self._flag = np.empty(1, dtype=np.int32)
        self._flag_any = np.empty(1, dtype=np.int32)
        self._dt = np.empty(1, dtype=np.float64)
        self._dt_min = np.empty(1, dtype=np.float64)
        self._sum_counts, self._sum_order = gathered_order(comm, sum_keys)
        self._sum_buf = np.empty(self._sum_order.size, dtype=np.float64)

    def exchange(self, W: np.ndarray) -> None:
        """Bring the halo rows of ``W`` up to date with their owners' rows."""
        self._states.exchange(W)

    def exchange_theta(self, theta: np.ndarray) -> None:
        """Bring the halo rows of the limiter's ``theta`` up to date with their owners'."""
        self._theta.exchange(theta)

    def any(self, flag: bool) -> bool:
        """Whether ``flag`` is true on some rank."""
        self._flag[0] = flag
        self._comm.Allreduce(self._flag, self._flag_any, op=self._mpi.MAX)
        return bool(self._flag_any[0])

    def min(self, value: float) -> float:
        """The minimum of ``value`` over all ranks (exact: min does not round)."""
        self._dt[0] = value
        self._comm.Allreduce(self._dt, self._dt_min, op=self._mpi.MIN)
        return float(self._dt_min[0])

    def sum(self, values: np.ndarray) -> float:
        """``np.sum`` of all ranks' ``values`` in the order of their keys: the one device's
        sum over the same values, bit for bit (pairwise summation of the same array)."""
        values = np.ascontiguousarray(values, dtype=np.float64)
        self._comm.Allgatherv(values, [self._sum_buf, self._sum_counts])
        return float(np.sum(self._sum_buf[self._sum_order]))


def gathered_order(comm, keys: np.ndarray) -> tuple[list[int], np.ndarray]:
    """``(counts, order)`` of the ranks' ``keys`` (distinct global positions): how many each
    rank holds, and the positions in their concatenation (rank order) sorted by key, so the
    ranks' values gathered and taken in ``order`` stand as on one device."""
    every = comm.allgather(np.asarray(keys))
    return [k.size for k in every], np.argsort(np.concatenate(every), kind="stable")


def padded_rows(counts: list[int], order: np.ndarray) -> tuple[int, np.ndarray]:
    """``(width, rows)``: with each rank's values padded to ``width`` rows (the most any
    rank has, at least 1) and stacked in rank order, ``rows`` are the rows of the values
    taken in ``order`` (:func:`gathered_order`)."""
    width = max(1, *counts)
    first = np.arange(len(counts)) * width - np.cumsum([0, *counts[:-1]])  # rank r: r * width
    return width, (np.arange(order.size) + np.repeat(first, counts))[order]


#: ``FVSWE_HALO``: how GPU ranks exchange the halo and reduce Δt: ``nccl`` (device to device,
#: one GPU a rank) or ``host`` (staged through host memory and MPI; needed where ranks share
#: a GPU, which NCCL refuses). Unset: ``nccl`` unless some node has more ranks than GPUs.
HALO_MODES = ("nccl", "host")


class _DeviceRows:
    """The halo exchange of one device array of ``row`` reals a cell (a GPU part's state, or
    the limiter's theta): ``pack`` gathers the rows each peer needs into one device buffer,
    they travel (``host``: through host memory and MPI persistent requests of tag ``tag``,
    the stream synchronised; ``nccl``: grouped ``send``/``recv`` on the stream), ``unpack``
    scatters the received rows into the halo."""

    def __init__(self, halo: GpuHalo, row: int, dtype, tag: int) -> None:
        import cupy

        self._halo, self._row = halo, np.int32(row)
        with halo._stream:
            self._sbuf = cupy.empty((halo._send_idx.size, row), dtype=dtype)
            self._rbuf = cupy.empty((halo._recv_idx.size, row), dtype=dtype)
        if halo._mode == "host":
            comm = halo._comm
            self._hsend = np.empty(self._sbuf.shape, dtype=dtype)
            self._hrecv = np.empty(self._rbuf.shape, dtype=dtype)
            self._requests = _persistent(
                self, comm, tag,
                [(q, self._hrecv[b : b + m]) for q, _, _, b, m in halo._peers],
                [(q, self._hsend[a : a + n]) for q, a, n, _, _ in halo._peers],
            )  # fmt: skip
        else:
            from cupy.cuda import nccl

            self._real = nccl.NCCL_FLOAT64 if np.dtype(dtype) == np.float64 else nccl.NCCL_FLOAT32

    def exchange(self, flat) -> None:
        """Bring the halo rows of the flat device array ``flat`` up to date with their owners'."""
        h = self._halo
        with h._stream:
            h._k["pack"](flat, h._send_idx, self._row, self._sbuf)
            if h._mode == "host":
                self._sbuf.get(stream=h._stream, out=self._hsend)  # synchronises
                h._mpi.Prequest.Startall(self._requests)
                h._mpi.Request.Waitall(self._requests)
                self._rbuf.set(self._hrecv, stream=h._stream)
            else:
                self._nccl_exchange()
            h._k["unpack"](self._rbuf, h._recv_idx, self._row, flat)

    def _nccl_exchange(self) -> None:
        h = self._halo
        nccl, nc, s = h._nccl, h._nc, h._stream.ptr
        size, row = self._sbuf.itemsize, int(self._row)
        nccl.groupStart()
        for q, a, n, b, m in h._peers:
            nc.send(self._sbuf.data.ptr + a * row * size, n * row, self._real, q, s)
            nc.recv(self._rbuf.data.ptr + b * row * size, m * row, self._real, q, s)
        nccl.groupEnd()


class GpuHalo:
    """The halo exchange and Δt reduction of one GPU part (the GPU backend's ``halo`` hook).

    After every kernel of a step (:meth:`after`): once the step's update is final (after
    the normal pass, or with two layers after the positivity limiter's ``limit_update``),
    the state's halo rows are exchanged (:class:`_DeviceRows`); after ``limit_theta``, the
    limiter's theta of the halo cells (:meth:`exchange_theta`); after a Δt pass, the
    control block's ``(dt, -stalled)`` pair is min-reduced. ``nccl``: grouped
    ``send``/``recv`` and an ``allReduce`` on the backend's stream (capturable in its CUDA
    graphs); ``host``: the buffers go through host memory and MPI (the stream is
    synchronised). Whole packed rows travel (the halo's ``H`` and area with the state), so
    the second buffer of the gather and slot variants gets its halo rows from the first
    exchange.

    ``level_keys`` (boundaries with tables; None: none in the run): the global edge indices
    of the part's edges with tables. The halo then keeps the inflow counters
    (:meth:`add_inflow`), bitwise those of one device.
    """

    def __init__(
        self, comm, part: Part, backend, mode: str, level_keys: np.ndarray | None = None
    ) -> None:
        import cupy
        from mpi4py import MPI

        from .backends.gpu import halo_kernels

        self._mpi, self._comm, self._mode = MPI, comm, mode
        self._backend, self._k = backend, halo_kernels()
        self._stream = backend.stream
        W = backend._W
        with self._stream:
            self._send_idx = cupy.asarray(np.concatenate([np.zeros(0, np.int64), *part.send]),
                                          dtype=np.int32)  # fmt: skip
            self._recv_idx = cupy.asarray(np.concatenate([np.zeros(0, np.int64), *part.recv]),
                                          dtype=np.int32)  # fmt: skip
            self._red = cupy.empty(2, dtype=np.float64)
        #: (peer, first send row, send rows, first receive row, receive rows)
        self._peers = [
            (q, *_span(part.send, p), *_span(part.recv, p)) for p, q in enumerate(part.peers)
        ]
        if mode == "host":
            self._hred = np.empty(2, dtype=np.float64)
        else:
            from cupy.cuda import nccl

            self._nccl, self._nc = nccl, _nccl_comm(comm)
            _NCCL_USERS.add(self)
        self._state = _DeviceRows(self, W[0].size, W.dtype, HALO_TAG)
        self._theta = None
        if backend.model.layers == 2:  # the positivity limiter (docs/SCHEMES.md §13.4)
            self._theta = _DeviceRows(self, 2, np.float64, THETA_TAG)
            self._halo_cells = (np.int32(part.n_owned), np.int32(part.cells.size))
            self._halo_grid = max(1, (part.cells.size - part.n_owned + 127) // 128)
            self._any = np.empty(2, dtype=np.int32)
        self._seen = None
        if level_keys is not None:
            self._take_inflow(level_keys)
        # Load the kernels and make the first NCCL calls (~25 ms) outside any graph capture;
        # they leave the state, theta and the control block as they are (no step taken: no
        # inflow).
        self.exchange(W)
        self.reduce_dt()
        if self._theta is not None:
            self._theta.exchange(backend._pointed["lim_theta"])
        if self._seen is not None:
            self.add_inflow()

    def _take_inflow(self, keys: np.ndarray) -> None:
        """The inflow counters become the halo's: the part's step kernels write their edges'
        fluxes into ``_lf`` (as many rows as the most any rank has) and sum none of them (the
        control block's ``n_level`` is 0); :meth:`add_inflow` sums every rank's."""
        import cupy

        from .backends.cuda_header import CTRL_DTYPE

        counts, order = gathered_order(self._comm, keys)
        width, rows = padded_rows(counts, order)
        b = self._backend
        with self._stream:
            self._lf = cupy.zeros((width, 2), dtype=np.float64)
            self._all = cupy.zeros((len(counts) * width, 2), dtype=np.float64)
            self._glf = cupy.empty((rows.size, 2), dtype=np.float64)
            self._rows = cupy.asarray(rows, dtype=np.int32)
            self._seen = cupy.full(1, b.steps, dtype=np.int64)
        if self._mode == "host":
            self._hlf = np.empty(self._lf.shape)
            self._hall = np.empty(self._all.shape)
        b._pointed["level_flux"] = self._lf
        ctrl = np.zeros(1, dtype=CTRL_DTYPE)
        ctrl["level_flux"], ctrl["n_level"] = self._lf.data.ptr, 0
        b._write_ctrl(ctrl, ("level_flux", "n_level"))

    def after(self, kernel: str, op: int, W) -> None:
        """Follow ``kernel`` of a step plan (fvswe.backends.gpu.step_plan) with ``op``
        (fvswe.backends.cuda_header OP_*), which wrote ``W``."""
        from .backends.cuda_header import OP_DT, OP_UPDATE

        if kernel == "limit_theta":
            self.exchange_theta()
        elif kernel == "limit_update" or (op & OP_UPDATE and self._theta is None):
            self.exchange(W)
            if self._seen is not None:
                self.add_inflow()
        if op & OP_DT:
            self.reduce_dt()

    def exchange(self, W) -> None:
        """Bring the halo rows of the device state ``W`` up to date with their owners' rows."""
        self._state.exchange(W.reshape(-1))

    def exchange_theta(self) -> None:
        """The limiter's theta of the halo cells from their owners (limit_theta wrote the
        owned candidates'); the halo cells with theta < 1 are listed after the candidates
        (``limit_halo``), so that ``limit_update`` updates their owned neighbours again as
        one device does. ``nccl``: every step (the host cannot see the device's candidate
        count inside a graph); ``host``: when some rank listed candidates."""
        b = self._backend
        if self._mode == "host" and not self._any_candidates():
            return
        self._theta.exchange(b._pointed["lim_theta"])
        with self._stream:
            self._k["limit_halo"]((self._halo_grid,), (128,), (b._ctrl, *self._halo_cells))

    def _any_candidates(self) -> bool:
        """Whether some rank's normal pass listed limiter candidates in this step (host)."""
        from .backends.cuda_header import CTRL_DTYPE

        off = CTRL_DTYPE.fields["candidates"][1]
        ctrl = self._backend._ctrl
        self._any[0] = ctrl[off : off + 4].get(stream=self._stream).view(np.int32)[0] > 0
        self._comm.Allreduce(self._any[:1], self._any[1:], op=self._mpi.MAX)
        return bool(self._any[1])

    def add_inflow(self) -> None:
        """After an update: every rank's level fluxes gathered, put in the global edge order
        and summed into the inflow counters as one device sums them (the kernel
        ``level_inflow``: the same reduction; a step the ranks skipped adds nothing)."""
        b = self._backend
        with self._stream:
            if self._mode == "host":
                self._lf.get(stream=self._stream, out=self._hlf)  # synchronises
                self._comm.Allgather(self._hlf, self._hall)
                self._all.set(self._hall, stream=self._stream)
            else:
                self._nc.allGather(self._lf.data.ptr, self._all.data.ptr, self._lf.size,
                                   self._nccl.NCCL_FLOAT64, self._stream.ptr)  # fmt: skip
            self._k["pack"](self._all.reshape(-1), self._rows, np.int32(2), self._glf)
            b._k["level_inflow"](
                (1,), (b.block,), (b._ctrl, self._glf, np.int32(self._rows.size), self._seen)
            )

    def restored(self) -> None:
        """After the backend's restore: its step count is the snapshot's, none taken since."""
        if self._seen is not None:
            with self._stream:
                self._seen.fill(self._backend.steps)

    def reduce_dt(self) -> None:
        """The control block's Δt becomes the minimum over the ranks (exact: min does not
        round), and ``stalled`` is set on every rank where it is set on one."""
        b = self._backend
        with self._stream:
            self._k["dt_load"]((1,), (1,), (b._ctrl, self._red))
            if self._mode == "host":
                self._red.get(stream=self._stream, out=self._hred)
                self._comm.Allreduce(self._mpi.IN_PLACE, self._hred, op=self._mpi.MIN)
                self._red.set(self._hred, stream=self._stream)
            else:
                ptr = self._red.data.ptr
                self._nc.allReduce(ptr, ptr, 2, self._nccl.NCCL_FLOAT64, self._nccl.NCCL_MIN,
                                   self._stream.ptr)  # fmt: skip
            self._k["dt_store"]((1,), (1,), (b._ctrl, self._red))

    def min(self, value: float) -> float:
        """The minimum of ``value`` over all ranks, on the host (MPI)."""
        return float(self._comm.allreduce(value, op=self._mpi.MIN))


def _span(lists: tuple[np.ndarray, ...], p: int) -> tuple[int, int]:
    """``(first row, rows)`` of list ``p`` of ``lists`` concatenated."""
    return sum(a.size for a in lists[:p]), lists[p].size


#: One NCCL communicator per MPI communicator (by its Fortran handle) for the whole process,
#: and the halos using them: at exit their backends' CUDA graphs (which captured NCCL calls)
#: are destroyed, then the communicators, before MPI finalizes. Not left to the garbage
#: collector, which the ranks run at different times.
_NCCL: dict[int, Any] = {}
_NCCL_USERS: weakref.WeakSet = weakref.WeakSet()


def _nccl_comm(comm):
    """The NCCL communicator of the ranks of ``comm`` (made once; collective then)."""
    from cupy.cuda import nccl

    key = comm.py2f()
    if key not in _NCCL:
        os.environ.setdefault("NCCL_NVLS_ENABLE", "0")  # NVLink multicast off (docs/GPU.md)
        uid = on_root(comm, nccl.get_unique_id)
        if not _NCCL:
            atexit.register(_close_nccl)
        _NCCL[key] = nccl.NcclCommunicator(comm.size, uid, comm.rank)
    return _NCCL[key]


def _close_nccl() -> None:
    for halo in list(_NCCL_USERS):
        halo._backend._graphs.clear()
    for nc in _NCCL.values():
        nc.destroy()
    _NCCL.clear()


def _gpu_device(comm) -> tuple[int, bool]:
    """``(device, shared)``: this rank's GPU (its rank on the node, modulo the node's GPUs)
    and whether some node has more ranks than GPUs (known to every rank)."""
    import cupy
    from mpi4py import MPI

    node = comm.Split_type(MPI.COMM_TYPE_SHARED)
    local, ranks = node.rank, node.size
    node.Free()
    n = cupy.cuda.runtime.getDeviceCount()
    return local % n, bool(comm.allreduce(int(ranks > n), op=MPI.MAX))


def halo_mode(shared: bool) -> str:
    """``FVSWE_HALO`` (:data:`HALO_MODES`) or, unset, ``host`` when ranks share a GPU."""
    mode = os.environ.get("FVSWE_HALO", "") or ("host" if shared else "nccl")
    if mode not in HALO_MODES:
        raise ConfigError(f"FVSWE_HALO: unknown {mode!r} (choose from {', '.join(HALO_MODES)})")
    if mode == "nccl" and shared:
        raise ConfigError("FVSWE_HALO=nccl: ranks share a GPU, which NCCL refuses; use host")
    return mode


def _threads_per_rank(comm) -> int:
    """The cores of this node shared between its ranks (Numba's thread limit permitting)."""
    import numba
    from mpi4py import MPI

    node = comm.Split_type(MPI.COMM_TYPE_SHARED)
    ranks = node.size
    node.Free()
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(1, min(numba.config.NUMBA_NUM_THREADS, (cores or 1) // ranks))


def _free(requests: list) -> None:
    for request in requests:
        request.Free()


def _persistent(owner, comm, tag: int, recv: list, send: list) -> list:
    """Persistent requests of tag ``tag``: a receive per ``(peer, buffer)`` of ``recv``, then a
    send per one of ``send``; freed with ``owner``, before MPI finalises at exit."""
    requests = [comm.Recv_init(buf, source=q, tag=tag) for q, buf in recv]
    requests += [comm.Send_init(buf, dest=q, tag=tag) for q, buf in send]
    weakref.finalize(owner, _free, requests)
    return requests


class DistributedBackend:
    """One backend over the global ``layout``, its cells spread over the ranks of ``comm``
    (a :class:`~fvswe.backends.base.Backend`).

    ``mesh`` is the mesh of ``layout`` (rank 0 partitions it with ``method``);
    ``backend`` the per-rank backend class (CPU); ``options`` its keyword arguments.
    """

    def __init__(
        self, mesh, layout, comm, backend, scheme: str, *, method: str = "auto", **options
    ) -> None:
        gpu = backend.name == "gpu"
        if gpu:
            import cupy

            from .backends.gpu import resolve_variant

            device, shared = _gpu_device(comm)
            cupy.cuda.Device(device).use()
            mode = halo_mode(shared)
            # every rank compiles the single device's variant (float32 differs between them)
            options["variant"] = resolve_variant(options.get("variant"), scheme, layout.n_cells)
            # host staging cannot be captured; NCCL in graphs only when asked (FVSWE_NCCL_GRAPHS)
            options["graphs"] = mode == "nccl" and os.environ.get("FVSWE_NCCL_GRAPHS") == "1"
        elif options.get("threads") is None:
            options["threads"] = _threads_per_rank(comm)
        self.comm = comm
        self.layout = layout
        self.part: Part = on_root(
            comm, lambda: split(mesh, assign(mesh, comm.size, method)), scatter=True
        )
        local = layout.part(self.part)
        self.local = backend(local, scheme, **options)
        levels = np.empty(0, dtype=np.int64)  # the level edges, by global edge index
        if local.levels is not None:
            levels = self.part.edges[np.flatnonzero(local.levels.edge_level >= 0)]
        if gpu:
            tables = layout.levels is not None and layout.levels.count > 0
            self.local.halo = GpuHalo(comm, self.part, self.local, mode, levels if tables else None)
        else:
            self.local.halo = Halo(comm, self.part, self.local.W, levels, self.local.theta)
        owned = comm.allgather(self.part.cells[: self.part.n_owned])
        self._counts = np.array([o.size for o in owned]) * layout.nvar
        self._gather = np.concatenate(owned)

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
        lay = self.layout
        owned = np.ascontiguousarray(self.local.get_state()[: self.part.n_owned])
        flat = np.empty((lay.n_cells, lay.nvar), dtype=lay.dtype)
        self.comm.Allgatherv(owned, [flat, self._counts])
        W = np.empty_like(flat)
        W[self._gather] = flat
        return W

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
        """As the single-device snapshot: global state, time, steps, pending Δt, counters."""
        return {"W": self.get_state(), "t": self.t, "steps": self.steps, "dt": self.dt,
                "counters": self.counters()}  # fmt: skip

    def restore(self, snap: dict) -> None:
        """The inverse of :meth:`snapshot`, on any number of ranks (rank 0 keeps the counts)."""
        counters = snap["counters"]
        if self.comm.rank != 0:
            counters = {
                key: value if key in WHOLE_COUNTERS else type(value)(0)
                for key, value in counters.items()
            }
        self.local.restore({**snap, "W": snap["W"][self.part.cells], "counters": counters})
        if isinstance(self.local.halo, GpuHalo):
            self.local.halo.restored()

    def first_invalid(self) -> tuple[int, int] | None:
        """The first invalid (global cell, component) over all ranks, else None."""
        nvar = self.layout.nvar
        # local order is not global order: every bad owned cell, then the first over all ranks
        cells, comps = np.nonzero(_invalid(self.local, self.part.n_owned, self.layout.model))
        keys = self.part.cells[cells] * nvar + comps
        key = int(keys.min()) if keys.size else self.layout.n_cells * nvar
        key = int(self.local.halo.min(float(key)))  # exact: keys stay far below 2**53
        return None if key == self.layout.n_cells * nvar else (key // nvar, key % nvar)

    def layer_mass(self, area: np.ndarray) -> list[float]:
        """Volume of each layer over the global state, summed as one process sums it."""
        return self.layout.model.layer_volumes(self.get_state(), area)

    @property
    def first_clip(self) -> tuple[int, int, float] | None:
        """The earliest clipped depth over all ranks ``(global cell, step, t)``, else None
        (collective: every rank learns it, so every rank stops)."""
        clip = self.local.first_clip
        mine = None if clip is None else (clip[1], int(self.part.cells[clip[0]]), clip[2])
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
