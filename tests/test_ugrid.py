"""CF-UGRID NetCDF series: written during a two-layer run, read back by xarray."""

from __future__ import annotations

import sys
import types

import numpy as np
import pytest

from fvswe.errors import ConfigError, OutputError
from fvswe.mesh.generate import structured_square
from fvswe.output import FIELD_NAMES, original_cells, output_fields
from fvswe.simulation import Simulation
from fvswe.ugrid import (
    FIELD_ATTRS,
    FILENAME,
    STATIC,
    NetCDFSeries,
    check_crs,
    check_time_origin,
    is_geographic,
)

xr = pytest.importorskip("xarray", reason="the netcdf extra: pip install 'fvswe[netcdf]'")
pytest.importorskip("netCDF4", reason="the netcdf extra: pip install 'fvswe[netcdf]'")

TIMES = (0.0, 0.01, 0.02)


def dam_break(order: str = "rcm") -> Simulation:
    """Test 1's internal dam break on a 128-cell square, renumbered (fields come back in the
    mesh's order)."""
    h1 = lambda x, y: np.where(np.hypot(x, y) > 1.5, 4.0, 0.5)  # noqa: E731
    return Simulation(structured_square(8), layers=2, H=6.0, order=order, backend="cpu",
                      initial={"h1": h1, "h2": lambda x, y: 6.0 - h1(x, y)})  # fmt: skip


def write_series(directory, sim, times=TIMES, **kw) -> dict[float, dict[str, np.ndarray]]:
    """Run through ``times`` writing the series; the fields seen at each time."""
    seen = {}
    with NetCDFSeries(directory, sim, **kw) as series:
        for t in times:
            sim.run(t)
            series.write()
            seen[t] = output_fields(sim)
    return seen


def test_two_layer_series_reads_back_with_topology_coordinates_times_and_units(tmp_path):
    sim = dam_break()
    seen = write_series(tmp_path, sim, crs="EPSG:32631", time_origin="2000-01-01 00:00:00")
    with xr.open_dataset(tmp_path / FILENAME, decode_times=False) as ds:
        topo = ds["mesh"].attrs
        assert topo["cf_role"] == "mesh_topology" and topo["topology_dimension"] == 2
        assert topo["face_node_connectivity"] == "face_nodes"
        assert topo["node_coordinates"] == "node_x node_y"
        assert topo["face_coordinates"] == "face_x face_y"
        assert ds.attrs["Conventions"] == "CF-1.8 UGRID-1.0"
        mesh = sim.mesh
        np.testing.assert_array_equal(ds["face_nodes"].values, original_cells(mesh))
        np.testing.assert_array_equal(ds["node_x"].values, mesh.nodes[:, 0])
        np.testing.assert_array_equal(ds["node_y"].values, mesh.nodes[:, 1])
        o = np.argsort(mesh.original_index)  # barycentres in the mesh's original order
        np.testing.assert_array_equal(ds["face_x"].values, mesh.centroid[o, 0])
        np.testing.assert_array_equal(ds["face_area"].values, mesh.area[o])
        assert ds["time"].attrs["units"] == "seconds since 2000-01-01 00:00:00"
        np.testing.assert_array_equal(ds["time"].values, TIMES)
        assert ds["crs"].attrs["epsg_code"] == "EPSG:32631"
        for name in FIELD_NAMES[2]:  # the bed once, not per time
            var = ds[name]
            assert var.dims == (("face",) if name in STATIC else ("time", "face"))
            assert var.attrs["units"] == FIELD_ATTRS[name][2] and var.attrs["mesh"] == "mesh"
            assert var.attrs["location"] == "face" and var.attrs["grid_mapping"] == "crs"
            assert var.attrs.get("standard_name") == FIELD_ATTRS[name][0] and var.attrs["long_name"]
            for k, t in enumerate(TIMES):
                value = var.values if name in STATIC else var.values[k]
                np.testing.assert_array_equal(value, seen[t][name], err_msg=name)
    # decoded times are the origin plus the simulated seconds
    with xr.open_dataset(tmp_path / FILENAME) as ds:
        elapsed = (ds["time"].values - np.datetime64("2000-01-01")) / np.timedelta64(1, "ms")
        np.testing.assert_allclose(elapsed, np.array(TIMES) * 1e3, rtol=0, atol=1e-6)


def test_the_series_on_disk_is_readable_after_every_output(tmp_path):
    """Each write is synced: a reader sees every output so far while the run goes on."""
    sim = dam_break()
    netCDF4 = pytest.importorskip("netCDF4")
    with NetCDFSeries(tmp_path, sim) as series:
        for k, t in enumerate(TIMES):
            sim.run(t)
            series.write()
            with netCDF4.Dataset(tmp_path / FILENAME) as ds:
                assert ds.dimensions["time"].size == k + 1
                np.testing.assert_array_equal(ds["h1"][k], output_fields(sim)["h1"])


def test_the_series_holds_the_room_of_its_next_output_and_a_failed_write_is_one_line(
    tmp_path,
):
    """Issue 34, item 3: an output is written into disk space held for it (a hidden file
    that only a run in progress has), and a netCDF error that still comes (an I/O error) is
    one line naming the series, the close after it adding nothing."""
    sim = dam_break()
    failure = pytest.raises(OutputError, match=r"solution\.nc: cannot write \(NetCDF: HDF error\)$")
    with failure, NetCDFSeries(tmp_path, sim) as series:
        held = series.reserve.stat().st_size
        assert held >= 2 * 8 * sim.mesh.n_cells * len(FIELD_NAMES[2])
        series.write()
        assert series.reserve.stat().st_size == held

        def failed(t, fields):
            raise RuntimeError("NetCDF: HDF error")

        series._write = failed
        series.write()
    assert sorted(p.name for p in tmp_path.iterdir()) == [FILENAME]


def test_a_resumed_series_keeps_the_outputs_up_to_the_restart(tmp_path):
    """Outputs from ``resume_at`` on are dropped and the new ones appended, as after a restart
    (the runner writes the output at ``resume_at`` itself)."""
    sim = dam_break()
    first = write_series(tmp_path, sim)
    again = dam_break()
    again.run(TIMES[1])
    later = write_series(tmp_path, again, times=(0.01, 0.03), resume_at=TIMES[1])
    with xr.open_dataset(tmp_path / FILENAME, decode_times=False) as ds:
        np.testing.assert_array_equal(ds["time"].values, [0.0, 0.01, 0.03])
        np.testing.assert_array_equal(ds["eta2"].values[1], first[0.01]["eta2"])
        np.testing.assert_array_equal(ds["eta2"].values[1], later[0.01]["eta2"])
        np.testing.assert_array_equal(ds["eta2"].values[2], later[0.03]["eta2"])
    assert not list(tmp_path.glob(".*"))  # no temporary file left behind


def test_a_restarted_cli_run_leaves_the_same_netcdf_series_as_an_uninterrupted_one(
    tmp_path, capsys
):
    """A restart continues the NetCDF series bit for bit; the summary names the series
    written (solution.nc), not an XDMF index that is not there."""
    from fvswe.cli import main
    from fvswe.mesh import write_mesh

    write_mesh(structured_square(8), tmp_path / "square.npz")
    common = ["test2", "--mesh", str(tmp_path / "square.npz"), "--backend", "cpu", "-q",
              "--format", "netcdf", "--output-every", "0.3"]  # fmt: skip
    whole, part = tmp_path / "whole", tmp_path / "part"
    assert main(["run", *common, "-o", str(whole), "--t-end", "0.9"]) == 0
    said = capsys.readouterr().out
    assert f"outputs in {whole}/ (NetCDF: {whole / FILENAME})" in said and ".xdmf" not in said
    assert (
        main(["run", *common, "-o", str(part), "--t-end", "0.6", "--checkpoint-every", "0.25"]) == 0
    )
    checkpoint = str(part / "checkpoint.npz")
    assert main(["run", *common, "-o", str(part), "--t-end", "0.9", "--restart", checkpoint]) == 0
    with (
        xr.open_dataset(whole / FILENAME, decode_times=False) as a,
        xr.open_dataset(part / FILENAME, decode_times=False) as b,
    ):
        np.testing.assert_array_equal(b["time"].values, [0.0, 0.3, 0.6, 0.9])
        for name in ("time", *FIELD_NAMES[2]):
            np.testing.assert_array_equal(b[name].values, a[name].values, err_msg=name)


def test_a_restart_continues_only_its_own_runs_netcdf_series(tmp_path, capsys):
    """Issue 34, item 2: a restart into a folder whose solution.nc another run wrote (another
    scheme on the same mesh, or another mesh) is refused in one line naming the file and the
    key, before anything is written; the folder is left as it was."""
    from fvswe.cli import main
    from fvswe.mesh import write_mesh

    write_mesh(structured_square(2), tmp_path / "a.npz")
    write_mesh(structured_square(4), tmp_path / "b.npz")
    common = ["test1", "--backend", "cpu", "-q", "--format", "netcdf", "--t-end", "0.01",
              "--checkpoint-every", "0.005"]  # fmt: skip
    runs = {"mine": ["a.npz"], "roe": ["a.npz", "--scheme", "roe"], "mesh": ["b.npz"]}
    for name, (mesh, *flags) in runs.items():
        argv = [*common, "--mesh", str(tmp_path / mesh), *flags, "-o", str(tmp_path / name)]
        assert main(["run", *argv]) == 0
    capsys.readouterr()
    before = {p.name: p.stat().st_mtime_ns for p in (tmp_path / "mine").iterdir()}
    for name, (mesh, *flags), key in (
        ("roe", runs["roe"], "scheme: 'ir-roe' in that run, 'roe' now"),
        ("mesh", runs["mesh"], "cells: 8 in"),
    ):
        checkpoint = str(tmp_path / name / "checkpoint.npz")
        argv = [*common, "--mesh", str(tmp_path / mesh), *flags, "--restart", checkpoint]
        assert main(["run", *argv, "--t-end", "0.02", "-o", str(tmp_path / "mine")]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and f"another run's results ({FILENAME}: {key}" in err, err
        assert {p.name: p.stat().st_mtime_ns for p in (tmp_path / "mine").iterdir()} == before


def test_a_failing_netcdf_series_leaves_no_temporary(tmp_path):
    """The hidden file a series is made under is removed when making it fails (here: the
    previous series has another mesh, which the CLI refuses before this point)."""
    write_series(tmp_path, dam_break(), times=(0.0,))
    other = Simulation(structured_square(4), layers=2, H=6.0, backend="cpu",
                       initial={"h1": 1.0, "h2": 5.0})  # fmt: skip
    with pytest.raises(ValueError), NetCDFSeries(tmp_path, other, resume_at=0.01):
        pass
    assert sorted(p.name for p in tmp_path.iterdir()) == [FILENAME]


def test_time_origin_and_crs_are_checked_and_written_readably(tmp_path, monkeypatch):
    """Issue 34, item 7: "next tuesday" and EPSG:banana were written (xarray could not open the
    first). An ISO date or date-time is written as CF's reference date (UTC); a CRS is
    EPSG:<code> or balanced WKT, and one that pyproj, where installed, rejects."""
    assert check_time_origin("2026-01-01", "k") == "2026-01-01 00:00:00"
    assert check_time_origin("2026-01-01T12:30:00+02:00", "k") == "2026-01-01 10:30:00"
    for bad in ("next tuesday", "2026-13-01", "", "1 Jan 2026"):
        with pytest.raises(ConfigError, match=r"^k: expected an ISO date or date-time"):
            check_time_origin(bad, "k")
    wkt = 'GEOGCRS["WGS 84 ]", DATUM["x", ELLIPSOID["y", 6378137, 298.257]]]'
    assert check_crs(" epsg:4326 ", "k") == "epsg:4326" and check_crs(wkt, "k") == wkt
    for bad in ("EPSG:banana", "EPSG:", "4326", "WGS 84", wkt[:-1], wkt + "]", "GEOGCRS[]x"):
        with pytest.raises(ConfigError, match=r"^k: expected EPSG:<code> .* or WKT, got"):
            check_crs(bad, "k")
    fake = types.ModuleType("pyproj")  # pyproj is optional: its verdict where installed
    fake.exceptions = types.SimpleNamespace(CRSError=ValueError)
    fake.CRS = types.SimpleNamespace(from_user_input=lambda t: int(t[5:]) < 99999 or fake_error())
    monkeypatch.setitem(sys.modules, "pyproj", fake)
    assert check_crs("EPSG:4326", "k") == "EPSG:4326"
    with pytest.raises(ConfigError, match=r"^k: 'EPSG:999999' is no CRS pyproj knows \(unknown"):
        check_crs("EPSG:999999", "k")
    monkeypatch.delitem(sys.modules, "pyproj")
    write_series(tmp_path, dam_break(), times=(0.0, 0.01), time_origin="2000-01-01T02:00+02:00")
    with xr.open_dataset(tmp_path / FILENAME) as ds:
        assert ds["time"].values[0] == np.datetime64("2000-01-01T00:00:00")


def fake_error():
    raise ValueError("unknown code")


def test_geographic_crs_is_recognised_and_projected_not(monkeypatch):
    """Issue 32: a lon/lat mesh ran its degrees as metres; a geographic CRS (EPSG code, WKT
    keyword, or pyproj's verdict where installed) is recognised (the run is then solved on
    the sphere, tests/test_sphere.py), a projected one not."""
    for good in ("EPSG:32631", "EPSG:2154", 'PROJCRS["x", CS[]]'):
        assert not is_geographic(good)
    for bad in ("EPSG:4326", " epsg:4258", 'GEOGCRS["WGS 84"]', 'GEOGCS["x"]'):
        assert is_geographic(bad)
    fake = types.ModuleType("pyproj")
    fake.CRS = types.SimpleNamespace(
        from_user_input=lambda t: types.SimpleNamespace(is_geographic=t == "EPSG:4167")
    )
    monkeypatch.setitem(sys.modules, "pyproj", fake)
    assert not is_geographic("EPSG:32631")
    assert is_geographic("EPSG:4167")
