"""CF time coordinates decoded in C++ (src/chute/dataset/cf_time.cc) against xarray: stores
written with several `units`, storage types, scale/offset and fill values, each decoded by
`xarray.open_zarr(decode_cf=True)` (pandas / cftime) and by chute's core to int64 seconds."""

from __future__ import annotations

import numpy as np
import pytest

import chute

xr = pytest.importorskip("xarray")

CASES = [
    # (units, calendar, stored values, dtype, extra attributes)
    ("hours since 1979-01-01", None, [0, 6, 12, 8760, 350000], "int64", {}),
    ("hours since 1979-01-01 00:00:00", "proleptic_gregorian", [-6, 0, 6], "int32", {}),
    ("days since 1900-01-01", "standard", [0, 1.5, 43829.25, 45000.75], "float64", {}),
    ("days since 1970-1-1", "gregorian", [0.5, 19000.0, -1.25], "float32", {}),
    ("seconds since 1970-01-01T00:00:00", None, [0, 1, 1_700_000_000], "int64", {}),
    ("seconds since 2000-01-01 12:00:00+05:00", None, [0, 3600, -86400], "int64", {}),
    ("minutes since 2016-02-28T18:00", None, [0, 360, 1440, 2880], "int64", {}),
    ("milliseconds since 2020-01-01", None, [0, 1500, 86_400_000], "int64", {}),
    ("hours since 2016-01-01", None, [0, 1, 2, -1, 4], "int16", {"_FillValue": -1}),
    ("hours since 2016-01-01", None, [0, 1, 2, 3], "int16", {"scale_factor": 6.0,
                                                            "add_offset": 12.0}),
    ("hours since 2016-01-01", None, [0.0, np.nan, 12.0], "float64", {}),
]  # fmt: skip


def _write(path, units, calendar, values, dtype, extra, zarr_format):
    """A group with a `time` coordinate of these stored values and attributes, written with
    zarr-python (so the stored numbers are exactly these), and a variable over it."""
    import zarr

    attrs = {"units": units, **extra}
    if calendar is not None:
        attrs["calendar"] = calendar
    stored = np.asarray(values, dtype=dtype)
    fill = attrs.get("_FillValue")
    if zarr_format == 2:  # v2: xarray takes the array's fill_value as _FillValue
        attrs.pop("_FillValue", None)
    root = zarr.open_group(path, mode="w", zarr_format=zarr_format)
    for name, data, extra_attrs in (
        ("time", stored, attrs),
        ("t2m", np.arange(len(stored), dtype="float32"), {}),
    ):
        kwargs = {"dimension_names": ["time"]} if zarr_format == 3 else {}
        array = root.create_array(
            name,
            shape=data.shape,
            dtype=data.dtype,
            fill_value=fill if name == "time" else None,
            **kwargs,
        )
        array[...] = data
        if zarr_format == 2:
            extra_attrs = {**extra_attrs, "_ARRAY_DIMENSIONS": ["time"]}
        array.attrs.update(extra_attrs)
    return path


@pytest.mark.parametrize("zarr_format", [2, 3])
@pytest.mark.parametrize("case", range(len(CASES)))
def test_time_coordinates_decode_like_xarray(tmp_path, case, zarr_format):
    units, calendar, values, dtype, extra = CASES[case]
    path = _write(str(tmp_path / "t.zarr"), units, calendar, values, dtype, extra, zarr_format)
    expected = xr.open_zarr(path, decode_cf=True, consolidated=False)["time"].values
    assert expected.dtype.kind == "M", expected.dtype  # xarray decoded it
    want = expected.astype("datetime64[s]").astype(np.int64)
    got = np.asarray(chute.open_group(path)["time"]._core.decode_cf_times(), dtype=np.int64)
    np.testing.assert_array_equal(got, want, err_msg=units)
    # And the Python decoding of plain reads agrees with both where it reads the units.
    if "+05:00" not in units:
        plain = chute.open_group(path, decode_cf=True)["time"][...]
        np.testing.assert_array_equal(plain.astype("datetime64[s]").astype(np.int64), want)


def test_other_calendars_and_bad_units_are_refused_by_name(tmp_path):
    path = _write(str(tmp_path / "noleap.zarr"), "days since 2000-01-01", "noleap", [0, 1],
                  "int64", {}, 3)  # fmt: skip
    with pytest.raises(chute.UnsupportedError, match="array '[^']*time'.*calendar 'noleap'"):
        chute.open_group(path)["time"]._core.decode_cf_times()
    path = _write(str(tmp_path / "months.zarr"), "months since 2000-01-01", None, [0, 1],
                  "int64", {}, 3)  # fmt: skip
    with pytest.raises(chute.InvalidMetadataError, match="array '[^']*time'.*attribute 'units'"):
        chute.open_group(path)["time"]._core.decode_cf_times()
