#!/usr/bin/env python3
"""Writes the seed corpora of the native HDF5 reader's fuzzers (hdf5_native_file_fuzz,
hdf5_native_messages_fuzz) from small files h5py writes: each chunk index kind, dense and compact
links and attributes, variable-length strings, soft links, virtual datasets (hyperslabs,
unlimited and printf-style mappings), compound (complex)
and enum (bool) types, a compact dataset, dimension scales (DIMENSION_LIST, REFERENCE_LIST). Run
from the repository root; the seeds are committed."""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

import h5py
import numpy as np

OUT = Path(__file__).resolve().parent / "corpus"


def small_files(folder: Path) -> dict[str, Path]:
    files = {}
    for libver in ("earliest", "latest"):
        path = folder / f"{libver}.h5"
        with h5py.File(path, "w", libver=libver) as f:
            f.create_dataset("fixed", data=np.arange(12, dtype="<f4").reshape(3, 4), chunks=(2, 2),
                             compression="gzip")  # fmt: skip
            d = f.create_dataset("ext1", shape=(4, 3), maxshape=(None, 3), chunks=(2, 2),
                                 dtype="<i2")  # fmt: skip
            d[:] = 1
            d = f.create_dataset("ext2", shape=(4, 3), maxshape=(None, None), chunks=(2, 2),
                                 dtype=">i4")  # fmt: skip
            d[:] = 2
            f.create_dataset("single", data=np.ones((2, 2), dtype="<u1"), chunks=(2, 2))
            f.attrs["nan"] = np.float32("nan")
            f.attrs["names"] = ["a", "bc"]
            f["soft"] = h5py.SoftLink("/fixed")
            f["flags"] = np.array([True, False])
            f["z"] = np.array([1 + 2j], dtype="<c8")
            dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
            dcpl.set_layout(h5py.h5d.COMPACT)
            space = h5py.h5s.create_simple((3,))
            h5py.h5d.create(f.id, b"compact", h5py.h5t.STD_I16BE, space, dcpl=dcpl)
            f["lat"] = np.arange(4.0)
            f["lat"].make_scale("lat")
            f["fixed"].dims[1].attach_scale(f["lat"])
        files[libver] = path
    path = folder / "dense.h5"
    with h5py.File(path, "w", libver="latest") as f:
        g = f.create_group("g")
        for i in range(10):
            g.create_group(f"s{i}")
            g.attrs[f"a{i}"] = i
    files["dense"] = path
    with h5py.File(folder / "src.h5", "w") as f:
        f.create_dataset("data", data=np.arange(6, dtype="<i2"))
    path = folder / "virtual.h5"
    with h5py.File(path, "w", libver="latest") as f:
        layout = h5py.VirtualLayout(shape=(2, 6), dtype="<i2")
        layout[0] = h5py.VirtualSource("src.h5", "data", shape=(6,))
        layout[1, ::2] = h5py.VirtualSource("src.h5", "data", shape=(6,))[:3]
        f.create_virtual_dataset("v", layout, fillvalue=-1)
    files["virtual"] = path
    # Unlimited and printf-style mappings, a block list (earliest format), the same file.
    with h5py.File(folder / "part-0.h5", "w") as f:
        f.create_dataset("x", data=np.arange(6, dtype="<i2").reshape(2, 3))
    path = folder / "virtual_unlimited.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("same", data=np.arange(6, dtype="<i2"))
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        vspace = h5py.h5s.create_simple((4, 3), (h5py.h5s.UNLIMITED, 3))
        vspace.select_hyperslab((0, 0), (h5py.h5s.UNLIMITED, 1), (3, 1), (2, 3))
        dcpl.set_virtual(vspace, b"part-%b.h5", b"x", h5py.h5s.create_simple((2, 3)))
        vspace = h5py.h5s.create_simple((4, 3), (h5py.h5s.UNLIMITED, 3))
        vspace.select_hyperslab((2, 0), (2, 1), (1, 2), (1, 1))
        source = h5py.h5s.create_simple((6,), (h5py.h5s.UNLIMITED,))
        source.select_hyperslab((1,), (2,), (3,), (1,))
        dcpl.set_virtual(vspace, b".", b"same", source)
        space = h5py.h5s.create_simple((4, 3), (h5py.h5s.UNLIMITED, 3))
        h5py.h5d.create(f.id, b"v", h5py.h5t.STD_I16LE, space, dcpl=dcpl)
    files["virtual_unlimited"] = path
    # String datasets: fixed-length, variable-length (global heap) contiguous and compact.
    path = folder / "strings.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("fixed", data=np.array([b"ab", b"", b"cdefgh"], dtype="S6"))
        f.create_dataset("vlen", data=np.array(["x", "", "yz"], dtype=object),
                         dtype=h5py.string_dtype())  # fmt: skip
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        dcpl.set_layout(h5py.h5d.COMPACT)
        space = h5py.h5s.create_simple((2,))
        d = h5py.h5d.create(f.id, b"compact", h5py.h5t.py_create(h5py.string_dtype()), space,
                            dcpl=dcpl)  # fmt: skip
        d.write(h5py.h5s.ALL, h5py.h5s.ALL, np.array([b"uv", b"w"], dtype=object))
    files["strings"] = path
    return files


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        files = small_files(Path(tmp))
        for name, path in files.items():
            data = path.read_bytes()
            (OUT / "hdf5_native_file_fuzz" / name).write_bytes(data)
            # Message seeds: the selector byte, then a message's bytes as found in a v2 header
            # (type, size, flags) of the latest file.
            if name == "virtual":
                gcol = data.find(b"GCOL")
                size = int.from_bytes(data[gcol + 24 : gcol + 32], "little")
                (OUT / "hdf5_native_messages_fuzz" / "virtual").write_bytes(
                    bytes([10]) + data[gcol + 32 : gcol + 32 + size]
                )
            if name != "latest":
                continue
            selectors = {0x03: 0, 0x01: 1, 0x05: 2, 0x0B: 4, 0x08: 5, 0x06: 6, 0x02: 7,
                         0x15: 8, 0x0C: 9}  # fmt: skip
            for m in re.finditer(b"OHDR", data):
                at = m.start() + 6
                flags = data[m.start() + 5]
                at += (16 if flags & 0x20 else 0) + (4 if flags & 0x10 else 0)
                width = 1 << (flags & 3)
                size = int.from_bytes(data[at : at + width], "little")
                at += width
                end = at + size
                while at + 4 <= end:
                    mtype, msize = data[at], int.from_bytes(data[at + 1 : at + 3], "little")
                    body = data[at + 4 : at + 4 + msize]
                    if mtype in selectors:
                        seed = bytes([selectors[mtype]]) + body
                        name = f"m{m.start()}_{mtype:02x}"
                        (OUT / "hdf5_native_messages_fuzz" / name).write_bytes(seed)
                    at += 4 + msize


if __name__ == "__main__":
    main()
