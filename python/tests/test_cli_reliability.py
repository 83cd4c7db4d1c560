"""Reliability of the `chute` command: absurd sizes, --force, huge grids, missing
chunks, and a rank failing under mpirun. Subprocess timeouts are hang guards, not speed limits."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from cli_support import chute_cli, run_cli

HANG_GUARD = 120
MPIRUN = shutil.which("mpirun")
SMALL = ["--samples", 4, "--lat", 8, "--lon", 12, "--input-channels", 3, "--target-channels", 2]


def make(out: Path, *args: object) -> None:
    run_cli("make-dataset", "packed", out, "-q", *SMALL, *args)


@pytest.mark.parametrize(
    "args,named",
    [
        (["packed", "--lat", "-5"], "--lat"),  # before: silently the default 181
        (["packed", "--samples", "-1"], "--samples"),
        (["packed", "--chunk-channels", "-1"], "--chunk-channels"),
        (["variables", "--times", "-2"], "--times"),
        (["volume", "--size", "-3"], "--size"),
        (["packed", "--lat", "1000000000"], "memory"),  # before: std::bad_alloc
        (["volume", "--size", "100000"], "free on the file system"),  # before: 16 GB RSS
    ],
)
def test_make_dataset_refuses_bad_sizes_before_any_work(tmp_path, args, named):
    kind, *rest = args
    out = tmp_path / "out"
    result = run_cli("make-dataset", kind, out, "-q", *rest, check=False)
    assert result.returncode == 1, result.stderr
    assert result.stderr.startswith("chute: error: ") and named in result.stderr, result.stderr
    assert not out.exists()


def test_force_deletes_only_what_chute_wrote(tmp_path):
    out = tmp_path / "d"
    make(out)
    manifest = json.loads((out / "chute.json").read_text())
    assert sorted(manifest["entries"]) == sorted(os.listdir(out))
    make(out, "--force", "--seed", 2)  # a dataset chute made: replaced
    (out / "notes.txt").write_text("mine")
    result = run_cli("make-dataset", "packed", out, "-q", *SMALL, "--force", check=False)
    assert result.returncode == 1 and "notes.txt" in result.stderr
    assert (out / "notes.txt").read_text() == "mine" and (out / "inputs").is_dir()
    # A folder whose only mark is a chute.json (no list of entries): nothing is deleted.
    fake = tmp_path / "fake"
    (fake / "data").mkdir(parents=True)
    (fake / "chute.json").write_text(json.dumps({"workload": "packed", "zarr_format": 2,
                                                 "arrays": {}}))  # fmt: skip
    result = run_cli("make-dataset", "packed", fake, "-q", *SMALL, "--force", check=False)
    assert result.returncode == 1 and "older chute" in result.stderr
    assert (fake / "data").is_dir()  # before: the whole folder was deleted


def test_info_on_a_grid_of_2_to_the_40_chunks_returns(tmp_path):
    path = tmp_path / "huge"
    path.mkdir()
    (path / ".zarray").write_text(json.dumps({
        "zarr_format": 2, "shape": [2**40], "chunks": [1], "dtype": "<f4", "compressor": None,
        "fill_value": 0, "filters": None, "order": "C"}))  # fmt: skip
    result = subprocess.run([chute_cli(), "info", str(path)], capture_output=True, text=True,
                            timeout=HANG_GUARD, check=False)  # fmt: skip
    assert result.returncode == 0, result.stderr  # before: ran for days
    assert "1099511627776 chunks" in result.stdout
    assert "of the first 100000 checked" in result.stdout


def test_bench_warns_when_most_chunks_are_missing(tmp_path):
    out = tmp_path / "d"
    make(out)
    for array in ("inputs", "targets"):
        for chunk in (out / array).iterdir():
            if not chunk.name.startswith("."):
                chunk.unlink()
    result = run_cli("bench", out, "--mode", "io", "--batch-size", 2, "--batches", 2, "--trials",
                     1, "--warmup", 0, "--no-roofline", check=False)  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "chunks the io batches touch are missing" in result.stdout + result.stderr


def test_bench_refuses_a_batch_larger_than_the_dataset(tmp_path):
    out = tmp_path / "d"
    make(out)
    result = run_cli("bench", out, "--batch-size", 1000, check=False)
    assert result.returncode == 1
    assert "batch_size=1000" in result.stderr and "4 samples" in result.stderr


# --- a rank failing under mpirun ---------------------------------------------------------------

needs_mpirun = pytest.mark.skipif(MPIRUN is None, reason="mpirun not found (Debian openmpi-bin)")

MPI_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}

LOADER_LOOP = textwrap.dedent(
    """
    import os, signal, sys, time
    from mpi4py import MPI
    import chute

    rank = MPI.COMM_WORLD.Get_rank()
    loader = chute.Loader({"x": sys.argv[1] + "/inputs"}, batch_size=1, threads=1, verbose=False)
    if rank == 1:
        time.sleep(1)
        if sys.argv[2] == "kill":
            os.kill(os.getpid(), signal.SIGKILL)
        from chute.distributed import abort_on_uncaught_exception
        abort_on_uncaught_exception()
        raise RuntimeError("rank 1 fails")
    for epoch in range(10**6):  # rank 0 loads, with a collective now and then
        for batch in loader:
            pass
        if epoch % 10 == 0:
            MPI.COMM_WORLD.Barrier()
    """
)


def mpirun(*args: str) -> subprocess.CompletedProcess:
    command = [MPIRUN, "--allow-run-as-root", "--oversubscribe", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=HANG_GUARD,
                          env={**os.environ, **MPI_ENV}, check=False)  # fmt: skip


@needs_mpirun
@pytest.mark.parametrize("how", ["kill", "raise"])
def test_a_rank_dying_ends_a_loader_loop_on_the_other(tmp_path, how):
    pytest.importorskip("mpi4py")
    out = tmp_path / "d"
    make(out)
    script = tmp_path / "loop.py"
    script.write_text(LOADER_LOOP)
    result = mpirun("-np", "2", sys.executable, str(script), str(out), how)
    assert result.returncode != 0  # ended (the hang guard raises TimeoutExpired otherwise)


@needs_mpirun
@pytest.mark.parametrize("how", ["kill", "raise"])
def test_a_rank_dying_ends_chute_bench_on_the_other(tmp_path, how):
    out = tmp_path / "d"
    make(out)
    long_bench = [chute_cli(), "bench", str(out), "--mode", "io", "--batch-size", "1",
                  "--batches", "1000000", "--trials", "1", "--warmup", "0", "-q"]  # fmt: skip
    if how == "kill":
        other = [sys.executable, "-c", ("import os, signal, time; from mpi4py import MPI; "
                 "time.sleep(2); os.kill(os.getpid(), signal.SIGKILL)")]  # fmt: skip
        pytest.importorskip("mpi4py")
    else:
        other = [chute_cli(), "bench", str(tmp_path / "missing"), "-q"]
    result = mpirun("-np", "1", *long_bench, ":", "-np", "1", *other)
    assert result.returncode != 0  # ended (the hang guard raises TimeoutExpired otherwise)
