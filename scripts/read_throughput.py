"""Array read throughput: chute vs zarr-python on whole arrays and random boxes of one array.

    .venv/bin/python scripts/read_throughput.py data/packed/inputs [--boxes 20] [--repeat 3]

Prints GB/s (best of --repeat, data in the page cache after the first pass) and, measured in
the same run on the same chunks, the limits `chute bench` measures: its steps alone (pread,
single-threaded decode x threads, placement into a batch-sized buffer) and the plain loop of
pread + decode into a warm buffer on the same number of threads, with and without a memcpy
into a batch-sized buffer. For random
boxes the rates count the decoded bytes of the chunks the boxes touch (what both readers must
decode), and the requested bytes in brackets. "warm" reads the whole array into one reused
NumPy array (`Array.read_into`), as the loop writes into warm buffers; a fresh array pays the
kernel's page zeroing on first touch, for chute and zarr-python alike.

Then crops smaller than a chunk (1/8 and 1/2 of the chunk shape per dimension, at random
places) and boxes of one and 2^rank chunks' size, read by both, with the ratio: crops decode
(and read) only the blosc blocks they touch.
"""

from __future__ import annotations

import argparse
import json

import numpy as np
import zarr
from _timing import best_seconds

import chute
from chute import _bench


def touched_chunk_bytes(a: chute.Array, box: tuple[slice, ...]) -> int:
    """Decoded bytes of the chunks (inner chunks when sharded) that `box` touches."""
    chunks = a.read_chunks
    per_dim = [(b.stop - 1) // c - b.start // c + 1 for b, c in zip(box, chunks)]
    return int(np.prod(per_dim)) * int(np.prod(chunks)) * a.dtype.itemsize


def roofline(a: chute.Array, boxes: list[tuple[slice, ...]] | None) -> dict:
    starts = [[b.start for b in box] for box in boxes or []]
    shapes = [[b.stop - b.start for b in box] for box in boxes or []]
    return json.loads(_bench.roofline_json(a.path, starts, shapes, chute.get_threads()))


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
    # Each box decodes its chunks again (no cache between reads), for chute and zarr alike.
    box_chunk_bytes = sum(touched_chunk_bytes(a, box) for box in boxes)
    whole_chunk_bytes = touched_chunk_bytes(a, tuple(slice(0, n) for n in a.shape))

    assert np.array_equal(a[boxes[0]], z[boxes[0]], equal_nan=True)
    print(f"{args.path}: shape {a.shape}, chunks {a.chunks}, {chute.get_threads()} threads")
    print(f"{'reader':12} {'whole array GB/s':>17} {'random boxes GB/s (requested)':>30}")
    rates = {}
    out = np.empty(a.shape, a.dtype)
    origin = (0,) * a.ndim
    readers = [
        ("chute", a, lambda: a[...]),
        ("chute warm", a, lambda: a.read_into(origin, out)),
        ("zarr", z, lambda: z[...]),
    ]
    for name, reader, whole in readers:
        w = best_seconds(whole, args.repeat)
        b = best_seconds(lambda r=reader: [r[box] for box in boxes], args.repeat)
        rates[name] = (whole_chunk_bytes / w / 1e9, box_chunk_bytes / b / 1e9)
        print(
            f"{name:12} {rates[name][0]:17.2f} {rates[name][1]:18.2f} ({box_bytes / b / 1e9:.2f})"
        )
    whole_limit = roofline(a, None)
    box_limit = roofline(a, boxes)
    limits = [
        ("roofline", "combined_gbps", "steps alone: 1/(1/read + 1/decode + 1/place)"),
        ("read+decode", "decode_limit_gbps", "steps alone: 1/(1/read + 1/decode)"),
        ("loop", "loop_decode_gbps", "plain loop: pread, decode into a warm buffer"),
        ("loop+place", "loop_gbps", "plain loop, then memcpy into a batch-sized buffer"),
    ]
    for label, key, how in limits:
        print(f"{label:12} {whole_limit[key]:17.2f} {box_limit[key]:18.2f}   {how}")
    print(
        f"chute ÷ zarr-python: {rates['chute'][0] / rates['zarr'][0]:.2f}x whole, "
        f"{rates['chute'][1] / rates['zarr'][1]:.2f}x boxes"
    )
    for label, key, _ in limits:
        print(
            f"chute ÷ {label}: {rates['chute'][0] / whole_limit[key]:.0%} whole "
            f"({rates['chute warm'][0] / whole_limit[key]:.0%} warm), "
            f"{rates['chute'][1] / box_limit[key]:.0%} boxes"
        )
    for part in ("read_gbps", "decode_single_gbps", "decode_gbps", "place_gbps"):
        print(f"  {part}: {whole_limit[part]:.2f} (whole), {box_limit[part]:.2f} (boxes)")
    box_sizes(a, z, rng, args.repeat)


def box_sizes(a: chute.Array, z: zarr.Array, rng: np.random.Generator, repeat: int) -> None:
    """Boxes of a fixed shape at random places, from crops inside a chunk to 2^rank chunks."""
    chunks = a.read_chunks
    shapes = [
        ("1/8 chunk", [max(1, c // 8) for c in chunks]),
        ("1/2 chunk", [max(1, c // 2) for c in chunks]),
        ("1 chunk", list(chunks)),
        ("2^rank chunks", [2 * c for c in chunks]),
    ]
    print(f"\n{'box (chunk fractions)':22} {'shape':>22} {'chute/s':>9} {'zarr/s':>9} {'ratio':>6}")
    for label, shape in shapes:
        shape = [min(s, n) for s, n in zip(shape, a.shape)]
        boxes = []
        for _ in range(40):
            lo = [int(rng.integers(0, n - s + 1)) for n, s in zip(a.shape, shape)]
            boxes.append(tuple(slice(lo_, lo_ + s) for lo_, s in zip(lo, shape)))
        assert np.array_equal(a[boxes[0]], z[boxes[0]], equal_nan=True)
        c = best_seconds(lambda b=boxes: [a[box] for box in b], repeat)
        zs = best_seconds(lambda b=boxes: [z[box] for box in b], repeat)
        print(
            f"{label:22} {tuple(shape)!s:>22} {len(boxes) / c:9.0f} {len(boxes) / zs:9.0f}"
            f" {zs / c:5.1f}x"
        )


if __name__ == "__main__":
    main()
