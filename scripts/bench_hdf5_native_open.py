#!/usr/bin/env python3
"""Open time of an HDF5 dataset of many chunks (32,768 by default) in each chunk index kind:
chute's native reader (hdf5_native_dump --time: superblock, object header and the whole chunk
index), chute.open (what users get: the native reader alone, metadata and index) against h5py
(opening the dataset, and listing every chunk with H5Dchunk_iter, a linear pass).

The files are written with libver bounds of at most v110 (every index kind but the v5 layouts).
chute.open is timed only when the chute package imports (PYTHONPATH).

usage: bench_hdf5_native_open.py OUTDIR [--dump build/release/tests/hdf5_native_dump] [--chunks N]
"""

from __future__ import annotations

import argparse
import json
import subprocess
from pathlib import Path

import h5py
import numpy as np
from _timing import best_seconds


def write(outdir: Path, chunks: int) -> dict:
    side = round(chunks**0.5)
    shape = (side, chunks // side)
    files = {}
    specs = {
        "btree_v1": {"libver": "earliest", "maxshape": None},
        "fixed_array": {"libver": ("v110", "v110"), "maxshape": None},
        "extensible_array": {"libver": ("v110", "v110"), "maxshape": (None, shape[1])},
        "btree_v2": {"libver": ("v110", "v110"), "maxshape": (None, None)},
        "implicit": {"libver": ("v110", "v110"), "maxshape": None, "implicit": True},
    }
    for kind, spec in specs.items():
        path = outdir / f"{kind}_{chunks}.h5"
        files[kind] = path
        if path.exists():
            continue
        with h5py.File(path, "w", libver=spec["libver"]) as f:
            if spec.get("implicit"):
                dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
                dcpl.set_chunk((1, 1))
                dcpl.set_alloc_time(h5py.h5d.ALLOC_TIME_EARLY)
                space = h5py.h5s.create_simple(shape, shape)
                h5py.h5d.create(f.id, b"x", h5py.h5t.NATIVE_UINT8, space, dcpl=dcpl)
            else:
                f.create_dataset(
                    "x",
                    shape=shape,
                    maxshape=spec["maxshape"],
                    chunks=(1, 1),
                    dtype="u1",
                    compression="gzip" if kind != "implicit" else None,
                )
                f["x"][:] = 1
    return files


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("outdir", type=Path)
    parser.add_argument("--dump", default="build/release/tests/hdf5_native_dump")
    parser.add_argument("--chunks", type=int, default=32768)
    args = parser.parse_args()
    args.outdir.mkdir(parents=True, exist_ok=True)
    files = write(args.outdir, args.chunks)
    try:
        import chute
    except ImportError:
        chute = None
    print(f"h5py {h5py.__version__}, HDF5 {h5py.version.hdf5_version}")
    header = ("index", "chunks", "chute native", "chute.open", "h5py open", "h5py chunk_iter")
    print(f"{header[0]:18} {header[1]:>7} {header[2]:>13} {header[3]:>13} {header[4]:>10} "
          f"{header[5]:>16}")  # fmt: skip
    for kind, path in files.items():
        out = subprocess.run([args.dump, str(path), "--time", "/x", "--repeat", "5"],
                             capture_output=True, text=True, check=True)  # fmt: skip
        native = json.loads(out.stdout)

        def h5py_open(path=path):
            with h5py.File(path, "r") as f:
                assert f["x"].shape

        def h5py_iter(path=path, native=native):
            with h5py.File(path, "r") as f:
                n = [0]
                f["x"].id.chunk_iter(lambda info: n.__setitem__(0, n[0] + 1))
                assert n[0] == native["chunks"], (n[0], native["chunks"])

        shape = native_shape(path)  # h5py's, outside the timed open

        def chute_open(path=path, shape=shape):
            assert chute.open(f"{path}/x").shape == shape

        opened = f"{best_seconds(chute_open, 5) * 1e3:>10.2f} ms" if chute else f"{'-':>13}"
        print(f"{kind:18} {native['chunks']:>7} {native['seconds'] * 1e3:>10.2f} ms {opened} "
              f"{best_seconds(h5py_open, 5) * 1e3:>7.2f} ms {best_seconds(h5py_iter, 5) * 1e3:>13.2f} ms")  # fmt: skip


def native_shape(path) -> tuple:
    with h5py.File(path, "r") as f:
        return f["x"].shape


if __name__ == "__main__":
    np.seterr(all="ignore")
    main()
