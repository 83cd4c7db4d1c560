"""Zarr reference stores (kerchunk): JSON and Parquet references to NetCDF-4/HDF5 files that the
tests write with xarray and h5py; chute reads what the referenced files hold."""

from __future__ import annotations

import json

import h5py
import numpy as np
import pandas as pd
import pytest

import chute

xr = pytest.importorskip("xarray")
kerchunk_hdf = pytest.importorskip("kerchunk.hdf")


def write_netcdf(path, times, seed=0):
    """A packed int16 NetCDF-4 file with NaN fills and an unlimited time, as ERA5 downloads."""
    rng = np.random.default_rng(seed)
    t2m = rng.normal(280.0, 5.0, (len(times), 6, 8)).astype("float32")
    t2m[0, 1, 2] = np.nan
    z = rng.normal(0.0, 1.0, (len(times), 2, 6, 8)).astype("float32")
    ds = xr.Dataset(
        {
            "t2m": (("time", "latitude", "longitude"), t2m),
            "z": (("time", "level", "latitude", "longitude"), z),
        },
        coords={
            "time": pd.DatetimeIndex(times),
            "level": [500, 850],
            "latitude": np.linspace(60.0, 10.0, 6),
            "longitude": np.linspace(0.0, 35.0, 8),
        },
    )
    encoding = {
        "t2m": {"dtype": "int16", "scale_factor": 0.01, "add_offset": 280.0,
                "_FillValue": -32767, "zlib": True, "chunksizes": (1, 6, 8)},
        "z": {"zlib": True, "chunksizes": (1, 1, 6, 8)},
    }  # fmt: skip
    ds.to_netcdf(path, engine="h5netcdf", encoding=encoding, unlimited_dims=["time"])
    return path


def references(path, **kwargs) -> dict:
    return kerchunk_hdf.SingleHdf5ToZarr(str(path), **kwargs).translate()


@pytest.fixture
def netcdf(tmp_path):
    times = pd.date_range("2020-01-01", periods=5, freq="6h")
    return write_netcdf(tmp_path / "day.nc", times)


def test_json_references_read_what_the_netcdf_file_holds(tmp_path, netcdf):
    refs = tmp_path / "refs.json"
    refs.write_text(json.dumps(references(netcdf, inline_threshold=50)))
    group = chute.open_group(refs)
    assert set(group) >= {"t2m", "z", "time", "latitude", "longitude"}
    with h5py.File(netcdf) as f:
        np.testing.assert_array_equal(group["t2m"][:], f["t2m"][:])
        np.testing.assert_array_equal(group["z"][1:3, 1], f["z"][1:3, 1])
        np.testing.assert_array_equal(chute.open(f"{refs}/latitude")[:], f["latitude"][:])
    expected = xr.open_dataset(netcdf, engine="h5netcdf")
    decoded = chute.open_group(refs, decode_cf=True)
    np.testing.assert_array_equal(decoded["t2m"][:], expected["t2m"].values)
    np.testing.assert_array_equal(decoded["time"][:], expected["time"].values)


def test_windows_and_loader_take_a_reference_file(tmp_path, netcdf):
    refs = tmp_path / "refs.json"
    refs.write_text(json.dumps(references(netcdf, inline_threshold=0)))
    via_refs = chute.windows(refs, ["t2m", "z"], channels_last=False)
    direct = chute.windows(str(netcdf), ["t2m", "z"], channels_last=False)
    assert len(via_refs) == len(direct) == 3
    a = next(iter(chute.Loader(via_refs, batch_size=3, shuffle=False)))
    b = next(iter(chute.Loader(direct, batch_size=3, shuffle=False)))
    np.testing.assert_array_equal(a["inputs"], b["inputs"])
    np.testing.assert_array_equal(a["targets"], b["targets"])


def test_version_one_templates_and_generated_keys(tmp_path):
    data = np.arange(24, dtype="<f4")
    (tmp_path / "blob.bin").write_bytes(b"\0" * 16 + data.tobytes())
    zarray = {"shape": [24], "chunks": [4], "dtype": "<f4", "fill_value": -1.0, "order": "C",
              "filters": None, "compressor": None, "zarr_format": 2}  # fmt: skip
    doc = {
        "version": 1,
        "templates": {"u": str(tmp_path / "blob.bin")},
        "gen": [{"key": "x/{{i}}", "url": "{{u}}", "offset": "{{16 + i * 16}}",
                 "length": "16", "dimensions": {"i": {"stop": 5}}}],
        "refs": {".zgroup": json.dumps({"zarr_format": 2}), "x/.zarray": json.dumps(zarray),
                 "x/.zattrs": "base64:" + "e30="},
    }  # fmt: skip
    refs = tmp_path / "gen.json"
    refs.write_text(json.dumps(doc))
    x = chute.open(f"{refs}/x")[:]
    # chunk 5 has no reference: it reads as the fill value, as in any Zarr store
    np.testing.assert_array_equal(x, np.where(np.arange(24) < 20, data, -1.0).astype("f4"))


def test_parquet_references(tmp_path, netcdf):
    pytest.importorskip("pyarrow")
    import fsspec
    from fsspec.implementations.reference import LazyReferenceMapper

    refs = references(netcdf, inline_threshold=50)["refs"]
    out = LazyReferenceMapper.create(
        root=str(tmp_path / "refs.parq"), fs=fsspec.filesystem("file"), record_size=3,
        engine="pyarrow",
    )  # fmt: skip
    for key in sorted(refs):
        out[key] = refs[key]
    out.flush()
    group = chute.open_group(tmp_path / "refs.parq")
    with h5py.File(netcdf) as f:
        np.testing.assert_array_equal(group["t2m"][:], f["t2m"][:])
        np.testing.assert_array_equal(group["z"][:], f["z"][:])
    dataset = chute.windows(tmp_path / "refs.parq", ["t2m"])
    assert len(dataset) == 3


def test_bad_reference_files_say_what_is_wrong(tmp_path, netcdf):
    other = tmp_path / "notes.json"
    other.write_text(json.dumps({"hello": "world"}))
    with pytest.raises(chute.InvalidMetadataError, match="not a Zarr reference set"):
        chute.open_group(other)
    doc = references(netcdf, inline_threshold=0)
    doc["refs"]["t2m/0.0.0"] = [str(tmp_path / "gone.nc"), 0, 10]
    doc["refs"]["t2m/1.0.0"][2] += 10**6  # a range past the end of the file
    (tmp_path / "bad.json").write_text(json.dumps(doc))
    t2m = chute.open(tmp_path / "bad.json" / "t2m")
    with pytest.raises(chute.NotFoundError, match=r"t2m/0\.0\.0.*gone\.nc"):
        t2m[0]
    with pytest.raises(chute.CorruptDataError, match=r"t2m/1\.0\.0.*day\.nc"):
        t2m[1]
    np.testing.assert_array_equal(t2m[2:], h5py.File(netcdf)["t2m"][2:])
