"""HDF5 and NetCDF-4 string variables read as NumPy arrays, each equal to the library that wrote
it: h5py (fixed-length 'S', variable-length UTF-8 and ASCII; contiguous, compact, chunked with
filters, unwritten chunks), netCDF4-python (str variables, char arrays with and without
`_Encoding`) and xarray (a string coordinate, decoded). A corrupt heap reference is a
CorruptDataError naming the element."""

from __future__ import annotations

import numpy as np
import pytest

import chute

h5py = pytest.importorskip("h5py")
netCDF4 = pytest.importorskip("netCDF4")
xr = pytest.importorskip("xarray")

WORDS = ["", "a", "alpha", "βeta", "0001", "x" * 40, "gamma delta"]


def _vlen(words, shape):
    return np.array(words * (int(np.prod(shape)) // len(words) + 1), dtype=object)[
        : int(np.prod(shape))
    ].reshape(shape)


def _write_h5py(path, libver):
    with h5py.File(path, "w", libver=libver) as f:
        fixed = np.array([w.encode()[:8] for w in WORDS], dtype="S8")
        f.create_dataset("fixed", data=fixed)
        f.create_dataset("fixed2d", data=np.resize(fixed, (5, 3)), chunks=(2, 2),
                         compression="gzip", shuffle=True)  # fmt: skip
        f.create_dataset("vlen", data=_vlen(WORDS, (7,)), dtype=h5py.string_dtype())
        f.create_dataset("vlen2d", data=_vlen(WORDS, (6, 5)), dtype=h5py.string_dtype(),
                         chunks=(4, 2), compression="gzip")  # fmt: skip
        ascii_words = [w for w in WORDS if w.isascii()]
        f.create_dataset("ascii", data=_vlen(ascii_words, (4,)),
                         dtype=h5py.string_dtype("ascii"), chunks=(3,))  # fmt: skip
        f.create_dataset("scalar", data="one", dtype=h5py.string_dtype())
        part = f.create_dataset("unwritten", shape=(10,), dtype="S4", chunks=(3,),
                                fillvalue=b"zz")  # fmt: skip
        part[0:2] = [b"ab", b"c"]
        vpart = f.create_dataset("vunwritten", shape=(9,), dtype=h5py.string_dtype(),
                                 chunks=(4,))  # fmt: skip
        vpart[5] = "five"
        f.create_dataset("empty", shape=(0,), dtype=h5py.string_dtype())
        # Compact: the elements inside the object header.
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        dcpl.set_layout(h5py.h5d.COMPACT)
        tid = h5py.h5t.py_create(np.dtype("S6"))
        space = h5py.h5s.create_simple((3,))
        dsid = h5py.h5d.create(f.id, b"compact", tid, space, dcpl=dcpl)
        dsid.write(h5py.h5s.ALL, h5py.h5s.ALL, np.array([b"abc", b"", b"defghi"], dtype="S6"))


def _h5py_expected(ds):
    kind = h5py.check_string_dtype(ds.dtype)
    if kind is not None and kind.length is None:
        return ds.asstr()[()]
    return ds[()]


@pytest.mark.parametrize("libver", ["earliest", "latest"])
def test_strings_equal_h5py(tmp_path, libver):
    path = str(tmp_path / "s.h5")
    _write_h5py(path, libver)
    group = chute.open_group(path)
    with h5py.File(path) as f:
        assert sorted(group.strings) == sorted(f)
        for name in f:
            expected = _h5py_expected(f[name])
            for array in (group[name], chute.open(f"{path}/{name}")):
                assert isinstance(array, chute.StringArray), name
                assert array.shape == f[name].shape, name
                actual = array[...]
                if f[name].dtype.kind == "S":
                    assert actual.dtype == f[name].dtype, name
                else:
                    assert actual.dtype == object, name
                np.testing.assert_array_equal(actual, expected, err_msg=name)
    # decode_cf=True: xarray's decoded values. (netCDF-C, under xarray's netcdf4 engine,
    # crashes closing this h5py file; h5netcdf reads it. The one difference between the
    # engines: h5netcdf leaves ASCII variable-length strings an object array, netcdf4 and
    # chute give 'U'.)
    with xr.open_dataset(path, engine="h5netcdf", phony_dims="access") as ds:
        for name in ds.variables:
            expected = ds[name].values
            actual = chute.open(f"{path}/{name}", decode_cf=True)[...]
            assert actual.dtype == (np.dtype("U5") if name == "ascii" else expected.dtype), name
            np.testing.assert_array_equal(actual, expected, err_msg=name)
    # Indexing as NumPy does.
    vlen2d = chute.open(f"{path}/vlen2d")
    with h5py.File(path) as f:
        np.testing.assert_array_equal(vlen2d[1:5:2, ::-1], f["vlen2d"].asstr()[1:5:2][:, ::-1])
        assert vlen2d[2, 3] == f["vlen2d"].asstr()[2, 3]


def test_netcdf4_strings_and_char_arrays_equal_netcdf4_and_xarray(tmp_path):
    path = str(tmp_path / "s.nc")
    words = np.array(["x", "yy", "é", "", "0005"], dtype=object)
    with netCDF4.Dataset(path, "w") as ds:
        ds.createDimension("n", 5)
        ds.createDimension("c", 4)
        ds.createVariable("s", str, ("n",))[:] = words
        ch = ds.createVariable("ch", "S1", ("n", "c"))
        ch._Encoding = "utf-8"
        ch[:] = np.array(["ab", "cdé", "", "wxyz", "q"], dtype="U4")
        raw = ds.createVariable("raw", "S1", ("n", "c"))
        raw[:] = netCDF4.stringtochar(np.array(["ab", "cde", "", "wxyz", "q"], dtype="S4"))
    with netCDF4.Dataset(path) as ds:
        s = chute.open(f"{path}/s")
        assert s.dims == ("n",) and s.dtype == object
        np.testing.assert_array_equal(s[...], ds["s"][...])
        ds.set_auto_chartostring(False)
        ds.set_auto_mask(False)
        for name in ("ch", "raw"):
            array = chute.open(f"{path}/{name}")
            assert array.dims == ("n", "c") and array.dtype == np.dtype("S1")
            np.testing.assert_array_equal(array[...], ds[name][...], err_msg=name)
    with xr.open_dataset(path) as ds:
        for name in ("s", "ch", "raw"):
            array = chute.open(f"{path}/{name}", decode_cf=True)
            expected = ds[name].values
            assert array.dtype == expected.dtype, name
            assert array.dims == ds[name].dims, name
            np.testing.assert_array_equal(array[...], expected, err_msg=name)


def test_xarray_string_coordinate_equals_xarray(tmp_path):
    path = str(tmp_path / "c.nc")
    stations = np.array(["A1", "B22", "Ωmega", ""], dtype=object)
    xr.Dataset(
        {"t": (("station",), np.arange(4.0))}, coords={"station": ("station", stations)}
    ).to_netcdf(path)
    group = chute.open_group(path, decode_cf=True)
    assert set(group) == {"t", "station"} and group.strings == ("station",)
    with xr.open_dataset(path) as ds:
        expected = ds["station"].values
    station = group["station"]
    assert station.dims == ("station",) and "CLASS" not in station.attrs
    assert station.dtype == expected.dtype
    np.testing.assert_array_equal(station[...], expected)


def _corrupt(path, name, element, field, value):
    """Overwrites one field of a variable-length element of contiguous dataset `name`: its
    length (0), heap collection address (1) or object index (2)."""
    with h5py.File(path) as f:
        offset = f[name].id.get_offset()
    at = offset + 16 * element + (0, 4, 12)[field]
    size = 8 if field == 1 else 4
    with open(path, "r+b") as f:
        f.seek(at)
        f.write(int(value).to_bytes(size, "little"))


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        (2, 999, "element 3"),  # an object the collection does not hold
        (0, 1 << 30, "element 3"),  # longer than its heap object
        (1, 1 << 40, "element 3"),  # a collection past the end of the file
    ],
)
def test_corrupt_heap_references_are_corrupt_data(tmp_path, field, value, message):
    path = str(tmp_path / "bad.h5")
    with h5py.File(path, "w") as f:
        f.create_dataset("v", data=_vlen(WORDS[1:], (5,)), dtype=h5py.string_dtype())
    _corrupt(path, "v", 3, field, value)
    with pytest.raises(chute.CorruptDataError, match=message) as info:
        chute.open(f"{path}/v")
    assert "bad.h5" in str(info.value) and "'v'" in str(info.value)


def test_a_string_variable_is_no_numeric_array_or_batch_input(tmp_path):
    path = str(tmp_path / "w.nc")
    times = np.arange(np.datetime64("2020-01-01T00"), np.datetime64("2020-01-02T00"),
                      np.timedelta64(6, "h")).astype("datetime64[ns]")  # fmt: skip
    xr.Dataset(
        {
            "t2m": (("time", "latitude", "longitude"), np.ones((4, 3, 2), "f4")),
            "expver": (("time",), np.array(["0001", "0005", "0001", "0001"], dtype=object)),
        },
        coords={"time": times, "latitude": [1.0, 2.0, 3.0], "longitude": [0.0, 1.0]},
    ).to_netcdf(path)
    with pytest.raises(chute.InvalidArgumentError, match="'expver'.*string variable"):
        chute.windows(path, input_variables=["t2m", "expver"], target_variables=["t2m"],
                      input_offsets=(0,), target_offsets=(1,))  # fmt: skip
    from chute.weather_stats import compute_statistics

    with pytest.raises(chute.InvalidArgumentError, match="'expver'.*string variable"):
        compute_statistics(path, variables=["t2m", "expver"])
    assert set(compute_statistics(path)) == {"t2m"}
    # Variables not asked for are not opened: a string variable beside them changes nothing.
    data = chute.windows(path, input_variables=["t2m"], target_variables=["t2m"],
                         input_offsets=(0,), target_offsets=(1,))  # fmt: skip
    assert len(data.time_indices()) == 3
