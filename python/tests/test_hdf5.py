"""The HDF5 source: datasets h5py writes (contiguous; chunked with gzip + shuffle, fletcher32,
the blosc / lz4 / zstd plugins; big-endian; partial edge chunks; unwritten chunks and fill
values; bool and complex) read exactly against h5py, whole and in random boxes; groups with
attributes; bad files give errors naming file, dataset and chunk."""

from __future__ import annotations

import h5py
import hdf5plugin
import numpy as np
import pytest
from conftest import check_h5py_reads

import chute


def values(shape, dtype, seed=0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return rng.integers(0, 2, shape).astype(dtype)
    if dtype.kind in "iu":
        return rng.integers(0, 100, shape).astype(dtype)
    data = (rng.standard_normal(shape) * 10).round(2)
    if dtype.kind == "c":
        data = data + 1j * rng.standard_normal(shape)
    return data.astype(dtype)


def check_reads(path, name):
    return check_h5py_reads(path, name, boxes=25, dtype=False)


LAYOUTS = {
    "contiguous": {},
    "chunked": {"chunks": (4, 5, 6)},
    "gzip_shuffle": {"chunks": (4, 5, 6), "compression": "gzip", "shuffle": True},
    "fletcher32": {"chunks": (3, 7, 4), "compression": "gzip", "fletcher32": True},
    "lzf_free_edges": {"chunks": (8, 8, 8), "compression": "gzip", "compression_opts": 1},
}


@pytest.mark.parametrize("dtype", ["<f4", ">f4", "<f8", ">i2", "<u8", "|i1", "|b1", "<c8", ">c16"])
@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_reads_what_h5py_wrote(tmp_path, dtype, layout):
    path = tmp_path / "f.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("grp/x", data=values((11, 13, 9), dtype), **LAYOUTS[layout])
    check_reads(path, "grp/x")


PLUGINS = {
    "blosc_lz4": lambda: hdf5plugin.Blosc(cname="lz4", clevel=5, shuffle=hdf5plugin.Blosc.SHUFFLE),
    "blosc_zstd": lambda: hdf5plugin.Blosc(
        cname="zstd", clevel=3, shuffle=hdf5plugin.Blosc.NOSHUFFLE
    ),
    "lz4": lambda: hdf5plugin.LZ4(),
    "lz4_small_blocks": lambda: hdf5plugin.LZ4(nbytes=512),
    "zstd": lambda: hdf5plugin.Zstd(clevel=5),
}


@pytest.mark.parametrize("plugin", list(PLUGINS))
def test_plugin_filters(tmp_path, plugin):
    path = tmp_path / "p.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset(
            "x", data=values((20, 30, 7), "<f4"), chunks=(8, 16, 7), **PLUGINS[plugin]()
        )
    check_reads(path, "x")


def test_unwritten_chunks_read_as_the_fill_value(tmp_path):
    path = tmp_path / "f.h5"
    with h5py.File(path, "w") as f:
        d = f.create_dataset(
            "x", shape=(10, 12), chunks=(4, 5), dtype=">i4", fillvalue=-7, compression="gzip"
        )
        d[0:4, 5:10] = 3
        f.create_dataset(
            "never", shape=(6, 5), dtype="<f4", fillvalue=2.5
        )  # contiguous, unallocated
    array = check_reads(path, "x")
    assert array[9, 11] == -7
    check_reads(path, "never")


def test_scalar_and_empty_datasets(tmp_path):
    path = tmp_path / "f.h5"
    with h5py.File(path, "w") as f:
        f["s"] = np.float64(3.25)
        f.create_dataset("e", shape=(0, 3), dtype="<f4")
    assert chute.open(f"{path}/s")[()] == 3.25
    assert chute.open(f"{path}/e")[:].shape == (0, 3)


def test_group_lists_datasets_groups_and_attributes(tmp_path):
    path = tmp_path / "train.h5"
    with h5py.File(path, "w") as f:
        f.attrs["L"] = 64
        f.attrs["name"] = "cosmo"
        f.attrs["box"] = [1.5, 2.5]
        f.create_dataset("Nbody", data=values((4, 6, 6, 6), "<f4"))
        f.create_dataset("Hydro", data=values((5, 6, 6, 6), "<f4"), chunks=(1, 3, 3, 3))
        f["Hydro"].attrs["units"] = "g/cm3"
        f.create_group("meta").create_dataset("z", data=np.arange(3))
    group = chute.open_group(path)
    assert sorted(group) == ["Hydro", "Nbody", "meta/z"]
    assert group.groups == ("meta",)
    assert group.attrs == {"L": 64, "name": "cosmo", "box": [1.5, 2.5]}
    assert group["Hydro"].attrs == {"units": "g/cm3"}
    with h5py.File(path, "r") as f:
        np.testing.assert_array_equal(group["Nbody"][:], f["Nbody"][:])
    sub = chute.open_group(f"{path}/meta")
    np.testing.assert_array_equal(sub["z"][:], np.arange(3))


def test_missing_file_and_dataset(tmp_path):
    path = tmp_path / "f.h5"
    with h5py.File(path, "w") as f:
        f["x"] = np.zeros(3)
    with pytest.raises(chute.NotFoundError, match=r"f\.h5.*dataset 'nope'"):
        chute.open(f"{path}/nope")
    with pytest.raises(chute.NotFoundError):
        chute.open(tmp_path / "absent.h5" / "x")


def test_unsupported_storage_and_filters_name_file_dataset_and_what(tmp_path):
    path = tmp_path / "f.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("ext", shape=(4,), dtype="<f4", external=[(str(tmp_path / "raw"), 0, 16)])
        f.create_dataset("blosc2", data=np.arange(10.0), chunks=(5,), **hdf5plugin.Blosc2())
        layout = h5py.VirtualLayout(shape=(3,), dtype="<f8")
        f["src"] = np.arange(3.0)
        layout[:] = h5py.VirtualSource(f["src"])
        f.create_virtual_dataset("virtual", layout)
    with pytest.raises(chute.UnsupportedError, match=r"f\.h5.*'ext'.*external"):
        chute.open(f"{path}/ext")
    with pytest.raises(chute.UnsupportedError, match=r"f\.h5.*'blosc2'.*filter 32026 \('blosc2"):
        chute.open(f"{path}/blosc2")
    # Virtual datasets are read (test_hdf5_vds.py).
    with h5py.File(path, "r") as f:
        np.testing.assert_array_equal(chute.open(f"{path}/virtual")[...], f["virtual"][()])


@pytest.mark.parametrize("dtype", ["<f4", ">i2", "|u1", "<c8"])
def test_compact_datasets_read(tmp_path, dtype):
    # Compact storage: the elements lie in the object header (libver v1 and v2 headers).
    data = values((3, 5), dtype)
    for libver in ("earliest", "latest"):
        path = tmp_path / f"{libver}.h5"
        with h5py.File(path, "w", libver=libver) as f:
            dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
            dcpl.set_layout(h5py.h5d.COMPACT)
            space = h5py.h5s.create_simple(data.shape)
            tid = h5py.h5t.py_create(data.dtype, logical=True)
            d = h5py.h5d.create(f.id, b"compact", tid, space, dcpl=dcpl)
            d.write(h5py.h5s.ALL, h5py.h5s.ALL, data)
            f["compact"].attrs["units"] = "K"
        array = check_reads(path, "compact")
        assert array.attrs["units"] == "K"


def test_a_chunk_whose_checksum_fails_names_file_dataset_and_chunk(tmp_path):
    path = tmp_path / "f.h5"
    with h5py.File(path, "w") as f:
        d = f.create_dataset("x", data=values((8, 8), "<f4"), chunks=(4, 4), fletcher32=True)
        info = d.id.get_chunk_info(3)  # chunk (1, 1)
    with open(path, "r+b") as f:
        f.seek(info.byte_offset + 5)
        byte = f.read(1)
        f.seek(info.byte_offset + 5)
        f.write(bytes([byte[0] ^ 0xFF]))
    array = chute.open(f"{path}/x")
    np.testing.assert_array_equal(array[:4, :], h5py.File(path, "r")["x"][:4, :])
    with pytest.raises(chute.CorruptDataError, match=r"f\.h5/x.*chunk '1/1'.*fletcher32: checksum"):
        array[:]


@pytest.mark.parametrize("damage", ["checksum", "body"])
def test_a_damaged_deflate_chunk_names_file_dataset_and_chunk(tmp_path, damage):
    path = tmp_path / "f.h5"
    with h5py.File(path, "w") as f:
        d = f.create_dataset("x", data=values((8, 8), "<f4"), chunks=(4, 4), compression="gzip")
        info = d.id.get_chunk_info(3)  # chunk (1, 1)
    offset = info.byte_offset + (info.size - 1 if damage == "checksum" else 2)
    with open(path, "r+b") as f:
        f.seek(offset)
        byte = f.read(1)
        f.seek(offset)
        f.write(bytes([byte[0] ^ 0x5A]) if damage == "checksum" else b"\xff" * 8)
    array = chute.open(f"{path}/x")
    np.testing.assert_array_equal(array[:4, :], h5py.File(path, "r")["x"][:4, :])
    with pytest.raises(chute.CorruptDataError, match=r"f\.h5/x.*chunk '1/1'.*zlib: corrupt"):
        array[:]


def test_truncated_files(tmp_path):
    path = tmp_path / "f.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("c", data=values((64, 64), "<f8"))
        f.create_dataset("k", data=values((64, 64), "<f8"), chunks=(16, 16))
    size = path.stat().st_size
    with open(path, "r+b") as f:
        f.truncate(size - 4096)
    with pytest.raises(chute.Error, match=r"f\.h5"):
        chute.open(f"{path}/k")


def test_a_file_another_process_writes_is_refused_clearly(tmp_path):
    path = tmp_path / "f.h5"
    with h5py.File(path, "w") as f:
        f["x"] = np.zeros(3)
        f.flush()
        with pytest.raises(chute.StorageError, match=r"f\.h5.*(locked|another process)"):
            chute.open(f"{path}/x")


@pytest.mark.parametrize("index", ["native", "btree"])
def test_chunk_index_readers_agree(tmp_path, monkeypatch, index):
    # 1,600 chunks: a B-tree of more than one level (64 entries a node by default), some chunks
    # never written; the native reader and chute's older B-tree reader must agree.
    path = tmp_path / "f.h5"
    with h5py.File(path, "w") as f:
        d = f.create_dataset(
            "x", shape=(40, 40, 8), chunks=(1, 1, 8), dtype="<i4", fillvalue=-1, compression="gzip"
        )
        d[:30] = np.arange(30 * 40 * 8, dtype="<i4").reshape(30, 40, 8)
    monkeypatch.setenv("CHUTE_HDF5_INDEX", index)
    check_reads(path, "x")


def test_newer_index_kinds_read(tmp_path):
    # libver="v110" writes layout messages of version 4 (fixed / extensible array, B-tree v2
    # indexes), which the native reader walks.
    path = tmp_path / "f.h5"
    with h5py.File(path, "w", libver=("v110", "v110")) as f:
        f.create_dataset("fixed", data=values((20, 30), "<f4"), chunks=(4, 7), compression="gzip")
        f.create_dataset(
            "growing", data=values((20, 30), "<f8"), chunks=(4, 7), maxshape=(None, 30)
        )
        f.create_dataset("both", data=values((20, 30), "<u2"), chunks=(4, 7), maxshape=(None, None))
    for name in ["fixed", "growing", "both"]:
        check_reads(path, name)


def test_files_of_the_newest_format_read(tmp_path):
    # h5py's own libhdf5 (2.0) writes objects libhdf5 1.10 cannot decode (layout message
    # version 5): chute's native reader reads them exactly.
    path = tmp_path / "f.h5"
    with h5py.File(path, "w", libver="latest") as f:
        f.create_dataset("fixed", data=values((20, 30), "<f4"), chunks=(4, 7), compression="gzip")
        f.create_dataset(
            "growing", data=values((20, 30), "<f8"), chunks=(4, 7), maxshape=(None, 30)
        )
    for name in ["fixed", "growing"]:
        check_reads(path, name)


def test_soft_and_external_links_and_user_blocks(tmp_path):
    other = tmp_path / "other.h5"
    with h5py.File(other, "w") as f:
        f.create_dataset("grp/data", data=values((9, 7), "<f4"), chunks=(4, 4), compression="gzip")
        f.create_dataset("plain", data=values((5,), ">i8"))
    path = tmp_path / "f.h5"
    with h5py.File(path, "w", userblock_size=512) as f:
        f.create_dataset("grp/x", data=values((6, 5), "<f8"))  # contiguous, after a user block
        f.create_dataset("grp/k", data=values((6, 5), "<i2"), chunks=(4, 4))
        f["soft"] = h5py.SoftLink("/grp/x")
        f["ext"] = h5py.ExternalLink("other.h5", "/grp/data")
        f["extgrp"] = h5py.ExternalLink("other.h5", "/grp")
    for name in ["grp/x", "grp/k", "soft", "ext", "extgrp/data"]:
        check_reads(path, name)
    # A group lists what hard links reach, each once (as H5Ovisit does).
    assert sorted(chute.open_group(path)) == ["grp/k", "grp/x"]


def test_truncated_and_corrupt_structures_are_corrupt_data_naming_file_and_dataset(tmp_path):
    path = tmp_path / "f.h5"
    with h5py.File(path, "w", libver="latest") as f:
        f.create_dataset("x", data=values((64, 64), "<f4"), chunks=(8, 8), compression="gzip")
    data = bytearray(path.read_bytes())
    with h5py.File(path, "r") as f:
        header = h5py.h5o.get_info(f["x"].id).addr
    assert data[header : header + 4] == b"OHDR"
    data[header + 12] ^= 0xFF  # inside the header: its checksum fails
    bad = tmp_path / "bad.h5"
    bad.write_bytes(bytes(data))
    with pytest.raises(chute.CorruptDataError, match=r"bad\.h5.*'x'.*checksum"):
        chute.open(f"{bad}/x")
    short = tmp_path / "short.h5"
    short.write_bytes(path.read_bytes()[:200])
    with pytest.raises(chute.CorruptDataError, match=r"short\.h5"):
        chute.open(f"{short}/x")
