#!/usr/bin/env python3
"""Writes the seeds of hdf5_filters_fuzz for the filters added after the first four: one stored
chunk of 16 x 17 elements per pipeline, as h5py and hdf5plugin write it, behind the byte that
picks the pipeline in src/chute/format/hdf5_filters_fuzz.cc. Run from the repository root; the
seeds are committed."""

from __future__ import annotations

import tempfile
from pathlib import Path

import h5py
import hdf5plugin
import numpy as np

OUT = Path(__file__).resolve().parent / "corpus" / "hdf5_filters_fuzz"
SHAPE = (16, 17)


def nbit_chunk(f):
    tid = h5py.h5t.STD_I32LE.copy()
    tid.set_precision(20)
    tid.set_offset(3)
    dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
    dcpl.set_chunk(SHAPE)
    dcpl.set_filter(5, 0, ())
    h5py.h5d.create(f.id, b"nbit", tid, h5py.h5s.create_simple(SHAPE), dcpl=dcpl)
    f["nbit"][...] = np.arange(-136, 136, dtype="<i4").reshape(SHAPE) * 97
    return f["nbit"]


def main():
    floats = (np.arange(272, dtype="<f4").reshape(SHAPE) * 0.37).round(2)
    ints = np.arange(272, dtype="<i4").reshape(SHAPE) * 13 - 900
    pipelines = {
        "e_szip": (4, floats, {"compression": "szip", "compression_opts": ("nn", 16)}),
        "f_bzip2": (5, floats, dict(hdf5plugin.BZip2())),
        "g_lzf_fletcher32": (6, floats, {"compression": "lzf", "fletcher32": True}),
        "h_bitshuffle": (7, floats, dict(hdf5plugin.Bitshuffle(nelems=16, cname="none"))),
        "i_bitshuffle_lz4": (8, floats, dict(hdf5plugin.Bitshuffle(cname="lz4"))),
        "j_bitshuffle_zstd": (
            9,
            floats.astype(">f4"),
            {**hdf5plugin.Bitshuffle(nelems=32, cname="zstd"), "fletcher32": True},
        ),
        "l_scaleoffset_float": (11, floats, {"scaleoffset": 2}),
        "m_scaleoffset_int": (12, ints.astype(">i4"), {"scaleoffset": 0, "compression": "gzip"}),
    }
    OUT.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as folder, h5py.File(Path(folder) / "s.h5", "w") as f:
        for name, (selector, data, kw) in pipelines.items():
            d = f.create_dataset(name, data=data, chunks=SHAPE, **kw)
            (OUT / name).write_bytes(bytes([selector]) + d.id.read_direct_chunk((0, 0))[1])
        chunk = nbit_chunk(f).id.read_direct_chunk((0, 0))[1]
        (OUT / "k_nbit").write_bytes(bytes([10]) + chunk)


if __name__ == "__main__":
    main()
