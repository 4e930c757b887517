"""Every CUDA module compiles: each (scheme, layers, dtype, variant) to PTX with nvcc.

Runs wherever ``nvcc`` is on PATH (no GPU needed), so kernel syntax and type
errors fail CI; compiles exactly the source and options NVRTC gets at run time.
The device fluxes and the step kernels also run on the host (g++ and the CUDA
emulator of tests/cuda_host) against the NumPy reference and the CPU backend.
Every build is cached across runs by its inputs (:func:`cached_build`).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from functools import cache
from pathlib import Path

import numpy as np
import pytest

from fvswe import registry
from fvswe.backends import cuda_header, gpu
from fvswe.simulation import Simulation

NVCC = shutil.which("nvcc")
CXX = shutil.which("g++") or shutil.which("c++")
EMU = Path(__file__).with_name("cuda_host")
# Builds (host binaries, PTX) are kept across tests and runs: FVSWE_TEST_CACHE, else the
# user's cache folder; those unused for BUILDS_KEPT_DAYS are removed.
BUILDS = Path(
    os.environ.get("FVSWE_TEST_CACHE")
    or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "fvswe-tests"
)
BUILDS_KEPT_DAYS = 7


@cache
def _sources() -> str:
    """Digest of every file a build can include (the CUDA folder and tests/cuda_host);
    prunes the builds unused for BUILDS_KEPT_DAYS."""
    h = hashlib.sha256()
    for folder in (gpu.CUDA_DIR, EMU):
        for f in sorted(folder.iterdir()):
            h.update(f.name.encode() + b"\0" + f.read_bytes() + b"\0")
    if BUILDS.is_dir():
        old = time.time() - BUILDS_KEPT_DAYS * 86400
        for f in BUILDS.iterdir():
            with contextlib.suppress(FileNotFoundError):  # another run pruned it first
                if f.stat().st_mtime >= old:
                    continue
                if f.is_dir():  # the work folder of a run that was killed
                    shutil.rmtree(f)
                else:
                    f.unlink()
    return h.hexdigest()


@cache
def _version(compiler: str) -> str:
    return subprocess.run([compiler, "--version"], capture_output=True, text=True).stdout


def cached_build(name: str, source: str, cmd: Sequence[str], suffix: str) -> Path:
    """The output of ``cmd SOURCE -o OUT`` (``source`` written to a ``suffix`` file), from
    the build cache when there.

    The key hashes the compiler's version, the command, the source and every file it can
    include, so an edited kernel or shim builds anew and each distinct build runs once.
    """
    key = f"{_version(cmd[0])}\n{_sources()}\n{list(cmd)}\n{source}"
    out = BUILDS / f"{name}-{hashlib.sha256(key.encode()).hexdigest()[:24]}"
    try:
        os.utime(out)  # used: kept
        return out
    except FileNotFoundError:
        pass
    BUILDS.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=BUILDS) as tmp:  # concurrent runs: atomic publish
        src = Path(tmp) / f"{name}{suffix}"
        src.write_text(source)
        res = subprocess.run([*cmd, str(src), "-o", f"{tmp}/out"], capture_output=True, text=True)
        assert res.returncode == 0, res.stderr[-4000:]
        os.replace(f"{tmp}/out", out)
    return out


@cache
def generated_dir() -> Path:
    """A folder holding the generated headers (:data:`fvswe.backends.cuda_header.HEADERS`:
    the constants, struct Ctrl, the scheme selection and the emitted physics), in the build
    cache under their digest, so that a change to any of them changes every command."""
    texts = {name: make() for name, make in cuda_header.HEADERS.items()}
    digest = hashlib.sha256(repr(sorted(texts.items())).encode()).hexdigest()[:24]
    folder = BUILDS / f"headers-{digest}"
    if not folder.is_dir():
        BUILDS.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=BUILDS) as tmp:
            work = Path(tmp) / "headers"
            work.mkdir()
            cuda_header.write(work)
            with contextlib.suppress(OSError):  # another run published it first
                os.replace(work, folder)
    os.utime(folder)  # used: kept
    return folder


def host_binary(name: str, source: str, flags: Sequence[str]) -> Path:
    """``source`` compiled by the host C++ compiler with ``flags``, the generated headers,
    the CUDA folder and tests/cuda_host on the include path."""
    includes = [f"-I{generated_dir()}", f"-I{gpu.CUDA_DIR}", f"-I{EMU}"]
    return cached_build(name, source, [CXX, *flags, *includes], ".cpp")


@pytest.mark.skipif(CXX is None, reason="no host C++ compiler (g++) on PATH")
def test_host_builds_are_reused_until_a_flag_or_an_included_file_changes(tmp_path, monkeypatch):
    """The same source, flags and included files give the first build's output without a
    compile; a changed flag or included file builds anew; nothing else stays in the cache."""
    builds, emu = tmp_path / "builds", tmp_path / "emu"
    emu.mkdir()
    monkeypatch.setitem(globals(), "BUILDS", builds)
    monkeypatch.setitem(globals(), "EMU", emu)
    src = '#include "code.h"\nint main() { return CODE + OFFSET; }\n'

    def build(offset: int) -> Path:
        _sources.cache_clear()  # as a new run would see the included files
        return host_binary("probe", src, [f"-DOFFSET={offset}"])

    def no_compiler(*args, **kwargs):
        raise AssertionError("compiled again")

    (emu / "code.h").write_text("#define CODE 5\n")
    generated_dir.cache_clear()  # the generated headers go into this cache too
    try:
        headers = generated_dir()
        exe = build(0)
        assert subprocess.run([exe]).returncode == 5
        with monkeypatch.context() as m:
            m.setattr(subprocess, "run", no_compiler)
            assert build(0) == exe
        other = build(1)
        assert other != exe and subprocess.run([other]).returncode == 6
        (emu / "code.h").write_text("#define CODE 7\n")
        third = build(0)
        assert third not in (exe, other) and subprocess.run([third]).returncode == 7
    finally:
        _sources.cache_clear()
        generated_dir.cache_clear()
    assert {p.name for p in builds.iterdir()} == {headers.name, exe.name, other.name, third.name}


COMBOS = [
    (scheme, layers, dtype, variant, 3)
    for scheme, layers in registry.distinct_kernels()  # one-layer pvm-ifcp is hll's module
    for dtype in ("float32", "float64")
    for variant in gpu.VARIANTS
] + [("pvm-ifcp", 2, "float32", variant, 4) for variant in (*gpu.VARIANTS, gpu.GRID_VARIANT)]
COMBOS += [("hll-wd", 1, dtype, gpu.GRID_VARIANT, 4) for dtype in ("float32", "float64")]


def test_import_does_not_need_cupy():
    code = "import sys, fvswe, fvswe.backends.gpu; assert 'cupy' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)
    ok, reason = gpu.available()
    assert isinstance(ok, bool) and reason and "\n" not in reason


@pytest.mark.skipif(gpu.available()[0], reason="a GPU is usable here")
def test_asking_for_the_gpu_without_one_says_why():
    from fvswe.cases import get_case
    from fvswe.errors import BackendUnavailable
    from fvswe.mesh.generate import structured_square

    with pytest.raises(BackendUnavailable) as err:
        get_case("test1").simulation(structured_square(2), backend="gpu")
    assert "gpu" in str(err.value) and "\n" not in str(err.value)


@pytest.mark.skipif(NVCC is None, reason="nvcc is not on PATH: cannot compile the CUDA sources")
@pytest.mark.parametrize(("scheme", "layers", "dtype", "variant", "k"), COMBOS)
def test_compiles_to_ptx(scheme, layers, dtype, variant, k):
    opts = gpu.compile_options(scheme, layers, np.dtype(dtype), variant, k)
    out = cached_build(variant, gpu.source(variant), [NVCC, "--ptx", "-arch=sm_90", *opts], ".cu")
    ptx = out.read_text()
    kernels = ("edge_pass", "volume_pass") if variant == "edge" else (f"{variant}_step",)
    if layers == 2:
        kernels += ("limit_theta", "limit_update")
    for name in (*kernels, "find_invalid", "debug_flux"):
        assert f".entry {name}(" in ptx


@pytest.mark.skipif(NVCC is None, reason="nvcc is not on PATH: cannot compile the CUDA sources")
def test_the_compensated_update_is_never_contracted():
    """A compensated float32 module (docs/SCHEMES.md §2.7; float32 modules allow FMA) forms
    its float64 update and remainders with rounded operations only (@exact: __dadd_rn,
    __dmul_rn): its PTX has no more fused float64 multiply-adds than the plain module's, and
    more float64 adds (the update and the remainder). Gather's: every variant shares the
    cell update (update_cell) and the combination (combine_step); the host-run test of
    tests/test_grid_pass.py builds them all."""
    scheme, layers, k, variant = "pvm-ifcp", 2, 3, "gather"
    ptx = {}
    for on in (False, True):
        opts = gpu.compile_options(scheme, layers, np.float32, variant, k, compensated=on)
        cmd = [NVCC, "--ptx", "-arch=sm_90", *opts]
        ptx[on] = cached_build(variant, gpu.source(variant), cmd, ".cu").read_text()
    assert ptx[True].count("fma.rn.f64") == ptx[False].count("fma.rn.f64")
    assert ptx[True].count("add.rn.f64") > ptx[False].count("add.rn.f64")
    assert "-DFVSWE_COMPENSATED=1" not in gpu.compile_options(scheme, layers, np.float64, variant,
                                                              k, compensated=True)  # fmt: skip


def _nvrtc():
    """CuPy's NVRTC binding when its library loads (no GPU needed), else None."""
    try:
        from cupy_backends.cuda.libs import nvrtc

        nvrtc.getVersion()
    except Exception:
        return None
    return nvrtc


NVRTC = _nvrtc()


@pytest.mark.skipif(NVRTC is None, reason="CuPy's NVRTC library is not loadable here")
@pytest.mark.parametrize(("scheme", "layers", "dtype", "variant", "k"), COMBOS)
def test_compiles_with_nvrtc(scheme, layers, dtype, variant, k):
    """The run-time path: NVRTC with exactly the options GpuBackend passes."""
    opts = gpu.compile_options(scheme, layers, np.dtype(dtype), variant, k)
    prog = NVRTC.createProgram(gpu.source(variant), f"{variant}.cu", [], [])
    try:
        NVRTC.compileProgram(prog, [*opts, "-arch=compute_90"])
    except NVRTC.NVRTCError:
        pytest.fail(NVRTC.getProgramLog(prog)[-4000:])
    finally:
        NVRTC.destroyProgram(prog)


# The device functions are plain inline C++ outside CUDA: a host compiler checks them
# against the NumPy reference here, with the same float64 semantics (no FMA contraction,
# as the float64 GPU modules are compiled).
HARNESS_HEAD = r"""
#include <cstdio>
#include <cstdlib>
#include <vector>
#include "physics.cuh"

typedef REAL real;  // -DREAL=double or float; input and output stay float64
typedef int (*Flux)(const real*, const real*, real, real, real, real, real, real, real, real*,
                    real*, real&);
// Indexed by kernel id (fvswe.registry.KERNEL_IDS)
Flux kernels[] = {{{kernels}}};
"""
HARNESS = (
    HARNESS_HEAD.format(
        kernels=", ".join(f"{ref.replace('.', '::')}<real>" for ref in registry.KERNEL_IDS),
    )
    + r"""
int main(int argc, char** argv)
{
    const int sid = atoi(argv[1]), layers = atoi(argv[2]), n = atoi(argv[3]);
    const int nv = layers == 2 ? 6 : 3, nin = 2 * nv + 4;
    Flux f = kernels[sid];
    double prm[3];
    std::vector<double> in(nin * n), out((2 * nv + 2) * n);
    if (fread(prm, 8, 3, stdin) != 3) return 2;
    if (fread(in.data(), 8, in.size(), stdin) != in.size()) return 2;
    for (int e = 0; e < n; ++e) {
        real x[16], y[12], d;
        for (int m = 0; m < nin; ++m) x[m] = real(in[nin * e + m]);
        const int flags = f(x, x + nv, x[2 * nv], x[2 * nv + 1], x[2 * nv + 2], x[2 * nv + 3],
                            real(prm[0]), real(prm[1]), real(prm[2]), y, y + nv, d);
        double* o = &out[(2 * nv + 2) * e];
        for (int m = 0; m < 2 * nv; ++m) o[m] = y[m];
        o[2 * nv] = d;
        o[2 * nv + 1] = flags;
    }
    fwrite(out.data(), 8, out.size(), stdout);
    return 0;
}
"""
)


def random_edges(rng, n: int, layers: int, speed: float = 1.5, fast: float = 1 / 6,
                 thin: float = 0.1):  # fmt: skip
    """Random edge states: depths 0.3..5, velocities up to ``speed`` m/s (4 m/s on a
    fraction ``fast``, to reach non-hyperbolic edges), unit normals.

    A fraction ``thin`` of the edges has its first layer below eps_h (the thin-layer
    fallbacks) and a tenth is at rest over a bottom step (the well-balanced path).
    """
    nv = 3 * layers
    W = np.empty((2, n, nv))
    speed = np.where(rng.random(n) < fast, 4.0, speed)[:, None]
    for s in range(2):
        for k in range(layers):
            h = rng.uniform(0.3, 5.0, n)
            W[s, :, 3 * k] = h
            W[s, :, 3 * k + 1 : 3 * k + 3] = h[:, None] * speed * rng.uniform(-1, 1, (n, 2))
    H = rng.uniform(4.0, 8.0, (2, n))
    thin = rng.random(n) < thin
    W[:, thin, 0] = rng.uniform(0.0, 4e-3, (2, thin.sum()))
    rest = (rng.random(n) < 0.1) & ~thin
    for k in range(layers):
        W[:, rest, 3 * k + 1 : 3 * k + 3] = 0.0
    if layers == 2:
        W[1, rest, 0] = W[0, rest, 0]
        W[1, rest, 3] = W[0, rest, 3] + H[1, rest] - H[0, rest]
    else:
        W[1, rest, 0] = W[0, rest, 0] + H[1, rest] - H[0, rest]
    keep = ~rest | (W[1, :, 3 * (layers - 1)] > 0.05)
    a = rng.uniform(0, 2 * np.pi, n)
    normal = np.stack((np.cos(a), np.sin(a)), axis=1)
    return W[0][keep], W[1][keep], H[0][keep], H[1][keep], normal[keep]


def host_flux(real: str, scheme: str, layers: int, edges, g, r, eps_h, entropy_fix=True):
    """The CUDA device flux compiled for the host in ``real`` precision, on float64 edges
    (the scheme's kernel without the entropy fix where ``entropy_fix`` is false)."""
    flags = ["-std=c++17", "-O1", "-ffp-contract=off", f"-DREAL={real}"]
    exe = host_binary("harness", HARNESS, flags)
    Wi, Wj, Hi, Hj, normal = edges
    n, nv = len(Wi), 3 * layers
    blob = np.concatenate((Wi, Wj, Hi[:, None], Hj[:, None], normal), axis=1)
    stdin = np.array([g, r, eps_h]).tobytes() + blob.tobytes()
    sid = registry.kernel_id(scheme, layers, entropy_fix)
    out = subprocess.run([str(exe), str(sid), str(layers), str(n)], input=stdin,
                         capture_output=True, check=True).stdout  # fmt: skip
    out = np.frombuffer(out, dtype=np.float64).reshape(n, 2 * nv + 2)
    return out[:, :nv], out[:, nv : 2 * nv], out[:, 2 * nv], out[:, -1].astype(np.int32)


@pytest.mark.skipif(CXX is None, reason="no host C++ compiler (g++) on PATH")
@pytest.mark.parametrize(("scheme", "layers"), registry.cases())
def test_device_flux_matches_reference_on_host(scheme, layers):
    from fvswe.schemes import get_flux

    edges = random_edges(np.random.default_rng(7), 4000, layers)
    g, r, eps_h = 9.81, 0.5, 5e-3
    Fm, Fp, dmax, flags = host_flux("double", scheme, layers, edges, g, r, eps_h)
    ref = get_flux(scheme, layers)(*edges, g, r, eps_h, True)
    # the same IEEE operations in the same order: bitwise equal, so any drift between the
    # mirrors (a reordered expression, a changed constant) fails here
    assert np.array_equal(flags, ref[3])
    for got, want in zip((Fm, Fp, dmax), ref[:3], strict=True):
        assert np.array_equal(got, want), np.abs(got - want).max()


@pytest.mark.skipif(CXX is None, reason="no host C++ compiler (g++) on PATH")
@pytest.mark.parametrize("layers", [2, 1])
@pytest.mark.parametrize("scheme", ["roe", "ir-roe"])
def test_device_roe_at_the_edges_on_host(scheme, layers):
    """Roe and IR-Roe where the internal pair nearly coincides (both signs, gaps to the
    float64 floor), on transonic waves (entropy fix, §3.6) and on close transonic internal
    pairs (the pair's one weight): bitwise the NumPy result."""
    import schemes_helpers as h

    from fvswe.schemes import get_flux

    r = 0.5
    parts = [h.transonic_edges(8, r, layers)]
    if layers == 2:
        parts += [h.gap_sweep_edges(r, side) for side in (-1, 0, 1)]
        parts.append(h.close_pair_edges(5, r, 300))  # the pair's one weight (§3.6)
    edges = tuple(np.concatenate(p) for p in zip(*parts, strict=True))
    got = host_flux("double", scheme, layers, edges, 9.81, r, 5e-3)
    ref = get_flux(scheme, layers)(*edges, 9.81, r, 5e-3, True)
    if layers == 2:
        assert np.count_nonzero(ref[3] == 2) >= 5  # near-coincident pairs are reached
    for a, b in zip(got, ref, strict=True):
        assert np.array_equal(a, b)


def flux_error(got, ref, edges, g: float):
    """Largest error of F-/F+ relative to the edge's flux or hydrostatic scale g max(h, H)^2."""
    Wi, Wj, Hi, Hj, _ = edges
    phys = g * np.maximum(np.abs(np.concatenate((Wi, Wj), 1)).max(1), np.maximum(Hi, Hj)) ** 2
    scale = np.maximum(np.abs(np.concatenate(ref[:2], 1)).max(1), phys)
    return max(
        (np.abs(a - b) / scale[:, None]).max() for a, b in zip(got[:2], ref[:2], strict=True)
    )


@pytest.mark.skipif(CXX is None, reason="no host C++ compiler (g++) on PATH")
@pytest.mark.parametrize(("scheme", "layers"), registry.cases())
def test_float32_device_flux_on_host(scheme, layers):
    """float32 instances agree with the float64 reference to 1e-5 on moderate wet states."""
    from fvswe.schemes import get_flux

    edges = random_edges(np.random.default_rng(3), 20000, layers, speed=0.5, fast=0, thin=0)
    edges = tuple(np.asarray(a, dtype=np.float32).astype(np.float64) for a in edges)
    g, r, eps_h = 9.81, 0.5, 5e-3
    got = host_flux("float", scheme, layers, edges, g, r, eps_h)
    ref = get_flux(scheme, layers)(*edges, g, r, eps_h, True)
    assert np.array_equal(got[3], ref[3])
    assert flux_error(got, ref, edges, g) <= 1e-5
    assert np.allclose(got[2], ref[2], rtol=1e-5, atol=0)


# The step kernels themselves run on the host through tests/cuda_host (a minimal CUDA
# shim: blocks in sequence, the threads of a block as fibers of one OS thread, the GPU's
# block size), following gpu.py's kernel plans, and are held to the CPU backend.


@pytest.mark.skipif(CXX is None, reason="no host C++ compiler (g++) on PATH")
def test_emulator_keeps_barrier_shuffle_and_atomic_semantics():
    """tests/cuda_host/check.cpp: threads that returned do not hold a barrier, a barrier
    orders shared-memory writes before the reads, shuffles carry 8 bytes exactly within each
    warp of a 4-warp block, atomics see every thread; a barrier that a warp reaches divergently
    and a shuffle from a lane that returned stop the run with one line."""
    exe = host_binary("check", (EMU / "check.cpp").read_text(), ["-std=c++17", "-O1"])

    def run(case: str) -> subprocess.CompletedProcess:
        return subprocess.run([str(exe), case], capture_output=True, text=True)

    got = np.array(run("neighbour").stdout.split(), dtype=np.int64).reshape(2, 128)
    t = np.arange(70)
    for b in range(2):
        assert np.array_equal(got[b, :70], ((t + 1) % 70) ** 2 + 1000 * b)
        assert (got[b, 70:] == -1).all()  # returned before writing
    sums = [128 * (2**55 + b) + 4 * (2**32 - 1) for b in range(3)]
    assert [int(v) for v in run("block_sum").stdout.split()] == [*sums, 3 * 128, 1000 - 383]
    for case, message in (("divergent", "deadlock"), ("from_returned", "a lane that returned")):
        res = run(case)
        assert res.returncode == 3 and message in res.stderr and res.stderr.count("\n") == 1


def emulated_run(layout, scheme, variant, dt_mode, t_end, max_steps, dt_fixed=None, cells=None,
                 block=gpu.DEFAULT_BLOCK, interior_first=None, integrator="euler",
                 cfl=0.9, floor=None, entropy_fix=True):  # fmt: skip
    """(state, control block) after the GPU backend ran on the host (tests/host_runtime.py):
    its own plans, launches, graphs and control block, the CUDA kernels built by g++ with the
    emulator; ``block``: threads per block, ``cells``: the block variant's cells per thread
    block (default ``block``), ``interior_first`` its task order; ``floor`` a Δt floor to
    watch (``watch_dt``)."""
    from host_runtime import HostRuntime

    backend = gpu.GpuBackend(
        layout, scheme, cfl, dt_mode, dt_fixed, variant=variant, block=block,
        cells=cells or block, interior_first=interior_first, integrator=integrator,
        entropy_fix=entropy_fix, runtime=HostRuntime(),
    )  # fmt: skip
    if floor is not None:
        backend.watch_dt(floor)
    backend.advance(t_end, max_steps)
    return backend.get_state(), backend._read_ctrl()


@pytest.mark.skipif(CXX is None, reason="no host C++ compiler (g++) on PATH")
@pytest.mark.parametrize(
    ("scheme", "dt_mode", "max_steps"),
    [
        ("pvm-ifcp", "lagged", 1000),
        ("pvm-ifcp", "nonlagged", 1000),
        ("pvm-ifcp", "fixed", 1000),
        ("roe", "lagged", 1000),
        ("ir-roe", "lagged", 3),
    ],  # fmt: skip
)
def test_step_kernels_on_host_match_cpu_backend(scheme, dt_mode, max_steps):
    from fvswe.cases import get_case
    from fvswe.mesh.generate import structured_square

    dt = 5e-3 if dt_mode == "fixed" else None
    sim = get_case("test1").simulation(structured_square(10), scheme=scheme, dt_mode=dt_mode, dt=dt)
    floor = 0.0335  # PVM-IFCP's stable Δt falls below it (the Δt collapse guard's record)
    sim.backend.watch_dt(floor)
    sim.backend.advance(0.1, max_steps)
    ref, counters = sim.backend.get_state(), sim.backend.counters()
    slow = sim.backend.first_below_floor
    assert slow is not None or scheme != "pvm-ifcp"
    runs = [emulated_run(sim.layout, scheme, v, dt_mode, 0.1, max_steps, dt, floor=floor)
            for v in gpu.VARIANTS]  # fmt: skip
    for W, ctrl in runs:
        assert (ctrl["t"], ctrl["steps"]) == (sim.t, sim.steps)
        record = (ctrl["slow_step"] - 1, ctrl["slow_t"])  # the GPU names no cell
        assert (record if ctrl["slow_step"] else None) == (slow and slow[1:])
        assert ctrl["clipped"] == counters["clipped_cells"]
        assert ctrl["nonhyp"] == counters["nonhyperbolic_edges"]
        assert (np.abs(W - ref).max(axis=0) / np.abs(ref).max(axis=0)).max() <= 1e-12
    for W, _ in runs[1:]:
        assert np.array_equal(W, runs[0][0])  # every variant: bitwise the same


@pytest.mark.skipif(CXX is None, reason="no host C++ compiler (g++) on PATH")
@pytest.mark.parametrize("scheme", ["roe", "ir-roe"])
def test_without_the_entropy_fix_the_host_gpu_is_the_cpu_bit_for_bit(scheme):
    """Issue 32, item 12: test2 (short) with ``entropy_fix=False``: the GPU module compiled
    for the kernel without the fix (its own FVSWE_SCHEME), run on the host, gives the CPU's
    float64 state bit for bit, and both differ from the run with the fix."""
    from fvswe.cases import get_case
    from fvswe.mesh.generate import structured_square

    mesh = structured_square(16)
    sim = get_case("test2").simulation(mesh, scheme=scheme, backend="cpu", entropy_fix=False)
    sim.backend.advance(0.1, 1000)
    W, ctrl = emulated_run(sim.layout, scheme, "edge", "lagged", 0.1, 1000, entropy_fix=False)
    assert (ctrl["t"], ctrl["steps"]) == (sim.t, sim.steps) and sim.steps > 3
    assert np.array_equal(W, sim.backend.get_state())
    fixed = get_case("test2").simulation(mesh, scheme=scheme, backend="cpu")
    fixed.run(sim.t)
    diff = np.abs(fixed.state() - sim.state()).sum() / np.abs(fixed.state()).sum()
    assert diff > 1e-7  # far above round-off: the fix acts on this run's transonic edges


@pytest.mark.skipif(CXX is None, reason="no host C++ compiler (g++) on PATH")
@pytest.mark.parametrize(("scheme", "layers", "dtype"),
                         [(name, 1, "float64") for name, _ in registry.distinct_kernels(1)]
                         + [("pvm-ifcp", 2, "float32"), ("roe", 1, "float32")])  # fmt: skip
def test_step_kernels_on_host_one_layer_and_float32(scheme, layers, dtype):
    from fvswe.cases import get_case
    from fvswe.mesh.generate import structured_square

    mesh = structured_square(10)
    if layers == 2:
        sim = get_case("test1").simulation(mesh, scheme=scheme, dtype=dtype)
    elif registry.get(scheme).dry:  # a dam break onto an island that emerges from the water

        def H(x, y):
            return 1.0 - 2.0 * np.exp(-(x**2 + y**2) / 4)

        def h(x, y):
            return np.maximum(0, H(x, y) + 0.5 * (x < -2))

        sim = Simulation(mesh, layers=1, scheme=scheme, H=H, dtype=dtype, initial={"h": h})
    else:
        sim = Simulation(mesh, layers=1, scheme=scheme, H=2.0, dtype=dtype,
                         initial={"h": lambda x, y: np.where(x < 0, 2.0, 1.0)})  # fmt: skip
    sim.backend.advance(0.1, 1000)
    ref = sim.backend.get_state()
    tol = 1e-12 if dtype == "float64" else 1e-5
    for variant in gpu.VARIANTS:
        W, ctrl = emulated_run(sim.layout, scheme, variant, "lagged", 0.1, 1000)
        assert ctrl["t"] == sim.t
        if dtype == "float64":  # float32 dt differs in its last bits (the CPU forms it in float64)
            assert ctrl["steps"] == sim.steps
        assert (np.abs(W - ref).max(axis=0) / np.abs(ref).max(axis=0)).max() <= tol


@pytest.mark.skipif(CXX is None, reason="no host C++ compiler (g++) on PATH")
@pytest.mark.parametrize(("scheme", "layers"), [("hll-wd", 1), ("roe", 1), ("pvm-ifcp", 2)])
def test_step_kernels_on_host_thin_layers(monkeypatch, scheme, layers):
    """Layers thinner than eps_h, moving, beside dry cells: every step damps their
    discharge to h u (desingularised u) after the clip (docs/SCHEMES.md §8) and the roe run
    clips depths, so any drift between the volume kernels and the CPU volume pass (a
    missing or reordered damping, clip or friction step) shows far above 1e-12."""
    from fvswe.mesh.generate import structured_square

    eps_h = 5e-3

    def h(x, y):  # deep for x < 0; thin (0 .. eps_h) and dry patches for x > 0
        return np.where(x < 0, 1.0, eps_h * np.maximum(0.0, np.sin(3 * x + 2 * y)))

    if layers == 1:
        initial = {"h": h, "qx": lambda x, y: 0.3 * h(x, y), "qy": lambda x, y: -0.2 * h(x, y)}
        H = (lambda x, y: 1.0 - 0.05 * x) if scheme == "hll-wd" else 1.0
    else:
        initial = {"h1": h, "q1x": lambda x, y: 0.3 * h(x, y), "q1y": lambda x, y: 0.1 * h(x, y),
                   "h2": lambda x, y: 2.0 - h(x, y), "q2x": 0.05}  # fmt: skip
        H = 2.0
    if scheme == "roe":  # set-up refuses dry one-layer Roe (hll-wd's job); the clip still runs
        monkeypatch.setattr("fvswe.simulation.refuse_dry_cells", lambda *args: None)
    sim = Simulation(structured_square(10), layers=layers, scheme=scheme, H=H, eps_h=eps_h,
                     initial=initial)  # fmt: skip
    W0 = sim.layout.W0

    def thin(W):
        return (W[:, 0] > 0) & (W[:, 0] < eps_h)

    assert thin(W0).sum() >= 20 and np.abs(W0[thin(W0), 1]).min() > 0  # the case is live
    sim.backend.advance(0.5, 1000)
    ref, counters = sim.backend.get_state(), sim.backend.counters()
    assert thin(ref).sum() >= 20  # still thin at the end: damped at every step
    if scheme == "roe":
        assert counters["clipped_cells"] > 0
    for variant in gpu.VARIANTS:
        W, ctrl = emulated_run(sim.layout, scheme, variant, "lagged", 0.5, 1000)
        assert (ctrl["t"], ctrl["steps"]) == (sim.t, sim.steps)
        assert ctrl["clipped"] == counters["clipped_cells"]
        assert (np.abs(W - ref).max(axis=0) / np.abs(ref).max(axis=0)).max() <= 1e-12, variant


THROUGHPUT = Path(__file__).parents[1] / "benchmarks/results/throughput_gpu_h100_test1.json"
BLOCK_PHASE1 = THROUGHPUT.with_name("throughput_gpu_h100_block_phase1.json")


def test_default_variant_by_scheme_and_size():
    """slot on small meshes; on large ones block where the order makes it evaluate few
    edges twice, else edge for the costly (Roe-type) schemes and gather for the others."""
    assert registry.get("roe").costly and registry.get("ir-roe").costly  # as measured
    assert not registry.get("pvm-ifcp").costly
    low, high = gpu.BLOCK_TWICE_BELOW - 0.01, gpu.BLOCK_TWICE_BELOW
    for scheme in registry.names():
        for twice in (0.0, low, high, 1.0):
            assert gpu.default_variant(scheme, 4000, twice) == "slot"
            assert gpu.default_variant(scheme, gpu.SLOT_BELOW - 1, twice) == "slot"
        for n in (gpu.SLOT_BELOW, 64000, 2080560):
            want = "edge" if registry.get(scheme).costly else "gather"
            assert gpu.default_variant(scheme, n) == want  # order unknown: as a band order's
            assert gpu.default_variant(scheme, n, high) == want
            assert gpu.default_variant(scheme, n, low) == "block"


def test_default_variant_is_fastest_measured():
    """At every (scheme, dtype, size) of the H100 benchmark in RCM order (64000 cells and
    up: 88 % of the edges twice in blocks of 128, 96 % at 2.08 M, docs/GPU.md, so the order
    counts as unknown) the default variant's throughput is within 2% of the fastest (ties
    at 64000 float32 roe / ir-roe)."""
    import json

    rows = json.loads(THROUGHPUT.read_text())["results"]
    best: dict[tuple, dict[str, float]] = {}
    for row in rows:
        key = (row["scheme"], row["dtype"], row["cells"])
        best.setdefault(key, {})[row["variant"]] = row["cell_steps_per_s"]
    # every variant measured there but block (added later): the default among them
    assert len(best) == 24 and all(set(v) == set(gpu.VARIANTS) - {"block"} for v in best.values())
    for (scheme, dtype, cells), speed in best.items():
        got = speed[gpu.default_variant(scheme, cells)]
        assert got >= 0.98 * max(speed.values()), (scheme, dtype, cells, speed)


def test_default_variant_in_hilbert_order_is_fastest_measured():
    """The block variant's H100 measurement (2.08 M cells, Hilbert order, edge, gather and
    block): given the twice-evaluated fraction recorded there (blocks of BLOCK_CELLS), the
    default is the fastest variant for every scheme and dtype."""
    import json

    from fvswe.backends.layout import BLOCK_CELLS

    rows = json.loads(BLOCK_PHASE1.read_text())["results"]
    speed: dict[tuple, dict[str, float]] = {}
    twice = {}
    for row in rows:
        key = (row["scheme"], row["dtype"], row["cells"])
        speed.setdefault(key, {})[row["variant"]] = row["cell_steps_per_s"]
        if row["variant"] == "block":
            assert row["order"] == "hilbert" and row["cells_per_block"] == BLOCK_CELLS
            twice[key] = row["twice_evaluated"]
    assert len(speed) == 6 and all(set(v) == {"edge", "gather", "block"} for v in speed.values())
    for (scheme, dtype, cells), s in speed.items():
        got = gpu.default_variant(scheme, cells, twice[scheme, dtype, cells])
        assert s[got] == max(s.values()), (scheme, dtype, s)


def test_explicit_variant_then_environment_then_default(monkeypatch):
    """The default looks at the order of the edges it is given: a chain of cells in order
    (1 edge in 128 leaves its block) gets block, a random one the band-order rule."""
    chain = np.stack((np.arange(10**6 - 1), np.arange(1, 10**6)), axis=1)
    shuffled = np.random.default_rng(0).permutation(10**6)[chain]
    monkeypatch.delenv("FVSWE_GPU_VARIANT", raising=False)
    assert gpu.resolve_variant(None, "roe", 10**6) == "edge"
    assert gpu.resolve_variant(None, "roe", 10**6, chain) == "block"
    assert gpu.resolve_variant(None, "roe", 10**6, shuffled) == "edge"
    assert gpu.resolve_variant(None, "pvm-ifcp", 10**6, shuffled) == "gather"
    assert gpu.resolve_variant(None, "roe", 4000, chain[:3999]) == "slot"
    assert gpu.resolve_variant("slot", "roe", 10**6, chain) == "slot"
    monkeypatch.setenv("FVSWE_GPU_VARIANT", "gather")
    assert gpu.resolve_variant(None, "roe", 10**6, chain) == "gather"
    assert gpu.resolve_variant("slot", "roe", 10**6) == "slot"
    monkeypatch.setenv("FVSWE_GPU_VARIANT", "")  # set but empty: the default
    assert gpu.resolve_variant(None, "pvm-ifcp", 10**6) == "gather"


def test_batch_sizes_leave_few_idle_steps():
    ctrl = np.zeros(1, dtype=gpu.CTRL_DTYPE)[0]
    ctrl["max_steps"], ctrl["dt"] = 100, np.nan
    assert gpu.batch_size(ctrl, 1.0, 64) == 64  # no dt yet: bounded by the steps left
    ctrl["steps"] = 64
    assert gpu.batch_size(ctrl, 1.0, 64) == 32  # 36 left: 32, then 4: never past max_steps
    ctrl["steps"] = 99
    assert gpu.batch_size(ctrl, 1.0, 64) == 2  # gather needs pairs: one idle step
    ctrl["steps"], ctrl["t"], ctrl["dt"] = 0, 0.9, 0.03
    assert gpu.batch_size(ctrl, 1.0, 64) == 8  # ceil(0.1 / 0.03) + 1 = 5 steps estimated
    assert gpu.batch_size(ctrl, np.inf, 64) == 64
    # graphs launched but not yet seen in the control block count as taken
    assert gpu.steps_left(ctrl, 1.0, launched=4) == (1, False)
    ctrl["dt"] = np.nan
    assert gpu.steps_left(ctrl, 1.0, launched=96) == (4, True)
    assert gpu.batch_size(ctrl, 1.0, 64, launched=96) == 4


@pytest.mark.skipif(CXX is None, reason="no host C++ compiler (g++) on PATH")
@pytest.mark.parametrize("friction", [("chezy", 30.0), ("manning", 0.03)])
@pytest.mark.parametrize("variant", gpu.VARIANTS)
def test_step_kernels_on_host_tide_with_level_and_friction(variant, friction):
    """A tide over a sloping beach (hll-wd, wetting and drying) driven by an imposed level
    on one side, with bottom friction: the state and the level inflow match the CPU.
    The run of tests/test_gpu.py: to 120 s, through the ebb (layers thinning below eps_h)."""
    from fvswe.boundary import Level
    from fvswe.mesh.generate import strip

    mesh = strip(60, 2, x0=0.0, x1=300.0)

    def H(x, y):
        return 2.0 - x / 100.0  # dry beyond x = 200 m

    def eta(t):
        return 0.5 * np.sin(2 * np.pi * np.asarray(t) / 60.0)

    sim = Simulation(mesh, layers=1, scheme="hll-wd", H=H, friction=friction,
                     initial={"h": lambda x, y: np.maximum(H(x, y), 0.0)},
                     boundary={"west": Level(eta, every=1.0, until=200.0), "east": "wall",
                               "wall": "wall"})  # fmt: skip
    sim.backend.advance(120.0, 10**6)
    ref, counters = sim.backend.get_state(), sim.backend.counters()
    W, ctrl = emulated_run(sim.layout, "hll-wd", variant, "lagged", 120.0, 10**6)
    assert (ctrl["t"], ctrl["steps"]) == (sim.t, sim.steps)
    assert np.abs(W - ref).max() <= 1e-12 * np.abs(ref).max()
    assert counters["level_inflow"] != 0
    assert ctrl["level_inflow"] == pytest.approx(counters["level_inflow"], rel=1e-12)
    assert (ref[:, 0] == 0).any() and (ref[:, 0] > 0).any()  # wet and dry cells


@pytest.mark.skipif(CXX is None, reason="no host C++ compiler (g++) on PATH")
def test_generated_header_compiles_to_the_python_definitions():
    """struct Ctrl as the step kernels see it (pipeline.cuh with the generated headers,
    compiled on the host) has gpu.CTRL_DTYPE's fields at its offsets, and every generated
    constant holds exactly its Python value."""
    names = gpu.CTRL_DTYPE.names
    lines = [f'    printf("{n} %zu\\n", offsetof(Ctrl, {n}));' for n in names]
    lines += [f'    printf("{c} %.17g\\n", (double){c});' for c in cuda_header.CONSTANTS]
    head = '#include "shim.h"\n#include <cstddef>\n#include <cstdio>\n#include "pipeline.cuh"\n'
    body = ['    printf("size %zu\\n", sizeof(Ctrl));', *lines]
    src = head + "int main()\n{\n" + "\n".join(body) + "\n}\n"
    exe = host_binary(
        "layout",
        src,
        ["-std=c++17", "-Wno-psabi", "-DFVSWE_SCHEME=0", "-DFVSWE_SOURCES=0", "-DFVSWE_KINDS=0"],
    )
    run = subprocess.run([str(exe)], capture_output=True, text=True, check=True)
    out = dict(line.split() for line in run.stdout.splitlines())
    assert int(out["size"]) == gpu.CTRL_DTYPE.itemsize
    for n in names:
        assert int(out[n]) == gpu.CTRL_DTYPE.fields[n][1], n
    for c, value in cuda_header.CONSTANTS.items():
        assert float(out[c]) == value, c


@pytest.mark.skipif(CXX is None, reason="no host C++ compiler (g++) on PATH")
@pytest.mark.parametrize("case_name", ["cgrid-island", "cgrid-tide"])
def test_step_kernels_on_host_quads(case_name):
    """The grid cases on quads (k = 4): wetting and drying, levels and friction."""
    from fvswe.cases import get_case

    case = get_case(case_name).with_grid(16, 16)
    sim = case.simulation()
    t_end = 20 * (sim.backend.dt_fixed or 1.0)
    sim.backend.advance(t_end, 20)
    ref = sim.backend.get_state()
    for variant in gpu.VARIANTS:
        W, ctrl = emulated_run(sim.layout, case.scheme, variant, sim.backend.dt_mode,
                               t_end, 20, sim.backend.dt_fixed)  # fmt: skip
        assert (ctrl["t"], ctrl["steps"]) == (sim.t, sim.steps)
        assert np.abs(W - ref).max() <= 1e-12 * np.abs(ref).max()


def forcing_run(layers: int, **options) -> tuple[Simulation, str, float]:
    """A run with Coriolis and wind (docs/SCHEMES.md §15), its scheme and end time: one
    layer, a wind series blowing onshore over a beach that wets and dries (the wind drives
    wet cells only) on a beta-plane with Manning friction; two layers, test1 on an f-plane
    under a constant-C_d wind."""
    from fvswe.cases import get_case
    from fvswe.forcing import Coriolis, Wind
    from fvswe.mesh.generate import strip, structured_square

    if layers == 1:

        def H(x, y):
            return 1.0 - x / 100.0  # dry beyond x = 100 m

        wind = Wind(times=[0.0, 20.0, 60.0], speed=[0.0, 30.0, 10.0], direction=[250, 270, 300])
        sim = Simulation(strip(40, 3, x0=0.0, x1=200.0), layers=1, scheme="hll-wd", H=H,
                         friction=("manning", 0.02), coriolis=Coriolis(f=1e-2, beta=1e-4, y0=5.0),
                         initial={"h": lambda x, y: np.maximum(H(x, y), 0.0)}, wind=wind,
                         **options)  # fmt: skip
        return sim, "hll-wd", 60.0
    case = get_case("test1")
    wind = Wind(u=20.0, v=-8.0, drag=2e-3, rho_water=50.0)
    sim = case.simulation(structured_square(10), coriolis=0.5, wind=wind, **options)
    return sim, case.scheme, 0.5


@pytest.mark.skipif(CXX is None, reason="no host C++ compiler (g++) on PATH")
@pytest.mark.parametrize("variant", gpu.VARIANTS)
@pytest.mark.parametrize("layers", [1, 2])
def test_step_kernels_on_host_coriolis_and_wind(variant, layers):
    """Coriolis and wind in the volume kernels (:func:`forcing_run`): bitwise the CPU
    backend's state."""
    sim, scheme, t_end = forcing_run(layers)
    sim.backend.advance(t_end, 10**6)
    ref = sim.backend.get_state()
    W, ctrl = emulated_run(sim.layout, scheme, variant, "lagged", t_end, 10**6)
    assert (ctrl["t"], ctrl["steps"]) == (sim.t, sim.steps)
    assert np.array_equal(W, ref)
    if layers == 1:  # dry cells, left without momentum by the wind; the flow turned
        dry = ref[:, 0] == 0
        assert dry.any() and np.array_equal(ref[dry, 1:], np.zeros((dry.sum(), 2)))
        assert np.abs(ref[:, 2]).max() > 1e-3


# -- the positivity limiter (docs/SCHEMES.md §13.4) ----------------------------------------------


def surge_layout(t0: float = 0.9, dtype: str = "float64"):
    """The slope surge of tests/test_vanishing.py (PVM-IFCP, r = 0.5, 200-cell strip, walls,
    non-lagged) as the CPU backend leaves it at ``t0``, shortly before its first clip
    (t = 0.966 without the limiter): a layout starting from that state."""
    from dataclasses import replace

    from fvswe.mesh.generate import strip

    def H(x, y):
        return 1.0 - 0.15 * (x + 5.0)

    def h2(x, y):
        return np.where(x < -3.0, 0.6, 0.0)

    sim = Simulation(strip(200, 1, -5.0, 5.0), layers=2, scheme="pvm-ifcp", r=0.5, H=H,
                     initial={"h2": h2, "h1": lambda x, y: np.maximum(H(x, y), 0.0) - h2(x, y)},
                     boundary=dict.fromkeys(("west", "east", "wall"), "wall"),
                     dt_mode="nonlagged", dtype=dtype)  # fmt: skip
    sim.backend.advance(t0, 10**6)
    return replace(sim.layout, W0=sim.backend.get_state())


def pulled_apart_layout(t0: float = 0.05, dtype: str = "float64"):
    """tests/test_vanishing.py's pulled-apart layer (nx = 100, PVM-IFCP, non-lagged) as the
    CPU backend leaves it at ``t0``, where the limiter acts: a layout starting from that
    state."""
    from dataclasses import replace

    from test_vanishing import pulled_apart_simulation

    sim = pulled_apart_simulation(100, dtype=dtype)
    sim.backend.advance(t0, 10**6)
    return replace(sim.layout, W0=sim.backend.get_state())


@pytest.mark.skipif(CXX is None, reason="no host C++ compiler (g++) on PATH")
def test_limiter_on_host_leaves_runs_it_does_not_limit_unchanged():
    """The slope surge to t = 0.9 s: candidate cells are listed (and recomputed) but none
    is limited, and every variant's state is bitwise the CPU backend's, which has no
    limiter."""
    layout, want = surge_layout(0.0), surge_layout(0.9).W0
    for variant in gpu.VARIANTS:
        W, ctrl = emulated_run(layout, "pvm-ifcp", variant, "nonlagged", 0.9, 10**6)
        assert ctrl["listed"] > 0 and ctrl["limited"] == 0
        assert np.array_equal(W, want), variant


@pytest.mark.skipif(CXX is None, reason="no host C++ compiler (g++) on PATH")
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_limiter_on_host_carries_the_pulled_apart_layer(dtype):
    """The pulled-apart layer from t = 0.05 to 0.35 s (the slope surge's tip, which the
    limiter carried before, now takes the reconstruction: docs/SCHEMES.md §13.1): the limiter
    acts, nothing is clipped, each layer's mass holds to 1e-13 (float32: 1e-6), no depth is
    negative, and every variant gives the same state bit for bit (the CPU backend's:
    tests/test_vanishing.py, test_device_limits_the_limiter_window_as_the_cpu)."""
    layout = pulled_apart_layout(dtype=dtype)
    area = layout.area
    mass0 = layout.W0[:, [0, 3]].astype(np.float64).T @ area
    runs = [emulated_run(layout, "pvm-ifcp", v, "nonlagged", 0.3, 10**6) for v in gpu.VARIANTS]
    W, ctrl = runs[0]
    assert ctrl["t"] == 0.3 and ctrl["steps"] > 50
    assert ctrl["limited"] > 0 and ctrl["clipped"] == 0 and ctrl["clip_step"] == 0
    drift = np.abs(W[:, [0, 3]].astype(np.float64).T @ area - mass0) / mass0
    assert drift.max() <= (1e-13 if dtype == "float64" else 1e-6)
    assert W[:, [0, 3]].min() >= 0.0
    for W2, ctrl2 in runs[1:]:
        assert np.array_equal(W2, W)
        for field in ("steps", "limited", "thin_cells", "nonhyp", "thin"):
            assert ctrl2[field] == ctrl[field], field


def drain_simulation() -> Simulation:
    """Two thin layers (5 mm each) flowing at 3.5 cm/s across a strip towards its north side
    and along it at 0.05 sin(pi x) m^2/s (diverging every other metre, none at the end
    walls), the long sides holding a level (the flow drains them), PVM-IFCP, a fixed dt of
    0.016 s below the stable step but long enough that triangles with outflow through two
    of their edges, the level boundary among them, would empty: the limiter scales
    level-boundary slots (docs/SCHEMES.md §13.4, item 5 of the limiter's specification).
    (A flow into the end walls no longer serves: a lower layer leaving a wall faster than
    the column's waves takes the reconstruction there, §13.1, and nothing empties.)"""
    from fvswe.boundary import Level
    from fvswe.mesh.generate import strip

    h, q = 0.005, 0.035

    def qx(x, y):
        return 0.05 * np.sin(np.pi * x)

    return Simulation(strip(20, 1, 0.0, 10.0), layers=2, scheme="pvm-ifcp", r=0.5, H=2 * h,
                      initial={"h1": h, "h2": h, "q1x": qx, "q2x": qx, "q1y": q, "q2y": q},
                      boundary={"west": "wall", "east": "wall",
                                "wall": Level(0.0, interface=-h, every=1.0, until=100.0)},
                      dt_mode="fixed", dt=0.016)  # fmt: skip


@pytest.mark.skipif(CXX is None, reason="no host C++ compiler (g++) on PATH")
def test_limiter_on_host_records_scaled_level_fluxes():
    """:func:`drain_simulation` for 10 steps: the limiter acts, and each layer's volume
    changes by exactly the level inflow counter (to 1e-13 relative; with the unscaled
    fluxes recorded it is off by 5e-4), nothing clipped, every variant the same bitwise."""
    layout = drain_simulation().layout
    mass0 = layout.W0[:, [0, 3]].T @ layout.area
    runs = [emulated_run(layout, "pvm-ifcp", v, "fixed", 1.0, 10, 0.016) for v in gpu.VARIANTS]
    W, ctrl = runs[0]
    assert ctrl["steps"] == 10 and ctrl["cfl_step"] == 0
    assert ctrl["limited"] > 0 and ctrl["clipped"] == 0 and W[:, [0, 3]].min() >= 0
    inflow = np.array([ctrl["level_inflow"], ctrl["level_inflow2"]])
    assert (np.abs(W[:, [0, 3]].T @ layout.area - mass0 - inflow) / mass0).max() <= 1e-13
    assert (np.abs(inflow) / mass0).min() > 1e-4  # the levels drain
    for W2, ctrl2 in runs[1:]:
        assert np.array_equal(W2, W)
        assert (ctrl2["level_inflow"], ctrl2["level_inflow2"]) == tuple(inflow)


# -- the fused block variant ---------------------------------------------------------------


def test_block_edges_by_hand():
    """Four cells, blocks of two ({0, 1}, {2, 3}): edges 1 (1-2) and 5 (2-0) cross blocks and
    are listed in both, owning one side in each; the boundary edges 3 and 4 once, side i."""
    from fvswe.backends.layout import block_edges, twice_evaluated

    ec = np.array([[0, 1], [1, 2], [2, 3], [0, -1], [3, -1], [2, 0]], dtype=np.int32)
    start, edge, own_i, own_j = block_edges(ec, 4, cells=2)
    assert start.tolist() == [0, 4, 8]
    assert edge.tolist() == [0, 1, 3, 5, 1, 2, 4, 5]
    assert own_i.tolist() == [1, 1, 1, 0, 0, 1, 1, 1]
    assert own_j.tolist() == [1, 0, 0, 1, 1, 1, 0, 0]
    assert twice_evaluated(ec, cells=2) == 2 / 6
    assert twice_evaluated(ec, cells=4) == 0.0


def _block_edges_by_sorting(edge_cells, n_cells, cells, interior_first):
    """block_edges as it was written with NumPy sorts (the reference of the compiled pass)."""
    E = edge_cells.shape[0]
    i, j = edge_cells[:, 0].astype(np.int64), edge_cells[:, 1].astype(np.int64)
    bi, bj = i // cells, np.where(j >= 0, j // cells, -1)
    cut = np.flatnonzero((j >= 0) & (bj != bi))
    block, edge = np.concatenate((bi, bj[cut])), np.concatenate((np.arange(E), cut))
    order = np.argsort(block * E + edge)
    block, edge = block[order], edge[order]
    own_i, own_j = order < E, (j[edge] >= 0) & (bj[edge] == block)
    if interior_first:
        late = np.argsort(2 * block + ~(own_i & own_j), kind="stable")
        block, edge, own_i, own_j = block[late], edge[late], own_i[late], own_j[late]
    return np.searchsorted(block, np.arange(-(-n_cells // cells) + 1)), edge, own_i, own_j


@pytest.mark.parametrize("interior_first", [False, True])
def test_block_edges_compiled_pass_lists_what_the_sorts_listed(interior_first):
    """The compiled, linear block_edges (issue 31: the argsort dominated the block variant's
    upload) gives the arrays of the NumPy sorts bit for bit, on a mesh in random order with
    a last block only partly filled."""
    from fvswe.backends.layout import block_edges

    lay = get_case_simulation("test1", order="random").layout
    for cells in (7, 32):
        got = block_edges(lay.edge_cells, lay.n_cells, cells, interior_first)
        want = _block_edges_by_sorting(lay.edge_cells, lay.n_cells, cells, interior_first)
        for a, b in zip(got, want, strict=True):
            assert a.dtype == b.dtype and np.array_equal(a, b)


def _slot_codes_by_numpy(lay):
    """slot_codes as it was written with NumPy (the reference of the compiled pass)."""
    from fvswe.backends.gpu.device import _boundary_codes
    from fvswe.boundary import KINDS

    e = lay.cell_edges.ravel()
    side = lay.cell_side.ravel().astype(np.int32)
    ij = lay.edge_cells[e]
    boundary = ij[:, 1] < 0
    nbr = np.where(side == 0, ij[:, 1], ij[:, 0])
    code = np.where(boundary, _boundary_codes(lay)[e], 2 * nbr + side)
    return np.where(e < 0, -KINDS["wall"], code).astype(np.int32)


def _block_arrays_by_numpy(lay, cells, interior_first):
    """block_arrays as it was written with NumPy (the reference of the compiled pass)."""
    from fvswe.backends.layout import block_edges

    start, edge, own_i, own_j = block_edges(lay.edge_cells, lay.n_cells, cells, interior_first,
                                            lay.owned_cells)  # fmt: skip
    task = gpu.edge_arrays(lay)[edge]
    base = np.repeat(np.arange(start.size - 1) * (cells * lay.k), np.diff(start))
    task[:, 2] = np.where(own_i, task[:, 2] - base, -1)
    task[:, 3] = np.where(own_j, task[:, 3] - base, -1)
    normal = np.ascontiguousarray(lay.edge_normal[edge])
    return start.astype(np.int32), task, normal, np.ascontiguousarray(lay.edge_length[edge])


def _slot_owners_by_numpy(edge_slot, L, k):
    """Layout's slot owners as they were written with NumPy scatters."""
    cell_edges = np.full(L * k, -1, dtype=np.int32)
    cell_side = np.zeros(L * k, dtype=np.int8)
    for side in (0, 1):
        owned = edge_slot[:, side] >= 0
        cell_edges[edge_slot[owned, side]] = np.flatnonzero(owned)
        cell_side[edge_slot[owned, side]] = side
    return cell_edges.reshape(L, k), cell_side.reshape(L, k)


@pytest.mark.parametrize("interior_first", [False, True])
def test_block_arrays_and_slot_owners_compiled_passes_are_numpys(interior_first):
    """The compiled block tasks and slot owners (issue 31) are the NumPy expressions' arrays
    bit for bit (dtypes included): on test1 in random order, float32 and float64, and on its
    three parts (halo slots without an owner), blocks of 7 and 32 cells."""
    from fvswe.backends.layout import _slot_owners
    from fvswe.partition import assign, split

    for dtype in ("float32", "float64"):
        sim = get_case_simulation("test1", order="random", dtype=dtype)
        parts = [sim.layout.part(p) for p in split(sim.mesh, assign(sim.mesh, 3, "hilbert"))]
        for lay in [sim.layout, *parts]:
            for got, want in zip(_slot_owners(lay.edge_slot, lay.n_cells, lay.k),
                                 _slot_owners_by_numpy(lay.edge_slot, lay.n_cells, lay.k),
                                 strict=True):  # fmt: skip
                assert got.dtype == want.dtype and np.array_equal(got, want)
            for cells in (7, 32):
                got = gpu.block_arrays(lay, cells, interior_first)
                want = _block_arrays_by_numpy(lay, cells, interior_first)
                for a, b in zip(got, want, strict=True):
                    assert a.dtype == b.dtype and a.tobytes() == b.tobytes()
        assert (parts[0].cell_edges < 0).any()


def test_slot_codes_compiled_pass_codes_what_numpy_coded():
    """The compiled slot_codes (issue 31) gives the NumPy expression's codes bit for bit: on
    test1 in random order (walls and open edges) and on its three parts (halo slots of edges
    outside the part: walls), and on a quad grid with an inflow level table."""
    from fvswe.partition import assign, split

    sim = get_case_simulation("test1", order="random")
    parts = [sim.layout.part(p) for p in split(sim.mesh, assign(sim.mesh, 3, "hilbert"))]
    assert any((lay.cell_edges < 0).any() for lay in parts)  # slots without an edge: walls
    for lay in [sim.layout, *parts]:
        got, want = gpu.slot_codes(lay), _slot_codes_by_numpy(lay)
        assert got.dtype == want.dtype == np.int32 and np.array_equal(got, want)
        assert (got < 0).any() and (got >= 0).any()


@pytest.mark.parametrize("cells", [32, 128])
def test_block_arrays_write_every_slot_once(cells):
    """On a mesh in random order (many cut edges): each block's tasks write each of its
    cells' slots exactly once, with the edge's global slot; the tasks are the edges plus
    the twice-evaluated ones, each edge's side i owned once (its flags counted once)."""
    from fvswe.backends.layout import twice_evaluated

    sim = get_case_simulation("test1", order="random")
    lay = sim.layout
    start, task, normal, length = gpu.block_arrays(lay, cells)
    idx = gpu.edge_arrays(lay)
    assert len(task) == lay.n_edges + round(twice_evaluated(lay.edge_cells, cells) * lay.n_edges)
    assert 0.3 < twice_evaluated(lay.edge_cells, cells) < 1.0  # random order: many cut
    assert (task[:, 2] >= 0).sum() == lay.n_edges
    for b in range(start.size - 1):
        t = task[start[b] : start[b + 1]]
        n = min(cells, lay.n_cells - b * cells)
        written = np.concatenate((t[t[:, 2] >= 0, 2], t[t[:, 3] >= 0, 3]))
        assert np.array_equal(np.sort(written), np.arange(n * lay.k))
        base = b * cells * lay.k
        for side in (0, 1):  # the global slot of that side of the same edge
            mine = t[:, 2 + side] >= 0
            rows = [np.flatnonzero((idx[:, :2] == r[:2]).all(1))[0] for r in t[mine]]
            assert np.array_equal(idx[rows, 2 + side], t[mine, 2 + side] + base)
            assert np.array_equal(lay.edge_normal[rows], normal[start[b] : start[b + 1]][mine])
            assert np.array_equal(lay.edge_length[rows], length[start[b] : start[b + 1]][mine])


@pytest.mark.parametrize("cells", [32, 128])
def test_block_arrays_of_a_part_tile_its_owned_cells(cells):
    """On the parts of a distributed run (test1 in random order, three parts): the blocks
    tile the owned cells only, each writing every slot of its owned cells exactly once (the
    edges to halo cells included) and no halo cell's; each edge with an owned side i is
    owned on side i once (its flags counted once: the part's counted edges), an edge from a
    halo cell only on its side j."""
    from fvswe.partition import assign, split

    sim = get_case_simulation("test1", order="random")
    for part in split(sim.mesh, assign(sim.mesh, 3, "hilbert")):
        lay = sim.layout.part(part)
        assert lay.owned_cells < lay.n_cells
        start, task, _, _ = gpu.block_arrays(lay, cells)
        assert start.size - 1 == -(-lay.owned_cells // cells)
        idx = gpu.edge_arrays(lay)
        owner = np.flatnonzero(task[:, 2] >= 0)
        for b in range(start.size - 1):
            t = task[start[b] : start[b + 1]]
            n = min(cells, lay.owned_cells - b * cells)
            written = np.concatenate((t[t[:, 2] >= 0, 2], t[t[:, 3] >= 0, 3]))
            assert np.array_equal(np.sort(written), np.arange(n * lay.k))
        counted = np.sort([np.flatnonzero((idx[:, :2] == r[:2]).all(1))[0] for r in task[owner]])
        assert np.array_equal(counted, np.arange(lay.owned_edges))
        assert (task[task[:, 0] >= lay.owned_cells, 2] == -1).all()


def get_case_simulation(case: str, **options) -> Simulation:
    """``case`` on the 10x10x2 square (200 cells), CPU backend."""
    from fvswe.cases import get_case
    from fvswe.mesh.generate import structured_square

    return get_case(case).simulation(structured_square(10), **options)


@pytest.mark.skipif(CXX is None, reason="no host C++ compiler (g++) on PATH")
@pytest.mark.parametrize(
    ("scheme", "dtype", "dt_mode", "cells", "threads"),
    [
        ("pvm-ifcp", "float32", "lagged", 32, 128),
        ("pvm-ifcp", "float64", "fixed", 192, 128),
        ("roe", "float64", "nonlagged", 32, 128),
        ("ir-roe", "float32", "lagged", 256, 128),
        ("pvm-ifcp", "float64", "lagged", 128, 224),
    ],  # fmt: skip
)
def test_block_variant_on_host_bitwise_two_layers(scheme, dtype, dt_mode, cells, threads):
    """Blocks of 32 cells (7 blocks, most edges of the random order cut), of 256 (one
    block, two cells a thread) and of 128 cells on 224 threads (7 warps, as the tuning
    sweep runs them): the block variant's state and counters are bitwise those of the
    gather variant (on 128 threads; float32 too: the host build contracts nothing)."""
    dt = 5e-3 if dt_mode == "fixed" else None
    sim = get_case_simulation("test1", scheme=scheme, dtype=dtype, dt_mode=dt_mode, dt=dt,
                              order="random")  # fmt: skip
    steps = 3 if scheme == "ir-roe" else 40
    W0, c0 = emulated_run(sim.layout, scheme, "gather", dt_mode, 10.0, steps, dt)
    W, c = emulated_run(sim.layout, scheme, "block", dt_mode, 10.0, steps, dt, cells, threads)
    assert c0["steps"] == steps and np.array_equal(W, W0)
    for field in ("t", "dt", "steps", "clipped", "nonhyp", "degenerate", "thin", "thin_cells"):
        assert c[field] == c0[field], field


@pytest.mark.skipif(CXX is None, reason="no host C++ compiler (g++) on PATH")
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("quads", [False, True])
def test_block_variant_on_host_bitwise_hll_wd_level_and_walls(dtype, quads):
    """hll-wd with wetting and drying, walls and an imposed level: on triangles the tide
    over a beach (strip), on quads cgrid-tide; blocks of 32 cells. The state, the counters
    and the level inflow are bitwise those of the gather variant."""
    from fvswe.boundary import Level
    from fvswe.cases import get_case
    from fvswe.mesh.generate import strip

    if quads:
        sim = get_case("cgrid-tide").with_grid(16, 16).simulation(dtype=dtype)
        dt_mode, dt = sim.backend.dt_mode, sim.backend.dt_fixed
    else:

        def H(x, y):
            return 2.0 - x / 100.0

        level = Level(lambda t: 0.5 * np.sin(t / 10), every=1.0, until=200.0)
        sim = Simulation(strip(60, 2, x0=0.0, x1=300.0), layers=1, scheme="hll-wd", H=H,
                         dtype=dtype, initial={"h": lambda x, y: np.maximum(H(x, y), 0.0)},
                         boundary={"west": level, "east": "wall", "wall": "wall"})  # fmt: skip
        dt_mode, dt = "lagged", None
    assert sim.layout.k == (4 if quads else 3)
    W0, c0 = emulated_run(sim.layout, "hll-wd", "gather", dt_mode, 1e6, 40, dt)
    W, c = emulated_run(sim.layout, "hll-wd", "block", dt_mode, 1e6, 40, dt, cells=32)
    assert c0["steps"] == 40 and np.array_equal(W, W0) and (W0[:, 0] == 0).any()
    assert c0["level_inflow"] != 0
    for field in ("t", "steps", "clipped", "thin", "thin_cells", "level_inflow"):
        assert c[field] == c0[field], field


@pytest.mark.skipif(CXX is None, reason="no host C++ compiler (g++) on PATH")
def test_block_interior_first_order_keeps_results_bitwise():
    """The interior-first task order (per block, the edges between two of its cells first)
    permutes tasks within their block only, and the run stays bitwise gather: each slot
    keeps its one writer."""
    from fvswe.backends.layout import block_edges

    sim = get_case_simulation("test1", scheme="pvm-ifcp", dtype="float32", order="random")
    lay = sim.layout
    start, *lists = block_edges(lay.edge_cells, lay.n_cells, 32, interior_first=True)
    start0, *lists0 = block_edges(lay.edge_cells, lay.n_cells, 32)
    assert np.array_equal(start, start0)
    for b in range(start.size - 1):
        s = slice(start[b], start[b + 1])
        both = lists0[1][s] & lists0[2][s]  # owns both sides: an edge inside the block
        assert both.any() and not both.all()
        for got, want in zip(lists, lists0, strict=True):  # inside first, each group in order
            assert np.array_equal(got[s], np.concatenate((want[s][both], want[s][~both])))
    W0, c0 = emulated_run(lay, "pvm-ifcp", "gather", "lagged", 10.0, 40)
    W, c = emulated_run(lay, "pvm-ifcp", "block", "lagged", 10.0, 40, cells=32,
                        interior_first=True)  # fmt: skip
    assert c0["steps"] == 40 and np.array_equal(W, W0) and c["t"] == c0["t"]


@pytest.mark.skipif(CXX is None, reason="no host C++ compiler (g++) on PATH")
@pytest.mark.parametrize(("costly", "double"), sorted(gpu.BLOCK_SHAPES))
def test_block_variant_on_host_bitwise_in_default_shapes(costly, double):
    """Each default shape of the block variant (cells, threads, task order of
    gpu.block_shape) on 1152 cells in random order (4.5 blocks of 256): the state and the
    counters are bitwise the gather variant's."""
    from fvswe.cases import get_case
    from fvswe.mesh.generate import structured_square

    scheme, dtype = ("roe" if costly else "pvm-ifcp"), ("float64" if double else "float32")
    shape, table = gpu.block_shape(scheme, 2, dtype), gpu.BLOCK_SHAPES[costly, double]
    # the table's shape, or (Roe float64) its cells and threads halved to fit a block's memory
    assert shape.cells <= table.cells and shape.interior_first == table.interior_first
    assert gpu.block_shared(shape.cells, 3, 2, dtype) <= gpu.BLOCK_SHARED_MAX
    sim = get_case("test1").simulation(structured_square(24), scheme=scheme, dtype=dtype,
                                       order="random")  # fmt: skip
    W0, c0 = emulated_run(sim.layout, scheme, "gather", "lagged", 10.0, 12)
    W, c = emulated_run(sim.layout, scheme, "block", "lagged", 10.0, 12, None, shape.cells,
                        shape.threads, shape.interior_first)  # fmt: skip
    assert c0["steps"] == 12 and np.array_equal(W, W0)
    for field in ("t", "dt", "steps", "clipped", "nonhyp", "degenerate", "thin", "thin_cells"):
        assert c[field] == c0[field], field


BLOCK_SWEEP = THROUGHPUT.with_name("block_sweep_h100.json")
#: Interleaved A/Bs of block configurations (block_sweep.py --ab) that set a default, oldest
#: first (a later A/B of a kind replaces an earlier one).
BLOCK_AB = [THROUGHPUT.with_name("block_resident_ab_h100.json")]


def sweep_rows(path=BLOCK_SWEEP) -> list[dict]:
    import json

    return json.loads(path.read_text())["rows"]


def ab_best() -> dict[tuple, gpu.BlockShape]:
    """Per (scheme kind, dtype): the configuration of the best median over the rounds of the
    newest A/B that measured it."""
    best: dict[tuple, gpu.BlockShape] = {}
    for path in BLOCK_AB:
        rates: dict[tuple, dict[gpu.BlockShape, list[float]]] = {}
        for row in sweep_rows(path):
            key = (registry.get(row["scheme"]).costly, row["dtype"] == "float64")
            config = gpu.BlockShape(row["cells_per_block"], row["threads"], row["resident"],
                                    row["task_order"] == "interior")  # fmt: skip
            rates.setdefault(key, {}).setdefault(config, []).append(row["cell_steps_per_s"])
        for key, runs in rates.items():
            best[key] = max(runs, key=lambda c: np.median(runs[c]))
    return best


def test_block_shapes_are_the_sweeps_fastest():
    """gpu.BLOCK_SHAPES holds, per (scheme kind, dtype), the fastest IEEE block row of the
    H100 sweep in Hilbert order (its cells, threads, register cap and task order), or the
    best median of the newest interleaved A/B where one ran (the sweep's rows are single)."""
    fastest: dict[tuple, dict] = {}
    for row in sweep_rows():
        if row["variant"] != "block" or row["order"] != "hilbert" or row["extra_options"]:
            continue
        key = (registry.get(row["scheme"]).costly, row["dtype"] == "float64")
        if key not in fastest or row["cell_steps_per_s"] > fastest[key]["cell_steps_per_s"]:
            fastest[key] = row
    assert set(fastest) == set(gpu.BLOCK_SHAPES)
    ab = ab_best()
    assert ab, "the A/B files hold no rows"
    for key, row in fastest.items():
        swept = gpu.BlockShape(row["cells_per_block"], row["threads"], row["resident"],
                               row["task_order"] == "interior")  # fmt: skip
        assert gpu.BLOCK_SHAPES[key] == ab.get(key, swept), (key, row["cell_steps_per_s"])


def min_blocks(*args) -> int:
    """The ``__launch_bounds__`` minimum blocks of ``gpu.compile_options(*args)``."""
    opts = gpu.compile_options(*args)
    return int(next(o for o in opts if o.startswith("-DFVSWE_MIN_BLOCKS=")).split("=")[1])


def test_block_shape_register_cap_and_shared_memory():
    """A block module's __launch_bounds__ minimum is its shape's resident threads over its
    threads (two layers; the one-layer modules have no cap); a shape whose slots exceed
    what a block may hold (two-layer float64 in blocks of 256) is halved to fit."""
    assert min_blocks("roe", 2, np.float32, "block", 3, 256, 256) == 1024 // 256
    assert min_blocks("pvm-ifcp", 2, np.float64, "block", 3, 128, 128) == 640 // 128
    assert min_blocks("pvm-ifcp", 2, np.float32, "block", 3, 224, 256) == 1280 // 224
    assert min_blocks("pvm-ifcp", 2, np.float64, "gather", 3, 128) == 512 // 128  # unchanged
    assert min_blocks("roe", 1, np.float32, "block", 3, 256, 256) == 1
    # two layers: 6 fluxes, the speed and the edge length (the limiter's bound) a slot, padded
    # to 9 reals (one layer: 3 fluxes and the speed, padded to 5): odd, no bank conflicts
    assert gpu.block_shared(256, 3, 2, np.float64) == 256 * 3 * 9 * 8 > gpu.BLOCK_SHARED_MAX
    halved = gpu.block_shape("roe", 2, np.float64)
    assert (halved.cells, halved.threads) == (128, 128)
    assert gpu.block_shared(256, 3, 1, np.float64) == 256 * 3 * 5 * 8
    quads = gpu.block_shape("roe", 2, np.float64, k=4)
    assert (quads.cells, quads.threads, quads.resident) == (128, 128, 512)
    assert gpu.block_shared(quads.cells, 4, 2, np.float64) <= gpu.BLOCK_SHARED_MAX
    assert gpu.block_shape("roe", 1, np.float64, k=4) == gpu.BLOCK_SHAPES[True, True]


def test_default_variant_in_tuned_shapes_is_fastest_measured():
    """The sweep's rows at the default shapes: in Hilbert order (9 to 13 % of the edges
    twice) the default is block, faster than phase 1's edge and gather there; in RCM order
    (95 % twice) the default is the RCM rule's variant, the fastest of edge, gather and block
    measured there."""
    import json

    rows = sweep_rows()
    hilbert = {(r["scheme"], r["dtype"], r["variant"]): r["cell_steps_per_s"]
               for r in json.loads(BLOCK_PHASE1.read_text())["results"]}  # fmt: skip
    for scheme in ("pvm-ifcp", "roe"):
        for dtype in ("float32", "float64"):
            shape = gpu.block_shape(scheme, 2, dtype)

            def at(order, variant, s=scheme, d=dtype, shape=shape):
                return [r for r in rows if (r["scheme"], r["dtype"], r["order"], r["variant"])
                        == (s, d, order, variant) and not r["extra_options"]
                        and (variant != "block" or order == "rcm"  # one block row there
                             or (r["cells_per_block"], r["threads"]) ==
                             (shape.cells, shape.threads))]  # fmt: skip

            tuned = max(at("hilbert", "block"), key=lambda r: r["cell_steps_per_s"])
            assert gpu.default_variant(scheme, 2080560, tuned["twice_evaluated"]) == "block"
            rest = max(hilbert[scheme, dtype, v] for v in ("edge", "gather"))
            assert tuned["cell_steps_per_s"] > 1.05 * rest, (scheme, dtype)
            rcm = {v: at("rcm", v)[0] for v in ("edge", "gather", "block")}
            got = gpu.default_variant(scheme, 2080560, rcm["block"]["twice_evaluated"])
            speed = {v: r["cell_steps_per_s"] for v, r in rcm.items()}
            assert speed[got] == max(speed.values()), (scheme, dtype, speed)


def test_fast_math_options_and_refusals():
    """fast_math appends the approximate division/sqrt and flush-to-zero options to float32
    modules only; float64, and the CPU backend, refuse it in one line (a Simulation checks
    before any backend is built)."""
    from fvswe.errors import ConfigError
    from fvswe.mesh.generate import structured_square

    ieee = gpu.compile_options("roe", 2, np.float32, "block", 3, 256, 256)
    fast = gpu.compile_options("roe", 2, np.float32, "block", 3, 256, 256, fast_math=True)
    assert fast == ieee + gpu.FAST_MATH
    assert gpu.FAST_MATH == ("--prec-div=false", "--prec-sqrt=false", "--ftz=true")
    for call in (
        lambda: gpu.compile_options("roe", 2, np.float64, "edge", fast_math=True),
        lambda: Simulation(structured_square(2), dtype="float64", backend="gpu", fast_math=True),
        lambda: Simulation(structured_square(2), dtype="float32", backend="cpu", fast_math=True),
    ):
        with pytest.raises(ConfigError) as err:
            call()
        assert str(err.value).startswith("fast_math: ") and "\n" not in str(err.value)


@pytest.mark.skipif(NVCC is None, reason="nvcc is not on PATH: cannot compile the CUDA sources")
def test_fast_math_module_has_approximate_division_and_sqrt():
    """The float32 IEEE module divides and takes square roots correctly rounded (div.rn,
    sqrt.rn in its PTX); the fast-math module has none of those, only approximate ones
    flushing denormals."""
    ptx = {}
    for fast in (False, True):
        opts = gpu.compile_options("roe", 2, np.float32, "block", 3, 256, 256, fast_math=fast)
        out = cached_build("block", gpu.source("block"), [NVCC, "--ptx", "-arch=sm_90", *opts],
                           ".cu")  # fmt: skip
        ptx[fast] = out.read_text()
    assert "div.rn.f32" in ptx[False] and "sqrt.rn.f32" in ptx[False]
    assert "div.rn.f32" not in ptx[True] and "sqrt.rn.f32" not in ptx[True]
    assert "sqrt.approx.ftz.f32" in ptx[True]


@pytest.mark.skipif(CXX is None, reason="no host C++ compiler (g++) on PATH")
def test_a_gpu_module_compiled_rather_than_loaded_is_said_once(tmp_path, monkeypatch):
    """The first backend whose module the runtime compiles (its cache folder gains a file,
    named by source and options as CuPy's) says so once, through the runner; a second one
    that finds the module in the folder says nothing. CuPy's folder: CUPY_CACHE_DIR, none
    while CUPY_CACHE_IN_MEMORY is set."""
    from host_runtime import HostRuntime

    from fvswe import runner
    from fvswe.backends.gpu.build import cache_dir

    class Caching(HostRuntime):
        cache_dir = tmp_path

        class RawModule(HostRuntime.RawModule):
            def __init__(self, code: str, options: tuple[str, ...] = ()) -> None:
                super().__init__(code, options)
                key = hashlib.sha256(repr((code, options)).encode()).hexdigest()
                (tmp_path / f"{key}.cubin").touch()

    said = []
    for _ in range(2):
        sim = get_case_simulation("test1", backend="gpu",
                                  backend_options={"runtime": Caching()})  # fmt: skip
        runner.advance(sim, [sim.t + 1e-3], say=said.append)
        assert sim.backend.cold_start_note() is None  # said at most once a run
    assert len(said) == 1 and said[0].startswith("compiled the GPU kernels in ")
    assert str(tmp_path) in said[0] and len(list(tmp_path.iterdir())) == 1
    monkeypatch.setenv("CUPY_CACHE_DIR", str(tmp_path))
    assert cache_dir(None) == tmp_path
    monkeypatch.setenv("CUPY_CACHE_IN_MEMORY", "1")
    assert cache_dir(None) is None
