"""chute.windows against xarray + dask the graph-ufs way, on a store written by xarray.

    chute make-dataset variables /tmp/era5.zarr --xarray --times 48
    chute stats /tmp/era5.zarr --out /tmp/era5_stats.zarr
    python scripts/weather_windows_peer.py /tmp/era5.zarr /tmp/era5_stats.zarr

chute: inputs at t-1 and t (4 variables × 13 levels + 2 surface variables), target at t+1,
two statics, normalised with the statistics group, bfloat16, batch 16, 2 threads. The peer
builds only the inputs (isel of the window, normalise, stack variables and levels with
to_stacked_array, .values, cast), so it does less work than chute.
"""

from __future__ import annotations

import sys
import time

import ml_dtypes
import numpy as np
import xarray as xr

import chute

V3 = ["temperature", "u_component_of_wind", "v_component_of_wind", "geopotential"]
V2 = ["2m_temperature", "mean_sea_level_pressure"]
STATICS = ["land_sea_mask", "geopotential_at_surface"]


def main(store: str, stats: str, batch: int = 16, batches: int = 4) -> None:
    data = chute.windows(store, V3 + V2, statics=STATICS, input_steps=[-1, 0], target_steps=[1],
                         statistics=stats, dtype="bfloat16")  # fmt: skip
    loader = chute.Loader(data, batch_size=batch, threads=2, rank=0, world_size=1, seed=0)
    for _ in loader:  # warm-up epoch
        pass
    start, n = time.perf_counter(), 0
    for _ in range(3):
        for _ in loader:
            n += 1
    chute_s = (time.perf_counter() - start) / n

    ds = xr.open_zarr(store)
    group = chute.open_group(stats)
    dims = {v: ("pressure_level",) if v in V3 else () for v in V3 + V2}
    mean = xr.Dataset({v: (dims[v], group[f"mean/{v}"][...]) for v in V3 + V2})
    std = xr.Dataset({v: (dims[v], group[f"std/{v}"][...]) for v in V3 + V2})
    rng = np.random.default_rng(0)
    times = np.arange(1, ds.sizes["time"] - 1)
    start = time.perf_counter()
    for _ in range(batches):
        index = rng.choice(times, batch, replace=False)
        parts = []
        for offset in (-1, 0):
            window = (ds[V3 + V2].isel(time=index + offset) - mean) / std
            stacked = window.to_stacked_array("channel", sample_dims=["time", "latitude",
                                                                      "longitude"])  # fmt: skip
            parts.append(stacked.values)
        np.concatenate(parts, axis=-1).astype(ml_dtypes.bfloat16)
    peer_s = (time.perf_counter() - start) / batches
    print(f"chute {chute_s * 1000:.0f} ms/batch ({batch / chute_s:.1f} samples/s); "
          f"xarray+dask {peer_s * 1000:.0f} ms/batch ({batch / peer_s:.1f} samples/s); "
          f"chute {peer_s / chute_s:.1f}x")  # fmt: skip


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
