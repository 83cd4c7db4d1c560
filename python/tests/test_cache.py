"""The node-local cache (cache=) and the chunk-aware shuffle (shuffle="chunks") from Python."""

from __future__ import annotations

import multiprocessing
import os
import shutil

import numpy as np
import pytest
import zarr

import chute

SAMPLES, WIDTH = 96, 6


def write_array(path, chunk=8):
    data = np.arange(SAMPLES * WIDTH, dtype="float32").reshape(SAMPLES, WIDTH) * 0.5
    arr = zarr.create_array(
        store=str(path), shape=data.shape, chunks=(chunk, WIDTH), dtype="float32"
    )
    arr[...] = data
    return data


def read_all(path, cache):
    array = chute.open(path, cache=cache)
    values = array[...]
    return values, array.cache_stats


def test_second_open_reads_from_the_cache(tmp_path):
    data = write_array(tmp_path / "x.zarr")
    cache = tmp_path / "cache"
    values, stats = read_all(tmp_path / "x.zarr", cache)
    np.testing.assert_array_equal(values, data)
    assert stats["misses"] == SAMPLES // 8 and stats["hits"] == 0
    values, stats = read_all(tmp_path / "x.zarr", cache)
    np.testing.assert_array_equal(values, data)
    assert stats["hits"] == SAMPLES // 8 and stats["misses"] == 0
    assert chute.open(tmp_path / "x.zarr").cache_stats is None


def test_bad_cache_arguments_are_clear_errors(tmp_path):
    write_array(tmp_path / "x.zarr")
    with pytest.raises(chute.InvalidArgumentError):
        chute.open(tmp_path / "x.zarr", cache=tmp_path / "c", cache_size=0)
    (tmp_path / "file").write_text("not a folder")
    with pytest.raises(chute.Error):
        chute.open(tmp_path / "x.zarr", cache=tmp_path / "file")


def _reader(path, cache, rounds, queue):
    ok = True
    for _ in range(rounds):
        values = chute.open(path, cache=cache, cache_size=1 << 30)[...]
        expected = np.arange(SAMPLES * WIDTH, dtype="float32").reshape(SAMPLES, WIDTH) * 0.5
        ok = ok and np.array_equal(values, expected)
    queue.put(ok)


def test_two_processes_share_the_folder(tmp_path):
    data = write_array(tmp_path / "x.zarr", chunk=2)
    cache = tmp_path / "cache"
    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    workers = [
        context.Process(target=_reader, args=(str(tmp_path / "x.zarr"), str(cache), 3, queue))
        for _ in range(2)
    ]
    for worker in workers:
        worker.start()
    results = [queue.get(timeout=300) for _ in workers]
    for worker in workers:
        worker.join(timeout=60)
        assert worker.exitcode == 0
    assert results == [True, True]
    assert not [name for name in os.listdir(cache) if name.startswith(".tmp-")]
    # Every entry the two wrote is whole: a third reader needs no chunk from the array.
    values, stats = read_all(tmp_path / "x.zarr", cache)
    np.testing.assert_array_equal(values, data)
    assert stats["misses"] == 0 and stats["discarded"] == 0


def test_loader_epoch_two_comes_from_the_cache(tmp_path):
    data = write_array(tmp_path / "x.zarr")
    write_array(tmp_path / "y.zarr")
    cache = tmp_path / "cache"
    first = chute.Loader({"x": str(tmp_path / "x.zarr")}, batch_size=8, seed=1, cache=cache)
    epoch0 = [(b.indices.copy(), b["x"].copy()) for b in first]
    for indices, x in epoch0:
        np.testing.assert_array_equal(x, data[indices])
    first.close()  # nothing read ahead while the counters are looked at
    stats = first.stats()["cache"]
    assert stats["misses"] >= SAMPLES // 8  # every chunk fetched once (+ read-ahead)
    assert stats["bytes_fetched"] == stats["bytes_written"] > 0
    assert stats["discarded"] == 0 and stats["evicted"] == 0
    del first
    # The chunks leave the array (metadata stays): only the cache can serve epoch 1 now.
    shutil.rmtree(tmp_path / "x.zarr" / "c")
    second = chute.Loader({"x": str(tmp_path / "x.zarr")}, batch_size=8, seed=1, cache=cache)
    for batch in second:
        np.testing.assert_array_equal(batch["x"], data[batch.indices])
    second.close()
    stats = second.stats()["cache"]
    assert stats["misses"] == 0 and stats["bytes_fetched"] == 0
    assert stats["hits"] >= SAMPLES // 8 and stats["bytes_from_cache"] > 0
    second.reset_stats()
    assert second.stats()["cache"]["hits"] == 0
    plain = chute.Loader({"x": str(tmp_path / "y.zarr")}, batch_size=8)
    assert plain.stats()["cache"] is None  # no cache, no counters


def test_chunk_shuffle_covers_the_epoch_and_groups_chunks(tmp_path):
    data = write_array(tmp_path / "x.zarr", chunk=8)
    path = str(tmp_path / "x.zarr")
    loader = chute.Loader({"x": path}, batch_size=8, seed=4, shuffle="chunks", shuffle_window=1)
    seen = []
    for batch in loader:
        np.testing.assert_array_equal(batch["x"], data[batch.indices])
        # window 1: a batch of 8 is exactly one chunk of 8 samples
        assert len(set(batch.indices // 8)) == 1
        seen.extend(batch.indices.tolist())
    assert sorted(seen) == list(range(SAMPLES))
    again = chute.Loader({"x": path}, batch_size=8, seed=4, shuffle="chunks", shuffle_window=1)
    assert [b.indices.tolist() for b in again] == [seen[i : i + 8] for i in range(0, SAMPLES, 8)]
    with pytest.raises(chute.InvalidArgumentError):
        chute.Loader({"x": path}, shuffle="blocks")
