"""Interop matrix: chute reads exactly what zarr-python 2.x and 3.x read, whole and in boxes.

The cases (dtypes, byte orders, memory orders, codecs, filters, fill values, missing chunks,
edge chunks, 1-D to 5-D, key encodings, sharding, groups) are listed in fixtures/cases.py.
"""

from __future__ import annotations

import os
import warnings

import cases
import numpy as np
import pytest
from conftest import MATRIX, assert_same

import chute

ALL_CASES = cases.zarr2_cases() + cases.zarr3_cases()
ARRAY_CASES = [c for c in ALL_CASES if c.get("kind") != "group"]
GROUP_CASES = [c for c in ALL_CASES if c.get("kind") == "group"]
RANDOM_BOXES = 16
ZARR_BOXES = 4  # of the random boxes, also read by zarr-python 3 itself


def _count(case: dict, reads: int, kind: str = "arrays") -> None:
    MATRIX[kind] += 1
    MATRIX["reads"] += reads
    key = f"{case['writer']} v{case['format']}"
    MATRIX["by_writer"][key] = MATRIX["by_writer"].get(key, 0) + 1


def _expected_fill(case: dict, dtype: np.dtype):
    fill = case["fill"]
    return np.zeros((), dtype)[()] if fill is None else dtype.type(cases.fill_as_python(fill))


def _index_expressions(shape, seed: int) -> list:
    """NumPy basic-indexing keys: ints (negative too), steps of both signs, Ellipsis, None."""
    if not shape:
        return [(), Ellipsis, None]
    rng = np.random.default_rng(seed)
    keys = [0, -1, slice(None, None, 2), slice(None, None, -3), (Ellipsis, -1),
            (slice(1, None), Ellipsis), (None, Ellipsis)]  # fmt: skip
    for _ in range(4):
        key = []
        for size in shape:
            choice = rng.integers(0, 3)
            if choice == 0:
                key.append(int(rng.integers(-size, size)))
            else:
                step = int(rng.choice([1, 2, 3, -1, -2, 5]))
                a, b = rng.integers(-size - 2, size + 2, 2).tolist()
                key.append(slice(a, b, step))
        keys.append(tuple(key))
    return keys


@pytest.mark.parametrize("case", ARRAY_CASES, ids=[c["id"] for c in ARRAY_CASES])
def test_array_matches_zarr_python(case, fixture_entry):
    entry = fixture_entry(case)
    expected = np.load(entry["expected"])
    if "unsupported" in case:
        with pytest.raises(chute.UnsupportedError, match=case["unsupported"]) as info:
            chute.open(entry["path"])[...]
        assert entry["path"] in str(info.value)
        return
    a = chute.open(entry["path"])

    assert a.shape == tuple(case["shape"]) == expected.shape
    assert a.dtype == expected.dtype.newbyteorder("=")
    assert a.chunks == tuple(case["chunks"])
    assert a.ndim == len(case["shape"]) and a.size == expected.size
    assert a.nbytes == expected.nbytes
    np.testing.assert_array_equal(a.fill_value, _expected_fill(case, a.dtype))
    assert a.attrs == case.get("attrs", {})
    if "dimension_names" in case:
        assert a.dimension_names == tuple(case["dimension_names"])

    assert_same(np.asarray(a), expected)
    assert_same(a[...], expected[...])
    boxes = cases.random_boxes(case["id"], expected.shape, RANDOM_BOXES) if a.ndim else []
    for box in boxes:
        assert_same(a[box], expected[box])
    keys = _index_expressions(expected.shape, cases.case_seed(case["id"]))
    for key in keys:
        want = expected[key]
        got = a[key]
        assert_same(got, want if isinstance(want, np.ndarray) else np.asarray(want))
    direct = _compare_with_zarr_directly(case, entry["path"], a, boxes[:ZARR_BOXES])
    _count(case, 2 + len(boxes) + len(keys) + direct)


def _compare_with_zarr_directly(case: dict, path: str, a: chute.Array, boxes: list) -> int:
    """Reads some boxes with zarr-python 3 itself (in-process) as well; returns the count."""
    if case["writer"] != "zarr3":
        return 0
    import zarr

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        z = zarr.open_array(path, mode="r")
        for box in boxes:
            assert_same(a[box], z[box])
    return len(boxes)


@pytest.mark.parametrize("case", GROUP_CASES, ids=[c["id"] for c in GROUP_CASES])
def test_group_matches_zarr_python(case, fixture_entry):
    entry = fixture_entry(case)
    g = chute.open_group(entry["path"])
    assert isinstance(g, chute.Group)
    assert sorted(g) == sorted(case["members"])
    assert len(g) == len(case["members"])
    assert g.attrs == case["attrs"]
    assert g.zarr_format == case["format"]
    assert "sub" in g.groups
    for name, member in case["members"].items():
        expected = np.load(entry["expected"][name])
        a = g[name]
        assert_same(a[...], expected)
        dims = member.get("dimension_names") or member.get("attrs", {}).get("_ARRAY_DIMENSIONS")
        if dims:
            assert a.dimension_names == tuple(dims)
        assert_same(chute.open(os.path.join(entry["path"], name))[...], expected)
    with pytest.raises(KeyError):
        g["nonexistent"]
    _count(case, 2 * len(case["members"]), "groups")


def test_matrix_size_is_reported():
    """The interop matrix the lead quotes: number of written cases per writer and format."""
    sizes = {}
    for case in ALL_CASES:
        key = f"{case['writer']} v{case['format']}"
        sizes[key] = sizes.get(key, 0) + 1
    print(f"\ninterop matrix cases: {len(ARRAY_CASES)} arrays + {len(GROUP_CASES)} groups: {sizes}")
    assert len(ARRAY_CASES) >= 150


@pytest.mark.parametrize("fmt", [2, 3])
def test_consolidated_group_needs_no_member_metadata_files(tmp_path, fmt):
    """With consolidated metadata the members are described by the group document alone."""
    import write_zarr3

    case = next(c for c in cases.zarr3_cases() if c["id"] == f"zarr3_v{fmt}_group_consolidated")
    path = str(tmp_path / "g.zarr")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        write_zarr3.write_group(case, path)
    expected = chute.open_group(path)["lat"][...]
    member_doc = os.path.join(path, "lat", ".zarray" if fmt == 2 else "zarr.json")
    os.remove(member_doc)
    g = chute.open_group(path)
    assert sorted(g) == sorted(case["members"])
    assert_same(g["lat"][...], expected)
