"""Samples/s of an anemoi dataset read as anemoi-training reads it: chute.anemoi + chute.Loader
against anemoi-datasets' open_dataset in worker processes (the pattern of a PyTorch DataLoader
with workers; here multiprocessing, since the anemoi-datasets environment has no PyTorch).

    # once: an ERA5-like store (variables × cells per date, float32, chunk = one date)
    .venv-anemoi/bin/python scripts/bench_anemoi.py make /tmp/era5like.zarr --variables 100 \\
        --cells 40320 --dates 40
    # chute (main environment, this build on PYTHONPATH)
    .venv/bin/python scripts/bench_anemoi.py chute /tmp/era5like.zarr --batches 20
    # anemoi-datasets in worker processes (its own environment)
    .venv-anemoi/bin/python scripts/bench_anemoi.py anemoi /tmp/era5like.zarr --batches 20

Both read the same samples (multistep_input 2, rollout 1, every variable, normalised in float32)
and print one JSON line with samples/s and GB/s of stored values.
"""

from __future__ import annotations

import argparse
import json
import os
import time

import numpy as np
from _timing import loader_samples


def make(path: str, variables: int, cells: int, dates: int, members: int) -> None:
    import zarr

    rng = np.random.default_rng(0)
    root = zarr.open_group(path, mode="w")
    data = root.create_dataset(
        "data", shape=(dates, variables, members, cells), chunks=(1, variables, members, cells),
        dtype="f4",
    )  # fmt: skip
    for t in range(dates):
        block = rng.normal(size=(variables, members, cells)).astype(np.float32)
        data[t] = block * 10 + np.arange(variables, dtype=np.float32)[:, None, None]
    start = np.datetime64("2020-01-01T00", "s")
    root.create_dataset("dates", data=start + np.arange(dates) * np.timedelta64(6, "h"))
    root.create_dataset("latitudes", data=rng.uniform(-90, 90, cells))
    root.create_dataset("longitudes", data=rng.uniform(0, 360, cells))
    for name, value in (("mean", 0.0), ("stdev", 10.0), ("minimum", -50.0), ("maximum", 150.0)):
        root.create_dataset(name, data=np.full(variables, value) + np.arange(variables))
    root.attrs.update({
        "variables": [f"v{i}" for i in range(variables)], "frequency": "6h",
        "start_date": str(start), "end_date": str(start + (dates - 1) * np.timedelta64(6, "h")),
        "missing_dates": [], "ensemble_dimension": 2, "resolution": "o96",
    })  # fmt: skip
    zarr.consolidate_metadata(path)


def run_chute(path: str, batches: int, batch_size: int, threads: int | None) -> dict:
    import chute

    ds = chute.anemoi(path, multistep_input=2, rollout=1)
    loader = chute.Loader(ds, batch_size=batch_size, shuffle=True, seed=0, threads=threads)
    n, seconds = loader_samples(loader, batches, warmup=1)
    result = _result("chute", n, seconds, _bytes(path))
    # The roofline measured in the same run: one thread's rate of reading and decoding a date
    # (chute's array read, nothing cut, normalised or placed) × the loader's threads.
    data = chute.open(os.path.join(path, "data"))
    out = np.empty((1,) + data.shape[1:], dtype=np.float32)
    threads = loader.threads
    previous = chute.get_threads()
    chute.set_threads(1)
    try:
        start = time.perf_counter()
        for k in range(3 * 4):
            data.read_into([k % data.shape[0], 0, 0, 0], out)
        per_date = (time.perf_counter() - start) / 12
    finally:
        chute.set_threads(previous)
    roofline = threads / (3 * per_date)
    result["threads"] = threads
    result["roofline_samples_per_s"] = round(roofline, 2)
    result["fraction_of_roofline"] = round(n / seconds / roofline, 3)
    return result


_DS = None


def _worker_init(path: str) -> None:
    global _DS
    from anemoi.datasets import open_dataset

    _DS = open_dataset(path)


def _sample(i: int) -> int:
    ds = _DS
    stats = ds.statistics
    x = ds[i - 1 : i + 2]  # multistep 2, rollout 1
    x = np.transpose(x, (0, 2, 3, 1))  # dates ensemble gridpoints variables
    x = x * (1 / stats["stdev"]).astype(np.float32) - (stats["mean"] / stats["stdev"]).astype(
        np.float32
    )
    return x.nbytes


def run_anemoi(path: str, batches: int, batch_size: int, workers: int) -> dict:
    import multiprocessing

    from anemoi.datasets import open_dataset

    length = len(open_dataset(path))
    rng = np.random.default_rng(0)
    indices = rng.integers(1, length - 1, size=(batches + 1) * batch_size).tolist()
    with multiprocessing.get_context("fork").Pool(workers, _worker_init, (path,)) as pool:
        list(pool.imap(_sample, indices[:batch_size], chunksize=1))  # warm up
        start = time.perf_counter()
        list(pool.imap(_sample, indices[batch_size:], chunksize=1))
        seconds = time.perf_counter() - start
    return _result(f"anemoi-datasets ({workers} worker processes)", batches * batch_size, seconds,
                   _bytes(path))  # fmt: skip


def _bytes(path: str) -> int:
    with open(os.path.join(path, "data", ".zarray")) as f:
        meta = json.load(f)
    _, variables, members, cells = meta["shape"]
    return 3 * variables * members * cells * 4  # three dates per sample, float32


def _result(reader: str, samples: int, seconds: float, sample_bytes: int) -> dict:
    return {
        "reader": reader,
        "samples": samples,
        "seconds": round(seconds, 3),
        "samples_per_s": round(samples / seconds, 2),
        "GB_per_s": round(samples * sample_bytes / seconds / 1e9, 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("what", choices=("make", "chute", "anemoi"))
    parser.add_argument("path")
    parser.add_argument("--variables", type=int, default=100)
    parser.add_argument("--cells", type=int, default=40320)
    parser.add_argument("--dates", type=int, default=40)
    parser.add_argument("--members", type=int, default=1)
    parser.add_argument("--batches", type=int, default=20)
    parser.add_argument("--batch-size", type=int, default=4)
    parser.add_argument("--workers", type=int, default=os.cpu_count())
    parser.add_argument("--threads", type=int, default=None)
    args = parser.parse_args()
    if args.what == "make":
        make(args.path, args.variables, args.cells, args.dates, args.members)
    elif args.what == "chute":
        print(json.dumps(run_chute(args.path, args.batches, args.batch_size, args.threads)))
    else:
        print(json.dumps(run_anemoi(args.path, args.batches, args.batch_size, args.workers)))


if __name__ == "__main__":
    main()
