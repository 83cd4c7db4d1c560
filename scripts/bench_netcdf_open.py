#!/usr/bin/env python3
"""Open time of an ERA5-like NetCDF-4 file: 20 packed int16 variables (time, latitude,
longitude) with float32 scale_factor/add_offset and _FillValue, an unlimited time dimension,
coordinate variables and a string `expver`, written by xarray (netCDF4 engine). Times
chute.open_group (every variable's metadata, NetCDF dimensions and chunk index) beside
netCDF4.Dataset and xarray.open_dataset (lazy), best of N.

usage: bench_netcdf_open.py OUTDIR [--repeat 20] [--hours 48]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
from _timing import best_seconds


def write(path: Path, hours: int) -> None:
    import xarray as xr

    rng = np.random.default_rng(0)
    lat = np.linspace(90, -90, 181)
    lon = np.arange(0, 360, 1.0)
    times = np.datetime64("2020-01-01T00", "ns") + np.arange(hours) * np.timedelta64(1, "h")
    variables = {}
    encoding = {}
    for i in range(20):
        name = f"v{i:02d}"
        variables[name] = (("time", "latitude", "longitude"),
                           (280 + rng.standard_normal((hours, 181, 360))).astype("f4"))  # fmt: skip
        encoding[name] = {"dtype": "int16", "scale_factor": np.float32(0.01),
                          "add_offset": np.float32(280.0), "_FillValue": np.int16(-32767),
                          "chunksizes": (1, 181, 360), "zlib": True, "complevel": 1}  # fmt: skip
    variables["expver"] = (("time",), np.array(["0001"] * hours, dtype=object))
    ds = xr.Dataset(variables, coords={"time": times, "latitude": lat, "longitude": lon})
    ds.to_netcdf(path, engine="netcdf4", encoding=encoding, unlimited_dims=["time"])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("outdir", type=Path)
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--hours", type=int, default=48)
    args = parser.parse_args()
    args.outdir.mkdir(parents=True, exist_ok=True)
    path = args.outdir / f"era5_like_{args.hours}h.nc"
    if not path.exists():
        write(path, args.hours)

    import netCDF4
    import xarray as xr

    import chute

    group = chute.open_group(str(path))
    # 20 variables, 3 coordinates and `expver`, a string variable (chute.StringArray).
    assert len(group) == 24 and not group.unsupported, (sorted(group), group.unsupported)
    assert isinstance(group["expver"], chute.StringArray)
    assert group["v00"].dims == ("time", "latitude", "longitude")

    def netcdf4_open():
        with netCDF4.Dataset(path) as ds:
            [v.shape for v in ds.variables.values()]

    def xarray_open():
        xr.open_dataset(path, engine="netcdf4").close()

    print(f"{path.name}: 20 packed variables, {args.hours} steps, best of {args.repeat}")
    print(
        f"chute.open_group      {best_seconds(lambda: chute.open_group(str(path)), args.repeat) * 1e3:8.2f} ms"
    )
    print(f"netCDF4.Dataset       {best_seconds(netcdf4_open, args.repeat) * 1e3:8.2f} ms")
    print(f"xarray.open_dataset   {best_seconds(xarray_open, args.repeat) * 1e3:8.2f} ms")


if __name__ == "__main__":
    main()
