"""pytest plugin: pins each pytest-xdist worker to one GPU (worker gwN -> card N mod NGPU).

    NGPU=4 PYTHONPATH=tests python -m pytest -q -p gpu_pin -n 8 -m gpu tests/

Loaded before any test imports CuPy, so each worker sees one card as device 0.
"""

import os

_worker = os.environ.get("PYTEST_XDIST_WORKER")
if _worker:
    os.environ["CUDA_VISIBLE_DEVICES"] = str(int(_worker[2:]) % int(os.environ.get("NGPU", "1")))
