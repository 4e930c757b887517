"""The compiled mesh-preparation kernels equal the NumPy expressions they replace, bit for bit.

Mesh building and renumbering run as linear compiled passes (issue: mesh preparation that
keeps up at 33 M cells); each kernel is held here against the plain NumPy formula or sort
that it stands for, on random input, so a faster kernel can never change a mesh.
"""

from __future__ import annotations

import numpy as np
import pytest

from fvswe.mesh import core, gps
from fvswe.mesh.generate import square

RNG = np.random.default_rng(11)


@pytest.fixture(scope="module")
def mesh():
    return square(3000, seed=5)


def numpy_shoelace(nodes, cells):
    x, y = nodes[cells, 0], nodes[cells, 1]
    x, y = x - x[:, :1], y - y[:, :1]
    area = 0.5 * (x * np.roll(y, -1, axis=1) - np.roll(x, -1, axis=1) * y).sum(axis=1)
    vec = nodes[np.roll(cells, -1, axis=1)] - nodes[cells]
    return area, (vec**2).sum(axis=2).max(axis=1)


@pytest.mark.parametrize("k", [3, 4])
def test_shoelace_and_longest_edge_equal_numpy(k):
    nodes = RNG.normal(size=(500, 2)) * 1e3 + 7.0
    cells = np.stack([RNG.permutation(500)[:k] for _ in range(2000)])
    area, longest2 = core.shoelace(nodes, cells)
    ref_area, ref_longest2 = numpy_shoelace(nodes, cells)
    assert np.array_equal(area, ref_area) and np.array_equal(longest2, ref_longest2)


def test_barycentres_equal_numpy_mean():
    nodes = RNG.normal(size=(400, 2)) * 123.4
    cells = np.stack([RNG.permutation(400)[:3] for _ in range(3000)])
    assert np.array_equal(core._barycentres(nodes, cells), nodes[cells].mean(axis=1))


def test_repeated_vertex_mask_equals_sorted_rows():
    cells = RNG.integers(0, 6, size=(3000, 4))
    by_node = np.sort(cells, axis=1)
    ref = (by_node[:, 1:] == by_node[:, :-1]).any(axis=1)
    assert ref.any() and not ref.all()
    assert np.array_equal(core._repeats_a_vertex(cells), ref)


def test_take_equals_fancy_indexing(mesh):
    rows = RNG.permutation(mesh.n_edges)
    for a in (mesh.edge_cells, mesh.edge_normal, mesh.edge_length, mesh.edge_tag):
        got = core.take_rows(a, rows)
        assert got.dtype == a.dtype and np.array_equal(got, a[rows])


def test_edge_order_equals_a_stable_argsort(mesh):
    perm = RNG.permutation(mesh.n_cells)
    renumbered = mesh.permuted(perm)
    ec, slot = renumbered.edge_cells, renumbered.edge_slot
    i, j = ec[:, 0], ec[:, 1]
    key = np.where((j < 0) | (i < j), slot[:, 0], slot[:, 1])
    shuffled = RNG.permutation(key.size)
    got = core._edge_order(ec[shuffled], slot[shuffled])
    assert np.array_equal(got, np.argsort(key[shuffled], kind="stable"))


def test_half_edge_mates_pair_opposite_traversals(mesh):
    cells = mesh.cells
    tail, head = cells.ravel(), np.roll(cells, -1, axis=1).ravel()
    mate, bad = core._match_half_edges(tail, head, mesh.n_nodes)
    assert bad == -1
    inner = mate >= 0
    assert np.array_equal(mate[mate[inner]], np.flatnonzero(inner))
    assert np.array_equal(tail[inner], head[mate[inner]])
    # every interior edge of the mesh is one matched pair, every boundary edge one single
    assert inner.sum() == 2 * (~mesh.boundary).sum() and (~inner).sum() == mesh.boundary.sum()


def test_gps_level_sorts_and_members_equal_numpy_sorts():
    m, depth = 5000, 37
    final = RNG.integers(0, depth, m)
    by_level, lvl_ptr = gps._by_level(final, m, depth)
    assert np.array_equal(by_level, np.argsort(final, kind="stable"))
    assert np.array_equal(lvl_ptr, np.concatenate([[0], np.cumsum(np.bincount(final))]))
    deg = RNG.integers(1, 9, m)
    orig = RNG.permutation(3 * m)[:m]  # original ids: distinct, in no order
    seg = RNG.permutation(m)[:800]
    want = seg[np.lexsort((orig[seg], deg[seg]))]
    gps._least_first(seg, deg, orig)
    assert np.array_equal(seg, want)
    # the scan that stands for the sort until a level has run dry SCANS times
    final[RNG.random(m) < 0.7] = gps.NUMBERED
    seg = RNG.permutation(m)
    left = seg[final[seg] != gps.NUMBERED]
    best, end = gps._least_unnumbered(seg, 0, m, final, deg, orig)
    assert best == left[np.lexsort((orig[left], deg[left]))][0]
    assert np.array_equal(seg[:end], left)
    level = np.full(2 * m, -1)
    comp = np.sort(RNG.choice(2 * m, m, replace=False))
    level[comp] = 0
    order = RNG.permutation(comp)
    for first in (0, int(comp[0])):
        assert np.array_equal(gps._sorted_members(level, order, m, first), comp)


def test_gps_renumbered_component_equals_scipy_permutation(mesh):
    import scipy.sparse as sp

    adj = mesh.adjacency()
    n = mesh.n_cells
    indptr, indices = adj.indptr.astype(np.int32), adj.indices.astype(np.int32)
    level, order = np.full(n, -1, np.int32), np.empty(n, np.int32)
    size, _, _ = gps._bfs(indptr, indices, 17, level, order)
    levels_seen = level[order].copy()
    sub = (np.empty(n + 1, np.int32), np.empty_like(indices), *np.empty((4, n), np.int32))
    gps._renumbered(indptr, indices, level, order, size, np.empty(n, np.int32), *sub)
    ptr, idx, deg, orig, lev, ordr = sub
    assert size == n and np.array_equal(orig, order) and np.array_equal(ordr, np.arange(n))
    assert np.array_equal(lev, levels_seen) and (level == -1).all()
    got = sp.csr_matrix((np.ones(idx.size, np.int8), idx, ptr), shape=(n, n))
    got.sort_indices()
    want = adj[order][:, order].tocsr()
    want.sort_indices()
    assert np.array_equal(got.indptr, want.indptr) and np.array_equal(got.indices, want.indices)
    assert np.array_equal(deg, np.diff(want.indptr))


def test_radix_argsort_equals_a_stable_argsort():
    from fvswe.mesh.orderings import _radix_argsort

    # one chunk, then several (the parallel passes); many repeated keys in the 16-bit case
    for n, bits, high in ((20000, 32, 2**32), (200_001, 32, 2**32), (200_001, 16, 50), (3, 32, 9)):
        keys = RNG.integers(0, high, n)
        for n_chunks in (1, 7):
            got = _radix_argsort(keys, bits, n_chunks)
            assert np.array_equal(got, np.argsort(keys, kind="stable"))


def test_renamed_edges_equal_numpy(mesh):
    inv = RNG.permutation(mesh.n_cells)
    ec, slot, k = mesh.edge_cells, mesh.edge_slot, mesh.k
    cells, slots = core._renamed_edges(ec, slot, inv, k)
    assert np.array_equal(cells, np.where(ec >= 0, inv[np.maximum(ec, 0)], -1))
    ref = np.where(slot >= 0, inv[np.maximum(slot, 0) // k] * k + slot % k, -1)
    assert np.array_equal(slots, ref)


def test_adjacency_equals_scipy_from_coordinates(mesh):
    import scipy.sparse as sp

    m = mesh.permuted(RNG.permutation(mesh.n_cells))
    inner = m.edge_cells[m.edge_cells[:, 1] >= 0]
    rows = np.concatenate([inner[:, 0], inner[:, 1]])
    cols = np.concatenate([inner[:, 1], inner[:, 0]])
    ref = sp.csr_matrix((np.ones(rows.size, np.int8), (rows, cols)), shape=(m.n_cells,) * 2)
    ref.sort_indices()
    adj = m.adjacency()
    assert adj.has_sorted_indices or np.all(np.diff(adj.indices) != 0)
    assert np.array_equal(adj.indptr, ref.indptr) and np.array_equal(adj.indices, ref.indices)


def test_cells_traversing_a_shared_edge_the_same_way_are_named():
    from fvswe.errors import MeshError

    nodes = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [2.0, 0.0]])
    # cells 1 and 2 both run 0 -> 1 counter-clockwise: they lie on the same side and overlap
    cells = np.array([[1, 4, 3], [0, 1, 2], [0, 1, 3]])
    with pytest.raises(MeshError, match=r"^here: cells 1, 2 overlap \(they traverse"):
        core.Mesh.from_arrays(nodes, cells, source="here")


def test_half_edge_buckets_do_not_depend_on_the_number_of_parts(mesh):
    cells = mesh.cells
    tail, head = cells.ravel(), np.roll(cells, -1, axis=1).ravel()
    mates = []
    for parts in (1, 2, 3, 7):
        mate = np.full(tail.size, -1, np.int64)
        bucket = np.empty(tail.size, np.int64)
        assert core._pair_in_buckets(tail, head, mesh.n_nodes, bucket, mate, parts) == -1
        mates.append(mate)
    assert all(np.array_equal(m, mates[0]) for m in mates[1:])


def test_edges_equal_numpy_from_the_mates(mesh):
    """The fused edge pass against the NumPy construction it replaced, in 1 and 7 chunks."""
    nodes, cells, k = mesh.nodes, mesh.cells, mesh.k
    tail, head = cells.ravel(), np.roll(cells, -1, axis=1).ravel()
    mate, _ = core._match_half_edges(tail, head, mesh.n_nodes)
    hi = np.flatnonzero((mate < 0) | (np.arange(mate.size) < mate))
    hj = mate[hi]
    d = nodes[head[hi]] - nodes[tail[hi]]
    length = np.hypot(d[:, 0], d[:, 1])
    ref = [
        np.stack([hi // k, np.where(hj >= 0, hj // k, -1)], axis=1),
        np.stack([hi, hj], axis=1),
        np.stack([tail[hi], head[hi]], axis=1),
        np.stack([d[:, 1], -d[:, 0]], axis=1) / length[:, None],
        length,
    ]
    for n_chunks in (1, 7):
        start = core._edge_starts(mate, n_chunks)
        got = [np.full_like(r, -9) for r in ref]
        assert core._fill_edges(nodes, tail, head, mate, k, start, *got) == 0
        assert all(np.array_equal(g, r) for g, r in zip(got, ref, strict=True))


def test_preparation_does_not_depend_on_the_thread_count(tmp_path):
    """Topology, orderings and renumbering with 2 Numba threads equal those with 1 (48 k
    cells: several chunks in every chunked kernel)."""
    import hashlib
    import os
    import subprocess
    import sys

    script = (
        "import hashlib, numpy as np\n"
        "from fvswe.mesh import refine\n"
        "from fvswe.mesh.generate import square\n"
        "m = refine(refine(square(3000, seed=5)))\n"
        "parts = [m.edge_cells, m.edge_slot, m.edge_nodes, m.edge_normal, m.edge_length]\n"
        "for method in ('rcm', 'gps', 'hilbert', 'morton'):\n"
        "    r, perm = m.reordered(method)\n"
        "    parts += [perm, r.edge_cells, r.edge_slot, r.edge_normal]\n"
        "print(hashlib.sha1(b''.join(np.ascontiguousarray(a).tobytes() for a in parts))"
        ".hexdigest())\n"
    )
    path = tmp_path / "prep.py"
    path.write_text(script)
    digests = []
    for threads in ("1", "2"):
        env = {**os.environ, "NUMBA_NUM_THREADS": threads}
        run = subprocess.run(
            [sys.executable, str(path)], env=env, capture_output=True, text=True, check=True
        )
        digests.append(run.stdout.strip())
    assert len(digests[0]) == len(hashlib.sha1().hexdigest()) and digests[0] == digests[1]


#: SHA-1 of each ordering's permutation (int64 bytes) of the committed square-4k mesh, from
#: the code before the mesh-preparation kernels were rewritten (commit 43c25d0): the
#: reordering study and the paper's Table 3 bandwidths rest on these exact permutations.
TRUSTED_PERMUTATIONS = {
    "rcm": "d7b8cae8c19e1e179ffad84a62bae8e18c320c01",
    "gps": "186e2f010157f88154b294ec73b7bdec0b7e0700",
    "hilbert": "198cd836732a0f82f7722a66be55f067a2dd9711",
    "morton": "e4d9df93fea6bea1964c758b33a0679b67c26414",
}


@pytest.mark.parametrize("method", sorted(TRUSTED_PERMUTATIONS))
def test_orderings_equal_the_trusted_permutations(method):
    import hashlib

    from fvswe.mesh import family
    from fvswe.mesh.orderings import ordering

    perm = ordering(family(4000), method).astype(np.int64)
    assert hashlib.sha1(perm.tobytes()).hexdigest() == TRUSTED_PERMUTATIONS[method]


def test_inverse_permutation_equals_argsort(mesh):
    perm = RNG.permutation(mesh.n_cells)
    got = core.inverse_permutation(perm)
    assert got.dtype == np.int64 and np.array_equal(got, np.argsort(perm))
    assert np.array_equal(core.inverse_permutation(mesh.permuted(perm).original_index),
                          np.argsort(perm))  # fmt: skip
