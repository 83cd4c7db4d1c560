"""datetime64 and timedelta64 arrays read as NumPy's, in every unit: Zarr v2 and v3 written by
zarr-python 3 (and 2, when its environment exists), .npy files, and groups (an anemoi store's
`dates` array opened with chute.open_group)."""

from __future__ import annotations

import subprocess
import warnings

import numpy as np
import pytest
from conftest import ZARR2_PYTHON

import chute

UNITS = ["Y", "M", "W", "D", "h", "m", "s", "ms", "us", "ns", "ps", "fs", "as"]
KINDS = ["datetime64", "timedelta64"]


def _values(dtype: np.dtype) -> np.ndarray:
    counts = np.array([0, 1, -5, 17, 2**40, -(2**40), 123456789, -(2**63)], dtype=np.int64)
    return counts.view(dtype.newbyteorder("="))  # the last is NaT


def _write_zarr3(path, values, zarr_format, chunks=(3,)):
    import zarr

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        group = zarr.open_group(str(path), mode="w", zarr_format=zarr_format)
        group.create_array("x", data=values, chunks=chunks)
        group.create_array("nat_fill", shape=(5,), chunks=(2,), dtype=values.dtype,
                           fill_value=np.array("NaT", dtype=values.dtype)[()])  # fmt: skip
        group["nat_fill"][:2] = values[:2]


@pytest.mark.parametrize("zarr_format", [2, 3])
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("unit", UNITS)
def test_every_unit_reads_as_numpy(tmp_path, zarr_format, kind, unit):
    dtype = np.dtype(f"{kind}[{unit}]")
    values = _values(dtype)
    _write_zarr3(tmp_path / "g.zarr", values, zarr_format)
    a = chute.open(tmp_path / "g.zarr" / "x")
    assert a.dtype == dtype
    out = a[:]
    assert out.dtype == dtype
    np.testing.assert_array_equal(out.view(np.int64), values.view(np.int64))
    assert np.isnat(out[-1])
    np.testing.assert_array_equal(a[2:5], values[2:5])
    # Missing chunks read as the NaT fill value.
    b = chute.open(tmp_path / "g.zarr" / "nat_fill")
    assert b.dtype == dtype
    got = b[:]
    np.testing.assert_array_equal(got[:2], values[:2])
    assert np.isnat(got[2:]).all()
    assert np.isnat(b.fill_value)


@pytest.mark.parametrize("typestr", ["<M8[10s]", "<m8[250ms]", "<M8", ">M8[s]", ">m8[ns]"])
def test_counts_generic_unit_and_big_endian_v2(tmp_path, typestr):
    """Multiples of a unit, NumPy's generic unit, and big-endian v2 dtypes (written by hand:
    zarr-python 3 writes little-endian)."""
    import json

    dtype = np.dtype(typestr)
    values = np.arange(-3, 9, dtype=np.int64).view(dtype.newbyteorder("="))
    folder = tmp_path / "a.zarr"
    folder.mkdir()
    meta = {"zarr_format": 2, "shape": [12], "chunks": [5], "dtype": typestr, "fill_value": None,
            "order": "C", "compressor": None, "filters": None}  # fmt: skip
    (folder / ".zarray").write_text(json.dumps(meta))
    for c in range(3):
        (folder / str(c)).write_bytes(
            np.resize(values[5 * c : 5 * c + 5], 5).astype(dtype).tobytes()
        )
    a = chute.open(folder)
    assert a.dtype == dtype.newbyteorder("=")
    np.testing.assert_array_equal(a[:], values)


def test_npy_files(tmp_path):
    for unit in ("s", "ns", "D"):
        values = np.array(["2020-01-01", "NaT", "1969-07-20T20:17:40"], dtype=f"datetime64[{unit}]")
        np.save(tmp_path / f"d{unit}.npy", values)
        a = chute.open(tmp_path / f"d{unit}.npy")
        assert a.dtype == values.dtype
        np.testing.assert_array_equal(a[:], values)


def test_anemoi_style_group_opens(tmp_path):
    """An anemoi store's group: `dates` is datetime64[s] next to the float `data`."""
    import zarr

    dates = np.arange("2020-01-01T00", "2020-01-03T00", np.timedelta64(6, "h"), "datetime64[s]")
    for fmt in (2, 3):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            g = zarr.open_group(str(tmp_path / f"a{fmt}.zarr"), mode="w", zarr_format=fmt)
            g.create_array("dates", data=dates)
            g.create_array("data", data=np.ones((len(dates), 2, 1, 5), np.float32))
        for decode_cf in (False, True):  # nothing to decode: NumPy's times stay as they are
            group = chute.open_group(tmp_path / f"a{fmt}.zarr", decode_cf=decode_cf)
            assert group["dates"].dtype == np.dtype("datetime64[s]")
            np.testing.assert_array_equal(group["dates"][:], dates)


@pytest.mark.skipif(not ZARR2_PYTHON.exists(), reason="no zarr-python 2.x environment")
def test_zarr_python_2_writes(tmp_path):
    script = f"""
import numpy as np, zarr
for unit in {UNITS!r}:
    for kind in {KINDS!r}:
        dt = np.dtype(kind + "[" + unit + "]")
        v = np.array([0, 1, -5, 2**40, -(2**63)], dtype=np.int64).view(dt)
        zarr.save_array({str(tmp_path)!r} + "/" + kind + "_" + unit + ".zarr", v, chunks=(2,))
"""
    subprocess.run([str(ZARR2_PYTHON), "-c", script], check=True, timeout=300)
    for unit in UNITS:
        for kind in KINDS:
            dtype = np.dtype(f"{kind}[{unit}]")
            a = chute.open(tmp_path / f"{kind}_{unit}.zarr")
            assert a.dtype == dtype
            expected = np.array([0, 1, -5, 2**40, -(2**63)], dtype=np.int64).view(dtype)
            np.testing.assert_array_equal(a[:].view(np.int64), expected.view(np.int64))
