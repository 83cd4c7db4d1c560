"""Weather stores as xarray writes them: CF decoding of plain reads and windows, axes by name in
any order, dates, steps, levels, areas, gaps, forcings and statics, against xarray itself.

Float tolerance: xarray decodes packed values in float64 (int16 × scale + offset); chute does
the same arithmetic in float64 and rounds once to float32, so windows are compared with the
xarray value rounded to float32 at rtol 1e-6 (one float32 rounding). Plain reads with
decode_cf=True return xarray's dtype and are compared exactly.
"""

from __future__ import annotations

import numpy as np
import pytest

import chute

xr = pytest.importorskip("xarray")

LEVELS = np.array([500, 700, 850], dtype="int64")
LAT = np.linspace(90, -90, 7)
LON = np.arange(0, 360, 45.0)


def _dataset(times: np.ndarray) -> xr.Dataset:
    rng = np.random.default_rng(0)
    nt, nl, ny, nx = len(times), len(LEVELS), len(LAT), len(LON)
    temperature = (250 + 20 * rng.standard_normal((nt, nl, ny, nx))).astype("float32")
    temperature[0, 1, 2, 3] = np.nan
    t2m = (280 + 10 * rng.standard_normal((nt, ny, nx))).astype("float32")
    t2m[:, 0, :] = np.nan  # a missing row, stored as the fill value
    z = (5000 + 100 * rng.standard_normal((nl, nt, ny, nx))).astype("float64")
    lsm = rng.random((ny, nx)).astype("float32")
    return xr.Dataset(
        {
            "temperature": (("time", "pressure_level", "latitude", "longitude"), temperature),
            "2m_temperature": (("time", "latitude", "longitude"), t2m),
            "geopotential": (("pressure_level", "time", "latitude", "longitude"), z),
            "land_sea_mask": (("latitude", "longitude"), lsm),
        },
        coords={"time": times, "pressure_level": LEVELS, "latitude": LAT, "longitude": LON},
    )


ENCODING = {
    "temperature": {"dtype": "int16", "scale_factor": 0.01, "add_offset": 250.0,
                    "_FillValue": -32767},
    "2m_temperature": {"_FillValue": -9999.0},
}  # fmt: skip


def _write(path, ds, zarr_format):
    chunks = {"time": 1}
    encoding = {k: v for k, v in ENCODING.items() if k in ds}
    ds.chunk(chunks).to_zarr(path, zarr_format=zarr_format, encoding=encoding, consolidated=True)
    return path


HOURLY = np.arange(
    np.datetime64("2016-01-01T00"), np.datetime64("2016-01-02T06"), np.timedelta64(1, "h")
).astype("datetime64[ns]")


@pytest.fixture(scope="module", params=[2, 3])
def era5(request, tmp_path_factory):
    path = str(tmp_path_factory.mktemp(f"era5v{request.param}") / "era5.zarr")
    _write(path, _dataset(HOURLY), request.param)
    return path, xr.open_zarr(path, decode_cf=True).load()


def test_plain_reads_decode_like_xarray(era5):
    path, ds = era5
    group = chute.open_group(path, decode_cf=True)
    for name in ["temperature", "2m_temperature", "geopotential", "land_sea_mask", "time",
                 "pressure_level", "latitude"]:  # fmt: skip
        expected = ds[name].values
        actual = group[name][...]
        assert actual.dtype == expected.dtype, name
        np.testing.assert_array_equal(actual, expected, err_msg=name)
    assert group["temperature"].dims == ("time", "pressure_level", "latitude", "longitude")
    assert group["temperature"].raw_dtype == np.int16
    assert np.isnan(group["temperature"][0, 1, 2, 3])
    assert np.isnan(group["2m_temperature"][:, 0]).all()
    # a box, and decode off: the stored values, as zarr-python gives them
    np.testing.assert_array_equal(
        chute.open_group(path, decode_cf=True)["temperature"][3, 1:, 2:5, ::2],
        ds["temperature"].values[3, 1:, 2:5, ::2],
    )
    raw = chute.open_group(path)["temperature"][...]
    assert raw.dtype == np.int16 and (raw == -32767).sum() == 1
    assert chute.open(f"{path}/time", decode_cf=True)[:5].dtype == np.dtype("datetime64[ns]")


def _level_positions(levels):
    return [list(LEVELS).index(v) for v in levels]


def _stack(ds, t, variables, offsets, levels):
    channels = []
    for off in offsets:
        for var in variables:
            da = ds[var].isel(time=t + off)
            if "pressure_level" in da.dims:
                da = da.transpose("pressure_level", "latitude", "longitude")
                channels.extend(da.values[p] for p in _level_positions(levels))
            else:
                channels.append(da.transpose("latitude", "longitude").values)
    return channels


def test_windows_equal_xarray_selection(era5):
    path, ds = era5
    levels = [850, 500]
    data = chute.windows(
        path,
        input_variables=["temperature", "2m_temperature", "geopotential"],
        target_variables=["temperature"],
        forcings=["2m_temperature"],
        statics=["land_sea_mask"],
        levels=levels,
        start="2016-01-01T02",
        end="2016-01-01T20",
        frequency="3h",
        input_steps=["-3h", 0],
        target_steps=[1, "6h"],  # integers count frequency steps: 1 is 3h
    )
    times = data.time_indices()
    dates = ds["time"].values[times]
    # samples on the 3-hour grid from start; windows [t-3h, t+6h] inside [02:00, 20:00]
    assert list(dates) == list(
        np.arange(
            np.datetime64("2016-01-01T05"), np.datetime64("2016-01-01T15"), np.timedelta64(3, "h")
        ).astype("datetime64[ns]")
    )
    names = data.channel_names("inputs")
    assert names[0] == "temperature/level=850/t-3" and names[-1] == "land_sea_mask"
    loader = chute.Loader(data, batch_size=2, shuffle=False, rank=0, world_size=1, threads=2)
    seen = 0
    for batch in loader:
        for slot, sample in enumerate(batch.indices[: len(batch.indices) - batch.padding]):
            t = times[sample]
            inputs = _stack(ds, t, ["temperature", "2m_temperature", "geopotential"], (-3, 0),
                            levels)  # fmt: skip
            inputs += _stack(ds, t, ["2m_temperature"], (3, 6), levels)
            inputs.append(ds["land_sea_mask"].values)
            targets = _stack(ds, t, ["temperature"], (3, 6), levels)
            for name, expected in (("inputs", inputs), ("targets", targets)):
                expected = np.stack(expected, axis=-1).astype("float32")
                np.testing.assert_allclose(
                    batch[name][slot], expected, rtol=1e-6, equal_nan=True, err_msg=name
                )
            seen += 1
    assert seen == len(times)
    assert np.isnan(batch["inputs"]).any()  # the missing row arrived as NaN


def test_windows_channels_first_area_shard_bfloat16(era5):
    path, ds = era5
    area = (60, 45, -30, 200)  # north, west, south, east
    lat = (LAT <= 60) & (LAT >= -30)
    lon = (LON >= 45) & (LON <= 200)
    parts = []
    for rank in range(2):
        data = chute.windows(
            path, ["temperature"], levels=[700], input_steps=[0], target_steps=[],
            area=area, grid_shard=(rank, 2), channels_last=False, dtype="bfloat16",
        )  # fmt: skip
        batch = next(iter(chute.Loader(data, batch_size=4, shuffle=False, world_size=1, rank=0)))
        parts.append(batch["inputs"].astype("float32"))
        times = data.time_indices()[batch.indices]
    got = np.concatenate(parts, axis=2)  # the two ranks' latitude bands
    expected = ds["temperature"].values[times][:, [1]][:, :, lat][:, :, :, lon]
    np.testing.assert_allclose(got, expected, rtol=2**-8, equal_nan=True)


def test_gaps_refused_or_skipped(tmp_path):
    times = np.delete(HOURLY, [10, 11])  # 10:00 and 11:00 missing
    path = _write(str(tmp_path / "gappy.zarr"), _dataset(times), 3)
    with pytest.raises(chute.InvalidArgumentError, match="misses 2 date"):
        chute.windows(path, ["2m_temperature"], start="2016-01-01", end="2016-01-01T23")
    data = chute.windows(
        path, ["2m_temperature"], start="2016-01-01", end="2016-01-01T23", gaps="skip",
        input_steps=["-1h", 0], target_steps=["1h"],
    )  # fmt: skip
    store_times = xr.open_zarr(path)["time"].values
    gap = {np.datetime64("2016-01-01T10", "ns"), np.datetime64("2016-01-01T11", "ns")}
    dates = store_times[data.time_indices()]
    for date in dates:
        window = {date + np.timedelta64(h, "h") for h in (-1, 0, 1)}
        assert not window & gap
    assert len(dates) == 24 - 2 - 2 - 2  # ends, and 09:00/12:00 whose windows touch the gap


def test_gaps_filled_from_the_nearest_step(tmp_path):
    times = np.delete(HOURLY, [10, 11])  # 10:00 reads 09:00, 11:00 reads 12:00
    path = _write(str(tmp_path / "gappy.zarr"), _dataset(times), 2)
    data = chute.windows(
        path, ["2m_temperature"], start="2016-01-01T08", end="2016-01-01T14", gaps="nearest",
        input_steps=["-1h", 0], target_steps=["1h"], computed_forcings=["cos_local_time"],
        channels_last=False,
    )  # fmt: skip
    assert list(data.time_indices()) == list(range(9, 14))  # regular grid: 09:00 .. 13:00
    ref = xr.open_zarr(path).load()
    batch = next(iter(chute.Loader(data, batch_size=5, shuffle=False, rank=0, world_size=1)))
    for slot, virtual in enumerate(data.time_indices()[batch.indices]):
        for c, offset in enumerate((-1, 0)):
            date = HOURLY[virtual + offset]
            want = ref["2m_temperature"].sel(time=date, method="nearest").values
            np.testing.assert_array_equal(batch["inputs"][slot, c], want.astype("float32"))
        hours = (HOURLY[virtual + 1] - HOURLY[0]) / np.timedelta64(1, "h")  # forcing at t+1
        local = np.cos(2 * np.pi * (hours + LON / 15) / 24)
        np.testing.assert_allclose(batch["inputs"][slot, 2], np.broadcast_to(local, (7, 8)),
                                   atol=1e-5)  # fmt: skip


def test_clear_errors(era5):
    path, _ = era5
    with pytest.raises(chute.InvalidArgumentError, match="outside the store's dates"):
        chute.windows(path, ["temperature"], start="2015-12-31")
    with pytest.raises(chute.InvalidArgumentError, match="level 925"):
        chute.windows(path, ["temperature"], levels=[925])
    with pytest.raises(chute.InvalidArgumentError, match="'humidity'"):
        chute.windows(path, ["temperature", "humidity"])
    with pytest.raises(chute.InvalidArgumentError, match="not a multiple"):
        chute.windows(path, ["temperature"], input_steps=["30min"])
    with pytest.raises(chute.InvalidArgumentError, match="static field 'temperature'"):
        chute.windows(path, ["2m_temperature"], statics=["temperature"])


def test_time_decoding_calendars(tmp_path):
    from chute._cf import decode_times

    got = decode_times(np.array([0, 6, 30]), {"units": "hours since 2016-01-01 00:00:00"}, "t")
    assert list(got) == list(np.array(["2016-01-01T00", "2016-01-01T06", "2016-01-02T06"],
                                      dtype="datetime64[ns]"))  # fmt: skip
    with pytest.raises(chute.UnsupportedError, match="noleap"):
        decode_times(np.array([0]), {"units": "days since 2000-01-01", "calendar": "noleap"}, "t")


def test_statistics_equal_numpy_and_feed_windows(era5, tmp_path):
    path, ds = era5
    out = str(tmp_path / "stats.zarr")
    start, end = "2016-01-01T03", "2016-01-01T21"
    results = chute.statistics(path, out, start=start, end=end, threads=3)
    sel = ds.sel(time=slice(start, end))
    for name in ["temperature", "2m_temperature", "geopotential"]:
        da = sel[name]
        if "pressure_level" in da.dims:
            da = da.transpose("pressure_level", "time", ...)
            values = da.values.reshape(len(LEVELS), da.sizes["time"], -1).astype(np.float64)
        else:
            values = da.values.reshape(1, da.sizes["time"], -1).astype(np.float64)
        flat = values.reshape(values.shape[0], -1)
        diffs = np.diff(values, axis=1).reshape(values.shape[0], -1)
        expected = {
            "mean": np.nanmean(flat, axis=1), "std": np.nanstd(flat, axis=1),
            "min": np.nanmin(flat, axis=1), "max": np.nanmax(flat, axis=1),
            "diff_mean": np.nanmean(diffs, axis=1), "diff_std": np.nanstd(diffs, axis=1),
        }  # fmt: skip
        for kind, want in expected.items():
            got = np.atleast_1d(results[name][kind])
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12, err_msg=f"{name} {kind}")
            stored = np.atleast_1d(chute.open_group(out)[f"{kind}/{name}"][...])
            np.testing.assert_array_equal(stored, got)
    lsm = ds["land_sea_mask"].values.astype(np.float64)
    np.testing.assert_allclose(results["land_sea_mask"]["std"], np.std(lsm), rtol=1e-12)
    # the group feeds windows: normalised with its mean and std
    data = chute.windows(path, ["temperature", "2m_temperature"], levels=[700],
                         statics=["land_sea_mask"], input_offsets=(0,), target_offsets=(),
                         statistics=out)  # fmt: skip
    batch = next(iter(chute.Loader(data, batch_size=2, shuffle=False, rank=0, world_size=1)))
    t = data.time_indices()[batch.indices[0]]
    mean_t, std_t = results["temperature"]["mean"][1], results["temperature"]["std"][1]
    expected = (
        ds["temperature"].values[t, 1].astype(np.float32) - np.float32(mean_t)
    ) * np.float32(1 / std_t)
    np.testing.assert_allclose(batch["inputs"][0, :, :, 0], expected, rtol=1e-6, equal_nan=True)


def test_stats_cli(era5, tmp_path):
    from cli_support import run_cli

    path, _ = era5
    out = str(tmp_path / "cli_stats.zarr")
    result = run_cli("stats", path, "--start", "2016-01-01T00", "--end", "2016-01-01T12",
                     "--out", out)  # fmt: skip
    assert "temperature" in result.stdout
    assert chute.open_group(out)["std/temperature"].shape == (3,)
    bad = run_cli("stats", path, "--start", "1990-01-01", "--out", out, check=False)
    assert bad.returncode != 0 and "start" in bad.stderr


def test_two_stores_as_one(tmp_path):
    ds = _dataset(HOURLY[:12])
    pressure = _write(str(tmp_path / "pl.zarr"), ds[["temperature"]], 2)
    single = _write(str(tmp_path / "sl.zarr"), ds[["2m_temperature", "land_sea_mask"]], 3)
    data = chute.windows(
        [pressure, single], ["temperature", "2m_temperature"], levels=[500],
        statics=["land_sea_mask"], start="2016-01-01T01", end="2016-01-01T10",
        input_steps=["-1h", 0], target_steps=["1h"],
    )  # fmt: skip
    ref = xr.merge([xr.open_zarr(pressure), xr.open_zarr(single)]).load()
    batch = next(iter(chute.Loader(data, batch_size=3, shuffle=False, rank=0, world_size=1)))
    for slot, sample in enumerate(batch.indices):
        t = data.time_indices()[sample]
        expected = _stack(ref, t, ["temperature", "2m_temperature"], (-1, 0), [500])
        expected.append(ref["land_sea_mask"].values)
        np.testing.assert_allclose(
            batch["inputs"][slot], np.stack(expected, -1).astype("float32"), rtol=1e-6,
            equal_nan=True,
        )  # fmt: skip
    # a store on another grid: the error names both stores and the coordinate
    shifted = ds[["2m_temperature"]].assign_coords(latitude=LAT + 0.5)
    other = _write(str(tmp_path / "other.zarr"), shifted, 2)
    with pytest.raises(chute.InvalidArgumentError, match="pl.zarr.*other.zarr.*'latitude'"):
        chute.windows([pressure, other], ["temperature", "2m_temperature"])
    # stores with the same variables are files of one time series: the same store twice overlaps
    with pytest.raises(chute.InvalidArgumentError, match=r"pl\.zarr.*pl\.zarr.*overlap"):
        chute.windows([pressure, pressure], ["temperature"])


def _toa_reference(date: np.datetime64, lat: np.ndarray, lon: np.ndarray) -> np.ndarray:
    """Top-of-atmosphere flux written independently of chute: NumPy dates, Spencer (1971)."""
    year = date.astype("datetime64[Y]")
    days_in_year = (year + 1).astype("datetime64[D]") - year.astype("datetime64[D]")
    day = (date - year.astype(date.dtype)) / np.timedelta64(1, "D")
    angle = 2 * np.pi * day / (days_in_year / np.timedelta64(1, "D"))
    k = np.arange(4)
    cos_k, sin_k = np.cos(k * angle), np.sin(k * angle)
    e0 = np.dot([1.000110, 0.034221, 0.000719], cos_k[:3]) + np.dot(
        [0.001280, 0.000077], sin_k[1:3]
    )
    decl = np.dot([0.006918, -0.399912, -0.006758, -0.002697], cos_k) + np.dot(
        [0.070257, 0.000907, 0.00148], sin_k[1:]
    )
    eot = 229.18 * (0.000075 + 0.001868 * cos_k[1] - 0.032077 * sin_k[1] - 0.014615 * cos_k[2]
                    - 0.040849 * sin_k[2])  # fmt: skip
    utc_hours = (date - date.astype("datetime64[D]")) / np.timedelta64(1, "h")
    hour_angle = np.radians(15 * (utc_hours + lon[None, :] / 15 + eot / 60 - 12))
    phi = np.radians(lat)[:, None]
    cos_zenith = np.sin(phi) * np.sin(decl) + np.cos(phi) * np.cos(decl) * np.cos(hour_angle)
    return 1361 * e0 * np.maximum(cos_zenith, 0)


def test_computed_forcings_against_independent_formulas(era5):
    path, ds = era5
    names = ["cos_local_time", "sin_local_time", "cos_day_of_year", "sin_day_of_year",
             "toa_radiation"]  # fmt: skip
    data = chute.windows(path, ["2m_temperature"], input_steps=[0], target_steps=["2h"],
                         computed_forcings=names, channels_last=False)  # fmt: skip
    assert data.channel_names("inputs")[1:] == [f"{n}/t+2" for n in names]
    batch = next(iter(chute.Loader(data, batch_size=4, shuffle=True, seed=3, rank=0,
                                   world_size=1)))  # fmt: skip
    for slot, sample in enumerate(batch.indices):
        date = ds["time"].values[data.time_indices()[sample] + 2]
        hours = (date - date.astype("datetime64[D]")) / np.timedelta64(1, "h")
        local = 2 * np.pi * (hours + LON[None, :] / 15) / 24 + 0 * LAT[:, None]
        day = (date - date.astype("datetime64[Y]").astype(date.dtype)) / np.timedelta64(1, "D")
        year = 2 * np.pi * day / 366  # 2016 is a leap year
        expected = [np.cos(local), np.sin(local), np.full_like(local, np.cos(year)),
                    np.full_like(local, np.sin(year)), _toa_reference(date, LAT, LON)]  # fmt: skip
        for c, want in enumerate(expected):
            np.testing.assert_allclose(batch["inputs"][slot, 1 + c], want, rtol=1e-5, atol=1e-3,
                                       err_msg=names[c])  # fmt: skip
    assert batch["inputs"][:, 5].max() > 1000  # daylight somewhere
    with pytest.raises(chute.InvalidArgumentError, match="moon_phase"):
        chute.windows(path, ["2m_temperature"], computed_forcings=["moon_phase"])


def test_nan_policies(era5):
    path, ds = era5
    kwargs = {"input_offsets": (0,), "target_offsets": (), "levels": [700]}
    loader = chute.Loader(chute.windows(path, ["2m_temperature"], nan="error", **kwargs),
                          batch_size=2, shuffle=False, rank=0, world_size=1)  # fmt: skip
    with pytest.raises(chute.InvalidArgumentError, match="'2m_temperature' holds a missing value"):
        next(iter(loader))
    for channels_last in (True, False):
        data = chute.windows(path, ["temperature", "2m_temperature"], nan=-1.5,
                             channels_last=channels_last, **kwargs)  # fmt: skip
        batch = next(iter(chute.Loader(data, batch_size=3, shuffle=False, rank=0, world_size=1)))
        got = batch["inputs"] if channels_last else np.moveaxis(batch["inputs"], 1, -1)
        for slot, sample in enumerate(batch.indices):
            t = data.time_indices()[sample]
            want = np.stack(_stack(ds, t, ["temperature", "2m_temperature"], (0,), [700]), -1)
            want = np.where(np.isnan(want), -1.5, want).astype("float32")
            np.testing.assert_allclose(got[slot], want, rtol=1e-6)
        assert not np.isnan(got).any()


def test_make_dataset_xarray_then_stats_windows_and_bench(tmp_path):
    from cli_support import run_cli

    store = str(tmp_path / "era5.zarr")
    run_cli("make-dataset", "variables", store, "--xarray", "--times", "12", "--levels", "4",
            "--lat", "19", "--lon", "36", "--format", "3")  # fmt: skip
    ds = xr.open_zarr(store)
    assert ds["time"].dtype == np.dtype("datetime64[ns]")
    assert chute.open_group(store)["temperature"].dtype == np.int16  # packed, as written
    stats = str(tmp_path / "stats.zarr")
    run_cli("stats", store, "--out", stats)
    data = chute.windows(store, ["temperature", "2m_temperature"], statics=["land_sea_mask"],
                         input_steps=["-1h", 0], target_steps=["1h"], statistics=stats)  # fmt: skip
    batch = next(iter(chute.Loader(data, batch_size=4, rank=0, world_size=1)))
    assert batch["inputs"].shape == (4, 19, 36, 2 * (4 + 1) + 1)
    report = run_cli("bench", store, "--windows", "--variables", "temperature", "2m_temperature",
                     "--statistics", stats, "--mode", "io", "--batches", "2", "--trials", "1",
                     "--warmup", "0", "--batch-size", "4", "--no-roofline", "-q")  # fmt: skip
    assert "samples/s" in report.stdout


def test_nan_mask_channels(era5):
    path, ds = era5
    kwargs = {"input_offsets": (0,), "target_offsets": ()}
    # the mask channels: 1 where the value was missing, whatever replaced it
    data = chute.windows(path, ["2m_temperature"], nan=0.0, nan_mask=True, **kwargs)
    assert data.channel_names("inputs") == ["2m_temperature/t+0", "2m_temperature/t+0/mask"]
    for channels_last in (True, False):
        data = chute.windows(path, ["2m_temperature"], nan=0.0, nan_mask=True,
                             channels_last=channels_last, **kwargs)  # fmt: skip
        batch = next(iter(chute.Loader(data, batch_size=2, shuffle=False, rank=0, world_size=1)))
        got = batch["inputs"] if channels_last else np.moveaxis(batch["inputs"], 1, -1)
        t = data.time_indices()[batch.indices[0]]
        missing = np.isnan(ds["2m_temperature"].values[t])
        np.testing.assert_array_equal(got[0, :, :, 1], missing.astype("float32"))
        assert (got[0, :, :, 0][missing] == 0).all()
