"""Per-grid-point statistics (`chute stats --per-gridpoint`, `chute.statistics(...,
per_gridpoint=True)`): mean, std, min, max and time-difference statistics over time for every
(level, lat, lon) point, against NumPy's nan-functions in float64; the group layout that
`chute.windows(statistics=...)` reads (/work/notes/stats_layout.md: (level, lat, lon) arrays,
lat before lon, the attribute per_gridpoint = true, statics over the grid)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import chute

xr = pytest.importorskip("xarray")
zarr = pytest.importorskip("zarr")

LEVELS = np.array([500, 850], dtype="int64")
LAT = np.linspace(60, -60, 5)
LON = np.arange(0, 360, 60.0)
TIMES = np.arange(
    np.datetime64("2016-01-01T00"), np.datetime64("2016-01-01T12"), np.timedelta64(1, "h")
).astype("datetime64[ns]")


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    rng = np.random.default_rng(5)
    nt, nl, ny, nx = len(TIMES), len(LEVELS), len(LAT), len(LON)
    temperature = (250 + 20 * rng.standard_normal((nt, nl, ny, nx))).astype("float32")
    temperature[2, 1, 3, 4] = np.nan  # one missing value
    t2m = (280 + 10 * rng.standard_normal((nt, ny, nx))).astype("float32")
    t2m[:, 0, :] = np.nan  # a row never observed: NaN statistics there
    # stored (time, longitude, latitude): the statistics come out (latitude, longitude)
    sst = (290 + rng.standard_normal((nt, nx, ny))).astype("float64")
    lsm = rng.random((ny, nx)).astype("float32")
    ds = xr.Dataset(
        {
            "temperature": (("time", "pressure_level", "latitude", "longitude"), temperature),
            "2m_temperature": (("time", "latitude", "longitude"), t2m),
            "sst": (("time", "longitude", "latitude"), sst),
            "land_sea_mask": (("latitude", "longitude"), lsm),
        },
        coords={"time": TIMES, "pressure_level": LEVELS, "latitude": LAT, "longitude": LON},
    )
    path = str(tmp_path_factory.mktemp("gridpoint") / "era5.zarr")
    encoding = {
        "temperature": {"dtype": "int16", "scale_factor": 0.01, "add_offset": 250.0,
                        "_FillValue": -32767},
    }  # fmt: skip
    ds.chunk({"time": 1}).to_zarr(path, zarr_format=3, encoding=encoding)
    return path, xr.open_zarr(path, decode_cf=True).load()


def _expected(da: xr.DataArray) -> dict[str, np.ndarray]:
    order = [d for d in ("time", "pressure_level", "latitude", "longitude") if d in da.dims]
    values = da.transpose(*order).values.astype(np.float64)
    diffs = np.diff(values, axis=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN points give NaN, as wanted
        return {
            "mean": np.nanmean(values, axis=0), "std": np.nanstd(values, axis=0),
            "min": np.nanmin(values, axis=0), "max": np.nanmax(values, axis=0),
            "diff_mean": np.nanmean(diffs, axis=0), "diff_std": np.nanstd(diffs, axis=0),
        }  # fmt: skip


def test_per_gridpoint_statistics_equal_numpy(store, tmp_path):
    path, ds = store
    out = str(tmp_path / "stats.zarr")
    start, end = "2016-01-01T02", "2016-01-01T10"
    results = chute.statistics(path, out, start=start, end=end, threads=3, per_gridpoint=True)
    sel = ds.sel(time=slice(start, end))
    group = zarr.open_group(out, mode="r")
    assert group.attrs["per_gridpoint"] is True
    shapes = {"temperature": (2, 5, 6), "2m_temperature": (5, 6), "sst": (5, 6)}
    for name, shape in shapes.items():
        for kind, want in _expected(sel[name]).items():
            got = results[name][kind]
            assert got.shape == shape, (name, kind)
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12,
                                       err_msg=f"{name} {kind}")  # fmt: skip
            np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
            stored = group[f"{kind}/{name}"]
            np.testing.assert_array_equal(stored[...], got)
        dims = group[f"mean/{name}"].metadata.dimension_names
        assert dims[-2:] == ("latitude", "longitude"), dims
    assert np.isnan(results["2m_temperature"]["std"][0]).all()  # the row never observed
    assert np.isfinite(results["2m_temperature"]["std"][1:]).all()
    assert group["mean/temperature"].metadata.dimension_names[0] == "pressure_level"
    # statics keep their statistics over the grid
    lsm = ds["land_sea_mask"].values.astype(np.float64)
    assert np.shape(results["land_sea_mask"]["mean"]) == ()
    np.testing.assert_allclose(results["land_sea_mask"]["std"], np.std(lsm), rtol=1e-12)


def test_per_gridpoint_does_not_depend_on_blocks_and_threads(store):
    from chute.weather_stats import compute_statistics

    path, _ = store
    one = compute_statistics(path, ["temperature"], threads=1, block=1, per_gridpoint=True)
    many = compute_statistics(path, ["temperature"], threads=4, block=5, per_gridpoint=True)
    for kind in ("mean", "std", "min", "max", "diff_mean", "diff_std"):
        np.testing.assert_allclose(one["temperature"][kind], many["temperature"][kind],
                                   rtol=1e-12, atol=1e-12, equal_nan=True)  # fmt: skip
    with pytest.raises(chute.InvalidArgumentError, match="per_gridpoint"):
        compute_statistics(path, ["temperature"], per_gridpoint="yes")


def test_stats_cli_per_gridpoint(store, tmp_path):
    from cli_support import run_cli

    path, ds = store
    out = str(tmp_path / "cli.zarr")
    result = run_cli("stats", path, "--variables", "temperature", "--per-gridpoint", "--out", out)
    assert "temperature" in result.stdout
    group = zarr.open_group(out, mode="r")
    assert group.attrs["per_gridpoint"] is True
    np.testing.assert_allclose(group["mean/temperature"][...], _expected(ds["temperature"])["mean"],
                               rtol=1e-12)  # fmt: skip
    # without the flag: per channel, as before
    run_cli("stats", path, "--variables", "temperature", "--out", out)
    group = zarr.open_group(out, mode="r")
    assert group.attrs["per_gridpoint"] is False and group["mean/temperature"].shape == (2,)
