"""Reading meshes from files, the errors bad files give, and the ``fvswe mesh`` CLI."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import meshio
import numpy as np
import pytest

import fvswe
from fvswe.cli import main
from fvswe.errors import ConfigError, MeshError
from fvswe.mesh import bandwidth, read_mesh, write_mesh
from fvswe.mesh.generate import square

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def small():
    return square(200, seed=4)


def write_gmsh(path, points, blocks, physical=None, names=None):
    """A gmsh 2.2 file with optional physical ids per block and names (name -> (id, dim))."""
    cell_data = {}
    if physical is not None:
        cell_data = {"gmsh:physical": physical, "gmsh:geometrical": physical}
    field_data = {n: np.array(v) for n, v in (names or {}).items()}
    m = meshio.Mesh(points, blocks, cell_data=cell_data, field_data=field_data)
    meshio.write(path, m, file_format="gmsh22", binary=False)


def write_gmsh41(path, nodes, triangles, lines, line_phys, names, surface_tag):
    """Gmsh 4.1 ASCII as gmsh writes it: one surface entity, a curve entity per line group."""
    groups = sorted(set(line_phys.tolist()))
    out = ["$MeshFormat", "4.1 0 8", "$EndMeshFormat", "$PhysicalNames", str(len(names))]
    out += [f'{dim} {tag} "{name}"' for name, (tag, dim) in names.items()]
    out += ["$EndPhysicalNames", "$Entities", f"0 {len(groups)} 1 0"]
    box = "-5 -5 0 5 5 0"
    out += [f"{c + 1} {box} 1 {g} 0" for c, g in enumerate(groups)]
    out += [
        f"1 {box} 1 {surface_tag} 0",
        "$EndEntities",
        "$Nodes",
        f"1 {len(nodes)} 1 {len(nodes)}",
        f"2 1 0 {len(nodes)}",
    ]
    out += [str(i + 1) for i in range(len(nodes))]
    out += [f"{x:.17g} {y:.17g} 0" for x, y in nodes]
    n_el = len(lines) + len(triangles)
    out += ["$EndNodes", "$Elements", f"{len(groups) + 1} {n_el} 1 {n_el}"]
    tag = 1
    for c, g in enumerate(groups):
        sel = lines[line_phys == g]
        out.append(f"1 {c + 1} 1 {len(sel)}")
        for a, b in sel:
            out.append(f"{tag} {a + 1} {b + 1}")
            tag += 1
    out.append(f"2 1 2 {len(triangles)}")
    for a, b, c in triangles:
        out.append(f"{tag} {a + 1} {b + 1} {c + 1}")
        tag += 1
    out.append("$EndElements")
    path.write_text("\n".join(out) + "\n")


def pts3(mesh):
    return np.column_stack([mesh.nodes, np.zeros(mesh.n_nodes)])


def test_gmsh_physical_groups_become_tags(tmp_path, small):
    bnd = small.edge_nodes[small.boundary]
    x = small.nodes[bnd].mean(axis=1)
    west = bnd[x[:, 0] < -4.99]
    east = bnd[x[:, 0] > 4.99]
    path = tmp_path / "tagged.msh"
    blocks = [("line", west), ("line", east), ("triangle", small.cells)]
    phys = [np.full(len(west), 7), np.full(len(east), 3), np.zeros(small.n_cells, int)]
    write_gmsh(path, pts3(small), blocks, phys, {"inflow": (7, 1), "outflow": (3, 1)})
    m = fvswe.read_mesh(path)
    counts = {n: int((m.edge_tag == t).sum()) for n, t in m.tags.items()}
    n_b = int(small.boundary.sum())
    assert counts == {
        "outflow": len(east),
        "inflow": len(west),
        "wall": n_b - len(east) - len(west),
    }
    assert np.array_equal(m.cells, small.cells) and m.depth is None
    # the tagged edges are where the file put them
    tagged = m.nodes[m.edge_nodes[m.edge_tag == m.tags["inflow"]]].mean(axis=1)
    assert np.all(tagged[:, 0] < -4.99)


def test_gmsh41_physical_groups_become_tags(tmp_path, small):
    bnd = small.edge_nodes[small.boundary]
    y = small.nodes[bnd].mean(axis=1)[:, 1]
    group = np.where(y > 4.99, 5, np.where(y < -4.99, 6, 0))
    path = tmp_path / "v41.msh"
    names = {"north": (5, 1), "south": (6, 1), "water": (9, 2)}
    write_gmsh41(path, small.nodes, small.cells, bnd[group > 0], group[group > 0], names, 9)
    m = read_mesh(path)
    counts = {n: int((m.edge_tag == t).sum()) for n, t in m.tags.items()}
    assert counts == {
        "north": int((group == 5).sum()),
        "south": int((group == 6).sum()),
        "wall": int((group == 0).sum()),
    }
    assert np.array_equal(m.cells, small.cells)


@pytest.mark.parametrize("suffix", [".vtu", ".vtk", ".xdmf", ".mesh", ".obj", ".msh", ".npz"])
def test_every_format_reads_back_the_same_mesh(tmp_path, small, suffix):
    path = tmp_path / f"m{suffix}"
    write_mesh(small, path)
    m = read_mesh(path)
    assert np.allclose(m.nodes, small.nodes, rtol=0, atol=1e-12)
    assert np.array_equal(m.cells, small.cells)
    assert m.source == str(path) and bandwidth(m) == bandwidth(small)


def test_depth_from_z_and_from_a_field(tmp_path, small):
    z = small.nodes[:, 0] ** 2
    path = tmp_path / "z.vtu"
    meshio.write(path, meshio.Mesh(np.column_stack([small.nodes, z]), [("triangle", small.cells)]))
    assert np.allclose(read_mesh(path, bathymetry="z:depth").depth, z[small.cells].mean(axis=1))
    path = tmp_path / "field.vtu"
    cell_h = np.arange(small.n_cells, dtype=float)
    meshio.write(
        path,
        meshio.Mesh(pts3(small), [("triangle", small.cells)], cell_data={"Bathymetry": [cell_h]}),
    )
    assert np.array_equal(read_mesh(path, bathymetry="Bathymetry:depth").depth, cell_h)
    reordered, perm = read_mesh(path, bathymetry="Bathymetry:depth").reordered("rcm")
    assert np.array_equal(reordered.depth, cell_h[perm])
    write_mesh(reordered, tmp_path / "reordered.npz")
    assert np.array_equal(read_mesh(tmp_path / "reordered.npz").depth, cell_h[perm])


def test_quads_are_read(tmp_path):
    x, y = np.meshgrid(np.arange(4.0), np.arange(3.0), indexing="ij")
    pts = np.stack([x.ravel(), y.ravel(), 0 * x.ravel()], 1)
    n00 = np.array([0, 1, 3, 4, 6, 7])
    quads = np.stack([n00, n00 + 3, n00 + 4, n00 + 1], 1)
    path = tmp_path / "q.vtu"
    meshio.write(path, meshio.Mesh(pts, [("quad", quads)]))
    m = read_mesh(path)
    assert m.k == 4 and m.n_cells == 6 and m.area.sum() == pytest.approx(6.0)


def bad_files(tmp_path, small):
    """(name, file, words the one-line error must contain) for every bad-input case."""
    p, c = pts3(small), small.cells
    cases = []
    f = tmp_path / "lines.msh"
    write_gmsh(f, p, [("line", small.edge_nodes[:5])])
    cases.append(("no triangles", f, ["no triangles"]))
    f = tmp_path / "nan.vtu"
    q = p.copy()
    q[17, 0] = np.nan
    meshio.write(f, meshio.Mesh(q, [("triangle", c)]))
    cases.append(("nan", f, ["nodes 17", "NaN"]))
    f = tmp_path / "inf.npz"
    np.savez(f, nodes=np.where(np.arange(len(p))[:, None] == 5, np.inf, p[:, :2]), cells=c)
    cases.append(("inf", f, ["nodes 5", "infinite"]))
    f = tmp_path / "flat.vtu"
    q = p.copy()
    a, b, d = c[11]
    q[d, :2] = 0.5 * (q[a, :2] + q[b, :2])  # cell 11 becomes a segment
    meshio.write(f, meshio.Mesh(q, [("triangle", c)]))
    cases.append(("zero area", f, ["11", "zero area"]))
    f = tmp_path / "fold.vtu"
    a, b, _ = c[0]
    q = np.vstack([p, [[9.0, 9.0, 0.0]]])
    meshio.write(f, meshio.Mesh(q, [("triangle", np.vstack([c, [[a, b, len(p)]]]))]))
    cases.append(("edge shared by 3+", f, ["shared by 3 cells", "0, ", str(len(c))]))
    f = tmp_path / "range.npz"
    cc = c.copy()
    cc[42, 1] = len(p) + 10
    np.savez(f, nodes=p[:, :2], cells=cc)
    cases.append(("index out of range", f, ["cells 42", "outside"]))
    f = tmp_path / "garbage.msh"
    f.write_text("this is not a mesh\n")
    cases.append(("unreadable", f, ["cannot read"]))
    return cases


def test_bad_inputs_give_one_line_errors_naming_the_file(tmp_path, small):
    for name, path, words in bad_files(tmp_path, small):
        with pytest.raises(MeshError) as info:
            read_mesh(path)
        msg = str(info.value)
        assert "\n" not in msg and msg.startswith(str(path)), name
        for w in words:
            assert w in msg, (name, msg)


def test_mixed_cell_types_and_unknown_names_are_errors(tmp_path, small):
    path = tmp_path / "mixed.vtu"
    quad = np.array([[0, 1, 2, 3]])
    meshio.write(path, meshio.Mesh(pts3(small), [("triangle", small.cells), ("quad", quad)]))
    with pytest.raises(MeshError, match="mixes triangles and quads"):
        read_mesh(path)
    assert main(["mesh", "info", str(tmp_path / "square-5k")]) == 2


def test_bad_arrays_raise(small):
    with pytest.raises(MeshError, match="<arrays>: no triangles"):
        fvswe.Mesh.from_arrays(small.nodes, np.empty((0, 3), int))
    with pytest.raises(MeshError, match="cells 3 are degenerate"):
        cells = small.cells.copy()
        cells[3, 2] = cells[3, 0]
        fvswe.Mesh.from_arrays(small.nodes, cells)


def test_unused_and_duplicate_nodes_warn(small):
    nodes = np.vstack([small.nodes, [[7.0, 7.0]]])
    with pytest.warns(UserWarning, match="1 unused nodes"):
        m = fvswe.Mesh.from_arrays(nodes, small.cells)
    assert m.n_cells == small.n_cells
    node = int(np.bincount(small.cells.ravel()).argmax())  # an interior node of many cells
    nodes = np.vstack([small.nodes, small.nodes[node]])
    cells = small.cells.copy()
    first = np.flatnonzero((cells == node).any(axis=1))[0]
    cells[first, cells[first] == node] = small.n_nodes  # one cell uses the copy
    with pytest.warns(UserWarning, match="1 duplicate nodes"):
        m = fvswe.Mesh.from_arrays(nodes, cells)
    assert m.boundary.sum() == small.boundary.sum() + 4  # the copy splits two edges


def test_cli_info_json(capsys):
    assert main(["mesh", "info", "square-4k", "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert {"cells", "edges", "boundary_edges", "tags", "bandwidth"} <= set(info)
    assert info["cells"] == 4000 and info["tags"] == {"wall": info["boundary_edges"]}
    assert info["edges"] == (3 * 4000 + info["boundary_edges"]) // 2
    assert main(["mesh", "info", "square-4k", "--json", "--method", "rcm"]) == 0
    rcm = json.loads(capsys.readouterr().out)
    assert rcm["bandwidth"] < info["bandwidth"] / 10
    # the GPU block variant's cut edges: fewer in RCM order, at least the blocks' seams
    assert 0 < rcm["twice_evaluated"] < info["twice_evaluated"] <= 1
    assert rcm["twice_evaluated"] * rcm["edges"] >= 4000 // rcm["block_cells"]


def test_cli_bad_file_exits_2_with_one_line(tmp_path, small, capsys):
    cases = bad_files(tmp_path, small)
    capsys.readouterr()
    for _, path, _ in cases:
        out = tmp_path / "out.msh"
        assert main(["mesh", "reorder", str(path), str(out), "--method", "rcm"]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and str(path) in err
        assert not out.exists()


def test_cli_reorder_spy_generate(tmp_path, capsys):
    gen = tmp_path / "g.msh"
    assert main(["mesh", "generate", "square", "--cells", "700", "-o", str(gen)]) == 0
    assert read_mesh(gen).n_cells == 700
    out = tmp_path / "r.vtu"
    assert main(["mesh", "reorder", str(gen), str(out), "--method", "gps"]) == 0
    assert bandwidth(read_mesh(out)) == bandwidth(read_mesh(gen).reordered("gps")[0])
    png = tmp_path / "spy.png"
    assert main(["mesh", "spy", str(gen), "-o", str(png), "--method", "none", "rcm"]) == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    capsys.readouterr()


def test_cli_as_a_process(tmp_path):
    bad = tmp_path / "bad.vtu"
    bad.write_text("<VTKFile>")
    run = subprocess.run(
        [sys.executable, "-m", "fvswe", "mesh", "info", str(bad)],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert run.returncode == 2 and run.stderr.count("\n") == 1 and str(bad) in run.stderr


@pytest.mark.parametrize("action", ["info", "reorder", "spy"])
def test_a_negative_seed_is_a_one_line_usage_error(capsys, tmp_path, small, action):
    """``--seed -1`` (NumPy's generators take non-negative seeds only) was a 32-line
    traceback; now argparse's one line and exit 2, nothing written; the library's random
    ordering refuses it with a ConfigError."""
    argv = ["mesh", action, "square-4k", "--method", "random", "--seed", "-1"]
    argv += {"info": [], "reorder": [str(tmp_path / "out.npz")],
             "spy": ["-o", str(tmp_path / "out.png")]}[action]  # fmt: skip
    with pytest.raises(SystemExit) as stop:
        main(argv)
    err = capsys.readouterr().err
    assert stop.value.code == 2 and "Traceback" not in err
    assert err.count("\n") == 1 and "argument --seed: a non-negative integer, not '-1'" in err
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(ConfigError, match="seed: a non-negative integer"):
        small.reordered("random", seed=-1)


@pytest.mark.parametrize("name", ["parts.txt", "parts"])
def test_a_partition_picture_not_named_png_is_refused_first(capsys, tmp_path, name):
    """``fvswe mesh partition --png parts.txt`` was a 26-line matplotlib traceback after the
    partition, and ``--png DIR`` wrote ``DIR.png`` but reported ``DIR``: now one line naming
    the flag and the name, exit 2, before any work, nothing written."""
    argv = ["mesh", "partition", "square-4k", "--parts", "2", "--png", str(tmp_path / name)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    want = f"--png: {tmp_path / name}: not a .png name (the picture is a PNG file)"
    assert err == f"fvswe: error: {want}\n"
    assert list(tmp_path.iterdir()) == []
