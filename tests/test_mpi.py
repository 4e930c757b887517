"""Runs on several MPI ranks are bitwise the single-process runs (fvswe.parallel).

pytest launches ``mpiexec -n 2`` and ``-n 3`` of tests/mpi_driver.py (every run in one
launch) and of ``fvswe run``, and compares with the same runs in this process:
``np.array_equal``, no tolerance. Skipped only where mpi4py or mpiexec is missing; the
GPU ranks' tests (marker ``gpu``) also where CuPy sees no GPU.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from gpu_skip import skip_without_gpu

from fvswe import registry
from fvswe.cases import get_case

try:
    import mpi4py  # noqa: F401
except ImportError:
    mpi4py = None
MPIEXEC = shutil.which("mpiexec") or shutil.which("mpirun")


def _launcher_options() -> list[str]:
    """Open MPI refuses to run as root unless told (the GPU machines run tests as root)."""
    if MPIEXEC is None or os.geteuid() != 0:
        return []
    about = subprocess.run([MPIEXEC, "--version"], capture_output=True, text=True).stdout.lower()
    return ["--allow-run-as-root"] if "open mpi" in about or "openrte" in about else []


pytestmark = pytest.mark.skipif(
    mpi4py is None or MPIEXEC is None,
    reason="needs mpi4py and mpiexec (pip install 'fvswe[mpi]' mpich)",
)

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
from mpi_driver import GPU_RESTARTS, GPU_RUNS, blowup_message, run_case  # noqa: E402

#: Short runs: every two-layer scheme on test1 and test2, another cell ordering, float32, a
#: one-layer wetting-and-drying case with a tidal level boundary, friction and nonlagged Δt;
#: Coriolis on a beta-plane (f per cell) and wind; the slope surge to t = 4 s
#: (tests/test_vanishing.py; its tip's edges reconstructed, docs/SCHEMES.md §13.1) and an
#: upper layer pulled apart beside the parts' borders, which the positivity limiter acts in
#: (§13.4; the donor's velocity of a limited slot may be a halo cell's); the multi-stage
#: integrators (fvswe.integrators), also with the limiter and
#: a level boundary; point sources, a sink and rain over wet and dry cells (tests/test_sources.py);
#: a moving bed, the slide leaving the basin (tests/test_slide.py), also restarted half-way;
#: the linear reconstruction (docs/SCHEMES.md §19) on test1 with every two-layer scheme, the
#: wet/dry tide, the surge to t = 1.5 s (limited once before §13.1; to 4 s the ranks' launch
#: went past its 180 s here) and the rain basin (restarted), whose halo cells' face states come
#: from their owners.
#: a compensated float32 tide (docs/SCHEMES.md §2.7: the remainders gathered into the
#: checkpoint and scattered again) with SSP-RK3, restarted half-way; a dam break on a strip
#: periodic across (tests/test_periodic.py: the partition and halos see the joined edges),
#: also under the linear reconstruction (the joined cells' weights see the translation);
#: Williamson's test 2 on a lon/lat band round the globe, one and two layers
#: (tests/test_sphere.py: the sphere's metric per cell sliced to each part).
RUNS = [
    *({"name": f"{case}-{scheme}", "case": case, "scheme": scheme, "t_end": 0.02}
      for case in ("test1", "test2") for scheme in registry.names(2)),
    {"name": "test1-hilbert", "case": "test1", "order": "hilbert", "t_end": 0.02},
    {"name": "test2-float32", "case": "test2", "dtype": "float32", "t_end": 0.02},
    {"name": "tide", "case": "cgrid-tide", "nx": 12, "t_end": 1800.0},
    {"name": "test1-forcing", "case": "test1", "t_end": 0.02, "coriolis": {"f": 2.0, "beta": 0.5},
     "wind": {"u": 20.0, "v": -5.0, "rho_water": 50.0}},
    {"name": "surge", "case": "slope-surge", "scheme": "pvm-ifcp", "nx": 200, "t_end": 4.0},
    {"name": "pulled-apart", "case": "pulled-apart", "nx": 100, "t_end": 0.5},
    {"name": "tide-restarted", "case": "cgrid-tide", "nx": 12, "t_end": 1800.0,
     "restart_at": 900.0},
    {"name": "tide-float32-rk3-restarted", "case": "cgrid-tide", "nx": 12, "t_end": 1800.0,
     "dtype": "float32", "integrator": "ssp-rk3", "restart_at": 900.0},
    {"name": "test1-rk2", "case": "test1", "scheme": "roe", "t_end": 0.02,
     "integrator": "ssp-rk2"},
    {"name": "tide-rk3", "case": "cgrid-tide", "nx": 12, "t_end": 1800.0,
     "integrator": "ssp-rk3"},
    {"name": "pulled-apart-rk3", "case": "pulled-apart", "nx": 100, "t_end": 0.5,
     "integrator": "ssp-rk3"},
    {"name": "rain-basin", "case": "rain-basin", "t_end": 4.0},
    {"name": "rain-basin-2-rk2", "case": "rain-basin", "layers": 2, "t_end": 2.0,
     "integrator": "ssp-rk2"},
    {"name": "slide-basin", "case": "slide-basin", "t_end": 1.0},
    {"name": "slide-basin-2-rk3", "case": "slide-basin", "layers": 2, "t_end": 1.0,
     "integrator": "ssp-rk3", "restart_at": 0.5},
    *({"name": f"test1-linear-{scheme}", "case": "test1", "scheme": scheme, "t_end": 0.02,
       "integrator": "ssp-rk2", "reconstruction": "linear"} for scheme in registry.names(2)),
    {"name": "tide-linear", "case": "cgrid-tide", "nx": 12, "t_end": 1800.0,
     "integrator": "ssp-rk2", "reconstruction": "linear"},
    {"name": "surge-linear", "case": "slope-surge", "scheme": "pvm-ifcp", "nx": 200,
     "t_end": 1.5, "integrator": "ssp-rk2", "reconstruction": "linear"},
    {"name": "rain-basin-linear-rk3", "case": "rain-basin", "t_end": 4.0,
     "integrator": "ssp-rk3", "reconstruction": "linear", "restart_at": 2.0},
    {"name": "periodic-strip", "case": "periodic-strip", "nx": 24, "t_end": 2.0},
    {"name": "periodic-strip-linear", "case": "periodic-strip", "nx": 24, "t_end": 1.0,
     "integrator": "ssp-rk2", "reconstruction": "linear"},
    *({"name": f"sphere-band-{layers}", "case": "sphere-band", "nx": 6, "layers": layers,
       "t_end": 21600.0} for layers in (1, 2)),
]  # fmt: skip


#: Ranks that wait in MPI sleep instead of spinning (MPICH: a nanosleep for its sched_yield;
#: Open MPI: yield when idle). The ranks outnumber the cores that CI's 2 cores leave them
#: beside the other pytest worker, and a rank spinning in a halo exchange takes the core of
#: the rank it waits for: :data:`RUNS` on 3 ranks beside one busy process (three launches
#: each way, alternated) took 73-123 s of CPU and 49-105 s wall spinning, 47-55 s of CPU and
#: 45-64 s wall sleeping. The environment's own settings win.
QUIET_WAIT = {"MPIR_CVAR_ENABLE_HEAVY_YIELD": "1", "OMPI_MCA_mpi_yield_when_idle": "1"}


def mpiexec(
    n: int, *args: str, env: dict | None = None, timeout: float = 180
) -> subprocess.CompletedProcess:
    """``mpiexec -n n python ARGS`` with this checkout's fvswe, one thread a rank, waiting
    ranks sleeping (:data:`QUIET_WAIT`)."""
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    env = {**QUIET_WAIT, **os.environ, "PYTHONPATH": path, "NUMBA_NUM_THREADS": "1", **(env or {})}
    return subprocess.run(
        [MPIEXEC, *_launcher_options(), "-n", str(n), sys.executable, *args],
        capture_output=True, text=True, env=env, timeout=timeout, cwd=ROOT,
    )  # fmt: skip


def launch_runs(runs: list[dict], n: int, folder: Path, timeout: float = 180) -> dict:
    """tests/mpi_driver.py's ``runs`` on ``n`` ranks: ``{"name.key": array}``."""
    (folder / "runs.json").write_text(json.dumps(runs))
    done = mpiexec(n, "tests/mpi_driver.py", str(folder / "runs.json"), str(folder / "out.npz"),
                   timeout=timeout)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    with np.load(folder / "out.npz") as z:
        return {key: z[key] for key in z.files}


@pytest.fixture(scope="module")
def reference():
    """Every run in this single process (compiling and caching the kernels for the ranks)."""
    return {spec["name"]: run_case(spec) for spec in RUNS}


@pytest.fixture(scope="module", params=[2, 3])
def launched(request, reference, tmp_path_factory):
    return launch_runs(RUNS, request.param, tmp_path_factory.mktemp(f"mpi{request.param}"))


@pytest.mark.parametrize("name", [spec["name"] for spec in RUNS])
def test_ranks_give_the_single_process_bits(launched, reference, name):
    ref = reference[name]
    assert ref["steps"] > 1
    for key in ("state", "mass", "steps", "counters", "inflow", "limited"):
        assert np.array_equal(launched[f"{name}.{key}"], ref[key]), key


def test_a_library_checkpoint_continues_the_run_bit_for_bit(reference):
    """``tide-restarted`` (on the ranks and alone, compared above): checkpointed with
    ``save_checkpoint(path, sim.snapshot())`` at 900 s and continued by a new Simulation's
    ``restore(load_checkpoint(path))``, it is the run that stopped at 900 s and went on."""
    from mpi_driver import simulation

    spec = next(s for s in RUNS if s["name"] == "tide-restarted")
    straight = simulation(spec)
    straight.run(spec["restart_at"])
    straight.run(spec["t_end"])
    ref = reference["tide-restarted"]
    assert np.array_equal(ref["state"], straight.state()) and ref["steps"] == straight.steps
    assert ref["inflow"] == straight.backend.counters()["level_inflow"] != 0


def test_wetting_and_drying_case_dries_cells_and_feels_the_level(reference):
    """The tide run is a real test of wet/dry and level edges: some cells are dry, and
    water crossed the level edges (its volume is compared bitwise above)."""
    h = reference["tide"]["state"][:, 0]
    assert (h == 0).any() and (h > 0).any()
    assert abs(reference["tide"]["inflow"]) > 1.0  # m^3


def test_limited_runs_limit_in_many_steps(reference):
    """The runs of the limiter (compared bitwise above) limit cell-layers: 73 in the
    pulled-apart layer, where they lie beside the borders of the parts of 2 and 3 ranks, so
    that their theta reaches the other part by the halo exchange (without it, both runs of
    the ranks stopped at step 100 with the upper layer's mass off by 5e-5, measured before
    the limiter's momentum terms). The surge limited 54 before the bed-step criterion
    (docs/SCHEMES.md §13.1) reconstructed its tip: now none."""
    assert reference["surge"]["limited"] == 0 and reference["pulled-apart"]["limited"] > 50
    for name in ("surge", "pulled-apart"):
        assert reference[name]["state"][:, [0, 3]].min() >= 0


def test_ranks_holding_their_parts_alone_hash_the_identity_in_chunks_as_one_process():
    """On 3 ranks each holding its part alone, the run identity and its details, hashed 7 rows
    at a time in global order (``parallel.DIGEST_ROWS``: hundreds of chunks, most owned by
    one rank; nothing gathered whole), are one process's exactly: friction, interfacial
    friction and Coriolis varying per cell; the tide's level boundary and uniform friction."""
    from mpi_driver import IDENTITY_RUNS, simulation

    from fvswe import restart

    done = mpiexec(3, "tests/mpi_driver.py", "--identity")
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout.splitlines()[-1])
    for spec in IDENTITY_RUNS:
        one = json.loads(json.dumps(restart.identified(simulation(spec))))
        assert found[spec["name"]] == list(one), spec["name"]
    assert found["test1-fields"][1]["forcing"]["coriolis.f"].startswith("per cell, hash")
    assert found["tide"][1]["boundary"]["boundary.west"] == "level"


def fvswe(n: int, *argv: str, timeout: float = 180) -> subprocess.CompletedProcess:
    return mpiexec(n, "-m", "fvswe", "run", *argv, timeout=timeout)


def _same_final(a: Path, b: Path) -> bool:
    """Whether the final states in the folders ``a`` and ``b`` are the same arrays, bitwise
    (final.npz, or a run's per-part final state under final.json)."""
    from fvswe.partout import load_final

    x, y = load_final(a), load_final(b)
    return list(x) == list(y) and all(np.array_equal(x[k], y[k]) for k in x)


#: Gauges (one on a vertex of square-4k, in several cells: the first in the run's order is
#: sampled), a straight section and a polyline one, and the maximum and arrival maps.
PROBES = ["--gauge", "0.3,0.4", "--gauge", "0,0,vertex", "--gauge=-2.5,1", "--section=-6,0.5,6,0.5",
          "--section", "0.6,-6,0.7,0,0.6,6", "--maxima"]  # fmt: skip


def _same_records(a: Path, b: Path) -> bool:
    """Whether the gauges' and sections' records (CSV: each value's ``repr``) and the maximum
    and arrival maps (one process's ``maxima.h5``, or a per-part run's under ``maxima.json``)
    in the folders ``a`` and ``b`` are the same, bitwise."""
    from fvswe.partout import load_maxima

    same = [(a / n).read_bytes() == (b / n).read_bytes() for n in ("gauges.csv", "sections.csv")]
    x, y = load_maxima(a), load_maxima(b)
    bits = [np.array_equal(x[k].view(np.int64), y[k].view(np.int64)) for k in x]
    return all(same) and list(x) == list(y) and all(bits) and len(x) > 0


@pytest.mark.parametrize("backend", ["cpu", pytest.param("gpu", marks=pytest.mark.gpu)])
def test_cli_checkpoint_on_two_ranks_restarts_on_three_bit_for_bit(tmp_path, backend):
    """GPU ranks: three share the one GPU of the test machines (host-staged halo)."""
    if backend == "gpu":
        skip_without_gpu()
    out = tmp_path / "out"
    common = ["test1", "--backend", backend, "--scheme", "roe", "-q", "-o", str(out)]
    first = fvswe(2, *common, "--t-end", "0.03", "--checkpoint-every", "0.03")
    assert first.returncode == 0, first.stderr[-3000:]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["ranks"] == 2 and (out / "solution.xdmf").is_file()
    (out / "final.npz").unlink()
    again = fvswe(3, *common, "--t-end", "0.06", "--restart", str(out / "checkpoint.npz"))
    assert again.returncode == 0, again.stderr[-3000:]
    done = json.loads((out / "summary.json").read_text())
    assert done["ranks"] == 3 and done["steps"] > 0
    assert done["steps_total"] == summary["steps"] + done["steps"]
    sim = get_case("test1").simulation(scheme="roe", backend=backend)
    sim.run(0.03)  # where the checkpoint stands
    sim.run(0.06)
    fields = sim.fields()
    with np.load(out / "final.npz") as z:
        for key in sim.model.fields:
            assert np.array_equal(z[key], fields[key]), key
    from fvswe.cli import main

    single = tmp_path / "single"  # the same checkpoint continued by one process
    argv = ["test1", "--backend", backend, "--scheme", "roe", "-q", "--t-end", "0.06"]
    assert main(["run", *argv, "-o", str(single), "--restart", str(out / "checkpoint.npz")]) == 0
    with np.load(single / "final.npz") as z:
        assert all(np.array_equal(z[key], fields[key]) for key in sim.model.fields)
    assert sorted(p.name for p in out.iterdir()) == [
        "checkpoint.npz", "final.npz", "solution", "solution.h5", "solution.xdmf",
        "summary.json",
    ]  # fmt: skip


def _series(directory: Path) -> list[tuple[float, dict[str, np.ndarray]]]:
    """Every output of the XDMF series in ``directory``: (time, {dataset: values})."""
    import h5py

    from fvswe.output import Series

    out = []
    for t, name in Series.read_index(directory / "solution.xdmf"):
        with h5py.File(directory / name, "r") as f:
            out.append((t, {key: np.asarray(f[key]) for key in f}))
    return out


@pytest.mark.parametrize("backend", ["cpu", pytest.param("gpu", marks=pytest.mark.gpu)])
@pytest.mark.parametrize("ranks", [2, 3])
def test_continuing_from_a_checkpoint_at_an_output_time(tmp_path, ranks, backend):
    """A run continued from a checkpoint taken at one of its output times (the state of a
    finished run): it hung, rank 0 skipping the output it had while the other ranks waited
    in its gather. Now every rank writes it again, and the series is the uninterrupted
    run's, output for output, bit for bit (a hang fails at the 120 s timeout), and so are
    the gauge and section records (issue 32, item 2: rank 0 writes them; on GPU ranks a
    section is the volume of a side closed by walls) and the maximum and arrival maps (item
    4: each cell's row from the rank that owns it). GPU ranks share the one GPU of the
    test machines (host-staged halo)."""
    import h5py

    from fvswe.cli import main

    if backend == "gpu":
        skip_without_gpu()
    common = ["test1", "--backend", backend, "--scheme", "roe", "-q", "--output-every", "0.01",
              "--gauge", "1,0.5,g", "--section=0.3,-5,0.3,5", "--probe-every", "0.005",
              "--maxima", "--arrival-threshold", "0.001"]  # fmt: skip
    out, whole = tmp_path / "out", tmp_path / "whole"
    first = fvswe(ranks, *common, "-o", str(out), "--t-end", "0.02", "--checkpoint-every", "0.02")
    assert first.returncode == 0, first.stderr[-3000:]
    again = fvswe(ranks, *common, "-o", str(out), "--t-end", "0.04", "--restart",
                  str(out / "checkpoint.npz"), timeout=120)  # fmt: skip
    assert again.returncode == 0, again.stderr[-3000:]
    assert main(["run", *common, "-o", str(whole), "--t-end", "0.04"]) == 0
    continued, uninterrupted = _series(out), _series(whole)
    assert [t for t, _ in continued] == [t for t, _ in uninterrupted] and len(continued) == 5
    for (_, a), (_, b) in zip(continued, uninterrupted, strict=True):
        assert a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)
    for name in ("gauges.csv", "sections.csv"):
        assert (out / name).read_text() == (whole / name).read_text(), name
    with h5py.File(out / "maxima.h5", "r") as a, h5py.File(whole / "maxima.h5", "r") as b:
        assert list(a) == list(b) and "arrival_time" in a
        assert all(a[k][()].tobytes() == b[k][()].tobytes() for k in a)  # NaN too
        assert 0 < np.count_nonzero(a["arrival_time"][()] > 0) < a["arrival_time"].size


def test_a_courant_stop_names_the_global_cell_and_stops_every_rank(capsys):
    from fvswe.cli import main

    argv = ["test1", "--backend", "cpu", "--dt-mode", "fixed", "--dt", "0.5", "--t-end", "100"]
    assert main(["run", *argv, "-q"]) == 2
    one = capsys.readouterr().err
    two = fvswe(2, *argv, "-q")
    assert two.returncode == 2
    assert one.startswith("fvswe: error: dt: the fixed step exceeds the stable one at step ")
    assert two.stderr == one and one.count("\n") == 1


@pytest.mark.parametrize("n", [2, 3])
def test_the_blow_up_cell_is_the_first_over_all_ranks(n):
    """Every cell from a part's first border cell on is bad: each part's first bad cell in
    its local order (interior cells first) is not its first in global order."""
    done = mpiexec(n, "tests/mpi_driver.py", "--blowup")
    assert done.returncode == 0, done.stderr[-3000:]
    first, message = json.loads(done.stdout.strip().splitlines()[-1])
    assert first > 0 and f"in cell {first} " in message
    assert message == blowup_message(get_case("test1").simulation(backend="cpu"), first)


def test_a_launch_mpi_does_not_see_is_a_one_line_error():
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PMI_SIZE": "2"}
    done = subprocess.run(
        [sys.executable, "-m", "fvswe", "run", "test1", "--backend", "cpu", "-q"],
        capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip
    assert done.returncode == 2
    assert done.stderr.startswith("fvswe: error: launched as 2 MPI processes but MPI sees 1")
    assert done.stderr.count("\n") == 1


@pytest.mark.parametrize("backend", ["cpu", pytest.param("gpu", marks=pytest.mark.gpu)])
def test_cli_outputs_of_two_ranks_equal_one_process(tmp_path, backend):
    """final.npz, grid.npz, the XDMF/HDF5 and NetCDF series, gauges, sections and the PNGs,
    written by rank 0 alone, and summary.json but its timings; the tide's level boundary on
    GPU ranks too (two sharing the GPU; the masses: each rank's exact sums on the device)."""
    import h5py

    from fvswe.cli import main

    if backend == "gpu":
        skip_without_gpu()
    # the GPU machines' image has no netCDF4 (the [netcdf] extra); CI installs it
    pytest.importorskip("netCDF4", reason="the NetCDF series (--format both) needs netCDF4")
    argv = ["cgrid-tide", "--backend", backend, "--nx", "12", "--t-end", "1200",
            "--output-every", "600",
            "--png", "h,eta", "--format", "both", "--gauge", "100,300,g1",
            "--section", "300,0,300,600", "--probe-every", "100", "-q"]  # fmt: skip
    assert main(["run", *argv, "-o", str(tmp_path / "one")]) == 0
    two = fvswe(2, *argv, "-o", str(tmp_path / "two"))
    assert two.returncode == 0, two.stderr[-3000:]
    one, two = tmp_path / "one", tmp_path / "two"
    files = sorted(str(p.relative_to(one)) for p in one.rglob("*"))
    assert files == sorted(str(p.relative_to(two)) for p in two.rglob("*"))
    assert "png/snapshot_0002.png" in files
    for name in ("final.npz", "grid.npz"):
        with np.load(one / name) as a, np.load(two / name) as b:
            assert all(np.array_equal(a[k], b[k]) for k in a.files), name
    steps = [f for f in files if f.startswith("solution/") and f.endswith(".h5")]
    assert len(steps) >= 3  # the mesh in solution.h5, one file per output time
    for name in ("solution.h5", *steps):
        with h5py.File(one / name) as a, h5py.File(two / name) as b:
            names = []
            a.visit(names.append)
            data = [n for n in names if isinstance(a[n], h5py.Dataset)]
            assert data and all(np.array_equal(a[n][()], b[n][()]) for n in data), name
    assert {"solution.nc", "gauges.nc", "sections.csv", "probes.png"} <= set(files)
    for name in ("solution.xdmf", "png/snapshot_0002.png", "gauges.csv", "sections.csv"):
        assert (one / name).read_bytes() == (two / name).read_bytes(), name
    import netCDF4

    for name in ("solution.nc", "gauges.nc", "sections.nc"):
        with netCDF4.Dataset(one / name) as a, netCDF4.Dataset(two / name) as b:
            assert list(a.variables) == list(b.variables), name
            for v in a.variables:
                assert np.array_equal(a[v][:], b[v][:]), f"{name}:{v}"
    timing = (
        "wall_s",
        "compile_s",
        "setup_s",
        "setup_stages",
        "cell_steps_per_s",
        "check_s",
        "checks",  # the looks are spaced by their times (runner.next_look)
        "threads",
        "ranks",
        "peak_rss_bytes",
        "device_bytes",
    )  # the rest: bitwise
    a, b = (json.loads((d / "summary.json").read_text()) for d in (one, two))
    assert (a["ranks"], b["ranks"]) == (1, 2) and a["level_inflow"] != 0
    assert {k: v for k, v in a.items() if k not in timing} == {
        k: v for k, v in b.items() if k not in timing
    }


def test_a_single_process_run_imports_neither_mpi4py_nor_pymetis(tmp_path):
    code = (
        "import sys\n"
        "from fvswe.cli import main\n"
        f"assert main(['run', 'test1', '--backend', 'cpu', '--t-end', '0.005', '-q', "
        f"'-o', {str(tmp_path)!r}]) == 0\n"
        "print(sorted(m for m in ('mpi4py', 'pymetis') if m in sys.modules))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NUMBA_NUM_THREADS": "1"}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.splitlines()[-1] == "[]"


def test_an_error_on_rank_0_alone_stops_every_rank_with_one_line(tmp_path):
    """Rank 0 reads the mesh; its error reaches the other ranks (no hang), and one line."""
    done = fvswe(2, "test1", "--backend", "cpu", "--mesh", str(tmp_path / "none.msh"), "-q")
    assert done.returncode == 2
    assert done.stderr.startswith("fvswe: error: ") and "none.msh" in done.stderr
    assert done.stderr.count("\n") == 1


@pytest.mark.gpu
def test_gpu_ranks_give_the_single_gpu_bits():
    """Two GPU ranks (sharing one GPU: the host-staged halo; one GPU each: NCCL) against one
    GPU, bitwise, for every run of mpi_driver.GPU_RUNS, and each of GPU_RESTARTS restarted
    from 2 ranks to 1 and from 1 to 2 (tests/mpi_driver.py --gpu)."""
    skip_without_gpu()
    done = mpiexec(2, "tests/mpi_driver.py", "--gpu", timeout=400)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    # the last JSON line (Open MPI may print terminal resets after it)
    equal = json.loads([ln for ln in done.stdout.splitlines() if ln.startswith("{")][-1])
    assert len(equal) == len(GPU_RUNS) + 2 * len(GPU_RESTARTS) and all(equal.values()), equal


#: Host program (tests/cuda_host): per step, one device closes it (finish_step summing its
#: level fluxes), and a rank's pair: finish_step with no level edges of its own (n_level 0),
#: then level_inflow over the same fluxes in the same order, called twice (the second sees
#: no new step). stdin: int32 steps, n; per step float64 dt and 2 n fluxes. stdout: per step
#: the one device's (level_inflow, level_inflow2), the rank's after each call.
INFLOW_HOST = r"""
#include "shim.h"
#include "gather.cu"
#include <cstdio>
#include <vector>

extern "C" __global__ void update_closed(Ctrl* c, real* partial)
{
    finish_step(c, partial, real(1), OP_UPDATE);
}

int main()
{
    int head[2];
    if (fread(head, 4, 2, stdin) != 2) return 2;
    const int steps = head[0], n = head[1];
    std::vector<double> lf(2 * n);
    std::vector<real> partial(1);
    Ctrl one = {}, rank = {};
    const double euler[3] = {0.0, 1.0, 1.0};  // c, a, weight of the one stage
    const double q[1] = {0.5};  // its midpoint kinds' table time t + q dt
    for (Ctrl* c : {&one, &rank}) {
        c->t_end = 1e30, c->max_steps = 1 << 30, c->level_flux = lf.data(), c->stages = euler;
        c->stage_q = q;
    }
    one.n_level = n;
    long long seen = 0;
    for (int s = 0; s < steps; ++s) {
        if (fread(&one.dt, 8, 1, stdin) != 1 || fread(lf.data(), 8, 2 * n, stdin) != size_t(2 * n))
            return 2;
        rank.dt = one.dt;
        launch(1, FVSWE_BLOCK, update_closed, &one, partial.data());
        launch(1, FVSWE_BLOCK, update_closed, &rank, partial.data());
        double out[6] = {one.level_inflow, one.level_inflow2};
        for (int call = 1; call <= 2; ++call) {
            launch(1, FVSWE_BLOCK, level_inflow, &rank, (const double*)lf.data(), n, &seen);
            out[2 * call] = rank.level_inflow, out[2 * call + 1] = rank.level_inflow2;
        }
        fwrite(out, 8, 6, stdout);
    }
    return 0;
}
"""


@pytest.mark.parametrize("layers", [1, 2])
def test_ranks_inflow_kernel_sums_as_one_device_on_host(layers):
    """GPU ranks' inflow counters (kernel level_inflow over the ranks' level fluxes gathered in
    global edge order, the step kernels summing none) are the one device's bits, step after
    step, on the host CUDA shim; a call after no new step adds nothing. The fluxes span 12
    orders of magnitude, so a sum in another order (NumPy's) differs."""
    from test_cuda_sources import CXX, host_binary

    from fvswe.backends import gpu

    if CXX is None:
        pytest.skip("no host C++ compiler (g++) on PATH")
    opts = gpu.compile_options("pvm-ifcp" if layers == 2 else "hll-wd", layers, np.float64,
                               "gather")  # fmt: skip
    flags = ["-std=c++17", "-O1", "-ffp-contract=off", "-Wno-psabi"]
    exe = host_binary("inflow", INFLOW_HOST, flags + [o for o in opts if o.startswith("-D")])
    rng = np.random.default_rng(7)
    steps, n = 20, 700  # more edges than threads: each thread adds several
    dt = rng.uniform(0.1, 2.0, steps)
    lf = rng.standard_normal((steps, n, 2)) * 10.0 ** rng.integers(-6, 6, (steps, n, 2))
    blob = np.array([steps, n], np.int32).tobytes() + b"".join(
        np.float64(d).tobytes() + f.tobytes() for d, f in zip(dt, lf, strict=True)
    )
    done = subprocess.run([str(exe)], input=blob, capture_output=True, check=True)
    out = np.frombuffer(done.stdout, dtype=np.float64).reshape(steps, 3, 2)[:, :, :layers]
    one, first, again = out[:, 0], out[:, 1], out[:, 2]
    assert np.array_equal(first, one) and np.array_equal(again, one)
    naive = np.cumsum(-dt[:, None] * lf[:, :, :layers].sum(axis=1), axis=0)
    assert np.allclose(one, naive, rtol=1e-9, atol=1e-3) and not np.array_equal(one, naive)


def test_gathered_values_padded_per_rank_come_back_in_global_order():
    """GpuHalo's inflow gather: every rank's values in a block of ``width`` rows (NCCL's
    allGather takes equal counts), taken by ``padded_rows``, stand in global key order."""
    from fvswe.backends.halo import gathered_order, padded_rows

    rng = np.random.default_rng(3)
    keys = rng.permutation(50)
    split = [keys[:20], keys[20:20], keys[20:29], keys[29:]]  # a rank without any

    class Comm:  # what allgather gives every rank
        def allgather(self, mine):
            return split

    counts, order = gathered_order(Comm(), split[0])
    width, rows = padded_rows(counts, order)
    assert width == 21
    stacked = np.full((len(split) * width, 2), np.nan)
    for r, k in enumerate(split):
        stacked[r * width : r * width + k.size] = np.stack((k, -k), axis=1)  # value: its key
    assert np.array_equal(stacked[rows], np.stack((np.arange(50), -np.arange(50)), axis=1))


@pytest.mark.parametrize("backend", ["cpu", pytest.param("gpu", marks=pytest.mark.gpu)])
@pytest.mark.parametrize("ranks", [2, 3])
def test_cli_ranks_take_their_parts_from_files_bit_for_bit(tmp_path, ranks, backend):
    """``fvswe mesh partition -o DIR`` once, then ``mpiexec -n P fvswe run --parts DIR``: each
    rank holds its part alone, from its file (fvswe.partfile), and the final state, the
    gauges' and sections' records and the maximum maps are one process's (one GPU's),
    bitwise, at first order in RCM order on 2 ranks and with the linear reconstruction
    (SSP-RK2; its weights from the part's cells, each owned cell's from its own edges) in
    Hilbert order on 3; files cut in another order, or into another count of parts, are a
    one-line error, raised on every rank. (GPU ranks: 2 and 3 share the test machine's one
    GPU.)"""
    from fvswe.cli import main

    if backend == "gpu":
        skip_without_gpu()
    parts = tmp_path / "parts"
    order = "rcm" if ranks == 2 else "hilbert"
    cut = ["mesh", "partition", "square-4k", "-n", str(ranks), "--method", "hilbert"]
    assert main([*cut, "--order", order, "-o", str(parts)]) == 0
    linear = ["--reconstruction", "linear", "--integrator", "ssp-rk2"] if ranks == 3 else []
    argv = ["test1", "--backend", backend, "--scheme", "roe", "--order", order, "--t-end",
            "0.02", "-q", *linear, *PROBES]  # fmt: skip
    assert main(["run", *argv, "-o", str(tmp_path / "one")]) == 0
    run = fvswe(ranks, *argv, "--parts", str(parts), "-o", str(tmp_path / "ranks"))
    assert run.returncode == 0, run.stderr[-3000:]
    assert _same_final(tmp_path / "one", tmp_path / "ranks")
    assert _same_records(tmp_path / "one", tmp_path / "ranks")
    if backend == "gpu":
        return  # (the refusals below are the CPU's)
    if ranks == 2:  # files cut in another order
        assert main([*cut, "--order", "hilbert", "-o", str(parts)]) == 0
        wrong = "manifest.json: cut in 'hilbert' order, this run's is 'rcm'"
    else:  # files of two parts
        assert main([*cut[:4], "2", *cut[5:], "--order", order, "-o", str(parts)]) == 0
        wrong = "manifest.json: 2 parts for a run on 3 ranks"
    done = fvswe(ranks, *argv, "--parts", str(parts), "-o", str(tmp_path / "bad"))
    assert done.returncode == 2
    assert done.stderr.startswith("fvswe: error: ") and done.stderr.count("\n") == 1
    assert wrong in done.stderr, done.stderr


#: A one-layer case on a mesh file with a bed (its ``depth``) and a tag ``left`` taking a
#: discharge (divided by the tag's length in the whole mesh), the rest walls; a bump of
#: ``exp`` on the surface, Manning friction, the thin-layer threshold automatic.
PART_CASE = """
layers = 1
scheme = "hll"
t_end = 0.01
order = "hilbert"
[mesh]
file = "m.npz"
[boundary]
left = { kind = "discharge", Q = 3.0 }
wall = "wall"
[initial]
h = "depth + 0.2 * exp(-40 * ((x - 0.5)**2 + (y - 0.4)**2))"
[friction]
law = "manning"
coefficient = 0.03
"""


def _tagged_square(path: Path, scale: float = 1.0) -> None:
    """square-4k (its nodes times ``scale``) with its left side tagged ``left`` and a bed
    varying per cell, to ``path``."""
    from fvswe.mesh import Mesh, family, write_mesh

    mesh = family(4000)
    bnd = mesh.edge_nodes[mesh.boundary]
    left = bnd[(mesh.nodes[bnd, 0] < mesh.nodes[:, 0].min() + 1e-9).all(axis=1)]
    depth = 10.0 + np.sin(mesh.centroid[:, 0] * 7.0) * np.cos(mesh.centroid[:, 1] * 5.0)
    write_mesh(Mesh.from_arrays(mesh.nodes * scale, mesh.cells, boundary_tags={"left": left},
                                depth=depth, source="m"), path)  # fmt: skip


def _check_series_of_parts(out: Path, one: Path) -> None:
    """The series in ``out``, written by 3 ranks, then 2, under one index, read as one
    dataset: one process's (in ``one``), bitwise."""
    from fvswe import partout

    xr = pytest.importorskip("xarray")
    series = _series(one)
    opened = partout.open_parts(out)
    assert isinstance(opened, xr.Dataset) and list(opened.time.values) == [t for t, _ in series]
    assert len(list((out / "solution").glob("000001-000[0-2].h5"))) == 3  # kept: 3 ranks'
    assert len(list((out / "solution").glob("000002-000[0-2].h5"))) == 2  # the restart's
    for k, (_, fields) in enumerate(series):
        for key, values in fields.items():
            assert np.array_equal(opened[key].values[k], values), (k, key)


def test_cpu_ranks_holding_their_parts_alone_run_and_restart_bit_for_bit(tmp_path, capsys):
    """``mpiexec -n P fvswe run --parts DIR`` on CPU ranks: each reads the manifest and its own
    part file, never the mesh (removed after the cut here), and builds its layout and inputs
    from its part (the bed from ``depth``, functions at its centroids, ``eps_h`` by an
    all-reduce, the discharge divided by the manifest's tag length). Three ranks run half the
    way and write a checkpoint per part (a file a rank, then the index); two ranks from their
    own partition, and one process without parts, continue it: final.npz and the masses,
    steps and counters are one process's that stopped half way, bitwise; each rank's peak
    memory is reported. A missing or changed part file, and a checkpoint of another mesh, are
    one-line errors naming the file."""
    from fvswe.cli import main
    from fvswe.errors import ConfigError
    from fvswe.output import load_checkpoint

    _tagged_square(tmp_path / "m.npz")
    case = tmp_path / "case.toml"
    case.write_text(PART_CASE)
    argv = [str(case), "--backend", "cpu", "-q", "--output-every", "0.0025", *PROBES]
    half = ["--t-end", "0.005"]
    assert main(["run", *argv, "-o", str(tmp_path / "one")]) == 0
    assert main(["run", *argv, *half, "-o", str(tmp_path / "half")]) == 0
    for n in (2, 3):
        cut = ["mesh", "partition", str(tmp_path / "m.npz"), "-n", str(n), "--order", "hilbert"]
        assert main([*cut, "-o", str(tmp_path / f"parts{n}")]) == 0
    (tmp_path / "m.npz").rename(tmp_path / "gone.npz")  # no rank can read the whole mesh
    out = tmp_path / "ranks"
    run = fvswe(3, *argv, *half, "--checkpoint-every", "0.005", "--parts",
                str(tmp_path / "parts3"), "-o", str(out))  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    assert _same_final(tmp_path / "half", out) and not (out / "final.npz").exists()
    first = json.loads((out / "summary.json").read_text())
    assert len(list((out / "checkpoint-parts").glob("*-part-000[0-2].npz"))) == 3
    index = out / "checkpoint.npz"
    again = fvswe(2, *argv, "--parts", str(tmp_path / "parts2"), "--restart", str(index),
                  "-o", str(out))  # fmt: skip
    assert again.returncode == 0, again.stderr[-3000:]
    (tmp_path / "gone.npz").rename(tmp_path / "m.npz")  # one process reads the whole mesh
    (tmp_path / "single").mkdir()
    for name in ("gauges.csv", "sections.csv"):  # the records before the checkpoint
        shutil.copy(tmp_path / "half" / name, tmp_path / "single")
    assert main(["run", *argv, "--restart", str(index), "-o", str(tmp_path / "single")]) == 0
    one = json.loads((tmp_path / "one" / "summary.json").read_text())
    for folder in (out, tmp_path / "single"):
        assert _same_final(tmp_path / "one", folder), folder
        assert _same_records(tmp_path / "one", folder), folder
        done = json.loads((folder / "summary.json").read_text())
        for key in ("steps_total", "t", "mass", "mass_initial", "level_inflow", "cells"):
            assert done[key] == one[key], key
    many = json.loads((out / "summary.json").read_text())
    assert many["holds_part"] and not one["holds_part"] and many["steps_total"] > 3
    assert many["ranks"] == 2 and first["ranks"] == 3 and first["steps"] > 1
    assert len(many["peak_rss_bytes"]) == 2 and min(many["peak_rss_bytes"]) > 0
    assert many["device_bytes"] == [0, 0]  # CPU ranks: no device arrays
    assert many["setup_s"] > 0 and many["output_times"] == one["output_times"]
    _check_series_of_parts(out, tmp_path / "one")
    parts = sorted((out / "checkpoint-parts").glob("*.npz"))
    whole = load_checkpoint(index)  # one process's read: every part, global order
    shutil.copy(parts[1], out / "checkpoint-parts" / "0-part-0000.npz")  # a checkpoint cut short
    again = load_checkpoint(index)  # the index names the whole one, as before
    assert np.array_equal(again["W"], whole["W"]) and whole["W"].shape == (4000, 3)
    parts[0].rename(parts[0].with_suffix(".x"))
    with pytest.raises(ConfigError, match=f"{parts[0]}: no such checkpoint part") as e:
        load_checkpoint(index)
    shutil.copy(parts[1], parts[0])
    with pytest.raises(ConfigError, match=f"{parts[0]}: its SHA-256 is not the one") as e:
        load_checkpoint(index)
    assert "\n" not in str(e.value)
    parts[0].with_suffix(".x").rename(parts[0])
    _tagged_square(tmp_path / "m.npz", scale=1.01)  # another mesh
    assert main(["run", *argv, "--restart", str(index), "-o", str(tmp_path / "other")]) == 2
    assert "ranks/checkpoint.npz was written by another run: mesh: " in capsys.readouterr().err


#: A zonal flow on a lon/lat band walled at ±180°, with a bump in its surface (one day).
BAND_CASE = """
layers = 1
scheme = "roe"
g = 9.80616
t_end = 86400.0
order = "hilbert"
[mesh]
file = "band.npz"
[boundary]
west = "wall"
east = "wall"
south = "wall"
north = "wall"
[coriolis]
sphere = true
[initial]
h = "3000 - 1830 * sin(y * pi / 180)**2 + 50 * exp(-((x - 10)**2 + (y - 20)**2) / 200)"
qx = "h * 38.61 * cos(y * pi / 180)"
[output]
crs = "EPSG:4326"
"""


def test_ranks_holding_their_parts_alone_run_on_the_sphere_bit_for_bit(tmp_path):
    """A lon/lat mesh (crs EPSG:4326) from part files on 3 ranks: each rank puts its part on
    the sphere, its owned cells' metric (the closure of their edges) summed in the edges'
    global order, which a border cell's part order is not: the final state is one
    process's, bitwise."""
    from fvswe.cli import main
    from fvswe.mesh import Mesh, write_mesh
    from fvswe.mesh.generate import lonlat_band

    band = lonlat_band(36, 12, 60.0)
    inner = (np.abs(band.nodes[:, 0]) < 179.9) & (np.abs(band.nodes[:, 1]) < 59.9)
    nodes = band.nodes.copy()  # irregular cells: a sum's order shows in its bits
    nodes[inner] += np.random.default_rng(1).uniform(-2.0, 2.0, (int(inner.sum()), 2))
    mesh = Mesh.from_arrays(nodes, band.cells, boundary_tags=band.boundary_tags())
    write_mesh(mesh, tmp_path / "band.npz")
    (tmp_path / "case.toml").write_text(BAND_CASE)
    cut = ["mesh", "partition", str(tmp_path / "band.npz"), "-n", "3", "--order", "hilbert"]
    assert main([*cut, "-o", str(tmp_path / "parts")]) == 0
    argv = [str(tmp_path / "case.toml"), "--backend", "cpu", "-q"]
    assert main(["run", *argv, "-o", str(tmp_path / "one")]) == 0
    done = fvswe(3, *argv, "--parts", str(tmp_path / "parts"), "-o", str(tmp_path / "ranks"))
    assert done.returncode == 0, done.stderr[-3000:]
    summary = json.loads((tmp_path / "ranks" / "summary.json").read_text())
    assert summary["holds_part"] and summary["steps"] > 10
    assert _same_final(tmp_path / "one", tmp_path / "ranks")


#: A channel periodic west-east (a strip of 40 x 6 rectangles cut into triangles), walls
#: along it, a bump travelling across the period, at second order.
CHANNEL_CASE = """
layers = 1
scheme = "hll"
t_end = 1.0
order = "hilbert"
integrator = "ssp-rk2"
reconstruction = "linear"
[mesh]
file = "strip.npz"
[boundary]
west = { kind = "periodic", partner = "east" }
wall = "wall"
[initial]
h = "1 + 0.3 * exp(-4 * (x - 9)**2)"
qx = "0.5 * h"
"""


def test_ranks_holding_their_parts_alone_join_periodic_pairs_bit_for_bit(tmp_path):
    """``fvswe mesh partition --periodic west:east`` joins the pair before the renumbering and
    the cut, as a run does (the same files as ``fvswe mesh partition CASE.toml``, which takes
    the case's order and pairs): 3 ranks from those files (a halo across the period) give one
    process's final state, bitwise; files cut without the pair, or a pair the run lacks, are
    a one-line error naming the manifest."""
    from fvswe.cli import main
    from fvswe.mesh import write_mesh
    from fvswe.mesh.generate import strip

    write_mesh(strip(40, 6, 0.0, 10.0), tmp_path / "strip.npz")
    (tmp_path / "case.toml").write_text(CHANNEL_CASE)
    cut = ["mesh", "partition", str(tmp_path / "strip.npz"), "-n", "3", "--order", "hilbert"]
    assert main([*cut, "--periodic", "west:east", "-o", str(tmp_path / "parts")]) == 0
    from_case = ["mesh", "partition", str(tmp_path / "case.toml"), "-n", "3"]
    assert main([*from_case, "-o", str(tmp_path / "from-case")]) == 0  # its order and pairs
    manifests = [json.loads((tmp_path / d / "manifest.json").read_text())
                 for d in ("parts", "from-case")]  # fmt: skip
    assert manifests[0]["part_sha256"] == manifests[1]["part_sha256"]
    assert manifests[1]["periodic"] == [["west", "east"]] and manifests[1]["order"] == "hilbert"
    argv = [str(tmp_path / "case.toml"), "--backend", "cpu", "-q"]
    assert main(["run", *argv, "-o", str(tmp_path / "one")]) == 0
    done = fvswe(3, *argv, "--parts", str(tmp_path / "parts"), "-o", str(tmp_path / "ranks"))
    assert done.returncode == 0, done.stderr[-3000:]
    assert _same_final(tmp_path / "one", tmp_path / "ranks")
    assert main([*cut, "-o", str(tmp_path / "plain")]) == 0  # the pair not joined
    done = fvswe(3, *argv, "--parts", str(tmp_path / "plain"), "-o", str(tmp_path / "bad"))
    assert done.returncode == 2 and done.stderr.count("\n") == 1
    assert (
        "manifest.json: cut with the periodic pairs [], this run's are [('west', 'east')] "
        "(fvswe mesh partition --periodic west:east)" in done.stderr
    ), done.stderr


@pytest.mark.parametrize(
    "section",
    ["0.1,1.0,4.0,-1.0", "3,1,7,-1", "2,-1,2,3,5,3,5,-1", "0,-1,0,3", "9.9,3,10.1,-1"],
    ids=["ends-on-the-seam", "one-part", "three-parts", "along-the-seam", "across-the-seam"],
)
def test_ranks_holding_their_parts_alone_refuse_one_processs_bad_sections(tmp_path, capsys,
                                                                           section):  # fmt: skip
    """A section that does not split the mesh in two (1 or 3 connected parts are left, its
    cut edges on several ranks), that ends on a periodic seam, or that crosses one (along it
    or across it), is the one process's one-line error on 3 ranks holding their parts alone:
    the ranks join their parts' labels over the mesh."""
    from fvswe.cli import main
    from fvswe.mesh import write_mesh
    from fvswe.mesh.generate import strip

    write_mesh(strip(40, 6, 0.0, 10.0), tmp_path / "strip.npz")
    (tmp_path / "case.toml").write_text(CHANNEL_CASE)
    assert main(["mesh", "partition", str(tmp_path / "case.toml"), "-n", "3",
                 "-o", str(tmp_path / "parts")]) == 0  # fmt: skip
    capsys.readouterr()
    argv = [str(tmp_path / "case.toml"), "--backend", "cpu", "-q", "--section", section]
    assert main(["run", *argv, "-o", str(tmp_path / "one")]) == 2
    one = capsys.readouterr().err
    done = fvswe(3, *argv, "--parts", str(tmp_path / "parts"), "-o", str(tmp_path / "ranks"))
    assert done.returncode == 2 and done.stderr == one and one.count("\n") == 1, done.stderr
    assert one.startswith("fvswe: error: section 's1': ")


#: Free outflow all round a strip over a bed sloping in x and waving in y (each edge's bed
#: drop differs), a hump of water leaving through every side.
OUTFLOW_CASE = """
layers = 1
scheme = "hll"
t_end = 2.0
order = "hilbert"
[mesh]
file = "strip.npz"
[boundary]
west = "outflow"
east = "outflow"
wall = "outflow"
[initial]
H = "1 + 0.05 * x + 0.1 * sin(4 * y)"
h = "H + 0.3 * exp(-2 * (x - 5)**2 - 3 * (y - 0.7)**2)"
"""


def test_ranks_holding_their_parts_alone_take_outflow_tables_bit_for_bit(tmp_path):
    """Outflow edges within two rings of a part's border take their bed drops from cells
    beyond the halo (their owners send them) and the tables are numbered over the whole
    mesh: 3 ranks from part files give one process's final state and volume balance bit for
    bit, and restart from one process's checkpoint (the run identity one process's)."""
    from fvswe.cli import main
    from fvswe.mesh import write_mesh
    from fvswe.mesh.generate import strip

    write_mesh(strip(40, 6, 0.0, 10.0), tmp_path / "strip.npz")
    (tmp_path / "case.toml").write_text(OUTFLOW_CASE)
    assert main(["mesh", "partition", str(tmp_path / "case.toml"), "-n", "3",
                 "-o", str(tmp_path / "parts")]) == 0  # fmt: skip
    argv = [str(tmp_path / "case.toml"), "--backend", "cpu", "-q", "--json"]
    done = [
        fvswe(1, *argv, "-o", str(tmp_path / "one"), "--checkpoint-every", "1.0"),
        fvswe(3, *argv, "--parts", str(tmp_path / "parts"), "-o", str(tmp_path / "ranks")),
    ]
    for d in done:
        assert d.returncode == 0, d.stderr[-3000:]
    assert _same_final(tmp_path / "one", tmp_path / "ranks")
    one, ranks = (json.loads(d.stdout.strip().splitlines()[-1]) for d in done)
    assert one["mass_balance"] == ranks["mass_balance"] and one["mass_balance"][0]["net_in"] != 0
    checkpoint = str(tmp_path / "one" / "checkpoint.npz")
    again = fvswe(3, *argv, "--parts", str(tmp_path / "parts"), "--restart", checkpoint,
                  "-o", str(tmp_path / "again"))  # fmt: skip
    assert again.returncode == 0, again.stderr[-3000:]
    assert _same_final(tmp_path / "one", tmp_path / "again")


#: A point source on a vertex (in cells of several parts: one process's first holds it), a
#: polygon source across the parts and rain everywhere with a field varying in x.
SOURCES = """
[[sources]]
name = "river"
point = [{x!r}, {y!r}]
discharge = "2.0 + 1.5 * sin(t * 300)"
[[sources]]
name = "outfall"
polygon = [[-2.0, -2.0], [1.3, -2.0], [1.3, 1.1], [-2.0, 1.1]]
discharge = -0.7
[[rain]]
rate = 2e-3
field = "1.0 + 0.1 * x"
"""


def test_ranks_holding_their_parts_alone_take_sources_and_rain_bit_for_bit(tmp_path):
    """Point and polygon sources and rain on 3 ranks from part files: the owner of one
    process's first cell holding the point takes it, the polygon's area and each table's
    volume are exact sums all-reduced (one process sums them exactly too), so the final
    state and the summary (the source and rain volumes, the masses) are one process's, bit
    for bit."""
    from fvswe.cli import main
    from fvswe.partfile import read_part

    _tagged_square(tmp_path / "m.npz")
    cut = ["mesh", "partition", str(tmp_path / "m.npz"), "-n", "3", "--order", "hilbert"]
    assert main([*cut, "-o", str(tmp_path / "parts")]) == 0
    ranks_of: dict[int, set[int]] = {}  # a node's ranks owning a cell around it
    where: dict[int, tuple[float, float]] = {}
    for rank in range(3):
        local, part = read_part(tmp_path / "parts", rank)
        ids = np.load(tmp_path / "parts" / f"part-{rank:04d}.npz")["node_ids"]
        for node in np.unique(local.cells[: part.n_owned]):
            ranks_of.setdefault(int(ids[node]), set()).add(rank)
            where[int(ids[node])] = tuple(float(v) for v in local.nodes[node])
    x, y = where[min(n for n, r in ranks_of.items() if len(r) > 1)]
    (tmp_path / "case.toml").write_text(PART_CASE + SOURCES.format(x=x, y=y))
    argv = [str(tmp_path / "case.toml"), "--backend", "cpu", "-q"]
    assert main(["run", *argv, "-o", str(tmp_path / "one")]) == 0
    done = fvswe(3, *argv, "--parts", str(tmp_path / "parts"), "-o", str(tmp_path / "ranks"))
    assert done.returncode == 0, done.stderr[-3000:]
    assert _same_final(tmp_path / "one", tmp_path / "ranks")
    one, many = (json.loads((tmp_path / d / "summary.json").read_text()) for d in ("one", "ranks"))
    assert one["source_volume"] != 0 and one["rain_volume"] > 0
    for key in ("source_volume", "rain_volume", "mass", "mass_initial", "steps", "t"):
        assert many[key] == one[key], key


@pytest.mark.parametrize(
    ("extra", "wrong"),
    [
        (["--png", "h"], "--png: not with --parts yet"),
        (["--gauge", "9,-9"], "gauge 'g1': (9, -9) lies outside "),
        (["--section", "6,6,7,7"], "section 's1': the line crosses no pair of cells"),
        (["--restart", "none.npz"], "--restart: none.npz: no such checkpoint"),
        (["--method", "implicit"], "method: 'implicit': explicit runs only"),
        (["--mesh", "other.npz"], "(4000 cells), this run's mesh is other.npz"),
    ],
)
def test_what_a_rank_holding_its_part_alone_cannot_build_is_one_line(tmp_path, extra, wrong):
    """What a part cannot build yet, or a partition of another mesh, is refused in one line
    naming the key, on every rank, before any file is written."""
    from fvswe.cli import main

    _tagged_square(tmp_path / "m.npz")
    (tmp_path / "case.toml").write_text(PART_CASE)
    cut = ["mesh", "partition", str(tmp_path / "m.npz"), "-n", "2", "--order", "hilbert"]
    assert main([*cut, "-o", str(tmp_path / "parts")]) == 0
    done = fvswe(2, str(tmp_path / "case.toml"), "--backend", "cpu", "-q", *extra, "--parts",
                 str(tmp_path / "parts"), "-o", str(tmp_path / "out"))  # fmt: skip
    assert done.returncode == 2, done.stderr[-3000:]
    assert done.stderr.startswith("fvswe: error: ") and done.stderr.count("\n") == 1
    assert wrong in done.stderr, done.stderr
    assert not (tmp_path / "out").exists()
