"""Cell orderings (renumberings) and the metrics that judge them.

Each ordering returns ``perm`` with new cell ``n`` = old cell ``perm[n]``.
The bandwidth is the paper's Table 3 metric: ``max |i - j|`` over pairs of
neighbouring cells.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numba import njit, prange
from scipy.sparse.csgraph import reverse_cuthill_mckee

from ..errors import ConfigError
from .core import Mesh, _n_chunks

#: Bits per coordinate of the space-filling-curve grid (2^16 x 2^16 cells).
CURVE_BITS = 16


def _none(mesh: Mesh, seed: int) -> np.ndarray:
    return np.arange(mesh.n_cells, dtype=np.int64)


def _rcm(mesh: Mesh, seed: int) -> np.ndarray:
    """SciPy's reverse Cuthill-McKee (MATLAB's symrcm in the paper)."""
    return reverse_cuthill_mckee(mesh.adjacency(), symmetric_mode=True).astype(np.int64)


def _gps(mesh: Mesh, seed: int) -> np.ndarray:
    from .gps import gps_ordering

    return gps_ordering(mesh.adjacency())


def _random(mesh: Mesh, seed: int) -> np.ndarray:
    """A seeded random permutation: the worst case for locality."""
    if not isinstance(seed, int | np.integer) or seed < 0:
        raise ConfigError(f"seed: a non-negative integer for the random ordering, not {seed!r}")
    return np.random.default_rng(seed).permutation(mesh.n_cells).astype(np.int64)


def _grid_coords(points: np.ndarray, bits: int) -> tuple[np.ndarray, np.ndarray]:
    """Barycentres scaled to integer coordinates on a ``2^bits`` square grid."""
    lo = points.min(axis=0)
    span = max(float((points.max(axis=0) - lo).max()), np.finfo(float).tiny)
    q = np.floor((points - lo) / span * (2**bits - 1)).astype(np.int64)
    return q[:, 0], q[:, 1]


def _spread_bits(v: np.ndarray) -> np.ndarray:
    """Insert a zero bit after each of the low 32 bits of ``v``."""
    v = v & 0xFFFFFFFF
    for shift, mask in (
        (16, 0x0000FFFF0000FFFF),
        (8, 0x00FF00FF00FF00FF),
        (4, 0x0F0F0F0F0F0F0F0F),
        (2, 0x3333333333333333),
        (1, 0x5555555555555555),
    ):
        v = (v | (v << shift)) & mask
    return v


def morton_key(points: np.ndarray, bits: int = CURVE_BITS) -> np.ndarray:
    """Z-order (Morton) index of each point: x and y bits interleaved."""
    x, y = _grid_coords(points, bits)
    return _spread_bits(x) | (_spread_bits(y) << 1)


@njit(cache=True, parallel=True)
def _hilbert_walk(x, y, bits):
    """Hilbert index of each integer point ``(x, y)`` on a ``2^bits`` grid."""
    n = np.int64(1) << bits
    d = np.zeros(x.size, np.int64)
    for p in prange(x.size):
        px, py, dp = x[p], y[p], np.int64(0)
        s = n >> 1
        while s > 0:
            rx = 1 if (px & s) > 0 else 0
            ry = 1 if (py & s) > 0 else 0
            dp += s * s * ((3 * rx) ^ ry)
            if ry == 0:
                if rx == 1:
                    px = n - 1 - px
                    py = n - 1 - py
                px, py = py, px
            s >>= 1
        d[p] = dp
    return d


def hilbert_key(points: np.ndarray, bits: int = CURVE_BITS) -> np.ndarray:
    """Hilbert-curve index of each point on a ``2^bits`` grid.

    Walks the quadrant levels from the coarsest, adding each quadrant's offset
    along the curve and rotating/reflecting the remaining coordinates into the
    sub-square's frame (compiled: one pass per point instead of ``bits`` passes
    over temporary arrays).
    """
    x, y = _grid_coords(points, bits)
    return _hilbert_walk(x, y, bits)


#: Bits of the digit that each pass of :func:`_radix_argsort` sorts by.
RADIX_BITS = 8


@njit(cache=True, parallel=True)
def _radix_argsort(keys, bits, n_chunks):
    """Stable argsort of non-negative integer keys below ``2^bits``: least significant
    8-bit digit first, one counting sort per digit (linear; NumPy's stable sort of int64 is
    a merge sort). Each pass counts and scatters ``n_chunks`` pieces of the input in
    parallel, chunk ``c``'s keys of digit ``d`` going after those of the chunks before it:
    the output is the one stable order, whatever the number of threads or chunks."""
    n = keys.size
    n_digits = 1 << RADIX_BITS
    order = np.arange(n)
    key = keys.copy()
    spare_order = np.empty(n, np.int64)
    spare_key = np.empty_like(key)
    for shift in range(0, bits, RADIX_BITS):
        at = np.zeros((n_chunks, n_digits), np.int64)
        for c in prange(n_chunks):
            for i in range(c * n // n_chunks, (c + 1) * n // n_chunks):
                at[c, (key[i] >> shift) & (n_digits - 1)] += 1
        total = 0
        for d in range(n_digits):
            for c in range(n_chunks):
                total, at[c, d] = total + at[c, d], total
        for c in prange(n_chunks):
            for i in range(c * n // n_chunks, (c + 1) * n // n_chunks):
                d = (key[i] >> shift) & (n_digits - 1)
                spare_order[at[c, d]] = order[i]
                spare_key[at[c, d]] = key[i]
                at[c, d] += 1
        order, spare_order = spare_order, order
        key, spare_key = spare_key, key
    return order


def _curve(key: Callable[[np.ndarray], np.ndarray]) -> Callable[[Mesh, int], np.ndarray]:
    def order(mesh: Mesh, seed: int) -> np.ndarray:
        keys = key(mesh.centroid)
        return _radix_argsort(keys, 2 * CURVE_BITS, _n_chunks(keys.size))

    order.__doc__ = f"Cells sorted along the curve of ``{key.__name__}`` through their barycentres."
    return order


ORDERINGS: dict[str, Callable[[Mesh, int], np.ndarray]] = {
    "none": _none,
    "rcm": _rcm,
    "gps": _gps,
    "random": _random,
    "hilbert": _curve(hilbert_key),
    "morton": _curve(morton_key),
}


#: What ``order="auto"`` means on each backend: the ordering that the committed study
#: ``benchmarks/results/reorder_<backend>/`` (``benchmarks/reorder_impact.py``) recommends
#: at the end of its ``tables.md``; a test keeps the two in step. cpu: RCM, the fastest of
#: rcm/gps/hilbert/morton at 64k cells on a shared 2-core VM, though none beat the family's
#: own order beyond the noise there. gpu: Hilbert, the fastest from 256k cells on an H100
#: with the block variant it selects (1M cells: -30.0 % against the original order, Morton
#: -29.5 %, RCM -3.6 %; 2026-11-23).
AUTO: dict[str, str] = {"gpu": "hilbert", "cpu": "rcm"}


def resolve(method: str, backend: str = "cpu") -> str:
    """The concrete ordering of ``method``: ``auto`` becomes ``AUTO[backend]``, others stay."""
    if method != "auto":
        return method
    try:
        return AUTO[backend]
    except KeyError:
        raise ConfigError(
            f"ordering auto: no recommendation for backend {backend!r} (known: {', '.join(AUTO)})"
        ) from None


def ordering(mesh: Mesh, method: str, seed: int = 0) -> np.ndarray:
    """The permutation ``perm`` of ``method`` for ``mesh`` (new cell n = old cell perm[n]).

    ``auto`` is the CPU backend's recommendation here (:data:`AUTO`); a Simulation
    resolves it for its own backend before renumbering.
    """
    try:
        fn = ORDERINGS[resolve(method)]
    except KeyError:
        raise ConfigError(
            f"ordering: unknown method {method!r} (choose from {', '.join(ORDERINGS)}, auto)"
        ) from None
    return fn(mesh, seed)


def bandwidth(mesh: Mesh) -> int:
    """Maximum ``|i - j|`` over pairs of neighbouring cells (the paper's Table 3)."""
    ec = mesh.edge_cells[mesh.edge_cells[:, 1] >= 0]
    return int(np.abs(ec[:, 0] - ec[:, 1]).max()) if ec.size else 0


def profile(mesh: Mesh) -> int:
    """Envelope size: sum over rows ``i`` of ``i - min(j <= i)`` with ``a_ij != 0``."""
    ec = mesh.edge_cells[mesh.edge_cells[:, 1] >= 0]
    first = np.arange(mesh.n_cells, dtype=np.int64)
    if ec.size:
        np.minimum.at(first, ec.max(axis=1), ec.min(axis=1))
    return int((np.arange(mesh.n_cells) - first).sum())
