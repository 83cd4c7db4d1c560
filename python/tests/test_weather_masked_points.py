"""Masked fields under per-grid-point statistics: points whose mean/std are NaN (never observed,
e.g. sea-surface temperature over land) or whose std is 0 (a point that never changed).

`masked_points="nan"` passes NaN on at such points, `std_floor=` raises a small std; the default
is an error naming the point. Exact against NumPy with the arithmetic chute documents: the
decoded float32 value minus float32(mean), times float32(1 / std), then the cast.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import chute

xr = pytest.importorskip("xarray")
zarr = pytest.importorskip("zarr")

MASK_LEVELS = np.array([500, 850], dtype="int64")
MASK_LAT = np.linspace(60, -60, 7)
MASK_LON = np.arange(0, 360, 45.0)
MASK_TIMES = np.arange(
    np.datetime64("2020-01-01T00"), np.datetime64("2020-01-01T10"), np.timedelta64(1, "h")
).astype("datetime64[ns]")
LAND = (slice(2, 4), slice(1, 3))  # (lat, lon) rows and columns where sst is never observed
STILL = (1, 3, 5)  # (level, lat, lon) where temperature never changes: std 0


@pytest.fixture(scope="module")
def masked_store(tmp_path_factory):
    rng = np.random.default_rng(11)
    nt, nl, ny, nx = len(MASK_TIMES), len(MASK_LEVELS), len(MASK_LAT), len(MASK_LON)
    sst = (290 + 5 * rng.standard_normal((nt, ny, nx))).astype("float32")
    sst[(slice(None), *LAND)] = np.nan
    temperature = (250 + 20 * rng.standard_normal((nt, nl, ny, nx))).astype("float32")
    temperature[(slice(None), *STILL)] = 280.5
    ds = xr.Dataset(
        {
            "sea_surface_temperature": (("time", "latitude", "longitude"), sst),
            "temperature": (("time", "level", "latitude", "longitude"), temperature),
        },
        coords={"time": MASK_TIMES, "level": MASK_LEVELS, "latitude": MASK_LAT,
                "longitude": MASK_LON},
    )  # fmt: skip
    root = tmp_path_factory.mktemp("masked")
    path = str(root / "era5.zarr")
    ds.chunk({"time": 1}).to_zarr(path, zarr_format=2, consolidated=True)
    raw = zarr.open_group(path, mode="r")
    decoded = {name: raw[name][...].astype("float32") for name in ds.data_vars}
    stats_path = str(root / "stats.zarr")
    group = zarr.open_group(stats_path, mode="w", zarr_format=3)
    group.attrs["per_gridpoint"] = True
    stats = {}
    for name, values in decoded.items():
        with warnings.catch_warnings():  # all-NaN points: NaN mean and std, as chute stats
            warnings.simplefilter("ignore", RuntimeWarning)
            wide = values.astype("float64")
            stats[name] = (np.nanmean(wide, axis=0), np.nanstd(wide, axis=0))
        for kind, array in zip(("mean", "std"), stats[name]):
            out = group.create_array(f"{kind}/{name}", shape=array.shape, dtype="float64")
            out[...] = array
    assert np.isnan(stats["sea_surface_temperature"][1][LAND]).all()
    assert stats["temperature"][1][STILL] == 0.0
    return path, stats_path, decoded, stats


def _bfloat16_bits_of(values: np.ndarray) -> np.ndarray:
    bits = values.astype("float32").view(np.uint32)
    rounded = (bits + np.uint32(0x7FFF) + ((bits >> 16) & 1)) >> 16
    quiet = (bits >> 16) | 0x40
    return np.where(np.isnan(values), quiet, rounded).astype(np.uint16)


def _expected_masked(values, mean, std, floor):
    """NumPy's normalisation with chute's masked-point rules."""
    std = np.where(np.isfinite(std) & (std < floor), floor, std)
    masked = ~np.isfinite(mean) | ~np.isfinite(std) | ~(std > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        inv = (1.0 / std).astype("float32")
        out = (values - mean.astype("float32")) * inv
    return np.where(masked, np.float32(np.nan), out).astype("float32")


def _read_all(data, channels_last):
    loader = chute.Loader(data, batch_size=3, shuffle=False, world_size=1, rank=0, threads=2)
    got = {"inputs": [], "targets": []}
    for batch in loader:
        real = len(batch.indices) - batch.padding
        for name in got:
            got[name] += list(np.asarray(batch[name])[:real])
    return got


@pytest.mark.parametrize("channels_last", [True, False])
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("floor", [0.0, 0.25])
def test_masked_points_pass_nan_and_floor_the_std(masked_store, channels_last, dtype, floor):
    path, stats_path, decoded, stats = masked_store
    data = chute.windows(
        path, ["temperature", "sea_surface_temperature"], target_variables=["temperature"],
        input_steps=[-1, 0], target_steps=[1], statistics=stats_path, masked_points="nan",
        std_floor=floor, channels_last=channels_last, dtype=dtype,
    )  # fmt: skip
    times = data.time_indices()
    got = _read_all(data, channels_last)
    assert len(got["inputs"]) == len(times)
    t_mean, t_std = stats["temperature"]
    s_mean, s_std = stats["sea_surface_temperature"]
    for slot, t in enumerate(times):
        inputs = []
        for step in (-1, 0):
            inputs += [_expected_masked(decoded["temperature"][t + step, lv], t_mean[lv],
                                        t_std[lv], floor) for lv in range(len(MASK_LEVELS))]  # fmt: skip
            inputs.append(
                _expected_masked(decoded["sea_surface_temperature"][t + step], s_mean, s_std, floor)
            )
        targets = [_expected_masked(decoded["temperature"][t + 1, lv], t_mean[lv], t_std[lv],
                                    floor) for lv in range(len(MASK_LEVELS))]  # fmt: skip
        for name, channels in (("inputs", inputs), ("targets", targets)):
            expected = np.stack(channels, axis=-1 if channels_last else 0)
            sample = got[name][slot]
            if dtype == "bfloat16":
                np.testing.assert_array_equal(sample.view(np.uint16), _bfloat16_bits_of(expected))
            else:
                np.testing.assert_array_equal(sample, expected, err_msg=name)
    # the masked points really are NaN, and the still point is finite only with a floor
    first = _as_float32(got["inputs"][0])
    first = np.moveaxis(first, -1, 0) if channels_last else first
    sst_channel = first[len(MASK_LEVELS)]
    assert np.isnan(sst_channel[LAND]).all()
    assert np.isnan(sst_channel).sum() == sst_channel[LAND].size
    assert np.isfinite(first[STILL[0]][STILL[1:]]) == (floor > 0)


def _as_float32(values: np.ndarray) -> np.ndarray:
    if values.dtype.itemsize == 2 and values.dtype != np.float16:  # bfloat16 bits
        return (values.view(np.uint16).astype(np.uint32) << 16).view(np.float32)
    return values.astype(np.float32)


def test_masked_points_default_error_names_the_point(masked_store):
    path, stats_path, _, _ = masked_store
    options = {"input_steps": [0], "target_steps": [], "statistics": stats_path}
    with pytest.raises(
        chute.InvalidArgumentError,
        match=r"mean/sea_surface_temperature.*lat index 2, lon index 1.*masked_points='nan'",
    ):
        chute.windows(path, ["sea_surface_temperature"], **options)
    with pytest.raises(
        chute.InvalidArgumentError,
        match=r"std/temperature.*level index 1, lat index 3, lon index 5",
    ):
        chute.windows(path, ["temperature"], **options)
    # the floor lifts the still point; NaN points still need masked_points="nan"
    chute.windows(path, ["temperature"], std_floor=1e-3, **options)
    with pytest.raises(chute.InvalidArgumentError, match="sea_surface_temperature"):
        chute.windows(path, ["sea_surface_temperature"], std_floor=1e-3, **options)


@pytest.mark.parametrize(
    ("option", "value"),
    [("masked_points", "fill"), ("std_floor", -1.0), ("std_floor", float("nan"))],
)
def test_masked_points_options_are_checked(masked_store, option, value):
    path, stats_path, _, _ = masked_store
    with pytest.raises(chute.InvalidArgumentError, match=option):
        chute.windows(path, ["temperature"], statistics=stats_path, **{option: value})
