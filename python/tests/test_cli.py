"""`chute info` and the command line's conventions: exact output structure of the human table,
the --json schema, agreement with zarr-python about metadata and stored chunks, error messages and
exit codes (1 for failures, 2 for usage errors)."""

from __future__ import annotations

import importlib.util
import json
import os

import numpy as np
import pytest
import zarr
from cli_support import run_cli, stored_bytes

ARRAY_FIELDS = [
    "path",
    "node",
    "format",
    "shape",
    "chunk shape",
    "dtype",
    "fill value",
    "dimensions",
    "codecs",
    "chunk grid",
    "logical size",
    "stored size",
    "decoded chunk",
    "stored chunk",
    "attributes",
]
ARRAY_KEYS = {
    "name",
    "node_type",
    "format",
    "zarr_format",
    "shape",
    "chunk_shape",
    "inner_chunk_shape",
    "dtype",
    "numpy_dtype",
    "fill_value",
    "dimension_names",
    "codecs",
    "codec_specs",
    "chunks",
    "logical_nbytes",
    "stored_nbytes",
    "ratio",
    "attributes",
}
CHUNK_KEYS = {
    "grid",
    "count",
    "checked",
    "stored",
    "decoded_nbytes",
    "inner_decoded_nbytes",
    "stored_nbytes_mean",
    "stored_nbytes_min",
    "stored_nbytes_max",
}
GROUP_KEYS = {
    "name",
    "node_type",
    "format",
    "zarr_format",
    "attributes",
    "groups",
    "arrays",
    "totals",
}


@pytest.fixture(scope="module")
def packed(tmp_path_factory):
    out = tmp_path_factory.mktemp("cli") / "packed"
    run_cli(
        "make-dataset",
        "packed",
        out,
        "-q",
        "--samples",
        2,
        "--lat",
        10,
        "--lon",
        12,
        "--input-channels",
        6,
        "--target-channels",
        2,
        "--chunk-channels",
        4,
    )
    return out


def field_names(text: str) -> list:
    return [line.split("  ")[0] for line in text.splitlines() if line]


def test_info_array_table(packed):
    result = run_cli("info", packed / "inputs")
    assert result.stderr == ""
    assert field_names(result.stdout) == ARRAY_FIELDS
    fields = {line.split("  ")[0]: line[16:] for line in result.stdout.splitlines()}
    assert fields["path"] == str(packed / "inputs")
    assert fields["node"] == "array"
    assert fields["format"] == "zarr v2"
    assert fields["shape"] == "(2, 10, 12, 6)"
    assert fields["chunk shape"] == "(1, 10, 12, 4)"
    assert fields["dtype"] == "float32 (<f4)"
    assert fields["fill value"] == "NaN"
    assert fields["dimensions"] == "sample, lat, lon, inputs_channel"
    assert "blosc" in fields["codecs"] and "lz4" in fields["codecs"]
    assert fields["chunk grid"] == "(2, 1, 1, 2): 4 chunks, 4 stored"
    assert fields["logical size"] == "5.76 kB (5760 bytes)"
    assert (
        fields["stored size"].startswith(f"{stored_bytes(packed / 'inputs')} B")
        or f"({stored_bytes(packed / 'inputs')} bytes)" in fields["stored size"]
    )
    assert ", ratio " in fields["stored size"] and fields["stored size"].endswith(":1")
    assert fields["decoded chunk"] == "1.92 kB"
    assert fields["stored chunk"].startswith("mean ")


def test_info_array_json_agrees_with_zarr(packed):
    info = json.loads(run_cli("info", packed / "targets", "--json").stdout)
    assert set(info) == ARRAY_KEYS
    assert set(info["chunks"]) == CHUNK_KEYS
    z = zarr.open_array(packed / "targets", mode="r")
    assert info["node_type"] == "array"
    assert info["format"] == "zarr"
    assert info["zarr_format"] == 2
    assert tuple(info["shape"]) == z.shape
    assert tuple(info["chunk_shape"]) == z.chunks
    assert info["inner_chunk_shape"] is None
    assert np.dtype(info["numpy_dtype"]) == z.dtype
    assert info["dtype"] == "float32"
    assert info["fill_value"] == "NaN"
    assert info["dimension_names"] == ["sample", "lat", "lon", "targets_channel"]
    assert info["chunks"]["grid"] == [2, 1, 1, 1]
    assert info["chunks"]["count"] == 2 and info["chunks"]["stored"] == 2
    assert info["chunks"]["decoded_nbytes"] == 10 * 12 * 2 * 4
    assert info["logical_nbytes"] == z.nbytes
    assert info["stored_nbytes"] == stored_bytes(packed / "targets")
    assert info["ratio"] == pytest.approx(z.nbytes / info["stored_nbytes"])
    assert (
        info["chunks"]["stored_nbytes_min"]
        <= info["chunks"]["stored_nbytes_mean"]
        <= info["chunks"]["stored_nbytes_max"]
    )
    assert [c["name"] for c in info["codec_specs"]][-1] == "blosc"


def test_info_group(packed):
    text = run_cli("info", packed).stdout
    lines = text.splitlines()
    assert field_names(text)[:6] == [
        "path",
        "node",
        "format",
        "attributes",
        "groups",
        "arrays",
    ]
    header = lines[lines.index("") + 1].split()
    assert header[:4] == ["name", "shape", "chunks", "dtype"]
    rows = [line.split()[0] for line in lines[lines.index("") + 2 :]]
    # The data arrays and the coordinates xarray shows (sample, grid, channel numbers).
    members = ["inputs", "inputs_channel", "lat", "lon", "sample", "targets", "targets_channel"]
    assert rows == members

    info = json.loads(run_cli("info", packed, "--json").stdout)
    assert set(info) == GROUP_KEYS
    assert info["node_type"] == "group"
    assert info["attributes"]["chute_workload"] == "packed"
    assert [a["name"] for a in info["arrays"]] == members
    assert all(set(a) == ARRAY_KEYS for a in info["arrays"])
    assert info["totals"]["arrays"] == len(members)
    assert info["totals"]["stored_nbytes"] == sum(a["stored_nbytes"] for a in info["arrays"])


def test_info_names_the_format_of_hdf5_and_npy(tmp_path):
    h5py = pytest.importorskip("h5py")
    with h5py.File(tmp_path / "f.h5", "w") as f:
        f.create_dataset("grp/x", data=np.arange(24, dtype="<i4").reshape(4, 6), chunks=(2, 3))
    fields = {
        line.split("  ")[0]: line[16:]
        for line in run_cli("info", tmp_path / "f.h5" / "grp" / "x").stdout.splitlines()
    }
    assert fields["format"] == "hdf5"
    assert fields["chunk grid"] == "(2, 2): 4 chunks, 4 stored"
    info = json.loads(run_cli("info", tmp_path / "f.h5", "--json").stdout)
    assert info["node_type"] == "group" and info["format"] == "hdf5"
    assert info["zarr_format"] is None
    assert [a["name"] for a in info["arrays"]] == ["grp/x"]
    np.save(tmp_path / "a.npy", np.zeros((3, 5), "<f4"))
    info = json.loads(run_cli("info", tmp_path / "a.npy", "--json").stdout)
    assert info["format"] == "npy" and info["zarr_format"] is None
    assert info["stored_nbytes"] == 60


def test_info_variables_group_lists_subgroups(tmp_path):
    out = tmp_path / "v"
    run_cli(
        "make-dataset",
        "variables",
        out,
        "-q",
        "--times",
        2,
        "--levels",
        2,
        "--lat",
        4,
        "--lon",
        8,
        "--format",
        3,
    )
    info = json.loads(run_cli("info", out, "--json").stdout)
    assert info["zarr_format"] == 3
    assert sorted(info["groups"]) == ["mean", "std"]
    names = [a["name"] for a in info["arrays"]]
    assert "temperature" in names and "time" in names
    scalar = json.loads(run_cli("info", out / "mean" / "2m_temperature", "--json").stdout)
    assert scalar["shape"] == [] and scalar["chunks"]["count"] == 1
    assert scalar["chunks"]["stored"] == 1


def test_info_sharded_array(tmp_path):
    path = tmp_path / "sharded.zarr"
    a = zarr.create_array(
        path,
        shape=(8, 12),
        chunks=(2, 3),
        shards=(4, 6),
        dtype="int16",
        fill_value=-1,
        dimension_names=["y", "x"],
    )
    a[:5, :] = np.arange(60, dtype="int16").reshape(5, 12)
    info = json.loads(run_cli("info", path, "--json").stdout)
    assert info["chunk_shape"] == [4, 6]
    assert info["inner_chunk_shape"] == [2, 3]
    assert info["fill_value"] == -1
    assert info["chunks"]["grid"] == [2, 2]
    assert info["chunks"]["stored"] == 4  # every shard holds written inner chunks
    assert info["chunks"]["inner_decoded_nbytes"] == 2 * 3 * 2
    assert "sharding" in info["codecs"] or "shard" in info["codecs"]
    text = run_cli("info", path).stdout
    assert "inner chunks    (2, 3)" in text
    assert "dimensions      y, x" in text


def test_info_missing_chunks_are_counted(tmp_path):
    path = tmp_path / "sparse.zarr"
    a = zarr.create_array(
        path, shape=(10,), chunks=(2,), dtype="float64", fill_value=float("nan"), zarr_format=2
    )
    a[2:4] = 1.0
    info = json.loads(run_cli("info", path, "--json").stdout)
    assert info["chunks"]["count"] == 5 and info["chunks"]["stored"] == 1
    assert info["fill_value"] == "NaN"


def test_info_missing_path_exits_1(tmp_path):
    missing = tmp_path / "nope.zarr"
    result = run_cli("info", missing, check=False)
    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr.startswith("chute: error: ")
    assert str(missing) in result.stderr
    assert len(result.stderr.splitlines()) == 1


def test_info_not_zarr_exits_1(tmp_path):
    (tmp_path / "plain").mkdir()
    result = run_cli("info", tmp_path / "plain", "--json", check=False)
    assert result.returncode == 1
    assert result.stderr.startswith("chute: error: ")


@pytest.mark.parametrize(
    "args", [[], ["info"], ["info", "a", "b"], ["info", "--bogus", "x"], ["frobnicate"]]
)
def test_usage_errors_exit_2(args):
    result = run_cli(*args, check=False)
    assert result.returncode == 2
    assert result.stderr.startswith("chute: error: ")


def test_help_and_version():
    result = run_cli("--help")
    for format_name in ("Zarr v2/v3", "HDF5/NetCDF-4", ".npy"):  # every format chute reads
        assert format_name in result.stdout
        assert format_name in run_cli("info", "--help").stdout
    for command in ["info", "make-dataset", "bench"]:
        assert command in result.stdout
    assert "--chunk-channels" in run_cli("make-dataset", "--help").stdout
    assert run_cli("--version").stdout.strip().startswith("chute ")


def test_bench_model_torch_sets_the_step_from_a_real_model(packed, tmp_path):
    pytest.importorskip("torch")
    report_path = tmp_path / "report.json"
    run_cli(
        "bench", packed, "--batch-size", 2, "--batches", 2, "--trials", 1, "--warmup", 1,
        "--threads", 1, "--model", "torch", "--no-roofline", "-q", "--json", report_path,
    )  # fmt: skip
    report = json.loads(report_path.read_text())
    model = report["model"]
    assert model["status"] == "ok", model
    assert model["batch_size"] == 2 and model["parameters"] > 0
    assert len(model["step_ms"]) >= 1 and min(model["step_ms"]) > 0
    assert report["settings"]["step_ms"] == pytest.approx(np.mean(model["step_ms"]))
    assert {"compute", "full"} <= set(report["modes"])


def test_bench_model_rejects_unknown_models(packed):
    result = run_cli("bench", packed, "--model", "keras", check=False)
    assert result.returncode == 2


def test_bench_volume_crops_with_roofline_and_peers(tmp_path):
    """W3: the bench reads crops with rotations; the peers read the same crops from the HDF5
    form they write themselves (DALI hidden: its wheel is never installed for tests)."""
    pytest.importorskip("h5py")
    folder = tmp_path / "vol"
    run_cli("make-dataset", "volume", folder, "--size", 24, "--chunk", 8, "--codec", "none")
    report_path = tmp_path / "report.json"
    env_hidden = os.environ.get("CHUTE_BENCH_HIDE_PEERS")
    os.environ["CHUTE_BENCH_HIDE_PEERS"] = "dali"
    try:
        result = run_cli(
            "bench", folder, "--volume-form", "zarr", "--crop-size", 8, "--batch-size", 4,
            "--batches", 2, "--trials", 1, "--warmup", 1, "--threads", 2, "--mode", "io",
            "--compare", "torch,dali,h5py,zarr", "--json", report_path,
        )  # fmt: skip
    finally:
        if env_hidden is None:
            del os.environ["CHUTE_BENCH_HIDE_PEERS"]
        else:
            os.environ["CHUTE_BENCH_HIDE_PEERS"] = env_hidden
    report = json.loads(report_path.read_text())
    assert report["dataset"]["workload"] == "volume"
    assert report["dataset"]["volume"]["size"] == 8
    roofline = report["crop_roofline"]
    assert roofline["samples"] == 12 and roofline["combined_samples_per_s"] > 0
    assert roofline["loop_samples_per_s"] > 0
    assert "Crop roofline" in result.stdout
    peers = {p["name"]: p for p in report["peers"]}
    assert peers["h5py"]["status"] == "ok", peers["h5py"]
    assert peers["dali"]["status"] == "skipped" and "dali" in peers["dali"]["note"].lower()
    assert peers["zarr"]["status"] == "skipped"
    if importlib.util.find_spec("torch") is not None:
        assert peers["torch"]["status"] == "ok", peers["torch"]
    assert (folder / "volume.h5").exists()  # written by the peers from the Zarr form
