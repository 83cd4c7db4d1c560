"""Time values at and just past the limits of numpy.datetime64[ns], in every unit, both signs,
decoded by chute (decode_cf=True) and by xarray. Inside the limits both give the same dates;
just past them xarray gives no datetime64[ns] (it turns to cftime, or raises without it) and
chute raises OutOfRangeError naming the array, the value and the units. Before, chute's
arithmetic wrapped around silently ("days since 1970-01-01" = 10^8 read as 2189-05-28)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import chute

xr = pytest.importorskip("xarray")
zarr = pytest.importorskip("zarr")

NS_MAX = 2**63 - 1
UNITS = {  # name: nanoseconds per unit
    "nanoseconds": 1,
    "microseconds": 10**3,
    "milliseconds": 10**6,
    "seconds": 10**9,
    "minutes": 60 * 10**9,
    "hours": 3600 * 10**9,
    "days": 86400 * 10**9,
}


def _cases():
    """(units, stored int64 value, whether it fits datetime64[ns])."""
    for unit, ns in UNITS.items():
        limit = NS_MAX // ns  # the last whole unit on either side of 1970
        if ns == 1:  # int64 holds no value past the limit: move the reference by 1 ns instead
            yield f"{unit} since 1970-01-01", NS_MAX, True
            yield f"{unit} since 1970-01-01", -NS_MAX, True
            yield f"{unit} since 1970-01-01T00:00:00.000000001", NS_MAX, False
            yield f"{unit} since 1969-12-31T23:59:59.999999999", -NS_MAX, False
            continue
        yield f"{unit} since 1970-01-01", limit, True
        yield f"{unit} since 1970-01-01", -limit, True
        yield f"{unit} since 1970-01-01", limit + 1, False
        yield f"{unit} since 1970-01-01", -limit - 1, False
    # the audit's cases
    yield "days since 1970-01-01", 10**8, False
    yield "hours since 1970-01-01", np.iinfo(np.int64).max, False
    yield "hours since 1970-01-01", np.iinfo(np.int64).min + 1, False


CASES = list(_cases())


def _store(path, units, values, dtype="int64", calendar="proleptic_gregorian"):
    root = zarr.open_group(str(path), mode="w", zarr_format=3)
    time = root.create_array("time", shape=(len(values),), dtype=dtype,
                             dimension_names=["time"])  # fmt: skip
    time[...] = np.asarray(values, dtype=dtype)
    time.attrs.update({"units": units, "calendar": calendar})
    return str(path)


def _xarray(values, units, dtype="int64"):
    from xarray.coding.times import decode_cf_datetime

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return decode_cf_datetime(np.asarray(values, dtype=dtype), units,
                                      "proleptic_gregorian", time_unit="ns")  # fmt: skip
        except Exception as error:  # noqa: BLE001 - what xarray raises is only reported
            return error


@pytest.mark.parametrize("case", range(len(CASES)), ids=[f"{u}={v}" for u, v, _ in CASES])
def test_limits_of_datetime64_ns_like_xarray(tmp_path, case):
    units, value, fits = CASES[case]
    # a date well inside the range beside it, so a whole-array result is compared too
    values = [value, 0]
    path = _store(tmp_path / "t.zarr", units, values)
    expected = _xarray(values, units)
    group = chute.open_group(path, decode_cf=True)
    if fits:
        assert isinstance(expected, np.ndarray) and expected.dtype == "datetime64[ns]", expected
        got = group["time"][...]
        assert got.dtype == np.dtype("datetime64[ns]")
        np.testing.assert_array_equal(got, expected)
        return
    # xarray does not decode it into a datetime64[ns] date either (at -2^63 ns, NaT's own bit
    # pattern, it gives NaT: a missing date where the file holds one)
    decoded = isinstance(expected, np.ndarray) and expected.dtype == "datetime64[ns]"
    assert not decoded or np.isnat(expected[0]), expected
    with pytest.raises(chute.OutOfRangeError) as error:
        group["time"][...]
    message = str(error.value)
    assert "'time'" in message or "/time'" in message, message
    assert str(value) in message and units in message, message


@pytest.mark.parametrize("value", [1e100, -1e300, 106752.5, -106752.5])
def test_float_times_past_the_limits_raise(tmp_path, value):
    path = _store(tmp_path / "f.zarr", "days since 1970-01-01", [value, 0.0], "float64")
    expected = _xarray([value, 0.0], "days since 1970-01-01", "float64")
    assert not (isinstance(expected, np.ndarray) and expected.dtype == "datetime64[ns]")
    with pytest.raises(chute.OutOfRangeError, match="days since 1970-01-01"):
        chute.open_group(path, decode_cf=True)["time"][...]


def test_float_times_inside_the_limits_like_xarray(tmp_path):
    values = [106751.5, -106751.5, 0.25, np.nan]
    path = _store(tmp_path / "f.zarr", "days since 1970-01-01", values, "float64")
    expected = _xarray(values, "days since 1970-01-01", "float64")
    np.testing.assert_array_equal(chute.open_group(path, decode_cf=True)["time"][...], expected)


def test_a_reference_far_outside_the_range_is_refused_not_wrapped(tmp_path):
    # Before: "days since -4713-01-01" = 0 read as 1717-02-04.
    path = _store(tmp_path / "jd.zarr", "days since -4713-01-01", [0, 1])
    expected = _xarray([0, 1], "days since -4713-01-01")
    assert not (isinstance(expected, np.ndarray) and expected.dtype == "datetime64[ns]")
    with pytest.raises(chute.OutOfRangeError, match="-4713-01-01"):
        chute.open_group(path, decode_cf=True)["time"][...]


def test_the_window_decoding_in_cpp_names_value_and_units(tmp_path):
    # The core's decoding (int64 seconds, used by windows) checks each step the same way.
    path = _store(tmp_path / "w.zarr", "hours since 1970-01-01", [np.iinfo(np.int64).max, 0])
    with pytest.raises(chute.OutOfRangeError) as error:
        chute.open_group(path)["time"]._core.decode_cf_times()
    message = str(error.value)
    assert "time" in message and "hours since 1970-01-01" in message, message
