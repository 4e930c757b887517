"""fvswe.exactsum: the exact sum of float64 values, rounded once, whatever their order or split.

The oracle is :class:`fractions.Fraction`: the exact rational sum, rounded by ``float()``
(correctly, ties to even).
"""

from __future__ import annotations

import json
import math
from fractions import Fraction

import numpy as np
import pytest
from gpu_skip import skip_without_gpu

from fvswe import exactsum

TINY = 5e-324  # the least subnormal
BIG = np.finfo(np.float64).max


def exact(x: np.ndarray) -> float:
    return float(sum((Fraction(v) for v in x.tolist()), Fraction(0)))


def wide(rng: np.random.Generator, n: int) -> np.ndarray:
    """Values of both signs over float64's whole range (subnormals too), a third zeros."""
    x = rng.standard_normal(n) * np.exp2(rng.integers(-1074, 1000, n).astype(float))
    x[rng.random(n) < 1 / 3] = 0.0
    return x


def areas_times_depths(rng: np.random.Generator, n: int) -> np.ndarray:
    """Products as a mass sums them: cell areas over 4 decades times depths, some dry."""
    area = 10.0 ** rng.uniform(-2, 2, n)
    h = np.where(rng.random(n) < 0.2, 0.0, rng.random(n) * 10.0 ** rng.uniform(-8, 3, n))
    return area * h


@pytest.mark.parametrize("seed", range(12))
def test_the_sum_is_the_exact_one_rounded_once(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 400))
    for x in (wide(rng, n), areas_times_depths(rng, n), rng.standard_normal(n)):
        assert exactsum.total(x) == exact(x) == math.fsum(x)


def test_np_dot_is_not_exact_where_the_exact_sum_is():
    """The values a naive sum loses: what the exact sum is there for."""
    x = np.array([1.0, 1e-16, 1e-16, -1.0] * 3)
    assert exactsum.total(x) == exact(x) == 6e-16 != float(np.sum(x))


@pytest.mark.parametrize(
    "x, expected",
    [
        ([], 0.0),
        ([0.0, -0.0], 0.0),
        ([1.0, 2.0**-53], 1.0),  # a tie: to even
        ([1.0, 2.0**-53, 2.0**-80], 1.0 + 2.0**-52),  # just above the tie: up
        ([1.0 + 2.0**-52, 2.0**-53], 1.0 + 2.0**-51),  # a tie: to even, up
        ([TINY, TINY, -TINY], TINY),
        ([2.0**-1022, -TINY], 2.0**-1022 - TINY),  # subnormal total
        ([BIG, BIG, -BIG], BIG),  # beyond float64 on the way, not at the end
        ([BIG, BIG], math.inf),
        ([-BIG, -BIG], -math.inf),
        ([1.0, math.inf, 2.0], math.inf),
        ([1.0, -math.inf], -math.inf),
    ],
)
def test_edges_of_the_range_and_ties(x, expected):
    assert exactsum.total(np.array(x, dtype=np.float64)) == expected


@pytest.mark.parametrize("x", [[math.nan, 1.0], [math.inf, -math.inf], [-math.inf, math.nan]])
def test_nan_and_opposite_infinities_sum_to_nan(x):
    assert math.isnan(exactsum.total(np.array(x)))


@pytest.mark.parametrize("seed", range(6))
def test_any_order_and_any_split_give_the_same_partials_and_bits(seed):
    """The partial sums of the pieces of a split, added as MPI ranks add them (int64), equal
    the whole array's, in any order of the values: one process and every partition agree."""
    rng = np.random.default_rng(100 + seed)
    n = 5000
    x = wide(rng, n) if seed % 2 else areas_times_depths(rng, n)
    if seed == 5:
        x[rng.integers(0, n, 2)] = math.inf
    whole = exactsum.sums(x)
    assert whole.dtype == np.int64 and whole.shape == (exactsum.WIDTH,)
    for _ in range(5):
        y = x[rng.permutation(n)]
        cuts = np.sort(rng.integers(0, n, int(rng.integers(1, 9))))
        parts = [exactsum.sums(p) for p in np.split(y, cuts)]
        assert np.array_equal(sum(parts), whole)
        assert exactsum.rounded(sum(parts)) == exactsum.total(y) == exactsum.total(x)
    assert exactsum.total(x) == (math.inf if seed == 5 else exact(x))


def test_numpy_sums_in_chunks_what_one_pass_sums(monkeypatch):
    """NumPy takes CHUNK values at a time (its temporaries in the caches): over several
    chunks, the last one short, the bins and the infinities and NaN counted are one pass's,
    and the total math.fsum's."""
    rng = np.random.default_rng(7)
    x = np.concatenate((wide(rng, 3 * exactsum.CHUNK), areas_times_depths(rng, 1234)))
    chunked = exactsum.sums(x)
    monkeypatch.setattr(exactsum, "CHUNK", x.size)
    assert np.array_equal(chunked, exactsum.sums(x))
    assert exactsum.rounded(chunked) == math.fsum(x)
    x[-1], x[5] = math.nan, -math.inf
    monkeypatch.undo()
    assert list(exactsum.sums(x)[-3:]) == [0, 1, 1] and math.isnan(exactsum.total(x))


@pytest.mark.gpu
def test_a_gpu_gives_numpys_partials_bit_for_bit():
    """On a GPU (CuPy's frexp, trunc and bincount, whose float64 atomic adds of integers are
    exact in any order): NumPy's int64 bins, hence the same rounded sum."""
    skip_without_gpu()
    import cupy as cp

    rng = np.random.default_rng(11)
    special = np.array([1.0, math.inf, -math.inf, math.nan, TINY])
    for x in (wide(rng, 10**6), areas_times_depths(rng, 10**6), special, np.zeros(0)):
        assert np.array_equal(exactsum.sums(cp.asarray(x), cp), exactsum.sums(x))
    W = cp.asarray(rng.random((1000, 6)))
    assert exactsum.total(W[:, 3], cp) == exact(W[:, 3].get())  # a strided column


def test_strided_float32_and_columns_are_summed_as_float64():
    """A column of a state (a strided view) and float32 values: their float64 values."""
    rng = np.random.default_rng(7)
    W = rng.random((300, 6)).astype(np.float32)
    assert exactsum.total(W[:, 3]) == exact(W[:, 3].astype(np.float64))


def test_too_many_values_for_one_exact_sum_is_one_line():
    class Huge:
        size = exactsum.MAX_CELLS + 1

    with pytest.raises(ValueError, match=r"^exactsum: \d+ values in one sum \(at most \d+\)$"):
        exactsum.sums(Huge())


def test_the_speed_benchmark_times_both_ways_and_leaves_chunk_as_it_was(tmp_path):
    from fvswe.cli.bench import load

    speed = load("exactsum_speed.py")
    chunk = exactsum.CHUNK
    speed.main(["--sizes", "100000", "--repeats", "1", "--out", str(tmp_path / "s.json")])
    (row,) = json.loads((tmp_path / "s.json").read_text())["rows"]
    assert row["values"] == 100000 and row["one_pass_s"] > 0 and row["chunked_s"] > 0
    assert chunk == exactsum.CHUNK
