"""The GPU's measured tuning: its variants, their default choice, launch shapes and caps.

Each table here records what the H100 measurements chose (benchmarks/results/, docs/GPU.md):
which variant a run gets (:func:`resolve_variant`), the ``block`` variant's shapes
(:data:`BLOCK_SHAPES`), the ``grid`` variant's launch (:data:`GRID_LAUNCH`) and the register
caps (:data:`RESIDENT_THREADS`). Nothing here touches CuPy.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace

import numpy as np

from ... import registry
from ...errors import ConfigError
from ..layout import BLOCK_CELLS, twice_evaluated

VARIANTS = ("edge", "gather", "slot", "block")
#: The variant of a Cartesian grid in row-major order only (grid.cu, :func:`device.grid_arrays`).
GRID_VARIANT = "grid"
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
#: Most blocks of the limiter's kernels (grid-stride over the step's candidates): few, so
#: that their launches cost little when they return at once.
LIMIT_BLOCKS = 1024

#: (layers, float64) -> threads per SM the step kernels are compiled to keep resident
#: (``__launch_bounds__``'s minimum blocks, so the compiler caps the registers: 512 threads,
#: 128 registers; 768, 80). Measured on the H100 at 2.08 M cells against no cap
#: (benchmarks/results/min_blocks_sweep_h100.json): two-layer float64 PVM-IFCP gather
#: 4.7 -> 5.5 and Roe/IR-Roe edge 1.9 -> 2.1 G cell-steps/s, float32 Roe/IR-Roe gather
#: 2.1 -> 2.6; the one-layer modules fit without a cap.
RESIDENT_THREADS = {(2, True): 512, (2, False): 768}

#: Threads a block of linear.cuh's faces_pass, whatever the module's block (four blocks an SM at
#: its 128 registers; docs/GPU.md, the linear reconstruction's cost).
FACES_BLOCK = 128

#: Most blocks of linear.cuh's troubled_pass (its threads stride over the cells): the last
#: block's walk over the blocks' partial ranges stays short.
TROUBLED_BLOCKS = 1024

#: Shared memory a thread block of the ``block`` variant may use for its slots (bytes).
#: Static shared memory a CUDA block may hold (block.cu's slots, grid.cu's static_assert).
SHARED_MAX = 48 * 1024
#: What the ``block`` variant's slots may take of it: 1 KiB stays for finish_step's own shared
#: arrays (ptxas refused 256 two-layer float64 cells, 48 KiB of slots, by 136 bytes).
BLOCK_SHARED_MAX = SHARED_MAX - 1024
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

#: (costly scheme) -> whether a compensated float32 ``block`` module copies its cells'
#: remainders to shared memory while its edges run (block.cu, ``FVSWE_STAGE_RESTS``): one H200,
#: 2026-11-29 (benchmarks/results/compensated_staged_ab_s19_h200.json), PVM-IFCP +1.5 %, Roe
#: -1.4 % (the one-layer schemes take their kind's, not measured).
STAGE_RESTS = {False: True, True: False}


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
    twice: float | None = None,
) -> str:
    """The variant a backend runs: :func:`requested_variant`, else ``grid`` on a Cartesian
    grid (``grid``: :func:`grid_arrays` found one), else :func:`default_variant` with the
    twice-evaluated fraction ``twice`` (GPU ranks: counted over their parts), or that of
    ``edge_cells`` in blocks of ``cells`` (unknown without ``edge_cells``; :class:`GpuBackend`
    passes its :func:`block_shape`'s cells).

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
    if twice is None:
        known = edge_cells is not None and n_cells >= SLOT_BELOW
        twice = twice_evaluated(edge_cells, cells) if known else 1.0
    return default_variant(scheme, n_cells, twice)
