"""A synthetic weather store written by xarray itself, as users have one:
`chute make-dataset variables OUT --xarray` (or `python -m chute.weather_store OUT`).

Variables (ERA5 names): temperature (int16 packed with scale_factor/add_offset/_FillValue),
u_component_of_wind, v_component_of_wind, geopotential (float32) on (time, pressure_level,
latitude, longitude); 2m_temperature (float32, NaN over a box stored as _FillValue -9999) and
mean_sea_level_pressure on (time, latitude, longitude); statics land_sea_mask and
geopotential_at_surface on (latitude, longitude). Coordinates: datetime64 time (hourly from
2016-01-01, encoded by xarray as "hours since ..."), pressure_level in hPa, latitude from 90
to -90, longitude from 0. Chunks of one time step, consolidated metadata.
"""

from __future__ import annotations

import argparse
import json
import sys
import time as _time

import numpy as np

__all__ = ["make_weather_store"]

LEVELS = [50, 100, 150, 200, 250, 300, 400, 500, 600, 700, 850, 925, 1000]


def make_weather_store(out: str, times: int = 48, levels: int = 13, lat: int = 121,
                       lon: int = 240, zarr_format: int = 2, seed: int = 0) -> dict:  # fmt: skip
    """Writes the store (see the module doc); returns a summary dict."""
    import xarray as xr

    start = _time.perf_counter()
    rng = np.random.default_rng(seed)
    levels_hpa = np.array((LEVELS * (levels // len(LEVELS) + 1))[:levels], dtype="int64")
    lats = np.linspace(90, -90, lat)
    lons = np.arange(lon) * (360.0 / lon)
    hours = np.arange(times)
    dates = np.datetime64("2016-01-01T00", "ns") + hours.astype("timedelta64[h]")
    la, lo = np.meshgrid(np.radians(lats), np.radians(lons), indexing="ij")

    def field(base: float, amplitude: float, shape: tuple) -> np.ndarray:
        t = hours.reshape((-1,) + (1,) * (len(shape) - 1))
        smooth = np.cos(la) * np.sin(lo + 2 * np.pi * t / 24)
        noise = rng.standard_normal(shape).astype(np.float32)
        return (base + amplitude * (smooth + 0.02 * noise)).astype(np.float32)

    shape3 = (times, levels, lat, lon)
    shape2 = (times, lat, lon)
    scale = np.linspace(0.5, 1.5, levels).reshape(1, -1, 1, 1)
    t2m = field(280, 20, shape2)
    t2m[:, : max(1, lat // 10), : max(1, lon // 10)] = np.nan  # missing box -> _FillValue
    dims3 = ("time", "pressure_level", "latitude", "longitude")
    dims2 = ("time", "latitude", "longitude")
    ds = xr.Dataset(
        {
            "temperature": (dims3, field(250, 30, shape3) * scale.astype(np.float32)),
            "u_component_of_wind": (dims3, field(0, 15, shape3)),
            "v_component_of_wind": (dims3, field(0, 10, shape3)),
            "geopotential": (dims3, field(50000, 5000, shape3)),
            "2m_temperature": (dims2, t2m),
            "mean_sea_level_pressure": (dims2, field(101325, 1000, shape2)),
            "land_sea_mask": (("latitude", "longitude"), (np.cos(3 * lo) > 0).astype("float32")),
            "geopotential_at_surface": (
                ("latitude", "longitude"),
                (1000 * np.abs(np.sin(2 * la))).astype("float32"),
            ),
        },
        coords={"time": dates, "pressure_level": levels_hpa, "latitude": lats, "longitude": lons},
    )
    low, high = float(np.nanmin(ds["temperature"])), float(np.nanmax(ds["temperature"]))
    encoding = {
        "temperature": {"dtype": "int16", "scale_factor": (high - low) / 65000,
                        "add_offset": (high + low) / 2, "_FillValue": -32767},
        "2m_temperature": {"_FillValue": -9999.0},
    }  # fmt: skip
    ds.chunk({"time": 1}).to_zarr(
        out, mode="w", zarr_format=zarr_format, encoding=encoding, consolidated=True
    )
    logical = sum(v.nbytes for v in ds.data_vars.values())
    return {"out": out, "variables": list(ds.data_vars), "times": times, "levels": levels,
            "lat": lat, "lon": lon, "logical_bytes": int(logical),
            "seconds": round(_time.perf_counter() - start, 3)}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="chute make-dataset variables --xarray")
    parser.add_argument("out")
    parser.add_argument("--times", type=int, default=48)
    parser.add_argument("--levels", type=int, default=13)
    parser.add_argument("--lat", type=int, default=121)
    parser.add_argument("--lon", type=int, default=240)
    parser.add_argument("--format", type=int, default=2, choices=(2, 3))
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    summary = make_weather_store(args.out, args.times, args.levels, args.lat, args.lon,
                                 args.format, args.seed)  # fmt: skip
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
