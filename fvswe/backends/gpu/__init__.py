"""GPU backend (CuPy): the step plans of :mod:`fvswe.integrators` in CUDA kernels.

Five variants, the same results bit for bit (float64):

- ``edge``: the paper's design; an edge pass writes per-cell slots, a volume pass sums
  them, updates and reduces dt, alternating two state buffers;
- ``gather``: one thread per cell evaluates the cell's edges with the edge's orientation
  and updates the cell; each interior edge is evaluated twice, no slot traffic;
- ``slot``: as ``gather``, with one thread per slot and the cell's sum in shared memory
  (k times the threads in flight: for small, latency-bound meshes);
- ``block``: fused; a thread block owns a range of cells, evaluates each edge between two
  of them once into per-cell slots in shared memory and only the edges to other blocks
  twice (:func:`fvswe.backends.layout.block_edges`), then sums and updates its cells;
- ``grid``: for a Cartesian grid (:class:`fvswe.grid.Grid`'s mesh in its row-major
  order): ``gather`` on 2-D tiles, each tile edge evaluated once, each slot's neighbour,
  normal, length and boundary code found by index arithmetic.

Every variant evaluates its edges with the one device function ``evaluate_edge``
(``cuda/pipeline.cuh``); two-layer steps end with the positivity limiter's two kernels, a
multi-stage integrator's stages with ``combine_step``. The modules: :mod:`.tuning` (the
measured tables and the variant a run gets), :mod:`.build` (the source NVRTC receives, its
options), :mod:`.device` (the layout on the device), :mod:`.plan` (the plans' launches),
:mod:`.backend` (:class:`GpuBackend`) and :mod:`.halo` (GPU ranks). CuPy is imported lazily.
"""

from __future__ import annotations

from ..controls import CTRL_DTYPE, level_edges
from ..cuda_header import NO_CELL
from .backend import DEFAULT_BATCH, GpuBackend
from .build import (
    CUDA_DIR,
    FAST_MATH,
    available,
    compile_options,
    device_name,
    launch_shape,
    module,
    source,
)
from .device import (
    GridArrays,
    block_arrays,
    edge_arrays,
    grid_arrays,
    pack_state,
    slot_codes,
    unpack_state,
)
from .plan import Launch, batch_size, compile_plan, steps_left
from .state import COUNTERS
from .tuning import (
    BLOCK_SHAPES,
    BLOCK_SHARED_MAX,
    BLOCK_TWICE_BELOW,
    DEFAULT_BLOCK,
    EDGE_SCHEMES,
    GRID_LAUNCH,
    GRID_TILE_X,
    GRID_VARIANT,
    LIMIT_BLOCKS,
    RESIDENT_THREADS,
    SHARED_MAX,
    SLOT_BELOW,
    STAGE_RESTS,
    VARIANTS,
    BlockShape,
    block_shape,
    block_shared,
    default_variant,
    grid_block,
    grid_blocks,
    grid_shared_bytes,
    requested_variant,
    resolve_variant,
)

__all__ = [
    "BLOCK_SHAPES", "BLOCK_SHARED_MAX", "BLOCK_TWICE_BELOW", "COUNTERS", "CTRL_DTYPE", "CUDA_DIR",
    "DEFAULT_BATCH", "DEFAULT_BLOCK", "EDGE_SCHEMES", "FAST_MATH", "GRID_LAUNCH", "GRID_TILE_X",
    "GRID_VARIANT", "LIMIT_BLOCKS", "NO_CELL", "RESIDENT_THREADS", "SHARED_MAX", "SLOT_BELOW",
    "STAGE_RESTS", "VARIANTS", "BlockShape", "GpuBackend", "GridArrays", "Launch", "available",
    "batch_size",
    "block_arrays", "block_shape", "block_shared", "compile_options", "compile_plan",
    "default_variant", "device_name", "edge_arrays", "grid_arrays", "grid_block", "grid_blocks",
    "grid_shared_bytes", "launch_shape", "level_edges", "module", "pack_state",
    "requested_variant", "resolve_variant", "slot_codes", "source", "steps_left",
    "unpack_state",
]  # fmt: skip
