"""Time integration as data (fvswe.integrators): the plans, the order in time of each
integrator, and the GPU's plans run on the host bitwise the CPU's."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest
from gpu_skip import skip_without_gpu
from test_cuda_sources import CXX, emulated_run

from fvswe import integrators
from fvswe.backends import gpu
from fvswe.cases import get_case
from fvswe.errors import ConfigError
from fvswe.integrators import Op, U, V, W

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "time_convergence.py"
spec = importlib.util.spec_from_file_location("time_convergence", SCRIPT)
time_convergence = importlib.util.module_from_spec(spec)
spec.loader.exec_module(time_convergence)


def test_euler_is_one_update_and_the_buffers_swap():
    ops = integrators.step_plan(integrators.get("euler"), "lagged", 1)
    kinds = [o.kind for o in ops]
    assert kinds == ["sources", "residual", "update", "tally", "exchange", "reduce_dt", "advance"]
    assert ops[2] == Op("update", U, V, 0, dt=True) and ops[-1].dst == V


def test_ssp_rk3_combines_its_stages_into_the_state():
    """Shu-Osher: U1 = U + dt L(U); U2 = 3/4 U + 1/4 (U1 + dt L(U1)); U = 1/3 U + 2/3 (U2 +
    dt L(U2)); the weights of the stages' residuals in the step (1/6, 1/6, 2/3) sum to 1."""
    rk3 = integrators.get("ssp-rk3")
    assert [s.a for s in rk3.stages] == [0.0, 0.75, 1 / 3]
    assert sum(s.weight for s in rk3.stages) == pytest.approx(1.0, abs=1e-15)
    ops = integrators.step_plan(rk3, "nonlagged", 2)
    combines = [o for o in ops if o.kind == "combine"]
    assert combines == [Op("combine", W, W, 1), Op("combine", V, U, 2)]
    assert [o.src for o in ops if o.kind == "update"] == [U, V, W]
    assert sum(o.kind == "limit_update" for o in ops) == 3  # the limiter at every stage
    assert ops[-1] == Op("advance", dst=U)


def test_unknown_integrator_is_one_line():
    with pytest.raises(ConfigError, match=r"integrator: unknown 'rk4' \(choose from euler, "):
        integrators.get("rk4")


@pytest.mark.parametrize(("scheme", "layers"), time_convergence.PROBLEMS)
def test_order_in_time(scheme, layers):
    """Error against Δt on a fixed mesh (three halvings, scripts/time_convergence.py): orders
    1, 2 and 3. Every integrator against one reference, SSP-RK3's run at Δt/64, the most
    accurate in time (the script's own reference for each is its own run at Δt/64): the
    spatial error, the same for every integrator on this mesh, cancels as well, the orders
    come closer to 1 and 2 (1.02-1.07 and 2.00 against the own runs' 1.06-1.09 and 2.00-2.01),
    an integrator converging to another solution fails too, and the reference runs of Euler
    and SSP-RK2 (45 % of the test's stage evaluations) are not needed."""
    want = {"euler": 0.95, "ssp-rk2": 1.95, "ssp-rk3": 2.9}
    steps = (0.02, 0.01, 0.005)
    ref = time_convergence.run(scheme, layers, "ssp-rk3", steps[0] / 64)
    for name, least in want.items():
        errs = time_convergence.errors(scheme, layers, name, steps=steps, ref=ref)
        assert min(time_convergence.orders(errs)) >= least, (name, errs)


@pytest.mark.skipif(CXX is None, reason="no host C++ compiler (g++) on PATH")
@pytest.mark.parametrize("integrator", ["ssp-rk2", "ssp-rk3"])
@pytest.mark.parametrize("dt_mode", ["lagged", "nonlagged", "fixed"])
def test_gpu_stages_on_host_are_the_cpu_stages(integrator, dt_mode):
    """The GPU backend's multi-stage plans (the stages' buffers, the deferred Δt, the
    combination kernel closing the step) on the host: every variant bitwise the CPU's
    state, steps and time (float64); non-lagged, an upper layer pulled apart that the
    limiter acts on in every stage."""
    from test_vanishing import pulled_apart_simulation

    dt = 4e-3 if dt_mode == "fixed" else None
    if dt_mode == "nonlagged":  # its own rule
        sim = pulled_apart_simulation(60, integrator=integrator, backend="cpu")
        scheme, t_end = "pvm-ifcp", 0.2
    else:
        sim = get_case("test1").simulation(scheme="roe", dt_mode=dt_mode, dt=dt,
                                           integrator=integrator, backend="cpu")  # fmt: skip
        scheme, t_end = "roe", 0.03
    sim.backend.advance(t_end, 10**6)
    ref = sim.backend.get_state()
    assert sim.steps > 3 and (dt_mode != "nonlagged" or sim.backend.counters()["limited"] > 0)
    for variant in gpu.VARIANTS:
        state, ctrl = emulated_run(sim.layout, scheme, variant, dt_mode, t_end, 10**6, dt,
                                   integrator=integrator)  # fmt: skip
        assert (ctrl["t"], ctrl["steps"]) == (sim.t, sim.steps), variant
        assert np.array_equal(state, ref), variant


@pytest.mark.gpu
def test_order_in_time_on_the_gpu():
    skip_without_gpu()
    errs = time_convergence.errors("pvm-ifcp", 2, "ssp-rk3", steps=(0.02, 0.01, 0.005),
                                   backend="gpu")  # fmt: skip
    assert min(time_convergence.orders(errs)) >= 2.9
    cpu = get_case("test1").simulation(backend="cpu", integrator="ssp-rk2")
    dev = get_case("test1").simulation(backend="gpu", integrator="ssp-rk2")
    for sim in (cpu, dev):
        sim.run(0.05)
    assert dev.steps == cpu.steps
    assert np.abs(dev.state() - cpu.state()).max() <= 1e-12 * np.abs(cpu.state()).max()
