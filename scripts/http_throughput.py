"""Measures a W1 Loader epoch read from local files, from nginx on 127.0.0.1 and through the
tests' proxy delaying each request (the in-flight depth then decides the rate).

    .venv/bin/python scripts/http_throughput.py [--samples 96] [--delay-ms 5]

Prints samples/s and MB/s (decoded) per configuration; the best of --trials epochs.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import zarr

import chute

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python" / "tests"))
from http_servers import FaultProxy, StaticServer


def write(root: Path, samples: int, lat: int, lon: int) -> int:
    rng = np.random.default_rng(0)
    nbytes = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, channels in (("inputs", 20), ("targets", 8)):
            arr = zarr.create_array(
                store=str(root / f"{name}.zarr"), shape=(samples, lat, lon, channels),
                chunks=(1, lat, lon, 4), dtype="float32", zarr_format=3,
                compressors=[zarr.codecs.BloscCodec(cname="lz4", shuffle="shuffle")],
            )  # fmt: skip
            for s in range(samples):
                arr[s] = (rng.standard_normal((lat, lon, channels)) * 0.1).astype("float32")
            nbytes += samples * lat * lon * channels * 4
    return nbytes


def epoch(base: str, threads: int) -> float:
    loader = chute.Loader(
        {n: f"{base}/{n}.zarr" for n in ("inputs", "targets")},
        batch_size=16, shuffle=True, seed=1, drop_last=False, threads=threads, prefetch=4,
        rank=0, world_size=1,
    )  # fmt: skip
    start = time.perf_counter()
    for _batch in loader:
        pass
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--samples", type=int, default=96)
    parser.add_argument("--lat", type=int, default=96)
    parser.add_argument("--lon", type=int, default=192)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--delay-ms", type=float, default=5.0)
    parser.add_argument("--depths", default="1,8,64", help="max_in_flight values behind the proxy")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        nbytes = write(root, args.samples, args.lat, args.lon)
        server = StaticServer(root)
        print(f"{args.samples} samples, {nbytes / 1e6:.1f} MB decoded, chunks "
              f"(1, {args.lat}, {args.lon}, 4) blosc-lz4; server: {server.kind}; "
              f"load average {os.getloadavg()}")  # fmt: skip
        runs = [("local files", str(root), None)]
        runs.append(("nginx, loopback", server.url, None))
        proxy = FaultProxy(server.url, delay_s=args.delay_ms / 1000)
        for depth in [int(d) for d in args.depths.split(",") if d]:
            runs.append((f"proxy +{args.delay_ms:g} ms/request, max_in_flight={depth}",
                         proxy.url, depth))  # fmt: skip
        try:
            for label, base, depth in runs:
                chute.set_http_options(max_in_flight=depth or 64)
                best = min(epoch(base, args.threads) for _ in range(args.trials))
                print(f"{label:48s} {args.samples / best:8.1f} samples/s "
                      f"{nbytes / best / 1e6:8.1f} MB/s  ({best:.3f} s/epoch)")  # fmt: skip
        finally:
            proxy.stop()
            server.stop()
        print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
