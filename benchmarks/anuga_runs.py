"""A benchmark's ANUGA set-up run in another interpreter, one with ``pip install anuga`` (ANUGA
is no fvswe dependency, and the two need not share an environment): the module's
``anuga_worker(alg, output)`` writes what it measured to an npz file, read back here."""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent


def anuga_run(python: str, module: str, alg: str, *args: str) -> dict[str, np.ndarray]:
    """``module.anuga_worker(alg, output, *args)`` (a module of benchmarks/) in the interpreter
    ``python``; the arrays it saved."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "anuga.npz"
        code = (f"import sys; sys.path.insert(0, {str(HERE)!r}); import {module}; "
                f"{module}.anuga_worker({alg!r}, {str(out)!r}, *{args!r})")  # fmt: skip
        subprocess.run([python, "-c", code], check=True, cwd=tmp)
        with np.load(out) as data:
            return {k: data[k] for k in data.files}
