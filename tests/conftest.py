"""The suite's pytest hooks.

Under pytest-xdist (``-n``), tests that share an expensive module fixture carry an
``xdist_group`` mark (the MPI launches of tests/test_mpi.py and tests/test_gpu_ranks_host.py)
and each group runs on one worker, so its fixture runs once instead of once on every worker
that draws one of its tests; every other test is distributed as ``--dist load`` does.
"""

from __future__ import annotations

import pytest


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """``--dist loadgroup`` in place of the default ``load`` (an explicit ``--dist`` wins)."""
    if config.getoption("dist") != "load":
        return None
    from xdist.scheduler import LoadGroupScheduling

    return LoadGroupScheduling(config, log)
