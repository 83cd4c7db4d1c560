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


def _position(state: dict) -> dict:
    """The resume position of a state (it also names its batch size, world size, dataset)."""
    return {key: state[key] for key in ("seed", "epoch", "next_batch")}


def _indices(batches) -> list[list[int]]:
    return [b["indices"].tolist() for b in batches]


def test_torch_state_dict_resumes_mid_epoch_exactly(packed):
    pytest.importorskip("torch")
    from chute.torch import ChuteIterableDataset

    paths, expected = packed
    options = {"batch_size": 3, "seed": 5, "shuffle": True, "rank": 0, "world_size": 1}
    reference = ChuteIterableDataset(paths, **options)
    reference.set_epoch(1)
    whole = _indices(reference)
    following = _indices(reference)  # the pass after is epoch 2

    ds = ChuteIterableDataset(paths, **options)
    ds.set_epoch(1)
    assert _position(ds.state_dict()) == {"seed": 5, "epoch": 1, "next_batch": 0}
    iterator = iter(ds)
    taken = [next(iterator)["indices"].tolist() for _ in range(2)]
    state = ds.state_dict()
    assert _position(state) == {"seed": 5, "epoch": 1, "next_batch": 2}
    del iterator

    resumed = ChuteIterableDataset(paths, **options)
    resumed.load_state_dict(state)
    assert resumed.state_dict() == state
    rest = list(resumed)
    assert taken + _indices(rest) == whole
    np.testing.assert_array_equal(
        rest[0]["inputs"].numpy(), expected["inputs"][rest[0]["indices"].numpy()]
    )
    assert _indices(resumed) == following


def test_torch_state_after_the_last_batch_starts_the_next_epoch(packed):
    pytest.importorskip("torch")
    from chute.torch import ChuteIterableDataset

    paths, _ = packed
    options = {"batch_size": 4, "seed": 3, "rank": 0, "world_size": 1}
    ds = ChuteIterableDataset(paths, **options)
    ds.set_epoch(4)
    iterator = iter(ds)
    for _ in range(len(ds)):  # every batch, without running the generator to its end
        next(iterator)
    state = ds.state_dict()
    assert _position(state) == {"seed": 3, "epoch": 5, "next_batch": 0}
    resumed = ChuteIterableDataset(paths, **options)
    resumed.load_state_dict(state)
    again = list(resumed)
    assert len(again) == len(ds)
    reference = ChuteIterableDataset(paths, **options)
    reference.set_epoch(5)
    assert _indices(again) == _indices(reference)
    # A state in the end-of-epoch form {epoch, next_batch=len} also means the next epoch.
    other = ChuteIterableDataset(paths, **options)
    other.load_state_dict({"seed": 3, "epoch": 4, "next_batch": len(ds)})
    assert _indices(other) == _indices(again)
    with pytest.raises(chute.InvalidArgumentError):
        other.load_state_dict({"seed": 4, "epoch": 0, "next_batch": 0})


def test_loader_state_after_the_last_batch_is_the_next_epoch(packed):
    paths, _ = packed
    loader = chute.Loader(paths, batch_size=4, seed=1, rank=0, world_size=1)
    list(loader.epoch(2))
    assert _position(loader.state_dict()) == {"seed": 1, "epoch": 3, "next_batch": 0}
    resumed = chute.Loader(paths, batch_size=4, seed=1, rank=0, world_size=1)
    resumed.load_state_dict(loader.state_dict())
    batches = list(resumed)
    assert len(batches) == 5 and all(b.epoch == 3 for b in batches)


def test_jax_batches_yield_indices_and_resume_through_the_loader(packed):
    pytest.importorskip("jax")
    import chute.jax

    paths, expected = packed
    options = {"batch_size": 3, "seed": 8, "rank": 0, "world_size": 1}
    reference = [b["indices"].tolist() for b in chute.jax.batches(chute.Loader(paths, **options))]
    loader = chute.Loader(paths, **options)
    iterator = chute.jax.batches(loader)
    first = next(iterator)
    np.testing.assert_array_equal(np.asarray(first["inputs"]), expected["inputs"][first["indices"]])
    assert first["indices"].dtype == np.int64
    state = loader.state_dict()
    del iterator
    resumed = chute.Loader(paths, **options)
    resumed.load_state_dict(state)
    rest = [b["indices"].tolist() for b in chute.jax.batches(resumed)]
    assert [first["indices"].tolist(), *rest] == reference


@pytest.fixture(scope="module")
def variables(tmp_path_factory):
    from cli_support import run_cli

    out = tmp_path_factory.mktemp("adapters-w2") / "era5"
    run_cli("make-dataset", "variables", out, "-q", "--times", 6, "--levels", 2, "--lat", 5,
            "--lon", 8)  # fmt: skip
    return str(out)


def _half_batch(path: str, dtype: str):
    ds = chute.windows(path, variables=["temperature", "2m_temperature"], dtype=dtype,
                       mean_suffix="mean/{}", std_suffix="std/{}")  # fmt: skip
    loader = chute.Loader(ds, batch_size=2, shuffle=False, rank=0, world_size=1)
    reference = chute.windows(path, variables=["temperature", "2m_temperature"],
                              mean_suffix="mean/{}", std_suffix="std/{}")  # fmt: skip
    expected = next(iter(chute.Loader(reference, batch_size=2, shuffle=False, rank=0,
                                      world_size=1)))  # fmt: skip
    return loader, {name: expected[name].copy() for name in expected}


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_half_precision_batches_go_to_torch_without_a_copy(variables, dtype):
    torch = pytest.importorskip("torch")
    ml_dtypes = pytest.importorskip("ml_dtypes")
    from chute.torch import to_torch

    loader, expected = _half_batch(variables, dtype)
    batch = next(iter(loader))
    numpy_type = ml_dtypes.bfloat16 if dtype == "bfloat16" else np.float16
    assert batch["inputs"].dtype == numpy_type  # NumPy users keep a NumPy array
    tensors = to_torch(batch)
    for name in ("inputs", "targets"):
        assert tensors[name].dtype == getattr(torch, dtype)
        assert tensors[name].data_ptr() == batch[name].ctypes.data
        np.testing.assert_array_equal(tensors[name].float().numpy(), batch[name].astype(np.float32))
        np.testing.assert_allclose(
            tensors[name].float().numpy(), expected[name], rtol=2**-7, atol=1e-2
        )


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_half_precision_batches_go_to_jax_without_a_copy(variables, dtype):
    jax = pytest.importorskip("jax")
    pytest.importorskip("ml_dtypes")
    import chute.jax
    import jax.numpy as jnp

    loader, _ = _half_batch(variables, dtype)
    batch = next(iter(loader))
    arrays = chute.jax.to_jax(batch)
    for name in ("inputs", "targets"):
        assert isinstance(arrays[name], jax.Array)
        assert arrays[name].dtype == getattr(jnp, dtype)
        assert arrays[name].unsafe_buffer_pointer() == batch[name].ctypes.data
        np.testing.assert_array_equal(
            np.asarray(arrays[name].astype(jnp.float32)), batch[name].astype(np.float32)
        )


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
