"""The suite's pytest hooks.

Under pytest-xdist (``-n``), each module in ``ONE_WORKER`` runs all its tests on one worker:
their module fixtures are expensive (the MPI launches of test_mpi and test_gpu_ranks_host,
50-70 s each; the quick reorder study; the slide's coarse run), and every worker that drew one
of their tests set them up again. Every other test is distributed one by one, as
``--dist load`` does. (xdist's own ``loadgroup`` cannot do this under pytest 9.2: it tags
``item._nodeid``, which pytest no longer reads.)
"""

from __future__ import annotations

import pytest

ONE_WORKER = frozenset(
    {
        "tests/test_mpi.py",
        "tests/test_gpu_ranks_host.py",
        "tests/test_reorder_impact.py",
        "tests/test_slide_tsunami.py",
    }
)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """The ``load`` default, with the ``ONE_WORKER`` modules kept whole (an explicit other
    ``--dist`` wins)."""
    if config.getoption("dist") != "load":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class ModulesKeptWhole(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            module = nodeid.split("::", 1)[0]
            return module if module in ONE_WORKER else nodeid

    return ModulesKeptWhole(config, log)
