"""The Python Loader against zarr-python (W1) and xarray + NumPy (W2)."""

from __future__ import annotations

import gc
import os
import threading

import numpy as np
import pytest

import chute

zarr = pytest.importorskip("zarr")

N_SAMPLES = 37
LAT, LON = 6, 10
IN_CH, OUT_CH = 7, 3


def _write_packed(root, zarr_format: int, chunk_channels: int):
    rng = np.random.default_rng(zarr_format * 10 + chunk_channels)
    paths = {}
    for name, channels in (("inputs", IN_CH), ("targets", OUT_CH)):
        data = rng.standard_normal((N_SAMPLES, LAT, LON, channels)).astype("float32")
        path = str(root / f"{name}.zarr")
        kwargs = {"zarr_format": zarr_format}
        if zarr_format == 3:
            kwargs["compressors"] = [zarr.codecs.BloscCodec(cname="lz4", shuffle="shuffle")]
        arr = zarr.create_array(
            store=path,
            shape=data.shape,
            chunks=(1, LAT, LON, chunk_channels or channels),
            dtype="float32",
            **kwargs,
        )
        arr[...] = data
        paths[name] = path
    return paths


@pytest.fixture(scope="module", params=[(3, 2), (2, 0)], ids=["v3-channel-chunks", "v2-whole"])
def packed(request, tmp_path_factory):
    zarr_format, chunk_channels = request.param
    root = tmp_path_factory.mktemp(f"packed{zarr_format}")
    paths = _write_packed(root, zarr_format, chunk_channels)
    expected = {name: zarr.open_array(path, mode="r")[...] for name, path in paths.items()}
    return paths, expected


@pytest.mark.parametrize("threads,prefetch", [(1, 1), (2, 2), (4, 3)])
def test_batches_equal_zarr_python(packed, threads, prefetch):
    paths, expected = packed
    loader = chute.Loader(
        paths,
        batch_size=5,
        shuffle=True,
        seed=7,
        drop_last=False,
        threads=threads,
        prefetch=prefetch,
        rank=0,
        world_size=1,
    )
    assert len(loader) == -(-N_SAMPLES // 5)
    seen = []
    for batch in loader:
        assert batch.indices.dtype == np.int64
        assert batch["inputs"].shape == (5, LAT, LON, IN_CH)
        assert batch["targets"].shape == (5, LAT, LON, OUT_CH)
        for name in ("inputs", "targets"):
            np.testing.assert_array_equal(batch[name], expected[name][batch.indices])
        real = len(batch.indices) - batch.padding
        seen.extend(batch.indices[:real].tolist())
    assert sorted(seen) == list(range(N_SAMPLES))


def test_same_seed_and_epoch_give_same_batches_whatever_the_threads(packed):
    paths, _ = packed
    runs = []
    for threads in (1, 3):
        loader = chute.Loader(paths, batch_size=4, seed=11, threads=threads, rank=0, world_size=1)
        runs.append([(b.indices.copy(), b["inputs"].copy()) for b in loader.epoch(2)])
    for (ia, xa), (ib, xb) in zip(*runs):
        np.testing.assert_array_equal(ia, ib)
        np.testing.assert_array_equal(xa, xb)


def test_each_for_loop_is_a_new_epoch(packed):
    paths, _ = packed
    loader = chute.Loader(paths, batch_size=8, seed=3, drop_last=True, rank=0, world_size=1)
    first = np.concatenate([b.indices for b in loader])
    second = np.concatenate([b.indices for b in loader])
    assert len(first) == len(second) == (N_SAMPLES // 8) * 8
    assert not np.array_equal(first, second)


def test_rank_shards_are_disjoint_and_cover_the_epoch(packed):
    paths, _ = packed
    world = 3
    shares = []
    for rank in range(world):
        loader = chute.Loader(
            paths, batch_size=4, seed=5, drop_last=False, rank=rank, world_size=world
        )
        shares.append([b.indices[: len(b.indices) - b.padding] for b in loader.epoch(0)])
    assert len({len(s) for s in shares}) == 1  # every rank gets the same number of batches
    flat = np.concatenate([np.concatenate(s) for s in shares])
    assert sorted(flat.tolist()) == list(range(N_SAMPLES))


def test_resume_from_saved_state_continues_identically(packed):
    paths, _ = packed
    reference = chute.Loader(paths, batch_size=4, seed=9, rank=0, world_size=1)
    expected = [b.indices.copy() for b in reference.epoch(1)]

    loader = chute.Loader(paths, batch_size=4, seed=9, rank=0, world_size=1)
    iterator = loader.epoch(1)
    for _ in range(3):
        next(iterator)
    state = loader.state_dict()
    assert {k: state[k] for k in ("seed", "epoch", "next_batch")} == {
        "seed": 9,
        "epoch": 1,
        "next_batch": 3,
    }
    assert (state["batch_size"], state["world_size"]) == (4, 1) and state["dataset"] != 0
    del iterator, loader

    resumed = chute.Loader(paths, batch_size=4, seed=9, rank=0, world_size=1)
    resumed.load_state_dict(state)
    rest = [b.indices.copy() for b in resumed]
    assert len(rest) == len(expected) - 3
    for a, b in zip(rest, expected[3:]):
        np.testing.assert_array_equal(a, b)


def test_arrays_are_zero_copy_and_outlive_the_loader(packed):
    paths, expected = packed
    loader = chute.Loader(paths, batch_size=4, shuffle=False, rank=0, world_size=1)
    batch = next(iter(loader))
    x = batch["inputs"]
    assert not x.flags.owndata  # a view of the pooled batch buffer
    assert x.__dlpack__ is not None
    loader.close()
    del loader, batch
    gc.collect()
    np.testing.assert_array_equal(x, expected["inputs"][:4])


def test_break_early_and_delete_never_hang_or_leak_threads(packed):
    paths, _ = packed
    before = threading.active_count()
    for _ in range(30):
        loader = chute.Loader(paths, batch_size=2, threads=2, prefetch=3, rank=0, world_size=1)
        for i, _batch in enumerate(loader):
            if i == 1:
                break
        del loader
    gc.collect()
    assert threading.active_count() == before


def test_default_rank_and_world_size_come_from_the_environment(packed, monkeypatch):
    paths, _ = packed
    for name in (
        "OMPI_COMM_WORLD_RANK",
        "OMPI_COMM_WORLD_SIZE",
        "PMI_RANK",
        "PMI_SIZE",
        "SLURM_PROCID",
        "SLURM_NTASKS",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv("WORLD_SIZE", "2")
    loader = chute.Loader(paths, batch_size=4)
    assert (loader.rank, loader.world_size) == (1, 2)


def test_corrupt_chunk_mid_epoch_raises_naming_the_chunk(tmp_path):
    paths = _write_packed(tmp_path, 2, 0)
    chunk = os.path.join(paths["inputs"], "20.0.0.0")
    with open(chunk, "r+b") as f:
        f.seek(20)
        f.write(b"\xff" * 40)
    loader = chute.Loader(paths, batch_size=4, shuffle=False, threads=2, rank=0, world_size=1)
    with pytest.raises(chute.CorruptDataError) as info:
        for _ in loader:
            pass
    message = str(info.value)
    assert "20.0.0.0" in message and "inputs.zarr" in message
    # The loader stays usable: the next epoch raises again rather than hanging.
    with pytest.raises(chute.Error):
        for _ in loader:
            pass


def test_missing_array_is_file_not_found(tmp_path):
    with pytest.raises(FileNotFoundError):
        chute.Loader({"inputs": str(tmp_path / "nope.zarr")}, batch_size=2)


def test_bad_options_are_value_errors(packed):
    paths, _ = packed
    with pytest.raises(ValueError):
        chute.Loader(paths, batch_size=0)
    with pytest.raises(ValueError):
        chute.Loader(paths, batch_size=2, rank=2, world_size=2)


def test_resident_memory_stays_flat(packed):
    psutil = pytest.importorskip("psutil")
    paths, _ = packed
    loader = chute.Loader(paths, batch_size=8, threads=2, prefetch=2, rank=0, world_size=1)
    process = psutil.Process()
    for _ in range(40):  # warm up: pool buffers and scratch reach their steady size
        for batch in loader:
            batch["inputs"].sum()
    start = process.memory_info().rss
    batches = 0
    for _ in range(500):
        for batch in loader:
            batches += 1
    growth = process.memory_info().rss - start
    assert batches >= 2000
    assert growth < 8 * 2**20, f"RSS grew by {growth / 2**20:.1f} MiB over {batches} batches"
    # Flat means bounded by the design, not by the number of batches: the prefetch queue, the
    # batch being assembled, the one read ahead, and the consumer's two (the loop still holds the
    # previous batch while next() hands over the new one). A leak would allocate thousands.
    stats = loader.stats()
    assert stats["buffers_allocated"] <= stats["prefetch"] + 1 + stats["read_ahead"] + 2


# W2: windows over an xarray-layout group.
xr = pytest.importorskip("xarray")


@pytest.fixture(scope="module")
def variables_group(tmp_path_factory):
    root = tmp_path_factory.mktemp("w2")
    rng = np.random.default_rng(0)
    times, levels, lat, lon = 12, 4, 5, 8
    ds = xr.Dataset(
        {
            "temperature": (
                ("time", "level", "lat", "lon"),
                rng.standard_normal((times, levels, lat, lon)).astype("float32"),
            ),
            "2m_temperature": (
                ("time", "lat", "lon"),
                rng.standard_normal((times, lat, lon)).astype("float32"),
            ),
        },
        coords={"level": np.array([50, 250, 500, 850], dtype="int64")},
    )
    path = str(root / "era.zarr")
    ds.chunk({"time": 1}).to_zarr(path, zarr_format=2, consolidated=True)
    return path, xr.open_zarr(path).load()


def _reference_windows(ds, times, variables, levels, offsets, mean=None, std=None):
    samples = []
    for t in times:
        channels = []
        for off in offsets:
            for var in variables:
                values = ds[var].values[t + off]
                if values.ndim == 3:
                    level_pos = [list(ds["level"].values).index(v) for v in levels]
                    channels.extend(values[p] for p in level_pos)
                else:
                    channels.append(values)
        sample = np.stack(channels, axis=-1)
        if mean is not None:
            reps = len(offsets)
            sample = (sample - np.tile(mean, reps)) / np.tile(std, reps)
        samples.append(sample.astype("float32"))
    return np.stack(samples)


def test_windows_equal_xarray_numpy(variables_group):
    path, ds = variables_group
    variables = ["temperature", "2m_temperature"]
    data = chute.windows(
        path, variables, levels=[850, 50], input_offsets=(-1, 0), target_offsets=(1,)
    )
    assert len(data) == 12 - 2  # windows crossing either end are not sampled
    names = data.channel_names("inputs")
    assert len(names) == 2 * 3 and "temperature" in names[0]
    loader = chute.Loader(data, batch_size=4, seed=1, threads=2, rank=0, world_size=1)
    count = 0
    for batch in loader:
        times = batch.indices + 1  # sample i is time first_time + i, first_time = 1
        np.testing.assert_allclose(
            batch["inputs"], _reference_windows(ds, times, variables, [850, 50], (-1, 0))
        )
        np.testing.assert_allclose(
            batch["targets"], _reference_windows(ds, times, variables, [850, 50], (1,))
        )
        count += len(batch.indices) - batch.padding
    assert count == 10


def test_windows_normalised_channels_first_float16(variables_group):
    path, ds = variables_group
    mean = [0.5, -0.25, 1.0]
    std = [2.0, 0.5, 4.0]
    data = chute.windows(
        path,
        ["temperature", "2m_temperature"],
        level_indices=[1, 2],
        input_offsets=(0,),
        target_offsets=(),
        channels_last=False,
        dtype="float16",
        mean=mean,
        std=std,
    )
    loader = chute.Loader(data, batch_size=3, shuffle=False, rank=0, world_size=1)
    batch = next(iter(loader))
    assert batch["inputs"].dtype == np.float16
    assert batch["inputs"].shape == (3, 3, 5, 8)
    expected = _reference_windows(
        ds,
        batch.indices,
        ["temperature", "2m_temperature"],
        [250, 500],
        (0,),
        np.array(mean),
        np.array(std),
    )
    np.testing.assert_allclose(
        batch["inputs"].astype("float32"), np.moveaxis(expected, -1, 1), rtol=1e-3, atol=1e-3
    )


def test_the_loader_docstring_lists_the_launchers_in_the_order_rank_info_tries_them():
    """The documented rank-detection order is the code's (chute.distributed._LAUNCHERS)."""
    import re

    from chute import distributed

    doc = " ".join(chute.Loader.__doc__.split())
    found = [m.start() for m in (re.search(rf"(?<![A-Z_]){v}(?![A-Z_])", doc) for _, v, _, _ in
                                 distributed._LAUNCHERS) if m]  # fmt: skip
    assert len(found) == len(distributed._LAUNCHERS), doc
    assert found == sorted(found), doc
