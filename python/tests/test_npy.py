"""The .npy source: files NumPy writes (C and Fortran order, both byte orders, every numeric
dtype, 0-d and odd shapes, format versions 1-3) read exactly, whole and in random boxes; bad
files give errors that name them."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import random_boxes

import chute

DTYPES = ["|b1", "|i1", "<i2", ">i2", "<i4", ">i8", "|u1", "<u2", ">u4", "<u8",
          "<f2", ">f4", "<f8", ">f8", "<c8", ">c16"]  # fmt: skip


def values(shape, dtype, seed=0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return rng.integers(0, 2, shape).astype(dtype)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(
            info.min, info.max, shape, endpoint=True, dtype=dtype.newbyteorder("=")
        ).astype(dtype)
    data = rng.standard_normal(shape) * 100
    if dtype.kind == "c":
        data = data + 1j * rng.standard_normal(shape)
    return data.astype(dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("order", ["C", "F"])
def test_reads_what_numpy_saved(tmp_path, dtype, order):
    expected = values((7, 5, 3), dtype)
    expected = np.asfortranarray(expected) if order == "F" else expected
    path = tmp_path / "x.npy"
    np.save(path, expected)
    array = chute.open(path)
    assert array.shape == expected.shape
    assert array.dtype == expected.dtype.newbyteorder("=")
    np.testing.assert_array_equal(array[:], expected)
    rng = np.random.default_rng(1)
    for box in random_boxes(expected.shape, 20, rng):
        np.testing.assert_array_equal(array[box], expected[box])


@pytest.mark.parametrize("shape", [(), (1,), (0, 4), (13,), (3, 1, 17), (2, 3, 4, 5, 6)])
def test_odd_shapes(tmp_path, shape):
    expected = values(shape, "<f4", seed=3)
    np.save(tmp_path / "x.npy", expected)
    np.testing.assert_array_equal(np.asarray(chute.open(tmp_path / "x.npy")), expected)


@pytest.mark.parametrize("version", [(1, 0), (2, 0), (3, 0)])
def test_format_versions(tmp_path, version):
    expected = values((4, 6), ">i4")
    with open(tmp_path / "x.npy", "wb") as f:
        np.lib.format.write_array(f, expected, version=version)
    np.testing.assert_array_equal(chute.open(tmp_path / "x.npy")[1:3, 2:], expected[1:3, 2:])


def test_a_large_crop_reads_only_by_offset(tmp_path):
    # A volume (64, 64, 64, 4) channels last: crops as the W3 loader reads them.
    expected = values((64, 64, 64, 4), "<f4", seed=5)
    np.save(tmp_path / "v.npy", expected)
    array = chute.open(tmp_path / "v.npy")
    for corner in [(0, 0, 0), (17, 40, 3), (48, 48, 48)]:
        box = tuple(slice(c, c + 16) for c in corner)
        np.testing.assert_array_equal(array[box], expected[box])


def test_bad_files_name_the_file(tmp_path):
    np.save(tmp_path / "short.npy", np.zeros((100,), "<f8"))
    data = (tmp_path / "short.npy").read_bytes()
    (tmp_path / "short.npy").write_bytes(data[:-8])
    with pytest.raises(chute.CorruptDataError, match="short.npy.*truncated"):
        chute.open(tmp_path / "short.npy")
    (tmp_path / "junk.npy").write_bytes(b"not an npy file at all")
    with pytest.raises(chute.CorruptDataError, match="junk.npy.*magic"):
        chute.open(tmp_path / "junk.npy")
    (tmp_path / "head.npy").write_bytes(data[:30])
    with pytest.raises(chute.CorruptDataError, match="head.npy"):
        chute.open(tmp_path / "head.npy")
    np.save(tmp_path / "s.npy", np.array(["a", "b"]))
    with pytest.raises(chute.UnsupportedError, match="s.npy"):
        chute.open(tmp_path / "s.npy")
    np.save(tmp_path / "r.npy", np.zeros(3, dtype=[("a", "<f4"), ("b", "<i4")]))
    with pytest.raises(chute.UnsupportedError, match="r.npy.*structured"):
        chute.open(tmp_path / "r.npy")
    with pytest.raises(chute.NotFoundError, match="absent.npy"):
        chute.open(tmp_path / "absent.npy")
