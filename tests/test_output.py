"""Outputs: the XDMF series read back as ParaView would see it, final.npz, PNGs, atomic writes."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from meshio.xdmf import TimeSeriesReader

from fvswe import casefile, output, plot
from fvswe.cli import main
from fvswe.mesh import write_mesh
from fvswe.mesh.generate import strip, structured_square


@pytest.fixture(scope="module")
def two_layer_run(tmp_path_factory):
    """test1 on a 512-cell square, RCM-ordered, fields every 0.025 s, h1 and eta2 drawn."""
    d = tmp_path_factory.mktemp("run")
    write_mesh(structured_square(16), d / "square.npz")
    code = main(["run", "test1", "--mesh", str(d / "square.npz"), "--order", "rcm", "-o",
                 str(d / "out"), "--output-every", "0.025", "--png", "h1,eta2", "--backend",
                 "cpu", "-q"])  # fmt: skip
    assert code == 0
    return d / "out"


def read_series(path: Path):
    with TimeSeriesReader(path) as reader:
        points, cells = reader.read_points_cells()
        steps = [reader.read_data(k) for k in range(reader.num_steps)]
    return points, cells, [(t, cell_data) for t, _, cell_data in steps]


def test_xdmf_series_has_the_mesh_the_times_and_the_fields(two_layer_run):
    points, cells, steps = read_series(two_layer_run / "solution.xdmf")
    mesh = structured_square(16)
    np.testing.assert_array_equal(points[:, :2], mesh.nodes)
    np.testing.assert_array_equal(points[:, 2], 0.0)
    assert len(cells) == 1 and cells[0].type == "triangle"
    np.testing.assert_array_equal(cells[0].data, mesh.cells)  # original order despite RCM
    assert [t for t, _ in steps] == pytest.approx([0.0, 0.025, 0.05, 0.075, 0.1], abs=1e-15)
    for _, data in steps:
        assert sorted(data) == sorted(output.FIELD_NAMES[2])
        assert all(v[0].shape == (mesh.n_cells,) for v in data.values())
    first = {k: v[0] for k, v in steps[0][1].items()}
    x, y = mesh.centroid.T
    np.testing.assert_array_equal(first["h1"], np.where(np.hypot(x, y) > 1.5, 4.0, 0.5))
    np.testing.assert_array_equal(first["bathymetry"], 6.0)
    np.testing.assert_array_equal(first["eta1"], 0.0)  # test1 starts with a flat surface
    np.testing.assert_array_equal(first["u1"], 0.0)


def test_last_step_of_the_series_is_the_final_state(two_layer_run):
    _, _, steps = read_series(two_layer_run / "solution.xdmf")
    last = {k: v[0] for k, v in steps[-1][1].items()}
    with np.load(two_layer_run / "final.npz") as f:
        final = dict(f)
    np.testing.assert_array_equal(last["h1"], final["h1"])
    np.testing.assert_array_equal(last["h2"], final["h2"])
    np.testing.assert_allclose(last["eta1"], final["h1"] + final["h2"] - final["H"], atol=1e-14)
    np.testing.assert_allclose(last["eta2"], final["h2"] - final["H"], atol=1e-14)
    np.testing.assert_allclose(last["u2"], final["q2x"] / final["h2"], rtol=1e-13)  # h >> eps_h
    np.testing.assert_allclose(last["v1"], final["q1y"] / final["h1"], rtol=1e-13)
    assert np.abs(last["u1"]).max() > 0.01  # the dam broke


def test_png_snapshots_are_written_and_not_blank(two_layer_run):
    import matplotlib.image

    pngs = sorted((two_layer_run / "png").glob("*.png"))
    assert [p.name for p in pngs] == [f"snapshot_{k:04d}.png" for k in range(5)]
    image = matplotlib.image.imread(pngs[-1])
    assert image.shape[0] > 300 and image.shape[1] > 600  # two panels side by side
    colours = np.unique((image[..., :3] * 255).astype(np.uint8).reshape(-1, 3), axis=0)
    assert len(colours) > 200  # colour maps, colourbars and text, not a blank canvas
    assert not (two_layer_run / "png" / ".snapshot_0004.png").exists()


def test_one_layer_fields_and_velocity_desingularisation(tmp_path):
    spec = casefile.load(Path(__file__).resolve().parents[1] / "examples" / "dambreak.toml")
    sim = spec.with_overrides(backend="cpu").simulation(strip(20, 1, x0=-10, x1=10))
    sim.run(0.5)
    fields = output.output_fields(sim)
    assert sorted(fields) == sorted(output.FIELD_NAMES[1])
    state = sim.fields()
    np.testing.assert_allclose(fields["u"], state["qx"] / state["h"], rtol=1e-13)
    np.testing.assert_allclose(fields["eta"], state["h"], rtol=0, atol=0)  # flat bed, H = 0
    h = np.array([0.0, 1e-4, 5e-3, 1.0])
    u = output.velocity(h, 2 * h, 5e-3)
    assert u[0] == 0 and 0 < u[1] < 2 and u[2:] == pytest.approx(2, rel=1e-15)


def test_plot_snapshot_of_a_quad_mesh(tmp_path):
    """Quads are drawn as two triangles carrying the cell's value."""
    import matplotlib.image

    nodes = np.array([[0, 0], [1, 0], [2, 0], [0, 1], [1, 1], [2, 1]], dtype=float)
    cells = np.array([[0, 1, 4, 3], [1, 2, 5, 4]])
    path = plot.draw(nodes, cells, {"h": np.array([1.0, 2.0])}, tmp_path / "q.png", t=1.0)
    assert matplotlib.image.imread(path).std() > 0.05


def test_atomic_write_leaves_nothing_when_the_writer_fails(tmp_path):
    def broken(path):
        Path(path).write_text("half")
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError):
        output.atomic_write(tmp_path / "summary.json", broken)
    assert list(tmp_path.iterdir()) == []
