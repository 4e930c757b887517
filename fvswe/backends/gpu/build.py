"""Building the GPU's modules: CuPy's availability, the CUDA source NVRTC receives, its options.

A module is compiled once per (variant, options) and runtime: :func:`module`. The CUDA sources
are ``fvswe/backends/cuda/*.cu`` with the generated headers of
:mod:`fvswe.backends.cuda_header` inlined (:func:`source`); the options (:func:`compile_options`)
name the scheme's kernel, the layer count, the real type, the variant's shape and the register
cap of :mod:`.tuning`. CuPy is imported lazily: ``import fvswe`` never needs it.
"""

from __future__ import annotations

import os
import re
from dataclasses import replace
from functools import cache
from pathlib import Path

import numpy as np

from ... import registry
from ...errors import BackendUnavailable, ConfigError
from .. import cuda_header
from ..layout import Layout
from .device import grid_arrays
from .tuning import (
    BLOCK_SHARED_MAX,
    DEFAULT_BLOCK,
    FACES_BLOCK,
    GRID_LAUNCH,
    GRID_TILE_X,
    GRID_VARIANT,
    RESIDENT_THREADS,
    SHARED_MAX,
    STAGE_RESTS,
    VARIANTS,
    block_shape,
    block_shared,
    grid_block,
    grid_shared_bytes,
    requested_variant,
    resolve_variant,
)

CUDA_DIR = Path(__file__).parents[1] / "cuda"


def available() -> tuple[bool, str]:
    """Whether CuPy and a CUDA device are usable here, and a one-line reason (or the device)."""
    try:
        import cupy
    except ImportError as e:
        return False, f"CuPy is not installed ({e}); install fvswe[gpu]"
    try:
        n = cupy.cuda.runtime.getDeviceCount()
    except Exception as e:  # CUDARuntimeError: no driver, no device
        return False, f"CuPy finds no usable CUDA device ({str(e).strip() or type(e).__name__})"
    if n == 0:
        return False, "CuPy finds no CUDA device"
    return True, device_name()


def device_name() -> str:
    """Name of the current CUDA device."""
    import cupy

    props = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)
    name = props["name"]
    return name.decode() if isinstance(name, bytes) else str(name)


#: NVRTC options of ``fast_math`` (float32 only): division and square root approximate (at most
#: 2 ulp off the rounded result instead of correctly rounded) and denormals flushed to zero,
#: in the flux and everywhere else in the module (docs/GPU.md, "Fast math").
FAST_MATH = ("--prec-div=false", "--prec-sqrt=false", "--ftz=true")


def compile_options(
    scheme: str,
    layers: int,
    dtype,
    variant: str,
    k: int = 3,
    block: int = DEFAULT_BLOCK,
    cells: int | None = None,
    fast_math: bool = False,
    sources: bool = False,
    slide: bool = False,
    maxima: bool = False,
    counts: bool = False,
    kinds: int = registry.ALL_KINDS,
    entropy_fix: bool = True,
    compensated: bool = False,
    linear: bool = False,
    sphere: bool = False,
) -> tuple[str, ...]:
    """NVRTC options of one module; float64 is compiled without FMA so it matches NumPy.
    ``cells``: the cells a thread block owns in the ``block`` variant (default ``block``),
    whose register cap is its :func:`block_shape`'s; ``fast_math``: :data:`FAST_MATH`
    (float32 only: a ConfigError for float64); ``sources``: the run has point sources or
    rain (``FVSWE_SOURCES``: the cell update of a module without them has no feed, whose
    double arithmetic would cost every cell update registers); ``slide``: the run has a moving
    bed (``FVSWE_SLIDE``: the module has the ``bed_pass`` kernel); ``maxima``: the run keeps
    maximum and arrival maps (``FVSWE_MAXIMA``: the module has ``maxima_pass``); ``counts``:
    the run counts the volumes through edges (``FVSWE_COUNTS``: the module has
    ``count_edges``, for fvswe.probes' sections); ``kinds``:
    the boundary kinds the run's edges have (``FVSWE_KINDS``,
    :func:`fvswe.registry.kinds_mask`): the others' ghosts, table times and beds are compiled
    out, as every boundary kind's code held live across the flux costs the edge evaluation
    registers (a walls-only run paid 2.6 % of PVM-IFCP's float32 step for the discharge's
    midpoint time and the outflow's bed);
    ``entropy_fix`` false: the scheme's kernel without the entropy fix (its own
    ``FVSWE_SCHEME``, so the default kernel has no test of it); ``compensated``: a float32
    state with its rounding remainders (``FVSWE_COMPENSATED``, docs/SCHEMES.md §2.7;
    float64 modules never have them; a block module of a kind :data:`STAGE_RESTS` names
    stages them: ``FVSWE_STAGE_RESTS``); ``linear``: the linear reconstruction
    (``FVSWE_LINEAR``, docs/SCHEMES.md §19: the module has ``troubled_pass``,
    ``faces_pass`` and ``interior_pass`` and its edges read face states; a first-order
    module's options and code are those without it); ``sphere``: a lon/lat mesh on the
    sphere (``FVSWE_SPHERE``, docs/SCHEMES.md §20: the cell update's metric terms; a planar
    module's options and code are those without it)."""
    sid = registry.kernel_id(scheme, layers, entropy_fix)
    if variant not in (*VARIANTS, GRID_VARIANT):
        choices = ", ".join((*VARIANTS, GRID_VARIANT))
        raise ConfigError(f"variant: unknown {variant!r} (choose from {choices})")
    double = np.dtype(dtype) == np.float64
    if fast_math and double:
        raise ConfigError("fast_math: float32 only (float64 keeps IEEE division and square root)")
    resident = RESIDENT_THREADS.get((layers, double), 0)
    if variant == "block" and resident:
        resident = block_shape(scheme, layers, dtype, k).resident
    elif variant == GRID_VARIANT:
        resident = GRID_LAUNCH.get((layers, double), (0, resident))[1]
    min_blocks = max(1, resident // block)
    return (
        (
            "--std=c++17",
            f"-DFVSWE_SCHEME={sid}",
            f"-DFVSWE_LAYERS={layers}",
            f"-DFVSWE_DOUBLE={int(double)}",
            f"-DFVSWE_K={k}",
            f"-DFVSWE_BLOCK={block}",
            f"-DFVSWE_MIN_BLOCKS={min_blocks}",
            f"-DFVSWE_TILE_X={GRID_TILE_X}",
            f"-DFVSWE_SOURCES={int(sources)}",
            f"-DFVSWE_SLIDE={int(slide)}",
            f"-DFVSWE_MAXIMA={int(maxima)}",
            f"-DFVSWE_COUNTS={int(counts)}",
            f"-DFVSWE_KINDS={int(kinds)}",
            "--fmad=false" if double else "--fmad=true",
        )
        + ((f"-DFVSWE_CELLS={cells or block}",) if variant == "block" else ())
        + (FAST_MATH if fast_math else ())
        + (_compensated(scheme, variant) if compensated and not double else ())
        + (("-DFVSWE_LINEAR=1", f"-DFVSWE_FACES_BLOCK={FACES_BLOCK}") if linear else ())
        + (("-DFVSWE_SPHERE=1",) if sphere else ())
    )


def _compensated(scheme: str, variant: str) -> tuple[str, ...]:
    """A compensated float32 module's options: its block variant stages the remainders where
    :data:`STAGE_RESTS` says it pays."""
    stage = variant == "block" and STAGE_RESTS[registry.get(scheme).costly]
    return ("-DFVSWE_COMPENSATED=1",) + (("-DFVSWE_STAGE_RESTS=1",) if stage else ())


_INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"\s*$', re.MULTILINE)


@cache
def source(variant: str) -> str:
    """``<variant>.cu`` with its local includes and the emitted physics inlined, as NVRTC
    receives it.

    The generated headers (:data:`fvswe.backends.cuda_header.HEADERS`) are inlined
    from their Python text. ``#pragma once`` becomes an include guard, so headers
    inlined inside ``#if`` branches stay correct; inlining makes CuPy's compile
    cache key cover the headers too.
    """

    def expand(name: str) -> str:
        generated = cuda_header.HEADERS.get(name)
        text = generated() if generated else (CUDA_DIR / name).read_text()
        guard = "FVSWE_INC_" + re.sub(r"\W", "_", name).upper()
        if "#pragma once\n" in text:
            text = (
                text.replace("#pragma once\n", f"#ifndef {guard}\n#define {guard}\n") + "#endif\n"
            )
        return _INCLUDE.sub(lambda m: expand(m.group(1)), text)

    return expand(f"{variant}.cu")


_MODULES: dict[tuple[str, ...], object] = {}


def module(options: tuple[str, ...], variant: str, runtime=None):
    """The compiled RawModule of ``variant`` for these options (compiled once per process and
    runtime; ``runtime``: CuPy, or a stand-in of its API such as the tests' host runtime)."""
    if runtime is None:
        import cupy as runtime

    key = (id(runtime), variant, *options)
    if key not in _MODULES:
        _MODULES[key] = runtime.RawModule(code=source(variant), options=options)
    return _MODULES[key]


def cache_dir(runtime) -> Path | None:
    """The folder where ``runtime`` keeps its compiled modules across runs: CuPy's
    ``CUPY_CACHE_DIR`` (default ``~/.cupy/kernel_cache``; CuPy's documented environment), a
    stand-in's ``cache_dir``; None where the modules are kept in memory only."""
    if runtime is None or getattr(runtime, "__name__", "") == "cupy":
        if os.environ.get("CUPY_CACHE_IN_MEMORY", "0") not in ("", "0"):
            return None
        return Path(os.environ.get("CUPY_CACHE_DIR") or Path.home() / ".cupy" / "kernel_cache")
    folder = getattr(runtime, "cache_dir", None)
    return None if folder is None else Path(folder)


def cache_entries(folder: Path | None) -> int | None:
    """How many files the cache ``folder`` holds (0 where it is not made yet; None: no
    folder). A compile adds one (CuPy names its files by a key that is not public API, so
    the count, not the name, says whether a module was compiled or loaded)."""
    if folder is None:
        return None
    try:
        with os.scandir(folder) as entries:
            return sum(1 for _ in entries)
    except FileNotFoundError:
        return 0


def runtime_of(runtime):
    """CuPy, or the stand-in given (the tests' host runtime); a one-line error without CuPy."""
    if runtime is not None:
        return runtime
    ok, reason = available()
    if not ok:
        raise BackendUnavailable(f"backend 'gpu' is unavailable: {reason}")
    import cupy

    return cupy


def _grid_of(layout: Layout, variant: str | None, block: int):
    """The grid's arrays where ``layout`` is a Cartesian grid the ``grid`` variant may run
    (None otherwise, or where its tile would not fit in shared memory and none was asked)."""
    if requested_variant(variant) not in (None, GRID_VARIANT):
        return None
    grid = grid_arrays(layout)
    need = grid_shared_bytes(layout.model.layers, layout.dtype, block)
    if grid is not None and need > SHARED_MAX:
        if requested_variant(variant) == GRID_VARIANT:
            raise ConfigError(
                f"variant: 'grid' with block {block} needs {need} B of shared memory a block "
                f"(at most {SHARED_MAX}); use a smaller block"
            )
        return None
    return grid


def launch_shape(layout: Layout, scheme: str, variant, block, cells, interior_first=None):
    """``(variant, threads a block, cells a block, interior-first order, grid arrays)`` of a run:
    the variant asked for, else the default of :func:`.tuning.resolve_variant`, and its
    launch shape (:func:`.tuning.block_shape`, :func:`.tuning.grid_block`), checked."""
    layers, dtype = layout.model.layers, layout.dtype
    shape = block_shape(scheme, layers, dtype, layout.k)
    if interior_first is not None:
        shape = replace(shape, interior_first=interior_first)
    cells = cells or shape.cells
    grid = _grid_of(layout, variant, block or grid_block(layers, dtype))
    variant = resolve_variant(variant, scheme, layout.n_cells, layout.edge_cells, cells,
                              grid is not None)  # fmt: skip
    defaults = {"block": shape.threads, GRID_VARIANT: grid_block(layers, dtype)}
    block = block or defaults.get(variant, DEFAULT_BLOCK)
    if block % 32 or not 32 <= block <= 1024:
        raise ConfigError(f"block: a multiple of 32 in [32, 1024], got {block}")
    shared = block_shared(cells, layout.k, layers, dtype)
    if variant == "block" and shared > BLOCK_SHARED_MAX:
        raise ConfigError(f"cells: {cells} cells need {shared} B of shared memory (> 48 KiB)")
    return variant, block, cells, shape.interior_first, grid
