"""Every CUDA module compiles: each (scheme, layers, dtype, variant) to PTX with nvcc.

Runs wherever ``nvcc`` is on PATH (no GPU needed), so kernel syntax and type
errors fail CI; compiles exactly the source and options NVRTC gets at run time.
"""

from __future__ import annotations

import shutil
import subprocess
import sys

import numpy as np
import pytest

from fvswe.backends import gpu

NVCC = shutil.which("nvcc")
COMBOS = [
    (scheme, layers, dtype, variant, 3)
    for scheme, layers in sorted(gpu.SCHEME_DEFINES)
    if not (scheme == "pvm-ifcp" and layers == 1)  # the same module as hll
    for dtype in ("float32", "float64")
    for variant in gpu.VARIANTS
] + [("pvm-ifcp", 2, "float32", variant, 4) for variant in gpu.VARIANTS]


def test_import_does_not_need_cupy():
    code = "import sys, fvswe, fvswe.backends.gpu; assert 'cupy' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)
    ok, reason = gpu.available()
    assert isinstance(ok, bool) and reason and "\n" not in reason


@pytest.mark.skipif(NVCC is None, reason="nvcc is not on PATH: cannot compile the CUDA sources")
@pytest.mark.parametrize(("scheme", "layers", "dtype", "variant", "k"), COMBOS)
def test_compiles_to_ptx(tmp_path, scheme, layers, dtype, variant, k):
    src = tmp_path / f"{variant}.cu"
    src.write_text(gpu.source(variant))
    opts = gpu.compile_options(scheme, layers, np.dtype(dtype), variant, k)
    cmd = [NVCC, "--ptx", "-arch=sm_90", *opts, "-o", str(tmp_path / "out.ptx"), str(src)]
    res = subprocess.run(cmd, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr[-4000:]
    ptx = (tmp_path / "out.ptx").read_text()
    kernels = ("edge_pass", "volume_pass") if variant == "edge" else ("gather_step",)
    for name in (*kernels, "find_invalid", "debug_flux"):
        assert f".entry {name}(" in ptx
