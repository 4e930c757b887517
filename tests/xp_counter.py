"""A counting stand-in for CuPy on the host: NumPy arrays that count launches and syncs.

:data:`XP` is passed where the implicit method takes an array module (``xp``). Every
operation that on CuPy is a kernel launch counts one launch: a ufunc call or reduction,
a NumPy function on an array (``where``, ``concatenate``, ``vdot``, ``stack``, ...), an
array created (``zeros``, ``asarray``, ...), a copy or cast, an assignment into a slice.
Every transfer that on CuPy waits for the device counts one sync: ``float()``, ``bool()``,
``int()``, ``.item()``, ``.tolist()``, ``.get()``; a NumPy array given to ``asarray`` (or
``array``, ``ascontiguousarray``) counts one upload (a copy from the host, which the host
waits for). Views (slices, ``.T``, ``reshape``) count
nothing. A function given to ``XP.fuse()`` counts one launch a call, as ``cupy.fuse``'s
kernel would. Scalar results stay 0-d arrays, as CuPy's do, so a host conversion is
visible. The arithmetic is NumPy's: results are those of the NumPy path.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

#: Functions that launch nothing where their argument already is what they return.
NO_COPY = ("asarray", "ascontiguousarray")
COUNTS = SimpleNamespace(launches=0, syncs=0, uploads=0, paused=False)


def reset() -> None:
    COUNTS.launches, COUNTS.syncs, COUNTS.uploads = 0, 0, 0


def _launch() -> None:
    if not COUNTS.paused:
        COUNTS.launches += 1


def _sync() -> None:
    if not COUNTS.paused:
        COUNTS.syncs += 1


def _plain(a):
    if isinstance(a, CountingArray):
        return a.view(np.ndarray)
    if isinstance(a, (tuple, list)):
        return type(a)(_plain(v) for v in a)
    return a


def _wrap(a):
    if isinstance(a, (np.ndarray, np.generic)) and not isinstance(a, CountingArray):
        return np.asarray(a).view(CountingArray)
    if isinstance(a, tuple):
        return tuple(_wrap(v) for v in a)
    return a


class CountingArray(np.ndarray):
    """A NumPy array that counts its launches and host transfers in :data:`COUNTS`."""

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        _launch()
        if "out" in kwargs:
            kwargs["out"] = _plain(kwargs["out"])
        return _wrap(getattr(ufunc, method)(*_plain(inputs), **kwargs))

    def __array_function__(self, func, types, args, kwargs):
        _launch()
        return _wrap(func(*_plain(args), **_plain(kwargs)))

    def __setitem__(self, key, value) -> None:
        _launch()
        self.view(np.ndarray)[_plain(key)] = _plain(value)

    def __getitem__(self, key):
        out = self.view(np.ndarray)[_plain(key)]
        if not np.may_share_memory(out, self.view(np.ndarray)):
            _launch()  # fancy or boolean indexing: a gather
        return _wrap(out)

    def astype(self, dtype, *args, **kwargs):
        plain = self.view(np.ndarray)
        out = plain.astype(dtype, *args, **kwargs)
        if out is not plain:  # not astype(..., copy=False) to the array's own dtype
            _launch()
        return _wrap(out)

    def copy(self, order="C"):
        _launch()
        return _wrap(self.view(np.ndarray).copy(order))

    def get(self, stream=None):
        _sync()
        return np.array(self.view(np.ndarray))

    def item(self, *args):
        _sync()
        return self.view(np.ndarray).item(*args)

    def tolist(self):
        _sync()
        return self.view(np.ndarray).tolist()

    def __float__(self) -> float:
        _sync()
        return float(self.view(np.ndarray))

    def __int__(self) -> int:
        _sync()
        return int(self.view(np.ndarray))

    def __bool__(self) -> bool:
        _sync()
        return bool(self.view(np.ndarray))

    __index__ = __int__


def _fuse():
    def decorate(fn):
        def kernel(*args):
            COUNTS.paused = True
            try:
                out = fn(*args)
            finally:
                COUNTS.paused = False
            _launch()
            return _wrap(out)

        return kernel

    return decorate


class _Module:
    """NumPy with creation functions that return counting arrays, and ``fuse``."""

    __name__ = "numpy"
    fuse = staticmethod(_fuse)

    def __getattr__(self, name):
        value = getattr(np, name)
        if callable(value) and not isinstance(value, type) and not isinstance(value, np.ufunc):

            def counted(*args, **kwargs):
                if name in NO_COPY + ("array",) and isinstance(args[0], np.ndarray) \
                        and not isinstance(args[0], CountingArray):  # fmt: skip
                    COUNTS.uploads += 1  # from the host: a copy the host waits for
                out = value(*_plain(args), **_plain(kwargs))
                same = name in NO_COPY and np.may_share_memory(out, _plain(args[0]))
                if isinstance(out, (np.ndarray, np.generic)) and not same:
                    _launch()
                return _wrap(out)

            return counted
        return value


XP = _Module()
