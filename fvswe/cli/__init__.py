"""The ``fvswe`` command. Each subcommand lives in its own module and registers itself here."""

from __future__ import annotations

import argparse
import os
import re
import signal
import sys
import threading
from collections.abc import Sequence
from typing import NoReturn

from ..errors import FvsweError

#: Subcommand modules; each defines ``register(subparsers)`` and sets ``func`` on its parser.
SUBCOMMANDS = ("mesh", "run", "bench", "case")


class _Parser(argparse.ArgumentParser):
    """argparse with one-line usage errors (``PROG: error: MESSAGE (see PROG --help)``, exit
    2), not the whole usage first; a flag left without its value is told how to give one
    that starts with '-' (``--gauge -1,2`` reads ``-1,2`` as a flag)."""

    def error(self, message: str) -> NoReturn:
        flag = re.fullmatch(r"argument (\S+): expected one argument", message)
        if flag:
            name = flag[1].split("/")[-1]
            message += f" (write a value that starts with '-' as {name}=VALUE)"
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    import importlib

    parser = _Parser(
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


class Interrupted(KeyboardInterrupt):
    """Ctrl-C as fvswe raises it. Not KeyboardInterrupt itself: CPython ends a process
    by SIGINT, whatever it returns, once a KeyboardInterrupt has crossed C code such as an
    extension module's import, even when Python code caught it later."""


#: Whether a Ctrl-C arrived: any error after it (an import that the interrupt broke...)
#: is reported as the interrupt, and a command that returns after it does not succeed. Its
#: exception may never reach the command: raised inside a C callback (Numba's compiler
#: notifying its cache), it is printed as "Exception ignored" and dropped, and the work goes
#: on; commands look at this flag where they can stop cleanly.
interrupted = threading.Event()


def _interrupt(signum, frame) -> None:
    interrupted.set()
    raise Interrupted


def _dropped(hook):
    """``sys.unraisablehook`` that keeps quiet about an Interrupted that C code dropped (the
    flag carries it) and passes anything else to ``hook``."""

    def unraisable(info) -> None:
        if not isinstance(info.exc_value, Interrupted):
            hook(info)

    return unraisable


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point: run a subcommand. User errors and failed writes (a full disk included),
    an OS error no stage named, and Ctrl-C at any moment become one line on stderr and a
    non-zero exit (2, 1 and 130), never a traceback."""
    main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGINT, _interrupt) if main_thread else None
    hook, sys.unraisablehook = sys.unraisablehook, _dropped(sys.unraisablehook)
    interrupted.clear()
    try:
        args = build_parser().parse_args(argv)
        status = int(args.func(args) or 0)
        sys.stdout.flush()  # a closed pipe shows here, not in Python's exit handler
        return _interrupted_exit() if interrupted.is_set() and status == 0 else status
    except BrokenPipeError:
        return _closed_pipe()
    except Exception as exc:
        if interrupted.is_set() and not isinstance(exc, FvsweError):
            return _interrupted_exit()
        print(f"fvswe: error: {_one_line(exc)}", file=sys.stderr)
        return 2 if isinstance(exc, FvsweError) else 1
    except KeyboardInterrupt:
        return _interrupted_exit()
    finally:
        sys.unraisablehook = hook
        if main_thread:
            signal.signal(signal.SIGINT, previous)


def _one_line(exc: Exception) -> str:
    """The message of a user error, a failed write, or an input too large to handle;
    any other exception is a bug and keeps its traceback."""
    if isinstance(exc, FvsweError):
        return str(exc)
    if isinstance(exc, OSError):  # an OS error no stage turned into a message of its own
        where = f"{exc.filename}: " if exc.filename else ""
        return f"{where}{exc.strerror or exc}"
    if isinstance(exc, MemoryError):
        return "out of memory (a mesh, an output count or an input too large for this machine)"
    if isinstance(exc, RecursionError):
        return "an input nested too deeply (RecursionError)"
    raise exc


def _interrupted_exit() -> int:
    print("fvswe: interrupted", file=sys.stderr)
    return 130  # 128 + SIGINT, as shells expect


if __name__ == "__main__":
    sys.exit(main())
