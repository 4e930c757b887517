"""Point sources, sinks and rain (fvswe.sources, docs/SCHEMES.md §16): the volume they add is
the analytic integral of their series to round-off on every backend, integrator and rank
count; rain fills a dry basin with non-negative depths; bad input is one line."""

from __future__ import annotations

import numpy as np
import pytest
from gpu_skip import skip_without_gpu

from fvswe.errors import BlowUpError, ConfigError
from fvswe.mesh.generate import square, structured_square
from fvswe.simulation import Simulation
from fvswe.sources import Rain, Source


def _q(t):
    return 0.4 * (1.0 + np.sin(t / 3.0))


#: The sampled series the runs use, and its exact integral over [0, T] (trapezoids of the
#: piecewise-linear table the series becomes).
T = 12.0
TQ = np.arange(0.0, 40.0, 0.5)


def exact_source_volume(t_end: float) -> float:
    inside = TQ[t_end >= TQ]
    return float(np.trapezoid(_q(inside), inside))


def rain_basin_simulation(layers: int = 1, **kw) -> Simulation:
    """A bowl on a 20 m square (dry in its middle third at the start, one layer) or a two-layer
    lake, with a point source into the (wet) corner, a sink, and rain over half of it."""
    mesh = square(1200, seed=2, half=10.0)
    srcs = [
        Source(_q, point=(6.0, 6.0), every=0.5, until=40.0, name="inlet",
               lower=0.05 if layers == 2 else None),
        Source(-0.05, polygon=[(-9, -9), (-5, -9), (-5, -5), (-9, -5)], name="pump"),
        Rain(lambda t: 2e-3 * (t < 6.0), polygon=[(-10, -10), (0, -10), (0, 10), (-10, 10)],
             field=lambda x, y: 1.0 + 0.02 * y, every=1.0, until=40.0),
    ]  # fmt: skip

    def bed(x, y):  # depth below the reference level: a bowl whose middle emerges
        return 1.2 - 0.8 * np.exp(-(x * x + y * y) / 20.0)

    if layers == 1:
        initial = {"h": lambda x, y: np.maximum(bed(x, y) - 0.75, 0.0)}
        kw = {"scheme": "hll-wd", **kw}
    else:
        initial = {"h1": 0.4, "h2": lambda x, y: bed(x, y) - 0.4}
        kw = {"scheme": "pvm-ifcp", **kw}
    return Simulation(mesh, layers=layers, H=bed, initial=initial, sources=srcs, **kw)


@pytest.mark.parametrize("integrator", ["euler", "ssp-rk2", "ssp-rk3"])
def test_volume_added_is_the_analytic_integral(integrator):
    """A point source of a time-varying Q and rain of a constant rate on walls: the counters
    are the exact integrals (the series' trapezoids, the rate times the area times T) to
    round-off, and the layer's volume changes by them."""
    mesh = structured_square(12, half=5.0)
    rate = 3e-4
    srcs = [Source(_q, point=(1.3, -2.1), every=0.5, until=40.0), Rain(rate)]
    sim = Simulation(mesh, layers=1, scheme="hll", H=1.0, initial={"h": 1.0}, backend="cpu",
                     integrator=integrator, sources=srcs)  # fmt: skip
    s = sim.run(T)
    assert s.steps > 20
    assert s.counters["source_volume"] == pytest.approx(exact_source_volume(T), rel=1e-14)
    assert s.counters["rain_volume"] == pytest.approx(rate * float(mesh.area.sum()) * T, rel=1e-14)
    change = s.mass[0] - s.mass_initial[0]  # to the round-off of the volume's sum
    added = s.counters["source_volume"] + s.counters["rain_volume"]
    assert change == pytest.approx(added, rel=0, abs=1e-13 * s.mass[0])
    assert max(s.mass_rel_drift) <= 1e-13


@pytest.mark.parametrize("layers", [1, 2])
def test_rain_fills_a_dry_basin_with_non_negative_depths(layers):
    """Rain on dry ground, a source into the lake and a pump out of it: each layer's volume
    balance closes to round-off, no depth was clipped, the rain wetted dry cells."""
    sim = rain_basin_simulation(layers, backend="cpu")
    dry = sim.state()[:, 0] == 0
    s = sim.run(8.0)
    W = sim.state()
    assert s.counters["clipped_cells"] == 0 and max(s.mass_rel_drift) <= 1e-13
    assert W[:, [0, 3][:layers]].min() >= 0
    if layers == 1:
        assert dry.sum() > 80 and (W[dry, 0] > 0).sum() > 0.3 * dry.sum()
    else:
        assert s.counters["source_volume2"] == pytest.approx(0.05 * 8.0, rel=1e-14)
    balance = s.counters["source_volume"] + s.counters["rain_volume"]
    assert s.mass[0] - s.mass_initial[0] == pytest.approx(balance, rel=0, abs=1e-13 * s.mass[0])


@pytest.mark.gpu
@pytest.mark.parametrize("variant", ["edge", "gather", "slot", "block"])
def test_sources_on_the_gpu_are_the_cpus(variant):
    """The two-layer basin (a source into the lower layer, a pump, rain) with SSP-RK2 on the
    device: state, steps and time bit for bit the CPU backend's (float64), the counted
    volumes to round-off."""
    skip_without_gpu()
    cpu = rain_basin_simulation(2, backend="cpu", integrator="ssp-rk2")
    dev = rain_basin_simulation(2, backend="gpu", integrator="ssp-rk2",
                                backend_options={"variant": variant})  # fmt: skip
    s, sd = cpu.run(4.0), dev.run(4.0)
    assert (dev.t, dev.steps) == (cpu.t, cpu.steps) and sd.counters["clipped_cells"] == 0
    assert np.array_equal(dev.state(), cpu.state())
    for key in ("source_volume", "source_volume2", "rain_volume"):
        assert sd.counters[key] == pytest.approx(s.counters[key], rel=1e-14), key


def test_a_sink_that_empties_its_cell_stops_the_run():
    """A pump asking for more than its cell holds leaves a negative depth, which the clip
    counts: the run stops naming it, unless mass errors are allowed."""
    mesh = structured_square(6, half=3.0)
    options = dict(layers=1, scheme="hll-wd", H=0.1, initial={"h": 0.1}, backend="cpu",
                   sources=[Source(-5.0, point=(0.2, 0.2))])  # fmt: skip
    with pytest.raises(BlowUpError, match="positivity lost: a negative depth was clipped"):
        Simulation(mesh, **options).run(5.0)
    s = Simulation(mesh, allow_mass_error=True, **options).run(5.0)
    assert s.counters["clipped_cells"] > 0 and s.counters["source_volume"] == pytest.approx(-25.0)


def test_bad_sources_are_one_line():
    mesh = structured_square(4, half=1.0)
    one = dict(layers=1, scheme="hll", H=1.0, initial={"h": 1.0})
    cases = [
        (Source(1.0, point=(5.0, 0.0)), r"sources\[0\] \(source\): \(5, 0\) lies outside"),
        (Source(1.0), r"sources\[0\] \(source\): give a point or a polygon"),
        (Source(1.0, polygon=[(3, 3), (4, 3), (4, 4)]), "no cell .* inside the polygon"),
        (Source(1.0, point=(0, 0), lower=1.0), "a lower-layer discharge needs a two-layer"),
        (Rain(1e-5, field=lambda x, y: -1.0 + 0 * x), r"field is -1\.0 in cell 0"),
        ("rain", r"sources\[0\] \(\?\): expected Source\(...\) or Rain\(...\)"),
    ]
    for source, message in cases:
        with pytest.raises(ConfigError, match=message):
            Simulation(mesh, sources=[source], **one)


def test_case_file_and_command_line_sources(tmp_path, capsys):
    """[[sources]] and [[rain]] of a case file and --source/--rain reach the run."""
    from fvswe.cli import main

    case = tmp_path / "c.toml"
    case.write_text(
        'layers = 1\nscheme = "hll-wd"\nbackend = "cpu"\nt_end = 4.0\n'
        '[mesh]\ngenerator = "structured_square"\nn = 6\nhalf = 1.0\n[initial]\nH = 1.0\nh = 1.0\n'
        '[[sources]]\nname = "river"\npoint = [0.1, 0.1]\ndischarge = "0.2 + 0.0 * t"\n'
        "[[rain]]\nrate = 1e-4\npolygon = [[-1, -1], [0, -1], [0, 1], [-1, 1]]\n"
    )  # fmt: skip
    out = tmp_path / "out"
    assert main(["run", str(case), "-q", "-o", str(out), "--source", "0.3,-0.2,0.1,pump",
                 "--rain", "2e-5"]) == 0  # fmt: skip
    import json

    summary = json.loads((out / "summary.json").read_text())
    assert summary["source_volume"] == pytest.approx(0.3 * 4.0, rel=1e-13)
    area = 4.0  # structured_square's default half-width 1: a 2 x 2 square
    rain = (1e-4 * area / 2 + 2e-5 * area) * 4.0
    assert summary["rain_volume"] == pytest.approx(rain, rel=1e-12)
    assert main(["run", str(case), "-q", "--source", "1,2"]) == 2
    assert "--source: expected 3 numbers, got '1,2'" in capsys.readouterr().err
