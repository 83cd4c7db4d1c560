"""`chute make-dataset`: the files it writes are read by zarr-python / xarray / NumPy exactly as
intended (shapes, chunks, dtypes, dimension names, consolidated metadata, statistics), values do
not depend on codec, chunking or threads, and chute agrees with zarr-python about them."""

from __future__ import annotations

import json
import os
import subprocess
import warnings
from pathlib import Path

import h5py
import hdf5plugin  # noqa: F401  (registers the blosc filter with h5py)
import numpy as np
import pytest
import zarr
from cli_support import run_cli, stored_bytes

import chute

REPO = Path(__file__).resolve().parents[2]
ZARR2_PYTHON = Path(os.environ.get("CHUTE_ZARR2_PYTHON", REPO / ".venv-zarr2" / "bin" / "python"))

PACKED = [
    "--samples",
    3,
    "--lat",
    46,
    "--lon",
    90,
    "--input-channels",
    7,
    "--target-channels",
    3,
    "--chunk-channels",
    5,
]


def make(kind: str, out: Path, *args: object) -> subprocess.CompletedProcess:
    return run_cli("make-dataset", kind, out, "--quiet", *args)


def dims_of(array) -> list:
    if array.metadata.zarr_format == 2:
        return list(array.attrs["_ARRAY_DIMENSIONS"])
    return list(array.metadata.dimension_names or [])


@pytest.mark.parametrize("fmt", [2, 3])
def test_packed_layout(tmp_path, fmt):
    out = tmp_path / "packed"
    result = make("packed", out, *PACKED, "--format", fmt)
    assert "wrote packed dataset" in result.stdout
    group = zarr.open_group(out, mode="r")
    for name, channels, chunk_channels in [("inputs", 7, 5), ("targets", 3, 3)]:
        a = group[name]
        assert a.shape == (3, 46, 90, channels)
        assert a.chunks == (1, 46, 90, chunk_channels)
        assert a.dtype == np.float32
        assert a.metadata.zarr_format == fmt
        assert dims_of(a) == ["sample", "lat", "lon", f"{name}_channel"]
        values = a[:]
        assert np.isfinite(values).all()
        assert values.std() > 0
        ratio = values.nbytes / stored_bytes(out / name)
        assert 1.0 < ratio < 3.0, ratio  # blosc-lz4 + shuffle on smooth fields + noise
    manifest = json.loads((out / "chute.json").read_text())
    assert manifest["workload"] == "packed"
    assert manifest["zarr_format"] == fmt
    xarray = pytest.importorskip("xarray")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # chute.json is not a Zarr node; v3 consolidated metadata
        ds = xarray.open_zarr(out, consolidated=None)  # before: one dimension name, two lengths
    assert dict(ds.sizes) == {"sample": 3, "lat": 46, "lon": 90, "inputs_channel": 7,
                              "targets_channel": 3}  # fmt: skip
    np.testing.assert_array_equal(ds["targets"].values, group["targets"][:])
    # Coordinates: sample and channel numbers, the grid's latitudes and longitudes.
    assert set(ds.coords) == {"sample", "lat", "lon", "inputs_channel", "targets_channel"}
    assert set(ds.data_vars) == {"inputs", "targets"}
    np.testing.assert_array_equal(ds["sample"].values, np.arange(3))
    np.testing.assert_array_equal(ds["inputs_channel"].values, np.arange(7))
    np.testing.assert_array_equal(ds["targets_channel"].values, np.arange(3))
    assert ds["lat"].values[0] == 90 and ds["lat"].values[-1] == -90
    assert ds["lat"].attrs["units"] == "degrees_north"
    np.testing.assert_allclose(ds["lon"].values, np.arange(90) * 4.0)
    assert ds["inputs"].sel(sample=1, inputs_channel=6).shape == (46, 90)
    assert manifest["arrays"] == {"inputs": "inputs", "targets": "targets"}
    assert manifest["created_by"] == "chute make-dataset"
    assert manifest["options"]["samples"] == 3
    assert manifest["options"]["codec"] == "blosc-lz4"


def test_values_independent_of_codec_chunking_and_threads(tmp_path):
    make("packed", tmp_path / "a", *PACKED)
    reference = zarr.open_group(tmp_path / "a", mode="r")["inputs"][:]
    variants = {
        "none": ["--codec", "none"],
        "zstd3": ["--codec", "zstd", "--format", 3],
        "gzip": ["--codec", "gzip", "--threads", 1],
        "blosc-zstd": ["--codec", "blosc-zstd"],
        "whole": ["--chunk-channels", 0],
    }
    for name, extra in variants.items():
        base = PACKED[:-2] if "--chunk-channels" in extra else PACKED
        make("packed", tmp_path / name, *base, *extra)
        got = zarr.open_group(tmp_path / name, mode="r")["inputs"][:]
        np.testing.assert_array_equal(got, reference, err_msg=name)
    assert (tmp_path / "whole" / "inputs" / "0.0.0.0").exists()
    assert zarr.open_group(tmp_path / "whole", mode="r")["inputs"].chunks == (1, 46, 90, 7)
    make("packed", tmp_path / "seed", *PACKED, "--seed", 5)
    other = zarr.open_group(tmp_path / "seed", mode="r")["inputs"][:]
    assert not np.array_equal(other, reference)


@pytest.mark.parametrize("fmt", [2, 3])
def test_variables_open_in_xarray(tmp_path, fmt):
    xr = pytest.importorskip("xarray")
    out = tmp_path / "vars"
    make("variables", out, "--times", 5, "--levels", 4, "--lat", 9, "--lon", 16, "--format", fmt)
    ds = xr.open_zarr(out, consolidated=True)
    assert dict(ds.sizes) == {"time": 5, "level": 4, "lat": 9, "lon": 16}
    for name in ["temperature", "u_component_of_wind", "v_component_of_wind", "geopotential"]:
        assert ds[name].dims == ("time", "level", "lat", "lon")
        assert ds[name].encoding["chunks"] == (1, 4, 9, 16)
        assert ds[name].dtype == np.float32
    for name in ["2m_temperature", "mean_sea_level_pressure"]:
        assert ds[name].dims == ("time", "lat", "lon")
    assert np.issubdtype(ds.time.dtype, np.datetime64)
    steps = np.diff(ds.time.values).astype("timedelta64[h]").astype(int)
    assert (steps == 6).all()
    assert ds.level.values.tolist() == [50, 366, 683, 1000]
    assert ds.lat.values[0] == 90 and ds.lat.values[-1] == -90
    assert ds.lon.values[0] == 0
    assert np.isfinite(ds.temperature.values).all()
    # Temperature decreases with height and geopotential increases: plausible profiles.
    profile = ds.temperature.mean(["time", "lat", "lon"]).values
    assert profile[0] < profile[-1]

    mean = xr.open_zarr(out, group="mean")
    std = xr.open_zarr(out, group="std")
    for name in ds.data_vars:
        dims = [d for d in ds[name].dims if d != "level"]
        np.testing.assert_allclose(mean[name].values, ds[name].mean(dims).values, rtol=1e-5)
        np.testing.assert_allclose(std[name].values, ds[name].std(dims).values, rtol=1e-3)
    normalised = (ds - mean) / std
    assert abs(float(normalised.temperature.mean())) < 1e-3
    assert abs(float(normalised.geopotential.std()) - 1) < 1e-3

    manifest = json.loads((out / "chute.json").read_text())
    assert manifest["workload"] == "variables"
    assert manifest["options"]["variables_3d"] == [
        "temperature",
        "u_component_of_wind",
        "v_component_of_wind",
        "geopotential",
    ]
    assert manifest["options"]["variables_2d"] == ["2m_temperature", "mean_sea_level_pressure"]


def test_loader_normalises_variables_with_their_mean_and_std_arrays(tmp_path):
    xr = pytest.importorskip("xarray")
    import chute

    out = tmp_path / "vars"
    make("variables", out, "--times", 6, "--levels", 3, "--lat", 5, "--lon", 8)
    variables = ["temperature", "2m_temperature"]
    data = chute.windows(
        out,
        variables,
        input_offsets=(0,),
        target_offsets=(1,),
        mean_suffix="mean/{}",
        std_suffix="std/{}",
    )
    loader = chute.Loader(data, batch_size=2, shuffle=False, drop_last=True, threads=2)
    ds = xr.open_zarr(out, consolidated=True)
    mean = xr.open_zarr(out, group="mean")
    std = xr.open_zarr(out, group="std")
    for batch in loader:
        for row, t in enumerate(batch.indices):
            channels = []
            for name in variables:
                value = (ds[name].values[t] - mean[name].values[..., None, None]) / std[
                    name
                ].values[..., None, None]
                channels.extend(value if value.ndim == 3 else [value])
            expected = np.stack(channels, axis=-1)
            np.testing.assert_allclose(batch["inputs"][row], expected, rtol=1e-5, atol=1e-5)


def test_volume_zarr_and_npy_agree(tmp_path):
    out = tmp_path / "vol"
    make("volume", out, "--size", 20, "--chunk", 8, "--npy")
    group = zarr.open_group(out, mode="r")
    for name, channels in [("input", 4), ("target", 5)]:
        a = group[name]
        assert a.shape == (channels, 20, 20, 20)
        assert a.chunks == (1, 8, 8, 8)
        assert dims_of(a) == ["channel", "x", "y", "z"]
        npy = np.load(out / f"{name}.npy")
        assert npy.dtype == np.float32
        assert npy.shape == (20, 20, 20, channels)  # channels last, as DALI reads it
        np.testing.assert_array_equal(np.moveaxis(a[:], 0, -1), npy)
    with h5py.File(out / "volume.h5", "r") as f:
        for name, dataset in [("input", "Nbody"), ("target", "Hydro")]:
            assert f[dataset].chunks == (1, 8, 8, 8)  # --chunk given: chunked, --codec filters
            np.testing.assert_array_equal(f[dataset][:], group[name][:])
            np.testing.assert_array_equal(chute.open(out / "volume.h5" / dataset)[:], f[dataset][:])
    manifest = json.loads((out / "chute.json").read_text())
    assert manifest["options"]["npy"] == {"input": "input.npy", "target": "target.npy"}
    assert manifest["options"]["hdf5"]["file"] == "volume.h5"


def test_volume_inner_chunks_are_zarr_v3_shards_zarr_python_reads(tmp_path):
    # Shards of (1, 8, 8, 8) holding (1, 4, 4, 4) inner chunks, a partial edge shard (20 = 2 * 8
    # + 4): zarr-python 3 reads what chute wrote, equal to chute's own read and to the
    # unsharded form of the same seed.
    make("volume", tmp_path / "plain", "--size", 20, "--chunk", 8, "--format", 3, "--no-hdf5")
    out = tmp_path / "sharded"
    make("volume", out, "--size", 20, "--chunk", 8, "--inner-chunk", 4, "--format", 3)
    assert (out / "volume.h5").exists()  # --chunk makes it chunked; --no-hdf5 leaves it out
    assert not (tmp_path / "plain" / "volume.h5").exists()
    group = zarr.open_group(out, mode="r")
    plain = zarr.open_group(tmp_path / "plain", mode="r")
    for name, channels in [("input", 4), ("target", 5)]:
        a = group[name]
        assert a.shape == (channels, 20, 20, 20)
        assert a.shards == (1, 8, 8, 8) and a.chunks == (1, 4, 4, 4)
        values = a[:]
        np.testing.assert_array_equal(values, plain[name][:])
        np.testing.assert_array_equal(chute.open(out / name)[:], values)
        np.testing.assert_array_equal(
            chute.open(out / name)[:, 3:17, 5:13, 1:19], values[:, 3:17, 5:13, 1:19]
        )
    ds = chute.crops(
        {"inputs": out / "input", "targets": out / "target"},
        size=6,
        channel_axis=0,
        crops_per_epoch=16,
        transforms="rotations",
    )
    batch = next(iter(chute.Loader(ds, batch_size=16, shuffle=True, seed=3)))
    for k, (x, y, z) in enumerate(batch.crops):
        crop = group["target"][:, x : x + 6, y : y + 6, z : z + 6]
        expected = chute.apply_cube_symmetry(crop, int(batch.transforms[k]))
        np.testing.assert_array_equal(batch["targets"][k], expected)
    assert json.loads((out / "chute.json").read_text())["options"]["inner_chunk"] == 4


def test_volume_inner_chunks_need_zarr_v3(tmp_path):
    result = run_cli(
        "make-dataset", "volume", tmp_path / "v", "--size", 8, "--inner-chunk", 4, check=False
    )
    assert result.returncode != 0
    assert "--format" in result.stderr


def test_volume_hdf5_is_contiguous_by_default(tmp_path):
    out = tmp_path / "vol"
    make("volume", out, "--size", 12, "--codec", "none")
    group = zarr.open_group(out, mode="r")
    with h5py.File(out / "volume.h5", "r") as f:
        assert f["Nbody"].shape == (4, 12, 12, 12) and f["Hydro"].shape == (5, 12, 12, 12)
        for name, dataset in [("input", "Nbody"), ("target", "Hydro")]:
            assert f[dataset].chunks is None
            assert f[dataset].dtype == np.float32
            np.testing.assert_array_equal(f[dataset][:], group[name][:])


# make-dataset writes volume.h5 itself (no libhdf5): h5py (HDF5 2.x) must read exactly what
# libhdf5 would have written, whatever the codec, and chute reads it the same.
H5_FILTERS = {
    "none": [],
    "gzip": [(h5py.h5z.FILTER_SHUFFLE, (4,)), (h5py.h5z.FILTER_DEFLATE, (5,))],
    "zstd": [(32015, (3,))],
    "blosc-lz4": [(32001, (2, 2, 4, 4 * 6 * 6 * 6, 5, 1, 1))],
    "blosc-zstd": [(32001, (2, 2, 4, 4 * 6 * 6 * 6, 3, 1, 5))],
}


@pytest.mark.parametrize("codec", list(H5_FILTERS))
def test_volume_hdf5_written_natively_reads_exactly_in_h5py(tmp_path, codec):
    # 13 = 2 * 6 + 1: partial edge chunks; 4 * 3 * 3 * 3 = 108 and 5 * 27 = 135 chunks.
    out = tmp_path / "vol"
    make("volume", out, "--size", 13, "--chunk", 6, "--codec", codec)
    group = zarr.open_group(out, mode="r")
    assert (out / "volume.h5").read_bytes()[:9] == b"\x89HDF\r\n\x1a\n\x03"  # superblock 3
    with h5py.File(out / "volume.h5", "r") as f:
        assert sorted(f) == ["Hydro", "Nbody"]
        assert dict(f.attrs) == {}
        for name, dataset, channels in [("input", "Nbody", 4), ("target", "Hydro", 5)]:
            d = f[dataset]
            assert d.shape == (channels, 13, 13, 13) and d.dtype == np.dtype("<f4")
            assert d.chunks == (1, 6, 6, 6)
            assert d.maxshape == d.shape and d.fillvalue == 0
            plist = d.id.get_create_plist()
            got = [plist.get_filter(i)[0:3:2] for i in range(plist.get_nfilters())]
            assert got == H5_FILTERS[codec], got
            assert d.id.get_num_chunks() == channels * 27
            info = d.id.get_chunk_info(channels * 27 - 1)
            assert info.chunk_offset == (channels - 1, 12, 12, 12) and info.filter_mask == 0
            values = d[:]
            np.testing.assert_array_equal(values, group[name][:])
            np.testing.assert_array_equal(chute.open(out / "volume.h5" / dataset)[:], values)
            box = (slice(1, 3), slice(2, 11), slice(5, 13), slice(0, 7))
            np.testing.assert_array_equal(chute.open(out / "volume.h5" / dataset)[box], values[box])


def test_volume_hdf5_pages_a_large_chunk_index_as_libhdf5_does(tmp_path):
    # 4 * 6^3 = 864 and 5 * 6^3 = 1,080 chunks: Hydro's fixed array is paged (past 1,024).
    out = tmp_path / "vol"
    make("volume", out, "--size", 12, "--chunk", 2, "--codec", "gzip")
    group = zarr.open_group(out, mode="r")
    with h5py.File(out / "volume.h5", "r") as f:
        for name, dataset, channels in [("input", "Nbody", 4), ("target", "Hydro", 5)]:
            assert f[dataset].id.get_num_chunks() == channels * 216
            np.testing.assert_array_equal(f[dataset][:], group[name][:])
            np.testing.assert_array_equal(chute.open(out / "volume.h5" / dataset)[:], f[dataset][:])


def test_volume_hdf5_contiguous_holds_the_data_after_the_metadata(tmp_path):
    out = tmp_path / "vol"
    make("volume", out, "--size", 10, "--codec", "none")
    size = (out / "volume.h5").stat().st_size
    with h5py.File(out / "volume.h5", "r") as f:
        offsets = sorted((f[d].id.get_offset(), f[d].id.get_storage_size()) for d in f)
    assert offsets[0][0] >= 48 and offsets[0][0] + offsets[0][1] <= offsets[1][0]
    assert offsets[1][0] + offsets[1][1] == size  # nothing after the data, nothing missing


@pytest.mark.skipif(not ZARR2_PYTHON.exists(), reason="no zarr 2.x environment")
def test_zarr2_python_reads_v2_output(tmp_path):
    make("packed", tmp_path / "p", *PACKED)
    expected = zarr.open_group(tmp_path / "p", mode="r")["targets"][:]
    np.save(tmp_path / "expected.npy", expected)
    script = (
        "import sys, numpy as np, zarr\n"
        "assert zarr.__version__.startswith('2'), zarr.__version__\n"
        "g = zarr.open_consolidated(sys.argv[1], mode='r')\n"
        "np.testing.assert_array_equal(g['targets'][:], np.load(sys.argv[2]))\n"
        "print('ok')\n"
    )
    result = subprocess.run(
        [str(ZARR2_PYTHON), "-c", script, str(tmp_path / "p"), str(tmp_path / "expected.npy")],
        check=False,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    assert "ok" in result.stdout


def test_chute_reads_what_zarr_reads(tmp_path):
    chute = pytest.importorskip("chute")
    if not hasattr(chute, "open"):
        pytest.skip("the chute extension is not built")
    for fmt in (2, 3):
        out = tmp_path / f"p{fmt}"
        make("packed", out, *PACKED, "--format", fmt)
        for name in ("inputs", "targets"):
            expected = zarr.open_group(out, mode="r")[name][:]
            np.testing.assert_array_equal(chute.open(str(out / name))[...], expected)


def test_refuses_to_overwrite_unless_forced(tmp_path):
    out = tmp_path / "p"
    make("packed", out, *PACKED)
    again = run_cli("make-dataset", "packed", out, "-q", *PACKED, check=False)
    assert again.returncode == 1
    assert again.stderr.startswith("chute: error: ")
    assert "--force" in again.stderr
    make("packed", out, *PACKED, "--seed", 3, "--force")
    assert json.loads((out / "chute.json").read_text())["options"]["seed"] == 3
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "precious.txt").write_text("keep me")
    forced = run_cli("make-dataset", "packed", foreign, "-q", "--force", *PACKED, check=False)
    assert forced.returncode == 1
    assert (foreign / "precious.txt").read_text() == "keep me"


@pytest.mark.parametrize(
    "args",
    [
        ["make-dataset", "cubes", "OUT"],
        ["make-dataset", "packed"],
        ["make-dataset", "packed", "OUT", "--codec", "lzma"],
        ["make-dataset", "packed", "OUT", "--format", "4"],
        ["make-dataset", "volume", "OUT", "--samples", "3"],
        ["make-dataset", "variables", "OUT", "--npy"],
    ],
)
def test_usage_errors_exit_2(tmp_path, args):
    args = [str(tmp_path / a) if a == "OUT" else a for a in args]
    result = run_cli(*args, check=False)
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith("chute: error: ")
    assert not (tmp_path / "OUT").exists()


def test_invalid_sizes_exit_1(tmp_path):
    result = run_cli("make-dataset", "packed", tmp_path / "p", "-q", "--samples", 0, check=False)
    assert result.returncode == 1
    assert "--samples" in result.stderr and "got 0" in result.stderr


def test_progress_lines_when_not_a_terminal(tmp_path):
    result = run_cli("make-dataset", "packed", tmp_path / "p", *PACKED)
    lines = [line for line in result.stderr.splitlines() if line]
    assert lines and lines[-1].startswith("make-dataset packed: 100%")
    assert all("/s" in line for line in lines)
