"""Boxes of uncompressed Zarr chunks read only the rows they touch: exact against zarr-python on
v2, v3 and sharded v3 arrays (random boxes, edge chunks included), and as W3 crops."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import chute

zarr = pytest.importorskip("zarr")

SHAPE = (3, 37, 41, 29)  # partial edge chunks on every spatial axis


def _write(path, values, **layout):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zarr-python's v2 warning
        arr = zarr.create_array(store=path, shape=values.shape, dtype=values.dtype, **layout)
        arr[...] = values
    return zarr.open_array(path, mode="r")


LAYOUTS = {
    "v2": {"chunks": (1, 16, 16, 16), "compressors": None, "zarr_format": 2},
    "v3": {"chunks": (1, 16, 16, 16), "compressors": None},
    "v3-sharded": {"chunks": (1, 8, 8, 8), "shards": (1, 16, 16, 16), "compressors": None},
    "v3-int16": {"chunks": (2, 12, 40, 10), "compressors": None},
}


@pytest.fixture(scope="module", params=sorted(LAYOUTS))
def pair(request, tmp_path_factory):
    layout = dict(LAYOUTS[request.param])
    rng = np.random.default_rng(5)
    dtype = "int16" if request.param == "v3-int16" else "float32"
    values = (rng.standard_normal(SHAPE) * 1000).astype(dtype)
    path = str(tmp_path_factory.mktemp("uncompressed") / f"{request.param}.zarr")
    z = _write(path, values, **layout)
    return chute.open(path), z, values


def test_random_boxes_equal_zarr_python(pair):
    a, z, values = pair
    rng = np.random.default_rng(17)
    for _ in range(60):
        start = [int(rng.integers(0, n)) for n in SHAPE]
        stop = [int(rng.integers(s + 1, n + 1)) for s, n in zip(start, SHAPE)]
        key = tuple(slice(s, e) for s, e in zip(start, stop))
        got = a[key]
        np.testing.assert_array_equal(got, z[key])
        np.testing.assert_array_equal(got, values[key])


def test_crops_with_transforms_equal_numpy(pair):
    a, _, values = pair
    size = 9
    ds = chute.crops({"x": a}, size=size, channel_axis=0, crops_per_epoch=40,
                     transforms="symmetries")  # fmt: skip
    for batch in chute.Loader(ds, batch_size=20, seed=2, threads=2):
        for k in range(len(batch.indices)):
            x0, y0, z0 = (int(v) for v in batch.crops[k])
            box = values[:, x0 : x0 + size, y0 : y0 + size, z0 : z0 + size]
            axes, flips = chute.cube_symmetries()[int(batch.transforms[k])]
            want = np.flip(np.transpose(box, (0, *[d + 1 for d in axes])),
                           axis=tuple(f + 1 for f in flips))  # fmt: skip
            np.testing.assert_array_equal(batch["x"][k], want)
