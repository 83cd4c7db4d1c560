"""Bad input: each case asserts the exception class (a chute.Error that is also the fitting
built-in) and that the message names the array and, for chunk errors, the chunk key."""

from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import warnings

import numcodecs
import numpy as np
import pytest

import chute


def _write_v2(path, data, chunks, compressor, filters=None, **kw):
    import zarr

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        z = zarr.create_array(path, shape=data.shape, chunks=chunks, dtype=data.dtype,
                              compressors=compressor, filters=filters, zarr_format=2,
                              fill_value=0, **kw)  # fmt: skip
        z[...] = data
    return path


def _write_v3(path, data, chunks, codecs, **kw):
    import zarr

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        z = zarr.create(store=path, shape=data.shape, chunks=chunks, dtype=data.dtype,
                        codecs=codecs, zarr_format=3, fill_value=0, **kw)  # fmt: skip
        z[...] = data
    return path


DATA = np.arange(64 * 48, dtype="<f4").reshape(64, 48) / 7
BYTES = {"name": "bytes", "configuration": {"endian": "little"}}


def _read_all(path):
    return chute.open(path)[...]


def _expect(exc_class, builtin, path, *fragments, call=_read_all):
    with pytest.raises(exc_class) as info:
        call(path)
    error = info.value
    assert isinstance(error, chute.Error) and isinstance(error, builtin), type(error).__mro__
    message = str(error)
    assert path in message, f"message does not name the array {path!r}: {message}"
    for fragment in fragments:
        assert fragment in message, f"message does not contain {fragment!r}: {message}"
    return message


def _load_json(path, name):
    with open(os.path.join(path, name)) as f:
        return json.load(f)


def _save_json(path, name, meta):
    with open(os.path.join(path, name), "w") as f:
        json.dump(meta, f)


def _overwrite(path, offset, payload):
    with open(path, "r+b") as f:
        f.seek(offset)
        f.write(payload)


def _truncate(path, size):
    with open(path, "r+b") as f:
        f.truncate(size)


# --- metadata ---------------------------------------------------------------------------------


def test_malformed_zarray_json(tmp_path):
    path = _write_v2(str(tmp_path / "a.zarr"), DATA, (16, 16), numcodecs.Zstd())
    with open(os.path.join(path, ".zarray"), "w") as f:
        f.write('{"shape": [64, 48], "chunks": ')
    _expect(chute.InvalidMetadataError, ValueError, path, ".zarray", call=chute.open)


def test_inconsistent_zarray_chunks_rank(tmp_path):
    path = _write_v2(str(tmp_path / "a.zarr"), DATA, (16, 16), numcodecs.Zstd())
    meta = _load_json(path, ".zarray")
    meta["chunks"] = [16]
    _save_json(path, ".zarray", meta)
    _expect(chute.InvalidMetadataError, ValueError, path, "chunks", call=chute.open)


def test_negative_shape_in_zarr_json(tmp_path):
    path = _write_v3(str(tmp_path / "a.zarr"), DATA, (16, 16), [BYTES])
    meta = _load_json(path, "zarr.json")
    meta["shape"] = [-1, 48]
    _save_json(path, "zarr.json", meta)
    _expect(chute.InvalidMetadataError, ValueError, path, "shape", call=chute.open)


def test_zarr_json_missing_shape(tmp_path):
    path = _write_v3(str(tmp_path / "a.zarr"), DATA, (16, 16), [BYTES])
    meta = _load_json(path, "zarr.json")
    del meta["shape"]
    _save_json(path, "zarr.json", meta)
    _expect(chute.InvalidMetadataError, ValueError, path, "shape", call=chute.open)


def test_unknown_v3_codec_is_named(tmp_path):
    path = _write_v3(str(tmp_path / "a.zarr"), DATA, (16, 16), [BYTES])
    meta = _load_json(path, "zarr.json")
    meta["codecs"].append({"name": "frobnicate", "configuration": {}})
    _save_json(path, "zarr.json", meta)
    _expect(chute.UnsupportedError, ValueError, path, "frobnicate", call=chute.open)


def test_unknown_v2_compressor_is_named(tmp_path):
    path = _write_v2(str(tmp_path / "a.zarr"), DATA, (16, 16), numcodecs.Zstd())
    meta = _load_json(path, ".zarray")
    meta["compressor"] = {"id": "frobnicate"}
    _save_json(path, ".zarray", meta)
    _expect(chute.UnsupportedError, ValueError, path, "frobnicate", call=chute.open)


@pytest.mark.parametrize("dtype", ["<U10", "|O", "<M8[fortnight]"])
def test_unsupported_v2_dtype_is_named(tmp_path, dtype):
    path = _write_v2(str(tmp_path / "a.zarr"), DATA, (16, 16), numcodecs.Zstd())
    meta = _load_json(path, ".zarray")
    meta["dtype"] = dtype
    _save_json(path, ".zarray", meta)
    _expect(chute.UnsupportedError, ValueError, path, dtype, call=chute.open)


def test_unsupported_v3_dtype_is_named(tmp_path):
    path = _write_v3(str(tmp_path / "a.zarr"), DATA, (16, 16), [BYTES])
    meta = _load_json(path, "zarr.json")
    meta["data_type"] = "string"
    _save_json(path, "zarr.json", meta)
    _expect(chute.UnsupportedError, ValueError, path, "string", call=chute.open)


def test_missing_array_path(tmp_path):
    path = str(tmp_path / "nothing-here.zarr")
    _expect(chute.NotFoundError, FileNotFoundError, path, call=chute.open)
    os.makedirs(path)
    _expect(chute.NotFoundError, FileNotFoundError, path, call=chute.open)
    _expect(chute.NotFoundError, FileNotFoundError, path, call=chute.open_group)


def test_missing_group_member(tmp_path):
    import zarr

    group = str(tmp_path / "g.zarr")
    zarr.open_group(group, mode="w")
    _expect(chute.NotFoundError, FileNotFoundError, os.path.join(group, "absent"),
            call=chute.open)  # fmt: skip


# --- chunks -----------------------------------------------------------------------------------

V2_COMPRESSORS = {
    "blosc": numcodecs.Blosc("lz4", 5, numcodecs.Blosc.SHUFFLE),
    "zstd": numcodecs.Zstd(3),
    "gzip": numcodecs.GZip(5),
    "zlib": numcodecs.Zlib(5),
    "lz4": numcodecs.LZ4(1),
}


@pytest.mark.parametrize("name", V2_COMPRESSORS)
def test_truncated_chunk(tmp_path, name):
    path = _write_v2(str(tmp_path / "a.zarr"), DATA, (16, 16), V2_COMPRESSORS[name])
    chunk = os.path.join(path, "1.2")
    _truncate(chunk, os.path.getsize(chunk) // 2)
    _expect(chute.CorruptDataError, ValueError, path, "1.2")


@pytest.mark.parametrize("name", ["blosc", "zstd", "gzip", "zlib"])
def test_corrupt_payload(tmp_path, name):
    path = _write_v2(str(tmp_path / "a.zarr"), DATA, (16, 16), V2_COMPRESSORS[name])
    chunk = os.path.join(path, "0.1")
    size = os.path.getsize(chunk)
    # Past blosc's 16-byte header, the zstd frame header and gzip's 10-byte header.
    _overwrite(chunk, 24, b"\xff" * min(64, size - 32))
    _expect(chute.CorruptDataError, ValueError, path, "0.1")


@pytest.mark.parametrize("name", ["gzip", "zlib"])
@pytest.mark.parametrize("damage", ["checksum", "last byte gone", "body"])
def test_damaged_deflate_stream(tmp_path, name, damage):
    path = _write_v2(str(tmp_path / "a.zarr"), DATA, (16, 16), V2_COMPRESSORS[name])
    chunk = os.path.join(path, "2.1")
    size = os.path.getsize(chunk)
    if damage == "checksum":  # zlib's Adler-32 trailer, gzip's CRC-32 and length
        with open(chunk, "rb") as f:
            stream = f.read()
        _overwrite(chunk, size - 5, bytes([stream[size - 5] ^ 0x01]))
    elif damage == "last byte gone":
        _truncate(chunk, size - 1)
    else:
        _overwrite(chunk, 12, b"\xff" * 24)
    _expect(chute.CorruptDataError, ValueError, path, "2.1", name)


def _gzip_members(payload: bytes, cut: int) -> bytes:
    import gzip

    return gzip.compress(payload[:cut], mtime=0) + gzip.compress(payload[cut:], mtime=0)


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_gzip_chunk_in_several_members(tmp_path, zarr_format):
    import zarr

    if zarr_format == 2:
        path = _write_v2(str(tmp_path / "a.zarr"), DATA, (16, 16), numcodecs.GZip(5))
        chunk = os.path.join(path, "1.2")
    else:
        path = _write_v3(str(tmp_path / "a.zarr"), DATA, (16, 16),
                         [BYTES, {"name": "gzip", "configuration": {"level": 5}}])  # fmt: skip
        chunk = os.path.join(path, "c", "1", "2")
    raw = np.ascontiguousarray(DATA[16:32, 32:48]).tobytes()
    with open(chunk, "wb") as f:
        f.write(_gzip_members(raw, 300))
    expected = zarr.open_array(path, mode="r")[...]  # zarr-python reads every member
    np.testing.assert_array_equal(expected, DATA)
    np.testing.assert_array_equal(chute.open(path)[...], expected)
    with open(chunk, "wb") as f:  # one member too many: more bytes than the chunk holds
        f.write(_gzip_members(raw, 300) + _gzip_members(raw, 10)[:40])
    _expect(chute.CorruptDataError, ValueError, path, chunk[len(path) + 1 :].replace(os.sep, "/"),
            "got more")  # fmt: skip


def test_blosc_header_claiming_huge_size_is_rejected_before_allocating(tmp_path):
    path = _write_v2(str(tmp_path / "a.zarr"), DATA, (16, 16), V2_COMPRESSORS["blosc"])
    chunk = os.path.join(path, "0.0")
    _overwrite(chunk, 4, struct.pack("<I", 0x7FFFFFF0))  # nbytes field of the blosc header
    _expect(chute.CorruptDataError, ValueError, path, "0.0")


def test_decoded_size_mismatch(tmp_path):
    path = _write_v2(str(tmp_path / "a.zarr"), DATA, (16, 16), numcodecs.Zstd(3))
    with open(os.path.join(path, "2.0"), "wb") as f:  # a valid frame of the wrong size
        f.write(numcodecs.Zstd(3).encode(np.zeros(100, "<f4")))
    _expect(chute.CorruptDataError, ValueError, path, "2.0")


def test_uncompressed_chunk_of_wrong_size(tmp_path):
    path = _write_v2(str(tmp_path / "a.zarr"), DATA, (16, 16), None)
    _truncate(os.path.join(path, "3.2"), 100)
    _expect(chute.CorruptDataError, ValueError, path, "3.2")


def test_crc32c_mismatch(tmp_path):
    path = _write_v3(str(tmp_path / "a.zarr"), DATA, (16, 16), [BYTES, {"name": "crc32c"}])
    chunk = os.path.join(path, "c", "1", "1")
    _overwrite(chunk, 10, b"\x01\x02\x03")
    _expect(chute.CorruptDataError, ValueError, path, "c/1/1")


def _sharded(tmp_path, index_location="end", index_codecs=None):
    index_codecs = index_codecs or [BYTES]
    shard = {"name": "sharding_indexed", "configuration": {
        "chunk_shape": [8, 8], "codecs": [BYTES, {"name": "zstd", "configuration": {"level": 1}}],
        "index_codecs": index_codecs, "index_location": index_location}}  # fmt: skip
    return _write_v3(str(tmp_path / "s.zarr"), DATA, (32, 24), [shard])


def test_shard_index_truncated(tmp_path):
    path = _sharded(tmp_path)
    _truncate(os.path.join(path, "c", "0", "1"), 40)  # less than the 9 * 16-byte index
    _expect(chute.CorruptDataError, ValueError, path, "c/0/1")


@pytest.mark.parametrize("location", ["end", "start"])
def test_shard_index_pointing_past_the_end(tmp_path, location):
    path = _sharded(tmp_path, location)
    shard = os.path.join(path, "c", "1", "0")
    size = os.path.getsize(shard)
    index_at = size - 12 * 16 if location == "end" else 0  # 4 x 3 inner chunks
    _overwrite(shard, index_at, struct.pack("<QQ", size - 10, 1000))  # entry of inner (0, 0)
    _expect(chute.CorruptDataError, ValueError, path, "c/1/0")


def test_shard_index_crc32c_mismatch(tmp_path):
    path = _sharded(tmp_path, index_codecs=[BYTES, {"name": "crc32c"}])
    shard = os.path.join(path, "c", "0", "0")
    _overwrite(shard, os.path.getsize(shard) - 30, b"\x00\x7f")
    _expect(chute.CorruptDataError, ValueError, path, "c/0/0")


def test_unreadable_chunk_is_a_storage_error(tmp_path):
    path = _write_v2(str(tmp_path / "a.zarr"), DATA, (16, 16), numcodecs.Zstd())
    chunk = os.path.join(path, "1.1")
    os.remove(chunk)
    os.symlink("1.1", chunk)  # a symlink loop: open() fails with ELOOP
    _expect(chute.StorageError, OSError, path, "1.1")


_AS_NOBODY = """
import sys, chute
try:
    chute.open(sys.argv[1])[...]
except chute.PermissionDeniedError as e:
    print("RAISED", isinstance(e, PermissionError), str(e))
else:
    print("NO ERROR")
"""


def _drop_to_nobody():
    os.setgid(65534)
    os.setuid(65534)


@pytest.mark.expected_skip(reason="needs a checkout user nobody can read")
def test_unreadable_chunk_is_permission_denied():
    base = tempfile.mkdtemp(prefix="chute-perm-")
    try:
        os.chmod(base, 0o755)
        path = _write_v2(os.path.join(base, "a.zarr"), DATA, (16, 16), numcodecs.Zstd())
        os.chmod(os.path.join(path, "1.1"), 0)
        if os.geteuid() != 0:
            _expect(chute.PermissionDeniedError, PermissionError, path, "1.1")
            return
        # Root reads any file, so the read runs in a child process as user nobody.
        package_root = os.path.dirname(os.path.dirname(chute.__file__))
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([package_root, env.get("PYTHONPATH", "")])
        result = subprocess.run(
            [sys.executable, "-c", _AS_NOBODY, path],
            capture_output=True, text=True, env=env, cwd=base, timeout=60, check=False,
            preexec_fn=_drop_to_nobody,
        )  # fmt: skip
        if "RAISED" not in result.stdout and "NO ERROR" not in result.stdout:
            pytest.skip(f"cannot run chute as user nobody here: {result.stderr[-500:]}")
        assert result.stdout.startswith("RAISED True"), result.stdout
        assert path in result.stdout and "1.1" in result.stdout, result.stdout
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_out_of_range_index_and_box(tmp_path):
    path = _write_v2(str(tmp_path / "a.zarr"), DATA, (16, 16), numcodecs.Zstd())
    a = chute.open(path)
    with pytest.raises(IndexError, match="out of bounds for axis 0 with size 64"):
        a[64]
    with pytest.raises(IndexError, match="axis 1"):
        a[0, -49]
    _expect(
        chute.OutOfRangeError, IndexError, path, call=lambda p: chute.open(p).read((60, 0), (5, 1))
    )


def test_group_opened_as_array_and_array_as_group(tmp_path):
    import zarr

    group = str(tmp_path / "g.zarr")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        zarr.open_group(group, mode="w").create_array("x", shape=(3,), dtype="i4")
    _expect(chute.InvalidArgumentError, ValueError, group, "group", call=chute.open)
    member = os.path.join(group, "x")
    _expect(chute.InvalidArgumentError, ValueError, member, "array", call=chute.open_group)


def test_documented_error_table_lists_every_error_class():
    """The error table of docs/reference/errors.md has one row per chute.Error subclass, with its built-in base."""
    import re
    from pathlib import Path

    page = Path(__file__).resolve().parents[2] / "docs" / "reference" / "errors.md"
    text = page.read_text()
    table = text[text.index("| chute | also a | raised for |") :].split("\n\n")[0]
    rows = {}
    for line in table.splitlines()[2:]:
        cells = [c.strip() for c in line.strip("|").split("|")]
        for name in re.findall(r"`(\w+Error)`", cells[0]):
            rows[name] = cells[1]
    classes = {
        name: cls
        for name, cls in vars(chute).items()
        if isinstance(cls, type) and issubclass(cls, chute.Error) and cls is not chute.Error
    }
    assert set(rows) == set(classes), (set(classes) - set(rows), set(rows) - set(classes))
    for name, cls in classes.items():
        bases = [b.__name__ for b in cls.__mro__ if b.__module__ == "builtins"]
        builtin = next(
            (b for b in bases if b not in ("Exception", "BaseException", "object")), None
        )
        if builtin:
            assert f"`{builtin}`" in rows[name], (name, rows[name])
