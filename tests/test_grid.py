"""The Cartesian adapter: grid -> Mesh of quads, 2-D views, grid cases and their CLI outputs."""

from __future__ import annotations

import json

import numpy as np
import pytest

from fvswe.cases import get_case
from fvswe.cli import main
from fvswe.errors import ConfigError
from fvswe.grid import Grid


def test_cells_are_row_major_quads_with_side_tags():
    g = Grid(5, 3, 0.3, 0.7, origin=(-1.0, 2.0))
    m = g.mesh()
    assert m.k == 4 and m.n_cells == 15 and m.n_edges == 5 * 4 + 6 * 3
    np.testing.assert_allclose(m.area, 0.3 * 0.7, rtol=1e-14)
    X, Y = g.centres()
    # cell (ix, iy) is iy * nx + ix, so a reshape gives (ny, nx) fields
    np.testing.assert_allclose(g.as_array(m.centroid[:, 0]), X, rtol=0, atol=1e-14)
    np.testing.assert_allclose(g.as_array(m.centroid[:, 1]), Y, rtol=0, atol=1e-14)
    assert g.x[0] == pytest.approx(-0.85) and g.y[-1] == pytest.approx(2.0 + 2.5 * 0.7)
    expect = {
        "west": ((-1, 0), 3),
        "east": ((1, 0), 3),
        "south": ((0, -1), 5),
        "north": ((0, 1), 5),
    }
    assert set(m.tags) == set(expect)
    for name, (normal, count) in expect.items():
        sel = m.edge_tag == m.tags[name]
        assert sel.sum() == count
        assert np.array_equal(m.edge_normal[sel], np.tile(normal, (count, 1)))
        assert np.all(m.edge_cells[sel, 1] == -1)


def test_a_column_of_cells_shares_its_centroids_x_bit_for_bit():
    """Cell heights that are no binary fractions (600/7, 1/3) differ row to row by round-off;
    a rectangle's centroid takes x from its width and y from its height alone, so a field
    given as a function of x (a bed) is uniform along y to the last bit, and the other way."""
    for g in (Grid(24, 7, 25.0, 600 / 7), Grid(61, 48, 200 / 61, 1 / 3, origin=(123.456, -7.89))):
        c = g.mesh().centroid
        x, y = g.as_array(c[:, 0]), g.as_array(c[:, 1])
        assert np.array_equal(x, np.broadcast_to(x[:1], x.shape))
        assert np.array_equal(y, np.broadcast_to(y[:, :1], y.shape))
        assert np.ptp(np.diff(g.y_nodes)) > 0  # the heights do differ by round-off


def test_arrays_round_trip_in_the_users_shape():
    g = Grid(4, 3, 1.0, 1.0)
    a = np.arange(12.0).reshape(3, 4)
    flat = g.from_array(a)
    assert flat.shape == (12,) and flat[1 * 4 + 2] == a[1, 2]
    view = g.as_array(flat)
    assert view.shape == (3, 4) and np.shares_memory(view, flat)
    assert np.array_equal(g.cell_values(a), flat)
    assert np.array_equal(
        g.cell_values(lambda x, y: 10 * y + x), g.from_array(10 * g.centres()[1] + g.centres()[0])
    )
    assert np.array_equal(g.cell_values(2.5), np.full(12, 2.5))
    depth = g.mesh(depth=lambda x, y: x).depth
    assert np.array_equal(depth, np.tile(g.x, 3))
    with pytest.raises(ConfigError, match=r"expected a \(3, 4\) array"):
        g.from_array(np.zeros((4, 3)))
    with pytest.raises(ConfigError, match="expected 12 cell values"):
        g.as_array(np.zeros(11))
    for bad in ({"nx": 0}, {"dy": -1.0}, {"nx": 2.5}):
        with pytest.raises(ConfigError, match="grid: "):
            Grid(**{"nx": 4, "ny": 3, "dx": 1.0, "dy": 1.0, **bad})


def test_grid_cases_take_a_size():
    case = get_case("cgrid-tide")
    assert case.grid().shape == (192, 192) and case.grid().dx == 600.0 / 192
    assert case.with_grid(48).grid().shape == (48, 48)
    assert case.with_grid(48, 4).grid().shape == (4, 48)
    assert get_case("mjos-drop").grid().dx == 0.3
    fine = get_case("mjos-drop").with_grid(448)  # fixed dt: same Courant number, same t_end
    assert fine.dt == pytest.approx(0.01 * 64 / 448) and fine.t_end == 50.0
    with pytest.raises(ConfigError, match="not a grid"):
        get_case("test1").with_grid(10)


def test_cli_grid_case_writes_grid_npz(capsys, tmp_path):
    out = tmp_path / "out"
    argv = ["run", "mjos-drop", "--nx", "16", "--t-end", "0.2", "--backend", "cpu",
            "-o", str(out), "--json", "-q"]  # fmt: skip
    assert main(argv) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["steps"] == 5 and report["cells"] == 256  # fixed dt 0.01 s * 64/16
    final = np.load(out / "final.npz")
    assert set(final.files) == {"x", "y", "area", "H", "h", "qx", "qy"}
    grid = np.load(out / "grid.npz")
    assert grid["x"].shape == (16,) and grid["y"].shape == (16,)
    for key in ("h", "qx", "qy", "H", "eta"):
        assert grid[key].shape == (16, 16)
    assert np.array_equal(grid["h"].ravel(), final["h"])
    assert float(grid["t"]) == 0.2


def test_cli_nx_needs_a_grid_case(capsys, tmp_path):
    assert main(["run", "test1", "--nx", "8", "-o", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "--nx/--ny" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "o").exists()
