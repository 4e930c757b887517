"""GPU ranks on the host: the GPU backend's distributed runs without a GPU.

``mpiexec -n 3`` (every run) and ``-n 2`` (the block variant's: :func:`runs_on`) of
tests/mpi_driver.py run the GPU backend on the host runtime
(tests/host_runtime.py: its plans, launches and kernels, the CUDA built by g++ with the
emulator) with its halo hook (fvswe.backends.gpu.halo.GpuHalo, staging through host memory
and MPI, as ranks sharing a GPU do); the owned cells, steps, counters and section volumes
(count_edges: each cut edge counted by its rank) must be the single device's bit for bit, and so are
the masses (each rank's exact partial sums on its device, fvswe.exactsum), with
the positivity limiter acting beside the parts' borders and with the multi-stage integrators.
The device runs the same with NCCL: tests/mpi_driver.py --gpu.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from mpi_driver import PULLED_SECTION, TIDE_SECTION, blowup_message, run_case
from test_cuda_sources import CXX
from test_mpi import launch_runs, mpiexec, pytestmark  # noqa: F401  (needs mpi4py and mpiexec)

from fvswe.cases import get_case

HOST = {"backend": "host-gpu"}
#: The limiter beside the borders in three variants, the multi-stage integrators (stage
#: halos, the deferred Δt, the weighted inflow of a level boundary), a float32 run, a
#: moving bed (the bed computed by every rank for its halo cells too) and the linear
#: reconstruction (the variables' ranges reduced over the ranks, the halo cells' face states
#: from their owners; with the limiter acting and cells fallen back to first order), also on
#: a strip periodic across (the joined cells' weights see the translation); two layers on a
#: lon/lat band on the sphere (FVSWE_SPHERE modules, the metric per part). The block variant
#: (its blocks tile the owned cells; blocks of 32 and 64 cells, so that many blocks hold
#: border cells and edges to the halo): the limiter beside the borders, float32 SSP-RK3, the
#: level boundary's inflow under SSP-RK2, the linear reconstruction with the limiter acting;
#: and no variant asked for on 16900 cells in Hilbert
#: order, where one device's default is block: the ranks run it too (``variant`` compared).
RUNS = [
    *({"name": f"pulled-apart-{v}", "case": "pulled-apart", "nx": 100, "t_end": 0.5,
       "variant": v, "section": PULLED_SECTION, **HOST} for v in ("slot", "gather", "edge")),
    {"name": "pulled-apart-block", "case": "pulled-apart", "nx": 100, "t_end": 0.5,
     "variant": "block", "cells": 32, "section": PULLED_SECTION, **HOST},
    {"name": "test1-rk3-float32-block", "case": "test1", "scheme": "roe", "t_end": 0.02,
     "dtype": "float32", "variant": "block", "cells": 64, "integrator": "ssp-rk3", **HOST},
    {"name": "tide-block-rk2", "case": "cgrid-tide", "nx": 12, "t_end": 1800.0, "variant": "block",
     "cells": 32, "integrator": "ssp-rk2", "section": TIDE_SECTION, **HOST},
    {"name": "pulled-apart-linear-block", "case": "pulled-apart", "nx": 60, "t_end": 0.3,
     "variant": "block", "cells": 32, "integrator": "ssp-rk2", "reconstruction": "linear",
     **HOST},
    {"name": "tide-hilbert-float32", "case": "cgrid-tide", "nx": 130, "t_end": 20.0,
     "order": "hilbert", "dtype": "float32", "section": TIDE_SECTION, **HOST},
    {"name": "pulled-apart-rk2", "case": "pulled-apart", "nx": 100, "t_end": 0.5,
     "variant": "gather", "integrator": "ssp-rk2", **HOST},
    {"name": "test1-rk3-float32", "case": "test1", "scheme": "roe", "t_end": 0.02,
     "dtype": "float32", "variant": "edge", "integrator": "ssp-rk3", **HOST},
    {"name": "tide-rk2", "case": "cgrid-tide", "nx": 12, "t_end": 1800.0, "variant": "gather",
     "integrator": "ssp-rk2", "section": TIDE_SECTION, **HOST},
    {"name": "rain-basin-rk2", "case": "rain-basin", "t_end": 2.0, "variant": "gather",
     "integrator": "ssp-rk2", **HOST},
    {"name": "slide-basin-edge-rk3", "case": "slide-basin", "layers": 2, "t_end": 1.0,
     "variant": "edge", "integrator": "ssp-rk3", **HOST},
    {"name": "test1-linear-gather", "case": "test1", "scheme": "pvm-ifcp", "t_end": 0.02,
     "variant": "gather", "integrator": "ssp-rk2", "reconstruction": "linear", **HOST},
    {"name": "pulled-apart-linear-edge", "case": "pulled-apart", "nx": 60, "t_end": 0.3,
     "variant": "edge", "integrator": "ssp-rk2", "reconstruction": "linear", **HOST},
    {"name": "periodic-strip-linear-edge", "case": "periodic-strip", "nx": 24, "t_end": 0.5,
     "variant": "edge", "integrator": "ssp-rk2", "reconstruction": "linear", **HOST},
    {"name": "sphere-band-edge", "case": "sphere-band", "nx": 6, "layers": 2, "t_end": 21600.0,
     "variant": "edge", **HOST},
    {"name": "unexchanged", "case": "pulled-apart", "nx": 100, "t_end": 0.5, "variant": "gather",
     "no_theta_exchange": True, "allow_mass_error": True, **HOST},
    {"name": "tide-parts", "case": "cgrid-tide", "nx": 12, "t_end": 900.0, "order": "hilbert",
     "variant": "block", "cells": 32, "restart_at": 450.0, "parts": True, **HOST},
    {"name": "test1-linear-parts", "case": "test1", "scheme": "pvm-ifcp", "t_end": 0.02,
     "order": "hilbert", "variant": "block", "cells": 64, "integrator": "ssp-rk2",
     "reconstruction": "linear", "restart_at": 0.01, "parts": True, **HOST},
    {"name": "tide-outflow-parts", "case": "cgrid-tide", "nx": 12, "t_end": 900.0,
     "order": "hilbert", "variant": "block", "cells": 32, "restart_at": 450.0, "parts": True,
     "outflow": ["east", "south", "north"], **HOST},
]  # fmt: skip
#: Block runs again with the state's halo exchange overlapped (``overlap``: the interior
#: blocks launched before the exchange is joined, docs/PARALLEL.md): the limiter beside the
#: borders, SSP-RK3 in float32, the tide's level inflow under SSP-RK2 (each part has interior
#: blocks on 2 and 3 ranks). The host runtime runs each launch at once and the hook issues
#: the exchange at the join, so the interior blocks run before the halo rows come in: they
#: must read none and write no row sent. A wrong split (``misplit``: one border block among
#: the interior ones) must change the bits (it loses mass: let it run on).
OVERLAPPED = {f"{n}-overlap": n for n in ("pulled-apart-block", "test1-rk3-float32-block",
                                          "tide-block-rk2")}  # fmt: skip
RUNS += [
    *({**s, "name": f"{s['name']}-overlap", "overlap": True} for s in RUNS
      if f"{s['name']}-overlap" in OVERLAPPED),
    {**next(s for s in RUNS if s["name"] == "test1-rk3-float32-block"), "name": "misplit",
     "overlap": True, "misplit": True, "allow_mass_error": True},
]  # fmt: skip
KEYS = ("state", "mass", "steps", "counters", "inflow", "limited", "sections", "variant")


@pytest.fixture(scope="module")
def reference():
    """Every run on one host device (an overlapped run's is its run's: one device has no
    halo)."""
    ref = {spec["name"]: run_case(spec) for spec in RUNS if "overlap" not in spec}
    return {**ref, **{name: ref[base] for name, base in OVERLAPPED.items()},
            "misplit": ref["test1-rk3-float32-block"]}  # fmt: skip


def runs_on(n: int) -> list[dict]:
    """The runs launched on ``n`` ranks: every run on 3 (parts with one and with two peers);
    on 2 the block variant's (its split into interior and border blocks is the part's own,
    so each part count tiles differently) and the overlapped ones. The emulated runs are
    CI's longest launches: the other runs' code paths are those of 3 ranks."""
    return [s for s in RUNS if n == 3 or s.get("variant") == "block" or "order" in s
            or "overlap" in s]  # fmt: skip


def _launch(n: int, tmp_path_factory) -> dict:
    folder = tmp_path_factory.mktemp(f"host-gpu{n}")
    return launch_runs(runs_on(n), n, folder, timeout=900)


@pytest.fixture(scope="module")
def launched2(reference, tmp_path_factory):
    return _launch(2, tmp_path_factory)


@pytest.fixture(scope="module")
def launched3(reference, tmp_path_factory):
    return _launch(3, tmp_path_factory)


def ranks_runs(request, n: int) -> dict:
    """The runs of :func:`runs_on` on ``n`` ranks, launched once a module and rank count."""
    return request.getfixturevalue(f"launched{n}")


@pytest.mark.skipif(CXX is None, reason="no host C++ compiler (g++) on PATH")
@pytest.mark.parametrize(
    "n,name",
    [(n, s["name"]) for n in (2, 3) for s in runs_on(n)
     if not s.get("no_theta_exchange") and "misplit" not in s],
)  # fmt: skip
def test_gpu_ranks_give_the_single_device_bits(request, reference, n, name):
    launched = ranks_runs(request, n)
    ref = reference[name]
    assert ref["steps"] > 1
    for key in KEYS:
        assert np.array_equal(launched[f"{name}.{key}"], ref[key]), key
    # an overlapped run launched interior blocks before its halo came in (rank 0's part)
    assert (int(launched[f"{name}.split"]) > 0) == (name in OVERLAPPED)


@pytest.mark.skipif(CXX is None, reason="no host C++ compiler (g++) on PATH")
@pytest.mark.parametrize("n", [2, 3])
def test_a_border_block_run_before_the_halo_is_in_changes_the_bits(request, reference, n):
    """The overlapped runs above are bitwise one device's because no interior block reads a
    halo row: with one border block launched among them (before the exchange is joined: it
    reads stale halo rows) the state differs."""
    launched = ranks_runs(request, n)
    assert int(launched["misplit.split"]) > 1
    assert not np.array_equal(launched["misplit.state"], reference["misplit"]["state"])


@pytest.mark.skipif(CXX is None, reason="no host C++ compiler (g++) on PATH")
@pytest.mark.parametrize("n", [2, 3])
@pytest.mark.parametrize("name", ["tide-parts", "test1-linear-parts", "tide-outflow-parts"])
def test_gpu_ranks_holding_their_parts_alone_restart_on_fewer_bit_for_bit(request, reference, n,
                                                                          name):  # fmt: skip
    """The ranks each read their own part file (cut in Hilbert order, the run's), build their
    layout from it (the linear reconstruction's weights too) and run the block variant to half
    time, write a checkpoint a part, and go on (compared with one device above); P - 1 ranks
    from their own partition (3 -> 2), or one process reading every part (2 -> 1), continue
    that checkpoint: the state, steps, counters and the level boundary's inflow (the tide;
    test 1 at second order) are one device's, bitwise."""
    launched = ranks_runs(request, n)
    ref = reference[name]
    assert ref["steps"] > 1 and (name != "tide-parts" or abs(float(ref["inflow"])) > 1.0)
    assert bool(launched[f"{name}.holds"])  # the ranks held their parts alone
    assert bool(launched[f"{name}-fewer.holds"]) == (n > 2)
    for key in KEYS:
        assert np.array_equal(launched[f"{name}-fewer.{key}"], ref[key]), key


@pytest.mark.skipif(CXX is None, reason="no host C++ compiler (g++) on PATH")
def test_the_limiter_acts_and_its_theta_must_cross_the_border(launched3, reference):
    """The pulled-apart layer limits cell-layers beside the borders (73 with Euler): without
    the exchange of theta, an owned cell beside a halo cell limited by its owner keeps its
    unlimited update and the ranks' state differs from one device's. The section across the
    limited cells (counted edge by edge) has the CPU's volume on one device too."""
    assert int(reference["pulled-apart-gather"]["limited"]) == 73
    gather = next(s for s in RUNS if s["name"] == "pulled-apart-gather")
    cpu = {k: v for k, v in gather.items() if k not in ("backend", "variant")}
    assert np.abs(reference["pulled-apart-gather"]["sections"]).max() > 0
    assert (
        run_case(cpu)["sections"].tobytes()
        == reference["pulled-apart-gather"]["sections"].tobytes()
    )
    assert int(reference["pulled-apart-rk2"]["limited"]) > 50
    assert np.array_equal(
        reference["unexchanged"]["state"], reference["pulled-apart-gather"]["state"]
    )
    assert not np.array_equal(launched3["unexchanged.state"], reference["unexchanged"]["state"])


@pytest.mark.skipif(CXX is None, reason="no host C++ compiler (g++) on PATH")
def test_ranks_default_to_the_block_kernel_where_one_device_does(reference):
    """In Hilbert order one device's default is the block kernel (its blocks compact); the
    ranks, whose variant the tests above compare, run the same."""
    assert str(reference["tide-hilbert-float32"]["variant"]) == "block"
    assert str(reference["pulled-apart-gather"]["variant"]) == "gather"


@pytest.mark.skipif(CXX is None, reason="no host C++ compiler (g++) on PATH")
def test_the_level_boundary_counts_its_inflow_over_the_stages(reference):
    assert abs(float(reference["tide-rk2"]["inflow"])) > 1.0


@pytest.mark.parametrize("order", ["hilbert", "rcm"])
def test_ranks_count_one_devices_twice_evaluated_edges_from_their_parts(order):
    """GPU ranks choose one device's variant from its twice-evaluated edges, which ranks
    holding their parts alone count over their owned edges (each edge one part's, by its
    global cells) and sum: exactly one device's count, in blocks of 32 to 256 cells."""
    from fvswe.backends.layout import Layout, twice_count, twice_evaluated
    from fvswe.mesh import family
    from fvswe.model import Model
    from fvswe.parallel import owned_twice
    from fvswe.partition import assign, split

    mesh = family(4000).reordered(order)[0]
    W0 = np.ones((mesh.n_cells, 3))
    layout = Layout.build(mesh, Model(layers=1), W0, np.zeros(mesh.n_cells),
                          np.zeros(mesh.n_edges, np.int32), np.float64)  # fmt: skip
    for n, method in ((2, "hilbert"), (3, "metis"), (4, "hilbert")):
        parts = split(mesh, assign(mesh, n, method))
        for cells in (32, 128, 256):
            counted = sum(owned_twice(p, layout.part(p).edge_cells, cells) for p in parts)
            assert counted == twice_count(layout.edge_cells, cells) > 0
            assert counted / mesh.n_edges == twice_evaluated(layout.edge_cells, cells)
    assert (twice_evaluated(layout.edge_cells, 256) < 0.15) == (order == "hilbert")


def test_overlap_is_the_block_variants_and_its_switch_is_checked(monkeypatch):
    """``overlap``: the option, else ``FVSWE_OVERLAP``, else the default (block only); asked
    for with another variant, or an unreadable switch: a one-line ConfigError."""
    from fvswe.backends.gpu.halo import OVERLAP_DEFAULT, overlap_mode
    from fvswe.errors import ConfigError

    monkeypatch.delenv("FVSWE_OVERLAP", raising=False)
    assert overlap_mode(None, "block") == OVERLAP_DEFAULT
    assert not overlap_mode(None, "gather") and not overlap_mode(False, "block")
    assert overlap_mode(True, "block")
    with pytest.raises(ConfigError, match="^overlap: only the block variant.* is edge$"):
        overlap_mode(True, "edge")
    monkeypatch.setenv("FVSWE_OVERLAP", "1")
    assert overlap_mode(None, "block") and not overlap_mode(False, "block")
    with pytest.raises(ConfigError, match="variant is slot"):
        overlap_mode(None, "slot")
    monkeypatch.setenv("FVSWE_OVERLAP", "0")
    assert not overlap_mode(None, "block")
    monkeypatch.setenv("FVSWE_OVERLAP", "yes")
    with pytest.raises(ConfigError, match="^FVSWE_OVERLAP: 'yes' is neither 1 nor 0$"):
        overlap_mode(None, "block")


@pytest.mark.skipif(CXX is None, reason="no host C++ compiler (g++) on PATH")
def test_gpu_ranks_look_on_their_devices_and_name_one_processs_blown_up_cell():
    """A look at a sound state copies no rank's state to the host (each GPU rank's backend
    scans its own cells on the device: at 10^8 cells the copy took seconds a look), and a
    blown-up state is still named by the first bad cell over all ranks, one process's."""
    done = mpiexec(3, "tests/mpi_driver.py", "--blowup", "host-gpu", timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    first, message = json.loads(done.stdout.strip().splitlines()[-1])
    assert first > 0 and f"in cell {first} " in message
    assert message == blowup_message(get_case("test1").simulation(backend="cpu"), first)
