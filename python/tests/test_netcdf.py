"""NetCDF-4 files as netCDF4-python (NETCDF4 and NETCDF4_CLASSIC), h5netcdf and xarray's
to_netcdf (both engines) write them, opened through chute's HDF5 source: dimension names from
the dimension scales, shapes as netCDF4 reports them (an unlimited dimension another variable
grew), dimension-only datasets not listed, nested groups, string variables read as NumPy arrays, and
values equal to netCDF4 (decode_cf off) and xarray (decode_cf on) including the decoded dtype;
windows over a file stored (time, longitude, latitude) come out in the order asked for."""

from __future__ import annotations

import numpy as np
import pytest

import chute

netCDF4 = pytest.importorskip("netCDF4")
h5netcdf = pytest.importorskip("h5netcdf")
xr = pytest.importorskip("xarray")

LAT = np.linspace(60, -60, 5)
LON = np.arange(0, 360, 60.0)
LEVELS = np.array([500, 850], dtype="int32")


def _netcdf4_variables(group, prefix=""):
    """{path: variable} of every variable of `group` and its subgroups."""
    found = {}
    for name, var in group.variables.items():
        found[prefix + name] = var
    for name, sub in group.groups.items():
        found.update(_netcdf4_variables(sub, f"{prefix}{name}/"))
    return found


def _write_netcdf4(path, fmt):
    rng = np.random.default_rng(1)
    with netCDF4.Dataset(path, "w", format=fmt) as ds:
        ds.title = "chute test"
        ds.createDimension("time", None)
        ds.createDimension("level", len(LEVELS))
        ds.createDimension("lat", len(LAT))
        ds.createDimension("lon", len(LON))
        ds.createDimension("nv", 2)  # a dimension with no coordinate variable
        time = ds.createVariable("time", "f8", ("time",))
        time.units = "hours since 2000-01-01"
        ds.createVariable("level", "i4", ("level",))[:] = LEVELS
        ds.createVariable("lat", "f8", ("lat",))[:] = LAT
        ds.createVariable("lon", "f8", ("lon",))[:] = LON
        t = ds.createVariable("t", "f4", ("time", "level", "lat", "lon"), fill_value=-999.0)
        t.units = "K"
        t[0:4] = (250 + 10 * rng.standard_normal((4, 2, 5, 6))).astype("f4")
        time[0:4] = np.arange(4) * 6.0
        # stored (time, lon, lat): windows must transpose it
        u = ds.createVariable("u", "f4", ("time", "lon", "lat"))
        u[0:4] = rng.standard_normal((4, 6, 5)).astype("f4")
        packed = ds.createVariable("packed", "i2", ("time", "lat", "lon"), fill_value=-32767)
        packed.scale_factor = np.float32(0.01)
        packed.add_offset = np.float32(280.0)
        packed.missing_value = np.int16(-32766)
        packed.set_auto_maskandscale(False)
        raw = rng.integers(-3000, 3000, (4, 5, 6)).astype("i2")
        raw[0, 0, 0] = -32767
        raw[1, 1, 1] = -32766
        packed[0:4] = raw
        # grown by the others' time: 2 of 4 steps written, the rest read as fill
        short = ds.createVariable("short", "f8", ("time", "lat"))
        short[0:2] = rng.standard_normal((2, 5))
        ds.createVariable("bounds", "f8", ("lat", "nv"))[:] = rng.standard_normal((5, 2))
        if fmt == "NETCDF4":
            sub = ds.createGroup("sub")
            sub.createDimension("x", 3)
            sub.createVariable("x", "i8", ("x",))[:] = [10, 20, 30]
            v = sub.createVariable("v", "f4", ("x", "lat"))
            v[:] = rng.standard_normal((3, 5)).astype("f4")
            deeper = sub.createGroup("deeper")
            deeper.createVariable("w", "u1", ("lon", "x"))[:] = rng.integers(0, 255, (6, 3))
            ds.createVariable("names", str, ("level",))[:] = np.array(["a", "bb"], dtype=object)


def _write_h5netcdf(path):
    rng = np.random.default_rng(2)
    with h5netcdf.File(path, "w") as f:
        f.dimensions = {"time": None, "lat": len(LAT), "lon": len(LON)}
        f.create_variable("lat", ("lat",), data=LAT)
        f.create_variable("lon", ("lon",), data=LON)
        t = f.create_variable("t", ("time", "lat", "lon"), "f4", chunks=(1, 5, 6))
        f.resize_dimension("time", 3)
        t[...] = rng.standard_normal((3, 5, 6)).astype("f4")
        g = f.create_group("g")
        g.dimensions = {"y": 4}
        g.create_variable("y2", ("y", "lon"), data=rng.standard_normal((4, 6)))


HOURS = np.arange(
    np.datetime64("2020-01-01T00"), np.datetime64("2020-01-02T00"), np.timedelta64(6, "h")
).astype("datetime64[ns]")


def _xarray_dataset() -> xr.Dataset:
    rng = np.random.default_rng(3)
    nt = len(HOURS)
    t2m = (280 + 5 * rng.standard_normal((nt, 5, 6))).astype("f4")
    t2m[1, 2, 3] = np.nan
    wind = rng.standard_normal((nt, 6, 5)).astype("f4")  # (time, longitude, latitude)
    return xr.Dataset(
        {
            "t2m": (("time", "latitude", "longitude"), t2m),
            "packed": (("time", "latitude", "longitude"), t2m.copy()),
            "wind": (("time", "longitude", "latitude"), wind),
            "z": (("latitude", "longitude"), rng.standard_normal((5, 6))),
            "expver": (("time",), np.array(["0001", "0005", "0001", "0001"], dtype=object)),
        },
        coords={"time": HOURS, "latitude": LAT, "longitude": LON},
    )


XR_ENCODING = {
    "packed": {
        "dtype": "int16",
        "scale_factor": np.float32(0.01),
        "add_offset": np.float32(280.0),
        "_FillValue": np.int16(-32767),
    },
}


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    root = tmp_path_factory.mktemp("netcdf")
    paths = {}
    for fmt in ("NETCDF4", "NETCDF4_CLASSIC"):
        paths[fmt] = str(root / f"{fmt}.nc")
        _write_netcdf4(paths[fmt], fmt)
    paths["h5netcdf"] = str(root / "h5netcdf.nc")
    _write_h5netcdf(paths["h5netcdf"])
    for engine in ("netcdf4", "h5netcdf"):
        paths[f"xarray-{engine}"] = str(root / f"xarray-{engine}.nc")
        _xarray_dataset().to_netcdf(
            paths[f"xarray-{engine}"], engine=engine, encoding=XR_ENCODING,
            unlimited_dims=["time"],
        )  # fmt: skip
    return paths


ALL = ["NETCDF4", "NETCDF4_CLASSIC", "h5netcdf", "xarray-netcdf4", "xarray-h5netcdf"]


@pytest.mark.parametrize("kind", ALL)
def test_variables_dims_and_shapes_equal_netcdf4(files, kind):
    path = files[kind]
    group = chute.open_group(path)
    assert group.format == "hdf5"
    with netCDF4.Dataset(path) as ds:
        expected = _netcdf4_variables(ds)
        numeric = {k: v for k, v in expected.items() if v.dtype != str}
        assert set(group) == set(expected), kind
        assert set(group.strings) == set(expected) - set(numeric)
        assert not group.unsupported
        for name, var in numeric.items():
            array = group[name]
            assert array.dims == var.dimensions, name
            assert array.shape == var.shape, name
        assert "nv" not in group  # a dimension only
        expected_groups = []

        def walk(g, prefix=""):
            for sub_name, sub in g.groups.items():
                expected_groups.append(prefix + sub_name)
                walk(sub, f"{prefix}{sub_name}/")

        walk(ds)
        assert sorted(group.groups) == sorted(expected_groups)
        assert "_NCProperties" not in group.attrs


@pytest.mark.parametrize("kind", ALL)
def test_raw_values_equal_netcdf4(files, kind):
    path = files[kind]
    with netCDF4.Dataset(path) as ds:
        ds.set_auto_maskandscale(False)
        for name, var in _netcdf4_variables(ds).items():
            expected = var[...]
            if var.dtype == str:
                np.testing.assert_array_equal(chute.open(f"{path}/{name}")[...], expected)
                continue
            array = chute.open(f"{path}/{name}")
            actual = array[...]
            assert actual.dtype == expected.dtype, name
            np.testing.assert_array_equal(actual, expected, err_msg=name)
            for attr in var.ncattrs():
                value = var.getncattr(attr)
                got = array.attrs[attr]
                if isinstance(value, np.ndarray):
                    np.testing.assert_array_equal(got, value, err_msg=f"{name}.{attr}")
                elif isinstance(value, np.generic):
                    assert type(got) is type(value), f"{name}.{attr}: {got!r} vs {value!r}"
                    np.testing.assert_equal(got, value)
                else:
                    assert got == value, f"{name}.{attr}"


@pytest.mark.parametrize("kind", ALL)
def test_decoded_values_and_dtypes_equal_xarray(files, kind):
    path = files[kind]
    group = chute.open_group(path, decode_cf=True)
    raw_group = chute.open_group(path)
    with (
        xr.open_dataset(path, engine="netcdf4") as ds,
        xr.open_dataset(path, engine="netcdf4", decode_cf=False) as raw,
    ):
        for name in ds.variables:
            assert name in group, name
            expected = ds[name].values
            actual = group[name][...]
            assert actual.dtype == expected.dtype, name
            np.testing.assert_array_equal(actual, expected, err_msg=name)
            np.testing.assert_array_equal(raw_group[name][...], raw[name].values, err_msg=name)
            assert group[name].dims == ds[name].dims


def test_nan_fill_value_is_a_float(files):
    array = chute.open(files["xarray-netcdf4"] + "/t2m")
    fill = array.attrs["_FillValue"]
    assert isinstance(fill, np.float32) and np.isnan(fill)
    decoded = chute.open(files["xarray-h5netcdf"] + "/t2m", decode_cf=True)
    assert decoded.dtype == np.float32 and np.isnan(decoded[1, 2, 3])


def test_packed_int16_decodes_to_float32_as_xarray(files):
    for kind in ("NETCDF4", "xarray-netcdf4", "xarray-h5netcdf"):
        array = chute.open(files[kind] + "/packed", decode_cf=True)
        assert array.raw_dtype == np.int16
        assert array.dtype == np.float32, kind
        with xr.open_dataset(files[kind]) as ds:
            expected = ds["packed"].values
            assert expected.dtype == np.float32
            np.testing.assert_array_equal(array[1:3, 1:, ::2], expected[1:3, 1:, ::2])


def test_string_variable_is_a_member_read_as_xarray_and_netcdf4(files):
    path = files["xarray-netcdf4"]
    group = chute.open_group(path)
    assert "expver" in group and "expver" in group.strings and not group.unsupported
    expver = group["expver"]
    assert isinstance(expver, chute.StringArray) and expver.dims == ("time",)
    with netCDF4.Dataset(path) as ds:
        expected = ds["expver"][...]
    assert expver.dtype == object
    np.testing.assert_array_equal(expver[...], expected)
    with xr.open_dataset(path) as ds:
        decoded = chute.open(f"{path}/expver", decode_cf=True)[...]
        assert decoded.dtype == ds["expver"].values.dtype
        np.testing.assert_array_equal(decoded, ds["expver"].values)
    assert set(group) >= {"t2m", "packed", "wind", "z", "time", "latitude", "longitude"}


def test_a_string_variable_given_to_windows_is_a_clear_error(files):
    path = files["xarray-netcdf4"]
    with pytest.raises(chute.InvalidArgumentError, match="expver.*string variable"):
        chute.windows(
            path, input_variables=["t2m", "expver"], target_variables=["t2m"],
            input_offsets=(0,), target_offsets=(1,),
        )  # fmt: skip


def test_a_grown_variable_reads_as_fill_past_its_extent(files):
    path = files["NETCDF4"]
    array = chute.open(f"{path}/short")
    assert array.shape == (4, 5)
    with netCDF4.Dataset(path) as ds:
        ds.set_auto_maskandscale(False)
        expected = ds["short"][...]
    np.testing.assert_array_equal(array[...], expected)
    np.testing.assert_array_equal(array[2:], np.full((2, 5), array.fill_value))


def test_windows_over_a_transposed_file_are_oriented(files):
    path = files["xarray-h5netcdf"]
    data = chute.windows(
        path,
        input_variables=["wind", "t2m"],
        target_variables=["wind"],
        input_offsets=(0,),
        target_offsets=(1,),
    )
    loader = chute.Loader(data, batch_size=1, shuffle=False, rank=0, world_size=1, threads=1)
    with xr.open_dataset(path) as ds:
        ds = ds.load()
    times = data.time_indices()
    seen = 0
    for batch in loader:
        t = times[batch.indices[0]]
        wind = ds["wind"].isel(time=t).transpose("latitude", "longitude").values
        t2m = ds["t2m"].isel(time=t).values
        np.testing.assert_allclose(
            batch["inputs"][0], np.stack([wind, t2m], axis=-1), rtol=1e-6, equal_nan=True
        )
        target = ds["wind"].isel(time=t + 1).transpose("latitude", "longitude").values
        np.testing.assert_allclose(batch["targets"][0][..., 0], target, rtol=1e-6)
        seen += 1
    assert seen == len(times) > 0


def test_statistics_ignore_string_variables(files):
    from chute.weather_stats import compute_statistics

    stats = compute_statistics(files["xarray-netcdf4"], variables=["t2m", "wind"])
    with xr.open_dataset(files["xarray-netcdf4"]) as ds:
        np.testing.assert_allclose(
            stats["t2m"]["mean"], float(np.nanmean(ds["t2m"].values.astype("f8"))), rtol=1e-5
        )


def test_a_grown_variable_inside_its_last_chunk_reads_as_netcdf4(tmp_path):
    path = str(tmp_path / "edge.nc")
    with netCDF4.Dataset(path, "w") as ds:
        ds.createDimension("time", None)
        ds.createDimension("x", 3)
        ds.createVariable("a", "f4", ("time", "x"), chunksizes=(2, 3))[0:4] = np.ones((4, 3))
        ds.createVariable("b", "i2", ("time", "x"), chunksizes=(2, 3))[0:3] = np.ones((3, 3))
        c = ds.createVariable("c", "f8", ("time", "x"), chunksizes=(2, 3), fill_value=-1.5)
        c[0:1] = np.ones((1, 3))
    with netCDF4.Dataset(path) as ds:
        ds.set_auto_maskandscale(False)
        for name in ("b", "c"):  # stored 3 and 1 of the 4 steps; chunks of 2 steps
            array = chute.open(f"{path}/{name}")
            assert array.shape == ds[name].shape == (4, 3)
            np.testing.assert_array_equal(array[...], ds[name][...], err_msg=name)
            np.testing.assert_array_equal(array[3], np.full(3, array.fill_value))


def test_dimensions_of_a_file_libhdf5_1_10_cannot_open(tmp_path):
    # HDF5 2.0 writes filtered datasets of libver="latest" with layout messages of version 5;
    # their dimension scales (DIMENSION_LIST / REFERENCE_LIST) are read like any other's.
    h5py = pytest.importorskip("h5py")
    path = str(tmp_path / "latest.nc")
    rng = np.random.default_rng(4)
    with h5py.File(path, "w", libver="latest") as f:
        f["time"] = np.arange(3.0)
        f["time"].make_scale("time")
        f.create_dataset("lat", data=LAT, compression="gzip")
        f["lat"].make_scale("lat")
        t = f.create_dataset("t", data=rng.standard_normal((3, 5)).astype("f4"),
                             chunks=(1, 5), maxshape=(None, 5), compression="gzip")  # fmt: skip
        t.dims[0].attach_scale(f["time"])
        t.dims[1].attach_scale(f["lat"])
        w = f.create_dataset("w", data=rng.standard_normal((5, 2)), compression="gzip")
        w.dims[0].attach_scale(f["lat"])
    group = chute.open_group(path)
    assert group["t"].dims == ("time", "lat")
    assert group["w"].dims[0] == "lat"
    with h5py.File(path, "r") as f:
        assert f["t"].id.get_create_plist().get_layout() == h5py.h5d.CHUNKED
        for name in ("t", "w", "lat", "time"):
            assert group[name].shape == f[name].shape, name
            np.testing.assert_array_equal(group[name][...], f[name][...])
