"""Domain decomposition (fvswe.partition): parts, halos, exchange lists and part Layouts.

Checked against the mesh's own adjacency, independently of how the parts are built;
no MPI needed.
"""

from __future__ import annotations

import json

import numba
import numpy as np
import pytest

from fvswe.backends.layout import Layout
from fvswe.boundary import edge_conditions
from fvswe.cli import main
from fvswe.errors import ConfigError
from fvswe.mesh import family
from fvswe.mesh.generate import structured_square
from fvswe.model import Model
from fvswe.partition import assign, split, stats

pytest.importorskip("pymetis", reason="pymetis is not installed (pip install 'fvswe[mpi]')")


@pytest.fixture(scope="module", params=["square-4k", "square-8x8"])
def mesh(request):
    return family(4000) if request.param == "square-4k" else structured_square(8)


@pytest.mark.parametrize("method", ["metis", "hilbert"])
@pytest.mark.parametrize("nparts", [1, 3, 4])
def test_parts_cover_the_mesh_with_one_halo_layer(mesh, method, nparts):
    part = assign(mesh, nparts, method)
    parts = split(mesh, part)
    assert np.array_equal(np.bincount(part, minlength=nparts) > 0, np.ones(nparts, bool))
    adj = mesh.adjacency()
    owned_total = np.zeros(mesh.n_cells, dtype=int)
    for p in parts:
        owned = p.cells[: p.n_owned]
        owned_total[owned] += 1
        assert np.array_equal(np.sort(owned), np.flatnonzero(part == p.index))
        neighbours = np.unique(adj[owned].indices)
        halo = np.setdiff1d(neighbours, owned)
        assert np.array_equal(np.sort(p.cells[p.n_owned :]), halo)
        # interior cells touch no halo cell, border cells do
        for start, stop, touches in ((0, p.n_interior, False), (p.n_interior, p.n_owned, True)):
            for c in p.cells[start:stop]:
                assert bool(np.isin(adj[c].indices, halo).any()) is touches
        # local edges: every edge with an owned side; the first n_owned_edges have side i owned
        ec = mesh.edge_cells
        mine = np.isin(ec[:, 0], owned) | np.isin(ec[:, 1], owned)
        assert np.array_equal(np.sort(p.edges), np.flatnonzero(mine))
        assert np.isin(ec[p.edges[: p.n_owned_edges], 0], owned).all()
        assert not np.isin(ec[p.edges[p.n_owned_edges :], 0], owned).any()
    assert np.array_equal(owned_total, np.ones(mesh.n_cells, dtype=int))
    assert sum(p.n_owned_edges for p in parts) == mesh.n_edges
    if method == "hilbert":  # equal runs of the curve
        sizes = np.bincount(part)
        assert sizes.max() - sizes.min() <= 1


@pytest.mark.parametrize("method", ["metis", "hilbert"])
def test_exchange_lists_match_between_neighbours(mesh, method):
    parts = split(mesh, assign(mesh, 4, method))
    for p in parts:
        for q, send, recv in zip(p.peers, p.send, p.recv, strict=True):
            other = parts[q]
            k = other.peers.index(p.index)
            # what p sends to q is, cell by cell, what q receives from p
            assert np.array_equal(p.cells[send], other.cells[other.recv[k]])
            assert np.array_equal(p.cells[recv], other.cells[other.send[k]])
            assert (send < p.n_owned).all() and (recv >= p.n_owned).all()
            assert (send >= p.n_interior).all()  # only border cells are sent
        got = np.sort(np.concatenate(p.recv)) if p.peers else np.empty(0, int)
        assert np.array_equal(got, np.arange(p.n_owned, p.cells.size))


def test_part_layout_sums_the_same_edges_in_the_same_slots(mesh):
    """Each owned cell's slots hold the same global edges, sides, normals and lengths."""
    model = Model(layers=1)
    W0 = np.random.default_rng(1).random((mesh.n_cells, 3))
    lay = Layout.build(mesh, model, W0, np.ones(mesh.n_cells), edge_conditions(mesh), np.float64)
    for p in split(mesh, assign(mesh, 3, "metis")):
        loc = lay.part(p)
        n = p.n_owned
        assert (loc.owned_cells, loc.owned_edges) == (n, p.n_owned_edges)
        assert np.array_equal(loc.W0, W0[p.cells]) and np.array_equal(loc.area, lay.area[p.cells])
        glob_edges = p.edges[loc.cell_edges[:n]]
        assert np.array_equal(glob_edges, lay.cell_edges[p.cells[:n]])
        assert np.array_equal(loc.cell_side[:n], lay.cell_side[p.cells[:n]])
        assert np.array_equal(loc.edge_normal, lay.edge_normal[p.edges])
        ec = loc.edge_cells
        back = np.where(ec >= 0, p.cells[np.maximum(ec, 0)], -1)
        assert np.array_equal(back, lay.edge_cells[p.edges])


def test_a_part_has_the_argument_types_of_one_process(mesh):
    """A rank's passes take arguments of one process's Numba types, read-only flags included
    (a part's arrays are copies, the whole layout's the mesh's read-only views): otherwise
    the first ``mpiexec`` run compiles every pass again after a single-process run."""
    from fvswe.backends.cpu.pipeline import _arrays

    model = Model(layers=2)
    W0 = np.ones((mesh.n_cells, 6))
    lay = Layout.build(mesh, model, W0, np.ones(mesh.n_cells), edge_conditions(mesh), np.float64)
    whole = numba.typeof(_arrays(lay))
    for p in split(mesh, assign(mesh, 2, "hilbert")):
        assert numba.typeof(_arrays(lay.part(p))) == whole


def test_bad_partitions_are_one_line_errors():
    mesh = structured_square(2)
    with pytest.raises(ConfigError, match="cannot split 8 cells .* into 9 parts"):
        assign(mesh, 9)
    with pytest.raises(ConfigError, match="unknown method 'kway'"):
        assign(mesh, 2, "kway")


def test_mesh_partition_cli_reports_and_draws(tmp_path, capsys):
    png = tmp_path / "parts.png"
    assert main(["mesh", "partition", "square-4k", "-n", "4", "--png", str(png), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    mesh = family(4000)
    part = assign(mesh, 4, "metis")
    assert info == json.loads(
        json.dumps(stats(mesh, part, split(mesh, part)) | {"method": "metis", "order": "none"})
    )
    assert sum(info["owned"]) == 4000 and info["imbalance"] < 1.05
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert main(["mesh", "partition", "square-4k", "-n", "3", "--method", "hilbert"]) == 0
    out = capsys.readouterr().out
    assert "4000 cells in 3 parts (hilbert)" in out and "edge cut" in out
