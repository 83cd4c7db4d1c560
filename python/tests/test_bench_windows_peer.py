"""The windows peer of `chute bench --windows --compare xarray`: it builds the very windows chute
builds (so the comparison is of equal work), and the bench runs it."""

from __future__ import annotations

import json

import numpy as np
import pytest
from chute.bench import peers as bench_peers
from chute.weather_store import make_weather_store
from cli_support import run_cli

import chute

pytest.importorskip("xarray")

VARIABLES = ["temperature", "geopotential", "2m_temperature"]
STATICS = ["land_sea_mask"]


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    root = tmp_path_factory.mktemp("windows_peer")
    path = str(root / "era5.zarr")
    make_weather_store(path, times=10, levels=3, lat=9, lon=16)
    stats = str(root / "stats.zarr")
    chute.statistics(path, stats)
    return path, stats


@pytest.mark.parametrize("channels_last", [True, False])
@pytest.mark.parametrize("levels", [[], [150, 50]])
def test_xarray_peer_builds_the_windows_chute_builds(store, channels_last, levels):
    path, stats = store
    options = {
        "input_variables": VARIABLES,
        "target_variables": VARIABLES[:2],
        "forcings": ["2m_temperature"],
        "statics": STATICS,
        "input_steps": [-1, 0],
        "target_steps": [1, 2],
        "statistics": stats,
        "channels_last": channels_last,
    }
    if levels:
        options["levels"] = levels
    data = chute.windows(path, **options)
    loader = chute.Loader(data, batch_size=3, shuffle=False, rank=0, world_size=1, verbose=False)
    batch = next(iter(loader))
    times = data.time_indices()[:3].tolist()

    spec = {
        "batches": [times],
        "windows": {
            "store": path,
            "variables": VARIABLES,
            "target_variables": VARIABLES[:2],
            "forcings": ["2m_temperature"],
            "statics": STATICS,
            "levels": levels,
            "input_offsets": [-1, 0],
            "target_offsets": [1, 2],
            "statistics": stats,
            "normalise": False,
            "channels_last": channels_last,
            "dtype": "float32",
        },
    }
    batches, sample_nbytes = bench_peers._read_windows_xarray(spec)
    x, y = next(batches)
    assert x.shape == batch["inputs"].shape and y.shape == batch["targets"].shape
    np.testing.assert_allclose(x, batch["inputs"], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(y, batch["targets"], rtol=1e-5, atol=1e-5)
    assert sample_nbytes == (x.nbytes + y.nbytes) // 3


def test_bench_windows_runs_the_xarray_peer(store, tmp_path):
    path, stats = store
    report_path = tmp_path / "report.json"
    run_cli(
        "bench", path, "--windows", "--variables", *VARIABLES, "--statistics", stats,
        "--batch-size", 2, "--batches", 3, "--trials", 1, "--warmup", 1, "--threads", 2,
        "--mode", "io", "--compare", "xarray,zarr", "--json", report_path,
    )  # fmt: skip
    peers = {p["name"]: p for p in json.loads(report_path.read_text())["peers"]}
    assert peers["xarray"]["status"] == "ok", peers["xarray"]
    assert peers["xarray"]["samples_per_s"]["mean"] > 0
    assert peers["xarray"]["ratio_samples_per_s"] > 0
    assert peers["zarr"]["status"] == "skipped" and "windows" in peers["zarr"]["note"]


COMPUTED = ["cos_local_time", "sin_day_of_year", "toa_radiation"]


def test_xarray_peer_builds_the_computed_forcings_chute_builds(store):
    path, stats = store
    data = chute.windows(path, VARIABLES, input_steps=[0], target_steps=[1, 3],
                         forcings=["2m_temperature"], computed_forcings=COMPUTED,
                         statistics=stats)  # fmt: skip
    loader = chute.Loader(data, batch_size=4, shuffle=True, seed=1, rank=0, world_size=1,
                          verbose=False)  # fmt: skip
    batch = next(iter(loader))
    times = data.time_indices()[batch.indices].tolist()
    spec = {
        "batches": [times],
        "windows": {
            "store": path, "variables": VARIABLES, "forcings": ["2m_temperature"],
            "computed_forcings": COMPUTED, "statics": [], "levels": [], "input_offsets": [0],
            "target_offsets": [1, 3], "statistics": stats, "normalise": False,
            "channels_last": True, "dtype": "float32",
        },
    }  # fmt: skip
    x, y = next(bench_peers._read_windows_xarray(spec)[0])
    assert x.shape == batch["inputs"].shape and y.shape == batch["targets"].shape
    names = data.channel_names("inputs")
    assert names[-len(COMPUTED) * 2 :] == [f"{n}/t+{k}" for k in (1, 3) for n in COMPUTED]
    np.testing.assert_allclose(x, batch["inputs"], rtol=1e-5, atol=1e-3)
    np.testing.assert_allclose(y, batch["targets"], rtol=1e-5, atol=1e-5)
    assert x[..., -1].max() > 1000  # the sun is up somewhere at t+3


def test_bench_windows_computes_forcings_and_its_peer_too(store, tmp_path):
    path, stats = store
    report_path = tmp_path / "report.json"
    run_cli(
        "bench", path, "--windows", "--variables", *VARIABLES, "--statistics", stats,
        "--target-steps", 1, 2, "--computed-forcings", *COMPUTED,
        "--batch-size", 2, "--batches", 3, "--trials", 1, "--warmup", 1, "--threads", 2,
        "--mode", "io", "--compare", "xarray", "--json", report_path,
    )  # fmt: skip
    report = json.loads(report_path.read_text())
    peers = {p["name"]: p for p in report["peers"]}
    assert peers["xarray"]["status"] == "ok", peers["xarray"]
    assert report["dataset"]["windows"]["computed_forcings"] == COMPUTED
