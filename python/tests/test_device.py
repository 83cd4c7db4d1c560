"""Batches delivered to a device (Loader(device=...), pin_memory=True) from Python.

Without a GPU the delivery runs on "standin:0", chute's host-memory stand-in for a device: the same
code path (device buffer pool, chute's stream, events, DLPack stream protocol, release through the
DLPack deleter) with deferred memcpy copies, so a consumer that read without being ordered after
the copy would see stale bytes. With CHUTE_TEST_DEVICE=cuda:0 (scripts/gpu_check.sh on a GPU
machine) the CUDA tests below run too, through PyTorch and JAX.
"""

from __future__ import annotations

import ctypes
import gc
import os

import numpy as np
import pytest

import chute

GPU = os.environ.get("CHUTE_TEST_DEVICE", "")  # "cuda:0" on a GPU machine


def _has_cuda_driver() -> bool:
    try:
        ctypes.CDLL("libcuda.so.1")
    except OSError:
        return False
    return True


_NO_GPU = "set CHUTE_TEST_DEVICE=cuda:0 on a GPU machine (scripts/gpu_check.sh does)"


def needs_gpu(test):
    """Runs on a GPU machine only; CI has none, so there the skip is expected."""
    test = pytest.mark.skipif(not GPU, reason=_NO_GPU)(test)
    return pytest.mark.expected_skip(reason=_NO_GPU)(test) if not GPU else test


@pytest.fixture(scope="module")
def packed(tmp_path_factory):
    root = tmp_path_factory.mktemp("device")
    rng = np.random.default_rng(5)
    paths, expected = {}, {}
    for name, channels in (("inputs", 3), ("targets", 2)):
        data = rng.standard_normal((40, 6, 8, channels)).astype("float32")
        path = str(root / f"{name}.npy")
        np.save(path, data)
        paths[name], expected[name] = path, data
    return paths, expected


def _host_batches(paths, epochs=2, **options):
    loader = chute.Loader(paths, batch_size=4, seed=3, threads=2, **options)
    out = []
    for _ in range(epochs):
        for batch in loader:
            out.append({name: np.array(batch[name]) for name in batch} | {"i": batch.indices})
    return out


def test_standin_batches_equal_host_batches_in_order(packed):
    paths, _ = packed
    expected = _host_batches(paths)
    loader = chute.Loader(paths, batch_size=4, seed=3, threads=2, device="standin:0")
    assert loader.device == "standin:0"
    seen = []
    for _ in range(2):
        for batch in loader:
            arrays = {}
            for name in batch:
                exported = batch[name]
                assert exported.device == "standin:0"
                assert exported.__dlpack_device__() == (1, 0)  # the stand-in's memory is host's
                # numpy.from_dlpack passes no stream: the host waits for chute's copy.
                arrays[name] = np.array(np.from_dlpack(exported))
            seen.append(arrays | {"i": batch.indices})
    assert len(seen) == len(expected)
    for got, want in zip(seen, expected):
        np.testing.assert_array_equal(got["i"], want["i"])
        for name in ("inputs", "targets"):
            np.testing.assert_array_equal(got[name], want[name])
    stats = loader.stats()["delivery"]
    assert stats["copies"] >= len(seen)


def test_stream_protocol_orders_the_consumer_stream(packed):
    paths, expected = packed
    loader = chute.Loader(paths, batch_size=4, shuffle=False, threads=2, device="standin:0")
    batch = next(iter(loader))
    exported = batch["inputs"]
    capsule = exported.__dlpack__(stream=5)  # a consumer stream: it waits on chute's event
    assert type(capsule).__name__ == "PyCapsule"
    assert loader.stats()["delivery"]["consumer_waits"] == 1
    # Now ordered, NumPy (which passes no stream, so the host waits too) sees the batch.
    np.testing.assert_array_equal(np.from_dlpack(exported), expected["inputs"][:4])
    assert exported.__dlpack__(max_version=(1, 0), stream=-1) is not None  # -1: no ordering
    assert loader.stats()["delivery"]["consumer_waits"] == 1


def test_device_buffers_are_bounded_and_return_through_the_deleter(packed):
    paths, _ = packed
    loader = chute.Loader(paths, batch_size=4, threads=2, prefetch=2, device="standin:0")
    held = []
    for _ in range(4):
        for batch in loader:
            held.append(np.from_dlpack(batch["inputs"]))  # DLPack consumers keep buffers
            held = held[-2:]
    stats = loader.stats()["delivery"]
    assert stats["device_buffers"] <= 2 + 1 + 2 + 1
    del held, batch
    gc.collect()
    assert loader.stats()["delivery"]["device_buffers"] == stats["device_buffers"]


def test_bad_device_strings_name_the_device(packed):
    paths, _ = packed
    with pytest.raises(chute.InvalidArgumentError, match="device 'gpu:0': unknown device kind"):
        chute.Loader(paths, batch_size=4, device="gpu:0")
    with pytest.raises(chute.InvalidArgumentError, match="device 'cuda:x'"):
        chute.Loader(paths, batch_size=4, device="cuda:x")
    with pytest.raises(chute.InvalidArgumentError, match="device must be None"):
        chute.Loader(paths, batch_size=4, device=0)
    with pytest.raises(chute.InvalidArgumentError, match="pin_memory"):
        chute.Loader(paths, batch_size=4, pin_memory="yes")


@pytest.mark.skipif(_has_cuda_driver(), reason="this machine has a CUDA driver")
@pytest.mark.expected_skip(reason="on a GPU machine the no-driver error cannot happen")
def test_without_a_gpu_pin_memory_and_cuda_are_clear_errors(packed):
    paths, _ = packed
    with pytest.raises(chute.UnsupportedError, match="pin_memory=true needs a CUDA GPU"):
        chute.Loader(paths, batch_size=4, pin_memory=True)
    with pytest.raises(chute.UnsupportedError, match="device 'cuda:0' needs a CUDA GPU"):
        chute.Loader(paths, batch_size=4, device="cuda:0")


def test_torch_adapter_on_the_standin(packed):
    torch = pytest.importorskip("torch")
    from chute.torch import ChuteIterableDataset

    paths, _ = packed
    expected = _host_batches(paths, epochs=1)
    ds = ChuteIterableDataset(paths, batch_size=4, seed=3, threads=2, device="standin:0")
    got = list(torch.utils.data.DataLoader(ds, batch_size=None, num_workers=0))
    assert len(got) == len(expected)
    for tensors, want in zip(got, expected):
        np.testing.assert_array_equal(tensors["inputs"].numpy(), want["inputs"])


# --- on a GPU (CHUTE_TEST_DEVICE=cuda:0) ------------------------------------------------------


@needs_gpu
def test_torch_cuda_tensors_on_the_current_stream(packed):
    torch = pytest.importorskip("torch")
    from chute.torch import ChuteIterableDataset, to_torch

    paths, _ = packed
    expected = _host_batches(paths, epochs=1)
    ds = ChuteIterableDataset(paths, batch_size=4, seed=3, threads=2, device=GPU)
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):  # the consumer's stream is a non-default one
        got = [
            {k: v.cpu() if k != "indices" else v for k, v in b.items()}
            for b in torch.utils.data.DataLoader(ds, batch_size=None, num_workers=0)
        ]
    for tensors, want in zip(got, expected):
        assert tensors["inputs"].dtype == torch.float32
        np.testing.assert_array_equal(tensors["inputs"].numpy(), want["inputs"])
        np.testing.assert_array_equal(tensors["targets"].numpy(), want["targets"])
    loader = chute.Loader(paths, batch_size=4, seed=3, threads=2, device=torch.device(GPU))
    batch = to_torch(next(iter(loader)))
    assert batch["inputs"].device == torch.device(GPU)


@needs_gpu
def test_torch_pinned_batches_are_page_locked(packed):
    pytest.importorskip("torch")
    from chute.torch import to_torch

    paths, _ = packed
    loader = chute.Loader(paths, batch_size=4, seed=3, threads=2, pin_memory=True)
    expected = _host_batches(paths, epochs=1)
    for batch, want in zip(loader, expected):
        x = to_torch(batch)["inputs"]
        assert x.is_pinned()
        y = x.to(GPU, non_blocking=True)
        np.testing.assert_array_equal(y.cpu().numpy(), want["inputs"])


@needs_gpu
def test_jax_arrays_on_the_gpu(packed):
    jax = pytest.importorskip("jax")
    import chute.jax as cj

    paths, _ = packed
    expected = _host_batches(paths, epochs=1)
    gpu = [d for d in jax.devices() if d.platform == "gpu"]
    if not gpu:
        pytest.skip("JAX sees no GPU")
    loader = chute.Loader(paths, batch_size=4, seed=3, threads=2, device=gpu[0])
    got = list(cj.batches(loader))
    assert len(got) == len(expected)
    for arrays, want in zip(got, expected):
        assert next(iter(arrays["inputs"].devices())).platform == "gpu"
        np.testing.assert_array_equal(np.asarray(arrays["inputs"]), want["inputs"])


@needs_gpu
def test_cuda_errors_name_the_device(packed):
    paths, _ = packed
    with pytest.raises(chute.NotFoundError, match="device 'cuda:99'"):
        chute.Loader(paths, batch_size=4, device="cuda:99")
