"""The implicit step's host synchronisations and kernel launches (the GPU's cost), counted on
the host with tests/xp_counter.py, and the CG that tests its criterion every ``check``
iterations against the classic loop."""

from __future__ import annotations

import math

import numpy as np
import pytest
import xp_counter as xc
from test_implicit_solver import system
from xp_counter import COUNTS, XP

from fvswe.cases import get_case
from fvswe.implicit import cg, precond
from fvswe.implicit.cg import NotConverged, _advance, _direction, _tests, fused, pcg
from fvswe.implicit.operator import Stencil
from fvswe.implicit.step import State, ThetaStep


def classic_pcg(st: Stencil, M, b, tol: float):
    """The textbook loop with host scalars, a test every iteration (the reference)."""
    x = np.zeros_like(b)
    r = b - st.apply(x, np)
    z = M(r)
    p, rz = z.copy(), float(np.vdot(r, z))
    for k in range(1, 10_000):
        q = st.apply(p, np)
        alpha = rz / float(np.vdot(p, q))
        x += alpha * p
        r -= alpha * q
        if math.sqrt(float(np.vdot(r, r))) < tol:
            return x, k
        z = M(r)
        rz_new = float(np.vdot(r, z))
        p *= rz_new / rz
        p += z
        rz = rz_new
    raise AssertionError("no convergence")


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name", ["rrb", "jacobi", "none"])
def test_check_one_is_the_classic_loop_bit_for_bit(name, dtype):
    st = system(24, 19, scale=400.0)
    st = Stencil(st.cx.astype(dtype), st.cy.astype(dtype))
    b = (np.random.default_rng(5).standard_normal((24, 19)) * 1e-2).astype(dtype)
    M = precond.build(name, st, np)
    ref, its = classic_pcg(st, M, b, 1e-5)
    x, solve = pcg(lambda v: st.apply(v, np), M, b, np.zeros_like(b), np, 1e-5)
    assert solve.iterations == its and x.dtype == dtype and np.array_equal(x, ref)


@pytest.mark.parametrize("check", [3, 8])
@pytest.mark.parametrize("name", ["rrb", "jacobi", "none"])
def test_check_every_k_meets_the_criterion_within_k_iterations_more(name, check):
    """The same solution within the tolerance (eigenvalues of A are >= 1, so an error is at
    most its residual), at most ``check - 1`` iterations more than testing each one."""
    tol = 1e-7
    st = system(40, 33, scale=900.0)
    b = np.random.default_rng(6).standard_normal((40, 33))
    M = precond.build(name, st, np)
    x1, s1 = pcg(lambda v: st.apply(v, np), M, b, np.zeros_like(b), np, tol)
    xk, sk = pcg(lambda v: st.apply(v, np), M, b, np.zeros_like(b), np, tol, check=check)
    assert s1.iterations >= 5 and s1.iterations <= sk.iterations <= s1.iterations + check - 1
    assert np.linalg.norm(b - st.apply(xk, np)) < tol * 1.01
    assert np.linalg.norm(xk - x1) < 2 * tol


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_a_residual_of_exactly_zero_between_two_tests_stays_put(dtype):
    """CG runs on past the criterion until its next test: with r = 0 (and so z, p = 0)
    the updates leave x as it is, with no 0/0 and no warning."""
    x, zero = np.arange(4.0, dtype=dtype), np.zeros(4, dtype)
    tiny, nil = np.finfo(dtype).tiny, dtype(0)
    with np.errstate(all="raise"):
        x2, r2 = _advance(x, zero, zero, zero, nil, nil, tiny)
        p2 = _direction(zero, zero, nil, nil, tiny)
    assert np.array_equal(x2, x) and not r2.any() and not p2.any() and x2.dtype == dtype


def test_a_function_the_array_module_cannot_fuse_runs_unfused():
    """Should ``cupy.fuse`` fail to trace an update, the same expressions run unfused."""

    class Module:  # an array module whose fuse fails at the first call
        @staticmethod
        def fuse():
            def trace(fn):
                def kernel(*args):
                    raise NotImplementedError("not traceable")

                return kernel

            return trace

    module = Module()
    x, r, p = (np.arange(3.0) + k for k in range(3))
    out = fused(module, _advance)(x, r, p, p, 2.0, 4.0, 0.0)
    assert {"_advance"} == cg.UNFUSED and np.array_equal(out[0], x + 0.5 * p)
    cg.UNFUSED.clear()


def counted_pcg(name: str, check: int, maxiter: int) -> tuple[int, int]:
    st = system(32, 32, scale=2500.0)
    st = Stencil(np.asarray(st.cx).view(xc.CountingArray), np.asarray(st.cy).view(xc.CountingArray))
    b = np.random.default_rng(7).standard_normal((32, 32)).view(xc.CountingArray)
    M, diag = precond.build(name, st, XP), st.boundary_diagonal(XP)
    xc.reset()
    with pytest.raises(NotConverged, match=f"after {maxiter} iterations"):
        pcg(lambda v: st.apply(v, XP, diag), M, b, XP.zeros_like(b), XP, 0.0, maxiter, check)
    return COUNTS.launches, COUNTS.syncs


def test_a_jacobi_iteration_is_fifteen_kernels_and_no_sync():
    """Per CG iteration on CuPy: the operator (seven kernels), Jacobi (one), three dot
    products, the two fused updates; the host reads the residual at the tests alone."""
    (l16, s16), (l48, s48) = (counted_pcg("jacobi", 8, n) for n in (16, 48))
    assert (l48 - l16) / 32 <= 15.25  # and a stack of three scalars at each test
    assert s48 - s16 == 4  # the tests at 24, 32, 40, 48
    assert s16 == 1 + 5  # the residual of the guess; tests at 1, 2, 4, 8, 16


def test_a_step_reads_the_host_once_besides_cg():
    """cgrid-drop with Jacobi as on the GPU (a test every 8 iterations): a step without
    repeats reads the device once after its solve (drying, inflow, the maxima for the next
    Δt) and CG once before its loop and at each test; it uploads one array."""
    case = get_case("cgrid-drop").with_grid(16, 16)
    dt = 30 * case.extent[0] / 16 / math.sqrt(case.g * 1.1)  # 30 times the explicit step
    sim = case.simulation(method="implicit", dt_mode="fixed", dt=dt, preconditioner="jacobi")
    be = sim.backend
    be.xp, be.step = XP, ThetaStep(be.grid, be.g, be.options, XP, be.dtype, check=8)
    be.state = State(*(np.asarray(getattr(be.state, k)).view(xc.CountingArray)
                       for k in ("zeta", "u", "v")))  # fmt: skip
    be.advance(math.inf, 1)  # the first step reads the maxima of the state it was given
    for _ in range(3):
        before = be.counters()
        xc.reset()
        be.advance(math.inf, 1)
        after = be.counters()
        its = after["cg_iterations"] - before["cg_iterations"]
        assert after["solves"] - before["solves"] == 1 and its > 8
        tests = sum(_tests(k, 8) for k in range(1, its + 1))  # the last meets the criterion
        assert COUNTS.syncs == 1 + tests + 1
        assert COUNTS.uploads == 1  # the boundary levels at t and t + dt


@pytest.mark.gpu
def test_gpu_jacobi_testing_every_eight_iterations_agrees_with_the_cpu():
    """On the GPU Jacobi-preconditioned CG tests its criterion every 8 iterations (fused
    updates, device scalars); at a tight tolerance the runs agree with the CPU's to
    round-off, with as many steps."""
    from fvswe.backends import gpu

    ok, reason = gpu.available()
    if not ok:
        pytest.skip(reason)
    case = get_case("cgrid-island").with_grid(32, 32)
    runs = [case.simulation(method="implicit", dt_mode="nonlagged", backend=b, cg_tol=1e-11,
                            preconditioner="jacobi", max_wave_courant=20.0)
            for b in ("cpu", "gpu")]  # fmt: skip
    for sim in runs:
        sim.run(20.0)
    cpu, dev = (s.fields() for s in runs)
    assert runs[1].backend.step.check == 8 and runs[0].steps == runs[1].steps
    c_cpu, c_gpu = (s.backend.counters()["cg_iterations"] for s in runs)
    assert c_cpu <= c_gpu <= c_cpu + 7 * runs[0].backend.counters()["solves"]
    np.testing.assert_allclose(dev["h"], cpu["h"], rtol=0, atol=1e-9)
    np.testing.assert_allclose(dev["qx"], cpu["qx"], rtol=0, atol=1e-9)


def test_a_step_besides_its_solve_is_at_most_eighty_launches():
    """cgrid-tide (a level boundary, Chézy friction) with Jacobi: every launch of a step
    but its CG's, which runs uncounted here (on the GPU: tests/test_implicit_kernels.py,
    one launch a solve and two an iteration). Friction and the divergence are one fused
    kernel each (94 launches before them, 68 after); the carrying speeds of the Δt rule
    (``ThetaStep.maxima``) add 12."""
    case = get_case("cgrid-tide").with_grid(16, 16)
    sim = case.simulation(method="implicit", dt_mode="nonlagged", preconditioner="jacobi",
                          max_wave_courant=10.0)  # fmt: skip
    be = sim.backend
    be.xp, be.step = XP, ThetaStep(be.grid, be.g, be.options, XP, be.dtype, check=8)
    be.state = State(*(np.asarray(getattr(be.state, k)).view(xc.CountingArray)
                       for k in ("zeta", "u", "v")))  # fmt: skip

    def uncounted(stencil, rhs):
        plain = Stencil(*(np.asarray(a).view(np.ndarray) for a in (stencil.cx, stencil.cy)))
        b = np.asarray(rhs).view(np.ndarray)
        M = precond.build("jacobi", plain, np)
        x, solve = pcg(lambda v: plain.apply(v, np), M, b, np.zeros_like(b), np, 1e-5)
        return x.view(xc.CountingArray), solve

    be.step._solve = uncounted
    be.advance(math.inf, 2)
    xc.reset()
    before = be.counters()["solves"]
    be.advance(math.inf, 3)
    assert be.counters()["solves"] - before == 3  # no drying repeats
    assert COUNTS.launches <= 3 * 80 and COUNTS.syncs == 3
