"""The ``fvswe`` command. Each subcommand lives in its own module and registers itself here."""

from __future__ import annotations

import argparse
import os
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
    parser.add_argument("--version", action="version", version=version())
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in SUBCOMMANDS:
        importlib.import_module(f"{__name__}.{name}").register(sub)
    return parser


def version() -> str:
    """``fvswe X.Y.Z (numpy ..., numba ..., python ...)``: what ``--version`` prints."""
    import numba
    import numpy

    from .. import __version__

    python = ".".join(map(str, sys.version_info[:3]))
    libraries = f"numpy {numpy.__version__}, numba {numba.__version__}, python {python}"
    return f"fvswe {__version__} ({libraries})"


def _closed_pipe() -> int:
    """The reader of stdout went away (``fvswe ... | head``): stop quietly, as ``cat`` does."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())  # Python's flush at exit must not fail again
    return 141  # 128 + SIGPIPE, what a shell reports for a command its pipe closed on


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point: run a subcommand; user errors become one line on stderr and exit 2."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        status = int(args.func(args) or 0)
        sys.stdout.flush()  # a closed pipe shows here, not in Python's exit handler
        return status
    except BrokenPipeError:
        return _closed_pipe()
    except FvsweError as exc:
        print(f"fvswe: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("fvswe: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
