"""A distributed run's halo exchange on GPU ranks (docs/PARALLEL.md): the GPU backend's hook.

The GPU backend calls its :class:`GpuHalo` where its step plan says (the ``exchange``,
``exchange_theta``, ``reduce_dt`` and ``tally`` launches of :mod:`.plan`), on its stream,
through the backend's public view (its control block, device arrays and kernels): the
state's and the limiter's halo rows travel device to device (NCCL) or through host memory
(MPI), Δt is min-reduced, and the boundary tables' fluxes of every rank are summed in the one
device's order, so the owned cells and the counters are bitwise those of one GPU.
"""

from __future__ import annotations

import atexit
import os
import weakref
from typing import Any

import numpy as np

from ...errors import ConfigError
from ...integrators import U
from ...partition import Part
from .. import cuda_header
from ..controls import CTRL_DTYPE
from ..halo import (
    FACES_TAG,
    HALO_TAG,
    THETA_TAG,
    _persistent,
    _span,
    gathered_order,
    padded_rows,
)

#: ``FVSWE_HALO``: how GPU ranks exchange the halo and reduce Δt: ``nccl`` (device to device,
#: one GPU a rank) or ``host`` (staged through host memory and MPI; needed where ranks share
#: a GPU, which NCCL refuses). Unset: ``nccl`` unless some node has more ranks than GPUs.
HALO_MODES = ("nccl", "host")
#: The overlapped exchange's stream priority: CUDA clamps it to the device's greatest.
SIDE_PRIORITY = -1000
#: Whether GPU ranks on the block variant overlap the state's exchange by default
#: (:func:`overlap_mode`): no, as it gained nothing on two H200s (401 µs a step without, 403
#: with; docs/PARALLEL.md).
OVERLAP_DEFAULT = False


#: The halo hook's control-block kernels (docs/PARALLEL.md, GPU ranks): ``dt_load`` copies the
#: control block's Δt (this step's, or with ``next`` a multi-stage step's next one) and
#: ``-stalled`` into a 2-double buffer that the ranks min-reduce, ``dt_store`` writes the
#: reduced pair back, so every rank steps with the global Δt and stops together;
#: ``limit_halo`` lists the halo cells [first, last) whose theta (from their owners) is < 1 in
#: a layer after the step's candidates, so that ``limit_update`` updates their owned
#: neighbours again (docs/SCHEMES.md §13.4).
HALO_SOURCE = r"""
extern "C" __global__ void dt_load(const Ctrl* c, double* red, const int next)
{
    if (threadIdx.x != 0) return;  // one warp (a whole warp: the emulator's unit)
    red[0] = next ? c->dt_next : c->dt;
    red[1] = -(double)c->stalled;
}
extern "C" __global__ void dt_store(Ctrl* c, const double* red, const int next)
{
    if (threadIdx.x != 0) return;
    if (next) c->dt_next = red[0];
    else c->dt = red[0];
    c->stalled = red[1] < 0.0;
}
template <typename T>
__device__ void pack_rows(const T* W, const int* idx, int row, long long n, T* sent)
{
    const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n) sent[i] = W[idx[i / row] * (long long)row + i % row];
}
template <typename T>
__device__ void unpack_rows(const T* buf, const int* idx, int row, long long n, T* W)
{
    const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n) W[idx[i / row] * (long long)row + i % row] = buf[i];
}
#define FVSWE_ROWS(T, bits)                                                                      \
    extern "C" __global__ void pack_f##bits(const T* W, const int* idx, const int row,           \
                                            const long long n, T* sent)                          \
    {                                                                                            \
        pack_rows(W, idx, row, n, sent);                                                         \
    }                                                                                            \
    extern "C" __global__ void unpack_f##bits(const T* buf, const int* idx, const int row,       \
                                              const long long n, T* W)                           \
    {                                                                                            \
        unpack_rows(buf, idx, row, n, W);                                                        \
    }
FVSWE_ROWS(float, 32)
FVSWE_ROWS(double, 64)
extern "C" __global__ void limit_halo(Ctrl* c, const int first, const int last)
{
    const int h = first + blockIdx.x * blockDim.x + threadIdx.x;
    if (h < last && (c->lim_theta[2 * h] < 1.0 || c->lim_theta[2 * h + 1] < 1.0))
        c->lim_cells[c->candidates + atomicAdd(&c->halo_listed, 1)] = h;
}
"""


_HALO_MODULES: dict[int, object] = {}


def halo_module(runtime):
    """The module of a distributed run's halo hook (:data:`HALO_SOURCE`), once per runtime:
    ``pack_f32/f64(W, idx, row, n, sent)`` gathers rows ``idx`` of a flat array of ``row``
    values a cell into ``sent`` (``n`` values), ``unpack_f32/f64`` scatters them back,
    ``dt_load``, ``dt_store`` and ``limit_halo``."""
    key = id(runtime)
    if key not in _HALO_MODULES:
        code = cuda_header.constants().replace("#pragma once\n", "") + HALO_SOURCE
        _HALO_MODULES[key] = runtime.RawModule(code=code, options=("--std=c++17",))
    return _HALO_MODULES[key]


class _DeviceRows:
    """The halo exchange of one device array of ``row`` reals a cell (a GPU part's state, or
    the limiter's theta): ``pack`` gathers the rows each peer needs into one device buffer,
    they travel (``host``: through host memory and MPI persistent requests of tag ``tag``,
    the stream synchronised; ``nccl``: grouped ``send``/``recv`` on the stream), ``unpack``
    scatters the received rows into the halo. ``lane``: the stream and NCCL communicator it
    runs on (default: the halo's, the backend's stream)."""

    def __init__(self, halo: GpuHalo, row: int, dtype, tag: int, lane: tuple = ()) -> None:
        cp = halo._cp
        self._halo, self._row = halo, np.int32(row)
        self._stream, self._nc = lane or (halo._stream, getattr(halo, "_nc", None))
        with halo._stream:
            self._sbuf = cp.empty((halo._send_idx.size, row), dtype=dtype)
            self._rbuf = cp.empty((halo._recv_idx.size, row), dtype=dtype)
        bits = 64 if np.dtype(dtype) == np.float64 else 32
        self._pack = halo.rows_kernel(f"pack_f{bits}")
        self._unpack = halo.rows_kernel(f"unpack_f{bits}")
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
        h, stream = self._halo, self._stream
        with stream:
            self._pack(flat, h._send_idx, self._row, self._sbuf)
            if h._mode == "host":
                self._sbuf.get(stream=stream, out=self._hsend)  # synchronises
                h._mpi.Prequest.Startall(self._requests)
                h._mpi.Request.Waitall(self._requests)
                self._rbuf.set(self._hrecv, stream=stream)
            else:
                self._nccl_exchange()
            self._unpack(self._rbuf, h._recv_idx, self._row, flat)

    def _nccl_exchange(self) -> None:
        h = self._halo
        nccl, nc, s = h._nccl, self._nc, self._stream.ptr
        size, row = self._sbuf.itemsize, int(self._row)
        nccl.groupStart()
        for q, a, n, b, m in h._peers:
            nc.send(self._sbuf.data.ptr + a * row * size, n * row, self._real, q, s)
            nc.recv(self._rbuf.data.ptr + b * row * size, m * row, self._real, q, s)
        nccl.groupEnd()


class GpuHalo:
    """The halo exchange and Δt reduction of one GPU part (the GPU backend's ``halo`` hook).

    Called (:meth:`call`) where the backend's step plan says: ``exchange`` brings a state's
    halo rows up to date (:class:`_DeviceRows`), ``exchange_theta`` the limiter's theta of
    the halo cells, ``reduce_dt`` min-reduces the control block's ``(dt, -stalled)`` pair,
    ``tally`` sums the ranks' boundary fluxes into the inflow counters. ``nccl``: grouped
    ``send``/``recv`` and an ``allReduce`` on the backend's stream (capturable in its CUDA
    graphs); ``host``: the buffers go through host memory and MPI (the stream is
    synchronised). Whole packed rows travel (the halo's ``H`` and area with the state), so
    the second buffer of the gather and slot variants gets its halo rows from the first
    exchange.

    ``level_keys`` (boundaries with tables; None: none in the run): the global edge indices
    of the part's edges with tables. The halo then keeps the inflow counters
    (:meth:`add_inflow`), bitwise those of one device.

    ``overlap`` (the block variant; :func:`overlap_mode`): the state's exchange runs on a
    second stream while the next kernels' interior blocks run (:meth:`start`, :meth:`join`).
    """

    def __init__(
        self,
        comm,
        part: Part,
        backend,
        mode: str,
        level_keys: np.ndarray | None = None,
        overlap: bool = False,
    ) -> None:
        from mpi4py import MPI

        self._mpi, self._comm, self._mode = MPI, comm, mode
        self._backend, self._cp = backend, backend.runtime
        self._module = halo_module(backend.runtime)
        self._k = {n: self._module.get_function(n) for n in ("dt_load", "dt_store", "limit_halo")}
        self._stream = backend.stream
        cupy = self._cp
        W = backend.buffers(0)[U]
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
        #: The leading blocks of the block variant that hold no cell beside a halo cell (0:
        #: no overlap) and the state whose exchange start() left to join().
        self.interior_blocks, self._pending, self.overlap = 0, None, overlap
        lane = self._side_lane(part) if overlap else ()
        self._state = _DeviceRows(self, W[0].size, W.dtype, HALO_TAG, lane)
        self._theta = None
        if backend.model.layers == 2:  # the positivity limiter (docs/SCHEMES.md §13.4)
            self._theta = _DeviceRows(self, 2, np.float64, THETA_TAG)
            self._halo_cells = (np.int32(part.n_owned), np.int32(part.cells.size))
            self._halo_grid = max(1, (part.cells.size - part.n_owned + 127) // 128)
            self._any = np.empty(2, dtype=np.int32)
        self._faces = None
        if backend.linear:  # a cell's k face states, packed as its state (linear.cuh)
            self._faces = _DeviceRows(self, backend.layout.k * W[0].size, W.dtype, FACES_TAG)
            with self._stream:
                self._ext = cupy.empty(14, dtype=np.float64)
            if mode == "host":
                self._hext = np.empty(14, dtype=np.float64)
        self._seen = None
        if level_keys is not None:
            self._take_inflow(level_keys)
        # Load the kernels and make the first NCCL calls (~25 ms) outside any graph capture;
        # they leave the state, theta and the control block as they are (no step taken: no
        # inflow).
        self.exchange(W)
        self.reduce_dt(True)
        if self._theta is not None:
            self._theta.exchange(backend.device_array("lim_theta"))
        if self._seen is not None:
            self.tally()

    def _take_inflow(self, keys: np.ndarray) -> None:
        """The inflow counters become the halo's: the part's step kernels write their edges'
        fluxes into ``_lf`` (as many rows as the most any rank has) and sum none of them (the
        control block's ``n_level`` is 0); :meth:`add_inflow` sums every rank's."""
        cupy = self._cp
        counts, order = gathered_order(self._comm, keys)
        width, rows = padded_rows(counts, order)
        b = self._backend
        with self._stream:
            self._lf = cupy.zeros((width, 2), dtype=np.float64)
            self._all = cupy.zeros((len(counts) * width, 2), dtype=np.float64)
            self._glf = cupy.empty((rows.size, 2), dtype=np.float64)
            self._rows = cupy.asarray(rows, dtype=np.int32)
            self._seen = cupy.asarray(np.full(1, b.read_control("updates"), dtype=np.int64))
        if self._mode == "host":
            self._hlf = np.empty(self._lf.shape)
            self._hall = np.empty(self._all.shape)
        b.point("level_flux", self._lf)
        b.set_control(n_level=0)

    def _side_lane(self, part: Part) -> tuple:
        """The overlap's lane (docs/PARALLEL.md): a second stream, of the device's highest
        priority (its pack, transfer and unpack kernels take the first SMs the interior blocks
        free), its own NCCL communicator (two streams must not share one), the events that
        order it with the backend's stream, and the interior blocks' count (a part's cells
        are [interior | border | halo], its blocks tile the owned cells in that order)."""
        cuda = self._cp.cuda
        self.interior_blocks = int(part.n_interior) // int(self._backend.cells)
        self._side = cuda.Stream(non_blocking=True, priority=SIDE_PRIORITY)
        self._ready, self._done = (cuda.Event(disable_timing=True) for _ in range(2))
        return self._side, _nccl_comm(self._comm, lane=1) if self._mode == "nccl" else None

    def rows_kernel(self, name: str):
        """``kernel(W, idx, row, out)``: a pack or unpack kernel of :func:`halo_module` over
        ``out``'s (pack) or the buffer's (unpack) values."""
        k = self._module.get_function(name)

        def launch(src, idx, row, dst) -> None:
            n = (dst if name.startswith("pack") else src).size
            if n:
                k(((n + 255) // 256,), (256,), (src, idx, row, np.int64(n), dst))

        return launch

    def call(self, launch, bufs: dict) -> None:
        """The step plan's halo op ``launch`` (fvswe.backends.gpu.plan.HOOKS) on the backend's
        buffers ``bufs``."""
        if launch.kernel not in ("exchange", "reduce_dt", "tally"):
            self.join()  # but before those, which read no state (exchange: start joins)
        if launch.kernel == "exchange":
            (self.start if self.overlap else self.exchange)(bufs[launch.dst])
        elif launch.kernel == "exchange_theta":
            self.exchange_theta()
        elif launch.kernel == "reduce_dt":
            self.reduce_dt(launch.now)
        elif launch.kernel == "tally" and self._seen is not None:
            self.tally()
        elif launch.kernel == "reduce_extent":
            self.reduce_extent()
        elif launch.kernel == "exchange_faces":
            self._faces.exchange(self._backend.device_array("lin_faces").reshape(-1))

    def exchange(self, W) -> None:
        """Bring the halo rows of the device state ``W`` up to date with their owners' rows."""
        if self.overlap:
            self.start(W)
            self.join()
        else:
            self._state.exchange(W.reshape(-1))

    def start(self, W) -> None:
        """The exchange of ``W``'s halo rows, overlapped: it waits for what the backend's
        stream has launched so far (an event), and is issued on the second stream at
        :meth:`join`, which the backend calls before the first kernel that reads a halo row
        (the block step's border blocks: its interior blocks run meanwhile). Issued there,
        not here, so that the host emulator (which runs each launch at once) packs the rows
        after the interior blocks ran: a test that they neither read the halo nor write a
        row sent."""
        self.join()
        self._ready.record(self._stream)
        self._pending = W

    def join(self) -> None:
        """The exchange :meth:`start` left, on the second stream after the backend's event,
        and the backend's stream made to wait for its end."""
        if self._pending is None:
            return
        W, self._pending = self._pending, None
        self._side.wait_event(self._ready)
        self._state.exchange(W.reshape(-1))
        self._done.record(self._side)
        self._stream.wait_event(self._done)

    def exchange_theta(self) -> None:
        """The limiter's theta of the halo cells from their owners (limit_theta wrote the
        owned candidates'); the halo cells with theta < 1 are listed after the candidates
        (``limit_halo``), so that ``limit_update`` updates their owned neighbours again as
        one device does. ``nccl``: every step (the host cannot see the device's candidate
        count inside a graph); ``host``: when some rank listed candidates."""
        b = self._backend
        if self._mode == "host" and not self._any_candidates():
            return
        self._theta.exchange(b.device_array("lim_theta"))
        with self._stream:
            self._k["limit_halo"]((self._halo_grid,), (128,), (b.control_block, *self._halo_cells))

    def _any_candidates(self) -> bool:
        """Whether some rank's normal pass listed limiter candidates in this step (host)."""
        off = CTRL_DTYPE.fields["candidates"][1]
        ctrl = self._backend.control_block
        self._any[0] = ctrl[off : off + 4].get(stream=self._stream).view(np.int32)[0] > 0
        self._comm.Allreduce(self._any[:1], self._any[1:], op=self._mpi.MAX)
        return bool(self._any[1])

    def tally(self) -> None:
        """After an update: every rank's level fluxes gathered, put in the global edge order
        and summed into the inflow counters as one device sums them, times the stage's share
        of dt (the kernel ``level_inflow``: the same reduction; an update the ranks skipped
        adds nothing)."""
        b = self._backend
        with self._stream:
            if self._mode == "host":
                self._lf.get(stream=self._stream, out=self._hlf)  # synchronises
                self._comm.Allgather(self._hlf, self._hall)
                self._all.set(self._hall, stream=self._stream)
            else:
                self._nc.allGather(self._lf.data.ptr, self._all.data.ptr, self._lf.size,
                                   self._nccl.NCCL_FLOAT64, self._stream.ptr)  # fmt: skip
            self.rows_kernel("pack_f64")(self._all.reshape(-1), self._rows, np.int32(2), self._glf)
            b.kernel("level_inflow")(
                (1,), (b.block,), (b.control_block, self._glf, np.int32(self._rows.size),
                                   self._seen),
            )  # fmt: skip

    def restored(self) -> None:
        """After the backend's restore: none of its updates taken since is counted yet."""
        if self._seen is not None:
            with self._stream:
                self._seen.fill(self._backend.read_control("updates"))

    def reduce_dt(self, now: bool) -> None:
        """The control block's Δt (``now``: this step's; else a multi-stage step's next)
        becomes the minimum over the ranks (exact: min does not round), and ``stalled`` is set
        on every rank where it is set on one."""
        ctrl, which = self._backend.control_block, np.int32(not now)
        with self._stream:
            self._k["dt_load"]((1,), (32,), (ctrl, self._red, which))
            if self._mode == "host":
                self._red.get(stream=self._stream, out=self._hred)
                self._comm.Allreduce(self._mpi.IN_PLACE, self._hred, op=self._mpi.MIN)
                self._red.set(self._hred, stream=self._stream)
            else:
                ptr = self._red.data.ptr
                self._nc.allReduce(ptr, ptr, 2, self._nccl.NCCL_FLOAT64, self._nccl.NCCL_MIN,
                                   self._stream.ptr)  # fmt: skip
            self._k["dt_store"]((1,), (32,), (ctrl, self._red, which))

    def reduce_extent(self) -> None:
        """The linear reconstruction's variable ranges (``lin_extent``: 7 minima, 7 maxima,
        troubled_pass's) over all ranks, as the CPU ranks' ``Halo.extent``: one min-reduction
        of the minima and the negated maxima (exact: min and negation do not round)."""
        ext, red = self._backend.device_array("lin_extent"), self._ext
        with self._stream:
            red[:7] = ext[:7]
            red[7:] = -ext[7:]
            if self._mode == "host":
                red.get(stream=self._stream, out=self._hext)
                self._comm.Allreduce(self._mpi.IN_PLACE, self._hext, op=self._mpi.MIN)
                red.set(self._hext, stream=self._stream)
            else:
                ptr = red.data.ptr
                self._nc.allReduce(ptr, ptr, 14, self._nccl.NCCL_FLOAT64, self._nccl.NCCL_MIN,
                                   self._stream.ptr)  # fmt: skip
            ext[:7] = red[:7]
            ext[7:] = -red[7:]

    def min(self, value: float) -> float:
        """The minimum of ``value`` over all ranks, on the host (MPI)."""
        return float(self._comm.allreduce(value, op=self._mpi.MIN))


#: One NCCL communicator per MPI communicator (by its Fortran handle) for the whole process,
#: and the halos using them: at exit their backends' CUDA graphs (which captured NCCL calls)
#: are destroyed, then the communicators, before MPI finalizes. Not left to the garbage
#: collector, which the ranks run at different times.
_NCCL: dict[tuple[int, int], Any] = {}
_NCCL_USERS: weakref.WeakSet = weakref.WeakSet()


def _nccl_comm(comm, lane: int = 0):
    """The NCCL communicator of the ranks of ``comm`` for ``lane`` (0: the backend's stream,
    1: the overlapped exchange's; made once; collective then)."""
    from cupy.cuda import nccl

    key = (comm.py2f(), lane)
    if key not in _NCCL:
        os.environ.setdefault("NCCL_NVLS_ENABLE", "0")  # NVLink multicast off (docs/GPU.md)
        uid = comm.bcast(nccl.get_unique_id() if comm.rank == 0 else None)
        if not _NCCL:
            atexit.register(_close_nccl)
        _NCCL[key] = nccl.NcclCommunicator(comm.size, uid, comm.rank)
    return _NCCL[key]


def _close_nccl() -> None:
    for halo in list(_NCCL_USERS):
        halo._backend.drop_graphs()
    for nc in _NCCL.values():
        nc.destroy()
    _NCCL.clear()


def gpu_device(comm, runtime) -> tuple[int, bool]:
    """``(device, shared)``: this rank's GPU (its rank on the node, modulo the node's GPUs)
    and whether some node has more ranks than GPUs (known to every rank)."""
    from mpi4py import MPI

    node = comm.Split_type(MPI.COMM_TYPE_SHARED)
    local, ranks = node.rank, node.size
    node.Free()
    n = runtime.cuda.runtime.getDeviceCount()
    return local % n, bool(comm.allreduce(int(ranks > n), op=MPI.MAX))


def overlap_mode(value: bool | None, variant: str) -> bool:
    """Whether GPU ranks overlap the state's halo exchange with the block step's interior
    blocks: ``value`` (the GPU backend option ``overlap``), else ``FVSWE_OVERLAP`` (``1`` or
    ``0``), else :data:`OVERLAP_DEFAULT`; only the ``block`` variant splits its steps (asked
    for with another variant: a ConfigError; by default: off there)."""
    if value is None:
        env = os.environ.get("FVSWE_OVERLAP", "")
        if env not in ("", "0", "1"):
            raise ConfigError(f"FVSWE_OVERLAP: {env!r} is neither 1 nor 0")
        if env == "":
            return OVERLAP_DEFAULT and variant == "block"
        value = env == "1"
    if value and variant != "block":
        raise ConfigError(f"overlap: only the block variant splits its steps around the halo "
                          f"exchange; this run's variant is {variant}")  # fmt: skip
    return bool(value)


def halo_mode(shared: bool) -> str:
    """``FVSWE_HALO`` (:data:`HALO_MODES`) or, unset, ``host`` when ranks share a GPU."""
    mode = os.environ.get("FVSWE_HALO", "") or ("host" if shared else "nccl")
    if mode not in HALO_MODES:
        raise ConfigError(f"FVSWE_HALO: unknown {mode!r} (choose from {', '.join(HALO_MODES)})")
    if mode == "nccl" and shared:
        raise ConfigError("FVSWE_HALO=nccl: ranks share a GPU, which NCCL refuses; use host")
    return mode
