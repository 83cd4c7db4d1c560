"""Plain reads with decode_cf=True decode in C++ while each chunk is placed
(src/chute/array/element_convert.h): every packed and filled encoding xarray writes, read whole,
in boxes, with steps, into strided outputs, with missing chunks, from Zarr v2/v3 and from a
contiguous HDF5 dataset (mapped), compared exactly (dtype and bits) with xarray and with the
Python decoding of a raw read (chute._cf.CfDecoder.decode)."""

from __future__ import annotations

import os

import numpy as np
import pytest

import chute

xr = pytest.importorskip("xarray")

SHAPE = (5, 6, 8)
ENCODING = {
    "i8": {"dtype": "int8", "scale_factor": 0.5, "add_offset": -3.25, "_FillValue": -128},
    "i16": {"dtype": "int16", "scale_factor": 0.0017385, "add_offset": 273.15,
            "_FillValue": -32767},
    "i32": {"dtype": "int32", "scale_factor": 1e-5, "add_offset": -12.5, "_FillValue": -1},
    "u8": {"dtype": "uint8", "scale_factor": 0.1, "add_offset": 0.3, "_FillValue": 255},
    "u16_scale_only": {"dtype": "uint16", "scale_factor": 0.25, "_FillValue": 65535},
    "i16_fill_only": {"dtype": "int16", "_FillValue": -999},
    "f32": {"_FillValue": -9999.0},
    "f64": {"_FillValue": 1e20},
    "i32_missing_value": {"dtype": "int32", "missing_value": 7, "_FillValue": None},
}  # fmt: skip


def _dataset() -> xr.Dataset:
    rng = np.random.default_rng(1)
    dims = ("t", "y", "x")
    data = {}
    for name in ENCODING:
        values = (280 + 10 * rng.standard_normal(SHAPE)).astype(
            "float32" if name == "f32" else "float64"
        )
        values[0, 1, 2] = np.nan
        values[:, 3, :] = np.nan
        if name == "i8":
            values = np.clip((values - 280) / 4, -10, 10)
        if name == "u8":
            values = np.clip((values - 280) / 4 + 10, 0, 20)
        data[name] = (dims, values)
    data["i32_missing_value"] = (dims, rng.integers(0, 12, SHAPE).astype("int32"))
    return xr.Dataset(data)


@pytest.fixture(scope="module", params=[2, 3])
def store(request, tmp_path_factory):
    path = str(tmp_path_factory.mktemp(f"cfv{request.param}") / "cf.zarr")
    encoding = {k: dict(v, chunks=(2, 3, 2)) for k, v in ENCODING.items()}
    _dataset().to_zarr(path, zarr_format=request.param, encoding=encoding, consolidated=True)
    # a chunk never written reads as the fill value (NaN once decoded)
    for name in ENCODING:
        key = "c/1/0/1" if request.param == 3 else "1.0.1"
        os.remove(os.path.join(path, name, *key.split("/")))
    return path, xr.open_zarr(path, decode_cf=True).load()


def _same(actual: np.ndarray, expected: np.ndarray, what: str) -> None:
    assert actual.dtype == expected.dtype, what
    np.testing.assert_array_equal(actual, expected, err_msg=what)


def test_every_encoding_decodes_like_xarray_and_the_python_decoder(store):
    path, ds = store
    group = chute.open_group(path, decode_cf=True)
    raw_group = chute.open_group(path)
    for name, encoding in ENCODING.items():
        array = group[name]
        assert array._decoder is not None and array._decoder.fused, name
        expected = ds[name].values
        _same(array[...], expected, name)
        _same(array[...], array._decoder.decode(raw_group[name][...]), name)
        # the removed chunk reads as fill_value: _FillValue in v2 (xarray writes it there)
        if encoding.get("_FillValue") is not None and array.zarr_format == 2:
            assert np.isnan(array[2, 0, 2]), name
        _same(array[1:4, 2:, ::3], expected[1:4, 2:, ::3], name)
        _same(array[3], expected[3], name)
        _same(np.asarray(array[4, 5, 7]), np.asarray(expected[4, 5, 7]), name)


def test_read_into_strided_outputs(store):
    path, ds = store
    group = chute.open_group(path, decode_cf=True)
    for name in ["i16", "f32", "u16_scale_only"]:
        array = group[name]
        expected = ds[name].values
        big = np.full((5, 12, 8), -1.0, dtype=array.dtype)
        out = big[:, ::2, :]  # every other row: not contiguous
        array.read_into((0, 0, 0), out)
        _same(out, expected, name)
        assert (big[:, 1::2, :] == -1).all()
        transposed = np.empty((8, 6, 5), dtype=array.dtype).T  # Fortran order
        array.read_into((0, 0, 0), transposed)
        _same(transposed, expected, name)
        if array.raw_dtype != array.dtype:
            with pytest.raises(TypeError):
                array.read_into((0, 0, 0), np.empty(SHAPE, dtype=array.raw_dtype))


def test_contiguous_hdf5_decodes_through_the_mapping(tmp_path):
    h5py = pytest.importorskip("h5py")
    rng = np.random.default_rng(2)
    packed = rng.integers(-32768, 32767, size=(7, 9), dtype="int16")
    packed[2, 3] = -32767
    path = tmp_path / "cf.h5"
    with h5py.File(path, "w") as f:
        for order, data in (("<", packed), (">", packed.astype(">i2"))):
            dset = f.create_dataset(f"t{order == '>'}", data=data)  # contiguous: mapped
            dset.attrs["scale_factor"] = 0.01
            dset.attrs["add_offset"] = 250.0
            dset.attrs["_FillValue"] = np.int16(-32767)
    expected = packed.astype(np.float64)
    expected[packed == -32767] = np.nan
    expected *= 0.01
    expected += 250.0
    for name in ("tFalse", "tTrue"):
        array = chute.open(path / name, decode_cf=True)
        assert array._decoder is not None and array._decoder.fused
        _same(array[...], expected, name)
        _same(array[1:6, ::2], expected[1:6, ::2], name)
