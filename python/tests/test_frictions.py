"""What training scripts hit: state_dict() names what the next iteration does (after `break`,
after an epoch's end, before any loop), seed=None, padding in the adapters' batches, the torch
adapter's keys=, and no nanobind leak report at exit."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import chute

N = 20


def write_array(path: Path, data: np.ndarray) -> None:
    path.mkdir(parents=True)
    meta = {"zarr_format": 2, "shape": list(data.shape), "chunks": [1, *data.shape[1:]],
            "dtype": data.dtype.str, "compressor": None, "fill_value": 0, "filters": None,
            "order": "C"}  # fmt: skip
    (path / ".zarray").write_text(json.dumps(meta))
    for i in range(data.shape[0]):
        (path / f"{i}.0").write_bytes(np.ascontiguousarray(data[i]).tobytes())


@pytest.fixture
def paths(tmp_path) -> dict[str, str]:
    write_array(tmp_path / "x", np.arange(N * 3, dtype="<f4").reshape(N, 3))
    write_array(tmp_path / "y", np.arange(N, dtype="<i8").reshape(N, 1))
    return {"x": str(tmp_path / "x"), "y": str(tmp_path / "y")}


def position(state):
    return state["epoch"], state["next_batch"]


def indices(batches):
    return [b.indices.tolist() for b in batches]


def test_state_dict_is_where_the_next_loop_starts(paths):
    loader = chute.Loader(paths, batch_size=4, seed=1)
    assert position(loader.state_dict()) == (0, 0)  # before any loop
    for i, _ in enumerate(loader):
        if i == 1:
            assert position(loader.state_dict()) == (0, 2)  # inside: the batch after this one
            break
    state = loader.state_dict()
    assert position(state) == (1, 0)  # after `break`: the next `for` runs epoch 1
    following = indices(loader)
    resumed = chute.Loader(paths, batch_size=4, seed=1)
    resumed.load_state_dict(state)
    assert indices(resumed) == following
    assert position(loader.state_dict()) == (2, 0)  # after an epoch's end


def test_state_dict_after_a_break_out_of_an_explicit_epoch(paths):
    loader = chute.Loader(paths, batch_size=4, seed=1)
    for _ in loader.epoch(3, 1):
        break
    assert position(loader.state_dict()) == (4, 0)
    assert next(iter(loader)).epoch == 4


def test_seed_none_draws_a_seed_and_reports_it(paths):
    first = chute.Loader(paths, batch_size=4, seed=None)
    second = chute.Loader(paths, batch_size=4, seed=None)
    seeds = first.state_dict()["seed"], second.state_dict()["seed"]
    assert seeds[0] != seeds[1]  # 2^-64 to collide
    again = chute.Loader(paths, batch_size=4, seed=seeds[0])
    assert indices(again) == indices(first)


def test_torch_batches_carry_padding_and_keys_give_tuples(paths):
    pytest.importorskip("torch")
    from chute.torch import ChuteIterableDataset

    batches = list(ChuteIterableDataset(paths, batch_size=8, shuffle=False, drop_last=False))
    assert [b["padding"] for b in batches] == [0, 0, 4]
    pairs = list(ChuteIterableDataset(paths, keys=("x", "y"), batch_size=8, shuffle=False))
    x, y = pairs[0]
    assert tuple(x.shape) == (8, 3) and tuple(y.shape) == (8, 1)
    assert y[:, 0].tolist() == list(range(8))
    with pytest.raises(chute.InvalidArgumentError, match="keys"):
        ChuteIterableDataset(paths, keys="xy", batch_size=8)
    with pytest.raises(chute.InvalidArgumentError, match=r"keys \['z'\] are not in the batch"):
        next(iter(ChuteIterableDataset(paths, keys=("x", "z"), batch_size=8)))


def test_jax_batches_carry_padding(paths):
    pytest.importorskip("jax")
    from chute.jax import batches

    loader = chute.Loader(paths, batch_size=8, shuffle=False)
    assert [b["padding"] for b in batches(loader)] == [0, 0, 4]


def test_no_nanobind_leak_is_reported_at_exit(paths, tmp_path):
    script = textwrap.dedent(
        f"""
        import chute
        paths = {paths!r}
        loader = chute.Loader(paths, batch_size=4, seed=None, threads=2)
        for batch in loader:
            kept = batch["x"]
            break
        for batch in loader:
            pass
        state = loader.state_dict()
        dataset = chute.packed(paths)
        other = chute.Loader(dataset, batch_size=4)
        it = iter(other)
        first = next(it)
        array = chute.open(paths["x"])
        values = array[2:5]
        """
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            timeout=300, check=False)  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "leaked" not in result.stderr, result.stderr


ADAPTERS_AT_EXIT = {
    "torch": """
        import chute.torch
        ds = chute.torch.ChuteIterableDataset(paths, batch_size=4, seed=0)
        it = iter(ds)
        first = next(it)  # a generator left suspended, its loader's threads running
        pairs = chute.torch.ChuteIterableDataset(paths, keys=("x", "y"), batch_size=4)
        x, y = next(iter(pairs))
        """,
    "jax": """
        import chute.jax, jax.numpy as jnp
        loader = chute.Loader(paths, batch_size=4, seed=0)
        gen = chute.jax.batches(loader)
        batch = next(gen)
        total = jnp.sum(batch["x"])  # a jax.Array sharing the batch buffer, alive at exit
        kept = [b["y"] for b in chute.jax.batches(chute.Loader(paths, batch_size=4))]
        """,
    "daemon thread": """
        import threading
        loader = chute.Loader(paths, batch_size=4, seed=0, threads=2)
        running = threading.Event()
        def prefetch():  # a training script's prefetch thread, never stopped
            while True:
                for batch in loader:
                    running.set()
        threading.Thread(target=prefetch, daemon=True).start()
        running.wait()
        """,
    "exception": """
        loader = chute.Loader(paths, batch_size=4, seed=0)
        array = chute.open(paths["x"])
        options = chute.LoaderOptions(batch_size=3)
        for batch in loader:
            raise SystemExit(0)  # leaves mid-iteration, the batch and loader in the frame
        """,
}


@pytest.mark.parametrize("case", sorted(ADAPTERS_AT_EXIT))
def test_no_leak_report_at_exit_with_adapters_threads_or_exceptions(case, paths):
    # A daemon thread holds its loader for good (the interpreter never stops it): nanobind's
    # report is turned off then, and only then; the other cases free everything.
    if case in ("torch", "jax"):
        pytest.importorskip(case)
    script = f"import chute\npaths = {paths!r}\n" + textwrap.dedent(ADAPTERS_AT_EXIT[case])
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            timeout=300, check=False)  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "leaked" not in result.stderr, result.stderr
    assert "terminate" not in result.stderr, result.stderr


JAX_FREES_AT_EXIT = """
import sys, time
import chute, jax, jax.numpy as jnp

batch = next(iter(chute.Loader({"x": sys.argv[1]}, batch_size=4, seed=0)))
x = jnp.from_dlpack(batch.dlpack("x"))  # shares the batch buffer


@jax.jit
def heavy(a):
    m = jnp.ones((1000, 1000), jnp.float32) * a.ravel()[0]
    return jax.lax.fori_loop(0, 40, lambda i, m: jnp.tanh(m @ m * 1e-3), m).sum()


heavy(x).block_until_ready()  # compiled


class AtFinalization:
    def __init__(self, result):
        self.result = result

    def __del__(self):
        # The interpreter is finalizing: JAX's thread finishes the computation meanwhile and
        # drops the last reference to the batch buffer there, calling its DLPack deleter.
        self.result.block_until_ready()
        time.sleep(0.5)  # for the deleter to run (ordering only: nothing is timed)


keep = AtFinalization(heavy(x))  # dispatched: JAX's thread holds x until it finishes
del x, batch
print("exiting", flush=True)
"""


def test_jax_freeing_a_batch_on_its_own_thread_at_exit_does_not_abort(paths):
    # A deleter that took the GIL there (nanobind's DLPack export) ended JAX's thread with
    # pthread_exit during finalization: "terminate called without an active exception".
    pytest.importorskip("jax")
    result = subprocess.run([sys.executable, "-c", JAX_FREES_AT_EXIT, paths["x"]],
                            capture_output=True, text=True, timeout=300, check=False)  # fmt: skip
    assert result.stdout.strip() == "exiting", result.stderr
    assert "terminate" not in result.stderr, result.stderr
    assert result.returncode == 0, result.stderr


def test_indices_choose_a_subset_a_stride_or_an_order(paths):
    order = [7, 3, 19, 0, 12, 5]
    kept = chute.Loader(paths, batch_size=2, shuffle=False, indices=order)
    assert len(kept) == 3
    batches = list(kept)
    assert [i for b in batches for i in b.indices.tolist()] == order  # the given order
    assert batches[0]["y"][:, 0].tolist() == [7, 3]  # the data of those samples
    every_third = chute.Loader(paths, batch_size=7, shuffle=True, seed=4, indices=range(0, N, 3))
    drawn = [i for b in every_third for i in b.indices.tolist()]
    assert sorted(drawn) == list(range(0, N, 3)) and drawn != list(range(0, N, 3))


def test_indices_are_sharded_and_resumable(paths):
    subset = list(range(1, N, 2))  # 10 samples
    shards = [
        [i for b in chute.Loader(paths, batch_size=5, seed=2, indices=subset, rank=r,
                                 world_size=2) for i in b.indices.tolist()]
        for r in range(2)
    ]  # fmt: skip
    assert sorted(shards[0] + shards[1]) == subset
    loader = chute.Loader(paths, batch_size=2, seed=2, indices=subset)
    whole = indices(chute.Loader(paths, batch_size=2, seed=2, indices=subset))
    iterator = iter(loader)
    taken = [next(iterator).indices.tolist() for _ in range(2)]
    state = loader.state_dict()
    resumed = chute.Loader(paths, batch_size=2, seed=2, indices=subset)
    resumed.load_state_dict(state)
    assert taken + indices(resumed) == whole
    with pytest.raises(chute.InvalidArgumentError, match="another dataset"):
        chute.Loader(paths, batch_size=2, seed=2, indices=subset[::-1]).load_state_dict(state)


@pytest.mark.parametrize(
    "value,message",
    [
        ([3, N], f"loader: indices[1] = {N} is outside [0, {N - 1}]"),
        ([-1], "loader: indices[0] = -1 is outside [0, "),
        ([], "loader: indices must not be empty"),
        ([1.5], "loader: indices[0] must be an integer"),
        ("12", "loader: indices must be a list of integers"),
    ],
)
def test_bad_indices_name_the_option(paths, value, message):
    with pytest.raises(chute.InvalidArgumentError) as info:
        chute.Loader(paths, batch_size=1, indices=value)
    assert message in str(info.value)


def test_torch_adapter_state_after_a_break_is_where_the_next_pass_starts(paths):
    pytest.importorskip("torch")
    from chute.torch import ChuteIterableDataset

    ds = ChuteIterableDataset(paths, batch_size=4, seed=3, rank=0, world_size=1)
    for _ in ds:
        break
    state = ds.state_dict()
    assert position(state) == (1, 0)
    following = [b["indices"].tolist() for b in ds]
    resumed = ChuteIterableDataset(paths, batch_size=4, seed=3, rank=0, world_size=1)
    resumed.load_state_dict(state)
    assert [b["indices"].tolist() for b in resumed] == following
