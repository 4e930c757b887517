"""The implicit step's CG in CUDA kernels (fvswe/implicit/cg.cu, kernel_cg.py).

On the host the kernels run in the CUDA emulator of tests/host_runtime.py (block
reductions, shuffles, the last block's finish), held to :func:`~fvswe.implicit.cg.pcg` on
the same system and, inside the θ-step, to the CPU run; nvcc compiles them to PTX where it
is on PATH; the ``gpu`` cases run them on CuPy.
"""

from __future__ import annotations

import numpy as np
import pytest
from host_runtime import HostArray, HostRuntime
from test_cuda_sources import CXX, NVCC
from test_implicit_solver import system

from fvswe.cases import get_case
from fvswe.implicit import kernel_cg, precond
from fvswe.implicit.cg import NotConverged, pcg
from fvswe.implicit.kernel_cg import KernelCG

needs_cxx = pytest.mark.skipif(CXX is None, reason="no C++ compiler: no CUDA emulator")


@pytest.mark.skipif(NVCC is None, reason="nvcc is not on PATH: cannot compile the CUDA sources")
@pytest.mark.parametrize("real", ["double", "float"])
def test_the_kernels_compile_to_ptx(real, tmp_path):
    import subprocess

    out = tmp_path / "cg.ptx"
    cmd = [NVCC, "--ptx", "-arch=sm_90", "--std=c++17", f"-DREAL={real}", str(kernel_cg.SOURCE)]
    done = subprocess.run([*cmd, "-o", str(out)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    text = out.read_text()
    assert all(f".entry {k}" in text for k in ("cg_start", "cg_product", "cg_update"))


def reference(name, st, b, tol, check):
    M = precond.build(name, st, np)
    return pcg(lambda v: st.apply(v, np), M, b, np.zeros_like(b), np, tol, check=check)


@needs_cxx
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name", ["jacobi", "none"])
def test_kernel_cg_is_the_array_cg_on_the_host(name, dtype):
    """The same iterates to round-off: the solution within the tolerance of pcg's, and
    the same number of iterations (the same tests, at 1, 2, 4, 8, then every 8)."""
    tol = 1e-7 if dtype == np.float64 else 1e-4
    st = system(40, 33, scale=900.0)
    b = np.random.default_rng(6).standard_normal((40, 33))
    st = type(st)(st.cx.astype(dtype), st.cy.astype(dtype))
    b = b.astype(dtype)
    x1, s1 = reference(name, st, b, tol, 8)
    cg = KernelCG(HostRuntime(), dtype, name)
    x2, s2 = cg.solve(st, b, np.zeros_like(b), tol, check=8)
    if name == "jacobi":  # walls west, south and north: the mirrored diagonal, bit for bit
        assert np.array_equal(np.asarray(cg.inv.get()).reshape(b.shape), 1 / st.jacobi_diagonal(np))
    assert x2.dtype == dtype and s2.iterations == s1.iterations and s1.iterations > 40
    residual = np.linalg.norm((b - st.apply(x2, np)).astype(np.float64))
    assert residual < tol * (1.01 if dtype == np.float64 else 2)
    assert np.linalg.norm(x2 - x1) < 2 * tol  # eigenvalues of A are >= 1


class _Counted(HostRuntime):
    """The host runtime counting kernel launches and reads of device arrays by the host."""

    launches = reads = 0

    class RawModule(HostRuntime.RawModule):
        def get_function(self, name):
            kernel = super().get_function(name)

            def call(*args):
                _Counted.launches += 1
                kernel(*args)

            return call

    class Read(HostArray):
        def get(self, stream=None, out=None):
            _Counted.reads += 1
            return super().get(stream, out)

    @staticmethod
    def zeros(shape, dtype=np.float64):
        return np.zeros(shape, dtype).view(_Counted.Read)


@needs_cxx
def test_an_iteration_is_two_launches_and_the_host_reads_at_the_tests_alone():
    st = system(32, 32, scale=2500.0)
    b = np.random.default_rng(7).standard_normal((32, 32))
    cg = KernelCG(_Counted(), np.float64, "jacobi")
    counts = []
    for maxiter in (16, 48):
        _Counted.launches = _Counted.reads = 0
        with pytest.raises(NotConverged, match=f"after {maxiter} iterations"):
            cg.solve(st, b, np.zeros_like(b), 0.0, maxiter, check=8)
        counts.append((_Counted.launches, _Counted.reads))
    # one launch before the loop, two an iteration; the host reads the scalars for the
    # guess and at the tests 1, 2, 4, 8, 16 (and 24, 32, 40, 48)
    assert counts == [(1 + 2 * 16, 1 + 5), (1 + 2 * 48, 1 + 9)]


@needs_cxx
def test_a_guess_at_the_criterion_costs_no_iteration():
    st = system(12, 9)
    b = np.zeros((12, 9))
    x, solve = KernelCG(HostRuntime(), np.float64, "jacobi").solve(st, b, np.zeros_like(b))
    assert solve.iterations == 0 and solve.residual == 0.0 and not x.any()


def tide_runs(make_kernels, name: str, n: int = 16, t_end: float = 1800.0):
    """cgrid-tide on the CPU with the array CG and with ``make_kernels(dtype, name)``'s."""
    case = get_case("cgrid-tide").with_grid(n, n)
    runs = []
    for kernels in (False, True):
        sim = case.simulation(method="implicit", dt_mode="nonlagged", preconditioner=name,
                              cg_tol=1e-10)  # fmt: skip
        if kernels:
            step = sim.backend.step
            step.kernels, step.check = make_kernels(step.dtype, name), 8
        sim.run(t_end)
        runs.append(sim)
    return runs


@needs_cxx
@pytest.mark.parametrize("name", ["jacobi", "none"])
def test_the_step_with_the_kernels_is_the_cpu_step_to_round_off(name):
    """cgrid-tide (a level boundary, wetting and drying) with the kernels inside the θ-step
    against the CPU run; the kernels' operator and Jacobi diagonal (walls mirrored) keep the
    tide pseudo-1-D: ``v = 0`` bit for bit, as the array code does."""
    runs = tide_runs(lambda dtype, pre: KernelCG(HostRuntime(), dtype, pre), name)
    cpu, dev = (s.fields() for s in runs)
    assert runs[0].steps == runs[1].steps > 10
    np.testing.assert_allclose(dev["h"], cpu["h"], rtol=0, atol=1e-8)
    np.testing.assert_allclose(dev["qx"], cpu["qx"], rtol=0, atol=1e-8)
    assert not np.asarray(runs[1].backend.state.v).any()


def test_the_kernels_apply_on_cupy_with_jacobi_and_none_only():
    class Cupy:
        RawModule = object

    assert kernel_cg.applies(Cupy, "jacobi") and kernel_cg.applies(Cupy, "none")
    assert not kernel_cg.applies(Cupy, "rrb") and not kernel_cg.applies(np, "jacobi")


def _cupy():
    from fvswe.backends import gpu

    ok, reason = gpu.available()
    if not ok:
        pytest.skip(reason)
    import cupy

    return cupy


@pytest.mark.gpu
@pytest.mark.parametrize("name", ["jacobi", "none"])
def test_gpu_kernel_cg_is_the_array_cg_on_cupy(name):
    """On the device: the kernels against pcg over CuPy arrays on the same system, both
    testing every 8 iterations."""
    cp = _cupy()
    st = system(300, 257, scale=900.0)
    dev = type(st)(cp.asarray(st.cx), cp.asarray(st.cy))
    b = cp.asarray(np.random.default_rng(6).standard_normal((300, 257)))
    tol = 1e-7
    M = precond.build(name, dev, cp)
    x1, s1 = pcg(lambda v: dev.apply(v, cp), M, b, cp.zeros_like(b), cp, tol, check=8)
    x2, s2 = KernelCG(cp, np.float64, name).solve(dev, b, cp.zeros_like(b), tol, check=8)
    assert abs(s2.iterations - s1.iterations) < 8 and s1.iterations > 100
    assert float(cp.linalg.norm(b - dev.apply(x2, cp))) < tol * 1.01
    assert float(cp.linalg.norm(x2 - x1)) < 2 * tol


@pytest.mark.gpu
@pytest.mark.parametrize("name", ["jacobi", "none"])
def test_gpu_tide_with_the_kernels_is_the_cpu_run_to_round_off(name):
    cp = _cupy()
    case = get_case("cgrid-tide").with_grid(32, 32)
    runs = [case.simulation(method="implicit", dt_mode="nonlagged", backend=b, cg_tol=1e-10,
                            preconditioner=name) for b in ("cpu", "gpu")]  # fmt: skip
    for sim in runs:
        sim.run(1800.0)
    assert isinstance(runs[1].backend.step.kernels, KernelCG)
    cpu, dev = (s.fields() for s in runs)
    assert runs[0].steps == runs[1].steps
    np.testing.assert_allclose(dev["h"], cpu["h"], rtol=0, atol=1e-8)
    np.testing.assert_allclose(dev["qx"], cpu["qx"], rtol=0, atol=1e-8)
    assert not bool(cp.asarray(runs[1].backend.state.v).any())


@pytest.mark.gpu
def test_gpu_default_run_takes_jacobi_in_kernels():
    """``preconditioner = "auto"`` (the default) is Jacobi on the GPU, its CG these kernels."""
    _cupy()
    sim = get_case("cgrid-drop").with_grid(16, 16).simulation(method="implicit", backend="gpu")
    assert sim.settings["preconditioner"] == sim.identity()["preconditioner"] == "jacobi"
    assert isinstance(sim.backend.step.kernels, KernelCG)
    sim.run(5.0)
    assert sim.t == 5.0 and sim.backend.counters()["cg_iterations"] > 0


@pytest.mark.gpu
def test_gpu_float32_tide_keeps_its_dtype_and_follows_the_float64_run():
    """float32 on the GPU (the kernels in float, the fused face terms cast back): the state
    stays float32 and the levels follow the CPU's float64 run."""
    cp = _cupy()
    case = get_case("cgrid-tide").with_grid(32, 32)
    runs = [case.simulation(method="implicit", dt_mode="nonlagged", backend=b, dtype=d,
                            preconditioner="jacobi", allow_mass_error=True)
            for b, d in (("cpu", "float64"), ("gpu", "float32"))]  # fmt: skip
    for sim in runs:
        sim.run(1800.0)
    state = runs[1].backend.state
    assert {a.dtype for a in (state.zeta, state.u, state.v)} == {cp.dtype("float32")}
    cpu, dev = (s.fields() for s in runs)
    np.testing.assert_allclose(dev["h"], cpu["h"], rtol=0, atol=1e-4)  # CPU float32: 8e-7
