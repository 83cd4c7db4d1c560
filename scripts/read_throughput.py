"""Array read throughput: chute vs zarr-python on whole arrays and random boxes of one array.

    .venv/bin/python scripts/read_throughput.py data/packed/inputs [--boxes 20] [--repeat 3]

Prints GB/s of decoded bytes (best of --repeat, data in the page cache after the first pass).
Compare with the roofline that `chute bench` prints for the same chunks (pread + single-threaded
decode x threads, measured in C++).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import zarr

import chute


def best_rate(read, nbytes: int, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        read()
        best = min(best, time.perf_counter() - start)
    return nbytes / best / 1e9


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path")
    parser.add_argument("--boxes", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    a = chute.open(args.path)
    z = zarr.open_array(args.path, mode="r")
    rng = np.random.default_rng(0)
    boxes = []
    for _ in range(args.boxes):
        lo = [int(rng.integers(0, n)) for n in a.shape]
        hi = [int(rng.integers(s + 1, n + 1)) for s, n in zip(lo, a.shape)]
        boxes.append(tuple(slice(s, e) for s, e in zip(lo, hi)))
    box_bytes = sum(int(np.prod([b.stop - b.start for b in box])) for box in boxes)
    box_bytes *= a.dtype.itemsize
    whole = int(np.prod(a.shape)) * a.dtype.itemsize

    assert np.array_equal(a[boxes[0]], z[boxes[0]], equal_nan=True)
    print(f"{args.path}: shape {a.shape}, chunks {a.chunks}, {chute.get_threads()} threads")
    print(f"{'reader':8} {'whole array GB/s':>17} {'random boxes GB/s':>18}")
    for name, reader in [("chute", a), ("zarr", z)]:
        w = best_rate(lambda r=reader: r[...], whole, args.repeat)
        b = best_rate(lambda r=reader: [r[box] for box in boxes], box_bytes, args.repeat)
        print(f"{name:8} {w:17.2f} {b:18.2f}")


if __name__ == "__main__":
    main()
