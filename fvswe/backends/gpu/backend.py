"""The GPU backend: a step plan's launches on the device, replayed in CUDA graphs.

Everything stays on the device for the whole run, ``t`` and ``dt`` included: the kernels
read the control block (:data:`fvswe.backends.controls.CTRL_DTYPE`), skip themselves once
``t_end`` or ``max_steps`` is reached, and the kernel that ends a step advances ``t`` and
sets the next ``dt``. :meth:`GpuBackend.advance` replays CUDA graphs of a batch of steps and
reads the control block once per batch, so no host synchronisation happens per step.
"""

from __future__ import annotations

import math
import time

import numpy as np

from ... import integrators, registry
from ...integrators import U
from ...sources import counter_keys
from ..base import Pipeline, SetupClock
from ..controls import CTRL_DTYPE, Setup, host_block, values
from ..cuda_header import OP_COUNT
from .build import cache_dir, cache_entries, compile_options, launch_shape, module, runtime_of
from .device import linear_arrays, step_bytes, upload
from .plan import HOOKS, Launch, batch_size, compile_plan, steps_left
from .state import DeviceState
from .tuning import FACES_BLOCK, GRID_VARIANT, TROUBLED_BLOCKS

#: Most steps one CUDA graph replays.
DEFAULT_BATCH = 64
#: Most steps launched between two looks at the control block.
SYNC_EVERY = 256
#: Default steps between two blow-up checks of Simulation.run, in units of the backend's
#: sync_every: each check syncs the device (1024 steps: a whole number of 64-step graphs).
CHECK_EVERY_SYNCS = 4


class GpuBackend(Pipeline, DeviceState):
    """The pipeline on a CUDA GPU (a :class:`~fvswe.backends.base.Backend`; the arguments it
    shares with the CPU: :class:`~fvswe.backends.base.Pipeline`'s, whose ``threads`` it
    ignores: the device runs the steps).

    Its own: ``variant`` is ``edge``, ``gather``, ``slot``, ``block`` or ``grid`` (else the
    environment variable ``FVSWE_GPU_VARIANT``, else :func:`.tuning.resolve_variant`'s
    default); ``block`` the threads per block; ``cells`` the cells a thread block owns in the
    ``block`` variant and ``interior_first`` its task order (:func:`.build.launch_shape`);
    ``batch`` the most steps one CUDA graph replays; ``fast_math`` compiles a float32 run's
    modules with approximate division and square root (a ConfigError for float64);
    ``entropy_fix`` false compiles the scheme's kernel without the entropy fix (Roe, IR-Roe);
    a ``compensated`` float32 state's depth remainders lie beside each state buffer; a
    ``linear`` reconstruction runs troubled_pass, faces_pass and interior_pass of linear.cuh
    before each residual; ``runtime`` CuPy (default) or a stand-in of its API.
    """

    name = "gpu"
    #: No CPU threads run the steps.
    threads = None

    def _start(
        self,
        scheme: str,
        threads: int | None,
        entropy_fix: bool,
        *,
        variant: str | None = None,
        block: int | None = None,
        cells: int | None = None,
        interior_first: bool | None = None,
        batch: int = DEFAULT_BATCH,
        graphs: bool = True,
        fast_math: bool = False,
        runtime=None,
    ) -> None:
        self._cp = self.runtime = runtime_of(runtime)
        layout, self.scheme = self.layout, scheme
        shape = launch_shape(layout, scheme, variant, block, cells, interior_first)
        self.variant, self.block, self.cells, self.interior_first, grid = shape
        self.graphs, self.fast_math = graphs, fast_math
        self.batch = 2 ** max(1, int(math.log2(max(batch, 2))))  # a power of two: even steps
        self.sync_every = max(SYNC_EVERY, self.batch)
        #: The module's options but whether it counts edges (count_edges sets it).
        self._options = dict(scheme=scheme, layers=self.model.layers, dtype=self.dtype,
                             variant=self.variant, k=layout.k, block=self.block,
                             cells=self.cells, fast_math=fast_math,
                             sources=layout.sources is not None,
                             slide=layout.slide is not None, maxima=layout.maxima is not None,
                             kinds=registry.kinds_mask(layout.edge_bc),
                             entropy_fix=entropy_fix, compensated=self.compensated,
                             linear=self.linear, sphere=layout.sphere is not None)  # fmt: skip
        self._cut = np.zeros(0, dtype=np.int64)
        clock = SetupClock()
        #: (seconds, cache folder) while a compile of the modules is not said yet, else None.
        self._compiled: tuple[float, object] | None = None
        self._load_module()
        clock.mark("module")  # NVRTC, or CuPy's cache of compiled modules
        self.stream = self._cp.cuda.Stream(non_blocking=True)
        real = self.dtype.type
        self._params = (real(self.model.g), real(self.model.r), real(self.model.eps_h))
        with self.stream:
            self._dev = upload(self._cp, layout, self.variant, self.block,
                               (self.cells, self.interior_first), grid, self.linear)  # fmt: skip
            self._allocate()
        self._setup_ctrl()
        #: The edges whose volumes are counted (:meth:`count_edges`, ``_cut``) and the
        #: count_edges kernel's arguments, their volumes among them (None: none counted).
        self._cut_dev: tuple | None = None
        self._compile_plans()
        clock.mark("upload")  # the device layout, buffers and control block
        self._graphs: dict[int, object] = {}
        self._area64 = None  # float64 cell areas on the device, for layer_sums
        #: A distributed run's halo (fvswe.backends.gpu.halo.GpuHalo): the plans' exchange,
        #: exchange_theta, reduce_dt and tally ops call it on this stream. None on one device.
        self.halo = None
        self.set_state(layout.W0)
        self._start_maxima()
        #: Seconds of the set-up's stages (Simulation.setup_stages reports them).
        self.setup_stages = clock.stages

    # -- construction ------------------------------------------------------------------------
    def _start_maxima(self) -> None:
        """The maximum and arrival maps on the device (``_maps``), a float64 row per cell
        (fvswe.maxima; a part's halo rows NaN), from the state just set; None without maps."""
        self._maps = None
        if self.layout.maxima is None:
            return
        from ...maxima import columns

        rows = np.full((self.layout.n_cells, columns(self.model.layers)), np.nan)
        with self.stream:
            self._maps = self._cp.asarray(rows)
        self._maxima_pass(self._W, start=True)

    def _load_module(self, counts: bool = False) -> None:
        """This run's module (``counts``: with the ``count_edges`` kernel) and its kernels."""
        folder = cache_dir(self._cp)
        before, start = cache_entries(folder), time.perf_counter()
        self._module = module(compile_options(**self._options, counts=counts), self.variant,
                              self._cp)  # fmt: skip
        self._k = {n: self._module.get_function(n) for n in self._kernel_names(counts)}
        if before is not None and cache_entries(folder) > before:  # compiled, not loaded
            self._compiled = (time.perf_counter() - start, folder)

    def _kernel_names(self, counts: bool = False) -> tuple[str, ...]:
        names = ("find_invalid", "debug_flux", "level_inflow", "combine_step", "source_means")
        names += (
            ("edge_pass", "volume_pass") if self.variant == "edge" else (f"{self.variant}_step",)
        )
        names += ("bed_pass",) if self.layout.slide is not None else ()
        names += ("maxima_pass",) if self.layout.maxima is not None else ()
        names += ("count_edges",) if counts else ()
        names += ("troubled_pass", "faces_pass") if self.linear else ()
        names += ("interior_pass",) if self.linear and not self._interior_in_step else ()
        return names + (("limit_theta", "limit_update") if self.model.layers == 2 else ())

    def _allocate(self) -> None:
        """The state buffers (two; a multi-stage integrator's stages need a third), each
        followed by its depth remainders ``(L, layers)`` when compensated (``_rests``; the
        kernels find them ``ctrl->rest`` 4-vectors on), the per-block partial minima, the
        control block and the blow-up finder's result."""
        cp, lay = self._cp, self.layout
        n, layers = lay.n_cells, self.model.layers
        nvec = 2 if layers == 2 else 1
        count = 3 if len(self.integrator.stages) > 1 else 2
        extra = -(-n * layers // 4) if self.compensated else 0  # 4-vectors of remainders
        whole = [cp.zeros((n * nvec + extra, 4), dtype=self.dtype) for _ in range(count)]
        self._bufs = [w[: n * nvec].reshape(n, nvec, 4) for w in whole]
        self._rests = ([w[n * nvec :].reshape(-1)[: n * layers].reshape(n, layers) for w in whole]
                       if self.compensated else None)  # fmt: skip
        self._partial = cp.empty(self._dev.cell_grid, dtype=self.dtype)
        self._ctrl = cp.zeros(CTRL_DTYPE.itemsize, dtype=np.uint8)
        self._first = cp.empty(1, dtype=np.int32)
        slide = lay.slide  # a moving bed: bed_pass's cell centres, static bed and parameters
        self._slide = () if slide is None else tuple(
            cp.asarray(a) for a in (slide.x, slide.y, slide.H0, slide.params))  # fmt: skip

    @property
    def _interior_in_step(self) -> bool:
        """Whether the step kernel forms the slots' cell-interior terms itself (block.cu's
        block_interior) rather than reading interior_pass's."""
        return self.variant == "block"

    @property
    def _troubled_blocks(self) -> int:
        """troubled_pass's grid: a block per ``block`` cells, at most TROUBLED_BLOCKS."""
        return min((int(self.layout.n_cells) + self.block - 1) // self.block, TROUBLED_BLOCKS)

    def _setup_linear(self) -> None:
        """The linear reconstruction's device arrays (linear.cuh), pointed to by the control
        block: face states and cell-interior terms per slot, the slots across, the LSQ weights
        and face offsets, the cells' variables with their troubled flags, and the variables'
        range (per block, overall)."""
        cp, lay = self._cp, self.layout
        nvec = 2 if self.model.layers == 2 else 1
        across, geom = linear_arrays(lay)
        slots = lay.n_cells * lay.k
        blocks = self._troubled_blocks
        with self.stream:
            interior = 0 if self._interior_in_step else slots * self.model.nvar
            arrays = {"lin_faces": cp.zeros((slots * nvec, 4), dtype=self.dtype),
                      "lin_interior": cp.zeros(interior, dtype=self.dtype),
                      "lin_slot": cp.asarray(across),
                      "lin_geom": cp.asarray(geom, dtype=self.dtype),
                      "lin_fallback": cp.zeros(lay.n_cells, dtype=np.int32),
                      "lin_vars": cp.zeros((lay.n_cells * 2, 4), dtype=self.dtype),
                      "lin_partial": cp.zeros(14 * blocks), "lin_extent": cp.zeros(14)}  # fmt: skip
        for name, array in arrays.items():
            self.point(name, array)

    def _reconstruct(self, launch: Launch, win) -> None:
        """A pass of the linear reconstruction of ``win``: troubled_pass over every cell,
        faces_pass over the owned ones (their op: whether fallen-back cells count), then
        interior_pass over their slots (but in the block variant, whose step forms them)."""
        n = int(self.layout.n_cells)
        if launch.kernel == "troubled_pass":
            self._k["troubled_pass"]((self._troubled_blocks,), (self.block,),
                                     (np.int32(n), win, self._ctrl))  # fmt: skip
            return
        d = self._dev
        code, normal, length = d.slot_tables
        op, ctrl, slots = np.int32(launch.op), self._ctrl, np.int32(int(d.L) * self.layout.k)
        grid = (int(d.L) + FACES_BLOCK - 1) // FACES_BLOCK
        cells = np.int32(n)
        self._k["faces_pass"]((grid,), (FACES_BLOCK,), (d.L, cells, win, code, ctrl, op))
        if self._interior_in_step:
            return
        grid = (int(slots) + self.block - 1) // self.block
        self._k["interior_pass"]((grid,), (self.block,), (slots, win, code, normal, length, ctrl))

    def _setup_ctrl(self) -> None:
        """The control block: the run's controls (:mod:`fvswe.backends.controls`), its arrays
        uploaded and pointed to (and the linear reconstruction's, :meth:`_setup_linear`)."""
        setup = Setup(self.layout, self.cfl, self.dt_mode, self.dt_fixed, self.integrator)
        with self.stream:
            self._pointed = {
                name: self._cp.asarray(v)
                for name, v in values(setup).items()
                if isinstance(v, np.ndarray)
            }
        ctrl = host_block(setup, {k: a.data.ptr for k, a in self._pointed.items()})
        # every part of a distributed run counts the inflow, those without such edges too
        self._has_levels = self.layout.levels is not None and self.layout.levels.count > 0
        self._has_sources = self.layout.sources is not None
        self._source_keys = counter_keys(self.layout.sources, self.model.layers)
        if self.compensated:
            ctrl["rest"] = self._bufs[0].shape[0] * self._bufs[0].shape[1]
        self._write_ctrl(ctrl)
        self._host = ctrl[0]
        self._need_dt = self.dt_mode == "lagged"
        if self.linear:  # its buffers, pointed to by the block just written
            self._setup_linear()

    def _compile_plans(self) -> None:
        """The launches of a step and of the initial Δt (:func:`.plan.compile_plan`)."""
        lagged = self.dt_mode == "lagged"
        bed, maxima = self.layout.slide is not None, self.layout.maxima is not None
        ops = integrators.step_plan(self.integrator, self.dt_mode, self.model.layers, bed, maxima)
        self._step_launches = compile_plan(ops, self.variant, lagged, self._has_sources, bed,
                                           maxima, self._cut.size > 0, self.linear)  # fmt: skip
        self._initial_launches = compile_plan(integrators.initial_dt_plan(), self.variant, lagged,
                                              linear=self.linear)  # fmt: skip

    @property
    def _W(self):
        """The state on the device (it is in the first buffer between batches)."""
        return self._bufs[0]

    def buffers(self, parity: int) -> dict[str, object]:
        """The device buffers a step of ``parity`` reads and writes by a plan's names: Euler
        swaps two (the state alternates, and a batch takes an even number of steps), a
        multi-stage integrator keeps its state in the first."""
        names = integrators.BUFFERS[: len(self._bufs)]
        order = self._bufs if len(self._bufs) > 2 else self._bufs[parity:] + self._bufs[:parity]
        return dict(zip(names, order, strict=True))

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

    # -- the halo hook's view (fvswe.backends.gpu.halo) ------------------------------------------
    @property
    def control_block(self):
        """The control block on the device (CTRL_DTYPE's bytes)."""
        return self._ctrl

    def device_array(self, name: str):
        """The device array the control block's pointer field ``name`` points to."""
        return self._pointed[name]

    def point(self, name: str, array) -> None:
        """Point the control block's field ``name`` at the device ``array`` (kept alive here)."""
        self._pointed[name] = array
        ctrl = np.zeros(1, dtype=CTRL_DTYPE)
        ctrl[name] = array.data.ptr
        self._write_ctrl(ctrl, (name,))

    def set_control(self, **fields) -> None:
        """Set scalar fields of the control block on the device."""
        ctrl = np.zeros(1, dtype=CTRL_DTYPE)
        for name, value in fields.items():
            ctrl[name] = value
        self._write_ctrl(ctrl, tuple(fields))

    def read_control(self, name: str):
        """A field of the control block, read from the device."""
        return self._read_ctrl()[name]

    def kernel(self, name: str):
        """A kernel of this backend's module (launched on :attr:`stream`)."""
        return self._module.get_function(name)

    def drop_graphs(self) -> None:
        """Forget the captured graphs (before their NCCL communicators go)."""
        self._graphs.clear()

    # -- clock ---------------------------------------------------------------------------------
    @property
    def t(self) -> float:
        return float(self._host["t"])

    @t.setter
    def t(self, value: float) -> None:
        """Restart the clock (e.g. a benchmark repeating a run from its initial state)."""
        self.set_control(t=value)
        self._read_ctrl()
        self._bed_now()

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
        """Says once that the constructor compiled the modules rather than loading them from
        the runtime's cache (the first run after installing or changing fvswe or CuPy; the
        cache folder gained files: :func:`.build.cache_entries`)."""
        if self._compiled is None:
            return None
        seconds, folder = self._compiled
        self._compiled = None
        return (f"compiled the GPU kernels in {seconds:.1f} s (once: later runs load them "
                f"from the cache in {folder})")  # fmt: skip

    # -- steps ---------------------------------------------------------------------------------
    def _cell_args(self, kernel: str, win, wout) -> tuple:
        """The arguments of a cell kernel (the variants' steps, the volume pass, the limiter)
        before its op."""
        d, ctrl, prm = self._dev, self._ctrl, self._params
        if kernel == "volume_pass":
            return (d.L, win, wout, d.area, d.slots, ctrl, self._partial, prm[2])
        if kernel == "limit_theta":
            return (win, d.area, *d.slot_tables, ctrl, *prm)
        if kernel == "limit_update":
            return (win, wout, d.area, *d.slot_tables, ctrl, *prm)
        if self.variant == GRID_VARIANT:  # the grid's shape, widths, heights, side codes
            return (d.L, *d.cell_args, win, wout, *d.grid_args, ctrl, self._partial, *prm)
        tables = d.cell_args if self.variant == "block" else d.slot_tables  # block: per task
        return (d.L, win, wout, d.area, *tables, ctrl, self._partial, *prm)

    def _launch_kernel(self, launch: Launch, bufs: dict) -> None:
        """One kernel of a compiled plan on the buffers it names."""
        d, k = self._dev, self._k[launch.kernel]
        win, wout = bufs.get(launch.src), bufs.get(launch.dst)
        op = np.int32(launch.op)
        if launch.kernel == "edge_pass":  # a part's edges from a halo cell: not counted
            passes = ((d.E, *d.edges, d.edge_grid, op), (*d.halo_edges, op & ~OP_COUNT))
            for n, idx, normal, length, grid, o in passes:
                if n:
                    args = (idx, normal, length, d.slots, self._ctrl, *self._params, np.int32(o))
                    k((grid,), (self.block,), (n, win, *args))
            return
        if launch.kernel == "bed_pass":  # every cell, halo too
            grid = (int(self.layout.n_cells) + self.block - 1) // self.block
            k((grid,), (self.block,),
              (np.int32(self.layout.n_cells), wout, *self._slide, self._ctrl, op))  # fmt: skip
            return
        if launch.kernel == "maxima_pass":
            self._maxima_pass(wout)
            return
        if launch.kernel == "count_edges":  # one block
            k((1,), (self.block,), (win, *self._cut_dev, *self._params))
            return
        if launch.kernel in ("troubled_pass", "faces_pass"):  # the linear reconstruction
            self._reconstruct(launch, win)
            return
        if launch.kernel == "source_means":  # one thread works
            k((1,), (32,), (self._ctrl,))
            return
        if launch.kernel == "combine_step":
            a = self.integrator.stages[launch.stage].a
            real = np.float64 if self.compensated else self.dtype.type  # the weights' type
            grid = (int(d.L) + self.block - 1) // self.block
            k((grid,), (self.block,),
              (d.L, bufs[U], win, wout, real(a), real(1.0 - a), self._ctrl, op))  # fmt: skip
            return
        limiter = launch.kernel.startswith("limit_")
        grid = d.limit_grid if limiter else d.cell_grid
        args = self._cell_args(launch.kernel, win, wout)
        if launch.kernel == "block_step":
            self._block_step(k, (*args, op))
            return
        k((grid,), (self.block,), args if limiter else (*args, op))

    def _block_step(self, k, args: tuple) -> None:
        """The block variant's step over its ``cell_grid`` blocks: one launch, or on a part
        whose halo hook overlaps the state's exchange (:meth:`.halo.GpuHalo.join`), the
        interior blocks (no cell beside a halo cell: they read no halo row) while the exchange
        is in flight, then, the exchange joined, the border blocks. Both launches share the
        step's Δt reduction (block.cu's ``first_block``, ``blocks``): the same bits."""
        total = self._dev.cell_grid
        split = 0 if self.halo is None else self.halo.interior_blocks
        if split:
            k((split,), (self.block,), (*args, np.int32(0), np.int32(total)))
        self._join()
        if total > split:
            k((total - split,), (self.block,), (*args, np.int32(split), np.int32(total)))

    def _run(self, launches: tuple[Launch, ...], parity: int) -> None:
        """Launch a compiled plan (the halo hook's calls where there is a halo). An exchange
        the hook overlaps is joined before any kernel but the block step, which joins it
        between its interior and border blocks (:meth:`_block_step`)."""
        bufs = self.buffers(parity)
        for launch in launches:
            if launch.kernel in HOOKS:
                if self.halo is not None:
                    self.halo.call(launch, bufs)
                continue
            if launch.kernel != "block_step":
                self._join()
            self._launch_kernel(launch, bufs)

    def _join(self) -> None:
        """The halo hook's exchange in flight done before the stream goes on: before a kernel
        that may read a halo row, and at a batch's or the initial Δt's end (a graph's capture
        joins the hook's stream)."""
        if self.halo is not None:
            self.halo.join()

    def _launch(self, n: int) -> None:
        """Launch ``n`` (even) steps, as one CUDA graph replay when graphs are on."""
        if not self.graphs:
            for s in range(n):
                self._run(self._step_launches, s % 2)
            self._join()
            return
        if n not in self._graphs:
            with self.stream:
                self.stream.begin_capture()
                try:
                    for s in range(n):
                        self._run(self._step_launches, s % 2)
                    self._join()
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
        self.set_control(t_end=t_end, max_steps=start + max_steps)
        with self.stream:
            if self._need_dt:  # the speeds of the state: the lagged mode's first dt
                self._run(self._initial_launches, 0)
                self._join()
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
        """Compulsory device-memory traffic of one lagged Euler step (:func:`.step_bytes`)."""
        state = self._W.nbytes + (self._dev.area.nbytes if self.model.layers == 1 else 0)
        rest = 2 * self._rests[0].nbytes if self.compensated else 0  # remainders read, written
        return step_bytes(self._dev, self.variant, state) + rest

    # -- tests -----------------------------------------------------------------------------------
    def debug_flux(self, Wi, Wj, Hi, Hj, normal):
        """The compiled scheme's per-edge flux on host arrays: ``(F-, F+, ||D||, flags)``."""
        cp = self._cp
        n, nvar = len(Wi), self.model.nvar
        with self.stream:
            inputs = (Wi, Wj, np.broadcast_to(Hi, (n,)), np.broadcast_to(Hj, (n,)), normal)
            args = [cp.asarray(np.ascontiguousarray(a, dtype=self.dtype)) for a in inputs]
            Fm, Fp = cp.empty((n, nvar), dtype=self.dtype), cp.empty((n, nvar), dtype=self.dtype)
            d, flags = cp.empty(n, dtype=self.dtype), cp.empty(n, dtype=np.int32)
            self._k["debug_flux"](
                ((n + self.block - 1) // self.block,), (self.block,),
                (np.int32(n), *args, *self._params, Fm, Fp, d, flags),
            )  # fmt: skip
            return Fm.get(), Fp.get(), d.get(), flags.get()
