"""Where the test suite's time goes: per-file sums and the slowest tests of pytest's JUnit XML.

    python -m pytest -q -n auto --junitxml=out.xml
    python benchmarks/suite_times.py out.xml [--top 30] [--workers 2]

A test's time is pytest's (setup, call and teardown: a module fixture counts in the first test
that uses it). Under ``-n N`` the wall time is at least the sum over N and at least the longest
file that tests/conftest.py keeps on one worker (``ONE_WORKER``).
"""

from __future__ import annotations

import argparse
import sys
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from conftest import ONE_WORKER  # noqa: E402


def durations(path: Path) -> list[tuple[float, str, str]]:
    """(seconds, file, test) of every test case in the JUnit XML ``path``, slowest first."""
    rows = []
    for case in ET.parse(path).iter("testcase"):
        module = case.get("classname", "").split(".")
        rows.append((float(case.get("time", 0.0)), "/".join(module) + ".py", case.get("name")))
    return sorted(rows, reverse=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("xml", type=Path)
    ap.add_argument("--top", type=int, default=30)
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args(argv)
    rows = durations(args.xml)
    per_file: dict[str, float] = defaultdict(float)
    for seconds, file, _ in rows:
        per_file[file] += seconds
    total = sum(per_file.values())
    print(f"{len(rows)} tests, {total:.0f} s in all; with {args.workers} workers at least "
          f"{total / args.workers:.0f} s")  # fmt: skip
    whole = [(per_file[f], f) for f in ONE_WORKER if f in per_file]
    if whole:
        print("longest file kept on one worker: {1} {0:.0f} s".format(*max(whole)))
    print("\nper file:")
    for file, seconds in sorted(per_file.items(), key=lambda kv: -kv[1])[: args.top]:
        print(f"{seconds:8.1f}  {file}")
    print("\nslowest tests:")
    for seconds, file, name in rows[: args.top]:
        print(f"{seconds:8.1f}  {file}::{name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
