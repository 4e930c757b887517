"""``fvswe run CASE|FILE.toml`` and ``fvswe cases``.

Everything is checked before the output folder is touched: a bad case,
scheme, ordering, mesh, boundary tag, initial state, backend or checkpoint
stops with one line and leaves no files behind.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import json
import sys
import time
from contextlib import ExitStack
from pathlib import Path

from .. import casefile, maxima, output, parallel, partout, probes, runner, ugrid
from .. import registry as schemes
from .. import settings as run_settings
from ..backends.base import SetupClock
from ..cases import CASES
from ..errors import ConfigError, FvsweError
from ..restart import mismatch
from . import Interrupted, interrupted
from .mesh import BATHYMETRY_HELP

#: The most output times a run may have (``t_end / output_every``).
MAX_OUTPUTS = 100_000

DESCRIPTION = """\
Run a named case (see `fvswe cases`) or a TOML case file (see examples/*.toml);
flags override the case's or the file's settings. With --output DIR, write there:
  solution.xdmf                the index of the fields at every output time (open it
                               in ParaView): h1 h2 eta1 eta2 u1 v1 u2 v2 bathymetry
                               (one layer: h eta u v bathymetry); the mesh is in
                               solution.h5, each output time in solution/NNNNNN.h5;
                               --format netcdf: solution.nc
                               (CF-UGRID: xarray, xugrid, QGIS, ParaView), or both
  gauges.csv/.nc, sections.csv/.nc, probes.png
                               with --gauge/--section: time series at points and
                               discharge per layer through lines
  maxima.xdmf/.h5, maxima.nc   with --maxima (or [maxima]): per cell the largest surface,
                               depth and speed and when, and the arrival time (the
                               formats of --format), at the end and at checkpoints
  final.npz                    the final state per cell (x, y, area, H, h1, q1x, ...)
  summary.json                 steps, wall and compile time, cell-steps/s, mass balance, counters
  png/snapshot_NNNN.png        with --png: the chosen fields at every output time
  checkpoint.npz               with --checkpoint-every, and on Ctrl-C
With --parts (CPU or GPU ranks each holding its part alone) each rank writes its own files under
one index: solution.xdmf (solution-parts/, solution/NNNNNN-PPPP.h5), final.json
(final-parts/, instead of final.npz), maxima.json (maxima-parts/) and checkpoint.npz
(checkpoint-parts/); gauges and sections as one process (no --png, no --format netcdf).
The series is readable at every moment (a killed run keeps its outputs so far), and
a --restart continues it in place. One run at a time writes DIR; a DIR holding
another run's results is refused unless --overwrite, which first removes them (the
PNG snapshots included, so none of an earlier run is left beside the new ones).
"""

EXAMPLES = """\
examples:
  fvswe run test1                              the bundled 4000-cell mesh, on the CPU
  fvswe run test1 --backend auto               on the GPU if CuPy sees one
  fvswe run test2 --scheme pvm-ifcp --order rcm --backend cpu
  fvswe run examples/test1.toml -o out --output-every 0.025 --png h1,eta2
  fvswe run test1 --mesh my.msh -o out --checkpoint-every 0.02
  fvswe run test1 -o out --restart out/checkpoint.npz
  mpiexec -n 3 fvswe run test1 -o out          on 3 CPU ranks (MPI), the same results
  fvswe run test1 -o out --format netcdf --gauge 0,0,centre --section 2,-5,2,5
"""


def register(sub) -> None:
    p = sub.add_parser(
        "run",
        help="run a named case or a TOML case file",
        description=DESCRIPTION,
        epilog=f"schemes (--scheme):\n{schemes.help_lines()}\n\n{EXAMPLES}",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("case", help="case name (e.g. test1) or a case file (e.g. examples/test1.toml)")
    p.add_argument("--mesh", metavar="FILE",
                   help="mesh file, or a member of the paper's family: square-4k (the default), "
                   "square-16k, -64k, -256k, -1m, -130k, -2m")  # fmt: skip
    p.add_argument("--bathymetry", metavar="SOURCE:SIGN", help=BATHYMETRY_HELP)
    _setting_flags(p)
    p.add_argument("--t-end", type=float, metavar="S", help="simulated end time in seconds")
    p.add_argument("--nx", type=int, metavar="N",
                   help="grid cases (cgrid-*, mjos-drop): cells along x (--ny: along y; "
                   "one alone keeps the cells square); a fixed dt scales with the cell size "
                   "(same Courant number), t_end stays; DIR/grid.npz holds 2-D fields")  # fmt: skip
    p.add_argument("--ny", type=int, metavar="N", help="grid cases: cells along y")
    p.add_argument("--allow-mass-error", action="store_true",
                   help="continue a run that clipped a negative depth or lost mass beyond "
                   "round-off (the summary still counts it) instead of stopping")  # fmt: skip
    p.add_argument("--output", "-o", metavar="DIR",
                   help="folder for solution.xdmf/.h5, final.npz, summary.json, PNGs, "
                   "checkpoints (created once the inputs are checked)")  # fmt: skip
    p.add_argument("--output-every", type=float, metavar="S",
                   help="write the fields every S simulated s (default: start, end)")  # fmt: skip
    p.add_argument("--png", metavar="FIELDS",
                   help="draw these fields (comma-separated, e.g. h1,eta2) at every output time "
                   "into DIR/png/")  # fmt: skip
    p.add_argument("--png-limits", metavar="NAME=LO:HI,...",
                   help="colour limits of --png fields (default: each field's first "
                   "non-constant frame, kept for the series; see fvswe.plot)")  # fmt: skip
    p.add_argument("--checkpoint-every", type=float, metavar="S",
                   help="write DIR/checkpoint.npz every S simulated seconds")  # fmt: skip
    p.add_argument("--restart", metavar="FILE", help="continue from a checkpoint of this run")
    p.add_argument("--parts", metavar="DIR",
                   help="MPI ranks: each takes its part from DIR (fvswe mesh partition -o DIR, "
                        "in the run's order) instead of rank 0's cut, reads nothing else (no "
                        "whole mesh) and writes its outputs a file a part")  # fmt: skip
    p.add_argument("--format", choices=casefile.FORMATS,
                   help="field series: xdmf (default: a plain install writes it), netcdf "
                   "(CF-UGRID solution.nc, needs fvswe[netcdf]) or both")  # fmt: skip
    p.add_argument("--crs", help="the mesh's coordinate reference system (EPSG:n or WKT), "
                   "written into solution.nc")  # fmt: skip
    p.add_argument("--gauge", action="append", metavar="X,Y[,NAME]", default=[],
                   help="a gauge at (X, Y) (repeatable; --gauge=-1,2 for a negative X): "
                   "DIR/gauges.csv (+ .nc)")  # fmt: skip
    p.add_argument("--gauges", metavar="FILE",
                   help="gauges from a CSV file of name,x,y lines")  # fmt: skip
    p.add_argument("--section", action="append", metavar="X1,Y1,X2,Y2[,...]", default=[],
                   help="a cross-section polyline (repeatable): discharge per layer, positive "
                   "to its right, in DIR/sections.csv (+ .nc)")  # fmt: skip
    p.add_argument("--source", action="append", metavar="X,Y,Q[,NAME]", default=[],
                   help="a point source of Q m^3/s (negative: a sink) at (X, Y) (repeatable; "
                   "docs/SCHEMES.md §16)")  # fmt: skip
    p.add_argument("--rain", type=float, metavar="RATE",
                   help="rain of RATE m/s on the whole mesh (1 mm/h = 2.778e-7; negative: "
                   "evaporation)")  # fmt: skip
    p.add_argument("--maxima", action="store_true",
                   help="keep maximum-value and arrival-time maps: DIR/maxima.xdmf/.h5 or "
                   "maxima.nc (as --format)")  # fmt: skip
    p.add_argument("--arrival-threshold", type=float, metavar="M",
                   help="with --maxima (implied): a wave has arrived in a cell when its "
                   "surface departs from the initial one by more than M m "
                   "(default 0.01)")  # fmt: skip
    p.add_argument("--probe-every", type=float, metavar="S",
                   help="sample gauges and sections every S simulated s (default: at output "
                   "times)")  # fmt: skip
    p.add_argument("--overwrite", action="store_true",
                   help="replace the results of another run in DIR (without it, such a folder "
                   "is refused; a --restart continues its own run's series in place)")  # fmt: skip
    p.add_argument("--json", action="store_true", help="print the summary as one JSON object")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress bar")
    p.set_defaults(func=main_run)

    c = sub.add_parser("cases", help="list the named cases", description="List the named cases.")
    c.set_defaults(func=list_cases)


def _setting_flags(p) -> None:
    """``--name`` for every run setting with a flag (:data:`fvswe.settings.SETTINGS`)."""
    for s in run_settings.SETTINGS:
        if not s.flag:
            continue
        flag, text = s.flag_name(), s.flag_help().replace("%", "%%")
        if s.types is bool:  # a switch: given, it overrides the case file's value
            p.add_argument(flag, action="store_const", const=not s.default, dest=s.name,
                           help=text)  # fmt: skip
            continue
        kinds = s.types if isinstance(s.types, tuple) else (s.types,)
        kind = float if float in kinds else int if int in kinds else str
        p.add_argument(flag, type=kind, choices=s.choices or None, help=text)


def list_cases(args) -> int:
    width = max(map(len, CASES))
    for name, case in CASES.items():
        print(f"{name:<{width}}  {case.summary}")
    return 0


def _spec(args) -> casefile.RunSpec:
    """The case or case file with the command line's overrides applied."""
    spec = casefile.resolve(args.case)
    if args.nx is not None or args.ny is not None:
        if spec.case is None or spec.mesh is not None or args.mesh:
            raise ConfigError("--nx/--ny: only for the grid cases (see `fvswe cases`)")
        old = spec.case
        new = old.with_grid(args.nx, args.ny)  # a fixed dt scales with the cells; t_end stays
        settings = dict(spec.settings)
        if old.dt is not None and settings.get("dt") == old.dt:
            settings["dt"] = new.dt
        spec = dataclasses.replace(spec, case=new, settings=settings)
    if args.maxima or args.arrival_threshold is not None:
        given = spec.settings.get("maxima") or maxima.Maxima()
        threshold = args.arrival_threshold
        chosen = given if threshold is None else maxima.Maxima(threshold)
        spec = dataclasses.replace(spec, settings={**spec.settings, "maxima": chosen})
    sources = _sources(args)
    if sources:  # a Simulation input the case file may hold too
        settings = {**spec.settings, "sources": [*spec.settings.get("sources", []), *sources]}
        spec = dataclasses.replace(spec, settings=settings)
    return spec.with_overrides(
        **{s.name: getattr(args, s.name) for s in run_settings.SETTINGS if s.flag},
        t_end=args.t_end,
        mesh=_mesh_override(args, spec),
        output_every=args.output_every,
        png=tuple(f for f in args.png.split(",") if f) if args.png is not None else None,
        checkpoint_every=args.checkpoint_every,
        output_format=args.format,
        crs=args.crs,
        probe_every=args.probe_every,
        gauges=spec.gauges + _gauges(args) or None,
        sections=spec.sections + _sections(args) or None,
    )


def _mesh_override(args, spec: casefile.RunSpec) -> dict | None:
    """``--mesh FILE`` and ``--bathymetry`` as the spec's ``mesh`` entry (None: unchanged)."""
    if args.bathymetry is None:
        return {"file": args.mesh} if args.mesh else None
    if args.mesh:
        return {"file": args.mesh, "bathymetry": args.bathymetry}
    if spec.mesh is None or "file" not in spec.mesh:
        raise ConfigError("--bathymetry: only with a mesh file (--mesh FILE, or [mesh] file)")
    return {**spec.mesh, "bathymetry": args.bathymetry}


def _numbers(text: str, flag: str, count: int | None = None) -> list[float]:
    try:
        values = [float(v) for v in text.split(",")]
    except ValueError:
        raise ConfigError(f"{flag}: expected comma-separated numbers, got {text!r}") from None
    if count is not None and len(values) != count:
        raise ConfigError(f"{flag}: expected {count} numbers, got {text!r}")
    return values


def _sources(args) -> list:
    """The point sources of --source X,Y,Q[,NAME] and the rain of --rain RATE."""
    from ..sources import Rain, Source

    out = []
    for k, text in enumerate(args.source):
        *values, name = text.split(",") if text.count(",") == 3 else (*text.split(","), "")
        x, y, q = _numbers(",".join(values), "--source", 3)
        out.append(Source(q, point=(x, y), name=name or f"source {k + 1}"))
    if args.rain is not None:
        out.append(Rain(args.rain))
    return out


def _gauges(args) -> tuple[probes.Gauge, ...]:
    """The gauges of --gauge X,Y[,NAME] and --gauges FILE (name,x,y lines)."""
    found = []
    for k, text in enumerate(args.gauge):
        *xy, name = text.split(",") if text.count(",") == 2 else (*text.split(","), f"g{k + 1}")
        x, y = _numbers(",".join(xy), "--gauge", 2)
        found.append(probes.Gauge(name, x, y))
    if args.gauges:
        found += probes.read_gauges(args.gauges)
    return tuple(found)


def _sections(args) -> tuple[probes.Section, ...]:
    """The sections of --section X1,Y1,X2,Y2[,...], named s1, s2, ..."""
    found = []
    for k, text in enumerate(args.section):
        values = _numbers(text, "--section")
        if len(values) < 4 or len(values) % 2:
            raise ConfigError(f"--section: expected x,y pairs (two or more), got {text!r}")
        points = tuple(zip(values[::2], values[1::2], strict=True))
        found.append(probes.Section(f"s{k + 1}", points))
    return tuple(found)


class _Series(ExitStack):
    """The field series --format asks for (XDMF, NetCDF or both), written together."""

    def __init__(self, fmt: str, out: Path, sim, resume: float | None, spec, identity) -> None:
        super().__init__()
        self.directory = out
        self.writers = []
        if fmt in ("xdmf", "both"):
            self.writers.append(output.Series(out, sim, resume_at=resume, identity=identity))
        if fmt in ("netcdf", "both") and not sim.is_root:  # MPI: the gathers, no file
            self.writers.append(output.Series(out, sim, resume_at=resume, identity=identity))
        elif fmt in ("netcdf", "both"):
            self.writers.append(
                ugrid.NetCDFSeries(out, sim, resume_at=resume, crs=spec.crs, title=spec.name,
                                   time_origin=spec.time_origin or ugrid.TIME_ORIGIN,
                                   identity=identity)
            )  # fmt: skip

    def __enter__(self) -> _Series:
        super().__enter__()
        for writer in self.writers:
            self.enter_context(writer)
        return self

    @property
    def times(self) -> list[float]:
        return self.writers[0].times

    def write(self) -> None:
        for writer in self.writers:
            writer.write()


def _checked(args, spec, out: Path | None):
    """The run's flags checked against each other and the case file, before anything is
    read or written; the spec without its folder's outputs where there is no ``--output``."""
    needs_dir = (("--png", args.png), ("--checkpoint-every", args.checkpoint_every),
                 ("--format", args.format), ("--gauge", args.gauge or None),
                 ("--gauges", args.gauges), ("--section", args.section or None),
                 ("--maxima", args.maxima or None),
                 ("--arrival-threshold", args.arrival_threshold))  # fmt: skip
    for flag, value in needs_dir:
        if value is not None and out is None:
            raise ConfigError(f"{flag} needs --output DIR")
    if out is None:  # a case file's [output] pictures, checkpoints, probes, maps need a folder
        spec = dataclasses.replace(spec, png=(), checkpoint_every=None, gauges=(), sections=(),
                                   settings={**spec.settings, "maxima": None})  # fmt: skip
    fmt = spec.output_format or "xdmf"
    if out is not None and fmt != "xdmf":
        ugrid.netcdf4()  # a one-line error now if netCDF4 is missing
    if spec.probe_every is not None and not spec.probe_every > 0:
        raise ConfigError(f"--probe-every: must be positive, got {spec.probe_every!r}")
    if spec.checkpoint_every is not None and not spec.checkpoint_every > 0:
        raise ConfigError(f"--checkpoint-every: must be positive, got {spec.checkpoint_every!r}")
    _check_threads(args, spec)
    _check_output_count(args, spec)
    _check_netcdf_keys(args, spec)
    return spec


def run(args) -> int:
    started = time.perf_counter()  # the summary's time to the first step counts from here
    spec = _spec(args)
    out = Path(args.output) if args.output else None
    if out is not None and out.exists() and not out.is_dir():
        raise ConfigError(f"--output: {out} exists and is not a directory")
    spec = _checked(args, spec, out)
    fmt = spec.output_format or "xdmf"
    times = spec.times()
    comm = parallel.world()  # None unless launched by mpiexec as several processes
    if args.parts and comm is None:
        raise ConfigError(f"--parts {args.parts}: a run of one process has no parts (mpiexec -n P)")
    clock = SetupClock(started)
    clock.mark("inputs")  # the case file and the checks of its values
    own = None
    if args.parts:  # each rank its part alone, from its part file
        _check_part_run(args, spec)
        mesh, own = parallel.read_own(comm, args.parts)
        _check_partition(spec, own)
    else:  # under MPI rank 0 reads the mesh; every rank builds the same global layout from it
        mesh = spec.load_mesh() if comm is None else parallel.on_root(comm, spec.load_mesh)
    clock.mark("mesh")
    if comm is None:
        sim = spec.simulation(mesh)
    else:
        ranks = {"comm": comm} | ({"part": own} if own else {})
        sim = dataclasses.replace(spec, settings={**spec.settings, **ranks}).simulation(mesh)
    sim.setup_stages = {**clock.stages, **sim.setup_stages}  # the summary's setup_stages
    sim.allow_mass_error = args.allow_mass_error
    if spec.png:
        from ..plot import check_fields, check_title

        check_fields(spec.png, output.FIELD_NAMES[sim.model.layers])
        check_title(spec.name, f"{spec.source}: title")
    identity = sim.identity()
    probe = _restore(args, spec, sim, comm, times[-1])
    sim.run(times[-1], max_steps=0)  # no step: checks t_end (e.g. against level series) now
    if probe is not None:
        _check_probe_memory(args, spec, sim, len(times))
    if out is None:
        summary = _advance(args, spec, sim, times, None, started=started)
        return _finish(args, spec, sim, summary, None)
    # All inputs are valid: from here on files may be written.
    with ExitStack() as held:

        def claim() -> None:  # on rank 0 only; an error there stops every rank
            try:
                out.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise output.os_error(out, exc) from None
            held.enter_context(output.folder_lock(out))
            _claim(args, out, identity)
            output.clean_stale(out)

        claim() if comm is None else parallel.on_root(comm, claim)
        if probe is not None:  # a restart's records before it, as the series keeps its outputs
            probe.keep_earlier(out)
        resume = sim.t if args.restart else None
        maps = _maps_of(own, sim, out, fmt, spec)
        with _series_of(own, fmt, out, sim, resume, spec, identity) as series:
            summary = _advance(args, spec, sim, times, series, probe, started, maps, out)
        try:
            _records(sim, out, probe, maps)
            _write_final(sim, out, own)
            if spec.mesh is None and spec.case is not None and spec.case.is_grid:
                fields = sim.fields()  # collective: every rank takes part
                if sim.is_root:
                    spec.case.grid().save_npz(out / "grid.npz", fields, sim.t)
            return _finish(args, spec, sim, summary, out, series.times)
        except KeyboardInterrupt:  # the run is done: keep its end state for a --restart
            where = f"interrupted at t = {sim.t:.6g} s (step {sim.steps})"
            raise _interrupted(where, sim, out / output.CHECKPOINT, probe, maps) from None


def _series_of(own, fmt: str, out: Path, sim, resume, spec, identity: dict):
    """The run's series writer: ranks holding their parts alone (``own``) write a file each
    under one XDMF index (:class:`fvswe.partout.PartSeries`), others as one process."""
    if own:
        return partout.PartSeries(out, sim, resume_at=resume, identity=identity)
    return _Series(fmt, out, sim, resume, spec, identity)


def _maps_of(own, sim, out: Path, fmt: str, spec):
    """What writes the maximum and arrival maps (None: the run keeps none): a file a part
    under ``maxima.json`` (``own``: ranks holding their parts alone), else as one process."""
    if sim.layout.maxima is None:
        return None
    if own:
        return functools.partial(partout.write_maxima, out, sim)
    return functools.partial(maxima.write, sim, out, fmt, spec.crs)


def _write_final(sim, out: Path, own) -> None:
    """The final state: ``final.npz``, or a file a part under ``final.json`` (``own``)."""
    if own:
        partout.write_final(out, sim)
    else:
        output.write_final(sim, out / "final.npz")


def _check_part_run(args, spec: casefile.RunSpec) -> None:
    """What a run on ranks that each hold their part alone (--parts) does not write yet, in
    one line naming the flag or key: the pictures of the fields and a NetCDF series
    (docs/PARALLEL.md, "Per-part outputs")."""
    given = (("--png", spec.png), ("--format", spec.output_format not in (None, "xdmf")))
    for key, value in given:
        if value:
            raise ConfigError(f"{key}: not with --parts yet (ranks holding their parts alone "
                              "write the XDMF series, gauges, sections, maximum maps, the final "
                              "state, checkpoints and summary.json)")  # fmt: skip


def _check_partition(spec: casefile.RunSpec, own) -> None:
    """The partition's mesh against the one the case names (its file or family name, or the
    named case's member's cell count): the ranks cannot compare the meshes themselves."""
    from ..partfile import MANIFEST

    source, named = own.manifest.get("source") or "", (spec.mesh or {})
    name = named.get("file") or named.get("family")
    wrong = (Path(str(name)).stem != Path(source).stem if name is not None
             else spec.case is not None and not spec.case.is_grid
             and spec.case.mesh_cells != own.cells)  # fmt: skip
    if wrong:
        this = name or f"a mesh of {spec.case.mesh_cells} cells"
        raise ConfigError(f"{Path(own.directory) / MANIFEST}: cut from {source} "
                          f"({own.cells} cells), this run's mesh is {this}")  # fmt: skip


def _records(sim, out: Path, probe, maps) -> None:
    """The gauge and section records (rank 0) and the maximum and arrival maps (``maps()``,
    collective) at the end of the run."""
    if probe is not None and sim.is_root:
        probe.write(out, netcdf=probes.netcdf_available())
    if maps is not None:
        maps()


def _restore(args, spec: casefile.RunSpec, sim, comm, t_end: float) -> probes.Probes | None:
    """Continue ``sim`` from --restart's checkpoint when given; the run's gauges and sections
    (None without), which go on from the checkpoint's records (issue 32)."""
    snap = None
    if args.restart:
        load = functools.partial(output.load_checkpoint, args.restart, f"--restart: {args.restart}")
        if sim.part is not None:  # each rank reads the rows of its own cells
            snap = parallel.agreed(comm, lambda: load(cells=sim.part.part.cells))
        else:
            snap = load() if comm is None else parallel.on_root(comm, load)
        sim.restore(snap)
        if sim.t > t_end:
            raise ConfigError(f"--restart: the checkpoint is at t = {sim.t:g} s, past t_end")
    if not (spec.gauges or spec.sections):
        return None
    return probes.Probes(sim, spec.gauges, spec.sections, resume=snap)


def _check_threads(args, spec: casefile.RunSpec) -> None:
    """Threads between 1 and the cores Numba may use (NUMBA_NUM_THREADS, all by default)."""
    threads = spec.settings.get("threads")
    if threads is None:
        return
    import numba

    limit = numba.config.NUMBA_NUM_THREADS
    if isinstance(threads, bool) or not isinstance(threads, int) or not 1 <= threads <= limit:
        where = "--threads" if args.threads is not None else f"{spec.source}: threads"
        raise ConfigError(f"{where}: must be a whole number from 1 to {limit}, got {threads!r}")


def _check_output_count(args, spec: casefile.RunSpec) -> None:
    """At most MAX_OUTPUTS output times: a tiny --output-every is a typo, not a plan."""
    every, t_end = spec.output_every, spec.t_end
    if not (isinstance(every, (int, float)) and every > 0 and isinstance(t_end, (int, float))):
        return  # spec.times() names what is wrong
    if t_end / every > MAX_OUTPUTS:
        flag = args.output_every is not None
        where = "--output-every" if flag else f"{spec.source}: output.every"
        raise ConfigError(f"{where}: {every:g} s gives {t_end / every:.3g} output times up to "
                          f"t_end = {t_end:g} s; at most {MAX_OUTPUTS} are allowed")  # fmt: skip


def _check_probe_memory(args, spec: casefile.RunSpec, sim, outputs: int) -> None:
    """Refuse a probe interval (--probe-every, output.probe_every) whose samples need more
    memory than there is, before the folder is made (a tiny one ran out of it later). At
    the output times alone, the samples are bounded by MAX_OUTPUTS."""
    every, t_end, gauges, sections = spec.probe_every, spec.t_end, spec.gauges, spec.sections
    if not every:
        return
    samples = outputs + 1 + t_end / every
    need = probes.memory_needed(samples, len(gauges), len(sections), sim.model.layers)
    free = probes.available_memory()
    if free is None or need <= free:
        return
    flag = args.probe_every is not None
    where = "--probe-every" if flag else f"{spec.source}: output.probe_every"
    raise ConfigError(f"{where}: {every:g} s gives {samples:.3g} samples up to t_end = "
                      f"{t_end:g} s of {len(gauges)} gauges and {len(sections)} sections, "
                      f"about {need / 1e9:.3g} GB; {free / 1e9:.3g} GB of memory is "
                      "available")  # fmt: skip


def _check_netcdf_keys(args, spec: casefile.RunSpec) -> None:
    """The CRS (--crs, output.crs; a geographic one puts the mesh on the sphere) and
    output.time_origin that solution.nc would hold."""
    if spec.crs is not None:
        where = "--crs" if args.crs is not None else f"{spec.source}: output.crs"
        ugrid.check_crs(spec.crs, where)
    if spec.time_origin is not None:
        ugrid.check_time_origin(spec.time_origin, f"{spec.source}: output.time_origin")


def _claim(args, out: Path, identity: dict) -> None:
    """Make ``out`` this run's: refuse another run's results unless --overwrite (then remove
    them); a restart continues the series of its own run in place, and only its own: every
    series file present must hold this run's identity."""
    present = output.previous_results(out)
    if not present:
        return
    restart = Path(args.restart) if args.restart else None
    if args.overwrite:
        output.remove_results(out, keep=restart)
        return
    why = ", ".join(present) if restart is None else _foreign_series(out, identity)
    if why is not None:
        raise ConfigError(f"--output: {out} holds another run's results ({why}); "
                          "give --overwrite to replace them, or another folder")  # fmt: skip


def _foreign_series(out: Path, identity: dict) -> str | None:
    """``FILE: key: old in that run, new now`` for the first series file in ``out`` that
    another run wrote, or that records no readable identity (None: all are this run's)."""
    for name in output.IDENTITY_ATTRS:
        if not (out / name).exists():
            continue
        saved = output.identity_of(out / name)
        if saved is None:
            return f"{name}: no readable run identity"
        differs = mismatch(saved, identity, whose="that run")
        if differs is not None:
            return f"{name}: {differs}"
    return None


def _advance(args, spec, sim, times, series, probe=None, started=None, maps=None, out=None):
    """Run through the output times, writing the series, PNGs and checkpoints (into ``out``)
    on the way; gauges and sections are sampled at the output times and every --probe-every
    seconds; ``maps()`` writes the maximum and arrival maps at every checkpoint."""
    index = {t: k for k, t in enumerate((0.0, *times))}
    if probe is not None and spec.probe_every:
        extra = probes.sample_times(spec.probe_every, times[-1])
        near = (1e-9 * times[-1]) if times else 0.0
        times = sorted(  # a restart at a probe time samples it, as the run it continues did
            set(times) | {t for t in extra if t >= sim.t and min(abs(t - u) for u in times) > near}
        )

    pictures = None
    if spec.png:
        from ..plot import Pictures, parse_limits

        pictures = Pictures(spec.png, parse_limits(args.png_limits or ""))

    def on_output(s) -> None:
        if probe is not None:
            probe.sample(s)
        if s.t not in index:
            return  # a probe time only
        series.write()
        if pictures is not None and not s.is_root:
            output.output_fields(s)  # the gather the root's picture needs
        elif pictures is not None:
            (out / "png").mkdir(exist_ok=True)
            path = out / "png" / f"snapshot_{index[s.t]:04d}.png"
            output.atomic_write(path, lambda p: pictures.draw(s, p, title=spec.name))

    checkpoint = None if out is None else out / output.CHECKPOINT
    if interrupted.is_set():  # a Ctrl-C whose exception C code dropped while setting up
        raise Interrupted
    try:
        return runner.advance(
            sim,
            times,
            on_output=None if series is None else on_output,
            checkpoint_every=spec.checkpoint_every,
            on_checkpoint=lambda s: _checkpoint(checkpoint, s, probe, maps),
            progress=sim.is_root and runner.show_progress(args.quiet),
            label=spec.name,
            say=None if args.quiet else lambda text: print(f"fvswe: {text}", file=sys.stderr),
            started=started,
        )
    except runner.RunInterruptedError as exc:
        raise _interrupted(str(exc), sim, checkpoint, probe, maps) from None


def _checkpoint(path: Path, sim, probe=None, maps=None) -> None:
    """The run's snapshot (collective under MPI) written to ``path`` by rank 0; first the
    gauge and section records so far, which a restart from it continues
    (:meth:`fvswe.probes.Probes.keep_earlier`), and their state in the snapshot, and the
    maximum and arrival maps so far (``maps()``, collective; the snapshot holds them)."""
    snap = sim.snapshot()
    if probe is not None:
        snap.update(probe.state())
    if maps is not None:
        maps()
    if probe is not None and sim.is_root:
        probe.write(path.parent, netcdf=probes.netcdf_available(), png=False)
    if sim.part is not None:  # ranks holding their parts alone: a file each, then the index
        partout.save_checkpoint(path, snap, sim.comm)
    elif sim.is_root:
        output.save_checkpoint(path, snap)


def _interrupted(where: str, sim, checkpoint, probe=None, maps=None) -> runner.RunInterruptedError:
    """The error for a Ctrl-C at a whole step, after writing a checkpoint there (with -o)."""
    if checkpoint is None:
        tail = "no checkpoint written (give --output DIR to keep one)"
    else:
        _checkpoint(checkpoint, sim, probe, maps)
        tail = f"checkpoint written to {checkpoint}; continue with --restart {checkpoint}"
    return runner.RunInterruptedError(f"{where}; {tail}")


def _finish(args, spec, sim, summary, out, written=()) -> int:
    peaks = parallel.peak_memory(sim.comm)  # collective: every rank's, in rank order
    device = parallel.device_memory(sim.comm, sim.backend.name == "gpu")  # collective too
    if not sim.is_root:  # rank 0 reports for all
        return 0
    report = {
        "case": spec.name,
        "source": spec.source,
        "mesh": sim.mesh.source if sim.part is None else sim.part.manifest["source"],
        **summary.to_dict(),
        "mass_balance": runner.mass_balance(sim, summary),
        "steps_total": sim.steps,
        "restart": args.restart,
        "output_times": list(written),
        "ranks": sim.ranks,
        "peak_rss_bytes": peaks,
        "device_bytes": device,
        "holds_part": sim.part is not None,
    }
    if out is not None:
        output.write_json(out / "summary.json", report)
    if args.json:
        print(json.dumps(report))
    else:
        print(runner.summary_text(spec.name, sim, summary))
        if out is not None:
            print(f"outputs in {out}/{_series_note(out)}")
    return 0


def _series_note(out: Path) -> str:
    """`` (ParaView: ..., NetCDF: ...)``: the series files in ``out`` (only those written)."""
    readers = (("ParaView", f"{output.SERIES}.xdmf"), ("NetCDF", ugrid.FILENAME))
    found = [f"{reader}: {out / name}" for reader, name in readers if (out / name).is_file()]
    return f" ({', '.join(found)})" if found else ""


def main_run(args) -> int:
    """``run`` with Ctrl-C turned into a checkpoint, a readable message and exit status 130."""
    try:
        return run(args)
    except runner.RunInterruptedError as exc:
        if parallel.launch_rank() == 0:
            print(f"fvswe: {exc}", file=sys.stderr)
        return 130  # 128 + SIGINT, as shells expect
    except FvsweError:
        if parallel.launch_rank() != 0:
            return 2  # every rank raised the same error: rank 0 says it
        raise
    except Exception:
        parallel.abort_job()  # under MPI: one rank failing alone must not leave the others waiting
        raise
