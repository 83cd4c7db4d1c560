"""Lengths a header or an index claims, checked against the file (or object) before anything is
allocated for them: .npy headers written by hand, Zarr shard indexes and chunk grids whose byte
counts overflow. The memory cases run in a child process under an address-space limit, so a
claim that is believed shows as a failed allocation instead of a test machine swapping."""

from __future__ import annotations

import json

import pytest
from audit_child import run_child

GiB = 1 << 30


def _npy(preamble_len: int, dict_text: str, major: int = 2) -> bytes:
    width = 4 if major >= 2 else 2
    head = b"\x93NUMPY" + bytes([major, 0]) + preamble_len.to_bytes(width, "little")
    return head + dict_text.encode("latin1")


def test_a_70_byte_npy_claiming_a_4_gib_header_allocates_nothing(tmp_path):
    # Before: chute allocated and zeroed 4 GiB before comparing the claim with the file size
    # (MemoryError: std::bad_alloc under this limit).
    path = tmp_path / "claims_4gib.npy"
    data = _npy(0xFFFFFFF0, "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }")
    data = data[:70].ljust(70, b" ")
    path.write_bytes(data)
    assert len(data) == 70
    out = run_child("RESULT = chute.open(sys.argv[2])[...].tolist()", str(path),
                    address_space_extra=1 * GiB)  # fmt: skip
    assert not out["ok"] and out["type"] == "CorruptDataError", out
    assert "claims_4gib.npy" in out["message"] and "4294967292" in out["message"], out


@pytest.mark.parametrize(
    "shape, says",
    [("(1099511627776,)", "truncated"), ("(4611686018427387904, 16)", "more elements")],
)
def test_npy_shapes_larger_than_the_file_are_refused(tmp_path, shape, says):
    path = tmp_path / "big_shape.npy"
    text = f"{{'descr': '<f8', 'fortran_order': False, 'shape': {shape}, }}"
    text = text.ljust(118 - 12, " ") + "\n"
    path.write_bytes(_npy(len(text), text) + bytes(64))
    out = run_child("RESULT = chute.open(sys.argv[2])[:2].tolist()", str(path),
                    address_space_extra=1 * GiB)  # fmt: skip
    assert not out["ok"] and out["type"] == "CorruptDataError", out
    assert "big_shape.npy" in out["message"] and says in out["message"], out


def _sharded(path, shape, shard, inner, dtype="uint8"):
    path.mkdir()
    meta = {
        "zarr_format": 3,
        "node_type": "array",
        "shape": shape,
        "data_type": dtype,
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": shard}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": 0,
        "codecs": [
            {
                "name": "sharding_indexed",
                "configuration": {
                    "chunk_shape": inner,
                    "codecs": [{"name": "bytes"}],
                    "index_codecs": [
                        {"name": "bytes", "configuration": {"endian": "little"}},
                        {"name": "crc32c"},
                    ],
                    "index_location": "end",
                },
            }
        ],
    }
    (path / "zarr.json").write_text(json.dumps(meta))
    return path


def test_a_shard_index_larger_than_its_shard_allocates_nothing(tmp_path):
    # A shard of 2^36 one-byte inner chunks has an index of 2^40 bytes; the stored shard is
    # 100 bytes. The index size is compared with the object's before it is read.
    path = _sharded(tmp_path / "shards.zarr", [2**36], [2**36], [1])
    (path / "c").mkdir()
    (path / "c" / "0").write_bytes(bytes(range(100)))
    out = run_child("RESULT = chute.open(sys.argv[2])[:4].tolist()", str(path),
                    address_space_extra=1 * GiB)  # fmt: skip
    assert not out["ok"] and out["type"] == "CorruptDataError", out
    assert "shards.zarr" in out["message"] and str(2**40 + 4) in out["message"], out


def test_a_shard_whose_bytes_overflow_is_invalid_metadata(tmp_path):
    # 2^62 x 4 one-byte elements per shard: 2^64 bytes, which wrapped to 0 before.
    path = _sharded(tmp_path / "overflow.zarr", [2**62, 4], [2**62, 4], [1, 4])
    out = run_child("RESULT = chute.open(sys.argv[2])[:1, :1].tolist()", str(path),
                    address_space_extra=1 * GiB)  # fmt: skip
    assert not out["ok"] and out["type"] == "InvalidMetadataError", out
    assert "overflow.zarr" in out["message"] and "2^63" in out["message"], out


def test_a_zarr_grid_whose_bytes_overflow_is_invalid_metadata(tmp_path):
    # 2^62 elements (the metadata parser's count fits) of 4 bytes: 2^64 bytes.
    path = tmp_path / "grid.zarr"
    path.mkdir()
    meta = {
        "zarr_format": 3,
        "node_type": "array",
        "shape": [2**31, 2**31],
        "data_type": "float32",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [1, 1]}},
        "chunk_key_encoding": {"name": "default"},
        "fill_value": 0,
        "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
    }
    (path / "zarr.json").write_text(json.dumps(meta))
    out = run_child("RESULT = chute.open(sys.argv[2])[0, :2].tolist()", str(path))
    assert not out["ok"] and out["type"] == "InvalidMetadataError", out
    assert "grid.zarr" in out["message"] and "cannot be indexed" in out["message"], out
