"""The largest run from per-part files: a mesh that no rank holds, cut once, each rank reading
its own part (issue 28, "Meshes that no single rank holds"; docs/PARALLEL.md, "The largest
run").

    python3 benchmarks/largest.py --runs square-4k:2,square-256k:2 --out cpu.json
    python3 benchmarks/largest.py --runs square-4k:4,square-33m:4,square-133m:4 \
        --backend gpu --dtype float32 --scheme pvm-ifcp --method hilbert \
        --mpiexec "mpirun --allow-run-as-root" --work /tmp/largest --out largest_gpu.json

For each ``MESH:P`` of ``--runs``: the family member is built (refined from the finest
cached member below it; timed, with its process's peak resident memory), cut by ``fvswe mesh
partition MESH -n P --order O -o DIR`` (timed, peak), then run by ``mpiexec -n P fvswe run
CASE --parts DIR`` to ``--t-end`` (each rank reads the manifest and its own part file only).
A row holds the summary's time to the first step and its stages, the speed, and each rank's
peak resident memory and device memory (CuPy's pool), and those per owned cell above the
first run's (Python, the libraries and a CUDA context: give a small mesh first). A rank whose
memory does not grow with the global mesh beyond its part shows the same bytes per owned
cell on every mesh. The JSON is rewritten after each row, so a cut call keeps what it ran.
Where one call may not take a row's build, cut and run (a device call's time limit),
``--stop build``, then ``--stop cut``, then ``--reuse`` run them in three calls on one
``--work`` folder (the mesh cache and the part files stay between them).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def timed(argv: list[str], env: dict, what: str) -> tuple[float, int, str]:
    """``argv``'s wall time (s), its process's peak resident memory (bytes, ``wait4``'s
    ``ru_maxrss``: the launcher's, for ``mpiexec``) and its output; exits in one line naming
    ``what`` on failure."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        start = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=out, stderr=err, env=env, cwd=ROOT, text=True)
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - start
        out.seek(0), err.seek(0)
        stdout, stderr = out.read(), err.read()
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        tail = " | ".join((stdout + stderr).strip().splitlines()[-4:])
        sys.exit(f"largest: {what} failed (exit {code}): {tail}")
    return seconds, usage.ru_maxrss * 1024, stdout


def last_json(stdout: str, what: str) -> dict:
    """The last line of ``stdout`` that is a JSON object (a launcher may print after it)."""
    for line in reversed(stdout.splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    sys.exit(f"largest: {what} printed no JSON summary")


def environment(args) -> dict:
    """The children's environment: this checkout's fvswe, NVLink multicast off (GPU ranks)."""
    path = os.pathsep.join(filter(None, (str(ROOT), os.environ.get("PYTHONPATH"))))
    return {**os.environ, "PYTHONPATH": path, "NCCL_NVLS_ENABLE": "0",
            "NUMBA_NUM_THREADS": str(args.threads)}  # fmt: skip


def prepare(mesh: str, ranks: int, folder: Path, args, env: dict) -> dict:
    """Build ``mesh`` (cached) and cut it into ``ranks`` part files under ``folder`` (with
    ``--reuse``, a partition already there is taken as it is; ``--stop build``: no cut)."""
    build = f"from fvswe.mesh import family; family({mesh!r})"
    build_s, build_peak, _ = timed([sys.executable, "-c", build], env, f"building {mesh}")
    row = {"mesh": mesh, "ranks": ranks, "build_s": build_s, "build_peak_bytes": build_peak}
    if args.stop == "build":
        return row
    cut_s = cut_peak = None
    if args.reuse and (folder / "manifest.json").is_file():
        parts = json.loads((folder / "manifest.json").read_text())
    else:
        cut = [sys.executable, "-m", "fvswe", "mesh", "partition", mesh, "-n", str(ranks),
               "--order", args.order, "--method", args.method, "-o", str(folder),
               "--json"]  # fmt: skip
        cut_s, cut_peak, stdout = timed(cut, env, f"cutting {mesh} into {ranks}")
        parts = last_json(stdout, "the cut")
    return {**row, "cells": parts["cells"], "owned": parts["owned"], "halo": parts["halo"],
            "method": parts["method"], "cut_s": cut_s, "cut_peak_bytes": cut_peak,
            "part_bytes": sum(f.stat().st_size for f in folder.glob("part-*.npz"))}  # fmt: skip


def run(mesh: str, folder: Path, ranks: int, args, env: dict) -> dict:
    """``mpiexec -n ranks fvswe run CASE --mesh mesh --parts folder`` (the mesh named, not
    read): its summary's figures."""
    argv = [*shlex.split(args.mpiexec), "-n", str(ranks), sys.executable, "-m", "fvswe", "run",
            args.case, "--mesh", mesh, "--parts", str(folder), "--backend", args.backend,
            "--dtype", args.dtype, "--scheme", args.scheme, "--order", args.order,
            "--t-end", str(args.t_end), "--threads", str(args.threads), "--json", "-q"]  # fmt: skip
    wall, _, stdout = timed(argv, env, f"the run on {ranks} ranks")
    s = last_json(stdout, "the run")
    keys = ("setup_s", "setup_stages", "steps", "wall_s", "cell_steps_per_s", "peak_rss_bytes",
            "device_bytes", "holds_part")  # fmt: skip
    return {"launch_s": wall, **{k: s[k] for k in keys}}


def per_owned(row: dict, first: dict | None, key: str) -> list[float] | None:
    """Each rank's ``key`` bytes above the first row's same rank, per owned cell above it."""
    if first is None or first["ranks"] != row["ranks"]:
        return None
    return [(b - b0) / max(1, n - n0) for b, b0, n, n0 in
            zip(row[key], first[key], row["owned"], first["owned"], strict=True)]  # fmt: skip


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", default="square-4k:2,square-64k:2",
                   help="MESH:RANKS pairs, comma-separated (a small mesh first)")  # fmt: skip
    p.add_argument("--case", default="test1")
    p.add_argument("--backend", default="cpu", choices=("cpu", "gpu"))
    p.add_argument("--dtype", default="float64", choices=("float32", "float64"))
    p.add_argument("--scheme", default="roe")
    p.add_argument("--order", default="hilbert", help="the cells' order (the cut's and run's)")
    p.add_argument("--method", default="auto", choices=("auto", "metis", "hilbert"))
    p.add_argument("--t-end", type=float, default=1e-5, help="simulated seconds a run")
    p.add_argument("--threads", type=int, default=1, help="CPU ranks: Numba threads a rank")
    p.add_argument("--mpiexec", default="mpiexec", help="the launcher and its options")
    p.add_argument("--work", default=None, help="where the part files go (default: a temp)")
    p.add_argument("--keep", action="store_true", help="keep the part files")
    p.add_argument("--stop", choices=("build", "cut"),
                   help="stop each row after building the mesh, or after cutting it (the "
                   "part files kept): steps of one run in calls of their own")  # fmt: skip
    p.add_argument("--reuse", action="store_true",
                   help="take a partition already in --work as it is (no cut)")  # fmt: skip
    p.add_argument("--out", default="largest.json")
    args = p.parse_args(argv)
    env, work = environment(args), Path(args.work or tempfile.mkdtemp(prefix="largest-"))
    work.mkdir(parents=True, exist_ok=True)
    report = {"date": datetime.date.today().isoformat(), "host": platform.node(),
              "args": vars(args), "rows": []}  # fmt: skip
    first = None
    for spec in args.runs.split(","):
        mesh, _, ranks = spec.partition(":")
        folder = work / f"{mesh}-{ranks}"
        row = prepare(mesh, int(ranks or 2), folder, args, env)
        if args.stop is None:
            row.update(run(mesh, folder, row["ranks"], args, env))
            row["rss_per_owned_cell"] = per_owned(row, first, "peak_rss_bytes")
            row["device_per_owned_cell"] = per_owned(row, first, "device_bytes")
            first = first or row
        report["rows"].append(row)
        Path(args.out).write_text(json.dumps(report, indent=1) + "\n")
        shown = ("mesh", "ranks", "build_s", "cut_s", "setup_s", "peak_rss_bytes",
                 "rss_per_owned_cell")  # fmt: skip
        print(json.dumps({k: row[k] for k in shown if k in row}))
        if not args.keep and args.stop is None and folder.exists():
            shutil.rmtree(folder)


if __name__ == "__main__":
    main()
