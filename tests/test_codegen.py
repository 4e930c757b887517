"""The emitter (fvswe.codegen, docs/CODEGEN.md): its C++ compiled on the host equals njit.

The device physics is emitted from the Numba modules; here the emitted text is compiled
with g++ -ffp-contract=off (the float64 GPU modules use --fmad=false) and held bit for bit
to the very Numba functions it was emitted from, on random edges and on the states where
the schemes branch (dry and thin layers, near-coincident internal eigenvalues, transonic
waves); the subset's rules raise one-line errors naming file:line.
"""

from __future__ import annotations

import math
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
import schemes_helpers as h
from numba import njit
from test_cuda_sources import host_flux, random_edges
from test_schemes_numba import run_numba

from fvswe import codegen, registry
from fvswe.backends import cuda_header, gpu
from fvswe.codegen import CodegenError
from fvswe.physics import common, reconstruction

CXX = shutil.which("g++") or shutil.which("c++")
needs_cxx = pytest.mark.skipif(CXX is None, reason="no host C++ compiler (g++) on PATH")
G, R, EPS_H = 9.81, 0.5, 5e-3


def dry_and_thin(rng, n: int, layers: int):
    """Random edges where layers are dry (h = 0, with and without discharge), thin
    (0 < h < eps_h) or wet on either side, over steps of the bed (wetting and drying)."""
    Wi, Wj, Hi, Hj, normal = random_edges(rng, n, layers, thin=0.3)
    for W in (Wi, Wj):
        for k in range(layers):
            pick = rng.random(len(W))
            W[pick < 0.15, 3 * k] = 0.0
            W[pick < 0.05, 3 * k + 1 : 3 * k + 3] = 0.0
            thin = (pick > 0.15) & (pick < 0.3)
            W[thin, 3 * k] = rng.uniform(0, EPS_H, thin.sum())
    return Wi, Wj, Hi, Hj + rng.choice([0.0, 0.5, -3.0], len(Hj)), normal


def branch_edges(layers: int):
    """Edges at the schemes' branch points: transonic waves and, for two layers,
    internal pairs closing to the float64 floor from both signs."""
    parts = [h.transonic_edges(8, R, layers)]
    if layers == 2:
        parts += [h.gap_sweep_edges(R, side) for side in (-1, 0, 1)]
        parts.append(h.close_pair_edges(5, R, 300))  # the pair's one weight (§3.6)
    return tuple(np.concatenate(p) for p in zip(*parts, strict=True))


@needs_cxx
@pytest.mark.parametrize(("scheme", "layers"), registry.cases())
def test_emitted_flux_equals_numba_bitwise(tmp_path, scheme, layers):
    rng = np.random.default_rng(11)
    sets = {
        "random": random_edges(rng, 3000, layers),
        "dry and thin": dry_and_thin(rng, 3000, layers),
        "branches": branch_edges(layers),
    }
    edges = tuple(np.concatenate(p) for p in zip(*sets.values(), strict=True))
    got = host_flux("double", scheme, layers, edges, G, R, EPS_H)  # one compile
    want = run_numba(scheme, layers, *edges, R, G, EPS_H)
    start = 0
    for name, part in sets.items():
        rows = slice(start, start + len(part[0]))
        start = rows.stop
        for a, b in zip(got, want, strict=True):
            assert np.array_equal(a[rows], b[rows], equal_nan=True), name
        if name == "dry and thin" and (layers == 2 or scheme in ("roe", "ir-roe")):
            assert (want[3][rows] & 4).any()  # the thin-layer fallbacks are reached


# Every construct of the subset (docs/CODEGEN.md) in one function, emitted alone and held
# to njit on random inputs: constants, casts, tuples and unpacking, conditional
# expressions, and/or/not, loops over range and over a tuple with break and continue.
LIMIT = 3


@njit
def helper(a, b):
    """Two values back, as a tuple."""
    return min(a, b), max(a, b)


@njit
def sampler(x, y, z):
    """A value depending on every construct of the subset."""
    f = np.float64
    lo, hi = helper(x, y)
    t = (lo, hi, abs(z), math.sqrt(abs(x * y)))
    acc = f(0.0)
    for v in t:
        if v > 2.0 and not z < 0.0:
            continue
        acc += v if v > 0.5 else -v * 0.25
        if acc > 3.0 or x == y:
            break
    k = 0
    for i in range(LIMIT):
        if i == 1:
            continue
        k = k | (i + 1)
        acc = acc * 1.5 - t[i]
    return acc / (1.0 + float(k)) + t[LIMIT] * common.SQRT2 + math.pow(abs(z), 4.0 / 3.0)


SAMPLER_MAIN = r"""
#include <cstdio>
#include "sampler.cuh"
int main()
{
    double v[3];
    while (fread(v, 8, 3, stdin) == 3) {
        const double r = test_codegen::sampler<double>(v[0], v[1], v[2]);
        fwrite(&r, 8, 1, stdout);
    }
    return 0;
}
"""


def host_program(tmp_path: Path, name: str, function, main: str) -> Path:
    """``function`` emitted into ``NAME.cuh`` beside the C++ ``main``, built by the host
    compiler without contraction (as the float64 GPU modules are): the executable."""
    (tmp_path / f"{name}.cuh").write_text(codegen.emit({}, [function]))
    (tmp_path / "main.cpp").write_text(main)
    exe = tmp_path / name
    cmd = [CXX, "-std=c++17", "-O1", "-ffp-contract=off", f"-I{tmp_path}",
           str(tmp_path / "main.cpp"), "-o", str(exe)]  # fmt: skip
    res = subprocess.run(cmd, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr[-4000:]
    return exe


@needs_cxx
def test_every_construct_equals_numba_bitwise(tmp_path):
    exe = host_program(tmp_path, "sampler", sampler, SAMPLER_MAIN)
    rng = np.random.default_rng(5)
    v = rng.uniform(-3, 3, (5000, 3))
    v[::7, 1] = v[::7, 0]  # x == y breaks the tuple loop
    out = subprocess.run([str(exe)], input=v.tobytes(), capture_output=True, check=True).stdout
    got = np.frombuffer(out, dtype=np.float64)
    want = np.array([sampler(*row) for row in v])
    assert np.array_equal(got, want)


@njit
def reconstructed(h1, q1x, q1y, h2, q2x, q2y, H, nh1, nh2, nH, ox, oy, ex, ey):
    """The linear reconstruction's formulas chained (docs/SCHEMES.md §19): a cell and one
    neighbour's variables, gradient sums, bounds, Venkatakrishnan's factors, a face state
    and its cell-interior term; returns the term, the face's bed and the troubled flag."""
    W = (h1, q1x, q1y, h2, q2x, q2y)
    Vi = reconstruction.variables(W, H, 2)
    Vj = reconstruction.variables((nh1, q1y, q1x, nh2, q2y, q2x), nH, 2)
    zero = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    gx, gy = reconstruction.lsq_sums(zero, zero, Vi, Vj, 3.0 * ox, 2.0 * oy)
    lo, hi = reconstruction.bounds(Vi, Vi, Vj)
    span = (1.0, 0.5, 0.25, 2.0, 2.0, 1.0, 0.0)
    ones = (1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0)
    phi = reconstruction.limited(ones, Vi, gx, gy, lo, hi, ox, oy, span)
    Wf, Hf = reconstruction.face_state(phi, Vi, gx, gy, ox, oy, 2)
    B = reconstruction.interior(W, Wf, H, Hf, ex, ey, G, R, EPS_H)
    bad = 1.0 if reconstruction.troubled(W, 2, G, R, EPS_H) else 0.0
    return (B[0], B[1], B[2], B[3], B[4], B[5], Hf, bad)


RECONSTRUCTED_MAIN = r"""
#include <cstdio>
#include "reconstructed.cuh"
int main()
{
    double v[14];
    while (fread(v, 8, 14, stdin) == 14) {
        const auto t = test_codegen::reconstructed<double>(v[0], v[1], v[2], v[3], v[4], v[5],
            v[6], v[7], v[8], v[9], v[10], v[11], v[12], v[13]);
        const double r[8] = {t.f0, t.f1, t.f2, t.f3, t.f4, t.f5, t.f6, t.f7};
        fwrite(r, 8, 8, stdout);
    }
    return 0;
}
"""


@needs_cxx
def test_reconstruction_formulas_equal_numba_bitwise(tmp_path):
    """Issue 27: the linear reconstruction's formulas are in the subset, and their emitted C++
    on the host is njit bit for bit (the GPU's starting point; its pipelines do not call them
    yet) on random cells, with thin layers, sheared ones and bounds that limit."""
    exe = host_program(tmp_path, "reconstructed", reconstructed, RECONSTRUCTED_MAIN)
    rng = np.random.default_rng(27)
    n = 4000
    v = np.column_stack((
        rng.uniform(1e-3, 2, n), rng.normal(0, 2, n), rng.normal(0, 2, n),
        rng.uniform(1e-3, 2, n), rng.normal(0, 2, n), rng.normal(0, 2, n), rng.uniform(1, 4, n),
        rng.uniform(1e-3, 2, n), rng.uniform(1e-3, 2, n), rng.uniform(1, 4, n),
        rng.normal(0, 0.3, n), rng.normal(0, 0.3, n), *(lambda a: (np.cos(a), np.sin(a)))(
            rng.uniform(0, 2 * np.pi, n)),
    ))  # fmt: skip
    v[::5, 3] = 1e-4  # a thin lower layer: troubled
    out = subprocess.run([str(exe)], input=v.tobytes(), capture_output=True, check=True).stdout
    got = np.frombuffer(out, dtype=np.float64).reshape(n, 8)
    want = np.array([reconstructed(*row) for row in v])
    assert np.array_equal(got, want, equal_nan=True)
    # a negative face depth (which makes a cell fall back in the pipelines) may give NaN terms
    assert 0 < want[:, 7].sum() < n and np.nanmax(np.abs(want[:, :6])) > 0.1
    assert np.isnan(want[:, :6]).any(axis=1).mean() < 0.05


FLOAT32_KERNELS = r"""
#include "physics.cuh"
#define KERNEL(name, fn, nv)                                                                  \
    extern "C" __global__ void name(const float* x, float* y, int* flags)                      \
    {                                                                                          \
        const float* e = x + 32 * threadIdx.x;                                                 \
        float* o = y + 32 * threadIdx.x;                                                       \
        flags[threadIdx.x] = fn<float>(e, e + nv, e[2 * nv], e[2 * nv + 1], e[2 * nv + 2],     \
                                       e[2 * nv + 3], x[0], x[1], x[2], o, o + nv, o[2 * nv]); \
    }
KERNEL(roe2, roe::flux2, 6)
KERNEL(ir_roe2, ir_roe::flux2, 6)
KERNEL(pvm_ifcp2, pvm_ifcp::flux2, 6)
KERNEL(roe1, roe::flux1, 3)
KERNEL(ir_roe1, ir_roe::flux1, 3)
KERNEL(hll1, hll::flux1, 3)
KERNEL(wetdry1, wetdry::flux1, 3)
"""


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not on PATH")
def test_float32_fluxes_have_no_float64_arithmetic(tmp_path):
    """Every float literal is real(x): a float32 module computes its fluxes in float32."""
    cuda_header.write(tmp_path)
    (tmp_path / "k.cu").write_text(FLOAT32_KERNELS)
    opts = [o for o in gpu.compile_options("roe", 2, np.float32, "edge") if o.startswith("--")]
    cmd = ["nvcc", "--ptx", "-arch=sm_90", *opts, f"-I{tmp_path}", "-o", str(tmp_path / "k.ptx"),
           str(tmp_path / "k.cu")]  # fmt: skip
    res = subprocess.run(cmd, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr[-4000:]
    ptx = (tmp_path / "k.ptx").read_text()
    assert ptx.count(".entry ") == 7 and "sqrt.rn.f32" in ptx
    assert ".f64" not in ptx


def test_float32_constants_are_exact_float32_literals():
    text = cuda_header.physics()
    for name, value in common.FLOAT32.items():
        lit = re.search(rf"fv_prec<real>\(([^,]+), ([^)]+)f\) /\* {name} \*/", text)
        assert lit, name
        assert np.float32(float(lit.group(2))) == np.float32(value)


def test_source_carries_the_emitted_physics():
    """NVRTC gets the physics inline, so CuPy's cache key (the source text) covers it."""
    for variant in gpu.VARIANTS:
        src = gpu.source(variant)
        assert cuda_header.physics().split("#pragma once\n")[1] in src
        assert '#include "physics.cuh"' not in src


# ---------------------------------------------------------------- outside the subset


def _while(x):
    while x > 0.0:
        x -= 1.0
    return x


def _keyword(x):
    return helper(a=x, b=x)


def _chain(x):
    return 0.0 < x < 1.0


def _power(x):
    return x**2


def _nested_only(x):
    if x > 0.0:
        y = x
    return y  # noqa: F821 (assigned in a nested block only)


def _plain_call(x):
    return _power(x)


def _string(x):
    return "x"


def _reserved(x):
    new = x
    return new


def _range2(x):
    for i in range(1, 3):
        x += i
    return x


def _slice(t):
    return t[1:]


@pytest.mark.parametrize(
    ("func", "message"),
    [
        (_while, "statement While"),
        (_keyword, "keyword arguments"),
        (_chain, "no chains"),
        (_power, "operator Pow"),
        (_nested_only, "'y' is used where it is not assigned"),
        (_plain_call, "not a @jit function"),
        (_string, "constant 'x'"),
        (_reserved, "'new' is reserved"),
        (_range2, "range(n) with one argument"),
        (_slice, "slices"),
    ],
)
def test_outside_the_subset_is_a_one_line_error_at_file_line(func, message):
    line = func.__code__.co_firstlineno
    with pytest.raises(CodegenError) as err:
        codegen.emit({}, [njit(func)])
    text = str(err.value)
    assert "\n" not in text and message in text
    where = re.match(r"test_codegen\.py:(\d+): ", text)
    assert where and line <= int(where.group(1)) <= line + 4, text


def test_a_python_function_is_refused():
    with pytest.raises(CodegenError, match="not a @jit function"):
        codegen.emit({}, [_power])
