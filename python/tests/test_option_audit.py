"""Every public option, case by case: a wrong type, a negative, zero or
absurd value, NaN, a bool where a count is meant, each gives chute.InvalidArgumentError naming
the option (and the value and what is allowed), before anything is opened: no binding TypeError,
no silent clamping or truncation. The Loader's own options are in test_reliability.py
(test_bad_options_name_the_option); make-dataset's in test_cli_reliability.py.

Also the per-call `follow_symlinks` of chute.open / open_group / the datasets / Loader.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from cli_support import run_cli

import chute

NAN = math.nan
MISSING = "/nonexistent/chute-option-audit"  # options are checked before this is opened


def write_array(path: Path, data: np.ndarray) -> None:
    """A Zarr v2 array, uncompressed, one chunk per index of axis 0."""
    path.mkdir(parents=True)
    meta = {"zarr_format": 2, "shape": list(data.shape), "chunks": [1, *data.shape[1:]],
            "dtype": data.dtype.str, "compressor": None, "fill_value": 0, "filters": None,
            "order": "C"}  # fmt: skip
    (path / ".zarray").write_text(json.dumps(meta))
    for i in range(data.shape[0]):
        key = ".".join([str(i)] + ["0"] * (data.ndim - 1))
        (path / key).write_bytes(np.ascontiguousarray(data[i]).tobytes())


WINDOWS = [
    ({"variables": "temperature"}, "variables"),  # a str would be read letter by letter
    ({"variables": [1]}, "variables[0]"),
    ({"variables": ["t"], "target_variables": []}, "target_variables"),
    ({"variables": ["t"], "forcings": "toa"}, "forcings"),
    ({"variables": ["t"], "statics": [None]}, "statics[0]"),
    ({"variables": ["t"], "levels": [500, NAN]}, "levels[1]"),
    ({"variables": ["t"], "levels": []}, "levels"),
    ({"variables": ["t"], "level_indices": [-1]}, "level_indices[0]"),
    ({"variables": ["t"], "level_indices": [1.5]}, "level_indices[0]"),
    ({"variables": ["t"], "input_offsets": [True]}, "input_offsets[0]"),
    ({"variables": ["t"], "input_offsets": []}, "input_offsets"),
    ({"variables": ["t"], "target_offsets": [10**12]}, "target_offsets[0]"),
    ({"variables": ["t"], "input_steps": "6h"}, "input_steps"),
    ({"variables": ["t"], "target_steps": 6}, "target_steps"),
    ({"variables": ["t"], "gaps": "ignore"}, "gaps"),
    ({"variables": ["t"], "area": (90, 0, -90)}, "area"),
    ({"variables": ["t"], "area": (90, 0, NAN, 360)}, "area[2]"),
    ({"variables": ["t"], "grid_shard": (2, 2)}, "grid_shard"),
    ({"variables": ["t"], "grid_shard": (0, 0)}, "grid_shard"),
    ({"variables": ["t"], "grid_shard": (-1, 2)}, "grid_shard[0]"),
    ({"variables": ["t"], "channels_last": "yes"}, "channels_last"),
    ({"variables": ["t"], "decode_cf": 1}, "decode_cf"),
    ({"variables": ["t"], "nan_mask": None}, "nan_mask"),
    ({"variables": ["t"], "dtype": "float64"}, "dtype"),
    ({"variables": ["t"], "dtype": np.float32}, "dtype"),
    ({"variables": ["t"], "nan": "drop"}, "nan"),
    ({"variables": ["t"], "nan": NAN}, "nan"),
    ({"variables": ["t"], "nan": math.inf}, "nan"),
    ({"variables": ["t"], "masked_points": "fill"}, "masked_points"),
    ({"variables": ["t"], "std_floor": -0.5}, "std_floor"),
    ({"variables": ["t"], "std_floor": NAN}, "std_floor"),
    ({"variables": ["t"], "mean": [0.0, NAN]}, "mean[1]"),
    ({"variables": ["t"], "std": [0.0]}, "std[0]"),
    ({"variables": ["t"], "std": [-1.0]}, "std[0]"),
    ({"variables": ["t"], "mean_suffix": None}, "mean_suffix"),
    ({"variables": ["t"], "level_coordinate": 3}, "level_coordinate"),
    ({"variables": ["t"], "statistics": 5}, "statistics"),
    ({"variables": ["t"], "time_range": (5, 2)}, "time_range"),
    ({"variables": ["t"], "time_range": (-1, 2)}, "time_range[0]"),
    ({"variables": ["t"], "follow_symlinks": "no"}, "follow_symlinks"),
    ({"variables": []}, "variables"),
]


@pytest.mark.parametrize("kwargs,named", WINDOWS, ids=[n for _, n in WINDOWS])
def test_windows_options(kwargs, named):
    with pytest.raises(chute.InvalidArgumentError) as info:
        chute.windows(MISSING, **kwargs)
    assert named in str(info.value), info.value


def test_windows_path_must_be_a_path():
    for bad, named in ((42, "path"), ([MISSING, 3], "path[1]"), ([], "store path")):
        with pytest.raises(chute.InvalidArgumentError, match=named.replace("[", r"\[")):
            chute.windows(bad, variables=["t"])


def test_windows_valid_options_reach_the_store():
    """The checks refuse only what is wrong: these options get as far as opening the store."""
    with pytest.raises(chute.NotFoundError):
        chute.windows(MISSING, variables=np.array(["t"]), levels=np.array([500.0]),
                      input_offsets=np.arange(-1, 1), target_offsets=(np.int64(1),),
                      dtype="bfloat16", nan=0, mean=[np.float32(1)], std=[2],
                      channels_last=np.bool_(False))  # fmt: skip


CROPS = [
    ({"size": 0}, "size"),
    ({"size": -64}, "size"),
    ({"size": 1.5}, "size"),
    ({"size": True}, "size"),
    ({"size": [64, 0, 64]}, "size[1]"),
    ({"size": []}, "size"),
    ({"size": 2**40}, "size"),
    ({"channel_axis": 1.0}, "channel_axis"),
    ({"channel_axis": 99}, "channel_axis"),
    ({"crops_per_epoch": 0}, "crops_per_epoch"),
    ({"crops_per_epoch": -1}, "crops_per_epoch"),
    ({"crops_per_epoch": False}, "crops_per_epoch"),
    ({"transforms": "flips"}, "transforms"),
    ({"transforms": 24}, "transforms"),
    ({"channels_last": "no"}, "channels_last"),
    ({"follow_symlinks": 0}, "follow_symlinks"),
]


@pytest.mark.parametrize("kwargs,named", CROPS, ids=[n for _, n in CROPS])
def test_crops_options(kwargs, named):
    with pytest.raises(chute.InvalidArgumentError) as info:
        chute.crops({"x": MISSING}, **kwargs)
    assert named in str(info.value), info.value


@pytest.mark.parametrize(
    "call,named",
    [
        (lambda: chute.open(42), "path"),
        (lambda: chute.open(None), "path"),
        (lambda: chute.open(MISSING, decode_cf="yes"), "decode_cf"),
        (lambda: chute.open(MISSING, follow_symlinks="no"), "follow_symlinks"),
        (lambda: chute.open_group(3.5), "path"),
        (lambda: chute.open_group(MISSING, decode_cf=None), "decode_cf"),
        (lambda: chute.open_group(MISSING, follow_symlinks=1), "follow_symlinks"),
        (lambda: chute.packed({}), "mapping"),
        (lambda: chute.packed({"x": 7}), "path"),
        (lambda: chute.packed({"x": MISSING}, follow_symlinks="x"), "follow_symlinks"),
        (lambda: chute.Loader(42), "data"),
        (lambda: chute.statistics(MISSING, "/tmp/out", threads=0), "threads"),
        (lambda: chute.statistics(MISSING, "/tmp/out", threads=-2), "threads"),
        (lambda: chute.statistics(MISSING, "/tmp/out", threads=10**6), "threads"),
        (lambda: chute.statistics(MISSING, "/tmp/out", variables="t"), "variables"),
        (lambda: chute.statistics(MISSING, "/tmp/out", variables=[]), "variables"),
        (lambda: chute.statistics(MISSING, 5), "out"),
        (lambda: chute.statistics(None, "/tmp/out"), "path"),
    ],
)
def test_open_packed_statistics_options(call, named):
    with pytest.raises(chute.InvalidArgumentError) as info:
        call()
    assert named in str(info.value), info.value


def test_loader_follow_symlinks_needs_paths(tmp_path):
    write_array(tmp_path / "x", np.zeros((4, 2), "<f4"))
    dataset = chute.packed({"x": str(tmp_path / "x")})
    with pytest.raises(chute.InvalidArgumentError, match="follow_symlinks"):
        chute.Loader(dataset, batch_size=2, follow_symlinks=False)


def test_torch_adapter_options(tmp_path):
    pytest.importorskip("torch")
    from chute.torch import ChuteIterableDataset

    write_array(tmp_path / "x", np.zeros((8, 2), "<f4"))
    paths = {"x": str(tmp_path / "x")}
    with pytest.raises(chute.InvalidArgumentError, match="batchsize"):
        ChuteIterableDataset(paths, batchsize=4)  # a misspelt option, at once
    ds = ChuteIterableDataset(paths, batch_size=4)
    for bad in (-1, 1.5, True, "2"):
        with pytest.raises(chute.InvalidArgumentError, match="epoch"):
            ds.set_epoch(bad)
    with pytest.raises(chute.InvalidArgumentError, match="next_batch"):
        ds.load_state_dict({"seed": 0, "epoch": 0, "next_batch": -1})
    with pytest.raises(chute.InvalidArgumentError, match="state"):
        ds.load_state_dict({"seed": 0})
    with pytest.raises(chute.InvalidArgumentError, match="batch_size"):
        ChuteIterableDataset(paths, batch_size=0)  # values too: at construction


TORCH_VALUES = [
    ({"batch_size": 0}, "batch_size"),
    ({"batch_size": 2.5}, "batch_size"),
    ({"shuffle": "random"}, "shuffle"),
    ({"seed": -1}, "seed"),
    ({"drop_last": 1}, "drop_last"),
    ({"threads": 10**7}, r"threads = 10000000 is outside \[0, \d+\]"),
    ({"prefetch": 0}, "prefetch"),
    ({"io_concurrency": 70000}, "io_concurrency"),
    ({"rank": -1}, "rank"),
    ({"world_size": 0}, "world_size"),
    ({"rank": 2, "world_size": 2}, r"rank = 2 is outside \[0, 1\] \(world_size = 2\)"),
    ({"pad_to_batch": "yes"}, "pad_to_batch"),
    ({"timeout": -1}, "timeout"),
    ({"timeout": NAN}, "timeout"),
    ({"verbose": 0}, "verbose"),
    ({"follow_symlinks": "no"}, "follow_symlinks"),
    ({"cache": 5}, "cache"),
    ({"cache_size": 1 << 20}, "cache_size = 1048576 needs a cache folder"),
    ({"shuffle_block": 0}, "shuffle_block"),
    ({"shuffle_window": 0}, "shuffle_window"),
]


@pytest.mark.parametrize("options,match", TORCH_VALUES, ids=lambda v: str(v)[:40])
def test_torch_adapter_checks_every_value_at_construction(options, match, monkeypatch):
    pytest.importorskip("torch")
    import chute.torch as chute_torch

    def rank_lookup():  # the one thing left for the first len()/pass: it must not run here
        raise AssertionError("torch.distributed was asked at construction")

    monkeypatch.setattr(chute_torch, "_torch_rank_world", rank_lookup)
    with pytest.raises(chute.InvalidArgumentError, match=match):
        chute_torch.ChuteIterableDataset({"x": MISSING}, **options)


def test_torch_adapter_still_takes_rank_from_torch_distributed_later(tmp_path, monkeypatch):
    pytest.importorskip("torch")
    import chute.torch as chute_torch

    write_array(tmp_path / "x", np.arange(16, dtype="<f4").reshape(8, 2))
    ds = chute_torch.ChuteIterableDataset({"x": str(tmp_path / "x")}, batch_size=2)
    # torch.distributed initialised after the dataset was made: its rank is what the loader uses.
    monkeypatch.setattr(chute_torch, "_torch_rank_world", lambda: (1, 2))
    assert len(ds) == 2  # 8 samples / 2 ranks / batch 2
    assert ds._get_loader().rank == 1 and ds._get_loader().world_size == 2
    with pytest.raises(chute.InvalidArgumentError, match="data must be a mapping"):
        chute_torch.ChuteIterableDataset(42, batch_size=2)
    with pytest.raises(chute.InvalidArgumentError, match="a Dataset was opened already"):
        chute_torch.ChuteIterableDataset(chute.packed({"x": str(tmp_path / "x")}), cache_size=1)


def test_jax_adapter_options():
    pytest.importorskip("jax")
    import chute.jax

    with pytest.raises(chute.InvalidArgumentError, match="loader"):
        chute.jax.batches({"x": MISSING})  # at the call, not at the first batch
    with pytest.raises(chute.InvalidArgumentError, match="device"):
        chute.jax.batches(chute.Loader.__new__(chute.Loader), device="gpu:0")


def test_cache_size_without_a_cache_is_an_error(tmp_path):
    write_array(tmp_path / "x", np.zeros((8, 2), "<f4"))
    path = str(tmp_path / "x")
    for call in (
        lambda: chute.open(path, cache_size=1 << 20),
        lambda: chute.open_group(str(tmp_path), cache_size=1 << 20),
        lambda: chute.Loader({"x": path}, cache_size=1 << 20),
    ):
        with pytest.raises(
            chute.InvalidArgumentError, match="cache: cache_size = 1048576 needs a cache"
        ):
            call()
    with pytest.raises(chute.InvalidArgumentError, match="a Dataset was opened already"):
        chute.Loader(chute.packed({"x": path}), cache_size=1 << 20)


@pytest.mark.parametrize(
    "name,value",
    [
        ("timeout", 1e300),
        ("timeout", NAN),
        ("connect_timeout", 0),
        ("stall_timeout", math.inf),
        ("backoff", -1),
        ("backoff_max", 1e7),
        ("max_retries", 10**12),
        ("max_in_flight", 5000),
        ("stall_min_bytes_per_s", 0),
        ("coalesce_max", 0),
        ("coalesce_gap", -1),
        ("split_size", 2**64),
    ],
)
def test_http_options_outside_their_range(name, value):
    before = chute.http_options()
    outside = rf"http: {name} (= .* is outside|must be a finite number)"
    with pytest.raises(chute.InvalidArgumentError, match=outside):
        chute.set_http_options(**{name: value})
    assert chute.http_options() == before


@pytest.mark.parametrize(
    "flag,value",
    [
        ("--batch-size", "0"),
        ("--batch-size", "-3"),
        ("--threads", "-1"),
        ("--threads", "100000"),
        ("--prefetch", "0"),
        ("--prefetch", "5000"),
        ("--batches", "0"),
        ("--trials", "0"),
        ("--warmup", "-1"),
        ("--step-ms", "-5"),
        ("--step-ms", "nan"),
        ("--peer-seconds", "-1"),
        ("--peer-seconds", "inf"),
        ("--seed", "-1"),
        ("--rank", "3"),
        ("--world-size", "0"),
        ("--crop-size", "0"),
        ("--crops-per-epoch", "-5"),
    ],
)
def test_bench_flags_name_the_flag_and_value(tmp_path, flag, value):
    write_array(tmp_path / "x", np.zeros((8, 2), "<f4"))
    result = run_cli("bench", "--array", f"x={tmp_path / 'x'}", "--mode", "io", "-q",
                     f"{flag}={value}", check=False)  # fmt: skip
    assert result.returncode != 0, result.stdout
    assert flag in result.stderr and value.lstrip("-") in result.stderr, result.stderr
    assert "samples/s" not in result.stdout


def test_stats_command_threads(tmp_path):
    result = run_cli("stats", MISSING, "--out", tmp_path / "s", "--threads", "0", check=False)
    assert result.returncode != 0 and "threads" in result.stderr, result.stderr


# --- follow_symlinks per call ---------------------------------------------------------------


@pytest.fixture
def linked(tmp_path) -> Path:
    """A group whose array `x` has chunk 1 as a symbolic link to a file outside the group."""
    root = tmp_path / "g"
    root.mkdir()
    (root / ".zgroup").write_text(json.dumps({"zarr_format": 2}))
    write_array(root / "x", np.arange(8, dtype="<f4").reshape(4, 2))
    outside = tmp_path / "outside.bin"
    outside.write_bytes(np.full(2, 9, "<f4").tobytes())
    (root / "x" / "1.0").unlink()
    (root / "x" / "1.0").symlink_to(outside)
    return root


def test_follow_symlinks_per_open(linked):
    assert chute.get_follow_symlinks()
    assert chute.open(linked / "x")[1, 0] == 9  # the default follows, as zarr-python
    confined = chute.open(linked / "x", follow_symlinks=False)
    with pytest.raises(chute.PermissionDeniedError, match="follow_symlinks is off"):
        confined[...]
    assert chute.get_follow_symlinks()  # the process-wide default is untouched
    assert chute.open(linked / "x")[1, 0] == 9
    group = chute.open_group(linked, follow_symlinks=False)
    with pytest.raises(chute.PermissionDeniedError, match="follow_symlinks is off"):
        group["x"][...]
    np.testing.assert_array_equal(group["x"][0], [0, 1])  # regular chunks still read


def test_follow_symlinks_per_call_overrides_the_process_default(linked):
    chute.set_follow_symlinks(False)
    try:
        assert chute.open(linked / "x", follow_symlinks=True)[1, 0] == 9
        with pytest.raises(chute.PermissionDeniedError):
            chute.open(linked / "x")[...]
    finally:
        chute.set_follow_symlinks(True)


def test_follow_symlinks_for_datasets_and_loader(linked):
    paths = {"x": str(linked / "x")}
    for data in (chute.packed(paths, follow_symlinks=False), paths):
        kwargs = {} if isinstance(data, chute.Dataset) else {"follow_symlinks": False}
        loader = chute.Loader(data, batch_size=4, shuffle=False, **kwargs)
        with pytest.raises(chute.PermissionDeniedError, match="follow_symlinks is off"):
            next(iter(loader))
    crops = chute.crops(paths, size=1, channel_axis=1, follow_symlinks=False)
    with pytest.raises(chute.PermissionDeniedError):
        for _ in chute.Loader(crops, batch_size=4, seed=0):
            pass
    ok = chute.Loader(paths, batch_size=4, shuffle=False)  # default: follows
    assert next(iter(ok))["x"][1, 0] == 9


@pytest.mark.parametrize("size", ["1e30", "inf", "nan", "0", "16E"])
def test_cli_cache_size_outside_its_range(size, tmp_path):
    # 1e30 and inf used to wrap around in the conversion to a byte count (undefined behaviour).
    result = run_cli("info", MISSING, "--cache", tmp_path / "c", "--cache-size", size, check=False)
    assert result.returncode != 0
    assert "--cache-size" in result.stderr
    assert not (tmp_path / "c").exists()
