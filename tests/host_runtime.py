"""The GPU backend on the host: the part of CuPy that fvswe's GPU code uses, for tests with no GPU.

:class:`HostRuntime` stands in for the ``cupy`` module (``GpuBackend(..., runtime=HostRuntime())``):
arrays are NumPy arrays with CuPy's ``get``/``set``/``data.ptr``; a ``RawModule`` is the module's
CUDA source compiled by the host C++ compiler with the emulator of tests/cuda_host (shim.h: the
blocks in turn, the threads of a block as fibers) into a shared library, whose kernels run
through ``fv_launch`` (launch.h) with CuPy's calling convention; a stream records the launches
of a graph capture and a graph replays them. So the backend's own Python (its plans, buffers,
control block, batches and graphs) runs here as on the device, and its results can be held to
the CPU backend bit for bit (float64: the emulator computes without FMA, as the float64 modules
do on the device).
"""

from __future__ import annotations

import ctypes
import re
import subprocess
from types import SimpleNamespace

import numpy as np
from test_cuda_sources import CXX, EMU, generated_dir, host_binary

from fvswe.backends import gpu

#: A kernel's name in the preprocessed source (the shim defines __global__ away).
_KERNEL = re.compile(r'extern "C"\s+void\s+(\w+)\s*\(')
#: NumPy scalar types -> the ctypes of a kernel's by-value parameter.
_SCALARS = {np.int32: ctypes.c_int32, np.int64: ctypes.c_int64, np.float32: ctypes.c_float,
            np.float64: ctypes.c_double}  # fmt: skip


class HostArray(np.ndarray):
    """A NumPy array with the device-array methods the GPU backend calls."""

    def get(self, stream=None, out=None):
        if out is not None:
            np.copyto(out, self)
            return out
        return np.array(self)

    def set(self, arr, stream=None) -> None:
        np.copyto(self, np.asarray(arr).reshape(self.shape))

    @property
    def data(self):
        return SimpleNamespace(ptr=self.ctypes.data)


def _host(a: np.ndarray) -> HostArray:
    return np.ascontiguousarray(a).view(HostArray)


class _Graph:
    """Recorded launches, replayed in order."""

    def __init__(self, launches: list) -> None:
        self._launches = launches

    def launch(self, stream=None) -> None:
        for run in self._launches:
            run()


class _Stream:
    """A stream: a context that makes it current, and graph capture of its launches. Every
    launch runs at once, so a stream's order is the program's and waiting on an event has
    nothing to wait for (GPU ranks on the host stage their halo through MPI, whose runs the
    GPU backend does not capture)."""

    current: _Stream | None = None

    def __init__(self, non_blocking: bool = False, priority: int = 0) -> None:
        self.ptr = id(self)
        self._capture: list | None = None
        self._outer: list[_Stream | None] = []

    def __enter__(self) -> _Stream:
        self._outer.append(_Stream.current)
        _Stream.current = self
        return self

    def __exit__(self, *exc) -> None:
        _Stream.current = self._outer.pop()

    def begin_capture(self) -> None:
        self._capture = []

    def end_capture(self) -> _Graph:
        graph, self._capture = _Graph(self._capture), None
        return graph

    def synchronize(self) -> None:
        pass

    def wait_event(self, event: _Event) -> None:
        pass

    @staticmethod
    def run(launch) -> None:
        """Run ``launch`` now, or record it while the current stream captures."""
        stream = _Stream.current
        if stream is not None and stream._capture is not None:
            stream._capture.append(launch)
        else:
            launch()


class _Event:
    """An event: what it marks on its stream has run already."""

    def __init__(self, disable_timing: bool = False) -> None:
        pass

    def record(self, stream: _Stream | None = None) -> None:
        pass


class _Kernel:
    """One kernel of a host module, called as CuPy's RawKernel: ``k((grid,), (block,), args)``."""

    def __init__(self, lib, name: str) -> None:
        self._lib, self._name = lib, name.encode()

    def __call__(self, grid, block, args) -> None:
        values = [self._value(a) for a in args]
        ptrs = (ctypes.c_void_p * max(1, len(values)))(
            *[ctypes.cast(ctypes.pointer(v), ctypes.c_void_p) for v in values]
        )
        g, b = int(grid[0]), int(block[0])

        def launch(values=values, ptrs=ptrs) -> None:  # the values live as long as the launch
            if self._lib.fv_launch(self._name, g, b, ptrs) != 0:
                raise RuntimeError(f"host module has no kernel {self._name.decode()}")

        _Stream.run(launch)

    @staticmethod
    def _value(a):
        if isinstance(a, np.ndarray):
            return ctypes.c_void_p(a.ctypes.data)
        for kind, ctype in _SCALARS.items():
            if isinstance(a, kind):
                return ctype(a)
        raise TypeError(f"kernel argument of type {type(a).__name__}: pass NumPy scalars")


def _kernels(code: str, defines: list[str]) -> list[str]:
    """The kernels that ``code`` compiles with ``defines`` (its preprocessed text's)."""
    cmd = [CXX, "-std=c++17", "-E", "-P", *defines, "-x", "c++", "-"]
    cmd += [f"-I{generated_dir()}", f"-I{gpu.CUDA_DIR}", f"-I{EMU}"]
    text = subprocess.run(cmd, input='#include "shim.h"\n' + code, capture_output=True, text=True)
    assert text.returncode == 0, text.stderr[-2000:]
    return _KERNEL.findall(text.stdout)


class RawModule:
    """A module's CUDA source built for the host (cached by tests/test_cuda_sources)."""

    def __init__(self, code: str, options: tuple[str, ...] = ()) -> None:
        defines = [o for o in options if o.startswith("-D")]
        names = _kernels(code, defines)
        launcher = "\n".join(f"    FVSWE_KERNEL({n})" for n in names)
        source = (
            '#include "shim.h"\n' + code + '\n#include "launch.h"\n'
            'extern "C" int fv_launch(const char* kernel, unsigned grid, unsigned block, '
            f"void** args)\n{{\n{launcher}\n    return 1;\n}}\n"
        )
        flags = ["-std=c++17", "-O1", "-ffp-contract=off", "-Wno-psabi", "-shared", "-fPIC"]
        flags += defines
        lib = ctypes.CDLL(str(host_binary("module", source, flags)))
        lib.fv_launch.argtypes = [ctypes.c_char_p, ctypes.c_uint, ctypes.c_uint, ctypes.c_void_p]
        lib.fv_launch.restype = ctypes.c_int
        self._lib = lib

    def get_function(self, name: str) -> _Kernel:
        return _Kernel(self._lib, name)


class _Device:
    """The one device of the host."""

    def __init__(self, device: int = 0) -> None:
        self.id = device

    def use(self) -> None:
        pass


class HostRuntime:
    """The ``cupy`` names the GPU backend uses, on the host."""

    RawModule = RawModule
    cuda = SimpleNamespace(
        Stream=_Stream, Event=_Event, Device=_Device,
        runtime=SimpleNamespace(getDeviceCount=lambda: 1),
    )  # fmt: skip
    available = CXX is not None

    @staticmethod
    def asarray(a, dtype=None) -> HostArray:
        return _host(np.array(a, dtype=dtype))

    @staticmethod
    def ascontiguousarray(a, dtype=None) -> HostArray:
        return _host(np.asarray(a, dtype=dtype))

    @staticmethod
    def empty(shape, dtype=np.float64) -> HostArray:
        return _host(np.empty(shape, dtype=dtype))

    @staticmethod
    def zeros(shape, dtype=np.float64) -> HostArray:
        return _host(np.zeros(shape, dtype=dtype))

    @staticmethod
    def empty_like(a) -> HostArray:
        return _host(np.empty_like(a))

    #: fvswe.exactsum's array functions (the layers' volumes, summed on the device)
    isfinite, frexp, where, trunc, bincount = map(
        staticmethod, (np.isfinite, np.frexp, np.where, np.trunc, np.bincount)
    )
