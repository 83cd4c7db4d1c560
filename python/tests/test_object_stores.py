"""s3:// and gs:// URLs against moto's S3 server, started here on 127.0.0.1 (never the network).

Fixtures are written by zarr-python into a local folder, uploaded with boto3, and every read
through an s3:// URL must equal zarr-python's read of the local copy. Credentials come from
the environment (AWS_ENDPOINT_URL_S3, AWS_ACCESS_KEY_ID, ...), as they would for a user; the
signed-request test switches moto's IAM checks on, so a wrong signature is really refused.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

import chute

zarr = pytest.importorskip("zarr")
boto3 = pytest.importorskip("boto3")
pytest.importorskip("moto")

BUCKET = "chute-test"
N_SAMPLES, LAT, LON, CH = 23, 6, 10, 5
PAD_KEYS = 1100  # hidden objects at a group's root: its listing takes two pages


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def moto_endpoint():
    port = _free_port()
    log = open(os.environ.get("CHUTE_MOTO_LOG", os.devnull), "wb")  # noqa: SIM115 (closed below)
    server = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=log, stderr=log,
    )  # fmt: skip
    endpoint = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            urllib.request.urlopen(endpoint + "/moto-api/", timeout=2).close()
            break
        except OSError:
            if server.poll() is not None or time.monotonic() > deadline:
                server.kill()
                pytest.fail(f"moto server did not start on {endpoint}")
            time.sleep(0.2)
    try:
        yield endpoint
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait(timeout=10)
        log.close()


def _client(endpoint: str, service: str = "s3"):
    return boto3.client(service, endpoint_url=endpoint, region_name="us-east-1",
                        aws_access_key_id="testing", aws_secret_access_key="testing")  # fmt: skip


def _upload(s3, folder: Path, prefix: str) -> None:
    # public-read: moto, like S3, refuses unsigned requests to private objects.
    files = [p for p in folder.rglob("*") if p.is_file()]

    def put(path: Path) -> None:
        key = f"{prefix}/{path.relative_to(folder).as_posix()}"
        s3.upload_file(str(path), BUCKET, key, ExtraArgs={"ACL": "public-read"})

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(put, files))


@pytest.fixture(scope="module")
def bucket(moto_endpoint, tmp_path_factory):
    """Writes the fixtures locally with zarr-python, uploads them; returns local paths by name."""
    root = tmp_path_factory.mktemp("s3src")
    rng = np.random.default_rng(13)
    local = {}
    # v3 (blosc) and v2 (zlib) arrays shaped like W1's inputs/targets.
    for name, fmt in (("inputs", 3), ("targets", 2)):
        data = rng.standard_normal((N_SAMPLES, LAT, LON, CH)).astype("float32")
        path = root / f"{name}.zarr"
        kwargs = {"zarr_format": fmt}
        if fmt == 3:
            kwargs["compressors"] = [zarr.codecs.BloscCodec(cname="lz4", shuffle="shuffle")]
        arr = zarr.create_array(store=str(path), shape=data.shape, chunks=(1, LAT, LON, CH),
                                dtype="float32", **kwargs)  # fmt: skip
        arr[...] = data
        local[name] = path
    # A sharded v3 array.
    path = root / "sharded.zarr"
    arr = zarr.create_array(store=str(path), shape=(40, 36), chunks=(5, 6), shards=(20, 18),
                            dtype="int32")  # fmt: skip
    arr[...] = np.arange(40 * 36, dtype="int32").reshape(40, 36) * 7 - 300
    local["sharded"] = path
    # A group without consolidated metadata, whose root lists in two pages.
    path = root / "group.zarr"
    group = zarr.open_group(str(path), mode="w", zarr_format=3)
    for name in ("temp", "wind"):
        member = group.create_array(name, shape=(12, 8), chunks=(4, 8), dtype="float64")
        member[...] = rng.standard_normal((12, 8))
    for i in range(PAD_KEYS):
        (path / f".pad-{i:04d}").write_bytes(b"x")
    local["group"] = path

    s3 = _client(moto_endpoint)
    s3.create_bucket(Bucket=BUCKET)
    for name, folder in local.items():
        _upload(s3, folder, f"data/{folder.name}")
    return local


@pytest.fixture
def s3_env(moto_endpoint, monkeypatch, tmp_path):
    """The environment a user of an S3-compatible server sets (no ~/.aws files)."""
    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", moto_endpoint)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-credentials"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-config"))
    for name in ("AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_NO_SIGN_REQUEST", "AWS_ENDPOINT_URL",
                 "AWS_DEFAULT_REGION"):  # fmt: skip
        monkeypatch.delenv(name, raising=False)
    return moto_endpoint


def _url(name: str) -> str:
    return f"s3://{BUCKET}/data/{name}.zarr"


@pytest.mark.parametrize("name", ["inputs", "targets", "sharded"])
def test_arrays_read_exactly(bucket, s3_env, name):
    expected = zarr.open_array(str(bucket[name]), mode="r")[...]
    array = chute.open(_url(name))
    assert array.shape == expected.shape
    np.testing.assert_array_equal(array[...], expected)
    # A box that cuts chunks (and shards) reads the same.
    box = tuple(slice(1, max(2, n - 3)) for n in expected.shape)
    np.testing.assert_array_equal(array[box], expected[box])


def test_group_without_consolidated_metadata_lists_two_pages(bucket, s3_env):
    assert not (bucket["group"] / "zarr.json").read_text().count('consolidated_metadata": {')
    group = chute.open_group(_url("group"))
    local = zarr.open_group(str(bucket["group"]), mode="r")
    assert sorted(group.keys()) == ["temp", "wind"]
    for name in ("temp", "wind"):
        np.testing.assert_array_equal(group[name][...], local[name][...])


def test_loader_epoch_w1(bucket, s3_env):
    expected = {n: zarr.open_array(str(bucket[n]), mode="r")[...] for n in ("inputs", "targets")}
    loader = chute.Loader({n: _url(n) for n in ("inputs", "targets")}, batch_size=4,
                          shuffle=True, seed=3, drop_last=False, threads=2, prefetch=2)  # fmt: skip
    seen = []
    for batch in loader:
        for name in ("inputs", "targets"):
            np.testing.assert_array_equal(batch[name], expected[name][batch.indices])
        seen.extend(batch.indices[: len(batch.indices) - batch.padding].tolist())
    assert sorted(seen) == list(range(N_SAMPLES))


def test_anonymous_access(bucket, s3_env, monkeypatch):
    monkeypatch.setenv("AWS_NO_SIGN_REQUEST", "YES")
    expected = zarr.open_array(str(bucket["inputs"]), mode="r")[...]
    np.testing.assert_array_equal(chute.open(_url("inputs"))[...], expected)
    monkeypatch.delenv("AWS_NO_SIGN_REQUEST")
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")  # no credentials anywhere: unsigned too
    np.testing.assert_array_equal(chute.open(_url("inputs"))[...], expected)


def test_missing_key_bucket_and_bad_url(bucket, s3_env):
    with pytest.raises(chute.NotFoundError) as info:
        chute.open(f"s3://{BUCKET}/data/nothing-here.zarr")
    assert "nothing-here.zarr" in str(info.value)
    with pytest.raises(chute.NotFoundError) as info:
        chute.open_group("s3://no-such-bucket-here/data/group.zarr")
    assert "no-such-bucket-here" in str(info.value)
    with pytest.raises(chute.InvalidArgumentError):
        chute.open("s3://UPPER_CASE/x.zarr")


def test_missing_chunk_reads_fill_value(bucket, s3_env, moto_endpoint):
    s3 = _client(moto_endpoint)
    s3.put_object(Bucket=BUCKET, Key="data/sparse.zarr/zarr.json", Body=json.dumps({
        "zarr_format": 3, "node_type": "array", "shape": [4, 4], "data_type": "int16",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2, 2]}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": -5, "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
    }).encode())  # fmt: skip
    s3.put_object(Bucket=BUCKET, Key="data/sparse.zarr/c/1/1",
                  Body=np.arange(4, dtype="<i2").tobytes())  # fmt: skip
    got = chute.open(f"s3://{BUCKET}/data/sparse.zarr")[...]
    expected = np.full((4, 4), -5, dtype="int16")
    expected[2:, 2:] = np.arange(4).reshape(2, 2)
    np.testing.assert_array_equal(got, expected)


def _set_moto_auth(endpoint: str, count: str) -> None:
    # Not form-encoded (urllib's default for a POST body): the server would parse the body as a
    # form and moto would read an empty count (HTTP 500).
    request = urllib.request.Request(endpoint + "/moto-api/reset-auth", data=count.encode(),
                                     headers={"Content-Type": "text/plain"},
                                     method="POST")  # fmt: skip
    urllib.request.urlopen(request, timeout=10).close()


def test_signed_requests_are_checked(bucket, s3_env, moto_endpoint, monkeypatch):
    iam = _client(moto_endpoint, "iam")
    iam.create_user(UserName="reader")
    iam.put_user_policy(UserName="reader", PolicyName="read", PolicyDocument=json.dumps({
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Action": ["s3:*"], "Resource": "*"}],
    }))  # fmt: skip
    key = iam.create_access_key(UserName="reader")["AccessKey"]
    expected = zarr.open_array(str(bucket["inputs"]), mode="r")[...]
    try:
        _set_moto_auth(moto_endpoint, "0")  # from now on moto checks every request's signature
    except urllib.error.HTTPError as e:
        pytest.fail(f"moto could not switch its IAM checks on: {e}")
    try:
        monkeypatch.setenv("AWS_ACCESS_KEY_ID", key["AccessKeyId"])
        monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", key["SecretAccessKey"])
        np.testing.assert_array_equal(chute.open(_url("inputs"))[...], expected)
        assert sorted(chute.open_group(_url("group")).keys()) == ["temp", "wind"]

        monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", key["SecretAccessKey"] + "wrong")
        with pytest.raises(chute.PermissionDeniedError) as info:
            chute.open(_url("inputs"))[...]
        assert "403" in str(info.value) and "SignatureDoesNotMatch" in str(info.value)

        monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIANOSUCHKEY0000000")
        with pytest.raises(chute.PermissionDeniedError) as info:
            chute.open(_url("inputs"))[...]
        assert "InvalidAccessKeyId" in str(info.value)

        # An unsigned request is refused: S3 answers 403 AccessDenied; moto 5.2.5's server
        # fails on a request without an Authorization header once its checks are on (HTTP 500,
        # KeyError 'HTTP_AUTHORIZATION'), which chute retries and reports as unavailable.
        monkeypatch.setenv("AWS_NO_SIGN_REQUEST", "true")
        with pytest.raises((chute.PermissionDeniedError, chute.StoreUnavailableError)) as info:
            chute.open(_url("inputs"))[...]
        assert "zarr.json" in str(info.value)
    finally:
        _set_moto_auth(moto_endpoint, "inf")


def test_gs_urls_through_an_emulator_endpoint(bucket, s3_env, monkeypatch):
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", s3_env.removeprefix("http://"))
    expected = zarr.open_array(str(bucket["sharded"]), mode="r")[...]
    np.testing.assert_array_equal(chute.open(f"gs://{BUCKET}/data/sharded.zarr")[...], expected)
    group = chute.open_group(f"gs://{BUCKET}/data/group.zarr")
    assert sorted(group.keys()) == ["temp", "wind"]


def test_storage_options_from_python(bucket, s3_env, monkeypatch):
    monkeypatch.delenv("AWS_ENDPOINT_URL_S3")
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    expected = zarr.open_array(str(bucket["sharded"]), mode="r")[...]
    previous = chute.set_storage_options("s3", endpoint_url=s3_env, access_key_id="testing",
                                         secret_access_key="testing")  # fmt: skip
    try:
        assert chute.storage_options("s3")["endpoint_url"] == s3_env
        np.testing.assert_array_equal(chute.open(_url("sharded"))[...], expected)
        chute.set_storage_options("s3", endpoint_url=s3_env, anonymous=True)
        np.testing.assert_array_equal(chute.open(_url("sharded"))[...], expected)
        with pytest.raises(
            chute.InvalidArgumentError, match="s3 storage: unknown option 'endpoint'"
        ):
            chute.set_storage_options("s3", endpoint=s3_env)
        with pytest.raises(chute.InvalidArgumentError, match="http:// or https://"):
            chute.set_storage_options("s3", endpoint_url="127.0.0.1:1")
            chute.open(_url("sharded"))
        with pytest.raises(chute.InvalidArgumentError, match="anonymous"):
            chute.set_storage_options("s3", anonymous="yes")
        with pytest.raises(chute.InvalidArgumentError):
            chute.set_storage_options("ftp", endpoint_url=s3_env)
    finally:
        chute.set_storage_options("s3", **previous)


@pytest.mark.parametrize("peer", ["zarr", "dask", "tensorstore"])
def test_bench_peers_read_s3_urls_exactly(bucket, s3_env, peer):
    """`chute bench --array name=s3://...` runs its peers on the same URLs: zarr-python and dask
    through obstore, tensorstore through its s3 key-value store, signed with chute's variables."""
    from chute.bench import peers as bench_peers

    spec = {"arrays": [{"name": n, "path": _url(n)} for n in ("inputs", "targets")],
            "batches": [[3, 0, 5], [1]], "threads": 2}  # fmt: skip
    expected = {n: zarr.open_array(str(bucket[n]), mode="r")[...] for n in ("inputs", "targets")}
    reader = {"zarr": bench_peers._read_zarr, "dask": bench_peers._read_dask,
              "tensorstore": bench_peers._read_tensorstore}[peer]  # fmt: skip
    batches, sample_nbytes = reader(spec)
    assert sample_nbytes == sum(expected[n][0].nbytes for n in ("inputs", "targets"))
    for indices, batch in zip(spec["batches"], batches, strict=True):
        for name, values in zip(("inputs", "targets"), batch, strict=True):
            np.testing.assert_array_equal(values, expected[name][indices])
