"""Mapped sources (.npy files, contiguous HDF5 datasets) truncated by another process after
chute opened them (issues 11 and 15): a read is a CorruptDataError naming the file, never a
SIGBUS that kills the process, nor zeros passed off as data.

chute copies boxes of these files straight out of a read-only mapping; a page past the file's
new end raises SIGBUS when touched. Each case runs in a fresh interpreter, so that a regression
shows as the child dying of SIGBUS (return code -7) rather than taking pytest down with it.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap

import numpy as np
import pytest

HANG_GUARD = 120  # seconds; only ever reached when something hangs


def run_case(code: str, *args: str) -> str:
    """Runs `code` in a fresh interpreter; returns its stdout, failing on any crash."""
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), *args],
        capture_output=True,
        text=True,
        timeout=HANG_GUARD,
        check=False,
    )
    if result.returncode < 0:
        pytest.fail(
            f"the reader died of {signal.Signals(-result.returncode).name}: {result.stderr}"
        )
    assert result.returncode == 0, result.stderr
    return result.stdout


READ_AFTER_TRUNCATION = """
    import os, sys
    import numpy as np
    import chute

    path, file, new_size = sys.argv[1], sys.argv[2], int(sys.argv[3])
    a = chute.open(path)
    expected = np.asarray(a).copy()          # maps the file, reads it whole
    os.truncate(file, new_size)              # "another process" cuts it
    for attempt in range(200):
        try:
            got = a[...]
            print("READ", "equal" if np.array_equal(got, expected) else "different")
        except chute.CorruptDataError as e:
            print("ERROR", e)
"""


def outcomes(out: str) -> list[str]:
    lines = out.splitlines()
    assert len(lines) == 200, out[-2000:]
    return lines


@pytest.mark.parametrize("cut", ["to zero", "to half"])
def test_npy_truncated_after_open_is_an_error(tmp_path, cut):
    """Pages past the new end fault: the first read after the cut raises, and every later one."""
    path = tmp_path / "x.npy"
    np.save(path, np.arange(64 * 64 * 16, dtype="<f4").reshape(64, 64, 16))
    new_size = {"to zero": 0, "to half": path.stat().st_size // 2}[cut]
    for line in outcomes(run_case(READ_AFTER_TRUNCATION, str(path), str(path), str(new_size))):
        assert line.startswith("ERROR"), line
        assert str(path) in line and "truncated after it was opened" in line, line
        assert f"now {new_size}" in line, line


def test_npy_cut_inside_its_last_page_is_found_by_the_size_check(tmp_path):
    """No fault (the page is still partly in the file): the size check every 64 copies per
    thread finds it; from then on every read raises."""
    path = tmp_path / "x.npy"
    np.save(path, np.arange(64 * 64 * 16, dtype="<f4").reshape(64, 64, 16))
    new_size = path.stat().st_size - 100
    lines = outcomes(run_case(READ_AFTER_TRUNCATION, str(path), str(path), str(new_size)))
    first = next(i for i, line in enumerate(lines) if line.startswith("ERROR"))
    assert all(line.startswith("ERROR") for line in lines[first:]), lines
    assert f"now {new_size}" in lines[first]


def test_contiguous_hdf5_truncated_after_open_is_an_error(tmp_path):
    h5py = pytest.importorskip("h5py")
    path = tmp_path / "v.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("x", data=np.arange(32 * 64 * 64, dtype="<f4").reshape(32, 64, 64))
    size = path.stat().st_size
    out = run_case(READ_AFTER_TRUNCATION, f"{path}/x", str(path), str(size // 3))
    for line in outcomes(out):
        assert line.startswith("ERROR") and str(path) in line, line


def test_npy_truncated_mid_epoch_ends_the_epoch_with_an_error(tmp_path):
    path = tmp_path / "x.npy"
    np.save(path, np.arange(256 * 32 * 32, dtype="<f4").reshape(256, 32, 32))
    out = run_case(
        """
        import os, sys
        import chute

        path = sys.argv[1]
        loader = chute.Loader({"x": path}, batch_size=4, shuffle=True, seed=0, prefetch=1,
                              threads=2)
        batches = 0
        try:
            for batch in loader:
                batches += 1
                if batches == 2:
                    os.truncate(path, 4096)
        except chute.CorruptDataError as e:
            print("ERROR", batches, e)
        else:
            print("NO ERROR", batches)
        """,
        str(path),
    )
    assert out.startswith("ERROR"), out
    assert str(path) in out and "truncated after it was opened" in out, out
    assert int(out.split()[1]) < 256 // 4, out
