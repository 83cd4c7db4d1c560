"""Rank and world size for multi-process training, the same rule as chute's C++ side.

    >>> from chute.distributed import rank_and_world_size, rank_info
    >>> rank, world_size = rank_and_world_size()   # what chute.Loader uses by default

Order (the first that applies wins):

1. MPI through mpi4py, only when the program has already imported ``mpi4py.MPI`` and MPI is
   initialised (chute never imports mpi4py itself: importing ``mpi4py.MPI`` initialises MPI).
2. torchrun / torch.distributed: ``RANK``, ``WORLD_SIZE`` (local rank ``LOCAL_RANK``).
3. Open MPI's mpirun: ``OMPI_COMM_WORLD_RANK``, ``OMPI_COMM_WORLD_SIZE``
   (``OMPI_COMM_WORLD_LOCAL_RANK``).
4. PMI (MPICH, Intel MPI, ``srun --mpi=pmi2``): ``PMI_RANK``, ``PMI_SIZE`` (``MPI_LOCALRANKID``).
5. Slurm's srun: ``SLURM_PROCID``, ``SLURM_NTASKS`` (``SLURM_LOCALID``).
6. Otherwise rank 0 of 1.

torchrun comes before MPI and Slurm because it may run inside an MPI or Slurm job whose
variables describe the outer launch; MPI comes before Slurm because ``mpirun`` inside an
``sbatch`` script inherits ``SLURM_PROCID=0`` on every rank. A variable that is set must come
with its partner and hold integers with ``0 <= rank < size``; anything else raises
``chute.InvalidArgumentError`` (a ``ValueError``) naming the variables. The C++ twin is
``chute::dist::detect_rank_from_env`` in tools/chute/dist/env.h; keep the two in step.

``reader_group(model_size, group_size)`` places this rank among model instances and reader
groups as anemoi-training does (``ReaderGroup.loader_options`` splits each batch, or the cells,
between the readers of a group).

No MPI call is ever made from chute's loader threads: ranks agree on their shares through
(seed, epoch, rank, world_size) alone.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from typing import Any, NamedTuple

__all__ = [
    "RankInfo",
    "ReaderGroup",
    "abort_on_uncaught_exception",
    "rank_and_world_size",
    "rank_info",
    "rank_info_from_env",
    "reader_group",
]

# (launcher, rank variable, size variable, local rank variable), in order of precedence.
_LAUNCHERS = (
    ("torchrun", "RANK", "WORLD_SIZE", "LOCAL_RANK"),
    ("Open MPI", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK"),
    ("PMI", "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID"),
    ("Slurm", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID"),
)


class RankInfo(NamedTuple):
    rank: int = 0
    world_size: int = 1
    local_rank: int = 0  # rank within the node (to pick a GPU); 0 when unknown
    source: str = "default"  # where the numbers came from, for messages and reports


def _invalid(message: str) -> Exception:
    try:
        from ._chute import InvalidArgumentError
    except ImportError:  # the extension is not built: still a ValueError
        return ValueError(message)
    return InvalidArgumentError(message)


def _parse_int(env: Mapping[str, str], name: str) -> int:
    text = env[name]
    try:
        return int(text.strip(), 10)
    except ValueError:
        raise _invalid(f'environment variable {name}="{text}": expected an integer') from None


def rank_info_from_env(env: Mapping[str, str] | None = None) -> RankInfo:
    """Rank, world size and local rank from launcher variables in `env` (default os.environ)."""
    env = os.environ if env is None else env
    present = {name for name, value in env.items() if value != ""}
    for launcher, rank_var, size_var, local_var in _LAUNCHERS:
        has_rank, has_size = rank_var in present, size_var in present
        if not has_rank and not has_size:
            continue
        if not (has_rank and has_size):
            here, missing = (rank_var, size_var) if has_rank else (size_var, rank_var)
            raise _invalid(
                f"environment: {here} is set but {missing} is not; expected both (from "
                f"{launcher}) or neither"
            )
        rank, size = _parse_int(env, rank_var), _parse_int(env, size_var)
        where = f"environment {rank_var}={rank} {size_var}={size}"
        if size < 1:
            raise _invalid(f"{where}: expected a world size >= 1, got {size}")
        if not 0 <= rank < size:
            raise _invalid(f"{where}: expected 0 <= rank < world size {size}, got rank {rank}")
        local = 0
        if local_var in present:
            local = _parse_int(env, local_var)
            if not 0 <= local < size:
                raise _invalid(
                    f"environment {local_var}={local}: expected 0 <= local rank < {size} "
                    f"({size_var})"
                )
        return RankInfo(rank, size, local, f"{launcher} ({rank_var}/{size_var})")
    return RankInfo()


def _from_mpi4py() -> RankInfo | None:
    """COMM_WORLD's rank and size when the program imported mpi4py.MPI and MPI is running."""
    mpi = sys.modules.get("mpi4py.MPI")
    if mpi is None:
        return None
    try:
        if not mpi.Is_initialized() or mpi.Is_finalized():
            return None
        world = mpi.COMM_WORLD
        rank, size = world.Get_rank(), world.Get_size()
    except (AttributeError, RuntimeError):  # MPI.Exception is a RuntimeError
        return None
    try:
        local = rank_info_from_env().local_rank if size > 1 else 0
    except ValueError:  # malformed launcher variables do not matter when MPI itself answered
        local = 0
    return RankInfo(rank, size, local, "MPI (mpi4py COMM_WORLD)")


def rank_info() -> RankInfo:
    """Where this process sits: mpi4py when initialised, else the launcher's environment."""
    info = _from_mpi4py()
    return info if info is not None else rank_info_from_env()


def rank_and_world_size() -> tuple[int, int]:
    """(rank, world_size) for chute.Loader's defaults; (0, 1) outside any launcher."""
    info = rank_info()
    return info.rank, info.world_size


class ReaderGroup(NamedTuple):
    """Where a rank sits among model instances and reader groups (anemoi-training's layout).

    The world's ranks form `models` model instances of `model_size` consecutive ranks; the ranks
    of an instance form reader groups of `group_size` consecutive ranks. The readers of a group
    share the reading of each batch: `split="batch"` gives each its own samples of the instance's
    batch, `split="cells"` its own cells of every sample (anemoi-training's grid shards).
    """

    rank: int = 0
    world_size: int = 1
    model: int = 0  # model instance (anemoi's model_comm_group_id)
    models: int = 1  # model instances (model_comm_num_groups)
    model_rank: int = 0  # rank within the instance (model_comm_group_rank)
    model_size: int = 1  # ranks per instance (num_gpus_per_model)
    group: int = 0  # reader group within the instance (reader_group_id)
    group_rank: int = 0  # rank within the reader group (reader_group_rank)
    group_size: int = 1  # readers per group (read_group_size)
    source: str = "default"

    def loader_options(self, batch_size: int, split: str = "batch") -> dict[str, int]:
        """chute.Loader's `rank`, `world_size` and `batch_size` for this reader.

        `batch_size` is the model instance's batch. With `split="batch"` this reader gets
        `batch_size / group_size` samples of it (the instance's batch cut in consecutive parts,
        one per reader, in group-rank order: their union is the unsplit batch); with
        `split="cells"` it gets the whole batch (give the dataset `reader_group=(group_rank,
        group_size)` for its cells). Instances get disjoint samples either way.
        """
        if split not in ("batch", "cells"):
            raise _invalid(f"reader group split: expected 'batch' or 'cells', got {split!r}")
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise _invalid(f"reader group: batch_size must be an integer >= 1, got {batch_size!r}")
        if split == "cells" or self.group_size == 1:
            return {"rank": self.model, "world_size": self.models, "batch_size": batch_size}
        if batch_size % self.group_size:
            raise _invalid(
                f"reader group: a batch of {batch_size} does not split between "
                f"{self.group_size} readers"
            )
        return {
            "rank": self.model * self.group_size + self.group_rank,
            "world_size": self.models * self.group_size,
            "batch_size": batch_size // self.group_size,
        }

    @property
    def cells(self) -> tuple[int, int]:
        """`reader_group=` for chute.anemoi when the readers split cells."""
        return (self.group_rank, self.group_size)


def reader_group(
    model_size: int = 1,
    group_size: int | None = None,
    *,
    rank: int | None = None,
    world_size: int | None = None,
    env: Mapping[str, str] | None = None,
) -> ReaderGroup:
    """This rank's model instance and reader group, as anemoi-training lays them out.

    `model_size`: ranks per model instance (anemoi's ``num_gpus_per_model``); `group_size`:
    readers per group (``read_group_size``, default `model_size`); both must divide: the world
    size by `model_size`, `model_size` by `group_size`. The rank and world size come from
    `rank`/`world_size` or else from the launcher (`env`, default the process environment:
    torchrun, Open MPI, PMI, Slurm; see rank_info).
    """

    def positive(name: str, value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise _invalid(f"reader group: {name} must be an integer >= 1, got {value!r}")
        return value

    model_size = positive("model_size", model_size)
    group_size = model_size if group_size is None else positive("group_size", group_size)
    if (rank is None) != (world_size is None):
        raise _invalid("reader group: give rank and world_size together, or neither")
    if rank is None:
        info = rank_info() if env is None else rank_info_from_env(env)
    else:
        size = positive("world_size", world_size)
        if isinstance(rank, bool) or not isinstance(rank, int) or not 0 <= rank < size:
            raise _invalid(f"reader group: expected 0 <= rank < {size}, got {rank!r}")
        info = RankInfo(rank, size, 0, "arguments")
    if info.world_size % model_size:
        raise _invalid(
            f"reader group: world size {info.world_size} ({info.source}) is not a multiple of "
            f"model_size {model_size}"
        )
    if model_size % group_size:
        raise _invalid(
            f"reader group: model_size {model_size} is not a multiple of group_size {group_size}"
        )
    model_rank = info.rank % model_size
    return ReaderGroup(
        rank=info.rank,
        world_size=info.world_size,
        model=info.rank // model_size,
        models=info.world_size // model_size,
        model_rank=model_rank,
        model_size=model_size,
        group=model_rank // group_size,
        group_rank=model_rank % group_size,
        group_size=group_size,
        source=info.source,
    )


def abort_on_uncaught_exception() -> None:
    """Makes an uncaught exception on one rank end every rank (mpi4py programs).

    Without it, a rank that dies with an exception (say, chute.NotFoundError for its data)
    finalises MPI on the way out while the other ranks wait in their next collective, and the
    job hangs until the scheduler kills it. With it, the traceback is printed as usual and then
    ``MPI.COMM_WORLD.Abort(1)`` ends the whole job. It only acts when the program has imported
    ``mpi4py.MPI`` and runs on more than one rank; ``python -m mpi4py train.py`` does the same.
    Calling it again does nothing.
    """
    previous = sys.excepthook
    if getattr(previous, "_chute_aborts", False):
        return

    def hook(kind, value, traceback):
        previous(kind, value, traceback)
        mpi = sys.modules.get("mpi4py.MPI")
        if mpi is None or not mpi.Is_initialized() or mpi.Is_finalized():
            return
        if mpi.COMM_WORLD.Get_size() > 1:
            sys.stderr.flush()
            mpi.COMM_WORLD.Abort(1)

    hook._chute_aborts = True
    sys.excepthook = hook


# --- the rank scaling plot of `chute bench --sweep ranks=...` --------------------------------


def plot_rank_scaling(report_path: str, out_dir: str) -> list[str]:
    """Draws throughput and time per global batch against the rank count; returns the PNG paths.

    `report_path` is the JSON that `chute bench --sweep ranks=...` writes (schema
    "chute-bench-ranks/1").
    """
    import json

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    with open(report_path) as f:
        report = json.load(f)
    rows = report["rank_sweep"]
    ranks = [row["ranks"] for row in rows]
    rates = [row["samples_per_s"] or 0.0 for row in rows]
    times = [row["global_batch_s"] or 0.0 for row in rows]
    base = min(range(len(rows)), key=lambda i: ranks[i])
    ideal = [rates[base] * k / ranks[base] for k in ranks]

    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    left.plot(ranks, rates, "o-", label="measured (sum over ranks)")
    left.plot(ranks, ideal, "--", color="grey", label="linear scaling")
    left.set_xlabel("ranks")
    left.set_ylabel("samples/s")
    left.set_title("Throughput")
    left.legend()
    right.plot(ranks, times, "o-", color="tab:orange")
    right.set_xlabel("ranks")
    right.set_ylabel("seconds")
    right.set_title(f"Time per global batch of {report.get('global_batch_size', '?')}")
    right.set_ylim(bottom=0)
    for axis in (left, right):
        axis.set_xticks(ranks)
        axis.grid(alpha=0.3)
    fig.suptitle("chute bench --sweep ranks")
    fig.tight_layout()
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, "ranks_scaling.png")
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return [path]


def _main(argv: list[str]) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m chute.distributed")
    commands = parser.add_subparsers(dest="command", required=True)
    plot = commands.add_parser("plot-ranks", help="plot a `chute bench --sweep ranks` JSON")
    plot.add_argument("report")
    plot.add_argument("--out", required=True)
    commands.add_parser("info", help="print this process's rank, world size and their source")
    args = parser.parse_args(argv)
    if args.command == "plot-ranks":
        for path in plot_rank_scaling(args.report, args.out):
            print(path)
    else:
        print(rank_info())
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
