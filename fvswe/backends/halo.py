"""A distributed run's halo exchange on CPU ranks, and the MPI pieces every halo shares.

Each rank's backend runs its part's layout (:mod:`fvswe.partition`) and calls its halo where
its step plan says (:mod:`fvswe.integrators`: the ``exchange`` and ``reduce_dt`` ops):
:class:`Halo` brings the halo rows of a state (or the limiter's theta) up to date with their
owners' and reduces Δt, flags and sums over the ranks, so that the owned cells' results are
bitwise those of one process. mpi4py is imported only when a halo is made.
"""

from __future__ import annotations

import weakref

import numpy as np

from ..partition import Part

HALO_TAG = 11
#: The tag of the exchange of the positivity limiter's theta (docs/SCHEMES.md §13.4).
THETA_TAG = 12
#: The tags of the exchange of the linear reconstruction's face states and beds (§19).
FACES_TAG, FACE_BEDS_TAG = 13, 14


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
    one layer), :meth:`exchange_faces` the linear reconstruction's face states. ``sum_keys``
    are the global positions of the values this rank passes to :meth:`sum`.
    """

    def __init__(
        self, comm, part: Part, W: np.ndarray, sum_keys: np.ndarray, theta: np.ndarray | None
    ) -> None:
        from mpi4py import MPI

        self._part = part
        self._faces: tuple[_Rows, _Rows] | None = None  # made at the first exchange_faces
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

    def exchange_faces(self, W: np.ndarray, H: np.ndarray) -> None:
        """Bring the halo cells' face states ``W`` ``(L k, nvar)`` and beds ``H`` ``(L k,)``
        (docs/SCHEMES.md §19) up to date with their owners' (each cell's k slots a row)."""
        L = self._part.cells.size
        rows = W.reshape(L, -1), H.reshape(L, -1)
        if self._faces is None:
            mpi, comm, part = self._mpi, self._comm, self._part
            self._faces = (_Rows(mpi, comm, part, rows[0], FACES_TAG),
                           _Rows(mpi, comm, part, rows[1], FACE_BEDS_TAG))  # fmt: skip
        for exchange, r in zip(self._faces, rows, strict=True):
            exchange.exchange(r)

    def extent(self, extent: np.ndarray) -> None:
        """``extent`` (7 minima, then 7 maxima) reduced in place over all ranks (exact)."""
        n = extent.size // 2
        for part, op in ((extent[:n], self._mpi.MIN), (extent[n:], self._mpi.MAX)):
            local = part.copy()
            self._comm.Allreduce(local, part, op=op)

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


def _span(lists: tuple[np.ndarray, ...], p: int) -> tuple[int, int]:
    """``(first row, rows)`` of list ``p`` of ``lists`` concatenated."""
    return sum(a.size for a in lists[:p]), lists[p].size
