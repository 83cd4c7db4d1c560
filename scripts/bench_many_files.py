"""Windows over many files against the same data as one file, alternating in one process (best
of N), for docs/performance.md. The peers (xarray.open_mfdataset + dask, FourCastNet's h5py
DataLoader) and the roofline are measured by `chute bench` on the same members.

    # FourCastNet-like: 40 per-year HDF5 files, fields[T, C, H, W] float32 contiguous, and the
    # same steps as one file (onefile/2000.h5)
    .venv/bin/python scripts/bench_many_files.py make-fcn /tmp/fcn --files 40 --steps 8
    # ERA5-like: 120 NetCDF-4 files (zlib), t2m and a 3-level z, consecutive 6-hourly steps,
    # and the same data as one file
    .venv/bin/python scripts/bench_many_files.py make-nc /tmp/era5nc --files 120 --steps 8
    # chute over the members vs the one file, alternating, best of --rounds
    .venv/bin/python scripts/bench_many_files.py compare-fcn /tmp/fcn
    .venv/bin/python scripts/bench_many_files.py compare-nc /tmp/era5nc
    # the peers and the roofline on the same members
    chute bench '/tmp/fcn/many/*.h5' --file-pattern '{year}.h5' --file-step 6h \\
        --channels c00 ... --allow-gaps --variables c00 c01 ... --compare h5py
    chute bench '/tmp/era5nc/many/*.nc' --variables t2m z --compare xarray,h5py
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np
from _timing import loader_samples


def _smooth(rng, shape) -> np.ndarray:
    """Smooth fields plus noise (they compress like model output)."""
    *lead, h, w = shape
    y = np.linspace(0, np.pi, h)[:, None]
    x = np.linspace(0, 2 * np.pi, w)[None, :]
    base = np.sin(2 * y) * np.cos(3 * x)
    phase = rng.uniform(0, 1, (*lead, 1, 1))
    return (base * (1 + phase) + 0.05 * rng.standard_normal(shape)).astype(np.float32)


def make_fcn(root: Path, files: int, steps: int, channels: int, lat: int, lon: int) -> None:
    import h5py

    rng = np.random.default_rng(0)
    (root / "many").mkdir(parents=True, exist_ok=True)
    (root / "onefile").mkdir(parents=True, exist_ok=True)
    shape = (steps, channels, lat, lon)
    with h5py.File(root / "onefile" / "2000.h5", "w") as one:
        whole = one.create_dataset("fields", shape=(files * steps, channels, lat, lon), dtype="f4")
        for k in range(files):
            fields = _smooth(rng, shape)
            with h5py.File(root / "many" / f"{1980 + k}.h5", "w") as f:
                f.create_dataset("fields", data=fields)  # contiguous, as FourCastNet's
            whole[k * steps : (k + 1) * steps] = fields
    names = [f"c{i:02d}" for i in range(channels)]
    (root / "channels.json").write_text(json.dumps(names))


def make_nc(root: Path, files: int, steps: int, lat: int, lon: int) -> None:
    import pandas as pd
    import xarray as xr

    rng = np.random.default_rng(1)
    (root / "many").mkdir(parents=True, exist_ok=True)
    (root / "onefile").mkdir(parents=True, exist_ok=True)
    levels = [500, 700, 850]
    coords = {"level": levels, "latitude": np.linspace(90, -90, lat),
              "longitude": np.linspace(0, 360, lon, endpoint=False)}  # fmt: skip
    encoding = {"t2m": {"zlib": True, "complevel": 1, "chunksizes": (1, lat, lon)},
                "z": {"zlib": True, "complevel": 1, "chunksizes": (1, 1, lat, lon)}}  # fmt: skip
    parts = []
    start = pd.Timestamp("2000-01-01")
    for k in range(files):
        times = pd.date_range(start + pd.Timedelta(hours=6 * steps * k), periods=steps, freq="6h")
        ds = xr.Dataset(
            {"t2m": (("time", "latitude", "longitude"), 280 + 10 * _smooth(rng, (steps, lat, lon))),
             "z": (("time", "level", "latitude", "longitude"), _smooth(rng, (steps, 3, lat, lon)))},
            coords={"time": times, **coords},
        )  # fmt: skip
        ds.to_netcdf(root / "many" / f"era5_{k:03d}.nc", encoding=encoding, engine="h5netcdf",
                     unlimited_dims=["time"])  # fmt: skip
        parts.append(ds)
    xr.concat(parts, "time").to_netcdf(root / "onefile" / "era5.nc", encoding=encoding,
                                       engine="h5netcdf", unlimited_dims=["time"])  # fmt: skip


def _rate(data, batches: int, batch_size: int, threads: int) -> float:
    import chute

    loader = chute.Loader(data, batch_size=batch_size, shuffle=True, seed=0, threads=threads)
    samples, seconds = loader_samples(loader, batches, warmup=2)
    return samples / seconds


def compare(kind: str, root: Path, rounds: int, batches: int, batch_size: int, threads: int):
    import chute

    if kind == "fcn":
        names = json.loads((root / "channels.json").read_text())
        common = {"file_step": "6h", "channels": names, "channels_last": False,
                  "input_offsets": (-1, 0), "target_offsets": (1,)}  # fmt: skip
        pick = names
        start = time.perf_counter()
        many = chute.windows(str(root / "many" / "*.h5"), pick, file_pattern="{year}.h5",
                             allow_gaps=True, **common)  # fmt: skip
        open_many = time.perf_counter() - start
        one = chute.windows([str(root / "onefile" / "2000.h5")], pick, file_pattern="{year}.h5",
                            **common)  # fmt: skip
    else:
        pick = ["t2m", "z"]
        start = time.perf_counter()
        many = chute.windows(str(root / "many" / "*.nc"), pick, input_offsets=(-1, 0),
                             target_offsets=(1,))  # fmt: skip
        open_many = time.perf_counter() - start
        one = chute.windows(str(root / "onefile" / "era5.nc"), pick, input_offsets=(-1, 0),
                            target_offsets=(1,))  # fmt: skip
    runs: dict[str, list[float]] = {"many": [], "one": []}
    for _ in range(rounds):
        for name, data in (("many", many), ("one", one)):
            runs[name].append(_rate(data, batches, batch_size, threads))
    best = {k: max(v) for k, v in runs.items()}
    return {
        "kind": kind, "samples": {"many": len(many), "one": len(one)},
        "open_many_s": round(open_many, 3),
        "runs_samples_per_s": {k: [round(x, 1) for x in v] for k, v in runs.items()},
        "best": {k: round(v, 1) for k, v in best.items()},
        "many_over_one": round(best["many"] / best["one"], 3),
        "load": os.getloadavg(),
    }  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("what", choices=("make-fcn", "make-nc", "compare-fcn", "compare-nc"))
    parser.add_argument("root", type=Path)
    parser.add_argument("--files", type=int, default=40)
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--channels", type=int, default=20)
    parser.add_argument("--lat", type=int, default=121)
    parser.add_argument("--lon", type=int, default=240)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--batches", type=int, default=20)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    if args.what == "make-fcn":
        make_fcn(args.root, args.files, args.steps, args.channels, args.lat, args.lon)
    elif args.what == "make-nc":
        make_nc(args.root, args.files, args.steps, args.lat, args.lon)
    else:
        kind = args.what.split("-")[1]
        print(json.dumps(compare(kind, args.root, args.rounds, args.batches, args.batch_size,
                                 args.threads)))  # fmt: skip


if __name__ == "__main__":
    main()
