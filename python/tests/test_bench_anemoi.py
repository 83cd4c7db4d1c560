"""`chute bench STORE --anemoi`: samples cut as anemoi-training cuts them (the same samples as
chute.anemoi, missing dates never sampled), the roofline, and the peers: tensorstore (which
builds the very samples chute builds) and anemoi-datasets in its own environment. No timing is
asserted."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest
from anemoi_small import write_anemoi
from chute.bench import peers as bench_peers
from cli_support import run_cli
from conftest import REPO

import chute

ANEMOI_PYTHON = Path(
    os.environ.get("CHUTE_ANEMOI_PYTHON", REPO / ".venv-anemoi" / "bin" / "python")
)


def _has_anemoi() -> bool:
    if not ANEMOI_PYTHON.exists():
        return False
    probe = [str(ANEMOI_PYTHON), "-c", "import anemoi.datasets"]
    return subprocess.run(probe, capture_output=True, check=False).returncode == 0


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> str:
    return write_anemoi(tmp_path_factory.mktemp("bench-anemoi") / "small.zarr", missing=(11,))


def _bench(store, *args, report):
    run_cli(
        "bench", store, "--anemoi", *args, "--batch-size", 2, "--batches", 2, "--trials", 1,
        "--warmup", 1, "--threads", 2, "--mode", "io", "--peer-seconds", 120, "--json", report,
    )  # fmt: skip
    return json.loads(report.read_text())


@pytest.mark.parametrize("variables_first", [False, True])
def test_tensorstore_peer_builds_the_samples_chute_anemoi_builds(store, variables_first):
    select = ["v3", "v0", "v1"]
    ds = chute.anemoi(store, select=select, multistep_input=2, rollout=2,
                      variables_first=variables_first)  # fmt: skip
    batch = next(iter(chute.Loader(ds, batch_size=4, shuffle=True, seed=2)))
    references = ds.sample_date_indices()[batch.indices].tolist()
    spec = {
        "batches": [references], "threads": 2,
        "anemoi": {"store": store, "variables": select, "multistep_input": 2, "rollout": 2,
                   "timeincrement": 1, "normalise": "mean-std", "dtype": "float32",
                   "variables_first": variables_first},
    }  # fmt: skip
    batches, sample_nbytes = bench_peers._read_anemoi_tensorstore(spec)
    x, y = next(batches)
    np.testing.assert_allclose(x, batch["inputs"], rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(y, batch["targets"], rtol=1e-6, atol=1e-6)
    assert sample_nbytes == (x.nbytes + y.nbytes) // 4


def test_anemoi_peer_casts_to_bfloat16_as_ml_dtypes_does():
    # The peer's environment has no ml_dtypes: its bfloat16 is rounded by hand, and its batch
    # bytes are bfloat16's (they were float32's, twice the bytes in its GB/s).
    import ml_dtypes
    from chute.bench import anemoi_peer

    rng = np.random.default_rng(0)
    special = [np.nan, np.inf, -np.inf, 0.0, -0.0, 3.4e38, -3.4e38, 1e-40, 1 + 2**-8, 1 + 3 * 2**-8]
    noise = np.frombuffer(rng.integers(0, 2**32, 20000, dtype=np.uint32).tobytes(), dtype="f4")
    x = np.concatenate([rng.standard_normal(20000).astype("f4") * 1e3, np.float32(special), noise])
    got = anemoi_peer._cast(x, "bfloat16")
    assert got.dtype == np.uint16 and got.nbytes == 2 * x.size
    values = got.view(ml_dtypes.bfloat16).astype("f4")
    with np.errstate(invalid="ignore"):
        expected = x.astype(ml_dtypes.bfloat16).astype("f4")
    np.testing.assert_array_equal(values, expected)  # NaN where NaN, every other bit pattern

    anemoi_peer._STATE.update(
        ds=rng.standard_normal((6, 3, 1, 5)).astype("f4"),  # dates, variables, ensemble, cells
        spec={"timeincrement": 1, "multistep_input": 2, "rollout": 1, "dtype": "bfloat16"},
    )
    try:
        x_in, x_out = anemoi_peer._sample(3)
    finally:
        anemoi_peer._STATE.clear()
    assert x_in.shape == (2, 1, 5, 3) and x_out.shape == (1, 1, 5, 3) and x_in.dtype == np.uint16


def test_bench_anemoi_cuts_chute_anemoi_samples_with_roofline_and_peers(
    store, tmp_path, monkeypatch
):
    if _has_anemoi():  # the peer looks where this test looks, wherever chute is installed
        monkeypatch.setenv("CHUTE_ANEMOI_PYTHON", str(ANEMOI_PYTHON))
    else:
        monkeypatch.delenv("CHUTE_ANEMOI_PYTHON", raising=False)
    report = _bench(store, "--multistep-input", 2, "--rollout", 1, "--compare",
                    "anemoi,tensorstore,zarr", report=tmp_path / "report.json")  # fmt: skip
    dataset = report["dataset"]
    ds = chute.anemoi(store, multistep_input=2, rollout=1)
    assert dataset["workload"] == "anemoi"
    assert dataset["samples"] == len(ds)  # date 11 is missing: windows touching it are not cut
    assert dataset["anemoi"]["variables"] == ds.variables
    roofline = report["roofline"]
    assert roofline["combined_gbps"] > 0
    assert roofline["place_step"].startswith("anemoi placement: select, normalise, transpose")
    assert roofline["place_gbps"] > 0 and roofline["place_copy_gbps"] > 0
    peers = {p["name"]: p for p in report["peers"]}
    assert peers["tensorstore"]["status"] == "ok", peers["tensorstore"]
    assert peers["zarr"]["status"] == "skipped" and "anemoi" in peers["zarr"]["note"]
    if _has_anemoi():
        assert peers["anemoi"]["status"] == "ok", peers["anemoi"]
        assert peers["anemoi"]["ratio_samples_per_s"] > 0
    else:
        assert peers["anemoi"]["status"] == "skipped", peers["anemoi"]
        assert "CHUTE_ANEMOI_PYTHON" in peers["anemoi"]["note"]


def test_bench_anemoi_selects_and_refuses_what_it_cannot_cut(store, tmp_path):
    report = _bench(store, "--variables", "v4", "v2", "--multistep-input", 3, "--rollout", 2,
                    "--timeincrement", 2, "--dtype", "bfloat16",
                    report=tmp_path / "report.json")  # fmt: skip
    ds = chute.anemoi(store, select=["v4", "v2"], multistep_input=3, rollout=2, timeincrement=2)
    assert report["dataset"]["samples"] == len(ds)
    assert report["dataset"]["anemoi"]["variables"] == ["v4", "v2"]
    for args, words in [
        (["--variables", "nope"], "'nope' is not a variable"),
        (["--multistep-input", 30], "no sample fits"),
        (["--anemoi-normalise", "min-max"], "mean-std or none"),
        ([store], "--anemoi: one store"),  # DATASET twice: concat is chute.anemoi's
    ]:
        bad = run_cli("bench", store, "--anemoi", *args, "--mode", "io", check=False)
        assert bad.returncode != 0 and words in bad.stderr, bad.stderr


@pytest.mark.parametrize("damage", ["off-grid missing date", "zero stdev"])
def test_bench_anemoi_refuses_inconsistent_attributes(tmp_path, damage):
    import zarr

    store = write_anemoi(tmp_path / "bad.zarr")
    group = zarr.open_group(store, mode="r+")
    if damage == "off-grid missing date":  # 03:00 between two 6-hourly dates
        group.attrs["missing_dates"] = ["2021-03-01T03:00:00"]
        words = "missing date '2021-03-01T03:00:00' is not one of the dates"
    else:
        stdev = group["stdev"][...]
        stdev[1] = 0
        group["stdev"][...] = stdev
        words = "variable 'v1' has mean 2 and stdev 0: cannot normalise it"
    bad = run_cli("bench", store, "--anemoi", "--mode", "io", "--batches", 1, check=False)
    assert bad.returncode != 0 and words in bad.stderr, bad.stderr


@pytest.mark.parametrize("frequency", ["6", 6])
def test_bench_anemoi_reads_a_bare_frequency_as_hours(tmp_path, frequency):
    # anemoi-datasets' spelling: a number alone counts hours (a missing date then lies on them).
    import zarr

    store = write_anemoi(tmp_path / "hours.zarr", missing=(11,))
    zarr.open_group(store, mode="r+").attrs["frequency"] = frequency
    report = _bench(store, report=tmp_path / "report.json")
    assert report["dataset"]["samples"] == len(chute.anemoi(store, multistep_input=2, rollout=1))
