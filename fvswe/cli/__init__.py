"""The ``fvswe`` command. Each subcommand lives in its own module and registers itself here."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from ..errors import FvsweError

#: Subcommand modules; each defines ``register(subparsers)`` and sets ``func`` on its parser.
SUBCOMMANDS = ("mesh", "run", "bench")


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
    """Entry point: run a subcommand. User errors, failed writes and Ctrl-C at any moment
    become one line on stderr and a non-zero exit (2, 1 and 130), never a traceback."""
    try:
        args = build_parser().parse_args(argv)
        return int(args.func(args) or 0)
    except FvsweError as exc:
        print(f"fvswe: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("fvswe: interrupted", file=sys.stderr)
        return 130  # 128 + SIGINT, as shells expect
    except OSError as exc:  # an OS error no stage turned into a message of its own
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"fvswe: error: {where}{exc.strerror or exc}", file=sys.stderr)
        return 1
    except (MemoryError, RecursionError) as exc:
        print(f"fvswe: error: input too large or too deeply nested ({type(exc).__name__})",
              file=sys.stderr)  # fmt: skip
        return 1


if __name__ == "__main__":
    sys.exit(main())
