"""The native HDF5 reader (src/chute/format/hdf5_native) against h5py.

Files of every layout, chunk index kind, libver, byte order and numeric type are written here
with h5py; the reader's view of each (the JSON that the hdf5_native_dump test program prints) is
compared with what h5py reports: shapes, dtypes, chunk shapes, filters, fill values, attribute
values, links and every chunk index entry (offset, filter mask, byte offset, size).
"""

from __future__ import annotations

import itertools
import json
import math
import os
import re
import subprocess
from pathlib import Path

import numpy as np
import pytest

h5py = pytest.importorskip("h5py")

REPO = Path(__file__).resolve().parents[2]


def _dump_binary() -> Path:
    env = os.environ.get("CHUTE_HDF5_NATIVE_DUMP")
    candidates = [Path(env)] if env else []
    candidates += [REPO / "build" / preset / "tests" / "hdf5_native_dump"
                   for preset in ("release", "debug", "asan")]  # fmt: skip
    for c in candidates:
        if c.exists():
            return c
    pytest.skip("hdf5_native_dump not built "
                "(cmake --build --preset release --target hdf5_native_dump)")  # fmt: skip


def dump(path) -> dict:
    result = subprocess.run([str(_dump_binary()), str(path)], capture_output=True, text=True,
                            timeout=120, check=False)  # fmt: skip
    out = json.loads(result.stdout)
    assert result.returncode == 0, out
    return out


LIBVERS = ["earliest", "v108", "v110", "latest"]
NUMERIC = ["<i1", "<u1", "<i2", ">i2", "<u2", ">u4", "<i4", ">i8", "<u8",
           "<f2", ">f2", "<f4", ">f4", "<f8", ">f8"]  # fmt: skip


def _low_level(f, name, data, *, layout, chunks=None, alloc_early=False, maxshape=None):
    """A dataset made through h5py's low-level API (compact layout, early allocation)."""
    dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
    if layout == "compact":
        dcpl.set_layout(h5py.h5d.COMPACT)
    else:
        dcpl.set_chunk(chunks)
    if alloc_early:
        dcpl.set_alloc_time(h5py.h5d.ALLOC_TIME_EARLY)
    space = h5py.h5s.create_simple(data.shape, maxshape or data.shape)
    tid = h5py.h5t.py_create(data.dtype)
    h5py.h5d.create(f.id, name.encode(), tid, space, dcpl=dcpl)
    f[name][...] = data


def write_matrix(path: Path, libver: str) -> None:
    rng = np.random.default_rng(len(libver))
    with h5py.File(path, "w", libver=libver) as f:
        base = rng.standard_normal((37, 23)).astype("<f4")
        f.create_dataset("contiguous", data=np.arange(60, dtype="<i4").reshape(6, 10))
        _low_level(f, "compact", np.arange(12, dtype=">i2").reshape(3, 4), layout="compact")
        # Fixed dims: a fixed array index (libver >= v110), a v1 B-tree before.
        f.create_dataset("fixed", data=base, chunks=(8, 5))
        # Unwritten chunks and partial edge chunks.
        d = f.create_dataset("sparse", shape=(37, 23), dtype="<f8", chunks=(8, 5), fillvalue=-1.5)
        d[0:8, 0:5] = 1
        d[30:37, 20:23] = 2
        # One unlimited dimension: an extensible array; two: a v2 B-tree.
        d = f.create_dataset("ext1", shape=(20, 9), maxshape=(None, 9), chunks=(3, 4), dtype="<i8")
        d[:] = np.arange(180).reshape(20, 9)
        d.resize((26, 9))
        d[20:] = 7
        d = f.create_dataset("ext1_mid", shape=(9, 20), maxshape=(9, None), chunks=(4, 3),
                             dtype="<u2")  # fmt: skip
        d[:, :14] = np.arange(9 * 14).reshape(9, 14)
        d = f.create_dataset("ext2", shape=(11, 13), maxshape=(None, None), chunks=(4, 4),
                             dtype="<f4")  # fmt: skip
        d[:] = rng.standard_normal((11, 13))
        d[5:9, 0:4] = 0
        f.create_dataset("single", data=base, chunks=base.shape)
        f.create_dataset("single_gzip", data=base, chunks=base.shape, compression="gzip")
        _low_level(f, "implicit", np.arange(200, dtype="<i4").reshape(20, 10), layout="chunked",
                   chunks=(6, 4), alloc_early=True)  # fmt: skip
        for name, maxshape in [("gzip", None), ("gzip_ext1", (None, 23)),
                               ("gzip_ext2", (None, None))]:  # fmt: skip
            d = f.create_dataset(name, shape=(37, 23), maxshape=maxshape, chunks=(8, 5),
                                 dtype="<f4", compression="gzip", shuffle=True,
                                 fletcher32=True)  # fmt: skip
            d[:] = base
            d[8:16, 5:10] = 0  # compresses well
            d[16:24, :] = np.nan
        types = f.create_group("types")
        for dt in NUMERIC:
            values = (np.arange(30) * 3 - 20).astype(dt)
            name = dt.replace("<", "le_").replace(">", "be_")
            types.create_dataset(name, data=values, chunks=(7,))
        # Paged fixed array (more than 1024 chunks), most of its pages unwritten.
        d = f.create_dataset("paged", shape=(3000,), chunks=(1,), dtype="<u1")
        d[0:10] = 1
        d[2500:2510] = 2
        # Attributes of every kind on the root.
        f.attrs["int"] = np.int32(-7)
        f.attrs["uint64"] = np.uint64(2**63 + 5)
        f.attrs["be_int"] = np.array([1, -2, 3], dtype=">i2")
        f.attrs["float"] = 1.25
        f.attrs["nan"] = np.float32("nan")
        f.attrs["inf"] = np.array([np.inf, -np.inf, 0.5])
        f.attrs["half"] = np.array([0.5, -2.0, 65504.0], dtype="<f2")
        f.attrs["fixed_str"] = np.bytes_(b"hello")
        f.attrs["fixed_strs"] = np.array([b"a", b"bcd"], dtype="S4")
        f.attrs["vlen_str"] = "variable ü"
        f.attrs["vlen_strs"] = ["one", "two", "three"]
        f.attrs["matrix"] = np.arange(6, dtype="<f8").reshape(2, 3)
        f["fixed"].attrs["_FillValue"] = np.float32("nan")
        f["fixed"].attrs["units"] = "K"
        many = f.create_group("many_attrs")
        for i in range(40):
            many.attrs[f"a{i:02d}"] = np.float64(i) / 3
        many.attrs["s"] = "dense string"
        links = f.create_group("many_links")
        for i in range(40):
            links.create_group(f"g{i:02d}").attrs["i"] = i
        links.create_dataset("data", data=np.arange(5))
        f["soft"] = h5py.SoftLink("/fixed")
        f["nested/deeper/soft_rel"] = h5py.SoftLink("/ext1")
        f["external"] = h5py.ExternalLink("other.h5", "/data")


def write_other(path: Path) -> None:
    with h5py.File(path, "w") as f:
        f.create_dataset("data", data=np.arange(24, dtype="<i2").reshape(4, 6), chunks=(2, 3))


@pytest.fixture(scope="module")
def matrix(tmp_path_factory):
    folder = tmp_path_factory.mktemp("hdf5_native")
    write_other(folder / "other.h5")
    files = {}
    for libver in LIBVERS:
        path = folder / f"{libver}.h5"
        write_matrix(path, libver)
        files[libver] = path
    return files


def _same_number(a, b) -> bool:
    if isinstance(a, str) and isinstance(b, float):
        return a == _float_name(b)
    return a == b


def _float_name(v) -> str | None:
    v = float(v)
    return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf") if math.isinf(v) else None


def _attr_values(value) -> list:
    arr = np.asarray(value)
    if arr.dtype.kind == "O" or arr.dtype.kind == "U":
        return [v.decode() if isinstance(v, bytes) else str(v) for v in arr.ravel()]
    if arr.dtype.kind == "S":
        return [v.decode() for v in arr.ravel()]
    return arr.ravel().tolist()


def compare_attrs(h5obj, native: dict, where: str) -> int:
    assert sorted(native["attrs"]) == sorted(h5obj.attrs.keys()), where
    for name, value in h5obj.attrs.items():
        got = native["attrs"][name]
        assert "error" not in got, (where, name, got)
        expected = _attr_values(value)
        assert len(got["value"]) == len(expected), (where, name)
        for g, e in zip(got["value"], expected):
            assert _same_number(g, e), (where, name, got["value"], expected)
        arr = np.asarray(value)
        if arr.dtype.kind in "iuf":
            assert got["dtype"] == h5obj.attrs.get_id(name).dtype.str, (where, name)
    return len(h5obj.attrs)


def compare_dataset(ds, native: dict) -> None:
    where = ds.name
    assert native["kind"] == "dataset", where
    assert native["dtype"] == ds.dtype.str, where
    assert tuple(native["shape"]) == ds.shape, where
    assert tuple(native["maxshape"]) == ds.maxshape, where
    dcpl = ds.id.get_create_plist()
    layout = {h5py.h5d.COMPACT: "compact", h5py.h5d.CONTIGUOUS: "contiguous",
              h5py.h5d.CHUNKED: "chunked"}[dcpl.get_layout()]  # fmt: skip
    assert native["layout"] == layout, where
    filters = [dcpl.get_filter(i)[0] for i in range(dcpl.get_nfilters())]
    assert [f["id"] for f in native["filters"]] == filters, where
    for i, f in enumerate(native["filters"]):
        assert tuple(f["client_data"]) == tuple(dcpl.get_filter(i)[2]), where
    if native["fill"]["value"] is not None:
        fill = np.frombuffer(bytes.fromhex(native["fill"]["value"]), dtype=ds.dtype)[0]
        assert fill == ds.fillvalue or (np.isnan(fill) and np.isnan(ds.fillvalue)), where
    else:
        assert ds.fillvalue == 0, where
    if layout == "chunked":
        assert tuple(native["chunks"]) == ds.chunks, where
        # Looked up chunk by chunk: get_chunk_info(i) lists the chunks of an extensible array
        # whose unlimited dimension is not the first at wrong positions (HDF5 2.0).
        expected = set()
        if ds.maxshape[0] is not None and None in ds.maxshape:
            # HDF5 2.0 lists the chunks of an extensible array whose unlimited dimension is not
            # the first at swizzled positions (get_chunk_info and get_chunk_info_by_coord), but
            # reads them right: each chunk's stored bytes must be what read_direct_chunk gives.
            raw = Path(ds.file.filename).read_bytes()
            assert len(native["chunk_index"]) == ds.id.get_num_chunks(), where
            for c, m, a, s in native["chunk_index"]:
                mask, chunk = ds.id.read_direct_chunk(tuple(c))
                assert (mask, chunk) == (m, raw[a : a + s]), (where, c)
                expected.add((tuple(c), m, a, s))
        else:
            for i in range(ds.id.get_num_chunks()):
                info = ds.id.get_chunk_info(i)
                expected.add((tuple(info.chunk_offset), info.filter_mask, info.byte_offset,
                              info.size))  # fmt: skip
        got = {(tuple(c), m, a, s) for c, m, a, s in native["chunk_index"]}
        assert got == expected, (where, native["index"], sorted(got ^ expected)[:5])
    elif layout == "contiguous":
        assert native["address"] == ds.id.get_offset(), where
    else:
        assert bytes.fromhex(native["data"]) == ds[()].tobytes(), where


def compare_file(path: Path) -> dict:
    native = dump(path)
    objects = native["objects"]
    counts = {"datasets": 0, "groups": 0, "attrs": 0, "index": set()}
    with h5py.File(path, "r") as f:
        counts["attrs"] += compare_attrs(f, objects["/"], "/")
        visited = []

        def visit(name, link):
            visited.append("/" + name)

        f.visititems_links(visit)
        for path_ in visited:
            link = f.get(path_, getlink=True)
            got = objects[path_]
            assert "error" not in got, (path_, got)
            if isinstance(link, h5py.SoftLink):
                assert got["kind"] == "softlink" and got["target"] == link.path, path_
                continue
            if isinstance(link, h5py.ExternalLink):
                assert got["kind"] == "externallink", path_
                assert (got["file"], got["target"]) == (link.filename, link.path), path_
                compare_dataset(f[path_], got["resolved"])
                continue
            obj = f[path_]
            counts["attrs"] += compare_attrs(obj, got, path_)
            if isinstance(obj, h5py.Dataset):
                compare_dataset(obj, got)
                counts["datasets"] += 1
                if got["layout"] == "chunked":
                    counts["index"].add(got["index"])
            else:
                assert got["kind"] == "group", path_
                counts["groups"] += 1
        assert sorted(k for k in objects if k != "/") == sorted(visited)
    return counts


@pytest.mark.parametrize("libver", LIBVERS)
def test_native_reader_matches_h5py(matrix, libver):
    counts = compare_file(matrix[libver])
    assert counts["datasets"] >= 15 + len(NUMERIC)
    assert counts["groups"] >= 40
    assert counts["attrs"] >= 60
    if libver == "latest":
        assert counts["index"] >= {"fixed_array", "extensible_array", "btree_v2", "single_chunk",
                                   "implicit"}  # fmt: skip
    if libver == "earliest":
        assert counts["index"] == {"btree_v1"}


def test_soft_link_resolves_to_dataset(matrix):
    objects = dump(matrix["latest"])["objects"]
    assert objects["/soft"]["resolved_kind"] == "dataset"
    assert objects["/nested/deeper/soft_rel"]["resolved_kind"] == "dataset"
    assert objects["/external"]["resolved"]["shape"] == [4, 6]


def test_layout_versions(matrix):
    objects = dump(matrix["latest"])["objects"]
    # HDF5 2.0 writes filtered chunked datasets with layout version 5 (8-byte chunk sizes).
    filtered = 5 if h5py.version.hdf5_version_tuple >= (2, 0, 0) else 4
    assert objects["/gzip"]["layout_version"] == filtered, objects["/gzip"]
    assert objects["/fixed"]["layout_version"] == 4
    assert dump(matrix["earliest"])["objects"]["/gzip"]["layout_version"] == 3


def test_superblock_versions(matrix):
    versions = {libver: dump(path)["superblock"]["version"] for libver, path in matrix.items()}
    assert versions["earliest"] == 0
    assert versions["latest"] == 3


def test_userblock_offsets(tmp_path):
    path = tmp_path / "userblock.h5"
    with h5py.File(path, "w", userblock_size=1024, libver="latest") as f:
        d = f.create_dataset("x", shape=(10, 10), chunks=(5, 5), dtype="<f4")
        d[:] = 1
    out = dump(path)
    assert out["superblock"]["position"] == 1024
    compare_file(path)


def test_paged_extensible_array(tmp_path):
    # Past element 131056 the extensible array's data blocks are paged (1024 elements a page).
    path = tmp_path / "paged_ea.h5"
    with h5py.File(path, "w", libver="latest") as f:
        d = f.create_dataset("x", shape=(140_000,), maxshape=(None,), chunks=(1,), dtype="<u1")
        d[0:100] = 1
        d[135_000:135_010] = 2
        d[139_990:] = 3
    counts = compare_file(path)
    assert counts["index"] == {"extensible_array"}


def test_hard_link_cycle_is_reported_once(tmp_path):
    path = tmp_path / "cycle.h5"
    with h5py.File(path, "w") as f:
        g = f.create_group("g")
        g["up"] = f["/"]
    objects = dump(path)["objects"]
    assert objects["/g/up"]["kind"] == "hardlink_seen"


def test_soft_link_cycle_is_an_error(tmp_path):
    path = tmp_path / "softcycle.h5"
    with h5py.File(path, "w") as f:
        f["a"] = h5py.SoftLink("/b")
        f["b"] = h5py.SoftLink("/a")
    objects = dump(path)["objects"]
    assert "cycle" in objects["/a"]["error"]


def _truncations(path: Path):
    data = path.read_bytes()
    for cut in (40, 200, 1000, len(data) // 2, len(data) - 100):
        yield cut, data[:cut]


def test_truncated_files_fail_cleanly(matrix, tmp_path):
    for libver, path in matrix.items():
        for cut, data in _truncations(path):
            bad = tmp_path / f"{libver}_{cut}.h5"
            bad.write_bytes(data)
            result = subprocess.run([str(_dump_binary()), str(bad)], capture_output=True,
                                    text=True, timeout=120, check=False)  # fmt: skip
            assert result.returncode in (0, 1), (libver, cut, result.stderr[-2000:])
            out = json.loads(result.stdout)
            if result.returncode == 1:
                assert out["code"] in ("corrupt data", "invalid metadata", "not found"), out
            else:
                # Objects whose structures lie past the cut report an error naming them.
                assert any("error" in o for o in out["objects"].values()), (libver, cut)


def test_corrupted_checksum_is_detected(matrix, tmp_path):
    data = bytearray(matrix["latest"].read_bytes())
    data[20] ^= 0xFF  # inside the version 3 superblock
    bad = tmp_path / "bad_superblock.h5"
    bad.write_bytes(bytes(data))
    result = subprocess.run([str(_dump_binary()), str(bad)], capture_output=True, text=True,
                            timeout=60, check=False)  # fmt: skip
    assert result.returncode == 1
    assert "checksum" in json.loads(result.stdout)["error"]


def test_duplicate_chunk_in_btree_is_corrupt(tmp_path):
    path = tmp_path / "dup.h5"
    with h5py.File(path, "w", libver="earliest") as f:
        f.create_dataset("x", data=np.arange(40, dtype="<i4").reshape(4, 10), chunks=(2, 5))
    data = bytearray(path.read_bytes())
    # The chunk B-tree's one leaf (type 1, level 0): make its second key repeat the first.
    node = next(m.start() for m in re.finditer(b"TREE\x01\x00", bytes(data)))
    key_size, children = 8 + 8 * 3, 8 + 2 * 8
    first = node + children
    second = first + key_size + 8
    data[second + 8 : second + key_size] = data[first + 8 : first + key_size]
    bad = tmp_path / "dup_bad.h5"
    bad.write_bytes(bytes(data))
    error = dump(bad)["objects"]["/x"]["error"]
    assert "listed twice" in error and "/x" in error and "dup_bad.h5" in error


def _selection(space) -> dict:
    kind = space.get_select_type()
    if kind == h5py.h5s.SEL_ALL:
        return {"kind": "all"}
    assert kind == h5py.h5s.SEL_HYPERSLABS and space.is_regular_hyperslab()
    start, stride, count, block = space.get_regular_hyperslab()

    def unlimited(v):
        return [None if x == h5py.h5s.UNLIMITED else x for x in v]

    return {"kind": "hyperslab", "regular": True, "start": list(start), "stride": list(stride),
            "count": unlimited(count), "block": list(block)}  # fmt: skip


def _as_blocks(sel: dict) -> dict:
    """A regular hyperslab as the list of its blocks' first and last corners, row-major."""
    first, last = [], []
    for index in itertools.product(*[range(c) for c in sel["count"]]):
        corner = [s + i * t for s, i, t in zip(sel["start"], index, sel["stride"])]
        first += corner
        last += [c + b - 1 for c, b in zip(corner, sel["block"])]
    return {"kind": "hyperslab", "regular": False, "first": first, "last": last}


@pytest.mark.parametrize("libver", ["earliest", "latest"])
def test_virtual_dataset_mappings(tmp_path, libver):
    for i in range(4):
        with h5py.File(tmp_path / f"src{i}.h5", "w") as f:
            f.create_dataset("data", data=np.arange(12, dtype="<f4") + i)
    path = tmp_path / "vds.h5"
    with h5py.File(path, "w", libver=libver) as f:
        full = h5py.VirtualLayout(shape=(4, 12), dtype="<f4")
        for i in range(4):
            full[i] = h5py.VirtualSource(f"src{i}.h5", "data", shape=(12,))
        f.create_virtual_dataset("full", full, fillvalue=np.nan)
        strided = h5py.VirtualLayout(shape=(24,), dtype="<f4")
        strided[0::2] = h5py.VirtualSource("src0.h5", "data", shape=(12,))
        strided[1::4] = h5py.VirtualSource("src1.h5", "data", shape=(12,))[::2]
        f.create_virtual_dataset("strided", strided, fillvalue=-1)
    objects = dump(path)["objects"]
    with h5py.File(path, "r") as f:
        for name in ("full", "strided"):
            got = objects["/" + name]
            assert got["layout"] == "virtual", (name, got)
            assert tuple(got["shape"]) == f[name].shape
            expected = [{"file": m.file_name, "dataset": m.dset_name,
                         "source": _selection(m.src_space), "target": _selection(m.vspace)}
                        for m in f[name].virtual_sources()]  # fmt: skip
            for g, e in zip(got["virtual"], expected):
                for side in ("source", "target"):
                    if g[side].get("regular") is False:  # old files list blocks
                        e[side] = _as_blocks(e[side])
            assert got["virtual"] == expected, name
