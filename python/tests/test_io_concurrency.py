"""Reads in flight (`io_concurrency`): batches equal zarr-python whatever the depth; over a store
that answers each read after 5 ms (a testing-only store of the extension), a deep window keeps
many reads outstanding and a depth of 1 one per reader thread (counted, never timed)."""

from __future__ import annotations

import os
import subprocess
import sys

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


def test_the_testing_store_reads_through_the_one_io_executor(packed):
    # chute_testing holds only its store: the files under it and the arrays over it are
    # chute._chute's, so a process has one I/O executor. With a cap of one thread, reading
    # through the latency store and then directly leaves exactly one "chute-io" thread (two
    # copies of the core would each have started one).
    paths, _ = packed
    code = """
import os, sys
import numpy as np
import chute
import chute_testing
from chute.loader import Dataset

paths = dict(arg.split("=", 1) for arg in sys.argv[1:])
core, store = chute_testing.latency_packed([(k, os.fsencode(v)) for k, v in paths.items()], 0.001)
for batch in chute.Loader(Dataset(core), batch_size=4, threads=2, io_concurrency=8):
    pass
assert store.reads > 0
for batch in chute.Loader(paths, batch_size=4, threads=2):
    pass
names = []
for tid in os.listdir("/proc/self/task"):
    with open(f"/proc/self/task/{tid}/comm") as f:
        names.append(f.read().strip())
print(names.count("chute-io"))
"""
    env = dict(os.environ, CHUTE_IO_THREADS="1", PYTHONPATH=os.pathsep.join(sys.path))
    result = subprocess.run(
        [sys.executable, "-c", code, *(f"{k}={v}" for k, v in paths.items())],
        capture_output=True, text=True, env=env, timeout=300, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["1"], result.stdout


def test_a_daemon_thread_waiting_in_chute_at_exit_does_not_abort_the_process(packed):
    # A prefetch thread (daemon) waits in Loader.next, the GIL released, when the program ends;
    # its batch arrives while the interpreter finalizes (an object's __del__ holds finalization
    # for longer than one delayed read). Taking the GIL back then would end the thread with
    # pthread_exit, and unwinding through C++ aborted the process ("terminate called without an
    # active exception"); the thread parks instead and the exit is clean.
    paths, _ = packed
    code = """
import os, sys, threading, time
import chute
import chute_testing
from chute.loader import Dataset

core, store = chute_testing.latency_packed([("x", os.fsencode(sys.argv[1]))], 0.5)
loader = chute.Loader(Dataset(core), batch_size=4, seed=0, threads=1, prefetch=1)
entered = threading.Event()

def prefetch():
    it = iter(loader)
    entered.set()
    next(it)  # waits for the delayed reads, the GIL released

thread = threading.Thread(target=prefetch, daemon=True)
thread.start()

class SlowFinalization:
    def __del__(self):
        time.sleep(4)  # the interpreter is finalizing: the batch arrives meanwhile

slow = SlowFinalization()
entered.wait()
while sys._current_frames()[thread.ident].f_code is prefetch.__code__:
    time.sleep(0.001)  # until the thread is inside chute.Loader's next
time.sleep(0.1)  # into the wait itself (ordering only: nothing is timed)
print("exiting", flush=True)
"""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    result = subprocess.run(
        [sys.executable, "-c", code, paths["inputs"]],
        capture_output=True, text=True, env=env, timeout=300, check=False,
    )  # fmt: skip
    assert result.stdout.strip() == "exiting", result.stderr
    assert "terminate" not in result.stderr, result.stderr
    assert result.returncode == 0, result.stderr
