"""Speed proxy without a GPU: registers, spills and instruction counts of two trees' CUDA.

Compiles every (scheme, layers, dtype) module of two checkouts (e.g. main with the
hand-written physics and a branch with the emitted one, docs/CODEGEN.md) with
``nvcc -arch=sm_90 -Xptxas -v`` and the options of ``gpu.compile_options``, and prints per
kernel the registers, spill bytes and stack frame (ptxas), and the PTX instructions of
the kernel and those among them that operate on ``.f64`` (cvt.f64 included; a float32
module computes in float32 when only its float64 control-block arithmetic is left).
``--linear`` compiles the linear reconstruction's modules (docs/GPU.md) and adds their passes'
kernels (``troubled_pass``, ``faces_pass``, ``interior_pass`` where the variant has it);
``--schemes`` keeps those named.

    python benchmarks/codegen_ptx.py OLD_ROOT NEW_ROOT [--variants edge gather slot]
    python benchmarks/codegen_ptx.py OLD_ROOT NEW_ROOT --variants block --linear --schemes roe
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

KERNEL = {"edge": "edge_pass", "gather": "gather_step", "slot": "slot_step", "block": "block_step"}
#: The linear reconstruction's kernels besides the step's (linear.cuh).
LINEAR_KERNELS = ("troubled_pass", "faces_pass", "interior_pass")
#: The tree's source and options, printed as JSON by a child Python on that tree's PYTHONPATH.
PROBE = """
import json, sys
import numpy as np
from fvswe.backends import gpu
try:
    from fvswe.registry import cases
    pairs = cases()
except ImportError:  # a tree with the registry among the schemes, or from before it
    try:
        from fvswe.schemes.registry import cases
        pairs = cases()
    except ImportError:
        pairs = sorted(gpu.SCHEME_DEFINES)
out = {}
linear = sys.argv[1] == "linear"
for variant in sys.argv[2:]:
    out[variant] = {"source": gpu.source(variant), "options": {}}
    for (scheme, layers) in pairs:
        if scheme == "pvm-ifcp" and layers == 1:
            continue
        for dtype in ("float32", "float64"):
            key = f"{scheme}/{layers}/{dtype}"
            extra = {"linear": True} if linear else {}
            out[variant]["options"][key] = gpu.compile_options(scheme, layers, np.dtype(dtype),
                                                               variant, **extra)
print(json.dumps(out))
"""


def probe(root: Path, variants: list[str], linear: bool) -> dict:
    env = {**os.environ, "PYTHONPATH": str(root)}
    args = [sys.executable, "-c", PROBE, "linear" if linear else "constant", *variants]
    res = subprocess.run(args, env=env, cwd=root, check=True, capture_output=True, text=True)
    return json.loads(res.stdout)


def measure(src: str, options: list[str], kernels: tuple[str, ...], tmp: Path) -> dict:
    """``{kernel: {regs, spill, frame, ptx, ptx_f64}}`` of those of ``kernels`` the module
    has."""
    cu = tmp / "k.cu"
    cu.write_text(src)
    opts = [o for o in options if o != "--std=c++17"] + ["-std=c++17"]
    cubin, ptx = tmp / "k.cubin", tmp / "k.ptx"
    cmd = ["nvcc", "-cubin", "-arch=sm_90", "-Xptxas", "-v", *opts, "-o", str(cubin), str(cu)]
    res = subprocess.run(cmd, capture_output=True, text=True, check=True)
    subprocess.run(["nvcc", "--ptx", "-arch=sm_90", *opts, "-o", str(ptx), str(cu)], check=True)
    text, out = ptx.read_text(), {}
    for kernel in kernels:
        if f"Compiling entry function '{kernel}'" not in res.stderr:
            continue
        info = res.stderr.split(f"Compiling entry function '{kernel}'")[1].split("Compiling")[0]
        regs = int(re.search(r"Used (\d+) registers", info).group(1))
        frame = int(re.search(r"(\d+) bytes stack frame", info).group(1))
        spill = re.search(r"(\d+) bytes spill stores, (\d+) bytes spill loads", info)
        body = text.split(f".entry {kernel}(")[1].split(".entry")[0]
        ops = [
            ln.split()[1] if ln.split()[0].startswith("@") else ln.split()[0]
            for ln in body.splitlines()
            if ln.rstrip().endswith(";") and not ln.lstrip().startswith((".", "//", "{", "}"))
        ]
        out[kernel] = {"regs": regs, "spill": int(spill.group(1)) + int(spill.group(2)),
                       "frame": frame, "ptx": len(ops),
                       "ptx_f64": sum(1 for op in ops if ".f64" in op)}  # fmt: skip
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("old", type=Path)
    ap.add_argument("new", type=Path)
    ap.add_argument("--variants", nargs="+", default=["edge", "gather"])
    ap.add_argument("--linear", action="store_true", help="the linear reconstruction's modules")
    ap.add_argument("--schemes", nargs="+", default=None, help="only these schemes")
    a = ap.parse_args()
    trees = {t: probe(root, a.variants, a.linear) for t, root in (("old", a.old), ("new", a.new))}
    cols = ("regs", "spill", "frame", "ptx", "ptx_f64")
    print("| module | kernel | " + " | ".join(f"{c} old/new" for c in cols) + " |")
    print("|---" * (2 + len(cols)) + "|")
    with tempfile.TemporaryDirectory() as d:
        for variant in a.variants:
            kernels = (*LINEAR_KERNELS, KERNEL[variant]) if a.linear else (KERNEL[variant],)
            for key in trees["new"][variant]["options"]:
                if a.schemes and key.split("/")[0] not in a.schemes:
                    continue
                row = {}
                for tree, data in trees.items():
                    opts = data[variant]["options"][key]
                    row[tree] = measure(data[variant]["source"], opts, kernels, Path(d))
                for kernel in kernels:
                    if kernel not in row["new"] or kernel not in row["old"]:
                        continue
                    old, new = row["old"][kernel], row["new"][kernel]
                    cells = " | ".join(f"{old[c]}/{new[c]}" for c in cols)
                    print(f"| {key} | {kernel} | {cells} |", flush=True)


if __name__ == "__main__":
    main()
