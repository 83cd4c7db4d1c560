"""Pickling by reopening: arrays, groups, datasets and loaders go to another process as the call
that made them (PyTorch DataLoader workers started with "spawn" or "forkserver", Python 3.14's
default on Linux; multiprocessing pools), and read there what they read here."""

from __future__ import annotations

import multiprocessing
import pickle

import h5py
import numpy as np
import pytest
import xarray as xr
from anemoi_small import write_anemoi

import chute

zarr = pytest.importorskip("zarr")


def round_trip(obj):
    return pickle.loads(pickle.dumps(obj))


def batches(loader, epoch):
    return [{k: np.array(v) for k, v in b.items()} | {"i": b.indices.copy()}
            for b in loader.epoch(epoch)]  # fmt: skip


def assert_same_batches(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b, strict=True):
        assert x.keys() == y.keys()
        for k in x:
            np.testing.assert_array_equal(x[k], y[k])


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    root = tmp_path_factory.mktemp("pickling")
    rng = np.random.default_rng(5)
    values = rng.standard_normal((12, 6, 8, 3)).astype("f4")
    arr = zarr.create_array(store=str(root / "x.zarr"), shape=values.shape, chunks=(1, 6, 8, 3),
                            dtype="f4")  # fmt: skip
    arr[...] = values
    with h5py.File(root / "f.nc", "w") as f:
        f.create_dataset("packed", data=(values * 100).astype("i2"), chunks=(1, 6, 8, 3))
        f["packed"].attrs["scale_factor"] = np.float32(0.01)
        f.create_dataset("y", data=values[..., 0], compression="gzip", chunks=(2, 6, 8))
    times = np.arange(np.datetime64("2020-01-01T00"), np.datetime64("2020-01-02T00"),
                      np.timedelta64(6, "h")).astype("datetime64[ns]")  # fmt: skip
    weather = xr.Dataset(
        {"t": (("time", "lat", "lon"), rng.standard_normal((4, 5, 6)).astype("f4"))},
        coords={"time": times, "lat": np.linspace(90, -90, 5), "lon": np.arange(6) * 60.0},
    )
    weather.chunk({"time": 1}).to_zarr(root / "w.zarr", zarr_format=2, consolidated=True)
    return {"root": root, "values": values,
            "anemoi": write_anemoi(root / "a.zarr", missing=(11,))}  # fmt: skip


def test_arrays_and_groups_reopen_where_unpickled(data):
    root = data["root"]
    for a in (chute.open(root / "x.zarr"), chute.open(f"{root}/f.nc/packed", decode_cf=True)):
        b = round_trip(a)
        assert (b.shape, b.dtype, b.path) == (a.shape, a.dtype, a.path)
        np.testing.assert_array_equal(b[...], a[...])
    group = chute.open_group(root / "f.nc", decode_cf=True)
    again = round_trip(group)
    assert sorted(again) == sorted(group)
    member = round_trip(group["y"])
    np.testing.assert_array_equal(member[2:5], data["values"][2:5, ..., 0])
    both = round_trip([group["y"], group["packed"]])
    np.testing.assert_array_equal(both[1][...], group["packed"][...])
    # A member does not keep its group alive (the group's files close when it goes).
    import gc
    import weakref

    gone = weakref.ref(group)
    del group, member, both, again
    gc.disable()
    try:
        assert gone() is None
    finally:
        gc.enable()


def test_copies_share_what_is_open_and_recipes_keep_the_call_as_made(data, tmp_path):
    import copy

    root = data["root"]
    a = chute.open(root / "x.zarr")
    assert copy.copy(a)._core is a._core  # a shallow copy opens nothing again
    ds = chute.packed({"x": str(root / "x.zarr")})
    assert copy.copy(ds)._core is ds._core
    paths = {"x": str(root / "x.zarr")}
    ds = chute.packed(paths)
    paths["x"] = "nowhere"  # changed after the call: the recipe kept the call as made
    assert len(round_trip(ds)) == 12
    # follow_symlinks=None is recorded as the process-wide choice in effect.
    (tmp_path / "link").symlink_to(root / "x.zarr")
    chute.set_follow_symlinks(False)
    try:
        confined = chute.open(tmp_path / "link")
    finally:
        chute.set_follow_symlinks(True)
    assert confined._recipe[2]["follow_symlinks"] is False


def test_what_was_not_opened_by_a_recorded_call_says_what_to_do(data):
    array = chute.Array(chute.open(data["root"] / "x.zarr")._core)
    with pytest.raises(TypeError, match="cannot pickle.*make it in the worker"):
        pickle.dumps(array)


@pytest.mark.parametrize("kind", ["packed", "windows", "crops", "anemoi"])
def test_datasets_and_loaders_give_the_same_batches_where_unpickled(data, kind):
    root = data["root"]
    if kind == "packed":
        ds = chute.packed({"x": str(root / "x.zarr"), "y": f"{root}/f.nc/y"})
    elif kind == "windows":
        ds = chute.windows(str(root / "w.zarr"), ["t"], input_offsets=(0,), target_offsets=(1,))
    elif kind == "crops":
        ds = chute.crops({"x": chute.open(root / "x.zarr")}, size=(3, 4, 2), channel_axis=-1,
                         crops_per_epoch=10, transforms=None)  # fmt: skip
    else:
        ds = chute.anemoi(data["anemoi"], select=["v1", "v3"], rollout=2)
    again = round_trip(ds)
    assert type(again) is type(ds) and len(again) == len(ds)
    loader = chute.Loader(ds, batch_size=2, seed=None, threads=2)
    assert_same_batches(batches(round_trip(loader), 1), batches(loader, 1))
    assert_same_batches(batches(chute.Loader(again, batch_size=2, seed=7), 0),
                        batches(chute.Loader(ds, batch_size=2, seed=7), 0))  # fmt: skip


def test_a_pickled_loader_resumes_where_its_next_for_would_start(data):
    loader = chute.Loader({"x": str(data["root"] / "x.zarr")}, batch_size=2, seed=None)
    run = iter(loader)
    next(run)
    next(run)
    copy = round_trip(loader)
    assert copy.state_dict() == loader.state_dict()  # the drawn seed too
    assert [b.indices.tolist() for b in copy] == [b.indices.tolist() for b in run]


def _sum_of(args):
    array, box = args
    return float(np.asarray(array[box], dtype=np.float64).sum())


def test_a_spawn_pool_reads_arrays_passed_to_it(data):
    a = chute.open(data["root"] / "x.zarr")
    boxes = [np.s_[i : i + 3] for i in range(0, 12, 3)]
    with multiprocessing.get_context("spawn").Pool(2) as pool:
        sums = pool.map(_sum_of, [(a, box) for box in boxes])
    assert sums == [_sum_of((a, box)) for box in boxes]


class _Samples:  # a map-style torch dataset, as most training codes write one
    def __init__(self, array):
        self.array = array

    def __len__(self):
        return self.array.shape[0]

    def __getitem__(self, i):
        return self.array[i]


def test_torch_dataloader_workers_started_by_spawn(data):
    torch = pytest.importorskip("torch")
    from chute.torch import ChuteIterableDataset

    root = data["root"]
    samples = _Samples(chute.open(root / "x.zarr"))
    spawned = torch.utils.data.DataLoader(samples, batch_size=4, num_workers=2,
                                          multiprocessing_context="spawn")  # fmt: skip
    np.testing.assert_array_equal(torch.cat(list(spawned)).numpy(), data["values"])

    ds = ChuteIterableDataset({"x": str(root / "x.zarr")}, batch_size=3, seed=None)
    assert len(ds) == 4  # the loader exists (and its seed was drawn) before the worker starts
    expected = [b["indices"].tolist() for b in ds]
    ds.set_epoch(0)
    worker = torch.utils.data.DataLoader(ds, batch_size=None, num_workers=1,
                                         multiprocessing_context="spawn")  # fmt: skip
    assert [b["indices"].tolist() for b in worker] == expected
