"""Windows normalised with statistics per grid point (the `chute stats --per-gridpoint` layout:
mean/<var> and std/<var> of shape (level, lat, lon) or (lat, lon), statics per channel), on a
store xarray writes, in both layouts, float32 and bfloat16, with an `area` and `grid_shard`.

Exact: the expected values are computed here with NumPy from the stored values, with the
arithmetic chute documents for normalisation (per channel or per point): the value decoded in
float64 and rounded once to float32, minus float32(mean), times float32(1 / std) in float32,
then the cast (bfloat16 round to nearest even).
"""

from __future__ import annotations

import numpy as np
import pytest

import chute

xr = pytest.importorskip("xarray")
zarr = pytest.importorskip("zarr")

LEVELS = np.array([500, 700, 850], dtype="int64")
LAT = np.linspace(90, -90, 9)
LON = np.arange(0, 360, 30.0)
TIMES = np.arange(
    np.datetime64("2016-01-01T00"), np.datetime64("2016-01-01T12"), np.timedelta64(1, "h")
).astype("datetime64[ns]")
SCALE, OFFSET, FILL = 0.01, 250.0, -32767


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    rng = np.random.default_rng(3)
    nt, nl, ny, nx = len(TIMES), len(LEVELS), len(LAT), len(LON)
    temperature = (250 + 20 * rng.standard_normal((nt, nl, ny, nx))).astype("float32")
    temperature[2, 1, 4, 5] = np.nan  # stored as the fill value
    t2m = (280 + 10 * rng.standard_normal((nt, ny, nx))).astype("float32")
    t2m[5, 3, :] = np.nan
    lsm = rng.random((ny, nx)).astype("float32")
    ds = xr.Dataset(
        {
            "temperature": (("time", "pressure_level", "latitude", "longitude"), temperature),
            "2m_temperature": (("time", "latitude", "longitude"), t2m),
            "land_sea_mask": (("latitude", "longitude"), lsm),
        },
        coords={"time": TIMES, "pressure_level": LEVELS, "latitude": LAT, "longitude": LON},
    )
    root = tmp_path_factory.mktemp("gridpoint")
    path = str(root / "era5.zarr")
    encoding = {
        "temperature": {"dtype": "int16", "scale_factor": SCALE, "add_offset": OFFSET,
                        "_FillValue": FILL},
        "2m_temperature": {"_FillValue": -9999.0},
    }  # fmt: skip
    ds.chunk({"time": 1}).to_zarr(path, zarr_format=2, encoding=encoding, consolidated=True)

    # The decoded values as chute decodes them: float64 arithmetic rounded once to float32.
    raw = zarr.open_group(path, mode="r")
    t_raw = raw["temperature"][...]
    decoded = {
        "temperature": np.where(t_raw == FILL, np.nan, t_raw * SCALE + OFFSET).astype("float32"),
        "2m_temperature": np.where(
            raw["2m_temperature"][...] == -9999.0, np.nan, raw["2m_temperature"][...]
        ).astype("float32"),
        "land_sea_mask": raw["land_sea_mask"][...].astype("float32"),
    }
    # Per-grid-point statistics over time (float64, NaN-aware), statics per channel.
    stats_path = str(root / "stats.zarr")
    group = zarr.open_group(stats_path, mode="w", zarr_format=3)
    group.attrs["per_gridpoint"] = True
    stats = {}
    for name, values in decoded.items():
        wide = values.astype("float64")
        if name == "land_sea_mask":
            mean, std = np.array(np.nanmean(wide)), np.array(np.nanstd(wide))
        elif name == "temperature":
            mean, std = np.nanmean(wide, axis=0), np.nanstd(wide, axis=0)  # (level, lat, lon)
        else:
            mean, std = np.nanmean(wide, axis=0), np.nanstd(wide, axis=0)  # (lat, lon)
        stats[name] = (mean, std)
        for kind, array in (("mean", mean), ("std", std)):
            out = group.create_array(f"{kind}/{name}", shape=array.shape, dtype="float64")
            out[...] = array
    return path, stats_path, decoded, stats


def _bfloat16_bits(values: np.ndarray) -> np.ndarray:
    bits = values.astype("float32").view(np.uint32)
    rounded = (bits + np.uint32(0x7FFF) + ((bits >> 16) & 1)) >> 16
    quiet = (bits >> 16) | 0x40
    return np.where(np.isnan(values), quiet, rounded).astype(np.uint16)


def _normalised(values, mean, std):
    return (values - mean.astype("float32")) * (1.0 / std).astype("float32")


def _level_channel(decoded, stats, time, level, box):
    mean, std = stats["temperature"]
    value = decoded["temperature"][time, level][box]
    return _normalised(value, mean[level][box], std[level][box])


@pytest.mark.parametrize("channels_last", [True, False])
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_gridpoint_statistics_exact_with_area_and_shard(store, channels_last, dtype):
    path, stats_path, decoded, stats = store
    area = (70, 25, -70, 300)  # north, west, south, east
    lat = np.flatnonzero((LAT <= 70) & (LAT >= -70))
    lon = np.flatnonzero((LON >= 25) & (LON <= 300))
    levels = [850, 500]
    level_index = [2, 0]
    for rank in range(2):
        data = chute.windows(
            path, ["temperature", "2m_temperature"], target_variables=["temperature"],
            statics=["land_sea_mask"], levels=levels, input_steps=[-1, 0], target_steps=[1],
            statistics=stats_path, area=area, grid_shard=(rank, 2),
            channels_last=channels_last, dtype=dtype,
        )  # fmt: skip
        band = lat[rank * len(lat) // 2 : (rank + 1) * len(lat) // 2]  # as grid_shard splits
        times = data.time_indices()
        loader = chute.Loader(data, batch_size=4, shuffle=False, world_size=1, rank=0, threads=2)
        seen = 0
        for batch in loader:
            for slot, sample in enumerate(batch.indices[: len(batch.indices) - batch.padding]):
                t = times[sample]
                box = np.ix_(band, lon)

                inputs = []
                for step in (-1, 0):
                    inputs += [_level_channel(decoded, stats, t + step, li, box)
                               for li in level_index]  # fmt: skip
                    mean, std = stats["2m_temperature"]
                    value = decoded["2m_temperature"][t + step][box]
                    inputs.append(_normalised(value, mean[box], std[box]))
                mean, std = stats["land_sea_mask"]
                inputs.append(_normalised(decoded["land_sea_mask"][box], mean, std))
                targets = [_level_channel(decoded, stats, t + 1, li, box) for li in level_index]
                for name, channels in (("inputs", inputs), ("targets", targets)):
                    expected = np.stack(channels, axis=-1 if channels_last else 0)
                    got = np.asarray(batch[name][slot])
                    if dtype == "bfloat16":
                        np.testing.assert_array_equal(
                            got.view(np.uint16), _bfloat16_bits(expected), err_msg=name
                        )
                    else:
                        np.testing.assert_array_equal(got, expected, err_msg=name)
                seen += 1
        assert seen == len(times)
    # the per-point statistics differ from point to point: a per-channel mean would not match
    assert np.ptp(stats["temperature"][0][2][np.ix_(lat, lon)]) > 1


def test_gridpoint_statistics_bad_point_is_named(store, tmp_path):
    path, _, _, stats = store
    bad = str(tmp_path / "bad.zarr")
    group = zarr.open_group(bad, mode="w", zarr_format=3)
    group.attrs["per_gridpoint"] = True
    for name, (mean, std) in stats.items():
        std = std.copy()
        if name == "2m_temperature":
            std[0, 0] = 0.0  # a point that never changed, at the first row
        for kind, array in (("mean", mean), ("std", std)):
            out = group.create_array(f"{kind}/{name}", shape=array.shape, dtype="float64")
            out[...] = array
    options = {"statics": ["land_sea_mask"], "statistics": bad, "input_steps": [0],
               "target_steps": []}  # fmt: skip
    with pytest.raises(
        chute.InvalidArgumentError, match=r"std/2m_temperature.*lat index 0, lon index 0"
    ):
        chute.windows(path, ["temperature", "2m_temperature"], **options)
    # outside the area it is never read
    chute.windows(path, ["temperature", "2m_temperature"], area=(70, 0, -90, 330), **options)
