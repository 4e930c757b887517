"""Mesh topology, geometry, orderings, metrics, generators and the paper's family."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest

from fvswe.mesh import ORDERINGS, Mesh, bandwidth, family, profile, refine
from fvswe.mesh.generate import square, strip, structured_square
from fvswe.mesh.gps import gps_ordering
from fvswe.mesh.orderings import hilbert_key, morton_key

#: Paper's Table 3 (docs/CASES.md §A): cells -> (original, RCM, GPS) bandwidths.
PAPER_TABLE3 = {4000: (3786, 73, 62), 16000: (12000, 147, 126)}


def quad_grid(nx_: int, ny: int) -> Mesh:
    """A unit-spaced grid of ``nx_ x ny`` quads, slightly sheared so it is not trivial."""
    x, y = np.meshgrid(np.arange(nx_ + 1.0), np.arange(ny + 1.0), indexing="ij")
    nodes = np.stack([x.ravel() + 0.2 * y.ravel(), y.ravel()], axis=1)
    a, b = np.meshgrid(np.arange(nx_), np.arange(ny), indexing="ij")
    n00 = (a * (ny + 1) + b).ravel()
    cells = np.stack([n00, n00 + ny + 1, n00 + ny + 2, n00 + 1], axis=1)
    return Mesh.from_arrays(nodes, cells)


@pytest.fixture(scope="module")
def meshes() -> dict[str, Mesh]:
    base = square(600, seed=3)
    return {
        "square": base,
        "structured": structured_square(6),
        "strip": strip(12, 2),
        "quads": quad_grid(5, 4),
        "refined": refine(base),
    }


MESH_NAMES = ["square", "structured", "strip", "quads", "refined"]
DOMAIN_AREA = {"square": 100.0, "structured": 100.0, "strip": 2.0 / 12, "quads": 20.0}


def assert_same_mesh(a: Mesh, b: Mesh) -> None:
    for field in (
        "nodes",
        "cells",
        "area",
        "centroid",
        "edge_cells",
        "edge_nodes",
        "edge_normal",
        "edge_length",
        "edge_tag",
        "edge_slot",
        "original_index",
    ):
        assert np.array_equal(getattr(a, field), getattr(b, field)), field
    assert a.tags == b.tags


@pytest.mark.parametrize("name", MESH_NAMES)
def test_closed_cells_have_zero_normal_sum(meshes, name):
    m = meshes[name]
    s = np.zeros((m.n_cells, 2))
    w = m.edge_length[:, None] * m.edge_normal
    np.add.at(s, m.edge_cells[:, 0], w)
    inner = m.edge_cells[:, 1] >= 0
    np.add.at(s, m.edge_cells[inner, 1], -w[inner])
    scale = m.edge_length.max()
    assert np.abs(s).max() < 1e-13 * scale


@pytest.mark.parametrize("name", MESH_NAMES)
def test_areas_positive_and_sum_to_domain(meshes, name):
    m = meshes[name]
    assert (m.area > 0).all()
    expected = DOMAIN_AREA.get(name, 100.0)
    assert m.area.sum() == pytest.approx(expected, rel=1e-13)


@pytest.mark.parametrize("name", MESH_NAMES)
def test_edges_have_two_cells_inside_one_on_boundary(meshes, name):
    m = meshes[name]
    i, j = m.edge_cells.T
    assert (i >= 0).all() and (i != j).all()
    # every local edge of every cell appears in exactly one edge side
    sides = np.concatenate([i, j[j >= 0]])
    assert np.array_equal(np.bincount(sides, minlength=m.n_cells), np.full(m.n_cells, m.k))
    # an edge's nodes are shared by both of its cells, and only boundary edges lie on one cell
    for side in (0, 1):
        c = m.edge_cells[:, side]
        ok = c >= 0
        for col in (0, 1):
            assert (m.cells[c[ok]] == m.edge_nodes[ok, col][:, None]).any(axis=1).all()
    # boundary edges are exactly those whose node pair occurs in one cell only
    g = nx.Graph()
    for c in m.cells:
        for a, b in zip(c, np.roll(c, -1), strict=True):
            g.add_edge(int(a), int(b))
            g[int(a)][int(b)]["n"] = g[int(a)][int(b)].get("n", 0) + 1
    assert g.number_of_edges() == m.n_edges
    once = {frozenset(e) for e, n in nx.get_edge_attributes(g, "n").items() if n == 1}
    assert once == {frozenset(map(int, e)) for e in m.edge_nodes[m.boundary]}
    assert (m.edge_tag[m.boundary] >= 1).all() and (m.edge_tag[~m.boundary] == 0).all()


@pytest.mark.parametrize("name", MESH_NAMES)
def test_normals_unit_and_from_i_to_j(meshes, name):
    m = meshes[name]
    assert np.allclose(np.hypot(*m.edge_normal.T), 1.0, atol=1e-14)
    i, j = m.edge_cells.T
    inner = j >= 0
    d = m.centroid[j[inner]] - m.centroid[i[inner]]
    assert ((d * m.edge_normal[inner]).sum(axis=1) > 0).all()
    mid = m.nodes[m.edge_nodes[~inner]].mean(axis=1)
    out = mid - m.centroid[i[~inner]]
    assert ((out * m.edge_normal[~inner]).sum(axis=1) > 0).all()
    # length and normal agree with the edge's nodes
    t = m.nodes[m.edge_nodes[:, 1]] - m.nodes[m.edge_nodes[:, 0]]
    assert np.allclose(np.hypot(*t.T), m.edge_length, rtol=1e-14)
    assert np.allclose((t * m.edge_normal).sum(axis=1), 0.0, atol=1e-13)


@pytest.mark.parametrize("name", MESH_NAMES)
def test_slots_have_one_writer_each(meshes, name):
    m = meshes[name]
    slots = m.edge_slot[m.edge_slot >= 0]
    assert np.array_equal(np.sort(slots), np.arange(m.n_cells * m.k))
    assert (m.edge_slot[:, 1] == -1).sum() == m.boundary.sum()
    for side in (0, 1):
        ok = m.edge_slot[:, side] >= 0
        cell, local = np.divmod(m.edge_slot[ok, side], m.k)
        assert np.array_equal(cell, m.edge_cells[ok, side])
        a = m.cells[cell, local]
        b = m.cells[cell, (local + 1) % m.k]
        pair = np.sort(np.stack([a, b], 1), axis=1)
        assert np.array_equal(pair, np.sort(m.edge_nodes[ok], axis=1))
        if side == 0:  # cell i traverses the edge in the stored direction
            assert np.array_equal(a, m.edge_nodes[ok, 0])


def test_clockwise_cells_are_reoriented():
    m = square(300, seed=1)
    cells = m.cells.copy()
    cells[::3] = cells[::3, ::-1]
    f = Mesh.from_arrays(m.nodes, cells)
    assert np.allclose(f.area, m.area, rtol=1e-14)
    assert bandwidth(f) == bandwidth(m) and f.n_edges == m.n_edges
    assert np.array_equal(np.sort(f.cells, axis=1), np.sort(m.cells, axis=1))


def test_mesh_arrays_are_read_only_and_inputs_untouched():
    nodes = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    cells = np.array([[0, 1, 2], [1, 3, 2]])
    m = Mesh.from_arrays(nodes, cells)
    with pytest.raises(ValueError, match="read-only"):
        m.area[0] = 1.0
    with pytest.raises(ValueError, match="read-only"):
        m.permuted([1, 0]).edge_cells[0, 0] = 5
    nodes[0, 0] = -1.0  # the caller's arrays stay writable and are not shared
    cells[0, 0] = 3
    assert m.nodes[0, 0] == 0.0 and m.cells[0, 0] == 0


def test_quad_centroid_is_area_centroid():
    m = quad_grid(2, 1)
    # sheared unit squares: parallelograms, whose area centroid is the vertex mean
    assert np.allclose(m.centroid, m.nodes[m.cells].mean(axis=1), atol=1e-14)
    assert m.k == 4 and m.n_edges == 7


@pytest.mark.parametrize("method", sorted(ORDERINGS))
def test_ordering_is_a_permutation_that_only_renames(meshes, method):
    m = meshes["square"]
    new, perm = m.reordered(method, seed=5)
    assert np.array_equal(np.sort(perm), np.arange(m.n_cells))
    assert np.array_equal(new.original_index, perm)
    assert np.array_equal(new.cells, m.cells[perm])
    # each edge keeps its (i, j) orientation and its normal, with the cells renamed
    old = {(int(a), int(b)): e for e, (a, b) in enumerate(m.edge_cells)}
    renamed = np.where(new.edge_cells >= 0, perm[np.maximum(new.edge_cells, 0)], -1)
    for e, (a, b) in enumerate(renamed):
        if b < 0:
            continue
        f = old[(int(a), int(b))]
        assert np.array_equal(new.edge_normal[e], m.edge_normal[f])
        assert np.array_equal(new.edge_slot[e] % m.k, m.edge_slot[f] % m.k)
    # edges follow the new cell order
    lo = np.where(new.edge_cells[:, 1] >= 0, new.edge_cells.min(axis=1), new.edge_cells[:, 0])
    assert (np.diff(lo) >= 0).all()
    # the mesh is still valid
    assert np.array_equal(np.sort(new.edge_slot[new.edge_slot >= 0]), np.arange(m.n_cells * 3))


@pytest.mark.parametrize("method", ["rcm", "gps", "random", "hilbert"])
def test_reorder_then_inverse_is_identity(meshes, method):
    m = meshes["refined"]
    new, perm = m.reordered(method, seed=2)
    back = new.permuted(np.argsort(perm))
    assert_same_mesh(back, m)
    assert_same_mesh(m.reordered("none")[0], m)


def test_bandwidth_and_profile_match_networkx(meshes):
    m = meshes["square"].reordered("random", seed=9)[0]
    g = nx.from_scipy_sparse_array(m.adjacency())
    assert nx.number_connected_components(g) == 1
    assert bandwidth(m) == max(abs(a - b) for a, b in g.edges())
    assert profile(m) == sum(i - min([i, *(j for j in g[i] if j < i)]) for i in g.nodes)
    assert g.number_of_edges() == int((m.edge_cells[:, 1] >= 0).sum())


def test_gps_on_small_graphs():
    import scipy.sparse as sp

    def graph(edges, n):
        e = np.array(edges).T
        a = sp.coo_matrix((np.ones(e.shape[1]), (e[0], e[1])), shape=(n, n))
        return (a + a.T).tocsr()

    # a shuffled path is numbered along the path (bandwidth 1)
    rng = np.random.default_rng(0)
    lab = rng.permutation(30)
    path = graph([(lab[t], lab[t + 1]) for t in range(29)], 30)
    perm = gps_ordering(path)
    inv = np.argsort(perm)
    assert max(abs(inv[lab[t]] - inv[lab[t + 1]]) for t in range(29)) == 1
    # two components and an isolated vertex: still a permutation, each component contiguous
    two = graph([(0, 2), (2, 4), (1, 3)], 6)
    perm = gps_ordering(two)
    assert sorted(perm.tolist()) == list(range(6))
    pos = np.argsort(perm)
    assert abs(pos[0] - pos[4]) <= 2 and abs(pos[1] - pos[3]) == 1


def test_gps_equals_the_trusted_permutations_on_awkward_graphs():
    """Random graphs of many components (isolated vertices, pieces that leave step 3's
    searches dry) and a mesh with every 7th / every 2nd cell cut out, against the
    permutations of the code before GPS worked on a renumbered copy (commit ec73a99)."""
    import hashlib

    import scipy.sparse as sp

    rng = np.random.default_rng(3)
    graphs = []
    for _ in range(20):
        n = int(rng.integers(1, 300))
        r, c = rng.integers(0, n, (2, int(rng.integers(0, 3 * n))))
        a = sp.coo_matrix((np.ones(r.size), (r, c)), shape=(n, n)).tocsr()
        a.setdiag(0)
        graphs.append(((a + a.T) > 0).astype(np.int8))
    adj = square(3000, seed=5).adjacency()
    for step in (7, 2):
        keep = np.ones(adj.shape[0])
        keep[::step] = 0
        graphs.append((sp.diags(keep) @ adj @ sp.diags(keep)).tocsr())
    digest = hashlib.sha1()
    for g in graphs:
        digest.update(gps_ordering(g).astype(np.int64).tobytes())
    assert digest.hexdigest() == "b17b957bed94601022a296dcbca8643bf47a75dc"


def test_space_filling_curves_visit_grid_neighbours():
    b = 4
    x, y = np.meshgrid(np.arange(2**b), np.arange(2**b), indexing="ij")
    pts = np.stack([x.ravel(), y.ravel()], 1).astype(float)
    h = hilbert_key(pts, bits=b)
    assert np.array_equal(np.sort(h), np.arange(4**b))
    walk = pts[np.argsort(h)]
    assert (np.abs(np.diff(walk, axis=0)).sum(axis=1) == 1).all()
    z = morton_key(pts, bits=b)
    assert np.array_equal(np.sort(z), np.arange(4**b))
    assert z[np.flatnonzero((pts == [1, 0]).all(1))[0]] == 1
    assert z[np.flatnonzero((pts == [0, 1]).all(1))[0]] == 2
    assert z[np.flatnonzero((pts == [3, 3]).all(1))[0]] == 15


def test_square_hits_the_cell_count_exactly():
    for cells in (401, 1000):
        m = square(cells, seed=0)
        assert m.n_cells == cells and m.tags == {"wall": 1}
        hull = np.isclose(np.abs(m.nodes).max(axis=1), 5.0, rtol=0, atol=1e-12)
        assert hull.sum() == m.boundary.sum()


def test_structured_square_has_the_square_symmetries():
    m = structured_square(8)
    assert m.n_cells == 2 * 8 * 8

    def key(points):
        return set(map(tuple, np.round(points, 9)))

    for pts in (m.centroid, m.nodes[m.edge_nodes].mean(axis=1)):
        ref = key(pts)
        assert key(pts * [-1, 1]) == ref
        assert key(pts * [1, -1]) == ref
        assert key(pts[:, ::-1] * [-1, 1]) == ref


def test_strip_tags():
    m = strip(10, 2, x0=-1.0, x1=1.0, width=0.4)
    counts = {n: int((m.edge_tag == t).sum()) for n, t in m.tags.items()}
    assert counts == {"west": 2, "east": 2, "wall": 20}
    west = m.nodes[m.edge_nodes[m.edge_tag == m.tags["west"]]][..., 0]
    assert np.all(west == -1.0)


def test_refinement_keeps_centre_child_and_tags(meshes):
    parent = meshes["strip"]
    child = refine(parent.reordered("rcm")[0])
    L = parent.n_cells
    assert child.n_cells == 4 * L
    # the centre child has the parent's barycentre and a quarter of its area
    p = parent.reordered("rcm")[0]
    assert np.allclose(child.centroid[:L], p.centroid, atol=1e-14)
    assert np.allclose(child.area[:L], p.area / 4, rtol=1e-12)
    counts = {n: int((child.edge_tag == t).sum()) for n, t in child.tags.items()}
    assert counts == {"west": 4, "east": 4, "wall": 48}
    depth = np.arange(L, dtype=float)
    d = Mesh.from_arrays(p.nodes, p.cells, depth=depth)
    assert np.array_equal(refine(d).depth, np.concatenate([depth, np.repeat(depth, 3)]))
    assert np.array_equal(d.reordered("random")[0].depth, depth[d.reordered("random")[1]])


@pytest.mark.parametrize("name", ["square", "strip", "refined"])
def test_refinement_equals_the_checked_construction(meshes, name):
    """refine skips from_arrays's checks (its children are valid by construction): the
    mesh it builds equals, field for field and bit for bit, the one from_arrays builds."""
    parent = meshes[name]
    depth = np.linspace(1.0, 2.0, parent.n_cells)
    child = refine(Mesh.from_arrays(parent.nodes, parent.cells, depth=depth))
    checked = Mesh.from_arrays(
        child.nodes,
        child.cells,
        boundary_tags=child.boundary_tags(),
        depth=child.depth,
        source=child.source,
    )
    for field, value in vars(child).items():
        other = getattr(checked, field)
        if isinstance(value, np.ndarray):
            assert value.dtype == other.dtype and np.array_equal(value, other), field
        else:
            assert value == other, field


def test_a_family_member_is_refined_from_the_finest_cached_one_below(tmp_path, monkeypatch):
    """square-64k, then square-256k: one refinement of the cached 64k, not three of the base;
    the same mesh as refining the base, read back from an uncompressed cache."""
    import shutil
    import zipfile

    from fvswe.mesh import catalog

    shutil.copy(catalog.mesh_dir() / "square-4k.msh", tmp_path)
    monkeypatch.setenv("FVSWE_MESHES", str(tmp_path))
    calls = []
    monkeypatch.setattr(catalog, "refine", lambda m: calls.append(m.n_cells) or refine(m))
    family("square-64k")
    assert calls == [4000, 16000]
    fine = family("square-256k")
    assert calls == [4000, 16000, 64000]
    again = refine(refine(refine(family("square-4k"))))
    assert np.array_equal(fine.cells, again.cells) and np.array_equal(fine.nodes, again.nodes)
    with zipfile.ZipFile(tmp_path / "cache" / "square-256k.npz") as z:
        assert {i.compress_type for i in z.infolist()} == {zipfile.ZIP_STORED}
    assert catalog.MEMBERS["square-133m"] == ("square-130k", 5)


@pytest.mark.parametrize("cells", [4000, 16000])
def test_family_bandwidths_match_the_papers_table3(cells):
    m = family(cells)
    assert m.n_cells == cells and m.area.sum() == pytest.approx(100.0, rel=1e-12)
    original, rcm, gps = PAPER_TABLE3[cells]
    b_orig = bandwidth(m)
    if cells == 4000:
        assert b_orig > 0.9 * cells  # the generator's order: no locality
    else:
        assert b_orig == 0.75 * cells  # the 1->4 append rule, exactly as the paper
    b_rcm = bandwidth(m.reordered("rcm")[0])
    b_gps = bandwidth(m.reordered("gps")[0])
    assert 0.7 * rcm <= b_rcm <= 1.5 * rcm
    assert 0.7 * gps <= b_gps <= 1.5 * gps
    assert b_gps <= b_rcm
    assert profile(m.reordered("gps")[0]) < profile(m) / 5
