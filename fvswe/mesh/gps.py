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

Each component is first renumbered in the order of step 1's first search (a
parallel pass), and the steps run on that copy: the given numbering may scatter
neighbours across memory (the family's "original" order does), the search order
keeps them close. Ties are broken by original vertex id throughout, so the
permutation is the one the steps give on the graph as given.
"""

from __future__ import annotations

import numba
import numpy as np
import scipy.sparse as sp
from numba import prange

#: ``final`` of a vertex that step 3 has numbered (levels are >= 0, -1 is unassigned).
NUMBERED = -3

#: Times a level's search may run dry before its vertices are sorted (see :func:`_number`).
SCANS = 8


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
def _sort_by_degree(buf, n, deg, orig):
    """Insertion sort of ``buf[:n]`` by (degree, original vertex id ``orig``)."""
    for a in range(1, n):
        x = buf[a]
        b = a - 1
        while b >= 0 and (
            deg[buf[b]] > deg[x] or (deg[buf[b]] == deg[x] and orig[buf[b]] > orig[x])
        ):
            buf[b + 1] = buf[b]
            b -= 1
        buf[b + 1] = x


@numba.njit(cache=True)
def _endpoints(indptr, indices, deg, orig, root, found, lev_v, ord_v, lev_u, ord_u, lev_t, ord_t):
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
        _sort_by_degree(cand, cand.size, deg, orig)
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
def _combine(indptr, indices, orig, m, lev_v, lev_u, depth, width_v, width_u, final):
    """Step 2: ``final[x]``, a level for every vertex ``x < m`` (all -1 on entry), from L_v
    and reversed L_u."""
    n_fix = np.zeros(depth, np.int64)
    for x in range(m):
        a, b = lev_v[x], depth - 1 - lev_u[x]
        if a == b:
            final[x] = a
            n_fix[a] += 1
    # Connected pieces of the vertices left over, as segments of ``rest``; -2 marks a
    # vertex taken into a piece, until the piece's levels are chosen. ``in_v``/``in_u``
    # hold each taken vertex's level in L_v and in reversed L_u, beside it in ``rest``,
    # so that the passes over a piece below read them in sequence. ``first``: a piece's
    # lowest original vertex id.
    rest = np.empty(m, orig.dtype)
    in_v = np.empty(m, orig.dtype)
    in_u = np.empty(m, orig.dtype)
    seg_start = np.empty(m + 1, np.int64)
    first = np.empty(m, orig.dtype)
    n_seg, tail = 0, 0
    for i in range(m):
        if final[i] != -1:
            continue
        seg_start[n_seg] = tail
        first[n_seg] = orig[i]
        final[i] = -2
        rest[tail] = i
        head = tail
        tail += 1
        while head < tail:
            x = rest[head]
            in_v[head] = lev_v[x]
            in_u[head] = depth - 1 - lev_u[x]
            first[n_seg] = min(first[n_seg], orig[x])
            head += 1
            for p in range(indptr[x], indptr[x + 1]):
                j = indices[p]
                if final[j] == -1:
                    final[j] = -2
                    rest[tail] = j
                    tail += 1
        n_seg += 1
    seg_start[n_seg] = tail
    # Largest piece first; among equal sizes, the one holding the lowest original id.
    sizes = seg_start[1 : n_seg + 1] - seg_start[:n_seg]
    by_first = np.argsort(first[:n_seg])
    order = by_first[np.argsort(-sizes[by_first], kind="mergesort")]
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
def _by_level(final, m, depth):
    """The vertices ``0..m-1`` grouped by their level ``final`` (a counting sort, ascending
    within a level) and where each level starts."""
    lvl_ptr = np.zeros(depth + 1, np.int64)
    for x in range(m):
        lvl_ptr[final[x] + 1] += 1
    for lv in range(depth):
        lvl_ptr[lv + 1] += lvl_ptr[lv]
    fill = lvl_ptr[:-1].copy()
    out = np.empty(m, final.dtype)
    for x in range(m):
        out[fill[final[x]]] = x
        fill[final[x]] += 1
    return out, lvl_ptr


@numba.njit(cache=True, inline="always")
def _least_unnumbered(by_level, lo, hi, final, deg, orig):
    """The least unnumbered vertex of ``by_level[lo:hi]`` by (degree, original id), and the
    end of that segment once its numbered vertices are dropped (the others keep their order)."""
    best, keep = -1, lo
    for t in range(lo, hi):
        x = by_level[t]
        if final[x] != NUMBERED:
            by_level[keep] = x
            keep += 1
            if best < 0 or deg[x] < deg[best] or (deg[x] == deg[best] and orig[x] < orig[best]):
                best = x
    return best, keep


@numba.njit(cache=True)
def _least_first(seg, deg, orig):
    """Sort the vertices ``seg`` in place by (degree, original id)."""
    seg[:] = seg[np.argsort(orig[seg])]
    seg[:] = seg[np.argsort(deg[seg], kind="mergesort")]


@numba.njit(cache=True)
def _number(indptr, indices, deg, orig, n_deg, m, final, depth, start):
    """Step 3: level-by-level numbering of the vertices ``0..m-1`` from ``start`` (a vertex
    of level 0).

    A numbered vertex's ``final`` becomes :data:`NUMBERED`, so one load tells whether a
    neighbour is still to be numbered in the current level. When a level's search runs dry,
    the least unnumbered vertex by (degree, original id) starts it again: found by a scan
    of the level's vertices not yet seen numbered for the first :data:`SCANS` times, then
    from the level sorted once (a level of many pieces costs no more than a sort).
    """
    by_level, lvl_ptr = _by_level(final, m, depth)
    out = np.empty(m, final.dtype)
    buf = np.empty(n_deg, final.dtype)
    count = 0
    prev_lo, prev_hi = 0, 0
    for lv in range(depth):
        level_start = count
        if lv == 0:
            out[count] = start
            final[start] = NUMBERED
            count += 1
        for q in range(prev_lo, prev_hi):
            count = _number_neighbours(
                indptr, indices, deg, orig, final, lv, out[q], out, count, buf
            )
        # by_level[lo:left]: the level's vertices, less some of those numbered
        lo, left = lvl_ptr[lv], lvl_ptr[lv + 1]
        q, dry = level_start, 0
        while True:
            while q < count:
                count = _number_neighbours(
                    indptr, indices, deg, orig, final, lv, out[q], out, count, buf
                )
                q += 1
            if count - level_start == lvl_ptr[lv + 1] - lvl_ptr[lv]:
                break
            dry += 1
            if dry <= SCANS:
                x, left = _least_unnumbered(by_level, lo, left, final, deg, orig)
            else:
                if dry == SCANS + 1:
                    _least_first(by_level[lo:left], deg, orig)
                    scan = lo
                while final[by_level[scan]] == NUMBERED:
                    scan += 1
                x = by_level[scan]
            out[count] = x
            final[x] = NUMBERED
            count += 1
        prev_lo, prev_hi = level_start, count
    return out


@numba.njit(cache=True, inline="always")
def _number_neighbours(indptr, indices, deg, orig, final, lv, x, out, count, buf):
    """Number the unnumbered neighbours of ``x`` in level ``lv``, by increasing degree."""
    nb = 0
    for p in range(indptr[x], indptr[x + 1]):
        j = indices[p]
        if final[j] == lv:
            buf[nb] = j
            nb += 1
    _sort_by_degree(buf, nb, deg, orig)
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


@numba.njit(cache=True, parallel=True)
def _renumbered(indptr, indices, level, order, m, new_of, ptr, idx, deg, orig, lev, ordr):
    """The component that a search listed in ``order[:m]`` (``level``: its levels) as a graph
    of its own, vertex ``i`` being ``order[i]``: the steps' scattered reads then stay near
    each other (the search order is local), where the given numbering may be far from it.

    Fills the renumbered graph's ``ptr``/``idx`` (CSR, each row's neighbours in their
    given order), ``deg``, ``orig`` (original ids) and ``lev``/``ordr`` (the search), and
    resets ``level`` over the component. All writes are to distinct places, so the result
    does not depend on the number of threads.
    """
    for i in prange(m):
        x = order[i]
        new_of[x] = i
        orig[i] = x
        deg[i] = indptr[x + 1] - indptr[x]
        lev[i] = level[x]
        level[x] = -1
        ordr[i] = i
    ptr[0] = 0
    for i in range(m):
        ptr[i + 1] = ptr[i] + deg[i]
    for i in prange(m):
        x = orig[i]
        q = ptr[i]
        for p in range(indptr[x], indptr[x + 1]):
            idx[q] = new_of[indices[p]]
            q += 1


@numba.njit(cache=True, parallel=True)
def _in_original_ids_reversed(out, orig, perm):
    """``perm[i] = orig[out[m - 1 - i]]``: step 3's numbering, reversed, in original ids."""
    m = out.size
    for i in prange(m):
        perm[i] = orig[out[m - 1 - i]]


@numba.njit(cache=True)
def _gps(indptr, indices, level, order, sub, levels, orders, new_of, final, seen, perm):
    """GPS of the graph ``(indptr, indices)`` (CSR, rows ascending) into ``perm``.

    Per component: a search from a vertex of least degree (``level``/``order``), the
    component renumbered in that search's order (:func:`_renumbered`, into ``sub``), and
    the three steps on the renumbered graph, ties broken by original id as on the given
    one, so the permutation is the same. The vertex arrays (``level`` and ``levels`` all -1,
    ``final`` all -1, ``seen`` all False) serve the whole graph and are reset after use.
    """
    n = indptr.size - 1
    deg = indptr[1:] - indptr[:-1]
    n_deg = deg.max() + 1 if n else 1
    sub_ptr, sub_idx, sub_deg, orig = sub[0], sub[1], sub[2], sub[3]
    lev_v, lev_u, lev_t = levels[0], levels[1], levels[2]
    ord_v, ord_u, ord_t = orders[0], orders[1], orders[2]
    count = 0
    # A connected graph (the usual mesh) is one component, rooted at its first vertex of
    # least degree: the search from there, step 1's first, also finds the component.
    root = np.argmin(deg) if n else 0
    found = _bfs(indptr, indices, root, level, order) if n else (0, 0, 0)
    whole = found[0] == n
    if not whole:
        _reset(level, order, found[0])
    for s in range(n):
        if seen[s]:
            continue
        if whole:
            size = n
            seen[:] = True
        else:
            size = _bfs(indptr, indices, s, level, order)[0]
            comp = _sorted_members(level, order, size, s)
            _reset(level, order, size)
            root = comp[0]
            for i in range(size):
                seen[comp[i]] = True
                if deg[comp[i]] < deg[root]:
                    root = comp[i]
            found = _bfs(indptr, indices, root, level, order)
        renumbered = (sub_ptr, sub_idx, sub_deg, orig, lev_v, ord_v)
        _renumbered(indptr, indices, level, order, size, new_of, *renumbered)
        (v, u, depth, width_v, width_u), arrays = _endpoints(
            sub_ptr, sub_idx, sub_deg, orig, 0, found, lev_v, ord_v, lev_u, ord_u, lev_t, ord_t
        )
        lev_v, ord_v, lev_u, ord_u, lev_t, ord_t = arrays
        _combine(sub_ptr, sub_idx, orig, size, lev_v, lev_u, depth, width_v, width_u, final)
        start = v
        if sub_deg[u] < sub_deg[v]:
            start = u
            for x in range(size):
                final[x] = depth - 1 - final[x]
        out = _number(sub_ptr, sub_idx, sub_deg, orig, n_deg, size, final, depth, start)
        _in_original_ids_reversed(out, orig, perm[count : count + size])
        count += size
        final[:size] = -1
        lev_v[:size] = -1
        lev_u[:size] = -1


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
    indices = adj.indices.astype(index, copy=False)
    perm = np.empty(n, np.int64)
    _gps(
        adj.indptr.astype(index),
        indices,
        np.full(n, -1, index),
        np.empty(n, index),
        (np.empty(n + 1, index), np.empty_like(indices), *np.empty((2, n), index)),
        np.full((3, n), -1, index),
        np.empty((3, n), index),
        np.empty(n, index),
        np.full(n, -1, index),
        np.zeros(n, np.bool_),
        perm,
    )
    return perm
