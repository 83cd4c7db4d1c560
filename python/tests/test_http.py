"""Reading over HTTP: zarr-python fixtures served by nginx (or Python's http.server when nginx
is missing) on 127.0.0.1, read exactly against local reads; a fault-injecting proxy in front
(503, 429, resets, truncated bodies, wrong Content-Length, stalls) whose faults are retried
away, or end in a clear StoreUnavailableError when they never stop."""

from __future__ import annotations

import json
import os
import subprocess
import warnings
from pathlib import Path

import numpy as np
import pytest
import zarr
from http_servers import FaultProxy, StaticServer

import chute
from chute import _chute

N_SAMPLES = 23
LAT, LON = 6, 10
IN_CH, OUT_CH = 7, 3


def _chute_http_threads() -> int:
    count = 0
    for task in Path("/proc/self/task").iterdir():
        try:
            if (task / "comm").read_text().strip() == "chute-http":
                count += 1
        except OSError:
            pass
    return count


def _write(root: Path) -> dict:
    rng = np.random.default_rng(5)
    data = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, kwargs in {
            "v2.zarr": {"zarr_format": 2, "chunks": (4, 5, 3)},
            "v3.zarr": {"zarr_format": 3, "chunks": (4, 5, 3)},
            "sharded.zarr": {"zarr_format": 3, "chunks": (2, 5, 3), "shards": (4, 10, 6)},
        }.items():
            values = rng.standard_normal((9, 10, 11)).astype("float32")
            arr = zarr.create_array(store=str(root / name), shape=values.shape, dtype="float32",
                                    **kwargs)  # fmt: skip
            arr[...] = values
            data[name] = values
        group = zarr.open_group(str(root / "group.zarr"), mode="w", zarr_format=2)
        group.create_array("t", shape=(5, 4), chunks=(2, 4), dtype="int32")[...] = np.arange(
            20, dtype="int32").reshape(5, 4)  # fmt: skip
        zarr.consolidate_metadata(str(root / "group.zarr"))
        plain = zarr.open_group(str(root / "plain.zarr"), mode="w", zarr_format=3)
        plain.create_array("t", shape=(3,), chunks=(2,), dtype="int32")[...] = [1, 2, 3]
        for name, channels in (("inputs", IN_CH), ("targets", OUT_CH)):
            values = rng.standard_normal((N_SAMPLES, LAT, LON, channels)).astype("float32")
            arr = zarr.create_array(
                store=str(root / "packed" / f"{name}.zarr"), shape=values.shape,
                chunks=(1, LAT, LON, 2), dtype="float32", zarr_format=3,
                compressors=[zarr.codecs.BloscCodec(cname="lz4", shuffle="shuffle")],
            )  # fmt: skip
            arr[...] = values
        np.save(root / "plain.npy", np.arange(6))
    return data


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    root = tmp_path_factory.mktemp("http-root")
    data = _write(root)
    server = StaticServer(root)
    print(f"serving {root} with {server.kind} at {server.url}")
    previous = chute.set_http_options(max_retries=4, backoff=0.01, backoff_max=0.05)
    yield root, server, data
    chute.set_http_options(**previous)
    server.stop()


@pytest.fixture
def proxy(served):
    _, server, _ = served
    proxies = []

    def make(**kwargs) -> FaultProxy:
        p = FaultProxy(server.url, **kwargs)
        proxies.append(p)
        return p

    yield make
    for p in proxies:
        p.stop()


@pytest.mark.parametrize("name", ["v2.zarr", "v3.zarr", "sharded.zarr"])
def test_reads_over_http_equal_local_reads_and_zarr(served, name):
    root, server, data = served
    remote = chute.open(f"{server.url}/{name}")
    local = chute.open(str(root / name))
    assert remote.shape == local.shape and remote.dtype == local.dtype
    for index in [(...,), (slice(1, 8), slice(None), slice(2, 9)), (3, 4), (slice(None, None, 2),)]:
        expected = data[name][index]
        np.testing.assert_array_equal(remote[index], expected)
        np.testing.assert_array_equal(remote[index], local[index])


def test_groups_over_http_need_consolidated_metadata(served):
    _, server, _ = served
    group = chute.open_group(f"{server.url}/group.zarr")
    np.testing.assert_array_equal(group["t"][...], np.arange(20).reshape(5, 4))
    np.testing.assert_array_equal(chute.open(f"{server.url}/group.zarr/t")[...],
                                  np.arange(20).reshape(5, 4))  # fmt: skip
    with pytest.raises(chute.UnsupportedError, match="consolidated"):
        chute.open_group(f"{server.url}/plain.zarr")
    np.testing.assert_array_equal(chute.open(f"{server.url}/plain.zarr/t")[...], [1, 2, 3])


def test_missing_urls_and_local_only_formats(served):
    _, server, _ = served
    with pytest.raises(chute.NotFoundError):
        chute.open(f"{server.url}/nothing.zarr")
    with pytest.raises(chute.UnsupportedError, match="local paths only"):
        chute.open(f"{server.url}/plain.npy")
    with pytest.raises(chute.UnsupportedError, match="local paths only"):
        chute.open(f"{server.url}/file.h5/data")
    with pytest.raises(chute.UnsupportedError, match="no store for URLs"):
        chute.open("ftp://127.0.0.1/x.zarr")


def test_loader_epoch_over_http_equals_the_local_epoch(served):
    root, server, _ = served

    def epoch(base: str) -> list:
        loader = chute.Loader(
            {n: f"{base}/packed/{n}.zarr" for n in ("inputs", "targets")},
            batch_size=4, shuffle=True, seed=3, drop_last=False, threads=2, prefetch=2,
            rank=0, world_size=1,
        )  # fmt: skip
        return [(b.indices.copy(), b["inputs"].copy(), b["targets"].copy()) for b in loader]

    remote, local = epoch(server.url), epoch(str(root))
    assert len(remote) == len(local) == -(-N_SAMPLES // 4)
    for (ri, rin, rt), (li, lin, lt) in zip(remote, local):
        np.testing.assert_array_equal(ri, li)
        np.testing.assert_array_equal(rin, lin)
        np.testing.assert_array_equal(rt, lt)


@pytest.mark.parametrize(
    "fault", ["503", "429", "500", "reset", "truncate", "short_length", "long_length"]
)
def test_faults_are_retried_and_reads_come_back_exact(served, proxy, fault):
    _, _, data = served
    # A whole-object GET can only trust Content-Length (a smaller one is caught by the codec,
    # not by HTTP), so the lying-length fault goes to the sharded array's ranged reads, where
    # Content-Range and Content-Length must agree.
    name = "sharded.zarr" if fault == "short_length" else "v3.zarr"
    # Metadata first, then every second request faulty: each fault is retried away.
    p = proxy(schedule=["ok", "ok"] + [fault, "ok"] * 6)
    array = chute.open(f"{p.url}/{name}")
    np.testing.assert_array_equal(array[...], data[name])
    assert sum(1 for _, f in p.log if f == fault) == 6
    assert _chute_http_threads() == 1


def test_a_stalled_stream_is_aborted_and_retried(served, proxy):
    _, _, data = served
    previous = chute.set_http_options(stall_timeout=1)
    try:
        p = proxy(schedule=["ok", "ok", "stall"])
        np.testing.assert_array_equal(chute.open(f"{p.url}/v2.zarr")[0], data["v2.zarr"][0])
        assert [f for _, f in p.log].count("stall") == 1
    finally:
        chute.set_http_options(**previous)


@pytest.mark.parametrize("fault", ["503", "reset", "stall"])
def test_endless_faults_end_in_a_clear_error_and_leave_no_thread(served, proxy, fault):
    p = proxy(always=fault, stall_s=20)
    previous = chute.set_http_options(max_retries=2, stall_timeout=1)
    try:
        # Metadata through the proxy fails too: open() itself raises.
        with pytest.raises(chute.StoreUnavailableError) as caught:
            chute.open(f"{p.url}/v3.zarr")[...]
        message = str(caught.value)
        assert f"{p.url}/v3.zarr/" in message
        assert "key '" in message
        assert "3 attempts" in message
        if fault == "503":
            assert "HTTP 503" in message
        assert isinstance(caught.value, ConnectionError)
        assert len(p.log) == 3  # max_retries + 1, then no more requests
    finally:
        chute.set_http_options(**previous)
    assert _chute_http_threads() <= 1
    _chute._http_shutdown()
    assert _chute_http_threads() == 0
    assert not _chute._http_running()


def test_one_event_thread_for_every_store_and_a_fork_gets_its_own(served):
    _, server, data = served
    arrays = [chute.open(f"{server.url}/{n}") for n in ("v2.zarr", "v3.zarr", "sharded.zarr")]
    for a, n in zip(arrays, ("v2.zarr", "v3.zarr", "sharded.zarr")):
        np.testing.assert_array_equal(a[...], data[n])
    assert _chute_http_threads() == 1
    pid = os.fork()
    if pid == 0:  # the child reads with a fresh client, then exits without running atexit
        ok = False
        try:
            ok = np.array_equal(arrays[1][...], data["v3.zarr"])
        finally:
            os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    assert os.WEXITSTATUS(status) == 0


def test_http_options_are_validated():
    with pytest.raises(chute.InvalidArgumentError, match="http: unknown option 'retries'"):
        chute.set_http_options(retries=3)
    with pytest.raises(chute.InvalidArgumentError, match="max_in_flight"):
        chute.set_http_options(max_in_flight=0)
    with pytest.raises(chute.InvalidArgumentError, match="stall_timeout"):
        chute.set_http_options(stall_timeout=0.1)
    with pytest.raises(chute.InvalidArgumentError):
        chute.set_http_options(max_retries=1.5)
    previous = chute.set_http_options(max_in_flight=8)
    assert chute.http_options()["max_in_flight"] == 8
    chute.set_http_options(**previous)


def test_cli_info_reads_urls_and_reports_unavailable_stores(served, proxy):
    _, server, _ = served
    cli = os.environ.get("CHUTE_CLI", "chute")
    ok = subprocess.run([cli, "info", f"{server.url}/v3.zarr"], capture_output=True, text=True,
                        timeout=120, check=False)  # fmt: skip
    assert ok.returncode == 0, ok.stderr
    assert "9" in ok.stdout
    p = proxy(always="503")
    bad = subprocess.run([cli, "--http-retries", "1", "info", f"{p.url}/v3.zarr"],
                         capture_output=True, text=True, timeout=120, check=False)  # fmt: skip
    assert bad.returncode == 1
    assert "HTTP 503" in bad.stderr and "2 attempts" in bad.stderr, bad.stderr
    assert len(p.log) == 2


def test_bench_peers_read_the_same_urls(served, tmp_path):
    """`chute bench --array name=URL --compare`: zarr-python, dask and tensorstore read the same
    batches over HTTP (zarr and dask through fsspec, tensorstore through its http store)."""
    _, server, _ = served
    cli = os.environ.get("CHUTE_CLI", "chute")
    report = tmp_path / "report.json"
    run = subprocess.run(
        [cli, "bench", "--array", f"inputs={server.url}/packed/inputs.zarr",
         "--array", f"targets={server.url}/packed/targets.zarr", "--batch-size", "4",
         "--batches", "2", "--trials", "1", "--warmup", "1", "--threads", "2", "--mode", "io",
         "--no-roofline", "--compare", "zarr,dask,tensorstore", "--json", str(report)],
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    peers = {p["name"]: p for p in json.loads(report.read_text())["peers"]}
    for name in ("zarr", "dask", "tensorstore"):
        assert peers[name]["status"] == "ok", peers[name]
        assert peers[name]["samples_per_s"]["mean"] > 0


def test_https_verifies_certificates_unless_told_not_to(served):
    """HTTPS through nginx with a self-signed certificate: refused by default (naming the
    certificate problem, not retried as if transient), read exactly with verify_tls=False."""
    root, _, data = served
    server = StaticServer(root, tls=True)
    try:
        url = f"{server.url}/v3.zarr"
        with pytest.raises(chute.PermissionDeniedError, match="certificate is not trusted") as info:
            chute.open(url)
        assert url.split("//")[1].split("/")[0] in str(info.value)
        previous = chute.set_http_options(verify_tls=False)
        try:
            np.testing.assert_array_equal(chute.open(url)[...], data["v3.zarr"])
        finally:
            chute.set_http_options(**previous)
    finally:
        server.stop()
