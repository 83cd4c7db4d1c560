"""HDF5 files from the reliability audit: valid files with chunk grids too large to index or to
hold densely, and corrupt ones (layout messages libhdf5 1.10 divided by, B-trees listing a chunk
twice). Valid files are written by h5py; corrupt ones are byte-level mutations of them. Every
case runs in a child process (audit_child.py) so a crash fails the test instead of ending it,
and the memory cases run under an address-space limit."""

from __future__ import annotations

import re
import struct

import numpy as np
import pytest
from audit_child import run_child

h5py = pytest.importorskip("h5py")

GiB = 1 << 30


def _layout(data: bytes, chunks: tuple, itemsize: int) -> re.Match:
    """The version 3 chunked layout message h5py writes by default: version, class 2,
    dimensionality, B-tree address, the chunk extents and the element size (uint32 each)."""
    rank = len(chunks)
    pattern = (
        bytes([3, 2, rank + 1])
        + b"(.{8})"
        + re.escape(struct.pack(f"<{rank + 1}I", *chunks, itemsize))
    )
    found = list(re.finditer(pattern, data, re.DOTALL))
    assert len(found) == 1, "expected one layout message"
    return found[0]


def _small_file(path, shape=(6, 10), chunks=(2, 5)):
    with h5py.File(path, "w") as f:
        f.create_dataset("x", data=np.arange(np.prod(shape), dtype="<i4").reshape(shape),
                         chunks=chunks)  # fmt: skip
    return path


def test_a_grid_of_2_64_chunks_is_invalid_metadata_not_a_crash(tmp_path):
    # Before: opened, and the first read died of SIGSEGV (the chunk count overflowed to 0).
    path = tmp_path / "huge_grid.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("x", shape=(2**32, 2**32), chunks=(1, 1), dtype="f4")
    out = run_child("a = chute.open(sys.argv[2]); RESULT = a[0, :4].tolist()", f"{path}/x")
    assert not out["ok"] and out["type"] == "InvalidMetadataError", out
    assert "huge_grid.h5" in out["message"] and "'x'" in out["message"], out
    assert "cannot be indexed" in out["message"]


def test_a_large_empty_grid_opens_in_memory_that_follows_the_stored_chunks(tmp_path):
    # 2^27 x 200 elements in 20 x 20 chunks: 67 million chunks, two stored. Before: 3.2 GB
    # resident at open (an entry per grid chunk); larger grids ended in std::bad_alloc.
    path = tmp_path / "sparse.h5"
    with h5py.File(path, "w") as f:
        d = f.create_dataset("x", shape=(2**27, 200), chunks=(20, 20), dtype="f4", fillvalue=-1)
        d[20:40, 0:20] = 7.0
        d[2**27 - 20 :, 180:] = 3.0
    with h5py.File(path, "r") as f:
        expected = [f["x"][0:60, 0:40].tolist(), f["x"][2**27 - 40 :, 160:].tolist()]
    out = run_child(
        """
        a = chute.open(sys.argv[2])
        RESULT = [a[0:60, 0:40].tolist(), a[2**27 - 40:, 160:].tolist()]
        """,
        f"{path}/x",
        address_space_extra=1 * GiB,
    )
    assert out["ok"], out
    assert out["result"] == expected


def test_a_larger_grid_still_opens_under_the_limit(tmp_path):
    # 2^40 chunks: a dense table would need 2^45 bytes. Before: MemoryError: std::bad_alloc.
    path = tmp_path / "vast.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("x", shape=(2**30, 2**10), chunks=(1, 1), dtype="u1", fillvalue=9)
    out = run_child("RESULT = chute.open(sys.argv[2])[5, :3].tolist()", f"{path}/x",
                    address_space_extra=1 * GiB)  # fmt: skip
    assert out == {"ok": True, "result": [9, 9, 9]}


MUTATIONS = {
    # name: (what to change in the layout message, what the error says)
    # one dimension short of rank + 1: libhdf5 1.10 divided by zero (SIGFPE) in H5Dopen
    "dimensionality 2": (
        lambda m, b: b.__setitem__(m.start() + 2, 2),
        "chunks of rank 1 for a dataspace of rank 2",
    ),
    "dimensionality 0": (
        lambda m, b: b.__setitem__(m.start() + 2, 0),
        "chunked layout of fewer than 2 dimensions",
    ),
    "dimensionality 1": (
        lambda m, b: b.__setitem__(m.start() + 2, 1),
        "chunked layout of fewer than 2 dimensions",
    ),
    "dimensionality 40": (lambda m, b: b.__setitem__(m.start() + 2, 40), "layout of 40 dimensions"),
    "rank mismatch": (lambda m, b: b.__setitem__(m.start() + 2, 4), "layout message"),
    "version 0": (lambda m, b: b.__setitem__(m.start(), 0), "data layout version 0"),
    "class 7": (lambda m, b: b.__setitem__(m.start() + 1, 7), "layout class 7"),
    "extent 0": (
        lambda m, b: struct.pack_into("<I", b, m.start() + 11, 0),
        "a chunk dimension of 0",
    ),
}


@pytest.mark.parametrize("mutation", list(MUTATIONS))
def test_bad_layout_messages_are_corrupt_data_not_a_crash(tmp_path, mutation):
    # Before: dimensionality 2 (rank + 1 is 3) killed the process with SIGFPE inside libhdf5
    # 1.10's H5Dopen; the native reader checks every field before it uses it.
    path = _small_file(tmp_path / "layout.h5")
    data = bytearray(path.read_bytes())
    change, says = MUTATIONS[mutation]
    change(_layout(bytes(data), (2, 5), 4), data)
    path.write_bytes(bytes(data))
    out = run_child("RESULT = chute.open(sys.argv[2])[...].tolist()", f"{path}/x")
    assert not out["ok"] and out["type"] == "CorruptDataError", out
    for part in ("layout.h5", "'x'", "layout message", says):
        assert part in out["message"], (part, out["message"])


@pytest.mark.parametrize("index", ["native", "btree"])
def test_a_chunk_listed_twice_in_the_index_is_corrupt_data(tmp_path, index):
    # Before: "last wins", silently (the second entry's bytes were read for both).
    path = _small_file(tmp_path / "dup.h5", shape=(4, 10), chunks=(2, 5))
    data = bytearray(path.read_bytes())
    (address,) = struct.unpack("<Q", _layout(bytes(data), (2, 5), 4).group(1))
    assert data[address : address + 4] == b"TREE"
    assert struct.unpack_from("<H", data, address + 6)[0] == 4  # one leaf of four chunks
    keys = address + 24  # after signature, type, level, entries used, two sibling addresses
    stride = 8 + 3 * 8 + 8  # size, filter mask, three offsets; child address
    # The third entry (chunk [1, 0]) claims the coordinates of the second (chunk [0, 1]).
    data[keys + 2 * stride + 8 : keys + 2 * stride + 32] = data[
        keys + stride + 8 : keys + stride + 32
    ]
    path.write_bytes(bytes(data))
    env = None if index == "native" else {"CHUTE_HDF5_INDEX": index}
    out = run_child("RESULT = chute.open(sys.argv[2])[...].tolist()", f"{path}/x", env=env)
    assert not out["ok"] and out["type"] == "CorruptDataError", out
    says = "chunk (0,1) listed twice" if index == "native" else "chunk [0, 1] twice"
    for part in ("dup.h5", "'x'", says):
        assert part in out["message"], (part, out["message"])


def test_a_layout_version_the_format_does_not_define_is_an_error(tmp_path):
    # Versions 1-5 exist (HDF5 2.0 writes 5); a 9 is refused, naming file and dataset.
    path = _small_file(tmp_path / "v9.h5")
    data = bytearray(path.read_bytes())
    data[_layout(bytes(data), (2, 5), 4).start()] = 9
    path.write_bytes(bytes(data))
    out = run_child("RESULT = chute.open(sys.argv[2])[...].tolist()", f"{path}/x")
    assert not out["ok"] and out["chute"], out
    assert "v9.h5" in out["message"] and "'x'" in out["message"], out


def test_valid_files_still_read_like_h5py(tmp_path):
    path = _small_file(tmp_path / "ok.h5")
    with h5py.File(path, "r") as f:
        expected = f["x"][...].tolist()
    out = run_child("RESULT = chute.open(sys.argv[2])[...].tolist()", f"{path}/x")
    assert out == {"ok": True, "result": expected}


def test_a_sparse_grid_under_a_newer_index_kind_reads_like_h5py(tmp_path):
    # libver v110 with maxshape: an extensible-array chunk index. A million-chunk grid with two
    # chunks stored is read in one pass over the index (before: a million lookups by coordinate).
    path = tmp_path / "v110.h5"
    with h5py.File(path, "w", libver=("v110", "v110")) as f:
        d = f.create_dataset("x", shape=(2**20, 100), chunks=(1, 100), maxshape=(None, 100),
                             dtype="f4", fillvalue=-1)  # fmt: skip
        d[5] = 1.0
        d[2**20 - 1] = np.arange(100)
    with h5py.File(path, "r") as f:
        expected = [f["x"][r].tolist() for r in (0, 5, 2**20 - 1)]
    out = run_child(
        "a = chute.open(sys.argv[2]); RESULT = [a[r].tolist() for r in (0, 5, 2**20 - 1)]",
        f"{path}/x",
    )
    assert out == {"ok": True, "result": expected}
