"""`chute bench` over a dataset of many files: windows over a list or a glob of members (NetCDF
per day, FourCastNet's per-year HDF5 files, Zarr per year, members behind URLs), with the peers
that read many files (xarray.open_mfdataset + dask, FourCastNet's h5py DataLoader) building the
very windows chute builds. No timing is asserted."""

from __future__ import annotations

import json

import numpy as np
import pytest
from chute.bench import peers as bench_peers
from cli_support import run_cli

import chute

xr = pytest.importorskip("xarray")
pytest.importorskip("h5netcdf")
pytest.importorskip("torch")
from http_servers import StaticServer
from weather_files import CHANNELS, weather, write_fourcastnet, write_netcdf_days


@pytest.fixture(scope="module")
def days(tmp_path_factory):
    folder = tmp_path_factory.mktemp("bench-days")
    return folder, write_netcdf_days(folder)  # 3 members of 4 steps


def _windows_spec(members, times, variables, inputs=(-1, 0), targets=(1,), **extra):
    return {
        "workload": "windows",
        "batches": [times],
        "threads": 0,
        "windows": {
            "store": members[0], "members": members, "variables": variables,
            "target_variables": variables, "forcings": [], "computed_forcings": [],
            "statics": [], "levels": [], "input_offsets": list(inputs),
            "target_offsets": list(targets), "statistics": "",
            "normalise": False, "channels_last": True, "dtype": "float32", **extra,
        },
    }  # fmt: skip


@pytest.mark.parametrize("peer", ["h5py", "xarray"])
def test_peers_build_the_windows_chute_builds_across_members(days, peer):
    _, paths = days
    variables = ["t2m", "z"]
    data = chute.windows(paths, variables, input_steps=[-1, 0], target_steps=[1])
    times = data.time_indices().tolist()
    assert any(t % 4 == 3 for t in times)  # windows that span two files
    batch = next(iter(chute.Loader(data, batch_size=len(times), shuffle=False)))
    spec = _windows_spec(paths, times, variables)
    reader = {"h5py": bench_peers._read_windows_h5py, "xarray": bench_peers._read_windows_xarray}
    batches, sample_nbytes = reader[peer](spec)
    x, y = (np.asarray(v) for v in next(batches))
    assert x.shape == batch["inputs"].shape and y.shape == batch["targets"].shape
    np.testing.assert_allclose(x, batch["inputs"], rtol=1e-6, atol=1e-4)  # NaN fills equal too
    np.testing.assert_allclose(y, batch["targets"], rtol=1e-6, atol=1e-4)
    assert np.isnan(x).any()
    assert sample_nbytes == (x.nbytes + y.nbytes) // len(times)


def test_h5py_peer_normalises_the_selected_levels_as_chute_does(days, tmp_path):
    # Level 850 alone: its statistics are the second of the stored levels', not the first.
    folder, paths = days
    stats = str(tmp_path / "stats.zarr")
    chute.statistics(str(folder / "era5_*.nc"), stats)
    data = chute.windows(paths, ["t2m", "z"], levels=[850], statistics=stats,
                         input_steps=[-1, 0], target_steps=[1])  # fmt: skip
    times = data.time_indices().tolist()
    batch = next(iter(chute.Loader(data, batch_size=len(times), shuffle=False)))
    spec = _windows_spec(paths, times, ["t2m", "z"], levels=[850], statistics=stats)
    x, y = (np.asarray(v) for v in next(bench_peers._read_windows_h5py(spec)[0]))
    np.testing.assert_allclose(x, batch["inputs"], rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(y, batch["targets"], rtol=1e-5, atol=1e-4)


def test_h5py_peer_reads_fourcastnet_channels_as_chute_does(tmp_path):
    fcn = write_fourcastnet(tmp_path)
    pick = ["t2m", "u10", "z500"]
    many = {"file_pattern": "{year}.h5", "file_step": "6h", "channels": CHANNELS,
            "channel_array": "fields", "allow_gaps": True}  # fmt: skip
    data = chute.windows(fcn["paths"], pick, file_pattern="{year}.h5", file_step="6h",
                         channels=CHANNELS, allow_gaps=True, channels_last=False,
                         input_offsets=(-1, 0), target_offsets=(1,))  # fmt: skip
    times = data.time_indices().tolist()
    batch = next(iter(chute.Loader(data, batch_size=len(times), shuffle=False)))
    spec = _windows_spec(fcn["paths"], times, pick, channels_last=False, many_files=many)
    x, y = (np.asarray(v) for v in next(bench_peers._read_windows_h5py(spec)[0]))
    np.testing.assert_array_equal(x, batch["inputs"])
    np.testing.assert_array_equal(y, batch["targets"])
    assert x.shape == (len(times), 2 * len(pick), 6, 8)  # (N, C, H, W): FourCastNet's layout
    result = bench_peers.measure("xarray", {**spec, "batches": [times, times]})
    assert result["status"] == "skipped" and "FourCastNet" in result["note"]


def _bench(*args, report):
    run_cli(
        "bench", *args, "--batch-size", 2, "--batches", 2, "--trials", 1, "--warmup", 1,
        "--threads", 2, "--mode", "io", "--peer-seconds", 60, "--json", report,
    )  # fmt: skip
    return json.loads(report.read_text())


@pytest.mark.parametrize("form", ["list", "glob"])
def test_bench_windows_over_members_with_the_peers_and_the_roofline(days, tmp_path, form):
    folder, paths = days
    dataset = paths if form == "list" else [str(folder / "era5_*.nc")]
    report = _bench(*dataset, "--variables", "t2m", "z", "--compare", "xarray,h5py",
                    report=tmp_path / "report.json")  # fmt: skip
    windows = report["dataset"]["windows"]
    assert windows["members"] == paths  # in time order
    assert report["dataset"]["samples"] == 3 * 4 - 2
    assert report["roofline"]["combined_gbps"] > 0
    peers = {p["name"]: p for p in report["peers"]}
    for name in ("xarray", "h5py"):
        assert peers[name]["status"] == "ok", peers[name]
        assert peers[name]["ratio_samples_per_s"] > 0


def test_bench_fourcastnet_files_with_their_time_rule_and_channels(tmp_path):
    fcn = write_fourcastnet(tmp_path)
    report = _bench(
        str(tmp_path / "*.h5"), "--file-pattern", "{year}.h5", "--file-step", "6h",
        "--channels", *CHANNELS, "--allow-gaps", "--variables", "t2m", "u10", "--channels-first",
        "--compare", "h5py,xarray", "--sweep", "threads=1,2", report=tmp_path / "report.json",
    )  # fmt: skip
    assert report["dataset"]["windows"]["members"] == fcn["paths"]
    assert report["dataset"]["samples"] == (5 - 2) + (4 - 2) + (6 - 2)  # never across a gap
    peers = {p["name"]: p for p in report["peers"]}
    assert peers["h5py"]["status"] == "ok", peers["h5py"]
    assert peers["xarray"]["status"] == "skipped"
    # Contiguous members are copied out of their mappings: the roofline is that copy of the
    # same boxes (no chunks, no decode), which lands in the batch itself (channels-first).
    roofline = report["roofline"]
    assert roofline["mapped"] is True and roofline["read_gbps"] > 0
    assert roofline["combined_gbps"] == roofline["read_gbps"]
    assert roofline["decode_gbps"] == 0 and roofline["bounding_step"] == "read"
    assert roofline["decoded_bytes"] % report["dataset"]["sample_bytes"] == 0
    assert roofline["decoded_bytes"] >= 2 * report["dataset"]["sample_bytes"]
    assert report["modes"]["io"]["percent_of_roofline"] > 0
    points = report["sweeps"][0]["points"]  # the mapped copy re-measured per thread count
    assert [p["threads"] for p in points] == [1, 2]
    assert all(p["roofline_gbps"] > 0 and p["percent_of_roofline"] > 0 for p in points)
    for half in (["--file-pattern", "{year}.h5"], ["--file-step", "6h"]):  # one without the other
        bad = run_cli("bench", str(tmp_path / "*.h5"), *half, "--variables", "t2m", check=False)
        assert bad.returncode != 0 and "go together" in bad.stderr, bad.stderr


def test_windows_across_members_behind_urls(tmp_path):
    import pandas as pd

    paths = []  # three Zarr members of four consecutive 6-hourly steps each
    for k in range(3):
        times = pd.date_range("2020-01-01", periods=12, freq="6h")[4 * k : 4 * k + 4]
        paths.append(str(tmp_path / f"part{k}.zarr"))
        weather(times, seed=k).to_zarr(paths[-1], mode="w", zarr_format=2, consolidated=True)
    server = StaticServer(tmp_path)
    try:
        urls = [f"{server.url}/{p.rsplit('/', 1)[1]}" for p in paths]
        variables = ["t2m", "z"]
        local = chute.windows(paths, variables, input_steps=[-1, 0], target_steps=[1])
        remote = chute.windows(urls, variables, input_steps=[-1, 0], target_steps=[1])
        assert len(remote) == len(local) == 10
        want = next(iter(chute.Loader(local, batch_size=len(local), shuffle=False)))
        got = next(iter(chute.Loader(remote, batch_size=len(remote), shuffle=False)))
        for name in ("inputs", "targets"):
            np.testing.assert_array_equal(got[name], want[name])
        report = _bench(*urls, "--variables", *variables, report=tmp_path / "report.json")
        assert report["dataset"]["windows"]["members"] == urls
        assert report["dataset"]["samples"] == 10
        assert report["modes"]["io"]["samples_per_s"]["mean"] > 0
    finally:
        server.stop()
