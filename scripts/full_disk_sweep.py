"""A disk that fills at every point of a run: `fvswe run` onto tmpfs mounts of many sizes.

Issue 34's sweep, too slow for CI (tests/test_faults.py keeps three sizes). Each run must
end with one line on stderr and exit status 2, never a signal; leave its series readable
(XDMF through h5py, NetCDF through netCDF4) and no hidden file; and a checkpoint it leaves
must restart, on a roomy disk, to the uninterrupted run's final state bit for bit. Needs
unshare(1) and tmpfs mounts in a user namespace.

    python scripts/full_disk_sweep.py [--cells 128] [--sizes 16k,24k,...] [--formats xdmf,netcdf]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

import h5py
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from fvswe import output  # noqa: E402
from fvswe.mesh import write_mesh  # noqa: E402
from fvswe.mesh.generate import square  # noqa: E402

RUN = ["run", "test1", "--t-end", "0.2", "--output-every", "0.01", "--checkpoint-every",
       "0.02", "--backend", "cpu", "-q"]  # fmt: skip
SIZES = "8k,16k,24k,32k,48k,64k,96k,128k,160k,192k,256k,320k,384k,512k,768k,1M"


def fvswe(argv: list[str], tmpfs: str | None = None, mnt: Path | None = None):
    """``python -m fvswe argv``, with ``mnt`` a fresh tmpfs of ``tmpfs`` bytes (a private mount
    namespace: what the run leaves is copied to ``mnt``'s sibling ``keep`` before it goes)."""
    cmd = [sys.executable, "-m", "fvswe", *argv]
    if tmpfs is not None:
        mnt.mkdir()
        keep = mnt.with_name("keep")
        keep.mkdir()
        script = (f'mount -t tmpfs -o size={tmpfs} sweep {mnt} || exit 99; "$@"; rc=$?; '
                  f"cp -a {mnt}/. {keep}/; exit $rc")  # fmt: skip
        cmd = ["unshare", "-rm", "sh", "-c", script, "sh", *cmd]
    return subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)


def outputs(out: Path, fmt: str) -> int:
    """How many outputs the series in ``out`` holds, reading every one (0: none there)."""
    if fmt == "xdmf":
        if not (out / "solution.xdmf").exists():
            return 0
        steps = output.Series.read_index(out / "solution.xdmf")
        for t, name in steps:
            with h5py.File(out / name, "r") as f:
                assert float(f.attrs["t"]) == t, name
        listed = {name for _, name in steps}
        assert {f"solution/{p.name}" for p in (out / "solution").iterdir()} == listed
        return len(steps)
    import netCDF4

    if not (out / "solution.nc").exists():
        return 0
    with netCDF4.Dataset(out / "solution.nc") as ds:
        ds["h1"][:]
        return len(ds["time"])


def check(fmt: str, size: str, mesh: Path, whole: Path, work: Path) -> str:
    """One run onto a full disk of ``size``: what it left, or why it fails the issue's rule."""
    argv = [*RUN, "--mesh", str(mesh), "--format", fmt]
    proc = fvswe([*argv, "-o", str(work / "mnt" / "out")], size, work / "mnt")
    if proc.returncode == 99:
        sys.exit(f"cannot mount a tmpfs here: {proc.stderr.strip()}")
    if proc.returncode == 0:
        return "fits"
    err = proc.stderr
    if proc.returncode != 2 or err.count("\n") != 1 or not err.startswith("fvswe: error: "):
        return f"FAIL exit {proc.returncode}, {err.count(chr(10))} lines: {err[-300:]!r}"
    out = work / "keep" / "out"
    hidden = [p.name for p in out.rglob(".*")] if out.exists() else []
    if hidden:
        return f"FAIL left {hidden}"
    kinds = ["xdmf", "netcdf"] if fmt == "both" else [fmt]
    try:
        kept = [outputs(out, kind) for kind in kinds]
    except Exception as exc:
        return f"FAIL series unreadable: {exc}"
    where = err.split(": cannot write")[0].rsplit("/out/", 1)[-1]
    note = f"{where} failed, {'/'.join(map(str, kept))} outputs kept"
    if (out / "checkpoint.npz").exists():
        restart = fvswe([*argv, "-o", str(out), "--restart", str(out / "checkpoint.npz")])
        with np.load(whole / "final.npz") as a, np.load(out / "final.npz") as b:
            same = restart.returncode == 0 and all(np.array_equal(a[k], b[k]) for k in a.files)
        if not same or any(outputs(out, kind) != outputs(whole, kind) for kind in kinds):
            return f"FAIL the restart from its checkpoint: {restart.stderr[-300:]!r}"
        note += ", restarts bit for bit"
    return note


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", type=int, default=128)
    parser.add_argument("--sizes", default=SIZES)
    parser.add_argument("--formats", default="xdmf,netcdf,both")
    args = parser.parse_args()
    failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        mesh = tmp / "square.npz"
        write_mesh(square(args.cells), mesh)
        for fmt in args.formats.split(","):
            whole = tmp / f"whole-{fmt}"
            made = fvswe([*RUN, "--mesh", str(mesh), "--format", fmt, "-o", str(whole)])
            assert made.returncode == 0, made.stderr
            for size in args.sizes.split(","):
                work = tmp / f"{fmt}-{size}"
                work.mkdir()
                result = check(fmt, size, mesh, whole, work)
                failed += result.startswith("FAIL")
                print(f"{fmt:7} {size:>6}  {result}", flush=True)
    print(f"{failed} failed" if failed else "all runs ended in one line, their files whole")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
