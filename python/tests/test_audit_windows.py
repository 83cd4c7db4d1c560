"""Windows (chute.windows) on stores from the reliability audit: long missing_value lists decoded
as in plain reads and as xarray does, time coordinates with a missing date or without units
refused with messages that say so, and the loader's memory check held to this process's own
limit (RLIMIT_AS here) rather than to the machine's memory."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from audit_child import run_child

import chute

xr = pytest.importorskip("xarray")
zarr = pytest.importorskip("zarr")

NT, NY, NX = 5, 6, 8


def _store(path, time_values, time_attrs, x=None, x_attrs=None, ny=NY, nx=NX):
    """A Zarr v3 group: time(time), x(time, latitude, longitude) int32, and the coordinates."""
    root = zarr.open_group(str(path), mode="w", zarr_format=3)
    nt = len(time_values)
    if x is None:
        x = np.arange(nt * ny * nx, dtype="int32").reshape(nt, ny, nx)
    arrays = {
        "time": (np.asarray(time_values, dtype="int64"), ["time"], time_attrs),
        "latitude": (np.linspace(60, -60, ny), ["latitude"], {}),
        "longitude": (np.linspace(0, 350, nx), ["longitude"], {}),
        "x": (x, ["time", "latitude", "longitude"], x_attrs or {}),
    }
    for name, (data, dims, attrs) in arrays.items():
        a = root.create_array(name, shape=data.shape, dtype=data.dtype, dimension_names=dims,
                              chunks=(1, *data.shape[1:]) if name == "x" else data.shape)  # fmt: skip
        a[...] = data
        a.attrs.update(attrs)
    return str(path)


HOURS = {"units": "hours since 2000-01-01", "calendar": "proleptic_gregorian"}


def _windows_inputs(path):
    """Every window's inputs (time offsets (0,)), in time order, as one array."""
    data = chute.windows(path, ["x"], input_offsets=(0,), target_offsets=(1,))
    loader = chute.Loader(data, batch_size=len(data), seed=0, threads=1, rank=0, world_size=1,
                          shuffle=False)  # fmt: skip
    batch = next(iter(loader))
    order = np.argsort(batch.indices)
    return np.asarray(batch["inputs"])[order]


def test_a_long_missing_value_list_decodes_in_windows_and_reads_like_xarray(tmp_path):
    # Before: windows matched each value against the whole list, and building the list was
    # quadratic in its length (100k values 5.1 s, 3 million about an hour).
    rng = np.random.default_rng(3)
    x = rng.integers(0, 400_000, size=(NT, NY, NX)).astype("int32")
    missing = list(range(0, 400_000, 2))  # 200k values: every even stored value is missing
    attrs = {"missing_value": missing, "scale_factor": 0.5}
    path = _store(tmp_path / "mv.zarr", np.arange(NT), HOURS, x, attrs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "multiple fill values", with all 200k listed
        expected = xr.open_zarr(path, decode_cf=True, consolidated=False)["x"].values
    assert np.isnan(expected).any() and not np.isnan(expected).all()
    plain = chute.open_group(path, decode_cf=True)["x"][...]
    np.testing.assert_array_equal(plain, expected)
    windows = _windows_inputs(path)  # (samples, lat, lon, channels)
    np.testing.assert_array_equal(windows[..., 0], expected[: NT - 1].astype("float32"))


def test_a_missing_date_in_the_time_coordinate_is_named(tmp_path):
    # Before: "frequency None is not a positive multiple of the store's time step".
    path = _store(tmp_path / "nat.zarr", [0, 1, -1, 3, 4], {**HOURS, "_FillValue": -1})
    with pytest.raises(chute.InvalidArgumentError) as error:
        chute.windows(path, ["x"], start="2000-01-01T00", end="2000-01-01T04")
    message = str(error.value)
    assert "NaT" in message and "index 2" in message and "'time'" in message, message
    assert "frequency" not in message


def test_a_time_coordinate_without_units_says_how_it_was_read(tmp_path):
    # Before: the message printed a literal "(read as {values.dtype})".
    path = _store(tmp_path / "nounits.zarr", np.arange(NT), {})
    with pytest.raises(chute.InvalidArgumentError) as error:
        chute.windows(path, ["x"], start="2000-01-01T00", end="2000-01-01T04")
    assert "(read as int64)" in str(error.value), str(error.value)


def test_the_loader_memory_check_uses_the_address_space_limit(tmp_path):
    # Before: compared with physical memory only, so a job limited below the node's memory was
    # admitted and failed later on an allocation.
    ny = nx = 64
    path = _store(tmp_path / "mem.zarr", np.arange(NT), HOURS, ny=ny, nx=nx)
    out = run_child(
        """
        import os
        data = chute.windows(sys.argv[2], ["x"], input_offsets=(0,), target_offsets=(1,))
        limit = resource.getrlimit(resource.RLIMIT_AS)[0]
        physical = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGESIZE")
        sample = 2 * 64 * 64 * 4  # inputs and targets, one float32 channel each
        batch = 2 * limit // (sample * 4) + 1  # prefetch=2: four buffers, twice the limit
        if 4 * batch * sample >= physical:
            RESULT = "skip"
        else:
            chute.Loader(data, batch_size=batch, prefetch=2, pad_to_batch=True, read_ahead=False,
                         seed=0, threads=1, rank=0, world_size=1)
            RESULT = "admitted"
        """,
        path,
        address_space_extra=1 << 30,
    )
    if out.get("result") == "skip":
        pytest.skip("this machine's memory is below twice the child's address-space limit")
    assert not out["ok"] and out["type"] == "InvalidArgumentError", out
    assert "RLIMIT_AS" in out["message"] and "may use" in out["message"], out
