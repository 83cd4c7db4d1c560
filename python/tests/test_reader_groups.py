"""Reader groups as anemoi-training lays them out (chute.distributed.reader_group): the ranks of
one model instance split each batch (or each sample's cells) between them. Their parts are
disjoint, cover the instance's batch and put together equal the unsplit batch; model instances
get disjoint samples; the layout comes from the launcher's environment."""

from __future__ import annotations

import numpy as np
import pytest
from anemoi_small import write_anemoi
from chute.distributed import ReaderGroup, reader_group

import chute

DATES, VARIABLES, MEMBERS, CELLS = 26, 5, 1, 37


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> str:
    return write_anemoi(tmp_path_factory.mktemp("reader-groups") / "small.zarr", dates=DATES,
                        variables=VARIABLES, members=MEMBERS, cells=CELLS)  # fmt: skip


def _batches(dataset, **loader) -> list[dict]:
    out = []
    for batch in chute.Loader(dataset, shuffle=True, seed=7, drop_last=True, threads=2, **loader):
        out.append({"indices": batch.indices.tolist(), "inputs": np.array(batch["inputs"]),
                    "targets": np.array(batch["targets"])})  # fmt: skip
    return out


@pytest.mark.parametrize("models,group_size", [(1, 2), (2, 2), (2, 4), (3, 1)])
def test_readers_split_each_batch_disjoint_covering_and_equal_to_the_unsplit_batch(
    store, models, group_size
):
    dataset = chute.anemoi(store, multistep_input=2, rollout=1)
    batch_size = 4
    world = models * group_size
    seen_by_model = []
    for model in range(models):
        unsplit = _batches(dataset, batch_size=batch_size, rank=model, world_size=models)
        parts = []
        for group_rank in range(group_size):
            layout = reader_group(group_size, rank=model * group_size + group_rank,
                                  world_size=world)  # fmt: skip
            assert (layout.model, layout.group_rank) == (model, group_rank)
            options = layout.loader_options(batch_size, split="batch")
            assert options["batch_size"] == batch_size // group_size
            parts.append(_batches(dataset, **options))
        assert all(len(p) == len(unsplit) for p in parts)
        for k, whole in enumerate(unsplit):
            pieces = [p[k] for p in parts]
            indices = [i for piece in pieces for i in piece["indices"]]
            assert len(set(indices)) == len(indices)  # disjoint
            assert indices == whole["indices"]  # covering, in order
            for name in ("inputs", "targets"):
                np.testing.assert_array_equal(
                    np.concatenate([piece[name] for piece in pieces]), whole[name]
                )
        seen_by_model.append({i for b in unsplit for i in b["indices"]})
    for a in range(models):
        for b in range(a + 1, models):
            assert not seen_by_model[a] & seen_by_model[b]


def test_readers_split_cells_disjoint_covering_and_equal_to_the_unsplit_batch(store):
    whole = _batches(chute.anemoi(store, multistep_input=2, rollout=2), batch_size=2)
    group_size = 3
    parts, ranges = [], []
    for group_rank in range(group_size):
        layout = reader_group(group_size, rank=group_rank, world_size=group_size)
        dataset = chute.anemoi(store, multistep_input=2, rollout=2, reader_group=layout.cells)
        ranges.append(dataset.cell_range)
        parts.append(_batches(dataset, **layout.loader_options(2, split="cells")))
    assert ranges[0][0] == 0 and ranges[-1][1] == CELLS
    assert all(ranges[i][1] == ranges[i + 1][0] for i in range(group_size - 1))
    for k, batch in enumerate(whole):
        for part in parts:
            assert part[k]["indices"] == batch["indices"]
        for name in ("inputs", "targets"):
            # (batch, steps, ensemble, cells, variables): cells are axis 3.
            joined = np.concatenate([part[k][name] for part in parts], axis=3)
            np.testing.assert_array_equal(joined, batch[name])


@pytest.mark.parametrize(
    "env,rank,world,source",
    [
        ({"RANK": "5", "WORLD_SIZE": "8"}, 5, 8, "torchrun"),
        ({"SLURM_PROCID": "6", "SLURM_NTASKS": "8"}, 6, 8, "Slurm"),
        ({"OMPI_COMM_WORLD_RANK": "2", "OMPI_COMM_WORLD_SIZE": "4"}, 2, 4, "Open MPI"),
        ({"PMI_RANK": "3", "PMI_SIZE": "4"}, 3, 4, "PMI"),
        (
            {"RANK": "1", "WORLD_SIZE": "4", "SLURM_PROCID": "0", "SLURM_NTASKS": "1"},
            1,
            4,
            "torchrun",
        ),
    ],
)
def test_reader_group_from_the_launchers_environment(env, rank, world, source):
    layout = reader_group(4, 2, env=env)
    assert (layout.rank, layout.world_size) == (rank, world)
    assert layout.source.startswith(source)
    # anemoi-training's rule (anemoi.training.distributed.groups).
    assert (layout.model, layout.models) == (rank // 4, world // 4)
    assert (layout.model_rank, layout.model_size) == (rank % 4, 4)
    assert (layout.group, layout.group_rank, layout.group_size) == ((rank % 4) // 2, rank % 2, 2)
    assert reader_group(env={}) == ReaderGroup()


def test_reader_group_errors_name_the_numbers():
    with pytest.raises(chute.InvalidArgumentError, match="world size 6 .* model_size 4"):
        reader_group(4, env={"RANK": "1", "WORLD_SIZE": "6"})
    with pytest.raises(chute.InvalidArgumentError, match="model_size 4 .* group_size 3"):
        reader_group(4, 3, rank=0, world_size=4)
    with pytest.raises(chute.InvalidArgumentError, match="batch of 6 .* 4 readers"):
        reader_group(4, rank=1, world_size=4).loader_options(6)
    with pytest.raises(chute.InvalidArgumentError, match="'rows'"):
        ReaderGroup().loader_options(4, split="rows")
    with pytest.raises(chute.InvalidArgumentError, match="rank and world_size together"):
        reader_group(2, rank=1)
    with pytest.raises(chute.InvalidArgumentError, match="0 <= rank < 2"):
        reader_group(2, rank=2, world_size=2)
