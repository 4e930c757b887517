"""CPU backend (Numba). The per-edge scheme kernels are those of :mod:`fvswe.physics`.

Each kernel is ``flux(Wi, Wj, Hi, Hj, ex, ey, g, r, eps_h) -> (F-, F+, ||D||_inf, flag)``
on float tuples (6 for two layers, 3 for one), ``@njit(cache=True)``, callable
from other jitted code. Inputs may be float32 or float64; the kernels compute
and return float64 (callers cast on store). Flags: 1 non-hyperbolic, 2
near-coincident internal pair, 4 thin-layer fallback.
"""

from __future__ import annotations

import functools
import os
import time

from ... import physics
from ...registry import KERNELS, kernel

# Numba's OpenMP layer (libgomp) spins at its barriers; a spinning thread that shares a
# core with another process steals the time the late thread needs. Passive waiting made
# two threads on a loaded machine 3.6-4.4x faster (README "CPU threads under load"). Set before
# the first parallel loop loads libgomp; a user's own setting wins.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

#: (name, layers) -> Numba per-edge kernel, from :data:`fvswe.registry.KERNELS`.
EDGE_FLUXES = {key: physics.kernel(ref) for key, ref in KERNELS.items()}


def get_edge_flux(name: str, layers: int):
    """The Numba per-edge kernel of scheme ``name`` for ``layers`` (1 or 2) layers, its
    cached machine code that of the current physics (:func:`~.kernels.fresh_cache`: a
    process that calls kernels without building a backend would otherwise load the
    formulas of before an edit of a module the kernel's own file calls)."""
    from .kernels import fresh_cache  # the passes' module: loaded only when a kernel is asked

    kernel(name, layers)
    fresh_cache()
    return EDGE_FLUXES[(name, layers)]


#: Seconds :func:`idle_cores` watches the processors for.
IDLE_SAMPLE_S = 0.1


def idle_cores(sample_s: float = IDLE_SAMPLE_S) -> float | None:
    """How many of this process's cores sat idle over ``sample_s`` (from /proc/stat), or None.

    Instantaneous, unlike the load average (a minute-long mean that hardly sees
    a process started seconds ago).
    """
    cpus = {f"cpu{i}" for i in os.sched_getaffinity(0)}

    def ticks() -> dict[str, tuple[int, int]]:
        out = {}
        with open("/proc/stat") as f:
            for line in f:
                name, *values = line.split()
                if name in cpus:
                    v = [int(x) for x in values]
                    out[name] = (v[3] + v[4], sum(v[:8]))  # idle + iowait, all but guest
        return out

    try:
        before = ticks()
        time.sleep(sample_s)
        after = ticks()
    except (OSError, ValueError, IndexError):
        return None
    idle = 0.0
    for name, (i1, t1) in after.items():
        i0, t0 = before.get(name, (i1, t1))
        idle += (i1 - i0) / (t1 - t0) if t1 > t0 else 1.0
    return idle if after else None


@functools.lru_cache(maxsize=1)
def default_threads() -> int:
    """Threads of a run without ``threads=``: the cores other processes leave idle, at least 1.

    Fork-join loops wait at every barrier for their slowest thread, so a thread
    sharing its core with another process stalls the whole step (measured up
    to 26 times slower than one thread; README "CPU threads under load").
    ``NUMBA_NUM_THREADS`` set by the user is taken as given; chosen once per
    process.
    """
    import numba

    most = numba.config.NUMBA_NUM_THREADS
    if "NUMBA_NUM_THREADS" in os.environ or not hasattr(os, "sched_getaffinity"):
        return most
    idle = idle_cores()
    if idle is None:
        return most
    return max(1, min(most, len(os.sched_getaffinity(0)), int(idle + 0.5)))


def kernels_cached(dtype: str, compensated: bool = False, layers: int = 2) -> bool | None:
    """Whether the edge pass of ``layers`` layers and the volume pass for states of ``dtype``
    (with the remainders of a ``compensated`` state: docs/SCHEMES.md §2.7) are compiled
    already.

    True when this process compiled them or Numba's on-disk cache (``cache=True``)
    holds them, so a run starts without compiling; None when Numba's cache
    cannot be inspected (its layout is not public API).
    """
    from numba.core import types

    from . import pipeline
    from .dispatch import dispatch_id

    kind = type(dispatch_id(0, layers)).__name__

    def fits(sig, w: int) -> bool:
        remainders = w == 0 and isinstance(sig[2], types.Array)
        if w == 1 and getattr(sig[0], "instance_class", type).__name__ != kind:
            return False
        return str(sig[w].dtype) == dtype and remainders == (compensated and w == 0)

    try:
        for dispatcher, w in ((pipeline.edge_pass, 1), (pipeline.volume_pass, 0)):
            index = dispatcher._cache._cache_file._load_index()
            signatures = [*dispatcher.signatures, *(key[0] for key in index)]
            if not any(fits(sig, w) for sig in signatures):
                return False
    except (AttributeError, IndexError, TypeError, OSError):
        return None
    return True
