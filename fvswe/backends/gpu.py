"""GPU backend (CuPy): the pipeline of :mod:`fvswe.backends.cpu.pipeline` in CUDA kernels.

Everything stays on the device for the whole run, ``t`` and ``dt`` included: the
step kernels read the control block (:data:`CTRL_DTYPE`), skip themselves once
``t_end`` or ``max_steps`` is reached, and the last block of each step's final
kernel advances ``t`` and sets the next ``dt``. :meth:`GpuBackend.advance`
replays CUDA graphs of a batch of steps and reads the control block once per
batch, so no host synchronisation happens per step.

Four variants, same results bit for bit (float64):

- ``edge``: the paper's design; an edge pass writes per-cell slots, a volume
  pass sums them, updates and reduces dt (2 launches a step, 3 non-lagged),
  alternating two state buffers;
- ``gather``: one thread per cell evaluates the cell's edges with the edge's
  orientation and updates the cell (1 launch a step, 2 non-lagged), alternating
  two state buffers; each interior edge is evaluated twice, no slot traffic;
- ``slot``: as ``gather``, with one thread per slot and the cell's sum in shared
  memory (k times the threads in flight: for small, latency-bound meshes);
- ``block``: fused; a thread block owns a range of cells, evaluates each edge
  between two of them once into per-cell slots in shared memory and only the
  edges to other blocks twice (:func:`fvswe.backends.layout.block_edges`), then
  sums and updates its cells (1 launch a step, 2 non-lagged), two state buffers.

And one for a Cartesian grid (:class:`fvswe.grid.Grid`'s mesh in its row-major order),
chosen by default where a layout is one (:func:`grid_arrays`):

- ``grid``: ``gather`` on 2-D tiles, each tile edge evaluated once, each slot's
  neighbour, normal, length and boundary code found by index arithmetic: no per-slot
  arrays, the same results bit for bit.

Two-layer steps end with the positivity limiter's two kernels (docs/SCHEMES.md §13.4),
the same for every variant, which return at once unless the step's normal pass listed
candidate cells.

The CUDA sources are ``fvswe/backends/cuda/*.cu`` and the device physics emitted
from the Numba modules by :mod:`fvswe.codegen` (docs/CODEGEN.md); a module is
compiled once per (scheme, layers, dtype, variant, k, block) with ``-D`` options
and cached; ``fast_math`` compiles float32 modules with approximate division and square
root (:data:`FAST_MATH`). CuPy is imported lazily: ``import fvswe`` and the CPU backend never
need it.
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path
from typing import NamedTuple

import numpy as np

from .. import registry
from ..boundary import INFLOW_KEYS, KINDS
from ..errors import BackendUnavailable, ConfigError
from . import cuda_header
from .cuda_header import CTRL_DTYPE, NO_CELL, OP_COUNT, OP_DT, OP_UPDATE
from .layout import BLOCK_CELLS, Layout, block_edges, twice_evaluated

CUDA_DIR = Path(__file__).with_name("cuda")
VARIANTS = ("edge", "gather", "slot", "block")
DT_MODES = ("lagged", "nonlagged", "fixed")
#: Meshes below this many cells run the ``slot`` variant by default (:func:`default_variant`).
SLOT_BELOW = 16_000
#: Schemes whose per-edge flux costs enough that ``edge`` (each edge evaluated once) beats
#: ``gather`` (each interior edge evaluated twice, no slot traffic) on large meshes.
EDGE_SCHEMES = frozenset(s.name for s in registry.SCHEMES if s.costly)
#: Larger meshes run ``block`` by default where their order makes it evaluate fewer than
#: this fraction of the edges twice (:func:`default_variant`).
BLOCK_TWICE_BELOW = 0.15
#: Threads per block of every kernel.
DEFAULT_BLOCK = 128
#: Most steps one CUDA graph replays.
DEFAULT_BATCH = 64
#: Most steps launched between two looks at the control block.
SYNC_EVERY = 256
#: Default steps between two blow-up checks of Simulation.run, in units of the backend's
#: sync_every: each check syncs the device (1024 steps: a whole number of 64-step graphs).
CHECK_EVERY_SYNCS = 4

INT32_MAX = 2**31 - 1
#: counters() keys -> control block fields.
COUNTERS = {
    "clipped_cells": "clipped",
    "nonhyperbolic_edges": "nonhyp",
    "degenerate_edges": "degenerate",
    "thin_layer_edges": "thin",
    "thin_layer_cells": "thin_cells",
    "limited": "limited",
}
#: Most blocks of the limiter's kernels (grid-stride over the step's candidates): few, so
#: that their launches cost little when they return at once.
LIMIT_BLOCKS = 1024


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


#: (layers, float64) -> threads per SM the step kernels are compiled to keep resident
#: (``__launch_bounds__``'s minimum blocks, so the compiler caps the registers: 512 threads,
#: 128 registers; 768, 80). Measured on the H100 at 2.08 M cells against no cap
#: (benchmarks/results/min_blocks_sweep_h100.json): two-layer float64 PVM-IFCP gather
#: 4.7 -> 5.5 and Roe/IR-Roe edge 1.9 -> 2.1 G cell-steps/s, float32 Roe/IR-Roe gather
#: 2.1 -> 2.6; the one-layer modules fit without a cap.
RESIDENT_THREADS = {(2, True): 512, (2, False): 768}

#: NVRTC options of ``fast_math`` (float32 only): division and square root approximate (at most
#: 2 ulp off the rounded result instead of correctly rounded) and denormals flushed to zero,
#: in the flux and everywhere else in the module (docs/GPU.md, "Fast math").
FAST_MATH = ("--prec-div=false", "--prec-sqrt=false", "--ftz=true")
#: Shared memory a thread block of the ``block`` variant may use for its slots (bytes).
#: Static shared memory a CUDA block may hold (block.cu's slots, grid.cu's static_assert).
SHARED_MAX = 48 * 1024
#: What the ``block`` variant's slots may take of it: 1 KiB stays for finish_step's own shared
#: arrays (ptxas refused 256 two-layer float64 cells, 48 KiB of slots, by 136 bytes).
BLOCK_SHARED_MAX = SHARED_MAX - 1024
#: The variant of a Cartesian grid in row-major order only (grid.cu, :func:`grid_arrays`).
GRID_VARIANT = "grid"
#: grid.cu's unit normals of the local slots south, east, north, west: [0] of an interior
#: slot (a south or west one is its owner's north or east edge), [1] of a boundary slot.
GRID_NORMALS = np.array([
    [[0.0, 1.0], [1.0, -0.0], [0.0, 1.0], [1.0, -0.0]],
    [[0.0, -1.0], [1.0, -0.0], [0.0, 1.0], [-1.0, -0.0]],
])  # fmt: skip
#: Cells along x of grid.cu's tile (its block is FVSWE_BLOCK / GRID_TILE_X rows of them).
GRID_TILE_X = 16
#: (layers, float64) -> grid.cu's default (threads a block, threads per SM it is compiled to
#: keep resident; 0: no register cap) where measured, else :data:`DEFAULT_BLOCK` and
#: :data:`RESIDENT_THREADS`. One-layer float32: 16 x 16 tiles at 1536 threads an SM (40
#: registers) take 124 us a cgrid-tide 1056 x 1056 step (hll-wd, non-lagged) on the H100,
#: against 177 us at 16 x 8 with no cap (74 registers, 37.5 % occupancy) and 132 us at
#: 16 x 8 and 1536 (benchmarks/results/grid_sweep_h100.json, benchmarks/grid_sweep.py).
GRID_LAUNCH = {(1, False): (256, 1536)}


@dataclass(frozen=True)
class BlockShape:
    """A launch shape of the ``block`` variant: the cells a thread block owns, its threads,
    the threads per SM a two-layer module is compiled to keep resident (its register cap, as
    :data:`RESIDENT_THREADS`, which the one-layer modules go without) and the task order
    (:func:`fvswe.backends.layout.block_edges`'s ``interior_first``)."""

    cells: int
    threads: int
    resident: int
    interior_first: bool


#: (costly scheme, float64) -> the ``block`` variant's default shape: the fastest of
#: benchmarks/results/block_sweep_h100.json (H100, test1, 2.08 M cells in Hilbert order,
#: lagged; shapes of 64 to 256 cells on 64 to 256 threads at the :data:`RESIDENT_THREADS`
#: caps, then at the fastest shape the caps 0 / 1024 (float32) or 0 / 640 (float64) and the
#: interior-first order, one knob at a time; G cell-steps/s):
#:
#: ============  ===========  ====  ========  ==============  ====  =======
#: kind, dtype   cells/thr.   cap   order     G cell-steps/s  regs  stage 1
#: ============  ===========  ====  ========  ==============  ====  =======
#: cheap, f32    256 / 224    768   interior  12.23           72    12.03
#: costly, f32   256 / 256    1024  edge      5.63            64*   5.12
#: cheap, f64    128 / 128    640   edge      6.87            96*   5.98
#: costly, f64   256 / 256    512   interior  2.50            128*  2.49
#: ============  ===========  ====  ========  ==============  ====  =======
#:
#: (* with 96, 48 and 120 bytes of local memory; stage 1: the same shape at the
#: :data:`RESIDENT_THREADS` cap in edge order). Cheap is pvm-ifcp, costly roe (ir-roe,
#: not swept, ran as roe within 1 % in phase 1: throughput_gpu_h100_block_phase1.json); the
#: one-layer schemes were not measured and take their kind's cells, threads and order. The
#: sweep varied one knob from the best shape, so a row's cap and order were measured together
#: only as listed; the interior-first order was faster in all four kinds (by 0.5 to 1.7 %).
#: Cheap float32's cap is 1280 since the caps sweep past 1024 (block_caps_f32_h100.json: 56
#: registers, 56 B local, +3 % in one row) and its interleaved A/B against 768
#: (block_resident_ab_h100.json, ``block_sweep.py --ab``), which tests hold it to.
BLOCK_SHAPES = {
    (False, False): BlockShape(cells=256, threads=224, resident=1280, interior_first=True),
    (True, False): BlockShape(cells=256, threads=256, resident=1024, interior_first=False),
    (False, True): BlockShape(cells=128, threads=128, resident=640, interior_first=False),
    (True, True): BlockShape(cells=256, threads=256, resident=512, interior_first=True),
}


def block_shared(cells: int, k: int, layers: int, dtype) -> int:
    """Bytes of shared memory the ``block`` variant's slots take: ``cells * k`` slots of the
    fluxes and the speed, and with two layers the edge length (the limiter's bound), each
    padded to an odd number of reals (block.cu's ``SLOT_COLS``: no bank conflicts on
    triangles)."""
    return cells * k * ((3 * layers + 1 + (layers == 2)) | 1) * np.dtype(dtype).itemsize


def block_shape(scheme: str, layers: int, dtype, k: int = 3) -> BlockShape:
    """The ``block`` variant's default shape for this module (:data:`BLOCK_SHAPES`), its cells
    and threads halved until the slots fit :data:`BLOCK_SHARED_MAX` (two-layer float64: 256 ->
    128 cells on 128 threads, Roe 2.45 against 2.49 G cell-steps/s in the sweep)."""
    shape = BLOCK_SHAPES[registry.get(scheme).costly, np.dtype(dtype) == np.float64]
    while block_shared(shape.cells, k, layers, dtype) > BLOCK_SHARED_MAX and shape.cells > 32:
        half = shape.cells // 2
        shape = replace(shape, cells=half, threads=min(shape.threads, half))
    return shape


def compile_options(
    scheme: str,
    layers: int,
    dtype,
    variant: str,
    k: int = 3,
    block: int = DEFAULT_BLOCK,
    cells: int | None = None,
    fast_math: bool = False,
) -> tuple[str, ...]:
    """NVRTC options of one module; float64 is compiled without FMA so it matches NumPy.
    ``cells``: the cells a thread block owns in the ``block`` variant (default ``block``),
    whose register cap is its :func:`block_shape`'s; ``fast_math``: :data:`FAST_MATH`
    (float32 only: a ConfigError for float64)."""
    sid = registry.kernel_id(scheme, layers)
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
            "--fmad=false" if double else "--fmad=true",
        )
        + ((f"-DFVSWE_CELLS={cells or block}",) if variant == "block" else ())
        + (FAST_MATH if fast_math else ())
    )


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


#: The halo hook's control-block kernels (docs/PARALLEL.md, GPU ranks): ``dt_load`` copies the
#: control block's Δt and ``-stalled`` into a 2-double buffer that the ranks min-reduce,
#: ``dt_store`` writes the reduced pair back, so every rank steps with the global Δt and stops
#: together; ``limit_halo`` lists the halo cells [first, last) whose theta (from their owners)
#: is < 1 in a layer after the step's candidates, so that ``limit_update`` updates their owned
#: neighbours again (docs/SCHEMES.md §13.4).
HALO_SOURCE = r"""
extern "C" __global__ void dt_load(const Ctrl* c, double* red)
{
    red[0] = c->dt;
    red[1] = -(double)c->stalled;
}
extern "C" __global__ void dt_store(Ctrl* c, const double* red)
{
    c->dt = red[0];
    c->stalled = red[1] < 0.0;
}
extern "C" __global__ void limit_halo(Ctrl* c, const int first, const int last)
{
    const int h = first + blockIdx.x * blockDim.x + threadIdx.x;
    if (h < last && (c->lim_theta[2 * h] < 1.0 || c->lim_theta[2 * h + 1] < 1.0))
        c->lim_cells[c->candidates + atomicAdd(&c->halo_listed, 1)] = h;
}
"""


@cache
def halo_kernels() -> dict[str, object]:
    """The kernels of a distributed run's halo hook (:class:`fvswe.parallel.GpuHalo`):
    ``pack(W, idx, row, sent)`` gathers rows ``idx`` of a flat state of ``row`` reals a cell
    into ``sent``; ``unpack(buf, idx, row, W)`` scatters them back; ``dt_load``, ``dt_store``,
    ``limit_halo`` (:data:`HALO_SOURCE`)."""
    import cupy

    rows = "idx[i / row] * (long long)row + i % row"
    mod = cupy.RawModule(
        code=cuda_header.constants().replace("#pragma once\n", "") + HALO_SOURCE,
        options=("--std=c++17",),
    )
    return {
        "pack": cupy.ElementwiseKernel(
            "raw T W, raw int32 idx, int32 row", "T sent", f"sent = W[{rows}]", "fvswe_halo_pack"
        ),
        "unpack": cupy.ElementwiseKernel(
            "T buf, raw int32 idx, int32 row", "raw T W", f"W[{rows}] = buf", "fvswe_halo_unpack"
        ),
        "dt_load": mod.get_function("dt_load"),
        "dt_store": mod.get_function("dt_store"),
        "limit_halo": mod.get_function("limit_halo"),
    }


def pack_state(W: np.ndarray, H: np.ndarray, area: np.ndarray, layers: int) -> np.ndarray:
    """(L, nvec, 4) packed vectors: (h1,q1x,q1y,H),(h2,q2x,q2y,area) or (h,qx,qy,H)."""
    L = W.shape[0]
    P = np.empty((L, 2 if layers == 2 else 1, 4), dtype=W.dtype)
    P[:, 0, :3] = W[:, :3]
    P[:, 0, 3] = H
    if layers == 2:
        P[:, 1, :3] = W[:, 3:6]
        P[:, 1, 3] = area
    return P


def unpack_state(P: np.ndarray, layers: int) -> np.ndarray:
    """The inverse of :func:`pack_state`: ``(L, nvar)``."""
    if layers == 2:
        return np.concatenate((P[:, 0, :3], P[:, 1, :3]), axis=1)
    return P[:, 0, :3].copy()


def level_edges(lay: Layout) -> np.ndarray:
    """The edges with tables (level, discharge, characteristic), in edge order (their index
    m among them is their slot in the device's per-step level fluxes)."""
    levels = getattr(lay, "levels", None)
    if levels is None:
        return np.zeros(0, dtype=np.int64)
    return np.flatnonzero(levels.edge_level >= 0)


def _boundary_codes(lay: Layout) -> np.ndarray:
    """Per edge, minus the boundary code ``bc | m << BC_BITS`` (bc: the codes of
    :data:`fvswe.boundary.KINDS`; m: the edge's index among the edges with tables),
    checked; 0 on interior edges."""
    boundary = lay.edge_cells[:, 1] < 0
    code = lay.edge_bc.astype(np.int32)
    bad = np.flatnonzero(boundary & ~np.isin(code, list(KINDS.values())))
    if bad.size:
        raise ConfigError(f"layout: boundary edge {bad[0]} has no condition")
    lv = level_edges(lay)
    code[lv] += np.arange(lv.size, dtype=np.int32) << cuda_header.BC_BITS
    return np.where(boundary, -code, 0)


def edge_arrays(lay: Layout) -> np.ndarray:
    """(E, 4) int32 ``(i, j, slot_i, slot_j)``, ``j`` minus the boundary code on the boundary."""
    idx = np.empty((lay.n_edges, 4), dtype=np.int32)
    idx[:, 0] = lay.edge_cells[:, 0]
    boundary = lay.edge_cells[:, 1] < 0
    idx[:, 1] = np.where(boundary, _boundary_codes(lay), lay.edge_cells[:, 1])
    idx[:, 2:] = lay.edge_slot
    return idx


def slot_codes(lay: Layout) -> np.ndarray:
    """(L*k,) int32 per slot: ``2 * neighbour + side`` (interior) or minus the boundary code;
    on a part, a halo cell's slot of an edge outside the part (no cell updates a halo cell,
    but the limiter visits its neighbours: fvswe.parallel.GpuHalo) is a wall."""
    e = lay.cell_edges.ravel()
    side = lay.cell_side.ravel().astype(np.int32)
    ij = lay.edge_cells[e]
    boundary = ij[:, 1] < 0
    nbr = np.where(side == 0, ij[:, 1], ij[:, 0])
    code = np.where(boundary, _boundary_codes(lay)[e], 2 * nbr + side)
    return np.where(e < 0, -KINDS["wall"], code).astype(np.int32)


def grid_shared_bytes(layers: int, dtype, block: int) -> int:
    """Shared memory of a grid.cu block (its TILE_VALUES): per edge of the tile both sides'
    slot values and ||D||, ``(2 nvar + 1)`` reals."""
    rows, nvar = block // GRID_TILE_X, 6 if layers == 2 else 3
    edges = rows * (GRID_TILE_X + 1) + (rows + 1) * GRID_TILE_X
    return (2 * nvar + 1) * edges * np.dtype(dtype).itemsize


def grid_block(layers: int, dtype) -> int:
    """grid.cu's default threads a block (:data:`GRID_LAUNCH`, else :data:`DEFAULT_BLOCK`)."""
    return GRID_LAUNCH.get((layers, np.dtype(dtype) == np.float64), (DEFAULT_BLOCK, 0))[0]


def grid_blocks(nx: int, ny: int, block: int) -> int:
    """Blocks of a grid.cu launch: one per tile of ``GRID_TILE_X`` by ``block / GRID_TILE_X``
    cells, row-major over the tiles."""
    rows = block // GRID_TILE_X
    return -(-nx // GRID_TILE_X) * -(-ny // rows)


class GridArrays(NamedTuple):
    """What grid.cu reads besides the state: the grid's shape, ``length`` (the ``nx``
    column widths, then the ``ny`` row heights), ``side_code`` (the boundary codes of the
    south, north, west and east sides, each in increasing ix or iy) and ``area`` (one value
    when every cell's is the same, else one per cell: ``area_stride`` 0 or 1)."""

    nx: int
    ny: int
    length: np.ndarray
    side_code: np.ndarray
    area: np.ndarray
    area_stride: int


def grid_arrays(lay: Layout) -> GridArrays | None:
    """grid.cu's arrays when ``lay`` is a Cartesian grid in row-major order whose slots
    grid.cu reproduces bit for bit (those of :class:`fvswe.grid.Grid`'s mesh in its own
    cell order: every slot's neighbour and side, normal and length checked), else None.

    The run then keeps the grid's order: a Simulation renumbering its cells (``order``)
    gets None here, and the other variants."""
    L = lay.n_cells
    if lay.k != 4 or L == 0 or lay.n_owned_cells is not None:
        return None
    code = slot_codes(lay).reshape(L, 4)
    nx = int(code[0, 2] >> 1) if code[0, 2] >= 0 else L  # cell 0's north neighbour: nx
    if not 0 < nx <= L or L % nx:
        return None
    ny = L // nx
    code = code.reshape(ny, nx, 4)
    c = np.arange(L, dtype=np.int64).reshape(ny, nx)
    ix, iy = np.arange(nx)[None, :], np.arange(ny)[:, None]
    sides = ((iy == 0, 2 * (c - nx) + 1), (ix == nx - 1, 2 * (c + 1)),
             (iy == ny - 1, 2 * (c + nx)), (ix == 0, 2 * (c - 1) + 1))  # fmt: skip
    for local, (boundary, neighbour) in enumerate(sides):
        boundary = np.broadcast_to(boundary, c.shape)
        got = code[:, :, local]
        if not (np.array_equal(got < 0, boundary) and (got == neighbour)[~boundary].all()):
            return None
    # each edge's normal, bits and signed zeros, as grid.cu forms its owner slot's
    owner = lay.edge_slot[:, 0] & 3
    want = GRID_NORMALS[(lay.edge_cells[:, 1] < 0).astype(np.intp), owner].astype(lay.dtype)
    if want.tobytes() != np.ascontiguousarray(lay.edge_normal).tobytes():
        return None
    length = lay.edge_length[lay.cell_edges.reshape(ny, nx, 4)]
    width, height = length[0, :, 0], length[:, 0, 1]
    if not ((length[:, :, 0::2] == width[None, :, None]).all()
            and (length[:, :, 1::2] == height[:, None, None]).all()):  # fmt: skip
        return None
    side_code = np.concatenate((code[0, :, 0], code[-1, :, 2], code[:, 0, 3], code[:, -1, 1]))
    uniform = bool((lay.area == lay.area[0]).all())
    return GridArrays(
        nx=nx,
        ny=ny,
        length=np.concatenate((width, height)).astype(lay.dtype),
        side_code=(-side_code).astype(np.int32),
        area=np.ascontiguousarray(lay.area[:1] if uniform else lay.area),
        area_stride=0 if uniform else 1,
    )


def block_arrays(lay: Layout, cells: int, interior_first: bool = False) -> tuple[np.ndarray, ...]:
    """The ``block`` variant's edge tasks (:func:`fvswe.backends.layout.block_edges`, in its
    ``interior_first`` order): ``(start, task, normal, length)``; ``task`` (T, 4) int32
    ``(i, j, slot_i, slot_j)`` as :func:`edge_arrays` with the slots local to the task's
    block (``cells * k`` of them) and -1 on a side the block does not own; ``start``
    (n_blocks + 1) int32."""
    start, edge, own_i, own_j = block_edges(lay.edge_cells, lay.n_cells, cells, interior_first)
    task = edge_arrays(lay)[edge]
    base = np.repeat(np.arange(start.size - 1) * (cells * lay.k), np.diff(start))
    task[:, 2] = np.where(own_i, task[:, 2] - base, -1)
    task[:, 3] = np.where(own_j, task[:, 3] - base, -1)
    normal = np.ascontiguousarray(lay.edge_normal[edge])
    return start.astype(np.int32), task, normal, np.ascontiguousarray(lay.edge_length[edge])


def default_variant(scheme: str, n_cells: int, twice: float = 1.0) -> str:
    """The variant a run gets when none is asked for: the fastest measured on the H100.

    ``twice``: the fraction of the edges the ``block`` variant evaluates twice in the run's
    cell order (:func:`fvswe.backends.layout.twice_evaluated`); the default 1.0 stands for
    an order not known to keep blocks compact.

    benchmarks/results/throughput_gpu_h100_test1.json (test1, lagged, RCM order; 4000,
    64000, 1.02M and 2.08M cells; float32 and float64): at 4000 cells ``slot`` is fastest
    for every scheme and dtype (latency-bound: k threads per cell); from 64000 up
    ``gather`` is fastest for pvm-ifcp (2.08M float32: 10.8 G cell-steps/s vs 6.6 G for
    edge) and ``edge`` for roe and ir-roe (2.08M float32: 6.0 G vs 4.5 G for gather;
    float64: 2.5 G vs 1.65 G), but for a tie within 1% at 64000 float32. The switch to
    the large-mesh rule lies between the measured 4000 and 64000; :data:`SLOT_BELOW`
    takes their geometric middle. The rule depends on neither dtype nor layers;
    single-layer schemes (hll, hll-wd: cheap fluxes like pvm-ifcp) were not measured.

    benchmarks/results/throughput_gpu_h100_block_phase1.json (test1, 2.08M cells, Hilbert
    order, 128 cells a block: 12.8 % of the edges twice): ``block`` is the fastest for
    every scheme and dtype (float32 / float64 G cell-steps/s: pvm-ifcp 11.45 / 6.02
    against gather 9.86 / 5.57; roe 4.91 / 2.41 and ir-roe 4.93 / 2.39 against edge
    4.75 / 2.25 and 4.78 / 2.23). benchmarks/results/block_sweep_h100.json then tuned its
    shapes (:data:`BLOCK_SHAPES`: 9.1 % twice in blocks of 256 cells, 12.8 % of 128):
    pvm-ifcp 12.23 / 6.87, roe 5.63 / 2.50; and in RCM order (95 % twice) ``block`` lost to
    the RCM rule's variant for all four (pvm-ifcp 8.51 / 5.46 against gather 9.76 / 5.50,
    roe 3.61 / 1.57 against edge 4.64 / 2.15). Its flux work grows as 1 + ``twice``;
    counting all of its Hilbert time as flux work (the smallest break-even), the tuned
    shapes would tie the Hilbert edge / gather times above at ``twice`` = 0.21 (roe
    float64), 0.29 (roe float32), 0.35 (pvm-ifcp float32) and 0.39 (pvm-ifcp float64), so
    :data:`BLOCK_TWICE_BELOW` = 0.15 gives ``block`` only to orders those numbers favour
    (Hilbert, Morton); band orders (RCM, GPS: 88 to 96 % twice, docs/GPU.md) keep the RCM
    rule above. ``twice`` is computed for the run's block shape (:func:`resolve_variant`).
    Block was measured at 2.08M cells only: from :data:`SLOT_BELOW` up its rule is the
    large-mesh one.
    """
    if n_cells < SLOT_BELOW:
        return "slot"
    if twice < BLOCK_TWICE_BELOW:
        return "block"
    return "edge" if scheme in EDGE_SCHEMES else "gather"


def requested_variant(variant: str | None) -> str | None:
    """``variant`` when given, else the environment variable ``FVSWE_GPU_VARIANT`` when set."""
    return variant or os.environ.get("FVSWE_GPU_VARIANT") or None


def resolve_variant(
    variant: str | None,
    scheme: str,
    n_cells: int,
    edge_cells: np.ndarray | None = None,
    cells: int = BLOCK_CELLS,
    grid: bool = False,
) -> str:
    """The variant a backend runs: :func:`requested_variant`, else ``grid`` on a Cartesian
    grid (``grid``: :func:`grid_arrays` found one), else :func:`default_variant` with the
    twice-evaluated fraction of ``edge_cells`` in blocks of ``cells`` (unknown without
    ``edge_cells``; :class:`GpuBackend` passes its :func:`block_shape`'s cells).

    ``grid`` asked for on another mesh is a ConfigError.
    """
    chosen = requested_variant(variant)
    if chosen == GRID_VARIANT and not grid:
        raise ConfigError(
            "variant: 'grid' needs a Cartesian grid in its row-major order (fvswe.grid.Grid's "
            "mesh, order 'none'); this mesh is not one"
        )
    if chosen or grid:
        return chosen or GRID_VARIANT
    known = edge_cells is not None and n_cells >= SLOT_BELOW
    twice = twice_evaluated(edge_cells, cells) if known else 1.0
    return default_variant(scheme, n_cells, twice)


def step_plan(
    variant: str, dt_mode: str, parity: int, layers: int = 2
) -> list[tuple[str, int, int, int]]:
    """Kernels of one step as ``(kernel, op, src, dst)``; src/dst index the two state
    buffers (step ``parity`` 0 reads buffer 0 and writes 1).

    edge: edge pass, then the volume pass updating and reducing dt (lagged), or reducing
    dt first (non-lagged), or updating and checking the fixed dt against the stable
    one (fixed: the reduction leaves dt alone). gather, slot, block: the same ops in one
    kernel. Two layers: then the limiter's ``limit_theta`` and ``limit_update``
    (docs/SCHEMES.md §13.4), reading the old state and rewriting the new one where it limits.
    """
    update = OP_UPDATE | (OP_DT if dt_mode == "fixed" else 0)
    src, dst = parity, 1 - parity
    if variant == "edge":
        plan = [("edge_pass", OP_COUNT, src, src)]
        volume = "volume_pass"
    else:
        plan, volume, update = [], f"{variant}_step", update | OP_COUNT
    if dt_mode == "lagged":
        update |= OP_DT
    elif dt_mode == "nonlagged":
        plan.append((volume, OP_DT, src, src))
    plan.append((volume, update, src, dst))
    if layers == 2:
        plan += [("limit_theta", 0, src, src), ("limit_update", 0, src, dst)]
    return plan


def initial_dt_plan(variant: str) -> list[tuple[str, int, int, int]]:
    """The speeds-only pass giving the lagged mode its first dt (flags not counted)."""
    if variant == "edge":
        return [("edge_pass", 0, 0, 0), ("volume_pass", OP_DT, 0, 0)]
    return [(f"{variant}_step", OP_DT, 0, 0)]


def limiter_arrays(layout: Layout) -> dict[str, np.ndarray]:
    """The limiter's per-cell arrays as a step finds them (two layers; none for one): the
    candidate list, theta = 1 and no marks (fields of the control block of the same names)."""
    if layout.model.layers != 2:
        return {}
    L = layout.n_cells
    return {"lim_cells": np.zeros(L, dtype=np.int32), "lim_theta": np.ones(2 * L),
            "lim_claim": np.zeros(L, dtype=np.int32)}  # fmt: skip


def pointed_arrays(layout: Layout) -> dict[str, np.ndarray]:
    """The host arrays the control block points to (its pointer fields of the same names),
    those a run has: the friction coefficients (per cell, or one where all are equal:
    ``friction_stride``), the interfacial ones, the boundary tables with the
    per-step fluxes of their edges, Coriolis f per cell and the wind table."""
    out = {}
    for name in ("friction_coef", "interfacial_coef"):
        if getattr(layout, name) is not None:
            out[name] = np.ascontiguousarray(getattr(layout, name), dtype=np.float64)
    coef = out.get("friction_coef")
    if coef is not None and coef.size and (coef == coef[0]).all():  # one value, read once
        out["friction_coef"] = coef[:1]
    m = level_edges(layout)
    if m.size:
        lv = layout.levels
        out["level_table"] = lv.edge_level[m].astype(np.int32)
        out["level_offsets"] = lv.offsets.astype(np.int64)
        out["level_times"] = lv.times.astype(np.float64)
        out["level_values"] = lv.values.astype(np.float64)
        out["level_flux"] = np.zeros(2 * m.size, dtype=np.float64)
    if layout.coriolis is not None:
        out["coriolis_f"] = np.ascontiguousarray(layout.coriolis, dtype=np.float64)
    if layout.wind is not None:
        for name in ("times", "u", "v"):
            out[f"wind_{name}"] = np.ascontiguousarray(getattr(layout.wind, name), np.float64)
    return out


def steps_left(ctrl: np.void, t_end: float, launched: int = 0) -> tuple[int, bool]:
    """``(steps, exact)``: how many steps remain beyond the ``launched`` ones not yet seen
    in ``ctrl``. Exact when ``max_steps`` binds; else estimated from the current dt (plus
    one, as a lagged dt may shrink), and then the device skips any surplus."""
    left = int(ctrl["max_steps"] - ctrl["steps"]) - launched
    dt = float(ctrl["dt"])
    if dt > 0 and math.isfinite(dt) and math.isfinite(t_end):
        est = math.ceil((t_end - float(ctrl["t"])) / dt) + 1 - launched
        if est < left:
            return est, False
    return left, True


def batch_size(ctrl: np.void, t_end: float, batch: int, launched: int = 0) -> int:
    """Steps in the next graph: a power of two (>= 2, <= ``batch``), few idle steps: never
    past an exact count (but for a single step left), an estimate rounded up."""
    left, exact = steps_left(ctrl, t_end, launched)
    left = max(left, 1)
    if exact:
        return min(batch, 2 ** max(1, int(math.log2(left))))
    return min(batch, 2 ** max(1, math.ceil(math.log2(left))))


class GpuBackend:
    """The pipeline on a CUDA GPU (a :class:`~fvswe.backends.base.Backend`).

    ``variant`` is ``edge``, ``gather``, ``slot``, ``block`` or ``grid`` (else the environment
    variable ``FVSWE_GPU_VARIANT``, else :func:`resolve_variant`'s default); ``block`` the
    threads per block (default :data:`DEFAULT_BLOCK`, the ``block`` variant's
    :func:`block_shape`, the ``grid`` variant's :func:`grid_block`); ``cells`` the cells a
    thread block owns in the ``block`` variant (default its :func:`block_shape`);
    ``batch`` the most steps one CUDA graph replays; ``fast_math`` compiles a float32 run's
    modules with :data:`FAST_MATH` (a ConfigError for float64). ``threads`` (the CPU
    backend's) is accepted for a uniform constructor and unused: the device runs the steps.
    """

    name = "gpu"
    #: No CPU threads run the steps.
    threads = None

    def __init__(
        self,
        layout: Layout,
        scheme: str,
        cfl: float = 0.9,
        dt_mode: str = "lagged",
        dt_fixed: float | None = None,
        *,
        variant: str | None = None,
        block: int | None = None,
        cells: int | None = None,
        batch: int = DEFAULT_BATCH,
        graphs: bool = True,
        fast_math: bool = False,
        threads: int | None = None,
        runtime=None,
    ) -> None:
        if runtime is None:
            ok, reason = available()
            if not ok:
                raise BackendUnavailable(f"backend 'gpu' is unavailable: {reason}")
            import cupy as runtime
        cupy = runtime

        if dt_mode not in DT_MODES:
            raise ConfigError(f"dt_mode: unknown {dt_mode!r} (choose from {', '.join(DT_MODES)})")
        if dt_mode == "fixed" and not (dt_fixed and dt_fixed > 0):
            raise ConfigError("dt: a fixed time step needs a positive dt")
        shape = block_shape(scheme, layout.model.layers, layout.dtype, layout.k)
        cells = cells or shape.cells
        block_asked = block
        block = block or grid_block(layout.model.layers, layout.dtype)
        grid = grid_arrays(layout) if requested_variant(variant) in (None, GRID_VARIANT) else None
        need = grid_shared_bytes(layout.model.layers, layout.dtype, block)
        if grid is not None and need > SHARED_MAX:  # the tile does not fit: another variant
            if requested_variant(variant) == GRID_VARIANT:
                raise ConfigError(
                    f"variant: 'grid' with block {block} needs {need} B of shared memory a block "
                    f"(at most {SHARED_MAX}); use a smaller block"
                )
            grid = None
        variant = resolve_variant(
            variant, scheme, layout.n_cells, layout.edge_cells, cells, grid is not None
        )
        defaults = {"block": shape.threads, GRID_VARIANT: block}
        block = block_asked or defaults.get(variant, DEFAULT_BLOCK)
        if block % 32 or not 32 <= block <= 1024:
            raise ConfigError(f"block: a multiple of 32 in [32, 1024], got {block}")
        lay = layout
        self.layout, self.model = lay, lay.model
        self._area64 = None  # float64 cell areas on the device, for layer_mass
        self.dtype = np.dtype(lay.dtype)
        self.scheme, self.variant, self.dt_mode = scheme, variant, dt_mode
        self.cfl, self.dt_fixed = float(cfl), dt_fixed
        self.block, self.graphs, self.fast_math = block, graphs, fast_math
        self.batch = 2 ** max(1, int(math.log2(max(batch, 2))))  # a power of two: even for gather
        self.sync_every = max(SYNC_EVERY, self.batch)
        self.cells, self.interior_first = cells, shape.interior_first
        shared = block_shared(cells, lay.k, self.model.layers, self.dtype)
        if variant == "block" and lay.owned_cells != lay.n_cells:
            raise ConfigError("variant: 'block' does not run on GPU ranks yet; use gather or edge")
        if variant == "block" and shared > BLOCK_SHARED_MAX:
            raise ConfigError(f"cells: {cells} cells need {shared} B of shared memory (> 48 KiB)")
        opts = compile_options(
            scheme, self.model.layers, self.dtype, variant, lay.k, block, cells, fast_math
        )
        mod = module(opts, variant, runtime)
        names = ("find_invalid", "debug_flux", "level_inflow") + (
            ("edge_pass", "volume_pass") if variant == "edge" else (f"{variant}_step",)
        )
        if self.model.layers == 2:
            names += ("limit_theta", "limit_update")
        self._k = {n: mod.get_function(n) for n in names}  # compiles and loads before capture
        self._cp = cupy
        self.stream = cupy.cuda.Stream(non_blocking=True)
        real = self.dtype.type
        self._params = (real(self.model.g), real(self.model.r), real(self.model.eps_h))
        L, E = lay.n_cells, lay.n_edges
        # A part of a distributed run updates its owned cells [0, owned) only, and counts the
        # flags of its owned edges [0, owned_edges) (fvswe.partition; docs/PARALLEL.md).
        self._L, self._E = np.int32(lay.owned_cells), np.int32(lay.owned_edges)
        self._cell_grid = (lay.owned_cells + block - 1) // block
        if variant == "slot":  # k threads per cell
            per_block = block // lay.k
            self._cell_grid = (lay.owned_cells + per_block - 1) // per_block
        if variant == "block":  # cells per block
            self._cell_grid = (lay.owned_cells + self.cells - 1) // self.cells
        self._edge_grid = (lay.owned_edges + block - 1) // block
        self._limit_grid = min((lay.owned_cells + block - 1) // block, LIMIT_BLOCKS)
        if variant == GRID_VARIANT:  # one block a tile
            self._cell_grid = grid_blocks(grid.nx, grid.ny, block)
        with self.stream:
            dev = cupy.asarray
            self._area = dev(lay.area)
            self._W = cupy.empty((L, 2 if self.model.layers == 2 else 1, 4), dtype=self.dtype)
            self._partial = cupy.empty(self._cell_grid, dtype=self.dtype)
            self._ctrl = cupy.zeros(CTRL_DTYPE.itemsize, dtype=np.uint8)
            self._first = cupy.empty(1, dtype=np.int32)
            self._W2 = cupy.empty_like(self._W)
            # per slot (code, normal, length): the gather and slot steps and the two-layer
            # limiter read them; one-layer edge, block and grid runs hold none
            self._slot_tables = ()
            if variant in ("gather", "slot") or self.model.layers == 2:
                e = lay.cell_edges.ravel()
                self._slot_tables = (
                    dev(slot_codes(lay)),
                    dev(np.ascontiguousarray(lay.edge_normal[e])),
                    dev(np.ascontiguousarray(lay.edge_length[e])),
                )
            if variant == "edge":
                self._idx = dev(edge_arrays(lay))
                self._edge_normal = dev(lay.edge_normal)
                self._edge_length = dev(lay.edge_length)
                self._slots = cupy.empty((L * lay.k,) + self._W.shape[1:], dtype=self.dtype)
                n = lay.owned_edges  # a part's edges from a halo cell: computed, not counted
                self._halo_edges = (
                    np.int32(E - n),
                    self._idx[n:],
                    self._edge_normal[n:],
                    self._edge_length[n:],
                    (E - n + block - 1) // block,
                )
            elif variant == "block":
                start, task, normal, length = block_arrays(lay, cells, self.interior_first)
                self._cell_args = (dev(start), dev(task), dev(normal), dev(length))
            elif variant == GRID_VARIANT:
                self._cell_args = (np.int32(grid.nx), np.int32(grid.ny))
                self._grid_args = (dev(grid.area), np.int32(grid.area_stride), dev(grid.length),
                                   dev(grid.side_code))  # fmt: skip
        ctrl = np.zeros(1, dtype=CTRL_DTYPE)
        ctrl["dt"] = dt_fixed if dt_mode == "fixed" else math.nan
        ctrl["dt_fixed"] = dt_fixed or 0.0
        ctrl["cfl"] = self.cfl
        ctrl["fixed"] = dt_mode == "fixed"
        ctrl["friction"] = lay.friction_kind
        ctrl["g"] = self.model.g
        ctrl["r"] = self.model.r
        ctrl["eps_h"] = self.model.eps_h
        ctrl["owned"] = lay.owned_cells
        with self.stream:  # coefficients, tables and forcing, reached through the control block
            arrays = {**pointed_arrays(lay), **limiter_arrays(lay)}
            self._pointed = {k: cupy.asarray(a) for k, a in arrays.items()}
        for name, arr in self._pointed.items():
            ctrl[name] = arr.data.ptr
        ctrl["n_level"] = level_edges(lay).size
        coef = self._pointed.get("friction_coef")
        ctrl["friction_stride"] = coef is not None and coef.size > 1
        # every part of a distributed run counts the inflow, those without such edges too
        self._has_levels = lay.levels is not None and lay.levels.count > 0
        wind = lay.wind
        if wind is not None:
            ctrl["n_wind"], ctrl["wind_law"] = wind.times.size, wind.law
            ctrl["wind_cd"], ctrl["wind_ratio"] = wind.cd, wind.ratio
        self._write_ctrl(ctrl)
        self._host = ctrl[0]
        self._graphs: dict[int, object] = {}
        #: A distributed run's halo (fvswe.parallel.GpuHalo): ``after(kernel, op, W)`` follows
        #: every kernel of a plan, exchanging the halo rows of ``W`` once a step's update is
        #: final, the limiter's theta of the halo cells after ``limit_theta``, and reducing Δt
        #: over the ranks after a Δt pass, on this stream. None on one device.
        self.halo = None
        self.set_state(lay.W0)

    # -- control block ---------------------------------------------------------------------------
    def _write_ctrl(self, ctrl: np.ndarray, fields: tuple[str, ...] | None = None) -> None:
        """Copy the named fields (all when None) of a host control block to the device."""
        raw = ctrl.view(np.uint8)
        with self.stream:
            if fields is None:
                self._ctrl.set(raw, stream=self.stream)
                return
            for f in fields:
                off = CTRL_DTYPE.fields[f][1]
                size = CTRL_DTYPE.fields[f][0].itemsize
                self._ctrl[off : off + size].set(raw[off : off + size], stream=self.stream)

    def _read_ctrl(self) -> np.void:
        host = self._ctrl.get(stream=self.stream).view(CTRL_DTYPE)[0]
        self._host = host
        return host

    @property
    def t(self) -> float:
        return float(self._host["t"])

    @t.setter
    def t(self, value: float) -> None:
        """Restart the clock (e.g. a benchmark repeating a run from its initial state)."""
        ctrl = np.zeros(1, dtype=CTRL_DTYPE)
        ctrl["t"] = value
        self._write_ctrl(ctrl, ("t",))
        self._read_ctrl()

    @property
    def steps(self) -> int:
        return int(self._host["steps"])

    @property
    def dt(self) -> float:
        """The Δt of the next step as last read (NaN while a lagged one waits)."""
        return math.nan if self._need_dt else float(self._host["dt"])

    @property
    def check_every(self) -> int:
        """Steps between two blow-up checks of Simulation.run: each syncs the device."""
        return CHECK_EVERY_SYNCS * self.sync_every

    def cold_start_note(self) -> str | None:
        """None: the modules were compiled (or loaded from CuPy's cache) by the constructor."""
        return None

    # -- state ---------------------------------------------------------------------------------
    def set_state(self, W: np.ndarray) -> None:
        """Upload ``W (L, nvar)``; a lagged dt is then recomputed from the new state."""
        lay = self.layout
        P = pack_state(np.asarray(W, dtype=self.dtype), lay.H, lay.area, self.model.layers)
        self._W.set(P, stream=self.stream)
        ctrl = np.zeros(1, dtype=CTRL_DTYPE)
        ctrl["dt"] = self.dt_fixed if self.dt_mode == "fixed" else math.nan
        self._write_ctrl(ctrl, ("dt", "stalled"))
        self._need_dt = self.dt_mode == "lagged"

    def get_state(self) -> np.ndarray:
        """A host copy ``(L, nvar)`` of the current state, current cell order."""
        return unpack_state(self._W.get(stream=self.stream), self.model.layers)

    def layer_mass(self, area: np.ndarray) -> list[float]:
        """Volume of each layer, ``Σ area_i h_k,i`` in float64, reduced on the device: an
        output time or the end of a ``run()`` costs a few launches, not a copy of the state."""
        cupy = self._cp
        if self._area64 is None or self._area64.size != area.size:
            self._area64 = cupy.asarray(area, dtype=np.float64)
        with self.stream:
            return [
                float(cupy.dot(self._W[:, vec, 0].astype(np.float64), self._area64))
                for vec in range(self._W.shape[1])
            ]

    def counters(self) -> dict[str, int | float]:
        """Event counts; with level, discharge or characteristic boundaries also the inflow
        counters :data:`fvswe.boundary.INFLOW_KEYS` (m^3 in through them, per layer)."""
        c = self._read_ctrl()
        out = {key: int(c[field]) for key, field in COUNTERS.items()}
        if self._has_levels:
            for key in INFLOW_KEYS[: self.model.layers]:
                out[key] = float(c[key])
        return out

    @property
    def first_clip(self) -> tuple[int, int, float] | None:
        """``(cell, step, t)`` of the first step that clipped a depth (its smallest cell)."""
        c = self._host
        if not c["clip_step"]:
            return None
        return int(c["clip_cell"]) + NO_CELL, int(c["clip_step"]) - 1, float(c["clip_t"])

    @property
    def courant_violation(self) -> tuple[int, int, float, float] | None:
        """``(cell, step, t, Courant number)`` of the first fixed step above the stable one:
        its smallest cell with a Courant number > 1 and the step's largest one."""
        c = self._host
        if not c["cfl_step"]:
            return None
        cell = int(c["cfl_cell"]) + NO_CELL
        return cell, int(c["cfl_step"]) - 1, float(c["cfl_t"]), float(c["courant"])

    def snapshot(self) -> dict:
        """Everything a bit-for-bit restart needs: state, time, steps, pending dt, counters."""
        c = self._read_ctrl()
        dt = math.nan if self._need_dt else float(c["dt"])
        return {"W": self.get_state(), "t": float(c["t"]), "steps": int(c["steps"]), "dt": dt,
                "counters": self.counters()}  # fmt: skip

    def restore(self, snap: dict) -> None:
        """The inverse of :meth:`snapshot`."""
        self.set_state(snap["W"])
        ctrl = np.zeros(1, dtype=CTRL_DTYPE)
        ctrl["t"], ctrl["steps"] = snap["t"], snap["steps"]
        fields = ["t", "steps"]
        if self.dt_mode == "lagged" and math.isfinite(snap["dt"]):
            ctrl["dt"] = snap["dt"]
            fields.append("dt")
            self._need_dt = False
        counts = snap["counters"]
        for key, field in COUNTERS.items():
            ctrl[field] = counts.get(key, 0)
        for key in INFLOW_KEYS:
            ctrl[key] = counts.get(key, 0.0)
        self._write_ctrl(ctrl, (*fields, *COUNTERS.values(), *INFLOW_KEYS))
        self._read_ctrl()

    def first_invalid(self) -> tuple[int, int] | None:
        """The first cell (and component) holding NaN/inf or a negative depth, else None."""
        with self.stream:
            self._first.fill(INT32_MAX)
            grid = (int(self._L) + self.block - 1) // self.block  # a thread per cell
            self._k["find_invalid"]((grid,), (self.block,), (self._L, self._W, self._first))
            v = int(self._first.get(stream=self.stream)[0])
        return None if v == INT32_MAX else divmod(v, 8)

    # -- steps ---------------------------------------------------------------------------------
    def _launch_kernel(self, kernel: str, op: int, win, wout) -> None:
        """One kernel of a plan on state buffers ``win`` (the step's old state) and ``wout``.
        On a part the edge pass also runs over the edges from a halo cell, flags uncounted."""
        slots = self._slot_tables
        if kernel == "edge_pass":
            own = (self._E, self._idx, self._edge_normal, self._edge_length, self._edge_grid)
            edges = [(*own, op)]
            if self._halo_edges[0]:
                edges.append((*self._halo_edges, op & ~OP_COUNT))
            for n, idx, normal, length, grid, o in edges:
                self._k[kernel](
                    (grid,), (self.block,),
                    (n, win, idx, normal, length, self._slots, self._ctrl, *self._params,
                     np.int32(o)),
                )  # fmt: skip
            return
        if kernel == "volume_pass":
            grid = self._cell_grid
            args = (self._L, win, wout, self._area, self._slots, self._ctrl, self._partial,
                    self._params[2], np.int32(op))  # fmt: skip
        elif kernel == "limit_theta":
            grid = self._limit_grid
            args = (win, self._area, *slots, self._ctrl, *self._params)
        elif kernel == "limit_update":
            grid = self._limit_grid
            args = (win, wout, self._area, *slots, self._ctrl, *self._params)
        elif self.variant == GRID_VARIANT:  # the grid's shape, widths, heights, side codes
            grid = self._cell_grid
            args = (self._L, *self._cell_args, win, wout, *self._grid_args, self._ctrl,
                    self._partial, *self._params, np.int32(op))  # fmt: skip
        else:  # gather, slot: per-slot tables; block: per-task ones
            grid = self._cell_grid
            tables = self._cell_args if self.variant == "block" else slots
            args = (self._L, win, wout, self._area, *tables, self._ctrl, self._partial,
                    *self._params, np.int32(op))  # fmt: skip
        self._k[kernel]((grid,), (self.block,), args)

    def _run(self, plan: list[tuple[str, int, int, int]]) -> None:
        """Launch the kernels of a plan (see :func:`step_plan`)."""
        bufs = (self._W, self._W2)
        for kernel, op, src, dst in plan:
            self._launch_kernel(kernel, op, bufs[src], bufs[dst])
            if self.halo is not None:
                self.halo.after(kernel, op, bufs[dst])

    def _initial_dt(self) -> None:
        """Speeds-only pass on the current state: the first dt of the lagged mode."""
        self._run(initial_dt_plan(self.variant))

    def _step(self, parity: int) -> None:
        """Launch one step (skipped on the device once t_end or max_steps is reached)."""
        self._run(step_plan(self.variant, self.dt_mode, parity, self.model.layers))

    def _launch(self, n: int) -> None:
        """Launch ``n`` (even) steps, as one CUDA graph replay when graphs are on."""
        if not self.graphs:
            for s in range(n):
                self._step(s % 2)
            return
        if n not in self._graphs:
            with self.stream:
                self.stream.begin_capture()
                try:
                    for s in range(n):
                        self._step(s % 2)
                finally:
                    self._graphs[n] = self.stream.end_capture()
        self._graphs[n].launch(stream=self.stream)

    def advance(self, t_end: float, max_steps: int) -> tuple[float, int]:
        """Whole steps until ``t == t_end`` (last step clipped) or ``max_steps`` steps.

        Launches graphs of up to ``batch`` steps back to back while more steps surely
        remain (at most ``sync_every`` steps), then reads ``t``; steps past the goal are
        skipped by the kernels themselves.
        """
        start = self.steps
        if max_steps <= 0 or not self.t < t_end:
            return self.t, 0
        ctrl = np.zeros(1, dtype=CTRL_DTYPE)
        ctrl["t_end"] = t_end
        ctrl["max_steps"] = start + max_steps
        self._write_ctrl(ctrl, ("t_end", "max_steps"))
        with self.stream:
            if self._need_dt:
                self._initial_dt()
                self._need_dt = False
            c = self._read_ctrl()
            while True:
                before, launched = int(c["steps"]), 0
                while True:
                    n = batch_size(c, t_end, self.batch, launched)
                    self._launch(n)
                    launched += n
                    left, exact = steps_left(c, t_end, launched)
                    if launched >= self.sync_every or left < (1 if exact else 2):
                        break
                c = self._read_ctrl()
                if (c["steps"] >= c["max_steps"] or c["t"] >= t_end or c["stalled"]
                        or c["steps"] == before):  # fmt: skip
                    break
        return self.t, self.steps - start

    def bytes_per_step(self) -> int:
        """Compulsory device-memory traffic of one lagged step, neighbour reads all cached.

        grid: read and write the state and the grid's widths, heights and side codes (and
        one area, or one per cell). gather, slot: read and write the state, read the per-slot
        edge data; block: read and
        write the state, read the per-task edge data (each edge once or twice); edge: the edge
        pass reads the state and edge data and writes the slots, the volume pass reads
        the slots and the state and writes the state. The limiter's kernels add nothing
        compulsory: they read one flag unless the step has candidates (a few cells).
        """
        state = self._W.nbytes + (self._area.nbytes if self.model.layers == 1 else 0)
        if self.variant == "edge":
            edges = self._idx.nbytes + self._edge_normal.nbytes + self._edge_length.nbytes
            return 3 * state + edges + 2 * self._slots.nbytes
        if self.variant == "block":
            return 2 * state + sum(a.nbytes for a in self._cell_args)
        if self.variant == GRID_VARIANT:  # the grid's widths, heights and side codes
            return 2 * state + self._grid_args[2].nbytes + self._grid_args[3].nbytes
        return 2 * state + sum(a.nbytes for a in self._slot_tables)

    # -- tests -----------------------------------------------------------------------------------
    def debug_flux(self, Wi, Wj, Hi, Hj, normal):
        """The compiled scheme's per-edge flux on host arrays: ``(F-, F+, ||D||, flags)``."""
        cp = self._cp
        n = len(Wi)
        nvar = self.model.nvar
        with self.stream:
            inputs = (Wi, Wj, np.broadcast_to(Hi, (n,)), np.broadcast_to(Hj, (n,)), normal)
            args = [cp.asarray(np.ascontiguousarray(a, dtype=self.dtype)) for a in inputs]
            Fm = cp.empty((n, nvar), dtype=self.dtype)
            Fp = cp.empty((n, nvar), dtype=self.dtype)
            d = cp.empty(n, dtype=self.dtype)
            flags = cp.empty(n, dtype=np.int32)
            self._k["debug_flux"](
                ((n + self.block - 1) // self.block,), (self.block,),
                (np.int32(n), *args, *self._params, Fm, Fp, d, flags),
            )  # fmt: skip
            return Fm.get(), Fp.get(), d.get(), flags.get()
