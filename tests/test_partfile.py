"""Per-part mesh files (fvswe.partfile, ``fvswe mesh partition -o``; issue 28).

The key property: a rank that reads only its own part builds the layout that
``Layout.part`` cuts from the whole mesh's layout, bit for bit (areas, centroids,
normals, lengths, edge cells and slots, the slots' owners, boundary codes, the bed),
and the same :class:`~fvswe.partition.Part`. No MPI needed.
"""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from fvswe.backends.layout import Layout
from fvswe.boundary import Discharge, edge_conditions, level_tables
from fvswe.cli import main
from fvswe.errors import ConfigError, OutputError
from fvswe.grid import Grid
from fvswe.mesh import Mesh, family, write_mesh
from fvswe.mesh.generate import structured_square
from fvswe.mesh.io import read_mesh_with_note
from fvswe.model import Model
from fvswe.partfile import MANIFEST, part_name, read_manifest, read_part, tags_present, write_parts
from fvswe.partition import assign, split

pytest.importorskip("pymetis", reason="pymetis is not installed (pip install 'fvswe[mpi]')")

#: The left side takes a discharge (its table divided by the tag's whole length), the rest
#: are walls.
BOUNDARY = {"left": Discharge(Q=3.0), "wall": "wall"}


def _tagged(mesh: Mesh, name: str) -> Mesh:
    """``mesh`` with its left side tagged ``left`` and a bed varying per cell."""
    bnd = mesh.edge_nodes[mesh.boundary]
    x = mesh.nodes[bnd, 0]
    left = bnd[(x < mesh.nodes[:, 0].min() + 1e-9).all(axis=1)]
    depth = 10.0 + np.sin(mesh.centroid[:, 0] / 7.0) * np.cos(mesh.centroid[:, 1] / 5.0)
    return Mesh.from_arrays(mesh.nodes, mesh.cells, boundary_tags={"left": left},
                            depth=depth, source=name)  # fmt: skip


@pytest.fixture(scope="module", params=["square-4k", "structured-12", "grid-16x10"])
def mesh_file(request, tmp_path_factory):
    """A mesh file with two tags and a bathymetry: the family's 4000 triangles, 12 x 12
    squares of the structured generator (288 triangles), or 16 x 10 quads of a grid."""
    base = {"square-4k": lambda: family(4000), "structured-12": lambda: structured_square(12),
            "grid-16x10": lambda: Grid(16, 10, 1.0, 2.0).mesh()}[request.param]()  # fmt: skip
    path = tmp_path_factory.mktemp("mesh") / f"{request.param}.npz"
    write_mesh(_tagged(base, request.param), path)
    return path


def _bits(a, b) -> bool:
    """Whether two arrays are the same bits (dtype, shape and bytes; -0.0 and NaN included)."""
    a, b = np.asarray(a), np.asarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def _layout(mesh: Mesh, dtype, manifest=None, part=None) -> Layout:
    """A one-layer layout of ``mesh``: the bed from its depth, a state varying per cell, the
    boundary's codes and tables; ``mesh`` is ``part`` of a partition where ``manifest`` is
    given (the whole mesh's tags and their lengths)."""
    W0 = np.column_stack([mesh.depth, 0.1 * mesh.centroid[:, 0], -0.2 * mesh.centroid[:, 1]])
    present = None if manifest is None else tags_present(manifest)
    lengths = None if manifest is None else manifest["tag_length"]
    owned = None if part is None else (part.n_owned, part.n_owned_edges)
    return Layout.build(mesh, Model(layers=1), W0, mesh.depth,
                        edge_conditions(mesh, BOUNDARY, present), dtype,
                        levels=level_tables(mesh, BOUNDARY, 1, mesh.depth, lengths),
                        owned=owned)  # fmt: skip


CUTS = [(2, "metis", "hilbert"), (3, "metis", "rcm"), (3, "hilbert", "none")]


@pytest.mark.parametrize(("nparts", "method", "order"), CUTS)
def test_a_part_read_alone_gives_the_whole_layouts_part_bitwise(mesh_file, tmp_path, nparts,
                                                                method, order):  # fmt: skip
    out = tmp_path / "parts"
    args = ["mesh", "partition", str(mesh_file), "-n", str(nparts), "--method", method,
            "--order", order, "--bathymetry", "depth:depth", "-o", str(out), "--json"]  # fmt: skip
    assert main(args) == 0
    mesh = read_mesh_with_note(str(mesh_file), "depth:depth")[0]
    if order != "none":
        mesh = mesh.reordered(order)[0]
    parts = split(mesh, assign(mesh, nparts, method))
    manifest = read_manifest(out)
    assert (manifest["parts"], manifest["cells"], manifest["edges"]) == (
        nparts, mesh.n_cells, mesh.n_edges)  # fmt: skip
    assert (manifest["method"], manifest["order"], manifest["tags"]) == (method, order, mesh.tags)
    for dtype in (np.float64, np.float32):
        whole = _layout(mesh, dtype)
        for p in parts:
            local, part = read_part(out, p.index, nparts)
            for name in ("index", "n_interior", "n_owned", "n_owned_edges", "peers"):
                assert getattr(part, name) == getattr(p, name)
            assert _bits(part.cells, p.cells) and _bits(part.edges, p.edges)
            for a, b in zip(part.send + part.recv, p.send + p.recv, strict=True):
                assert _bits(a, b)
            assert _bits(local.centroid, mesh.centroid[p.cells])
            assert _bits(local.original_index, mesh.original_index[p.cells])
            assert _bits(local.nodes[local.cells], mesh.nodes[mesh.cells[p.cells]])
            assert _bits(local.nodes[local.edge_nodes], mesh.nodes[mesh.edge_nodes[p.edges]])
            mine, cut = _layout(local, dtype, manifest, part), whole.part(p)
            for name in ("W0", "H", "area", "edge_cells", "edge_normal", "edge_length",
                         "edge_slot", "edge_bc", "cell_edges", "cell_side"):  # fmt: skip
                assert _bits(getattr(mine, name), getattr(cut, name)), name
            assert (mine.owned_cells, mine.owned_edges) == (cut.owned_cells, cut.owned_edges)
            for name in ("edge_level", "offsets", "times", "values"):  # the discharge's q = Q/L
                assert _bits(getattr(mine.levels, name), getattr(cut.levels, name)), name
            assert mine.levels.names == cut.levels.names
    assert (whole.edge_bc != edge_conditions(mesh)).any()  # the level edges are in the parts


def test_reading_checks_version_ranks_and_checksum(tmp_path):
    mesh = _tagged(structured_square(6), "sq6")
    a, b = tmp_path / "a", tmp_path / "b"
    write_parts(mesh, split(mesh, assign(mesh, 2, "hilbert")), a, method="hilbert", order="none")
    write_parts(mesh, split(mesh, assign(mesh, 2, "metis")), b, method="metis", order="none")
    with pytest.raises(ConfigError, match=r"manifest.json: 2 parts for a run on 3 ranks"):
        read_part(a, 0, 3)
    with pytest.raises(ConfigError, match=r"no part 2 \(2 parts\)"):
        read_part(a, 2)
    shutil.copy(b / part_name(1), a / part_name(1))  # a part of another partition
    with pytest.raises(ConfigError, match=r"part-0001.npz: its SHA-256 is not the one"):
        read_part(a, 1, 2)
    read_part(a, 0, 2)  # the other part still reads
    manifest = json.loads((b / MANIFEST).read_text())
    (b / MANIFEST).write_text(json.dumps(manifest | {"version": 99}))
    with pytest.raises(ConfigError, match=r"manifest.json: format version 99, this fvswe reads 1"):
        read_part(b, 0)
    (b / MANIFEST).write_text(json.dumps({"format": "fvswe-parts", "version": 1, "parts": 2}))
    with pytest.raises(ConfigError, match=r"manifest.json: no cells, edges, order, tags, bou"):
        read_part(b, 0)
    with pytest.raises(ConfigError, match=r"manifest.json: no such file"):
        read_part(tmp_path, 0)


def test_writing_is_whole_or_nothing(tmp_path, monkeypatch):
    mesh = _tagged(structured_square(6), "sq6")
    parts = split(mesh, assign(mesh, 3, "hilbert"))
    out = tmp_path / "parts"
    write_parts(mesh, parts, out, method="hilbert", order="none")
    before = {f.name: f.read_bytes() for f in out.iterdir()}
    calls, savez = [], np.savez

    def full_disk(f, **arrays):  # the second part's file meets a full disk
        calls.append(1)
        if len(calls) == 2:
            raise OSError(28, "No space left on device")
        savez(f, **arrays)

    monkeypatch.setattr(np, "savez", full_disk)
    with pytest.raises(OutputError, match=r"parts: cannot write \(No space left on device\)"):
        write_parts(mesh, split(mesh, assign(mesh, 2, "hilbert")), out, method="hilbert",
                    order="none")  # fmt: skip
    monkeypatch.undo()
    assert {f.name: f.read_bytes() for f in out.iterdir()} == before  # the old partition stays
    assert [f.name for f in tmp_path.iterdir()] == ["parts"]  # no temporary folder left
    write_parts(mesh, split(mesh, assign(mesh, 2, "hilbert")), out, method="hilbert", order="none")
    assert read_manifest(out)["parts"] == 2 and not (out / part_name(2)).exists()
    assert sorted(f.name for f in tmp_path.iterdir()) == ["parts"]
    other = tmp_path / "results"
    other.mkdir()
    with pytest.raises(ConfigError, match=r"results: exists and is not a partition folder"):
        write_parts(mesh, parts, other, method="hilbert", order="none")
    with pytest.raises(ConfigError, match=r"folder .*nowhere does not exist"):
        write_parts(mesh, parts, tmp_path / "nowhere" / "p", method="hilbert", order="none")


def test_parts_need_ranks(tmp_path, capsys):
    """``fvswe run --parts DIR`` on one process: a one-line error (nothing is run)."""
    assert main(["run", "test1", "--parts", str(tmp_path), "-q"]) == 2
    err = capsys.readouterr().err
    assert (
        err
        == f"fvswe: error: --parts {tmp_path}: a run of one process has no parts (mpiexec -n P)\n"
    )


def test_partition_cli_refuses_a_folder_that_is_not_a_partition(tmp_path, capsys):
    """``-o`` onto an existing folder without a manifest: one line naming it, nothing written."""
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "keep.txt").write_text("mine")
    argv = ["mesh", "partition", "square-4k", "-n", "2", "-o", str(tmp_path / "results")]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "results: exists and is not a partition folder" in err
    assert sorted(f.name for f in tmp_path.rglob("*")) == ["keep.txt", "results"]


@pytest.mark.parametrize(
    ("pair", "said"),
    [
        ("west", "--periodic: expected TAG:TAG (e.g. west:east), got 'west'"),
        ("west:", "--periodic: expected TAG:TAG (e.g. west:east), got 'west:'"),
        ("north:south", "tag 'north'"),
    ],
)
def test_partition_cli_periodic_pairs_in_one_line(tmp_path, capsys, pair, said):
    """A malformed ``--periodic`` pair, or one the mesh lacks: one line, nothing written."""
    argv = ["mesh", "partition", "square-4k", "-n", "2", "--periodic", pair]
    assert main([*argv, "-o", str(tmp_path / "parts")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("fvswe: error: ") and err.count("\n") == 1 and said in err, err
    assert not list(tmp_path.iterdir())


def test_partition_cli_prints_a_case_meshs_warnings_as_lines(tmp_path, capsys):
    """A mesh warning (an unused node) while cutting a mesh file or a case file's mesh: one
    ``fvswe: warning:`` line on stderr each way, and the cut goes on."""
    from fvswe.mesh import Mesh, family, write_mesh

    mesh = family(4000)
    nodes = np.vstack([mesh.nodes, [[0.123, 0.456]]])  # a node no cell uses
    with pytest.warns(UserWarning, match="1 unused nodes"):
        write_mesh(Mesh.from_arrays(nodes, mesh.cells, source="m"), tmp_path / "m.npz")
    (tmp_path / "case.toml").write_text('t_end = 1.0\n[mesh]\nfile = "m.npz"\n')
    for given in ("m.npz", "case.toml"):
        assert main(["mesh", "partition", str(tmp_path / given), "-n", "2", "--json"]) == 0
        err = capsys.readouterr().err
        assert err.startswith("fvswe: warning: ") and "1 unused nodes" in err, err
        assert err.count("\n") == 1, err
