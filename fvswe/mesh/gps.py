"""Gibbs-Poole-Stockmeyer bandwidth reduction (SIAM J. Numer. Anal. 13, 1976; TOMS 508/582).

Written from the published description, in Numba, in the paper's three steps,
per connected component:

1. *Pseudo-diameter.* From a vertex of least degree build the rooted level
   structure; try the vertices of its last level (one per distinct degree, the
   "shrinking" of TOMS 582) as new roots; a deeper structure restarts the
   search, otherwise the narrowest candidate is the other endpoint ``u``.
2. *Combination.* With ``L_v`` and ``L_u`` of equal depth ``k``, a vertex
   whose levels agree (``l_v = k-1-l_u``) keeps that level; the remaining
   vertices split into connected pieces, largest first, and each piece goes
   wholly into the levels of ``L_v`` or of reversed ``L_u``, whichever leaves
   the smaller maximum level width (ties: the structure of smaller width).
3. *Numbering.* From the endpoint of smaller degree, level by level: first the
   unnumbered neighbours of the previous level's vertices in their numbering
   order, then neighbours within the level, then the least-degree remaining
   vertex of the level; neighbours always by increasing degree.

The result is reversed (as in reverse Cuthill-McKee): the bandwidth is the
same and the profile is smaller.
"""

from __future__ import annotations

import numba
import numpy as np
import scipy.sparse as sp

#: ``final`` of a vertex that step 3 has numbered (levels are >= 0, -1 is unassigned).
NUMBERED = -3


@numba.njit(cache=True)
def _bfs(indptr, indices, root, level, order):
    """Rooted level structure: fills ``level`` and ``order``; returns (size, depth, width).

    ``order`` lists the levels one after another, so the width is the longest run of
    one level among the appended vertices, counted as they are appended.
    """
    level[root] = 0
    order[0] = root
    head, tail = 0, 1
    width, run, last = 1, 1, 0
    while head < tail:
        v = order[head]
        head += 1
        nxt = level[v] + 1
        for p in range(indptr[v], indptr[v + 1]):
            w = indices[p]
            if level[w] < 0:
                level[w] = nxt
                order[tail] = w
                tail += 1
                run = run + 1 if nxt == last else 1
                last = nxt
                width = max(width, run)
    return tail, last + 1, width


@numba.njit(cache=True)
def _reset(level, order, size):
    for i in range(size):
        level[order[i]] = -1


@numba.njit(cache=True, inline="always")
def _sort_by_degree(buf, n, deg):
    """Insertion sort of ``buf[:n]`` by (degree, vertex id)."""
    for a in range(1, n):
        x = buf[a]
        b = a - 1
        while b >= 0 and (deg[buf[b]] > deg[x] or (deg[buf[b]] == deg[x] and buf[b] > x)):
            buf[b + 1] = buf[b]
            b -= 1
        buf[b + 1] = x


@numba.njit(cache=True)
def _endpoints(indptr, indices, deg, root, found, lev_v, ord_v, lev_u, ord_u, lev_t, ord_t):
    """Step 1: pseudo-peripheral pair ``(v, u)`` with the depth and the widths of L_v, L_u.

    ``lev_v``/``ord_v`` come holding the structure rooted at ``root`` (``found``: its size,
    depth and width), the other pairs reset; they go back as L_v, L_u and a reset spare:
    a candidate's structure is kept by swapping arrays, not built again.
    """
    v = root
    size, depth, width_v = found
    while True:
        start = size - 1
        while start > 0 and lev_v[ord_v[start - 1]] == depth - 1:
            start -= 1
        cand = ord_v[start:size].copy()
        _sort_by_degree(cand, cand.size, deg)
        best, u, restarted = 1 << 62, -1, False
        for c in range(cand.size):
            w = cand[c]
            if c > 0 and deg[w] == deg[cand[c - 1]]:
                continue
            _, dw, ww = _bfs(indptr, indices, w, lev_t, ord_t)
            if dw > depth:
                _reset(lev_v, ord_v, size)
                if u >= 0:
                    _reset(lev_u, ord_u, size)
                lev_v, lev_t, ord_v, ord_t = lev_t, lev_v, ord_t, ord_v
                v, depth, width_v, restarted = w, dw, ww, True
                break
            if ww < best:
                if u >= 0:
                    _reset(lev_u, ord_u, size)
                lev_u, lev_t, ord_u, ord_t = lev_t, lev_u, ord_t, ord_u
                best, u = ww, w
            else:
                _reset(lev_t, ord_t, size)
        if not restarted:
            return (v, u, depth, width_v, best), (lev_v, ord_v, lev_u, ord_u, lev_t, ord_t)


@numba.njit(cache=True)
def _combine(indptr, indices, comp, lev_v, lev_u, depth, width_v, width_u, final):
    """Step 2: ``final[x]``, a level for every vertex ``x`` of ``comp`` (all -1 on entry),
    from L_v and reversed L_u."""
    m = comp.size
    n_fix = np.zeros(depth, np.int64)
    for i in range(m):
        x = comp[i]
        a, b = lev_v[x], depth - 1 - lev_u[x]
        if a == b:
            final[x] = a
            n_fix[a] += 1
    # Connected pieces of the vertices left over, as segments of ``rest``; -2 marks a
    # vertex taken into a piece, until the piece's levels are chosen. ``in_v``/``in_u``
    # hold each taken vertex's level in L_v and in reversed L_u, beside it in ``rest``,
    # so that the passes over a piece below read them in sequence.
    rest = np.empty(m, comp.dtype)
    in_v = np.empty(m, comp.dtype)
    in_u = np.empty(m, comp.dtype)
    seg_start = np.empty(m + 1, np.int64)
    n_seg, tail = 0, 0
    for i in range(m):
        if final[comp[i]] != -1:
            continue
        seg_start[n_seg] = tail
        final[comp[i]] = -2
        rest[tail] = comp[i]
        head = tail
        tail += 1
        while head < tail:
            x = rest[head]
            in_v[head] = lev_v[x]
            in_u[head] = depth - 1 - lev_u[x]
            head += 1
            for p in range(indptr[x], indptr[x + 1]):
                j = indices[p]
                if final[j] == -1:
                    final[j] = -2
                    rest[tail] = j
                    tail += 1
        n_seg += 1
    seg_start[n_seg] = tail
    sizes = seg_start[1 : n_seg + 1] - seg_start[:n_seg]
    order = np.argsort(-sizes, kind="mergesort")
    cnt_v = np.zeros(depth, np.int64)
    cnt_u = np.zeros(depth, np.int64)
    for s in order:
        lo, hi = seg_start[s], seg_start[s + 1]
        for t in range(lo, hi):
            cnt_v[in_v[t]] += 1
            cnt_u[in_u[t]] += 1
        h0, l0 = 0, 0
        for t in range(lo, hi):
            a, b = in_v[t], in_u[t]
            h0 = max(h0, n_fix[a] + cnt_v[a])
            l0 = max(l0, n_fix[b] + cnt_u[b])
        use_v = h0 < l0 or (h0 == l0 and width_v <= width_u)
        for t in range(lo, hi):
            a, b = in_v[t], in_u[t]
            cnt_v[a] = 0
            cnt_u[b] = 0
            lvl = a if use_v else b
            final[rest[t]] = lvl
            n_fix[lvl] += 1


@numba.njit(cache=True)
def _by_level_and_degree(final, deg, comp, depth, n_deg):
    """The vertices of ``comp`` sorted by (level, degree, id): a counting sort, linear in size."""
    m = comp.size
    start = np.zeros(depth * n_deg + 1, np.int64)
    for i in range(m):
        x = comp[i]
        start[final[x] * n_deg + deg[x] + 1] += 1
    for b in range(depth * n_deg):
        start[b + 1] += start[b]
    out = np.empty(m, comp.dtype)
    for i in range(m):
        x = comp[i]
        b = final[x] * n_deg + deg[x]
        out[start[b]] = x
        start[b] += 1
    return out


@numba.njit(cache=True)
def _number(indptr, indices, deg, n_deg, comp, final, depth, start):
    """Step 3: level-by-level numbering of ``comp`` from ``start`` (a vertex of level 0).

    A numbered vertex's ``final`` becomes :data:`NUMBERED`, so one load tells whether a
    neighbour is still to be numbered in the current level.
    """
    m = comp.size
    by_level = _by_level_and_degree(final, deg, comp, depth, n_deg)
    lvl_ptr = np.zeros(depth + 1, np.int64)
    for i in range(m):
        lvl_ptr[final[comp[i]] + 1] += 1
    for lv in range(depth):
        lvl_ptr[lv + 1] += lvl_ptr[lv]
    out = np.empty(m, comp.dtype)
    buf = np.empty(n_deg, comp.dtype)
    count = 0
    prev_lo, prev_hi = 0, 0
    for lv in range(depth):
        level_start = count
        if lv == 0:
            out[count] = start
            final[start] = NUMBERED
            count += 1
        for q in range(prev_lo, prev_hi):
            count = _number_neighbours(indptr, indices, deg, final, lv, out[q], out, count, buf)
        scan = lvl_ptr[lv]
        q = level_start
        while True:
            while q < count:
                count = _number_neighbours(indptr, indices, deg, final, lv, out[q], out, count, buf)
                q += 1
            while scan < lvl_ptr[lv + 1] and final[by_level[scan]] == NUMBERED:
                scan += 1
            if scan == lvl_ptr[lv + 1]:
                break
            out[count] = by_level[scan]
            final[by_level[scan]] = NUMBERED
            count += 1
        prev_lo, prev_hi = level_start, count
    return out


@numba.njit(cache=True, inline="always")
def _number_neighbours(indptr, indices, deg, final, lv, x, out, count, buf):
    """Number the unnumbered neighbours of ``x`` in level ``lv``, by increasing degree."""
    nb = 0
    for p in range(indptr[x], indptr[x + 1]):
        j = indices[p]
        if final[j] == lv:
            buf[nb] = j
            nb += 1
    _sort_by_degree(buf, nb, deg)
    for t in range(nb):
        out[count] = buf[t]
        final[buf[t]] = NUMBERED
        count += 1
    return count


@numba.njit(cache=True)
def _sorted_members(level, order, size, first):
    """The ``size`` vertices that a BFS reached, ascending: a scan from ``first`` (the
    component's lowest vertex) when the component is a large share of the graph, else a sort."""
    n = level.size
    if size * 16 < n - first:
        return np.sort(order[:size])
    out = np.empty(size, order.dtype)
    c = 0
    for v in range(first, n):
        if level[v] >= 0:
            out[c] = v
            c += 1
            if c == size:
                break
    return out


@numba.njit(cache=True)
def _gps(indptr, indices, levels, orders, final, seen, perm):
    """GPS of the graph ``(indptr, indices)`` (CSR, rows ascending) into ``perm``. The
    vertex arrays (three level structures, ``final`` all -1, ``seen`` all False) serve the
    whole graph and are reset over each component after use."""
    n = indptr.size - 1
    deg = indptr[1:] - indptr[:-1]
    n_deg = deg.max() + 1 if n else 1
    lev_v, lev_u, lev_t = levels[0], levels[1], levels[2]
    ord_v, ord_u, ord_t = orders[0], orders[1], orders[2]
    count = 0
    # A connected graph (the usual mesh) is one component, rooted at its first vertex of
    # least degree: the search from there, step 1's first, also finds the component.
    root = np.argmin(deg) if n else 0
    found = _bfs(indptr, indices, root, lev_v, ord_v) if n else (0, 0, 0)
    whole = found[0] == n
    if not whole:
        _reset(lev_v, ord_v, found[0])
    for s in range(n):
        if seen[s]:
            continue
        if whole:
            size = n
            comp = np.empty(n, indices.dtype)
            for i in range(n):
                comp[i] = i
                seen[i] = True
        else:
            size = _bfs(indptr, indices, s, lev_t, ord_t)[0]
            comp = _sorted_members(lev_t, ord_t, size, s)
            _reset(lev_t, ord_t, size)
            root = comp[0]
            for i in range(size):
                seen[comp[i]] = True
                if deg[comp[i]] < deg[root]:
                    root = comp[i]
            found = _bfs(indptr, indices, root, lev_v, ord_v)
        (v, u, depth, width_v, width_u), arrays = _endpoints(
            indptr, indices, deg, root, found, lev_v, ord_v, lev_u, ord_u, lev_t, ord_t
        )
        lev_v, ord_v, lev_u, ord_u, lev_t, ord_t = arrays
        _combine(indptr, indices, comp, lev_v, lev_u, depth, width_v, width_u, final)
        start = v
        if deg[u] < deg[v]:
            start = u
            for i in range(size):
                final[comp[i]] = depth - 1 - final[comp[i]]
        out = _number(indptr, indices, deg, n_deg, comp, final, depth, start)
        for i in range(size):
            perm[count + i] = out[size - 1 - i]
            final[comp[i]] = -1
        count += size
        _reset(lev_v, ord_v, size)
        _reset(lev_u, ord_u, size)


def gps_ordering(adjacency: sp.spmatrix) -> np.ndarray:
    """GPS permutation of a symmetric adjacency: new vertex ``n`` is old vertex ``perm[n]``.

    Connected components are numbered one after another, in order of their
    lowest vertex.
    """
    adj = sp.csr_matrix(adjacency)
    # 32-bit indices halve the memory traffic of the breadth-first searches. The vertex
    # arrays come from NumPy, which asks Linux for huge pages (Numba's allocator does not):
    # fewer TLB misses in the searches' scattered reads.
    index = np.int32 if adj.nnz < 2**31 else np.int64
    n = adj.shape[0]
    perm = np.empty(n, np.int64)
    _gps(
        adj.indptr.astype(index),
        adj.indices.astype(index),
        np.full((3, n), -1, index),
        np.empty((3, n), index),
        np.full(n, -1, index),
        np.zeros(n, np.bool_),
        perm,
    )
    return perm
