"""HDF5 virtual datasets read through their sources: every read of a virtual dataset becomes
reads of its source datasets' chunks or contiguous ranges in one plan, with the fill value where
no mapping (or no source file) covers an element. Each file is written by h5py and every read is
compared with h5py's, whole and in random boxes."""

from __future__ import annotations

import os
import shutil

import h5py
import numpy as np
import pytest
from conftest import check_h5py_reads

import chute


def check_reads(path, name="v", seed=0):
    """The values read (they equal h5py's)."""
    return check_h5py_reads(path, name, seed=seed, boxes=30)[...]


def values(shape, seed, dtype="f4"):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(shape) * 100).round(2).astype(dtype)


def write_sources(folder, n=4, shape=(5, 6, 7), layouts=("gzip", "contiguous", "chunked", "be")):
    """n source files "src<i>.h5" holding dataset "x" in different layouts (gzip-chunked,
    contiguous, plain chunked, big-endian chunked)."""
    out = []
    for i in range(n):
        data = values(shape, seed=i)
        kind = layouts[i % len(layouts)]
        with h5py.File(folder / f"src{i}.h5", "w") as f:
            if kind == "gzip":
                f.create_dataset("x", data=data, chunks=(2, 3, 4), compression="gzip", shuffle=True)
            elif kind == "contiguous":
                f.create_dataset("x", data=data)
            elif kind == "chunked":
                f.create_dataset("x", data=data, chunks=(3, 6, 7))
            else:
                f.create_dataset("x", data=data.astype(">f4"), chunks=(1, 6, 7))
        out.append(data)
    return out


def test_four_files_stacked_along_axis_0(tmp_path):
    parts = write_sources(tmp_path)
    layout = h5py.VirtualLayout((20, 6, 7), "f4")
    for i in range(4):
        layout[i * 5 : (i + 1) * 5] = h5py.VirtualSource(f"src{i}.h5", "x", shape=(5, 6, 7))
    with h5py.File(tmp_path / "stack.h5", "w", libver="latest") as f:
        f.create_virtual_dataset("v", layout, fillvalue=-1)
    got = check_reads(tmp_path / "stack.h5")
    np.testing.assert_array_equal(got, np.concatenate(parts))
    assert chute.open(f"{tmp_path}/stack.h5/v").format == "hdf5"


def test_sources_as_channels_and_uncovered_elements_read_as_fill(tmp_path):
    # Each (T, H, W) source is one channel of a (T, C, H, W) virtual dataset; channel 4 and the
    # last two steps have no source.
    write_sources(tmp_path)
    layout = h5py.VirtualLayout((7, 5, 6, 7), "f4")
    for i in range(4):
        layout[:5, i] = h5py.VirtualSource(f"src{i}.h5", "x", shape=(5, 6, 7))
    with h5py.File(tmp_path / "channels.h5", "w") as f:
        f.create_virtual_dataset("v", layout, fillvalue=np.float32(np.nan))
    got = check_reads(tmp_path / "channels.h5")
    assert np.isnan(got[:, 4]).all() and np.isnan(got[5:]).all()


def test_strided_selections(tmp_path):
    write_sources(tmp_path)
    src = [h5py.VirtualSource(f"src{i}.h5", "x", shape=(5, 6, 7)) for i in range(4)]
    layout = h5py.VirtualLayout((10, 6, 16), "f4")
    layout[0:10:2, :, 0:7] = src[0]  # every other step
    layout[1:10:2, :, 0:7] = src[1]
    layout[:5, :, 8:16:2] = src[2][:, :, 0:7:2]  # strided on both sides
    layout[5:10, 0:6:3, 9:16:4] = src[3][:, 1:3, 1:3]  # blocks of one, stride 3 and 4
    with h5py.File(tmp_path / "strided.h5", "w") as f:
        f.create_virtual_dataset("v", layout, fillvalue=7)
    check_reads(tmp_path / "strided.h5")


def test_hyperslab_blocks(tmp_path):
    # Blocks of 2 every 3 on the virtual side, a plain range on the source side.
    with h5py.File(tmp_path / "src.h5", "w") as f:
        f.create_dataset("x", data=values((12, 8), seed=5), chunks=(5, 3))
    vspace = h5py.h5s.create_simple((20, 8))
    vspace.select_hyperslab((1, 0), (6, 1), (3, 1), (2, 8))
    sspace = h5py.h5s.create_simple((12, 8))
    sspace.select_hyperslab((0, 0), (1, 1), (1, 1), (12, 8))
    dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
    dcpl.set_virtual(vspace, b"src.h5", b"x", sspace)
    dcpl.set_fill_value(np.array(-5, dtype="f4"))
    with h5py.File(tmp_path / "blocks.h5", "w") as f:
        h5py.h5d.create(f.id, b"v", h5py.h5t.IEEE_F32LE, h5py.h5s.create_simple((20, 8)), dcpl=dcpl)
    check_reads(tmp_path / "blocks.h5")


def test_a_missing_source_reads_as_fill_and_is_reported_once(tmp_path, capfd):
    parts = write_sources(tmp_path)
    layout = h5py.VirtualLayout((20, 6, 7), "f4")
    for i in range(4):
        layout[i * 5 : (i + 1) * 5] = h5py.VirtualSource(f"src{i}.h5", "x", shape=(5, 6, 7))
    with h5py.File(tmp_path / "stack.h5", "w") as f:
        f.create_virtual_dataset("v", layout, fillvalue=-1)
    os.remove(tmp_path / "src2.h5")
    capfd.readouterr()
    got = check_reads(tmp_path / "stack.h5")
    assert (got[10:15] == -1).all()
    np.testing.assert_array_equal(got[15:], parts[3])
    chute.open(f"{tmp_path}/stack.h5/v")  # opened again: not reported again
    err = capfd.readouterr().err
    assert err.count("src2.h5' not found") == 1, err
    assert "fill value" in err


def test_a_source_in_the_same_file(tmp_path):
    data = values((6, 4), seed=9)
    layout = h5py.VirtualLayout((6, 8), "f4")
    layout[:, :4] = h5py.VirtualSource(".", "/group/x", shape=(6, 4))
    layout[:, 4:] = h5py.VirtualSource(".", "y", shape=(6, 4))
    with h5py.File(tmp_path / "same.h5", "w") as f:
        f.create_dataset("group/x", data=data, chunks=(2, 2))
        f.create_dataset("y", data=data * 2)
        f.create_virtual_dataset("v", layout, fillvalue=0)
    check_reads(tmp_path / "same.h5")


def test_sources_with_unlimited_dimensions(tmp_path):
    for i in range(2):
        with h5py.File(tmp_path / f"grow{i}.h5", "w") as f:
            f.create_dataset("u", data=np.arange(12, dtype="i4").reshape(3, 4) + 100 * i,
                             maxshape=(None, 4), chunks=(2, 4))  # fmt: skip
    layout = h5py.VirtualLayout((6, 4), "i4", maxshape=(None, 4))
    for i in range(2):
        source = h5py.VirtualSource(f"grow{i}.h5", "u", shape=(3, 4), maxshape=(None, 4))
        layout[i : h5py.h5s.UNLIMITED : 2, :] = source[0 : h5py.h5s.UNLIMITED, :]
    with h5py.File(tmp_path / "unlim.h5", "w", libver="latest") as f:
        f.create_virtual_dataset("v", layout, fillvalue=-9)
    assert check_reads(tmp_path / "unlim.h5").shape == (6, 4)
    # The sources grow (unevenly): the virtual dataset follows, as h5py sees it.
    with h5py.File(tmp_path / "grow0.h5", "a") as f:
        f["u"].resize((7, 4))
        f["u"][3:] = 77
    with h5py.File(tmp_path / "grow1.h5", "a") as f:
        f["u"].resize((5, 4))
        f["u"][3:] = 88
    assert check_reads(tmp_path / "unlim.h5").shape == (13, 4)


def test_relative_and_absolute_source_names(tmp_path, monkeypatch):
    sub = tmp_path / "data"
    sub.mkdir()
    write_sources(sub, n=2)
    layout = h5py.VirtualLayout((10, 6, 7), "f4")
    layout[0:5] = h5py.VirtualSource("data/src0.h5", "x", shape=(5, 6, 7))  # beside the file
    layout[5:10] = h5py.VirtualSource(str(sub / "src1.h5"), "x", shape=(5, 6, 7))  # absolute
    with h5py.File(tmp_path / "names.h5", "w") as f:
        f.create_virtual_dataset("v", layout, fillvalue=0)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # relative names are found beside the file, not here
    check_reads(tmp_path / "names.h5")
    # Moved together with its sources: the absolute name is then found beside the file.
    moved = tmp_path / "moved"
    shutil.copytree(sub, moved / "data")
    shutil.copy(tmp_path / "names.h5", moved / "names.h5")
    shutil.copy(sub / "src1.h5", moved / "src1.h5")
    shutil.rmtree(sub)
    with h5py.File(moved / "names.h5") as f:
        expected = f["v"][()]
    np.testing.assert_array_equal(chute.open(f"{moved}/names.h5/v")[...], expected)


def test_a_percent_sign_in_a_source_name(tmp_path):
    with h5py.File(tmp_path / "a%b.h5", "w") as f:
        f.create_dataset("x", data=values((4, 3), seed=2))
    dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
    space = h5py.h5s.create_simple((4, 3))
    space.select_all()
    dcpl.set_virtual(space, b"a%%b.h5", b"x", h5py.h5s.create_simple((4, 3)))
    with h5py.File(tmp_path / "pct.h5", "w") as f:
        h5py.h5d.create(f.id, b"v", h5py.h5t.IEEE_F32LE, h5py.h5s.create_simple((4, 3)), dcpl=dcpl)
    check_reads(tmp_path / "pct.h5")


def test_a_corrupt_source_is_an_error_naming_it(tmp_path):
    write_sources(tmp_path)
    layout = h5py.VirtualLayout((20, 6, 7), "f4")
    for i in range(4):
        layout[i * 5 : (i + 1) * 5] = h5py.VirtualSource(f"src{i}.h5", "x", shape=(5, 6, 7))
    with h5py.File(tmp_path / "stack.h5", "w") as f:
        f.create_virtual_dataset("v", layout, fillvalue=-1)
    data = (tmp_path / "src1.h5").read_bytes()
    (tmp_path / "src1.h5").write_bytes(data[:700])
    with pytest.raises(chute.Error, match=r"stack\.h5.*src1\.h5.*'x'"):
        chute.open(f"{tmp_path}/stack.h5/v")[...]


def test_a_mapping_onto_itself_is_an_error(tmp_path):
    layout = h5py.VirtualLayout((4,), "f4")
    layout[:] = h5py.VirtualSource(".", "v", shape=(4,))
    with h5py.File(tmp_path / "self.h5", "w") as f:
        f.create_virtual_dataset("v", layout, fillvalue=0)
    with pytest.raises(chute.Error, match="lead back to itself"):
        chute.open(f"{tmp_path}/self.h5/v")


def test_a_cycle_through_two_files_is_an_error(tmp_path):
    # b.h5 names a.h5 another way ("../d/a.h5"): the same file all the same.
    (tmp_path / "d").mkdir()
    for name, other in (("a", "b.h5"), ("b", "../d/a.h5")):
        layout = h5py.VirtualLayout((4,), "f4")
        layout[:] = h5py.VirtualSource(other, "v", shape=(4,))
        with h5py.File(tmp_path / "d" / f"{name}.h5", "w") as f:
            f.create_virtual_dataset("v", layout, fillvalue=0)
    with pytest.raises(chute.Error, match=r"a\.h5.*lead back to itself"):
        chute.open(f"{tmp_path}/d/a.h5/v")


def test_sources_nested_past_the_limit_are_an_error(tmp_path):
    with h5py.File(tmp_path / "v0.h5", "w") as f:
        f.create_dataset("v", data=np.arange(4, dtype="f4"))
    for i in range(1, 11):  # v10 -> v9 -> ... -> v0: ten virtual datasets deep
        layout = h5py.VirtualLayout((4,), "f4")
        layout[:] = h5py.VirtualSource(f"v{i - 1}.h5", "v", shape=(4,))
        with h5py.File(tmp_path / f"v{i}.h5", "w") as f:
            f.create_virtual_dataset("v", layout, fillvalue=0)
    np.testing.assert_array_equal(chute.open(f"{tmp_path}/v8.h5/v")[...], np.arange(4))
    with pytest.raises(chute.Error, match="nested more than 8 deep"):
        chute.open(f"{tmp_path}/v10.h5/v")


def open_descriptors_of(path) -> int:
    """How many of this process's file descriptors are open on `path`."""
    target = os.path.realpath(path)
    count = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            count += os.readlink(f"/proc/self/fd/{fd}") == target
        except OSError:
            pass
    return count


def test_a_source_file_mapped_for_many_datasets_is_opened_once(tmp_path):
    # Variables stacked as channels from one file per year: each file is opened once, not once
    # per variable (it was: an open, a superblock read and a descriptor per mapping).
    years, variables, shape = 3, 12, (4, 5, 6)
    layout = h5py.VirtualLayout((years * shape[0], variables, *shape[1:]), "f4")
    expected = np.empty(layout.shape, "f4")
    for y in range(years):
        with h5py.File(tmp_path / f"{2000 + y}.h5", "w") as f:
            for v in range(variables):
                data = values(shape, seed=100 * y + v)
                f.create_dataset(f"var{v}", data=data, chunks=(1, *shape[1:]))
                name = f"{2000 + y}.h5" if v % 2 else f"./{2000 + y}.h5"  # one file, two names
                layout[y * shape[0] : (y + 1) * shape[0], v] = h5py.VirtualSource(
                    name, f"var{v}", shape=shape
                )
                expected[y * shape[0] : (y + 1) * shape[0], v] = data
    with h5py.File(tmp_path / "all.h5", "w") as f:
        f.create_virtual_dataset("v", layout, fillvalue=0)
    array = chute.open(f"{tmp_path}/all.h5/v")
    np.testing.assert_array_equal(array[...], expected)
    for y in range(years):
        assert open_descriptors_of(tmp_path / f"{2000 + y}.h5") == 1
    check_reads(tmp_path / "all.h5")


def test_windows_over_a_virtual_dataset_equal_windows_over_its_sources(tmp_path):
    rng = np.random.default_rng(4)
    members = []
    for i in range(3):
        with h5py.File(tmp_path / f"m{i}.h5", "w") as f:
            data = rng.standard_normal((6, 5, 4)).astype("f4")
            f.create_dataset("t2m", data=data, chunks=(2, 5, 4))
            f.create_dataset("time", data=np.arange(i * 6, i * 6 + 6, dtype="i8") * 3600)
            f["time"].attrs["units"] = "seconds since 2000-01-01"
        members.append(tmp_path / f"m{i}.h5")
    layout = h5py.VirtualLayout((18, 5, 4), "f4")
    time_layout = h5py.VirtualLayout((18,), "i8")
    for i in range(3):
        layout[i * 6 : i * 6 + 6] = h5py.VirtualSource(f"m{i}.h5", "t2m", shape=(6, 5, 4))
        time_layout[i * 6 : i * 6 + 6] = h5py.VirtualSource(f"m{i}.h5", "time", shape=(6,))
    with h5py.File(tmp_path / "all.h5", "w") as f:
        f.create_virtual_dataset("t2m", layout, fillvalue=0)
        f.create_virtual_dataset("time", time_layout, fillvalue=0)
        f["time"].attrs["units"] = "seconds since 2000-01-01"
    kw = {"input_offsets": (-1, 0), "target_offsets": (1,)}
    joined = chute.windows([str(p) for p in members], ["t2m"], **kw)
    virtual = chute.windows(str(tmp_path / "all.h5"), ["t2m"], **kw)
    assert len(joined) == len(virtual)
    a = next(iter(chute.Loader(joined, batch_size=len(joined), shuffle=False)))
    b = next(iter(chute.Loader(virtual, batch_size=len(virtual), shuffle=False)))
    for key in ("inputs", "targets"):
        np.testing.assert_array_equal(a[key], b[key])


def random_hyperslab(rng, extent, size):
    """(start, stride, count, block) along one axis of `extent` selecting `size` indices."""
    block = int(rng.choice([b for b in (1, 2, 3) if size % b == 0]))
    count = size // block
    room = (extent - size) // (count - 1) if count > 1 else 0
    stride = block + int(rng.integers(0, min(room, 2) + 1))
    span = (count - 1) * stride + block
    start = int(rng.integers(0, extent - span + 1))
    return start, stride, count, block


@pytest.mark.parametrize("seed", range(12))
def test_random_hyperslab_mappings(tmp_path, seed):
    # Mappings with random starts, strides, counts and blocks on both sides (disjoint along the
    # virtual dataset's first axis), read in random boxes exactly as h5py reads them.
    rng = np.random.default_rng(seed)
    rank = int(rng.integers(2, 4))
    vshape = [int(rng.integers(12, 20)) for _ in range(rank)]
    dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
    dcpl.set_fill_value(np.array(-3, dtype="f4"))
    row = 0
    for k in range(int(rng.integers(1, 4))):
        sizes = [int(rng.integers(1, 5)) for _ in range(rank)]
        vsel = [random_hyperslab(rng, n, s) for n, s in zip(vshape, sizes)]
        span0 = (vsel[0][2] - 1) * vsel[0][1] + vsel[0][3]
        if row + span0 > vshape[0]:
            break
        vsel[0] = (row,) + vsel[0][1:]
        row += span0 + int(rng.integers(0, 3))
        sshape = [s + int(rng.integers(0, 8)) for s in sizes]
        ssel = [random_hyperslab(rng, n, s) for n, s in zip(sshape, sizes)]
        with h5py.File(tmp_path / f"s{k}.h5", "w") as f:
            chunks = tuple(int(rng.integers(1, n + 1)) for n in sshape)
            f.create_dataset("x", data=values(sshape, seed=seed * 10 + k), chunks=chunks)
        vspace = h5py.h5s.create_simple(tuple(vshape))
        vspace.select_hyperslab(*[tuple(a[i] for a in vsel) for i in (0, 2, 1, 3)])
        sspace = h5py.h5s.create_simple(tuple(sshape))
        sspace.select_hyperslab(*[tuple(a[i] for a in ssel) for i in (0, 2, 1, 3)])
        dcpl.set_virtual(vspace, f"s{k}.h5".encode(), b"x", sspace)
    libver = "latest" if seed % 2 else "earliest"
    with h5py.File(tmp_path / "v.h5", "w", libver=libver) as f:
        space = h5py.h5s.create_simple(tuple(vshape))
        h5py.h5d.create(f.id, b"v", h5py.h5t.IEEE_F32LE, space, dcpl=dcpl)
    check_reads(tmp_path / "v.h5", seed=seed)


def test_printf_style_source_names(tmp_path):
    # "part-%b.h5": block b of the unlimited virtual selection comes from part-<b>.h5, up to the
    # first file that is missing; the extent follows the files there are.
    def write_part(b):
        with h5py.File(tmp_path / f"part-{b}.h5", "w") as f:
            f.create_dataset("x", data=values((3, 5), seed=20 + b), chunks=(2, 5))

    for b in range(3):
        write_part(b)
    vspace = h5py.h5s.create_simple((0, 5), (h5py.h5s.UNLIMITED, 5))
    vspace.select_hyperslab((0, 0), (h5py.h5s.UNLIMITED, 1), (4, 1), (3, 5))
    dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
    dcpl.set_virtual(vspace, b"part-%b.h5", b"x", h5py.h5s.create_simple((3, 5)))
    dcpl.set_fill_value(np.array(-1, dtype="f4"))
    with h5py.File(tmp_path / "parts.h5", "w", libver="latest") as f:
        space = h5py.h5s.create_simple((0, 5), (h5py.h5s.UNLIMITED, 5))
        h5py.h5d.create(f.id, b"v", h5py.h5t.IEEE_F32LE, space, dcpl=dcpl)
    assert check_reads(tmp_path / "parts.h5").shape == (11, 5)
    write_part(3)
    write_part(5)  # after a missing part: not read, as in HDF5
    assert check_reads(tmp_path / "parts.h5").shape == (15, 5)


def test_a_longer_netcdf_dimension_reads_as_fill_past_the_virtual_extent(tmp_path):
    # Virtual datasets on a dimension scale longer than they are (another variable grew it):
    # their mappings select in their own extent ("all" of it for `whole`, up to the sources for
    # the unlimited `grows`), and the rest of the dimension reads as the fill value, as for a
    # chunked variable.
    write_sources(tmp_path, n=1)
    with h5py.File(tmp_path / "grow0.h5", "w") as f:
        f.create_dataset("u", data=np.arange(12, dtype="i4").reshape(3, 4),
                         maxshape=(None, 4), chunks=(2, 4))  # fmt: skip
    path = tmp_path / "dims.h5"
    with h5py.File(path, "w", libver="latest") as f:
        f["time"] = np.arange(8.0)
        f["time"].make_scale("time")
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        space = h5py.h5s.create_simple((5, 6, 7))  # a new dataspace selects all of itself
        dcpl.set_virtual(space, b"src0.h5", b"x", h5py.h5s.create_simple((5, 6, 7)))
        dcpl.set_fill_value(np.array(-1, "f4"))
        h5py.h5d.create(f.id, b"whole", h5py.h5t.IEEE_F32LE, space, dcpl=dcpl)
        layout = h5py.VirtualLayout((3, 4), "i4", maxshape=(None, 4))
        source = h5py.VirtualSource("grow0.h5", "u", shape=(3, 4), maxshape=(None, 4))
        layout[0 : h5py.h5s.UNLIMITED, :] = source[0 : h5py.h5s.UNLIMITED, :]
        f.create_virtual_dataset("grows", layout, fillvalue=-9)
        for name in ("whole", "grows"):
            f[name].dims[0].attach_scale(f["time"])
    for name, stored in (("whole", (5, 6, 7)), ("grows", (3, 4))):
        with h5py.File(path, "r") as f:
            expected = f[name][()]
        assert expected.shape == stored
        array = chute.open(f"{path}/{name}")
        assert array.shape == (8, *stored[1:])
        assert array.dimension_names[0] == "time"
        got = array[...]
        np.testing.assert_array_equal(got[: stored[0]], expected)
        np.testing.assert_array_equal(
            got[stored[0] :], np.full_like(got[stored[0] :], array.fill_value)
        )
        np.testing.assert_array_equal(array[1:7, 1:3], got[1:7, 1:3])
