"""Raster inputs (fvswe/raster.py): exact on bilinear fields, bad files named in one line."""

from __future__ import annotations

import io
import zipfile

import numpy as np
import pytest

from fvswe import casefile
from fvswe.errors import ConfigError
from fvswe.mesh.generate import structured_square
from fvswe.raster import Raster, raster_field, read_raster, sample
from fvswe.simulation import Simulation

xr = pytest.importorskip("xarray")  # the netcdf extra; dev installs it

X = np.array([-6.0, -4.5, -1.0, 0.0, 2.5, 3.0, 6.0])  # uneven spacing on purpose
Y = np.array([-5.5, -2.0, 1.0, 1.5, 5.5])


def bilinear(x, y):
    """A field bilinear in (x, y): on every grid cell bilinear interpolation is exact."""
    return 3.0 + 0.5 * x - 0.25 * y + 0.125 * x * y


def smooth(x, y):
    return np.sin(x) * np.cos(0.5 * y)


@pytest.fixture(scope="module")
def mesh():
    return structured_square(8)  # [-5, 5]^2: inside the rasters


def one_line(exc: pytest.ExceptionInfo, *parts: str) -> None:
    message = str(exc.value)
    assert "\n" not in message
    for part in parts:
        assert part in message, (part, message)


def write_nc(path, x, y, values, name="depth", names=("x", "y"), transpose=False):
    """``values[y, x]`` as a NetCDF variable over the coordinates ``names`` (stored in
    (x, y) order when ``transpose``)."""
    xn, yn = names
    var = ((xn, yn), values.T) if transpose else ((yn, xn), values)
    xr.Dataset({name: var}, coords={xn: x, yn: y}).to_netcdf(path)
    return path


def test_bilinear_is_exact_on_a_bilinear_field():
    gx, gy = np.meshgrid(X, Y)
    raster = Raster.from_arrays(X, Y, bilinear(gx, gy))
    rng = np.random.default_rng(3)
    x, y = rng.uniform(-6, 6, 500), rng.uniform(-5.5, 5.5, 500)
    x[:3], y[:3] = X[[0, -1, 3]], Y[[0, -1, 2]]  # corners and interior nodes
    np.testing.assert_allclose(sample(raster, x, y), bilinear(x, y), rtol=0, atol=1e-13)


def test_nearest_takes_the_nearest_node():
    gx, gy = np.meshgrid(X, Y)
    raster = Raster.from_arrays(X, Y, smooth(gx, gy))
    rng = np.random.default_rng(4)
    x, y = rng.uniform(-6, 6, 300), rng.uniform(-5.5, 5.5, 300)
    i = np.abs(x[:, None] - X[None, :]).argmin(axis=1)
    j = np.abs(y[:, None] - Y[None, :]).argmin(axis=1)
    np.testing.assert_array_equal(sample(raster, x, y, "nearest"), smooth(X[i], Y[j]))


def test_bilinear_error_falls_as_h_squared_on_a_smooth_field():
    """Second order: halving the grid spacing divides the error by about 4."""
    rng = np.random.default_rng(5)
    x, y = rng.uniform(-4, 4, 400), rng.uniform(-4, 4, 400)
    errors = []
    for n in (20, 40, 80):
        gx1, gy1 = np.linspace(-5, 5, n + 1), np.linspace(-5, 5, n + 1)
        gx, gy = np.meshgrid(gx1, gy1)
        r = Raster.from_arrays(gx1, gy1, smooth(gx, gy))
        errors.append(np.abs(sample(r, x, y) - smooth(x, y)).max())
    assert 3.3 < errors[0] / errors[1] < 4.7 and 3.3 < errors[1] / errors[2] < 4.7


@pytest.mark.parametrize(
    ("names", "transpose"), [(("x", "y"), False), (("x", "y"), True), (("lon", "lat"), False)]
)
def test_netcdf_any_axis_order_and_decreasing_coordinates(tmp_path, names, transpose):
    y = Y[::-1]  # north-up: decreasing y
    gx, gy = np.meshgrid(X, y)
    path = write_nc(tmp_path / "bed.nc", X, y, bilinear(gx, gy), names=names, transpose=transpose)
    raster = read_raster(path, "depth")
    assert np.all(np.diff(raster.y) > 0)
    pts = np.array([[-5.0, 0.3], [2.7, -5.4], [5.9, 5.4]])
    np.testing.assert_allclose(sample(raster, *pts.T), bilinear(*pts.T), atol=1e-13)


def test_npz_and_simulation_H_from_a_raster(tmp_path, mesh):
    gx, gy = np.meshgrid(X, Y)
    path = tmp_path / "bed.npz"
    np.savez(path, x=X, y=Y, depth=bilinear(gx, gy))
    sim = Simulation(mesh, layers=1, scheme="hll", H=raster_field(path), initial={"h": 10.0})
    f = sim.fields()
    np.testing.assert_allclose(f["H"], bilinear(f["x"], f["y"]), rtol=0, atol=1e-13)


def test_case_file_raster_table(tmp_path, mesh):
    gx, gy = np.meshgrid(X, Y)
    (tmp_path / "data").mkdir()
    write_nc(tmp_path / "data" / "bed.nc", X, Y, bilinear(gx, gy))
    case = tmp_path / "case.toml"
    case.write_text(
        't_end = 0.1\nlayers = 1\n[initial]\nH = {raster = "data/bed.nc", variable = "depth"}\n'
        'h = {raster = "data/bed.nc", method = "nearest"}\nu = "0.1 * H"\n'
    )
    H, initial = casefile.load(case).initial_fields(mesh)
    x, y = mesh.centroid.T
    np.testing.assert_allclose(H, bilinear(x, y), rtol=0, atol=1e-13)
    i = np.abs(x[:, None] - X[None, :]).argmin(axis=1)
    j = np.abs(y[:, None] - Y[None, :]).argmin(axis=1)
    np.testing.assert_array_equal(initial["h"], bilinear(X[i], Y[j]))
    np.testing.assert_allclose(initial["qx"], 0.1 * H * initial["h"], rtol=1e-15)


def test_bad_rasters_are_named_in_one_line(tmp_path, mesh):
    gx, gy = np.meshgrid(X, Y)
    nc = write_nc(tmp_path / "bed.nc", X, Y, bilinear(gx, gy))
    with pytest.raises(ConfigError) as exc:
        read_raster(nc, "bathy")
    one_line(exc, str(nc), "no variable 'bathy'", "depth")
    with pytest.raises(ConfigError) as exc:
        read_raster(tmp_path / "nope.nc")
    one_line(exc, "nope.nc", "no such raster file")
    (tmp_path / "bed.tif").write_bytes(b"II*")
    with pytest.raises(ConfigError) as exc:
        read_raster(tmp_path / "bed.tif")
    one_line(exc, "bed.tif", "unknown raster format")
    small = Raster.from_arrays([-1.0, 1.0], [-1.0, 1.0], np.zeros((2, 2)), "small.nc:depth")
    with pytest.raises(ConfigError) as exc:
        Simulation(mesh, layers=1, H=lambda x, y: sample(small, x, y), initial={"h": 1.0})
    one_line(exc, "small.nc:depth", "outside the raster", "cell 0")
    holes = bilinear(gx, gy)
    holes[2, 3] = np.nan
    nan = write_nc(tmp_path / "holes.nc", X, Y, holes)
    with pytest.raises(ConfigError) as exc:
        sample(read_raster(nan), [0.1, -0.2, 3.0], [1.2, 1.3, 1.2])
    one_line(exc, "holes.nc:depth", "not finite (nan) where cell 0", "(2 cells)")
    holes[2, 3] = np.inf  # issue 34, item 6: +inf passed, and the run blew up after writing
    np.savez(tmp_path / "inf.npz", x=X, y=Y, depth=holes)
    for method, value in (("nearest", "inf"), ("bilinear", "")):
        with pytest.raises(ConfigError) as exc:
            sample(read_raster(tmp_path / "inf.npz"), [0.1, 3.0], [1.2, 1.2], method)
        one_line(exc, "inf.npz:depth", f"not finite ({value}", "where cell 0")
    huge = tmp_path / "huge.npz"  # issue 34, item 5: a header claiming 320 GB named no file
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        header, {"descr": "<f8", "fortran_order": False, "shape": (200_000, 200_000)}
    )
    with zipfile.ZipFile(huge, "w") as z:
        for axis, values in (("x", X), ("y", Y)):
            buf = io.BytesIO()
            np.save(buf, values)
            z.writestr(f"{axis}.npy", buf.getvalue())
        z.writestr("depth.npy", header.getvalue() + bytes(64))
    with pytest.raises(ConfigError) as exc:  # MemoryError, or EOF where memory overcommits
        read_raster(huge)
    one_line(exc, str(huge))
    np.savez(tmp_path / "nocoord.npz", x=X, depth=bilinear(gx, gy))
    with pytest.raises(ConfigError) as exc:
        read_raster(tmp_path / "nocoord.npz")
    one_line(exc, "nocoord.npz", "missing coordinate array 'y'")
    np.savez(tmp_path / "shape.npz", x=X, y=Y, depth=bilinear(gx, gy).T)
    with pytest.raises(ConfigError) as exc:
        read_raster(tmp_path / "shape.npz")
    one_line(exc, "shape.npz:depth", "shape (len(y), len(x)) = (5, 7)")
    with pytest.raises(ConfigError) as exc:
        raster_field(nc, method="cubic")
    one_line(exc, "bed.nc:depth", "unknown interpolation 'cubic'")
    case = tmp_path / "case.toml"
    case.write_text('t_end = 1\nlayers = 1\n[initial]\nH = {file = "bed.nc"}\n')
    with pytest.raises(ConfigError) as exc:
        casefile.load(case)
    one_line(exc, str(case), "unknown key 'initial.H.file'")


def test_cli_run_stops_on_a_raster_that_does_not_cover_the_mesh(tmp_path, capsys):
    """`fvswe run`: one line on stderr naming the raster and the cell, status 2, no output."""
    from fvswe.cli import main

    np.savez(tmp_path / "bed.npz", x=[-1.0, 1.0], y=[-1.0, 1.0], depth=np.ones((2, 2)))
    case = tmp_path / "case.toml"
    case.write_text(
        't_end = 0.01\nlayers = 1\n[mesh]\ngenerator = "structured_square"\nn = 4\n'
        '[initial]\nH = {raster = "bed.npz"}\nh = "H"\n'
    )
    out = tmp_path / "out"
    assert main(["run", str(case), "-o", str(out), "--backend", "cpu"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "bed.npz:depth: cell 0 at" in err and "outside the raster" in err
    assert not out.exists()
