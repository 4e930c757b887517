"""The ``fvswe`` command. Each subcommand lives in its own module and registers itself here."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from ..errors import FvsweError

#: Subcommand modules; each defines ``register(subparsers)`` and sets ``func`` on its parser.
SUBCOMMANDS = ("mesh", "run", "bench", "case")


def build_parser() -> argparse.ArgumentParser:
    import importlib

    parser = argparse.ArgumentParser(
        prog="fvswe",
        description="Finite-volume shallow-water simulations (two-layer and one-layer) "
        "on triangular meshes and Cartesian grids, on the CPU (Numba) or a GPU (CuPy).",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in SUBCOMMANDS:
        importlib.import_module(f"{__name__}.{name}").register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point: run a subcommand; user errors become one line on stderr and exit 2."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except FvsweError as exc:
        print(f"fvswe: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("fvswe: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
