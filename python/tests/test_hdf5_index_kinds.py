"""Chunked HDF5 datasets of every chunk index kind (version 1 B-tree, single chunk, implicit,
fixed array, extensible array, version 2 B-tree), whose index chute reads at open with its
native reader, read by chute.open exactly as h5py reads them: whole and in random boxes, with
gzip and without, with partial edge chunks and chunks never written.

h5py's libhdf5 may be newer than the Debian libhdf5 chute links (1.10), so the files are
written with libver bounds of at most v110 (layout message version 4), which 1.10 opens.
"""

from __future__ import annotations

import h5py
import numpy as np
import pytest
from conftest import check_h5py_reads

import chute

SHAPE = (37, 23)
CHUNKS = (8, 5)  # partial edge chunks on both axes


def check_reads(path, name, seed=0):
    return check_h5py_reads(path, name, seed=seed, boxes=30)


def data(dtype="<f4", shape=SHAPE, seed=1):
    return (np.random.default_rng(seed).standard_normal(shape) * 100).round(1).astype(dtype)


def low_level(f, name, array, chunks, *, maxshape=None, early=False, fill=None):
    """A dataset made through h5py's low-level API (early allocation: the implicit index)."""
    dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
    dcpl.set_chunk(chunks)
    if early:
        dcpl.set_alloc_time(h5py.h5d.ALLOC_TIME_EARLY)
    if fill is not None:
        dcpl.set_fill_value(np.array(fill, dtype=array.dtype))
    space = h5py.h5s.create_simple(array.shape, maxshape or array.shape)
    h5py.h5d.create(f.id, name.encode(), h5py.h5t.py_create(array.dtype), space, dcpl=dcpl)
    return f[name]


def write_kind(path, kind, gzip):
    """One file with three datasets of index kind `kind`: "full" (every chunk written),
    "sparse" (some chunks never written, a fill value) and "empty" (nothing written)."""
    libver = ("earliest", "v110") if kind == "btree_v1" else ("v110", "v110")
    maxshape = {"extensible_array": (None, SHAPE[1]), "btree_v2": (None, None)}.get(kind)
    chunks = SHAPE if kind == "single_chunk" else CHUNKS
    filters = {"compression": "gzip", "shuffle": True} if gzip else {}
    with h5py.File(path, "w", libver=libver) as f:
        if kind == "implicit":  # needs early allocation and no filter
            low_level(f, "full", data(), chunks, early=True)[...] = data()
            d = low_level(f, "sparse", data(), chunks, early=True, fill=-2.5)
            d[3:9, 4:11] = 5
            low_level(f, "empty", data(), chunks, early=True, fill=7)
            return
        kw = dict(chunks=chunks, maxshape=maxshape, **filters)
        f.create_dataset("full", data=data(), **kw)
        d = f.create_dataset("sparse", shape=SHAPE, dtype="<f4", fillvalue=-2.5, **kw)
        if kind == "single_chunk":
            d[3:9, 4:11] = 5  # the one chunk, written
        else:
            d[0:8, 0:5] = 1
            d[30:37, 20:23] = 2  # the partial corner chunk
            d[9:20, 6:17] = data(shape=(11, 11))
        f.create_dataset("empty", shape=SHAPE, dtype="<i2", fillvalue=7, **kw)


KINDS = ["btree_v1", "single_chunk", "implicit", "fixed_array", "extensible_array", "btree_v2"]


# The implicit index exists only for unfiltered datasets: no gzip case for it.
KIND_CASES = [(kind, gzip) for kind in KINDS for gzip in (False, True)
              if not (kind == "implicit" and gzip)]  # fmt: skip


@pytest.mark.parametrize(
    "kind,gzip", KIND_CASES, ids=[f"{k}-{'gzip' if g else 'raw'}" for k, g in KIND_CASES]
)
def test_each_index_kind_reads_as_h5py(tmp_path, kind, gzip):
    path = tmp_path / f"{kind}.h5"
    write_kind(path, kind, gzip)
    for seed, name in enumerate(["full", "sparse", "empty"]):
        check_reads(path, name, seed)


@pytest.mark.parametrize("maxshape", [(None, 23), (None, None)], ids=["ext_array", "btree_v2"])
def test_grown_and_shrunk_datasets_read_as_h5py(tmp_path, maxshape):
    # Resized after writing: the index may hold chunks past the current extent (left out),
    # and chunks of the grown part never written read as the fill value.
    path = tmp_path / "f.h5"
    with h5py.File(path, "w", libver=("v110", "v110")) as f:
        d = f.create_dataset("grown", data=data(), chunks=CHUNKS, maxshape=maxshape,
                             fillvalue=3, compression="gzip")  # fmt: skip
        d.resize((61, 23))
        d[50:55] = 9
        d = f.create_dataset("shrunk", data=data(), chunks=CHUNKS, maxshape=maxshape)
        d.resize((13, 23))
        if maxshape[1] is None:
            d.resize((13, 9))
    check_reads(path, "grown")
    check_reads(path, "shrunk")


def test_many_chunks_of_each_newer_kind(tmp_path):
    # Thousands of chunks: paged fixed arrays, extensible arrays with secondary blocks, v2
    # B-trees of more than one level.
    path = tmp_path / "f.h5"
    shape, chunks = (120, 90), (2, 3)
    with h5py.File(path, "w", libver=("v110", "v110")) as f:
        for name, maxshape in [("fixed", None), ("ext", (None, 90)), ("v2", (None, None))]:
            d = f.create_dataset(name, shape=shape, chunks=chunks, maxshape=maxshape,
                                 dtype="<i4", fillvalue=-1, compression="gzip")  # fmt: skip
            d[:100, :] = np.arange(100 * 90, dtype="<i4").reshape(100, 90)
            d[110:, 40:] = 5
    for name in ["fixed", "ext", "v2"]:
        check_reads(path, name)


def test_a_user_block_moves_every_chunk(tmp_path):
    # Addresses in the file are relative to the superblock, which a user block moves.
    path2 = tmp_path / "g.h5"
    with h5py.File(path2, "w", libver="earliest", userblock_size=512) as f:
        f.create_dataset("btree", data=data(), chunks=CHUNKS, compression="gzip")
    check_reads(path2, "btree")
    path3 = tmp_path / "h.h5"
    with h5py.File(path3, "w", libver=("v110", "v110"), userblock_size=1024) as f:
        f.create_dataset("fixed", data=data(), chunks=CHUNKS, compression="gzip")
        f.create_dataset("ext", data=data(), chunks=CHUNKS, maxshape=(None, 23))
    check_reads(path3, "fixed")
    check_reads(path3, "ext")


def test_a_group_of_many_datasets_reads_as_h5py(tmp_path):
    # open_group opens every dataset of the file through one native reader.
    path = tmp_path / "f.h5"
    with h5py.File(path, "w", libver=("v110", "v110")) as f:
        for i, maxshape in enumerate([None, (None, 23), (None, None)] * 3):
            f.create_dataset(f"v{i}", data=data(seed=i), chunks=CHUNKS, maxshape=maxshape)
    group = chute.open_group(str(path))
    with h5py.File(path, "r") as f:
        for i in range(9):
            np.testing.assert_array_equal(group[f"v{i}"][...], f[f"v{i}"][()])


def test_datasets_libhdf5_1_10_cannot_open_read_through_the_native_reader(tmp_path):
    # HDF5 2.0 (h5py's) writes filtered chunked datasets under libver="latest" with a data
    # layout message of version 5, which libhdf5 1.10 refuses: chute reads their metadata and
    # index natively. Every index kind, gzip, partial and unwritten chunks, fill values, both
    # byte orders, attributes.
    path = tmp_path / "latest.h5"
    with h5py.File(path, "w", libver="latest") as f:
        for name, maxshape in [("fixed", None), ("ext", (None, 23)), ("v2", (None, None))]:
            d = f.create_dataset(name, shape=SHAPE, chunks=CHUNKS, maxshape=maxshape, dtype="<f4",
                                 fillvalue=-2.5, compression="gzip", shuffle=True)  # fmt: skip
            d[0:8, 0:5] = 1
            d[9:37, 6:17] = data(shape=(28, 11))
            d.attrs["units"] = "K"
            d.attrs["scale"] = np.float32(0.5)
            d.attrs["big"] = np.uint64(2**63 + 5)
            d.attrs["levels"] = np.array([-3, 1, 2], dtype=">i2")
        f.create_dataset("single", data=data(">i4"), chunks=SHAPE, compression="gzip")
        f.create_dataset("be", data=data(">f8"), chunks=CHUNKS, compression="gzip", fillvalue=4)
        f.create_dataset("empty", shape=SHAPE, chunks=CHUNKS, dtype="<u2", fillvalue=9,
                         compression="gzip")  # fmt: skip
    for seed, name in enumerate(["fixed", "ext", "v2", "single", "be", "empty"]):
        check_reads(path, name, seed)
    array = chute.open(f"{path}/fixed")
    assert array.attrs["units"] == "K"
    assert array.attrs["scale"] == 0.5
    assert array.attrs["big"] == 2**63 + 5
    assert list(array.attrs["levels"]) == [-3, 1, 2]
    with h5py.File(path, "r") as f:
        assert array.chunks == f["fixed"].chunks
        assert array.fill_value == f["fixed"].fillvalue


def test_a_native_open_of_an_unsupported_type_names_the_dataset(tmp_path):
    path = tmp_path / "latest.h5"
    with h5py.File(path, "w", libver="latest") as f:
        pairs = np.zeros(20, dtype=[("a", "<i4"), ("b", "<f4")])
        f.create_dataset("pairs", data=pairs, chunks=(4,), compression="gzip")
        f.create_dataset("strings", data=np.array([b"ab", b"cd"] * 10), chunks=(4,),
                         compression="gzip")  # fmt: skip
    with pytest.raises(chute.UnsupportedError, match=r"latest\.h5.*'pairs'"):
        chute.open(f"{path}/pairs")[...]
    # Strings are read apart, as NumPy arrays.
    with h5py.File(path, "r") as f:
        np.testing.assert_array_equal(chute.open(f"{path}/strings")[...], f["strings"][...])


def test_a_group_of_datasets_libhdf5_1_10_cannot_open(tmp_path):
    path = tmp_path / "latest.h5"
    with h5py.File(path, "w", libver="latest") as f:
        f.create_dataset("a", data=data(), chunks=CHUNKS, compression="gzip")
        f.create_dataset("b", data=data("<i8"), chunks=CHUNKS, compression="gzip",
                         maxshape=(None, None))  # fmt: skip
    group = chute.open_group(str(path))
    assert sorted(group) == ["a", "b"]
    with h5py.File(path, "r") as f:
        for name in ["a", "b"]:
            np.testing.assert_array_equal(group[name][...], f[name][()])
