"""NumPy basic indexing of chute.Array: same results as NumPy (and zarr-python 3) for every key.

Most tests run the Python indexing layer over a fake core that serves boxes of a NumPy array,
so they check the index arithmetic alone; the last ones read real Zarr arrays.
"""

from __future__ import annotations

import threading
import warnings

import numpy as np
import pytest
from chute._array import plan_basic_index
from conftest import assert_same

import chute


class FakeCore:
    """Stands in for the C++ array: serves boxes of `data` and records the boxes read."""

    def __init__(self, data: np.ndarray):
        self.data = data
        self.shape = list(data.shape)
        self.chunks = list(data.shape)
        self.read_chunks = self.chunks
        self.dtype_str = data.dtype.str
        self.dtype_name = data.dtype.name
        self.path = "fake"
        self.boxes = []

    def read_into(self, start, out):
        box = tuple(slice(s, s + n) for s, n in zip(start, out.shape))
        self.boxes.append((tuple(start), out.shape))
        out[...] = self.data[box]


def _fake(shape, dtype="f4"):
    data = np.arange(int(np.prod(shape)), dtype=dtype).reshape(shape)
    core = FakeCore(data)
    return chute.Array(core), data, core


def _numpy_like(result):
    """What chute returns for a NumPy result: a 0-d array where NumPy gives a scalar."""
    return result if isinstance(result, np.ndarray) else np.asarray(result)


KEYS_3D = [
    0, -1, 3, (1, 2), (1, 2, 3), (-1, -1, -1), slice(None), slice(2, 5), slice(None, None, 2),
    slice(None, None, -1), slice(5, 1, -2), slice(-3, None), slice(100, 200), slice(3, 3),
    (slice(2, 9), slice(None), 4), (Ellipsis, -1), (0, Ellipsis), (Ellipsis,), Ellipsis,
    (None,), (None, 0, None, slice(1, 3), Ellipsis), (slice(None, None, 3), None, -2),
    (slice(1, None, 4), slice(None, None, -2), slice(0, 6, 5)), (np.int64(2), np.int32(-1)),
    (slice(-100, 100, 7),), (Ellipsis, None), (2, Ellipsis, slice(None, None, -1)), (),
]  # fmt: skip


@pytest.mark.parametrize("key", KEYS_3D, ids=[repr(k) for k in KEYS_3D])
def test_indexing_matches_numpy(key):
    a, data, _ = _fake((7, 6, 5))
    assert_same(a[key], _numpy_like(data[key]))


def test_indexing_random_keys_match_numpy():
    rng = np.random.default_rng(0)
    for shape in [(10,), (6, 7), (3, 4, 5, 2), (2, 3, 1, 4, 3)]:
        a, data, _ = _fake(shape, "i8")
        for _ in range(200):
            key = []
            for size in shape[: rng.integers(0, len(shape) + 1)]:
                if rng.random() < 0.3:
                    key.append(int(rng.integers(-size, size)))
                else:
                    lo, hi = rng.integers(-size - 3, size + 3, 2).tolist()
                    step = int(rng.choice([None, 1, 2, 3, -1, -2, -4]) or 1)
                    key.append(slice(lo, hi, step))
            key = tuple(key)
            assert_same(a[key], _numpy_like(data[key]))


def test_indexing_zero_dim_array():
    a, data, _ = _fake(())
    assert_same(a[...], data[...])
    assert_same(a[()], np.asarray(data[()]))
    assert_same(a[None], data[None])
    with pytest.raises(IndexError):
        a[0]
    with pytest.raises(TypeError):
        len(a)


def test_indexing_reads_only_the_bounding_box():
    a, _, core = _fake((20, 30))
    a[2:9, ::10]
    assert core.boxes[-1] == ((2, 0), (7, 21))
    a[-1, 12:2:-5]
    assert core.boxes[-1] == ((19, 7), (1, 6))
    a[5:5]
    assert core.boxes[-1] == ((0, 0), (0, 30))


def test_strided_results_are_compact_copies():
    a, data, _ = _fake((100, 10))
    result = a[::10]
    assert result.flags.c_contiguous and result.base is None
    assert_same(result, data[::10])


def test_plan_basic_index_returns_box_and_view():
    start, shape, view, compact = plan_basic_index((slice(1, 8, 3), -2), (10, 5))
    assert (start, shape, compact) == ((1, 3), (7, 1), True)
    assert view == (slice(None, None, 3), 0, Ellipsis)


@pytest.mark.parametrize("key", [10, -11, (0, 6), (Ellipsis, -7)])
def test_out_of_range_index_raises_index_error(key):
    a, _, _ = _fake((10, 6))
    with pytest.raises(chute.OutOfRangeError, match="out of bounds") as info:
        a[key]
    assert isinstance(info.value, IndexError) and isinstance(info.value, chute.Error)


@pytest.mark.parametrize(
    "key",
    [[0, 1], np.array([1, 2]), np.array([True] * 10), True, 1.5, "a", (slice(None), [1])],
    ids=["list", "int-array", "bool-array", "bool", "float", "str", "nested-list"],
)
def test_fancy_and_invalid_indices_raise_index_error(key):
    a, _, _ = _fake((10, 6))
    with pytest.raises(IndexError, match="only integers, slices"):
        a[key]


def test_too_many_indices_and_two_ellipses_raise_index_error():
    a, _, _ = _fake((10, 6))
    with pytest.raises(IndexError, match="too many indices"):
        a[1, 2, 3]
    with pytest.raises(IndexError, match="single ellipsis"):
        a[..., 1, ...]


def test_array_protocol_len_iter_and_repr():
    a, data, _ = _fake((4, 3), "u2")
    assert_same(np.asarray(a), data)
    assert np.asarray(a, dtype="f8").dtype == np.float64
    assert len(a) == 4
    assert [r.tolist() for r in a] == data.tolist()
    assert "shape=(4, 3)" in repr(a) and "uint16" in repr(a)


# --- real arrays ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def zarr_pair(tmp_path_factory):
    import zarr

    path = str(tmp_path_factory.mktemp("indexing") / "a.zarr")
    data = np.random.default_rng(1).standard_normal((23, 17, 6)).astype("f4")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        z = zarr.create_array(path, shape=data.shape, chunks=(5, 4, 3), dtype="f4",
                              fill_value=np.nan)  # fmt: skip
        z[...] = data
    return chute.open(path), zarr.open_array(path, mode="r"), data


ZARR_KEYS = [3, (1, 2, 3), (slice(2, 9), slice(None), slice(None, None, 1), ), (Ellipsis, -1),
             (slice(None, None, 4), 3), (-1, slice(3, 15, 5)), (0, 0)]  # fmt: skip


@pytest.mark.parametrize("key", ZARR_KEYS, ids=[repr(k) for k in ZARR_KEYS])
def test_indexing_matches_zarr_python(zarr_pair, key):
    a, z, data = zarr_pair
    got, want = a[key], z[key]
    assert type(got) is type(want)  # zarr-python 3 also returns 0-d arrays for all-int keys
    assert_same(got, want)
    assert_same(got, _numpy_like(data[key]))


def test_read_box_and_read_into(zarr_pair):
    a, _, data = zarr_pair
    assert_same(a.read((2, 3, 1), (4, 5, 2)), data[2:6, 3:8, 1:3])
    out = np.zeros((6, 4, 4), dtype="f4")
    a.read_into((1, 1, 1), out[::2, :, ::2])  # a strided destination
    assert_same(out[::2, :, ::2], data[1:4, 1:5, 1:3])
    assert not out[1::2].any()
    with pytest.raises(chute.OutOfRangeError):
        a.read((20, 0, 0), (5, 1, 1))
    with pytest.raises(TypeError):
        a.read_into((0, 0, 0), np.zeros((1, 1, 1), "f8"))


def test_results_do_not_depend_on_thread_count(zarr_pair):
    a, _, data = zarr_pair
    before = chute.get_threads()
    try:
        for threads in (1, 3, 0):
            chute.set_threads(threads)
            assert chute.get_threads() >= 1
            assert_same(a[...], data)
    finally:
        chute.set_threads(before)
    with pytest.raises(chute.InvalidArgumentError):
        chute.set_threads(-1)


def test_concurrent_reads_from_python_threads(zarr_pair):
    a, _, data = zarr_pair
    errors = []

    def work(i):
        try:
            for j in range(20):
                assert_same(a[(i + j) % 23], data[(i + j) % 23])
        except Exception as e:  # noqa: BLE001 - any failure is reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
