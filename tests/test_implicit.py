"""The implicit method (the C-grid thesis's θ-scheme) on the C-grid cases: its properties, its
order in time, its approach to the explicit finite volumes, and its user path."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from fvswe import output, runner, settings
from fvswe.boundary import Level
from fvswe.cases import get_case
from fvswe.cli import main
from fvswe.errors import ConfigError
from fvswe.forcing import Wind
from fvswe.grid import Grid
from fvswe.simulation import Simulation
from fvswe.sources import Rain, Source

IMPLICIT = {"method": "implicit", "dt_mode": "nonlagged"}


def explicit_step(case, h_max: float) -> float:
    """Δx / √(g h_max): the step of gravity-wave Courant number 1."""
    (lx, _), (nx, _) = case.extent, case.grid_size
    return (lx / nx) / math.sqrt(case.g * h_max)


def eta(case, t_end: float, **options) -> np.ndarray:
    sim = case.simulation(**options)
    sim.run(t_end)
    return sim.fields()["eta"]


@pytest.mark.parametrize("preconditioner", ["none", "jacobi", "rrb"])
def test_tide_stays_pseudo_one_dimensional(preconditioner):
    """Plain CG keeps every iterate uniform along y (the operator in difference form meets
    exactly 0 across the y faces), and so does Jacobi, whose diagonal mirrors the walls
    (``Stencil.jacobi_diagonal``): v = 0 exactly. RRB is not uniform along y (its colouring
    alternates rows): its rows differ up to the solver's tolerance, and where a cell's depth
    crosses the drying threshold such a difference opens a face in one row and not in the
    next, so v stays of the tolerance's order, not 0. Seven rows: a cell height (600/7 m)
    that is no binary fraction, so the bed is uniform along y only because a rectangle's
    centroid takes its x from the widths alone (``mesh.core._centroids``)."""
    case = get_case("cgrid-tide").with_grid(24, 7)
    sim = case.simulation(**IMPLICIT, preconditioner=preconditioner)
    sim.run(8 * 3600.0)  # a high tide and most of the ebb
    f = sim.fields()
    h = Grid(24, 7, 25.0, 600 / 7).as_array(f["h"])
    v = np.abs(sim.snapshot()["v"])  # the face velocities, on the host
    spread = np.abs(h - h[:1]).max()
    assert h.min() >= 0 and (h < 1e-3).any() and (h > 1).any()  # a front, wet and dry
    if preconditioner == "rrb":
        assert 0 < v.max() < 1e-3 and spread < 1e-3
    else:
        assert v.max() == 0 and np.all(f["qy"] == 0) and spread == 0


def test_volume_is_conserved_to_round_off():
    """Walls: the volume is that of the start to round-off (the level comes from continuity
    with the solved velocities, whatever CG's residual). A tide: the volume in through the
    level boundary accounts for every change."""
    drop = get_case("cgrid-island").with_grid(32, 32)
    loose = {"cg_tol": 1e-3, "max_wave_courant": 2.0}  # a loose solve: still exact
    sim = drop.simulation(**IMPLICIT, **loose)
    s = sim.run(30.0)
    assert s.mass_rel_drift[0] < 1e-13 and s.steps > 5
    tide = get_case("cgrid-tide").with_grid(16, 4)
    s = tide.simulation(**IMPLICIT).run(2 * 3600.0)
    assert s.counters["level_inflow"] > 1e5
    assert abs(s.mass[0] - s.mass_initial[0] - s.counters["level_inflow"]) < 1e-12 * s.mass[0]


def test_depths_stay_non_negative_where_cells_dry_at_a_large_step():
    """At 30 times the gravity-wave step the falling tide empties cells within a step: they
    are taken out and the step repeated (Delft3D-FLOW's rule); no depth below 0, none
    clipped, the volume balanced."""
    case = get_case("cgrid-tide").with_grid(24, 2)
    sim = case.simulation(**IMPLICIT, cfl=1.0, max_wave_courant=30.0)
    s = sim.run(21 * 3600.0)  # through a high tide and down to the lowest level
    assert s.counters["drying_repeats"] > 0
    assert s.counters["gravity_courant_max"] > 30
    assert sim.fields()["h"].min() >= 0.0 and sim.backend.first_invalid() is None
    assert s.mass_rel_drift[0] < 1e-12


def test_island_stays_dry_and_the_drop_keeps_its_symmetry():
    case = get_case("cgrid-island").with_grid(40, 40)
    sim = case.simulation(**IMPLICIT)
    sim.run(40.0)
    f = sim.fields()
    summit = int(np.argmin(f["H"]))
    assert f["h"][summit] < 1e-3 and f["h"].min() >= 0.0  # dry: below the threshold
    drop = get_case("cgrid-drop").with_grid(20, 20)
    e = Grid(20, 20, 10.0, 10.0).as_array(eta(drop, 30.0, **IMPLICIT))
    # mirror in y and x <-> y to the solver's tolerance (RRB's colouring is not symmetric)
    np.testing.assert_allclose(e, e[::-1], rtol=0, atol=1e-5)
    np.testing.assert_allclose(e, e.T, rtol=0, atol=1e-5)


@pytest.mark.parametrize(("law", "coef"), [("chezy", 20.0), ("manning", 0.05)])
def test_steady_channel_flow_obeys_the_friction_law(law, coef):
    """A 10 km channel 10 m deep between levels 0.01 m and 0: the steady discharge in its
    middle is the uniform-flow one of the simulated surface slope S, ``C h^1.5 S^0.5``
    (Chézy) or ``h^(5/3) S^0.5 / n`` (Manning), and the same along the channel."""
    g = Grid(40, 1, 250.0, 250.0)
    sides = {"west": Level(0.01), "east": Level(0.0), "south": "wall", "north": "wall"}
    sim = Simulation(g.mesh(), layers=1, scheme="hll-wd", H=10.0, initial={"h": 10.0},
                     boundary=sides, friction=(law, coef), method="implicit",
                     dt_mode="fixed", dt=200.0)  # fmt: skip
    sim.run(60000.0)
    f = sim.fields()
    mid = slice(10, 30)
    slope = -np.polyfit(g.x[mid], f["eta"][mid], 1)[0]
    h = f["h"][mid].mean()
    uniform = coef * h**1.5 * slope**0.5 if law == "chezy" else h ** (5 / 3) * slope**0.5 / coef
    q = f["qx"][mid]
    assert abs(q.mean() / uniform - 1) < 1e-4 and np.ptp(q) < 1e-4 * q.mean()


@pytest.mark.parametrize(("theta", "order"), [(0.5, 2.0), (1.0, 1.0)])
def test_observed_order_in_time(theta, order):
    """Against a run of 1/16 the finest step: θ = ½ second order, θ = 1 first order."""
    case = get_case("cgrid-drop").with_grid(32, 32)
    steps = (8, 16, 32) if theta == 0.5 else (16, 32, 64)

    def run(n):
        return eta(case, 12.0, method="implicit", dt_mode="fixed", dt=12.0 / n,
                   theta=theta, cg_tol=1e-12)  # fmt: skip

    ref = run(16 * steps[-1])
    err = [np.sqrt(np.mean((run(n) - ref) ** 2)) for n in steps]
    orders = [math.log2(err[k] / err[k + 1]) for k in range(2)]
    assert err[0] > err[1] > err[2]
    assert abs(orders[-1] - order) < 0.2 * order, orders


def test_approaches_the_explicit_finite_volumes_as_the_step_shrinks():
    """The drop at 64²: the difference from the explicit finite volumes falls as Δt goes down
    to the explicit step, to what the two spatial discretisations leave."""
    case = get_case("cgrid-drop").with_grid(64, 64)
    ref = eta(case, 20.0)
    dt1 = explicit_step(case, 1.1)
    diff = [np.sqrt(np.mean((eta(case, 20.0, method="implicit", dt_mode="fixed", dt=k * dt1)
                             - ref) ** 2)) for k in (16, 4, 1)]  # fmt: skip
    assert diff[0] > 1.5 * diff[1] > 1.5 * diff[2]
    assert diff[2] < 0.03 * 0.1  # 3 % of the drop's height


def test_restart_from_a_checkpoint_is_bit_for_bit(tmp_path):
    """The checkpoint carries the staggered state (W alone gives the face velocities back
    only approximately): a run continued from it is the uninterrupted run bit for bit."""
    case = get_case("cgrid-tide").with_grid(16, 4)
    whole = case.simulation(**IMPLICIT)
    runner.advance(whole, [1800.0, 3600.0])
    first = case.simulation(**IMPLICIT)
    runner.advance(first, [1800.0])
    output.save_checkpoint(tmp_path / "c.npz", first.snapshot())
    again = case.simulation(**IMPLICIT)
    again.restore(output.load_checkpoint(tmp_path / "c.npz"))
    assert again.t == 1800.0 and again.steps == first.steps
    runner.advance(again, [1800.0, 3600.0])
    assert again.steps == whole.steps
    np.testing.assert_array_equal(again.state(), whole.state())
    for key in ("zeta", "u", "v"):
        np.testing.assert_array_equal(again.snapshot()[key], whole.snapshot()[key])
    assert again.backend.counters() == whole.backend.counters()


def test_a_checkpoint_of_another_method_or_theta_is_refused(tmp_path):
    """The method and its settings belong to the run identity; a snapshot without the
    staggered state, or with a wrong one, is refused in one line."""
    case = get_case("cgrid-tide").with_grid(8, 4)
    implicit = case.simulation(**IMPLICIT)
    explicit = case.simulation(dt_mode="nonlagged")
    output.save_checkpoint(tmp_path / "c.npz", implicit.snapshot())
    snap = output.load_checkpoint(tmp_path / "c.npz")
    with pytest.raises(ConfigError, match=r"method: 'implicit' in the checkpoint's run, 'expl"):
        explicit.restore(snap)
    with pytest.raises(ConfigError, match=r"theta: 0.6 in the checkpoint's run, 1.0 now$"):
        case.simulation(**IMPLICIT, theta=1.0).restore(snap)
    with pytest.raises(ConfigError, match=r"c.npz: not a snapshot of this run's backend \(no 'u'"):
        implicit.restore({k: v for k, v in snap.items() if k != "u"})
    bad = {**snap, "v": np.full_like(snap["v"], np.nan)}
    with pytest.raises(ConfigError, match=r"c.npz: invalid v = nan at 0$"):
        implicit.restore(bad)
    wrong = r"c.npz: state zeta is float64\[4, 7\], this run needs float64\[4, 8\]$"
    with pytest.raises(ConfigError, match=wrong):
        implicit.restore({**snap, "zeta": snap["zeta"][:, :7]})


def _older(identity: dict, fvswe: str) -> dict:
    """An explicit run's identity as an older fvswe wrote it."""
    if fvswe == "before the implicit method":  # no method, no implicit settings
        added = {s.name for s in settings.SETTINGS if s.only == "implicit"} | {"method"}
        return {k: v for k, v in identity.items() if k not in added}
    assert identity["theta"] == 0.6
    return {**identity, "theta": 0.55}  # θ's default until 2026-11-29, which it never read


@pytest.mark.parametrize("fvswe", ["before the implicit method", "while theta's default was 0.55"])
def test_an_explicit_checkpoint_of_an_older_fvswe_restarts(tmp_path, fvswe):
    """An explicit run continues from it bit for bit (a run compares only its own method's
    settings and completes missing keys with their old values); an implicit run, or one of
    another cfl, is refused."""
    case = get_case("cgrid-tide").with_grid(8, 4)
    whole = case.simulation(backend="cpu")
    whole.run(300.0)  # the same steps as the run that stops there
    whole.run(600.0)
    first = case.simulation(backend="cpu")
    first.run(300.0)
    snap = first.snapshot()
    output.save_checkpoint(tmp_path / "old.npz", {**snap, "identity": _older(snap["identity"],
                                                                             fvswe)})  # fmt: skip
    old = output.load_checkpoint(tmp_path / "old.npz")
    again = case.simulation(backend="cpu")
    again.restore(old)
    again.run(600.0)
    np.testing.assert_array_equal(again.state(), whole.state())
    with pytest.raises(ConfigError, match=r"method: 'explicit' in the checkpoint's run, 'impl"):
        case.simulation(**IMPLICIT).restore(old)
    with pytest.raises(ConfigError, match=r"cfl: 0.9 in the checkpoint's run, 0.5 now$"):
        case.simulation(backend="cpu", cfl=0.5).restore(old)


def test_cli_and_case_file_switch_with_one_key(tmp_path, capsys):
    out = tmp_path / "out"
    code = main(["run", "cgrid-tide", "--nx", "12", "--method", "implicit", "--theta", "1",
                 "--t-end", "1800", "-o", str(out), "--gauge", "100,300,g", "--quiet"])  # fmt: skip
    assert code == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["scheme"] == "implicit-theta1-rrb" and summary["cg_iterations"] > 0
    assert summary["t"] == 1800.0 and summary["mass_rel_drift"][0] < 1e-12
    assert (out / "gauges.csv").read_text().count("\n") > 2
    toml = tmp_path / "case.toml"
    toml.write_text('case = "cgrid-drop"\nmethod = "implicit"\nt_end = 5.0\ntheta = 0.5\n'
                    'preconditioner = "jacobi"\n')  # fmt: skip
    assert main(["run", str(toml), "--json", "--quiet"]) == 0
    printed = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert printed["scheme"] == "implicit-theta0.5-jacobi" and printed["t"] == 5.0


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"theta": 0.3}, r"^theta: must lie in \[0.5, 1\], got 0.3$"),
        ({"cg_tol": 0.0}, r"^cg_tol: must be a positive number, got 0.0$"),
        ({"dt_max": -1.0}, r"^dt_max: must be a positive number, got -1.0$"),
        ({"rrb_coarse": 2}, r"^rrb_coarse: must be an integer in \[4, 65536\], got 2$"),
        ({"preconditioner": "ilu"}, r"^preconditioner: unknown 'ilu' \(choose from auto, rrb, "),
        (
            {"method": "explicit", "theta": 1},
            r"^theta: 1 is a setting of method 'implicit', "
            r"this run's method is 'explicit'$",
        ),
        (
            {"integrator": "ssp-rk2"},
            r"^integrator: 'ssp-rk2' is a setting of method 'explicit', "
            r"this run's method is 'implicit'$",
        ),
        ({"threads": 2}, r"^threads: 2 is a setting of method 'explicit'"),
        ({"fast_math": True}, r"^fast_math: True is a setting of method 'explicit'"),
        ({"eps_h": 1e-3}, r"^eps_h: 0.001 is a setting of method 'explicit'"),
        ({"method": "semi"}, r"^method: unknown 'semi' \(choose from explicit, implicit\)$"),
        ({"order": "rcm"}, r"^method 'implicit': needs a Cartesian grid in its row-major"),
        (
            {"backend_options": {"variant": "edge"}},
            r"^method 'implicit': variant is an option of the explicit backends$",
        ),
    ],
)
def test_bad_settings_are_one_line(options, message):
    case = get_case("cgrid-drop").with_grid(8, 8)
    with pytest.raises(ConfigError, match=message):
        case.simulation(**{**IMPLICIT, **options})


@pytest.mark.parametrize(
    ("inputs", "message"),
    [
        ({"sources": [Source(1.0, point=(1.0, 1.0))]}, "sources (point sources and rain)"),
        ({"sources": [Rain(1e-6)]}, "sources (point sources and rain)"),
        ({"wind": Wind(u=5.0, v=0.0)}, "wind"),
        ({"coriolis": 1e-4}, "coriolis"),
    ],
)
def test_source_terms_it_does_not_take_are_one_line(inputs, message):
    """Point sources, rain, wind and Coriolis are the explicit method's: an implicit run with
    them is refused rather than run without them."""
    case = get_case("cgrid-drop").with_grid(8, 8)
    with pytest.raises(ConfigError) as err:
        case.simulation(**IMPLICIT, **inputs)
    assert str(err.value) == f"method 'implicit': {message} is for the explicit method only"


def test_what_the_method_cannot_run_is_one_line():
    with pytest.raises(ConfigError, match=r"^method 'implicit': one layer only"):
        get_case("test1").simulation(method="implicit")
    g = Grid(6, 4, 1.0, 1.0)
    open_east = {"west": "wall", "east": "open", "south": "wall", "north": "wall"}
    with pytest.raises(ConfigError, match=r"^method 'implicit': boundary condition 'open'"):
        Simulation(g.mesh(), layers=1, scheme="hll-wd", H=1.0, initial={"h": 1.0},
                   boundary=open_east, method="implicit")  # fmt: skip


@pytest.mark.gpu
def test_gpu_runs_the_cpu_code_to_round_off():
    """The same array code on CuPy: cgrid-island (wetting and drying) and cgrid-tide (level
    boundary) agree with the CPU run (a tight tolerance, so both stop at round-off)."""
    from fvswe.backends import gpu

    ok, reason = gpu.available()
    if not ok:
        pytest.skip(reason)
    for name, t_end in (("cgrid-island", 20.0), ("cgrid-tide", 1800.0)):
        case = get_case(name).with_grid(32, 32)
        runs = [case.simulation(**IMPLICIT, backend=b, cg_tol=1e-11, preconditioner="rrb")
                for b in ("cpu", "gpu")]  # fmt: skip
        for sim in runs:
            sim.run(t_end)
        cpu, dev = (s.fields() for s in runs)
        assert runs[1].backend.name == "gpu" and runs[0].steps == runs[1].steps
        np.testing.assert_allclose(dev["h"], cpu["h"], rtol=0, atol=1e-9)
        np.testing.assert_allclose(dev["qx"], cpu["qx"], rtol=0, atol=1e-9)


def test_the_default_preconditioner_is_the_devices_faster(monkeypatch):
    """``auto``: RRB on the CPU, Jacobi (its CG in kernels) on the GPU; the run records the
    one it takes, so its checkpoints name it (the GPU's: tests/test_implicit_kernels.py)."""
    from fvswe.implicit import precond

    case = get_case("cgrid-drop").with_grid(8, 8)
    sim = case.simulation(**IMPLICIT, backend="cpu")
    assert sim.settings["preconditioner"] == sim.identity()["preconditioner"] == "rrb"
    assert sim.scheme == "implicit-theta0.6-rrb"
    assert precond.resolve("auto", "gpu") == "jacobi"
    assert precond.resolve("none", "gpu") == precond.resolve("none", "cpu") == "none"
    monkeypatch.setitem(precond.BY_DEVICE, "cpu", "jacobi")
    assert case.simulation(**IMPLICIT, backend="cpu").scheme == "implicit-theta0.6-jacobi"


def test_the_step_bounds_the_courant_number_of_the_speed_the_advection_carries_u_at(
    monkeypatch,
):
    """The momentum advection moves ``u`` at ``q̄/h̄`` (:func:`~fvswe.implicit.step._upwind`),
    up to twice ``|u|`` at a front: on cgrid-tide 24² the first flood (1.5-2 h) reached
    ``q̄/h̄ Δt/Δx`` = 2.17 under the old rule (``|u| Δt/Δx <= cfl``), past first-order
    upwind's limit 1. Now every step keeps it at ``cfl`` (recomputed here from the
    advection's own inputs)."""
    from fvswe.implicit import step as step_module

    seen = []
    upwind = step_module._upwind

    def traced(xp, hf_w, hf_c, hf_e, u_w, u_c, u_e, h_l, h_r, *rest):
        q = np.where(u_c > 0, 0.5 * (hf_w * u_w + hf_c * u_c), 0.5 * (hf_c * u_c + hf_e * u_e))
        hbar = 0.5 * (h_l + h_r)
        carried = np.abs(q[hbar > 0]) / hbar[hbar > 0]
        seen.append(max(float(carried.max(initial=0.0)), float(np.abs(u_c).max())) / rest[-2])
        return upwind(xp, hf_w, hf_c, hf_e, u_w, u_c, u_e, h_l, h_r, *rest)

    monkeypatch.setattr(step_module, "_upwind", traced)
    sim = get_case("cgrid-tide").with_grid(24, 24).simulation(**IMPLICIT, max_wave_courant=30.0)
    be, courant = sim.backend, []
    while be.t < 7200.0:
        seen.clear()
        t0 = be.t
        be.advance(7200.0, 1)
        courant.append(max(seen) * (be.t - t0))  # the attempts' largest rate times Δt
    assert max(courant) <= 0.9 * (1 + 1e-9) and max(courant) > 0.85
