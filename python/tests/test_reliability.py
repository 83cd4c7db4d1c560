"""Reliability: hostile files, absurd arguments and faults while running.

Each case ends in a clear chute error or a clean stop, never a crash, a hang or garbage. Cases
that could hang on a regression run in a subprocess under a generous timeout (a hang guard, not
a speed threshold).
"""

from __future__ import annotations

import gc
import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import numpy as np
import pytest

import chute

HANG_GUARD = 120  # seconds; only ever reached when something hangs

N = 16
SHAPE = (4, 5)


def write_array(path: Path, data: np.ndarray, chunk0: int = 1, extra: dict | None = None) -> None:
    """A Zarr v2 array without compression: chunks of `chunk0` samples along axis 0."""
    path.mkdir(parents=True, exist_ok=True)
    meta = {
        "zarr_format": 2,
        "shape": list(data.shape),
        "chunks": [chunk0, *data.shape[1:]],
        "dtype": data.dtype.str,
        "compressor": None,
        "fill_value": 0,
        "filters": None,
        "order": "C",
    }
    meta.update(extra or {})
    (path / ".zarray").write_text(json.dumps(meta))
    for i in range(0, data.shape[0], chunk0):
        key = ".".join([str(i // chunk0)] + ["0"] * (data.ndim - 1))
        (path / key).write_bytes(np.ascontiguousarray(data[i : i + chunk0]).tobytes())


@pytest.fixture
def dataset(tmp_path) -> dict:
    values = np.arange(N * SHAPE[0] * SHAPE[1], dtype="<f4").reshape(N, *SHAPE)
    write_array(tmp_path / "x", values)
    return {"path": tmp_path / "x", "values": values}


def run_python(code: str, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    """Runs `code` in a fresh interpreter under the hang guard."""
    full_env = dict(os.environ, **(env or {}))
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), *args],
        capture_output=True,
        text=True,
        timeout=HANG_GUARD,
        env=full_env,
        check=False,
    )


IO_THREAD = "chute-io"  # the process-wide I/O executor: starts threads on demand, up to a cap
IO_THREADS_CAP = int(os.environ.get("CHUTE_IO_THREADS", "64"))  # IoExecutor::kDefaultIoThreads


def thread_names() -> list[str]:
    names = []
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/comm") as f:
                names.append(f.read().strip())
        except OSError:  # the thread ended meanwhile
            pass
    return names


def thread_count() -> int:
    """Threads other than the shared I/O executor's, which grows to its cap when reads overlap
    (a pool that fills, not a leak: io_thread_count() checks its bound)."""
    return sum(1 for name in thread_names() if name != IO_THREAD)


def io_thread_count() -> int:
    """chute's I/O threads in this process: one executor, whatever modules are loaded (the
    test-only chute_testing reads through chute._chute's core)."""
    return sum(1 for name in thread_names() if name == IO_THREAD)


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


# --- parsers ---------------------------------------------------------------------------------


@pytest.mark.parametrize("where", [".zarray", ".zattrs"])
def test_deeply_nested_metadata_is_an_error_not_a_crash(dataset, where):
    path = dataset["path"]
    deep = "[" * 100_000 + "]" * 100_000
    if where == ".zarray":
        (path / ".zarray").write_text('{"zarr_format": 2, "shape": ' + deep + "}")
    else:
        (path / ".zattrs").write_text('{"a": ' + deep + "}")
    result = run_python(
        """
        import sys, chute
        try:
            chute.open(sys.argv[1])
        except chute.InvalidMetadataError as e:
            print("ERROR", e)
        """,
        str(path),
    )
    assert result.returncode == 0, result.stderr  # before: killed by SIGSEGV
    assert "nested deeper than 256 levels" in result.stdout
    assert where in result.stdout


def test_non_utf8_metadata_gives_a_readable_message(dataset):
    (dataset["path"] / ".zattrs").write_bytes(b'{"units": "\xff\xfe"}')
    with pytest.raises(chute.InvalidMetadataError) as info:
        chute.open(dataset["path"])
    message = str(info.value)
    assert ".zattrs" in message and "not valid JSON" in message  # before: an empty message


def test_paths_with_non_utf8_bytes_and_nul(tmp_path, dataset):
    odd = os.fsencode(tmp_path) + b"/caf\xe9.zarr"
    os.rename(dataset["path"], odd)
    a = chute.open(odd)  # bytes path; before: a binding TypeError
    np.testing.assert_array_equal(a[...], dataset["values"])
    assert chute.open(os.fsdecode(odd)).path == os.fsdecode(odd)  # str with surrogates
    assert len(list(chute.Loader({"x": odd}, batch_size=4))) == 4  # and through the Loader
    with pytest.raises(chute.InvalidArgumentError, match="NUL"):
        chute.open(str(tmp_path) + "/x\0y")  # before: the path was cut at the NUL


def test_v3_extension_that_must_be_understood_is_refused(tmp_path):
    base = {
        "zarr_format": 3,
        "node_type": "array",
        "shape": [2],
        "data_type": "float32",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2]}},
        "chunk_key_encoding": {"name": "default"},
        "fill_value": 0.0,
        "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
    }
    for name, extra, ok in [
        ("plain", {}, True),
        ("optional", {"my_ext": {"must_understand": False, "x": 1}}, True),
        ("required", {"my_ext": {"must_understand": True}}, False),
        ("unknown", {"my_ext": 3}, False),
    ]:
        path = tmp_path / name
        path.mkdir()
        (path / "zarr.json").write_text(json.dumps({**base, **extra}))
        if ok:
            assert chute.open(path).shape == (2,)
        else:  # before: opened silently
            with pytest.raises(chute.UnsupportedError, match="my_ext"):
                chute.open(path)


# --- files that are not regular files --------------------------------------------------------

OPEN_AND_READ = """
import sys, chute
try:
    a = chute.open(sys.argv[1])
    a[...]
    print("READ")
except chute.Error as e:
    print("ERROR", type(e).__name__, e)
"""


@pytest.mark.parametrize("key", ["3.0.0", ".zarray", ".zattrs"])
def test_fifo_at_a_key_is_an_error_not_a_hang(dataset, key):
    path = dataset["path"]
    target = path / key
    target.unlink(missing_ok=True)
    os.mkfifo(target)
    result = run_python(OPEN_AND_READ, str(path))  # before: blocked in open() forever
    assert "ERROR StorageError" in result.stdout, result.stdout + result.stderr
    assert "is a FIFO" in result.stdout and key in result.stdout


def test_fifo_at_an_npy_path_is_an_error_not_a_hang(tmp_path):
    os.mkfifo(tmp_path / "x.npy")
    result = run_python(OPEN_AND_READ, str(tmp_path / "x.npy"))  # before: blocked in open()
    assert "ERROR StorageError" in result.stdout, result.stdout + result.stderr
    assert "is a FIFO" in result.stdout


def test_fifo_at_an_hdf5_path_is_an_error_not_a_hang(tmp_path):
    # A FIFO is not recognised as an HDF5 file, so the path is not a dataset of one.
    os.mkfifo(tmp_path / "v.h5")
    result = run_python(OPEN_AND_READ, str(tmp_path / "v.h5/Nbody"))
    assert "ERROR NotFoundError" in result.stdout, result.stdout + result.stderr


def test_fifo_inside_a_group_is_not_opened(tmp_path, dataset):
    (tmp_path / ".zgroup").write_text('{"zarr_format": 2}')
    os.mkfifo(tmp_path / "stray")
    result = run_python(
        "import sys, chute; print(sorted(chute.open_group(sys.argv[1])))", str(tmp_path)
    )
    assert result.returncode == 0, result.stderr
    assert "['x']" in result.stdout


def test_directory_at_a_chunk_key_is_an_error_not_the_fill_value(dataset):
    path = dataset["path"]
    (path / "3.0.0").unlink()
    (path / "3.0.0").mkdir()
    with pytest.raises(chute.StorageError) as info:
        chute.open(path)[...]  # before: sample 3 read as zeros
    assert "chunk '3.0.0'" in str(info.value) and "is a directory" in str(info.value)


def test_symlinked_chunks_follow_unless_confined(tmp_path, dataset):
    outside = tmp_path / "outside.bin"
    outside.write_bytes(np.full(SHAPE, 9, "<f4").tobytes())
    (dataset["path"] / "2.0.0").unlink()
    (dataset["path"] / "2.0.0").symlink_to(outside)
    assert chute.get_follow_symlinks()
    assert chute.open(dataset["path"])[2, 0, 0] == 9  # the default, as zarr-python
    chute.set_follow_symlinks(False)
    try:
        with pytest.raises(chute.PermissionDeniedError, match="follow_symlinks is off"):
            chute.open(dataset["path"])[...]
    finally:
        chute.set_follow_symlinks(True)


# --- arguments ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs,named",
    [
        ({"seed": -5}, "seed"),
        ({"seed": 2**64}, "seed"),
        ({"seed": 1.5}, "seed"),
        ({"batch_size": 0}, "batch_size"),
        ({"batch_size": "16"}, "batch_size"),
        ({"batch_size": 10**7}, "batch_size=10000000"),
        ({"threads": 10_000}, "threads = 10000 is outside"),
        ({"threads": 2**31}, "threads = 2147483648 is outside"),
        ({"threads": 0}, "threads"),
        ({"prefetch": 0}, "prefetch"),
        ({"prefetch": 10**9}, "prefetch"),
        ({"rank": 2, "world_size": 2}, "rank"),
        ({"rank": -1, "world_size": 2}, "rank"),
        ({"world_size": 0, "rank": 0}, "world_size"),
        ({"shuffle": "yes"}, "shuffle"),
        ({"timeout": -1}, "timeout"),
        ({"batch_size": 8, "world_size": 4, "rank": 0}, "pad_to_batch"),
        # bools are not counts, floats are not truncated, NaN is not a number of seconds
        ({"batch_size": True}, "batch_size"),
        ({"prefetch": False}, "prefetch"),
        ({"threads": 1.5}, "threads"),
        ({"seed": np.float64(3)}, "seed"),
        ({"timeout": float("nan")}, "timeout"),
        ({"timeout": float("inf")}, "timeout"),
        ({"timeout": True}, "timeout"),
        ({"drop_last": "no"}, "drop_last"),
        ({"pad_to_batch": 1}, "pad_to_batch"),
        ({"verbose": "loud"}, "verbose"),
        ({"follow_symlinks": "no"}, "follow_symlinks"),
    ],
)
def test_bad_options_name_the_option(dataset, kwargs, named):
    start = time.monotonic()
    with pytest.raises(chute.InvalidArgumentError) as info:  # before: TypeError, hang, or a wait
        chute.Loader({"x": str(dataset["path"])}, **kwargs)
    assert named in str(info.value)
    assert time.monotonic() - start < HANG_GUARD


def test_extreme_but_valid_seed_and_explicit_padding(dataset):
    loader = chute.Loader({"x": str(dataset["path"])}, batch_size=4, seed=2**64 - 1)
    assert len(list(loader)) == 4
    padded = chute.Loader({"x": str(dataset["path"])}, batch_size=24, pad_to_batch=True)
    (batch,) = list(padded)
    assert batch.padding == 8 and batch["x"].shape == (24, *SHAPE)


def test_set_threads_refuses_absurd_counts():
    with pytest.raises(chute.InvalidArgumentError, match="at most"):
        chute.set_threads(2**31)
    chute.set_threads(0)


# --- resume ------------------------------------------------------------------------------------


def test_state_after_the_last_batch_resumes_at_the_next_epoch(dataset):
    paths = {"x": str(dataset["path"])}
    loader = chute.Loader(paths, batch_size=4, seed=3)
    first = [b.indices.tolist() for b in loader]
    state = loader.state_dict()
    assert (state["epoch"], state["next_batch"]) == (1, 0)
    resumed = chute.Loader(paths, batch_size=4, seed=3)
    resumed.load_state_dict(state)
    got = [b.indices.tolist() for b in resumed]  # before: an empty epoch
    assert len(got) == len(first) == 4
    fresh = chute.Loader(paths, batch_size=4, seed=3)
    list(fresh)
    assert got == [b.indices.tolist() for b in fresh]  # epoch 1 exactly


def test_state_from_another_run_is_refused(tmp_path, dataset):
    paths = {"x": str(dataset["path"])}
    loader = chute.Loader(paths, batch_size=4, seed=3)
    next(iter(loader))
    state = loader.state_dict()
    with pytest.raises(chute.InvalidArgumentError, match="batch_size 4"):
        chute.Loader(paths, batch_size=2, seed=3).load_state_dict(state)
    with pytest.raises(chute.InvalidArgumentError, match="world_size 1"):
        chute.Loader(paths, batch_size=4, seed=3, rank=0, world_size=2).load_state_dict(state)
    write_array(tmp_path / "other", np.zeros((N + 4, *SHAPE), "<f4"))
    with pytest.raises(chute.InvalidArgumentError, match="another dataset"):
        chute.Loader({"x": str(tmp_path / "other")}, batch_size=4, seed=3).load_state_dict(state)
    with pytest.raises(chute.InvalidArgumentError, match="missing"):
        loader.load_state_dict({"seed": 3})
    old_style = {k: state[k] for k in ("seed", "epoch", "next_batch")}
    chute.Loader(paths, batch_size=4, seed=3).load_state_dict(old_style)  # still accepted


# --- rank detection ------------------------------------------------------------------------------

RANK_SCRIPT = """
import sys, chute
kwargs = eval(sys.argv[2])
a = chute.Loader({"x": sys.argv[1]}, batch_size=2, **kwargs)
b = chute.Loader({"x": sys.argv[1]}, batch_size=2, **kwargs)
print(a.rank, a.world_size, a.rank_source)
"""


def test_rank_detection_says_what_it_found_once(dataset):
    env = {"SLURM_PROCID": "1", "SLURM_NTASKS": "4"}
    result = run_python(RANK_SCRIPT, str(dataset["path"]), "{}", env=env)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split()[:2] == ["1", "4"]
    assert "Slurm (SLURM_PROCID/SLURM_NTASKS)" in result.stdout
    lines = [line for line in result.stderr.splitlines() if line.startswith("chute: rank")]
    assert lines == [
        (
            "chute: rank 1 of 4 from Slurm (SLURM_PROCID/SLURM_NTASKS); pass rank=/world_size= to "
            "choose, verbose=False or CHUTE_QUIET=1 to silence this line"
        )
    ]  # before: silent


@pytest.mark.parametrize(
    "env,kwargs",
    [
        ({"SLURM_PROCID": "1", "SLURM_NTASKS": "4", "CHUTE_QUIET": "1"}, "{}"),
        ({"SLURM_PROCID": "1", "SLURM_NTASKS": "4"}, "{'verbose': False}"),
        ({"SLURM_PROCID": "1", "SLURM_NTASKS": "4"}, "{'rank': 0, 'world_size': 1}"),
        ({}, "{}"),
    ],
)
def test_rank_detection_is_quiet_when_asked_or_irrelevant(dataset, env, kwargs):
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "OMPI_", "PMI_"))}
    clean.pop("RANK", None)
    clean.pop("WORLD_SIZE", None)
    result = subprocess.run(
        [sys.executable, "-c", RANK_SCRIPT, str(dataset["path"]), kwargs],
        capture_output=True,
        text=True,
        timeout=HANG_GUARD,
        env={**clean, **env},
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "chute: rank" not in result.stderr


# --- faults while running ------------------------------------------------------------------------


def test_chunks_deleted_truncated_or_rewritten_during_an_epoch(dataset):
    path, values = dataset["path"], dataset["values"]
    loader = chute.Loader({"x": str(path)}, batch_size=1, shuffle=False, prefetch=1, threads=1)
    it = iter(loader)
    np.testing.assert_array_equal(next(it)["x"][0], values[0])
    (path / "8.0.0").unlink()  # deleted: a missing chunk is the fill value (Zarr's rule)
    (path / "9.0.0").write_bytes(b"\0" * 7)  # truncated: an error naming it
    (path / "10.0.0").write_bytes(np.full(SHAPE, 5, "<f4").tobytes())  # rewritten: new values
    seen = {}
    with pytest.raises(chute.CorruptDataError) as info:
        for batch in it:
            seen[int(batch.indices[0])] = batch["x"][0].copy()
    assert "chunk '9.0.0'" in str(info.value)
    assert np.all(seen[8] == 0)
    rest = {int(b.indices[0]): b["x"][0].copy() for b in loader.epoch(1, start_batch=10)}
    assert np.all(rest[10] == 5)


def test_consumer_holding_every_batch_follows_the_memory_rule(dataset):
    loader = chute.Loader({"x": str(dataset["path"])}, batch_size=1, prefetch=2, threads=1)
    held = list(loader)  # every batch of the epoch kept alive
    assert len(held) == N
    allocated = loader.stats()["buffers_allocated"]
    # The documented rule: prefetch + 2 buffers, plus one per batch the consumer holds.
    assert allocated <= N + 2 + 2
    del held
    gc.collect()
    for _ in range(3):
        for _batch in loader:  # batches not kept: released buffers are reused
            pass
    # The run-ahead into the next epoch may still take a buffer after `allocated` was read, so
    # the check is the rule's bound, not the snapshot: three more epochs add nothing past it.
    assert allocated <= loader.stats()["buffers_allocated"] <= N + 2 + 2


def test_a_thousand_early_breaks_leave_no_threads_or_memory_behind(dataset):
    loader = chute.Loader({"x": str(dataset["path"])}, batch_size=2, threads=2, prefetch=2)
    for _ in range(20):  # warm up: pool, allocator
        for _batch in loader:
            break
    threads, rss = thread_count(), rss_bytes()
    for _ in range(1000):
        for _batch in loader:
            break
    loader.close()
    print(f"1,000 breaks: threads {threads} -> {thread_count()}, RSS +{rss_bytes() - rss} bytes")
    assert thread_count() <= threads
    assert io_thread_count() <= IO_THREADS_CAP
    assert rss_bytes() - rss < 16 << 20  # the bound: 16 MiB over 1,000 restarts


def test_soak_ten_thousand_batches(dataset):
    """10,000 small batches: threads unchanged and RSS growth under 16 MiB from start to end."""
    loader = chute.Loader({"x": str(dataset["path"])}, batch_size=1, threads=2, prefetch=2)
    for _ in loader:  # warm up one epoch
        pass
    start_threads, start_rss = thread_count(), rss_bytes()
    batches = 0
    while batches < 10_000:
        for batch in loader:
            batches += 1
            assert batch["x"].shape == (1, *SHAPE)
    growth = rss_bytes() - start_rss
    print(f"soak: {batches} batches, threads {start_threads} -> {thread_count()}, RSS +{growth} B")
    # No thread left behind: the count may fall (an idle thread of an earlier test's pool ending
    # during the soak: 37 -> 35 in one CI-like run), never grow.
    assert thread_count() <= start_threads
    assert io_thread_count() <= IO_THREADS_CAP
    assert growth < 16 << 20, f"RSS grew by {growth} bytes over {batches} batches"
    assert len(loader.stats()["occupancy"]) <= 1 << 16


def test_close_from_another_thread_ends_the_loop(dataset):
    loader = chute.Loader({"x": str(dataset["path"])}, batch_size=1, threads=1, prefetch=1)
    started, ended_early = threading.Event(), threading.Event()

    def consume():
        for epoch in range(10**6):
            got = 0
            for _batch in loader.epoch(epoch):
                got += 1
                started.set()
            if got < len(loader):  # this loop was ended by close() from the other thread
                ended_early.set()
                return

    worker = threading.Thread(target=consume, daemon=True)
    worker.start()
    assert started.wait(HANG_GUARD)
    deadline = time.monotonic() + HANG_GUARD
    while worker.is_alive() and time.monotonic() < deadline:
        loader.close()  # a close between two epochs lets the next one run: close again
        time.sleep(0.001)
    assert ended_early.is_set() and not worker.is_alive()


SIGINT_SCRIPT = """
import os, sys, threading, time
import numpy as np
import chute

loader = chute.Loader({"x": sys.argv[1]}, batch_size=4, threads=1, prefetch=1, shuffle=False)


def threads():  # the process-wide I/O threads ("chute-io") outlive epochs by design
    names = [open(f"/proc/self/task/{t}/comm").read().strip() for t in os.listdir("/proc/self/task")]
    return sum(1 for name in names if name != "chute-io")


# The I/O executor (one thread: CHUTE_IO_THREADS=1 in the environment) is started, and its thread
# has named itself, before the count: a thread it started later would be counted until it does.
for _ in chute.Loader({"x": sys.argv[1]}, batch_size=4, threads=1, prefetch=1, shuffle=False):
    break
baseline = threads()
print("ready", flush=True)
caught_at = None
try:
    while True:
        for batch in loader:
            pass
except KeyboardInterrupt:
    caught_at = time.monotonic()
after = threads()
n = sum(1 for _ in loader)  # the loader still works after the interrupt
print("caught", caught_at, baseline, after, n, flush=True)
"""


def test_sigint_during_an_epoch_raises_keyboard_interrupt_and_joins(tmp_path):
    # Large gzip chunks make each batch take a while, so the signal lands while the consumer
    # waits inside next().
    import zlib

    path = tmp_path / "slow"
    path.mkdir()
    shape = (64, 1024, 256)
    (path / ".zarray").write_text(
        json.dumps(
            {
                "zarr_format": 2,
                "shape": list(shape),
                "chunks": [1, *shape[1:]],
                "dtype": "<f4",
                "compressor": {"id": "zlib", "level": 1},
                "fill_value": 0,
                "filters": None,
                "order": "C",
            }
        )
    )
    rng = np.random.default_rng(0)
    for i in range(shape[0]):
        data = rng.integers(0, 4, shape[1:]).astype("<f4")
        (path / f"{i}.0.0").write_bytes(zlib.compress(data.tobytes(), 1))
    process = subprocess.Popen(
        [sys.executable, "-c", SIGINT_SCRIPT, str(path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=dict(os.environ, CHUTE_IO_THREADS="1"),
    )
    try:
        assert process.stdout.readline().strip() == "ready"
        time.sleep(0.5)
        sent_at = time.monotonic()
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=HANG_GUARD)
    finally:
        process.kill()
    assert process.returncode == 0, err
    _, caught_at, baseline, after, n = out.split()
    assert int(after) <= int(baseline)  # the epoch's producer was joined
    assert int(n) == shape[0] // 4
    print(f"SIGINT to KeyboardInterrupt: {float(caught_at) - sent_at:.3f} s")


FORK_SCRIPT = """
import os, sys
import numpy as np
import chute

def indices(loader, epoch=None):
    run = loader if epoch is None else loader.epoch(epoch)
    return [b.indices.tolist() for b in run]

reference = chute.Loader({"x": sys.argv[1]}, batch_size=2, seed=1)
expected = [indices(reference), indices(reference)]  # epochs 0 and 1
loader = chute.Loader({"x": sys.argv[1]}, batch_size=2, seed=1, threads=2)
a = chute.open(sys.argv[1])
it = iter(loader)
first = next(it).indices.tolist()  # threads are running, batches are queued
pid = os.fork()
if pid == 0:
    try:
        got = indices(loader)  # the inherited loader, rebuilt: the next epoch, as in the parent
        whole = a[...]          # a read on the module's pool, made afresh
        ok = got == expected[1] and whole.shape[0] == 16
        os._exit(0 if ok else 3)
    except BaseException as e:
        print("child:", type(e).__name__, e, flush=True)
        os._exit(2)
_, status = os.waitpid(pid, 0)
rest = [b.indices.tolist() for b in it]
print("child", os.waitstatus_to_exitcode(status), "parent", [first] + rest == expected[0])
"""


def test_fork_after_a_loader_exists_works_in_the_child(dataset):
    result = run_python(FORK_SCRIPT, str(dataset["path"]))  # before: the child hung
    assert result.returncode == 0, result.stderr
    assert result.stdout.split()[-4:] == ["child", "0", "parent", "True"], result.stdout


MANY_FORKS_SCRIPT = """
import os, signal, sys
import chute

loader = chute.Loader({"x": sys.argv[1]}, batch_size=2, seed=1, threads=2)
a = chute.open(sys.argv[1])
statuses = []
for fork in range(100):
    it = iter(loader)
    next(it)  # the loader's threads are reading while fork() runs
    pid = os.fork()
    if pid == 0:
        signal.alarm(30)  # a child that waits on a lock the fork left held dies by SIGALRM
        ok = sum(1 for _ in loader) == len(loader) and a[...].shape[0] == 16
        os._exit(0 if ok else 3)
    _, status = os.waitpid(pid, 0)
    statuses.append(os.waitstatus_to_exitcode(status))
    for _ in it:
        pass
print(*statuses)
"""


def test_forks_while_the_loader_reads_never_leave_a_child_waiting(dataset):
    # A reader thread that held a store's lock at the fork used to hang the child now and then
    # (an open-file cache: about once in 80 forks, so 100 forks catch it 3 times in 4); every
    # such lock is now fork-safe.
    result = run_python(MANY_FORKS_SCRIPT, str(dataset["path"]))
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["0"] * 100, result.stdout  # -14: a child hung (SIGALRM)


TORCH_SCRIPT = """
import sys
import torch
from chute.torch import ChuteIterableDataset

ds = ChuteIterableDataset({"x": sys.argv[1]}, batch_size=2, seed=0)
print(len(ds))  # creates the Loader (and its threads) in the parent
loader = torch.utils.data.DataLoader(ds, batch_size=None, num_workers=1)
print(sum(1 for _ in loader))
"""


def test_torch_dataloader_worker_around_a_loader(dataset):
    pytest.importorskip("torch")
    result = run_python(TORCH_SCRIPT, str(dataset["path"]))  # before: the worker hung
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["8", "8"]


def test_timeout_option_is_validated_and_kept(dataset):
    loader = chute.Loader({"x": str(dataset["path"])}, batch_size=4, timeout=30)
    assert loader.timeout == 30.0
    assert len(list(loader)) == 4
    assert issubclass(chute.ReadTimeoutError, TimeoutError)
    assert issubclass(chute.ReadTimeoutError, chute.Error)


def test_v3_bfloat16_array_reads(tmp_path):
    ml_dtypes = pytest.importorskip("ml_dtypes")
    values = np.array([1.5, -2.0, 3.25, 0.0], dtype=ml_dtypes.bfloat16)
    path = tmp_path / "bf16"
    path.mkdir()
    (path / "zarr.json").write_text(
        json.dumps(
            {
                "zarr_format": 3,
                "node_type": "array",
                "shape": [4],
                "data_type": "bfloat16",
                "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [4]}},
                "chunk_key_encoding": {"name": "default"},
                "fill_value": 0.0,
                "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
            }
        )
    )
    (path / "c").mkdir()
    (path / "c" / "0").write_bytes(values.tobytes())
    a = chute.open(path)
    np.testing.assert_array_equal(a[...], values)  # before: a binding TypeError on every read
    assert a[1:3].dtype == values.dtype
