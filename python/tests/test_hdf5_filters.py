"""The HDF5 filters NASA, NOAA and h5py users meet, written by h5py and hdf5plugin and read by
chute exactly as h5py reads them: szip (libaec), bzip2, LZF, bitshuffle (none, LZ4, Zstandard),
scale-offset (integers and D-scaled floats, with and without fill values) and n-bit (integers of
reduced precision at a bit offset), in several dtypes and both byte orders, with partial edge
chunks and unwritten chunks, alone and after shuffle or before fletcher32; whole and in random
boxes. Blosc2 and unknown filters are clear UnsupportedErrors; a corrupt chunk is a
CorruptDataError naming file, dataset and chunk.
"""

from __future__ import annotations

import h5py
import hdf5plugin
import numpy as np
import pytest
from conftest import check_h5py_reads

import chute

SHAPE = (29, 23)
CHUNKS = (8, 7)  # partial edge chunks on both axes; 56 elements, a multiple of 8
ODD_CHUNKS = (5, 7)  # 35 elements: bitshuffle leaves 3 elements unshuffled


def values(dtype, shape=SHAPE, seed=1):
    dtype = np.dtype(dtype)
    rng = np.random.default_rng(seed)
    if dtype.kind == "f":
        return (rng.standard_normal(shape) * 50).round(2).astype(dtype)
    info = np.iinfo(dtype)
    low, high = max(info.min, -3000), min(info.max, 3000)
    return rng.integers(low, high, size=shape, endpoint=True).astype(dtype)


def check_reads(path, name, seed=0):
    return check_h5py_reads(path, name, seed=seed, boxes=20)


def write(path, datasets):
    """datasets: name -> (data, create_dataset keyword arguments)."""
    with h5py.File(path, "w") as f:
        for name, (data, kw) in datasets.items():
            kw = {"chunks": CHUNKS, **kw}
            if kw.pop("sparse", False):
                d = f.create_dataset(name, shape=data.shape, dtype=data.dtype, **kw)
                d[0:8, 0:7] = data[0:8, 0:7]
                d[24:, 14:] = data[24:, 14:]  # the partial corner chunk
                d[9:20, 6:17] = data[9:20, 6:17]
            else:
                f.create_dataset(name, data=data, **kw)


DTYPES = ["<f4", ">f4", "<f8", ">f8", "<i2", ">i2", "|u1", "<i4", "<u2"]


def matrix(filter_kw, dtypes=DTYPES, extra=None):
    out = {}
    for dtype in dtypes:
        tag = np.dtype(dtype).str.replace("<", "le_").replace(">", "be_").replace("|", "")
        out[tag] = (values(dtype), dict(filter_kw))
        out[tag + "_sparse"] = (
            values(dtype, seed=2),
            {**filter_kw, "sparse": True, "fillvalue": 3},
        )
        out[tag + "_shuffle"] = (values(dtype, seed=3), {**filter_kw, "shuffle": True})
        out[tag + "_fletcher32"] = (values(dtype, seed=4), {**filter_kw, "fletcher32": True})
    out.update(extra or {})
    return out


def check_matrix(tmp_path, datasets):
    path = tmp_path / "f.h5"
    write(path, datasets)
    for i, name in enumerate(datasets):
        check_reads(path, name, seed=i)


def test_szip(tmp_path):
    check_matrix(
        tmp_path,
        {
            **matrix({"compression": "szip", "compression_opts": ("nn", 8)}),
            **{
                f"ec_{k}": v
                for k, v in matrix(
                    {"compression": "szip", "compression_opts": ("ec", 16)}, ["<f8", ">i2"]
                ).items()
            },
        },
    )


def test_bzip2(tmp_path):
    check_matrix(
        tmp_path,
        matrix(
            dict(hdf5plugin.BZip2(blocksize=9)),
            extra={"level1": (values("<f4"), dict(hdf5plugin.BZip2(blocksize=1)))},
        ),
    )


def test_lzf(tmp_path):
    # Random bytes do not shrink: h5py's filter then stores the chunk as is and HDF5 records that
    # in the chunk's filter mask.
    noise = np.random.default_rng(5).integers(0, 256, size=SHAPE, dtype=np.uint8)
    check_matrix(
        tmp_path,
        matrix(
            {"compression": "lzf"},
            extra={
                "noise": (noise, {"compression": "lzf"}),
                "noise_shuffle": (noise.view("u1"), {"compression": "lzf", "shuffle": True}),
            },
        ),
    )
    with h5py.File(tmp_path / "f.h5", "r") as f:
        masks = {
            f["noise"].id.get_chunk_info(i).filter_mask
            for i in range(f["noise"].id.get_num_chunks())
        }
    assert 1 in masks  # the raw path was exercised


@pytest.mark.parametrize("cname", ["none", "lz4", "zstd"])
def test_bitshuffle(tmp_path, cname):
    kw = dict(hdf5plugin.Bitshuffle(nelems=0, cname=cname))
    small_blocks = dict(hdf5plugin.Bitshuffle(nelems=16, cname=cname))
    check_matrix(
        tmp_path,
        matrix(
            kw,
            extra={
                "odd_chunks_f8": (values("<f8"), {**kw, "chunks": ODD_CHUNKS}),
                "odd_chunks_i2": (values(">i2"), {**kw, "chunks": ODD_CHUNKS}),
                "small_blocks": (values("<f4"), {**small_blocks, "chunks": (9, 13)}),
                "small_blocks_u1": (values("|u1"), {**small_blocks, "chunks": (9, 13)}),
            },
        ),
    )


def test_scaleoffset(tmp_path):
    ints = ["<i2", ">i2", "|u1", "<i4", ">u4", "<i8", "|i1"]
    floats = ["<f4", ">f4", "<f8", ">f8"]
    datasets = {}
    for dtype in ints + floats:
        tag = np.dtype(dtype).str.replace("<", "le_").replace(">", "be_").replace("|", "")
        data = values(dtype, seed=len(datasets))
        factor = 2 if dtype in floats else 0  # decimal digits; integers: minimum bits found
        datasets[tag] = (data, {"scaleoffset": factor})
        datasets[tag + "_fill"] = (data, {"scaleoffset": factor, "fillvalue": 3, "sparse": True})
        datasets[tag + "_gzip"] = (data, {"scaleoffset": factor, "compression": "gzip"})
    # A constant chunk, a chunk that needs the full width, and integers given fixed bits.
    datasets["constant"] = (np.full(SHAPE, 7, "<i4"), {"scaleoffset": 0})
    wide = values("<i4")
    wide[0, 0], wide[0, 1] = np.iinfo("<i4").min, np.iinfo("<i4").max
    datasets["full_width"] = (wide, {"scaleoffset": 0})
    datasets["fixed_bits"] = (values("<u2") % 1000, {"scaleoffset": 10})
    datasets["negative_scale"] = (values("<f8") * 1000, {"scaleoffset": 3})
    check_matrix(tmp_path, datasets)


def nbit_dataset(f, name, base, precision, offset, data, chunks=CHUNKS, fill=None):
    tid = base.copy()
    tid.set_precision(precision)
    tid.set_offset(offset)
    dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
    dcpl.set_chunk(chunks)
    dcpl.set_filter(5, 0, ())  # n-bit
    if fill is not None:
        dcpl.set_fill_value(np.array(fill, dtype=data.dtype))
    space = h5py.h5s.create_simple(data.shape)
    h5py.h5d.create(f.id, name.encode(), tid, space, dcpl=dcpl)
    return f[name]


def test_nbit(tmp_path):
    path = tmp_path / "f.h5"
    rng = np.random.default_rng(7)
    cases = {
        "i4_16_0": (h5py.h5t.STD_I32LE, 16, 0, rng.integers(-32768, 32767, SHAPE).astype("<i4")),
        "i4_24_8": (
            h5py.h5t.STD_I32LE,
            24,
            8,
            rng.integers(-(2**23), 2**23 - 1, SHAPE).astype("<i4"),
        ),
        "be_i2_12_4": (h5py.h5t.STD_I16BE, 12, 4, rng.integers(-2048, 2047, SHAPE).astype(">i2")),
        "u4_24_8": (h5py.h5t.STD_U32LE, 24, 8, rng.integers(0, 2**24 - 1, SHAPE).astype("<u4")),
        "be_u2_13_3": (h5py.h5t.STD_U16BE, 13, 3, rng.integers(0, 2**13 - 1, SHAPE).astype(">u2")),
        "u1_7_0": (h5py.h5t.STD_U8LE, 7, 0, rng.integers(0, 127, SHAPE).astype("u1")),
        "i8_40_16": (
            h5py.h5t.STD_I64LE,
            40,
            16,
            rng.integers(-(2**39), 2**39 - 1, SHAPE).astype("<i8"),
        ),
    }
    # Unwritten chunks read as the fill value h5py converts from its stored form (shifted to the
    # bit offset, padding bits zero): positive, and negative for the signed types.
    sparse = list(cases)
    with h5py.File(path, "w") as f:
        for name, (base, precision, offset, data) in cases.items():
            nbit_dataset(f, name, base, precision, offset, data)[...] = data
            fill = -5 if data.dtype.kind == "i" else 5
            d = nbit_dataset(f, name + "_sparse", base, precision, offset, data, fill=fill)
            d[9:20, 6:17] = data[9:20, 6:17]
            if data.dtype.kind == "i":
                d = nbit_dataset(f, name + "_pos_sparse", base, precision, offset, data, fill=5)
                d[9:20, 6:17] = data[9:20, 6:17]
                sparse.append(name + "_pos")
        # Full precision: libhdf5 marks the filter a no-op and stores the elements as they are.
        f.create_dataset("full_f4", data=values("<f4"), chunks=CHUNKS, compression=5)
        f.create_dataset(
            "full_i2_gzip", data=values(">i2"), chunks=CHUNKS, compression=5, shuffle=True
        )
    for i, name in enumerate([*cases, *(n + "_sparse" for n in sparse), "full_f4", "full_i2_gzip"]):
        check_reads(path, name, seed=i)


def test_integers_with_padding_bits_need_the_nbit_filter(tmp_path):
    # 24 bits at bit 8 of an int32, stored raw: h5py's reads shift the values down; read as they
    # lie they would carry the padding, so chute refuses them (the n-bit filter's are read).
    path = tmp_path / "f.h5"
    data = np.arange(24, dtype="<i4").reshape(4, 6) - 12
    with h5py.File(path, "w") as f:
        tid = h5py.h5t.STD_I32LE.copy()
        tid.set_precision(24)
        tid.set_offset(8)
        d = h5py.h5d.create(f.id, b"raw", tid, h5py.h5s.create_simple(data.shape))
        d.write(h5py.h5s.ALL, h5py.h5s.ALL, data)
    with h5py.File(path, "r") as f:
        np.testing.assert_array_equal(f["raw"][()], data)
    with pytest.raises(chute.UnsupportedError, match=r"24 bits at bit 8.*without the n-bit"):
        chute.open(f"{path}/raw")


def test_nbit_floats_of_reduced_precision_are_unsupported(tmp_path):
    path = tmp_path / "f.h5"
    with h5py.File(path, "w") as f:
        tid = h5py.h5t.IEEE_F32LE.copy()
        tid.set_fields(19, 11, 8, 0, 11)
        tid.set_precision(20)
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        dcpl.set_chunk((5,))
        dcpl.set_filter(5, 0, ())
        h5py.h5d.create(f.id, b"x", tid, h5py.h5s.create_simple((12,)), dcpl=dcpl)
    with pytest.raises(chute.UnsupportedError, match=r"f\.h5.*'x'.*filter 5 \('nbit'\).*precision"):
        chute.open(f"{path}/x")[...]


def test_blosc2_and_unknown_filters_name_file_dataset_and_filter(tmp_path):
    path = tmp_path / "f.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("b2", data=values("<f4"), chunks=CHUNKS, **hdf5plugin.Blosc2())
        f.create_dataset("zfp", data=values("<f4"), chunks=CHUNKS, **hdf5plugin.Zfp(rate=8))
    with pytest.raises(chute.UnsupportedError, match=r"f\.h5.*'b2'.*filter 32026 \('blosc2"):
        chute.open(f"{path}/b2")[...]
    with pytest.raises(chute.UnsupportedError, match=r"f\.h5.*'zfp'.*filter 32013"):
        chute.open(f"{path}/zfp")[...]


@pytest.mark.parametrize(
    "name, kw",
    [
        ("bzip2", dict(hdf5plugin.BZip2())),
        ("lzf", {"compression": "lzf"}),
        ("szip", {"compression": "szip"}),
        ("bitshuffle", dict(hdf5plugin.Bitshuffle(cname="lz4"))),
        ("scaleoffset", {"scaleoffset": 2}),
    ],
)
def test_a_corrupt_chunk_names_file_dataset_and_chunk(tmp_path, name, kw):
    path = tmp_path / "f.h5"
    with h5py.File(path, "w") as f:
        ramp = np.arange(256, dtype="<f8").reshape(16, 16) / 4  # compresses: no chunk stored raw
        d = f.create_dataset("x", data=ramp, chunks=(8, 8), **kw)
        info = d.id.get_chunk_info(3)  # chunk (1, 1)
        assert info.filter_mask == 0
    with open(path, "r+b") as f:
        f.seek(info.byte_offset)
        f.write(b"\xff" * (info.size // 2))  # overwrite the first half of the stored chunk
    array = chute.open(f"{path}/x")
    np.testing.assert_array_equal(array[:8, :], h5py.File(path, "r")["x"][:8, :])
    with pytest.raises(chute.CorruptDataError, match=r"f\.h5/x.*chunk '1/1'"):
        array[8:, 8:]


def test_filters_of_files_libhdf5_1_10_cannot_open(tmp_path):
    # libver="latest" with a filter writes layout message version 5, which chute's own reader
    # opens: the filters and their client data come from its parse of the pipeline message.
    path = tmp_path / "f.h5"
    datasets = {
        "szip": (values(">i2"), {"compression": "szip"}),
        "bzip2": (values("<f8"), dict(hdf5plugin.BZip2())),
        "lzf": (values("<f4"), {"compression": "lzf", "shuffle": True}),
        "bitshuffle": (values("<f4"), dict(hdf5plugin.Bitshuffle(cname="zstd"))),
        "scaleoffset": (values(">f8"), {"scaleoffset": 3, "fillvalue": 3, "sparse": True}),
    }
    with h5py.File(path, "w", libver="latest") as f:
        for name, (data, kw) in datasets.items():
            kw = {"chunks": CHUNKS, **kw}
            if kw.pop("sparse", False):
                f.create_dataset(name, shape=data.shape, dtype=data.dtype, **kw)[9:20, 6:17] = data[
                    9:20, 6:17
                ]
            else:
                f.create_dataset(name, data=data, **kw)
    for i, name in enumerate(datasets):
        check_reads(path, name, seed=i)
