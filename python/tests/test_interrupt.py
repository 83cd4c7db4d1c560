"""Ctrl-C during a long open raises KeyboardInterrupt inside the open call, not when it returns.

Each case runs a child process that starts an open which would take far longer than the test (a
reference set generating 2**32 references, many member files), sends itself SIGINT from a thread
while the open runs, and reports where KeyboardInterrupt surfaced. Nothing here is timed: the
child's address space is capped, so an open that ignored the signal ends in MemoryError (or the
subprocess timeout), never in a pass.
"""

import json
import os
import resource
import subprocess
import sys
import textwrap

import numpy as np
import pytest

CHILD = textwrap.dedent(
    """
    import os, signal, sys, threading, time, traceback
    import chute

    def interrupt():
        time.sleep(0.5)  # the open has begun by now: it would run for far longer
        os.kill(os.getpid(), signal.SIGINT)

    threading.Thread(target=interrupt, daemon=True).start()
    try:
        {call}
    except KeyboardInterrupt as e:
        frames = [f.name for f in traceback.extract_tb(e.__traceback__)]
        # Raised while the open ran, not after it failed (out of memory) or returned.
        print("KeyboardInterrupt", "alone" if e.__context__ is None else "after",
              repr(e.__context__), "in", " ".join(frames))
        sys.exit(3)
    print("the open finished")
    """
)


def _limit_memory():
    limit = 4 << 30
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def run_child(call: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", CHILD.format(call=call)],
        check=False,
        capture_output=True,
        text=True,
        timeout=300,
        preexec_fn=_limit_memory,
        env=os.environ,
    )


def check_interrupted(result: subprocess.CompletedProcess, opener: str) -> None:
    assert result.returncode == 3, (result.stdout, result.stderr[-3000:])
    line = result.stdout.strip().splitlines()[-1]
    assert line.startswith("KeyboardInterrupt alone None in "), line
    frames = line.split()[4:]
    # Raised inside the open (the wrapper's frame is on the traceback), not by chute.Error.
    assert opener in frames, line
    assert "chute.Error" not in result.stderr


def huge_reference_set(tmp_path):
    """A reference set generating 2**32 references: its open would never end."""
    refs = {
        "version": 1,
        "refs": {".zgroup": json.dumps({"zarr_format": 2})},
        "gen": [
            {
                "key": "x/{{i}}.{{j}}",
                "url": "data{{i}}.bin",
                "dimensions": {"i": {"stop": 65536}, "j": {"stop": 65536}},
            }
        ],
    }
    path = tmp_path / "refs.json"
    path.write_text(json.dumps(refs))
    return str(path)


def test_ctrl_c_interrupts_reference_set_open(tmp_path):
    path = huge_reference_set(tmp_path)
    result = run_child(f"chute.open_group({path!r})")
    check_interrupted(result, "open_group")


def test_ctrl_c_interrupts_many_files_open(tmp_path):
    # The members open on worker threads; the calling thread waits, sees the signal and stops
    # them.
    path = huge_reference_set(tmp_path)
    result = run_child(f"chute.open_group([{path!r}, {path!r}, {path!r}])")
    check_interrupted(result, "open_group")


def test_pending_interrupt_stops_many_files_open(tmp_path):
    import chute

    paths = []
    for i in range(40):
        p = tmp_path / f"m{i}.npy"
        np.save(p, np.zeros(3))
        paths.append(str(p))
    chute._chute._request_interrupt()
    with pytest.raises(KeyboardInterrupt):
        chute.open_group(paths)
    # Nothing pending afterwards: the next open gets as far as the members (which have no time
    # axis to join along).
    with pytest.raises(chute.Error):
        chute.open_group(paths)


@pytest.mark.parametrize(
    "libver, maxshape",
    [
        ("earliest", None),  # v1 B-tree
        ("latest", None),  # fixed array
        ("latest", (None, 64)),  # extensible array
        ("latest", (None, None)),  # v2 B-tree
    ],
)
def test_pending_interrupt_stops_hdf5_chunk_index_walk(tmp_path, libver, maxshape):
    import h5py

    import chute

    path = tmp_path / "f.h5"
    data = np.arange(64 * 64, dtype="<i2").reshape(64, 64)
    with h5py.File(path, "w", libver=libver) as f:
        f.create_dataset("x", data=data, chunks=(1, 2), maxshape=maxshape)  # 2048 chunks
    chute._chute._request_interrupt()
    with pytest.raises(KeyboardInterrupt):
        chute.open(f"{path}/x")
    np.testing.assert_array_equal(chute.open(f"{path}/x")[...], data)
