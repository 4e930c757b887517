"""The exact sums' cost on NumPy: one pass over the values against CHUNK values at a time.

    python3 benchmarks/exactsum_speed.py --sizes 2080560,8322240 --out exactsum_cpu.json

A run's look sums each layer's volume exactly (``fvswe.exactsum.sums``, docs/PARALLEL.md
"Masses"); this times ``sums`` on ``--sizes`` uniform values (the best of ``--repeats``) with
``exactsum.CHUNK`` as it is and as large as the array (one pass, as before chunks), checks
that both give the same partial sums, and writes the JSON.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import time

import numpy as np

from fvswe import exactsum


def best(x: np.ndarray, chunk: int, repeats: int) -> tuple[float, np.ndarray]:
    """The least of ``repeats`` times of ``sums(x)`` with ``CHUNK = chunk``, and its sums."""
    exactsum.CHUNK, times = chunk, []
    for _ in range(repeats):
        start = time.perf_counter()
        out = exactsum.sums(x)
        times.append(time.perf_counter() - start)
    return min(times), out


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", default="2080560,8322240")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--out", default="exactsum_speed.json")
    args = p.parse_args(argv)
    chunk, rows = exactsum.CHUNK, []
    for n in (int(v) for v in args.sizes.split(",")):
        x = np.random.default_rng(n).random(n) * 3.2
        whole_s, whole = best(x, n, args.repeats)
        chunked_s, chunked = best(x, chunk, args.repeats)
        if not np.array_equal(whole, chunked):
            raise SystemExit(f"exactsum_speed: {n} values: the chunked sums differ")
        rows.append({"values": n, "one_pass_s": whole_s, "chunked_s": chunked_s,
                     "speedup": whole_s / chunked_s})  # fmt: skip
        print(f"{n:>10} values: one pass {whole_s:.4f} s, chunks of {chunk} {chunked_s:.4f} s "
              f"({whole_s / chunked_s:.2f}x)")  # fmt: skip
    exactsum.CHUNK = chunk
    report = {"date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
              "host": platform.node(), "cpus": os.cpu_count(), "numpy": np.__version__,
              "chunk": chunk, "rows": rows}  # fmt: skip
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(report, f, indent=1)


if __name__ == "__main__":
    main()
