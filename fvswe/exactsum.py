"""Exact sums of float64 arrays, rounded once: the same bits in any order, split or rank count.

The layers' volumes (``Σ area_i h_i``, :func:`fvswe.model.volume_sums`, a backend's
``layer_mass``) are summed here on one process, one GPU and MPI ranks alike, so that all of
them give the same bits without any of them holding the whole state (docs/PARALLEL.md,
"Masses").

:func:`sums` writes each finite value ``x = M 2^(e - 53)`` (``frexp``: an integer
``|M| < 2^53``) as three pieces of ``M`` (``trunc``: signed, each below ``2^PIECE``,
:data:`PIECE`), each added into the bin of its power of two (``bincount``: float64 sums of
integers below ``2^53``, hence exact in any order, the GPU's atomic adds too); the bins are
returned as int64, with the counts of ``+inf``, ``-inf`` and NaN after them. Integers add
exactly in any order, so the partial sums of several arrays (MPI ranks: an ``Allreduce``
sum of int64) are those of their concatenation, and :func:`rounded` gives their exact total
correctly rounded to float64 (ties to even, as ``math.fsum``). Exact for up to
:data:`MAX_CELLS` values in one call and ``2^45`` over all calls whose sums are added.

The array code is written once for NumPy and CuPy (``xp``): a GPU sums its device arrays
in place and copies back the bins alone (a few kB).
"""

from __future__ import annotations

import numpy as np

#: Bits of a significand each piece carries: 3 pieces cover its 53.
PIECE = 18
#: The most values one :func:`sums` adds exactly: a bin's float64 sum stays below 2^53.
MAX_CELLS = 2 ** (53 - PIECE)
#: Values NumPy takes at a time: its temporaries stay in the caches (2.2 times faster than
#: one pass at 2 M and 8 M values, benchmarks/exactsum_speed.py); a CuPy array is taken whole.
CHUNK = 1 << 15
#: ``frexp``'s exponents of finite values run from -1073 (the least subnormal) to 1024; a
#: piece's unit ``2^(e - 53 + PIECE j)`` goes into bin ``e - 53 + PIECE j + _LOW``.
_LOW = 1073 + 53
#: The bins, then the counts of +inf, -inf and NaN.
WIDTH = _LOW + 1024 - 53 + 2 * PIECE + 1 + 3


def sums(x, xp=np) -> np.ndarray:
    """The exact partial sums of the 1-D float64 array ``x`` (a NumPy or, ``xp`` the
    ``cupy`` module, a CuPy array): a host int64 array of :data:`WIDTH`, whose sum with
    other such arrays :func:`rounded` rounds once."""
    if x.size > MAX_CELLS:
        raise ValueError(f"exactsum: {x.size} values in one sum (at most {MAX_CELLS})")
    if x.size == 0:  # (CuPy's bincount needs a largest value)
        return np.zeros(WIDTH, dtype=np.int64)
    x = x.astype(np.float64, copy=False)
    step = CHUNK if xp is np else x.size  # (bins of integers: exact added in any order)
    bins = sum(_bins(x[k : k + step], xp) for k in range(0, x.size, step))
    bins = bins.get() if hasattr(bins, "get") else bins  # a CuPy array: to the host
    pos, neg = int((x == np.inf).sum()), int((x == -np.inf).sum())
    special = [pos, neg, int((~xp.isfinite(x)).sum()) - pos - neg]  # +inf, -inf, NaN
    return np.concatenate((bins.astype(np.int64), special))


def _bins(x, xp):
    """The float64 bins of ``x``'s finite values' pieces (sums of integers below 2^53)."""
    finite = xp.isfinite(x)
    m, e = xp.frexp(xp.where(finite, x, 0.0))
    at = e + (_LOW - 53)  # the bin of the significand's unit
    rest = m * 2.0**53  # an integer, |M| < 2^53: cut into signed pieces of PIECE bits
    bins = 0
    for j in (2, 1, 0):
        piece = xp.trunc(rest * 2.0 ** (-PIECE * j)) if j else rest
        if j:
            rest -= piece * 2.0 ** (PIECE * j)
        bins = bins + xp.bincount(at + PIECE * j, weights=piece, minlength=WIDTH - 3)
    return bins


def rounded(partials) -> float:
    """The float64 nearest the exact total that ``partials`` (:func:`sums`' arrays, summed)
    stand for, ties to even; ``±inf`` for a total beyond float64's range or an infinite
    value among those summed, NaN for a NaN among them or both infinities."""
    *bins, pos, neg, nan = (int(v) for v in partials)
    if nan or (pos and neg):
        return float("nan")
    if pos or neg:
        return float("inf") if pos else float("-inf")
    total = sum(b << k for k, b in enumerate(bins) if b)
    try:
        return total / (1 << _LOW)  # int / int: correctly rounded, subnormals too
    except OverflowError:
        return float("inf") if total > 0 else float("-inf")


def over(partials: np.ndarray, comm=None) -> np.ndarray:
    """``partials`` (:func:`sums`' arrays) added over the ranks of ``comm`` (an MPI
    communicator: an ``Allreduce`` of int64, exact in any order; None: as they are)."""
    if comm is None:
        return partials
    total = np.empty_like(partials)
    comm.Allreduce(partials, total)  # mpi4py's default op: MPI.SUM
    return total


def total(x, xp=np) -> float:
    """``Σ x`` exactly, rounded once to float64: :func:`rounded` of :func:`sums`."""
    return rounded(sums(x, xp))
