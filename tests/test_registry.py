"""The scheme registry reaches everything that lists schemes, and every backend is a Backend.

Each test runs over :func:`fvswe.registry.cases`, so a new registry entry is
checked here (and in the scheme, simulation and GPU tests) without editing a list.
"""

from __future__ import annotations

import importlib
import re
import shutil
import subprocess

import numpy as np
import pytest

from fvswe import casefile, physics, registry
from fvswe.backends import cuda_header, gpu
from fvswe.backends.base import Backend
from fvswe.backends.cpu.pipeline import CpuBackend, _Step
from fvswe.integrators import Op
from fvswe.mesh.generate import square
from fvswe.parallel import DistributedBackend
from fvswe.schemes import get_flux, reference
from fvswe.simulation import Simulation

CXX = shutil.which("g++") or shutil.which("c++")
#: Every member of the Backend protocol (methods, properties and declared attributes).
MEMBERS = sorted({n for n in vars(Backend) if not n.startswith("_")} | set(Backend.__annotations__))


def test_kernel_ids_are_one_per_kernel_and_dense():
    assert sorted(registry.KERNEL_IDS.values()) == list(range(len(registry.KERNEL_IDS)))
    assert set(registry.KERNEL_IDS) == {*registry.KERNELS.values(), *registry.UNFIXED.values()}
    for name, layers in registry.cases():
        opts = gpu.compile_options(name, layers, np.float64, "edge")
        assert f"-DFVSWE_SCHEME={registry.kernel_id(name, layers)}" in opts
        assert f"-DFVSWE_LAYERS={layers}" in opts
    defaults = max(registry.KERNEL_IDS[ref] for ref in registry.KERNELS.values())
    for (name, layers), ref in registry.UNFIXED.items():  # after every default kernel
        opts = gpu.compile_options(name, layers, np.float64, "edge", entropy_fix=False)
        assert f"-DFVSWE_SCHEME={registry.KERNEL_IDS[ref]}" in opts
        assert registry.KERNEL_IDS[ref] > defaults


@pytest.mark.parametrize("ref", list(registry.KERNEL_IDS))
def test_every_kernel_exists_in_numpy_numba_and_cuda(ref):
    """``module.function`` names a NumPy reference (its fvswe.schemes function, or the
    physics looped), a Numba kernel from fvswe.physics (a function there, or one with its
    argument ``fixed`` bound) and a device function emitted into ``physics.cuh`` in
    ``module``'s namespace."""
    module, function = ref.split(".")
    assert callable(reference(ref))
    assert hasattr(physics.kernel(ref), "py_func")  # a Numba dispatcher
    blocks = re.findall(r"namespace (\w+) \{\n(.*?)\n\}  // namespace", cuda_header.physics(), re.S)
    assert any(ns == module and re.search(rf"FVSWE_DEV \w+ {function}\(", b) for ns, b in blocks)


@pytest.mark.parametrize("ref", list(registry.BOUND))
def test_a_bound_kernel_is_its_function_with_fixed_bound(ref):
    """Issue 26 (D1): a kernel of ``BOUND`` has no wrapper in fvswe.physics; Numba's kernel
    returns its function's result with ``fixed`` bound, bit for bit, and its device adapter
    calls the function with the constant."""
    function, (fixed,) = registry.target(ref)
    module, name = ref.split(".")
    assert not hasattr(importlib.import_module(f"fvswe.physics.{module}"), name)
    nvar = 3 * registry.KERNEL_LAYERS[ref]
    rng = np.random.default_rng(7)
    Wi, Wj = (tuple(rng.uniform(0.3, 1.5, nvar)) for _ in range(2))
    args = (Wi, Wj, 3.0, 3.1, 0.6, 0.8, 9.81, 0.5, 5e-3)
    want = registry.resolve("fvswe.physics", function)(*args, fixed)
    assert physics.kernel(ref)(*args) == want
    call = rf"{function.replace('.', '::')}<real>\(.*eps_h, {str(fixed).lower()}\);"
    text = cuda_header.physics()
    adapter = text[text.index(f"namespace {module} {{\n// {name} on arrays") :]
    assert re.search(call, adapter.split("}  // namespace")[0])


@pytest.mark.skipif(CXX is None, reason="no host C++ compiler (g++) on PATH")
@pytest.mark.parametrize(("name", "layers"), registry.cases())
def test_generated_scheme_header_selects_the_registry_kernel(tmp_path, name, layers):
    """schemes.cuh, preprocessed with the options GpuBackend compiles with, names the
    scheme's kernel; with the wrong layer count it refuses in one line."""
    src = tmp_path / "probe.cpp"
    src.write_text('#include "schemes.cuh"\nSCHEME_FLUX\n')
    opts = [o for o in gpu.compile_options(name, layers, np.float64, "edge") if o[:2] == "-D"]
    inc = [f"-I{cuda_header.write(tmp_path)}", f"-I{gpu.CUDA_DIR}"]
    res = subprocess.run([CXX, "-E", "-P", *opts, *inc, str(src)], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr[-2000:]
    assert res.stdout.split()[-1] == registry.kernel(name, layers).replace(".", "::")
    wrong = [o.replace(f"LAYERS={layers}", f"LAYERS={3 - layers}") for o in opts]
    res = subprocess.run([CXX, "-E", *wrong, *inc, str(src)], capture_output=True, text=True)
    assert res.returncode != 0 and f"needs FVSWE_LAYERS {layers}" in res.stderr


def _edge_pass(name: str, layers: int, speed: float = 0.3, **settings):
    """``(|Γ| F∓ and |Γ| ‖D‖ per slot, of every interior edge, from one CPU edge pass;
    the edges' states for the NumPy reference)`` on a random state of ``speed``."""
    rng = np.random.default_rng(5)
    mesh = square(60, seed=1)
    n = mesh.n_cells
    if layers == 2:
        initial = {
            "h1": rng.uniform(0.5, 1.5, n),
            "h2": rng.uniform(1.0, 2.0, n),
            "q1x": rng.uniform(-speed, speed, n),
            "q2y": rng.uniform(-speed, speed, n),
        }
    else:
        initial = {"h": rng.uniform(0.5, 1.5, n), "qx": rng.uniform(-2 * speed, 2 * speed, n)}
    H = rng.uniform(3.0, 3.2, n)
    sim = Simulation(mesh, layers=layers, scheme=name, H=H, initial=initial, backend="cpu",
                     **settings)  # fmt: skip
    backend, lay = sim.backend, sim.layout
    backend._residual(Op("residual", "U"), _Step(1.0, np.nan))
    inner = np.flatnonzero(lay.edge_cells[:, 1] >= 0)
    i, j = lay.edge_cells[inner].T
    W, m = lay.W0, sim.model
    got = [backend.acc[lay.edge_slot[inner, k]] for k in (0, 1)]
    args = (W[i], W[j], lay.H[i], lay.H[j], lay.edge_normal[inner], m.g, m.r, m.eps_h)
    return got, args, lay.edge_length[inner, None]


def _assert_slots(got, F, length, nvar) -> None:
    """The slots hold ``|Γ| F`` and ``|Γ| ‖D‖`` of the reference ``F = (F-, F+, ‖D‖)``."""
    for slots, Fk in zip(got, F[:2], strict=True):
        want = np.concatenate((length * Fk, length * F[2][:, None]), axis=1)
        scale = np.abs(want).max(axis=0)
        assert np.abs(slots - want).max(axis=0).max() <= 1e-12 * scale.max()
        assert np.abs(want[:, :nvar]).max() > 0.1  # the fluxes are not trivially zero


@pytest.mark.parametrize(("name", "layers"), registry.cases())
def test_cpu_edge_pass_dispatches_to_the_registry_kernel(name, layers):
    """The CPU edge pass (its dispatch built from the registry) writes |Γ| F∓ and |Γ| ‖D‖ of
    the scheme's NumPy reference into every interior edge's slots, to round-off."""
    got, args, length = _edge_pass(name, layers)
    _assert_slots(got, get_flux(name, layers)(*args), length, 3 * layers)


@pytest.mark.parametrize(("name", "layers"), list(registry.UNFIXED))
def test_cpu_edge_pass_without_the_entropy_fix_is_its_reference(name, layers):
    """Issue 32, item 12: with ``entropy_fix=False`` the same compiled edge pass dispatches to
    the kernel without the fix: its NumPy reference's slots, to round-off, on a state fast
    enough for transonic waves, where the fixed kernel's differ."""
    got, args, length = _edge_pass(name, layers, speed=1.5, entropy_fix=False)
    unfixed = reference(registry.kernel(name, layers, entropy_fix=False))(*args)
    _assert_slots(got, unfixed, length, 3 * layers)
    fixed = get_flux(name, layers)(*args)
    assert np.abs(fixed[0] - unfixed[0]).max() > 1e-3 * np.abs(unfixed[0]).max()


def _reached(dispatcher, seen=None) -> set:
    """Every Numba dispatcher a dispatch chain reaches through its closures."""
    from numba.core.dispatcher import Dispatcher

    seen = set() if seen is None else seen
    for cell in dispatcher.py_func.__closure__ or ():
        f = cell.cell_contents
        if isinstance(f, Dispatcher) and f not in seen:
            seen.add(f)
            _reached(f, seen)
    return seen


@pytest.mark.parametrize("layers", [1, 2])
def test_cpu_edge_pass_of_a_layer_count_reaches_its_kernels_only(layers):
    """Issue 32, item 11: the edge pass is compiled per layer count (the type of the scheme's
    dispatch id), and its chain reaches exactly that layer count's kernels, so a cold
    one-layer run compiles no two-layer kernel (30 s of its 69 s CPU on the development
    machine, benchmarks/compile_profile.py) and a two-layer run no one-layer one."""
    from fvswe.backends.cpu import dispatch
    from fvswe.backends.cpu.kernels import edge_pass

    reached = _reached(dispatch._CHAINS[layers])
    of = {physics.kernel(ref): registry.KERNEL_LAYERS[ref] for ref in registry.KERNEL_IDS}
    assert {of[f] for f in reached if f in of} == {layers}
    mine = {f for f, n in of.items() if n == layers}
    assert mine <= reached
    name = registry.distinct_kernels(layers)[0][0]
    _edge_pass(name, layers)
    kind = type(dispatch.dispatch_id(0, layers))
    assert any(sig[0].instance_class is kind for sig in edge_pass.signatures)


def test_compiled_closures_of_the_edge_pass_have_names_of_their_own():
    """Numba names machine code by qualified name, types and a per-process counter, and links
    a call by that name: two closures of one ``def`` compiled in two processes could share it,
    and once both were loaded from Numba's cache, a one-layer float32 run after a two-layer
    one ran the two-layer fluxes (0.32 off in a discharge). Each closure that the cached edge
    pass calls, not inlines, has a name of its own."""
    from fvswe.backends.cpu import dispatch

    called = {f for layers in (1, 2) for f in _reached(dispatch._CHAINS[layers])}
    called = [f for f in called if f.targetoptions.get("inline", "never") != "always"]
    names = [(f.py_func.__module__, f.py_func.__qualname__) for f in called]
    assert len(called) > 2 and len(set(names)) == len(names)


def test_cli_and_case_file_list_every_scheme(capsys):
    from fvswe.cli import main

    with pytest.raises(SystemExit):
        main(["run", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    key = next(k for k in casefile.SCHEMA if k.name == "scheme")
    for name in registry.names():
        assert re.search(rf"\b{re.escape(name)}\b", text), name
        assert re.search(rf"\b{re.escape(name)}\b", key.help), name


def test_backends_implement_the_protocol():
    """A CPU backend instance and an implicit-method one are Backends; the GPU and
    distributed classes (inspected: no CuPy, no MPI needed) carry every member of the
    protocol."""
    from fvswe.cases import get_case
    from fvswe.implicit.backend import ImplicitBackend

    sim = Simulation(square(40, seed=2), layers=1, scheme="hll", H=1.0, initial={"h": 1.0},
                     backend="cpu")  # fmt: skip
    assert isinstance(sim.backend, CpuBackend) and isinstance(sim.backend, Backend)
    implicit = get_case("cgrid-tide").with_grid(8, 2).simulation(method="implicit", backend="cpu")
    assert isinstance(implicit.backend, ImplicitBackend) and isinstance(implicit.backend, Backend)
    assert {"name", "check_every", "t", "advance", "first_clip", "cold_start_note"} <= set(MEMBERS)
    for cls in (gpu.GpuBackend, DistributedBackend):
        missing = [m for m in MEMBERS if not hasattr(cls, m)]
        assert not missing, (cls.__name__, missing)


def test_an_edited_physics_module_drops_the_cached_passes(tmp_path, monkeypatch):
    """Numba's cache sees a function's own file only: the CPU passes carry a checksum of the
    registry and of every physics module, and a changed one flushes the cached machine code
    before the first pass (instead of running the old formulas) and caches the new checksum
    (else a second edit, or an edit undone, ran the passes of the first)."""
    from fvswe.backends.cpu import kernels as p

    copies = []
    for path in p.PHYSICS_FILES:
        copies.append(tmp_path / path.name)
        copies[-1].write_bytes(path.read_bytes())
    monkeypatch.setattr(p, "PHYSICS_FILES", copies)
    assert p._source_stamp() == p._SOURCE_STAMP
    copies[0].write_bytes(copies[0].read_bytes() + b"# an edit\n")
    assert p._source_stamp() != p._SOURCE_STAMP

    flushed = []

    class Recorder:
        def __init__(self, name):
            self.name = name

        def flush(self):
            flushed.append(self.name)

    class CachedStamp:  # _compiled_stamp as loaded from the cache
        _cache = Recorder("_compiled_stamp")

        def __call__(self, stamp=p._SOURCE_STAMP):
            return stamp

        def recompile(self):  # caches the new stamp: a second edit is seen too
            flushed.append("recompiled stamp")

    from numba.core.caching import NullCache
    from numba.core.dispatcher import Dispatcher

    passes = [f.py_func.__name__ for f in p.PASSES]
    cached = {name for name, f in vars(p).items()
              if isinstance(f, Dispatcher) and f.py_func.__module__ == p.__name__
              and not isinstance(f._cache, NullCache)
              and f.targetoptions.get("inline", "never") == "never"}  # fmt: skip
    assert cached == {*passes, "_compiled_stamp"}  # every cached kernel is flushed (_edge_range)
    monkeypatch.setattr(p, "PHYSICS_FILES", [])
    monkeypatch.setattr(p, "_compiled_stamp", CachedStamp())
    for f in p.PASSES:
        monkeypatch.setattr(f, "_cache", Recorder(f.py_func.__name__))
    p.fresh_cache.__wrapped__()  # the cached stamp matches: nothing flushed
    assert flushed == []
    monkeypatch.setattr(p, "_SOURCE_STAMP", p._SOURCE_STAMP + 1)
    p.fresh_cache.__wrapped__()
    assert sorted(flushed) == sorted(["_compiled_stamp", *passes, "recompiled stamp"])


def test_every_cached_cpu_pass_is_dropped_with_the_stamp():
    """Every compiled, not inlined function of the CPU kernels is in ``PASSES``, the list that
    ``fresh_cache`` flushes after a registry or physics edit: ``_edge_range`` (called by
    ``edge_pass``, cached on its own) was not, so on a warm cache a new boundary kind ran
    without its ghost or its counted flux."""
    from numba.core.registry import CPUDispatcher

    import fvswe.backends.cpu.kernels as p

    own = {name for name, f in vars(p).items() if isinstance(f, CPUDispatcher)
           and f.__module__ == p.__name__
           and f.targetoptions.get("inline") != "always"}  # fmt: skip
    assert own - {"_compiled_stamp"} == {f.py_func.__name__ for f in p.PASSES}


def test_the_threads_passes_count_no_references():
    """The CPU passes that threads run per chunk (and their ``prange`` drivers without a
    reduction) compile without Numba's reference counting: with it, each inlined helper that
    took a named tuple of arrays increfed and decrefed every array in it, atomically, on
    counters that all threads share, and at 8 threads a step took 1.4-1.75 times as long as
    the passes with positional arrays before them (docs/ARCHITECTURE.md, "The CPU
    interprets"). ``limiter_thetas`` keeps counting: its reduction allocates partials."""
    import fvswe.backends.cpu.kernels as p

    threaded = {"edge_pass", "_edge_range", "troubled_pass", "faces_pass", "_troubled_range",
                "_reconstruct_range", "volume_pass", "_volume_chunk", "limited_update",
                "combined"}  # fmt: skip
    uncounted = {f.py_func.__name__ for f in p.PASSES if f.targetoptions.get("_nrt") is False}
    assert uncounted == threaded
