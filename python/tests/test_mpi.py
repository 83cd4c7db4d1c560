"""Multi-process loading: rank detection and rank shards under real launchers.

The shard tests run `mpirun -np 2 python worker.py` (skipped when mpirun is missing), with and
without mpi4py imported by the worker, plus a torchrun-style launch through RANK/WORLD_SIZE that
needs no MPI at all. Each rank writes the indices of its batches to a file; the test checks that
the ranks' shares are disjoint, cover the epoch, hold the right data, and equal what one process
reading the global batch (batch_size x world_size) gets.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from chute.distributed import RankInfo, rank_and_world_size, rank_info, rank_info_from_env

import chute

zarr = pytest.importorskip("zarr")

N_SAMPLES = 23  # not divisible by 2 ranks, nor by the global batch of 2 x 3
BATCH = 3
SEEDS = (0, 5)
EPOCHS = (0, 1, 4)
MPIRUN = shutil.which("mpirun")
LAUNCH_TIMEOUT = 180

WORKER = (
    textwrap.dedent(
        """
    import json, sys
    out_dir, path, use_mpi4py = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
    if use_mpi4py:
        from mpi4py import MPI  # initialises MPI; chute must then take rank/size from it
    import numpy as np
    import chute
    from chute.distributed import rank_info

    info = rank_info()
    result = {"rank": info.rank, "world_size": info.world_size, "source": info.source, "runs": []}
    for seed in SEEDS:
        loader = chute.Loader({"inputs": path}, batch_size=BATCH, shuffle=True, seed=seed,
                              drop_last=False, threads=2, prefetch=2)
        result["loader_rank"], result["loader_world"] = loader.rank, loader.world_size
        for epoch in EPOCHS:
            batches = []
            for batch in loader.epoch(epoch):
                values = batch["inputs"][:, 0].astype(np.int64)
                batches.append({"indices": batch.indices.tolist(), "padding": int(batch.padding),
                                "values": values.tolist()})
            result["runs"].append({"seed": seed, "epoch": epoch, "batches": batches})
    if use_mpi4py:
        MPI.COMM_WORLD.Barrier()  # a collective after loading: every rank got here
    with open(f"{out_dir}/rank{info.rank}.json", "w") as f:
        json.dump(result, f)
    """
    )
    .replace("SEEDS", repr(SEEDS))
    .replace("EPOCHS", repr(EPOCHS))
    .replace("BATCH", str(BATCH))
)

FAILING_WORKER = textwrap.dedent(
    """
    import sys
    from mpi4py import MPI
    import chute
    from chute.distributed import abort_on_uncaught_exception, rank_info

    abort_on_uncaught_exception()
    good, missing = sys.argv[1], sys.argv[2]
    rank = rank_info().rank
    # Rank 1 cannot open its data; rank 0 goes on to a collective that rank 1 never reaches.
    loader = chute.Loader({"inputs": missing if rank == 1 else good}, batch_size=2)
    MPI.COMM_WORLD.Barrier()
    """
)

LAUNCHER_VARIABLES = [
    name
    for names in (
        ("RANK", "WORLD_SIZE", "LOCAL_RANK"),
        ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK"),
        ("PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID"),
        ("SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID"),
    )
    for name in names
]


# --- rank detection from the environment ------------------------------------------------------


def test_default_is_rank_zero_of_one(monkeypatch):
    for name in LAUNCHER_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    assert rank_info_from_env() == RankInfo(0, 1, 0, "default")
    if "mpi4py.MPI" not in sys.modules:
        assert rank_and_world_size() == (0, 1)


@pytest.mark.parametrize(
    "env,expected",
    [
        ({"RANK": "3", "WORLD_SIZE": "8", "LOCAL_RANK": "1"}, (3, 8, 1, "torchrun")),
        ({"OMPI_COMM_WORLD_RANK": "1", "OMPI_COMM_WORLD_SIZE": "2"}, (1, 2, 0, "Open MPI")),
        ({"PMI_RANK": "4", "PMI_SIZE": "5"}, (4, 5, 0, "PMI")),
        ({"SLURM_PROCID": "2", "SLURM_NTASKS": "4", "SLURM_LOCALID": "2"}, (2, 4, 2, "Slurm")),
        # mpirun inside an sbatch script: every rank inherits SLURM_PROCID=0; Open MPI wins.
        (
            {
                "SLURM_PROCID": "0",
                "SLURM_NTASKS": "1",
                "OMPI_COMM_WORLD_RANK": "1",
                "OMPI_COMM_WORLD_SIZE": "2",
            },
            (1, 2, 0, "Open MPI"),
        ),
        ({"RANK": "5", "WORLD_SIZE": "6", "PMI_RANK": "0", "PMI_SIZE": "2"}, (5, 6, 0, "torchrun")),
        ({"RANK": "", "WORLD_SIZE": ""}, (0, 1, 0, "default")),  # empty means unset
    ],
)
def test_launchers_and_precedence(env, expected):
    info = rank_info_from_env(env)
    assert (info.rank, info.world_size, info.local_rank) == expected[:3]
    assert info.source.startswith(expected[3])


@pytest.mark.parametrize(
    "env,named",
    [
        ({"RANK": "2", "WORLD_SIZE": "2"}, "RANK=2 WORLD_SIZE=2"),
        ({"SLURM_PROCID": "-1", "SLURM_NTASKS": "4"}, "SLURM_PROCID"),
        ({"PMI_RANK": "0", "PMI_SIZE": "0"}, "PMI_SIZE"),
        (
            {"OMPI_COMM_WORLD_RANK": "one", "OMPI_COMM_WORLD_SIZE": "2"},
            'OMPI_COMM_WORLD_RANK="one"',
        ),
        ({"WORLD_SIZE": "4"}, "WORLD_SIZE is set but RANK is not"),
        ({"RANK": "0", "WORLD_SIZE": "2", "LOCAL_RANK": "7"}, "LOCAL_RANK"),
    ],
)
def test_bad_variables_raise_naming_them(env, named):
    with pytest.raises(chute.InvalidArgumentError, match=named) as caught:
        rank_info_from_env(env)
    assert isinstance(caught.value, ValueError)


@pytest.mark.expected_skip(reason="skips when an earlier test initialised mpi4py in-process")
def test_loader_defaults_come_from_the_environment(tiny_dataset, monkeypatch):
    for name in LAUNCHER_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("SLURM_PROCID", "1")
    monkeypatch.setenv("SLURM_NTASKS", "3")
    if "mpi4py.MPI" in sys.modules:
        pytest.skip("mpi4py initialised in this process: it would take precedence")
    assert rank_info().source.startswith("Slurm")
    loader = chute.Loader({"inputs": tiny_dataset}, batch_size=2)
    assert (loader.rank, loader.world_size) == (1, 3)
    loader = chute.Loader({"inputs": tiny_dataset}, batch_size=2, rank=0, world_size=1)
    assert (loader.rank, loader.world_size) == (0, 1)


# --- shards under real launchers -------------------------------------------------------------


@pytest.fixture(scope="module")
def tiny_dataset(tmp_path_factory) -> str:
    """inputs[i, :] == i, so a batch's values tell which samples it holds."""
    path = str(tmp_path_factory.mktemp("mpi") / "inputs.zarr")
    data = np.repeat(np.arange(N_SAMPLES, dtype=np.int32)[:, None], 4, axis=1)
    array = zarr.create_array(store=path, shape=data.shape, chunks=(5, 4), dtype="int32")
    array[...] = data
    return path


def _child_env(**extra: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in LAUNCHER_VARIABLES}
    # The children import the same chute as this process, wherever it was built.
    package_root = os.path.dirname(os.path.dirname(os.path.abspath(chute.__file__)))
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_root, env.get("PYTHONPATH")]))
    env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", **extra)
    return env


def _mpirun(
    np_: int, script: Path, *args: str, timeout: float = LAUNCH_TIMEOUT
) -> subprocess.CompletedProcess:
    command = [MPIRUN, "--allow-run-as-root", "--oversubscribe", "-np", str(np_),
               sys.executable, str(script), *args]  # fmt: skip
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout,
                          env=_child_env(), check=False)  # fmt: skip


def _check_shards(out_dir: Path, world_size: int, path: str, expected_source: str) -> None:
    results = [json.loads((out_dir / f"rank{r}.json").read_text()) for r in range(world_size)]
    for r, result in enumerate(results):
        assert (result["rank"], result["world_size"]) == (r, world_size)
        assert (result["loader_rank"], result["loader_world"]) == (r, world_size)
        assert result["source"].startswith(expected_source), result["source"]
    runs = len(SEEDS) * len(EPOCHS)
    for run in range(runs):
        seed, epoch = results[0]["runs"][run]["seed"], results[0]["runs"][run]["epoch"]
        single = chute.Loader({"inputs": path}, batch_size=BATCH * world_size, shuffle=True,
                              seed=seed, drop_last=False, threads=1, rank=0, world_size=1)  # fmt: skip
        single_batches = [(b.indices.tolist(), b.padding) for b in single.epoch(epoch)]
        per_rank = [result["runs"][run]["batches"] for result in results]
        assert all(len(batches) == len(single_batches) for batches in per_rank)
        seen = []
        for b, (global_indices, global_padding) in enumerate(single_batches):
            joined, padding = [], 0
            for r in range(world_size):
                batch = per_rank[r][b]
                assert batch["values"] == batch["indices"], "the data must match the indices"
                assert len(batch["indices"]) == BATCH
                joined += batch["indices"]
                padding += batch["padding"]
                seen += batch["indices"][: BATCH - batch["padding"]]
            assert joined == global_indices, f"seed {seed} epoch {epoch} batch {b}"
            assert padding == global_padding
        assert len(seen) == len(set(seen)), "a sample appeared on two ranks"
        assert sorted(seen) == list(range(N_SAMPLES)), "the ranks together must cover the epoch"


needs_mpirun = pytest.mark.skipif(MPIRUN is None, reason="mpirun not found (Debian openmpi-bin)")


def _has_mpi4py() -> bool:
    result = subprocess.run([sys.executable, "-c", "import mpi4py"], capture_output=True,
                            check=False)  # fmt: skip
    return result.returncode == 0


@needs_mpirun
@pytest.mark.parametrize("use_mpi4py", [False, True], ids=["env", "mpi4py"])
def test_mpirun_shards_are_disjoint_covering_and_equal_the_global_batch(
    tiny_dataset, tmp_path, use_mpi4py
):
    if use_mpi4py and not _has_mpi4py():
        pytest.skip("mpi4py is not installed (Debian python3-mpi4py)")
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    result = _mpirun(2, script, str(tmp_path), tiny_dataset, "1" if use_mpi4py else "0")
    assert result.returncode == 0, result.stdout + result.stderr
    _check_shards(tmp_path, 2, tiny_dataset, "MPI (mpi4py" if use_mpi4py else "Open MPI")


def test_torchrun_style_environment_shards(tiny_dataset, tmp_path):
    """RANK/WORLD_SIZE as torchrun sets them: three plain processes, no MPI."""
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    processes = [
        subprocess.Popen(
            [sys.executable, str(script), str(tmp_path), tiny_dataset, "0"],
            env=_child_env(RANK=str(r), WORLD_SIZE="3", LOCAL_RANK=str(r)),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for r in range(3)
    ]
    for process in processes:
        output, _ = process.communicate(timeout=LAUNCH_TIMEOUT)
        assert process.returncode == 0, output
    _check_shards(tmp_path, 3, tiny_dataset, "torchrun")


@needs_mpirun
def test_a_rank_that_cannot_open_its_data_ends_the_job_with_a_clear_error(tiny_dataset, tmp_path):
    if not _has_mpi4py():
        pytest.skip("mpi4py is not installed (Debian python3-mpi4py)")
    script = tmp_path / "failing.py"
    script.write_text(FAILING_WORKER)
    missing = str(tmp_path / "no-such-array.zarr")
    # Rank 0 waits in a barrier that rank 1 never reaches. Without abort_on_uncaught_exception()
    # rank 1 would finalise MPI on its way out and both would wait forever (the timeout fails it).
    result = _mpirun(2, script, tiny_dataset, missing, timeout=90)
    assert result.returncode != 0
    output = result.stdout + result.stderr
    assert "NotFoundError" in output, output
    assert "no-such-array.zarr" in output, output


@needs_mpirun
def test_bench_rank_sweep_writes_its_report_into_a_new_folder(tmp_path):
    cli = os.environ.get("CHUTE_CLI") or shutil.which("chute")
    if cli is None:
        pytest.skip("the chute CLI was not found: set CHUTE_CLI or put chute on PATH")
    data = tmp_path / "packed"
    subprocess.run([cli, "make-dataset", "packed", str(data), "-q", "--samples", "8", "--lat", "6",
                    "--lon", "8", "--input-channels", "3", "--target-channels", "2"],
                   check=True, capture_output=True)  # fmt: skip
    out = tmp_path / "not" / "yet"
    command = [MPIRUN, "--allow-run-as-root", "--oversubscribe", "-np", "2", cli, "bench",
               str(data), "--sweep", "ranks=1,2", "--batch-size", "4", "--batches", "2",
               "--trials", "1", "--no-roofline", "-q", "--out", str(out)]  # fmt: skip
    result = subprocess.run(command, capture_output=True, text=True, timeout=LAUNCH_TIMEOUT,
                            env=_child_env(), check=False)  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    report = json.loads((out / "results.json").read_text())
    assert [row["ranks"] for row in report["rank_sweep"]] == [1, 2]
