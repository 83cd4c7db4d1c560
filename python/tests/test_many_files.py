"""Datasets over many files along time: NetCDF per day, Zarr per year and FourCastNet's per-year
HDF5 files, joined by chute and compared with xarray.open_mfdataset and with the same data as
one store."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import chute

xr = pytest.importorskip("xarray")
pytest.importorskip("h5netcdf")
from weather_files import (
    CHANNELS,
    write_fourcastnet,
    write_netcdf_days,
    write_zarr_years,
)


def _open_mfdataset(paths, engine):
    import dask

    # dask's threads and h5py's lock can deadlock in one process; one thread reads the same.
    with dask.config.set(scheduler="synchronous"):
        return xr.open_mfdataset(
            paths, engine=engine, combine="by_coords", data_vars="minimal"
        ).load()


@pytest.fixture(scope="module")
def days(tmp_path_factory):
    folder = tmp_path_factory.mktemp("days")
    paths = write_netcdf_days(folder)
    expected = _open_mfdataset(paths, engine="h5netcdf")
    return folder, paths, expected


def test_plain_reads_across_members_equal_open_mfdataset(days):
    folder, paths, expected = days
    group = chute.open_group(list(reversed(paths)), decode_cf=True)  # given out of order
    assert group.members == tuple(paths)
    np.testing.assert_array_equal(group["time"][:], expected["time"].values)
    np.testing.assert_array_equal(group["t2m"][:], expected["t2m"].values)
    # a box spanning the first two files
    np.testing.assert_array_equal(group["z"][2:6, 1], expected["z"].isel(time=slice(2, 6), level=1))
    np.testing.assert_array_equal(group["lsm"][:], expected["lsm"].values)
    glob = chute.open_group(str(folder / "era5_*.nc"), decode_cf=True)
    np.testing.assert_array_equal(glob["t2m"][3:5], group["t2m"][3:5])


def _window(ds, t, names, offsets):
    planes = []
    for o in offsets:
        for name in names:
            v = ds[name].isel(time=t + o).values
            planes.extend(v if v.ndim == 3 else [v])
    return np.stack(planes).astype("float32")


@pytest.mark.parametrize("threads", [1, 3])
def test_windows_across_files_equal_xarray_and_one_store(days, tmp_path, threads):
    _folder, paths, expected = days
    data = chute.windows(paths, ["t2m", "z"], channels_last=False, input_offsets=(-1, 0),
                         target_offsets=(1, 2))  # fmt: skip
    one = tmp_path / "one.zarr"
    expected.to_zarr(one, zarr_format=2)
    single = chute.windows(str(one), ["t2m", "z"], channels_last=False, input_offsets=(-1, 0),
                           target_offsets=(1, 2))  # fmt: skip
    n = len(expected["time"])
    assert len(data) == len(single) == n - 3
    got = chute.Loader(data, batch_size=4, shuffle=False, threads=threads, prefetch=2)
    ref = chute.Loader(single, batch_size=4, shuffle=False, threads=1)
    seen = 0
    for a, b in zip(got, ref):
        np.testing.assert_array_equal(a["inputs"], b["inputs"])
        np.testing.assert_array_equal(a["targets"], b["targets"])
        for slot, sample in enumerate(a.indices[: len(a.indices) - a.padding]):
            t = int(data.time_indices()[sample])
            np.testing.assert_allclose(a["inputs"][slot], _window(expected, t, ["t2m", "z"], (-1, 0)),
                                       rtol=1e-6, equal_nan=True)  # fmt: skip
            seen += 1
    assert seen == n - 3  # windows at t = 3 and 4 span the first two files


def test_windows_with_dates_and_statistics_across_files(days, tmp_path):
    folder, paths, expected = days
    data = chute.windows(str(folder / "*.nc"), ["t2m"], start="2020-01-01T06", end="2020-01-03",
                         input_steps=["-6h", "0h"], target_steps=["6h"])  # fmt: skip
    times = expected["time"].values[data.time_indices()]
    assert times[0] == np.datetime64("2020-01-01T12") and len(times) == 6
    # The same days as Zarr stores (one per day, given out of order): statistics over all.
    stores = []
    for i, p in enumerate(paths):
        store = str(tmp_path / f"day{i}.zarr")
        xr.open_dataset(p, engine="h5netcdf").load().to_zarr(store, zarr_format=2)
        stores.append(store)
    stats = chute.compute_statistics(stores[::-1], variables=["t2m"])
    np.testing.assert_allclose(stats["t2m"]["mean"], np.nanmean(expected["t2m"].values), rtol=1e-5)


def test_zarr_members_per_year_with_a_gap(tmp_path):
    paths = write_zarr_years(tmp_path)
    with pytest.raises(
        chute.InvalidArgumentError, match=r"gap between members .*2018\.zarr.*2019\.zarr"
    ):
        chute.open_group(paths)
    group = chute.open_group(paths, allow_gaps=True, decode_cf=True)
    assert group.segments == (0, 5)
    expected = _open_mfdataset(paths, engine="zarr")
    np.testing.assert_array_equal(group["z"][:], expected["z"].values)
    data = chute.windows(paths, ["t2m"], allow_gaps=True, input_offsets=(-1, 0),
                         target_offsets=(1,))  # fmt: skip
    # windows of 3 steps inside each year of 5 steps: t = 1..3 and 6..8, never across the gap
    assert list(data.time_indices()) == [1, 2, 3, 6, 7, 8]


def test_members_that_disagree_are_errors_naming_them(days, tmp_path):
    _folder, paths, _expected = days
    with pytest.raises(chute.InvalidArgumentError, match=r"overlap.*era5_2020-01-01\.nc"):
        chute.open_group([paths[0], paths[0]])
    ds = xr.open_dataset(paths[1], engine="h5netcdf").load()
    later = ds  # the day after paths[0], written differently each time (its encoding kept)
    unpacked = ds.copy(deep=True)
    for v in unpacked.variables.values():
        v.encoding.clear()
    bad = tmp_path / "no_z.nc"
    later.drop_vars("z").to_netcdf(bad, engine="h5netcdf")
    with pytest.raises(chute.InvalidArgumentError, match=r"no_z\.nc.*no variable 'z'"):
        chute.open_group([paths[0], str(bad)])
    dtype = tmp_path / "float_t2m.nc"
    unpacked.to_netcdf(dtype, engine="h5netcdf")  # t2m unpacked: float64, no scale_factor
    with pytest.raises(chute.InvalidArgumentError, match=r"float_t2m\.nc.*'t2m'"):
        chute.open_group([paths[0], str(dtype)])
    grid = tmp_path / "shifted.nc"
    later.assign_coords(latitude=later["latitude"] + 1).to_netcdf(grid, engine="h5netcdf")
    with pytest.raises(chute.InvalidArgumentError, match=r"shifted\.nc.*'latitude'"):
        chute.open_group([paths[0], str(grid)])
    with pytest.raises(chute.NotFoundError, match="no files match"):
        chute.open_group(str(tmp_path / "nothing_*.nc"))
    with pytest.raises(chute.Error, match="missing.nc"):
        chute.open_group([paths[0], str(tmp_path / "missing.nc")])


def test_fourcastnet_per_year_files(tmp_path):
    fcn = write_fourcastnet(tmp_path)
    with pytest.raises(chute.InvalidArgumentError, match="no time coordinate"):
        chute.open_group(fcn["paths"])
    group = chute.open_group(
        list(reversed(fcn["paths"])), file_pattern="{year}.h5", file_step="6h",
        channels=CHANNELS, allow_gaps=True,
    )  # fmt: skip
    assert group.segments == (0, 5, 9)  # each year starts on Jan 1: gaps between the years
    np.testing.assert_array_equal(group["fields"][:], fcn["fields"])
    np.testing.assert_array_equal(group["t2m"][3:7], fcn["fields"][3:7, 2])
    assert group["time"][0] == 1451606400  # 2016-01-01 in seconds since 1970
    means, stds = fcn["means"][0, :, 0, 0], fcn["stds"][0, :, 0, 0]
    pick = ["t2m", "u10"]
    idx = [CHANNELS.index(c) for c in pick]
    data = chute.windows(
        fcn["paths"], pick, file_pattern="{year}.h5", file_step="6h", channels=CHANNELS,
        allow_gaps=True, channels_last=False, input_offsets=(0,), target_offsets=(1,),
        mean=means[idx].tolist(), std=stds[idx].tolist(),
    )  # fmt: skip
    assert len(data) == 4 + 3 + 5
    batch = next(iter(chute.Loader(data, batch_size=len(data), shuffle=False)))
    starts = [0, 5, 9, 15]
    ts = [t for s, e in zip(starts, starts[1:]) for t in range(s, e - 1)]
    want = (fcn["fields"][ts][:, idx] - means[idx][None, :, None, None]) / stds[idx][
        None, :, None, None
    ]
    np.testing.assert_allclose(batch["inputs"], want, rtol=1e-5, atol=1e-5)
    assert batch["inputs"].shape == (12, 2, 6, 8)  # (N, C, H, W)


def test_fourcastnet_virtual_dataset_gives_the_per_year_batches(tmp_path):
    # Whole years (1460 six-hourly steps from Jan 1) meet without gaps, so windows over the
    # per-year list cross the years exactly as windows over the virtual dataset that joins them
    # (the `.h5v` FourCastNet and Makani train on, written with libver "latest").
    import h5py

    years, steps = (2017, 2018), (1460, 1460)
    fcn = write_fourcastnet(tmp_path, years=years, steps=steps)
    shape = fcn["fields"].shape
    layout = h5py.VirtualLayout(shape, "f4")
    start = 0
    for year, n in zip(years, steps):
        layout[start : start + n] = h5py.VirtualSource(f"../{year}.h5", "fields",
                                                       shape=(n, *shape[1:]))  # fmt: skip
        start += n
    (tmp_path / "vds").mkdir()
    h5v = tmp_path / "vds" / "2017.h5v"  # named by its first year: times from the name
    with h5py.File(h5v, "w", libver="latest") as f:
        f.create_virtual_dataset("fields", layout, fillvalue=0)
    np.testing.assert_array_equal(chute.open(f"{h5v}/fields")[...], fcn["fields"])

    means, stds = fcn["means"][0, :, 0, 0], fcn["stds"][0, :, 0, 0]
    pick = ["t2m", "u10", "z500"]
    idx = [CHANNELS.index(c) for c in pick]
    kw = {
        "file_step": "6h",
        "channels": CHANNELS,
        "channels_last": False,
        "input_offsets": (-1, 0),
        "target_offsets": (1, 2),
        "mean": means[idx].tolist(),
        "std": stds[idx].tolist(),
    }
    per_year = chute.windows(fcn["paths"], pick, file_pattern="{year}.h5", **kw)
    virtual = chute.windows(str(h5v), pick, file_pattern="{year}.h5v", **kw)
    assert len(per_year) == len(virtual) == sum(steps) - 3
    loaders = [chute.Loader(d, batch_size=64, shuffle=True, seed=0) for d in (per_year, virtual)]
    n = 0
    for a, b in zip(*loaders):
        assert a.keys() == b.keys()
        for key in a:
            np.testing.assert_array_equal(a[key], b[key])
        n += 1
    assert n == len(loaders[0])


def test_a_truncated_member_is_an_error_naming_it(days, tmp_path):
    paths = days[1]
    cut = tmp_path / "era5_2020-01-02.nc"
    data = Path(paths[1]).read_bytes()
    cut.write_bytes(data[: len(data) * 2 // 3])
    with pytest.raises(chute.Error, match=r"era5_2020-01-02\.nc"):
        group = chute.open_group([paths[0], str(cut), paths[2]])
        group["z"][:]  # if the metadata survived the cut, the chunks past it did not
