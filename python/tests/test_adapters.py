"""The PyTorch and JAX adapters, run for real on small data."""

from __future__ import annotations

import numpy as np
import pytest

import chute

zarr = pytest.importorskip("zarr")


@pytest.fixture(scope="module")
def packed(tmp_path_factory):
    root = tmp_path_factory.mktemp("adapters")
    rng = np.random.default_rng(1)
    paths, expected = {}, {}
    for name, channels in (("inputs", 4), ("targets", 2)):
        data = rng.standard_normal((20, 6, 8, channels)).astype("float32")
        path = str(root / f"{name}.zarr")
        arr = zarr.create_array(
            store=path, shape=data.shape, chunks=(1, 6, 8, channels), dtype="float32"
        )
        arr[...] = data
        paths[name], expected[name] = path, data
    return paths, expected


def test_torch_iterable_dataset_with_dataloader(packed):
    torch = pytest.importorskip("torch")
    from chute.torch import ChuteIterableDataset

    paths, expected = packed
    ds = ChuteIterableDataset(paths, batch_size=4, seed=2, drop_last=True, rank=0, world_size=1)
    loader = torch.utils.data.DataLoader(ds, batch_size=None, num_workers=0)
    assert len(ds) == 5
    epochs = []
    for epoch in range(2):
        ds.set_epoch(epoch)
        seen = []
        for batch in loader:
            assert isinstance(batch["inputs"], torch.Tensor)
            assert batch["inputs"].dtype == torch.float32
            idx = batch["indices"].numpy()
            np.testing.assert_array_equal(batch["inputs"].numpy(), expected["inputs"][idx])
            np.testing.assert_array_equal(batch["targets"].numpy(), expected["targets"][idx])
            seen.extend(idx.tolist())
        assert sorted(seen) == list(range(20))
        epochs.append(seen)
    assert epochs[0] != epochs[1]


def test_torch_tensors_share_the_batch_memory(packed):
    pytest.importorskip("torch")
    from chute.torch import to_torch

    paths, _ = packed
    loader = chute.Loader(paths, batch_size=4, rank=0, world_size=1)
    batch = next(iter(loader))
    tensors = to_torch(batch)
    assert tensors["inputs"].data_ptr() == batch["inputs"].ctypes.data


def test_torch_respects_torch_distributed_rank(packed, tmp_path):
    pytest.importorskip("torch")
    import torch.distributed as dist
    from chute.torch import ChuteIterableDataset

    if not dist.is_available():
        pytest.skip("torch.distributed is not available")
    paths, _ = packed
    dist.init_process_group("gloo", init_method=f"file://{tmp_path}/pg", rank=0, world_size=1)
    try:
        ds = ChuteIterableDataset(paths, batch_size=4, seed=0)
        batches = list(ds)
        assert ds._loader.rank == 0 and ds._loader.world_size == 1
        assert len(batches) == 5
    finally:
        dist.destroy_process_group()


def test_jax_batches(packed):
    jax = pytest.importorskip("jax")
    import chute.jax

    paths, expected = packed
    loader = chute.Loader(paths, batch_size=5, seed=4, rank=0, world_size=1)
    seen = []
    for arrays in chute.jax.batches(loader):
        assert isinstance(arrays["inputs"], jax.Array)
        x = np.asarray(arrays["inputs"])
        # Find the samples by content: the JAX view has no indices, so compare sets of rows.
        for row in x:
            matches = np.where((expected["inputs"] == row).all(axis=(1, 2, 3)))[0]
            assert len(matches) == 1
            seen.append(int(matches[0]))
    assert sorted(seen) == list(range(20))


def test_jax_example_train_step(packed):
    jax = pytest.importorskip("jax")
    import chute.jax
    import jax.numpy as jnp

    paths, _ = packed
    loader = chute.Loader(paths, batch_size=5, seed=0, rank=0, world_size=1)
    weights = jnp.zeros((4, 2))

    @jax.jit
    def step(w, x, y):
        def loss(w):
            return jnp.mean((x @ w - y) ** 2)

        value, grad = jax.value_and_grad(loss)(w)
        return w - 0.1 * grad, value

    losses = []
    for _ in range(3):
        for batch in chute.jax.batches(loader):
            weights, value = step(weights, batch["inputs"], batch["targets"])
            losses.append(float(value))
    assert len(losses) == 12 and all(np.isfinite(losses))


@pytest.fixture(scope="module")
def volume(tmp_path_factory):
    root = tmp_path_factory.mktemp("adapters-volume")
    rng = np.random.default_rng(2)
    data = rng.standard_normal((3, 10, 10, 10)).astype("float32")
    path = str(root / "v.zarr")
    arr = zarr.create_array(store=path, shape=data.shape, chunks=(1, 5, 5, 5), dtype="float32")
    arr[...] = data
    return path, data


def _expected_crops(data, crops, transforms, size):
    out = []
    for (x, y, z), t in zip(crops.tolist(), transforms.tolist()):
        box = data[:, x : x + size, y : y + size, z : z + size]
        out.append(chute.apply_cube_symmetry(box, t))
    return np.stack(out)


def test_torch_adapter_with_crops(volume):
    torch = pytest.importorskip("torch")
    from chute.torch import ChuteIterableDataset

    path, data = volume
    ds = chute.crops({"x": path}, size=4, crops_per_epoch=12, transforms="rotations")
    loader = torch.utils.data.DataLoader(
        ChuteIterableDataset(ds, batch_size=4, seed=1, rank=0, world_size=1),
        batch_size=None,
        num_workers=0,
    )
    batches = list(loader)
    assert len(batches) == 3
    for batch in batches:
        assert batch["x"].shape == (4, 3, 4, 4, 4) and batch["crops"].dtype == torch.int64
        want = _expected_crops(data, batch["crops"].numpy(), batch["transforms"].numpy(), 4)
        np.testing.assert_array_equal(batch["x"].numpy(), want)


def test_jax_adapter_with_crops(volume):
    pytest.importorskip("jax")
    import chute.jax

    path, data = volume
    ds = chute.crops(
        {"x": path}, size=4, crops_per_epoch=8, transforms="symmetries", channels_last=True
    )
    loader = chute.Loader(ds, batch_size=4, seed=3, rank=0, world_size=1)
    count = 0
    for batch in chute.jax.batches(loader):
        want = _expected_crops(data, np.asarray(batch["crops"]), np.asarray(batch["transforms"]), 4)
        np.testing.assert_array_equal(np.asarray(batch["x"]), np.moveaxis(want, 1, -1))
        count += 1
    assert count == 2
