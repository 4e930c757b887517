"""``fvswe bench``: the project's benchmarks, run from a source checkout.

    fvswe bench reorder --quick --out out/reorder
    fvswe bench reorder --backend gpu --out out/reorder --budget-s 480
    fvswe bench reorder --help        # every option of the study

The benchmarks live in ``benchmarks/`` beside the package (they are not
installed with it); each subcommand hands its arguments to the script's
``main``.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path

from ..errors import ConfigError

#: Subcommand -> (script under benchmarks/, one-line help).
BENCHMARKS = {
    "reorder": (
        "reorder_impact.py",
        "run time against cell ordering (the renumbering paper's Tables 1-3, Figures 3-4)",
    ),
}


def benchmarks_dir() -> Path:
    """``benchmarks/`` of the source checkout this package runs from."""
    return Path(__file__).resolve().parents[2] / "benchmarks"


def load(script: str):
    """Import a benchmark script by path (its folder goes on ``sys.path`` for its siblings)."""
    folder = benchmarks_dir()
    path = folder / script
    if not folder.is_dir():
        package = Path(__file__).resolve().parents[1]
        raise ConfigError(
            f"fvswe bench runs the scripts in benchmarks/ of a source checkout, and this fvswe "
            f"is an installed package ({package}): clone the repository and run it from there"
        )
    if not path.is_file():
        raise ConfigError(f"{path}: no such benchmark")
    folder = str(path.parent)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _run(args: argparse.Namespace) -> int:
    return load(BENCHMARKS[args.benchmark][0]).main(args.rest)


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``fvswe bench`` and one subcommand per benchmark script."""
    p = subparsers.add_parser(
        "bench",
        help="run a benchmark from a source checkout (reorder: the renumbering study)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = p.add_subparsers(dest="benchmark", metavar="BENCHMARK", required=True)
    for name, (script, text) in BENCHMARKS.items():
        # No option prefix of its own: every word, --help included, goes to the script.
        b = sub.add_parser(name, help=text, add_help=False, prefix_chars="\0")
        b.add_argument("rest", nargs=argparse.REMAINDER, help=f"options of benchmarks/{script}")
        b.set_defaults(func=_run)
