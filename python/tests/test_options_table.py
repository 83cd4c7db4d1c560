"""The option tables of the core (each struct's fields()) are the one declaration of every
option: the Python signatures, docstrings and docs/reference/options.md are generated from them
and must be current; the values are checked by the core, naming the option as Python spells it."""

from __future__ import annotations

import inspect
import subprocess
import sys
from pathlib import Path

import pytest

import chute
from chute import _chute

REPO = Path(__file__).resolve().parents[2]


def test_generated_signatures_docstrings_and_reference_are_current():
    result = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "gen_options.py"), "--check"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize(
    "function,struct,skip",
    [
        (chute.Loader, "LoaderOptions", set()),
        (chute.crops, "CropOptions", set()),
        (chute.windows, "WindowOptions", {"variables"}),
    ],
)
def test_signatures_have_every_public_field_keyword_only_with_its_default(function, struct, skip):
    parameters = inspect.signature(function).parameters
    for field in getattr(_chute, struct)._fields():
        if field["internal"] or field["name"] in skip:  # computed from, or an alias of, others
            continue
        parameter = parameters[field["name"]]
        assert parameter.kind is inspect.Parameter.KEYWORD_ONLY, field["name"]
        assert parameter.default == field["default"], field["name"]
        assert field["help"] and field["help"][:30] in " ".join(function.__doc__.split())


@pytest.mark.parametrize(
    "kwargs,message",
    [
        ({"prefetch": 0}, "loader: prefetch = 0 is outside [1, 4096]"),
        ({"batch_size": 1.5}, "loader: batch_size must be an integer, got 1.5"),
        ({"batch_size": True}, "loader: batch_size must be an integer, got True"),
        ({"drop_last": 1}, "loader: drop_last must be True or False, got 1"),
        ({"timeout": float("nan")}, "loader: timeout must be a finite number, got nan"),
        ({"seed": 2**64}, "loader: seed = 18446744073709551616 is outside"),
        ({"io_concurrency": 0}, "or None (the store's preference"),
        ({"nonsense": 1}, "loader: unknown option 'nonsense' (known: batch_size, shuffle"),
    ],
)
def test_the_core_checks_each_value_and_names_the_option(kwargs, message):
    with pytest.raises(chute.InvalidArgumentError) as info:
        _chute.LoaderOptions(**kwargs)
    assert message in str(info.value)


def test_options_objects_round_trip_and_none_means_the_automatic_default():
    options = _chute.LoaderOptions(batch_size=4, threads=None, timeout=2.5)
    assert (options.batch_size, options.threads, options.timeout) == (4, None, 2.5)
    options.threads = 3
    assert options.threads == 3
    assert "batch_size=4" in repr(options)
    crops = _chute.CropOptions(size=[8, 8, 8], channel_axis=None, transforms="rotations")
    assert (crops.size, crops.channel_axis, crops.transforms) == ((8, 8, 8), None, "rotations")
    with pytest.raises(chute.InvalidArgumentError, match=r"crops: size\[1\] = 0 is outside"):
        crops.size = [8, 0, 8]


@pytest.mark.parametrize(
    "call,message",
    [
        (lambda: chute.set_http_options(timeout=-1), "http: timeout = -1 is outside [0.001, "),
        (lambda: chute.set_http_options(max_retries=1.5), "http: max_retries must be an integer"),
        (lambda: chute.set_http_options(verify_tls=1), "http: verify_tls must be True or False"),
        (lambda: chute.set_http_options(backoff=10), "backoff_max = 5 is outside [10, "),
        (lambda: chute.set_http_options(retries=3), "http: unknown option 'retries' (known: "),
        (lambda: chute.set_storage_options("s3", anonymous="yes"),
         "s3 storage: anonymous must be True or False, got 'yes'"),
        (lambda: chute.set_storage_options("s3", addressing_style="dns"),
         "s3 storage: addressing_style = 'dns' is not one of 'path', 'virtual'"),
        (lambda: chute.set_storage_options("s3", token="t"), "s3 storage: token is for gs://"),
        (lambda: chute.set_storage_options("gs", region="x"), "gs storage: region is for s3://"),
        (lambda: chute.set_storage_options("ftp"), "storage options are for 's3' or 'gs'"),
        (lambda: chute.open("x", cache_size=10), "cache: cache_size = 10 needs a cache folder"),
        (lambda: chute.open("x", cache="c", cache_size=0), "cache: cache_size = 0 is outside"),
        (lambda: chute.open("x", cache=5), "cache: cache must be a path"),
    ],
)  # fmt: skip
def test_http_storage_and_cache_options_are_checked_by_the_core(call, message):
    http, s3, gs = chute.http_options(), chute.storage_options("s3"), chute.storage_options("gs")
    with pytest.raises(chute.InvalidArgumentError) as info:
        call()
    assert message in str(info.value)
    # A refused call changes nothing.
    assert chute.http_options() == http
    assert (chute.storage_options("s3"), chute.storage_options("gs")) == (s3, gs)


def test_http_and_storage_options_round_trip_through_their_tables():
    names = [f["name"] for f in _chute.HttpOptions._fields()]
    assert set(chute.http_options()) == set(names)
    previous = chute.set_http_options(max_in_flight=8, verify_tls=False)
    try:
        assert chute.http_options()["max_in_flight"] == 8
        assert chute.http_options()["verify_tls"] is False
    finally:
        chute.set_http_options(**previous)
    assert chute.http_options() == previous
    before = chute.set_storage_options("gs", endpoint_url="http://127.0.0.1:1", anonymous=False)
    try:
        assert chute.storage_options("gs") == {"endpoint_url": "http://127.0.0.1:1",
                                               "anonymous": False}  # fmt: skip
    finally:
        chute.set_storage_options("gs", **before)
    assert chute.StorageOptions(region="eu-west-1").region == "eu-west-1"
    assert chute.StorageOptions().anonymous is None
