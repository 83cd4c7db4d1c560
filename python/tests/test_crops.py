"""W3 crops against NumPy: slicing + the documented transpose/flip composition of every id."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import chute

zarr = pytest.importorskip("zarr")

L = 14


def _documented_table():
    """The table of docs/guides/volume-crops.md, rebuilt from its rule: rotations (det +1) first, each half in
    (itertools.permutations order, flip mask ascending) order."""

    def det(axes, flips):
        sign = np.linalg.det(np.eye(3)[list(axes)])
        return round(sign) * (-1) ** len(flips)

    rows = []
    for axes in itertools.permutations((0, 1, 2)):
        for mask in range(8):
            flips = tuple(k for k in range(3) if mask >> k & 1)
            rows.append((axes, flips))
    return [r for r in rows if det(*r) > 0] + [r for r in rows if det(*r) < 0]


TABLE = _documented_table()


def _numpy_transform(crop, transform, channel_axis):
    """np.flip(np.transpose(x, axes), flips) on the spatial axes of a crop (channel kept)."""
    axes, flips = TABLE[transform]
    if channel_axis is None:
        return np.flip(np.transpose(crop, axes), axis=flips)
    x = np.moveaxis(crop, channel_axis, 0)
    y = np.flip(np.transpose(x, (0, *[a + 1 for a in axes])), axis=tuple(f + 1 for f in flips))
    return y


@pytest.fixture(scope="module")
def volume(tmp_path_factory):
    root = tmp_path_factory.mktemp("volume")
    rng = np.random.default_rng(3)
    data = {
        "input": rng.standard_normal((4, L, L, L)).astype("float32"),
        "target": rng.standard_normal((5, L, L, L)).astype("float32"),
    }
    paths = {}
    for name, values in data.items():
        path = str(root / f"{name}.zarr")
        arr = zarr.create_array(
            store=path,
            shape=values.shape,
            chunks=(1, 5, 6, 7),
            dtype="float32",
            compressors=[zarr.codecs.BloscCodec(cname="lz4", shuffle="shuffle")],
        )
        arr[...] = values
        paths[name] = path
    # The same input channels-last (as the .npy form stores it), in one more Zarr array.
    last = str(root / "input_last.zarr")
    arr = zarr.create_array(store=last, shape=(L, L, L, 4), chunks=(8, 8, 8, 4), dtype="float32")
    arr[...] = np.moveaxis(data["input"], 0, -1)
    paths["input_last"] = last
    return paths, data


def test_table_is_the_documented_one():
    assert chute.cube_symmetries() == TABLE
    assert TABLE[0] == ((0, 1, 2), ())
    assert len(set(TABLE)) == 48
    x = np.arange(2 * 27).reshape(2, 3, 3, 3)
    for t in range(48):
        np.testing.assert_array_equal(
            chute.apply_cube_symmetry(x, t), _numpy_transform(x, t, channel_axis=0)
        )


@pytest.mark.parametrize("channels_last", [False, True])
def test_every_transform_equals_numpy_slicing_and_composition(volume, channels_last):
    paths, data = volume
    size = 5
    ds = chute.crops(
        {"inputs": paths["input"], "targets": paths["target"]},
        size=size,
        channel_axis=0,
        crops_per_epoch=600,
        transforms="symmetries",
        channels_last=channels_last,
    )
    assert [o[0] for o in ds.outputs] == ["inputs", "targets", "crops", "transforms"]
    loader = chute.Loader(ds, batch_size=50, shuffle=True, seed=11, threads=2)
    seen = set()
    for batch in loader:
        assert batch.crops.shape == (50, 3) and batch.transforms.shape == (50,)
        assert batch["inputs"].shape == (
            (50, size, size, size, 4) if channels_last else (50, 4, size, size, size)
        )
        for k in range(len(batch.indices)):
            x0, y0, z0 = (int(v) for v in batch.crops[k])
            t = int(batch.transforms[k])
            seen.add(t)
            for name, source in (("inputs", "input"), ("targets", "target")):
                box = data[source][:, x0 : x0 + size, y0 : y0 + size, z0 : z0 + size]
                want = _numpy_transform(box, t, channel_axis=0)
                if channels_last:
                    want = np.moveaxis(want, 0, -1)
                np.testing.assert_array_equal(batch[name][k], want, err_msg=f"{name} id {t}")
    assert seen == set(range(48))


def test_rotations_draw_only_rotations_and_channels_last_storage_agrees(volume):
    paths, _ = volume
    first = chute.crops({"x": paths["input"]}, size=6, crops_per_epoch=64, transforms="rotations")
    last = chute.crops(
        {"x": chute.open(paths["input_last"])},
        size=6,
        channel_axis=-1,
        crops_per_epoch=64,
        transforms="rotations",
    )
    a = list(chute.Loader(first, batch_size=16, seed=5, threads=1))
    b = list(chute.Loader(last, batch_size=16, seed=5, threads=2, prefetch=3))
    assert len(a) == len(b) == 4
    for p, q in zip(a, b):
        assert set(p.transforms.tolist()) <= set(range(24))
        np.testing.assert_array_equal(p["x"], q["x"])
        np.testing.assert_array_equal(p.crops, q.crops)


def test_order_and_transforms_independent_of_threads_resume_and_ranks(volume):
    paths, _ = volume
    ds = chute.crops({"t": paths["target"]}, size=4, crops_per_epoch=60, transforms="symmetries")

    def epoch(loader, e, start=0):
        return [
            (b.indices.copy(), b.crops.copy(), b.transforms.copy(), b["t"].copy())
            for b in loader.epoch(e, start)
        ]

    ref = epoch(chute.Loader(ds, batch_size=6, seed=3, threads=1, prefetch=1), 2)
    other = epoch(chute.Loader(ds, batch_size=6, seed=3, threads=3, prefetch=4), 2)
    for p, q in zip(ref, other, strict=True):
        for u, v in zip(p, q):
            np.testing.assert_array_equal(u, v)
    # Resume via state_dict.
    loader = chute.Loader(ds, batch_size=6, seed=3, threads=2)
    it = loader.epoch(2)
    for _ in range(4):
        next(it)
    state = loader.state_dict()
    resumed = chute.Loader(ds, batch_size=6, seed=3, threads=1)
    resumed.load_state_dict(state)
    rest = [(b.crops.copy(), b["t"].copy()) for b in resumed]
    assert len(rest) == len(ref) - 4
    for (c, t), full in zip(rest, ref[4:]):
        np.testing.assert_array_equal(c, full[1])
        np.testing.assert_array_equal(t, full[3])
    # Ranks: disjoint crops that cover the epoch, each the sample's own crop.
    seen = []
    for rank in range(3):
        for b in chute.Loader(ds, batch_size=4, seed=3, rank=rank, world_size=3).epoch(0):
            for k, sample in enumerate(b.indices[: len(b.indices) - b.padding]):
                corner, t = ds._core.crop(3, 0, int(sample))
                assert list(b.crops[k]) == corner and b.transforms[k] == t
                seen.append(int(sample))
    assert sorted(seen) == list(range(60))


def test_without_channel_axis_or_transforms(volume):
    paths, data = volume
    ds = chute.crops({"v": paths["input"]}, size=(2, 3, 4, 5), channel_axis=None, crops_per_epoch=8)
    for b in chute.Loader(ds, batch_size=4, seed=0):
        assert not b.transforms.any()
        for k in range(4):
            c = [int(v) for v in b.crops[k]]
            box = data["input"][c[0] : c[0] + 2, c[1] : c[1] + 3, c[2] : c[2] + 4, c[3] : c[3] + 5]
            np.testing.assert_array_equal(b["v"][k], box)


def test_bad_arguments(volume, tmp_path):
    paths, _ = volume
    with pytest.raises(chute.InvalidArgumentError, match="does not fit the spatial grid"):
        chute.crops({"x": paths["input"]}, size=L + 1)
    with pytest.raises(chute.InvalidArgumentError, match="transforms = 'rotate' is not one of"):
        chute.crops({"x": paths["input"]}, size=4, transforms="rotate")
    other = str(tmp_path / "other.zarr")
    zarr.create_array(store=other, shape=(2, L, L, L - 1), chunks=(1, 7, 7, 7), dtype="float32")
    with pytest.raises(chute.InvalidArgumentError, match="share one spatial grid"):
        chute.crops({"x": paths["input"], "y": other}, size=4)
    with pytest.raises(chute.InvalidArgumentError, match="rotate a cube"):
        chute.crops({"x": paths["input"]}, size=(4, 4, 5), transforms="rotations")
    with pytest.raises(chute.InvalidArgumentError, match="non-empty mapping"):
        chute.crops({}, size=4)
    with pytest.raises(FileNotFoundError):
        chute.crops({"x": str(tmp_path / "missing.zarr")}, size=4)
