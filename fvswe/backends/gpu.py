"""GPU backend (CuPy): the pipeline of :mod:`fvswe.backends.cpu.pipeline` in CUDA kernels.

Everything stays on the device for the whole run, ``t`` and ``dt`` included: the
step kernels read the control block (:data:`CTRL_DTYPE`), skip themselves once
``t_end`` or ``max_steps`` is reached, and the last block of each step's final
kernel advances ``t`` and sets the next ``dt``. :meth:`GpuBackend.advance`
replays CUDA graphs of a batch of steps and reads the control block once per
batch, so no host synchronisation happens per step.

Three variants, same results bit for bit (float64):

- ``edge``: the paper's design; an edge pass writes per-cell slots, a volume
  pass sums them, updates and reduces dt (2 launches a step, 3 non-lagged);
- ``gather``: one thread per cell evaluates the cell's edges with the edge's
  orientation and updates the cell (1 launch a step, 2 non-lagged), alternating
  two state buffers; each interior edge is evaluated twice, no slot traffic;
- ``slot``: as ``gather``, with one thread per slot and the cell's sum in shared
  memory (k times the threads in flight: for small, latency-bound meshes).

And one for a Cartesian grid (:class:`fvswe.grid.Grid`'s mesh in its row-major order),
chosen by default where a layout is one (:func:`grid_arrays`):

- ``grid``: ``gather`` with each slot's neighbour, normal, length and boundary code
  found by index arithmetic: no per-slot arrays, the same results bit for bit.

The CUDA sources are ``fvswe/backends/cuda/*.cu`` and the device physics emitted
from the Numba modules by :mod:`fvswe.codegen` (docs/CODEGEN.md); a module is
compiled once per (scheme, layers, dtype, variant, k, block) with ``-D`` options
and cached. CuPy is imported lazily: ``import fvswe`` and the CPU backend never
need it.
"""

from __future__ import annotations

import math
import os
import re
from functools import cache
from pathlib import Path
from typing import NamedTuple

import numpy as np

from ..boundary import INFLOW_KEYS, KINDS
from ..errors import BackendUnavailable, ConfigError
from ..schemes import registry
from . import cuda_header
from .cuda_header import CTRL_DTYPE, NO_CELL, OP_COUNT, OP_DT, OP_UPDATE
from .layout import Layout

CUDA_DIR = Path(__file__).with_name("cuda")
VARIANTS = ("edge", "gather", "slot")
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
#: Static shared memory a CUDA block may hold (grid.cu's static_assert).
SHARED_MAX = 48 * 1024
DT_MODES = ("lagged", "nonlagged", "fixed")
#: Meshes below this many cells run the ``slot`` variant by default (:func:`default_variant`).
SLOT_BELOW = 16_000
#: Schemes whose per-edge flux costs enough that ``edge`` (each edge evaluated once) beats
#: ``gather`` (each interior edge evaluated twice, no slot traffic) on large meshes.
EDGE_SCHEMES = frozenset(s.name for s in registry.SCHEMES if s.costly)
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
}


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


def compile_options(
    scheme: str, layers: int, dtype, variant: str, k: int = 3, block: int = DEFAULT_BLOCK
) -> tuple[str, ...]:
    """NVRTC options of one module; float64 is compiled without FMA so it matches NumPy."""
    sid = registry.kernel_id(scheme, layers)
    if variant not in (*VARIANTS, GRID_VARIANT):
        choices = ", ".join((*VARIANTS, GRID_VARIANT))
        raise ConfigError(f"variant: unknown {variant!r} (choose from {choices})")
    double = np.dtype(dtype) == np.float64
    min_blocks = max(1, RESIDENT_THREADS.get((layers, double), 0) // block)
    return (
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


def module(options: tuple[str, ...], variant: str):
    """The compiled RawModule of ``variant`` for these options (compiled once per process)."""
    import cupy

    key = (variant, *options)
    if key not in _MODULES:
        _MODULES[key] = cupy.RawModule(code=source(variant), options=options)
    return _MODULES[key]


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
    """(L*k,) int32 per slot: ``2 * neighbour + side`` (interior) or minus the boundary code."""
    e = lay.cell_edges.ravel()
    side = lay.cell_side.ravel().astype(np.int32)
    ij = lay.edge_cells[e]
    boundary = ij[:, 1] < 0
    nbr = np.where(side == 0, ij[:, 1], ij[:, 0])
    return np.where(boundary, _boundary_codes(lay)[e], 2 * nbr + side).astype(np.int32)


def grid_shared_bytes(layers: int, dtype, block: int) -> int:
    """Shared memory of a grid.cu block (its TILE_VALUES): per edge of the tile both sides'
    slot values and ||D||, ``(2 nvar + 1)`` reals."""
    rows, nvar = block // GRID_TILE_X, 6 if layers == 2 else 3
    edges = rows * (GRID_TILE_X + 1) + (rows + 1) * GRID_TILE_X
    return (2 * nvar + 1) * edges * np.dtype(dtype).itemsize


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


def default_variant(scheme: str, n_cells: int) -> str:
    """The variant a run gets when none is asked for: the fastest measured on the H100.

    benchmarks/results/throughput_gpu_h100_test1.json (test1, lagged, RCM order; 4000,
    64000, 1.02M and 2.08M cells; float32 and float64): at 4000 cells ``slot`` is fastest
    for every scheme and dtype (latency-bound: k threads per cell); from 64000 up
    ``gather`` is fastest for pvm-ifcp (2.08M float32: 10.8 G cell-steps/s vs 6.6 G for
    edge) and ``edge`` for roe and ir-roe (2.08M float32: 6.0 G vs 4.5 G for gather;
    float64: 2.5 G vs 1.65 G), but for a tie within 1% at 64000 float32. The switch to
    the large-mesh rule lies between the measured 4000 and 64000; :data:`SLOT_BELOW`
    takes their geometric middle. The rule depends on neither dtype nor layers;
    single-layer schemes (hll, hll-wd: cheap fluxes like pvm-ifcp) were not measured.
    """
    if n_cells < SLOT_BELOW:
        return "slot"
    return "edge" if scheme in EDGE_SCHEMES else "gather"


def requested_variant(variant: str | None) -> str | None:
    """``variant`` when given, else the environment variable ``FVSWE_GPU_VARIANT`` when set."""
    return variant or os.environ.get("FVSWE_GPU_VARIANT") or None


def resolve_variant(variant: str | None, scheme: str, n_cells: int, grid: bool = False) -> str:
    """The variant a backend runs: :func:`requested_variant`, else ``grid`` on a Cartesian
    grid (``grid``: :func:`grid_arrays` found one), else :func:`default_variant`.

    ``grid`` asked for on another mesh is a ConfigError.
    """
    chosen = requested_variant(variant)
    if chosen == GRID_VARIANT and not grid:
        raise ConfigError(
            "variant: 'grid' needs a Cartesian grid in its row-major order (fvswe.grid.Grid's "
            "mesh, order 'none'); this mesh is not one"
        )
    return chosen or (GRID_VARIANT if grid else default_variant(scheme, n_cells))


def step_plan(variant: str, dt_mode: str, parity: int) -> list[tuple[str, int, int, int]]:
    """Kernels of one step as ``(kernel, op, src, dst)``; src/dst index the two state
    buffers of the gather and slot variants (step ``parity`` 0 reads buffer 0 and writes 1).

    edge: edge pass, then the volume pass updating and reducing dt (lagged), or reducing
    dt first (non-lagged), or updating and checking the fixed dt against the stable
    one (fixed: the reduction leaves dt alone). gather, slot: the same ops in one kernel.
    """
    update = OP_UPDATE | (OP_DT if dt_mode == "fixed" else 0)
    if variant == "edge":
        plan = [("edge_pass", OP_COUNT, 0, 0)]
        if dt_mode == "lagged":
            return plan + [("volume_pass", OP_UPDATE | OP_DT, 0, 0)]
        if dt_mode == "nonlagged":
            plan.append(("volume_pass", OP_DT, 0, 0))
        return plan + [("volume_pass", update, 0, 0)]
    step, src, dst = f"{variant}_step", parity, 1 - parity
    if dt_mode == "lagged":
        return [(step, OP_UPDATE | OP_DT | OP_COUNT, src, dst)]
    plan = [(step, OP_DT, src, src)] if dt_mode == "nonlagged" else []
    return plan + [(step, update | OP_COUNT, src, dst)]


def initial_dt_plan(variant: str) -> list[tuple[str, int, int, int]]:
    """The speeds-only pass giving the lagged mode its first dt (flags not counted)."""
    if variant == "edge":
        return [("edge_pass", 0, 0, 0), ("volume_pass", OP_DT, 0, 0)]
    return [(f"{variant}_step", OP_DT, 0, 0)]


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

    ``variant`` is ``edge``, ``gather``, ``slot`` or ``grid`` (else the environment variable
    ``FVSWE_GPU_VARIANT``, else :func:`resolve_variant`'s default); ``block`` the threads per block;
    ``batch`` the most steps one CUDA graph replays. ``threads`` (the CPU backend's) is
    accepted for a uniform constructor and unused: the device runs the steps.
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
        block: int = DEFAULT_BLOCK,
        batch: int = DEFAULT_BATCH,
        graphs: bool = True,
        threads: int | None = None,
    ) -> None:
        ok, reason = available()
        if not ok:
            raise BackendUnavailable(f"backend 'gpu' is unavailable: {reason}")
        import cupy

        if dt_mode not in DT_MODES:
            raise ConfigError(f"dt_mode: unknown {dt_mode!r} (choose from {', '.join(DT_MODES)})")
        if dt_mode == "fixed" and not (dt_fixed and dt_fixed > 0):
            raise ConfigError("dt: a fixed time step needs a positive dt")
        grid = grid_arrays(layout) if requested_variant(variant) in (None, GRID_VARIANT) else None
        need = grid_shared_bytes(layout.model.layers, layout.dtype, block)
        if grid is not None and need > SHARED_MAX:  # the tile does not fit: another variant
            if requested_variant(variant) == GRID_VARIANT:
                raise ConfigError(
                    f"variant: 'grid' with block {block} needs {need} B of shared memory a block "
                    f"(at most {SHARED_MAX}); use a smaller block"
                )
            grid = None
        variant = resolve_variant(variant, scheme, layout.n_cells, grid is not None)
        if block % 32 or not 32 <= block <= 1024:
            raise ConfigError(f"block: a multiple of 32 in [32, 1024], got {block}")
        lay = layout
        self.layout, self.model = lay, lay.model
        self._area64 = None  # float64 cell areas on the device, for layer_mass
        self.dtype = np.dtype(lay.dtype)
        self.scheme, self.variant, self.dt_mode = scheme, variant, dt_mode
        self.cfl, self.dt_fixed = float(cfl), dt_fixed
        self.block, self.graphs = block, graphs
        self.batch = 2 ** max(1, int(math.log2(max(batch, 2))))  # a power of two: even for gather
        self.sync_every = max(SYNC_EVERY, self.batch)
        opts = compile_options(scheme, self.model.layers, self.dtype, variant, lay.k, block)
        mod = module(opts, variant)
        names = ("find_invalid", "debug_flux") + (
            ("edge_pass", "volume_pass") if variant == "edge" else (f"{variant}_step",)
        )
        self._k = {n: mod.get_function(n) for n in names}  # compiles and loads before capture
        self._cp = cupy
        self.stream = cupy.cuda.Stream(non_blocking=True)
        real = self.dtype.type
        self._params = (real(self.model.g), real(self.model.r), real(self.model.eps_h))
        L, E = lay.n_cells, lay.n_edges
        self._L, self._E = np.int32(L), np.int32(E)
        self._cell_grid = (L + block - 1) // block
        if variant == "slot":  # k threads per cell
            per_block = block // lay.k
            self._cell_grid = (L + per_block - 1) // per_block
        self._edge_grid = (E + block - 1) // block
        # blocks of a step kernel (one partial dt each)
        grid_tiles = variant == GRID_VARIANT
        self._step_grid = grid_blocks(grid.nx, grid.ny, block) if grid_tiles else self._cell_grid
        with self.stream:
            dev = cupy.asarray
            self._area = dev(lay.area)
            self._W = cupy.empty((L, 2 if self.model.layers == 2 else 1, 4), dtype=self.dtype)
            self._partial = cupy.empty(self._step_grid, dtype=self.dtype)
            self._ctrl = cupy.zeros(CTRL_DTYPE.itemsize, dtype=np.uint8)
            self._first = cupy.empty(1, dtype=np.int32)
            if variant == "edge":
                self._idx = dev(edge_arrays(lay))
                self._normal = dev(lay.edge_normal)
                self._length = dev(lay.edge_length)
                self._slots = cupy.empty((L * lay.k,) + self._W.shape[1:], dtype=self.dtype)
            elif variant == GRID_VARIANT:
                self._grid = (np.int32(grid.nx), np.int32(grid.ny))
                self._area = dev(grid.area)
                self._area_stride = np.int32(grid.area_stride)
                self._code = dev(grid.side_code)
                self._length = dev(grid.length)
                self._W2 = cupy.empty_like(self._W)
            else:
                e = lay.cell_edges.ravel()
                self._code = dev(slot_codes(lay))
                self._normal = dev(np.ascontiguousarray(lay.edge_normal[e]))
                self._length = dev(np.ascontiguousarray(lay.edge_length[e]))
                self._W2 = cupy.empty_like(self._W)
        ctrl = np.zeros(1, dtype=CTRL_DTYPE)
        ctrl["dt"] = dt_fixed if dt_mode == "fixed" else math.nan
        ctrl["dt_fixed"] = dt_fixed or 0.0
        ctrl["cfl"] = self.cfl
        ctrl["fixed"] = dt_mode == "fixed"
        ctrl["friction"] = lay.friction_kind
        ctrl["g"] = self.model.g
        ctrl["r"] = self.model.r
        ctrl["eps_h"] = self.model.eps_h
        with self.stream:  # coefficients, tables and forcing, reached through the control block
            self._pointed = {k: cupy.asarray(a) for k, a in pointed_arrays(lay).items()}
        for name, arr in self._pointed.items():
            ctrl[name] = arr.data.ptr
        ctrl["n_level"] = level_edges(lay).size
        coef = self._pointed.get("friction_coef")
        ctrl["friction_stride"] = coef is not None and coef.size > 1
        self._has_levels = "level_table" in self._pointed
        wind = lay.wind
        if wind is not None:
            ctrl["n_wind"], ctrl["wind_law"] = wind.times.size, wind.law
            ctrl["wind_cd"], ctrl["wind_ratio"] = wind.cd, wind.ratio
        self._write_ctrl(ctrl)
        self._host = ctrl[0]
        self._graphs: dict[int, object] = {}
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
        import cupy

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
            self._k["find_invalid"](
                (self._cell_grid,), (self.block,), (self._L, self._W, self._first)
            )
            v = int(self._first.get(stream=self.stream)[0])
        return None if v == INT32_MAX else divmod(v, 8)

    # -- steps ---------------------------------------------------------------------------------
    def _edge(self, op: int) -> None:
        self._k["edge_pass"](
            (self._edge_grid,), (self.block,),
            (self._E, self._W, self._idx, self._normal, self._length, self._slots, self._ctrl,
             *self._params, np.int32(op)),
        )  # fmt: skip

    def _volume(self, op: int) -> None:
        self._k["volume_pass"](
            (self._cell_grid,), (self.block,),
            (self._L, self._W, self._area, self._slots, self._ctrl, self._partial,
             self._params[2], np.int32(op)),
        )  # fmt: skip

    def _gather(self, op: int, win, wout) -> None:
        if self.variant == GRID_VARIANT:
            geometry = (*self._grid, win, wout, self._area, self._area_stride, self._length,
                        self._code)  # fmt: skip
        else:
            geometry = (win, wout, self._area, self._code, self._normal, self._length)
        self._k[f"{self.variant}_step"](
            (self._step_grid,), (self.block,),
            (self._L, *geometry, self._ctrl, self._partial, *self._params, np.int32(op)),
        )  # fmt: skip

    def _run(self, plan: list[tuple[str, int, int, int]]) -> None:
        """Launch the kernels of a plan (see :func:`step_plan`)."""
        bufs = (self._W, getattr(self, "_W2", None))
        for kernel, op, src, dst in plan:
            if kernel == "edge_pass":
                self._edge(op)
            elif kernel == "volume_pass":
                self._volume(op)
            else:
                self._gather(op, bufs[src], bufs[dst])

    def _initial_dt(self) -> None:
        """Speeds-only pass on the current state: the first dt of the lagged mode."""
        self._run(initial_dt_plan(self.variant))

    def _step(self, parity: int) -> None:
        """Launch one step (skipped on the device once t_end or max_steps is reached)."""
        self._run(step_plan(self.variant, self.dt_mode, parity))

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

        gather, slot: read and write the state, read the per-slot edge data; edge: the edge
        pass reads the state and edge data and writes the slots, the volume pass reads
        the slots and the state and writes the state; grid: read and write the state, read
        the grid's widths, heights and side codes (and one area, or one per cell).
        """
        state = self._W.nbytes + (self._area.nbytes if self.model.layers == 1 else 0)
        if self.variant == "edge":
            edges = self._idx.nbytes + self._normal.nbytes + self._length.nbytes
            return 3 * state + edges + 2 * self._slots.nbytes
        if self.variant == GRID_VARIANT:
            return 2 * state + self._code.nbytes + self._length.nbytes
        return 2 * state + self._code.nbytes + self._normal.nbytes + self._length.nbytes

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
