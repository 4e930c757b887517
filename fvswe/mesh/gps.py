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


@numba.njit(cache=True)
def _bfs(indptr, indices, root, level, order):
    """Rooted level structure: fills ``level`` and ``order``; returns (size, depth, width)."""
    level[root] = 0
    order[0] = root
    head, tail = 0, 1
    while head < tail:
        v = order[head]
        head += 1
        for p in range(indptr[v], indptr[v + 1]):
            w = indices[p]
            if level[w] < 0:
                level[w] = level[v] + 1
                order[tail] = w
                tail += 1
    width, run = 0, 0
    for i in range(tail):
        if i > 0 and level[order[i]] != level[order[i - 1]]:
            run = 0
        run += 1
        width = max(width, run)
    return tail, level[order[tail - 1]] + 1, width


@numba.njit(cache=True)
def _reset(level, order, size):
    for i in range(size):
        level[order[i]] = -1


@numba.njit(cache=True)
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
def _endpoints(indptr, indices, deg, root, lev_v, ord_v, lev_t, ord_t):
    """Step 1: pseudo-peripheral pair (v, u); ``lev_v``/``ord_v`` keep L_v on return."""
    v = root
    size, depth, width_v = _bfs(indptr, indices, v, lev_v, ord_v)
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
                for i in range(size):
                    x = ord_t[i]
                    lev_v[x] = lev_t[x]
                    ord_v[i] = x
                _reset(lev_t, ord_t, size)
                v, depth, width_v, restarted = w, dw, ww, True
                break
            if ww < best:
                best, u = ww, w
            _reset(lev_t, ord_t, size)
        if not restarted:
            return v, u, size, depth, width_v, best


@numba.njit(cache=True)
def _combine(indptr, indices, comp, lev_v, lev_u, depth, width_v, width_u, loc):
    """Step 2: a level for every vertex of ``comp`` from L_v and reversed L_u."""
    m = comp.size
    final = np.full(m, -1, np.int64)
    n_fix = np.zeros(depth, np.int64)
    for i in range(m):
        a, b = lev_v[comp[i]], depth - 1 - lev_u[comp[i]]
        if a == b:
            final[i] = a
            n_fix[a] += 1
    # Connected pieces of the vertices left over, as segments of ``rest``.
    piece = np.full(m, -1, np.int64)
    rest = np.empty(m, np.int64)
    seg_start = np.empty(m + 1, np.int64)
    n_seg, tail = 0, 0
    for i in range(m):
        if final[i] >= 0 or piece[i] >= 0:
            continue
        seg_start[n_seg] = tail
        piece[i] = n_seg
        rest[tail] = i
        head = tail
        tail += 1
        while head < tail:
            x = comp[rest[head]]
            head += 1
            for p in range(indptr[x], indptr[x + 1]):
                j = loc[indices[p]]
                if final[j] < 0 and piece[j] < 0:
                    piece[j] = n_seg
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
            x = comp[rest[t]]
            cnt_v[lev_v[x]] += 1
            cnt_u[depth - 1 - lev_u[x]] += 1
        h0, l0 = 0, 0
        for t in range(lo, hi):
            x = comp[rest[t]]
            a, b = lev_v[x], depth - 1 - lev_u[x]
            h0 = max(h0, n_fix[a] + cnt_v[a])
            l0 = max(l0, n_fix[b] + cnt_u[b])
        use_v = h0 < l0 or (h0 == l0 and width_v <= width_u)
        for t in range(lo, hi):
            x = comp[rest[t]]
            a, b = lev_v[x], depth - 1 - lev_u[x]
            cnt_v[a] = 0
            cnt_u[b] = 0
            lvl = a if use_v else b
            final[rest[t]] = lvl
            n_fix[lvl] += 1
    return final


@numba.njit(cache=True)
def _by_level_and_degree(final, deg, comp, depth):
    """Local vertices sorted by (level, degree, index): a counting sort, linear in size."""
    m = comp.size
    n_deg = deg.max() + 1
    start = np.zeros(depth * n_deg + 1, np.int64)
    for i in range(m):
        start[final[i] * n_deg + deg[comp[i]] + 1] += 1
    for b in range(depth * n_deg):
        start[b + 1] += start[b]
    out = np.empty(m, np.int64)
    for i in range(m):
        b = final[i] * n_deg + deg[comp[i]]
        out[start[b]] = i
        start[b] += 1
    return out


@numba.njit(cache=True)
def _number(indptr, indices, deg, comp, final, depth, start, loc):
    """Step 3: level-by-level numbering from ``start`` (local index, in level 0)."""
    m = comp.size
    by_level = _by_level_and_degree(final, deg, comp, depth)
    lvl_ptr = np.zeros(depth + 1, np.int64)
    for i in range(m):
        lvl_ptr[final[i] + 1] += 1
    for lv in range(depth):
        lvl_ptr[lv + 1] += lvl_ptr[lv]
    done = np.zeros(m, np.bool_)
    out = np.empty(m, np.int64)
    buf = np.empty(deg.max() + 1, np.int64)
    count = 0
    prev_lo, prev_hi = 0, 0
    for lv in range(depth):
        level_start = count
        if lv == 0:
            out[count] = start
            done[start] = True
            count += 1
        for q in range(prev_lo, prev_hi):
            count = _number_neighbours(
                indptr, indices, deg, comp, final, lv, out[q], loc, done, out, count, buf
            )
        scan = lvl_ptr[lv]
        q = level_start
        while True:
            while q < count:
                count = _number_neighbours(
                    indptr, indices, deg, comp, final, lv, out[q], loc, done, out, count, buf
                )
                q += 1
            while scan < lvl_ptr[lv + 1] and done[by_level[scan]]:
                scan += 1
            if scan == lvl_ptr[lv + 1]:
                break
            out[count] = by_level[scan]
            done[by_level[scan]] = True
            count += 1
        prev_lo, prev_hi = level_start, count
    return out


@numba.njit(cache=True)
def _number_neighbours(indptr, indices, deg, comp, final, lv, x_local, loc, done, out, count, buf):
    """Number the unnumbered neighbours of ``x_local`` in level ``lv``, by increasing degree."""
    x = comp[x_local]
    nb = 0
    for p in range(indptr[x], indptr[x + 1]):
        j = loc[indices[p]]
        if not done[j] and final[j] == lv:
            buf[nb] = indices[p]
            nb += 1
    _sort_by_degree(buf, nb, deg)
    for t in range(nb):
        j = loc[buf[t]]
        out[count] = j
        done[j] = True
        count += 1
    return count


@numba.njit(cache=True)
def _sorted_members(level, order, size, first):
    """The ``size`` vertices that a BFS reached, ascending: a scan from ``first`` (the
    component's lowest vertex) when the component is a large share of the graph, else a sort."""
    n = level.size
    if size * 16 < n - first:
        return np.sort(order[:size])
    out = np.empty(size, np.int64)
    c = 0
    for v in range(first, n):
        if level[v] >= 0:
            out[c] = v
            c += 1
            if c == size:
                break
    return out


@numba.njit(cache=True)
def _gps(indptr, indices):
    n = indptr.size - 1
    deg = (indptr[1:] - indptr[:-1]).astype(np.int64)
    perm = np.empty(n, np.int64)
    lev_v = np.full(n, -1, np.int64)
    lev_u = np.full(n, -1, np.int64)
    lev_t = np.full(n, -1, np.int64)
    ord_v = np.empty(n, np.int64)
    ord_u = np.empty(n, np.int64)
    ord_t = np.empty(n, np.int64)
    loc = np.full(n, -1, np.int64)
    seen = np.zeros(n, np.bool_)
    count = 0
    for s in range(n):
        if seen[s]:
            continue
        size = _bfs(indptr, indices, s, lev_t, ord_t)[0]
        comp = _sorted_members(lev_t, ord_t, size, s)
        _reset(lev_t, ord_t, size)
        root = comp[0]
        for i in range(size):
            seen[comp[i]] = True
            loc[comp[i]] = i
            if deg[comp[i]] < deg[root]:
                root = comp[i]
        v, u, _, depth, width_v, width_u = _endpoints(
            indptr, indices, deg, root, lev_v, ord_v, lev_t, ord_t
        )
        _bfs(indptr, indices, u, lev_u, ord_u)
        final = _combine(indptr, indices, comp, lev_v, lev_u, depth, width_v, width_u, loc)
        if deg[u] < deg[v]:
            final = depth - 1 - final
            start = loc[u]
        else:
            start = loc[v]
        out = _number(indptr, indices, deg, comp, final, depth, start, loc)
        for i in range(size):
            perm[count + i] = comp[out[size - 1 - i]]
        count += size
        _reset(lev_v, ord_v, size)
        _reset(lev_u, ord_u, size)
    return perm


def gps_ordering(adjacency: sp.spmatrix) -> np.ndarray:
    """GPS permutation of a symmetric adjacency: new vertex ``n`` is old vertex ``perm[n]``.

    Connected components are numbered one after another, in order of their
    lowest vertex.
    """
    adj = sp.csr_matrix(adjacency)
    # 32-bit indices halve the memory traffic of the breadth-first searches.
    index = np.int32 if adj.nnz < 2**31 else np.int64
    return _gps(adj.indptr.astype(index), adj.indices.astype(index))
