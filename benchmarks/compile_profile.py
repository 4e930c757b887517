"""Where a cold first run's Numba compile time goes: per dispatcher, its signatures and seconds.

Runs ``fvswe run CASE --backend cpu`` in a child process on a fresh, empty
``NUMBA_CACHE_DIR`` with a listener on Numba's ``numba:compile`` events, and prints per
dispatcher the seconds of its own compilation (its callees' excluded), the seconds
including them, and each signature it was compiled for; first the command's wall and CPU
seconds, its ``setup_s`` (to the first step) and the seconds spent compiling. A function
compiled for two signatures in one run (int32 and int64, readonly and writable, C and A
layout) is compiled twice: the duplicates are pure cost. ``--warm`` repeats the run on the
cache the first left.

    PYTHONPATH=$PWD python benchmarks/compile_profile.py test1 [--t-end 0.001] [--warm]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import defaultdict


class Recorder:
    """Per dispatcher: exclusive and inclusive seconds, and the signatures compiled."""

    def __init__(self):
        self.stack: list[list] = []
        self.own: dict[str, float] = defaultdict(float)
        self.inclusive: dict[str, float] = defaultdict(float)
        self.signatures: dict[str, list[str]] = defaultdict(list)

    def on_start(self, event):
        self.stack.append([event.data, time.perf_counter(), 0.0])

    def on_end(self, event):
        data, start, children = self.stack.pop()
        spent = time.perf_counter() - start
        f = data["dispatcher"].py_func
        name = f"{f.__module__}.{f.__qualname__}"
        self.own[name] += spent - children
        if not any(d["dispatcher"] is data["dispatcher"] for d, _, _ in self.stack):
            self.inclusive[name] += spent
        self.signatures[name].append(", ".join(map(str, data["args"])))
        if self.stack:
            self.stack[-1][2] += spent

    def report(self) -> dict:
        names = sorted(self.own, key=self.own.get, reverse=True)
        return {"compile_s": round(sum(self.own.values()), 2),
                "dispatchers": [{"name": n, "own_s": round(self.own[n], 2),
                                 "with_callees_s": round(self.inclusive[n], 2),
                                 "signatures": self.signatures[n]} for n in names]}  # fmt: skip


def child(argv: list[str]) -> None:
    """Run the command in this process under the recorder; print one JSON line."""
    from numba.core import event

    recorder = Recorder()

    class Listener(event.Listener):
        def on_start(self, ev):
            recorder.on_start(ev)

        def on_end(self, ev):
            recorder.on_end(ev)

    event.register("numba:compile", Listener())
    wall, cpu = time.perf_counter(), time.process_time()
    from fvswe.cli import main

    with contextlib.redirect_stdout(io.StringIO()) as said:
        status = main(argv)
    setup = json.loads(said.getvalue() or "{}").get("setup_s")
    out = {"status": status, "wall_s": round(time.perf_counter() - wall, 2),
           "cpu_s": round(time.process_time() - cpu, 2), "setup_s": setup,
           **recorder.report()}  # fmt: skip
    print(json.dumps(out))


def spawn(cache: str, argv: list[str]) -> dict:
    env = {**os.environ, "NUMBA_CACHE_DIR": cache}
    cmd = [sys.executable, __file__, "--child", *argv]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    if done.returncode:
        sys.exit(done.stderr.strip().splitlines()[-1] if done.stderr else "child failed")
    return json.loads(done.stdout.strip().splitlines()[-1])


def show(label: str, result: dict) -> None:
    """One line of totals, then one per dispatcher (own seconds, signatures)."""
    heads = ("status", "wall_s", "cpu_s", "setup_s", "compile_s")
    print(label, json.dumps({k: result[k] for k in heads}), flush=True)
    for d in result["dispatchers"]:
        n = len(d["signatures"])
        print(f"  {d['own_s']:7.2f} {d['with_callees_s']:7.2f}  x{n} {d['name']}")
        if n > 1:
            for sig in d["signatures"]:
                print(f"{'':22}({sig})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("case")
    parser.add_argument("--t-end", default="0.001", help="seconds of simulated time")
    parser.add_argument("--warm", action="store_true", help="then once more on that cache")
    parser.add_argument("--json", action="store_true", help="the raw JSON lines instead")
    if sys.argv[1:2] == ["--child"]:
        child(sys.argv[2:])
        return
    args = parser.parse_args()
    argv = ["run", args.case, "--backend", "cpu", "--t-end", args.t_end, "--json", "--quiet"]
    print(f"load: {os.getloadavg()}", flush=True)
    with tempfile.TemporaryDirectory(prefix="fvswe-numba-") as cache:
        runs = [("cold", spawn(cache, argv))]
        if args.warm:
            runs.append(("warm", spawn(cache, argv)))
    for label, result in runs:
        print(label, json.dumps(result)) if args.json else show(label, result)
    print(f"load: {os.getloadavg()}")


if __name__ == "__main__":
    main()
