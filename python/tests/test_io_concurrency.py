"""Reads in flight (`io_concurrency`): batches equal zarr-python whatever the depth; over a store
that answers each read after 5 ms (a testing-only store of the extension), a deep window keeps
many reads outstanding and a depth of 1 one per reader thread (counted, never timed)."""

from __future__ import annotations

import os

import numpy as np
import pytest
from chute.loader import Dataset

import chute

zarr = pytest.importorskip("zarr")
# Built with the C++ tests (CHUTE_BUILD_TESTS), found in the build folder by conftest.py.
chute_testing = pytest.importorskip("chute_testing")

N_SAMPLES = 24


@pytest.fixture(scope="module")
def packed(tmp_path_factory):
    root = tmp_path_factory.mktemp("inflight")
    rng = np.random.default_rng(3)
    paths, expected = {}, {}
    for name, channels, chunk_channels in (("inputs", 6, 2), ("targets", 2, 2)):
        data = rng.standard_normal((N_SAMPLES, 4, 5, channels)).astype("float32")
        path = str(root / f"{name}.zarr")
        arr = zarr.create_array(
            store=path, shape=data.shape, chunks=(1, 4, 5, chunk_channels), dtype="float32"
        )
        arr[...] = data
        paths[name] = os.path.abspath(path)
        expected[name] = data
    return paths, expected


@pytest.mark.parametrize("io_concurrency", [None, 1, 3, 64])
def test_batches_equal_zarr_python_at_every_depth(packed, io_concurrency):
    paths, expected = packed
    loader = chute.Loader(paths, batch_size=5, seed=1, threads=2, io_concurrency=io_concurrency)
    for batch in loader:
        for name in paths:
            np.testing.assert_array_equal(batch[name], expected[name][batch.indices])
    stats = loader.stats()
    assert stats["prefetch"] == 2
    assert stats["io_concurrency"] == (32 if io_concurrency is None else io_concurrency)


@pytest.mark.parametrize("bad", [0, -1, 65537, 2.5, True, "8"])
def test_io_concurrency_is_validated(packed, bad):
    paths, _ = packed
    with pytest.raises(chute.InvalidArgumentError, match="io_concurrency"):
        chute.Loader(paths, batch_size=5, io_concurrency=bad)


def test_deep_window_keeps_many_reads_in_flight_over_a_slow_store(packed):
    paths, expected = packed
    most = {}
    for depth in (1, 16):
        core, store = chute_testing.latency_packed(
            [(k, os.fsencode(v)) for k, v in paths.items()], 0.005
        )
        loader = chute.Loader(
            Dataset(core), batch_size=4, seed=2, threads=2, prefetch=2, io_concurrency=depth
        )
        for batch in loader:
            for name in paths:
                np.testing.assert_array_equal(batch[name], expected[name][batch.indices])
        assert loader.stats()["io_concurrency"] == depth
        most[depth] = store.max_in_flight
        loader.close()  # joins the producer, which ran ahead into the next epoch
        assert store.in_flight == 0
        del loader
    assert most[1] <= 2  # one read per reader thread
    # A batch of 4 samples is 4 × (3 + 1) chunks, all submitted before the first returns.
    assert most[16] >= 8, most


@pytest.mark.parametrize("read_ahead", [True, False])
def test_read_ahead_is_an_option_with_its_counters(packed, read_ahead):
    paths, expected = packed
    loader = chute.Loader(paths, batch_size=5, seed=4, threads=2, read_ahead=read_ahead)
    for _ in range(2):
        for batch in loader:
            for name in paths:
                np.testing.assert_array_equal(batch[name], expected[name][batch.indices])
    stats = loader.stats()
    assert stats["read_ahead"] == int(read_ahead)
    if read_ahead:  # each batch queued had the next one's reads out already
        assert stats["batches_read_ahead"] == stats["batches_produced"]
        assert stats["reads_submitted_ahead"] >= stats["batches_produced"]
    else:
        assert stats["batches_read_ahead"] == stats["reads_submitted_ahead"] == 0
    with pytest.raises(chute.InvalidArgumentError, match="read_ahead"):
        chute.Loader(paths, batch_size=5, read_ahead="yes")
