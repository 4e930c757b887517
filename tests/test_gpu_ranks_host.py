"""GPU ranks' positivity limiter on the host: the parts of a mesh run the CUDA step kernels
through the host shim in lockstep, with fvswe.parallel.GpuHalo's hook emulated between them
(tests/cuda_host/ranks.cpp) and its ``limit_halo`` kernel (fvswe.backends.gpu.HALO_SOURCE);
their owned cells must give the single device's bits (docs/PARALLEL.md, GPU ranks).
The device runs the same through MPI: tests/mpi_driver.py --gpu."""

from __future__ import annotations

import subprocess

import numpy as np
import pytest
from test_cuda_sources import CXX, EMU, emulated_run, host_binary, plan_rows
from test_vanishing import pulled_apart_simulation

from fvswe.backends import gpu
from fvswe.partition import assign, split

HEAD = '#include "shim.h"\n#include "edge.cu"\n#include "gather.cu"\n#include "slot.cu"\n'


def ranks_run(layout, variant: str, t_end: float, nparts: int, theta: bool = True):
    """The owned cells' state (global order) and the parts' control blocks after the parts
    of ``layout`` (pvm-ifcp, non-lagged) ran to ``t_end`` on the host."""
    model, dtype = layout.model, np.dtype(layout.dtype)
    opts = gpu.compile_options("pvm-ifcp", model.layers, dtype, variant, layout.k)
    flags = ["-std=c++17", "-O1", "-ffp-contract=off", "-Wno-psabi"]
    source = HEAD + gpu.HALO_SOURCE + (EMU / "ranks.cpp").read_text()
    exe = host_binary("ranks", source, flags + [o for o in opts if o.startswith("-D")])
    mesh = pulled_apart_simulation(100).mesh
    where = assign(mesh, nparts)
    parts = split(mesh, where)
    index = np.empty(mesh.n_cells, dtype=np.int64)  # each cell's index in its owner's part
    for p in parts:
        index[p.cells[: p.n_owned]] = np.arange(p.n_owned)
    blobs = [
        np.array([nparts, 10**6, theta, gpu.LIMIT_BLOCKS], dtype=np.int32),
        np.array([t_end, 0.9, model.g, model.r, model.eps_h]),
        plan_rows([]),
        *(plan_rows(gpu.step_plan(variant, "nonlagged", s, model.layers)) for s in (0, 1)),
    ]
    for p in parts:
        local = layout.part(p)
        e = local.cell_edges.ravel()
        halo = p.cells[p.n_owned :]
        blobs += [
            np.array([p.cells.size, p.n_owned], dtype=np.int32),
            gpu.pack_state(local.W0, local.H, local.area, model.layers),
            local.area,
            gpu.slot_codes(local),
            local.edge_normal[e],
            local.edge_length[e],
            np.stack([where[halo], index[halo]], axis=1).astype(np.int32),
        ]
    stdin = b"".join(np.ascontiguousarray(b).tobytes() for b in blobs)
    res = subprocess.run([str(exe)], input=stdin, capture_output=True)
    assert res.returncode == 0, res.stderr.decode()[-4000:]
    out, at = res.stdout, 0
    W = np.empty((mesh.n_cells, model.nvar), dtype=dtype)
    ctrls = []
    for p in parts:
        n = p.cells.size * 2 * 4 * dtype.itemsize
        P = np.frombuffer(out[at : at + n], dtype=dtype).reshape(p.cells.size, 2, 4)
        W[p.cells[: p.n_owned]] = gpu.unpack_state(P, model.layers)[: p.n_owned]
        ctrls.append(np.frombuffer(out[at + n :], dtype=gpu.CTRL_DTYPE, count=1)[0])
        at += n + gpu.CTRL_DTYPE.itemsize
    return W, ctrls


COUNTED = ("limited", "clipped", "thin_cells", "nonhyp", "degenerate", "thin")


@pytest.mark.skipif(CXX is None, reason="no host C++ compiler (g++) on PATH")
@pytest.mark.parametrize("variant", ["slot", "gather"])
def test_parts_limit_beside_their_border_as_one_device(variant):
    """An upper layer pulled apart at x = 0, where two parts meet (mpi_driver's case, to
    t = 0.5 s: the limiter acts in 87 cell-layers): two and three parts give the single
    device's state, steps and counters bit for bit; without the theta exchange the two
    parts' state differs (an owned cell beside a halo cell limited by its owner keeps its
    unlimited update)."""
    layout = pulled_apart_simulation(100).layout
    one, c1 = emulated_run(layout, "pvm-ifcp", variant, "nonlagged", 0.5, 10**6)
    assert c1["limited"] == 87 and c1["clipped"] == 0
    for nparts in (2, 3):
        W, ctrls = ranks_run(layout, variant, 0.5, nparts)
        assert np.array_equal(W, one)
        for c in ctrls:
            assert c["steps"] == c1["steps"] and c["t"] == c1["t"]
        for key in COUNTED:
            assert sum(int(c[key]) for c in ctrls) == int(c1[key]), key
    W, _ = ranks_run(layout, variant, 0.5, 2, theta=False)
    assert not np.array_equal(W, one)
