"""Compact HDF5 datasets (values kept in the object header) read exactly as h5py reads them,
through libhdf5's open path and the native one (libver "latest"), as a virtual dataset's source
too."""

from __future__ import annotations

import h5py
import numpy as np
import pytest

import chute


def write_compact(f, name, data):
    dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
    dcpl.set_layout(h5py.h5d.COMPACT)
    space = h5py.h5s.create_simple(data.shape)
    h5py.h5d.create(f.id, name.encode(), h5py.h5t.py_create(data.dtype), space, dcpl=dcpl)
    f[name][...] = data


@pytest.mark.parametrize("libver", ["earliest", "latest"])
@pytest.mark.parametrize("dtype", ["<f4", ">i2", "<u8"])
def test_compact_datasets(tmp_path, libver, dtype):
    data = (np.arange(3 * 5 * 4).reshape(3, 5, 4) * 7 % 101).astype(dtype)
    path = tmp_path / "compact.h5"
    with h5py.File(path, "w", libver=libver) as f:
        write_compact(f, "c", data)
        f["c"].attrs["units"] = "K"
    array = chute.open(f"{path}/c")
    assert array.shape == data.shape
    assert array.attrs["units"] == "K"
    np.testing.assert_array_equal(array[...], data)
    np.testing.assert_array_equal(array[1:3, 2:5, 1:2], data[1:3, 2:5, 1:2])


def test_a_compact_source_of_a_virtual_dataset(tmp_path):
    data = np.arange(24, dtype="f4").reshape(4, 6)
    with h5py.File(tmp_path / "src.h5", "w", libver="latest") as f:
        write_compact(f, "c", data)
    layout = h5py.VirtualLayout((8, 6), "f4")
    layout[2:6] = h5py.VirtualSource("src.h5", "c", shape=(4, 6))
    with h5py.File(tmp_path / "v.h5", "w", libver="latest") as f:
        f.create_virtual_dataset("v", layout, fillvalue=-2)
    with h5py.File(tmp_path / "v.h5") as f:
        expected = f["v"][()]
    np.testing.assert_array_equal(chute.open(f"{tmp_path}/v.h5/v")[...], expected)
